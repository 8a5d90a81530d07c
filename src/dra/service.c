/* The DRA plugin's gRPC services: Registration (pluginregistration v1), DRAPlugin (v1 and
 * v1beta1, the same messages) and DRAResourceHealth (v1alpha1, dra/healthsvc.c), see dra/plugin.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "dra.pb-c.h"
#include "dra/plugin_int.h"
#include "dra/stats.h"
#include "kubelet/arena.h"
#include "kubelet/serve.h"
#include "pluginregistration.pb-c.h"

void gs_dra_note(struct gs_dra *p, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        gs_k8s_vnote(p->o->note, p->o->ud, fmt, ap);
        va_end(ap);
}

void gs_dra_note_cb(void *ud, const char *fmt, ...)
{
        struct gs_dra *p = ud;
        va_list ap;
        va_start(ap, fmt);
        gs_k8s_vnote(p->o->note, p->o->ud, fmt, ap);
        va_end(ap);
}

static double mono_s(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void reply_packed(struct gs_h2c_conn *c, int32_t stream, const ProtobufCMessage *m)
{
        size_t len = protobuf_c_message_get_packed_size(m);
        gs_autofree uint8_t *buf = len <= GS_H2C_MAX_MESSAGE ? malloc(len ? len : 1) : NULL;
        if (buf == NULL) {
                gs_h2c_fail(c, stream, GS_GRPC_RESOURCE_EXHAUSTED, "the answer is too large");
                return;
        }
        protobuf_c_message_pack(m, buf);
        gs_h2c_reply(c, stream, buf, len);
}

/* ------------------------------------------------------------------------------------------ */
/* Registration                                                                                */

static void get_info(struct gs_dra *p, struct gs_h2c_conn *c, int32_t stream)
{
        static char *versions[] = {(char *)"v1.DRAPlugin", (char *)"v1beta1.DRAPlugin"};
        Pluginregistration__PluginInfo info = PLUGINREGISTRATION__PLUGIN_INFO__INIT;
        info.type = (char *)"DRAPlugin";
        info.name = (char *)p->driver;
        info.endpoint = p->svc.path;
        info.n_supported_versions = 2;
        info.supported_versions = versions;
        reply_packed(c, stream, &info.base);
        gs_dra_note(p, "GetInfo: DRAPlugin %s at %s (v1, v1beta1)", p->driver, p->svc.path);
}

static void notify(struct gs_dra *p, struct gs_h2c_conn *c, int32_t stream, const uint8_t *msg, size_t len)
{
        Pluginregistration__RegistrationStatus *st = pluginregistration__registration_status__unpack(NULL, len, msg);
        if (st == NULL) {
                gs_h2c_fail(c, stream, GS_GRPC_INVALID_ARGUMENT, "malformed request");
                return;
        }
        p->registered = st->plugin_registered;
        if (st->plugin_registered)
                gs_dra_note(p, "registered with the kubelet");
        else
                gs_dra_note(p, "the kubelet refused the registration: %.300s", st->error ? st->error : "");
        pluginregistration__registration_status__free_unpacked(st, NULL);
        Pluginregistration__RegistrationStatusResponse r = PLUGINREGISTRATION__REGISTRATION_STATUS_RESPONSE__INIT;
        reply_packed(c, stream, &r.base);
}

/* ------------------------------------------------------------------------------------------ */
/* DRAPlugin                                                                                   */

static char **strings(struct gs_k8s_arena *a, json_object *arr, size_t *n)
{
        *n = json_object_is_type(arr, json_type_array) ? json_object_array_length(arr) : 0;
        char **v = gs_k8s_arena_alloc(a, (*n + 1) * sizeof(char *));
        for (size_t i = 0; v != NULL && i < *n; i++)
                v[i] = gs_k8s_arena_strdup(a, json_object_get_string(json_object_array_get_idx(arr, i)));
        return v;
}

static const char *member(json_object *o, const char *key)
{
        json_object *v = NULL;
        return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : "";
}

/* One claim's answer from what prepare gave (arena-allocated). */
static V1__NodePrepareResourceResponse *prepared(struct gs_k8s_arena *a, json_object *devs, const char *error)
{
        V1__NodePrepareResourceResponse *r = gs_k8s_arena_alloc(a, sizeof(*r));
        if (r == NULL)
                return NULL;
        v1__node_prepare_resource_response__init(r);
        if (devs == NULL) {
                r->error = gs_k8s_arena_strdup(a, error);
                return r;
        }
        size_t n = json_object_array_length(devs);
        r->devices = gs_k8s_arena_alloc(a, (n + 1) * sizeof(void *));
        for (size_t i = 0; r->devices != NULL && i < n; i++) {
                json_object *d = json_object_array_get_idx(devs, i), *reqs = NULL, *cdi = NULL;
                V1__Device *dv = gs_k8s_arena_alloc(a, sizeof(*dv));
                if (dv == NULL)
                        return NULL;
                v1__device__init(dv);
                json_object_object_get_ex(d, "requests", &reqs);
                json_object_object_get_ex(d, "cdi", &cdi);
                dv->request_names = strings(a, reqs, &dv->n_request_names);
                dv->cdi_device_ids = strings(a, cdi, &dv->n_cdi_device_ids);
                dv->pool_name = gs_k8s_arena_strdup(a, member(d, "pool"));
                dv->device_name = gs_k8s_arena_strdup(a, member(d, "device"));
                if (member(d, "share_id")[0] != '\0') /* echoed: the kubelet tells the shares of one device apart */
                        dv->share_id = gs_k8s_arena_strdup(a, member(d, "share_id"));
                r->devices[i] = dv;
        }
        r->n_devices = n;
        return r;
}

static void prepare(struct gs_dra *p, struct gs_h2c_conn *c, int32_t stream, const uint8_t *msg, size_t len)
{
        V1__NodePrepareResourcesRequest *rq = v1__node_prepare_resources_request__unpack(NULL, len, msg);
        struct gs_k8s_arena a = {0};
        if (rq == NULL || rq->n_claims > GS_DRA_MAX_CLAIMS) {
                gs_h2c_fail(c, stream, GS_GRPC_INVALID_ARGUMENT, rq == NULL ? "malformed request" : "too many claims");
                goto out;
        }
        V1__NodePrepareResourcesResponse out = V1__NODE_PREPARE_RESOURCES_RESPONSE__INIT;
        out.claims = gs_k8s_arena_alloc(&a, (rq->n_claims + 1) * sizeof(void *));
        for (size_t i = 0; out.claims != NULL && i < rq->n_claims; i++) {
                const V1__Claim *cl = rq->claims[i];
                struct gs_error err = {0};
                double t0 = mono_s();
                json_object *devs = gs_dra_prepare(&p->prep, cl->namespace_, cl->name, cl->uid, &err);
                gs_dra_stats_note(p->stats, GS_DRA_OP_PREPARE, devs != NULL, mono_s() - t0);
                V1__NodePrepareResourcesResponse__ClaimsEntry *e = gs_k8s_arena_alloc(&a, sizeof(*e));
                if (e == NULL)
                        break;
                v1__node_prepare_resources_response__claims_entry__init(e);
                e->key = gs_k8s_arena_strdup(&a, cl->uid);
                e->value = prepared(&a, devs, err.msg);
                out.claims[out.n_claims++] = e;
                if (devs != NULL && p->prep.took.api > 0)
                        gs_dra_note(p, "NodePrepareResources %s/%s (%s): %zu device(s) (API %.1f ms, spec built %.1f, "
                                    "written %.1f, checkpoint %.1f)%s%s", cl->namespace_, cl->name, cl->uid,
                                    json_object_array_length(devs), p->prep.took.api, p->prep.took.build,
                                    p->prep.took.spec, p->prep.took.checkpoint, p->prep.status_note[0] ? "; " : "",
                                    p->prep.status_note);
                else if (devs != NULL)
                        gs_dra_note(p, "NodePrepareResources %s/%s (%s): %zu device(s), prepared before", cl->namespace_,
                                    cl->name, cl->uid, json_object_array_length(devs));
                else
                        gs_dra_note(p, "NodePrepareResources %.63s/%.63s (%.63s) refused: %s%s%s", cl->namespace_,
                                    cl->name, cl->uid, err.msg, p->prep.status_note[0] ? "; " : "", p->prep.status_note);
        }
        if (out.claims == NULL || gs_k8s_arena_failed(&a))
                gs_h2c_fail(c, stream, GS_GRPC_RESOURCE_EXHAUSTED, "out of memory");
        else
                reply_packed(c, stream, &out.base);
out:
        if (rq != NULL)
                v1__node_prepare_resources_request__free_unpacked(rq, NULL);
        gs_k8s_arena_free(&a);
}

static void unprepare(struct gs_dra *p, struct gs_h2c_conn *c, int32_t stream, const uint8_t *msg, size_t len)
{
        V1__NodeUnprepareResourcesRequest *rq = v1__node_unprepare_resources_request__unpack(NULL, len, msg);
        struct gs_k8s_arena a = {0};
        if (rq == NULL || rq->n_claims > GS_DRA_MAX_CLAIMS) {
                gs_h2c_fail(c, stream, GS_GRPC_INVALID_ARGUMENT, rq == NULL ? "malformed request" : "too many claims");
                goto out;
        }
        V1__NodeUnprepareResourcesResponse out = V1__NODE_UNPREPARE_RESOURCES_RESPONSE__INIT;
        out.claims = gs_k8s_arena_alloc(&a, (rq->n_claims + 1) * sizeof(void *));
        for (size_t i = 0; out.claims != NULL && i < rq->n_claims; i++) {
                const V1__Claim *cl = rq->claims[i];
                struct gs_error err = {0};
                double t0 = mono_s();
                int rc = gs_dra_unprepare(&p->prep, cl->uid, &err);
                gs_dra_stats_note(p->stats, GS_DRA_OP_UNPREPARE, rc == 0, mono_s() - t0);
                V1__NodeUnprepareResourcesResponse__ClaimsEntry *e = gs_k8s_arena_alloc(&a, sizeof(*e));
                V1__NodeUnprepareResourceResponse *r = gs_k8s_arena_alloc(&a, sizeof(*r));
                if (e == NULL || r == NULL)
                        break;
                v1__node_unprepare_resources_response__claims_entry__init(e);
                v1__node_unprepare_resource_response__init(r);
                if (rc < 0)
                        r->error = gs_k8s_arena_strdup(&a, err.msg);
                e->key = gs_k8s_arena_strdup(&a, cl->uid);
                e->value = r;
                out.claims[out.n_claims++] = e;
                gs_dra_note(p, "NodeUnprepareResources %.63s/%.63s (%.63s)%s%s", cl->namespace_, cl->name, cl->uid,
                            rc < 0 ? ": " : "", rc < 0 ? err.msg : "");
        }
        if (out.claims == NULL || gs_k8s_arena_failed(&a))
                gs_h2c_fail(c, stream, GS_GRPC_RESOURCE_EXHAUSTED, "out of memory");
        else
                reply_packed(c, stream, &out.base);
out:
        if (rq != NULL)
                v1__node_unprepare_resources_request__free_unpacked(rq, NULL);
        gs_k8s_arena_free(&a);
}

static void on_call(struct gs_h2c_conn *c, int32_t stream, const char *path, const uint8_t *msg, size_t len, void *ud)
{
        struct gs_dra *p = ud;
        const char *m = NULL;
        /* (the kubelet's gRPC paths: its api.proto's package is k8s.io.kubelet.pkg.apis.dra.VERSION;
         * "v1.DRAPlugin" is only the service's name in the registration: tests/k8s/kubelet_wire.txt) */
        static const char *const dra[] = {"/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/",
                                          "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/"};
        for (size_t i = 0; i < 2 && m == NULL; i++)
                if (strncmp(path, dra[i], strlen(dra[i])) == 0)
                        m = path + strlen(dra[i]);
        if (m != NULL && strcmp(m, "NodePrepareResources") == 0)
                prepare(p, c, stream, msg, len);
        else if (m != NULL && strcmp(m, "NodeUnprepareResources") == 0)
                unprepare(p, c, stream, msg, len);
        else if (strcmp(path, "/v1alpha1.DRAResourceHealth/NodeWatchResources") == 0)
                gs_dra_health_watch(p, c, stream);
        else if (strcmp(path, "/pluginregistration.Registration/GetInfo") == 0)
                get_info(p, c, stream);
        else if (strcmp(path, "/pluginregistration.Registration/NotifyRegistrationStatus") == 0)
                notify(p, c, stream, msg, len);
        else
                gs_h2c_fail(c, stream, GS_GRPC_UNIMPLEMENTED, "unknown method");
}

static void on_closed(struct gs_h2c_conn *c, int32_t stream, void *ud)
{
        gs_dra_health_unwatch(ud, c, stream);
}

const struct gs_h2c_server_ops gs_dra_service = {.call = on_call, .closed = on_closed};
