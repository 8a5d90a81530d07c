/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpuslice: our own declarations of the subset of the CUDA driver API (libcuda.so.1) that
 * gpuslice uses.
 *
 * Written from the public CUDA Driver API reference; the numeric values, struct layouts and
 * versioned symbol names are facts of the ABI (checked against the CUDA 13.0 toolkit), not
 * copied declarations. Only what gpuslice (the interposer and the simulated GPU in
 * tests/fakegpu) needs is declared.
 *
 * Every entry point is listed once in GS_CUDA_FUNCTIONS(X) as X(exported name, return type,
 * parameter list). The list produces
 *   - a function-pointer type `gs_<name>_fn` for callers that dlsym() / cuGetProcAddress the
 *     real library (gs_cuMemAlloc_v2_fn, gs_cuGetProcAddress_v2_fn, ...);
 *   - a prototype under the exported name, unless GS_CUDA_NO_PROTOTYPES is defined before
 *     including (the interposer defines its own hooks with these names).
 *
 * Versioned names: the CUDA headers #define the plain names to the newest ABI (cuMemAlloc ->
 * cuMemAlloc_v2, cuCtxCreate -> cuCtxCreate_v4, ...), and the library exports every version
 * under its own name. We never #define the plain names: `cuMemAlloc` here is the legacy
 * CUDA 2.0 entry point with 32-bit sizes, exactly as exported by libcuda.so.1.
 *
 * Per-thread default stream variants (`_ptsz` for stream-ordered calls, `_ptds` for the
 * synchronous copies/sets) have the same signature as their base.
 */
#ifndef GPUSLICE_ABI_CUDA_H
#define GPUSLICE_ABI_CUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The driver API version these declarations describe (cuDriverGetVersion form: 1000*major + 10*minor). */
#define GS_CUDA_API_VERSION 13000

/* ---------------------------------------------------------------------------------------- */
/* Scalar and handle types                                                                   */
/* ---------------------------------------------------------------------------------------- */

typedef uint32_t cuuint32_t;
typedef uint64_t cuuint64_t;

typedef int CUdevice;                                  /* device ordinal */
typedef unsigned long long CUdeviceptr;                /* 64-bit device address (CUdeviceptr_v2) */
typedef unsigned int gs_CUdeviceptr_v1;                /* legacy 32-bit device address (CUDA 2.x ABI) */
typedef unsigned long long CUmemGenericAllocationHandle;

typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUarray_st *CUarray;
typedef struct CUmipmappedArray_st *CUmipmappedArray;
typedef struct CUmemPoolHandle_st *CUmemoryPool;
typedef struct CUgreenCtx_st *CUgreenCtx;                 /* cuGreenCtxCreate (CUDA 12.4) */
typedef struct CUdevResourceDesc_st *CUdevResourceDesc;   /* cuDevResourceGenerateDesc (CUDA 12.4) */
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;

/* Special stream handles. */
#define CU_STREAM_LEGACY     ((CUstream)0x1)
#define CU_STREAM_PER_THREAD ((CUstream)0x2)

/* cuStreamCreate flags */
#define CU_STREAM_DEFAULT      0x0
#define CU_STREAM_NON_BLOCKING 0x1

typedef struct CUuuid_st {
    char bytes[16];
} CUuuid;

/* ---------------------------------------------------------------------------------------- */
/* Return codes                                                                              */
/* ---------------------------------------------------------------------------------------- */

typedef enum cudaError_enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_DEINITIALIZED = 4,
    CUDA_ERROR_PROFILER_DISABLED = 5,
    CUDA_ERROR_PROFILER_NOT_INITIALIZED = 6,
    CUDA_ERROR_PROFILER_ALREADY_STARTED = 7,
    CUDA_ERROR_PROFILER_ALREADY_STOPPED = 8,
    CUDA_ERROR_STUB_LIBRARY = 34,
    CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER = 36,
    CUDA_ERROR_DEVICE_UNAVAILABLE = 46,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_DEVICE_NOT_LICENSED = 102,
    CUDA_ERROR_INVALID_IMAGE = 200,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_CONTEXT_ALREADY_CURRENT = 202,
    CUDA_ERROR_MAP_FAILED = 205,
    CUDA_ERROR_UNMAP_FAILED = 206,
    CUDA_ERROR_ARRAY_IS_MAPPED = 207,
    CUDA_ERROR_ALREADY_MAPPED = 208,
    CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
    CUDA_ERROR_ALREADY_ACQUIRED = 210,
    CUDA_ERROR_NOT_MAPPED = 211,
    CUDA_ERROR_NOT_MAPPED_AS_ARRAY = 212,
    CUDA_ERROR_NOT_MAPPED_AS_POINTER = 213,
    CUDA_ERROR_ECC_UNCORRECTABLE = 214,
    CUDA_ERROR_UNSUPPORTED_LIMIT = 215,
    CUDA_ERROR_CONTEXT_ALREADY_IN_USE = 216,
    CUDA_ERROR_PEER_ACCESS_UNSUPPORTED = 217,
    CUDA_ERROR_INVALID_PTX = 218,
    CUDA_ERROR_INVALID_GRAPHICS_CONTEXT = 219,
    CUDA_ERROR_NVLINK_UNCORRECTABLE = 220,
    CUDA_ERROR_JIT_COMPILER_NOT_FOUND = 221,
    CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
    CUDA_ERROR_JIT_COMPILATION_DISABLED = 223,
    CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY = 224,
    CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC = 225,
    CUDA_ERROR_CONTAINED = 226,
    CUDA_ERROR_INVALID_SOURCE = 300,
    CUDA_ERROR_FILE_NOT_FOUND = 301,
    CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND = 302,
    CUDA_ERROR_SHARED_OBJECT_INIT_FAILED = 303,
    CUDA_ERROR_OPERATING_SYSTEM = 304,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_ILLEGAL_STATE = 401,
    CUDA_ERROR_LOSSY_QUERY = 402,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_NOT_READY = 600,
    CUDA_ERROR_ILLEGAL_ADDRESS = 700,
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
    CUDA_ERROR_LAUNCH_TIMEOUT = 702,
    CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING = 703,
    CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704,
    CUDA_ERROR_PEER_ACCESS_NOT_ENABLED = 705,
    CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE = 708,
    CUDA_ERROR_CONTEXT_IS_DESTROYED = 709,
    CUDA_ERROR_ASSERT = 710,
    CUDA_ERROR_TOO_MANY_PEERS = 711,
    CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
    CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
    CUDA_ERROR_HARDWARE_STACK_ERROR = 714,
    CUDA_ERROR_ILLEGAL_INSTRUCTION = 715,
    CUDA_ERROR_MISALIGNED_ADDRESS = 716,
    CUDA_ERROR_INVALID_ADDRESS_SPACE = 717,
    CUDA_ERROR_INVALID_PC = 718,
    CUDA_ERROR_LAUNCH_FAILED = 719,
    CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE = 720,
    CUDA_ERROR_TENSOR_MEMORY_LEAK = 721,
    CUDA_ERROR_NOT_PERMITTED = 800,
    CUDA_ERROR_NOT_SUPPORTED = 801,
    CUDA_ERROR_SYSTEM_NOT_READY = 802,
    CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803,
    CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE = 804,
    CUDA_ERROR_MPS_CONNECTION_FAILED = 805,
    CUDA_ERROR_MPS_RPC_FAILURE = 806,
    CUDA_ERROR_MPS_SERVER_NOT_READY = 807,
    CUDA_ERROR_MPS_MAX_CLIENTS_REACHED = 808,
    CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED = 809,
    CUDA_ERROR_MPS_CLIENT_TERMINATED = 810,
    CUDA_ERROR_CDP_NOT_SUPPORTED = 811,
    CUDA_ERROR_CDP_VERSION_MISMATCH = 812,
    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
    CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901,
    CUDA_ERROR_STREAM_CAPTURE_MERGE = 902,
    CUDA_ERROR_STREAM_CAPTURE_UNMATCHED = 903,
    CUDA_ERROR_STREAM_CAPTURE_UNJOINED = 904,
    CUDA_ERROR_STREAM_CAPTURE_ISOLATION = 905,
    CUDA_ERROR_STREAM_CAPTURE_IMPLICIT = 906,
    CUDA_ERROR_CAPTURED_EVENT = 907,
    CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD = 908,
    CUDA_ERROR_TIMEOUT = 909,
    CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE = 910,
    CUDA_ERROR_EXTERNAL_DEVICE = 911,
    CUDA_ERROR_INVALID_CLUSTER_SIZE = 912,
    CUDA_ERROR_FUNCTION_NOT_LOADED = 913,
    CUDA_ERROR_INVALID_RESOURCE_TYPE = 914,
    CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION = 915,
    CUDA_ERROR_KEY_ROTATION = 916,
    CUDA_ERROR_UNKNOWN = 999
} CUresult;

/* ---------------------------------------------------------------------------------------- */
/* cuGetProcAddress                                                                          */
/* ---------------------------------------------------------------------------------------- */

/* flags */
#define CU_GET_PROC_ADDRESS_DEFAULT                   0ULL
#define CU_GET_PROC_ADDRESS_LEGACY_STREAM             (1ULL << 0)
#define CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM (1ULL << 1)

typedef enum CUdriverProcAddressQueryResult_enum {
    CU_GET_PROC_ADDRESS_SUCCESS = 0,
    CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
    CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2
} CUdriverProcAddressQueryResult;

/* ---------------------------------------------------------------------------------------- */
/* Devices                                                                                   */
/* ---------------------------------------------------------------------------------------- */

/* The attributes gpuslice reads or the fake answers (the full enum has ~150 values). */
typedef enum CUdevice_attribute_enum {
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X = 2,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y = 3,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z = 4,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y = 6,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z = 7,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
    CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY = 9,
    CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
    CU_DEVICE_ATTRIBUTE_MAX_PITCH = 11,
    CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK = 12,
    CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13,
    CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT = 14,
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT = 17,
    CU_DEVICE_ATTRIBUTE_INTEGRATED = 18,
    CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY = 19,
    CU_DEVICE_ATTRIBUTE_COMPUTE_MODE = 20,
    CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS = 31,
    CU_DEVICE_ATTRIBUTE_ECC_ENABLED = 32,
    CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33,
    CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID = 34,
    CU_DEVICE_ATTRIBUTE_TCC_DRIVER = 35,
    CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE = 36,
    CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37,
    CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38,
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 39,
    CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT = 40,
    CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING = 41,
    CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID = 50,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
    CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED = 78,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81,
    CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR = 82,
    CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY = 83,
    CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD = 84,
    CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID = 85,
    CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS = 89,
    CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED = 90,
    CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH = 95,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
    CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102,
    CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED = 103,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR = 106,
    CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED = 107,
    CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 115,
    GS_CU_DEVICE_ATTRIBUTE_FORCE_INT_ = 0x7FFFFFFF    /* ours: keeps the enum int-sized */
} CUdevice_attribute;

typedef enum CUdevice_P2PAttribute_enum {
    CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK = 0x01,
    CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED = 0x02,
    CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED = 0x03,
    CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED = 0x04
} CUdevice_P2PAttribute;

/* ---------------------------------------------------------------------------------------- */
/* Contexts                                                                                  */
/* ---------------------------------------------------------------------------------------- */

/* cuCtxCreate flags */
#define CU_CTX_SCHED_AUTO          0x00
#define CU_CTX_SCHED_SPIN          0x01
#define CU_CTX_SCHED_YIELD         0x02
#define CU_CTX_SCHED_BLOCKING_SYNC 0x04
#define CU_CTX_SCHED_MASK          0x07
#define CU_CTX_MAP_HOST            0x08
#define CU_CTX_LMEM_RESIZE_TO_MAX  0x10
#define CU_CTX_COREDUMP_ENABLE     0x20
#define CU_CTX_USER_COREDUMP_ENABLE 0x40
#define CU_CTX_SYNC_MEMOPS         0x80
#define CU_CTX_FLAGS_MASK          0xFF

typedef enum CUexecAffinityType_enum {
    CU_EXEC_AFFINITY_TYPE_SM_COUNT = 0
} CUexecAffinityType;

typedef struct CUexecAffinitySmCount_st {
    unsigned int val;
} CUexecAffinitySmCount;

/* cuCtxCreate_v3 (CUDA 11.4) */
typedef struct CUexecAffinityParam_st {
    CUexecAffinityType type;
    union {
        CUexecAffinitySmCount smCount;
    } param;
} CUexecAffinityParam;

typedef struct CUctxCigParam_st CUctxCigParam;   /* opaque here */

/* cuCtxCreate_v4 (CUDA 12.5) */
typedef struct CUctxCreateParams_st {
    CUexecAffinityParam *execAffinityParams;
    int numExecAffinityParams;
    CUctxCigParam *cigParams;
} CUctxCreateParams;

/* ---------------------------------------------------------------------------------------- */
/* Events, launches with attributes, stream capture (CUDA 13.0 cuda.h)                        */
/* ---------------------------------------------------------------------------------------- */

/* cuEventCreate flags (CUevent_flags) */
#define CU_EVENT_DEFAULT        0x0
#define CU_EVENT_BLOCKING_SYNC  0x1
#define CU_EVENT_DISABLE_TIMING 0x2
#define CU_EVENT_INTERPROCESS   0x4

/* CUlaunchAttributeID: only the ids we read; the value is a 64-byte union. */
typedef enum CUlaunchAttributeID_enum {
    CU_LAUNCH_ATTRIBUTE_IGNORE = 0,
    CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2
} CUlaunchAttributeID;

typedef union CUlaunchAttributeValue_union {
    char pad[64];
    int cooperative;                          /* CU_LAUNCH_ATTRIBUTE_COOPERATIVE: nonzero */
} CUlaunchAttributeValue;

typedef struct CUlaunchAttribute_st {
    CUlaunchAttributeID id;
    char pad[8 - sizeof(CUlaunchAttributeID)];
    CUlaunchAttributeValue value;
} CUlaunchAttribute;

typedef struct CUlaunchConfig_st {
    unsigned int gridDimX, gridDimY, gridDimZ;
    unsigned int blockDimX, blockDimY, blockDimZ;
    unsigned int sharedMemBytes;
    CUstream hStream;
    CUlaunchAttribute *attrs;                 /* may be NULL when numAttrs == 0 */
    unsigned int numAttrs;
} CUlaunchConfig;

typedef enum CUstreamCaptureMode_enum {
    CU_STREAM_CAPTURE_MODE_GLOBAL = 0,
    CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
    CU_STREAM_CAPTURE_MODE_RELAXED = 2
} CUstreamCaptureMode;

typedef enum CUstreamCaptureStatus_enum {
    CU_STREAM_CAPTURE_STATUS_NONE = 0,
    CU_STREAM_CAPTURE_STATUS_ACTIVE = 1,
    CU_STREAM_CAPTURE_STATUS_INVALIDATED = 2
} CUstreamCaptureStatus;

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Static_assert(sizeof(CUlaunchAttribute) == 72, "CUlaunchAttribute: 72 bytes (CUDA 13.0 cuda.h)");
_Static_assert(__builtin_offsetof(CUlaunchConfig, hStream) == 32, "CUlaunchConfig layout");
_Static_assert(__builtin_offsetof(CUlaunchConfig, numAttrs) == 48, "CUlaunchConfig layout");
#endif

/* ---------------------------------------------------------------------------------------- */
/* Green contexts (CUDA 12.4): device resources, SM splits, resource descriptors              */
/* ---------------------------------------------------------------------------------------- */

/* cuGreenCtxCreate flags (CUgreenCtxCreate_flags): the default stream is required. */
typedef enum CUgreenCtxCreate_flags_enum {
    CU_GREEN_CTX_DEFAULT_STREAM = 0x1
} CUgreenCtxCreate_flags;

/* cuDevSmResourceSplitByCount useFlags (CUdevSmResourceSplit_flags) */
typedef enum CUdevSmResourceSplit_flags_enum {
    CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING = 0x1,
    CU_DEV_SM_RESOURCE_SPLIT_MAX_POTENTIAL_CLUSTER_SIZE = 0x2
} CUdevSmResourceSplit_flags;

typedef enum CUdevResourceType_enum {
    CU_DEV_RESOURCE_TYPE_INVALID = 0,
    CU_DEV_RESOURCE_TYPE_SM = 1               /* streaming multiprocessors */
} CUdevResourceType;

/* The SM part of a CUdevResource (12 bytes). All three are outputs of the driver. */
typedef struct CUdevSmResource_st {
    unsigned int smCount;                     /* SMs in this resource */
    unsigned int minSmPartitionSize;          /* smallest partition a split can make */
    unsigned int smCoscheduledAlignment;      /* a split's partitions are multiples of this */
} CUdevSmResource;

/* A tagged union, filled by the driver (RESOURCE_ABI_VERSION 1, RESOURCE_ABI_EXTERNAL_BYTES 48):
 * 4-byte type, 92 bytes the driver keeps to itself, then a 48-byte union: 144 bytes, the SM
 * data at offset 96. The anonymous union lets callers write `res.sm.smCount`, as with cuda.h. */
#define GS_CU_DEV_RESOURCE_INTERNAL_BYTES 92
#define GS_CU_DEV_RESOURCE_EXTERNAL_BYTES 48
typedef struct CUdevResource_st {
    CUdevResourceType type;
    unsigned char _internal_padding[GS_CU_DEV_RESOURCE_INTERNAL_BYTES];
    union {
        CUdevSmResource sm;                   /* type CU_DEV_RESOURCE_TYPE_SM */
        unsigned char _oversize[GS_CU_DEV_RESOURCE_EXTERNAL_BYTES];
    };
} CUdevResource_v1;
typedef CUdevResource_v1 CUdevResource;

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Static_assert(sizeof(CUdevSmResource) == 12, "CUdevSmResource: 12 bytes (CUDA 13.0 cuda.h)");
_Static_assert(__builtin_offsetof(CUdevSmResource, minSmPartitionSize) == 4, "CUdevSmResource layout");
_Static_assert(__builtin_offsetof(CUdevSmResource, smCoscheduledAlignment) == 8, "CUdevSmResource layout");
_Static_assert(sizeof(CUdevResource) == 144, "CUdevResource: 144 bytes (CUDA 13.0 cuda.h)");
_Static_assert(__builtin_offsetof(CUdevResource, _internal_padding) == 4, "CUdevResource layout");
_Static_assert(__builtin_offsetof(CUdevResource, sm) == 96, "CUdevResource layout");
_Static_assert(__builtin_offsetof(CUdevResource, _oversize) == 96, "CUdevResource layout");
#endif

/* ---------------------------------------------------------------------------------------- */
/* Memory                                                                                    */
/* ---------------------------------------------------------------------------------------- */

typedef enum CUmemorytype_enum {
    CU_MEMORYTYPE_HOST = 0x01,
    CU_MEMORYTYPE_DEVICE = 0x02,
    CU_MEMORYTYPE_ARRAY = 0x03,
    CU_MEMORYTYPE_UNIFIED = 0x04
} CUmemorytype;

/* cuMemAllocManaged flags (CUmemAttach_flags) */
#define CU_MEM_ATTACH_GLOBAL 0x1
#define CU_MEM_ATTACH_HOST   0x2
#define CU_MEM_ATTACH_SINGLE 0x4

/* Virtual memory management (cuMemCreate & co, CUDA 10.2) and pools (CUDA 11.2). */
typedef enum CUmemLocationType_enum {
    CU_MEM_LOCATION_TYPE_INVALID = 0x0,
    CU_MEM_LOCATION_TYPE_DEVICE = 0x1,
    CU_MEM_LOCATION_TYPE_HOST = 0x2,
    CU_MEM_LOCATION_TYPE_HOST_NUMA = 0x3,
    CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT = 0x4,
    CU_MEM_LOCATION_TYPE_MAX = 0x7FFFFFFF
} CUmemLocationType;

typedef enum CUmemAllocationType_enum {
    CU_MEM_ALLOCATION_TYPE_INVALID = 0x0,
    CU_MEM_ALLOCATION_TYPE_PINNED = 0x1,
    CU_MEM_ALLOCATION_TYPE_MANAGED = 0x2,
    CU_MEM_ALLOCATION_TYPE_MAX = 0x7FFFFFFF
} CUmemAllocationType;

typedef enum CUmemAllocationHandleType_enum {
    CU_MEM_HANDLE_TYPE_NONE = 0x0,
    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 0x1,
    CU_MEM_HANDLE_TYPE_WIN32 = 0x2,
    CU_MEM_HANDLE_TYPE_WIN32_KMT = 0x4,
    CU_MEM_HANDLE_TYPE_FABRIC = 0x8,
    CU_MEM_HANDLE_TYPE_MAX = 0x7FFFFFFF
} CUmemAllocationHandleType;

typedef enum CUmemAccess_flags_enum {
    CU_MEM_ACCESS_FLAGS_PROT_NONE = 0x0,
    CU_MEM_ACCESS_FLAGS_PROT_READ = 0x1,
    CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 0x3,
    CU_MEM_ACCESS_FLAGS_PROT_MAX = 0x7FFFFFFF
} CUmemAccess_flags;

typedef enum CUmemAllocationGranularity_flags_enum {
    CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0x0,
    CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 0x1
} CUmemAllocationGranularity_flags;

typedef struct CUmemLocation_st {
    CUmemLocationType type;
    int id;                        /* device ordinal for CU_MEM_LOCATION_TYPE_DEVICE */
} CUmemLocation;

typedef struct CUmemAllocationProp_st {
    CUmemAllocationType type;
    CUmemAllocationHandleType requestedHandleTypes;
    CUmemLocation location;
    void *win32HandleMetaData;     /* must be NULL on Linux */
    struct {
        unsigned char compressionType;
        unsigned char gpuDirectRDMACapable;
        unsigned short usage;
        unsigned char reserved[4];
    } allocFlags;
} CUmemAllocationProp;

typedef struct CUmemAccessDesc_st {
    CUmemLocation location;
    CUmemAccess_flags flags;
} CUmemAccessDesc;

typedef struct CUmemPoolProps_st {
    CUmemAllocationType allocType;           /* must be CU_MEM_ALLOCATION_TYPE_PINNED */
    CUmemAllocationHandleType handleTypes;
    CUmemLocation location;
    void *win32SecurityAttributes;
    size_t maxSize;                          /* 0: system default */
    unsigned short usage;
    unsigned char reserved[54];              /* must be zero */
} CUmemPoolProps;

/* ---------------------------------------------------------------------------------------- */
/* Arrays                                                                                    */
/* ---------------------------------------------------------------------------------------- */

/* The element formats (CUarray_format); the block-compressed and YUV formats are left out. */
typedef enum CUarray_format_enum {
    CU_AD_FORMAT_UNSIGNED_INT8 = 0x01,
    CU_AD_FORMAT_UNSIGNED_INT16 = 0x02,
    CU_AD_FORMAT_UNSIGNED_INT32 = 0x03,
    CU_AD_FORMAT_SIGNED_INT8 = 0x08,
    CU_AD_FORMAT_SIGNED_INT16 = 0x09,
    CU_AD_FORMAT_SIGNED_INT32 = 0x0a,
    CU_AD_FORMAT_HALF = 0x10,
    CU_AD_FORMAT_FLOAT = 0x20,
    CU_AD_FORMAT_UNORM_INT8X1 = 0xc0,
    CU_AD_FORMAT_UNORM_INT8X2 = 0xc1,
    CU_AD_FORMAT_UNORM_INT8X4 = 0xc2,
    CU_AD_FORMAT_UNORM_INT16X1 = 0xc3,
    CU_AD_FORMAT_UNORM_INT16X2 = 0xc4,
    CU_AD_FORMAT_UNORM_INT16X4 = 0xc5,
    CU_AD_FORMAT_SNORM_INT8X1 = 0xc6,
    CU_AD_FORMAT_SNORM_INT8X2 = 0xc7,
    CU_AD_FORMAT_SNORM_INT8X4 = 0xc8,
    CU_AD_FORMAT_SNORM_INT16X1 = 0xc9,
    CU_AD_FORMAT_SNORM_INT16X2 = 0xca,
    CU_AD_FORMAT_SNORM_INT16X4 = 0xcb,
    CU_AD_FORMAT_MAX = 0x7FFFFFFF
} CUarray_format;

/* CUDA_ARRAY3D_DESCRIPTOR.Flags */
#define CUDA_ARRAY3D_LAYERED         0x01
#define CUDA_ARRAY3D_SURFACE_LDST    0x02
#define CUDA_ARRAY3D_CUBEMAP         0x04
#define CUDA_ARRAY3D_TEXTURE_GATHER  0x08
#define CUDA_ARRAY3D_SPARSE          0x40

/* cuArrayCreate_v2 */
typedef struct CUDA_ARRAY_DESCRIPTOR_st {
    size_t Width;
    size_t Height;
    CUarray_format Format;
    unsigned int NumChannels;
} CUDA_ARRAY_DESCRIPTOR;

/* cuArray3DCreate_v2, cuMipmappedArrayCreate */
typedef struct CUDA_ARRAY3D_DESCRIPTOR_st {
    size_t Width;
    size_t Height;
    size_t Depth;
    CUarray_format Format;
    unsigned int NumChannels;
    unsigned int Flags;
} CUDA_ARRAY3D_DESCRIPTOR;

/* cuArrayGetMemoryRequirements, cuMipmappedArrayGetMemoryRequirements (CUDA 11.6) */
typedef struct CUDA_ARRAY_MEMORY_REQUIREMENTS_st {
    size_t size;
    size_t alignment;
    unsigned int reserved[4];
} CUDA_ARRAY_MEMORY_REQUIREMENTS;

/* ---------------------------------------------------------------------------------------- */
/* Everything else that names a device (the interposer translates or refuses each one)        */
/* ---------------------------------------------------------------------------------------- */

/* Device "numbers" that are not devices: the host (cuMemAdvise, cuMemPrefetchAsync, range
 * attributes) and none. */
#define CU_DEVICE_CPU     ((CUdevice)-1)
#define CU_DEVICE_INVALID ((CUdevice)-2)

typedef struct CUkern_st *CUkernel;
typedef struct CUgraphNode_st *CUgraphNode;
typedef struct CUgraphEdgeData_st CUgraphEdgeData;   /* opaque here: passed through */
typedef struct CUasyncCallbackEntry_st *CUasyncCallbackHandle;
typedef struct CUasyncNotificationInfo_st CUasyncNotificationInfo;
typedef void (*CUasyncCallback)(CUasyncNotificationInfo *info, void *userData, CUasyncCallbackHandle callback);

/* cuDeviceGetProperties (deprecated, still exported) */
typedef struct CUdevprop_st {
    int maxThreadsPerBlock;
    int maxThreadsDim[3];
    int maxGridSize[3];
    int sharedMemPerBlock;
    int totalConstantMemory;
    int SIMDWidth;
    int memPitch;
    int regsPerBlock;
    int clockRate;
    int textureAlign;
} CUdevprop;

typedef enum CUpointer_attribute_enum {
    CU_POINTER_ATTRIBUTE_CONTEXT = 1,
    CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
    CU_POINTER_ATTRIBUTE_DEVICE_POINTER = 3,
    CU_POINTER_ATTRIBUTE_SYNC_MEMOPS = 6,
    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,   /* an int: the device the memory is on */
    GS_CU_POINTER_ATTRIBUTE_FORCE_INT_ = 0x7FFFFFFF
} CUpointer_attribute;

typedef enum CUmem_advise_enum {
    CU_MEM_ADVISE_SET_READ_MOSTLY = 1,
    CU_MEM_ADVISE_UNSET_READ_MOSTLY = 2,
    CU_MEM_ADVISE_SET_PREFERRED_LOCATION = 3,
    CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION = 4,
    CU_MEM_ADVISE_SET_ACCESSED_BY = 5,
    CU_MEM_ADVISE_UNSET_ACCESSED_BY = 6
} CUmem_advise;

/* Range attributes: 2 and 4 answer one int device (or CU_DEVICE_CPU / CU_DEVICE_INVALID), 3 an
 * array of them, 6 and 8 a location id whose type 5 and 7 answer. */
typedef enum CUmem_range_attribute_enum {
    CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY = 1,
    CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION = 2,
    CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY = 3,
    CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION = 4,
    CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE = 5,
    CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID = 6,
    CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE = 7,
    CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID = 8
} CUmem_range_attribute;

typedef enum CUgraphMem_attribute_enum {
    CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT = 0,
    CU_GRAPH_MEM_ATTR_USED_MEM_HIGH = 1,
    CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT = 2,
    CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH = 3
} CUgraphMem_attribute;

typedef enum CUfunction_attribute_enum {
    CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
    GS_CU_FUNC_ATTRIBUTE_FORCE_INT_ = 0x7FFFFFFF
} CUfunction_attribute;

typedef enum CUfunc_cache_enum {
    CU_FUNC_CACHE_PREFER_NONE = 0x00
} CUfunc_cache;

typedef enum CUatomicOperation_enum {
    CU_ATOMIC_OPERATION_INTEGER_ADD = 0,
    GS_CU_ATOMIC_OPERATION_FORCE_INT_ = 0x7FFFFFFF
} CUatomicOperation;

/* Batched copies (CUDA 12.8): where each operand is, as a location hint. */
typedef enum CUmemcpySrcAccessOrder_enum {
    CU_MEMCPY_SRC_ACCESS_ORDER_INVALID = 0x0,
    CU_MEMCPY_SRC_ACCESS_ORDER_STREAM = 0x1,
    GS_CU_MEMCPY_SRC_ACCESS_ORDER_FORCE_INT_ = 0x7FFFFFFF
} CUmemcpySrcAccessOrder;

typedef struct CUmemcpyAttributes_st {
    CUmemcpySrcAccessOrder srcAccessOrder;
    CUmemLocation srcLocHint;
    CUmemLocation dstLocHint;
    unsigned int flags;
} CUmemcpyAttributes;

typedef enum CUmemcpy3DOperandType_enum {
    CU_MEMCPY_OPERAND_TYPE_POINTER = 0x1,
    CU_MEMCPY_OPERAND_TYPE_ARRAY = 0x2,
    CU_MEMCPY_OPERAND_TYPE_MAX = 0x7FFFFFFF
} CUmemcpy3DOperandType;

typedef struct CUoffset3D_st {
    size_t x, y, z;
} CUoffset3D;

typedef struct CUextent3D_st {
    size_t width, height, depth;
} CUextent3D;

typedef struct CUmemcpy3DOperand_st {
    CUmemcpy3DOperandType type;
    union {
        struct {
            CUdeviceptr ptr;
            size_t rowLength;
            size_t layerHeight;
            CUmemLocation locHint;               /* type CU_MEMCPY_OPERAND_TYPE_POINTER */
        } ptr;
        struct {
            CUarray array;
            CUoffset3D offset;
        } array;
    } op;
} CUmemcpy3DOperand;

typedef struct CUDA_MEMCPY3D_BATCH_OP_st {
    CUmemcpy3DOperand src;
    CUmemcpy3DOperand dst;
    CUextent3D extent;
    CUmemcpySrcAccessOrder srcAccessOrder;
    unsigned int flags;
} CUDA_MEMCPY3D_BATCH_OP;

/* cuGraphAddMemAllocNode, and the alloc member of CUgraphNodeParams (the _v2 layout is the same) */
typedef struct CUDA_MEM_ALLOC_NODE_PARAMS_st {
    CUmemPoolProps poolProps;                /* poolProps.location: where the memory is */
    const CUmemAccessDesc *accessDescs;      /* peers that may access it */
    size_t accessDescCount;
    size_t bytesize;
    CUdeviceptr dptr;                        /* out */
} CUDA_MEM_ALLOC_NODE_PARAMS;

typedef enum CUgraphNodeType_enum {
    CU_GRAPH_NODE_TYPE_MEM_ALLOC = 10
} CUgraphNodeType;

/* cuGraphAddNode: a tagged union of every node type's parameters (256 bytes). */
typedef struct CUgraphNodeParams_st {
    CUgraphNodeType type;
    int reserved0[3];
    union {
        long long reserved1[29];
        CUDA_MEM_ALLOC_NODE_PARAMS alloc;    /* type CU_GRAPH_NODE_TYPE_MEM_ALLOC */
    };
    long long reserved2;
} CUgraphNodeParams;

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Static_assert(sizeof(CUgraphNodeParams) == 256, "CUgraphNodeParams: 256 bytes (CUDA 13.0 cuda.h)");
_Static_assert(sizeof(CUDA_MEM_ALLOC_NODE_PARAMS) == 120, "CUDA_MEM_ALLOC_NODE_PARAMS: 120 bytes");
#endif

/* ---------------------------------------------------------------------------------------- */
/* Entry points: X(name, return type, parameter list)                                        */
/* ---------------------------------------------------------------------------------------- */

#define GS_CUDA_FUNCTIONS(X)                                                                      \
    /* init, version, errors, entry-point lookup */                                               \
    X(cuInit, CUresult, (unsigned int Flags))                                                     \
    X(cuDriverGetVersion, CUresult, (int *driverVersion))                                         \
    X(cuGetErrorString, CUresult, (CUresult error, const char **pStr))                            \
    X(cuGetErrorName, CUresult, (CUresult error, const char **pStr))                              \
    X(cuGetProcAddress, CUresult,                                                                 \
      (const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags))                        \
    X(cuGetProcAddress_v2, CUresult,                                                              \
      (const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,                         \
       CUdriverProcAddressQueryResult *symbolStatus))                                             \
    X(cuGetExportTable, CUresult, (const void **ppExportTable, const CUuuid *pExportTableId))      \
    /* devices */                                                                                 \
    X(cuDeviceGet, CUresult, (CUdevice *device, int ordinal))                                     \
    X(cuDeviceGetCount, CUresult, (int *count))                                                   \
    X(cuDeviceGetName, CUresult, (char *name, int len, CUdevice dev))                             \
    X(cuDeviceGetUuid, CUresult, (CUuuid *uuid, CUdevice dev))                                    \
    X(cuDeviceGetUuid_v2, CUresult, (CUuuid *uuid, CUdevice dev))                                 \
    X(cuDeviceTotalMem, CUresult, (unsigned int *bytes, CUdevice dev))                            \
    X(cuDeviceTotalMem_v2, CUresult, (size_t *bytes, CUdevice dev))                               \
    X(cuDeviceGetAttribute, CUresult, (int *pi, CUdevice_attribute attrib, CUdevice dev))         \
    X(cuDeviceGetPCIBusId, CUresult, (char *pciBusId, int len, CUdevice dev))                     \
    X(cuDeviceGetByPCIBusId, CUresult, (CUdevice *dev, const char *pciBusId))                     \
    X(cuDeviceCanAccessPeer, CUresult, (int *canAccessPeer, CUdevice dev, CUdevice peerDev))      \
    X(cuDeviceGetP2PAttribute, CUresult,                                                          \
      (int *value, CUdevice_P2PAttribute attrib, CUdevice srcDevice, CUdevice dstDevice))         \
    /* primary contexts */                                                                        \
    X(cuDevicePrimaryCtxRetain, CUresult, (CUcontext *pctx, CUdevice dev))                        \
    X(cuDevicePrimaryCtxRelease, CUresult, (CUdevice dev))                                        \
    X(cuDevicePrimaryCtxRelease_v2, CUresult, (CUdevice dev))                                     \
    X(cuDevicePrimaryCtxReset, CUresult, (CUdevice dev))                                          \
    X(cuDevicePrimaryCtxReset_v2, CUresult, (CUdevice dev))                                       \
    X(cuDevicePrimaryCtxGetState, CUresult, (CUdevice dev, unsigned int *flags, int *active))     \
    X(cuDevicePrimaryCtxSetFlags, CUresult, (CUdevice dev, unsigned int flags))                   \
    X(cuDevicePrimaryCtxSetFlags_v2, CUresult, (CUdevice dev, unsigned int flags))                \
    /* more of a device's properties (each takes a device: translated or refused) */              \
    X(cuDeviceComputeCapability, CUresult, (int *major, int *minor, CUdevice dev))                \
    X(cuDeviceGetProperties, CUresult, (CUdevprop *prop, CUdevice dev))                           \
    X(cuDeviceGetLuid, CUresult, (char *luid, unsigned int *deviceNodeMask, CUdevice dev))        \
    X(cuDeviceGetTexture1DLinearMaxWidth, CUresult,                                               \
      (size_t *maxWidthInElements, CUarray_format format, unsigned numChannels, CUdevice dev))    \
    X(cuDeviceGetExecAffinitySupport, CUresult, (int *pi, CUexecAffinityType type, CUdevice dev)) \
    X(cuDeviceGetNvSciSyncAttributes, CUresult, (void *nvSciSyncAttrList, CUdevice dev, int flags)) \
    X(cuDeviceGetHostAtomicCapabilities, CUresult,                                                \
      (unsigned int *capabilities, const CUatomicOperation *operations, unsigned int count,       \
       CUdevice dev))                                                                             \
    X(cuDeviceGetP2PAtomicCapabilities, CUresult,                                                 \
      (unsigned int *capabilities, const CUatomicOperation *operations, unsigned int count,       \
       CUdevice srcDevice, CUdevice dstDevice))                                                   \
    X(cuDeviceRegisterAsyncNotification, CUresult,                                                \
      (CUdevice device, CUasyncCallback callbackFunc, void *userData,                             \
       CUasyncCallbackHandle *callback))                                                          \
    X(cuDeviceUnregisterAsyncNotification, CUresult,                                              \
      (CUdevice device, CUasyncCallbackHandle callback))                                          \
    X(cuDeviceGetMemPool, CUresult, (CUmemoryPool *pool, CUdevice dev))                           \
    X(cuDeviceSetMemPool, CUresult, (CUdevice dev, CUmemoryPool pool))                            \
    X(cuDeviceGetGraphMemAttribute, CUresult,                                                     \
      (CUdevice device, CUgraphMem_attribute attr, void *value))                                  \
    X(cuDeviceSetGraphMemAttribute, CUresult,                                                     \
      (CUdevice device, CUgraphMem_attribute attr, void *value))                                  \
    X(cuDeviceGraphMemTrim, CUresult, (CUdevice device))                                          \
    X(cuKernelGetAttribute, CUresult,                                                             \
      (int *pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev))                      \
    X(cuKernelSetAttribute, CUresult,                                                             \
      (CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev))                      \
    X(cuKernelSetCacheConfig, CUresult, (CUkernel kernel, CUfunc_cache config, CUdevice dev))     \
    X(cuArrayGetMemoryRequirements, CUresult,                                                     \
      (CUDA_ARRAY_MEMORY_REQUIREMENTS *memoryRequirements, CUarray array, CUdevice device))       \
    X(cuMipmappedArrayGetMemoryRequirements, CUresult,                                            \
      (CUDA_ARRAY_MEMORY_REQUIREMENTS *memoryRequirements, CUmipmappedArray mipmap,               \
       CUdevice device))                                                                          \
    X(cuStreamGetDevice, CUresult, (CUstream hStream, CUdevice *device))                          \
    X(cuStreamGetDevice_ptsz, CUresult, (CUstream hStream, CUdevice *device))                     \
    /* unified memory: advice, prefetches, range and pointer attributes */                         \
    X(cuMemAdvise, CUresult, (CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUdevice device)) \
    X(cuMemAdvise_v2, CUresult,                                                                   \
      (CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUmemLocation location))            \
    X(cuMemPrefetchAsync, CUresult,                                                               \
      (CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream))                   \
    X(cuMemPrefetchAsync_ptsz, CUresult,                                                          \
      (CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream))                   \
    X(cuMemPrefetchAsync_v2, CUresult,                                                            \
      (CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags,              \
       CUstream hStream))                                                                         \
    X(cuMemPrefetchAsync_v2_ptsz, CUresult,                                                       \
      (CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags,              \
       CUstream hStream))                                                                         \
    X(cuMemPrefetchBatchAsync, CUresult,                                                          \
      (CUdeviceptr *dptrs, size_t *sizes, size_t count, CUmemLocation *prefetchLocs,              \
       size_t *prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags, CUstream hStream)) \
    X(cuMemPrefetchBatchAsync_ptsz, CUresult,                                                     \
      (CUdeviceptr *dptrs, size_t *sizes, size_t count, CUmemLocation *prefetchLocs,              \
       size_t *prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags, CUstream hStream)) \
    X(cuMemDiscardAndPrefetchBatchAsync, CUresult,                                                \
      (CUdeviceptr *dptrs, size_t *sizes, size_t count, CUmemLocation *prefetchLocs,              \
       size_t *prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags, CUstream hStream)) \
    X(cuMemDiscardAndPrefetchBatchAsync_ptsz, CUresult,                                           \
      (CUdeviceptr *dptrs, size_t *sizes, size_t count, CUmemLocation *prefetchLocs,              \
       size_t *prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags, CUstream hStream)) \
    X(cuMemRangeGetAttribute, CUresult,                                                           \
      (void *data, size_t dataSize, CUmem_range_attribute attribute, CUdeviceptr devPtr,          \
       size_t count))                                                                             \
    X(cuMemRangeGetAttributes, CUresult,                                                          \
      (void **data, size_t *dataSizes, CUmem_range_attribute *attributes, size_t numAttributes,   \
       CUdeviceptr devPtr, size_t count))                                                         \
    X(cuPointerGetAttribute, CUresult, (void *data, CUpointer_attribute attribute, CUdeviceptr ptr)) \
    X(cuPointerGetAttributes, CUresult,                                                           \
      (unsigned int numAttributes, CUpointer_attribute *attributes, void **data, CUdeviceptr ptr)) \
    /* access to memory and pools by location, multicast, graph allocations */                    \
    X(cuMemGetAccess, CUresult,                                                                   \
      (unsigned long long *flags, const CUmemLocation *location, CUdeviceptr ptr))                \
    X(cuMemGetAllocationPropertiesFromHandle, CUresult,                                           \
      (CUmemAllocationProp *prop, CUmemGenericAllocationHandle handle))                           \
    X(cuMemPoolSetAccess, CUresult, (CUmemoryPool pool, const CUmemAccessDesc *map, size_t count)) \
    X(cuMemPoolGetAccess, CUresult,                                                               \
      (CUmemAccess_flags *flags, CUmemoryPool memPool, CUmemLocation *location))                  \
    X(cuMemGetDefaultMemPool, CUresult,                                                           \
      (CUmemoryPool *pool_out, CUmemLocation *location, CUmemAllocationType type))                \
    X(cuMemGetMemPool, CUresult, (CUmemoryPool *pool, CUmemLocation *location, CUmemAllocationType type)) \
    X(cuMemSetMemPool, CUresult, (CUmemLocation *location, CUmemAllocationType type, CUmemoryPool pool)) \
    X(cuMulticastAddDevice, CUresult, (CUmemGenericAllocationHandle mcHandle, CUdevice dev))      \
    X(cuMulticastUnbind, CUresult,                                                                \
      (CUmemGenericAllocationHandle mcHandle, CUdevice dev, size_t mcOffset, size_t size))        \
    X(cuMemcpyBatchAsync, CUresult,                                                               \
      (CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count, CUmemcpyAttributes *attrs, \
       size_t *attrsIdxs, size_t numAttrs, size_t *failIdx, CUstream hStream))                    \
    X(cuMemcpyBatchAsync_ptsz, CUresult,                                                          \
      (CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count, CUmemcpyAttributes *attrs, \
       size_t *attrsIdxs, size_t numAttrs, size_t *failIdx, CUstream hStream))                    \
    X(cuMemcpyBatchAsync_v2, CUresult,                                                            \
      (CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count, CUmemcpyAttributes *attrs, \
       size_t *attrsIdxs, size_t numAttrs, CUstream hStream))                                     \
    X(cuMemcpyBatchAsync_v2_ptsz, CUresult,                                                       \
      (CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count, CUmemcpyAttributes *attrs, \
       size_t *attrsIdxs, size_t numAttrs, CUstream hStream))                                     \
    X(cuMemcpy3DBatchAsync, CUresult,                                                             \
      (size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, size_t *failIdx, unsigned long long flags,  \
       CUstream hStream))                                                                         \
    X(cuMemcpy3DBatchAsync_ptsz, CUresult,                                                        \
      (size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, size_t *failIdx, unsigned long long flags,  \
       CUstream hStream))                                                                         \
    X(cuMemcpy3DBatchAsync_v2, CUresult,                                                          \
      (size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, unsigned long long flags, CUstream hStream)) \
    X(cuMemcpy3DBatchAsync_v2_ptsz, CUresult,                                                     \
      (size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, unsigned long long flags, CUstream hStream)) \
    X(cuGraphAddMemAllocNode, CUresult,                                                           \
      (CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,                 \
       size_t numDependencies, CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams))                           \
    X(cuGraphMemAllocNodeGetParams, CUresult, (CUgraphNode hNode, CUDA_MEM_ALLOC_NODE_PARAMS *params_out)) \
    X(cuGraphAddNode, CUresult,                                                                   \
      (CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,                 \
       size_t numDependencies, CUgraphNodeParams *nodeParams))                                    \
    X(cuGraphAddNode_v2, CUresult,                                                                \
      (CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,                 \
       const CUgraphEdgeData *dependencyData, size_t numDependencies, CUgraphNodeParams *nodeParams)) \
    /* contexts */                                                                                \
    X(cuCtxCreate, CUresult, (CUcontext *pctx, unsigned int flags, CUdevice dev))                 \
    X(cuCtxCreate_v2, CUresult, (CUcontext *pctx, unsigned int flags, CUdevice dev))              \
    X(cuCtxCreate_v3, CUresult,                                                                   \
      (CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams, unsigned int flags,      \
       CUdevice dev))                                                                             \
    X(cuCtxCreate_v4, CUresult,                                                                   \
      (CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags, CUdevice dev))    \
    X(cuCtxDestroy, CUresult, (CUcontext ctx))                                                    \
    X(cuCtxDestroy_v2, CUresult, (CUcontext ctx))                                                 \
    X(cuCtxGetCurrent, CUresult, (CUcontext *pctx))                                               \
    X(cuCtxSetCurrent, CUresult, (CUcontext ctx))                                                 \
    X(cuCtxGetDevice, CUresult, (CUdevice *device))                                               \
    X(cuCtxGetDevice_v2, CUresult, (CUdevice *device, CUcontext ctx))                             \
    X(cuCtxPushCurrent, CUresult, (CUcontext ctx))                                                \
    X(cuCtxPushCurrent_v2, CUresult, (CUcontext ctx))                                             \
    X(cuCtxPopCurrent, CUresult, (CUcontext *pctx))                                               \
    X(cuCtxPopCurrent_v2, CUresult, (CUcontext *pctx))                                            \
    X(cuCtxSynchronize, CUresult, (void))                                                         \
    X(cuCtxSynchronize_v2, CUresult, (CUcontext ctx))                                             \
    /* green contexts (CUDA 12.4) */                                                              \
    X(cuDeviceGetDevResource, CUresult,                                                           \
      (CUdevice device, CUdevResource *resource, CUdevResourceType type))                         \
    X(cuDevSmResourceSplitByCount, CUresult,                                                      \
      (CUdevResource *result, unsigned int *nbGroups, const CUdevResource *input,                 \
       CUdevResource *remaining, unsigned int useFlags, unsigned int minCount))                   \
    X(cuDevResourceGenerateDesc, CUresult,                                                        \
      (CUdevResourceDesc *phDesc, CUdevResource *resources, unsigned int nbResources))            \
    X(cuGreenCtxCreate, CUresult,                                                                 \
      (CUgreenCtx *phCtx, CUdevResourceDesc desc, CUdevice dev, unsigned int flags))              \
    X(cuGreenCtxDestroy, CUresult, (CUgreenCtx hCtx))                                             \
    X(cuCtxFromGreenCtx, CUresult, (CUcontext *pContext, CUgreenCtx hCtx))                        \
    X(cuGreenCtxGetDevResource, CUresult,                                                         \
      (CUgreenCtx hCtx, CUdevResource *resource, CUdevResourceType type))                         \
    X(cuCtxGetDevResource, CUresult,                                                              \
      (CUcontext hCtx, CUdevResource *resource, CUdevResourceType type))                          \
    /* linear device memory */                                                                    \
    X(cuMemAlloc, CUresult, (gs_CUdeviceptr_v1 *dptr, unsigned int bytesize))                     \
    X(cuMemAlloc_v2, CUresult, (CUdeviceptr *dptr, size_t bytesize))                              \
    X(cuMemAllocPitch, CUresult,                                                                  \
      (gs_CUdeviceptr_v1 *dptr, unsigned int *pPitch, unsigned int WidthInBytes,                  \
       unsigned int Height, unsigned int ElementSizeBytes))                                       \
    X(cuMemAllocPitch_v2, CUresult,                                                               \
      (CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,                     \
       unsigned int ElementSizeBytes))                                                            \
    X(cuMemAllocManaged, CUresult, (CUdeviceptr *dptr, size_t bytesize, unsigned int flags))      \
    X(cuMemFree, CUresult, (gs_CUdeviceptr_v1 dptr))                                              \
    X(cuMemFree_v2, CUresult, (CUdeviceptr dptr))                                                 \
    X(cuMemGetInfo, CUresult, (unsigned int *free, unsigned int *total))                          \
    X(cuMemGetInfo_v2, CUresult, (size_t *free, size_t *total))                                   \
    X(cuMemAllocHost, CUresult, (void **pp, unsigned int bytesize))                               \
    X(cuMemAllocHost_v2, CUresult, (void **pp, size_t bytesize))                                  \
    X(cuMemFreeHost, CUresult, (void *p))                                                         \
    /* virtual memory management */                                                               \
    X(cuMemCreate, CUresult,                                                                      \
      (CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,        \
       unsigned long long flags))                                                                 \
    X(cuMemRelease, CUresult, (CUmemGenericAllocationHandle handle))                              \
    X(cuMemAddressReserve, CUresult,                                                              \
      (CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,                         \
       unsigned long long flags))                                                                 \
    X(cuMemAddressFree, CUresult, (CUdeviceptr ptr, size_t size))                                 \
    X(cuMemMap, CUresult,                                                                         \
      (CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,          \
       unsigned long long flags))                                                                 \
    X(cuMemUnmap, CUresult, (CUdeviceptr ptr, size_t size))                                       \
    X(cuMemSetAccess, CUresult,                                                                   \
      (CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count))                  \
    X(cuMemGetAllocationGranularity, CUresult,                                                    \
      (size_t *granularity, const CUmemAllocationProp *prop,                                      \
       CUmemAllocationGranularity_flags option))                                                  \
    /* stream-ordered allocation and pools */                                                     \
    X(cuMemAllocAsync, CUresult, (CUdeviceptr *dptr, size_t bytesize, CUstream hStream))          \
    X(cuMemAllocAsync_ptsz, CUresult, (CUdeviceptr *dptr, size_t bytesize, CUstream hStream))     \
    X(cuMemFreeAsync, CUresult, (CUdeviceptr dptr, CUstream hStream))                             \
    X(cuMemFreeAsync_ptsz, CUresult, (CUdeviceptr dptr, CUstream hStream))                        \
    X(cuMemAllocFromPoolAsync, CUresult,                                                          \
      (CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream))                  \
    X(cuMemAllocFromPoolAsync_ptsz, CUresult,                                                     \
      (CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream))                  \
    X(cuMemPoolCreate, CUresult, (CUmemoryPool *pool, const CUmemPoolProps *poolProps))           \
    X(cuMemPoolDestroy, CUresult, (CUmemoryPool pool))                                            \
    X(cuMemPoolTrimTo, CUresult, (CUmemoryPool pool, size_t minBytesToKeep))                      \
    X(cuDeviceGetDefaultMemPool, CUresult, (CUmemoryPool *pool_out, CUdevice dev))                \
    /* arrays */                                                                                  \
    X(cuArrayCreate_v2, CUresult, (CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)) \
    X(cuArray3DCreate_v2, CUresult,                                                               \
      (CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray))                          \
    X(cuArrayDestroy, CUresult, (CUarray hArray))                                                 \
    X(cuMipmappedArrayCreate, CUresult,                                                           \
      (CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,             \
       unsigned int numMipmapLevels))                                                             \
    X(cuMipmappedArrayDestroy, CUresult, (CUmipmappedArray hMipmappedArray))                      \
    /* modules and launches */                                                                    \
    X(cuModuleLoadData, CUresult, (CUmodule *module, const void *image))                          \
    X(cuModuleUnload, CUresult, (CUmodule hmod))                                                  \
    X(cuModuleGetFunction, CUresult, (CUfunction *hfunc, CUmodule hmod, const char *name))        \
    X(cuLaunchKernel, CUresult,                                                                   \
      (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,         \
       unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,                    \
       unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra))         \
    X(cuLaunchKernel_ptsz, CUresult,                                                              \
      (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,         \
       unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,                    \
       unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra))         \
    X(cuLaunchKernelEx, CUresult,                                                                 \
      (const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra))            \
    X(cuLaunchKernelEx_ptsz, CUresult,                                                            \
      (const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra))            \
    X(cuLaunchCooperativeKernel, CUresult,                                                        \
      (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,         \
       unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,                    \
       unsigned int sharedMemBytes, CUstream hStream, void **kernelParams))                       \
    X(cuLaunchCooperativeKernel_ptsz, CUresult,                                                   \
      (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,         \
       unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,                    \
       unsigned int sharedMemBytes, CUstream hStream, void **kernelParams))                       \
    /* graphs (made by stream capture) */                                                         \
    X(cuStreamBeginCapture_v2, CUresult, (CUstream hStream, CUstreamCaptureMode mode))            \
    X(cuStreamBeginCapture_v2_ptsz, CUresult, (CUstream hStream, CUstreamCaptureMode mode))       \
    X(cuStreamEndCapture, CUresult, (CUstream hStream, CUgraph *phGraph))                         \
    X(cuStreamEndCapture_ptsz, CUresult, (CUstream hStream, CUgraph *phGraph))                    \
    X(cuThreadExchangeStreamCaptureMode, CUresult, (CUstreamCaptureMode *mode))                 \
    X(cuStreamIsCapturing, CUresult, (CUstream hStream, CUstreamCaptureStatus *captureStatus))    \
    X(cuStreamIsCapturing_ptsz, CUresult, (CUstream hStream, CUstreamCaptureStatus *captureStatus)) \
    X(cuGraphInstantiateWithFlags, CUresult,                                                      \
      (CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags))                       \
    X(cuGraphLaunch, CUresult, (CUgraphExec hGraphExec, CUstream hStream))                        \
    X(cuGraphLaunch_ptsz, CUresult, (CUgraphExec hGraphExec, CUstream hStream))                   \
    X(cuGraphExecDestroy, CUresult, (CUgraphExec hGraphExec))                                     \
    X(cuGraphDestroy, CUresult, (CUgraph hGraph))                                                 \
    /* events */                                                                                  \
    X(cuEventCreate, CUresult, (CUevent *phEvent, unsigned int Flags))                            \
    X(cuEventRecord, CUresult, (CUevent hEvent, CUstream hStream))                                \
    X(cuEventRecord_ptsz, CUresult, (CUevent hEvent, CUstream hStream))                           \
    X(cuEventQuery, CUresult, (CUevent hEvent))                                                   \
    X(cuEventSynchronize, CUresult, (CUevent hEvent))                                             \
    X(cuEventElapsedTime, CUresult, (float *pMilliseconds, CUevent hStart, CUevent hEnd))         \
    X(cuEventElapsedTime_v2, CUresult, (float *pMilliseconds, CUevent hStart, CUevent hEnd))      \
    X(cuEventDestroy, CUresult, (CUevent hEvent))                                                 \
    X(cuEventDestroy_v2, CUresult, (CUevent hEvent))                                              \
    /* streams */                                                                                 \
    X(cuStreamCreate, CUresult, (CUstream *phStream, unsigned int Flags))                         \
    X(cuStreamQuery, CUresult, (CUstream hStream))                                                \
    X(cuStreamQuery_ptsz, CUresult, (CUstream hStream))                                           \
    X(cuStreamDestroy, CUresult, (CUstream hStream))                                              \
    X(cuStreamDestroy_v2, CUresult, (CUstream hStream))                                           \
    X(cuStreamSynchronize, CUresult, (CUstream hStream))                                          \
    X(cuStreamSynchronize_ptsz, CUresult, (CUstream hStream))                                     \
    /* copies and sets */                                                                         \
    X(cuMemcpyHtoD_v2, CUresult, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount))  \
    X(cuMemcpyHtoD_v2_ptds, CUresult,                                                             \
      (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount))                             \
    X(cuMemcpyDtoH_v2, CUresult, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount))        \
    X(cuMemcpyDtoH_v2_ptds, CUresult, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount))   \
    X(cuMemsetD8_v2, CUresult, (CUdeviceptr dstDevice, unsigned char uc, size_t N))               \
    X(cuMemsetD8_v2_ptds, CUresult, (CUdeviceptr dstDevice, unsigned char uc, size_t N))

/* Function-pointer types: gs_cuInit_fn, gs_cuMemAlloc_v2_fn, ... */
#define GS_CUDA_FN_TYPEDEF_(name, ret, params) typedef ret(*gs_##name##_fn) params;
GS_CUDA_FUNCTIONS(GS_CUDA_FN_TYPEDEF_)
#undef GS_CUDA_FN_TYPEDEF_

/* A table of every entry point above, for programs that dlsym them. */
struct gs_cuda_fns {
#define GS_CUDA_FN_MEMBER_(name, ret, params) gs_##name##_fn name;
        GS_CUDA_FUNCTIONS(GS_CUDA_FN_MEMBER_)
#undef GS_CUDA_FN_MEMBER_
};

#ifndef GS_CUDA_NO_PROTOTYPES
#define GS_CUDA_PROTO_(name, ret, params) ret name params;
GS_CUDA_FUNCTIONS(GS_CUDA_PROTO_)
#undef GS_CUDA_PROTO_
#endif

#ifdef __cplusplus
}
#endif

#endif /* GPUSLICE_ABI_CUDA_H */
