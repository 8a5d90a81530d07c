/*
 * The per-container usage region: a small file mapped MAP_SHARED by every process of a sliced
 * container (the interposer writes it) and read by the host observer. This header IS the ABI:
 * the layout below is fixed by static_asserts and versioned by GS_REGION_VERSION; change it only
 * by bumping the version (an attacher refuses a file of another version instead of guessing).
 *
 * Dependencies: libc only (the interposer links region.c directly).
 *
 * File layout (x86-64 / aarch64, little- or big-endian host; both sides run on one machine):
 *
 *   offset  size   field
 *   ------  -----  ----------------------------------------------------------------------------
 *   header (struct gs_region_header, 2048 bytes)
 *        0      8  magic         the bytes "GSLICE\0\1", stored LAST at creation (release), so a
 *                                file without it was never fully initialized
 *        8      4  version       GS_REGION_VERSION (3; 2 had no counters area and was 460800
 *                                bytes; 1 had 320-byte slots and no compute fields)
 *       12      4  header_size   2048 = offset of slots[0]
 *       16      4  ndevices      1..16, devices in this container, in the creator's index order
 *       20      4  max_procs     1024 (fixed)
 *       24      4  slot_size     448
 *       28      4  flags         0 (reserved)
 *       32      8  region_size   header_size + max_procs * slot_size + counters = 464960
 *       40      8  created_ns    CLOCK_REALTIME at creation
 *       48      4  creator_pid   pid (in the container's pid namespace) of the creator
 *       52     12  (reserved, 0)
 *       64     64  lock          process-shared ROBUST pthread mutex (glibc: 40 or 48 bytes)
 *      128      4  slot_hwm      1 + highest slot index that may be live (bounds every scan)
 *      132      4  (reserved, 0)
 *      136      8  reaped        dead slots reclaimed since creation
 *      144      8  recoveries    times a locker found the lock's owner dead (EOWNERDEAD)
 *      152      8  refused       charges refused because the limit would be exceeded
 *      160      8  refill_ns     compute limiter: CLOCK_MONOTONIC of the last token refill (every
 *                                process of the slice claims the time since with an exchange)
 *      168      4  compute_mode  0 cap, 1 share, 2 off (as the processes' configuration says)
 *      172      4  limits_gen    bumped by the host (`gpuslice slice set`) after it rewrote the
 *                                slice's live limits file: a hint to re-read that file now (the
 *                                processes also look at the file every 250 ms). Never a limit:
 *                                any process of the slice can write it
 *      176     16  (reserved, 0)
 *      192    128  limit[16]     bytes per device, 0 = unlimited: written by the creator, then by
 *                                any process that applied a live change (for the observer). The
 *                                interposer never takes its quota from here (the container can
 *                                write it): it obeys its own slice's host-written limits
 *      320   1536  uuid[16][96]  NUL-terminated device UUIDs ("GPU-..." / "MIG-..."), may be ""
 *     1856     64  compute_limit[16]  compute share per device in basis points (1..9999), 0 =
 *                                unlimited; stored by every process of the slice (same values)
 *     1920    128  tokens[16]    signed: the slice's compute budget per device, in ns of GPU
 *                                time; refilled at compute_limit per ns of wall time up to a
 *                                burst, spent by the measured busy time of every process
 *   slots[1024] at 2048, 448 bytes each (struct gs_region_slot); slots never move
 *        0      4  pid           container-namespace pid; 0 = free. Stored last when claimed.
 *        4      4  host_pid      host pid, 0 = unknown (filled by whoever learns it)
 *        8      8  start_time    /proc/<pid>/stat field 22 (clock ticks after boot) at register;
 *                                0 = unknown. A pid with another start time is a reused pid.
 *       16      8  heartbeat_ns  CLOCK_REALTIME of the owner's last gs_region_heartbeat()
 *       24      8  last_launch_ns CLOCK_REALTIME of a recent kernel launch (compute-limited
 *                                processes; sampled, not every launch)
 *       32    128  used[16]      bytes charged by the interposer (gs_region_try_charge/uncharge)
 *      160    128  extra[16]     driver-measured bytes not covered by used[] (context, modules,
 *                                granularity rounding), written by the owner's reconciler
 *      288    128  busy_ns[16]   GPU time of this process's work, ns, cumulative (compute
 *                                limiter: measured with events; in-flight work counted up to now)
 *      416     32  (reserved, 0)
 *   counters at 460800, 4160 bytes (struct gs_region_counters; new in version 3, so every offset
 *   of version 2 is unchanged): slice-wide, cumulative since the region was created, never reset
 *   when a process exits (unlike the slots)
 *        0      4  priority      the slice's priority: 0 high, 1 normal, 2 low (the numbers of
 *                                HAMi's CUDA_TASK_PRIORITY); GS_REGION_UNSET (0xffffffff) = not
 *                                reported yet. Stored by every process of the slice (same value)
 *        4     60  (reserved, 0)
 *       64   4096  dev[16], 256 bytes each (struct gs_region_dev_counters):
 *                     0    112  wait_bucket[14]  kernel launches that waited in the gate for the
 *                                   GPU, by how long: bucket i counts waits w (ns, > 0) with
 *                                   edge[i-1] < w <= edge[i]; edges (GS_REGION_WAIT_EDGES_NS)
 *                                   50us 100us 250us 500us 1ms 2.5ms 5ms 10ms 25ms 50ms 100ms
 *                                   250ms 1s, bucket 13 = more than 1 s. NOT cumulative.
 *                   112      8  wait_sum_ns      sum of those waits, ns
 *                   120      8  launches         every kernel launch, waited or not (so the
 *                                   launches that did not wait are launches - sum(wait_bucket);
 *                                   the two are added separately, a reader clamps at 0)
 *                   128      4  compute_via      how the slice's compute share is enforced on
 *                                   the device: 0 time limiter, 1 MPS, 2 time limiter after
 *                                   falling back from a poisoned or absent MPS server;
 *                                   GS_REGION_UNSET = not reported
 *                   132    124  (reserved, 0)
 *
 * All counters are lock-free 64-bit atomics. A device's usage is the sum of used[dev] + extra[dev]
 * over slots [0, slot_hwm) whose pid != 0. The counters area is written with atomic adds and
 * stores only (no lock, no syscall: the interposer's launch path calls it).
 *
 * Concurrency and crash-safety
 *   - Creation is serialized by flock(LOCK_EX) on the file (released by the kernel if the holder
 *     dies); the initializer sets up everything and stores the magic last. A file whose magic is
 *     still 0 is re-initialized by the next opener.
 *   - One robust process-shared mutex serializes slot claiming/reaping and every charge against a
 *     limited device, so two processes can never both pass the check for the last bytes. If a
 *     holder dies (kill -9 at any instruction) the next locker gets EOWNERDEAD, repairs by reaping
 *     (every multi-step update under the lock is ordered so a half-done one is either invisible or
 *     completed by a reap) and marks the mutex consistent. Locking waits at most the handle's lock
 *     timeout (default 10 s; a stopped holder) and then fails with ETIMEDOUT: never forever.
 *   - Readers (gs_region_usage, the observer) never lock and never spin.
 *   - Uncharges and extra[] updates are lock-free (decreases can only make the limit check
 *     conservative; extra[] is a measurement of memory that already exists).
 *   - Dead processes are reaped (counters zeroed, then pid cleared) on register, on a charge that
 *     would be refused, after a lock recovery, and on gs_region_reap() (the interposer calls it
 *     periodically). A process is dead when kill(pid, 0) fails with ESRCH, its /proc start time
 *     differs from the slot's (pid reuse), or it is a zombie (state Z/X with one thread).
 *   - Liveness is judged in the caller's pid namespace: register/charge/reap must be called from
 *     inside the container. The host observer uses gs_region_open_snapshot() (pread, no mmap, no
 *     lock, never writes) and must not reap.
 *   - Not async-signal-safe: do not charge from a signal handler that may interrupt a charge.
 *   - After fork() the child must gs_region_register() its own pid before charging; it must not
 *     use the parent's slot (gs_region_unregister refuses a slot that is not the caller's).
 */
#ifndef GS_REGION_REGION_H
#define GS_REGION_REGION_H

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define GS_REGION_MAGIC_BYTES "GSLICE\0\1" /* 8 bytes, no terminator counted */
#define GS_REGION_VERSION 3u
#define GS_REGION_MAX_DEVICES 16
#define GS_REGION_MAX_PROCS 1024
#define GS_REGION_UUID_LEN 96
#define GS_REGION_HEADER_SIZE 2048u
#define GS_REGION_SLOT_SIZE 448u
#define GS_REGION_COUNTERS_OFFSET (GS_REGION_HEADER_SIZE + GS_REGION_MAX_PROCS * GS_REGION_SLOT_SIZE)
#define GS_REGION_COUNTERS_SIZE 4160u
#define GS_REGION_DEV_COUNTERS_SIZE 256u
#define GS_REGION_SIZE (GS_REGION_COUNTERS_OFFSET + GS_REGION_COUNTERS_SIZE)
/* Version 2 (readers only: the observer still shows such regions, without the counters). */
#define GS_REGION_VERSION_2 2u
#define GS_REGION_SIZE_V2 GS_REGION_COUNTERS_OFFSET
/* A counters field nobody has stored yet (priority, compute_via). */
#define GS_REGION_UNSET 0xffffffffu
/* Priorities (the numbers of src/vgpu/config.h's GS_PRIO_* and HAMi's CUDA_TASK_PRIORITY). */
#define GS_REGION_PRIO_HIGH 0u
#define GS_REGION_PRIO_NORMAL 1u
#define GS_REGION_PRIO_LOW 2u
/* compute_via: how a device's compute share is enforced. */
#define GS_REGION_VIA_TIME 0u
#define GS_REGION_VIA_MPS 1u
#define GS_REGION_VIA_TIME_FALLBACK 2u
/* The launch-wait histogram: 13 finite upper edges and the bucket above the last. */
#define GS_REGION_WAIT_BUCKETS 14
#define GS_REGION_WAIT_EDGES_NS                                                                        \
        { 50000ull, 100000ull, 250000ull, 500000ull, 1000000ull, 2500000ull, 5000000ull, 10000000ull,  \
          25000000ull, 50000000ull, 100000000ull, 250000000ull, 1000000000ull }
#define GS_REGION_LOCK_TIMEOUT_MS_DEFAULT 10000

struct gs_region_slot {
        _Atomic int32_t pid;
        _Atomic int32_t host_pid;
        _Atomic uint64_t start_time;
        _Atomic uint64_t heartbeat_ns;
        _Atomic uint64_t last_launch_ns;
        _Atomic uint64_t used[GS_REGION_MAX_DEVICES];
        _Atomic uint64_t extra[GS_REGION_MAX_DEVICES];
        _Atomic uint64_t busy_ns[GS_REGION_MAX_DEVICES];
        uint64_t reserved1[4];
};

struct gs_region_header {
        _Atomic uint64_t magic;
        uint32_t version;
        uint32_t header_size;
        uint32_t ndevices;
        uint32_t max_procs;
        uint32_t slot_size;
        uint32_t flags;
        uint64_t region_size;
        uint64_t created_ns;
        int32_t creator_pid;
        uint32_t reserved0[3];
        union {
                pthread_mutex_t m;
                unsigned char bytes[64];
        } lock;
        _Atomic uint32_t slot_hwm;
        uint32_t reserved1;
        _Atomic uint64_t reaped;
        _Atomic uint64_t recoveries;
        _Atomic uint64_t refused;
        _Atomic uint64_t refill_ns;
        _Atomic uint32_t compute_mode;
        _Atomic uint32_t limits_gen;
        uint32_t reserved2[4];
        _Atomic uint64_t limit[GS_REGION_MAX_DEVICES];
        char uuid[GS_REGION_MAX_DEVICES][GS_REGION_UUID_LEN];
        _Atomic uint32_t compute_limit[GS_REGION_MAX_DEVICES];
        _Atomic int64_t tokens[GS_REGION_MAX_DEVICES];
};

struct gs_region_dev_counters {
        _Atomic uint64_t wait_bucket[GS_REGION_WAIT_BUCKETS];
        _Atomic uint64_t wait_sum_ns;
        _Atomic uint64_t launches;
        _Atomic uint32_t compute_via;
        uint32_t reserved0;
        uint64_t reserved1[15];
};

struct gs_region_counters {
        _Atomic uint32_t priority;
        uint32_t reserved0[15];
        struct gs_region_dev_counters dev[GS_REGION_MAX_DEVICES];
};

struct gs_region_file {
        struct gs_region_header hdr;
        struct gs_region_slot slots[GS_REGION_MAX_PROCS];
        struct gs_region_counters ctr;
};

/* Upper edge of wait bucket i in ns (UINT64_MAX for the last, +Inf). */
static inline uint64_t gs_region_wait_edge_ns(unsigned i)
{
        static const uint64_t edges[GS_REGION_WAIT_BUCKETS - 1] = GS_REGION_WAIT_EDGES_NS;
        return i < GS_REGION_WAIT_BUCKETS - 1 ? edges[i] : UINT64_MAX;
}

/* The bucket a wait of wait_ns falls in: the first whose upper edge is >= wait_ns. */
static inline unsigned gs_region_wait_bucket(uint64_t wait_ns)
{
        unsigned i = 0;
        while (i < GS_REGION_WAIT_BUCKETS - 1 && wait_ns > gs_region_wait_edge_ns(i))
                i++;
        return i;
}

/* The ABI, checked at compile time on every side that includes this header. */
static_assert(ATOMIC_INT_LOCK_FREE == 2 && ATOMIC_LONG_LOCK_FREE == 2 && ATOMIC_LLONG_LOCK_FREE == 2,
              "shared-memory atomics must be lock-free (a process-local fallback lock would not be shared)");
static_assert(sizeof(pthread_mutex_t) <= 64, "pthread_mutex_t must fit the 64-byte lock field");
static_assert(sizeof(_Atomic uint64_t) == 8 && sizeof(_Atomic int32_t) == 4, "atomic sizes");
static_assert(offsetof(struct gs_region_slot, pid) == 0, "slot.pid");
static_assert(offsetof(struct gs_region_slot, host_pid) == 4, "slot.host_pid");
static_assert(offsetof(struct gs_region_slot, start_time) == 8, "slot.start_time");
static_assert(offsetof(struct gs_region_slot, heartbeat_ns) == 16, "slot.heartbeat_ns");
static_assert(offsetof(struct gs_region_slot, used) == 32, "slot.used");
static_assert(offsetof(struct gs_region_slot, extra) == 160, "slot.extra");
static_assert(offsetof(struct gs_region_slot, last_launch_ns) == 24, "slot.last_launch_ns");
static_assert(offsetof(struct gs_region_slot, busy_ns) == 288, "slot.busy_ns");
static_assert(sizeof(struct gs_region_slot) == GS_REGION_SLOT_SIZE, "slot size");
static_assert(offsetof(struct gs_region_header, magic) == 0, "hdr.magic");
static_assert(offsetof(struct gs_region_header, version) == 8, "hdr.version");
static_assert(offsetof(struct gs_region_header, header_size) == 12, "hdr.header_size");
static_assert(offsetof(struct gs_region_header, ndevices) == 16, "hdr.ndevices");
static_assert(offsetof(struct gs_region_header, max_procs) == 20, "hdr.max_procs");
static_assert(offsetof(struct gs_region_header, slot_size) == 24, "hdr.slot_size");
static_assert(offsetof(struct gs_region_header, flags) == 28, "hdr.flags");
static_assert(offsetof(struct gs_region_header, region_size) == 32, "hdr.region_size");
static_assert(offsetof(struct gs_region_header, created_ns) == 40, "hdr.created_ns");
static_assert(offsetof(struct gs_region_header, creator_pid) == 48, "hdr.creator_pid");
static_assert(offsetof(struct gs_region_header, lock) == 64, "hdr.lock");
static_assert(offsetof(struct gs_region_header, slot_hwm) == 128, "hdr.slot_hwm");
static_assert(offsetof(struct gs_region_header, reaped) == 136, "hdr.reaped");
static_assert(offsetof(struct gs_region_header, recoveries) == 144, "hdr.recoveries");
static_assert(offsetof(struct gs_region_header, refused) == 152, "hdr.refused");
static_assert(offsetof(struct gs_region_header, limit) == 192, "hdr.limit");
static_assert(offsetof(struct gs_region_header, uuid) == 320, "hdr.uuid");
static_assert(offsetof(struct gs_region_header, refill_ns) == 160, "hdr.refill_ns");
static_assert(offsetof(struct gs_region_header, compute_mode) == 168, "hdr.compute_mode");
static_assert(offsetof(struct gs_region_header, limits_gen) == 172, "hdr.limits_gen");
static_assert(offsetof(struct gs_region_header, compute_limit) == 1856, "hdr.compute_limit");
static_assert(offsetof(struct gs_region_header, tokens) == 1920, "hdr.tokens");
static_assert(sizeof(struct gs_region_header) == GS_REGION_HEADER_SIZE, "header size");
static_assert(offsetof(struct gs_region_file, slots) == GS_REGION_HEADER_SIZE, "slots offset");
static_assert(offsetof(struct gs_region_dev_counters, wait_bucket) == 0, "ctr.dev.wait_bucket");
static_assert(offsetof(struct gs_region_dev_counters, wait_sum_ns) == 112, "ctr.dev.wait_sum_ns");
static_assert(offsetof(struct gs_region_dev_counters, launches) == 120, "ctr.dev.launches");
static_assert(offsetof(struct gs_region_dev_counters, compute_via) == 128, "ctr.dev.compute_via");
static_assert(sizeof(struct gs_region_dev_counters) == GS_REGION_DEV_COUNTERS_SIZE, "dev counters size");
static_assert(offsetof(struct gs_region_counters, priority) == 0, "ctr.priority");
static_assert(offsetof(struct gs_region_counters, dev) == 64, "ctr.dev");
static_assert(sizeof(struct gs_region_counters) == GS_REGION_COUNTERS_SIZE, "counters size");
static_assert(offsetof(struct gs_region_file, ctr) == GS_REGION_COUNTERS_OFFSET, "counters offset");
static_assert(GS_REGION_COUNTERS_OFFSET == 460800, "counters offset value (= the version 2 size)");
static_assert(sizeof(struct gs_region_file) == GS_REGION_SIZE, "region size");
static_assert(GS_REGION_SIZE == 464960, "region size value");

/* Opaque handle (process-local). */
struct gs_region;

/*
 * Open (or create) the region at `path` read-write and map it. If the file is new (or was left
 * uninitialized by a creator that died), it is created with mode 0660 (less the umask; an existing
 * file keeps its maker's mode and owner: never world-writable) and initialized with
 * `ndevices` (1..16), `limits` (bytes, 0 = unlimited; NULL = all unlimited) and `uuids` (NULL =
 * empty). If it exists, those arguments are ignored: the file's values win; compare them with
 * gs_region_limits_match() and decide. Refuses a file of another format/version/size with a
 * message. Returns 0 and *out, or -1 with `err` filled (errno set).
 */
int gs_region_open(const char *path, unsigned ndevices, const uint64_t *limits,
                   const char (*uuids)[GS_REGION_UUID_LEN], struct gs_region **out, char *err,
                   size_t errlen);

/*
 * Observer side: read the file with pread into a private copy (no mmap: a truncating container
 * cannot SIGBUS the reader; no lock; nothing is ever written). All read functions work on it;
 * the mutating ones fail with EROFS. gs_region_refresh() re-reads it. Contents are validated and
 * clamped (a hostile file can only produce wrong numbers, not out-of-bounds accesses).
 */
int gs_region_open_snapshot(const char *path, struct gs_region **out, char *err, size_t errlen);
int gs_region_refresh(struct gs_region *r, char *err, size_t errlen);

/* Unmap / free. Does not unregister. NULL is fine. */
void gs_region_close(struct gs_region *r);

/*
 * 1 if the file's device count, limits and (when `uuids` is not NULL) UUIDs equal the given ones;
 * 0 otherwise, with the first difference described in `err` (e.g. the creator's limits differ
 * from this process's environment).
 */
int gs_region_limits_match(const struct gs_region *r, unsigned ndevices, const uint64_t *limits,
                           const char (*uuids)[GS_REGION_UUID_LEN], char *err, size_t errlen);

/*
 * Claim a slot for `pid` (normally getpid()): reaps dead slots, then reuses the slot of the same
 * process (same pid and start time: e.g. after exec; its counters are reset) or takes the lowest
 * free one. Returns 0 and *slot, or -1 with errno (ENOSPC: all 1024 slots are live; ETIMEDOUT,
 * ENOTRECOVERABLE: lock; EROFS: snapshot; EINVAL).
 */
int gs_region_register(struct gs_region *r, int pid, int *slot);

/* Clear the slot's counters then its pid. Lock-free; for atexit. Only the slot's own process may
 * do this (EPERM otherwise: a forked child running inherited atexit handlers). */
int gs_region_unregister(struct gs_region *r, int slot);

/*
 * Charge `bytes` on device `dev` to `slot`. Unlimited device (or 0 bytes): lock-free add, 0. Limited:
 * under the lock, sum used+extra over live slots; if sum + bytes > limit, reap and re-check once;
 * still over → return 1 (refused, nothing charged); else add and return 0. *usage (may be NULL)
 * gets the device's usage including this charge (0) or the usage that caused the refusal (1).
 * -1 with errno: EINVAL (bad slot/dev), ESTALE (slot not live: unregistered or reaped),
 * ETIMEDOUT / ENOTRECOVERABLE (lock), EROFS (snapshot). No /proc access unless refusing.
 */
int gs_region_try_charge(struct gs_region *r, int slot, unsigned dev, uint64_t bytes,
                         uint64_t *usage);

/* gs_region_try_charge against `limit` (bytes, 0 = unlimited) instead of the file's limit[dev]:
 * the interposer passes the quota its host-written configuration gives it, since any process of
 * the slice can write the file. */
int gs_region_try_charge_limit(struct gs_region *r, int slot, unsigned dev, uint64_t bytes, uint64_t limit,
                               uint64_t *usage);

/* Live limits (lock-free): publish the limit a process now obeys on dev (for the observer); the
 * generation the host bumps after a change (relaxed load: the launch path may read it). */
void gs_region_publish_limit(struct gs_region *r, unsigned dev, uint64_t bytes);
uint32_t gs_region_limits_gen(const struct gs_region *r);

/* Subtract, clamped at 0 (never underflows). Lock-free. -1/EINVAL, EROFS. */
int gs_region_uncharge(struct gs_region *r, int slot, unsigned dev, uint64_t bytes);

/* Set the slot's extra[dev] (driver-measured memory not in used[]). Lock-free. */
int gs_region_set_extra(struct gs_region *r, int slot, unsigned dev, uint64_t bytes);

/* Store CLOCK_REALTIME into the slot's heartbeat; store the host pid. Lock-free. */
int gs_region_heartbeat(struct gs_region *r, int slot);
int gs_region_set_host_pid(struct gs_region *r, int slot, int host_pid);

/* Lock-free: sum of used+extra over live slots (saturating). -1/EINVAL for a bad dev. */
int gs_region_usage(const struct gs_region *r, unsigned dev, uint64_t *used_total);

/* Lock-free: the largest extra[dev] of a live slot (the biggest context measured), 0 if none. */
uint64_t gs_region_max_extra(const struct gs_region *r, unsigned dev);

/* Reap dead slots under the lock; returns how many were reaped, or -1 with errno. */
int gs_region_reap(struct gs_region *r);

/* Limit of `dev` in bytes (0 = unlimited or dev out of range). */
uint64_t gs_region_limit(const struct gs_region *r, unsigned dev);
unsigned gs_region_ndevices(const struct gs_region *r);
/* Device index whose UUID equals `uuid`, or -1. */
int gs_region_find_uuid(const struct gs_region *r, const char *uuid);

/* Read-only view of the mapped (or snapshot) file, for the observer and tests. */
const struct gs_region_file *gs_region_file(const struct gs_region *r);

/* How long a locker waits for a live holder before failing with ETIMEDOUT (ms, > 0). */
void gs_region_set_lock_timeout(struct gs_region *r, unsigned ms);

/*
 * Take / release the region lock directly (tools and tests; the API functions lock by
 * themselves). Never hold it across anything that blocks. gs_region_lock returns 0, or 1 when it
 * recovered the lock from a dead holder (already repaired), or -1 with errno.
 */
int gs_region_lock(struct gs_region *r);
int gs_region_unlock(struct gs_region *r);

/*
 * Compute share (the interposer's limiter; lock-free, any process of the slice):
 *   gs_region_set_compute: store dev's share (basis points, 0 = unlimited) and the mode.
 *   gs_region_set_busy / gs_region_set_last_launch: the slot's own measurements.
 *   gs_region_busy: sum of busy_ns[dev] over live slots (the observer's compute used).
 *   gs_region_tokens: the address of dev's shared budget (NULL if dev is out of range or the
 *   handle is a snapshot), for the limiter's atomics; gs_region_refill_claim: exchange
 *   refill_ns with now and return the previous value (0 the first time).
 */
int gs_region_set_compute(struct gs_region *r, unsigned dev, uint32_t basis_points, uint32_t mode);
int gs_region_set_busy(struct gs_region *r, int slot, unsigned dev, uint64_t busy_ns);
int gs_region_set_last_launch(struct gs_region *r, int slot, uint64_t realtime_ns);
uint64_t gs_region_busy(const struct gs_region *r, unsigned dev);
_Atomic int64_t *gs_region_tokens(struct gs_region *r, unsigned dev);
uint64_t gs_region_refill_claim(struct gs_region *r, uint64_t now_ns);

/*
 * Slice-wide counters (the counters area; see the layout). Lock-free atomics only, no syscall, no
 * lock: safe from any thread, on the launch path. A NULL region, a snapshot handle, or a dev out
 * of range is a no-op.
 *   gs_region_note_wait: one launch that waited wait_ns (> 0; 0 is a no-op) in the gate for the
 *     GPU: its bucket and the sum. Count the launch itself with gs_region_add_launches.
 *   gs_region_add_launches: n more kernel launches on dev, waited or not.
 *   gs_region_set_priority: GS_REGION_PRIO_* (a larger value is stored as low).
 *   gs_region_set_compute_via: GS_REGION_VIA_* for dev (any other value is ignored).
 */
void gs_region_note_wait(struct gs_region *r, unsigned dev, uint64_t wait_ns);
void gs_region_add_launches(struct gs_region *r, unsigned dev, uint64_t n);
void gs_region_set_priority(struct gs_region *r, uint32_t prio);
void gs_region_set_compute_via(struct gs_region *r, unsigned dev, uint32_t via);

/* Counters kept in the header, plus the live slots right now (lock-free). */
struct gs_region_stats {
        unsigned live;     /* slots with pid != 0 */
        unsigned hwm;      /* slot_hwm */
        uint64_t reaped;
        uint64_t recoveries;
        uint64_t refused;
};
int gs_region_stats(const struct gs_region *r, struct gs_region_stats *st);

/* Start time (clock ticks after boot, /proc/<pid>/stat field 22) of `pid`; 0 if unknown. */
uint64_t gs_region_proc_start_time(int pid);

#endif
