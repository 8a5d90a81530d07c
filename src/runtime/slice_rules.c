/* Who sets a container's slice: the allocator's options, the env's narrowing (see slice_rules.h). */
#include "runtime/slice_rules.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "common/strutil.h"
#include "runtime/oci.h"
#include "vgpu/config.h"

#define SIZE_HINT "(bytes, or K/M/G/T or Ki/Mi/Gi/Ti)"

/* ------------------------------------------------------------------------------------------ */
/* The allocator's options                                                                     */

enum opt_kind { O_MEMORY, O_SHARE, O_MODE, O_PRIORITY };

static int check_value(enum opt_kind k, const char *opt, const char *v, struct gs_error *err)
{
        uint64_t bytes;
        unsigned pct;
        switch (k) {
        case O_MEMORY:
                if (gs_vgpu_parse_size(v, &bytes) < 0)
                        return gs_error_set(err, GS_EINVAL, "invalid %s: %s " SIZE_HINT, opt, v);
                return 0;
        case O_SHARE:
                if (gs_vgpu_parse_percent(v, &pct) < 0 || pct == 0)
                        return gs_error_set(err, GS_EINVAL, "invalid %s: %s (a percentage, 1..100)", opt, v);
                return 0;
        case O_MODE:
                if (gs_vgpu_parse_compute_mode(v) < 0)
                        return gs_error_set(err, GS_EINVAL, "invalid %s: %s (cap, share or off)", opt, v);
                return 0;
        default:
                if (gs_vgpu_parse_priority(v, false) < 0)
                        return gs_error_set(err, GS_EINVAL, "invalid %s: %s (high, normal or low)", opt, v);
                return 0;
        }
}

/* Which option arg is ("--NAME" or "--NAME=..."), its kind and device index (-1: global); the
 * length of "--NAME" in *len. false: not one of ours. */
static bool which(const char *arg, enum opt_kind *k, int *idx, size_t *len, bool *bad_index)
{
        static const struct {
                const char *name;
                enum opt_kind kind;
                bool indexed;
        } names[] = {
                {"memory", O_MEMORY, true},        {"compute-share", O_SHARE, true},
                {"compute-mode", O_MODE, false},   {"priority", O_PRIORITY, false},
        };
        *bad_index = false;
        if (strncmp(arg, "--", 2) != 0)
                return false;
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                size_t n = strlen(names[i].name);
                const char *p = arg + 2 + n;
                if (strncmp(arg + 2, names[i].name, n) != 0)
                        continue;
                if (*p == '=' || *p == '\0') {
                        *k = names[i].kind;
                        *idx = -1;
                        *len = (size_t)(p - arg);
                        return true;
                }
                if (!names[i].indexed || *p != '-' || p[1] < '0' || p[1] > '9')
                        continue;
                unsigned long v = 0;
                for (p++; *p >= '0' && *p <= '9'; p++)
                        v = v < 1000 ? v * 10 + (unsigned long)(*p - '0') : v;
                if (*p != '=' && *p != '\0')
                        continue;
                *k = names[i].kind;
                *bad_index = v >= GS_SLICE_MAX_DEVICES;
                *idx = (int)v;
                *len = (size_t)(p - arg);
                return true;
        }
        return false;
}

int gs_slice_args_take(int argc, char **argv, char **out, struct gs_slice_opts *s, unsigned *given,
                       struct gs_error *err)
{
        int n = 0;
        bool rest = false;
        *given = 0;
        for (int i = 0; i < argc; i++) {
                enum opt_kind k;
                int idx;
                size_t len;
                bool bad;
                if (!rest && strcmp(argv[i], "--") == 0)
                        rest = true;
                if (rest || !which(argv[i], &k, &idx, &len, &bad)) {
                        out[n++] = argv[i];
                        continue;
                }
                char opt[40];
                snprintf(opt, sizeof(opt), "%.*s", (int)len, argv[i]);
                const char *v = argv[i][len] == '=' ? argv[i] + len + 1 : (i + 1 < argc ? argv[++i] : NULL);
                if (v == NULL)
                        return gs_error_set(err, GS_EINVAL, "option '%s' needs a value", opt);
                if (bad)
                        return gs_error_set(err, GS_EINVAL, "invalid %s: %s (device index < %d)", opt, v,
                                            GS_SLICE_MAX_DEVICES);
                if (check_value(k, opt, v, err) < 0)
                        return -1;
                const char **slot = k == O_MODE       ? &s->compute_mode
                                    : k == O_PRIORITY ? &s->priority
                                    : k == O_MEMORY   ? (idx < 0 ? &s->memory : &s->memory_dev[idx])
                                                      : (idx < 0 ? &s->compute : &s->compute_dev[idx]);
                *slot = v;
                (*given)++;
        }
        out[n] = NULL;
        return n;
}

/* ------------------------------------------------------------------------------------------ */
/* The rules                                                                                   */

/* A limit: its value (0 = unlimited), the string it was given as (NULL: none given) and the
 * variable that gave it (NULL: the allocator). */
struct lim {
        uint64_t v;
        const char *s;
        const char *name;
};

/* Is a tighter than b? (unlimited is the widest; a value not given is no value) */
static bool tighter(struct lim a, struct lim b)
{
        return a.s != NULL && (b.s == NULL || (a.v != 0 && (b.v == 0 || a.v < b.v)));
}

static struct lim tightest(struct lim a, struct lim b)
{
        return tighter(b, a) ? b : a;
}

static void note(struct gs_slice_want *w, const char *name, const char *value, const char *why)
{
        if (name == NULL || value == NULL)
                return;
        size_t n = strlen(w->ignored);
        if (n + 4 >= sizeof(w->ignored))
                return;
        snprintf(w->ignored + n, sizeof(w->ignored) - n, "%s", n > 0 ? "; " : "");
        n = strlen(w->ignored);
        snprintf(w->ignored + n, sizeof(w->ignored) - n, "%s=%s (%s)", name, value, why);
}

/* One env value of a limit (ours or HAMi's name): its lim (s NULL when unset). */
static int env_lim(char *const *env, size_t nenv, const char *name, bool compute, struct lim *out, struct gs_error *err)
{
        const char *v = gs_env_get(env, nenv, name);
        *out = (struct lim){0, NULL, NULL};
        if (v == NULL)
                return 0;
        if (compute) {
                unsigned pct;
                if (gs_vgpu_parse_percent(v, &pct) < 0)
                        return gs_error_set(err, GS_EINVAL, "invalid %s '%s' (a percentage, 0..100)", name, v);
                *out = (struct lim){pct >= 100 ? 0 : pct, v, name};
                return 0;
        }
        uint64_t bytes;
        if (gs_vgpu_parse_size(v, &bytes) < 0)
                return gs_error_set(err, GS_EINVAL, "invalid %s '%s' (a size: bytes, or K/M/G/T or Ki/Mi/Gi/Ti)", name, v);
        *out = (struct lim){bytes, v, name};
        return 0;
}

/* The allocator's value of a limit (already checked by gs_slice_args_take or the caller). */
static struct lim alloc_lim(const char *v, bool compute)
{
        if (v == NULL)
                return (struct lim){0, NULL, NULL};
        if (compute) {
                unsigned pct = 0;
                gs_vgpu_parse_percent(v, &pct);
                return (struct lim){pct >= 100 ? 0 : pct, v, NULL};
        }
        uint64_t bytes = 0;
        gs_vgpu_parse_size(v, &bytes);
        return (struct lim){bytes, v, NULL};
}

/* Memory (compute = false) or compute shares: the global value and each device's. */
static int limits(const struct gs_slice_opts *alloc, char *const *env, size_t nenv, bool compute,
                  struct gs_slice_want *w, struct gs_slice_opts *s, struct gs_error *err)
{
        const char *ours = compute ? "GPUSLICE_COMPUTE_LIMIT" : "GPUSLICE_MEMORY_LIMIT";
        const char *hami = compute ? "CUDA_DEVICE_SM_LIMIT" : "CUDA_DEVICE_MEMORY_LIMIT";
        char name[64], name2[64];
        struct lim a, b;
        /* the env's global value, the tightest of both names */
        if (env_lim(env, nenv, ours, compute, &a, err) < 0 || env_lim(env, nenv, hami, compute, &b, err) < 0)
                return -1;
        struct lim env_all = tightest(a, b);
        /* the allocator's (unlimited where it gives none: still its word) */
        struct lim al_all = alloc != NULL ? alloc_lim(compute ? alloc->compute : alloc->memory, compute)
                                          : (struct lim){0, NULL, NULL};
        if (alloc != NULL && al_all.s == NULL)
                al_all = (struct lim){0, "0", NULL};
        struct lim all = alloc != NULL ? tightest(al_all, env_all) : env_all;
        if (alloc != NULL && tighter(al_all, env_all))
                note(w, env_all.name, env_all.s, "wider than the allocator's");
        char *out0 = compute ? w->compute[0] : w->memory[0];
        size_t len = compute ? sizeof(w->compute[0]) : sizeof(w->memory[0]);
        out0[0] = '\0';
        if (all.s != NULL && all.v != 0 && !gs_strlcpy(out0, all.s, len))
                return gs_error_set(err, GS_EINVAL, "invalid %s '%s' (too long)", ours, all.s);
        for (int i = 0; i < GS_SLICE_MAX_DEVICES; i++) {
                snprintf(name, sizeof(name), "%s_%d", ours, i);
                snprintf(name2, sizeof(name2), "%s_%d", hami, i);
                if (env_lim(env, nenv, name, compute, &a, err) < 0 || env_lim(env, nenv, name2, compute, &b, err) < 0)
                        return -1;
                struct lim env_dev = tightest(env_all, tightest(a, b));
                struct lim dev = env_dev;
                if (alloc != NULL) {
                        struct lim al = alloc_lim(compute ? alloc->compute_dev[i] : alloc->memory_dev[i], compute);
                        if (al.s == NULL)
                                al = al_all; /* the allocator's per-device value wins over its global one */
                        dev = tightest(al, env_dev);
                        if (tighter(al, env_dev) && env_dev.name != env_all.name)
                                note(w, env_dev.name, env_dev.s, "wider than the allocator's");
                }
                char *out = compute ? w->compute[i + 1] : w->memory[i + 1];
                out[0] = '\0';
                /* only where it differs from the global value (a per-device value wins over it) */
                bool same = (dev.s == NULL || dev.v == 0) ? (all.s == NULL || all.v == 0) : (all.s != NULL && dev.v == all.v);
                if (same)
                        continue;
                if (!gs_strlcpy(out, dev.s != NULL && dev.v != 0 ? dev.s : "0", len))
                        return gs_error_set(err, GS_EINVAL, "invalid %s_%d '%s' (too long)", ours, i, dev.s);
        }
        s->memory = w->memory[0][0] != '\0' ? w->memory[0] : NULL;
        s->compute = w->compute[0][0] != '\0' ? w->compute[0] : NULL;
        for (int i = 0; i < GS_SLICE_MAX_DEVICES; i++) {
                s->memory_dev[i] = w->memory[i + 1][0] != '\0' ? w->memory[i + 1] : NULL;
                s->compute_dev[i] = w->compute[i + 1][0] != '\0' ? w->compute[i + 1] : NULL;
        }
        return 0;
}

/* A mode (GS_COMPUTE_*) or a priority (GS_PRIO_*) from the env, the narrowest of our name and
 * HAMi's (-1: unset): mode cap < share < off, priority low < normal < high. */
static int env_word(char *const *env, size_t nenv, bool prio, int *out, const char **name, const char **value,
                    struct gs_error *err)
{
        const char *names[2] = {prio ? "GPUSLICE_PRIORITY" : "GPUSLICE_COMPUTE_MODE",
                                prio ? "CUDA_TASK_PRIORITY" : "GPU_CORE_UTILIZATION_POLICY"};
        *out = -1;
        for (int k = 0; k < 2; k++) {
                const char *v = gs_env_get(env, nenv, names[k]);
                if (v == NULL || *v == '\0')
                        continue;
                int x = prio ? gs_vgpu_parse_priority(v, k == 1) : gs_vgpu_parse_compute_mode(v);
                if (x < 0 && prio)
                        return gs_error_set(err, GS_EINVAL, "invalid %s '%s' (%s)", names[k], v,
                                            k == 1 ? "0 high, 1 normal, 2 or more low" : "high, normal or low");
                if (x < 0)
                        return gs_error_set(err, GS_EINVAL, "invalid %s '%s' (cap, share or off)", names[k], v);
                /* narrower: a lower priority (a larger number); a mode nearer cap (a smaller one) */
                if (*out < 0 || (prio ? x > *out : x < *out)) {
                        *out = x;
                        *name = names[k];
                        *value = v;
                }
        }
        return 0;
}

static const char *mode_name(int m)
{
        return m == GS_COMPUTE_OFF ? "off" : m == GS_COMPUTE_SHARE ? "share" : "cap";
}

static int words(const struct gs_slice_opts *alloc, char *const *env, size_t nenv, bool may_raise,
                 struct gs_slice_want *w, struct gs_slice_opts *s, struct gs_error *err)
{
        const char *name = NULL, *value = NULL;
        int mode, prio;
        if (env_word(env, nenv, false, &mode, &name, &value, err) < 0)
                return -1;
        w->compute_mode[0] = '\0';
        if (alloc != NULL) {
                int ceil = alloc->compute_mode != NULL ? gs_vgpu_parse_compute_mode(alloc->compute_mode) : GS_COMPUTE_CAP;
                if (mode > ceil)
                        note(w, name, value, "wider than the allocator's mode");
                int m = mode >= 0 && mode <= ceil ? mode : ceil;
                if (alloc->compute_mode != NULL || mode >= 0)
                        snprintf(w->compute_mode, sizeof(w->compute_mode), "%s", mode_name(m));
        } else if (mode == GS_COMPUTE_OFF && !may_raise) {
                note(w, name, value, "raises the slice: needs [slice] env-may-raise or a privileged container");
        } else if (mode >= 0) {
                snprintf(w->compute_mode, sizeof(w->compute_mode), "%s", mode_name(mode));
        }
        if (env_word(env, nenv, true, &prio, &name, &value, err) < 0)
                return -1;
        w->priority[0] = '\0';
        if (alloc != NULL) {
                int ceil = alloc->priority != NULL ? gs_vgpu_parse_priority(alloc->priority, false) : GS_PRIO_NORMAL;
                if (prio >= 0 && prio < ceil)
                        note(w, name, value, "higher than the allocator's priority");
                int p = prio >= ceil ? prio : ceil;
                if (alloc->priority != NULL || prio >= 0)
                        snprintf(w->priority, sizeof(w->priority), "%s", gs_vgpu_priority_name(p));
        } else if (prio == GS_PRIO_HIGH && !may_raise) {
                note(w, name, value, "raises the slice: needs [slice] env-may-raise or a privileged container");
        } else if (prio >= 0) {
                snprintf(w->priority, sizeof(w->priority), "%s", gs_vgpu_priority_name(prio));
        }
        s->compute_mode = w->compute_mode[0] != '\0' ? w->compute_mode : NULL;
        s->priority = w->priority[0] != '\0' ? w->priority : NULL;
        return 0;
}

int gs_slice_rules_apply(const struct gs_slice_opts *alloc, char *const *env, size_t nenv, bool may_raise,
                         struct gs_slice_want *w, struct gs_slice_opts *s, struct gs_error *err)
{
        memset(w, 0, sizeof(*w));
        if (limits(alloc, env, nenv, false, w, s, err) < 0 || limits(alloc, env, nenv, true, w, s, err) < 0)
                return -1;
        return words(alloc, env, nenv, may_raise, w, s, err);
}
