/* NodePrepareResources / NodeUnprepareResources for one claim, the checkpoint (see dra/prepare.h). */
#include "dra/prepare.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cdi/cdi.h"
#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "common/strutil.h"
#include "dra/checkpoint.h"
#include "dra/slices.h"
#include "dra/status.h"
#include "kubelet/cdispec.h"
#include "kubelet/quantity.h"
#include "select/caps.h"

#define SLICE_NAME "slice"

/* What one allocated device becomes. */
struct plan {
        unsigned gpu;
        int mig;
        bool slice;
        bool admin; /* adminAccess: the device's nodes and the slices' regions read-only; holds nothing */
};

static bool charset(const char *s, size_t max, const char *extra)
{
        size_t n = strlen(s);
        if (n == 0 || n > max)
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
                if (!alnum && (strchr(extra, c) == NULL || i == 0 || i + 1 == n))
                        return false;
        }
        return true;
}

static int check_ref(const char *ns, const char *name, const char *uid, struct gs_error *err)
{
        /* they go into a URL path and a file name: nothing but a DNS name's (and a UID's) characters */
        if (!charset(ns, 63, "-"))
                return gs_error_set(err, GS_EINVAL, "invalid claim namespace '%.63s'", ns);
        if (!charset(name, 253, "-."))
                return gs_error_set(err, GS_EINVAL, "invalid claim name '%.63s'", name);
        if (!charset(uid, 63, "-"))
                return gs_error_set(err, GS_EINVAL, "invalid claim uid '%.63s'", uid);
        return 0;
}

static double now_ms(void)
{
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void spec_path(const struct gs_dra_prep *p, const char *uid, char *buf, size_t len)
{
        snprintf(buf, len, "%s/%s-claim-%s.json", p->cdi_dir, p->driver, uid);
}

int gs_dra_prep_open(struct gs_dra_prep *p, const char *plugin_dir, struct gs_error *err)
{
        if (gs_dra_ck_open(p, plugin_dir, err) < 0)
                return -1;
        unsigned caps = gs_caps_expand(GS_CAP_ALL & ~GS_CAP_COMPAT32);
        memset(&p->drv, 0, sizeof(p->drv));
        if (gs_driver_discover(p->ctx, p->dev->driver_version, gs_caps_drvopts(caps, 0), &p->drv, err) < 0) {
                if (err->stage == NULL)
                        err->stage = "detection";
                return -1;
        }
        p->have_drv = true;
        return 0;
}

void gs_dra_prep_close(struct gs_dra_prep *p)
{
        if (p->have_drv)
                gs_driver_info_release(&p->drv);
        p->have_drv = false;
        gs_dra_ck_close(p);
}

size_t gs_dra_prepared_count(const struct gs_dra_prep *p)
{
        return p->claims != NULL ? (size_t)json_object_object_length(p->claims) : 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Prepare                                                                                     */

static int fetch(struct gs_dra_prep *p, const char *ns, const char *name, struct gs_dra_claim *c, struct gs_error *err)
{
        char path[512];
        snprintf(path, sizeof(path), "/apis/resource.k8s.io/%s/namespaces/%s/resourceclaims/%s", p->api->res_version, ns, name);
        long status = 0;
        gs_autofree char *body = NULL;
        if (gs_kubeapi_call(p->api, "GET", path, NULL, &status, &body, err) < 0)
                return gs_error_wrap(err, "cannot read the claim %s/%s from the API server", ns, name);
        if (status == 404)
                return gs_error_set(err, GS_ENOTFOUND, "the claim %s/%s does not exist", ns, name);
        if (status != 200)
                return gs_error_set(err, GS_EINVAL, "the API server answered HTTP %ld for the claim %s/%s", status, ns,
                                    name);
        if (gs_dra_claim_parse(body, strlen(body), p->driver, c, err) < 0)
                return gs_error_wrap(err, "claim %s/%s", ns, name);
        return 0;
}

/* The node's books (issue 33): what the claim consumes of a device, added to what the other claims
 * prepared on this node hold of it (the shared checkpoint, read under its lock: racing claims and
 * other instances included), must fit the device. A device allocated whole, or a slice's memory or
 * compute not given (no limit), holds all of it (as the scheduler books a request's default). */
static int fits(struct gs_dra_prep *p, const struct gs_dra_claim *c, const struct gs_dra_result *r,
                const struct plan *pl, struct gs_error *err)
{
        const struct gs_gpu *g = &p->dev->gpus[pl->gpu];
        uint64_t total = pl->mig >= 0 ? g->migs[pl->mig].memory_total : g->memory_total, held_mem = 0;
        unsigned held_cs = 0;
        gs_dra_ck_held(p, r->device, c->uid, total, &held_mem, &held_cs);
        uint64_t mem = pl->slice && r->memory != 0 ? r->memory : total;
        unsigned cs = pl->slice && r->compute != 0 ? r->compute : 100;
        if (held_mem + mem <= total && held_cs + cs <= 100)
                return 0;
        char want[32], held[32], all[32];
        gs_k8s_quantity_format(mem, want, sizeof(want));
        gs_k8s_quantity_format(held_mem, held, sizeof(held));
        gs_k8s_quantity_format(total, all, sizeof(all));
        p->refusal = "Overcommitted";
        return gs_error_set(err, GS_EINVAL, "%s would be over-committed: the claim consumes %s and %u %%, the claims "
                            "prepared on this node hold %s and %u %% of its %s and 100 %%", r->device, want, cs, held,
                            held_cs, all);
}

static int check(struct gs_dra_prep *p, const struct gs_dra_claim *c, struct plan *pl, struct gs_error *err)
{
        for (size_t i = 0; i < c->n; i++) {
                const struct gs_dra_result *r = &c->r[i];
                if (strcmp(r->pool, p->node) != 0)
                        return gs_error_set(err, GS_EINVAL, "device %s of pool '%.63s' is not on this node (%s)", r->device,
                                            r->pool, p->node);
                if (gs_dra_device_lookup(p->dev, r->device, &pl[i].gpu, &pl[i].mig, err) < 0)
                        return -1;
                for (size_t k = 0; k < i; k++)
                        if (strcmp(c->r[k].device, r->device) == 0)
                                return gs_error_set(err, GS_EINVAL, "device %s is allocated twice in the claim", r->device);
                const struct gs_gpu *g = &p->dev->gpus[pl[i].gpu];
                if (p->health != NULL && (p->health->gpu_bad[pl[i].gpu] ||
                                          (pl[i].mig >= 0 && p->health->mig_bad[pl[i].gpu][pl[i].mig])))
                        return gs_error_set(err, GS_EINVAL, "device %s is unhealthy", r->device);
                pl[i].admin = r->admin;
                pl[i].slice = false;
                if (r->admin)
                        continue; /* no capacity of its own (dra/claim.h), never on the books */
                uint64_t total = pl[i].mig >= 0 ? g->migs[pl[i].mig].memory_total : g->memory_total;
                if (r->memory > total)
                        return gs_error_set(err, GS_EINVAL, "the claim consumes %llu bytes of %s, which has %llu",
                                            (unsigned long long)r->memory, r->device, (unsigned long long)total);
                /* a MIG device's share as a GPU's: its limits are the MIG device's (its instance's
                 * memory, compute in percent of it: result_device, label_args) */
                bool whole_mem = r->memory == 0 || r->memory == total, whole_compute = r->compute == 0 || r->compute == 100;
                pl[i].slice = !(whole_mem && whole_compute);
        }
        for (size_t i = 0; i < c->n; i++)
                if (!pl[i].admin && fits(p, c, &c->r[i], &pl[i], err) < 0)
                        return -1;
        return 0;
}

static json_object *str_list(const char *s)
{
        json_object *a = json_object_new_array();
        json_object_array_add(a, json_object_new_string(s));
        return a;
}

/* The slice's GPU (runtime/slice_gpus.h: its limits are that GPU's, beside the container's other
 * slice devices; its limits not in the env: slice_of, per_gpu) and labels for metrics, top and `slice set` (issue 31: never env, which the
 * container writes): --gpu, --k8s-claim, --k8s-namespace and --k8s-pod on its createRuntime hook's
 * command line, before the stage (its last argument); and --driver-root, the driver root as the
 * host sees it (root) where that is not /: the hook of a container of several slices reads the
 * host's GPUs for their order, and finds them where the spec's mounts come from, not where the
 * host config it reads (if any) says. */
static void label_args(json_object *dev, const struct gs_dra_claim *c, const char *uuid, const char *root)
{
        json_object *edits = NULL, *hooks = NULL;
        if (!json_object_object_get_ex(dev, "containerEdits", &edits))
                return;
        if (!json_object_object_get_ex(edits, "hooks", &hooks))
                return;
        for (size_t k = 0; k < json_object_array_length(hooks); k++) {
                json_object *h = json_object_array_get_idx(hooks, k), *name = NULL, *args = NULL;
                if (!json_object_object_get_ex(h, "hookName", &name) || strcmp(json_object_get_string(name), "createRuntime") != 0 ||
                    !json_object_object_get_ex(h, "args", &args) || json_object_array_length(args) < 2)
                        continue;
                const char *opt[] = {"--gpu=", "--k8s-claim=", "--k8s-namespace=", "--k8s-pod=", "--driver-root="},
                           *val[] = {uuid, c->name, c->ns, c->pod, strcmp(root, "/") != 0 ? root : ""};
                size_t n = json_object_array_length(args);
                json_object *out = json_object_new_array();
                for (size_t j = 0; j + 1 < n; j++)
                        json_object_array_add(out, json_object_get(json_object_array_get_idx(args, j)));
                for (size_t j = 0; j < 5; j++) {
                        char kv[PATH_MAX + 16];
                        if (val[j][0] == '\0')
                                continue;
                        snprintf(kv, sizeof(kv), "%s%s", opt[j], val[j]);
                        json_object_array_add(out, json_object_new_string(kv));
                }
                json_object_array_add(out, json_object_get(json_object_array_get_idx(args, n - 1)));
                json_object_object_add(h, "args", out);
        }
}

/* Result i's slice: its limits (the allocator's word) as src/cdi's slice device takes them, named
 * SLICE_NAME-<i> (each result its own, in the claim's one spec). */
static void slice_of(const struct gs_dra_prep *p, const struct gs_dra_result *r, const struct plan *pl, size_t i,
                     struct gs_cdi_slice *sl)
{
        memset(sl, 0, sizeof(*sl));
        snprintf(sl->name, sizeof(sl->name), "%s-%zu", SLICE_NAME, i);
        const struct gs_gpu *g = &p->dev->gpus[pl->gpu];
        if (r->memory != 0 && r->memory != (pl->mig >= 0 ? g->migs[pl->mig].memory_total : g->memory_total))
                gs_k8s_quantity_format(r->memory, sl->memory, sizeof(sl->memory));
        else
                snprintf(sl->memory, sizeof(sl->memory), "0"); /* compute only */
        sl->compute = r->compute < 100 ? r->compute : 0;
        gs_strlcpy(sl->priority, r->priority, sizeof(sl->priority));
        gs_strlcpy(sl->compute_mode, r->compute_mode, sizeof(sl->compute_mode));
        sl->gpus_only = true;
        sl->per_gpu = true; /* two claims' limits in one container: each its own GPU's (label_args: --gpu) */
}

static json_object *device_named(json_object *spec, const char *want)
{
        json_object *all = NULL, *d = NULL;
        json_object_object_get_ex(spec, "devices", &all);
        for (size_t k = 0; all != NULL && k < json_object_array_length(all); k++) {
                json_object *e = json_object_array_get_idx(all, k), *n = NULL;
                if (json_object_object_get_ex(e, "name", &n) && strcmp(json_object_get_string(n), want) == 0)
                        d = e;
        }
        return d;
}

/* Result i's CDI device: a copy of src/cdi's, named <claim uid>-<device>; a slice's that of its own
 * slice (SLICE_NAME-<i>: a claim may hold shares of several GPUs, each its own limits), its hook
 * naming its GPU. */
static json_object *result_device(struct gs_dra_prep *p, const struct gs_dra_claim *c, size_t i, const struct plan *pl,
                                  json_object *spec, struct gs_error *err)
{
        const struct gs_gpu *g = &p->dev->gpus[pl[i].gpu];
        char want[256], name[256];
        gs_cdi_device_name(GS_CDI_NAME_INDEX, g, pl[i].mig >= 0 ? &g->migs[pl[i].mig] : NULL, want, sizeof(want));
        if (pl[i].slice)
                snprintf(want + strlen(want), sizeof(want) - strlen(want), "-%s-%zu", SLICE_NAME, i);
        json_object *d = device_named(spec, want), *copy = NULL;
        if (d == NULL)
                gs_error_set(err, GS_ENOTFOUND, "no CDI device %s for %s", want, c->r[i].device);
        else if (json_object_deep_copy(d, &copy, NULL) != 0)
                gs_error_set(err, GS_ENOMEM, "out of memory");
        if (copy == NULL)
                return NULL;
        snprintf(name, sizeof(name), "%s-%s", c->uid, c->r[i].device);
        json_object_object_add(copy, "name", json_object_new_string(name));
        if (pl[i].slice) /* a MIG device's share: its limits keyed by the MIG device's UUID */
                label_args(copy, c, pl[i].mig >= 0 ? g->migs[pl[i].mig].uuid : g->uuid,
                           p->host_root != NULL && p->host_root[0] != '\0' ? p->host_root : gs_context_root(p->ctx));
        return copy;
}

/* An admin-access device's view of the slices (docs/kubernetes.md): the host's regions directory
 * bind-mounted read-only at GS_DRA_ADMIN_VIEW, after the rebase (the directory is the host's
 * config's, never under the driver root). Read-only: the regions are the tenants' accounting. */
static void admin_view(const struct gs_dra_prep *p, json_object *dev)
{
        static const char *const opts[] = {"ro", "nosuid", "nodev", "noexec", "bind"};
        json_object *edits = NULL, *mounts = NULL;
        if (!json_object_object_get_ex(dev, "containerEdits", &edits)) {
                edits = json_object_new_object();
                json_object_object_add(dev, "containerEdits", edits);
        }
        if (!json_object_object_get_ex(edits, "mounts", &mounts)) {
                mounts = json_object_new_array();
                json_object_object_add(edits, "mounts", mounts);
        }
        json_object *m = json_object_new_object(), *o = json_object_new_array();
        for (size_t k = 0; k < sizeof(opts) / sizeof(opts[0]); k++)
                json_object_array_add(o, json_object_new_string(opts[k]));
        json_object_object_add(m, "hostPath", json_object_new_string(p->regions_dir));
        json_object_object_add(m, "containerPath", json_object_new_string(GS_DRA_ADMIN_VIEW));
        json_object_object_add(m, "options", o);
        json_object_array_add(mounts, m);
}

/* The spec: src/cdi's (built once, a slice for each slice result), its devices replaced by the
 * claim's. */
static json_object *build_spec(struct gs_dra_prep *p, const struct gs_dra_claim *c, const struct plan *pl,
                               char *kind, size_t kindlen, struct gs_error *err)
{
        char vendor[300];
        snprintf(vendor, sizeof(vendor), "k8s.%s", p->driver);
        snprintf(kind, kindlen, "%s/claim", vendor);
        struct gs_cdi_slice sl[GS_DRA_MAX_RESULTS];
        size_t nsl = 0;
        for (size_t i = 0; i < c->n; i++)
                if (pl[i].slice)
                        slice_of(p, &c->r[i], &pl[i], i, &sl[nsl++]);
        struct gs_cdi_opts o = {.vendor = vendor, .class = "claim", .strategy = GS_CDI_NAME_INDEX,
                                .hook_path = p->hook_path, .slices = sl, .nslices = nsl};
        json_object *spec = gs_cdi_spec_build(p->ctx, p->dev, &p->drv, &o, err);
        if (spec == NULL)
                return NULL;
        json_object *mine = json_object_new_array();
        for (size_t i = 0; i < c->n; i++) {
                json_object *d = result_device(p, c, i, pl, spec, err);
                if (d == NULL)
                        goto fail;
                json_object_array_add(mine, d);
        }
        json_object_object_add(spec, "devices", mine);
        json_object_object_add(spec, "cdiVersion", json_object_new_string(gs_cdi_min_version(spec)));
        if (p->host_root != NULL && p->host_root[0] != '\0' && strcmp(p->host_root, gs_context_root(p->ctx)) != 0 &&
            gs_k8s_cdi_rebase(spec, gs_context_root(p->ctx), p->host_root, err) < 0) {
                json_object_put(spec);
                return NULL;
        }
        for (size_t i = 0; i < c->n; i++)
                if (pl[i].admin)
                        admin_view(p, json_object_array_get_idx(mine, i));
        return spec;
fail:
        json_object_put(mine);
        json_object_put(spec);
        return NULL;
}

/* The answer of a claim prepared before (or before a restart), or NULL. Its spec is written
 * without an fsync (transient; /var/run/cdi is a tmpfs on a node): one a crash of the machine
 * lost or left empty makes the claim prepared anew. */
static json_object *prepared_before(struct gs_dra_prep *p, const char *uid)
{
        json_object *have = NULL, *devs = NULL;
        char path[PATH_MAX];
        struct stat st;
        if (!json_object_object_get_ex(p->claims, uid, &have) || !json_object_object_get_ex(have, "devices", &devs) ||
            json_object_object_get_ex(have, "rebuilt", NULL))
                return NULL; /* (an entry rebuilt from its spec: prepared anew, from the API server) */
        spec_path(p, uid, path, sizeof(path));
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
                return devs;
        gs_log_warn("claim %s: its CDI spec %s is gone or empty: preparing it again", uid, path);
        json_object_object_del(p->claims, uid);
        return NULL;
}

static json_object *prepare_locked(struct gs_dra_prep *p, const struct gs_dra_claim *c, struct gs_error *err)
{
        json_object *have = prepared_before(p, c->uid);
        if (have != NULL)
                return have;
        struct plan pl[GS_DRA_MAX_RESULTS];
        char kind[512], path[PATH_MAX];
        if (check_ref(c->ns, c->name, c->uid, err) < 0 || check(p, c, pl, err) < 0)
                return NULL;
        double t0 = now_ms();
        json_object *spec = build_spec(p, c, pl, kind, sizeof(kind), err);
        if (spec == NULL)
                return NULL;
        spec_path(p, c->uid, path, sizeof(path));
        gs_autofree char *text = gs_cdi_spec_format(spec, GS_CDI_JSON, err);
        json_object_put(spec);
        double t1 = now_ms();
        p->took.build = t1 - t0;
        if (text == NULL || gs_cdi_write_file_flags(path, text, GS_CDI_WRITE_NOSYNC, err) < 0)
                return gs_error_wrap(err, "CDI spec %s", path), NULL;
        if (gs_dra_ck_ref_write(p, c, err) < 0) {
                unlink(path);
                return NULL;
        }
        double t2 = now_ms();
        p->took.spec = t2 - t1;
        json_object *entry = json_object_new_object(), *devs = json_object_new_array();
        json_object_object_add(entry, "namespace", json_object_new_string(c->ns));
        json_object_object_add(entry, "name", json_object_new_string(c->name));
        json_object_object_add(entry, "spec", json_object_new_string(path));
        for (size_t i = 0; i < c->n; i++) {
                json_object *d = json_object_new_object();
                char cdi[1024];
                snprintf(cdi, sizeof(cdi), "%s=%s-%s", kind, c->uid, c->r[i].device);
                json_object_object_add(d, "requests", str_list(c->r[i].request));
                json_object_object_add(d, "pool", json_object_new_string(c->r[i].pool));
                json_object_object_add(d, "device", json_object_new_string(c->r[i].device));
                if (c->r[i].share_id[0] != '\0')
                        json_object_object_add(d, "share_id", json_object_new_string(c->r[i].share_id));
                json_object_object_add(d, "cdi", str_list(cdi));
                if (pl[i].admin)
                        json_object_object_add(d, "admin", json_object_new_boolean(1));
                if (pl[i].slice) {
                        json_object_object_add(d, "memory", json_object_new_int64((int64_t)c->r[i].memory));
                        json_object_object_add(d, "compute", json_object_new_int(c->r[i].compute));
                }
                json_object_array_add(devs, d);
        }
        json_object_object_add(entry, "devices", devs);
        json_object_object_add(p->claims, c->uid, entry);
        if (gs_dra_ck_save(p, err) < 0) {
                json_object_object_del(p->claims, c->uid);
                unlink(path);
                gs_dra_ck_ref_remove(p, c->uid);
                return NULL;
        }
        p->took.checkpoint = now_ms() - t2;
        return devs;
}

json_object *gs_dra_prepare_claim(struct gs_dra_prep *p, const struct gs_dra_claim *c, struct gs_error *err)
{
        if (gs_dra_ck_begin(p, err) < 0) /* (read again: another instance may have prepared on the same GPU) */
                return NULL;
        json_object *out = prepare_locked(p, c, err);
        gs_dra_ck_end(p);
        return out;
}

/* The outcome on the claim's status.devices (best effort: a failure is in p->status_note). */
static void report(struct gs_dra_prep *p, const struct gs_dra_claim *c, bool ready, const char *reason,
                   const char *message)
{
        struct gs_error e = {0};
        if (gs_dra_status_write(p->api, p->driver, c, ready, reason, message, &e) == 0)
                snprintf(p->status_note, sizeof(p->status_note), "the claim's status says %s (%s)",
                         ready ? "Ready" : "not Ready", reason);
        else
                snprintf(p->status_note, sizeof(p->status_note), "the claim's status not written: %.200s", e.msg);
        gs_log_info("claim %s/%s: %s", c->ns, c->name, p->status_note);
}

json_object *gs_dra_prepare(struct gs_dra_prep *p, const char *ns, const char *name, const char *uid,
                            struct gs_error *err)
{
        p->status_note[0] = '\0';
        p->refusal = NULL;
        memset(&p->took, 0, sizeof(p->took));
        if (check_ref(ns, name, uid, err) < 0)
                return NULL;
        if (gs_dra_ck_begin(p, err) < 0)
                return NULL;
        json_object *devs = prepared_before(p, uid);
        gs_dra_ck_end(p);
        if (devs != NULL)
                return devs; /* the same answer */
        struct gs_dra_claim *c = calloc(1, sizeof(*c));
        if (c == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory"), NULL;
        json_object *out = NULL;
        double t0 = now_ms();
        int got = fetch(p, ns, name, c, err);
        p->took.api = now_ms() - t0;
        /* the claim the kubelet means (the same uid: never one made anew under its name) */
        bool same = strcmp(c->uid, uid) == 0 && strcmp(c->ns, ns) == 0 && strcmp(c->name, name) == 0;
        if (got == 0 && !same) {
                gs_error_set(err, GS_EINVAL, "the claim %s/%s has uid %s, not %s (deleted and made anew?)", ns, name,
                             c->uid, uid);
        } else if (got == 0) {
                out = gs_dra_prepare_claim(p, c, err);
                if (out == NULL)
                        report(p, c, false, p->refusal != NULL ? p->refusal : "PrepareFailed", err->msg);
                else if (c->error_reported)
                        report(p, c, true, "Prepared", "prepared");
        } else if (same && c->n > 0) {
                /* read, and wrong (or asking more than its DeviceClass allows): its devices say why */
                report(p, c, false, c->beyond_class ? "ExceedsDeviceClass" : "InvalidClaim", err->msg);
        }
        free(c);
        return out;
}

int gs_dra_unprepare(struct gs_dra_prep *p, const char *uid, struct gs_error *err)
{
        char path[PATH_MAX];
        if (!charset(uid, 63, "-"))
                return gs_error_set(err, GS_EINVAL, "invalid claim uid '%.63s'", uid);
        spec_path(p, uid, path, sizeof(path)); /* only ever our own name: never a path from the checkpoint */
        if (gs_dra_ck_begin(p, err) < 0)
                return -1;
        int rv = 0;
        if (unlink(path) < 0 && errno != ENOENT)
                rv = gs_error_sys(err, "remove %s", path);
        else {
                gs_dra_ck_ref_remove(p, uid);
                if (json_object_object_get_ex(p->claims, uid, NULL)) {
                        json_object_object_del(p->claims, uid);
                        rv = gs_dra_ck_save(p, err);
                }
        }
        gs_dra_ck_end(p);
        return rv;
}

/* Is the claim gone from the API server (404, or its name holds a claim made anew)? Errors: no. */
static bool claim_gone(struct gs_dra_prep *p, const char *ns, const char *name, const char *uid)
{
        char path[512];
        long status = 0;
        gs_autofree char *body = NULL;
        struct gs_error err = {0};
        snprintf(path, sizeof(path), "/apis/resource.k8s.io/%s/namespaces/%s/resourceclaims/%s", p->api->res_version, ns, name);
        unsigned attempts = p->api->attempts;
        p->api->attempts = 1;
        int rc = gs_kubeapi_call(p->api, "GET", path, NULL, &status, &body, &err);
        p->api->attempts = attempts;
        if (rc < 0 || (status != 200 && status != 404))
                return false;
        if (status == 404)
                return true;
        json_object *o = body != NULL ? json_tokener_parse(body) : NULL, *meta = NULL, *u = NULL;
        bool gone = o != NULL && json_object_object_get_ex(o, "metadata", &meta) &&
                    json_object_object_get_ex(meta, "uid", &u) && strcmp(json_object_get_string(u), uid) != 0;
        json_object_put(o);
        return gone;
}

size_t gs_dra_sweep_stale(struct gs_dra_prep *p)
{
        struct gs_error err = {0};
        if (gs_dra_ck_begin(p, &err) < 0)
                return 0;
        json_object *look = json_object_new_array(); /* [[uid, ns, name]]: asked without the lock held */
        json_object_object_foreach(p->claims, uid, entry) {
                json_object *ns = NULL, *name = NULL, *t = json_object_new_array();
                if (!json_object_object_get_ex(entry, "namespace", &ns) || !json_object_object_get_ex(entry, "name", &name) ||
                    check_ref(json_object_get_string(ns), json_object_get_string(name), uid, &err) < 0) {
                        json_object_put(t);
                        continue;
                }
                json_object_array_add(t, json_object_new_string(uid));
                json_object_array_add(t, json_object_get(ns));
                json_object_array_add(t, json_object_get(name));
                json_object_array_add(look, t);
        }
        gs_dra_ck_end(p);
        size_t removed = 0;
        for (size_t i = 0; i < json_object_array_length(look); i++) {
                json_object *t = json_object_array_get_idx(look, i);
                const char *u = json_object_get_string(json_object_array_get_idx(t, 0)),
                           *ns = json_object_get_string(json_object_array_get_idx(t, 1)),
                           *name = json_object_get_string(json_object_array_get_idx(t, 2));
                if (!claim_gone(p, ns, name, u))
                        continue;
                if (gs_dra_unprepare(p, u, &err) < 0) {
                        gs_log_warn("stale claim %s/%s (%s): %s", ns, name, u, err.msg);
                        continue;
                }
                gs_log_info("claim %s/%s (%s) is gone from the API server: unprepared (its spec removed)", ns, name, u);
                removed++;
        }
        json_object_put(look);
        return removed;
}
