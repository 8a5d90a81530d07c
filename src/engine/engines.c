/*
 * `gpuslice runtime configure`: the shim registered as a runtime of docker (daemon.json),
 * containerd (config.toml, schema version 2 or 3, or a drop-in it imports) or CRI-O (a drop-in
 * under crio.conf.d). Everything else in a file is kept; a file is written only when it changes,
 * after a backup, atomically.
 */
#include "engine/engine.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cdi/cdi.h"
#include "common/cleanup.h"
#include "common/error.h"

#define DEFAULT_NAME "nvidia"
#define DEFAULT_PATH "/usr/bin/nvidia-container-runtime"
#define MAX_FILE (4u << 20)

int gs_engine_parse(const char *s, enum gs_engine *out)
{
        static const char *const names[] = {"docker", "containerd", "crio"};
        for (size_t i = 0; i < GS_ARRAY_SIZE(names); i++)
                if (strcmp(s, names[i]) == 0) {
                        *out = (enum gs_engine)i;
                        return 0;
                }
        return -1;
}

void gs_engine_result_release(struct gs_engine_result *r)
{
        for (size_t i = 0; i < r->nfiles; i++) {
                free(r->files[i].after);
                r->files[i].after = NULL;
        }
        r->nfiles = 0;
}

static void note(struct gs_engine_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct gs_engine_result *r, const char *fmt, ...)
{
        if (r->nchanges == GS_ENGINE_MAX_CHANGES)
                return;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->changes[r->nchanges++], sizeof(r->changes[0]), fmt, ap);
        va_end(ap);
}

/* The file's text ("" when it does not exist). */
static char *read_text(const char *path, struct gs_error *err)
{
        gs_autoclose int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT)
                return strdup("");
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0) {
                gs_error_sys(err, "cannot open %s", path);
                return NULL;
        }
        if (!S_ISREG(st.st_mode) || st.st_size > (off_t)MAX_FILE) {
                gs_error_set(err, GS_EFORMAT, "%s: not a regular file of at most 4 MiB", path);
                return NULL;
        }
        char *t = calloc(1, (size_t)st.st_size + 1);
        if (t == NULL) {
                gs_error_set(err, GS_ENOMEM, "out of memory");
                return NULL;
        }
        size_t n = 0;
        while (n < (size_t)st.st_size) {
                ssize_t r = read(fd, t + n, (size_t)st.st_size - n);
                if (r <= 0)
                        break;
                n += (size_t)r;
        }
        t[n] = '\0';
        if (strlen(t) != n) {
                free(t);
                gs_error_set(err, GS_EFORMAT, "%s: contains a NUL byte", path);
                return NULL;
        }
        return t;
}

/* A copy of the old file beside it (<file>.<UTC time>.bak), then the new text through a
 * temporary file and rename (the old file's mode; 0644 for a new one). */
static int write_file(struct gs_engine_file *f, struct gs_error *err)
{
        struct stat st;
        mode_t mode = 0644;
        char dir[4096];
        snprintf(dir, sizeof(dir), "%s", f->path);
        char *d = dirname(dir);
        if (mkdir(d, 0755) < 0 && errno != EEXIST)
                return gs_error_sys(err, "cannot create %s", d);
        if (stat(f->path, &st) == 0) {
                mode = st.st_mode & 07777;
                time_t now = time(NULL);
                struct tm tm;
                gmtime_r(&now, &tm);
                char ts[32];
                strftime(ts, sizeof(ts), "%Y%m%dT%H%M%SZ", &tm);
                snprintf(f->backup, sizeof(f->backup), "%s.%s.bak", f->path, ts);
                gs_autofree char *old = read_text(f->path, err);
                if (old == NULL)
                        return -1;
                struct gs_error e2 = {0};
                if (gs_cdi_write_file(f->backup, old, &e2) < 0)
                        return gs_error_set(err, GS_ESYS, "cannot back up %s: %s", f->path, e2.msg);
        }
        if (gs_cdi_write_file(f->path, f->after, err) < 0)
                return -1;
        if (chmod(f->path, mode) < 0)
                return gs_error_sys(err, "cannot set the mode of %s", f->path);
        return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* docker: daemon.json */

static int docker(const struct gs_engine_opts *o, const char *name, const char *path, struct gs_engine_result *r,
                  struct gs_error *err)
{
        struct gs_engine_file *f = &r->files[r->nfiles++];
        snprintf(f->path, sizeof(f->path), "%s", o->config != NULL ? o->config : "/etc/docker/daemon.json");
        gs_autofree char *text = read_text(f->path, err);
        if (text == NULL)
                return -1;
        const char *p = text + strspn(text, " \t\r\n");
        json_object *root = *p == '\0' ? json_object_new_object() : json_tokener_parse(text);
        if (root == NULL || !json_object_is_type(root, json_type_object)) {
                json_object_put(root);
                return gs_error_set(err, GS_EFORMAT, "%s: not a JSON object", f->path);
        }
        json_object *before = NULL;
        json_object_deep_copy(root, &before, NULL);
        json_object *rts, *rt;
        if (!json_object_object_get_ex(root, "runtimes", &rts) || !json_object_is_type(rts, json_type_object)) {
                rts = json_object_new_object();
                json_object_object_add(root, "runtimes", rts);
        }
        json_object *want = json_object_new_object();
        json_object_object_add(want, "path", json_object_new_string(path));
        json_object_object_add(want, "args", json_object_new_array());
        if (!json_object_object_get_ex(rts, name, &rt) || !json_object_equal(rt, want)) {
                json_object_object_add(rts, name, json_object_get(want));
                note(r, "%s: runtimes.%s = {\"path\": \"%s\", \"args\": []}", f->path, name, path);
        }
        json_object_put(want);
        json_object *v;
        if (o->set_as_default && (!json_object_object_get_ex(root, "default-runtime", &v) ||
                                  strcmp(json_object_get_string(v), name) != 0)) {
                json_object_object_add(root, "default-runtime", json_object_new_string(name));
                note(r, "%s: default-runtime = \"%s\"", f->path, name);
        }
        if (o->cdi_enabled) {
                json_object *feat;
                if (!json_object_object_get_ex(root, "features", &feat) || !json_object_is_type(feat, json_type_object)) {
                        feat = json_object_new_object();
                        json_object_object_add(root, "features", feat);
                }
                if (!json_object_object_get_ex(feat, "cdi", &v) || !json_object_get_boolean(v) ||
                    !json_object_is_type(v, json_type_boolean)) {
                        json_object_object_add(feat, "cdi", json_object_new_boolean(1));
                        note(r, "%s: features.cdi = true", f->path);
                }
        }
        f->changed = !json_object_equal(before, root);
        const char *out = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                                       JSON_C_TO_STRING_NOSLASHESCAPE);
        f->after = f->changed ? NULL : strdup(text);
        if (f->changed && out != NULL)
                (void)(asprintf(&f->after, "%s\n", out) < 0 ? (f->after = NULL) : 0);
        json_object_put(before);
        json_object_put(root);
        return f->after != NULL ? 0 : gs_error_set(err, GS_ENOMEM, "out of memory");
}

/* ------------------------------------------------------------------------------------------ */
/* TOML: containerd and CRI-O */

/* text := text with path.key = value; a note when it changed. */
static int tset(char **text, const char *file, const char *const *path, size_t n, const char *key, const char *value,
                struct gs_engine_result *r, struct gs_error *err)
{
        bool changed;
        char *t = gs_toml_set(*text, path, n, key, value, &changed, err);
        if (t == NULL)
                return gs_error_set(err, err->code, "%s: %s", file, err->msg);
        free(*text);
        *text = t;
        if (changed) {
                char where[1024] = "";
                for (size_t i = 0; i < n; i++)
                        snprintf(where + strlen(where), sizeof(where) - strlen(where), "%s%s%s%s", i ? "." : "",
                                 strchr(path[i], '.') ? "\"" : "", path[i], strchr(path[i], '.') ? "\"" : "");
                note(r, "%s: [%s] %s = %s", file, where, key, value);
        }
        return 0;
}

static int toml_version(const char *text, const char *file, unsigned *v, struct gs_error *err)
{
        gs_autofree char *s = gs_toml_get(text, NULL, 0, "version");
        if (s == NULL) {
                *v = 0;
                return 0;
        }
        char *end;
        unsigned long n = strtoul(s, &end, 10);
        if (*end != '\0' || n < 1 || n > 3)
                return gs_error_set(err, GS_EFORMAT, "%s: version = %s: not 1, 2 or 3", file, s);
        *v = (unsigned)n;
        return 0;
}

/* The runtime handler's tables in `text` (containerd schema `version`). */
static int containerd_tables(char **text, const char *file, unsigned version, const struct gs_engine_opts *o,
                             const char *name, const char *qpath, const char *systemd, struct gs_engine_result *r,
                             struct gs_error *err)
{
        const char *plugin = version == 3 ? "io.containerd.cri.v1.runtime" : "io.containerd.grpc.v1.cri";
        const char *rt[] = {"plugins", plugin, "containerd", "runtimes", name, "options"};
        if (tset(text, file, rt, 5, "runtime_type", "\"io.containerd.runc.v2\"", r, err) < 0 ||
            tset(text, file, rt, 6, "BinaryName", qpath, r, err) < 0)
                return -1;
        if (systemd != NULL && tset(text, file, rt, 6, "SystemdCgroup", systemd, r, err) < 0)
                return -1;
        if (o->set_as_default) {
                gs_autofree char *q = gs_toml_quote(name);
                if (tset(text, file, rt, 3, "default_runtime_name", q, r, err) < 0)
                        return -1;
        }
        if (o->cdi_enabled && tset(text, file, rt, 2, "enable_cdi", "true", r, err) < 0)
                return -1;
        return 0;
}

/* imports = [...] of the main config names `dropin` (or the glob of its directory, "DIR/" "*.toml"). */
static int ensure_import(char **text, const char *file, const char *dropin, struct gs_engine_result *r,
                         struct gs_error *err)
{
        gs_autofree char *cur = gs_toml_get(*text, NULL, 0, "imports");
        char dir[4096], glob[4200];
        snprintf(dir, sizeof(dir), "%s", dropin);
        snprintf(glob, sizeof(glob), "\"%s/*.toml\"", dirname(dir));
        gs_autofree char *q = gs_toml_quote(dropin);
        if (cur != NULL && (strstr(cur, q) != NULL || strstr(cur, glob) != NULL))
                return 0;
        gs_autofree char *val = NULL;
        if (cur == NULL || strcmp(cur, "[]") == 0) {
                if (asprintf(&val, "[%s]", q) < 0)
                        return gs_error_set(err, GS_ENOMEM, "out of memory");
        } else {
                size_t l = strlen(cur);
                if (cur[0] != '[' || cur[l - 1] != ']')
                        return gs_error_set(err, GS_EFORMAT, "%s: imports is not an array", file);
                if (asprintf(&val, "%.*s, %s]", (int)(l - 1), cur, q) < 0)
                        return gs_error_set(err, GS_ENOMEM, "out of memory");
        }
        return tset(text, file, NULL, 0, "imports", val, r, err);
}

static struct gs_engine_file *add_file(struct gs_engine_result *r, const char *path)
{
        struct gs_engine_file *f = &r->files[r->nfiles++];
        snprintf(f->path, sizeof(f->path), "%s", path);
        return f;
}

/* The edits of a containerd config `text` of schema `version` (2 or 3) and, with a drop-in, of it. */
static int containerd_edit(const struct gs_engine_opts *o, const char *name, const char *path, char **text,
                           const char *file, unsigned version, struct gs_engine_result *r, struct gs_error *err)
{
        const char *plugin = version == 3 ? "io.containerd.cri.v1.runtime" : "io.containerd.grpc.v1.cri";
        const char *runc[] = {"plugins", plugin, "containerd", "runtimes", "runc", "options"};
        gs_autofree char *systemd = gs_toml_get(*text, runc, 6, "SystemdCgroup");
        gs_autofree char *qpath = gs_toml_quote(path);
        if (qpath == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        const char *dropin = o->drop_in != NULL ? o->drop_in : version == 3 ? "/etc/containerd/conf.d/99-gpuslice.toml" : NULL;
        if (dropin == NULL)
                return containerd_tables(text, file, version, o, name, qpath, systemd, r, err);
        if (ensure_import(text, file, dropin, r, err) < 0)
                return -1;
        struct gs_engine_file *d = add_file(r, dropin);
        if ((d->after = read_text(dropin, err)) == NULL)
                return -1;
        gs_autofree char *dorig = strdup(d->after);
        char vbuf[8];
        snprintf(vbuf, sizeof(vbuf), "%u", version);
        if (dorig == NULL || tset(&d->after, dropin, NULL, 0, "version", vbuf, r, err) < 0 ||
            containerd_tables(&d->after, dropin, version, o, name, qpath, systemd, r, err) < 0)
                return -1;
        d->changed = strcmp(dorig, d->after) != 0;
        return 0;
}

static int containerd(const struct gs_engine_opts *o, const char *name, const char *path, struct gs_engine_result *r,
                      struct gs_error *err)
{
        struct gs_engine_file *f = add_file(r, o->config != NULL ? o->config : "/etc/containerd/config.toml");
        if ((f->after = read_text(f->path, err)) == NULL)
                return -1;
        gs_autofree char *orig = strdup(f->after);
        unsigned version = 0;
        if (orig == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        if (toml_version(f->after, f->path, &version, err) < 0)
                return -1;
        if (version == 1)
                return gs_error_set(err, GS_EFORMAT, "%s: config version 1 (containerd 1.4 and older) is not supported; "
                                    "`containerd config migrate` makes it version 2", f->path);
        /* a fresh file: containerd 1.x's default schema, 2 */
        if (version == 0 && tset(&f->after, f->path, NULL, 0, "version", (version = 2, "2"), r, err) < 0)
                return -1;
        if (containerd_edit(o, name, path, &f->after, f->path, version, r, err) < 0)
                return -1;
        f->changed = strcmp(orig, f->after) != 0;
        return 0;
}

static int crio(const struct gs_engine_opts *o, const char *name, const char *path, struct gs_engine_result *r,
                struct gs_error *err)
{
        struct gs_engine_file *f = add_file(r, o->config != NULL ? o->config : "/etc/crio/crio.conf.d/99-gpuslice.toml");
        if ((f->after = read_text(f->path, err)) == NULL)
                return -1;
        gs_autofree char *orig = strdup(f->after);
        gs_autofree char *qpath = gs_toml_quote(path);
        gs_autofree char *qname = gs_toml_quote(name);
        if (orig == NULL || qpath == NULL || qname == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        if (f->after[0] == '\0') {
                free(f->after);
                f->after = strdup("# Written by `gpuslice runtime configure --runtime crio`: the gpuslice runtime shim\n"
                                  "# (nvidia-container-runtime) as a CRI-O runtime handler.\n");
                if (f->after == NULL)
                        return gs_error_set(err, GS_ENOMEM, "out of memory");
        }
        const char *rt[] = {"crio", "runtime", "runtimes", name};
        if (tset(&f->after, f->path, rt, 4, "runtime_path", qpath, r, err) < 0 ||
            tset(&f->after, f->path, rt, 4, "runtime_type", "\"oci\"", r, err) < 0)
                return -1;
        if (o->set_as_default && tset(&f->after, f->path, rt, 2, "default_runtime", qname, r, err) < 0)
                return -1;
        f->changed = strcmp(orig, f->after) != 0;
        return 0;
}

int gs_engine_configure(const struct gs_engine_opts *o, struct gs_engine_result *r, struct gs_error *err)
{
        memset(r, 0, sizeof(*r));
        const char *name = o->name != NULL ? o->name : DEFAULT_NAME, *path = o->path != NULL ? o->path : DEFAULT_PATH;
        if (name[0] == '\0' || strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != strlen(name))
                return gs_error_set(err, GS_EINVAL, "invalid runtime name '%s' ([A-Za-z0-9_-])", name);
        if (path[0] != '/')
                return gs_error_set(err, GS_EINVAL, "the runtime path must be absolute: %s", path);
        int rc = o->engine == GS_ENGINE_DOCKER       ? docker(o, name, path, r, err)
                 : o->engine == GS_ENGINE_CONTAINERD ? containerd(o, name, path, r, err)
                                                     : crio(o, name, path, r, err);
        if (rc < 0 || o->dry_run)
                return rc;
        for (size_t i = r->nfiles; i-- > 0;) /* a drop-in before the config that imports it */
                if (r->files[i].changed && write_file(&r->files[i], err) < 0)
                        return -1;
        return 0;
}
