// latency: the two workloads of the latency measurements (bench/latency.sh), one per process:
//   latency calibrate US          print iters=N: the FMA loop count that makes one kernel of
//                                 LAT_BLOCKS (default, or 0: 4 x the SMs it sees) blocks of 256 threads last
//                                 about US microseconds, and blocks=B
//   latency request SECONDS ITERS a latency-sensitive client: every LAT_PERIOD_MS (default 20)
//                                 one request of LAT_KERNELS (default 4) such kernels, each waited
//                                 for (cudaStreamSynchronize); prints
//                                 requests=N p50_ms= p99_ms= max_ms= (from the request's first
//                                 launch to the end of its last kernel)
//                                 requests=N (served) due=D (the requests its period asks for in
//                                 SECONDS: a late request delays the next, so N < D is a request
//                                 dropped; one due within SECONDS may begin up to LAT_GRACE_MS,
//                                 default 250, after them), and p99_due_ms= max_due_ms= (from each due time, over
//                                 every due request: a late one counts its wait behind the one
//                                 before, a dropped one its wait to the end; print_due below)
//   latency batch SECONDS ITERS   a batch neighbour: such kernels back to back (two batches of 4
//                                 in flight, as bench/compute_shapes.cu); prints kernels=N rate=K/s
//                                 over the window LAT_WINDOW="FROM:TO" seconds after its start
//                                 (default the whole run), by the completions it waited for.
//                                 LAT_STEP=N (issue 32): in steps instead, as a training loop: N
//                                 units launched, then waited for (the GPU pauses between steps);
//                                 LAT_BATCH_KIND=kernel (default) | graph (a unit is one replay of a
//                                 CUDA graph of LAT_GRAPH_KERNELS, default 20, such kernels) | coop
//                                 (a unit is one cooperative launch, cudaLaunchCooperativeKernel; the
//                                 grid must fit the GPU at once, or it fails). kernels= counts kernels.
// LAT_START_EPOCH=T (request): the first request comes at T (seconds since the epoch, CLOCK_REALTIME),
// after the set-up, so that several processes measure over one window; LAT_WINDOW_EPOCH="FROM:TO"
// (batch): LAT_WINDOW in those seconds (bench/latency.sh gives both the same window).
// Every kernel does fixed work (4 FMA chains per thread, checked at the end: a CUDA error or a
// wrong value prints the reason and exits 1; usage: 2).
// LAT_COLD=1 (request): no warm-up launch and no check before the first request, so that the first
// request is the process's (and a new slice's) first work; first_ms= is printed either way.
// LAT_TIMELINE=FILE: each kernel also notes when its first block began and its last block ended
// (the GPU's %globaltimer, one clock for every process on the GPU); at the end the process writes
// them to FILE, one line per kernel, "k START_NS END_NS", and the request client a line per
// request, "r FIRST_KERNEL LATENCY_NS" (bench/latency_timeline.py reads both sides of a pair).
#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <string>
#include <cuda_runtime.h>
#include <thread>
#include <vector>

#define CK_PROG "latency"
#include "cuda_check.h"
#include "fma_work.h"

static const int THREADS = 256;

static const unsigned STAMPS = 1u << 18; // kernels noted (a ring)

__device__ static unsigned long long now_ns()
{
        unsigned long long t;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        return t;
}

__device__ unsigned long long sm_mask[4]; // LAT_TIMELINE: the SMs the process's kernels ran on

__global__ void fma_kernel(float *out, float a, float b, int iters, unsigned long long *stamp)
{
        if (stamp != nullptr && threadIdx.x == 0) {
                atomicMin(&stamp[0], now_ns());
                unsigned sm;
                asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
                atomicOr(&sm_mask[(sm / 64) % 4], 1ull << (sm % 64));
        }
        unsigned gid = blockIdx.x * blockDim.x + threadIdx.x;
        out[gid] = fma_work(gid, a, b, iters);
        if (stamp != nullptr) {
                __syncthreads();
                if (threadIdx.x == 0)
                        atomicMax(&stamp[1], now_ns());
        }
}

using clk = std::chrono::steady_clock;
static double since(clk::time_point t0) { return std::chrono::duration<double>(clk::now() - t0).count(); }

// The latency from each request's due time (its arrival at a service that takes one every period),
// over every due request: a request begun late, behind the one before it, counts its wait, and one
// never begun counts until the end (so a client that falls behind is not measured by the requests
// it still got to: a closed loop's latency from the start alone leaves that out)
static void print_due(std::vector<double> v)
{
        std::sort(v.begin(), v.end());
        size_t n = v.size();
        if (n == 0) {
                printf("p99_due_ms=nan max_due_ms=nan\n");
                return;
        }
        printf("p99_due_ms=%.3f max_due_ms=%.3f\n", v[(size_t)((double)(n - 1) * 0.99)], v[n - 1]);
}

struct Gpu {
        int blocks = 0;
        float *out = nullptr;
        cudaStream_t st = nullptr;
        unsigned long long *stamps = nullptr; // LAT_TIMELINE: [start, end] per kernel
        unsigned long n = 0;                  // kernels launched
        void launch(int iters)
        {
                unsigned long long *s = stamps != nullptr ? stamps + 2 * (n % STAMPS) : nullptr;
                n++;
                fma_kernel<<<blocks, THREADS, 0, st>>>(out, 1.0f, 0.0f, iters, s);
        }
        void timeline()
        {
                CK(cudaMalloc(&stamps, 2 * sizeof(unsigned long long) * STAMPS));
                std::vector<unsigned long long> init(2 * STAMPS);
                for (unsigned i = 0; i < STAMPS; i++)
                        init[2 * i] = ~0ull, init[2 * i + 1] = 0;
                CK(cudaMemcpy(stamps, init.data(), init.size() * sizeof(init[0]), cudaMemcpyHostToDevice));
        }
        void write_timeline(FILE *f)
        {
                std::vector<unsigned long long> h(2 * STAMPS);
                CK(cudaMemcpy(h.data(), stamps, h.size() * sizeof(h[0]), cudaMemcpyDeviceToHost));
                for (unsigned long k = n > STAMPS ? n - STAMPS : 0; k < n; k++)
                        fprintf(f, "k %llu %llu\n", h[2 * (k % STAMPS)], h[2 * (k % STAMPS) + 1]);
                unsigned long long m[4];
                CK(cudaMemcpyFromSymbol(m, sm_mask, sizeof(m)));
                fprintf(f, "sms %016llx%016llx%016llx%016llx\n", m[3], m[2], m[1], m[0]);
        }
        void check(int iters)
        {
                CK(cudaMemsetAsync(out, 0xff, (size_t)blocks * THREADS * sizeof(float), st));
                launch(iters);
                CK(cudaGetLastError());
                std::vector<float> h((size_t)blocks * THREADS);
                CK(cudaMemcpyAsync(h.data(), out, h.size() * sizeof(float), cudaMemcpyDeviceToHost, st));
                CK(cudaStreamSynchronize(st));
                for (size_t g = 0; g < h.size(); g++)
                        if (h[g] != fma_expect((unsigned)g)) {
                                fprintf(stderr, "latency: wrong value at %zu: %g\n", g, h[g]);
                                exit(1);
                        }
        }
};

static double kernel_ms(Gpu &g, int iters)
{
        cudaEvent_t a, b;
        CK(cudaEventCreate(&a));
        CK(cudaEventCreate(&b));
        g.launch(iters); // warm
        CK(cudaEventRecord(a, g.st));
        for (int i = 0; i < 5; i++)
                g.launch(iters);
        CK(cudaEventRecord(b, g.st));
        CK(cudaEventSynchronize(b));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, a, b));
        return ms / 5;
}

static int calibrate(Gpu &g, double us)
{
        int iters = 1000;
        for (int round = 0; round < 4; round++) {
                double ms = kernel_ms(g, iters);
                iters = std::max(1, (int)(iters * (us / 1000.0) / ms));
        }
        printf("iters=%d blocks=%d kernel_ms=%.4f\n", iters, g.blocks, kernel_ms(g, iters));
        return 0;
}

static double env_num(const char *name, double def)
{
        const char *v = getenv(name);
        return v != nullptr && *v != '\0' ? atof(v) : def;
}

static FILE *timeline; // LAT_TIMELINE

// seconds since the epoch (CLOCK_REALTIME: one clock for every process)
static double epoch_now()
{
        return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

static int request(Gpu &g, double seconds, int iters)
{
        double period = env_num("LAT_PERIOD_MS", 20) / 1e3;
        int kernels = (int)env_num("LAT_KERNELS", 4);
        std::vector<double> lat, lat_due;
        std::vector<unsigned long> first;
        if (env_num("LAT_COLD", 0) == 0) {
                g.launch(iters);
                CK(cudaStreamSynchronize(g.st));
        }
        double start = env_num("LAT_START_EPOCH", 0);
        if (start > 0) {
                double wait = start - epoch_now();
                if (wait > 60) {
                        fprintf(stderr, "latency: LAT_START_EPOCH is %.1f s away\n", wait);
                        return 1;
                }
                if (wait > 0)
                        std::this_thread::sleep_for(std::chrono::duration<double>(wait));
                else
                        fprintf(stderr, "latency: started %.3f s after LAT_START_EPOCH\n", -wait);
        }
        long due_n = (long)std::ceil(seconds / period - 1e-9);
        /* (a request due in the last milliseconds, behind a late one, is served, not dropped by
           the window's end: up to LAT_GRACE_MS after it) */
        double grace = env_num("LAT_GRACE_MS", 250) / 1e3;
        auto t0 = clk::now();
        for (long n = 0; n < due_n && since(t0) < seconds + grace; n++) {
                auto due = t0 + std::chrono::duration_cast<clk::duration>(std::chrono::duration<double>(n * period));
                std::this_thread::sleep_until(due);
                auto r0 = clk::now();
                first.push_back(g.n);
                for (int k = 0; k < kernels; k++) {
                        g.launch(iters);
                        CK(cudaGetLastError());
                        CK(cudaStreamSynchronize(g.st));
                }
                lat.push_back(since(r0) * 1e3);
                lat_due.push_back(since(due) * 1e3);
        }
        /* (a request due but never begun waited from its due time to the end at least) */
        double end = since(t0);
        for (long n = (long)lat.size(); n < due_n; n++)
                lat_due.push_back(std::max(0.0, end - (double)n * period) * 1e3);
        if (timeline != nullptr)
                for (size_t i = 0; i < lat.size(); i++)
                        fprintf(timeline, "r %lu %.0f\n", first[i], lat[i] * 1e6);
        double first_ms = lat[0];
        std::sort(lat.begin(), lat.end());
        size_t n = lat.size();
        printf("due=%ld ", due_n);
        printf("requests=%zu p50_ms=%.3f p99_ms=%.3f max_ms=%.3f first_ms=%.3f ", n, lat[n / 2],
               lat[(size_t)((double)(n - 1) * 0.99)], lat[n - 1], first_ms);
        print_due(lat_due); /* (one entry per due request: served, then the rest) */
        return 0;
}

// One unit of a stepping batch (LAT_BATCH_KIND): the kernels it ran
struct Unit {
        int kind = 0; // 0 kernel, 1 graph, 2 coop
        int graph_kernels = 20;
        cudaGraphExec_t exec = nullptr;
        void init(Gpu &g, int iters)
        {
                const char *k = getenv("LAT_BATCH_KIND");
                std::string name = k != nullptr && *k != '\0' ? k : "kernel";
                if (name == "graph") {
                        kind = 1;
                        graph_kernels = std::max(1, (int)env_num("LAT_GRAPH_KERNELS", 20));
                        unsigned long long *stamps = g.stamps; // (a graph's kernels are not noted)
                        g.stamps = nullptr;
                        cudaGraph_t graph;
                        CK(cudaStreamBeginCapture(g.st, cudaStreamCaptureModeThreadLocal));
                        for (int i = 0; i < graph_kernels; i++)
                                g.launch(iters);
                        CK(cudaStreamEndCapture(g.st, &graph));
                        CK(cudaGraphInstantiate(&exec, graph, 0));
                        g.stamps = stamps;
                } else if (name == "coop") {
                        kind = 2;
                        int dev = 0, coop = 0, per_sm = 0, sms = 0;
                        CK(cudaGetDevice(&dev));
                        CK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
                        CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
                        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fma_kernel, THREADS, 0));
                        if (!coop || per_sm * sms < g.blocks) {
                                fprintf(stderr, "latency: a cooperative grid of %d blocks does not fit (%d per SM x %d SMs, coop %d)\n",
                                        g.blocks, per_sm, sms, coop);
                                exit(1);
                        }
                } else if (name != "kernel") {
                        fprintf(stderr, "latency: LAT_BATCH_KIND=%s: want kernel, graph or coop\n", k);
                        exit(2);
                }
        }
        int run(Gpu &g, int iters) // launches one unit; its kernels
        {
                if (kind == 1) {
                        CK(cudaGraphLaunch(exec, g.st));
                        return graph_kernels;
                }
                if (kind == 2) {
                        float a = 1.0f, b = 0.0f; // (LAT_TIMELINE: stamped as g.launch() stamps a kernel)
                        unsigned long long *s = g.stamps != nullptr ? g.stamps + 2 * (g.n % STAMPS) : nullptr;
                        g.n++;
                        void *args[] = {&g.out, &a, &b, &iters, &s};
                        CK(cudaLaunchCooperativeKernel((void *)fma_kernel, dim3(g.blocks), dim3(THREADS), args, 0, g.st));
                        return 1;
                }
                g.launch(iters);
                return 1;
        }
};

// LAT_STEP=N: N units, then a wait for them, over and over (a training step's pause)
static int batch_steps(Gpu &g, double seconds, int iters, int step, double from, double to)
{
        Unit u;
        u.init(g, iters);
        long completed = 0, at_from = -1, at_to = -1;
        double t_from = 0, t_to = 0;
        auto t0 = clk::now();
        while (since(t0) < seconds) {
                long k = 0;
                for (int j = 0; j < step; j++)
                        k += u.run(g, iters);
                CK(cudaGetLastError());
                CK(cudaStreamSynchronize(g.st));
                completed += k;
                double t = since(t0);
                if (at_from < 0 && t >= from)
                        at_from = completed, t_from = t;
                if (at_to < 0 && t >= to)
                        at_to = completed, t_to = t;
        }
        if (at_to < 0)
                at_to = completed, t_to = since(t0);
        if (at_from < 0 || t_to <= t_from) {
                if (getenv("LAT_WINDOW_EPOCH") != nullptr && (from >= seconds || to <= 0 || to - from < 1)) {
                        // (a process of a batch that comes and goes, all of it outside the window,
                        // or less than a second of it inside, where no two of its steps' ends may
                        // fall: its steps are counted from one end to the next, as every
                        // process's; a capped coop process that began 50 ms before the window's
                        // end ended its first step after it, and the cell failed)
                        printf("kernels=0 rate=0 blocks=%d secs=0\n", g.blocks);
                        return 0;
                }
                fprintf(stderr, "latency: the window %.2f:%.2f saw no completion\n", from, to);
                return 1;
        }
        printf("kernels=%ld rate=%.2f blocks=%d secs=%.3f\n", at_to - at_from, (double)(at_to - at_from) / (t_to - t_from),
               g.blocks, t_to - t_from);
        return 0;
}

static int batch(Gpu &g, double seconds, int iters)
{
        double from = 0, to = seconds;
        const char *w = getenv("LAT_WINDOW");
        if (w != nullptr && sscanf(w, "%lf:%lf", &from, &to) != 2) {
                fprintf(stderr, "latency: LAT_WINDOW=%s: want FROM:TO\n", w);
                return 2;
        }
        const char *we = getenv("LAT_WINDOW_EPOCH");
        if (we != nullptr && *we != '\0') {
                if (sscanf(we, "%lf:%lf", &from, &to) != 2) {
                        fprintf(stderr, "latency: LAT_WINDOW_EPOCH=%s: want FROM:TO\n", we);
                        return 2;
                }
                double now = epoch_now();
                from -= now, to -= now;
                if (from < 0)
                        from = 0;
        }
        int step = (int)env_num("LAT_STEP", 0);
        if (step > 0)
                return batch_steps(g, seconds, iters, step, from, to);
        const int per = 4;
        cudaEvent_t done[2];
        for (auto &e : done)
                CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
        bool pending[2] = {false, false};
        long completed = 0, at_from = -1, at_to = -1;
        double t_from = 0, t_to = 0;
        auto t0 = clk::now();
        for (long i = 0;; i++) {
                int k = (int)(i & 1);
                if (pending[k]) {
                        CK(cudaEventSynchronize(done[k]));
                        pending[k] = false;
                        completed += per;
                        double t = since(t0);
                        if (at_from < 0 && t >= from)
                                at_from = completed, t_from = t;
                        if (at_to < 0 && t >= to)
                                at_to = completed, t_to = t;
                }
                if (since(t0) >= seconds)
                        break;
                for (int j = 0; j < per; j++)
                        g.launch(iters);
                CK(cudaGetLastError());
                CK(cudaEventRecord(done[k], g.st));
                pending[k] = true;
        }
        CK(cudaStreamSynchronize(g.st));
        if (at_to < 0)
                at_to = completed, t_to = since(t0);
        if (at_from < 0 || t_to <= t_from) {
                fprintf(stderr, "latency: the window %.2f:%.2f saw no completion\n", from, to);
                return 1;
        }
        printf("kernels=%ld rate=%.2f blocks=%d secs=%.3f\n", at_to - at_from, (double)(at_to - at_from) / (t_to - t_from),
               g.blocks, t_to - t_from);
        return 0;
}

int main(int argc, char **argv)
{
        if (argc < 3 || (strcmp(argv[1], "calibrate") != 0 && argc != 4)) {
                fprintf(stderr, "usage: latency calibrate US | request SECONDS ITERS | batch SECONDS ITERS\n");
                return 2;
        }
        Gpu g;
        int sms = 0;
        CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
        g.blocks = (int)env_num("LAT_BLOCKS", 0); // (the script fixes it: MPS shows fewer SMs)
        if (g.blocks <= 0)
                g.blocks = 4 * sms;
        CK(cudaStreamCreateWithFlags(&g.st, cudaStreamNonBlocking));
        CK(cudaMalloc(&g.out, (size_t)g.blocks * THREADS * sizeof(float)));
        if (strcmp(argv[1], "calibrate") == 0)
                return calibrate(g, atof(argv[2]));
        int iters = atoi(argv[3]);
        const char *tl = getenv("LAT_TIMELINE");
        if (tl != nullptr && *tl != '\0') {
                if ((timeline = fopen(tl, "w")) == nullptr) {
                        fprintf(stderr, "latency: %s: %s\n", tl, strerror(errno));
                        return 1;
                }
                g.timeline();
        }
        if (strcmp(argv[1], "request") != 0 || env_num("LAT_COLD", 0) == 0)
                g.check(iters);
        int rc = strcmp(argv[1], "request") == 0 ? request(g, atof(argv[2]), iters)
                 : strcmp(argv[1], "batch") == 0 ? batch(g, atof(argv[2]), iters)
                                                 : 2;
        if (rc == 0)
                g.check(iters);
        if (timeline != nullptr) {
                g.write_timeline(timeline);
                if (fclose(timeline) != 0) {
                        fprintf(stderr, "latency: %s: %s\n", tl, strerror(errno));
                        return 1;
                }
        }
        return rc;
}
