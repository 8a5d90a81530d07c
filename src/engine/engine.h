/*
 * The container engines' side: `gpuslice runtime` (installed also as nvidia-container-runtime), an
 * OCI runtime shim that edits a bundle's config.json and execs the low-level runtime, and
 * `gpuslice runtime configure`, which registers it in docker's, containerd's or CRI-O's config.
 *
 *   bundle.c        config.json of a bundle by fd: read, and written back atomically
 *   cdi_edits.c     CDI device names resolved in spec directories, their containerEdits applied
 *                   to an OCI spec in-process (as a CDI-enabled runtime applies them)
 *   shim.c          the runtime's argv (global options, command, --bundle, --log), the decision
 *                   (does the container ask for GPUs?), the modes, the low-level runtime's exec
 *   toml_edit.c     a line-based TOML table editor (keeps every other line and comment)
 *   engines.c       runtime configure: daemon.json, containerd's config.toml (v2, v3, drop-in),
 *                   CRI-O's drop-in
 */
#ifndef GS_ENGINE_ENGINE_H
#define GS_ENGINE_ENGINE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include <gpuslice/gpuslice.h>

#include "runtime/hostconfig.h"

/* ------------------------------------------------------------------------------------------ */
/* bundle.c */

/* <bundle>/config.json: the directory opened once (dirfd), the file opened in it with
 * O_NOFOLLOW, a regular file of at most GS_OCI_CONFIG_MAX bytes. */
struct gs_bundle {
        int dirfd;
        char *text; /* the file as read, NUL-terminated */
        size_t len;
        mode_t mode;
        uid_t uid;
        gid_t gid;
};
int gs_bundle_open(const char *bundle, struct gs_bundle *b, struct gs_error *err);
/* Write `text` as config.json: a new file in the bundle directory (O_EXCL, the old one's mode and
 * owner), fsync, renameat over config.json; on failure the temporary file is removed and
 * config.json is untouched. */
int gs_bundle_write(struct gs_bundle *b, const char *text, size_t len, struct gs_error *err);
void gs_bundle_close(struct gs_bundle *b);

/* ------------------------------------------------------------------------------------------ */
/* cdi_edits.c */

/* "vendor/class=name". */
bool gs_cdi_is_qualified(const char *name);
/* Apply a CDI containerEdits object (env, deviceNodes, mounts, hooks, additionalGids) to the OCI
 * spec: env replaced by key, device nodes into linux.devices and allowed in
 * linux.resources.devices (type/major/minor/mode taken from the host node where the spec leaves
 * them out), mounts appended, hooks under hooks.<hookName>. */
int gs_cdi_apply_edits(json_object *spec, json_object *edits, struct gs_error *err);
/* Resolve each qualified name in the specs under `dirs` (*.yaml, *.yml, *.json; a later
 * directory wins for the same kind+name) and apply the spec's edits (once per spec) and each
 * device's. Errors: "unresolvable CDI devices nvidia.com/gpu=9" (GS_ENOTFOUND). */
int gs_cdi_inject(json_object *oci, const char *const *names, size_t n, const struct gs_hostconfig_list *dirs,
                  struct gs_error *err);
/* The same against specs already loaded (jit-cdi). */
int gs_cdi_inject_specs(json_object *oci, const char *const *names, size_t n, json_object *const *specs,
                        size_t nspecs, struct gs_error *err);

/* ------------------------------------------------------------------------------------------ */
/* shim.c */

enum gs_shim_mode { GS_SHIM_LEGACY, GS_SHIM_CDI, GS_SHIM_JIT_CDI, GS_SHIM_AUTO };

/* The runtime's command line, as runc and crun take it: global options, a command, its options. */
struct gs_shim_args {
        int argc;
        char **argv;       /* argv[0] the shim's name, argv[1..] handed on untouched */
        int cmd;           /* index of the command word, or -1 (e.g. --version alone) */
        bool creates;      /* the command is create or run */
        const char *bundle; /* -b/--bundle of create/run (NULL: the working directory) */
        const char *log;   /* --log FILE (NULL: stderr only) */
        bool log_json;     /* --log-format json */
};
void gs_shim_parse_args(int argc, char **argv, struct gs_shim_args *a);

/* What the shim did to a bundle. */
struct gs_shim_result {
        bool gpu;                 /* the container asks for GPUs (else config.json is untouched) */
        enum gs_shim_mode mode;   /* the mode applied (auto resolved) */
        char what[512];           /* one line for the log */
};
struct gs_shim_opts {
        const struct gs_hostconfig *hc;
        const char *self;         /* the hooks' executable unless runtime.hook-path names one (absolute:
                                   * gpuslice-hook, or gpuslice; runtime/hook_exe.h) */
        struct gs_config ctx;     /* jit-cdi: the driver root etc. */
};
/* Load the bundle's config.json; when the container asks for GPUs, change it per the mode and
 * write it back atomically. */
int gs_shim_prepare_bundle(const struct gs_shim_opts *o, const char *bundle, struct gs_shim_result *res,
                           struct gs_error *err);
/* The first runtime of the list found (an absolute path, or a name on PATH), never this
 * executable itself. */
int gs_shim_find_runtime(const struct gs_hostconfig_list *rts, const char *self, char *out, size_t len,
                         struct gs_error *err);
/* execv the runtime with argv[1..] untouched (argv[0] the runtime's name); returns on failure. */
int gs_shim_exec(const char *runtime, char **argv, struct gs_error *err);
/* An error as the runtime's log has it (--log, --log-format json|text) and on stderr. */
void gs_shim_log_error(const struct gs_shim_args *a, const char *msg);
int gs_shim_mode_parse(const char *s, enum gs_shim_mode *out);
const char *gs_shim_mode_name(enum gs_shim_mode m);

/* ------------------------------------------------------------------------------------------ */
/* toml_edit.c: TOML edited as text. Headers [a."b.c".d] (bare, "basic" or 'literal' keys); keys
 * set are bare, their values one-line. Every other line is kept as it is. */

/* The value text of `key` in table `path` (malloc'd), or NULL when it is not there. */
char *gs_toml_get(const char *text, const char *const *path, size_t npath, const char *key);
/* A copy of `text` with `key = value` (value: TOML text, e.g. "\"x\"" or true) in table `path`:
 * the line replaced where the key is, else added after the table's header, else the table added
 * at the end. *changed says whether the text differs. NULL with GS_EFORMAT where the table is
 * defined twice or the key's old value spans lines. */
char *gs_toml_set(const char *text, const char *const *path, size_t npath, const char *key, const char *value,
                  bool *changed, struct gs_error *err);
/* A TOML basic string for `s` (quotes and escapes), malloc'd. */
char *gs_toml_quote(const char *s);

/* ------------------------------------------------------------------------------------------ */
/* engines.c: `gpuslice runtime configure` */

enum gs_engine { GS_ENGINE_DOCKER, GS_ENGINE_CONTAINERD, GS_ENGINE_CRIO };

struct gs_engine_opts {
        enum gs_engine engine;
        const char *config;        /* NULL: the engine's default file */
        const char *drop_in;       /* containerd: a drop-in file imported by the config (NULL: none,
                                      but the default drop-in for a version 3 config) */
        const char *name;          /* the runtime handler's name (NULL: "nvidia") */
        const char *path;          /* the shim (NULL: /usr/bin/nvidia-container-runtime) */
        bool set_as_default, cdi_enabled, dry_run;
};

#define GS_ENGINE_MAX_CHANGES 16
struct gs_engine_file {
        char path[4096];
        char backup[4200];         /* "" when none was made */
        bool changed;
        char *after;               /* the new text (malloc'd) */
};
struct gs_engine_result {
        struct gs_engine_file files[2]; /* the config, and a drop-in */
        size_t nfiles;
        char changes[GS_ENGINE_MAX_CHANGES][256];
        size_t nchanges;
};

int gs_engine_parse(const char *s, enum gs_engine *out);
/* Register the shim with the engine (nothing written with dry_run). */
int gs_engine_configure(const struct gs_engine_opts *o, struct gs_engine_result *r, struct gs_error *err);
void gs_engine_result_release(struct gs_engine_result *r);

#endif
