/*
 * CDI specs: names, the spec tree built from discovery, its minimum cdiVersion, reading a spec
 * back, and writing one out.
 *
 * What a generated spec holds (as nvidia-ctk's, host layout kept):
 *   containerEdits (any device): env NVIDIA_VISIBLE_DEVICES=void (a legacy hook then does
 *       nothing); the driver's control nodes; bind mounts of every library (64-bit), binary and
 *       GSP firmware file (ro,nosuid,nodev) and IPC socket / MPS directory (nosuid,nodev,noexec);
 *       createContainer hooks `gpuslice-hook create-symlinks` (libcuda.so -> libcuda.so.1 ...)
 *       and `gpuslice-hook update-ldcache` (every library directory), with an explicit env
 *       (`gpuslice cdi-hook ...` where the hook path names gpuslice: hook_exe.h).
 *   devices: one per GPU (in MIG mode too, as nvidia-ctk: the whole GPU's node), one per MIG
 *       device (parent node + the nvidia-caps nodes of its GI and CI access files), "all" (the
 *       union), and per --slice a "<gpu>-<slice>" (and "all-<slice>") device: that GPU's nodes,
 *       `gpuslice-hook --memory=... [--compute-share=...] createRuntime` (`gpuslice hook ...`: the
 *       limits as the allocator's word, which the container's env can only narrow) and `poststop`
 *       hooks that put the slicing layer in and clean up after it, and the same limits as env
 *       (GPUSLICE_MEMORY_LIMIT / GPUSLICE_COMPUTE_LIMIT ...) for the container's information.
 *       (A per-GPU slice, the DRA plugin's, has its memory and compute in the hook alone, and a
 *       "<mig>-<slice>" device per MIG device too: the MIG device's nodes, its limits its own.)
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cdi/cdi.h"
#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "common/path.h"
#include "common/strutil.h"
#include "driver/context.h"
#include "runtime/hook_exe.h"
#include "select/caps.h"
#include "vgpu/config.h"

static const char *const lib_mount_opts[] = {"ro", "nosuid", "nodev", "bind"};
static const char *const ipc_mount_opts[] = {"nosuid", "nodev", "noexec", "bind"};

/* ------------------------------------------------------------------------------------------ */
/* Names */

static bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static bool is_alnum(char c) { return is_letter(c) || (c >= '0' && c <= '9'); }

int gs_cdi_parse_strategy(const char *s, enum gs_cdi_strategy *out, struct gs_error *err)
{
        if (strcmp(s, "index") == 0)
                *out = GS_CDI_NAME_INDEX;
        else if (strcmp(s, "uuid") == 0)
                *out = GS_CDI_NAME_UUID;
        else if (strcmp(s, "type-index") == 0)
                *out = GS_CDI_NAME_TYPE_INDEX;
        else
                return gs_error_set(err, GS_EINVAL, "invalid device name strategy '%s' (index, uuid or type-index)", s);
        return 0;
}

void gs_cdi_device_name(enum gs_cdi_strategy s, const struct gs_gpu *gpu, const struct gs_mig_device *mig,
                        char *buf, size_t len)
{
        switch (s) {
        case GS_CDI_NAME_UUID:
                snprintf(buf, len, "%s", mig != NULL ? mig->uuid : gpu->uuid);
                break;
        case GS_CDI_NAME_TYPE_INDEX:
                if (mig != NULL)
                        snprintf(buf, len, "mig%u:%u", gpu->index, mig->index);
                else
                        snprintf(buf, len, "gpu%u", gpu->index);
                break;
        case GS_CDI_NAME_INDEX:
        default:
                if (mig != NULL)
                        snprintf(buf, len, "%u:%u", gpu->index, mig->index);
                else
                        snprintf(buf, len, "%u", gpu->index);
                break;
        }
}

int gs_cdi_validate_vendor(const char *vendor, struct gs_error *err)
{
        size_t n = strlen(vendor);
        if (n == 0)
                return gs_error_set(err, GS_EINVAL, "invalid vendor '': empty");
        if (n > 253)
                return gs_error_set(err, GS_EINVAL, "invalid vendor '%.64s...': longer than 253 characters", vendor);
        if (!is_letter(vendor[0]))
                return gs_error_set(err, GS_EINVAL, "invalid vendor '%s': must start with a letter", vendor);
        if (!is_alnum(vendor[n - 1]))
                return gs_error_set(err, GS_EINVAL, "invalid vendor '%s': must end with a letter or digit", vendor);
        size_t label = 0;
        for (size_t i = 0; i < n; i++) {
                char c = vendor[i];
                if (c == '.') {
                        if (label == 0 || !is_alnum(vendor[i - 1]) || !is_alnum(vendor[i + 1]))
                                return gs_error_set(err, GS_EINVAL,
                                                    "invalid vendor '%s': each dot-separated label must start and end "
                                                    "with a letter or digit (a domain name such as example.com)",
                                                    vendor);
                        label = 0;
                        continue;
                }
                if (!is_alnum(c) && c != '-' && c != '_')
                        return gs_error_set(err, GS_EINVAL, "invalid vendor '%s': invalid character '%c' (allowed: "
                                            "letters, digits, '-', '_', '.')", vendor, c);
                if (++label > 63)
                        return gs_error_set(err, GS_EINVAL, "invalid vendor '%s': a label is longer than 63 characters",
                                            vendor);
        }
        return 0;
}

int gs_cdi_validate_class(const char *class, struct gs_error *err)
{
        size_t n = strlen(class);
        if (n == 0)
                return gs_error_set(err, GS_EINVAL, "invalid class '': empty");
        if (n > 63)
                return gs_error_set(err, GS_EINVAL, "invalid class '%.64s...': longer than 63 characters", class);
        if (!is_letter(class[0]))
                return gs_error_set(err, GS_EINVAL, "invalid class '%s': must start with a letter", class);
        if (!is_alnum(class[n - 1]))
                return gs_error_set(err, GS_EINVAL, "invalid class '%s': must end with a letter or digit", class);
        for (size_t i = 0; i < n; i++)
                if (!is_alnum(class[i]) && strchr("_.-", class[i]) == NULL)
                        return gs_error_set(err, GS_EINVAL, "invalid class '%s': invalid character '%c' (allowed: "
                                            "letters, digits, '-', '_', '.')", class, class[i]);
        return 0;
}

int gs_cdi_validate_device_name(const char *name, struct gs_error *err)
{
        size_t n = strlen(name);
        if (n == 0)
                return gs_error_set(err, GS_EINVAL, "invalid device name '': empty");
        if (!is_alnum(name[0]) || !is_alnum(name[n - 1]))
                return gs_error_set(err, GS_EINVAL, "invalid device name '%s': must start and end with a letter or digit",
                                    name);
        for (size_t i = 0; i < n; i++)
                if (!is_alnum(name[i]) && strchr("_.:-", name[i]) == NULL)
                        return gs_error_set(err, GS_EINVAL, "invalid device name '%s': invalid character '%c' (allowed: "
                                            "letters, digits, '-', '_', '.', ':')", name, name[i]);
        return 0;
}

int gs_cdi_parse_slice(const char *arg, struct gs_cdi_slice *out, struct gs_error *err)
{
        memset(out, 0, sizeof(*out));
        const char *eq = strchr(arg, '=');
        if (eq == NULL)
                return gs_error_set(err, GS_EINVAL, "invalid --slice '%s': expected NAME=MEM[,COMPUTE[,PRIORITY]] (e.g. "
                                    "4g=4Gi,50 or 4g=4Gi,50,high)", arg);
        size_t nlen = (size_t)(eq - arg);
        if (nlen == 0)
                return gs_error_set(err, GS_EINVAL, "invalid --slice '%s': empty slice name", arg);
        if (nlen >= sizeof(out->name))
                return gs_error_set(err, GS_EINVAL, "invalid --slice '%s': slice name longer than %zu characters", arg,
                                    sizeof(out->name) - 1);
        for (size_t i = 0; i < nlen; i++)
                if (!is_alnum(arg[i]) && strchr("_.-", arg[i]) == NULL)
                        return gs_error_set(err, GS_EINVAL, "invalid --slice '%s': invalid character '%c' in the slice "
                                            "name (allowed: letters, digits, '-', '_', '.')", arg, arg[i]);
        if (!is_alnum(arg[nlen - 1]))
                return gs_error_set(err, GS_EINVAL, "invalid --slice '%s': the slice name must end with a letter or "
                                    "digit (it ends a CDI device name)", arg);
        memcpy(out->name, arg, nlen);
        out->name[nlen] = '\0';

        const char *mem = eq + 1;
        const char *comma = strchr(mem, ',');
        size_t mlen = comma != NULL ? (size_t)(comma - mem) : strlen(mem);
        if (mlen == 0)
                return gs_error_set(err, GS_EINVAL, "invalid --slice '%s': no memory size (NAME=MEM[,COMPUTE[,PRIORITY]])",
                                    arg);
        if (mlen >= sizeof(out->memory))
                return gs_error_set(err, GS_EINVAL, "invalid --slice '%s': memory size too long", arg);
        memcpy(out->memory, mem, mlen);
        out->memory[mlen] = '\0';
        uint64_t bytes;
        if (gs_vgpu_parse_size(out->memory, &bytes) < 0)
                return gs_error_set(err, GS_EINVAL, "invalid --slice '%s': invalid memory size '%s' (bytes, or a number "
                                    "with K, M, G, T or Ki, Mi, Gi, Ti)", arg, out->memory);
        if (bytes == 0)
                return gs_error_set(err, GS_EINVAL, "invalid --slice '%s': the memory size must be more than 0", arg);
        if (comma == NULL)
                return 0;
        const char *cpu = comma + 1, *prio = strchr(cpu, ',');
        int clen = prio != NULL ? (int)(prio - cpu) : (int)strlen(cpu);
        char pctbuf[16] = "";
        if (clen < (int)sizeof(pctbuf)) {
                memcpy(pctbuf, cpu, (size_t)clen);
                pctbuf[clen] = '\0';
        }
        unsigned long long pct;
        if (clen >= (int)sizeof(pctbuf) || gs_parse_uint(pctbuf, 100, &pct) < 0 || pct == 0)
                return gs_error_set(err, GS_EINVAL, "invalid --slice '%s': invalid compute share '%.*s' (a "
                                    "percentage, 1..100)", arg, clen, cpu);
        out->compute = (unsigned)pct;
        if (prio != NULL) {
                /* the order of compute-limited slices: a word, so a spec reads plainly */
                int p = gs_vgpu_parse_priority(prio + 1, false);
                if (p < 0)
                        return gs_error_set(err, GS_EINVAL, "invalid --slice '%s': invalid priority '%s' (high, normal "
                                            "or low)", arg, prio + 1);
                snprintf(out->priority, sizeof(out->priority), "%s", gs_vgpu_priority_name(p));
        }
        return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Minimum version (CDI specs-go/version.go: requiresV040 ... requiresV110) */

struct semver {
        unsigned major, minor, patch;
};

static int semver_parse(const char *s, struct semver *v)
{
        char tail;
        if (s == NULL || sscanf(s, "%u.%u.%u%c", &v->major, &v->minor, &v->patch, &tail) != 3)
                return -1;
        for (const char *p = s; *p != '\0'; p++)
                if (!(*p >= '0' && *p <= '9') && *p != '.')
                        return -1;
        return 0;
}

static int semver_cmp(const struct semver *a, const struct semver *b)
{
        if (a->major != b->major)
                return a->major < b->major ? -1 : 1;
        if (a->minor != b->minor)
                return a->minor < b->minor ? -1 : 1;
        if (a->patch != b->patch)
                return a->patch < b->patch ? -1 : 1;
        return 0;
}

static json_object *member(json_object *o, const char *key)
{
        json_object *v = NULL;
        if (o == NULL || !json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v))
                return NULL;
        return v;
}

static bool nonempty(json_object *v)
{
        if (v == NULL || json_object_is_type(v, json_type_null))
                return false;
        if (json_object_is_type(v, json_type_array))
                return json_object_array_length(v) > 0;
        if (json_object_is_type(v, json_type_object))
                return json_object_object_length(v) > 0;
        if (json_object_is_type(v, json_type_string))
                return json_object_get_string_len(v) > 0;
        return true;
}

/* Version a containerEdits object needs (as an index into the table below). */
enum { V030, V040, V050, V060, V070, V110 };
static const char *const version_names[] = {"0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "1.1.0"};

static int edits_version(json_object *e)
{
        int v = V030;
        if (e == NULL)
                return v;
        if (nonempty(member(e, "netDevices")))
                return V110;
        if (nonempty(member(e, "intelRdt")) || nonempty(member(e, "additionalGids")))
                v = V070;
        json_object *nodes = member(e, "deviceNodes");
        if (nodes != NULL && json_object_is_type(nodes, json_type_array))
                for (size_t i = 0; i < json_object_array_length(nodes); i++)
                        if (nonempty(member(json_object_array_get_idx(nodes, i), "hostPath")) && v < V050)
                                v = V050;
        json_object *mounts = member(e, "mounts");
        if (mounts != NULL && json_object_is_type(mounts, json_type_array))
                for (size_t i = 0; i < json_object_array_length(mounts); i++)
                        if (nonempty(member(json_object_array_get_idx(mounts, i), "type")) && v < V040)
                                v = V040;
        return v;
}

const char *gs_cdi_min_version(json_object *spec)
{
        int v = edits_version(member(spec, "containerEdits"));
        if (nonempty(member(spec, "annotations")) && v < V060)
                v = V060;
        json_object *kind = member(spec, "kind");
        if (kind != NULL && json_object_is_type(kind, json_type_string)) {
                const char *slash = strchr(json_object_get_string(kind), '/');
                if (slash != NULL && strchr(slash + 1, '.') != NULL && v < V060)
                        v = V060; /* a '.' in the class */
        }
        json_object *devs = member(spec, "devices");
        if (devs != NULL && json_object_is_type(devs, json_type_array)) {
                for (size_t i = 0; i < json_object_array_length(devs); i++) {
                        json_object *d = json_object_array_get_idx(devs, i);
                        int dv = edits_version(member(d, "containerEdits"));
                        if (dv > v)
                                v = dv;
                        if (nonempty(member(d, "annotations")) && v < V060)
                                v = V060;
                        json_object *name = member(d, "name");
                        const char *ns = name != NULL ? json_object_get_string(name) : NULL;
                        if (ns != NULL && ns[0] != '\0' && !is_letter(ns[0]) && v < V050)
                                v = V050; /* a name starting with a digit */
                }
        }
        return version_names[v];
}

/* ------------------------------------------------------------------------------------------ */
/* Building */

struct edits {
        json_object *env, *nodes, *hooks, *mounts;
        struct gs_file_list node_paths; /* no node twice */
};

struct build {
        struct gs_context *ctx;
        const struct gs_device_info *dev;
        const struct gs_driver_info *drv;
        const struct gs_cdi_opts *o;
        unsigned caps;
        const char *root;
        bool dev_style;
};

static int oom(struct gs_error *err) { return gs_error_set(err, GS_ENOMEM, "out of memory"); }

static void edits_release(struct edits *e)
{
        json_object_put(e->env);
        json_object_put(e->nodes);
        json_object_put(e->hooks);
        json_object_put(e->mounts);
        gs_file_list_release(&e->node_paths);
        memset(e, 0, sizeof(*e));
}

static int arr_add(json_object **arr, json_object *v, struct gs_error *err)
{
        if (v == NULL)
                return oom(err);
        if (*arr == NULL && (*arr = json_object_new_array()) == NULL) {
                json_object_put(v);
                return oom(err);
        }
        if (json_object_array_add(*arr, v) < 0) {
                json_object_put(v);
                return oom(err);
        }
        return 0;
}

static int arr_add_str(json_object **arr, const char *s, struct gs_error *err)
{
        return arr_add(arr, json_object_new_string(s), err);
}

static json_object *str_array(const char *const *v, size_t n)
{
        json_object *a = json_object_new_array();
        for (size_t i = 0; a != NULL && i < n; i++)
                if (json_object_array_add(a, json_object_new_string(v[i])) < 0) {
                        json_object_put(a);
                        return NULL;
                }
        return a;
}

/* The host path of an in-root path. */
static void host_path(const struct build *b, const char *in_root, char *out, size_t len)
{
        gs_context_host_path(b->ctx, in_root, out, len);
}

static int add_node(const struct build *b, struct edits *e, const char *path, struct gs_error *err)
{
        if (gs_file_list_contains(&e->node_paths, path))
                return 0;
        if (gs_file_list_add(&e->node_paths, path, 0, err) < 0)
                return -1;
        char host[PATH_MAX];
        host_path(b, path, host, sizeof(host));
        json_object *n = json_object_new_object();
        if (n == NULL)
                return oom(err);
        json_object_object_add(n, "path", json_object_new_string(path));
        json_object_object_add(n, "hostPath", json_object_new_string(host));
        return arr_add(&e->nodes, n, err);
}

/* Copy b's nodes into a (an "all" or slice device). */
static int add_nodes_of(const struct build *b, struct edits *a, const struct edits *from, struct gs_error *err)
{
        for (size_t i = 0; i < from->node_paths.n; i++)
                if (add_node(b, a, from->node_paths.v[i].path, err) < 0)
                        return -1;
        return 0;
}

static int add_mount(const struct build *b, struct edits *e, const char *path, bool ipc, struct gs_error *err)
{
        char host[PATH_MAX];
        host_path(b, path, host, sizeof(host));
        json_object *m = json_object_new_object();
        if (m == NULL)
                return oom(err);
        json_object_object_add(m, "hostPath", json_object_new_string(host));
        json_object_object_add(m, "containerPath", json_object_new_string(path));
        json_object_object_add(m, "options", ipc ? str_array(ipc_mount_opts, GS_ARRAY_SIZE(ipc_mount_opts))
                                                 : str_array(lib_mount_opts, GS_ARRAY_SIZE(lib_mount_opts)));
        return arr_add(&e->mounts, m, err);
}

/* The first words of a hook's args for the executable the spec names (gpuslice-hook, or gpuslice's
 * `hook` and `cdi-hook` verbs: hook_exe.h); returns how many. */
static size_t hook_words(const struct build *b, bool cdi, const char **args)
{
        const char *w[2];
        size_t n = gs_hook_exe_words(b->o->hook_path, cdi, w);
        for (size_t i = 0; i < n; i++)
                args[i] = w[i];
        return n;
}

static int add_hook(const struct build *b, struct edits *e, const char *hook_name, const char *const *args, size_t n,
                    struct gs_error *err)
{
        static const char *const env[] = {GS_CDI_HOOK_ENV};
        json_object *h = json_object_new_object();
        if (h == NULL)
                return oom(err);
        json_object_object_add(h, "hookName", json_object_new_string(hook_name));
        json_object_object_add(h, "path", json_object_new_string(b->o->hook_path));
        json_object_object_add(h, "args", str_array(args, n));
        json_object_object_add(h, "env", str_array(env, GS_ARRAY_SIZE(env)));
        return arr_add(&e->hooks, h, err);
}

/* {"env": [...], "deviceNodes": [...], "hooks": [...], "mounts": [...]} without empty lists;
 * the lists move into it. */
static json_object *edits_object(struct edits *e)
{
        json_object *o = json_object_new_object();
        if (o == NULL)
                return NULL;
        if (e->env != NULL)
                json_object_object_add(o, "env", gs_steal_ptr(&e->env));
        if (e->nodes != NULL)
                json_object_object_add(o, "deviceNodes", gs_steal_ptr(&e->nodes));
        if (e->hooks != NULL)
                json_object_object_add(o, "hooks", gs_steal_ptr(&e->hooks));
        if (e->mounts != NULL)
                json_object_object_add(o, "mounts", gs_steal_ptr(&e->mounts));
        return o;
}

static int add_device(json_object *devices, const char *name, struct edits *e, struct gs_error *err)
{
        if (gs_cdi_validate_device_name(name, err) < 0)
                return -1;
        json_object *d = json_object_new_object();
        json_object *ce = edits_object(e);
        if (d == NULL || ce == NULL) {
                json_object_put(d);
                json_object_put(ce);
                return oom(err);
        }
        json_object_object_add(d, "name", json_object_new_string(name));
        json_object_object_add(d, "containerEdits", ce);
        if (json_object_array_add(devices, d) < 0) {
                json_object_put(d);
                return oom(err);
        }
        return 0;
}

/* /dev/nvidia<minor> must be there, as a character device, for the spec to name it. */
static int gpu_node(const struct build *b, const struct gs_gpu *g, char *path, size_t len, struct gs_error *err)
{
        snprintf(path, len, "/dev/nvidia%u", g->minor);
        gs_autoclose int fd = gs_open_in_root(gs_context_rootfd(b->ctx), path, O_PATH, NULL);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISCHR(st.st_mode))
                return gs_error_set(err, GS_ENOTFOUND, "GPU %u: %s is missing under %s (a character device; "
                                    "--load-kmods creates it)", g->index, path, b->root);
        return 0;
}

static int gpu_edits(const struct build *b, const struct gs_gpu *g, struct edits *e, struct gs_error *err)
{
        char path[64];
        return gpu_node(b, g, path, sizeof(path), err) < 0 ? -1 : add_node(b, e, path, err);
}

static int mig_edits(const struct build *b, const struct gs_gpu *g, const struct gs_mig_device *m, struct edits *e,
                     struct gs_error *err)
{
        if (gpu_edits(b, g, e, err) < 0)
                return -1;
        if (!b->dev_style) {
                gs_log_warn("MIG %u:%u: no nvidia-caps in %s/proc/devices: its capability nodes are left out", g->index,
                            m->index, b->root);
                return 0;
        }
        char paths[2][256];
        gs_mig_gi_access_path(g, m, paths[0], sizeof(paths[0]));
        gs_mig_ci_access_path(g, m, paths[1], sizeof(paths[1]));
        for (int k = 0; k < 2; k++) {
                char node[128];
                dev_t rdev;
                if (gs_nvcaps_node(b->ctx, paths[k], node, sizeof(node), &rdev, err) < 0 ||
                    add_node(b, e, node, err) < 0)
                        return -1;
        }
        return 0;
}

static const char *base_of(const char *p)
{
        const char *s = strrchr(p, '/');
        return s != NULL ? s + 1 : p;
}

static void dir_of(const char *p, char *out, size_t len)
{
        const char *s = strrchr(p, '/');
        size_t n = s == NULL ? 0 : (s == p ? 1 : (size_t)(s - p));
        if (n >= len)
                n = len - 1;
        memcpy(out, p, n);
        out[n] = '\0';
}

/* The createContainer hooks: links next to the libraries (as configure's make_links), then the
 * ld.so.cache of every library directory. */
static int driver_hooks(const struct build *b, struct edits *e, struct gs_error *err)
{
        const struct gs_lib_link *links = gs_lib_links;
        const struct gs_file_list *libs = &b->drv->libs;
        size_t max = 3 + 2 * libs->n * gs_nlib_links + 2 * libs->n;
        gs_autofree const char **args = calloc(max + 1, sizeof(*args));
        struct gs_file_list strs = {0}, dirs = {0};
        int rv = -1;
        if (args == NULL) {
                oom(err);
                goto out;
        }
        size_t n = hook_words(b, true, args);
        args[n++] = "create-symlinks";
        for (size_t k = 0; k < gs_nlib_links; k++) {
                if (!(b->caps & links[k].caps))
                        continue;
                for (size_t i = 0; i < libs->n; i++) {
                        const char *base = base_of(libs->v[i].path);
                        if (!gs_caps_want(b->caps, libs->v[i].caps) || !gs_str_has_prefix(base, links[k].lib))
                                continue;
                        char dir[PATH_MAX], arg[2 * PATH_MAX + 2], linkpath[PATH_MAX + 64];
                        dir_of(libs->v[i].path, dir, sizeof(dir));
                        snprintf(linkpath, sizeof(linkpath), "%s/%s", strcmp(dir, "/") == 0 ? "" : dir, links[k].link);
                        snprintf(arg, sizeof(arg), "%s::%s", links[k].target != NULL ? links[k].target : base, linkpath);
                        if (gs_file_list_contains(&strs, arg))
                                continue;
                        if (gs_file_list_add(&strs, arg, 0, err) < 0)
                                goto out;
                }
        }
        for (size_t i = 0; i < strs.n; i++) {
                args[n++] = "--link";
                args[n++] = strs.v[i].path;
        }
        if (strs.n > 0 && add_hook(b, e, "createContainer", args, n, err) < 0)
                goto out;

        n = hook_words(b, true, args);
        args[n++] = "update-ldcache";
        for (size_t i = 0; i < libs->n; i++) {
                char dir[PATH_MAX];
                if (!gs_caps_want(b->caps, libs->v[i].caps))
                        continue;
                dir_of(libs->v[i].path, dir, sizeof(dir));
                if (gs_file_list_contains(&dirs, dir))
                        continue;
                if (gs_file_list_add(&dirs, dir, 0, err) < 0)
                        goto out;
        }
        for (size_t i = 0; i < dirs.n; i++) {
                args[n++] = "--folder";
                args[n++] = dirs.v[i].path;
        }
        if (dirs.n > 0 && add_hook(b, e, "createContainer", args, n, err) < 0)
                goto out;
        rv = 0;
out:
        gs_file_list_release(&strs);
        gs_file_list_release(&dirs);
        return rv;
}

/* The spec-wide edits. */
static int driver_edits(const struct build *b, struct edits *e, struct gs_error *err)
{
        const struct gs_driver_info *drv = b->drv;
        if (arr_add_str(&e->env, "NVIDIA_VISIBLE_DEVICES=void", err) < 0)
                return -1;
        for (size_t i = 0; i < drv->ndevs; i++)
                if (gs_caps_want(b->caps, drv->devs[i].caps) && add_node(b, e, drv->devs[i].path, err) < 0)
                        return -1;
        if (driver_hooks(b, e, err) < 0)
                return -1;
        const struct gs_file_list *ro[] = {&drv->libs, &drv->bins, &drv->firmwares};
        for (size_t k = 0; k < GS_ARRAY_SIZE(ro); k++)
                for (size_t i = 0; i < ro[k]->n; i++)
                        if (gs_caps_want(b->caps, ro[k]->v[i].caps) && add_mount(b, e, ro[k]->v[i].path, false, err) < 0)
                                return -1;
        for (size_t i = 0; i < drv->ipcs.n; i++) {
                char host[PATH_MAX];
                struct stat st;
                if (!gs_caps_want(b->caps, drv->ipcs.v[i].caps))
                        continue;
                host_path(b, drv->ipcs.v[i].path, host, sizeof(host));
                if (lstat(host, &st) < 0) {
                        gs_log_info("IPC path %s is not there: left out", host);
                        continue;
                }
                if (add_mount(b, e, drv->ipcs.v[i].path, true, err) < 0)
                        return -1;
        }
        return 0;
}

/* A slice device: `base`'s nodes, the limits (the createRuntime hook's args: the allocator's
 * word; the env beside them only informs the container), and the hooks that bring the slicing
 * layer. */
static int add_slice_device(const struct build *b, json_object *devices, const char *base_name,
                            const struct edits *base, const struct gs_cdi_slice *s, struct gs_error *err)
{
        struct edits e = {0};
        char name[256], kv[4][128], opt[4][128];
        const char *create[2 + 4 + 1];
        size_t nopt = 0, nc = hook_words(b, false, create);
        int rv = -1;
        snprintf(name, sizeof(name), "%s-%s", base_name, s->name);
        snprintf(kv[nopt], sizeof(kv[0]), "GPUSLICE_MEMORY_LIMIT=%s", s->memory);
        snprintf(opt[nopt++], sizeof(opt[0]), "--memory=%s", s->memory);
        if (s->compute != 0) {
                snprintf(kv[nopt], sizeof(kv[0]), "GPUSLICE_COMPUTE_LIMIT=%u", s->compute);
                snprintf(opt[nopt++], sizeof(opt[0]), "--compute-share=%u", s->compute);
        }
        if (s->priority[0] != '\0') {
                snprintf(kv[nopt], sizeof(kv[0]), "GPUSLICE_PRIORITY=%s", s->priority);
                snprintf(opt[nopt++], sizeof(opt[0]), "--priority=%s", s->priority);
        }
        if (s->compute_mode[0] != '\0') {
                snprintf(kv[nopt], sizeof(kv[0]), "GPUSLICE_COMPUTE_MODE=%s", s->compute_mode);
                snprintf(opt[nopt++], sizeof(opt[0]), "--compute-mode=%s", s->compute_mode);
        }
        /* gpuslice-hook OPTIONS createRuntime: the stage last, as in every hook definition (a
         * per-GPU slice's memory and compute, its first options, not as env) */
        size_t limits = s->per_gpu ? (s->compute != 0 ? 2 : 1) : 0;
        for (size_t i = 0; i < nopt; i++) {
                create[nc++] = opt[i];
                if (i >= limits && arr_add_str(&e.env, kv[i], err) < 0)
                        goto out;
        }
        create[nc++] = "createRuntime";
        if (add_nodes_of(b, &e, base, err) < 0)
                goto out;
        const char *stop[3];
        size_t ns = hook_words(b, false, stop);
        stop[ns++] = "poststop";
        if (add_hook(b, &e, "createRuntime", create, nc, err) < 0 || add_hook(b, &e, "poststop", stop, ns, err) < 0)
                goto out;
        rv = add_device(devices, name, &e, err);
out:
        edits_release(&e);
        return rv;
}

/* A per-GPU slice's device per MIG device of g, "<mig-name>-<slice>": the MIG device's nodes, its
 * limits the MIG device's alone (its hook's --gpu names the MIG device: the DRA plugin's shares). */
static int add_mig_slices(const struct build *b, json_object *devices, const struct gs_gpu *g,
                          const struct gs_cdi_slice *s, struct gs_error *err)
{
        for (unsigned j = 0; j < g->nmigs; j++) {
                struct edits m = {0};
                char name[256];
                gs_cdi_device_name(b->o->strategy, g, &g->migs[j], name, sizeof(name));
                int rv = mig_edits(b, g, &g->migs[j], &m, err) < 0 ? -1 : add_slice_device(b, devices, name, &m, s, err);
                edits_release(&m);
                if (rv < 0)
                        return -1;
        }
        return 0;
}

json_object *gs_cdi_spec_build(struct gs_context *ctx, const struct gs_device_info *dev,
                               const struct gs_driver_info *drv, const struct gs_cdi_opts *o,
                               struct gs_error *err)
{
        const char *vendor = o->vendor != NULL ? o->vendor : GS_CDI_DEFAULT_VENDOR;
        const char *class = o->class != NULL ? o->class : GS_CDI_DEFAULT_CLASS;
        if (gs_cdi_validate_vendor(vendor, err) < 0 || gs_cdi_validate_class(class, err) < 0)
                return NULL;
        if (o->hook_path == NULL || o->hook_path[0] != '/') {
                gs_error_set(err, GS_EINVAL, "the hook path must be absolute: %s", o->hook_path ? o->hook_path : "(none)");
                return NULL;
        }
        for (size_t i = 0; i < o->nslices; i++)
                for (size_t j = 0; j < i; j++)
                        if (strcmp(o->slices[i].name, o->slices[j].name) == 0) {
                                gs_error_set(err, GS_EINVAL, "slice '%s' is given twice", o->slices[i].name);
                                return NULL;
                        }
        struct build b = {
                .ctx = ctx,
                .dev = dev,
                .drv = drv,
                .o = o,
                .caps = gs_caps_expand(GS_CAP_ALL & ~GS_CAP_COMPAT32),
                .root = gs_context_root(ctx),
                .dev_style = gs_nvcaps_dev_style(ctx),
        };
        json_object *spec = json_object_new_object();
        json_object *devices = json_object_new_array();
        struct edits common = {0}, all = {0};
        struct edits *gpus = calloc(dev->ngpus + 1, sizeof(*gpus));
        char kind[512], name[256];
        if (spec == NULL || devices == NULL || gpus == NULL) {
                oom(err);
                goto fail;
        }
        snprintf(kind, sizeof(kind), "%s/%s", vendor, class);
        json_object_object_add(spec, "cdiVersion", json_object_new_string(version_names[V030]));
        json_object_object_add(spec, "kind", json_object_new_string(kind));

        /* GPUs and MIG devices, each followed by nothing else; "all" collects. */
        for (unsigned i = 0; i < dev->ngpus; i++) {
                const struct gs_gpu *g = &dev->gpus[i];
                /* every GPU, in MIG mode too (as nvidia-ctk lists them: =1 beside =1:0, =1:1) */
                if (gpu_edits(&b, g, &gpus[i], err) < 0 || add_nodes_of(&b, &all, &gpus[i], err) < 0)
                        goto fail;
                struct edits tmp = {0};
                gs_cdi_device_name(o->strategy, g, NULL, name, sizeof(name));
                if (add_nodes_of(&b, &tmp, &gpus[i], err) < 0 || add_device(devices, name, &tmp, err) < 0) {
                        edits_release(&tmp);
                        goto fail;
                }
                edits_release(&tmp);
                if (!g->mig_enabled)
                        continue;
                for (unsigned j = 0; j < g->nmigs; j++) {
                        struct edits m = {0};
                        gs_cdi_device_name(o->strategy, g, &g->migs[j], name, sizeof(name));
                        if (mig_edits(&b, g, &g->migs[j], &m, err) < 0 || add_nodes_of(&b, &all, &m, err) < 0 ||
                            add_device(devices, name, &m, err) < 0) {
                                edits_release(&m);
                                goto fail;
                        }
                        edits_release(&m);
                }
                if (g->nmigs == 0)
                        gs_log_warn("GPU %u is in MIG mode without MIG devices: no CDI device for it", g->index);
        }
        if (all.node_paths.n == 0) {
                gs_error_set(err, GS_ENOTFOUND, "no GPU to describe under %s", b.root);
                goto fail;
        }
        {
                struct edits tmp = {0};
                if (add_nodes_of(&b, &tmp, &all, err) < 0 || add_device(devices, "all", &tmp, err) < 0) {
                        edits_release(&tmp);
                        goto fail;
                }
                edits_release(&tmp);
        }
        for (size_t s = 0; s < o->nslices; s++) {
                for (unsigned i = 0; i < dev->ngpus; i++) {
                        if (dev->gpus[i].mig_enabled) {
                                if (o->slices[s].per_gpu && add_mig_slices(&b, devices, &dev->gpus[i], &o->slices[s], err) < 0)
                                        goto fail;
                                continue;
                        }
                        gs_cdi_device_name(o->strategy, &dev->gpus[i], NULL, name, sizeof(name));
                        if (add_slice_device(&b, devices, name, &gpus[i], &o->slices[s], err) < 0)
                                goto fail;
                }
                if (!o->slices[s].gpus_only && add_slice_device(&b, devices, "all", &all, &o->slices[s], err) < 0)
                        goto fail;
        }
        json_object_object_add(spec, "devices", gs_steal_ptr(&devices));

        if (driver_edits(&b, &common, err) < 0)
                goto fail;
        json_object *ce = edits_object(&common);
        if (ce == NULL) {
                oom(err);
                goto fail;
        }
        json_object_object_add(spec, "containerEdits", ce);
        json_object_object_add(spec, "cdiVersion", json_object_new_string(gs_cdi_min_version(spec)));
        edits_release(&common);
        edits_release(&all);
        for (unsigned i = 0; i < dev->ngpus; i++)
                edits_release(&gpus[i]);
        free(gpus);
        return spec;
fail:
        edits_release(&common);
        edits_release(&all);
        if (gpus != NULL)
                for (unsigned i = 0; i < dev->ngpus; i++)
                        edits_release(&gpus[i]);
        free(gpus);
        json_object_put(devices);
        json_object_put(spec);
        return NULL;
}

json_object *gs_cdi_generate(struct gs_context *ctx, const struct gs_cdi_opts *o, struct gs_error *err)
{
        const struct gs_device_info *dev = gs_devices(ctx, err);
        if (dev == NULL) {
                if (err != NULL && err->stage == NULL)
                        err->stage = (err->code == GS_EINIT || err->code == GS_ETIMEOUT || err->code == GS_EHELPER)
                                             ? "initialization"
                                             : "detection";
                return NULL;
        }
        unsigned caps = gs_caps_expand(GS_CAP_ALL & ~GS_CAP_COMPAT32);
        struct gs_driver_info drv = {0};
        if (gs_driver_discover(ctx, dev->driver_version, gs_caps_drvopts(caps, 0), &drv, err) < 0) {
                if (err != NULL && err->stage == NULL)
                        err->stage = "detection";
                return NULL;
        }
        json_object *spec = gs_cdi_spec_build(ctx, dev, &drv, o, err);
        gs_driver_info_release(&drv);
        return spec;
}

/* ------------------------------------------------------------------------------------------ */
/* Reading */

void gs_cdi_names_free(char **names)
{
        if (names == NULL)
                return;
        for (char **p = names; *p != NULL; p++)
                free(*p);
        free(names);
}

int gs_cdi_spec_names(json_object *spec, char ***names, size_t *count, struct gs_error *err)
{
        *names = NULL;
        *count = 0;
        if (spec == NULL || !json_object_is_type(spec, json_type_object))
                return gs_error_set(err, GS_EFORMAT, "not a CDI spec: the document is not a mapping");
        json_object *ver = member(spec, "cdiVersion");
        struct semver have, need;
        if (ver == NULL)
                return gs_error_set(err, GS_EFORMAT, "not a CDI spec: no cdiVersion");
        if (!json_object_is_type(ver, json_type_string) || semver_parse(json_object_get_string(ver), &have) < 0)
                return gs_error_set(err, GS_EFORMAT, "invalid cdiVersion '%s' (a version such as 0.5.0)",
                                    json_object_get_string(ver));
        json_object *kind = member(spec, "kind");
        if (kind == NULL)
                return gs_error_set(err, GS_EFORMAT, "not a CDI spec: no kind");
        if (!json_object_is_type(kind, json_type_string))
                return gs_error_set(err, GS_EFORMAT, "invalid kind: not a string");
        char vendor[256], class[256];
        const char *k = json_object_get_string(kind);
        const char *slash = strchr(k, '/');
        if (slash == NULL || (size_t)(slash - k) >= sizeof(vendor) || strlen(slash + 1) >= sizeof(class))
                return gs_error_set(err, GS_EFORMAT, "invalid kind '%.128s' (vendor/class, e.g. nvidia.com/gpu)", k);
        memcpy(vendor, k, (size_t)(slash - k));
        vendor[slash - k] = '\0';
        snprintf(class, sizeof(class), "%s", slash + 1);
        if (gs_cdi_validate_vendor(vendor, err) < 0 || gs_cdi_validate_class(class, err) < 0)
                return gs_error_wrap(err, "invalid kind '%s'", k);
        const char *min = gs_cdi_min_version(spec);
        semver_parse(min, &need);
        if (semver_cmp(&have, &need) < 0)
                return gs_error_set(err, GS_EFORMAT, "cdiVersion %s is too low for what the spec uses (%s needed)",
                                    json_object_get_string(ver), min);
        json_object *devs = member(spec, "devices");
        if (devs == NULL || !json_object_is_type(devs, json_type_array))
                return gs_error_set(err, GS_EFORMAT, "not a CDI spec: no devices list");
        size_t n = json_object_array_length(devs);
        if (n == 0)
                return gs_error_set(err, GS_EFORMAT, "the spec has no devices");
        char **v = calloc(n + 1, sizeof(*v));
        if (v == NULL)
                return oom(err);
        for (size_t i = 0; i < n; i++) {
                json_object *name = member(json_object_array_get_idx(devs, i), "name");
                if (name == NULL || !(json_object_is_type(name, json_type_string) ||
                                      json_object_is_type(name, json_type_int))) {
                        gs_cdi_names_free(v);
                        return gs_error_set(err, GS_EFORMAT, "device %zu has no name", i + 1);
                }
                const char *s = json_object_get_string(name);
                if (gs_cdi_validate_device_name(s, err) < 0) {
                        gs_cdi_names_free(v);
                        return -1;
                }
                for (size_t j = 0; j < i; j++)
                        if (strcmp(v[j] + strlen(k) + 1, s) == 0) {
                                gs_cdi_names_free(v);
                                return gs_error_set(err, GS_EFORMAT, "device '%s' is defined twice", s);
                        }
                if (asprintf(&v[i], "%s=%s", k, s) < 0) {
                        v[i] = NULL;
                        gs_cdi_names_free(v);
                        return oom(err);
                }
        }
        *names = v;
        *count = n;
        return 0;
}

json_object *gs_cdi_spec_parse(const char *text, size_t len, int format_hint, struct gs_error *err)
{
        size_t i = 0;
        while (i < len && strchr(" \t\r\n", text[i]) != NULL)
                i++;
        if (i == len) {
                gs_error_set(err, GS_EFORMAT, "empty spec");
                return NULL;
        }
        if (format_hint == GS_CDI_YAML || (format_hint != GS_CDI_JSON && text[i] != '{'))
                return gs_yaml_parse(text, len, err);
        if (len > INT_MAX) {
                gs_error_set(err, GS_EFORMAT, "invalid JSON: too long");
                return NULL;
        }
        struct json_tokener *tok = json_tokener_new();
        if (tok == NULL) {
                oom(err);
                return NULL;
        }
        json_object *obj = json_tokener_parse_ex(tok, text, (int)len);
        enum json_tokener_error jerr = json_tokener_get_error(tok);
        size_t off = json_tokener_get_parse_end(tok);
        json_tokener_free(tok);
        if (obj == NULL || jerr != json_tokener_success) {
                json_object_put(obj);
                if (jerr == json_tokener_continue)
                        gs_error_set(err, GS_EFORMAT, "invalid JSON: unexpected end of input");
                else
                        gs_error_set(err, GS_EFORMAT, "invalid JSON: %s at offset %zu", json_tokener_error_desc(jerr), off);
                return NULL;
        }
        while (off < len && strchr(" \t\r\n", text[off]) != NULL)
                off++;
        if (off < len) {
                json_object_put(obj);
                gs_error_set(err, GS_EFORMAT, "invalid JSON: trailing data at offset %zu", off);
                return NULL;
        }
        return obj;
}

json_object *gs_cdi_spec_load(const char *path, struct gs_error *err)
{
        gs_autoclose int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
                gs_error_sys(err, "cannot open %s", path);
                return NULL;
        }
        struct stat st;
        if (fstat(fd, &st) < 0) {
                gs_error_sys(err, "cannot read %s", path);
                return NULL;
        }
        if (!S_ISREG(st.st_mode)) {
                gs_error_set(err, GS_EINVAL, "%s: not a regular file", path);
                return NULL;
        }
        if ((uint64_t)st.st_size > GS_CDI_SPEC_MAX) {
                gs_error_set(err, GS_EINVAL, "%s: larger than %u bytes", path, GS_CDI_SPEC_MAX);
                return NULL;
        }
        size_t cap = (size_t)st.st_size + 1, n = 0;
        gs_autofree char *buf = malloc(cap);
        if (buf == NULL) {
                oom(err);
                return NULL;
        }
        for (;;) {
                if (n + 1 >= cap) {
                        if (cap > GS_CDI_SPEC_MAX) {
                                gs_error_set(err, GS_EINVAL, "%s: larger than %u bytes", path, GS_CDI_SPEC_MAX);
                                return NULL;
                        }
                        char *p = realloc(buf, cap * 2);
                        if (p == NULL) {
                                oom(err);
                                return NULL;
                        }
                        buf = p;
                        cap *= 2;
                }
                ssize_t r = read(fd, buf + n, cap - 1 - n);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0) {
                        gs_error_sys(err, "cannot read %s", path);
                        return NULL;
                }
                if (r == 0)
                        break;
                n += (size_t)r;
        }
        buf[n] = '\0';
        int hint = -1;
        if (gs_str_has_suffix(path, ".json"))
                hint = GS_CDI_JSON;
        else if (gs_str_has_suffix(path, ".yaml") || gs_str_has_suffix(path, ".yml"))
                hint = GS_CDI_YAML;
        json_object *spec = gs_cdi_spec_parse(buf, n, hint, err);
        if (spec == NULL)
                gs_error_wrap(err, "%s", path);
        return spec;
}

/* ------------------------------------------------------------------------------------------ */
/* Writing */

enum gs_cdi_format gs_cdi_format_for_path(const char *path)
{
        return path != NULL && gs_str_has_suffix(path, ".json") ? GS_CDI_JSON : GS_CDI_YAML;
}

char *gs_cdi_spec_format(json_object *spec, enum gs_cdi_format f, struct gs_error *err)
{
        if (f == GS_CDI_YAML)
                return gs_yaml_emit(spec, err);
        const char *s = json_object_to_json_string_ext(spec, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                                     JSON_C_TO_STRING_NOSLASHESCAPE);
        char *out = NULL;
        if (s == NULL || asprintf(&out, "%s\n", s) < 0) {
                oom(err);
                return NULL;
        }
        return out;
}

int gs_cdi_write_file(const char *path, const char *text, struct gs_error *err)
{
        return gs_cdi_write_file_flags(path, text, 0, err);
}

int gs_cdi_write_file_flags(const char *path, const char *text, unsigned flags, struct gs_error *err)
{
        if (path == NULL || path[0] == '\0')
                return gs_error_set(err, GS_EINVAL, "no output file");
        char dir[PATH_MAX], tmp[PATH_MAX + 32];
        if (strlen(path) >= sizeof(dir))
                return gs_error_set(err, GS_EINVAL, "output path too long");
        snprintf(dir, sizeof(dir), "%s", path);
        const char *d = dirname(dir);
        const char *base = base_of(path);
        if (base[0] == '\0')
                return gs_error_set(err, GS_EINVAL, "cannot write %s: not a file name", path);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
                return gs_error_set(err, GS_EINVAL, "cannot write %s: it is a directory", path);
        snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", d, base);
        gs_autoclose int fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return gs_error_sys(err, "cannot write %s: cannot create a temporary file in %s", path, d);
        size_t len = strlen(text), off = 0;
        while (off < len) {
                ssize_t w = write(fd, text + off, len - off);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0) {
                        gs_error_sys(err, "cannot write %s", tmp);
                        goto fail;
                }
                off += (size_t)w;
        }
        if (fchmod(fd, 0644) < 0) {
                gs_error_sys(err, "cannot write %s: chmod", tmp);
                goto fail;
        }
        if (!(flags & GS_CDI_WRITE_NOSYNC) && fsync(fd) < 0) {
                gs_error_sys(err, "cannot write %s: fsync", tmp);
                goto fail;
        }
        if (rename(tmp, path) < 0) {
                gs_error_sys(err, "cannot write %s: rename", path);
                goto fail;
        }
        if (flags & GS_CDI_WRITE_DURABLE) {
                gs_autoclose int dfd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (dfd < 0 || fsync(dfd) < 0)
                        return gs_error_sys(err, "cannot write %s: fsync of %s", path, d);
        }
        return 0;
fail:
        unlink(tmp);
        return -1;
}
