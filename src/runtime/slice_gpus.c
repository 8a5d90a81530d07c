/* Per-GPU slices: each per-GPU slice hook's limits at its GPU's visible index (see slice_gpus.h). */
#include "runtime/slice_gpus.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "runtime/slice_rules.h"
#include "vgpu/config.h"

static bool uuid_like(const char *s)
{
        if ((strncasecmp(s, "GPU-", 4) != 0 && strncasecmp(s, "MIG-", 4) != 0) || s[4] == '\0' || strlen(s) >= 96)
                return false;
        for (const char *c = s + 4; *c != '\0'; c++)
                if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f') || (*c >= 'A' && *c <= 'F') || *c == '-'))
                        return false;
        return true;
}

int gs_slice_gpu_take(int argc, char **argv, char **out, const char **gpu, struct gs_error *err)
{
        int n = 0;
        bool rest = false;
        *gpu = NULL;
        for (int i = 0; i < argc; i++) {
                if (!rest && strcmp(argv[i], "--") == 0)
                        rest = true;
                if (rest || (strcmp(argv[i], "--gpu") != 0 && strncmp(argv[i], "--gpu=", 6) != 0)) {
                        out[n++] = argv[i];
                        continue;
                }
                const char *v = argv[i][5] == '=' ? argv[i] + 6 : (i + 1 < argc ? argv[++i] : NULL);
                if (v == NULL)
                        return gs_error_set(err, GS_EINVAL, "option '--gpu' needs a value");
                if (!uuid_like(v))
                        return gs_error_set(err, GS_EINVAL, "invalid --gpu: %.96s (a GPU- or MIG- UUID)", v);
                if (*gpu != NULL)
                        return gs_error_set(err, GS_EINVAL, "--gpu given twice");
                *gpu = v;
        }
        out[n] = NULL;
        return n;
}

/* A limit's value (0: unlimited; compute 100 is none); tighter: a value below the other's. */
static uint64_t value(const char *v, bool compute)
{
        if (v == NULL)
                return 0;
        if (compute) {
                unsigned pct = 0;
                gs_vgpu_parse_percent(v, &pct);
                return pct >= 100 ? 0 : pct;
        }
        uint64_t bytes = 0;
        gs_vgpu_parse_size(v, &bytes);
        return bytes;
}

static void tighten(const char **have, const char *v, bool compute)
{
        if (v == NULL)
                return;
        uint64_t a = value(*have, compute), b = value(v, compute);
        if (*have == NULL || (b != 0 && (a == 0 || b < a)))
                *have = v;
}

/* One hook's options (o, for gpu): its GPU's index, its limits; the narrowest mode and lowest
 * priority kept. */
static int add_one(const char *gpu, const struct gs_slice_opts *o, const char *const *gpus, size_t ngpus,
                   struct gs_slice_opts *m, struct gs_error *err);

static int merge_one(char *const *args, const char *const *gpus, size_t ngpus, struct gs_slice_opts *m,
                     struct gs_error *err)
{
        size_t argc = 0;
        while (args[argc] != NULL)
                argc++;
        gs_autofree char **a = calloc(argc + 1, sizeof(char *)), **b = calloc(argc + 1, sizeof(char *));
        if (a == NULL || b == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        memcpy(a, args, argc * sizeof(char *));
        const char *gpu = NULL;
        struct gs_slice_opts o = {0};
        unsigned given = 0;
        int n = gs_slice_gpu_take((int)argc, a, a, &gpu, err);
        if (n < 0 || gs_slice_args_take(n, a, b, &o, &given, err) < 0)
                return gs_error_wrap(err, "a slice hook of the container");
        return gpu != NULL ? add_one(gpu, &o, gpus, ngpus, m, err) : 0;
}

static int add_one(const char *gpu, const struct gs_slice_opts *op, const char *const *gpus, size_t ngpus,
                   struct gs_slice_opts *m, struct gs_error *err)
{
        const struct gs_slice_opts o = *op;
        for (int i = 0; i < GS_SLICE_MAX_DEVICES; i++)
                if (o.memory_dev[i] != NULL || o.compute_dev[i] != NULL)
                        return gs_error_set(err, GS_EINVAL, "the slice hook of %s gives a per-device limit beside "
                                            "--gpu (its limits are its GPU's)", gpu);
        size_t idx = 0;
        while (idx < ngpus && strcasecmp(gpus[idx], gpu) != 0)
                idx++;
        if (idx == ngpus)
                return gs_error_set(err, GS_EINVAL, "a slice hook names %s, which the container does not have", gpu);
        if (idx >= GS_SLICE_MAX_DEVICES)
                return gs_error_set(err, GS_EINVAL, "%s is the container's GPU %zu (slices: at most %d)", gpu, idx,
                                    GS_SLICE_MAX_DEVICES);
        /* a hook that gives no memory (or compute) value: unlimited, the allocator's word ("0") */
        tighten(&m->memory_dev[idx], o.memory != NULL ? o.memory : "0", false);
        tighten(&m->compute_dev[idx], o.compute != NULL ? o.compute : "0", true);
        const char *mode = o.compute_mode != NULL ? o.compute_mode : "cap";
        if (m->compute_mode == NULL || gs_vgpu_parse_compute_mode(mode) < gs_vgpu_parse_compute_mode(m->compute_mode))
                m->compute_mode = mode;
        const char *prio = o.priority != NULL ? o.priority : "normal";
        if (m->priority == NULL || gs_vgpu_parse_priority(prio, false) > gs_vgpu_parse_priority(m->priority, false))
                m->priority = prio;
        return 0;
}

/* The value every one of the container's n GPUs has ("0", unlimited, when they differ or one has none). */
static const char *common(const char *const *dev, size_t n, bool compute)
{
        if (n == 0 || n > GS_SLICE_MAX_DEVICES || dev[0] == NULL)
                return "0";
        for (size_t i = 1; i < n; i++)
                if (dev[i] == NULL || value(dev[i], compute) != value(dev[0], compute))
                        return "0";
        return dev[0];
}

int gs_slice_gpus_merge(const char *own_gpu, const struct gs_slice_opts *own, char *const *const *hooks, size_t nhooks,
                        const char *const *gpus, size_t ngpus, struct gs_slice_opts *merged, struct gs_error *err)
{
        merged->memory = merged->compute = NULL;
        merged->compute_mode = merged->priority = NULL;
        for (int i = 0; i < GS_SLICE_MAX_DEVICES; i++)
                merged->memory_dev[i] = merged->compute_dev[i] = NULL;
        /* this hook's own options first: never lost, even where config.json does not hold it */
        if (own_gpu != NULL && add_one(own_gpu, own, gpus, ngpus, merged, err) < 0)
                return -1;
        for (size_t k = 0; k < nhooks; k++)
                if (merge_one(hooks[k], gpus, ngpus, merged, err) < 0)
                        return -1;
        /* every GPU of the container the same value: that value for all (the slice file of one
         * GPU's slice reads as before); else unlimited where no hook names the GPU */
        merged->memory = common(merged->memory_dev, ngpus, false);
        merged->compute = common(merged->compute_dev, ngpus, true);
        return 0;
}
