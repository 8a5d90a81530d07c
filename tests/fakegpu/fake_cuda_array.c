/* SPDX-License-Identifier: Apache-2.0 */
/* Fake libcuda.so.1 (fake_cuda.h): arrays and mipmapped arrays (charged by their extent and
 * element size, rounded to 2 MiB). */
#include "fake_cuda.h"

#include <limits.h>

struct CUarray_st g_arrays[MAX_ARRAYS];

/* Bytes per element of a format with n channels, or 0 if invalid. */
static unsigned elem_bytes(CUarray_format f, unsigned n)
{
    unsigned b;

    switch ((int)f) {
    case CU_AD_FORMAT_UNSIGNED_INT8: case CU_AD_FORMAT_SIGNED_INT8: b = 1; break;
    case CU_AD_FORMAT_UNSIGNED_INT16: case CU_AD_FORMAT_SIGNED_INT16: case CU_AD_FORMAT_HALF: b = 2; break;
    case CU_AD_FORMAT_UNSIGNED_INT32: case CU_AD_FORMAT_SIGNED_INT32: case CU_AD_FORMAT_FLOAT: b = 4; break;
    /* normalized formats carry their channel count in the format: NumChannels must match */
    case CU_AD_FORMAT_UNORM_INT8X1: case CU_AD_FORMAT_SNORM_INT8X1: return n == 1 ? 1 : 0;
    case CU_AD_FORMAT_UNORM_INT8X2: case CU_AD_FORMAT_SNORM_INT8X2: return n == 2 ? 2 : 0;
    case CU_AD_FORMAT_UNORM_INT8X4: case CU_AD_FORMAT_SNORM_INT8X4: return n == 4 ? 4 : 0;
    case CU_AD_FORMAT_UNORM_INT16X1: case CU_AD_FORMAT_SNORM_INT16X1: return n == 1 ? 2 : 0;
    case CU_AD_FORMAT_UNORM_INT16X2: case CU_AD_FORMAT_SNORM_INT16X2: return n == 2 ? 4 : 0;
    case CU_AD_FORMAT_UNORM_INT16X4: case CU_AD_FORMAT_SNORM_INT16X4: return n == 4 ? 8 : 0;
    default: return 0;
    }
    if (n != 1 && n != 2 && n != 4)   /* seen: 3 channels -> INVALID_VALUE */
        return 0;
    return b * n;
}

/* Bytes of a w x h x d array (h, d may be 0 = 1), or 0 on overflow. */
static unsigned long long array_bytes(unsigned long long w, unsigned long long h, unsigned long long d,
                                      unsigned eb)
{
    unsigned long long v = w * eb;

    if (h == 0)
        h = 1;
    if (d == 0)
        d = 1;
    if (w != 0 && v / w != eb)
        return 0;
    if (v > ULLONG_MAX / h)
        return 0;
    v *= h;
    if (v > ULLONG_MAX / d)
        return 0;
    return v * d;
}

static CUresult array_new(int mipmapped, unsigned long long bytes, struct CUarray_st **out)
{
    struct CUctx_st *c;
    CUresult rc = need_ctx(&c);
    unsigned long long ch;

    if (rc != CUDA_SUCCESS)
        return rc;
    ch = round_up(bytes, GRAN);
    if (bytes == 0 || ch < bytes)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    for (unsigned i = 0; i < MAX_ARRAYS; i++) {
        if (!g_arrays[i].live) {
            rc = charge(c->dev, ch);
            if (rc == CUDA_SUCCESS) {
                g_arrays[i].mipmapped = mipmapped;
                g_arrays[i].ctx = c;
                g_arrays[i].dev = c->dev;
                g_arrays[i].charge = ch;
                __atomic_store_n(&g_arrays[i].live, 1, __ATOMIC_RELEASE);
                *out = &g_arrays[i];
            }
            UNLOCK();
            return rc;
        }
    }
    UNLOCK();
    return CUDA_ERROR_OUT_OF_MEMORY;
}

static int array_ok(const struct CUarray_st *a, int mipmapped)
{
    uintptr_t p = (uintptr_t)a;

    return p >= (uintptr_t)&g_arrays[0] && p < (uintptr_t)&g_arrays[MAX_ARRAYS] &&
           (p - (uintptr_t)&g_arrays[0]) % sizeof(*a) == 0 && a->live && a->mipmapped == mipmapped;
}

static CUresult array_destroy(struct CUarray_st *a, int mipmapped)
{
    LOCK();
    if (a == NULL || !array_ok(a, mipmapped)) {
        UNLOCK();
        return CUDA_ERROR_INVALID_HANDLE;
    }
    uncharge(a->dev, a->charge);
    __atomic_store_n(&a->live, 0, __ATOMIC_RELEASE);
    UNLOCK();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
    unsigned eb;
    unsigned long long bytes;

    ENTER();
    if (pHandle == NULL || pAllocateArray == NULL || pAllocateArray->Width == 0)
        return CUDA_ERROR_INVALID_VALUE;
    eb = elem_bytes(pAllocateArray->Format, pAllocateArray->NumChannels);
    if (eb == 0)
        return CUDA_ERROR_INVALID_VALUE;
    bytes = array_bytes(pAllocateArray->Width, pAllocateArray->Height, 1, eb);
    if (bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    return array_new(0, bytes, pHandle);
}

static int depth_of(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned long long *depth)
{
    unsigned long long v = d->Depth ? d->Depth : 1;

    if (d->Flags & CUDA_ARRAY3D_CUBEMAP) {
        if (d->Width != d->Height)
            return -1;
        if (d->Flags & CUDA_ARRAY3D_LAYERED) {
            if (d->Depth == 0 || d->Depth % 6 != 0)
                return -1;
        } else {
            if (d->Depth != 6)
                return -1;
        }
    }
    *depth = v;
    return 0;
}

EXPORT CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
    unsigned eb;
    unsigned long long bytes, depth;

    ENTER();
    if (pHandle == NULL || pAllocateArray == NULL || pAllocateArray->Width == 0 ||
        (pAllocateArray->Depth > 0 && pAllocateArray->Height == 0 &&
         !(pAllocateArray->Flags & CUDA_ARRAY3D_LAYERED)))
        return CUDA_ERROR_INVALID_VALUE;
    eb = elem_bytes(pAllocateArray->Format, pAllocateArray->NumChannels);
    if (eb == 0 || depth_of(pAllocateArray, &depth) < 0)
        return CUDA_ERROR_INVALID_VALUE;
    bytes = array_bytes(pAllocateArray->Width, pAllocateArray->Height, depth, eb);
    if (bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    return array_new(0, bytes, pHandle);
}

ENTRY_POINT(cuArrayDestroy, (CUarray hArray), array_destroy(hArray, 0))

EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *desc,
                                       unsigned int numMipmapLevels)
{
    unsigned eb;
    unsigned long long total = 0, w, h, d, depth;
    int layered;

    ENTER();
    if (pHandle == NULL || desc == NULL || desc->Width == 0 || numMipmapLevels == 0)
        return CUDA_ERROR_INVALID_VALUE;
    eb = elem_bytes(desc->Format, desc->NumChannels);
    if (eb == 0 || depth_of(desc, &depth) < 0)
        return CUDA_ERROR_INVALID_VALUE;
    layered = (desc->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP)) != 0;
    w = desc->Width;
    h = desc->Height;
    d = depth;
    /* levels beyond 1 + floor(log2(max extent)) are invalid */
    {
        unsigned long long m = w > h ? w : h;
        unsigned max_levels = 0;

        if (!layered && d > m)
            m = d;
        while (m > 0) {
            max_levels++;
            m >>= 1;
        }
        if (numMipmapLevels > max_levels)
            return CUDA_ERROR_INVALID_VALUE;
    }
    for (unsigned l = 0; l < numMipmapLevels; l++) {
        unsigned long long b = array_bytes(w, h, d, eb);

        if (b == 0 || total + b < total)
            return CUDA_ERROR_INVALID_VALUE;
        total += b;
        w = w > 1 ? w / 2 : 1;
        h = h > 1 ? h / 2 : h;
        if (!layered)
            d = d > 1 ? d / 2 : 1;
    }
    return array_new(1, total, (struct CUarray_st **)pHandle);
}

ENTRY_POINT(cuMipmappedArrayDestroy, (CUmipmappedArray hMipmappedArray),
            array_destroy((struct CUarray_st *)hMipmappedArray, 1))
