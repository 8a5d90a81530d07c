/*
 * device-probe: every entry point that takes or returns a CUdevice, called with one ordinal.
 *   device-probe [raw] ORDINAL BUSID NAME...
 * raw: initialise the driver past the interposer (the simulated driver's fakegpu_cuInit_unhooked:
 * it then shows every GPU, as a driver reached some way we do not catch would); else cuInit.
 * For each NAME (an entry point of src/abi/cuda.h, listed by tests/vgpu/test_devices.sh) one line
 *   NAME ORDINAL RC [UUID]
 * UUID: of the device the call returned (read back through cuDeviceGetUuid_v2), else of the GPU the
 * simulated driver says the call reached (fakegpu_touched_uuid); none: no GPU was reached. RC -2:
 * the call's setup failed.
 * ("nocase NAME" when this file has no case for it: the test fails then). BUSID is the PCI bus id
 * cuDeviceGetByPCIBusId is asked for. Other arguments are valid where the call needs them, so that
 * a refusal of the device is what the result shows.
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi/cuda.h"

CUresult fakegpu_cuInit_unhooked(unsigned int Flags) __attribute__((weak));
/* The simulated driver's record of the GPU the last call of this thread reached ("" none). */
const char *fakegpu_touched_uuid(void) __attribute__((weak));
static const char *touched(void) { return fakegpu_touched_uuid != NULL ? fakegpu_touched_uuid() : "?"; }
#define fakegpu_touched_uuid touched

static const char *bus;
static char got[96];

static void uuid_of(CUdevice d)
{
        CUuuid u;
        snprintf(got, sizeof(got), "?");
        if (cuDeviceGetUuid_v2(&u, d) != CUDA_SUCCESS)
                return;
        const unsigned char *b = (const unsigned char *)u.bytes;
        snprintf(got, sizeof(got), "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                 b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

static CUmemAllocationProp prop_on(CUdevice d)
{
        CUmemAllocationProp p;
        memset(&p, 0, sizeof(p));
        p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
        p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        p.location.id = d;
        return p;
}

/* The other device of a pair: the slice's first (driver ordinal from GOOD, default 0). */
static CUdevice good(void)
{
        const char *g = getenv("GOOD");
        return g != NULL ? atoi(g) : 0;
}

#define NOCASE ((CUresult)-1)
#define IS(n) (strcmp(name, n) == 0)

/* 1 MiB of managed memory made in a context of the slice's GPU (0 on failure; never freed: the
 * probe is short) */
static CUdeviceptr managed_on_good(void)
{
        CUcontext c = NULL;
        CUdeviceptr m = 0;
        if (cuDevicePrimaryCtxRetain(&c, good()) != CUDA_SUCCESS || cuCtxSetCurrent(c) != CUDA_SUCCESS ||
            cuMemAllocManaged(&m, 1u << 20, CU_MEM_ATTACH_GLOBAL) != CUDA_SUCCESS)
                return 0;
        return m;
}

/* Two 4 KiB device buffers in a context of the slice's GPU: 0, or -1. */
static int device_buffers_on_good(CUdeviceptr b[2])
{
        CUcontext c = NULL;
        if (cuDevicePrimaryCtxRetain(&c, good()) != CUDA_SUCCESS || cuCtxSetCurrent(c) != CUDA_SUCCESS ||
            cuMemAlloc_v2(&b[0], 4096) != CUDA_SUCCESS || cuMemAlloc_v2(&b[1], 4096) != CUDA_SUCCESS)
                return -1;
        return 0;
}

/* the entry points of the first device table: devices, contexts, pools, VMM */
static CUresult run_core(const char *name, CUdevice d)
{
        char buf[128];
        CUuuid u;
        size_t sz = 0;
        unsigned int u32 = 0, flags = 0;
        int v = 0;
        CUcontext c = NULL;
        CUdevice out = -1;
        CUmemoryPool pool = NULL;
        CUmemAllocationProp p = prop_on(d);
        CUresult rc;
        if (IS("cuDeviceGet")) {
                rc = cuDeviceGet(&out, d);
                if (rc == CUDA_SUCCESS)
                        uuid_of(out);
                return rc;
        }
        if (IS("cuDeviceGetByPCIBusId")) {
                rc = cuDeviceGetByPCIBusId(&out, bus);
                if (rc == CUDA_SUCCESS)
                        uuid_of(out);
                return rc;
        }
        if (IS("cuCtxGetDevice") || IS("cuCtxGetDevice_v2")) {
                /* the current context's device: make one on d first (refused outside the slice) */
                CUresult r0 = cuDevicePrimaryCtxRetain(&c, d);
                if (r0 == CUDA_SUCCESS)
                        cuCtxSetCurrent(c);
                rc = IS("cuCtxGetDevice") ? cuCtxGetDevice(&out) : cuCtxGetDevice_v2(&out, NULL);
                if (rc == CUDA_SUCCESS)
                        uuid_of(out);
                return r0 != CUDA_SUCCESS ? r0 : rc;
        }
        if (IS("cuDeviceGetName")) return cuDeviceGetName(buf, sizeof(buf), d);
        if (IS("cuDeviceGetUuid")) return cuDeviceGetUuid(&u, d);
        if (IS("cuDeviceGetUuid_v2")) return cuDeviceGetUuid_v2(&u, d);
        if (IS("cuDeviceTotalMem")) return cuDeviceTotalMem(&u32, d);
        if (IS("cuDeviceTotalMem_v2")) return cuDeviceTotalMem_v2(&sz, d);
        if (IS("cuDeviceGetAttribute")) return cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d);
        if (IS("cuDeviceGetPCIBusId")) return cuDeviceGetPCIBusId(buf, sizeof(buf), d);
        if (IS("cuDeviceCanAccessPeer")) {
                rc = cuDeviceCanAccessPeer(&v, d, good());
                return rc != CUDA_SUCCESS ? rc : cuDeviceCanAccessPeer(&v, good(), d);
        }
        if (IS("cuDeviceGetP2PAttribute")) {
                rc = cuDeviceGetP2PAttribute(&v, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, d, good());
                return rc != CUDA_SUCCESS ? rc
                                          : cuDeviceGetP2PAttribute(&v, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, good(), d);
        }
        if (IS("cuDevicePrimaryCtxRetain")) return cuDevicePrimaryCtxRetain(&c, d);
        if (IS("cuDevicePrimaryCtxRelease")) return cuDevicePrimaryCtxRelease(d);
        if (IS("cuDevicePrimaryCtxRelease_v2")) return cuDevicePrimaryCtxRelease_v2(d);
        if (IS("cuDevicePrimaryCtxReset")) return cuDevicePrimaryCtxReset(d);
        if (IS("cuDevicePrimaryCtxReset_v2")) return cuDevicePrimaryCtxReset_v2(d);
        if (IS("cuDevicePrimaryCtxGetState")) return cuDevicePrimaryCtxGetState(d, &flags, &v);
        if (IS("cuCtxCreate")) return cuCtxCreate(&c, 0, d);
        if (IS("cuCtxCreate_v2")) return cuCtxCreate_v2(&c, 0, d);
        if (IS("cuCtxCreate_v3")) return cuCtxCreate_v3(&c, NULL, 0, 0, d);
        if (IS("cuCtxCreate_v4")) return cuCtxCreate_v4(&c, NULL, 0, d);
        if (IS("cuDeviceGetDevResource")) {
                CUdevResource r;
                return cuDeviceGetDevResource(d, &r, CU_DEV_RESOURCE_TYPE_SM);
        }
        if (IS("cuGreenCtxCreate")) {
                CUgreenCtx g = NULL;
                return cuGreenCtxCreate(&g, NULL, d, CU_GREEN_CTX_DEFAULT_STREAM);
        }
        if (IS("cuDeviceGetDefaultMemPool")) return cuDeviceGetDefaultMemPool(&pool, d);
        if (IS("cuMemGetAllocationGranularity"))
                return cuMemGetAllocationGranularity(&sz, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
        if (IS("cuMemCreate")) {
                CUmemGenericAllocationHandle h = 0;
                rc = cuMemCreate(&h, 2u << 20, &p, 0);
                if (rc == CUDA_SUCCESS)
                        cuMemRelease(h);
                return rc;
        }
        if (IS("cuMemSetAccess")) {
                CUmemAccessDesc a = {.location = p.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
                return cuMemSetAccess(0, 0, &a, 1);
        }
        if (IS("cuMemPoolCreate")) {
                CUmemPoolProps pp;
                memset(&pp, 0, sizeof(pp));
                pp.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
                pp.location = p.location;
                rc = cuMemPoolCreate(&pool, &pp);
                if (rc == CUDA_SUCCESS)
                        cuMemPoolDestroy(pool);
                return rc;
        }
        return NOCASE;
}

/* properties, pools of a device, unified memory, access by location, devices returned */
static CUresult run_more(const char *name, CUdevice d)
{
        unsigned int u32 = 0;
        int v = 0;
        CUcontext c = NULL;
        CUdevice out = -1;
        CUmemoryPool pool = NULL;
        CUmemAllocationProp p = prop_on(d);
        CUresult rc;
        if (IS("cuDevicePrimaryCtxSetFlags")) return cuDevicePrimaryCtxSetFlags(d, 0);
        if (IS("cuDevicePrimaryCtxSetFlags_v2")) return cuDevicePrimaryCtxSetFlags_v2(d, 0);
        if (IS("cuDeviceComputeCapability")) return cuDeviceComputeCapability(&v, (int *)&u32, d);
        if (IS("cuDeviceGetProperties")) {
                CUdevprop pr;
                return cuDeviceGetProperties(&pr, d);
        }
        if (IS("cuDeviceGetMemPool")) return cuDeviceGetMemPool(&pool, d);
        if (IS("cuDeviceSetMemPool")) {
                /* its own default pool as the current one (the pool is of the slice's GPU) */
                rc = cuDeviceGetDefaultMemPool(&pool, good());
                return rc != CUDA_SUCCESS ? rc : cuDeviceSetMemPool(d, pool);
        }
        if (IS("cuDeviceGraphMemTrim")) return cuDeviceGraphMemTrim(d);
        if (IS("cuDeviceGetGraphMemAttribute")) {
                cuuint64_t x = 0;
                return cuDeviceGetGraphMemAttribute(d, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &x);
        }
        if (IS("cuDeviceSetGraphMemAttribute")) {
                cuuint64_t x = 0;
                return cuDeviceSetGraphMemAttribute(d, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &x);
        }
        if (IS("cuMemAdvise") || IS("cuMemAdvise_v2") || IS("cuMemPrefetchAsync") || IS("cuMemPrefetchAsync_ptsz") ||
            IS("cuMemPrefetchAsync_v2") || IS("cuMemPrefetchAsync_v2_ptsz") || IS("cuMemGetAccess")) {
                /* managed memory made in a context of the slice's GPU, placed or asked about on d */
                CUdeviceptr m = 0;
                CUmemLocation l = p.location;
                unsigned long long fl = 0;
                if ((rc = cuDevicePrimaryCtxRetain(&c, good())) != CUDA_SUCCESS || (rc = cuCtxSetCurrent(c)) != CUDA_SUCCESS ||
                    (rc = cuMemAllocManaged(&m, 1u << 20, CU_MEM_ATTACH_GLOBAL)) != CUDA_SUCCESS)
                        return (CUresult)-2;
                got[0] = '\0';
                fakegpu_touched_uuid();
                if (IS("cuMemAdvise")) rc = cuMemAdvise(m, 1u << 20, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, d);
                else if (IS("cuMemAdvise_v2")) rc = cuMemAdvise_v2(m, 1u << 20, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, l);
                else if (IS("cuMemPrefetchAsync")) rc = cuMemPrefetchAsync(m, 1u << 20, d, NULL);
                else if (IS("cuMemPrefetchAsync_ptsz")) rc = cuMemPrefetchAsync_ptsz(m, 1u << 20, d, NULL);
                else if (IS("cuMemPrefetchAsync_v2")) rc = cuMemPrefetchAsync_v2(m, 1u << 20, l, 0, NULL);
                else if (IS("cuMemPrefetchAsync_v2_ptsz")) rc = cuMemPrefetchAsync_v2_ptsz(m, 1u << 20, l, 0, NULL);
                else rc = cuMemGetAccess(&fl, &l, m);
                snprintf(got, sizeof(got), "%s", fakegpu_touched_uuid());
                cuMemFree_v2(m);
                return rc;
        }
        if (IS("cuMemPoolSetAccess") || IS("cuMemPoolGetAccess")) {
                CUmemAccessDesc a = {.location = p.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
                CUmemAccess_flags fl;
                CUmemLocation l = p.location;
                if (cuDeviceGetDefaultMemPool(&pool, good()) != CUDA_SUCCESS)
                        return (CUresult)-2;
                got[0] = '\0';
                fakegpu_touched_uuid();
                rc = IS("cuMemPoolSetAccess") ? cuMemPoolSetAccess(pool, &a, 1) : cuMemPoolGetAccess(&fl, pool, &l);
                snprintf(got, sizeof(got), "%s", fakegpu_touched_uuid());
                return rc;
        }
        if (IS("cuPointerGetAttribute") || IS("cuStreamGetDevice") || IS("cuStreamGetDevice_ptsz")) {
                /* memory / the legacy stream of a context on d: the device the driver answers */
                CUdeviceptr m = 0;
                int ord = -1;
                if ((rc = cuDevicePrimaryCtxRetain(&c, d)) != CUDA_SUCCESS)
                        return rc;
                cuCtxSetCurrent(c);
                if (IS("cuPointerGetAttribute")) {
                        if (cuMemAlloc_v2(&m, 1u << 20) != CUDA_SUCCESS)
                                return (CUresult)-2;
                        rc = cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, m);
                        cuMemFree_v2(m);
                        out = ord;
                } else {
                        rc = IS("cuStreamGetDevice") ? cuStreamGetDevice(NULL, &out) : cuStreamGetDevice_ptsz(NULL, &out);
                }
                if (rc == CUDA_SUCCESS)
                        uuid_of(out);
                return rc;
        }
        return NOCASE;
}

/* what the simulated GPU checks the device of and does not have */
static CUresult run_unsimulated(const char *name, CUdevice d)
{
        char buf[128];
        size_t sz = 0;
        unsigned int u32 = 0;
        int v = 0;
        CUmemoryPool pool = NULL;
        CUmemAllocationProp p = prop_on(d);
        CUresult rc;
        /* what the simulated GPU does not have: its device check, then CUDA_ERROR_NOT_SUPPORTED */
        CUmemLocation l1 = p.location;
        CUDA_ARRAY_MEMORY_REQUIREMENTS req;
        CUatomicOperation op = CU_ATOMIC_OPERATION_INTEGER_ADD;
        CUasyncCallbackHandle cb = NULL;
        size_t zero = 0, one = 1 << 20;
        CUdeviceptr dp = 0;
        if (IS("cuDeviceGetLuid")) return cuDeviceGetLuid(buf, &u32, d);
        if (IS("cuDeviceGetTexture1DLinearMaxWidth")) return cuDeviceGetTexture1DLinearMaxWidth(&sz, CU_AD_FORMAT_FLOAT, 1, d);
        if (IS("cuDeviceGetExecAffinitySupport")) return cuDeviceGetExecAffinitySupport(&v, CU_EXEC_AFFINITY_TYPE_SM_COUNT, d);
        if (IS("cuDeviceGetNvSciSyncAttributes")) return cuDeviceGetNvSciSyncAttributes(NULL, d, 0);
        if (IS("cuDeviceGetHostAtomicCapabilities")) return cuDeviceGetHostAtomicCapabilities(&u32, &op, 1, d);
        if (IS("cuDeviceGetP2PAtomicCapabilities")) {
                rc = cuDeviceGetP2PAtomicCapabilities(&u32, &op, 1, d, good());
                return rc != CUDA_ERROR_NOT_SUPPORTED ? rc : cuDeviceGetP2PAtomicCapabilities(&u32, &op, 1, good(), d);
        }
        if (IS("cuDeviceRegisterAsyncNotification")) return cuDeviceRegisterAsyncNotification(d, NULL, NULL, &cb);
        if (IS("cuDeviceUnregisterAsyncNotification")) return cuDeviceUnregisterAsyncNotification(d, cb);
        if (IS("cuKernelGetAttribute")) return cuKernelGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, NULL, d);
        if (IS("cuKernelSetAttribute")) return cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1, NULL, d);
        if (IS("cuKernelSetCacheConfig")) return cuKernelSetCacheConfig(NULL, CU_FUNC_CACHE_PREFER_NONE, d);
        if (IS("cuArrayGetMemoryRequirements")) return cuArrayGetMemoryRequirements(&req, NULL, d);
        if (IS("cuMipmappedArrayGetMemoryRequirements")) return cuMipmappedArrayGetMemoryRequirements(&req, NULL, d);
        if (IS("cuMulticastAddDevice")) return cuMulticastAddDevice(1, d);
        if (IS("cuMulticastUnbind")) return cuMulticastUnbind(1, d, 0, 0);
        if (strstr(name, "PrefetchBatchAsync") != NULL && (dp = managed_on_good()) == 0)
                return (CUresult)-2;
        if (IS("cuMemPrefetchBatchAsync")) return cuMemPrefetchBatchAsync(&dp, &one, 1, &l1, &zero, 1, 0, NULL);
        if (IS("cuMemPrefetchBatchAsync_ptsz")) return cuMemPrefetchBatchAsync_ptsz(&dp, &one, 1, &l1, &zero, 1, 0, NULL);
        if (IS("cuMemDiscardAndPrefetchBatchAsync"))
                return cuMemDiscardAndPrefetchBatchAsync(&dp, &one, 1, &l1, &zero, 1, 0, NULL);
        if (IS("cuMemDiscardAndPrefetchBatchAsync_ptsz"))
                return cuMemDiscardAndPrefetchBatchAsync_ptsz(&dp, &one, 1, &l1, &zero, 1, 0, NULL);
        if (IS("cuMemGetDefaultMemPool")) return cuMemGetDefaultMemPool(&pool, &l1, CU_MEM_ALLOCATION_TYPE_PINNED);
        if (IS("cuMemGetMemPool")) return cuMemGetMemPool(&pool, &l1, CU_MEM_ALLOCATION_TYPE_PINNED);
        if (IS("cuMemSetMemPool")) return cuMemSetMemPool(&l1, CU_MEM_ALLOCATION_TYPE_PINNED, NULL);
        return NOCASE;
}

/* devices in the structs of batched copies, graph allocation nodes, allocation properties */
static CUresult run_structs(const char *name, CUdevice d)
{
        CUdeviceptr bufs[2] = {0, 0};
        CUarray arr = NULL;
        CUDA_ARRAY_DESCRIPTOR ad = {.Width = 1, .Height = 1, .Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 1};
        /* the copies' memory: real, in a context of the slice's GPU (a real driver copies it) */
        if (strstr(name, "BatchAsync") != NULL &&
            (device_buffers_on_good(bufs) != 0 || cuArrayCreate_v2(&arr, &ad) != CUDA_SUCCESS))
                return (CUresult)-2;
        CUcontext c = NULL;
        CUmemAllocationProp p = prop_on(d);
        CUresult rc;
        CUmemLocation l1 = prop_on(d).location;
        if (IS("cuMemcpyBatchAsync") || IS("cuMemcpyBatchAsync_ptsz") || IS("cuMemcpyBatchAsync_v2") ||
            IS("cuMemcpyBatchAsync_v2_ptsz")) {
                /* a copy whose source hint is d */
                CUdeviceptr dst = bufs[1], src = bufs[0];
                size_t bytes = 4096, idx = 0, fail = 0;
                CUmemcpyAttributes at;
                memset(&at, 0, sizeof(at));
                at.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
                at.srcLocHint = l1;
                at.dstLocHint.type = CU_MEM_LOCATION_TYPE_HOST;
                if (IS("cuMemcpyBatchAsync")) return cuMemcpyBatchAsync(&dst, &src, &bytes, 1, &at, &idx, 1, &fail, NULL);
                if (IS("cuMemcpyBatchAsync_ptsz"))
                        return cuMemcpyBatchAsync_ptsz(&dst, &src, &bytes, 1, &at, &idx, 1, &fail, NULL);
                if (IS("cuMemcpyBatchAsync_v2")) return cuMemcpyBatchAsync_v2(&dst, &src, &bytes, 1, &at, &idx, 1, NULL);
                return cuMemcpyBatchAsync_v2_ptsz(&dst, &src, &bytes, 1, &at, &idx, 1, NULL);
        }
        if (IS("cuMemcpy3DBatchAsync") || IS("cuMemcpy3DBatchAsync_ptsz") || IS("cuMemcpy3DBatchAsync_v2") ||
            IS("cuMemcpy3DBatchAsync_v2_ptsz")) {
                /* pointer to array, the pointer's hint d */
                CUDA_MEMCPY3D_BATCH_OP bop;
                size_t fail = 0;
                memset(&bop, 0, sizeof(bop));
                bop.src.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
                bop.src.op.ptr.ptr = bufs[0];
                bop.src.op.ptr.locHint = l1;
                bop.dst.type = CU_MEMCPY_OPERAND_TYPE_ARRAY;
                bop.dst.op.array.array = arr;
                bop.extent.width = bop.extent.height = bop.extent.depth = 1;
                bop.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
                if (IS("cuMemcpy3DBatchAsync")) return cuMemcpy3DBatchAsync(1, &bop, &fail, 0, NULL);
                if (IS("cuMemcpy3DBatchAsync_ptsz")) return cuMemcpy3DBatchAsync_ptsz(1, &bop, &fail, 0, NULL);
                if (IS("cuMemcpy3DBatchAsync_v2")) return cuMemcpy3DBatchAsync_v2(1, &bop, 0, NULL);
                return cuMemcpy3DBatchAsync_v2_ptsz(1, &bop, 0, NULL);
        }
        if (IS("cuGraphAddMemAllocNode") || IS("cuGraphAddNode") || IS("cuGraphAddNode_v2")) {
                /* an allocation node on d (the simulated driver checks the device, then has no graph
                 * memory: CUDA_ERROR_NOT_SUPPORTED) */
                CUgraphNodeParams np;
                CUgraphNode node = NULL;
                memset(&np, 0, sizeof(np));
                np.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
                np.alloc.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
                np.alloc.poolProps.location = l1;
                np.alloc.bytesize = 2u << 20;
                if (IS("cuGraphAddMemAllocNode")) return cuGraphAddMemAllocNode(&node, NULL, NULL, 0, &np.alloc);
                if (IS("cuGraphAddNode")) return cuGraphAddNode(&node, NULL, NULL, 0, &np);
                return cuGraphAddNode_v2(&node, NULL, NULL, NULL, 0, &np);
        }
        if (IS("cuMemGetAllocationPropertiesFromHandle") || IS("cuPointerGetAttributes")) {
                /* a device returned inside a struct or an array: of memory made on d */
                CUmemGenericAllocationHandle h = 0;
                CUdeviceptr m = 0;
                int ord = -1;
                CUpointer_attribute at = CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL;
                void *data[1] = {&ord};
                if (IS("cuMemGetAllocationPropertiesFromHandle")) {
                        if ((rc = cuMemCreate(&h, 2u << 20, &p, 0)) != CUDA_SUCCESS)
                                return rc;
                        CUmemAllocationProp q;
                        rc = cuMemGetAllocationPropertiesFromHandle(&q, h);
                        cuMemRelease(h);
                        if (rc == CUDA_SUCCESS)
                                uuid_of(q.location.id);
                        return rc;
                }
                if ((rc = cuDevicePrimaryCtxRetain(&c, d)) != CUDA_SUCCESS)
                        return rc;
                cuCtxSetCurrent(c);
                if (cuMemAlloc_v2(&m, 1u << 20) != CUDA_SUCCESS)
                        return (CUresult)-2;
                rc = cuPointerGetAttributes(1, &at, data, m);
                cuMemFree_v2(m);
                if (rc == CUDA_SUCCESS)
                        uuid_of(ord);
                return rc;
        }
        return NOCASE;
}
#undef IS

/* One entry point called with device d: its result, or NOCASE when this file has no case for it. */
static CUresult run(const char *name, CUdevice d)
{
        CUresult (*const groups[])(const char *, CUdevice) = {run_core, run_more, run_unsimulated, run_structs};
        for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]); i++) {
                CUresult rc = groups[i](name, d);
                if (rc != NOCASE)
                        return rc;
        }
        return NOCASE;
}

/* proc NAME...: what cuGetProcAddress_v2 answers for each base name, at each CUDA version that
 * introduced an entry point of ours and with either stream flag: "proc NAME VERSION FLAGS SYMBOL
 * LIBRARY" (the exported name and file of the function it gave, by dladdr). */
static int procs(int n, char **names)
{
        static const int versions[] = {2000, 4000, 7000, 8000, 10000, 10020, 11000, 11010, 11020, 11040,
                                       11060, 12000, 12010, 12020, 12030, 12040, 12080, 13000};
        int drv = 0;
        cuDriverGetVersion(&drv);
        for (int i = 0; i < n; i++)
                for (size_t v = 0; v < sizeof(versions) / sizeof(versions[0]) && versions[v] <= drv; v++)
                        for (cuuint64_t fl = 0; fl <= CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM; fl += 2) {
                                void *fn = NULL;
                                CUdriverProcAddressQueryResult st;
                                Dl_info info;
                                if (cuGetProcAddress_v2(names[i], &fn, versions[v], fl, &st) != CUDA_SUCCESS || fn == NULL)
                                        continue;
                                const char *lib = "?", *sym = "?";
                                if (dladdr(fn, &info) != 0) {
                                        lib = info.dli_fname != NULL ? strrchr(info.dli_fname, '/') : NULL;
                                        lib = lib != NULL ? lib + 1 : (info.dli_fname != NULL ? info.dli_fname : "?");
                                        sym = info.dli_sname != NULL && info.dli_saddr == fn ? info.dli_sname : "?";
                                }
                                printf("proc %s %d %d %s %s\n", names[i], versions[v], (int)fl, sym, lib);
                        }
        return 0;
}

/* pool: in a slice of both GPUs with 1 GiB each, the current context on the slice's device 0:
 * 768 MiB from a pool of device 1 (one made, then the device's default pool), then 768 MiB on
 * device 0 (cuMemAlloc). Prints "pool RC0 RC1 FREE1" per pool: RC0 the pool allocation's, RC1 the
 * device-0 allocation's, FREE1 device 1's free MiB (cuMemGetInfo in its context) after both. */
static int pool_charge(void)
{
        CUcontext c0, c1;
        if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&c0, 0) != CUDA_SUCCESS ||
            cuDevicePrimaryCtxRetain(&c1, 1) != CUDA_SUCCESS)
                return 2;
        for (int k = 0; k < 2; k++) {
                CUmemoryPool pool = NULL;
                CUmemPoolProps pp;
                memset(&pp, 0, sizeof(pp));
                pp.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
                pp.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
                pp.location.id = 1;
                if ((k == 0 ? cuMemPoolCreate(&pool, &pp) : cuDeviceGetDefaultMemPool(&pool, 1)) != CUDA_SUCCESS)
                        return 2;
                CUdeviceptr a = 0, b = 0;
                size_t f = 0, t = 0;
                cuCtxSetCurrent(c0);
                CUresult r0 = cuMemAllocFromPoolAsync(&a, 1280u << 20, pool, NULL);
                CUresult r1 = cuMemAlloc_v2(&b, 1280u << 20);
                cuCtxSetCurrent(c1);
                cuMemGetInfo_v2(&f, &t);
                printf("pool %d %d %zu\n", (int)r0, (int)r1, f >> 20);
                cuCtxSetCurrent(c0);
                if (a != 0)
                        cuMemFreeAsync(a, NULL);
                if (b != 0)
                        cuMemFree_v2(b);
                cuCtxSynchronize();
                if (k == 0)
                        cuMemPoolDestroy(pool);
                else
                        cuMemPoolTrimTo(pool, 0);
        }
        return 0;
}

int main(int argc, char **argv)
{
        int a = 1;
        if (argc == 2 && strcmp(argv[1], "pool") == 0)
                return pool_charge();
        if (argc > 2 && strcmp(argv[1], "proc") == 0)
                return cuInit(0) == CUDA_SUCCESS ? procs(argc - 2, argv + 2) : 2;
        bool raw = argc > a && strcmp(argv[a], "raw") == 0;
        a += raw;
        if (argc < a + 3) {
                fprintf(stderr, "usage: device-probe [raw] ORDINAL BUSID NAME...\n");
                return 2;
        }
        CUdevice d = atoi(argv[a]);
        bus = argv[a + 1];
        CUresult rc = raw ? (fakegpu_cuInit_unhooked != NULL ? fakegpu_cuInit_unhooked(0) : CUDA_ERROR_NOT_FOUND)
                          : cuInit(0);
        printf("init %d\n", (int)rc);
        int missing = 0;
        int warm = 0;
        cuDeviceGetCount(&warm); /* the interposer's map is made here, not inside the first call */
        for (int i = a + 2; i < argc; i++) {
                got[0] = '\0';
                fakegpu_touched_uuid();
                CUresult r = run(argv[i], d);
                if (got[0] == '\0')
                        snprintf(got, sizeof(got), "%s", fakegpu_touched_uuid());
                if ((int)r == -1) {
                        printf("nocase %s\n", argv[i]);
                        missing++;
                        continue;
                }
                printf("%s %d %d%s%s\n", argv[i], (int)d, (int)r, got[0] != '\0' ? " " : "", got);
        }
        return missing != 0 ? 2 : 0;
}
