#include "common/log.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int log_fd = -1;

int gs_log_open(const char *path)
{
        if (path == NULL || *path == '\0')
                return 0;
        int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -1;
        log_fd = fd;
        static const char banner[] = "\n-- WARNING, the following logs are for debugging purposes only --\n\n";
        if (write(log_fd, banner, sizeof(banner) - 1) < 0) {
                /* nothing sensible to do: the log is best effort */
        }
        return 0;
}

void gs_log_close(void)
{
        if (log_fd >= 0)
                close(log_fd);
        log_fd = -1;
}

int gs_log_enabled(void) { return log_fd >= 0; }

void gs_log_write(char level, const char *file, int line, const char *fmt, ...)
{
        if (log_fd < 0)
                return;
        char buf[1024];
        struct timespec ts;
        struct tm tm;
        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        const char *base = strrchr(file, '/');
        base = base != NULL ? base + 1 : file;
        int n = snprintf(buf, sizeof(buf), "%c%02d%02d %02d:%02d:%02d.%06ld %ld %s:%d] ", level,
                         tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                         ts.tv_nsec / 1000, (long)syscall(SYS_gettid), base, line);
        if (n < 0 || (size_t)n >= sizeof(buf))
                return;
        va_list ap;
        va_start(ap, fmt);
        int m = vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
        va_end(ap);
        if (m < 0)
                return;
        size_t len = (size_t)n + ((size_t)m < sizeof(buf) - (size_t)n - 1 ? (size_t)m : sizeof(buf) - (size_t)n - 2);
        buf[len++] = '\n';
        if (write(log_fd, buf, len) < 0) {
                /* best effort */
        }
}

void gs_log_warn_to(void (*sink)(void *arg, const char *line), void *arg, const char *fmt, ...)
{
        char line[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(line, sizeof(line), fmt, ap);
        va_end(ap);
        gs_log_warn("%s", line);
        if (sink != NULL)
                sink(arg, line);
}
