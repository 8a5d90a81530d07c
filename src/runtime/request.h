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
#include "runtime/slice_rules.h"
#include "select/caps.h"

struct gs_request {
        struct gs_configure_opts opts; /* points into the storage below */
        bool gpu;                      /* false: not a GPU container (nothing to mount) */
        char devices[4096];
        char *requires[GS_MAX_REQUIRES];
        char mig_config[64], mig_monitor[64], imex[1024];
        struct gs_slice_want slice;    /* the slice's values; slice.ignored: what the env asked and did not get */
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
/* The same with the allocator's slice options (the hook's command line; NULL: no allocator) as
 * the ceiling of the slice (runtime/slice_rules.h). gs_request_from_env is this with NULL. */
int gs_request_build(struct gs_request *rq, char *const *env, size_t nenv, bool privileged,
                     const struct gs_slice_opts *alloc, const struct gs_hostconfig *hc, struct gs_error *err);
void gs_request_release(struct gs_request *rq);

#endif
