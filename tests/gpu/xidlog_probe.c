/*
 * xidlog-probe: the kernel log's XID records as the DRA plugin reads them (src/driver/xidlog.c),
 * for tests/gpu/xid_kmsg_check.sh on the GPU host.
 *   xidlog-probe SECONDS [PATH]    reads PATH (default /dev/kmsg) from its end for SECONDS and
 *                                  prints one line per XID record the kernel wrote:
 *                                  "xid=N pci=dddd:bb:dd pid=P name=COMM text=..."
 * "ready" is printed once the log is open (the records written after it are seen).
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "driver/xidlog.h"

static void print(void *ud, const struct gs_xid_record *r)
{
        (void)ud;
        printf("xid=%llu pci=%04x:%02x:%02x pid=%d name=%s text=%s\n", r->xid, r->domain, r->bus, r->device, r->pid,
               r->name, r->text);
        fflush(stdout);
}

int main(int argc, char **argv)
{
        double secs = argc > 1 ? atof(argv[1]) : 5;
        struct gs_xidlog l;
        struct gs_error err = {0};
        if (gs_xidlog_open(&l, argc > 2 ? argv[2] : GS_XIDLOG_DEFAULT, &err) < 0) {
                fprintf(stderr, "xidlog-probe: %s\n", err.msg);
                return 1;
        }
        printf("ready\n");
        fflush(stdout);
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        do {
                struct pollfd p = {.fd = gs_xidlog_fd(&l), .events = POLLIN};
                poll(&p, p.fd >= 0 ? 1 : 0, 100);
                if (gs_xidlog_read(&l, 256, print, NULL, &err) < 0) {
                        fprintf(stderr, "xidlog-probe: %s\n", err.msg);
                        return 1;
                }
                clock_gettime(CLOCK_MONOTONIC, &t);
        } while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
        if (l.lost > 0)
                printf("lost=%llu\n", l.lost);
        gs_xidlog_close(&l);
        return 0;
}
