/*
 * The GPU arbiter (arbiter.c): slices that share a GPU take turns on it, in proportion to their
 * shares, instead of overlapping (two contexts at once make the driver time-slice the GPU between
 * them, and each would get less than its share of throughput).
 *
 * One directory per GPU, `<dir>/gpuslice-gpu-<UUID>/`, and in it one small file per slice, named
 * after the slice (a container's id; `x-<key in hex>` for others). A slice writes only its
 * own file (mapped by its processes) and reads the others' with pread(), off the launch path: the
 * slices of a GPU need not trust each other. A file another slice truncates, fills with garbage or
 * replaces by a FIFO is skipped; nothing it writes can crash us or make us wait more than the
 * limiter's turn-wait bound. The hook makes the directory (sticky, world-writable on the host, so
 * that host slices of any user can add their file) and the container's own file, and mounts the
 * directory read-only into the container with only its own file writable.
 *
 * Turns: a slice holds a lease on the GPU while others want it for up to a quantum; the next goes
 * to the wanting slice that has received the least GPU time per unit of share (weighted fair
 * queuing, ties by name). A holder stops launching at the end of its quantum, lets its queued work
 * finish, then hands over. A lease is good for two quanta unless renewed (a dead holder blocks
 * nobody); a record that claims a lease further ahead than that is no peer's (a hostile writer's):
 * neither its lease nor its demand counts.
 * Two slices that take the GPU at the same instant see each other within a refresh (1 ms), and the
 * later one (then the greater name) backs off.
 *
 * A slice's file (version 2, 64 bytes, little-endian host order):
 *   0  magic "GSARB\0\0\2"   8  want_ns (CLOCK_MONOTONIC of its last demand)
 *   16 vtime (GPU ns received x 10000 / weight)   24 since (lease taken; 0 = not holding)
 *   32 until (lease good until)   40 weight (basis points)   44 state (0 free, 1 holding, 2 draining)
 *   48 alive_ns (its processes' last tick)
 * The file of a slice without a name of its own ("x-<16 hex digits>", from its region) that has not
 * ticked for a minute is removed by the next reader allowed to (the slice, if it comes back, makes
 * it again); a container's file is removed by the hook when the container goes.
 */
#ifndef GS_VGPU_ARBITER_H
#define GS_VGPU_ARBITER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define GS_ARB_PEERS 63    /* other slices read per GPU */
#define GS_ARB_NAME_MAX 256 /* as a container id */

enum { GS_ARB_FREE = 0, GS_ARB_HOLDING = 1, GS_ARB_DRAINING = 2 };

struct gs_arb_rec {
        _Atomic uint64_t magic;
        _Atomic uint64_t want_ns;
        _Atomic uint64_t vtime;
        _Atomic uint64_t since;
        _Atomic uint64_t until;
        _Atomic uint32_t weight;
        _Atomic uint32_t state;
        _Atomic uint64_t alive_ns;
        uint64_t reserved;
};
_Static_assert(sizeof(struct gs_arb_rec) == 64, "arbiter record");

/* What we last read of another slice. */
struct gs_arb_peer {
        char name[GS_ARB_NAME_MAX];
        int fd;
        bool valid;               /* the last read gave a whole record of this version */
        uint64_t want_ns, vtime, since, until, alive_ns;
        uint32_t weight, state;
};

/* One slice's view of one GPU's arbiter. */
struct gs_arb {
        struct gs_arb_rec *me;    /* our slice's file (shared by its processes), NULL = none */
        int dirfd;
        char name[GS_ARB_NAME_MAX];
        uint32_t weight;
        atomic_flag busy;         /* the peer table is being refreshed (ticker or a waiting launcher) */
        _Atomic bool contended;   /* another slice wanted or held the GPU at the last refresh */
        uint64_t read_at;         /* last refresh of the peers */
        uint64_t listed_at;       /* last listing of the directory */
        int64_t dir_mtime_ns;
        unsigned npeers;
        struct gs_arb_peer peer[GS_ARB_PEERS];
};

/* Open (making them if missing and allowed) the GPU's directory under `dir` and our slice's file
 * `name` in it, with `weight` (basis points); 0, or -1 with errno (the slice runs without
 * arbitration: logged by the caller). */
int gs_arb_open(struct gs_arb *a, const char *dir, const char *uuid, const char *name, uint32_t weight);

/* The launch path: may this slice launch now? Two loads; while other slices want the GPU, also
 * the coarse clock (vDSO, no system call): a lease that ran out is not ours any more, even before
 * our ticker (late on a loaded machine) releases it, since another slice may already have taken
 * the GPU. */
static inline bool gs_arb_may_launch(const struct gs_arb *a)
{
        if (a->me == NULL)
                return true;
        if (atomic_load_explicit(&a->me->state, memory_order_relaxed) != GS_ARB_HOLDING)
                return false;
        if (!atomic_load_explicit(&a->contended, memory_order_relaxed))
                return true;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec <
               atomic_load_explicit(&a->me->until, memory_order_relaxed);
}

/* A launching thread that waits for the GPU: take it as soon as it is our turn. */
void gs_arb_try_take(struct gs_arb *a, uint64_t now);

/* The ticker, every tick: `wanting` (work queued, launches waiting or recent), `busy_ns` (GPU
 * time measured since the last call), `idle` (nothing of ours is queued or running). */
void gs_arb_tick(struct gs_arb *a, uint64_t now, bool wanting, uint64_t busy_ns, bool idle);

#endif
