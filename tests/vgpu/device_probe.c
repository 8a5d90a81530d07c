/*
 * device-probe: every entry point that takes or returns a CUdevice, called with one ordinal.
 *   device-probe [raw] ORDINAL BUSID NAME...
 * raw: initialise the driver past the interposer (the simulated driver's fakegpu_cuInit_unhooked:
 * it then shows every GPU, as a driver reached some way we do not catch would); else cuInit.
 * For each NAME (an entry point of src/abi/cuda.h, listed by tests/vgpu/test_devices.sh) one line
 *   NAME ORDINAL RC [UUID-of-the-device-it-returned]
 * ("nocase NAME" when this file has no case for it: the test fails then). BUSID is the PCI bus id
 * cuDeviceGetByPCIBusId is asked for. Other arguments are valid where the call needs them, so that
 * a refusal of the device is what the result shows.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi/cuda.h"

CUresult fakegpu_cuInit_unhooked(unsigned int Flags) __attribute__((weak));

static const char *bus;
static char got[96];

static void uuid_of(CUdevice d)
{
        CUuuid u;
        snprintf(got, sizeof(got), "?");
        if (cuDeviceGetUuid_v2(&u, d) != CUDA_SUCCESS)
                return;
        const unsigned char *b = (const unsigned char *)u.bytes;
        snprintf(got, sizeof(got), "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                 b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

static CUmemAllocationProp prop_on(CUdevice d)
{
        CUmemAllocationProp p;
        memset(&p, 0, sizeof(p));
        p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
        p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        p.location.id = d;
        return p;
}

/* The other device of a pair: the slice's first (driver ordinal from GOOD, default 0). */
static CUdevice good(void)
{
        const char *g = getenv("GOOD");
        return g != NULL ? atoi(g) : 0;
}

static CUresult run(const char *name, CUdevice d)
{
        char buf[128];
        CUuuid u;
        size_t sz = 0;
        unsigned int u32 = 0, flags = 0;
        int v = 0;
        CUcontext c = NULL;
        CUdevice out = -1;
        CUmemoryPool pool = NULL;
        CUmemAllocationProp p = prop_on(d);
        CUresult rc;
#define IS(n) (strcmp(name, n) == 0)
        if (IS("cuDeviceGet")) {
                rc = cuDeviceGet(&out, d);
                if (rc == CUDA_SUCCESS)
                        uuid_of(out);
                return rc;
        }
        if (IS("cuDeviceGetByPCIBusId")) {
                rc = cuDeviceGetByPCIBusId(&out, bus);
                if (rc == CUDA_SUCCESS)
                        uuid_of(out);
                return rc;
        }
        if (IS("cuCtxGetDevice") || IS("cuCtxGetDevice_v2")) {
                /* the current context's device: make one on d first (refused outside the slice) */
                CUresult r0 = cuDevicePrimaryCtxRetain(&c, d);
                if (r0 == CUDA_SUCCESS)
                        cuCtxSetCurrent(c);
                rc = IS("cuCtxGetDevice") ? cuCtxGetDevice(&out) : cuCtxGetDevice_v2(&out, NULL);
                if (rc == CUDA_SUCCESS)
                        uuid_of(out);
                return r0 != CUDA_SUCCESS ? r0 : rc;
        }
        if (IS("cuDeviceGetName")) return cuDeviceGetName(buf, sizeof(buf), d);
        if (IS("cuDeviceGetUuid")) return cuDeviceGetUuid(&u, d);
        if (IS("cuDeviceGetUuid_v2")) return cuDeviceGetUuid_v2(&u, d);
        if (IS("cuDeviceTotalMem")) return cuDeviceTotalMem(&u32, d);
        if (IS("cuDeviceTotalMem_v2")) return cuDeviceTotalMem_v2(&sz, d);
        if (IS("cuDeviceGetAttribute")) return cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d);
        if (IS("cuDeviceGetPCIBusId")) return cuDeviceGetPCIBusId(buf, sizeof(buf), d);
        if (IS("cuDeviceCanAccessPeer")) {
                rc = cuDeviceCanAccessPeer(&v, d, good());
                return rc != CUDA_SUCCESS ? rc : cuDeviceCanAccessPeer(&v, good(), d);
        }
        if (IS("cuDeviceGetP2PAttribute")) {
                rc = cuDeviceGetP2PAttribute(&v, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, d, good());
                return rc != CUDA_SUCCESS ? rc
                                          : cuDeviceGetP2PAttribute(&v, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, good(), d);
        }
        if (IS("cuDevicePrimaryCtxRetain")) return cuDevicePrimaryCtxRetain(&c, d);
        if (IS("cuDevicePrimaryCtxRelease")) return cuDevicePrimaryCtxRelease(d);
        if (IS("cuDevicePrimaryCtxRelease_v2")) return cuDevicePrimaryCtxRelease_v2(d);
        if (IS("cuDevicePrimaryCtxReset")) return cuDevicePrimaryCtxReset(d);
        if (IS("cuDevicePrimaryCtxReset_v2")) return cuDevicePrimaryCtxReset_v2(d);
        if (IS("cuDevicePrimaryCtxGetState")) return cuDevicePrimaryCtxGetState(d, &flags, &v);
        if (IS("cuCtxCreate")) return cuCtxCreate(&c, 0, d);
        if (IS("cuCtxCreate_v2")) return cuCtxCreate_v2(&c, 0, d);
        if (IS("cuCtxCreate_v3")) return cuCtxCreate_v3(&c, NULL, 0, 0, d);
        if (IS("cuCtxCreate_v4")) return cuCtxCreate_v4(&c, NULL, 0, d);
        if (IS("cuDeviceGetDevResource")) {
                CUdevResource r;
                return cuDeviceGetDevResource(d, &r, CU_DEV_RESOURCE_TYPE_SM);
        }
        if (IS("cuGreenCtxCreate")) {
                CUgreenCtx g = NULL;
                return cuGreenCtxCreate(&g, NULL, d, CU_GREEN_CTX_DEFAULT_STREAM);
        }
        if (IS("cuDeviceGetDefaultMemPool")) return cuDeviceGetDefaultMemPool(&pool, d);
        if (IS("cuMemGetAllocationGranularity"))
                return cuMemGetAllocationGranularity(&sz, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
        if (IS("cuMemCreate")) {
                CUmemGenericAllocationHandle h = 0;
                rc = cuMemCreate(&h, 2u << 20, &p, 0);
                if (rc == CUDA_SUCCESS)
                        cuMemRelease(h);
                return rc;
        }
        if (IS("cuMemSetAccess")) {
                CUmemAccessDesc a = {.location = p.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
                return cuMemSetAccess(0, 0, &a, 1);
        }
        if (IS("cuMemPoolCreate")) {
                CUmemPoolProps pp;
                memset(&pp, 0, sizeof(pp));
                pp.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
                pp.location = p.location;
                rc = cuMemPoolCreate(&pool, &pp);
                if (rc == CUDA_SUCCESS)
                        cuMemPoolDestroy(pool);
                return rc;
        }
#undef IS
        return (CUresult)-1;
}

int main(int argc, char **argv)
{
        int a = 1;
        bool raw = argc > a && strcmp(argv[a], "raw") == 0;
        a += raw;
        if (argc < a + 3) {
                fprintf(stderr, "usage: device-probe [raw] ORDINAL BUSID NAME...\n");
                return 2;
        }
        CUdevice d = atoi(argv[a]);
        bus = argv[a + 1];
        CUresult rc = raw ? (fakegpu_cuInit_unhooked != NULL ? fakegpu_cuInit_unhooked(0) : CUDA_ERROR_NOT_FOUND)
                          : cuInit(0);
        printf("init %d\n", (int)rc);
        int missing = 0;
        for (int i = a + 2; i < argc; i++) {
                got[0] = '\0';
                CUresult r = run(argv[i], d);
                if ((int)r == -1) {
                        printf("nocase %s\n", argv[i]);
                        missing++;
                        continue;
                }
                printf("%s %d %d%s%s\n", argv[i], (int)d, (int)r, got[0] != '\0' ? " " : "", got);
        }
        return missing != 0 ? 2 : 0;
}
