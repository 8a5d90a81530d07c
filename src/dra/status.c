/* A claim's status.devices entries of the DRA plugin (see dra/status.h). */
#include "dra/status.h"

#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/cleanup.h"
#include "common/error.h"

static json_object *condition(bool ready, const char *reason, const char *message)
{
        char now[32];
        time_t t = time(NULL);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
        size_t n = strnlen(message, GS_DRA_STATUS_MAX_MESSAGE);
        json_object *c = json_object_new_object();
        json_object_object_add(c, "type", json_object_new_string("Ready"));
        json_object_object_add(c, "status", json_object_new_string(ready ? "True" : "False"));
        json_object_object_add(c, "reason", json_object_new_string(reason));
        json_object_object_add(c, "message", json_object_new_string_len(message, (int)n));
        json_object_object_add(c, "lastTransitionTime", json_object_new_string(now));
        return c;
}

static json_object *apply_doc(const char *driver, const struct gs_dra_claim *c, bool ready, const char *reason,
                              const char *message)
{
        json_object *doc = json_object_new_object(), *meta = json_object_new_object(), *st = json_object_new_object(),
                    *devs = json_object_new_array();
        json_object_object_add(doc, "apiVersion", json_object_new_string("resource.k8s.io/v1"));
        json_object_object_add(doc, "kind", json_object_new_string("ResourceClaim"));
        json_object_object_add(meta, "name", json_object_new_string(c->name));
        json_object_object_add(meta, "namespace", json_object_new_string(c->ns));
        json_object_object_add(meta, "uid", json_object_new_string(c->uid));
        json_object_object_add(doc, "metadata", meta);
        for (size_t i = 0; i < c->n; i++) {
                json_object *d = json_object_new_object(), *conds = json_object_new_array();
                json_object_object_add(d, "driver", json_object_new_string(driver));
                json_object_object_add(d, "pool", json_object_new_string(c->r[i].pool));
                json_object_object_add(d, "device", json_object_new_string(c->r[i].device));
                if (c->r[i].share_id[0] != '\0')
                        json_object_object_add(d, "shareID", json_object_new_string(c->r[i].share_id));
                json_object_array_add(conds, condition(ready, reason, message));
                json_object_object_add(d, "conditions", conds);
                json_object_array_add(devs, d);
        }
        json_object_object_add(st, "devices", devs);
        json_object_object_add(doc, "status", st);
        return doc;
}

/* PATCH the claim's status with `doc` as fieldManager `manager`: one try (never worth holding the loop
 * or the kubelet's call). */
static int apply(struct gs_kubeapi *api, const char *manager, const char *ns, const char *name, json_object *doc,
                 struct gs_error *err)
{
        char path[700], version[64];
        snprintf(version, sizeof(version), "resource.k8s.io/%s", api->res_version);
        json_object_object_add(doc, "apiVersion", json_object_new_string(version)); /* the path's */
        if ((size_t)snprintf(path, sizeof(path), "/apis/resource.k8s.io/%s/namespaces/%s/resourceclaims/%s/status"
                             "?fieldManager=%s&force=true", api->res_version, ns, name, manager) >= sizeof(path))
                return gs_error_set(err, GS_EINVAL, "the claim's path is too long");
        const char *text = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN);
        long status = 0;
        gs_autofree char *body = NULL;
        unsigned attempts = api->attempts;
        api->attempts = 1;
        int rc = text != NULL ? gs_kubeapi_call_as(api, "PATCH", path, "application/apply-patch+yaml", text, &status,
                                                   &body, err)
                              : gs_error_set(err, GS_ENOMEM, "out of memory");
        api->attempts = attempts;
        if (rc < 0)
                return -1;
        if (status != 200 && status != 201)
                return gs_error_set(err, GS_EINVAL, "the API server answered HTTP %ld: %.200s", status, body ? body : "");
        return 0;
}

int gs_dra_status_write(struct gs_kubeapi *api, const char *driver, const struct gs_dra_claim *c, bool ready,
                        const char *reason, const char *message, struct gs_error *err)
{
        if (c->n == 0)
                return gs_error_set(err, GS_EINVAL, "no device of ours in the claim");
        json_object *doc = apply_doc(driver, c, ready, reason, message);
        int rc = apply(api, driver, c->ns, c->name, doc, err);
        json_object_put(doc);
        return rc;
}

/* Each entry's `data` as the entry's field `key`, applied as the field manager <driver><suffix>. */
static int apply_entries(struct gs_kubeapi *api, const char *driver, const char *suffix, const char *key,
                         const char *ns, const char *name, const char *uid, const struct gs_dra_status_entry *e, size_t n,
                         struct gs_error *err)
{
        char manager[300];
        if (n == 0)
                return gs_error_set(err, GS_EINVAL, "no device of ours in the claim");
        snprintf(manager, sizeof(manager), "%s%s", driver, suffix);
        json_object *doc = json_object_new_object(), *meta = json_object_new_object(), *st = json_object_new_object(),
                    *devs = json_object_new_array();
        json_object_object_add(doc, "apiVersion", json_object_new_string("resource.k8s.io/v1"));
        json_object_object_add(doc, "kind", json_object_new_string("ResourceClaim"));
        json_object_object_add(meta, "name", json_object_new_string(name));
        json_object_object_add(meta, "namespace", json_object_new_string(ns));
        json_object_object_add(meta, "uid", json_object_new_string(uid));
        json_object_object_add(doc, "metadata", meta);
        for (size_t i = 0; i < n; i++) {
                json_object *d = json_object_new_object();
                json_object_object_add(d, "driver", json_object_new_string(driver));
                json_object_object_add(d, "pool", json_object_new_string(e[i].pool));
                json_object_object_add(d, "device", json_object_new_string(e[i].device));
                if (e[i].share_id[0] != '\0')
                        json_object_object_add(d, "shareID", json_object_new_string(e[i].share_id));
                json_object_object_add(d, key, json_object_get(e[i].data));
                json_object_array_add(devs, d);
        }
        json_object_object_add(st, "devices", devs);
        json_object_object_add(doc, "status", st);
        int rc = apply(api, manager, ns, name, doc, err);
        json_object_put(doc);
        return rc;
}

int gs_dra_status_data(struct gs_kubeapi *api, const char *driver, const char *ns, const char *name, const char *uid,
                       const struct gs_dra_status_entry *e, size_t n, struct gs_error *err)
{
        return apply_entries(api, driver, GS_DRA_USAGE_MANAGER_SUFFIX, "data", ns, name, uid, e, n, err);
}

int gs_dra_status_conditions(struct gs_kubeapi *api, const char *driver, const char *ns, const char *name,
                             const char *uid, const struct gs_dra_status_entry *e, size_t n, struct gs_error *err)
{
        return apply_entries(api, driver, GS_DRA_APPXID_MANAGER_SUFFIX, "conditions", ns, name, uid, e, n, err);
}

/* A Warning Event about `obj` (its kind, name, ...) in namespace `ns`, from `driver` on `node`. */
static int post_event(struct gs_kubeapi *api, const char *driver, const char *node, const char *ns, json_object *obj,
                      const char *reason, const char *message, struct gs_error *err)
{
        char now[32], name[320], path[400];
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        struct tm tm;
        gmtime_r(&ts.tv_sec, &tm);
        strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
        /* a name of its own for each event: the object's name and the time (as the kubelet's recorder) */
        json_object *oname = NULL;
        json_object_object_get_ex(obj, "name", &oname);
        snprintf(name, sizeof(name), "%.200s.%llx", json_object_get_string(oname),
                 (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec);
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events", ns);
        json_object *ev = json_object_new_object(), *meta = json_object_new_object(), *src = json_object_new_object();
        json_object_object_add(ev, "apiVersion", json_object_new_string("v1"));
        json_object_object_add(ev, "kind", json_object_new_string("Event"));
        json_object_object_add(meta, "name", json_object_new_string(name));
        json_object_object_add(meta, "namespace", json_object_new_string(ns));
        json_object_object_add(ev, "metadata", meta);
        json_object_object_add(ev, "involvedObject", obj);
        json_object_object_add(ev, "type", json_object_new_string("Warning"));
        json_object_object_add(ev, "reason", json_object_new_string(reason));
        json_object_object_add(ev, "message", json_object_new_string_len(message, (int)strnlen(message, 1024)));
        json_object_object_add(src, "component", json_object_new_string(driver));
        json_object_object_add(src, "host", json_object_new_string(node));
        json_object_object_add(ev, "source", src);
        json_object_object_add(ev, "firstTimestamp", json_object_new_string(now));
        json_object_object_add(ev, "lastTimestamp", json_object_new_string(now));
        json_object_object_add(ev, "count", json_object_new_int(1));
        const char *text = json_object_to_json_string_ext(ev, JSON_C_TO_STRING_PLAIN);
        long status = 0;
        unsigned attempts = api->attempts;
        api->attempts = 1;
        int rc = text != NULL ? gs_kubeapi_call(api, "POST", path, text, &status, NULL, err)
                              : gs_error_set(err, GS_ENOMEM, "out of memory");
        api->attempts = attempts;
        json_object_put(ev);
        if (rc < 0)
                return -1;
        if (status != 200 && status != 201)
                return gs_error_set(err, GS_EINVAL, "the API server answered HTTP %ld to the Event", status);
        return 0;
}

int gs_dra_event_node(struct gs_kubeapi *api, const char *driver, const char *node, const char *reason,
                      const char *message, struct gs_error *err)
{
        json_object *obj = json_object_new_object();
        json_object_object_add(obj, "apiVersion", json_object_new_string("v1"));
        json_object_object_add(obj, "kind", json_object_new_string("Node"));
        json_object_object_add(obj, "name", json_object_new_string(node));
        return post_event(api, driver, node, "default", obj, reason, message, err);
}

int gs_dra_event_claim(struct gs_kubeapi *api, const char *driver, const char *node, const char *ns, const char *name,
                       const char *uid, const char *reason, const char *message, struct gs_error *err)
{
        json_object *obj = json_object_new_object();
        char version[64];
        snprintf(version, sizeof(version), "resource.k8s.io/%s", api->res_version);
        json_object_object_add(obj, "apiVersion", json_object_new_string(version));
        json_object_object_add(obj, "kind", json_object_new_string("ResourceClaim"));
        json_object_object_add(obj, "namespace", json_object_new_string(ns));
        json_object_object_add(obj, "name", json_object_new_string(name));
        json_object_object_add(obj, "uid", json_object_new_string(uid));
        return post_event(api, driver, node, ns, obj, reason, message, err);
}

void gs_dra_say(void (*note)(void *ud, const char *line), void *ud, const char *fmt, ...)
{
        if (note == NULL)
                return;
        char line[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(line, sizeof(line), fmt, ap);
        va_end(ap);
        note(ud, line);
}
