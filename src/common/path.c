#include "common/path.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"

int gs_path_join(char *out, size_t outlen, const char *a, const char *b, struct gs_error *err)
{
        size_t la = strlen(a);
        while (la > 0 && a[la - 1] == '/')
                la--;
        while (*b == '/')
                b++;
        int n = snprintf(out, outlen, "%.*s/%s", (int)la, a, b);
        if (n < 0 || (size_t)n >= outlen)
                return gs_error_set(err, GS_EINVAL, "path too long: %s/%s", a, b);
        return 0;
}

/* Append one component to the canonical path in out (which is "/" or "/x/y"). */
static int push_component(char *out, size_t outlen, size_t *len, const char *name, size_t nlen,
                          struct gs_error *err)
{
        size_t need = *len + (*len > 1 ? 1 : 0) + nlen;
        if (need + 1 > outlen)
                return gs_error_set(err, GS_EINVAL, "path too long");
        if (*len > 1)
                out[(*len)++] = '/';
        memcpy(out + *len, name, nlen);
        *len += nlen;
        out[*len] = '\0';
        return 0;
}

static void pop_component(char *out, size_t *len)
{
        while (*len > 1 && out[*len - 1] != '/')
                (*len)--;
        if (*len > 1)
                (*len)--;
        out[*len] = '\0';
}

/*
 * The walk keeps the remaining components in `todo` (consumed from the left; symlink targets are
 * spliced in front of the remainder) and a stack of O_PATH fds, one per component of `out`, so ".."
 * pops back to an fd we opened ourselves (never the kernel's idea of the parent) and an absolute
 * link target restarts from the root fd.
 */
#define GS_MAX_DEPTH 256

struct walk {
        int fds[GS_MAX_DEPTH + 1];
        size_t depth; /* fds[0..depth] valid; fds[0] is the root */
};

static void walk_reset(struct walk *w)
{
        while (w->depth > 0)
                close(w->fds[w->depth--]);
}

int gs_path_resolve(int rootfd, const char *path, char *out, size_t outlen, bool allow_missing,
                    int *fd_out, struct gs_error *err)
{
        char todo[PATH_MAX * 2];
        char link[PATH_MAX];
        size_t len = 1;
        unsigned nlinks = 0;
        size_t missing = 0; /* components appended after the first missing one */
        struct walk w = {.depth = 0};
        int rv = -1;

        if (fd_out != NULL)
                *fd_out = -1;
        if (outlen < 2)
                return gs_error_set(err, GS_EINVAL, "path buffer too small");
        if (strlen(path) >= PATH_MAX)
                return gs_error_set(err, GS_EINVAL, "path too long: %s", path);
        snprintf(todo, sizeof(todo), "%s", path);
        out[0] = '/';
        out[1] = '\0';
        w.fds[0] = rootfd;

        char *p = todo;
        for (;;) {
                while (*p == '/')
                        p++;
                if (*p == '\0')
                        break;
                size_t nlen = strcspn(p, "/");
                char name[NAME_MAX + 1];
                if (nlen > NAME_MAX) {
                        gs_error_set(err, GS_EINVAL, "path component too long in %s", path);
                        goto out;
                }
                memcpy(name, p, nlen);
                name[nlen] = '\0';
                p += nlen;

                if (strcmp(name, ".") == 0)
                        continue;
                if (strcmp(name, "..") == 0) {
                        pop_component(out, &len);
                        if (missing > 0)
                                missing--;
                        else if (w.depth > 0)
                                close(w.fds[w.depth--]);
                        continue;
                }
                if (missing > 0) {
                        if (push_component(out, outlen, &len, name, nlen, err) < 0)
                                goto out;
                        missing++;
                        continue;
                }

                int cur = w.fds[w.depth];
                ssize_t n = readlinkat(cur, name, link, sizeof(link) - 1);
                if (n >= 0) {
                        if (++nlinks > GS_MAX_SYMLINKS) {
                                gs_error_set(err, GS_EINVAL, "too many levels of symbolic links: %s", path);
                                goto out;
                        }
                        link[n] = '\0';
                        char rest[sizeof(todo)];
                        int m = snprintf(rest, sizeof(rest), "%s/%s", link, p);
                        if (m < 0 || (size_t)m >= sizeof(todo)) {
                                gs_error_set(err, GS_EINVAL, "path too long: %s", path);
                                goto out;
                        }
                        memcpy(todo, rest, (size_t)m + 1);
                        p = todo;
                        if (link[0] == '/') {
                                walk_reset(&w);
                                out[1] = '\0';
                                len = 1;
                        }
                        continue;
                }
                int saved = errno;
                if (saved != EINVAL && saved != ENOENT) {
                        gs_error_sys(err, "%s", path);
                        goto out;
                }
                int nfd = saved == ENOENT ? -1 : openat(cur, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (nfd < 0) {
                        if (saved != ENOENT)
                                saved = errno;
                        if (saved == ENOENT && allow_missing) {
                                if (push_component(out, outlen, &len, name, nlen, err) < 0)
                                        goto out;
                                missing = 1;
                                continue;
                        }
                        errno = saved;
                        gs_error_sys(err, "%s", path);
                        if (err != NULL && saved == ENOENT)
                                err->code = GS_ENOTFOUND;
                        goto out;
                }
                if (w.depth >= GS_MAX_DEPTH) {
                        close(nfd);
                        gs_error_set(err, GS_EINVAL, "path too deep: %s", path);
                        goto out;
                }
                w.fds[++w.depth] = nfd;
                if (push_component(out, outlen, &len, name, nlen, err) < 0)
                        goto out;
        }
        if (fd_out != NULL && missing == 0) {
                if (w.depth > 0) {
                        *fd_out = w.fds[w.depth--];
                } else {
                        *fd_out = openat(rootfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
                        if (*fd_out < 0) {
                                gs_error_sys(err, "open root");
                                goto out;
                        }
                }
        }
        rv = 0;
out:
        walk_reset(&w);
        return rv;
}

int gs_open_in_root(int rootfd, const char *path, int flags, struct gs_error *err)
{
        static int have_openat2 = -1; /* -1 unknown, 0 no, 1 yes */
        if (have_openat2 != 0) {
                struct open_how how = {
                        .flags = (unsigned long long)(flags | O_CLOEXEC),
                        .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
                };
                /* A scoped lookup fails with EAGAIN when any mount or rename happened meanwhile
                 * anywhere on the system (the kernel cannot prove ".." or a jump to the root
                 * stayed inside): retry, then take the walk, which has no such limit. */
                for (int attempt = 0; attempt < 16; attempt++) {
                        long fd = syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
                        if (fd >= 0) {
                                have_openat2 = 1;
                                return (int)fd;
                        }
                        if (errno != EAGAIN)
                                break;
                }
                if (errno == ENOSYS || errno == EPERM) {
                        have_openat2 = 0; /* ENOSYS, or EPERM from a seccomp filter that hides it */
                } else if (errno != EAGAIN) {
                        int saved = errno;
                        have_openat2 = 1;
                        errno = saved;
                        gs_error_sys(err, "open %s", path);
                        if (err != NULL && saved == ENOENT)
                                err->code = GS_ENOTFOUND;
                        return -1;
                }
        }
        char canon[PATH_MAX];
        gs_autoclose int pfd = -1;
        if (gs_path_resolve(rootfd, path, canon, sizeof(canon), false, &pfd, err) < 0)
                return -1;
        char proc[64];
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
        int fd = open(proc, flags | O_CLOEXEC);
        if (fd < 0)
                return gs_error_sys(err, "open %s", path);
        return fd;
}

ssize_t gs_read_in_root(int rootfd, const char *path, char *buf, size_t len, struct gs_error *err)
{
        if (len == 0)
                return gs_error_set(err, GS_EINVAL, "no buffer for %s", path);
        gs_autoclose int fd = gs_open_in_root(rootfd, path, O_RDONLY, err);
        if (fd < 0)
                return -1;
        size_t got = 0;
        while (got + 1 < len) {
                ssize_t n = read(fd, buf + got, len - 1 - got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return gs_error_sys(err, "read %s", path);
                if (n == 0)
                        break;
                got += (size_t)n;
        }
        buf[got] = '\0';
        return (ssize_t)got;
}

DIR *gs_opendir_in_root(int rootfd, const char *path, struct gs_error *err)
{
        int fd = gs_open_in_root(rootfd, path, O_RDONLY | O_DIRECTORY, err);
        if (fd < 0)
                return NULL;
        DIR *d = fdopendir(fd);
        if (d == NULL) {
                gs_error_sys(err, "opendir %s", path);
                close(fd);
        }
        return d;
}

int gs_mkdir_p(const char *path, mode_t mode, struct gs_error *err)
{
        char buf[PATH_MAX];
        if (path == NULL || path[0] != '/')
                return gs_error_set(err, GS_EINVAL, "%s: not an absolute path", path != NULL ? path : "(null)");
        if (strlen(path) >= sizeof(buf))
                return gs_error_set(err, GS_EINVAL, "path too long: %.64s...", path);
        strcpy(buf, path);
        gs_autoclose int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return gs_error_sys(err, "open /");
        char *save = NULL;
        for (char *c = strtok_r(buf + 1, "/", &save); c != NULL; c = strtok_r(NULL, "/", &save)) {
                int upto = (int)(c - buf + (ptrdiff_t)strlen(c)); /* path up to this component */
                bool made = false;
                int nfd = openat(fd, c, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (nfd < 0 && errno == ENOENT) {
                        if (mkdirat(fd, c, mode) == 0)
                                made = true;
                        else if (errno != EEXIST)
                                return gs_error_sys(err, "cannot create %.*s", upto, path);
                        nfd = openat(fd, c, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                }
                if (nfd < 0)
                        return errno == ENOTDIR ? gs_error_set(err, GS_EINVAL, "%.*s is not a directory", upto, path)
                                                : gs_error_sys(err, "cannot open %.*s", upto, path);
                if (made && fchmod(nfd, mode) < 0) { /* the mode as asked, whatever the umask */
                        close(nfd);
                        return gs_error_sys(err, "chmod %.*s", upto, path);
                }
                close(fd);
                fd = nfd;
        }
        return gs_steal_fd(&fd);
}
