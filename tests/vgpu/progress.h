/*
 * A probe's progress, readable from outside while it runs (tests/vgpu/kill_storm.sh, test_resize.sh):
 * with PROBE_PROGRESS=FILE set, progress_note() rewrites FILE at most every 20 ms with one line
 *   ops=N wall_us=T cpu_wait_us=W others_us=O steal_us=S
 * N the operations so far (launches, allocations and frees), T microseconds since the probe
 * started, W the time its application thread waited for a CPU (progress_wait_us), O the CPU time
 * of its other threads (progress_others_us) and S the machine's steal time summed over its CPUs
 * (/proc/stat), all in microseconds, W and S -1 where the kernel keeps neither. Two readings give the rate of an interval and what kept the probe off its CPU meanwhile
 * (a hung or deadlocked probe: the same line twice). The line is written whole at offset 0
 * (fixed width), so a reader never sees half of one.
 */
#ifndef GS_TESTS_VGPU_PROGRESS_H
#define GS_TESTS_VGPU_PROGRESS_H

#include <fcntl.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#ifndef RUSAGE_THREAD /* Linux's, declared only with _GNU_SOURCE */
#define RUSAGE_THREAD 1
#endif

static double progress_now_us(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Microseconds the calling thread (the application's: the one that launches) has spent runnable
 * but waiting for a CPU (the scheduler's run_delay, /proc/thread-self/schedstat's second field; not
 * /proc/self/schedstat, which is the thread group leader's whoever asks), -1 where the kernel does
 * not keep it. Time the application could not run is not the GPU's or the limiter's: the tests
 * allow for it beside a latency or a fraction, less progress_others_us over the same time. */
static double progress_wait_us(void)
{
        FILE *f = fopen("/proc/thread-self/schedstat", "re");
        unsigned long long run = 0, wait = 0;
        int n = f != NULL ? fscanf(f, "%llu %llu", &run, &wait) : 0;
        if (f != NULL)
                fclose(f);
        return n == 2 ? (double)wait / 1e3 : -1;
}

/* Microseconds of CPU the process's other threads have used (the interposer's ticker, watcher and
 * reconciler, the simulated GPU's; threads that ended included): the whole process's CPU time less
 * the calling thread's (getrusage). Those threads are the product's (or the test's simulated GPU):
 * the time they kept the application off its CPU is the product's cost, never the machine's, so
 * the allowance for an interval is the application thread's wait LESS all of their CPU time over
 * it (on another CPU it kept nobody waiting: the allowance is then smaller than the truth, never
 * larger), clamped at zero. */
static double progress_others_us(void)
{
        struct rusage all, self;
        if (getrusage(RUSAGE_SELF, &all) != 0 || getrusage(RUSAGE_THREAD, &self) != 0)
                return 0;
        double a = (double)(all.ru_utime.tv_sec + all.ru_stime.tv_sec) * 1e6 +
                   (double)(all.ru_utime.tv_usec + all.ru_stime.tv_usec);
        double t = (double)(self.ru_utime.tv_sec + self.ru_stime.tv_sec) * 1e6 +
                   (double)(self.ru_utime.tv_usec + self.ru_stime.tv_usec);
        return a > t ? a - t : 0;
}

/* The machine's steal time so far, in microseconds summed over its CPUs (/proc/stat's cpu line,
 * eighth field, in clock ticks): time the hypervisor ran something else on our virtual CPUs. */
static double progress_steal_us(void)
{
        FILE *f = fopen("/proc/stat", "re");
        unsigned long long v[8] = {0};
        int n = f != NULL ? fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
                                   &v[5], &v[6], &v[7])
                          : 0;
        if (f != NULL)
                fclose(f);
        long hz = sysconf(_SC_CLK_TCK);
        return n == 8 && hz > 0 ? (double)v[7] * 1e6 / (double)hz : -1;
}

/* Note N operations so far (cheap between writes: a clock read). */
static void progress_note(unsigned long n)
{
        static int fd = -2;
        static double t0, next;
        if (fd == -2) {
                const char *p = getenv("PROBE_PROGRESS");
                fd = p != NULL && *p != '\0' ? open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
                t0 = progress_now_us();
        }
        double now = progress_now_us();
        if (fd < 0 || now < next)
                return;
        next = now + 20000;
        char line[192];
        int len = snprintf(line, sizeof(line), "ops=%-20lu wall_us=%-16.0f cpu_wait_us=%-16.0f others_us=%-16.0f steal_us=%-20.0f\n",
                           n, now - t0, progress_wait_us(), progress_others_us(), progress_steal_us());
        if (len > 0 && (size_t)len < sizeof(line) && pwrite(fd, line, (size_t)len, 0) < 0)
                fd = -1;
}

#endif
