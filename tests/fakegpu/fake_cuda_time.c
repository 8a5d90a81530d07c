/* SPDX-License-Identifier: Apache-2.0 */
/* Fake libcuda.so.1 (fake_cuda.h): the GPU time model. Kernel durations (from the kernel's
 * name, scaled by the SMs of the launching context), one timeline per device on which this
 * process's work runs in launch order (no concurrency between streams), optionally one timeline
 * per device shared by every process that names the same FAKEGPU_SHARED_TIMELINE file, the
 * back-pressure of a full push buffer, and the busy-time counters a test reads through
 * FAKEGPU_BUSY_FILE. */
#include "fake_cuda.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define BUSY_FILE_ENV  "FAKEGPU_BUSY_FILE"
#define KERNEL_US_ENV  "FAKEGPU_KERNEL_US"
#define SHARED_ENV     "FAKEGPU_SHARED_TIMELINE"
#define KLOG_ENV       "FAKEGPU_KERNEL_LOG"
#define SWITCH_ENV     "FAKEGPU_CTX_SWITCH_US"
#define MAX_SWITCH_US  100000ULL
#define MAX_NS         (1ULL << 62)   /* saturation: the sums below never overflow */

struct timeline {
    uint64_t tail;                    /* atomic: when the device's last work ends */
    uint64_t ptds;                    /* atomic: the per-thread default streams' tail */
};

static struct timeline g_tl[MAX_DEV];
static uint64_t *g_shared_tl;            /* FAKEGPU_SHARED_TIMELINE: every process's tail per device */
static struct fg_util_bucket *g_shared_util; /* ... and its work per 100 ms (fakegpu_state.h) */
static uint64_t *g_shared_owner;         /* ... and whose work was queued last (a process id) */
static uint64_t g_switch_ns;             /* FAKEGPU_CTX_SWITCH_US: a switch between processes' work */
static uint64_t g_pid;                   /* (this process: the owner it writes) */
static uint64_t g_default_ns;         /* kernel_us (or FAKEGPU_KERNEL_US) in ns */
static uint64_t g_queue_ns;
static unsigned long long g_busy_ns;  /* atomic: summed durations of the work run */
static unsigned long long g_kernels;  /* atomic */
static char g_busy_path[4096];
static pid_t g_busy_pid;
static FILE *g_klog;                  /* FAKEGPU_KERNEL_LOG: "k START END" per run (monotonic ns) */
static pid_t g_klog_pid;

/* ---------------------------------------------------------------------------------------- */
/* Clock                                                                                     */
/* ---------------------------------------------------------------------------------------- */

uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* The driver's waits return as the work ends (they spin or yield: CU_CTX_SCHED_AUTO); a sleep
 * ends up to the thread's timer slack late (50 µs by default), which every wait on the simulated
 * GPU paid. The calling thread's slack is 1 µs while it sleeps here, then put back. */
void sleep_until(uint64_t t)
{
    struct timespec ts = { .tv_sec = (time_t)(t / 1000000000ULL), .tv_nsec = (long)(t % 1000000000ULL) };

    if (now_ns() >= t)
        return;
    int slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    if (slack > 1000)
        prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    while (now_ns() < t && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
    if (slack > 1000)
        prctl(PR_SET_TIMERSLACK, (unsigned long)slack, 0, 0, 0);
}

/* ---------------------------------------------------------------------------------------- */
/* Durations                                                                                 */
/* ---------------------------------------------------------------------------------------- */

/* A name ending in `_<N>us` (N decimal digits, e.g. fg_spin_400us) lasts N µs; 0 if not. */
static int name_us(const char *name, unsigned long long *us)
{
    size_t n = strlen(name), i;
    unsigned long long v = 0;

    if (n < 4 || strcmp(name + n - 2, "us") != 0)
        return 0;
    i = n - 2;
    while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
        i--;
    if (i == n - 2 || i == 0 || name[i - 1] != '_' || n - 2 - i > 10)
        return 0;
    for (; i < n - 2; i++)
        v = v * 10 + (unsigned long long)(name[i] - '0');
    if (v > FG_MAX_KERNEL_US)
        return 0;
    *us = v;
    return 1;
}

uint64_t kernel_base_ns(const char *name)
{
    unsigned long long us;

    return name_us(name, &us) ? us * 1000ULL : g_default_ns;
}

/* base on the whole device; on fewer SMs it takes more waves of blocks:
 * base * ceil(blocks / sms) / ceil(blocks / device SMs). */
uint64_t kernel_ns(uint64_t base_ns, unsigned long long blocks, unsigned sms, int dev)
{
    unsigned dev_sms = dev_hw_sm_count(dev);
    unsigned long long waves, dev_waves;
    unsigned __int128 ns;

    if (sms == 0 || sms >= dev_sms || blocks == 0)
        return base_ns;
    waves = (blocks + sms - 1) / sms;
    dev_waves = (blocks + dev_sms - 1) / dev_sms;
    ns = (unsigned __int128)base_ns * waves / dev_waves;
    return ns > MAX_NS ? MAX_NS : (uint64_t)ns;
}

/* ---------------------------------------------------------------------------------------- */
/* Timelines                                                                                 */
/* ---------------------------------------------------------------------------------------- */

/* The switch our next work on a shared device costs first: FAKEGPU_CTX_SWITCH_US where another
 * process's work was queued there last, else none. */
static uint64_t switch_from(int dev)
{
    if (g_switch_ns == 0)
        return 0;
    uint64_t owner = __atomic_load_n(&g_shared_owner[dev], __ATOMIC_ACQUIRE);
    return owner != 0 && owner != g_pid ? g_switch_ns : 0;
}

uint64_t *tl_device_tail(int dev)
{
    return &g_tl[dev].tail;
}

/* When the device runs new work of this process at the earliest, for an event recorded on a
 * stream with nothing queued: now, or, on a GPU shared with other processes (the shared
 * timeline), once the work submitted so far has run. A real GPU runs a context's work (an event's
 * release too) only in that context's time on the GPU: after the kernel of another context
 * running there ends, and the switch. (The shared timeline does not tell whose work is last: ours
 * counts too. Other streams of our own context do not hold such an event back: alone, now.) */
uint64_t tl_ready(int dev, uint64_t now)
{
    uint64_t t = now;
    if (g_shared_tl != NULL) {
        uint64_t shared = __atomic_load_n(&g_shared_tl[dev], __ATOMIC_ACQUIRE);
        if (shared > t)
            t = shared;
        t += switch_from(dev);
    }
    return t;
}

uint64_t *tl_ptds_tail(int dev)
{
    return &g_tl[dev].ptds;
}

static void atomic_max(uint64_t *v, uint64_t x)
{
    uint64_t cur = __atomic_load_n(v, __ATOMIC_RELAXED);

    while (cur < x && !__atomic_compare_exchange_n(v, &cur, x, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
    }
}

/* A full push buffer: wait while the device has more than queue_ms of work ahead of now. */
static void back_pressure(const struct timeline *tl)
{
    for (;;) {
        uint64_t tail = __atomic_load_n(&tl->tail, __ATOMIC_ACQUIRE);

        if (tail <= g_queue_ns || tail - g_queue_ns <= now_ns())
            return;
        sleep_until(tail - g_queue_ns);
    }
}

/* The work [start, end) into the device's 100 ms steps (a step reused from 1.6 s ago starts
 * over: two processes at once may lose a kernel's part; a model, not an account). */
static void util_note(struct fg_util_bucket *ring, uint64_t start, uint64_t end)
{
    for (uint64_t t = start; t < end;) {
        uint64_t idx = t / FG_UTIL_BUCKET_NS, upto = (idx + 1) * FG_UTIL_BUCKET_NS;
        struct fg_util_bucket *b = &ring[idx % FG_UTIL_BUCKETS];
        uint64_t old = __atomic_load_n(&b->idx, __ATOMIC_ACQUIRE);

        if (old != idx && __atomic_compare_exchange_n(&b->idx, &old, idx, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            __atomic_store_n(&b->ns, 0, __ATOMIC_RELEASE);
        __atomic_add_fetch(&b->ns, (end < upto ? end : upto) - t, __ATOMIC_RELAXED);
        t = upto;
    }
}

uint64_t tl_run(int dev, uint64_t *stream_tail, uint64_t ns, unsigned long long kernels)
{
    struct timeline *tl = &g_tl[dev];
    uint64_t now, tail, start, end;

    back_pressure(tl);
    now = now_ns();
    if (g_shared_tl != NULL) {
        /* One GPU for every process: its work runs in submission order after everyone's, after
         * a switch where another process's work was queued last (its owner: a model, written
         * after the tail; two processes queueing at once may both see the older owner). */
        uint64_t *shared = &g_shared_tl[dev];
        tail = __atomic_load_n(shared, __ATOMIC_ACQUIRE);
        do {
            uint64_t own = __atomic_load_n(&tl->tail, __ATOMIC_ACQUIRE);
            start = tail > now ? tail : now;
            start = own > start ? own : start;
            start += switch_from(dev);
            end = start + (ns > MAX_NS ? MAX_NS : ns);
        } while (!__atomic_compare_exchange_n(shared, &tail, end, 1, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
        __atomic_store_n(&g_shared_owner[dev], g_pid, __ATOMIC_RELEASE);
        atomic_max(&tl->tail, end);
    } else {
        tail = __atomic_load_n(&tl->tail, __ATOMIC_ACQUIRE);
        do {
            start = tail > now ? tail : now;
            end = start + (ns > MAX_NS ? MAX_NS : ns);
        } while (!__atomic_compare_exchange_n(&tl->tail, &tail, end, 1, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
    }
    atomic_max(stream_tail, end);
    if (g_klog != NULL) /* (stdio's own lock; written out at exit, or per 1 MiB) */
        fprintf(g_klog, "k %llu %llu\n", (unsigned long long)start, (unsigned long long)end);
    if (g_shared_util != NULL)
        util_note(&g_shared_util[(size_t)dev * FG_UTIL_BUCKETS], start, end);
    __atomic_add_fetch(&g_busy_ns, ns, __ATOMIC_RELAXED);
    __atomic_add_fetch(&g_kernels, kernels, __ATOMIC_RELAXED);
    return end;
}

/* ---------------------------------------------------------------------------------------- */
/* Busy time, for tests: FAKEGPU_BUSY_FILE                                                   */
/* ---------------------------------------------------------------------------------------- */

/* At exit of the process that called cuInit (not of a forked child): "busy_ns=N kernels=K\n",
 * written to a temporary file renamed over the path, so a reader never sees half of it. */
static void write_busy_file(void)
{
    char tmp[sizeof(g_busy_path) + 32];
    FILE *f;

    if (getpid() != g_busy_pid)
        return;
    snprintf(tmp, sizeof(tmp), "%s.%d.tmp", g_busy_path, (int)g_busy_pid);
    f = fopen(tmp, "we");
    if (f == NULL) {
        fprintf(stderr, "fakegpu: cuda: %s: %s\n", tmp, strerror(errno));
        return;
    }
    fprintf(f, "busy_ns=%llu kernels=%llu\n", __atomic_load_n(&g_busy_ns, __ATOMIC_RELAXED),
            __atomic_load_n(&g_kernels, __ATOMIC_RELAXED));
    if (fclose(f) != 0 || rename(tmp, g_busy_path) != 0) {
        fprintf(stderr, "fakegpu: cuda: %s: %s\n", g_busy_path, strerror(errno));
        unlink(tmp);
    }
}

static void busy_file_init(void)
{
    static int registered;
    const char *path = getenv(BUSY_FILE_ENV);

    if (path == NULL || path[0] == '\0' || strlen(path) >= sizeof(g_busy_path))
        return;
    snprintf(g_busy_path, sizeof(g_busy_path), "%s", path);
    g_busy_pid = getpid();
    if (!registered && atexit(write_busy_file) == 0)
        registered = 1;
}

/* FAKEGPU_SHARED_TIMELINE=<file>: the devices' tails in a file every process maps (made and
 * sized by the first; a file that cannot be used is reported and the per-process timelines
 * stay). A GPU without MPS time-slices the contexts of several processes; this model runs their
 * work one after another in submission order instead, so a process waits for all the work others
 * queued before its own: the longest wait the real GPU could impose. */
static void shared_init(void)
{
    const char *path = getenv(SHARED_ENV);
    size_t size = FG_SHARED_TL_SIZE;
    void *p;
    int fd;

    if (g_shared_tl != NULL || path == NULL || path[0] == '\0')
        return;
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd < 0 || ftruncate(fd, (off_t)size) < 0 ||
        (p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
        fprintf(stderr, "fakegpu: cuda: %s=%s: %s (per-process timelines)\n", SHARED_ENV, path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return;
    }
    close(fd);
    g_shared_tl = p;
    g_shared_util = (struct fg_util_bucket *)(g_shared_tl + MAX_DEV);
    g_shared_owner = (uint64_t *)(g_shared_util + (size_t)MAX_DEV * FG_UTIL_BUCKETS);
    g_pid = (uint64_t)getpid();
}

/* FAKEGPU_CTX_SWITCH_US=N (with FAKEGPU_SHARED_TIMELINE): work of a process queued right after
 * another process's starts N us later, as a real GPU switches between the contexts of processes
 * (0.14 ms at the median on the H200, bench/RESULTS.md). Unset or 0: no switch (as before). */
static void switch_init(void)
{
    const char *env = getenv(SWITCH_ENV);
    char *end;
    unsigned long long v;

    g_switch_ns = 0;
    if (env == NULL || env[0] == '\0')
        return;
    errno = 0;
    v = strtoull(env, &end, 10);
    if (errno == 0 && *end == '\0' && env[0] >= '0' && env[0] <= '9' && v <= MAX_SWITCH_US)
        g_switch_ns = v * 1000ULL;
    else
        fprintf(stderr, "fakegpu: cuda: %s=%s: not a number of microseconds up to %llu (no switch)\n", SWITCH_ENV,
                env, MAX_SWITCH_US);
}

/* FAKEGPU_KERNEL_LOG=<file>: each piece of work this process runs on a timeline (a kernel, a graph
 * launch) as "k START END" (CLOCK_MONOTONIC ns, the start after all the work queued before it), in
 * launch order, appended (bench/latency_timeline.py's format: tests/vgpu/test_turns.sh counts a
 * client's slips and late starts with it). Buffered: written at exit. */
static void klog_close(void)
{
    if (g_klog != NULL && getpid() == g_klog_pid)
        fclose(g_klog);
    g_klog = NULL;
}

static void klog_init(void)
{
    const char *path = getenv(KLOG_ENV);

    if (g_klog != NULL || path == NULL || path[0] == '\0')
        return;
    g_klog = fopen(path, "ae");
    if (g_klog == NULL) {
        fprintf(stderr, "fakegpu: cuda: %s=%s: %s\n", KLOG_ENV, path, strerror(errno));
        return;
    }
    setvbuf(g_klog, NULL, _IOFBF, 1 << 20);
    g_klog_pid = getpid();
    atexit(klog_close);
}

void time_init(void)
{
    const char *env = getenv(KERNEL_US_ENV);
    unsigned long long us = g_cfg.kernel_us;

    if (env != NULL && env[0] != '\0') {
        char *end;
        unsigned long long v;

        errno = 0;
        v = strtoull(env, &end, 10);
        if (errno == 0 && *end == '\0' && env[0] >= '0' && env[0] <= '9' && v <= FG_MAX_KERNEL_US)
            us = v;
        else
            fprintf(stderr, "fakegpu: cuda: %s=%s: not a number of microseconds (using %llu)\n", KERNEL_US_ENV,
                    env, us);
    }
    g_default_ns = us * 1000ULL;
    g_queue_ns = g_cfg.queue_ms * 1000000ULL;
    memset(g_tl, 0, sizeof(g_tl));
    shared_init();
    switch_init();
    busy_file_init();
    klog_init();
}
