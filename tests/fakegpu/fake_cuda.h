/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fake libcuda.so.1: a simulated CUDA driver for the GPUs of the fakegpu config (README.md).
 * This header is internal to the library (not installed): the objects, the process-wide state
 * and the helpers the fake_cuda_<area>.c files share.
 *
 * What it models, with the answers of the real driver 580.159.04 where the cuda-probe could
 * see them (tests/gpu/cuda-probe.real.txt, compared by the fakegpu_vs_real_cuda test):
 *   - init: every call but cuDriverGetVersion, cuGetErrorString/Name, cuGetProcAddress* answers
 *     NOT_INITIALIZED before cuInit, and in a child forked after cuInit;
 *   - devices from the config (a GPU with "mig on" shows its MIG devices instead), filtered
 *     and ordered by CUDA_VISIBLE_DEVICES;
 *   - contexts: a per-thread context stack, refcounted primary contexts, created contexts;
 *     each active context costs `context_memory`; destroying / releasing a context frees
 *     everything allocated in it;
 *   - memory: allocations are charged to the simulated device (2 MiB pages; allocations under
 *     2 MiB share 2 MiB chunks, as the real driver packs them); a device's capacity is its
 *     memory minus reserved minus the config's `used` and `process` lines minus what every
 *     other process using this library holds (shared state file, fakegpu_state.h), so the
 *     fake NVML sees the same usage;
 *   - device pointers are unique addresses inside a PROT_NONE reservation: never real host
 *     memory (managed memory and pinned host memory are real host memory, as on a real GPU);
 *     copies and sets only validate their ranges;
 *   - VMM (cuMemCreate & co), stream-ordered allocation with per-device default pools (freed
 *     memory stays in the pool until a synchronize or trim, release threshold 0), arrays,
 *     mipmapped arrays, modules, kernels, streams;
 *   - GPU time (for the compute limiter, which measures busy time with events): a kernel lasts
 *     N µs if its name ends in `_<N>us`, else `kernel_us` (config; env FAKEGPU_KERNEL_US),
 *     times ceil(blocks / context SMs) / ceil(blocks / device SMs) (a green context has fewer);
 *     each device has one timeline per process on CLOCK_MONOTONIC where kernels run one after
 *     another in launch order (start = max(now, device tail)); streams keep their tails (the
 *     legacy stream's is the device's); a launch sleeps while its device has more than
 *     `queue_ms` queued. Events record max(stream tail, now); synchronize / query / elapsed
 *     time follow from it. Stream capture collects launches into a graph (count and summed
 *     duration) that cuGraphLaunch runs as one piece of work. The busy time a process queued
 *     goes to $FAKEGPU_BUSY_FILE at exit ("busy_ns=N kernels=K").
 *   - cuGetProcAddress / _v2 pick the ABI version for cudaVersion and flags (table g_procs).
 *
 * Files (one area each):
 *   fake_cuda_core.c    process-wide state (lock, config, device table, shared state file),
 *                       growable arrays, memory accounting (charge / uncharge / free bytes)
 *   fake_cuda_error.c   error codes, names and texts; cuGetErrorString/Name; fault injection
 *   fake_cuda_init.c    cuInit (config, device enumeration, CUDA_VISIBLE_DEVICES, address
 *                       space, shared state), fork, cuDriverGetVersion, cuGetExportTable
 *   fake_cuda_device.c  cuDeviceGet*, attributes, UUIDs, total memory, PCI bus ids
 *   fake_cuda_devx.c    every other entry point that names a device (pools of a device, advice,
 *                       prefetches, access by location, a pointer's / stream's device, batched
 *                       copies, what is not simulated after its device check), fakegpu_touched_uuid
 *   fake_cuda_ctx.c     the per-thread context stack, primary and created contexts, the
 *                       contexts of green contexts, cuCtxSynchronize
 *   fake_cuda_green.c   green contexts: SM resources, splits, resource descriptors
 *   fake_cuda_mem.c     the device address space (ranges, sub-allocations), linear, managed
 *                       and pinned host memory, cuMemFree, cuMemGetInfo
 *   fake_cuda_vmm.c     virtual memory management (cuMemCreate, reservations, mappings)
 *   fake_cuda_pool.c    stream-ordered allocation and memory pools
 *   fake_cuda_array.c   arrays and mipmapped arrays
 *   fake_cuda_stream.c  streams: create, destroy, query, synchronize; what a stream is to the
 *                       time model (stream_resolve: tail, SMs, capture)
 *   fake_cuda_module.c  modules, functions (and the base duration their name gives)
 *   fake_cuda_time.c    the GPU time model: durations, per-device timelines, back-pressure,
 *                       busy time and FAKEGPU_BUSY_FILE
 *   fake_cuda_launch.c  kernel launches: cuLaunchKernel, cuLaunchKernelEx, cooperative launches
 *   fake_cuda_event.c   events
 *   fake_cuda_graph.c   stream capture, graphs, executable graphs
 *   fake_cuda_copy.c    copies and sets (validate the device range, move no data)
 *   fake_cuda_proc.c    cuGetProcAddress(_v2) and its table of exported versions
 *
 * Locking: g_mu guards every table below (functions marked "g_mu held" expect it); handles
 * carry an atomic `live` / `active` flag so that lock-free checks (launches, event records,
 * graph launches) can read them. Timelines, stream tails, event times and capture counters are
 * atomics (compare-and-swap), never under g_mu.
 *
 * Only the entry points of src/abi/cuda.h are exported (EXPORT; the library is built with
 * -fvisibility=hidden and every declaration below is hidden); the library is linked
 * -Bsymbolic so that cuGetProcAddress returns its own functions even when an interposer with
 * the same names is preloaded, as the real driver does.
 */
#ifndef FAKEGPU_FAKE_CUDA_H
#define FAKEGPU_FAKE_CUDA_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "abi/cuda.h"
#include "fakegpu_config.h"
#include "fakegpu_state.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))

#pragma GCC visibility push(hidden)

#define GRAN          (2ULL << 20)      /* page size of device memory and VMM granularity */
#define SMALL_ALIGN   512ULL            /* sub-allocations inside a 2 MiB chunk */
#define PITCH_ALIGN   512ULL
#define POOL_CHUNK    (32ULL << 20)     /* stream-ordered allocations under 2 MiB share 32 MiB blocks (seen) */
#define MAX_DEV       FG_STATE_UNITS
#define MAX_CTX       1024
#define MAX_STREAMS   4096
#define MAX_MODULES   1024
#define MAX_FUNCS     4096
#define MAX_ARRAYS    4096
#define MAX_POOLS     256
#define MAX_EVENTS    16384
#define MAX_GRAPHS    1024
#define MAX_EXECS     1024
#define CTX_STACK     64
#define ARENA_SIZE    (1ULL << 40)      /* 1 TiB of device virtual address space */

static inline unsigned long long round_up(unsigned long long v, unsigned long long a)
{
    return (v + a - 1) / a * a;
}

/* ---------------------------------------------------------------------------------------- */
/* Objects                                                                                   */
/* ---------------------------------------------------------------------------------------- */

struct fdev {
    unsigned gpu;
    int mig;                          /* index into the GPU's migs[], or -1 */
    unsigned unit;                    /* fakegpu_state unit */
    unsigned long long total;         /* what cuDeviceTotalMem reports */
    unsigned long long capacity;      /* total minus the config's used / process lines */
    unsigned long long used;          /* charged by this process (g_mu) */
};

struct CUctx_st {
    int kind;                         /* 0 unused, 1 primary, 2 created, 3 green (cuCtxFromGreenCtx) */
    int active;                       /* atomic: primary retained / created not destroyed */
    unsigned refcount;                /* primary: retain count */
    unsigned flags;
    int dev;
    unsigned long long charge;        /* context memory */
    unsigned sms;                     /* green: SMs of its partition */
    struct CUgreenCtx_st *green;      /* green: the green context it stands for */
};

/* A green context (fake_cuda_green.c): its context (kind 3) lives in fake_cuda_ctx.c's table;
 * what it allocates belongs to the device's primary context, which it retains. */
struct CUgreenCtx_st {
    int live;
    int dev;
    unsigned sms;
    struct CUctx_st *ctx;
};

struct CUstream_st {
    int live;
    struct CUctx_st *ctx;
    unsigned flags;
    unsigned sms;                     /* SMs of the context that created it (a green one's partition) */
    uint64_t tail;                    /* atomic: when its last work ends (ns, CLOCK_MONOTONIC) */
    struct CUgraph_st *capture;       /* atomic: the graph it is capturing into, or NULL */
};

struct CUmod_st {
    int live;
    struct CUctx_st *ctx;
    unsigned long long charge;
    char *image;                      /* copy of a PTX or cubin image (kernel names), or NULL */
    size_t image_size;
    int ptx;
};

struct CUfunc_st {
    int live;
    struct CUmod_st *mod;
    char name[128];
    uint64_t base_ns;                 /* duration on a whole device (name `..._<N>us`, else kernel_us) */
    int fault;                        /* a kernel that writes to an illegal address (its name has
                                       * "illegal_address" in it): see fake_cuda_init.c */
};

/* An event (fake_cuda_event.c). */
struct CUevent_st {
    int live;
    struct CUctx_st *ctx;
    unsigned flags;
    uint64_t when;                    /* atomic: when its recorded work ends; 0: never recorded */
};

/* A graph made by stream capture (fake_cuda_graph.c): what it holds is its kernels' count and
 * summed duration, which a launch of it runs as one piece of work. */
struct CUgraph_st {
    int live;
    int capturing;                    /* still being captured (no handle given out yet) */
    int invalidated;                  /* atomic: an illegal call during the capture */
    CUstreamCaptureMode mode;
    pthread_t thread;                 /* that began the capture */
    uint64_t ns;                      /* atomic */
    unsigned long long kernels;       /* atomic */
};

struct CUgraphExec_st {
    int live;
    uint64_t ns;
    unsigned long long kernels;
};

/* A stream as the time model sees it (stream_resolve): the legacy stream's tail is its device's
 * (it waits for every other stream), and it cannot capture. */
struct sref {
    struct CUctx_st *ctx;             /* its context (a green context's primary context) */
    int dev;
    unsigned sms;                     /* SMs its kernels run on */
    uint64_t *tail;                   /* atomic */
    struct CUgraph_st **capture;      /* atomic; NULL for the legacy stream */
};

struct CUarray_st {
    int live;
    int mipmapped;
    struct CUctx_st *ctx;
    int dev;
    unsigned long long charge;
};

struct CUmemPoolHandle_st {
    int live;
    int is_default;
    int dev;
    unsigned long long cached;        /* charged, freed by cuMemFreeAsync, not yet released */
    unsigned long long outstanding;   /* allocations not freed */
    int destroyed;
};

/* A range of device virtual addresses (sorted array g_ranges). */
enum range_kind {
    R_LINEAR,      /* cuMemAlloc_v2 / cuMemAllocPitch_v2 of >= 2 MiB: owns its charge */
    R_CHUNK,       /* a 2 MiB chunk holding sub-allocations (g_subs) */
    R_POOL,        /* cuMemAllocAsync / cuMemAllocFromPoolAsync */
    R_MANAGED,     /* cuMemAllocManaged: real host memory, not charged */
    R_RESERVE,     /* cuMemAddressReserve */
};

struct range {
    CUdeviceptr base;
    unsigned long long span;          /* bytes of address space */
    unsigned long long size;          /* requested bytes */
    enum range_kind kind;
    int dev;
    struct CUctx_st *ctx;             /* owner (NULL for reservations) */
    unsigned long long charge;
    struct CUmemPoolHandle_st *pool;
    unsigned nsubs;                   /* R_CHUNK: live sub-allocations */
    unsigned long long next;          /* R_CHUNK: bump offset */
};

struct sub {                          /* small allocation inside a chunk */
    CUdeviceptr base;
    unsigned long long size;
};

struct vmm_handle {
    CUmemGenericAllocationHandle id;
    int dev;
    unsigned long long size;
    int released;
    unsigned nmaps;
};

struct mapping {
    CUdeviceptr base;
    unsigned long long size;
    CUmemGenericAllocationHandle handle;
    int access;                       /* cuMemSetAccess gave read/write access */
};

struct host_alloc {
    void *p;
    size_t size;
    struct CUctx_st *ctx;
};

/* growable arrays */
#define VEC(T) struct { T *v; size_t n, cap; }
#define VEC_RESERVE(vec, need)                                                    \
    ((need) <= (vec).cap ? 0 : vec_grow((void **)&(vec).v, &(vec).cap, (need), sizeof(*(vec).v)))

typedef VEC(struct range) range_vec;
typedef VEC(struct sub) sub_vec;
typedef VEC(struct mapping) mapping_vec;
typedef VEC(struct host_alloc) host_alloc_vec;

int vec_grow(void **v, size_t *cap, size_t need, size_t elem);

/* ---------------------------------------------------------------------------------------- */
/* Global state (each defined in the file of its area)                                      */
/* ---------------------------------------------------------------------------------------- */

enum { ST_UNINIT = 0, ST_READY = 1, ST_FAILED = 2, ST_FORKED = 3 };

/* fake_cuda_core.c */
extern pthread_mutex_t g_mu;
extern int g_state;                   /* atomic: ST_* */
extern struct fg_config g_cfg;
extern struct fdev g_dev[MAX_DEV];
extern int g_ndev;
extern struct fg_state g_shared;

/* fake_cuda_ctx.c */
extern struct CUctx_st g_prim[MAX_DEV];
extern __thread struct CUctx_st *t_stack[CTX_STACK];
extern __thread int t_depth;

/* fake_cuda_stream.c, fake_cuda_module.c, fake_cuda_array.c, fake_cuda_pool.c (events,
 * graphs and executable graphs: static tables of fake_cuda_event.c and fake_cuda_graph.c) */
extern struct CUstream_st g_streams[MAX_STREAMS];
extern struct CUmod_st g_mods[MAX_MODULES];
extern struct CUfunc_st g_funcs[MAX_FUNCS];
extern struct CUarray_st g_arrays[MAX_ARRAYS];
extern struct CUmemPoolHandle_st g_default_pool[MAX_DEV];
extern struct CUmemPoolHandle_st g_pools[MAX_POOLS];

/* fake_cuda_mem.c, fake_cuda_vmm.c */
extern range_vec g_ranges;
extern sub_vec g_subs;
extern host_alloc_vec g_hosts;
extern mapping_vec g_maps;
extern CUdeviceptr g_arena_base, g_arena_end, g_cursor;

/* ---------------------------------------------------------------------------------------- */
/* Entry                                                                                     */
/* ---------------------------------------------------------------------------------------- */

/* fake_cuda_error.c: the injected fault of func (or of its base name for _ptsz / _ptds). */
CUresult fault(const char *func);

/* fake_cuda_init.c: the sticky error of a context that hit a fatal GPU error (its own kernel's,
 * or, for an MPS client, any client's of its server), 0 = none. */
extern int g_sticky;
/* ... a kernel on device `dev` wrote to an illegal address: the sticky error, and the driver's
 * XID 31 line in the kernel's log (the test's file: $FAKEGPU_KMSG, else /etc/fakegpu/kmsg, when
 * it exists). */
void fault_kernel_launched(int dev);

static inline CUresult enter(const char *func)
{
    if (__atomic_load_n(&g_state, __ATOMIC_ACQUIRE) != ST_READY)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (__builtin_expect(__atomic_load_n(&g_sticky, __ATOMIC_RELAXED) != 0, 0))
        return (CUresult)__atomic_load_n(&g_sticky, __ATOMIC_RELAXED);
    if (__builtin_expect(g_cfg.nfaults > 0, 0))
        return fault(func);
    return CUDA_SUCCESS;
}

#define ENTER()                                       \
    do {                                              \
        CUresult enter_rc_ = enter(__func__);         \
        if (enter_rc_ != CUDA_SUCCESS)                \
            return enter_rc_;                         \
    } while (0)

/* An exported entry point that only enters (init check, fault injection under its own name)
 * and returns `call`: the versioned and per-thread aliases (_v2, _ptsz, _ptds) of one
 * implementation. params: the parameter list of src/abi/cuda.h (its prototype checks it). */
#define ENTRY_POINT(name, params, call)               \
    EXPORT CUresult name params                       \
    {                                                 \
        ENTER();                                      \
        return call;                                  \
    }

#define LOCK() pthread_mutex_lock(&g_mu)
#define UNLOCK() pthread_mutex_unlock(&g_mu)

/* The last device an entry point of this thread accepted (fakegpu_touched_uuid: the test's view
 * of which GPU a call reached). */
extern __thread int g_touched;

static inline int valid_dev(CUdevice d)
{
    int ok = d >= 0 && d < g_ndev;
    if (ok)
        g_touched = d;
    return ok;
}

/* ---------------------------------------------------------------------------------------- */
/* Shared helpers, by file                                                                   */
/* ---------------------------------------------------------------------------------------- */

/* fake_cuda_core.c: memory accounting (g_mu held) */
unsigned long long dev_free(int d);
CUresult charge(int d, unsigned long long bytes);
void uncharge(int d, unsigned long long bytes);

/* fake_cuda_init.c */
const char *dev_uuid_str(unsigned gpu, int mig);

/* fake_cuda_device.c: the device's SMs (CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT) and the
 * minimum partition / alignment of an SM split on its architecture. */
unsigned dev_sm_count(int dev);
unsigned dev_hw_sm_count(int dev);  /* without an MPS client's share */
extern unsigned g_mps_pct;          /* an MPS client's active thread percentage, 0 = none */
void dev_sm_split_rules(int dev, unsigned *min_partition, unsigned *alignment);

/* fake_cuda_ctx.c */
struct CUctx_st *cur_ctx(void);
int ctx_handle_ok(const struct CUctx_st *c);
int ctx_active(const struct CUctx_st *c);
CUresult need_ctx(struct CUctx_st **out);
/* g_mu held: the context of a new green context with sms SMs on dev (retains the primary
 * context); closing it deactivates it and releases the primary context. */
CUresult green_ctx_open(int dev, unsigned sms, struct CUgreenCtx_st *green, struct CUctx_st **out);
void green_ctx_close(struct CUctx_st *c);

/* fake_cuda_mem.c: the device address space (g_mu held) */
size_t range_lower(CUdeviceptr addr);
struct range *range_at(CUdeviceptr addr);
CUdeviceptr va_find(unsigned long long span, unsigned long long align, CUdeviceptr hint);
struct range *range_insert(const struct range *r);
void range_remove(struct range *r);
size_t sub_lower(CUdeviceptr addr);
CUresult sub_insert(struct range *chunk, unsigned long long bytes, CUdeviceptr *out);
void free_range_locked(struct range *r);
CUresult release_pointer(CUdeviceptr p, int *pool_dev);

/* fake_cuda_pool.c */
void pool_retire(struct range *r);
void pools_release_cached_locked(int dev);
void pools_release_cached(int dev);

/* fake_cuda_ctx.c: the SMs a context's kernels run on (a green context's partition) */
unsigned ctx_sms(const struct CUctx_st *c);

/* fake_cuda_stream.c. stream_resolve (lock-free) describes a stream to the time model:
 * INVALID_HANDLE for a bad one; the special handles need a current context (need_ctx's error
 * otherwise); ptsz: a _ptsz call, where NULL is the per-thread stream, else the legacy one.
 * stream_retire (g_mu held): the stream ends, and its capture with it. */
int stream_ok(CUstream s);
CUresult stream_resolve(CUstream s, int ptsz, struct sref *out);
void stream_retire(struct CUstream_st *s);

/* fake_cuda_time.c: the GPU time model. Times are ns of CLOCK_MONOTONIC. */
void time_init(void);                 /* at cuInit (g_mu held): durations, queue, busy file */
uint64_t now_ns(void);
void sleep_until(uint64_t t);
uint64_t kernel_base_ns(const char *name);
uint64_t kernel_ns(uint64_t base_ns, unsigned long long blocks, unsigned sms, int dev);
/* Run work of ns (kernels kernels) on dev after everything queued there (back-pressure first);
 * the device tail and *stream_tail become its end, which it returns. Lock-free. */
uint64_t tl_run(int dev, uint64_t *stream_tail, uint64_t ns, unsigned long long kernels);
uint64_t *tl_device_tail(int dev);
uint64_t tl_ready(int dev, uint64_t now);
uint64_t *tl_ptds_tail(int dev);
static inline uint64_t tail_of(const uint64_t *tail)
{
    return __atomic_load_n(tail, __ATOMIC_ACQUIRE);
}

/* fake_cuda_graph.c: add work to a capture (lock-free); the capture of r, or NULL; invalidate
 * the capture of r (an illegal call on a capturing stream): STREAM_CAPTURE_UNSUPPORTED. */
void graph_append(struct CUgraph_st *g, uint64_t ns, unsigned long long kernels);
struct CUgraph_st *capture_of(const struct sref *r);
CUresult capture_violation(struct CUgraph_st *g);
void graph_drop(struct CUgraph_st *g);   /* g_mu held: frees the graph's slot */

/* fake_cuda_event.c (g_mu held): a context's events die with it */
void events_release_ctx(const struct CUctx_st *c);

#pragma GCC visibility pop

#endif /* FAKEGPU_FAKE_CUDA_H */
