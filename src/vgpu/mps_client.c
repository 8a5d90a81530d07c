/*
 * The MPS client side of a slice (mps_client.h).
 */
#include "vgpu/mps_client.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/unixsock.h"
#include "region/region.h"

#define S gs_vgpu_state

/* How this process's compute share is enforced (GS_REGION_VIA_*), decided by the constructor. */
static uint32_t via = GS_REGION_VIA_TIME;
static unsigned mps_pct; /* the percentage it connects with (via MPS) */

/* The GPU's MPS state as the host's supervisor wrote it (<dir>/state, first line): poisoned
 * when a client of the server hit a fatal GPU error, after which every client of that server
 * fails and new ones are refused (CUDA_ERROR_MPS_SERVER_NOT_READY) until they are all gone. */
static bool poisoned(const char *dir)
{
        char path[300], buf[32];
        if ((size_t)snprintf(path, sizeof(path), "%s/state", dir) >= sizeof(path))
                return false;
        int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return false;
        ssize_t n;
        do
                n = read(fd, buf, sizeof(buf) - 1);
        while (n < 0 && errno == EINTR);
        close(fd);
        if (n <= 0)
                return false;
        buf[n] = '\0';
        return strncmp(buf, "state=poisoned\n", 15) == 0;
}

static bool set_env(void)
{
        char v[16];
        snprintf(v, sizeof(v), "%u", mps_pct);
        return setenv("CUDA_MPS_PIPE_DIRECTORY", S.cfg.mps_dir, 1) == 0 &&
               setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", v, 1) == 0;
}

/* Cap mode through MPS (GPUSLICE_MPS_PIPE_DIRECTORY): the process becomes a client of the host's
 * MPS server, confined to its share of the SMs (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, set here and
 * again right before the real cuInit, where the driver reads it; the driver rounds it down to its
 * SM granularity, 2 SMs on an H100, and reports the confined SM count to the process). Slices on
 * one GPU then run side by side instead of time-slicing, and a kernel of any length stays within
 * the partition. The partition is the cap: launches are not intercepted. MPS has one percentage
 * per process, so a slice whose devices have different shares stays on the time limiter, as does
 * one whose server is not running or is poisoned (each logged). */
bool gs_mps_client_connect(void)
{
        via = GS_REGION_VIA_TIME;
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
        /* A poisoned server refuses new clients (the driver would fail to initialise) and fails
         * the ones it has: this process takes turns instead. */
        if (poisoned(S.cfg.mps_dir)) {
                via = GS_REGION_VIA_TIME_FALLBACK;
                gs_vgpu_log(1, "MPS: the GPU's MPS server is poisoned (a client hit a fatal GPU error; %s/state); "
                               "using the time limiter", S.cfg.mps_dir);
                return false;
        }
        /* No daemon there: the driver would run the process unconfined. A daemon listens on the
         * `control` socket in its pipe directory; one that quit leaves the socket behind, which
         * then refuses connections. (Its pid file names a host pid, not visible in a container.) */
        if (!gs_unix_listens(S.cfg.mps_dir, "control")) {
                via = GS_REGION_VIA_TIME_FALLBACK;
                gs_vgpu_log(1, "MPS: no control daemon at %s; using the time limiter", S.cfg.mps_dir);
                return false;
        }
        mps_pct = pct;
        if (!set_env())
                return false;
        via = GS_REGION_VIA_MPS;
        gs_vgpu_log(2, "compute limit %u %% through the MPS server at %s", pct, S.cfg.mps_dir);
        return true;
}

/* The application may have changed the two variables since the constructor (os.environ in
 * Python, setenv in C): the driver reads them in cuInit, so they are the slice's again for it.
 * A process that takes turns instead does not connect to the slice's server on its own. */
void gs_mps_client_before_init(void)
{
        if (via == GS_REGION_VIA_MPS) {
                const char *p = getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), *d = getenv("CUDA_MPS_PIPE_DIRECTORY");
                char v[16];
                snprintf(v, sizeof(v), "%u", mps_pct);
                if (p == NULL || strcmp(p, v) != 0 || d == NULL || strcmp(d, S.cfg.mps_dir) != 0)
                        gs_vgpu_log(1, "MPS: CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%s CUDA_MPS_PIPE_DIRECTORY=%s set by the "
                                       "process: cuInit gets the slice's %s and %s", p != NULL ? p : "(unset)",
                                    d != NULL ? d : "(unset)", v, S.cfg.mps_dir);
                set_env();
        } else if (S.cfg.mps_dir[0] != '\0') {
                const char *d = getenv("CUDA_MPS_PIPE_DIRECTORY");
                if (d != NULL && strcmp(d, S.cfg.mps_dir) == 0)
                        unsetenv("CUDA_MPS_PIPE_DIRECTORY");
        }
}

/* After the first successful cuInit: the region says how each limited device's share is kept
 * (the observer's gpuslice_slice_compute_mechanism). */
void gs_mps_client_after_init(void)
{
        static int done;
        if (!gs_vgpu_compute_limited(&S.cfg) || __atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL) != 0)
                return;
        if (gs_vgpu_slot_ready() != 0 || S.region == NULL)
                return;
        for (int i = 0; i < GS_VGPU_MAX_DEVICES && (unsigned)i < gs_region_ndevices(S.region); i++)
                if (S.cfg.compute[i] != 0)
                        gs_region_set_compute_via(S.region, (unsigned)i, via);
}
