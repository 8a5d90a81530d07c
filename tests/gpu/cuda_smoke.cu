// cuda_smoke: run inside a configured container on the GPU host. Device query, then a kernel
// whose result is checked on the host. Exit 0 only if everything worked.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(call)                                                                         \
        do {                                                                                \
                cudaError_t e_ = (call);                                                    \
                if (e_ != cudaSuccess) {                                                    \
                        std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));    \
                        return 1;                                                           \
                }                                                                           \
        } while (0)

__global__ void saxpy(int n, float a, const float *x, float *y)
{
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n)
                y[i] = a * x[i] + y[i];
}

int main()
{
        int n = 0, drv = 0, rt = 0;
        CHECK(cudaGetDeviceCount(&n));
        CHECK(cudaDriverGetVersion(&drv));
        CHECK(cudaRuntimeGetVersion(&rt));
        for (int d = 0; d < n; d++) {
                cudaDeviceProp p;
                CHECK(cudaGetDeviceProperties(&p, d));
                std::printf("device %d: %s, cc %d.%d, %zu MiB, %d SMs\n", d, p.name, p.major, p.minor,
                            p.totalGlobalMem >> 20, p.multiProcessorCount);
        }
        std::printf("driver %d, runtime %d, %d device(s)\n", drv, rt, n);
        const int N = 1 << 20;
        float *x, *y, *hx = (float *)std::malloc(N * sizeof(float)), *hy = (float *)std::malloc(N * sizeof(float));
        for (int i = 0; i < N; i++) {
                hx[i] = (float)(i % 1000) * 0.5f;
                hy[i] = (float)(i % 7);
        }
        CHECK(cudaMalloc(&x, N * sizeof(float)));
        CHECK(cudaMalloc(&y, N * sizeof(float)));
        CHECK(cudaMemcpy(x, hx, N * sizeof(float), cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(y, hy, N * sizeof(float), cudaMemcpyHostToDevice));
        saxpy<<<(N + 255) / 256, 256>>>(N, 3.0f, x, y);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaMemcpy(hy, y, N * sizeof(float), cudaMemcpyDeviceToHost));
        int bad = 0;
        for (int i = 0; i < N; i++)
                if (hy[i] != 3.0f * ((float)(i % 1000) * 0.5f) + (float)(i % 7))
                        bad++;
        std::printf("saxpy on %d elements: %s\n", N, bad ? "WRONG" : "correct");
        cudaFree(x);
        cudaFree(y);
        return bad == 0 && n > 0 ? 0 : 1;
}
