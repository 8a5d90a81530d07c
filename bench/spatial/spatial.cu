// spatial: issue 32, item 6 (an experiment): a request client confined to SMs of its own beside a
// batch on the others, through green contexts (driver API; one process, two threads: a green
// context confines only the work of its own process) or, across processes, under MPS (the script
// bench/spatial/run.sh sets CUDA_MPS_ACTIVE_THREAD_PERCENTAGE):
//   spatial client SECONDS ITERS [SMS=0]   the client alone: every LAT_PERIOD_MS (20) a request of
//                                          LAT_KERNELS (4) kernels, each waited for; SMS > 0: on a
//                                          green context of SMS SMs (rounded up by the driver)
//   spatial batch SECONDS ITERS [SMS=0]    a batch alone: kernels back to back (two groups of 4 in
//                                          flight), on SMS SMs or the whole GPU
//   spatial pair SECONDS REQ_ITERS BATCH_ITERS CLIENT_SMS
//                                          both in one process: the client on a green context of
//                                          CLIENT_SMS SMs, the batch on one of the SMs left
// Kernels: LAT_BLOCKS (default 4 x the device's SMs) blocks of 256 threads of a fixed FMA loop
// (bench/fma_work.h; ITERS from `latency calibrate`), the same work whatever SMs they get.
// Prints, per side, "client sms=S due=D requests=N p50_ms= p99_ms= max_ms=" and
// "batch sms=S kernels=K rate=R" (kernels/s over the client's window in pair mode). A CUDA error or
// a wrong result prints the reason and exits 1; usage: 2.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#define CK_PROG "spatial"
#include "../cuda_check.h"
#include "../fma_work.h"

static const int THREADS = 256;
static int g_blocks;

__global__ void fma_kernel(float *out, float a, float b, int iters)
{
        unsigned gid = blockIdx.x * blockDim.x + threadIdx.x;
        out[gid] = fma_work(gid, a, b, iters);
}

using clk = std::chrono::steady_clock;
static double since(clk::time_point t0) { return std::chrono::duration<double>(clk::now() - t0).count(); }
static double env_num(const char *name, double def)
{
        const char *v = getenv(name);
        return v != nullptr && *v != '\0' ? atof(v) : def;
}

// A side: its context (a green one, or the primary: nullptr), its stream and buffer, made current
// in the calling thread.
struct Side {
        CUcontext ctx = nullptr;
        unsigned sms = 0;
        cudaStream_t st = nullptr;
        float *out = nullptr;
        void bind()
        {
                if (ctx != nullptr)
                        CKD(cuCtxSetCurrent(ctx));
                CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
                CK(cudaMalloc(&out, (size_t)g_blocks * THREADS * sizeof(float)));
        }
        void launch(int iters) { fma_kernel<<<g_blocks, THREADS, 0, st>>>(out, 1.0f, 0.0f, iters); }
        void check(int iters)
        {
                launch(iters);
                CK(cudaGetLastError());
                std::vector<float> h((size_t)g_blocks * THREADS);
                CK(cudaMemcpyAsync(h.data(), out, h.size() * sizeof(float), cudaMemcpyDeviceToHost, st));
                CK(cudaStreamSynchronize(st));
                for (size_t g = 0; g < h.size(); g++)
                        if (h[g] != fma_expect((unsigned)g)) {
                                fprintf(stderr, "spatial: wrong value at %zu: %g\n", g, h[g]);
                                exit(1);
                        }
        }
};

static CUcontext green(const CUdevResource &r, CUdevice dev)
{
        CUdevResourceDesc d;
        CKD(cuDevResourceGenerateDesc(&d, const_cast<CUdevResource *>(&r), 1));
        CUgreenCtx g;
        CKD(cuGreenCtxCreate(&g, d, dev, CU_GREEN_CTX_DEFAULT_STREAM));
        CUcontext c;
        CKD(cuCtxFromGreenCtx(&c, g));
        return c;
}

// split: a side of `want` SMs (rounded up by the driver) and, if `rest` is given, one of the SMs left
static void split(unsigned want, Side *mine, Side *rest)
{
        CUdevice dev;
        CKD(cuDeviceGet(&dev, 0));
        CUdevResource all, group, left;
        memset(&all, 0, sizeof all);
        memset(&group, 0, sizeof group);
        memset(&left, 0, sizeof left);
        CKD(cuDeviceGetDevResource(dev, &all, CU_DEV_RESOURCE_TYPE_SM));
        unsigned n = 1;
        CKD(cuDevSmResourceSplitByCount(&group, &n, &all, &left, 0, want));
        if (n != 1 || group.sm.smCount == 0) {
                fprintf(stderr, "spatial: a split of %u SMs gave %u groups of %u\n", want, n, group.sm.smCount);
                exit(1);
        }
        mine->ctx = green(group, dev), mine->sms = group.sm.smCount;
        if (rest != nullptr) {
                if (left.sm.smCount == 0) {
                        fprintf(stderr, "spatial: no SMs left beside %u\n", group.sm.smCount);
                        exit(1);
                }
                rest->ctx = green(left, dev), rest->sms = left.sm.smCount;
        }
}

static std::atomic<int> phase{0}; // pair: 1 the client measures, 2 it is done

static void client(Side &s, double seconds, int iters)
{
        s.bind();
        s.check(iters);
        double period = env_num("LAT_PERIOD_MS", 20) / 1e3;
        int kernels = (int)env_num("LAT_KERNELS", 4);
        std::vector<double> lat;
        long due = (long)std::ceil(seconds / period - 1e-9);
        auto t0 = clk::now();
        phase = 1;
        for (long n = 0; n < due && since(t0) < seconds; n++) {
                std::this_thread::sleep_until(t0 + std::chrono::duration_cast<clk::duration>(std::chrono::duration<double>(n * period)));
                auto r0 = clk::now();
                for (int k = 0; k < kernels; k++) {
                        s.launch(iters);
                        CK(cudaGetLastError());
                        CK(cudaStreamSynchronize(s.st));
                }
                lat.push_back(since(r0) * 1e3);
        }
        phase = 2;
        s.check(iters);
        std::sort(lat.begin(), lat.end());
        size_t n = lat.size();
        printf("client sms=%u due=%ld requests=%zu p50_ms=%.3f p99_ms=%.3f max_ms=%.3f\n", s.sms,
               due, n, lat[n / 2], lat[(size_t)((double)(n - 1) * 0.99)], lat[n - 1]);
}

// batch: until `seconds` (alone) or the client's end (pair), counting over the client's window
static void batch(Side &s, double seconds, int iters, bool pair)
{
        s.bind();
        s.check(iters);
        cudaEvent_t done[2];
        for (auto &e : done)
                CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
        bool pending[2] = {false, false};
        long completed = 0, c0 = -1;
        clk::time_point t0 = clk::now(), tw = t0;
        for (long i = 0;; i++) {
                int k = (int)(i & 1);
                if (pending[k]) {
                        CK(cudaEventSynchronize(done[k]));
                        pending[k] = false;
                        completed += 4;
                        if (c0 < 0 && (!pair || phase.load() >= 1))
                                c0 = completed, tw = clk::now();
                }
                if (pair ? phase.load() == 2 : since(t0) >= seconds)
                        break;
                if (pair && since(t0) > seconds + 120) {
                        fprintf(stderr, "spatial: the client never finished\n");
                        exit(1);
                }
                for (int j = 0; j < 4; j++)
                        s.launch(iters);
                CK(cudaGetLastError());
                CK(cudaEventRecord(done[k], s.st));
                pending[k] = true;
        }
        CK(cudaStreamSynchronize(s.st));
        double secs = since(tw);
        s.check(iters);
        printf("batch sms=%u kernels=%ld rate=%.2f\n", s.sms, completed - c0, (double)(completed - c0) / secs);
}

int main(int argc, char **argv)
{
        bool is_pair = argc == 6 && strcmp(argv[1], "pair") == 0;
        bool one = (argc == 4 || argc == 5) && (strcmp(argv[1], "client") == 0 || strcmp(argv[1], "batch") == 0);
        if (!is_pair && !one) {
                fprintf(stderr, "usage: spatial client|batch SECONDS ITERS [SMS] | pair SECONDS REQ_ITERS BATCH_ITERS CLIENT_SMS\n");
                return 2;
        }
        CK(cudaFree(nullptr));
        int sms = 0;
        CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
        g_blocks = (int)env_num("LAT_BLOCKS", 0);
        if (g_blocks <= 0)
                g_blocks = 4 * sms;
        double seconds = atof(argv[2]);
        if (one) {
                Side s;
                s.sms = (unsigned)sms;
                unsigned want = argc == 5 ? (unsigned)atoi(argv[4]) : 0;
                if (want > 0)
                        split(want, &s, nullptr);
                if (argv[1][0] == 'c')
                        client(s, seconds, atoi(argv[3]));
                else
                        batch(s, seconds, atoi(argv[3]), false);
                return 0;
        }
        Side c, b;
        split((unsigned)atoi(argv[5]), &c, &b);
        int ri = atoi(argv[3]), bi = atoi(argv[4]);
        std::thread bt([&] { batch(b, seconds, bi, true); });
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        client(c, seconds, ri);
        bt.join();
        return 0;
}
