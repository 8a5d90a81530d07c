/* SPDX-License-Identifier: Apache-2.0 */
/* Fake libcuda.so.1 (fake_cuda.h): stream-ordered allocation (cuMemAllocAsync,
 * cuMemAllocFromPoolAsync, cuMemFreeAsync) and memory pools: one default pool per device,
 * cuMemPoolCreate for more; freed memory stays charged in its pool until a synchronize, a trim
 * or a cuMemFree_v2 of a pool pointer (release threshold 0). */
#include "fake_cuda.h"

#include <string.h>

struct CUmemPoolHandle_st g_default_pool[MAX_DEV];
struct CUmemPoolHandle_st g_pools[MAX_POOLS];

/* Synchronising a context returns the memory its device's pools hold (threshold 0). */
void pools_release_cached_locked(int dev)
{
    for (int d = 0; d < g_ndev; d++) {
        if (dev >= 0 && d != dev)
            continue;
        if (g_default_pool[d].cached > 0) {
            uncharge(d, g_default_pool[d].cached);
            g_default_pool[d].cached = 0;
        }
    }
    for (unsigned i = 0; i < MAX_POOLS; i++) {
        struct CUmemPoolHandle_st *p = &g_pools[i];

        if (p->live && (dev < 0 || p->dev == dev) && p->cached > 0) {
            uncharge(p->dev, p->cached);
            p->cached = 0;
        }
    }
}

void pools_release_cached(int dev)
{
    LOCK();
    pools_release_cached_locked(dev);
    UNLOCK();
}

/* A stream-ordered allocation (or a 32 MiB block of them) goes back to its pool: the memory
 * stays charged in the pool until a synchronize or trim (g_mu held); r is removed. */
void pool_retire(struct range *r)
{
    struct CUmemPoolHandle_st *pool = r->pool;

    pool->cached += r->charge;
    r->charge = 0;
    if (pool->outstanding > 0)
        pool->outstanding--;
    range_remove(r);
    if (pool->destroyed && pool->outstanding == 0) {
        uncharge(pool->dev, pool->cached);
        pool->cached = 0;
        pool->live = 0;
    }
}

static int pool_ok(const struct CUmemPoolHandle_st *p)
{
    uintptr_t a = (uintptr_t)p;

    if (a >= (uintptr_t)&g_default_pool[0] && a < (uintptr_t)&g_default_pool[MAX_DEV])
        return (a - (uintptr_t)&g_default_pool[0]) % sizeof(*p) == 0 && p->live;
    if (a >= (uintptr_t)&g_pools[0] && a < (uintptr_t)&g_pools[MAX_POOLS])
        return (a - (uintptr_t)&g_pools[0]) % sizeof(*p) == 0 && p->live && !p->destroyed;
    return 0;
}

static CUresult pool_alloc(CUdeviceptr *dptr, size_t bytesize, struct CUmemPoolHandle_st *pool, CUstream s)
{
    struct CUctx_st *c;
    struct range r;
    CUresult rc;
    unsigned long long span;

    rc = need_ctx(&c);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (dptr == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!stream_ok(s))
        return CUDA_ERROR_INVALID_HANDLE;
    if (bytesize == 0) {
        *dptr = 0;   /* seen: success */
        return CUDA_SUCCESS;
    }
    span = round_up(bytesize, GRAN);
    if (span < bytesize)
        return CUDA_ERROR_OUT_OF_MEMORY;
    LOCK();
    if (pool == NULL)
        pool = &g_default_pool[c->dev];
    if (!pool_ok(pool)) {
        UNLOCK();
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (bytesize < GRAN) {
        /* Small: pack into the pool's newest 32 MiB block with room (seen: two 1000-byte
         * allocations cost 32 MiB, 1 KiB apart). */
        unsigned long long need = round_up(bytesize, SMALL_ALIGN);

        for (size_t k = g_ranges.n; k-- > 0;) {
            struct range *cr = &g_ranges.v[k];

            if (cr->kind == R_CHUNK && cr->pool == pool && cr->ctx == c && cr->next + need <= cr->span) {
                rc = sub_insert(cr, bytesize, dptr);
                UNLOCK();
                return rc;
            }
        }
        span = POOL_CHUNK;
    }
    /* Reuse what the pool holds, charge the rest. */
    if (pool->cached >= span) {
        pool->cached -= span;
    } else {
        rc = charge(pool->dev, span - pool->cached);
        if (rc != CUDA_SUCCESS) {
            UNLOCK();
            return rc;
        }
        pool->cached = 0;
    }
    memset(&r, 0, sizeof(r));
    r.base = va_find(span, GRAN, 0);
    r.span = span;
    r.size = bytesize < GRAN ? span : bytesize;
    r.kind = bytesize < GRAN ? R_CHUNK : R_POOL;
    r.dev = pool->dev;
    r.ctx = c;
    r.charge = span;
    r.pool = pool;
    {
        struct range *nr = r.base == 0 ? NULL : range_insert(&r);

        if (nr == NULL) {
            uncharge(pool->dev, span);
            UNLOCK();
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        pool->outstanding++;
        if (nr->kind == R_CHUNK)
            rc = sub_insert(nr, bytesize, dptr);
        else
            *dptr = nr->base;
    }
    UNLOCK();
    return rc;
}

ENTRY_POINT(cuMemAllocAsync, (CUdeviceptr *dptr, size_t bytesize, CUstream hStream),
            pool_alloc(dptr, bytesize, NULL, hStream))
ENTRY_POINT(cuMemAllocAsync_ptsz, (CUdeviceptr *dptr, size_t bytesize, CUstream hStream),
            pool_alloc(dptr, bytesize, NULL, hStream))

static CUresult from_pool_alloc(CUdeviceptr *dptr, size_t bytesize, struct CUmemPoolHandle_st *pool, CUstream s)
{
    if (pool == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return pool_alloc(dptr, bytesize, pool, s);
}

ENTRY_POINT(cuMemAllocFromPoolAsync, (CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),
            from_pool_alloc(dptr, bytesize, pool, hStream))
ENTRY_POINT(cuMemAllocFromPoolAsync_ptsz,
            (CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),
            from_pool_alloc(dptr, bytesize, pool, hStream))

static CUresult pool_free(CUdeviceptr dptr, CUstream s)
{
    CUresult rc;
    int pool_dev;

    if (!stream_ok(s))
        return CUDA_ERROR_INVALID_HANDLE;
    LOCK();
    /* Any cuMemAlloc* / stream-ordered pointer (freed after the stream's work); unknown:
     * INVALID_VALUE (seen). Pool memory stays with the pool until a synchronize / trim. */
    rc = release_pointer(dptr, &pool_dev);
    UNLOCK();
    return rc;
}

ENTRY_POINT(cuMemFreeAsync, (CUdeviceptr dptr, CUstream hStream), pool_free(dptr, hStream))
ENTRY_POINT(cuMemFreeAsync_ptsz, (CUdeviceptr dptr, CUstream hStream), pool_free(dptr, hStream))

EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
    ENTER();
    if (pool == NULL || poolProps == NULL || poolProps->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
        poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(poolProps->location.id))
        return CUDA_ERROR_INVALID_DEVICE;
    for (size_t i = 0; i < sizeof(poolProps->reserved); i++)
        if (poolProps->reserved[i] != 0)
            return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    for (unsigned i = 0; i < MAX_POOLS; i++) {
        if (!g_pools[i].live) {
            memset(&g_pools[i], 0, sizeof(g_pools[i]));
            g_pools[i].live = 1;
            g_pools[i].dev = poolProps->location.id;
            *pool = &g_pools[i];
            UNLOCK();
            return CUDA_SUCCESS;
        }
    }
    UNLOCK();
    return CUDA_ERROR_OUT_OF_MEMORY;
}

EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    ENTER();
    LOCK();
    if (pool == NULL || !pool_ok(pool) || pool->is_default) {
        UNLOCK();
        return CUDA_ERROR_INVALID_VALUE;
    }
    /* Outstanding allocations keep the pool's memory until they are freed. */
    pool->destroyed = 1;
    if (pool->outstanding == 0) {
        uncharge(pool->dev, pool->cached);
        pool->cached = 0;
        pool->live = 0;
    }
    UNLOCK();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    ENTER();
    LOCK();
    if (pool == NULL || !pool_ok(pool)) {
        UNLOCK();
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (pool->cached > minBytesToKeep) {
        unsigned long long release = round_up(pool->cached - minBytesToKeep, GRAN);

        if (release > pool->cached)
            release = pool->cached;
        uncharge(pool->dev, release);
        pool->cached -= release;
    }
    UNLOCK();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    ENTER();
    if (pool_out == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    *pool_out = &g_default_pool[dev];
    return CUDA_SUCCESS;
}
