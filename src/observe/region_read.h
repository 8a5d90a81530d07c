/*
 * The observer's reader of usage regions (src/region/region.h is the ABI). A region file is
 * written by the processes of a container, so it is hostile input: the reader never maps it
 * (a truncating writer could SIGBUS a mapping), never blocks (O_NONBLOCK: a FIFO opens at once
 * and is refused as "not a regular file"), never follows a symbolic link (O_NOFOLLOW), reads
 * only a file of exactly the region's size, and then only the header and the slots below
 * slot_hwm (and, in version 3, the counters area), with pread. Versions 2 and 3 are read (a
 * version 2 region, of an older interposer, has no counters: img->counters is false). Every header
 * field is checked against the ABI (the file's size against its version's); a count is never trusted
 * (slot_hwm past the slot table, 0 or more than 16 devices, a share past 100 %, a UUID without
 * its terminator or with non-printable bytes: refused). Slot contents are written concurrently
 * and are taken as they are (sums saturate).
 */
#ifndef GS_OBSERVE_REGION_READ_H
#define GS_OBSERVE_REGION_READ_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gpuslice/gpuslice.h>

#include "region/region.h"

/* A validated copy: the header, and slots [0, nslots) (nslots = the file's slot_hwm); laid out
 * as the file is, so that one read fills the header and the first slots; the counters area when
 * the region has one (version 3; else all zero and `counters` false). */
struct gs_region_image {
        struct gs_region_header hdr;
        struct gs_region_slot slots[GS_REGION_MAX_PROCS];
        struct gs_region_counters ctr;
        unsigned nslots;
        bool counters;
};
static_assert(offsetof(struct gs_region_image, slots) == GS_REGION_HEADER_SIZE, "image layout = file layout");

/*
 * Read the region `path` (relative to dirfd, or absolute) into img.
 *   0   img holds a valid region
 *   1   a region not written yet (empty file, or the creator has not stored the magic): nothing
 *       to show; err says so
 *  -1   unreadable or invalid; err says why: GS_ENOTFOUND when the file is gone, GS_EFORMAT for
 *       a foreign, damaged or other-version file, GS_EINVAL for something not a regular file
 *       (a FIFO, a directory, a symbolic link, a device), GS_ESYS for an I/O error.
 */
int gs_region_read_at(int dirfd, const char *path, struct gs_region_image *img, struct gs_error *err);

/* The same checks on `len` bytes in memory (the fuzzer, tests): the same return values. */
int gs_region_image_parse(const void *data, size_t len, struct gs_region_image *img, struct gs_error *err);

/* Per-device sums over the live slots (pid > 0) of an image; saturating. */
struct gs_region_sums {
        unsigned live;                                /* live slots */
        uint64_t last_launch_ns;                      /* CLOCK_REALTIME, the latest of any slot; 0 none */
        uint64_t allocated[GS_REGION_MAX_DEVICES];    /* used[]: the interposer's charges */
        uint64_t overhead[GS_REGION_MAX_DEVICES];     /* extra[]: contexts, modules, rounding */
        uint64_t busy_ns[GS_REGION_MAX_DEVICES];      /* busy_ns[] of the live slots */
        unsigned procs[GS_REGION_MAX_DEVICES];        /* live slots with memory or GPU time there */
};
void gs_region_image_sum(const struct gs_region_image *img, struct gs_region_sums *s);

#endif
