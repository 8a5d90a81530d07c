/*
 * The compute limiter: a slice gets L % of a GPU's time (limiter.h for the calling contract).
 *
 * Measuring. The launch path records an event on the launching stream when no recorded event is
 * pending or GS_LIMITER_SAMPLE_NS have passed since the last one (a lock-free multi-producer
 * ring of GS_LIMITER_RING pre-made events). Each ring entry remembers the CPU time of the first
 * launch it covers. The background thread ("ticker") takes entries in order as their events
 * complete, maps the event to CLOCK_MONOTONIC (cuEventElapsedTime from a reference event
 * synchronized on a private stream, re-taken every second) and counts the entry's busy time:
 * completion - max(previous completion, first launch covered). That is the time the slice had
 * work queued or running on the GPU: for a compute-bound stream the GPU's busy time, for a
 * launch-bound one the wall time its launches occupy it. Work still in flight is counted up to
 * now, so the budget reacts before the events complete. A turn taken from another slice begins
 * with a marker entry (mark_turn): its event completes when the GPU comes to our context, and
 * our time starts there, not at our first launch.
 *
 * Spending. Every process of the slice publishes its busy time in its region slot and subtracts
 * what it measured from the slice's budget in the region header (tokens[dev], ns of GPU time);
 * whichever process ticks claims the wall time since the last refill with an exchange and adds
 * L % of it, up to a burst of L % of GS_LIMITER_WINDOW_NS. The gate is open while the budget is
 * positive. A process killed at any point leaves no stuck state: the budget is refilled by the
 * others (or by the next process to start, up to the burst).
 *
 * Queue depth. Work that is already queued cannot be stopped, so the launch path also waits
 * while more than GS_LIMITER_QUEUE_NS of this process's launches (launches not yet completed x
 * the measured GPU time per launch) are outstanding: the overshoot of a closed gate stays small,
 * and it is paid back from the budget like any other busy time, so the long-run share is exact.
 * A single kernel longer than the window is not interrupted: it is paid back after it ends.
 *
 * Share mode: the same budget, but while the rest of the GPU is idle (NVML's device utilization
 * minus the slice's own measured busy time) the gate stays open and borrowed time costs nothing:
 * the slice takes idle capacity and gives it back within NVML's sample period (up to about a
 * second) of another tenant's work starting.
 */
#include "vgpu/limiter.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "common/clock.h"
#include "region/region.h"
#include "vgpu/arbiter.h"
#include "vgpu/mps_client.h"

#define S gs_vgpu_state

_Static_assert(GS_PRIO_HIGH == GS_REGION_PRIO_HIGH && GS_PRIO_NORMAL == GS_REGION_PRIO_NORMAL &&
                       GS_PRIO_LOW == GS_REGION_PRIO_LOW && GS_PRIO_HIGH == (int)GS_ARB_PRIO_HIGH &&
                       GS_PRIO_NORMAL == (int)GS_ARB_PRIO_NORMAL && GS_PRIO_LOW == (int)GS_ARB_PRIO_LOW,
               "one numbering of priorities: config, region, arbiter");

/* (The sampling and tick periods can be set at build time, -DGS_LIMITER_TICK_NS=..., to measure
 * their cost: bench/compute_limit.sh's `overhead` part.) */
#define GS_LIMITER_RING 64
#ifndef GS_LIMITER_SAMPLE_NS
#define GS_LIMITER_SAMPLE_NS 500000ull       /* at most one event per period while busy ... */
#endif
#ifndef GS_LIMITER_SAMPLE_LAUNCHES
#define GS_LIMITER_SAMPLE_LAUNCHES 128u      /* ... or per this many launches */
#endif
#ifndef GS_LIMITER_TICK_NS
#define GS_LIMITER_TICK_NS 250000ull         /* the ticker's period while launches happen */
#endif
#define GS_LIMITER_IDLE_TICK_NS 5000000ull   /* ... and while nothing happens */
#define GS_LIMITER_GAP_BUCKETS 8             /* the idle-gap histogram (log level 3) */
#define GS_LIMITER_WINDOW_NS 20000000ull     /* burst: L % of this much GPU time */
#define GS_LIMITER_QUEUE_NS 4000000ull       /* outstanding work allowed per process (at least 4
                                              * launches: long kernels keep the GPU fed) */
#define GS_LIMITER_QUEUE_LAUNCHES 1024u      /* ... and launches */
#ifndef GS_LIMITER_AHEAD_NS
#define GS_LIMITER_AHEAD_NS 500000ull        /* while another slice shares the GPU: our work left
                                              * when we launch more (a cut turn drains within about
                                              * one kernel and this) */
#endif
#define GS_LIMITER_PAUSE_NS 1000000ull         /* a launch this long after an application's wait
                                              * returned came after a pause (the wait ended a
                                              * request); sooner, after a step of its work */
#define GS_LIMITER_PAUSE_RECENT_NS 1000000000ull /* a pause this recent: the application pauses */
#define GS_LIMITER_STEP_MIN_NS 50000ull      /* done: no launch for twice its longest step and this */
#define GS_LIMITER_LOAD_NS 100000000ull     /* the slice's recent use: a moving average over this */
#define GS_LIMITER_CALIBRATE_NS 1000000000ull
#define GS_LIMITER_SHARE_PERIOD_NS 100000000ull
#define GS_LIMITER_SHARE_STEPS 10            /* ... and NVML's longest sample period: 10 of them */

enum { ENTRY_FREE, ENTRY_WRITING, ENTRY_READY, ENTRY_EMPTY };

struct lim_entry {
        _Atomic int state;
        CUevent ev;
        uint64_t first_launch; /* CLOCK_MONOTONIC ns of the first launch it covers */
        uint64_t seq;          /* launches made up to and including its record */
        bool mark;             /* a turn's start: covers no launch (mark_turn) */
};

struct lim_dev {
        unsigned bp;              /* basis points of the device's time; 0 = not limited */
        int64_t burst;            /* ns of GPU time */
        _Atomic int ready;        /* 0 none, 1 being made, 2 ready, -1 failed */
        CUcontext ctx;
        CUstream own;             /* private stream for the reference event */
        CUevent ref, ref_try;     /* the reference event, and the next try at one */
        uint64_t ref_ns, cal_at;
        uint64_t cal_window;      /* the last calibration's window (ns) */
        struct lim_entry ring[GS_LIMITER_RING];
        _Atomic uint64_t head, tail;
        _Atomic uint64_t last_record;
        _Atomic uint64_t record_seq;   /* launches made up to the last record */
        _Atomic uint64_t seg_start;  /* first launch not yet covered by a recorded event; 0 none */
        _Atomic uint64_t last_launch;
        _Atomic uint64_t launched, completed;
        _Atomic unsigned waiting;    /* launching threads waiting in the gate */
        _Atomic unsigned waiting_budget; /* ... of them, those that came to it with the budget spent */
        _Atomic uint64_t per_launch; /* measured GPU time per launch (ns, moving average) */
        _Atomic uint64_t tail_est;   /* when our queued work will end: each launch adds per_launch
                                      * after max(now, the previous end); the ticker corrects it */
        _Atomic int64_t *tokens;     /* the slice's budget (region) or local_tokens */
        _Atomic int64_t local_tokens;
        _Atomic bool borrow;         /* share mode: the rest of the GPU is idle */
        struct gs_arb arb;           /* turns on the GPU with other slices */
        _Atomic bool wanting;        /* the slice has work to launch (ticker's view) */
        _Atomic uint64_t arb_off_until; /* the arbiter is ignored until then (a stuck lease) */
        _Atomic uint64_t tw_since;   /* a stretch of waiting for turns began (0: none) ... */
        _Atomic uint64_t tw_busy;    /* ... when the slice's busy total was this */
        _Atomic uint64_t tw_last;    /* a launcher last waited for a turn */
        _Atomic uint64_t tw_waited;  /* the stretch's waits for turns that ended, summed */
        _Atomic uint64_t busy_total; /* the ticker's `total`, for the launchers */
        _Atomic uint64_t synced;     /* an application's wait for its work last returned */
        _Atomic uint64_t going;      /* a launcher left the gate's wait to launch (launched() comes next) */
        _Atomic uint64_t pause_seen;  /* the wait (`synced`) whose following launch was judged */
        _Atomic uint64_t pause_at;    /* a launch came GS_LIMITER_PAUSE_NS or more after a wait */
        _Atomic uint64_t stretch_ns;  /* the longest recent stretch of work between two pauses (decaying) */
        _Atomic uint64_t step_ns;     /* the longest recent time from a wait to a launch under that
                                      * (decaying: note_pause) */
        /* ticker only */
        uint64_t done;               /* completion time of the last completed entry */
        uint64_t busy, published;
        uint64_t launches_published; /* launches handed to the region's wait histogram */
        uint64_t arb_total;          /* the highest busy total handed to the arbiter */
        uint64_t load_at, load_got;  /* the slice's recent use (judge_light): last look, its total then */
        uint64_t load_bp;            /* ... its moving average (basis points of the GPU) */
        uint64_t view_at, view_busy; /* the utilization view's last sample */
        _Atomic int view_pct;        /* its last answer (-1: none yet) */
        uint64_t share_busy, share_at, share_others;
        /* share mode's last second (GS_LIMITER_SHARE_STEPS steps): the slices' GPU time, and the
         * span of each step */
        uint64_t share_step_busy[GS_LIMITER_SHARE_STEPS], share_step_span[GS_LIMITER_SHARE_STEPS];
        unsigned share_i, share_steps;
        nvmlDevice_t nvml;
        /* the gaps with nothing of ours queued between the work measured, by length (log level 3
         * prints them at exit: what a workload leaves idle, and so what a cap does not charge) */
        uint64_t gap_n[GS_LIMITER_GAP_BUCKETS], gap_ns[GS_LIMITER_GAP_BUCKETS];
};

bool gs_limiter_enabled;

static struct {
        struct lim_dev dev[GS_VGPU_MAX_DEVICES];
        _Atomic uint64_t local_refill;
        _Atomic bool running;
        _Atomic bool stopping;
        pthread_t thread;
        pthread_mutex_t lock; /* set-up only */
        _Atomic uint64_t look_at; /* the ticker's next look, if sooner than a tick (tick: `done`) */
        _Atomic uint32_t napping; /* the ticker's nap (a futex word: NAP_LONG, NAP_SHORT while it naps) */
} L = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Our naps end when asked: a thread's sleeps end up to its timer slack late (50 us by default,
 * which lets the kernel gather wake-ups), and among slices taking turns every hand-over waited
 * for two of them: the holder's ticker looking at the end of a request (done_at), and the next
 * slice's launcher looking for its turn (a nap of GS_LIMITER_WAIT_NAP_NS). The ticker's slack is
 * set once; a launcher's (the application's thread) only while it waits in the gate, and put back. */
#ifndef GS_LIMITER_SLACK_NS
#define GS_LIMITER_SLACK_NS 1000ul
#endif
#ifndef GS_LIMITER_WAIT_NAP_NS
#define GS_LIMITER_WAIT_NAP_NS 100000ull
#endif
static unsigned long precise_naps(void)
{
        if (GS_LIMITER_SLACK_NS == 0)
                return 0;
        int old = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
        if (old <= 0 || (unsigned long)old <= GS_LIMITER_SLACK_NS ||
            prctl(PR_SET_TIMERSLACK, GS_LIMITER_SLACK_NS, 0, 0, 0) != 0)
                return 0;
        return (unsigned long)old;
}

static void usual_naps(unsigned long old)
{
        if (old != 0)
                prctl(PR_SET_TIMERSLACK, old, 0, 0, 0);
}

static void nap(uint64_t ns)
{
        struct timespec ts = gs_ns_timespec(ns);
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

/* The ticker's nap: GS_LIMITER_TICK_NS while launches happen (`napping` 2), GS_LIMITER_IDLE_TICK_NS
 * while nothing does (1); cut short by wake_ticker() (the long one) and wake_ticker_now() (either). */
enum { NAP_NONE, NAP_LONG, NAP_SHORT };
static void ticker_nap(uint64_t ns, uint32_t kind)
{
        struct timespec ts = gs_ns_timespec(ns);
        atomic_store(&L.napping, kind);
        syscall(SYS_futex, &L.napping, FUTEX_WAIT_PRIVATE, kind, &ts, NULL, 0);
        atomic_store(&L.napping, NAP_NONE);
}

static void wake_napping(uint32_t kind)
{
        if (atomic_compare_exchange_strong(&L.napping, &kind, NAP_NONE))
                syscall(SYS_futex, &L.napping, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* A launcher took a turn on the GPU (the gate's slow path: it waited, or found the GPU free):
 * the ticker, napping long while nothing of ours happened, must look at once (the turn is then
 * handed over as soon as our work is done, not when the nap ends: a turn held idle for up to 5 ms
 * while every other slice's request waited). One system call, only when the ticker naps long.
 * Also alone on the GPU (a new slice's first turn: one that comes during it would wait for the
 * nap's end, its work long done: a new slice's first request beside another new one, 4-6 ms in
 * one run of five on the simulated GPU); not beside other classes alone (rule 2: docs/slicing.md). */
static void wake_ticker(struct lim_dev *d, bool held_back)
{
        if (held_back || (!gs_arb_level(&d->arb) && gs_arb_shared(&d->arb)) || !gs_arb_may_launch(&d->arb))
                return;
        wake_napping(NAP_LONG);
}

/* The ticker must look now, whichever nap it is in (the application's wait returned: its request
 * may be over, and a turn we hold then goes over at once). */
static void wake_ticker_now(void)
{
        uint32_t kind = atomic_load(&L.napping);
        if (kind != NAP_NONE)
                wake_napping(kind);
}

void gs_limiter_configure(void)
{
        gs_limiter_enabled = gs_vgpu_compute_limited(&S.cfg) && !gs_mps_client_connect();
        if (gs_limiter_enabled)
                gs_arb_reserve_fds(); /* (in the constructor, while the process has one thread) */
        for (int i = 0; i < GS_VGPU_MAX_DEVICES; i++) {
                struct lim_dev *d = &L.dev[i];
                d->bp = gs_limiter_enabled ? S.cfg.compute[i] * 100u : 0;
                d->burst = (int64_t)(GS_LIMITER_WINDOW_NS * d->bp / 10000u);
                d->tokens = &d->local_tokens;
                atomic_store(&d->view_pct, -1);
        }
}

/* ------------------------------------------------------------------------------------------ */
/* Set-up: the first limited launch on a device makes its events (in the launching context).   */
/* ------------------------------------------------------------------------------------------ */

static void *ticker(void *arg);
static void stop_ticker(void);

/* The reference event: recorded on the idle private stream, it completes somewhere between the
 * CPU's clock before its record and after its synchronization returns. Taking the later one made
 * every event look late by the synchronization's latency, so the start of each stretch of work
 * after an idle gap was overcharged by that much (a launch-bound stream has thousands of such
 * gaps a second). The middle of the window is within half of it. A long window (the GPU was
 * another context's for a kernel or two, or this thread was preempted) says little of when the
 * event ran: one of 2.4 ms, beside another slice on an H200, put every event up to a millisecond
 * early, and each short stretch of work between two hand-overs then measured as nothing (a 30 %
 * cap ran at 50-65 %). So a try is taken only when its window is short, or shorter than the one
 * the reference in use came from; else the reference stays (the GPU's and the CPU's clocks do not
 * drift apart in seconds). Up to five tries, on the scratch event, by the ticker. The first
 * launch makes one: beside a busy slice each try waits for the GPU to come to our context, and a
 * request waits for them (five, each behind the other's queued work, made a new slice's first
 * request beside another new one take up to 3.1 ms on the simulated GPU, whose event on an empty
 * stream waits as the real GPU's does). A long window is placed at its end (less half a short
 * one), not its middle: waiting for the GPU, the event ran at the end, its synchronization
 * returning a moment later. At the middle, a request client started beside a batch had its
 * events put up to a kernel early until the ticker's next calibration, and its measured GPU time
 * was 0.6 of its kernels' (tests/vgpu/test_latency.sh's charge); a try whose thread was
 * preempted errs the other way, late: more charged, never less. */
#define GS_LIMITER_CAL_GOOD_NS 50000ull
static int calibrate(struct lim_dev *d, int tries)
{
        d->cal_at = gs_mono_ns();
        for (int i = 0; i < tries; i++) {
                uint64_t t0 = gs_mono_ns();
                if (S.cu.cuEventRecord(d->ref_try, d->own) != CUDA_SUCCESS ||
                    S.cu.cuEventSynchronize(d->ref_try) != CUDA_SUCCESS)
                        return -1;
                uint64_t t1 = gs_mono_ns(), w = t1 - t0;
                if (w < GS_LIMITER_CAL_GOOD_NS || d->ref_ns == 0 || w < d->cal_window) {
                        CUevent e = d->ref;
                        d->ref = d->ref_try;
                        d->ref_try = e;
                        d->ref_ns = t1 - (w < GS_LIMITER_CAL_GOOD_NS ? w : GS_LIMITER_CAL_GOOD_NS) / 2;
                        d->cal_window = w;
                }
                if (w < GS_LIMITER_CAL_GOOD_NS)
                        break;
        }
        return 0;
}

/* Re-calibrate now? Not during another slice's turn: the reference event is work of our context,
 * and the GPU switches contexts to run it (about 0.14 ms each way on the H200): the slice whose turn
 * it is pays twice that, and with us waiting for our turn (nothing of ours queued: when we look)
 * that is most often a request of a latency client. Unless the reference got this old. */
#define GS_LIMITER_CALIBRATE_STALE_NS 10000000000ull
static bool calibrate_now(struct lim_dev *d, uint64_t now)
{
        return gs_arb_may_launch(&d->arb) || !gs_arb_shared(&d->arb) || now - d->cal_at > GS_LIMITER_CALIBRATE_STALE_NS;
}

static int make_events(struct lim_dev *d)
{
        if (S.cu.cuCtxGetCurrent == NULL || S.cu.cuEventCreate == NULL || S.cu.cuEventRecord == NULL ||
            S.cu.cuEventQuery == NULL || S.cu.cuEventSynchronize == NULL || S.cu.cuStreamCreate == NULL ||
            (S.cu.cuEventElapsedTime_v2 == NULL && S.cu.cuEventElapsedTime == NULL))
                return -1;
        if (S.cu.cuCtxGetCurrent(&d->ctx) != CUDA_SUCCESS || d->ctx == NULL)
                return 1; /* no context yet: the launch fails anyway; set up on a later one */
        if (S.cu.cuStreamCreate(&d->own, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
            S.cu.cuEventCreate(&d->ref, CU_EVENT_DEFAULT) != CUDA_SUCCESS ||
            S.cu.cuEventCreate(&d->ref_try, CU_EVENT_DEFAULT) != CUDA_SUCCESS)
                return -1;
        for (int i = 0; i < GS_LIMITER_RING; i++)
                if (S.cu.cuEventCreate(&d->ring[i].ev, CU_EVENT_DEFAULT) != CUDA_SUCCESS)
                        return -1;
        return calibrate(d, 1);
}

static void share_region(struct lim_dev *d, int vis)
{
        if (gs_vgpu_slot_ready() != 0 || S.region == NULL || (unsigned)vis >= gs_region_ndevices(S.region))
                return;
        _Atomic int64_t *t = gs_region_tokens(S.region, (unsigned)vis);
        if (t == NULL)
                return;
        gs_region_set_compute(S.region, (unsigned)vis, d->bp, (uint32_t)S.cfg.compute_mode);
        gs_region_set_priority(S.region, (uint32_t)S.cfg.priority);
        d->tokens = t;
}

/* GPUSLICE_LOG_LEVEL=4: the turns this process takes and gives up, with the time (the monotonic
 * clock, ns), why, and the slice's virtual time after it (read beside the GPU times bench/latency.sh
 * records: docs/slicing.md). */
static void note_turn(const struct gs_arb *a, const char *what)
{
        gs_vgpu_log(4, "turn %llu %s (vtime %.3f ms)", (unsigned long long)gs_mono_ns(), what,
                    a->me != NULL ? (double)atomic_load(&a->me->vtime) / 1e6 : 0.0);
}

/* A neighbour's arbiter record taken for a liar's (or believed again): info (an honest neighbour
 * gets there rarely, after a start or a machine's stall: bench/latency.sh's logs say how often). */
static void warn_turns(const struct gs_arb *a, const char *what)
{
        gs_vgpu_log(2, "turns: %s", what);
        (void)a;
}

/* The slice's name on the GPU's arbiter: GPUSLICE_ARBITER_NAME (the hook: the container id), else
 * its region's creation (every process of the slice shares it), else this process. */
static void join_arbiter(struct lim_dev *d, int vis)
{
        char name[64];
        const char *n = S.cfg.arbiter_name;
        if (n[0] == '\0') {
                uint64_t key = (uint64_t)getpid() << 32 | (uint64_t)gs_mono_ns();
                if (S.region != NULL) {
                        const struct gs_region_header *h = &gs_region_file(S.region)->hdr;
                        key = h->created_ns ^ ((uint64_t)(uint32_t)h->creator_pid << 32);
                }
                snprintf(name, sizeof(name), "x-%016llx", (unsigned long long)key);
                n = name;
        }
        if (gs_arb_open(&d->arb, S.cfg.arbiter_dir, S.uuid_of[vis], n, d->bp, (uint32_t)S.cfg.priority,
                        S.cfg.compute_mode == GS_COMPUTE_SHARE) < 0)
                gs_vgpu_log(1, "device %d: no arbiter in %s/gpuslice-gpu-%s (%s): this slice does not take turns "
                               "with others on the GPU", vis, S.cfg.arbiter_dir, S.uuid_of[vis], strerror(errno));
        else {
                d->arb.warn = warn_turns;
                if (S.cfg.log_level >= 4)
                        d->arb.note = note_turn;
        }
}

static int start_ticker(void)
{
        if (atomic_load(&L.running))
                return 0;
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old); /* the application's signals stay with its threads */
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 128 * 1024);
        atomic_store(&L.stopping, false);
        int rc = pthread_create(&L.thread, &attr, ticker, NULL);
        pthread_attr_destroy(&attr);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (rc != 0)
                return -1;
        atomic_store(&L.running, true);
        /* Registered now, after the CUDA runtime registered its own teardown: ours runs first,
         * so the ticker never calls into a driver that is being torn down. */
        static bool registered;
        if (!registered) {
                atexit(stop_ticker);
                registered = true;
        }
        return 0;
}

/* A new slice's first budget, when its first process sets its first device up (the ticker
 * refills nothing before: refill()): a quarter of a burst, what a gate closed on a spent budget
 * waits for alone (refilled()), once per slice (the budget's refill clock never claimed). Started
 * empty, a slice's first request waited for a burst to accrue while another slice shares the GPU
 * (20-27 ms at 50 % on the simulated GPU; 5 ms alone, for the ticker's first refill). Not a
 * whole burst: a start-up turn of three quanta on one (the eleventh session's, withdrawn) made the
 * two slices of a cap pair take each other for liars. */
static void first_budget(struct lim_dev *d)
{
        uint64_t now = gs_mono_ns();
        uint64_t prev = S.region != NULL && S.slot >= 0 ? gs_region_refill_claim(S.region, now)
                                                        : atomic_exchange(&L.local_refill, now);
        if (prev == 0)
                atomic_fetch_add_explicit(d->tokens, d->burst / 4, memory_order_relaxed);
}

/* Slow path, once per device: 0 ready, -1 not now (a launch into a capturing stream: it runs
 * nothing) or never (logged: the device runs unlimited). */
static int setup(int vis, CUstream stream)
{
        struct lim_dev *d = &L.dev[vis];
        CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
        if (S.cu.cuStreamIsCapturing != NULL && S.cu.cuStreamIsCapturing(stream, &cs) == CUDA_SUCCESS &&
            cs != CU_STREAM_CAPTURE_STATUS_NONE)
                return -1;
        /* Our calls must not count as this thread's unsafe calls in a capture of another stream. */
        CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
        bool exchanged = S.cu.cuThreadExchangeStreamCaptureMode != NULL &&
                         S.cu.cuThreadExchangeStreamCaptureMode(&mode) == CUDA_SUCCESS;
        pthread_mutex_lock(&L.lock);
        int state = atomic_load(&d->ready);
        if (state == 0) {
                atomic_store(&d->ready, 1);
                int made = make_events(d);
                if (made > 0) {
                        state = 0;
                } else if (made == 0 && start_ticker() == 0) {
                        share_region(d, vis);
                        join_arbiter(d, vis);
                        first_budget(d);
                        state = 2;
                        gs_vgpu_log(2, "compute limit on device %d: %u.%02u %% (%s, priority %s)", vis, d->bp / 100,
                                    d->bp % 100, S.cfg.compute_mode == GS_COMPUTE_SHARE ? "share" : "cap",
                                    gs_vgpu_priority_name(S.cfg.priority));
                } else {
                        state = -1;
                        gs_vgpu_log(0, "compute limit on device %d cannot be enforced (events or thread); running "
                                       "unlimited", vis);
                }
                atomic_store(&d->ready, state);
        }
        pthread_mutex_unlock(&L.lock);
        if (exchanged)
                S.cu.cuThreadExchangeStreamCaptureMode(&mode);
        return state == 2 ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* The launch path.                                                                           */
/* ------------------------------------------------------------------------------------------ */

static _Thread_local CUcontext tl_ctx;
static _Thread_local int tl_vis = -1;

static int launch_device(void)
{
        if (S.nvisible == 1)
                return 0;
        CUcontext c = NULL;
        if (S.cu.cuCtxGetCurrent == NULL || S.cu.cuCtxGetCurrent(&c) != CUDA_SUCCESS || c == NULL)
                return -1;
        if (c != tl_ctx) {
                tl_ctx = c;
                tl_vis = gs_vgpu_current_device();
        }
        return tl_vis;
}

/* The slice's own budget is spent (and it may not borrow). */
static bool spent(struct lim_dev *d)
{
        return atomic_load_explicit(d->tokens, memory_order_relaxed) <= 0 &&
               !atomic_load_explicit(&d->borrow, memory_order_relaxed);
}

/* A gate closed on a spent budget opens again once a chunk of it is back (a quarter of the
 * burst: L % of 5 ms), not at the first positive token: the start of every burst costs the GPU
 * time of a launch's latency, and bursts of one refill tick (L % of 0.25 ms) lose a tenth of a
 * launch-bound slice's share to it. While another slice shares the GPU, the whole burst: each
 * burst then takes the GPU from the slice that used our pause, and the work it still has
 * queued runs beside ours and is charged to both (about one of its kernels per burst). */
static bool refilled(struct lim_dev *d)
{
        int64_t burst = __atomic_load_n(&d->burst, __ATOMIC_RELAXED); /* (a live change: the ticker's) */
        return atomic_load_explicit(d->tokens, memory_order_relaxed) >= (gs_arb_shared(&d->arb) ? burst : burst / 4) ||
               atomic_load_explicit(&d->borrow, memory_order_relaxed);
}

/* Another slice's turn on the GPU (unless the arbiter is being ignored). */
static bool not_our_turn(struct lim_dev *d)
{
        return !gs_arb_may_launch(&d->arb) && !gs_arb_may_pass(&d->arb) &&
               atomic_load_explicit(&d->arb_off_until, memory_order_relaxed) == 0;
}

/* No launch now: the budget is spent, or it is another slice's turn on the GPU. */
static bool over_budget(struct lim_dev *d)
{
        return spent(d) || not_our_turn(d);
}

/* The arbiter's directory is shared with every slice on the GPU, other containers included. A
 * record that claims the GPU far ahead is no peer's (arbiter.c); one renewed in time but never
 * handed over, or one that always wants the GPU first and never takes it (a hostile writer; or a
 * peer whose kernel runs for seconds), is ignored for a while once we waited for turns for
 * GS_LIMITER_TURN_WAIT_NS and got less than an eighth of our share of the GPU meanwhile: that is
 * the GPU without an arbiter. The stretch of waiting spans the turns we get now and then (a
 * hostile peer's record may lapse for a moment, on a loaded machine often): it ends only when no
 * launcher waited for a turn for GS_LIMITER_TURN_GAP_NS, or when we got that much of the GPU.
 * The bound is far above a fair wait (a few quanta of 40 ms), also with several slices on an
 * oversubscribed GPU, where each gets a part of its share. And a stretch in which our launchers
 * waited for turns less than half the time is a fair wait too, whatever we got: a light slice
 * wants little, and served each time after a short wait it gets all it wants. A normal client
 * of one 70 us kernel every 10 ms beside a high one holding the GPU half the time (simulated
 * GPU) waited at nearly every request, never 100 ms without, got 13-14 ms of the GPU in 2 s (an
 * eighth of its share was 125) and took itself for starved: it then launched beside the high
 * client's turns for 5 s. (A slice that always wants the GPU and waits less than half the time
 * got more than an eighth of any share anyway; a peer that holds a light slice's requests back
 * for less than half of it costs that slice latency, not its share: this last resort is for a
 * GPU held for good, and the liar guard, arbiter.c, weighs shares.) `t0`: the present wait began
 * (its part counts). */
#define GS_LIMITER_TURN_WAIT_NS 2000000000ull
#define GS_LIMITER_TURN_IGNORE_NS 5000000000ull
#define GS_LIMITER_TURN_GAP_NS 100000000ull
static void check_turn_wait(struct lim_dev *d, int vis, uint64_t now, uint64_t t0)
{
        uint64_t off = atomic_load_explicit(&d->arb_off_until, memory_order_relaxed);
        if (off != 0 && now > off)
                atomic_store(&d->arb_off_until, off = 0);
        atomic_store(&d->tw_last, now);
        uint64_t since = atomic_load(&d->tw_since), zero = 0;
        if (since == 0) {
                atomic_store(&d->tw_busy, atomic_load(&d->busy_total));
                atomic_store(&d->tw_waited, 0);
                atomic_compare_exchange_strong(&d->tw_since, &zero, now);
                return;
        }
        /* (another launching thread may have begun the stretch after our `now`) */
        if (off != 0 || !not_our_turn(d) || since > now || now - since <= GS_LIMITER_TURN_WAIT_NS)
                return;
        /* (the ticker's total holds an in-flight estimate, which can fall back) */
        uint64_t b = atomic_load(&d->busy_total), b0 = atomic_load(&d->tw_busy);
        uint64_t got = b > b0 ? b - b0 : 0;
        uint64_t waited = atomic_load(&d->tw_waited) + (now > t0 ? now - t0 : 0);
        if (got * 10000u * 8 >= (now - since) * d->bp || 2 * waited < now - since) { /* a fair wait */
                atomic_store(&d->tw_busy, b);
                atomic_store(&d->tw_waited, 0);
                atomic_store(&d->tw_since, now);
                return;
        }
        atomic_store(&d->arb_off_until, now + GS_LIMITER_TURN_IGNORE_NS);
        atomic_store(&d->tw_since, 0);
        gs_vgpu_log(1, "device %d: waited %llu ms for turns on the GPU and got %llu ms of it; ignoring the arbiter "
                       "for %llu s", vis, (unsigned long long)((now - since) / 1000000u),
                    (unsigned long long)(got / 1000000u), (unsigned long long)(GS_LIMITER_TURN_IGNORE_NS / 1000000000u));
}

/* Beside a slice of a higher class, kernels this long (measured) go one at a time: that slice
 * waits for the one running when it cuts our turn, and for nothing we queued behind it (the GPU
 * runs the contexts of processes in turns, kernel by kernel: a queued kernel of ours would run
 * between two of its kernels). Shorter kernels are queued as always (a cut then waits for at
 * most GS_LIMITER_AHEAD_NS of them). The waiting launcher looks at its last kernel's event every
 * GS_LIMITER_STRICT_NAP_NS. */
#define GS_LIMITER_STRICT_NS 100000ull
#define GS_LIMITER_STRICT_NAP_NS 20000ull
static bool beside_higher(struct lim_dev *d)
{
        return gs_arb_below(&d->arb) &&
               atomic_load_explicit(&d->per_launch, memory_order_relaxed) >= GS_LIMITER_STRICT_NS;
}

/* Is a kernel of ours queued or running? Every launch records an event in this mode, so the last
 * entry recorded covers the last launch. */
static bool strict_busy(struct lim_dev *d)
{
        if (atomic_load_explicit(&d->seg_start, memory_order_relaxed) != 0)
                return true; /* launches no event covers yet (the record comes with the launch) */
        uint64_t h = atomic_load_explicit(&d->head, memory_order_acquire);
        if (h == atomic_load_explicit(&d->tail, memory_order_acquire))
                return false; /* every recorded entry completed (the ticker drained them) */
        struct lim_entry *e = &d->ring[(h - 1) % GS_LIMITER_RING];
        if (atomic_load_explicit(&e->state, memory_order_acquire) != ENTRY_READY)
                return atomic_load_explicit(&e->state, memory_order_acquire) == ENTRY_WRITING;
        return S.cu.cuEventQuery(e->ev) == CUDA_ERROR_NOT_READY;
}

/* Beside a higher class, the last kernel of ours ended and the gate is open: launch on a fresh
 * look at the others' records, taken now, after that kernel ended (not a view the ticker was
 * making meanwhile: a cut in that gap would find our next kernel ahead of the cutter's), and
 * not while a slice of a higher class has just asked for the GPU (its take is on its way:
 * arbiter.h, "Asks"; the waiting launcher looks again after a nap). */
static bool strict_go(struct lim_dev *d)
{
        return gs_arb_poll(&d->arb, true) && !not_our_turn(d);
}

static bool queue_full(struct lim_dev *d)
{
        uint64_t out = atomic_load_explicit(&d->launched, memory_order_relaxed) -
                       atomic_load_explicit(&d->completed, memory_order_relaxed);
        uint64_t per = atomic_load_explicit(&d->per_launch, memory_order_relaxed);
        /* Until a launch's cost is measured (the first event of the process completes), four: an
         * unknown kernel may be long, and what is queued cannot be taken back; beside another
         * slice, two (one running, one queued, as rule 5 keeps later: a joining slice's first
         * four 2 ms kernels were 8 ms that a waiting request sat behind). Not counting launches
         * the application has waited for since: they are done, though the ticker, napping 5 ms
         * before the process's first measurement, has not yet seen their events (a new
         * service's first request of kernels each waited for stalled at its third kernel for
         * that nap). */
        if (per == 0) /* (... since the application's last wait: a wait after our last launch saw them done) */
                return out >= (gs_arb_shared(&d->arb) ? 2u : 4u) &&
                       atomic_load_explicit(&d->synced, memory_order_relaxed) <=
                               atomic_load_explicit(&d->last_launch, memory_order_relaxed);
        if (out >= GS_LIMITER_QUEUE_LAUNCHES)
                return true;
        if (out != 0 && beside_higher(d))
                return strict_busy(d);
        /* While another slice shares the GPU, our turn may be cut at any moment, and what we
         * queued runs on beside the slice that cut it: launch more only when at most
         * GS_LIMITER_AHEAD_NS of our work is left (the outstanding launches at the measured GPU
         * time per launch, from their estimated end: corrected by every measurement and every
         * wait of the application). The GPU stays fed (the waiting launcher looks every 0.1 ms)
         * and a cut turn drains within about one kernel. Not among light slices alone: a light
         * neighbour launches beside our turn and waits for none of it, and the estimate of our
         * work left errs high for an application whose launches are spaced by its own CPU work
         * (the time per launch is measured from the launches' spread: PyTorch's batch-1 services,
         * ~15 launches a request, waited 0.1-0.3 ms a request here, p50 and p99 alike, beside
         * each other on the H200: torch2, bench/RESULTS.md, 2026-11-29, thirteenth session). */
        if (out != 0 && gs_arb_shared(&d->arb) && !gs_arb_among_light(&d->arb)) {
                uint64_t end = atomic_load_explicit(&d->tail_est, memory_order_relaxed), now = gs_mono_ns();
                uint64_t left = end > now ? end - now : 0;
                return (left < out * per ? left : out * per) > GS_LIMITER_AHEAD_NS;
        }
        return out > 4 && out * per > GS_LIMITER_QUEUE_NS;
}

static void record_entry(struct lim_dev *d, CUstream stream, uint64_t now, bool mark);
static void record(struct lim_dev *d, CUstream stream, uint64_t now)
{
        record_entry(d, stream, now, false);
}

/* A turn we take on a GPU another slice held: our first kernel waits for that slice's last one
 * and for the GPU to switch to our context (~0.14 ms on the H200), and measured from its launch
 * that wait was our GPU time, charged to us while the same interval was the other's (its kernel
 * running) or nobody's (the switch). Among eight equal latency slices taking turns that was a
 * sixth of each request's charge, above their shares (bench/RESULTS.md, 2026-11-30): each waited
 * for its budget. An event recorded as the turn begins, before our first launch, completes when
 * our context's work can run; our time starts there. One event per turn taken, on the gate's slow
 * path; none while a slice keeps its turn (alone, or a batch between cuts). */
#ifndef GS_LIMITER_START_MARK
#define GS_LIMITER_START_MARK 1
#endif
/* (`held`: we held the GPU before the gate's wait or take: no turn began since) */
static void mark_turn(struct lim_dev *d, CUstream stream, bool held)
{
        if (GS_LIMITER_START_MARK && !held && gs_arb_may_launch(&d->arb) &&
            atomic_load_explicit(&d->seg_start, memory_order_relaxed) == 0)
                record_entry(d, stream, gs_mono_ns(), true);
}

static void record_entry(struct lim_dev *d, CUstream stream, uint64_t now, bool mark)
{
        uint64_t h = atomic_load_explicit(&d->head, memory_order_relaxed);
        if (h - atomic_load_explicit(&d->tail, memory_order_acquire) >= GS_LIMITER_RING)
                return; /* full: the entries pending already cover the work */
        if (!atomic_compare_exchange_strong_explicit(&d->head, &h, h + 1, memory_order_acq_rel, memory_order_relaxed))
                return; /* another thread is recording right now */
        struct lim_entry *e = &d->ring[h % GS_LIMITER_RING];
        atomic_store_explicit(&e->state, ENTRY_WRITING, memory_order_relaxed);
        atomic_store_explicit(&d->last_record, now, memory_order_relaxed);
        uint64_t first = mark ? 0 : atomic_exchange_explicit(&d->seg_start, 0, memory_order_relaxed);
        e->first_launch = first != 0 ? first : now;
        e->mark = mark;
        e->seq = atomic_load_explicit(&d->launched, memory_order_relaxed);
        atomic_store_explicit(&d->record_seq, e->seq, memory_order_relaxed);
        /* A capturing stream runs nothing now: its launches are the graph's, counted when it is
         * launched. */
        CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
        bool ok = (S.cu.cuStreamIsCapturing == NULL || (S.cu.cuStreamIsCapturing(stream, &cs) == CUDA_SUCCESS &&
                                                          cs == CU_STREAM_CAPTURE_STATUS_NONE)) &&
                  S.cu.cuEventRecord(e->ev, stream) == CUDA_SUCCESS;
        atomic_store_explicit(&e->state, ok ? ENTRY_READY : ENTRY_EMPTY, memory_order_release);
}

/* The first launch after an application's wait for its work returned (the gate's slow path notes
 * it at its entry, before any wait for a turn): was that wait the end of a request (a pause of
 * GS_LIMITER_PAUSE_NS or more before the next launch) or a step inside the work (the longest
 * step, decaying by an eighth at each shorter one)? */
static void note_pause(struct lim_dev *d, uint64_t now)
{
        uint64_t s = atomic_load_explicit(&d->synced, memory_order_relaxed);
        if (s <= atomic_load_explicit(&d->pause_seen, memory_order_relaxed) || s > now)
                return;
        atomic_store_explicit(&d->pause_seen, s, memory_order_relaxed);
        uint64_t gap = now - s, m = atomic_load_explicit(&d->step_ns, memory_order_relaxed);
        if (gap >= GS_LIMITER_PAUSE_NS) {
                /* (the stretch of work that ended at that wait: from the launch after the pause
                 * before it; the longest recent one, decaying as the step) */
                uint64_t p = atomic_load_explicit(&d->pause_at, memory_order_relaxed);
                uint64_t w = p != 0 && s > p ? s - p : 0, l = atomic_load_explicit(&d->stretch_ns, memory_order_relaxed);
                atomic_store_explicit(&d->stretch_ns, w > l ? w : l - l / 8, memory_order_relaxed);
                atomic_store_explicit(&d->pause_at, now, memory_order_relaxed);
        } else
                atomic_store_explicit(&d->step_ns, gap > m ? gap : m - m / 8, memory_order_relaxed);
}

/* The application paused after a wait in the last GS_LIMITER_PAUSE_RECENT_NS */
static bool paused_lately(struct lim_dev *d, uint64_t now)
{
        uint64_t p = atomic_load_explicit(&d->pause_at, memory_order_relaxed);
        return p != 0 && now - p <= GS_LIMITER_PAUSE_RECENT_NS;
}

/* When the application's work is over, judged from its waits: its last wait returned after its
 * last launch, it pauses after some waits (one in the last GS_LIMITER_PAUSE_RECENT_NS: a request
 * client; a loop that waits for each step and launches the next at once never does), and no
 * launch came for twice its longest recent step and GS_LIMITER_STEP_MIN_NS. 0: not judged so
 * (the ticker's quiet, a tick with nothing of ours, is then the judge). */
static uint64_t done_at(struct lim_dev *d, uint64_t now)
{
        uint64_t s = atomic_load_explicit(&d->synced, memory_order_relaxed);
        if (!paused_lately(d, now) || s < atomic_load(&d->last_launch) || s < atomic_load(&d->going))
                return 0;
        return s + 2 * atomic_load_explicit(&d->step_ns, memory_order_relaxed) + GS_LIMITER_STEP_MIN_NS;
}

/* Light: the application pauses after its waits (a request client, as done_at judges it), its
 * stretches of work between pauses are short (its requests: at most GS_LIMITER_LIGHT_STRETCH_NS),
 * and the slice used at most three quarters of its share lately (a moving average over
 * GS_LIMITER_LOAD_NS of every process's GPU time). It stays light until its use is twice its
 * share, or more than its share with stretches four times that long: beside the others, a kernel
 * that waits behind theirs is measured as ours (eight clients of 8 % at 12 % each on the
 * simulated GPU measured 15 %), and so is a wait for a turn or for the budget (a new slice's first
 * request: 25-30 ms); a slice that left and came back at each such step made the others take
 * turns with it. A light slice launches beside the turn of another light slice of its class
 * (arbiter.c, "Side by side"); a batch (long stretches, or none: it never pauses), or a client
 * that grew past that, takes turns. */
#define GS_LIMITER_LIGHT_STRETCH_NS 5000000ull
/* The judge itself, from what the ticker and the launchers keep (`was`: our last judge). */
static bool light_now(struct lim_dev *d, uint64_t now, bool was)
{
        bool pauses = paused_lately(d, now);
        uint64_t st = atomic_load_explicit(&d->stretch_ns, memory_order_relaxed);
        uint64_t load = __atomic_load_n(&d->load_bp, __ATOMIC_RELAXED);
        return pauses && (was ? load <= 2u * d->bp && (st <= 4 * GS_LIMITER_LIGHT_STRETCH_NS || load <= d->bp)
                              : st <= GS_LIMITER_LIGHT_STRETCH_NS && load * 4 <= 3u * d->bp);
}

static void judge_light(struct lim_dev *d, uint64_t now, uint64_t got)
{
        if (d->load_at != 0 && now > d->load_at) {
                uint64_t span = now - d->load_at, used = got > d->load_got ? got - d->load_got : 0;
                uint64_t inst = used * 10000u / span, w = span < GS_LIMITER_LOAD_NS ? span : GS_LIMITER_LOAD_NS;
                if (inst > 20000u)
                        inst = 20000u; /* (an estimate that caught up) */
                __atomic_store_n(&d->load_bp, (d->load_bp * (GS_LIMITER_LOAD_NS - w) + inst * w) / GS_LIMITER_LOAD_NS,
                                 __ATOMIC_RELAXED);
        }
        d->load_at = now;
        d->load_got = got;
        bool was = atomic_load_explicit(&d->arb.light, memory_order_relaxed);
        bool light = light_now(d, now, was);
        if (was != light)
                gs_vgpu_log(4, "turn %llu light: %s (recent use %llu.%02llu %%, stretches of work %llu us%s)",
                            (unsigned long long)now, light ? "yes" : "no", (unsigned long long)(d->load_bp / 100),
                            (unsigned long long)(d->load_bp % 100),
                            (unsigned long long)(atomic_load_explicit(&d->stretch_ns, memory_order_relaxed) / 1000u),
                            paused_lately(d, now) ? "" : ", no pause after a wait lately");
        gs_arb_set_light(&d->arb, light);
}

/* A launch out of the gate's slow path is on its way: the ticker must not take the slice for
 * quiet meanwhile (nothing launched for 20 ms, nobody waiting) and hand over the turn a launcher
 * has just taken (the holder whose turn was cut, not having looked yet, never saw the cut, and its
 * next kernel ran between a latency client's first two). The arbiter also ignores a quiet judged
 * before the take (gs_arb_tick). */
static int going(struct lim_dev *d, int vis)
{
        atomic_store_explicit(&d->going, gs_mono_ns(), memory_order_relaxed);
        return vis;
}

int gs_limiter_gate(CUstream stream)
{
        int vis = launch_device();
        if (vis < 0 || vis >= GS_VGPU_MAX_DEVICES)
                return -1;
        struct lim_dev *d = &L.dev[vis];
        if (d->bp == 0)
                return -1;
        int state = atomic_load_explicit(&d->ready, memory_order_acquire);
        if (__builtin_expect(state != 2, 0) && (state < 0 || setup(vis, stream) < 0))
                return -1;
        /* Within budget: two loads and a compare. Otherwise wait (the ticker refills). Beside a
         * slice of a higher class, long kernels go one at a time, each after a fresh look at the
         * others' records (a cut that came while the last one ran). */
        if (__builtin_expect(!over_budget(d) && !queue_full(d), 1) && (!beside_higher(d) || strict_go(d)))
                return vis;
        uint64_t now = gs_mono_ns();
        /* (first: a holder of a lower class, about to launch on a look from before our take,
         * holds its launch back: arbiter.h, "Asks") */
        if (!spent(d) && not_our_turn(d))
                gs_arb_ask(&d->arb, now);
        note_pause(d, now); /* (the pause ended here, whatever we wait now) */
        /* A pause that ends here makes a slice light by its use and stretches light now, before
         * the take places it (arbiter.c, note_want: a light slice back from a pause of a second
         * or more goes ahead of the turn it finds), not at the ticker's next look, up to a nap
         * later: a service's first request after its warm-up, or after a second idle (the
         * ticker had judged it not light: no pause lately), took the place of a slice joining,
         * behind the batch holding the GPU, for the rest of its turn (42 ms on the H200). */
        if (atomic_load_explicit(&d->pause_at, memory_order_relaxed) == now &&
            !atomic_load_explicit(&d->arb.light, memory_order_relaxed) && light_now(d, now, false))
                gs_arb_set_light(&d->arb, true);
        bool held = gs_arb_may_launch(&d->arb);
        if (!spent(d) && not_our_turn(d)) { /* a free GPU is taken without waiting */
                going(d, vis); /* (from before the take: the ticker's next look sees it) */
                gs_arb_try_take(&d->arb);
                wake_ticker(d, false);
                if (!over_budget(d) && !queue_full(d) && (!beside_higher(d) || strict_go(d))) {
                        mark_turn(d, stream, held);
                        return going(d, vis);
                }
        }
        atomic_fetch_add(&d->waiting, 1);
        /* Launches made since the last record are covered by no event: cover them now, before
         * the wait (an event recorded after their work ended would count the wait as busy). */
        if (atomic_load(&d->seg_start) != 0)
                record(d, stream, gs_mono_ns());
        bool was_spent = spent(d);
        if (was_spent)
                atomic_fetch_add(&d->waiting_budget, 1);
        unsigned long slack = precise_naps();
        uint64_t t0 = gs_mono_ns();
        bool turn_wait = false; /* (the starvation guard's: check_turn_wait) */
        for (;;) {
                bool strict = beside_higher(d);
                if (!((was_spent ? !refilled(d) : spent(d)) || not_our_turn(d) || queue_full(d)) &&
                    (!strict || strict_go(d)))
                        break;
                if (!atomic_load_explicit(&L.running, memory_order_relaxed))
                        break;
                bool ours = !not_our_turn(d), for_turn = false;
                if ((was_spent ? refilled(d) : !spent(d)) && !ours) {
                        gs_arb_try_take(&d->arb);
                        wake_ticker(d, was_spent);
                        check_turn_wait(d, vis, gs_mono_ns(), t0);
                        turn_wait = true;
                        for_turn = !gs_arb_may_launch(&d->arb);
                } else if (ours) {
                        gs_arb_poll(&d->arb, false); /* our turn, no room: was it cut? */
                }
                /* Waiting for a turn: until the holder gives it up (its release wakes us), for a nap
                 * at most. (One at a time: the next kernel goes as soon as the last one ends.) */
                if (!for_turn || gs_arb_wait_turn(&d->arb, GS_LIMITER_WAIT_NAP_NS) < 0)
                        nap(strict && ours && !spent(d) ? GS_LIMITER_STRICT_NAP_NS : GS_LIMITER_WAIT_NAP_NS);
        }
        usual_naps(slack);
        mark_turn(d, stream, held);
        uint64_t t1 = gs_mono_ns();
        if (turn_wait)
                atomic_fetch_add(&d->tw_waited, t1 - t0);
        if (S.region != NULL && S.slot >= 0)
                gs_region_note_wait(S.region, (unsigned)vis, t1 - t0);
        going(d, vis);
        if (was_spent)
                atomic_fetch_sub(&d->waiting_budget, 1);
        atomic_fetch_sub(&d->waiting, 1);
        return vis;
}

void gs_limiter_launched(int vis, CUstream stream)
{
        struct lim_dev *d = &L.dev[vis];
        uint64_t now = gs_mono_ns();
        uint64_t seq = atomic_fetch_add_explicit(&d->launched, 1, memory_order_relaxed) + 1;
        atomic_store_explicit(&d->last_launch, now, memory_order_relaxed);
        if (__builtin_expect(atomic_load_explicit(&d->synced, memory_order_relaxed) >
                                     atomic_load_explicit(&d->pause_seen, memory_order_relaxed), 0))
                note_pause(d, now);
        uint64_t end = atomic_load_explicit(&d->tail_est, memory_order_relaxed);
        atomic_store_explicit(&d->tail_est, (end > now ? end : now) + atomic_load_explicit(&d->per_launch, memory_order_relaxed),
                              memory_order_relaxed); /* (an estimate: two threads at once may lose one) */
        uint64_t zero = 0;
        if (atomic_load_explicit(&d->seg_start, memory_order_relaxed) == 0)
                atomic_compare_exchange_strong_explicit(&d->seg_start, &zero, now, memory_order_relaxed,
                                                        memory_order_relaxed);
        bool pending = atomic_load_explicit(&d->head, memory_order_relaxed) !=
                       atomic_load_explicit(&d->tail, memory_order_relaxed);
        if (pending && now - atomic_load_explicit(&d->last_record, memory_order_relaxed) < GS_LIMITER_SAMPLE_NS &&
            seq - atomic_load_explicit(&d->record_seq, memory_order_relaxed) < GS_LIMITER_SAMPLE_LAUNCHES &&
            !beside_higher(d))
                return;
        record(d, stream, now);
}

void gs_limiter_before_sync(CUstream stream)
{
        int vis = launch_device();
        if (vis < 0 || vis >= GS_VGPU_MAX_DEVICES)
                return;
        struct lim_dev *d = &L.dev[vis];
        if (d->bp != 0 && atomic_load_explicit(&d->ready, memory_order_acquire) == 2 &&
            atomic_load_explicit(&d->seg_start, memory_order_relaxed) != 0)
                record(d, stream, gs_mono_ns());
}

void gs_limiter_after_sync(void)
{
        int vis = launch_device();
        if (vis < 0 || vis >= GS_VGPU_MAX_DEVICES)
                return;
        struct lim_dev *d = &L.dev[vis];
        if (d->bp == 0 || atomic_load_explicit(&d->ready, memory_order_acquire) != 2)
                return;
        /* (a stream's wait: other streams may still have work; the estimate errs towards a
         * launch, and the ticker's next measurement sets it right) */
        uint64_t now = gs_mono_ns(), t = atomic_load_explicit(&d->tail_est, memory_order_relaxed);
        atomic_store_explicit(&d->synced, now, memory_order_relaxed);
        if (t > now)
                atomic_compare_exchange_strong_explicit(&d->tail_est, &t, now, memory_order_relaxed, memory_order_relaxed);
        /* A request is over (the application pauses after its waits) and a slice of our class is there:
         * the turn we hold goes over now (tick: `quiet`), not at the ticker's next look (up to a
         * tick later, the other's request waiting meanwhile). One system call, only then. */
        /* (holding: a view no older than 0.1 ms first, if the ticker is not making one: a view
         * from before a new slice came saw nobody to hand the turn to, and our ticker, napping,
         * kept it idle for its nap: a new slice's first request beside another new one waited
         * 4-6 ms on the simulated GPU, `vgpu_latency_first` failing one run in three. A few
         * pread()s, never a wait.) */
        if (gs_arb_may_launch(&d->arb))
                gs_arb_poll(&d->arb, false);
        if (gs_arb_level(&d->arb) && gs_arb_may_launch(&d->arb) && done_at(d, now) != 0)
                wake_ticker_now();
        /* Otherwise (beside other classes alone, or a request not judged done), a turn we hold
         * that another slice wants goes over by the ticker's `quiet`, a tick after our work: a
         * ticker in its long nap (the request took the turn from a launcher) must look now, not
         * when the nap ends. A high client held each turn up to 5 ms past its request so: three
         * low share-25 batches beside it got 0.236 of the GPU each, short of their shares went
         * first as owed, and its requests waited 22-39 ms at p99 on the simulated GPU
         * (vgpu_latency_lower; coop's high cell on the H200). One system call, only while the
         * ticker naps long. (Not done_at's judgement: a high client judged done in the middle of
         * a request let a batch kernel run between two of its own.) */
        else if (gs_arb_held_wanted(&d->arb))
                wake_napping(NAP_LONG);
}

/* ------------------------------------------------------------------------------------------ */
/* The ticker: events -> busy time -> the shared budget.                                      */
/* ------------------------------------------------------------------------------------------ */

static uint64_t event_ns(struct lim_dev *d, CUevent ev, uint64_t now)
{
        float ms = 0;
        CUresult rc = S.cu.cuEventElapsedTime_v2 != NULL ? S.cu.cuEventElapsedTime_v2(&ms, d->ref, ev)
                                                          : S.cu.cuEventElapsedTime(&ms, d->ref, ev);
        if (rc != CUDA_SUCCESS)
                return now;
        int64_t off = (int64_t)((double)ms * 1e6);
        uint64_t t = off < 0 && (uint64_t)-off > d->ref_ns ? 0 : d->ref_ns + (uint64_t)off;
        return t > now ? now : t;
}

static const uint64_t gap_edge_us[GS_LIMITER_GAP_BUCKETS] = {10, 50, 200, 1000, 5000, 20000, 100000, UINT64_MAX};

static void note_gap(struct lim_dev *d, uint64_t gap)
{
        unsigned i = 0;
        while (gap / 1000u >= gap_edge_us[i])
                i++;
        d->gap_n[i]++;
        d->gap_ns[i] += gap;
}

static void account(struct lim_dev *d, uint64_t first, uint64_t end, uint64_t launches)
{
        if (d->done != 0 && first > d->done)
                note_gap(d, first - d->done);
        uint64_t start = first > d->done ? first : d->done;
        if (end > start) {
                d->busy += end - start;
                if (launches != 0) {
                        uint64_t per = (end - start) / launches, old = atomic_load(&d->per_launch);
                        atomic_store_explicit(&d->per_launch, old == 0 ? per : (old * 7 + per) / 8,
                                              memory_order_relaxed);
                }
        }
        if (end > d->done)
                d->done = end;
}

/* Our queued work's estimated end, corrected by a measurement: when the entry covering launches
 * up to `seq` ended at `end` and nothing was launched after it, our work ended then. */
static void settle_tail(struct lim_dev *d, uint64_t seq, uint64_t end)
{
        uint64_t t = atomic_load_explicit(&d->tail_est, memory_order_relaxed);
        if (seq == atomic_load_explicit(&d->launched, memory_order_relaxed) && t > end)
                atomic_compare_exchange_strong_explicit(&d->tail_est, &t, end, memory_order_relaxed,
                                                        memory_order_relaxed);
}

/* Completed entries, in order. Returns the in-flight time of the oldest pending one. */
static uint64_t drain(struct lim_dev *d, uint64_t now)
{
        uint64_t t = atomic_load_explicit(&d->tail, memory_order_relaxed);
        while (t != atomic_load_explicit(&d->head, memory_order_acquire)) {
                struct lim_entry *e = &d->ring[t % GS_LIMITER_RING];
                int st = atomic_load_explicit(&e->state, memory_order_acquire);
                if (st == ENTRY_WRITING || st == ENTRY_FREE)
                        return 0; /* its producer is still writing it */
                if (st == ENTRY_READY) {
                        CUresult rc = S.cu.cuEventQuery(e->ev);
                        if (rc == CUDA_ERROR_NOT_READY) {
                                if (e->mark)
                                        return 0; /* (a turn's start: nothing of ours runs yet) */
                                uint64_t start = e->first_launch > d->done ? e->first_launch : d->done;
                                return now > start ? now - start : 0;
                        }
                        if (rc == CUDA_SUCCESS && e->mark) {
                                uint64_t end = event_ns(d, e->ev, now);
                                if (end > d->done)
                                        d->done = end; /* (our time starts here: account) */
                        } else if (rc == CUDA_SUCCESS) {
                                uint64_t end = event_ns(d, e->ev, now);
                                account(d, e->first_launch, end,
                                        e->seq - atomic_load_explicit(&d->completed, memory_order_relaxed));
                                settle_tail(d, e->seq, end);
                        }
                }
                atomic_store_explicit(&d->completed, e->seq, memory_order_relaxed);
                atomic_store_explicit(&e->state, ENTRY_FREE, memory_order_relaxed);
                atomic_store_explicit(&d->tail, ++t, memory_order_release);
        }
        /* Nothing pending. Launches made after the last record (it was pending then) are still
         * uncovered: in flight until a launch records again, or, once launches stopped (the
         * application waits for its own work), assumed done after their number of average
         * launches. */
        uint64_t first = atomic_load_explicit(&d->seg_start, memory_order_relaxed);
        if (first == 0)
                return 0;
        uint64_t last = atomic_load_explicit(&d->last_launch, memory_order_relaxed);
        uint64_t seq = atomic_load_explicit(&d->launched, memory_order_relaxed);
        uint64_t start = first > d->done ? first : d->done;
        uint64_t end = start + (seq - atomic_load_explicit(&d->completed, memory_order_relaxed)) *
                                       atomic_load_explicit(&d->per_launch, memory_order_relaxed);
        if (end < last)
                end = last;
        /* They are done when the estimate says so and no launch came for a while, also while a
         * thread waits in the gate. That thread covered them with an event as it began to wait,
         * unless the ring was full then (a ticker kept off its CPU while the launches went on:
         * 64 entries in about 30 ms) or another thread was recording: waiting for that event, as
         * this did, the slice was never idle while the thread waited, and a turn it was draining
         * was never handed over: it could neither launch nor give the GPU up, held it while
         * the others took it for a liar's, and after 2 s ignored the arbiter (CI under load: a
         * cap-30 container got 0.07 of the GPU beside a cap-50 one, "waited 2000 ms for turns
         * on the GPU and got 0 ms of it"). */
        if (now - last < 2 * GS_LIMITER_SAMPLE_NS || now < end) {
                uint64_t upto = now < end ? now : end;
                return upto > start ? upto - start : 0;
        }
        if (atomic_compare_exchange_strong_explicit(&d->seg_start, &first, 0, memory_order_relaxed,
                                                    memory_order_relaxed)) {
                account(d, first, end, 0);
                atomic_store_explicit(&d->completed, seq, memory_order_relaxed);
        }
        return 0;
}

static void refill(uint64_t now)
{
        /* (not before a device is set up: the slice's first budget is first_budget()'s) */
        bool ready = false;
        for (int i = 0; i < GS_VGPU_MAX_DEVICES && !ready; i++)
                ready = L.dev[i].bp != 0 && atomic_load(&L.dev[i].ready) == 2;
        if (!ready)
                return;
        uint64_t prev = S.region != NULL && S.slot >= 0 ? gs_region_refill_claim(S.region, now)
                                                        : atomic_exchange(&L.local_refill, now);
        uint64_t dt = prev == 0 || prev > now ? 0 : now - prev;
        if (dt > 1000000000000ull)
                dt = 1000000000000ull;
        for (int i = 0; i < GS_VGPU_MAX_DEVICES; i++) {
                struct lim_dev *d = &L.dev[i];
                if (d->bp == 0 || atomic_load(&d->ready) != 2)
                        continue;
                int64_t add = (int64_t)(dt * d->bp / 10000u);
                /* An idle slice keeps at most a burst; one that waits for its turn on the GPU keeps
                 * what it accrues meanwhile (up to four bursts). */
                int64_t cap = atomic_load(&d->wanting) ? 4 * d->burst : d->burst;
                int64_t old = atomic_load_explicit(d->tokens, memory_order_relaxed), nv;
                do {
                        nv = old + add;
                        if (nv > cap)
                                nv = old > cap ? old : cap;
                } while (!atomic_compare_exchange_weak_explicit(d->tokens, &old, nv, memory_order_relaxed,
                                                                memory_order_relaxed));
        }
}

/* Share mode: borrow while nobody else uses the GPU: NVML's device utilization (its own sample
 * period, 1/6 s to 1 s) at most 5 points above what the slices on the GPU used: our busy time
 * and what the other slices say they received (their turns are the arbiter's to share out: a
 * slice that uses a little of the GPU does not stop its neighbours from borrowing; a tenant
 * outside the slices does). The slices' use is taken over the last check (100 ms) and over the
 * last second, whichever is more: NVML's figure lags behind the work by up to its period, and
 * judged against the last 100 ms alone, the neighbours' work that just ended (they left, or
 * paused), or one 100 ms of ours that fell short (a CPU stall, a request of a neighbour), kept
 * NVML above us for up to a second; not borrowing meanwhile held us at our share, and NVML
 * stayed above us: a share-30 slice alone got 0.886 of an H200 started right after a pair
 * ended, 0.84 of the simulated GPU beside an idle slice. A slice that has not yet seen a second
 * counts, for the part of the second before it, what the others' records say they may have
 * received then (gs_arb_others_recent: an upper bound). */
static void share_check(struct lim_dev *d, int vis, uint64_t now)
{
        if (S.cfg.compute_mode != GS_COMPUTE_SHARE || now - d->share_at < GS_LIMITER_SHARE_PERIOD_NS)
                return;
        /* (the others' totals since the last check; a slice that joins brings its whole total
         * along: counted from the next check on) */
        uint64_t others = gs_arb_others_got(&d->arb), got = others > d->share_others ? others - d->share_others : 0;
        if (d->share_at == 0 || others > d->share_others + (now - d->share_at) * GS_ARB_PEERS)
                got = 0;
        d->share_others = others;
        uint64_t busy = d->busy - d->share_busy + got, span = now - d->share_at;
        d->share_busy = d->busy;
        bool first = d->share_at == 0;
        d->share_at = now;
        if (first)
                return;
        d->share_i = (d->share_i + 1) % GS_LIMITER_SHARE_STEPS;
        d->share_step_busy[d->share_i] = busy;
        d->share_step_span[d->share_i] = span;
        if (d->share_steps < GS_LIMITER_SHARE_STEPS)
                d->share_steps++;
        uint64_t wbusy = 0, wspan = 0, second = GS_LIMITER_SHARE_STEPS * GS_LIMITER_SHARE_PERIOD_NS;
        for (unsigned i = 0; i < d->share_steps; i++) {
                wbusy += d->share_step_busy[i];
                wspan += d->share_step_span[i];
        }
        if (wspan < second) { /* (the part of the second before our first step, and a step more:
                                * NVML's figure is a sample late) */
                wbusy += gs_arb_others_recent(&d->arb, now - wspan, second + GS_LIMITER_SHARE_PERIOD_NS - wspan);
                wspan = second;
        }
        if (d->nvml == NULL) {
                if (gs_vgpu_load_nvml() < 0 || S.nv.nvmlInit_v2 == NULL || S.nv.nvmlInit_v2() != NVML_SUCCESS ||
                    S.nv.nvmlDeviceGetHandleByUUID == NULL ||
                    S.nv.nvmlDeviceGetHandleByUUID(S.uuid_of[vis], &d->nvml) != NVML_SUCCESS)
                        return;
        }
        nvmlUtilization_t u;
        if (S.nv.nvmlDeviceGetUtilizationRates == NULL || S.nv.nvmlDeviceGetUtilizationRates(d->nvml, &u) != NVML_SUCCESS)
                return;
        uint64_t own = span != 0 ? busy * 100 / span : 0, own_second = wbusy * 100 / wspan;
        atomic_store(&d->borrow, u.gpu <= (own > own_second ? own : own_second) + 5);
}

#define GS_LIMITER_VIEW_NS 500000000ull        /* the view's window (NVML: 1/6 s to 1 s) */
#define GS_LIMITER_VIEW_SAMPLE_NS 200000000ull /* ... sampled by a process without a ticker */

/* Busy ns over span ns, as a percentage of what a share of bp basis points allows (at most 100). */
static int view_percent(uint64_t busy, uint64_t span, unsigned bp)
{
        if (span == 0 || bp == 0)
                return 0;
        uint64_t pct = (uint64_t)((unsigned __int128)busy * 1000000u / ((unsigned __int128)span * bp));
        return pct > 100 ? 100 : (int)pct;
}

/* The slice's busy time on vis: every process's (region), or this process's own. */
static uint64_t slice_busy(int vis, uint64_t own)
{
        return S.region != NULL && S.slot >= 0 ? gs_region_busy(S.region, (unsigned)vis) : own;
}

static void update_view(struct lim_dev *d, int vis, uint64_t now, uint64_t own)
{
        if (now - d->view_at < GS_LIMITER_VIEW_NS)
                return;
        uint64_t busy = slice_busy(vis, own);
        if (d->view_at != 0)
                atomic_store(&d->view_pct, view_percent(busy > d->view_busy ? busy - d->view_busy : 0, now - d->view_at,
                                                        d->bp));
        d->view_at = now;
        d->view_busy = busy;
}

int gs_limiter_view(int vis, unsigned *pct)
{
        if (!gs_limiter_enabled || vis < 0 || vis >= GS_VGPU_MAX_DEVICES || L.dev[vis].bp == 0)
                return -1;
        struct lim_dev *d = &L.dev[vis];
        int v = atomic_load(&d->view_pct);
        if (v < 0 || !atomic_load(&L.running)) { /* no ticker here: sample the slice's region */
                uint64_t t0 = gs_mono_ns(), b0 = gs_vgpu_busy(vis);
                nap(GS_LIMITER_VIEW_SAMPLE_NS);
                uint64_t b1 = gs_vgpu_busy(vis);
                v = view_percent(b1 > b0 ? b1 - b0 : 0, gs_mono_ns() - t0, d->bp);
        }
        *pct = (unsigned)v;
        return 0;
}

static bool tick(struct lim_dev *d, int vis, uint64_t now)
{
        if (S.cu.cuCtxSetCurrent(d->ctx) != CUDA_SUCCESS)
                return false;
        if (now - d->cal_at > GS_LIMITER_CALIBRATE_NS && d->head == d->tail && calibrate_now(d, now)) {
                calibrate(d, 5); /* (it waits for the GPU: another context's time slice, retries) */
                now = gs_mono_ns();
        }
        /* What was in flight is an estimate: the measurement that replaces it may be smaller,
         * and the difference goes back into the budget. */
        uint64_t total = d->busy + drain(d, now);
        int64_t delta = (int64_t)(total - d->published);
        d->published = total;
        if (delta != 0 && atomic_fetch_sub_explicit(d->tokens, delta, memory_order_relaxed) < delta &&
            atomic_load_explicit(&d->borrow, memory_order_relaxed)) {
                /* Borrowed time is free: the slice owes nothing for what nobody else wanted. */
                int64_t t = atomic_load_explicit(d->tokens, memory_order_relaxed);
                while (t < 0 && !atomic_compare_exchange_weak_explicit(d->tokens, &t, 0, memory_order_relaxed,
                                                                       memory_order_relaxed))
                        ;
        }
        if (S.region != NULL && S.slot >= 0 && (unsigned)vis < gs_region_ndevices(S.region)) {
                gs_region_set_busy(S.region, S.slot, (unsigned)vis, total);
                uint64_t n = atomic_load_explicit(&d->launched, memory_order_relaxed);
                if (n > d->launches_published) {
                        gs_region_add_launches(S.region, (unsigned)vis, n - d->launches_published);
                        d->launches_published = n;
                }
                uint64_t last = atomic_load(&d->last_launch);
                if (delta != 0 && last != 0) {
                        struct timespec rt;
                        clock_gettime(CLOCK_REALTIME, &rt);
                        uint64_t real = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
                        gs_region_set_last_launch(S.region, S.slot, real - (now - last));
                }
        }
        share_check(d, vis, now);
        update_view(d, vis, now, total);
        uint64_t off = atomic_load(&d->arb_off_until);
        if (off != 0 && now > off)
                atomic_store(&d->arb_off_until, 0);
        atomic_store(&d->busy_total, total);
        if (atomic_load(&d->tw_since) != 0 && atomic_load(&d->waiting) == 0 &&
            now - atomic_load(&d->tw_last) > GS_LIMITER_TURN_GAP_NS)
                atomic_store(&d->tw_since, 0); /* no wait for a turn for a while: the stretch ended */
        bool idle = atomic_load(&d->head) == atomic_load(&d->tail) && atomic_load(&d->seg_start) == 0;
        /* Our last sign of work: a launch (or one on its way out of the gate), a completion
         * measured, or the application's wait for its work returning (on our clock: a
         * completion's time is an event's, mapped through a reference that may be a few hundred
         * microseconds off). A slice whose kernel waited a millisecond behind another slice's and
         * has just ended is in the middle of its work, its next launch microseconds away: by its
         * last launch alone, or by a completion mapped early, it would look done, and a tick in
         * that gap would hand its turn over (the other slice's next kernel then runs between two
         * of ours). */
        uint64_t active = atomic_load(&d->last_launch) > d->done ? atomic_load(&d->last_launch) : d->done;
        if (atomic_load(&d->synced) > active)
                active = atomic_load(&d->synced);
        if (atomic_load(&d->going) > active)
                active = atomic_load(&d->going);
        if (active > now)
                active = now;
        /* A slice whose budget is spent does not want a turn (it could not use it), nor does one
         * whose launchers came to the gate with it spent, until it is refilled. A launcher that
         * waits for a turn with budget left wants one, whole burst or not: taken for no demand,
         * the turn it took once the GPU was free went straight back, every nap (take, hand over:
         * 4,900 turns in a 3 s batch process where 240 do), the others read the thrash as demand
         * their turns kept waiting, and capped batches that came and went took each other for
         * liars and kept less than their cap (coop cap on the H200: 0.22 of the GPU for 0.25). */
        bool wanting = (!idle || atomic_load(&d->waiting) != 0 || now - active < 2 * GS_LIMITER_SAMPLE_NS) && !spent(d) &&
                       (atomic_load(&d->waiting_budget) == 0 || refilled(d));
        atomic_store(&d->wanting, wanting || atomic_load(&d->waiting) != 0);
        /* Hand the GPU over when about one tick of our work is left: the next slice's first
         * launches then queue behind it instead of finding the GPU idle. */
        uint64_t left = (atomic_load(&d->launched) - atomic_load(&d->completed)) * atomic_load(&d->per_launch);
        /* The arbiter gets each nanosecond once: the in-flight part of `total` is an estimate that
         * can fall back, so only what rises above the highest total so far is new GPU time. */
        uint64_t fresh = total > d->arb_total ? total - d->arb_total : 0;
        if (fresh != 0)
                d->arb_total = total;
        /* Quiet: nothing of ours queued, and no launch or completion for a tick (and not held back
         * by our budget): a turn we hold goes to a slice that waits (we cut back in when our next
         * work comes). */
        bool held_back = spent(d);
        /* ... or, beside a slice of our class, once the application's work is done by its waits
         * (a request client: its request is over; a tick later, the request of another slice
         * that came meanwhile waited for a turn nobody used). The ticker looks again then. Not
         * beside other classes alone: a higher one cuts our turn anyway, a lower one takes our
         * gaps, and a high client judged done in the middle of a request (a CPU stall of its
         * thread longer than its steps) had a batch kernel run between two of its own. */
        uint64_t done = gs_arb_level(&d->arb) ? done_at(d, now) : 0;
        if (done > now && atomic_load(&L.look_at) > done)
                atomic_store(&L.look_at, done);
        bool quiet = idle && atomic_load(&d->waiting) == 0 && (now - active > GS_LIMITER_TICK_NS || (done != 0 && done <= now)) && !held_back;
        uint64_t got = slice_busy(vis, d->arb_total);
        judge_light(d, now, got);
        gs_arb_tick(&d->arb, now, wanting, fresh, got,
                    idle || (atomic_load(&d->seg_start) == 0 && left <= GS_LIMITER_TICK_NS), quiet, held_back);
        return !idle || wanting || delta != 0;
}

/* A live change of the slice's compute limits (live.c), at the window after it came: the share
 * (100 % or none: the whole GPU, the gate stays but never closes for long), the mode and the
 * priority, here, in the region (observer) and in the GPU's arbiter. A device that started without
 * a compute limit has no gate to change (its launches are not interposed): restart for one. */
static unsigned live_seen;
static void apply_live(void)
{
        struct gs_vgpu_live l;
        gs_vgpu_live_get(&l);
        int mode = l.compute_mode == GS_COMPUTE_OFF ? S.cfg.compute_mode : l.compute_mode;
        __atomic_store_n(&S.cfg.compute_mode, mode, __ATOMIC_RELAXED);
        __atomic_store_n(&S.cfg.priority, l.priority, __ATOMIC_RELAXED);
        for (int i = 0; i < GS_VGPU_MAX_DEVICES; i++) {
                struct lim_dev *d = &L.dev[i];
                if (d->bp == 0)
                        continue;
                unsigned bp = l.compute[i] != 0 && l.compute_mode != GS_COMPUTE_OFF ? l.compute[i] * 100u : 10000u;
                if (bp != d->bp)
                        gs_vgpu_log(2, "device %d: compute limit %u.%02u %% -> %u.%02u %%", i, d->bp / 100, d->bp % 100,
                                    bp / 100, bp % 100);
                __atomic_store_n(&d->bp, bp, __ATOMIC_RELAXED);
                __atomic_store_n(&d->burst, (int64_t)(GS_LIMITER_WINDOW_NS * bp / 10000u), __ATOMIC_RELAXED);
                if (atomic_load(&d->ready) != 2)
                        continue; /* set up later, with this share */
                if (S.region != NULL && S.slot >= 0 && (unsigned)i < gs_region_ndevices(S.region)) {
                        gs_region_set_compute(S.region, (unsigned)i, bp, (uint32_t)mode);
                        gs_region_set_priority(S.region, (uint32_t)l.priority);
                }
                gs_arb_update(&d->arb, bp, (uint32_t)l.priority, mode == GS_COMPUTE_SHARE);
        }
}

static void *ticker(void *arg)
{
        (void)arg;
        /* Our calls must never invalidate a stream capture the application runs in global mode. */
        CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
        if (S.cu.cuThreadExchangeStreamCaptureMode != NULL)
                S.cu.cuThreadExchangeStreamCaptureMode(&mode);
        precise_naps();
        while (!atomic_load(&L.stopping)) {
                unsigned v = gs_vgpu_live_version();
                if (v != live_seen) {
                        live_seen = v;
                        apply_live();
                }
                uint64_t now = gs_mono_ns();
                bool active = false;
                for (int i = 0; i < GS_VGPU_MAX_DEVICES; i++)
                        if (L.dev[i].bp != 0 && atomic_load_explicit(&L.dev[i].ready, memory_order_acquire) == 2)
                                active |= tick(&L.dev[i], i, now);
                refill(now);
                uint64_t look = atomic_exchange(&L.look_at, UINT64_MAX), t = gs_mono_ns();
                if (look < t + GS_LIMITER_TICK_NS)
                        ticker_nap(look > t ? look - t : 0, NAP_SHORT);
                else
                        ticker_nap(active ? GS_LIMITER_TICK_NS : GS_LIMITER_IDLE_TICK_NS, active ? NAP_SHORT : NAP_LONG);
        }
        return NULL;
}

static void report_gaps(void)
{
        for (int i = 0; i < GS_VGPU_MAX_DEVICES; i++) {
                struct lim_dev *d = &L.dev[i];
                if (d->bp == 0 || atomic_load(&d->ready) != 2)
                        continue;
                char line[512];
                int n = 0;
                for (int k = 0; k < GS_LIMITER_GAP_BUCKETS && n < (int)sizeof(line); k++) {
                        char edge[32] = "longer";
                        if (k < GS_LIMITER_GAP_BUCKETS - 1)
                                snprintf(edge, sizeof(edge), "<%llu us", (unsigned long long)gap_edge_us[k]);
                        n += snprintf(line + n, sizeof(line) - (size_t)n, " %s: %llu (%llu us)", edge,
                                      (unsigned long long)d->gap_n[k], (unsigned long long)(d->gap_ns[k] / 1000u));
                }
                gs_vgpu_log(3, "device %d: busy %llu us (clock window %llu ns); idle gaps between its work:%s", i,
                            (unsigned long long)(d->busy / 1000u), (unsigned long long)d->cal_window, line);
        }
}

static void stop_ticker(void)
{
        if (!atomic_load(&L.running))
                return;
        atomic_store(&L.stopping, true);
        pthread_join(L.thread, NULL);
        atomic_store(&L.running, false);
        /* (a turn held on the way out goes to the others now: gs_arb_leave) */
        for (int i = 0; i < GS_VGPU_MAX_DEVICES; i++)
                if (L.dev[i].bp != 0 && atomic_load(&L.dev[i].ready) == 2)
                        gs_arb_leave(&L.dev[i].arb);
        if (S.cfg.log_level >= 3)
                report_gaps();
}

/* A forked child has no ticker and none of the parent's events: it starts over. */
void gs_limiter_after_fork(void)
{
        pthread_mutex_init(&L.lock, NULL);
        atomic_store(&L.running, false);
        atomic_store(&L.local_refill, 0);
        atomic_store(&L.napping, NAP_NONE);
        for (int i = 0; i < GS_VGPU_MAX_DEVICES; i++) {
                struct lim_dev *d = &L.dev[i];
                unsigned bp = d->bp;
                int64_t burst = d->burst;
                memset((void *)d, 0, sizeof(*d));
                d->bp = bp;
                d->burst = burst;
                d->tokens = &d->local_tokens;
                atomic_store(&d->view_pct, -1);
        }
        /* A child's descriptor table is only as large as the descriptors open at the fork: grown
         * again while it has one thread, as in the constructor. */
        if (gs_limiter_enabled) /* (a child's table) */
                gs_arb_reserve_fds();
}
