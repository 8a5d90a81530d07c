/*
 * Slices through a GPU's MPS daemon (mps.h, "Slices through MPS"): the host setting, the GPU's
 * state file, the slices registered on a GPU and the servers' active thread percentage.
 *
 * The percentage, measured on the H100 (driver 580, tests/gpu/mps_fault_check.sh):
 *   - a client's CUDA_MPS_ACTIVE_THREAD_PERCENTAGE only lowers its server's (a server at 30 %
 *     gave a client asking 100 % 38 of 132 SMs, one asking 20 % 26);
 *   - `set_active_thread_percentage <server> P` holds for the clients that connect afterwards,
 *     not for those connected (a client at 30 % stayed on 38 SMs after the server went to 60 %);
 *     `set_default_active_thread_percentage P` holds for the next server the daemon starts;
 *   - one server per user: the slices of a GPU (containers' root is the host's root) share it,
 *     so its percentage is a ceiling common to all of them: the largest share among them.
 * gpuslice keeps every server of a daemon, and the default, at that largest share (re-applied
 * by the supervisor, which also notices a change it did not make), and the interposer sets each
 * process's own share right before cuInit. What that guarantees is in docs/slicing.md.
 */
#include "runtime/mps.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "common/name.h"
#include "common/strutil.h"
#include "region/region.h"
#include "runtime/mps_int.h"
#include "vgpu/config.h"

#define STATE_FILE "state"
#define SLICES_SUBDIR "slices"

static const char *const mode_names[] = {"off", "auto", "on"};

int gs_mps_mode_parse(const char *s)
{
        if (s == NULL || *s == '\0')
                return GS_MPS_MODE_OFF;
        for (int i = 0; i < (int)GS_ARRAY_SIZE(mode_names); i++)
                if (strcmp(s, mode_names[i]) == 0)
                        return i;
        return -1;
}

const char *gs_mps_mode_name(int mode)
{
        return mode >= 0 && mode < (int)GS_ARRAY_SIZE(mode_names) ? mode_names[mode] : "off";
}

/* ------------------------------------------------------------------------------------------ */
/* The state file                                                                              */
/* ------------------------------------------------------------------------------------------ */

int gs_mps_state_read(const char *client_dir, struct gs_mps_state *st)
{
        memset(st, 0, sizeof(*st));
        char path[PATH_MAX];
        if ((size_t)snprintf(path, sizeof(path), "%s/" STATE_FILE, client_dir) >= sizeof(path))
                return -1;
        gs_autoclose int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -1;
        char buf[1024];
        ssize_t n;
        do
                n = read(fd, buf, sizeof(buf) - 1);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -1;
        buf[n] = '\0';
        char *save = NULL;
        for (char *line = strtok_r(buf, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
                char *eq = strchr(line, '=');
                if (eq == NULL)
                        continue;
                *eq = '\0';
                const char *k = line, *v = eq + 1;
                unsigned long long u = strtoull(v, NULL, 10);
                if (strcmp(k, "state") == 0)
                        st->poisoned = strcmp(v, "poisoned") == 0;
                else if (strcmp(k, "since") == 0)
                        st->since = (long long)u;
                else if (strcmp(k, "server") == 0)
                        st->server = (pid_t)u;
                else if (strcmp(k, "faults") == 0)
                        st->faults = u;
                else if (strcmp(k, "restarts") == 0)
                        st->restarts = u;
                else if (strcmp(k, "resets") == 0)
                        st->resets = u;
                else if (strcmp(k, "percentage") == 0)
                        st->percentage = u <= 100 ? (unsigned)u : 0;
        }
        return 1;
}

int gs_mps_state_write(const char *client_dir, const struct gs_mps_state *st, struct gs_error *err)
{
        gs_autoclose int dfd = open(client_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return gs_error_sys(err, "cannot open %s", client_dir);
        /* The interposer reads the first line only: "state=poisoned" keeps new processes off. */
        char buf[512];
        int n = snprintf(buf, sizeof(buf),
                         "state=%s\nsince=%lld\nserver=%d\nfaults=%llu\nrestarts=%llu\nresets=%llu\npercentage=%u\n",
                         st->poisoned ? "poisoned" : "ok", st->since, (int)st->server, st->faults, st->restarts,
                         st->resets, st->percentage);
        unlinkat(dfd, ".state.new", 0);
        gs_autoclose int fd = openat(dfd, ".state.new", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return gs_error_sys(err, "cannot write %s/" STATE_FILE, client_dir);
        if (write(fd, buf, (size_t)n) != n || fchmod(fd, 0644) < 0) {
                unlinkat(dfd, ".state.new", 0);
                return gs_error_sys(err, "cannot write %s/" STATE_FILE, client_dir);
        }
        if (renameat(dfd, ".state.new", dfd, STATE_FILE) < 0) {
                unlinkat(dfd, ".state.new", 0);
                return gs_error_sys(err, "cannot rename into %s/" STATE_FILE, client_dir);
        }
        return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Which slices may go through MPS                                                             */
/* ------------------------------------------------------------------------------------------ */

unsigned gs_mps_slice_share(const struct gs_slice_opts *s, const char *devices)
{
        /* Share mode stays on the time limiter (docs/slicing.md): a client's partition is fixed
         * when it connects, so an MPS slice could never borrow idle time. */
        if (s->compute_mode != NULL && gs_vgpu_parse_compute_mode(s->compute_mode) != GS_COMPUTE_CAP)
                return 0;
        /* One GPU (MPS gives a process one percentage), a whole one (no daemon per MIG device). */
        if (devices == NULL || strncmp(devices, "GPU-", 4) != 0 || strchr(devices, ',') != NULL)
                return 0;
        const char *v = s->compute_dev[0] != NULL ? s->compute_dev[0] : s->compute;
        unsigned pct = 0;
        if (v == NULL || gs_vgpu_parse_percent(v, &pct) < 0 || pct == 0 || pct >= 100)
                return 0;
        return pct;
}

/* ------------------------------------------------------------------------------------------ */
/* Registrations: <uuid>/slices/<id> = "<pct> <pid> <start time>"                              */
/* ------------------------------------------------------------------------------------------ */

static int register_slice(const struct gs_mps_gpu *m, const struct gs_mps_slice *s, struct gs_error *err)
{
        if (!gs_name_is_safe(s->id, 200))
                return gs_error_set(err, GS_EINVAL, "unusable slice id '%.64s'", s->id);
        unsigned long long st = gs_region_proc_start_time((int)s->owner);
        if (st == 0)
                return gs_error_set(err, GS_ENOTFOUND, "the slice's process %d is gone", (int)s->owner);
        gs_autoclose int gpufd = open(m->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (gpufd < 0)
                return gs_error_sys(err, "cannot open %s", m->dir);
        if (mkdirat(gpufd, SLICES_SUBDIR, 0755) < 0 && errno != EEXIST)
                return gs_error_sys(err, "cannot create %s/" SLICES_SUBDIR, m->dir);
        gs_autoclose int sfd = openat(gpufd, SLICES_SUBDIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sfd < 0)
                return gs_error_sys(err, "cannot open %s/" SLICES_SUBDIR, m->dir);
        char tmp[256], buf[96];
        snprintf(tmp, sizeof(tmp), ".%s.new", s->id);
        int n = snprintf(buf, sizeof(buf), "%u %d %llu\n", s->pct, (int)s->owner, st);
        unlinkat(sfd, tmp, 0);
        gs_autoclose int fd = openat(sfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, buf, (size_t)n) != n || renameat(sfd, tmp, sfd, s->id) < 0) {
                int e = errno;
                unlinkat(sfd, tmp, 0);
                errno = e;
                return gs_error_sys(err, "cannot register the slice in %s/" SLICES_SUBDIR, m->dir);
        }
        return 0;
}

static void unregister_slice(const struct gs_mps_gpu *m, const char *id)
{
        char path[PATH_MAX];
        if ((size_t)snprintf(path, sizeof(path), "%s/" SLICES_SUBDIR "/%s", m->dir, id) < sizeof(path))
                unlink(path);
}

/* One registration: its share when its owner lives, else 0. */
static unsigned live_share(int sfd, const char *name)
{
        gs_autoclose int fd = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        char buf[96];
        ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
        if (n <= 0)
                return 0;
        buf[n] = '\0';
        unsigned pct;
        int pid;
        unsigned long long st;
        if (sscanf(buf, "%u %d %llu", &pct, &pid, &st) != 3 || pct == 0 || pct > 100 || pid <= 0)
                return 0;
        return gs_region_proc_start_time(pid) == st ? pct : 0;
}

unsigned gs_mps_slices_ceiling(const struct gs_mps_gpu *m)
{
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/" SLICES_SUBDIR, m->dir);
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        DIR *d = fd < 0 ? NULL : fdopendir(fd);
        if (d == NULL) {
                if (fd >= 0)
                        close(fd);
                return 0;
        }
        unsigned top = 0;
        for (struct dirent *e; (e = readdir(d)) != NULL;) {
                if (e->d_name[0] == '.')
                        continue;
                unsigned pct = live_share(dirfd(d), e->d_name);
                if (pct == 0) {
                        gs_log_info("GPU %u: the MPS slice %s is gone", m->index, e->d_name);
                        unlinkat(dirfd(d), e->d_name, 0);
                }
                if (pct > top)
                        top = pct;
        }
        closedir(d);
        return top;
}

/* ------------------------------------------------------------------------------------------ */
/* The servers' percentage                                                                     */
/* ------------------------------------------------------------------------------------------ */

/* The daemon's answer as a percentage ("30.0"); -1 when it is something else. */
static int answer_pct(const char *out)
{
        char *end;
        double v = strtod(out, &end);
        if (end == out || v < 0 || v > 100)
                return -1;
        return (int)(v + 0.5);
}

/* A settings command the daemon refused: the real one says "Insufficient privileges for UID
 * <uid>. Control deamon settings can only be modified by the user who started it or by the
 * root user." and exits 0 (measured). */
static int check_set(struct mps_exec *x, const char *cmd, unsigned pct, struct gs_error *err)
{
        if (answer_pct(x->res.out) == (int)pct)
                return 0;
        return gs_error_set(err, GS_ESYS, "%s: the MPS daemon answered '%.160s'", cmd, x->res.out);
}

int gs_mps_apply_percentage(struct gs_context *ctx, const struct gs_mps_gpu *m, unsigned pct, unsigned timeout_ms,
                            unsigned *changed, struct gs_error *err)
{
        struct mps_exec *x = calloc(1, sizeof(*x));
        struct gs_mps_gpu *q = malloc(sizeof(*q));
        int rv = -1;
        char cmd[96];
        if (changed != NULL)
                *changed = 0;
        if (x == NULL || q == NULL) {
                gs_error_set(err, GS_ENOMEM, "out of memory");
                goto out;
        }
        *q = *m;
        if (mps_resolve_exec(ctx, x, err) < 0 || mps_ui(x, q, "get_default_active_thread_percentage", timeout_ms, err) < 0)
                goto out;
        if (answer_pct(x->res.out) != (int)pct) {
                snprintf(cmd, sizeof(cmd), "set_default_active_thread_percentage %u", pct);
                if (mps_ui(x, q, cmd, timeout_ms, err) < 0 || check_set(x, cmd, pct, err) < 0)
                        goto out;
        }
        if (mps_query_servers(x, q, timeout_ms, err) < 0)
                goto out;
        for (size_t i = 0; i < q->nservers; i++) {
                snprintf(cmd, sizeof(cmd), "get_active_thread_percentage %d", (int)q->servers[i]);
                if (mps_ui(x, q, cmd, timeout_ms, err) < 0)
                        goto out;
                if (answer_pct(x->res.out) == (int)pct)
                        continue;
                snprintf(cmd, sizeof(cmd), "set_active_thread_percentage %d %u", (int)q->servers[i], pct);
                if (mps_ui(x, q, cmd, timeout_ms, err) < 0 || check_set(x, cmd, pct, err) < 0)
                        goto out;
                if (changed != NULL)
                        (*changed)++;
        }
        rv = 0;
out:
        free(q);
        free(x);
        return rv;
}

/* ------------------------------------------------------------------------------------------ */
/* Attaching a slice                                                                           */
/* ------------------------------------------------------------------------------------------ */

/* The time limiter, and why (logged, and kept in s->why for the caller to show). */
static int no_mps(struct gs_mps_slice *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int no_mps(struct gs_mps_slice *s, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(s->why, sizeof(s->why), fmt, ap);
        va_end(ap);
        gs_log_warn("slice: %s: the time limiter keeps its %u %% share", s->why, s->pct);
        return 0;
}

/* slice.mps = on: a daemon for the GPU, started now if none runs. */
static int ensure_daemon(struct gs_context *ctx, const struct gs_device_info *info, struct gs_mps_slice *s,
                         const char *root, struct gs_error *err)
{
        gs_autofree struct gs_mps_report *r = calloc(1, sizeof(*r));
        if (r == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        struct gs_mps_opts o = {.devices = s->uuid, .root = root, .timeout_ms = s->timeout_ms};
        if (gs_mps_start(ctx, info, &o, r, err) < 0)
                return -1;
        if (r->n == 1 && r->gpus[0].action == GS_MPS_STARTED)
                gs_log_info("slice.mps = on: started GPU %u's MPS control daemon (pid %d)", s->index, (int)r->gpus[0].pid);
        return 0;
}

int gs_mps_slice_attach(struct gs_context *ctx, const struct gs_device_info *info, struct gs_mps_slice *s, char *dir,
                        size_t len)
{
        dir[0] = '\0';
        s->why[0] = '\0';
        if (s->mode == GS_MPS_MODE_OFF)
                return 0;
        const char *root = s->root != NULL ? s->root : GS_MPS_ROOT_DEFAULT;
        struct gs_mps_gpu m = {0};
        struct gs_error err = {0};
        if (root[0] != '/' || mps_gpu_paths(root, s->uuid, s->index, &m, &err) < 0)
                return no_mps(s, "MPS root %s: %s", root, root[0] != '/' ? "not an absolute path" : err.msg);
        if (s->mode == GS_MPS_MODE_ON && mps_daemon_pid(m.pipe_dir) == 0 && ensure_daemon(ctx, info, s, root, &err) < 0)
                return no_mps(s, "slice.mps = on, but GPU %u's MPS daemon could not be started (%s)", s->index, err.msg);
        if (mps_daemon_pid(m.pipe_dir) == 0)
                return no_mps(s, "no MPS daemon for GPU %u under %s (gpuslice mps start, or the gpuslice-mps "
                                 "service)", s->index, root);
        struct gs_mps_state st;
        if (gs_mps_state_read(m.client_dir, &st) > 0 && st.poisoned)
                return no_mps(s, "GPU %u's MPS server is poisoned (a client hit a fatal GPU error; the supervisor "
                                 "restarts the daemon once its clients are gone)", s->index);
        gs_autoclose int lock = mps_lock_gpu(&m, s->timeout_ms, &err);
        if (lock < 0)
                return no_mps(s, "GPU %u: %s", s->index, err.msg);
        if (register_slice(&m, s, &err) < 0)
                return no_mps(s, "GPU %u: %s", s->index, err.msg);
        unsigned ceiling = gs_mps_slices_ceiling(&m);
        if (ceiling < s->pct)
                ceiling = s->pct;
        if (gs_mps_apply_percentage(ctx, &m, ceiling, s->timeout_ms, NULL, &err) < 0 || mps_link_client(&m, &err) < 0) {
                unregister_slice(&m, s->id);
                return no_mps(s, "GPU %u's MPS servers cannot be held at %u %%: %s", s->index, ceiling, err.msg);
        }
        if ((size_t)snprintf(dir, len, "%s", m.client_dir) >= len) {
                dir[0] = '\0';
                unregister_slice(&m, s->id);
                return no_mps(s, "path too long: %s", m.client_dir);
        }
        gs_log_info("slice %s: cap %u %% through GPU %u's MPS daemon (%s; its servers at %u %%)", s->id, s->pct,
                    s->index, m.client_dir, ceiling);
        return 1;
}

int gs_slice_mps_choose(struct gs_context *ctx, const struct gs_device_info *info, const struct gs_slice_opts *s,
                        const char *uuid, const char *id, pid_t owner, char *dir, size_t len, char *why, size_t wlen)
{
        dir[0] = '\0';
        if (why != NULL && wlen > 0)
                why[0] = '\0';
        unsigned pct = gs_mps_slice_share(s, uuid);
        int mode = gs_mps_mode_parse(s->mps);
        if (pct == 0 || mode <= 0)
                return 0;
        unsigned index = 0;
        for (unsigned i = 0; i < info->ngpus; i++)
                if (strcmp(info->gpus[i].uuid, uuid) == 0)
                        index = info->gpus[i].index;
        struct gs_mps_slice ms = {.root = s->mps_root, .mode = mode, .uuid = uuid, .index = index, .pct = pct,
                                  .id = id, .owner = owner};
        int rc = gs_mps_slice_attach(ctx, info, &ms, dir, len);
        if (why != NULL && wlen > 0)
                snprintf(why, wlen, "%s", ms.why);
        return rc == 1;
}
