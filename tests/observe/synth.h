/* Synthetic usage regions for the observer's tests, tools and benchmark (written through the ABI). */
#ifndef GS_TESTS_OBSERVE_SYNTH_H
#define GS_TESTS_OBSERVE_SYNTH_H

#include <stddef.h>

#include "region/region.h"

#define GS_SYNTH_MiB (1024ull * 1024ull)

/* A valid region (version 3): ndev devices (UUIDs GPU-5e5e5e5e-0000-4000-8000-<seed:8><dev:4>),
 * device d's quota (d+1) GiB and share 25 %; nprocs live slots (pid 100+i, start time 1000+i),
 * slot i holding (i+1) MiB allocated and 64 MiB overhead on every device, busy time (i+1) ms, last
 * launch now. Counters: priority seed % 3; device d: compute_via d % 3, GS_SYNTH_LAUNCHES(d)
 * launches of which 10 waited 30 us (bucket 0), 5(d+1) waited 2 ms (bucket 5: 1-2.5 ms) and one
 * waited 2 s (bucket 13): sum GS_SYNTH_WAIT_SUM_NS(d). */
#define GS_SYNTH_LAUNCHES(d) (1000ull * ((d) + 1))
#define GS_SYNTH_WAIT_SUM_NS(d) (10 * 30000ull + 5ull * ((d) + 1) * 2000000ull + 2000000000ull)
void gs_synth_region(struct gs_region_file *f, unsigned ndev, unsigned nprocs, unsigned seed);

/* The same region as an older interposer wrote it (version 2: no counters area). Write the first
 * GS_REGION_SIZE_V2 bytes of f. */
void gs_synth_region_v2(struct gs_region_file *f, unsigned ndev, unsigned nprocs, unsigned seed);

/* Damage a synthetic region (2 devices, 3 slots) one way. *len = bytes to write, *size = file
 * size to extend to (0: len). Kinds: truncated, huge, magic, version, layout, hwm, ndev0,
 * ndev99, uuid, share, zero, priority (an unknown priority), via (an unknown compute mechanism),
 * v2big (version 2 in a file of version 3's size), v3small (version 3 in one of version 2's).
 * -1 for an unknown kind. */
int gs_synth_corrupt(const char *kind, struct gs_region_file *f, size_t *len, size_t *size);

#endif
