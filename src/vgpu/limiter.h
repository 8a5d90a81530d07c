/*
 * The compute limiter (limiter.c): a slice's share of a GPU's time, per visible device.
 *
 * Launch hooks (hooks_launch.c) call, around the real launch:
 *     int vis = gs_limiter_gate(stream);        may wait while the slice is over its budget
 *     rc = real launch
 *     if (rc == CUDA_SUCCESS && vis >= 0) gs_limiter_launched(vis, stream);
 * Within budget both are a few atomics and one vDSO clock read: no lock, no system call. An
 * event is recorded on the launching stream at most every GS_LIMITER_SAMPLE_NS (and whenever no
 * recorded event is pending); a background thread reads the events off the fast path, turns
 * them into busy time (the time the slice had work on the GPU), and spends it from a budget that
 * every process of the slice shares through the usage region.
 */
#ifndef GS_VGPU_LIMITER_H
#define GS_VGPU_LIMITER_H

#include <stdbool.h>

#include "abi/cuda.h"
#include "vgpu/vgpu.h"

/* True when some visible device has a compute limit (set once by the constructor). When false,
 * cuGetProcAddress and dlsym hand out the driver's own launch functions. */
extern bool gs_limiter_enabled GS_HIDDEN;

void gs_limiter_configure(void) GS_HIDDEN;
int gs_limiter_gate(CUstream stream) GS_HIDDEN;
void gs_limiter_launched(int vis, CUstream stream) GS_HIDDEN;
/* Before the application waits for its work on `stream` (CU_STREAM_LEGACY: the whole context):
 * cover the launches no event covers yet. */
void gs_limiter_before_sync(CUstream stream) GS_HIDDEN;
/* After the application's wait returned: the work it waited for is done, whatever our events
 * (read by the ticker a little later) say yet; the launch path need not wait for it. */
void gs_limiter_after_sync(void) GS_HIDDEN;
void gs_limiter_after_fork(void) GS_HIDDEN;
/* The utilization view (NVML's utilization inside the slice): the slice's busy time over the last
 * 0.5 s as a percentage of the time its share allows on vis (a slice using all of its share shows
 * 100). 0 with *pct set when vis is time-limited, -1 otherwise (the driver's answer stands). Kept
 * by the ticker in a process that launches; another process (nvidia-smi) samples the region for
 * 0.2 s. */
int gs_limiter_view(int vis, unsigned *pct) GS_HIDDEN;

#endif
