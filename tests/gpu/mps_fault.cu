// One MPS client for tests/gpu/mps_fault_check.sh and mps_slice_check.sh (runtime API, like most
// applications; PROBE_SETENV_PCT=P: setenv CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=P before any CUDA call):
//   mps_fault sms              the SMs this process is given, and one kernel run
//   mps_fault serve SECONDS    a "request" (one small kernel + synchronize) every 20 ms for SECONDS;
//                              prints every change of the error it gets, then a summary line
//   mps_fault fault [HOLD_S]   a kernel that writes to an illegal address; prints what the
//                              synchronize and the next calls return, then stays alive HOLD_S
//                              seconds (default 3) before exiting
// Each line starts with "t=<ms since start> pid=<pid>".
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double t0;
static double now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}
#define SAY(...) (printf("t=%.0f pid=%d ", now_ms() - t0, (int)getpid()), printf(__VA_ARGS__), printf("\n"), fflush(stdout))

__global__ void touch(int *p) { p[threadIdx.x] += 1; }
__global__ void wild(int *p) { p[threadIdx.x] = 1; }

static const char *err(cudaError_t e) { return e == cudaSuccess ? "no error" : cudaGetErrorString(e); }

int main(int argc, char **argv)
{
        t0 = now_ms();
        const char *mode = argc > 1 ? argv[1] : "sms";
        /* as an application may, before its first CUDA call (the runtime's cuInit) */
        if (getenv("PROBE_SETENV_PCT") != NULL)
                setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", getenv("PROBE_SETENV_PCT"), 1);
        int *d = NULL, sms = 0;
        cudaError_t e = cudaMalloc(&d, 4096);
        if (e != cudaSuccess) {
                SAY("cudaMalloc: %s (%d)", err(e), (int)e);
                return 1;
        }
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
        touch<<<1, 32>>>(d);
        e = cudaDeviceSynchronize();
        SAY("start sms=%d kernel=%s (%d) mps_pct=%s", sms, err(e), (int)e,
            getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE") ? getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE") : "(unset)");
        if (strcmp(mode, "sms") == 0)
                return e == cudaSuccess ? 0 : 1;
        if (strcmp(mode, "serve") == 0) {
                double secs = argc > 2 ? atof(argv[2]) : 10;
                long n = 0, bad = 0;
                cudaError_t last = cudaSuccess;
                while (now_ms() - t0 < secs * 1e3) {
                        touch<<<1, 32>>>(d);
                        cudaError_t l = cudaGetLastError();
                        cudaError_t s = cudaDeviceSynchronize();
                        cudaError_t r = l != cudaSuccess ? l : s;
                        n++;
                        bad += r != cudaSuccess;
                        if (r != last) {
                                SAY("request %ld: %s (%d)", n, err(r), (int)r);
                                last = r;
                        }
                        usleep(20000);
                }
                SAY("served requests=%ld failed=%ld last=%s (%d)", n, bad, err(last), (int)last);
                return bad ? 2 : 0;
        }
        if (strcmp(mode, "fault") == 0) {
                double hold = argc > 2 ? atof(argv[2]) : 3;
                wild<<<1, 32>>>((int *)0x10);
                SAY("launch: %s", err(cudaGetLastError()));
                e = cudaDeviceSynchronize();
                SAY("synchronize after the illegal write: %s (%d)", err(e), (int)e);
                int *d2 = NULL;
                e = cudaMalloc(&d2, 4096);
                SAY("cudaMalloc afterwards: %s (%d)", err(e), (int)e);
                usleep((useconds_t)(hold * 1e6));
                SAY("exiting");
                return 0;
        }
        fprintf(stderr, "usage: mps_fault sms | serve SECONDS | fault [HOLD_S]\n");
        return 2;
}
