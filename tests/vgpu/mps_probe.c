/*
 * mps_probe: one MPS client on the simulated GPU (the fake libcuda.so.1 and the simulated MPS
 * daemon, tests/fakegpu), as tests/gpu/mps_fault.cu is on the real one.
 *   mps_probe sms              cuInit and the SMs the process is given
 *   mps_probe serve SECONDS    a "request" (one 100 us kernel, then cuCtxSynchronize) every 20 ms;
 *                              prints each change of the error it gets, then a summary
 *   mps_probe fault [HOLD_S]   a kernel that writes to an illegal address (the fake's
 *                              fg_illegal_address); prints what the launch, the synchronize and the
 *                              next call return; stays alive HOLD_S seconds (default 1)
 *   mps_probe hold SECONDS     stays alive SECONDS (with PROBE_ALLOC_MIB: a process of its slice)
 * PROBE_ALLOC_MIB=N: N MiB allocated after cuInit, before the mode (an application's memory: its
 * slot in the slice's usage region, as tests/k8s/test_dra_appxid.sh needs).
 * Before cuInit, as an application in a slice may: PROBE_SETENV_PCT=P does
 * setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", P), PROBE_UNSET_PIPE=1 unsetenv("CUDA_MPS_PIPE_DIRECTORY").
 * Every mode prints first "init=<CUresult> sms=<N> intercepted=0|1" (intercepted: whether
 * cuGetProcAddress_v2's cuLaunchKernel lives in libgpuslice-vgpu.so).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "abi/cuda.h"

static double now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int in_vgpu(void *fn)
{
        Dl_info info;
        return fn != NULL && dladdr(fn, &info) != 0 && info.dli_fname != NULL &&
               strstr(info.dli_fname, "gpuslice-vgpu") != NULL;
}

static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                          ".visible .entry fg_spin_100us()\n{\n\tret;\n}\n"
                          ".visible .entry fg_illegal_address()\n{\n\tret;\n}\n";

int main(int argc, char **argv)
{
        const char *mode = argc > 1 ? argv[1] : "sms";
        if (getenv("PROBE_SETENV_PCT") != NULL)
                setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", getenv("PROBE_SETENV_PCT"), 1);
        if (getenv("PROBE_UNSET_PIPE") != NULL)
                unsetenv("CUDA_MPS_PIPE_DIRECTORY");
        CUdevice dev;
        CUcontext ctx;
        CUmodule mod;
        CUfunction spin, wild;
        int sms = 0;
        CUresult rc = cuInit(0);
        if (rc == CUDA_SUCCESS && (cuDeviceGet(&dev, 0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
                                   cuCtxSetCurrent(ctx) != CUDA_SUCCESS ||
                                   cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev) != CUDA_SUCCESS ||
                                   cuModuleLoadData(&mod, ptx) != CUDA_SUCCESS ||
                                   cuModuleGetFunction(&spin, mod, "fg_spin_100us") != CUDA_SUCCESS ||
                                   cuModuleGetFunction(&wild, mod, "fg_illegal_address") != CUDA_SUCCESS))
                rc = CUDA_ERROR_UNKNOWN;
        gs_cuLaunchKernel_fn launch = NULL;
        CUdriverProcAddressQueryResult st;
        if (rc == CUDA_SUCCESS && cuGetProcAddress_v2("cuLaunchKernel", (void **)&launch, 13000, 0, &st) != CUDA_SUCCESS)
                launch = NULL;
        printf("init=%d sms=%d intercepted=%d\n", (int)rc, sms, in_vgpu((void *)launch));
        fflush(stdout);
        if (rc != CUDA_SUCCESS || launch == NULL)
                return 1;
        CUdeviceptr held;
        if (getenv("PROBE_ALLOC_MIB") != NULL &&
            cuMemAlloc_v2(&held, (size_t)atoi(getenv("PROBE_ALLOC_MIB")) << 20) != CUDA_SUCCESS) {
                printf("alloc failed\n");
                return 1;
        }
        if (strcmp(mode, "hold") == 0) {
                usleep((useconds_t)((argc > 2 ? atof(argv[2]) : 1) * 1e6));
                return 0;
        }
        if (strcmp(mode, "serve") == 0) {
                double secs = argc > 2 ? atof(argv[2]) : 2, t0 = now_ms();
                long n = 0, bad = 0;
                CUresult last = CUDA_SUCCESS;
                while (now_ms() - t0 < secs * 1e3) {
                        CUresult l = launch(spin, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
                        CUresult s = cuCtxSynchronize();
                        CUresult r = l != CUDA_SUCCESS ? l : s;
                        n++;
                        bad += r != CUDA_SUCCESS;
                        if (r != last) {
                                printf("request %ld: %d\n", n, (int)r);
                                fflush(stdout);
                                last = r;
                        }
                        usleep(20000);
                }
                printf("served requests=%ld failed=%ld last=%d\n", n, bad, (int)last);
                return bad ? 2 : 0;
        }
        if (strcmp(mode, "fault") == 0) {
                double hold = argc > 2 ? atof(argv[2]) : 1;
                CUresult l = launch(wild, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
                CUresult s = cuCtxSynchronize();
                CUdeviceptr p;
                CUresult m = cuMemAlloc_v2(&p, 4096);
                printf("launch=%d synchronize=%d next=%d\n", (int)l, (int)s, (int)m);
                fflush(stdout);
                usleep((useconds_t)(hold * 1e6));
                return 0;
        }
        return 0;
}
