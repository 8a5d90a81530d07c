/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fakegpu shared state: the device memory each process using the fake libcuda.so.1 holds,
 * per simulated device, in one small file that every process (and the fake NVML) maps.
 *
 * File: $FAKEGPU_STATE if set and non-empty, else /dev/shm/fakegpu-<hash>.state (or /tmp
 * when /dev/shm is missing), <hash> = FNV-1a of the config text, so processes that read the
 * same config (also a copy of it inside a fake driver root) share one simulated GPU.
 *
 * Layout: a header and FG_STATE_SLOTS fixed slots, one per process; slots never move. A
 * process claims a slot under the header lock and holds an open-file-description (OFD) write
 * lock on the slot's first byte for as long as it lives; the kernel drops that lock when the
 * process dies (kill -9 included), so "slot locked by someone else" == "owner alive". Readers
 * skip slots whose owner is gone; writers reap them (zero the slot) under the header lock.
 * The owner updates its own counters with atomic stores; a writer that checks free memory
 * and charges it holds the header lock, so two processes cannot overcommit one device.
 *
 * Devices are "units": unit = gpu * FG_STATE_UNITS_PER_GPU + 0 for the whole GPU, or
 * + 1 + m for MIG device migs[m].
 */
#ifndef FAKEGPU_STATE_H
#define FAKEGPU_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "fakegpu_config.h"

#define FG_STATE_ENV            "FAKEGPU_STATE"
#define FG_STATE_SLOTS          128
#define FG_STATE_UNITS_PER_GPU  (1 + FG_MAX_MIG)
#define FG_STATE_UNITS          (FG_MAX_GPUS * FG_STATE_UNITS_PER_GPU)
#define FG_STATE_MAGIC          "FGSTATE1"

struct fg_state_slot {
    uint32_t pid;                       /* owner (0: free), in its own pid namespace */
    uint32_t pidns;                     /* that namespace (inode of /proc/self/ns/pid; 0 unknown) */
    uint64_t used[FG_STATE_UNITS];      /* bytes charged per unit */
};

struct fg_state_file {
    char magic[8];
    uint32_t nslots;
    uint32_t nunits;
    uint64_t reserved_[6];              /* header is 64 bytes; byte 0 is the header lock */
    struct fg_state_slot slots[FG_STATE_SLOTS];
};

struct fg_state {
    int fd;                             /* -1: not open */
    struct fg_state_file *map;
    int slot;                           /* own slot, -1 if none */
    int writable;
};

/* FAKEGPU_SHARED_TIMELINE's file (fake_cuda_time.c): the devices' tails (uint64_t, by CUDA
 * ordinal, FG_STATE_UNITS of them), then, per device, the work run in each 100 ms of the
 * monotonic clock (a ring of FG_UTIL_BUCKETS steps), then the devices' owners (uint64_t: the
 * process id whose work was queued last, for FAKEGPU_CTX_SWITCH_US; 0: none yet). With
 * FAKEGPU_NVML_UTIL=timeline the fake NVML's device utilization is the work of every process on
 * that timeline over the last whole second (NVML's longest sample period: what lags most behind
 * the work). */
#define FG_UTIL_BUCKET_NS 100000000ULL
#define FG_UTIL_BUCKETS 16
#define FG_UTIL_ENV "FAKEGPU_NVML_UTIL"
struct fg_util_bucket {
    uint64_t idx;                       /* the step (monotonic ns / FG_UTIL_BUCKET_NS) it holds */
    uint64_t ns;                        /* work run in it */
};
#define FG_SHARED_TL_SIZE (FG_STATE_UNITS * sizeof(uint64_t) + \
                           FG_STATE_UNITS * FG_UTIL_BUCKETS * sizeof(struct fg_util_bucket) + \
                           FG_STATE_UNITS * sizeof(uint64_t))

static inline unsigned fg_state_unit(unsigned gpu, int mig)
{
    return gpu * FG_STATE_UNITS_PER_GPU + (mig < 0 ? 0u : 1u + (unsigned)mig);
}

/* The state file path for cfg into buf. */
void fg_state_path(const struct fg_config *cfg, char *buf, size_t len);

/* Open (writable: create and initialise if needed) the state file. Returns 0 or -1 (errno). */
int fg_state_open(struct fg_state *st, const char *path, int writable);
void fg_state_close(struct fg_state *st);

/* Header lock (exclusive, waits). Both return 0 or -1. */
int fg_state_lock(struct fg_state *st);
void fg_state_unlock(struct fg_state *st);

/* Under the header lock: reap dead slots, claim a free one for pid and lock it.
 * Returns the slot index or -1 (table full). */
int fg_state_claim(struct fg_state *st, unsigned pid);

/* Slot i is owned by a live process (own slot: 1). */
int fg_state_alive(struct fg_state *st, unsigned i);

/* Under the header lock: zero every slot whose owner is gone. */
void fg_state_reap(struct fg_state *st);

/* Sum of `used[unit]` over live slots, except the caller's own slot if skip_self. */
unsigned long long fg_state_unit_used(struct fg_state *st, unsigned unit, int skip_self);

/* Set / read the caller's own counter for unit (no-op / 0 without a slot). */
void fg_state_set_own(struct fg_state *st, unsigned unit, unsigned long long bytes);

/* Live processes with used[unit] > 0 (or, for a whole-GPU unit with all_migs, any unit of
 * that GPU): fills up to max (pid, bytes) pairs, returns the total count. As the real driver
 * does, pids are given in the caller's pid namespace, and processes that namespace cannot see
 * are left out (the caller's /proc is taken to be its own namespace's). */
unsigned fg_state_procs(struct fg_state *st, unsigned unit, int all_migs, unsigned *pids,
                        unsigned long long *bytes, unsigned max);

#endif /* FAKEGPU_STATE_H */
