/* SPDX-License-Identifier: Apache-2.0 */
/* Fake libcuda.so.1 (fake_cuda.h): cuGetProcAddress / cuGetProcAddress_v2 and the table of
 * exported versions they choose from. */
#include "fake_cuda.h"

#include <limits.h>
#include <string.h>

/*
 * For each base name: the exported versions with the CUDA version that introduced them
 * (ascending), and the per-thread default stream variant. Source: the PFN_<name>_v<version>
 * typedefs of CUDA 13.0's cudaTypedefs.h (e.g. PFN_cuMemAlloc_v2000 = cuMemAlloc,
 * PFN_cuMemAlloc_v3020 = cuMemAlloc_v2, PFN_cuLaunchKernel_v7000_ptsz = cuLaunchKernel_ptsz),
 * checked against driver 580.159.04 by the cuda-probe. Versions the fake does not export
 * (the CUDA 2.x ABI of cuArrayCreate, cuMemcpy*, cuMemsetD8) are left out, so an old enough
 * cudaVersion answers VERSION_NOT_SUFFICIENT for them.
 */
struct proc_version {
    int since;
    void *fn;
    void *per_thread;   /* this version's own _ptsz (cuMemPrefetchAsync: _ptsz, _v2_ptsz), or NULL */
};

struct proc_entry {
    const char *name;
    struct proc_version v[4];
    void *per_thread;   /* _ptsz / _ptds, or NULL */
    int per_thread_since;
};

#define V(ver, f) { ver, (void *)(f), NULL }
#define VP(ver, f, pt) { ver, (void *)(f), (void *)(pt) }
static const struct proc_entry g_procs[] = {
    { "cuInit", { V(2000, cuInit) }, NULL, 0 },
    { "cuDriverGetVersion", { V(2020, cuDriverGetVersion) }, NULL, 0 },
    { "cuGetErrorString", { V(6000, cuGetErrorString) }, NULL, 0 },
    { "cuGetErrorName", { V(6000, cuGetErrorName) }, NULL, 0 },
    { "cuGetExportTable", { V(3000, cuGetExportTable) }, NULL, 0 },
    { "cuGetProcAddress", { V(11030, cuGetProcAddress), V(12000, cuGetProcAddress_v2) }, NULL, 0 },
    { "cuDeviceGet", { V(2000, cuDeviceGet) }, NULL, 0 },
    { "cuDeviceGetCount", { V(2000, cuDeviceGetCount) }, NULL, 0 },
    { "cuDeviceGetName", { V(2000, cuDeviceGetName) }, NULL, 0 },
    { "cuDeviceGetUuid", { V(9020, cuDeviceGetUuid), V(11040, cuDeviceGetUuid_v2) }, NULL, 0 },
    { "cuDeviceTotalMem", { V(2000, cuDeviceTotalMem), V(3020, cuDeviceTotalMem_v2) }, NULL, 0 },
    { "cuDeviceGetAttribute", { V(2000, cuDeviceGetAttribute) }, NULL, 0 },
    { "cuDeviceGetPCIBusId", { V(4010, cuDeviceGetPCIBusId) }, NULL, 0 },
    { "cuDeviceGetByPCIBusId", { V(4010, cuDeviceGetByPCIBusId) }, NULL, 0 },
    { "cuDevicePrimaryCtxRetain", { V(7000, cuDevicePrimaryCtxRetain) }, NULL, 0 },
    { "cuDevicePrimaryCtxRelease",
      { V(7000, cuDevicePrimaryCtxRelease), V(11000, cuDevicePrimaryCtxRelease_v2) }, NULL, 0 },
    { "cuDevicePrimaryCtxReset", { V(7000, cuDevicePrimaryCtxReset), V(11000, cuDevicePrimaryCtxReset_v2) },
      NULL, 0 },
    { "cuDevicePrimaryCtxGetState", { V(7000, cuDevicePrimaryCtxGetState) }, NULL, 0 },
    { "cuCtxCreate",
      { V(2000, cuCtxCreate), V(3020, cuCtxCreate_v2), V(11040, cuCtxCreate_v3), V(12050, cuCtxCreate_v4) },
      NULL, 0 },
    { "cuCtxDestroy", { V(2000, cuCtxDestroy), V(4000, cuCtxDestroy_v2) }, NULL, 0 },
    { "cuCtxGetCurrent", { V(4000, cuCtxGetCurrent) }, NULL, 0 },
    { "cuCtxSetCurrent", { V(4000, cuCtxSetCurrent) }, NULL, 0 },
    { "cuCtxGetDevice", { V(2000, cuCtxGetDevice), V(13000, cuCtxGetDevice_v2) }, NULL, 0 },
    { "cuCtxPushCurrent", { V(2000, cuCtxPushCurrent), V(4000, cuCtxPushCurrent_v2) }, NULL, 0 },
    { "cuCtxPopCurrent", { V(2000, cuCtxPopCurrent), V(4000, cuCtxPopCurrent_v2) }, NULL, 0 },
    { "cuCtxSynchronize", { V(2000, cuCtxSynchronize), V(13000, cuCtxSynchronize_v2) }, NULL, 0 },
    /* green contexts: 12040 (PFN_<name>_v12040; seen: VERSION_NOT_SUFFICIENT at 12030) */
    { "cuDeviceGetDevResource", { V(12040, cuDeviceGetDevResource) }, NULL, 0 },
    { "cuDevSmResourceSplitByCount", { V(12040, cuDevSmResourceSplitByCount) }, NULL, 0 },
    { "cuDevResourceGenerateDesc", { V(12040, cuDevResourceGenerateDesc) }, NULL, 0 },
    { "cuGreenCtxCreate", { V(12040, cuGreenCtxCreate) }, NULL, 0 },
    { "cuGreenCtxDestroy", { V(12040, cuGreenCtxDestroy) }, NULL, 0 },
    { "cuCtxFromGreenCtx", { V(12040, cuCtxFromGreenCtx) }, NULL, 0 },
    { "cuGreenCtxGetDevResource", { V(12040, cuGreenCtxGetDevResource) }, NULL, 0 },
    { "cuCtxGetDevResource", { V(12040, cuCtxGetDevResource) }, NULL, 0 },
    { "cuMemAlloc", { V(2000, cuMemAlloc), V(3020, cuMemAlloc_v2) }, NULL, 0 },
    { "cuMemAllocPitch", { V(2000, cuMemAllocPitch), V(3020, cuMemAllocPitch_v2) }, NULL, 0 },
    { "cuMemAllocManaged", { V(6000, cuMemAllocManaged) }, NULL, 0 },
    { "cuMemFree", { V(2000, cuMemFree), V(3020, cuMemFree_v2) }, NULL, 0 },
    { "cuMemGetInfo", { V(2000, cuMemGetInfo), V(3020, cuMemGetInfo_v2) }, NULL, 0 },
    { "cuMemAllocHost", { V(2000, cuMemAllocHost), V(3020, cuMemAllocHost_v2) }, NULL, 0 },
    { "cuMemFreeHost", { V(2000, cuMemFreeHost) }, NULL, 0 },
    { "cuMemCreate", { V(10020, cuMemCreate) }, NULL, 0 },
    { "cuMemRelease", { V(10020, cuMemRelease) }, NULL, 0 },
    { "cuMemAddressReserve", { V(10020, cuMemAddressReserve) }, NULL, 0 },
    { "cuMemAddressFree", { V(10020, cuMemAddressFree) }, NULL, 0 },
    { "cuMemMap", { V(10020, cuMemMap) }, NULL, 0 },
    { "cuMemUnmap", { V(10020, cuMemUnmap) }, NULL, 0 },
    { "cuMemSetAccess", { V(10020, cuMemSetAccess) }, NULL, 0 },
    { "cuMemGetAllocationGranularity", { V(10020, cuMemGetAllocationGranularity) }, NULL, 0 },
    { "cuMemAllocAsync", { V(11020, cuMemAllocAsync) }, (void *)cuMemAllocAsync_ptsz, 11020 },
    { "cuMemFreeAsync", { V(11020, cuMemFreeAsync) }, (void *)cuMemFreeAsync_ptsz, 11020 },
    { "cuMemAllocFromPoolAsync", { V(11020, cuMemAllocFromPoolAsync) }, (void *)cuMemAllocFromPoolAsync_ptsz,
      11020 },
    { "cuMemPoolCreate", { V(11020, cuMemPoolCreate) }, NULL, 0 },
    { "cuMemPoolDestroy", { V(11020, cuMemPoolDestroy) }, NULL, 0 },
    { "cuMemPoolTrimTo", { V(11020, cuMemPoolTrimTo) }, NULL, 0 },
    { "cuDeviceGetDefaultMemPool", { V(11020, cuDeviceGetDefaultMemPool) }, NULL, 0 },
    { "cuArrayCreate", { V(3020, cuArrayCreate_v2) }, NULL, 0 },
    { "cuArray3DCreate", { V(3020, cuArray3DCreate_v2) }, NULL, 0 },
    { "cuArrayDestroy", { V(2000, cuArrayDestroy) }, NULL, 0 },
    { "cuMipmappedArrayCreate", { V(5000, cuMipmappedArrayCreate) }, NULL, 0 },
    { "cuMipmappedArrayDestroy", { V(5000, cuMipmappedArrayDestroy) }, NULL, 0 },
    { "cuModuleLoadData", { V(2000, cuModuleLoadData) }, NULL, 0 },
    { "cuModuleUnload", { V(2000, cuModuleUnload) }, NULL, 0 },
    { "cuModuleGetFunction", { V(2000, cuModuleGetFunction) }, NULL, 0 },
    { "cuLaunchKernel", { V(4000, cuLaunchKernel) }, (void *)cuLaunchKernel_ptsz, 7000 },
    { "cuLaunchKernelEx", { V(11060, cuLaunchKernelEx) }, (void *)cuLaunchKernelEx_ptsz, 11060 },
    { "cuLaunchCooperativeKernel", { V(9000, cuLaunchCooperativeKernel) }, (void *)cuLaunchCooperativeKernel_ptsz,
      9000 },
    /* the CUDA 10.0 cuStreamBeginCapture(hStream) and its _ptsz are not simulated */
    { "cuStreamBeginCapture", { V(10010, cuStreamBeginCapture_v2) }, (void *)cuStreamBeginCapture_v2_ptsz, 10010 },
    { "cuStreamEndCapture", { V(10000, cuStreamEndCapture) }, (void *)cuStreamEndCapture_ptsz, 10000 },
    { "cuStreamIsCapturing", { V(10000, cuStreamIsCapturing) }, (void *)cuStreamIsCapturing_ptsz, 10000 },
    { "cuThreadExchangeStreamCaptureMode", { V(10010, cuThreadExchangeStreamCaptureMode) }, NULL, 0 },
    { "cuGraphInstantiateWithFlags", { V(11040, cuGraphInstantiateWithFlags) }, NULL, 0 },
    { "cuGraphLaunch", { V(10000, cuGraphLaunch) }, (void *)cuGraphLaunch_ptsz, 10000 },
    { "cuGraphExecDestroy", { V(10000, cuGraphExecDestroy) }, NULL, 0 },
    { "cuGraphDestroy", { V(10000, cuGraphDestroy) }, NULL, 0 },
    { "cuEventCreate", { V(2000, cuEventCreate) }, NULL, 0 },
    { "cuEventRecord", { V(2000, cuEventRecord) }, (void *)cuEventRecord_ptsz, 7000 },
    { "cuEventQuery", { V(2000, cuEventQuery) }, NULL, 0 },
    { "cuEventSynchronize", { V(2000, cuEventSynchronize) }, NULL, 0 },
    { "cuEventElapsedTime", { V(2000, cuEventElapsedTime), V(12080, cuEventElapsedTime_v2) }, NULL, 0 },
    { "cuEventDestroy", { V(2000, cuEventDestroy), V(4000, cuEventDestroy_v2) }, NULL, 0 },
    { "cuStreamCreate", { V(2000, cuStreamCreate) }, NULL, 0 },
    { "cuStreamQuery", { V(2000, cuStreamQuery) }, (void *)cuStreamQuery_ptsz, 7000 },
    { "cuStreamDestroy", { V(2000, cuStreamDestroy), V(4000, cuStreamDestroy_v2) }, NULL, 0 },
    { "cuStreamSynchronize", { V(2000, cuStreamSynchronize) }, (void *)cuStreamSynchronize_ptsz, 7000 },
    /* the other entry points that name a device (fake_cuda_devx.c) */
    { "cuDevicePrimaryCtxSetFlags",
      { V(7000, cuDevicePrimaryCtxSetFlags), V(11000, cuDevicePrimaryCtxSetFlags_v2) }, NULL, 0 },
    { "cuDeviceComputeCapability", { V(2000, cuDeviceComputeCapability) }, NULL, 0 },
    { "cuDeviceGetProperties", { V(2000, cuDeviceGetProperties) }, NULL, 0 },
    { "cuDeviceGetLuid", { V(10000, cuDeviceGetLuid) }, NULL, 0 },
    { "cuDeviceGetTexture1DLinearMaxWidth", { V(11010, cuDeviceGetTexture1DLinearMaxWidth) }, NULL, 0 },
    { "cuDeviceGetExecAffinitySupport", { V(11040, cuDeviceGetExecAffinitySupport) }, NULL, 0 },
    { "cuDeviceGetNvSciSyncAttributes", { V(10020, cuDeviceGetNvSciSyncAttributes) }, NULL, 0 },
    { "cuDeviceGetHostAtomicCapabilities", { V(13000, cuDeviceGetHostAtomicCapabilities) }, NULL, 0 },
    { "cuDeviceGetP2PAtomicCapabilities", { V(13000, cuDeviceGetP2PAtomicCapabilities) }, NULL, 0 },
    { "cuDeviceRegisterAsyncNotification", { V(12040, cuDeviceRegisterAsyncNotification) }, NULL, 0 },
    { "cuDeviceUnregisterAsyncNotification", { V(12040, cuDeviceUnregisterAsyncNotification) }, NULL, 0 },
    { "cuDeviceGetMemPool", { V(11020, cuDeviceGetMemPool) }, NULL, 0 },
    { "cuDeviceSetMemPool", { V(11020, cuDeviceSetMemPool) }, NULL, 0 },
    { "cuDeviceGetGraphMemAttribute", { V(11040, cuDeviceGetGraphMemAttribute) }, NULL, 0 },
    { "cuDeviceSetGraphMemAttribute", { V(11040, cuDeviceSetGraphMemAttribute) }, NULL, 0 },
    { "cuDeviceGraphMemTrim", { V(11040, cuDeviceGraphMemTrim) }, NULL, 0 },
    { "cuKernelGetAttribute", { V(12000, cuKernelGetAttribute) }, NULL, 0 },
    { "cuKernelSetAttribute", { V(12000, cuKernelSetAttribute) }, NULL, 0 },
    { "cuKernelSetCacheConfig", { V(12000, cuKernelSetCacheConfig) }, NULL, 0 },
    { "cuArrayGetMemoryRequirements", { V(11060, cuArrayGetMemoryRequirements) }, NULL, 0 },
    { "cuMipmappedArrayGetMemoryRequirements", { V(11060, cuMipmappedArrayGetMemoryRequirements) }, NULL, 0 },
    { "cuStreamGetDevice", { V(12080, cuStreamGetDevice) }, (void *)cuStreamGetDevice_ptsz, 12080 },
    { "cuMemAdvise", { V(8000, cuMemAdvise), V(12020, cuMemAdvise_v2) }, NULL, 0 },
    { "cuMemPrefetchAsync",
      { VP(8000, cuMemPrefetchAsync, cuMemPrefetchAsync_ptsz), VP(12020, cuMemPrefetchAsync_v2, cuMemPrefetchAsync_v2_ptsz) },
      NULL, 0 },
    { "cuMemPrefetchBatchAsync", { V(13000, cuMemPrefetchBatchAsync) }, (void *)cuMemPrefetchBatchAsync_ptsz, 13000 },
    { "cuMemDiscardAndPrefetchBatchAsync", { V(13000, cuMemDiscardAndPrefetchBatchAsync) },
      (void *)cuMemDiscardAndPrefetchBatchAsync_ptsz, 13000 },
    { "cuMemRangeGetAttribute", { V(8000, cuMemRangeGetAttribute) }, NULL, 0 },
    { "cuMemRangeGetAttributes", { V(8000, cuMemRangeGetAttributes) }, NULL, 0 },
    { "cuPointerGetAttribute", { V(4000, cuPointerGetAttribute) }, NULL, 0 },
    { "cuPointerGetAttributes", { V(7000, cuPointerGetAttributes) }, NULL, 0 },
    { "cuMemGetAccess", { V(10020, cuMemGetAccess) }, NULL, 0 },
    { "cuMemGetAllocationPropertiesFromHandle", { V(10020, cuMemGetAllocationPropertiesFromHandle) }, NULL, 0 },
    { "cuMemPoolSetAccess", { V(11020, cuMemPoolSetAccess) }, NULL, 0 },
    { "cuMemPoolGetAccess", { V(11020, cuMemPoolGetAccess) }, NULL, 0 },
    { "cuMemGetDefaultMemPool", { V(13000, cuMemGetDefaultMemPool) }, NULL, 0 },
    { "cuMemGetMemPool", { V(13000, cuMemGetMemPool) }, NULL, 0 },
    { "cuMemSetMemPool", { V(13000, cuMemSetMemPool) }, NULL, 0 },
    { "cuMulticastAddDevice", { V(12010, cuMulticastAddDevice) }, NULL, 0 },
    { "cuMulticastUnbind", { V(12010, cuMulticastUnbind) }, NULL, 0 },
    { "cuGraphAddMemAllocNode", { V(11040, cuGraphAddMemAllocNode) }, NULL, 0 },
    { "cuGraphMemAllocNodeGetParams", { V(11040, cuGraphMemAllocNodeGetParams) }, NULL, 0 },
    { "cuGraphAddNode", { V(12020, cuGraphAddNode), V(12030, cuGraphAddNode_v2) }, NULL, 0 },
    { "cuMemcpyBatchAsync",
      { VP(12080, cuMemcpyBatchAsync, cuMemcpyBatchAsync_ptsz), VP(13000, cuMemcpyBatchAsync_v2, cuMemcpyBatchAsync_v2_ptsz) },
      NULL, 0 },
    { "cuMemcpy3DBatchAsync",
      { VP(12080, cuMemcpy3DBatchAsync, cuMemcpy3DBatchAsync_ptsz),
        VP(13000, cuMemcpy3DBatchAsync_v2, cuMemcpy3DBatchAsync_v2_ptsz) },
      NULL, 0 },
    { "cuMemcpyHtoD", { V(3020, cuMemcpyHtoD_v2) }, (void *)cuMemcpyHtoD_v2_ptds, 7000 },
    { "cuMemcpyDtoH", { V(3020, cuMemcpyDtoH_v2) }, (void *)cuMemcpyDtoH_v2_ptds, 7000 },
    { "cuMemsetD8", { V(3020, cuMemsetD8_v2) }, (void *)cuMemsetD8_v2_ptds, 7000 },
};
#undef V
#undef VP

/* The lookup shared by both entry points. Returns the status; *pfn = the function or NULL. */
static CUdriverProcAddressQueryResult proc_lookup(const char *symbol, int cudaVersion, cuuint64_t flags,
                                                  void **pfn)
{
    *pfn = NULL;
    for (size_t i = 0; i < sizeof(g_procs) / sizeof(g_procs[0]); i++) {
        const struct proc_entry *e = &g_procs[i];
        int found = 0;

        if (strcmp(e->name, symbol) != 0)
            continue;
        /* A negative cudaVersion reads as "newest" on driver 580.159.04 (seen). */
        if (cudaVersion < 0)
            cudaVersion = INT_MAX;
        void *pt = NULL;
        for (int k = 0; k < 4 && e->v[k].fn != NULL; k++)
            if (e->v[k].since <= cudaVersion) {
                *pfn = e->v[k].fn;
                pt = e->v[k].per_thread;
                found = 1;
            }
        if (!found)
            return CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
        if ((flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && pt != NULL)
            *pfn = pt;
        else if ((flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && e->per_thread != NULL &&
                 e->per_thread_since <= cudaVersion)
            *pfn = e->per_thread;
        return CU_GET_PROC_ADDRESS_SUCCESS;
    }
    return CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
}

static int driver_version(void)
{
    int v = GS_CUDA_API_VERSION;

    (void)cuDriverGetVersion(&v);
    return v;
}

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *symbolStatus)
{
    CUdriverProcAddressQueryResult st;

    /* NULL symbol or pfn crash the real driver; the fake answers INVALID_VALUE. */
    if (symbol == NULL || pfn == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (flags > (CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
        return CUDA_ERROR_INVALID_VALUE;   /* seen for flags 4; *pfn untouched */
    if (cudaVersion > driver_version())
        return CUDA_ERROR_INVALID_VALUE;   /* newer than the driver (seen); *pfn untouched */
    st = proc_lookup(symbol, cudaVersion, flags, pfn);
    if (symbolStatus != NULL)
        *symbolStatus = st;
    /* Not found / version not sufficient: CUDA_SUCCESS with *pfn = NULL (seen, as documented). */
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    void *fn = NULL;

    if (symbol == NULL || pfn == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (flags > (CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) ||
        cudaVersion > driver_version())
        return CUDA_ERROR_INVALID_VALUE;
    /* The CUDA 11.3 entry point answers NOT_FOUND for a missing symbol and leaves *pfn
     * untouched (seen on driver 580.159.04). */
    if (proc_lookup(symbol, cudaVersion, flags, &fn) != CU_GET_PROC_ADDRESS_SUCCESS)
        return CUDA_ERROR_NOT_FOUND;
    *pfn = fn;
    return CUDA_SUCCESS;
}
