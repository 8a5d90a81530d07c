/*
 * Every function the interposer exports, in one list. X(name) for CUDA driver entry points,
 * N(name) for NVML. The exported-symbol test (tests/vgpu/check_exports.sh) reads this file.
 */
#ifndef GS_VGPU_HOOKS_H
#define GS_VGPU_HOOKS_H

#define GS_VGPU_CUDA_HOOKS(X)                                                                     \
        X(cuInit)                                                                                 \
        X(cuGetProcAddress)                                                                       \
        X(cuGetProcAddress_v2)                                                                    \
        X(cuDeviceGetCount)                                                                       \
        X(cuDeviceGet)                                                                            \
        X(cuDeviceTotalMem)                                                                       \
        X(cuDeviceTotalMem_v2)                                                                    \
        X(cuDeviceGetName)                                                                       \
        X(cuDeviceGetUuid)                                                                       \
        X(cuDeviceGetUuid_v2)                                                                    \
        X(cuDeviceGetAttribute)                                                                  \
        X(cuDeviceGetPCIBusId)                                                                   \
        X(cuDeviceGetByPCIBusId)                                                                 \
        X(cuDeviceCanAccessPeer)                                                                 \
        X(cuDeviceGetP2PAttribute)                                                               \
        X(cuDevicePrimaryCtxRelease)                                                             \
        X(cuDevicePrimaryCtxRelease_v2)                                                          \
        X(cuDevicePrimaryCtxReset)                                                               \
        X(cuDevicePrimaryCtxReset_v2)                                                            \
        X(cuDevicePrimaryCtxGetState)                                                            \
        X(cuDeviceGetDefaultMemPool)                                                             \
        X(cuDeviceGetDevResource)                                                                \
        X(cuGreenCtxCreate)                                                                      \
        X(cuMemGetAllocationGranularity)                                                         \
        X(cuMemSetAccess)                                                                        \
        X(cuMemPoolCreate)                                                                       \
        X(cuMemGetInfo)                                                                           \
        X(cuMemGetInfo_v2)                                                                        \
        X(cuMemAlloc)                                                                             \
        X(cuMemAlloc_v2)                                                                          \
        X(cuMemAllocPitch)                                                                        \
        X(cuMemAllocPitch_v2)                                                                     \
        X(cuMemAllocManaged)                                                                      \
        X(cuMemFree)                                                                              \
        X(cuMemFree_v2)                                                                           \
        X(cuMemCreate)                                                                            \
        X(cuMemRelease)                                                                           \
        X(cuMemAllocAsync)                                                                        \
        X(cuMemAllocAsync_ptsz)                                                                   \
        X(cuMemAllocFromPoolAsync)                                                                \
        X(cuMemAllocFromPoolAsync_ptsz)                                                           \
        X(cuMemFreeAsync)                                                                         \
        X(cuMemFreeAsync_ptsz)                                                                    \
        X(cuArrayCreate_v2)                                                                       \
        X(cuArray3DCreate_v2)                                                                     \
        X(cuArrayDestroy)                                                                         \
        X(cuMipmappedArrayCreate)                                                                 \
        X(cuMipmappedArrayDestroy)                                                                \
        X(cuDevicePrimaryCtxRetain)                                                               \
        X(cuCtxCreate)                                                                            \
        X(cuCtxCreate_v2)                                                                         \
        X(cuCtxCreate_v3)                                                                         \
        X(cuCtxCreate_v4)                                                                         \
        /* hooks_device.c: every other entry point of cuda.h that names a device */              \
        X(cuDevicePrimaryCtxSetFlags)                                                             \
        X(cuDevicePrimaryCtxSetFlags_v2)                                                          \
        X(cuDeviceComputeCapability)                                                              \
        X(cuDeviceGetProperties)                                                                  \
        X(cuDeviceGetLuid)                                                                        \
        X(cuDeviceGetTexture1DLinearMaxWidth)                                                     \
        X(cuDeviceGetExecAffinitySupport)                                                         \
        X(cuDeviceGetNvSciSyncAttributes)                                                         \
        X(cuDeviceGetHostAtomicCapabilities)                                                      \
        X(cuDeviceGetP2PAtomicCapabilities)                                                       \
        X(cuDeviceRegisterAsyncNotification)                                                      \
        X(cuDeviceUnregisterAsyncNotification)                                                    \
        X(cuDeviceGetMemPool)                                                                     \
        X(cuDeviceSetMemPool)                                                                     \
        X(cuDeviceGetGraphMemAttribute)                                                           \
        X(cuDeviceSetGraphMemAttribute)                                                           \
        X(cuDeviceGraphMemTrim)                                                                   \
        X(cuKernelGetAttribute)                                                                   \
        X(cuKernelSetAttribute)                                                                   \
        X(cuKernelSetCacheConfig)                                                                 \
        X(cuArrayGetMemoryRequirements)                                                           \
        X(cuMipmappedArrayGetMemoryRequirements)                                                  \
        X(cuMulticastAddDevice)                                                                   \
        X(cuMulticastUnbind)                                                                      \
        X(cuMemAdvise)                                                                            \
        X(cuMemAdvise_v2)                                                                         \
        X(cuMemPrefetchAsync)                                                                     \
        X(cuMemPrefetchAsync_ptsz)                                                                \
        X(cuMemPrefetchAsync_v2)                                                                  \
        X(cuMemPrefetchAsync_v2_ptsz)                                                             \
        X(cuMemPrefetchBatchAsync)                                                                \
        X(cuMemPrefetchBatchAsync_ptsz)                                                           \
        X(cuMemDiscardAndPrefetchBatchAsync)                                                      \
        X(cuMemDiscardAndPrefetchBatchAsync_ptsz)                                                 \
        X(cuCtxGetDevice)                                                                         \
        X(cuCtxGetDevice_v2)                                                                      \
        X(cuStreamGetDevice)                                                                      \
        X(cuStreamGetDevice_ptsz)                                                                 \
        X(cuPointerGetAttribute)                                                                  \
        X(cuPointerGetAttributes)                                                                 \
        X(cuMemRangeGetAttribute)                                                                 \
        X(cuMemRangeGetAttributes)                                                                \
        X(cuMemGetAllocationPropertiesFromHandle)                                                 \
        X(cuMemGetAccess)                                                                         \
        X(cuMemPoolSetAccess)                                                                     \
        X(cuMemPoolGetAccess)                                                                     \
        X(cuMemGetDefaultMemPool)                                                                 \
        X(cuMemGetMemPool)                                                                        \
        X(cuMemSetMemPool)                                                                        \
        X(cuGraphAddMemAllocNode)                                                                 \
        X(cuGraphMemAllocNodeGetParams)                                                           \
        X(cuGraphAddNode)                                                                         \
        X(cuGraphAddNode_v2)                                                                      \
        X(cuMemcpyBatchAsync)                                                                     \
        X(cuMemcpyBatchAsync_ptsz)                                                                \
        X(cuMemcpyBatchAsync_v2)                                                                  \
        X(cuMemcpyBatchAsync_v2_ptsz)                                                             \
        X(cuMemcpy3DBatchAsync)                                                                   \
        X(cuMemcpy3DBatchAsync_ptsz)                                                              \
        X(cuMemcpy3DBatchAsync_v2)                                                                \
        X(cuMemcpy3DBatchAsync_v2_ptsz)

/* Launch paths and the synchronizations that wait for them (hooks_launch.c): handed out by
 * cuGetProcAddress / dlsym only when the slice has a compute limit; otherwise callers get the
 * driver's own functions and pay nothing. */
#define GS_VGPU_LAUNCH_HOOKS(X)                                                                   \
        X(cuLaunchKernel)                                                                         \
        X(cuLaunchKernel_ptsz)                                                                    \
        X(cuLaunchKernelEx)                                                                       \
        X(cuLaunchKernelEx_ptsz)                                                                  \
        X(cuLaunchCooperativeKernel)                                                              \
        X(cuLaunchCooperativeKernel_ptsz)                                                         \
        X(cuGraphLaunch)                                                                          \
        X(cuGraphLaunch_ptsz)                                                                     \
        X(cuCtxSynchronize)                                                                       \
        X(cuCtxSynchronize_v2)                                                                    \
        X(cuStreamSynchronize)                                                                    \
        X(cuStreamSynchronize_ptsz)

#define GS_VGPU_NVML_HOOKS(N)                                                                     \
        N(nvmlDeviceGetMemoryInfo)                                                                \
        N(nvmlDeviceGetMemoryInfo_v2)                                                             \
        N(nvmlDeviceGetCount)                                                                     \
        N(nvmlDeviceGetCount_v2)                                                                  \
        N(nvmlDeviceGetHandleByIndex)                                                             \
        N(nvmlDeviceGetHandleByIndex_v2)                                                          \
        N(nvmlDeviceGetHandleByUUID)                                                             \
        N(nvmlDeviceGetHandleByPciBusId_v2)                                                      \
        N(nvmlDeviceGetHandleByPciBusId)                                                         \
        N(nvmlDeviceGetIndex)                                                                    \
        N(nvmlDeviceGetUtilizationRates)                                                          \
        N(nvmlDeviceGetHandleBySerial)                                                            \
        N(nvmlDeviceGetTopologyNearestGpus)                                                       \
        N(nvmlSystemGetTopologyGpuSet)                                                            \
        N(nvmlUnitGetDevices)                                                                     \
        N(nvmlDeviceGetTopologyCommonAncestor)                                                    \
        N(nvmlDeviceGetP2PStatus)                                                                 \
        N(nvmlDeviceOnSameBoard)                                                                  \
        N(nvmlDeviceGetMigDeviceHandleByIndex)                                                    \
        N(nvmlDeviceGetDeviceHandleFromMigDeviceHandle)

#endif
