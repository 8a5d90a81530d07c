/* gpuslice doctor: the runtimes' ways in: OCI hooks.d files (podman, CRI-O) and the
 * nvidia-container-runtime-hook name on the PATH (docker --gpus). */
#include "doctor/internal.h"

#include <dirent.h>
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/strutil.h"
#include "runtime/hook_exe.h"

static const char *base(const char *p)
{
        const char *s = strrchr(p, '/');
        return s != NULL ? s + 1 : p;
}

/* Is `path` gpuslice's hook (gpuslice-hook or gpuslice, itself or a link to it)? Sets *exists. */
static bool is_gpuslice(const char *path, bool *exists)
{
        char real[PATH_MAX];
        *exists = realpath(path, real) != NULL && access(real, X_OK) == 0;
        const char *b = base(*exists ? real : path);
        return strcmp(b, "gpuslice") == 0 || gs_hook_exe_is_lean(b);
}

static bool has_stage(json_object *stages, const char *a, const char *b)
{
        for (size_t i = 0; stages != NULL && i < json_object_array_length(stages); i++) {
                const char *s = json_object_get_string(json_object_array_get_idx(stages, i));
                if (s != NULL && (strcmp(s, a) == 0 || strcmp(s, b) == 0))
                        return true;
        }
        return false;
}

struct hooks_seen {
        unsigned ours;        /* files that run gpuslice */
        char first[PATH_MAX]; /* the first of them */
        char first_path[PATH_MAX];
};

/* One hooks.d file: problems go to r, files that run gpuslice are counted in `seen`. */
static void hook_file(const char *file, struct hooks_seen *seen, struct gs_doctor_result *r)
{
        json_object *j = json_object_from_file(file);
        json_object *hook = NULL, *path = NULL, *env = NULL, *stages = NULL;
        if (j == NULL || !json_object_object_get_ex(j, "hook", &hook) ||
            !json_object_object_get_ex(hook, "path", &path) || !json_object_is_type(path, json_type_string)) {
                doctor_problem(r, GS_DOCTOR_WARN, "%s is not a valid OCI hook file (podman refuses it)", file);
                json_object_put(j);
                return;
        }
        const char *hp = json_object_get_string(path);
        bool exists;
        bool ours = is_gpuslice(hp, &exists);
        bool nvidia_name = strcmp(base(hp), GS_DOCTOR_HOOK_NAME) == 0;
        json_object_object_get_ex(hook, "env", &env);
        json_object_object_get_ex(j, "stages", &stages);
        if (!ours && nvidia_name && exists) {
                doctor_problem(r, GS_DOCTOR_WARN, "%s runs NVIDIA's own hook %s too: containers are configured "
                               "twice, once without slices", file, hp);
        } else if (ours || nvidia_name) {
                if (!exists)
                        doctor_problem(r, GS_DOCTOR_FAIL, "%s runs %s, which does not exist", file, hp);
                else if (!has_stage(stages, "prestart", "createRuntime"))
                        doctor_problem(r, GS_DOCTOR_FAIL, "%s runs gpuslice, but not at prestart or createRuntime: "
                                       "it never configures a container", file);
                else if (env == NULL || !json_object_is_type(env, json_type_array))
                        doctor_problem(r, GS_DOCTOR_WARN, "%s has no \"env\": the runtime may hand the hook the "
                                       "image's environment (CVE-2025-23266)", file);
                if (seen->ours++ == 0) {
                        gs_strlcpy(seen->first, file, sizeof(seen->first));
                        gs_strlcpy(seen->first_path, hp, sizeof(seen->first_path));
                } else {
                        doctor_problem(r, GS_DOCTOR_WARN, "%s and %s both run gpuslice: each container is "
                                       "configured twice", seen->first, file);
                }
        }
        json_object_put(j);
}

static int cmp_names(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The *.json files of one directory, in name order (as podman reads them). */
static void hooks_dir(const char *dir, struct hooks_seen *seen, struct gs_doctor_result *r)
{
        DIR *dh = opendir(dir);
        if (dh == NULL)
                return;
        char *names[256];
        size_t n = 0;
        for (struct dirent *e; (e = readdir(dh)) != NULL && n < GS_ARRAY_SIZE(names);)
                if (e->d_name[0] != '.' && gs_str_has_suffix(e->d_name, ".json") &&
                    (names[n] = strdup(e->d_name)) != NULL)
                        n++;
        closedir(dh);
        qsort(names, n, sizeof(names[0]), cmp_names);
        for (size_t i = 0; i < n; i++) {
                char file[PATH_MAX];
                snprintf(file, sizeof(file), "%s/%s", dir, names[i]);
                hook_file(file, seen, r);
                free(names[i]);
        }
}

void doctor_check_oci_hook(struct doctor *d, struct gs_doctor_result *r)
{
        static const char *const defaults[] = GS_DOCTOR_HOOKS_DIRS;
        const char *const *dirs = d->o->hooks_dirs[0] != NULL ? d->o->hooks_dirs : defaults;
        size_t ndirs = d->o->hooks_dirs[0] != NULL ? GS_DOCTOR_MAX_PATHS : GS_ARRAY_SIZE(defaults);
        struct hooks_seen seen = {0};
        char where[1024] = "";
        for (size_t i = 0; i < ndirs && dirs[i] != NULL; i++) {
                hooks_dir(dirs[i], &seen, r);
                size_t w = strlen(where);
                snprintf(where + w, sizeof(where) - w, "%s%s", w > 0 ? ", " : "", dirs[i]);
        }
        if (seen.ours == 0) {
                doctor_problem(r, GS_DOCTOR_FAIL, "no hooks.d file runs gpuslice (looked in %s): podman and CRI-O "
                               "give no GPU to containers that ask with NVIDIA_VISIBLE_DEVICES (CDI names still "
                               "work)", where);
                doctor_fix(r, "install oci-gpuslice-hook.json (packaging/oci-gpuslice-hook.json in the source) into "
                           "/usr/share/containers/oci/hooks.d/: make install and the gpuslice package do");
                return;
        }
        if (r->status == GS_DOCTOR_OK) {
                doctor_set(r, GS_DOCTOR_OK, "%s runs %s at prestart with an explicit env", seen.first,
                           seen.first_path);
                return;
        }
        doctor_fix(r, "keep one hooks.d file that runs gpuslice at prestart with \"env\": "
                   "[\"PATH=/usr/sbin:/usr/bin:/sbin:/bin\"] (as packaging/oci-gpuslice-hook.json) and remove the "
                   "others; reinstall gpuslice if its executable is gone");
}

/* The first `name` on `path` that exists (lstat: a dangling link counts), or "". */
static void which(const char *name, const char *path, char *out, size_t len)
{
        char dirs[1024];
        gs_strlcpy(dirs, path, sizeof(dirs));
        char *save = NULL;
        out[0] = '\0';
        for (char *dir = strtok_r(dirs, ":", &save); dir != NULL; dir = strtok_r(NULL, ":", &save)) {
                struct stat st;
                snprintf(out, len, "%s/%s", dir, name);
                if (lstat(out, &st) == 0)
                        return;
        }
        out[0] = '\0';
}

void doctor_check_docker_hook(struct doctor *d, struct gs_doctor_result *r)
{
        (void)d;
        char found[PATH_MAX], self[PATH_MAX] = "/usr/bin/" GS_HOOK_EXE;
        struct gs_error err = {0};
        if (gs_hook_exe_default(self, sizeof(self), &err) < 0) /* the hook to link: the lean one */
                snprintf(self, sizeof(self), "/usr/bin/%s", GS_HOOK_EXE);
        which(GS_DOCTOR_HOOK_NAME, GS_DOCTOR_DOCKER_PATH, found, sizeof(found));
        if (found[0] == '\0') {
                doctor_set(r, GS_DOCTOR_WARN, "no %s on the PATH docker uses (%s): docker run --gpus fails "
                           "(podman hooks.d and CDI do not need it)", GS_DOCTOR_HOOK_NAME, GS_DOCTOR_DOCKER_PATH);
                doctor_fix(r, "sudo ln -s %s /usr/bin/%s (make install and the gpuslice package make this link)",
                           self, GS_DOCTOR_HOOK_NAME);
                return;
        }
        bool exists;
        bool ours = is_gpuslice(found, &exists);
        if (!exists) {
                doctor_set(r, GS_DOCTOR_FAIL, "%s cannot be run (a dangling link?): docker run --gpus fails",
                           found);
                doctor_fix(r, "sudo ln -sf %s %s", self, found);
        } else if (!ours) {
                doctor_set(r, GS_DOCTOR_WARN, "docker run --gpus runs %s, which is not gpuslice: containers get "
                           "NVIDIA's hook, without slices", found);
                doctor_fix(r, "remove NVIDIA's hook (nvidia-container-toolkit) or put a link to gpuslice before it "
                           "on the PATH: sudo ln -s %s /usr/local/sbin/%s", self, GS_DOCTOR_HOOK_NAME);
        } else {
                char real[PATH_MAX];
                doctor_set(r, GS_DOCTOR_OK, "docker run --gpus runs %s (gpuslice: %s)", found,
                           realpath(found, real) != NULL ? real : found);
        }
}
