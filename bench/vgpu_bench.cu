// vgpu_bench: the two CUDA micro-benchmarks of the slicing layer, printed as one line each:
//   launch_us  median per-launch time of an empty kernel (batches of 10000, 15 batches)
//   malloc_us  median time of cudaMalloc+cudaFree of 1 MiB (batches of 1000, 15 batches)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cuda_runtime.h>
#include <vector>

__global__ void empty() {}

static double median(std::vector<double> v)
{
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
}

int main()
{
        using clk = std::chrono::steady_clock;
        cudaFree(0);
        for (int i = 0; i < 1000; i++)
                empty<<<1, 1>>>();
        cudaDeviceSynchronize();
        std::vector<double> launch, alloc;
        for (int b = 0; b < 15; b++) {
                auto t0 = clk::now();
                for (int i = 0; i < 10000; i++)
                        empty<<<1, 1>>>();
                cudaDeviceSynchronize();
                launch.push_back(std::chrono::duration<double, std::micro>(clk::now() - t0).count() / 10000);
        }
        void *p;
        for (int i = 0; i < 100; i++) {
                cudaMalloc(&p, 1 << 20);
                cudaFree(p);
        }
        for (int b = 0; b < 15; b++) {
                auto t0 = clk::now();
                for (int i = 0; i < 1000; i++) {
                        cudaMalloc(&p, 1 << 20);
                        cudaFree(p);
                }
                alloc.push_back(std::chrono::duration<double, std::micro>(clk::now() - t0).count() / 1000);
        }
        if (cudaGetLastError() != cudaSuccess)
                return 1;
        std::printf("launch_us %.4f\nmalloc_us %.3f\n", median(launch), median(alloc));
        return 0;
}
