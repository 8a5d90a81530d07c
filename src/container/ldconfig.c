/*
 * ldconfig in the container, in a sandbox.
 *
 * The parent prepares everything that allocates or touches the host: the host binary copied into a
 * sealed memfd (so the sandboxed process can neither modify the host's ldconfig through
 * /proc/self/exe nor see it change under it), the container's mount namespace fd, /dev/null, the
 * argv, and the seccomp filter compiled to BPF by libseccomp. It then starts the child with a raw
 * clone(CLONE_NEWPID|CLONE_NEWIPC) -- the child is pid 1 of a fresh pid namespace, sees no other
 * process, and dies with everything it started when it ends. The child makes only system calls
 * (no malloc, no stdio: it may come from a multi-threaded parent) on its way to exec:
 *
 *   stdio -> log fd / /dev/null; setns(container mnt ns); unshare(CLONE_NEWNS); / rprivate;
 *   rbind rootfs onto itself; pivot_root(".", ".") + umount2(".", MNT_DETACH) (or MS_MOVE onto /);
 *   chroot("."); empty read-only tmpfs over /proc, /sys, /dev; every fd but 0-2 close-on-exec;
 *   rlimits; bounding set, ambient and inheritable capabilities dropped; setgroups/setresgid/
 *   setresuid to the container owner; capabilities cleared; no_new_privs; seccomp allow-list
 *   (default EPERM); execveat(memfd, "", AT_EMPTY_PATH) for the host binary -- no /proc needed -- or
 *   execve(path) inside the root for a container ldconfig; an empty environment.
 *
 * Setup failures travel back on a close-on-exec pipe: EOF means the exec happened.
 */
#include "container/ldconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "common/proc.h"
#include "common/strutil.h"

#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x0001U
#endif
#ifndef MFD_ALLOW_SEALING
#define MFD_ALLOW_SEALING 0x0002U
#endif
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif
#ifndef F_SEAL_EXEC
#define F_SEAL_EXEC 0x0020
#endif
#ifndef AT_EMPTY_PATH
#define AT_EMPTY_PATH 0x1000
#endif

#define MEMFD_NAME "gpuslice-ldconfig"
/* What a syscall outside the allow-list gets. A probe build can define it as SCMP_ACT_TRAP so that
 * any syscall the list misses kills ldconfig with SIGSYS instead of failing quietly. */
#ifndef GS_LDCONFIG_SECCOMP_DEFAULT
#define GS_LDCONFIG_SECCOMP_DEFAULT SCMP_ACT_ERRNO(EPERM)
#endif
#define HOST_BINARY_MAX (256u << 20) /* refuse anything larger than this as "ldconfig" */

/* ------------------------------------------------------------------------------------------ */
/* Host binary -> sealed memfd                                                                 */
/* ------------------------------------------------------------------------------------------ */

/* Move fd to a number >= 3 (keeps the child's stdio juggling simple). */
static int fd_above_stdio(int fd)
{
        if (fd < 0 || fd > 2)
                return fd;
        int nfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        int saved = errno;
        close(fd);
        errno = saved;
        return nfd;
}

static int starts_with_shebang(int fd)
{
        char magic[2];
        ssize_t n = pread(fd, magic, sizeof(magic), 0);
        return n == 2 && magic[0] == '#' && magic[1] == '!';
}

static int copy_fd(int in, int out, off_t size)
{
        off_t done = 0;
        while (done < size) {
                ssize_t n = sendfile(out, in, NULL, (size_t)(size - done));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EINVAL || errno == ENOSYS))
                        break; /* fall back to read/write below */
                if (n < 0)
                        return -1;
                if (n == 0)
                        return done == size ? 0 : (errno = EIO, -1);
                done += n;
        }
        char buf[65536];
        while (done < size) {
                ssize_t n = pread(in, buf, sizeof(buf), done);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -1;
                if (n == 0) {
                        errno = EIO; /* shrank under us */
                        return -1;
                }
                for (ssize_t off = 0; off < n;) {
                        ssize_t w = pwrite(out, buf + off, (size_t)(n - off), done + off);
                        if (w < 0 && errno == EINTR)
                                continue;
                        if (w < 0)
                                return -1;
                        off += w;
                }
                done += n;
        }
        return 0;
}

int gs_ldconfig_host_memfd(const char *path, char *resolved, size_t resolved_len, struct gs_error *err)
{
        if (path == NULL || path[0] != '/')
                return gs_error_set(err, GS_EINVAL, "host ldconfig path must be absolute: %s",
                                    path != NULL ? path : "(null)");
        char real[PATH_MAX];
        if (snprintf(real, sizeof(real), "%s.real", path) >= (int)sizeof(real))
                return gs_error_set(err, GS_EINVAL, "host ldconfig path too long: %s", path);

        const char *used = path;
        gs_autoclose int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return gs_error_sys(err, "open host ldconfig %s", path);
        if (starts_with_shebang(fd)) {
                /* Ubuntu: /sbin/ldconfig is a shell wrapper around /sbin/ldconfig.real. */
                int rfd = open(real, O_RDONLY | O_CLOEXEC);
                if (rfd < 0)
                        return gs_error_set(err, GS_EINVAL,
                                            "host ldconfig %s is a script and %s does not exist", path, real);
                close(fd);
                fd = rfd;
                used = real;
                if (starts_with_shebang(fd))
                        return gs_error_set(err, GS_EINVAL, "host ldconfig %s is a script", real);
        }
        struct stat st;
        if (fstat(fd, &st) < 0)
                return gs_error_sys(err, "stat host ldconfig %s", used);
        if (!S_ISREG(st.st_mode))
                return gs_error_set(err, GS_EINVAL, "host ldconfig %s is not a regular file", used);
        if (st.st_size <= 0 || (unsigned long long)st.st_size > HOST_BINARY_MAX)
                return gs_error_set(err, GS_EINVAL, "host ldconfig %s has an unlikely size (%lld bytes)",
                                    used, (long long)st.st_size);

        /* MFD_EXEC: kernels with vm.memfd_noexec would otherwise make it non-executable. */
        gs_autoclose int mfd = (int)syscall(SYS_memfd_create, MEMFD_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
        if (mfd < 0 && errno == EINVAL)
                mfd = (int)syscall(SYS_memfd_create, MEMFD_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (mfd < 0)
                return gs_error_sys(err, "memfd_create for host ldconfig");
        mfd = fd_above_stdio(mfd);
        if (mfd < 0)
                return gs_error_sys(err, "memfd for host ldconfig");
        if (copy_fd(fd, mfd, st.st_size) < 0)
                return gs_error_sys(err, "copy host ldconfig %s into a memfd", used);
        const int seals = F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE;
        if (fcntl(mfd, F_ADD_SEALS, seals | F_SEAL_EXEC) < 0 && fcntl(mfd, F_ADD_SEALS, seals) < 0)
                return gs_error_sys(err, "seal the memfd of host ldconfig %s", used);
        if (resolved != NULL && resolved_len > 0 && !gs_strlcpy(resolved, used, resolved_len))
                return gs_error_set(err, GS_EINVAL, "host ldconfig path too long: %s", used);
        return gs_steal_fd(&mfd);
}

/* ------------------------------------------------------------------------------------------ */
/* Seccomp allow-list, compiled in the parent                                                  */
/* ------------------------------------------------------------------------------------------ */

/*
 * What glibc's ldconfig (Debian 12 glibc 2.36, Ubuntu 24.04 glibc 2.39, static-pie) does, from
 * `strace -f ldconfig` runs that scan, create SONAME links, and write ld.so.cache and the aux cache,
 * plus the syscalls of the same libc calls on other architectures and glibc versions (the *at
 * variants, statx, faccessat2, renameat2), plus what libnvidia-container allows. Names that the
 * build architecture does not have are skipped. Left out on purpose: ioctl (isatty() then just says
 * "no"), clone/fork/vfork, wait4, kill, socket*, mount, ptrace, chroot, setns, unshare, bpf,
 * io_uring_*, keyctl, link, mknod, chown, setuid and friends.
 */
static const char *const allowed_syscalls[] = {
        /* process start-up, memory, exit */
        "arch_prctl", "brk", "mmap", "mmap2", "mprotect", "mremap", "munmap", "madvise",
        "set_tid_address", "set_robust_list", "rseq", "futex", "getrandom", "exit", "exit_group",
        /* signals (abort(): tgkill on itself, nothing else is visible in its pid namespace;
         * sigaltstack: sanitizer runtimes call it on noreturn paths) */
        "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "sigreturn", "sigaltstack", "tgkill",
        /* identity and time */
        "getuid", "geteuid", "getgid", "getegid", "getuid32", "geteuid32", "getgid32", "getegid32",
        "getpid", "getppid", "gettid", "getpgrp", "uname", "clock_gettime", "clock_gettime64",
        "gettimeofday", "time",
        /* file descriptors */
        "close", "dup", "dup2", "dup3", "fcntl", "fcntl64", "lseek", "_llseek", "read", "readv",
        "pread64", "write", "writev", "fsync", "fdatasync", "ftruncate", "ftruncate64",
        /* the file system, inside the new root */
        "open", "openat", "access", "faccessat", "faccessat2", "stat", "lstat", "fstat", "stat64",
        "lstat64", "fstat64", "newfstatat", "fstatat64", "statx", "getdents", "getdents64",
        "getcwd", "chdir", "fchdir", "readlink", "readlinkat", "mkdir", "mkdirat", "chmod",
        "fchmod", "fchmodat", "rename", "renameat", "renameat2", "symlink", "symlinkat", "unlink",
        "unlinkat",
        /* the exec itself */
        "execve", "execveat",
};

static int add_rule(scmp_filter_ctx ctx, const char *name, unsigned argc, const struct scmp_arg_cmp *args,
                    struct gs_error *err)
{
        int nr = seccomp_syscall_resolve_name(name);
        if (nr == __NR_SCMP_ERROR || nr < 0)
                return 0; /* not a syscall of this architecture */
        int rc = seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, nr, argc, args);
        if (rc < 0)
                return gs_error_set(err, GS_ESYS, "seccomp rule for %s: %s", name, strerror(-rc));
        return 0;
}

static void release_seccomp(scmp_filter_ctx *ctx)
{
        if (*ctx != NULL)
                seccomp_release(*ctx);
}

/* The allow-list as a BPF program (malloc'd into *prog). */
static int build_filter(struct sock_fprog *prog, struct gs_error *err)
{
        __attribute__((cleanup(release_seccomp))) scmp_filter_ctx ctx = seccomp_init(GS_LDCONFIG_SECCOMP_DEFAULT);
        if (ctx == NULL)
                return gs_error_set(err, GS_ESYS, "seccomp_init failed");
        for (size_t i = 0; i < GS_ARRAY_SIZE(allowed_syscalls); i++)
                if (add_rule(ctx, allowed_syscalls[i], 0, NULL, err) < 0)
                        return -1;
        /* getrlimit() only: about itself (pid 0). It cannot raise anything (soft == hard, no caps). */
        struct scmp_arg_cmp self = {.arg = 0, .op = SCMP_CMP_EQ, .datum_a = 0, .datum_b = 0};
        if (add_rule(ctx, "prlimit64", 1, &self, err) < 0 || add_rule(ctx, "getrlimit", 0, NULL, err) < 0 ||
            add_rule(ctx, "ugetrlimit", 0, NULL, err) < 0)
                return -1;

        gs_autoclose int fd = (int)syscall(SYS_memfd_create, "gpuslice-seccomp", MFD_CLOEXEC);
        if (fd < 0)
                return gs_error_sys(err, "memfd_create for the seccomp filter");
        int rc = seccomp_export_bpf(ctx, fd);
        if (rc < 0)
                return gs_error_set(err, GS_ESYS, "seccomp_export_bpf: %s", strerror(-rc));
        struct stat st;
        if (fstat(fd, &st) < 0)
                return gs_error_sys(err, "seccomp filter size");
        if (st.st_size <= 0 || st.st_size % (off_t)sizeof(struct sock_filter) != 0 ||
            st.st_size / (off_t)sizeof(struct sock_filter) > BPF_MAXINSNS)
                return gs_error_set(err, GS_ESYS, "seccomp filter has an odd size (%lld bytes)",
                                    (long long)st.st_size);
        struct sock_filter *insns = malloc((size_t)st.st_size);
        if (insns == NULL)
                return gs_error_sys(err, "seccomp filter");
        ssize_t n = pread(fd, insns, (size_t)st.st_size, 0);
        if (n != st.st_size) {
                free(insns);
                errno = n < 0 ? errno : EIO;
                return gs_error_sys(err, "read back the seccomp filter");
        }
        prog->len = (unsigned short)(st.st_size / (off_t)sizeof(struct sock_filter));
        prog->filter = insns;
        return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* The child                                                                                   */
/* ------------------------------------------------------------------------------------------ */

enum child_report_kind {
        REPORT_SETUP = 1, /* a sandbox step failed (named in step) */
        REPORT_EXEC = 2,  /* the exec itself failed */
};

struct child_report {
        int32_t kind;
        int32_t err; /* errno */
        char step[96];
};

struct child_args {
        int errfd;      /* write end of the report pipe (close-on-exec) */
        int outfd;      /* stdout/stderr */
        int nullfd;     /* stdin */
        int mntfd;      /* container mount namespace, or -1 */
        int exefd;      /* sealed memfd of the host binary, or -1 */
        const char *exe_path; /* container path (exefd < 0) */
        const char *rootfs;
        bool no_pivot;
        uid_t uid;
        gid_t gid;
        char **argv;    /* argv[first_dir .. first_dir+ndirs) are filtered in place */
        size_t first_dir;
        size_t ndirs;
        const struct sock_fprog *filter;
};

static __attribute__((noreturn)) void child_fail(const struct child_args *a, int kind, const char *step)
{
        struct child_report r;
        memset(&r, 0, sizeof(r));
        r.kind = kind;
        r.err = errno;
        size_t len = strlen(step);
        if (len >= sizeof(r.step))
                len = sizeof(r.step) - 1;
        memcpy(r.step, step, len);
        ssize_t n;
        do
                n = write(a->errfd, &r, sizeof(r));
        while (n < 0 && errno == EINTR);
        _exit(127);
}

/* Put an empty read-only tmpfs over a directory of the new root, if there is one. */
static int hide_dir(const char *path)
{
        struct stat st;
        if (lstat(path, &st) < 0)
                return errno == ENOENT ? 0 : -1;
        if (!S_ISDIR(st.st_mode))
                return 0; /* a symlink or a file: leave it, the new root is all it can reach */
        return mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=555");
}

static int set_limit(int resource, rlim_t value)
{
        struct rlimit rl = {.rlim_cur = value, .rlim_max = value};
        return setrlimit(resource, &rl);
}

static int drop_bounding_set(void)
{
        for (int cap = 0; cap < 64; cap++) {
                if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
                        if (errno == EINVAL)
                                return 0; /* past the kernel's last capability */
                        return -1;
                }
        }
        return 0;
}

static int clear_capabilities(void)
{
        struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
        struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
        memset(data, 0, sizeof(data));
        return (int)syscall(SYS_capset, &hdr, data);
}

static __attribute__((noreturn)) void child_main(struct child_args *a)
{
        /* Default signal dispositions and an empty mask (both survive exec otherwise). */
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        for (int sig = 1; sig < NSIG; sig++) {
                if (sig != SIGKILL && sig != SIGSTOP)
                        signal(sig, SIG_DFL);
        }
        if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
                child_fail(a, REPORT_SETUP, "prctl(PR_SET_PDEATHSIG)");
        prctl(PR_SET_NAME, "gpuslice-ldconf", 0, 0, 0);

        /* stdio: stdin from /dev/null, stdout and stderr to the log (or /dev/null). */
        int out = fcntl(a->outfd, F_DUPFD_CLOEXEC, 3);
        if (out < 0 || dup2(a->nullfd, STDIN_FILENO) < 0 || dup2(out, STDOUT_FILENO) < 0 ||
            dup2(out, STDERR_FILENO) < 0)
                child_fail(a, REPORT_SETUP, "redirect stdio");
        close(out);

        if (a->mntfd >= 0 && setns(a->mntfd, CLONE_NEWNS) < 0)
                child_fail(a, REPORT_SETUP, "setns into the container mount namespace");
        if (unshare(CLONE_NEWNS) < 0)
                child_fail(a, REPORT_SETUP, "unshare(CLONE_NEWNS)");
        if (mount(NULL, "/", NULL, MS_PRIVATE | MS_REC, NULL) < 0)
                child_fail(a, REPORT_SETUP, "make / private");
        if (mount(a->rootfs, a->rootfs, NULL, MS_BIND | MS_REC, NULL) < 0)
                child_fail(a, REPORT_SETUP, "bind the rootfs onto itself");
        if (chdir(a->rootfs) < 0)
                child_fail(a, REPORT_SETUP, "chdir to the rootfs");
        if (a->no_pivot) {
                if (mount(".", "/", NULL, MS_MOVE, NULL) < 0)
                        child_fail(a, REPORT_SETUP, "move the rootfs onto /");
        } else {
                if (syscall(SYS_pivot_root, ".", ".") < 0)
                        child_fail(a, REPORT_SETUP, "pivot_root");
                if (umount2(".", MNT_DETACH) < 0)
                        child_fail(a, REPORT_SETUP, "detach the old root");
        }
        if (chroot(".") < 0 || chdir("/") < 0)
                child_fail(a, REPORT_SETUP, "chroot into the rootfs");

        /* Nothing of the host or the container's kernel interfaces: ldconfig needs none. */
        if (hide_dir("/proc") < 0)
                child_fail(a, REPORT_SETUP, "hide /proc");
        if (hide_dir("/sys") < 0)
                child_fail(a, REPORT_SETUP, "hide /sys");
        if (hide_dir("/dev") < 0)
                child_fail(a, REPORT_SETUP, "hide /dev");

        /* Extra directories that exist in the container (resolved inside the new root). */
        size_t w = a->first_dir;
        for (size_t i = 0; i < a->ndirs; i++) {
                struct stat st;
                char *d = a->argv[a->first_dir + i];
                if (stat(d, &st) == 0 && S_ISDIR(st.st_mode))
                        a->argv[w++] = d;
        }
        a->argv[w] = NULL;

        gs_cloexec_from_3(); /* only stdio reaches ldconfig */

        if (set_limit(RLIMIT_CPU, GS_LDCONFIG_RLIMIT_CPU_S) < 0 || set_limit(RLIMIT_AS, GS_LDCONFIG_RLIMIT_AS) < 0 ||
            set_limit(RLIMIT_NOFILE, GS_LDCONFIG_RLIMIT_NOFILE) < 0 ||
            set_limit(RLIMIT_FSIZE, GS_LDCONFIG_RLIMIT_FSIZE) < 0 || set_limit(RLIMIT_CORE, 0) < 0)
                child_fail(a, REPORT_SETUP, "setrlimit");

        /* Capabilities: none may come back, not even through exec as uid 0. */
        if (drop_bounding_set() < 0)
                child_fail(a, REPORT_SETUP, "drop the capability bounding set");
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
                child_fail(a, REPORT_SETUP, "clear the ambient capabilities");
        gid_t gid = a->gid;
        if (setgroups(1, &gid) < 0)
                child_fail(a, REPORT_SETUP, "setgroups");
        if (setresgid(a->gid, a->gid, a->gid) < 0)
                child_fail(a, REPORT_SETUP, "setresgid");
        if (setresuid(a->uid, a->uid, a->uid) < 0)
                child_fail(a, REPORT_SETUP, "setresuid");
        if (clear_capabilities() < 0)
                child_fail(a, REPORT_SETUP, "clear the capabilities");
        /* A credential change cleared the parent-death signal. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
                child_fail(a, REPORT_SETUP, "prctl(PR_SET_PDEATHSIG)");
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                child_fail(a, REPORT_SETUP, "prctl(PR_SET_NO_NEW_PRIVS)");
        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, a->filter, 0, 0) < 0)
                child_fail(a, REPORT_SETUP, "load the seccomp filter");

        char *const envp[] = {NULL};
        if (a->exefd >= 0)
                syscall(SYS_execveat, a->exefd, "", a->argv, envp, AT_EMPTY_PATH);
        else
                execve(a->exe_path, a->argv, envp);
        child_fail(a, REPORT_EXEC, "exec");
}

/* ------------------------------------------------------------------------------------------ */
/* The parent                                                                                  */
/* ------------------------------------------------------------------------------------------ */

static void free_filter(struct sock_fprog *p)
{
        free(p->filter);
}

/* Wait (until the deadline) for the sandboxed ldconfig and judge its end: the child's report of a
 * failed step or exec, its exit status or signal. 1 when the container has no ldconfig of its own
 * (nothing to do), 0 when it ran well, -1 on failure. */
static int wait_child(pid_t pid, int rd, bool host, const char *exe_path, long long deadline, unsigned timeout_ms,
                      struct gs_error *err)
{
        int status = 0;
        int w = gs_wait_until(pid, deadline, &status);
        if (w == 0) {
                kill(pid, SIGKILL);
                while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                        ;
                return gs_error_set(err, GS_ETIMEOUT, "process %s timed out after %u ms", exe_path, timeout_ms);
        }
        if (w < 0)
                return gs_error_sys(err, "wait for process %s", exe_path);

        struct child_report r;
        memset(&r, 0, sizeof(r));
        ssize_t n;
        do
                n = read(rd, &r, sizeof(r));
        while (n < 0 && errno == EINTR);
        if (n == (ssize_t)sizeof(r)) {
                r.step[sizeof(r.step) - 1] = '\0';
                errno = r.err;
                if (r.kind == REPORT_EXEC && !host && r.err == ENOENT) {
                        gs_log_info("no %s in the container, ld.so.cache not updated", exe_path);
                        return 1;
                }
                if (r.kind == REPORT_EXEC)
                        return gs_error_sys(err, "process %s could not be executed", exe_path);
                return gs_error_sys(err, "ldconfig sandbox: %s failed", r.step);
        }
        if (n > 0)
                return gs_error_set(err, GS_EHELPER, "ldconfig sandbox: short report from the child");

        if (WIFSIGNALED(status))
                return gs_error_set(err, GS_EHELPER, "process %s terminated with signal %d", exe_path, WTERMSIG(status));
        if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
                return gs_error_set(err, GS_EHELPER, "process %s failed with error code: %d", exe_path,
                                    WEXITSTATUS(status));
        return 0;
}

int gs_ldconfig_run(const struct gs_ldconfig_opts *o, struct gs_error *err)
{
        if (o == NULL || o->rootfs == NULL || o->rootfs[0] != '/' || o->ldconfig == NULL || o->ldconfig[0] == '\0')
                return gs_error_set(err, GS_EINVAL, "ldconfig: the rootfs must be an absolute path and ldconfig set");
        if (o->ndirs > 0 && o->dirs == NULL)
                return gs_error_set(err, GS_EINVAL, "ldconfig: %zu directories but no list", o->ndirs);
        const bool host = o->ldconfig[0] == '@';
        const unsigned timeout_ms = o->timeout_ms != 0 ? o->timeout_ms : GS_LDCONFIG_TIMEOUT_MS;

        char exe_path[PATH_MAX];
        gs_autoclose int exefd = -1;
        if (host) {
                exefd = gs_ldconfig_host_memfd(o->ldconfig + 1, exe_path, sizeof(exe_path), err);
                if (exefd < 0)
                        return -1;
        } else {
                if (o->ldconfig[0] != '/')
                        return gs_error_set(err, GS_EINVAL, "container ldconfig path must be absolute: %s",
                                            o->ldconfig);
                if (!gs_strlcpy(exe_path, o->ldconfig, sizeof(exe_path)))
                        return gs_error_set(err, GS_EINVAL, "ldconfig path too long: %s", o->ldconfig);
        }

        gs_autoclose int mntfd = -1;
        if (o->mntns_pid != 0) {
                char p[64];
                snprintf(p, sizeof(p), "/proc/%ld/ns/mnt", (long)o->mntns_pid);
                mntfd = fd_above_stdio(open(p, O_RDONLY | O_CLOEXEC));
                if (mntfd < 0)
                        return gs_error_sys(err, "open the mount namespace of pid %ld", (long)o->mntns_pid);
        }
        gs_autoclose int nullfd = fd_above_stdio(open("/dev/null", O_RDWR | O_CLOEXEC));
        if (nullfd < 0)
                return gs_error_sys(err, "open /dev/null");

        __attribute__((cleanup(free_filter))) struct sock_fprog filter = {0, NULL};
        if (build_filter(&filter, err) < 0)
                return -1;

        /* ldconfig -f /etc/ld.so.conf -C /etc/ld.so.cache [dirs...] */
        const size_t first_dir = 5;
        gs_autofree char **argv = calloc(first_dir + o->ndirs + 1, sizeof(*argv));
        if (argv == NULL)
                return gs_error_sys(err, "ldconfig argv");
        argv[0] = exe_path;
        argv[1] = (char *)"-f";
        argv[2] = (char *)"/etc/ld.so.conf";
        argv[3] = (char *)"-C";
        argv[4] = (char *)"/etc/ld.so.cache";
        size_t ndirs = 0;
        for (size_t i = 0; i < o->ndirs; i++) {
                if (o->dirs[i] != NULL && o->dirs[i][0] == '/')
                        argv[first_dir + ndirs++] = (char *)o->dirs[i];
        }

        int pipefd[2];
        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return gs_error_sys(err, "pipe for the ldconfig child");
        gs_autoclose int rd = fd_above_stdio(pipefd[0]);
        gs_autoclose int wr = fd_above_stdio(pipefd[1]);
        if (rd < 0 || wr < 0)
                return gs_error_sys(err, "pipe for the ldconfig child");

        struct child_args a = {
                .errfd = wr,
                .outfd = o->log_fd >= 0 ? o->log_fd : nullfd,
                .nullfd = nullfd,
                .mntfd = mntfd,
                .exefd = exefd,
                .exe_path = exe_path,
                .rootfs = o->rootfs,
                .no_pivot = o->no_pivot,
                .uid = o->uid,
                .gid = o->gid,
                .argv = argv,
                .first_dir = first_dir,
                .ndirs = ndirs,
                .filter = &filter,
        };
        gs_log_info("running %s%s in %s (pid namespace of its own%s, uid %u gid %u, timeout %u ms)",
                    host ? "host binary " : "", exe_path, o->rootfs,
                    o->mntns_pid != 0 ? ", mount namespace of the container" : "", (unsigned)o->uid,
                    (unsigned)o->gid, timeout_ms);

        /* A raw clone: fork semantics (no stack argument) with new pid and ipc namespaces. The
         * child only makes system calls until it execs. */
        long long deadline = gs_now_ms() + timeout_ms;
        pid_t pid = (pid_t)syscall(SYS_clone, (unsigned long)(SIGCHLD | CLONE_NEWPID | CLONE_NEWIPC), NULL, NULL,
                                   NULL, NULL);
        if (pid < 0)
                return gs_error_sys(err, "clone the ldconfig sandbox");
        if (pid == 0)
                child_main(&a);
        close(gs_steal_fd(&wr));

        int rv = wait_child(pid, rd, host, exe_path, deadline, timeout_ms, err);
        if (rv == 0)
                gs_log_info("%s done", exe_path);
        return rv < 0 ? -1 : 0;
}
