/* gpuslice hook: OCI state + config.json -> one configure request (see hook.h). */
#include "runtime/hook.h"

#include <string.h>

#include "common/error.h"
#include "common/log.h"
#include "runtime/oci.h"
#include "runtime/request.h"
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
        if (gs_request_from_oci(&rq, &cfg, h->hc, err) < 0) {
                gs_oci_config_release(&cfg);
                return hook_error(err);
        }
        if (rq.env_refused)
                gs_log_warn("container %s: ignoring the GPUs NVIDIA_VISIBLE_DEVICES asks for (not privileged, "
                            "hook.accept-nvidia-visible-devices-envvar-when-unprivileged = false)", st->id);
        if (!rq.gpu && !gs_slice_requested(&rq.opts.slice)) {
                gs_log_info("container %s asks for no GPU and no slice: nothing to do", st->id);
                rv = 0;
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
        struct gs_context *ctx = gs_context_new(&h->ctx, err);
        if (ctx == NULL) {
                err->stage = "initialization";
                goto out;
        }
        if (h->load_kmods && rq.gpu)
                gs_load_kmods(ctx, err);
        gs_error_clear(err);
        rv = gs_configure(ctx, &rq.opts, err);
        if (rv == 0 && gs_slice_requested(&rq.opts.slice))
                write_labels(&rq.opts.slice, st->id, &cfg, &h->labels);
        gs_context_free(ctx);
out:
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
