/* What a container gets, from the NVIDIA / HAMi env contract and the host config (see request.h). */
#include "runtime/request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/error.h"
#include "common/strutil.h"
#include "runtime/oci.h"

/* Go's strconv.ParseBool true values (what NVIDIA_DISABLE_REQUIRE is read with). */
static bool go_true(const char *v)
{
        static const char *const t[] = {"1", "t", "T", "TRUE", "true", "True"};
        for (size_t i = 0; v != NULL && i < sizeof(t) / sizeof(t[0]); i++)
                if (strcmp(v, t[i]) == 0)
                        return true;
        return false;
}

static int fail(struct gs_error *err, const char *stage)
{
        if (err != NULL)
                err->stage = stage;
        return -1;
}

static int caps_from_env(struct gs_request *rq, char *const *env, size_t nenv, bool legacy,
                         const struct gs_hostconfig *hc, struct gs_error *err)
{
        const char *v = gs_env_get(env, nenv, "NVIDIA_DRIVER_CAPABILITIES");
        unsigned caps;
        if (v == NULL || *v == '\0') {
                caps = legacy ? hc->supported_caps : hc->default_caps;
        } else {
                if (gs_caps_parse(v, &caps, err) < 0)
                        return gs_error_wrap(err, "NVIDIA_DRIVER_CAPABILITIES=%s", v);
                if (caps == GS_CAP_ALL)
                        caps = hc->supported_caps;
                if (caps & ~hc->supported_caps)
                        return gs_error_set(err, GS_EINVAL,
                                            "NVIDIA_DRIVER_CAPABILITIES=%s: unsupported capabilities found (see "
                                            "hook.supported-capabilities)", v);
        }
        rq->opts.caps = caps;
        return 0;
}

/* MAJOR[.MINOR[.PATCH]][-pre][+build], digits without leading zeros (semver's core). */
static bool version_major_minor(const char *v, unsigned *major, unsigned *minor)
{
        unsigned parts[3] = {0, 0, 0};
        int n = 0;
        const char *p = v;
        while (n < 3) {
                if (*p < '0' || *p > '9' || (p[0] == '0' && p[1] >= '0' && p[1] <= '9'))
                        return false;
                unsigned long x = 0;
                while (*p >= '0' && *p <= '9' && x < 100000000ul)
                        x = x * 10 + (unsigned long)(*p++ - '0');
                parts[n++] = (unsigned)x;
                if (*p != '.')
                        break;
                p++;
        }
        if (*p != '\0' && *p != '-' && *p != '+')
                return false;
        *major = parts[0];
        *minor = parts[1];
        return true;
}

/* NVIDIA_VISIBLE_DEVICES as NVIDIA's hook reads it: comma-separated, each entry trimmed, empty
 * entries dropped; any "void" means no GPU, any "all" means all. Writes the device list (NULL for
 * none) and returns whether the container gets GPUs at all. */
static int visible_devices(const char *vis, char *out, size_t len, bool *gpu, bool *none, struct gs_error *err)
{
        *gpu = false;
        *none = true;
        out[0] = '\0';
        size_t n = 0;
        bool all = false;
        for (const char *p = vis; p != NULL && *p != '\0';) {
                size_t tl = strcspn(p, ",");
                const char *t = p;
                size_t l = tl;
                while (l > 0 && (*t == ' ' || *t == '\t' || *t == '\n' || *t == '\r')) {
                        t++;
                        l--;
                }
                while (l > 0 && (t[l - 1] == ' ' || t[l - 1] == '\t' || t[l - 1] == '\n' || t[l - 1] == '\r'))
                        l--;
                p += tl + (p[tl] == ',');
                if (l == 0)
                        continue;
                if (l == 4 && strncmp(t, "void", 4) == 0) {
                        *gpu = false;
                        return 0;
                }
                *gpu = true;
                all |= l == 3 && strncmp(t, "all", 3) == 0;
                if (l == 4 && strncmp(t, "none", 4) == 0)
                        continue;
                *none = false;
                if (n + l + 2 > len)
                        return gs_error_set(err, GS_EINVAL, "NVIDIA_VISIBLE_DEVICES is too long");
                if (n > 0)
                        out[n++] = ',';
                memcpy(out + n, t, l);
                out[n += l] = '\0';
        }
        if (all)
                snprintf(out, len, "all");
        return 0;
}

static int requires_from_env(struct gs_request *rq, char *const *env, size_t nenv, bool legacy,
                             const struct gs_hostconfig *hc, struct gs_error *err)
{
        if (hc->disable_require || go_true(gs_env_get(env, nenv, "NVIDIA_DISABLE_REQUIRE")))
                return 0;
        size_t n = 0;
        for (size_t i = 0; i < nenv; i++) {
                if (!gs_str_has_prefix(env[i], "NVIDIA_REQUIRE_") || gs_str_has_prefix(env[i], "NVIDIA_REQUIRE_JETPACK"))
                        continue;
                const char *eq = strchr(env[i], '=');
                if (eq == NULL || eq[1] == '\0')
                        continue;
                /* the last definition of a name wins, as in the process's environment */
                size_t klen = (size_t)(eq - env[i]);
                bool later = false;
                for (size_t j = i + 1; j < nenv && !later; j++)
                        later = strncmp(env[j], env[i], klen + 1) == 0;
                if (later)
                        continue;
                if (n == GS_MAX_REQUIRES)
                        return gs_error_set(err, GS_EINVAL, "too many NVIDIA_REQUIRE_* variables (at most %d)",
                                            GS_MAX_REQUIRES);
                if ((rq->requires[n++] = strdup(eq + 1)) == NULL)
                        return gs_error_set(err, GS_ENOMEM, "out of memory");
        }
        const char *cuda = gs_env_get(env, nenv, "CUDA_VERSION");
        if (legacy && n < GS_MAX_REQUIRES) {
                /* cuda>=<major.minor of CUDA_VERSION>, which must be a version (NVIDIA reads it as semver) */
                unsigned major = 0, minor = 0;
                if (!version_major_minor(cuda, &major, &minor))
                        return gs_error_set(err, GS_EINVAL, "failed to get version: invalid CUDA version %s", cuda);
                char *r;
                if (asprintf(&r, "cuda>=%u.%u", major, minor) < 0)
                        return gs_error_set(err, GS_ENOMEM, "out of memory");
                rq->requires[n++] = r;
        }
        rq->opts.requires = (const char *const *)rq->requires;
        rq->opts.nrequires = n;
        return 0;
}

/* The devices the volume mounts name (imex/ and cdi/ ones left out: channels, and the shim's CDI
 * names), comma-joined into out; false when there are none. */
static bool mount_devices(char *const *mounts, size_t nmounts, const char *prefix, bool want_prefix, char *out,
                          size_t len)
{
        size_t n = 0, pl = strlen(prefix);
        out[0] = '\0';
        for (size_t i = 0; i < nmounts; i++) {
                bool cdi = strncmp(mounts[i], "cdi/", 4) == 0, imex = strncmp(mounts[i], "imex/", 5) == 0;
                bool slice = strncmp(mounts[i], GS_REQUEST_SLICE_MOUNTS, strlen(GS_REQUEST_SLICE_MOUNTS)) == 0;
                if (want_prefix ? strncmp(mounts[i], prefix, pl) != 0 : cdi || imex || slice)
                        continue;
                const char *d = mounts[i] + (want_prefix ? pl : 0);
                int w = snprintf(out + n, len - n, "%s%s", n ? "," : "", d);
                if (w < 0 || (size_t)w >= len - n) {
                        out[n] = '\0';
                        break; /* more than fits: the ones that fit */
                }
                n += (size_t)w;
        }
        return n > 0;
}

/* What the container asks for, as NVIDIA's hook reads it (request.h): NVIDIA_VISIBLE_DEVICES
 * from volume mounts when the host accepts them and there are any, else from the env (a legacy
 * image's implicit "all" included) when the container is privileged or the host accepts the env
 * of unprivileged containers. NULL: none. */
static const char *devices_asked(struct gs_request *rq, const struct gs_request_src *in, bool legacy,
                                 const struct gs_hostconfig *hc)
{
        if (hc->accept_volume_mounts &&
            mount_devices(in->device_mounts, in->ndevice_mounts, "", false, rq->mount_devices, sizeof(rq->mount_devices))) {
                rq->devices_from = "volume mounts";
                return rq->mount_devices;
        }
        const char *vis = gs_env_get(in->env, in->nenv, "NVIDIA_VISIBLE_DEVICES");
        if (vis != NULL && strcmp(vis, GS_OCI_DEVICES_DIR) == 0)
                vis = NULL; /* "the devices are in the mounts" (the volume-mount strategy's env) */
        if (vis == NULL && legacy)
                vis = "all";
        if (vis == NULL || in->privileged || hc->accept_env_unprivileged) {
                rq->devices_from = vis != NULL ? "NVIDIA_VISIBLE_DEVICES" : NULL;
                return vis;
        }
        rq->env_refused = true; /* hook.accept-nvidia-visible-devices-envvar-when-unprivileged = false */
        return NULL;
}

/* The allocator's slice as volume mounts, where the host takes them (the device plugin's
 * volume-mounts answers): slice/<option>=<value> under GS_OCI_DEVICES_DIR, each a slice option
 * of the hook's (runtime/slice_rules.h), into rq->mount_alloc. 1 some, 0 none, -1 on a bad one. */
static int mount_slice(struct gs_request *rq, const struct gs_request_src *in, struct gs_error *err)
{
        char *args[GS_REQUEST_SLICE_ARGS + 2], *rest[GS_REQUEST_SLICE_ARGS + 2];
        size_t pl = strlen(GS_REQUEST_SLICE_MOUNTS);
        int n = 0;
        args[n++] = "mounts";
        for (size_t i = 0; i < in->ndevice_mounts; i++) {
                const char *m = in->device_mounts[i];
                if (strncmp(m, GS_REQUEST_SLICE_MOUNTS, pl) != 0)
                        continue;
                if (n > GS_REQUEST_SLICE_ARGS || strchr(m + pl, '=') == NULL ||
                    (size_t)snprintf(rq->mount_slice[n - 1], sizeof(rq->mount_slice[0]), "--%s", m + pl) >=
                            sizeof(rq->mount_slice[0]))
                        return gs_error_set(err, GS_EINVAL, "invalid slice mount %s/%s", GS_OCI_DEVICES_DIR, m);
                args[n] = rq->mount_slice[n - 1];
                n++;
        }
        args[n] = NULL;
        if (n == 1)
                return 0;
        unsigned given;
        int left = gs_slice_args_take(n, args, rest, &rq->mount_alloc, &given, err);
        if (left < 0)
                return gs_error_wrap(err, "slice mounts under %s", GS_OCI_DEVICES_DIR);
        if (left != 1)
                return gs_error_set(err, GS_EINVAL, "invalid slice mount %s/%s%s (not a slice option)", GS_OCI_DEVICES_DIR,
                                    GS_REQUEST_SLICE_MOUNTS, rest[1] + 2);
        return 1;
}

int gs_request_from_env(struct gs_request *rq, char *const *env, size_t nenv, bool privileged,
                        const struct gs_hostconfig *hc, struct gs_error *err)
{
        struct gs_request_src in = {.env = env, .nenv = nenv, .privileged = privileged};
        return gs_request_from_src(rq, &in, hc, err);
}

int gs_request_from_oci(struct gs_request *rq, const struct gs_oci_config *cfg, const struct gs_slice_opts *alloc,
                        const struct gs_hostconfig *hc, struct gs_error *err)
{
        struct gs_request_src in = {.env = cfg->env, .nenv = cfg->nenv, .privileged = cfg->privileged,
                                    .device_mounts = cfg->device_mounts, .ndevice_mounts = cfg->ndevice_mounts,
                                    .alloc = alloc};
        return gs_request_from_src(rq, &in, hc, err);
}

int gs_request_from_src(struct gs_request *rq, const struct gs_request_src *in, const struct gs_hostconfig *hc,
                        struct gs_error *err)
{
        char *const *env = in->env;
        size_t nenv = in->nenv;
        bool privileged = in->privileged;
        memset(rq, 0, sizeof(*rq));
        struct gs_configure_opts *o = &rq->opts;
        o->compat_mode = hc->compat_mode;
        o->no_cgroups = hc->no_cgroups;
        o->ldconfig = hc->ldconfig[0] != '\0' ? hc->ldconfig : NULL;
        snprintf(rq->regions_dir, sizeof(rq->regions_dir), "%s", hc->regions_dir);
        snprintf(rq->vgpu_lib, sizeof(rq->vgpu_lib), "%s", hc->vgpu_library);
        o->slice.regions_dir = rq->regions_dir[0] != '\0' ? rq->regions_dir : NULL;
        o->slice.vgpu_lib = rq->vgpu_lib[0] != '\0' ? rq->vgpu_lib : NULL;
        snprintf(rq->mps_root, sizeof(rq->mps_root), "%s", hc->mps_root);
        o->slice.mps_root = rq->mps_root[0] != '\0' ? rq->mps_root : NULL;
        o->slice.mps = strcmp(hc->mps, "off") != 0 ? hc->mps : NULL;

        /* A legacy image: CUDA_VERSION set (not empty), NVIDIA_REQUIRE_CUDA not. */
        const char *req_cuda = gs_env_get(env, nenv, "NVIDIA_REQUIRE_CUDA");
        const char *cuda = gs_env_get(env, nenv, "CUDA_VERSION");
        bool legacy = cuda != NULL && *cuda != '\0' && (req_cuda == NULL || *req_cuda == '\0');

        const char *vis = devices_asked(rq, in, legacy, hc);
        bool none;
        if (visible_devices(vis, rq->devices, sizeof(rq->devices), &rq->gpu, &none, err) < 0)
                goto fail_hook;
        if (rq->gpu && !none)
                o->devices = rq->devices;
        o->no_gpu = !rq->gpu;
        const struct gs_slice_opts *alloc = in->alloc;
        if (alloc == NULL && hc->accept_volume_mounts) {
                int got = mount_slice(rq, in, err);
                if (got < 0)
                        return fail(err, "slice");
                alloc = got > 0 ? &rq->mount_alloc : NULL;
        }
        if (gs_slice_rules_apply(alloc, env, nenv, hc->env_may_raise || privileged, &rq->slice, &o->slice, err) < 0)
                return fail(err, "slice");
        if (!rq->gpu)
                return 0;

        if (caps_from_env(rq, env, nenv, legacy, hc, err) < 0 || requires_from_env(rq, env, nenv, legacy, hc, err) < 0)
                goto fail_hook;
        static const char *const mig_vars[2] = {"NVIDIA_MIG_CONFIG_DEVICES", "NVIDIA_MIG_MONITOR_DEVICES"};
        char *mig_out[2] = {rq->mig_config, rq->mig_monitor};
        for (int k = 0; k < 2; k++) {
                const char *v = gs_env_get(env, nenv, mig_vars[k]);
                if (v == NULL || *v == '\0')
                        continue;
                if (!privileged) {
                        gs_error_set(err, GS_EINVAL, "cannot set %s in non privileged container", mig_vars[k] + 7);
                        goto fail_hook;
                }
                if (!gs_strlcpy(mig_out[k], v, sizeof(rq->mig_config))) {
                        gs_error_set(err, GS_EINVAL, "%s is too long", mig_vars[k]);
                        goto fail_hook;
                }
        }
        o->mig_config = rq->mig_config[0] != '\0' ? rq->mig_config : NULL;
        o->mig_monitor = rq->mig_monitor[0] != '\0' ? rq->mig_monitor : NULL;
        /* IMEX channels: volume mounts imex/<n> when accepted, else the env as the devices' */
        const char *imex = NULL;
        if (hc->accept_volume_mounts &&
            mount_devices(in->device_mounts, in->ndevice_mounts, "imex/", true, rq->mount_imex, sizeof(rq->mount_imex)))
                imex = rq->mount_imex;
        else if (privileged || hc->accept_env_unprivileged)
                imex = gs_env_get(env, nenv, "NVIDIA_IMEX_CHANNELS");
        if (imex != NULL && *imex != '\0' && strcasecmp(imex, "all") != 0 && strcasecmp(imex, "none") != 0) {
                if (!gs_strlcpy(rq->imex, imex, sizeof(rq->imex))) {
                        gs_error_set(err, GS_EINVAL, "NVIDIA_IMEX_CHANNELS is too long");
                        goto fail_hook;
                }
                o->imex_channels = rq->imex;
        }
        return 0;
fail_hook:
        gs_request_release(rq);
        return fail(err, "hook");
}

void gs_request_release(struct gs_request *rq)
{
        for (size_t i = 0; i < GS_MAX_REQUIRES; i++) {
                free(rq->requires[i]);
                rq->requires[i] = NULL;
        }
        rq->opts.nrequires = 0;
}
