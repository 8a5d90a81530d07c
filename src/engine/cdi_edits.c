/* CDI device names resolved in spec directories and their containerEdits applied to an OCI spec,
 * in-process, as a CDI-enabled runtime applies them (tags.cncf.io/container-device-interface:
 * env replaced by key, device nodes with their cgroup rule, mounts, hooks by name). */
#include "engine/engine.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "cdi/cdi.h"
#include "common/cleanup.h"
#include "common/error.h"

bool gs_cdi_is_qualified(const char *name)
{
        const char *slash = strchr(name, '/'), *eq = strchr(name, '=');
        return slash != NULL && eq != NULL && slash > name && eq > slash + 1 && eq[1] != '\0';
}

/* obj[key], made an empty object/array when absent. */
static json_object *child(json_object *obj, const char *key, json_type type)
{
        json_object *c;
        if (json_object_object_get_ex(obj, key, &c) && json_object_is_type(c, type))
                return c;
        c = type == json_type_array ? json_object_new_array() : json_object_new_object();
        json_object_object_add(obj, key, c);
        return c;
}

static const char *str_of(json_object *o, const char *key)
{
        json_object *v;
        return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
                       ? json_object_get_string(v)
                       : NULL;
}

static bool int_of(json_object *o, const char *key, int64_t *out)
{
        json_object *v;
        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
                return false;
        *out = json_object_get_int64(v);
        return true;
}

static int apply_env(json_object *spec, json_object *env, struct gs_error *err)
{
        json_object *penv = child(child(spec, "process", json_type_object), "env", json_type_array);
        for (size_t i = 0; i < json_object_array_length(env); i++) {
                json_object *e = json_object_array_get_idx(env, i);
                const char *s = json_object_get_string(e);
                const char *eq = json_object_is_type(e, json_type_string) ? strchr(s, '=') : NULL;
                if (eq == NULL || eq == s)
                        return gs_error_set(err, GS_EFORMAT, "invalid CDI env entry '%s'", s != NULL ? s : "");
                size_t klen = (size_t)(eq - s) + 1;
                bool replaced = false;
                for (size_t j = 0; j < json_object_array_length(penv) && !replaced; j++) {
                        const char *cur = json_object_get_string(json_object_array_get_idx(penv, j));
                        if (cur != NULL && strncmp(cur, s, klen) == 0) {
                                json_object_array_put_idx(penv, j, json_object_new_string(s));
                                replaced = true;
                        }
                }
                if (!replaced)
                        json_object_array_add(penv, json_object_new_string(s));
        }
        return 0;
}

/* Remove from `arr` every object whose `key` is the string `val`. */
static void remove_by(json_object *arr, const char *key, const char *val)
{
        for (size_t j = json_object_array_length(arr); j-- > 0;) {
                const char *cur = str_of(json_object_array_get_idx(arr, j), key);
                if (cur != NULL && strcmp(cur, val) == 0)
                        json_object_array_del_idx(arr, j, 1);
        }
}

static int apply_node(json_object *spec, json_object *n, struct gs_error *err)
{
        const char *path = str_of(n, "path"), *host = str_of(n, "hostPath"), *type = str_of(n, "type");
        const char *perms = str_of(n, "permissions");
        if (path == NULL || path[0] != '/')
                return gs_error_set(err, GS_EFORMAT, "invalid CDI device node: no absolute path");
        int64_t major = 0, minor = 0, mode = 0, uid = 0, gid = 0;
        bool have_major = int_of(n, "major", &major), have_minor = int_of(n, "minor", &minor);
        bool have_mode = int_of(n, "fileMode", &mode), have_uid = int_of(n, "uid", &uid), have_gid = int_of(n, "gid", &gid);
        char tbuf[2] = "c";
        if (type == NULL || !have_major || !have_minor || !have_mode) {
                struct stat st;
                const char *src = host != NULL ? host : path;
                if (stat(src, &st) < 0)
                        return gs_error_sys(err, "CDI device node %s", src);
                if (!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode))
                        return gs_error_set(err, GS_EFORMAT, "CDI device node %s is not a device", src);
                if (type == NULL) {
                        tbuf[0] = S_ISBLK(st.st_mode) ? 'b' : 'c';
                        type = tbuf;
                }
                if (!have_major)
                        major = major(st.st_rdev);
                if (!have_minor)
                        minor = minor(st.st_rdev);
                if (!have_mode)
                        mode = st.st_mode & 0777;
        }
        if (strcmp(type, "c") != 0 && strcmp(type, "b") != 0 && strcmp(type, "u") != 0)
                return gs_error_set(err, GS_EFORMAT, "invalid CDI device node type '%s' for %s", type, path);
        json_object *linux_ = child(spec, "linux", json_type_object);
        json_object *devs = child(linux_, "devices", json_type_array);
        remove_by(devs, "path", path);
        json_object *d = json_object_new_object();
        json_object_object_add(d, "path", json_object_new_string(path));
        json_object_object_add(d, "type", json_object_new_string(type));
        json_object_object_add(d, "major", json_object_new_int64(major));
        json_object_object_add(d, "minor", json_object_new_int64(minor));
        json_object_object_add(d, "fileMode", json_object_new_int64(mode));
        if (have_uid)
                json_object_object_add(d, "uid", json_object_new_int64(uid));
        if (have_gid)
                json_object_object_add(d, "gid", json_object_new_int64(gid));
        json_object_array_add(devs, d);
        json_object *rule = json_object_new_object();
        json_object_object_add(rule, "allow", json_object_new_boolean(1));
        json_object_object_add(rule, "type", json_object_new_string(type));
        json_object_object_add(rule, "major", json_object_new_int64(major));
        json_object_object_add(rule, "minor", json_object_new_int64(minor));
        json_object_object_add(rule, "access", json_object_new_string(perms != NULL && perms[0] ? perms : "rwm"));
        json_object_array_add(child(child(linux_, "resources", json_type_object), "devices", json_type_array), rule);
        return 0;
}

static int apply_mount(json_object *spec, json_object *m, struct gs_error *err)
{
        const char *host = str_of(m, "hostPath"), *ctr = str_of(m, "containerPath"), *type = str_of(m, "type");
        if (host == NULL || ctr == NULL || ctr[0] != '/')
                return gs_error_set(err, GS_EFORMAT, "invalid CDI mount: hostPath and an absolute containerPath needed");
        json_object *mounts = child(spec, "mounts", json_type_array);
        remove_by(mounts, "destination", ctr);
        json_object *o = json_object_new_object();
        json_object_object_add(o, "destination", json_object_new_string(ctr));
        json_object_object_add(o, "type", json_object_new_string(type != NULL && type[0] ? type : "bind"));
        json_object_object_add(o, "source", json_object_new_string(host));
        json_object *opts;
        if (json_object_object_get_ex(m, "options", &opts) && json_object_is_type(opts, json_type_array))
                json_object_object_add(o, "options", json_object_get(opts));
        json_object_array_add(mounts, o);
        return 0;
}

static int apply_hook(json_object *spec, json_object *h, struct gs_error *err)
{
        static const char *const names[] = {"prestart", "createRuntime", "createContainer", "startContainer",
                                            "poststart", "poststop"};
        const char *name = str_of(h, "hookName"), *path = str_of(h, "path");
        bool known = false;
        for (size_t i = 0; name != NULL && i < GS_ARRAY_SIZE(names); i++)
                known |= strcmp(name, names[i]) == 0;
        if (!known || path == NULL || path[0] != '/')
                return gs_error_set(err, GS_EFORMAT, "invalid CDI hook (hookName '%s', path '%s')", name ? name : "",
                                    path ? path : "");
        json_object *o = json_object_new_object();
        json_object_object_add(o, "path", json_object_new_string(path));
        static const char *const keys[] = {"args", "env", "timeout"};
        for (size_t i = 0; i < GS_ARRAY_SIZE(keys); i++) {
                json_object *v;
                if (json_object_object_get_ex(h, keys[i], &v))
                        json_object_object_add(o, keys[i], json_object_get(v));
        }
        json_object_array_add(child(child(spec, "hooks", json_type_object), name, json_type_array), o);
        return 0;
}

typedef int (*apply_fn)(json_object *spec, json_object *item, struct gs_error *err);

static int each(json_object *spec, json_object *edits, const char *key, apply_fn fn, struct gs_error *err)
{
        json_object *arr;
        if (!json_object_object_get_ex(edits, key, &arr) || arr == NULL)
                return 0;
        if (!json_object_is_type(arr, json_type_array))
                return gs_error_set(err, GS_EFORMAT, "CDI containerEdits.%s is not a list", key);
        for (size_t i = 0; i < json_object_array_length(arr); i++)
                if (fn(spec, json_object_array_get_idx(arr, i), err) < 0)
                        return -1;
        return 0;
}

int gs_cdi_apply_edits(json_object *spec, json_object *edits, struct gs_error *err)
{
        if (edits == NULL)
                return 0;
        if (!json_object_is_type(edits, json_type_object))
                return gs_error_set(err, GS_EFORMAT, "CDI containerEdits is not an object");
        json_object *env;
        if (json_object_object_get_ex(edits, "env", &env) && env != NULL) {
                if (!json_object_is_type(env, json_type_array))
                        return gs_error_set(err, GS_EFORMAT, "CDI containerEdits.env is not a list");
                if (apply_env(spec, env, err) < 0)
                        return -1;
        }
        if (each(spec, edits, "deviceNodes", apply_node, err) < 0 || each(spec, edits, "mounts", apply_mount, err) < 0 ||
            each(spec, edits, "hooks", apply_hook, err) < 0)
                return -1;
        json_object *gids;
        if (json_object_object_get_ex(edits, "additionalGids", &gids) && json_object_is_type(gids, json_type_array)) {
                json_object *ag = child(child(child(spec, "process", json_type_object), "user", json_type_object),
                                        "additionalGids", json_type_array);
                for (size_t i = 0; i < json_object_array_length(gids); i++)
                        json_object_array_add(ag, json_object_get(json_object_array_get_idx(gids, i)));
        }
        return 0;
}

/* ------------------------------------------------------------------------------------------ */

struct found {
        json_object *spec;   /* borrowed */
        json_object *device; /* borrowed */
};

/* For each name, the last spec (in order) that offers it. */
static void match(json_object *spec, const char *const *names, size_t n, struct found *f)
{
        const char *kind = str_of(spec, "kind");
        json_object *devs;
        if (kind == NULL || !json_object_object_get_ex(spec, "devices", &devs) || !json_object_is_type(devs, json_type_array))
                return;
        size_t klen = strlen(kind);
        for (size_t i = 0; i < n; i++) {
                if (strncmp(names[i], kind, klen) != 0 || names[i][klen] != '=')
                        continue;
                for (size_t d = 0; d < json_object_array_length(devs); d++) {
                        json_object *dev = json_object_array_get_idx(devs, d);
                        const char *dn = str_of(dev, "name");
                        if (dn != NULL && strcmp(dn, names[i] + klen + 1) == 0)
                                f[i] = (struct found){spec, dev};
                }
        }
}

static int apply_found(json_object *oci, const char *const *names, size_t n, struct found *f, struct gs_error *err)
{
        char missing[512] = "";
        for (size_t i = 0; i < n; i++)
                if (f[i].device == NULL && strlen(missing) + strlen(names[i]) + 2 < sizeof(missing))
                        snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing), "%s%s",
                                 missing[0] ? ", " : "", names[i]);
        if (missing[0] != '\0')
                return gs_error_set(err, GS_ENOTFOUND, "unresolvable CDI devices %s", missing);
        for (size_t i = 0; i < n; i++) {
                bool seen = false; /* the spec's own edits once */
                for (size_t j = 0; j < i; j++)
                        seen |= f[j].spec == f[i].spec;
                json_object *e;
                if (!seen && json_object_object_get_ex(f[i].spec, "containerEdits", &e) &&
                    gs_cdi_apply_edits(oci, e, err) < 0)
                        return -1;
                bool dup = false;
                for (size_t j = 0; j < i; j++)
                        dup |= f[j].device == f[i].device;
                if (!dup && json_object_object_get_ex(f[i].device, "containerEdits", &e) &&
                    gs_cdi_apply_edits(oci, e, err) < 0)
                        return -1;
        }
        return 0;
}

int gs_cdi_inject_specs(json_object *oci, const char *const *names, size_t n, json_object *const *specs,
                        size_t nspecs, struct gs_error *err)
{
        gs_autofree struct found *f = calloc(n + 1, sizeof(*f));
        if (f == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        for (size_t s = 0; s < nspecs; s++)
                match(specs[s], names, n, f);
        return apply_found(oci, names, n, f, err);
}

static bool spec_file(const char *name)
{
        size_t l = strlen(name);
        return name[0] != '.' && ((l > 5 && strcmp(name + l - 5, ".yaml") == 0) ||
                                  (l > 4 && strcmp(name + l - 4, ".yml") == 0) ||
                                  (l > 5 && strcmp(name + l - 5, ".json") == 0));
}

static int cmp_names(const struct dirent **a, const struct dirent **b) { return strcmp((*a)->d_name, (*b)->d_name); }

int gs_cdi_inject(json_object *oci, const char *const *names, size_t n, const struct gs_hostconfig_list *dirs,
                  struct gs_error *err)
{
        json_object *specs[256] = {0};
        size_t nspecs = 0;
        int rc = -1;
        for (unsigned d = 0; d < dirs->n; d++) {
                struct dirent **ents = NULL;
                int ne = scandir(dirs->v[d], &ents, NULL, cmp_names);
                for (int i = 0; i < ne; i++) {
                        char path[4096];
                        snprintf(path, sizeof(path), "%s/%s", dirs->v[d], ents[i]->d_name);
                        struct gs_error lerr = {0};
                        json_object *s = NULL;
                        if (spec_file(ents[i]->d_name) && nspecs < GS_ARRAY_SIZE(specs) &&
                            (s = gs_cdi_spec_load(path, &lerr)) != NULL)
                                specs[nspecs++] = s; /* a broken spec is skipped, as CDI's cache does */
                        free(ents[i]);
                }
                free(ents);
        }
        rc = gs_cdi_inject_specs(oci, names, n, specs, nspecs, err);
        for (size_t i = 0; i < nspecs; i++)
                json_object_put(specs[i]);
        return rc;
}
