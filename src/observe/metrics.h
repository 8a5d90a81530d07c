/*
 * The metric set of `gpuslice metrics` (docs/metrics.md lists it): per slice and
 * device, per GPU (NVML), and about the exporter itself; our names in base units and 0-1 ratios,
 * and HAMi's vGPU monitor names beside them (its units: utilization in percent) so that HAMi's
 * dashboards keep working.
 */
#ifndef GS_OBSERVE_METRICS_H
#define GS_OBSERVE_METRICS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "observe/collect.h"
#include "observe/gpus.h"
#include "observe/prom.h"

struct gs_metrics_opts {
        bool hami;          /* HAMi's names too */
        const char *node;   /* HAMi's `node` label of per-GPU metrics (the host name) */
        const char *mps_root; /* the GPUs' MPS state (gpuslice mps supervise) under it; NULL: none */
};

/* The gpuslice_mps_* families: every GPU directory under the MPS root (mps_metrics.c). */
void gs_metrics_render_mps(const char *mps_root, struct gs_prom *p);

/* Render one exposition of obs and gpus (NULL: no NVML facts) into p. */
void gs_metrics_render(const struct gs_observation *obs, const struct gs_gpu_stats *gpus,
                       const struct gs_metrics_opts *o, struct gs_prom *p);

/* One scrape, the text /metrics serves: scan c (holding `lock` during the scan when not NULL),
 * copy the poller's facts (gpus NULL: none), render. NULL with err when out of memory. */
char *gs_metrics_scrape(struct gs_collector *c, pthread_mutex_t *lock, struct gs_gpu_poller *gpus,
                        const struct gs_metrics_opts *o, size_t *len, struct gs_error *err);

#endif
