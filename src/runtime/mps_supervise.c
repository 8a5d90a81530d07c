/*
 * gpuslice mps supervise (mps.h): one MPS control daemon per GPU, watched.
 *
 * What a fault looks like, measured on the H100 (driver 580, tests/gpu/mps_fault_check.sh): one
 * client writes to an illegal address; the server logs "Client {PID: p, Context: 1} encountered
 * a fatal GPU error." and "Server is handling a fatal GPU error." in server.log, tears down every
 * client (each gets CUDA_ERROR_ILLEGAL_ADDRESS from then on), and answers `get_server_status
 * <pid>` with FAULT (else ACTIVE) until the last of those clients has exited; meanwhile a new
 * client is refused (CUDA_ERROR_MPS_SERVER_NOT_READY, 807: "Server teardown in progress"). Then
 * the same server destroys its context, answers ACTIVE and serves new clients; the daemon lives
 * on throughout.
 *
 * Each cycle, for every selected GPU:
 *   - no live daemon: start one (mps_start_one), as `gpuslice mps start` does;
 *   - new lines in server.log naming a fatal GPU error, and every server's get_server_status:
 *     a FAULT marks the GPU poisoned in <uuid>/client/state (new slice processes read it before
 *     they connect, and stay on the time limiter), counted, logged;
 *   - poisoned, and the faulted server has no client left (get_client_list): the daemon is
 *     restarted (quit, start), the state is ok again, counted, logged;
 *   - every fifth cycle, the servers' active thread percentage: the largest share of the live
 *     slices registered on the GPU (mps_slice.c), put back where someone else changed it.
 * The state file is written whenever something in it changes, and once at the start.
 */
#include "runtime/mps.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
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
#include "common/path.h"
#include "common/proc.h"
#include "common/strutil.h"
#include "region/region.h"
#include "runtime/mps_int.h"

#define SUPERVISE_PID "supervise.pid"
#define LOG_SCAN_MAX (1u << 20)
#define CEILING_EVERY 5

struct watch {
        struct gs_mps_gpu m;
        struct mps_exec x;
        struct gs_mps_state st;
        off_t log_off;         /* server.log bytes already read */
        unsigned last_pct;     /* the percentage we last set (0: none yet) */
        long long next_start;  /* a failed start is tried again from then (ms) */
};

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
        (void)sig;
        stop_flag = 1;
}

static void say(const struct gs_mps_supervise_opts *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const struct gs_mps_supervise_opts *o, const char *fmt, ...)
{
        char line[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(line, sizeof(line), fmt, ap);
        va_end(ap);
        gs_log_warn_to(o->log, o->log_arg, "%s", line);
}

static void save_state(const struct gs_mps_supervise_opts *o, struct watch *w)
{
        struct gs_error err = {0};
        if (mkdir(w->m.client_dir, 0755) < 0 && errno != EEXIST)
                say(o, "GPU %u: cannot create %s: %s", w->m.index, w->m.client_dir, strerror(errno));
        else if (gs_mps_state_write(w->m.client_dir, &w->st, &err) < 0)
                say(o, "GPU %u: %s", w->m.index, err.msg);
}

static off_t file_size(const char *dir, const char *name)
{
        char path[PATH_MAX];
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        return stat(path, &st) == 0 ? st.st_size : 0;
}

/* New lines in server.log: does one name a fatal GPU error? */
static bool log_says_fault(struct watch *w)
{
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/server.log", w->m.log_dir);
        gs_autoclose int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return false;
        if (st.st_size < w->log_off) /* a new file */
                w->log_off = 0;
        if (st.st_size - w->log_off > (off_t)LOG_SCAN_MAX)
                w->log_off = st.st_size - (off_t)LOG_SCAN_MAX;
        size_t want = (size_t)(st.st_size - w->log_off);
        if (want == 0)
                return false;
        gs_autofree char *buf = malloc(want + 1);
        ssize_t n = buf != NULL ? pread(fd, buf, want, w->log_off) : -1;
        if (n <= 0)
                return false;
        buf[n] = '\0';
        /* only whole lines: a line being written is read again next time */
        char *end = strrchr(buf, '\n');
        if (end == NULL)
                return false;
        end[1] = '\0';
        w->log_off += (off_t)(end + 1 - buf);
        return strstr(buf, "fatal GPU error") != NULL;
}

/* The answer to a one-line command, or "" when it could not be had. */
static const char *ask(struct watch *w, const char *cmd, unsigned timeout_ms)
{
        struct gs_error err = {0};
        if (mps_ui(&w->x, &w->m, cmd, timeout_ms, &err) < 0)
                return "";
        return w->x.res.out;
}

static void start_daemon(struct gs_context *ctx, const struct gs_mps_supervise_opts *o, struct watch *w,
                         const char *why)
{
        struct gs_error err = {0};
        if (gs_now_ms() < w->next_start)
                return;
        if (mps_start_one(ctx, &w->x, &o->mps, &w->m, o->mps.timeout_ms, &err) < 0) {
                say(o, "GPU %u: cannot start its MPS control daemon: %s (trying again in 10 s)", w->m.index, err.msg);
                w->next_start = gs_now_ms() + 10000;
                return;
        }
        w->log_off = file_size(w->m.log_dir, "server.log");
        w->last_pct = 0;
        say(o, "GPU %u: %s the MPS control daemon (pid %d)%s", w->m.index,
            w->m.action == GS_MPS_STARTED ? "started" : "found", (int)w->m.pid, why);
}

/* Poisoned, and the faulted server's clients all gone: a fresh daemon. */
static void restart_after_fault(struct gs_context *ctx, const struct gs_mps_supervise_opts *o, struct watch *w)
{
        char cmd[64];
        snprintf(cmd, sizeof(cmd), "get_client_list %d", (int)w->st.server);
        const char *clients = ask(w, cmd, o->mps.timeout_ms);
        bool server_alive = kill(w->st.server, 0) == 0 || errno != ESRCH;
        if (server_alive && clients[0] != '\0') {
                return; /* its clients fail every call until they exit; new slice processes stay off it */
        }
        struct gs_error err = {0};
        say(o, "GPU %u: the faulted MPS server %d has no client left: restarting the daemon", w->m.index,
            (int)w->st.server);
        if (mps_stop_one(ctx, &w->x, &o->mps, &w->m, o->mps.timeout_ms, &err) < 0) {
                say(o, "GPU %u: %s (trying again)", w->m.index, err.msg);
                return;
        }
        start_daemon(ctx, o, w, " after the fault");
        if (mps_daemon_pid(w->m.pipe_dir) == 0)
                return;
        w->st.poisoned = false;
        w->st.server = 0;
        w->st.restarts++;
        w->st.since = (long long)time(NULL);
        save_state(o, w);
        say(o, "GPU %u: MPS is usable again: new slice processes connect through %s", w->m.index, w->m.client_dir);
}

/* get_server_status of every server: the first FAULT, or 0. */
static pid_t faulted_server(struct watch *w, unsigned timeout_ms)
{
        struct gs_error err = {0};
        if (mps_query_servers(&w->x, &w->m, timeout_ms, &err) < 0)
                return 0;
        for (size_t i = 0; i < w->m.nservers; i++) {
                char cmd[64];
                snprintf(cmd, sizeof(cmd), "get_server_status %d", (int)w->m.servers[i]);
                if (strncmp(ask(w, cmd, timeout_ms), "FAULT", 5) == 0)
                        return w->m.servers[i];
        }
        return 0;
}

static void keep_percentage(struct gs_context *ctx, const struct gs_mps_supervise_opts *o, struct watch *w)
{
        unsigned pct = gs_mps_slices_ceiling(&w->m);
        if (pct == 0)
                return; /* no slice registered: the servers are not ours to set */
        struct gs_error err = {0};
        unsigned changed = 0;
        gs_autoclose int lock = mps_lock_gpu(&w->m, o->mps.timeout_ms, &err);
        if (lock < 0 || gs_mps_apply_percentage(ctx, &w->m, pct, o->mps.timeout_ms, &changed, &err) < 0) {
                say(o, "GPU %u: cannot hold its MPS servers at %u %%: %s", w->m.index, pct, err.msg);
                return;
        }
        if (changed > 0 && w->last_pct == pct) {
                w->st.resets += changed;
                say(o, "GPU %u: %u MPS server%s had another active thread percentage than gpuslice set (%u %%): put "
                       "back", w->m.index, changed, changed == 1 ? "" : "s", pct);
        }
        w->last_pct = pct;
        if (w->st.percentage != pct || changed > 0) {
                w->st.percentage = pct;
                save_state(o, w);
        }
}

static void watch_one(struct gs_context *ctx, const struct gs_mps_supervise_opts *o, struct watch *w, unsigned cycle)
{
        if (mps_daemon_pid(w->m.pipe_dir) == 0) {
                bool was_poisoned = w->st.poisoned;
                start_daemon(ctx, o, w, cycle == 0 ? "" : " (none was running)");
                if (mps_daemon_pid(w->m.pipe_dir) == 0)
                        return;
                if (was_poisoned) {
                        w->st.poisoned = false;
                        w->st.restarts++;
                        w->st.since = (long long)time(NULL);
                }
                save_state(o, w);
        } else if (cycle == 0) {
                w->log_off = file_size(w->m.log_dir, "server.log");
                struct gs_error err = {0};
                if (mps_link_client(&w->m, &err) < 0)
                        say(o, "GPU %u: %s", w->m.index, err.msg);
                say(o, "GPU %u: watching the running MPS control daemon (pid %d)", w->m.index,
                    (int)mps_daemon_pid(w->m.pipe_dir));
        }
        bool logged = log_says_fault(w);
        if (!w->st.poisoned) {
                pid_t f = faulted_server(w, o->mps.timeout_ms);
                if (f != 0) {
                        w->st.poisoned = true;
                        w->st.server = f;
                        w->st.faults++;
                        w->st.since = (long long)time(NULL);
                        save_state(o, w);
                        say(o, "GPU %u: MPS server %d is poisoned: a client hit a fatal GPU error and every client "
                               "of the server fails from now on; new slice processes use the time limiter until "
                               "its clients are gone and the daemon is restarted", w->m.index, (int)f);
                } else if (logged) {
                        say(o, "GPU %u: server.log names a fatal GPU error, but no server reports FAULT", w->m.index);
                }
        }
        if (w->st.poisoned) {
                restart_after_fault(ctx, o, w);
                return;
        }
        if (cycle % CEILING_EVERY == 0)
                keep_percentage(ctx, o, w);
}

/* <root>/supervise.pid: "<pid> <start time>", its mtime the last cycle. */
static int write_pid_record(const char *root, struct gs_error *err)
{
        gs_autoclose int rfd = gs_mkdir_p(root, 0755, err);
        if (rfd < 0)
                return gs_error_wrap(err, "MPS root");
        char buf[64];
        int n = snprintf(buf, sizeof(buf), "%d %llu\n", (int)getpid(),
                         (unsigned long long)gs_region_proc_start_time((int)getpid()));
        unlinkat(rfd, SUPERVISE_PID ".new", 0);
        gs_autoclose int fd = openat(rfd, SUPERVISE_PID ".new", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, buf, (size_t)n) != n || renameat(rfd, SUPERVISE_PID ".new", rfd, SUPERVISE_PID) < 0)
                return gs_error_sys(err, "cannot write %s/" SUPERVISE_PID, root);
        return 0;
}

pid_t gs_mps_supervisor(const char *root, long long *age_s)
{
        char path[PATH_MAX], buf[64];
        snprintf(path, sizeof(path), "%s/" SUPERVISE_PID, root != NULL ? root : GS_MPS_ROOT_DEFAULT);
        gs_autoclose int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        ssize_t n = fd < 0 || fstat(fd, &st) < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
        if (n <= 0)
                return 0;
        buf[n] = '\0';
        int pid;
        unsigned long long start;
        if (sscanf(buf, "%d %llu", &pid, &start) != 2 || pid <= 1 || gs_region_proc_start_time(pid) != start)
                return 0;
        if (age_s != NULL)
                *age_s = (long long)time(NULL) - (long long)st.st_mtime;
        return (pid_t)pid;
}

static int select_watches(const struct gs_device_info *info, const struct gs_mps_supervise_opts *o,
                          struct watch *ws, unsigned *n, struct gs_error *err)
{
        struct gs_selection sel;
        if (gs_select_devices(o->mps.devices != NULL ? o->mps.devices : "all", info, &sel, err) < 0)
                return -1;
        const char *root = o->mps.root != NULL ? o->mps.root : GS_MPS_ROOT_DEFAULT;
        *n = 0;
        for (unsigned i = 0; i < info->ngpus && *n < GS_MAX_GPUS; i++) {
                if (!sel.gpu[i])
                        continue;
                const struct gs_gpu *g = &info->gpus[i];
                if (g->mig_enabled) {
                        say(o, "GPU %u (%s): skipped: MIG mode is enabled", g->index, g->uuid);
                        continue;
                }
                struct watch *w = &ws[*n];
                memset(w, 0, sizeof(*w));
                if (mps_gpu_paths(root, g->uuid, g->index, &w->m, err) < 0)
                        return -1;
                gs_mps_state_read(w->m.client_dir, &w->st); /* counters go on across restarts */
                (*n)++;
        }
        if (*n == 0)
                return gs_error_set(err, GS_EINVAL, "no GPU to supervise");
        return 0;
}

static void nap_ms(unsigned ms)
{
        struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
        while (!stop_flag && nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

int gs_mps_supervise(struct gs_context *ctx, const struct gs_device_info *info, const struct gs_mps_supervise_opts *o,
                     struct gs_error *err)
{
        const char *root = o->mps.root != NULL ? o->mps.root : GS_MPS_ROOT_DEFAULT;
        if (root[0] != '/')
                return gs_error_set(err, GS_EINVAL, "the MPS root must be an absolute path: %s", root);
        gs_autofree struct watch *ws = calloc(GS_MAX_GPUS, sizeof(*ws));
        unsigned n = 0;
        if (ws == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        if (select_watches(info, o, ws, &n, err) < 0 || write_pid_record(root, err) < 0)
                return -1;
        struct sigaction sa = {.sa_handler = on_signal}, old_term, old_int;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGTERM, &sa, &old_term);
        sigaction(SIGINT, &sa, &old_int);
        stop_flag = 0;
        say(o, "supervising the MPS daemons of %u GPU%s under %s (every %.1f s)", n, n == 1 ? "" : "s", root,
            (o->interval_ms != 0 ? o->interval_ms : 1000) / 1000.0);
        char pidfile[PATH_MAX];
        snprintf(pidfile, sizeof(pidfile), "%s/" SUPERVISE_PID, root);
        for (unsigned cycle = 0; !stop_flag && (o->max_cycles == 0 || cycle < o->max_cycles); cycle++) {
                for (unsigned i = 0; i < n && !stop_flag; i++) {
                        watch_one(ctx, o, &ws[i], cycle);
                        if (cycle == 0)
                                save_state(o, &ws[i]);
                }
                utimensat(AT_FDCWD, pidfile, NULL, 0);
                nap_ms(o->interval_ms != 0 ? o->interval_ms : 1000);
        }
        say(o, "stopping (the MPS daemons keep running; gpuslice mps stop ends them)");
        unlink(pidfile);
        sigaction(SIGTERM, &old_term, NULL);
        sigaction(SIGINT, &old_int, NULL);
        return 0;
}
