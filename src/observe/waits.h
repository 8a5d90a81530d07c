/*
 * A slice's kernel-launch waits as the observer shows them, from the counters area of a version 3
 * region (region/region.h): per device, how many launches waited in the gate for the GPU and how
 * long (a histogram with fixed edges), and how many launches there were.
 *
 * The region counts waited launches by bucket and all launches apart (two atomics, added at
 * different moments), so the launches that did not wait, the first bucket's share, are a
 * difference that a reading between the two adds can see too small. What is shown is made
 * consistent and monotonic: the first bucket never goes back from one reading to the next, every
 * bucket is cumulative (le), and the count is the last bucket's (+Inf) value, at least the
 * region's launch count. So Prometheus sees counters that only grow while the region lives.
 *
 * Windows like busy.h's: a window closes at the first reading at least `window` after it opened;
 * its launches, waited launches, sum of waits and the bucket of its 99th percentile are kept until
 * the next closes. A region without counters (version 2) has none of this (known false).
 */
#ifndef GS_OBSERVE_WAITS_H
#define GS_OBSERVE_WAITS_H

#include <stdbool.h>
#include <stdint.h>

#include "observe/region_read.h"

/* Cumulative since the region was made. */
struct gs_wait_hist {
        uint64_t cum[GS_REGION_WAIT_BUCKETS];   /* launches that waited at most edge i (the last: all) */
        uint64_t count;                         /* all launches (= cum[last]) */
        uint64_t sum_ns;                        /* their waits */
};

/* One closed window. */
struct gs_wait_window {
        uint64_t launches;                      /* launches in the window */
        uint64_t waited;                        /* of them, launches that waited */
        uint64_t sum_ns;                        /* their waits */
        int p99;                                /* -1: at least 99 % did not wait (p99 = 0); else the
                                                   bucket the 99th percentile is in (its upper edge
                                                   bounds it; the last bucket: over 1 s). Meaningless
                                                   when launches is 0 */
};

/* The raw counters of one device at one reading. */
struct gs_wait_raw {
        uint64_t bucket[GS_REGION_WAIT_BUCKETS];
        uint64_t launches, sum_ns;
};

struct gs_waits {
        bool known;                                      /* the region has counters */
        bool primed;
        uint64_t created_ns;                             /* the region it belongs to (a new one resets) */
        int32_t creator;
        struct gs_wait_hist hist[GS_REGION_MAX_DEVICES]; /* what is shown */
        uint64_t win_start;                              /* CLOCK_MONOTONIC ns the open window started */
        struct gs_wait_raw win_raw[GS_REGION_MAX_DEVICES];
        bool window_valid;                               /* a window has closed */
        uint64_t window_ns;                              /* its length */
        struct gs_wait_window win[GS_REGION_MAX_DEVICES];
};

/* Take a reading of img at now_ns (CLOCK_MONOTONIC). */
void gs_waits_update(struct gs_waits *w, const struct gs_region_image *img, uint64_t now_ns, uint64_t window_ns);

/* The bucket of the `percent` percentile (1..100) of a window's waits (the bucket of the
 * ceil(launches * percent / 100)-th smallest wait), -1 when that wait is 0 (that many launches did
 * not wait); `bucket` the window's waited launches by bucket (not cumulative). */
int gs_waits_quantile_bucket(uint64_t launches, const uint64_t bucket[GS_REGION_WAIT_BUCKETS], unsigned percent);

#endif
