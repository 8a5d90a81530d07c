/* gpuslice hook: OCI state + config.json -> one configure request (see hook.h). */
#include "runtime/hook.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "runtime/oci.h"
#include "runtime/request.h"
#include "runtime/slice_gpus.h"
#include "runtime/slice_rules.h"
#include "slice/live.h"
#include "slice/slice.h"

int gs_hook_stage_parse(const char *name, enum gs_hook_stage *out)
{
        static const struct {
                const char *name;
                enum gs_hook_stage stage;
        } stages[] = {
                {"prestart", GS_HOOK_PRESTART},   {"createRuntime", GS_HOOK_CREATE_RUNTIME},
                {"create-runtime", GS_HOOK_CREATE_RUNTIME}, {"poststart", GS_HOOK_POSTSTART},
                {"poststop", GS_HOOK_POSTSTOP},
        };
        for (size_t i = 0; i < sizeof(stages) / sizeof(stages[0]); i++)
                if (strcmp(name, stages[i].name) == 0) {
                        *out = stages[i].stage;
                        return 0;
                }
        return -1;
}

static int hook_error(struct gs_error *err)
{
        if (err != NULL && err->stage == NULL)
                err->stage = "hook";
        return -1;
}

/* The pod's names (CRI annotations; the hook's command line, never the container's env) beside the
 * slice, for the observer's labels. A failure costs only the labels, never the container. */
static void write_labels(const struct gs_slice_opts *s, const char *id, const struct gs_oci_config *cfg,
                         const struct gs_slice_labels *given)
{
        struct gs_error lerr = {0};
        if (gs_slice_write_labels(s->regions_dir, id, cfg->annotations, cfg->nannotations, given, &lerr) < 0)
                gs_log_warn("container %s: no labels for the observer: %s", id, lerr.msg);
}

static const char *or_default(const char *v, const char *dflt)
{
        return v[0] != '\0' ? v : dflt;
}

/* A container's slice is made by the first slice hook that runs (one per CDI slice device: a
 * device per GPU, or two slice resources); the later ones find it made. One whose allocator said
 * something else is refused: one slice per container, never the wider of two. 0: none made yet,
 * or the same slice; -1 with err. */
static int one_slice(const struct gs_hook_opts *h, const struct gs_oci_state *st, const struct gs_slice_opts *s,
                     struct gs_error *err)
{
        if (!h->alloc_given || !gs_slice_requested(s))
                return 0;
        gs_autoclose int regfd = open(s->regions_dir != NULL ? s->regions_dir : GS_SLICE_REGIONS_DIR,
                                      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        pid_t pid = 0;
        struct gs_slice_limits have, want;
        if (regfd < 0 || gs_slice_owner_alive(regfd, st->id, &pid) != 1 || pid != st->pid ||
            gs_slice_read_live(regfd, st->id, &have) != 1)
                return 0;
        if (gs_slice_limits_from_opts(s, &want, err) < 0)
                return -1;
        bool same = strcmp(or_default(have.compute_mode, "cap"), or_default(want.compute_mode, "cap")) == 0 &&
                    strcmp(or_default(have.priority, "normal"), or_default(want.priority, "normal")) == 0;
        for (unsigned i = 0; same && i < GS_SLICE_MAX_DEVICES; i++)
                same = gs_slice_limits_memory(&have, i) == gs_slice_limits_memory(&want, i) &&
                       gs_slice_limits_compute(&have, i) == gs_slice_limits_compute(&want, i);
        if (same)
                return 0;
        char d[512];
        gs_slice_limits_diff(&have, &want, d, sizeof(d));
        return gs_error_set(err, GS_EINVAL, "container %s has a slice already, and this slice hook's allocator gives "
                            "another (%s): one slice per container, its slice devices must agree", st->id, d);
}

/* The MIG devices of g (in MIG mode) the container has, as CUDA shows them in it: those selected,
 * else those whose compute instance's access node (/dev/nvidia-caps/nvidia-cap<N>) config.json's
 * linux.devices holds (CDI's MIG devices; the driver shows a container no MIG device it cannot
 * open). Their UUIDs (MIG-...) into out; how many. */
static size_t container_migs(struct gs_context *ctx, const struct gs_request *rq, const struct gs_oci_config *cfg,
                             const struct gs_selection *sel, const struct gs_device_info *dev, unsigned i,
                             const char **out, size_t room)
{
        const struct gs_gpu *g = &dev->gpus[i];
        size_t n = 0;
        for (unsigned j = 0; g->mig_enabled && j < g->nmigs && j < GS_MAX_MIGS && n < room; j++) {
                bool has = rq->opts.devices != NULL && sel->mig[i][j];
                char path[256], node[128];
                dev_t rdev;
                unsigned minor;
                struct gs_error ignore = {0};
                gs_mig_ci_access_path(g, &g->migs[j], path, sizeof(path));
                if (!has && rq->opts.devices == NULL && gs_nvcaps_node(ctx, path, node, sizeof(node), &rdev, &ignore) == 0 &&
                    sscanf(node, "/dev/nvidia-caps/nvidia-cap%u", &minor) == 1)
                        for (size_t k = 0; k < cfg->ncap_minors; k++)
                                has = has || cfg->cap_minors[k] == minor;
                if (has && g->migs[j].uuid[0] != '\0')
                        out[n++] = g->migs[j].uuid;
        }
        return n;
}

/* The container's GPUs' UUIDs in its visible order (slice_gpus.h): those selected, else those
 * whose device node config.json names, in the host's order. Where the host's GPUs cannot be read
 * (a hook that does not see the driver root), a container of one GPU node whose slice hooks name
 * one GPU has it as its device 0; any other is an error. */
static size_t container_gpus(struct gs_context *ctx, const struct gs_request *rq, const struct gs_oci_config *cfg,
                             const char *gpu, const char **gpus, struct gs_error *err)
{
        const struct gs_device_info *dev = gs_devices_basic(ctx, err);
        struct gs_selection sel;
        size_t n = 0;
        if (dev == NULL) {
                bool one = gpu != NULL && rq->opts.devices == NULL && cfg->ngpu_minors <= 1;
                for (size_t k = 0; one && k < cfg->ngpu_hooks; k++)
                        for (size_t j = 0; cfg->gpu_hooks[k][j] != NULL; j++)
                                one = one && (strncmp(cfg->gpu_hooks[k][j], "--gpu=", 6) != 0 ||
                                              strcasecmp(cfg->gpu_hooks[k][j] + 6, gpu) == 0);
                if (!one)
                        return gs_error_wrap(err, "the container's GPUs' order (its slice hooks name several GPUs)"), 0;
                gs_error_clear(err);
                gpus[0] = gpu;
                return 1;
        }
        if (rq->opts.devices != NULL && gs_select_devices(rq->opts.devices, dev, &sel, err) < 0)
                return 0;
        for (unsigned i = 0; i < dev->ngpus && n < GS_MAX_GPUS; i++) {
                bool has = rq->opts.devices != NULL && gs_selection_uses_gpu(&sel, i);
                for (size_t k = 0; rq->opts.devices == NULL && k < cfg->ngpu_minors; k++)
                        has = has || cfg->gpu_minors[k] == dev->gpus[i].minor;
                size_t migs = has ? container_migs(ctx, rq, cfg, &sel, dev, i, gpus + n, GS_MAX_GPUS - n) : 0;
                n += migs;
                if (has && migs == 0 && dev->gpus[i].uuid[0] != '\0')
                        gpus[n++] = dev->gpus[i].uuid;
        }
        return n;
}

/* The container's GPUs (container_gpus), walked once: per_gpu_slice's, which slice_devices takes
 * as they are (on the procfs path each walk re-reads /proc/driver/nvidia). */
struct gpu_list {
        const char *uuid[GS_MAX_GPUS];
        size_t n;
        bool known; /* (false: not walked yet) */
};

/* Per-GPU slice hooks (--gpu): the slice of every such hook of the container, each GPU its own
 * hook's limits, narrowed by the env (slice_gpus.h); rq's slice replaced; the container's GPUs
 * in *gl. */
static int per_gpu_slice(const struct gs_hook_opts *h, struct gs_context *ctx, const struct gs_oci_config *cfg,
                         struct gs_request *rq, struct gs_slice_opts *merged, struct gpu_list *gl, struct gs_error *err)
{
        gl->n = container_gpus(ctx, rq, cfg, h->alloc_gpu, gl->uuid, err);
        if (gl->n == 0 && err->code != 0)
                return -1;
        gl->known = true;
        *merged = h->alloc;
        if (gs_slice_gpus_merge(h->alloc_gpu, &h->alloc, (char *const *const *)cfg->gpu_hooks, cfg->ngpu_hooks, gl->uuid,
                                gl->n, merged, err) < 0)
                return -1;
        rq->slice.ignored[0] = '\0';
        return gs_slice_rules_apply(merged, cfg->env, cfg->nenv, h->hc->env_may_raise || cfg->privileged, &rq->slice,
                                    &rq->opts.slice, err);
}

/* The slice's GPUs where the request selects none (a CDI container: NVIDIA_VISIBLE_DEVICES=void,
 * its GPUs in config.json's device nodes): those of its nodes, comma-separated into buf, so that
 * its slice names them (GPUSLICE_DEVICES) and takes turns on each one's arbiter with the other
 * slices of the GPU. Without them two such containers of one GPU each ran alone by its own
 * budget, their kernels interleaved, each charged for the other's: caps 30 and 50 got 13 and
 * 37 % on the H200. Where the GPUs cannot be read: none, said in the log. The GPUs are gl's where
 * per_gpu_slice walked them already. */
static void slice_devices(const struct gs_hook_opts *h, struct gs_context *ctx, const struct gs_request *rq,
                          const struct gs_oci_config *cfg, struct gpu_list *gl, char *buf, size_t len)
{
        buf[0] = '\0';
        if (!gs_slice_requested(&rq->opts.slice) || rq->opts.devices != NULL || cfg->ngpu_minors == 0)
                return;
        struct gs_error err = {0};
        if (!gl->known)
                gl->n = container_gpus(ctx, rq, cfg, h->alloc_gpu, gl->uuid, &err);
        if (gl->n == 0 && err.code != 0)
                gs_log_warn("the slice's GPUs from the container's device nodes: %s (its slice names none, and takes "
                            "no turns with other slices)", err.msg);
        size_t at = 0;
        for (size_t i = 0; i < gl->n && at + strlen(gl->uuid[i]) + 2 <= len; i++)
                at += (size_t)snprintf(buf + at, len - at, "%s%s", at > 0 ? "," : "", gl->uuid[i]);
}

/* prestart / createRuntime: the container's env -> request -> configure. */
static int configure_container(const struct gs_hook_opts *h, const struct gs_oci_state *st, struct gs_error *err)
{
        if (st->pid <= 0) {
                gs_error_set(err, GS_EINVAL, "the OCI state has no pid (run 'gpuslice hook' as a prestart or "
                                             "createRuntime hook)");
                return hook_error(err);
        }
        struct gs_oci_config cfg;
        if (gs_oci_config_load(st->bundle, &cfg, err) < 0)
                return hook_error(err);
        struct gs_request rq;
        int rv = -1;
        if (gs_request_from_oci(&rq, &cfg, h->alloc_given ? &h->alloc : NULL, h->hc, err) < 0) {
                gs_oci_config_release(&cfg);
                return hook_error(err);
        }
        struct gs_context *ctx = h->alloc_gpu != NULL ? gs_context_new(&h->ctx, err) : NULL;
        struct gs_slice_opts merged;
        struct gpu_list gl = {.known = false};
        if (h->alloc_gpu != NULL && ctx == NULL) {
                err->stage = "initialization";
                goto out;
        }
        if (h->alloc_gpu != NULL && per_gpu_slice(h, ctx, &cfg, &rq, &merged, &gl, err) < 0) {
                err->stage = "slice";
                goto out;
        }
        if (rq.env_refused)
                gs_log_warn("container %s: ignoring the GPUs NVIDIA_VISIBLE_DEVICES asks for (not privileged, "
                            "hook.accept-nvidia-visible-devices-envvar-when-unprivileged = false)", st->id);
        if (rq.slice.ignored[0] != '\0')
                gs_log_warn("container %s: the env asked for a wider slice than it may have: ignored %s", st->id,
                            rq.slice.ignored);
        if (!rq.gpu && !gs_slice_requested(&rq.opts.slice)) {
                gs_log_info("container %s asks for no GPU and no slice: nothing to do", st->id);
                rv = 0;
                goto out;
        }
        if (one_slice(h, st, &rq.opts.slice, err) < 0) {
                err->stage = "slice";
                goto out;
        }
        rq.opts.pid = st->pid;
        rq.opts.rootfs = cfg.rootfs;
        rq.opts.no_pivot = h->no_pivot;
        rq.opts.slice.container_id = st->id;
        rq.opts.slice.user_set = true; /* (who owns its usage region and arbiter records) */
        rq.opts.slice.user_uid = cfg.uid;
        rq.opts.slice.user_gid = cfg.gid;
        gs_log_info("container %s: gpu=%s devices=%s caps=0x%x requirements=%zu slice=%s", st->id,
                    rq.gpu ? "yes" : "no", rq.opts.devices != NULL ? rq.opts.devices : "(none)", rq.opts.caps,
                    rq.opts.nrequires, gs_slice_requested(&rq.opts.slice) ? "yes" : "no");
        if (ctx == NULL && (ctx = gs_context_new(&h->ctx, err)) == NULL) {
                err->stage = "initialization";
                goto out;
        }
        if (h->load_kmods && rq.gpu)
                gs_load_kmods(ctx, err);
        gs_error_clear(err);
        char node_gpus[GS_MAX_GPUS * (GS_STR_LONG + 1)];
        slice_devices(h, ctx, &rq, &cfg, &gl, node_gpus, sizeof(node_gpus));
        rq.opts.slice.devices = node_gpus[0] != '\0' ? node_gpus : NULL;
        rv = gs_configure(ctx, &rq.opts, err);
        if (rv == 0 && gs_slice_requested(&rq.opts.slice))
                write_labels(&rq.opts.slice, st->id, &cfg, &h->labels);
out:
        if (ctx != NULL)
                gs_context_free(ctx);
        gs_request_release(&rq);
        gs_oci_config_release(&cfg);
        return rv;
}

int gs_hook_run(const struct gs_hook_opts *h, struct gs_error *err)
{
        struct gs_oci_state st;
        if (gs_oci_state_read(h->state_fd, &st, err) < 0)
                return hook_error(err);
        const char *regions = h->hc->regions_dir[0] != '\0' ? h->hc->regions_dir : NULL;
        unsigned swept = gs_slice_sweep(regions);
        if (swept > 0)
                gs_log_info("swept %u slice directories of containers that are gone", swept);
        switch (h->stage) {
        case GS_HOOK_POSTSTART:
                return 0;
        case GS_HOOK_POSTSTOP:
                return gs_slice_remove(regions, st.id, err) < 0 ? hook_error(err) : 0;
        default:
                return configure_container(h, &st, err);
        }
}
