/*
 * NVML's events, watched in a long-lived helper process: the device plugin's health. As for the
 * one-shot query (nvml_helper.c), NVML never runs in the caller: the helper is forked, confined
 * (gs_nvml_confine: chroot into the driver root, an unprivileged identity, no_new_privs), loads
 * the root's libnvidia-ml.so.1 and reports fixed-size records on a socket:
 *
 *   READY  once, after registering every GPU for XID critical errors (msg names GPUs without
 *          event support, which are watched for loss only)
 *   XID    an XID critical error: the GPU's NVML index and UUID, the XID, and the MIG instance
 *          (gi/ci, GS_NVML_INVALID_INSTANCE_ID for the whole GPU)
 *   LOST   a GPU answers GPU_IS_LOST (index; -1: NVML said a GPU is lost without naming it)
 *   ALIVE  a GPU answers, no repair pending: once for each GPU when first asked, and again
 *          whenever one named LOST or PENDING does (its handle by UUID, its memory: after a reset
 *          or a repair)
 *   PENDING a GPU answers but waits for a repair (msg: a remapped row or retired pages waiting for
 *          a reset, a failed row remapping), where NVML has them
 *   ERROR  NVML failed (init, an event wait): msg; after ERROR from init the helper exits
 *
 * Between events (every `period_ms`) it asks each GPU for its memory, which is how a GPU that fell
 * off the bus without an event shows, and how one that is back shows. The helper dies with its
 * parent (PR_SET_PDEATHSIG, set again after the identity change, which clears it) and when the
 * socket closes (looked at each period: a plugin killed with SIGKILL cannot stop it).
 */
#ifndef GS_DRIVER_NVML_EVENTS_H
#define GS_DRIVER_NVML_EVENTS_H

#include <stdint.h>
#include <sys/types.h>

#include <gpuslice/gpuslice.h>

enum gs_nvml_event_kind { GS_NVML_EV_READY = 1, GS_NVML_EV_XID, GS_NVML_EV_LOST, GS_NVML_EV_ERROR, GS_NVML_EV_ALIVE,
                              GS_NVML_EV_PENDING };

struct gs_nvml_event {
        uint32_t magic;
        int32_t kind;              /* enum gs_nvml_event_kind */
        int32_t index;             /* NVML index of the GPU, -1 unknown */
        uint32_t gi, ci;           /* MIG instance of an XID */
        uint64_t xid;
        char uuid[GS_STR_LONG];    /* the GPU's UUID ("" unknown) */
        char msg[200];
};

struct gs_nvml_watch {
        pid_t pid; /* the helper, our child */
        int fd;    /* its socket (non-blocking, close-on-exec) */
};

/* Start the helper (the context's root, identity, and libnvidia-ml.so.1 from its ld.so.cache). */
int gs_nvml_watch_start(struct gs_context *ctx, unsigned period_ms, struct gs_nvml_watch *w, struct gs_error *err);
/* One record if one is there: 1 read, 0 none yet, -1 the helper is gone or spoke nonsense. */
int gs_nvml_watch_read(struct gs_nvml_watch *w, struct gs_nvml_event *ev);
/* Kill and reap the helper, close the socket. */
void gs_nvml_watch_stop(struct gs_nvml_watch *w);

#endif
