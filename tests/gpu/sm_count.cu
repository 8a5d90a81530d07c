// The SMs a process is given (under MPS: its partition), and that a kernel runs.
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
__global__ void touch(int *p) { p[threadIdx.x] = threadIdx.x; }
int main(void)
{
        int *d = NULL, sms = 0;
        cudaError_t e = cudaMalloc(&d, 1024);
        if (e != cudaSuccess) {
                printf("cudaMalloc: %s\n", cudaGetErrorString(e));
                return 1;
        }
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
        touch<<<1, 32>>>(d);
        e = cudaDeviceSynchronize();
        printf("sms=%d kernel=%s\n", sms, cudaGetErrorString(e));
        return e == cudaSuccess ? 0 : 1;
}
