/* The NVIDIA driver's XID lines in the kernel's log (see xidlog.h). */
#include "driver/xidlog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"

#define READ_MAX (64 * 1024) /* bytes read in one call at most */

static const struct {
        unsigned long long xid;
        const char *meaning;
} app_xids[] = {
        {13, "graphics engine exception"}, {31, "GPU memory page fault"},  {43, "GPU stopped processing"},
        {45, "preemptive cleanup"},        {68, "video processor exception"}, {109, "context switch timeout"},
};

bool gs_xid_application(unsigned long long xid)
{
        return gs_xid_meaning(xid)[0] != '\0';
}

const char *gs_xid_meaning(unsigned long long xid)
{
        for (size_t i = 0; i < sizeof(app_xids) / sizeof(app_xids[0]); i++)
                if (app_xids[i].xid == xid)
                        return app_xids[i].meaning;
        return "";
}

/* Copy at most n bytes of src, printable ASCII only (others '?'), NUL-terminated in size. */
static void printable(char *dst, size_t size, const char *src, size_t n)
{
        size_t k = 0;
        for (size_t i = 0; i < n && src[i] != '\0' && k + 1 < size; i++)
                dst[k++] = src[i] >= 0x20 && src[i] < 0x7f ? src[i] : '?';
        dst[k] = '\0';
}

/* An unsigned number in `base` at *p, moving *p past it; false when there is none. */
static bool number(const char **p, int base, unsigned long long max, unsigned long long *out)
{
        char *end;
        if (**p < '0' || (**p > '9' && base == 10) || **p == '-' || **p == '+')
                return false;
        errno = 0;
        unsigned long long v = strtoull(*p, &end, base);
        if (end == *p || errno != 0 || v > max)
                return false;
        *p = end;
        *out = v;
        return true;
}

static bool skip(const char **p, const char *lit)
{
        size_t n = strlen(lit);
        if (strncmp(*p, lit, n) != 0)
                return false;
        *p += n;
        return true;
}

/* "pid=N, name=COMM, " or "pid='<unknown>', name=<unknown>, " after the XID; none on older drivers. */
static void process_of(const char **p, struct gs_xid_record *r)
{
        unsigned long long pid;
        if (!skip(p, "pid="))
                return;
        if (number(p, 10, INT_MAX, &pid))
                r->pid = (int)pid;
        else if (!skip(p, "'<unknown>'") && !skip(p, "<unknown>"))
                return;
        if (!skip(p, ", "))
                return;
        if (!skip(p, "name="))
                return;
        const char *end = strstr(*p, ", ");
        size_t n = end != NULL ? (size_t)(end - *p) : strlen(*p);
        if (strncmp(*p, "<unknown>", n) != 0 || n != 9)
                printable(r->name, sizeof(r->name), *p, n);
        *p += n;
        skip(p, ", ");
}

bool gs_xid_parse_kmsg(const char *line, struct gs_xid_record *r)
{
        const char *p = line;
        unsigned long long prio, seq, ts, v;
        memset(r, 0, sizeof(*r));
        /* PRIO,SEQ,TS,FLAGS[,...];  the facility (prio >> 3) of a kernel record is 0 */
        if (!number(&p, 10, 1u << 20, &prio) || !skip(&p, ",") || !number(&p, 10, ~0ull, &seq) || !skip(&p, ",") ||
            !number(&p, 10, ~0ull, &ts) || *p != ',' || (p = strchr(p, ';')) == NULL)
                return false;
        if (prio >> 3 != 0)
                return false; /* written by a process, not the kernel */
        p++;
        if (!skip(&p, "NVRM: Xid (PCI:") || !number(&p, 16, 0xffff, &v))
                return false;
        r->domain = (unsigned)v;
        if (!skip(&p, ":") || !number(&p, 16, 0xff, &v))
                return false;
        r->bus = (unsigned)v;
        if (!skip(&p, ":") || !number(&p, 16, 0x1f, &v))
                return false;
        r->device = (unsigned)v;
        if (!skip(&p, "): ") || !number(&p, 10, ~0ull, &r->xid))
                return false;
        r->ts_us = ts;
        if (skip(&p, ", "))
                process_of(&p, r);
        size_t n = strcspn(p, "\n");
        printable(r->text, sizeof(r->text), p, n);
        return true;
}

int gs_xidlog_open(struct gs_xidlog *l, const char *path, struct gs_error *err)
{
        memset(l, 0, sizeof(*l));
        l->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (l->fd < 0)
                return gs_error_sys(err, "open %s", path);
        struct stat st;
        if (fstat(l->fd, &st) < 0 || !(S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISREG(st.st_mode))) {
                gs_xidlog_close(l);
                return gs_error_set(err, GS_EINVAL, "%s is not the kernel's log (a character device, a FIFO or a file)",
                                    path);
        }
        l->pollable = !S_ISREG(st.st_mode);
        if (!S_ISFIFO(st.st_mode))
                (void)lseek(l->fd, 0, SEEK_END); /* /dev/kmsg: after the last record; a file: its end */
        return 0;
}

int gs_xidlog_fd(const struct gs_xidlog *l)
{
        return l->fd >= 0 && l->pollable ? l->fd : -1;
}

/* The complete lines in the buffer, at most `max` of them: the rest moved to its start. */
static unsigned lines(struct gs_xidlog *l, unsigned max, void (*fn)(void *, const struct gs_xid_record *), void *ud)
{
        unsigned n = 0;
        size_t start = 0;
        char *nl;
        while (n < max && (nl = memchr(l->buf + start, '\n', l->len - start)) != NULL) {
                *nl = '\0';
                struct gs_xid_record r;
                if (!l->skipping && l->buf[start] != ' ' && gs_xid_parse_kmsg(l->buf + start, &r))
                        fn(ud, &r);
                l->skipping = false;
                start = (size_t)(nl - l->buf) + 1;
                n++;
        }
        memmove(l->buf, l->buf + start, l->len - start);
        l->len -= start;
        if (l->len == sizeof(l->buf)) { /* a line longer than the buffer: not the driver's */
                l->len = 0;
                l->skipping = true;
        }
        return n;
}

int gs_xidlog_read(struct gs_xidlog *l, unsigned max_lines, void (*fn)(void *ud, const struct gs_xid_record *r),
                   void *ud, struct gs_error *err)
{
        unsigned n = 0;
        size_t got = 0;
        if (l->fd < 0)
                return 0;
        n += lines(l, max_lines, fn, ud);
        while (n < max_lines && got < READ_MAX) {
                ssize_t r = read(l->fd, l->buf + l->len, sizeof(l->buf) - l->len);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0 && errno == EPIPE) { /* overwritten before we read them: go on from the oldest left */
                        l->lost++;
                        continue;
                }
                if (r < 0 && (errno == EAGAIN || (errno == EINVAL && l->len > 0)))
                        break; /* nothing new; or a /dev/kmsg record larger than the room left: next call */
                if (r < 0)
                        return gs_error_sys(err, "read the kernel's log");
                if (r == 0)
                        break;
                l->len += (size_t)r;
                got += (size_t)r;
                n += lines(l, max_lines - n, fn, ud);
        }
        return (int)n;
}

void gs_xidlog_close(struct gs_xidlog *l)
{
        if (l->fd >= 0)
                close(l->fd);
        l->fd = -1;
}
