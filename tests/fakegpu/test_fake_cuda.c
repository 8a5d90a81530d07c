/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Self-test of the fake libcuda.so.1: dlopen()s it (and the fake libnvidia-ml.so.1) and checks
 * init, devices, CUDA_VISIBLE_DEVICES, MIG enumeration, contexts, memory accounting (linear,
 * small sub-allocations, managed, host, VMM, pools, arrays, modules), copies, launches,
 * green contexts, the GPU time model (kernel durations, timelines, events, launch variants,
 * back-pressure, stream capture and graphs, the busy file), cuGetProcAddress, fault
 * injection, and the sharing of one simulated GPU between processes:
 * a second process sees less free memory, NVML lists both, and a process killed with
 * SIGKILL gives its memory back.
 *
 * Tests that need their own environment or config run in a child forked before this process
 * calls cuInit (CUDA does not survive fork after init, in the fake as on the real driver).
 *
 * usage: test_fake_cuda LIBCUDA LIBNVIDIA_ML CONFIG_DIR
 */
#define GS_CUDA_NO_PROTOTYPES
#define GS_NVML_NO_PROTOTYPES
#include "abi/cuda.h"
#include "abi/nvml.h"
#include "fakegpu_config.h"
#include "fakegpu_state.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "selftest.h"

static struct gs_cuda_fns cu;

static struct gs_nvml_fns nv;

static void *g_cuda;
static const char *g_confdir;
static char g_tmpdir[] = "/tmp/fakegpu-cuda-test.XXXXXX";

#define OK(expr) CHECK_RC(expr, CUDA_SUCCESS)
#define GiB (1024ULL * MiB)
#define HOLDER (256 * MiB + GiB)   /* what the holder process keeps on GPU 0 */

/* GPU 0: 8 GiB - 512 MiB reserved = 7.5 GiB for CUDA. GPU 1: 4 GiB, 1 GiB used by "other"
 * things and 512 MiB by a listed process: 2.5 GiB free for CUDA. */
static const char g_conf_main[] =
    "driver 580.159.04\n"
    "cuda 13.0\n"
    "context_memory 256MiB\n"
    "module_memory 2MiB\n"
    "gpu 0\n"
    "  name NVIDIA H100 80GB HBM3\n"
    "  uuid GPU-11111111-2222-3333-4444-555555555555\n"
    "  bus 00000000:3b:00.0\n"
    "  memory 8GiB\n"
    "  reserved 512MiB\n"
    "  arch 9.0\n"
    "gpu 1\n"
    "  name NVIDIA A100-SXM4-40GB\n"
    "  uuid GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee\n"
    "  memory 4GiB\n"
    "  used 1GiB\n"
    "  arch 8.0\n"
    "  sm_count 100\n"
    "process gpu=1 pid=4242 used=512MiB\n";

static const char g_conf_mig[] =
    "driver 580.159.04\n"
    "cuda 12.8\n"
    "gpu 0\n"
    "  name NVIDIA A100-SXM4-40GB\n"
    "  uuid GPU-aaaaaaaa-0000-0000-0000-000000000001\n"
    "  memory 40GiB\n"
    "  arch 8.0\n"
    "  mig on\n"
    "  mig_device gi=2 ci=0 uuid=MIG-bbbbbbbb-0000-0000-0000-000000000001 memory=20GiB profile=3g.20gb index=1\n"
    "  mig_device gi=1 ci=0 uuid=MIG-bbbbbbbb-0000-0000-0000-000000000002 memory=10GiB profile=2g.10gb index=0\n"
    "gpu 1\n"
    "  name NVIDIA A100-SXM4-40GB\n"
    "  uuid GPU-aaaaaaaa-0000-0000-0000-000000000002\n"
    "  memory 40GiB\n"
    "  arch 8.0\n"
    "  mig off\n";

static void write_conf(const char *name, const char *text)
{
    char path[512];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", g_tmpdir, name);
    f = fopen(path, "w");
    if (f == NULL) {
        perror(path);
        exit(1);
    }
    fputs(text, f);
    fclose(f);
    setenv(FG_CONFIG_ENV, path, 1);
}

/* Run fn in a child (before this process initialises CUDA); count its failures. */
static void run_child(const char *what, void (*fn)(void))
{
    pid_t pid;
    int st;

    fflush(stdout);
    pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(1);
    }
    if (pid == 0) {
        nfail = nok = 0;
        fn();
        fflush(stdout);
        _exit(nfail > 100 ? 100 : nfail);
    }
    if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st)) {
        printf("not ok - child %s died (status 0x%x)\n", what, st);
        nfail++;
        return;
    }
    nfail += WEXITSTATUS(st);
    if (WEXITSTATUS(st) == 0)
        nok++;
}

/* The mapping of the process that contains addr has permissions perms ("---p"). */
static int mapped_as(uintptr_t addr, const char *perms)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int found = 0;

    if (f == NULL)
        return 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        unsigned long lo, hi;
        char p[8];

        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, p) == 3 && addr >= lo && addr < hi) {
            found = strcmp(p, perms) == 0;
            break;
        }
    }
    fclose(f);
    return found;
}

static size_t cuda_free(void)
{
    size_t fr = 0, tot = 0;

    if (cu.cuMemGetInfo_v2(&fr, &tot) != CUDA_SUCCESS)
        return (size_t)-1;
    return fr;
}

/* ---------------------------------------------------------------------------------------- */

static void test_before_init(void)
{
    int v = 0, n = -1;
    CUdevice d;
    CUcontext c;
    CUdeviceptr p;
    void *fn = NULL;
    const char *s = NULL;

    write_conf("main.conf", g_conf_main);
    CHECK_RC(cu.cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
    CHECK_RC(cu.cuDeviceGet(&d, 0), CUDA_ERROR_NOT_INITIALIZED);
    CHECK_RC(cu.cuCtxGetCurrent(&c), CUDA_ERROR_NOT_INITIALIZED);
    CHECK_RC(cu.cuMemAlloc_v2(&p, 1), CUDA_ERROR_NOT_INITIALIZED);
    {
        CUdevResource r;

        CHECK_RC(cu.cuDeviceGetDevResource(0, &r, CU_DEV_RESOURCE_TYPE_SM), CUDA_ERROR_NOT_INITIALIZED);   /* seen */
    }
    OK(cu.cuDriverGetVersion(&v));
    CHECK(v == 13000);
    CHECK_RC(cu.cuDriverGetVersion(NULL), CUDA_ERROR_INVALID_VALUE);
    OK(cu.cuGetProcAddress_v2("cuInit", &fn, 13000, 0, NULL));
    CHECK(fn == dlsym(g_cuda, "cuInit"));
    OK(cu.cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &s));
    CHECK(s != NULL && strcmp(s, "out of memory") == 0);
    OK(cu.cuGetErrorName(CUDA_ERROR_INVALID_CONTEXT, &s));
    CHECK(s != NULL && strcmp(s, "CUDA_ERROR_INVALID_CONTEXT") == 0);
    CHECK_RC(cu.cuGetErrorString((CUresult)12345, &s), CUDA_ERROR_INVALID_VALUE);
    CHECK(s == NULL);
    CHECK_RC(cu.cuGetErrorName(CUDA_SUCCESS, NULL), CUDA_ERROR_INVALID_VALUE);
}

/* cuInit's own failures, in children. */
static void child_init_bad_config(void)
{
    setenv(FG_CONFIG_ENV, "/nonexistent/gpus.conf", 1);
    CHECK_RC(cu.cuInit(0), CUDA_ERROR_NO_DEVICE);
    CHECK_RC(cu.cuInit(0), CUDA_ERROR_NO_DEVICE);
    CHECK_RC(cu.cuDeviceGetCount(&(int){ 0 }), CUDA_ERROR_NOT_INITIALIZED);
}

static void child_init_fault(void)
{
    char text[sizeof(g_conf_main) + 128];

    snprintf(text, sizeof(text), "%sfault cuInit error CUDA_ERROR_SYSTEM_DRIVER_MISMATCH\n"
                                 "fault nvmlInit error driver_not_loaded\n", g_conf_main);
    write_conf("fault-init.conf", text);
    CHECK_RC(cu.cuInit(0), CUDA_ERROR_SYSTEM_DRIVER_MISMATCH);
}

static void child_call_faults(void)
{
    char text[sizeof(g_conf_main) + 256];
    CUcontext c;
    CUdeviceptr p;
    size_t fr, tot;

    snprintf(text, sizeof(text), "%sfault cuMemAlloc error out_of_memory\nfault cuMemGetInfo error 999\n"
                                 "fault cuLaunchKernel delay 1\n", g_conf_main);
    write_conf("fault-calls.conf", text);
    OK(cu.cuInit(0));
    OK(cu.cuDevicePrimaryCtxRetain(&c, 0));
    OK(cu.cuCtxSetCurrent(c));
    /* A fault on a base name covers every version of it (cuMemAlloc_v2). */
    CHECK_RC(cu.cuMemAlloc_v2(&p, 1 << 20), CUDA_ERROR_OUT_OF_MEMORY);
    CHECK_RC(cu.cuMemGetInfo_v2(&fr, &tot), CUDA_ERROR_UNKNOWN);
    CHECK_RC(cu.cuLaunchKernel_ptsz(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_HANDLE);
}

static void child_no_devices(void)
{
    write_conf("main.conf", g_conf_main);
    setenv("CUDA_VISIBLE_DEVICES", "", 1);
    CHECK_RC(cu.cuInit(0), CUDA_ERROR_NO_DEVICE);
}

static int visible_count(void)
{
    int n = -1;

    if (cu.cuDeviceGetCount(&n) != CUDA_SUCCESS)
        return -1;
    return n;
}

static void child_visible_reorder(void)
{
    char name[128];
    size_t tot;

    write_conf("main.conf", g_conf_main);
    setenv("CUDA_VISIBLE_DEVICES", "1,0", 1);
    OK(cu.cuInit(0));
    CHECK(visible_count() == 2);
    OK(cu.cuDeviceGetName(name, sizeof(name), 0));
    CHECK(strcmp(name, "NVIDIA A100-SXM4-40GB") == 0);
    OK(cu.cuDeviceTotalMem_v2(&tot, 1));
    CHECK(tot == 8 * GiB - 512 * MiB);
}

static void child_visible_uuid_and_stop(void)
{
    char name[128];

    write_conf("main.conf", g_conf_main);
    /* a UUID prefix selects; the list ends at the first invalid entry (here 7) */
    setenv("CUDA_VISIBLE_DEVICES", "GPU-aaaa,7,0", 1);
    OK(cu.cuInit(0));
    CHECK(visible_count() == 1);
    OK(cu.cuDeviceGetName(name, sizeof(name), 0));
    CHECK(strcmp(name, "NVIDIA A100-SXM4-40GB") == 0);
}

static void child_visible_digits(void)
{
    char name[128];
    size_t tot;

    write_conf("main.conf", g_conf_main);
    /* an index is its leading digits, as strtoul reads them ("1gpu2" is 1) */
    setenv("CUDA_VISIBLE_DEVICES", "1gpu2, 0x", 1);
    OK(cu.cuInit(0));
    CHECK(visible_count() == 2);
    OK(cu.cuDeviceGetName(name, sizeof(name), 0));
    CHECK(strcmp(name, "NVIDIA A100-SXM4-40GB") == 0);
    OK(cu.cuDeviceTotalMem_v2(&tot, 1));
    CHECK(tot == 8 * GiB - 512 * MiB);
}

static void child_visible_negative(void)
{
    char name[128];

    write_conf("main.conf", g_conf_main);
    /* a negative index ends the list (documented: 0,2,-1,1 shows devices 0 and 2) */
    setenv("CUDA_VISIBLE_DEVICES", "1,-1,0", 1);
    OK(cu.cuInit(0));
    CHECK(visible_count() == 1);
    OK(cu.cuDeviceGetName(name, sizeof(name), 0));
    CHECK(strcmp(name, "NVIDIA A100-SXM4-40GB") == 0);
}

static void child_visible_duplicate(void)
{
    write_conf("main.conf", g_conf_main);
    /* a device named twice: cuInit fails (driver 580.159.04 with "0,0": CUDA_ERROR_INVALID_DEVICE) */
    setenv("CUDA_VISIBLE_DEVICES", "0,0,1", 1);
    CHECK(cu.cuInit(0) == CUDA_ERROR_INVALID_DEVICE);
}

static void child_mig(void)
{
    char name[128];
    CUuuid u1, u2;
    size_t tot;
    int v;

    write_conf("mig.conf", g_conf_mig);
    OK(cu.cuInit(0));
    /* the MIG-enabled GPU shows its MIG devices (in MIG index order), then GPU 1 */
    CHECK(visible_count() == 3);
    OK(cu.cuDeviceGetName(name, sizeof(name), 0));
    CHECK(strcmp(name, "NVIDIA A100-SXM4-40GB MIG 2g.10gb") == 0);
    OK(cu.cuDeviceTotalMem_v2(&tot, 0));
    CHECK(tot == 10 * GiB);
    OK(cu.cuDeviceTotalMem_v2(&tot, 1));
    CHECK(tot == 20 * GiB);
    /* cuDeviceGetUuid reports the parent GPU, _v2 the MIG device */
    OK(cu.cuDeviceGetUuid(&u1, 0));
    OK(cu.cuDeviceGetUuid_v2(&u2, 0));
    CHECK((unsigned char)u1.bytes[0] == 0xaa && (unsigned char)u2.bytes[0] == 0xbb);
    CHECK((unsigned char)u2.bytes[15] == 0x02);
    OK(cu.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
    CHECK(v > 0 && v < 108);
    OK(cu.cuDriverGetVersion(&v));
    CHECK(v == 12080);
}

static void child_visible_mig_uuid(void)
{
    char name[128];

    write_conf("mig.conf", g_conf_mig);
    setenv("CUDA_VISIBLE_DEVICES", "MIG-bbbbbbbb-0000-0000-0000-000000000001", 1);
    OK(cu.cuInit(0));
    CHECK(visible_count() == 1);
    OK(cu.cuDeviceGetName(name, sizeof(name), 0));
    CHECK(strcmp(name, "NVIDIA A100-SXM4-40GB MIG 3g.20gb") == 0);
}

/* ---------------------------------------------------------------------------------------- */

static void test_devices(void)
{
    int n = -1, v = -1;
    CUdevice d = -1;
    char name[128], bus[32];
    CUuuid u;
    size_t tot;
    unsigned int t32;
    static const unsigned char want_uuid[16] = { 0x11, 0x11, 0x11, 0x11, 0x22, 0x22, 0x33, 0x33,
                                                 0x44, 0x44, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55 };

    CHECK_RC(cu.cuInit(1), CUDA_ERROR_INVALID_VALUE);
    OK(cu.cuInit(0));
    OK(cu.cuInit(0));
    CHECK_RC(cu.cuDeviceGetCount(NULL), CUDA_ERROR_INVALID_VALUE);
    OK(cu.cuDeviceGetCount(&n));
    CHECK(n == 2);
    CHECK_RC(cu.cuDeviceGet(NULL, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuDeviceGet(&d, 2), CUDA_ERROR_INVALID_DEVICE);
    CHECK_RC(cu.cuDeviceGet(&d, -1), CUDA_ERROR_INVALID_DEVICE);
    OK(cu.cuDeviceGet(&d, 1));
    CHECK(d == 1);
    OK(cu.cuDeviceGetName(name, sizeof(name), 0));
    CHECK(strcmp(name, "NVIDIA H100 80GB HBM3") == 0);
    OK(cu.cuDeviceGetName(name, 4, 0));
    CHECK(strcmp(name, "NVI") == 0);
    CHECK_RC(cu.cuDeviceGetName(name, 0, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuDeviceGetName(name, sizeof(name), 5), CUDA_ERROR_INVALID_DEVICE);
    OK(cu.cuDeviceGetUuid_v2(&u, 0));
    CHECK(memcmp(u.bytes, want_uuid, 16) == 0);
    OK(cu.cuDeviceGetUuid(&u, 0));
    CHECK(memcmp(u.bytes, want_uuid, 16) == 0);
    CHECK_RC(cu.cuDeviceGetUuid_v2(NULL, 0), CUDA_ERROR_INVALID_VALUE);
    OK(cu.cuDeviceTotalMem_v2(&tot, 0));
    CHECK(tot == 8 * GiB - 512 * MiB);
    OK(cu.cuDeviceTotalMem(&t32, 0));
    CHECK(t32 == 0xFFFFFFFFu);   /* clamped to 32 bits */
    OK(cu.cuDeviceTotalMem_v2(&tot, 1));
    CHECK(tot == 4 * GiB);
    OK(cu.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
    CHECK(v == 9);
    OK(cu.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 1));
    CHECK(v == 0);
    OK(cu.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
    CHECK(v == 132);
    OK(cu.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 1));
    CHECK(v == 100);
    OK(cu.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 0));
    CHECK(v == 0x3b);
    OK(cu.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, 0));
    CHECK(v == 0);
    OK(cu.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, 0));
    CHECK(v == 0);
    OK(cu.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0));
    CHECK(v == 32);
    CHECK_RC(cu.cuDeviceGetAttribute(&v, (CUdevice_attribute)100000, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuDeviceGetAttribute(NULL, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 9), CUDA_ERROR_INVALID_DEVICE);
    OK(cu.cuDeviceGetPCIBusId(bus, sizeof(bus), 0));
    CHECK(strcmp(bus, "0000:3b:00.0") == 0);
    CHECK_RC(cu.cuDeviceGetPCIBusId(bus, 12, 0), CUDA_ERROR_INVALID_VALUE);
    OK(cu.cuDeviceGetByPCIBusId(&d, "0000:3B:00.0"));
    CHECK(d == 0);
    OK(cu.cuDeviceGetByPCIBusId(&d, "3b:00.0"));
    CHECK(d == 0);
    CHECK_RC(cu.cuDeviceGetByPCIBusId(&d, "0000:ff:00.0"), CUDA_ERROR_INVALID_DEVICE);
    CHECK_RC(cu.cuDeviceGetByPCIBusId(&d, "junk"), CUDA_ERROR_INVALID_VALUE);
}

static void test_contexts(void)
{
    CUcontext c = NULL, c0 = NULL, c1 = NULL, cc = NULL;
    CUdevice d = -1;
    CUdeviceptr p;
    unsigned flags;
    int active = -1;
    size_t fr, tot, fr0;

    /* no current context */
    OK(cu.cuCtxGetCurrent(&c));
    CHECK(c == NULL);
    CHECK_RC(cu.cuCtxGetCurrent(NULL), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuCtxGetDevice(&d), CUDA_ERROR_INVALID_CONTEXT);
    CHECK_RC(cu.cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);
    CHECK_RC(cu.cuMemAlloc_v2(&p, 1 << 20), CUDA_ERROR_INVALID_CONTEXT);
    CHECK_RC(cu.cuMemGetInfo_v2(&fr, &tot), CUDA_ERROR_INVALID_CONTEXT);
    CHECK_RC(cu.cuCtxPopCurrent_v2(&c), CUDA_ERROR_INVALID_CONTEXT);
    CHECK_RC(cu.cuCtxPushCurrent_v2(NULL), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuCtxPushCurrent_v2((CUcontext)&d), CUDA_ERROR_INVALID_CONTEXT);

    /* primary contexts: refcounted, charged once */
    CHECK_RC(cu.cuDevicePrimaryCtxRelease_v2(0), CUDA_ERROR_INVALID_CONTEXT);
    CHECK_RC(cu.cuDevicePrimaryCtxRetain(NULL, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuDevicePrimaryCtxRetain(&c0, 7), CUDA_ERROR_INVALID_DEVICE);
    OK(cu.cuDevicePrimaryCtxGetState(0, &flags, &active));
    CHECK(active == 0);
    OK(cu.cuDevicePrimaryCtxRetain(&c0, 0));
    OK(cu.cuDevicePrimaryCtxRetain(&c, 0));
    CHECK(c == c0);
    OK(cu.cuDevicePrimaryCtxGetState(0, &flags, &active));
    CHECK(active == 1);
    CHECK_RC(cu.cuMemAlloc_v2(&p, 1 << 20), CUDA_ERROR_INVALID_CONTEXT);   /* retained, not current */
    OK(cu.cuCtxSetCurrent(c0));
    OK(cu.cuCtxGetDevice(&d));
    CHECK(d == 0);
    OK(cu.cuCtxGetDevice_v2(&d, NULL));
    CHECK(d == 0);
    OK(cu.cuCtxSynchronize());
    OK(cu.cuMemGetInfo_v2(&fr0, &tot));
    CHECK(tot == 8 * GiB - 512 * MiB);
    CHECK(fr0 == tot - 256 * MiB - HOLDER);   /* the context costs context_memory */
    OK(cu.cuMemGetInfo_v2(NULL, NULL));   /* accepted, like the real driver */
    OK(cu.cuDevicePrimaryCtxRelease(0));   /* 2 -> 1: still active */
    OK(cu.cuDevicePrimaryCtxGetState(0, &flags, &active));
    CHECK(active == 1);

    /* created contexts push themselves, cost context_memory, and take their memory along */
    CHECK_RC(cu.cuCtxDestroy_v2(c0), CUDA_ERROR_INVALID_CONTEXT);   /* a primary context */
    CHECK_RC(cu.cuCtxCreate_v2(&cc, 0, 5), CUDA_ERROR_INVALID_DEVICE);
    CHECK_RC(cu.cuCtxCreate_v2(NULL, 0, 0), CUDA_ERROR_INVALID_VALUE);
    OK(cu.cuCtxCreate_v4(&cc, NULL, 0, 0));
    OK(cu.cuCtxGetCurrent(&c));
    CHECK(c == cc);
    CHECK(cuda_free() == fr0 - 256 * MiB);
    OK(cu.cuMemAlloc_v2(&p, 100 * MiB));
    CHECK(cuda_free() == fr0 - 256 * MiB - 100 * MiB);
    OK(cu.cuCtxDestroy_v2(cc));
    OK(cu.cuCtxGetCurrent(&c));
    CHECK(c == c0);                     /* popped back to the primary context */
    CHECK(cuda_free() == fr0);          /* context and its 100 MiB gone */
    CHECK_RC(cu.cuMemFree_v2(p), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuCtxDestroy_v2(cc), CUDA_ERROR_INVALID_CONTEXT);

    /* stack: push / pop / set */
    OK(cu.cuCtxCreate_v2(&c1, 0, 1));
    OK(cu.cuCtxGetDevice(&d));
    CHECK(d == 1);
    OK(cu.cuCtxPushCurrent_v2(c0));
    OK(cu.cuCtxGetDevice(&d));
    CHECK(d == 0);
    OK(cu.cuCtxPopCurrent_v2(&c));
    CHECK(c == c0);
    OK(cu.cuCtxGetCurrent(&c));
    CHECK(c == c1);
    OK(cu.cuCtxSetCurrent(NULL));       /* unbinds the top */
    OK(cu.cuCtxGetCurrent(&c));
    CHECK(c == c0);
    OK(cu.cuCtxDestroy(c1));

    /* released primary context: still current, but destroyed */
    OK(cu.cuMemAlloc_v2(&p, 64 * MiB));
    OK(cu.cuDevicePrimaryCtxRelease_v2(0));
    OK(cu.cuDevicePrimaryCtxGetState(0, &flags, &active));
    CHECK(active == 0);
    OK(cu.cuCtxGetCurrent(&c));
    CHECK(c == c0);
    CHECK_RC(cu.cuMemAlloc_v2(&p, MiB), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    CHECK_RC(cu.cuCtxSynchronize(), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    CHECK_RC(cu.cuMemGetInfo_v2(&fr, &tot), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    OK(cu.cuCtxGetDevice(&d));
    CHECK_RC(cu.cuDevicePrimaryCtxRelease_v2(0), CUDA_ERROR_INVALID_CONTEXT);

    /* reset: frees everything, deactivates, keeps the retain count */
    OK(cu.cuDevicePrimaryCtxRetain(&c, 0));
    CHECK(c == c0);
    CHECK(cuda_free() == fr0);          /* the 64 MiB went with the release */
    OK(cu.cuMemAlloc_v2(&p, 64 * MiB));
    OK(cu.cuDevicePrimaryCtxReset_v2(0));
    OK(cu.cuDevicePrimaryCtxGetState(0, &flags, &active));
    CHECK(active == 0);
    CHECK_RC(cu.cuMemAlloc_v2(&p, MiB), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    OK(cu.cuDevicePrimaryCtxRetain(&c, 0));   /* reactivates */
    CHECK(cuda_free() == fr0);
    OK(cu.cuDevicePrimaryCtxRelease_v2(0));
    OK(cu.cuDevicePrimaryCtxRelease_v2(0));
    CHECK_RC(cu.cuDevicePrimaryCtxRelease_v2(0), CUDA_ERROR_INVALID_CONTEXT);
    while (cu.cuCtxPopCurrent_v2(&c) == CUDA_SUCCESS)
        ;
}

/* ---------------------------------------------------------------------------------------- */
/* Green contexts: the answers of driver 580.159.04 on an H100 (fake_cuda_green.c)           */
/* ---------------------------------------------------------------------------------------- */

#define SM CU_DEV_RESOURCE_TYPE_SM
#define RES_CONFIG CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION

static int res_is(const CUdevResource *r, unsigned sms, unsigned min, unsigned align)
{
    if (r->type == SM && r->sm.smCount == sms && r->sm.minSmPartitionSize == min &&
        r->sm.smCoscheduledAlignment == align)
        return 1;
    printf("# resource: type %d, %u SMs, min %u, alignment %u; wanted %u SMs, min %u, alignment %u\n",
           (int)r->type, r->sm.smCount, r->sm.minSmPartitionSize, r->sm.smCoscheduledAlignment, sms, min, align);
    return 0;
}

/* One group of minCount from input: want SMs in it, left SMs remaining (0: a zeroed remaining). */
static void split_one(const CUdevResource *input, unsigned flags, unsigned min_count, unsigned want, unsigned left)
{
    CUdevResource g, rem;
    unsigned n = 1;

    memset(&rem, 0xab, sizeof(rem));
    CHECK_RC(cu.cuDevSmResourceSplitByCount(&g, &n, input, &rem, flags, min_count), CUDA_SUCCESS);
    CHECK(n == 1);
    CHECK(res_is(&g, want, 0, 0));   /* split results report no minimum / alignment (seen) */
    if (left > 0) {
        CHECK(res_is(&rem, left, 0, 0));
    } else {
        CUdevResource zero;

        memset(&zero, 0, sizeof(zero));
        CHECK(memcmp(&rem, &zero, sizeof(rem)) == 0);
    }
}

/* The device's SM resource: the config's SMs, minimum and alignment by architecture */
static void green_device_resources(CUdevResource *all, CUdevResource *a100)
{
    CHECK_RC(cu.cuDeviceGetDevResource(0, NULL, SM), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuDeviceGetDevResource(7, all, SM), CUDA_ERROR_INVALID_DEVICE);
    CHECK_RC(cu.cuDeviceGetDevResource(-1, all, SM), CUDA_ERROR_INVALID_DEVICE);
    CHECK_RC(cu.cuDeviceGetDevResource(0, all, CU_DEV_RESOURCE_TYPE_INVALID), CUDA_ERROR_INVALID_RESOURCE_TYPE);
    CHECK_RC(cu.cuDeviceGetDevResource(0, all, (CUdevResourceType)2), CUDA_ERROR_INVALID_RESOURCE_TYPE);
    OK(cu.cuDeviceGetDevResource(0, all, SM));
    CHECK(res_is(all, 132, 8, 8));           /* H100 (arch 9.0 default): 132, 8, 8 (seen) */
    OK(cu.cuDeviceGetDevResource(1, a100, SM));
    CHECK(res_is(a100, 100, 4, 2));          /* arch 8.0, sm_count 100: cuda.h's guideline */
}

/* Splits: minCount rounds up to a multiple of 8, at least 8 (seen); the flags */
static void green_split_sizes(const CUdevResource *all, const CUdevResource *a100)
{
    split_one(all, 0, 26, 32, 100);
    split_one(all, 0, 1, 8, 124);
    split_one(all, 0, 0, 8, 124);
    split_one(all, 0, 9, 16, 116);
    split_one(all, 0, 64, 64, 68);
    split_one(all, 0, 66, 72, 60);
    split_one(all, 0, 124, 128, 4);
    split_one(all, 0, 128, 128, 4);
    split_one(all, 0, 129, 132, 0);          /* past the aligned 128: the whole input */
    split_one(all, 0, 132, 132, 0);
    split_one(a100, 0, 26, 26, 74);
    split_one(a100, 0, 1, 4, 96);
    /* flags: IGNORE_SM_COSCHEDULING lowers minimum and alignment to 2; others change nothing */
    split_one(all, CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING, 1, 2, 130);
    split_one(all, CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING, 3, 4, 128);
    split_one(all, CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING, 26, 26, 106);
    split_one(all, CU_DEV_SM_RESOURCE_SPLIT_MAX_POTENTIAL_CLUSTER_SIZE, 26, 32, 100);
    split_one(all, 8, 3, 8, 124);
}

/* Splits past the input, and how many groups a split makes */
static void green_split_counts(const CUdevResource *all)
{
    CUdevResource r[20], rem, untouched;
    unsigned n;

    /* past the input: INVALID_RESOURCE_CONFIGURATION, nothing written */
    n = 1;
    memset(&rem, 0xab, sizeof(rem));
    memset(&untouched, 0xab, sizeof(untouched));
    CHECK_RC(cu.cuDevSmResourceSplitByCount(r, &n, all, &rem, 0, 133), RES_CONFIG);
    CHECK(n == 1 && memcmp(&rem, &untouched, sizeof(rem)) == 0);
    n = 77;
    CHECK_RC(cu.cuDevSmResourceSplitByCount(NULL, &n, all, NULL, 0, 133), RES_CONFIG);
    CHECK(n == 77);
    CHECK_RC(cu.cuDevSmResourceSplitByCount(NULL, &n, all, NULL, 0, 0xFFFFFFFFu), RES_CONFIG);
    /* how many groups: result NULL counts them; at most 15 (seen: 15 of 8 and 12 remaining) */
    n = 0;
    OK(cu.cuDevSmResourceSplitByCount(NULL, &n, all, NULL, 0, 8));
    CHECK(n == 15);
    OK(cu.cuDevSmResourceSplitByCount(NULL, &n, all, NULL, 0, 16));
    CHECK(n == 8);
    OK(cu.cuDevSmResourceSplitByCount(NULL, &n, all, NULL, 0, 26));
    CHECK(n == 4);
    OK(cu.cuDevSmResourceSplitByCount(NULL, &n, all, NULL, 0, 66));
    CHECK(n == 1);
    n = 20;
    OK(cu.cuDevSmResourceSplitByCount(r, &n, all, &rem, 0, 8));
    CHECK(n == 15 && res_is(&r[0], 8, 0, 0) && res_is(&r[14], 8, 0, 0) && res_is(&rem, 12, 0, 0));
    n = 20;
    OK(cu.cuDevSmResourceSplitByCount(r, &n, all, &rem, 0, 26));
    CHECK(n == 4 && res_is(&r[3], 32, 0, 0) && res_is(&rem, 4, 0, 0));
    n = 2;                                   /* fewer groups than fit: the rest remains */
    OK(cu.cuDevSmResourceSplitByCount(r, &n, all, &rem, 0, 32));
    CHECK(n == 2 && res_is(&r[1], 32, 0, 0) && res_is(&rem, 68, 0, 0));
    n = 1;                                   /* remaining may be NULL */
    OK(cu.cuDevSmResourceSplitByCount(r, &n, all, NULL, 0, 26));
    CHECK(n == 1 && res_is(&r[0], 32, 0, 0));
}

/* Splits with bad arguments, and of a group or a remaining */
static void green_split_errors(const CUdevResource *all)
{
    CUdevResource r[20], rem, bad, got;
    unsigned n, m;

    /* bad arguments (seen) */
    CHECK_RC(cu.cuDevSmResourceSplitByCount(r, NULL, all, &rem, 0, 8), CUDA_ERROR_INVALID_VALUE);
    n = 1;
    CHECK_RC(cu.cuDevSmResourceSplitByCount(r, &n, NULL, &rem, 0, 8), CUDA_ERROR_INVALID_VALUE);
    n = 0;
    CHECK_RC(cu.cuDevSmResourceSplitByCount(r, &n, all, &rem, 0, 8), CUDA_ERROR_INVALID_VALUE);
    n = 1;
    memset(&bad, 0, sizeof(bad));
    CHECK_RC(cu.cuDevSmResourceSplitByCount(r, &n, &bad, &rem, 0, 8), CUDA_ERROR_INVALID_RESOURCE_TYPE);
    bad = *all;
    bad.type = (CUdevResourceType)2;
    CHECK_RC(cu.cuDevSmResourceSplitByCount(r, &n, &bad, &rem, 0, 8), CUDA_ERROR_INVALID_RESOURCE_TYPE);
    bad = *all;
    bad.sm.smCount = 64;                     /* edited by the caller */
    CHECK_RC(cu.cuDevSmResourceSplitByCount(r, &n, &bad, &rem, 0, 8), RES_CONFIG);
    n = 2;                                   /* a group or a remaining cannot be split again */
    OK(cu.cuDevSmResourceSplitByCount(r, &n, all, &rem, 0, 32));
    m = 1;
    CHECK_RC(cu.cuDevSmResourceSplitByCount(&got, &m, &r[0], NULL, 0, 8), RES_CONFIG);
    CHECK_RC(cu.cuDevSmResourceSplitByCount(&got, &m, &rem, NULL, 0, 8), RES_CONFIG);
}

/* Descriptors: of a 32-SM group (desc), of the whole device (whole), of the same group twice (d2) */
static void green_descriptors(CUdevResource *all, const CUdevResource *a100, CUdevResourceDesc *desc_out,
                              CUdevResourceDesc *whole_out, CUdevResourceDesc *d2_out)
{
    CUdevResource r[20], rem, bad, two[2];
    CUdevResourceDesc desc = NULL, whole = NULL, d2 = NULL;
    unsigned n;

    n = 1;
    OK(cu.cuDevSmResourceSplitByCount(r, &n, all, &rem, 0, 26));
    CHECK_RC(cu.cuDevResourceGenerateDesc(NULL, r, 1), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuDevResourceGenerateDesc(&desc, NULL, 1), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuDevResourceGenerateDesc(&desc, r, 0), CUDA_ERROR_INVALID_VALUE);   /* real: crash */
    memset(&bad, 0, sizeof(bad));
    CHECK_RC(cu.cuDevResourceGenerateDesc(&desc, &bad, 1), CUDA_ERROR_INVALID_RESOURCE_TYPE);
    bad = r[0];
    bad.sm.smCount = 8;
    CHECK_RC(cu.cuDevResourceGenerateDesc(&desc, &bad, 1), RES_CONFIG);
    two[0] = r[0];
    two[1] = *a100;                          /* two devices */
    CHECK_RC(cu.cuDevResourceGenerateDesc(&desc, two, 2), RES_CONFIG);
    CHECK(desc == NULL);
    OK(cu.cuDevResourceGenerateDesc(&desc, r, 1));
    OK(cu.cuDevResourceGenerateDesc(&whole, all, 1));
    two[0] = r[0];
    two[1] = r[0];                           /* the same group twice counts once */
    OK(cu.cuDevResourceGenerateDesc(&d2, two, 2));
    CHECK(desc != NULL && whole != NULL && d2 != NULL && desc != whole && desc != d2);
    *desc_out = desc;
    *whole_out = whole;
    *d2_out = d2;
}

/* A green context from desc, its CUcontext (*ctx_out) and resources; leaves the primary context
 * retained (*prim_out) and nothing current. */
static CUgreenCtx green_create(CUdevResourceDesc desc, CUcontext *ctx_out, CUcontext *prim_out)
{
    CUdevResource got, bad;
    CUgreenCtx green = NULL;
    CUcontext ctx = NULL, c2 = NULL, cur = NULL, prim = NULL;
    unsigned flags;
    int active = -1;

    memset(&bad, 0, sizeof(bad));            /* not a descriptor: passed as one below */
    OK(cu.cuDevicePrimaryCtxGetState(0, &flags, &active));
    CHECK(active == 0);
    CHECK_RC(cu.cuGreenCtxCreate(NULL, desc, 0, CU_GREEN_CTX_DEFAULT_STREAM), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuGreenCtxCreate(&green, desc, 0, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuGreenCtxCreate(&green, desc, 0, 3), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuGreenCtxCreate(&green, desc, 7, CU_GREEN_CTX_DEFAULT_STREAM), CUDA_ERROR_INVALID_DEVICE);
    CHECK_RC(cu.cuGreenCtxCreate(&green, desc, 1, CU_GREEN_CTX_DEFAULT_STREAM), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuGreenCtxCreate(&green, (CUdevResourceDesc)&bad, 0, CU_GREEN_CTX_DEFAULT_STREAM),
             CUDA_ERROR_INVALID_VALUE);
    CHECK(green == NULL);
    OK(cu.cuGreenCtxCreate(&green, desc, 0, CU_GREEN_CTX_DEFAULT_STREAM));
    CHECK(green != NULL);
    OK(cu.cuDevicePrimaryCtxGetState(0, &flags, &active));
    CHECK(active == 1);                      /* it retains the primary context (seen) */
    OK(cu.cuCtxGetCurrent(&cur));
    CHECK(cur == NULL);                      /* and is not made current (seen) */
    OK(cu.cuGreenCtxGetDevResource(green, &got, SM));
    CHECK(res_is(&got, 32, 8, 8));
    CHECK_RC(cu.cuGreenCtxGetDevResource(green, NULL, SM), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuGreenCtxGetDevResource(green, &got, CU_DEV_RESOURCE_TYPE_INVALID), CUDA_ERROR_INVALID_RESOURCE_TYPE);
    CHECK_RC(cu.cuGreenCtxGetDevResource(NULL, &got, SM), CUDA_ERROR_INVALID_CONTEXT);
    CHECK_RC(cu.cuCtxFromGreenCtx(NULL, green), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuCtxFromGreenCtx(&ctx, NULL), CUDA_ERROR_INVALID_CONTEXT);
    OK(cu.cuCtxFromGreenCtx(&ctx, green));
    OK(cu.cuCtxFromGreenCtx(&c2, green));
    CHECK(ctx != NULL && ctx == c2);
    OK(cu.cuDevicePrimaryCtxRetain(&prim, 0));
    CHECK(prim != ctx);
    /* the resource of a context: its partition, or the whole device */
    OK(cu.cuCtxGetDevResource(ctx, &got, SM));
    CHECK(res_is(&got, 32, 8, 8));
    OK(cu.cuCtxGetDevResource(prim, &got, SM));
    CHECK(res_is(&got, 132, 8, 8));
    CHECK_RC(cu.cuCtxGetDevResource(NULL, &got, SM), CUDA_ERROR_INVALID_CONTEXT);
    CHECK_RC(cu.cuCtxGetDevResource(ctx, NULL, SM), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuCtxGetDevResource(ctx, &got, CU_DEV_RESOURCE_TYPE_INVALID), CUDA_ERROR_INVALID_RESOURCE_TYPE);
    CHECK_RC(cu.cuCtxGetDevResource((CUcontext)&got, &got, SM), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    *ctx_out = ctx;
    *prim_out = prim;
    return green;
}

/* The green context current: what the device reports, a resplit, work in it. Returns the CUDA
 * free memory before its 64 MiB allocation. */
static size_t green_current(CUcontext ctx)
{
    CUdevResource got;
    CUcontext cur = NULL;
    CUdevice d = -1;
    CUdeviceptr p;
    int v = 0;
    size_t fr0;

    /* current: the device still reports all its SMs */
    OK(cu.cuCtxSetCurrent(ctx));
    OK(cu.cuCtxGetCurrent(&cur));
    CHECK(cur == ctx);
    OK(cu.cuCtxGetDevice(&d));
    CHECK(d == 0);
    OK(cu.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
    CHECK(v == 132);
    OK(cu.cuDeviceGetDevResource(0, &got, SM));
    CHECK(res_is(&got, 132, 8, 8));
    CHECK_RC(cu.cuCtxGetDevResource(NULL, &got, SM), CUDA_ERROR_INVALID_CONTEXT);   /* even when current */
    /* a green context's resource can be split again */
    OK(cu.cuCtxGetDevResource(ctx, &got, SM));
    split_one(&got, 0, 8, 8, 24);
    /* work in it: memory is the primary context's */
    fr0 = cuda_free();
    OK(cu.cuMemAlloc_v2(&p, 64 * MiB));
    CHECK(cuda_free() == fr0 - 64 * MiB);
    OK(cu.cuCtxSynchronize());
    CHECK_RC(cu.cuCtxDestroy_v2(ctx), CUDA_ERROR_INVALID_CONTEXT);   /* seen */
    OK(cu.cuCtxPushCurrent_v2(ctx));
    OK(cu.cuCtxPopCurrent_v2(&cur));
    CHECK(cur == ctx);
    return fr0;
}

/* The whole device, by its resource or by a NULL descriptor; the same group twice */
static void green_whole_device(CUdevResourceDesc whole, CUdevResourceDesc d2)
{
    CUdevResource got;
    CUgreenCtx g2 = NULL;

    OK(cu.cuGreenCtxCreate(&g2, whole, 0, CU_GREEN_CTX_DEFAULT_STREAM));
    OK(cu.cuGreenCtxGetDevResource(g2, &got, SM));
    CHECK(res_is(&got, 132, 8, 8));
    OK(cu.cuGreenCtxDestroy(g2));
    OK(cu.cuGreenCtxCreate(&g2, NULL, 0, CU_GREEN_CTX_DEFAULT_STREAM));
    OK(cu.cuGreenCtxGetDevResource(g2, &got, SM));
    CHECK(res_is(&got, 132, 8, 8));
    OK(cu.cuGreenCtxDestroy(g2));
    OK(cu.cuGreenCtxCreate(&g2, d2, 0, CU_GREEN_CTX_DEFAULT_STREAM));
    OK(cu.cuGreenCtxGetDevResource(g2, &got, SM));
    CHECK(res_is(&got, 32, 8, 8));
    OK(cu.cuGreenCtxDestroy(g2));
}

/* Destroyed: still current, everything in it CONTEXT_IS_DESTROYED (seen) */
static void green_destroyed(CUgreenCtx green, CUcontext ctx)
{
    CUdevResource got;
    CUcontext c2 = NULL, cur = NULL;
    CUdeviceptr p;

    CHECK_RC(cu.cuGreenCtxDestroy(NULL), CUDA_ERROR_INVALID_CONTEXT);
    OK(cu.cuGreenCtxDestroy(green));
    OK(cu.cuCtxGetCurrent(&cur));
    CHECK(cur == ctx);
    CHECK_RC(cu.cuMemAlloc_v2(&p, MiB), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    CHECK_RC(cu.cuCtxGetDevResource(ctx, &got, SM), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    CHECK_RC(cu.cuCtxFromGreenCtx(&c2, green), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    CHECK_RC(cu.cuGreenCtxGetDevResource(green, &got, SM), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    CHECK_RC(cu.cuGreenCtxDestroy(green), CUDA_ERROR_CONTEXT_IS_DESTROYED);
}

/* The 64 MiB stay with the primary context until its last release; then nothing current */
static void green_primary_release(CUcontext prim, size_t fr0)
{
    CUcontext cur = NULL;
    unsigned flags;
    int active = -1;

    OK(cu.cuCtxSetCurrent(prim));
    CHECK(cuda_free() == fr0 - 64 * MiB);
    OK(cu.cuDevicePrimaryCtxRelease_v2(0));
    OK(cu.cuDevicePrimaryCtxGetState(0, &flags, &active));
    CHECK(active == 0);
    OK(cu.cuDevicePrimaryCtxRetain(&prim, 0));
    CHECK(cuda_free() == fr0);
    OK(cu.cuDevicePrimaryCtxRelease_v2(0));
    while (cu.cuCtxPopCurrent_v2(&cur) == CUDA_SUCCESS)
        ;
}

/* Starts and ends with no context retained or current. */
static void test_green_contexts(void)
{
    CUdevResource all, a100;
    CUdevResourceDesc desc = NULL, whole = NULL, d2 = NULL;
    CUgreenCtx green;
    CUcontext ctx = NULL, prim = NULL;
    size_t fr0;

    CHECK(sizeof(CUdevResource) == 144 && offsetof(CUdevResource, sm) == 96);
    green_device_resources(&all, &a100);
    green_split_sizes(&all, &a100);
    green_split_counts(&all);
    green_split_errors(&all);
    green_descriptors(&all, &a100, &desc, &whole, &d2);
    green = green_create(desc, &ctx, &prim);
    fr0 = green_current(ctx);
    green_whole_device(whole, d2);
    green_destroyed(green, ctx);
    green_primary_release(prim, fr0);
}

/* Leaves the primary context of device 0 retained and current. */
static void test_linear_memory(void)
{
    CUcontext c;
    CUdeviceptr p, q, ps[16], big[4];
    size_t fr0, pitch, tot;
    unsigned int u1, u2;
    gs_CUdeviceptr_v1 lp;
    void *hp;
    char buf[64];
    int i;

    OK(cu.cuDevicePrimaryCtxRetain(&c, 0));
    OK(cu.cuCtxSetCurrent(c));
    fr0 = cuda_free();
    CHECK(fr0 == 8 * GiB - 512 * MiB - 256 * MiB - HOLDER);

    CHECK_RC(cu.cuMemAlloc_v2(&p, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuMemAlloc_v2(NULL, 1), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuMemAlloc_v2(&p, (size_t)1 << 50), CUDA_ERROR_OUT_OF_MEMORY);

    /* 1 byte costs a 2 MiB page; small allocations share it, 512-byte aligned */
    OK(cu.cuMemAlloc_v2(&p, 1));
    CHECK(p % (2 * MiB) == 0);
    CHECK(cuda_free() == fr0 - 2 * MiB);
    CHECK(mapped_as((uintptr_t)p, "---p"));   /* never host memory */
    for (i = 0; i < 16; i++)
        OK(cu.cuMemAlloc_v2(&ps[i], 1000));
    CHECK(ps[1] - ps[0] == 1024);
    CHECK(cuda_free() == fr0 - 2 * MiB);
    for (i = 0; i < 16; i++)
        OK(cu.cuMemFree_v2(ps[i]));
    OK(cu.cuMemFree_v2(p));
    CHECK(cuda_free() == fr0);           /* the chunk goes when its last piece does */

    /* big allocations round to 2 MiB, do not overlap */
    OK(cu.cuMemAlloc_v2(&p, 3 * MiB));
    OK(cu.cuMemAlloc_v2(&q, 64 * MiB));
    CHECK(cuda_free() == fr0 - 68 * MiB);
    CHECK(q >= p + 4 * MiB || p >= q + 64 * MiB);
    CHECK(mapped_as((uintptr_t)q + 63 * MiB, "---p"));
    CHECK_RC(cu.cuMemFree_v2(q + 16), CUDA_ERROR_INVALID_VALUE);   /* interior */
    OK(cu.cuMemFree_v2(q));
    CHECK_RC(cu.cuMemFree_v2(q), CUDA_ERROR_INVALID_VALUE);        /* double free */
    CHECK_RC(cu.cuMemFree_v2(0x12345000), CUDA_ERROR_INVALID_VALUE);
    OK(cu.cuMemFree_v2(0));

    /* copies and sets only check ranges */
    OK(cu.cuMemcpyHtoD_v2(p, buf, sizeof(buf)));
    OK(cu.cuMemcpyDtoH_v2(buf, p + 3 * MiB - 64, 64));
    OK(cu.cuMemcpyHtoD_v2_ptds(p, buf, 0));
    CHECK_RC(cu.cuMemcpyDtoH_v2(buf, p + 3 * MiB - 32, 64), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuMemcpyHtoD_v2(p, NULL, 1), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuMemcpyHtoD_v2(0x12345000, buf, 1), CUDA_ERROR_INVALID_VALUE);
    OK(cu.cuMemsetD8_v2(p, 0, 3 * MiB));
    OK(cu.cuMemsetD8_v2_ptds(p + 1, 0, 3 * MiB - 1));
    CHECK_RC(cu.cuMemsetD8_v2(p, 0, 3 * MiB + 1), CUDA_ERROR_INVALID_VALUE);
    OK(cu.cuMemFree_v2(p));
    CHECK(cuda_free() == fr0);

    /* exhaustion: exactly what is free can be had, one byte more cannot */
    OK(cu.cuMemAlloc_v2(&big[0], fr0 - 4 * MiB));
    CHECK_RC(cu.cuMemAlloc_v2(&big[1], 6 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
    OK(cu.cuMemAlloc_v2(&big[1], 4 * MiB));
    CHECK(cuda_free() == 0);
    CHECK_RC(cu.cuMemAlloc_v2(&big[2], 1), CUDA_ERROR_OUT_OF_MEMORY);
    OK(cu.cuMemFree_v2(big[0]));
    OK(cu.cuMemFree_v2(big[1]));
    CHECK(cuda_free() == fr0);

    /* pitch */
    OK(cu.cuMemAllocPitch_v2(&p, &pitch, 1000, 10, 4));
    CHECK(pitch == 1024);
    CHECK_RC(cu.cuMemAllocPitch_v2(&q, &pitch, 1000, 10, 3), CUDA_ERROR_INVALID_VALUE);
    OK(cu.cuMemFree_v2(p));

    /* the 32-bit ABI: INVALID_CONTEXT in a 64-bit process, as the real driver answers */
    CHECK_RC(cu.cuMemAlloc(&lp, 1024), CUDA_ERROR_INVALID_CONTEXT);
    CHECK_RC(cu.cuMemGetInfo(&u1, &u2), CUDA_ERROR_INVALID_CONTEXT);
    CHECK_RC(cu.cuMemFree(0x1000), CUDA_ERROR_INVALID_CONTEXT);

    /* managed: real host memory, not charged */
    CHECK_RC(cu.cuMemAllocManaged(&p, MiB, 0), CUDA_ERROR_INVALID_VALUE);
    OK(cu.cuMemAllocManaged(&p, 64 * MiB, CU_MEM_ATTACH_GLOBAL));
    CHECK(cuda_free() == fr0);
    memset((void *)(uintptr_t)p, 7, 4096);
    OK(cu.cuMemcpyDtoH_v2(buf, p + 10, 8));
    CHECK(buf[0] == 7 && buf[7] == 7);
    OK(cu.cuMemsetD8_v2(p, 9, 16));
    CHECK(((char *)(uintptr_t)p)[15] == 9);
    OK(cu.cuMemFree_v2(p));

    /* pinned host memory */
    OK(cu.cuMemAllocHost_v2(&hp, 8192));
    memset(hp, 1, 8192);
    OK(cu.cuMemFreeHost(hp));
    CHECK_RC(cu.cuMemFreeHost(hp), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuMemFreeHost(buf), CUDA_ERROR_INVALID_VALUE);
    OK(cu.cuMemGetInfo_v2(&fr0, &tot));
}

static void test_vmm(void)
{
    CUmemAllocationProp prop;
    CUmemAccessDesc ad;
    CUmemGenericAllocationHandle h = 0, h2 = 0;
    CUdeviceptr va, va2;
    size_t gran = 0, fr0 = cuda_free();

    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    OK(cu.cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CHECK(gran == 2 * MiB);
    OK(cu.cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    CHECK(gran == 2 * MiB);
    CHECK_RC(cu.cuMemGetAllocationGranularity(NULL, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuMemGetAllocationGranularity(&gran, NULL, 0), CUDA_ERROR_INVALID_VALUE);

    CHECK_RC(cu.cuMemCreate(&h, 4096, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuMemCreate(&h, 0, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuMemCreate(NULL, 2 * MiB, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    prop.location.id = 9;
    CHECK_RC(cu.cuMemCreate(&h, 2 * MiB, &prop, 0), CUDA_ERROR_INVALID_DEVICE);
    prop.location.id = 0;
    CHECK_RC(cu.cuMemCreate(&h, 64 * GiB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
    OK(cu.cuMemCreate(&h, 32 * MiB, &prop, 0));
    CHECK(cuda_free() == fr0 - 32 * MiB);   /* charged at creation */

    CHECK_RC(cu.cuMemAddressReserve(&va, 4096, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
    OK(cu.cuMemAddressReserve(&va, 64 * MiB, 0, 0, 0));
    CHECK(va % (2 * MiB) == 0);
    CHECK(cuda_free() == fr0 - 32 * MiB);   /* address space costs nothing */
    CHECK(mapped_as((uintptr_t)va, "---p"));
    /* a hint that is free is honoured */
    OK(cu.cuMemAddressReserve(&va2, 4 * MiB, 0, va + 64 * MiB, 0));
    CHECK(va2 == va + 64 * MiB);
    OK(cu.cuMemAddressFree(va2, 4 * MiB));

    CHECK_RC(cu.cuMemMap(va, 32 * MiB, 2 * MiB, h, 0), CUDA_ERROR_NOT_SUPPORTED);
    CHECK_RC(cu.cuMemMap(va, 64 * MiB, 0, h, 0), CUDA_ERROR_NOT_SUPPORTED);
    CHECK_RC(cu.cuMemMap(0x10000000, 32 * MiB, 0, h, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuMemMap(va, 32 * MiB, 0, 0xdead, 0), CUDA_ERROR_INVALID_HANDLE);
    OK(cu.cuMemMap(va, 32 * MiB, 0, h, 0));
    CHECK_RC(cu.cuMemMap(va, 32 * MiB, 0, h, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuMemsetD8_v2(va, 0, 1), CUDA_ERROR_ILLEGAL_ADDRESS);   /* no access yet */

    memset(&ad, 0, sizeof(ad));
    ad.location = prop.location;
    ad.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CHECK_RC(cu.cuMemSetAccess(va + 32 * MiB, 32 * MiB, &ad, 1), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuMemSetAccess(va, 32 * MiB, &ad, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuMemSetAccess(va, 32 * MiB, NULL, 1), CUDA_ERROR_INVALID_VALUE);
    OK(cu.cuMemSetAccess(va, 32 * MiB, &ad, 1));
    OK(cu.cuMemsetD8_v2(va, 0, 32 * MiB));
    CHECK_RC(cu.cuMemsetD8_v2(va, 0, 32 * MiB + 1), CUDA_ERROR_INVALID_VALUE);

    /* release while mapped: the memory stays until the unmap */
    OK(cu.cuMemRelease(h));
    CHECK(cuda_free() == fr0 - 32 * MiB);
    CHECK_RC(cu.cuMemAddressFree(va, 64 * MiB), CUDA_ERROR_INVALID_VALUE);   /* still mapped */
    CHECK_RC(cu.cuMemUnmap(va, 2 * MiB), CUDA_ERROR_INVALID_VALUE);          /* partial */
    OK(cu.cuMemUnmap(va, 32 * MiB));
    CHECK(cuda_free() == fr0);
    CHECK_RC(cu.cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuMemRelease(0x4242), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuMemAddressFree(va, 2 * MiB), CUDA_ERROR_INVALID_VALUE);
    OK(cu.cuMemAddressFree(va, 64 * MiB));

    /* unmapped but not released: still charged */
    OK(cu.cuMemCreate(&h2, 4 * MiB, &prop, 0));
    OK(cu.cuMemAddressReserve(&va, 4 * MiB, 0, 0, 0));
    OK(cu.cuMemMap(va, 4 * MiB, 0, h2, 0));
    OK(cu.cuMemUnmap(va, 4 * MiB));
    CHECK(cuda_free() == fr0 - 4 * MiB);
    OK(cu.cuMemRelease(h2));
    CHECK(cuda_free() == fr0);
    OK(cu.cuMemAddressFree(va, 4 * MiB));
}

static void test_pools(void)
{
    CUmemoryPool pool = NULL, defpool = NULL, other = NULL;
    CUmemPoolProps pp;
    CUdeviceptr p, q, r;
    CUstream s = NULL;
    size_t fr0 = cuda_free();

    OK(cu.cuDeviceGetDefaultMemPool(&defpool, 0));
    CHECK_RC(cu.cuDeviceGetDefaultMemPool(&pool, 5), CUDA_ERROR_INVALID_DEVICE);
    CHECK_RC(cu.cuDeviceGetDefaultMemPool(NULL, 0), CUDA_ERROR_INVALID_VALUE);
    OK(cu.cuMemAllocAsync(&p, 64 * MiB, NULL));
    CHECK(cuda_free() == fr0 - 64 * MiB);
    OK(cu.cuMemAllocAsync(&q, 0, NULL));
    CHECK(q == 0);
    /* freed memory stays in the pool until a synchronize */
    OK(cu.cuMemFreeAsync(p, NULL));
    CHECK(cuda_free() == fr0 - 64 * MiB);
    OK(cu.cuMemAllocAsync_ptsz(&p, 32 * MiB, CU_STREAM_PER_THREAD));   /* reuses the pool's memory */
    CHECK(cuda_free() == fr0 - 64 * MiB);
    OK(cu.cuMemFreeAsync_ptsz(p, CU_STREAM_PER_THREAD));
    OK(cu.cuStreamSynchronize(NULL));
    CHECK(cuda_free() == fr0);
    CHECK_RC(cu.cuMemFreeAsync(0x12345000, NULL), CUDA_ERROR_INVALID_VALUE);

    /* small stream-ordered allocations share a 32 MiB block */
    OK(cu.cuMemAllocAsync(&p, 1000, NULL));
    OK(cu.cuMemAllocAsync(&q, 1000, NULL));
    CHECK(q - p == 1024);
    CHECK(cuda_free() == fr0 - 32 * MiB);
    OK(cu.cuMemFreeAsync(p, NULL));
    OK(cu.cuMemFreeAsync(q, NULL));
    OK(cu.cuMemPoolTrimTo(defpool, 0));
    CHECK(cuda_free() == fr0);

    /* trim keeps what it is asked to keep */
    OK(cu.cuMemAllocAsync(&p, 16 * MiB, NULL));
    OK(cu.cuMemFreeAsync(p, NULL));
    OK(cu.cuMemPoolTrimTo(defpool, 4 * MiB));
    CHECK(cuda_free() == fr0 - 4 * MiB);
    OK(cu.cuCtxSynchronize());
    CHECK(cuda_free() == fr0);

    /* cuMemFree of a stream-ordered allocation synchronises */
    OK(cu.cuMemAllocAsync(&p, 8 * MiB, NULL));
    OK(cu.cuMemFree_v2(p));
    CHECK(cuda_free() == fr0);

    /* explicit pools */
    memset(&pp, 0, sizeof(pp));
    pp.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    pp.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    pp.location.id = 9;
    CHECK_RC(cu.cuMemPoolCreate(&pool, &pp), CUDA_ERROR_INVALID_DEVICE);
    pp.location.id = 0;
    pp.allocType = CU_MEM_ALLOCATION_TYPE_INVALID;
    CHECK_RC(cu.cuMemPoolCreate(&pool, &pp), CUDA_ERROR_INVALID_VALUE);
    pp.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    OK(cu.cuMemPoolCreate(&pool, &pp));
    OK(cu.cuMemPoolCreate(&other, &pp));
    CHECK(pool != other && pool != defpool);
    CHECK_RC(cu.cuMemAllocFromPoolAsync(&p, MiB, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    OK(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cu.cuMemAllocFromPoolAsync(&p, 4 * MiB, pool, s));
    OK(cu.cuMemAllocFromPoolAsync_ptsz(&r, 6 * MiB, other, s));
    CHECK(cuda_free() == fr0 - 10 * MiB);
    CHECK_RC(cu.cuMemPoolDestroy(defpool), CUDA_ERROR_INVALID_VALUE);
    OK(cu.cuMemPoolDestroy(pool));                   /* outstanding allocation: deferred */
    CHECK(cuda_free() == fr0 - 10 * MiB);
    OK(cu.cuMemFreeAsync(p, s));
    CHECK(cuda_free() == fr0 - 6 * MiB);             /* last allocation of a destroyed pool */
    CHECK_RC(cu.cuMemAllocFromPoolAsync(&p, MiB, pool, s), CUDA_ERROR_INVALID_VALUE);
    OK(cu.cuMemFreeAsync(r, s));
    OK(cu.cuStreamSynchronize(s));
    CHECK(cuda_free() == fr0);
    OK(cu.cuMemPoolDestroy(other));
    CHECK_RC(cu.cuMemPoolDestroy(other), CUDA_ERROR_INVALID_VALUE);
    OK(cu.cuStreamDestroy_v2(s));
    CHECK_RC(cu.cuStreamDestroy_v2(s), CUDA_ERROR_INVALID_HANDLE);
    CHECK_RC(cu.cuStreamDestroy_v2(NULL), CUDA_ERROR_INVALID_HANDLE);
    CHECK_RC(cu.cuMemAllocAsync(&p, MiB, s), CUDA_ERROR_INVALID_HANDLE);
    CHECK_RC(cu.cuStreamSynchronize(s), CUDA_ERROR_INVALID_HANDLE);
    CHECK_RC(cu.cuStreamCreate(&s, 8), CUDA_ERROR_INVALID_VALUE);
}

static void test_arrays(void)
{
    CUDA_ARRAY_DESCRIPTOR d;
    CUDA_ARRAY3D_DESCRIPTOR d3;
    CUarray a, b;
    CUmipmappedArray m;
    size_t fr0 = cuda_free();

    memset(&d, 0, sizeof(d));
    d.Width = 1024;
    d.Height = 1024;
    d.Format = CU_AD_FORMAT_FLOAT;
    d.NumChannels = 4;
    OK(cu.cuArrayCreate_v2(&a, &d));
    CHECK(cuda_free() == fr0 - 16 * MiB);
    d.NumChannels = 3;
    CHECK_RC(cu.cuArrayCreate_v2(&b, &d), CUDA_ERROR_INVALID_VALUE);
    d.NumChannels = 1;
    d.Format = (CUarray_format)0x77;
    CHECK_RC(cu.cuArrayCreate_v2(&b, &d), CUDA_ERROR_INVALID_VALUE);
    d.Format = CU_AD_FORMAT_HALF;
    d.Width = 0;
    CHECK_RC(cu.cuArrayCreate_v2(&b, &d), CUDA_ERROR_INVALID_VALUE);
    /* 1-D, 1000 x half: rounds up to 2 MiB */
    d.Width = 1000;
    d.Height = 0;
    OK(cu.cuArrayCreate_v2(&b, &d));
    CHECK(cuda_free() == fr0 - 18 * MiB);
    OK(cu.cuArrayDestroy(b));
    CHECK_RC(cu.cuArrayDestroy(b), CUDA_ERROR_INVALID_HANDLE);
    CHECK_RC(cu.cuArrayDestroy(NULL), CUDA_ERROR_INVALID_HANDLE);
    OK(cu.cuArrayDestroy(a));
    CHECK(cuda_free() == fr0);

    memset(&d3, 0, sizeof(d3));
    d3.Width = 256;
    d3.Height = 256;
    d3.Depth = 64;
    d3.Format = CU_AD_FORMAT_UNSIGNED_INT8;
    d3.NumChannels = 2;
    OK(cu.cuArray3DCreate_v2(&a, &d3));   /* 256*256*64*2 = 8 MiB */
    CHECK(cuda_free() == fr0 - 8 * MiB);
    OK(cu.cuArrayDestroy(a));
    d3.Depth = 5;
    d3.Flags = CUDA_ARRAY3D_CUBEMAP;
    CHECK_RC(cu.cuArray3DCreate_v2(&a, &d3), CUDA_ERROR_INVALID_VALUE);   /* cubemap needs depth 6 */
    d3.Depth = 6;
    OK(cu.cuArray3DCreate_v2(&a, &d3));   /* 256*256*2*6 = 768 KiB -> 2 MiB */
    CHECK(cuda_free() == fr0 - 2 * MiB);
    OK(cu.cuArrayDestroy(a));

    /* mipmapped: the sum over the levels (1024^2*4 + 512^2*4 + 256^2*4 = 5.25 MiB -> 6 MiB) */
    memset(&d3, 0, sizeof(d3));
    d3.Width = 1024;
    d3.Height = 1024;
    d3.Format = CU_AD_FORMAT_UNSIGNED_INT32;
    d3.NumChannels = 1;
    OK(cu.cuMipmappedArrayCreate(&m, &d3, 3));
    CHECK(cuda_free() == fr0 - 6 * MiB);
    CHECK_RC(cu.cuMipmappedArrayCreate(&m, &d3, 12), CUDA_ERROR_INVALID_VALUE);   /* > 11 levels */
    CHECK_RC(cu.cuArrayDestroy((CUarray)m), CUDA_ERROR_INVALID_HANDLE);
    OK(cu.cuMipmappedArrayDestroy(m));
    CHECK(cuda_free() == fr0);
}

static void test_modules_and_launch(void)
{
    static const char ptx[] = ".version 8.0\n.target sm_50\n.address_size 64\n\n"
                              ".visible .entry kern_a()\n{\n\tret;\n}\n"
                              ".visible .entry kern_b(.param .u64 p)\n{\n\tret;\n}\n";
    CUmodule mod;
    CUfunction f, g, f2;
    CUstream s;
    int x = 0;
    void *params[] = { &x };
    void *extra_empty[] = { NULL };
    void *extra[] = { (void *)1, NULL, NULL };
    size_t fr0 = cuda_free();

    CHECK_RC(cu.cuModuleLoadData(&mod, NULL), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuModuleLoadData(&mod, "not a module, at all......"), CUDA_ERROR_INVALID_IMAGE);
    OK(cu.cuModuleLoadData(&mod, ptx));
    CHECK(cuda_free() == fr0 - 2 * MiB);   /* module_memory 2MiB in this config */
    CHECK_RC(cu.cuModuleGetFunction(&f, mod, "kern_c"), CUDA_ERROR_NOT_FOUND);
    CHECK_RC(cu.cuModuleGetFunction(&f, mod, NULL), CUDA_ERROR_INVALID_VALUE);
    OK(cu.cuModuleGetFunction(&f, mod, "kern_a"));
    OK(cu.cuModuleGetFunction(&g, mod, "kern_b"));
    OK(cu.cuModuleGetFunction(&f2, mod, "kern_a"));
    CHECK(f == f2 && f != g);

    OK(cu.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
    OK(cu.cuLaunchKernel(g, 1000, 2, 1, 256, 4, 1, 1024, CU_STREAM_LEGACY, params, extra_empty));
    OK(cu.cuLaunchKernel_ptsz(f, 1, 1, 1, 1024, 1, 1, 0, CU_STREAM_PER_THREAD, NULL, NULL));
    CHECK_RC(cu.cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_HANDLE);
    CHECK_RC(cu.cuLaunchKernel((CUfunction)&x, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_HANDLE);
    CHECK_RC(cu.cuLaunchKernel(f, 0, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuLaunchKernel(f, 1, 1, 1, 2048, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuLaunchKernel(f, 1, 1, 1, 32, 32, 2, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuLaunchKernel(g, 1, 1, 1, 32, 1, 1, 0, NULL, params, extra), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, (CUstream)&x, NULL, NULL), CUDA_ERROR_INVALID_HANDLE);
    OK(cu.cuStreamCreate(&s, 0));
    OK(cu.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
    OK(cu.cuStreamSynchronize_ptsz(s));
    OK(cu.cuStreamDestroy(s));
    CHECK_RC(cu.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL), CUDA_ERROR_INVALID_HANDLE);

    OK(cu.cuModuleUnload(mod));
    CHECK(cuda_free() == fr0);
    CHECK_RC(cu.cuModuleUnload(mod), CUDA_ERROR_INVALID_HANDLE);
    CHECK_RC(cu.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_HANDLE);
    CHECK_RC(cu.cuGetExportTable(NULL, NULL), CUDA_ERROR_INVALID_VALUE);
}

/* ---------------------------------------------------------------------------------------- */
/* The GPU time model: durations, timelines, events, launch variants, graphs                 */
/* ---------------------------------------------------------------------------------------- */

/* Upper bounds of measured times get this much slack (a loaded 2-core CI machine); lower
 * bounds are exact: the fake never finishes work early. */
#define SLACK_MS 500.0

static const char g_timed_ptx[] = ".version 8.0\n.target sm_50\n.address_size 64\n\n"
                                  ".visible .entry fg_spin_1000us()\n{\n\tret;\n}\n"
                                  ".visible .entry fg_spin_2000us()\n{\n\tret;\n}\n"
                                  ".visible .entry fg_long_100000us()\n{\n\tret;\n}\n"
                                  ".visible .entry fg_a_400us()\n{\n\tret;\n}\n"
                                  ".visible .entry fg_b_5000us()\n{\n\tret;\n}\n"
                                  ".visible .entry fg_plain()\n{\n\tret;\n}\n";

struct timed {
    CUmodule mod;
    CUfunction k1ms, k2ms, k100ms, k400us, k5ms, plain;
};

static void timed_load(struct timed *t)
{
    OK(cu.cuModuleLoadData(&t->mod, g_timed_ptx));
    OK(cu.cuModuleGetFunction(&t->k1ms, t->mod, "fg_spin_1000us"));
    OK(cu.cuModuleGetFunction(&t->k2ms, t->mod, "fg_spin_2000us"));
    OK(cu.cuModuleGetFunction(&t->k100ms, t->mod, "fg_long_100000us"));
    OK(cu.cuModuleGetFunction(&t->k400us, t->mod, "fg_a_400us"));
    OK(cu.cuModuleGetFunction(&t->k5ms, t->mod, "fg_b_5000us"));
    OK(cu.cuModuleGetFunction(&t->plain, t->mod, "fg_plain"));
}

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* n launches of f with `blocks` blocks of 32 threads on s */
static void launch_n(CUfunction f, int n, unsigned blocks, CUstream s)
{
    for (int i = 0; i < n; i++)
        OK(cu.cuLaunchKernel(f, blocks, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
}

/* Milliseconds between a and b once b is complete (-1 on error). */
static float wait_elapsed(CUevent a, CUevent b)
{
    float ms = -1.0f;

    OK(cu.cuEventSynchronize(b));
    OK(cu.cuEventElapsedTime_v2(&ms, a, b));
    return ms;
}

/* A green context of `sms` SMs on dev (one group of a split), its context pushed. */
static CUgreenCtx push_green(CUdevice dev, unsigned sms)
{
    CUdevResource all, grp[1], rem;
    CUdevResourceDesc desc = NULL;
    CUgreenCtx g = NULL;
    CUcontext c = NULL;
    unsigned n = 1;

    OK(cu.cuDeviceGetDevResource(dev, &all, CU_DEV_RESOURCE_TYPE_SM));
    OK(cu.cuDevSmResourceSplitByCount(grp, &n, &all, &rem, 0, sms));
    CHECK(n == 1 && grp[0].sm.smCount == sms);
    OK(cu.cuDevResourceGenerateDesc(&desc, grp, 1));
    OK(cu.cuGreenCtxCreate(&g, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
    OK(cu.cuCtxFromGreenCtx(&c, g));
    OK(cu.cuCtxPushCurrent_v2(c));
    return g;
}

static void pop_green(CUgreenCtx g)
{
    CUcontext c;

    OK(cu.cuCtxPopCurrent_v2(&c));
    OK(cu.cuGreenCtxDestroy(g));
}

/* N kernels of d ms between two events take N * d ms; the reversed pair answers the negative. */
static void test_event_timing(const struct timed *t)
{
    CUevent a, b;
    CUstream s;
    float ms = -1.0f, back = 0.0f;

    OK(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cu.cuEventCreate(&a, CU_EVENT_DEFAULT));
    OK(cu.cuEventCreate(&b, CU_EVENT_BLOCKING_SYNC));
    OK(cu.cuEventQuery(a));   /* never recorded: complete */
    OK(cu.cuEventSynchronize(a));
    CHECK_RC(cu.cuEventElapsedTime_v2(&ms, a, b), CUDA_ERROR_INVALID_HANDLE);   /* never recorded */
    OK(cu.cuEventRecord(a, s));
    launch_n(t->k2ms, 10, 1, s);
    OK(cu.cuEventRecord(b, s));
    ms = wait_elapsed(a, b);
    CHECK(ms >= 20.0f && ms < 20.0 + SLACK_MS);
    OK(cu.cuEventQuery(b));
    OK(cu.cuEventElapsedTime(&back, b, a));
    CHECK(back == -ms);
    /* the same for the per-thread stream, through _ptsz and NULL */
    OK(cu.cuEventRecord_ptsz(a, NULL));
    for (int i = 0; i < 5; i++)
        OK(cu.cuLaunchKernel_ptsz(t->k2ms, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
    OK(cu.cuEventRecord(b, CU_STREAM_PER_THREAD));
    ms = wait_elapsed(a, b);
    CHECK(ms >= 10.0f && ms < 10.0 + SLACK_MS);
    OK(cu.cuEventDestroy_v2(a));
    OK(cu.cuEventDestroy(b));
    OK(cu.cuStreamDestroy_v2(s));
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The machine's own lateness waking a thread: a sleep until 400 us from now with a timer slack of
 * 1 us (what the fake's waits use), its return after the due time, in ms. */
static double precise_sleep_late(void)
{
    int slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    prctl(PR_SET_TIMERSLACK, 1000, 0, 0, 0);
    struct timespec due;
    clock_gettime(CLOCK_MONOTONIC, &due);
    due.tv_nsec += 400000;
    if (due.tv_nsec >= 1000000000) {
        due.tv_sec++;
        due.tv_nsec -= 1000000000;
    }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due, NULL) == EINTR)
        ;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    prctl(PR_SET_TIMERSLACK, slack, 0, 0, 0);
    return (double)(t.tv_sec - due.tv_sec) * 1e3 + (double)(t.tv_nsec - due.tv_nsec) / 1e6;
}

/* A wait returns as the work ends, as the real driver's do (they spin or yield): at the median
 * of 31 waits for a 400 us kernel, within 30 us of the machine's own lateness waking a thread
 * (the median of 31 precise sleeps of the same length, interleaved with them, so that a loaded
 * machine weighs on both alike: 103 us against 35 was seen in CI's sanitizer build beside other
 * tests), and the thread's slack is put back. A sleep with the thread's default timer slack,
 * 50 us, came back 50-60 us late. */
static void test_sync_prompt(const struct timed *t)
{
    CUevent a, b;
    CUstream s;
    double late[31], base[31];
    int slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);

    OK(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cu.cuEventCreate(&a, CU_EVENT_DEFAULT));
    OK(cu.cuEventCreate(&b, CU_EVENT_DEFAULT));
    for (int i = 0; i < 31; i++) {
        float ms = -1.0f;
        base[i] = precise_sleep_late();
        OK(cu.cuStreamSynchronize(s));
        double t0 = now_ms();
        OK(cu.cuEventRecord(a, s)); /* (the stream idle: a's time is now) */
        launch_n(t->k400us, 1, 1, s);
        OK(cu.cuEventRecord(b, s));
        OK(i % 2 == 0 ? cu.cuStreamSynchronize(s) : cu.cuCtxSynchronize());
        double t1 = now_ms();
        OK(cu.cuEventElapsedTime_v2(&ms, a, b));
        late[i] = (t1 - t0) - ms;
    }
    qsort(late, 31, sizeof late[0], cmp_double);
    qsort(base, 31, sizeof base[0], cmp_double);
    printf("# a wait's return after its work's end: median %.1f us, p90 %.1f us; a precise sleep's: median %.1f us\n",
           late[15] * 1e3, late[27] * 1e3, base[15] * 1e3);
    CHECK(late[15] <= base[15] + 0.030);
    CHECK(prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0) == slack);
    OK(cu.cuEventDestroy_v2(a));
    OK(cu.cuEventDestroy_v2(b));
    OK(cu.cuStreamDestroy_v2(s));
}

/* Pending work: NOT_READY until its end; each stream has its own tail, the legacy stream and
 * cuCtxSynchronize wait for the whole device. */
static void test_not_ready(const struct timed *t)
{
    CUevent a, b;
    CUstream s, idle;
    float ms = -1.0f;
    double t0;

    OK(cu.cuStreamCreate(&s, 0));
    OK(cu.cuStreamCreate(&idle, 0));
    OK(cu.cuEventCreate(&a, 0));
    OK(cu.cuEventCreate(&b, 0));
    OK(cu.cuCtxSynchronize());
    OK(cu.cuStreamQuery(s));
    OK(cu.cuStreamQuery(NULL));
    t0 = now_ms();
    OK(cu.cuEventRecord(a, s));
    launch_n(t->k100ms, 1, 1, s);
    OK(cu.cuEventRecord(b, s));
    CHECK_RC(cu.cuEventQuery(b), CUDA_ERROR_NOT_READY);
    CHECK_RC(cu.cuEventElapsedTime(&ms, a, b), CUDA_ERROR_NOT_READY);
    CHECK_RC(cu.cuStreamQuery(s), CUDA_ERROR_NOT_READY);
    CHECK_RC(cu.cuStreamQuery(CU_STREAM_LEGACY), CUDA_ERROR_NOT_READY);
    CHECK_RC(cu.cuStreamQuery(NULL), CUDA_ERROR_NOT_READY);
    OK(cu.cuStreamQuery(idle));
    OK(cu.cuStreamQuery_ptsz(NULL));
    OK(cu.cuEventQuery(a));
    OK(cu.cuStreamSynchronize(s));
    CHECK(now_ms() - t0 >= 100.0);
    OK(cu.cuEventQuery(b));
    OK(cu.cuStreamQuery(s));
    ms = wait_elapsed(a, b);
    CHECK(ms >= 100.0f && ms < 100.0 + SLACK_MS);
    /* per-thread stream work; cuCtxSynchronize waits for it */
    t0 = now_ms();
    OK(cu.cuLaunchKernel_ptsz(t->k100ms, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
    CHECK_RC(cu.cuStreamQuery_ptsz(NULL), CUDA_ERROR_NOT_READY);
    CHECK_RC(cu.cuStreamQuery(CU_STREAM_PER_THREAD), CUDA_ERROR_NOT_READY);
    OK(cu.cuStreamQuery(s));
    OK(cu.cuCtxSynchronize());
    CHECK(now_ms() - t0 >= 100.0);
    OK(cu.cuStreamQuery_ptsz(CU_STREAM_PER_THREAD));
    OK(cu.cuStreamQuery(NULL));
    OK(cu.cuEventDestroy(a));
    OK(cu.cuEventDestroy(b));
    OK(cu.cuStreamDestroy_v2(s));
    OK(cu.cuStreamDestroy_v2(idle));
}

/* A kernel lasts its base on the whole device; on a green context's 32 of 132 SMs, 132
 * blocks take ceil(132 / 32) = 5 waves instead of 1, 1 block one wave either way. */
static void test_green_scaling(const struct timed *t)
{
    CUgreenCtx g = push_green(0, 32);
    CUevent a, b, c;
    CUstream s;
    float ms;

    OK(cu.cuEventCreate(&a, 0));
    OK(cu.cuEventCreate(&b, 0));
    OK(cu.cuEventCreate(&c, 0));
    OK(cu.cuStreamCreate(&s, 0));
    OK(cu.cuEventRecord(a, NULL));
    launch_n(t->k1ms, 1, 132, NULL);
    OK(cu.cuEventRecord(b, NULL));
    ms = wait_elapsed(a, b);
    CHECK(ms >= 5.0f && ms < 5.0 + SLACK_MS);
    OK(cu.cuEventRecord(a, s));   /* a stream created in the green context runs on its SMs */
    launch_n(t->k1ms, 1, 132, s);
    launch_n(t->k1ms, 1, 1, s);
    OK(cu.cuEventRecord(b, s));
    ms = wait_elapsed(a, b);
    CHECK(ms >= 6.0f && ms < 6.0 + SLACK_MS);
    /* cooperative: 32 SMs x floor(2048 / 1024) = 64 blocks of 1024 threads at most */
    OK(cu.cuLaunchCooperativeKernel(t->plain, 64, 1, 1, 1024, 1, 1, 0, s, NULL));
    CHECK_RC(cu.cuLaunchCooperativeKernel(t->plain, 65, 1, 1, 1024, 1, 1, 0, s, NULL),
             CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
    OK(cu.cuStreamSynchronize(s));
    OK(cu.cuStreamDestroy_v2(s));
    pop_green(g);
    /* back in the primary context: 132 blocks are one wave */
    OK(cu.cuEventRecord(a, NULL));
    launch_n(t->k1ms, 1, 132, NULL);
    OK(cu.cuEventRecord(c, NULL));
    ms = wait_elapsed(a, c);
    CHECK(ms >= 1.0f && ms < 1.0 + SLACK_MS);
    OK(cu.cuEventDestroy(a));
    OK(cu.cuEventDestroy(b));
    OK(cu.cuEventDestroy(c));
}

static CUresult launch_ex(CUfunction f, unsigned blocks, unsigned threads, CUstream s, int coop, int ptsz)
{
    CUlaunchAttribute attr[2];
    CUlaunchConfig cfg = { blocks, 1, 1, threads, 1, 1, 0, s, attr, 2 };

    memset(attr, 0, sizeof(attr));
    attr[0].id = CU_LAUNCH_ATTRIBUTE_IGNORE;
    attr[1].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attr[1].value.cooperative = coop;
    return ptsz ? cu.cuLaunchKernelEx_ptsz(&cfg, f, NULL, NULL) : cu.cuLaunchKernelEx(&cfg, f, NULL, NULL);
}

/* cuLaunchKernelEx and cooperative launches on the whole device (132 SMs). */
static void test_launch_variants(const struct timed *t)
{
    CUlaunchConfig cfg = { 1, 1, 1, 32, 1, 1, 0, NULL, NULL, 0 };
    CUevent a, b;
    CUstream s;
    int x = 0;
    float ms;

    OK(cu.cuStreamCreate(&s, 0));
    OK(cu.cuEventCreate(&a, 0));
    OK(cu.cuEventCreate(&b, 0));
    CHECK_RC(cu.cuLaunchKernelEx(NULL, t->plain, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuLaunchKernelEx_ptsz(NULL, t->plain, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    cfg.numAttrs = 1;
    CHECK_RC(cu.cuLaunchKernelEx(&cfg, t->plain, NULL, NULL), CUDA_ERROR_INVALID_VALUE);   /* attrs NULL */
    cfg.numAttrs = 0;
    OK(cu.cuLaunchKernelEx(&cfg, t->plain, NULL, NULL));
    CHECK_RC(cu.cuLaunchKernelEx(&cfg, NULL, NULL, NULL), CUDA_ERROR_INVALID_HANDLE);
    CHECK_RC(cu.cuLaunchKernelEx(&cfg, (CUfunction)&x, NULL, NULL), CUDA_ERROR_INVALID_HANDLE);
    cfg.hStream = (CUstream)&x;
    CHECK_RC(cu.cuLaunchKernelEx(&cfg, t->plain, NULL, NULL), CUDA_ERROR_INVALID_HANDLE);
    cfg.hStream = NULL;
    cfg.blockDimX = 2048;
    CHECK_RC(cu.cuLaunchKernelEx(&cfg, t->plain, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    /* 132 SMs x floor(2048 / 1024) = 264 blocks; x 64 for 32 threads */
    OK(launch_ex(t->plain, 264, 1024, s, 1, 0));
    CHECK_RC(launch_ex(t->plain, 265, 1024, s, 1, 0), CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
    CHECK_RC(launch_ex(t->plain, 265, 1024, NULL, 1, 1), CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
    OK(launch_ex(t->plain, 265, 1024, s, 0, 1));   /* cooperative = 0: an ordinary launch */
    OK(cu.cuLaunchCooperativeKernel(t->plain, 132 * 64, 1, 1, 32, 1, 1, 0, s, NULL));
    CHECK_RC(cu.cuLaunchCooperativeKernel(t->plain, 132 * 64 + 1, 1, 1, 32, 1, 1, 0, s, NULL),
             CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
    CHECK_RC(cu.cuLaunchCooperativeKernel_ptsz(t->plain, 133, 2, 1, 32, 32, 1, 0, NULL, NULL),
             CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);   /* all three grid dimensions count */
    OK(cu.cuLaunchCooperativeKernel_ptsz(t->plain, 66, 2, 2, 32, 32, 1, 0, NULL, NULL));
    CHECK_RC(cu.cuLaunchCooperativeKernel(NULL, 1, 1, 1, 32, 1, 1, 0, s, NULL), CUDA_ERROR_INVALID_HANDLE);
    CHECK_RC(cu.cuLaunchCooperativeKernel(t->plain, 0, 1, 1, 32, 1, 1, 0, s, NULL), CUDA_ERROR_INVALID_VALUE);
    /* every variant is on the timeline: 3 x 2 ms between the events */
    OK(cu.cuEventRecord(a, s));
    OK(launch_ex(t->k2ms, 1, 32, s, 0, 0));
    OK(launch_ex(t->k2ms, 1, 32, s, 1, 0));
    OK(cu.cuLaunchCooperativeKernel(t->k2ms, 1, 1, 1, 32, 1, 1, 0, s, NULL));
    OK(cu.cuEventRecord(b, s));
    ms = wait_elapsed(a, b);
    CHECK(ms >= 6.0f && ms < 6.0 + SLACK_MS);
    OK(cu.cuEventDestroy(a));
    OK(cu.cuEventDestroy(b));
    OK(cu.cuStreamDestroy_v2(s));
}

/* The other thread of test_capture_threads: ends the capture of a stream. */
struct end_arg {
    CUstream s;
    CUgraph g;
    CUresult rc;
};

static void *end_capture_thread(void *p)
{
    struct end_arg *a = p;

    a->rc = cu.cuStreamEndCapture(a->s, &a->g);
    return NULL;
}

static CUresult end_in_thread(CUstream s, CUgraph *g)
{
    struct end_arg a = { s, NULL, CUDA_ERROR_UNKNOWN };
    pthread_t th;

    if (pthread_create(&th, NULL, end_capture_thread, &a) != 0)
        return CUDA_ERROR_UNKNOWN;
    pthread_join(th, NULL);
    *g = a.g;
    return a.rc;
}

/* Capture rules: the legacy stream cannot capture; one capture per stream; only the thread
 * that began a non-relaxed capture may end it; an illegal call invalidates a capture. */
static void test_capture_rules(const struct timed *t)
{
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    CUstreamCaptureStatus st = (CUstreamCaptureStatus)77;
    CUstream s;
    CUgraph g = NULL;
    int x = 0;

    OK(cu.cuStreamCreate(&s, 0));
    CHECK_RC(cu.cuStreamBeginCapture_v2(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CHECK_RC(cu.cuStreamBeginCapture_v2(CU_STREAM_LEGACY, CU_STREAM_CAPTURE_MODE_GLOBAL),
             CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CHECK_RC(cu.cuStreamBeginCapture_v2(s, (CUstreamCaptureMode)7), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuStreamBeginCapture_v2((CUstream)&x, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_INVALID_HANDLE);
    CHECK_RC(cu.cuStreamEndCapture(s, &g), CUDA_ERROR_ILLEGAL_STATE);
    CHECK_RC(cu.cuStreamEndCapture(s, NULL), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuStreamIsCapturing(s, NULL), CUDA_ERROR_INVALID_VALUE);
    OK(cu.cuStreamIsCapturing(CU_STREAM_LEGACY, &st));
    CHECK(st == CU_STREAM_CAPTURE_STATUS_NONE);
    /* a thread-local capture ends only in its thread; a relaxed one anywhere */
    OK(cu.cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CHECK_RC(cu.cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_ILLEGAL_STATE);
    OK(cu.cuStreamIsCapturing(s, &st));
    CHECK(st == CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CHECK_RC(end_in_thread(s, &g), CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
    OK(cu.cuStreamEndCapture(s, &g));
    CHECK(g != NULL);
    OK(cu.cuGraphDestroy(g));
    OK(cu.cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    OK(end_in_thread(s, &g));
    CHECK(g != NULL);
    OK(cu.cuGraphDestroy(g));
    CHECK_RC(cu.cuGraphDestroy(g), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuGraphDestroy(NULL), CUDA_ERROR_INVALID_VALUE);
    /* synchronizing or querying a capturing stream is illegal and invalidates the capture */
    OK(cu.cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    launch_n(t->k1ms, 2, 1, s);
    CHECK_RC(cu.cuStreamSynchronize(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CHECK_RC(cu.cuStreamQuery(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    OK(cu.cuStreamIsCapturing(s, &st));
    CHECK(st == CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    g = (CUgraph)&x;
    CHECK_RC(cu.cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    CHECK(g == NULL);
    OK(cu.cuStreamIsCapturing(s, &st));
    CHECK(st == CU_STREAM_CAPTURE_STATUS_NONE);
    OK(cu.cuStreamQuery(s));   /* nothing of the capture ran */
    /* the thread's capture mode: exchanged, GLOBAL at first */
    CHECK_RC(cu.cuThreadExchangeStreamCaptureMode(NULL), CUDA_ERROR_INVALID_VALUE);
    OK(cu.cuThreadExchangeStreamCaptureMode(&mode));
    CHECK(mode == CU_STREAM_CAPTURE_MODE_GLOBAL);
    mode = (CUstreamCaptureMode)9;
    CHECK_RC(cu.cuThreadExchangeStreamCaptureMode(&mode), CUDA_ERROR_INVALID_VALUE);
    mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
    OK(cu.cuThreadExchangeStreamCaptureMode(&mode));
    CHECK(mode == CU_STREAM_CAPTURE_MODE_RELAXED);
    /* a stream destroyed while capturing */
    OK(cu.cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cu.cuStreamDestroy_v2(s));
    CHECK_RC(cu.cuStreamIsCapturing(s, &st), CUDA_ERROR_INVALID_HANDLE);
}

/* A graph of 20 captured kernels: capturing runs nothing; a launch takes 20 durations. */
static void test_graphs(const struct timed *t)
{
    CUstream s, s2;
    CUgraph g = NULL, g2 = NULL;
    CUgraphExec e = NULL, e2 = NULL, bad = NULL;
    CUevent a, b;
    int x = 0;
    float ms;
    double t0;

    OK(cu.cuStreamCreate(&s, 0));
    OK(cu.cuStreamCreate(&s2, 0));
    OK(cu.cuEventCreate(&a, 0));
    OK(cu.cuEventCreate(&b, 0));
    OK(cu.cuCtxSynchronize());
    t0 = now_ms();
    OK(cu.cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    launch_n(t->k1ms, 20, 1, s);
    OK(cu.cuEventRecord(a, s));   /* recorded into no graph: a stays never recorded */
    OK(cu.cuStreamEndCapture(s, &g));
    CHECK(g != NULL);
    OK(cu.cuStreamQuery(s));
    OK(cu.cuStreamQuery(NULL));
    CHECK_RC(cu.cuEventElapsedTime(&ms, a, a), CUDA_ERROR_INVALID_HANDLE);
    CHECK_RC(cu.cuGraphInstantiateWithFlags(NULL, g, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuGraphInstantiateWithFlags(&bad, NULL, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuGraphInstantiateWithFlags(&bad, (CUgraph)&x, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuGraphInstantiateWithFlags(&bad, g, 0x100), CUDA_ERROR_INVALID_VALUE);
    CHECK(bad == NULL);
    OK(cu.cuGraphInstantiateWithFlags(&e, g, 0));
    OK(cu.cuGraphDestroy(g));   /* the executable graph stays */
    OK(cu.cuEventRecord(a, s));
    OK(cu.cuGraphLaunch(e, s));
    OK(cu.cuEventRecord(b, s));
    ms = wait_elapsed(a, b);
    CHECK(ms >= 20.0f && ms < 20.0 + SLACK_MS);
    CHECK(now_ms() - t0 >= 20.0);
    /* a graph launched into a capture becomes part of it: 20 + 1 kernels */
    OK(cu.cuStreamBeginCapture_v2(s2, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cu.cuGraphLaunch(e, s2));
    launch_n(t->k1ms, 1, 1, s2);
    OK(cu.cuStreamEndCapture(s2, &g2));
    OK(cu.cuGraphInstantiateWithFlags(&e2, g2, 1));
    OK(cu.cuEventRecord(a, s2));
    OK(cu.cuGraphLaunch(e2, s2));
    OK(cu.cuEventRecord(b, s2));
    ms = wait_elapsed(a, b);
    CHECK(ms >= 21.0f && ms < 21.0 + SLACK_MS);
    /* the per-thread stream captures per thread (_ptsz with NULL) */
    OK(cu.cuStreamBeginCapture_v2_ptsz(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL));
    {
        CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;

        OK(cu.cuStreamIsCapturing(CU_STREAM_PER_THREAD, &st));
        CHECK(st == CU_STREAM_CAPTURE_STATUS_ACTIVE);
        OK(cu.cuStreamIsCapturing_ptsz(NULL, &st));
        CHECK(st == CU_STREAM_CAPTURE_STATUS_ACTIVE);
        OK(cu.cuStreamIsCapturing(NULL, &st));   /* NULL here is the legacy stream */
        CHECK(st == CU_STREAM_CAPTURE_STATUS_NONE);
    }
    for (int i = 0; i < 3; i++)
        OK(cu.cuLaunchKernel_ptsz(t->k1ms, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
    OK(cu.cuStreamEndCapture_ptsz(NULL, &g));
    OK(cu.cuGraphDestroy(g2));
    OK(cu.cuGraphExecDestroy(e2));
    OK(cu.cuGraphInstantiateWithFlags(&e2, g, 0));
    OK(cu.cuEventRecord_ptsz(a, NULL));
    OK(cu.cuGraphLaunch_ptsz(e2, NULL));
    OK(cu.cuEventRecord_ptsz(b, NULL));
    ms = wait_elapsed(a, b);
    CHECK(ms >= 3.0f && ms < 3.0 + SLACK_MS);
    /* bad handles */
    CHECK_RC(cu.cuGraphLaunch(NULL, s), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuGraphLaunch((CUgraphExec)&x, s), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuGraphLaunch(e, (CUstream)&x), CUDA_ERROR_INVALID_HANDLE);
    OK(cu.cuGraphExecDestroy(e));
    CHECK_RC(cu.cuGraphExecDestroy(e), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuGraphExecDestroy(NULL), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuGraphLaunch(e, s), CUDA_ERROR_INVALID_VALUE);
    OK(cu.cuGraphExecDestroy(e2));
    OK(cu.cuGraphDestroy(g));
    OK(cu.cuCtxSynchronize());
    OK(cu.cuEventDestroy(a));
    OK(cu.cuEventDestroy(b));
    OK(cu.cuStreamDestroy_v2(s));
    OK(cu.cuStreamDestroy_v2(s2));
}

/* Event flags and bad handles; events die with their context. */
static void test_event_errors(void)
{
    CUevent a, b, nt, ipc;
    CUcontext prim = NULL, c2 = NULL, c;
    CUstream s;
    int x = 0;
    float ms;

    OK(cu.cuCtxGetCurrent(&prim));
    OK(cu.cuStreamCreate(&s, 0));
    CHECK_RC(cu.cuEventCreate(NULL, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuEventCreate(&a, 8), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuEventCreate(&a, CU_EVENT_INTERPROCESS), CUDA_ERROR_INVALID_VALUE);
    OK(cu.cuEventCreate(&ipc, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
    OK(cu.cuEventCreate(&nt, CU_EVENT_DISABLE_TIMING));
    OK(cu.cuEventCreate(&a, 0));
    OK(cu.cuEventCreate(&b, 0));
    CHECK_RC(cu.cuEventRecord(NULL, s), CUDA_ERROR_INVALID_HANDLE);
    CHECK_RC(cu.cuEventRecord((CUevent)&x, s), CUDA_ERROR_INVALID_HANDLE);
    CHECK_RC(cu.cuEventRecord(a, (CUstream)&x), CUDA_ERROR_INVALID_HANDLE);
    CHECK_RC(cu.cuEventQuery(NULL), CUDA_ERROR_INVALID_HANDLE);
    CHECK_RC(cu.cuEventSynchronize(NULL), CUDA_ERROR_INVALID_HANDLE);
    CHECK_RC(cu.cuEventDestroy(NULL), CUDA_ERROR_INVALID_HANDLE);
    CHECK_RC(cu.cuEventDestroy_v2((CUevent)&x), CUDA_ERROR_INVALID_HANDLE);
    OK(cu.cuEventRecord(a, s));
    OK(cu.cuEventRecord(nt, s));
    OK(cu.cuEventRecord(ipc, s));
    OK(cu.cuEventRecord(b, s));
    OK(cu.cuEventSynchronize(b));
    OK(cu.cuEventQuery(nt));
    CHECK_RC(cu.cuEventElapsedTime(NULL, a, b), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuEventElapsedTime(&ms, a, nt), CUDA_ERROR_INVALID_HANDLE);   /* DISABLE_TIMING */
    CHECK_RC(cu.cuEventElapsedTime_v2(&ms, nt, b), CUDA_ERROR_INVALID_HANDLE);
    CHECK_RC(cu.cuEventElapsedTime(&ms, a, NULL), CUDA_ERROR_INVALID_HANDLE);
    OK(cu.cuEventElapsedTime(&ms, a, b));
    CHECK(ms >= 0.0f);
    OK(cu.cuEventDestroy(nt));
    CHECK_RC(cu.cuEventDestroy(nt), CUDA_ERROR_INVALID_HANDLE);
    CHECK_RC(cu.cuEventQuery(nt), CUDA_ERROR_INVALID_HANDLE);
    OK(cu.cuEventDestroy_v2(ipc));
    /* another context: its stream and this context's event do not mix; its events die with it */
    OK(cu.cuCtxCreate_v2(&c2, 0, 0));
    CHECK_RC(cu.cuEventRecord(a, NULL), CUDA_ERROR_INVALID_HANDLE);
    OK(cu.cuEventCreate(&nt, 0));
    OK(cu.cuEventRecord(nt, NULL));
    CHECK_RC(cu.cuEventRecord(nt, s), CUDA_ERROR_INVALID_HANDLE);
    OK(cu.cuCtxDestroy_v2(c2));
    CHECK_RC(cu.cuEventQuery(nt), CUDA_ERROR_INVALID_HANDLE);
    OK(cu.cuCtxGetCurrent(&c));
    CHECK(c == prim);
    OK(cu.cuEventDestroy(a));
    OK(cu.cuEventDestroy(b));
    OK(cu.cuStreamDestroy_v2(s));
}

static void test_time_model(void)
{
    struct timed t;
    size_t fr0 = cuda_free();

    timed_load(&t);
    test_event_timing(&t);
    test_sync_prompt(&t);
    test_not_ready(&t);
    test_green_scaling(&t);
    test_launch_variants(&t);
    test_capture_rules(&t);
    test_graphs(&t);
    test_event_errors();
    OK(cu.cuModuleUnload(t.mod));
    CHECK(cuda_free() == fr0);
}

/* ---------------------------------------------------------------------------------------- */
/* Busy time (FAKEGPU_BUSY_FILE), the config's kernel_us and queue_ms, FAKEGPU_KERNEL_US      */
/* ---------------------------------------------------------------------------------------- */

/* One A100-like GPU of 100 SMs (arch 8.0: splits of 20 SMs are allowed). */
static const char g_conf_time[] = "driver 580.159.04\n"
                                  "cuda 13.0\n"
                                  "kernel_us 7\n"
                                  "queue_ms 20\n"
                                  "gpu 0\n"
                                  "  name NVIDIA A100-SXM4-40GB\n"
                                  "  uuid GPU-aaaaaaaa-bbbb-cccc-dddd-000000000001\n"
                                  "  memory 40GiB\n"
                                  "  arch 8.0\n"
                                  "  sm_count 100\n";

static void busy_path(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", g_tmpdir, name);
}

/* "busy_ns=N kernels=K\n" of the file, or "" */
static void read_busy(const char *name, char *buf, size_t len)
{
    char path[512];
    FILE *f;

    busy_path(path, sizeof(path), name);
    buf[0] = '\0';
    f = fopen(path, "r");
    if (f == NULL)
        return;
    if (fgets(buf, (int)len, f) == NULL)
        buf[0] = '\0';
    fclose(f);
}

static void busy_setup(const char *busy_name)
{
    char path[512];
    CUcontext c;

    busy_path(path, sizeof(path), busy_name);
    setenv("FAKEGPU_BUSY_FILE", path, 1);
    write_conf("time.conf", g_conf_time);
    OK(cu.cuInit(0));
    OK(cu.cuDevicePrimaryCtxRetain(&c, 0));
    OK(cu.cuCtxSetCurrent(c));
}

/* Exits (so that the fake's atexit handler writes the busy file). */
static void busy_exit(void)
{
    fflush(stdout);
    exit(nfail > 100 ? 100 : nfail);
}

/* A child forked after cuInit writes no busy file. */
static void busy_fork_writes_nothing(const char *busy_name)
{
    char path[512];
    pid_t pid;
    int st;

    busy_path(path, sizeof(path), busy_name);
    fflush(stdout);
    pid = fork();
    if (pid == 0)
        exit(0);
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st));
    CHECK(access(path, F_OK) != 0);
}

/* Exact durations: kernel_us 7 for a plain name, 400 µs by name, green scaling, a graph
 * launched twice (its capture counts nothing); back-pressure with queue_ms 20. */
static void child_busy_time(void)
{
    struct timed t;
    CUgreenCtx g;
    CUstream s;
    CUgraph gr;
    CUgraphExec e;
    double t0;

    busy_setup("busy1");
    timed_load(&t);
    OK(cu.cuStreamCreate(&s, 0));
    launch_n(t.plain, 3, 1, s);                                      /* 3 x 7 µs */
    launch_n(t.k400us, 2, 1000, s);                                  /* 2 x 400 µs */
    g = push_green(0, 20);
    launch_n(t.k400us, 1, 100, NULL);                                /* 5 waves / 1: 2000 µs */
    launch_n(t.k400us, 1, 250, NULL);                                /* 13 / 3: 1733.333 µs */
    pop_green(g);
    OK(cu.cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    launch_n(t.k400us, 4, 1, s);
    OK(cu.cuStreamEndCapture(s, &gr));
    OK(cu.cuGraphInstantiateWithFlags(&e, gr, 0));
    OK(cu.cuGraphLaunch(e, s));                                      /* 2 x 4 x 400 µs */
    OK(cu.cuGraphLaunch(e, s));
    OK(cu.cuStreamSynchronize(s));
    /* 10 x 5 ms with 20 ms of queue: the launches return once <= 20 ms are left */
    t0 = now_ms();
    launch_n(t.k5ms, 10, 1, s);
    CHECK(now_ms() - t0 >= 50.0 - 20.0 - 5.0);
    CHECK(now_ms() - t0 < 50.0 + SLACK_MS);
    OK(cu.cuStreamSynchronize(s));
    CHECK(now_ms() - t0 >= 50.0);
    busy_fork_writes_nothing("busy1");
    busy_exit();
}

/* FAKEGPU_KERNEL_US overrides kernel_us. */
static void child_busy_env(void)
{
    struct timed t;

    setenv("FAKEGPU_KERNEL_US", "5", 1);
    busy_setup("busy2");
    timed_load(&t);
    launch_n(t.plain, 4, 1, NULL);
    OK(cu.cuLaunchKernel_ptsz(t.plain, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
    busy_exit();
}

static void test_busy_file(void)
{
    char got[128];

    run_child("busy_time", child_busy_time);
    read_busy("busy1", got, sizeof(got));
    /* 21000 + 800000 + 2000000 + 1733333 + 3200000 + 50000000; 3 + 2 + 2 + 8 + 10 kernels */
    CHECK(strcmp(got, "busy_ns=57754333 kernels=25\n") == 0);
    if (strcmp(got, "busy_ns=57754333 kernels=25\n") != 0)
        printf("# busy1: %s\n", got);
    run_child("busy_env", child_busy_env);
    read_busy("busy2", got, sizeof(got));
    CHECK(strcmp(got, "busy_ns=25000 kernels=5\n") == 0);
    if (strcmp(got, "busy_ns=25000 kernels=5\n") != 0)
        printf("# busy2: %s\n", got);
}

/* cuGetProcAddress answers */
static void expect_proc(const char *sym, int ver, unsigned long long flags, const char *want, int want_status)
{
    void *pfn = (void *)1;
    CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)77;
    CUresult rc = cu.cuGetProcAddress_v2(sym, &pfn, ver, flags, &st);
    void *w = want != NULL ? dlsym(g_cuda, want) : NULL;

    if (rc != CUDA_SUCCESS || (int)st != want_status || pfn != w || (want != NULL && w == NULL)) {
        nfail++;
        printf("not ok - cuGetProcAddress_v2(%s, %d, %llu): rc %d status %d pfn %p, wanted %s (%p) status %d\n",
               sym, ver, flags, (int)rc, (int)st, pfn, want ? want : "NULL", w, want_status);
    } else {
        nok++;
    }
}

/* cuGetProcAddress_v2: which version of each entry point a CUDA version gets */
static void proc_versions(void)
{
    const unsigned long long PT = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;

    expect_proc("cuMemAlloc", 13000, 0, "cuMemAlloc_v2", 0);
    expect_proc("cuMemAlloc", 3020, 0, "cuMemAlloc_v2", 0);
    expect_proc("cuMemAlloc", 3010, 0, "cuMemAlloc", 0);
    expect_proc("cuMemAlloc", 1000, 0, NULL, 2);
    expect_proc("cuMemAlloc", 0, 0, NULL, 2);
    expect_proc("cuMemAlloc", -1, 0, "cuMemAlloc_v2", 0);
    expect_proc("cuMemAlloc", 13000, PT, "cuMemAlloc_v2", 0);
    expect_proc("cuMemAlloc_v2", 13000, 0, NULL, 1);
    expect_proc("cuMemFree", 12000, 0, "cuMemFree_v2", 0);
    expect_proc("cuMemFree", 2000, 0, "cuMemFree", 0);
    expect_proc("cuMemGetInfo", 12000, 0, "cuMemGetInfo_v2", 0);
    expect_proc("cuMemGetInfo", 3000, 0, "cuMemGetInfo", 0);
    expect_proc("cuMemAllocPitch", 11000, 0, "cuMemAllocPitch_v2", 0);
    expect_proc("cuMemAllocHost", 11000, 0, "cuMemAllocHost_v2", 0);
    expect_proc("cuDeviceTotalMem", 3000, 0, "cuDeviceTotalMem", 0);
    expect_proc("cuDeviceTotalMem", 11000, 0, "cuDeviceTotalMem_v2", 0);
    expect_proc("cuCtxCreate", 3000, 0, "cuCtxCreate", 0);
    expect_proc("cuCtxCreate", 11030, 0, "cuCtxCreate_v2", 0);
    expect_proc("cuCtxCreate", 12000, 0, "cuCtxCreate_v3", 0);
    expect_proc("cuCtxCreate", 12050, 0, "cuCtxCreate_v4", 0);
    expect_proc("cuCtxCreate", 13000, 0, "cuCtxCreate_v4", 0);
    expect_proc("cuCtxDestroy", 3020, 0, "cuCtxDestroy", 0);
    expect_proc("cuCtxDestroy", 4000, 0, "cuCtxDestroy_v2", 0);
    expect_proc("cuCtxPushCurrent", 12000, 0, "cuCtxPushCurrent_v2", 0);
    expect_proc("cuCtxPopCurrent", 3020, 0, "cuCtxPopCurrent", 0);
    expect_proc("cuCtxGetDevice", 12080, 0, "cuCtxGetDevice", 0);
    expect_proc("cuCtxGetDevice", 13000, 0, "cuCtxGetDevice_v2", 0);
    expect_proc("cuCtxSynchronize", 12000, 0, "cuCtxSynchronize", 0);
    expect_proc("cuCtxSynchronize", 13000, 0, "cuCtxSynchronize_v2", 0);
    expect_proc("cuDeviceGetUuid", 11030, 0, "cuDeviceGetUuid", 0);
    expect_proc("cuDeviceGetUuid", 11040, 0, "cuDeviceGetUuid_v2", 0);
    expect_proc("cuDeviceGetUuid", 9010, 0, NULL, 2);
    expect_proc("cuDevicePrimaryCtxRelease", 10020, 0, "cuDevicePrimaryCtxRelease", 0);
    expect_proc("cuDevicePrimaryCtxRelease", 11000, 0, "cuDevicePrimaryCtxRelease_v2", 0);
    expect_proc("cuDevicePrimaryCtxReset", 11000, 0, "cuDevicePrimaryCtxReset_v2", 0);
    expect_proc("cuGetProcAddress", 11030, 0, "cuGetProcAddress", 0);
    expect_proc("cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2", 0);
    expect_proc("cuStreamDestroy", 13000, 0, "cuStreamDestroy_v2", 0);
    expect_proc("cuArrayCreate", 13000, 0, "cuArrayCreate_v2", 0);
    expect_proc("cuArrayCreate", 3000, 0, NULL, 2);   /* the CUDA 2.x ABI is not simulated */
    expect_proc("cuMemCreate", 10010, 0, NULL, 2);
    expect_proc("cuMemCreate", 10020, 0, "cuMemCreate", 0);
}

/* cuGetProcAddress_v2: per-thread default stream variants, the time model's entry points */
static void proc_stream_variants(void)
{
    const unsigned long long PT = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    const unsigned long long LEG = CU_GET_PROC_ADDRESS_LEGACY_STREAM;

    /* per-thread default stream variants */
    expect_proc("cuLaunchKernel", 13000, 0, "cuLaunchKernel", 0);
    expect_proc("cuLaunchKernel", 13000, LEG, "cuLaunchKernel", 0);
    expect_proc("cuLaunchKernel", 13000, PT, "cuLaunchKernel_ptsz", 0);
    expect_proc("cuLaunchKernel", 13000, PT | LEG, "cuLaunchKernel_ptsz", 0);
    expect_proc("cuLaunchKernel", 6050, PT, "cuLaunchKernel", 0);   /* _ptsz came with 7.0 */
    expect_proc("cuLaunchKernel", 3020, 0, NULL, 2);
    /* the time model's entry points (PFN_<name>_v<version> of cudaTypedefs.h) */
    expect_proc("cuLaunchKernelEx", 13000, 0, "cuLaunchKernelEx", 0);
    expect_proc("cuLaunchKernelEx", 13000, PT, "cuLaunchKernelEx_ptsz", 0);
    expect_proc("cuLaunchKernelEx", 11050, 0, NULL, 2);
    expect_proc("cuLaunchCooperativeKernel", 9000, 0, "cuLaunchCooperativeKernel", 0);
    expect_proc("cuLaunchCooperativeKernel", 9000, PT, "cuLaunchCooperativeKernel_ptsz", 0);
    expect_proc("cuLaunchCooperativeKernel", 8000, 0, NULL, 2);
    expect_proc("cuStreamBeginCapture", 13000, 0, "cuStreamBeginCapture_v2", 0);
    expect_proc("cuStreamBeginCapture", 10010, PT, "cuStreamBeginCapture_v2_ptsz", 0);
    expect_proc("cuStreamBeginCapture", 10000, 0, NULL, 2);   /* the 1-argument 10.0 ABI: not simulated */
    expect_proc("cuStreamBeginCapture_v2", 13000, 0, NULL, 1);
    expect_proc("cuStreamEndCapture", 10000, PT, "cuStreamEndCapture_ptsz", 0);
    expect_proc("cuStreamIsCapturing", 13000, LEG, "cuStreamIsCapturing", 0);
    expect_proc("cuStreamIsCapturing", 13000, PT, "cuStreamIsCapturing_ptsz", 0);
    expect_proc("cuThreadExchangeStreamCaptureMode", 10010, PT, "cuThreadExchangeStreamCaptureMode", 0);
    expect_proc("cuThreadExchangeStreamCaptureMode", 10000, 0, NULL, 2);
    expect_proc("cuGraphInstantiateWithFlags", 11040, 0, "cuGraphInstantiateWithFlags", 0);
    expect_proc("cuGraphInstantiateWithFlags", 11030, 0, NULL, 2);
    expect_proc("cuGraphLaunch", 13000, 0, "cuGraphLaunch", 0);
    expect_proc("cuGraphLaunch", 10000, PT, "cuGraphLaunch_ptsz", 0);
    expect_proc("cuGraphExecDestroy", 10000, 0, "cuGraphExecDestroy", 0);
    expect_proc("cuGraphDestroy", 13000, 0, "cuGraphDestroy", 0);
    expect_proc("cuEventCreate", 2000, 0, "cuEventCreate", 0);
    expect_proc("cuEventRecord", 13000, 0, "cuEventRecord", 0);
    expect_proc("cuEventRecord", 7000, PT, "cuEventRecord_ptsz", 0);
    expect_proc("cuEventRecord", 6050, PT, "cuEventRecord", 0);
    expect_proc("cuEventQuery", 13000, PT, "cuEventQuery", 0);
    expect_proc("cuEventSynchronize", 13000, 0, "cuEventSynchronize", 0);
    expect_proc("cuEventElapsedTime", 12070, 0, "cuEventElapsedTime", 0);
    expect_proc("cuEventElapsedTime", 12080, 0, "cuEventElapsedTime_v2", 0);
    expect_proc("cuEventElapsedTime_v2", 13000, 0, NULL, 1);
    expect_proc("cuEventDestroy", 3020, 0, "cuEventDestroy", 0);
    expect_proc("cuEventDestroy", 4000, 0, "cuEventDestroy_v2", 0);
    expect_proc("cuStreamQuery", 13000, 0, "cuStreamQuery", 0);
    expect_proc("cuStreamQuery", 13000, PT | LEG, "cuStreamQuery_ptsz", 0);
    expect_proc("cuMemAllocAsync", 11010, 0, NULL, 2);
    expect_proc("cuMemAllocAsync", 11020, PT, "cuMemAllocAsync_ptsz", 0);
    expect_proc("cuMemFreeAsync", 12000, PT, "cuMemFreeAsync_ptsz", 0);
    expect_proc("cuMemAllocFromPoolAsync", 12000, PT, "cuMemAllocFromPoolAsync_ptsz", 0);
    expect_proc("cuStreamSynchronize", 12000, PT, "cuStreamSynchronize_ptsz", 0);
    expect_proc("cuMemcpyHtoD", 12000, PT, "cuMemcpyHtoD_v2_ptds", 0);
    expect_proc("cuMemcpyHtoD", 12000, 0, "cuMemcpyHtoD_v2", 0);
    expect_proc("cuMemcpyDtoH", 12000, PT, "cuMemcpyDtoH_v2_ptds", 0);
    expect_proc("cuMemsetD8", 12000, PT, "cuMemsetD8_v2_ptds", 0);
}

/* cuGetProcAddress_v2: green contexts; unknown names */
static void proc_green_and_unknown(void)
{
    const unsigned long long PT = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;

    /* green contexts: 12040 (seen: VERSION_NOT_SUFFICIENT at 12030); cuDevSmResourceSplit is
     * CUDA 13.1's, not in a 13.0 driver (seen: SYMBOL_NOT_FOUND) */
    expect_proc("cuDeviceGetDevResource", 13000, 0, "cuDeviceGetDevResource", 0);
    expect_proc("cuDevSmResourceSplitByCount", 12040, 0, "cuDevSmResourceSplitByCount", 0);
    expect_proc("cuDevSmResourceSplitByCount", 12030, 0, NULL, 2);
    expect_proc("cuDevResourceGenerateDesc", 13000, 0, "cuDevResourceGenerateDesc", 0);
    expect_proc("cuGreenCtxCreate", 13000, PT, "cuGreenCtxCreate", 0);
    expect_proc("cuGreenCtxCreate", 12030, 0, NULL, 2);
    expect_proc("cuGreenCtxDestroy", 12040, 0, "cuGreenCtxDestroy", 0);
    expect_proc("cuCtxFromGreenCtx", 13000, 0, "cuCtxFromGreenCtx", 0);
    expect_proc("cuGreenCtxGetDevResource", 13000, 0, "cuGreenCtxGetDevResource", 0);
    expect_proc("cuCtxGetDevResource", 13000, 0, "cuCtxGetDevResource", 0);
    expect_proc("cuDevSmResourceSplit", 13000, 0, NULL, 1);
    expect_proc("cuFakegpuNoSuchFunction", 13000, 0, NULL, 1);
    expect_proc("", 13000, 0, NULL, 1);
}

/* Errors of cuGetProcAddress_v2 and the CUDA 11.3 cuGetProcAddress */
static void proc_errors(void)
{
    const unsigned long long PT = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    void *pfn = (void *)1;

    /* errors that leave *pfn alone */
    CHECK_RC(cu.cuGetProcAddress_v2("cuMemAlloc", &pfn, 13010, 0, NULL), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuGetProcAddress_v2("cuMemAlloc", &pfn, 13000, 4, NULL), CUDA_ERROR_INVALID_VALUE);
    CHECK(pfn == (void *)1);
    CHECK_RC(cu.cuGetProcAddress_v2(NULL, &pfn, 13000, 0, NULL), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(cu.cuGetProcAddress_v2("cuInit", NULL, 13000, 0, NULL), CUDA_ERROR_INVALID_VALUE);
    /* the CUDA 11.3 entry point: NOT_FOUND, *pfn untouched */
    CHECK_RC(cu.cuGetProcAddress("cuFakegpuNoSuchFunction", &pfn, 13000, 0), CUDA_ERROR_NOT_FOUND);
    CHECK_RC(cu.cuGetProcAddress("cuMemAllocAsync", &pfn, 11010, 0), CUDA_ERROR_NOT_FOUND);
    CHECK(pfn == (void *)1);
    OK(cu.cuGetProcAddress("cuMemAlloc", &pfn, 12000, 0));
    CHECK(pfn == dlsym(g_cuda, "cuMemAlloc_v2"));
    OK(cu.cuGetProcAddress("cuLaunchKernel", &pfn, 12000, PT));
    CHECK(pfn == dlsym(g_cuda, "cuLaunchKernel_ptsz"));
}

static void test_get_proc_address(void)
{
    proc_versions();
    proc_stream_variants();
    proc_green_and_unknown();
    proc_errors();
}

/* ---------------------------------------------------------------------------------------- */
/* Two processes on one simulated GPU                                                        */
/* ---------------------------------------------------------------------------------------- */

static pid_t g_holder = -1;
static int g_holder_pipe[2];

/* Child: hold a context and 1 GiB on GPU 0, report, and wait to be killed. */
static void start_holder(void)
{
    char ok = 0;

    if (pipe(g_holder_pipe) < 0) {
        perror("pipe");
        exit(1);
    }
    fflush(stdout);
    g_holder = fork();
    if (g_holder == 0) {
        CUcontext c;
        CUdeviceptr p;

        close(g_holder_pipe[0]);
        if (cu.cuInit(0) == CUDA_SUCCESS && cu.cuDevicePrimaryCtxRetain(&c, 0) == CUDA_SUCCESS &&
            cu.cuCtxSetCurrent(c) == CUDA_SUCCESS && cu.cuMemAlloc_v2(&p, GiB) == CUDA_SUCCESS)
            ok = 1;
        if (write(g_holder_pipe[1], &ok, 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    close(g_holder_pipe[1]);
}

static int nvml_find(nvmlDevice_t dev, unsigned pid, unsigned long long *used)
{
    nvmlProcessInfo_t infos[32];
    unsigned n = 32;

    if (nv.nvmlDeviceGetComputeRunningProcesses_v3(dev, &n, infos) != NVML_SUCCESS)
        return -1;
    for (unsigned i = 0; i < n; i++)
        if (infos[i].pid == pid) {
            *used = infos[i].usedGpuMemory;
            return 1;
        }
    return 0;
}

static int proc_state(pid_t pid)
{
    char path[64], buf[256], *p;
    FILE *f;
    int st = '?';

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (f == NULL)
        return 0;
    if (fgets(buf, sizeof(buf), f) != NULL && (p = strrchr(buf, ')')) != NULL && p[1] == ' ')
        st = p[2];
    fclose(f);
    return st;
}

static void test_two_processes(void)
{
    char ok = 0;
    nvmlDevice_t dev0, dev1;
    nvmlMemory_v2_t mem;
    unsigned long long used = 0;
    size_t fr0, fr1;
    CUdeviceptr p;
    unsigned n = 0;
    int st;

    (void)ok;
    /* this process: the primary context of GPU 0 is current (test_linear_memory) */
    fr0 = cuda_free();
    CHECK(fr0 == 8 * GiB - 512 * MiB - 256 * MiB - HOLDER);   /* the holder's context + 1 GiB */

    /* NVML sees both processes, with the context memory included */
    OK(nv.nvmlInit_v2());
    OK(nv.nvmlDeviceGetHandleByIndex_v2(0, &dev0));
    OK(nv.nvmlDeviceGetHandleByIndex_v2(1, &dev1));
    CHECK(nvml_find(dev0, (unsigned)g_holder, &used) == 1);
    CHECK(used == 256 * MiB + GiB);
    CHECK(nvml_find(dev0, (unsigned)getpid(), &used) == 1);
    CHECK(used == 256 * MiB);
    memset(&mem, 0, sizeof(mem));
    mem.version = nvmlMemory_v2;
    OK(nv.nvmlDeviceGetMemoryInfo_v2(dev0, &mem));
    CHECK(mem.used == 2 * 256 * MiB + GiB);
    CHECK(mem.free == 8 * GiB - 512 * MiB - mem.used);
    /* GPU 1: only the config's process (and `used`) */
    CHECK(nv.nvmlDeviceGetComputeRunningProcesses_v3(dev1, &n, NULL) == NVML_ERROR_INSUFFICIENT_SIZE && n == 1);

    /* the other process's memory is not ours to take */
    CHECK_RC(cu.cuMemAlloc_v2(&p, fr0 + 2 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
    OK(cu.cuMemAlloc_v2(&p, 100 * MiB));
    CHECK(nvml_find(dev0, (unsigned)getpid(), &used) == 1 && used == 356 * MiB);

    /* kill -9: the holder's lock goes with it (already while it is a zombie) */
    kill(g_holder, SIGKILL);
    for (int i = 0; i < 500 && proc_state(g_holder) != 'Z'; i++)
        usleep(10000);
    CHECK(proc_state(g_holder) == 'Z');
    CHECK(nvml_find(dev0, (unsigned)g_holder, &used) == 0);
    fr1 = cuda_free();
    CHECK(fr1 == fr0 - 100 * MiB + 256 * MiB + GiB);
    CHECK(waitpid(g_holder, &st, 0) == g_holder && WIFSIGNALED(st));
    OK(nv.nvmlDeviceGetMemoryInfo_v2(dev0, &mem));
    CHECK(mem.used == 356 * MiB);
    OK(cu.cuMemFree_v2(p));
    CHECK(cuda_free() == fr1 + 100 * MiB);

    /* the reaped slot is free again: the state file holds no trace of the holder */
    {
        char path[512];
        struct fg_state st2;
        int found = 0;

        snprintf(path, sizeof(path), "%s", getenv(FG_STATE_ENV));
        if (fg_state_open(&st2, path, 0) == 0) {
            for (unsigned i = 0; i < FG_STATE_SLOTS; i++)
                if (st2.map->slots[i].pid == (uint32_t)g_holder)
                    found = 1;
            fg_state_close(&st2);
        }
        CHECK(!found);
    }
    OK(nv.nvmlShutdown());
}

/* A child forked after cuInit cannot use CUDA; its exit leaves the parent's usage alone. */
static void test_fork_after_init(void)
{
    pid_t pid;
    int st;
    size_t fr0 = cuda_free();
    nvmlDevice_t dev0;
    unsigned long long used = 0;

    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        int n = 0;
        CUdeviceptr p;

        if (cu.cuDeviceGetCount(&n) != CUDA_ERROR_NOT_INITIALIZED || cu.cuInit(0) != CUDA_ERROR_NOT_INITIALIZED ||
            cu.cuMemAlloc_v2(&p, MiB) != CUDA_ERROR_NOT_INITIALIZED)
            _exit(1);
        _exit(0);
    }
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK(cuda_free() == fr0);
    OK(nv.nvmlInit_v2());
    OK(nv.nvmlDeviceGetHandleByIndex_v2(0, &dev0));
    CHECK(nvml_find(dev0, (unsigned)getpid(), &used) == 1 && used == 256 * MiB);
    OK(nv.nvmlShutdown());
}

/* ---------------------------------------------------------------------------------------- */

static void load(void **h, const char *path)
{
    *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (*h == NULL) {
        fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
        exit(1);
    }
}

int main(int argc, char **argv)
{
    void *hn;
    char path[512], cmd[600];

    if (argc != 4) {
        fprintf(stderr, "usage: %s LIBCUDA LIBNVIDIA_ML CONFIG_DIR\n", argv[0]);
        return 2;
    }
    g_confdir = argv[3];
    if (mkdtemp(g_tmpdir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(path, sizeof(path), "%s/state", g_tmpdir);
    setenv(FG_STATE_ENV, path, 1);
    unsetenv("CUDA_VISIBLE_DEVICES");
    load(&g_cuda, argv[1]);
    load(&hn, argv[2]);
#define X(name, ret, params)                                      \
    *(void **)&cu.name = dlsym(g_cuda, #name);                    \
    if (cu.name == NULL) {                                        \
        printf("not ok - %s is not exported\n", #name);           \
        nfail++;                                                  \
    }
    GS_CUDA_FUNCTIONS(X)
#undef X
#define X(name, ret, params) *(void **)&nv.name = dlsym(hn, #name);
    GS_NVML_FUNCTIONS(X)
#undef X
    if (nfail > 0)
        return 1;

    test_before_init();
    run_child("init_bad_config", child_init_bad_config);
    run_child("init_fault", child_init_fault);
    run_child("call_faults", child_call_faults);
    run_child("no_devices", child_no_devices);
    run_child("visible_reorder", child_visible_reorder);
    run_child("visible_uuid", child_visible_uuid_and_stop);
    run_child("visible_digits", child_visible_digits);
    run_child("visible_negative", child_visible_negative);
    run_child("visible_duplicate", child_visible_duplicate);
    run_child("mig", child_mig);
    run_child("visible_mig_uuid", child_visible_mig_uuid);
    test_busy_file();
    write_conf("main.conf", g_conf_main);
    start_holder();
    {
        char ok = 0;

        CHECK(read(g_holder_pipe[0], &ok, 1) == 1 && ok == 1);
        close(g_holder_pipe[0]);
    }

    test_devices();
    test_contexts();
    test_green_contexts();
    test_linear_memory();
    test_vmm();
    test_pools();
    test_arrays();
    test_modules_and_launch();
    test_time_model();
    test_get_proc_address();
    test_two_processes();
    test_fork_after_init();

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", g_tmpdir);
    printf("%d passed, %d failed\n", nok, nfail);
    return nfail == 0 ? 0 : 1;
}
