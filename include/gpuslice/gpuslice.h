/*
 * gpuslice: public C API of libgpuslice (the provisioning half).
 *
 * Conventions: every fallible function returns 0 (or a valid pointer) on success and -1 (or NULL)
 * on failure, filling the caller's struct gs_error. Nothing here calls exit() or prints.
 * Paths reported by the driver discovery are paths *inside the driver root* (as
 * nvidia-container-cli prints them); prepend gs_context_root() to reach them from the host.
 */
#ifndef GPUSLICE_GPUSLICE_H
#define GPUSLICE_GPUSLICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GS_ERRMSG_MAX 512

/* Error codes kept in gs_error.code (0 = none). errno values are kept in gs_error.sys_errno. */
enum gs_errcode {
        GS_OK = 0,
        GS_EINVAL,       /* bad input (option, token, expression) */
        GS_ESYS,         /* a system call failed (sys_errno set) */
        GS_ENOTFOUND,    /* something that must exist does not */
        GS_EFORMAT,      /* a file has the wrong format */
        GS_EINIT,        /* the driver could not be initialised (NVML missing or nvmlInit failed) */
        GS_ENVML,        /* an NVML query returned an error */
        GS_ETIMEOUT,     /* the NVML helper did not answer in time */
        GS_EHELPER,      /* the NVML helper died or spoke nonsense */
        GS_EUNSATISFIED, /* a requirement is not met */
        GS_ENOMEM,
};

struct gs_error {
        int code;          /* enum gs_errcode */
        int sys_errno;     /* errno of the failing call, or 0 */
        const char *stage; /* nvidia-container-cli stage name ("mount", "ldcache", ...) or NULL */
        char msg[GS_ERRMSG_MAX];
};

/* Driver capabilities (the --compute --utility ... flags). */
enum gs_caps {
        GS_CAP_UTILITY = 1u << 0,
        GS_CAP_COMPUTE = 1u << 1,
        GS_CAP_VIDEO = 1u << 2,
        GS_CAP_GRAPHICS = 1u << 3,
        GS_CAP_DISPLAY = 1u << 4,
        GS_CAP_NGX = 1u << 5,
        GS_CAP_COMPAT32 = 1u << 6,
        GS_CAP_ALL = (1u << 7) - 1,
};

/* ---------------------------------------------------------------------------------------------
 * Devices, as seen through NVML (fixed-size so the isolated helper can send them as one block).
 */
#define GS_MAX_GPUS 64
#define GS_MAX_MIGS 8 /* per GPU; NVML reports at most 7 */
#define GS_STR_SHORT 32
#define GS_STR_LONG 96

struct gs_mig_device {
        unsigned index;          /* enumeration index under its parent (nvmlDeviceGetMigDeviceHandleByIndex) */
        unsigned gi;             /* GPU instance id */
        unsigned ci;             /* compute instance id */
        char uuid[GS_STR_LONG];  /* MIG-... */
        uint64_t memory_total;   /* bytes */
        uint64_t memory_used;    /* bytes, NVML's answer at query time */
};

struct gs_gpu {
        unsigned index;          /* NVML enumeration index */
        unsigned minor;          /* /dev/nvidia<minor> */
        char model[GS_STR_LONG];
        char brand[GS_STR_SHORT];
        char uuid[GS_STR_LONG];  /* GPU-... */
        char bus_id[GS_STR_SHORT]; /* NVML form 00000000:3B:00.0 */
        char arch[GS_STR_SHORT]; /* CUDA compute capability "M.m" */
        uint64_t memory_total;   /* bytes */
        uint64_t memory_used;    /* bytes in use at query time (NVML; 0 from procfs) */
        bool utilization_valid;  /* NVML answered nvmlDeviceGetUtilizationRates (not on MIG GPUs) */
        unsigned utilization_gpu;    /* percent of the last sample period a kernel ran */
        unsigned utilization_memory; /* percent of it memory was read or written */
        bool mig_capable;
        bool mig_enabled;
        unsigned nmigs;
        struct gs_mig_device migs[GS_MAX_MIGS];
};

struct gs_device_info {
        bool from_procfs;                 /* basic data only: see gs_devices_basic() */
        char driver_version[GS_STR_LONG]; /* RM version, e.g. 580.159.04 */
        char cuda_version[GS_STR_SHORT];  /* e.g. 13.0 */
        unsigned ngpus;
        struct gs_gpu gpus[GS_MAX_GPUS];
};

/* ---------------------------------------------------------------------------------------------
 * Device selection (--device): see src/select/devices.c for the grammar.
 */
struct gs_selection {
        bool gpu[GS_MAX_GPUS];              /* the whole GPU is selected */
        bool mig[GS_MAX_GPUS][GS_MAX_MIGS]; /* this MIG device is selected */
        unsigned ngpus, nmigs;              /* counts of the above */
        bool all;                           /* "all" was given */
};

/* Parse a comma-separated device list against `info`. NULL or "" selects nothing.
 * Errors name the token: "<token>: unknown device" / "<token>: ambiguous device ...". */
int gs_select_devices(const char *list, const struct gs_device_info *info, struct gs_selection *out,
                      struct gs_error *err);

/* True when GPU i is needed by the selection (selected itself, or one of its MIG devices is). */
bool gs_selection_uses_gpu(const struct gs_selection *sel, unsigned i);

/* ---------------------------------------------------------------------------------------------
 * Requirement DSL (--require), as nvidia-container-cli.
 */
#define GS_MAX_REQUIRES 32

struct gs_require_facts {
        const char *cuda;   /* "12.4" or NULL (missing data passes) */
        const char *driver; /* "550.54.15" or NULL */
        const char *arch;   /* "8.0" or NULL (no device) */
        const char *brand;  /* "Tesla" or NULL (no device) */
};

/* 0 if satisfied; -1 with code GS_EINVAL ("invalid expression") or GS_EUNSATISFIED
 * ("unsatisfied condition: <term>[, please update ...]"). */
int gs_require_check(const char *expr, const struct gs_require_facts *facts, struct gs_error *err);

/* Check every expression for every selected GPU / MIG parent (or once with no device).
 * `exprs` may be NULL when n == 0. */
int gs_require_check_all(const char *const *exprs, size_t n, const struct gs_device_info *info,
                         const struct gs_selection *sel, struct gs_error *err);

/* ---------------------------------------------------------------------------------------------
 * Context: driver root, ld.so.cache, NVML helper identity and deadline.
 */
struct gs_config {
        const char *root;          /* driver root, default "/" */
        const char *ldcache;       /* default "/etc/ld.so.cache", inside root */
        uid_t uid;                 /* identity of the NVML helper; (uid_t)-1 = default */
        gid_t gid;                 /* (gid_t)-1 = default (uid's primary group, or as uid) */
        unsigned nvml_timeout_ms;  /* 0 = default (10 s) */
};

struct gs_context;

struct gs_context *gs_context_new(const struct gs_config *cfg, struct gs_error *err);
void gs_context_free(struct gs_context *ctx);
const char *gs_context_root(const struct gs_context *ctx);
/* O_PATH fd on the driver root (owned by the context). */
int gs_context_rootfd(const struct gs_context *ctx);

/* --load-kmods: modprobe nvidia, nvidia-uvm, nvidia-modeset (host /sbin/modprobe) and create
 * missing /dev nodes under the driver root from its procfs (GPUs, UVM, modeset, MIG caps).
 * Failures are logged, not fatal; a no-op inside a user namespace. Needs CAP_MKNOD. */
int gs_load_kmods(struct gs_context *ctx, struct gs_error *err);

/* Query NVML in an isolated helper (chrooted into the root, unprivileged, with a deadline).
 * Result is cached in the context: later calls return the same data. */
const struct gs_device_info *gs_devices(struct gs_context *ctx, struct gs_error *err);

/* For callers that need only the RM version and each GPU's index, minor, UUID, bus id, model and
 * MIG capability (list; configure without requirements): read from the root's
 * /proc/driver/nvidia when that answers fully (no MIG instances anywhere), skipping NVML's
 * start-up; else the same as gs_devices(). With from_procfs set, cuda_version, arch, brand and
 * memory_total are empty. GPUSLICE_DETECT=nvml in the environment forces NVML. */
const struct gs_device_info *gs_devices_basic(struct gs_context *ctx, struct gs_error *err);

/* ---------------------------------------------------------------------------------------------
 * Driver files (see src/driver/discover.c).
 */
struct gs_file {
        char *path;     /* path inside the driver root */
        unsigned caps;  /* GS_CAP_* that need it (0 = always) */
};

struct gs_devnode {
        char *path;     /* e.g. /dev/nvidiactl */
        dev_t rdev;
        unsigned caps;  /* GS_CAP_* that need it (0 = always) */
};

struct gs_file_list {
        struct gs_file *v;
        size_t n;
};

struct gs_driver_info {
        char version[GS_STR_LONG];
        struct gs_file_list libs;      /* 64-bit, in nvidia-container-cli's list order */
        struct gs_file_list libs32;    /* 32-bit (compat32) */
        struct gs_file_list bins;
        struct gs_file_list ipcs;
        struct gs_file_list firmwares;
        struct gs_devnode *devs;       /* driver control nodes */
        size_t ndevs;
};

/* Discovery options (driver option words of nvidia-container-cli). */
enum gs_driver_opts {
        GS_DRV_NO_GLVND = 1u << 0,
        GS_DRV_NO_UVM = 1u << 1,
        GS_DRV_NO_MODESET = 1u << 2,
        GS_DRV_NO_MPS = 1u << 3,
        GS_DRV_NO_PERSISTENCED = 1u << 4,
        GS_DRV_NO_FABRICMANAGER = 1u << 5,
        GS_DRV_NO_GSP_FIRMWARE = 1u << 6,
        GS_DRV_NO_LIBS32 = 1u << 7, /* skip the 32-bit ldcache pass (no --compat32 wanted) */
};

/* Find the driver's files under the root for RM version `version` (from gs_devices()). */
int gs_driver_discover(struct gs_context *ctx, const char *version, unsigned opts,
                       struct gs_driver_info *out, struct gs_error *err);
void gs_driver_info_release(struct gs_driver_info *info);

/* Which GS_CAP_* flags a library base name belongs to (0 if none). */
unsigned gs_library_caps(const char *basename);

/* ---------------------------------------------------------------------------------------------
 * MIG capability files (src/driver/nvcaps.c).
 */
#define GS_NV_CAPS_PROC "/proc/driver/nvidia/capabilities"
#define GS_NV_CAPS_DEV_DIR "/dev/nvidia-caps"

/* "/proc/driver/nvidia/capabilities/gpu<minor>/mig" */
void gs_mig_caps_dir(const struct gs_gpu *gpu, char *buf, size_t len);
/* ".../gpu<minor>/mig/gi<G>/access" and ".../gi<G>/ci<C>/access" */
void gs_mig_gi_access_path(const struct gs_gpu *gpu, const struct gs_mig_device *mig, char *buf, size_t len);
void gs_mig_ci_access_path(const struct gs_gpu *gpu, const struct gs_mig_device *mig, char *buf, size_t len);

/* True when the root's /proc/devices lists nvidia-caps (capabilities are /dev nodes). */
bool gs_nvcaps_dev_style(struct gs_context *ctx);
/* The /dev/nvidia-caps/nvidia-cap<N> node behind a capability file (in-root path), from its
 * "DeviceFileMinor: N" line; the node must exist under the root as a character device. */
int gs_nvcaps_node(struct gs_context *ctx, const char *proc_path, char *node, size_t len, dev_t *rdev,
                   struct gs_error *err);

/* ---------------------------------------------------------------------------------------------
 * configure: put the selected GPUs and the driver into a container (src/container/configure.c).
 */
enum gs_compat_mode { GS_COMPAT_LDCONFIG = 0, GS_COMPAT_MOUNT, GS_COMPAT_DISABLED };

/* A GPU slice: limits enforced inside the container by libgpuslice-vgpu.so. When any limit is
 * set, configure also (everything-or-nothing, as the mounts): creates the container's host
 * directory <regions_dir>/<container_id>/ (owner record, slice file, usage region), bind-mounts
 * the interposer read-only at GS_SLICE_LIB_PATH, the slice file read-only at GS_SLICE_FILE_PATH,
 * the region directory at GS_SLICE_RUN_DIR, and a read-only /etc/ld.so.preload holding the
 * image's own lines (kept) plus the interposer's. */
#define GS_SLICE_MAX_DEVICES 16
#define GS_SLICE_LIB_PATH "/usr/lib/gpuslice/libgpuslice-vgpu.so"
#define GS_SLICE_FILE_PATH "/etc/gpuslice/slice.conf"
#define GS_SLICE_RUN_DIR "/run/gpuslice"
#define GS_SLICE_REGIONS_DIR "/run/gpuslice/slices"
#define GS_SLICE_ARBITER_DIR "/run/gpuslice/arbiter"
#define GS_SLICE_LIVE_DIR "/run/gpuslice/live" /* the live limits (read-only directory) */

struct gs_slice_opts {
        const char *memory;                              /* size for every visible device, or NULL */
        const char *memory_dev[GS_SLICE_MAX_DEVICES];    /* per visible device (wins), or NULL */
        const char *compute;                             /* percent 1..100, or NULL */
        const char *compute_dev[GS_SLICE_MAX_DEVICES];
        const char *compute_mode;                        /* cap|share|off, or NULL */
        const char *priority;      /* high|normal|low, or NULL (normal); only a compute-limited
                                      slice has turns to order: recorded, no effect otherwise */
        const char *container_id;  /* names the host directory; NULL: "pid-<pid>" */
        const char *regions_dir;   /* NULL: GS_SLICE_REGIONS_DIR */
        const char *vgpu_lib;      /* host path of libgpuslice-vgpu.so; NULL: next to the gpuslice
                                      executable, then <prefix>/lib/gpuslice */
        const char *mps;           /* slice.mps: off (NULL), auto or on: a cap-mode compute slice on
                                      one GPU runs on its share of the SMs through the GPU's MPS
                                      daemon under mps_root (on: started when none runs), when it
                                      runs and is not poisoned; its client directory is mounted
                                      read-only at the same path and named in the slice file */
        const char *mps_root;      /* NULL: /run/gpuslice/mps */
        const char *mps_dir;       /* set by gs_configure for gs_slice_prepare: the client directory
                                      the slice connects through, or NULL */
        bool user_set;             /* the container's process user is known (the hook: config.json's
                                      process.user); its host files are then that user's and group's
                                      (through the container's user namespace), else its root's */
        uid_t user_uid;
        gid_t user_gid;
        const char *devices;       /* the slice's GPUs where the selection names none (comma-separated
                                      UUIDs, GPU- or MIG-, in the container's visible order): a CDI
                                      container's (NVIDIA_VISIBLE_DEVICES=void), from the device
                                      nodes in its config.json. NULL: the selected devices. Without
                                      them the slice names no GPU: no GPUSLICE_DEVICES, and no turns
                                      on the GPUs' arbiters with the other slices there */
};

/* True when the slice sets any limit. */
bool gs_slice_requested(const struct gs_slice_opts *s);

struct gs_configure_opts {
        pid_t pid;                      /* container init (supervised); 0 = standalone */
        const char *rootfs;             /* absolute, as seen in the container's mount namespace */
        const char *devices;            /* --device list (NULL: none) */
        const char *const *requires;    /* --require expressions */
        size_t nrequires;
        const char *ldconfig;           /* "@/host/path" or a container path; NULL: host default */
        unsigned caps;                  /* GS_CAP_* */
        unsigned drvopts;               /* GS_DRV_* */
        const char *mig_config;         /* "all" or NULL */
        const char *mig_monitor;        /* "all" or NULL */
        const char *imex_channels;      /* comma list of channel ids or NULL */
        bool no_cgroups, no_devbind, no_pivot;
        enum gs_compat_mode compat_mode;
        bool no_gpu;                    /* mount nothing of the driver: only the slice (if any) */
        struct gs_slice_opts slice;
};

/* Everything or nothing: on failure every mount and node already made is undone; err->stage
 * names the stage that failed (nvidia-container-cli's names). */
int gs_configure(struct gs_context *ctx, const struct gs_configure_opts *o, struct gs_error *err);

/* Library version string. */
const char *gs_version(void);

#ifdef __cplusplus
}
#endif
#endif
