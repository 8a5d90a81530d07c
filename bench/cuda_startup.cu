// cuda_startup: what a short CUDA process pays: context, one 1 MiB cudaMalloc + cudaFree, exit.
#include <cuda_runtime.h>
int main()
{
        void *p;
        if (cudaMalloc(&p, 1 << 20) != cudaSuccess)
                return 1;
        return cudaFree(p) == cudaSuccess ? 0 : 1;
}
