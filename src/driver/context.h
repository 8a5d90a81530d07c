/* The library context (internal layout) and the pieces of the driver layer that share it. */
#ifndef GS_DRIVER_CONTEXT_H
#define GS_DRIVER_CONTEXT_H

#include <limits.h>
#include <stdbool.h>

#include <gpuslice/gpuslice.h>

#include "driver/ldcache.h"

#define GS_DEFAULT_NVML_TIMEOUT_MS 10000u

struct gs_nvml_launcher;

struct gs_context {
        char root[PATH_MAX];     /* canonical host path of the driver root */
        int rootfd;              /* O_PATH directory fd on it */
        char ldcache_path[PATH_MAX];
        uid_t uid;
        gid_t gid;
        unsigned nvml_timeout_ms;
        /* NULL: each query forks its helper; else the launcher forks it (gs_nvml_launcher_start:
         * set and stopped by whoever started it, before the context is freed) */
        struct gs_nvml_launcher *nvml_launcher;

        bool ldcache_loaded;
        struct gs_ldcache ldcache;

        bool devices_loaded;
        struct gs_device_info devices;
        struct gs_device_info basic; /* from procfs (gs_devices_basic) */
};

/* The host path of an in-root path (the root prepended, unless it is "/"). */
void gs_context_host_path(const struct gs_context *ctx, const char *in_root, char *out, size_t len);

/* The canonical in-root path of the driver binary `name` (a regular ELF executable of this machine,
 * as `list` finds them), looked for in the caller's $PATH (or the usual default) inside the root.
 * GS_ENOTFOUND naming the root and the search path when there is none. */
int gs_driver_find_binary(struct gs_context *ctx, const char *name, char *out, size_t len, struct gs_error *err);

/* Parse the RM version out of /proc/driver/nvidia/version text. */
int gs_parse_nvrm_version(const char *text, char *out, size_t len);
/* Fill `out` from <root>/proc/driver/nvidia; -1 when procfs cannot answer fully. */
int gs_devices_from_procfs(struct gs_context *ctx, struct gs_device_info *out, struct gs_error *err);

/* Open the root's ld.so.cache once (resolved inside the root); later calls reuse it. */
const struct gs_ldcache *gs_context_ldcache(struct gs_context *ctx, struct gs_error *err);

/* Run NVML in the isolated helper and fill `out` (see nvml_helper.c). `nvml_path` is the in-root
 * path of libnvidia-ml.so.1 to dlopen, or NULL to let the loader search for it. */
int gs_nvml_query(const struct gs_context *ctx, const char *nvml_path, struct gs_device_info *out,
                  struct gs_error *err);

/* For a caller that will have threads (the observer's NVML poller): a process forked now, while
 * the caller is still single-threaded, that forks each helper of ctx's later queries (a helper
 * forked by a multithreaded process can inherit a lock another thread held, and hang on it until
 * the deadline). Set it as ctx->nvml_launcher; it ends with gs_nvml_launcher_stop or our exit. */
struct gs_nvml_launcher *gs_nvml_launcher_start(const struct gs_context *ctx, struct gs_error *err);
void gs_nvml_launcher_stop(struct gs_nvml_launcher *l);

/* The in-root path of libnvidia-ml.so.1 as the root's ld.so.cache names it (false: not there). */
bool gs_nvml_library_path(struct gs_context *ctx, char *out, size_t len);

/* In a freshly forked NVML helper: load the libraries NVML needs, chroot into the driver root,
 * drop to the helper identity with no_new_privs. -1 with `msg` set. (nvml_events.c uses it too.) */
int gs_nvml_confine(const struct gs_context *ctx, char *msg, size_t len);

/* Ask NVML again (a fresh helper: memory used and utilization now), replacing the context's
 * cached answer. On failure the cache is unchanged but no longer marked as loaded. */
const struct gs_device_info *gs_devices_requery(struct gs_context *ctx, struct gs_error *err);

/* Map an NVML brand enum value to nvidia-container-cli's brand string. */
const char *gs_brand_name(int brand);

#endif
