/*
 * Unit tests of the ldconfig sandbox (src/container/ldconfig.c), run as root against small rootfs
 * trees built in a temporary directory: the host ldconfig (from a sealed memfd) really builds
 * ld.so.cache and SONAME links inside the rootfs, as the requested uid; a busybox "ldconfig" inside
 * the rootfs shows what a hostile container binary can see and do (empty env, no /proc /sys /dev,
 * no fork, no socket, no mknod, capped file size, a timeout).
 *
 * The whole test process first moves into a private mount namespace of its own, so no mount made
 * here (procfs in a test rootfs, the tmpfs of the namespace test) can outlive it. Skips (77) when
 * not root or when namespaces are not available.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "skips.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <link.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "container/ldconfig.h"
#include "driver/ldcache.h"

#if defined(__x86_64__)
#define TRIPLET "x86_64-linux-gnu"
#elif defined(__aarch64__)
#define TRIPLET "aarch64-linux-gnu"
#elif defined(__powerpc64__)
#define TRIPLET "powerpc64le-linux-gnu"
#endif
#define LIBDIR "/usr/lib/" TRIPLET
#define LIBDIR2 "/lib/" TRIPLET

/* A static busybox (`make test-deps` installs busybox-static; GS_BUSYBOX names another, as the
 * GPU host's run does with the one tests/gpu/prepare.sh carries) */
static const char *busybox = "/bin/busybox";

static const char *host_ldconfig; /* "/sbin/ldconfig" or similar, found at start */

/* ------------------------------------------------------------------------------------------- */
/* helpers                                                                                      */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st;
        (void)flag;
        (void)ftw;
        return remove(path);
}

static void rm_tree(const char *dir)
{
        nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

static char *pathf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *pathf(const char *fmt, ...)
{
        char *p;
        va_list ap;
        va_start(ap, fmt);
        assert_true(vasprintf(&p, fmt, ap) > 0);
        va_end(ap);
        return p;
}

static void write_file(const char *path, const char *text, mode_t mode)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
        assert_true(fd >= 0);
        size_t len = strlen(text);
        assert_int_equal(write(fd, text, len), (ssize_t)len);
        assert_int_equal(fchmod(fd, mode), 0);
        close(fd);
}

/* Whole file into a malloc'd NUL-terminated buffer, or NULL if it cannot be opened. */
static char *read_file(const char *path, size_t *len_out)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return NULL;
        struct stat st;
        assert_int_equal(fstat(fd, &st), 0);
        char *buf = malloc((size_t)st.st_size + 1);
        assert_non_null(buf);
        size_t done = 0;
        while (done < (size_t)st.st_size) {
                ssize_t n = read(fd, buf + done, (size_t)st.st_size - done);
                assert_true(n > 0);
                done += (size_t)n;
        }
        buf[done] = '\0';
        close(fd);
        if (len_out != NULL)
                *len_out = done;
        return buf;
}

static void copy_file(const char *from, const char *to, mode_t mode)
{
        size_t len = 0;
        char *data = read_file(from, &len);
        assert_non_null(data);
        int fd = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, data, len), (ssize_t)len);
        assert_int_equal(fchmod(fd, mode), 0);
        close(fd);
        free(data);
}

static void mkdirs(const char *root, const char *rel)
{
        char *p = pathf("%s/%s", root, rel);
        for (char *s = p + strlen(root) + 1; *s != '\0'; s++) {
                if (*s == '/') {
                        *s = '\0';
                        assert_true(mkdir(p, 0755) == 0 || errno == EEXIST);
                        *s = '/';
                }
        }
        assert_true(mkdir(p, 0755) == 0 || errno == EEXIST);
        free(p);
}

static bool exists(const char *path)
{
        struct stat st;
        return lstat(path, &st) == 0;
}

static uid_t g_chown_uid;
static gid_t g_chown_gid;
static int chown_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st;
        (void)flag;
        (void)ftw;
        return lchown(path, g_chown_uid, g_chown_gid);
}

/* What a user-namespaced container looks like from the host: its files owned by its root. */
static void chown_tree(const char *dir, uid_t uid, gid_t gid)
{
        g_chown_uid = uid;
        g_chown_gid = gid;
        assert_int_equal(nftw(dir, chown_entry, 16, FTW_PHYS | FTW_MOUNT), 0);
}

/* Compile a shared object with the given SONAME (the compiler is part of the build deps). */
static bool compile_lib(const char *out, const char *soname)
{
        char *cmd = pathf("cc -shared -fPIC -nostdlib -Wl,-soname,%s -o '%s' -x c - 2>/dev/null", soname, out);
        FILE *p = popen(cmd, "w");
        free(cmd);
        if (p == NULL)
                return false;
        fputs("int gs_test_symbol(void) { return 42; }\n", p);
        return pclose(p) == 0;
}

struct lib_copy {
        const char *dir;
        int copied;
};

/* Real shared objects: the ones this test process has loaded (libc, libcmocka, libseccomp, ...). */
static int copy_loaded_lib(struct dl_phdr_info *info, size_t size, void *arg)
{
        (void)size;
        struct lib_copy *lc = arg;
        const char *name = info->dlpi_name;
        if (name == NULL || name[0] != '/')
                return 0;
        const char *base = strrchr(name, '/') + 1;
        if (strncmp(base, "lib", 3) != 0 || strstr(base, ".so") == NULL)
                return 0;
        char *to = pathf("%s/%s", lc->dir, base);
        copy_file(name, to, 0755);
        free(to);
        lc->copied++;
        return 0;
}

struct fixture {
        char *dir;    /* temp dir */
        char *rootfs; /* dir/rootfs */
        char *log;    /* dir/log: the child's stdout/stderr */
        int log_fd;
        bool proc_mounted;
};

/* A rootfs with real libs in LIBDIR, libgstest.so.1.2.3 (SONAME libgstest.so.1) in LIBDIR,
 * etc/ld.so.conf listing LIBDIR and LIBDIR2, a real procfs on /proc and marker files in /dev and
 * /sys (what the sandbox must hide). */
static struct fixture *fixture_new(bool with_libs)
{
        struct fixture *f = calloc(1, sizeof(*f));
        assert_non_null(f);
        const char *base = getenv("TMPDIR");
        if (base == NULL || base[0] == '\0')
                base = "/tmp";
        f->dir = pathf("%s/gs-test-ldconfig.XXXXXX", base);
        assert_non_null(mkdtemp(f->dir));
        assert_int_equal(chmod(f->dir, 0755), 0);
        f->rootfs = pathf("%s/rootfs", f->dir);
        mkdirs(f->dir, "rootfs/etc");
        mkdirs(f->rootfs, "usr/lib/" TRIPLET);
        mkdirs(f->rootfs, "lib/" TRIPLET);
        mkdirs(f->rootfs, "var/cache");
        mkdirs(f->rootfs, "proc");
        mkdirs(f->rootfs, "sys");
        mkdirs(f->rootfs, "dev");
        char *p = pathf("%s/dev/gs-marker", f->rootfs);
        write_file(p, "host device\n", 0644);
        free(p);
        p = pathf("%s/sys/gs-marker", f->rootfs);
        write_file(p, "host sysfs\n", 0644);
        free(p);
        p = pathf("%s/etc/ld.so.conf", f->rootfs);
        write_file(p, LIBDIR "\n" LIBDIR2 "\n", 0644);
        free(p);
        p = pathf("%s/proc", f->rootfs);
        f->proc_mounted = mount("proc", p, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) == 0;
        free(p);
        if (with_libs) {
                struct lib_copy lc = {.dir = NULL, .copied = 0};
                char *d = pathf("%s%s", f->rootfs, LIBDIR);
                lc.dir = d;
                dl_iterate_phdr(copy_loaded_lib, &lc);
                assert_true(lc.copied > 0);
                free(d);
        }
        f->log = pathf("%s/log", f->dir);
        f->log_fd = open(f->log, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
        assert_true(f->log_fd >= 0);
        return f;
}

static void fixture_free(struct fixture *f)
{
        if (f == NULL)
                return;
        if (f->proc_mounted) {
                char *p = pathf("%s/proc", f->rootfs);
                umount2(p, MNT_DETACH);
                free(p);
        }
        close(f->log_fd);
        rm_tree(f->dir);
        free(f->dir);
        free(f->rootfs);
        free(f->log);
        free(f);
}

/* Make the rootfs's /sbin/ldconfig a busybox shell script with this body. */
static void busybox_ldconfig(struct fixture *f, const char *body)
{
        mkdirs(f->rootfs, "bin");
        mkdirs(f->rootfs, "sbin");
        char *p = pathf("%s/bin/busybox", f->rootfs);
        if (!exists(p))
                copy_file(busybox, p, 0755);
        free(p);
        p = pathf("%s/bin/sh", f->rootfs);
        if (!exists(p))
                assert_int_equal(symlink("busybox", p), 0);
        free(p);
        char *script = pathf("#!/bin/sh\n%s\n", body);
        p = pathf("%s/sbin/ldconfig", f->rootfs);
        write_file(p, script, 0755);
        free(p);
        free(script);
}

static struct gs_ldconfig_opts opts_for(const struct fixture *f, const char *ldconfig)
{
        struct gs_ldconfig_opts o;
        memset(&o, 0, sizeof(o));
        o.rootfs = f->rootfs;
        o.ldconfig = ldconfig;
        o.log_fd = f->log_fd;
        return o;
}

static char *host_at(void)
{
        return pathf("@%s", host_ldconfig);
}

static char *in_root(const struct fixture *f, const char *rel)
{
        return pathf("%s%s", f->rootfs, rel);
}

static char *root_file(const struct fixture *f, const char *rel)
{
        char *p = in_root(f, rel);
        char *data = read_file(p, NULL);
        free(p);
        return data;
}

struct find_key {
        const char *key;
        char value[256];
};

static int find_cb(void *arg, const char *key, const char *value, int32_t flags)
{
        (void)flags;
        struct find_key *fk = arg;
        if (strcmp(key, fk->key) == 0) {
                snprintf(fk->value, sizeof(fk->value), "%s", value);
                return 1;
        }
        return 0;
}

/* Value of `key` in the rootfs's ld.so.cache, read with our own parser ("" if absent). */
static void cache_lookup(const struct fixture *f, const char *key, char *value, size_t len)
{
        char *p = in_root(f, "/etc/ld.so.cache");
        struct gs_ldcache c;
        struct gs_error err = {0};
        assert_int_equal(gs_ldcache_open(&c, AT_FDCWD, p, &err), 0);
        struct find_key fk = {.key = key, .value = ""};
        assert_true(gs_ldcache_foreach(&c, GS_LD_ARCH_HOST, find_cb, &fk, &err) >= 0);
        gs_ldcache_close(&c);
        snprintf(value, len, "%s", fk.value);
        free(p);
}

/* Pieces every test machine has: their absence is a broken environment, a failure. */
static void need_busybox(void)
{
        if (access(busybox, X_OK) != 0)
                fail_msg("%s: %s (`make test-deps` installs busybox-static; or set GS_BUSYBOX)", busybox,
                         strerror(errno));
}

static void need_host_ldconfig(void)
{
        if (host_ldconfig == NULL)
                fail_msg("no host ldconfig (/sbin/ldconfig, /usr/sbin/ldconfig): libc-bin has it");
}

/* The host ldconfig run in the rootfs as uid/gid, with checks of its results. */
static void check_host_run(uid_t uid, gid_t gid, bool no_pivot)
{
        need_host_ldconfig();
        struct fixture *f = fixture_new(true);
        char *lib = in_root(f, LIBDIR "/libgstest.so.1.2.3");
        if (!compile_lib(lib, "libgstest.so.1")) {
                free(lib);
                fixture_free(f);
                fail_msg("cc could not build a shared object (`make test-deps` installs the compiler)");
        }
        free(lib);
        if (uid != 0)
                chown_tree(f->rootfs, uid, gid);
        struct stat before, after;
        assert_int_equal(stat(host_ldconfig, &before), 0);

        char *at = host_at();
        struct gs_ldconfig_opts o = opts_for(f, at);
        o.uid = uid;
        o.gid = gid;
        o.no_pivot = no_pivot;
        struct gs_error err = {0};
        int r = gs_ldconfig_run(&o, &err);
        if (r != 0) {
                char *log = read_file(f->log, NULL);
                print_error("ldconfig: %s\nlog:\n%s\n", err.msg, log != NULL ? log : "");
                free(log);
        }
        assert_int_equal(r, 0);

        /* The cache: there, owned by the uid, listing our library under its SONAME. */
        char *cache = in_root(f, "/etc/ld.so.cache");
        struct stat st;
        assert_int_equal(stat(cache, &st), 0);
        assert_int_equal(st.st_uid, uid);
        assert_int_equal(st.st_gid, gid);
        char value[256];
        cache_lookup(f, "libgstest.so.1", value, sizeof(value));
        assert_string_equal(value, LIBDIR "/libgstest.so.1");
        cache_lookup(f, "libc.so.6", value, sizeof(value));
        assert_string_equal(value, LIBDIR "/libc.so.6");
        free(cache);

        /* The SONAME link, made by ldconfig as the uid. */
        char *link = in_root(f, LIBDIR "/libgstest.so.1");
        assert_int_equal(lstat(link, &st), 0);
        assert_true(S_ISLNK(st.st_mode));
        assert_int_equal(st.st_uid, uid);
        char target[256];
        ssize_t n = readlink(link, target, sizeof(target) - 1);
        assert_true(n > 0);
        target[n] = '\0';
        assert_string_equal(target, "libgstest.so.1.2.3");
        free(link);

        /* The host binary is untouched. */
        assert_int_equal(stat(host_ldconfig, &after), 0);
        assert_int_equal(before.st_ino, after.st_ino);
        assert_int_equal(before.st_size, after.st_size);
        assert_true(before.st_mtim.tv_sec == after.st_mtim.tv_sec && before.st_mtim.tv_nsec == after.st_mtim.tv_nsec);
        free(at);
        fixture_free(f);
}

/* ------------------------------------------------------------------------------------------- */
/* host ldconfig                                                                                */

static void test_host_ldconfig_root(void **state)
{
        (void)state;
        check_host_run(0, 0, false);
}

static void test_host_ldconfig_owner_uid(void **state)
{
        (void)state;
        check_host_run(4242, 4343, false);
}

static void test_host_ldconfig_no_pivot(void **state)
{
        (void)state;
        check_host_run(0, 0, true);
}

/* Extra directories are passed on; missing ones are left out instead of failing. */
static void test_host_ldconfig_extra_dirs(void **state)
{
        (void)state;
        need_host_ldconfig();
        struct fixture *f = fixture_new(false);
        mkdirs(f->rootfs, "usr/local/gsextra");
        char *lib = in_root(f, "/usr/local/gsextra/libgsextra.so.7.0");
        if (!compile_lib(lib, "libgsextra.so.7")) {
                free(lib);
                fixture_free(f);
                fail_msg("cc could not build a shared object (`make test-deps` installs the compiler)");
        }
        free(lib);
        char *at = host_at();
        struct gs_ldconfig_opts o = opts_for(f, at);
        const char *dirs[] = {"/usr/local/gsextra", "/does/not/exist", "relative/ignored"};
        o.dirs = dirs;
        o.ndirs = 3;
        struct gs_error err = {0};
        assert_int_equal(gs_ldconfig_run(&o, &err), 0);
        char value[256];
        cache_lookup(f, "libgsextra.so.7", value, sizeof(value));
        assert_string_equal(value, "/usr/local/gsextra/libgsextra.so.7");
        char *link = in_root(f, "/usr/local/gsextra/libgsextra.so.7");
        assert_true(exists(link));
        free(link);
        free(at);
        fixture_free(f);
}

/* The memfd: named, sealed against every change, a byte-for-byte copy. */
static void test_host_memfd_sealed(void **state)
{
        (void)state;
        need_host_ldconfig();
        char resolved[4096];
        struct gs_error err = {0};
        int fd = gs_ldconfig_host_memfd(host_ldconfig, resolved, sizeof(resolved), &err);
        assert_true(fd > 2);
        int seals = fcntl(fd, F_GET_SEALS);
        assert_true(seals >= 0);
        const int want = F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE;
        assert_int_equal(seals & want, want);
        assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
        assert_int_equal(pwrite(fd, "x", 1, 0), -1);
        assert_int_equal(errno, EPERM);
        assert_int_equal(ftruncate(fd, 1), -1);
        assert_int_equal(fcntl(fd, F_ADD_SEALS, 0), -1); /* F_SEAL_SEAL */
        void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        assert_true(m == MAP_FAILED);

        char link[64], name[256];
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, name, sizeof(name) - 1);
        assert_true(n > 0);
        name[n] = '\0';
        assert_non_null(strstr(name, "memfd:gpuslice-ldconfig"));

        size_t hl = 0;
        char *host = read_file(resolved, &hl);
        assert_non_null(host);
        struct stat st;
        assert_int_equal(fstat(fd, &st), 0);
        assert_int_equal((size_t)st.st_size, hl);
        char *copy = malloc(hl);
        assert_non_null(copy);
        assert_int_equal(pread(fd, copy, hl, 0), (ssize_t)hl);
        assert_memory_equal(host, copy, hl);
        free(copy);
        free(host);
        close(fd);
}

/* Ubuntu's /sbin/ldconfig is a shell wrapper: the .real binary beside it is what runs. */
static void test_host_wrapper_script(void **state)
{
        (void)state;
        need_host_ldconfig();
        struct fixture *f = fixture_new(true);
        char *hostdir = pathf("%s/hostsbin", f->dir);
        assert_int_equal(mkdir(hostdir, 0755), 0);
        char *wrapper = pathf("%s/ldconfig", hostdir);
        write_file(wrapper, "#!/bin/sh\nexec /sbin/ldconfig.real \"$@\"\n", 0755);

        /* Without a .real: refused. */
        char resolved[4096];
        struct gs_error err = {0};
        assert_int_equal(gs_ldconfig_host_memfd(wrapper, resolved, sizeof(resolved), &err), -1);
        assert_non_null(strstr(err.msg, "is a script"));

        char *real = pathf("%s.real", wrapper);
        /* On Ubuntu the host's /sbin/ldconfig is itself such a wrapper: copy the ELF behind it. */
        char *host_real = pathf("%s.real", host_ldconfig);
        copy_file(access(host_real, X_OK) == 0 ? host_real : host_ldconfig, real, 0755);
        free(host_real);
        int fd = gs_ldconfig_host_memfd(wrapper, resolved, sizeof(resolved), &err);
        assert_true(fd >= 0);
        close(fd);
        assert_string_equal(resolved, real);

        char *at = pathf("@%s", wrapper);
        struct gs_ldconfig_opts o = opts_for(f, at);
        assert_int_equal(gs_ldconfig_run(&o, &err), 0);
        char *cache = in_root(f, "/etc/ld.so.cache");
        assert_true(exists(cache));
        free(cache);
        free(at);
        free(real);
        free(wrapper);
        free(hostdir);
        fixture_free(f);
}

static void test_host_missing(void **state)
{
        (void)state;
        struct fixture *f = fixture_new(false);
        struct gs_ldconfig_opts o = opts_for(f, "@/does/not/exist/ldconfig");
        struct gs_error err = {0};
        assert_int_equal(gs_ldconfig_run(&o, &err), -1);
        assert_int_equal(err.sys_errno, ENOENT);
        assert_string_equal(err.msg, "open host ldconfig /does/not/exist/ldconfig: No such file or directory");
        fixture_free(f);
}

/* A missing rootfs fails in the sandbox setup, with the step named. */
static void test_setup_failure(void **state)
{
        (void)state;
        need_host_ldconfig();
        char *at = host_at();
        struct gs_ldconfig_opts o;
        memset(&o, 0, sizeof(o));
        o.rootfs = "/does/not/exist/rootfs";
        o.ldconfig = at;
        o.log_fd = -1;
        struct gs_error err = {0};
        assert_int_equal(gs_ldconfig_run(&o, &err), -1);
        assert_int_equal(err.sys_errno, ENOENT);
        assert_string_equal(err.msg, "ldconfig sandbox: bind the rootfs onto itself failed: No such file or directory");
        free(at);
}

static void test_bad_options(void **state)
{
        (void)state;
        struct gs_error err = {0};
        struct gs_ldconfig_opts o;
        memset(&o, 0, sizeof(o));
        o.rootfs = "relative";
        o.ldconfig = "@/sbin/ldconfig";
        assert_int_equal(gs_ldconfig_run(&o, &err), -1);
        assert_int_equal(err.code, GS_EINVAL);
        o.rootfs = "/";
        o.ldconfig = "sbin/ldconfig";
        assert_int_equal(gs_ldconfig_run(&o, &err), -1);
        assert_int_equal(err.code, GS_EINVAL);
        assert_non_null(strstr(err.msg, "must be absolute"));
        assert_int_equal(gs_ldconfig_run(NULL, &err), -1);
}

/* mntns_pid: the rootfs path exists only in another process's mount namespace. */
static void test_join_mount_namespace(void **state)
{
        (void)state;
        need_host_ldconfig();
        struct fixture *f = fixture_new(true);
        char *nsdir = pathf("%s/ns", f->dir);
        assert_int_equal(mkdir(nsdir, 0755), 0);
        char *nsroot = pathf("%s/rootfs", nsdir);

        int ready[2];
        assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                /* Only there: a tmpfs on ns/ with the fixture's rootfs bound at ns/rootfs. */
                char ok = 0;
                if (unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_PRIVATE | MS_REC, NULL) == 0 &&
                    mount("tmpfs", nsdir, "tmpfs", 0, "mode=755") == 0 && mkdir(nsroot, 0755) == 0 &&
                    mount(f->rootfs, nsroot, NULL, MS_BIND | MS_REC, NULL) == 0)
                        ok = 1;
                if (write(ready[1], &ok, 1) != 1)
                        _exit(1);
                for (;;)
                        pause();
        }
        close(ready[1]);
        char ok = 0;
        assert_int_equal(read(ready[0], &ok, 1), 1);
        close(ready[0]);
        assert_int_equal(ok, 1);
        assert_false(exists(nsroot)); /* not in our namespace */

        char *at = host_at();
        struct gs_ldconfig_opts o = opts_for(f, at);
        o.rootfs = nsroot;
        struct gs_error err = {0};
        /* In our namespace the path does not exist... */
        assert_int_equal(gs_ldconfig_run(&o, &err), -1);
        assert_int_equal(err.sys_errno, ENOENT);
        /* ... in the helper's it does. */
        o.mntns_pid = pid;
        int r = gs_ldconfig_run(&o, &err);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        if (r != 0)
                print_error("%s\n", err.msg);
        assert_int_equal(r, 0);
        char *cache = in_root(f, "/etc/ld.so.cache"); /* the same files, bound there */
        assert_true(exists(cache));
        free(cache);
        /* Nothing of the helper's namespace appeared here. */
        assert_false(exists(nsroot));

        /* A pid that does not exist: no namespace to join. */
        o.mntns_pid = pid;
        assert_int_equal(gs_ldconfig_run(&o, &err), -1);
        assert_non_null(strstr(err.msg, "open the mount namespace of pid"));
        free(at);
        free(nsroot);
        free(nsdir);
        fixture_free(f);
}

/* ------------------------------------------------------------------------------------------- */
/* container ldconfig (busybox scripts standing in for a hostile image)                         */

static void test_container_ldconfig_missing(void **state)
{
        (void)state;
        struct fixture *f = fixture_new(false);
        struct gs_ldconfig_opts o = opts_for(f, "/sbin/ldconfig");
        struct gs_error err = {0};
        assert_int_equal(gs_ldconfig_run(&o, &err), 0);
        char *cache = in_root(f, "/etc/ld.so.cache");
        assert_false(exists(cache));
        free(cache);
        fixture_free(f);
}

/* What the sandboxed process sees: no environment, empty /proc /sys /dev, the rootfs as /, its
 * arguments, and the uid it was given. */
static void test_container_view(void **state)
{
        (void)state;
        need_busybox();
        struct fixture *f = fixture_new(false);
        busybox_ldconfig(f,
                         "export -p > /out_env\n"
                         "for x in /proc/* /sys/* /dev/*; do echo \"$x\"; done > /out_ls\n"
                         "if read x < /proc/self/environ; then echo \"environ:$x\"; else echo environ:none; fi "
                         "> /out_environ\n"
                         "if read x < /proc/1/cmdline; then echo \"pid1:$x\"; else echo pid1:none; fi > /out_pid1\n"
                         "echo escaped > /../../escape\n"
                         "echo \"$0 $@\" > /out_args\n"
                         "echo \"$$\" > /out_pid\n"
                         "echo hello-from-the-sandbox\n"
                         "exit 0");
        chown_tree(f->rootfs, 4242, 4242);
        setenv("GS_TEST_SECRET", "leaked", 1);
        struct gs_ldconfig_opts o = opts_for(f, "/sbin/ldconfig");
        o.uid = 4242;
        o.gid = 4242;
        const char *dirs[] = {"/bin", "/nope"};
        o.dirs = dirs;
        o.ndirs = 2;
        struct gs_error err = {0};
        int r = gs_ldconfig_run(&o, &err);
        unsetenv("GS_TEST_SECRET");
        if (r != 0)
                print_error("%s\n", err.msg);
        assert_int_equal(r, 0);

        char *env = root_file(f, "/out_env");
        assert_non_null(env);
        assert_null(strstr(env, "GS_TEST_SECRET"));
        assert_null(strstr(env, "leaked"));
        /* Only what the shell sets itself. */
        for (char *line = strtok(env, "\n"); line != NULL; line = strtok(NULL, "\n")) {
                assert_true(strncmp(line, "export PATH=", 12) == 0 || strncmp(line, "export PWD=", 11) == 0 ||
                            strncmp(line, "export SHLVL=", 13) == 0);
        }
        free(env);
        char *ls = root_file(f, "/out_ls");
        assert_string_equal(ls, "/proc/*\n/sys/*\n/dev/*\n"); /* globs that matched nothing */
        free(ls);
        char *s = root_file(f, "/out_environ");
        assert_string_equal(s, "environ:none\n");
        free(s);
        s = root_file(f, "/out_pid1");
        assert_string_equal(s, "pid1:none\n");
        free(s);
        s = root_file(f, "/out_pid");
        assert_string_equal(s, "1\n"); /* pid 1 of a pid namespace of its own */
        free(s);
        s = root_file(f, "/out_args");
        assert_string_equal(s, "/sbin/ldconfig -f /etc/ld.so.conf -C /etc/ld.so.cache /bin\n");
        free(s);

        /* "/../../escape" stayed in the rootfs, written as uid 4242. */
        char *esc = in_root(f, "/escape");
        struct stat st;
        assert_int_equal(stat(esc, &st), 0);
        assert_int_equal(st.st_uid, 4242);
        free(esc);
        esc = pathf("%s/escape", f->dir);
        assert_false(exists(esc));
        free(esc);
        /* The host's view of the rootfs is unchanged: its /proc and /dev are still there. */
        char *marker = in_root(f, "/dev/gs-marker");
        assert_true(exists(marker));
        free(marker);
        if (f->proc_mounted) {
                char *self = in_root(f, "/proc/self");
                assert_true(exists(self));
                free(self);
        }
        /* stdout went to the log. */
        char *log = read_file(f->log, NULL);
        assert_non_null(strstr(log, "hello-from-the-sandbox"));
        free(log);
        fixture_free(f);
}

/* Seccomp: mknod of a FIFO needs no privilege at all (the process owns /), so EPERM here is the
 * filter. Likewise socket(). */
static void test_container_seccomp_mknod_socket(void **state)
{
        (void)state;
        need_busybox();
        struct fixture *f = fixture_new(false);
        busybox_ldconfig(f,
                         "echo written > /plain-file\n"
                         "/bin/busybox mkfifo /fifo\n" /* needs a fork: refused, and ash gives up */
                         "exec /bin/busybox mkfifo /fifo");
        struct gs_ldconfig_opts o = opts_for(f, "/sbin/ldconfig");
        struct gs_error err = {0};
        assert_int_equal(gs_ldconfig_run(&o, &err), -1);
        assert_string_equal(err.msg, "process /sbin/ldconfig failed with error code: 2");
        char *log = read_file(f->log, NULL);
        assert_non_null(strstr(log, "can't fork: Operation not permitted"));
        free(log);

        /* Without the fork: exec straight into mkfifo. */
        busybox_ldconfig(f, "echo written > /plain-file\nexec /bin/busybox mkfifo /fifo");
        assert_int_equal(ftruncate(f->log_fd, 0), 0);
        assert_int_equal(gs_ldconfig_run(&o, &err), -1);
        assert_string_equal(err.msg, "process /sbin/ldconfig failed with error code: 1");
        char *plain = in_root(f, "/plain-file");
        assert_true(exists(plain)); /* writing in the root works ... */
        free(plain);
        char *fifo = in_root(f, "/fifo");
        assert_false(exists(fifo)); /* ... mknod does not */
        free(fifo);
        log = read_file(f->log, NULL);
        assert_non_null(strstr(log, "Operation not permitted"));
        free(log);

        /* The same command outside the sandbox works (so it is the filter, not the fs). */
        char *cmd = pathf("'%s' mkfifo '%s/fifo-control'", busybox, f->rootfs);
        assert_int_equal(system(cmd), 0);
        free(cmd);

        busybox_ldconfig(f, "exec /bin/busybox nc 127.0.0.1 9");
        assert_int_equal(ftruncate(f->log_fd, 0), 0);
        assert_int_equal(gs_ldconfig_run(&o, &err), -1);
        log = read_file(f->log, NULL);
        assert_non_null(strstr(log, "socket: Operation not permitted"));
        free(log);

        /* mount: refused (EPERM from the filter; the capabilities are gone as well). */
        busybox_ldconfig(f, "exec /bin/busybox mount -t tmpfs none /etc");
        assert_int_equal(ftruncate(f->log_fd, 0), 0);
        assert_int_equal(gs_ldconfig_run(&o, &err), -1);
        assert_string_equal(err.msg, "process /sbin/ldconfig failed with error code: 1");
        log = read_file(f->log, NULL);
        assert_non_null(strstr(log, "permission denied")); /* busybox's words for EPERM */
        free(log);
        fixture_free(f);
}

/* uid 0 in the sandbox holds no capability: no CAP_DAC_OVERRIDE (write a 0600 file of another
 * owner), no CAP_FOWNER (chmod it). */
static void test_container_no_capabilities(void **state)
{
        (void)state;
        need_busybox();
        struct fixture *f = fixture_new(false);
        busybox_ldconfig(f,
                         "if echo x > /owned; then echo write:ok; else echo write:denied; fi > /out_w\n"
                         "exec /bin/busybox chmod 777 /owned");
        char *owned = in_root(f, "/owned");
        write_file(owned, "secret\n", 0600);
        assert_int_equal(chown(owned, 4242, 4242), 0);
        struct gs_ldconfig_opts o = opts_for(f, "/sbin/ldconfig");
        struct gs_error err = {0};
        assert_int_equal(gs_ldconfig_run(&o, &err), -1);
        assert_string_equal(err.msg, "process /sbin/ldconfig failed with error code: 1");
        char *w = root_file(f, "/out_w");
        assert_string_equal(w, "write:denied\n");
        free(w);
        struct stat st;
        assert_int_equal(stat(owned, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        char *data = read_file(owned, NULL);
        assert_string_equal(data, "secret\n");
        free(data);
        free(owned);
        fixture_free(f);
}

static void test_container_exit_code(void **state)
{
        (void)state;
        need_busybox();
        struct fixture *f = fixture_new(false);
        busybox_ldconfig(f, "exit 3");
        struct gs_ldconfig_opts o = opts_for(f, "/sbin/ldconfig");
        struct gs_error err = {0};
        assert_int_equal(gs_ldconfig_run(&o, &err), -1);
        assert_int_equal(err.code, GS_EHELPER);
        assert_string_equal(err.msg, "process /sbin/ldconfig failed with error code: 3");
        fixture_free(f);
}

/* A crash is reported with its signal (unbounded recursion in the shell: SIGSEGV, which the
 * kernel delivers even to the init of a pid namespace). */
static void test_container_signal(void **state)
{
        (void)state;
        need_busybox();
        struct fixture *f = fixture_new(false);
        busybox_ldconfig(f, "f() { f; }\nf");
        struct gs_ldconfig_opts o = opts_for(f, "/sbin/ldconfig");
        struct gs_error err = {0};
        assert_int_equal(gs_ldconfig_run(&o, &err), -1);
        assert_int_equal(err.code, GS_EHELPER);
        char want[128];
        snprintf(want, sizeof(want), "process /sbin/ldconfig terminated with signal %d", SIGSEGV);
        assert_string_equal(err.msg, want);
        fixture_free(f);
}

/* RLIMIT_FSIZE: no write goes past 16 MiB. (SIGXFSZ does not end it: the kernel drops signals
 * that an init process, as it is in its pid namespace, has no handler for; write() says EFBIG.) */
static void test_container_file_size_limit(void **state)
{
        (void)state;
        need_busybox();
        struct fixture *f = fixture_new(false);
        busybox_ldconfig(f,
                         "x=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n"
                         "x=$x$x$x$x$x$x$x$x$x$x$x$x$x$x$x$x\n"
                         "x=$x$x$x$x$x$x$x$x$x$x$x$x$x$x$x$x\n"
                         "while echo \"$x\"; do :; done > /big\n"
                         "exit 7");
        struct gs_ldconfig_opts o = opts_for(f, "/sbin/ldconfig");
        struct gs_error err = {0};
        assert_int_equal(gs_ldconfig_run(&o, &err), -1);
        assert_string_equal(err.msg, "process /sbin/ldconfig failed with error code: 7");
        char *big = in_root(f, "/big");
        struct stat st;
        assert_int_equal(stat(big, &st), 0);
        assert_true((unsigned long long)st.st_size <= GS_LDCONFIG_RLIMIT_FSIZE);
        assert_true((unsigned long long)st.st_size > GS_LDCONFIG_RLIMIT_FSIZE - 2048);
        char *log = read_file(f->log, NULL);
        assert_non_null(strstr(log, "File too large"));
        free(log);
        free(big);
        fixture_free(f);
}

/* A hung ldconfig is killed when the timeout expires. */
static void test_container_timeout(void **state)
{
        (void)state;
        need_busybox();
        struct fixture *f = fixture_new(false);
        busybox_ldconfig(f, "while :; do :; done");
        struct gs_ldconfig_opts o = opts_for(f, "/sbin/ldconfig");
        o.timeout_ms = 1000;
        struct gs_error err = {0};
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        assert_int_equal(gs_ldconfig_run(&o, &err), -1);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        assert_int_equal(err.code, GS_ETIMEOUT);
        assert_string_equal(err.msg, "process /sbin/ldconfig timed out after 1000 ms");
        double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        assert_true(s >= 0.9 && s < 5.0);
        fixture_free(f);
}

/* A container ldconfig that is not executable: an error, not a silent success. */
static void test_container_not_executable(void **state)
{
        (void)state;
        struct fixture *f = fixture_new(false);
        mkdirs(f->rootfs, "sbin");
        char *p = in_root(f, "/sbin/ldconfig");
        write_file(p, "not a program\n", 0644);
        free(p);
        struct gs_ldconfig_opts o = opts_for(f, "/sbin/ldconfig");
        struct gs_error err = {0};
        assert_int_equal(gs_ldconfig_run(&o, &err), -1);
        assert_string_equal(err.msg, "process /sbin/ldconfig could not be executed: Permission denied");
        fixture_free(f);
}

/* A container ldconfig that is a symlink out of the root resolves inside it (missing: success). */
static void test_container_symlink_stays_inside(void **state)
{
        (void)state;
        struct fixture *f = fixture_new(false);
        /* Outside the root: a script that would leave a trace if it ever ran. */
        char *outside = pathf("%s/outside-ldconfig", f->dir);
        char *trace = pathf("%s/trace", f->dir);
        char *script = pathf("#!/bin/sh\necho ran > '%s'\n", trace);
        write_file(outside, script, 0755);
        mkdirs(f->rootfs, "sbin");
        char *link = in_root(f, "/sbin/ldconfig");
        assert_int_equal(symlink(outside, link), 0);
        struct gs_ldconfig_opts o = opts_for(f, "/sbin/ldconfig");
        struct gs_error err = {0};
        assert_int_equal(gs_ldconfig_run(&o, &err), 0); /* the target does not exist in the root */
        assert_false(exists(trace));
        free(link);
        free(script);
        free(trace);
        free(outside);
        fixture_free(f);
}

int main(void)
{
        if (geteuid() != 0) {
                fprintf(stderr, "skipped: needs root\n");
                return 77;
        }
        /* Everything this test mounts stays in a namespace of its own. */
        if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_PRIVATE | MS_REC, NULL) != 0) {
                fprintf(stderr, "skipped: no mount namespace: %s\n", strerror(errno));
                return 77;
        }
        if (getenv("GS_BUSYBOX") != NULL && getenv("GS_BUSYBOX")[0] != '\0')
                busybox = getenv("GS_BUSYBOX");
        static const char *const candidates[] = {"/sbin/ldconfig", "/usr/sbin/ldconfig"};
        for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]) && host_ldconfig == NULL; i++) {
                if (access(candidates[i], X_OK) == 0)
                        host_ldconfig = candidates[i];
        }

        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_host_ldconfig_root),
                cmocka_unit_test(test_host_ldconfig_owner_uid),
                cmocka_unit_test(test_host_ldconfig_no_pivot),
                cmocka_unit_test(test_host_ldconfig_extra_dirs),
                cmocka_unit_test(test_host_memfd_sealed),
                cmocka_unit_test(test_host_wrapper_script),
                cmocka_unit_test(test_host_missing),
                cmocka_unit_test(test_setup_failure),
                cmocka_unit_test(test_bad_options),
                cmocka_unit_test(test_join_mount_namespace),
                cmocka_unit_test(test_container_ldconfig_missing),
                cmocka_unit_test(test_container_view),
                cmocka_unit_test(test_container_seccomp_mknod_socket),
                cmocka_unit_test(test_container_no_capabilities),
                cmocka_unit_test(test_container_exit_code),
                cmocka_unit_test(test_container_signal),
                cmocka_unit_test(test_container_file_size_limit),
                cmocka_unit_test(test_container_timeout),
                cmocka_unit_test(test_container_not_executable),
                cmocka_unit_test(test_container_symlink_stays_inside),
        };
        return gs_skips_result(cmocka_run_group_tests(tests, NULL, NULL), sizeof(tests) / sizeof(tests[0]));
}
