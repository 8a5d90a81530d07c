/* CLOCK_MONOTONIC in nanoseconds (vDSO: no system call). Header-only and libc-only: the interposer
 * uses it. */
#ifndef GS_COMMON_CLOCK_H
#define GS_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t gs_mono_ns(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A span of `ns` nanoseconds as a timespec (for a sleep's or a futex wait's timeout). */
static inline struct timespec gs_ns_timespec(uint64_t ns)
{
        return (struct timespec){(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
}

#endif
