/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fake libnvidia-ml.so.1: a simulated NVML driven by a text config (README.md).
 *
 * Behaves like the real library where gpuslice can observe it: reference-counted init,
 * NVML_ERROR_UNINITIALIZED before init / after the last shutdown, INVALID_ARGUMENT for NULL
 * out-pointers, bad indexes and unknown handles, INSUFFICIENT_SIZE for short buffers,
 * NOT_FOUND for unknown UUIDs / bus ids, stable handles in static storage, MIG handles
 * distinct from GPU handles. Only the entry points in src/abi/nvml.h are exported
 * (the library is built with -fvisibility=hidden).
 *
 * Memory used and the running processes also include what processes using the fake
 * libcuda.so.1 hold, read from the shared state file (fakegpu_state.h) at each query.
 *
 * Events (XID errors, a GPU that falls off the bus) come from the events file, which a test
 * appends to while NVML runs (README.md, "Events"): an event set delivers the lines written after
 * it was created; a lost GPU answers GPU_IS_LOST from then on, in every process, until a "reset"
 * line brings it back (no event: the real driver says nothing when a GPU is well again); a
 * "remap-pending" line leaves a remapped row waiting for that reset.
 */
#include "abi/nvml.h"
#include "fakegpu_config.h"
#include "fakegpu_state.h"

#include <ctype.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* ---------------------------------------------------------------------------------------- */
/* State                                                                                     */
/* ---------------------------------------------------------------------------------------- */

struct nvmlDevice_st {
    unsigned gpu;   /* GPU index */
    int mig;        /* index into the GPU's migs[], or -1 for the GPU itself */
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned g_refcount;                 /* accessed with __atomic builtins */
static struct fg_config g_cfg;              /* valid while g_refcount > 0 */
static struct nvmlDevice_st g_gpu_handles[FG_MAX_GPUS];
static struct nvmlDevice_st g_mig_handles[FG_MAX_GPUS][FG_MAX_MIG];

static const struct {
    nvmlReturn_t code;
    const char *name;   /* for fault injection: "driver_not_loaded" */
    const char *text;   /* nvmlErrorString */
} g_errors[] = {
    { NVML_SUCCESS, "success", "Success" },
    { NVML_ERROR_UNINITIALIZED, "uninitialized", "Uninitialized" },
    { NVML_ERROR_INVALID_ARGUMENT, "invalid_argument", "Invalid Argument" },
    { NVML_ERROR_NOT_SUPPORTED, "not_supported", "Not Supported" },
    { NVML_ERROR_NO_PERMISSION, "no_permission", "Insufficient Permissions" },
    { NVML_ERROR_ALREADY_INITIALIZED, "already_initialized", "Already Initialized" },
    { NVML_ERROR_NOT_FOUND, "not_found", "Not Found" },
    { NVML_ERROR_INSUFFICIENT_SIZE, "insufficient_size", "Insufficient Size" },
    { NVML_ERROR_INSUFFICIENT_POWER, "insufficient_power", "Insufficient External Power" },
    { NVML_ERROR_DRIVER_NOT_LOADED, "driver_not_loaded", "Driver Not Loaded" },
    { NVML_ERROR_TIMEOUT, "timeout", "Timeout" },
    { NVML_ERROR_IRQ_ISSUE, "irq_issue", "Interrupt request issue" },
    { NVML_ERROR_LIBRARY_NOT_FOUND, "library_not_found", "NVML Shared Library Not Found" },
    { NVML_ERROR_FUNCTION_NOT_FOUND, "function_not_found", "Function Not Found" },
    { NVML_ERROR_CORRUPTED_INFOROM, "corrupted_inforom", "Corrupted infoROM" },
    { NVML_ERROR_GPU_IS_LOST, "gpu_is_lost", "GPU is lost" },
    { NVML_ERROR_RESET_REQUIRED, "reset_required", "GPU requires restart" },
    { NVML_ERROR_OPERATING_SYSTEM, "operating_system", "The operating system has blocked the request." },
    { NVML_ERROR_LIB_RM_VERSION_MISMATCH, "lib_rm_version_mismatch", "RM has detected an NVML/RM version mismatch." },
    { NVML_ERROR_IN_USE, "in_use", "In use by another client" },
    { NVML_ERROR_MEMORY, "memory", "Insufficient Memory" },
    { NVML_ERROR_NO_DATA, "no_data", "No data" },
    { NVML_ERROR_VGPU_ECC_NOT_SUPPORTED, "vgpu_ecc_not_supported", "vGPU operation not supported with ECC enabled" },
    { NVML_ERROR_INSUFFICIENT_RESOURCES, "insufficient_resources", "Insufficient resources" },
    { NVML_ERROR_FREQ_NOT_SUPPORTED, "freq_not_supported", "Frequency not supported" },
    { NVML_ERROR_ARGUMENT_VERSION_MISMATCH, "argument_version_mismatch", "Argument version mismatch" },
    { NVML_ERROR_DEPRECATED, "deprecated", "Deprecated" },
    { NVML_ERROR_NOT_READY, "not_ready", "Not ready" },
    { NVML_ERROR_GPU_NOT_FOUND, "gpu_not_found", "GPU not found" },
    { NVML_ERROR_INVALID_STATE, "invalid_state", "Invalid state" },
    { NVML_ERROR_RESET_TYPE_NOT_SUPPORTED, "reset_type_not_supported", "Reset type not supported" },
    { NVML_ERROR_UNKNOWN, "unknown", "Unknown Error" },
};

/* "driver_not_loaded", "NVML_ERROR_DRIVER_NOT_LOADED", "9" -> code; UNKNOWN if unrecognised. */
static nvmlReturn_t error_from_name(const char *s)
{
    char *end;
    long v;

    if (strncasecmp(s, "NVML_ERROR_", 11) == 0)
        s += 11;
    for (size_t i = 0; i < sizeof(g_errors) / sizeof(g_errors[0]); i++)
        if (strcasecmp(s, g_errors[i].name) == 0)
            return g_errors[i].code;
    v = strtol(s, &end, 0);
    if (end != s && *end == '\0' && v >= 0 && v <= 999)
        return (nvmlReturn_t)v;
    return NVML_ERROR_UNKNOWN;
}

/* Fault injection for func. Returns SUCCESS to proceed, or the injected error. */
static nvmlReturn_t fault(const char *func)
{
    const struct fg_fault *f = fg_config_fault(&g_cfg, func);

    if (f == NULL)
        return NVML_SUCCESS;
    fg_fault_act(f);
    if (f->action == FG_FAULT_ERROR)
        return error_from_name(f->arg);
    return NVML_SUCCESS;
}

static int initialized(void)
{
    return __atomic_load_n(&g_refcount, __ATOMIC_ACQUIRE) > 0;
}

/* Every entry point but init and nvmlErrorString starts with this. */
#define ENTER()                                                   \
    do {                                                          \
        nvmlReturn_t enter_rc_;                                   \
        if (!initialized())                                       \
            return NVML_ERROR_UNINITIALIZED;                      \
        enter_rc_ = fault(__func__);                              \
        if (enter_rc_ != NVML_SUCCESS)                            \
            return enter_rc_;                                     \
    } while (0)

/* Resolve a handle. Returns 0 with *gpu and *mig (NULL for a GPU handle), or -1. */
static int resolve(nvmlDevice_t dev, const struct fg_gpu **gpu, const struct fg_mig **mig)
{
    uintptr_t p = (uintptr_t)dev;
    uintptr_t gbase = (uintptr_t)&g_gpu_handles[0];
    uintptr_t mbase = (uintptr_t)&g_mig_handles[0][0];
    size_t sz = sizeof(struct nvmlDevice_st);

    if (dev == NULL)
        return -1;
    if (p >= gbase && p < gbase + sizeof(g_gpu_handles) && (p - gbase) % sz == 0) {
        size_t i = (p - gbase) / sz;

        if (i >= g_cfg.ngpus)
            return -1;
        *gpu = &g_cfg.gpus[i];
        *mig = NULL;
        return 0;
    }
    if (p >= mbase && p < mbase + sizeof(g_mig_handles) && (p - mbase) % sz == 0) {
        size_t i = (p - mbase) / sz;
        size_t gi = i / FG_MAX_MIG, mi = i % FG_MAX_MIG;

        if (gi >= g_cfg.ngpus || mi >= g_cfg.gpus[gi].nmig || g_cfg.gpus[gi].mig != FG_MIG_ON)
            return -1;
        *gpu = &g_cfg.gpus[gi];
        *mig = &g_cfg.gpus[gi].migs[mi];
        return 0;
    }
    return -1;
}

static unsigned gpu_index(const struct fg_gpu *g)
{
    return (unsigned)(g - g_cfg.gpus);
}

static unsigned mig_slot(const struct fg_gpu *g, const struct fg_mig *m)
{
    return (unsigned)(m - g->migs);
}

static nvmlReturn_t copy_out(char *buf, unsigned int length, const char *s)
{
    size_t n = strlen(s) + 1;

    if (buf == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (length < n)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(buf, s, n);
    return NVML_SUCCESS;
}

/* ---------------------------------------------------------------------------------------- */
/* The events file: "xid <UUID> <code>", "lost", "reset", "remap-pending <GPU-UUID>" lines     */
/* ---------------------------------------------------------------------------------------- */

#define EVENTS_ENV "FAKEGPU_EVENTS"
#define EVENTS_DEFAULT_PATH "/etc/fakegpu/events"
#define EVENTS_MAX 4096      /* lines looked at */
#define EVENTS_FILE_MAX (1 << 20)

struct fg_event {
    int lost;                /* 1: "lost", 0: "xid" */
    unsigned gpu;            /* GPU index */
    int mig;                 /* MIG slot, or -1 */
    unsigned long long xid;
};

static struct fg_event g_events[EVENTS_MAX];
static unsigned g_nevents;                  /* events parsed so far (under g_lock) */
static off_t g_events_size = -1;            /* file size when last read */
static int g_lost[FG_MAX_GPUS];
static unsigned g_unc_rows[FG_MAX_GPUS];    /* rows remapped for uncorrectable errors */
static int g_remap_pending[FG_MAX_GPUS];    /* ... the last of them waiting for a reset */

static const char *events_path(void)
{
    const char *p = getenv(EVENTS_ENV);
    return p != NULL && *p != '\0' ? p : EVENTS_DEFAULT_PATH;
}

/* The GPU (and MIG slot) of a UUID, or -1. */
static int find_uuid(const char *uuid, int *mig)
{
    for (unsigned i = 0; i < g_cfg.ngpus; i++) {
        const struct fg_gpu *g = &g_cfg.gpus[i];
        *mig = -1;
        if (strcmp(g->uuid, uuid) == 0)
            return (int)i;
        for (unsigned j = 0; g->mig == FG_MIG_ON && j < g->nmig; j++)
            if (strcmp(g->migs[j].uuid, uuid) == 0) {
                *mig = (int)j;
                return (int)i;
            }
    }
    return -1;
}

static void parse_event_line(const char *line)
{
    char kind[16], uuid[FG_STR];
    unsigned long long xid = 0;
    int n = sscanf(line, "%15s %95s %llu", kind, uuid, &xid), mig, gpu;

    if (n < 2 || g_nevents >= EVENTS_MAX || (gpu = find_uuid(uuid, &mig)) < 0)
        return; /* comments, blank or unknown lines, other machines' UUIDs */
    if (strcmp(kind, "lost") == 0 && mig < 0) {
        g_lost[gpu] = 1;
        g_events[g_nevents++] = (struct fg_event){1, (unsigned)gpu, -1, 79};
    } else if (strcmp(kind, "reset") == 0 && mig < 0) {
        g_lost[gpu] = 0; /* reset, or repaired: it answers again (lookups and calls alike) */
        g_remap_pending[gpu] = 0; /* and its remapped rows are in use */
    } else if (strcmp(kind, "remap-pending") == 0 && mig < 0) {
        g_unc_rows[gpu]++;
        g_remap_pending[gpu] = 1;
    } else if (strcmp(kind, "xid") == 0 && n == 3) {
        g_events[g_nevents++] = (struct fg_event){0, (unsigned)gpu, mig, xid};
    }
}

/* Read the events file again when its size changed (it only grows). Caller holds g_lock. */
static void refresh_events(void)
{
    struct stat st;
    int fd;
    char *buf;
    ssize_t n;

    if (stat(events_path(), &st) < 0 || st.st_size == g_events_size || st.st_size > EVENTS_FILE_MAX)
        return;
    fd = open(events_path(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    buf = malloc((size_t)st.st_size + 1);
    n = buf != NULL ? read(fd, buf, (size_t)st.st_size) : -1;
    close(fd);
    if (n < 0) {
        free(buf);
        return;
    }
    buf[n] = '\0';
    g_events_size = n;
    g_nevents = 0;
    memset(g_lost, 0, sizeof(g_lost));
    memset(g_unc_rows, 0, sizeof(g_unc_rows));
    memset(g_remap_pending, 0, sizeof(g_remap_pending));
    for (char *line = buf, *nl; line != NULL && *line != '\0'; line = nl) {
        nl = strchr(line, '\n');
        if (nl != NULL)
            *nl++ = '\0';
        parse_event_line(line);
    }
    free(buf);
}

static int gpu_lost(unsigned gpu)
{
    int lost;

    pthread_mutex_lock(&g_lock);
    refresh_events();
    lost = gpu < FG_MAX_GPUS && g_lost[gpu];
    pthread_mutex_unlock(&g_lock);
    return lost;
}

/* ---------------------------------------------------------------------------------------- */
/* Init / shutdown                                                                           */
/* ---------------------------------------------------------------------------------------- */

static void setup_handles(void)
{
    for (unsigned i = 0; i < FG_MAX_GPUS; i++) {
        g_gpu_handles[i].gpu = i;
        g_gpu_handles[i].mig = -1;
        for (unsigned j = 0; j < FG_MAX_MIG; j++) {
            g_mig_handles[i][j].gpu = i;
            g_mig_handles[i][j].mig = (int)j;
        }
    }
}

static nvmlReturn_t do_init(const char *entry)
{
    char err[512];
    const char *path;
    nvmlReturn_t rc;

    pthread_mutex_lock(&g_lock);
    if (g_refcount > 0) {
        __atomic_add_fetch(&g_refcount, 1, __ATOMIC_ACQ_REL);
        pthread_mutex_unlock(&g_lock);
        return NVML_SUCCESS;
    }
    path = fg_config_path();
    if (fg_config_load(path, &g_cfg, err, sizeof(err)) < 0) {
        fprintf(stderr, "fakegpu: nvml: %s (simulating a host without a loaded driver)\n", err);
        memset(&g_cfg, 0, sizeof(g_cfg));
        pthread_mutex_unlock(&g_lock);
        return NVML_ERROR_DRIVER_NOT_LOADED;
    }
    rc = fault("init");
    if (rc == NVML_SUCCESS)
        rc = fault(entry);
    if (rc != NVML_SUCCESS) {
        memset(&g_cfg, 0, sizeof(g_cfg));
        pthread_mutex_unlock(&g_lock);
        return rc;
    }
    setup_handles();
    g_events_size = -1;
    refresh_events();
    __atomic_store_n(&g_refcount, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&g_lock);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlInit_v2(void)
{
    return do_init("nvmlInit_v2");
}

EXPORT nvmlReturn_t nvmlInit(void)
{
    return do_init("nvmlInit");
}

EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
    (void)flags; /* NO_GPUS / NO_ATTACH change nothing for the simulation */
    return do_init("nvmlInitWithFlags");
}

EXPORT nvmlReturn_t nvmlShutdown(void)
{
    nvmlReturn_t rc;

    pthread_mutex_lock(&g_lock);
    if (g_refcount == 0) {
        pthread_mutex_unlock(&g_lock);
        return NVML_ERROR_UNINITIALIZED;
    }
    rc = fault("nvmlShutdown");
    if (rc == NVML_SUCCESS && __atomic_sub_fetch(&g_refcount, 1, __ATOMIC_ACQ_REL) == 0)
        memset(&g_cfg, 0, sizeof(g_cfg));
    pthread_mutex_unlock(&g_lock);
    return rc;
}

EXPORT const char *nvmlErrorString(nvmlReturn_t result)
{
    for (size_t i = 0; i < sizeof(g_errors) / sizeof(g_errors[0]); i++)
        if (g_errors[i].code == result)
            return g_errors[i].text;
    return "Unknown Error";
}

/* ---------------------------------------------------------------------------------------- */
/* System queries                                                                            */
/* ---------------------------------------------------------------------------------------- */

EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
    ENTER();
    return copy_out(version, length, g_cfg.driver);
}

EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length)
{
    ENTER();
    return copy_out(version, length, g_cfg.nvml_version);
}

EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion)
{
    ENTER();
    if (cudaDriverVersion == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *cudaDriverVersion = g_cfg.cuda;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion)
{
    ENTER();
    if (cudaDriverVersion == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *cudaDriverVersion = g_cfg.cuda;
    return NVML_SUCCESS;
}

/* ---------------------------------------------------------------------------------------- */
/* Enumeration                                                                               */
/* ---------------------------------------------------------------------------------------- */

static nvmlReturn_t get_count(unsigned int *deviceCount)
{
    if (deviceCount == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *deviceCount = g_cfg.ngpus;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
    ENTER();
    return get_count(deviceCount);
}

EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount)
{
    ENTER();
    return get_count(deviceCount);
}

static nvmlReturn_t by_index(unsigned int index, nvmlDevice_t *device)
{
    if (device == NULL || index >= g_cfg.ngpus)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (gpu_lost(index))
        return NVML_ERROR_GPU_IS_LOST;
    *device = &g_gpu_handles[index];
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    ENTER();
    return by_index(index, device);
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device)
{
    ENTER();
    return by_index(index, device);
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
    ENTER();
    if (uuid == NULL || device == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned i = 0; i < g_cfg.ngpus; i++) {
        const struct fg_gpu *g = &g_cfg.gpus[i];

        if (strcmp(g->uuid, uuid) == 0) {
            if (gpu_lost(i))
                return NVML_ERROR_GPU_IS_LOST;
            *device = &g_gpu_handles[i];
            return NVML_SUCCESS;
        }
        if (g->mig != FG_MIG_ON)
            continue;
        for (unsigned j = 0; j < g->nmig; j++) {
            char legacy[FG_STR + 32];

            /* R470+ UUID, and the legacy form MIG-GPU-<uuid>/<gi>/<ci>. */
            snprintf(legacy, sizeof(legacy), "MIG-%s/%u/%u", g->uuid, g->migs[j].gi, g->migs[j].ci);
            if (strcmp(g->migs[j].uuid, uuid) == 0 || strcmp(legacy, uuid) == 0) {
                *device = &g_mig_handles[i][j];
                return NVML_SUCCESS;
            }
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

static nvmlReturn_t by_busid(const char *busid, nvmlDevice_t *device)
{
    unsigned dom = 0, bus, dev, fn;
    int n = 0;

    if (busid == NULL || device == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    /* domain:bus:device.function, or bus:device.function with domain 0. */
    if (!(sscanf(busid, "%x:%x:%x.%x%n", &dom, &bus, &dev, &fn, &n) == 4 && busid[n] == '\0')) {
        n = 0;
        dom = 0;
        if (!(sscanf(busid, "%x:%x.%x%n", &bus, &dev, &fn, &n) == 3 && busid[n] == '\0'))
            return NVML_ERROR_INVALID_ARGUMENT;
    }
    for (unsigned i = 0; i < g_cfg.ngpus; i++) {
        const struct fg_gpu *g = &g_cfg.gpus[i];

        if (g->domain == dom && g->bus == bus && g->device == dev && g->function == fn) {
            if (gpu_lost(i))
                return NVML_ERROR_GPU_IS_LOST;
            *device = &g_gpu_handles[i];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device)
{
    ENTER();
    return by_busid(pciBusId, device);
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *pciBusId, nvmlDevice_t *device)
{
    ENTER();
    return by_busid(pciBusId, device);
}

/* ---------------------------------------------------------------------------------------- */
/* Device queries                                                                            */
/* ---------------------------------------------------------------------------------------- */

/* Resolve device into g/m or return INVALID_ARGUMENT; a lost GPU (and its MIG devices) answers
 * GPU_IS_LOST. */
#define RESOLVE(dev, g, m)                                        \
    const struct fg_gpu *g;                                       \
    const struct fg_mig *m;                                       \
    if (resolve((dev), &g, &m) < 0)                               \
        return NVML_ERROR_INVALID_ARGUMENT;                       \
    if (gpu_lost(gpu_index(g)))                                   \
        return NVML_ERROR_GPU_IS_LOST

EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index)
{
    ENTER();
    RESOLVE(device, g, m);
    if (index == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *index = m != NULL ? m->index : gpu_index(g);
    return NVML_SUCCESS;
}

/* Row remapping (Ampere and later): the rows the "remap-pending" lines remapped, the last waiting
 * for a reset; on a MIG handle NOT_SUPPORTED (the real driver answers for the GPU only). */
EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int *corrRows, unsigned int *uncRows,
                                              unsigned int *isPending, unsigned int *failureOccurred)
{
    unsigned gi;

    ENTER();
    RESOLVE(device, g, m);
    if (corrRows == NULL || uncRows == NULL || isPending == NULL || failureOccurred == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (m != NULL)
        return NVML_ERROR_NOT_SUPPORTED;
    gi = gpu_index(g);
    pthread_mutex_lock(&g_lock);
    refresh_events();
    *corrRows = 0;
    *uncRows = gi < FG_MAX_GPUS ? g_unc_rows[gi] : 0;
    *isPending = gi < FG_MAX_GPUS ? (unsigned)g_remap_pending[gi] : 0;
    *failureOccurred = 0;
    pthread_mutex_unlock(&g_lock);
    return NVML_SUCCESS;
}

/* Page retirement is the pre-Ampere scheme: the simulated A100s and H100s answer NOT_SUPPORTED,
 * as the real ones do. */
EXPORT nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device, nvmlEnableState_t *isPending)
{
    ENTER();
    RESOLVE(device, g, m);
    (void)m;
    return isPending == NULL ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_NOT_SUPPORTED;
}

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
    char buf[FG_STR + 48];

    ENTER();
    RESOLVE(device, g, m);
    if (m != NULL)
        snprintf(buf, sizeof(buf), "%s MIG %s", g->name, m->profile);
    else
        snprintf(buf, sizeof(buf), "%s", g->name);
    return copy_out(name, length, buf);
}

EXPORT nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t device, nvmlBrandType_t *type)
{
    ENTER();
    RESOLVE(device, g, m);
    (void)m;
    if (type == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *type = (nvmlBrandType_t)g->brand;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
    ENTER();
    RESOLVE(device, g, m);
    return copy_out(uuid, length, m != NULL ? m->uuid : g->uuid);
}

/* Fill the 36 bytes every layout shares (16-byte id + 5 uints); full: also busId[32]. */
static nvmlReturn_t pci_info(nvmlDevice_t device, nvmlPciInfo_t *pci, int full)
{
    RESOLVE(device, g, m);
    (void)m;
    if (pci == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), NVML_DEVICE_PCI_BUS_ID_LEGACY_FMT,
             g->domain & 0xffff, g->bus, g->device);
    pci->domain = g->domain;
    pci->bus = g->bus;
    pci->device = g->device;
    pci->pciDeviceId = g->pci_device_id;
    pci->pciSubSystemId = g->pci_subsystem_id;
    if (full)
        snprintf(pci->busId, sizeof(pci->busId), NVML_DEVICE_PCI_BUS_ID_FMT, g->domain, g->bus, g->device);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
    ENTER();
    return pci_info(device, pci, 1);
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
    ENTER();
    return pci_info(device, pci, 0);
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
    ENTER();
    return pci_info(device, pci, 0);
}

EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber)
{
    ENTER();
    RESOLVE(device, g, m);
    if (minorNumber == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (m != NULL)
        return NVML_ERROR_NOT_SUPPORTED;
    *minorNumber = g->minor;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor)
{
    ENTER();
    RESOLVE(device, g, m);
    (void)m;
    if (major == NULL || minor == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *major = g->cc_major;
    *minor = g->cc_minor;
    return NVML_SUCCESS;
}

/* Open the shared usage table of the fake libcuda (read-only). Returns 0, or -1 when no
 * process has used the fake libcuda with this config yet. */
static int state_open(struct fg_state *st)
{
    char path[512];

    fg_state_path(&g_cfg, path, sizeof(path));
    return fg_state_open(st, path, 0);
}

/* Bytes used by listed processes and fake-libcuda processes on GPU g (m: only those on that
 * MIG device; NULL: the GPU with all its MIG devices). */
static unsigned long long process_bytes(const struct fg_gpu *g, const struct fg_mig *m)
{
    unsigned long long sum = 0;
    unsigned gi = gpu_index(g);
    struct fg_state st;

    for (unsigned i = 0; i < g_cfg.nprocs; i++) {
        const struct fg_process *p = &g_cfg.procs[i];

        if (p->gpu != gi || (m != NULL && p->mig != (int)mig_slot(g, m)))
            continue;
        sum += p->used;
    }
    if (state_open(&st) == 0) {
        if (m != NULL) {
            sum += fg_state_unit_used(&st, fg_state_unit(gi, (int)mig_slot(g, m)), 0);
        } else {
            for (int u = -1; u < FG_MAX_MIG; u++)
                sum += fg_state_unit_used(&st, fg_state_unit(gi, u), 0);
        }
        fg_state_close(&st);
    }
    return sum;
}

/* total, reserved, allocated (excluding reserved) for a GPU or MIG device. */
static void memory_of(const struct fg_gpu *g, const struct fg_mig *m, unsigned long long *total,
                      unsigned long long *reserved, unsigned long long *allocated)
{
    unsigned long long used;

    if (m != NULL) {
        *total = m->memory;
        *reserved = 0;
        used = process_bytes(g, m);
    } else {
        *total = g->memory;
        *reserved = g->reserved;
        used = g->used + process_bytes(g, NULL);
    }
    if (used > *total - *reserved)
        used = *total - *reserved;
    *allocated = used;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
    unsigned long long total, reserved, allocated;

    ENTER();
    RESOLVE(device, g, m);
    if (memory == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    memory_of(g, m, &total, &reserved, &allocated);
    memory->total = total;
    memory->used = reserved + allocated;  /* v1: used includes the reserved amount */
    memory->free = total - memory->used;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
    unsigned long long total, reserved, allocated;

    ENTER();
    RESOLVE(device, g, m);
    if (memory == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    /* Driver 580.159.04 answers a wrong struct version with FUNCTION_NOT_FOUND (13), not
     * ARGUMENT_VERSION_MISMATCH: seen on the GPU host (tests/gpu/nvml-probe.real.txt). */
    if (memory->version != nvmlMemory_v2)
        return NVML_ERROR_FUNCTION_NOT_FOUND;
    memory_of(g, m, &total, &reserved, &allocated);
    memory->total = total;
    memory->reserved = reserved;
    memory->used = allocated;
    memory->free = total - reserved - allocated;
    return NVML_SUCCESS;
}

/* FAKEGPU_NVML_UTIL=timeline: GPU i's utilization is the work run on the shared timeline's device
 * i (FAKEGPU_SHARED_TIMELINE, fakegpu_state.h) over the last whole second; -1 otherwise. */
static int timeline_util(unsigned gpu)
{
    const char *how = getenv(FG_UTIL_ENV), *path = getenv("FAKEGPU_SHARED_TIMELINE");
    if (how == NULL || strcmp(how, "timeline") != 0 || path == NULL || path[0] == '\0' || gpu >= FG_STATE_UNITS)
        return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0; /* (no process has run anything yet) */
    struct fg_util_bucket ring[FG_UTIL_BUCKETS];
    off_t at = (off_t)(FG_STATE_UNITS * sizeof(uint64_t) + (size_t)gpu * sizeof(ring));
    ssize_t n = pread(fd, ring, sizeof(ring), at);
    close(fd);
    if (n != (ssize_t)sizeof(ring))
        return 0;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t cur = ((uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec) / FG_UTIL_BUCKET_NS, sum = 0;
    for (unsigned i = 0; i < FG_UTIL_BUCKETS; i++)
        if (ring[i].idx < cur && ring[i].idx + 10 >= cur)
            sum += ring[i].ns;
    return sum >= 10 * FG_UTIL_BUCKET_NS ? 100 : (int)(sum * 100 / (10 * FG_UTIL_BUCKET_NS));
}

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization)
{
    ENTER();
    RESOLVE(device, g, m);
    if (utilization == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    /* Not available per MIG device nor on a MIG-enabled GPU. */
    if (m != NULL || g->mig == FG_MIG_ON)
        return NVML_ERROR_NOT_SUPPORTED;
    int tl = timeline_util(gpu_index(g));
    utilization->gpu = tl >= 0 ? (unsigned)tl : g->util_gpu;
    utilization->memory = g->util_mem;
    return NVML_SUCCESS;
}

struct proc_entry {
    unsigned pid;
    unsigned long long used;
    int mig;    /* index into the GPU's migs[], or -1 */
};

/* Processes on g (and MIG device m if not NULL): the config's `process` lines, then the
 * processes using the fake libcuda. Calls fill(i, entry) for each. */
static nvmlReturn_t running_processes(nvmlDevice_t device, unsigned int *infoCount, void *infos,
                                      void (*fill)(void *infos, unsigned i, const struct fg_gpu *g,
                                                   const struct proc_entry *p))
{
    struct proc_entry match[FG_MAX_PROCS + FG_STATE_SLOTS * (1 + FG_MAX_MIG)];
    unsigned n = 0;
    struct fg_state st;

    RESOLVE(device, g, m);
    if (infoCount == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned i = 0; i < g_cfg.nprocs; i++) {
        const struct fg_process *p = &g_cfg.procs[i];

        if (p->gpu == gpu_index(g) && (m == NULL || p->mig == (int)mig_slot(g, m)))
            match[n++] = (struct proc_entry){ p->pid, p->used, p->mig };
    }
    if (state_open(&st) == 0) {
        for (int u = -1; u < FG_MAX_MIG; u++) {
            unsigned pids[FG_STATE_SLOTS];
            unsigned long long bytes[FG_STATE_SLOTS];
            unsigned k;

            if ((m != NULL && u != (int)mig_slot(g, m)) || (u >= 0 && (unsigned)u >= g->nmig))
                continue;
            k = fg_state_procs(&st, fg_state_unit(gpu_index(g), u), 0, pids, bytes, FG_STATE_SLOTS);
            for (unsigned j = 0; j < k && j < FG_STATE_SLOTS; j++)
                match[n++] = (struct proc_entry){ pids[j], bytes[j], u };
        }
        fg_state_close(&st);
    }
    if (*infoCount < n) {
        *infoCount = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    if (n > 0 && infos == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned i = 0; i < n; i++)
        fill(infos, i, g, &match[i]);
    *infoCount = n;
    return NVML_SUCCESS;
}

static void fill_v2(void *infos, unsigned i, const struct fg_gpu *g, const struct proc_entry *p)
{
    nvmlProcessInfo_t *out = (nvmlProcessInfo_t *)infos + i;

    memset(out, 0, sizeof(*out));
    out->pid = p->pid;
    out->usedGpuMemory = p->used;
    if (p->mig >= 0) {
        out->gpuInstanceId = g->migs[p->mig].gi;
        out->computeInstanceId = g->migs[p->mig].ci;
    } else {
        out->gpuInstanceId = GS_NVML_INVALID_INSTANCE_ID;
        out->computeInstanceId = GS_NVML_INVALID_INSTANCE_ID;
    }
}

static void fill_v1(void *infos, unsigned i, const struct fg_gpu *g, const struct proc_entry *p)
{
    nvmlProcessInfo_v1_t *out = (nvmlProcessInfo_v1_t *)infos + i;

    (void)g;
    memset(out, 0, sizeof(*out));
    out->pid = p->pid;
    out->usedGpuMemory = p->used;
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                            nvmlProcessInfo_t *infos)
{
    ENTER();
    return running_processes(device, infoCount, infos, fill_v2);
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int *infoCount,
                                                            nvmlProcessInfo_v2_t *infos)
{
    ENTER();
    return running_processes(device, infoCount, infos, fill_v2);
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int *infoCount,
                                                         nvmlProcessInfo_v1_t *infos)
{
    ENTER();
    return running_processes(device, infoCount, infos, fill_v1);
}

EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
                                                    nvmlProcessUtilizationSample_t *utilization,
                                                    unsigned int *processSamplesCount,
                                                    unsigned long long lastSeenTimeStamp)
{
    const struct fg_process *match[FG_MAX_PROCS];
    unsigned n = 0;
    struct timespec ts;
    unsigned long long now;

    ENTER();
    RESOLVE(device, g, m);
    if (processSamplesCount == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (m != NULL)
        return NVML_ERROR_NOT_SUPPORTED;
    clock_gettime(CLOCK_REALTIME, &ts);
    now = (unsigned long long)ts.tv_sec * 1000000ULL + (unsigned long long)ts.tv_nsec / 1000ULL;
    for (unsigned i = 0; i < g_cfg.nprocs; i++)
        if (g_cfg.procs[i].gpu == gpu_index(g))
            match[n++] = &g_cfg.procs[i];
    if (n == 0 || now <= lastSeenTimeStamp)
        return NVML_ERROR_NOT_FOUND;
    if (utilization == NULL || *processSamplesCount < n) {
        *processSamplesCount = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned i = 0; i < n; i++) {
        memset(&utilization[i], 0, sizeof(utilization[i]));
        utilization[i].pid = match[i]->pid;
        utilization[i].timeStamp = now;
        utilization[i].smUtil = match[i]->sm_util;
        utilization[i].memUtil = match[i]->mem_util;
    }
    *processSamplesCount = n;
    return NVML_SUCCESS;
}

/* ---------------------------------------------------------------------------------------- */
/* MIG                                                                                       */
/* ---------------------------------------------------------------------------------------- */

EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode, unsigned int *pendingMode)
{
    ENTER();
    RESOLVE(device, g, m);
    if (currentMode == NULL || pendingMode == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (m != NULL || g->mig == FG_MIG_UNSUPPORTED)
        return NVML_ERROR_NOT_SUPPORTED;
    *currentMode = *pendingMode = g->mig == FG_MIG_ON ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count)
{
    ENTER();
    RESOLVE(device, g, m);
    if (count == NULL || m != NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    /* Zero when MIG is not supported or not enabled. */
    *count = g->mig == FG_MIG_ON ? g->mig_max : 0;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                        nvmlDevice_t *migDevice)
{
    ENTER();
    RESOLVE(device, g, m);
    if (migDevice == NULL || m != NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    /* MIG-capable with MIG off: NOT_FOUND on the real driver (tests/gpu/nvml-probe.real.txt). */
    if (g->mig == FG_MIG_OFF)
        return NVML_ERROR_NOT_FOUND;
    if (g->mig != FG_MIG_ON)
        return NVML_ERROR_NOT_SUPPORTED;
    if (index >= g->mig_max)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned j = 0; j < g->nmig; j++) {
        if (g->migs[j].index == index) {
            *migDevice = &g_mig_handles[gpu_index(g)][j];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

EXPORT nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice, nvmlDevice_t *device)
{
    ENTER();
    RESOLVE(migDevice, g, m);
    if (device == NULL || m == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *device = &g_gpu_handles[gpu_index(g)];
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int *isMigDevice)
{
    ENTER();
    RESOLVE(device, g, m);
    (void)g;
    if (isMigDevice == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *isMigDevice = m != NULL;
    return NVML_SUCCESS;
}

/* GPU or compute instance id of a MIG handle (`ci` picks which). */
static nvmlReturn_t mig_instance_id(nvmlDevice_t device, unsigned int *id, int ci)
{
    ENTER();
    RESOLVE(device, g, m);
    (void)g;
    if (id == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (m == NULL) /* a full-GPU handle: INVALID_ARGUMENT on the real driver (nvml-probe.real.txt) */
        return NVML_ERROR_INVALID_ARGUMENT;
    *id = ci ? m->ci : m->gi;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id)
{
    return mig_instance_id(device, id, 0);
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int *id)
{
    return mig_instance_id(device, id, 1);
}

/* ---------------------------------------------------------------------------------------- */
/* Events                                                                                    */
/* ---------------------------------------------------------------------------------------- */

#define EVENT_SETS 16
#define SUPPORTED_EVENTS (nvmlEventTypeSingleBitEccError | nvmlEventTypeDoubleBitEccError | \
                          nvmlEventTypePState | nvmlEventTypeXidCriticalError | nvmlEventTypeClock)

struct nvmlEventSet_st {
    int used;
    unsigned next;                              /* the first event not yet delivered */
    unsigned long long types[FG_MAX_GPUS];      /* registered event types per GPU */
};

static struct nvmlEventSet_st g_sets[EVENT_SETS];

static struct nvmlEventSet_st *set_of(nvmlEventSet_t set)
{
    uintptr_t p = (uintptr_t)set, base = (uintptr_t)&g_sets[0];

    if (set == NULL || p < base || p >= base + sizeof(g_sets) || (p - base) % sizeof(g_sets[0]) != 0 ||
        !set->used)
        return NULL;
    return set;
}

EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
    ENTER();
    if (set == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&g_lock);
    for (unsigned i = 0; i < EVENT_SETS; i++) {
        if (!g_sets[i].used) {
            memset(&g_sets[i], 0, sizeof(g_sets[i]));
            g_sets[i].used = 1;
            refresh_events();
            g_sets[i].next = g_nevents; /* only what happens from now on */
            *set = &g_sets[i];
            pthread_mutex_unlock(&g_lock);
            return NVML_SUCCESS;
        }
    }
    pthread_mutex_unlock(&g_lock);
    return NVML_ERROR_MEMORY;
}

EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
    struct nvmlEventSet_st *s;

    ENTER();
    if ((s = set_of(set)) == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    s->used = 0;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long *eventTypes)
{
    ENTER();
    RESOLVE(device, g, m);
    (void)g;
    if (eventTypes == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (m != NULL) /* events are registered on the GPU; MIG events name their instances */
        return NVML_ERROR_NOT_SUPPORTED;
    *eventTypes = SUPPORTED_EVENTS;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes, nvmlEventSet_t set)
{
    struct nvmlEventSet_st *s;

    ENTER();
    RESOLVE(device, g, m);
    if ((s = set_of(set)) == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (m != NULL || (eventTypes & ~SUPPORTED_EVENTS) != 0)
        return NVML_ERROR_NOT_SUPPORTED;
    s->types[gpu_index(g)] |= eventTypes;
    return NVML_SUCCESS;
}

/* The next event for set s, if any: SUCCESS (data filled), GPU_IS_LOST, or TIMEOUT. */
static nvmlReturn_t next_event(struct nvmlEventSet_st *s, nvmlEventData_t *data, int v2)
{
    nvmlReturn_t rc = NVML_ERROR_TIMEOUT;

    pthread_mutex_lock(&g_lock);
    refresh_events();
    while (rc == NVML_ERROR_TIMEOUT && s->next < g_nevents) {
        const struct fg_event *e = &g_events[s->next++];
        const struct fg_gpu *g = &g_cfg.gpus[e->gpu];

        if (e->lost && s->types[e->gpu] != 0) {
            rc = NVML_ERROR_GPU_IS_LOST;
        } else if (!e->lost && (s->types[e->gpu] & nvmlEventTypeXidCriticalError)) {
            data->device = &g_gpu_handles[e->gpu];
            data->eventType = nvmlEventTypeXidCriticalError;
            data->eventData = e->xid;
            if (v2) {
                data->gpuInstanceId = e->mig >= 0 ? g->migs[e->mig].gi : GS_NVML_INVALID_INSTANCE_ID;
                data->computeInstanceId = e->mig >= 0 ? g->migs[e->mig].ci : GS_NVML_INVALID_INSTANCE_ID;
            }
            rc = NVML_SUCCESS;
        }
    }
    pthread_mutex_unlock(&g_lock);
    return rc;
}

static nvmlReturn_t event_wait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms, int v2)
{
    struct nvmlEventSet_st *s = set_of(set);
    struct timespec t0, now, tick = {0, 20 * 1000 * 1000};

    if (s == NULL || data == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        nvmlReturn_t rc = next_event(s, data, v2);
        if (rc != NVML_ERROR_TIMEOUT)
            return rc;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 >= (long)timeoutms)
            return NVML_ERROR_TIMEOUT;
        nanosleep(&tick, NULL);
    }
}

EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms)
{
    ENTER();
    return event_wait(set, data, timeoutms, 1);
}

EXPORT nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms)
{
    ENTER();
    return event_wait(set, data, timeoutms, 0);
}

/* ---- serial numbers and topology ------------------------------------------------------------
 * The fake's boards have serial "1320000000" followed by the GPU's index (three digits); every
 * pair of GPUs meets at the system level (no NVLink, no shared switch), P2P reads are OK, no
 * two GPUs share a board. MIG devices have no serial or topology of their own (NOT_SUPPORTED /
 * INVALID_ARGUMENT, as the real driver answers for them). */
EXPORT nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char *serial, unsigned int length)
{
    ENTER();
    RESOLVE(device, g, m);
    if (serial == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (m != NULL)
        return NVML_ERROR_NOT_SUPPORTED;
    if (length < 14)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    snprintf(serial, length, "1320000000%03u", gpu_index(g));
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleBySerial(const char *serial, nvmlDevice_t *device)
{
    ENTER();
    if (serial == NULL || device == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned i = 0; i < g_cfg.ngpus; i++) {
        char s[32];
        snprintf(s, sizeof(s), "1320000000%03u", i);
        if (strcmp(s, serial) == 0) {
            if (gpu_lost(i))
                return NVML_ERROR_GPU_IS_LOST;
            *device = &g_gpu_handles[i];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

/* GPUs other than `skip` (-1: all) at `level` or nearer: all of them from NVML_TOPOLOGY_SYSTEM. */
static nvmlReturn_t gpu_list(int skip, nvmlGpuTopologyLevel_t level, unsigned int *count, nvmlDevice_t *out)
{
    unsigned n = 0;
    if (count == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned i = 0; i < g_cfg.ngpus && level >= NVML_TOPOLOGY_SYSTEM; i++)
        if ((int)i != skip) {
            if (out != NULL && n < *count)
                out[n] = &g_gpu_handles[i];
            n++;
        }
    if (*count == 0 || out == NULL) {
        *count = n;
        return NVML_SUCCESS;
    }
    if (n > *count) {
        *count = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    *count = n;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetTopologyNearestGpus(nvmlDevice_t device, nvmlGpuTopologyLevel_t level,
                                                     unsigned int *count, nvmlDevice_t *deviceArray)
{
    ENTER();
    RESOLVE(device, g, m);
    if (m != NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    return gpu_list((int)gpu_index(g), level, count, deviceArray);
}

EXPORT nvmlReturn_t nvmlSystemGetTopologyGpuSet(unsigned int cpuNumber, unsigned int *count, nvmlDevice_t *deviceArray)
{
    ENTER();
    (void)cpuNumber; /* one NUMA node: every CPU is near every GPU */
    return gpu_list(-1, NVML_TOPOLOGY_SYSTEM, count, deviceArray);
}

EXPORT nvmlReturn_t nvmlUnitGetDevices(nvmlUnit_t unit, unsigned int *deviceCount, nvmlDevice_t *devices)
{
    ENTER();
    (void)unit; (void)deviceCount; (void)devices;
    return NVML_ERROR_INVALID_ARGUMENT; /* no S-class units: no unit handle is valid */
}

/* Two whole GPUs (not the same one, no MIG device). */
static nvmlReturn_t gpu_pair(nvmlDevice_t a, nvmlDevice_t b)
{
    const struct fg_gpu *ga, *gb;
    const struct fg_mig *ma, *mb;
    if (resolve(a, &ga, &ma) < 0 || resolve(b, &gb, &mb) < 0 || ma != NULL || mb != NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (gpu_lost(gpu_index(ga)) || gpu_lost(gpu_index(gb)))
        return NVML_ERROR_GPU_IS_LOST;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1, nvmlDevice_t device2,
                                                        nvmlGpuTopologyLevel_t *pathInfo)
{
    ENTER();
    nvmlReturn_t rc = gpu_pair(device1, device2);
    if (rc != NVML_SUCCESS || pathInfo == NULL)
        return rc != NVML_SUCCESS ? rc : NVML_ERROR_INVALID_ARGUMENT;
    *pathInfo = device1 == device2 ? NVML_TOPOLOGY_INTERNAL : NVML_TOPOLOGY_SYSTEM;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t device1, nvmlDevice_t device2, nvmlGpuP2PCapsIndex_t p2pIndex,
                                           nvmlGpuP2PStatus_t *p2pStatus)
{
    ENTER();
    (void)p2pIndex;
    nvmlReturn_t rc = gpu_pair(device1, device2);
    if (rc != NVML_SUCCESS || p2pStatus == NULL)
        return rc != NVML_SUCCESS ? rc : NVML_ERROR_INVALID_ARGUMENT;
    *p2pStatus = NVML_P2P_STATUS_OK;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceOnSameBoard(nvmlDevice_t device1, nvmlDevice_t device2, int *onSameBoard)
{
    ENTER();
    nvmlReturn_t rc = gpu_pair(device1, device2);
    if (rc != NVML_SUCCESS || onSameBoard == NULL)
        return rc != NVML_SUCCESS ? rc : NVML_ERROR_INVALID_ARGUMENT;
    *onSameBoard = device1 == device2;
    return NVML_SUCCESS;
}
