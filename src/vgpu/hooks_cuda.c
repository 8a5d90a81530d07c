/*
 * CUDA driver hooks: initialisation, device visibility, virtualized memory views, and every
 * allocation path charged against the slice's quota (src/vgpu/vgpu.c). Allocations we did not
 * track (made before us, or by a path we do not hook) are passed to the driver untouched.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vgpu/devmap.h"
#include "vgpu/mps_client.h"
#include "vgpu/vgpu.h"

#define S gs_vgpu_state

/* Call the real entry point, or report the driver as absent. */
#define REAL(name, ...)                                                                            \
        ((gs_vgpu_load_cuda() == 0 && S.cu.name != NULL) ? S.cu.name(__VA_ARGS__) : CUDA_ERROR_NOT_INITIALIZED)

static bool hiding(void) { return S.cfg.devices[0] != '\0'; }

/* The driver reads CUDA_VISIBLE_DEVICES in cuInit: for that call it names the slice's devices, as
 * the process's own value selects among them (gs_vgpu_cuda_visible), so that the driver has no
 * other GPU and every device number, cuDeviceGet's or a literal one, is a slice device. The
 * process's value is put back after the call: frameworks read it (some as numbers only), and a
 * program that changes it before cuInit (os.environ in Python) is read as it left it. */
static CUresult init_hidden(unsigned int flags)
{
        static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
        static bool done; /* the driver accepted a cuInit: it does not read the variable again */
        if (__atomic_load_n(&done, __ATOMIC_ACQUIRE))
                return REAL(cuInit, flags);
        pthread_mutex_lock(&lock);
        const char *user = getenv("CUDA_VISIBLE_DEVICES");
        char *own = user != NULL ? strdup(user) : NULL;
        size_t entries = (size_t)GS_VGPU_MAX_DEVICES; /* one UUID (and a comma) per entry */
        for (const char *c = own; c != NULL && *c != '\0'; c++)
                entries += *c == ',';
        size_t size = entries * sizeof(S.cfg.uuid[0]);
        char *want = (user == NULL || own != NULL) ? malloc(size) : NULL;
        int n = want != NULL ? gs_vgpu_cuda_visible(&S.cfg, own, want, size) : -1;
        CUresult rc = CUDA_ERROR_OUT_OF_MEMORY;
        if (n >= 0 && setenv("CUDA_VISIBLE_DEVICES", want, 1) == 0) {
                if (n == 0)
                        gs_vgpu_log(1, "CUDA_VISIBLE_DEVICES=%s selects none of the slice's devices (%s; an entry "
                                       "that names none of them ends the list): CUDA sees no device",
                                    own != NULL ? own : "(unset)", S.cfg.devices);
                else
                        gs_vgpu_log(3, "cuInit with CUDA_VISIBLE_DEVICES=%s (the slice's devices%s%s)", want,
                                    own != NULL ? " as CUDA_VISIBLE_DEVICES selects them: " : "", own != NULL ? own : "");
                rc = REAL(cuInit, flags);
                if (own != NULL)
                        setenv("CUDA_VISIBLE_DEVICES", own, 1);
                else
                        unsetenv("CUDA_VISIBLE_DEVICES");
        }
        if (rc == CUDA_SUCCESS)
                __atomic_store_n(&done, true, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&lock);
        free(want);
        free(own);
        return rc;
}

GS_EXPORT CUresult cuInit(unsigned int Flags)
{
        gs_vgpu_configure(); /* done in our constructor, unless another library's called cuInit first */
        if (S.cfg.error && !S.cfg.ignore_errors) {
                gs_vgpu_log(0, "refusing cuInit: %s", S.cfg.message);
                return CUDA_ERROR_INVALID_VALUE;
        }
        gs_mps_client_before_init(); /* the slice's MPS percentage, whatever the process set */
        CUresult rc = hiding() ? init_hidden(Flags) : REAL(cuInit, Flags);
        if (rc == CUDA_SUCCESS) {
                gs_vgpu_map_devices();
                gs_mps_client_after_init();
        }
        return rc;
}

/* Device numbers are translated only where the driver shows more than the slice (it was
 * initialised without the slice's CUDA_VISIBLE_DEVICES): visible ordinal k is the k-th slice
 * device the driver has. Before cuInit the driver answers. */
static bool translating(void)
{
        if (!hiding())
                return false;
        gs_vgpu_map_devices();
        return __atomic_load_n(&S.nvisible, __ATOMIC_ACQUIRE) >= 0 && !S.nvml_mapped && !S.driver_hides;
}

/* A device the program passes, turned into the driver's in place; outside the slice: refused as
 * the driver refuses a device it does not have. */
#define GUARD(dev)                                                                                 \
        do {                                                                                       \
                if (gs_vgpu_dev_in((dev), &(dev)) < 0)                                             \
                        return CUDA_ERROR_INVALID_DEVICE;                                          \
        } while (0)

GS_EXPORT CUresult cuDeviceGetCount(int *count)
{
        CUresult rc = REAL(cuDeviceGetCount, count);
        if (rc != CUDA_SUCCESS || count == NULL || !translating())
                return rc;
        int n = 0;
        for (int i = 0; i < S.nvisible; i++)
                n += S.cuda_of[i] >= 0;
        *count = n;
        return rc;
}

GS_EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
        if (!translating())
                return REAL(cuDeviceGet, device, ordinal);
        CUdevice real = ordinal >= 0 ? gs_vgpu_translated(ordinal) : -1;
        if (real < 0)
                return device == NULL ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_DEVICE;
        CUdevice d = -1;
        CUresult rc = REAL(cuDeviceGet, device != NULL ? &d : NULL, real);
        if (rc == CUDA_SUCCESS && device != NULL)
                *device = gs_vgpu_dev_out(d);
        return rc;
}

/* min(quota, physical) for the visible device behind real ordinal dev. */
static size_t total_view(CUdevice dev, size_t real_total)
{
        int vis = gs_vgpu_visible_of(dev);
        uint64_t limit = vis >= 0 ? gs_vgpu_limit(vis) : 0;
        return limit != 0 && limit < real_total ? (size_t)limit : real_total;
}

GS_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
        GUARD(dev);
        CUresult rc = REAL(cuDeviceTotalMem_v2, bytes, dev);
        if (rc == CUDA_SUCCESS && bytes != NULL)
                *bytes = total_view(dev, *bytes);
        return rc;
}

GS_EXPORT CUresult cuDeviceTotalMem(unsigned int *bytes, CUdevice dev)
{
        size_t b = 0;
        GUARD(dev);
        if (bytes == NULL)
                return CUDA_ERROR_INVALID_VALUE;
        CUresult rc = REAL(cuDeviceTotalMem_v2, &b, dev);
        if (rc != CUDA_SUCCESS)
                return rc;
        b = total_view(dev, b);
        *bytes = b > 0xffffffffu ? 0xffffffffu : (unsigned int)b;
        return rc;
}

/* free = min(real free, quota - slice usage), total = min(quota, real total); clamped, NULL-safe. */
static CUresult mem_info(size_t *free_out, size_t *total_out)
{
        size_t f = 0, t = 0;
        CUresult rc = REAL(cuMemGetInfo_v2, &f, &t);
        if (rc != CUDA_SUCCESS)
                return rc;
        int vis = gs_vgpu_current_device();
        uint64_t limit = vis >= 0 ? gs_vgpu_limit(vis) : 0;
        if (limit != 0) {
                gs_vgpu_charge(vis, 0); /* joins the region and measures the context once */
                uint64_t used = gs_vgpu_usage(vis);
                if (limit < t)
                        t = (size_t)limit;
                uint64_t left = used < t ? t - used : 0;
                if (left < f)
                        f = (size_t)left;
        }
        if (free_out != NULL)
                *free_out = f;
        if (total_out != NULL)
                *total_out = t;
        return CUDA_SUCCESS;
}

GS_EXPORT CUresult cuMemGetInfo_v2(size_t *free, size_t *total) { return mem_info(free, total); }

/* ---- every other entry point that takes a device: the slice's devices only ----------------- */

GS_EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
        GUARD(dev);
        return REAL(cuDeviceGetName, name, len, dev);
}

GS_EXPORT CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
        GUARD(dev);
        return REAL(cuDeviceGetUuid, uuid, dev);
}

GS_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
        GUARD(dev);
        return REAL(cuDeviceGetUuid_v2, uuid, dev);
}

GS_EXPORT CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
        GUARD(dev);
        return REAL(cuDeviceGetAttribute, pi, attrib, dev);
}

GS_EXPORT CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
        GUARD(dev);
        return REAL(cuDeviceGetPCIBusId, pciBusId, len, dev);
}

/* The other way: a bus id of a GPU outside the slice is a device the process does not have. */
GS_EXPORT CUresult cuDeviceGetByPCIBusId(CUdevice *dev, const char *pciBusId)
{
        CUdevice d = -1;
        CUresult rc = REAL(cuDeviceGetByPCIBusId, dev != NULL ? &d : NULL, pciBusId);
        if (rc != CUDA_SUCCESS || dev == NULL)
                return rc;
        d = gs_vgpu_dev_out(d);
        if (d < 0)
                return CUDA_ERROR_INVALID_DEVICE;
        *dev = d;
        return rc;
}

GS_EXPORT CUresult cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev)
{
        GUARD(dev);
        GUARD(peerDev);
        return REAL(cuDeviceCanAccessPeer, canAccessPeer, dev, peerDev);
}

GS_EXPORT CUresult cuDeviceGetP2PAttribute(int *value, CUdevice_P2PAttribute attrib, CUdevice srcDevice,
                                           CUdevice dstDevice)
{
        GUARD(srcDevice);
        GUARD(dstDevice);
        return REAL(cuDeviceGetP2PAttribute, value, attrib, srcDevice, dstDevice);
}

GS_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
        GUARD(dev);
        return REAL(cuDevicePrimaryCtxRelease, dev);
}

GS_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
        GUARD(dev);
        return REAL(cuDevicePrimaryCtxRelease_v2, dev);
}

GS_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
        GUARD(dev);
        return REAL(cuDevicePrimaryCtxReset, dev);
}

GS_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
        GUARD(dev);
        return REAL(cuDevicePrimaryCtxReset_v2, dev);
}

GS_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
        GUARD(dev);
        return REAL(cuDevicePrimaryCtxGetState, dev, flags, active);
}

GS_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
        GUARD(dev);
        CUresult rc = REAL(cuDeviceGetDefaultMemPool, pool_out, dev);
        if (rc == CUDA_SUCCESS && pool_out != NULL)
                gs_vgpu_pool_seen(*pool_out, dev);
        return rc;
}

GS_EXPORT CUresult cuDeviceGetDevResource(CUdevice device, CUdevResource *resource, CUdevResourceType type)
{
        GUARD(device);
        return REAL(cuDeviceGetDevResource, device, resource, type);
}

GS_EXPORT CUresult cuGreenCtxCreate(CUgreenCtx *phCtx, CUdevResourceDesc desc, CUdevice dev, unsigned int flags)
{
        GUARD(dev);
        return REAL(cuGreenCtxCreate, phCtx, desc, dev, flags);
}

GS_EXPORT CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                                 CUmemAllocationGranularity_flags option)
{
        CUmemAllocationProp p;
        if (prop != NULL) {
                p = *prop;
                if (gs_vgpu_loc_in(&p.location) < 0)
                        return CUDA_ERROR_INVALID_DEVICE;
        }
        return REAL(cuMemGetAllocationGranularity, granularity, prop != NULL ? &p : NULL, option);
}

GS_EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
        CUmemAccessDesc local[8], *mine = local;
        if (gs_vgpu_access_in(desc, count, local, 8, &mine) < 0)
                return mine == NULL ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_INVALID_DEVICE;
        CUresult rc = REAL(cuMemSetAccess, ptr, size, mine, count);
        if (mine != local && mine != desc)
                free(mine);
        return rc;
}

GS_EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
        CUmemPoolProps p;
        if (poolProps != NULL) {
                p = *poolProps;
                if (gs_vgpu_loc_in(&p.location) < 0)
                        return CUDA_ERROR_INVALID_DEVICE;
        }
        CUresult rc = REAL(cuMemPoolCreate, pool, poolProps != NULL ? &p : NULL);
        if (rc == CUDA_SUCCESS && pool != NULL && poolProps != NULL && p.location.type == CU_MEM_LOCATION_TYPE_DEVICE)
                gs_vgpu_pool_seen(*pool, p.location.id);
        return rc;
}

/* The CUDA 2.x ABI's 32-bit sizes. The driver's answer first: the real one refuses it in a 64-bit
 * process (CUDA_ERROR_INVALID_CONTEXT, driver 580), and a program must see that refusal under the
 * interposer too. Where a driver answers, the slice's view replaces its values, each saturated at
 * 4 GiB - 1 (never wrapped: 6 GiB would read as 2 GiB). */
GS_EXPORT CUresult cuMemGetInfo(unsigned int *free, unsigned int *total)
{
        unsigned int f32, t32;
        CUresult rc = REAL(cuMemGetInfo, &f32, &t32);
        if (rc != CUDA_SUCCESS)
                return rc;
        size_t f, t;
        rc = mem_info(&f, &t);
        if (rc != CUDA_SUCCESS)
                return rc;
        if (free != NULL)
                *free = f > 0xffffffffu ? 0xffffffffu : (unsigned int)f;
        if (total != NULL)
                *total = t > 0xffffffffu ? 0xffffffffu : (unsigned int)t;
        return rc;
}

/* ---- linear allocations -------------------------------------------------------------------- */

/* Charge, allocate, track; undo the charge if the driver refuses. */
#define ALLOC_CHARGED(kind, vis, bytes, key_expr, call)                                            \
        do {                                                                                       \
                CUresult rc_ = CUDA_ERROR_OUT_OF_MEMORY;                                           \
                gs_vgpu_alloc_begin();                                                             \
                if ((bytes) == 0 || gs_vgpu_charge((vis), (bytes)) == 0) {                         \
                        rc_ = (call);                                                              \
                        if (rc_ != CUDA_SUCCESS && (bytes) != 0)                                   \
                                gs_vgpu_uncharge((vis), (bytes));                                  \
                        else if (rc_ == CUDA_SUCCESS && (bytes) != 0 &&                            \
                                 gs_vgpu_track((kind), (uint64_t)(key_expr), (vis), (bytes)) < 0)  \
                                gs_vgpu_log(1, "allocation table full: %llu bytes stay charged",  \
                                            (unsigned long long)(bytes));                          \
                }                                                                                  \
                gs_vgpu_alloc_end();                                                               \
                return rc_;                                                                        \
        } while (0)

GS_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
        if (dptr == NULL)
                return REAL(cuMemAlloc_v2, dptr, bytesize);
        int vis = gs_vgpu_current_device();
        ALLOC_CHARGED(GS_ALLOC_PTR, vis, (uint64_t)bytesize, *dptr, REAL(cuMemAlloc_v2, dptr, bytesize));
}

GS_EXPORT CUresult cuMemAlloc(gs_CUdeviceptr_v1 *dptr, unsigned int bytesize)
{
        if (dptr == NULL)
                return REAL(cuMemAlloc, dptr, bytesize);
        int vis = gs_vgpu_current_device();
        ALLOC_CHARGED(GS_ALLOC_PTR, vis, (uint64_t)bytesize, *dptr, REAL(cuMemAlloc, dptr, bytesize));
}

GS_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
        if (dptr == NULL)
                return REAL(cuMemAllocManaged, dptr, bytesize, flags);
        int vis = gs_vgpu_current_device();
        ALLOC_CHARGED(GS_ALLOC_PTR, vis, (uint64_t)bytesize, *dptr, REAL(cuMemAllocManaged, dptr, bytesize, flags));
}

/* Pitched: the size is pitch*height, known only after the call; charge it then, and give the
 * memory back if that is over the quota. charge_made: false when over the quota. */
static bool charge_made(uint64_t dptr, uint64_t bytes)
{
        if (bytes == 0)
                return true;
        int vis = gs_vgpu_current_device();
        if (gs_vgpu_charge(vis, bytes) < 0)
                return false;
        gs_vgpu_track(GS_ALLOC_PTR, dptr, vis, bytes);
        return true;
}

GS_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                                      unsigned int ElementSizeBytes)
{
        gs_vgpu_alloc_begin(); /* the driver's first: until the charge, its count is ahead of ours */
        CUresult rc = REAL(cuMemAllocPitch_v2, dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
        if (rc == CUDA_SUCCESS && dptr != NULL && pPitch != NULL && !charge_made(*dptr, (uint64_t)*pPitch * Height)) {
                REAL(cuMemFree_v2, *dptr);
                *dptr = 0;
                rc = CUDA_ERROR_OUT_OF_MEMORY;
        }
        gs_vgpu_alloc_end();
        return rc;
}

GS_EXPORT CUresult cuMemAllocPitch(gs_CUdeviceptr_v1 *dptr, unsigned int *pPitch, unsigned int WidthInBytes,
                                   unsigned int Height, unsigned int ElementSizeBytes)
{
        gs_vgpu_alloc_begin(); /* the driver's first: until the charge, its count is ahead of ours */
        CUresult rc = REAL(cuMemAllocPitch, dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
        if (rc == CUDA_SUCCESS && dptr != NULL && pPitch != NULL && !charge_made(*dptr, (uint64_t)*pPitch * Height)) {
                REAL(cuMemFree, *dptr);
                *dptr = 0;
                rc = CUDA_ERROR_OUT_OF_MEMORY;
        }
        gs_vgpu_alloc_end();
        return rc;
}

/* Free: the driver first; only what it really freed is uncharged. Unknown pointers pass through. */
#define FREE_TRACKED(kind, key, call)                                                              \
        do {                                                                                       \
                int vis_;                                                                          \
                uint64_t bytes_;                                                                   \
                gs_vgpu_alloc_begin();                                                             \
                int known_ = gs_vgpu_untrack((kind), (uint64_t)(key), &vis_, &bytes_);             \
                CUresult rc_ = (call);                                                             \
                if (known_) {                                                                      \
                        if (rc_ == CUDA_SUCCESS)                                                   \
                                gs_vgpu_uncharge(vis_, bytes_);                                    \
                        else                                                                       \
                                gs_vgpu_track((kind), (uint64_t)(key), vis_, bytes_);              \
                }                                                                                  \
                gs_vgpu_alloc_end();                                                               \
                return rc_;                                                                        \
        } while (0)

GS_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) { FREE_TRACKED(GS_ALLOC_PTR, dptr, REAL(cuMemFree_v2, dptr)); }

GS_EXPORT CUresult cuMemFree(gs_CUdeviceptr_v1 dptr) { FREE_TRACKED(GS_ALLOC_PTR, dptr, REAL(cuMemFree, dptr)); }

/* ---- virtual memory management: physical memory is the handle ------------------------------ */

GS_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                               unsigned long long flags)
{
        CUmemAllocationProp p;
        if (prop == NULL)
                return REAL(cuMemCreate, handle, size, prop, flags);
        p = *prop;
        if (gs_vgpu_loc_in(&p.location) < 0)
                return CUDA_ERROR_INVALID_DEVICE;
        if (handle == NULL || p.location.type != CU_MEM_LOCATION_TYPE_DEVICE)
                return REAL(cuMemCreate, handle, size, &p, flags);
        int vis = gs_vgpu_visible_of(p.location.id);
        ALLOC_CHARGED(GS_ALLOC_HANDLE, vis, (uint64_t)size, *handle, REAL(cuMemCreate, handle, size, &p, flags));
}

GS_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
        FREE_TRACKED(GS_ALLOC_HANDLE, handle, REAL(cuMemRelease, handle));
}

/* ---- stream-ordered allocations (pools) ---------------------------------------------------- */

GS_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
        if (dptr == NULL)
                return REAL(cuMemAllocAsync, dptr, bytesize, hStream);
        int vis = gs_vgpu_current_device();
        ALLOC_CHARGED(GS_ALLOC_PTR, vis, (uint64_t)bytesize, *dptr, REAL(cuMemAllocAsync, dptr, bytesize, hStream));
}

GS_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
        if (dptr == NULL)
                return REAL(cuMemAllocAsync_ptsz, dptr, bytesize, hStream);
        int vis = gs_vgpu_current_device();
        ALLOC_CHARGED(GS_ALLOC_PTR, vis, (uint64_t)bytesize, *dptr,
                      REAL(cuMemAllocAsync_ptsz, dptr, bytesize, hStream));
}

GS_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream)
{
        if (dptr == NULL)
                return REAL(cuMemAllocFromPoolAsync, dptr, bytesize, pool, hStream);
        int vis = gs_vgpu_pool_device(pool);
        ALLOC_CHARGED(GS_ALLOC_PTR, vis, (uint64_t)bytesize, *dptr,
                      REAL(cuMemAllocFromPoolAsync, dptr, bytesize, pool, hStream));
}

GS_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                                CUstream hStream)
{
        if (dptr == NULL)
                return REAL(cuMemAllocFromPoolAsync_ptsz, dptr, bytesize, pool, hStream);
        int vis = gs_vgpu_pool_device(pool);
        ALLOC_CHARGED(GS_ALLOC_PTR, vis, (uint64_t)bytesize, *dptr,
                      REAL(cuMemAllocFromPoolAsync_ptsz, dptr, bytesize, pool, hStream));
}

GS_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
        FREE_TRACKED(GS_ALLOC_PTR, dptr, REAL(cuMemFreeAsync, dptr, hStream));
}

GS_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
        FREE_TRACKED(GS_ALLOC_PTR, dptr, REAL(cuMemFreeAsync_ptsz, dptr, hStream));
}

/* ---- arrays: their size is the element count times the element size --------------------- */

static uint64_t format_bytes(CUarray_format f)
{
        switch (f) {
        case CU_AD_FORMAT_UNSIGNED_INT8:
        case CU_AD_FORMAT_SIGNED_INT8:
        case CU_AD_FORMAT_UNORM_INT8X1:
        case CU_AD_FORMAT_SNORM_INT8X1:
                return 1;
        case CU_AD_FORMAT_UNSIGNED_INT16:
        case CU_AD_FORMAT_SIGNED_INT16:
        case CU_AD_FORMAT_HALF:
        case CU_AD_FORMAT_UNORM_INT8X2:
        case CU_AD_FORMAT_SNORM_INT8X2:
        case CU_AD_FORMAT_UNORM_INT16X1:
        case CU_AD_FORMAT_SNORM_INT16X1:
                return 2;
        case CU_AD_FORMAT_UNORM_INT8X4:
        case CU_AD_FORMAT_SNORM_INT8X4:
        case CU_AD_FORMAT_UNORM_INT16X2:
        case CU_AD_FORMAT_SNORM_INT16X2:
        case CU_AD_FORMAT_UNSIGNED_INT32:
        case CU_AD_FORMAT_SIGNED_INT32:
        case CU_AD_FORMAT_FLOAT:
                return 4;
        case CU_AD_FORMAT_UNORM_INT16X4:
        case CU_AD_FORMAT_SNORM_INT16X4:
                return 8;
        default:
                return 4;
        }
}

static uint64_t dim(size_t v) { return v != 0 ? (uint64_t)v : 1; }

static uint64_t array_bytes(size_t w, size_t h, size_t d, CUarray_format f, unsigned ch)
{
        unsigned __int128 b = (unsigned __int128)dim(w) * dim(h) * dim(d) * format_bytes(f) * (ch != 0 ? ch : 1);
        return b > UINT64_MAX ? UINT64_MAX : (uint64_t)b;
}

GS_EXPORT CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *d)
{
        if (pHandle == NULL || d == NULL)
                return REAL(cuArrayCreate_v2, pHandle, d);
        int vis = gs_vgpu_current_device();
        uint64_t bytes = array_bytes(d->Width, d->Height, 1, d->Format, d->NumChannels);
        ALLOC_CHARGED(GS_ALLOC_ARRAY, vis, bytes, (uintptr_t)*pHandle, REAL(cuArrayCreate_v2, pHandle, d));
}

GS_EXPORT CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
        if (pHandle == NULL || d == NULL)
                return REAL(cuArray3DCreate_v2, pHandle, d);
        int vis = gs_vgpu_current_device();
        uint64_t bytes = array_bytes(d->Width, d->Height, d->Depth, d->Format, d->NumChannels);
        ALLOC_CHARGED(GS_ALLOC_ARRAY, vis, bytes, (uintptr_t)*pHandle, REAL(cuArray3DCreate_v2, pHandle, d));
}

GS_EXPORT CUresult cuArrayDestroy(CUarray hArray)
{
        FREE_TRACKED(GS_ALLOC_ARRAY, (uintptr_t)hArray, REAL(cuArrayDestroy, hArray));
}

GS_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *d,
                                          unsigned int levels)
{
        if (pHandle == NULL || d == NULL)
                return REAL(cuMipmappedArrayCreate, pHandle, d, levels);
        int vis = gs_vgpu_current_device();
        uint64_t bytes = 0;
        for (unsigned l = 0; l < (levels != 0 ? levels : 1) && l < 64; l++) {
                uint64_t b = array_bytes(d->Width >> l, d->Height >> l, d->Depth >> l, d->Format, d->NumChannels);
                bytes = bytes > UINT64_MAX - b ? UINT64_MAX : bytes + b;
        }
        ALLOC_CHARGED(GS_ALLOC_MIPMAP, vis, bytes, (uintptr_t)*pHandle,
                      REAL(cuMipmappedArrayCreate, pHandle, d, levels));
}

GS_EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray h)
{
        FREE_TRACKED(GS_ALLOC_MIPMAP, (uintptr_t)h, REAL(cuMipmappedArrayDestroy, h));
}

/* ---- contexts: a new one must fit in what is left of the quota ----------------------------- */

/* Would a new context on real device dev fit? (An already active primary context costs nothing.) */
static bool context_fits(CUdevice dev, bool primary)
{
        uint64_t t0 = gs_vgpu_clock();
        bool fits = false;
        if (primary && S.cu.cuDevicePrimaryCtxGetState != NULL) {
                unsigned flags = 0;
                int active = 0;
                if (S.cu.cuDevicePrimaryCtxGetState(dev, &flags, &active) == CUDA_SUCCESS && active)
                        fits = true;
        }
        if (!fits)
                fits = gs_vgpu_admit_context(gs_vgpu_visible_of(dev)) == 0;
        gs_vgpu_spent(GS_PHASE_CONTEXT, t0);
        return fits;
}

GS_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
        GUARD(dev);
        if (gs_vgpu_load_cuda() == 0 && pctx != NULL && !context_fits(dev, true))
                return CUDA_ERROR_OUT_OF_MEMORY;
        return REAL(cuDevicePrimaryCtxRetain, pctx, dev);
}

GS_EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
        GUARD(dev);
        if (gs_vgpu_load_cuda() == 0 && pctx != NULL && !context_fits(dev, false))
                return CUDA_ERROR_OUT_OF_MEMORY;
        return REAL(cuCtxCreate_v2, pctx, flags, dev);
}

GS_EXPORT CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
        GUARD(dev);
        if (gs_vgpu_load_cuda() == 0 && pctx != NULL && !context_fits(dev, false))
                return CUDA_ERROR_OUT_OF_MEMORY;
        return REAL(cuCtxCreate, pctx, flags, dev);
}

GS_EXPORT CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
                                  unsigned int flags, CUdevice dev)
{
        GUARD(dev);
        if (gs_vgpu_load_cuda() == 0 && pctx != NULL && !context_fits(dev, false))
                return CUDA_ERROR_OUT_OF_MEMORY;
        return REAL(cuCtxCreate_v3, pctx, paramsArray, numParams, flags, dev);
}

GS_EXPORT CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags,
                                  CUdevice dev)
{
        GUARD(dev);
        if (gs_vgpu_load_cuda() == 0 && pctx != NULL && !context_fits(dev, false))
                return CUDA_ERROR_OUT_OF_MEMORY;
        return REAL(cuCtxCreate_v4, pctx, ctxCreateParams, flags, dev);
}
