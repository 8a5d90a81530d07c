/*
 * Who sets a container's slice: the allocator's word is the ceiling, the container's env can only
 * narrow it (docs/security.md; issue 31).
 *
 * The allocator speaks on a command line the container cannot write: `gpuslice configure`'s and
 * `gpuslice hook`'s slice options (the hook's in a CDI slice device's createRuntime hook args:
 * `gpuslice cdi generate --slice`, the device plugin's spec, the DRA plugin's per-claim specs):
 *   --memory=SIZE  --memory-<i>=SIZE  --compute-share=PCT  --compute-share-<i>=PCT
 *   --compute-mode=cap|share|off  --priority=high|normal|low
 * (a per-device value wins over the global one: the allocator's word is exact). Any of them given
 * = the allocator spoke.
 *
 * The container's env (config.json: the image's ENV and the pod's env) names the same values:
 *   GPUSLICE_MEMORY_LIMIT[_<i>]  / CUDA_DEVICE_MEMORY_LIMIT[_<i>]
 *   GPUSLICE_COMPUTE_LIMIT[_<i>] / CUDA_DEVICE_SM_LIMIT[_<i>]
 *   GPUSLICE_COMPUTE_MODE        / GPU_CORE_UTILIZATION_POLICY  (cap|force, share|default, off|disable)
 *   GPUSLICE_PRIORITY            / CUDA_TASK_PRIORITY           (high|0, normal|1, low|2 or more)
 * Among them the tightest wins: the smallest limit of the global and per-device names, ours and
 * HAMi's alike (0 / "unlimited" narrows nothing), the narrowest mode (cap < share < off), the
 * lowest priority. A malformed value is an error (stage "slice") that fails the start.
 *
 * With an allocator: each value is the allocator's (mode cap and priority normal where it says
 * none; a limit it does not give is unlimited), narrowed by the env's tightest: less memory, less
 * compute, cap instead of share, a lower priority. An env value wider than the allocator's (a
 * larger limit, mode share or off over cap, a higher priority) is ignored and noted, never an
 * error; privileged or not, the allocator's word holds.
 * Without an allocator (a plain hook: hooks.d, docker --gpus -e ...): the env's tightest values;
 * mode off and priority high raise the container over its neighbours and are taken only when the
 * host allows it (`[slice] env-may-raise = true`) or the container is privileged, else ignored
 * and noted (mode share is taken: a share slice still gives its neighbours their shares).
 */
#ifndef GS_RUNTIME_SLICE_RULES_H
#define GS_RUNTIME_SLICE_RULES_H

#include <stdbool.h>
#include <stddef.h>

#include <gpuslice/gpuslice.h>

/* Take the allocator's slice options (above; "--opt=VALUE" or "--opt VALUE") out of argv, up to
 * "--": their values (pointers into argv) into *s, checked as configure checks them; the other
 * arguments go to `out` (room for argc + 1, NULL-terminated; may be argv itself). *given: how
 * many were taken. Returns the new argc, or -1 with err (GS_EINVAL): "invalid --memory: 4GB
 * (bytes, or K/M/G/T or Ki/Mi/Gi/Ti)", "invalid --compute-share: 120 (a percentage, 1..100)",
 * "invalid --compute-mode: fast (cap, share or off)", "invalid --priority: urgent (high, normal
 * or low)", "invalid --memory-99: 1Gi (device index < 16)", "option '--memory' needs a value". */
int gs_slice_args_take(int argc, char **argv, char **out, struct gs_slice_opts *s, unsigned *given,
                       struct gs_error *err);

/* The slice's values as strings (the slice file's), and what the env asked and did not get. */
struct gs_slice_want {
        char memory[GS_SLICE_MAX_DEVICES + 1][64]; /* [0] all devices, [1 + i] visible device i; "" = none */
        char compute[GS_SLICE_MAX_DEVICES + 1][16];
        char compute_mode[16];
        char priority[8];
        char ignored[512]; /* "GPUSLICE_COMPUTE_MODE=off (wider than cap); ..." or "" */
};

/* The rules above: `alloc` the allocator's options (NULL: no allocator), `env` KEY=VALUE strings
 * (the last of a name wins), `may_raise` (env-may-raise or a privileged container; no allocator
 * only). Fills *w and points s's memory, memory_dev, compute, compute_dev, compute_mode and
 * priority into it (the other fields of s are left alone). -1 with err (GS_EINVAL, naming the
 * variable and its value) on a malformed env value. */
int gs_slice_rules_apply(const struct gs_slice_opts *alloc, char *const *env, size_t nenv, bool may_raise,
                         struct gs_slice_want *w, struct gs_slice_opts *s, struct gs_error *err);

#endif
