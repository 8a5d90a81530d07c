/*
 * libgpuslice-vgpu.so internals. libc only (no libcap/json-c/src/common): the interposer lives in
 * every process of a sliced container and must never break or slow it.
 */
#ifndef GS_VGPU_VGPU_H
#define GS_VGPU_VGPU_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "abi/cuda.h"
#include "abi/nvml.h"
#include "common/clock.h"
#include "vgpu/config.h"

#define GS_EXPORT __attribute__((visibility("default")))
#define GS_HIDDEN __attribute__((visibility("hidden")))


enum gs_alloc_kind { GS_ALLOC_PTR = 1, GS_ALLOC_HANDLE, GS_ALLOC_ARRAY, GS_ALLOC_MIPMAP };

struct gs_vgpu {
        struct gs_vgpu_config cfg;
        bool cuda_loaded, nvml_loaded;
        void *cuda_handle, *nvml_handle;
        struct gs_cuda_fns cu;          /* real entry points, resolved on first use */
        struct gs_nvml_fns nv;
        struct gs_region *region;
        int slot;                       /* our slot in the region, -1 = none */
        /* Visible devices: visible index i -> real CUDA ordinal / NVML handle. With GPUSLICE_DEVICES
         * the visible index is the slice's (its order: limits and region count in it), and the
         * driver itself shows only those devices, in the process's CUDA_VISIBLE_DEVICES order. */
        int nvisible;                   /* -1 until the map is built */
        CUdevice cuda_of[GS_VGPU_MAX_DEVICES]; /* -1: a slice device this process's driver does not show */
        int vis_of_cuda[GS_VGPU_MAX_DEVICES]; /* the other way: driver ordinal -> visible index, or -1 */
        char uuid_of[GS_VGPU_MAX_DEVICES][96];
        bool driver_hides;              /* the driver shows none but the slice's devices (cuInit saw
                                         * them in CUDA_VISIBLE_DEVICES); false: translate ordinals */
        bool measured[GS_VGPU_MAX_DEVICES]; /* context/module memory reconciled at least once */
        uint64_t mine[GS_VGPU_MAX_DEVICES];  /* bytes this process has charged (tracked allocations) */
        bool nvml_mapped;               /* the map came from NVML (no CUDA in this process yet) */
        pthread_mutex_t lock;           /* allocation table and lazy init (never on launch paths) */
};

extern struct gs_vgpu gs_vgpu_state GS_HIDDEN;
extern void *(*gs_real_dlsym)(void *, const char *) GS_HIDDEN;
/* Find libc's dlsym now (our constructor does it, unless another library's runs first). */
void *gs_resolve_real_dlsym(void) GS_HIDDEN;

/* Read the configuration, once (the constructor; cuInit, should another library's constructor
 * call it before ours ran). */
void gs_vgpu_configure(void) GS_HIDDEN;
/* Lazy initialisation; 0 when the real driver library is usable. */
int gs_vgpu_load_cuda(void) GS_HIDDEN;
int gs_vgpu_load_nvml(void) GS_HIDDEN;
/* Build the visible-device map (needs cuInit done). With GPUSLICE_DEVICES: visible index i is
 * the slice's device i; cuda_of[i] is the driver's ordinal of it, -1 where the process's
 * CUDA_VISIBLE_DEVICES left it out. */
void gs_vgpu_map_devices(void) GS_HIDDEN;
/* The map from NVML's view (UUIDs in visible order) for processes that never touch CUDA. */
void gs_vgpu_map_from_nvml(char (*uuids)[96], int n) GS_HIDDEN;
/* 0 if a new context fits on vis (judged by the largest context measured in the slice), -1 not. */
int gs_vgpu_admit_context(int vis) GS_HIDDEN;
/* Visible index of a real CUDA ordinal, or -1. */
int gs_vgpu_visible_of(CUdevice real) GS_HIDDEN;
/* Visible index of the current context's device, or -1. */
int gs_vgpu_current_device(void) GS_HIDDEN;
/* Open the usage region and claim this process's slot (S.region, S.slot); 0 when done. */
int gs_vgpu_slot_ready(void) GS_HIDDEN;
/* Live limits (live.c): the memory quota this process obeys now (0 = unlimited); its state at
 * start (the constructor); the allocation paths' look at the host's generation (a relaxed load,
 * a re-read when it moved); the watcher thread (started with the region); a counter of applied
 * changes and the current set (the limiter applies compute changes at its next window). */
void gs_vgpu_live_init(void) GS_HIDDEN;
uint64_t gs_vgpu_quota(int vis) GS_HIDDEN;
void gs_vgpu_live_poll(void) GS_HIDDEN;
void gs_vgpu_live_start(void) GS_HIDDEN;
unsigned gs_vgpu_live_version(void) GS_HIDDEN;
void gs_vgpu_live_get(struct gs_vgpu_live *out) GS_HIDDEN;
void gs_vgpu_live_after_fork(void) GS_HIDDEN;
/* Limit and usage of a visible device (usage includes every process of the slice). */
uint64_t gs_vgpu_limit(int vis) GS_HIDDEN;
uint64_t gs_vgpu_usage(int vis) GS_HIDDEN;
/* The slice's measured GPU busy time on vis (every process's, from the region; 0 without one). */
uint64_t gs_vgpu_busy(int vis) GS_HIDDEN;
/* Reserve `bytes` on visible device vis for this process: 0 ok, -1 over the quota. */
int gs_vgpu_charge(int vis, uint64_t bytes) GS_HIDDEN;
void gs_vgpu_uncharge(int vis, uint64_t bytes) GS_HIDDEN;
/* Around every allocation and free, from before its charge (or untrack) to after its record:
 * the reconciler measures only while no other thread is inside one. Allocation paths only. */
void gs_vgpu_alloc_begin(void) GS_HIDDEN;
void gs_vgpu_alloc_end(void) GS_HIDDEN;
/* Allocation table (process-local). */
int gs_vgpu_track(enum gs_alloc_kind kind, uint64_t key, int vis, uint64_t bytes) GS_HIDDEN;
/* Remove and return the entry; 0 if unknown (then the caller passes the call through untouched). */
int gs_vgpu_untrack(enum gs_alloc_kind kind, uint64_t key, int *vis, uint64_t *bytes) GS_HIDDEN;
/* Measure the driver's view of this process's memory on vis (NVML) and record the part our
 * table does not cover (context, modules, rounding) as extra usage. */
void gs_vgpu_reconcile(int vis) GS_HIDDEN;
/* Wrapper for a real entry point address, or NULL (cuGetProcAddress / dlsym redirection). */
void *gs_vgpu_wrapper_for_real(const char *symbol, void *real) GS_HIDDEN;
void *gs_vgpu_wrapper_by_name(const char *name) GS_HIDDEN;

/* Start-up cost: with GPUSLICE_LOG_LEVEL=debug (3) or above, the time spent in our own code on a
 * process's start-up path is added up per phase and logged at exit (bench/vgpu.sh reads it). At
 * lower levels gs_vgpu_clock() is one predictable branch and nothing is measured. */
enum gs_vgpu_phase {
        GS_PHASE_CTOR,        /* constructor: configuration */
        GS_PHASE_LOAD,        /* loading the real libcuda.so.1 / libnvidia-ml.so.1 entry points */
        GS_PHASE_PROCADDR,    /* cuGetProcAddress answers swapped for wrappers */
        GS_PHASE_MAP,         /* the visible-device map */
        GS_PHASE_CONTEXT,     /* context admission (opens the usage region) */
        GS_PHASE_FIRST,       /* the first charge: slot, context estimate, reconciler thread */
        GS_PHASE_EXIT,        /* leaving the region at exit */
        GS_PHASE_COUNT
};
extern bool gs_vgpu_timing GS_HIDDEN;
extern uint64_t gs_vgpu_phase_ns[GS_PHASE_COUNT] GS_HIDDEN;
extern unsigned gs_vgpu_phase_calls[GS_PHASE_COUNT] GS_HIDDEN;
static inline uint64_t gs_vgpu_clock(void)
{
        if (__builtin_expect(!gs_vgpu_timing, 1))
                return 0;
        return gs_mono_ns();
}
static inline void gs_vgpu_spent(enum gs_vgpu_phase phase, uint64_t since)
{
        if (__builtin_expect(!gs_vgpu_timing, 1))
                return;
        __atomic_add_fetch(&gs_vgpu_phase_ns[phase], gs_vgpu_clock() - since, __ATOMIC_RELAXED);
        __atomic_add_fetch(&gs_vgpu_phase_calls[phase], 1, __ATOMIC_RELAXED);
}

void gs_vgpu_log(int level, const char *fmt, ...) GS_HIDDEN __attribute__((format(printf, 2, 3)));

#endif
