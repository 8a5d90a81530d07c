// green_fence_probe: could the interposer confine a launch the runtime sends to a primary-context
// stream by sending it to a green context's stream instead, fenced with events both ways so the
// application's stream keeps its order (the only in-process route left after green_probe showed
// the runtime making its primary context current again behind the public entry points)?
//   green_fence_probe [N_SMS=32]
// Prints "name=value" lines: the result code of each launch route (0 = CUDA_SUCCESS), whether the
// data came out right and in order, and rates as fractions of the same launches made directly.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda.h>
#include <cuda_runtime.h>
#include <vector>

#define CK_PROG "green_fence_probe"
#include "green_split.h"

__global__ void fma_kernel(float *out, float a, float b, int iters)
{
        unsigned gid = blockIdx.x * blockDim.x + threadIdx.x;
        float x = out[gid] == -1.0f ? (float)(gid & 1023u) : out[gid];
        for (int i = 0; i < iters; i++)
                x = fmaf(x, a, b);
        out[gid] = x;
}

// memory-bound: a grid-stride copy
__global__ void copy_kernel(const float4 *in, float4 *out, size_t n)
{
        for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
                out[i] = in[i];
}

__global__ void tiny_kernel(float *out)
{
        if (threadIdx.x == 0)
                out[0] += 1.0f;
}

using clk = std::chrono::steady_clock;
static unsigned g_blocks;
static CUstream g_app, g_green;
static CUevent g_ev_app, g_ev_green;

// One launch of f: directly on the application's stream, or on the green stream fenced both ways.
static CUresult launch(CUfunction f, unsigned blocks, void **args, bool fenced)
{
        if (!fenced)
                return cuLaunchKernel(f, blocks, 1, 1, 256, 1, 1, 0, g_app, args, nullptr);
        CUresult rc;
        if ((rc = cuEventRecord(g_ev_app, g_app)) != CUDA_SUCCESS || (rc = cuStreamWaitEvent(g_green, g_ev_app, 0)) != CUDA_SUCCESS ||
            (rc = cuLaunchKernel(f, blocks, 1, 1, 256, 1, 1, 0, g_green, args, nullptr)) != CUDA_SUCCESS ||
            (rc = cuEventRecord(g_ev_green, g_green)) != CUDA_SUCCESS)
                return rc;
        return cuStreamWaitEvent(g_app, g_ev_green, 0);
}

// Launches per second of n launches, and the CPU's microseconds per launch call.
static double rate(CUfunction f, unsigned blocks, void **args, bool fenced, int n, double *us_per_call)
{
        CKD(launch(f, blocks, args, fenced));
        CKD(cuStreamSynchronize(g_app));
        double calls = 0;
        auto t = clk::now();
        for (int i = 0; i < n; i++) {
                auto c = clk::now();
                CKD(launch(f, blocks, args, fenced));
                calls += std::chrono::duration<double>(clk::now() - c).count();
        }
        CKD(cuStreamSynchronize(g_app));
        if (us_per_call)
                *us_per_call = 1e6 * calls / n;
        return n / std::chrono::duration<double>(clk::now() - t).count();
}

// A graph of GRAPH_KERNELS compute-bound kernels replayed on the green stream: its kernels per
// second over `native`, or 0 with *rc the launch's error.
static const int GRAPH_KERNELS = 5;
static double graph_fraction(CUgraphExec exec, double native, CUresult *rc)
{
        if ((*rc = cuGraphLaunch(exec, g_green)) != CUDA_SUCCESS || (*rc = cuStreamSynchronize(g_green)) != CUDA_SUCCESS)
                return 0;
        auto t = clk::now();
        for (int k = 0; k < 40; k++)
                CKD(cuGraphLaunch(exec, g_green));
        CKD(cuStreamSynchronize(g_green));
        return 40.0 * GRAPH_KERNELS / std::chrono::duration<double>(clk::now() - t).count() / native;
}

// The order check: memset on the application's stream, 3 launches (a chain: each reads what the
// previous wrote), the copy back on the application's stream. Right only if every fence held.
static bool in_order(CUfunction f, float *buf, bool fenced)
{
        size_t n = (size_t)g_blocks * 256;
        float a = 1.0f, b = 1.0f;
        int iters = 1000;
        void *args[] = {&buf, &a, &b, &iters};
        CKD(cuMemsetD32Async((CUdeviceptr)buf, 0xbf800000u, n, g_app)); // -1.0f
        for (int k = 0; k < 3; k++)
                if (launch(f, g_blocks, args, fenced) != CUDA_SUCCESS)
                        return false;
        std::vector<float> h(n);
        CKD(cuMemcpyDtoHAsync(h.data(), (CUdeviceptr)buf, n * sizeof(float), g_app));
        CKD(cuStreamSynchronize(g_app));
        for (size_t i = 0; i < n; i++)
                if (h[i] != (float)(i & 1023u) + 3000.0f)
                        return false;
        return true;
}

int main(int argc, char **argv)
{
        unsigned asked = argc > 1 ? (unsigned)std::atoi(argv[1]) : 32;
        CK(cudaSetDevice(0));
        CK(cudaFree(0));
        int sms = 0;
        CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
        g_blocks = 16u * (unsigned)sms;
        CUdevice dev;
        CKD(cuDeviceGet(&dev, 0));
        CUcontext primary;
        CKD(cuCtxGetCurrent(&primary));
        float *buf = nullptr;
        CK(cudaMalloc(&buf, (size_t)g_blocks * 256 * sizeof(float)));
        CKD(cuStreamCreate(&g_app, CU_STREAM_NON_BLOCKING));
        CKD(cuEventCreate(&g_ev_app, CU_EVENT_DISABLE_TIMING));
        CKD(cuEventCreate(&g_ev_green, CU_EVENT_DISABLE_TIMING));

        // The handles a launch can carry: the runtime's function for the primary context, and its
        // context-independent kernel (CUDA 12: CUkernel, accepted where a CUfunction is).
        cudaFunction_t rf;
        CK(cudaGetFuncBySymbol(&rf, (const void *)fma_kernel));
        cudaKernel_t rk;
        CK(cudaGetKernel(&rk, (const void *)fma_kernel));
        cudaFunction_t tf;
        CK(cudaGetFuncBySymbol(&tf, (const void *)tiny_kernel));
        CUfunction fn = (CUfunction)rf, kern = (CUfunction)(void *)rk, tiny = (CUfunction)tf;

        unsigned given = 0;
        CUgreenCtx g = make_green(dev, asked, &given);
        CKD(cuGreenCtxStreamCreate(&g_green, g, CU_STREAM_NON_BLOCKING, 0));
        std::printf("sms=%d partition=%u share=%.4f\n", sms, given, (double)given / sms);

        // 1. Which handles launch on the green stream (the primary context stays current).
        float a = 1.0f, b = 0.0f;
        int iters = 20000;
        void *args[] = {&buf, &a, &b, &iters};
        CUresult r_fn = cuLaunchKernel(fn, g_blocks, 1, 1, 256, 1, 1, 0, g_green, args, nullptr);
        CUresult r_kern = cuLaunchKernel(kern, g_blocks, 1, 1, 256, 1, 1, 0, g_green, args, nullptr);
        CUresult r_sync = cuStreamSynchronize(g_green);
        std::printf("primary_function_on_green_stream_rc=%d\n", (int)r_fn);
        std::printf("context_free_kernel_on_green_stream_rc=%d sync_rc=%d\n", (int)r_kern, (int)r_sync);
        CUfunction use = r_fn == CUDA_SUCCESS ? fn : r_kern == CUDA_SUCCESS ? kern : nullptr;
        if (use == nullptr) {
                std::printf("done\n");
                return 0;
        }

        // 2. Order and confinement of fenced launches.
        std::printf("direct_in_order=%d fenced_in_order=%d\n", in_order(use, buf, false), in_order(use, buf, true));
        double us_direct = 0, us_fenced = 0;
        double native = rate(use, g_blocks, args, false, 200, nullptr);
        double fenced = rate(use, g_blocks, args, true, 200, nullptr);
        std::printf("compute_bound_fenced_fraction=%.4f (native %.1f/s)\n", fenced / native, native);

        // 3. What the fences cost a launch-bound stream (1 block, next to nothing to do).
        void *targs[] = {&buf};
        double td = rate(tiny, 1, targs, false, 20000, &us_direct);
        double tfen = rate(tiny, 1, targs, true, 20000, &us_fenced);
        double td2 = rate(tiny, 1, targs, false, 20000, nullptr);
        std::printf("tiny_direct=%.0f/s (%.2f us per call) fenced=%.0f/s (%.2f us per call) direct_again=%.0f/s "
                    "fenced_fraction=%.4f\n",
                    td, us_direct, tfen, us_fenced, td2, 2 * tfen / (td + td2));

        // 3b. A memory-bound kernel (a 512 MiB copy): does the partition's share of the SMs hold
        // its throughput to that share?
        size_t words = (size_t)512 << 20 >> 4;
        float4 *src = nullptr, *dst = nullptr;
        CK(cudaMalloc(&src, words * sizeof(float4)));
        CK(cudaMalloc(&dst, words * sizeof(float4)));
        CK(cudaMemset(src, 0, words * sizeof(float4)));
        cudaFunction_t cf;
        CK(cudaGetFuncBySymbol(&cf, (const void *)copy_kernel));
        void *cargs[] = {&src, &dst, &words};
        double cd = rate((CUfunction)cf, 8u * (unsigned)sms, cargs, false, 100, nullptr);
        double cfen = rate((CUfunction)cf, 8u * (unsigned)sms, cargs, true, 100, nullptr);
        std::printf("memory_bound_direct=%.1f/s (%.0f GB/s) fenced_fraction=%.4f\n", cd, cd * 2.0 * words * 16 / 1e9,
                    cfen / cd);

        // 4. A graph instantiated for the primary context, launched on the green stream.
        CUgraph graph;
        CUgraphExec exec;
        CKD(cuStreamBeginCapture(g_app, CU_STREAM_CAPTURE_MODE_RELAXED));
        for (int k = 0; k < GRAPH_KERNELS; k++)
                CKD(cuLaunchKernel(use, g_blocks, 1, 1, 256, 1, 1, 0, g_app, args, nullptr));
        CKD(cuStreamEndCapture(g_app, &graph));
        CKD(cuGraphInstantiate(&exec, graph, 0));
        CUresult r_graph = CUDA_SUCCESS;
        double gr = graph_fraction(exec, native, &r_graph);
        std::printf("primary_graph_on_green_stream_rc=%d fraction=%.4f\n", (int)r_graph, gr);
        // ... and the same graph instantiated while the green context is current.
        CUcontext green;
        CKD(cuCtxFromGreenCtx(&green, g));
        CKD(cuCtxPushCurrent(green));
        CUgraphExec exec2;
        CUresult r_inst = cuGraphInstantiate(&exec2, graph, 0);
        CUcontext popped;
        CKD(cuCtxPopCurrent(&popped));
        CUresult r_g2 = CUDA_SUCCESS;
        double gr2 = r_inst == CUDA_SUCCESS ? graph_fraction(exec2, native, &r_g2) : 0;
        std::printf("graph_instantiated_in_green_rc=%d launch_rc=%d fraction=%.4f\n", (int)r_inst, (int)r_g2, gr2);
        CUcontext cur;
        CKD(cuCtxGetCurrent(&cur));
        std::printf("current_still_primary=%d\n", cur == primary);
        std::printf("done\n");
        return 0;
}
