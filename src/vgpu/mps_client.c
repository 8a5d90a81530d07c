/*
 * The MPS client side of a slice (mps_client.h).
 */
#include "vgpu/mps_client.h"

#include <stdio.h>
#include <stdlib.h>

#include "common/unixsock.h"

#define S gs_vgpu_state

/* Cap mode through MPS (GPUSLICE_MPS_PIPE_DIRECTORY): the process becomes a client of the host's
 * MPS server, confined to its share of the SMs (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, set here before
 * the driver reads it at cuInit; the driver rounds it down to its SM granularity, 2 SMs on an
 * H100, and reports the confined SM count to the process). Slices on one GPU then run side by
 * side instead of time-slicing, and a kernel of any length stays within the partition. The
 * partition is the cap: launches are not intercepted. MPS has one percentage per process, so a
 * slice whose devices have different shares stays on the time limiter, as does one whose server
 * is not running (both logged). */
bool gs_mps_client_connect(void)
{
        if (S.cfg.mps_dir[0] == '\0' || S.cfg.compute_mode != GS_COMPUTE_CAP)
                return false;
        unsigned pct = 0;
        for (int i = 0; i < GS_VGPU_MAX_DEVICES; i++) {
                if (S.cfg.compute[i] == 0 || S.cfg.compute[i] == pct)
                        continue;
                if (pct != 0) {
                        gs_vgpu_log(1, "MPS: devices with different compute shares (%u %%, %u %%) cannot share one "
                                       "MPS percentage; using the time limiter", pct, S.cfg.compute[i]);
                        return false;
                }
                pct = S.cfg.compute[i];
        }
        /* No daemon there: the driver would run the process unconfined. A daemon listens on the
         * `control` socket in its pipe directory; one that quit leaves the socket behind, which
         * then refuses connections. (Its pid file names a host pid, not visible in a container.) */
        if (!gs_unix_listens(S.cfg.mps_dir, "control")) {
                gs_vgpu_log(1, "MPS: no control daemon at %s; using the time limiter", S.cfg.mps_dir);
                return false;
        }
        char v[16];
        snprintf(v, sizeof(v), "%u", pct);
        if (setenv("CUDA_MPS_PIPE_DIRECTORY", S.cfg.mps_dir, 1) < 0 ||
            setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", v, 1) < 0)
                return false;
        gs_vgpu_log(2, "compute limit %u %% through the MPS server at %s", pct, S.cfg.mps_dir);
        return true;
}
