/*
 * Device health for ListAndWatch, from NVML's events (src/driver/nvml_events.c: a confined helper
 * process, restarted when it dies). As NVIDIA's device plugin does: an XID critical error marks
 * its GPU unhealthy (or only its MIG device, when the event names the instance), except the XIDs
 * that an application causes (13, 31, 43, 45, 68, 109: the GPU itself is fine); a GPU that NVML
 * reports lost (GPU_IS_LOST) is unhealthy, and so is every GPU when NVML cannot start or says a
 * GPU is lost without naming it. Unhealthy stays unhealthy until the plugin restarts (NVML says
 * nothing when a GPU is well again: after a reset or a repair, the operator restarts the plugin).
 * Why and since when a device is unhealthy is kept beside (the DRA plugin's device taints).
 */
#ifndef GS_KUBELET_HEALTH_H
#define GS_KUBELET_HEALTH_H

#include <stdbool.h>

#include <gpuslice/gpuslice.h>

#include "driver/nvml_events.h"
#include "kubelet/resources.h"

/* Why a device is unhealthy: the first cause, and a GPU named lost later on. */
struct gs_k8s_fault {
        long long since;        /* wall-clock seconds (time(2)) it turned unhealthy */
        unsigned long long xid; /* the XID that marked it; 0: none (lost, or NVML failing) */
        bool lost;              /* NVML names this GPU lost (GPU_IS_LOST) */
};

struct gs_k8s_health {
        bool gpu_bad[GS_MAX_GPUS];
        bool mig_bad[GS_MAX_GPUS][GS_MAX_MIGS];
        struct gs_k8s_fault gpu_why[GS_MAX_GPUS];
        struct gs_k8s_fault mig_why[GS_MAX_GPUS][GS_MAX_MIGS];
};

bool gs_k8s_device_healthy(const struct gs_k8s_health *h, const struct gs_k8s_device *d);

/* What changed, for the log: one line per call of `note`. */
typedef void (*gs_k8s_note_fn)(void *ud, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

struct gs_k8s_health_watch {
        struct gs_context *ctx;
        const struct gs_device_info *dev;
        unsigned period_ms;
        struct gs_nvml_watch w;
        bool running, ready;
        long long restart_at; /* gs_now_ms() time of the next start, while not running */
        unsigned starts;
        gs_k8s_note_fn note;
        void *ud;
};

/* Start watching (the helper's start-up failing is not an error: it is tried again later). */
void gs_k8s_health_start(struct gs_k8s_health_watch *hw, struct gs_context *ctx, const struct gs_device_info *dev,
                         unsigned period_ms, gs_k8s_note_fn note, void *ud);
/* The helper's socket to poll, or -1. */
int gs_k8s_health_fd(const struct gs_k8s_health_watch *hw);
/* Read what the helper said, restart it when due. True when a device's health changed. */
bool gs_k8s_health_poll(struct gs_k8s_health_watch *hw, struct gs_k8s_health *h, long long now);
/* Apply one event (exposed for tests). True when something changed. */
bool gs_k8s_health_apply(const struct gs_device_info *dev, struct gs_k8s_health *h, const struct gs_nvml_event *ev,
                         gs_k8s_note_fn note, void *ud);
void gs_k8s_health_stop(struct gs_k8s_health_watch *hw);

#endif
