/*
 * `gpuslice runtime configure`: the shim registered as a runtime of docker (daemon.json),
 * containerd (config.toml, schema version 2 or 3, or a drop-in it imports) or CRI-O (a drop-in
 * under crio.conf.d). Everything else in a file is kept; a file is written only when it changes,
 * through conffile.c (a link followed, owner and mode kept, a backup, atomically), containerd's
 * after containerd itself has read the new text. A value of the wrong type where gpuslice must
 * write is refused, never replaced.
 */
#include "engine/engine.h"

#include <errno.h>
#include <fnmatch.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"

#define DEFAULT_NAME "nvidia"
#define DEFAULT_PATH "/usr/bin/nvidia-container-runtime"

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
                free(r->files[i].before);
                r->files[i].after = r->files[i].before = NULL;
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

static void add_note(struct gs_engine_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_note(struct gs_engine_result *r, const char *fmt, ...)
{
        if (r->nnotes == GS_ENGINE_MAX_NOTES)
                return;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->notes[r->nnotes++], sizeof(r->notes[0]), fmt, ap);
        va_end(ap);
}

/* The next file of the result, read (through a link; "" when it does not exist). */
static struct gs_engine_file *add_file(struct gs_engine_result *r, const char *path, struct gs_error *err)
{
        struct gs_engine_file *f = &r->files[r->nfiles++];
        snprintf(f->path, sizeof(f->path), "%s", path);
        if (gs_conffile_read(path, &f->cf, &f->after, err) < 0)
                return NULL;
        if ((f->before = strdup(f->after)) == NULL) {
                gs_error_set(err, GS_ENOMEM, "out of memory");
                return NULL;
        }
        return f;
}

/* ------------------------------------------------------------------------------------------ */
/* docker: daemon.json */

static const char *json_type_word(json_object *v)
{
        switch (json_object_get_type(v)) {
        case json_type_null: return "null";
        case json_type_boolean: return "a boolean";
        case json_type_double:
        case json_type_int: return "a number";
        case json_type_object: return "an object";
        case json_type_array: return "an array";
        default: return "a string";
        }
}

/* root[key] when it is there: of type `want` (else refused, naming what it is), NULL when absent. */
static int json_member(json_object *obj, const char *file, const char *what, const char *key, json_type want,
                       json_object **out, struct gs_error *err)
{
        *out = NULL;
        if (!json_object_object_get_ex(obj, key, out))
                return 0;
        if (*out == NULL || !json_object_is_type(*out, want)) {
                const char *is = json_type_word(*out), *wants = want == json_type_object    ? "an object"
                                                              : want == json_type_boolean ? "a boolean"
                                                                                          : "a string";
                return gs_error_set(err, GS_EFORMAT, "%s: %s is %s, not %s; fix it by hand (nothing was written)", file,
                                    what, is, wants);
        }
        return 0;
}

/* daemon.json's members that gpuslice writes (runtimes.NAME; default-runtime with
 * --set-as-default; features.cdi with --cdi.enabled): added, or replaced where they hold another
 * value of the right type; a wrong type (null included) is refused. */
static int docker_edit(const struct gs_engine_opts *o, const char *name, const char *path, json_object *root,
                       const char *file, struct gs_engine_result *r, struct gs_error *err)
{
        json_object *rts, *rt, *v, *feat;
        if (json_member(root, file, "runtimes", "runtimes", json_type_object, &rts, err) < 0)
                return -1;
        if (rts == NULL) {
                rts = json_object_new_object();
                json_object_object_add(root, "runtimes", rts);
        }
        json_object *want = json_object_new_object();
        json_object_object_add(want, "path", json_object_new_string(path));
        json_object_object_add(want, "args", json_object_new_array());
        if (!json_object_object_get_ex(rts, name, &rt) || !json_object_equal(rt, want)) {
                json_object_object_add(rts, name, json_object_get(want));
                note(r, "%s: runtimes.%s = {\"path\": \"%s\", \"args\": []}", file, name, path);
        }
        json_object_put(want);
        if (o->set_as_default && json_member(root, file, "default-runtime", "default-runtime", json_type_string, &v, err) < 0)
                return -1;
        if (o->set_as_default && (v == NULL || strcmp(json_object_get_string(v), name) != 0)) {
                json_object_object_add(root, "default-runtime", json_object_new_string(name));
                note(r, "%s: default-runtime = \"%s\"", file, name);
        }
        if (!o->cdi_enabled)
                return 0;
        if (json_member(root, file, "features", "features", json_type_object, &feat, err) < 0 ||
            (feat != NULL && json_member(feat, file, "features.cdi", "cdi", json_type_boolean, &v, err) < 0))
                return -1;
        if (feat == NULL || v == NULL || !json_object_get_boolean(v)) {
                if (feat == NULL) {
                        feat = json_object_new_object();
                        json_object_object_add(root, "features", feat);
                }
                json_object_object_add(feat, "cdi", json_object_new_boolean(1));
                note(r, "%s: features.cdi = true", file);
        }
        return 0;
}

static int docker(const struct gs_engine_opts *o, const char *name, const char *path, struct gs_engine_result *r,
                  struct gs_error *err)
{
        struct gs_engine_file *f = add_file(r, o->config != NULL ? o->config : "/etc/docker/daemon.json", err);
        if (f == NULL)
                return -1;
        const char *p = f->before + strspn(f->before, " \t\r\n");
        json_object *root = *p == '\0' ? json_object_new_object() : json_tokener_parse(f->before);
        if (root == NULL || !json_object_is_type(root, json_type_object)) {
                json_object_put(root);
                return gs_error_set(err, GS_EFORMAT, "%s: not a JSON object", f->path);
        }
        json_object *before = NULL;
        json_object_deep_copy(root, &before, NULL);
        int rc = docker_edit(o, name, path, root, f->path, r, err);
        f->changed = rc == 0 && !json_object_equal(before, root);
        const char *out = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                                       JSON_C_TO_STRING_NOSLASHESCAPE);
        if (f->changed) {
                free(f->after);
                if (out == NULL || asprintf(&f->after, "%s\n", out) < 0)
                        f->after = NULL;
        }
        json_object_put(before);
        json_object_put(root);
        if (rc < 0)
                return -1;
        return f->after != NULL ? 0 : gs_error_set(err, GS_ENOMEM, "out of memory");
}

/* ------------------------------------------------------------------------------------------ */
/* TOML: containerd and CRI-O */

/* err's message as "FILE: message<tail>". */
static int in_file(struct gs_error *err, const char *file, const char *tail)
{
        char msg[sizeof(err->msg)];
        snprintf(msg, sizeof(msg), "%s", err->msg);
        return gs_error_set(err, err->code, "%s: %s%s", file, msg, tail);
}

/* text := text with path.key = value; a note when it changed. */
static int tset(char **text, const char *file, const char *const *path, size_t n, const char *key, const char *value,
                struct gs_engine_result *r, struct gs_error *err)
{
        bool changed;
        char *t = gs_toml_set(*text, path, n, key, value, &changed, err);
        if (t == NULL)
                return in_file(err, file, "");
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

/* The file is TOML the editor reads (else refused, naming the line, before anything is changed). */
static int tcheck(const char *text, const char *file, struct gs_error *err)
{
        if (gs_toml_check(text, err) < 0)
                return in_file(err, file, "; nothing was written");
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

/* imports = [...] of the main config covers `dropin` (an entry or a glob that matches it, relative
 * entries from the config's directory, as containerd reads them); else it is appended. */
static int ensure_import(char **text, const char *file, const char *dropin, struct gs_engine_result *r,
                         struct gs_error *err)
{
        char **imp = NULL;
        size_t n = 0;
        if (gs_toml_strings(*text, NULL, 0, "imports", &imp, &n, err) < 0)
                return in_file(err, file, "");
        char dir[4096];
        snprintf(dir, sizeof(dir), "%s", file);
        const char *d = dirname(dir);
        bool have = false;
        for (size_t i = 0; i < n && !have; i++) {
                char full[8300];
                snprintf(full, sizeof(full), imp[i][0] == '/' ? "%.0s%s" : "%s/%s", d, imp[i]);
                have = strcmp(full, dropin) == 0 || fnmatch(full, dropin, FNM_PATHNAME) == 0;
        }
        gs_toml_strings_free(&imp, &n);
        if (have)
                return 0;
        gs_autofree char *q = gs_toml_quote(dropin);
        char *t = q != NULL ? gs_toml_append(*text, NULL, 0, "imports", q, err) : NULL;
        if (t == NULL)
                return q == NULL ? gs_error_set(err, GS_ENOMEM, "out of memory") : in_file(err, file, "");
        free(*text);
        *text = t;
        note(r, "%s: imports += %s", file, q);
        return 0;
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
        struct gs_engine_file *d = add_file(r, dropin, err);
        if (d == NULL || tcheck(d->after, dropin, err) < 0)
                return -1;
        char vbuf[8];
        snprintf(vbuf, sizeof(vbuf), "%u", version);
        if (tset(&d->after, dropin, NULL, 0, "version", vbuf, r, err) < 0 ||
            containerd_tables(&d->after, dropin, version, o, name, qpath, systemd, r, err) < 0)
                return -1;
        d->changed = strcmp(d->before, d->after) != 0;
        return 0;
}

static int containerd(const struct gs_engine_opts *o, const char *name, const char *path, struct gs_engine_result *r,
                      struct gs_error *err)
{
        struct gs_engine_file *f = add_file(r, o->config != NULL ? o->config : "/etc/containerd/config.toml", err);
        unsigned version = 0;
        if (f == NULL || tcheck(f->after, f->path, err) < 0 || toml_version(f->after, f->path, &version, err) < 0)
                return -1;
        if (version == 1)
                return gs_error_set(err, GS_EFORMAT, "%s: config version 1 (containerd 1.4 and older) is not supported; "
                                    "`containerd config migrate` makes it version 2", f->path);
        /* a fresh file: containerd 1.x's default schema, 2 */
        if (version == 0 && tset(&f->after, f->path, NULL, 0, "version", (version = 2, "2"), r, err) < 0)
                return -1;
        if (containerd_edit(o, name, path, &f->after, f->path, version, r, err) < 0)
                return -1;
        f->changed = strcmp(f->before, f->after) != 0;
        return 0;
}

static int crio(const struct gs_engine_opts *o, const char *name, const char *path, struct gs_engine_result *r,
                struct gs_error *err)
{
        struct gs_engine_file *f = add_file(r, o->config != NULL ? o->config : "/etc/crio/crio.conf.d/99-gpuslice.toml", err);
        if (f == NULL || tcheck(f->after, f->path, err) < 0)
                return -1;
        gs_autofree char *qpath = gs_toml_quote(path);
        gs_autofree char *qname = gs_toml_quote(name);
        if (qpath == NULL || qname == NULL)
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
        f->changed = strcmp(f->before, f->after) != 0;
        return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* writing, checked by containerd */

struct ctr_check {
        const char *prog;  /* containerd's path */
        const char *file;  /* the file as named, for the message */
};

/* `containerd --config TMP config dump`: containerd reads the new text as it would at a restart. */
static int containerd_check(const char *tmp, void *arg, struct gs_error *err)
{
        const struct ctr_check *c = arg;
        char *const argv[] = {(char *)c->prog, "--config", (char *)tmp, "config", "dump", NULL};
        char said[1024];
        int rc = gs_conffile_run(argv, said, sizeof(said), err);
        if (rc < 0)
                return -1;
        if (rc != 0)
                return gs_error_set(err, GS_EFORMAT, "%s: containerd refuses the edited config (`%s --config FILE config dump`"
                                    " exit %d: %s); the original is untouched", c->file, c->prog, rc, said[0] ? said : "no message");
        return 0;
}

/* Put a file already written back as it was (its old text, or no file), its backup gone; when
 * that fails, the error says so and where the backup is. */
static void put_back(struct gs_engine_file *f, struct gs_error *err)
{
        struct gs_error e = {0};
        char bak[4200] = "";
        int rc = f->cf.exists ? gs_conffile_write(&f->cf, f->before, f->before, NULL, NULL, bak, sizeof(bak), &e)
                              : unlink(f->cf.real) < 0 ? gs_error_sys(&e, "cannot remove %s", f->cf.real) : 0;
        if (bak[0] != '\0')
                unlink(bak);
        if (rc == 0) {
                if (f->backup[0] != '\0')
                        unlink(f->backup);
                f->backup[0] = '\0';
                return;
        }
        char msg[sizeof(err->msg)];
        snprintf(msg, sizeof(msg), "%s", err->msg);
        gs_error_set(err, err->code, "%s; and %s, already written, could not be put back (%s)%s%s", msg, f->path, e.msg,
                     f->backup[0] ? ": its old text is in " : "", f->backup);
}

static int write_files(const struct gs_engine_opts *o, struct gs_engine_result *r, struct gs_error *err)
{
        char prog[4096];
        struct ctr_check cc = {.prog = prog};
        bool check = o->engine == GS_ENGINE_CONTAINERD;
        if (check && gs_conffile_find_program("containerd", prog, sizeof(prog)) < 0) {
                check = false;
                for (size_t i = 0; i < r->nfiles; i++)
                        if (r->files[i].changed)
                                add_note(r, "%s: not checked by containerd (containerd not found on PATH)", r->files[i].path);
        }
        for (size_t i = r->nfiles; i-- > 0;) { /* a drop-in before the config that imports it */
                struct gs_engine_file *f = &r->files[i];
                if (!f->changed)
                        continue;
                cc.file = f->path;
                if (gs_conffile_write(&f->cf, f->after, f->before, check ? containerd_check : NULL, &cc, f->backup,
                                      sizeof(f->backup), err) < 0) {
                        for (size_t j = i + 1; j < r->nfiles; j++)
                                if (r->files[j].changed)
                                        put_back(&r->files[j], err);
                        return -1;
                }
        }
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
        return write_files(o, r, err);
}
