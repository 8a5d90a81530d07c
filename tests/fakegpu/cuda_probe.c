/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuda_probe: asks libcuda.so.1 a fixed set of edge-case questions and prints one line per
 * question, "<case> <return code> [<detail>]", so the fake libcuda can be diffed against the
 * real driver. Lines that start with '~' carry measurements that differ between GPUs
 * (memory sizes, per-process usage deltas): they document the real driver and are not
 * compared. Run on the GPU host by hand or by tests/gpu/run.sh (recorded in
 * tests/gpu/cuda-probe.real.txt) and against the simulated GPU (tests/fakegpu/test_probe.sh).
 * Only device 0 is probed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <dlfcn.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define GS_CUDA_NO_PROTOTYPES
#include "abi/cuda.h"
#include "abi/nvml.h"

static void *g_cuda;
static void *g_nvml;

/* The entry points main's areas call: file-static, looked up by load_functions() in this order.
 * The green-context ones are looked up when that area starts (probe_green_contexts()). */
#define PROBE_CUDA_FUNCTIONS(X)                                                                   \
    X(cuInit) X(cuDriverGetVersion) X(cuGetErrorString) X(cuGetErrorName) X(cuGetProcAddress)     \
    X(cuDeviceGet) X(cuDeviceGetCount) X(cuDeviceGetName) X(cuDeviceTotalMem)                     \
    X(cuDeviceTotalMem_v2) X(cuDeviceGetAttribute) X(cuDeviceGetPCIBusId)                         \
    X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease_v2) X(cuDevicePrimaryCtxGetState)     \
    X(cuCtxCreate_v2) X(cuCtxDestroy_v2) X(cuCtxGetCurrent) X(cuCtxSetCurrent)                    \
    X(cuCtxPopCurrent_v2) X(cuCtxGetDevice) X(cuCtxSynchronize) X(cuMemAlloc) X(cuMemAlloc_v2)    \
    X(cuMemFree_v2) X(cuMemGetInfo) X(cuMemGetInfo_v2) X(cuMemAllocManaged)                       \
    X(cuMemAllocPitch_v2) X(cuMemAllocHost_v2) X(cuMemFreeHost) X(cuMemCreate) X(cuMemRelease)    \
    X(cuMemGetAllocationGranularity) X(cuMemAddressReserve) X(cuMemAddressFree) X(cuMemMap)       \
    X(cuMemUnmap) X(cuMemSetAccess) X(cuMemAllocAsync) X(cuMemFreeAsync) X(cuMemPoolTrimTo)       \
    X(cuDeviceGetDefaultMemPool) X(cuStreamSynchronize) X(cuArrayCreate_v2) X(cuArrayDestroy)     \
    X(cuModuleLoadData) X(cuLaunchKernel) X(cuMemcpyHtoD_v2) X(cuMemsetD8_v2) X(cuStreamCreate)   \
    X(cuStreamDestroy_v2)

#define PROBE_GREEN_FUNCTIONS(X)                                                                  \
    X(cuDeviceGetDevResource) X(cuDevResourceGenerateDesc) X(cuGreenCtxCreate)                    \
    X(cuGreenCtxDestroy) X(cuCtxFromGreenCtx) X(cuGreenCtxGetDevResource) X(cuCtxGetDevResource)

#define DECLARE(name) static gs_##name##_fn p_##name;
PROBE_CUDA_FUNCTIONS(DECLARE)
PROBE_GREEN_FUNCTIONS(DECLARE)
#define LOAD(name) p_##name = (gs_##name##_fn)dlsym(g_cuda, #name);

/* A case that crashes the library prints "crash" (SIGSEGV caught, jumped out of). */
static sigjmp_buf g_jmp;
static void on_segv(int sig)
{
    siglongjmp(g_jmp, sig);
}
#define SHOW(label, expr)                                                 \
    do {                                                                  \
        if (sigsetjmp(g_jmp, 1) == 0)                                     \
            printf("%-48s %d\n", label, (int)(expr));                     \
        else                                                              \
            printf("%-48s crash\n", label);                               \
    } while (0)

static gs_nvmlDeviceGetComputeRunningProcesses_v3_fn p_procs;
static nvmlDevice_t g_nvdev;

/* Bytes NVML reports for this process on device 0 (0 if none / no NVML). */
static unsigned long long nvml_own_used(void)
{
    nvmlProcessInfo_t infos[64];
    unsigned n = 64;

    if (p_procs == NULL || g_nvdev == NULL || p_procs(g_nvdev, &n, infos) != NVML_SUCCESS)
        return 0;
    for (unsigned i = 0; i < n; i++)
        if (infos[i].pid == (unsigned)getpid())
            return infos[i].usedGpuMemory;
    return 0;
}

static void nvml_open(void)
{
    gs_nvmlInit_v2_fn init;
    gs_nvmlDeviceGetHandleByIndex_v2_fn by_index;

    g_nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    if (g_nvml == NULL)
        return;
    init = (gs_nvmlInit_v2_fn)dlsym(g_nvml, "nvmlInit_v2");
    by_index = (gs_nvmlDeviceGetHandleByIndex_v2_fn)dlsym(g_nvml, "nvmlDeviceGetHandleByIndex_v2");
    p_procs = (gs_nvmlDeviceGetComputeRunningProcesses_v3_fn)dlsym(g_nvml, "nvmlDeviceGetComputeRunningProcesses_v3");
    if (init == NULL || by_index == NULL || init() != NVML_SUCCESS || by_index(0, &g_nvdev) != NVML_SUCCESS)
        g_nvdev = NULL;
}

static const char *which(void *pfn)
{
    static char buf[128];
    Dl_info info;

    if (pfn == NULL)
        return "NULL";
    if (dladdr(pfn, &info) == 0 || info.dli_sname == NULL)
        return "?";
    snprintf(buf, sizeof(buf), "%s", info.dli_sname);
    return buf;
}

/* cuGetProcAddress_v2 answer: rc, status, and the symbol it resolved to. */
static void proc(const char *label, const char *sym, int ver, unsigned long long flags)
{
    gs_cuGetProcAddress_v2_fn gpa = (gs_cuGetProcAddress_v2_fn)dlsym(g_cuda, "cuGetProcAddress_v2");
    void *pfn = (void *)1;
    CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)77;
    CUresult rc = gpa(sym, &pfn, ver, flags, &st);

    printf("%-48s %d status=%d %s\n", label, (int)rc, (int)st, pfn == (void *)1 ? "unset" : which(pfn));
}

#define MiB(x) ((unsigned long long)(x) >> 20)

/* Green contexts: cuDevSmResourceSplitByCount, looked up by probe_green_contexts() */
static gs_cuDevSmResourceSplitByCount_fn p_split;

/* A CUdevResource as "SMs/minSmPartitionSize/smCoscheduledAlignment", "type=N" for a type other
 * than SM, "zero" when all zero, "unset" when still the 0xab filling. */
static const char *res_text(const CUdevResource *r, char *buf, size_t n)
{
    static CUdevResource zero, filled;

    memset(&filled, 0xab, sizeof(filled));
    if (memcmp(r, &zero, sizeof(*r)) == 0)
        return "zero";
    if (memcmp(r, &filled, sizeof(*r)) == 0)
        return "unset";
    if (r->type != CU_DEV_RESOURCE_TYPE_SM)
        snprintf(buf, n, "type=%d", (int)r->type);
    else
        snprintf(buf, n, "%u/%u/%u", r->sm.smCount, r->sm.minSmPartitionSize, r->sm.smCoscheduledAlignment);
    return buf;
}

/* cuDevSmResourceSplitByCount(groups, &n = ask, input, &remaining, flags, minCount): rc, n, the
 * groups run-length encoded ("15*8/0/0" = 15 groups of 8 SMs, minimum 0, alignment 0), the
 * remaining, and whether the first group past n was left alone. */
static void split(const char *label, const CUdevResource *input, unsigned ask, unsigned flags, unsigned min_count)
{
    static CUdevResource g[40], rem;
    static unsigned nb;
    static volatile int rc;
    static char line[512], a[64], b[64];
    static size_t len;

    memset(g, 0xab, sizeof(g));
    len = 0;
    memset(&rem, 0xab, sizeof(rem));
    nb = ask;
    if (sigsetjmp(g_jmp, 1) != 0) {
        printf("%-48s crash\n", label);
        return;
    }
    rc = p_split(g, &nb, input, &rem, flags, min_count);
    line[0] = 0;
    for (unsigned i = 0, run = 0; i < nb && i < ask && i < 40; i++) {
        run++;
        if (i + 1 < nb && i + 1 < ask && i + 1 < 40 &&
            strcmp(res_text(&g[i], a, sizeof(a)), res_text(&g[i + 1], b, sizeof(b))) == 0)
            continue;
        len += (size_t)snprintf(line + len, sizeof(line) - len, "%s%u*%s", len ? "," : "", run,
                                res_text(&g[i], a, sizeof(a)));
        run = 0;
        if (len >= sizeof(line))
            break;
    }
    printf("%-48s %d n=%u groups=%s rem=%s next=%s\n", label, (int)rc, nb, line[0] ? line : "-",
           res_text(&rem, a, sizeof(a)), nb < ask && nb < 40 ? res_text(&g[nb], b, sizeof(b)) : "-");
}

static void load_functions(void)
{
    PROBE_CUDA_FUNCTIONS(LOAD)
}

/* What the areas below share, one after the other as main runs them (static: kept across the
 * siglongjmp of a crashing case). Declared after the helpers above, whose locals reuse these
 * short names. */
static int v = 0, n = 0, a = 0;
static unsigned flags = 0;
static CUdevice dev = -1;
static CUcontext ctx = NULL, ctx2 = NULL;
static CUdeviceptr p = 0, p2 = 0;
static const char *s = NULL;
static char name[256];
static size_t fr = 0, tot = 0, sz = 0;
static unsigned ufr = 0, utot = 0, u32 = 0;
static unsigned long long base;

/* before cuInit */
static void probe_before_init(void)
{
    SHOW("driver_version.before_init", p_cuDriverGetVersion(&v));
    SHOW("driver_version.null", p_cuDriverGetVersion(NULL));
    SHOW("device_count.before_init", p_cuDeviceGetCount(&n));
    SHOW("device_get.before_init", p_cuDeviceGet(&dev, 0));
    SHOW("ctx_get_current.before_init", p_cuCtxGetCurrent(&ctx));
    SHOW("mem_alloc.before_init", p_cuMemAlloc_v2(&p, 1));
    proc("proc.cuInit.before_init", "cuInit", 13000, 0);
    SHOW("error_string.0", p_cuGetErrorString(CUDA_SUCCESS, &s));
    printf("%-48s %s\n", "error_string.0.text", s ? s : "NULL");
    s = (const char *)1;
    SHOW("error_string.bad", p_cuGetErrorString((CUresult)12345, &s));
    printf("%-48s %s\n", "error_string.bad.text", s == NULL ? "NULL" : s == (const char *)1 ? "unset" : s);
    SHOW("error_string.null", p_cuGetErrorString(CUDA_SUCCESS, NULL));
    p_cuGetErrorName(CUDA_ERROR_CONTEXT_IS_DESTROYED, &s);
    printf("%-48s %s\n", "error_name.709", s ? s : "NULL");
    p_cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &s);
    printf("%-48s %s\n", "error_string.2", s ? s : "NULL");
    p_cuGetErrorString(CUDA_ERROR_INVALID_VALUE, &s);
    printf("%-48s %s\n", "error_string.1", s ? s : "NULL");
    p_cuGetErrorString(CUDA_ERROR_NOT_INITIALIZED, &s);
    printf("%-48s %s\n", "error_string.3", s ? s : "NULL");
    p_cuGetErrorString(CUDA_ERROR_INVALID_CONTEXT, &s);
    printf("%-48s %s\n", "error_string.201", s ? s : "NULL");
}

/* Descriptors this process has open: the driver's share of a process's descriptor table, whose
 * growth past 64 entries in a process of threads waits for an RCU grace period (the interposer
 * grows it first: src/vgpu/arbiter.h, gs_arb_reserve_fds). -1 without /proc. */
static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL)
        return -1;
    int k = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        k += e->d_name[0] != '.';
    closedir(d);
    return k - 1; /* (less the listing's own) */
}

/* init, devices */
static void probe_init(void)
{
    int fds = open_fds();
    SHOW("init.flags1", p_cuInit(1));
    SHOW("init", p_cuInit(0));
    SHOW("init.again", p_cuInit(0));
    int now = open_fds();
    printf("~%-47s %d (of %d open)\n", "fds.opened_by_init", now - fds, now);
    SHOW("device_count.null", p_cuDeviceGetCount(NULL));
    SHOW("device_count", p_cuDeviceGetCount(&n));
    SHOW("device_get.null", p_cuDeviceGet(NULL, 0));
    SHOW("device_get.bad", p_cuDeviceGet(&dev, n));
    SHOW("device_get.neg", p_cuDeviceGet(&dev, -1));
    SHOW("device_get", p_cuDeviceGet(&dev, 0));
    SHOW("device_name.short", p_cuDeviceGetName(name, 4, 0));
    printf("%-48s %zu\n", "device_name.short.len", strnlen(name, 4));
    /* cuDeviceGetName(name, 0, dev) kills the real driver 580.159.04 (memory corruption): not probed. */
    SHOW("device_name.bad_dev", p_cuDeviceGetName(name, 256, 99));
    SHOW("attr.bad", p_cuDeviceGetAttribute(&a, (CUdevice_attribute)100000, 0));
    SHOW("attr.null", p_cuDeviceGetAttribute(NULL, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0));
    SHOW("attr.bad_dev", p_cuDeviceGetAttribute(&a, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 99));
    p_cuDeviceGetAttribute(&a, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0);
    printf("%-48s %d\n", "attr.warp_size", a);
    SHOW("busid.short", p_cuDeviceGetPCIBusId(name, 4, 0));
    SHOW("busid", p_cuDeviceGetPCIBusId(name, sizeof(name), 0));
    printf("~%-47s %s\n", "busid.text", name);
    SHOW("total_mem_v2", p_cuDeviceTotalMem_v2(&tot, 0));
    SHOW("total_mem.legacy", p_cuDeviceTotalMem(&u32, 0));
    printf("~%-47s v2=%zu legacy=%u\n", "total_mem.values", tot, u32);
    printf("%-48s %d\n", "total_mem.legacy_clamped", u32 == 0xFFFFFFFFu || (size_t)u32 == tot);
}

/* cuGetProcAddress_v2: which symbol each name, version and flags resolve to */
static void probe_get_proc_address(void)
{
    proc("proc.cuMemAlloc.13000", "cuMemAlloc", 13000, 0);
    proc("proc.cuMemAlloc.3020", "cuMemAlloc", 3020, 0);
    proc("proc.cuMemAlloc.3010", "cuMemAlloc", 3010, 0);
    proc("proc.cuMemAlloc.2000", "cuMemAlloc", 2000, 0);
    proc("proc.cuMemAlloc.1000", "cuMemAlloc", 1000, 0);
    proc("proc.cuMemAlloc_v2.13000", "cuMemAlloc_v2", 13000, 0);
    proc("proc.cuMemGetInfo.12000", "cuMemGetInfo", 12000, 0);
    proc("proc.cuCtxCreate.11030", "cuCtxCreate", 11030, 0);
    proc("proc.cuCtxCreate.12000", "cuCtxCreate", 12000, 0);
    proc("proc.cuCtxCreate.13000", "cuCtxCreate", 13000, 0);
    proc("proc.cuCtxGetDevice.12080", "cuCtxGetDevice", 12080, 0);
    proc("proc.cuCtxGetDevice.13000", "cuCtxGetDevice", 13000, 0);
    proc("proc.cuCtxDestroy.3020", "cuCtxDestroy", 3020, 0);
    proc("proc.cuCtxDestroy.4000", "cuCtxDestroy", 4000, 0);
    proc("proc.cuDeviceGetUuid.11030", "cuDeviceGetUuid", 11030, 0);
    proc("proc.cuDeviceGetUuid.11040", "cuDeviceGetUuid", 11040, 0);
    proc("proc.cuDevicePrimaryCtxRelease.10020", "cuDevicePrimaryCtxRelease", 10020, 0);
    proc("proc.cuDevicePrimaryCtxRelease.11000", "cuDevicePrimaryCtxRelease", 11000, 0);
    proc("proc.cuGetProcAddress.11030", "cuGetProcAddress", 11030, 0);
    proc("proc.cuGetProcAddress.12000", "cuGetProcAddress", 12000, 0);
    proc("proc.cuMemAllocAsync.11010", "cuMemAllocAsync", 11010, 0);
    proc("proc.cuMemAllocAsync.11020", "cuMemAllocAsync", 11020, 0);
    proc("proc.cuMemAllocAsync.ptds", "cuMemAllocAsync", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    proc("proc.cuMemAllocAsync.legacy", "cuMemAllocAsync", 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM);
    proc("proc.cuLaunchKernel.ptds", "cuLaunchKernel", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    proc("proc.cuLaunchKernel.default", "cuLaunchKernel", 13000, 0);
    proc("proc.cuLaunchKernel.both_flags", "cuLaunchKernel", 13000, 3);
    proc("proc.cuStreamSynchronize.ptds", "cuStreamSynchronize", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    proc("proc.cuMemcpyHtoD.ptds", "cuMemcpyHtoD", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    proc("proc.cuMemcpyHtoD.default", "cuMemcpyHtoD", 13000, 0);
    proc("proc.cuMemsetD8.ptds", "cuMemsetD8", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    proc("proc.cuMemAlloc.ptds", "cuMemAlloc", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    proc("proc.cuMemFree.13000", "cuMemFree", 13000, 0);
    proc("proc.cuArrayCreate.13000", "cuArrayCreate", 13000, 0);
    proc("proc.cuStreamDestroy.13000", "cuStreamDestroy", 13000, 0);
    proc("proc.cuMemCreate.10010", "cuMemCreate", 10010, 0);
    proc("proc.cuMemCreate.10020", "cuMemCreate", 10020, 0);
    proc("proc.unknown", "cuFakegpuNoSuchFunction", 13000, 0);
    proc("proc.unknown.old", "cuFakegpuNoSuchFunction", 2000, 0);
    proc("proc.empty", "", 13000, 0);
    proc("proc.future_version", "cuMemAlloc", 99000, 0);
    proc("proc.zero_version", "cuMemAlloc", 0, 0);
    proc("proc.negative_version", "cuMemAlloc", -1, 0);
    proc("proc.bad_flags", "cuMemAlloc", 13000, 4);
}

/* cuGetProcAddress_v2 with NULL arguments, and the v1 entry point */
static void probe_get_proc_address_edges(void)
{
    gs_cuGetProcAddress_v2_fn gpa = (gs_cuGetProcAddress_v2_fn)dlsym(g_cuda, "cuGetProcAddress_v2");
    void *pfn = NULL;

    SHOW("proc.null_symbol", gpa(NULL, &pfn, 13000, 0, NULL));
    SHOW("proc.null_pfn", gpa("cuMemAlloc", NULL, 13000, 0, NULL));
    SHOW("proc.null_status", gpa("cuMemAlloc", &pfn, 13000, 0, NULL));
    pfn = (void *)1;
    CUresult r = p_cuGetProcAddress("cuFakegpuNoSuchFunction", &pfn, 13000, 0);

    printf("%-48s %d %s\n", "proc.v1.unknown", (int)r, pfn == (void *)1 ? "unset" : which(pfn));
    pfn = (void *)1;
    r = p_cuGetProcAddress("cuMemAllocAsync", &pfn, 11010, 0);
    printf("%-48s %d %s\n", "proc.v1.version_not_sufficient", (int)r, pfn == (void *)1 ? "unset" : which(pfn));
    r = p_cuGetProcAddress("cuMemAlloc", &pfn, 13000, 0);
    /* the real v1 hands out internal addresses (no symbol): only NULL / non-NULL is compared */
    printf("%-48s %d %s\n", "proc.v1.cuMemAlloc", (int)r, pfn == NULL ? "NULL" : "non-NULL");
}

/* contexts */
static void probe_contexts(void)
{
    SHOW("ctx_get_current.none", p_cuCtxGetCurrent(&ctx));
    printf("%-48s %d\n", "ctx_get_current.none.is_null", ctx == NULL);
    SHOW("ctx_get_current.null", p_cuCtxGetCurrent(NULL));
    SHOW("ctx_get_device.no_ctx", p_cuCtxGetDevice(&dev));
    SHOW("ctx_synchronize.no_ctx", p_cuCtxSynchronize());
    SHOW("mem_alloc.no_ctx", p_cuMemAlloc_v2(&p, 1 << 20));
    SHOW("mem_get_info.no_ctx", p_cuMemGetInfo_v2(&fr, &tot));
    SHOW("mem_free.no_ctx", p_cuMemFree_v2((CUdeviceptr)0x700000000000ULL));
    SHOW("primary_state.bad_dev", p_cuDevicePrimaryCtxGetState(99, &flags, &a));
    SHOW("primary_state", p_cuDevicePrimaryCtxGetState(0, &flags, &a));
    printf("%-48s %d\n", "primary_state.active", a);
    nvml_open();
    base = nvml_own_used();
    printf("~%-47s %llu\n", "nvml.own_used.before_ctx_MiB", MiB(base));
    int fds = open_fds();
    SHOW("primary_release.not_retained", p_cuDevicePrimaryCtxRelease_v2(0));
    SHOW("primary_retain.null", p_cuDevicePrimaryCtxRetain(NULL, 0));
    SHOW("primary_retain.bad_dev", p_cuDevicePrimaryCtxRetain(&ctx, 99));
    SHOW("primary_retain", p_cuDevicePrimaryCtxRetain(&ctx, 0));
    p_cuDevicePrimaryCtxGetState(0, &flags, &a);
    printf("%-48s %d\n", "primary_state.active.after_retain", a);
    int now = open_fds();
    printf("~%-47s %d (of %d open)\n", "fds.opened_by_primary_retain", now - fds, now);
    printf("~%-47s %llu\n", "nvml.own_used.after_retain_MiB", MiB(nvml_own_used()));
    SHOW("mem_alloc.retained_not_current", p_cuMemAlloc_v2(&p, 1 << 20));
    SHOW("ctx_set_current", p_cuCtxSetCurrent(ctx));
    SHOW("ctx_get_device", p_cuCtxGetDevice(&dev));
    SHOW("ctx_synchronize", p_cuCtxSynchronize());
    base = nvml_own_used();
    printf("~%-47s %llu\n", "nvml.own_used.ctx_current_MiB", MiB(base));
    SHOW("mem_get_info", p_cuMemGetInfo_v2(&fr, &tot));
    SHOW("mem_get_info.null_free", p_cuMemGetInfo_v2(NULL, &tot));
    SHOW("mem_get_info.null_total", p_cuMemGetInfo_v2(&fr, NULL));
    printf("~%-47s free=%zu total=%zu\n", "mem_get_info.values", fr, tot);
    SHOW("mem_get_info.legacy", p_cuMemGetInfo(&ufr, &utot));
    printf("~%-47s free=%u total=%u\n", "mem_get_info.legacy.values", ufr, utot);
}

/* linear memory */
static void probe_linear_memory(void)
{
    SHOW("mem_alloc.zero", p_cuMemAlloc_v2(&p, 0));
    SHOW("mem_alloc.null", p_cuMemAlloc_v2(NULL, 1));
    SHOW("mem_alloc.huge", p_cuMemAlloc_v2(&p, (size_t)1 << 50));
    base = nvml_own_used();
    SHOW("mem_alloc.1byte", p_cuMemAlloc_v2(&p, 1));
    printf("~%-47s %llu (ptr %% 2MiB = %llu)\n", "nvml.delta.1byte_MiB", MiB(nvml_own_used() - base),
           p % (2ULL << 20));
    {
        CUdeviceptr ps[16];
        unsigned long long b2 = nvml_own_used();

        for (int i = 0; i < 16; i++)
            p_cuMemAlloc_v2(&ps[i], 1000);
        printf("~%-47s %llu (ptr gap %lld)\n", "nvml.delta.16x1000bytes_MiB", MiB(nvml_own_used() - b2),
               (long long)(ps[1] - ps[0]));
        for (int i = 0; i < 16; i++)
            p_cuMemFree_v2(ps[i]);
        b2 = nvml_own_used();
        p_cuMemAlloc_v2(&ps[0], 3 << 20);
        printf("~%-47s %llu\n", "nvml.delta.3MiB_MiB", MiB(nvml_own_used() - b2));
        p_cuMemAlloc_v2(&ps[1], 64 << 20);
        printf("~%-47s %llu\n", "nvml.delta.3MiB+64MiB_MiB", MiB(nvml_own_used() - b2));
        p_cuMemGetInfo_v2(&fr, &tot);
        printf("~%-47s free=%zu\n", "mem_get_info.after_67MiB", fr);
        SHOW("mem_free.3MiB", p_cuMemFree_v2(ps[0]));
        SHOW("mem_free.64MiB", p_cuMemFree_v2(ps[1]));
        SHOW("mem_free.double", p_cuMemFree_v2(ps[1]));
        SHOW("mem_free.interior", p_cuMemFree_v2(p + 16));
    }
    SHOW("mem_free.zero", p_cuMemFree_v2(0));
    SHOW("mem_free.unknown", p_cuMemFree_v2((CUdeviceptr)0x12345000ULL));
    SHOW("memcpy_htod.ok", p_cuMemcpyHtoD_v2(p, name, 1));
    SHOW("memcpy_htod.zero_bytes", p_cuMemcpyHtoD_v2(p, name, 0));
    SHOW("memset.ok", p_cuMemsetD8_v2(p, 0, 1));
    SHOW("mem_free.1byte", p_cuMemFree_v2(p));
    {
        gs_CUdeviceptr_v1 lp = 0;

        CUresult r = p_cuMemAlloc(&lp, 1 << 20);
        printf("%-48s %d\n", "mem_alloc.legacy", (int)r);
        printf("~%-47s 0x%x\n", "mem_alloc.legacy.ptr", lp);
    }
    SHOW("alloc_pitch", p_cuMemAllocPitch_v2(&p2, &sz, 1000, 10, 4));
    printf("~%-47s pitch=%zu\n", "alloc_pitch.value", sz);
    SHOW("alloc_pitch.bad_elem", p_cuMemAllocPitch_v2(&p, &sz, 1000, 10, 3));
    SHOW("mem_free.pitch", p_cuMemFree_v2(p2));
    {
        void *hp = NULL;

        SHOW("alloc_host", p_cuMemAllocHost_v2(&hp, 4096));
        if (hp != NULL)
            memset(hp, 1, 4096);
        SHOW("free_host", p_cuMemFreeHost(hp));
        SHOW("free_host.unknown", p_cuMemFreeHost(name));
    }
    base = nvml_own_used();
    SHOW("alloc_managed.bad_flags", p_cuMemAllocManaged(&p, 1 << 20, 0));
    SHOW("alloc_managed", p_cuMemAllocManaged(&p, 64 << 20, CU_MEM_ATTACH_GLOBAL));
    printf("~%-47s %llu\n", "nvml.delta.managed64MiB_MiB", MiB(nvml_own_used() - base));
    memset((void *)(uintptr_t)p, 0, 4096);
    printf("%-48s 1\n", "alloc_managed.host_writable");
    SHOW("mem_free.managed", p_cuMemFree_v2(p));
}

/* VMM */
static void probe_vmm(void)
{
    CUmemAllocationProp prop;
    CUmemGenericAllocationHandle h = 0;
    CUmemAccessDesc ad;
    size_t gran = 0;

    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    SHOW("vmm.granularity", p_cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    printf("%-48s %zu\n", "vmm.granularity.min", gran);
    p_cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
    printf("%-48s %zu\n", "vmm.granularity.recommended", gran);
    SHOW("vmm.granularity.null", p_cuMemGetAllocationGranularity(NULL, &prop, 0));
    SHOW("vmm.create.unaligned", p_cuMemCreate(&h, 4096, &prop, 0));
    SHOW("vmm.create.zero", p_cuMemCreate(&h, 0, &prop, 0));
    prop.location.id = 99;
    SHOW("vmm.create.bad_dev", p_cuMemCreate(&h, 2 << 20, &prop, 0));
    prop.location.id = 0;
    base = nvml_own_used();
    SHOW("vmm.create", p_cuMemCreate(&h, 32 << 20, &prop, 0));
    printf("~%-47s %llu\n", "nvml.delta.vmm32MiB_MiB", MiB(nvml_own_used() - base));
    SHOW("vmm.reserve.unaligned", p_cuMemAddressReserve(&p, 4096, 0, 0, 0));
    SHOW("vmm.reserve", p_cuMemAddressReserve(&p, 64 << 20, 0, 0, 0));
    SHOW("vmm.map.offset", p_cuMemMap(p, 32 << 20, 2 << 20, h, 0));
    SHOW("vmm.map.too_big", p_cuMemMap(p, 64 << 20, 0, h, 0));
    SHOW("vmm.map.outside", p_cuMemMap(0x10000000ULL, 32 << 20, 0, h, 0));
    SHOW("vmm.map", p_cuMemMap(p, 32 << 20, 0, h, 0));
    SHOW("vmm.map.again", p_cuMemMap(p, 32 << 20, 0, h, 0));
    memset(&ad, 0, sizeof(ad));
    ad.location = prop.location;
    ad.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    SHOW("vmm.set_access.unmapped_range", p_cuMemSetAccess(p + (32 << 20), 32 << 20, &ad, 1));
    SHOW("vmm.set_access.count0", p_cuMemSetAccess(p, 32 << 20, &ad, 0));
    SHOW("vmm.set_access", p_cuMemSetAccess(p, 32 << 20, &ad, 1));
    SHOW("vmm.memset.after_access", p_cuMemsetD8_v2(p, 0, 1));
    SHOW("vmm.release.mapped", p_cuMemRelease(h));
    printf("~%-47s %llu\n", "nvml.delta.vmm_released_while_mapped_MiB", MiB(nvml_own_used() - base));
    SHOW("vmm.unmap.partial", p_cuMemUnmap(p, 2 << 20));
    SHOW("vmm.unmap", p_cuMemUnmap(p, 32 << 20));
    printf("~%-47s %llu\n", "nvml.delta.vmm_unmapped_MiB", MiB(nvml_own_used() - base));
    SHOW("vmm.release.again", p_cuMemRelease(h));
    SHOW("vmm.address_free.wrong_size", p_cuMemAddressFree(p, 2 << 20));
    SHOW("vmm.address_free", p_cuMemAddressFree(p, 64 << 20));
    SHOW("vmm.release.unknown", p_cuMemRelease(0x4242));
}

/* pools */
static void probe_pools(void)
{
    CUmemoryPool pool = NULL;

    SHOW("pool.default", p_cuDeviceGetDefaultMemPool(&pool, 0));
    SHOW("pool.default.bad_dev", p_cuDeviceGetDefaultMemPool(&pool, 99));
    base = nvml_own_used();
    SHOW("alloc_async", p_cuMemAllocAsync(&p, 64 << 20, NULL));
    SHOW("alloc_async.zero", p_cuMemAllocAsync(&p2, 0, NULL));
    p_cuStreamSynchronize(NULL);
    printf("~%-47s %llu\n", "nvml.delta.async64MiB_MiB", MiB(nvml_own_used() - base));
    SHOW("free_async", p_cuMemFreeAsync(p, NULL));
    SHOW("stream_sync", p_cuStreamSynchronize(NULL));
    printf("~%-47s %llu\n", "nvml.delta.async_freed_synced_MiB", MiB(nvml_own_used() - base));
    SHOW("pool.trim", p_cuMemPoolTrimTo(pool, 0));
    printf("~%-47s %llu\n", "nvml.delta.async_trimmed_MiB", MiB(nvml_own_used() - base));
    SHOW("free_async.unknown", p_cuMemFreeAsync((CUdeviceptr)0x12345000ULL, NULL));
}

/* arrays, modules, launch, streams */
static void probe_arrays_modules_streams(void)
{
    CUDA_ARRAY_DESCRIPTOR d;
    CUarray arr = NULL;
    CUmodule mod = NULL;
    static const char junk[64] = "not a cubin";
    CUstream st = NULL;

    memset(&d, 0, sizeof(d));
    d.Width = 1024;
    d.Height = 1024;
    d.Format = CU_AD_FORMAT_FLOAT;
    d.NumChannels = 4;
    base = nvml_own_used();
    SHOW("array.create", p_cuArrayCreate_v2(&arr, &d));
    printf("~%-47s %llu\n", "nvml.delta.array16MiB_MiB", MiB(nvml_own_used() - base));
    d.NumChannels = 3;
    SHOW("array.create.3ch", p_cuArrayCreate_v2(&arr, &d));
    d.NumChannels = 4;
    d.Width = 0;
    SHOW("array.create.zero_width", p_cuArrayCreate_v2(&arr, &d));
    SHOW("array.destroy", p_cuArrayDestroy(arr));
    SHOW("module.load.null", p_cuModuleLoadData(&mod, NULL));
    SHOW("module.load.junk", p_cuModuleLoadData(&mod, junk));
    SHOW("launch.null_func", p_cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    SHOW("stream.create", p_cuStreamCreate(&st, 0));
    SHOW("stream.create.bad_flags", p_cuStreamCreate(&st, 8));
    SHOW("stream.sync", p_cuStreamSynchronize(st));
    SHOW("stream.destroy", p_cuStreamDestroy_v2(st));
}

/* round 2: legacy entry points, limits, modules with a real (PTX) image, launches */
static void probe_round2(void)
{
    static const char ptx[] =
        ".version 8.0\n.target sm_50\n.address_size 64\n\n"
        ".visible .entry fakegpu_probe_kernel()\n{\n\tret;\n}\n";
    gs_cuMemAllocHost_fn p_cuMemAllocHost = (gs_cuMemAllocHost_fn)dlsym(g_cuda, "cuMemAllocHost");
    gs_cuMemFree_fn p_cuMemFree = (gs_cuMemFree_fn)dlsym(g_cuda, "cuMemFree");
    gs_cuModuleGetFunction_fn p_cuModuleGetFunction =
        (gs_cuModuleGetFunction_fn)dlsym(g_cuda, "cuModuleGetFunction");
    gs_cuModuleUnload_fn p_cuModuleUnload = (gs_cuModuleUnload_fn)dlsym(g_cuda, "cuModuleUnload");
    gs_cuDeviceGetByPCIBusId_fn p_cuDeviceGetByPCIBusId =
        (gs_cuDeviceGetByPCIBusId_fn)dlsym(g_cuda, "cuDeviceGetByPCIBusId");
    gs_cuMemPoolDestroy_fn p_cuMemPoolDestroy = (gs_cuMemPoolDestroy_fn)dlsym(g_cuda, "cuMemPoolDestroy");
    gs_cuMemAllocFromPoolAsync_fn p_cuMemAllocFromPoolAsync =
        (gs_cuMemAllocFromPoolAsync_fn)dlsym(g_cuda, "cuMemAllocFromPoolAsync");
    gs_cuMemPoolCreate_fn p_cuMemPoolCreate = (gs_cuMemPoolCreate_fn)dlsym(g_cuda, "cuMemPoolCreate");
    static void *hp;
    static CUmodule mod;
    static CUfunction fn;
    static CUdeviceptr q, q2;
    static CUmemoryPool pool, defpool;
    static CUmemPoolProps pp;
    static int dummy;
    void *params[] = { &dummy };
    void *extra[] = { NULL };

    SHOW("legacy.alloc_host", p_cuMemAllocHost(&hp, 4096));
    SHOW("legacy.mem_free", p_cuMemFree(0x1000));
    SHOW("busid.lookup.unknown", p_cuDeviceGetByPCIBusId(&dev, "0000:ff:1f.0"));
    SHOW("busid.lookup.bad", p_cuDeviceGetByPCIBusId(&dev, "junk"));
    base = nvml_own_used();
    SHOW("mem_alloc.1MiB", p_cuMemAlloc_v2(&q, 1 << 20));
    printf("~%-47s %llu\n", "nvml.delta.1MiB_MiB", MiB(nvml_own_used() - base));
    SHOW("mem_alloc.1.5MiB", p_cuMemAlloc_v2(&q2, 3 << 19));
    printf("~%-47s %llu (ptr gap %lld)\n", "nvml.delta.1MiB+1.5MiB_MiB", MiB(nvml_own_used() - base),
           (long long)(q2 - q));
    SHOW("memset.past_end_same_page", p_cuMemsetD8_v2(q, 0, (1 << 20) + 4096));
    SHOW("memcpy_htod.unknown", p_cuMemcpyHtoD_v2((CUdeviceptr)0x12345000ULL, name, 1));
    SHOW("memcpy_htod.null_src", p_cuMemcpyHtoD_v2(q, NULL, 1));
    p_cuCtxSetCurrent(NULL);
    SHOW("mem_free.known_no_ctx", p_cuMemFree_v2(q));
    p_cuCtxSetCurrent(ctx);
    p_cuMemFree_v2(q2);
    base = nvml_own_used();
    SHOW("alloc_async.1000bytes", p_cuMemAllocAsync(&q, 1000, NULL));
    SHOW("alloc_async.1000bytes.2", p_cuMemAllocAsync(&q2, 1000, NULL));
    printf("~%-47s %llu (ptr gap %lld)\n", "nvml.delta.async_2x1000bytes_MiB", MiB(nvml_own_used() - base),
           (long long)(q2 - q));
    p_cuMemFreeAsync(q, NULL);
    p_cuMemFreeAsync(q2, NULL);
    p_cuStreamSynchronize(NULL);
    p_cuDeviceGetDefaultMemPool(&defpool, 0);
    SHOW("pool.destroy.default", p_cuMemPoolDestroy(defpool));
    memset(&pp, 0, sizeof(pp));
    pp.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    pp.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    pp.location.id = 0;
    SHOW("pool.create", p_cuMemPoolCreate(&pool, &pp));
    SHOW("pool.alloc", p_cuMemAllocFromPoolAsync(&q, 4 << 20, pool, NULL));
    SHOW("pool.destroy.outstanding", p_cuMemPoolDestroy(pool));
    SHOW("pool.free_after_destroy", p_cuMemFreeAsync(q, NULL));
    p_cuStreamSynchronize(NULL);
    SHOW("array.destroy.null", p_cuArrayDestroy(NULL));
    SHOW("stream.destroy.null", p_cuStreamDestroy_v2(NULL));
    base = nvml_own_used();
    SHOW("module.load.ptx", p_cuModuleLoadData(&mod, ptx));
    printf("~%-47s %llu\n", "nvml.delta.module_ptx_MiB", MiB(nvml_own_used() - base));
    SHOW("module.get_function.unknown", p_cuModuleGetFunction(&fn, mod, "no_such_kernel"));
    SHOW("module.get_function.null_name", p_cuModuleGetFunction(&fn, mod, NULL));
    SHOW("module.get_function", p_cuModuleGetFunction(&fn, mod, "fakegpu_probe_kernel"));
    SHOW("launch.ok", p_cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
    SHOW("launch.grid0", p_cuLaunchKernel(fn, 0, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
    SHOW("launch.block2048", p_cuLaunchKernel(fn, 1, 1, 1, 2048, 1, 1, 0, NULL, NULL, NULL));
    SHOW("launch.params_and_extra", p_cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, params, extra));
    SHOW("launch.bad_stream", p_cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, (CUstream)&dummy, NULL, NULL));
    SHOW("launch.sync", p_cuCtxSynchronize());
    SHOW("module.unload", p_cuModuleUnload(mod));
    SHOW("module.unload.again", p_cuModuleUnload(mod));
    SHOW("launch.unloaded", p_cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
}

/* context creation and destruction */
static void probe_ctx_create_destroy(void)
{
    base = nvml_own_used();
    SHOW("ctx_create", p_cuCtxCreate_v2(&ctx2, 0, 0));
    printf("~%-47s %llu\n", "nvml.delta.ctx_create_MiB", MiB(nvml_own_used() - base));
    SHOW("ctx_create.bad_dev", p_cuCtxCreate_v2(&ctx2, 0, 99));
    p_cuMemAlloc_v2(&p, 64 << 20);
    SHOW("ctx_destroy.created", p_cuCtxDestroy_v2(ctx2));
    printf("~%-47s %llu\n", "nvml.delta.ctx_destroyed_with_64MiB_MiB", MiB(nvml_own_used() - base));
    SHOW("ctx_get_current.after_destroy", p_cuCtxGetCurrent(&ctx2));
    printf("%-48s %d\n", "ctx_get_current.after_destroy.is_primary", ctx2 == ctx);
    SHOW("ctx_destroy.primary", p_cuCtxDestroy_v2(ctx));
    p_cuMemAlloc_v2(&p, 64 << 20);
    base = nvml_own_used();
    SHOW("primary_release", p_cuDevicePrimaryCtxRelease_v2(0));
    printf("~%-47s %llu\n", "nvml.own_used.after_release_MiB", MiB(nvml_own_used()));
    (void)base;
    p_cuDevicePrimaryCtxGetState(0, &flags, &a);
    printf("%-48s %d\n", "primary_state.active.after_release", a);
    SHOW("ctx_get_current.after_release", p_cuCtxGetCurrent(&ctx2));
    printf("%-48s %d\n", "ctx_get_current.after_release.same", ctx2 == ctx);
    SHOW("mem_alloc.released_current", p_cuMemAlloc_v2(&p, 1 << 20));
    SHOW("ctx_get_device.released_current", p_cuCtxGetDevice(&dev));
    SHOW("ctx_synchronize.released_current", p_cuCtxSynchronize());
    SHOW("mem_get_info.released_current", p_cuMemGetInfo_v2(&fr, &tot));
    SHOW("primary_release.extra", p_cuDevicePrimaryCtxRelease_v2(0));
    {
        gs_cuDevicePrimaryCtxReset_v2_fn p_reset = (gs_cuDevicePrimaryCtxReset_v2_fn)dlsym(g_cuda, "cuDevicePrimaryCtxReset_v2");

        SHOW("primary_reset.not_active", p_reset(0));
        p_cuDevicePrimaryCtxRetain(&ctx, 0);
        p_cuMemAlloc_v2(&p, 64 << 20);
        base = nvml_own_used();
        SHOW("primary_reset.active", p_reset(0));
        printf("~%-47s %llu\n", "nvml.own_used.after_reset_MiB", MiB(nvml_own_used()));
        p_cuDevicePrimaryCtxGetState(0, &flags, &a);
        printf("%-48s %d\n", "primary_state.active.after_reset", a);
        SHOW("mem_alloc.after_reset", p_cuMemAlloc_v2(&p, 1 << 20));
        SHOW("primary_release.after_reset", p_cuDevicePrimaryCtxRelease_v2(0));
        SHOW("primary_release.after_reset.again", p_cuDevicePrimaryCtxRelease_v2(0));
    }
    SHOW("ctx_pop", p_cuCtxPopCurrent_v2(&ctx2));
    SHOW("ctx_pop.empty", p_cuCtxPopCurrent_v2(&ctx2));
    SHOW("ctx_set_current.null_empty", p_cuCtxSetCurrent(NULL));
    {
        gs_cuCtxPushCurrent_v2_fn p_push = (gs_cuCtxPushCurrent_v2_fn)dlsym(g_cuda, "cuCtxPushCurrent_v2");

        p_cuDevicePrimaryCtxRetain(&ctx, 0);
        SHOW("ctx_push.primary", p_push(ctx));
        SHOW("ctx_push.null", p_push(NULL));
        SHOW("ctx_create.pushes", p_cuCtxCreate_v2(&ctx2, 0, 0));
        SHOW("ctx_set_current.null_depth2", p_cuCtxSetCurrent(NULL));
        p_cuCtxGetCurrent(&ctx2);
        printf("%-48s %s\n", "ctx_set_current.null_depth2.now", ctx2 == NULL ? "NULL" : ctx2 == ctx ? "primary" : "created");
        SHOW("ctx_pop.after_set_null", p_cuCtxPopCurrent_v2(&ctx2));
        printf("%-48s %s\n", "ctx_pop.after_set_null.popped", ctx2 == NULL ? "NULL" : ctx2 == ctx ? "primary" : "created");
        SHOW("ctx_pop.after_set_null.again", p_cuCtxPopCurrent_v2(&ctx2));
    }
}

/* fork after init */
static void probe_fork_after_init(void)
{
    pid_t pid;

    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        int c = -1;

        printf("%-48s %d\n", "fork.child.device_count", (int)p_cuDeviceGetCount(&c));
        printf("%-48s %d\n", "fork.child.init", (int)p_cuInit(0));
        fflush(stdout);
        _exit(0);
    }
    waitpid(pid, NULL, 0);
}

/* green contexts (CUDA 12.4): SM resources, splits, descriptors, green contexts. Answers
 * that depend on the SM count are those of a 132-SM Hopper (H100 / H200 alike; the fake's
 * compared config is tests/fakegpu/configs/1gpu.conf, arch 9.0 = 132 SMs).
 * The steps below share the device's SM resource, a group and the remaining split from it, the
 * green context and its CUcontext (static: kept across the siglongjmp of a crashing case). */
static CUdevResource all, grp[2], grem;
static CUgreenCtx green;
static CUcontext gctx;

/* The green-context entry points by cuGetProcAddress; the device's SM resource */
static void green_device_resource(void)
{
    static CUdevResource res;
    static char t[64];

    proc("proc.cuGreenCtxCreate.12030", "cuGreenCtxCreate", 12030, 0);
    proc("proc.cuGreenCtxCreate.13000", "cuGreenCtxCreate", 13000, 0);
    proc("proc.cuDevSmResourceSplitByCount.12040", "cuDevSmResourceSplitByCount", 12040, 0);
    proc("proc.cuDevSmResourceSplit.13000", "cuDevSmResourceSplit", 13000, 0);
    /* no context current, the primary context released: as a program that starts green */
    SHOW("green.setup.primary_release", p_cuDevicePrimaryCtxRelease_v2(0));
    p_cuCtxSetCurrent(NULL);
    memset(&all, 0xab, sizeof(all));
    SHOW("green.dev_resource", p_cuDeviceGetDevResource(0, &all, CU_DEV_RESOURCE_TYPE_SM));
    printf("%-48s %s\n", "green.dev_resource.sm", res_text(&all, t, sizeof(t)));
    SHOW("green.dev_resource.bad_dev", p_cuDeviceGetDevResource(99, &res, CU_DEV_RESOURCE_TYPE_SM));
    SHOW("green.dev_resource.type_invalid", p_cuDeviceGetDevResource(0, &res, CU_DEV_RESOURCE_TYPE_INVALID));
    SHOW("green.dev_resource.type_2", p_cuDeviceGetDevResource(0, &res, (CUdevResourceType)2));
    SHOW("green.dev_resource.null", p_cuDeviceGetDevResource(0, NULL, CU_DEV_RESOURCE_TYPE_SM));
}

/* Splits of the device's SM resource: minimum sizes, group counts, flags, bad arguments, a group
 * and the remaining split again */
static void green_splits(void)
{
    static const unsigned mins[] = { 1, 8, 9, 26, 66, 128, 129, 132, 133 };
    static unsigned cnt;

    for (unsigned i = 0; i < sizeof(mins) / sizeof(mins[0]); i++) {
        char label[64];

        snprintf(label, sizeof(label), "green.split.%u", mins[i]);
        split(label, &all, 1, 0, mins[i]);
    }
    split("green.split.8.ask32", &all, 32, 0, 8);
    split("green.split.26.ask32", &all, 32, 0, 26);
    split("green.split.32.ask2", &all, 2, 0, 32);
    cnt = 77;
    SHOW("green.split.8.count", p_split(NULL, &cnt, &all, NULL, 0, 8));
    printf("%-48s %u\n", "green.split.8.count.n", cnt);
    cnt = 77;
    SHOW("green.split.133.count", p_split(NULL, &cnt, &all, NULL, 0, 133));
    printf("%-48s %u\n", "green.split.133.count.n", cnt);
    split("green.split.ignore_cosched.1", &all, 1, CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING, 1);
    split("green.split.ignore_cosched.3", &all, 1, CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING, 3);
    split("green.split.ignore_cosched.26", &all, 1, CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING, 26);
    split("green.split.max_cluster.26", &all, 1, CU_DEV_SM_RESOURCE_SPLIT_MAX_POTENTIAL_CLUSTER_SIZE, 26);
    cnt = 0;
    SHOW("green.split.n0", p_split(grp, &cnt, &all, &grem, 0, 8));
    SHOW("green.split.null_n", p_split(grp, NULL, &all, &grem, 0, 8));
    cnt = 1;
    SHOW("green.split.null_input", p_split(grp, &cnt, NULL, &grem, 0, 8));
    /* a group and a remaining, split again */
    cnt = 2;
    SHOW("green.split.32.for_resplit", p_split(grp, &cnt, &all, &grem, 0, 32));
    split("green.resplit.group", &grp[0], 1, 0, 8);
    split("green.resplit.remaining", &grem, 1, 0, 8);
}

/* Resources that are not the driver's SM resource: split, and turned into descriptors */
static void green_foreign_resources(void)
{
    static CUdevResource bad;
    static CUdevResourceDesc desc;

    memset(&bad, 0, sizeof(bad));
    split("green.split.zeroed", &bad, 1, 0, 8);
    bad = all;
    bad.type = (CUdevResourceType)2;
    split("green.split.type_2", &bad, 1, 0, 8);
    bad = all;
    bad.sm.smCount = 64;
    split("green.split.edited_sms", &bad, 1, 0, 8);
    memset(&bad, 0, sizeof(bad));
    SHOW("green.desc.zeroed", p_cuDevResourceGenerateDesc(&desc, &bad, 1));
    bad = all;
    bad.sm.smCount = 64;
    SHOW("green.desc.edited_sms", p_cuDevResourceGenerateDesc(&desc, &bad, 1));
    SHOW("green.desc.null", p_cuDevResourceGenerateDesc(NULL, &all, 1));
}

/* A 32-SM green context: descriptor, creation, its resource and its CUcontext */
static void green_create(void)
{
    static CUdevResource res;
    static CUdevResourceDesc desc;
    static CUcontext gctx2, cur;
    static unsigned cnt;
    static char t[64];

    cnt = 1;
    SHOW("green.split.26.for_ctx", p_split(grp, &cnt, &all, &grem, 0, 26));
    desc = NULL;
    SHOW("green.desc", p_cuDevResourceGenerateDesc(&desc, grp, 1));
    SHOW("green.create.flags0", p_cuGreenCtxCreate(&green, desc, 0, 0));
    SHOW("green.create.bad_dev", p_cuGreenCtxCreate(&green, desc, 99, CU_GREEN_CTX_DEFAULT_STREAM));
    SHOW("green.create.null", p_cuGreenCtxCreate(NULL, desc, 0, CU_GREEN_CTX_DEFAULT_STREAM));
    green = NULL;
    SHOW("green.create", p_cuGreenCtxCreate(&green, desc, 0, CU_GREEN_CTX_DEFAULT_STREAM));
    p_cuDevicePrimaryCtxGetState(0, &flags, &a);
    printf("%-48s %d\n", "green.create.primary_active", a);
    cur = (CUcontext)1;
    p_cuCtxGetCurrent(&cur);
    printf("%-48s %s\n", "green.create.current", cur == NULL ? "NULL" : cur == (CUcontext)1 ? "unset" : "non-NULL");
    memset(&res, 0xab, sizeof(res));
    SHOW("green.green_resource", p_cuGreenCtxGetDevResource(green, &res, CU_DEV_RESOURCE_TYPE_SM));
    printf("%-48s %s\n", "green.green_resource.sm", res_text(&res, t, sizeof(t)));
    SHOW("green.green_resource.null_ctx", p_cuGreenCtxGetDevResource(NULL, &res, CU_DEV_RESOURCE_TYPE_SM));
    SHOW("green.from_green.null_ctx", p_cuCtxFromGreenCtx(&gctx, NULL));
    SHOW("green.from_green.null", p_cuCtxFromGreenCtx(NULL, green));
    SHOW("green.from_green", p_cuCtxFromGreenCtx(&gctx, green));
    SHOW("green.from_green.again", p_cuCtxFromGreenCtx(&gctx2, green));
    printf("%-48s %d\n", "green.from_green.same", gctx != NULL && gctx == gctx2);
    p_cuDevicePrimaryCtxRetain(&ctx, 0);
    printf("%-48s %d\n", "green.from_green.is_primary", gctx == ctx);
    memset(&res, 0xab, sizeof(res));
    SHOW("green.ctx_resource", p_cuCtxGetDevResource(gctx, &res, CU_DEV_RESOURCE_TYPE_SM));
    printf("%-48s %s\n", "green.ctx_resource.sm", res_text(&res, t, sizeof(t)));
    memset(&res, 0xab, sizeof(res));
    SHOW("green.ctx_resource.primary", p_cuCtxGetDevResource(ctx, &res, CU_DEV_RESOURCE_TYPE_SM));
    printf("%-48s %s\n", "green.ctx_resource.primary.sm", res_text(&res, t, sizeof(t)));
    SHOW("green.ctx_resource.null_ctx", p_cuCtxGetDevResource(NULL, &res, CU_DEV_RESOURCE_TYPE_SM));
    SHOW("green.ctx_resource.type_invalid", p_cuCtxGetDevResource(gctx, &res, CU_DEV_RESOURCE_TYPE_INVALID));
}

/* The green context current: the device still shows all its SMs; the green context's resource
 * splits again; memory, synchronize, cuCtxDestroy */
static void green_current(void)
{
    static CUdevResource res;
    static char t[64];

    SHOW("green.set_current", p_cuCtxSetCurrent(gctx));
    SHOW("green.ctx_get_device", p_cuCtxGetDevice(&dev));
    a = -1;
    SHOW("green.attr.sm_count", p_cuDeviceGetAttribute(&a, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
    printf("%-48s %d\n", "green.attr.sm_count.value", a);
    memset(&res, 0xab, sizeof(res));
    SHOW("green.dev_resource.in_green", p_cuDeviceGetDevResource(0, &res, CU_DEV_RESOURCE_TYPE_SM));
    printf("%-48s %s\n", "green.dev_resource.in_green.sm", res_text(&res, t, sizeof(t)));
    SHOW("green.ctx_resource.null_ctx.current", p_cuCtxGetDevResource(NULL, &res, CU_DEV_RESOURCE_TYPE_SM));
    /* a green context's resource splits again */
    p_cuCtxGetDevResource(gctx, &res, CU_DEV_RESOURCE_TYPE_SM);
    split("green.resplit.ctx_resource", &res, 1, 0, 8);
    SHOW("green.mem_alloc", p_cuMemAlloc_v2(&p, 1 << 20));
    SHOW("green.mem_free", p_cuMemFree_v2(p));
    SHOW("green.ctx_synchronize", p_cuCtxSynchronize());
    SHOW("green.ctx_destroy", p_cuCtxDestroy_v2(gctx));
}

/* The green context destroyed while current */
static void green_destroyed(void)
{
    static CUdevResource res;
    static CUcontext gctx2, cur;

    SHOW("green.destroy.null", p_cuGreenCtxDestroy(NULL));
    SHOW("green.destroy", p_cuGreenCtxDestroy(green));
    cur = NULL;
    SHOW("green.destroyed.get_current", p_cuCtxGetCurrent(&cur));
    printf("%-48s %d\n", "green.destroyed.still_current", cur == gctx);
    SHOW("green.destroyed.mem_alloc", p_cuMemAlloc_v2(&p, 1 << 20));
    SHOW("green.destroyed.ctx_synchronize", p_cuCtxSynchronize());
    SHOW("green.destroyed.ctx_resource", p_cuCtxGetDevResource(gctx, &res, CU_DEV_RESOURCE_TYPE_SM));
    SHOW("green.destroyed.from_green", p_cuCtxFromGreenCtx(&gctx2, green));
    SHOW("green.destroyed.green_resource", p_cuGreenCtxGetDevResource(green, &res, CU_DEV_RESOURCE_TYPE_SM));
    SHOW("green.destroyed.destroy", p_cuGreenCtxDestroy(green));
}

/* green contexts, step by step; then no context current, the primary context released */
static void probe_green_contexts(void)
{
    PROBE_GREEN_FUNCTIONS(LOAD)
    p_split = (gs_cuDevSmResourceSplitByCount_fn)dlsym(g_cuda, "cuDevSmResourceSplitByCount");
    green_device_resource();
    green_splits();
    green_foreign_resources();
    green_create();
    green_current();
    green_destroyed();
    p_cuCtxSetCurrent(NULL);
    p_cuDevicePrimaryCtxRelease_v2(0);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGSEGV, on_segv);
    signal(SIGBUS, on_segv);
    g_cuda = dlopen("libcuda.so.1", RTLD_NOW);
    if (g_cuda == NULL) {
        fprintf(stderr, "cuda_probe: %s\n", dlerror());
        return 1;
    }
    load_functions();
    probe_before_init();
    probe_init();
    probe_get_proc_address();
    probe_get_proc_address_edges();
    probe_contexts();
    probe_linear_memory();
    probe_vmm();
    probe_pools();
    probe_arrays_modules_streams();
    probe_round2();
    probe_ctx_create_destroy();
    probe_fork_after_init();
    probe_green_contexts();
    return 0;
}
