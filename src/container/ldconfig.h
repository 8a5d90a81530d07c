/*
 * ldconfig in the container, sandboxed: the host ldconfig copied into a sealed memfd (or a
 * container path when asked), run in a child with new pid/ipc/mount namespaces that has joined the
 * container's mount namespace, pivot_root'ed into the rootfs, with rlimits, no_new_privs, all
 * capabilities dropped, the container owner's uid/gid, a libseccomp allow-list, and an empty env.
 */
#ifndef GS_CONTAINER_LDCONFIG_H
#define GS_CONTAINER_LDCONFIG_H

#include <stdbool.h>
#include <sys/types.h>

#include <gpuslice/gpuslice.h>

/* Default for gs_ldconfig_opts.timeout_ms. */
#define GS_LDCONFIG_TIMEOUT_MS 30000u

/* Limits of the sandboxed process (soft == hard, so it cannot raise them). It is the init of its
 * pid namespace, so the kernel drops SIGXFSZ (a write past the limit just fails with EFBIG) and
 * the CPU limit ends it with SIGKILL (the hard-limit signal). */
#define GS_LDCONFIG_RLIMIT_CPU_S 10u                              /* then SIGXCPU */
#define GS_LDCONFIG_RLIMIT_AS (2ull << 30)                        /* 2 GiB */
#define GS_LDCONFIG_RLIMIT_NOFILE 64u
#define GS_LDCONFIG_RLIMIT_FSIZE (16ull << 20)                    /* 16 MiB: ld.so.cache of big images */

struct gs_ldconfig_opts {
        pid_t mntns_pid;          /* join /proc/<pid>/ns/mnt (0: stay in ours) */
        const char *rootfs;       /* rootfs path as seen in that namespace (absolute) */
        const char *ldconfig;     /* "@/sbin/ldconfig" (host, via memfd) or a container path */
        const char *const *dirs;  /* extra directories to pass (libs_dir, libs32_dir, compat dir);
                                     absolute in-container paths, those missing there are skipped */
        size_t ndirs;
        uid_t uid;
        gid_t gid;
        bool no_pivot;            /* MS_MOVE + chroot instead of pivot_root (ramfs roots) */
        int log_fd;               /* child's stdout/stderr go here (-1: /dev/null) */
        unsigned timeout_ms;      /* kill it (SIGKILL) after this long; 0: GS_LDCONFIG_TIMEOUT_MS */
};

/* Run it; "process <ldconfig> failed with error code: N" / "process <ldconfig> terminated with
 * signal N" / "process <ldconfig> timed out after N ms" on failure (the CLI adds "ldcache error: ").
 * <ldconfig> is the path executed, without the '@' (e.g. /sbin/ldconfig.real). ENOENT of a
 * container ldconfig counts as success (images without ldconfig). A failure while building the
 * sandbox is "ldconfig sandbox: <step> failed: <strerror>" (sys_errno set). */
int gs_ldconfig_run(const struct gs_ldconfig_opts *o, struct gs_error *err);

/* The host binary behind an "@" path (pass it without the '@'), copied into a memfd named
 * "gpuslice-ldconfig" and sealed (F_SEAL_SEAL|SHRINK|GROW|WRITE, and F_SEAL_EXEC where the kernel
 * has it). If `path` is a "#!" script and "<path>.real" exists (Ubuntu's wrapper), the .real binary
 * is used; a script without one is refused (it could not run from a memfd in the sandbox). The path
 * actually copied goes to `resolved`. Returns the memfd (O_CLOEXEC) or -1. Exposed for tests. */
int gs_ldconfig_host_memfd(const char *path, char *resolved, size_t resolved_len, struct gs_error *err);

#endif
