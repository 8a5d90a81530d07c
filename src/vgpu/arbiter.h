/*
 * The GPU arbiter (arbiter.c): slices that share a GPU take turns on it, in proportion to their
 * shares, instead of overlapping (two contexts at once make the driver time-slice the GPU between
 * them, and each would get less than its share of throughput).
 *
 * One small file per GPU, `<GPUSLICE_ARBITER_DIR>/gpuslice-gpu-<UUID>` (default /dev/shm; the
 * hook and configure bind-mount the host's file into a container), mapped by every compute-limited
 * process on that GPU. A slice holds a lease on the GPU for up to a quantum while others want it;
 * the next lease goes to the wanting slice that has received the least GPU time per unit of
 * share (weighted fair queuing). A holder stops launching at the end of its quantum, lets its
 * queued work finish, then hands over. Leases expire (a dead holder blocks nobody). Everything is
 * lock-free; the launch path reads one word.
 *
 * Layout (version 1, 8192 bytes):
 *   0   magic "GSARB\0\0\1"      8   version (1)    12  slots (64)
 *   16  lease: holder slot + 1 in the top 16 bits, expiry (CLOCK_MONOTONIC ns >> 10) below; 0 = free
 *   64  slots[64], 64 bytes each: key (the slice's identity, 0 = free), want_ns (last demand),
 *       vtime (GPU ns received x 10000 / weight), weight (basis points)
 */
#ifndef GS_VGPU_ARBITER_H
#define GS_VGPU_ARBITER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GS_ARB_SLOTS 64

struct gs_arb_slot {
        _Atomic uint64_t key;
        _Atomic uint64_t want_ns;
        _Atomic uint64_t vtime;
        _Atomic uint32_t weight;
        uint32_t reserved0;
        uint64_t reserved[4];
};

struct gs_arb_file {
        _Atomic uint64_t magic;
        uint32_t version;
        uint32_t slots;
        _Atomic uint64_t lease;
        uint64_t reserved[5];
        struct gs_arb_slot slot[GS_ARB_SLOTS];
        unsigned char pad[8192 - 64 - GS_ARB_SLOTS * 64];
};

_Static_assert(sizeof(struct gs_arb_slot) == 64, "arbiter slot");
_Static_assert(sizeof(struct gs_arb_file) == 8192, "arbiter file");

/* One slice's view of one GPU's arbiter. */
struct gs_arb {
        struct gs_arb_file *f;
        int idx;              /* our slot, -1 = none */
        uint64_t key;
        uint32_t weight;
        bool draining;        /* our quantum is over: no new launches until we hand over */
        uint64_t since;       /* when we took the lease */
};

/* Map the GPU's arbiter file and take a slot for the slice `key` with `weight` (basis points);
 * 0, or -1 (the slice runs without arbitration: logged by the caller). */
int gs_arb_open(struct gs_arb *a, const char *dir, const char *uuid, uint64_t key, uint32_t weight);

/* The launch path: may this slice launch now? (one load) */
static inline bool gs_arb_may_launch(const struct gs_arb *a)
{
        if (a->f == NULL)
                return true;
        uint64_t l = atomic_load_explicit(&a->f->lease, memory_order_relaxed);
        return (int)(l >> 48) == a->idx + 1 && !__atomic_load_n(&a->draining, __ATOMIC_RELAXED);
}

/* A launching thread that waits for the GPU: take it as soon as it is our turn. */
void gs_arb_try_take(struct gs_arb *a, uint64_t now);

/* The ticker, every tick: `wanting` (work queued, launches waiting or recent), `busy_ns` (GPU
 * time measured since the last call), `idle` (nothing of ours is queued or running). */
void gs_arb_tick(struct gs_arb *a, uint64_t now, bool wanting, uint64_t busy_ns, bool idle);

#endif
