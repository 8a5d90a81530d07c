/*
 * Device health for ListAndWatch, from NVML's events (src/driver/nvml_events.c: a confined helper
 * process, restarted when it dies). As NVIDIA's device plugin does: an XID critical error marks
 * its GPU unhealthy (or only its MIG device, when the event names the instance), except the XIDs
 * that an application causes (13, 31, 43, 45, 68, 109: the GPU itself is fine); a GPU that NVML
 * reports lost (GPU_IS_LOST) is unhealthy, and so is every GPU when NVML cannot start or says a
 * GPU is lost without naming it. Why and since when a device is unhealthy is kept beside (the DRA
 * plugin's device taints).
 *
 * Recovery (NVML says nothing when a GPU is well again, so it is watched for): the helper asks every
 * GPU, by its UUID, for its memory (and the repairs it waits for: remapped rows, retired pages)
 * each period and says when one NVML named lost, or one waiting for a reset, answers again with
 * none pending (ALIVE; PENDING holds an unhealthy GPU's recovery). An unhealthy device is healthy again once it has been quiet (no critical XID) and
 * answering for the recovery time (`recover_ms`; 0: never, unhealthy until the plugin restarts):
 * counted from its last critical XID, from its GPU answering again, and from the helper's READY
 * (only what was watched counts). A GPU NVML names lost is never healthy again while it does not
 * answer.
 */
#ifndef GS_KUBELET_HEALTH_H
#define GS_KUBELET_HEALTH_H

#include <stdbool.h>

#include <gpuslice/gpuslice.h>

#include "driver/nvml_events.h"
#include "kubelet/resources.h"
#include "kubelet/serve.h" /* gs_k8s_note_fn */

/* The recovery time by default: five minutes quiet and answering. */
#define GS_K8S_HEALTH_RECOVER_MS 300000u

/* Why a device is unhealthy: the first cause, and a GPU named lost later on. */
struct gs_k8s_fault {
        long long since;        /* wall-clock seconds (time(2)) it turned unhealthy */
        unsigned long long xid; /* the XID that marked it; 0: none (lost, or NVML failing) */
        bool lost;              /* NVML named this GPU lost (GPU_IS_LOST; kept until healthy again) */
        bool gone;              /* ... and it does not answer yet: no recovery */
        long long quiet_ms;     /* gs_now_ms() time it has been quiet and answering since */
};

struct gs_k8s_health {
        bool gpu_bad[GS_MAX_GPUS];
        bool mig_bad[GS_MAX_GPUS][GS_MAX_MIGS];
        struct gs_k8s_fault gpu_why[GS_MAX_GPUS];
        struct gs_k8s_fault mig_why[GS_MAX_GPUS][GS_MAX_MIGS];
        bool gpu_waits[GS_MAX_GPUS];              /* a repair pending (PENDING): its devices do not recover */
        long long gpu_healthy_since[GS_MAX_GPUS]; /* time(2) it turned healthy again; 0: never unhealthy */
        long long mig_healthy_since[GS_MAX_GPUS][GS_MAX_MIGS];
};

bool gs_k8s_device_healthy(const struct gs_k8s_health *h, const struct gs_k8s_device *d);


struct gs_k8s_health_watch {
        struct gs_context *ctx;
        const struct gs_device_info *dev;
        unsigned period_ms;
        unsigned recover_ms; /* quiet and answering this long: healthy again (0: never) */
        struct gs_nvml_watch w;
        bool running, ready;
        long long restart_at; /* gs_now_ms() time of the next start, while not running */
        unsigned starts;
        gs_k8s_note_fn note;
        void *ud;
};

/* Start watching (the helper's start-up failing is not an error: it is tried again later). */
void gs_k8s_health_start(struct gs_k8s_health_watch *hw, struct gs_context *ctx, const struct gs_device_info *dev,
                         unsigned period_ms, unsigned recover_ms, gs_k8s_note_fn note, void *ud);
/* The helper's socket to poll, or -1. */
int gs_k8s_health_fd(const struct gs_k8s_health_watch *hw);
/* Read what the helper said, restart it when due, heal the devices quiet for the recovery time
 * (while the helper is ready). True when a device's health changed. */
bool gs_k8s_health_poll(struct gs_k8s_health_watch *hw, struct gs_k8s_health *h, long long now);
/* Apply one event (exposed for tests). True when something changed. */
bool gs_k8s_health_apply(const struct gs_device_info *dev, struct gs_k8s_health *h, const struct gs_nvml_event *ev,
                         gs_k8s_note_fn note, void *ud);
/* Devices unhealthy, not gone, and quiet since `recover_ms` before `now` (gs_now_ms()) are healthy
 * again (exposed for tests). True when something changed. */
bool gs_k8s_health_recover(const struct gs_device_info *dev, struct gs_k8s_health *h, long long now,
                           unsigned recover_ms, gs_k8s_note_fn note, void *ud);
void gs_k8s_health_stop(struct gs_k8s_health_watch *hw);

#endif
