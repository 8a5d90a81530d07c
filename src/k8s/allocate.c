/* Allocate's answer for one container (see allocate.h). */
#include "k8s/allocate.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cdi/cdi.h"
#include "common/error.h"
#include "common/strutil.h"
#include "runtime/oci.h"
#include "runtime/request.h"

/* A zeroed, initialised message of type T in arena a (NULL when out of memory). */
#define NEW(a, T, INIT)                                                                            \
        ({                                                                                         \
                T *p_ = gs_k8s_arena_alloc((a), sizeof(T));                                        \
                if (p_ != NULL) {                                                                  \
                        T i_ = INIT;                                                               \
                        *p_ = i_;                                                                  \
                }                                                                                  \
                p_;                                                                                \
        })

#define MAX_ENVS (4 + 2 * GS_SLICE_MAX_DEVICES)

struct group {
        unsigned gpu;
        int mig;
        unsigned k; /* shares (1 for a whole device) */
};

struct answer {
        struct gs_k8s_arena *a;
        V1beta1__ContainerAllocateResponse *out;
        V1beta1__ContainerAllocateResponse__EnvsEntry *envs[MAX_ENVS];
};

static int cmp_group(const void *x, const void *y)
{
        const struct group *a = x, *b = y;
        if (a->gpu != b->gpu)
                return a->gpu < b->gpu ? -1 : 1;
        return (a->mig > b->mig) - (a->mig < b->mig);
}

/* The IDs as groups (sorted); -1 for an unknown, repeated or unhealthy device. */
static int resolve(const struct gs_k8s_alloc_ctx *x, const struct gs_k8s_resource *r, char *const *ids, size_t nids,
                   struct group *g, size_t *ng, struct gs_error *err)
{
        *ng = 0;
        for (size_t i = 0; i < nids; i++) {
                const struct gs_k8s_device *d = gs_k8s_find(r, ids[i]);
                if (d == NULL)
                        return gs_error_set(err, GS_ENOTFOUND, "unknown device ID '%.80s' for %s", ids[i], r->name);
                for (size_t j = 0; j < i; j++)
                        if (strcmp(ids[i], ids[j]) == 0)
                                return gs_error_set(err, GS_EINVAL, "device ID '%s' is given twice", ids[i]);
                if (!gs_k8s_device_healthy(x->health, d))
                        return gs_error_set(err, GS_EINVAL, "device %s is unhealthy", ids[i]);
                size_t j = 0;
                while (j < *ng && !(g[j].gpu == d->gpu && g[j].mig == d->mig))
                        j++;
                if (j == *ng)
                        g[(*ng)++] = (struct group){d->gpu, d->mig, 0};
                g[j].k++;
        }
        qsort(g, *ng, sizeof(*g), cmp_group);
        return 0;
}

static int env(struct answer *an, const char *key, const char *value)
{
        V1beta1__ContainerAllocateResponse *o = an->out;
        if (o->n_envs == MAX_ENVS)
                return -1;
        V1beta1__ContainerAllocateResponse__EnvsEntry *e =
                NEW(an->a, V1beta1__ContainerAllocateResponse__EnvsEntry, V1BETA1__CONTAINER_ALLOCATE_RESPONSE__ENVS_ENTRY__INIT);
        if (e == NULL)
                return -1;
        e->key = gs_k8s_arena_strdup(an->a, key);
        e->value = gs_k8s_arena_strdup(an->a, value);
        an->envs[o->n_envs++] = e;
        o->envs = an->envs;
        return e->key != NULL && e->value != NULL ? 0 : -1;
}

/* A read-only mount of /dev/null onto GS_OCI_DEVICES_DIR/<name> (room for `cap` in the answer). */
static int null_mount(struct answer *an, const char *name, size_t cap)
{
        V1beta1__ContainerAllocateResponse *o = an->out;
        if (o->mounts == NULL && (o->mounts = gs_k8s_arena_alloc(an->a, cap * sizeof(*o->mounts))) == NULL)
                return -1;
        V1beta1__Mount *m = NEW(an->a, V1beta1__Mount, V1BETA1__MOUNT__INIT);
        if (m == NULL || (m->container_path = gs_k8s_arena_printf(an->a, "%s/%s", GS_OCI_DEVICES_DIR, name)) == NULL ||
            (m->host_path = gs_k8s_arena_strdup(an->a, "/dev/null")) == NULL)
                return -1;
        m->read_only = 1;
        o->mounts[o->n_mounts++] = m;
        return 0;
}

/* The mounts of a volume-mounts answer: its devices and its slice's values. */
#define MAX_MOUNTS(ng) ((ng) + GS_REQUEST_SLICE_ARGS)

/* One slice value of a hook answer: env KEY=VALUE (env answers), or the mount slice/OPT=VALUE
 * (volume-mounts answers: only the kubelet makes those, so the hook takes them as the
 * allocator's word, runtime/request.h). */
static int slice_put(struct answer *an, bool mounts, size_t ng, const char *key, const char *opt, const char *value)
{
        if (!mounts)
                return env(an, key, value);
        char name[128];
        snprintf(name, sizeof(name), GS_REQUEST_SLICE_MOUNTS "%s=%s", opt, value);
        return null_mount(an, name, MAX_MOUNTS(ng));
}

/* One share's limits times k. */
static void slice_values(const struct gs_k8s_resource *r, unsigned k, char *mem, size_t mlen, char *cpu, size_t clen)
{
        mem[0] = cpu[0] = '\0';
        if (r->memory != 0)
                gs_k8s_format_size(r->memory * k, mem, mlen);
        if (r->compute != 0)
                snprintf(cpu, clen, "%u", r->compute * k < 100 ? r->compute * k : 100);
}

/* Is this group a slice (shares with limits)? MIG devices never are. */
static bool limited(const struct gs_k8s_resource *r, const struct group *g)
{
        return r->shared && g->mig < 0 && (r->memory != 0 || r->compute != 0);
}

/* The slice of an env or volume-mounts answer (the hook reads it): global values when every group
 * has the same shares, else per device (i: the group's place among all of the container's
 * devices); env answers as env (GPUSLICE_MEMORY_LIMIT[_<i>], ...), volume-mounts answers as slice
 * mounts (slice/memory[-<i>]=..., the allocator's word). A CDI answer has none: its slice devices
 * carry the limits in their hooks' args. */
static int slice_env(const struct gs_k8s_alloc_ctx *x, const struct gs_k8s_resource *r, const struct group *g,
                     size_t ng, struct answer *an, struct gs_error *err)
{
        size_t nlim = 0;
        bool uniform = true;
        for (size_t i = 0; i < ng; i++) {
                nlim += limited(r, &g[i]);
                uniform &= g[i].k == g[0].k;
        }
        bool cdi = x->plan->mode == GS_K8S_ALLOC_CDI || x->plan->mode == GS_K8S_ALLOC_CDI_ANNOTATIONS;
        bool mounts = x->plan->mode == GS_K8S_ALLOC_VOLUME_MOUNTS;
        if (nlim == 0 || cdi)
                return 0;
        uniform &= nlim == ng;
        char mem[32], cpu[16], key[64], opt[32];
        if (r->priority[0] != '\0' && slice_put(an, mounts, ng, "GPUSLICE_PRIORITY", "priority", r->priority) < 0)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        if (uniform) {
                slice_values(r, g[0].k, mem, sizeof(mem), cpu, sizeof(cpu));
                if ((mem[0] && slice_put(an, mounts, ng, "GPUSLICE_MEMORY_LIMIT", "memory", mem) < 0) ||
                    (cpu[0] && slice_put(an, mounts, ng, "GPUSLICE_COMPUTE_LIMIT", "compute-share", cpu) < 0))
                        return gs_error_set(err, GS_ENOMEM, "out of memory");
                return 0;
        }
        if (ng > GS_SLICE_MAX_DEVICES)
                return gs_error_set(err, GS_EINVAL, "shares on %zu GPUs: per-device limits cover at most %d", ng,
                                    GS_SLICE_MAX_DEVICES);
        for (size_t i = 0; i < ng; i++) {
                if (!limited(r, &g[i]))
                        continue;
                slice_values(r, g[i].k, mem, sizeof(mem), cpu, sizeof(cpu));
                snprintf(key, sizeof(key), "GPUSLICE_MEMORY_LIMIT_%zu", i);
                snprintf(opt, sizeof(opt), "memory-%zu", i);
                if (mem[0] && slice_put(an, mounts, ng, key, opt, mem) < 0)
                        return gs_error_set(err, GS_ENOMEM, "out of memory");
                snprintf(key, sizeof(key), "GPUSLICE_COMPUTE_LIMIT_%zu", i);
                snprintf(opt, sizeof(opt), "compute-share-%zu", i);
                if (cpu[0] && slice_put(an, mounts, ng, key, opt, cpu) < 0)
                        return gs_error_set(err, GS_ENOMEM, "out of memory");
        }
        return 0;
}

/* The share count of the CDI slice devices of a CDI answer: a container's slice is made by the
 * first slice hook that runs, with that device's limits for every GPU of the container, so the
 * devices all name the fewest shares any limited group has (never more than a GPU was given). */
static unsigned cdi_shares(const struct gs_k8s_resource *r, const struct group *g, size_t ng)
{
        unsigned k = 0;
        for (size_t i = 0; i < ng; i++)
                if (limited(r, &g[i]) && (k == 0 || g[i].k < k))
                        k = g[i].k;
        return k;
}

static int cdi_names(const struct gs_k8s_alloc_ctx *x, const struct gs_k8s_resource *r, const struct group *g,
                     size_t ng, struct answer *an, struct gs_error *err)
{
        const struct gs_k8s_plan *p = x->plan;
        V1beta1__ContainerAllocateResponse *o = an->out;
        char *names = gs_k8s_arena_alloc(an->a, ng * 1024 + 1); /* kind (< 320) + name (< 320) + , */
        V1beta1__CDIDevice **devs = gs_k8s_arena_alloc(an->a, ng * sizeof(*devs));
        if (names == NULL || devs == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        char slice_dev[GS_K8S_MAX_NAME] = "";
        if (cdi_shares(r, g, ng) > 0 && gs_k8s_slice_device(r, cdi_shares(r, g, ng), slice_dev, sizeof(slice_dev)) < 0)
                return gs_error_set(err, GS_EINVAL, "slice name too long: %s", r->cdi_slice);
        for (size_t i = 0; i < ng; i++) {
                const struct gs_gpu *gpu = &p->dev->gpus[g[i].gpu];
                char dev[GS_K8S_MAX_NAME];
                gs_cdi_device_name(GS_CDI_NAME_INDEX, gpu, g[i].mig >= 0 ? &gpu->migs[g[i].mig] : NULL, dev, sizeof(dev));
                /* no slice device for MIG, nor for a resource without limits */
                const char *slice = g[i].mig < 0 && limited(r, &g[i]) ? slice_dev : "";
                char *q = gs_k8s_arena_printf(an->a, "%s/%s=%s%s%s", p->cdi_vendor, p->cdi_class, dev,
                                              slice[0] ? "-" : "", slice);
                devs[i] = NEW(an->a, V1beta1__CDIDevice, V1BETA1__CDIDEVICE__INIT);
                if (q == NULL || devs[i] == NULL)
                        return gs_error_set(err, GS_ENOMEM, "out of memory");
                devs[i]->name = q;
                if (i > 0)
                        strcat(names, ",");
                strcat(names, q);
        }
        if (p->mode == GS_K8S_ALLOC_CDI) {
                o->cdi_devices = devs;
                o->n_cdi_devices = ng;
                return 0;
        }
        /* cdi.k8s.io/<name>: the name part of an annotation key is at most 63 characters */
        char key[128];
        int n = snprintf(key, sizeof(key), "cdi.k8s.io/gpuslice_%.43s", r->name);
        for (int i = (int)strlen("cdi.k8s.io/"); i < n; i++)
                if (key[i] == '/')
                        key[i] = '_';
        V1beta1__ContainerAllocateResponse__AnnotationsEntry *e = NEW(an->a, V1beta1__ContainerAllocateResponse__AnnotationsEntry,
                                                                       V1BETA1__CONTAINER_ALLOCATE_RESPONSE__ANNOTATIONS_ENTRY__INIT);
        V1beta1__ContainerAllocateResponse__AnnotationsEntry **arr = gs_k8s_arena_alloc(an->a, sizeof(*arr));
        if (e == NULL || arr == NULL || (e->key = gs_k8s_arena_strdup(an->a, key)) == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        e->value = names;
        arr[0] = e;
        o->annotations = arr;
        o->n_annotations = 1;
        return 0;
}

static int device_spec(const struct gs_k8s_alloc_ctx *x, struct answer *an, V1beta1__DeviceSpec **specs, const char *node)
{
        char seen[PATH_MAX], host[PATH_MAX];
        struct stat st;
        bool slash = strcmp(x->root, "/") == 0;
        snprintf(seen, sizeof(seen), "%s%s", slash ? "" : x->root, node);
        if (stat(seen, &st) < 0 || !S_ISCHR(st.st_mode))
                return 0; /* not on this machine (e.g. no nvidia-uvm-tools) */
        bool hslash = strcmp(x->host_root, "/") == 0;
        snprintf(host, sizeof(host), "%s%s", hslash ? "" : x->host_root, node);
        V1beta1__DeviceSpec *d = NEW(an->a, V1beta1__DeviceSpec, V1BETA1__DEVICE_SPEC__INIT);
        if (d == NULL || (d->container_path = gs_k8s_arena_strdup(an->a, node)) == NULL ||
            (d->host_path = gs_k8s_arena_strdup(an->a, host)) == NULL || (d->permissions = gs_k8s_arena_strdup(an->a, "rw")) == NULL)
                return -1;
        specs[an->out->n_devices++] = d;
        return 0;
}

/* volume-mounts: a mount of /dev/null onto GS_OCI_DEVICES_DIR/<id> per device. */

/* env and volume-mounts: the devices for the OCI hook (NVIDIA_VISIBLE_DEVICES=<UUIDs>, or a
 * mount per UUID and NVIDIA_VISIBLE_DEVICES=GS_OCI_DEVICES_DIR), and device specs of the
 * control nodes and the GPUs'. */
static int hook_mode(const struct gs_k8s_alloc_ctx *x, const struct group *g, size_t ng, struct answer *an,
                     struct gs_error *err)
{
        const struct gs_device_info *dev = x->plan->dev;
        bool mounts = x->plan->mode == GS_K8S_ALLOC_VOLUME_MOUNTS;
        char *vis = gs_k8s_arena_alloc(an->a, ng * (GS_STR_LONG + 1) + 1);
        V1beta1__DeviceSpec **specs = gs_k8s_arena_alloc(an->a, (ng + 3) * sizeof(*specs));
        if (vis == NULL || specs == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        an->out->devices = specs;
        static const char *const ctl[] = {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"};
        for (size_t i = 0; i < 3; i++)
                if (device_spec(x, an, specs, ctl[i]) < 0)
                        return gs_error_set(err, GS_ENOMEM, "out of memory");
        for (size_t i = 0; i < ng; i++) {
                const struct gs_gpu *gpu = &dev->gpus[g[i].gpu];
                const char *id = g[i].mig >= 0 ? gpu->migs[g[i].mig].uuid : gpu->uuid;
                if (i > 0)
                        strcat(vis, ",");
                strcat(vis, id);
                if (mounts && null_mount(an, id, MAX_MOUNTS(ng)) < 0)
                        return gs_error_set(err, GS_ENOMEM, "out of memory");
                char node[64];
                snprintf(node, sizeof(node), "/dev/nvidia%u", gpu->minor);
                bool dup = false;
                for (size_t j = 0; j < an->out->n_devices; j++)
                        dup |= strcmp(specs[j]->container_path, node) == 0;
                if (!dup && device_spec(x, an, specs, node) < 0)
                        return gs_error_set(err, GS_ENOMEM, "out of memory");
        }
        if (env(an, "NVIDIA_VISIBLE_DEVICES", mounts ? GS_OCI_DEVICES_DIR : vis) < 0)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        return 0;
}

int gs_k8s_allocate(const struct gs_k8s_alloc_ctx *x, const struct gs_k8s_resource *r, char *const *ids, size_t nids,
                    struct gs_k8s_arena *a, V1beta1__ContainerAllocateResponse *out, struct gs_error *err)
{
        V1beta1__ContainerAllocateResponse init = V1BETA1__CONTAINER_ALLOCATE_RESPONSE__INIT;
        *out = init;
        if (nids == 0)
                return gs_error_set(err, GS_EINVAL, "no device to allocate");
        struct group *g = gs_k8s_arena_alloc(a, nids * sizeof(*g));
        struct answer *an = gs_k8s_arena_alloc(a, sizeof(*an));
        if (g == NULL || an == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        an->a = a;
        an->out = out;
        size_t ng;
        if (resolve(x, r, ids, nids, g, &ng, err) < 0)
                return -1;
        bool hook = x->plan->mode == GS_K8S_ALLOC_ENV || x->plan->mode == GS_K8S_ALLOC_VOLUME_MOUNTS;
        if (hook ? hook_mode(x, g, ng, an, err) < 0 : cdi_names(x, r, g, ng, an, err) < 0)
                return -1;
        if (slice_env(x, r, g, ng, an, err) < 0)
                return -1;
        char *list = gs_k8s_arena_alloc(a, nids * GS_K8S_MAX_ID + 1);
        if (list == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        for (size_t i = 0; i < nids; i++) {
                if (i > 0)
                        strcat(list, ",");
                strcat(list, ids[i]);
        }
        if (env(an, r->env_key, list) < 0 || gs_k8s_arena_failed(a))
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        return 0;
}
