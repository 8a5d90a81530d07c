/*
 * Per-GPU slices: a container's slice devices on different GPUs (two slice claims, or one claim
 * with shares of two GPUs) each give their own GPU's limits (issue 33).
 *
 * A slice device whose allocator knows its GPU names it on its createRuntime hook's command line,
 * beside its limits: `gpuslice hook --gpu=GPU-<uuid> --memory=20Gi --compute-share=30 createRuntime`
 * (the DRA plugin's per-claim specs). Its limits are then that GPU's, never the container's other
 * GPUs'. A hook sees only its own args, so each per-GPU slice hook reads every hook of config.json
 * that names a GPU (the runtime wrote them from the CDI specs, as it wrote this hook's own args: the
 * same trust; the container's env cannot write hooks) and builds the one slice of the container:
 *   - each named GPU's memory and compute share: its hooks' (the tightest where two slice devices
 *     name the same GPU), at the GPU's visible index in the container (GPUSLICE_MEMORY_LIMIT_<i>);
 *   - a GPU no hook names (a whole GPU beside them): unlimited, as the allocator gave it whole;
 *     (where every GPU of the container has the same value, it is written once, for all);
 *   - the mode and priority (one per container in the interposer): the narrowest of the hooks'.
 * Every such hook builds the same slice, so the first makes it and the later ones find it made
 * (runtime/hook.c's one-slice rule). The env may then only narrow each GPU's value (slice_rules.h).
 * The visible order: the GPUs NVIDIA_VISIBLE_DEVICES (or the volume mounts) selected, else those
 * whose /dev/nvidia<N> node config.json's linux.devices holds (CDI's deviceNodes), in the host's
 * (NVML's, PCI) order, as CUDA numbers them. A GPU in MIG mode is its MIG devices the container
 * has (selected, or whose compute instance's /dev/nvidia-caps node linux.devices holds): each one
 * CUDA device, named by its MIG- UUID (a share of a MIG device: --gpu=MIG-<uuid>, its limits the
 * MIG device's).
 */
#ifndef GS_RUNTIME_SLICE_GPUS_H
#define GS_RUNTIME_SLICE_GPUS_H

#include <stddef.h>

#include <gpuslice/gpuslice.h>

/* Take "--gpu=UUID" (or "--gpu UUID") out of argv, up to "--": *gpu points into argv (NULL when
 * absent); the other arguments go to `out` (room for argc + 1, may be argv). Returns the new argc,
 * or -1 with err: "option '--gpu' needs a value", "invalid --gpu: x (a GPU- or MIG- UUID)", "--gpu given
 * twice". */
int gs_slice_gpu_take(int argc, char **argv, char **out, const char **gpu, struct gs_error *err);

/* The allocator's word for the whole container from its per-GPU slice hooks: this hook's own
 * (own_gpu, *own: its --gpu and options; NULL: none) and `hooks` (each hook's args, as config.json
 * holds them; this one's again, which changes nothing), `gpus` the container's GPUs' UUIDs in its
 * visible order.
 * Fills *merged's memory_dev, compute_dev, compute_mode and priority (pointers into hooks), and
 * its memory and compute: the value all of the container's GPUs share, else "0" (unlimited where
 * no hook names the GPU). -1 with err (GS_EINVAL):
 * a hook's GPU the container does not have, a per-device option (--memory-<i>) beside --gpu, a
 * malformed option. */
int gs_slice_gpus_merge(const char *own_gpu, const struct gs_slice_opts *own, char *const *const *hooks, size_t nhooks,
                        const char *const *gpus, size_t ngpus, struct gs_slice_opts *merged, struct gs_error *err);

#endif
