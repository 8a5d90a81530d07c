/*
 * The one model of "what this container gets", for its three front ends: `gpuslice configure`
 * (options), the OCI hook (the NVIDIA / HAMi env contract in config.json) and CDI (generated
 * specs). A request is a struct gs_configure_opts (include/gpuslice/gpuslice.h) plus the storage
 * its strings point into.
 *
 * The NVIDIA contract, as nvidia-container-runtime-hook reads it:
 *   NVIDIA_VISIBLE_DEVICES      unset or "" or "void": no GPU (a legacy image, CUDA_VERSION set and
 *                               NVIDIA_REQUIRE_CUDA unset, with it unset: "all"); "none": driver
 *                               files and control nodes only; "all"; else a --device list
 *   NVIDIA_DRIVER_CAPABILITIES  comma list of compute compat32 display graphics ngx utility video
 *                               or "all" (= the supported set); unset/empty: the host default
 *                               (utility,compute), a legacy image: all supported; a name that is
 *                               unknown or unsupported by the host config is an error
 *   NVIDIA_REQUIRE_*            each one a --require (ANDed); NVIDIA_REQUIRE_JETPACK* ignored;
 *                               a legacy image adds cuda>=<major.minor of CUDA_VERSION>
 *   NVIDIA_DISABLE_REQUIRE      Go ParseBool true (1 t T TRUE true True): no requirement is checked
 *   NVIDIA_MIG_CONFIG_DEVICES   --mig-config; NVIDIA_MIG_MONITOR_DEVICES  --mig-monitor: privileged
 *                               containers only ("cannot set MIG_CONFIG_DEVICES in non privileged
 *                               container")
 *   NVIDIA_IMEX_CHANNELS        --imex-channel ("all" ignored)
 * Whose word counts (NVIDIA's hook, its host settings under their names in hostconfig.h):
 *   - with hook.accept-nvidia-visible-devices-as-volume-mounts, mounts of /dev/null onto
 *     /var/run/nvidia-container-devices/<device> (the kubelet's, from a device plugin's answer)
 *     name the devices, and win over the env when there are any; imex/<n> the IMEX channels;
 *     cdi/<vendor>/<class>/<name> are CDI names (the runtime shim's), never devices here
 *   - else NVIDIA_VISIBLE_DEVICES (and a legacy image's implicit "all", NVIDIA_IMEX_CHANNELS)
 *     only from a privileged container (CAP_SYS_ADMIN in process.capabilities.bounding) or with
 *     hook.accept-nvidia-visible-devices-envvar-when-unprivileged (true by default, as NVIDIA's;
 *     `gpuslice runtime configure --kubernetes` sets it false): otherwise the env asks for no GPU
 *   - NVIDIA_VISIBLE_DEVICES=/var/run/nvidia-container-devices (the volume-mount strategy's
 *     value) asks for nothing by itself
 * The slice contract (gpuslice and HAMi names; the tightest value of all of them wins, and an
 * allocator's options are the ceiling: runtime/slice_rules.h):
 *   GPUSLICE_MEMORY_LIMIT[_<i>]  / CUDA_DEVICE_MEMORY_LIMIT[_<i>]   memory quota (all / visible device i)
 *   GPUSLICE_COMPUTE_LIMIT[_<i>] / CUDA_DEVICE_SM_LIMIT[_<i>]       compute share in percent (1..100)
 *   GPUSLICE_COMPUTE_MODE        / GPU_CORE_UTILIZATION_POLICY      cap|share|off (force|default|disable)
 *   GPUSLICE_PRIORITY            / CUDA_TASK_PRIORITY               high|normal|low (0, 1, 2 or more);
 *                                a priority alone makes no slice (nor does a mode alone)
 */
#ifndef GS_RUNTIME_REQUEST_H
#define GS_RUNTIME_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

#include <gpuslice/gpuslice.h>

#include "runtime/hostconfig.h"
#include "runtime/oci.h"
#include "runtime/slice_rules.h"
#include "select/caps.h"

/* The allocator's slice as volume mounts: /dev/null onto GS_OCI_DEVICES_DIR/slice/<option>=<value>
 * (memory=8Gi, memory-1=4Gi, compute-share=50, compute-mode=cap, priority=high: the hook's slice
 * options), taken where the host takes volume mounts (hook.accept-nvidia-visible-devices-as-
 * volume-mounts) and the hook's command line gives no slice: only the kubelet makes such mounts
 * (the device plugin's volume-mounts answers), so they are an allocator's word. */
#define GS_REQUEST_SLICE_MOUNTS "slice/"
#define GS_REQUEST_SLICE_ARGS (4 + 2 * GS_SLICE_MAX_DEVICES)

struct gs_request {
        struct gs_configure_opts opts; /* points into the storage below */
        bool gpu;                      /* false: not a GPU container (nothing to mount) */
        char devices[4096];
        char *requires[GS_MAX_REQUIRES];
        char mig_config[64], mig_monitor[64], imex[1024];
        char mount_devices[4096], mount_imex[1024]; /* what the volume mounts ask for */
        const char *devices_from;      /* "volume mounts", "NVIDIA_VISIBLE_DEVICES" or NULL (none) */
        bool env_refused;              /* the env asked for GPUs and the host refused it (unprivileged) */
        struct gs_slice_want slice;    /* the slice's values; slice.ignored: what the env asked and did not get */
        char mount_slice[GS_REQUEST_SLICE_ARGS][80]; /* the slice mounts as options ("--memory=8Gi") ... */
        struct gs_slice_opts mount_alloc;             /* ... parsed: the allocator's slice, from mounts */
        char container_id[256];
        char regions_dir[4096];
        char vgpu_lib[4096];
        char mps_root[4096];
};

/* Fill rq from a container's env (KEY=VALUE strings) and the host config: the device, capability,
 * requirement and slice settings above. The caller sets opts.pid / opts.rootfs afterwards.
 * Errors (GS_EINVAL, err->stage set): "unsupported capabilities found in 'x'" (stage "hook"),
 * an invalid slice value (stage "slice"), ... */
int gs_request_from_env(struct gs_request *rq, char *const *env, size_t nenv, bool privileged,
                        const struct gs_hostconfig *hc, struct gs_error *err);
/* The same from everything config.json says (env, privileged, the device mounts) and the
 * allocator's slice options (the hook's command line; NULL: no allocator), the ceiling of the
 * slice (runtime/slice_rules.h). */
int gs_request_from_oci(struct gs_request *rq, const struct gs_oci_config *cfg, const struct gs_slice_opts *alloc,
                        const struct gs_hostconfig *hc, struct gs_error *err);
/* What a request is made of (gs_request_from_env: no device mounts). */
struct gs_request_src {
        char *const *env;
        size_t nenv;
        bool privileged;
        char *const *device_mounts; /* struct gs_oci_config's */
        size_t ndevice_mounts;
        const struct gs_slice_opts *alloc; /* the allocator's slice options, or NULL (none) */
};
int gs_request_from_src(struct gs_request *rq, const struct gs_request_src *in, const struct gs_hostconfig *hc,
                        struct gs_error *err);
void gs_request_release(struct gs_request *rq);

#endif
