/*
 * An engine's config file, written as carefully as the engine's own files deserve: a link is
 * followed to the file it names (the link stays; the file is replaced in its own directory), the
 * backup and the new file keep the original's owner and mode from their first byte (a
 * containerd config may hold registry credentials, mode 0600), the new text is checked by a
 * caller's check (the engine itself) on the temporary file before it replaces the original, and
 * a failed step leaves the original untouched and no temporary file behind.
 */
#include "engine/engine.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"

#define MAX_FILE (4u << 20)
#define CHECK_TIMEOUT_MS 60000

/* ------------------------------------------------------------------------------------------ */
/* reading */

static char *read_fd(int fd, const char *path, const struct stat *st, struct gs_error *err)
{
        if (!S_ISREG(st->st_mode) || st->st_size > (off_t)MAX_FILE) {
                gs_error_set(err, GS_EFORMAT, "%s: not a regular file of at most 4 MiB", path);
                return NULL;
        }
        char *t = calloc(1, (size_t)st->st_size + 1);
        if (t == NULL) {
                gs_error_set(err, GS_ENOMEM, "out of memory");
                return NULL;
        }
        size_t n = 0;
        while (n < (size_t)st->st_size) {
                ssize_t r = read(fd, t + n, (size_t)st->st_size - n);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0)
                        break;
                n += (size_t)r;
        }
        t[n] = '\0';
        if (strlen(t) != n) {
                free(t);
                gs_error_set(err, GS_EFORMAT, "%s: contains a NUL byte", path);
                return NULL;
        }
        return t;
}

int gs_conffile_read(const char *path, struct gs_conffile *f, char **text, struct gs_error *err)
{
        memset(f, 0, sizeof(*f));
        *text = NULL;
        if (snprintf(f->path, sizeof(f->path), "%s", path) >= (int)sizeof(f->path))
                return gs_error_set(err, GS_EINVAL, "%s: path too long", path);
        struct stat lst;
        if (lstat(path, &lst) < 0) {
                if (errno != ENOENT)
                        return gs_error_sys(err, "cannot open %s", path);
                snprintf(f->real, sizeof(f->real), "%s", path); /* a new file */
                f->mode = 0644;
                f->uid = (uid_t)-1;
                f->gid = (gid_t)-1;
                *text = strdup("");
                return *text != NULL ? 0 : gs_error_set(err, GS_ENOMEM, "out of memory");
        }
        char real[PATH_MAX];
        if (realpath(path, real) == NULL)
                return S_ISLNK(lst.st_mode) && errno == ENOENT
                               ? gs_error_set(err, GS_ENOTFOUND, "%s is a link to a file that does not exist; "
                                                                 "create it or remove the link", path)
                               : gs_error_sys(err, "cannot resolve %s", path);
        snprintf(f->real, sizeof(f->real), "%s", real);
        f->linked = S_ISLNK(lst.st_mode);
        /* O_NONBLOCK: opening a FIFO must not hang (it is refused below) */
        gs_autoclose int fd = open(real, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0)
                return gs_error_sys(err, "cannot open %s", real);
        if ((*text = read_fd(fd, real, &st, err)) == NULL)
                return -1;
        f->exists = true;
        f->mode = st.st_mode & 07777;
        f->uid = st.st_uid;
        f->gid = st.st_gid;
        return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* writing */

/* text into fd, then the owner and mode, then fsync. */
static int fill(int fd, const char *name, const char *text, const struct gs_conffile *f, struct gs_error *err)
{
        size_t len = strlen(text), off = 0;
        while (off < len) {
                ssize_t w = write(fd, text + off, len - off);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0)
                        return gs_error_sys(err, "cannot write %s", name);
                off += (size_t)w;
        }
        if ((f->uid != (uid_t)-1 || f->gid != (gid_t)-1) && fchown(fd, f->uid, f->gid) < 0)
                return gs_error_sys(err, "cannot give %s its owner", name);
        if (fchmod(fd, f->mode) < 0)
                return gs_error_sys(err, "cannot give %s its mode", name);
        if (fsync(fd) < 0)
                return gs_error_sys(err, "cannot write %s: fsync", name);
        return 0;
}

/* <file>.<UTC time>.bak beside the file (.<n>.bak after it when that exists): created 0600 and
 * exclusively (never through a link or over another backup), then the original's owner and mode. */
static int backup(const struct gs_conffile *f, const char *old, char *out, size_t len, struct gs_error *err)
{
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        char ts[32];
        strftime(ts, sizeof(ts), "%Y%m%dT%H%M%SZ", &tm);
        gs_autoclose int fd = -1;
        for (unsigned i = 0; fd < 0 && i < 100; i++) {
                int n = i == 0 ? snprintf(out, len, "%s.%s.bak", f->real, ts) : snprintf(out, len, "%s.%s.%u.bak", f->real, ts, i);
                if (n < 0 || (size_t)n >= len)
                        return gs_error_set(err, GS_EINVAL, "%s: path too long for a backup", f->real);
                fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (fd < 0 && errno != EEXIST)
                        return gs_error_sys(err, "cannot back up %s: cannot create %s", f->real, out);
        }
        if (fd < 0)
                return gs_error_set(err, GS_ESYS, "cannot back up %s: too many backups this second", f->real);
        if (fill(fd, out, old, f, err) < 0) {
                unlink(out);
                out[0] = '\0';
                return -1;
        }
        return 0;
}

int gs_conffile_write(const struct gs_conffile *f, const char *text, const char *old, gs_conffile_check_fn check,
                      void *arg, char *bak, size_t baklen, struct gs_error *err)
{
        char dir[PATH_MAX], base[PATH_MAX], tmp[PATH_MAX + 32];
        snprintf(dir, sizeof(dir), "%s", f->real);
        snprintf(base, sizeof(base), "%s", f->real);
        const char *d = dirname(dir), *b = basename(base);
        bak[0] = '\0';
        if (!f->exists && mkdir(d, 0755) < 0 && errno != EEXIST)
                return gs_error_sys(err, "cannot create %s", d);
        if (snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", d, b) >= (int)sizeof(tmp))
                return gs_error_set(err, GS_EINVAL, "%s: path too long", f->real);
        gs_autoclose int fd = mkostemp(tmp, O_CLOEXEC); /* 0600 until it has the original's owner and mode */
        if (fd < 0)
                return gs_error_sys(err, "cannot write %s: cannot create a temporary file in %s", f->real, d);
        if (fill(fd, tmp, text, f, err) < 0 || (check != NULL && check(tmp, arg, err) < 0) ||
            (f->exists && backup(f, old, bak, baklen, err) < 0))
                goto fail;
        if (rename(tmp, f->real) < 0) {
                gs_error_sys(err, "cannot write %s: rename", f->real);
                goto fail;
        }
        int dfd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
                (void)fsync(dfd);
                close(dfd);
        }
        return 0;
fail:
        unlink(tmp);
        if (bak[0] != '\0')
                unlink(bak);
        bak[0] = '\0';
        return -1;
}

/* ------------------------------------------------------------------------------------------ */
/* the engine's own check */

int gs_conffile_find_program(const char *name, char *out, size_t len)
{
        const char *path = getenv("PATH");
        if (path == NULL || path[0] == '\0')
                path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
        for (const char *p = path; *p;) {
                size_t l = strcspn(p, ":");
                if (l > 0 && (size_t)snprintf(out, len, "%.*s/%s", (int)l, p, name) < len && access(out, X_OK) == 0)
                        return 0;
                p += l + (p[l] == ':');
        }
        return -1;
}

/* The last line of what the program said on stderr (at most len - 1 bytes). */
static void last_line(const char *s, size_t n, char *out, size_t len)
{
        while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == ' '))
                n--;
        size_t b = n;
        while (b > 0 && s[b - 1] != '\n')
                b--;
        snprintf(out, len, "%.*s", (int)(n - b), s + b);
}

int gs_conffile_run(char *const argv[], char *said, size_t len, struct gs_error *err)
{
        int pfd[2];
        if (pipe2(pfd, O_CLOEXEC) < 0)
                return gs_error_sys(err, "cannot run %s: pipe", argv[0]);
        pid_t pid = fork();
        if (pid < 0) {
                close(pfd[0]);
                close(pfd[1]);
                return gs_error_sys(err, "cannot run %s: fork", argv[0]);
        }
        if (pid == 0) {
                int nul = open("/dev/null", O_RDWR);
                if (nul >= 0) {
                        dup2(nul, 0);
                        dup2(nul, 1);
                }
                dup2(pfd[1], 2);
                execv(argv[0], argv);
                _exit(127);
        }
        close(pfd[1]);
        char buf[16384];
        size_t n = 0;
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (;;) {
                struct timespec t1;
                clock_gettime(CLOCK_MONOTONIC, &t1);
                long left = CHECK_TIMEOUT_MS - (long)((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000);
                struct pollfd p = {.fd = pfd[0], .events = POLLIN};
                if (left <= 0 || poll(&p, 1, (int)left) == 0) {
                        kill(pid, SIGKILL);
                        snprintf(buf, sizeof(buf), "did not finish in %d s", CHECK_TIMEOUT_MS / 1000);
                        n = strlen(buf);
                        break;
                }
                char c[4096];
                ssize_t r = read(pfd[0], c, sizeof(c));
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0)
                        break;
                if (n + (size_t)r >= sizeof(buf)) { /* keep the end */
                        size_t drop = n + (size_t)r - sizeof(buf) + 1;
                        drop = drop > n ? n : drop;
                        memmove(buf, buf + drop, n - drop);
                        n -= drop;
                }
                size_t take = (size_t)r < sizeof(buf) - 1 - n ? (size_t)r : sizeof(buf) - 1 - n;
                memcpy(buf + n, c + (size_t)r - take, take);
                n += take;
        }
        close(pfd[0]);
        int st = 0;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                ;
        last_line(buf, n, said, len);
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}
