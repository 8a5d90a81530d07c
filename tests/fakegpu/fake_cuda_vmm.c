/* SPDX-License-Identifier: Apache-2.0 */
/* Fake libcuda.so.1 (fake_cuda.h): virtual memory management: physical handles
 * (cuMemCreate / cuMemRelease, charged at creation), address reservations, mappings and
 * access (cuMemMap / cuMemUnmap / cuMemSetAccess), granularity. */
#include "fake_cuda.h"

#include <string.h>

static VEC(struct vmm_handle) g_handles;
static CUmemGenericAllocationHandle g_next_handle = 0x1000;
mapping_vec g_maps;

static CUresult check_prop(const CUmemAllocationProp *prop)
{
    if (prop == NULL || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
        prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(prop->location.id))
        return CUDA_ERROR_INVALID_DEVICE;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                              CUmemAllocationGranularity_flags option)
{
    CUresult rc;

    ENTER();
    if (granularity == NULL ||
        (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
        return CUDA_ERROR_INVALID_VALUE;
    rc = check_prop(prop);
    if (rc != CUDA_SUCCESS)
        return rc;
    *granularity = (size_t)GRAN;   /* 2 MiB for both (seen) */
    return CUDA_SUCCESS;
}

static struct vmm_handle *find_handle(CUmemGenericAllocationHandle h)
{
    for (size_t i = 0; i < g_handles.n; i++)
        if (g_handles.v[i].id == h)
            return &g_handles.v[i];
    return NULL;
}

static void handle_maybe_free(struct vmm_handle *h)
{
    if (h->released && h->nmaps == 0) {
        uncharge(h->dev, h->size);
        *h = g_handles.v[--g_handles.n];
    }
}

EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                            unsigned long long flags)
{
    CUresult rc;

    ENTER();
    if (handle == NULL || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    rc = check_prop(prop);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (size == 0 || size % GRAN != 0)
        return CUDA_ERROR_INVALID_VALUE;   /* seen for 0 and 4096 */
    LOCK();
    if (VEC_RESERVE(g_handles, g_handles.n + 1) < 0) {
        UNLOCK();
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    rc = charge(prop->location.id, size);
    if (rc == CUDA_SUCCESS) {
        struct vmm_handle *h = &g_handles.v[g_handles.n++];

        memset(h, 0, sizeof(*h));
        h->id = g_next_handle;
        g_next_handle += 0x10;
        h->dev = prop->location.id;
        h->size = size;
        *handle = h->id;
    }
    UNLOCK();
    return rc;
}

EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    struct vmm_handle *h;

    ENTER();
    LOCK();
    h = find_handle(handle);
    /* unknown (the real driver crashes) or released twice (seen: INVALID_VALUE) */
    if (h == NULL || h->released) {
        UNLOCK();
        return CUDA_ERROR_INVALID_VALUE;
    }
    h->released = 1;   /* the memory stays while mapped (seen) */
    handle_maybe_free(h);
    UNLOCK();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                    unsigned long long flags)
{
    struct range r;

    ENTER();
    if (ptr == NULL || size == 0 || size % GRAN != 0 || flags != 0 ||
        (alignment != 0 && (alignment & (alignment - 1)) != 0))
        return CUDA_ERROR_INVALID_VALUE;
    memset(&r, 0, sizeof(r));
    LOCK();
    r.base = va_find(size, alignment > GRAN ? alignment : GRAN, addr);
    if (r.base == 0) {
        UNLOCK();
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    r.span = r.size = size;
    r.kind = R_RESERVE;
    r.dev = -1;
    if (range_insert(&r) == NULL) {
        UNLOCK();
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    UNLOCK();
    *ptr = r.base;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    struct range *r;

    ENTER();
    LOCK();
    r = range_at(ptr);
    if (r == NULL || r->kind != R_RESERVE || r->base != ptr || r->span != size) {
        UNLOCK();
        return CUDA_ERROR_INVALID_VALUE;   /* seen for a wrong size */
    }
    for (size_t i = 0; i < g_maps.n; i++) {
        if (g_maps.v[i].base >= ptr && g_maps.v[i].base < ptr + size) {
            UNLOCK();
            return CUDA_ERROR_INVALID_VALUE;   /* still mapped */
        }
    }
    range_remove(r);
    UNLOCK();
    return CUDA_SUCCESS;
}

/* Mappings overlapping [p, p+size). */
static int maps_overlap(CUdeviceptr p, unsigned long long size)
{
    for (size_t i = 0; i < g_maps.n; i++)
        if (g_maps.v[i].base < p + size && p < g_maps.v[i].base + g_maps.v[i].size)
            return 1;
    return 0;
}

EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                         unsigned long long flags)
{
    struct range *r;
    struct vmm_handle *h;

    ENTER();
    if (size == 0 || flags != 0 || ptr % GRAN != 0 || size % GRAN != 0)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    r = range_at(ptr);
    if (r == NULL || r->kind != R_RESERVE || ptr + size > r->base + r->span) {
        UNLOCK();
        return CUDA_ERROR_INVALID_VALUE;   /* outside a reservation (seen) */
    }
    h = find_handle(handle);
    if (h == NULL || h->released) {
        UNLOCK();
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (offset != 0 || size > h->size) {
        UNLOCK();
        return CUDA_ERROR_NOT_SUPPORTED;   /* seen for offset 2 MiB and a size past the handle */
    }
    if (maps_overlap(ptr, size) || VEC_RESERVE(g_maps, g_maps.n + 1) < 0) {
        UNLOCK();
        return CUDA_ERROR_INVALID_VALUE;   /* already mapped (seen) */
    }
    g_maps.v[g_maps.n++] = (struct mapping){ ptr, size, handle, 0 };
    h->nmaps++;
    UNLOCK();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    unsigned long long covered = 0;
    int exact = 1;

    ENTER();
    if (size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    /* The range must consist of whole mappings (a partial unmap is INVALID_VALUE, seen). */
    for (size_t i = 0; i < g_maps.n; i++) {
        const struct mapping *m = &g_maps.v[i];

        if (m->base < ptr + size && ptr < m->base + m->size) {
            if (m->base < ptr || m->base + m->size > ptr + size)
                exact = 0;
            covered += m->size;
        }
    }
    if (!exact || covered != size) {
        UNLOCK();
        return CUDA_ERROR_INVALID_VALUE;
    }
    for (size_t i = 0; i < g_maps.n;) {
        const struct mapping *m = &g_maps.v[i];

        if (m->base >= ptr && m->base < ptr + size) {
            struct vmm_handle *h = find_handle(m->handle);

            g_maps.v[i] = g_maps.v[--g_maps.n];
            if (h != NULL) {
                h->nmaps--;
                handle_maybe_free(h);
            }
        } else {
            i++;
        }
    }
    UNLOCK();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
    unsigned long long covered = 0;

    ENTER();
    if (desc == NULL || count == 0 || size == 0)
        return CUDA_ERROR_INVALID_VALUE;   /* count 0: seen */
    for (size_t i = 0; i < count; i++) {
        if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE)
            return CUDA_ERROR_INVALID_VALUE;
        if (!valid_dev(desc[i].location.id))
            return CUDA_ERROR_INVALID_DEVICE;
        if (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
            desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            return CUDA_ERROR_INVALID_VALUE;
    }
    LOCK();
    for (size_t i = 0; i < g_maps.n; i++)
        if (g_maps.v[i].base >= ptr && g_maps.v[i].base + g_maps.v[i].size <= ptr + size)
            covered += g_maps.v[i].size;
    if (covered != size) {
        UNLOCK();
        return CUDA_ERROR_INVALID_VALUE;   /* not all mapped (seen) */
    }
    for (size_t i = 0; i < g_maps.n; i++)
        if (g_maps.v[i].base >= ptr && g_maps.v[i].base + g_maps.v[i].size <= ptr + size)
            g_maps.v[i].access = desc[count - 1].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE;
    UNLOCK();
    return CUDA_SUCCESS;
}
