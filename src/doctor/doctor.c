/* gpuslice doctor: gather the facts once (host config, driver context, NVML's answer), then run
 * each check in order. */
#include "doctor/internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/strutil.h"
#include "driver/context.h"

void doctor_set(struct gs_doctor_result *r, enum gs_doctor_status s, const char *fmt, ...)
{
        va_list ap;
        r->status = s;
        va_start(ap, fmt);
        vsnprintf(r->message, sizeof(r->message), fmt, ap);
        va_end(ap);
}

void doctor_fix(struct gs_doctor_result *r, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->fix, sizeof(r->fix), fmt, ap);
        va_end(ap);
}

void doctor_append(struct gs_doctor_result *r, const char *fmt, ...)
{
        size_t n = strlen(r->message);
        if (n + 1 >= sizeof(r->message))
                return;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->message + n, sizeof(r->message) - n, fmt, ap);
        va_end(ap);
}

static int rank(enum gs_doctor_status s)
{
        return s == GS_DOCTOR_FAIL ? 3 : s == GS_DOCTOR_WARN ? 2 : s == GS_DOCTOR_OK ? 1 : 0;
}

void doctor_problem(struct gs_doctor_result *r, enum gs_doctor_status s, const char *fmt, ...)
{
        size_t n = strlen(r->message);
        if (r->status != GS_DOCTOR_WARN && r->status != GS_DOCTOR_FAIL)
                n = 0; /* the first problem */
        else if (n + 3 < sizeof(r->message))
                n += (size_t)snprintf(r->message + n, sizeof(r->message) - n, "; ");
        if (rank(s) > rank(r->status) || n == 0)
                r->status = s;
        if (n + 1 >= sizeof(r->message))
                return;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->message + n, sizeof(r->message) - n, fmt, ap);
        va_end(ap);
}

void doctor_host_path(const struct doctor *d, const char *in_root, char *out, size_t len)
{
        if (d->ctx != NULL)
                gs_context_host_path(d->ctx, in_root, out, len);
        else
                snprintf(out, len, "%s", in_root);
}

const char *gs_doctor_status_name(enum gs_doctor_status s)
{
        switch (s) {
        case GS_DOCTOR_OK: return "ok";
        case GS_DOCTOR_WARN: return "warn";
        case GS_DOCTOR_FAIL: return "fail";
        case GS_DOCTOR_SKIP: return "skip";
        }
        return "?";
}

/* The host config (defaults when missing or invalid: the config check reports it), then the
 * driver context as the hook makes it: options given win over driver.* of the config. */
static void gather(struct doctor *d, struct gs_doctor_report *r)
{
        const struct gs_doctor_opts *o = d->o;
        const char *path = o->config != NULL ? o->config : GS_HOSTCONFIG_DEFAULT_PATH;
        if (gs_hostconfig_load(&d->hc, o->config, &d->config_err) < 0)
                gs_hostconfig_defaults(&d->hc);
        d->config_found = access(path, F_OK) == 0;
        snprintf(r->config, sizeof(r->config), "%s", d->config_found ? path : "");

        struct gs_config cfg = o->cfg;
        if (cfg.root == NULL)
                cfg.root = d->hc.root;
        if (cfg.ldcache == NULL)
                cfg.ldcache = d->hc.ldcache;
        if (cfg.nvml_timeout_ms == 0)
                cfg.nvml_timeout_ms = d->hc.nvml_timeout_s * 1000;
        snprintf(r->root, sizeof(r->root), "%s", cfg.root);
        d->ctx = gs_context_new(&cfg, &d->ctx_err);
        if (d->ctx == NULL)
                return;
        snprintf(r->root, sizeof(r->root), "%s", gs_context_root(d->ctx));
        d->dev = gs_devices(d->ctx, &d->dev_err);
}

static const struct {
        const char *name;
        void (*fn)(struct doctor *d, struct gs_doctor_result *r);
} checks[] = {
        {"config", doctor_check_config},
        {"driver", doctor_check_driver},
        {"device-nodes", doctor_check_devnodes},
        {"cgroups", doctor_check_cgroup},
        {"oci-hook", doctor_check_oci_hook},
        {"docker-hook", doctor_check_docker_hook},
        {"engines", doctor_check_engines},
        {"gpu-requests", doctor_check_requests},
        {"cdi-spec", doctor_check_cdi},
        {"interposer", doctor_check_interposer},
        {"regions-dir", doctor_check_regions},
        {"mps", doctor_check_mps},
};

void gs_doctor_run(const struct gs_doctor_opts *o, struct gs_doctor_report *r)
{
        memset(r, 0, sizeof(*r));
        struct doctor *d = calloc(1, sizeof(*d));
        if (d == NULL) {
                r->results[0] = (struct gs_doctor_result){.name = "doctor", .status = GS_DOCTOR_FAIL};
                snprintf(r->results[0].message, sizeof(r->results[0].message), "out of memory");
                r->n = 1;
                r->nfail = 1;
                return;
        }
        d->o = o;
        gather(d, r);
        for (size_t i = 0; i < GS_ARRAY_SIZE(checks) && r->n < GS_DOCTOR_MAX_CHECKS; i++) {
                struct gs_doctor_result *res = &r->results[r->n++];
                res->name = checks[i].name;
                checks[i].fn(d, res);
                switch (res->status) {
                case GS_DOCTOR_OK: r->nok++; break;
                case GS_DOCTOR_WARN: r->nwarn++; break;
                case GS_DOCTOR_FAIL: r->nfail++; break;
                case GS_DOCTOR_SKIP: r->nskip++; break;
                }
        }
        gs_context_free(d->ctx);
        free(d);
}
