// cuda_fill: fill GPU memory through the CUDA runtime in 256 MiB chunks (then smaller ones, down
// to 1 MiB, once a chunk is refused), print how much it got, hold it for HOLD seconds so the
// caller can read NVML's per-process count, then free everything.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <unistd.h>
#include <vector>

int main(int argc, char **argv)
{
        int hold = argc > 1 ? atoi(argv[1]) : 3;
        const char *cap_env = getenv("GS_FILL_CAP_MIB");
        size_t cap = cap_env ? (size_t)atoll(cap_env) << 20 : (size_t)-1;
        size_t chunk = 256u << 20, total = 0;
        std::vector<void *> ptrs;
        if (cudaFree(0) != cudaSuccess) { // context
                std::printf("filled 0 MiB (no context: %s)\n", cudaGetErrorName(cudaGetLastError()));
                return 0;
        }
        size_t f0 = 0, t0 = 0;
        cudaMemGetInfo(&f0, &t0);
        std::printf("before: free %zu MiB, total %zu MiB\n", f0 >> 20, t0 >> 20);
        int first_error = 0;
        while (chunk >= (1u << 20) && total < cap) {
                if (total + chunk > cap) {
                        chunk /= 2;
                        continue;
                }
                void *p = nullptr;
                cudaError_t e = cudaMalloc(&p, chunk);
                if (e == cudaSuccess) {
                        ptrs.push_back(p);
                        total += chunk;
                        continue;
                }
                if (first_error == 0)
                        first_error = (int)e;
                cudaGetLastError();
                chunk /= 2;
        }
        std::printf("filled %zu MiB (first refusal: %s)\n", total >> 20,
                    first_error ? cudaGetErrorName((cudaError_t)first_error) : "none");
        std::fflush(stdout);
        sleep(hold);
        for (void *p : ptrs)
                cudaFree(p);
        return first_error == (int)cudaErrorMemoryAllocation || total >= cap ? 0 : 1;
}
