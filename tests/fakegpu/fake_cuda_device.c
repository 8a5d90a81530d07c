/* SPDX-License-Identifier: Apache-2.0 */
/* Fake libcuda.so.1 (fake_cuda.h): devices: ordinals, names, UUIDs, total memory, attributes,
 * PCI bus ids. */
#include "fake_cuda.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    ENTER();
    if (device == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(ordinal))
        return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *count)
{
    ENTER();
    if (count == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *count = g_ndev;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    char buf[FG_STR + 48];
    const struct fg_gpu *g;

    ENTER();
    if (name == NULL || len <= 0)   /* len <= 0: the real driver corrupts memory */
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    g = &g_cfg.gpus[g_dev[dev].gpu];
    if (g_dev[dev].mig >= 0)
        snprintf(buf, sizeof(buf), "%s MIG %s", g->name, g->migs[g_dev[dev].mig].profile);
    else
        snprintf(buf, sizeof(buf), "%s", g->name);
    snprintf(name, (size_t)len, "%s", buf);   /* truncated, as the real driver does */
    return CUDA_SUCCESS;
}

/* "GPU-6b1fe2a6-3b64-d9c1-4a3e-5f0b2c7d8e91" -> 16 bytes. */
static void uuid_bytes(const char *s, CUuuid *out)
{
    unsigned n = 0;

    memset(out, 0, sizeof(*out));
    s += 4;
    for (; *s != '\0' && n < 32; s++) {
        int v;

        if (*s == '-')
            continue;
        if (!isxdigit((unsigned char)*s))
            break;
        v = isdigit((unsigned char)*s) ? *s - '0' : (tolower((unsigned char)*s) - 'a' + 10);
        out->bytes[n / 2] = (char)(out->bytes[n / 2] | (n % 2 == 0 ? v << 4 : v));
        n++;
    }
}

EXPORT CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    ENTER();
    if (uuid == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    /* The first version reports the parent GPU of a MIG device. */
    uuid_bytes(g_cfg.gpus[g_dev[dev].gpu].uuid, uuid);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    ENTER();
    if (uuid == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    uuid_bytes(dev_uuid_str(g_dev[dev].gpu, g_dev[dev].mig), uuid);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceTotalMem(unsigned int *bytes, CUdevice dev)
{
    ENTER();
    if (bytes == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    /* Clamped to 32 bits (driver 580.159.04 answers 0xFFFFFFFF on an H200). */
    *bytes = g_dev[dev].total > UINT_MAX ? UINT_MAX : (unsigned int)g_dev[dev].total;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    ENTER();
    if (bytes == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    *bytes = (size_t)g_dev[dev].total;
    return CUDA_SUCCESS;
}

/* The SMs this process's work can use on dev: the hardware's (dev_hw_sm_count), or an MPS
 * client's share of them. */
unsigned dev_sm_count(int dev)
{
    unsigned sms = dev_hw_sm_count(dev);

    if (g_mps_pct != 0 && g_dev[dev].mig < 0) {
        sms = sms * g_mps_pct / 100 / 2 * 2;
        if (sms < 2)
            sms = 2;
    }
    return sms;
}

unsigned dev_hw_sm_count(int dev)
{
    const struct fg_gpu *g = &g_cfg.gpus[g_dev[dev].gpu];
    unsigned sms = fg_gpu_sm_count(g);

    if (g_dev[dev].mig >= 0) {
        /* A MIG device gets the share of SMs its memory share suggests. */
        unsigned long long share = g->migs[g_dev[dev].mig].memory * 8 / g->memory;

        sms = (unsigned)((unsigned long long)sms * (share ? share : 1) / 8);
        if (sms == 0)
            sms = 1;
    }
    return sms;
}

/* The split rules of cuda.h's green-context guideline: 6.x and 7.x: at least 2 SMs, multiples
 * of 2; 8.x: at least 4, multiples of 2; 9.0 and later: at least 8, multiples of 8 (what
 * cuDeviceGetDevResource reports on the H100, driver 580.159.04: 132 SMs, 8, 8). */
void dev_sm_split_rules(int dev, unsigned *min_partition, unsigned *alignment)
{
    const struct fg_gpu *g = &g_cfg.gpus[g_dev[dev].gpu];

    if (g->cc_major >= 9) {
        *min_partition = 8;
        *alignment = 8;
    } else if (g->cc_major == 8) {
        *min_partition = 4;
        *alignment = 2;
    } else {
        *min_partition = 2;
        *alignment = 2;
    }
}

EXPORT CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    const struct fg_gpu *g;
    unsigned sms;
    int v;

    ENTER();
    if (pi == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    g = &g_cfg.gpus[g_dev[dev].gpu];
    sms = dev_sm_count(dev);
    switch ((int)attrib) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: v = 64; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: v = INT_MAX; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: v = 49152; break;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: v = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH: v = INT_MAX; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: v = 1980000; break;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: v = 512; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: v = (int)sms; break;
    case CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_INTEGRATED: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: v = (int)g->bus; break;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: v = (int)g->device; break;
    case CU_DEVICE_ATTRIBUTE_TCC_DRIVER: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: v = 2619000; break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: v = 5120; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: v = 50331648; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: v = 2048; break;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: v = 3; break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: v = (int)g->domain; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: v = g->cc_major; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: v = g->cc_minor; break;
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: v = 233472; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID: v = dev; break;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: v = 232448; break;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: v = 32; break;
    case CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: v = 1; break;
    default:
        /* Other valid attributes read as 0; values past the enum are invalid (real: INVALID_VALUE). */
        if ((int)attrib <= 0 || (int)attrib > 150)
            return CUDA_ERROR_INVALID_VALUE;
        v = 0;
        break;
    }
    *pi = v;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
    char buf[32];
    const struct fg_gpu *g;
    int n;

    ENTER();
    if (pciBusId == NULL || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    g = &g_cfg.gpus[g_dev[dev].gpu];
    n = snprintf(buf, sizeof(buf), "%04x:%02x:%02x.%x", g->domain & 0xffff, g->bus, g->device, g->function);
    if (n < 0 || n + 1 > len)   /* too short: INVALID_VALUE (seen with len 4) */
        return CUDA_ERROR_INVALID_VALUE;
    memcpy(pciBusId, buf, (size_t)n + 1);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetByPCIBusId(CUdevice *dev, const char *pciBusId)
{
    unsigned dom = 0, bus, d, fn;
    int n = 0;

    ENTER();
    if (dev == NULL || pciBusId == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!(sscanf(pciBusId, "%x:%x:%x.%x%n", &dom, &bus, &d, &fn, &n) == 4 && pciBusId[n] == '\0')) {
        dom = 0;
        n = 0;
        if (!(sscanf(pciBusId, "%x:%x.%x%n", &bus, &d, &fn, &n) == 3 && pciBusId[n] == '\0'))
            return CUDA_ERROR_INVALID_VALUE;
    }
    for (int i = 0; i < g_ndev; i++) {
        const struct fg_gpu *g = &g_cfg.gpus[g_dev[i].gpu];

        if (g->domain == dom && g->bus == bus && g->device == d && g->function == fn) {
            *dev = i;
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_INVALID_DEVICE;
}

/* Peers: two different whole GPUs can reach each other (as NVLink-connected A100s/H100s); a
 * device is not its own peer (0, as the real driver answers); an ordinal the process does not
 * have is CUDA_ERROR_INVALID_DEVICE. */
EXPORT CUresult cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev)
{
    ENTER();
    if (canAccessPeer == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev) || !valid_dev(peerDev))
        return CUDA_ERROR_INVALID_DEVICE;
    *canAccessPeer = dev != peerDev && g_dev[dev].mig < 0 && g_dev[peerDev].mig < 0;
    return CUDA_SUCCESS;
}

/* The same pair's attributes; the same device twice is CUDA_ERROR_INVALID_DEVICE (real driver). */
EXPORT CUresult cuDeviceGetP2PAttribute(int *value, CUdevice_P2PAttribute attrib, CUdevice srcDevice,
                                        CUdevice dstDevice)
{
    int peer = 0;

    ENTER();
    if (value == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(srcDevice) || !valid_dev(dstDevice) || srcDevice == dstDevice)
        return CUDA_ERROR_INVALID_DEVICE;
    peer = g_dev[srcDevice].mig < 0 && g_dev[dstDevice].mig < 0;   /* (not through the exported name) */
    switch (attrib) {
    case CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK:
        *value = 0;
        return CUDA_SUCCESS;
    case CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED:
    case CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED:
    case CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED:
        *value = peer;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}
