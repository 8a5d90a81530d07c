/*
 * Every other CUDA entry point that names a device (NVIDIA's cuda.h lists them; the test
 * tests/vgpu/test_devices.sh reads that header): a device number, a memory location or an array
 * of them going in is the slice's and is translated to the driver's, or refused
 * (CUDA_ERROR_INVALID_DEVICE) when it names no slice device; one coming out is the driver's and
 * is given back as the slice's (devmap.h). Where the driver was initialised through our cuInit
 * both are the same numbers and only the refusal is left.
 */

#include <stdlib.h>
#include <string.h>

#include "vgpu/devmap.h"
#include "vgpu/vgpu.h"

#define S gs_vgpu_state

#define REAL(name, ...)                                                                            \
        ((gs_vgpu_load_cuda() == 0 && S.cu.name != NULL) ? S.cu.name(__VA_ARGS__) : CUDA_ERROR_NOT_INITIALIZED)

#define IN(dev)                                                                                    \
        do {                                                                                       \
                if (gs_vgpu_dev_in((dev), &(dev)) < 0)                                             \
                        return CUDA_ERROR_INVALID_DEVICE;                                          \
        } while (0)
/* the same, for a device that may be the host (CU_DEVICE_CPU) */
#define INX(dev)                                                                                   \
        do {                                                                                       \
                if (gs_vgpu_devx_in((dev), &(dev)) < 0)                                            \
                        return CUDA_ERROR_INVALID_DEVICE;                                          \
        } while (0)
#define LOC_IN(loc)                                                                                \
        do {                                                                                       \
                if (gs_vgpu_loc_in(&(loc)) < 0)                                                    \
                        return CUDA_ERROR_INVALID_DEVICE;                                          \
        } while (0)

/* ---- a device by value ---------------------------------------------------------------------- */

/* name(params) with the device parameter dev: translated, then the driver's. */
#define ONE_DEVICE(name, params, dev, ...)                                                         \
        GS_EXPORT CUresult name params                                                             \
        {                                                                                          \
                IN(dev);                                                                           \
                return REAL(name, __VA_ARGS__);                                                    \
        }

ONE_DEVICE(cuDevicePrimaryCtxSetFlags, (CUdevice dev, unsigned int flags), dev, dev, flags)
ONE_DEVICE(cuDevicePrimaryCtxSetFlags_v2, (CUdevice dev, unsigned int flags), dev, dev, flags)
ONE_DEVICE(cuDeviceComputeCapability, (int *major, int *minor, CUdevice dev), dev, major, minor, dev)
ONE_DEVICE(cuDeviceGetProperties, (CUdevprop *prop, CUdevice dev), dev, prop, dev)
ONE_DEVICE(cuDeviceGetLuid, (char *luid, unsigned int *deviceNodeMask, CUdevice dev), dev, luid, deviceNodeMask, dev)
ONE_DEVICE(cuDeviceGetTexture1DLinearMaxWidth,
           (size_t *maxWidthInElements, CUarray_format format, unsigned numChannels, CUdevice dev), dev,
           maxWidthInElements, format, numChannels, dev)
ONE_DEVICE(cuDeviceGetExecAffinitySupport, (int *pi, CUexecAffinityType type, CUdevice dev), dev, pi, type, dev)
ONE_DEVICE(cuDeviceGetNvSciSyncAttributes, (void *nvSciSyncAttrList, CUdevice dev, int flags), dev,
           nvSciSyncAttrList, dev, flags)
ONE_DEVICE(cuDeviceGetHostAtomicCapabilities,
           (unsigned int *capabilities, const CUatomicOperation *operations, unsigned int count, CUdevice dev), dev,
           capabilities, operations, count, dev)
ONE_DEVICE(cuDeviceRegisterAsyncNotification,
           (CUdevice device, CUasyncCallback callbackFunc, void *userData, CUasyncCallbackHandle *callback), device,
           device, callbackFunc, userData, callback)
ONE_DEVICE(cuDeviceUnregisterAsyncNotification, (CUdevice device, CUasyncCallbackHandle callback), device, device,
           callback)
ONE_DEVICE(cuDeviceSetMemPool, (CUdevice dev, CUmemoryPool pool), dev, dev, pool)
ONE_DEVICE(cuDeviceGetGraphMemAttribute, (CUdevice device, CUgraphMem_attribute attr, void *value), device, device,
           attr, value)
ONE_DEVICE(cuDeviceSetGraphMemAttribute, (CUdevice device, CUgraphMem_attribute attr, void *value), device, device,
           attr, value)
ONE_DEVICE(cuDeviceGraphMemTrim, (CUdevice device), device, device)
ONE_DEVICE(cuKernelGetAttribute, (int *pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev), dev, pi,
           attrib, kernel, dev)
ONE_DEVICE(cuKernelSetAttribute, (CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev), dev, attrib,
           val, kernel, dev)
ONE_DEVICE(cuKernelSetCacheConfig, (CUkernel kernel, CUfunc_cache config, CUdevice dev), dev, kernel, config, dev)
ONE_DEVICE(cuArrayGetMemoryRequirements,
           (CUDA_ARRAY_MEMORY_REQUIREMENTS *memoryRequirements, CUarray array, CUdevice device), device,
           memoryRequirements, array, device)
ONE_DEVICE(cuMipmappedArrayGetMemoryRequirements,
           (CUDA_ARRAY_MEMORY_REQUIREMENTS *memoryRequirements, CUmipmappedArray mipmap, CUdevice device), device,
           memoryRequirements, mipmap, device)
ONE_DEVICE(cuMulticastAddDevice, (CUmemGenericAllocationHandle mcHandle, CUdevice dev), dev, mcHandle, dev)
ONE_DEVICE(cuMulticastUnbind, (CUmemGenericAllocationHandle mcHandle, CUdevice dev, size_t mcOffset, size_t size),
           dev, mcHandle, dev, mcOffset, size)

GS_EXPORT CUresult cuDeviceGetP2PAtomicCapabilities(unsigned int *capabilities, const CUatomicOperation *operations,
                                                    unsigned int count, CUdevice srcDevice, CUdevice dstDevice)
{
        IN(srcDevice);
        IN(dstDevice);
        return REAL(cuDeviceGetP2PAtomicCapabilities, capabilities, operations, count, srcDevice, dstDevice);
}

GS_EXPORT CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
        IN(dev);
        CUresult rc = REAL(cuDeviceGetMemPool, pool, dev);
        if (rc == CUDA_SUCCESS && pool != NULL)
                gs_vgpu_pool_seen(*pool, dev);
        return rc;
}

/* ---- unified memory: advice and prefetches (the host, CU_DEVICE_CPU, passes) ---------------- */

GS_EXPORT CUresult cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUdevice device)
{
        INX(device);
        return REAL(cuMemAdvise, devPtr, count, advice, device);
}

GS_EXPORT CUresult cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUmemLocation location)
{
        LOC_IN(location);
        return REAL(cuMemAdvise_v2, devPtr, count, advice, location);
}

GS_EXPORT CUresult cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream)
{
        INX(dstDevice);
        return REAL(cuMemPrefetchAsync, devPtr, count, dstDevice, hStream);
}

GS_EXPORT CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream)
{
        INX(dstDevice);
        return REAL(cuMemPrefetchAsync_ptsz, devPtr, count, dstDevice, hStream);
}

GS_EXPORT CUresult cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags,
                                         CUstream hStream)
{
        LOC_IN(location);
        return REAL(cuMemPrefetchAsync_v2, devPtr, count, location, flags, hStream);
}

GS_EXPORT CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr devPtr, size_t count, CUmemLocation location,
                                              unsigned int flags, CUstream hStream)
{
        LOC_IN(location);
        return REAL(cuMemPrefetchAsync_v2_ptsz, devPtr, count, location, flags, hStream);
}

/* The batch prefetches: numPrefetchLocs locations, copied and translated. */
#define BATCH_PREFETCH(name)                                                                       \
        GS_EXPORT CUresult name(CUdeviceptr *dptrs, size_t *sizes, size_t count, CUmemLocation *prefetchLocs, \
                                size_t *prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags, \
                                CUstream hStream)                                                  \
        {                                                                                          \
                CUmemLocation local[8], *mine;                                                     \
                if (gs_vgpu_locs_in(prefetchLocs, numPrefetchLocs, local, 8, &mine) < 0)           \
                        return mine == NULL ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_INVALID_DEVICE; \
                CUresult rc = REAL(name, dptrs, sizes, count, mine, prefetchLocIdxs, numPrefetchLocs, flags, hStream); \
                if (mine != local && mine != prefetchLocs)                                         \
                        free(mine);                                                                \
                return rc;                                                                         \
        }
BATCH_PREFETCH(cuMemPrefetchBatchAsync)
BATCH_PREFETCH(cuMemPrefetchBatchAsync_ptsz)
BATCH_PREFETCH(cuMemDiscardAndPrefetchBatchAsync)
BATCH_PREFETCH(cuMemDiscardAndPrefetchBatchAsync_ptsz)

/* ---- device numbers the driver answers --------------------------------------------------------- */

static CUresult device_out(CUresult rc, CUdevice *device)
{
        if (rc != CUDA_SUCCESS || device == NULL)
                return rc;
        CUdevice d = gs_vgpu_dev_out(*device);
        if (d < 0) {
                *device = CU_DEVICE_INVALID;
                return CUDA_ERROR_INVALID_DEVICE;
        }
        *device = d;
        return rc;
}

GS_EXPORT CUresult cuCtxGetDevice(CUdevice *device) { return device_out(REAL(cuCtxGetDevice, device), device); }

GS_EXPORT CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
        return device_out(REAL(cuCtxGetDevice_v2, device, ctx), device);
}

GS_EXPORT CUresult cuStreamGetDevice(CUstream hStream, CUdevice *device)
{
        return device_out(REAL(cuStreamGetDevice, hStream, device), device);
}

GS_EXPORT CUresult cuStreamGetDevice_ptsz(CUstream hStream, CUdevice *device)
{
        return device_out(REAL(cuStreamGetDevice_ptsz, hStream, device), device);
}

GS_EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
        CUresult rc = REAL(cuPointerGetAttribute, data, attribute, ptr);
        if (rc == CUDA_SUCCESS && data != NULL && attribute == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)
                return device_out(rc, (CUdevice *)data);
        return rc;
}

GS_EXPORT CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes, void **data,
                                          CUdeviceptr ptr)
{
        CUresult rc = REAL(cuPointerGetAttributes, numAttributes, attributes, data, ptr);
        for (unsigned i = 0; rc == CUDA_SUCCESS && attributes != NULL && data != NULL && i < numAttributes; i++)
                if (attributes[i] == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL && data[i] != NULL)
                        rc = device_out(rc, (CUdevice *)data[i]);
        return rc;
}

/* One range attribute's answer, in place: a device (2, 4), an array of them (3), a location id
 * (6, 8: a device only where its type, 5 or 7, says so; asked of the driver). */
static void range_out(void *data, size_t size, CUmem_range_attribute attribute, CUdeviceptr devPtr, size_t count)
{
        int *v = data;
        switch (attribute) {
        case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION:
        case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION:
        case CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY:
                for (size_t i = 0; i < size / sizeof(int); i++)
                        v[i] = gs_vgpu_devx_out(v[i]);
                return;
        case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID:
        case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID: {
                int type = 0;
                CUmem_range_attribute ta = attribute == CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID
                                                   ? CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE
                                                   : CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE;
                if (size >= sizeof(int) && REAL(cuMemRangeGetAttribute, &type, sizeof(type), ta, devPtr, count) ==
                                                   CUDA_SUCCESS && type == CU_MEM_LOCATION_TYPE_DEVICE)
                        v[0] = gs_vgpu_devx_out(v[0]);
                return;
        }
        default:
                return;
        }
}

GS_EXPORT CUresult cuMemRangeGetAttribute(void *data, size_t dataSize, CUmem_range_attribute attribute,
                                          CUdeviceptr devPtr, size_t count)
{
        CUresult rc = REAL(cuMemRangeGetAttribute, data, dataSize, attribute, devPtr, count);
        if (rc == CUDA_SUCCESS && data != NULL)
                range_out(data, dataSize, attribute, devPtr, count);
        return rc;
}

GS_EXPORT CUresult cuMemRangeGetAttributes(void **data, size_t *dataSizes, CUmem_range_attribute *attributes,
                                           size_t numAttributes, CUdeviceptr devPtr, size_t count)
{
        CUresult rc = REAL(cuMemRangeGetAttributes, data, dataSizes, attributes, numAttributes, devPtr, count);
        for (size_t i = 0; rc == CUDA_SUCCESS && data != NULL && dataSizes != NULL && attributes != NULL &&
                           i < numAttributes; i++)
                if (data[i] != NULL)
                        range_out(data[i], dataSizes[i], attributes[i], devPtr, count);
        return rc;
}

GS_EXPORT CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop, CUmemGenericAllocationHandle handle)
{
        CUresult rc = REAL(cuMemGetAllocationPropertiesFromHandle, prop, handle);
        if (rc == CUDA_SUCCESS && prop != NULL && gs_vgpu_loc_out(&prop->location) < 0)
                return CUDA_ERROR_INVALID_DEVICE;
        return rc;
}

/* ---- access and pools by location ------------------------------------------------------------ */

GS_EXPORT CUresult cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location, CUdeviceptr ptr)
{
        CUmemLocation l;
        if (location != NULL) {
                l = *location;
                LOC_IN(l);
        }
        return REAL(cuMemGetAccess, flags, location != NULL ? &l : NULL, ptr);
}

GS_EXPORT CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count)
{
        CUmemAccessDesc local[8], *mine;
        if (gs_vgpu_access_in(map, count, local, 8, &mine) < 0)
                return mine == NULL ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_INVALID_DEVICE;
        CUresult rc = REAL(cuMemPoolSetAccess, pool, mine, count);
        if (mine != local && mine != map)
                free(mine);
        return rc;
}

GS_EXPORT CUresult cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool memPool, CUmemLocation *location)
{
        CUmemLocation l;
        if (location != NULL) {
                l = *location;
                LOC_IN(l);
        }
        return REAL(cuMemPoolGetAccess, flags, memPool, location != NULL ? &l : NULL);
}

/* CUDA 13.0's pools by location (a device's, or the host's): the location goes in. */
#define POOL_BY_LOCATION(name)                                                                     \
        GS_EXPORT CUresult name(CUmemoryPool *pool, CUmemLocation *location, CUmemAllocationType type) \
        {                                                                                          \
                CUmemLocation l;                                                                   \
                if (location != NULL) {                                                            \
                        l = *location;                                                             \
                        LOC_IN(l);                                                                 \
                }                                                                                  \
                CUresult rc = REAL(name, pool, location != NULL ? &l : NULL, type);                \
                if (rc == CUDA_SUCCESS && pool != NULL && location != NULL &&                      \
                    l.type == CU_MEM_LOCATION_TYPE_DEVICE)                                         \
                        gs_vgpu_pool_seen(*pool, l.id);                                            \
                return rc;                                                                         \
        }
POOL_BY_LOCATION(cuMemGetDefaultMemPool)
POOL_BY_LOCATION(cuMemGetMemPool)

GS_EXPORT CUresult cuMemSetMemPool(CUmemLocation *location, CUmemAllocationType type, CUmemoryPool pool)
{
        CUmemLocation l;
        if (location != NULL) {
                l = *location;
                LOC_IN(l);
        }
        return REAL(cuMemSetMemPool, location != NULL ? &l : NULL, type, pool);
}

/* ---- graph allocations: the pool's location and the peers' ---------------------------------- */

/* A copy of an allocation node's parameters with the slice's devices made the driver's; its
 * access descriptors in `local` or malloc'ed (*freed: to free). -1: outside the slice / memory. */
static int alloc_params_in(const CUDA_MEM_ALLOC_NODE_PARAMS *in, CUDA_MEM_ALLOC_NODE_PARAMS *out,
                           CUmemAccessDesc *local, size_t room, CUmemAccessDesc **freed)
{
        *out = *in;
        *freed = NULL;
        if (gs_vgpu_loc_in(&out->poolProps.location) < 0)
                return -1;
        CUmemAccessDesc *mine;
        if (gs_vgpu_access_in(in->accessDescs, in->accessDescCount, local, room, &mine) < 0)
                return -1;
        out->accessDescs = mine;
        if (mine != local && mine != in->accessDescs)
                *freed = mine;
        return 0;
}

GS_EXPORT CUresult cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                          size_t numDependencies, CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams)
{
        if (nodeParams == NULL)
                return REAL(cuGraphAddMemAllocNode, phGraphNode, hGraph, dependencies, numDependencies, nodeParams);
        CUDA_MEM_ALLOC_NODE_PARAMS p;
        CUmemAccessDesc local[8], *freed;
        if (alloc_params_in(nodeParams, &p, local, 8, &freed) < 0)
                return CUDA_ERROR_INVALID_DEVICE;
        CUresult rc = REAL(cuGraphAddMemAllocNode, phGraphNode, hGraph, dependencies, numDependencies, &p);
        nodeParams->dptr = p.dptr; /* the one out member */
        free(freed);
        return rc;
}

GS_EXPORT CUresult cuGraphMemAllocNodeGetParams(CUgraphNode hNode, CUDA_MEM_ALLOC_NODE_PARAMS *params_out)
{
        CUresult rc = REAL(cuGraphMemAllocNodeGetParams, hNode, params_out);
        if (rc == CUDA_SUCCESS && params_out != NULL && gs_vgpu_loc_out(&params_out->poolProps.location) < 0)
                return CUDA_ERROR_INVALID_DEVICE;
        /* accessDescs points into the driver's own copy: its numbers stay the driver's */
        return rc;
}

/* cuGraphAddNode(_v2): only an allocation node names a device. */
static int node_in(const CUgraphNodeParams *in, CUgraphNodeParams *out, CUmemAccessDesc *local, size_t room,
                   CUmemAccessDesc **freed)
{
        *out = *in;
        *freed = NULL;
        if (in->type != CU_GRAPH_NODE_TYPE_MEM_ALLOC)
                return 0;
        return alloc_params_in(&in->alloc, &out->alloc, local, room, freed);
}

GS_EXPORT CUresult cuGraphAddNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                  size_t numDependencies, CUgraphNodeParams *nodeParams)
{
        if (nodeParams == NULL || nodeParams->type != CU_GRAPH_NODE_TYPE_MEM_ALLOC)
                return REAL(cuGraphAddNode, phGraphNode, hGraph, dependencies, numDependencies, nodeParams);
        CUgraphNodeParams p;
        CUmemAccessDesc local[8], *freed;
        if (node_in(nodeParams, &p, local, 8, &freed) < 0)
                return CUDA_ERROR_INVALID_DEVICE;
        CUresult rc = REAL(cuGraphAddNode, phGraphNode, hGraph, dependencies, numDependencies, &p);
        nodeParams->alloc.dptr = p.alloc.dptr;
        free(freed);
        return rc;
}

GS_EXPORT CUresult cuGraphAddNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                     const CUgraphEdgeData *dependencyData, size_t numDependencies,
                                     CUgraphNodeParams *nodeParams)
{
        if (nodeParams == NULL || nodeParams->type != CU_GRAPH_NODE_TYPE_MEM_ALLOC)
                return REAL(cuGraphAddNode_v2, phGraphNode, hGraph, dependencies, dependencyData, numDependencies,
                            nodeParams);
        CUgraphNodeParams p;
        CUmemAccessDesc local[8], *freed;
        if (node_in(nodeParams, &p, local, 8, &freed) < 0)
                return CUDA_ERROR_INVALID_DEVICE;
        CUresult rc = REAL(cuGraphAddNode_v2, phGraphNode, hGraph, dependencies, dependencyData, numDependencies, &p);
        nodeParams->alloc.dptr = p.alloc.dptr;
        free(freed);
        return rc;
}

/* ---- batched copies: each operand's location hint ------------------------------------------- */

/* A copy of n elements of `size` bytes (local room, else malloc'ed; NULL: no memory). */
static void *copy_of(const void *a, size_t n, size_t size, void *local, size_t room)
{
        void *c = n <= room ? local : (n > SIZE_MAX / size ? NULL : malloc(n * size));
        if (c != NULL)
                memcpy(c, a, n * size);
        return c;
}

/* The attributes with their hints translated: `*out` a copy (local or malloc'ed), or the
 * program's own array when there are none. CUDA_SUCCESS, INVALID_DEVICE, OUT_OF_MEMORY. */
static CUresult attrs_in(CUmemcpyAttributes *attrs, size_t n, CUmemcpyAttributes *local, size_t room,
                         CUmemcpyAttributes **out)
{
        *out = attrs;
        if (attrs == NULL || n == 0)
                return CUDA_SUCCESS;
        CUmemcpyAttributes *c = copy_of(attrs, n, sizeof(*attrs), local, room);
        if (c == NULL)
                return CUDA_ERROR_OUT_OF_MEMORY;
        for (size_t i = 0; i < n; i++)
                if (gs_vgpu_loc_in(&c[i].srcLocHint) < 0 || gs_vgpu_loc_in(&c[i].dstLocHint) < 0) {
                        if (c != local)
                                free(c);
                        return CUDA_ERROR_INVALID_DEVICE;
                }
        *out = c;
        return CUDA_SUCCESS;
}

#define BATCH_COPY(name, failparam, failarg)                                                       \
        GS_EXPORT CUresult name(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,     \
                                CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs failparam \
                                CUstream hStream)                                                  \
        {                                                                                          \
                CUmemcpyAttributes local[8], *mine;                                                \
                CUresult rc = attrs_in(attrs, numAttrs, local, 8, &mine);                          \
                if (rc != CUDA_SUCCESS)                                                            \
                        return rc;                                                                 \
                rc = REAL(name, dsts, srcs, sizes, count, mine, attrsIdxs, numAttrs failarg hStream); \
                if (mine != local && mine != attrs)                                                \
                        free(mine);                                                                \
                return rc;                                                                         \
        }
#define GS_COMMA_ ,
BATCH_COPY(cuMemcpyBatchAsync, GS_COMMA_ size_t *failIdx GS_COMMA_, GS_COMMA_ failIdx GS_COMMA_)
BATCH_COPY(cuMemcpyBatchAsync_ptsz, GS_COMMA_ size_t *failIdx GS_COMMA_, GS_COMMA_ failIdx GS_COMMA_)
BATCH_COPY(cuMemcpyBatchAsync_v2, GS_COMMA_, GS_COMMA_)
BATCH_COPY(cuMemcpyBatchAsync_v2_ptsz, GS_COMMA_, GS_COMMA_)

static int operand_in(CUmemcpy3DOperand *o)
{
        return o->type == CU_MEMCPY_OPERAND_TYPE_POINTER ? gs_vgpu_loc_in(&o->op.ptr.locHint) : 0;
}

static CUresult ops_in(CUDA_MEMCPY3D_BATCH_OP *ops, size_t n, CUDA_MEMCPY3D_BATCH_OP *local, size_t room,
                       CUDA_MEMCPY3D_BATCH_OP **out)
{
        *out = ops;
        if (ops == NULL || n == 0)
                return CUDA_SUCCESS;
        CUDA_MEMCPY3D_BATCH_OP *c = copy_of(ops, n, sizeof(*ops), local, room);
        if (c == NULL)
                return CUDA_ERROR_OUT_OF_MEMORY;
        for (size_t i = 0; i < n; i++)
                if (operand_in(&c[i].src) < 0 || operand_in(&c[i].dst) < 0) {
                        if (c != local)
                                free(c);
                        return CUDA_ERROR_INVALID_DEVICE;
                }
        *out = c;
        return CUDA_SUCCESS;
}

#define BATCH_3D(name, failparam, failarg)                                                         \
        GS_EXPORT CUresult name(size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList failparam unsigned long long flags, \
                                CUstream hStream)                                                  \
        {                                                                                          \
                CUDA_MEMCPY3D_BATCH_OP local[4], *mine;                                            \
                CUresult rc = ops_in(opList, numOps, local, 4, &mine);                             \
                if (rc != CUDA_SUCCESS)                                                            \
                        return rc;                                                                 \
                rc = REAL(name, numOps, mine failarg flags, hStream);                              \
                if (mine != local && mine != opList)                                               \
                        free(mine);                                                                \
                return rc;                                                                         \
        }
BATCH_3D(cuMemcpy3DBatchAsync, GS_COMMA_ size_t *failIdx GS_COMMA_, GS_COMMA_ failIdx GS_COMMA_)
BATCH_3D(cuMemcpy3DBatchAsync_ptsz, GS_COMMA_ size_t *failIdx GS_COMMA_, GS_COMMA_ failIdx GS_COMMA_)
BATCH_3D(cuMemcpy3DBatchAsync_v2, GS_COMMA_, GS_COMMA_)
BATCH_3D(cuMemcpy3DBatchAsync_v2_ptsz, GS_COMMA_, GS_COMMA_)
