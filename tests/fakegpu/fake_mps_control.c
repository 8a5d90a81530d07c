/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Simulated NVIDIA MPS control (nvidia-cuda-mps-control) and server (nvidia-cuda-mps-server: the
 * same binary under that name), for fake driver roots. libc only.
 *
 *   nvidia-cuda-mps-control -d    start the control daemon (double fork, new session)
 *   nvidia-cuda-mps-control -f    the same in the foreground
 *   nvidia-cuda-mps-control       the client: commands on stdin, answers on stdout
 *
 * Taken from NVIDIA's MPS documentation and manual page:
 *   - CUDA_MPS_PIPE_DIRECTORY (default /tmp/nvidia-mps) holds the daemon's pipes and sockets;
 *     CUDA_MPS_LOG_DIRECTORY (default /var/log/nvidia-mps) its control.log; a server it launches
 *     inherits both and writes server.log there.
 *   - Commands: get_server_list (the PIDs of the servers, one per line), start_server -uid UID
 *     (start a server for that user), get_client_list PID, quit (terminate the daemon; its
 *     servers are shut down), get/set_default_active_thread_percentage (default 100: the next
 *     server's), get/set_active_thread_percentage PID (that server's: the clients that connect
 *     afterwards get it), get_server_status PID, shutdown_server PID [-f].
 *   - A client's CUDA_MPS_ACTIVE_THREAD_PERCENTAGE only lowers its server's percentage.
 * Measured on an H100, driver 580.159.04 (tests/gpu/mps_fault_check.sh), and done the same here:
 *   - The log lines: control.log "[YYYY-MM-DD HH:MM:SS.mmm Control   <pid>] <text>" (the pid
 *     right-aligned in 5 columns): "Starting control daemon using socket <dir>/control", "NEW
 *     CLIENT <pid> from user <uid>: Server already exists" (or "Server is not ready, push client
 *     to pending list" and "Starting new server <pid> for user <uid>", "NEW SERVER <pid>: Ready"),
 *     "NEW UI", "Cmd:<command>", each line of the answer, "UI closed"; server.log, in the
 *     server's name ("Server   <pid>"), "Client {PID: <p>, Context ID: 1} connected", "Client
 *     process <p> disconnected".
 *   - A fatal GPU error in one client (an illegal address): server.log "Client {PID: <p>,
 *     Context: 1} encountered a fatal GPU error.", "Server is handling a fatal GPU error.", one
 *     "Client {PID: <q>, Context ID: 1} on device 0 to be torn down" per client, "The following
 *     client process have a sticky error set:" and their pids; every client of that server gets
 *     CUDA_ERROR_ILLEGAL_ADDRESS (700) from then on; get_server_status answers FAULT (else
 *     ACTIVE); a new client is refused ("Server teardown in progress. Refusing to accept new
 *     client {PID: <p>, Context ID: 0}", "Failed to accept client ... with status 807": its CUDA
 *     fails with CUDA_ERROR_MPS_SERVER_NOT_READY); when the last of its clients has exited the
 *     same server logs "Destroy server context on device 0", answers ACTIVE and serves new
 *     clients. The first line names the client that connected first, not the faulting one (three
 *     runs: always the innocent one), and so does this fake.
 *   - Settings commands from a user other than root (or the server's own user, for
 *     set_active_thread_percentage) are refused with "Insufficient privileges for UID <uid>.
 *     Control deamon settings can only be modified by the user who started it or by the root
 *     user." (sic), exit status 0; root too gets that for set_default_active_thread_percentage
 *     when it cannot reach the pipe directory's control_privileged socket, and "Not enough
 *     privilege to execute quit command" for quit, while set_active_thread_percentage of root's
 *     own server and start_server still work there; shutdown_server of an unknown pid says
 *     "Server <pid> not found".
 *   - The pipe directory holds control (a UNIX socket, 0666), control_privileged (a socket,
 *     0755), control_lock (0666), log (a FIFO, 0777), nvidia-cuda-mps-control.pid (0666); after
 *     quit the pid file is gone and the control socket stays. A client needs only the control
 *     socket (one bind-mounted alone into a directory of its own served a client).
 *   - The client prints "Cannot find MPS control daemon process" and exits 1 when no daemon runs;
 *     a second `-d` says "An instance of this daemon is already running" and exits 1.
 * The wire is the fake's own (text lines; the real one is binary): a UI connection sends its
 * command line, a CUDA client (the fake libcuda's cuInit, fake_cuda_init.c) sends "CLIENT <pid>
 * <percentage, 0 for none>" and keeps its connection: answered "OK <server> <percentage>" or
 * "REFUSED <CUresult>"; it sends "FAULT" when it launched a faulting kernel and is sent "FAULT"
 * when its server faulted; its connection closing is its exit.
 * Guesses (not documented; say so if the real one differs): which stream the two error messages
 * go to (stderr here); the pid file's text ("<pid>", no newline); `-d` returning before the
 * daemon is ready; the daemon refusing to start (exit 1, on stderr) when the pipe directory is
 * missing or control.log cannot be opened, and exiting (logged) when it cannot bind its sockets
 * or make its `log` FIFO; what an unknown command answers ("Unrecognized command: ..."); what
 * start_server and shutdown_server print (nothing); that shutdown_server of a server is the
 * privileged socket's or the server's own user's, as set_active_thread_percentage is; the log line at quit ("Exit");
 * how the daemon finds nvidia-cuda-mps-server (on its PATH here, so a daemon without the
 * driver's bin directory on its PATH cannot start servers); servers of several users at once
 * (the real daemon runs one at a time and queues the others' clients).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PID_FILE "nvidia-cuda-mps-control.pid"
#define NOT_FOUND "Cannot find MPS control daemon process"
#define NO_PRIV "Insufficient privileges for UID %u. Control deamon settings can only be modified by the user who started it or by the root user.\n"
#define MAX_SERVERS 16
#define MAX_CLIENTS 64

static const char *pipe_dir, *log_dir;
static int log_fd = -1, srv_log_fd = -1;
static volatile sig_atomic_t stop_requested;

/* One line "[time Role   pid] text" into fd. */
static void vlog(int fd, const char *role, int pid, const char *fmt, va_list ap)
{
        if (fd < 0)
                return;
        struct timeval tv;
        gettimeofday(&tv, NULL);
        struct tm tm;
        localtime_r(&tv.tv_sec, &tm);
        char line[1024];
        int n = snprintf(line, sizeof(line), "[%04d-%02d-%02d %02d:%02d:%02d.%03ld %s %5d] ", tm.tm_year + 1900,
                         tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (long)tv.tv_usec / 1000, role,
                         pid);
        n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
        if (n > (int)sizeof(line) - 2)
                n = (int)sizeof(line) - 2;
        line[n++] = '\n';
        ssize_t w = write(fd, line, (size_t)n);
        (void)w;
}

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        vlog(log_fd, "Control", (int)getpid(), fmt, ap);
        va_end(ap);
}

/* server.log, in the name of server `pid` (the daemon keeps the servers' books here). */
static void slog(int pid, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void slog(int pid, const char *fmt, ...)
{
        if (srv_log_fd < 0) {
                char path[4096];
                snprintf(path, sizeof(path), "%s/server.log", log_dir);
                srv_log_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        }
        va_list ap;
        va_start(ap, fmt);
        vlog(srv_log_fd, "Server", pid, fmt, ap);
        va_end(ap);
}

static int path_in(char *buf, size_t len, const char *dir, const char *name)
{
        int n = snprintf(buf, len, "%s/%s", dir, name);
        return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* The pid file's daemon, if alive and an MPS process ("nvidia-cuda-mps" is the comm of both). A
 * zombie does not count: on a real host init reaps it at once; here it may not. */
static pid_t live_daemon(void)
{
        char path[4096], buf[64];
        if (path_in(path, sizeof(path), pipe_dir, PID_FILE) < 0)
                return 0;
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return 0;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
                return 0;
        buf[n] = '\0';
        long pid = strtol(buf, NULL, 10);
        if (pid <= 1)
                return 0;
        /* "<pid> (<comm>) <state> ...": an MPS process, not a zombie (init reaps those). */
        char st[256];
        snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return 0;
        n = read(fd, st, sizeof(st) - 1);
        close(fd);
        if (n <= 0)
                return 0;
        st[n] = '\0';
        const char *rp = strrchr(st, ')');
        return strstr(st, "(nvidia-cuda-mps)") != NULL && rp != NULL && rp[1] == ' ' && rp[2] != 'Z' ? (pid_t)pid : 0;
}

/* ------------------------------------------------------------------------------------------ */
/* The client (UI)                                                                             */
/* ------------------------------------------------------------------------------------------ */

/* control_privileged when this user can reach it (root, where it is not hidden), else control. */
static int connect_control(void)
{
        static const char *const names[] = {"control_privileged", "control"};
        for (int i = 0; i < 2; i++) {
                struct sockaddr_un sa = {.sun_family = AF_UNIX};
                if (path_in(sa.sun_path, sizeof(sa.sun_path), pipe_dir, names[i]) < 0)
                        return -1;
                int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (fd < 0)
                        return -1;
                if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
                        return fd;
                close(fd);
        }
        return -1;
}

static int client(void)
{
        if (live_daemon() == 0) {
                fprintf(stderr, "%s\n", NOT_FOUND);
                return 1;
        }
        char line[4096];
        while (fgets(line, sizeof(line), stdin) != NULL) {
                line[strcspn(line, "\r\n")] = '\0';
                if (line[strspn(line, " \t")] == '\0')
                        continue;
                int fd = connect_control();
                if (fd < 0) {
                        fprintf(stderr, "%s\n", NOT_FOUND);
                        return 1;
                }
                size_t len = strlen(line);
                line[len++] = '\n';
                if (write(fd, line, len) != (ssize_t)len) {
                        close(fd);
                        fprintf(stderr, "%s\n", NOT_FOUND);
                        return 1;
                }
                shutdown(fd, SHUT_WR);
                char buf[4096];
                ssize_t n;
                while ((n = read(fd, buf, sizeof(buf))) > 0)
                        fwrite(buf, 1, (size_t)n, stdout);
                close(fd);
                fflush(stdout);
        }
        return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* The server (started by the daemon as nvidia-cuda-mps-server): a process to be there         */
/* ------------------------------------------------------------------------------------------ */

static void on_term(int sig)
{
        (void)sig;
        stop_requested = 1;
}

static int server(void)
{
        struct sigaction sa = {.sa_handler = on_term};
        sigaction(SIGTERM, &sa, NULL);
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        while (!stop_requested)
                pause();
        return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* The control daemon's books: servers and their clients                                       */
/* ------------------------------------------------------------------------------------------ */

struct srv {
        pid_t pid;
        unsigned uid;
        double pct;
        bool fault;
};

struct cli {
        int fd;
        int pid;
        unsigned uid;
        pid_t server;
        unsigned long seq; /* connection order */
};

static struct srv servers[MAX_SERVERS];
static int nservers;
static struct cli clients[MAX_CLIENTS];
static int nclients;
static unsigned long next_seq;
static double default_pct = 100.0;

static struct srv *server_of_pid(pid_t pid)
{
        for (int i = 0; i < nservers; i++)
                if (servers[i].pid == pid)
                        return &servers[i];
        return NULL;
}

static struct srv *server_of_uid(unsigned uid)
{
        for (int i = 0; i < nservers; i++)
                if (servers[i].uid == uid)
                        return &servers[i];
        return NULL;
}

static int clients_of(pid_t server)
{
        int n = 0;
        for (int i = 0; i < nclients; i++)
                n += clients[i].server == server;
        return n;
}

static void drop_client(int i)
{
        struct cli c = clients[i];
        close(c.fd);
        clients[i] = clients[--nclients];
        slog((int)c.server, "Client {PID: %d, Context ID: 1} exiting. Number of active client contexts is %d.", c.pid,
             clients_of(c.server));
        slog((int)c.server, "Client process %d disconnected", c.pid);
        struct srv *s = server_of_pid(c.server);
        if (s != NULL && s->fault && clients_of(c.server) == 0) {
                slog((int)s->pid, "Destroy server context on device 0");
                s->fault = false;
        }
}

static void reap(void)
{
        int st;
        pid_t p;
        while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
                for (int i = 0; i < nservers; i++)
                        if (servers[i].pid == p) {
                                servers[i] = servers[--nservers];
                                break;
                        }
                for (int i = nclients - 1; i >= 0; i--)
                        if (clients[i].server == p) {
                                close(clients[i].fd);
                                clients[i] = clients[--nclients];
                        }
                logf_("Server %d exited with status %d", (int)p, WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
        }
}

static struct srv *start_server(unsigned uid)
{
        struct srv *s = server_of_uid(uid);
        if (s != NULL)
                return s; /* one server per user: this one serves it */
        if (nservers == MAX_SERVERS)
                return NULL;
        pid_t p = fork();
        if (p < 0)
                return NULL;
        if (p == 0) {
                if (getuid() == 0 && uid != 0 && (setgid(uid) < 0 || setuid(uid) < 0))
                        _exit(1);
                char *const argv[] = {"nvidia-cuda-mps-server", NULL};
                execvp(argv[0], argv); /* the daemon's PATH */
                _exit(127);
        }
        s = &servers[nservers++];
        *s = (struct srv){.pid = p, .uid = uid, .pct = default_pct};
        logf_("Starting new server %d for user %u", (int)p, uid);
        slog((int)p, "Startup");
        slog((int)p, "Active Threads Percentage set to %.1f", s->pct);
        slog((int)p, "Server has started");
        logf_("NEW SERVER %d: Ready", (int)p);
        return s;
}

/* The server names the client that connected first, whichever faulted (three runs on the H100:
 * always the innocent one): its log does not say who did it. */
static void fault(struct srv *s)
{
        if (s->fault)
                return;
        s->fault = true;
        int first = -1;
        for (int i = 0; i < nclients; i++)
                if (clients[i].server == s->pid && (first < 0 || clients[i].seq < clients[first].seq))
                        first = i;
        slog((int)s->pid, "Client {PID: %d, Context: 1} encountered a fatal GPU error.", first >= 0 ? clients[first].pid : 0);
        slog((int)s->pid, "Server is handling a fatal GPU error.");
        for (int i = 0; i < nclients; i++)
                if (clients[i].server == s->pid)
                        slog((int)s->pid, "Client {PID: %d, Context ID: 1} on device 0 to be torn down", clients[i].pid);
        for (int i = 0; i < nclients; i++)
                if (clients[i].server == s->pid) {
                        slog((int)s->pid, "All clients belonging to error trigging process %d will be torn down", clients[i].pid);
                        slog((int)s->pid, "Client {PID: %d, Context ID: 1} on the error-trigging process %d to be torn down",
                             clients[i].pid, clients[i].pid);
                }
        slog((int)s->pid, "The following devices will be reset:");
        slog((int)s->pid, "0");
        slog((int)s->pid, "The following client process have a sticky error set:");
        for (int i = 0; i < nclients; i++)
                if (clients[i].server == s->pid) {
                        slog((int)s->pid, "%d", clients[i].pid);
                        ssize_t w = write(clients[i].fd, "FAULT\n", 6);
                        (void)w;
                }
}

/* A CUDA client's first line "CLIENT <pid> <pct>": answered; its connection kept when served. */
static void new_client(int fd, unsigned uid, const char *args)
{
        int pid = 0;
        unsigned want = 0;
        sscanf(args, "%d %u", &pid, &want);
        struct srv *s = server_of_uid(uid);
        if (s != NULL) {
                logf_("NEW CLIENT %d from user %u: Server already exists", pid, uid);
        } else {
                logf_("NEW CLIENT %d from user %u: Server is not ready, push client to pending list", pid, uid);
                s = start_server(uid);
        }
        char reply[64];
        if (s == NULL || nclients == MAX_CLIENTS) {
                snprintf(reply, sizeof(reply), "REFUSED 805\n"); /* CUDA_ERROR_MPS_CONNECTION_FAILED */
        } else if (s->fault) {
                slog((int)s->pid, "Server teardown in progress. Refusing to accept new client {PID: %d, Context ID: 0}", pid);
                slog((int)s->pid, "Failed to accept client {PID: %d, Context ID: 0} with status 807", pid);
                snprintf(reply, sizeof(reply), "REFUSED 807\n"); /* CUDA_ERROR_MPS_SERVER_NOT_READY */
        } else {
                double pct = want >= 1 && want < s->pct ? (double)want : s->pct;
                snprintf(reply, sizeof(reply), "OK %d %u\n", (int)s->pid, (unsigned)pct);
                slog((int)s->pid, "Client {PID: %d, Context ID: 1} connected", pid);
                slog((int)s->pid, "Status of client {PID: %d, Context ID: 1} is ACTIVE", pid);
                clients[nclients++] = (struct cli){.fd = fd, .pid = pid, .uid = uid, .server = s->pid, .seq = next_seq++};
        }
        ssize_t w = write(fd, reply, strlen(reply));
        (void)w;
        if (strncmp(reply, "OK", 2) != 0)
                close(fd);
}

/* A line from a connected client: it faulted. */
static void client_says(int i)
{
        char buf[256];
        ssize_t n = read(clients[i].fd, buf, sizeof(buf) - 1);
        if (n <= 0) {
                drop_client(i);
                return;
        }
        buf[n] = '\0';
        struct srv *s = server_of_pid(clients[i].server);
        if (strstr(buf, "FAULT") != NULL && s != NULL)
                fault(s);
}

/* ------------------------------------------------------------------------------------------ */
/* UI commands                                                                                 */
/* ------------------------------------------------------------------------------------------ */

struct ui {
        unsigned uid;
        bool privileged; /* came through control_privileged */
        char *reply;
        size_t len, used;
};

static void say(struct ui *u, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct ui *u, const char *fmt, ...)
{
        char line[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(line, sizeof(line), fmt, ap);
        va_end(ap);
        size_t n = strlen(line);
        if (u->used + n < u->len) {
                memcpy(u->reply + u->used, line, n + 1);
                u->used += n;
        }
        line[strcspn(line, "\n")] = '\0';
        logf_("%s", line);
}

static bool may_set(struct ui *u, const struct srv *s)
{
        if (u->privileged || (s != NULL && u->uid == s->uid)) /* its own server (root's, measured) */
                return true;
        say(u, NO_PRIV, u->uid);
        return false;
}

static bool may_admin(struct ui *u)
{
        if (u->privileged)
                return true;
        say(u, NO_PRIV, u->uid);
        return false;
}

static struct srv *server_arg(char **save)
{
        char *v = strtok_r(NULL, " \t", save);
        return v != NULL ? server_of_pid((pid_t)strtol(v, NULL, 10)) : NULL;
}

static void cmd_percentage(struct ui *u, const char *verb, char **save)
{
        if (strcmp(verb, "get_default_active_thread_percentage") == 0) {
                say(u, "%.1f\n", default_pct);
        } else if (strcmp(verb, "set_default_active_thread_percentage") == 0) {
                char *val = strtok_r(NULL, " \t", save);
                double v = val != NULL ? strtod(val, NULL) : 0;
                if (!may_admin(u))
                        return;
                if (v > 0 && v <= 100)
                        default_pct = v;
                say(u, "%.1f\n", default_pct);
        } else if (strcmp(verb, "get_active_thread_percentage") == 0) {
                struct srv *s = server_arg(save);
                if (s != NULL)
                        say(u, "%.1f\n", s->pct);
        } else { /* set_active_thread_percentage */
                struct srv *s = server_arg(save);
                char *val = strtok_r(NULL, " \t", save);
                double v = val != NULL ? strtod(val, NULL) : 0;
                if (s == NULL || !may_set(u, s))
                        return;
                if (v > 0 && v <= 100)
                        s->pct = v;
                say(u, "%.1f\n", s->pct);
        }
}

/* One command; the answer into u. Returns true for quit. */
static bool command(struct ui *u, char *cmd)
{
        cmd[strcspn(cmd, "\r\n")] = '\0';
        logf_("NEW UI");
        logf_("Cmd:%s", cmd);
        char *save = NULL, *verb = strtok_r(cmd, " \t", &save);
        if (verb == NULL)
                return false;
        if (strcmp(verb, "get_server_list") == 0) {
                for (int i = 0; i < nservers; i++)
                        say(u, "%d\n", (int)servers[i].pid);
        } else if (strcmp(verb, "start_server") == 0) {
                char *flag = strtok_r(NULL, " \t", &save), *val = strtok_r(NULL, " \t", &save);
                if (flag == NULL || strcmp(flag, "-uid") != 0 || val == NULL)
                        say(u, "Usage: start_server -uid <user id>\n");
                else /* measured: root without the privileged socket may (the real daemon then
                      * retires another user's server; here each user keeps one) */
                        start_server((unsigned)strtoul(val, NULL, 10));
        } else if (strcmp(verb, "get_client_list") == 0) {
                struct srv *s = server_arg(&save);
                for (int i = 0; s != NULL && i < nclients; i++)
                        if (clients[i].server == s->pid)
                                say(u, "%d\n", clients[i].pid);
        } else if (strcmp(verb, "get_server_status") == 0) {
                struct srv *s = server_arg(&save);
                if (s != NULL)
                        say(u, "%s\n", s->fault ? "FAULT" : "ACTIVE");
        } else if (strstr(verb, "active_thread_percentage") != NULL &&
                   (strncmp(verb, "get_", 4) == 0 || strncmp(verb, "set_", 4) == 0)) {
                cmd_percentage(u, verb, &save);
        } else if (strcmp(verb, "shutdown_server") == 0) {
                char *v = strtok_r(NULL, " \t", &save);
                struct srv *s = v != NULL ? server_of_pid((pid_t)strtol(v, NULL, 10)) : NULL;
                if (s == NULL)
                        say(u, "Server %s not found\n", v != NULL ? v : "");
                else if (may_set(u, s))
                        kill(s->pid, SIGTERM);
        } else if (strcmp(verb, "ps") == 0) {
                if (nclients > 0)
                        say(u, "PID       ID        SERVER         DEVICE                    NAMESPACE      COMMAND\n");
                for (int i = 0; i < nclients; i++)
                        say(u, "%-9d %-9d %-14d %-25s %-14s %s\n", clients[i].pid, i + 1, (int)clients[i].server,
                            "0", "0", "?");
        } else if (strcmp(verb, "quit") == 0) {
                if (u->privileged)
                        return true;
                say(u, "Not enough privilege to execute quit command\n");
        } else {
                say(u, "Unrecognized command: %s\n", verb);
        }
        return false;
}

/* One connection on a listening socket: a UI command (answered, closed) or a CUDA client. */
static bool serve(int lfd, bool privileged)
{
        int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
                return false;
        logf_("Accepting connection...");
        struct ucred cred = {0};
        socklen_t cl = sizeof(cred);
        getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &cl);
        char buf[4096];
        size_t n = 0;
        for (;;) {
                struct pollfd p = {.fd = c, .events = POLLIN};
                if (poll(&p, 1, 2000) <= 0)
                        break;
                ssize_t r = read(c, buf + n, sizeof(buf) - 1 - n);
                if (r <= 0)
                        break;
                n += (size_t)r;
                if (memchr(buf, '\n', n) != NULL || n == sizeof(buf) - 1)
                        break;
        }
        buf[n] = '\0';
        if (strncmp(buf, "CLIENT ", 7) == 0) {
                new_client(c, cred.uid, buf + 7);
                return false;
        }
        if (n == 0) { /* a probe (is anybody listening?) */
                close(c);
                return false;
        }
        char reply[8192];
        reply[0] = '\0';
        struct ui u = {.uid = cred.uid, .privileged = privileged, .reply = reply, .len = sizeof(reply)};
        bool quit = command(&u, buf);
        ssize_t w = write(c, reply, strlen(reply));
        (void)w;
        close(c);
        logf_("UI closed");
        return quit;
}

static int listen_on(const char *name, mode_t mode)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        if (path_in(sa.sun_path, sizeof(sa.sun_path), pipe_dir, name) < 0) {
                logf_("Cannot bind %s/%s: path too long for a UNIX socket", pipe_dir, name);
                return -1;
        }
        unlink(sa.sun_path); /* a socket left by an earlier daemon */
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 16) < 0) {
                logf_("Cannot bind %s: %s", sa.sun_path, strerror(errno));
                if (fd >= 0)
                        close(fd);
                return -1;
        }
        chmod(sa.sun_path, mode);
        return fd;
}

static void shutdown_daemon(int lfd, int pfd)
{
        logf_("Shutting down");
        for (int i = 0; i < nclients; i++)
                close(clients[i].fd);
        nclients = 0;
        for (int i = 0; i < nservers; i++)
                kill(servers[i].pid, SIGTERM);
        for (int t = 0; t < 500 && nservers > 0; t++) {
                reap();
                struct timespec ts = {0, 10 * 1000 * 1000};
                nanosleep(&ts, NULL);
        }
        for (int i = 0; i < nservers; i++)
                kill(servers[i].pid, SIGKILL);
        reap();
        char path[4096];
        if (path_in(path, sizeof(path), pipe_dir, PID_FILE) == 0)
                unlink(path);
        close(lfd);
        close(pfd);
        logf_("Exit");
}

/* The pipe directory's other files: control_lock, the log FIFO, the pid file (last). */
static int make_files(void)
{
        char path[4096];
        if (path_in(path, sizeof(path), pipe_dir, "control_lock") == 0) {
                int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
                if (fd >= 0) {
                        fchmod(fd, 0666);
                        close(fd);
                }
        }
        if (path_in(path, sizeof(path), pipe_dir, "log") == 0) {
                unlink(path); /* a FIFO left by an earlier daemon */
                if (mkfifo(path, 0777) < 0) {
                        logf_("Cannot create the log pipe %s: %s", path, strerror(errno));
                        return -1;
                }
                chmod(path, 0777);
        }
        if (path_in(path, sizeof(path), pipe_dir, PID_FILE) == 0) {
                int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
                if (fd < 0) {
                        logf_("Cannot write %s: %s", path, strerror(errno));
                        return -1;
                }
                fchmod(fd, 0666);
                dprintf(fd, "%d", (int)getpid());
                close(fd);
        }
        return 0;
}

static void run_loop(int lfd, int pfd)
{
        while (!stop_requested) {
                reap();
                struct pollfd p[2 + MAX_CLIENTS];
                p[0] = (struct pollfd){.fd = lfd, .events = POLLIN};
                p[1] = (struct pollfd){.fd = pfd, .events = POLLIN};
                int nc = nclients;
                for (int i = 0; i < nc; i++)
                        p[2 + i] = (struct pollfd){.fd = clients[i].fd, .events = POLLIN};
                if (poll(p, (nfds_t)(2 + nc), 200) <= 0)
                        continue;
                for (int i = nc - 1; i >= 0; i--)
                        if (p[2 + i].revents != 0 && i < nclients && clients[i].fd == p[2 + i].fd)
                                client_says(i);
                if ((p[0].revents & POLLIN) && serve(lfd, false))
                        break;
                if ((p[1].revents & POLLIN) && serve(pfd, true))
                        break;
        }
}

static int daemon_main(bool background)
{
        if (live_daemon() != 0) {
                fprintf(stderr, "An instance of this daemon is already running\n");
                return 1;
        }
        struct stat st;
        int sr = stat(pipe_dir, &st);
        if (sr < 0 || !S_ISDIR(st.st_mode)) {
                fprintf(stderr, "Cannot use the pipe directory %s: %s\n", pipe_dir,
                        sr < 0 ? strerror(errno) : "not a directory");
                return 1;
        }
        char path[4096];
        if (path_in(path, sizeof(path), log_dir, "control.log") < 0 ||
            (log_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644)) < 0) {
                fprintf(stderr, "Cannot open the log file %s/control.log: %s\n", log_dir, strerror(errno));
                return 1;
        }
        if (background) {
                pid_t p = fork();
                if (p < 0)
                        return 1;
                if (p > 0)
                        return 0; /* before the daemon is ready: callers wait for it themselves */
                setsid();
                if ((p = fork()) != 0)
                        _exit(p < 0);
                int null = open("/dev/null", O_RDWR);
                if (null >= 0) {
                        dup2(null, 0);
                        dup2(null, 1);
                        dup2(null, 2);
                        if (null > 2)
                                close(null);
                }
        }
        if (chdir("/") < 0)
                return 1;
        struct sigaction sa = {.sa_handler = on_term};
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        signal(SIGPIPE, SIG_IGN);

        char sock[4096];
        snprintf(sock, sizeof(sock), "%s/control", pipe_dir);
        logf_("Starting control daemon using socket %s", sock);
        logf_("To connect CUDA applications to this daemon, set env CUDA_MPS_PIPE_DIRECTORY=%s", pipe_dir);
        logf_("CUDA MPS Control binary version: 13000");
        int lfd = listen_on("control", 0666);
        int pfd = lfd >= 0 ? listen_on("control_privileged", 0755) : -1;
        if (lfd < 0 || pfd < 0 || make_files() < 0)
                return 1;
        run_loop(lfd, pfd);
        shutdown_daemon(lfd, pfd);
        return 0;
}

int main(int argc, char **argv)
{
        const char *e = getenv("CUDA_MPS_PIPE_DIRECTORY");
        pipe_dir = e != NULL && *e != '\0' ? e : "/tmp/nvidia-mps";
        e = getenv("CUDA_MPS_LOG_DIRECTORY");
        log_dir = e != NULL && *e != '\0' ? e : "/var/log/nvidia-mps";

        const char *base = argc > 0 ? strrchr(argv[0], '/') : NULL;
        base = base != NULL ? base + 1 : (argc > 0 ? argv[0] : "");
        if (strcmp(base, "nvidia-cuda-mps-server") == 0)
                return server();
        if (argc == 1)
                return client();
        if (argc == 2 && strcmp(argv[1], "-d") == 0)
                return daemon_main(true);
        if (argc == 2 && strcmp(argv[1], "-f") == 0)
                return daemon_main(false);
        fprintf(stderr, "Usage: nvidia-cuda-mps-control [-d | -f]\n");
        return 1;
}
