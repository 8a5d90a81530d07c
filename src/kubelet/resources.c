/* The host config's [device-plugin] section applied to the GPUs found (see resources.h). */
#include "kubelet/resources.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdi/cdi.h"
#include "common/error.h"
#include "common/log.h"
#include "common/strutil.h"
#include "vgpu/config.h"

int gs_k8s_parse_alloc_mode(const char *s, enum gs_k8s_alloc_mode *out, struct gs_error *err)
{
        static const struct {
                const char *name;
                enum gs_k8s_alloc_mode mode;
        } modes[] = {{"cdi", GS_K8S_ALLOC_CDI}, {"cdi-annotations", GS_K8S_ALLOC_CDI_ANNOTATIONS}, {"env", GS_K8S_ALLOC_ENV},
                     {"volume-mounts", GS_K8S_ALLOC_VOLUME_MOUNTS}};
        for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
                if (strcmp(s, modes[i].name) == 0) {
                        *out = modes[i].mode;
                        return 0;
                }
        return gs_error_set(err, GS_EINVAL, "device-plugin.allocate: '%s' is not cdi, cdi-annotations, env or volume-mounts",
                            s);
}

void gs_k8s_format_size(uint64_t bytes, char *buf, size_t len)
{
        if (bytes != 0 && bytes % (1ull << 30) == 0)
                snprintf(buf, len, "%lluGi", (unsigned long long)(bytes >> 30));
        else if (bytes != 0 && bytes % (1ull << 20) == 0)
                snprintf(buf, len, "%lluMi", (unsigned long long)(bytes >> 20));
        else
                snprintf(buf, len, "%llu", (unsigned long long)bytes);
}

static bool alnum(char c)
{
        return isascii((unsigned char)c) && isalnum((unsigned char)c);
}

/* A Kubernetes extended resource name: DOMAIN/NAME, NAME a qualified name of at most 63
 * characters ([A-Za-z0-9] at both ends, [-A-Za-z0-9_.] between), DOMAIN a DNS subdomain. */
static int validate_resource(const char *key, const char *r, struct gs_error *err)
{
        const char *slash = strchr(r, '/');
        if (slash == NULL || slash == r || strchr(slash + 1, '/') != NULL)
                return gs_error_set(err, GS_EINVAL, "%s: '%s' is not DOMAIN/NAME", key, r);
        for (const char *p = r; p < slash; p++)
                if (!(alnum(*p) && !isupper((unsigned char)*p)) && *p != '-' && *p != '.')
                        return gs_error_set(err, GS_EINVAL, "%s: '%s': the domain must be a DNS subdomain", key, r);
        const char *n = slash + 1;
        size_t len = strlen(n);
        if (len == 0 || len > 63 || !alnum(n[0]) || !alnum(n[len - 1]))
                return gs_error_set(err, GS_EINVAL, "%s: '%s': the name must be 1..63 characters, a letter or digit at "
                                    "both ends", key, r);
        for (size_t i = 0; i < len; i++)
                if (!alnum(n[i]) && strchr("-_.", n[i]) == NULL)
                        return gs_error_set(err, GS_EINVAL, "%s: '%s': invalid character '%c'", key, r, n[i]);
        return 0;
}

static struct gs_k8s_resource *add_resource(struct gs_k8s_plan *p, const char *name, const char *key,
                                            struct gs_error *err)
{
        if (validate_resource(key, name, err) < 0)
                return NULL;
        for (size_t i = 0; i < p->nres; i++)
                if (strcmp(p->res[i].name, name) == 0) {
                        gs_error_set(err, GS_EINVAL, "%s: resource %s is offered twice", key, name);
                        return NULL;
                }
        if (p->nres == GS_K8S_MAX_RESOURCES) {
                gs_error_set(err, GS_EINVAL, "%s: too many resources", key);
                return NULL;
        }
        struct gs_k8s_resource *r = &p->res[p->nres++];
        memset(r, 0, sizeof(*r));
        gs_strlcpy(r->name, name, sizeof(r->name));
        snprintf(r->endpoint, sizeof(r->endpoint), "gpuslice-%s.sock", name);
        for (char *c = r->endpoint; *c != '\0'; c++)
                if (*c == '/')
                        *c = '_';
        int n = snprintf(r->env_key, sizeof(r->env_key), "GPUSLICE_K8S_DEVICES_");
        for (const char *c = name; *c != '\0' && (size_t)n + 1 < sizeof(r->env_key); c++)
                r->env_key[n++] = alnum(*c) ? (char)toupper((unsigned char)*c) : '_';
        r->env_key[n] = '\0';
        return r;
}

static int add_device(struct gs_k8s_resource *r, unsigned gpu, int mig, unsigned share, const char *id,
                      struct gs_error *err)
{
        if (strlen(id) >= GS_K8S_MAX_ID)
                return gs_error_set(err, GS_EINVAL, "device ID '%s' is longer than %d characters", id, GS_K8S_MAX_ID - 1);
        struct gs_k8s_device *d = realloc(r->devs, (r->ndevs + 1) * sizeof(*d));
        if (d == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        r->devs = d;
        d = &r->devs[r->ndevs++];
        memset(d, 0, sizeof(*d));
        gs_strlcpy(d->id, id, sizeof(d->id));
        d->gpu = gpu;
        d->mig = mig;
        d->share = share;
        return 0;
}

/* Shares of `g` for a share of `memory` bytes and `compute` percent (0: not limited by it). */
static unsigned shares_for(const struct gs_gpu *g, uint64_t memory, unsigned compute, unsigned cap)
{
        uint64_t n = cap;
        if (memory != 0 && g->memory_total / memory < n)
                n = g->memory_total / memory;
        if (compute != 0 && 100 / compute < n)
                n = 100 / compute;
        return (unsigned)n;
}

/* Every GPU not in MIG mode as `per` shares (per == 0: from the share's size). */
static int add_shares(const struct gs_k8s_plan *p, struct gs_k8s_resource *r, unsigned per, struct gs_error *err)
{
        char id[GS_K8S_MAX_ID + 16];
        for (unsigned i = 0; i < p->dev->ngpus; i++) {
                const struct gs_gpu *g = &p->dev->gpus[i];
                if (g->mig_enabled)
                        continue;
                unsigned n = per != 0 ? per : shares_for(g, r->memory, r->compute, GS_K8S_MAX_SHARES);
                if (n == 0)
                        gs_log_warn("%s: GPU %u (%s) is smaller than one share: not offered", r->name, i, g->uuid);
                for (unsigned s = 0; s < n; s++) {
                        snprintf(id, sizeof(id), "%s::%u", g->uuid, s);
                        if (add_device(r, i, -1, s, id, err) < 0)
                                return -1;
                }
        }
        return 0;
}

/* The whole-GPU resource: GPUs and MIG devices, or replicas of the GPUs. */
static int plan_whole(const struct gs_hostconfig_dp *cfg, struct gs_k8s_plan *p, struct gs_error *err)
{
        if (cfg->resource[0] == '\0')
                return 0;
        struct gs_k8s_resource *r = add_resource(p, cfg->resource, "device-plugin.resource", err);
        if (r == NULL)
                return -1;
        if (cfg->replica_memory[0] != '\0' && gs_vgpu_parse_size(cfg->replica_memory, &r->memory) < 0)
                return gs_error_set(err, GS_EINVAL, "device-plugin.replica-memory: invalid size '%s'", cfg->replica_memory);
        r->compute = cfg->replica_compute < 100 ? cfg->replica_compute : 0;
        if (cfg->replica_priority[0] != '\0') {
                int prio = gs_vgpu_parse_priority(cfg->replica_priority, false);
                if (prio < 0)
                        return gs_error_set(err, GS_EINVAL, "device-plugin.replica-priority: invalid priority '%s' (high, "
                                            "normal or low)", cfg->replica_priority);
                if (cfg->replica_compute == 0)
                        return gs_error_set(err, GS_EINVAL, "device-plugin.replica-priority needs replica-compute (a "
                                            "priority orders compute-limited slices)");
                snprintf(r->priority, sizeof(r->priority), "%s", gs_vgpu_priority_name(prio));
        }
        if (cfg->replicas > 1) {
                r->shared = true;
                if (r->memory != 0 || r->compute != 0)
                        snprintf(r->cdi_slice, sizeof(r->cdi_slice), "k8s-replica");
                if (add_shares(p, r, cfg->replicas, err) < 0)
                        return -1;
        } else if (r->memory != 0 || r->compute != 0) {
                return gs_error_set(err, GS_EINVAL, "device-plugin.replica-memory / replica-compute need replicas > 1");
        }
        for (unsigned i = 0; i < p->dev->ngpus; i++) {
                const struct gs_gpu *g = &p->dev->gpus[i];
                if (!g->mig_enabled && !r->shared && add_device(r, i, -1, 0, g->uuid, err) < 0)
                        return -1;
                for (unsigned j = 0; g->mig_enabled && j < g->nmigs; j++)
                        if (add_device(r, i, (int)j, 0, g->migs[j].uuid, err) < 0)
                                return -1;
        }
        return 0;
}

static int plan_slices(const struct gs_hostconfig_dp *cfg, struct gs_k8s_plan *p, struct gs_error *err)
{
        for (unsigned s = 0; s < cfg->slices.n; s++) {
                struct gs_cdi_slice sl;
                char name[GS_K8S_MAX_NAME];
                if (gs_cdi_parse_slice(cfg->slices.v[s], &sl, err) < 0)
                        return gs_error_wrap(err, "device-plugin.slices");
                if (!alnum(sl.name[0]))
                        return gs_error_set(err, GS_EINVAL, "device-plugin.slices: '%s' must start with a letter or digit",
                                            sl.name);
                snprintf(name, sizeof(name), "%s/%s", cfg->slice_domain, sl.name);
                struct gs_k8s_resource *r = add_resource(p, name, "device-plugin.slices", err);
                if (r == NULL)
                        return -1;
                r->shared = true;
                gs_vgpu_parse_size(sl.memory, &r->memory);
                r->compute = sl.compute < 100 ? sl.compute : 0;
                gs_strlcpy(r->priority, sl.priority, sizeof(r->priority));
                gs_strlcpy(r->cdi_slice, sl.name, sizeof(r->cdi_slice));
                for (size_t i = 0; i + 1 < p->nres; i++)
                        if (strcmp(p->res[i].cdi_slice, r->cdi_slice) == 0)
                                return gs_error_set(err, GS_EINVAL, "device-plugin.slices: the name '%s' is taken",
                                                    sl.name);
                if (add_shares(p, r, 0, err) < 0)
                        return -1;
        }
        return 0;
}

static int plan_cdi_kind(const struct gs_hostconfig_dp *cfg, struct gs_k8s_plan *p, struct gs_error *err)
{
        const char *slash = strchr(cfg->cdi_kind, '/');
        if (slash == NULL || strchr(slash + 1, '/') != NULL ||
            (size_t)(slash - cfg->cdi_kind) >= sizeof(p->cdi_vendor) || strlen(slash + 1) >= sizeof(p->cdi_class))
                return gs_error_set(err, GS_EINVAL, "device-plugin.cdi-kind: '%s' is not VENDOR/CLASS", cfg->cdi_kind);
        memcpy(p->cdi_vendor, cfg->cdi_kind, (size_t)(slash - cfg->cdi_kind));
        p->cdi_vendor[slash - cfg->cdi_kind] = '\0';
        gs_strlcpy(p->cdi_class, slash + 1, sizeof(p->cdi_class));
        if (gs_cdi_validate_vendor(p->cdi_vendor, err) < 0 || gs_cdi_validate_class(p->cdi_class, err) < 0)
                return gs_error_wrap(err, "device-plugin.cdi-kind");
        return 0;
}

int gs_k8s_plan_build(const struct gs_hostconfig_dp *cfg, const struct gs_device_info *dev, struct gs_k8s_plan *plan,
                      struct gs_error *err)
{
        memset(plan, 0, sizeof(*plan));
        plan->dev = dev;
        for (unsigned i = 0; i < GS_MAX_GPUS; i++)
                plan->topo.numa[i] = -1;
        if (gs_k8s_parse_alloc_mode(cfg->allocate, &plan->mode, err) < 0 || plan_cdi_kind(cfg, plan, err) < 0 ||
            plan_whole(cfg, plan, err) < 0 || plan_slices(cfg, plan, err) < 0)
                goto fail;
        size_t ndevs = 0;
        for (size_t i = 0; i < plan->nres; i++)
                ndevs += plan->res[i].ndevs;
        if (ndevs == 0) {
                gs_error_set(err, GS_ENOTFOUND, "nothing to offer: %u GPU(s) and no resource with a device",
                             dev->ngpus);
                goto fail;
        }
        return 0;
fail:
        gs_k8s_plan_release(plan);
        return -1;
}

void gs_k8s_plan_release(struct gs_k8s_plan *plan)
{
        for (size_t i = 0; i < plan->nres; i++) {
                free(plan->res[i].devs);
                plan->res[i].devs = NULL;
                plan->res[i].ndevs = 0;
        }
        plan->nres = 0;
}

const struct gs_k8s_device *gs_k8s_find(const struct gs_k8s_resource *r, const char *id)
{
        for (size_t i = 0; i < r->ndevs; i++)
                if (strcmp(r->devs[i].id, id) == 0)
                        return &r->devs[i];
        return NULL;
}

int gs_k8s_slice_device(const struct gs_k8s_resource *r, unsigned k, char *buf, size_t len)
{
        int n = k > 1 ? snprintf(buf, len, "%s-x%u", r->cdi_slice, k) : snprintf(buf, len, "%s", r->cdi_slice);
        return n < 0 || (size_t)n >= len ? -1 : 0;
}

unsigned gs_k8s_shares_of(const struct gs_k8s_resource *r, unsigned gpu)
{
        unsigned n = 0;
        for (size_t i = 0; r->shared && i < r->ndevs; i++)
                n += r->devs[i].gpu == gpu;
        return n;
}
