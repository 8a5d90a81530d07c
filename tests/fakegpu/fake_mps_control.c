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
 *     servers are shut down), get/set_default_active_thread_percentage (default 100).
 *   - control.log lines "[YYYY-MM-DD HH:MM:SS.mmm Control <pid>] <text>" ("Starting new server
 *     <pid> for user <uid>", "NEW SERVER <pid>: Ready", "Server <pid> exited with status <n>");
 *     server.log the same with "Server".
 * Seen on real daemons (public bug reports), and done the same here:
 *   - The daemon logs "Starting control daemon using socket <dir>/control" and "To connect CUDA
 *     applications to this daemon, set env CUDA_MPS_PIPE_DIRECTORY=<dir>".
 *   - Its pipe directory holds: control (a UNIX socket, 0666), control_privileged (a socket,
 *     0755), control_lock (0666), log (a FIFO, 0777), nvidia-cuda-mps-control.pid (0666). After
 *     quit the pid file is gone and the control socket stays.
 *   - The client prints "Cannot find MPS control daemon process" and exits 1 when no daemon runs;
 *     a second `-d` says "An instance of this daemon is already running" and exits 1.
 * Guesses (not documented; say so if the real one differs): which stream those two messages go
 * to (stderr here); the pid file's text ("<pid>", no newline); `-d` returning before the daemon
 * is ready; the daemon refusing to start (exit 1, on stderr) when the pipe directory is missing
 * or control.log cannot be opened, and exiting (logged) when it cannot bind its sockets or make
 * its `log` FIFO (e.g. a directory of that name in the pipe directory); what an unknown command answers ("Unrecognized command: ...");
 * what start_server and set_default_active_thread_percentage print (nothing / the new value);
 * the log line at quit ("Exit"); how the daemon finds nvidia-cuda-mps-server (on its PATH here,
 * so a daemon without the driver's bin directory on its PATH cannot start servers). Clients are not
 * simulated: get_client_list prints nothing.
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
#define MAX_SERVERS 16

static const char *pipe_dir, *log_dir;
static char self_role[16] = "Control";
static int log_fd = -1;
static volatile sig_atomic_t stop_requested;

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
        if (log_fd < 0)
                return;
        struct timeval tv;
        gettimeofday(&tv, NULL);
        struct tm tm;
        localtime_r(&tv.tv_sec, &tm);
        char line[1024];
        int n = snprintf(line, sizeof(line), "[%04d-%02d-%02d %02d:%02d:%02d.%03ld %s %d] ", tm.tm_year + 1900,
                         tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (long)tv.tv_usec / 1000,
                         self_role, (int)getpid());
        va_list ap;
        va_start(ap, fmt);
        n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
        va_end(ap);
        if (n > (int)sizeof(line) - 2)
                n = (int)sizeof(line) - 2;
        line[n++] = '\n';
        ssize_t w = write(log_fd, line, (size_t)n);
        (void)w;
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
/* The client                                                                                  */
/* ------------------------------------------------------------------------------------------ */

static int connect_control(void)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        if (path_in(sa.sun_path, sizeof(sa.sun_path), pipe_dir, "control") < 0)
                return -1;
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -1;
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                close(fd);
                return -1;
        }
        return fd;
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
/* The server (started by the daemon as nvidia-cuda-mps-server)                                */
/* ------------------------------------------------------------------------------------------ */

static void on_term(int sig)
{
        (void)sig;
        stop_requested = 1;
}

static int server(void)
{
        snprintf(self_role, sizeof(self_role), "Server");
        char path[4096];
        if (path_in(path, sizeof(path), log_dir, "server.log") == 0)
                log_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        logf_("Startup");
        struct sigaction sa = {.sa_handler = on_term};
        sigaction(SIGTERM, &sa, NULL);
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        while (!stop_requested)
                pause();
        logf_("Server is shutting down");
        return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* The control daemon                                                                          */
/* ------------------------------------------------------------------------------------------ */

struct srv {
        pid_t pid;
        unsigned uid;
};

static struct srv servers[MAX_SERVERS];
static int nservers;
static double default_pct = 100.0;

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
                logf_("Server %d exited with status %d", (int)p, WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
        }
}

static void start_server(unsigned uid)
{
        for (int i = 0; i < nservers; i++)
                if (servers[i].uid == uid)
                        return; /* one server per user: this one serves it */
        if (nservers == MAX_SERVERS)
                return;
        pid_t p = fork();
        if (p < 0)
                return;
        if (p == 0) {
                if (getuid() == 0 && uid != 0 && (setgid(uid) < 0 || setuid(uid) < 0))
                        _exit(1);
                char *const argv[] = {"nvidia-cuda-mps-server", NULL};
                execvp(argv[0], argv); /* the daemon's PATH */
                _exit(127);
        }
        servers[nservers++] = (struct srv){.pid = p, .uid = uid};
        logf_("Starting new server %d for user %u", (int)p, uid);
        logf_("NEW SERVER %d: Ready", (int)p);
}

/* One command; the answer into reply. Returns true for quit. */
static bool command(char *cmd, char *reply, size_t len)
{
        reply[0] = '\0';
        cmd[strcspn(cmd, "\r\n")] = '\0';
        logf_("Command: %s", cmd);
        char *save = NULL, *verb = strtok_r(cmd, " \t", &save);
        if (verb == NULL)
                return false;
        if (strcmp(verb, "get_server_list") == 0) {
                size_t n = 0;
                for (int i = 0; i < nservers && n < len; i++)
                        n += (size_t)snprintf(reply + n, len - n, "%d\n", (int)servers[i].pid);
        } else if (strcmp(verb, "start_server") == 0) {
                char *flag = strtok_r(NULL, " \t", &save), *val = strtok_r(NULL, " \t", &save);
                if (flag == NULL || strcmp(flag, "-uid") != 0 || val == NULL)
                        snprintf(reply, len, "Usage: start_server -uid <user id>\n");
                else
                        start_server((unsigned)strtoul(val, NULL, 10));
        } else if (strcmp(verb, "get_client_list") == 0) {
                /* no clients are simulated */
        } else if (strcmp(verb, "get_default_active_thread_percentage") == 0) {
                snprintf(reply, len, "%.1f\n", default_pct);
        } else if (strcmp(verb, "set_default_active_thread_percentage") == 0) {
                char *val = strtok_r(NULL, " \t", &save);
                double v = val != NULL ? strtod(val, NULL) : 0;
                if (v > 0 && v <= 100)
                        default_pct = v;
                snprintf(reply, len, "%.1f\n", default_pct);
        } else if (strcmp(verb, "quit") == 0) {
                return true;
        } else {
                snprintf(reply, len, "Unrecognized command: %s\n", verb);
        }
        return false;
}

/* One connection: a command line in, the answer out. */
static bool serve(int lfd)
{
        int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
                return false;
        logf_("Accepting connection...");
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
        char reply[4096];
        bool quit = command(buf, reply, sizeof(reply));
        ssize_t w = write(c, reply, strlen(reply));
        (void)w;
        close(c);
        return quit;
}

static void shutdown_daemon(int lfd, int pfd)
{
        logf_("Shutting down");
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
        int lfd = listen_on("control", 0666);
        int pfd = lfd >= 0 ? listen_on("control_privileged", 0755) : -1;
        if (lfd < 0 || pfd < 0)
                return 1;
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
                        return 1;
                }
                chmod(path, 0777);
        }
        if (path_in(path, sizeof(path), pipe_dir, PID_FILE) == 0) {
                int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
                if (fd < 0) {
                        logf_("Cannot write %s: %s", path, strerror(errno));
                        return 1;
                }
                fchmod(fd, 0666);
                dprintf(fd, "%d", (int)getpid());
                close(fd);
        }
        while (!stop_requested) {
                reap();
                struct pollfd p = {.fd = lfd, .events = POLLIN};
                if (poll(&p, 1, 200) > 0 && serve(lfd))
                        break;
        }
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
