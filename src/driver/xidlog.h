/*
 * The NVIDIA driver's XID lines in the kernel's log, with the process they name. NVML's XID event
 * carries no pid; the driver's line in the kernel ring buffer does:
 *
 *   NVRM: Xid (PCI:0000:3b:00): 31, pid=12345, name=python3, channel 0x0000000a, intr 00000000. MMU Fault: ...
 *   NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception ...
 *   NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.            (older drivers: no pid)
 *
 * The pid is the process's pid in the host's pid namespace (the kernel's tgid); the name is its
 * comm (the process's own choice, so shown sanitized, never trusted). Read from /dev/kmsg, whose
 * records read as "PRIO,SEQ,TIMESTAMP_US,FLAGS[,...];MESSAGE\n" followed by dictionary lines that
 * begin with a blank. Only records the kernel wrote count: a process that writes /dev/kmsg (root
 * on the host; a container has no /dev/kmsg) gets the facility LOG_USER, never 0 (kern), whatever
 * prefix it writes, and its lines are ignored.
 *
 * The reader never blocks: the file is opened O_NONBLOCK at its end (only records written after
 * the open), a call reads what is there up to a bound and returns. /dev/kmsg (a character
 * device) and a FIFO can be polled; a regular file (a test's) is read again on a timer. Records
 * the kernel overwrote before they were read (EPIPE) are counted in `lost`.
 */
#ifndef GS_DRIVER_XIDLOG_H
#define GS_DRIVER_XIDLOG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include <gpuslice/gpuslice.h>

#define GS_XIDLOG_DEFAULT "/dev/kmsg"
#define GS_XIDLOG_NAME 17  /* TASK_COMM_LEN + 1 */
#define GS_XIDLOG_TEXT 240 /* the driver's words after the name, truncated */

struct gs_xid_record {
        unsigned long long xid;
        unsigned domain, bus, device;   /* the PCI address the line names (PCI:dddd:bb:dd) */
        int pid;                        /* host pid; 0: the driver could not tell (or an older driver) */
        char name[GS_XIDLOG_NAME];      /* the process's comm, printable ASCII only; "" unknown */
        char text[GS_XIDLOG_TEXT];      /* the rest of the line, printable ASCII only */
        unsigned long long ts_us;       /* the record's timestamp (microseconds since boot) */
};

/* XIDs an application causes (NVIDIA's device plugin skips the same ones): 13 graphics engine
 * exception, 31 GPU memory page fault, 43 GPU stopped processing, 45 preemptive cleanup, 68 video
 * processor exception, 109 context switch timeout. */
bool gs_xid_application(unsigned long long xid);
/* What an application XID means ("GPU memory page fault"), or "" for another. */
const char *gs_xid_meaning(unsigned long long xid);

/* One line of /dev/kmsg's read format: true when it is an NVRM Xid record the kernel wrote
 * (facility 0), *r filled. Never trusts more than the line's syntax. */
bool gs_xid_parse_kmsg(const char *line, struct gs_xid_record *r);

struct gs_xidlog {
        int fd;
        bool pollable;          /* a character device or a FIFO: poll(2) it */
        bool skipping;          /* in a line longer than the buffer: dropped up to its end */
        unsigned long long lost; /* records overwritten before they were read (EPIPE) */
        size_t len;
        char buf[8192];
};

/* Open PATH (/dev/kmsg, or a test's file) at its end, non-blocking. -1 with err. */
int gs_xidlog_open(struct gs_xidlog *l, const char *path, struct gs_error *err);
/* The fd to poll for POLLIN, or -1 (a regular file: read it on a timer). */
int gs_xidlog_fd(const struct gs_xidlog *l);
/* Read what is there now, at most `max_lines` lines, and call fn for each XID record the kernel
 * wrote. Returns the lines read (0: nothing new); -1 with err when the file cannot be read. */
int gs_xidlog_read(struct gs_xidlog *l, unsigned max_lines, void (*fn)(void *ud, const struct gs_xid_record *r),
                   void *ud, struct gs_error *err);
void gs_xidlog_close(struct gs_xidlog *l);

#endif
