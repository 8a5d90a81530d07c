/* The OCI state on a hook's stdin and the bundle's config.json, parsed leniently (json-c). */
#include "runtime/oci.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/path.h"
#include "common/strutil.h"

static void json_putp(struct json_object **o)
{
        if (*o != NULL)
                json_object_put(*o);
}
#define gs_autojson __attribute__((cleanup(json_putp)))

/* Parse exactly `len` bytes of JSON (no trailing garbage) into an object. */
static struct json_object *parse_object(const char *text, size_t len, const char *what, struct gs_error *err)
{
        if (len > INT32_MAX) {
                gs_error_set(err, GS_EFORMAT, "%s: too large", what);
                return NULL;
        }
        struct json_tokener *tok = json_tokener_new();
        if (tok == NULL) {
                gs_error_set(err, GS_ENOMEM, "out of memory");
                return NULL;
        }
        struct json_object *o = json_tokener_parse_ex(tok, text, (int)len);
        enum json_tokener_error jerr = json_tokener_get_error(tok);
        size_t used = json_tokener_get_parse_end(tok);
        json_tokener_free(tok);
        if (o == NULL || jerr != json_tokener_success) {
                if (o != NULL)
                        json_object_put(o);
                gs_error_set(err, GS_EFORMAT, "%s: %s", what,
                             jerr == json_tokener_continue ? "unexpected end of input" : json_tokener_error_desc(jerr));
                return NULL;
        }
        while (used < len && (text[used] == ' ' || text[used] == '\n' || text[used] == '\r' || text[used] == '\t'))
                used++;
        if (used != len || !json_object_is_type(o, json_type_object)) {
                json_object_put(o);
                gs_error_set(err, GS_EFORMAT, "%s: %s", what, used != len ? "trailing data" : "not a JSON object");
                return NULL;
        }
        return o;
}

/* A string member into a fixed buffer: 1 copied, 0 absent (or null), -1 wrong type / too long. */
static int get_string(struct json_object *o, const char *key, char *out, size_t len, const char *what,
                      struct gs_error *err)
{
        struct json_object *v;
        if (!json_object_object_get_ex(o, key, &v) || v == NULL)
                return 0;
        if (!json_object_is_type(v, json_type_string))
                return gs_error_set(err, GS_EFORMAT, "%s: '%s' is not a string", what, key);
        const char *s = json_object_get_string(v);
        if (strlen(s) != (size_t)json_object_get_string_len(v))
                return gs_error_set(err, GS_EFORMAT, "%s: '%s' holds a NUL byte", what, key);
        if (!gs_strlcpy(out, s, len))
                return gs_error_set(err, GS_EFORMAT, "%s: '%s' is too long", what, key);
        return 1;
}

int gs_oci_state_parse(const char *json, size_t len, struct gs_oci_state *st, struct gs_error *err)
{
        static const char what[] = "invalid OCI state";
        memset(st, 0, sizeof(*st));
        gs_autojson struct json_object *o = parse_object(json, len, what, err);
        if (o == NULL)
                return -1;
        int rc = get_string(o, "id", st->id, sizeof(st->id), what, err);
        if (rc < 0)
                return -1;
        if (rc == 0 || st->id[0] == '\0')
                return gs_error_set(err, GS_EFORMAT, "%s: no container id", what);
        rc = get_string(o, "bundle", st->bundle, sizeof(st->bundle), what, err);
        if (rc == 0)
                rc = get_string(o, "bundlePath", st->bundle, sizeof(st->bundle), what, err);
        if (rc < 0)
                return -1;
        if (rc == 0 || st->bundle[0] != '/')
                return gs_error_set(err, GS_EFORMAT, "%s: %s", what,
                                    rc == 0 ? "no bundle" : "the bundle is not an absolute path");
        if (get_string(o, "status", st->status, sizeof(st->status), what, err) < 0)
                return -1;
        struct json_object *p;
        if (json_object_object_get_ex(o, "pid", &p) && p != NULL) {
                if (!json_object_is_type(p, json_type_int))
                        return gs_error_set(err, GS_EFORMAT, "%s: 'pid' is not an integer", what);
                int64_t pid = json_object_get_int64(p);
                if (pid < 0 || pid > 0x3fffffff)
                        return gs_error_set(err, GS_EFORMAT, "%s: invalid pid %lld", what, (long long)pid);
                st->pid = (pid_t)pid;
        }
        return 0;
}

/* All of fd, at most max bytes (more is an error). */
static char *read_all(int fd, size_t max, size_t *len, const char *what, struct gs_error *err)
{
        size_t cap = 4096, n = 0;
        gs_autofree char *buf = malloc(cap);
        if (buf == NULL) {
                gs_error_set(err, GS_ENOMEM, "out of memory");
                return NULL;
        }
        for (;;) {
                if (n == cap) {
                        if (cap > max) {
                                gs_error_set(err, GS_EFORMAT, "%s: larger than %zu bytes", what, max);
                                return NULL;
                        }
                        char *nb = realloc(buf, cap * 2);
                        if (nb == NULL) {
                                gs_error_set(err, GS_ENOMEM, "out of memory");
                                return NULL;
                        }
                        buf = nb;
                        cap *= 2;
                }
                ssize_t r = read(fd, buf + n, cap - n);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0) {
                        gs_error_sys(err, "%s: read", what);
                        return NULL;
                }
                if (r == 0)
                        break;
                n += (size_t)r;
        }
        if (n > max) {
                gs_error_set(err, GS_EFORMAT, "%s: larger than %zu bytes", what, max);
                return NULL;
        }
        *len = n;
        return gs_steal_ptr(&buf);
}

int gs_oci_state_read(int fd, struct gs_oci_state *st, struct gs_error *err)
{
        size_t len = 0;
        gs_autofree char *buf = read_all(fd, GS_OCI_STATE_MAX, &len, "invalid OCI state", err);
        if (buf == NULL)
                return -1;
        if (len == 0)
                return gs_error_set(err, GS_EFORMAT, "invalid OCI state: nothing on stdin (run me as an OCI hook)");
        return gs_oci_state_parse(buf, len, st, err);
}

/* A JSON array of strings into a NULL-terminated vector. */
static int string_array(struct json_object *arr, char ***out, size_t *n, const char *what, const char *key,
                        struct gs_error *err)
{
        if (!json_object_is_type(arr, json_type_array))
                return gs_error_set(err, GS_EFORMAT, "%s: '%s' is not an array", what, key);
        size_t len = json_object_array_length(arr);
        char **v = calloc(len + 1, sizeof(char *));
        if (v == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        *out = v;
        *n = 0;
        for (size_t i = 0; i < len; i++) {
                struct json_object *e = json_object_array_get_idx(arr, i);
                if (!json_object_is_type(e, json_type_string))
                        return gs_error_set(err, GS_EFORMAT, "%s: '%s' holds a non-string", what, key);
                const char *s = json_object_get_string(e);
                if (strlen(s) != (size_t)json_object_get_string_len(e))
                        continue; /* embedded NUL: execve would cut it; drop it */
                if ((v[(*n)++] = strdup(s)) == NULL)
                        return gs_error_set(err, GS_ENOMEM, "out of memory");
        }
        return 0;
}

static int parse_process(struct json_object *proc, struct gs_oci_config *cfg, const char *what, struct gs_error *err)
{
        struct json_object *v;
        if (!json_object_is_type(proc, json_type_object))
                return gs_error_set(err, GS_EFORMAT, "%s: 'process' is not an object", what);
        if (json_object_object_get_ex(proc, "env", &v) && v != NULL &&
            string_array(v, &cfg->env, &cfg->nenv, what, "process.env", err) < 0)
                return -1;
        struct json_object *user, *id;
        if (json_object_object_get_ex(proc, "user", &user) && json_object_is_type(user, json_type_object)) {
                if (json_object_object_get_ex(user, "uid", &id) && json_object_is_type(id, json_type_int))
                        cfg->uid = (uid_t)json_object_get_int64(id);
                if (json_object_object_get_ex(user, "gid", &id) && json_object_is_type(id, json_type_int))
                        cfg->gid = (gid_t)json_object_get_int64(id);
        }
        struct json_object *caps, *bounding;
        if (json_object_object_get_ex(proc, "capabilities", &caps) && json_object_is_type(caps, json_type_object) &&
            json_object_object_get_ex(caps, "bounding", &bounding) && json_object_is_type(bounding, json_type_array)) {
                size_t n = json_object_array_length(bounding);
                for (size_t i = 0; i < n; i++) {
                        struct json_object *c = json_object_array_get_idx(bounding, i);
                        if (json_object_is_type(c, json_type_string) &&
                            strcmp(json_object_get_string(c), "CAP_SYS_ADMIN") == 0)
                                cfg->privileged = true;
                }
        }
        return 0;
}

void gs_oci_path_clean(char *p)
{
        /* Go's path/filepath.Clean, in place (what is written never overtakes what is read) */
        size_t n = strlen(p), r = 0, w = 0, dotdot = 0;
        bool rooted = n > 0 && p[0] == '/';
        if (rooted) {
                w = r = dotdot = 1;
        }
        while (r < n) {
                if (p[r] == '/') {
                        r++;
                } else if (p[r] == '.' && (r + 1 == n || p[r + 1] == '/')) {
                        r++;
                } else if (p[r] == '.' && p[r + 1] == '.' && (r + 2 == n || p[r + 2] == '/')) {
                        r += 2;
                        if (w > dotdot) {
                                w--;
                                while (w > dotdot && p[w] != '/')
                                        w--;
                        } else if (!rooted) {
                                if (w > 0)
                                        p[w++] = '/';
                                p[w++] = '.';
                                p[w++] = '.';
                                dotdot = w;
                        }
                } else {
                        if ((rooted && w != 1) || (!rooted && w != 0))
                                p[w++] = '/';
                        while (r < n && p[r] != '/')
                                p[w++] = p[r++];
                }
        }
        if (w == 0)
                p[w++] = '.';
        p[w] = '\0';
}

/* mounts[]: the devices asked for by mounts of /dev/null under GS_OCI_DEVICES_DIR (see oci.h). */
static int parse_device_mounts(struct json_object *mounts, struct gs_oci_config *cfg, const char *what, struct gs_error *err)
{
        if (!json_object_is_type(mounts, json_type_array))
                return gs_error_set(err, GS_EFORMAT, "%s: 'mounts' is not an array", what);
        size_t n = json_object_array_length(mounts);
        static const char root[] = GS_OCI_DEVICES_DIR;
        for (size_t i = 0; i < n; i++) {
                struct json_object *m = json_object_array_get_idx(mounts, i), *src, *dst;
                if (!json_object_is_type(m, json_type_object) || !json_object_object_get_ex(m, "source", &src) ||
                    !json_object_object_get_ex(m, "destination", &dst) || !json_object_is_type(src, json_type_string) ||
                    !json_object_is_type(dst, json_type_string))
                        continue;
                char s[PATH_MAX], d[PATH_MAX];
                if (!gs_strlcpy(s, json_object_get_string(src), sizeof(s)) ||
                    !gs_strlcpy(d, json_object_get_string(dst), sizeof(d)))
                        continue;
                gs_oci_path_clean(s);
                gs_oci_path_clean(d);
                if (strcmp(s, "/dev/null") != 0 || strncmp(d, root, sizeof(root) - 1) != 0 || d[sizeof(root) - 1] != '/')
                        continue;
                const char *dev = d + sizeof(root); /* cleaned: no slash at either end */
                bool seen = false;
                for (size_t j = 0; j < cfg->ndevice_mounts && !seen; j++)
                        seen = strcmp(cfg->device_mounts[j], dev) == 0;
                if (seen || dev[0] == '\0')
                        continue;
                if (cfg->ndevice_mounts == GS_OCI_MAX_DEVICE_MOUNTS)
                        return gs_error_set(err, GS_EFORMAT, "%s: more than %d device mounts under %s", what,
                                            GS_OCI_MAX_DEVICE_MOUNTS, root);
                if (cfg->device_mounts == NULL &&
                    (cfg->device_mounts = calloc(GS_OCI_MAX_DEVICE_MOUNTS + 1, sizeof(char *))) == NULL)
                        return gs_error_set(err, GS_ENOMEM, "out of memory");
                if ((cfg->device_mounts[cfg->ndevice_mounts++] = strdup(dev)) == NULL)
                        return gs_error_set(err, GS_ENOMEM, "out of memory");
        }
        return 0;
}

/* One hook list (createRuntime or prestart): those whose args name a GPU, their args kept. */
static int parse_gpu_hooks(struct json_object *list, struct gs_oci_config *cfg, struct gs_error *err)
{
        if (!json_object_is_type(list, json_type_array))
                return 0;
        for (size_t i = 0; i < json_object_array_length(list); i++) {
                struct json_object *h = json_object_array_get_idx(list, i), *args = NULL;
                if (!json_object_is_type(h, json_type_object) || !json_object_object_get_ex(h, "args", &args) ||
                    !json_object_is_type(args, json_type_array))
                        continue;
                size_t n = json_object_array_length(args);
                bool gpu = false;
                for (size_t k = 0; k < n; k++) {
                        struct json_object *a = json_object_array_get_idx(args, k);
                        gpu = gpu || (json_object_is_type(a, json_type_string) &&
                                      strncmp(json_object_get_string(a), "--gpu=", 6) == 0);
                }
                if (!gpu)
                        continue;
                if (n > 256) /* (its GPU's limits must not be lost: an error, never a skip) */
                        return gs_error_set(err, GS_EFORMAT, "invalid OCI config: a hook naming a GPU has %zu args", n);
                if (cfg->ngpu_hooks == GS_OCI_MAX_GPU_HOOKS)
                        return gs_error_set(err, GS_EFORMAT, "invalid OCI config: more than %d hooks naming a GPU",
                                            GS_OCI_MAX_GPU_HOOKS);
                if (cfg->gpu_hooks == NULL && (cfg->gpu_hooks = calloc(GS_OCI_MAX_GPU_HOOKS + 1, sizeof(char **))) == NULL)
                        return gs_error_set(err, GS_ENOMEM, "out of memory");
                char **v = calloc(n + 1, sizeof(char *));
                if (v == NULL)
                        return gs_error_set(err, GS_ENOMEM, "out of memory");
                cfg->gpu_hooks[cfg->ngpu_hooks++] = v;
                for (size_t k = 0; k < n; k++) {
                        struct json_object *a = json_object_array_get_idx(args, k);
                        if ((v[k] = strdup(json_object_is_type(a, json_type_string) ? json_object_get_string(a) : "")) == NULL)
                                return gs_error_set(err, GS_ENOMEM, "out of memory");
                }
        }
        return 0;
}

/* N of a node path PREFIX<N> (digits alone after the prefix, at most 4), else -1. */
static long node_minor(const char *s, const char *prefix)
{
        size_t k = strlen(prefix), n = strlen(s);
        if (strncmp(s, prefix, k) != 0 || n == k || n > k + 4)
                return -1;
        long m = 0;
        for (const char *c = s + k; *c != '\0'; c++) {
                if (*c < '0' || *c > '9')
                        return -1;
                m = m * 10 + (*c - '0');
        }
        return m;
}

static void add_minor(unsigned *minors, size_t *n, long m)
{
        for (size_t k = 0; k < *n; k++)
                if (minors[k] == (unsigned)m)
                        return;
        if (m >= 0 && *n < GS_OCI_MAX_GPU_NODES)
                minors[(*n)++] = (unsigned)m;
}

/* linux.devices[]: the GPUs' device nodes (/dev/nvidia<N>), the MIG capability nodes
 * (/dev/nvidia-caps/nvidia-cap<N>). */
static void parse_gpu_nodes(struct json_object *lin, struct gs_oci_config *cfg)
{
        struct json_object *devs = NULL;
        if (!json_object_is_type(lin, json_type_object) || !json_object_object_get_ex(lin, "devices", &devs) ||
            !json_object_is_type(devs, json_type_array))
                return;
        for (size_t i = 0; i < json_object_array_length(devs); i++) {
                struct json_object *d = json_object_array_get_idx(devs, i), *p = NULL;
                if (!json_object_is_type(d, json_type_object) || !json_object_object_get_ex(d, "path", &p) ||
                    !json_object_is_type(p, json_type_string))
                        continue;
                const char *s = json_object_get_string(p);
                add_minor(cfg->gpu_minors, &cfg->ngpu_minors, node_minor(s, "/dev/nvidia"));
                add_minor(cfg->cap_minors, &cfg->ncap_minors, node_minor(s, "/dev/nvidia-caps/nvidia-cap"));
        }
}

static int parse_annotations(struct json_object *a, struct gs_oci_config *cfg, const char *what, struct gs_error *err)
{
        if (!json_object_is_type(a, json_type_object))
                return gs_error_set(err, GS_EFORMAT, "%s: 'annotations' is not an object", what);
        size_t n = (size_t)json_object_object_length(a);
        cfg->annotations = calloc(n + 1, sizeof(char *));
        if (cfg->annotations == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        json_object_object_foreach(a, key, val)
        {
                if (!json_object_is_type(val, json_type_string))
                        continue;
                char *kv;
                if (asprintf(&kv, "%s=%s", key, json_object_get_string(val)) < 0)
                        return gs_error_set(err, GS_ENOMEM, "out of memory");
                cfg->annotations[cfg->nannotations++] = kv;
        }
        return 0;
}

int gs_oci_config_parse(const char *json, size_t len, const char *bundle, struct gs_oci_config *cfg,
                        struct gs_error *err)
{
        static const char what[] = "invalid OCI config";
        memset(cfg, 0, sizeof(*cfg));
        gs_autojson struct json_object *o = parse_object(json, len, what, err);
        if (o == NULL)
                return -1;
        struct json_object *root, *v;
        char path[PATH_MAX] = "";
        if (!json_object_object_get_ex(o, "root", &root) || !json_object_is_type(root, json_type_object))
                return gs_error_set(err, GS_EFORMAT, "%s: no 'root' object", what);
        int rc = get_string(root, "path", path, sizeof(path), what, err);
        if (rc < 0)
                return -1;
        if (rc == 0 || path[0] == '\0')
                return gs_error_set(err, GS_EFORMAT, "%s: no root.path", what);
        if (path[0] == '/') {
                gs_strlcpy(cfg->rootfs, path, sizeof(cfg->rootfs));
        } else if (gs_path_join(cfg->rootfs, sizeof(cfg->rootfs), bundle, path, NULL) < 0) {
                return gs_error_set(err, GS_EFORMAT, "%s: root.path is too long", what);
        }
        if (json_object_object_get_ex(o, "process", &v) && v != NULL && parse_process(v, cfg, what, err) < 0)
                goto fail;
        if (json_object_object_get_ex(o, "annotations", &v) && v != NULL && parse_annotations(v, cfg, what, err) < 0)
                goto fail;
        if (json_object_object_get_ex(o, "mounts", &v) && v != NULL && parse_device_mounts(v, cfg, what, err) < 0)
                goto fail;
        if (json_object_object_get_ex(o, "hooks", &v) && json_object_is_type(v, json_type_object)) {
                struct json_object *l = NULL;
                if ((json_object_object_get_ex(v, "createRuntime", &l) && parse_gpu_hooks(l, cfg, err) < 0) ||
                    (json_object_object_get_ex(v, "prestart", &l) && parse_gpu_hooks(l, cfg, err) < 0))
                        goto fail;
        }
        if (json_object_object_get_ex(o, "linux", &v))
                parse_gpu_nodes(v, cfg);
        return 0;
fail:
        gs_oci_config_release(cfg);
        return -1;
}

int gs_oci_config_load(const char *bundle, struct gs_oci_config *cfg, struct gs_error *err)
{
        char path[PATH_MAX];
        if (gs_path_join(path, sizeof(path), bundle, "config.json", NULL) < 0)
                return gs_error_set(err, GS_EINVAL, "bundle path too long");
        gs_autoclose int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        if (fd < 0)
                return gs_error_sys(err, "cannot open %s", path);
        struct stat st;
        if (fstat(fd, &st) < 0)
                return gs_error_sys(err, "stat %s", path);
        if (!S_ISREG(st.st_mode))
                return gs_error_set(err, GS_EFORMAT, "%s is not a regular file", path);
        size_t len = 0;
        gs_autofree char *buf = read_all(fd, GS_OCI_CONFIG_MAX, &len, "invalid OCI config", err);
        if (buf == NULL || gs_oci_config_parse(buf, len, bundle, cfg, err) < 0)
                return gs_error_wrap(err, "%s", path);
        return 0;
}

static void free_vec(char **v, size_t n)
{
        if (v == NULL)
                return;
        for (size_t i = 0; i < n; i++)
                free(v[i]);
        free(v);
}

void gs_oci_config_release(struct gs_oci_config *cfg)
{
        free_vec(cfg->env, cfg->nenv);
        free_vec(cfg->annotations, cfg->nannotations);
        free_vec(cfg->device_mounts, cfg->ndevice_mounts);
        for (size_t i = 0; cfg->gpu_hooks != NULL && i < cfg->ngpu_hooks; i++) {
                for (size_t k = 0; cfg->gpu_hooks[i][k] != NULL; k++)
                        free(cfg->gpu_hooks[i][k]);
                free(cfg->gpu_hooks[i]);
        }
        free(cfg->gpu_hooks);
        cfg->gpu_hooks = NULL;
        cfg->ngpu_hooks = cfg->ngpu_minors = cfg->ncap_minors = 0;
        cfg->env = cfg->annotations = cfg->device_mounts = NULL;
        cfg->nenv = cfg->nannotations = cfg->ndevice_mounts = 0;
}
