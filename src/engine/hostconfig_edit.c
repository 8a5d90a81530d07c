/*
 * `gpuslice runtime configure --kubernetes`: gpuslice's own host config made safe for a Kubernetes
 * node (see engine.h). The file is edited as text (toml_edit.c: every other line and comment kept),
 * the new text is checked by the host config's own parser before anything is written, and it is
 * written as the engines' configs are: a backup beside it, then a temporary file renamed over it,
 * both with the old file's mode and owner; a symlinked config is edited through the link.
 */
#include "engine/engine.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"

#define MAX_FILE (1u << 20) /* the host config's own limit */

static const struct {
        const char *section, *key, *value, *only_if; /* only_if: change it only from this value */
} k8s_values[] = {
        {"hook", "accept-nvidia-visible-devices-envvar-when-unprivileged", "false", NULL},
        {"hook", "accept-nvidia-visible-devices-as-volume-mounts", "true", NULL},
        /* the env strategy's answers would be refused now: the mounts carry the same devices */
        {"device-plugin", "allocate", "\"volume-mounts\"", "\"env\""},
};

/* The file's text ("" when it does not exist) and, when it does, its mode and owner. */
static char *read_config(const char *path, struct stat *st, bool *exists, struct gs_error *err)
{
        gs_autoclose int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        *exists = fd >= 0;
        if (fd < 0 && errno == ENOENT)
                return strdup("");
        if (fd < 0 || fstat(fd, st) < 0) {
                gs_error_sys(err, "cannot open %s", path);
                return NULL;
        }
        if (!S_ISREG(st->st_mode) || st->st_size > (off_t)MAX_FILE) {
                gs_error_set(err, GS_EFORMAT, "%s: not a regular file of at most 1 MiB", path);
                return NULL;
        }
        char *t = calloc(1, (size_t)st->st_size + 1);
        if (t == NULL) {
                gs_error_set(err, GS_ENOMEM, "out of memory");
                return NULL;
        }
        size_t n = 0;
        ssize_t r;
        while (n < (size_t)st->st_size && (r = read(fd, t + n, (size_t)st->st_size - n)) > 0)
                n += (size_t)r;
        t[n] = '\0';
        if (strlen(t) != n) {
                free(t);
                gs_error_set(err, GS_EFORMAT, "%s: contains a NUL byte", path);
                return NULL;
        }
        return t;
}

/* `text` into a new file `path` (O_EXCL) with `mode` and owner, synced. */
static int write_new(const char *path, const char *text, mode_t mode, uid_t uid, gid_t gid, struct gs_error *err)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return gs_error_sys(err, "cannot create %s", path);
        size_t len = strlen(text), n = 0;
        while (n < len) {
                ssize_t w = write(fd, text + n, len - n);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        break;
                n += (size_t)w;
        }
        bool ok = n == len && fchown(fd, uid, gid) == 0 && fchmod(fd, mode) == 0 && fsync(fd) == 0;
        int saved = errno;
        close(fd);
        if (!ok) {
                unlink(path);
                errno = saved;
                return gs_error_sys(err, "cannot write %s", path);
        }
        return 0;
}

/* A backup of the old text beside the file, then the new text renamed over it. */
static int write_config(struct gs_engine_file *f, const char *old, const struct stat *st, bool exists,
                        struct gs_error *err)
{
        char dir[PATH_MAX];
        snprintf(dir, sizeof(dir), "%s", f->path);
        const char *d = dirname(dir);
        if (mkdir(d, 0755) < 0 && errno != EEXIST)
                return gs_error_sys(err, "cannot create %s", d);
        mode_t mode = exists ? st->st_mode & 07777 : 0644;
        uid_t uid = exists ? st->st_uid : getuid();
        gid_t gid = exists ? st->st_gid : getgid();
        if (exists) {
                time_t now = time(NULL);
                struct tm tm;
                gmtime_r(&now, &tm);
                char ts[32];
                strftime(ts, sizeof(ts), "%Y%m%dT%H%M%SZ", &tm);
                snprintf(f->backup, sizeof(f->backup), "%s.%s.bak", f->path, ts);
                if (write_new(f->backup, old, mode, uid, gid, err) < 0)
                        return gs_error_wrap(err, "cannot back up %s", f->path);
        }
        char tmp[PATH_MAX + 64];
        snprintf(tmp, sizeof(tmp), "%s/.%s.gpuslice-%ld", d, basename(f->path), (long)getpid());
        if (write_new(tmp, f->after, mode, uid, gid, err) < 0)
                return -1;
        if (rename(tmp, f->path) < 0) {
                gs_error_sys(err, "cannot replace %s", f->path);
                unlink(tmp);
                return -1;
        }
        return 0;
}

int gs_hostconfig_configure_k8s(const char *path, bool dry_run, struct gs_engine_result *r, struct gs_error *err)
{
        memset(r, 0, sizeof(*r));
        struct gs_engine_file *f = &r->files[r->nfiles++];
        const char *given = path != NULL ? path : GS_HOSTCONFIG_DEFAULT_PATH;
        /* a symlinked config (configuration management's) is edited where it points */
        if (realpath(given, f->path) == NULL)
                snprintf(f->path, sizeof(f->path), "%s", given);
        struct stat st = {0};
        bool exists;
        gs_autofree char *old = read_config(f->path, &st, &exists, err);
        if (old == NULL)
                return -1;
        struct gs_hostconfig *hc = malloc(sizeof(*hc));
        if (hc == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        gs_hostconfig_defaults(hc);
        int rc = gs_hostconfig_parse(hc, old, strlen(old), f->path, err);
        char *text = rc == 0 ? strdup(old) : NULL;
        if (rc == 0 && text == NULL)
                rc = gs_error_set(err, GS_ENOMEM, "out of memory");
        for (size_t i = 0; rc == 0 && i < GS_ARRAY_SIZE(k8s_values); i++) {
                const char *sec[] = {k8s_values[i].section};
                if (k8s_values[i].only_if != NULL) {
                        gs_autofree char *cur = gs_toml_get(text, sec, 1, k8s_values[i].key);
                        if (cur == NULL || strcmp(cur, k8s_values[i].only_if) != 0)
                                continue;
                }
                bool changed;
                char *t = gs_toml_set(text, sec, 1, k8s_values[i].key, k8s_values[i].value, &changed, err);
                if (t == NULL) {
                        rc = gs_error_wrap(err, "%s", f->path);
                        break;
                }
                free(text);
                text = t;
                char file[PATH_MAX], line[sizeof(r->changes[0])];
                snprintf(file, sizeof(file), "%s", f->path);
                snprintf(line, sizeof(line), "%s: [%s] %s = %s", file, k8s_values[i].section, k8s_values[i].key,
                         k8s_values[i].value);
                if (changed && r->nchanges < GS_ENGINE_MAX_CHANGES)
                        memcpy(r->changes[r->nchanges++], line, sizeof(line));
        }
        /* the result must be a host config gpuslice reads, with the values meant */
        gs_hostconfig_defaults(hc);
        if (rc == 0 && gs_hostconfig_parse(hc, text, strlen(text), f->path, err) < 0)
                rc = gs_error_wrap(err, "the edited config would not parse");
        if (rc == 0 && (hc->accept_env_unprivileged || !hc->accept_volume_mounts))
                rc = gs_error_set(err, GS_EFORMAT, "%s: the edit did not take (check the [hook] section)", f->path);
        free(hc);
        if (rc < 0) {
                free(text);
                return -1;
        }
        f->after = text;
        f->changed = strcmp(old, text) != 0;
        if (!f->changed || dry_run)
                return 0;
        return write_config(f, old, &st, exists, err);
}
