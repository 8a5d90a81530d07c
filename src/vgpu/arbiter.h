/*
 * The GPU arbiter (arbiter.c): slices that share a GPU take turns on it, in proportion to their
 * shares, instead of overlapping (two contexts at once make the driver time-slice the GPU between
 * them, and each would get less than its share of throughput).
 *
 * One directory per GPU, `<dir>/gpuslice-gpu-<UUID>/`, and in it one small file per slice, named
 * after the slice (a container's id; `x-<key in hex>` for others), and its host record
 * `.host-<name>` (struct gs_arb_host). A slice writes only its own file (mapped by its processes)
 * and reads the others' with pread(), off the launch path: the slices of a GPU need not trust each
 * other. What a reader believes of another's record (arbiter.c, "Liars"): its share, class and
 * mode only from its host record; "owed" only where it can check it; and a slice that cost the
 * reader more than its share while the reader is short of its own (neither got nor held the GPU
 * for its share of the time it wanted it) is ignored. A file another
 * slice truncates, fills with garbage or replaces by a FIFO is skipped; nothing it writes can crash
 * us or keep us below our share by more than a turn and the owed slack a window. The hook makes the directory (sticky, world-writable on the host, so
 * that host slices of any user can add their file), the container's own file (0660, the
 * container user's) and its host record (root's, 0644), and mounts the directory read-only into
 * the container with only its own file writable.
 *
 * Turns: a slice holds a lease on the GPU while others want it for up to a quantum; the next goes
 * to the wanting slice first in order: the higher priority class first, then the one that has
 * received the least GPU time per unit of share (weighted fair queuing, ties by name; a light
 * slice that wakes goes also before a slice of its class that is not light and waits without
 * holding the GPU: a batch that joined kept a request client behind a holder's quantum). A lower
 * class gets what the higher ones leave; a share-mode slice short of its share over a window
 * goes before every class (flag bit 1 below: "owed").
 * A holder stops launching at the end of its quantum, lets its queued work finish (the limiter
 * keeps that to about one kernel while the GPU is shared), then hands over. A lease is good for two
 * quanta unless renewed (a dead holder blocks nobody); a record that claims a lease further ahead
 * than that is no peer's (a hostile writer's): neither its lease nor its demand counts.
 *
 * A holder whose work runs out while others want the GPU hands it over at once (work-conserving:
 * the others use its gaps), and so does one whose work runs out while another slice is there
 * (ticked in the last 50 ms) and may want the GPU any moment: its request then finds it free
 * (kept until asked for, the turn went over only when our ticker, napping 5 ms, looked again).
 * A launcher waiting for its turn sleeps on the holder's record (a futex on its state word; the
 * record mapped read-only and handed only to the kernel, never read through the mapping: a file
 * its owner truncates is an error there, not a fault) and the holder's release wakes it, rather
 * than looking again after a nap of 0.1 ms (gs_arb_wait_turn).
 * A process that ends hands over a turn it took (gs_arb_leave, from the limiter's exit): its lease
 * would otherwise run on for up to two quanta, the GPU idle for the slices that cannot cut it.
 * A slice that joins (a new record, or one that wanted nothing for a second) gets no credit:
 * it goes twice the cut slack behind the least of the slices that are there.
 *
 * Cuts: a slice need not wait for the end of a holder's turn when it is the slack
 * (GS_ARB_CUT_SLACK) ahead of the holder in that order, and either wakes (wants the GPU after not
 * wanting it for GS_ARB_WANT_NS, or after giving its last turn up for want of work) or is of a
 * higher class than the holder; a light slice (below) that wakes may also cut the turn of a slice
 * of its class that is not light wherever the cut would stand. It then takes the GPU at
 * once, marking its record "cut"; the holder sees the cut at its next read of the others' records
 * (0.1-0.5 ms) and stops launching. The cut stands while the cutter is no further than the slack
 * behind the holder in the order (both judge this alike from the same records). A waking slice is
 * owed at most a quantum of its own GPU time: its virtual time is raised to that far behind the
 * least of the others that want or hold the GPU. So a slice that asks for little (a request now
 * and then) is served within about one neighbour kernel, and over a window every slice still gets
 * its share: whoever cuts pays for its turn in virtual time like any other.
 * Two slices that take the GPU at the same instant see each other within a refresh, and the
 * later one (then the greater name) backs off, unless it cut the other's turn.
 *
 * Asks: a launcher that does not hold the GPU notes its ask in its record (ask_ns) as it comes to
 * the gate, before the look at the others' records that its take needs (20-40 us on the H200). A
 * holder of a lower class about to launch a long kernel on a fresh look (gs_arb_poll) launches
 * nothing while an ask of a higher class (one that may cut its turn) is GS_ARB_ASK_NS fresh: it
 * looks again, and finds the take. Its look before the take was published had let a 1-2 ms batch
 * kernel start ahead of the high client's first kernel at 3-9 % of its requests (coop and two,
 * bench/RESULTS.md, twenty-second session). An ask stalls a holder for GS_ARB_ASK_NS at most
 * (a launcher asks once a launch, not at each look while it waits), and only a class that may
 * cut its turn anyway.
 *
 * Side by side: a light slice (a request client well under its share: the limiter's judge, flag
 * bit 2 of its record) launches beside the turn of one other light share-mode slice of its class
 * without taking turns (arbiter.c, "Side by side").
 *
 * A slice's file (version 3, 128 bytes, little-endian host order):
 *   0  magic "GSARB\0\0\3"   8  want_ns (CLOCK_MONOTONIC of its last demand)
 *   16 vtime (GPU ns received x 10000 / weight)   24 since (lease taken; 0 = not holding)
 *   32 until (lease good until)   40 weight (basis points)   44 state (0 free, 1 holding, 2 draining)
 *   48 alive_ns (its processes' last tick)   56 prio (0 high, 1 normal, 2 low)
 *   60 flags (bit 0: the lease was taken by cutting another slice's turn; bit 1: a share-mode
 *      slice owed its share over the window beside a higher class: believed by readers only where
 *      they can check it; bit 2: a light slice, which a light slice of its class may launch beside)
 *   (weight at 40 and prio at 56 are the slice's own view, for the observer: readers take both
 *   from its host record)
 *   64 got_ns (the GPU time the slice received, every process of it)
 *   72 ask_ns (a launcher's ask for the GPU, before its take: "Asks" below; 0 in the record of an
 *      interposer from before asks: no ask)   80..127 reserved (0)
 * A record of another version is no peer's (it takes no part in the turns).
 * The file of a slice without a name of its own ("x-<16 hex digits>", from its region) that has not
 * ticked for a minute is removed by the next reader allowed to (the slice, if it comes back, makes
 * it again); a container's file is removed by the hook when the container goes.
 * A reader holds GS_ARB_PEERS records in its table; where the directory holds more (a minute of
 * jobs that came and went), a record that ticked in the last second takes the place of one that
 * has not (arbiter.c, make_room).
 */
#ifndef GS_VGPU_ARBITER_H
#define GS_VGPU_ARBITER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "common/clock.h"

#define GS_ARB_PEERS 63    /* other slices read per GPU */
#define GS_ARB_NAME_MAX 256 /* as a container id */

enum { GS_ARB_FREE = 0, GS_ARB_HOLDING = 1, GS_ARB_DRAINING = 2 };
enum { GS_ARB_PRIO_HIGH = 0, GS_ARB_PRIO_NORMAL = 1, GS_ARB_PRIO_LOW = 2 }; /* as GS_PRIO_* */
#define GS_ARB_CUT 1u  /* flags: the lease was taken by cutting another slice's turn */
#define GS_ARB_OWED 2u /* flags: a share-mode slice short of its share beside a higher class */
#define GS_ARB_LIGHT 4u /* flags: a light slice (a request client well under its share): one of its
                         * class that is light too may launch beside its turn (arbiter.c, "Side by side") */
#define GS_ARB_BUCKETS 10 /* the owed-share window (arbiter.c) is kept in this many steps */

struct gs_arb_rec {
        _Atomic uint64_t magic;
        _Atomic uint64_t want_ns;
        _Atomic uint64_t vtime;
        _Atomic uint64_t since;
        _Atomic uint64_t until;
        _Atomic uint32_t weight;
        _Atomic uint32_t state;
        _Atomic uint64_t alive_ns;
        _Atomic uint32_t prio;
        _Atomic uint32_t flags;
        _Atomic uint64_t got_ns;
        _Atomic uint64_t ask_ns;
        uint64_t reserved[6];
};
_Static_assert(sizeof(struct gs_arb_rec) == 128, "arbiter record");

/* A slice's host record, `.host-<name>` beside its record: what its allocator gave it, written by
 * the host side (the hook for a container, `gpuslice slice set` on a change; for a slice started
 * on the host, its own processes) and never by a container (the directory is read-only there).
 * Readers take a slice's weight, class and mode from here, never from the slice's own record. */
#define GS_ARB_HOST_MAGIC 0x0100484252415347ull /* "GSARBH\0\1" little-endian */
#define GS_ARB_HOST_PREFIX ".host-"
struct gs_arb_host {
        uint64_t magic;
        uint32_t weight;          /* basis points, 1..10000 */
        uint32_t prio;            /* GS_ARB_PRIO_* */
        uint32_t mode;            /* 0 cap, 1 share (owed its share over a window) */
        uint32_t reserved[3];
};
_Static_assert(sizeof(struct gs_arb_host) == 32, "arbiter host record");

/* What we last read of another slice. */
struct gs_arb_peer {
        char name[GS_ARB_NAME_MAX];
        int fd;
        void *bell;               /* its record mapped read-only, for the futex on its state alone:
                                   * handed only to the kernel, never read here (a file its owner
                                   * truncates is EFAULT there, not SIGBUS): gs_arb_wait_turn */
        bool valid;               /* the last read gave a whole record of this version */
        uint64_t want_ns, vtime, since, until, alive_ns, got_ns;
        uint32_t state, flags;    /* (as its record says: believed no further than arbiter.c says) */
        /* From its host record (read at each listing), never from its own: its weight (basis
         * points), class (GS_ARB_PRIO_*) and mode. Without a host record: the record's weight,
         * class normal at best, cap mode; high only from a host record root wrote. */
        uint32_t weight, prio;
        bool share;
        unsigned uid;             /* the owner of its record */
        bool host_ok, host_root;  /* its host record, read at the last listing; root wrote it */
        struct gs_arb_host host;
        bool owed;                /* judged by us: it says so, is share-mode, beside a higher class,
                                   * and has not had its share of the time we wanted the GPU */
        /* What we saw it cost us: the time we wanted the GPU and did not hold it while it held the
         * GPU or wanted it ahead of us (charged), cumulative, and at each step of the window. */
        uint64_t charged, win_ch[GS_ARB_BUCKETS];
        uint64_t ahead, win_ah[GS_ARB_BUCKETS]; /* ... the part of it charged while it stood ahead
                                   * of us in line without holding the GPU (for the log) */
        uint64_t free_seen;       /* when we last read it not holding the GPU (a take it claims
                                   * from before that is no race with ours: yield_to_holder) */
        uint64_t prob_at, prob_ch, prob_want, prob_hold; /* believed again at prob_at (0: not on
                                   * probation), its `charged` and our wanting and holding then */
        bool ignored;             /* it cost us more than its share while we are short of ours:
                                   * its record takes no part in our turns (arbiter.c, judge_peers) */
};

/* One slice's view of one GPU's arbiter. */
struct gs_arb {
        struct gs_arb_rec *me;    /* our slice's file (shared by its processes), NULL = none */
        int dirfd;
        char name[GS_ARB_NAME_MAX];
        uint32_t weight;
        uint32_t prio;            /* GS_ARB_PRIO_* */
        atomic_flag busy;         /* the peer table is being refreshed (ticker or a waiting launcher) */
        _Atomic bool reread;      /* a holder gave its turn up while we waited: the next take reads afresh */
        _Atomic uint64_t woken_at; /* gs_arb_wait_turn's last wake (one a nap at most: a holder that
                                   * wakes us again and again makes us look no more often than that) */
        _Atomic bool contended;   /* another slice wanted or held the GPU at the last refresh */
        _Atomic bool shared;      /* ... or ticked in the last second (it may want the GPU any time) */
        _Atomic bool below;       /* a slice there is ahead of us by class (it may cut our turn any time) */
        _Atomic bool level;       /* a slice of our class is there (by its host record): a turn
                                   * we hold idle keeps its requests waiting */
        _Atomic uint64_t cuts;    /* turns this process took by cutting another slice's */
        _Atomic bool light;       /* we are light (the limiter's judge: gs_arb_set_light) */
        _Atomic bool pass;        /* light, share mode, and so is the one other slice that wants
                                   * or holds the GPU, of our class, none of a higher one there: we
                                   * launch beside its turn (arbiter.c, "Side by side"), until
                                   * pass_until */
        _Atomic uint64_t pass_until;
        bool woke;                /* we gave our last turn up for want of work: our next is waking */
        bool woke_taken;          /* ... we were waking when we took the turn we hold */
        uint64_t taken_since;     /* the start of the last turn this process took (gs_arb_leave) */
        bool held_back;           /* our budget was spent since we last wanted the GPU */
        uint64_t unwanted_at;     /* our ticker last saw us want nothing (note_want: waking) */
        uint64_t want_began;      /* our first demand since then (judge_owed, charge: the time we
                                   * wanted the GPU is counted from here, not from the tick before) */
        /* A turn taken, given up or handed over, and why (the limiter's log at level 4; NULL: none) */
        void (*note)(const struct gs_arb *a, const char *what);
        /* A peer's record taken for a liar's, or believed again (the limiter's log at level 2;
         * NULL: none) */
        void (*warn)(const struct gs_arb *a, const char *what);
        bool guaranteed;          /* share mode: owed its share over a window, whatever the classes */
        uint64_t win_tick, win_at, win_want;       /* the window: last tick, last step, time wanted */
        uint64_t win_hold;        /* time we wanted the GPU and held it, cumulative (judge_owed) */
        bool short_of_share;      /* over the window we neither got nor held our share of the time
                                   * we wanted, by GS_ARB_OWED_SLACK_NS (arbiter.c, judge_peers) */
        uint64_t charge_at;       /* our last charge of the others (gs_arb_tick) */
        uint64_t owed_cause_at;   /* we last wanted the GPU beside a higher class (judge_owed) */
        unsigned win_i;
        uint64_t win_got[GS_ARB_BUCKETS], win_wanted[GS_ARB_BUCKETS], win_held[GS_ARB_BUCKETS];
        uint64_t read_at;         /* last refresh of the peers */
        uint64_t listed_at;       /* last listing of the directory */
        int64_t dir_mtime_ns;
        unsigned npeers;
        struct gs_arb_peer peer[GS_ARB_PEERS];
};

/* Grow this process's descriptor table now to GS_ARB_FDS (less where RLIMIT_NOFILE is lower), for
 * the records the arbiter keeps open. Call it while the process has one thread (the interposer's
 * constructor, a forked child): a table that grows in a process of several threads waits for an
 * RCU grace period (the kernel's expand_fdtable). On the H200 host that took 5-31 ms in whichever
 * open needed the 65th descriptor, a launcher's first (the arbiter opened) or a ticker's listing
 * of a new slice, with the view of the records locked: `two`'s longest requests, 13-36 ms
 * (bench/RESULTS.md, twenty-fourth session). A table never shrinks. */
#define GS_ARB_FDS 1024
void gs_arb_reserve_fds(void);

/* Open (making them if missing and allowed) the GPU's directory under `dir` and our slice's file
 * `name` in it, with `weight` (basis points) and `prio` (GS_ARB_PRIO_*); 0, or -1 with errno (the
 * slice runs without arbitration: logged by the caller). */
int gs_arb_open(struct gs_arb *a, const char *dir, const char *uuid, const char *name, uint32_t weight, uint32_t prio,
                bool guaranteed);

/* A live change of the slice's share (basis points), priority and mode (live.c, through the
 * limiter's ticker): ours and our record's. Nothing with no record or a value out of range. */
void gs_arb_update(struct gs_arb *a, uint32_t weight, uint32_t prio, bool guaranteed);

/* A launcher waiting for its turn: wait up to `ns` for the slice holding the GPU to give it up (its
 * release wakes us: a futex on the state word of its record). 1: woken (or its state had changed:
 * the next gs_arb_try_take reads the records afresh); 0: the time ran out; -1: nothing to wait on
 * (nobody holds the GPU, or its record is not mapped), or woken less than `ns` ago: the caller
 * naps instead. */
int gs_arb_wait_turn(struct gs_arb *a, uint64_t ns);

/* The process ends (the limiter's exit handler): a turn this process took is handed over now,
 * not left to run out its lease. */
void gs_arb_leave(struct gs_arb *a);

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

#define GS_ARB_ASK_NS 200000ull /* an ask holds back the launches of a lower class this long at most
                                * (a high client's take came 20-40 us after its ask on the H200,
                                * 0.1 ms at the 99th percentile) */

/* A launch of a slice that does not hold the GPU comes to the gate (its slow path, once a launch):
 * ask for the GPU in our record before the look at the others' that a take needs ("Asks" above).
 * One store. */
static inline void gs_arb_ask(struct gs_arb *a, uint64_t now)
{
        if (a->me != NULL)
                atomic_store(&a->me->ask_ns, now);
}

/* The launch path of a slice that does not hold the GPU: may it launch beside the turns of the
 * others (all light slices of its class: arbiter.c, "Side by side")? A load and, when it may, a
 * clock read (vDSO): the view it was judged on is good for GS_ARB_PASS_NS. */
static inline bool gs_arb_may_pass(const struct gs_arb *a)
{
        if (a->me == NULL || !atomic_load_explicit(&a->pass, memory_order_relaxed))
                return false;
        return gs_mono_ns() < atomic_load_explicit(&a->pass_until, memory_order_relaxed);
}

/* We hold the GPU (a lease, renewed or not) and another slice wanted or held it at the last
 * refresh: a turn we keep idle keeps it waiting (the limiter's ticker must look). Two loads. */
static inline bool gs_arb_held_wanted(const struct gs_arb *a)
{
        return a->me != NULL && atomic_load_explicit(&a->me->state, memory_order_relaxed) != GS_ARB_FREE &&
               atomic_load_explicit(&a->contended, memory_order_relaxed);
}

/* Among light slices alone (the pass flag as the last refresh judged it: we are light, in share
 * mode, no higher class is there, and the one other slice that wants or holds the GPU, if any, is
 * light too, of our class): nobody waits for what we queued (a light neighbour launches beside our
 * turn). A load. */
static inline bool gs_arb_among_light(const struct gs_arb *a)
{
        return a->me != NULL && atomic_load_explicit(&a->pass, memory_order_relaxed);
}

/* The limiter's judge of our slice: light (an application that pauses after its waits, using well
 * under its share lately) or not. Published in our record at the next tick. */
static inline void gs_arb_set_light(struct gs_arb *a, bool light)
{
        atomic_store_explicit(&a->light, light, memory_order_relaxed);
}

/* A launching thread that waits for the GPU: take it as soon as it is our turn, or cut a turn
 * (waiting out a refresh the ticker is making, not skipping the try). */
void gs_arb_try_take(struct gs_arb *a);

/* A launching thread of the holder that waits for room in its queue: give the GPU up at once if
 * another slice cut our turn (rather than at the ticker's next read); `fresh`: read the others'
 * records now, not only when the last read is GS_ARB_READ_WAIT_NS old (waiting out a refresh the
 * ticker is making). True when the view is that fresh (or we hold nothing); false when it could
 * not be had now (the caller must not launch on the old one: it looks again), and, `fresh`, while
 * a slice of a higher class asked for the GPU GS_ARB_ASK_NS ago or less ("Asks" above: the
 * caller looks again after a nap). */
bool gs_arb_poll(struct gs_arb *a, bool fresh);

/* Another slice shares the GPU (it ticked within a second, wants or holds it): the launch path
 * then keeps its queue short, so that a cut turn drains within about one kernel. */
static inline bool gs_arb_shared(const struct gs_arb *a)
{
        return a->me != NULL && atomic_load_explicit(&a->shared, memory_order_relaxed);
}

/* A slice of a higher class (or one owed its share) shares the GPU: it may cut our turn at any
 * moment, and must then wait for nothing of ours but the kernel running: the launch path keeps
 * no launch queued ahead of our running one. */
static inline bool gs_arb_below(const struct gs_arb *a)
{
        return a->me != NULL && atomic_load_explicit(&a->below, memory_order_relaxed);
}

/* A slice of our class shares the GPU (ticked in the last second): a turn a launcher of ours
 * takes must go back as soon as our work is done (the limiter wakes its ticker). Beside other
 * classes it waits for the ticker's next look, as before: a higher class cuts our turn anyway;
 * a lower one takes the gaps, and a high client's request handed over in the middle by its own
 * woken ticker had a batch kernel between two of its kernels (41 of 1860 slipped, against 4),
 * and a capped high slice's woken ticker, judging a launcher that waits for a turn with its
 * budget short of a refill as wanting nothing, handed each turn straight back before its launch
 * (cap 60 high beside low: the low slice at 0.13). */
static inline bool gs_arb_level(const struct gs_arb *a)
{
        return a->me != NULL && atomic_load_explicit(&a->level, memory_order_relaxed);
}

/* The GPU time the other slices on the GPU said they received (the sum of their records at the
 * last read; untrusted, for share mode's estimate of the GPU's idle time). */
uint64_t gs_arb_others_got(const struct gs_arb *a);

/* At most the GPU time the other slices received in the `span` ns up to `upto`, by their records
 * (each one's GPU time so far, at most the time it was alive then; untrusted: share mode's
 * estimate of the GPU's use before this process came). */
uint64_t gs_arb_others_recent(const struct gs_arb *a, uint64_t upto, uint64_t span);

/* The ticker, every tick: `wanting` (work queued, launches waiting or recent), `busy_ns` (GPU
 * time measured since the last call), `got_total` (the slice's GPU time so far, every process of
 * it), `idle` (about nothing of ours is queued or running),
 * `quiet` (nothing is, and we launched nothing for a while, or our application's wait returned
 * and its habit says its request is over: the limiter's done_at; a turn we hold is handed over
 * when others want the GPU), `held_back` (our budget is spent: we want nothing the others must wait
 * for, and wanting again after that is no waking). */
void gs_arb_tick(struct gs_arb *a, uint64_t now, bool wanting, uint64_t busy_ns, uint64_t got_total, bool idle,
                 bool quiet, bool held_back);

#endif
