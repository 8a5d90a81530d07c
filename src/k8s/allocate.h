/*
 * Allocate's answer for one container: the devices the kubelet picked, as the container will get
 * them. The devices are grouped by GPU (a MIG device is its own group) in NVML index order; a
 * group of k shares of a resource with a memory quota M and compute share C is a slice of k*M and
 * min(100, k*C) % on that GPU.
 *
 *   cdi              cdi_devices: <kind>=<gpu> (MIG <gpu>:<mig>) for a whole device, and for k
 *                    shares of a GPU <kind>=<gpu>-<slice> (k = 1) or <kind>=<gpu>-<slice>-x<k>,
 *                    the CDI slice device of the plugin's own spec (cdispec.c) whose hook's
 *                    args carry k shares' limits: the allocator's word, out of the container's
 *                    reach (its env can only narrow them; runtime/slice_rules.h)
 *   cdi-annotations  the same names in the annotation cdi.k8s.io/gpuslice_<resource>
 *   env              NVIDIA_VISIBLE_DEVICES=<UUIDs> and the slice env for `gpuslice hook`
 *                    (GPUSLICE_MEMORY_LIMIT, GPUSLICE_COMPUTE_LIMIT, GPUSLICE_PRIORITY when the
 *                    resource sets one), plus device specs for the GPUs' and the control nodes
 *                    (host paths under host-root). The env is the pod's to change too: no
 *                    allocator's word (the hook's tightest-wins rule applies; a priority high
 *                    needs the node's slice.env-may-raise). Prefer CDI.
 *   volume-mounts    as env, but the devices as mounts of /dev/null (read-only) onto
 *                    /var/run/nvidia-container-devices/<UUID> and NVIDIA_VISIBLE_DEVICES that
 *                    directory (NVIDIA's deviceListStrategy volume-mounts): a node whose hook
 *                    does not take NVIDIA_VISIBLE_DEVICES from unprivileged containers (hook.accept-
 *                    nvidia-visible-devices-envvar-when-unprivileged = false, hook.accept-nvidia-
 *                    visible-devices-as-volume-mounts = true) still gives each pod its devices
 *                    and the slice's values as mounts too, slice/memory=8Gi, slice/compute-
 *                    share=50, slice/priority=high (per device slice/memory-<i>=...): only the
 *                    kubelet makes them, so the hook takes them as the allocator's word
 *                    (runtime/request.h), which the pod's env can only narrow
 *
 * A container's slice is made by the first slice hook that runs, with that device's limits on
 * every GPU of the container: a CDI answer whose groups differ in shares (or has a MIG device
 * beside shares) names, for every GPU, the slice device of the fewest shares any group has, so
 * no GPU gets more than it was given (a GPU given more shares gets the fewest; env answers give
 * per-device limits GPUSLICE_MEMORY_LIMIT_<i> / GPUSLICE_COMPUTE_LIMIT_<i>, volume-mounts answers
 * slice/memory-<i>=... mounts, i its place in NVML index order among the container's GPUs, which
 * is the interposer's visible order). Every answer also sets GPUSLICE_K8S_DEVICES_<RES> to the
 * device IDs (for the container's own information: nothing on the host reads it).
 */
#ifndef GS_K8S_ALLOCATE_H
#define GS_K8S_ALLOCATE_H

#include <stddef.h>

#include "api.pb-c.h"
#include "kubelet/arena.h"
#include "kubelet/health.h"
#include "kubelet/resources.h"

struct gs_k8s_alloc_ctx {
        const struct gs_k8s_plan *plan;
        const struct gs_k8s_health *health;
        const char *root;      /* the driver root as the plugin sees it */
        const char *host_root; /* ... and as the host's runtime does (device specs) */
};

/* Fill `out` (allocated in `a`) for devices `ids` of resource r. -1 with err (GS_ENOTFOUND: an
 * unknown ID; GS_EINVAL: an ID given twice, an unhealthy device, too many GPUs for per-device
 * limits). */
int gs_k8s_allocate(const struct gs_k8s_alloc_ctx *x, const struct gs_k8s_resource *r, char *const *ids, size_t nids,
                    struct gs_k8s_arena *a, V1beta1__ContainerAllocateResponse *out, struct gs_error *err);

#endif
