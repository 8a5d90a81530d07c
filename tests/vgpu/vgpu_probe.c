/*
 * vgpu_probe: a CUDA driver-API program for the interposer tests. It is linked to libcuda.so.1
 * (the fake one in CI, the real one on the GPU host) and run with libgpuslice-vgpu.so preloaded.
 *   vgpu_probe quota CHUNK_MIB          allocate CHUNK_MIB chunks until refused; print the total
 *   vgpu_probe paths SIZE_MIB           every allocation path: charged while held, released after
 *   vgpu_probe meminfo                  cuMemGetInfo / cuDeviceTotalMem views, NULL arguments
 *   vgpu_probe procaddr                 cuGetProcAddress / dlsym redirection to the wrappers
 *   vgpu_probe hold MIB SECONDS         allocate MIB in 1 MiB pieces, print "held", sleep
 *   vgpu_probe churn SECONDS            allocate/free random sizes until time is up (PROBE_PROGRESS=FILE:
 *                                       the calls so far in FILE as they go, progress.h)
 *   vgpu_probe exact BYTES              "exact FREE RC RC1": cuMemGetInfo's free, then BYTES and 1 byte more
 *   vgpu_probe cycle MIB SECONDS        allocate/free MIB pieces (8 at most held) until time is up
 *   vgpu_probe untracked                free a pointer the driver never gave out
 *   vgpu_probe procs                    NVML's compute processes on device 0: "proc PID MIB" lines
 *   vgpu_probe devices                  cuInit, the device count and each device's UUID (cuDeviceGet)
 *   vgpu_probe literal [CVD]            what a program that never calls cuDeviceGet reaches with
 *                                       CUdevice 0: its UUID, total memory, the device of its
 *                                       primary and of a created context; "cuInit N" if refused.
 *                                       CVD: CUDA_VISIBLE_DEVICES set by the program itself before
 *                                       cuInit ("-" unsets it); "env V" shows it after cuInit
 * Prints "ok <check>" / "FAIL <check>" lines and exits non-zero on any FAIL.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "abi/cuda.h"
#include "abi/nvml.h"
#include "progress.h"

static int fails;
#define MIB ((size_t)1024 * 1024)
#define CHECK(cond, ...)                                                                           \
        do {                                                                                       \
                if (cond) {                                                                        \
                        printf("ok ");                                                             \
                } else {                                                                           \
                        printf("FAIL ");                                                           \
                        fails++;                                                                   \
                }                                                                                  \
                printf(__VA_ARGS__);                                                               \
                printf("\n");                                                                      \
        } while (0)

static CUcontext ctx;

static int setup(void)
{
        CUdevice dev;
        CUresult rc = cuInit(0);
        if (rc != CUDA_SUCCESS) {
                printf("FAIL cuInit: %d\n", rc);
                return -1;
        }
        if (cuDeviceGet(&dev, 0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
            cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
                printf("FAIL context\n");
                return -1;
        }
        return 0;
}

static size_t free_mem(void)
{
        size_t f = 0, t = 0;
        cuMemGetInfo_v2(&f, &t);
        return f;
}

static int quota(unsigned chunk_mib)
{
        CUdeviceptr ptrs[4096];
        unsigned n = 0;
        CUresult rc = CUDA_SUCCESS;
        while (n < 4096 && (rc = cuMemAlloc_v2(&ptrs[n], chunk_mib * MIB)) == CUDA_SUCCESS)
                n++;
        printf("allocated %u MiB in %u chunks, then %d\n", n * chunk_mib, n, rc);
        CHECK(rc == CUDA_ERROR_OUT_OF_MEMORY, "the allocation past the quota fails with CUDA_ERROR_OUT_OF_MEMORY (%d)", rc);
        for (unsigned i = 0; i < n; i++)
                cuMemFree_v2(ptrs[i]);
        return 0;
}

static void charged(const char *what, size_t before, size_t bytes)
{
        size_t now = free_mem();
        CHECK(before - now >= bytes, "%s: free memory dropped by %zu MiB (>= %zu MiB)", what, (before - now) / MIB,
              bytes / MIB);
}

static void released(const char *what, size_t before)
{
        size_t now = free_mem();
        CHECK(now == before, "%s: free memory back to %zu MiB (now %zu MiB)", what, before / MIB, now / MIB);
}

static int paths(unsigned mib)
{
        size_t sz = mib * MIB, base = free_mem();
        CUdeviceptr p;
        CHECK(cuMemAlloc_v2(&p, sz) == CUDA_SUCCESS, "cuMemAlloc_v2");
        charged("cuMemAlloc_v2", base, sz);
        cuMemFree_v2(p);
        released("cuMemFree_v2", base);

        size_t pitch = 0;
        CHECK(cuMemAllocPitch_v2(&p, &pitch, 4096, mib * 256, 4) == CUDA_SUCCESS, "cuMemAllocPitch_v2");
        charged("cuMemAllocPitch_v2", base, pitch * mib * 256);
        cuMemFree_v2(p);
        released("pitched free", base);

        CHECK(cuMemAllocManaged(&p, sz, CU_MEM_ATTACH_GLOBAL) == CUDA_SUCCESS, "cuMemAllocManaged");
        charged("cuMemAllocManaged", base, sz);
        cuMemFree_v2(p);
        released("managed free", base);

        CUmemAllocationProp prop;
        memset(&prop, 0, sizeof(prop));
        prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        prop.location.id = 0;
        size_t gran = 0;
        cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
        size_t vsz = gran != 0 ? (sz + gran - 1) / gran * gran : sz;
        CUmemGenericAllocationHandle h;
        CHECK(cuMemCreate(&h, vsz, &prop, 0) == CUDA_SUCCESS, "cuMemCreate");
        charged("cuMemCreate", base, vsz);
        cuMemRelease(h);
        released("cuMemRelease", base);

        CHECK(cuMemAllocAsync(&p, sz, NULL) == CUDA_SUCCESS, "cuMemAllocAsync");
        charged("cuMemAllocAsync", base, sz);
        cuMemFreeAsync(p, NULL);
        cuStreamSynchronize(NULL);
        released("cuMemFreeAsync", base);

        CUmemoryPool pool;
        if (cuDeviceGetDefaultMemPool(&pool, 0) == CUDA_SUCCESS) {
                CHECK(cuMemAllocFromPoolAsync(&p, sz, pool, NULL) == CUDA_SUCCESS, "cuMemAllocFromPoolAsync");
                charged("cuMemAllocFromPoolAsync", base, sz);
                cuMemFreeAsync(p, NULL);
                cuStreamSynchronize(NULL);
                cuMemPoolTrimTo(pool, 0);
                released("pool free", base);
        }

        CUDA_ARRAY_DESCRIPTOR ad = {.Width = 1024, .Height = mib * 64, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 4};
        CUarray arr;
        CHECK(cuArrayCreate_v2(&arr, &ad) == CUDA_SUCCESS, "cuArrayCreate_v2");
        charged("cuArrayCreate_v2", base, sz);
        cuArrayDestroy(arr);
        released("cuArrayDestroy", base);

        CUDA_ARRAY3D_DESCRIPTOR d3 = {.Width = 256, .Height = 256, .Depth = mib * 4, .Format = CU_AD_FORMAT_FLOAT,
                                      .NumChannels = 1};
        CHECK(cuArray3DCreate_v2(&arr, &d3) == CUDA_SUCCESS, "cuArray3DCreate_v2");
        charged("cuArray3DCreate_v2", base, sz);
        cuArrayDestroy(arr);
        released("3D cuArrayDestroy", base);

        CUmipmappedArray mm;
        CUDA_ARRAY3D_DESCRIPTOR dm = {.Width = 1024, .Height = 256 * mib, .Depth = 0, .Format = CU_AD_FORMAT_FLOAT,
                                      .NumChannels = 1};
        CHECK(cuMipmappedArrayCreate(&mm, &dm, 4) == CUDA_SUCCESS, "cuMipmappedArrayCreate");
        charged("cuMipmappedArrayCreate", base, sz);
        cuMipmappedArrayDestroy(mm);
        released("cuMipmappedArrayDestroy", base);
        return 0;
}

static int meminfo(void)
{
        size_t f = 0, t = 0, tm = 0;
        CHECK(cuMemGetInfo_v2(&f, &t) == CUDA_SUCCESS, "cuMemGetInfo_v2: free %zu MiB, total %zu MiB", f / MIB, t / MIB);
        const char *q = getenv("EXPECT_TOTAL_MIB");
        if (q != NULL)
                CHECK(t == strtoull(q, NULL, 10) * MIB, "total is the quota (%s MiB)", q);
        CHECK(f <= t, "free <= total");
        CHECK(cuMemGetInfo_v2(NULL, &t) == CUDA_SUCCESS, "cuMemGetInfo_v2(NULL, &total) does not crash");
        CHECK(cuMemGetInfo_v2(&f, NULL) == CUDA_SUCCESS, "cuMemGetInfo_v2(&free, NULL) does not crash");
        CHECK(cuDeviceTotalMem_v2(&tm, 0) == CUDA_SUCCESS && tm == t, "cuDeviceTotalMem_v2 = total (%zu MiB)", tm / MIB);
        /* The CUDA 2.x ABI's cuMemGetInfo writes unsigned int (32-bit) sizes. The real driver
         * refuses it in a 64-bit process (tests/gpu/cuda-probe.real.txt, mem_get_info.legacy: 201),
         * and so does the interposer, passing the driver's answer on. Where a driver answers
         * (FAKEGPU_LEGACY_MEMINFO=1), the interposer gives the same view as cuMemGetInfo_v2, each
         * value saturated at UINT_MAX (4 GiB - 1) where it does not fit, never wrapped, as the real
         * driver's cuDeviceTotalMem of the same ABI saturates (total_mem.legacy).
         * EXPECT_LEGACY_CLAMP=1: the view is above 4 GiB (a quota that large), so the saturation
         * itself is what is checked. */
        unsigned int f32 = 0, t32 = 0;
        CUresult legacy = cuMemGetInfo(&f32, &t32);
        if (getenv("FAKEGPU_LEGACY_MEMINFO") == NULL) {
                CHECK(legacy == CUDA_ERROR_INVALID_CONTEXT && f32 == 0 && t32 == 0,
                      "legacy 32-bit cuMemGetInfo: the driver's refusal passed on (%d, as the real driver's 201)",
                      (int)legacy);
                return 0;
        }
        CHECK(legacy == CUDA_SUCCESS && cuMemGetInfo_v2(&f, &t) == CUDA_SUCCESS,
              "legacy 32-bit cuMemGetInfo answers where the driver does");
        size_t fc = f > 0xffffffffu ? 0xffffffffu : f, tc = t > 0xffffffffu ? 0xffffffffu : t;
        CHECK(f32 == fc && t32 == tc,
              "legacy 32-bit cuMemGetInfo: free %u, total %u = the 64-bit view (%zu, %zu) saturated at %u", f32, t32,
              f, t, 0xffffffffu);
        if (getenv("EXPECT_LEGACY_CLAMP") != NULL)
                CHECK(t > 0xffffffffu && f > 0xffffffffu && t32 == 0xffffffffu && f32 == 0xffffffffu,
                      "legacy 32-bit cuMemGetInfo clamps a view above 4 GiB (free %zu, total %zu) to %u, %u", f, t,
                      f32, t32);
        return 0;
}

static int procaddr(void)
{
        void *fn = NULL, *mine = dlsym(RTLD_DEFAULT, "cuMemAlloc_v2");
        CUdriverProcAddressQueryResult st;
        CHECK(cuGetProcAddress_v2("cuMemAlloc", &fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &st) == CUDA_SUCCESS &&
                      fn == mine,
              "cuGetProcAddress_v2(cuMemAlloc, 12000) is the wrapper of cuMemAlloc_v2");
        void *legacy = dlsym(RTLD_DEFAULT, "cuMemAlloc");
        CHECK(cuGetProcAddress_v2("cuMemAlloc", &fn, 3000, 0, &st) == CUDA_SUCCESS && fn == legacy,
              "cudaVersion 3000 gets the legacy cuMemAlloc wrapper");
        void *ptsz = dlsym(RTLD_DEFAULT, "cuMemAllocAsync_ptsz");
        CHECK(cuGetProcAddress_v2("cuMemAllocAsync", &fn, 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st) ==
                              CUDA_SUCCESS &&
                      fn == ptsz,
              "per-thread default stream gets the _ptsz wrapper");
        void *gpa = dlsym(RTLD_DEFAULT, "cuGetProcAddress_v2");
        CHECK(cuGetProcAddress_v2("cuGetProcAddress", &fn, 12000, 0, &st) == CUDA_SUCCESS && fn == gpa,
              "cuGetProcAddress itself resolves to the wrapper");
        void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        CHECK(h != NULL && dlsym(h, "cuMemAlloc_v2") == mine, "dlsym(libcuda handle, cuMemAlloc_v2) is the wrapper");
        CHECK(h != NULL && dlsym(h, "cuMemcpyHtoD_v2") != NULL && dlsym(h, "cuMemcpyHtoD_v2") != dlsym(RTLD_DEFAULT, "dlsym"),
              "unhooked names resolve to the driver");
        /* RTLD_NEXT is relative to the caller (this program): the next definition is the
         * preloaded interposer's. Were the stub to change the caller, it would be the driver's. */
        CHECK(dlsym(RTLD_NEXT, "cuMemAlloc_v2") == mine, "dlsym(RTLD_NEXT) stays relative to the caller");
        /* glibc's dlvsym never matches an unversioned definition (the driver's are unversioned):
         * ours must answer the same, not invent a wrapper. */
        CHECK(h != NULL && dlvsym(h, "cuMemAlloc_v2", "CUDA_ANY") == NULL,
              "dlvsym(libcuda handle, cuMemAlloc_v2, any version) is NULL, as glibc answers");
        void *real_dlsym = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
        if (real_dlsym == NULL)
                real_dlsym = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
        CHECK(real_dlsym != NULL && real_dlsym != dlsym(RTLD_DEFAULT, "dlsym"),
              "dlvsym(RTLD_NEXT, dlsym) reaches libc's dlsym past the interposer's");
        void *(*real_dlvsym)(void *, const char *, const char *) =
                (void *(*)(void *, const char *, const char *))dlvsym(RTLD_NEXT, "dlvsym", "GLIBC_2.34");
        if (real_dlvsym == NULL)
                real_dlvsym = (void *(*)(void *, const char *, const char *))dlvsym(RTLD_NEXT, "dlvsym", "GLIBC_2.2.5");
        CHECK(real_dlvsym != NULL && real_dlvsym != (void *)dlsym(RTLD_DEFAULT, "dlvsym") &&
                      dlvsym(RTLD_DEFAULT, "strlen", "GLIBC_2.2.5") != NULL &&
                      dlvsym(RTLD_DEFAULT, "strlen", "GLIBC_2.2.5") == real_dlvsym(RTLD_DEFAULT, "strlen", "GLIBC_2.2.5"),
              "dlvsym of other names is libc's own dlvsym's answer");
        CUresult rc = cuGetProcAddress_v2("cuNoSuchFunction", &fn, 12000, 0, &st);
        CHECK(rc != CUDA_SUCCESS || st != CU_GET_PROC_ADDRESS_SUCCESS,
              "an unknown symbol is reported as not found (rc %d, status %d)", rc, st);
        return 0;
}

static void print_uuid(const char *what, CUdevice d)
{
        CUuuid u;
        if (cuDeviceGetUuid_v2(&u, d) != CUDA_SUCCESS) {
                printf("%s none\n", what);
                return;
        }
        const unsigned char *b = (const unsigned char *)u.bytes;
        printf("%s GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x\n", what, b[0], b[1], b[2],
               b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

/* CUdevice 0 as a literal, the way programs that skip cuDeviceGet use it. */
static int literal(const char *cvd)
{
        if (cvd != NULL && strcmp(cvd, "-") == 0)
                unsetenv("CUDA_VISIBLE_DEVICES");
        else if (cvd != NULL)
                setenv("CUDA_VISIBLE_DEVICES", cvd, 1);
        CUresult rc = cuInit(0);
        const char *env = getenv("CUDA_VISIBLE_DEVICES");
        printf("env %s\n", env == NULL ? "unset" : *env == '\0' ? "empty" : env);
        if (rc != CUDA_SUCCESS) {
                printf("cuInit %d\n", rc);
                return 3;
        }
        int n = -1;
        cuDeviceGetCount(&n);
        printf("count %d\n", n);
        print_uuid("uuid0", 0);
        size_t total = 0, f = 0;
        if (cuDeviceTotalMem_v2(&total, 0) == CUDA_SUCCESS)
                printf("total0 %zu\n", total / MIB);
        CUcontext c = NULL, c2 = NULL;
        CUdevice d = -1;
        if (cuDevicePrimaryCtxRetain(&c, 0) == CUDA_SUCCESS && cuCtxSetCurrent(c) == CUDA_SUCCESS &&
            cuCtxGetDevice(&d) == CUDA_SUCCESS) {
                print_uuid("primary0", d);
                if (cuMemGetInfo_v2(&f, &total) == CUDA_SUCCESS)
                        printf("meminfo0 %zu\n", total / MIB);
        }
        d = -1;
        if (cuCtxCreate_v2(&c2, 0, 0) == CUDA_SUCCESS && cuCtxGetDevice(&d) == CUDA_SUCCESS)
                print_uuid("created0", d);
        if (c2 != NULL)
                cuCtxDestroy_v2(c2);
        CUdevice past;
        printf("get%d %d\n", n, cuDeviceGet(&past, n));
        return 0;
}

static int hold(unsigned mib, unsigned seconds)
{
        unsigned got = 0;
        CUdeviceptr p;
        while (got < mib && cuMemAlloc_v2(&p, MIB) == CUDA_SUCCESS)
                got++;
        printf("held %u\n", got);
        fflush(stdout);
        sleep(seconds);
        return 0;
}

static int churn(unsigned seconds)
{
        CUdeviceptr p[64] = {0};
        size_t sz[64] = {0};
        time_t end = time(NULL) + seconds;
        unsigned seed = (unsigned)getpid();
        unsigned long ops = 0;
        while (time(NULL) < end) {
                int i = (int)(rand_r(&seed) % 64);
                if (p[i] != 0) {
                        cuMemFree_v2(p[i]);
                        p[i] = 0;
                } else {
                        sz[i] = (size_t)(rand_r(&seed) % 8 + 1) * MIB;
                        if (cuMemAlloc_v2(&p[i], sz[i]) != CUDA_SUCCESS)
                                p[i] = 0;
                }
                progress_note(++ops);
        }
        for (int i = 0; i < 64; i++)
                if (p[i] != 0)
                        cuMemFree_v2(p[i]);
        return 0;
}

/* Allocate and free MIB-sized pieces (whole driver pages: the driver's count is exactly ours plus
 * the context) for SECONDS, up to 8 at a time, in bursts of about 50 ms with 5 ms pauses: the
 * reconciler's measurements meanwhile must never see one allocation half-made (charged but not
 * yet the driver's, or freed but still charged). */
static int cycle(unsigned mib, unsigned seconds)
{
        CUdeviceptr p[8] = {0};
        time_t end = time(NULL) + seconds;
        for (unsigned k = 0; time(NULL) < end; k++) {
                unsigned i = k % 8;
                if (p[i] != 0) {
                        cuMemFree_v2(p[i]);
                        p[i] = 0;
                } else if (cuMemAlloc_v2(&p[i], mib * MIB) != CUDA_SUCCESS) {
                        p[i] = 0;
                }
                struct timespec now;
                clock_gettime(CLOCK_MONOTONIC, &now);
                if (now.tv_nsec % 50000000 < 100000) { /* bursts of ~50 ms, a 5 ms breath between them */
                        struct timespec ts = {0, 5000000};
                        nanosleep(&ts, NULL);
                }
        }
        for (int i = 0; i < 8; i++)
                if (p[i] != 0)
                        cuMemFree_v2(p[i]);
        return 0;
}

/* The quota to the byte: BYTES in one allocation, then one byte more (refused when BYTES was all
 * that is left). "exact FREE RC RC1": free as cuMemGetInfo says first, then the two results. */
static int exact(unsigned long long bytes)
{
        size_t f = 0, t = 0;
        cuMemGetInfo_v2(&f, &t);
        CUdeviceptr p = 0, q = 0;
        CUresult rc = bytes != 0 ? cuMemAlloc_v2(&p, (size_t)bytes) : CUDA_SUCCESS;
        CUresult rc1 = cuMemAlloc_v2(&q, 1);
        printf("exact %zu %d %d\n", f, (int)rc, (int)rc1);
        if (p != 0)
                cuMemFree_v2(p);
        if (q != 0)
                cuMemFree_v2(q);
        return 0;
}

int main(int argc, char **argv)
{
        if (argc < 2)
                return 2;
        if (strcmp(argv[1], "untracked") == 0) {
                if (setup() < 0)
                        return 1;
                CUresult rc = cuMemFree_v2((CUdeviceptr)0x123456789000ull);
                CHECK(rc == CUDA_ERROR_INVALID_VALUE, "freeing an unknown pointer reaches the driver (%d)", rc);
                return fails != 0;
        }
        if (strcmp(argv[1], "procs") == 0) {
                void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW);
                gs_nvmlInit_v2_fn init = h ? (gs_nvmlInit_v2_fn)dlsym(h, "nvmlInit_v2") : NULL;
                gs_nvmlDeviceGetHandleByIndex_v2_fn get =
                        h ? (gs_nvmlDeviceGetHandleByIndex_v2_fn)dlsym(h, "nvmlDeviceGetHandleByIndex_v2") : NULL;
                gs_nvmlDeviceGetComputeRunningProcesses_v3_fn procs =
                        h ? (gs_nvmlDeviceGetComputeRunningProcesses_v3_fn)dlsym(h, "nvmlDeviceGetComputeRunningProcesses_v3")
                          : NULL;
                nvmlDevice_t dev;
                nvmlProcessInfo_t infos[64];
                unsigned n = 64;
                if (init == NULL || get == NULL || procs == NULL || init() != NVML_SUCCESS ||
                    get(0, &dev) != NVML_SUCCESS || procs(dev, &n, infos) != NVML_SUCCESS)
                        return 1;
                for (unsigned i = 0; i < n && i < 64; i++)
                        printf("proc %u %llu\n", infos[i].pid, (unsigned long long)(infos[i].usedGpuMemory / MIB));
                return 0;
        }
        if (strcmp(argv[1], "literal") == 0)
                return literal(argc > 2 ? argv[2] : NULL);
        if (strcmp(argv[1], "totals") == 0) {
                /* each device's view: "dev <i> <uuid> total <MiB>" (cuMemGetInfo_v2 in its context)
                 * and "dev <i> over <rc>" (an allocation of 64 MiB past that total) */
                int n = -1;
                if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&n) != CUDA_SUCCESS)
                        return 1;
                for (int i = 0; i < n; i++) {
                        CUdevice d;
                        CUcontext c;
                        CUuuid u;
                        size_t f = 0, t = 0;
                        CUdeviceptr p = 0;
                        if (cuDeviceGet(&d, i) != CUDA_SUCCESS || cuDeviceGetUuid_v2(&u, d) != CUDA_SUCCESS ||
                            cuDevicePrimaryCtxRetain(&c, d) != CUDA_SUCCESS || cuCtxSetCurrent(c) != CUDA_SUCCESS ||
                            cuMemGetInfo_v2(&f, &t) != CUDA_SUCCESS)
                                return 1;
                        const unsigned char *b = (const unsigned char *)u.bytes;
                        printf("dev %d GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x total %zu\n",
                               i, b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                               b[14], b[15], t / MIB);
                        CUresult rc = cuMemAlloc_v2(&p, t + 64 * MIB);
                        printf("dev %d over %d\n", i, (int)rc);
                        if (rc == CUDA_SUCCESS)
                                cuMemFree_v2(p);
                }
                return 0;
        }
        if (strcmp(argv[1], "devices") == 0) {
                int n = -1;
                if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&n) != CUDA_SUCCESS)
                        return 1;
                printf("count %d\n", n);
                for (int i = 0; i < n; i++) {
                        CUdevice d;
                        CUuuid u;
                        if (cuDeviceGet(&d, i) != CUDA_SUCCESS || cuDeviceGetUuid_v2(&u, d) != CUDA_SUCCESS)
                                return 1;
                        const unsigned char *b = (const unsigned char *)u.bytes;
                        printf("device %d GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x\n", i,
                               b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                               b[14], b[15]);
                }
                return 0;
        }
        if (setup() < 0)
                return 1;
        if (strcmp(argv[1], "quota") == 0)
                quota(argc > 2 ? (unsigned)atoi(argv[2]) : 64);
        else if (strcmp(argv[1], "paths") == 0)
                paths(argc > 2 ? (unsigned)atoi(argv[2]) : 64);
        else if (strcmp(argv[1], "meminfo") == 0)
                meminfo();
        else if (strcmp(argv[1], "procaddr") == 0)
                procaddr();
        else if (strcmp(argv[1], "hold") == 0)
                hold(argc > 2 ? (unsigned)atoi(argv[2]) : 64, argc > 3 ? (unsigned)atoi(argv[3]) : 5);
        else if (strcmp(argv[1], "exact") == 0)
                exact(argc > 2 ? strtoull(argv[2], NULL, 10) : 0);
        else if (strcmp(argv[1], "cycle") == 0)
                cycle(argc > 2 ? (unsigned)atoi(argv[2]) : 16, argc > 3 ? (unsigned)atoi(argv[3]) : 3);
        else if (strcmp(argv[1], "churn") == 0)
                churn(argc > 2 ? (unsigned)atoi(argv[2]) : 2);
        else
                return 2;
        return fails != 0;
}
