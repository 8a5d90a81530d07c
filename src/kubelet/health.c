/* Device health from NVML's events (see health.h). */
#include "kubelet/health.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#define GS_NVML_NO_PROTOTYPES
#include "abi/nvml.h"
#include "common/log.h"
#include "common/proc.h"
#include "driver/xidlog.h"

bool gs_k8s_device_healthy(const struct gs_k8s_health *h, const struct gs_k8s_device *d)
{
        if (d->gpu >= GS_MAX_GPUS || h->gpu_bad[d->gpu])
                return false;
        return d->mig < 0 || d->mig >= GS_MAX_MIGS || !h->mig_bad[d->gpu][d->mig];
}

/* The GPU an event names: its index when the UUID agrees, else by UUID; -1 unknown. */
static int gpu_of(const struct gs_device_info *dev, const struct gs_nvml_event *ev)
{
        if (ev->index >= 0 && (unsigned)ev->index < dev->ngpus &&
            (ev->uuid[0] == '\0' || strcmp(dev->gpus[ev->index].uuid, ev->uuid) == 0))
                return ev->index;
        for (unsigned i = 0; ev->uuid[0] != '\0' && i < dev->ngpus; i++)
                if (strcmp(dev->gpus[i].uuid, ev->uuid) == 0)
                        return (int)i;
        return -1;
}

/* A device turns unhealthy: since when and why kept from the first time; a GPU named lost later
 * on is a change (its taint's effect). Every critical XID starts its quiet time again. True when
 * something changed. */
static bool mark(bool *bad, struct gs_k8s_fault *why, unsigned long long xid, bool lost)
{
        long long now = gs_now_ms();
        if (!*bad) {
                *bad = true;
                *why = (struct gs_k8s_fault){.since = (long long)time(NULL), .xid = xid, .lost = lost, .gone = lost,
                                             .quiet_ms = now};
                return true;
        }
        why->quiet_ms = now;
        why->gone |= lost;
        if (lost && !why->lost) {
                why->lost = true;
                return true;
        }
        return false;
}

static bool mark_all(const struct gs_device_info *dev, struct gs_k8s_health *h)
{
        bool changed = false;
        for (unsigned i = 0; i < dev->ngpus && i < GS_MAX_GPUS; i++)
                changed |= mark(&h->gpu_bad[i], &h->gpu_why[i], 0, false);
        return changed;
}

static bool apply_xid(const struct gs_device_info *dev, struct gs_k8s_health *h, const struct gs_nvml_event *ev,
                      gs_k8s_note_fn note, void *ud)
{
        int g = gpu_of(dev, ev);
        if (gs_xid_application(ev->xid)) { /* driver/xidlog.h; its process's share: dra/appxid.h */
                note(ud, "GPU %d: XID %llu (an application error): the GPU stays healthy", g,
                     (unsigned long long)ev->xid);
                return false;
        }
        if (g < 0) {
                note(ud, "XID %llu on an unknown GPU (%s): every GPU is marked unhealthy", (unsigned long long)ev->xid,
                     ev->uuid);
                return mark_all(dev, h);
        }
        const struct gs_gpu *gpu = &dev->gpus[g];
        if (ev->gi != GS_NVML_INVALID_INSTANCE_ID && ev->ci != GS_NVML_INVALID_INSTANCE_ID) {
                for (unsigned j = 0; j < gpu->nmigs && j < GS_MAX_MIGS; j++) {
                        if (gpu->migs[j].gi == ev->gi && gpu->migs[j].ci == ev->ci) {
                                note(ud, "MIG device %s: XID %llu: unhealthy", gpu->migs[j].uuid,
                                     (unsigned long long)ev->xid);
                                return mark(&h->mig_bad[g][j], &h->mig_why[g][j], ev->xid, false);
                        }
                }
        }
        note(ud, "GPU %d (%s): XID %llu: unhealthy", g, gpu->uuid, (unsigned long long)ev->xid);
        return mark(&h->gpu_bad[g], &h->gpu_why[g], ev->xid, false);
}

bool gs_k8s_health_apply(const struct gs_device_info *dev, struct gs_k8s_health *h, const struct gs_nvml_event *ev,
                         gs_k8s_note_fn note, void *ud)
{
        switch (ev->kind) {
        case GS_NVML_EV_READY:
                note(ud, "health: watching NVML events%s%s", ev->msg[0] ? "; " : "", ev->msg);
                return false;
        case GS_NVML_EV_XID:
                return apply_xid(dev, h, ev, note, ud);
        case GS_NVML_EV_LOST: {
                int g = gpu_of(dev, ev);
                if (g < 0) {
                        note(ud, "NVML: %s, no GPU named: every GPU is marked unhealthy", ev->msg);
                        return mark_all(dev, h);
                }
                note(ud, "GPU %d (%s) is lost: unhealthy", g, dev->gpus[g].uuid);
                return mark(&h->gpu_bad[g], &h->gpu_why[g], 0, true);
        }
        case GS_NVML_EV_PENDING: {
                int g = gpu_of(dev, ev);
                if (g < 0)
                        return false;
                note(ud, "GPU %d (%s): %s: its devices are not healthy again before it is done", g, dev->gpus[g].uuid,
                     ev->msg);
                h->gpu_waits[g] = true;
                return false;
        }
        case GS_NVML_EV_ALIVE: {
                int g = gpu_of(dev, ev);
                if (g < 0)
                        return false;
                bool waited = h->gpu_waits[g];
                h->gpu_waits[g] = false;
                if (h->gpu_bad[g] && (h->gpu_why[g].gone || waited)) {
                        h->gpu_why[g].gone = false;
                        h->gpu_why[g].quiet_ms = gs_now_ms();
                        note(ud, "GPU %d (%s) answers NVML again, no repair pending: healthy again once quiet for "
                             "the recovery time", g, dev->gpus[g].uuid);
                }
                return false;
        }
        case GS_NVML_EV_ERROR:
        default:
                note(ud, "health: %s", ev->msg);
                return false;
        }
}

/* One device: healthy again when quiet long enough (and answering, its GPU waiting for no repair). */
static bool heal(bool *bad, struct gs_k8s_fault *why, bool waits, long long *healthy_since, long long now,
                 unsigned recover_ms)
{
        if (!*bad || why->gone || waits || now - why->quiet_ms < (long long)recover_ms)
                return false;
        *bad = false;
        *why = (struct gs_k8s_fault){0};
        *healthy_since = (long long)time(NULL);
        return true;
}

/* What made it unhealthy, for the log. */
static const char *cause(const struct gs_k8s_fault *why, char *buf, size_t len)
{
        if (why->lost)
                snprintf(buf, len, "lost");
        else if (why->xid != 0)
                snprintf(buf, len, "XID %llu", why->xid);
        else
                snprintf(buf, len, "NVML failing");
        return buf;
}

bool gs_k8s_health_recover(const struct gs_device_info *dev, struct gs_k8s_health *h, long long now,
                           unsigned recover_ms, gs_k8s_note_fn note, void *ud)
{
        bool changed = false;
        char was[32];
        if (recover_ms == 0)
                return false;
        for (unsigned i = 0; i < dev->ngpus && i < GS_MAX_GPUS; i++) {
                const struct gs_gpu *gpu = &dev->gpus[i];
                cause(&h->gpu_why[i], was, sizeof(was));
                if (heal(&h->gpu_bad[i], &h->gpu_why[i], h->gpu_waits[i], &h->gpu_healthy_since[i], now, recover_ms)) {
                        note(ud, "GPU %u (%s): quiet and answering for %g s (unhealthy: %s): healthy again", i, gpu->uuid,
                             recover_ms / 1000.0, was);
                        changed = true;
                }
                for (unsigned j = 0; j < gpu->nmigs && j < GS_MAX_MIGS; j++) {
                        cause(&h->mig_why[i][j], was, sizeof(was));
                        if (heal(&h->mig_bad[i][j], &h->mig_why[i][j], h->gpu_waits[i], &h->mig_healthy_since[i][j], now,
                                 recover_ms)) {
                                note(ud, "MIG device %s: quiet for %g s (unhealthy: %s): healthy again", gpu->migs[j].uuid,
                                     recover_ms / 1000.0, was);
                                changed = true;
                        }
                }
        }
        return changed;
}

/* The helper (re)started: only the time it watches counts as quiet. */
static void quiet_from(const struct gs_device_info *dev, struct gs_k8s_health *h, long long now)
{
        for (unsigned i = 0; i < dev->ngpus && i < GS_MAX_GPUS; i++) {
                if (h->gpu_bad[i] && h->gpu_why[i].quiet_ms < now)
                        h->gpu_why[i].quiet_ms = now;
                for (unsigned j = 0; j < GS_MAX_MIGS; j++)
                        if (h->mig_bad[i][j] && h->mig_why[i][j].quiet_ms < now)
                                h->mig_why[i][j].quiet_ms = now;
        }
}

static void start(struct gs_k8s_health_watch *hw, long long now)
{
        struct gs_error err = {0};
        hw->ready = false;
        hw->starts++;
        if (gs_nvml_watch_start(hw->ctx, hw->period_ms, &hw->w, &err) < 0) {
                hw->note(hw->ud, "health: cannot start the NVML watcher: %s", err.msg);
                hw->restart_at = now + 5000;
                return;
        }
        hw->running = true;
}

void gs_k8s_health_start(struct gs_k8s_health_watch *hw, struct gs_context *ctx, const struct gs_device_info *dev,
                         unsigned period_ms, unsigned recover_ms, gs_k8s_note_fn note, void *ud)
{
        memset(hw, 0, sizeof(*hw));
        hw->ctx = ctx;
        hw->dev = dev;
        hw->period_ms = period_ms;
        hw->recover_ms = recover_ms;
        hw->note = note;
        hw->ud = ud;
        hw->w.fd = -1;
        hw->w.pid = -1;
        start(hw, gs_now_ms());
}

int gs_k8s_health_fd(const struct gs_k8s_health_watch *hw)
{
        return hw->running ? hw->w.fd : -1;
}

bool gs_k8s_health_poll(struct gs_k8s_health_watch *hw, struct gs_k8s_health *h, long long now)
{
        bool changed = false;
        if (!hw->running) {
                if (hw->ctx != NULL && hw->restart_at != 0 && now >= hw->restart_at)
                        start(hw, now);
                return false;
        }
        for (int i = 0; i < 64; i++) {
                struct gs_nvml_event ev;
                int r = gs_nvml_watch_read(&hw->w, &ev);
                if (r == 0)
                        break;
                if (r < 0) {
                        gs_nvml_watch_stop(&hw->w);
                        hw->running = false;
                        hw->ready = false;
                        /* back off: 1 s, then up to 30 s for a helper that keeps failing */
                        hw->restart_at = now + (hw->starts < 5 ? 1000 : 30000);
                        hw->note(hw->ud, "health: the NVML watcher ended; starting it again in %lld s",
                                 (hw->restart_at - now) / 1000);
                        break;
                }
                if (ev.kind == GS_NVML_EV_READY) {
                        hw->ready = true;
                        hw->starts = 0;
                        quiet_from(hw->dev, h, now);
                } else if (ev.kind == GS_NVML_EV_ERROR && !hw->ready && ev.index < 0) {
                        hw->note(hw->ud, "health: NVML does not start (%s): every GPU is marked unhealthy", ev.msg);
                        changed |= mark_all(hw->dev, h);
                        continue;
                }
                changed |= gs_k8s_health_apply(hw->dev, h, &ev, hw->note, hw->ud);
        }
        if (hw->running && hw->ready)
                changed |= gs_k8s_health_recover(hw->dev, h, now, hw->recover_ms, hw->note, hw->ud);
        return changed;
}

void gs_k8s_health_stop(struct gs_k8s_health_watch *hw)
{
        if (hw->running)
                gs_nvml_watch_stop(&hw->w);
        hw->running = false;
        hw->ctx = NULL;
}
