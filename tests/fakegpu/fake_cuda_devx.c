/* SPDX-License-Identifier: Apache-2.0 */
/* Fake libcuda.so.1 (fake_cuda.h): the other entry points that name a device: compute
 * capability and properties, primary context flags, a device's current memory pool and graph
 * memory, unified-memory advice and prefetches, access to pools and memory by location, a
 * pointer's device, a stream's device. Each validates its device as the real driver does
 * (CUDA_ERROR_INVALID_DEVICE); the simulated GPU keeps no unified-memory placement, so advice
 * and prefetches only check their arguments. fakegpu_touched_uuid() (not part of the real ABI)
 * tells a test which GPU the last call of its thread reached. */
#include "fake_cuda.h"

#include <string.h>

__thread int g_touched = -1;

EXPORT const char *fakegpu_touched_uuid(void)
{
    int d = g_touched;
    g_touched = -1;
    if (d < 0 || d >= g_ndev)
        return "";
    return dev_uuid_str(g_dev[d].gpu, g_dev[d].mig);
}

EXPORT CUresult cuDeviceComputeCapability(int *major, int *minor, CUdevice dev)
{
    ENTER();
    if (major == NULL || minor == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    CUresult rc = cuDeviceGetAttribute(major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    return rc != CUDA_SUCCESS ? rc : cuDeviceGetAttribute(minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
}

EXPORT CUresult cuDeviceGetProperties(CUdevprop *prop, CUdevice dev)
{
    static const CUdevice_attribute a[] = {
        CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X,
        CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X,
        CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z,
        CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY,
        CU_DEVICE_ATTRIBUTE_WARP_SIZE, CU_DEVICE_ATTRIBUTE_MAX_PITCH, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK,
        CU_DEVICE_ATTRIBUTE_CLOCK_RATE, CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT,
    };
    int v[sizeof(a) / sizeof(a[0])];
    ENTER();
    if (prop == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    for (size_t i = 0; i < sizeof(a) / sizeof(a[0]); i++)
        if (cuDeviceGetAttribute(&v[i], a[i], dev) != CUDA_SUCCESS)
            v[i] = 0;
    memcpy(prop, v, sizeof(*prop));   /* the struct is these ints, in this order */
    return CUDA_SUCCESS;
}

static CUresult set_flags(CUdevice dev, unsigned int flags)
{
    ENTER();
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    if (flags & ~(unsigned)CU_CTX_FLAGS_MASK)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;   /* the simulated contexts have no scheduling to change */
}
EXPORT CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) { return set_flags(dev, flags); }
EXPORT CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) { return set_flags(dev, flags); }

/* Each device's current pool (cuDeviceSetMemPool); NULL: its default pool. */
static struct CUmemPoolHandle_st *g_current_pool[MAX_DEV];

EXPORT CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    ENTER();
    if (pool == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    LOCK();
    *pool = g_current_pool[dev] != NULL ? g_current_pool[dev] : &g_default_pool[dev];
    UNLOCK();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
    ENTER();
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    if (pool == NULL || pool->dev != dev)   /* a pool of another device: refused */
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    g_current_pool[dev] = pool;
    UNLOCK();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGraphMemTrim(CUdevice device)
{
    ENTER();
    return valid_dev(device) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

/* No graph allocations are simulated: every figure is 0; the high-water marks reset to 0. */
EXPORT CUresult cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void *value)
{
    ENTER();
    if (!valid_dev(device))
        return CUDA_ERROR_INVALID_DEVICE;
    if (value == NULL || attr > CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH)
        return CUDA_ERROR_INVALID_VALUE;
    *(cuuint64_t *)value = 0;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void *value)
{
    ENTER();
    if (!valid_dev(device))
        return CUDA_ERROR_INVALID_DEVICE;
    if (value == NULL || (attr != CU_GRAPH_MEM_ATTR_USED_MEM_HIGH && attr != CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH) ||
        *(cuuint64_t *)value != 0)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

/* A device or the host; locations of other kinds (host NUMA) are taken as the host. */
static CUresult target(CUdevice dev)
{
    return dev == CU_DEVICE_CPU || valid_dev(dev) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}
static CUresult target_loc(const CUmemLocation *l)
{
    if (l->type == CU_MEM_LOCATION_TYPE_DEVICE)
        return valid_dev(l->id) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
    return l->type == CU_MEM_LOCATION_TYPE_INVALID ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

ENTRY_POINT(cuMemAdvise, (CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUdevice device),
            devPtr == 0 || count == 0 || advice < 1 || advice > 6 ? CUDA_ERROR_INVALID_VALUE : target(device))
ENTRY_POINT(cuMemAdvise_v2, (CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUmemLocation location),
            devPtr == 0 || count == 0 || advice < 1 || advice > 6 ? CUDA_ERROR_INVALID_VALUE : target_loc(&location))
ENTRY_POINT(cuMemPrefetchAsync, (CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream),
            devPtr == 0 || count == 0 || hStream == (CUstream)-1 ? CUDA_ERROR_INVALID_VALUE : target(dstDevice))
ENTRY_POINT(cuMemPrefetchAsync_ptsz, (CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream),
            devPtr == 0 || count == 0 || hStream == (CUstream)-1 ? CUDA_ERROR_INVALID_VALUE : target(dstDevice))
ENTRY_POINT(cuMemPrefetchAsync_v2,
            (CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags, CUstream hStream),
            devPtr == 0 || count == 0 || flags != 0 || hStream == (CUstream)-1 ? CUDA_ERROR_INVALID_VALUE
                                                                                  : target_loc(&location))
ENTRY_POINT(cuMemPrefetchAsync_v2_ptsz,
            (CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags, CUstream hStream),
            devPtr == 0 || count == 0 || flags != 0 || hStream == (CUstream)-1 ? CUDA_ERROR_INVALID_VALUE
                                                                                  : target_loc(&location))

EXPORT CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count)
{
    ENTER();
    if (pool == NULL || (map == NULL && count != 0))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++) {
        if (map[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE)
            return CUDA_ERROR_INVALID_VALUE;
        if (!valid_dev(map[i].location.id))
            return CUDA_ERROR_INVALID_DEVICE;
    }
    return CUDA_SUCCESS;
}

/* A pool's own device reads and writes it; access granted to others is not kept. */
EXPORT CUresult cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool memPool, CUmemLocation *location)
{
    ENTER();
    if (flags == NULL || memPool == NULL || location == NULL || location->type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(location->id))
        return CUDA_ERROR_INVALID_DEVICE;
    *flags = memPool->dev == location->id ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE : CU_MEM_ACCESS_FLAGS_PROT_NONE;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location, CUdeviceptr ptr)
{
    ENTER();
    if (flags == NULL || location == NULL || ptr == 0)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = target_loc(location);
    if (rc == CUDA_SUCCESS)
        *flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return rc;
}

/* CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: the device of the allocation that holds ptr. */
EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    ENTER();
    if (data == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (attribute != CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)
        return CUDA_ERROR_NOT_SUPPORTED;   /* the one attribute the simulated GPU answers */
    LOCK();
    struct range *r = range_at(ptr);
    int dev = r != NULL ? r->dev : -1;
    UNLOCK();
    if (dev < 0)
        return CUDA_ERROR_INVALID_VALUE;
    *(int *)data = dev;
    return CUDA_SUCCESS;
}

/* The device of a stream's context (the special handles: the current context's). */
static CUresult stream_device(CUstream hStream, CUdevice *device)
{
    ENTER();
    if (device == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUctx_st *c = NULL;
    if (hStream == NULL || hStream == CU_STREAM_LEGACY || hStream == CU_STREAM_PER_THREAD) {
        CUresult rc = need_ctx(&c);
        if (rc != CUDA_SUCCESS)
            return rc;
        *device = c->dev;
        return CUDA_SUCCESS;
    }
    return CUDA_ERROR_NOT_SUPPORTED;   /* a created stream's device: not simulated */
}
EXPORT CUresult cuStreamGetDevice(CUstream hStream, CUdevice *device) { return stream_device(hStream, device); }
EXPORT CUresult cuStreamGetDevice_ptsz(CUstream hStream, CUdevice *device) { return stream_device(hStream, device); }

/* ---- what the simulated GPU does not have: the device is checked as the real driver checks it,
 * then CUDA_ERROR_NOT_SUPPORTED (no Windows LUID, no NvSci, no async notifications, no library
 * kernels, no multicast objects, no unified-memory placement to ask about, no graph memory). */
#define UNSIMULATED(name, params, ...)                                                     \
    EXPORT CUresult name params                                                            \
    {                                                                                      \
        CUdevice devs_[] = {__VA_ARGS__};                                                  \
        ENTER();                                                                           \
        for (size_t i_ = 0; i_ < sizeof(devs_) / sizeof(devs_[0]); i_++)                   \
            if (devs_[i_] != CU_DEVICE_INVALID && !valid_dev(devs_[i_]))                   \
                return CUDA_ERROR_INVALID_DEVICE;                                          \
        return CUDA_ERROR_NOT_SUPPORTED;                                                   \
    }
#define NODEV CU_DEVICE_INVALID
#define UNUSED_(x) (void)(x)

UNSIMULATED(cuDeviceGetLuid, (char *luid, unsigned int *deviceNodeMask, CUdevice dev), (UNUSED_(luid), UNUSED_(deviceNodeMask), dev))
UNSIMULATED(cuDeviceGetTexture1DLinearMaxWidth,
            (size_t *maxWidthInElements, CUarray_format format, unsigned numChannels, CUdevice dev),
            (UNUSED_(maxWidthInElements), UNUSED_(format), UNUSED_(numChannels), dev))
UNSIMULATED(cuDeviceGetExecAffinitySupport, (int *pi, CUexecAffinityType type, CUdevice dev), (UNUSED_(pi), UNUSED_(type), dev))
UNSIMULATED(cuDeviceGetNvSciSyncAttributes, (void *nvSciSyncAttrList, CUdevice dev, int flags),
            (UNUSED_(nvSciSyncAttrList), UNUSED_(flags), dev))
UNSIMULATED(cuDeviceGetHostAtomicCapabilities,
            (unsigned int *capabilities, const CUatomicOperation *operations, unsigned int count, CUdevice dev),
            (UNUSED_(capabilities), UNUSED_(operations), UNUSED_(count), dev))
UNSIMULATED(cuDeviceGetP2PAtomicCapabilities,
            (unsigned int *capabilities, const CUatomicOperation *operations, unsigned int count, CUdevice srcDevice,
             CUdevice dstDevice), (UNUSED_(capabilities), UNUSED_(operations), UNUSED_(count), srcDevice), dstDevice)
UNSIMULATED(cuDeviceRegisterAsyncNotification,
            (CUdevice device, CUasyncCallback callbackFunc, void *userData, CUasyncCallbackHandle *callback),
            (UNUSED_(callbackFunc), UNUSED_(userData), UNUSED_(callback), device))
UNSIMULATED(cuDeviceUnregisterAsyncNotification, (CUdevice device, CUasyncCallbackHandle callback), (UNUSED_(callback), device))
UNSIMULATED(cuKernelGetAttribute, (int *pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev),
            (UNUSED_(pi), UNUSED_(attrib), UNUSED_(kernel), dev))
UNSIMULATED(cuKernelSetAttribute, (CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev),
            (UNUSED_(attrib), UNUSED_(val), UNUSED_(kernel), dev))
UNSIMULATED(cuKernelSetCacheConfig, (CUkernel kernel, CUfunc_cache config, CUdevice dev), (UNUSED_(kernel), UNUSED_(config), dev))
UNSIMULATED(cuArrayGetMemoryRequirements,
            (CUDA_ARRAY_MEMORY_REQUIREMENTS *memoryRequirements, CUarray array, CUdevice device),
            (UNUSED_(memoryRequirements), UNUSED_(array), device))
UNSIMULATED(cuMipmappedArrayGetMemoryRequirements,
            (CUDA_ARRAY_MEMORY_REQUIREMENTS *memoryRequirements, CUmipmappedArray mipmap, CUdevice device),
            (UNUSED_(memoryRequirements), UNUSED_(mipmap), device))
UNSIMULATED(cuMulticastAddDevice, (CUmemGenericAllocationHandle mcHandle, CUdevice dev), (UNUSED_(mcHandle), dev))
UNSIMULATED(cuMulticastUnbind, (CUmemGenericAllocationHandle mcHandle, CUdevice dev, size_t mcOffset, size_t size),
            (UNUSED_(mcHandle), UNUSED_(mcOffset), UNUSED_(size), dev))

/* Arrays of locations: each device checked. */
static CUresult locs_ok(const CUmemLocation *l, size_t n)
{
    for (size_t i = 0; l != NULL && i < n; i++)
        if (l[i].type == CU_MEM_LOCATION_TYPE_DEVICE && !valid_dev(l[i].id))
            return CUDA_ERROR_INVALID_DEVICE;
    return CUDA_ERROR_NOT_SUPPORTED;
}
#define BATCH_(name)                                                                                         \
    EXPORT CUresult name(CUdeviceptr *dptrs, size_t *sizes, size_t count, CUmemLocation *prefetchLocs,       \
                         size_t *prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags, CUstream hStream) \
    {                                                                                                        \
        ENTER();                                                                                             \
        (void)dptrs, (void)sizes, (void)count, (void)prefetchLocIdxs, (void)flags, (void)hStream;           \
        return locs_ok(prefetchLocs, numPrefetchLocs);                                                       \
    }
BATCH_(cuMemPrefetchBatchAsync)
BATCH_(cuMemPrefetchBatchAsync_ptsz)
BATCH_(cuMemDiscardAndPrefetchBatchAsync)
BATCH_(cuMemDiscardAndPrefetchBatchAsync_ptsz)

#define POOL_LOC_(name, params, loc, ...)                                                  \
    EXPORT CUresult name params                                                            \
    {                                                                                      \
        ENTER();                                                                           \
        __VA_ARGS__;                                                                       \
        if ((loc) == NULL)                                                                 \
            return CUDA_ERROR_INVALID_VALUE;                                               \
        return locs_ok((loc), 1);                                                          \
    }
POOL_LOC_(cuMemGetDefaultMemPool, (CUmemoryPool *pool_out, CUmemLocation *location, CUmemAllocationType type), location,
          (void)pool_out, (void)type)
POOL_LOC_(cuMemGetMemPool, (CUmemoryPool *pool, CUmemLocation *location, CUmemAllocationType type), location, (void)pool,
          (void)type)
POOL_LOC_(cuMemSetMemPool, (CUmemLocation *location, CUmemAllocationType type, CUmemoryPool pool), location, (void)pool,
          (void)type)

EXPORT CUresult cuMemRangeGetAttribute(void *data, size_t dataSize, CUmem_range_attribute attribute, CUdeviceptr devPtr,
                                       size_t count)
{
    ENTER();
    (void)data, (void)dataSize, (void)attribute, (void)devPtr, (void)count;
    return CUDA_ERROR_NOT_SUPPORTED;
}

EXPORT CUresult cuMemRangeGetAttributes(void **data, size_t *dataSizes, CUmem_range_attribute *attributes,
                                        size_t numAttributes, CUdeviceptr devPtr, size_t count)
{
    ENTER();
    (void)data, (void)dataSizes, (void)attributes, (void)numAttributes, (void)devPtr, (void)count;
    return CUDA_ERROR_NOT_SUPPORTED;
}

EXPORT CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes, void **data,
                                       CUdeviceptr ptr)
{
    ENTER();
    for (unsigned i = 0; attributes != NULL && data != NULL && i < numAttributes; i++) {
        CUresult rc = cuPointerGetAttribute(data[i], attributes[i], ptr);
        if (rc != CUDA_SUCCESS)
            return rc;
    }
    return attributes == NULL || data == NULL ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

EXPORT CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop, CUmemGenericAllocationHandle handle)
{
    ENTER();
    (void)prop, (void)handle;
    return CUDA_ERROR_NOT_SUPPORTED;
}

EXPORT CUresult cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                       size_t numDependencies, CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams)
{
    ENTER();
    (void)phGraphNode, (void)hGraph, (void)dependencies, (void)numDependencies;
    return nodeParams == NULL ? CUDA_ERROR_INVALID_VALUE : locs_ok(&nodeParams->poolProps.location, 1);
}

EXPORT CUresult cuGraphMemAllocNodeGetParams(CUgraphNode hNode, CUDA_MEM_ALLOC_NODE_PARAMS *params_out)
{
    ENTER();
    (void)hNode, (void)params_out;
    return CUDA_ERROR_NOT_SUPPORTED;
}

EXPORT CUresult cuGraphAddNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                               size_t numDependencies, CUgraphNodeParams *nodeParams)
{
    ENTER();
    (void)phGraphNode, (void)hGraph, (void)dependencies, (void)numDependencies;
    if (nodeParams == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return nodeParams->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC ? locs_ok(&nodeParams->alloc.poolProps.location, 1)
                                                            : CUDA_ERROR_NOT_SUPPORTED;
}

EXPORT CUresult cuGraphAddNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                  const CUgraphEdgeData *dependencyData, size_t numDependencies,
                                  CUgraphNodeParams *nodeParams)
{
    (void)dependencyData;
    return cuGraphAddNode(phGraphNode, hGraph, dependencies, numDependencies, nodeParams);
}

/* ---- batched copies (CUDA 12.8): as the other copies, arguments and hints checked, no data
 * moved; *failIdx is SIZE_MAX unless one copy's arguments are wrong (its index then). */
static CUresult hint_ok(const CUmemLocation *l)
{
    if (l->type == CU_MEM_LOCATION_TYPE_DEVICE && !valid_dev(l->id))
        return CUDA_ERROR_INVALID_DEVICE;
    return CUDA_SUCCESS;
}

static CUresult batch_copy(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                           const CUmemcpyAttributes *attrs, const size_t *attrsIdxs, size_t numAttrs, size_t *failIdx)
{
    ENTER();
    if (failIdx != NULL)
        *failIdx = SIZE_MAX;
    if (dsts == NULL || srcs == NULL || sizes == NULL || count == 0 || attrs == NULL || attrsIdxs == NULL ||
        numAttrs == 0 || numAttrs > count || attrsIdxs[0] != 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < numAttrs; i++) {
        CUresult rc = hint_ok(&attrs[i].srcLocHint);
        if (rc == CUDA_SUCCESS)
            rc = hint_ok(&attrs[i].dstLocHint);
        if (rc != CUDA_SUCCESS)
            return rc;
    }
    for (size_t i = 0; i < count; i++)
        if (dsts[i] == 0 || srcs[i] == 0 || sizes[i] == 0) {
            if (failIdx != NULL)
                *failIdx = i;
            return CUDA_ERROR_INVALID_VALUE;
        }
    return CUDA_SUCCESS;
}

ENTRY_POINT(cuMemcpyBatchAsync,
            (CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count, CUmemcpyAttributes *attrs,
             size_t *attrsIdxs, size_t numAttrs, size_t *failIdx, CUstream hStream),
            ((void)hStream, batch_copy(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx)))
ENTRY_POINT(cuMemcpyBatchAsync_ptsz,
            (CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count, CUmemcpyAttributes *attrs,
             size_t *attrsIdxs, size_t numAttrs, size_t *failIdx, CUstream hStream),
            ((void)hStream, batch_copy(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx)))
ENTRY_POINT(cuMemcpyBatchAsync_v2,
            (CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count, CUmemcpyAttributes *attrs,
             size_t *attrsIdxs, size_t numAttrs, CUstream hStream),
            ((void)hStream, batch_copy(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, NULL)))
ENTRY_POINT(cuMemcpyBatchAsync_v2_ptsz,
            (CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count, CUmemcpyAttributes *attrs,
             size_t *attrsIdxs, size_t numAttrs, CUstream hStream),
            ((void)hStream, batch_copy(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, NULL)))

static CUresult batch_3d(size_t numOps, const CUDA_MEMCPY3D_BATCH_OP *ops, size_t *failIdx, unsigned long long flags)
{
    ENTER();
    if (failIdx != NULL)
        *failIdx = SIZE_MAX;
    if (numOps == 0 || ops == NULL || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < numOps; i++) {
        const CUmemcpy3DOperand *o[2] = {&ops[i].src, &ops[i].dst};
        for (int k = 0; k < 2; k++) {
            CUresult rc = o[k]->type == CU_MEMCPY_OPERAND_TYPE_POINTER ? hint_ok(&o[k]->op.ptr.locHint)
                          : o[k]->type == CU_MEMCPY_OPERAND_TYPE_ARRAY ? CUDA_SUCCESS
                                                                        : CUDA_ERROR_INVALID_VALUE;
            if (rc == CUDA_SUCCESS && o[k]->type == CU_MEMCPY_OPERAND_TYPE_POINTER && o[k]->op.ptr.ptr == 0)
                rc = CUDA_ERROR_INVALID_VALUE;
            if (rc != CUDA_SUCCESS) {
                if (failIdx != NULL && rc == CUDA_ERROR_INVALID_VALUE)
                    *failIdx = i;
                return rc;
            }
        }
    }
    return CUDA_SUCCESS;
}

ENTRY_POINT(cuMemcpy3DBatchAsync,
            (size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, size_t *failIdx, unsigned long long flags, CUstream hStream),
            ((void)hStream, batch_3d(numOps, opList, failIdx, flags)))
ENTRY_POINT(cuMemcpy3DBatchAsync_ptsz,
            (size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, size_t *failIdx, unsigned long long flags, CUstream hStream),
            ((void)hStream, batch_3d(numOps, opList, failIdx, flags)))
ENTRY_POINT(cuMemcpy3DBatchAsync_v2,
            (size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, unsigned long long flags, CUstream hStream),
            ((void)hStream, batch_3d(numOps, opList, NULL, flags)))
ENTRY_POINT(cuMemcpy3DBatchAsync_v2_ptsz,
            (size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, unsigned long long flags, CUstream hStream),
            ((void)hStream, batch_3d(numOps, opList, NULL, flags)))
