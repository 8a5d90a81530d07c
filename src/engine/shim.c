/*
 * `gpuslice runtime` (nvidia-container-runtime): an OCI runtime shim. On create/run it edits the
 * bundle's config.json when the container asks for GPUs, then execs the low-level runtime with the
 * arguments untouched; every other command goes straight to the runtime.
 */
#include "engine/engine.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cdi/cdi.h"
#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "runtime/hook_exe.h"
#include "runtime/oci.h"
#include "runtime/request.h"

#define DEVICES_DIR GS_OCI_DEVICES_DIR
#define HOOK_ENV "PATH=" GS_HOSTCONFIG_DEFAULT_BIN_PATH
#define MAX_NAMES 128

static const char *const mode_names[] = {"legacy", "cdi", "jit-cdi", "auto"};

int gs_shim_mode_parse(const char *s, enum gs_shim_mode *out)
{
        for (size_t i = 0; i < GS_ARRAY_SIZE(mode_names); i++)
                if (strcmp(s, mode_names[i]) == 0) {
                        *out = (enum gs_shim_mode)i;
                        return 0;
                }
        return -1;
}

const char *gs_shim_mode_name(enum gs_shim_mode m) { return mode_names[m]; }

/* ------------------------------------------------------------------------------------------ */
/* The command line */

/* "--name", "-name", "--name=value": the option's name without dashes, its inline value. */
static const char *opt_name(const char *arg, char *buf, size_t len, const char **inline_val)
{
        *inline_val = NULL;
        const char *p = arg + 1 + (arg[1] == '-');
        snprintf(buf, len, "%s", p);
        char *eq = strchr(buf, '=');
        if (eq != NULL) {
                *eq = '\0';
                *inline_val = p + (eq - buf) + 1;
        }
        return buf;
}

static bool in(const char *s, const char *const *list)
{
        for (; *list != NULL; list++)
                if (strcmp(s, *list) == 0)
                        return true;
        return false;
}

void gs_shim_parse_args(int argc, char **argv, struct gs_shim_args *a)
{
        static const char *const global_val[] = {"log", "log-format", "root", "criu", "rootless", "cgroup-manager", NULL};
        static const char *const cmd_val[] = {"b", "bundle", "console-socket", "pid-file", "preserve-fds", NULL};
        *a = (struct gs_shim_args){.argc = argc, .argv = argv, .cmd = -1};
        char name[64];
        const char *val;
        int i = 1;
        for (; i < argc; i++) {
                if (argv[i][0] != '-' || argv[i][1] == '\0')
                        break;
                opt_name(argv[i], name, sizeof(name), &val);
                if (!in(name, global_val))
                        continue;
                if (val == NULL && i + 1 < argc)
                        val = argv[++i];
                if (strcmp(name, "log") == 0)
                        a->log = val;
                else if (strcmp(name, "log-format") == 0)
                        a->log_json = val != NULL && strcmp(val, "json") == 0;
        }
        if (i >= argc)
                return;
        a->cmd = i;
        a->creates = strcmp(argv[i], "create") == 0 || strcmp(argv[i], "run") == 0;
        if (!a->creates)
                return;
        for (i++; i < argc; i++) {
                if (strcmp(argv[i], "--") == 0)
                        break;
                if (argv[i][0] != '-' || argv[i][1] == '\0')
                        continue;
                opt_name(argv[i], name, sizeof(name), &val);
                if (!in(name, cmd_val))
                        continue;
                if (val == NULL && i + 1 < argc)
                        val = argv[++i];
                if (strcmp(name, "b") == 0 || strcmp(name, "bundle") == 0)
                        a->bundle = val;
        }
}

/* ------------------------------------------------------------------------------------------ */
/* The runtime's log */

static void json_escape(FILE *f, const char *s)
{
        for (; *s; s++) {
                unsigned char c = (unsigned char)*s;
                if (c == '"' || c == '\\')
                        fprintf(f, "\\%c", c);
                else if (c < 0x20)
                        fprintf(f, "\\u%04x", c);
                else
                        fputc(c, f);
        }
}

void gs_shim_log_error(const struct gs_shim_args *a, const char *msg)
{
        fprintf(stderr, "gpuslice: runtime error: %s\n", msg);
        if (a->log == NULL || a->log[0] == '\0')
                return;
        int fd = open(a->log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        FILE *f = fd >= 0 ? fdopen(fd, "a") : NULL;
        if (f == NULL) {
                if (fd >= 0)
                        close(fd);
                return;
        }
        char ts[64];
        struct timespec now;
        struct tm tm;
        clock_gettime(CLOCK_REALTIME, &now);
        gmtime_r(&now.tv_sec, &tm);
        strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
        if (a->log_json) {
                fprintf(f, "{\"level\":\"error\",\"msg\":\"gpuslice: ");
                json_escape(f, msg);
                fprintf(f, "\",\"time\":\"%s\"}\n", ts);
        } else {
                fprintf(f, "time=\"%s\" level=error msg=\"gpuslice: ", ts);
                json_escape(f, msg);
                fprintf(f, "\"\n");
        }
        fclose(f);
}

/* ------------------------------------------------------------------------------------------ */
/* The low-level runtime */

static bool same_file(const char *a, const struct stat *self)
{
        struct stat st;
        return stat(a, &st) == 0 && st.st_dev == self->st_dev && st.st_ino == self->st_ino;
}

static bool runnable(const char *path, const struct stat *self)
{
        struct stat st;
        return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0 && !same_file(path, self);
}

int gs_shim_find_runtime(const struct gs_hostconfig_list *rts, const char *self, char *out, size_t len,
                         struct gs_error *err)
{
        struct stat self_st = {0};
        if (stat(self, &self_st) < 0)
                self_st.st_ino = 0;
        const char *path = getenv("PATH");
        if (path == NULL || path[0] == '\0')
                path = GS_HOSTCONFIG_DEFAULT_BIN_PATH;
        char names[1024] = "";
        for (unsigned i = 0; i < rts->n; i++) {
                const char *rt = rts->v[i];
                snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", i ? ", " : "", rt);
                if (strchr(rt, '/') != NULL) {
                        if (rt[0] == '/' && runnable(rt, &self_st)) {
                                snprintf(out, len, "%s", rt);
                                return 0;
                        }
                        continue;
                }
                for (const char *p = path; *p;) {
                        size_t l = strcspn(p, ":");
                        if (l > 0 && p[0] == '/') {
                                snprintf(out, len, "%.*s/%s", (int)l, p, rt);
                                if (runnable(out, &self_st))
                                        return 0;
                        }
                        p += l + (p[l] == ':');
                }
        }
        out[0] = '\0';
        return gs_error_set(err, GS_ENOTFOUND, "no low-level runtime found (runtime.runtimes: %s)", names);
}

int gs_shim_exec(const char *runtime, char **argv, struct gs_error *err)
{
        const char *base = strrchr(runtime, '/');
        argv[0] = (char *)(base != NULL ? base + 1 : runtime);
        execv(runtime, argv);
        return gs_error_sys(err, "cannot run %s", runtime);
}

/* ------------------------------------------------------------------------------------------ */
/* What the container asks for */

struct ask {
        char *names[MAX_NAMES];  /* qualified CDI names (annotations, env, mounts) */
        size_t nnames;
        char plain[4096];        /* plain device tokens (env or mounts), comma-joined */
        bool from_mounts;        /* they came from the volume mounts */
        bool from_env;           /* they came from NVIDIA_VISIBLE_DEVICES (runtime.env-cdi-kinds applies) */
        bool env_refused;        /* NVIDIA_VISIBLE_DEVICES asked, the host refused (not privileged) */
};

static void ask_release(struct ask *k)
{
        for (size_t i = 0; i < k->nnames; i++)
                free(k->names[i]);
        k->nnames = 0;
}

static int add_name(struct ask *k, const char *s, size_t l, struct gs_error *err)
{
        while (l > 0 && (*s == ' ' || *s == '\t')) {
                s++;
                l--;
        }
        while (l > 0 && (s[l - 1] == ' ' || s[l - 1] == '\t'))
                l--;
        if (l == 0)
                return 0;
        for (size_t i = 0; i < k->nnames; i++)
                if (strlen(k->names[i]) == l && strncmp(k->names[i], s, l) == 0)
                        return 0;
        if (k->nnames == MAX_NAMES)
                return gs_error_set(err, GS_EINVAL, "too many CDI devices (at most %d)", MAX_NAMES);
        if ((k->names[k->nnames] = strndup(s, l)) == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        k->nnames++;
        return 0;
}

static int add_plain(struct ask *k, const char *s, size_t l, struct gs_error *err)
{
        size_t n = strlen(k->plain);
        if (n + l + 2 > sizeof(k->plain))
                return gs_error_set(err, GS_EINVAL, "too many devices requested");
        snprintf(k->plain + n, sizeof(k->plain) - n, "%s%.*s", n ? "," : "", (int)l, s);
        return 0;
}

/* A comma list: qualified names to names, the rest to plain. */
static int split_list(struct ask *k, const char *v, bool plain_too, struct gs_error *err)
{
        for (const char *p = v; *p;) {
                size_t l = strcspn(p, ",");
                char tok[512];
                snprintf(tok, sizeof(tok), "%.*s", (int)(l < sizeof(tok) ? l : sizeof(tok) - 1), p);
                int r = gs_cdi_is_qualified(tok) ? add_name(k, p, l, err) : plain_too && l > 0 ? add_plain(k, p, l, err) : 0;
                if (r < 0)
                        return -1;
                p += l + (p[l] == ',');
        }
        return 0;
}

/* The volume mounts' devices (struct gs_oci_config: /dev/null onto DEVICES_DIR/<device>):
 * cdi/<vendor>/<class>/<name> a CDI name, imex/<n> none of ours, anything else a plain token. */
static int mounts_ask(const struct gs_oci_config *cfg, struct ask *k, struct gs_error *err)
{
        for (size_t i = 0; i < cfg->ndevice_mounts; i++) {
                const char *dev = cfg->device_mounts[i];
                if (strncmp(dev, "imex/", 5) == 0 || strncmp(dev, GS_REQUEST_SLICE_MOUNTS, strlen(GS_REQUEST_SLICE_MOUNTS)) == 0)
                        continue; /* (slice/: the allocator's slice, for the hook: runtime/request.h) */
                if (strncmp(dev, "cdi/", 4) == 0) {
                        /* cdi/<vendor>/<class>/<name> */
                        char buf[512];
                        snprintf(buf, sizeof(buf), "%s", dev + 4);
                        char *s1 = strchr(buf, '/'), *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
                        if (s2 == NULL || strchr(s2 + 1, '/') != NULL)
                                return gs_error_set(err, GS_EINVAL, "invalid CDI device mount %s/%s", DEVICES_DIR, dev);
                        *s2 = '=';
                        if (add_name(k, buf, strlen(buf), err) < 0)
                                return -1;
                } else if (add_plain(k, dev, strlen(dev), err) < 0) {
                        return -1;
                }
        }
        k->from_mounts = k->nnames > 0 || k->plain[0] != '\0';
        return 0;
}

/* What the container asks for, first of (NVIDIA's order): the kubelet's cdi.k8s.io/ annotations;
 * the volume mounts, when the host accepts them; NVIDIA_VISIBLE_DEVICES, when the container is
 * privileged or the host accepts the env of unprivileged ones. */
static int collect(const struct gs_hostconfig *hc, const struct gs_oci_config *cfg, struct ask *k, struct gs_error *err)
{
        memset(k, 0, sizeof(*k));
        for (size_t i = 0; i < cfg->nannotations; i++) {
                const char *a = cfg->annotations[i], *eq = strchr(a, '=');
                if (strncmp(a, "cdi.k8s.io/", 11) == 0 && eq != NULL && split_list(k, eq + 1, false, err) < 0)
                        return -1;
        }
        if (k->nnames > 0)
                return 0;
        if (hc->accept_volume_mounts && mounts_ask(cfg, k, err) < 0)
                return -1;
        if (k->from_mounts)
                return 0;
        const char *vis = gs_env_get(cfg->env, cfg->nenv, "NVIDIA_VISIBLE_DEVICES");
        if (vis == NULL || strcmp(vis, DEVICES_DIR) == 0)
                return 0;
        if (!cfg->privileged && !hc->accept_env_unprivileged) {
                k->env_refused = vis[strspn(vis, " \t,")] != '\0';
                return 0;
        }
        k->from_env = true;
        return split_list(k, vis, true, err);
}

/* May a CDI name that came from the container's env be resolved? Only a kind of
 * runtime.env-cdi-kinds, and never device-plugin.cdi-kind (its "all" is every GPU, its devices
 * the kubelet's to give). */
static int env_name_allowed(const struct gs_hostconfig *hc, const char *name, struct gs_error *err)
{
        size_t kl = strcspn(name, "=");
        bool ok = false;
        for (unsigned i = 0; i < hc->rt.env_cdi_kinds.n && !ok; i++)
                ok = strlen(hc->rt.env_cdi_kinds.v[i]) == kl && strncmp(hc->rt.env_cdi_kinds.v[i], name, kl) == 0;
        if (ok && strlen(hc->dp.cdi_kind) == kl && strncmp(hc->dp.cdi_kind, name, kl) == 0)
                ok = false;
        if (ok)
                return 0;
        char kinds[512] = "";
        for (unsigned i = 0; i < hc->rt.env_cdi_kinds.n; i++)
                snprintf(kinds + strlen(kinds), sizeof(kinds) - strlen(kinds), "%s%s", i ? ", " : "",
                         hc->rt.env_cdi_kinds.v[i]);
        return gs_error_set(err, GS_EINVAL,
                            "NVIDIA_VISIBLE_DEVICES names %s: %.*s is not a kind the env may name (runtime.env-cdi-kinds: "
                            "%s; a Kubernetes allocator's devices come only from the kubelet)",
                            name, (int)kl, name, kinds[0] ? kinds : "none");
}

/* ------------------------------------------------------------------------------------------ */
/* Changing the spec */

static json_object *child(json_object *o, const char *key, json_type t)
{
        json_object *c;
        if (json_object_object_get_ex(o, key, &c) && json_object_is_type(c, t))
                return c;
        c = t == json_type_array ? json_object_new_array() : json_object_new_object();
        json_object_object_add(o, key, c);
        return c;
}

static void set_env(json_object *oci, const char *kv)
{
        json_object *env = child(child(oci, "process", json_type_object), "env", json_type_array);
        size_t kl = (size_t)(strchr(kv, '=') - kv) + 1;
        for (size_t i = 0; i < json_object_array_length(env); i++) {
                const char *cur = json_object_get_string(json_object_array_get_idx(env, i));
                if (cur != NULL && strncmp(cur, kv, kl) == 0) {
                        json_object_array_put_idx(env, i, json_object_new_string(kv));
                        return;
                }
        }
        json_object_array_add(env, json_object_new_string(kv));
}

static const char *hook_path(const struct gs_shim_opts *o)
{
        return o->hc->rt.hook_path[0] != '\0' ? o->hc->rt.hook_path : o->self;
}

/* One of gpuslice's hooks at `arg` (its last argument): args "gpuslice-hook ... <arg>" (the lean
 * hook) or "gpuslice hook ... <arg>" (ours, from an older version, or a CDI slice device's). */
static bool is_our_hook(json_object *h, const char *arg)
{
        json_object *a;
        size_t n = json_object_object_get_ex(h, "args", &a) && json_object_is_type(a, json_type_array)
                           ? json_object_array_length(a)
                           : 0;
        const char *a0 = n >= 2 ? json_object_get_string(json_object_array_get_idx(a, 0)) : NULL;
        const char *a1 = n >= 3 ? json_object_get_string(json_object_array_get_idx(a, 1)) : NULL;
        const char *al = n >= 2 ? json_object_get_string(json_object_array_get_idx(a, n - 1)) : NULL;
        if (a0 == NULL || al == NULL || strcmp(al, arg) != 0)
                return false;
        return gs_hook_exe_is_lean(a0) || (a1 != NULL && strcmp(a1, "hook") == 0);
}

/* hooks.<stage> += {path, args: gpuslice-hook [--config F] <arg> (or gpuslice hook ...: the
 * configured hook path's words), env}, unless one of ours at <arg> is there. */
static void add_hook(const struct gs_shim_opts *o, json_object *oci, const char *stage, const char *arg)
{
        json_object *arr = child(child(oci, "hooks", json_type_object), stage, json_type_array);
        /* a `gpuslice-hook ... <arg>` already there (ours, or a CDI slice device's): not twice */
        for (size_t i = 0; i < json_object_array_length(arr); i++)
                if (is_our_hook(json_object_array_get_idx(arr, i), arg))
                        return;
        json_object *args = json_object_new_array();
        const char *words[2];
        size_t nw = gs_hook_exe_words(hook_path(o), false, words);
        for (size_t i = 0; i < nw; i++)
                json_object_array_add(args, json_object_new_string(words[i]));
        const char *cfg = secure_getenv("GPUSLICE_CONFIG");
        if (cfg != NULL && cfg[0] == '/') {
                json_object_array_add(args, json_object_new_string("--config"));
                json_object_array_add(args, json_object_new_string(cfg));
        }
        json_object_array_add(args, json_object_new_string(arg));
        json_object *h = json_object_new_object();
        json_object_object_add(h, "path", json_object_new_string(hook_path(o)));
        json_object_object_add(h, "args", args);
        json_object *env = json_object_new_array();
        json_object_array_add(env, json_object_new_string(HOOK_ENV));
        json_object_object_add(h, "env", env);
        json_object_array_add(arr, h);
}

/* What the container (its env after the edits so far; its device mounts where `mounts`) asks
 * for, through the one request model: GPUs (runtime/request.h: NVIDIA's rules) and a slice. */
static int request_asks(json_object *oci, const struct gs_oci_config *cfg, bool mounts, const struct gs_hostconfig *hc,
                        bool *gpu, bool *slice, struct gs_error *err)
{
        json_object *env = child(child(oci, "process", json_type_object), "env", json_type_array);
        size_t n = json_object_array_length(env);
        gs_autofree char **v = calloc(n + 1, sizeof(*v));
        if (v == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        for (size_t i = 0; i < n; i++)
                v[i] = (char *)json_object_get_string(json_object_array_get_idx(env, i));
        struct gs_request_src in = {.env = v, .nenv = n, .privileged = cfg->privileged};
        if (mounts) {
                in.device_mounts = cfg->device_mounts;
                in.ndevice_mounts = cfg->ndevice_mounts;
        }
        struct gs_request rq;
        if (gs_request_from_src(&rq, &in, hc, err) < 0)
                return -1;
        *gpu = rq.gpu;
        *slice = gs_slice_requested(&rq.opts.slice);
        gs_request_release(&rq);
        return 0;
}

/* The device mounts (/dev/null onto DEVICES_DIR/...) out of the spec: in the cdi modes the GPUs
 * come from CDI, and a slice's hook must not read them as a request again. */
static void drop_device_mounts(json_object *oci)
{
        json_object *mounts;
        if (!json_object_object_get_ex(oci, "mounts", &mounts) || !json_object_is_type(mounts, json_type_array))
                return;
        static const char prefix[] = DEVICES_DIR "/";
        for (size_t i = json_object_array_length(mounts); i-- > 0;) {
                json_object *m = json_object_array_get_idx(mounts, i), *src, *dst;
                if (!json_object_object_get_ex(m, "source", &src) || !json_object_object_get_ex(m, "destination", &dst) ||
                    !json_object_is_type(src, json_type_string) || !json_object_is_type(dst, json_type_string))
                        continue;
                char sb[4096], db[4096];
                snprintf(sb, sizeof(sb), "%s", json_object_get_string(src));
                snprintf(db, sizeof(db), "%s", json_object_get_string(dst));
                gs_oci_path_clean(sb);
                gs_oci_path_clean(db);
                /* (slice/: the allocator's slice, for the slice's hook: runtime/request.h) */
                if (strcmp(sb, "/dev/null") == 0 && strncmp(db, prefix, sizeof(prefix) - 1) == 0 &&
                    strncmp(db + sizeof(prefix) - 1, GS_REQUEST_SLICE_MOUNTS, strlen(GS_REQUEST_SLICE_MOUNTS)) != 0)
                        json_object_array_del_idx(mounts, i, 1);
        }
}

/* Plain tokens as CDI names of kind nvidia.com/gpu. */
static int plain_names(struct ask *k, struct gs_error *err)
{
        for (const char *p = k->plain; *p;) {
                size_t l = strcspn(p, ",");
                char q[512];
                int ql = snprintf(q, sizeof(q), GS_CDI_DEFAULT_VENDOR "/" GS_CDI_DEFAULT_CLASS "=%.*s", (int)l, p);
                bool skip = (l == 4 && strncmp(p, "none", 4) == 0) || (l == 4 && strncmp(p, "void", 4) == 0);
                if (!skip && l > 0 && add_name(k, q, (size_t)ql, err) < 0)
                        return -1;
                p += l + (p[l] == ',');
        }
        return 0;
}

/* jit-cdi: a spec made now, naming GPUs by UUID when the request does. */
static json_object *jit_spec(const struct gs_shim_opts *o, const struct ask *k, struct gs_error *err)
{
        bool uuid = false;
        for (size_t i = 0; i < k->nnames; i++) {
                const char *eq = strchr(k->names[i], '=');
                uuid |= strncmp(eq + 1, "GPU-", 4) == 0 || strncmp(eq + 1, "MIG-", 4) == 0;
        }
        struct gs_context *ctx = gs_context_new(&o->ctx, err);
        if (ctx == NULL)
                return NULL;
        struct gs_cdi_opts co = {.strategy = uuid ? GS_CDI_NAME_UUID : GS_CDI_NAME_INDEX, .hook_path = hook_path(o)};
        json_object *spec = gs_cdi_generate(ctx, &co, err);
        gs_context_free(ctx);
        return spec;
}

static int apply_cdi(const struct gs_shim_opts *o, json_object *oci, struct ask *k, bool jit, struct gs_error *err)
{
        if (plain_names(k, err) < 0)
                return -1;
        for (size_t i = 0; k->from_env && i < k->nnames; i++)
                if (env_name_allowed(o->hc, k->names[i], err) < 0)
                        return -1;
        if (k->nnames > 0) {
                if (!jit) {
                        if (gs_cdi_inject(oci, (const char *const *)k->names, k->nnames, &o->hc->rt.cdi_spec_dirs, err) < 0)
                                return -1;
                } else {
                        json_object *spec = jit_spec(o, k, err);
                        if (spec == NULL)
                                return -1;
                        int r = gs_cdi_inject_specs(oci, (const char *const *)k->names, k->nnames, &spec, 1, err);
                        json_object_put(spec);
                        if (r < 0)
                                return -1;
                }
        }
        set_env(oci, "NVIDIA_VISIBLE_DEVICES=void"); /* the GPUs came from CDI: a legacy hook adds none */
        drop_device_mounts(oci);
        return 0;
}

/* Change `oci` per the mode: 1 changed, 0 not a GPU container, -1 error. */
static int modify(const struct gs_shim_opts *o, json_object *oci, const struct gs_oci_config *cfg,
                  struct gs_shim_result *res, struct gs_error *err)
{
        struct ask k;
        int rc = -1;
        if (collect(o->hc, cfg, &k, err) < 0)
                goto out;
        if (k.env_refused)
                gs_log_warn("runtime: ignoring the GPUs NVIDIA_VISIBLE_DEVICES asks for (not privileged, "
                            "hook.accept-nvidia-visible-devices-envvar-when-unprivileged = false)");
        enum gs_shim_mode mode = GS_SHIM_AUTO;
        gs_shim_mode_parse(o->hc->rt.mode, &mode);
        if (mode == GS_SHIM_AUTO)
                mode = k.nnames > 0 ? GS_SHIM_CDI : GS_SHIM_LEGACY;
        res->mode = mode;
        if (mode == GS_SHIM_LEGACY) {
                if (k.nnames > 0) {
                        gs_error_set(err, GS_EINVAL, "CDI devices (%s) need runtime.mode cdi, jit-cdi or auto, not legacy",
                                     k.names[0]);
                        goto out;
                }
                bool gpu, slice; /* the hook reads the same config.json through the same model */
                if (request_asks(oci, cfg, true, o->hc, &gpu, &slice, err) < 0)
                        goto out;
                if (!gpu && !slice) {
                        rc = 0;
                        goto out;
                }
                add_hook(o, oci, "prestart", "prestart");
                if (slice)
                        add_hook(o, oci, "poststop", "poststop"); /* its slice directory, at once */
                snprintf(res->what, sizeof(res->what), "legacy: added the prestart hook %s", hook_path(o));
                rc = 1;
                goto out;
        }
        bool any = k.nnames > 0 || k.plain[0] != '\0';
        if (any && apply_cdi(o, oci, &k, mode == GS_SHIM_JIT_CDI, err) < 0)
                goto out;
        bool gpu_env, s;
        if (request_asks(oci, cfg, !any, o->hc, &gpu_env, &s, err) < 0)
                goto out;
        /* the allocator's slice as volume mounts (runtime/request.h), kept for the slice's hook */
        for (size_t i = 0; !s && o->hc->accept_volume_mounts && i < cfg->ndevice_mounts; i++)
                s = strncmp(cfg->device_mounts[i], GS_REQUEST_SLICE_MOUNTS, strlen(GS_REQUEST_SLICE_MOUNTS)) == 0;
        if (!any && !s) {
                rc = 0;
                goto out;
        }
        if (s) {
                add_hook(o, oci, "createRuntime", "createRuntime");
                add_hook(o, oci, "poststop", "poststop");
        }
        int n = snprintf(res->what, sizeof(res->what), "%s: ", gs_shim_mode_name(mode));
        for (size_t i = 0; i < k.nnames && n < (int)sizeof(res->what); i++)
                n += snprintf(res->what + n, sizeof(res->what) - (size_t)n, "%s%s", i ? ", " : "", k.names[i]);
        if (s && n < (int)sizeof(res->what))
                snprintf(res->what + n, sizeof(res->what) - (size_t)n, "%sthe slice hooks", k.nnames ? ", " : "");
        rc = 1;
out:
        ask_release(&k);
        return rc;
}

int gs_shim_prepare_bundle(const struct gs_shim_opts *o, const char *bundle, struct gs_shim_result *res,
                           struct gs_error *err)
{
        memset(res, 0, sizeof(*res));
        char cwd[4096];
        if (bundle == NULL) {
                if (getcwd(cwd, sizeof(cwd)) == NULL)
                        return gs_error_sys(err, "cannot get the working directory");
                bundle = cwd;
        }
        struct gs_bundle b;
        if (gs_bundle_open(bundle, &b, err) < 0)
                return -1;
        int rc = -1;
        struct gs_oci_config cfg = {0};
        json_object *oci = NULL;
        if (gs_oci_config_parse(b.text, b.len, bundle, &cfg, err) < 0)
                goto out;
        oci = json_tokener_parse(b.text);
        if (oci == NULL || !json_object_is_type(oci, json_type_object)) {
                gs_error_set(err, GS_EFORMAT, "invalid OCI config %s/config.json", bundle);
                goto out;
        }
        int m = modify(o, oci, &cfg, res, err);
        if (m <= 0) {
                rc = m;
                goto out;
        }
        res->gpu = true;
        const char *text = json_object_to_json_string_ext(oci, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        rc = text == NULL ? gs_error_set(err, GS_ENOMEM, "out of memory") : gs_bundle_write(&b, text, strlen(text), err);
out:
        json_object_put(oci);
        gs_oci_config_release(&cfg);
        gs_bundle_close(&b);
        return rc;
}
