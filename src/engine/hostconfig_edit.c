/*
 * `gpuslice runtime configure --kubernetes`: gpuslice's own host config made safe for a Kubernetes
 * node (see engine.h). The file is edited as text (toml_edit.c: every other line and comment kept),
 * the new text is checked by the host config's own parser before anything is written, and it is
 * read and written by conffile.c as the engines' configs are: a symlinked config edited through
 * the link, a backup beside it, then a temporary file renamed over it, both with the old file's
 * mode and owner.
 */
#include "engine/engine.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/error.h"

#define MAX_FILE (1u << 20) /* the host config's own limit (conffile.c reads up to 4 MiB) */

static const struct {
        const char *section, *key, *value, *only_if; /* only_if: change it only from this value */
} k8s_values[] = {
        {"hook", "accept-nvidia-visible-devices-envvar-when-unprivileged", "false", NULL},
        {"hook", "accept-nvidia-visible-devices-as-volume-mounts", "true", NULL},
        /* the env strategy's answers would be refused now: the mounts carry the same devices */
        {"device-plugin", "allocate", "\"volume-mounts\"", "\"env\""},
};

int gs_hostconfig_configure_k8s(const char *path, bool dry_run, struct gs_engine_result *r, struct gs_error *err)
{
        memset(r, 0, sizeof(*r));
        struct gs_engine_file *f = &r->files[r->nfiles++];
        /* a symlinked config (configuration management's) is edited where it points, and named by
         * that file (cf stays out of the result: the report names no link) */
        struct gs_conffile cf;
        gs_autofree char *old = NULL;
        if (gs_conffile_read(path != NULL ? path : GS_HOSTCONFIG_DEFAULT_PATH, &cf, &old, err) < 0)
                return -1;
        snprintf(f->path, sizeof(f->path), "%s", cf.real);
        if (strlen(old) > MAX_FILE)
                return gs_error_set(err, GS_EFORMAT, "%s: not a regular file of at most 1 MiB", f->path);
        struct gs_hostconfig *hc = malloc(sizeof(*hc));
        if (hc == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        gs_hostconfig_defaults(hc);
        int rc = gs_hostconfig_parse(hc, old, strlen(old), f->path, err);
        char *text = rc == 0 ? strdup(old) : NULL;
        if (rc == 0 && text == NULL)
                rc = gs_error_set(err, GS_ENOMEM, "out of memory");
        for (size_t i = 0; rc == 0 && i < GS_ARRAY_SIZE(k8s_values); i++) {
                const char *sec[] = {k8s_values[i].section};
                if (k8s_values[i].only_if != NULL) {
                        gs_autofree char *cur = gs_toml_get(text, sec, 1, k8s_values[i].key);
                        if (cur == NULL || strcmp(cur, k8s_values[i].only_if) != 0)
                                continue;
                }
                bool changed;
                char *t = gs_toml_set(text, sec, 1, k8s_values[i].key, k8s_values[i].value, &changed, err);
                if (t == NULL) {
                        rc = gs_error_wrap(err, "%s", f->path);
                        break;
                }
                free(text);
                text = t;
                char file[PATH_MAX], line[sizeof(r->changes[0])];
                snprintf(file, sizeof(file), "%s", f->path);
                snprintf(line, sizeof(line), "%s: [%s] %s = %s", file, k8s_values[i].section, k8s_values[i].key,
                         k8s_values[i].value);
                if (changed && r->nchanges < GS_ENGINE_MAX_CHANGES)
                        memcpy(r->changes[r->nchanges++], line, sizeof(line));
        }
        /* the result must be a host config gpuslice reads, with the values meant */
        gs_hostconfig_defaults(hc);
        if (rc == 0 && gs_hostconfig_parse(hc, text, strlen(text), f->path, err) < 0)
                rc = gs_error_wrap(err, "the edited config would not parse");
        if (rc == 0 && (hc->accept_env_unprivileged || !hc->accept_volume_mounts))
                rc = gs_error_set(err, GS_EFORMAT, "%s: the edit did not take (check the [hook] section)", f->path);
        free(hc);
        if (rc < 0) {
                free(text);
                return -1;
        }
        f->after = text;
        f->changed = strcmp(old, text) != 0;
        if (!f->changed || dry_run)
                return 0;
        return gs_conffile_write(&cf, text, old, NULL, NULL, f->backup, sizeof(f->backup), err);
}
