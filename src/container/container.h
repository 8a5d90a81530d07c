/*
 * The container being configured: its init pid (supervised, from --pid) or the caller's own
 * namespace (standalone), its rootfs path as seen in its mount namespace, its owner, and the
 * library/binary directories chosen as nvidia-container-cli chooses them.
 */
#ifndef GS_CONTAINER_CONTAINER_H
#define GS_CONTAINER_CONTAINER_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

#include <gpuslice/gpuslice.h>

struct gs_container {
        pid_t pid;              /* container init (supervised) or 0 (standalone) */
        char rootfs[PATH_MAX];
        uid_t uid;              /* owner of /proc/<pid> (supervised) or of the rootfs (standalone) */
        gid_t gid;
        int ns_fd;              /* the container's mount namespace (supervised), else -1 */
        int self_ns_fd;         /* ours, to come back to */
        bool entered;
        char libs_dir[64];      /* /usr/lib/x86_64-linux-gnu (Debian family) or /usr/lib64 */
        char libs32_dir[64];    /* /usr/lib/i386-linux-gnu, /usr/lib32 or /usr/lib */
        char bins_dir[64];      /* /usr/bin */
};

/* Validate the rootfs argument (absolute, not "/"), find the owner and open the namespaces. */
int gs_container_open(struct gs_container *c, pid_t pid, const char *rootfs, struct gs_error *err);
void gs_container_close(struct gs_container *c);

/* setns into the container's mount namespace / back to ours (no-ops when standalone). */
int gs_container_enter(struct gs_container *c, struct gs_error *err);
int gs_container_leave(struct gs_container *c, struct gs_error *err);

/* Choose libs_dir/libs32_dir/bins_dir from what the rootfs holds (call when entered; the rootfs
 * fd is the resolved container root). */
void gs_container_pick_dirs(struct gs_container *c, int rootfd);

#endif
