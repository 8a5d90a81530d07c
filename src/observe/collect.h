/*
 * The observer's collector, shared by `gpuslice metrics` and `gpuslice top`: every slice on this
 * host, read from the usage regions the slicing layer writes, without entering any container.
 *
 * Where slices come from:
 *   - the regions directory (the hook's and configure's, default /run/gpuslice/slices): one
 *     directory per container, <id>/usage its region, <id>/owner its init process, <id>/labels
 *     its pod's names (see slice/slice.h). A slice is shown while its owner lives (a pidfd, or
 *     the pid's start time where pidfds are missing); a directory whose owner is gone is left out
 *     at once and counted in `gone`, and gs_collector_sweep() removes such directories.
 *   - extra region files (`gpuslice exec --region PATH`), or glob(7) patterns of them
 *     ("/dev/shm/gpuslice-exec-*"): shown while the file exists; never removed by the observer.
 * Every region is read defensively (observe/region_read.h). One that cannot be shown is skipped
 * and reported through the log callback once per file and reason (again only when the reason
 * changes, or "valid again" when it heals), never per scan. A slice directory's region that is
 * not written yet (its container has not used the GPU) is only counted in `pending`.
 *
 * Compute used is the slice's measured GPU time over the last closed window (observe/busy.h),
 * `window_ms` long at least (default 1 s): a scan advances the windows, so a caller that wants
 * fresh ratios scans at least once per window (`metrics` scans every second besides its scrapes;
 * `top` at each refresh). A region seen for the first time has no ratio until its first window
 * has closed (compute_used_valid false): one scan, a wait of one window, another scan gives one.
 * Only slices whose compute limiter runs measure GPU time (a compute limit set, mode cap or
 * share, and a first kernel launched); others have compute_measured false. Launch waits
 * (observe/waits.h) and the priority come from a version 3 region's counters area; a version 2
 * region (an older interposer) is shown without them (waits_known false, priority unset).
 *
 * Not thread-safe: one caller at a time per collector (the server serializes scans with a lock).
 */
#ifndef GS_OBSERVE_COLLECT_H
#define GS_OBSERVE_COLLECT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <gpuslice/gpuslice.h>

#include "observe/waits.h"
#include "region/region.h"
#include "slice/slice.h"

#define GS_OBS_ID_MAX 256

struct gs_collector_opts {
        const char *regions_dir;            /* NULL: GS_SLICE_REGIONS_DIR; "": no regions directory */
        const char *const *regions;         /* extra region files or glob patterns (absolute) */
        size_t nregions;
        unsigned window_ms;                 /* compute window, 0: 1000 */
        /* Where skipped regions and other events are reported (one line, no newline); NULL: only
         * the debug log. Called from inside gs_collector_scan. */
        void (*log)(void *arg, const char *line);
        void *log_arg;
};

struct gs_obs_device {
        unsigned index;                     /* the slice's own device index (HAMi's vdevice) */
        char uuid[GS_REGION_UUID_LEN];      /* "GPU-..." or "MIG-..."; "" when the interposer had none */
        uint64_t memory_used;               /* allocated + overhead: what the quota counts */
        uint64_t memory_allocated;          /* the application's allocations (the interposer's charges) */
        uint64_t memory_overhead;           /* measured by the driver beyond them: contexts, modules,
                                               page rounding */
        uint64_t memory_limit;              /* the quota, bytes; 0 = unlimited */
        double compute_limit;               /* the share, 0..1; 0 = none (or not known before the
                                               slice's first kernel launch) */
        bool compute_measured;              /* the limiter measures GPU time here */
        bool compute_used_valid;            /* ... and a window has closed */
        double compute_used;                /* GPU time / wall time over that window */
        uint64_t busy_ns_total;             /* GPU time counted since the collector first saw it */
        unsigned processes;                 /* live processes with memory or GPU time on it */
        uint32_t compute_via;               /* how the share is enforced: GS_REGION_VIA_*;
                                               GS_REGION_UNSET when not reported (or version 2) */
        bool waits_known;                   /* the region counts launch waits (version 3) and
                                               this device's are counted: it has a compute limit
                                               (the gate), or launches were counted */
        struct gs_wait_hist waits;          /* kernel launches and their waits for the GPU, since
                                               the region was made (observe/waits.h) */
        bool waits_window_valid;            /* ... and a window has closed: */
        struct gs_wait_window waits_window; /* the launches of the last window, their waits, p99 */
};

struct gs_obs_proc {
        unsigned slot;                      /* slot index in the region */
        int pid;                            /* in the slice's pid namespace (the container's) */
        int host_pid;                       /* the region's host_pid field; 0 = unknown (see
                                               gs_obs_host_pids) */
        uint64_t start_time;                /* /proc/<pid>/stat field 22; 0 = unknown */
};

struct gs_obs_slice {
        char id[GS_OBS_ID_MAX];             /* the container id (its directory's name), or the path
                                               of an extra region */
        char *region;                       /* the region file's path */
        bool in_regions_dir;                /* a hook/configure slice (else an extra region) */
        pid_t owner_pid;                    /* the container's init on the host; 0 for extras */
        struct gs_slice_labels labels;      /* the pod's names; "" when unknown */
        uint32_t compute_mode;              /* 0 cap, 1 share, 2 off */
        uint32_t priority;                  /* GS_REGION_PRIO_* (0 high, 1 normal, 2 low);
                                               GS_REGION_UNSET when not reported (or version 2) */
        uint64_t created_ns;                /* CLOCK_REALTIME when the region was made */
        uint64_t last_kernel_ns;            /* CLOCK_REALTIME of a recent kernel launch; 0 = none
                                               seen (only compute-limited processes record it) */
        uint64_t compute_window_ns;         /* the window compute_used covers; 0 = none yet */
        uint64_t waits_window_ns;           /* the window waits_window covers; 0 = none yet */
        uint64_t refused;                   /* charges refused at the memory quota since the region
                                               was made (the region's `refused`: as the container
                                               wrote it) */
        unsigned nprocs;                    /* live processes (slots) */
        struct gs_obs_proc *procs;
        unsigned ndevices;
        struct gs_obs_device dev[GS_REGION_MAX_DEVICES];
};

struct gs_observation {
        uint64_t time_ns;                   /* CLOCK_REALTIME at the end of the scan */
        uint64_t scan_ns;                   /* how long the scan took */
        size_t nslices;
        struct gs_obs_slice *slices;        /* sorted by id */
        unsigned skipped;                   /* regions left out as unreadable or invalid */
        unsigned pending;                   /* regions not written yet (no GPU use so far) */
        unsigned gone;                      /* slice directories whose container is gone */
};

struct gs_collector;

struct gs_collector *gs_collector_new(const struct gs_collector_opts *o, struct gs_error *err);
void gs_collector_free(struct gs_collector *c);

/* Read every slice now. Fills *out (release it with gs_observation_release); -1 only when out of
 * memory. Problems with single regions are reported through the log callback, not here. */
int gs_collector_scan(struct gs_collector *c, struct gs_observation *out, struct gs_error *err);
/* The same with the time given (CLOCK_MONOTONIC ns): tests, replays. */
int gs_collector_scan_at(struct gs_collector *c, uint64_t mono_ns, struct gs_observation *out, struct gs_error *err);
void gs_observation_release(struct gs_observation *o);

/* Remove the slice directories whose container is gone (slice/slice.h's sweep); returns how
 * many. Does nothing (0) when this process cannot judge liveness: outside the host's pid
 * namespace, owners' pids mean nothing here, and nothing is shown as gone or removed. */
unsigned gs_collector_sweep(struct gs_collector *c);

/* Host pids of a slice's processes (for `top --pids`), resolved through /proc: out[i] for
 * s->procs[i], 0 where it cannot be found. A slot's pid is in the container's pid namespace; the
 * host process is the one in the owner's pid namespace (any, for an extra region) whose
 * innermost NSpid is that pid and whose start time is the slot's. Reading other users'
 * /proc/<pid>/ns needs CAP_SYS_PTRACE. Returns how many were found. */
unsigned gs_obs_host_pids(const struct gs_obs_slice *s, pid_t *out);
/* The reverse, for a host process the kernel named (an application XID: dra/appxid.h): the
 * slices of the regions directory whose processes include host pid p, by the same rule (p is in
 * the slice owner's pid namespace, a slot has p's innermost NSpid and its start time). A region is
 * the container's to write, so it can name only processes of its own pid namespace. Their indexes
 * into obs->slices in out[0..max); returns how many matched (more than max: counted). */
size_t gs_obs_slices_of_host_pid(const struct gs_observation *obs, pid_t p, size_t *out, size_t max);

#endif
