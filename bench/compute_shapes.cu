// compute_shapes: the workload shapes of the compute-share measurements, one per run:
//   compute_shapes SHAPE SECONDS [N]
// runs SHAPE for SECONDS after a warm-up and prints one line
//   shape=S work=UNITS seconds=WALL rate=UNITS/S kernel_ms=MS sms=SMS [asked=N]
// SHAPE:
//   short    a compute-bound stream of ~0.4 ms kernels: 16 x SM count blocks of 256 threads,
//            each thread a fixed FMA loop (4 independent chains x ITERS); work = kernels
//   long     the same kernel with 5 x ITERS (~2 ms); work = kernels
//   tiny     a launch-bound stream of 1-block (32 threads, 4 FMAs each) kernels; work = kernels
//   graph    a CUDA graph of 20 `short` kernels, captured once, replayed; work = kernels
//   coop     cooperative launches of a grid-synchronising kernel sized to full occupancy,
//            as many FMAs per launch as one `short` kernel; work = launches
//   half     one `short` kernel, synchronized, then as long again spinning on the CPU: a GPU
//            busy about half the time (the limiter's cost under a limit it does not reach)
//   green N  `short` (same grid, same work per kernel) inside a green context of N SMs asked for
//            (driver API); sms= is the number of SMs the context was given, asked= is N
// Every kernel does fixed work, so a ratio of rates is a ratio of throughputs. The rate is taken
// over the measured window only: work launched after the warm-up (CS_WARMUP seconds, default
// 0.5) until SECONDS have passed, divided by the wall time until that work had completed.
// kernel_ms is the mean device time of one kernel (of one launch for coop), from a CUDA event
// pair around the first launch of every batch of the window. sms= is the device's SM count
// (the green context's for `green`). CS_ITERS overrides ITERS (default 6000).
// At the end one more launch of the shape writes known values into a buffer cleared to NaN, and
// they are checked; a CUDA error or a wrong value prints the reason and exits 1 (usage: 2).
#include <chrono>
#include <cooperative_groups.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>
#include <functional>
#include <string>
#include <vector>

#define CK_PROG "compute_shapes"
#include "cuda_check.h"
#include "fma_work.h"

namespace cg = cooperative_groups;

static const int THREADS = 256;      // threads per block of every shape but tiny
static const int TINY_THREADS = 32;  // tiny: one block of one warp
static const int GRAPH_KERNELS = 20; // kernels per graph

__global__ void fma_kernel(float *out, float a, float b, int iters)
{
        unsigned gid = blockIdx.x * blockDim.x + threadIdx.x;
        out[gid] = fma_work(gid, a, b, iters);
}

// Each thread publishes its result, the whole grid synchronises, then each thread reads the
// value of the thread one block further on (wrapping): a missing grid barrier shows as a NaN
// from the cleared buffer in the final check.
__global__ void coop_kernel(float *part, float *out, float a, float b, int iters)
{
        cg::grid_group grid = cg::this_grid();
        unsigned gid = blockIdx.x * blockDim.x + threadIdx.x;
        unsigned total = gridDim.x * blockDim.x;
        part[gid] = fma_work(gid, a, b, iters);
        grid.sync();
        out[gid] = part[(gid + blockDim.x) % total];
}

using clk = std::chrono::steady_clock;
static double since(clk::time_point t0) { return std::chrono::duration<double>(clk::now() - t0).count(); }

struct Shape {
        int per_launch = 1;                        // work units (kernels) per launch
        int batch = 1;                             // launches between two host waits
        std::function<void(cudaStream_t)> launch;  // one launch into the stream
        std::function<void(cudaStream_t)> clear;   // set the checked buffers to NaN
        std::function<size_t()> check;             // after one launch: number of wrong values
};

struct Window {
        long long work = 0;
        double wall = 0, kernel_ms = 0;
};

// Launch batches with two in flight (the GPU never waits for the host between batches) until
// `seconds` have passed, then wait for all of it.
static Window run_window(Shape &s, cudaStream_t st, double seconds)
{
        cudaEvent_t ev_s[2], ev_e[2], ev_done[2];
        for (int k = 0; k < 2; k++) {
                CK(cudaEventCreate(&ev_s[k]));
                CK(cudaEventCreate(&ev_e[k]));
                CK(cudaEventCreateWithFlags(&ev_done[k], cudaEventDisableTiming));
        }
        bool pending[2] = {false, false};
        double ms_sum = 0;
        long long samples = 0, launches = 0;
        auto collect = [&](int k) {
                float ms = 0;
                CK(cudaEventElapsedTime(&ms, ev_s[k], ev_e[k]));
                ms_sum += ms / s.per_launch;
                samples++;
                pending[k] = false;
        };
        CK(cudaStreamSynchronize(st));
        auto t0 = clk::now();
        for (long long i = 0;; i++) {
                int k = (int)(i & 1);
                if (pending[k]) {
                        CK(cudaEventSynchronize(ev_done[k]));
                        collect(k);
                }
                if (since(t0) >= seconds)
                        break;
                CK(cudaEventRecord(ev_s[k], st));
                s.launch(st);
                CK(cudaEventRecord(ev_e[k], st));
                for (int j = 1; j < s.batch; j++)
                        s.launch(st);
                CK(cudaGetLastError());
                CK(cudaEventRecord(ev_done[k], st));
                pending[k] = true;
                launches += s.batch;
        }
        CK(cudaStreamSynchronize(st));
        Window w;
        w.wall = since(t0);
        for (int k = 0; k < 2; k++)
                if (pending[k])
                        collect(k);
        for (int k = 0; k < 2; k++) {
                CK(cudaEventDestroy(ev_s[k]));
                CK(cudaEventDestroy(ev_e[k]));
                CK(cudaEventDestroy(ev_done[k]));
        }
        w.work = launches * s.per_launch;
        w.kernel_ms = samples ? ms_sum / samples : 0;
        return w;
}

// Green contexts: built with CUDA 13 (the driver entry points came in 12.4, the SM resource's
// fields as used here later); the shapes build with older toolkits too (tests/gpu/prepare.sh
// builds 11.8 and 12.4), without `green`.
#if CUDART_VERSION >= 13000
template <class T> static T driver_entry(const char *name)
{
        void *p = nullptr;
        cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
        CK(cudaGetDriverEntryPointByVersion(name, &p, 12040, cudaEnableDefault, &q));
        if (q != cudaDriverEntryPointSuccess || !p) {
                std::fprintf(stderr, "compute_shapes: driver entry point %s not found (query result %d)\n", name, (int)q);
                std::exit(1);
        }
        return reinterpret_cast<T>(p);
}

// Make a green context of at least `asked` SMs current on this thread (the runtime then uses
// it: its NULL stream and cudaStreamCreate streams are confined to those SMs); returns the
// number of SMs it was given.
static int enter_green_context(int device, unsigned asked)
{
        auto cuDeviceGet_ = driver_entry<PFN_cuDeviceGet_v2000>("cuDeviceGet");
        auto cuDeviceGetDevResource_ = driver_entry<PFN_cuDeviceGetDevResource_v12040>("cuDeviceGetDevResource");
        auto cuDevSmResourceSplitByCount_ =
                driver_entry<PFN_cuDevSmResourceSplitByCount_v12040>("cuDevSmResourceSplitByCount");
        auto cuDevResourceGenerateDesc_ = driver_entry<PFN_cuDevResourceGenerateDesc_v12040>("cuDevResourceGenerateDesc");
        auto cuGreenCtxCreate_ = driver_entry<PFN_cuGreenCtxCreate_v12040>("cuGreenCtxCreate");
        auto cuGreenCtxGetDevResource_ = driver_entry<PFN_cuGreenCtxGetDevResource_v12040>("cuGreenCtxGetDevResource");
        auto cuCtxFromGreenCtx_ = driver_entry<PFN_cuCtxFromGreenCtx_v12040>("cuCtxFromGreenCtx");
        auto cuCtxSetCurrent_ = driver_entry<PFN_cuCtxSetCurrent_v4000>("cuCtxSetCurrent");

        CUdevice dev;
        CKD(cuDeviceGet_(&dev, device));
        CUdevResource all;
        std::memset(&all, 0, sizeof all);
        CKD(cuDeviceGetDevResource_(dev, &all, CU_DEV_RESOURCE_TYPE_SM));
        std::fprintf(stderr, "compute_shapes: device SM resource: %u SMs, min partition %u, alignment %u\n",
                     all.sm.smCount, all.sm.minSmPartitionSize, all.sm.smCoscheduledAlignment);
        CUdevResource group, rest;
        std::memset(&group, 0, sizeof group);
        std::memset(&rest, 0, sizeof rest);
        unsigned groups = 1;
        CKD(cuDevSmResourceSplitByCount_(&group, &groups, &all, &rest, 0, asked));
        if (groups != 1) {
                std::fprintf(stderr, "compute_shapes: splitting %u SMs by %u gave %u groups\n", all.sm.smCount, asked, groups);
                std::exit(1);
        }
        CUdevResourceDesc desc;
        CKD(cuDevResourceGenerateDesc_(&desc, &group, 1));
        CUgreenCtx green;
        CKD(cuGreenCtxCreate_(&green, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
        CUdevResource given;
        std::memset(&given, 0, sizeof given);
        CKD(cuGreenCtxGetDevResource_(green, &given, CU_DEV_RESOURCE_TYPE_SM));
        CUcontext ctx;
        CKD(cuCtxFromGreenCtx_(&ctx, green));
        CKD(cuCtxSetCurrent_(ctx));
        std::fprintf(stderr, "compute_shapes: green context: asked %u SMs, split gave %u, context has %u\n", asked,
                     group.sm.smCount, given.sm.smCount);
        // The green context is left to the process's exit (destroying it while the runtime
        // still holds it current would only add teardown ordering to get wrong).
        return (int)given.sm.smCount;
}
#else
static int enter_green_context(int, unsigned)
{
        std::fprintf(stderr, "compute_shapes: green contexts need a CUDA 13 build (built with %d)\n", CUDART_VERSION);
        std::exit(2);
}
#endif

static void usage()
{
        std::fprintf(stderr, "usage: compute_shapes short|long|tiny|graph|coop|half SECONDS\n"
                             "       compute_shapes green SECONDS N_SMS\n");
        std::exit(2);
}

static size_t count_wrong(const std::vector<float> &got, const std::function<float(unsigned)> &want)
{
        size_t bad = 0;
        for (unsigned i = 0; i < got.size(); i++)
                if (!(got[i] == want(i))) {
                        if (bad < 3)
                                std::fprintf(stderr, "compute_shapes: out[%u] = %g, want %g\n", i, got[i], want(i));
                        bad++;
                }
        return bad;
}

int main(int argc, char **argv)
{
        if (argc < 3)
                usage();
        std::string name = argv[1];
        double seconds = std::atof(argv[2]);
        if (!(seconds > 0))
                usage();
        int asked = 0;
        if (name == "green") {
                if (argc != 4 || (asked = std::atoi(argv[3])) <= 0)
                        usage();
        } else if (argc != 3 || (name != "short" && name != "long" && name != "tiny" && name != "graph" && name != "coop" &&
                                     name != "half")) {
                usage();
        }
        int iters = 6000;
        if (const char *e = std::getenv("CS_ITERS"))
                iters = std::atoi(e);
        double warmup = 0.5;
        if (const char *e = std::getenv("CS_WARMUP"))
                warmup = std::atof(e);
        if (iters <= 0 || warmup < 0)
                usage();

        const int device = 0;
        CK(cudaSetDevice(device));
        CK(cudaFree(0)); // the primary context (a green context retains it)
        int sms = 0;
        CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
        int sms_used = sms;
        if (name == "green")
                sms_used = enter_green_context(device, (unsigned)asked);

        // Everything below runs in the current context: the green one for `green`.
        const float a = 1.0f, b = 0.0f;
        const int blocks = 16 * sms; // the whole device's count, for green too: same work per kernel
        cudaStream_t st;
        CK(cudaStreamCreate(&st));
        float *out = nullptr, *part = nullptr;
        size_t n_out = (size_t)blocks * THREADS;

        Shape s;
        cudaGraphExec_t graph_exec = nullptr;
        std::function<float(unsigned)> want = fma_expect;
        if (name == "short" || name == "green" || name == "long" || name == "tiny") {
                int it = name == "long" ? 5 * iters : name == "tiny" ? 1 : iters;
                int nb = name == "tiny" ? 1 : blocks, nt = name == "tiny" ? TINY_THREADS : THREADS;
                n_out = (size_t)nb * nt;
                s.batch = name == "long" ? 4 : name == "tiny" ? 2000 : 20;
                s.launch = [&out, nb, nt, a, b, it](cudaStream_t q) { fma_kernel<<<nb, nt, 0, q>>>(out, a, b, it); };
        } else if (name == "half") {
                // A GPU busy about half the time: one `short` kernel, wait for it, then as long
                // again on the CPU. Under a limit above its use it measures the limiter's cost.
                s.batch = 1;
                s.launch = [&out, blocks, a, b, iters](cudaStream_t q) {
                        auto t = clk::now();
                        fma_kernel<<<blocks, THREADS, 0, q>>>(out, a, b, iters);
                        CK(cudaStreamSynchronize(q));
                        double busy = since(t);
                        auto u = clk::now();
                        while (since(u) < busy)
                                ;
                };
        } else if (name == "graph") {
                s.per_launch = GRAPH_KERNELS;
                s.batch = 1;
                s.launch = [&graph_exec](cudaStream_t q) { CK(cudaGraphLaunch(graph_exec, q)); };
        } else { // coop
                int coop_ok = 0, per_sm = 0;
                CK(cudaDeviceGetAttribute(&coop_ok, cudaDevAttrCooperativeLaunch, device));
                if (!coop_ok) {
                        std::fprintf(stderr, "compute_shapes: the device has no cooperative launch\n");
                        return 1;
                }
                CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, coop_kernel, THREADS, 0));
                if (per_sm <= 0) {
                        std::fprintf(stderr, "compute_shapes: coop_kernel: no block fits on an SM\n");
                        return 1;
                }
                int grid = per_sm * sms;
                // As many FMAs per launch as one `short` kernel (grid is smaller than 16 x SMs).
                int it = (int)((long long)iters * blocks / grid);
                std::fprintf(stderr, "compute_shapes: coop grid %d blocks (%d per SM) x %d threads, %d iterations\n", grid,
                             per_sm, THREADS, it);
                n_out = (size_t)grid * THREADS;
                CK(cudaMalloc(&part, n_out * sizeof(float)));
                s.batch = 20;
                s.launch = [&out, &part, grid, a, b, it](cudaStream_t q) {
                        float *o = out, *p = part, fa = a, fb = b;
                        int n = it;
                        void *args[] = {&p, &o, &fa, &fb, &n};
                        CK(cudaLaunchCooperativeKernel((const void *)coop_kernel, dim3(grid), dim3(THREADS), args, 0, q));
                };
                size_t total = n_out;
                want = [total](unsigned gid) { return fma_expect((unsigned)((gid + THREADS) % total)); };
        }
        CK(cudaMalloc(&out, n_out * sizeof(float)));
        if (name == "graph") {
                cudaGraph_t graph;
                CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
                for (int k = 0; k < GRAPH_KERNELS; k++)
                        fma_kernel<<<blocks, THREADS, 0, st>>>(out, a, b, iters);
                CK(cudaStreamEndCapture(st, &graph));
                CK(cudaGraphInstantiateWithFlags(&graph_exec, graph, 0));
                CK(cudaGraphDestroy(graph));
        }
        s.clear = [&out, &part, n_out](cudaStream_t q) {
                CK(cudaMemsetAsync(out, 0xff, n_out * sizeof(float), q)); // all ones: a NaN
                if (part)
                        CK(cudaMemsetAsync(part, 0xff, n_out * sizeof(float), q));
        };

        if (warmup > 0)
                run_window(s, st, warmup);
        Window w = run_window(s, st, seconds);

        // Correctness, once: clear, one launch, check every value it wrote.
        s.clear(st);
        s.launch(st);
        CK(cudaGetLastError());
        CK(cudaStreamSynchronize(st));
        std::vector<float> got(n_out);
        CK(cudaMemcpy(got.data(), out, n_out * sizeof(float), cudaMemcpyDeviceToHost));
        size_t bad = count_wrong(got, want);
        if (bad) {
                std::fprintf(stderr, "compute_shapes: %s: %zu of %zu values wrong\n", name.c_str(), bad, n_out);
                return 1;
        }
        if (w.work <= 0 || w.wall <= 0) {
                std::fprintf(stderr, "compute_shapes: %s: no work measured\n", name.c_str());
                return 1;
        }
        std::printf("shape=%s work=%lld seconds=%.3f rate=%.2f kernel_ms=%.5f sms=%d", name.c_str(), w.work, w.wall,
                    w.work / w.wall, w.kernel_ms, sms_used);
        if (name == "green")
                std::printf(" asked=%d", asked);
        std::printf("\n");
        std::fflush(stdout);
        if (graph_exec)
                CK(cudaGraphExecDestroy(graph_exec));
        CK(cudaStreamDestroy(st));
        CK(cudaFree(out));
        if (part)
                CK(cudaFree(part));
        return 0;
}
