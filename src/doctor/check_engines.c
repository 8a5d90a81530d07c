/* The container engines' configs: is the runtime shim (nvidia-container-runtime) registered as a
 * runtime of docker, containerd, CRI-O, and is the binary it names there? */
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "doctor/internal.h"
#include "engine/engine.h"

static const char *const engine_names[] = {"docker", "containerd", "crio"};
static const char *const default_files[] = {"/etc/docker/daemon.json", "/etc/containerd/config.toml",
                                            "/etc/crio/crio.conf.d/99-gpuslice.toml"};

static char *slurp(const char *path)
{
        FILE *f = fopen(path, "re");
        if (f == NULL)
                return NULL;
        char *buf = NULL;
        size_t n = 0;
        ssize_t r = getdelim(&buf, &n, '\0', f); /* the whole file (no NUL in a config) */
        fclose(f);
        if (r < 0) {
                free(buf);
                return strdup("");
        }
        return buf;
}

/* A TOML basic string's text without its quotes (the paths engines name need no escapes). */
static void unquote(char *s)
{
        size_t l = strlen(s);
        if (l >= 2 && (s[0] == '"' || s[0] == '\'') && s[l - 1] == s[0]) {
                memmove(s, s + 1, l - 2);
                s[l - 2] = '\0';
        }
}

/* The shim's path the engine's config names for the runtime "nvidia" (malloc'd), or NULL. */
static char *registered(int engine, const char *text)
{
        if (engine == 0) {
                json_object *j = json_tokener_parse(text), *v;
                char *out = NULL;
                if (j != NULL && json_object_object_get_ex(j, "runtimes", &v) && json_object_object_get_ex(v, "nvidia", &v) &&
                    json_object_object_get_ex(v, "path", &v) && json_object_is_type(v, json_type_string))
                        out = strdup(json_object_get_string(v));
                json_object_put(j);
                return out;
        }
        if (engine == 1) {
                gs_autofree char *ver = gs_toml_get(text, NULL, 0, "version");
                const char *plugin = ver != NULL && strcmp(ver, "3") == 0 ? "io.containerd.cri.v1.runtime"
                                                                          : "io.containerd.grpc.v1.cri";
                const char *p[] = {"plugins", plugin, "containerd", "runtimes", "nvidia", "options"};
                char *v = gs_toml_get(text, p, 6, "BinaryName");
                if (v == NULL && ver != NULL && strcmp(ver, "3") == 0) {
                        gs_autofree char *drop = slurp("/etc/containerd/conf.d/99-gpuslice.toml");
                        v = drop != NULL ? gs_toml_get(drop, p, 6, "BinaryName") : NULL;
                }
                if (v != NULL)
                        unquote(v);
                return v;
        }
        const char *p[] = {"crio", "runtime", "runtimes", "nvidia"};
        char *v = gs_toml_get(text, p, 4, "runtime_path");
        if (v != NULL)
                unquote(v);
        return v;
}

/* One fix per engine that needs one, joined. */
static void add_fix(struct gs_doctor_result *r, const char *fix)
{
        size_t n = strlen(r->fix);
        snprintf(r->fix + n, sizeof(r->fix) - n, "%s%s", n ? "; " : "", fix);
}

static void check_one(int e, const char *file, bool given, struct gs_doctor_result *r, unsigned *seen)
{
        gs_autofree char *text = slurp(file);
        char cmd[1024];
        snprintf(cmd, sizeof(cmd), "sudo gpuslice runtime configure --runtime %s%s%s", engine_names[e],
                 given ? " --config " : "", given ? file : "");
        if (text == NULL) {
                if (given)
                        doctor_problem(r, GS_DOCTOR_FAIL, "%s: cannot read %s", engine_names[e], file);
                return;
        }
        (*seen)++;
        gs_autofree char *path = registered(e, text);
        if (path == NULL || path[0] == '\0') {
                doctor_problem(r, GS_DOCTOR_WARN, "%s (%s) has no nvidia runtime: --runtime=nvidia / RuntimeClass nvidia "
                               "fail", engine_names[e], file);
                add_fix(r, cmd);
                return;
        }
        char real[PATH_MAX];
        if (realpath(path, real) == NULL || access(real, X_OK) != 0) {
                doctor_problem(r, GS_DOCTOR_FAIL, "%s (%s) runs %s as its nvidia runtime, which is missing", engine_names[e],
                               file, path);
                char fix[1200];
                snprintf(fix, sizeof(fix), "%s --path <gpuslice's nvidia-container-runtime link> (the gpuslice package makes "
                         "/usr/bin/nvidia-container-runtime)", cmd);
                add_fix(r, fix);
                return;
        }
        const char *b = strrchr(real, '/');
        if (strcmp(b != NULL ? b + 1 : real, "gpuslice") != 0) {
                doctor_problem(r, GS_DOCTOR_WARN, "%s (%s) runs %s as its nvidia runtime, which is not gpuslice (NVIDIA's "
                               "runtime: no slices)", engine_names[e], file, path);
                char fix[1200];
                snprintf(fix, sizeof(fix), "%s --path /usr/bin/nvidia-container-runtime (gpuslice's link)", cmd);
                add_fix(r, fix);
                return;
        }
        if (r->status == GS_DOCTOR_OK)
                doctor_append(r, "%s%s (%s) runs %s", r->message[0] ? "; " : "", engine_names[e], file, path);
}

void doctor_check_engines(struct doctor *d, struct gs_doctor_result *r)
{
        doctor_set(r, GS_DOCTOR_OK, "%s", "");
        bool any_given = false;
        for (int e = 0; e < 3; e++)
                any_given |= d->o->engine_configs[e] != NULL;
        unsigned seen = 0;
        for (int e = 0; e < 3; e++) {
                if (any_given && d->o->engine_configs[e] == NULL)
                        continue;
                check_one(e, any_given ? d->o->engine_configs[e] : default_files[e], any_given, r, &seen);
        }
        if (seen == 0 && r->status == GS_DOCTOR_OK)
                doctor_set(r, GS_DOCTOR_SKIP, "no docker, containerd or CRI-O config found (%s, %s, %s)", default_files[0],
                           default_files[1], default_files[2]);
        else if (r->status == GS_DOCTOR_OK)
                doctor_append(r, ": the gpuslice runtime shim");
}
