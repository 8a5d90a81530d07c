/*
 * Per-GPU facts for the observer (memory used and total, utilization), from NVML through the
 * isolated helper (driver/nvml_helper.c: forked by a launcher started before the thread,
 * chrooted, unprivileged, killed at the --nvml-timeout deadline), asked by a background thread
 * every `interval`. Readers never wait for NVML (but `--once`, for its first answer): they copy
 * the last answer. A hung NVML costs the thread one deadline per attempt and the readers nothing;
 * its facts then age (fresh = false) until NVML answers again.
 */
#ifndef GS_OBSERVE_GPUS_H
#define GS_OBSERVE_GPUS_H

#include <stdbool.h>
#include <stdint.h>

#include <gpuslice/gpuslice.h>

struct gs_gpu_stats {
        bool valid;                 /* NVML has answered at least once: info is its last answer */
        bool fresh;                 /* the last attempt was answered */
        uint64_t answered_ns;       /* CLOCK_REALTIME of the last answer; 0 = never */
        uint64_t attempts, failures;
        char error[GS_ERRMSG_MAX];  /* the last attempt's error; "" when it was answered */
        struct gs_device_info info;
};

struct gs_gpu_poller;

struct gs_gpu_poller_opts {
        const struct gs_config *cfg;  /* as for gs_context_new (root, helper identity, deadline) */
        unsigned interval_ms;         /* 0: 5000 */
        /* NVML failing, or answering again: one line each time that changes (not per attempt);
         * called from the poller's thread. NULL: the debug log only. */
        void (*log)(void *arg, const char *line);
        void *log_arg;
};

/* Start asking (the first query begins at once). Call it while the process has no other thread:
 * it forks the launcher of the NVML helpers (driver/context.h) before its own thread starts. */
struct gs_gpu_poller *gs_gpu_poller_start(const struct gs_gpu_poller_opts *o, struct gs_error *err);
/* Copy of the latest state (never blocks on NVML). */
void gs_gpu_poller_get(struct gs_gpu_poller *p, struct gs_gpu_stats *out);
/* How soon a failed attempt is retried while someone waits for an answer; how long `--once` has a
 * failing NVML retried before it prints without it. */
#define GS_GPU_RETRY_MS 500u
#define GS_GPU_ONCE_WAIT_MS 3000u

/* Wait until NVML has answered (valid), for `--once`: for retry_ms, a failed attempt is retried
 * every GS_GPU_RETRY_MS (not every interval); an attempt in progress when they are over is waited
 * for (its NVML deadline ends it). True if NVML has answered; false: stats' error says why. */
bool gs_gpu_poller_wait_answer(struct gs_gpu_poller *p, unsigned retry_ms);
/* Stop the thread (waits for an attempt in progress: at most the NVML deadline) and free. */
void gs_gpu_poller_stop(struct gs_gpu_poller *p);

/* The host GPU index a device UUID belongs to ("GPU-..." itself, or "MIG-..." by its parent), or
 * -1 when the answer does not have it. */
int gs_gpu_stats_index(const struct gs_gpu_stats *s, const char *uuid);

#endif
