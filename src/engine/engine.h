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
 *   toml_parse.c    TOML 1.0 read for editing: each table and key with where the text defines it
 *                   (toml_doc.h, for toml_edit.c only)
 *   toml_edit.c     TOML edited as text: a value replaced where it stands, a key added where TOML
 *                   lets its table grow (every other byte and comment kept), read back
 *   conffile.c      an engine's config written safely: through a link, owner and mode kept, a
 *                   backup, checked by the engine before it replaces the original
 *   engines.c       runtime configure: daemon.json, containerd's config.toml (v2, v3, drop-in),
 *                   CRI-O's drop-in
 *   hostconfig_edit.c  runtime configure --kubernetes: gpuslice's own host config, the values a
 *                   Kubernetes node needs (NVIDIA_VISIBLE_DEVICES of unprivileged pods refused)
 */
#ifndef GS_ENGINE_ENGINE_H
#define GS_ENGINE_ENGINE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

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
/* toml_edit.c: TOML edited as text (toml_parse.c reads it: TOML 1.0, dotted keys, inline tables,
 * multi-line strings and arrays). Path parts and keys are decoded names ("io.containerd.grpc.v1.cri"
 * is one part). Errors name the line: "line 12: runtimes is a value, not a table; not edited". */

/* The text is TOML this editor reads. */
int gs_toml_check(const char *text, struct gs_error *err);
/* The value text of `key` in table `path` as written (malloc'd), or NULL when it is not there
 * (or the text is not TOML). */
char *gs_toml_get(const char *text, const char *const *path, size_t npath, const char *key);
/* A copy of `text` with `key = value` (value: TOML text, e.g. "\"x\"" or true) in table `path`:
 * the value replaced where it stands; else the key added where TOML lets the table grow (its
 * [header]'s section, beside the dotted keys that define it, inside the inline table that holds
 * it), else under a new [path] at the end. Read back before it is returned. *changed says whether
 * the text differs. NULL with GS_EFORMAT where the text is not TOML, a part of the path is a value
 * or an array of tables, or the key is a table. */
char *gs_toml_set(const char *text, const char *const *path, size_t npath, const char *key, const char *value,
                  bool *changed, struct gs_error *err);
/* The decoded strings of the array path.key (none when the key is not there). Errors: not an
 * array of strings. Free with gs_toml_strings_free. */
int gs_toml_strings(const char *text, const char *const *path, size_t npath, const char *key, char ***out,
                    size_t *n, struct gs_error *err);
void gs_toml_strings_free(char ***list, size_t *n);
/* A copy of `text` with `elem` (TOML text) appended to the array path.key (made when absent). */
char *gs_toml_append(const char *text, const char *const *path, size_t npath, const char *key, const char *elem,
                     struct gs_error *err);
char *gs_toml_quote(const char *s);

/* ------------------------------------------------------------------------------------------ */
/* conffile.c: an engine's config file read and written safely */

struct gs_conffile {
        char path[4096];           /* as named (maybe a link) */
        char real[4096];           /* the file itself, links resolved (the path when it is new) */
        bool exists, linked;
        mode_t mode;               /* the original's (0644 for a new file) */
        uid_t uid;                 /* the original's ((uid_t)-1 for a new file: the caller's) */
        gid_t gid;
};
/* Resolve `path` (a link followed to its file; a dangling link refused) and read it (*text: ""
 * when there is no file), a regular file of at most 4 MiB. */
int gs_conffile_read(const char *path, struct gs_conffile *f, char **text, struct gs_error *err);
/* A check of the new text in the temporary file `tmp` (beside the original) before it replaces it. */
typedef int (*gs_conffile_check_fn)(const char *tmp, void *arg, struct gs_error *err);
/* Write `text` over f->real: a temporary file beside it (0600, then the original's owner and mode),
 * fsync, check (NULL: none), a backup of `old` (<file>.<UTC time>.bak, the same owner and mode,
 * its path in bak; none for a new file), rename. On failure the original is untouched and
 * neither the temporary file nor the backup is left. */
int gs_conffile_write(const struct gs_conffile *f, const char *text, const char *old, gs_conffile_check_fn check,
                      void *arg, char *bak, size_t baklen, struct gs_error *err);
/* `name` on PATH (an executable file) into out; -1 when there is none. */
int gs_conffile_find_program(const char *name, char *out, size_t len);
/* Run argv (argv[0] a path; stdin and stdout /dev/null) for at most 60 s: its exit status (128+N
 * killed by signal N), the last line it wrote on stderr in `said`; -1 when it cannot be run. */
int gs_conffile_run(char *const argv[], char *said, size_t len, struct gs_error *err);

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
#define GS_ENGINE_MAX_NOTES 4
struct gs_engine_file {
        char path[4096];           /* as named */
        struct gs_conffile cf;     /* the file written (cf.real: through a link), its owner and mode */
        char backup[4200];         /* "" when none was made */
        bool changed;
        char *before;              /* the text as read (malloc'd) */
        char *after;               /* the new text (malloc'd) */
};
struct gs_engine_result {
        struct gs_engine_file files[2]; /* the config, and a drop-in */
        size_t nfiles;
        char changes[GS_ENGINE_MAX_CHANGES][256];
        size_t nchanges;
        char notes[GS_ENGINE_MAX_NOTES][4400]; /* e.g. "FILE: not checked by containerd (...)" */
        size_t nnotes;
};

int gs_engine_parse(const char *s, enum gs_engine *out);
/* Register the shim with the engine (nothing written with dry_run). Each changed file is written
 * by gs_conffile_write (through a link, owner and mode kept, a backup); containerd's files are
 * first read by containerd itself (`containerd --config TMP config dump`; a drop-in before the
 * config that imports it): when it refuses one, nothing of it replaces the original (a drop-in
 * already written is put back) and the error quotes containerd; without containerd on PATH a note
 * says the files were not checked. */
int gs_engine_configure(const struct gs_engine_opts *o, struct gs_engine_result *r, struct gs_error *err);
void gs_engine_result_release(struct gs_engine_result *r);

/* ------------------------------------------------------------------------------------------ */
/* hostconfig_edit.c: `gpuslice runtime configure --kubernetes` */

/* The host config (`path`; NULL: GS_HOSTCONFIG_DEFAULT_PATH, made when missing) set for a
 * Kubernetes node, where a pod's image and spec are the tenant's: [hook]
 * accept-nvidia-visible-devices-envvar-when-unprivileged = false (an unprivileged container's
 * NVIDIA_VISIBLE_DEVICES, e.g. every CUDA image's, gives no GPU), accept-nvidia-visible-devices-
 * as-volume-mounts = true (the kubelet's mounts from the device plugin's volume-mounts answers
 * do), and [device-plugin] allocate = "volume-mounts" where it was "env". One file in `r`, its
 * changes noted; the new text is parsed as the host config before it is written (nothing written
 * with dry_run); conffile.c reads and writes it: a symlink is followed (a link to no file is
 * refused), the backup and the new file keep the old one's mode and owner. -1 when the file is
 * not a valid host config (it is left as it is). */
int gs_hostconfig_configure_k8s(const char *path, bool dry_run, struct gs_engine_result *r, struct gs_error *err);

#endif
