/* gpuslice doctor: CDI specs present and current. A spec is current when every file, node and
 * hook it names exists, and it names every driver file and node that `gpuslice cdi generate`
 * would put in it now (a driver update renames the libraries; a new GPU adds a node). */
#include "doctor/internal.h"

#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cdi/cdi.h"
#include "common/cleanup.h"
#include "common/error.h"

struct paths {
        char **v;
        size_t n, cap;
};

static void paths_free(struct paths *p)
{
        for (size_t i = 0; i < p->n; i++)
                free(p->v[i]);
        free(p->v);
        *p = (struct paths){0};
}

static void paths_add(struct paths *p, const char *s)
{
        if (s == NULL || *s == '\0')
                return;
        if (p->n == p->cap) {
                size_t cap = p->cap != 0 ? p->cap * 2 : 64;
                char **v = realloc(p->v, cap * sizeof(*v));
                if (v == NULL)
                        return;
                p->v = v;
                p->cap = cap;
        }
        if ((p->v[p->n] = strdup(s)) != NULL)
                p->n++;
}

static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted, each path once (a node is named by its GPU's device and by "all"). */
static void paths_sort_unique(struct paths *p)
{
        if (p->n == 0)
                return;
        qsort(p->v, p->n, sizeof(*p->v), cmp_str);
        size_t k = 1;
        for (size_t i = 1; i < p->n; i++) {
                if (strcmp(p->v[i], p->v[k - 1]) == 0)
                        free(p->v[i]);
                else
                        p->v[k++] = p->v[i];
        }
        p->n = k;
}

static bool paths_has(const struct paths *p, const char *s)
{
        return p->n > 0 && bsearch(&s, p->v, p->n, sizeof(*p->v), cmp_str) != NULL;
}

static const char *str_of(json_object *o, const char *key)
{
        json_object *v;
        return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : NULL;
}

/* The host paths of one containerEdits: device nodes, mounts (files) and hook executables. */
static void edits_paths(json_object *edits, struct paths *files, struct paths *hooks)
{
        json_object *a;
        if (json_object_object_get_ex(edits, "deviceNodes", &a))
                for (size_t i = 0; i < json_object_array_length(a); i++) {
                        json_object *n = json_object_array_get_idx(a, i);
                        const char *hp = str_of(n, "hostPath");
                        paths_add(files, hp != NULL ? hp : str_of(n, "path"));
                }
        if (json_object_object_get_ex(edits, "mounts", &a))
                for (size_t i = 0; i < json_object_array_length(a); i++)
                        paths_add(files, str_of(json_object_array_get_idx(a, i), "hostPath"));
        if (hooks != NULL && json_object_object_get_ex(edits, "hooks", &a))
                for (size_t i = 0; i < json_object_array_length(a); i++)
                        paths_add(hooks, str_of(json_object_array_get_idx(a, i), "path"));
}

static void spec_paths(json_object *spec, struct paths *files, struct paths *hooks)
{
        json_object *e, *devs;
        if (json_object_object_get_ex(spec, "containerEdits", &e))
                edits_paths(e, files, hooks);
        if (json_object_object_get_ex(spec, "devices", &devs) && json_object_is_type(devs, json_type_array))
                for (size_t i = 0; i < json_object_array_length(devs); i++)
                        if (json_object_object_get_ex(json_object_array_get_idx(devs, i), "containerEdits", &e))
                                edits_paths(e, files, hooks);
        paths_sort_unique(files);
        if (hooks != NULL)
                paths_sort_unique(hooks);
}

/* One spec file against what the driver has now (`now`: NULL when the driver cannot be asked). */
static void check_spec(const char *file, const struct paths *now, struct gs_doctor_result *r)
{
        struct gs_error err = {0};
        json_object *spec = gs_cdi_spec_load(file, &err);
        char **names = NULL;
        size_t nnames = 0;
        if (spec == NULL || gs_cdi_spec_names(spec, &names, &nnames, &err) < 0) {
                doctor_problem(r, GS_DOCTOR_FAIL, "%s: %s", file, err.msg);
                json_object_put(spec);
                return;
        }
        struct paths files = {0}, hooks = {0};
        spec_paths(spec, &files, &hooks);
        size_t ngone = 0, nmissing = 0, nbadhook = 0;
        const char *gone = NULL, *missing = NULL, *badhook = NULL;
        for (size_t i = 0; i < files.n; i++) {
                struct stat st;
                if (lstat(files.v[i], &st) < 0 && ngone++ == 0)
                        gone = files.v[i];
        }
        for (size_t i = 0; now != NULL && i < now->n; i++)
                if (!paths_has(&files, now->v[i]) && nmissing++ == 0)
                        missing = now->v[i];
        for (size_t i = 0; i < hooks.n; i++)
                if (access(hooks.v[i], X_OK) < 0 && nbadhook++ == 0)
                        badhook = hooks.v[i];
        if (ngone > 0 && nmissing > 0)
                doctor_problem(r, GS_DOCTOR_FAIL, "%s is stale: %zu of the files and nodes it names are gone (%s%s), "
                               "and it lacks %zu of the driver's (%s%s)", file, ngone, gone, ngone > 1 ? ", ..." : "",
                               nmissing, missing, nmissing > 1 ? ", ..." : "");
        else if (ngone > 0)
                doctor_problem(r, GS_DOCTOR_FAIL, "%s is stale: %zu of the files and nodes it names are gone (%s%s)",
                               file, ngone, gone, ngone > 1 ? ", ..." : "");
        else if (nmissing > 0)
                doctor_problem(r, GS_DOCTOR_FAIL, "%s is stale: it lacks %zu of the driver's files and nodes (%s%s)",
                               file, nmissing, missing, nmissing > 1 ? ", ..." : "");
        if (nbadhook > 0)
                doctor_problem(r, GS_DOCTOR_FAIL, "%s: its hooks run %s, which cannot be run", file, badhook);
        if (ngone == 0 && nmissing == 0 && nbadhook == 0 && r->status == GS_DOCTOR_OK) {
                size_t m = strlen(r->message);
                snprintf(r->message + m, sizeof(r->message) - m, "%s%s: %zu devices (%s%s), %s", m > 0 ? "; " : "",
                         file, nnames, names[0], nnames > 1 ? ", ..." : "",
                         now != NULL ? "current" : "every file it names exists (the driver was not asked)");
        }
        gs_cdi_names_free(names);
        paths_free(&files);
        paths_free(&hooks);
        json_object_put(spec);
}

/* The files and nodes a spec generated now would name. */
static bool paths_now(struct doctor *d, struct paths *now)
{
        if (d->ctx == NULL || d->dev == NULL)
                return false;
        struct gs_cdi_opts o = {.hook_path = "/"};
        struct gs_error err = {0};
        json_object *spec = gs_cdi_generate(d->ctx, &o, &err);
        if (spec == NULL)
                return false;
        spec_paths(spec, now, NULL);
        json_object_put(spec);
        return true;
}

static const char *const fix_regen =
        "regenerate it: sudo systemctl restart gpuslice-cdi.service, or sudo gpuslice cdi generate --output FILE "
        "(with the options it was made with)";

void doctor_check_cdi(struct doctor *d, struct gs_doctor_result *r)
{
        static const char *const defaults[] = GS_DOCTOR_CDI_SPECS;
        bool given = d->o->cdi_specs[0] != NULL;
        const char *const *specs = given ? d->o->cdi_specs : defaults;
        size_t nspecs = given ? GS_DOCTOR_MAX_PATHS : GS_ARRAY_SIZE(defaults);
        struct paths now = {0};
        bool have_now = paths_now(d, &now);
        unsigned checked = 0;
        for (size_t i = 0; i < nspecs && specs[i] != NULL; i++) {
                if (!given && access(specs[i], F_OK) < 0)
                        continue;
                checked++;
                check_spec(specs[i], have_now ? &now : NULL, r);
        }
        paths_free(&now);
        if (checked == 0) {
                doctor_set(r, GS_DOCTOR_WARN, "no CDI spec (looked for /var/run/cdi/nvidia.yaml, /etc/cdi/nvidia.yaml "
                           "and their .json forms): CDI names such as nvidia.com/gpu=0 do not work (podman --device, "
                           "containerd, CRI-O, docker >= 25)");
                doctor_fix(r, "sudo systemctl enable --now gpuslice-cdi.path gpuslice-cdi.service (writes "
                           "/var/run/cdi/nvidia.yaml at boot and whenever the driver changes), or sudo gpuslice "
                           "cdi generate --output /var/run/cdi/nvidia.yaml");
                return;
        }
        if (r->status != GS_DOCTOR_OK)
                doctor_fix(r, "%s", fix_regen);
}
