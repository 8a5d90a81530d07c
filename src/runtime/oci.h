/*
 * The OCI runtime's side of a hook: the container state on stdin and the bundle's config.json
 * (json-c). Parsed leniently, as runtimes differ (runtime-spec runtime.md §State; runc sends
 * "ociVersion":"1.0.2-dev" and a host pid in runtime-namespace hooks, crun "1.0", pid 0 in
 * container-namespace hooks and an extra "root"): unknown keys are ignored, `bundle` may also be
 * the pre-2017 `bundlePath`, `pid` is optional.
 */
#ifndef GS_RUNTIME_OCI_H
#define GS_RUNTIME_OCI_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <gpuslice/gpuslice.h>

#include "common/strutil.h" /* gs_env_get: a value of process.env or of the annotations */

#define GS_OCI_STATE_MAX (1u << 20)   /* stdin larger than this is refused */
#define GS_OCI_CONFIG_MAX (16u << 20) /* config.json larger than this is refused */
/* NVIDIA's volume-mount strategy: a mount of /dev/null onto <this>/<device> asks for <device> */
#define GS_OCI_DEVICES_DIR "/var/run/nvidia-container-devices"
#define GS_OCI_MAX_DEVICE_MOUNTS 128
#define GS_OCI_MAX_GPU_HOOKS 64
#define GS_OCI_MAX_GPU_NODES 64

struct gs_oci_state {
        char id[256];          /* container id (required) */
        pid_t pid;             /* 0 when absent (poststop, container-namespace hooks of crun) */
        char bundle[PATH_MAX]; /* absolute bundle directory (required) */
        char status[32];       /* creating|created|running|stopped|... ("" when absent) */
};

/* Parse the state JSON. Errors: "invalid OCI state: <why>" (GS_EFORMAT). */
int gs_oci_state_parse(const char *json, size_t len, struct gs_oci_state *st, struct gs_error *err);
/* Read all of fd (at most GS_OCI_STATE_MAX bytes) and parse it. */
int gs_oci_state_read(int fd, struct gs_oci_state *st, struct gs_error *err);

struct gs_oci_config {
        char rootfs[PATH_MAX]; /* root.path made absolute against the bundle */
        char **env;            /* process.env, "KEY=VALUE" strings (NULL-terminated, nenv entries) */
        size_t nenv;
        bool privileged;       /* CAP_SYS_ADMIN in process.capabilities.bounding (NVIDIA's test) */
        uid_t uid;             /* process.user */
        gid_t gid;
        char **annotations;    /* "key=value" strings (NULL-terminated), for the observer's labels */
        size_t nannotations;
        /* mounts[] asking for devices, as NVIDIA reads them: source /dev/null and destination under
         * GS_OCI_DEVICES_DIR (both cleaned as Go's filepath.Clean does), each destination once;
         * the path below the directory without its slashes at either end ("0", "GPU-...",
         * "cdi/nvidia.com/gpu/0", "imex/3"); NULL-terminated */
        char **device_mounts;
        size_t ndevice_mounts;
        /* hooks.createRuntime[] and hooks.prestart[] whose args name a GPU (an arg "--gpu=..."):
         * each one's args (NULL-terminated), the per-GPU slice hooks of the container's slice
         * devices (runtime/slice_gpus.h); at most GS_OCI_MAX_GPU_HOOKS, NULL-terminated */
        char ***gpu_hooks;
        size_t ngpu_hooks;
        /* linux.devices[]: the minors of /dev/nvidia<N> (the container's GPUs, as CDI adds them) */
        unsigned gpu_minors[GS_OCI_MAX_GPU_NODES];
        size_t ngpu_minors;
        /* ... and of /dev/nvidia-caps/nvidia-cap<N> (a MIG device's GI and CI access nodes) */
        unsigned cap_minors[GS_OCI_MAX_GPU_NODES];
        size_t ncap_minors;
};

/* Go's filepath.Clean of an absolute or relative path, in place: one slash between names, no "."
 * names, ".." taking the name before it (never above "/"), no trailing slash. */
void gs_oci_path_clean(char *p);

/* Load <bundle>/config.json (opened with O_NOFOLLOW, at most GS_OCI_CONFIG_MAX bytes).
 * Errors: "invalid OCI config <path>: <why>" (GS_EFORMAT) or a system error. */
int gs_oci_config_load(const char *bundle, struct gs_oci_config *cfg, struct gs_error *err);
/* Parse config.json text (exposed for tests and the fuzzer); `bundle` makes root.path absolute. */
int gs_oci_config_parse(const char *json, size_t len, const char *bundle, struct gs_oci_config *cfg,
                        struct gs_error *err);
void gs_oci_config_release(struct gs_oci_config *cfg);

#endif
