/* Synthetic usage regions for the observer's tests, tools and benchmark (written through the ABI). */
#ifndef GS_TESTS_OBSERVE_SYNTH_H
#define GS_TESTS_OBSERVE_SYNTH_H

#include <stddef.h>

#include "region/region.h"

#define GS_SYNTH_MiB (1024ull * 1024ull)

/* A valid region: ndev devices (UUIDs GPU-5e5e5e5e-0000-4000-8000-<seed:8><dev:4>), device d's
 * quota (d+1) GiB and share 25 %; nprocs live slots (pid 100+i, start time 1000+i), slot i
 * holding (i+1) MiB allocated and 64 MiB overhead on every device, busy time (i+1) ms, last
 * launch now. */
void gs_synth_region(struct gs_region_file *f, unsigned ndev, unsigned nprocs, unsigned seed);

/* Damage a synthetic region (2 devices, 3 slots) one way. *len = bytes to write, *size = file
 * size to extend to (0: len). Kinds: truncated, huge, magic, version, layout, hwm, ndev0,
 * ndev99, uuid, share, zero. -1 for an unknown kind. */
int gs_synth_corrupt(const char *kind, struct gs_region_file *f, size_t *len, size_t *size);

#endif
