/* Child processes: deadlines, waiting with a deadline, descriptors across exec (proc.h). */
#include "common/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

ssize_t gs_write_child_input(int fd, const void *buf, size_t len)
{
        sigset_t pipe_only, old, pending;
        sigemptyset(&pipe_only);
        sigaddset(&pipe_only, SIGPIPE);
        sigemptyset(&pending);
        pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
        sigpending(&pending);
        bool was_pending = sigismember(&pending, SIGPIPE) == 1;
        ssize_t n;
        do
                n = write(fd, buf, len);
        while (n < 0 && errno == EINTR);
        int saved = errno;
        if (n < 0 && saved == EPIPE && !was_pending) {
                static const struct timespec now = {0, 0};
                while (sigtimedwait(&pipe_only, NULL, &now) < 0 && errno == EINTR)
                        ;
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        errno = saved;
        return n;
}

long long gs_now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int gs_wait_until(pid_t pid, long long deadline, int *status)
{
        gs_autoclose int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        for (;;) {
                pid_t r = waitpid(pid, status, WNOHANG);
                if (r == pid)
                        return 1;
                if (r < 0 && errno != EINTR)
                        return -1;
                long long left = deadline - gs_now_ms();
                if (left <= 0)
                        return 0;
                if (pidfd >= 0) {
                        struct pollfd p = {.fd = pidfd, .events = POLLIN};
                        poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
                } else {
                        struct timespec ts = {.tv_sec = 0, .tv_nsec = 2 * 1000 * 1000};
                        nanosleep(&ts, NULL);
                }
        }
}

void gs_cloexec_from_3(void)
{
#ifdef SYS_close_range
        if (syscall(SYS_close_range, 3u, ~0u, CLOSE_RANGE_CLOEXEC) == 0)
                return;
#endif
        struct rlimit rl;
        long max = 4096;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
                max = rl.rlim_cur < 1048576 ? (long)rl.rlim_cur : 1048576;
        for (long fd = 3; fd < max; fd++) {
                int fl = fcntl((int)fd, F_GETFD);
                if (fl >= 0 && !(fl & FD_CLOEXEC))
                        fcntl((int)fd, F_SETFD, fl | FD_CLOEXEC);
        }
}
