/*
 * The slice's configuration, as the interposer reads it (libc only):
 *   GPUSLICE_MEMORY_LIMIT / CUDA_DEVICE_MEMORY_LIMIT          limit for every visible device
 *   GPUSLICE_MEMORY_LIMIT_<i> / CUDA_DEVICE_MEMORY_LIMIT_<i>  per visible device i (wins)
 *   GPUSLICE_REGION / CUDA_DEVICE_MEMORY_SHARED_CACHE         usage region file (shared by the
 *                                                             container's processes)
 *   GPUSLICE_DEVICES                                          the slice's devices: comma list of
 *                                                             GPU- or MIG- UUIDs (default all); the
 *                                                             driver is shown only these (the
 *                                                             process's CUDA_VISIBLE_DEVICES
 *                                                             selects among them, see
 *                                                             gs_vgpu_cuda_visible)
 *   GPUSLICE_COMPUTE_LIMIT / CUDA_DEVICE_SM_LIMIT              compute share of every visible
 *                                                             device, percent 0..100 (0 or 100 =
 *                                                             unlimited)
 *   GPUSLICE_COMPUTE_LIMIT_<i> / CUDA_DEVICE_SM_LIMIT_<i>      per visible device i (wins)
 *   GPUSLICE_COMPUTE_MODE / GPU_CORE_UTILIZATION_POLICY        cap (HAMi: force), share (HAMi:
 *                                                             default), off (HAMi: disable);
 *                                                             default: cap
 *   GPUSLICE_PRIORITY / CUDA_TASK_PRIORITY                    the slice's priority on its GPUs:
 *                                                             high, normal (default) or low
 *                                                             (HAMi: 0 high, 1 normal, 2 or more
 *                                                             low); see arbiter.h for the rules
 *   GPUSLICE_ARBITER_DIR                                      where the GPUs' arbiter directories
 *                                                             are (compute-limited slices take
 *                                                             turns through them; default
 *                                                             /run/gpuslice/arbiter if it exists,
 *                                                             else /dev/shm)
 *   GPUSLICE_ARBITER_NAME                                     the slice's file there (the hook:
 *                                                             the container id; default: the
 *                                                             slice's region key in hex)
 *   GPUSLICE_MPS_PIPE_DIRECTORY                               cap mode through an MPS server: the
 *                                                             server's pipe directory, or the GPU's
 *                                                             client directory of `gpuslice mps`; the
 *                                                             process connects with the share as its
 *                                                             active thread percentage (mps_client.c)
 *   GPUSLICE_LIVE_LIMITS                                      the slice's live limits file (the
 *                                                             hook: /run/gpuslice/live/limits, a
 *                                                             directory mounted read-only; exec:
 *                                                             its slice directory's): the host
 *                                                             replaces it whole (`gpuslice slice
 *                                                             set`) and every process applies it
 *                                                             within a second (vgpu/live.c); its
 *                                                             limits win over the other sources'
 *   GPUSLICE_LOG_LEVEL / LIBCUDA_LOG_LEVEL                    0 errors .. 4 debug (default 1)
 *   GPUSLICE_SLICE_FILE                                       read-only slice file (default
 *                                                             /etc/gpuslice/slice.conf), KEY=VALUE
 *                                                             lines with the GPUSLICE_* keys above;
 *                                                             the environment wins over it, except
 *                                                             when /etc/gpuslice/slice.conf says
 *                                                             GPUSLICE_SLICE_ENFORCED=1 (written by
 *                                                             the hook/configure, read-only in the
 *                                                             container): then the file's region,
 *                                                             devices and limits apply, the
 *                                                             environment's are ignored (the log
 *                                                             level excepted), and so is
 *                                                             GPUSLICE_SLICE_FILE
 *   GPUSLICE_ON_CONFIG_ERROR=unlimited                        run without limits when the config is
 *                                                             invalid (default: refuse: cuInit fails)
 * Sizes: digits with an optional fraction, then K, M, G, T or Ki, Mi, Gi, Ti (any case; all powers
 * of 1024, as HAMi reads K/M/G), or plain bytes; "0" or "unlimited" = no limit. Anything else is an
 * error, reported on stderr, never a silent misparse.
 */
#ifndef GS_VGPU_CONFIG_H
#define GS_VGPU_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GS_VGPU_MAX_DEVICES 16
/* Where the hook makes the GPUs' arbiter directories (GS_SLICE_ARBITER_DIR in gpuslice.h): on the
 * host, and the same path inside a container. */
#define GS_VGPU_HOST_ARBITER_DIR "/run/gpuslice/arbiter"

enum { GS_COMPUTE_CAP = 0, GS_COMPUTE_SHARE = 1, GS_COMPUTE_OFF = 2 }; /* cap is the default */
/* A slice's priority (HAMi's CUDA_TASK_PRIORITY numbers; the region and the arbiter store them). */
enum { GS_PRIO_HIGH = 0, GS_PRIO_NORMAL = 1, GS_PRIO_LOW = 2 };

struct gs_vgpu_config {
        uint64_t limit[GS_VGPU_MAX_DEVICES]; /* bytes per visible device; 0 = unlimited */
        uint64_t limit_all;                  /* the global value (0 = unlimited) */
        unsigned compute[GS_VGPU_MAX_DEVICES]; /* percent 1..99 per visible device; 0 = unlimited */
        unsigned compute_all;                /* the global value (0 = unlimited) */
        int compute_mode;                    /* GS_COMPUTE_* */
        int priority;                        /* GS_PRIO_* */
        char region[512];                    /* usage region path ("" = none: process-local only) */
        char arbiter_dir[256];               /* GPUSLICE_ARBITER_DIR: the GPUs' arbiter directories */
        char arbiter_name[256];              /* GPUSLICE_ARBITER_NAME ("" = from the region) */
        char mps_dir[256];                   /* GPUSLICE_MPS_PIPE_DIRECTORY ("" = no MPS) */
        char live[512];                      /* GPUSLICE_LIVE_LIMITS ("" = limits fixed at start) */
        uint64_t live_gen;                   /* the live file's generation applied (0 = none) */
        char devices[1024];                  /* GPUSLICE_DEVICES as given ("" = all) */
        char uuid[GS_VGPU_MAX_DEVICES][96];  /* ... its UUIDs, in order (GPU-/MIG- prefix, hex lower case) */
        int nuuids;                          /* how many (0 with devices set: invalid, none shown) */
        int log_level;
        bool error;                          /* an invalid setting was found */
        bool ignore_errors;                  /* GPUSLICE_ON_CONFIG_ERROR=unlimited */
        char message[512];                   /* the first error */
        bool enforced;                       /* limits from the host's slice file only */
        char env_message[512];               /* an invalid variable ignored under an enforced file */
};

/* Parse a size; 0 with *bytes set on success ("0"/"unlimited" give 0), -1 on error. */
int gs_vgpu_parse_size(const char *s, uint64_t *bytes);

/* Parse a compute share: "0".."100" (percent), 0 with *pct set, -1 on error. */
int gs_vgpu_parse_percent(const char *s, unsigned *pct);
/* Parse a compute mode (cap|share|off, or HAMi's force|default|disable, any case); -1 on error. */
int gs_vgpu_parse_compute_mode(const char *s);
/* Parse a priority: high|normal|low (any case), or with `hami` HAMi's CUDA_TASK_PRIORITY, a
 * decimal integer (0 high, 1 normal, 2 or more low); GS_PRIO_*, -1 on error. */
int gs_vgpu_parse_priority(const char *s, bool hami);
/* Its name: "high", "normal", "low" ("normal" for anything else). */
const char *gs_vgpu_priority_name(int prio);
/* Is any visible device's compute share limited (and the mode not off)? */
bool gs_vgpu_compute_limited(const struct gs_vgpu_config *cfg);

/* The CUDA_VISIBLE_DEVICES that shows the driver the slice's devices (cfg->uuid) as the
 * process's own value `user` selects among them (NULL: unset, all of them in order). `user` is
 * read as the driver reads it on a machine that has only the slice's devices: comma-separated
 * entries, each an index into the slice's devices (its leading digits) or a GPU-/MIG- UUID or a
 * prefix naming one of them; the list ends at the first entry that names none (or more than one);
 * an empty value names none. Writes the named devices' full UUIDs (repeats kept: the driver judges
 * them) into out, "" when none; the number written, -1 when out is too small. */
int gs_vgpu_cuda_visible(const struct gs_vgpu_config *cfg, const char *user, char *out, size_t size);

/* The slice's live limits file (GPUSLICE_LIVE_LIMITS; only the host writes it, always whole:
 * a temporary file renamed over it): KEY=VALUE lines, GPUSLICE_GENERATION=N (N > 0) and the limit
 * keys of the slice file (GPUSLICE_MEMORY_LIMIT[_i], GPUSLICE_COMPUTE_LIMIT[_i],
 * GPUSLICE_COMPUTE_MODE, GPUSLICE_PRIORITY); a limit left out is unlimited, mode and priority
 * left out are the defaults. */
struct gs_vgpu_live {
        uint64_t generation;
        uint64_t limit[GS_VGPU_MAX_DEVICES];    /* bytes, 0 = unlimited */
        unsigned compute[GS_VGPU_MAX_DEVICES];  /* percent 1..99, 0 = unlimited */
        int compute_mode;                       /* GS_COMPUTE_* */
        int priority;                           /* GS_PRIO_* */
};
/* Read it: 0, or -1 when it is missing, unreadable, not whole (no generation line, or no final
 * newline) or invalid (the caller keeps the limits it has; `why` says which). */
int gs_vgpu_live_read(const char *path, struct gs_vgpu_live *out, char *why, size_t whylen);
/* Apply live limits over cfg (limits, compute shares, mode, priority, live_gen). */
void gs_vgpu_live_apply(struct gs_vgpu_config *cfg, const struct gs_vgpu_live *l);

/* Read the environment (and the slice file) into cfg. getenv_fn lets tests inject values. */
void gs_vgpu_config_load(struct gs_vgpu_config *cfg, const char *(*getenv_fn)(const char *name));

#endif
