/*
 * A slice's GPU time as the observer accounts it. The region holds each live process's
 * cumulative busy time per device (measured by the compute limiter); processes come and go and a
 * process's time leaves the region with it. So the observer follows each process (slot index,
 * pid, start time) from one reading to the next and adds up its increase into a counter of its
 * own: monotonic while the observer runs, whatever processes exit. A process first seen after
 * the first reading counts from 0 (it started since); what the processes did before the first
 * reading, and what a process did between the last reading and its exit, is not counted.
 *
 * The counter becomes a ratio over windows of wall time: a window closes at the first reading
 * at least `window` after it opened, and the ratio is its GPU time over its length. Until the
 * first window of a region has closed there is no ratio (not 0: unknown).
 */
#ifndef GS_OBSERVE_BUSY_H
#define GS_OBSERVE_BUSY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "observe/region_read.h"

struct gs_busy_slot {
        uint32_t idx;
        int32_t pid;
        uint64_t start;
        uint64_t busy[GS_REGION_MAX_DEVICES];
};

struct gs_busy {
        bool primed;                                    /* a first reading was taken */
        uint64_t created_ns;                            /* the region it belongs to (a new one resets) */
        int32_t creator;
        struct gs_busy_slot *v;                         /* live slots of the last reading, by idx */
        size_t n, cap;
        uint64_t total_ns[GS_REGION_MAX_DEVICES];       /* GPU time counted since the first reading */
        uint64_t win_start;                             /* CLOCK_MONOTONIC ns the open window started */
        uint64_t win_total[GS_REGION_MAX_DEVICES];      /* total_ns then */
        bool ratio_valid;                               /* a window has closed */
        double ratio[GS_REGION_MAX_DEVICES];            /* its GPU time / its wall time */
        uint64_t ratio_window_ns;                       /* its length */
};

/* Take a reading of img at now_ns (CLOCK_MONOTONIC). -1 (out of memory: nothing changed). */
int gs_busy_update(struct gs_busy *b, const struct gs_region_image *img, uint64_t now_ns, uint64_t window_ns);
void gs_busy_release(struct gs_busy *b);

#endif
