/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpuslice: our own declarations of the subset of the NVML C ABI that gpuslice uses.
 *
 * Written from the public NVML API reference (values and layouts are facts of the ABI);
 * not derived from NVIDIA's header. Only what gpuslice (the provisioning helper, the
 * interposer and the simulated GPU in tests/fakegpu) needs is declared here.
 *
 * Every NVML entry point is listed twice:
 *   - a prototype under its real exported name, so the fake library can define it and a
 *     mismatch between definition and declaration is a compile error;
 *   - a function-pointer type `gs_<name>_fn`, for callers that dlsym() the real library.
 * Define GS_NVML_NO_PROTOTYPES before including to get only types and pointer typedefs
 * (e.g. in the interposer, which defines its own hooks with these names).
 */
#ifndef GPUSLICE_ABI_NVML_H
#define GPUSLICE_ABI_NVML_H

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------- */
/* Return codes                                                                              */
/* ---------------------------------------------------------------------------------------- */

typedef enum nvmlReturn_enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_ALREADY_INITIALIZED = 5,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_INSUFFICIENT_POWER = 8,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_IRQ_ISSUE = 11,
    NVML_ERROR_LIBRARY_NOT_FOUND = 12,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_CORRUPTED_INFOROM = 14,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_RESET_REQUIRED = 16,
    NVML_ERROR_OPERATING_SYSTEM = 17,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
    NVML_ERROR_IN_USE = 19,
    NVML_ERROR_MEMORY = 20,
    NVML_ERROR_NO_DATA = 21,
    NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
    NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
    NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_DEPRECATED = 26,
    NVML_ERROR_NOT_READY = 27,
    NVML_ERROR_GPU_NOT_FOUND = 28,
    NVML_ERROR_INVALID_STATE = 29,
    NVML_ERROR_RESET_TYPE_NOT_SUPPORTED = 30,
    NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

/* ---------------------------------------------------------------------------------------- */
/* Constants                                                                                 */
/* ---------------------------------------------------------------------------------------- */

/* Buffer sizes the API guarantees to be large enough. */
#define NVML_DEVICE_INFOROM_VERSION_BUFFER_SIZE 16
#define NVML_DEVICE_UUID_BUFFER_SIZE            80
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE         96   /* nvmlDeviceGetUUID */
#define NVML_DEVICE_PART_NUMBER_BUFFER_SIZE     80
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE  80
#define NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE    80
#define NVML_DEVICE_NAME_BUFFER_SIZE            64
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE         96   /* nvmlDeviceGetName */
#define NVML_DEVICE_SERIAL_BUFFER_SIZE          30
#define NVML_DEVICE_VBIOS_VERSION_BUFFER_SIZE   32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE      32   /* nvmlPciInfo_t.busId */
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE   16   /* nvmlPciInfo_t.busIdLegacy */

/* printf formats of the two bus-id strings in nvmlPciInfo_t. */
#define NVML_DEVICE_PCI_BUS_ID_LEGACY_FMT "%04X:%02X:%02X.0"
#define NVML_DEVICE_PCI_BUS_ID_FMT        "%08X:%02X:%02X.0"

/* Field value meaning "not available" in some structs. */
#define NVML_VALUE_NOT_AVAILABLE (-1)

/* MIG modes (nvmlDeviceGetMigMode current/pending). */
#define NVML_DEVICE_MIG_DISABLE 0x0
#define NVML_DEVICE_MIG_ENABLE  0x1

/* nvmlProcessInfo_t.gpuInstanceId / computeInstanceId when MIG is off. */
#define GS_NVML_INVALID_INSTANCE_ID 0xFFFFFFFFu

/* nvmlInitWithFlags flags. */
#define NVML_INIT_FLAG_NO_GPUS   1
#define NVML_INIT_FLAG_NO_ATTACH 2

/* nvmlEnableState_t */
typedef enum nvmlEnableState_enum {
    NVML_FEATURE_DISABLED = 0,
    NVML_FEATURE_ENABLED = 1
} nvmlEnableState_t;

/* Versioned structs carry (sizeof(struct) | version << 24) in their first member. */
#define GS_NVML_STRUCT_VERSION(type, ver) ((unsigned int)(sizeof(type) | ((unsigned int)(ver) << 24U)))

/* CUDA driver version helpers: 13000 -> 13.0, 12040 -> 12.4. */
#define NVML_CUDA_DRIVER_VERSION_MAJOR(v) ((v) / 1000)
#define NVML_CUDA_DRIVER_VERSION_MINOR(v) (((v) % 1000) / 10)

/* ---------------------------------------------------------------------------------------- */
/* Types                                                                                     */
/* ---------------------------------------------------------------------------------------- */

/* Opaque device handle (a GPU or a MIG device). */
typedef struct nvmlDevice_st *nvmlDevice_t;

/* Layout used by nvmlDeviceGetPciInfo_v3. The older nvmlDeviceGetPciInfo and _v2 entry points
 * wrote an older, differently sized struct whose first 36 bytes (a 16-byte bus id and the five
 * integers below) match this one: read only those fields from them. */
typedef struct nvmlPciInfo_st {
    char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE]; /* "%04X:%02X:%02X.0" */
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;     /* (device id << 16) | vendor id (0x10de) */
    unsigned int pciSubSystemId;
    char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];          /* "%08X:%02X:%02X.0" */
} nvmlPciInfo_t;

typedef struct nvmlMemory_st {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

typedef struct nvmlMemory_v2_st {
    unsigned int version;          /* must be nvmlMemory_v2 */
    unsigned long long total;
    unsigned long long reserved;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_v2_t;

#define nvmlMemory_v2 GS_NVML_STRUCT_VERSION(nvmlMemory_v2_t, 2)

typedef struct nvmlUtilization_st {
    unsigned int gpu;     /* percent */
    unsigned int memory;  /* percent */
} nvmlUtilization_t;

/* Legacy process info (nvmlDeviceGetComputeRunningProcesses, unversioned symbol). */
typedef struct nvmlProcessInfo_v1_st {
    unsigned int pid;
    unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

/* Process info used by the _v2 and _v3 running-process queries. */
typedef struct nvmlProcessInfo_st {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;      /* GS_NVML_INVALID_INSTANCE_ID without MIG */
    unsigned int computeInstanceId;  /* GS_NVML_INVALID_INSTANCE_ID without MIG */
} nvmlProcessInfo_t;

typedef nvmlProcessInfo_t nvmlProcessInfo_v2_t;

typedef struct nvmlProcessUtilizationSample_st {
    unsigned int pid;
    unsigned long long timeStamp;  /* CPU timestamp, microseconds */
    unsigned int smUtil;
    unsigned int memUtil;
    unsigned int encUtil;
    unsigned int decUtil;
} nvmlProcessUtilizationSample_t;

typedef enum nvmlBrandType_enum {
    NVML_BRAND_UNKNOWN = 0,
    NVML_BRAND_QUADRO = 1,
    NVML_BRAND_TESLA = 2,
    NVML_BRAND_NVS = 3,
    NVML_BRAND_GRID = 4,
    NVML_BRAND_GEFORCE = 5,
    NVML_BRAND_TITAN = 6,
    NVML_BRAND_NVIDIA_VAPPS = 7,
    NVML_BRAND_NVIDIA_VPC = 8,
    NVML_BRAND_NVIDIA_VCS = 9,
    NVML_BRAND_NVIDIA_VWS = 10,
    NVML_BRAND_NVIDIA_CLOUD_GAMING = 11,
    NVML_BRAND_NVIDIA_VGAMING = NVML_BRAND_NVIDIA_CLOUD_GAMING,
    NVML_BRAND_QUADRO_RTX = 12,
    NVML_BRAND_NVIDIA_RTX = 13,
    NVML_BRAND_NVIDIA = 14,
    NVML_BRAND_GEFORCE_RTX = 15,
    NVML_BRAND_TITAN_RTX = 16,
    NVML_BRAND_COUNT
} nvmlBrandType_t;

/* Topology (nvmlDeviceGetTopologyNearestGpus & co): how far apart two GPUs are. */
typedef enum nvmlGpuLevel_enum {
    NVML_TOPOLOGY_INTERNAL = 0,
    NVML_TOPOLOGY_SINGLE = 10,
    NVML_TOPOLOGY_MULTIPLE = 20,
    NVML_TOPOLOGY_HOSTBRIDGE = 30,
    NVML_TOPOLOGY_NODE = 40,
    NVML_TOPOLOGY_SYSTEM = 50
} nvmlGpuTopologyLevel_t;

typedef enum nvmlGpuP2PStatus_enum {
    NVML_P2P_STATUS_OK = 0,
    NVML_P2P_STATUS_NOT_SUPPORTED = 5,
    NVML_P2P_STATUS_UNKNOWN = 6
} nvmlGpuP2PStatus_t;

typedef enum nvmlGpuP2PCapsIndex_enum {
    NVML_P2P_CAPS_INDEX_READ = 0
} nvmlGpuP2PCapsIndex_t;

typedef struct nvmlUnit_st *nvmlUnit_t;

/* Events (health: XID errors). Event type bits of nvmlDeviceRegisterEvents and
 * nvmlDeviceGetSupportedEventTypes. */
#define nvmlEventTypeSingleBitEccError 0x0000000000000001ULL
#define nvmlEventTypeDoubleBitEccError 0x0000000000000002ULL
#define nvmlEventTypePState 0x0000000000000004ULL
#define nvmlEventTypeXidCriticalError 0x0000000000000008ULL
#define nvmlEventTypeClock 0x0000000000000010ULL
#define nvmlEventTypePowerSourceChange 0x0000000000000080ULL
#define nvmlEventMigConfigChange 0x0000000000000100ULL
#define nvmlEventTypeNone 0x0000000000000000ULL

typedef struct nvmlEventSet_st *nvmlEventSet_t;

/* What nvmlEventSetWait_v2 fills (the unversioned nvmlEventSetWait fills the first three members
 * only). eventData is the XID for nvmlEventTypeXidCriticalError; the instance ids name the MIG
 * device an event belongs to (GS_NVML_INVALID_INSTANCE_ID: the whole GPU). */
typedef struct nvmlEventData_st {
    nvmlDevice_t device;
    unsigned long long eventType;
    unsigned long long eventData;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlEventData_t;

/* ---------------------------------------------------------------------------------------- */
/* Entry points: X(name, return type, parameter list)                                        */
/* ---------------------------------------------------------------------------------------- */

#define GS_NVML_FUNCTIONS(X)                                                                      \
    X(nvmlInit_v2, nvmlReturn_t, (void))                                                          \
    X(nvmlInit, nvmlReturn_t, (void))                                                             \
    X(nvmlInitWithFlags, nvmlReturn_t, (unsigned int flags))                                      \
    X(nvmlShutdown, nvmlReturn_t, (void))                                                         \
    X(nvmlErrorString, const char *, (nvmlReturn_t result))                                       \
    X(nvmlSystemGetDriverVersion, nvmlReturn_t, (char *version, unsigned int length))             \
    X(nvmlSystemGetNVMLVersion, nvmlReturn_t, (char *version, unsigned int length))               \
    X(nvmlSystemGetCudaDriverVersion, nvmlReturn_t, (int *cudaDriverVersion))                     \
    X(nvmlSystemGetCudaDriverVersion_v2, nvmlReturn_t, (int *cudaDriverVersion))                  \
    X(nvmlDeviceGetCount_v2, nvmlReturn_t, (unsigned int *deviceCount))                           \
    X(nvmlDeviceGetCount, nvmlReturn_t, (unsigned int *deviceCount))                              \
    X(nvmlDeviceGetHandleByIndex_v2, nvmlReturn_t, (unsigned int index, nvmlDevice_t *device))    \
    X(nvmlDeviceGetHandleByIndex, nvmlReturn_t, (unsigned int index, nvmlDevice_t *device))       \
    X(nvmlDeviceGetHandleByUUID, nvmlReturn_t, (const char *uuid, nvmlDevice_t *device))          \
    X(nvmlDeviceGetHandleByPciBusId_v2, nvmlReturn_t, (const char *pciBusId, nvmlDevice_t *device)) \
    X(nvmlDeviceGetHandleByPciBusId, nvmlReturn_t, (const char *pciBusId, nvmlDevice_t *device))  \
    X(nvmlDeviceGetIndex, nvmlReturn_t, (nvmlDevice_t device, unsigned int *index))               \
    X(nvmlDeviceGetName, nvmlReturn_t, (nvmlDevice_t device, char *name, unsigned int length))    \
    X(nvmlDeviceGetBrand, nvmlReturn_t, (nvmlDevice_t device, nvmlBrandType_t *type))             \
    X(nvmlDeviceGetUUID, nvmlReturn_t, (nvmlDevice_t device, char *uuid, unsigned int length))    \
    X(nvmlDeviceGetPciInfo_v3, nvmlReturn_t, (nvmlDevice_t device, nvmlPciInfo_t *pci))           \
    X(nvmlDeviceGetPciInfo_v2, nvmlReturn_t, (nvmlDevice_t device, nvmlPciInfo_t *pci))           \
    X(nvmlDeviceGetPciInfo, nvmlReturn_t, (nvmlDevice_t device, nvmlPciInfo_t *pci))              \
    X(nvmlDeviceGetMinorNumber, nvmlReturn_t, (nvmlDevice_t device, unsigned int *minorNumber))   \
    X(nvmlDeviceGetCudaComputeCapability, nvmlReturn_t, (nvmlDevice_t device, int *major, int *minor)) \
    X(nvmlDeviceGetMemoryInfo, nvmlReturn_t, (nvmlDevice_t device, nvmlMemory_t *memory))         \
    X(nvmlDeviceGetMemoryInfo_v2, nvmlReturn_t, (nvmlDevice_t device, nvmlMemory_v2_t *memory))   \
    X(nvmlDeviceGetUtilizationRates, nvmlReturn_t, (nvmlDevice_t device, nvmlUtilization_t *utilization)) \
    X(nvmlDeviceGetComputeRunningProcesses_v3, nvmlReturn_t,                                      \
      (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_t *infos))                   \
    X(nvmlDeviceGetComputeRunningProcesses_v2, nvmlReturn_t,                                      \
      (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_v2_t *infos))                \
    X(nvmlDeviceGetComputeRunningProcesses, nvmlReturn_t,                                         \
      (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_v1_t *infos))                \
    X(nvmlDeviceGetProcessUtilization, nvmlReturn_t,                                              \
      (nvmlDevice_t device, nvmlProcessUtilizationSample_t *utilization,                          \
       unsigned int *processSamplesCount, unsigned long long lastSeenTimeStamp))                  \
    X(nvmlDeviceGetMigMode, nvmlReturn_t,                                                         \
      (nvmlDevice_t device, unsigned int *currentMode, unsigned int *pendingMode))                \
    X(nvmlDeviceGetMaxMigDeviceCount, nvmlReturn_t, (nvmlDevice_t device, unsigned int *count))   \
    X(nvmlDeviceGetMigDeviceHandleByIndex, nvmlReturn_t,                                          \
      (nvmlDevice_t device, unsigned int index, nvmlDevice_t *migDevice))                         \
    X(nvmlDeviceGetDeviceHandleFromMigDeviceHandle, nvmlReturn_t,                                 \
      (nvmlDevice_t migDevice, nvmlDevice_t *device))                                             \
    X(nvmlDeviceIsMigDeviceHandle, nvmlReturn_t, (nvmlDevice_t device, unsigned int *isMigDevice)) \
    X(nvmlDeviceGetHandleBySerial, nvmlReturn_t, (const char *serial, nvmlDevice_t *device))      \
    X(nvmlDeviceGetSerial, nvmlReturn_t, (nvmlDevice_t device, char *serial, unsigned int length)) \
    X(nvmlDeviceGetTopologyNearestGpus, nvmlReturn_t,                                             \
      (nvmlDevice_t device, nvmlGpuTopologyLevel_t level, unsigned int *count,                    \
       nvmlDevice_t *deviceArray))                                                                \
    X(nvmlSystemGetTopologyGpuSet, nvmlReturn_t,                                                  \
      (unsigned int cpuNumber, unsigned int *count, nvmlDevice_t *deviceArray))                   \
    X(nvmlUnitGetDevices, nvmlReturn_t, (nvmlUnit_t unit, unsigned int *deviceCount, nvmlDevice_t *devices)) \
    X(nvmlDeviceGetTopologyCommonAncestor, nvmlReturn_t,                                          \
      (nvmlDevice_t device1, nvmlDevice_t device2, nvmlGpuTopologyLevel_t *pathInfo))             \
    X(nvmlDeviceGetP2PStatus, nvmlReturn_t,                                                       \
      (nvmlDevice_t device1, nvmlDevice_t device2, nvmlGpuP2PCapsIndex_t p2pIndex,                \
       nvmlGpuP2PStatus_t *p2pStatus))                                                            \
    X(nvmlDeviceOnSameBoard, nvmlReturn_t, (nvmlDevice_t device1, nvmlDevice_t device2, int *onSameBoard)) \
    X(nvmlDeviceGetGpuInstanceId, nvmlReturn_t, (nvmlDevice_t device, unsigned int *id))          \
    X(nvmlDeviceGetComputeInstanceId, nvmlReturn_t, (nvmlDevice_t device, unsigned int *id))

/* The event API and the repairs a GPU waits for (a reset to apply remapped rows or retire pages),
 * listed apart (only the plugins' health watcher and the fake use them). */
#define GS_NVML_EVENT_FUNCTIONS(X)                                                                \
    X(nvmlEventSetCreate, nvmlReturn_t, (nvmlEventSet_t * set))                                   \
    X(nvmlEventSetFree, nvmlReturn_t, (nvmlEventSet_t set))                                       \
    X(nvmlDeviceGetSupportedEventTypes, nvmlReturn_t, (nvmlDevice_t device, unsigned long long *eventTypes)) \
    X(nvmlDeviceRegisterEvents, nvmlReturn_t,                                                     \
      (nvmlDevice_t device, unsigned long long eventTypes, nvmlEventSet_t set))                   \
    X(nvmlEventSetWait_v2, nvmlReturn_t, (nvmlEventSet_t set, nvmlEventData_t * data, unsigned int timeoutms)) \
    X(nvmlEventSetWait, nvmlReturn_t, (nvmlEventSet_t set, nvmlEventData_t * data, unsigned int timeoutms)) \
    X(nvmlDeviceGetRemappedRows, nvmlReturn_t,                                                    \
      (nvmlDevice_t device, unsigned int *corrRows, unsigned int *uncRows, unsigned int *isPending, \
       unsigned int *failureOccurred))                                                            \
    X(nvmlDeviceGetRetiredPagesPendingStatus, nvmlReturn_t, (nvmlDevice_t device, nvmlEnableState_t *isPending))

/* Function-pointer types: gs_nvmlInit_v2_fn, gs_nvmlDeviceGetUUID_fn, ... */
#define GS_NVML_FN_TYPEDEF_(name, ret, params) typedef ret(*gs_##name##_fn) params;
GS_NVML_FUNCTIONS(GS_NVML_FN_TYPEDEF_)
GS_NVML_EVENT_FUNCTIONS(GS_NVML_FN_TYPEDEF_)
#undef GS_NVML_FN_TYPEDEF_

/* A table of every entry point above, for programs that dlsym them. */
struct gs_nvml_fns {
#define GS_NVML_FN_MEMBER_(name, ret, params) gs_##name##_fn name;
        GS_NVML_FUNCTIONS(GS_NVML_FN_MEMBER_)
#undef GS_NVML_FN_MEMBER_
};

#ifndef GS_NVML_NO_PROTOTYPES
#define GS_NVML_PROTO_(name, ret, params) ret name params;
GS_NVML_FUNCTIONS(GS_NVML_PROTO_)
GS_NVML_EVENT_FUNCTIONS(GS_NVML_PROTO_)
#undef GS_NVML_PROTO_
#endif

#ifdef __cplusplus
}
#endif

#endif /* GPUSLICE_ABI_NVML_H */
