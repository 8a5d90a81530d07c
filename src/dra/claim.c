/* A ResourceClaim read for one driver (see dra/claim.h). */
#include "dra/claim.h"

#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "common/strutil.h"
#include "kubelet/quantity.h"

#define MAX_DEPTH 32

static json_object *get(json_object *o, const char *key)
{
        json_object *v = NULL;
        return json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

/* A string member into buf: required or not; -1 when of another type or too long. */
static int str_of(json_object *o, const char *key, const char *what, bool required, char *buf, size_t len,
                  struct gs_error *err)
{
        json_object *v = get(o, key);
        buf[0] = '\0';
        if (v == NULL || json_object_is_type(v, json_type_null))
                return required ? gs_error_set(err, GS_EINVAL, "%s: no %s", what, key) : 0;
        if (!json_object_is_type(v, json_type_string))
                return gs_error_set(err, GS_EINVAL, "%s: %s is not a string", what, key);
        const char *s = json_object_get_string(v);
        if ((size_t)json_object_get_string_len(v) >= len || strlen(s) != (size_t)json_object_get_string_len(v))
                return gs_error_set(err, GS_EINVAL, "%s: %s is too long or holds a NUL", what, key);
        if (required && s[0] == '\0')
                return gs_error_set(err, GS_EINVAL, "%s: %s is empty", what, key);
        memcpy(buf, s, strlen(s) + 1);
        return 0;
}

static bool dns_label(const char *s)
{
        size_t n = strlen(s);
        if (n == 0 || n > 63)
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
                if (!alnum && !(c == '-' && i > 0 && i + 1 < n))
                        return false;
        }
        return true;
}

static int capacity(json_object *cc, struct gs_dra_result *r, const char *what, struct gs_error *err)
{
        if (cc == NULL || json_object_is_type(cc, json_type_null))
                return 0;
        if (!json_object_is_type(cc, json_type_object))
                return gs_error_set(err, GS_EINVAL, "%s: consumedCapacity is not an object", what);
        json_object_object_foreach(cc, key, val) {
                uint64_t v;
                if (!json_object_is_type(val, json_type_string) && !json_object_is_type(val, json_type_int))
                        return gs_error_set(err, GS_EINVAL, "%s: consumedCapacity.%.40s is not a quantity", what, key);
                if (gs_k8s_quantity_parse(json_object_get_string(val), &v, err) < 0)
                        return gs_error_wrap(err, "%s: consumedCapacity.%.40s", what, key);
                if (strcmp(key, "memory") == 0) {
                        if (v == 0)
                                return gs_error_set(err, GS_EINVAL, "%s: consumedCapacity.memory is 0", what);
                        r->memory = v;
                } else if (strcmp(key, "compute") == 0) {
                        if (v == 0 || v > 100)
                                return gs_error_set(err, GS_EINVAL, "%s: consumedCapacity.compute %llu is not a percentage "
                                                    "(1..100)", what, (unsigned long long)v);
                        r->compute = (unsigned)v;
                } else {
                        return gs_error_set(err, GS_EINVAL, "%s: unknown capacity '%.40s' (memory, compute)", what, key);
                }
        }
        return 0;
}

static int results(json_object *arr, const char *driver, struct gs_dra_claim *c, struct gs_error *err)
{
        if (!json_object_is_type(arr, json_type_array))
                return gs_error_set(err, GS_EINVAL, "status.allocation.devices.results is not a list");
        for (size_t i = 0; i < json_object_array_length(arr); i++) {
                json_object *o = json_object_array_get_idx(arr, i);
                char what[64], drv[254];
                snprintf(what, sizeof(what), "allocation result %zu", i);
                if (!json_object_is_type(o, json_type_object))
                        return gs_error_set(err, GS_EINVAL, "%s is not an object", what);
                if (str_of(o, "driver", what, true, drv, sizeof(drv), err) < 0)
                        return -1;
                if (strcmp(drv, driver) != 0)
                        continue;
                if (c->n == GS_DRA_MAX_RESULTS)
                        return gs_error_set(err, GS_EINVAL, "more than %d devices in one claim", GS_DRA_MAX_RESULTS);
                struct gs_dra_result *r = &c->r[c->n];
                memset(r, 0, sizeof(*r));
                if (str_of(o, "request", what, true, r->request, sizeof(r->request), err) < 0 ||
                    str_of(o, "pool", what, true, r->pool, sizeof(r->pool), err) < 0 ||
                    str_of(o, "device", what, true, r->device, sizeof(r->device), err) < 0 ||
                    str_of(o, "shareID", what, false, r->share_id, sizeof(r->share_id), err) < 0)
                        return -1;
                if (!dns_label(r->device))
                        return gs_error_set(err, GS_EINVAL, "%s: device '%.63s' is not a DNS label", what, r->device);
                c->n++; /* its key is read: a later error can be reported on its status */
                json_object *adm = get(o, "adminAccess");
                if (adm != NULL && !json_object_is_type(adm, json_type_null) && !json_object_is_type(adm, json_type_boolean))
                        return gs_error_set(err, GS_EINVAL, "%s: adminAccess is not a boolean", what);
                r->admin = adm != NULL && json_object_get_boolean(adm);
                if (r->admin)
                        continue; /* consumes nothing: its capacity is not the claim's to hold */
                if (capacity(get(o, "consumedCapacity"), r, what, err) < 0)
                        return -1;
        }
        return 0;
}

/* Does a config's request list name this result's request ("req" also names "req/sub")? */
static bool names_request(json_object *reqs, const char *request)
{
        if (reqs == NULL || json_object_array_length(reqs) == 0)
                return true;
        for (size_t i = 0; i < json_object_array_length(reqs); i++) {
                const char *s = json_object_get_string(json_object_array_get_idx(reqs, i));
                size_t n = strlen(s);
                if (strcmp(s, request) == 0 || (strncmp(s, request, n) == 0 && request[n] == '/'))
                        return true;
        }
        return false;
}

/* One config entry's values: "" where it says nothing. max_*: a DeviceClass's bound. */
struct slice_cfg {
        char prio[8], mode[8], max_prio[8], max_mode[8];
};

static const char *const prios[] = {"low", "normal", "high"}; /* narrowest first */
static const char *const modes[] = {"cap", "share", "off"};

/* The place of s in list (of 3), -1 when not there. */
static int rank(const char *const *list, const char *s)
{
        for (int i = 0; i < 3; i++)
                if (strcmp(list[i], s) == 0)
                        return i;
        return -1;
}

/* An optional member that must be one of list's three words ("" when absent). */
static int word(json_object *p, const char *key, const char *const *list, char *out, size_t len, struct gs_error *err)
{
        if (str_of(p, key, "opaque config", false, out, len, err) < 0)
                return -1;
        if (out[0] != '\0' && rank(list, out) < 0)
                return gs_error_set(err, GS_EINVAL, "opaque config: %s '%s' (%s, %s or %s)", key, out, list[2], list[1],
                                    list[0]);
        return 0;
}

static int parameters(json_object *p, bool from_class, struct slice_cfg *v, struct gs_error *err)
{
        char buf[64];
        memset(v, 0, sizeof(*v));
        if (!json_object_is_type(p, json_type_object))
                return gs_error_set(err, GS_EINVAL, "opaque config: parameters is not an object");
        json_object_object_foreach(p, key, val) {
                (void)val;
                bool bound = strcmp(key, "maxPriority") == 0 || strcmp(key, "maxComputeMode") == 0;
                if (strcmp(key, "apiVersion") != 0 && strcmp(key, "kind") != 0 && strcmp(key, "priority") != 0 &&
                    strcmp(key, "computeMode") != 0 && !bound)
                        return gs_error_set(err, GS_EINVAL, "opaque config: unknown field '%.40s' (apiVersion, kind, "
                                            "priority, computeMode; a DeviceClass's also maxPriority, maxComputeMode)", key);
                if (bound && !from_class)
                        return gs_error_set(err, GS_EINVAL, "opaque config: %s is a DeviceClass's bound: a claim cannot "
                                            "set its own", key);
        }
        if (str_of(p, "apiVersion", "opaque config", true, buf, sizeof(buf), err) < 0)
                return -1;
        if (strcmp(buf, GS_DRA_CONFIG_API) != 0)
                return gs_error_set(err, GS_EINVAL, "opaque config: apiVersion '%s' is not " GS_DRA_CONFIG_API, buf);
        if (str_of(p, "kind", "opaque config", true, buf, sizeof(buf), err) < 0)
                return -1;
        if (strcmp(buf, GS_DRA_CONFIG_KIND) != 0)
                return gs_error_set(err, GS_EINVAL, "opaque config: kind '%s' is not " GS_DRA_CONFIG_KIND, buf);
        if (word(p, "priority", prios, v->prio, sizeof(v->prio), err) < 0 ||
            word(p, "computeMode", modes, v->mode, sizeof(v->mode), err) < 0 ||
            word(p, "maxPriority", prios, v->max_prio, sizeof(v->max_prio), err) < 0 ||
            word(p, "maxComputeMode", modes, v->max_mode, sizeof(v->max_mode), err) < 0)
                return -1;
        return 0;
}

/* Every value `from` says, over `into`'s (a later entry wins). */
static void merge(struct slice_cfg *into, const struct slice_cfg *from)
{
        if (from->prio[0] != '\0')
                memcpy(into->prio, from->prio, sizeof(into->prio));
        if (from->mode[0] != '\0')
                memcpy(into->mode, from->mode, sizeof(into->mode));
        if (from->max_prio[0] != '\0')
                memcpy(into->max_prio, from->max_prio, sizeof(into->max_prio));
        if (from->max_mode[0] != '\0')
                memcpy(into->max_mode, from->max_mode, sizeof(into->max_mode));
}

/* The DeviceClass bounds the claim (issue 31): the class's maxPriority / maxComputeMode, else its
 * priority / computeMode, else the defaults (normal, cap) are the widest the claim may ask. The
 * result gets the claim's values, else the class's. */
static int bound(const struct slice_cfg *cls, const struct slice_cfg *clm, struct gs_dra_result *r,
                 bool *beyond, struct gs_error *err)
{
        const char *max_p = cls->max_prio[0] ? cls->max_prio : cls->prio[0] ? cls->prio : "normal";
        const char *max_m = cls->max_mode[0] ? cls->max_mode : cls->mode[0] ? cls->mode : "cap";
        if (cls->prio[0] != '\0' && rank(prios, cls->prio) > rank(prios, max_p))
                return gs_error_set(err, GS_EINVAL, "request %s: its DeviceClass's config asks priority %s, above its own "
                                    "maxPriority %s", r->request, cls->prio, max_p);
        if (cls->mode[0] != '\0' && rank(modes, cls->mode) > rank(modes, max_m))
                return gs_error_set(err, GS_EINVAL, "request %s: its DeviceClass's config asks computeMode %s, above its "
                                    "own maxComputeMode %s", r->request, cls->mode, max_m);
        if (clm->prio[0] != '\0' && rank(prios, clm->prio) > rank(prios, max_p)) {
                *beyond = true;
                return gs_error_set(err, GS_EINVAL, "request %s: the claim asks priority %s; its DeviceClass allows at "
                                    "most %s", r->request, clm->prio, max_p);
        }
        if (clm->mode[0] != '\0' && rank(modes, clm->mode) > rank(modes, max_m)) {
                *beyond = true;
                return gs_error_set(err, GS_EINVAL, "request %s: the claim asks computeMode %s; its DeviceClass allows "
                                    "at most %s", r->request, clm->mode, max_m);
        }
        gs_strlcpy(r->priority, clm->prio[0] ? clm->prio : cls->prio, sizeof(r->priority));
        gs_strlcpy(r->compute_mode, clm->mode[0] ? clm->mode : cls->mode, sizeof(r->compute_mode));
        return 0;
}

static int configs(json_object *arr, const char *driver, struct gs_dra_claim *c, struct gs_error *err)
{
        struct slice_cfg cls[GS_DRA_MAX_RESULTS] = {0}, clm[GS_DRA_MAX_RESULTS] = {0};
        if (arr != NULL && !json_object_is_type(arr, json_type_null) && !json_object_is_type(arr, json_type_array))
                return gs_error_set(err, GS_EINVAL, "status.allocation.devices.config is not a list");
        for (size_t i = 0; json_object_is_type(arr, json_type_array) && i < json_object_array_length(arr); i++) {
                json_object *o = json_object_array_get_idx(arr, i);
                json_object *opaque = get(o, "opaque"), *reqs = get(o, "requests");
                char src[16], drv[254];
                struct slice_cfg v;
                if (!json_object_is_type(o, json_type_object))
                        return gs_error_set(err, GS_EINVAL, "config %zu is not an object", i);
                if (str_of(o, "source", "config", false, src, sizeof(src), err) < 0)
                        return -1;
                if (opaque == NULL)
                        continue;
                if (str_of(opaque, "driver", "opaque config", true, drv, sizeof(drv), err) < 0)
                        return -1;
                if (strcmp(drv, driver) != 0)
                        continue;
                if (reqs != NULL && !json_object_is_type(reqs, json_type_array))
                        return gs_error_set(err, GS_EINVAL, "config %zu: requests is not a list", i);
                for (size_t k = 0; reqs != NULL && k < json_object_array_length(reqs); k++)
                        if (!json_object_is_type(json_object_array_get_idx(reqs, k), json_type_string))
                                return gs_error_set(err, GS_EINVAL, "config %zu: a request name is not a string", i);
                /* only the API server writes FromClass (a copy of the DeviceClass's config); anything
                 * else is the claim's own */
                bool from_class = strcmp(src, "FromClass") == 0;
                if (parameters(get(opaque, "parameters"), from_class, &v, err) < 0)
                        return -1;
                for (size_t k = 0; k < c->n; k++)
                        if (names_request(reqs, c->r[k].request))
                                merge(from_class ? &cls[k] : &clm[k], &v);
        }
        for (size_t k = 0; k < c->n; k++)
                if (bound(&cls[k], &clm[k], &c->r[k], &c->beyond_class, err) < 0)
                        return -1;
        return 0;
}

/* Does status.devices hold an entry of ours whose Ready condition is False (an error we reported)? */
static bool error_reported(json_object *devs, const char *driver)
{
        for (size_t i = 0; json_object_is_type(devs, json_type_array) && i < json_object_array_length(devs); i++) {
                json_object *d = json_object_array_get_idx(devs, i), *conds = get(d, "conditions");
                const char *drv = json_object_get_string(get(d, "driver"));
                if (!json_object_is_type(get(d, "driver"), json_type_string) || strcmp(drv, driver) != 0 ||
                    !json_object_is_type(conds, json_type_array))
                        continue;
                for (size_t k = 0; k < json_object_array_length(conds); k++) {
                        json_object *c = json_object_array_get_idx(conds, k), *t = get(c, "type"), *st = get(c, "status");
                        if (json_object_is_type(t, json_type_string) && json_object_is_type(st, json_type_string) &&
                            strcmp(json_object_get_string(t), "Ready") == 0 && strcmp(json_object_get_string(st), "False") == 0)
                                return true;
                }
        }
        return false;
}

/* The one pod in status.reservedFor (a DNS subdomain), for the slice's labels; "" otherwise. */
static void reserved_pod(json_object *list, char *out, size_t len)
{
        size_t pods = 0;
        out[0] = '\0';
        for (size_t i = 0; json_object_is_type(list, json_type_array) && i < json_object_array_length(list); i++) {
                json_object *r = json_object_array_get_idx(list, i), *res = get(r, "resource"), *name = get(r, "name");
                if (!json_object_is_type(res, json_type_string) || strcmp(json_object_get_string(res), "pods") != 0)
                        continue;
                const char *n = json_object_is_type(name, json_type_string) ? json_object_get_string(name) : "";
                bool ok = n[0] != '\0' && strlen(n) < len && strlen(n) <= 253;
                for (const char *c = n; ok && *c; c++)
                        ok = (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-' || *c == '.';
                if (++pods == 1 && ok)
                        memcpy(out, n, strlen(n) + 1);
        }
        if (pods != 1)
                out[0] = '\0';
}

int gs_dra_claim_parse(const char *json, size_t len, const char *driver, struct gs_dra_claim *out,
                       struct gs_error *err)
{
        memset(out, 0, sizeof(*out));
        if (len > GS_DRA_MAX_DOC)
                return gs_error_set(err, GS_EINVAL, "the claim is larger than %u bytes", GS_DRA_MAX_DOC);
        json_tokener *tok = json_tokener_new_ex(MAX_DEPTH);
        if (tok == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        json_object *doc = json_tokener_parse_ex(tok, json, (int)len);
        enum json_tokener_error jerr = json_tokener_get_error(tok);
        size_t used = json_tokener_get_parse_end(tok);
        json_tokener_free(tok);
        int rv = -1;
        if (doc == NULL || jerr != json_tokener_success || used != len) {
                gs_error_set(err, GS_EINVAL, "the claim is not one JSON document");
                goto out;
        }
        json_object *meta = get(doc, "metadata");
        json_object *devs = get(get(get(doc, "status"), "allocation"), "devices");
        if (!json_object_is_type(meta, json_type_object)) {
                gs_error_set(err, GS_EINVAL, "the claim has no metadata");
                goto out;
        }
        if (str_of(meta, "uid", "metadata", true, out->uid, sizeof(out->uid), err) < 0 ||
            str_of(meta, "namespace", "metadata", true, out->ns, sizeof(out->ns), err) < 0 ||
            str_of(meta, "name", "metadata", true, out->name, sizeof(out->name), err) < 0)
                goto out;
        out->error_reported = error_reported(get(get(doc, "status"), "devices"), driver);
        reserved_pod(get(get(doc, "status"), "reservedFor"), out->pod, sizeof(out->pod));
        if (devs == NULL || get(devs, "results") == NULL) {
                gs_error_set(err, GS_EINVAL, "the claim %s/%s is not allocated", out->ns, out->name);
                goto out;
        }
        if (results(get(devs, "results"), driver, out, err) < 0 || configs(get(devs, "config"), driver, out, err) < 0)
                goto out;
        if (out->n == 0) {
                gs_error_set(err, GS_EINVAL, "the claim %s/%s has no device of %s", out->ns, out->name, driver);
                goto out;
        }
        rv = 0;
out:
        json_object_put(doc);
        return rv;
}
