/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Self-test of the simulated GPU: dlopen()s the built fake libnvidia-ml.so.1 and checks each
 * entry point's happy path and its error codes (NULL arguments, bad index or handle, calls
 * before init / after the last shutdown, short buffers, unknown ids), fault injection and
 * bad configs; then exercises the config parser directly.
 *
 * usage: test_fake_nvml LIBNVIDIA_ML CONFIG_DIR
 */
#define GS_NVML_NO_PROTOTYPES
#include "abi/nvml.h"
#include "fakegpu_config.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "selftest.h"

static struct gs_nvml_fns nv;

static const char *g_confdir;
static void *g_lib;
static char g_tmpdir[] = "/tmp/fakegpu-test.XXXXXX";

#define OK(expr) CHECK_RC(expr, NVML_SUCCESS)

static void use_sample(const char *name)
{
    char path[4096];

    snprintf(path, sizeof(path), "%s/%s", g_confdir, name);
    setenv(FG_CONFIG_ENV, path, 1);
}

static void use_text(const char *text)
{
    char path[256];
    FILE *f;

    snprintf(path, sizeof(path), "%s/gpus.conf", g_tmpdir);
    f = fopen(path, "w");
    if (f == NULL) {
        perror(path);
        exit(1);
    }
    fputs(text, f);
    fclose(f);
    setenv(FG_CONFIG_ENV, path, 1);
}

static const char *ONE_GPU_HEAD =
    "driver 580.159.04\ncuda 13.0\n"
    "gpu\n name NVIDIA H100 80GB HBM3\n uuid GPU-11111111-2222-3333-4444-555555555555\n"
    " bus 00000000:00:06.0\n memory 80GiB\n arch 9.0\n";

/* Call fn with stderr redirected to a file; return what it wrote (static buffer). */
static const char *capture_stderr(nvmlReturn_t (*fn)(void), nvmlReturn_t *rc)
{
    static char buf[4096];
    char path[256];
    int fd, saved;
    ssize_t n;

    snprintf(path, sizeof(path), "%s/stderr", g_tmpdir);
    fflush(stderr);
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    saved = dup(2);
    dup2(fd, 2);
    *rc = fn();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    n = pread(fd, buf, sizeof(buf) - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    close(fd);
    return buf;
}

static void test_uninitialized(void)
{
    nvmlDevice_t d = NULL;
    unsigned u = 0;
    int i = 0;
    char buf[128];
    nvmlPciInfo_t pci;
    nvmlMemory_t mem;
    nvmlMemory_v2_t mem2 = { .version = nvmlMemory_v2 };
    nvmlUtilization_t util;
    nvmlProcessInfo_t procs[4];
    nvmlProcessInfo_v1_t procs1[4];
    nvmlProcessUtilizationSample_t samples[4];
    nvmlBrandType_t brand;
    unsigned cur, pend;

    CHECK_RC(nv.nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
    CHECK_RC(nv.nvmlSystemGetDriverVersion(buf, sizeof(buf)), NVML_ERROR_UNINITIALIZED);
    CHECK_RC(nv.nvmlSystemGetNVMLVersion(buf, sizeof(buf)), NVML_ERROR_UNINITIALIZED);
    CHECK_RC(nv.nvmlSystemGetCudaDriverVersion(&i), NVML_ERROR_UNINITIALIZED);
    CHECK_RC(nv.nvmlSystemGetCudaDriverVersion_v2(&i), NVML_ERROR_UNINITIALIZED);
    CHECK_RC(nv.nvmlDeviceGetCount_v2(&u), NVML_ERROR_UNINITIALIZED);
    CHECK_RC(nv.nvmlDeviceGetCount(&u), NVML_ERROR_UNINITIALIZED);
    CHECK_RC(nv.nvmlDeviceGetHandleByIndex_v2(0, &d), NVML_ERROR_UNINITIALIZED);
    CHECK_RC(nv.nvmlDeviceGetHandleByIndex(0, &d), NVML_ERROR_UNINITIALIZED);
    CHECK_RC(nv.nvmlDeviceGetHandleByUUID("GPU-x", &d), NVML_ERROR_UNINITIALIZED);
    CHECK_RC(nv.nvmlDeviceGetHandleByPciBusId_v2("00000000:00:06.0", &d), NVML_ERROR_UNINITIALIZED);
    CHECK_RC(nv.nvmlDeviceGetHandleByPciBusId("00000000:00:06.0", &d), NVML_ERROR_UNINITIALIZED);
    CHECK_RC(nv.nvmlDeviceGetIndex(d, &u), NVML_ERROR_UNINITIALIZED);
    CHECK_RC(nv.nvmlDeviceGetName(d, buf, sizeof(buf)), NVML_ERROR_UNINITIALIZED);
    CHECK_RC(nv.nvmlDeviceGetBrand(d, &brand), NVML_ERROR_UNINITIALIZED);
    CHECK_RC(nv.nvmlDeviceGetUUID(d, buf, sizeof(buf)), NVML_ERROR_UNINITIALIZED);
    CHECK_RC(nv.nvmlDeviceGetPciInfo_v3(d, &pci), NVML_ERROR_UNINITIALIZED);
    CHECK_RC(nv.nvmlDeviceGetPciInfo_v2(d, &pci), NVML_ERROR_UNINITIALIZED);
    CHECK_RC(nv.nvmlDeviceGetPciInfo(d, &pci), NVML_ERROR_UNINITIALIZED);
    CHECK_RC(nv.nvmlDeviceGetMinorNumber(d, &u), NVML_ERROR_UNINITIALIZED);
    CHECK_RC(nv.nvmlDeviceGetCudaComputeCapability(d, &i, &i), NVML_ERROR_UNINITIALIZED);
    CHECK_RC(nv.nvmlDeviceGetMemoryInfo(d, &mem), NVML_ERROR_UNINITIALIZED);
    CHECK_RC(nv.nvmlDeviceGetMemoryInfo_v2(d, &mem2), NVML_ERROR_UNINITIALIZED);
    CHECK_RC(nv.nvmlDeviceGetUtilizationRates(d, &util), NVML_ERROR_UNINITIALIZED);
    u = 4;
    CHECK_RC(nv.nvmlDeviceGetComputeRunningProcesses_v3(d, &u, procs), NVML_ERROR_UNINITIALIZED);
    CHECK_RC(nv.nvmlDeviceGetComputeRunningProcesses_v2(d, &u, procs), NVML_ERROR_UNINITIALIZED);
    CHECK_RC(nv.nvmlDeviceGetComputeRunningProcesses(d, &u, procs1), NVML_ERROR_UNINITIALIZED);
    CHECK_RC(nv.nvmlDeviceGetProcessUtilization(d, samples, &u, 0), NVML_ERROR_UNINITIALIZED);
    CHECK_RC(nv.nvmlDeviceGetMigMode(d, &cur, &pend), NVML_ERROR_UNINITIALIZED);
    CHECK_RC(nv.nvmlDeviceGetMaxMigDeviceCount(d, &u), NVML_ERROR_UNINITIALIZED);
    CHECK_RC(nv.nvmlDeviceGetMigDeviceHandleByIndex(d, 0, &d), NVML_ERROR_UNINITIALIZED);
    CHECK_RC(nv.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(d, &d), NVML_ERROR_UNINITIALIZED);
    CHECK_RC(nv.nvmlDeviceIsMigDeviceHandle(d, &u), NVML_ERROR_UNINITIALIZED);
    CHECK_RC(nv.nvmlDeviceGetGpuInstanceId(d, &u), NVML_ERROR_UNINITIALIZED);
    CHECK_RC(nv.nvmlDeviceGetComputeInstanceId(d, &u), NVML_ERROR_UNINITIALIZED);
    CHECK(strcmp(nv.nvmlErrorString(NVML_ERROR_UNINITIALIZED), "Uninitialized") == 0);
    CHECK(strcmp(nv.nvmlErrorString(NVML_ERROR_DRIVER_NOT_LOADED), "Driver Not Loaded") == 0);
    CHECK(strcmp(nv.nvmlErrorString((nvmlReturn_t)12345), "Unknown Error") == 0);
}

static void test_refcount(void)
{
    unsigned n = 0;

    use_sample("2gpu.conf");
    OK(nv.nvmlInit_v2());
    OK(nv.nvmlInit());
    OK(nv.nvmlInitWithFlags(NVML_INIT_FLAG_NO_GPUS));
    OK(nv.nvmlShutdown());
    OK(nv.nvmlShutdown());
    OK(nv.nvmlDeviceGetCount_v2(&n));  /* still one reference */
    CHECK(n == 2);
    OK(nv.nvmlShutdown());
    CHECK_RC(nv.nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
    CHECK_RC(nv.nvmlDeviceGetCount_v2(&n), NVML_ERROR_UNINITIALIZED);
}

static void test_system_and_enumeration(void)
{
    char buf[128];
    int v = 0;
    unsigned n = 0, idx = 99;
    nvmlDevice_t d0 = NULL, d1 = NULL, d = NULL;

    use_sample("2gpu.conf");
    OK(nv.nvmlInit_v2());
    OK(nv.nvmlSystemGetDriverVersion(buf, sizeof(buf)));
    CHECK(strcmp(buf, "580.159.04") == 0);
    CHECK_RC(nv.nvmlSystemGetDriverVersion(buf, 10), NVML_ERROR_INSUFFICIENT_SIZE);
    OK(nv.nvmlSystemGetDriverVersion(buf, 11));
    CHECK_RC(nv.nvmlSystemGetDriverVersion(NULL, 80), NVML_ERROR_INVALID_ARGUMENT);
    OK(nv.nvmlSystemGetNVMLVersion(buf, sizeof(buf)));
    CHECK(strcmp(buf, "13.580.159.04") == 0);
    CHECK_RC(nv.nvmlSystemGetNVMLVersion(buf, 5), NVML_ERROR_INSUFFICIENT_SIZE);
    OK(nv.nvmlSystemGetCudaDriverVersion(&v));
    CHECK(v == 13000);
    v = 0;
    OK(nv.nvmlSystemGetCudaDriverVersion_v2(&v));
    CHECK(v == 13000);
    CHECK_RC(nv.nvmlSystemGetCudaDriverVersion(NULL), NVML_ERROR_INVALID_ARGUMENT);
    CHECK_RC(nv.nvmlSystemGetCudaDriverVersion_v2(NULL), NVML_ERROR_INVALID_ARGUMENT);

    OK(nv.nvmlDeviceGetCount_v2(&n));
    CHECK(n == 2);
    n = 0;
    OK(nv.nvmlDeviceGetCount(&n));
    CHECK(n == 2);
    CHECK_RC(nv.nvmlDeviceGetCount_v2(NULL), NVML_ERROR_INVALID_ARGUMENT);
    CHECK_RC(nv.nvmlDeviceGetCount(NULL), NVML_ERROR_INVALID_ARGUMENT);

    OK(nv.nvmlDeviceGetHandleByIndex_v2(0, &d0));
    OK(nv.nvmlDeviceGetHandleByIndex_v2(1, &d1));
    CHECK(d0 != NULL && d1 != NULL && d0 != d1);
    OK(nv.nvmlDeviceGetHandleByIndex(1, &d));
    CHECK(d == d1);  /* stable */
    CHECK_RC(nv.nvmlDeviceGetHandleByIndex_v2(2, &d), NVML_ERROR_INVALID_ARGUMENT);
    CHECK_RC(nv.nvmlDeviceGetHandleByIndex(2, &d), NVML_ERROR_INVALID_ARGUMENT);
    CHECK_RC(nv.nvmlDeviceGetHandleByIndex_v2(0, NULL), NVML_ERROR_INVALID_ARGUMENT);
    OK(nv.nvmlDeviceGetIndex(d1, &idx));
    CHECK(idx == 1);
    CHECK_RC(nv.nvmlDeviceGetIndex(d1, NULL), NVML_ERROR_INVALID_ARGUMENT);

    d = NULL;
    OK(nv.nvmlDeviceGetHandleByUUID("GPU-9e3a5b7c-1d2f-4a6b-8c0d-2e4f6a8b0c1d", &d));
    CHECK(d == d1);
    CHECK_RC(nv.nvmlDeviceGetHandleByUUID("GPU-00000000-0000-0000-0000-000000000000", &d), NVML_ERROR_NOT_FOUND);
    CHECK_RC(nv.nvmlDeviceGetHandleByUUID(NULL, &d), NVML_ERROR_INVALID_ARGUMENT);
    CHECK_RC(nv.nvmlDeviceGetHandleByUUID("GPU-9e3a5b7c-1d2f-4a6b-8c0d-2e4f6a8b0c1d", NULL),
             NVML_ERROR_INVALID_ARGUMENT);

    d = NULL;
    OK(nv.nvmlDeviceGetHandleByPciBusId_v2("00000000:3B:00.0", &d));
    CHECK(d == d0);
    d = NULL;
    OK(nv.nvmlDeviceGetHandleByPciBusId_v2("0000:3b:00.0", &d));
    CHECK(d == d0);
    d = NULL;
    OK(nv.nvmlDeviceGetHandleByPciBusId("86:00.0", &d));
    CHECK(d == d1);
    CHECK_RC(nv.nvmlDeviceGetHandleByPciBusId_v2("0000:99:00.0", &d), NVML_ERROR_NOT_FOUND);
    CHECK_RC(nv.nvmlDeviceGetHandleByPciBusId_v2("not-a-bus-id", &d), NVML_ERROR_INVALID_ARGUMENT);
    CHECK_RC(nv.nvmlDeviceGetHandleByPciBusId_v2(NULL, &d), NVML_ERROR_INVALID_ARGUMENT);
    CHECK_RC(nv.nvmlDeviceGetHandleByPciBusId_v2("0000:3b:00.0", NULL), NVML_ERROR_INVALID_ARGUMENT);
    OK(nv.nvmlShutdown());
}

static void test_device_queries(void)
{
    nvmlDevice_t d0, d1;
    nvmlDevice_t bogus = (nvmlDevice_t)(void *)&nfail;
    char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    nvmlBrandType_t brand = NVML_BRAND_UNKNOWN;
    nvmlPciInfo_t pci;
    unsigned u = 0;
    int major = 0, minor = 0;
    nvmlMemory_t mem;
    nvmlMemory_v2_t mem2;
    nvmlUtilization_t util;

    use_sample("2gpu.conf");
    OK(nv.nvmlInit_v2());
    OK(nv.nvmlDeviceGetHandleByIndex_v2(0, &d0));
    OK(nv.nvmlDeviceGetHandleByIndex_v2(1, &d1));

    OK(nv.nvmlDeviceGetName(d0, buf, sizeof(buf)));
    CHECK(strcmp(buf, "NVIDIA A100-SXM4-40GB") == 0);
    CHECK_RC(nv.nvmlDeviceGetName(d0, buf, 5), NVML_ERROR_INSUFFICIENT_SIZE);
    CHECK_RC(nv.nvmlDeviceGetName(d0, NULL, 64), NVML_ERROR_INVALID_ARGUMENT);
    CHECK_RC(nv.nvmlDeviceGetName(bogus, buf, sizeof(buf)), NVML_ERROR_INVALID_ARGUMENT);
    CHECK_RC(nv.nvmlDeviceGetName(NULL, buf, sizeof(buf)), NVML_ERROR_INVALID_ARGUMENT);

    OK(nv.nvmlDeviceGetBrand(d0, &brand));
    CHECK(brand == NVML_BRAND_NVIDIA);
    CHECK_RC(nv.nvmlDeviceGetBrand(d0, NULL), NVML_ERROR_INVALID_ARGUMENT);
    CHECK_RC(nv.nvmlDeviceGetBrand(bogus, &brand), NVML_ERROR_INVALID_ARGUMENT);

    OK(nv.nvmlDeviceGetUUID(d1, buf, sizeof(buf)));
    CHECK(strcmp(buf, "GPU-9e3a5b7c-1d2f-4a6b-8c0d-2e4f6a8b0c1d") == 0);
    CHECK_RC(nv.nvmlDeviceGetUUID(d1, buf, 40), NVML_ERROR_INSUFFICIENT_SIZE);
    OK(nv.nvmlDeviceGetUUID(d1, buf, 41));
    CHECK_RC(nv.nvmlDeviceGetUUID(d1, NULL, 96), NVML_ERROR_INVALID_ARGUMENT);
    CHECK_RC(nv.nvmlDeviceGetUUID(bogus, buf, sizeof(buf)), NVML_ERROR_INVALID_ARGUMENT);

    memset(&pci, 0x5a, sizeof(pci));
    OK(nv.nvmlDeviceGetPciInfo_v3(d0, &pci));
    CHECK(strcmp(pci.busId, "00000000:3B:00.0") == 0);
    CHECK(strcmp(pci.busIdLegacy, "0000:3B:00.0") == 0);
    CHECK(pci.domain == 0 && pci.bus == 0x3b && pci.device == 0);
    CHECK(pci.pciDeviceId == 0x20b010de && pci.pciSubSystemId == 0x134f10de);
    memset(&pci, 0x5a, sizeof(pci));
    OK(nv.nvmlDeviceGetPciInfo(d1, &pci));  /* old layout: the 36 shared bytes only */
    CHECK(strcmp(pci.busIdLegacy, "0000:86:00.0") == 0 && pci.bus == 0x86);
    CHECK((unsigned char)pci.busId[0] == 0x5a);
    OK(nv.nvmlDeviceGetPciInfo_v2(d1, &pci));
    CHECK_RC(nv.nvmlDeviceGetPciInfo_v3(d0, NULL), NVML_ERROR_INVALID_ARGUMENT);
    CHECK_RC(nv.nvmlDeviceGetPciInfo_v3(bogus, &pci), NVML_ERROR_INVALID_ARGUMENT);

    OK(nv.nvmlDeviceGetMinorNumber(d1, &u));
    CHECK(u == 2);  /* minor != index */
    OK(nv.nvmlDeviceGetMinorNumber(d0, &u));
    CHECK(u == 0);
    CHECK_RC(nv.nvmlDeviceGetMinorNumber(d0, NULL), NVML_ERROR_INVALID_ARGUMENT);
    CHECK_RC(nv.nvmlDeviceGetMinorNumber(bogus, &u), NVML_ERROR_INVALID_ARGUMENT);

    OK(nv.nvmlDeviceGetCudaComputeCapability(d0, &major, &minor));
    CHECK(major == 8 && minor == 0);
    CHECK_RC(nv.nvmlDeviceGetCudaComputeCapability(d0, NULL, &minor), NVML_ERROR_INVALID_ARGUMENT);
    CHECK_RC(nv.nvmlDeviceGetCudaComputeCapability(d0, &major, NULL), NVML_ERROR_INVALID_ARGUMENT);

    /* GPU 0: 40960 MiB, 420 MiB reserved, processes using 1 GiB + 512 MiB. */
    OK(nv.nvmlDeviceGetMemoryInfo(d0, &mem));
    CHECK(mem.total == 40960 * MiB);
    CHECK(mem.used == (420 + 1536) * MiB);
    CHECK(mem.free == mem.total - mem.used);
    CHECK_RC(nv.nvmlDeviceGetMemoryInfo(d0, NULL), NVML_ERROR_INVALID_ARGUMENT);
    memset(&mem2, 0, sizeof(mem2));
    CHECK_RC(nv.nvmlDeviceGetMemoryInfo_v2(d0, &mem2), NVML_ERROR_FUNCTION_NOT_FOUND); /* as driver 580 */
    mem2.version = nvmlMemory_v2;
    OK(nv.nvmlDeviceGetMemoryInfo_v2(d0, &mem2));
    CHECK(mem2.total == 40960 * MiB && mem2.reserved == 420 * MiB && mem2.used == 1536 * MiB);
    CHECK(mem2.free == mem2.total - mem2.reserved - mem2.used);
    CHECK_RC(nv.nvmlDeviceGetMemoryInfo_v2(d0, NULL), NVML_ERROR_INVALID_ARGUMENT);
    CHECK_RC(nv.nvmlDeviceGetMemoryInfo_v2(bogus, &mem2), NVML_ERROR_INVALID_ARGUMENT);

    OK(nv.nvmlDeviceGetUtilizationRates(d0, &util));
    CHECK(util.gpu == 35 && util.memory == 12);
    CHECK_RC(nv.nvmlDeviceGetUtilizationRates(d0, NULL), NVML_ERROR_INVALID_ARGUMENT);

    OK(nv.nvmlShutdown());
    /* Handles from a finished session are not usable once NVML is shut down. */
    CHECK_RC(nv.nvmlDeviceGetName(d0, buf, sizeof(buf)), NVML_ERROR_UNINITIALIZED);
}

static void test_processes(void)
{
    nvmlDevice_t d0, d1;
    nvmlProcessInfo_t p[4];
    nvmlProcessInfo_v1_t p1[4];
    nvmlProcessUtilizationSample_t s[4];
    unsigned n;

    use_sample("2gpu.conf");
    OK(nv.nvmlInit_v2());
    OK(nv.nvmlDeviceGetHandleByIndex_v2(0, &d0));
    OK(nv.nvmlDeviceGetHandleByIndex_v2(1, &d1));

    n = 0;
    CHECK_RC(nv.nvmlDeviceGetComputeRunningProcesses_v3(d0, &n, NULL), NVML_ERROR_INSUFFICIENT_SIZE);
    CHECK(n == 2);
    n = 1;
    CHECK_RC(nv.nvmlDeviceGetComputeRunningProcesses_v3(d0, &n, p), NVML_ERROR_INSUFFICIENT_SIZE);
    CHECK(n == 2);
    n = 4;
    OK(nv.nvmlDeviceGetComputeRunningProcesses_v3(d0, &n, p));
    CHECK(n == 2);
    CHECK(p[0].pid == 4242 && p[0].usedGpuMemory == 1024 * MiB);
    CHECK(p[1].pid == 4343 && p[1].usedGpuMemory == 512 * MiB);
    CHECK(p[0].gpuInstanceId == 0xFFFFFFFFu && p[0].computeInstanceId == 0xFFFFFFFFu);
    n = 4;
    OK(nv.nvmlDeviceGetComputeRunningProcesses_v2(d0, &n, p));
    CHECK(n == 2 && p[1].pid == 4343);
    n = 4;
    OK(nv.nvmlDeviceGetComputeRunningProcesses(d0, &n, p1));
    CHECK(n == 2 && p1[0].pid == 4242 && p1[1].usedGpuMemory == 512 * MiB);
    n = 0;
    OK(nv.nvmlDeviceGetComputeRunningProcesses_v3(d1, &n, NULL));
    CHECK(n == 0);
    CHECK_RC(nv.nvmlDeviceGetComputeRunningProcesses_v3(d0, NULL, p), NVML_ERROR_INVALID_ARGUMENT);
    n = 4;
    CHECK_RC(nv.nvmlDeviceGetComputeRunningProcesses_v3(d0, &n, NULL), NVML_ERROR_INVALID_ARGUMENT);

    CHECK_RC(nv.nvmlDeviceGetProcessUtilization(d0, s, NULL, 0), NVML_ERROR_INVALID_ARGUMENT);
    n = 0;
    CHECK_RC(nv.nvmlDeviceGetProcessUtilization(d0, NULL, &n, 0), NVML_ERROR_INSUFFICIENT_SIZE);
    CHECK(n == 2);
    n = 4;
    OK(nv.nvmlDeviceGetProcessUtilization(d0, s, &n, 0));
    CHECK(n == 2 && s[0].pid == 4242 && s[0].smUtil == 30 && s[0].memUtil == 10 && s[0].timeStamp > 0);
    n = 4;
    CHECK_RC(nv.nvmlDeviceGetProcessUtilization(d0, s, &n, ~0ULL), NVML_ERROR_NOT_FOUND);
    n = 4;
    CHECK_RC(nv.nvmlDeviceGetProcessUtilization(d1, s, &n, 0), NVML_ERROR_NOT_FOUND);
    OK(nv.nvmlShutdown());
}

static void test_mig_off(void)
{
    nvmlDevice_t d0, m;
    unsigned cur = 9, pend = 9, u = 9;

    use_sample("2gpu.conf");
    OK(nv.nvmlInit_v2());
    OK(nv.nvmlDeviceGetHandleByIndex_v2(0, &d0));
    OK(nv.nvmlDeviceGetMigMode(d0, &cur, &pend));
    CHECK(cur == NVML_DEVICE_MIG_DISABLE && pend == NVML_DEVICE_MIG_DISABLE);
    CHECK_RC(nv.nvmlDeviceGetMigMode(d0, NULL, &pend), NVML_ERROR_INVALID_ARGUMENT);
    OK(nv.nvmlDeviceGetMaxMigDeviceCount(d0, &u));
    CHECK(u == 0);
    CHECK_RC(nv.nvmlDeviceGetMaxMigDeviceCount(d0, NULL), NVML_ERROR_INVALID_ARGUMENT);
    CHECK_RC(nv.nvmlDeviceGetMigDeviceHandleByIndex(d0, 0, &m), NVML_ERROR_NOT_FOUND); /* MIG off */
    OK(nv.nvmlDeviceIsMigDeviceHandle(d0, &u));
    CHECK(u == 0);
    CHECK_RC(nv.nvmlDeviceIsMigDeviceHandle(d0, NULL), NVML_ERROR_INVALID_ARGUMENT);
    CHECK_RC(nv.nvmlDeviceGetGpuInstanceId(d0, &u), NVML_ERROR_INVALID_ARGUMENT);
    CHECK_RC(nv.nvmlDeviceGetComputeInstanceId(d0, &u), NVML_ERROR_INVALID_ARGUMENT);
    CHECK_RC(nv.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(d0, &m), NVML_ERROR_INVALID_ARGUMENT);
    OK(nv.nvmlShutdown());

    /* A GPU without MIG support at all. */
    use_text(ONE_GPU_HEAD);
    OK(nv.nvmlInit_v2());
    OK(nv.nvmlDeviceGetHandleByIndex_v2(0, &d0));
    CHECK_RC(nv.nvmlDeviceGetMigMode(d0, &cur, &pend), NVML_ERROR_NOT_SUPPORTED);
    OK(nv.nvmlDeviceGetMaxMigDeviceCount(d0, &u));
    CHECK(u == 0);
    OK(nv.nvmlShutdown());
}

static void test_mig_on(void)
{
    nvmlDevice_t g2, g3, mig[8], m, parent;
    unsigned cur = 0, pend = 0, u = 0, n;
    char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    nvmlMemory_v2_t mem2 = { .version = nvmlMemory_v2 };
    nvmlProcessInfo_t p[4];
    nvmlUtilization_t util;
    static const unsigned want_gi[] = { 2, 2, 9 }, want_ci[] = { 0, 1, 0 };

    use_sample("8gpu-mig.conf");
    OK(nv.nvmlInit_v2());
    OK(nv.nvmlDeviceGetCount_v2(&n));
    CHECK(n == 8);
    OK(nv.nvmlDeviceGetHandleByIndex_v2(2, &g2));
    OK(nv.nvmlDeviceGetHandleByIndex_v2(3, &g3));
    OK(nv.nvmlDeviceGetMigMode(g2, &cur, &pend));
    CHECK(cur == NVML_DEVICE_MIG_ENABLE && pend == NVML_DEVICE_MIG_ENABLE);
    OK(nv.nvmlDeviceGetMaxMigDeviceCount(g2, &u));
    CHECK(u == 7);
    for (unsigned i = 0; i < 3; i++) {
        unsigned gi = 99, ci = 99, is = 0, idx = 99;

        OK(nv.nvmlDeviceGetMigDeviceHandleByIndex(g2, i, &mig[i]));
        CHECK(mig[i] != g2 && mig[i] != g3);
        for (unsigned j = 0; j < i; j++)
            CHECK(mig[i] != mig[j]);
        OK(nv.nvmlDeviceGetMigDeviceHandleByIndex(g2, i, &m));
        CHECK(m == mig[i]);
        OK(nv.nvmlDeviceIsMigDeviceHandle(mig[i], &is));
        CHECK(is == 1);
        OK(nv.nvmlDeviceGetGpuInstanceId(mig[i], &gi));
        OK(nv.nvmlDeviceGetComputeInstanceId(mig[i], &ci));
        CHECK(gi == want_gi[i] && ci == want_ci[i]);
        OK(nv.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(mig[i], &parent));
        CHECK(parent == g2);
        OK(nv.nvmlDeviceGetIndex(mig[i], &idx));
        CHECK(idx == i);
    }
    for (unsigned i = 3; i < 7; i++)
        CHECK_RC(nv.nvmlDeviceGetMigDeviceHandleByIndex(g2, i, &m), NVML_ERROR_NOT_FOUND);
    CHECK_RC(nv.nvmlDeviceGetMigDeviceHandleByIndex(g2, 7, &m), NVML_ERROR_INVALID_ARGUMENT);
    CHECK_RC(nv.nvmlDeviceGetMigDeviceHandleByIndex(g2, 0, NULL), NVML_ERROR_INVALID_ARGUMENT);
    CHECK_RC(nv.nvmlDeviceGetMigDeviceHandleByIndex(mig[0], 0, &m), NVML_ERROR_INVALID_ARGUMENT);
    CHECK_RC(nv.nvmlDeviceGetMigDeviceHandleByIndex(g3, 0, &m), NVML_ERROR_NOT_FOUND); /* MIG off */
    CHECK_RC(nv.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(mig[0], NULL), NVML_ERROR_INVALID_ARGUMENT);
    CHECK_RC(nv.nvmlDeviceGetMigMode(mig[0], &cur, &pend), NVML_ERROR_NOT_SUPPORTED);
    CHECK_RC(nv.nvmlDeviceGetMaxMigDeviceCount(mig[0], &u), NVML_ERROR_INVALID_ARGUMENT);
    CHECK_RC(nv.nvmlDeviceGetGpuInstanceId(mig[0], NULL), NVML_ERROR_INVALID_ARGUMENT);

    OK(nv.nvmlDeviceGetUUID(mig[1], buf, sizeof(buf)));
    CHECK(strcmp(buf, "MIG-3e9d7b1f-0c4a-5e2d-8b6f-1a9c7e5d3b20") == 0);
    OK(nv.nvmlDeviceGetHandleByUUID("MIG-3e9d7b1f-0c4a-5e2d-8b6f-1a9c7e5d3b20", &m));
    CHECK(m == mig[1]);
    OK(nv.nvmlDeviceGetHandleByUUID("MIG-GPU-2c3d4e5f-6071-8293-a4b5-c6d7e8f90a12/9/0", &m));
    CHECK(m == mig[2]);
    CHECK_RC(nv.nvmlDeviceGetHandleByUUID("MIG-GPU-2c3d4e5f-6071-8293-a4b5-c6d7e8f90a12/9/1", &m),
             NVML_ERROR_NOT_FOUND);
    OK(nv.nvmlDeviceGetName(mig[2], buf, sizeof(buf)));
    CHECK(strcmp(buf, "NVIDIA A100-SXM4-80GB MIG 1g.10gb") == 0);
    CHECK_RC(nv.nvmlDeviceGetMinorNumber(mig[0], &u), NVML_ERROR_NOT_SUPPORTED);
    CHECK_RC(nv.nvmlDeviceGetUtilizationRates(g2, &util), NVML_ERROR_NOT_SUPPORTED);
    CHECK_RC(nv.nvmlDeviceGetUtilizationRates(mig[0], &util), NVML_ERROR_NOT_SUPPORTED);

    OK(nv.nvmlDeviceGetMemoryInfo_v2(mig[0], &mem2));
    CHECK(mem2.total == 40192 * MiB && mem2.used == 2048 * MiB && mem2.reserved == 0);
    n = 4;
    OK(nv.nvmlDeviceGetComputeRunningProcesses_v3(mig[0], &n, p));
    CHECK(n == 1 && p[0].pid == 5100 && p[0].gpuInstanceId == 2 && p[0].computeInstanceId == 0);
    n = 4;
    OK(nv.nvmlDeviceGetComputeRunningProcesses_v3(mig[2], &n, p));
    CHECK(n == 0);
    n = 4;
    OK(nv.nvmlDeviceGetComputeRunningProcesses_v3(g2, &n, p));
    CHECK(n == 1);
    OK(nv.nvmlShutdown());
    /* MIG handles die with the session too. */
    CHECK_RC(nv.nvmlDeviceIsMigDeviceHandle(mig[0], &u), NVML_ERROR_UNINITIALIZED);

    /* After re-init with a config without MIG, old MIG handles are invalid arguments. */
    use_sample("1gpu.conf");
    OK(nv.nvmlInit_v2());
    CHECK_RC(nv.nvmlDeviceIsMigDeviceHandle(mig[0], &u), NVML_ERROR_INVALID_ARGUMENT);
    CHECK_RC(nv.nvmlDeviceGetMemoryInfo_v2(g2, &mem2), NVML_ERROR_INVALID_ARGUMENT);  /* GPU 2 is gone */
    OK(nv.nvmlShutdown());
}

/* Events: "xid", "lost" and "reset" lines appended to $FAKEGPU_EVENTS while NVML runs. */
static void append_event(const char *path, const char *line)
{
    FILE *f = fopen(path, "a");

    if (f == NULL) {
        perror(path);
        exit(1);
    }
    fputs(line, f);
    fclose(f);
}

static void test_events(void)
{
    struct gs_nvml_event_fns_ {
#define X(name, ret, params) gs_##name##_fn name;
        GS_NVML_EVENT_FUNCTIONS(X)
#undef X
    } ev;
    char path[256], line[256], uuid[96], uuid0[96];
    nvmlDevice_t d0, d1, mig, d;
    nvmlEventSet_t set, set2;
    nvmlEventData_t data;
    nvmlMemory_t mem;
    unsigned long long types;
    unsigned n;
    struct timespec t0, t1;

#define X(name, ret, params) *(void **)&ev.name = dlsym(g_lib, #name);
    GS_NVML_EVENT_FUNCTIONS(X)
#undef X
#define X(name, ret, params) CHECK(ev.name != NULL);
    GS_NVML_EVENT_FUNCTIONS(X)
#undef X
    if (ev.nvmlEventSetWait_v2 == NULL)
        return;
    snprintf(path, sizeof(path), "%s/events", g_tmpdir);
    unlink(path);
    setenv("FAKEGPU_EVENTS", path, 1);
    use_sample("8gpu-mig.conf");
    CHECK_RC(ev.nvmlEventSetCreate(&set), NVML_ERROR_UNINITIALIZED);
    OK(nv.nvmlInit_v2());
    OK(nv.nvmlDeviceGetHandleByIndex_v2(0, &d0));
    OK(nv.nvmlDeviceGetHandleByIndex_v2(2, &d1));  /* GPU 2: MIG on */
    OK(nv.nvmlDeviceGetMigDeviceHandleByIndex(d1, 1, &mig));
    OK(ev.nvmlDeviceGetSupportedEventTypes(d0, &types));
    CHECK((types & nvmlEventTypeXidCriticalError) != 0);
    CHECK_RC(ev.nvmlDeviceGetSupportedEventTypes(mig, &types), NVML_ERROR_NOT_SUPPORTED);
    CHECK_RC(ev.nvmlDeviceGetSupportedEventTypes(d0, NULL), NVML_ERROR_INVALID_ARGUMENT);
    CHECK_RC(ev.nvmlEventSetCreate(NULL), NVML_ERROR_INVALID_ARGUMENT);
    /* an event before the set exists is not delivered */
    OK(nv.nvmlDeviceGetUUID(d0, uuid, sizeof(uuid)));
    snprintf(line, sizeof(line), "xid %s 48\n", uuid);
    append_event(path, line);
    OK(ev.nvmlEventSetCreate(&set));
    OK(ev.nvmlDeviceRegisterEvents(d0, nvmlEventTypeXidCriticalError, set));
    OK(ev.nvmlDeviceRegisterEvents(d1, nvmlEventTypeXidCriticalError, set));
    CHECK_RC(ev.nvmlDeviceRegisterEvents(mig, nvmlEventTypeXidCriticalError, set), NVML_ERROR_NOT_SUPPORTED);
    CHECK_RC(ev.nvmlDeviceRegisterEvents(d0, 1ULL << 40, set), NVML_ERROR_NOT_SUPPORTED);
    CHECK_RC(ev.nvmlDeviceRegisterEvents(d0, nvmlEventTypeXidCriticalError, (nvmlEventSet_t)&data), NVML_ERROR_INVALID_ARGUMENT);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK_RC(ev.nvmlEventSetWait_v2(set, &data, 100), NVML_ERROR_TIMEOUT);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 >= 100);
    CHECK_RC(ev.nvmlEventSetWait_v2(set, NULL, 0), NVML_ERROR_INVALID_ARGUMENT);
    /* an XID on GPU 0, then one on a MIG device of GPU 2 (its instances named) */
    snprintf(line, sizeof(line), "xid %s 79\n", uuid);
    append_event(path, line);
    OK(ev.nvmlEventSetWait_v2(set, &data, 1000));
    CHECK(data.device == d0 && data.eventType == nvmlEventTypeXidCriticalError && data.eventData == 79);
    CHECK(data.gpuInstanceId == GS_NVML_INVALID_INSTANCE_ID && data.computeInstanceId == GS_NVML_INVALID_INSTANCE_ID);
    OK(nv.nvmlDeviceGetUUID(mig, uuid, sizeof(uuid)));
    snprintf(line, sizeof(line), "# a comment\nxid GPU-unknown 31\nxid %s 94\n", uuid);
    append_event(path, line);
    OK(ev.nvmlEventSetWait_v2(set, &data, 1000));
    CHECK(data.device == d1 && data.eventData == 94 && data.gpuInstanceId == 2 && data.computeInstanceId == 1);
    CHECK_RC(ev.nvmlEventSetWait_v2(set, &data, 0), NVML_ERROR_TIMEOUT);
    /* a second set sees only what comes after it */
    OK(ev.nvmlEventSetCreate(&set2));
    OK(ev.nvmlDeviceRegisterEvents(d1, nvmlEventTypeXidCriticalError, set2));
    /* GPU 0 falls off the bus: the waits say GPU_IS_LOST, its calls too, for a new process as well */
    OK(nv.nvmlDeviceGetUUID(d0, uuid, sizeof(uuid)));
    snprintf(uuid0, sizeof(uuid0), "%s", uuid);
    snprintf(line, sizeof(line), "lost %s\n", uuid);
    append_event(path, line);
    CHECK_RC(ev.nvmlEventSetWait_v2(set, &data, 1000), NVML_ERROR_GPU_IS_LOST);
    CHECK_RC(ev.nvmlEventSetWait_v2(set2, &data, 0), NVML_ERROR_TIMEOUT); /* set2 did not register GPU 0 */
    CHECK_RC(nv.nvmlDeviceGetMemoryInfo(d0, &mem), NVML_ERROR_GPU_IS_LOST);
    CHECK_RC(nv.nvmlDeviceGetHandleByIndex_v2(0, &d), NVML_ERROR_GPU_IS_LOST);
    CHECK_RC(nv.nvmlDeviceGetHandleByUUID(uuid, &d), NVML_ERROR_GPU_IS_LOST);
    OK(nv.nvmlDeviceGetMemoryInfo(d1, &mem));
    OK(nv.nvmlDeviceGetCount_v2(&n));
    CHECK(n == 8);
    /* the old unversioned wait fills only device, type and data */
    OK(nv.nvmlDeviceGetUUID(mig, uuid, sizeof(uuid)));
    snprintf(line, sizeof(line), "xid %s 13\n", uuid);
    append_event(path, line);
    memset(&data, 0x5a, sizeof(data));
    OK(ev.nvmlEventSetWait(set2, &data, 1000));
    CHECK(data.device == d1 && data.eventData == 13 && data.gpuInstanceId == 0x5a5a5a5a);
    OK(ev.nvmlEventSetFree(set));
    CHECK_RC(ev.nvmlEventSetFree(set), NVML_ERROR_INVALID_ARGUMENT);
    OK(ev.nvmlEventSetFree(set2));
    OK(nv.nvmlShutdown());
    OK(nv.nvmlInit_v2());
    CHECK_RC(nv.nvmlDeviceGetHandleByIndex_v2(0, &d), NVML_ERROR_GPU_IS_LOST);
    /* GPU 0 reset: it answers again (by UUID, and on its old handle), no event delivered */
    OK(ev.nvmlEventSetCreate(&set));
    OK(ev.nvmlDeviceRegisterEvents(d1, nvmlEventTypeXidCriticalError, set));
    snprintf(line, sizeof(line), "reset %s\n", uuid0);
    append_event(path, line);
    OK(nv.nvmlDeviceGetHandleByUUID(uuid0, &d));
    CHECK(d == d0);
    OK(nv.nvmlDeviceGetMemoryInfo(d0, &mem));
    CHECK_RC(ev.nvmlEventSetWait_v2(set, &data, 100), NVML_ERROR_TIMEOUT);
    OK(ev.nvmlEventSetFree(set));
    /* a row remapped, pending until a reset (the count stays); MIG handles and page retirement
     * (pre-Ampere) not supported */
    {
        unsigned corr = 9, unc = 9, pending = 9, failed = 9;
        nvmlEnableState_t st;
        OK(ev.nvmlDeviceGetRemappedRows(d0, &corr, &unc, &pending, &failed));
        CHECK(corr == 0 && unc == 0 && pending == 0 && failed == 0);
        snprintf(line, sizeof(line), "remap-pending %s\n", uuid0);
        append_event(path, line);
        OK(ev.nvmlDeviceGetRemappedRows(d0, &corr, &unc, &pending, &failed));
        CHECK(unc == 1 && pending == 1 && failed == 0);
        OK(ev.nvmlDeviceGetRemappedRows(d1, &corr, &unc, &pending, &failed));
        CHECK(unc == 0 && pending == 0);
        CHECK_RC(ev.nvmlDeviceGetRemappedRows(mig, &corr, &unc, &pending, &failed), NVML_ERROR_NOT_SUPPORTED);
        CHECK_RC(ev.nvmlDeviceGetRetiredPagesPendingStatus(d0, &st), NVML_ERROR_NOT_SUPPORTED);
        snprintf(line, sizeof(line), "reset %s\n", uuid0);
        append_event(path, line);
        OK(ev.nvmlDeviceGetRemappedRows(d0, &corr, &unc, &pending, &failed));
        CHECK(unc == 1 && pending == 0);
    }
    OK(nv.nvmlShutdown());
    unlink(path);
    unsetenv("FAKEGPU_EVENTS");
}

static void test_faults(void)
{
    char text[2048];
    nvmlDevice_t d;
    char buf[96];
    nvmlPciInfo_t pci;
    unsigned n;
    struct timespec t0, t1;
    nvmlReturn_t rc;
    const char *err;

    snprintf(text, sizeof(text), "%sfault init error driver_not_loaded\n", ONE_GPU_HEAD);
    use_text(text);
    CHECK_RC(nv.nvmlInit_v2(), NVML_ERROR_DRIVER_NOT_LOADED);
    CHECK_RC(nv.nvmlDeviceGetCount_v2(&n), NVML_ERROR_UNINITIALIZED);
    CHECK_RC(nv.nvmlShutdown(), NVML_ERROR_UNINITIALIZED);

    snprintf(text, sizeof(text), "%sfault nvmlInitWithFlags error NVML_ERROR_NO_PERMISSION\n", ONE_GPU_HEAD);
    use_text(text);
    CHECK_RC(nv.nvmlInitWithFlags(0), NVML_ERROR_NO_PERMISSION);
    OK(nv.nvmlInit_v2());
    OK(nv.nvmlShutdown());

    snprintf(text, sizeof(text),
             "%sfault nvmlDeviceGetUUID error gpu_is_lost\nfault nvmlDeviceGetPciInfo error 999\n"
             "fault nvmlDeviceGetCount_v2 error lib_rm_version_mismatch\n",
             ONE_GPU_HEAD);
    use_text(text);
    OK(nv.nvmlInit_v2());
    OK(nv.nvmlDeviceGetHandleByIndex_v2(0, &d));
    CHECK_RC(nv.nvmlDeviceGetUUID(d, buf, sizeof(buf)), NVML_ERROR_GPU_IS_LOST);
    OK(nv.nvmlDeviceGetName(d, buf, sizeof(buf)));
    CHECK_RC(nv.nvmlDeviceGetPciInfo_v3(d, &pci), NVML_ERROR_UNKNOWN);
    CHECK_RC(nv.nvmlDeviceGetPciInfo(d, &pci), NVML_ERROR_UNKNOWN);
    CHECK_RC(nv.nvmlDeviceGetCount_v2(&n), NVML_ERROR_LIB_RM_VERSION_MISMATCH);
    OK(nv.nvmlDeviceGetCount(&n));  /* exact name: only _v2 */
    OK(nv.nvmlShutdown());

    snprintf(text, sizeof(text), "%sfault init delay 60\n", ONE_GPU_HEAD);
    use_text(text);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    OK(nv.nvmlInit_v2());
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 >= 55);
    OK(nv.nvmlShutdown());

    /* crash and hang, in children */
    for (int hang = 0; hang <= 1; hang++) {
        pid_t pid;
        int status = 0;

        snprintf(text, sizeof(text), "%sfault init %s\n", ONE_GPU_HEAD, hang ? "hang" : "crash");
        use_text(text);
        fflush(stdout);
        pid = fork();
        if (pid == 0) {
            int devnull = open("/dev/null", O_WRONLY);

            dup2(devnull, 2);
            nv.nvmlInit_v2();
            _exit(0);
        }
        CHECK(pid > 0);
        if (hang) {
            struct timespec ts = { 0, 300 * 1000000L };

            nanosleep(&ts, NULL);
            CHECK(waitpid(pid, &status, WNOHANG) == 0);  /* still hanging */
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
        } else {
            waitpid(pid, &status, 0);
            CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
        }
    }

    /* unreadable / invalid configs: DRIVER_NOT_LOADED with a message, never a crash */
    setenv(FG_CONFIG_ENV, "/nonexistent/fakegpu.conf", 1);
    err = capture_stderr(nv.nvmlInit_v2, &rc);
    CHECK(rc == NVML_ERROR_DRIVER_NOT_LOADED);
    CHECK(strstr(err, "fakegpu: nvml: /nonexistent/fakegpu.conf: cannot open") != NULL);
    use_text("driver 580.159.04\ncuda 13.0\ngpu\n name X\n memory lots\n");
    err = capture_stderr(nv.nvmlInit_v2, &rc);
    CHECK(rc == NVML_ERROR_DRIVER_NOT_LOADED);
    CHECK(strstr(err, "gpus.conf:5: memory: bad size 'lots'") != NULL);
    use_text("cuda 13.0\n");
    err = capture_stderr(nv.nvmlInit_v2, &rc);
    CHECK(rc == NVML_ERROR_DRIVER_NOT_LOADED && strstr(err, "missing 'driver") != NULL);
    CHECK_RC(nv.nvmlDeviceGetCount_v2(&n), NVML_ERROR_UNINITIALIZED);
    unsetenv(FG_CONFIG_ENV);
}

/* ---- parser, directly (instrumented build) ---- */

static int parse_fails_with(const char *text, const char *needle)
{
    static struct fg_config cfg;
    char err[512] = "";

    if (fg_config_parse(text, "t", &cfg, err, sizeof(err)) == 0) {
        printf("# parsed unexpectedly: %s\n", text);
        return 0;
    }
    if (strstr(err, needle) == NULL) {
        printf("# error '%s' lacks '%s'\n", err, needle);
        return 0;
    }
    return 1;
}

static void test_parser(void)
{
    static struct fg_config cfg;
    char err[512], path[4096], big[4096];
    unsigned long long v = 0;

    CHECK(fg_parse_size("81559MiB", &v) == 0 && v == 81559 * MiB);
    CHECK(fg_parse_size("80GiB", &v) == 0 && v == 80ULL << 30);
    CHECK(fg_parse_size("4G", &v) == 0 && v == 4ULL << 30);
    CHECK(fg_parse_size("1GB", &v) == 0 && v == 1000000000ULL);
    CHECK(fg_parse_size("512K", &v) == 0 && v == 512 * 1024);
    CHECK(fg_parse_size("123", &v) == 0 && v == 123);
    CHECK(fg_parse_size("", &v) < 0);
    CHECK(fg_parse_size("-1", &v) < 0);
    CHECK(fg_parse_size("1.5GiB", &v) < 0);
    CHECK(fg_parse_size("1Gib", &v) < 0);
    CHECK(fg_parse_size("99999999999999999999", &v) < 0);
    CHECK(fg_parse_size("18014398509481984TiB", &v) < 0);  /* overflow */
    CHECK(fg_brand_from_name("tesla") == NVML_BRAND_TESLA);
    CHECK(fg_brand_from_name("GeForceRTX") == NVML_BRAND_GEFORCE_RTX);
    CHECK(fg_brand_from_name("Nvidia") == NVML_BRAND_NVIDIA);
    CHECK(fg_brand_from_name("bogus") == -1);
    CHECK(strcmp(fg_brand_name(NVML_BRAND_NVIDIA), "Nvidia") == 0);

    snprintf(path, sizeof(path), "%s/8gpu-mig.conf", g_confdir);
    CHECK(fg_config_load(path, &cfg, err, sizeof(err)) == 0);
    CHECK(cfg.ngpus == 8 && cfg.gpus[2].nmig == 3 && cfg.gpus[2].migs[1].ci == 1);
    CHECK(cfg.cuda == 13000 && strcmp(cfg.nvml_version, "13.580.159.04") == 0);
    snprintf(path, sizeof(path), "%s/1gpu.conf", g_confdir);
    CHECK(fg_config_load(path, &cfg, err, sizeof(err)) == 0);
    CHECK(cfg.ngpus == 1 && cfg.gpus[0].memory == 81559 * MiB && cfg.gpus[0].bus == 0 &&
          cfg.gpus[0].device == 6 && cfg.gpus[0].brand == NVML_BRAND_NVIDIA);
    snprintf(path, sizeof(path), "%s/2gpu.conf", g_confdir);
    CHECK(fg_config_load(path, &cfg, err, sizeof(err)) == 0);
    CHECK(cfg.nprocs == 2 && cfg.gpus[1].minor == 2 && cfg.gpus[1].bus == 0x86);
    CHECK(fg_config_load("/nonexistent", &cfg, err, sizeof(err)) < 0 && strstr(err, "cannot open") != NULL);

    CHECK(fg_config_parse("driver 1.2.3\ncuda 12040\n# only a comment\n\n", "t", &cfg, err, sizeof(err)) == 0);
    CHECK(cfg.cuda == 12040 && cfg.ngpus == 0);
    CHECK(fg_config_parse("driver 1.2.3  # trailing comment\ncuda 12.4\nnvml 12.99\n", "t", &cfg, err,
                          sizeof(err)) == 0);
    CHECK(strcmp(cfg.driver, "1.2.3") == 0 && cfg.cuda == 12040 && strcmp(cfg.nvml_version, "12.99") == 0);

    CHECK(parse_fails_with("cuda 13.0\n", "missing 'driver"));
    CHECK(parse_fails_with("driver 1\n", "missing 'cuda"));
    CHECK(parse_fails_with("driver 1\ncuda x\n", "t:2: cuda"));
    CHECK(parse_fails_with("driver 1\ncuda 13.0\nname X\n", "t:3: 'name' outside a gpu block"));
    CHECK(parse_fails_with("driver 1\ncuda 13.0\nbogus 1\n", "t:3:"));
    CHECK(parse_fails_with("driver 1\ncuda 13.0\ngpu 1\n", "numbered in order"));
    CHECK(parse_fails_with("driver 1\ncuda 13.0\ngpu\n name X\n", "required"));
    CHECK(parse_fails_with("driver 1\ncuda 13.0\ngpu\n uuid XYZ\n", "must start with GPU-"));
    CHECK(parse_fails_with("driver 1\ncuda 13.0\ngpu\n bus 3b:00.0\n", "bus:"));
    CHECK(parse_fails_with("driver 1\ncuda 13.0\ngpu\n arch 9\n", "arch:"));
    CHECK(parse_fails_with("driver 1\ncuda 13.0\ngpu\n brand Radeon\n", "unknown brand"));
    CHECK(parse_fails_with("driver 1\ncuda 13.0\ngpu\n mig maybe\n", "mig:"));
    CHECK(parse_fails_with("driver 1\ncuda 13.0\ngpu\n minor 254\n", "minor:"));
    CHECK(parse_fails_with("driver 1\ncuda 13.0\ngpu\n mig_device gi=1\n", "required"));
    CHECK(parse_fails_with("driver 1\ncuda 13.0\ngpu\n mig_device gi=1 ci=0 uuid=GPU-x memory=1G\n", "MIG-"));
    CHECK(parse_fails_with("driver 1\ncuda 13.0\ngpu\n mig_device gi\n", "key=value"));
    CHECK(parse_fails_with("driver 1\ncuda 13.0\nfault init\n", "fault:"));
    CHECK(parse_fails_with("driver 1\ncuda 13.0\nfault init explode\n", "unknown action"));
    CHECK(parse_fails_with("driver 1\ncuda 13.0\nfault init hang now\n", "unexpected argument"));
    CHECK(parse_fails_with("driver 1\ncuda 13.0\nprocess pid=1\n", "required"));
    CHECK(parse_fails_with("driver 1\ncuda 13.0\nprocess gpu=0 pid=1\n", "does not exist"));
    {
        char t[2048];

        snprintf(t, sizeof(t), "%s mig_device gi=1 ci=0 uuid=MIG-a memory=1G\n", ONE_GPU_HEAD);
        CHECK(parse_fails_with(t, "'mig on' is not set"));
        snprintf(t, sizeof(t), "%s mig on\n mig_device gi=1 ci=0 uuid=MIG-a memory=1G\n"
                               " mig_device gi=1 ci=0 uuid=MIG-b memory=1G\n", ONE_GPU_HEAD);
        CHECK(parse_fails_with(t, "given twice"));
        snprintf(t, sizeof(t), "%s mig on\n mig_max 2\n mig_device index=3 gi=1 ci=0 uuid=MIG-a memory=1G\n",
                 ONE_GPU_HEAD);
        CHECK(parse_fails_with(t, "index"));
        snprintf(t, sizeof(t), "%s%s", ONE_GPU_HEAD, ONE_GPU_HEAD);
        CHECK(parse_fails_with(t, "already used"));
        snprintf(t, sizeof(t), "%s reserved 81GiB\n", ONE_GPU_HEAD);
        CHECK(parse_fails_with(t, "exceed memory"));
        snprintf(t, sizeof(t), "%s mig on\n mig_device index=4 gi=1 ci=0 uuid=MIG-a memory=1G\n"
                               " mig_device gi=3 ci=0 uuid=MIG-b memory=1G\n", ONE_GPU_HEAD);
        CHECK(fg_config_parse(t, "t", &cfg, err, sizeof(err)) == 0);
        CHECK(cfg.gpus[0].migs[1].index == 5 && cfg.gpus[0].mig_max == 7);
        CHECK(strcmp(cfg.gpus[0].migs[0].profile, "1g.1gb") == 0);
    }
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    memcpy(big, "driver ", 7);
    CHECK(parse_fails_with(big, "too long"));

    /* Random garbage never crashes the parser. */
    srand(12345);
    for (int iter = 0; iter < 3000; iter++) {
        static const char *const words[] = {
            "driver", "cuda", "gpu", "name", "uuid", "bus", "minor", "memory", "arch", "brand", "mig",
            "mig_max", "mig_device", "process", "fault", "init", "error", "hang", "delay", "gi=1",
            "ci=", "uuid=MIG-x", "memory=1G", "=", "#", "\n", " ", "\t", "GPU-a", "0:0:0.0", "9.0",
            "on", "1", "-1", "99999999999999999999", "used=1", "pid=3", "gpu=0", "mig=0", "index=7",
        };
        char t[512];
        size_t len = 0;
        int nw = rand() % 40;

        t[0] = '\0';
        for (int w = 0; w < nw; w++) {
            const char *word = words[rand() % (int)(sizeof(words) / sizeof(words[0]))];

            if (len + strlen(word) + 2 >= sizeof(t))
                break;
            len += (size_t)snprintf(t + len, sizeof(t) - len, "%s%s", word, rand() % 3 ? " " : "\n");
        }
        (void)fg_config_parse(t, "fuzz", &cfg, err, sizeof(err));
    }
    nok++;
}

int main(int argc, char **argv)
{
    void *h;
    char cmd[512];

    if (argc != 3) {
        fprintf(stderr, "usage: %s LIBNVIDIA_ML CONFIG_DIR\n", argv[0]);
        return 2;
    }
    g_confdir = argv[2];
    if (mkdtemp(g_tmpdir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
        return 1;
    }
    g_lib = h;
#define X(name, ret, params)                                      \
    *(void **)&nv.name = dlsym(h, #name);                         \
    if (nv.name == NULL) {                                        \
        printf("not ok - %s is not exported\n", #name);           \
        nfail++;                                                  \
    }
    GS_NVML_FUNCTIONS(X)
#undef X
    if (nfail > 0)
        return 1;

    test_uninitialized();
    test_refcount();
    test_system_and_enumeration();
    test_device_queries();
    test_processes();
    test_mig_off();
    test_mig_on();
    test_faults();
    test_events();
    test_parser();

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", g_tmpdir);
    printf("# %d ok, %d not ok\n", nok, nfail);
    return nfail == 0 ? 0 : 1;
}
