/* SPDX-License-Identifier: Apache-2.0 */
/* Fake libcuda.so.1 (fake_cuda.h): copies and sets: validate the device range, move no data
 * (managed memory is real host memory and is really copied / set). */
#include "fake_cuda.h"

#include <string.h>

/* [p, p+n) lies inside one live allocation or accessible mapping. Returns the host address
 * for managed memory through *host (else NULL). g_mu held. */
static CUresult check_device_range(CUdeviceptr p, size_t n, void **host)
{
    struct range *r;

    *host = NULL;
    r = range_at(p);
    if (r == NULL || n > r->span - (p - r->base))
        return CUDA_ERROR_INVALID_VALUE;
    switch (r->kind) {
    case R_LINEAR:
    case R_POOL:
        return p - r->base < r->size && n <= r->size - (p - r->base) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case R_MANAGED:
        *host = (void *)(uintptr_t)p;
        return CUDA_SUCCESS;
    case R_CHUNK: {
        size_t i = sub_lower(p + 1);

        if (i == 0)
            return CUDA_ERROR_INVALID_VALUE;
        i--;
        if (p >= g_subs.v[i].base && p - g_subs.v[i].base < g_subs.v[i].size &&
            n <= g_subs.v[i].size - (p - g_subs.v[i].base))
            return CUDA_SUCCESS;
        return CUDA_ERROR_INVALID_VALUE;
    }
    case R_RESERVE:
        for (size_t i = 0; i < g_maps.n; i++) {
            const struct mapping *m = &g_maps.v[i];

            if (p >= m->base && p + n <= m->base + m->size)
                return m->access ? CUDA_SUCCESS : CUDA_ERROR_ILLEGAL_ADDRESS;
        }
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_ERROR_INVALID_VALUE;
}

static CUresult copy_check(CUdeviceptr dev, size_t n, const void *hostp, int to_device, void *hostw)
{
    struct CUctx_st *c;
    CUresult rc = need_ctx(&c);
    void *managed;

    if (rc != CUDA_SUCCESS)
        return rc;
    if (n == 0)
        return CUDA_SUCCESS;
    if (hostp == NULL && hostw == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    rc = check_device_range(dev, n, &managed);
    if (rc == CUDA_SUCCESS && managed != NULL) {
        if (to_device)
            memmove(managed, hostp, n);
        else
            memmove(hostw, managed, n);
    }
    UNLOCK();
    return rc;
}

ENTRY_POINT(cuMemcpyHtoD_v2, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount),
            copy_check(dstDevice, ByteCount, srcHost, 1, NULL))
ENTRY_POINT(cuMemcpyHtoD_v2_ptds, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount),
            copy_check(dstDevice, ByteCount, srcHost, 1, NULL))

ENTRY_POINT(cuMemcpyDtoH_v2, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount),
            copy_check(srcDevice, ByteCount, NULL, 0, dstHost))
ENTRY_POINT(cuMemcpyDtoH_v2_ptds, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount),
            copy_check(srcDevice, ByteCount, NULL, 0, dstHost))

static CUresult memset_check(CUdeviceptr dst, unsigned char uc, size_t n)
{
    struct CUctx_st *c;
    CUresult rc = need_ctx(&c);
    void *managed;

    if (rc != CUDA_SUCCESS)
        return rc;
    if (n == 0)
        return CUDA_SUCCESS;
    LOCK();
    rc = check_device_range(dst, n, &managed);
    if (rc == CUDA_SUCCESS && managed != NULL)
        memset(managed, uc, n);
    UNLOCK();
    return rc;
}

ENTRY_POINT(cuMemsetD8_v2, (CUdeviceptr dstDevice, unsigned char uc, size_t N),
            memset_check(dstDevice, uc, N))
ENTRY_POINT(cuMemsetD8_v2_ptds, (CUdeviceptr dstDevice, unsigned char uc, size_t N),
            memset_check(dstDevice, uc, N))
