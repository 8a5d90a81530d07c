/*
 * gpuslice mps: one NVIDIA MPS control daemon per GPU (see mps.h for the layout).
 *
 * What this relies on about the real nvidia-cuda-mps-control (NVIDIA's MPS documentation and
 * manual page, "Tools and Interface Reference"; observations in public bug reports marked so):
 *   - `nvidia-cuda-mps-control -d` starts the control daemon in the background; without -d it is
 *     the client: commands on standard input, answers on standard output.
 *   - CUDA_MPS_PIPE_DIRECTORY names the directory of its named pipes and UNIX sockets (default
 *     /tmp/nvidia-mps), CUDA_MPS_LOG_DIRECTORY the directory of control.log and server.log (default
 *     /var/log/nvidia-mps), inherited by the servers it launches; CUDA_VISIBLE_DEVICES in the
 *     daemon's environment picks the GPU its servers use.
 *   - `get_server_list` prints the PIDs of the server instances (one per line); `quit` terminates
 *     the daemon (it stops accepting clients and waits for its servers and clients to finish).
 *   - Seen on real daemons (bug reports): the pipe directory holds the socket `control` (the
 *     daemon logs "Starting control daemon using socket <dir>/control"), `control_privileged`,
 *     `control_lock`, a `log` FIFO and `nvidia-cuda-mps-control.pid`; the pid file goes when the
 *     daemon quits, the `control` socket stays. The client says "Cannot find MPS control daemon
 *     process" and exits 1 when no daemon runs. A pipe directory too long for sun_path (108
 *     bytes) makes the daemon exit at start.
 * So "alive" is: the pid file names a live process whose /proc/<pid>/comm is "nvidia-cuda-mps"
 * (the 15-character truncation of the daemon's name; not the server, by its argv[0]); "up" is
 * alive, with a `control` socket, and answering get_server_list. A leftover `control` alone
 * means nothing.
 *
 * The binaries are the driver root's (--root), found as `list` finds them, and run on the host
 * (not chrooted): for a root other than /, the daemon's servers need that driver's libraries
 * on the host too. The daemon is exec'd by a child with: every descriptor above 2 closed,
 * stdin /dev/null (or the commands), stdout and stderr into a pipe we read (bounded), default
 * signal dispositions and an empty mask, cwd /, umask 022, and an environment of exactly
 * CUDA_VISIBLE_DEVICES, the two directories and PATH (the binaries' directories). As root it
 * gets root's full capabilities back at exec (the bounding set is untouched): it launches
 * servers as its clients' UIDs.
 */
#include "runtime/mps.h"
#include "runtime/mps_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "common/path.h"
#include "common/proc.h"
#include "common/strutil.h"
#include "driver/context.h"

#define CONTROL_NAME "nvidia-cuda-mps-control"
#define SERVER_NAME "nvidia-cuda-mps-server"
#define PID_FILE "nvidia-cuda-mps-control.pid"
#define CONTROL_SOCKET "control"
#define PIPE_SUBDIR "pipe"
#define LOG_SUBDIR "log"
#define COMM_NAME "nvidia-cuda-mps" /* TASK_COMM_LEN truncates both binaries' names to this */
#define CLIENT_SUBDIR "client"
#define POLL_MS 10

/* One GPU's directories while we work on it. */
struct mps_dirs {
        int gpufd, pipefd, logfd;
        bool made; /* this call created any of them */
};

#define MPS_DIRS_INIT {.gpufd = -1, .pipefd = -1, .logfd = -1}

static void dirs_close(struct mps_dirs *d)
{
        int *fds[] = {&d->logfd, &d->pipefd, &d->gpufd}; /* gpufd: also drops our flock */
        for (size_t i = 0; i < GS_ARRAY_SIZE(fds); i++)
                if (*fds[i] >= 0) {
                        close(*fds[i]);
                        *fds[i] = -1;
                }
}

/* ------------------------------------------------------------------------------------------ */
/* Selection and paths                                                                         */
/* ------------------------------------------------------------------------------------------ */

static bool uuid_is_safe(const char *u)
{
        if (strncmp(u, "GPU-", 4) != 0 || strlen(u) > 64)
                return false;
        for (const char *p = u; *p != '\0'; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '-'))
                        return false;
        return true;
}

static const char *mps_root(const struct gs_mps_opts *o)
{
        return o->root != NULL ? o->root : GS_MPS_ROOT_DEFAULT;
}

int mps_gpu_paths(const char *root, const char *uuid, unsigned index, struct gs_mps_gpu *out, struct gs_error *err)
{
        size_t rl = strlen(root);
        while (rl > 0 && root[rl - 1] == '/')
                rl--; /* "/" itself: "" and then "/<uuid>" */
        if (!uuid_is_safe(uuid))
                return gs_error_set(err, GS_EFORMAT, "GPU %u: unexpected UUID '%.64s'", index, uuid);
        int n = snprintf(out->pipe_dir, sizeof(out->pipe_dir), "%.*s/%s/" PIPE_SUBDIR, (int)rl, root, uuid);
        if (n < 0 || (size_t)n >= sizeof(out->pipe_dir))
                return gs_error_set(err, GS_EINVAL,
                                    "the MPS root %s is too long: the daemon's sockets in %.*s/%s/" PIPE_SUBDIR
                                    "/ would not fit a UNIX socket address (pipe directories of at most %d bytes; "
                                    "use a shorter --mps-root)",
                                    root, (int)rl, root, uuid, GS_MPS_DIR_MAX);
        snprintf(out->dir, sizeof(out->dir), "%.*s/%s", (int)rl, root, uuid);
        snprintf(out->log_dir, sizeof(out->log_dir), "%.*s/%s/" LOG_SUBDIR, (int)rl, root, uuid);
        /* "client" is longer than "pipe", but its one socket ("control") is far shorter than the
         * pipe directory's longest ("control_privileged"): it fits whenever the pipe directory does. */
        snprintf(out->client_dir, sizeof(out->client_dir), "%.*s/%s/" CLIENT_SUBDIR, (int)rl, root, uuid);
        out->index = index;
        gs_strlcpy(out->uuid, uuid, sizeof(out->uuid));
        return 0;
}

static int gpu_paths(const struct gs_mps_opts *o, const struct gs_gpu *g, struct gs_mps_gpu *out,
                     struct gs_error *err)
{
        return mps_gpu_paths(mps_root(o), g->uuid, g->index, out, err); /* root: absolute (check_args) */
}

enum verb { V_START, V_STOP, V_STATUS };

/* Fill r->gpus with the selected GPUs (paths set; SKIPPED_MIG marked for start with `all`). */
static int select_gpus(const struct gs_device_info *info, const struct gs_mps_opts *o, enum verb v,
                       struct gs_mps_report *r, struct gs_error *err)
{
        struct gs_selection sel;
        const char *list = o->devices != NULL ? o->devices : "all";
        if (gs_select_devices(list, info, &sel, err) < 0)
                return -1;
        if (!sel.all)
                for (unsigned i = 0; i < info->ngpus; i++)
                        for (unsigned j = 0; j < info->gpus[i].nmigs && j < GS_MAX_MIGS; j++)
                                if (sel.mig[i][j])
                                        return gs_error_set(err, GS_EINVAL,
                                                            "%s: MIG devices are not supported: gpuslice mps runs "
                                                            "one control daemon per whole GPU",
                                                            info->gpus[i].migs[j].uuid);
        r->n = 0;
        for (unsigned i = 0; i < info->ngpus; i++) {
                if (!sel.gpu[i])
                        continue;
                const struct gs_gpu *g = &info->gpus[i];
                if (v == V_START && g->mig_enabled && !sel.all)
                        return gs_error_set(err, GS_EINVAL,
                                            "GPU %u (%s) is in MIG mode: CUDA work runs in its MIG devices, which "
                                            "gpuslice mps does not support",
                                            g->index, g->uuid);
                struct gs_mps_gpu *m = &r->gpus[r->n];
                memset(m, 0, sizeof(*m));
                if (gpu_paths(o, g, m, err) < 0)
                        return -1;
                m->action = v == V_START && g->mig_enabled ? GS_MPS_SKIPPED_MIG : GS_MPS_QUERIED;
                r->n++;
        }
        if (r->n == 0)
                return gs_error_set(err, GS_EINVAL, "no GPU selected");
        return 0;
}

/* A directory of ours under parent (never a symlink). 1 opened, 0 missing (!create), -1 error. */
static int open_subdir(int parent, const char *name, const char *shown, bool create, bool *made, int *fd,
                       struct gs_error *err)
{
        bool new = false;
        if (create) {
                if (mkdirat(parent, name, 0755) == 0)
                        *made = new = true;
                else if (errno != EEXIST)
                        return gs_error_sys(err, "cannot create %s", shown);
        }
        *fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (*fd < 0) {
                if (errno == ENOENT && !create)
                        return 0;
                if (errno == ENOTDIR || errno == ELOOP)
                        return gs_error_set(err, GS_EINVAL, "%s is not a directory (or is a symlink)", shown);
                return gs_error_sys(err, "cannot open %s", shown);
        }
        if (new && fchmod(*fd, 0755) < 0)
                return gs_error_sys(err, "chmod %s", shown);
        return 1;
}

/* Open (start: create) the MPS root and this GPU's directory with its pipe and log directories.
 * 1 opened, 0 the pipe directory does not exist (stop, status), -1 error. */
static int open_dirs(const struct gs_mps_opts *o, const struct gs_mps_gpu *m, bool create, struct mps_dirs *d,
                     struct gs_error *err)
{
        gs_autoclose int rootfd = -1;
        const char *root = mps_root(o);
        if (create) {
                rootfd = gs_mkdir_p(root, 0755, err);
                if (rootfd < 0)
                        return gs_error_wrap(err, "MPS root");
        } else {
                rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (rootfd < 0 && errno == ENOENT)
                        return 0;
                if (rootfd < 0)
                        return errno == ENOTDIR ? gs_error_set(err, GS_EINVAL, "MPS root: %s is not a directory", root)
                                                : gs_error_sys(err, "MPS root: cannot open %s", root);
        }
        int rc = open_subdir(rootfd, m->uuid, m->dir, create, &d->made, &d->gpufd, err);
        if (rc > 0)
                rc = open_subdir(d->gpufd, PIPE_SUBDIR, m->pipe_dir, create, &d->made, &d->pipefd, err);
        if (rc <= 0)
                return rc;
        rc = open_subdir(d->gpufd, LOG_SUBDIR, m->log_dir, create, &d->made, &d->logfd, err);
        if (rc == 0) /* stop/status without a log directory: the pipe directory is what counts */
                rc = 1;
        return rc;
}

/* Remove this GPU's pipe and log directories, and then its directory, if they are empty (ours,
 * or left by a daemon that wrote nothing); anything in them stays. */
static void remove_empty_dirs(const struct gs_mps_opts *o, const struct gs_mps_gpu *m, struct mps_dirs *d)
{
        if (d->gpufd >= 0 && unlinkat(d->gpufd, PIPE_SUBDIR, AT_REMOVEDIR) == 0)
                gs_log_info("removed empty %s", m->pipe_dir);
        if (d->gpufd >= 0 && unlinkat(d->gpufd, LOG_SUBDIR, AT_REMOVEDIR) == 0)
                gs_log_info("removed empty %s", m->log_dir);
        gs_autoclose int rootfd = open(mps_root(o), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (rootfd >= 0 && unlinkat(rootfd, m->uuid, AT_REMOVEDIR) == 0)
                gs_log_info("removed empty %s", m->dir);
}

/* flock the GPU's directory: concurrent gpuslice runs on one GPU take turns (the lock goes with
 * the descriptor). Bounded by the deadline. */
static int lock_dir(const struct gs_mps_gpu *m, int fd, long long deadline, struct gs_error *err)
{
        while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
                if (errno != EWOULDBLOCK && errno != EINTR)
                        return gs_error_sys(err, "lock %s", m->dir);
                if (gs_now_ms() >= deadline)
                        return gs_error_set(err, GS_ETIMEOUT, "%s is locked by another gpuslice mps", m->dir);
                struct timespec ts = {0, POLL_MS * 1000000L};
                nanosleep(&ts, NULL);
        }
        return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Is the daemon alive?                                                                        */
/* ------------------------------------------------------------------------------------------ */

static ssize_t read_small(const char *path, int dirfd, char *buf, size_t len)
{
        gs_autoclose int fd = openat(dirfd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return -1;
        ssize_t n;
        do
                n = read(fd, buf, len - 1);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -1;
        buf[n] = '\0';
        return n;
}

/* A live MPS control daemon: comm "nvidia-cuda-mps", argv[0] not the server's. A zombie (empty
 * cmdline) is not alive. */
static bool is_control_process(pid_t pid)
{
        char path[64], buf[512];
        snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
        if (read_small(path, AT_FDCWD, buf, sizeof(buf)) <= 0)
                return false;
        buf[strcspn(buf, "\n")] = '\0';
        if (strcmp(buf, COMM_NAME) != 0)
                return false;
        snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
        if (read_small(path, AT_FDCWD, buf, sizeof(buf)) <= 0 || buf[0] == '\0')
                return false;
        const char *base = strrchr(buf, '/');
        return strcmp(base != NULL ? base + 1 : buf, SERVER_NAME) != 0;
}

/* The pid in the pipe directory's pid file, if that process is a live control daemon; else 0. */
static pid_t daemon_pid(int pipefd)
{
        char buf[32];
        if (read_small(PID_FILE, pipefd, buf, sizeof(buf)) <= 0)
                return 0;
        buf[strcspn(buf, " \t\r\n")] = '\0';
        unsigned long long v;
        if (gs_parse_uint(buf, INT_MAX, &v) < 0 || v < 2)
                return 0;
        return is_control_process((pid_t)v) ? (pid_t)v : 0;
}

static bool has_control_socket(int pipefd)
{
        struct stat st;
        return fstatat(pipefd, CONTROL_SOCKET, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISSOCK(st.st_mode);
}

/* ------------------------------------------------------------------------------------------ */
/* Running nvidia-cuda-mps-control                                                             */
/* ------------------------------------------------------------------------------------------ */

static void append_dir(char *list, size_t len, const char *file)
{
        const char *slash = strrchr(file, '/');
        size_t dl = slash == NULL ? 0 : (slash == file ? 1 : (size_t)(slash - file));
        if (dl == 0)
                return;
        /* already listed? */
        for (const char *p = list; *p != '\0';) {
                size_t n = strcspn(p, ":");
                if (n == dl && strncmp(p, file, dl) == 0)
                        return;
                p += n + (p[n] == ':');
        }
        size_t used = strlen(list);
        snprintf(list + used, len - used, "%s%.*s", used > 0 ? ":" : "", (int)dl, file);
}

static int resolve_exec(struct gs_context *ctx, struct mps_exec *x, struct gs_error *err)
{
        if (x->resolved)
                return 0;
        char in_root[PATH_MAX], server[PATH_MAX];
        if (gs_driver_find_binary(ctx, CONTROL_NAME, in_root, sizeof(in_root), err) < 0)
                return -1;
        gs_context_host_path(ctx, in_root, x->control, sizeof(x->control));
        x->path_env[0] = '\0';
        append_dir(x->path_env, sizeof(x->path_env), x->control);
        /* The daemon launches the server; let it find the root's, wherever that is. */
        struct gs_error ign = {0};
        if (gs_driver_find_binary(ctx, SERVER_NAME, in_root, sizeof(in_root), &ign) == 0) {
                gs_context_host_path(ctx, in_root, server, sizeof(server));
                append_dir(x->path_env, sizeof(x->path_env), server);
        } else {
                gs_log_warn("%s", ign.msg);
        }
        x->resolved = true;
        return 0;
}

static void read_some(int fd, struct run_result *res, bool *eof)
{
        for (;;) {
                char buf[1024];
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n == 0)
                        *eof = true;
                if (n <= 0)
                        return;
                size_t room = sizeof(res->out) - 1 - res->len;
                size_t k = (size_t)n < room ? (size_t)n : room;
                memcpy(res->out + res->len, buf, k);
                res->len += k;
                res->out[res->len] = '\0';
        }
}

static __attribute__((noreturn)) void exec_child(const struct mps_exec *x, const struct gs_mps_gpu *m,
                                                  const char *arg, int in, int out)
{
        char env_dev[GS_STR_LONG + 32], env_pipe[PATH_MAX], env_log[PATH_MAX], env_path[sizeof(x->path_env) + 8];
        snprintf(env_dev, sizeof(env_dev), "CUDA_VISIBLE_DEVICES=%s", m->uuid);
        snprintf(env_pipe, sizeof(env_pipe), "CUDA_MPS_PIPE_DIRECTORY=%s", m->pipe_dir);
        snprintf(env_log, sizeof(env_log), "CUDA_MPS_LOG_DIRECTORY=%s", m->log_dir);
        snprintf(env_path, sizeof(env_path), "PATH=%s", x->path_env);
        char *const envp[] = {env_dev, env_pipe, env_log, env_path, NULL};
        char *const argv[] = {(char *)x->control, (char *)arg, NULL};

        if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
                _exit(127);
        gs_cloexec_from_3();
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        for (int s = 1; s < NSIG; s++)
                signal(s, SIG_DFL);
        umask(022);
        if (chdir("/") < 0)
                _exit(127);
        execve(x->control, argv, envp);
        dprintf(2, "cannot execute %s: %s\n", x->control, strerror(errno));
        _exit(127);
}

/* Run the control binary for GPU m with `arg` (NULL: client mode) and `input` on stdin (NULL:
 * /dev/null), until it exits or the deadline passes (then it is killed: an error). Its output is
 * read until it exits, not until EOF: a daemon it leaves behind may still hold the pipe. */
static int run_control(const struct mps_exec *x, const struct gs_mps_gpu *m, const char *arg, const char *input,
                       long long deadline, struct run_result *res, struct gs_error *err)
{
        gs_autoclose int in_r = -1, in_w = -1, out_r = -1, out_w = -1;
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return gs_error_sys(err, "pipe");
        out_r = p[0];
        out_w = p[1];
        if (input != NULL) {
                if (pipe2(p, O_CLOEXEC) < 0)
                        return gs_error_sys(err, "pipe");
                in_r = p[0];
                in_w = p[1];
        } else if ((in_r = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
                return gs_error_sys(err, "open /dev/null");
        }
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0)
                return gs_error_sys(err, "fork");
        if (pid == 0)
                exec_child(x, m, arg, in_r, out_w);
        close(gs_steal_fd(&out_w));
        close(gs_steal_fd(&in_r));
        if (in_w >= 0) {
                /* A few short lines: they fit the pipe's buffer, the write cannot block. A child
                 * that exited first (no daemon to talk to) makes it EPIPE: its exit status says
                 * why, below. */
                (void)gs_write_child_input(in_w, input, strlen(input));
                close(gs_steal_fd(&in_w));
        }
        fcntl(out_r, F_SETFL, O_NONBLOCK);
        memset(res, 0, sizeof(*res));
        gs_autoclose int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        bool eof = false;
        for (;;) {
                pid_t w = waitpid(pid, &res->status, WNOHANG);
                if (w == pid)
                        break;
                if (w < 0 && errno != EINTR)
                        return gs_error_sys(err, "waitpid");
                long long left = deadline - gs_now_ms();
                if (left <= 0) {
                        kill(pid, SIGKILL);
                        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                                ;
                        return gs_error_set(err, GS_ETIMEOUT, "%s%s%s did not finish in time", x->control,
                                            arg != NULL ? " " : "", arg != NULL ? arg : "");
                }
                struct pollfd pf[2] = {{.fd = eof ? -1 : out_r, .events = POLLIN}, {.fd = pidfd, .events = POLLIN}};
                int wait = pidfd >= 0 ? (int)(left < 1000 ? left : 1000) : POLL_MS;
                poll(pf, 2, wait);
                if (!eof)
                        read_some(out_r, res, &eof);
        }
        if (!eof)
                read_some(out_r, res, &eof);
        while (res->len > 0 && (res->out[res->len - 1] == '\n' || res->out[res->len - 1] == ' '))
                res->out[--res->len] = '\0';
        return 0;
}

static bool exited_ok(const struct run_result *res)
{
        return WIFEXITED(res->status) && WEXITSTATUS(res->status) == 0;
}

/* "<what> failed (exit N): <its output>". */
static int run_failed(struct gs_error *err, const struct run_result *res, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static int run_failed(struct gs_error *err, const struct run_result *res, const char *fmt, ...)
{
        char what[256], st[64];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(what, sizeof(what), fmt, ap);
        va_end(ap);
        if (WIFEXITED(res->status))
                snprintf(st, sizeof(st), "exit %d", WEXITSTATUS(res->status));
        else if (WIFSIGNALED(res->status))
                snprintf(st, sizeof(st), "killed by signal %d", WTERMSIG(res->status));
        else
                snprintf(st, sizeof(st), "status %d", res->status);
        return gs_error_set(err, GS_ESYS, "%s failed (%s)%s%s", what, st, res->len ? ": " : "", res->out);
}

/* get_server_list: the pids into m->servers. */
static int query_servers(struct mps_exec *x, struct gs_mps_gpu *m, long long deadline, struct gs_error *err)
{
        struct run_result *res = &x->res;
        int rv = run_control(x, m, NULL, "get_server_list\n", deadline, res, err);
        if (rv == 0 && !exited_ok(res))
                rv = run_failed(err, res, "get_server_list");
        m->nservers = 0;
        for (char *save = NULL, *line = rv == 0 ? strtok_r(res->out, "\n", &save) : NULL; line != NULL;
             line = strtok_r(NULL, "\n", &save)) {
                line[strcspn(line, " \t\r")] = '\0';
                unsigned long long v;
                if (line[0] == '\0')
                        continue;
                if (gs_parse_uint(line, INT_MAX, &v) < 0) {
                        rv = gs_error_set(err, GS_EFORMAT, "get_server_list answered '%.64s', not a pid", line);
                        break;
                }
                if (m->nservers < GS_MPS_MAX_SERVERS)
                        m->servers[m->nservers++] = (pid_t)v;
        }
        m->servers_known = rv == 0;
        return rv;
}

/* ------------------------------------------------------------------------------------------ */
/* start / stop / status                                                                       */
/* ------------------------------------------------------------------------------------------ */

static void sleep_poll(void)
{
        struct timespec ts = {0, POLL_MS * 1000000L};
        nanosleep(&ts, NULL);
}

/* Open (start: create) the GPU's directories and take its lock: 1, or 0 when its pipe directory
 * does not exist (stop), or -1. */
static int begin(const struct gs_mps_opts *o, const struct gs_mps_gpu *m, bool create, long long deadline,
                 struct mps_dirs *d, struct gs_error *err)
{
        int rc = open_dirs(o, m, create, d, err);
        if (rc > 0 && lock_dir(m, d->gpufd, deadline, err) < 0)
                return -1;
        return rc;
}

/* <uuid>/client/control: a hard link to the daemon's control socket (the same socket: a client
 * connects through it, measured on the H100), made anew and renamed over the old one, which a
 * restarted daemon's socket no longer is. The client directory is 0755 and only ever mounted
 * read-only into containers. */
static int link_client_at(int gpufd, int pipefd, const struct gs_mps_gpu *m, struct gs_error *err)
{
        if (mkdirat(gpufd, CLIENT_SUBDIR, 0755) < 0 && errno != EEXIST)
                return gs_error_sys(err, "cannot create %s", m->client_dir);
        gs_autoclose int cfd = openat(gpufd, CLIENT_SUBDIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (cfd < 0)
                return gs_error_sys(err, "cannot open %s (not a directory, or a symlink)", m->client_dir);
        struct stat a, b;
        if (fstatat(pipefd, CONTROL_SOCKET, &a, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISSOCK(a.st_mode))
                return gs_error_set(err, GS_ENOTFOUND, "no control socket in %s", m->pipe_dir);
        if (fstatat(cfd, CONTROL_SOCKET, &b, AT_SYMLINK_NOFOLLOW) == 0 && b.st_ino == a.st_ino && b.st_dev == a.st_dev)
                return 0;
        unlinkat(cfd, ".control.new", 0);
        if (linkat(pipefd, CONTROL_SOCKET, cfd, ".control.new", 0) < 0)
                return gs_error_sys(err, "cannot link %s/" CONTROL_SOCKET " into %s", m->pipe_dir, m->client_dir);
        if (renameat(cfd, ".control.new", cfd, CONTROL_SOCKET) < 0) {
                int e = errno;
                unlinkat(cfd, ".control.new", 0);
                errno = e;
                return gs_error_sys(err, "cannot rename into %s/" CONTROL_SOCKET, m->client_dir);
        }
        gs_log_info("GPU %u: %s/" CONTROL_SOCKET " links the daemon's control socket", m->index, m->client_dir);
        return 0;
}

static void link_client(int gpufd, int pipefd, const struct gs_mps_gpu *m)
{
        struct gs_error lerr = {0};
        if (link_client_at(gpufd, pipefd, m, &lerr) < 0)
                gs_log_warn("GPU %u: %s: slices cannot connect through %s", m->index, lerr.msg, m->client_dir);
}

static int running(struct gs_mps_gpu *m, enum gs_mps_action action)
{
        m->action = action;
        m->running = true;
        return 0;
}

static int start_one(struct gs_context *ctx, struct mps_exec *x, const struct gs_mps_opts *o, struct gs_mps_gpu *m,
                     unsigned timeout_ms, struct gs_error *err)
{
        struct mps_dirs d = MPS_DIRS_INIT;
        long long deadline = gs_now_ms() + timeout_ms;
        int rv = -1;
        if (begin(o, m, true, deadline, &d, err) < 0)
                goto out;
        if ((m->pid = daemon_pid(d.pipefd)) != 0) {
                link_client(d.gpufd, d.pipefd, m);
                rv = running(m, GS_MPS_ALREADY_RUNNING);
                goto out;
        }
        if (resolve_exec(ctx, x, err) < 0)
                goto out;
        gs_log_info("starting %s -d for GPU %u (%s), pipe directory %s", x->control, m->index, m->uuid, m->pipe_dir);
        if (run_control(x, m, "-d", NULL, deadline, &x->res, err) < 0)
                goto out;
        if (!exited_ok(&x->res)) {
                /* Another instance won a race to this pipe directory: that is "running" too. */
                if ((m->pid = daemon_pid(d.pipefd)) != 0)
                        rv = running(m, GS_MPS_ALREADY_RUNNING);
                else
                        run_failed(err, &x->res, "%s -d", x->control);
                goto out;
        }
        /* Up: alive, its socket there, and answering. */
        struct gs_error qerr = {0};
        bool queried = false;
        for (;;) {
                m->pid = daemon_pid(d.pipefd);
                if (m->pid != 0 && has_control_socket(d.pipefd) &&
                    (queried = query_servers(x, m, deadline, &qerr) == 0))
                        break;
                if (gs_now_ms() >= deadline)
                        break;
                sleep_poll();
        }
        if (!queried) {
                gs_error_set(err, GS_ETIMEOUT,
                             "GPU %u (%s): the MPS control daemon did not come up within %.1f s (%s); see %s/control.log",
                             m->index, m->uuid, timeout_ms / 1000.0,
                             m->pid == 0 ? "no live " PID_FILE " in the pipe directory"
                             : !has_control_socket(d.pipefd) ? "no control socket in the pipe directory"
                                                              : qerr.msg,
                             m->log_dir);
                goto out;
        }
        gs_log_info("GPU %u: MPS control daemon %d up", m->index, (int)m->pid);
        link_client(d.gpufd, d.pipefd, m);
        rv = running(m, GS_MPS_STARTED);
out:
        if (rv < 0 && d.made && (d.pipefd < 0 || daemon_pid(d.pipefd) == 0))
                remove_empty_dirs(o, m, &d);
        dirs_close(&d);
        return rv;
}

static int stop_one(struct gs_context *ctx, struct mps_exec *x, const struct gs_mps_opts *o, struct gs_mps_gpu *m,
                    unsigned timeout_ms, struct gs_error *err)
{
        struct mps_dirs d = MPS_DIRS_INIT;
        long long deadline = gs_now_ms() + timeout_ms;
        int rv = -1;
        int rc = begin(o, m, false, deadline, &d, err);
        m->action = GS_MPS_NOT_RUNNING;
        if (rc < 0)
                goto out;
        if (rc == 0 || (m->pid = daemon_pid(d.pipefd)) == 0) {
                rv = 0;
                goto out;
        }
        if (resolve_exec(ctx, x, err) < 0)
                goto out;
        gs_log_info("GPU %u: quit to MPS control daemon %d", m->index, (int)m->pid);
        if (run_control(x, m, NULL, "quit\n", deadline, &x->res, err) < 0)
                goto out;
        if (!exited_ok(&x->res) && is_control_process(m->pid)) {
                run_failed(err, &x->res, "GPU %u (%s): quit", m->index, m->uuid);
                goto out;
        }
        while (is_control_process(m->pid)) {
                if (gs_now_ms() >= deadline) {
                        gs_error_set(err, GS_ETIMEOUT,
                                     "GPU %u (%s): the MPS control daemon (pid %d) is still running %.1f s after quit: "
                                     "it waits for its servers and clients to finish (see %s/control.log)",
                                     m->index, m->uuid, (int)m->pid, timeout_ms / 1000.0, m->log_dir);
                        m->running = true;
                        goto out;
                }
                sleep_poll();
        }
        m->action = GS_MPS_STOPPED;
        /* Slices that start now use the time limiter: nothing listens behind the link any more. */
        if (unlinkat(d.gpufd, CLIENT_SUBDIR "/" CONTROL_SOCKET, 0) == 0)
                gs_log_info("removed %s/" CONTROL_SOCKET, m->client_dir);
        rv = 0;
out:
        if (rv == 0)
                remove_empty_dirs(o, m, &d);
        dirs_close(&d);
        return rv;
}

static int status_one(struct gs_context *ctx, struct mps_exec *x, const struct gs_mps_opts *o, struct gs_mps_gpu *m,
                      unsigned timeout_ms, struct gs_error *err)
{
        struct mps_dirs d = MPS_DIRS_INIT;
        struct gs_error qerr = {0};
        int rc = open_dirs(o, m, false, &d, err);
        if (rc > 0 && (m->pid = daemon_pid(d.pipefd)) != 0) {
                m->running = true;
                if (resolve_exec(ctx, x, &qerr) == 0)
                        query_servers(x, m, gs_now_ms() + timeout_ms, &qerr);
                if (!m->servers_known)
                        gs_strlcpy(m->query_error, qerr.msg, sizeof(m->query_error));
        }
        dirs_close(&d);
        return rc < 0 ? -1 : 0;
}

static unsigned timeout_of(const struct gs_mps_opts *o)
{
        return o->timeout_ms != 0 ? o->timeout_ms : GS_MPS_TIMEOUT_MS_DEFAULT;
}

static int check_args(const struct gs_device_info *info, const struct gs_mps_opts *o, struct gs_mps_report *r,
                      struct gs_error *err)
{
        if (info == NULL || o == NULL || r == NULL)
                return gs_error_set(err, GS_EINVAL, "mps: missing argument");
        if (mps_root(o)[0] != '/')
                return gs_error_set(err, GS_EINVAL, "the MPS root must be an absolute path: %s", mps_root(o));
        return 0;
}

/* The selected GPUs, one after the other; stops at the first failure (r: the GPUs before it). */
static int each_gpu(enum verb v, struct gs_context *ctx, const struct gs_device_info *info,
                    const struct gs_mps_opts *o, struct gs_mps_report *r, struct gs_error *err)
{
        struct gs_mps_report sel;
        if (check_args(info, o, r, err) < 0 || select_gpus(info, o, v, &sel, err) < 0)
                return -1;
        struct mps_exec x = {0};
        /* start: a missing binary is an error before anything is created. */
        if (v == V_START && resolve_exec(ctx, &x, err) < 0)
                return -1;
        r->n = 0;
        for (unsigned i = 0; i < sel.n; i++) {
                struct gs_mps_gpu *m = &r->gpus[r->n];
                *m = sel.gpus[i];
                int rc = v == V_STATUS ? status_one(ctx, &x, o, m, timeout_of(o), err)
                         : v == V_STOP ? stop_one(ctx, &x, o, m, timeout_of(o), err)
                         : m->action == GS_MPS_SKIPPED_MIG ? 0
                                                           : start_one(ctx, &x, o, m, timeout_of(o), err);
                if (rc < 0)
                        return -1;
                r->n++;
        }
        return 0;
}

int gs_mps_start(struct gs_context *ctx, const struct gs_device_info *info, const struct gs_mps_opts *o,
                 struct gs_mps_report *r, struct gs_error *err)
{
        return each_gpu(V_START, ctx, info, o, r, err);
}

int gs_mps_stop(struct gs_context *ctx, const struct gs_device_info *info, const struct gs_mps_opts *o,
                struct gs_mps_report *r, struct gs_error *err)
{
        return each_gpu(V_STOP, ctx, info, o, r, err);
}

int gs_mps_status(struct gs_context *ctx, const struct gs_device_info *info, const struct gs_mps_opts *o,
                  struct gs_mps_report *r, struct gs_error *err)
{
        return each_gpu(V_STATUS, ctx, info, o, r, err);
}

/* ------------------------------------------------------------------------------------------ */
/* For mps_slice.c and mps_supervise.c (mps_int.h)                                             */
/* ------------------------------------------------------------------------------------------ */

int mps_resolve_exec(struct gs_context *ctx, struct mps_exec *x, struct gs_error *err)
{
        return resolve_exec(ctx, x, err);
}

int mps_ui(struct mps_exec *x, const struct gs_mps_gpu *m, const char *line, unsigned timeout_ms,
           struct gs_error *err)
{
        char in[256];
        if ((size_t)snprintf(in, sizeof(in), "%s\n", line) >= sizeof(in))
                return gs_error_set(err, GS_EINVAL, "MPS command too long");
        if (run_control(x, m, NULL, in, gs_now_ms() + (timeout_ms != 0 ? timeout_ms : GS_MPS_TIMEOUT_MS_DEFAULT),
                        &x->res, err) < 0)
                return -1;
        if (!exited_ok(&x->res))
                return run_failed(err, &x->res, "GPU %u: %s", m->index, line);
        return 0;
}

pid_t mps_daemon_pid(const char *pipe_dir)
{
        gs_autoclose int fd = open(pipe_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        return fd < 0 ? 0 : daemon_pid(fd);
}

int mps_query_servers(struct mps_exec *x, struct gs_mps_gpu *m, unsigned timeout_ms, struct gs_error *err)
{
        return query_servers(x, m, gs_now_ms() + (timeout_ms != 0 ? timeout_ms : GS_MPS_TIMEOUT_MS_DEFAULT), err);
}

int mps_start_one(struct gs_context *ctx, struct mps_exec *x, const struct gs_mps_opts *o, struct gs_mps_gpu *m,
                  unsigned timeout_ms, struct gs_error *err)
{
        return start_one(ctx, x, o, m, timeout_ms != 0 ? timeout_ms : GS_MPS_TIMEOUT_MS_DEFAULT, err);
}

int mps_stop_one(struct gs_context *ctx, struct mps_exec *x, const struct gs_mps_opts *o, struct gs_mps_gpu *m,
                 unsigned timeout_ms, struct gs_error *err)
{
        return stop_one(ctx, x, o, m, timeout_ms != 0 ? timeout_ms : GS_MPS_TIMEOUT_MS_DEFAULT, err);
}

int mps_lock_gpu(const struct gs_mps_gpu *m, unsigned timeout_ms, struct gs_error *err)
{
        int fd = open(m->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return gs_error_sys(err, "cannot open %s", m->dir);
        if (lock_dir(m, fd, gs_now_ms() + (timeout_ms != 0 ? timeout_ms : GS_MPS_TIMEOUT_MS_DEFAULT), err) < 0) {
                close(fd);
                return -1;
        }
        return fd;
}

int mps_link_client(const struct gs_mps_gpu *m, struct gs_error *err)
{
        gs_autoclose int gpufd = open(m->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (gpufd < 0)
                return gs_error_sys(err, "cannot open %s", m->dir);
        gs_autoclose int pipefd = openat(gpufd, PIPE_SUBDIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (pipefd < 0)
                return gs_error_sys(err, "cannot open %s", m->pipe_dir);
        return link_client_at(gpufd, pipefd, m, err);
}
