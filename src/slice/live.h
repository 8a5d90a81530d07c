/*
 * A slice's live limits, the host's side (the interposer's is src/vgpu/live.c): the file
 * <slice dir>/live/limits, made by gs_slice_prepare (generation 1) and replaced whole by
 * gs_slice_set (a temporary file in the same directory renamed over it: a reader sees the old
 * file or the new one, never half of one). The directory live/ is mounted read-only in the
 * container at GS_SLICE_LIVE_DIR (a directory, so the host's renames show through; a file mount
 * would pin the old inode), and the slice file names the path (GPUSLICE_LIVE_LIMITS); nothing in
 * it is the container's to write. Format: the slice file's KEY=VALUE lines for the limits
 * (GPUSLICE_MEMORY_LIMIT[_i], GPUSLICE_COMPUTE_LIMIT[_i], GPUSLICE_COMPUTE_MODE,
 * GPUSLICE_PRIORITY), GPUSLICE_GENERATION=N, and GPUSLICE_COMPUTE_GATED=0|1 (whether the slice's
 * processes started with a compute limit: only then can one be changed live).
 * After a change, gs_slice_set bumps the generation in the slice's usage region (a hint that
 * makes the processes' next allocation re-read the file at once; they also look every 250 ms),
 * and records who made it (uid, pid, old -> new) in <slice dir>/changes, the debug log and syslog.
 */
#ifndef GS_SLICE_LIVE_H
#define GS_SLICE_LIVE_H

#include <stdbool.h>
#include <stdint.h>

#include <gpuslice/gpuslice.h>

#define GS_SLICE_LIVE_PATH GS_SLICE_LIVE_DIR "/limits"
#define GS_SLICE_LOCK_TIMEOUT_MS 5000 /* gs_slice_set waits this long for another change to end */

#define GS_SLICE_VALUE_MAX 32
struct gs_slice_limits {
        uint64_t generation;
        bool compute_gated;                                     /* launches are interposed */
        char memory[GS_SLICE_VALUE_MAX];                        /* "" = unlimited */
        char memory_dev[GS_SLICE_MAX_DEVICES][GS_SLICE_VALUE_MAX]; /* "" = as memory */
        char compute[GS_SLICE_VALUE_MAX];                       /* "" = unlimited */
        char compute_dev[GS_SLICE_MAX_DEVICES][GS_SLICE_VALUE_MAX];
        char compute_mode[GS_SLICE_VALUE_MAX];                  /* "" = cap */
        char priority[GS_SLICE_VALUE_MAX];                      /* "" = normal */
};

/* The limits of `s` (validated: sizes, percentages, mode, priority), generation 1. */
int gs_slice_limits_from_opts(const struct gs_slice_opts *s, struct gs_slice_limits *l, struct gs_error *err);

/* Write live/limits under the slice directory fd (live/ made if missing), whole or not at all. */
int gs_slice_write_live(int dirfd, const struct gs_slice_limits *l, struct gs_error *err);

/* Read <id>/live/limits under the regions directory fd: 1 read, 0 no live file (a slice made
 * before live limits), -1 unreadable or malformed. */
int gs_slice_read_live(int regfd, const char *id, struct gs_slice_limits *l);

/* The effective quota (bytes, 0 = unlimited) and share (percent, 0 = unlimited) of device i. */
uint64_t gs_slice_limits_memory(const struct gs_slice_limits *l, unsigned i);
unsigned gs_slice_limits_compute(const struct gs_slice_limits *l, unsigned i);

/* Change the live slice <id> under regions_dir: the limits set in `change` (memory, memory_dev,
 * compute, compute_dev, compute_mode, priority; NULL = unchanged; --memory replaces the per-device
 * values too, "unlimited"/"100" lift a limit). Refuses a slice whose container is gone, one without
 * a live file, and a compute limit for a slice that started without one. `before`/`after` (may be
 * NULL) get the limits on both sides. Logged with the caller's uid and pid. One change at a time:
 * a change waits up to GS_SLICE_LOCK_TIMEOUT_MS for another one to end (then GS_ETIMEOUT). */
int gs_slice_set(const char *regions_dir, const char *id, const struct gs_slice_opts *change,
                 struct gs_slice_limits *before, struct gs_slice_limits *after, struct gs_error *err);

/* One line "memory 4Gi -> 8Gi, compute 30 -> 50" of what differs (or "no change"). */
void gs_slice_limits_diff(const struct gs_slice_limits *a, const struct gs_slice_limits *b, char *out, size_t len);

#endif
