/*
 * compute_probe: a driver-API workload for the compute limiter's tests on the simulated GPU (the
 * fake libcuda.so.1 gives a kernel named fg_spin_<N>us N microseconds of simulated GPU time).
 *   compute_probe MODE SECONDS KERNEL_US
 * MODE is the launch path: kernel (cuLaunchKernel), ptsz (cuLaunchKernel_ptsz on the per-thread
 * stream), ex (cuLaunchKernelEx), coop (cuLaunchCooperativeKernel), excoop (cuLaunchKernelEx with
 * the cooperative attribute), graph (a captured graph of 10 kernels, cuGraphLaunch), procaddr
 * (cuLaunchKernel as cuGetProcAddress_v2 returns it), quiet (one kernel every 2 ms, busy-waiting
 * between launches, between two marker writes: "BEGIN-QUIET"/"END-QUIET" on stderr), batch
 * (cuLaunchKernel in batches of PROBE_BATCH (default 4), waiting for the batch before the last,
 * as bench/compute_shapes.cu does), request (a latency client: every PROBE_PERIOD_US (default 20000)
 * one request of PROBE_REQ_KERNELS (default 4) kernels on its stream, each waited for and the
 * next launched PROBE_REQ_GAP_US (default 0) later, busy meanwhile (the host's work); it sleeps
 * between requests and prints requests=R (served) due=D (the requests its period asks for in
 * SECONDS: a request that takes longer than the period delays the next) p50_us= p99_us= max_us= of
 * the requests' latency, from the start of the request to the end of its last kernel, and
 * p95_run_us= p99_run_us= max_run_us= of the same less the time the process waited for a CPU meanwhile;
 * PROBE_REQ_WAIT=event waits for each kernel of a request with an event (cuEventSynchronize) instead
 * of cuStreamSynchronize; PROBE_REQ_WAIT=ctx13 with the context's synchronization as CUDA 13's
 * runtime gets it (cuGetProcAddress_v2 at 13000: cuCtxSynchronize_v2); PROBE_REQ_WAIT=end launches a
 * request's kernels one after another (PROBE_REQ_GAP_US of host work between them) and waits once,
 * after the last (cuStreamSynchronize), as a PyTorch service does; PROBE_REQ_LAST_US=M makes a
 * request's last kernel M us long (the others KERNEL_US).
 * PROBE_TIMELINE=FILE: each request as "q FIRST START_NS LATENCY_NS RUN_NS" in FILE, FIRST its
 * first kernel's place among the process's kernels, START_NS when it came (CLOCK_MONOTONIC),
 * RUN_NS its latency less the time the process waited for a CPU meanwhile: with the
 * simulated GPU's FAKEGPU_KERNEL_LOG, what tests/vgpu/timeline_count.py counts slips and late
 * starts from).
 * PROBE_NVML=1 reads NVML's utilization of device 0 two thirds of the way through (util=U below).
 * PROBE_PROGRESS=FILE: the launches so far in FILE as they go (progress.h; not in request mode).
 * PROBE_BUSY_THREAD=1 starts a thread of its own that spins on the CPU for the whole run (a stand-in for
 * an interposer thread that burns CPU: its time must not count as the machine's, cpu_wait below).
 * PROBE_BLOCKS sets the grid's blocks of the kernel, cuLaunchKernel modes only (default 1; a grid
 * wider than the SMs it runs on takes more waves, each KERNEL_US long).
 * It launches for SECONDS of wall time, synchronizes, and prints
 *   launches=N work_us=W wall_us=T fraction=W/T intercepted=0|1 sms=S start_ns=A end_ns=B
 * where W is the simulated GPU time the work would take on the whole device, intercepted says
 * whether the launch function it called lives in libgpuslice-vgpu.so, S is the device's SM
 * count as the process sees it, and A..B the measured window (T) on CLOCK_MONOTONIC, which every
 * process of the machine shares, containers included: where several probes run at once, the
 * span they all computed in.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "abi/cuda.h"
#include "abi/nvml.h"
#include "progress.h" /* also its clocks: progress_now_us, progress_wait_us, progress_steal_us */

/* NVML's utilization of device 0 as this process sees it (through dlsym, as tools find it). */
static int nvml_util(void)
{
        void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW);
        if (h == NULL)
                return -1;
        gs_nvmlInit_v2_fn init = (gs_nvmlInit_v2_fn)dlsym(h, "nvmlInit_v2");
        gs_nvmlDeviceGetHandleByIndex_v2_fn get = (gs_nvmlDeviceGetHandleByIndex_v2_fn)dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
        gs_nvmlDeviceGetUtilizationRates_fn util =
                (gs_nvmlDeviceGetUtilizationRates_fn)dlsym(h, "nvmlDeviceGetUtilizationRates");
        nvmlDevice_t d;
        nvmlUtilization_t u;
        if (init == NULL || get == NULL || util == NULL || init() != NVML_SUCCESS || get(0, &d) != NVML_SUCCESS ||
            util(d, &u) != NVML_SUCCESS)
                return -1;
        return (int)u.gpu;
}

static volatile int busy_stop;

static void *busy(void *arg)
{
        (void)arg;
        while (!busy_stop)
                ;
        return NULL;
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

static void sleep_until_us(double t)
{
        double left = t - progress_now_us();
        if (left <= 0)
                return;
        struct timespec ts = {(time_t)(left / 1e6), (long)((left - (double)(time_t)(left / 1e6) * 1e6) * 1e3)};
        nanosleep(&ts, NULL);
}

static int die(const char *what, CUresult rc);
#define CK(call) do { CUresult rc_ = (call); if (rc_ != CUDA_SUCCESS) die(#call, rc_); } while (0)

/* The latency client: every `period` us a request of `kernels` kernels, each waited for, until
 * `end`; each request's latency into lat[]. Returns the kernels launched. */
static unsigned long requests(gs_cuLaunchKernel_fn launch, CUfunction f, CUfunction last, unsigned blocks, CUstream s, double end,
                              double period, int kernels, double gap, double *lat, double *own, size_t cap, size_t *nreq,
                              FILE *tl)
{
        unsigned long n = 0;
        /* PROBE_REQ_WAIT=event: each kernel waited for by an event (cuEventSynchronize), which the
         * interposer does not see as the application's wait, not by cuStreamSynchronize */
        CUevent ev = NULL;
        const char *how = getenv("PROBE_REQ_WAIT");
        if (how != NULL && strcmp(how, "event") == 0)
                CK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
        /* PROBE_REQ_WAIT=ctx13: each request waited for by the context's synchronization as CUDA
         * 13's runtime gets it (cuGetProcAddress_v2 at 13000: cuCtxSynchronize_v2; its
         * cudaDeviceSynchronize, PyTorch's torch.cuda.synchronize) */
        gs_cuCtxSynchronize_v2_fn ctxsync = NULL;
        if (how != NULL && strcmp(how, "ctx13") == 0) {
                CUdriverProcAddressQueryResult st;
                CK(cuGetProcAddress_v2("cuCtxSynchronize", (void **)&ctxsync, 13000, 0, &st));
        }
        /* PROBE_REQ_WAIT=end: a request's kernels launched one after another (its host work
         * between them) and waited for once, after the last, as a PyTorch service does */
        bool at_end = how != NULL && strcmp(how, "end") == 0;
        while (progress_now_us() < end && *nreq < cap) {
                unsigned long first = n;
                double w0 = progress_wait_us(), r0 = progress_now_us();
                for (int k = 0; k < kernels; k++) {
                        /* the host's own work between two kernels of a request (busy: as a CPU step) */
                        for (double g0 = progress_now_us(); k > 0 && progress_now_us() - g0 < gap;)
                                ;
                        CK(launch(k + 1 == kernels && last != NULL ? last : f, blocks, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
                        if (at_end && k + 1 < kernels) {
                                n++;
                                continue; /* (queued: waited for with the last one) */
                        }
                        if (ctxsync != NULL) {
                                CK(ctxsync(NULL));
                        } else if (ev != NULL) {
                                CK(cuEventRecord(ev, s));
                                CK(cuEventSynchronize(ev));
                        } else {
                                CK(cuStreamSynchronize(s));
                        }
                        n++;
                }
                lat[*nreq] = progress_now_us() - r0;
                /* the same request less the time this process waited for a CPU during it */
                own[*nreq] = w0 >= 0 ? lat[*nreq] - (progress_wait_us() - w0) : lat[*nreq];
                if (tl != NULL)
                        fprintf(tl, "q %lu %.0f %.0f %.0f\n", first, r0 * 1e3, lat[*nreq] * 1e3, own[*nreq] * 1e3);
                (*nreq)++;
                sleep_until_us(r0 + period);
        }
        return n;
}

static int die(const char *what, CUresult rc)
{
        fprintf(stderr, "compute_probe: %s failed: %d\n", what, rc);
        exit(2);
}

static int in_vgpu(void *fn)
{
        Dl_info info;
        return dladdr(fn, &info) != 0 && info.dli_fname != NULL && strstr(info.dli_fname, "gpuslice-vgpu") != NULL;
}

/* The simulated GPU's kernel of `us` microseconds (fg_spin_<us>us), in a module of its own. */
static CUfunction spin_kernel(unsigned us)
{
        char name[64], ptx[512];
        CUmodule mod;
        CUfunction f;
        snprintf(name, sizeof(name), "fg_spin_%uus", us);
        snprintf(ptx, sizeof(ptx), ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry %s()\n{\n\tret;\n}\n", name);
        CK(cuModuleLoadData(&mod, ptx));
        CK(cuModuleGetFunction(&f, mod, name));
        return f;
}

/* A graph of ten kernels captured on s, instantiated (*per: the launches one graph launch stands for). */
static CUgraphExec ten_kernel_graph(CUfunction f, CUstream s, unsigned *per)
{
        CUgraph g;
        CUgraphExec exec;
        CK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
        for (int i = 0; i < 10; i++)
                CK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
        CK(cuStreamEndCapture(s, &g));
        CK(cuGraphInstantiateWithFlags(&exec, g, 0));
        *per = 10;
        return exec;
}

/* The entry point MODE launches through (the report says whether the interposer answered it). */
static void *mode_entry(const char *mode, gs_cuLaunchKernel_fn launch)
{
        if (strcmp(mode, "ptsz") == 0)
                return (void *)cuLaunchKernel_ptsz;
        if (strcmp(mode, "ex") == 0 || strcmp(mode, "excoop") == 0)
                return (void *)cuLaunchKernelEx;
        if (strcmp(mode, "coop") == 0)
                return (void *)cuLaunchCooperativeKernel;
        if (strcmp(mode, "graph") == 0)
                return (void *)cuGraphLaunch;
        return (void *)launch;
}

int main(int argc, char **argv)
{
        if (argc != 4) {
                fprintf(stderr, "usage: compute_probe MODE SECONDS KERNEL_US\n");
                return 2;
        }
        const char *mode = argv[1];
        double seconds = atof(argv[2]);
        unsigned kus = (unsigned)atoi(argv[3]);
        CUdevice dev;
        CUcontext ctx;
        CUfunction f;
        CUstream s;
        CK(cuInit(0));
        CK(cuDeviceGet(&dev, 0));
        CK(cuDevicePrimaryCtxRetain(&ctx, dev));
        CK(cuCtxSetCurrent(ctx));
        f = spin_kernel(kus);
        /* PROBE_REQ_LAST_US=M: a request's last kernel runs M us (its others KERNEL_US) */
        CUfunction last = getenv("PROBE_REQ_LAST_US") != NULL ? spin_kernel((unsigned)atoi(getenv("PROBE_REQ_LAST_US"))) : NULL;
        CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

        gs_cuLaunchKernel_fn launch = cuLaunchKernel;
        CUdriverProcAddressQueryResult st;
        if (strcmp(mode, "procaddr") == 0)
                CK(cuGetProcAddress_v2("cuLaunchKernel", (void **)&launch, 13000, 0, &st));
        unsigned per = 1;
        CUgraphExec exec = strcmp(mode, "graph") == 0 ? ten_kernel_graph(f, s, &per) : NULL;
        CUlaunchAttribute coop = {.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE, .value.cooperative = 1};
        CUlaunchConfig cfg = {.gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 32, .blockDimY = 1,
                              .blockDimZ = 1, .hStream = s};
        if (strcmp(mode, "excoop") == 0) {
                cfg.attrs = &coop;
                cfg.numAttrs = 1;
        }
        void *fn = mode_entry(mode, launch);
        bool quiet = strcmp(mode, "quiet") == 0, batch = strcmp(mode, "batch") == 0;
        bool request = strcmp(mode, "request") == 0;
        double period = getenv("PROBE_PERIOD_US") != NULL ? atof(getenv("PROBE_PERIOD_US")) : 20000;
        int req_kernels = getenv("PROBE_REQ_KERNELS") != NULL ? atoi(getenv("PROBE_REQ_KERNELS")) : 4;
        double req_gap = getenv("PROBE_REQ_GAP_US") != NULL ? atof(getenv("PROBE_REQ_GAP_US")) : 0;
        size_t nreq = 0, req_cap = (size_t)(seconds * 1e6 / (period > 1 ? period : 1)) + 2;
        double *lat = request ? calloc(req_cap, sizeof(double)) : NULL;
        double *own = request ? calloc(req_cap, sizeof(double)) : NULL;
        if (request && (lat == NULL || own == NULL))
                die("calloc", CUDA_ERROR_OUT_OF_MEMORY);
        CUevent done[2];
        bool pending[2] = {false, false};
        int nbatch = getenv("PROBE_BATCH") != NULL ? atoi(getenv("PROBE_BATCH")) : 4;
        unsigned blocks = getenv("PROBE_BLOCKS") != NULL ? (unsigned)atoi(getenv("PROBE_BLOCKS")) : 1;
        int sms = 0;
        CK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
        if (batch)
                for (int k = 0; k < 2; k++)
                        CK(cuEventCreate(&done[k], CU_EVENT_DISABLE_TIMING));

        pthread_t spinner;
        bool spinning = getenv("PROBE_BUSY_THREAD") != NULL && pthread_create(&spinner, NULL, busy, NULL) == 0;
        unsigned long n = 0;
        double wait0 = progress_wait_us(), others0 = progress_others_us(), steal0 = progress_steal_us();
        double t0 = progress_now_us(), end = t0 + seconds * 1e6, ask = t0 + seconds * 2e6 / 3;
        bool want_util = getenv("PROBE_NVML") != NULL;
        int util = -1;
        if (quiet) { /* the first launch sets the limiter up (and may wait for a budget): before the marker */
                CK(launch(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
                CK(cuStreamSynchronize(s));
                for (double w = progress_now_us() + 5000; progress_now_us() < w;)
                        ;
                fputs("BEGIN-QUIET\n", stderr);
        }
        FILE *tl = request && getenv("PROBE_TIMELINE") != NULL ? fopen(getenv("PROBE_TIMELINE"), "we") : NULL;
        if (tl != NULL)
                setvbuf(tl, NULL, _IOFBF, 1 << 20); /* (written at the end: no write between requests) */
        if (request)
                n = requests(launch, f, last, blocks, s, end, period, req_kernels, req_gap, lat, own, req_cap, &nreq, tl);
        if (tl != NULL)
                fclose(tl);
        while (!request && progress_now_us() < end) {
                CUresult rc;
                if (strcmp(mode, "ptsz") == 0)
                        rc = cuLaunchKernel_ptsz(f, 1, 1, 1, 32, 1, 1, 0, CU_STREAM_PER_THREAD, NULL, NULL);
                else if (strcmp(mode, "ex") == 0 || strcmp(mode, "excoop") == 0)
                        rc = cuLaunchKernelEx(&cfg, f, NULL, NULL);
                else if (strcmp(mode, "coop") == 0)
                        rc = cuLaunchCooperativeKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL);
                else if (exec != NULL)
                        rc = cuGraphLaunch(exec, s);
                else
                        rc = launch(f, blocks, 1, 1, 32, 1, 1, 0, s, NULL, NULL);
                if (rc != CUDA_SUCCESS)
                        die(mode, rc);
                n++;
                progress_note(n);
                if (batch && n % (unsigned long)nbatch == 0) {
                        /* as bench/compute_shapes.cu: a batch in flight while the next is queued */
                        int k = (int)(n / (unsigned long)nbatch) & 1;
                        CK(cuEventRecord(done[k], s));
                        pending[k] = true;
                        if (pending[k ^ 1])
                                CK(cuEventSynchronize(done[k ^ 1]));
                }
                if (quiet)
                        for (double w = progress_now_us() + 2000; progress_now_us() < w;)
                                ;
                if (want_util && util < 0 && progress_now_us() >= ask)
                        util = nvml_util();
        }
        if (quiet)
                fputs("END-QUIET\n", stderr);
        if (want_util && util < 0) /* SECONDS 0: no launch of its own */
                util = nvml_util();
        CK(cuStreamSynchronize(s));
        CK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
        double wall = progress_now_us() - t0, work = (double)n * per * kus;
        if (request && nreq > 0) {
                qsort(lat, nreq, sizeof(double), cmp_double);
                qsort(own, nreq, sizeof(double), cmp_double);
                printf("requests=%zu due=%.0f p50_us=%.0f p99_us=%.0f max_us=%.0f p95_run_us=%.0f p99_run_us=%.0f max_run_us=%.0f ",
                       nreq, seconds * 1e6 / period, lat[nreq / 2], lat[(size_t)((double)(nreq - 1) * 0.99)], lat[nreq - 1],
                       own[(size_t)((double)(nreq - 1) * 0.95)], own[(size_t)((double)(nreq - 1) * 0.99)], own[nreq - 1]);
        }
        free(lat);
        free(own);
        /* cpu_wait: the share of the run its application thread (this one) waited for a CPU, less
         * the CPU time of the process's other threads (the interposer's: progress.h says why), at
         * least 0; thread_wait and others: the two before the difference; steal: the share of the
         * machine's CPU time its hypervisor took (cpu_wait, thread_wait and steal -1 where the
         * kernel does not say) */
        if (spinning) {
                busy_stop = 1;
                pthread_join(spinner, NULL);
        }
        double wait1 = progress_wait_us(), others = progress_others_us() - others0, steal1 = progress_steal_us();
        double tw = wait0 >= 0 && wait1 >= 0 ? (wait1 - wait0) / wall : -1;
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        printf("cpu_wait=%.4f thread_wait=%.4f others=%.4f steal=%.4f ", tw < 0 ? -1 : tw > others / wall ? tw - others / wall : 0,
               tw, others / wall, steal0 >= 0 && steal1 >= 0 && ncpu > 0 ? (steal1 - steal0) / (wall * (double)ncpu) : -1);
        printf("launches=%lu work_us=%.0f wall_us=%.0f fraction=%.4f intercepted=%d sms=%d util=%d start_ns=%.0f end_ns=%.0f\n",
               n, work, wall, work / wall, in_vgpu(fn), sms, util, t0 * 1e3, (t0 + wall) * 1e3);
        return 0;
}
