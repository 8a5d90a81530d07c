/* `gpuslice device-plugin`: the loop and the DevicePlugin service (see plugin.h). */
#include "k8s/plugin.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api.pb-c.h"
#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "common/proc.h"
#include "k8s/allocate.h"
#include "k8s/plugin_int.h"
#include "k8s/prefer.h"
#include "kubelet/arena.h"
#include "kubelet/cdispec.h"
#include "kubelet/serve.h"
#include "kubelet/topology.h"

#define MAX_CONTAINERS 64    /* container requests in one call */
#define MAX_IDS 4096         /* device IDs in one container request */

void gs_k8s_note(struct gs_k8s_plugin *p, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        gs_k8s_vnote(p->o->note, p->o->ud, fmt, ap);
        va_end(ap);
}

void gs_k8s_note_cb(void *ud, const char *fmt, ...)
{
        struct gs_k8s_plugin *p = ud;
        va_list ap;
        va_start(ap, fmt);
        gs_k8s_vnote(p->o->note, p->o->ud, fmt, ap);
        va_end(ap);
}

struct gs_k8s_conn *gs_k8s_conn_add(struct gs_k8s_plugin *p, struct gs_h2c_conn *h, enum gs_k8s_conn_kind kind,
                                    struct gs_k8s_endpoint *ep)
{
        if (p->nconns == GS_K8S_MAX_CONNS)
                return NULL;
        struct gs_k8s_conn *c = &p->conns[p->nconns++];
        *c = (struct gs_k8s_conn){.h = h, .kind = kind, .ep = ep, .opened = gs_now_ms()};
        return c;
}

/* ------------------------------------------------------------------------------------------ */
/* The DevicePlugin service                                                                    */

static void reply_packed(struct gs_h2c_conn *c, int32_t stream, const ProtobufCMessage *m)
{
        size_t len = protobuf_c_message_get_packed_size(m);
        gs_autofree uint8_t *buf = malloc(len ? len : 1);
        if (buf == NULL || len > GS_H2C_MAX_MESSAGE) {
                gs_h2c_fail(c, stream, GS_GRPC_RESOURCE_EXHAUSTED, "the answer is too large");
                return;
        }
        protobuf_c_message_pack(m, buf);
        gs_h2c_reply(c, stream, buf, len);
}

static int grpc_code(const struct gs_error *e)
{
        switch (e->code) {
        case GS_ENOTFOUND: return GS_GRPC_NOT_FOUND;
        case GS_EINVAL: return GS_GRPC_INVALID_ARGUMENT;
        case GS_ENOMEM: return GS_GRPC_RESOURCE_EXHAUSTED;
        default: return GS_GRPC_INTERNAL;
        }
}

/* The endpoint's devices, health and NUMA nodes; NULL when out of memory. */
static V1beta1__ListAndWatchResponse *device_list(struct gs_k8s_endpoint *ep, struct gs_k8s_arena *a)
{
        const struct gs_k8s_resource *r = ep->res;
        const struct gs_k8s_plan *plan = &ep->p->plan;
        V1beta1__ListAndWatchResponse *m = gs_k8s_arena_alloc(a, sizeof(*m));
        V1beta1__Device **devs = gs_k8s_arena_alloc(a, (r->ndevs + 1) * sizeof(*devs));
        if (m == NULL || devs == NULL)
                return NULL;
        v1beta1__list_and_watch_response__init(m);
        for (size_t i = 0; i < r->ndevs; i++) {
                const struct gs_k8s_device *d = &r->devs[i];
                V1beta1__Device *dv = gs_k8s_arena_alloc(a, sizeof(*dv));
                if (dv == NULL)
                        return NULL;
                v1beta1__device__init(dv);
                dv->id = (char *)d->id;
                dv->health = (char *)(gs_k8s_device_healthy(&ep->p->health, d) ? "Healthy" : "Unhealthy");
                int numa = d->gpu < GS_MAX_GPUS ? plan->topo.numa[d->gpu] : -1;
                if (numa >= 0) {
                        V1beta1__TopologyInfo *t = gs_k8s_arena_alloc(a, sizeof(*t));
                        V1beta1__NUMANode *node = gs_k8s_arena_alloc(a, sizeof(*node));
                        V1beta1__NUMANode **nodes = gs_k8s_arena_alloc(a, sizeof(*nodes));
                        if (t == NULL || node == NULL || nodes == NULL)
                                return NULL;
                        v1beta1__topology_info__init(t);
                        v1beta1__numanode__init(node);
                        node->id = numa;
                        nodes[0] = node;
                        t->n_nodes = 1;
                        t->nodes = nodes;
                        dv->topology = t;
                }
                devs[i] = dv;
        }
        m->n_devices = r->ndevs;
        m->devices = devs;
        return m;
}

static int send_list(struct gs_k8s_endpoint *ep, struct gs_h2c_conn *c, int32_t stream)
{
        struct gs_k8s_arena a = {0};
        V1beta1__ListAndWatchResponse *m = device_list(ep, &a);
        int rv = -1;
        size_t len = m != NULL ? v1beta1__list_and_watch_response__get_packed_size(m) : 0;
        uint8_t *buf = m != NULL && len <= GS_H2C_MAX_MESSAGE ? malloc(len ? len : 1) : NULL;
        if (buf != NULL) {
                v1beta1__list_and_watch_response__pack(m, buf);
                rv = gs_h2c_send(c, stream, buf, len);
        }
        free(buf);
        gs_k8s_arena_free(&a);
        return rv;
}

static void list_and_watch(struct gs_k8s_endpoint *ep, struct gs_h2c_conn *c, int32_t stream)
{
        if (ep->nwatchers == GS_K8S_MAX_WATCHERS) {
                gs_h2c_fail(c, stream, GS_GRPC_RESOURCE_EXHAUSTED, "too many ListAndWatch streams");
                return;
        }
        if (send_list(ep, c, stream) < 0) {
                gs_h2c_fail(c, stream, GS_GRPC_INTERNAL, "cannot send the device list");
                return;
        }
        ep->watchers[ep->nwatchers++] = (struct gs_k8s_watcher){c, stream};
        gs_k8s_note(ep->p, "ListAndWatch for %s: %zu devices sent", ep->res->name, ep->res->ndevs);
}

void gs_k8s_broadcast(struct gs_k8s_plugin *p)
{
        for (size_t i = 0; i < p->plan.nres; i++) {
                struct gs_k8s_endpoint *ep = &p->ep[i];
                for (unsigned w = 0; w < ep->nwatchers;) {
                        struct gs_k8s_watcher *x = &ep->watchers[w];
                        if (send_list(ep, x->c, x->stream) == 0) {
                                w++;
                                continue;
                        }
                        gs_h2c_fail(x->c, x->stream, GS_GRPC_UNAVAILABLE, "the kubelet does not keep up");
                        ep->watchers[w] = ep->watchers[--ep->nwatchers];
                }
                if (ep->nwatchers > 0)
                        gs_k8s_note(p, "ListAndWatch for %s: device health changed, sent to %u stream(s)", ep->res->name,
                                    ep->nwatchers);
        }
}

/* Device IDs of one request as indexes into r->devs; -1 (a status set) for an unknown one. */
static int indexes(const struct gs_k8s_resource *r, char **ids, size_t n, size_t *out, char *why, size_t whylen)
{
        for (size_t i = 0; i < n; i++) {
                const struct gs_k8s_device *d = gs_k8s_find(r, ids[i]);
                if (d == NULL) {
                        snprintf(why, whylen, "unknown device ID '%.80s' for %s", ids[i], r->name);
                        return -1;
                }
                out[i] = (size_t)(d - r->devs);
        }
        return 0;
}

static void preferred(struct gs_k8s_endpoint *ep, struct gs_h2c_conn *c, int32_t stream, const uint8_t *msg, size_t len)
{
        V1beta1__PreferredAllocationRequest *rq = v1beta1__preferred_allocation_request__unpack(NULL, len, msg);
        struct gs_k8s_arena a = {0};
        char why[256] = "";
        int status = GS_GRPC_INVALID_ARGUMENT;
        if (rq == NULL || rq->n_container_requests > MAX_CONTAINERS) {
                snprintf(why, sizeof(why), rq == NULL ? "malformed request" : "too many containers");
                goto fail;
        }
        V1beta1__PreferredAllocationResponse out = V1BETA1__PREFERRED_ALLOCATION_RESPONSE__INIT;
        out.n_container_responses = rq->n_container_requests;
        out.container_responses = gs_k8s_arena_alloc(&a, (rq->n_container_requests + 1) * sizeof(void *));
        for (size_t i = 0; out.container_responses != NULL && i < rq->n_container_requests; i++) {
                V1beta1__ContainerPreferredAllocationRequest *q = rq->container_requests[i];
                size_t size = q->allocation_size > 0 ? (size_t)q->allocation_size : 0;
                if (q->n_available_deviceids > MAX_IDS || q->n_must_include_deviceids > MAX_IDS || size > MAX_IDS) {
                        snprintf(why, sizeof(why), "too many devices");
                        goto fail;
                }
                size_t *av = gs_k8s_arena_alloc(&a, (q->n_available_deviceids + 1) * sizeof(size_t));
                size_t *must = gs_k8s_arena_alloc(&a, (q->n_must_include_deviceids + 1) * sizeof(size_t));
                size_t *pick = gs_k8s_arena_alloc(&a, (size + 1) * sizeof(size_t));
                char **ids = gs_k8s_arena_alloc(&a, (size + 1) * sizeof(char *));
                V1beta1__ContainerPreferredAllocationResponse *o = gs_k8s_arena_alloc(&a, sizeof(*o));
                struct gs_error err = {0};
                if (av == NULL || must == NULL || pick == NULL || ids == NULL || o == NULL)
                        goto oom;
                if (indexes(ep->res, q->available_deviceids, q->n_available_deviceids, av, why, sizeof(why)) < 0 ||
                    indexes(ep->res, q->must_include_deviceids, q->n_must_include_deviceids, must, why, sizeof(why)) < 0)
                        goto fail;
                if (gs_k8s_prefer(&ep->p->plan, ep->res, av, q->n_available_deviceids, must, q->n_must_include_deviceids,
                                  size, pick, &err) < 0) {
                        snprintf(why, sizeof(why), "%s", err.msg);
                        goto fail;
                }
                v1beta1__container_preferred_allocation_response__init(o);
                for (size_t k = 0; k < size; k++)
                        ids[k] = ep->res->devs[pick[k]].id;
                o->n_deviceids = size;
                o->deviceids = ids;
                out.container_responses[i] = o;
        }
        if (out.container_responses == NULL || gs_k8s_arena_failed(&a))
                goto oom;
        reply_packed(c, stream, &out.base);
        goto done;
oom:
        status = GS_GRPC_RESOURCE_EXHAUSTED;
        snprintf(why, sizeof(why), "out of memory");
fail:
        gs_k8s_note(ep->p, "GetPreferredAllocation for %s refused: %s", ep->res->name, why);
        gs_h2c_fail(c, stream, status, why);
done:
        if (rq != NULL)
                v1beta1__preferred_allocation_request__free_unpacked(rq, NULL);
        gs_k8s_arena_free(&a);
}

static void allocate(struct gs_k8s_endpoint *ep, struct gs_h2c_conn *c, int32_t stream, const uint8_t *msg, size_t len)
{
        struct gs_k8s_plugin *p = ep->p;
        V1beta1__AllocateRequest *rq = v1beta1__allocate_request__unpack(NULL, len, msg);
        struct gs_k8s_arena a = {0};
        struct gs_error err = {0};
        if (rq == NULL || rq->n_container_requests > MAX_CONTAINERS) {
                gs_error_set(&err, GS_EINVAL, rq == NULL ? "malformed request" : "too many containers");
                goto fail;
        }
        struct gs_k8s_alloc_ctx x = {&p->plan, &p->health, p->root, p->host_root};
        V1beta1__AllocateResponse out = V1BETA1__ALLOCATE_RESPONSE__INIT;
        out.n_container_responses = rq->n_container_requests;
        out.container_responses = gs_k8s_arena_alloc(&a, (rq->n_container_requests + 1) * sizeof(void *));
        if (out.container_responses == NULL) {
                gs_error_set(&err, GS_ENOMEM, "out of memory");
                goto fail;
        }
        for (size_t i = 0; i < rq->n_container_requests; i++) {
                V1beta1__ContainerAllocateRequest *q = rq->container_requests[i];
                V1beta1__ContainerAllocateResponse *o = gs_k8s_arena_alloc(&a, sizeof(*o));
                if (q->n_devices_ids > MAX_IDS) {
                        gs_error_set(&err, GS_EINVAL, "too many devices");
                        goto fail;
                }
                if (o == NULL) {
                        gs_error_set(&err, GS_ENOMEM, "out of memory");
                        goto fail;
                }
                if (gs_k8s_allocate(&x, ep->res, q->devices_ids, q->n_devices_ids, &a, o, &err) < 0)
                        goto fail;
                out.container_responses[i] = o;
                gs_k8s_note(p, "Allocate %s: %zu device(s) for container %zu", ep->res->name, q->n_devices_ids, i);
        }
        reply_packed(c, stream, &out.base);
        goto done;
fail:
        gs_k8s_note(p, "Allocate for %s refused: %s", ep->res->name, err.msg);
        gs_h2c_fail(c, stream, grpc_code(&err), err.msg);
done:
        if (rq != NULL)
                v1beta1__allocate_request__free_unpacked(rq, NULL);
        gs_k8s_arena_free(&a);
}

static void on_call(struct gs_h2c_conn *c, int32_t stream, const char *path, const uint8_t *msg, size_t len, void *ud)
{
        struct gs_k8s_endpoint *ep = ud;
        static const char svc[] = "/v1beta1.DevicePlugin/";
        const char *m = strncmp(path, svc, sizeof(svc) - 1) == 0 ? path + sizeof(svc) - 1 : "";
        if (strcmp(m, "GetPreferredAllocation") == 0) {
                preferred(ep, c, stream, msg, len);
                return;
        }
        if (strcmp(m, "Allocate") == 0) {
                allocate(ep, c, stream, msg, len);
                return;
        }
        bool empty = strcmp(m, "GetDevicePluginOptions") == 0 || strcmp(m, "ListAndWatch") == 0;
        if (!empty && strcmp(m, "PreStartContainer") != 0) {
                gs_h2c_fail(c, stream, GS_GRPC_UNIMPLEMENTED, "unknown method");
                return;
        }
        ProtobufCMessage *in = protobuf_c_message_unpack(
                empty ? &v1beta1__empty__descriptor : &v1beta1__pre_start_container_request__descriptor, NULL, len, msg);
        if (in == NULL) {
                gs_h2c_fail(c, stream, GS_GRPC_INVALID_ARGUMENT, "malformed request");
                return;
        }
        protobuf_c_message_free_unpacked(in, NULL);
        if (strcmp(m, "GetDevicePluginOptions") == 0) {
                V1beta1__DevicePluginOptions o = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
                o.get_preferred_allocation_available = 1;
                reply_packed(c, stream, &o.base);
        } else if (strcmp(m, "ListAndWatch") == 0) {
                list_and_watch(ep, c, stream);
        } else {
                V1beta1__PreStartContainerResponse o = V1BETA1__PRE_START_CONTAINER_RESPONSE__INIT;
                reply_packed(c, stream, &o.base);
        }
}

static void on_closed(struct gs_h2c_conn *c, int32_t stream, void *ud)
{
        struct gs_k8s_endpoint *ep = ud;
        for (unsigned w = 0; w < ep->nwatchers; w++) {
                if (ep->watchers[w].c == c && ep->watchers[w].stream == stream) {
                        ep->watchers[w] = ep->watchers[--ep->nwatchers];
                        gs_k8s_note(ep->p, "a ListAndWatch stream for %s ended", ep->res->name);
                        return;
                }
        }
}

const struct gs_h2c_server_ops gs_k8s_service = {.call = on_call, .closed = on_closed};
