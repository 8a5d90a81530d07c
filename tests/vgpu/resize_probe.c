/*
 * resize_probe: a long-running CUDA driver-API program for the live resize tests
 * (test_resize.sh). Linked to libcuda.so.1 (the fake one in CI), run with libgpuslice-vgpu.so
 * preloaded. It reads commands from stdin, one a line, and answers each with one line:
 *   info               "info cuda_total=MiB cuda_free=MiB nvml_total=MiB nvml_free=MiB"
 *   alloc MIB          "alloc ok" or "alloc refused RC" (kept until `free`)
 *   free               "free N" (every allocation released)
 *   poke REGION MIB    what a hostile process of the slice can do: map its usage region and
 *                      write MIB as every device's limit and a new generation; "poke ok"
 *   quit
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "abi/cuda.h"
#include "abi/nvml.h"
#include "region/region.h"

#define MIB ((size_t)1024 * 1024)

static CUdeviceptr held[4096];
static unsigned nheld;

static void info(void)
{
        size_t f = 0, t = 0;
        cuMemGetInfo_v2(&f, &t);
        unsigned long long nt = 0, nf = 0;
        void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW);
        gs_nvmlInit_v2_fn init = h ? (gs_nvmlInit_v2_fn)dlsym(h, "nvmlInit_v2") : NULL;
        gs_nvmlDeviceGetHandleByIndex_v2_fn get = h ? (gs_nvmlDeviceGetHandleByIndex_v2_fn)dlsym(h, "nvmlDeviceGetHandleByIndex_v2") : NULL;
        gs_nvmlDeviceGetMemoryInfo_fn mem = h ? (gs_nvmlDeviceGetMemoryInfo_fn)dlsym(h, "nvmlDeviceGetMemoryInfo") : NULL;
        nvmlDevice_t dev;
        nvmlMemory_t m;
        if (init != NULL && get != NULL && mem != NULL && init() == NVML_SUCCESS && get(0, &dev) == NVML_SUCCESS &&
            mem(dev, &m) == NVML_SUCCESS) {
                nt = m.total;
                nf = m.free;
        }
        printf("info cuda_total=%zu cuda_free=%zu nvml_total=%llu nvml_free=%llu\n", t / MIB, f / MIB, nt / MIB, nf / MIB);
}

static void poke(const char *path, unsigned long long mib)
{
        int fd = open(path, O_RDWR);
        void *p = fd >= 0 ? mmap(NULL, GS_REGION_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
        if (fd >= 0)
                close(fd);
        if (p == MAP_FAILED) {
                printf("poke failed\n");
                return;
        }
        struct gs_region_file *f = p;
        for (unsigned i = 0; i < GS_REGION_MAX_DEVICES; i++)
                atomic_store(&f->hdr.limit[i], mib * MIB);
        atomic_fetch_add(&f->hdr.limits_gen, 1);
        munmap(p, GS_REGION_SIZE);
        printf("poke ok\n");
}

int main(void)
{
        CUdevice dev;
        CUcontext ctx;
        if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
            cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
                printf("FAIL setup\n");
                return 1;
        }
        setvbuf(stdout, NULL, _IOLBF, 0);
        printf("ready\n");
        char line[1024];
        while (fgets(line, sizeof(line), stdin) != NULL) {
                char path[900];
                unsigned long long mib;
                if (strncmp(line, "info", 4) == 0) {
                        info();
                } else if (sscanf(line, "alloc %llu", &mib) == 1) {
                        CUresult rc = nheld < 4096 ? cuMemAlloc_v2(&held[nheld], mib * MIB) : CUDA_ERROR_OUT_OF_MEMORY;
                        if (rc == CUDA_SUCCESS) {
                                nheld++;
                                printf("alloc ok\n");
                        } else {
                                printf("alloc refused %d\n", rc);
                        }
                } else if (strncmp(line, "free", 4) == 0) {
                        for (unsigned i = 0; i < nheld; i++)
                                cuMemFree_v2(held[i]);
                        printf("free %u\n", nheld);
                        nheld = 0;
                } else if (sscanf(line, "poke %899s %llu", path, &mib) == 2) {
                        poke(path, mib);
                } else if (strncmp(line, "quit", 4) == 0) {
                        break;
                } else {
                        printf("unknown\n");
                }
        }
        return 0;
}
