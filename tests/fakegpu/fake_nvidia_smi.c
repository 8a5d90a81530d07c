/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stand-in for nvidia-smi in a fake driver root. dlopen()s libnvidia-ml.so.1 (the fake one
 * or, equally, the real one) and prints a subset of the real tool's output:
 *   nvidia-smi -L     GPU and MIG device list
 *   nvidia-smi -q     Driver/CUDA version and per-GPU details (a subset of the real keys)
 *   nvidia-smi        a short summary
 * Exit status: 0, 9 when NVML cannot initialise (as the real tool), 12 when the library is
 * missing, 2 for a usage error.
 */
#define GS_NVML_NO_PROTOTYPES
#include "abi/nvml.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct gs_nvml_fns nv;

static int load(void)
{
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);

    if (h == NULL) {
        fprintf(stderr, "NVIDIA-SMI couldn't find libnvidia-ml.so library in your system. Please make sure that "
                        "the NVIDIA Display Driver is properly installed and present in your system.\n"
                        "Please also try adding directory that contains libnvidia-ml.so to your system PATH.\n");
        return -1;
    }
#define X(name, ret, params) *(void **)&nv.name = dlsym(h, #name);
    GS_NVML_FUNCTIONS(X)
#undef X
    if (nv.nvmlInit_v2 == NULL || nv.nvmlDeviceGetCount_v2 == NULL || nv.nvmlDeviceGetHandleByIndex_v2 == NULL ||
        nv.nvmlDeviceGetName == NULL || nv.nvmlDeviceGetUUID == NULL || nv.nvmlErrorString == NULL) {
        fprintf(stderr, "NVIDIA-SMI: libnvidia-ml.so.1 lacks required entry points\n");
        return -1;
    }
    return 0;
}

static void field(int indent, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Real nvidia-smi -q: key (with its indentation) padded to 42 columns, then ": value". */
static void field(int indent, const char *key, const char *fmt, ...)
{
    va_list ap;

    printf("%*s%-*s: ", indent, "", 42 - indent, key);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
}

static const char *smi_brand(nvmlBrandType_t b)
{
    switch (b) {
    case NVML_BRAND_QUADRO: return "Quadro";
    case NVML_BRAND_TESLA: return "Tesla";
    case NVML_BRAND_NVS: return "NVS";
    case NVML_BRAND_GRID: return "Grid";
    case NVML_BRAND_GEFORCE: return "GeForce";
    case NVML_BRAND_TITAN: return "Titan";
    case NVML_BRAND_NVIDIA_VAPPS: return "NVIDIA Virtual Applications";
    case NVML_BRAND_NVIDIA_VPC: return "NVIDIA Virtual PC";
    case NVML_BRAND_NVIDIA_VCS: return "NVIDIA Virtual Compute Server";
    case NVML_BRAND_NVIDIA_VWS: return "NVIDIA RTX Virtual Workstation";
    case NVML_BRAND_NVIDIA_CLOUD_GAMING: return "NVIDIA Cloud Gaming";
    case NVML_BRAND_QUADRO_RTX: return "Quadro RTX";
    case NVML_BRAND_NVIDIA_RTX: return "NVIDIA RTX";
    case NVML_BRAND_NVIDIA: return "NVIDIA";
    case NVML_BRAND_GEFORCE_RTX: return "GeForce RTX";
    case NVML_BRAND_TITAN_RTX: return "Titan RTX";
    default: return "Unknown";
    }
}

/* "NVIDIA A100-SXM4-80GB MIG 1g.10gb" -> "1g.10gb" */
static const char *mig_profile(const char *name)
{
    const char *p = strstr(name, "MIG ");

    return p != NULL ? p + 4 : name;
}

static int list_devices(unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        nvmlDevice_t dev;
        char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = "", uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = "";
        unsigned cur = 0, pend = 0, max = 0;

        if (nv.nvmlDeviceGetHandleByIndex_v2(i, &dev) != NVML_SUCCESS)
            continue;
        nv.nvmlDeviceGetName(dev, name, sizeof(name));
        nv.nvmlDeviceGetUUID(dev, uuid, sizeof(uuid));
        printf("GPU %u: %s (UUID: %s)\n", i, name, uuid);
        if (nv.nvmlDeviceGetMigMode == NULL || nv.nvmlDeviceGetMigMode(dev, &cur, &pend) != NVML_SUCCESS ||
            cur != NVML_DEVICE_MIG_ENABLE || nv.nvmlDeviceGetMaxMigDeviceCount == NULL ||
            nv.nvmlDeviceGetMaxMigDeviceCount(dev, &max) != NVML_SUCCESS)
            continue;
        for (unsigned j = 0; j < max; j++) {
            nvmlDevice_t mig;
            char mname[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = "", muuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = "";

            if (nv.nvmlDeviceGetMigDeviceHandleByIndex(dev, j, &mig) != NVML_SUCCESS)
                continue;
            nv.nvmlDeviceGetName(mig, mname, sizeof(mname));
            nv.nvmlDeviceGetUUID(mig, muuid, sizeof(muuid));
            printf("  MIG %-12sDevice %2u: (UUID: %s)\n", mig_profile(mname), j, muuid);
        }
    }
    return 0;
}

static int query(unsigned n)
{
    char ver[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = "N/A", ts[64];
    int cuda = 0;
    time_t now = time(NULL);

    strftime(ts, sizeof(ts), "%a %b %e %H:%M:%S %Y", localtime(&now));
    if (nv.nvmlSystemGetDriverVersion != NULL)
        nv.nvmlSystemGetDriverVersion(ver, sizeof(ver));
    if (nv.nvmlSystemGetCudaDriverVersion_v2 != NULL)
        nv.nvmlSystemGetCudaDriverVersion_v2(&cuda);
    printf("\n==============NVSMI LOG==============\n\n");
    field(0, "Timestamp", "%s", ts);
    field(0, "Driver Version", "%s", ver);
    field(0, "CUDA Version", "%d.%d", NVML_CUDA_DRIVER_VERSION_MAJOR(cuda), NVML_CUDA_DRIVER_VERSION_MINOR(cuda));
    putchar('\n');
    field(0, "Attached GPUs", "%u", n);
    for (unsigned i = 0; i < n; i++) {
        nvmlDevice_t dev;
        char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = "", uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = "";
        nvmlPciInfo_t pci;
        nvmlBrandType_t brand = NVML_BRAND_UNKNOWN;
        nvmlMemory_v2_t mem = { .version = nvmlMemory_v2 };
        unsigned minor = 0, cur = 0, pend = 0;
        int have_mig;

        if (nv.nvmlDeviceGetHandleByIndex_v2(i, &dev) != NVML_SUCCESS)
            continue;
        memset(&pci, 0, sizeof(pci));
        nv.nvmlDeviceGetName(dev, name, sizeof(name));
        nv.nvmlDeviceGetUUID(dev, uuid, sizeof(uuid));
        if (nv.nvmlDeviceGetPciInfo_v3 != NULL)
            nv.nvmlDeviceGetPciInfo_v3(dev, &pci);
        if (nv.nvmlDeviceGetBrand != NULL)
            nv.nvmlDeviceGetBrand(dev, &brand);
        if (nv.nvmlDeviceGetMinorNumber != NULL)
            nv.nvmlDeviceGetMinorNumber(dev, &minor);
        have_mig = nv.nvmlDeviceGetMigMode != NULL && nv.nvmlDeviceGetMigMode(dev, &cur, &pend) == NVML_SUCCESS;
        printf("GPU %s\n", pci.busId);
        field(4, "Product Name", "%s", name);
        field(4, "Product Brand", "%s", smi_brand(brand));
        printf("    MIG Mode\n");
        field(8, "Current", "%s", !have_mig ? "N/A" : cur ? "Enabled" : "Disabled");
        field(8, "Pending", "%s", !have_mig ? "N/A" : pend ? "Enabled" : "Disabled");
        field(4, "GPU UUID", "%s", uuid);
        field(4, "Minor Number", "%u", minor);
        printf("    PCI\n");
        field(8, "Bus", "0x%02X", pci.bus);
        field(8, "Device", "0x%02X", pci.device);
        field(8, "Domain", "0x%04X", pci.domain);
        field(8, "Device Id", "0x%08X", pci.pciDeviceId);
        field(8, "Bus Id", "%s", pci.busId);
        field(8, "Sub System Id", "0x%08X", pci.pciSubSystemId);
        printf("    FB Memory Usage\n");
        if (nv.nvmlDeviceGetMemoryInfo_v2 != NULL && nv.nvmlDeviceGetMemoryInfo_v2(dev, &mem) == NVML_SUCCESS) {
            field(8, "Total", "%llu MiB", mem.total >> 20);
            field(8, "Reserved", "%llu MiB", mem.reserved >> 20);
            field(8, "Used", "%llu MiB", mem.used >> 20);
            field(8, "Free", "%llu MiB", mem.free >> 20);
        } else {
            field(8, "Total", "N/A");
        }
        putchar('\n');
    }
    return 0;
}

static int summary(unsigned n)
{
    char ver[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = "N/A";
    int cuda = 0;

    if (nv.nvmlSystemGetDriverVersion != NULL)
        nv.nvmlSystemGetDriverVersion(ver, sizeof(ver));
    if (nv.nvmlSystemGetCudaDriverVersion_v2 != NULL)
        nv.nvmlSystemGetCudaDriverVersion_v2(&cuda);
    printf("NVIDIA-SMI %s    Driver Version: %s    CUDA Version: %d.%d\n", ver, ver,
           NVML_CUDA_DRIVER_VERSION_MAJOR(cuda), NVML_CUDA_DRIVER_VERSION_MINOR(cuda));
    return list_devices(n);
}

int main(int argc, char **argv)
{
    enum { SUMMARY, LIST, QUERY } mode = SUMMARY;
    nvmlReturn_t rc;
    unsigned n = 0;
    int ret;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-L") == 0 || strcmp(argv[i], "--list-gpus") == 0) {
            mode = LIST;
        } else if (strcmp(argv[i], "-q") == 0 || strcmp(argv[i], "--query") == 0) {
            mode = QUERY;
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            printf("usage: nvidia-smi [-L | -q]   (fakegpu stand-in)\n");
            return 0;
        } else {
            fprintf(stderr, "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n");
            return 2;
        }
    }
    if (load() < 0)
        return 12;
    rc = nv.nvmlInit_v2();
    if (rc != NVML_SUCCESS) {
        if (rc == NVML_ERROR_DRIVER_NOT_LOADED)
            printf("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that "
                   "the latest NVIDIA driver is installed and running.\n\n");
        else
            printf("Failed to initialize NVML: %s\n", nv.nvmlErrorString(rc));
        return 9;
    }
    rc = nv.nvmlDeviceGetCount_v2(&n);
    if (rc != NVML_SUCCESS) {
        printf("Unable to determine the device count: %s\n", nv.nvmlErrorString(rc));
        nv.nvmlShutdown();
        return 9;
    }
    if (mode == LIST && n == 0) {
        printf("No devices found.\n");
        nv.nvmlShutdown();
        return 6;
    }
    ret = mode == LIST ? list_devices(n) : mode == QUERY ? query(n) : summary(n);
    nv.nvmlShutdown();
    return ret;
}
