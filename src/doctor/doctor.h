/*
 * gpuslice doctor: is this node ready to give containers GPUs and slices? One small check per
 * concern, each answering a status, a message in plain words and, when something is missing or
 * wrong, the fix.
 *
 *   doctor.c        the runner: host config, driver context, the checks in order, result helpers
 *   check_driver.c  driver (kernel module, NVML, the two agree) and device nodes
 *   check_cgroup.c  cgroup version and the devices controller
 *   check_runtime.c OCI hooks.d files (podman, CRI-O) and the nvidia-container-runtime-hook name
 *                   (docker --gpus)
 *   check_engines.c the runtime shim registered in docker's, containerd's, CRI-O's configs
 *   check_requests.c who may ask for GPUs: a Kubernetes node (the kubelet's directories, the device
 *                   plugin's spec) must not take NVIDIA_VISIBLE_DEVICES from unprivileged containers;
 *                   the device plugin's answers must be ones the hook takes
 *   check_cdi.c     CDI specs present and current (the files and nodes they name are the driver's)
 *   check_slice.c   host config, the interposer, the regions directory, MPS daemons
 *
 * Checks never change the node. Host paths (hooks.d, CDI specs, the cgroup mount, the regions
 * directory) are the host's; driver files and device nodes are looked for under the driver root.
 */
#ifndef GS_DOCTOR_DOCTOR_H
#define GS_DOCTOR_DOCTOR_H

#include <stdbool.h>
#include <stddef.h>

#include <gpuslice/gpuslice.h>

#define GS_DOCTOR_MAX_CHECKS 16
#define GS_DOCTOR_MAX_PATHS 8
#define GS_DOCTOR_MSG_MAX 1024
#define GS_DOCTOR_FIX_MAX 512

/* Where the runtimes look (podman and CRI-O read both hooks.d directories). */
#define GS_DOCTOR_HOOKS_DIRS {"/usr/share/containers/oci/hooks.d", "/etc/containers/oci/hooks.d"}
/* The spec gpuslice-cdi.service writes comes first; /etc/cdi is the static one. */
#define GS_DOCTOR_CDI_SPECS {"/var/run/cdi/nvidia.yaml", "/var/run/cdi/nvidia.json", "/etc/cdi/nvidia.yaml", \
                             "/etc/cdi/nvidia.json"}
#define GS_DOCTOR_CGROUP_ROOT "/sys/fs/cgroup"
/* docker --gpus finds the hook by this name on the daemon's PATH. */
#define GS_DOCTOR_HOOK_NAME "nvidia-container-runtime-hook"
#define GS_DOCTOR_DOCKER_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

enum gs_doctor_status { GS_DOCTOR_OK, GS_DOCTOR_WARN, GS_DOCTOR_FAIL, GS_DOCTOR_SKIP };

struct gs_doctor_result {
        const char *name;                /* "driver", "device-nodes", ... (static) */
        enum gs_doctor_status status;
        char message[GS_DOCTOR_MSG_MAX]; /* what was found, in plain words */
        char fix[GS_DOCTOR_FIX_MAX];     /* what to do ("" when nothing is wrong) */
};

struct gs_doctor_opts {
        /* The driver context; root/ldcache/uid/gid/timeout NULL or -1 or 0 = from the host config
         * (driver.*), as the hook takes them. */
        struct gs_config cfg;
        const char *config;            /* host config file; NULL: GS_HOSTCONFIG_DEFAULT_PATH (may be missing) */
        const char *hooks_dirs[GS_DOCTOR_MAX_PATHS]; /* NULL-terminated; all NULL: GS_DOCTOR_HOOKS_DIRS */
        const char *cdi_specs[GS_DOCTOR_MAX_PATHS];  /* given: each must exist; none: the defaults that do */
        const char *cgroup_root;       /* NULL: GS_DOCTOR_CGROUP_ROOT */
        const char *engine_configs[3]; /* docker, containerd, crio: given, only those are checked;
                                          none: the default files that exist */
};

struct gs_doctor_report {
        char root[4096];               /* the driver root checked */
        char config[4096];             /* the host config read ("" when the default is missing) */
        size_t n;
        struct gs_doctor_result results[GS_DOCTOR_MAX_CHECKS];
        unsigned nok, nwarn, nfail, nskip;
};

/* Run every check. Never fails: what cannot be checked is a result too. */
void gs_doctor_run(const struct gs_doctor_opts *o, struct gs_doctor_report *r);

/* "ok", "warn", "fail", "skip". */
const char *gs_doctor_status_name(enum gs_doctor_status s);

#endif
