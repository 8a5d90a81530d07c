/*
 * nvml_timing: where does NVML's start-up time go? Each phase is timed in a fresh process (fork)
 * so nothing is cached between runs: dlopen, nvmlInit_v2 vs nvmlInitWithFlags(NO_ATTACH), the
 * queries gpuslice makes, nvmlShutdown. Prints the median over ROUNDS (default 10) in ms.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "abi/nvml.h"

enum { T_DLOPEN, T_INIT, T_QUERY, T_SHUTDOWN, T_TOTAL, NT };
static const char *names[NT] = {"dlopen", "init", "queries", "shutdown", "total"};

static double now(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int one(unsigned flags, int no_attach, double t[NT])
{
        double t0 = now();
        void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!h)
                return -1;
        double t1 = now();
        gs_nvmlInit_v2_fn init = (gs_nvmlInit_v2_fn)dlsym(h, "nvmlInit_v2");
        gs_nvmlInitWithFlags_fn initf = (gs_nvmlInitWithFlags_fn)dlsym(h, "nvmlInitWithFlags");
        gs_nvmlShutdown_fn shut = (gs_nvmlShutdown_fn)dlsym(h, "nvmlShutdown");
        gs_nvmlDeviceGetCount_v2_fn count = (gs_nvmlDeviceGetCount_v2_fn)dlsym(h, "nvmlDeviceGetCount_v2");
        gs_nvmlDeviceGetHandleByIndex_v2_fn byidx = (gs_nvmlDeviceGetHandleByIndex_v2_fn)dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
        gs_nvmlDeviceGetUUID_fn uuid = (gs_nvmlDeviceGetUUID_fn)dlsym(h, "nvmlDeviceGetUUID");
        gs_nvmlDeviceGetName_fn name = (gs_nvmlDeviceGetName_fn)dlsym(h, "nvmlDeviceGetName");
        gs_nvmlDeviceGetMemoryInfo_fn mem = (gs_nvmlDeviceGetMemoryInfo_fn)dlsym(h, "nvmlDeviceGetMemoryInfo");
        gs_nvmlDeviceGetMigMode_fn mig = (gs_nvmlDeviceGetMigMode_fn)dlsym(h, "nvmlDeviceGetMigMode");
        gs_nvmlDeviceGetCudaComputeCapability_fn cc = (gs_nvmlDeviceGetCudaComputeCapability_fn)dlsym(h, "nvmlDeviceGetCudaComputeCapability");
        gs_nvmlSystemGetCudaDriverVersion_fn cuda = (gs_nvmlSystemGetCudaDriverVersion_fn)dlsym(h, "nvmlSystemGetCudaDriverVersion");
        gs_nvmlDeviceGetMinorNumber_fn minor = (gs_nvmlDeviceGetMinorNumber_fn)dlsym(h, "nvmlDeviceGetMinorNumber");
        gs_nvmlDeviceGetPciInfo_v3_fn pci = (gs_nvmlDeviceGetPciInfo_v3_fn)dlsym(h, "nvmlDeviceGetPciInfo_v3");
        gs_nvmlDeviceGetBrand_fn brand = (gs_nvmlDeviceGetBrand_fn)dlsym(h, "nvmlDeviceGetBrand");
        nvmlReturn_t rc = no_attach ? initf(flags) : init();
        if (rc != NVML_SUCCESS) {
                fprintf(stderr, "init rc %d\n", rc);
                return -1;
        }
        double t2 = now();
        unsigned n = 0;
        int bad = count(&n) != 0;
        for (unsigned i = 0; i < n; i++) {
                nvmlDevice_t d;
                char buf[96];
                nvmlMemory_t m;
                unsigned a, b;
                int x, y;
                nvmlPciInfo_t p;
                nvmlBrandType_t br;
                bad |= byidx(i, &d) != 0;
                bad |= uuid(d, buf, sizeof(buf)) != 0;
                bad |= name(d, buf, sizeof(buf)) != 0;
                bad |= mem(d, &m) != 0;
                bad |= minor(d, &a) != 0;
                bad |= pci(d, &p) != 0;
                bad |= brand(d, &br) != 0;
                bad |= cc(d, &x, &y) != 0;
                mig(d, &a, &b);
        }
        int cv;
        bad |= cuda(&cv) != 0;
        double t3 = now();
        shut();
        double t4 = now();
        t[T_DLOPEN] = t1 - t0;
        t[T_INIT] = t2 - t1;
        t[T_QUERY] = t3 - t2;
        t[T_SHUTDOWN] = t4 - t3;
        t[T_TOTAL] = t4 - t0;
        if (bad)
                fprintf(stderr, "some query failed (flags %u)\n", flags);
        return bad ? -2 : 0;
}

static int cmp(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
        int rounds = argc > 1 ? atoi(argv[1]) : 10;
        for (int mode = 0; mode < 2; mode++) {
                double all[NT][64];
                for (int r = 0; r < rounds && r < 64; r++) {
                        int fd[2];
                        if (pipe(fd) < 0)
                                return 1;
                        pid_t pid = fork();
                        if (pid == 0) {
                                double t[NT] = {0};
                                int rc = one(mode ? NVML_INIT_FLAG_NO_ATTACH : 0, mode, t);
                                if (write(fd[1], t, sizeof(t)) < 0)
                                        _exit(3);
                                _exit(rc == 0 ? 0 : 2);
                        }
                        double t[NT];
                        if (read(fd[0], t, sizeof(t)) != (ssize_t)sizeof(t))
                                return 1;
                        int st;
                        waitpid(pid, &st, 0);
                        close(fd[0]);
                        close(fd[1]);
                        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
                                printf("(%s: child status %d)\n", mode ? "no_attach" : "init_v2", st);
                        for (int k = 0; k < NT; k++)
                                all[k][r] = t[k];
                }
                printf("%-10s", mode ? "NO_ATTACH" : "init_v2");
                for (int k = 0; k < NT; k++) {
                        qsort(all[k], (size_t)rounds, sizeof(double), cmp);
                        printf("  %s %.2f", names[k], all[k][rounds / 2]);
                }
                printf("  (ms, median of %d)\n", rounds);
        }
        return 0;
}
