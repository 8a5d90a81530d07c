/*
 * Paths inside a root directory (a driver root or, later, a container rootfs), resolved by fd so
 * that no symlink or ".." can lead outside the root.
 */
#ifndef GS_COMMON_PATH_H
#define GS_COMMON_PATH_H

#include <limits.h>
#include <stdbool.h>
#include <dirent.h>
#include <stddef.h>
#include <sys/types.h>

#include <gpuslice/gpuslice.h>

#define GS_MAX_SYMLINKS 40

/* Resolve `path` inside the directory open at `rootfd` (O_PATH is fine), component by component
 * with O_PATH|O_NOFOLLOW and readlinkat: absolute link targets restart at the root, ".." never
 * climbs above it, at most GS_MAX_SYMLINKS links. Writes the canonical in-root path ("/a/b") to
 * `out`. With `allow_missing`, a missing tail (no further symlinks possible) is appended as written
 * and the function still succeeds; otherwise a missing component is GS_ENOTFOUND (sys_errno ENOENT).
 * If `fd_out` is non-NULL and the whole path exists, it receives an O_PATH fd on the final object
 * (else -1). */
int gs_path_resolve(int rootfd, const char *path, char *out, size_t outlen, bool allow_missing,
                    int *fd_out, struct gs_error *err);

/* Open `path` inside the root with `flags` (O_CLOEXEC added): openat2(RESOLVE_IN_ROOT |
 * RESOLVE_NO_MAGICLINKS) where the kernel has it, else gs_path_resolve + reopen through
 * /proc/self/fd. Returns the fd or -1. */
int gs_open_in_root(int rootfd, const char *path, int flags, struct gs_error *err);

/* Read a small file inside the root into buf (at most len-1 bytes, NUL-terminated). Returns the
 * byte count or -1. */
ssize_t gs_read_in_root(int rootfd, const char *path, char *buf, size_t len, struct gs_error *err);

/* opendir() of a directory inside the root, or NULL. */
DIR *gs_opendir_in_root(int rootfd, const char *path, struct gs_error *err);

/* Join a and b with exactly one '/' between them into out. -1 (GS_EINVAL) if it does not fit. */
int gs_path_join(char *out, size_t outlen, const char *a, const char *b, struct gs_error *err);

/* mkdir -p of an absolute host path: each missing directory is created with exactly `mode`
 * (whatever the umask); existing components may be symlinks, followed as mkdir -p does. Returns
 * an O_DIRECTORY fd on the last one, or -1 ("<prefix> is not a directory", ...). */
int gs_mkdir_p(const char *path, mode_t mode, struct gs_error *err);

#endif
