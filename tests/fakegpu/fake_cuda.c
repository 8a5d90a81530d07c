/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fake libcuda.so.1: a simulated CUDA driver for the GPUs of the fakegpu config (README.md).
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
 *     mipmapped arrays, modules, kernels, streams.
 *   - cuGetProcAddress / _v2 pick the ABI version for cudaVersion and flags (table g_procs).
 *
 * Only the entry points of src/abi/cuda.h are exported (-fvisibility=hidden); the library is
 * linked -Bsymbolic so that cuGetProcAddress returns its own functions even when an
 * interposer with the same names is preloaded, as the real driver does.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "abi/cuda.h"
#include "fakegpu_config.h"
#include "fakegpu_state.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

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
#define CTX_STACK     64
#define ARENA_SIZE    (1ULL << 40)      /* 1 TiB of device virtual address space */

static inline unsigned long long round_up(unsigned long long v, unsigned long long a)
{
    return (v + a - 1) / a * a;
}

/* ---------------------------------------------------------------------------------------- */
/* Errors                                                                                    */
/* ---------------------------------------------------------------------------------------- */

static const struct {
    CUresult code;
    const char *name;
    const char *text;
} g_errors[] = {
#define E(c, t) { c, #c, t }
    E(CUDA_SUCCESS, "no error"),
    E(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
    E(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
    E(CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
    E(CUDA_ERROR_DEINITIALIZED, "driver shutting down"),
    E(CUDA_ERROR_PROFILER_DISABLED, "profiler disabled while using external profiling tool"),
    E(CUDA_ERROR_PROFILER_NOT_INITIALIZED, "profiler not initialized: call cudaProfilerInitialize()"),
    E(CUDA_ERROR_PROFILER_ALREADY_STARTED, "profiler already started"),
    E(CUDA_ERROR_PROFILER_ALREADY_STOPPED, "profiler already stopped"),
    E(CUDA_ERROR_STUB_LIBRARY, "CUDA driver is a stub library"),
    E(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER, "API call requires a newer driver"),
    E(CUDA_ERROR_DEVICE_UNAVAILABLE, "CUDA-capable device(s) is/are busy or unavailable"),
    E(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"),
    E(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
    E(CUDA_ERROR_DEVICE_NOT_LICENSED, "device doesn't have valid Grid license"),
    E(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid"),
    E(CUDA_ERROR_INVALID_CONTEXT, "invalid device context"),
    E(CUDA_ERROR_CONTEXT_ALREADY_CURRENT, "context already current"),
    E(CUDA_ERROR_MAP_FAILED, "mapping of buffer object failed"),
    E(CUDA_ERROR_UNMAP_FAILED, "unmapping of buffer object failed"),
    E(CUDA_ERROR_ARRAY_IS_MAPPED, "array is mapped"),
    E(CUDA_ERROR_ALREADY_MAPPED, "resource already mapped"),
    E(CUDA_ERROR_NO_BINARY_FOR_GPU, "no kernel image is available for execution on the device"),
    E(CUDA_ERROR_ALREADY_ACQUIRED, "resource already acquired"),
    E(CUDA_ERROR_NOT_MAPPED, "resource not mapped"),
    E(CUDA_ERROR_NOT_MAPPED_AS_ARRAY, "resource not mapped as array"),
    E(CUDA_ERROR_NOT_MAPPED_AS_POINTER, "resource not mapped as pointer"),
    E(CUDA_ERROR_ECC_UNCORRECTABLE, "uncorrectable ECC error encountered"),
    E(CUDA_ERROR_UNSUPPORTED_LIMIT, "limit is not supported on this architecture"),
    E(CUDA_ERROR_CONTEXT_ALREADY_IN_USE, "exclusive-thread device already in use by a different thread"),
    E(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "peer access is not supported between these two devices"),
    E(CUDA_ERROR_INVALID_PTX, "a PTX JIT compilation failed"),
    E(CUDA_ERROR_INVALID_GRAPHICS_CONTEXT, "invalid OpenGL or DirectX context"),
    E(CUDA_ERROR_NVLINK_UNCORRECTABLE, "uncorrectable NVLink error detected during the execution"),
    E(CUDA_ERROR_JIT_COMPILER_NOT_FOUND, "PTX JIT compiler library not found"),
    E(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "the provided PTX was compiled with an unsupported toolchain."),
    E(CUDA_ERROR_JIT_COMPILATION_DISABLED, "PTX JIT compilation was disabled"),
    E(CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY, "the provided execution affinity is not supported"),
    E(CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC, "the provided PTX contains unsupported call to cudaDeviceSynchronize"),
    E(CUDA_ERROR_CONTAINED, "Invalid access of peer GPU memory over nvlink or a hardware error"),
    E(CUDA_ERROR_INVALID_SOURCE, "device kernel image is invalid"),
    E(CUDA_ERROR_FILE_NOT_FOUND, "file not found"),
    E(CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND, "shared object symbol not found"),
    E(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED, "shared object initialization failed"),
    E(CUDA_ERROR_OPERATING_SYSTEM, "OS call failed or operation not supported on this OS"),
    E(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
    E(CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed in the present state"),
    E(CUDA_ERROR_LOSSY_QUERY, "attempted introspection would be semantically lossy"),
    E(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
    E(CUDA_ERROR_NOT_READY, "device not ready"),
    E(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"),
    E(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "too many resources requested for launch"),
    E(CUDA_ERROR_LAUNCH_TIMEOUT, "the launch timed out and was terminated"),
    E(CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING, "launch uses incompatible texturing mode"),
    E(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "peer access is already enabled"),
    E(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "peer access has not been enabled"),
    E(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, "cannot set while device is active in this process"),
    E(CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed"),
    E(CUDA_ERROR_ASSERT, "device-side assert triggered"),
    E(CUDA_ERROR_TOO_MANY_PEERS, "peer mapping resources exhausted"),
    E(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "part or all of the requested memory range is already mapped"),
    E(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "pointer does not correspond to a registered memory region"),
    E(CUDA_ERROR_HARDWARE_STACK_ERROR, "hardware stack error"),
    E(CUDA_ERROR_ILLEGAL_INSTRUCTION, "an illegal instruction was encountered"),
    E(CUDA_ERROR_MISALIGNED_ADDRESS, "misaligned address"),
    E(CUDA_ERROR_INVALID_ADDRESS_SPACE, "operation not supported on global/shared address space"),
    E(CUDA_ERROR_INVALID_PC, "invalid program counter"),
    E(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"),
    E(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, "too many blocks in cooperative launch"),
    E(CUDA_ERROR_TENSOR_MEMORY_LEAK, "tensor memory not completely freed"),
    E(CUDA_ERROR_NOT_PERMITTED, "operation not permitted"),
    E(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
    E(CUDA_ERROR_SYSTEM_NOT_READY, "system not yet initialized"),
    E(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "system has unsupported display driver / cuda driver combination"),
    E(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, "forward compatibility was attempted on non supported HW"),
    E(CUDA_ERROR_MPS_CONNECTION_FAILED, "MPS client failed to connect to the MPS control daemon or the MPS server"),
    E(CUDA_ERROR_MPS_RPC_FAILURE, "the remote procedural call between the MPS server and the MPS client failed"),
    E(CUDA_ERROR_MPS_SERVER_NOT_READY, "MPS server is not ready to accept new MPS client requests"),
    E(CUDA_ERROR_MPS_MAX_CLIENTS_REACHED, "the hardware resources required to create MPS client have been exhausted"),
    E(CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED, "the hardware resources required to support device connections have been exhausted"),
    E(CUDA_ERROR_MPS_CLIENT_TERMINATED, "the MPS client has been terminated by the server"),
    E(CUDA_ERROR_CDP_NOT_SUPPORTED, "is using CUDA Dynamic Parallelism, but the current configuration does not support it"),
    E(CUDA_ERROR_CDP_VERSION_MISMATCH, "unsupported interaction between different versions of CUDA Dynamic Parallelism"),
    E(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "operation not permitted when stream is capturing"),
    E(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "operation failed due to a previous error during capture"),
    E(CUDA_ERROR_STREAM_CAPTURE_MERGE, "operation would result in a merge of separate capture sequences"),
    E(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, "capture was not ended in the same stream as it began"),
    E(CUDA_ERROR_STREAM_CAPTURE_UNJOINED, "capturing stream has unjoined work"),
    E(CUDA_ERROR_STREAM_CAPTURE_ISOLATION, "dependency created on uncaptured work in another stream"),
    E(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "operation would make the legacy stream depend on a capturing blocking stream"),
    E(CUDA_ERROR_CAPTURED_EVENT, "operation not permitted on an event last recorded in a capturing stream"),
    E(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, "attempt to terminate a thread-local capture sequence from another thread"),
    E(CUDA_ERROR_TIMEOUT, "wait operation timed out"),
    E(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, "the graph update was not performed because it included changes which violated constraints specific to instantiated graph update"),
    E(CUDA_ERROR_EXTERNAL_DEVICE, "an async error has occurred in external entity outside of CUDA"),
    E(CUDA_ERROR_INVALID_CLUSTER_SIZE, "a kernel launch error has occurred due to cluster misconfiguration"),
    E(CUDA_ERROR_FUNCTION_NOT_LOADED, "the function handle is not loaded when calling an API that requires a loaded function"),
    E(CUDA_ERROR_INVALID_RESOURCE_TYPE, "one or more resources passed in are not valid resource types for the operation"),
    E(CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION, "one or more resources are insufficient or non-applicable for the operation"),
    E(CUDA_ERROR_KEY_ROTATION, "an error happened during the key rotation sequence"),
    E(CUDA_ERROR_UNKNOWN, "unknown error"),
#undef E
};

/* Fault-injection error names: "out_of_memory", "CUDA_ERROR_OUT_OF_MEMORY", "2". */
static CUresult error_from_name(const char *s)
{
    char *end;
    long v;

    for (size_t i = 0; i < sizeof(g_errors) / sizeof(g_errors[0]); i++) {
        const char *n = g_errors[i].name;

        if (strcasecmp(s, n) == 0 ||
            (strncmp(n, "CUDA_ERROR_", 11) == 0 && strcasecmp(s, n + 11) == 0))
            return g_errors[i].code;
    }
    v = strtol(s, &end, 0);
    if (end != s && *end == '\0' && v >= 0 && v <= 999)
        return (CUresult)v;
    return CUDA_ERROR_UNKNOWN;
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
    int kind;                         /* 0 unused, 1 primary, 2 created */
    int active;                       /* atomic: primary retained / created not destroyed */
    unsigned refcount;                /* primary: retain count */
    unsigned flags;
    int dev;
    unsigned long long charge;        /* context memory */
};

struct CUstream_st {
    int live;
    struct CUctx_st *ctx;
    unsigned flags;
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

static int vec_grow(void **v, size_t *cap, size_t need, size_t elem)
{
    size_t ncap = *cap ? *cap : 16;
    void *nv;

    while (ncap < need)
        ncap *= 2;
    nv = realloc(*v, ncap * elem);
    if (nv == NULL)
        return -1;
    *v = nv;
    *cap = ncap;
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Global state                                                                              */
/* ---------------------------------------------------------------------------------------- */

enum { ST_UNINIT = 0, ST_READY = 1, ST_FAILED = 2, ST_FORKED = 3 };

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_state;                   /* atomic: ST_* */
static CUresult g_init_rc;
static struct fg_config g_cfg;
static int g_cfg_loaded;              /* g_cfg valid (also before cuInit, for the version) */
static struct fdev g_dev[MAX_DEV];
static int g_ndev;
static struct fg_state g_shared = { .fd = -1, .slot = -1 };

static struct CUctx_st g_prim[MAX_DEV];
static struct CUctx_st g_ctx[MAX_CTX];
static struct CUstream_st g_streams[MAX_STREAMS];
static struct CUmod_st g_mods[MAX_MODULES];
static struct CUfunc_st g_funcs[MAX_FUNCS];
static struct CUarray_st g_arrays[MAX_ARRAYS];
static struct CUmemPoolHandle_st g_default_pool[MAX_DEV];
static struct CUmemPoolHandle_st g_pools[MAX_POOLS];

static VEC(struct range) g_ranges;
static VEC(struct sub) g_subs;
static VEC(struct vmm_handle) g_handles;
static VEC(struct mapping) g_maps;
static VEC(struct host_alloc) g_hosts;
static CUmemGenericAllocationHandle g_next_handle = 0x1000;

static CUdeviceptr g_arena_base, g_arena_end, g_cursor;

static __thread struct CUctx_st *t_stack[CTX_STACK];
static __thread int t_depth;

/* ---------------------------------------------------------------------------------------- */
/* Entry                                                                                     */
/* ---------------------------------------------------------------------------------------- */

static CUresult fault(const char *func)
{
    const struct fg_fault *f;

    if (strncmp(func, "cu", 2) != 0)
        return CUDA_SUCCESS;
    f = fg_config_fault(&g_cfg, func);
    if (f == NULL) {
        /* _ptsz / _ptds variants share the fault of their base name */
        const char *pt = strstr(func, "_pt");
        char base[64];

        if (pt == NULL || (size_t)(pt - func) >= sizeof(base))
            return CUDA_SUCCESS;
        memcpy(base, func, (size_t)(pt - func));
        base[pt - func] = '\0';
        f = fg_config_fault(&g_cfg, base);
        if (f == NULL)
            return CUDA_SUCCESS;
    }
    fg_fault_act(f);
    return f->action == FG_FAULT_ERROR ? error_from_name(f->arg) : CUDA_SUCCESS;
}

static inline CUresult enter(const char *func)
{
    if (__atomic_load_n(&g_state, __ATOMIC_ACQUIRE) != ST_READY)
        return CUDA_ERROR_NOT_INITIALIZED;
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

#define LOCK() pthread_mutex_lock(&g_mu)
#define UNLOCK() pthread_mutex_unlock(&g_mu)

static int valid_dev(CUdevice d)
{
    return d >= 0 && d < g_ndev;
}

/* ---------------------------------------------------------------------------------------- */
/* Memory accounting                                                                         */
/* ---------------------------------------------------------------------------------------- */

/* Free bytes of device d as this process sees them (g_mu held; state lock held if open). */
static unsigned long long dev_free(int d)
{
    struct fdev *fd = &g_dev[d];
    unsigned long long others = fg_state_unit_used(&g_shared, fd->unit, 1);
    unsigned long long taken = others + fd->used;

    return taken >= fd->capacity ? 0 : fd->capacity - taken;
}

/* Charge bytes (already rounded) to device d. g_mu held. */
static CUresult charge(int d, unsigned long long bytes)
{
    int locked = fg_state_lock(&g_shared) == 0;
    CUresult rc = CUDA_SUCCESS;

    if (locked)
        fg_state_reap(&g_shared);
    if (bytes > dev_free(d)) {
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        g_dev[d].used += bytes;
        fg_state_set_own(&g_shared, g_dev[d].unit, g_dev[d].used);
    }
    if (locked)
        fg_state_unlock(&g_shared);
    return rc;
}

static void uncharge(int d, unsigned long long bytes)
{
    g_dev[d].used = bytes > g_dev[d].used ? 0 : g_dev[d].used - bytes;
    fg_state_set_own(&g_shared, g_dev[d].unit, g_dev[d].used);
}

/* ---------------------------------------------------------------------------------------- */
/* Device virtual address space                                                              */
/* ---------------------------------------------------------------------------------------- */

/* Index of the first range with base >= addr. */
static size_t range_lower(CUdeviceptr addr)
{
    size_t lo = 0, hi = g_ranges.n;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;

        if (g_ranges.v[mid].base < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The range containing addr within its span, or NULL. */
static struct range *range_at(CUdeviceptr addr)
{
    size_t i = range_lower(addr + 1);

    if (i == 0)
        return NULL;
    i--;
    if (addr >= g_ranges.v[i].base && addr - g_ranges.v[i].base < g_ranges.v[i].span)
        return &g_ranges.v[i];
    return NULL;
}

/* Find free address space of span bytes (align: power of two) in the arena, next-fit from the
 * cursor; hint: preferred address (0: none). Returns 0 if none. */
static CUdeviceptr va_find(unsigned long long span, unsigned long long align, CUdeviceptr hint)
{
    if (g_arena_base == 0 || span == 0 || span > g_arena_end - g_arena_base)
        return 0;
    for (int pass = 0; pass < 3; pass++) {
        CUdeviceptr cand;
        size_t i;

        if (pass == 0 && hint == 0)
            continue;
        cand = pass == 0 ? hint : pass == 1 ? g_cursor : g_arena_base;
        cand = round_up(cand < g_arena_base ? g_arena_base : cand, align);
        i = range_lower(cand);
        if (i > 0) {
            const struct range *pr = &g_ranges.v[i - 1];

            if (pr->base + pr->span > cand) {
                if (pass == 0)
                    continue;
                cand = round_up(pr->base + pr->span, align);
            }
        }
        for (; i < g_ranges.n && cand + span > g_ranges.v[i].base && cand + span <= g_arena_end; i++) {
            if (pass == 0)
                break;
            cand = round_up(g_ranges.v[i].base + g_ranges.v[i].span, align);
        }
        if (pass == 0 && i < g_ranges.n && cand + span > g_ranges.v[i].base)
            continue;
        if (cand >= g_arena_base && cand + span <= g_arena_end && cand + span > cand)
            return cand;
    }
    return 0;
}

static struct range *range_insert(const struct range *r)
{
    size_t i;

    if (VEC_RESERVE(g_ranges, g_ranges.n + 1) < 0)
        return NULL;
    i = range_lower(r->base);
    memmove(&g_ranges.v[i + 1], &g_ranges.v[i], (g_ranges.n - i) * sizeof(*g_ranges.v));
    g_ranges.v[i] = *r;
    g_ranges.n++;
    if (r->kind != R_MANAGED && r->base + r->span > g_cursor)
        g_cursor = r->base + r->span;
    return &g_ranges.v[i];
}

static void range_remove(struct range *r)
{
    size_t i = (size_t)(r - g_ranges.v);

    memmove(&g_ranges.v[i], &g_ranges.v[i + 1], (g_ranges.n - i - 1) * sizeof(*g_ranges.v));
    g_ranges.n--;
}

static size_t sub_lower(CUdeviceptr addr)
{
    size_t lo = 0, hi = g_subs.n;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;

        if (g_subs.v[mid].base < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* ---------------------------------------------------------------------------------------- */
/* Contexts                                                                                  */
/* ---------------------------------------------------------------------------------------- */

static struct CUctx_st *cur_ctx(void)
{
    return t_depth > 0 ? t_stack[t_depth - 1] : NULL;
}

static int ctx_handle_ok(const struct CUctx_st *c)
{
    uintptr_t p = (uintptr_t)c;

    if (p >= (uintptr_t)&g_prim[0] && p < (uintptr_t)&g_prim[MAX_DEV])
        return (p - (uintptr_t)&g_prim[0]) % sizeof(*c) == 0 && c->kind == 1;
    if (p >= (uintptr_t)&g_ctx[0] && p < (uintptr_t)&g_ctx[MAX_CTX])
        return (p - (uintptr_t)&g_ctx[0]) % sizeof(*c) == 0 && c->kind == 2;
    return 0;
}

static int ctx_active(const struct CUctx_st *c)
{
    return __atomic_load_n(&c->active, __ATOMIC_ACQUIRE);
}

/* The current context, which must be usable. */
static CUresult need_ctx(struct CUctx_st **out)
{
    struct CUctx_st *c = cur_ctx();

    if (c == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!ctx_active(c))
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    *out = c;
    return CUDA_SUCCESS;
}

static void free_range_locked(struct range *r);

/* Free everything owned by ctx (g_mu held). */
static void ctx_free_resources(struct CUctx_st *c)
{
    for (size_t i = g_ranges.n; i-- > 0;) {
        if (g_ranges.v[i].ctx == c)
            free_range_locked(&g_ranges.v[i]);
    }
    for (size_t i = 0; i < g_hosts.n;) {
        if (g_hosts.v[i].ctx == c) {
            munmap(g_hosts.v[i].p, g_hosts.v[i].size);
            g_hosts.v[i] = g_hosts.v[--g_hosts.n];
        } else {
            i++;
        }
    }
    for (unsigned i = 0; i < MAX_ARRAYS; i++) {
        if (g_arrays[i].live && g_arrays[i].ctx == c) {
            uncharge(g_arrays[i].dev, g_arrays[i].charge);
            __atomic_store_n(&g_arrays[i].live, 0, __ATOMIC_RELEASE);
        }
    }
    for (unsigned i = 0; i < MAX_MODULES; i++) {
        if (g_mods[i].live && g_mods[i].ctx == c) {
            for (unsigned j = 0; j < MAX_FUNCS; j++)
                if (g_funcs[j].live && g_funcs[j].mod == &g_mods[i])
                    __atomic_store_n(&g_funcs[j].live, 0, __ATOMIC_RELEASE);
            uncharge(c->dev, g_mods[i].charge);
            __atomic_store_n(&g_mods[i].live, 0, __ATOMIC_RELEASE);
        }
    }
    for (unsigned i = 0; i < MAX_STREAMS; i++)
        if (g_streams[i].live && g_streams[i].ctx == c)
            __atomic_store_n(&g_streams[i].live, 0, __ATOMIC_RELEASE);
    uncharge(c->dev, c->charge);
    c->charge = 0;
}

/* Activate a context: charge its memory (g_mu held). */
static CUresult ctx_activate(struct CUctx_st *c, int dev, unsigned flags)
{
    unsigned long long cost = round_up(g_cfg.context_memory, GRAN);
    CUresult rc = charge(dev, cost);

    if (rc != CUDA_SUCCESS)
        return rc;
    c->dev = dev;
    c->flags = flags;
    c->charge = cost;
    __atomic_store_n(&c->active, 1, __ATOMIC_RELEASE);
    return CUDA_SUCCESS;
}

static CUresult push_ctx(struct CUctx_st *c)
{
    if (t_depth >= CTX_STACK)
        return CUDA_ERROR_OUT_OF_MEMORY;
    t_stack[t_depth++] = c;
    return CUDA_SUCCESS;
}

/* Remove c from this thread's stack if it is on top (cuCtxDestroy of the current context). */
static void pop_if_top(struct CUctx_st *c)
{
    if (t_depth > 0 && t_stack[t_depth - 1] == c)
        t_depth--;
}

/* ---------------------------------------------------------------------------------------- */
/* Init                                                                                      */
/* ---------------------------------------------------------------------------------------- */

static void atfork_child(void)
{
    /* CUDA does not survive fork: the child of an initialised process gets NOT_INITIALIZED
     * everywhere (seen on driver 580.159.04), and drops its copy of the state file (the slot
     * lock stays with the parent). */
    if (g_shared.fd >= 0) {
        if (g_shared.map != NULL)
            munmap(g_shared.map, sizeof(*g_shared.map));
        close(g_shared.fd);
        g_shared.fd = -1;
        g_shared.map = NULL;
        g_shared.slot = -1;
    }
    if (__atomic_load_n(&g_state, __ATOMIC_ACQUIRE) != ST_UNINIT)
        __atomic_store_n(&g_state, ST_FORKED, __ATOMIC_RELEASE);
    pthread_mutex_init(&g_mu, NULL);
    t_depth = 0;
}

static void load_config_locked(void)
{
    char err[512];

    if (g_cfg_loaded)
        return;
    if (fg_config_load(fg_config_path(), &g_cfg, err, sizeof(err)) < 0) {
        fprintf(stderr, "fakegpu: cuda: %s (simulating a host without a working driver)\n", err);
        memset(&g_cfg, 0, sizeof(g_cfg));
        g_cfg_loaded = -1;
        return;
    }
    g_cfg_loaded = 1;
}

static unsigned long long config_process_bytes(unsigned gpu, int mig)
{
    unsigned long long sum = 0;

    for (unsigned i = 0; i < g_cfg.nprocs; i++)
        if (g_cfg.procs[i].gpu == gpu && (mig == -2 || g_cfg.procs[i].mig == mig))
            sum += g_cfg.procs[i].used;
    return sum;
}

static void add_device(unsigned gpu, int mig)
{
    const struct fg_gpu *g = &g_cfg.gpus[gpu];
    struct fdev *d = &g_dev[g_ndev++];
    unsigned long long busy;

    d->gpu = gpu;
    d->mig = mig;
    d->unit = fg_state_unit(gpu, mig);
    d->used = 0;
    if (mig < 0) {
        d->total = g->memory - g->reserved;
        busy = g->used + config_process_bytes(gpu, -2);
    } else {
        d->total = g->migs[mig].memory;
        busy = config_process_bytes(gpu, mig);
    }
    d->capacity = busy >= d->total ? 0 : d->total - busy;
}

/* The default enumeration: GPUs in config order, a MIG-enabled GPU replaced by its MIG
 * devices (in MIG index order). */
static int default_order(unsigned *gpus, int *migs, int max)
{
    int n = 0;

    for (unsigned i = 0; i < g_cfg.ngpus && n < max; i++) {
        const struct fg_gpu *g = &g_cfg.gpus[i];

        if (g->mig != FG_MIG_ON) {
            gpus[n] = i;
            migs[n++] = -1;
            continue;
        }
        for (unsigned idx = 0; idx < FG_MAX_MIG; idx++)
            for (unsigned m = 0; m < g->nmig && n < max; m++)
                if (g->migs[m].index == idx) {
                    gpus[n] = i;
                    migs[n++] = (int)m;
                }
    }
    return n;
}

static const char *dev_uuid_str(unsigned gpu, int mig)
{
    return mig < 0 ? g_cfg.gpus[gpu].uuid : g_cfg.gpus[gpu].migs[mig].uuid;
}

/* CUDA_VISIBLE_DEVICES: comma-separated indexes into the default order or UUIDs (GPU-...,
 * MIG-..., a unique prefix is enough); the list ends at the first invalid or repeated entry. */
static void enumerate(void)
{
    static unsigned gpus[MAX_DEV];
    static int migs[MAX_DEV];
    int n = default_order(gpus, migs, MAX_DEV);
    const char *env = getenv("CUDA_VISIBLE_DEVICES");
    char buf[4096];
    char *save = NULL;
    int used[MAX_DEV];

    g_ndev = 0;
    if (env == NULL) {
        for (int i = 0; i < n; i++)
            add_device(gpus[i], migs[i]);
        return;
    }
    memset(used, 0, sizeof(used));
    snprintf(buf, sizeof(buf), "%s", env);
    for (char *tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        int pick = -1;
        char *end;

        while (isspace((unsigned char)*tok))
            tok++;
        for (end = tok + strlen(tok); end > tok && isspace((unsigned char)end[-1]); end--)
            *--end = '\0';
        if (isdigit((unsigned char)tok[0])) {
            long v = strtol(tok, &end, 10);

            if (*end != '\0' || v < 0 || v >= n)
                break;
            pick = (int)v;
        } else if (strncasecmp(tok, "GPU-", 4) == 0 || strncasecmp(tok, "MIG-", 4) == 0) {
            int matches = 0;

            for (int i = 0; i < n; i++) {
                if (strncasecmp(dev_uuid_str(gpus[i], migs[i]), tok, strlen(tok)) == 0) {
                    pick = i;
                    matches++;
                }
            }
            /* A GPU UUID of a MIG-enabled GPU selects its first MIG device. */
            if (matches == 0 && strncasecmp(tok, "GPU-", 4) == 0)
                for (int i = 0; i < n && matches == 0; i++)
                    if (migs[i] >= 0 && strncasecmp(g_cfg.gpus[gpus[i]].uuid, tok, strlen(tok)) == 0) {
                        pick = i;
                        matches = 1;
                    }
            if (matches != 1)
                break;
        } else {
            break;
        }
        if (used[pick])
            break;
        used[pick] = 1;
        add_device(gpus[pick], migs[pick]);
    }
}

static CUresult do_init(void)
{
    char path[512];

    g_cfg_loaded = 0;   /* cuInit reads the config afresh (cuDriverGetVersion may have read it) */
    load_config_locked();
    if (g_cfg_loaded < 0)
        return CUDA_ERROR_NO_DEVICE;
    {
        CUresult rc = fault("cuInit");

        if (rc != CUDA_SUCCESS)
            return rc;
    }
    enumerate();
    if (g_ndev == 0)
        return CUDA_ERROR_NO_DEVICE;
    if (g_arena_base == 0) {
        /* Device addresses: a PROT_NONE reservation, so they never alias host memory and a
         * host dereference faults. Smaller fallbacks for tight RLIMIT_AS. */
        for (unsigned long long sz = ARENA_SIZE; sz >= (1ULL << 32); sz >>= 2) {
            void *p = mmap(NULL, sz, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

            if (p != MAP_FAILED) {
                g_arena_base = round_up((uintptr_t)p, GRAN);
                g_arena_end = (uintptr_t)p + sz;
                g_cursor = g_arena_base;
                break;
            }
        }
        if (g_arena_base == 0)
            return CUDA_ERROR_OUT_OF_MEMORY;
    }
    fg_state_path(&g_cfg, path, sizeof(path));
    if (fg_state_open(&g_shared, path, 1) < 0) {
        fprintf(stderr, "fakegpu: cuda: cannot open the shared state %s: %s (usage not shared)\n", path,
                strerror(errno));
    } else {
        int locked = fg_state_lock(&g_shared) == 0;

        if (fg_state_claim(&g_shared, (unsigned)getpid()) < 0)
            fprintf(stderr, "fakegpu: cuda: shared state %s is full (usage not shared)\n", path);
        if (locked)
            fg_state_unlock(&g_shared);
    }
    for (int d = 0; d < g_ndev; d++) {
        memset(&g_prim[d], 0, sizeof(g_prim[d]));
        g_prim[d].kind = 1;
        g_prim[d].dev = d;
        memset(&g_default_pool[d], 0, sizeof(g_default_pool[d]));
        g_default_pool[d].live = 1;
        g_default_pool[d].is_default = 1;
        g_default_pool[d].dev = d;
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult cuInit(unsigned int Flags)
{
    int st;

    st = __atomic_load_n(&g_state, __ATOMIC_ACQUIRE);
    if (st == ST_FORKED)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    st = __atomic_load_n(&g_state, __ATOMIC_ACQUIRE);
    if (st == ST_UNINIT) {
        static int atfork_done;

        if (!atfork_done) {
            pthread_atfork(NULL, NULL, atfork_child);
            atfork_done = 1;
        }
        g_init_rc = do_init();
        __atomic_store_n(&g_state, g_init_rc == CUDA_SUCCESS ? ST_READY : ST_FAILED, __ATOMIC_RELEASE);
    }
    UNLOCK();
    return __atomic_load_n(&g_state, __ATOMIC_ACQUIRE) == ST_FORKED ? CUDA_ERROR_NOT_INITIALIZED : g_init_rc;
}

EXPORT CUresult cuDriverGetVersion(int *driverVersion)
{
    if (driverVersion == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    load_config_locked();
    *driverVersion = g_cfg_loaded > 0 ? g_cfg.cuda : GS_CUDA_API_VERSION;
    UNLOCK();
    return CUDA_SUCCESS;
}

static CUresult error_lookup(CUresult error, const char **pStr, int name)
{
    if (pStr == NULL)   /* the real driver crashes here */
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof(g_errors) / sizeof(g_errors[0]); i++) {
        if (g_errors[i].code == error) {
            *pStr = name ? g_errors[i].name : g_errors[i].text;
            return CUDA_SUCCESS;
        }
    }
    *pStr = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuGetErrorString(CUresult error, const char **pStr)
{
    return error_lookup(error, pStr, 0);
}

EXPORT CUresult cuGetErrorName(CUresult error, const char **pStr)
{
    return error_lookup(error, pStr, 1);
}

EXPORT CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
{
    ENTER();
    if (ppExportTable == NULL || pExportTableId == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *ppExportTable = NULL;
    return CUDA_ERROR_NOT_SUPPORTED;   /* private tables: the fake has none */
}

/* ---------------------------------------------------------------------------------------- */
/* Devices                                                                                   */
/* ---------------------------------------------------------------------------------------- */

EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    ENTER();
    if (device == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(ordinal))
        return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *count)
{
    ENTER();
    if (count == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *count = g_ndev;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    char buf[FG_STR + 48];
    const struct fg_gpu *g;

    ENTER();
    if (name == NULL || len <= 0)   /* len <= 0: the real driver corrupts memory */
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    g = &g_cfg.gpus[g_dev[dev].gpu];
    if (g_dev[dev].mig >= 0)
        snprintf(buf, sizeof(buf), "%s MIG %s", g->name, g->migs[g_dev[dev].mig].profile);
    else
        snprintf(buf, sizeof(buf), "%s", g->name);
    snprintf(name, (size_t)len, "%s", buf);   /* truncated, as the real driver does */
    return CUDA_SUCCESS;
}

/* "GPU-6b1fe2a6-3b64-d9c1-4a3e-5f0b2c7d8e91" -> 16 bytes. */
static void uuid_bytes(const char *s, CUuuid *out)
{
    unsigned n = 0;

    memset(out, 0, sizeof(*out));
    s += 4;
    for (; *s != '\0' && n < 32; s++) {
        int v;

        if (*s == '-')
            continue;
        if (!isxdigit((unsigned char)*s))
            break;
        v = isdigit((unsigned char)*s) ? *s - '0' : (tolower((unsigned char)*s) - 'a' + 10);
        out->bytes[n / 2] = (char)(out->bytes[n / 2] | (n % 2 == 0 ? v << 4 : v));
        n++;
    }
}

EXPORT CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    ENTER();
    if (uuid == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    /* The first version reports the parent GPU of a MIG device. */
    uuid_bytes(g_cfg.gpus[g_dev[dev].gpu].uuid, uuid);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    ENTER();
    if (uuid == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    uuid_bytes(dev_uuid_str(g_dev[dev].gpu, g_dev[dev].mig), uuid);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceTotalMem(unsigned int *bytes, CUdevice dev)
{
    ENTER();
    if (bytes == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    /* Clamped to 32 bits (driver 580.159.04 answers 0xFFFFFFFF on an H200). */
    *bytes = g_dev[dev].total > UINT_MAX ? UINT_MAX : (unsigned int)g_dev[dev].total;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    ENTER();
    if (bytes == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    *bytes = (size_t)g_dev[dev].total;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    const struct fg_gpu *g;
    unsigned sms;
    int v;

    ENTER();
    if (pi == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    g = &g_cfg.gpus[g_dev[dev].gpu];
    sms = fg_gpu_sm_count(g);
    if (g_dev[dev].mig >= 0) {
        /* A MIG device gets the share of SMs its memory share suggests. */
        unsigned long long share = g_cfg.gpus[g_dev[dev].gpu].migs[g_dev[dev].mig].memory * 8 / g->memory;

        sms = (unsigned)((unsigned long long)sms * (share ? share : 1) / 8);
        if (sms == 0)
            sms = 1;
    }
    switch ((int)attrib) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: v = 64; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: v = INT_MAX; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: v = 49152; break;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: v = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH: v = INT_MAX; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: v = 1980000; break;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: v = 512; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: v = (int)sms; break;
    case CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_INTEGRATED: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: v = (int)g->bus; break;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: v = (int)g->device; break;
    case CU_DEVICE_ATTRIBUTE_TCC_DRIVER: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: v = 2619000; break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: v = 5120; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: v = 50331648; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: v = 2048; break;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: v = 3; break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: v = (int)g->domain; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: v = g->cc_major; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: v = g->cc_minor; break;
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: v = 233472; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID: v = dev; break;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: v = 232448; break;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: v = 32; break;
    case CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: v = 1; break;
    default:
        /* Other valid attributes read as 0; values past the enum are invalid (real: INVALID_VALUE). */
        if ((int)attrib <= 0 || (int)attrib > 150)
            return CUDA_ERROR_INVALID_VALUE;
        v = 0;
        break;
    }
    *pi = v;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
    char buf[32];
    const struct fg_gpu *g;
    int n;

    ENTER();
    if (pciBusId == NULL || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    g = &g_cfg.gpus[g_dev[dev].gpu];
    n = snprintf(buf, sizeof(buf), "%04x:%02x:%02x.%x", g->domain & 0xffff, g->bus, g->device, g->function);
    if (n < 0 || n + 1 > len)   /* too short: INVALID_VALUE (seen with len 4) */
        return CUDA_ERROR_INVALID_VALUE;
    memcpy(pciBusId, buf, (size_t)n + 1);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetByPCIBusId(CUdevice *dev, const char *pciBusId)
{
    unsigned dom = 0, bus, d, fn;
    int n = 0;

    ENTER();
    if (dev == NULL || pciBusId == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!(sscanf(pciBusId, "%x:%x:%x.%x%n", &dom, &bus, &d, &fn, &n) == 4 && pciBusId[n] == '\0')) {
        dom = 0;
        n = 0;
        if (!(sscanf(pciBusId, "%x:%x.%x%n", &bus, &d, &fn, &n) == 3 && pciBusId[n] == '\0'))
            return CUDA_ERROR_INVALID_VALUE;
    }
    for (int i = 0; i < g_ndev; i++) {
        const struct fg_gpu *g = &g_cfg.gpus[g_dev[i].gpu];

        if (g->domain == dom && g->bus == bus && g->device == d && g->function == fn) {
            *dev = i;
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_INVALID_DEVICE;
}

/* ---------------------------------------------------------------------------------------- */
/* Primary contexts                                                                          */
/* ---------------------------------------------------------------------------------------- */

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    CUresult rc = CUDA_SUCCESS;
    struct CUctx_st *c;

    ENTER();
    if (pctx == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    c = &g_prim[dev];
    LOCK();
    if (!c->active)   /* first retain, or the first one after a reset */
        rc = ctx_activate(c, dev, c->flags);
    if (rc == CUDA_SUCCESS) {
        c->refcount++;
        *pctx = c;
    }
    UNLOCK();
    return rc;
}

/* Destroy a context's state (primary released to zero or reset, created destroyed). g_mu held. */
static void primary_teardown(struct CUctx_st *c)
{
    __atomic_store_n(&c->active, 0, __ATOMIC_RELEASE);
    ctx_free_resources(c);
}

static CUresult primary_release(CUdevice dev)
{
    struct CUctx_st *c;
    CUresult rc = CUDA_SUCCESS;

    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    c = &g_prim[dev];
    LOCK();
    if (c->refcount == 0)
        rc = CUDA_ERROR_INVALID_CONTEXT;   /* seen: release without retain */
    else if (--c->refcount == 0 && c->active)
        primary_teardown(c);
    UNLOCK();
    return rc;
}

EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    ENTER();
    return primary_release(dev);
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    ENTER();
    return primary_release(dev);
}

static CUresult primary_reset(CUdevice dev)
{
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    LOCK();
    /* Frees everything of the primary context and deactivates it; the retain count stays
     * (seen: after a reset the context reads inactive, allocations in it answer
     * CONTEXT_IS_DESTROYED, one release still succeeds). The next retain reactivates it. */
    if (g_prim[dev].active)
        primary_teardown(&g_prim[dev]);
    UNLOCK();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
    ENTER();
    return primary_reset(dev);
}

EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    ENTER();
    return primary_reset(dev);
}

EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    ENTER();
    if (flags == NULL || active == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    *flags = g_prim[dev].flags;
    *active = ctx_active(&g_prim[dev]);
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------------------------------- */
/* Contexts                                                                                  */
/* ---------------------------------------------------------------------------------------- */

static CUresult ctx_create(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    struct CUctx_st *c = NULL;
    CUresult rc;

    if (pctx == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    if (flags & ~(unsigned)CU_CTX_FLAGS_MASK)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    for (unsigned i = 0; i < MAX_CTX; i++) {
        if (g_ctx[i].kind == 0 || !g_ctx[i].active) {
            c = &g_ctx[i];
            break;
        }
    }
    if (c == NULL) {
        UNLOCK();
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    memset(c, 0, sizeof(*c));
    c->kind = 2;
    rc = ctx_activate(c, dev, flags);
    if (rc == CUDA_SUCCESS)
        rc = push_ctx(c);
    if (rc == CUDA_SUCCESS)
        *pctx = c;
    else if (c->active)
        primary_teardown(c);
    UNLOCK();
    return rc;
}

EXPORT CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    ENTER();
    return ctx_create(pctx, flags, dev);
}

EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    ENTER();
    return ctx_create(pctx, flags, dev);
}

EXPORT CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
                               unsigned int flags, CUdevice dev)
{
    ENTER();
    if (numParams < 0 || (numParams > 0 && paramsArray == NULL))
        return CUDA_ERROR_INVALID_VALUE;
    return ctx_create(pctx, flags, dev);
}

EXPORT CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags,
                               CUdevice dev)
{
    ENTER();
    if (ctxCreateParams != NULL && ctxCreateParams->numExecAffinityParams > 0 &&
        ctxCreateParams->execAffinityParams == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return ctx_create(pctx, flags, dev);
}

static CUresult ctx_destroy(CUcontext ctx)
{
    if (ctx == NULL || !ctx_handle_ok(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (ctx->kind == 1)
        return CUDA_ERROR_INVALID_CONTEXT;   /* seen: cuCtxDestroy of a primary context */
    LOCK();
    if (!ctx->active) {
        UNLOCK();
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    primary_teardown(ctx);
    UNLOCK();
    pop_if_top(ctx);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxDestroy(CUcontext ctx)
{
    ENTER();
    return ctx_destroy(ctx);
}

EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    ENTER();
    return ctx_destroy(ctx);
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    ENTER();
    if (pctx == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = cur_ctx();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
    ENTER();
    if (ctx == NULL) {
        if (t_depth > 0)
            t_depth--;
        return CUDA_SUCCESS;
    }
    if (!ctx_handle_ok(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (t_depth == 0)
        return push_ctx(ctx);
    t_stack[t_depth - 1] = ctx;
    return CUDA_SUCCESS;
}

static CUresult ctx_get_device(CUdevice *device, struct CUctx_st *c)
{
    if (device == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (c == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    *device = c->dev;   /* also for a released primary context (seen) */
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetDevice(CUdevice *device)
{
    ENTER();
    return ctx_get_device(device, cur_ctx());
}

EXPORT CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
    ENTER();
    if (ctx != NULL && !ctx_handle_ok(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    return ctx_get_device(device, ctx != NULL ? ctx : cur_ctx());
}

static CUresult ctx_push(CUcontext ctx)
{
    if (ctx == NULL)
        return CUDA_ERROR_INVALID_VALUE;   /* seen */
    if (!ctx_handle_ok(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    return push_ctx(ctx);
}

EXPORT CUresult cuCtxPushCurrent(CUcontext ctx)
{
    ENTER();
    return ctx_push(ctx);
}

EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    ENTER();
    return ctx_push(ctx);
}

static CUresult ctx_pop(CUcontext *pctx)
{
    if (t_depth == 0)
        return CUDA_ERROR_INVALID_CONTEXT;   /* seen */
    t_depth--;
    if (pctx != NULL)
        *pctx = t_stack[t_depth];
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxPopCurrent(CUcontext *pctx)
{
    ENTER();
    return ctx_pop(pctx);
}

EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
    ENTER();
    return ctx_pop(pctx);
}

/* Synchronising a context returns the memory its device's pools hold (threshold 0). */
static void pools_release_cached_locked(int dev)
{
    for (int d = 0; d < g_ndev; d++) {
        if (dev >= 0 && d != dev)
            continue;
        if (g_default_pool[d].cached > 0) {
            uncharge(d, g_default_pool[d].cached);
            g_default_pool[d].cached = 0;
        }
    }
    for (unsigned i = 0; i < MAX_POOLS; i++) {
        struct CUmemPoolHandle_st *p = &g_pools[i];

        if (p->live && (dev < 0 || p->dev == dev) && p->cached > 0) {
            uncharge(p->dev, p->cached);
            p->cached = 0;
        }
    }
}

static void pools_release_cached(int dev)
{
    LOCK();
    pools_release_cached_locked(dev);
    UNLOCK();
}

static CUresult ctx_sync(struct CUctx_st *c)
{
    if (c == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!ctx_active(c))
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    pools_release_cached(c->dev);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSynchronize(void)
{
    ENTER();
    return ctx_sync(cur_ctx());
}

EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
    ENTER();
    if (ctx != NULL && !ctx_handle_ok(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    return ctx_sync(ctx != NULL ? ctx : cur_ctx());
}

/* ---------------------------------------------------------------------------------------- */
/* Linear memory                                                                             */
/* ---------------------------------------------------------------------------------------- */

/* Record a sub-allocation of bytes at the chunk's bump offset (g_mu held). */
static CUresult sub_insert(struct range *chunk, unsigned long long bytes, CUdeviceptr *out)
{
    struct sub s;
    size_t i;

    if (VEC_RESERVE(g_subs, g_subs.n + 1) < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    s.base = chunk->base + chunk->next;
    s.size = bytes;
    chunk->next += round_up(bytes, SMALL_ALIGN);
    chunk->nsubs++;
    i = sub_lower(s.base);
    memmove(&g_subs.v[i + 1], &g_subs.v[i], (g_subs.n - i) * sizeof(*g_subs.v));
    g_subs.v[i] = s;
    g_subs.n++;
    *out = s.base;
    return CUDA_SUCCESS;
}

/* Allocate bytes of linear device memory on c's device (g_mu held). */
static CUresult linear_alloc(struct CUctx_st *c, unsigned long long bytes, CUdeviceptr *out)
{
    struct range r;
    CUresult rc;

    if (bytes < GRAN) {
        /* Small: pack into the newest chunk of this context with room, else a new chunk. */
        unsigned long long need = round_up(bytes, SMALL_ALIGN);
        struct range *chunk = NULL;

        for (size_t k = g_ranges.n; k-- > 0;) {
            struct range *cr = &g_ranges.v[k];

            if (cr->kind == R_CHUNK && cr->ctx == c && cr->pool == NULL && cr->next + need <= cr->span) {
                chunk = cr;
                break;
            }
        }
        if (chunk == NULL) {
            memset(&r, 0, sizeof(r));
            r.base = va_find(GRAN, GRAN, 0);
            if (r.base == 0)
                return CUDA_ERROR_OUT_OF_MEMORY;
            rc = charge(c->dev, GRAN);
            if (rc != CUDA_SUCCESS)
                return rc;
            r.span = r.size = r.charge = GRAN;
            r.kind = R_CHUNK;
            r.dev = c->dev;
            r.ctx = c;
            chunk = range_insert(&r);
            if (chunk == NULL) {
                uncharge(c->dev, GRAN);
                return CUDA_ERROR_OUT_OF_MEMORY;
            }
        }
        return sub_insert(chunk, bytes, out);
    }
    memset(&r, 0, sizeof(r));
    r.span = round_up(bytes, GRAN);
    if (r.span < bytes)
        return CUDA_ERROR_OUT_OF_MEMORY;
    rc = charge(c->dev, r.span);
    if (rc != CUDA_SUCCESS)
        return rc;
    r.base = va_find(r.span, GRAN, 0);
    if (r.base == 0) {
        uncharge(c->dev, r.span);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    r.size = bytes;
    r.charge = r.span;
    r.kind = R_LINEAR;
    r.dev = c->dev;
    r.ctx = c;
    if (range_insert(&r) == NULL) {
        uncharge(c->dev, r.span);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *out = r.base;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    struct CUctx_st *c;
    CUresult rc;

    ENTER();
    rc = need_ctx(&c);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (dptr == NULL || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    rc = linear_alloc(c, bytesize, dptr);
    UNLOCK();
    return rc;
}

/* The 32-bit entry points of the CUDA 2.x ABI answer INVALID_CONTEXT in a 64-bit process, even
 * with a current context (seen on driver 580.159.04 for cuMemAlloc and cuMemGetInfo). */
EXPORT CUresult cuMemAlloc(gs_CUdeviceptr_v1 *dptr, unsigned int bytesize)
{
    ENTER();
    (void)dptr;
    (void)bytesize;
    return CUDA_ERROR_INVALID_CONTEXT;
}

EXPORT CUresult cuMemAllocPitch(gs_CUdeviceptr_v1 *dptr, unsigned int *pPitch, unsigned int WidthInBytes,
                                unsigned int Height, unsigned int ElementSizeBytes)
{
    ENTER();
    (void)dptr;
    (void)pPitch;
    (void)WidthInBytes;
    (void)Height;
    (void)ElementSizeBytes;
    return CUDA_ERROR_INVALID_CONTEXT;
}

EXPORT CUresult cuMemFree(gs_CUdeviceptr_v1 dptr)
{
    ENTER();
    (void)dptr;
    return CUDA_ERROR_INVALID_CONTEXT;
}

EXPORT CUresult cuMemGetInfo(unsigned int *free, unsigned int *total)
{
    ENTER();
    (void)free;
    (void)total;
    return CUDA_ERROR_INVALID_CONTEXT;
}

EXPORT CUresult cuMemAllocHost(void **pp, unsigned int bytesize)
{
    ENTER();
    (void)pp;
    (void)bytesize;
    return CUDA_ERROR_INVALID_CONTEXT;
}

EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                                   unsigned int ElementSizeBytes)
{
    struct CUctx_st *c;
    unsigned long long pitch, bytes;
    CUresult rc;

    ENTER();
    rc = need_ctx(&c);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (dptr == NULL || pPitch == NULL || WidthInBytes == 0 || Height == 0 ||
        (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
        return CUDA_ERROR_INVALID_VALUE;
    pitch = round_up(WidthInBytes, PITCH_ALIGN);
    if (pitch < WidthInBytes || Height > ULLONG_MAX / pitch)
        return CUDA_ERROR_OUT_OF_MEMORY;
    bytes = pitch * Height;
    LOCK();
    rc = linear_alloc(c, bytes, dptr);
    UNLOCK();
    if (rc == CUDA_SUCCESS)
        *pPitch = (size_t)pitch;
    return rc;
}

EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    struct CUctx_st *c;
    struct range r;
    void *p;
    CUresult rc;

    ENTER();
    rc = need_ctx(&c);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (dptr == NULL || bytesize == 0 || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
        return CUDA_ERROR_INVALID_VALUE;
    /* Real host memory (managed memory is host-accessible); not resident on the device until a
     * kernel touches it, so not charged (seen: +0 MiB for 64 MiB on driver 580.159.04). */
    p = mmap(NULL, round_up(bytesize, 4096), PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    memset(&r, 0, sizeof(r));
    r.base = (uintptr_t)p;
    r.span = round_up(bytesize, 4096);
    r.size = bytesize;
    r.kind = R_MANAGED;
    r.dev = c->dev;
    r.ctx = c;
    LOCK();
    if (range_insert(&r) == NULL) {
        UNLOCK();
        munmap(p, r.span);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    UNLOCK();
    *dptr = r.base;
    return CUDA_SUCCESS;
}

/* Free one range's memory (g_mu held); r is removed from g_ranges. */
static void free_range_locked(struct range *r)
{
    if (r->kind == R_MANAGED)
        munmap((void *)(uintptr_t)r->base, r->span);
    if (r->kind == R_CHUNK) {
        size_t i = sub_lower(r->base), j = i;

        while (j < g_subs.n && g_subs.v[j].base < r->base + r->span)
            j++;
        memmove(&g_subs.v[i], &g_subs.v[j], (g_subs.n - j) * sizeof(*g_subs.v));
        g_subs.n -= j - i;
    }
    if ((r->kind == R_POOL || r->kind == R_CHUNK) && r->pool != NULL) {
        /* Freed with its context: the pool memory goes back too. */
        if (r->pool->outstanding > 0)
            r->pool->outstanding--;
    }
    if (r->charge > 0)
        uncharge(r->dev, r->charge);
    range_remove(r);
}

/* A stream-ordered allocation (or a 32 MiB block of them) goes back to its pool: the memory
 * stays charged in the pool until a synchronize or trim (g_mu held); r is removed. */
static void pool_retire(struct range *r)
{
    struct CUmemPoolHandle_st *pool = r->pool;

    pool->cached += r->charge;
    r->charge = 0;
    if (pool->outstanding > 0)
        pool->outstanding--;
    range_remove(r);
    if (pool->destroyed && pool->outstanding == 0) {
        uncharge(pool->dev, pool->cached);
        pool->cached = 0;
        pool->live = 0;
    }
}

/* Free a pointer from cuMemAlloc*, cuMemAllocManaged or the stream-ordered allocators
 * (g_mu held). *pool_dev: the device whose pool got memory back, or -1. */
static CUresult release_pointer(CUdeviceptr p, int *pool_dev)
{
    struct range *r;
    size_t i;

    *pool_dev = -1;
    i = sub_lower(p);
    if (i < g_subs.n && g_subs.v[i].base == p) {
        r = range_at(p);
        memmove(&g_subs.v[i], &g_subs.v[i + 1], (g_subs.n - i - 1) * sizeof(*g_subs.v));
        g_subs.n--;
        if (r != NULL && r->kind == R_CHUNK && --r->nsubs == 0) {
            if (r->pool != NULL) {
                *pool_dev = r->pool->dev;
                pool_retire(r);
            } else {
                free_range_locked(r);
            }
        }
        return CUDA_SUCCESS;
    }
    r = range_at(p);
    if (r == NULL || r->base != p || (r->kind != R_LINEAR && r->kind != R_MANAGED && r->kind != R_POOL))
        return CUDA_ERROR_INVALID_VALUE;   /* unknown, interior, VMM: seen INVALID_VALUE */
    if (r->kind == R_POOL) {
        *pool_dev = r->pool->dev;
        pool_retire(r);
    } else {
        free_range_locked(r);
    }
    return CUDA_SUCCESS;
}

static void pools_release_cached_locked(int dev);

EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    CUresult rc;
    int pool_dev;

    ENTER();
    if (dptr == 0)
        return CUDA_SUCCESS;   /* seen */
    LOCK();
    rc = release_pointer(dptr, &pool_dev);
    /* cuMemFree of a stream-ordered allocation synchronises: the pool lets the memory go. */
    if (pool_dev >= 0)
        pools_release_cached_locked(pool_dev);
    UNLOCK();
    return rc;
}

EXPORT CUresult cuMemGetInfo_v2(size_t *free, size_t *total)
{
    struct CUctx_st *c;
    CUresult rc;
    int locked;

    ENTER();
    rc = need_ctx(&c);
    if (rc != CUDA_SUCCESS)
        return rc;
    /* NULL pointers are accepted (seen). */
    LOCK();
    locked = fg_state_lock(&g_shared) == 0;
    if (locked)
        fg_state_reap(&g_shared);
    if (free != NULL)
        *free = (size_t)dev_free(c->dev);
    if (total != NULL)
        *total = (size_t)g_dev[c->dev].total;
    if (locked)
        fg_state_unlock(&g_shared);
    UNLOCK();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    struct CUctx_st *c;
    void *p;
    CUresult rc;

    ENTER();
    rc = need_ctx(&c);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (pp == NULL || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    p = mmap(NULL, bytesize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    LOCK();
    if (VEC_RESERVE(g_hosts, g_hosts.n + 1) < 0) {
        UNLOCK();
        munmap(p, bytesize);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    g_hosts.v[g_hosts.n++] = (struct host_alloc){ p, bytesize, c };
    UNLOCK();
    *pp = p;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFreeHost(void *p)
{
    ENTER();
    LOCK();
    for (size_t i = 0; i < g_hosts.n; i++) {
        if (g_hosts.v[i].p == p) {
            munmap(p, g_hosts.v[i].size);
            g_hosts.v[i] = g_hosts.v[--g_hosts.n];
            UNLOCK();
            return CUDA_SUCCESS;
        }
    }
    UNLOCK();
    return CUDA_ERROR_INVALID_VALUE;
}

/* ---------------------------------------------------------------------------------------- */
/* Virtual memory management                                                                 */
/* ---------------------------------------------------------------------------------------- */

static CUresult check_prop(const CUmemAllocationProp *prop)
{
    if (prop == NULL || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
        prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(prop->location.id))
        return CUDA_ERROR_INVALID_DEVICE;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                              CUmemAllocationGranularity_flags option)
{
    CUresult rc;

    ENTER();
    if (granularity == NULL ||
        (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
        return CUDA_ERROR_INVALID_VALUE;
    rc = check_prop(prop);
    if (rc != CUDA_SUCCESS)
        return rc;
    *granularity = (size_t)GRAN;   /* 2 MiB for both (seen) */
    return CUDA_SUCCESS;
}

static struct vmm_handle *find_handle(CUmemGenericAllocationHandle h)
{
    for (size_t i = 0; i < g_handles.n; i++)
        if (g_handles.v[i].id == h)
            return &g_handles.v[i];
    return NULL;
}

static void handle_maybe_free(struct vmm_handle *h)
{
    if (h->released && h->nmaps == 0) {
        uncharge(h->dev, h->size);
        *h = g_handles.v[--g_handles.n];
    }
}

EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                            unsigned long long flags)
{
    CUresult rc;

    ENTER();
    if (handle == NULL || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    rc = check_prop(prop);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (size == 0 || size % GRAN != 0)
        return CUDA_ERROR_INVALID_VALUE;   /* seen for 0 and 4096 */
    LOCK();
    if (VEC_RESERVE(g_handles, g_handles.n + 1) < 0) {
        UNLOCK();
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    rc = charge(prop->location.id, size);
    if (rc == CUDA_SUCCESS) {
        struct vmm_handle *h = &g_handles.v[g_handles.n++];

        memset(h, 0, sizeof(*h));
        h->id = g_next_handle;
        g_next_handle += 0x10;
        h->dev = prop->location.id;
        h->size = size;
        *handle = h->id;
    }
    UNLOCK();
    return rc;
}

EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    struct vmm_handle *h;

    ENTER();
    LOCK();
    h = find_handle(handle);
    /* unknown (the real driver crashes) or released twice (seen: INVALID_VALUE) */
    if (h == NULL || h->released) {
        UNLOCK();
        return CUDA_ERROR_INVALID_VALUE;
    }
    h->released = 1;   /* the memory stays while mapped (seen) */
    handle_maybe_free(h);
    UNLOCK();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                    unsigned long long flags)
{
    struct range r;

    ENTER();
    if (ptr == NULL || size == 0 || size % GRAN != 0 || flags != 0 ||
        (alignment != 0 && (alignment & (alignment - 1)) != 0))
        return CUDA_ERROR_INVALID_VALUE;
    memset(&r, 0, sizeof(r));
    LOCK();
    r.base = va_find(size, alignment > GRAN ? alignment : GRAN, addr);
    if (r.base == 0) {
        UNLOCK();
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    r.span = r.size = size;
    r.kind = R_RESERVE;
    r.dev = -1;
    if (range_insert(&r) == NULL) {
        UNLOCK();
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    UNLOCK();
    *ptr = r.base;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    struct range *r;

    ENTER();
    LOCK();
    r = range_at(ptr);
    if (r == NULL || r->kind != R_RESERVE || r->base != ptr || r->span != size) {
        UNLOCK();
        return CUDA_ERROR_INVALID_VALUE;   /* seen for a wrong size */
    }
    for (size_t i = 0; i < g_maps.n; i++) {
        if (g_maps.v[i].base >= ptr && g_maps.v[i].base < ptr + size) {
            UNLOCK();
            return CUDA_ERROR_INVALID_VALUE;   /* still mapped */
        }
    }
    range_remove(r);
    UNLOCK();
    return CUDA_SUCCESS;
}

/* Mappings overlapping [p, p+size). */
static int maps_overlap(CUdeviceptr p, unsigned long long size)
{
    for (size_t i = 0; i < g_maps.n; i++)
        if (g_maps.v[i].base < p + size && p < g_maps.v[i].base + g_maps.v[i].size)
            return 1;
    return 0;
}

EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                         unsigned long long flags)
{
    struct range *r;
    struct vmm_handle *h;

    ENTER();
    if (size == 0 || flags != 0 || ptr % GRAN != 0 || size % GRAN != 0)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    r = range_at(ptr);
    if (r == NULL || r->kind != R_RESERVE || ptr + size > r->base + r->span) {
        UNLOCK();
        return CUDA_ERROR_INVALID_VALUE;   /* outside a reservation (seen) */
    }
    h = find_handle(handle);
    if (h == NULL || h->released) {
        UNLOCK();
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (offset != 0 || size > h->size) {
        UNLOCK();
        return CUDA_ERROR_NOT_SUPPORTED;   /* seen for offset 2 MiB and a size past the handle */
    }
    if (maps_overlap(ptr, size) || VEC_RESERVE(g_maps, g_maps.n + 1) < 0) {
        UNLOCK();
        return CUDA_ERROR_INVALID_VALUE;   /* already mapped (seen) */
    }
    g_maps.v[g_maps.n++] = (struct mapping){ ptr, size, handle, 0 };
    h->nmaps++;
    UNLOCK();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    unsigned long long covered = 0;
    int exact = 1;

    ENTER();
    if (size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    /* The range must consist of whole mappings (a partial unmap is INVALID_VALUE, seen). */
    for (size_t i = 0; i < g_maps.n; i++) {
        const struct mapping *m = &g_maps.v[i];

        if (m->base < ptr + size && ptr < m->base + m->size) {
            if (m->base < ptr || m->base + m->size > ptr + size)
                exact = 0;
            covered += m->size;
        }
    }
    if (!exact || covered != size) {
        UNLOCK();
        return CUDA_ERROR_INVALID_VALUE;
    }
    for (size_t i = 0; i < g_maps.n;) {
        const struct mapping *m = &g_maps.v[i];

        if (m->base >= ptr && m->base < ptr + size) {
            struct vmm_handle *h = find_handle(m->handle);

            g_maps.v[i] = g_maps.v[--g_maps.n];
            if (h != NULL) {
                h->nmaps--;
                handle_maybe_free(h);
            }
        } else {
            i++;
        }
    }
    UNLOCK();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
    unsigned long long covered = 0;

    ENTER();
    if (desc == NULL || count == 0 || size == 0)
        return CUDA_ERROR_INVALID_VALUE;   /* count 0: seen */
    for (size_t i = 0; i < count; i++) {
        if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE)
            return CUDA_ERROR_INVALID_VALUE;
        if (!valid_dev(desc[i].location.id))
            return CUDA_ERROR_INVALID_DEVICE;
        if (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
            desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            return CUDA_ERROR_INVALID_VALUE;
    }
    LOCK();
    for (size_t i = 0; i < g_maps.n; i++)
        if (g_maps.v[i].base >= ptr && g_maps.v[i].base + g_maps.v[i].size <= ptr + size)
            covered += g_maps.v[i].size;
    if (covered != size) {
        UNLOCK();
        return CUDA_ERROR_INVALID_VALUE;   /* not all mapped (seen) */
    }
    for (size_t i = 0; i < g_maps.n; i++)
        if (g_maps.v[i].base >= ptr && g_maps.v[i].base + g_maps.v[i].size <= ptr + size)
            g_maps.v[i].access = desc[count - 1].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE;
    UNLOCK();
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------------------------------- */
/* Streams                                                                                   */
/* ---------------------------------------------------------------------------------------- */

static int stream_ok(CUstream s)
{
    uintptr_t p = (uintptr_t)s;

    if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
        return 1;
    if (p < (uintptr_t)&g_streams[0] || p >= (uintptr_t)&g_streams[MAX_STREAMS] ||
        (p - (uintptr_t)&g_streams[0]) % sizeof(struct CUstream_st) != 0)
        return 0;
    return __atomic_load_n(&s->live, __ATOMIC_ACQUIRE) && ctx_active(s->ctx);
}

EXPORT CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    struct CUctx_st *c;
    CUresult rc;

    ENTER();
    rc = need_ctx(&c);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (phStream == NULL || (Flags & ~(unsigned)CU_STREAM_NON_BLOCKING) != 0)
        return CUDA_ERROR_INVALID_VALUE;   /* seen for flags 8 */
    LOCK();
    for (unsigned i = 0; i < MAX_STREAMS; i++) {
        if (!g_streams[i].live) {
            g_streams[i].ctx = c;
            g_streams[i].flags = Flags;
            __atomic_store_n(&g_streams[i].live, 1, __ATOMIC_RELEASE);
            *phStream = &g_streams[i];
            UNLOCK();
            return CUDA_SUCCESS;
        }
    }
    UNLOCK();
    return CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult stream_destroy(CUstream s)
{
    if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD || !stream_ok(s))
        return CUDA_ERROR_INVALID_HANDLE;
    __atomic_store_n(&s->live, 0, __ATOMIC_RELEASE);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamDestroy(CUstream hStream)
{
    ENTER();
    return stream_destroy(hStream);
}

EXPORT CUresult cuStreamDestroy_v2(CUstream hStream)
{
    ENTER();
    return stream_destroy(hStream);
}

static CUresult stream_sync(CUstream s)
{
    struct CUctx_st *c;
    CUresult rc;

    if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD) {
        rc = need_ctx(&c);
        if (rc != CUDA_SUCCESS)
            return rc;
    } else {
        if (!stream_ok(s))
            return CUDA_ERROR_INVALID_HANDLE;
        c = s->ctx;
    }
    pools_release_cached(c->dev);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamSynchronize(CUstream hStream)
{
    ENTER();
    return stream_sync(hStream);
}

EXPORT CUresult cuStreamSynchronize_ptsz(CUstream hStream)
{
    ENTER();
    return stream_sync(hStream);
}

/* ---------------------------------------------------------------------------------------- */
/* Stream-ordered allocation, pools                                                          */
/* ---------------------------------------------------------------------------------------- */

static int pool_ok(const struct CUmemPoolHandle_st *p)
{
    uintptr_t a = (uintptr_t)p;

    if (a >= (uintptr_t)&g_default_pool[0] && a < (uintptr_t)&g_default_pool[MAX_DEV])
        return (a - (uintptr_t)&g_default_pool[0]) % sizeof(*p) == 0 && p->live;
    if (a >= (uintptr_t)&g_pools[0] && a < (uintptr_t)&g_pools[MAX_POOLS])
        return (a - (uintptr_t)&g_pools[0]) % sizeof(*p) == 0 && p->live && !p->destroyed;
    return 0;
}

static CUresult pool_alloc(CUdeviceptr *dptr, size_t bytesize, struct CUmemPoolHandle_st *pool, CUstream s)
{
    struct CUctx_st *c;
    struct range r;
    CUresult rc;
    unsigned long long span;

    rc = need_ctx(&c);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (dptr == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!stream_ok(s))
        return CUDA_ERROR_INVALID_HANDLE;
    if (bytesize == 0) {
        *dptr = 0;   /* seen: success */
        return CUDA_SUCCESS;
    }
    span = round_up(bytesize, GRAN);
    if (span < bytesize)
        return CUDA_ERROR_OUT_OF_MEMORY;
    LOCK();
    if (pool == NULL)
        pool = &g_default_pool[c->dev];
    if (!pool_ok(pool)) {
        UNLOCK();
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (bytesize < GRAN) {
        /* Small: pack into the pool's newest 32 MiB block with room (seen: two 1000-byte
         * allocations cost 32 MiB, 1 KiB apart). */
        unsigned long long need = round_up(bytesize, SMALL_ALIGN);

        for (size_t k = g_ranges.n; k-- > 0;) {
            struct range *cr = &g_ranges.v[k];

            if (cr->kind == R_CHUNK && cr->pool == pool && cr->ctx == c && cr->next + need <= cr->span) {
                rc = sub_insert(cr, bytesize, dptr);
                UNLOCK();
                return rc;
            }
        }
        span = POOL_CHUNK;
    }
    /* Reuse what the pool holds, charge the rest. */
    if (pool->cached >= span) {
        pool->cached -= span;
    } else {
        rc = charge(pool->dev, span - pool->cached);
        if (rc != CUDA_SUCCESS) {
            UNLOCK();
            return rc;
        }
        pool->cached = 0;
    }
    memset(&r, 0, sizeof(r));
    r.base = va_find(span, GRAN, 0);
    r.span = span;
    r.size = bytesize < GRAN ? span : bytesize;
    r.kind = bytesize < GRAN ? R_CHUNK : R_POOL;
    r.dev = pool->dev;
    r.ctx = c;
    r.charge = span;
    r.pool = pool;
    {
        struct range *nr = r.base == 0 ? NULL : range_insert(&r);

        if (nr == NULL) {
            uncharge(pool->dev, span);
            UNLOCK();
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        pool->outstanding++;
        if (nr->kind == R_CHUNK)
            rc = sub_insert(nr, bytesize, dptr);
        else
            *dptr = nr->base;
    }
    UNLOCK();
    return rc;
}

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    ENTER();
    return pool_alloc(dptr, bytesize, NULL, hStream);
}

EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    ENTER();
    return pool_alloc(dptr, bytesize, NULL, hStream);
}

EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream)
{
    ENTER();
    if (pool == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return pool_alloc(dptr, bytesize, pool, hStream);
}

EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                             CUstream hStream)
{
    ENTER();
    if (pool == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return pool_alloc(dptr, bytesize, pool, hStream);
}

static CUresult pool_free(CUdeviceptr dptr, CUstream s)
{
    CUresult rc;
    int pool_dev;

    if (!stream_ok(s))
        return CUDA_ERROR_INVALID_HANDLE;
    LOCK();
    /* Any cuMemAlloc* / stream-ordered pointer (freed after the stream's work); unknown:
     * INVALID_VALUE (seen). Pool memory stays with the pool until a synchronize / trim. */
    rc = release_pointer(dptr, &pool_dev);
    UNLOCK();
    return rc;
}

EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    ENTER();
    return pool_free(dptr, hStream);
}

EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    ENTER();
    return pool_free(dptr, hStream);
}

EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
    ENTER();
    if (pool == NULL || poolProps == NULL || poolProps->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
        poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(poolProps->location.id))
        return CUDA_ERROR_INVALID_DEVICE;
    for (size_t i = 0; i < sizeof(poolProps->reserved); i++)
        if (poolProps->reserved[i] != 0)
            return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    for (unsigned i = 0; i < MAX_POOLS; i++) {
        if (!g_pools[i].live) {
            memset(&g_pools[i], 0, sizeof(g_pools[i]));
            g_pools[i].live = 1;
            g_pools[i].dev = poolProps->location.id;
            *pool = &g_pools[i];
            UNLOCK();
            return CUDA_SUCCESS;
        }
    }
    UNLOCK();
    return CUDA_ERROR_OUT_OF_MEMORY;
}

EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    ENTER();
    LOCK();
    if (pool == NULL || !pool_ok(pool) || pool->is_default) {
        UNLOCK();
        return CUDA_ERROR_INVALID_VALUE;
    }
    /* Outstanding allocations keep the pool's memory until they are freed. */
    pool->destroyed = 1;
    if (pool->outstanding == 0) {
        uncharge(pool->dev, pool->cached);
        pool->cached = 0;
        pool->live = 0;
    }
    UNLOCK();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    ENTER();
    LOCK();
    if (pool == NULL || !pool_ok(pool)) {
        UNLOCK();
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (pool->cached > minBytesToKeep) {
        unsigned long long release = round_up(pool->cached - minBytesToKeep, GRAN);

        if (release > pool->cached)
            release = pool->cached;
        uncharge(pool->dev, release);
        pool->cached -= release;
    }
    UNLOCK();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    ENTER();
    if (pool_out == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    *pool_out = &g_default_pool[dev];
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------------------------------- */
/* Arrays                                                                                    */
/* ---------------------------------------------------------------------------------------- */

/* Bytes per element of a format with n channels, or 0 if invalid. */
static unsigned elem_bytes(CUarray_format f, unsigned n)
{
    unsigned b;

    switch ((int)f) {
    case CU_AD_FORMAT_UNSIGNED_INT8: case CU_AD_FORMAT_SIGNED_INT8: b = 1; break;
    case CU_AD_FORMAT_UNSIGNED_INT16: case CU_AD_FORMAT_SIGNED_INT16: case CU_AD_FORMAT_HALF: b = 2; break;
    case CU_AD_FORMAT_UNSIGNED_INT32: case CU_AD_FORMAT_SIGNED_INT32: case CU_AD_FORMAT_FLOAT: b = 4; break;
    /* normalized formats carry their channel count in the format: NumChannels must match */
    case CU_AD_FORMAT_UNORM_INT8X1: case CU_AD_FORMAT_SNORM_INT8X1: return n == 1 ? 1 : 0;
    case CU_AD_FORMAT_UNORM_INT8X2: case CU_AD_FORMAT_SNORM_INT8X2: return n == 2 ? 2 : 0;
    case CU_AD_FORMAT_UNORM_INT8X4: case CU_AD_FORMAT_SNORM_INT8X4: return n == 4 ? 4 : 0;
    case CU_AD_FORMAT_UNORM_INT16X1: case CU_AD_FORMAT_SNORM_INT16X1: return n == 1 ? 2 : 0;
    case CU_AD_FORMAT_UNORM_INT16X2: case CU_AD_FORMAT_SNORM_INT16X2: return n == 2 ? 4 : 0;
    case CU_AD_FORMAT_UNORM_INT16X4: case CU_AD_FORMAT_SNORM_INT16X4: return n == 4 ? 8 : 0;
    default: return 0;
    }
    if (n != 1 && n != 2 && n != 4)   /* seen: 3 channels -> INVALID_VALUE */
        return 0;
    return b * n;
}

/* Bytes of a w x h x d array (h, d may be 0 = 1), or 0 on overflow. */
static unsigned long long array_bytes(unsigned long long w, unsigned long long h, unsigned long long d,
                                      unsigned eb)
{
    unsigned long long v = w * eb;

    if (h == 0)
        h = 1;
    if (d == 0)
        d = 1;
    if (w != 0 && v / w != eb)
        return 0;
    if (v > ULLONG_MAX / h)
        return 0;
    v *= h;
    if (v > ULLONG_MAX / d)
        return 0;
    return v * d;
}

static CUresult array_new(int mipmapped, unsigned long long bytes, struct CUarray_st **out)
{
    struct CUctx_st *c;
    CUresult rc = need_ctx(&c);
    unsigned long long ch;

    if (rc != CUDA_SUCCESS)
        return rc;
    ch = round_up(bytes, GRAN);
    if (bytes == 0 || ch < bytes)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    for (unsigned i = 0; i < MAX_ARRAYS; i++) {
        if (!g_arrays[i].live) {
            rc = charge(c->dev, ch);
            if (rc == CUDA_SUCCESS) {
                g_arrays[i].mipmapped = mipmapped;
                g_arrays[i].ctx = c;
                g_arrays[i].dev = c->dev;
                g_arrays[i].charge = ch;
                __atomic_store_n(&g_arrays[i].live, 1, __ATOMIC_RELEASE);
                *out = &g_arrays[i];
            }
            UNLOCK();
            return rc;
        }
    }
    UNLOCK();
    return CUDA_ERROR_OUT_OF_MEMORY;
}

static int array_ok(const struct CUarray_st *a, int mipmapped)
{
    uintptr_t p = (uintptr_t)a;

    return p >= (uintptr_t)&g_arrays[0] && p < (uintptr_t)&g_arrays[MAX_ARRAYS] &&
           (p - (uintptr_t)&g_arrays[0]) % sizeof(*a) == 0 && a->live && a->mipmapped == mipmapped;
}

static CUresult array_destroy(struct CUarray_st *a, int mipmapped)
{
    LOCK();
    if (a == NULL || !array_ok(a, mipmapped)) {
        UNLOCK();
        return CUDA_ERROR_INVALID_HANDLE;
    }
    uncharge(a->dev, a->charge);
    __atomic_store_n(&a->live, 0, __ATOMIC_RELEASE);
    UNLOCK();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
    unsigned eb;
    unsigned long long bytes;

    ENTER();
    if (pHandle == NULL || pAllocateArray == NULL || pAllocateArray->Width == 0)
        return CUDA_ERROR_INVALID_VALUE;
    eb = elem_bytes(pAllocateArray->Format, pAllocateArray->NumChannels);
    if (eb == 0)
        return CUDA_ERROR_INVALID_VALUE;
    bytes = array_bytes(pAllocateArray->Width, pAllocateArray->Height, 1, eb);
    if (bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    return array_new(0, bytes, pHandle);
}

static int depth_of(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned long long *depth)
{
    unsigned long long v = d->Depth ? d->Depth : 1;

    if (d->Flags & CUDA_ARRAY3D_CUBEMAP) {
        if (d->Width != d->Height)
            return -1;
        if (d->Flags & CUDA_ARRAY3D_LAYERED) {
            if (d->Depth == 0 || d->Depth % 6 != 0)
                return -1;
        } else {
            if (d->Depth != 6)
                return -1;
        }
    }
    *depth = v;
    return 0;
}

EXPORT CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
    unsigned eb;
    unsigned long long bytes, depth;

    ENTER();
    if (pHandle == NULL || pAllocateArray == NULL || pAllocateArray->Width == 0 ||
        (pAllocateArray->Depth > 0 && pAllocateArray->Height == 0 &&
         !(pAllocateArray->Flags & CUDA_ARRAY3D_LAYERED)))
        return CUDA_ERROR_INVALID_VALUE;
    eb = elem_bytes(pAllocateArray->Format, pAllocateArray->NumChannels);
    if (eb == 0 || depth_of(pAllocateArray, &depth) < 0)
        return CUDA_ERROR_INVALID_VALUE;
    bytes = array_bytes(pAllocateArray->Width, pAllocateArray->Height, depth, eb);
    if (bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    return array_new(0, bytes, pHandle);
}

EXPORT CUresult cuArrayDestroy(CUarray hArray)
{
    ENTER();
    return array_destroy(hArray, 0);
}

EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *desc,
                                       unsigned int numMipmapLevels)
{
    unsigned eb;
    unsigned long long total = 0, w, h, d, depth;
    int layered;

    ENTER();
    if (pHandle == NULL || desc == NULL || desc->Width == 0 || numMipmapLevels == 0)
        return CUDA_ERROR_INVALID_VALUE;
    eb = elem_bytes(desc->Format, desc->NumChannels);
    if (eb == 0 || depth_of(desc, &depth) < 0)
        return CUDA_ERROR_INVALID_VALUE;
    layered = (desc->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP)) != 0;
    w = desc->Width;
    h = desc->Height;
    d = depth;
    /* levels beyond 1 + floor(log2(max extent)) are invalid */
    {
        unsigned long long m = w > h ? w : h;
        unsigned max_levels = 0;

        if (!layered && d > m)
            m = d;
        while (m > 0) {
            max_levels++;
            m >>= 1;
        }
        if (numMipmapLevels > max_levels)
            return CUDA_ERROR_INVALID_VALUE;
    }
    for (unsigned l = 0; l < numMipmapLevels; l++) {
        unsigned long long b = array_bytes(w, h, d, eb);

        if (b == 0 || total + b < total)
            return CUDA_ERROR_INVALID_VALUE;
        total += b;
        w = w > 1 ? w / 2 : 1;
        h = h > 1 ? h / 2 : h;
        if (!layered)
            d = d > 1 ? d / 2 : 1;
    }
    return array_new(1, total, (struct CUarray_st **)pHandle);
}

EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
    ENTER();
    return array_destroy((struct CUarray_st *)hMipmappedArray, 1);
}

/* ---------------------------------------------------------------------------------------- */
/* Modules and launches                                                                      */
/* ---------------------------------------------------------------------------------------- */

/* A loadable image: a cubin (ELF), a fatbin (magic 0xBA55ED50) or PTX text. Returns its
 * size (0: not an image) and whether it is PTX. */
static size_t image_size(const void *image, int *ptx)
{
    const unsigned char *b = image;
    uint32_t magic;

    *ptx = 0;
    if (memcmp(b, "\177ELF", 4) == 0 && b[4] == 2 /* ELFCLASS64 */) {
        uint64_t shoff, phoff;
        uint16_t shentsize, shnum, phentsize, phnum;
        size_t end, e2;

        memcpy(&phoff, b + 0x20, 8);
        memcpy(&shoff, b + 0x28, 8);
        memcpy(&phentsize, b + 0x36, 2);
        memcpy(&phnum, b + 0x38, 2);
        memcpy(&shentsize, b + 0x3a, 2);
        memcpy(&shnum, b + 0x3c, 2);
        end = (size_t)shoff + (size_t)shentsize * shnum;
        e2 = (size_t)phoff + (size_t)phentsize * phnum;
        if (shoff > (1ULL << 32) || phoff > (1ULL << 32))
            return 0;
        return end > e2 ? end : e2;
    }
    memcpy(&magic, b, sizeof(magic));
    if (magic == 0xBA55ED50u) {
        uint16_t hsize;
        uint64_t fsize;

        memcpy(&hsize, b + 6, 2);
        memcpy(&fsize, b + 8, 8);
        return fsize > (1ULL << 32) ? 0 : (size_t)hsize + (size_t)fsize;
    }
    if (strstr((const char *)b, ".version") != NULL && strstr((const char *)b, ".target") != NULL) {
        *ptx = 1;
        return strlen((const char *)b) + 1;
    }
    return 0;
}

/* Does the module define a kernel `name`? PTX: a ".entry name"; cubin: the name in a string
 * table; fatbin (compressed): any name. */
static int module_has(const struct CUmod_st *m, const char *name)
{
    size_t n = strlen(name);

    if (m->image == NULL)
        return 1;
    if (m->ptx) {
        for (const char *e = m->image; (e = strstr(e, ".entry")) != NULL; e += 6) {
            const char *q = e + 6;

            while (*q == ' ' || *q == '\t')
                q++;
            if (strncmp(q, name, n) == 0 && (q[n] == '(' || isspace((unsigned char)q[n])))
                return 1;
        }
        return 0;
    }
    for (size_t i = 0; i + n + 1 < m->image_size; i++)
        if (m->image[i] == '\0' && memcmp(m->image + i + 1, name, n) == 0 && m->image[i + 1 + n] == '\0')
            return 1;
    return 0;
}

EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    struct CUctx_st *c;
    CUresult rc;
    unsigned long long ch;
    size_t size;
    int ptx;
    char *copy;

    ENTER();
    if (module == NULL || image == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    rc = need_ctx(&c);
    if (rc != CUDA_SUCCESS)
        return rc;
    size = image_size(image, &ptx);
    if (size == 0)
        return CUDA_ERROR_INVALID_IMAGE;   /* seen for junk */
    /* module_memory (config) per module: a small PTX module costs nothing visible (seen). */
    ch = round_up(g_cfg.module_memory, GRAN);
    copy = ptx || memcmp(image, "\177ELF", 4) == 0 ? malloc(size) : NULL;
    if (copy != NULL)
        memcpy(copy, image, size);
    LOCK();
    for (unsigned i = 0; i < MAX_MODULES; i++) {
        if (!g_mods[i].live) {
            rc = ch > 0 ? charge(c->dev, ch) : CUDA_SUCCESS;
            if (rc == CUDA_SUCCESS) {
                free(g_mods[i].image);
                g_mods[i].ctx = c;
                g_mods[i].charge = ch;
                g_mods[i].image = copy;
                g_mods[i].image_size = size;
                g_mods[i].ptx = ptx;
                copy = NULL;
                __atomic_store_n(&g_mods[i].live, 1, __ATOMIC_RELEASE);
                *module = &g_mods[i];
            }
            UNLOCK();
            free(copy);
            return rc;
        }
    }
    UNLOCK();
    free(copy);
    return CUDA_ERROR_OUT_OF_MEMORY;
}

static int module_ok(const struct CUmod_st *m)
{
    uintptr_t p = (uintptr_t)m;

    return p >= (uintptr_t)&g_mods[0] && p < (uintptr_t)&g_mods[MAX_MODULES] &&
           (p - (uintptr_t)&g_mods[0]) % sizeof(*m) == 0 && m->live;
}

EXPORT CUresult cuModuleUnload(CUmodule hmod)
{
    ENTER();
    LOCK();
    if (hmod == NULL || !module_ok(hmod)) {
        UNLOCK();
        return CUDA_ERROR_INVALID_HANDLE;
    }
    for (unsigned j = 0; j < MAX_FUNCS; j++)
        if (g_funcs[j].live && g_funcs[j].mod == hmod)
            __atomic_store_n(&g_funcs[j].live, 0, __ATOMIC_RELEASE);
    uncharge(hmod->ctx->dev, hmod->charge);
    __atomic_store_n(&hmod->live, 0, __ATOMIC_RELEASE);
    UNLOCK();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    struct CUfunc_st *freeslot = NULL;

    ENTER();
    if (hfunc == NULL || name == NULL)
        return CUDA_ERROR_INVALID_VALUE;   /* seen for a NULL name */
    if (name[0] == '\0' || strlen(name) >= sizeof(g_funcs[0].name))
        return CUDA_ERROR_NOT_FOUND;
    LOCK();
    if (hmod == NULL || !module_ok(hmod)) {
        UNLOCK();
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (!module_has(hmod, name)) {
        UNLOCK();
        return CUDA_ERROR_NOT_FOUND;   /* seen */
    }
    /* The same name gives the same handle. */
    for (unsigned j = 0; j < MAX_FUNCS; j++) {
        if (g_funcs[j].live && g_funcs[j].mod == hmod && strcmp(g_funcs[j].name, name) == 0) {
            *hfunc = &g_funcs[j];
            UNLOCK();
            return CUDA_SUCCESS;
        }
        if (!g_funcs[j].live && freeslot == NULL)
            freeslot = &g_funcs[j];
    }
    if (freeslot == NULL) {
        UNLOCK();
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    freeslot->mod = hmod;
    snprintf(freeslot->name, sizeof(freeslot->name), "%s", name);
    __atomic_store_n(&freeslot->live, 1, __ATOMIC_RELEASE);
    *hfunc = freeslot;
    UNLOCK();
    return CUDA_SUCCESS;
}

/* No lock and no system call: validate and return. */
static CUresult launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                       unsigned bz, unsigned shmem, CUstream s, void **params, void **extra)
{
    struct CUctx_st *c;
    uintptr_t p = (uintptr_t)f;
    CUresult rc = need_ctx(&c);

    if (rc != CUDA_SUCCESS)
        return rc;
    if (f == NULL || p < (uintptr_t)&g_funcs[0] || p >= (uintptr_t)&g_funcs[MAX_FUNCS] ||
        (p - (uintptr_t)&g_funcs[0]) % sizeof(*f) != 0 || !__atomic_load_n(&f->live, __ATOMIC_ACQUIRE))
        return CUDA_ERROR_INVALID_HANDLE;   /* seen for NULL */
    if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 || gy > 65535 || gz > 65535 ||
        bx > 1024 || by > 1024 || bz > 64 || (unsigned long long)bx * by * bz > 1024 ||
        (params != NULL && extra != NULL && extra[0] != NULL))   /* an empty extra list is fine (seen) */
        return CUDA_ERROR_INVALID_VALUE;
    if (shmem > 232448)
        return CUDA_ERROR_INVALID_VALUE;
    if (!stream_ok(s))
        return CUDA_ERROR_INVALID_HANDLE;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                               unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                               unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)
{
    ENTER();
    return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                  kernelParams, extra);
}

EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                    unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                    unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                                    void **kernelParams, void **extra)
{
    ENTER();
    return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                  kernelParams, extra);
}

/* ---------------------------------------------------------------------------------------- */
/* Copies and sets: validate the device range, move no data (managed memory is real)         */
/* ---------------------------------------------------------------------------------------- */

/* [p, p+n) lies inside one live allocation or accessible mapping. Returns the host address
 * for managed memory through *host (else NULL). g_mu held. */
static CUresult check_device_range(CUdeviceptr p, size_t n, void **host)
{
    struct range *r;

    *host = NULL;
    r = range_at(p);
    if (r == NULL || n > r->span - (p - r->base))
        return CUDA_ERROR_INVALID_VALUE;
    switch (r->kind) {
    case R_LINEAR:
    case R_POOL:
        return p - r->base < r->size && n <= r->size - (p - r->base) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case R_MANAGED:
        *host = (void *)(uintptr_t)p;
        return CUDA_SUCCESS;
    case R_CHUNK: {
        size_t i = sub_lower(p + 1);

        if (i == 0)
            return CUDA_ERROR_INVALID_VALUE;
        i--;
        if (p >= g_subs.v[i].base && p - g_subs.v[i].base < g_subs.v[i].size &&
            n <= g_subs.v[i].size - (p - g_subs.v[i].base))
            return CUDA_SUCCESS;
        return CUDA_ERROR_INVALID_VALUE;
    }
    case R_RESERVE:
        for (size_t i = 0; i < g_maps.n; i++) {
            const struct mapping *m = &g_maps.v[i];

            if (p >= m->base && p + n <= m->base + m->size)
                return m->access ? CUDA_SUCCESS : CUDA_ERROR_ILLEGAL_ADDRESS;
        }
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_ERROR_INVALID_VALUE;
}

static CUresult copy_check(CUdeviceptr dev, size_t n, const void *hostp, int to_device, void *hostw)
{
    struct CUctx_st *c;
    CUresult rc = need_ctx(&c);
    void *managed;

    if (rc != CUDA_SUCCESS)
        return rc;
    if (n == 0)
        return CUDA_SUCCESS;
    if (hostp == NULL && hostw == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    rc = check_device_range(dev, n, &managed);
    if (rc == CUDA_SUCCESS && managed != NULL) {
        if (to_device)
            memmove(managed, hostp, n);
        else
            memmove(hostw, managed, n);
    }
    UNLOCK();
    return rc;
}

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    ENTER();
    return copy_check(dstDevice, ByteCount, srcHost, 1, NULL);
}

EXPORT CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    ENTER();
    return copy_check(dstDevice, ByteCount, srcHost, 1, NULL);
}

EXPORT CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    ENTER();
    return copy_check(srcDevice, ByteCount, NULL, 0, dstHost);
}

EXPORT CUresult cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    ENTER();
    return copy_check(srcDevice, ByteCount, NULL, 0, dstHost);
}

static CUresult memset_check(CUdeviceptr dst, unsigned char uc, size_t n)
{
    struct CUctx_st *c;
    CUresult rc = need_ctx(&c);
    void *managed;

    if (rc != CUDA_SUCCESS)
        return rc;
    if (n == 0)
        return CUDA_SUCCESS;
    LOCK();
    rc = check_device_range(dst, n, &managed);
    if (rc == CUDA_SUCCESS && managed != NULL)
        memset(managed, uc, n);
    UNLOCK();
    return rc;
}

EXPORT CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    ENTER();
    return memset_check(dstDevice, uc, N);
}

EXPORT CUresult cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    ENTER();
    return memset_check(dstDevice, uc, N);
}

/* ---------------------------------------------------------------------------------------- */
/* cuGetProcAddress                                                                          */
/* ---------------------------------------------------------------------------------------- */

/*
 * For each base name: the exported versions with the CUDA version that introduced them
 * (ascending), and the per-thread default stream variant. Source: the PFN_<name>_v<version>
 * typedefs of CUDA 13.0's cudaTypedefs.h (e.g. PFN_cuMemAlloc_v2000 = cuMemAlloc,
 * PFN_cuMemAlloc_v3020 = cuMemAlloc_v2, PFN_cuLaunchKernel_v7000_ptsz = cuLaunchKernel_ptsz),
 * checked against driver 580.159.04 by the cuda-probe. Versions the fake does not export
 * (the CUDA 2.x ABI of cuArrayCreate, cuMemcpy*, cuMemsetD8) are left out, so an old enough
 * cudaVersion answers VERSION_NOT_SUFFICIENT for them.
 */
struct proc_version {
    int since;
    void *fn;
};

struct proc_entry {
    const char *name;
    struct proc_version v[4];
    void *per_thread;   /* _ptsz / _ptds, or NULL */
    int per_thread_since;
};

#define V(ver, f) { ver, (void *)(f) }
static const struct proc_entry g_procs[] = {
    { "cuInit", { V(2000, cuInit) }, NULL, 0 },
    { "cuDriverGetVersion", { V(2020, cuDriverGetVersion) }, NULL, 0 },
    { "cuGetErrorString", { V(6000, cuGetErrorString) }, NULL, 0 },
    { "cuGetErrorName", { V(6000, cuGetErrorName) }, NULL, 0 },
    { "cuGetExportTable", { V(3000, cuGetExportTable) }, NULL, 0 },
    { "cuGetProcAddress", { V(11030, cuGetProcAddress), V(12000, cuGetProcAddress_v2) }, NULL, 0 },
    { "cuDeviceGet", { V(2000, cuDeviceGet) }, NULL, 0 },
    { "cuDeviceGetCount", { V(2000, cuDeviceGetCount) }, NULL, 0 },
    { "cuDeviceGetName", { V(2000, cuDeviceGetName) }, NULL, 0 },
    { "cuDeviceGetUuid", { V(9020, cuDeviceGetUuid), V(11040, cuDeviceGetUuid_v2) }, NULL, 0 },
    { "cuDeviceTotalMem", { V(2000, cuDeviceTotalMem), V(3020, cuDeviceTotalMem_v2) }, NULL, 0 },
    { "cuDeviceGetAttribute", { V(2000, cuDeviceGetAttribute) }, NULL, 0 },
    { "cuDeviceGetPCIBusId", { V(4010, cuDeviceGetPCIBusId) }, NULL, 0 },
    { "cuDeviceGetByPCIBusId", { V(4010, cuDeviceGetByPCIBusId) }, NULL, 0 },
    { "cuDevicePrimaryCtxRetain", { V(7000, cuDevicePrimaryCtxRetain) }, NULL, 0 },
    { "cuDevicePrimaryCtxRelease",
      { V(7000, cuDevicePrimaryCtxRelease), V(11000, cuDevicePrimaryCtxRelease_v2) }, NULL, 0 },
    { "cuDevicePrimaryCtxReset", { V(7000, cuDevicePrimaryCtxReset), V(11000, cuDevicePrimaryCtxReset_v2) },
      NULL, 0 },
    { "cuDevicePrimaryCtxGetState", { V(7000, cuDevicePrimaryCtxGetState) }, NULL, 0 },
    { "cuCtxCreate",
      { V(2000, cuCtxCreate), V(3020, cuCtxCreate_v2), V(11040, cuCtxCreate_v3), V(12050, cuCtxCreate_v4) },
      NULL, 0 },
    { "cuCtxDestroy", { V(2000, cuCtxDestroy), V(4000, cuCtxDestroy_v2) }, NULL, 0 },
    { "cuCtxGetCurrent", { V(4000, cuCtxGetCurrent) }, NULL, 0 },
    { "cuCtxSetCurrent", { V(4000, cuCtxSetCurrent) }, NULL, 0 },
    { "cuCtxGetDevice", { V(2000, cuCtxGetDevice), V(13000, cuCtxGetDevice_v2) }, NULL, 0 },
    { "cuCtxPushCurrent", { V(2000, cuCtxPushCurrent), V(4000, cuCtxPushCurrent_v2) }, NULL, 0 },
    { "cuCtxPopCurrent", { V(2000, cuCtxPopCurrent), V(4000, cuCtxPopCurrent_v2) }, NULL, 0 },
    { "cuCtxSynchronize", { V(2000, cuCtxSynchronize), V(13000, cuCtxSynchronize_v2) }, NULL, 0 },
    { "cuMemAlloc", { V(2000, cuMemAlloc), V(3020, cuMemAlloc_v2) }, NULL, 0 },
    { "cuMemAllocPitch", { V(2000, cuMemAllocPitch), V(3020, cuMemAllocPitch_v2) }, NULL, 0 },
    { "cuMemAllocManaged", { V(6000, cuMemAllocManaged) }, NULL, 0 },
    { "cuMemFree", { V(2000, cuMemFree), V(3020, cuMemFree_v2) }, NULL, 0 },
    { "cuMemGetInfo", { V(2000, cuMemGetInfo), V(3020, cuMemGetInfo_v2) }, NULL, 0 },
    { "cuMemAllocHost", { V(2000, cuMemAllocHost), V(3020, cuMemAllocHost_v2) }, NULL, 0 },
    { "cuMemFreeHost", { V(2000, cuMemFreeHost) }, NULL, 0 },
    { "cuMemCreate", { V(10020, cuMemCreate) }, NULL, 0 },
    { "cuMemRelease", { V(10020, cuMemRelease) }, NULL, 0 },
    { "cuMemAddressReserve", { V(10020, cuMemAddressReserve) }, NULL, 0 },
    { "cuMemAddressFree", { V(10020, cuMemAddressFree) }, NULL, 0 },
    { "cuMemMap", { V(10020, cuMemMap) }, NULL, 0 },
    { "cuMemUnmap", { V(10020, cuMemUnmap) }, NULL, 0 },
    { "cuMemSetAccess", { V(10020, cuMemSetAccess) }, NULL, 0 },
    { "cuMemGetAllocationGranularity", { V(10020, cuMemGetAllocationGranularity) }, NULL, 0 },
    { "cuMemAllocAsync", { V(11020, cuMemAllocAsync) }, (void *)cuMemAllocAsync_ptsz, 11020 },
    { "cuMemFreeAsync", { V(11020, cuMemFreeAsync) }, (void *)cuMemFreeAsync_ptsz, 11020 },
    { "cuMemAllocFromPoolAsync", { V(11020, cuMemAllocFromPoolAsync) }, (void *)cuMemAllocFromPoolAsync_ptsz,
      11020 },
    { "cuMemPoolCreate", { V(11020, cuMemPoolCreate) }, NULL, 0 },
    { "cuMemPoolDestroy", { V(11020, cuMemPoolDestroy) }, NULL, 0 },
    { "cuMemPoolTrimTo", { V(11020, cuMemPoolTrimTo) }, NULL, 0 },
    { "cuDeviceGetDefaultMemPool", { V(11020, cuDeviceGetDefaultMemPool) }, NULL, 0 },
    { "cuArrayCreate", { V(3020, cuArrayCreate_v2) }, NULL, 0 },
    { "cuArray3DCreate", { V(3020, cuArray3DCreate_v2) }, NULL, 0 },
    { "cuArrayDestroy", { V(2000, cuArrayDestroy) }, NULL, 0 },
    { "cuMipmappedArrayCreate", { V(5000, cuMipmappedArrayCreate) }, NULL, 0 },
    { "cuMipmappedArrayDestroy", { V(5000, cuMipmappedArrayDestroy) }, NULL, 0 },
    { "cuModuleLoadData", { V(2000, cuModuleLoadData) }, NULL, 0 },
    { "cuModuleUnload", { V(2000, cuModuleUnload) }, NULL, 0 },
    { "cuModuleGetFunction", { V(2000, cuModuleGetFunction) }, NULL, 0 },
    { "cuLaunchKernel", { V(4000, cuLaunchKernel) }, (void *)cuLaunchKernel_ptsz, 7000 },
    { "cuStreamCreate", { V(2000, cuStreamCreate) }, NULL, 0 },
    { "cuStreamDestroy", { V(2000, cuStreamDestroy), V(4000, cuStreamDestroy_v2) }, NULL, 0 },
    { "cuStreamSynchronize", { V(2000, cuStreamSynchronize) }, (void *)cuStreamSynchronize_ptsz, 7000 },
    { "cuMemcpyHtoD", { V(3020, cuMemcpyHtoD_v2) }, (void *)cuMemcpyHtoD_v2_ptds, 7000 },
    { "cuMemcpyDtoH", { V(3020, cuMemcpyDtoH_v2) }, (void *)cuMemcpyDtoH_v2_ptds, 7000 },
    { "cuMemsetD8", { V(3020, cuMemsetD8_v2) }, (void *)cuMemsetD8_v2_ptds, 7000 },
};
#undef V

/* The lookup shared by both entry points. Returns the status; *pfn = the function or NULL. */
static CUdriverProcAddressQueryResult proc_lookup(const char *symbol, int cudaVersion, cuuint64_t flags,
                                                  void **pfn)
{
    *pfn = NULL;
    for (size_t i = 0; i < sizeof(g_procs) / sizeof(g_procs[0]); i++) {
        const struct proc_entry *e = &g_procs[i];
        int found = 0;

        if (strcmp(e->name, symbol) != 0)
            continue;
        /* A negative cudaVersion reads as "newest" on driver 580.159.04 (seen). */
        if (cudaVersion < 0)
            cudaVersion = INT_MAX;
        for (int k = 0; k < 4 && e->v[k].fn != NULL; k++)
            if (e->v[k].since <= cudaVersion) {
                *pfn = e->v[k].fn;
                found = 1;
            }
        if (!found)
            return CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
        if ((flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && e->per_thread != NULL &&
            e->per_thread_since <= cudaVersion)
            *pfn = e->per_thread;
        return CU_GET_PROC_ADDRESS_SUCCESS;
    }
    return CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
}

static int driver_version(void)
{
    int v = GS_CUDA_API_VERSION;

    (void)cuDriverGetVersion(&v);
    return v;
}

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *symbolStatus)
{
    CUdriverProcAddressQueryResult st;

    /* NULL symbol or pfn crash the real driver; the fake answers INVALID_VALUE. */
    if (symbol == NULL || pfn == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (flags > (CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
        return CUDA_ERROR_INVALID_VALUE;   /* seen for flags 4; *pfn untouched */
    if (cudaVersion > driver_version())
        return CUDA_ERROR_INVALID_VALUE;   /* newer than the driver (seen); *pfn untouched */
    st = proc_lookup(symbol, cudaVersion, flags, pfn);
    if (symbolStatus != NULL)
        *symbolStatus = st;
    /* Not found / version not sufficient: CUDA_SUCCESS with *pfn = NULL (seen, as documented). */
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    void *fn = NULL;

    if (symbol == NULL || pfn == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (flags > (CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) ||
        cudaVersion > driver_version())
        return CUDA_ERROR_INVALID_VALUE;
    /* The CUDA 11.3 entry point answers NOT_FOUND for a missing symbol and leaves *pfn
     * untouched (seen on driver 580.159.04). */
    if (proc_lookup(symbol, cudaVersion, flags, &fn) != CU_GET_PROC_ADDRESS_SUCCESS)
        return CUDA_ERROR_NOT_FOUND;
    *pfn = fn;
    return CUDA_SUCCESS;
}
