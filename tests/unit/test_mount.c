/*
 * src/container/mount.c against real mounts, as root. Every case runs in a forked child that has
 * its own mount namespace (unshare(CLONE_NEWNS) + "/" made rprivate), on a scratch tree
 *
 *      /tmp/gs-mount-XXXXXX/rootfs   the container rootfs (hostile in most cases)
 *      /tmp/gs-mount-XXXXXX/host     bind sources
 *      /tmp/gs-mount-XXXXXX/canary   a host directory the rootfs's symlinks point at; it holds one
 *                                    file, "target", that must never change nor be mounted over
 *
 * The child checks its mount table (nothing new outside the rootfs) and the canary; the parent
 * checks, from the host's namespace, that the canary and /etc are untouched. Most cases run twice:
 * with open_tree/move_mount and with the mount(2)-on-/proc/self/fd fallback. Skips (77) unless
 * root with mount privileges.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <linux/magic.h>

#include "container/mount.h"

struct ctx {
        char base[PATH_MAX];
        char rootfs[PATH_MAX];
        char host[PATH_MAX];
        char canary[PATH_MAX];
        char *outside0; /* mount points outside the rootfs when the case started (child) */
};

#define FAIL(...)                                                                                  \
        do {                                                                                       \
                fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                                    \
                fprintf(stderr, __VA_ARGS__);                                                      \
                fprintf(stderr, "\n");                                                             \
                fflush(NULL);                                                                      \
                _exit(1);                                                                          \
        } while (0)
#define CHECK(c)                                                                                   \
        do {                                                                                       \
                if (!(c))                                                                          \
                        FAIL("CHECK failed: %s (errno %d %s)", #c, errno, strerror(errno));        \
        } while (0)
#define CHECK_OK(call, e)                                                                          \
        do {                                                                                       \
                if ((call) != 0)                                                                   \
                        FAIL("%s failed: %s", #call, (e).msg);                                     \
        } while (0)
/* The call must fail with a message containing `needle` (NULL: any message). */
static void expect_failure(int rc, const struct gs_error *e, const char *needle, const char *what, int line)
{
        if (rc == 0) {
                fprintf(stderr, "%s:%d: %s succeeded, expected an error\n", __FILE__, line, what);
                fflush(NULL);
                _exit(1);
        }
        if (e->msg[0] == '\0' || (needle != NULL && strstr(e->msg, needle) == NULL)) {
                fprintf(stderr, "%s:%d: %s: message \"%s\" lacks \"%s\"\n", __FILE__, line, what, e->msg,
                        needle != NULL ? needle : "");
                fflush(NULL);
                _exit(1);
        }
        printf("  ok, refused: %s\n", e->msg);
}
#define CHECK_FAILS(call, e, needle)                                                               \
        do {                                                                                       \
                memset(&(e), 0, sizeof(e));                                                        \
                int rc_ = (call);                                                                  \
                expect_failure(rc_, &(e), (needle), #call, __LINE__);                              \
        } while (0)

/* ------------------------------------------------------------------------------------------ */
/* helpers */

static void pathf(char *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void pathf(char *out, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(out, PATH_MAX, fmt, ap);
        va_end(ap);
        if (n < 0 || n >= PATH_MAX)
                FAIL("path too long");
}

static void mkdirs(const char *path, mode_t mode)
{
        char buf[PATH_MAX];
        snprintf(buf, sizeof(buf), "%s", path);
        for (char *p = buf + 1; *p; p++) {
                if (*p == '/') {
                        *p = '\0';
                        if (mkdir(buf, mode) < 0 && errno != EEXIST)
                                FAIL("mkdir %s: %s", buf, strerror(errno));
                        *p = '/';
                }
        }
        if (mkdir(buf, mode) < 0 && errno != EEXIST)
                FAIL("mkdir %s: %s", buf, strerror(errno));
}

static void put_file(const char *path, const char *content)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        CHECK(fd >= 0);
        CHECK(write(fd, content, strlen(content)) == (ssize_t)strlen(content));
        close(fd);
}

/* Contents of a file ("" if missing/unreadable). */
static const char *slurp(const char *path)
{
        static char buf[4096];
        buf[0] = '\0';
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return buf;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        buf[n > 0 ? n : 0] = '\0';
        close(fd);
        return buf;
}

static bool lexists(const char *path)
{
        struct stat st;
        return lstat(path, &st) == 0;
}

static int fd_count(void)
{
        DIR *d = opendir("/proc/self/fd");
        if (d == NULL)
                return -1;
        int n = 0;
        struct dirent *e;
        while ((e = readdir(d)) != NULL)
                if (e->d_name[0] != '.')
                        n++;
        closedir(d);
        return n - 1; /* the DIR's own fd */
}

static bool under(const char *p, const char *prefix)
{
        size_t n = strlen(prefix);
        return strncmp(p, prefix, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

/* Mount points from /proc/self/mountinfo: those under `prefix` (inside = true) or the others. */
static char *mountpoints(const char *prefix, bool inside, int *count)
{
        FILE *f = fopen("/proc/self/mountinfo", "re");
        CHECK(f != NULL);
        size_t cap = 1 << 16, len = 0;
        char *out = calloc(1, cap);
        CHECK(out != NULL);
        char line[8192];
        int n = 0;
        while (fgets(line, sizeof(line), f) != NULL) {
                char id[32], mp[PATH_MAX];
                if (sscanf(line, "%31s %*s %*s %*s %4095s", id, mp) != 2)
                        continue;
                if (under(mp, prefix) != inside)
                        continue;
                n++;
                size_t need = strlen(id) + strlen(mp) + 3;
                if (len + need >= cap) {
                        cap *= 2;
                        char *bigger = realloc(out, cap);
                        CHECK(bigger != NULL);
                        out = bigger;
                }
                len += (size_t)snprintf(out + len, cap - len, "%s %s\n", id, mp);
        }
        fclose(f);
        if (count != NULL)
                *count = n;
        return out;
}

static int mounts_under(const char *prefix)
{
        int n;
        free(mountpoints(prefix, true, &n));
        return n;
}

static bool is_mountpoint(const char *path)
{
        FILE *f = fopen("/proc/self/mountinfo", "re");
        CHECK(f != NULL);
        char line[8192];
        bool found = false;
        while (!found && fgets(line, sizeof(line), f) != NULL) {
                char mp[PATH_MAX];
                if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) == 1 && strcmp(mp, path) == 0)
                        found = true;
        }
        fclose(f);
        return found;
}

/* Sorted names in a directory, "a b c". */
static void listing(const char *dir, char *out, size_t outlen)
{
        struct dirent **v;
        out[0] = '\0';
        int n = scandir(dir, &v, NULL, alphasort);
        if (n < 0) {
                snprintf(out, outlen, "<%s>", strerror(errno));
                return;
        }
        size_t len = 0;
        for (int i = 0; i < n; i++) {
                if (strcmp(v[i]->d_name, ".") != 0 && strcmp(v[i]->d_name, "..") != 0 && len < outlen)
                        len += (size_t)snprintf(out + len, outlen - len, "%s ", v[i]->d_name);
                free(v[i]);
        }
        free(v);
}

/* What must never change on the host: /etc (names, passwd inode/size/mtime) and the canary. */
struct host_snap {
        char etc[16384];
        struct stat passwd;
        char canary[1024];
        char target[64];
        struct stat target_st;
};

static void snap_host(const struct ctx *c, struct host_snap *s)
{
        char p[PATH_MAX];
        memset(s, 0, sizeof(*s));
        listing("/etc", s->etc, sizeof(s->etc));
        CHECK(stat("/etc/passwd", &s->passwd) == 0);
        listing(c->canary, s->canary, sizeof(s->canary));
        pathf(p, "%s/target", c->canary);
        snprintf(s->target, sizeof(s->target), "%s", slurp(p));
        CHECK(lstat(p, &s->target_st) == 0);
}

static void check_host_same(const struct ctx *c, const struct host_snap *a)
{
        struct host_snap b;
        snap_host(c, &b);
        if (strcmp(a->etc, b.etc) != 0)
                FAIL("/etc changed: [%s] -> [%s]", a->etc, b.etc);
        if (a->passwd.st_ino != b.passwd.st_ino || a->passwd.st_dev != b.passwd.st_dev ||
            a->passwd.st_size != b.passwd.st_size || a->passwd.st_mtime != b.passwd.st_mtime)
                FAIL("/etc/passwd changed");
        if (strcmp(a->canary, b.canary) != 0)
                FAIL("canary changed: [%s] -> [%s]", a->canary, b.canary);
        if (strcmp(a->target, b.target) != 0 || a->target_st.st_ino != b.target_st.st_ino ||
            a->target_st.st_dev != b.target_st.st_dev)
                FAIL("canary target changed");
}

/* In the child: nothing mounted outside the rootfs that was not there at the start. */
static void check_no_mount_outside(const struct ctx *c)
{
        char *now = mountpoints(c->rootfs, false, NULL);
        if (strcmp(now, c->outside0) != 0)
                FAIL("mount table outside the rootfs changed:\nbefore:\n%s\nafter:\n%s", c->outside0, now);
        free(now);
}

static int rm_one(const char *p, const struct stat *st, int type, struct FTW *ftw)
{
        (void)st;
        (void)ftw;
        if (type == FTW_DP)
                rmdir(p);
        else
                unlink(p);
        return 0;
}

static void rm_rf(const char *p) { nftw(p, rm_one, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT); }

/* ------------------------------------------------------------------------------------------ */
/* runner */

typedef void (*body_fn)(struct ctx *c);

int __lsan_do_recoverable_leak_check(void) __attribute__((weak));

static bool legacy_on = true, legacy_off = false;

static void run_case(body_fn body, void **state)
{
        bool legacy = state != NULL && *state != NULL && *(bool *)*state;
        struct ctx c;
        memset(&c, 0, sizeof(c));
        snprintf(c.base, sizeof(c.base), "/tmp/gs-mount-XXXXXX");
        assert_non_null(mkdtemp(c.base));
        pathf(c.rootfs, "%s/rootfs", c.base);
        pathf(c.host, "%s/host", c.base);
        pathf(c.canary, "%s/canary", c.base);
        mkdirs(c.rootfs, 0755);
        mkdirs(c.host, 0755);
        mkdirs(c.canary, 0755);
        char p[PATH_MAX];
        pathf(p, "%s/target", c.canary);
        put_file(p, "canary-content");

        struct host_snap before;
        snap_host(&c, &before);

        fflush(NULL);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                        FAIL("cannot make a private mount namespace: %s", strerror(errno));
                gs_mount_force_legacy(legacy);
                c.outside0 = mountpoints(c.rootfs, false, NULL);
                int fds = fd_count();
                body(&c);
                check_no_mount_outside(&c);
                check_host_same(&c, &before);
                if (fd_count() != fds)
                        FAIL("fd leak: %d fds before, %d after", fds, fd_count());
                CHECK(setfsuid((uid_t)-1) == 0 && setfsgid((gid_t)-1) == 0); /* credentials restored */
                free(c.outside0);
                /* _exit() skips LeakSanitizer's exit-time check: run it here (sanitized builds) */
                if (__lsan_do_recoverable_leak_check != NULL && __lsan_do_recoverable_leak_check() != 0)
                        FAIL("memory leaked");
                fflush(NULL);
                _exit(0);
        }
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        /* From the host's namespace: nothing created or changed outside the rootfs. */
        struct host_snap after;
        snap_host(&c, &after);
        assert_string_equal(before.etc, after.etc);
        assert_string_equal(before.canary, after.canary);
        assert_string_equal(before.target, after.target);
        assert_true(before.passwd.st_ino == after.passwd.st_ino && before.passwd.st_mtime == after.passwd.st_mtime);
        rm_rf(c.base);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
}

#define CASE(name)                                                                                 \
        static void body_##name(struct ctx *c);                                                    \
        static void test_##name(void **state) { run_case(body_##name, state); }                   \
        static void body_##name(struct ctx *c)

static void open_rootfs(struct ctx *c, struct gs_rootfs *r, uid_t uid, gid_t gid)
{
        struct gs_error e = {0};
        CHECK_OK(gs_rootfs_open(r, c->rootfs, uid, gid, &e), e);
}

/* A host library to bind. */
static void host_lib(struct ctx *c, char *src, const char *content)
{
        pathf(src, "%s/libx.so.1", c->host);
        put_file(src, content);
}

static unsigned long vfs_flags(const char *path)
{
        struct statvfs sv;
        CHECK(statvfs(path, &sv) == 0);
        return sv.f_flag;
}

/* ------------------------------------------------------------------------------------------ */
/* ordinary binds */

CASE(bind_file)
{
        struct gs_rootfs r;
        struct gs_error e = {0};
        char src[PATH_MAX], in[PATH_MAX];
        host_lib(c, src, "hello-lib");
        open_rootfs(c, &r, 0, 0);
        CHECK_OK(gs_mount_bind(&r, src, "/usr/lib/x86_64-linux-gnu/libx.so.1", GS_NODE_FILE, GS_MNT_RO_LIB, &e), e);
        pathf(in, "%s/usr/lib/x86_64-linux-gnu/libx.so.1", c->rootfs);
        CHECK(strcmp(slurp(in), "hello-lib") == 0);
        CHECK(is_mountpoint(in));
        unsigned long fl = vfs_flags(in);
        CHECK((fl & (ST_RDONLY | ST_NOSUID | ST_NODEV)) == (ST_RDONLY | ST_NOSUID | ST_NODEV));
        CHECK(open(in, O_WRONLY | O_CLOEXEC) < 0 && errno == EROFS);
        struct stat st, sst;
        CHECK(stat(in, &st) == 0 && stat(src, &sst) == 0 && st.st_ino == sst.st_ino);
        /* the parents we created belong to the owner (root here), mode 0755 */
        pathf(in, "%s/usr/lib/x86_64-linux-gnu", c->rootfs);
        CHECK(stat(in, &st) == 0 && st.st_uid == 0 && (st.st_mode & 07777) == 0755);
        /* the host file is still writable: the ro is per-mount */
        CHECK(vfs_flags(src) == vfs_flags(c->host));
        /* a second bind onto the same (existing, same-type) destination stacks cleanly */
        CHECK_OK(gs_mount_bind(&r, src, "usr/lib/x86_64-linux-gnu/libx.so.1", GS_NODE_FILE, GS_MNT_RO_LIB, &e), e);
        CHECK(mounts_under(c->rootfs) == 2);
        gs_mount_commit(&r);
        CHECK(mounts_under(c->rootfs) == 2);
        gs_mount_rollback(&r); /* nothing journalled any more */
        CHECK(mounts_under(c->rootfs) == 2);
        gs_rootfs_close(&r);
}

CASE(bind_char)
{
        struct gs_rootfs r;
        struct gs_error e = {0};
        char in[PATH_MAX];
        open_rootfs(c, &r, 0, 0);
        CHECK_OK(gs_mount_bind(&r, "/dev/null", "/dev/nvidia0", GS_NODE_CHAR, GS_MNT_DEVNODE, &e), e);
        pathf(in, "%s/dev/nvidia0", c->rootfs);
        struct stat st;
        CHECK(stat(in, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3));
        CHECK(is_mountpoint(in));
        unsigned long fl = vfs_flags(in);
        CHECK((fl & (ST_RDONLY | ST_NOSUID | ST_NOEXEC)) == (ST_RDONLY | ST_NOSUID | ST_NOEXEC));
        int fd = open(in, O_RDONLY | O_CLOEXEC);
        char b;
        CHECK(fd >= 0 && read(fd, &b, 1) == 0);
        close(fd);
        /* an existing char device node in the rootfs is reused as the target */
        pathf(in, "%s/dev/nvidiactl", c->rootfs);
        CHECK(mknod(in, S_IFCHR | 0600, makedev(1, 5)) == 0); /* /dev/zero's numbers */
        CHECK_OK(gs_mount_bind(&r, "/dev/null", "/dev/nvidiactl", GS_NODE_CHAR, GS_MNT_DEVNODE, &e), e);
        CHECK(stat(in, &st) == 0 && st.st_rdev == makedev(1, 3));
        gs_mount_rollback(&r);
        CHECK(mounts_under(c->rootfs) == 0);
        CHECK(lstat(in, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 5)); /* pre-existing: kept */
        pathf(in, "%s/dev/nvidia0", c->rootfs);
        CHECK(!lexists(in));
        gs_rootfs_close(&r);
}

CASE(bind_socket)
{
        struct gs_rootfs r;
        struct gs_error e = {0};
        char sock[PATH_MAX], in[PATH_MAX];
        pathf(sock, "%s/socket", c->host);
        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        snprintf(a.sun_path, sizeof(a.sun_path), "%s", sock);
        CHECK(s >= 0 && bind(s, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(s, 4) == 0);
        open_rootfs(c, &r, 0, 0);
        CHECK_OK(gs_mount_bind(&r, sock, "/run/nvidia-persistenced/socket", GS_NODE_SOCKET, GS_MNT_IPC, &e), e);
        pathf(in, "%s/run/nvidia-persistenced/socket", c->rootfs);
        struct stat st;
        CHECK(stat(in, &st) == 0 && S_ISSOCK(st.st_mode));
        unsigned long fl = vfs_flags(in);
        CHECK((fl & (ST_NOSUID | ST_NODEV | ST_NOEXEC)) == (ST_NOSUID | ST_NODEV | ST_NOEXEC) && !(fl & ST_RDONLY));
        int cl = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un b = {.sun_family = AF_UNIX};
        snprintf(b.sun_path, sizeof(b.sun_path), "%s", in);
        CHECK(cl >= 0 && connect(cl, (struct sockaddr *)&b, sizeof(b)) == 0);
        int ac = accept4(s, NULL, NULL, SOCK_CLOEXEC);
        CHECK(ac >= 0);
        close(ac);
        close(cl);
        close(s);
        gs_mount_rollback(&r);
        CHECK(!lexists(in));
        pathf(in, "%s/run", c->rootfs);
        CHECK(!lexists(in));
        gs_rootfs_close(&r);
}

CASE(bind_dir)
{
        struct gs_rootfs r;
        struct gs_error e = {0};
        char src[PATH_MAX], p[PATH_MAX], in[PATH_MAX];
        pathf(src, "%s/mps", c->host);
        mkdirs(src, 0700);
        pathf(p, "%s/control", src);
        put_file(p, "mps");
        open_rootfs(c, &r, 0, 0);
        CHECK_OK(gs_mount_bind(&r, src, "/tmp/nvidia-mps", GS_NODE_DIR, GS_MNT_IPC, &e), e);
        pathf(in, "%s/tmp/nvidia-mps/control", c->rootfs);
        CHECK(strcmp(slurp(in), "mps") == 0);
        pathf(in, "%s/tmp/nvidia-mps/new", c->rootfs);
        put_file(in, "written"); /* writable */
        pathf(p, "%s/new", src);
        CHECK(strcmp(slurp(p), "written") == 0);
        pathf(in, "%s/tmp/nvidia-mps", c->rootfs);
        unsigned long fl = vfs_flags(in);
        CHECK((fl & (ST_NOSUID | ST_NODEV | ST_NOEXEC)) == (ST_NOSUID | ST_NODEV | ST_NOEXEC) && !(fl & ST_RDONLY));
        struct stat st;
        CHECK(stat(in, &st) == 0 && (st.st_mode & 0777) == 0700); /* the source's */
        gs_mount_rollback(&r);
        CHECK(mounts_under(c->rootfs) == 0 && !lexists(in));
        gs_rootfs_close(&r);
}

/* A destination that exists with the right type is reused, and never removed by the rollback. */
CASE(existing_targets)
{
        struct gs_rootfs r;
        struct gs_error e = {0};
        char src[PATH_MAX], in[PATH_MAX], sock[PATH_MAX];
        host_lib(c, src, "lib");
        pathf(in, "%s/usr/lib", c->rootfs);
        mkdirs(in, 0755);
        pathf(in, "%s/usr/lib/libx.so.1", c->rootfs);
        put_file(in, "container's own");
        pathf(sock, "%s/sock", c->host);
        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        snprintf(a.sun_path, sizeof(a.sun_path), "%s", sock);
        CHECK(s >= 0 && bind(s, (struct sockaddr *)&a, sizeof(a)) == 0);
        pathf(in, "%s/usr/lib/sockfile", c->rootfs);
        put_file(in, "");
        pathf(in, "%s/usr/lib/charfile", c->rootfs);
        put_file(in, "");
        open_rootfs(c, &r, 0, 0);
        CHECK_OK(gs_mount_bind(&r, src, "/usr/lib/libx.so.1", GS_NODE_FILE, GS_MNT_RO_LIB, &e), e);
        CHECK_OK(gs_mount_bind(&r, sock, "/usr/lib/sockfile", GS_NODE_SOCKET, GS_MNT_IPC, &e), e);
        CHECK_OK(gs_mount_bind(&r, "/dev/null", "/usr/lib/charfile", GS_NODE_CHAR, GS_MNT_DEVNODE, &e), e);
        pathf(in, "%s/usr/lib/libx.so.1", c->rootfs);
        CHECK(strcmp(slurp(in), "lib") == 0);
        CHECK(mounts_under(c->rootfs) == 3);
        gs_mount_rollback(&r);
        CHECK(mounts_under(c->rootfs) == 0);
        CHECK(strcmp(slurp(in), "container's own") == 0);
        pathf(in, "%s/usr/lib/sockfile", c->rootfs);
        CHECK(lexists(in));
        pathf(in, "%s/usr/lib/charfile", c->rootfs);
        CHECK(lexists(in));
        close(s);
        gs_rootfs_close(&r);
}

/* ------------------------------------------------------------------------------------------ */
/* hostile rootfs: symlinked parents */

/* Bind a host lib to `dst` and require that it lands exactly at rootfs + `expect`. */
static void bind_lands_at(struct ctx *c, const char *dst, const char *expect)
{
        struct gs_rootfs r;
        struct gs_error e = {0};
        char src[PATH_MAX], land[PATH_MAX];
        host_lib(c, src, "payload");
        open_rootfs(c, &r, 0, 0);
        CHECK_OK(gs_mount_bind(&r, src, dst, GS_NODE_FILE, GS_MNT_RO_LIB, &e), e);
        pathf(land, "%s%s", c->rootfs, expect);
        if (!is_mountpoint(land)) {
                char *m = mountpoints(c->rootfs, true, NULL);
                FAIL("%s did not land at %s; mounts under the rootfs:\n%s", dst, land, m);
        }
        CHECK(strcmp(slurp(land), "payload") == 0);
        CHECK(mounts_under(c->rootfs) == 1);
        check_no_mount_outside(c);
        gs_mount_rollback(&r);
        CHECK(mounts_under(c->rootfs) == 0);
        CHECK(!lexists(land));
        gs_rootfs_close(&r);
}

CASE(hostile_abs_symlink_parent)
{
        char p[PATH_MAX], expect[PATH_MAX];
        pathf(p, "%s/usr", c->rootfs);
        mkdirs(p, 0755);
        pathf(p, "%s/usr/lib", c->rootfs);
        CHECK(symlink(c->canary, p) == 0); /* usr/lib -> /tmp/.../canary (a host path) */
        pathf(expect, "%s/x86_64-linux-gnu/libx.so.1", c->canary);
        bind_lands_at(c, "/usr/lib/x86_64-linux-gnu/libx.so.1", expect);
}

CASE(hostile_abs_symlink_leaf_dir)
{
        char p[PATH_MAX], expect[PATH_MAX];
        pathf(p, "%s/usr/lib", c->rootfs);
        mkdirs(p, 0755);
        pathf(p, "%s/usr/lib/x86_64-linux-gnu", c->rootfs);
        CHECK(symlink(c->canary, p) == 0);
        /* the canary path exists inside the rootfs too: the mount must use that one */
        pathf(p, "%s%s", c->rootfs, c->canary);
        mkdirs(p, 0755);
        pathf(expect, "%s/libx.so.1", c->canary);
        bind_lands_at(c, "/usr/lib/x86_64-linux-gnu/libx.so.1", expect);
}

CASE(hostile_relative_chain)
{
        char p[PATH_MAX], t[PATH_MAX], expect[PATH_MAX];
        pathf(p, "%s/usr", c->rootfs);
        mkdirs(p, 0755);
        pathf(p, "%s/usr/lib", c->rootfs);
        pathf(t, "../../../../../../../../../../..%s", c->canary);
        CHECK(symlink(t, p) == 0);
        pathf(expect, "%s/x86_64-linux-gnu/libx.so.1", c->canary);
        bind_lands_at(c, "/usr/lib/x86_64-linux-gnu/libx.so.1", expect);
}

CASE(hostile_relative_to_etc)
{
        char p[PATH_MAX];
        pathf(p, "%s/usr/lib", c->rootfs);
        mkdirs(p, 0755);
        pathf(p, "%s/usr/lib/x86_64-linux-gnu", c->rootfs);
        CHECK(symlink("../../../../../../../../etc", p) == 0);
        bind_lands_at(c, "/usr/lib/x86_64-linux-gnu/libx.so.1", "/etc/libx.so.1");
}

CASE(hostile_dotdot_in_destination)
{
        char dst[PATH_MAX], expect[PATH_MAX];
        pathf(dst, "/../../../../../..%s/x.so", c->canary);
        pathf(expect, "%s/x.so", c->canary);
        bind_lands_at(c, dst, expect);
        pathf(dst, "usr/./lib//..//../../etc/passwd");
        bind_lands_at(c, dst, "/etc/passwd");
}

CASE(hostile_dev_symlink)
{
        struct gs_rootfs r;
        struct gs_error e = {0};
        char p[PATH_MAX], land[PATH_MAX];
        /* dev -> /dev: inside the rootfs that is a loop, so a clean error (or a mount inside) */
        pathf(p, "%s/dev", c->rootfs);
        CHECK(symlink("/dev", p) == 0);
        open_rootfs(c, &r, 0, 0);
        memset(&e, 0, sizeof(e));
        int rc = gs_mount_bind(&r, "/dev/null", "/dev/nvidia0", GS_NODE_CHAR, GS_MNT_DEVNODE, &e);
        if (rc == 0) {
                CHECK(mounts_under(c->rootfs) == 1);
        } else {
                CHECK(e.msg[0] != '\0');
                CHECK(mounts_under(c->rootfs) == 0);
        }
        CHECK(!lexists("/dev/nvidia0") || !is_mountpoint("/dev/nvidia0"));
        check_no_mount_outside(c);
        gs_mount_rollback(&r);
        /* dev -> the canary */
        CHECK(unlink(p) == 0);
        CHECK(symlink(c->canary, p) == 0);
        CHECK_OK(gs_mount_bind(&r, "/dev/null", "/dev/nvidia0", GS_NODE_CHAR, GS_MNT_DEVNODE, &e), e);
        pathf(land, "%s%s/nvidia0", c->rootfs, c->canary);
        CHECK(is_mountpoint(land));
        struct stat st;
        CHECK(stat(land, &st) == 0 && S_ISCHR(st.st_mode));
        check_no_mount_outside(c);
        gs_mount_rollback(&r);
        CHECK(!lexists(land) && mounts_under(c->rootfs) == 0);
        gs_rootfs_close(&r);
}

/* ------------------------------------------------------------------------------------------ */
/* hostile rootfs: the final component */

CASE(hostile_final_symlink)
{
        struct gs_rootfs r;
        struct gs_error e = {0};
        char src[PATH_MAX], p[PATH_MAX], t[PATH_MAX];
        host_lib(c, src, "payload");
        pathf(p, "%s/usr/lib/x86_64-linux-gnu", c->rootfs);
        mkdirs(p, 0755);
        pathf(p, "%s/usr/lib/x86_64-linux-gnu/libx.so.1", c->rootfs);
        CHECK(symlink("/etc/passwd", p) == 0);
        pathf(p, "%s/usr/lib/x86_64-linux-gnu/librel.so.1", c->rootfs);
        CHECK(symlink("../../../../../../../../../etc/passwd", p) == 0);
        pathf(p, "%s/usr/lib/x86_64-linux-gnu/libcanary.so.1", c->rootfs);
        pathf(t, "%s/target", c->canary);
        CHECK(symlink(t, p) == 0);
        pathf(p, "%s/usr/lib/x86_64-linux-gnu/libdangling.so.1", c->rootfs);
        pathf(t, "%s/created-by-us", c->canary); /* CVE-2024-0133: an empty file on the host */
        CHECK(symlink(t, p) == 0);
        pathf(p, "%s/dirlink", c->rootfs);
        CHECK(symlink(c->canary, p) == 0);
        pathf(p, "%s/dev", c->rootfs);
        mkdirs(p, 0755);
        pathf(p, "%s/dev/nvidia0", c->rootfs);
        CHECK(symlink("/dev/null", p) == 0);

        open_rootfs(c, &r, 0, 0);
        const char *want = "file exists (a symbolic link)";
        CHECK_FAILS(gs_mount_bind(&r, src, "/usr/lib/x86_64-linux-gnu/libx.so.1", GS_NODE_FILE, GS_MNT_RO_LIB, &e), e, want);
        CHECK(strstr(e.msg, "file creation failed: /usr/lib/x86_64-linux-gnu/libx.so.1") != NULL);
        CHECK(e.sys_errno == EEXIST);
        CHECK_FAILS(gs_mount_bind(&r, src, "/usr/lib/x86_64-linux-gnu/librel.so.1", GS_NODE_FILE, GS_MNT_RO_LIB, &e), e, want);
        CHECK_FAILS(gs_mount_bind(&r, src, "/usr/lib/x86_64-linux-gnu/libcanary.so.1", GS_NODE_FILE, GS_MNT_RO_LIB, &e), e, want);
        CHECK_FAILS(gs_mount_bind(&r, src, "/usr/lib/x86_64-linux-gnu/libdangling.so.1", GS_NODE_FILE, GS_MNT_RO_LIB, &e), e, want);
        CHECK_FAILS(gs_mount_bind(&r, c->host, "/dirlink", GS_NODE_DIR, GS_MNT_IPC, &e), e, want);
        CHECK_FAILS(gs_mount_bind(&r, "/dev/null", "/dev/nvidia0", GS_NODE_CHAR, GS_MNT_DEVNODE, &e), e, want);
        CHECK_FAILS(gs_mount_tmpfs(&r, "/dirlink", "mode=0555", 0, &e), e, want);
        CHECK_FAILS(gs_rootfs_write_file(&r, "/usr/lib/x86_64-linux-gnu/libdangling.so.1", "x", 1, 0644, &e), e, want);
        CHECK_FAILS(gs_rootfs_write_file(&r, "/usr/lib/x86_64-linux-gnu/libcanary.so.1", "x", 1, 0644, &e), e, want);
        CHECK(!lexists(t));
        CHECK(mounts_under(c->rootfs) == 0);
        CHECK(!is_mountpoint("/etc/passwd"));
        /* the links are the container's: left alone */
        pathf(p, "%s/usr/lib/x86_64-linux-gnu/libx.so.1", c->rootfs);
        char buf[64] = {0};
        CHECK(readlink(p, buf, sizeof(buf) - 1) > 0 && strcmp(buf, "/etc/passwd") == 0);
        gs_mount_rollback(&r);
        gs_rootfs_close(&r);
}

CASE(wrong_type_destination)
{
        struct gs_rootfs r;
        struct gs_error e = {0};
        char src[PATH_MAX], p[PATH_MAX];
        host_lib(c, src, "payload");
        pathf(p, "%s/usr/lib/x86_64-linux-gnu/libx.so.1", c->rootfs); /* a directory */
        mkdirs(p, 0755);
        pathf(p, "%s/opt", c->rootfs); /* opt/mps: a file where a directory is expected */
        mkdirs(p, 0755);
        pathf(p, "%s/opt/mps", c->rootfs);
        put_file(p, "");
        pathf(p, "%s/lib", c->rootfs); /* a parent component that is a file */
        put_file(p, "");
        pathf(p, "%s/fifo", c->rootfs);
        CHECK(mkfifo(p, 0600) == 0);
        open_rootfs(c, &r, 0, 0);
        CHECK_FAILS(gs_mount_bind(&r, src, "/usr/lib/x86_64-linux-gnu/libx.so.1", GS_NODE_FILE, GS_MNT_RO_LIB, &e), e,
                    "file creation failed: /usr/lib/x86_64-linux-gnu/libx.so.1: file exists (a directory, expected a regular file)");
        CHECK_FAILS(gs_mount_bind(&r, c->host, "/opt/mps", GS_NODE_DIR, GS_MNT_IPC, &e), e,
                    "file exists (a regular file, expected a directory)");
        CHECK_FAILS(gs_mount_bind(&r, src, "/lib/libx.so.1", GS_NODE_FILE, GS_MNT_RO_LIB, &e), e, "file creation failed");
        CHECK_FAILS(gs_mount_bind(&r, src, "/fifo", GS_NODE_FILE, GS_MNT_RO_LIB, &e), e, "(a fifo, expected a regular file)");
        CHECK_FAILS(gs_mount_bind(&r, "/dev/null", "/fifo", GS_NODE_CHAR, GS_MNT_DEVNODE, &e), e, "(a fifo");
        CHECK_FAILS(gs_mount_tmpfs(&r, "/opt/mps", NULL, 0, &e), e, "file exists (a regular file, expected a directory)");
        CHECK(mounts_under(c->rootfs) == 0);
        gs_mount_rollback(&r);
        CHECK(lexists(p));
        gs_rootfs_close(&r);
}

/* ------------------------------------------------------------------------------------------ */
/* sources */

CASE(bad_sources)
{
        struct gs_rootfs r;
        struct gs_error e = {0};
        char src[PATH_MAX], link[PATH_MAX], dir[PATH_MAX];
        host_lib(c, src, "payload");
        pathf(link, "%s/liblink.so", c->host);
        CHECK(symlink(src, link) == 0);
        pathf(dir, "%s/adir", c->host);
        mkdirs(dir, 0755);
        open_rootfs(c, &r, 0, 0);
        CHECK_FAILS(gs_mount_bind(&r, link, "/usr/lib/liblink.so", GS_NODE_FILE, GS_MNT_RO_LIB, &e), e,
                    "unexpected source file mode");
        CHECK(strstr(e.msg, "a symbolic link") != NULL);
        CHECK_FAILS(gs_mount_bind(&r, dir, "/usr/lib/adir", GS_NODE_FILE, GS_MNT_RO_LIB, &e), e,
                    "unexpected source file mode: ");
        CHECK(strstr(e.msg, "a directory, expected a regular file") != NULL);
        CHECK_FAILS(gs_mount_bind(&r, src, "/usr/lib/d", GS_NODE_DIR, GS_MNT_IPC, &e), e, "unexpected source file mode");
        CHECK_FAILS(gs_mount_bind(&r, "/dev/null", "/usr/lib/n", GS_NODE_FILE, GS_MNT_RO_LIB, &e), e,
                    "a character device, expected a regular file");
        CHECK_FAILS(gs_mount_bind(&r, src, "/dev/x", GS_NODE_CHAR, GS_MNT_DEVNODE, &e), e, "expected a character device");
        CHECK_FAILS(gs_mount_bind(&r, src, "/run/s", GS_NODE_SOCKET, GS_MNT_IPC, &e), e, "expected a socket");
        pathf(link, "%s/missing.so", c->host);
        CHECK_FAILS(gs_mount_bind(&r, link, "/usr/lib/missing.so", GS_NODE_FILE, GS_MNT_RO_LIB, &e), e, "invalid source");
        CHECK(e.sys_errno == ENOENT);
        CHECK_FAILS(gs_mount_bind(&r, "host/libx.so.1", "/usr/lib/x", GS_NODE_FILE, GS_MNT_RO_LIB, &e), e,
                    "not an absolute path");
        /* nothing was created for any of them */
        char p[PATH_MAX];
        pathf(p, "%s/usr", c->rootfs);
        CHECK(!lexists(p));
        CHECK(mounts_under(c->rootfs) == 0);
        gs_mount_rollback(&r);
        gs_rootfs_close(&r);
}

CASE(source_inside_rootfs)
{
        struct gs_rootfs r;
        struct gs_error e = {0};
        char in[PATH_MAX], p[PATH_MAX], alias[PATH_MAX];
        pathf(p, "%s/usr/lib", c->rootfs);
        mkdirs(p, 0755);
        pathf(in, "%s/usr/lib/libin.so", c->rootfs);
        put_file(in, "from the image");
        open_rootfs(c, &r, 0, 0);
        const char *want = "inside the container rootfs";
        CHECK_FAILS(gs_mount_bind(&r, in, "/usr/lib/libout.so", GS_NODE_FILE, GS_MNT_RO_LIB, &e), e, want);
        CHECK_FAILS(gs_mount_bind(&r, c->rootfs, "/mnt/root", GS_NODE_DIR, GS_MNT_IPC, &e), e, want);
        pathf(p, "%s/usr", c->rootfs);
        CHECK_FAILS(gs_mount_bind(&r, p, "/mnt/usr", GS_NODE_DIR, GS_MNT_IPC, &e), e, want);
        pathf(p, "%s/usr/lib/..", c->rootfs);
        CHECK_FAILS(gs_mount_bind(&r, p, "/mnt/usr", GS_NODE_DIR, GS_MNT_IPC, &e), e, want);
        /* through a host symlink to a directory of the rootfs */
        pathf(p, "%s/into", c->host);
        pathf(alias, "%s/usr", c->rootfs);
        CHECK(symlink(alias, p) == 0);
        pathf(p, "%s/into/lib/libin.so", c->host);
        CHECK_FAILS(gs_mount_bind(&r, p, "/usr/lib/libout.so", GS_NODE_FILE, GS_MNT_RO_LIB, &e), e, want);
        /* through a bind mount of the rootfs elsewhere on the host */
        pathf(alias, "%s/alias", c->host);
        mkdirs(alias, 0755);
        CHECK(mount(c->rootfs, alias, NULL, MS_BIND, NULL) == 0);
        pathf(p, "%s/usr/lib/libin.so", alias);
        CHECK_FAILS(gs_mount_bind(&r, p, "/usr/lib/libout.so", GS_NODE_FILE, GS_MNT_RO_LIB, &e), e, want);
        CHECK(umount2(alias, MNT_DETACH) == 0);
        /* the rootfs itself, mounted somewhere: a tmpfs rootfs, source inside it */
        CHECK(mounts_under(c->rootfs) == 0);
        pathf(p, "%s/mnt", c->rootfs);
        CHECK(!lexists(p));
        pathf(p, "%s/usr/lib/libout.so", c->rootfs);
        CHECK(!lexists(p));
        gs_mount_rollback(&r);
        gs_rootfs_close(&r);

        /* a rootfs that is a mount of its own (as overlay rootfses are) */
        char rootfs2[PATH_MAX];
        pathf(rootfs2, "%s/rootfs/sub", c->base);
        mkdirs(rootfs2, 0755);
        CHECK(mount("tmpfs", rootfs2, "tmpfs", 0, "mode=0755") == 0);
        pathf(p, "%s/f", rootfs2);
        put_file(p, "x");
        CHECK_OK(gs_rootfs_open(&r, rootfs2, 0, 0, &e), e);
        CHECK_FAILS(gs_mount_bind(&r, p, "/g", GS_NODE_FILE, GS_MNT_RO_LIB, &e), e, want);
        /* and a host file outside it is fine */
        char src[PATH_MAX];
        host_lib(c, src, "ok");
        CHECK_OK(gs_mount_bind(&r, src, "/g", GS_NODE_FILE, GS_MNT_RO_LIB, &e), e);
        gs_mount_rollback(&r);
        gs_rootfs_close(&r);
        CHECK(umount2(rootfs2, MNT_DETACH) == 0);
}

/* ------------------------------------------------------------------------------------------ */
/* swaps while mounting */

struct swapper {
        char dir[PATH_MAX];
        const char *a, *b;
        atomic_bool stop;
        unsigned long swaps;
};

static void *swap_loop(void *arg)
{
        struct swapper *s = arg;
        int dfd = open(s->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return NULL;
        while (!atomic_load(&s->stop)) {
                if (renameat2(dfd, s->a, dfd, s->b, RENAME_EXCHANGE) == 0)
                        s->swaps++;
        }
        close(dfd);
        return NULL;
}

static void race(struct ctx *c, struct swapper *s, const char *dst, int iterations)
{
        struct gs_rootfs r;
        struct gs_error e = {0};
        char src[PATH_MAX];
        host_lib(c, src, "payload");
        open_rootfs(c, &r, 0, 0);
        pthread_t th;
        atomic_store(&s->stop, false);
        CHECK(pthread_create(&th, NULL, swap_loop, s) == 0);
        int ok = 0, failed = 0;
        for (int i = 0; i < iterations; i++) {
                memset(&e, 0, sizeof(e));
                if (gs_mount_bind(&r, src, dst, GS_NODE_FILE, GS_MNT_RO_LIB, &e) == 0) {
                        ok++;
                        CHECK(mounts_under(c->rootfs) == 1);
                } else {
                        if (failed++ < 3)
                                printf("  race refusal: %s\n", e.msg);
                        CHECK(e.msg[0] != '\0');
                        CHECK(mounts_under(c->rootfs) == 0);
                }
                check_no_mount_outside(c);
                char p[PATH_MAX], l[1024];
                listing(c->canary, l, sizeof(l));
                if (strcmp(l, "target ") != 0)
                        FAIL("canary changed: %s", l);
                pathf(p, "%s/target", c->canary);
                CHECK(strcmp(slurp(p), "canary-content") == 0);
                gs_mount_rollback(&r);
                CHECK(mounts_under(c->rootfs) == 0);
        }
        atomic_store(&s->stop, true);
        pthread_join(th, NULL);
        printf("  race on %s: %d mounted (inside the rootfs), %d refused, %lu swaps\n", dst, ok, failed, s->swaps);
        gs_rootfs_close(&r);
}

CASE(race_parent_swap)
{
        static struct swapper s;
        char p[PATH_MAX];
        pathf(s.dir, "%s/usr/lib", c->rootfs);
        pathf(p, "%s/swap", s.dir);
        mkdirs(p, 0755);
        pathf(p, "%s/swap.alt", s.dir);
        CHECK(symlink(c->canary, p) == 0);
        s.a = "swap";
        s.b = "swap.alt";
        race(c, &s, "/usr/lib/swap/libx.so.1", 200);
        /* a relative escape as the alternative (the link is under either name after the swaps) */
        struct stat st;
        CHECK(lstat(p, &st) == 0);
        if (!S_ISLNK(st.st_mode))
                pathf(p, "%s/swap", s.dir);
        CHECK(unlink(p) == 0);
        char t[PATH_MAX];
        pathf(t, "../../../../../../../../../..%s", c->canary);
        CHECK(symlink(t, p) == 0);
        race(c, &s, "/usr/lib/swap/libx.so.1", 200);
}

CASE(race_final_swap)
{
        static struct swapper s;
        char p[PATH_MAX], t[PATH_MAX];
        pathf(s.dir, "%s/usr/lib", c->rootfs);
        mkdirs(s.dir, 0755);
        pathf(p, "%s/libx.so.1", s.dir);
        put_file(p, "");
        pathf(p, "%s/libx.so.1.alt", s.dir);
        pathf(t, "%s/target", c->canary);
        CHECK(symlink(t, p) == 0);
        s.a = "libx.so.1";
        s.b = "libx.so.1.alt";
        race(c, &s, "/usr/lib/libx.so.1", 200);
}

/* ------------------------------------------------------------------------------------------ */
/* journal */

CASE(rollback)
{
        struct gs_rootfs r;
        struct gs_error e = {0};
        char src[PATH_MAX], p[PATH_MAX], mps[PATH_MAX];
        host_lib(c, src, "payload");
        pathf(mps, "%s/mps", c->host);
        mkdirs(mps, 0755);
        /* pre-existing */
        pathf(p, "%s/usr/lib/x86_64-linux-gnu", c->rootfs);
        mkdirs(p, 0755);
        pathf(p, "%s/usr/lib/x86_64-linux-gnu/pre.so", c->rootfs);
        put_file(p, "pre");
        pathf(p, "%s/dev", c->rootfs);
        mkdirs(p, 0755);
        int fds = fd_count();
        open_rootfs(c, &r, 0, 0);
        CHECK_OK(gs_mount_bind(&r, src, "/usr/lib/x86_64-linux-gnu/libx.so.1", GS_NODE_FILE, GS_MNT_RO_LIB, &e), e);
        CHECK_OK(gs_mount_bind(&r, src, "/usr/lib/x86_64-linux-gnu/pre.so", GS_NODE_FILE, GS_MNT_RO_LIB, &e), e);
        CHECK_OK(gs_rootfs_symlink(&r, "libx.so.1", "/usr/lib/x86_64-linux-gnu/libx.so", &e), e);
        CHECK_OK(gs_mount_bind(&r, "/dev/null", "/dev/nvidia0", GS_NODE_CHAR, GS_MNT_DEVNODE, &e), e);
        CHECK_OK(gs_mount_bind(&r, mps, "/new/deep/mps", GS_NODE_DIR, GS_MNT_IPC, &e), e);
        CHECK_OK(gs_mount_tmpfs(&r, "/proc/driver/nvidia", "mode=0555", MS_NODEV | MS_NOSUID | MS_NOEXEC, &e), e);
        CHECK_OK(gs_rootfs_write_file(&r, "/proc/driver/nvidia/params", "ModifyDeviceFiles: 0\n", 21, 0444, &e), e);
        CHECK_OK(gs_mount_bind(&r, "/dev/null", "/proc/driver/nvidia/gpus/0000:01:00.0/dev", GS_NODE_CHAR, GS_MNT_PROC, &e), e);
        /* stacked on an earlier mount of ours: undone first */
        CHECK_OK(gs_mount_bind(&r, mps, "/new/deep/mps", GS_NODE_DIR, GS_MNT_IPC | MS_RDONLY, &e), e);
        CHECK(mounts_under(c->rootfs) == 7);
        int fds_mid = fd_count();
        CHECK(fds_mid == fds + 1 + 7); /* the rootfs fd and one fd per mount */

        /* a failing call undoes its own steps (here: /brand, /brand/new, /brand/new/x) */
        CHECK_FAILS(gs_mount_tmpfs(&r, "/brand/new/x", "no_such_tmpfs_option=1", 0, &e), e, "mount operation failed: tmpfs on /brand/new/x");
        pathf(p, "%s/brand", c->rootfs);
        CHECK(!lexists(p));
        CHECK(mounts_under(c->rootfs) == 7 && fd_count() == fds_mid);

        gs_mount_rollback(&r);
        CHECK(mounts_under(c->rootfs) == 0);
        const char *gone[] = {"/usr/lib/x86_64-linux-gnu/libx.so.1", "/usr/lib/x86_64-linux-gnu/libx.so", "/dev/nvidia0",
                              "/new", "/proc"};
        for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++) {
                pathf(p, "%s%s", c->rootfs, gone[i]);
                if (lexists(p))
                        FAIL("%s survived the rollback", gone[i]);
        }
        pathf(p, "%s/usr/lib/x86_64-linux-gnu/pre.so", c->rootfs);
        CHECK(strcmp(slurp(p), "pre") == 0);
        pathf(p, "%s/dev", c->rootfs);
        CHECK(lexists(p));
        CHECK(fd_count() == fds + 1);
        gs_mount_rollback(&r); /* twice: nothing left to do */
        gs_rootfs_close(&r);
        CHECK(fd_count() == fds);
}

/* Rollback removes only what is still the node we created. */
CASE(rollback_spares_replaced_nodes)
{
        struct gs_rootfs r;
        struct gs_error e = {0};
        char p[PATH_MAX];
        open_rootfs(c, &r, 0, 0);
        CHECK_OK(gs_rootfs_write_file(&r, "/etc/a.conf", "a", 1, 0644, &e), e);
        pathf(p, "%s/etc/a.conf", c->rootfs);
        usleep(20000); /* a later birth time too, where the filesystem has no inode generation handle */
        CHECK(unlink(p) == 0);
        put_file(p, "replaced by the container");
        gs_mount_rollback(&r);
        CHECK(strcmp(slurp(p), "replaced by the container") == 0);
        gs_rootfs_close(&r);
}

/* ------------------------------------------------------------------------------------------ */
/* owner */

static int chown_one(const char *p, const struct stat *st, int type, struct FTW *ftw)
{
        (void)st;
        (void)type;
        (void)ftw;
        return lchown(p, 1000, 1000);
}

CASE(owner)
{
        struct gs_rootfs r;
        struct gs_error e = {0};
        char src[PATH_MAX], p[PATH_MAX];
        struct stat st;
        host_lib(c, src, "payload");
        pathf(p, "%s/usr/lib", c->rootfs);
        mkdirs(p, 0755);
        CHECK(nftw(c->rootfs, chown_one, 16, FTW_PHYS) == 0); /* a userns-style rootfs */
        pathf(p, "%s/rootonly", c->rootfs);
        mkdirs(p, 0755);
        open_rootfs(c, &r, 1000, 1000);
        CHECK_OK(gs_mount_bind(&r, src, "/usr/lib/x86_64-linux-gnu/libx.so.1", GS_NODE_FILE, GS_MNT_RO_LIB, &e), e);
        CHECK_OK(gs_rootfs_write_file(&r, "/etc/cfg/a.conf", "a", 1, 0640, &e), e);
        CHECK_OK(gs_rootfs_symlink(&r, "libx.so.1", "/usr/lib/x86_64-linux-gnu/libx.so", &e), e);
        CHECK(setfsuid((uid_t)-1) == 0 && setfsgid((gid_t)-1) == 0);
        const char *mine[] = {"/usr/lib/x86_64-linux-gnu", "/etc", "/etc/cfg", "/etc/cfg/a.conf",
                              "/usr/lib/x86_64-linux-gnu/libx.so"};
        for (size_t i = 0; i < sizeof(mine) / sizeof(mine[0]); i++) {
                pathf(p, "%s%s", c->rootfs, mine[i]);
                CHECK(lstat(p, &st) == 0);
                if (st.st_uid != 1000 || st.st_gid != 1000)
                        FAIL("%s is owned by %u:%u", mine[i], st.st_uid, st.st_gid);
        }
        pathf(p, "%s/etc/cfg/a.conf", c->rootfs);
        CHECK(lstat(p, &st) == 0 && (st.st_mode & 0777) == 0640);
        /* the bind target underneath the mount */
        pathf(p, "%s/usr/lib/x86_64-linux-gnu/libx.so.1", c->rootfs);
        CHECK(stat(p, &st) == 0 && st.st_uid == 0); /* the host file, through the mount */
        gs_mount_commit(&r);
        CHECK(umount2(p, MNT_DETACH) == 0);
        CHECK(lstat(p, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 1000 && st.st_gid == 1000);
        /* the owner cannot write a root-owned directory: a clean EACCES, nothing created */
        CHECK_FAILS(gs_rootfs_write_file(&r, "/rootonly/x", "x", 1, 0644, &e), e, "file creation failed: /rootonly/x");
        CHECK(e.sys_errno == EACCES);
        CHECK_FAILS(gs_mount_bind(&r, src, "/rootonly/sub/libx.so.1", GS_NODE_FILE, GS_MNT_RO_LIB, &e), e, "Permission denied");
        pathf(p, "%s/rootonly", c->rootfs);
        char l[256];
        listing(p, l, sizeof(l));
        CHECK(strcmp(l, "") == 0);
        CHECK(setfsuid((uid_t)-1) == 0 && setfsgid((gid_t)-1) == 0);
        gs_mount_rollback(&r);
        gs_rootfs_close(&r);
}

/* ------------------------------------------------------------------------------------------ */
/* tmpfs, files, symlinks, exists */

CASE(tmpfs_files_links)
{
        struct gs_rootfs r;
        struct gs_error e = {0};
        char p[PATH_MAX], buf[PATH_MAX];
        struct stat st;
        struct statfs sfs;
        open_rootfs(c, &r, 0, 0);
        CHECK_OK(gs_mount_tmpfs(&r, "/proc/driver/nvidia", "mode=0555", MS_NODEV | MS_NOSUID | MS_NOEXEC, &e), e);
        pathf(p, "%s/proc/driver/nvidia", c->rootfs);
        CHECK(statfs(p, &sfs) == 0 && sfs.f_type == TMPFS_MAGIC);
        CHECK(stat(p, &st) == 0 && (st.st_mode & 07777) == 0555);
        CHECK((vfs_flags(p) & (ST_NODEV | ST_NOSUID | ST_NOEXEC)) == (ST_NODEV | ST_NOSUID | ST_NOEXEC));
        CHECK_OK(gs_rootfs_write_file(&r, "/proc/driver/nvidia/params", "ModifyDeviceFiles: 0\n", 21, 0444, &e), e);
        CHECK_OK(gs_rootfs_write_file(&r, "/proc/driver/nvidia/empty", NULL, 0, 0444, &e), e);
        pathf(p, "%s/proc/driver/nvidia/params", c->rootfs);
        CHECK(strcmp(slurp(p), "ModifyDeviceFiles: 0\n") == 0);
        CHECK(stat(p, &st) == 0 && (st.st_mode & 07777) == 0444);
        CHECK_FAILS(gs_rootfs_write_file(&r, "/proc/driver/nvidia/params", "x", 1, 0444, &e), e,
                    "file creation failed: /proc/driver/nvidia/params: file exists");
        CHECK(strcmp(slurp(p), "ModifyDeviceFiles: 0\n") == 0);
        CHECK(gs_rootfs_exists(&r, "/proc/driver/nvidia/params"));
        CHECK(gs_rootfs_exists(&r, "proc/driver/nvidia"));
        CHECK(!gs_rootfs_exists(&r, "/proc/driver/nvidia/version"));
        /* tmpfs onto an existing directory, ro */
        pathf(p, "%s/etc/nvidia", c->rootfs);
        mkdirs(p, 0755);
        CHECK_OK(gs_mount_tmpfs(&r, "/etc/nvidia", NULL, MS_RDONLY | MS_NOSUID, &e), e);
        CHECK((vfs_flags(p) & (ST_RDONLY | ST_NOSUID)) == (ST_RDONLY | ST_NOSUID));

        /* symlinks: created, idempotent, foreign ones left alone */
        CHECK_OK(gs_rootfs_symlink(&r, "libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so", &e), e);
        pathf(p, "%s/usr/lib/x86_64-linux-gnu/libcuda.so", c->rootfs);
        memset(buf, 0, sizeof(buf));
        CHECK(readlink(p, buf, sizeof(buf) - 1) > 0 && strcmp(buf, "libcuda.so.1") == 0);
        CHECK_OK(gs_rootfs_symlink(&r, "libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so", &e), e);
        CHECK_OK(gs_rootfs_symlink(&r, "libcuda.so.2", "/usr/lib/x86_64-linux-gnu/libcuda.so", &e), e);
        memset(buf, 0, sizeof(buf));
        CHECK(readlink(p, buf, sizeof(buf) - 1) > 0 && strcmp(buf, "libcuda.so.1") == 0);
        pathf(p, "%s/usr/lib/x86_64-linux-gnu/libfoo.so", c->rootfs);
        put_file(p, "real");
        CHECK_OK(gs_rootfs_symlink(&r, "libfoo.so.1", "/usr/lib/x86_64-linux-gnu/libfoo.so", &e), e);
        CHECK(strcmp(slurp(p), "real") == 0);
        /* a symlink whose parent is a symlink to the host lands inside */
        pathf(p, "%s/hostlink", c->rootfs);
        CHECK(symlink(c->canary, p) == 0);
        CHECK_OK(gs_rootfs_symlink(&r, "/etc/shadow", "/hostlink/evil", &e), e);
        pathf(p, "%s%s/evil", c->rootfs, c->canary);
        CHECK(lstat(p, &st) == 0 && S_ISLNK(st.st_mode));
        CHECK_OK(gs_rootfs_write_file(&r, "/hostlink/evil2", "x", 1, 0644, &e), e);
        pathf(p, "%s%s/evil2", c->rootfs, c->canary);
        CHECK(lexists(p));

        /* exists() resolves inside the rootfs: /etc/passwd exists on the host, not here */
        pathf(p, "%s/escape", c->rootfs);
        CHECK(symlink("/etc/passwd", p) == 0);
        CHECK(!gs_rootfs_exists(&r, "/escape"));
        CHECK(!gs_rootfs_exists(&r, "../../../../etc/passwd"));

        gs_mount_rollback(&r);
        CHECK(mounts_under(c->rootfs) == 0);
        pathf(p, "%s/proc", c->rootfs);
        CHECK(!lexists(p));
        pathf(p, "%s/etc/nvidia", c->rootfs);
        CHECK(lexists(p));
        pathf(p, "%s/usr/lib/x86_64-linux-gnu/libcuda.so", c->rootfs);
        CHECK(!lexists(p));
        pathf(p, "%s/usr/lib/x86_64-linux-gnu/libfoo.so", c->rootfs);
        CHECK(lexists(p));
        gs_rootfs_close(&r);
}

/* A procfs inside the rootfs: its magic links (/proc/self/root, /proc/self/cwd) are never followed. */
CASE(magic_links)
{
        struct gs_rootfs r;
        struct gs_error e = {0};
        char src[PATH_MAX], p[PATH_MAX];
        host_lib(c, src, "payload");
        pathf(p, "%s/proc", c->rootfs);
        mkdirs(p, 0755);
        CHECK(mount("proc", p, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) == 0);
        open_rootfs(c, &r, 0, 0);
        CHECK(gs_rootfs_exists(&r, "/proc/self"));
        CHECK(!gs_rootfs_exists(&r, "/proc/self/root/etc/passwd"));
        CHECK(!gs_rootfs_exists(&r, "/proc/self/cwd"));
        /* Either refused, or (the component walk reads a magic link's text, "/", as an in-root
         * absolute link) confined to the rootfs. */
        const char *dsts[] = {"/proc/self/root/tmp/libx.so.1", "/proc/self/root/nonexistent/libx.so.1",
                              "/proc/self/cwd/libx.so.1", "/proc/1/root/etc/libx.so.1"};
        for (size_t i = 0; i < sizeof(dsts) / sizeof(dsts[0]); i++) {
                memset(&e, 0, sizeof(e));
                if (gs_mount_bind(&r, src, dsts[i], GS_NODE_FILE, GS_MNT_RO_LIB, &e) == 0) {
                        printf("  %s: mounted inside the rootfs\n", dsts[i]);
                        CHECK(mounts_under(c->rootfs) == 2);
                } else {
                        printf("  %s: refused: %s\n", dsts[i], e.msg);
                        CHECK(e.msg[0] != '\0' && mounts_under(c->rootfs) == 1);
                }
                check_no_mount_outside(c);
                gs_mount_rollback(&r);
        }
        memset(&e, 0, sizeof(e));
        if (gs_rootfs_write_file(&r, "/proc/self/cwd/x", "x", 1, 0644, &e) == 0) {
                char cwd[PATH_MAX];
                CHECK(getcwd(cwd, sizeof(cwd)) != NULL);
                pathf(p, "%s%s/x", c->rootfs, strcmp(cwd, "/") == 0 ? "" : cwd);
                CHECK(lexists(p));
                pathf(p, "%s/x", cwd);
                CHECK(!lexists(p));
        }
        CHECK(!lexists("/tmp/libx.so.1") && !lexists("/x") && !lexists("/etc/libx.so.1"));
        CHECK(mounts_under(c->rootfs) == 1);
        gs_mount_rollback(&r);
        gs_rootfs_close(&r);
        pathf(p, "%s/proc", c->rootfs);
        CHECK(umount2(p, MNT_DETACH) == 0);
}

/* ------------------------------------------------------------------------------------------ */
/* arguments */

CASE(bad_arguments)
{
        struct gs_rootfs r;
        struct gs_error e = {0};
        char src[PATH_MAX], p[PATH_MAX];
        host_lib(c, src, "payload");
        pathf(p, "%s/nope", c->base);
        CHECK_FAILS(gs_rootfs_open(&r, p, 0, 0, &e), e, "open rootfs");
        CHECK(e.code == GS_ENOTFOUND && r.fd == -1);
        CHECK_FAILS(gs_rootfs_open(&r, src, 0, 0, &e), e, "Not a directory");
        CHECK_FAILS(gs_rootfs_open(&r, NULL, 0, 0, &e), e, NULL);
        CHECK_FAILS(gs_rootfs_open(NULL, c->rootfs, 0, 0, &e), e, NULL);
        CHECK_FAILS(gs_mount_bind(&r, src, "/x", GS_NODE_FILE, 0, &e), e, "invalid argument");
        CHECK_FAILS(gs_mount_bind(NULL, src, "/x", GS_NODE_FILE, 0, &e), e, "invalid argument");
        gs_rootfs_close(&r);
        gs_rootfs_close(NULL);
        gs_mount_rollback(NULL);
        gs_mount_commit(NULL);

        open_rootfs(c, &r, 0, 0);
        CHECK_FAILS(gs_mount_bind(&r, NULL, "/x", GS_NODE_FILE, 0, &e), e, "invalid argument");
        CHECK_FAILS(gs_mount_bind(&r, src, NULL, GS_NODE_FILE, 0, &e), e, "invalid argument");
        CHECK_FAILS(gs_mount_bind(&r, src, "/x", (enum gs_node_kind)42, 0, &e), e, "invalid node kind");
        CHECK_FAILS(gs_mount_bind(&r, src, "/x", GS_NODE_FILE, MS_REC, &e), e, "unsupported mount flags");
        CHECK_FAILS(gs_mount_bind(&r, src, "", GS_NODE_FILE, 0, &e), e, "invalid destination path");
        CHECK_FAILS(gs_mount_bind(&r, src, "/", GS_NODE_FILE, 0, &e), e, "invalid destination path");
        CHECK_FAILS(gs_mount_bind(&r, src, "/usr/..", GS_NODE_FILE, 0, &e), e, "invalid destination path");
        CHECK_FAILS(gs_mount_bind(&r, src, "/usr/.", GS_NODE_FILE, 0, &e), e, "invalid destination path");
        CHECK_FAILS(gs_mount_tmpfs(&r, NULL, NULL, 0, &e), e, "invalid argument");
        CHECK_FAILS(gs_mount_tmpfs(&r, "/t", NULL, MS_BIND | MS_REC, &e), e, "unsupported mount flags");
        CHECK_FAILS(gs_rootfs_write_file(&r, "/f", NULL, 3, 0644, &e), e, "invalid argument");
        CHECK_FAILS(gs_rootfs_symlink(&r, "", "/l", &e), e, "invalid argument");
        CHECK_FAILS(gs_rootfs_symlink(&r, "t", "/", &e), e, "invalid destination path");
        char longp[PATH_MAX + 16];
        memset(longp, 'a', sizeof(longp) - 1);
        longp[0] = '/';
        longp[sizeof(longp) - 1] = '\0';
        CHECK_FAILS(gs_mount_bind(&r, src, longp, GS_NODE_FILE, 0, &e), e, NULL);
        CHECK_FAILS(gs_mount_bind(&r, longp, "/x", GS_NODE_FILE, 0, &e), e, NULL);
        char longc[300 + 8];
        memcpy(longc, "/a/", 3);
        memset(longc + 3, 'b', 300);
        memcpy(longc + 303, "/f", 3);
        CHECK_FAILS(gs_rootfs_write_file(&r, longc, "x", 1, 0644, &e), e, NULL);
        CHECK(!gs_rootfs_exists(&r, NULL));
        CHECK(!gs_rootfs_exists(NULL, "/"));
        CHECK(gs_rootfs_exists(&r, "/"));
        /* a symlink loop in the rootfs */
        pathf(p, "%s/loop", c->rootfs);
        CHECK(symlink("/loop", p) == 0);
        CHECK_FAILS(gs_mount_bind(&r, src, "/loop/x", GS_NODE_FILE, 0, &e), e, NULL);
        CHECK(mounts_under(c->rootfs) == 0);
        pathf(p, "%s/a", c->rootfs);
        CHECK(!lexists(p));
        gs_mount_rollback(&r);
        gs_rootfs_close(&r);
        gs_rootfs_close(&r); /* twice */
}

/* ------------------------------------------------------------------------------------------ */

#define BOTH(name)                                                                                 \
        {#name, test_##name, NULL, NULL, &legacy_off}, {#name "_legacy", test_##name, NULL, NULL, &legacy_on}
#define ONE(name) {#name, test_##name, NULL, NULL, &legacy_off}

int main(void)
{
        if (geteuid() != 0) {
                printf("skipped: needs root\n");
                return 77;
        }
        /* mount privileges: try a private namespace in a throwaway child */
        pid_t pid = fork();
        if (pid == 0)
                _exit(unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0 ? 0 : 1);
        int st = 0;
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                printf("skipped: cannot create a mount namespace\n");
                return 77;
        }

        const struct CMUnitTest tests[] = {
                BOTH(bind_file),
                BOTH(bind_char),
                BOTH(bind_socket),
                BOTH(bind_dir),
                BOTH(existing_targets),
                BOTH(hostile_abs_symlink_parent),
                BOTH(hostile_abs_symlink_leaf_dir),
                BOTH(hostile_relative_chain),
                BOTH(hostile_relative_to_etc),
                BOTH(hostile_dotdot_in_destination),
                BOTH(hostile_dev_symlink),
                BOTH(hostile_final_symlink),
                ONE(wrong_type_destination),
                ONE(bad_sources),
                ONE(source_inside_rootfs),
                BOTH(race_parent_swap),
                BOTH(race_final_swap),
                BOTH(rollback),
                ONE(rollback_spares_replaced_nodes),
                BOTH(owner),
                ONE(tmpfs_files_links),
                BOTH(magic_links),
                ONE(bad_arguments),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
