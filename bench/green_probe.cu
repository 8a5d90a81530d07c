// green_probe: what the CUDA runtime does when a green context is made current under it, after
// it has set up its primary context (the way the interposer would confine a slice):
//   green_probe [N_SMS=32]
// Prints one line per question, "name=value", and the throughput of a compute-bound kernel as a
// fraction of the same kernel on the primary context (1.0 = unconfined, ~N/SMs = confined).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda.h>
#include <cuda_runtime.h>
#include <thread>
#include <vector>

#define CK_PROG "green_probe"
#include "green_split.h"

__global__ void fma_kernel(float *out, float a, float b, int iters)
{
        unsigned gid = blockIdx.x * blockDim.x + threadIdx.x;
        float x = (float)(gid & 1023u);
        for (int i = 0; i < iters; i++)
                x = fmaf(x, a, b);
        out[gid] = x;
}

using clk = std::chrono::steady_clock;
static int g_blocks;

// Kernels per second of `n` launches into `st` (in whatever context is current).
static double rate(float *buf, cudaStream_t st, int n = 200)
{
        fma_kernel<<<g_blocks, 256, 0, st>>>(buf, 1.0f, 0.0f, 20000);
        CK(cudaStreamSynchronize(st));
        auto t = clk::now();
        for (int i = 0; i < n; i++)
                fma_kernel<<<g_blocks, 256, 0, st>>>(buf, 1.0f, 0.0f, 20000);
        CK(cudaStreamSynchronize(st));
        return n / std::chrono::duration<double>(clk::now() - t).count();
}

static bool correct(float *buf, cudaStream_t st)
{
        size_t n = (size_t)g_blocks * 256;
        CK(cudaMemsetAsync(buf, 0xff, n * sizeof(float), st));
        fma_kernel<<<g_blocks, 256, 0, st>>>(buf, 1.0f, 0.0f, 10);
        CK(cudaStreamSynchronize(st));
        std::vector<float> h(n);
        CK(cudaMemcpy(h.data(), buf, n * sizeof(float), cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; i++)
                if (h[i] != (float)(i & 1023u))
                        return false;
        return true;
}

static const char *which(CUcontext c, CUcontext primary, CUcontext green)
{
        return c == primary ? "primary" : c == green ? "green" : c == nullptr ? "none" : "other";
}

int main(int argc, char **argv)
{
        unsigned asked = argc > 1 ? (unsigned)std::atoi(argv[1]) : 32;
        CK(cudaSetDevice(0));
        CK(cudaFree(0));
        int sms = 0;
        CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
        g_blocks = 16 * sms;
        CUcontext primary, cur;
        CKD(cuCtxGetCurrent(&primary));
        CUdevice dev;
        CKD(cuDeviceGet(&dev, 0));
        CUcontext retained;
        CKD(cuDevicePrimaryCtxRetain(&retained, dev));
        CKD(cuDevicePrimaryCtxRelease(dev));
        std::printf("runtime_current_is_primary=%d\n", retained == primary);

        float *buf = nullptr; // allocated in the primary context, before any switch
        CK(cudaMalloc(&buf, (size_t)g_blocks * 256 * sizeof(float)));
        cudaStream_t before;
        CK(cudaStreamCreate(&before));
        double native = rate(buf, 0);
        std::printf("native_rate=%.1f\n", native);

        unsigned given = 0;
        CUgreenCtx g = make_green(dev, asked, &given);
        CUcontext green;
        CKD(cuCtxFromGreenCtx(&green, g));
        std::printf("sms=%d partition=%u share=%.4f\n", sms, given, (double)given / sms);

        CKD(cuCtxSetCurrent(green));
        std::printf("null_stream_after_switch=%.4f correct=%d\n", rate(buf, 0) / native, correct(buf, 0));
        cudaStream_t after;
        CK(cudaStreamCreate(&after));
        std::printf("stream_made_after_switch=%.4f correct=%d\n", rate(buf, after) / native, correct(buf, after));
        std::printf("stream_made_before_switch=%.4f\n", rate(buf, before) / native);
        int d = -1;
        CK(cudaGetDevice(&d));
        cudaDeviceProp p;
        CK(cudaGetDeviceProperties(&p, 0));
        std::printf("after_switch_cudaGetDevice=%d props_sms=%d\n", d, p.multiProcessorCount);
        float *buf2 = nullptr;
        CK(cudaMalloc(&buf2, (size_t)g_blocks * 256 * sizeof(float)));
        std::printf("malloc_in_green_used_on_primary_stream_before=%d\n", correct(buf2, before));
        CK(cudaDeviceSynchronize());

        CK(cudaSetDevice(0));
        CKD(cuCtxGetCurrent(&cur));
        std::printf("after_cudaSetDevice_same_device_current=%s\n", which(cur, primary, green));
        CKD(cuCtxSetCurrent(green));

        // A new thread: what is current when it starts using the runtime, and two threads
        // launching into the same green context at once.
        std::atomic<int> bad{0};
        auto worker = [&](int id) {
                CUcontext c0 = nullptr, c1 = nullptr;
                cuCtxGetCurrent(&c0);
                CK(cudaSetDevice(0));
                cuCtxGetCurrent(&c1);
                std::printf("thread%d_current_at_start=%s after_cudaSetDevice=%s\n", id, which(c0, primary, green),
                            which(c1, primary, green));
                CKD(cuCtxSetCurrent(green));
                cudaStream_t s;
                CK(cudaStreamCreate(&s));
                for (int k = 0; k < 200; k++)
                        fma_kernel<<<g_blocks, 256, 0, s>>>(buf, 1.0f, 0.0f, 2000);
                if (cudaStreamSynchronize(s) != cudaSuccess || !correct(buf2, s))
                        bad++;
                CK(cudaStreamDestroy(s));
        };
        std::thread t1(worker, 1), t2(worker, 2);
        t1.join();
        t2.join();
        std::printf("two_threads_one_green_context_ok=%d\n", bad.load() == 0);

        // A graph captured in the green context, and a cooperative launch.
        cudaStream_t cs;
        CK(cudaStreamCreate(&cs));
        cudaGraph_t graph;
        cudaGraphExec_t exec;
        CK(cudaStreamBeginCapture(cs, cudaStreamCaptureModeGlobal));
        for (int k = 0; k < 10; k++)
                fma_kernel<<<g_blocks, 256, 0, cs>>>(buf, 1.0f, 0.0f, 20000);
        CK(cudaStreamEndCapture(cs, &graph));
        CK(cudaGraphInstantiate(&exec, graph, 0));
        CK(cudaGraphLaunch(exec, cs));
        CK(cudaStreamSynchronize(cs));
        auto t = clk::now();
        for (int k = 0; k < 20; k++)
                CK(cudaGraphLaunch(exec, cs));
        CK(cudaStreamSynchronize(cs));
        double gr = 200 / std::chrono::duration<double>(clk::now() - t).count();
        std::printf("graph_in_green=%.4f\n", gr / native);
        std::printf("done\n");
        return 0;
}
