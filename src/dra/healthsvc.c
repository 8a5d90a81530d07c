/* The DRA health service (KEP-4680: v1alpha1.DRAResourceHealth/NodeWatchResources, proto/dra_health.proto):
 * a server stream that gets every device of the ResourceSlice with its health on connect, and the
 * whole list again on every change (the kubelet reconciles a full list). At most GS_DRA_MAX_WATCHERS
 * streams; a watcher whose stream holds too much unsent (a kubelet that does not read) is ended
 * with RESOURCE_EXHAUSTED, so the loop never waits on it (gs_h2c_send never blocks). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cleanup.h"
#include "dra/plugin_int.h"
#include "dra/slices.h"
#include "dra_health.pb-c.h"
#include "kubelet/arena.h"

/* The slice's devices (dra/slices.c gs_dra_slice_build: a GPU, or each of its MIG devices) with
 * their health: packed into a malloc'd buffer, its length in *len; NULL when out of memory. */
static uint8_t *health_list(const struct gs_dra *p, size_t *len)
{
        struct gs_k8s_arena a = {0};
        V1alpha1__NodeWatchResourcesResponse r = V1ALPHA1__NODE_WATCH_RESOURCES_RESPONSE__INIT;
        size_t max = 0;
        for (unsigned i = 0; i < p->dev->ngpus; i++)
                max += p->dev->gpus[i].mig_enabled ? p->dev->gpus[i].nmigs : 1;
        r.devices = gs_k8s_arena_alloc(&a, (max + 1) * sizeof(void *));
        for (unsigned i = 0; r.devices != NULL && i < p->dev->ngpus; i++) {
                const struct gs_gpu *g = &p->dev->gpus[i];
                unsigned n = g->mig_enabled ? g->nmigs : 1;
                for (unsigned j = 0; j < n; j++) {
                        int mig = g->mig_enabled ? (int)g->migs[j].index : -1;
                        const struct gs_k8s_fault *bad = p->health.gpu_bad[i] ? &p->health.gpu_why[i] : NULL;
                        if (bad == NULL && mig >= 0 && j < GS_MAX_MIGS && p->health.mig_bad[i][j])
                                bad = &p->health.mig_why[i][j];
                        char name[64];
                        gs_dra_device_name(g->index, mig, name, sizeof(name));
                        V1alpha1__DeviceHealth *d = gs_k8s_arena_alloc(&a, sizeof(*d));
                        V1alpha1__DeviceIdentifier *id = gs_k8s_arena_alloc(&a, sizeof(*id));
                        if (d == NULL || id == NULL)
                                break;
                        v1alpha1__device_health__init(d);
                        v1alpha1__device_identifier__init(id);
                        id->pool_name = gs_k8s_arena_strdup(&a, p->node);
                        id->device_name = gs_k8s_arena_strdup(&a, name);
                        d->device = id;
                        d->health = bad != NULL ? V1ALPHA1__HEALTH_STATUS__UNHEALTHY : V1ALPHA1__HEALTH_STATUS__HEALTHY;
                        long long well = mig >= 0 && j < GS_MAX_MIGS && p->health.mig_healthy_since[i][j] > p->health.gpu_healthy_since[i]
                                                 ? p->health.mig_healthy_since[i][j] : p->health.gpu_healthy_since[i];
                        d->last_updated_time = bad != NULL ? bad->since : well > p->health_since ? well : p->health_since;
                        r.devices[r.n_devices++] = d;
                }
        }
        uint8_t *buf = NULL;
        if (r.devices != NULL && !gs_k8s_arena_failed(&a)) {
                *len = protobuf_c_message_get_packed_size(&r.base);
                if ((buf = malloc(*len ? *len : 1)) != NULL)
                        protobuf_c_message_pack(&r.base, buf);
        }
        gs_k8s_arena_free(&a);
        return buf;
}

static void drop(struct gs_dra *p, unsigned k)
{
        p->watch[k] = p->watch[--p->nwatch];
}

void gs_dra_health_watch(struct gs_dra *p, struct gs_h2c_conn *c, int32_t stream)
{
        size_t len = 0;
        gs_autofree uint8_t *buf = NULL;
        if (p->nwatch >= GS_DRA_MAX_WATCHERS) {
                gs_h2c_fail(c, stream, GS_GRPC_RESOURCE_EXHAUSTED, "too many health watchers");
                return;
        }
        if ((buf = health_list(p, &len)) == NULL || gs_h2c_send(c, stream, buf, len) < 0) {
                gs_h2c_fail(c, stream, GS_GRPC_RESOURCE_EXHAUSTED, "out of memory");
                return;
        }
        p->watch[p->nwatch++] = (struct gs_dra_watcher){.c = c, .stream = stream};
        gs_dra_note(p, "NodeWatchResources: a health watcher (%u now)", p->nwatch);
}

void gs_dra_health_unwatch(struct gs_dra *p, struct gs_h2c_conn *c, int32_t stream)
{
        for (unsigned k = 0; k < p->nwatch; k++)
                if (p->watch[k].c == c && p->watch[k].stream == stream) {
                        drop(p, k);
                        return;
                }
}

void gs_dra_health_changed(struct gs_dra *p)
{
        size_t len = 0;
        if (p->nwatch == 0)
                return;
        gs_autofree uint8_t *buf = health_list(p, &len);
        for (unsigned k = 0; k < p->nwatch;) {
                struct gs_dra_watcher w = p->watch[k];
                if (buf != NULL && gs_h2c_send(w.c, w.stream, buf, len) == 0) {
                        k++;
                        continue;
                }
                drop(p, k); /* before gs_h2c_fail: its `closed` looks for it */
                gs_h2c_fail(w.c, w.stream, GS_GRPC_RESOURCE_EXHAUSTED, "the health watcher does not read");
        }
}

void gs_dra_health_end(struct gs_dra *p)
{
        while (p->nwatch > 0) {
                struct gs_dra_watcher w = p->watch[--p->nwatch];
                gs_h2c_finish(w.c, w.stream, GS_GRPC_UNAVAILABLE, "the plugin stops");
        }
}
