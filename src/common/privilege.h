/*
 * Least privilege by stage (libcap): a fixed permitted set, and an effective set raised only to
 * what the current stage needs. No-ops when not running as root.
 */
#ifndef GS_COMMON_PRIVILEGE_H
#define GS_COMMON_PRIVILEGE_H

#include <gpuslice/gpuslice.h>

enum gs_stage {
        GS_STAGE_INIT,      /* fork the NVML helper (it chroots and drops to --user) */
        GS_STAGE_KMODS,     /* --load-kmods: modprobe, mknod under the driver root */
        GS_STAGE_CONTAINER, /* look at the container's /proc/<pid> */
        GS_STAGE_MOUNT,     /* setns, mounts, nodes as the owner, /proc/driver/nvidia */
        GS_STAGE_CGROUP,    /* device cgroup: devices.allow or BPF programs */
        GS_STAGE_LDCACHE,   /* the ldconfig sandbox (namespaces, pivot_root, setuid) */
        GS_STAGE_SLICE,     /* the slice's host files: given to the container's user (chown) */
        GS_STAGE_SHUTDOWN,  /* nothing left to do */
};

/* Permitted := the union of every stage's set (as far as we have them), inheritable := none,
 * effective := none. */
int gs_caps_init(struct gs_error *err);
/* Effective := the stage's set. */
int gs_caps_enter(enum gs_stage stage, struct gs_error *err);

#endif
