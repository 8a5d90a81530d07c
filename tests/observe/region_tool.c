/*
 * region_tool: usage-region files for the observer's tests and benchmark, written through the
 * ABI (src/region/region.h) without the interposer (contents: synth.h).
 *   region_tool synth PATH NDEV NPROCS SEED    a valid region
 *   region_tool synth2 PATH NDEV NPROCS SEED   the same as an older interposer wrote it (version 2)
 *   region_tool corrupt KIND PATH              a region damaged one way (synth.h lists the kinds)
 *   region_tool launch PATH DEV N WAIT_NS      N more launches on DEV of an existing region, each
 *                                              waiting WAIT_NS (0: none), as the interposer counts
 *                                              them (gs_region_note_wait, gs_region_add_launches)
 *   region_tool share PATH UUID LIMIT USED REFUSED BUSY WAIT MS
 *                                              a one-device, one-process slice as a tenant could
 *                                              leave it (the DRA plugin's usage test): made (or
 *                                              taken as it is) with device 0's UUID, quota LIMIT,
 *                                              a 30 % share, USED bytes in use and REFUSED charges
 *                                              refused; then for MS ms its busy time grows by BUSY
 *                                              and its launches' waits by WAIT (per mille of the
 *                                              wall time), written every 20 ms (a window
 *                                              of half a second sees them closely)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "synth.h"

static int write_file(const char *path, const void *data, size_t len, size_t size)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, data, len) != (ssize_t)len || (size > len && ftruncate(fd, (off_t)size) < 0)) {
                fprintf(stderr, "region_tool: %s: %s\n", path, strerror(errno));
                if (fd >= 0)
                        close(fd);
                return 1;
        }
        close(fd);
        return 0;
}

static int launch(const char *path, unsigned dev, uint64_t n, uint64_t wait_ns)
{
        struct gs_region *r = NULL;
        char err[256];
        /* the file's device count wins over the one given (gs_region_open) */
        if (gs_region_open(path, 1, NULL, NULL, &r, err, sizeof(err)) < 0) {
                fprintf(stderr, "region_tool: %s\n", err);
                return 1;
        }
        for (uint64_t i = 0; i < n; i++) {
                gs_region_add_launches(r, dev, 1);
                gs_region_note_wait(r, dev, wait_ns);
        }
        gs_region_close(r);
        return 0;
}

static uint64_t mono_ns(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int share(struct gs_region_file *f, char **a)
{
        const char *path = a[0];
        FILE *in = fopen(path, "rb");
        bool have = in != NULL && fread(f, 1, sizeof(*f), in) == sizeof(*f);
        if (in != NULL)
                fclose(in);
        if (!have)
                gs_synth_region(f, 1, 1, 0);
        snprintf(f->hdr.uuid[0], sizeof(f->hdr.uuid[0]), "%s", a[1]);
        f->hdr.limit[0] = strtoull(a[2], NULL, 10);
        f->hdr.compute_limit[0] = 3000;
        f->hdr.compute_mode = 0;
        f->slots[0].used[0] = strtoull(a[3], NULL, 10);
        f->slots[0].extra[0] = 0;
        f->hdr.refused = strtoull(a[4], NULL, 10);
        uint64_t busy = strtoull(a[5], NULL, 10), wait = strtoull(a[6], NULL, 10), ms = strtoull(a[7], NULL, 10);
        uint64_t t0 = mono_ns(), b0 = f->slots[0].busy_ns[0], w0 = f->ctr.dev[0].wait_sum_ns;
        for (;;) {
                uint64_t el = mono_ns() - t0;
                f->slots[0].busy_ns[0] = b0 + el / 1000 * busy;
                f->ctr.dev[0].wait_sum_ns = w0 + el / 1000 * wait;
                f->ctr.dev[0].wait_bucket[5] += 10;
                f->ctr.dev[0].launches += 10;
                int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                if (fd < 0 || pwrite(fd, f, sizeof(*f), 0) != (ssize_t)sizeof(*f)) {
                        fprintf(stderr, "region_tool: %s: %s\n", path, strerror(errno));
                        if (fd >= 0)
                                close(fd);
                        return 1;
                }
                close(fd);
                if (el >= ms * 1000000ull)
                        return 0;
                usleep(20000);
        }
}

int main(int argc, char **argv)
{
        static struct gs_region_file f;
        if (argc == 6 && (strcmp(argv[1], "synth") == 0 || strcmp(argv[1], "synth2") == 0)) {
                int ndev = atoi(argv[3]), nprocs = atoi(argv[4]);
                if (ndev < 1 || ndev > GS_REGION_MAX_DEVICES || nprocs < 0 || nprocs > GS_REGION_MAX_PROCS)
                        return 2;
                if (strcmp(argv[1], "synth2") == 0) {
                        gs_synth_region_v2(&f, (unsigned)ndev, (unsigned)nprocs, (unsigned)atoi(argv[5]));
                        return write_file(argv[2], &f, GS_REGION_SIZE_V2, 0);
                }
                gs_synth_region(&f, (unsigned)ndev, (unsigned)nprocs, (unsigned)atoi(argv[5]));
                return write_file(argv[2], &f, sizeof(f), 0);
        }
        if (argc == 6 && strcmp(argv[1], "launch") == 0)
                return launch(argv[2], (unsigned)atoi(argv[3]), strtoull(argv[4], NULL, 10),
                              strtoull(argv[5], NULL, 10));
        if (argc == 10 && strcmp(argv[1], "share") == 0)
                return share(&f, argv + 2);
        if (argc == 4 && strcmp(argv[1], "corrupt") == 0) {
                size_t len, size;
                if (gs_synth_corrupt(argv[2], &f, &len, &size) < 0) {
                        fprintf(stderr, "region_tool: unknown kind %s\n", argv[2]);
                        return 2;
                }
                return write_file(argv[3], &f, len, size);
        }
        fprintf(stderr, "usage: region_tool synth PATH NDEV NPROCS SEED | corrupt KIND PATH\n");
        return 2;
}
