/*
 * region_tool: usage-region files for the observer's tests and benchmark, written through the
 * ABI (src/region/region.h) without the interposer (contents: synth.h).
 *   region_tool synth PATH NDEV NPROCS SEED    a valid region
 *   region_tool corrupt KIND PATH              a region damaged one way (synth.h lists the kinds)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int main(int argc, char **argv)
{
        static struct gs_region_file f;
        if (argc == 6 && strcmp(argv[1], "synth") == 0) {
                int ndev = atoi(argv[3]), nprocs = atoi(argv[4]);
                if (ndev < 1 || ndev > GS_REGION_MAX_DEVICES || nprocs < 0 || nprocs > GS_REGION_MAX_PROCS)
                        return 2;
                gs_synth_region(&f, (unsigned)ndev, (unsigned)nprocs, (unsigned)atoi(argv[5]));
                return write_file(argv[2], &f, sizeof(f), 0);
        }
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
