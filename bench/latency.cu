// latency: the two workloads of the latency measurements (bench/latency.sh), one per process:
//   latency calibrate US          print iters=N: the FMA loop count that makes one kernel of
//                                 LAT_BLOCKS (default, or 0: 4 x the SMs it sees) blocks of 256 threads last
//                                 about US microseconds, and blocks=B
//   latency request SECONDS ITERS a latency-sensitive client: every LAT_PERIOD_MS (default 20)
//                                 one request of LAT_KERNELS (default 4) such kernels, each waited
//                                 for (cudaStreamSynchronize); prints
//                                 requests=N p50_ms= p99_ms= max_ms= (from the request's first
//                                 launch to the end of its last kernel)
//   latency batch SECONDS ITERS   a batch neighbour: such kernels back to back (two batches of 4
//                                 in flight, as bench/compute_shapes.cu); prints kernels=N rate=K/s
//                                 over the window LAT_WINDOW="FROM:TO" seconds after its start
//                                 (default the whole run), by the completions it waited for
// Every kernel does fixed work (4 FMA chains per thread, checked at the end: a CUDA error or a
// wrong value prints the reason and exits 1; usage: 2).
// LAT_TIMELINE=FILE: each kernel also notes when its first block began and its last block ended
// (the GPU's %globaltimer, one clock for every process on the GPU); at the end the process writes
// them to FILE, one line per kernel, "k START_NS END_NS", and the request client a line per
// request, "r FIRST_KERNEL LATENCY_NS" (bench/latency_timeline.py reads both sides of a pair).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cerrno>
#include <cstring>
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

static int request(Gpu &g, double seconds, int iters)
{
        double period = env_num("LAT_PERIOD_MS", 20) / 1e3;
        int kernels = (int)env_num("LAT_KERNELS", 4);
        std::vector<double> lat;
        std::vector<unsigned long> first;
        g.launch(iters);
        CK(cudaStreamSynchronize(g.st));
        auto t0 = clk::now();
        for (long n = 0; since(t0) < seconds; n++) {
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
        }
        if (timeline != nullptr)
                for (size_t i = 0; i < lat.size(); i++)
                        fprintf(timeline, "r %lu %.0f\n", first[i], lat[i] * 1e6);
        std::sort(lat.begin(), lat.end());
        size_t n = lat.size();
        printf("requests=%zu p50_ms=%.3f p99_ms=%.3f max_ms=%.3f\n", n, lat[n / 2], lat[(size_t)((double)(n - 1) * 0.99)],
               lat[n - 1]);
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
        printf("kernels=%ld rate=%.2f blocks=%d\n", at_to - at_from, (double)(at_to - at_from) / (t_to - t_from), g.blocks);
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
