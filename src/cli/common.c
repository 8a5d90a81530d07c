#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "container/caps.h"

void cli_error(const char *stage, const char *fmt, ...)
{
        va_list ap;
        fprintf(stderr, "gpuslice: %s error: ", stage);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
}

int cli_usage_error(const char *verb, const char *fmt, ...)
{
        va_list ap;
        fputs("gpuslice: input error: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fprintf(stderr, "\nTry 'gpuslice %s%s--help' for more information.\n", verb ? verb : "", verb ? " " : "");
        return CLI_EXIT_USAGE;
}

void cli_warn(const char *fmt, ...)
{
        va_list ap;
        fputs("gpuslice: warning: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
}

struct gs_context *cli_open_context(const struct cli_globals *g)
{
        struct gs_config cfg = {
                .root = g->root,
                .ldcache = g->ldcache,
                .uid = g->uid,
                .gid = g->gid,
                .nvml_timeout_ms = g->nvml_timeout_ms,
        };
        struct gs_error err = {0};
        struct gs_context *ctx = gs_context_new(&cfg, &err);
        if (ctx == NULL) {
                cli_error("initialization", "%s", err.msg);
                return NULL;
        }
        if (g->load_kmods) {
                gs_caps_enter(GS_STAGE_KMODS, NULL);
                gs_load_kmods(ctx, &err);
                gs_caps_enter(GS_STAGE_INIT, NULL);
        }
        return ctx;
}

const struct gs_device_info *cli_query_devices(struct gs_context *ctx, bool basic)
{
        struct gs_error err = {0};
        const struct gs_device_info *info = basic ? gs_devices_basic(ctx, &err) : gs_devices(ctx, &err);
        if (info == NULL) {
                bool init = err.code == GS_EINIT || err.code == GS_ETIMEOUT || err.code == GS_EHELPER;
                cli_error(init ? "initialization" : "detection", "%s", err.msg);
        }
        return info;
}

int cli_join(char **list, const char *arg)
{
        size_t old = *list != NULL ? strlen(*list) : 0;
        char *n = realloc(*list, old + strlen(arg) + 2);
        if (n == NULL)
                return -1;
        if (old > 0)
                n[old++] = ',';
        strcpy(n + old, arg);
        *list = n;
        return 0;
}

unsigned cli_cap_flag(const char *name)
{
        static const struct {
                const char *name;
                unsigned cap;
        } caps[] = {
                {"utility", GS_CAP_UTILITY}, {"compute", GS_CAP_COMPUTE}, {"video", GS_CAP_VIDEO},
                {"graphics", GS_CAP_GRAPHICS}, {"display", GS_CAP_DISPLAY}, {"ngx", GS_CAP_NGX},
                {"compat32", GS_CAP_COMPAT32},
        };
        for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++)
                if (strcmp(name, caps[i].name) == 0)
                        return caps[i].cap;
        return 0;
}

unsigned cli_caps_expand(unsigned caps)
{
        if (caps & GS_CAP_VIDEO)
                caps |= GS_CAP_COMPUTE;
        if (caps & GS_CAP_DISPLAY)
                caps |= GS_CAP_GRAPHICS;
        return caps;
}
