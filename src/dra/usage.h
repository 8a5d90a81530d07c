/*
 * What no other DRA driver shows, on the claim (issue 33): each prepared slice share's usage in its
 * ResourceClaim's status.devices[].data, and a Warning Event when a share hits its memory quota.
 *
 *   where from    the slices' usage regions, read as `gpuslice metrics` reads them
 *                 (observe/collect.h: the regions directory, slice.regions-dir); a region belongs
 *                 to the claim whose namespace and name its slice's labels carry (written by the
 *                 createRuntime hook from the --k8s-claim / --k8s-namespace options the plugin put
 *                 in the claim's CDI spec: the host's word, never the container's); its device is
 *                 the one whose UUID is the claimed GPU's, or its only device. Several containers
 *                 of one claim add up.
 *   what          memory in use (the quota's count: allocations + driver overhead) and its peak
 *                 (the highest the plugin sampled since it started: a spike between two samples
 *                 is missed), the quota (the claim's consumed capacity, the allocator's word, not
 *                 the region's), the charges refused at the quota; the measured GPU-time share
 *                 over the last window (the status period) and its limit; the time kernel launches
 *                 waited in the gate for the GPU (throttled) in that window; the live processes;
 *                 and a summary line ("3.9 of 4 Gi (peak 4 Gi), GPU time 29.4 % of 30 %, ...")
 *   when          sampled every min(period, 5 s); written at most once a period per claim, and
 *                 only when a value moved meaningfully (memory or peak by 1 % of the quota or
 *                 1 MiB, the GPU-time share by a point, throttled time by 100 ms or 1 % of the
 *                 window, a refusal, the process count); a claim whose slice has not used the GPU
 *                 yet gets nothing. At most 8 claims are written at one sample (each write is one
 *                 try, bounded by the API client's timeout, and the kubelet's calls wait on the loop):
 *                 the others at the next
 *   the event     MemoryQuotaReached on the ResourceClaim when its share's refusals grew, at most
 *                 one a share a max(period, 60 s) (a tenant that fails allocations in a loop must
 *                 not flood the API server)
 *   how written   a server-side apply as the field manager <driver>-usage (dra/status.h): the
 *                 entries' Ready conditions stay the driver's
 *
 * The region is the tenant's: the container's processes write it, any of them can write anything.
 * It is read defensively (observe/region_read.h: a damaged one is skipped, so the claim gets no
 * data), and what a valid-looking one says is clamped before it goes out: memory to the GPU's
 * size, shares to 0..100 %, throttled time to the window times the processes, counts to what JSON
 * integers hold. The data has a fixed shape and size (numbers and strings the plugin formats),
 * whatever the region holds; the numbers are the container's own report (a tenant can understate
 * its usage there, never another claim's, never its quota, which the interposer enforces from
 * the host's files).
 */
#ifndef GS_DRA_USAGE_H
#define GS_DRA_USAGE_H

#include <gpuslice/gpuslice.h>

#include "dra/prepare.h"

#define GS_DRA_USAGE_MAX_SHARES 256 /* shares followed; more are left without data (said once) */

struct gs_dra_usage;

/* Follow the shares that `prep`'s checkpoint holds, their regions under `regions_dir`; written
 * every `period_ms` (> 0) at most. `note` gets one line for what an operator should know (a
 * region skipped, a write refused), never per sample. NULL with err when out of memory. */
struct gs_dra_usage *gs_dra_usage_new(struct gs_dra_prep *prep, const char *regions_dir, unsigned period_ms,
                                      void (*note)(void *ud, const char *line), void *ud, struct gs_error *err);
void gs_dra_usage_free(struct gs_dra_usage *u);

/* Sample if due at `now` (gs_now_ms()), write and emit what is due. Returns when it wants to run
 * again (gs_now_ms() time). */
long long gs_dra_usage_tick(struct gs_dra_usage *u, long long now);

#endif
