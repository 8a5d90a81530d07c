/*
 * Mounting into a hostile container rootfs, by fd, with rollback.
 *
 * Every destination is resolved inside the rootfs (openat2 RESOLVE_IN_ROOT|RESOLVE_NO_MAGICLINKS,
 * else the component walk of src/common/path.c); missing parents are created as directories and the
 * final node is created with O_NOFOLLOW/O_EXCL-style care under the container owner's fsuid/fsgid;
 * the mount is made onto the resolved fd (/proc/self/fd/N, or open_tree+move_mount), never onto a
 * path string. Sources must be host objects (lstat: regular file / char device / socket / directory
 * as the caller says), never symlinks, and never inside the rootfs. Everything done is journalled
 * so gs_mount_rollback() can undo it in reverse order (umount2 MNT_DETACH, then remove what we
 * created). The caller has already entered the container's mount namespace.
 */
#ifndef GS_CONTAINER_MOUNT_H
#define GS_CONTAINER_MOUNT_H

#include <stdbool.h>
#include <sys/types.h>

#include <gpuslice/gpuslice.h>

enum gs_node_kind {
        GS_NODE_FILE,   /* regular file (libraries, binaries, firmware, proc files) */
        GS_NODE_DIR,    /* directory (MPS pipe dir, /proc/driver/nvidia, caps dirs) */
        GS_NODE_CHAR,   /* character device node (the bind target is a file we create) */
        GS_NODE_SOCKET, /* unix socket (persistenced, fabricmanager) */
};

/* Remount flags per kind of object (as nvidia-container-cli). */
#define GS_MNT_RO_LIB (MS_RDONLY | MS_NODEV | MS_NOSUID)            /* libs, bins, firmware */
#define GS_MNT_DEVNODE (MS_RDONLY | MS_NOSUID | MS_NOEXEC)          /* /dev/nvidia* */
#define GS_MNT_IPC (MS_NODEV | MS_NOSUID | MS_NOEXEC)               /* sockets, MPS dir (writable) */
#define GS_MNT_PROC (MS_RDONLY | MS_NODEV | MS_NOSUID | MS_NOEXEC)  /* /proc/driver/nvidia files */

struct gs_mount_journal; /* opaque: what was created and mounted, for rollback */

struct gs_rootfs {
        int fd;          /* O_PATH|O_DIRECTORY fd on the container rootfs (in its mount ns) */
        char path[4096]; /* the rootfs path, for messages only */
        uid_t uid;       /* container owner: nodes are created as this fsuid/fsgid */
        gid_t gid;
        struct gs_mount_journal *journal;
};

/* Open the rootfs (after setns into the container's mount namespace). */
int gs_rootfs_open(struct gs_rootfs *r, const char *path, uid_t uid, gid_t gid, struct gs_error *err);
void gs_rootfs_close(struct gs_rootfs *r);

/* Bind-mount host object `src` (absolute host path, must be of `kind`, not a symlink, and not
 * below the rootfs) onto `dst` (a path inside the rootfs), creating dst (and its parents) if
 * missing, then remount with `flags` (MS_* above; MS_BIND|MS_REMOUNT added). An existing dst must be
 * of the same kind (a symlink at dst is an error: "file creation failed: <dst>: file exists" in
 * nvidia's words). */
int gs_mount_bind(struct gs_rootfs *r, const char *src, const char *dst, enum gs_node_kind kind,
                  unsigned long flags, struct gs_error *err);

/* Mount a tmpfs with `options` (e.g. "mode=0555") on the directory dst inside the rootfs (created
 * if missing), remounted with flags. */
int gs_mount_tmpfs(struct gs_rootfs *r, const char *dst, const char *options, unsigned long flags,
                   struct gs_error *err);

/* Write a regular file with `data` at dst inside the rootfs (O_CREAT|O_EXCL|O_NOFOLLOW; parents
 * created), journalled for rollback. Used inside our own tmpfs (procfs copies, configs). */
int gs_rootfs_write_file(struct gs_rootfs *r, const char *dst, const void *data, size_t len, mode_t mode,
                         struct gs_error *err);

/* Create a symlink dst -> target inside the rootfs (journalled), e.g. libcuda.so -> libcuda.so.1.
 * An existing identical link is fine; anything else at dst is left alone and not an error. */
int gs_rootfs_symlink(struct gs_rootfs *r, const char *target, const char *dst, struct gs_error *err);

/* Is `rel` present in the rootfs (resolved inside it)? */
bool gs_rootfs_exists(struct gs_rootfs *r, const char *rel);

/* Undo everything journalled, newest first. Safe to call twice. */
void gs_mount_rollback(struct gs_rootfs *r);
/* Forget the journal (success: keep the mounts). */
void gs_mount_commit(struct gs_rootfs *r);

/* Tests only: force the mount(2)-on-/proc/self/fd/N path even where open_tree/move_mount exist. */
void gs_mount_force_legacy(bool on);

#endif
