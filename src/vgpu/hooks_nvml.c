/*
 * NVML hooks: nvidia-smi and NVML-based tools inside the slice see the quota as the device's
 * memory and the slice's usage as used memory, and only the slice's devices.
 */

#include <string.h>
#include <strings.h>

#include "vgpu/limiter.h"
#include "vgpu/vgpu.h"

#define S gs_vgpu_state

#define NREAL(name, ...)                                                                           \
        ((gs_vgpu_load_nvml() == 0 && S.nv.name != NULL) ? S.nv.name(__VA_ARGS__) : NVML_ERROR_UNINITIALIZED)

static bool hiding(void) { return S.cfg.devices[0] != '\0'; }

/* The slice's devices in visible order, as NVML handles (by UUID; works without CUDA). */
static int visible_uuids(char (*uuids)[96], int max)
{
        if (!hiding()) {
                unsigned n = 0;
                if (NREAL(nvmlDeviceGetCount_v2, &n) != NVML_SUCCESS)
                        return -1;
                int k = 0;
                for (unsigned i = 0; i < n && k < max; i++) {
                        nvmlDevice_t h;
                        if (NREAL(nvmlDeviceGetHandleByIndex_v2, i, &h) == NVML_SUCCESS &&
                            NREAL(nvmlDeviceGetUUID, h, uuids[k], 96) == NVML_SUCCESS)
                                k++;
                }
                return k;
        }
        char list[sizeof(S.cfg.devices)];
        memcpy(list, S.cfg.devices, sizeof(list));
        int k = 0;
        char *save = NULL;
        for (char *t = strtok_r(list, ",", &save); t != NULL && k < max; t = strtok_r(NULL, ",", &save)) {
                nvmlDevice_t h;
                if (NREAL(nvmlDeviceGetHandleByUUID, t, &h) == NVML_SUCCESS &&
                    NREAL(nvmlDeviceGetUUID, h, uuids[k], 96) == NVML_SUCCESS)
                        k++;
        }
        return k;
}

/* Visible index of an NVML handle (by UUID), or -1. */
static int visible_of_handle(nvmlDevice_t device)
{
        char uuid[96];
        if (NREAL(nvmlDeviceGetUUID, device, uuid, sizeof(uuid)) != NVML_SUCCESS)
                return -1;
        char uuids[GS_VGPU_MAX_DEVICES][96];
        int n = visible_uuids(uuids, GS_VGPU_MAX_DEVICES);
        if (n > 0)
                gs_vgpu_map_from_nvml(uuids, n);
        for (int i = 0; i < n; i++)
                if (strcasecmp(uuids[i], uuid) == 0)
                        return i;
        return -1;
}

GS_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
        if (!hiding() || deviceCount == NULL)
                return NREAL(nvmlDeviceGetCount_v2, deviceCount);
        char uuids[GS_VGPU_MAX_DEVICES][96];
        unsigned n = 0;
        nvmlReturn_t rc = NREAL(nvmlDeviceGetCount_v2, &n); /* also: uninitialised -> its error */
        if (rc != NVML_SUCCESS)
                return rc;
        int k = visible_uuids(uuids, GS_VGPU_MAX_DEVICES);
        *deviceCount = k > 0 ? (unsigned)k : 0;
        return NVML_SUCCESS;
}

GS_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount) { return nvmlDeviceGetCount_v2(deviceCount); }

GS_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
        if (!hiding())
                return NREAL(nvmlDeviceGetHandleByIndex_v2, index, device);
        if (device == NULL)
                return NVML_ERROR_INVALID_ARGUMENT;
        char uuids[GS_VGPU_MAX_DEVICES][96];
        unsigned n = 0;
        nvmlReturn_t rc = NREAL(nvmlDeviceGetCount_v2, &n);
        if (rc != NVML_SUCCESS)
                return rc;
        int k = visible_uuids(uuids, GS_VGPU_MAX_DEVICES);
        if ((int)index >= k)
                return NVML_ERROR_INVALID_ARGUMENT;
        return NREAL(nvmlDeviceGetHandleByUUID, uuids[index], device);
}

GS_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device)
{
        return nvmlDeviceGetHandleByIndex_v2(index, device);
}

/* The other lookups: a GPU outside the slice is not found, as NVML answers for a UUID or bus id
 * it does not have; the handle is written only for the slice's devices. */
static nvmlReturn_t slice_handle(nvmlReturn_t rc, const nvmlDevice_t *found, nvmlDevice_t *device)
{
        if (rc != NVML_SUCCESS)
                return rc;
        if (hiding() && visible_of_handle(*found) < 0)
                return NVML_ERROR_NOT_FOUND;
        *device = *found;
        return rc;
}

GS_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
        nvmlDevice_t h = NULL;
        if (device == NULL)
                return NREAL(nvmlDeviceGetHandleByUUID, uuid, device);
        nvmlReturn_t rc = NREAL(nvmlDeviceGetHandleByUUID, uuid, &h);
        return slice_handle(rc, &h, device);
}

GS_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device)
{
        nvmlDevice_t h = NULL;
        if (device == NULL)
                return NREAL(nvmlDeviceGetHandleByPciBusId_v2, pciBusId, device);
        nvmlReturn_t rc = NREAL(nvmlDeviceGetHandleByPciBusId_v2, pciBusId, &h);
        return slice_handle(rc, &h, device);
}

GS_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *pciBusId, nvmlDevice_t *device)
{
        nvmlDevice_t h = NULL;
        if (device == NULL)
                return NREAL(nvmlDeviceGetHandleByPciBusId, pciBusId, device);
        nvmlReturn_t rc = NREAL(nvmlDeviceGetHandleByPciBusId, pciBusId, &h);
        return slice_handle(rc, &h, device);
}

/* A device's index is its place among the slice's devices (as nvmlDeviceGetHandleByIndex counts). */
GS_EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index)
{
        if (!hiding() || index == NULL)
                return NREAL(nvmlDeviceGetIndex, device, index);
        unsigned real = 0;
        nvmlReturn_t rc = NREAL(nvmlDeviceGetIndex, device, &real);
        if (rc != NVML_SUCCESS)
                return rc;
        int vis = visible_of_handle(device);
        if (vis < 0)
                return NVML_ERROR_INVALID_ARGUMENT; /* (the physical index is never written) */
        *index = (unsigned)vis;
        return rc;
}

/* total = quota, used = the slice's usage (clamped), free = total - used. */
static void view(nvmlDevice_t device, unsigned long long *total, unsigned long long *used, unsigned long long *free,
                 unsigned long long *reserved)
{
        int vis = visible_of_handle(device);
        uint64_t limit = vis >= 0 ? gs_vgpu_limit(vis) : 0;
        if (limit == 0)
                return;
        uint64_t t = limit < *total ? limit : *total;
        /* the slice has no driver-reserved part of its own: v2's reserved is 0 */
        uint64_t u = gs_vgpu_usage(vis);
        if (reserved != NULL)
                *reserved = 0;
        if (u > t)
                u = t;
        *total = t;
        *used = u;
        *free = t - u;
}

GS_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
        nvmlReturn_t rc = NREAL(nvmlDeviceGetMemoryInfo, device, memory);
        if (rc == NVML_SUCCESS && memory != NULL)
                view(device, &memory->total, &memory->used, &memory->free, NULL);
        return rc;
}

GS_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
        nvmlReturn_t rc = NREAL(nvmlDeviceGetMemoryInfo_v2, device, memory);
        if (rc == NVML_SUCCESS && memory != NULL)
                view(device, &memory->total, &memory->used, &memory->free, &memory->reserved);
        return rc;
}

/* A compute-limited slice sees its own utilization: its busy time as a percentage of what its
 * share allows (limiter.c); the rest of the GPU's load is not its to see. */
GS_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization)
{
        nvmlReturn_t rc = NREAL(nvmlDeviceGetUtilizationRates, device, utilization);
        unsigned pct;
        if (rc == NVML_SUCCESS && utilization != NULL && gs_limiter_enabled &&
            gs_limiter_view(visible_of_handle(device), &pct) == 0)
                utilization->gpu = pct;
        return rc;
}

GS_EXPORT nvmlReturn_t nvmlDeviceGetHandleBySerial(const char *serial, nvmlDevice_t *device)
{
        nvmlDevice_t h = NULL;
        if (device == NULL)
                return NREAL(nvmlDeviceGetHandleBySerial, serial, device);
        return slice_handle(NREAL(nvmlDeviceGetHandleBySerial, serial, &h), &h, device);
}

/* ---- lists of GPUs: only the slice's, with NVML's count contract (count 0: how many) -------- */

static nvmlReturn_t filtered(nvmlReturn_t rc, const nvmlDevice_t *all, unsigned n, unsigned *count,
                             nvmlDevice_t *out)
{
        if (rc != NVML_SUCCESS)
                return rc;
        unsigned k = 0;
        for (unsigned i = 0; i < n; i++)
                if (visible_of_handle(all[i]) >= 0) {
                        if (out != NULL && k < *count)
                                out[k] = all[i];
                        k++;
                }
        if (*count == 0 || out == NULL) {
                *count = k;
                return NVML_SUCCESS;
        }
        if (k > *count) {
                *count = k;
                return NVML_ERROR_INSUFFICIENT_SIZE;
        }
        *count = k;
        return NVML_SUCCESS;
}

GS_EXPORT nvmlReturn_t nvmlDeviceGetTopologyNearestGpus(nvmlDevice_t device, nvmlGpuTopologyLevel_t level,
                                                        unsigned int *count, nvmlDevice_t *deviceArray)
{
        if (!hiding() || count == NULL)
                return NREAL(nvmlDeviceGetTopologyNearestGpus, device, level, count, deviceArray);
        if (visible_of_handle(device) < 0)
                return NVML_ERROR_INVALID_ARGUMENT;
        nvmlDevice_t all[GS_VGPU_MAX_DEVICES];
        unsigned n = GS_VGPU_MAX_DEVICES;
        nvmlReturn_t rc = NREAL(nvmlDeviceGetTopologyNearestGpus, device, level, &n, all);
        return filtered(rc, all, n < GS_VGPU_MAX_DEVICES ? n : GS_VGPU_MAX_DEVICES, count, deviceArray);
}

GS_EXPORT nvmlReturn_t nvmlSystemGetTopologyGpuSet(unsigned int cpuNumber, unsigned int *count,
                                                   nvmlDevice_t *deviceArray)
{
        if (!hiding() || count == NULL)
                return NREAL(nvmlSystemGetTopologyGpuSet, cpuNumber, count, deviceArray);
        nvmlDevice_t all[GS_VGPU_MAX_DEVICES];
        unsigned n = GS_VGPU_MAX_DEVICES;
        nvmlReturn_t rc = NREAL(nvmlSystemGetTopologyGpuSet, cpuNumber, &n, all);
        return filtered(rc, all, n < GS_VGPU_MAX_DEVICES ? n : GS_VGPU_MAX_DEVICES, count, deviceArray);
}

GS_EXPORT nvmlReturn_t nvmlUnitGetDevices(nvmlUnit_t unit, unsigned int *deviceCount, nvmlDevice_t *devices)
{
        if (!hiding() || deviceCount == NULL)
                return NREAL(nvmlUnitGetDevices, unit, deviceCount, devices);
        nvmlDevice_t all[GS_VGPU_MAX_DEVICES];
        unsigned n = GS_VGPU_MAX_DEVICES;
        nvmlReturn_t rc = NREAL(nvmlUnitGetDevices, unit, &n, all);
        return filtered(rc, all, n < GS_VGPU_MAX_DEVICES ? n : GS_VGPU_MAX_DEVICES, deviceCount, devices);
}

/* ---- pairs of GPUs: both the slice's ------------------------------------------------------- */

static bool outside(nvmlDevice_t a, nvmlDevice_t b)
{
        return hiding() && (visible_of_handle(a) < 0 || visible_of_handle(b) < 0);
}

GS_EXPORT nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1, nvmlDevice_t device2,
                                                           nvmlGpuTopologyLevel_t *pathInfo)
{
        if (outside(device1, device2))
                return NVML_ERROR_INVALID_ARGUMENT;
        return NREAL(nvmlDeviceGetTopologyCommonAncestor, device1, device2, pathInfo);
}

GS_EXPORT nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t device1, nvmlDevice_t device2,
                                              nvmlGpuP2PCapsIndex_t p2pIndex, nvmlGpuP2PStatus_t *p2pStatus)
{
        if (outside(device1, device2))
                return NVML_ERROR_INVALID_ARGUMENT;
        return NREAL(nvmlDeviceGetP2PStatus, device1, device2, p2pIndex, p2pStatus);
}

GS_EXPORT nvmlReturn_t nvmlDeviceOnSameBoard(nvmlDevice_t device1, nvmlDevice_t device2, int *onSameBoard)
{
        if (outside(device1, device2))
                return NVML_ERROR_INVALID_ARGUMENT;
        return NREAL(nvmlDeviceOnSameBoard, device1, device2, onSameBoard);
}

/* ---- MIG devices: one of the slice's, or one of a slice GPU; a parent only of the slice's ---- */

GS_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                           nvmlDevice_t *migDevice)
{
        nvmlDevice_t h = NULL;
        if (!hiding() || migDevice == NULL)
                return NREAL(nvmlDeviceGetMigDeviceHandleByIndex, device, index, migDevice);
        nvmlReturn_t rc = NREAL(nvmlDeviceGetMigDeviceHandleByIndex, device, index, &h);
        if (rc != NVML_SUCCESS)
                return rc;
        if (visible_of_handle(h) < 0 && visible_of_handle(device) < 0)
                return NVML_ERROR_NOT_FOUND;
        *migDevice = h;
        return rc;
}

GS_EXPORT nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice, nvmlDevice_t *device)
{
        nvmlDevice_t h = NULL;
        if (device == NULL)
                return NREAL(nvmlDeviceGetDeviceHandleFromMigDeviceHandle, migDevice, device);
        return slice_handle(NREAL(nvmlDeviceGetDeviceHandleFromMigDeviceHandle, migDevice, &h), &h, device);
}
