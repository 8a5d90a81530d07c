// cudart_paths: the quota as a CUDA runtime program sees it, for any runtime from 11.x on (it is
// built with nvcc 11.8, 12.4 and 13.0, static and shared cudart, and once with the per-thread
// default stream, so every runtime fetches the driver's entry points its own way).
//   cudart_paths QUOTA_MIB
// Each check prints "ok ..." or "FAIL ..."; the exit status is the number of failures.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

static int failures;

static void check(bool good, const char *what, const char *detail = "")
{
        std::printf("%s %s%s%s\n", good ? "ok" : "FAIL", what, detail[0] ? ": " : "", detail);
        if (!good)
                failures++;
}

__global__ void fill(unsigned *p, size_t n, unsigned v)
{
        for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
                p[i] = v + (unsigned)i;
}

static size_t free_now()
{
        size_t f = 0, t = 0;
        cudaMemGetInfo(&f, &t);
        return f;
}

// An allocation of about `bytes` must lower the free memory the runtime reports by at least that
// much (minus the driver's 2 MiB granularity), and freeing it must give it back.
template <typename Alloc, typename Free>
static void path(const char *name, size_t bytes, Alloc alloc, Free release)
{
        char d[200];
        size_t before = free_now();
        cudaError_t e = alloc();
        cudaDeviceSynchronize();
        size_t during = free_now();
        if (e != cudaSuccess) {
                std::snprintf(d, sizeof(d), "%s", cudaGetErrorName(e));
                check(false, name, d);
                cudaGetLastError();
                return;
        }
        release();
        cudaDeviceSynchronize();
        size_t after = free_now();
        std::snprintf(d, sizeof(d), "free %zu -> %zu -> %zu MiB", before >> 20, during >> 20, after >> 20);
        check(before >= during + bytes - (2u << 20) && after + (2u << 20) >= before, name, d);
}

int main(int argc, char **argv)
{
        size_t quota = (size_t)(argc > 1 ? atoll(argv[1]) : 4096) << 20;
        int rt = 0, drv = 0;
        cudaRuntimeGetVersion(&rt);
        cudaDriverGetVersion(&drv);
        std::printf("runtime %d, driver %d, per-thread default stream %s\n", rt, drv,
#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
                    "yes"
#else
                    "no"
#endif
        );
        char d[200];
        cudaError_t e = cudaFree(0);
        check(e == cudaSuccess, "context", cudaGetErrorName(e));
        if (e != cudaSuccess)
                return 1;
        size_t f = 0, t = 0;
        e = cudaMemGetInfo(&f, &t);
        std::snprintf(d, sizeof(d), "total %zu MiB, free %zu MiB", t >> 20, f >> 20);
        check(e == cudaSuccess && t == quota && f <= t, "cudaMemGetInfo shows the quota", d);
        cudaDeviceProp p;
        e = cudaGetDeviceProperties(&p, 0);
        std::snprintf(d, sizeof(d), "totalGlobalMem %zu MiB", (size_t)p.totalGlobalMem >> 20);
        check(e == cudaSuccess && p.totalGlobalMem == quota, "cudaGetDeviceProperties shows the quota", d);

        // A kernel that writes 64 MiB, checked on the host (launches pass through untouched).
        const size_t n = (64u << 20) / sizeof(unsigned);
        unsigned *dp = nullptr;
        unsigned *hp = (unsigned *)std::malloc(n * sizeof(unsigned));
        bool good = cudaMalloc(&dp, n * sizeof(unsigned)) == cudaSuccess && hp != nullptr;
        if (good) {
                fill<<<256, 256>>>(dp, n, 7u);
                good = cudaMemcpy(hp, dp, n * sizeof(unsigned), cudaMemcpyDeviceToHost) == cudaSuccess;
                for (size_t i = 0; good && i < n; i += 4099)
                        good = hp[i] == 7u + (unsigned)i;
        }
        check(good, "kernel launch + copy back");
        cudaFree(dp);
        std::free(hp);

        const size_t B = 64u << 20;
        void *ptr = nullptr;
        path("cudaMalloc", B, [&] { return cudaMalloc(&ptr, B); }, [&] { cudaFree(ptr); });
        size_t pitch = 0;
        path("cudaMallocPitch", B, [&] { return cudaMallocPitch(&ptr, &pitch, 8192, 8192); }, [&] { cudaFree(ptr); });
        path("cudaMallocManaged", B, [&] { return cudaMallocManaged(&ptr, B); }, [&] { cudaFree(ptr); });
        path("cudaMallocAsync", B, [&] { return cudaMallocAsync(&ptr, B, 0); }, [&] { cudaFreeAsync(ptr, 0); });
        cudaMemPool_t pool = nullptr;
        cudaMemPoolProps props;
        std::memset(&props, 0, sizeof(props));
        props.allocType = cudaMemAllocationTypePinned;
        props.location.type = cudaMemLocationTypeDevice;
        props.location.id = 0;
        if (cudaMemPoolCreate(&pool, &props) == cudaSuccess) {
                path("cudaMallocFromPoolAsync", B, [&] { return cudaMallocFromPoolAsync(&ptr, B, pool, 0); },
                     [&] {
                             cudaFreeAsync(ptr, 0);
                             cudaStreamSynchronize(0);
                             cudaMemPoolTrimTo(pool, 0);
                     });
                cudaMemPoolDestroy(pool);
        } else {
                check(false, "cudaMemPoolCreate");
        }
        cudaChannelFormatDesc ch = cudaCreateChannelDesc<float4>();
        cudaArray_t arr = nullptr;
        path("cudaMallocArray", B, [&] { return cudaMallocArray(&arr, &ch, 2048, 2048); }, [&] { cudaFreeArray(arr); });
        path("cudaMalloc3DArray", B, [&] { return cudaMalloc3DArray(&arr, &ch, make_cudaExtent(512, 512, 16)); },
             [&] { cudaFreeArray(arr); });
        cudaMipmappedArray_t mip = nullptr;
        path("cudaMallocMipmappedArray", B,
             [&] { return cudaMallocMipmappedArray(&mip, &ch, make_cudaExtent(2048, 2048, 0), 4); },
             [&] { cudaFreeMipmappedArray(mip); });

        // Past the quota: the runtime's own out-of-memory error, and nothing leaks.
        e = cudaMalloc(&ptr, quota);
        check(e == cudaErrorMemoryAllocation, "cudaMalloc(quota) fails with cudaErrorMemoryAllocation",
              cudaGetErrorName(e));
        cudaGetLastError();
        e = cudaMallocAsync(&ptr, quota, 0);
        if (e == cudaSuccess)
                e = cudaStreamSynchronize(0);
        check(e == cudaErrorMemoryAllocation, "cudaMallocAsync(quota) fails with cudaErrorMemoryAllocation",
              cudaGetErrorName(e));
        cudaGetLastError();
        e = cudaMallocManaged(&ptr, quota);
        check(e == cudaErrorMemoryAllocation, "cudaMallocManaged(quota) fails with cudaErrorMemoryAllocation",
              cudaGetErrorName(e));
        cudaGetLastError();
        std::printf("%d failed\n", failures);
        return failures;
}
