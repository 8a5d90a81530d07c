/*
 * arb_liar: a neighbour on a GPU's arbiter that lies in everything it can write (its own record,
 * as a container's processes can: the record is the one file of the GPU's arbiter directory
 * mounted writable into the container). It runs no GPU work of its own: what an honest slice
 * beside it gets is the arbiter's doing alone.
 *   arb_liar DIR UUID NAME SECONDS HOLD_MS FREE_MS
 * For SECONDS it repeats: HOLD_MS claiming the GPU (holding, a lease renewed just inside what a
 * reader accepts, taken at the start of time by cutting a turn, class high, owed its share,
 * virtual time 0, weight 100 %, wanting all the time, no GPU time received), then FREE_MS not
 * holding and not wanting it (so that an honest slice gets a turn now and then: a little more than
 * the limiter's last-resort bound, "an eighth of the share", as the liar did).
 * LIAR_HOST=WEIGHT_BP,PRIO,MODE writes first what the host side writes for such a slice (its
 * host record: weight in basis points, GS_ARB_PRIO_*, 0 cap / 1 share), as the hook does for a
 * container: the liar's allocation, which it cannot change.
 * HOLD_MS 0: never holds, but wants the GPU first in line all the time (class high, owed, virtual
 * time 0), which stops every other slice from taking it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "vgpu/arbiter.h"

static uint64_t mono_ns(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
        if (argc != 7) {
                fprintf(stderr, "usage: arb_liar DIR UUID NAME SECONDS HOLD_MS FREE_MS\n");
                return 2;
        }
        char path[1024];
        snprintf(path, sizeof(path), "%s/gpuslice-gpu-%s", argv[1], argv[2]);
        mkdir(path, 01777);
        const char *host = getenv("LIAR_HOST");
        if (host != NULL) {
                struct gs_arb_host h = {.magic = GS_ARB_HOST_MAGIC};
                if (sscanf(host, "%u,%u,%u", &h.weight, &h.prio, &h.mode) != 3)
                        return 2;
                snprintf(path, sizeof(path), "%s/gpuslice-gpu-%s/" GS_ARB_HOST_PREFIX "%s", argv[1], argv[2], argv[3]);
                int hfd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                if (hfd < 0 || write(hfd, &h, sizeof(h)) != (ssize_t)sizeof(h)) {
                        perror(path);
                        return 1;
                }
                close(hfd);
        }
        snprintf(path, sizeof(path), "%s/gpuslice-gpu-%s/%s", argv[1], argv[2], argv[3]);
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0 || ftruncate(fd, sizeof(struct gs_arb_rec)) < 0) {
                perror(path);
                return 1;
        }
        struct gs_arb_rec *r = mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (r == MAP_FAILED) {
                perror("mmap");
                return 1;
        }
        uint64_t hold = strtoull(argv[5], NULL, 10) * 1000000u, free_ns = strtoull(argv[6], NULL, 10) * 1000000u;
        uint64_t t0 = mono_ns(), end = t0 + (uint64_t)(atof(argv[4]) * 1e9), holds = 0;
        const uint64_t quantum = 40000000u;
        atomic_store(&r->magic, 0x0300004252415347ull);
        for (uint64_t now = t0; now < end; now = mono_ns()) {
                uint64_t phase = hold + free_ns > 0 ? (now - t0) % (hold + free_ns) : 0;
                bool holding = phase < hold;
                atomic_store(&r->weight, 10000);
                atomic_store(&r->prio, GS_ARB_PRIO_HIGH);
                atomic_store(&r->vtime, 0);
                atomic_store(&r->got_ns, 0);
                atomic_store(&r->alive_ns, now);
                atomic_store(&r->flags, GS_ARB_CUT | GS_ARB_OWED);
                if (holding || hold == 0)
                        atomic_store(&r->want_ns, now);
                else
                        atomic_store(&r->want_ns, now - 10 * quantum);
                if (holding) {
                        holds++;
                        atomic_store(&r->since, 1);
                        atomic_store(&r->until, now + 2 * quantum + quantum / 2);
                        atomic_store(&r->state, GS_ARB_HOLDING);
                } else {
                        atomic_store(&r->state, GS_ARB_FREE);
                        atomic_store(&r->until, 0);
                        atomic_store(&r->since, 0);
                }
                usleep(100);
        }
        atomic_store(&r->state, GS_ARB_FREE);
        atomic_store(&r->until, 0);
        printf("liar done: %llu writes while holding\n", (unsigned long long)holds);
        return 0;
}
