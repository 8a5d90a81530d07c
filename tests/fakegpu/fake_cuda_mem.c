/* SPDX-License-Identifier: Apache-2.0 */
/* Fake libcuda.so.1 (fake_cuda.h): the device address space (sorted ranges inside a PROT_NONE
 * reservation, sub-allocations packed into 2 MiB chunks) and linear memory: cuMemAlloc*,
 * cuMemAllocPitch*, cuMemAllocManaged, pinned host memory, cuMemFree*, cuMemGetInfo*. */
#include "fake_cuda.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

range_vec g_ranges;
sub_vec g_subs;
host_alloc_vec g_hosts;
CUdeviceptr g_arena_base, g_arena_end, g_cursor;

/* ---------------------------------------------------------------------------------------- */
/* Device virtual address space                                                              */
/* ---------------------------------------------------------------------------------------- */

/* Index of the first range with base >= addr. */
size_t range_lower(CUdeviceptr addr)
{
    size_t lo = 0, hi = g_ranges.n;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;

        if (g_ranges.v[mid].base < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The range containing addr within its span, or NULL. */
struct range *range_at(CUdeviceptr addr)
{
    size_t i = range_lower(addr + 1);

    if (i == 0)
        return NULL;
    i--;
    if (addr >= g_ranges.v[i].base && addr - g_ranges.v[i].base < g_ranges.v[i].span)
        return &g_ranges.v[i];
    return NULL;
}

/* Find free address space of span bytes (align: power of two) in the arena, next-fit from the
 * cursor; hint: preferred address (0: none). Returns 0 if none. */
CUdeviceptr va_find(unsigned long long span, unsigned long long align, CUdeviceptr hint)
{
    if (g_arena_base == 0 || span == 0 || span > g_arena_end - g_arena_base)
        return 0;
    for (int pass = 0; pass < 3; pass++) {
        CUdeviceptr cand;
        size_t i;

        if (pass == 0 && hint == 0)
            continue;
        cand = pass == 0 ? hint : pass == 1 ? g_cursor : g_arena_base;
        cand = round_up(cand < g_arena_base ? g_arena_base : cand, align);
        i = range_lower(cand);
        if (i > 0) {
            const struct range *pr = &g_ranges.v[i - 1];

            if (pr->base + pr->span > cand) {
                if (pass == 0)
                    continue;
                cand = round_up(pr->base + pr->span, align);
            }
        }
        for (; i < g_ranges.n && cand + span > g_ranges.v[i].base && cand + span <= g_arena_end; i++) {
            if (pass == 0)
                break;
            cand = round_up(g_ranges.v[i].base + g_ranges.v[i].span, align);
        }
        if (pass == 0 && i < g_ranges.n && cand + span > g_ranges.v[i].base)
            continue;
        if (cand >= g_arena_base && cand + span <= g_arena_end && cand + span > cand)
            return cand;
    }
    return 0;
}

struct range *range_insert(const struct range *r)
{
    size_t i;

    if (VEC_RESERVE(g_ranges, g_ranges.n + 1) < 0)
        return NULL;
    i = range_lower(r->base);
    memmove(&g_ranges.v[i + 1], &g_ranges.v[i], (g_ranges.n - i) * sizeof(*g_ranges.v));
    g_ranges.v[i] = *r;
    g_ranges.n++;
    if (r->kind != R_MANAGED && r->base + r->span > g_cursor)
        g_cursor = r->base + r->span;
    return &g_ranges.v[i];
}

void range_remove(struct range *r)
{
    size_t i = (size_t)(r - g_ranges.v);

    memmove(&g_ranges.v[i], &g_ranges.v[i + 1], (g_ranges.n - i - 1) * sizeof(*g_ranges.v));
    g_ranges.n--;
}

size_t sub_lower(CUdeviceptr addr)
{
    size_t lo = 0, hi = g_subs.n;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;

        if (g_subs.v[mid].base < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Record a sub-allocation of bytes at the chunk's bump offset (g_mu held). */
CUresult sub_insert(struct range *chunk, unsigned long long bytes, CUdeviceptr *out)
{
    struct sub s;
    size_t i;

    if (VEC_RESERVE(g_subs, g_subs.n + 1) < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    s.base = chunk->base + chunk->next;
    s.size = bytes;
    chunk->next += round_up(bytes, SMALL_ALIGN);
    chunk->nsubs++;
    i = sub_lower(s.base);
    memmove(&g_subs.v[i + 1], &g_subs.v[i], (g_subs.n - i) * sizeof(*g_subs.v));
    g_subs.v[i] = s;
    g_subs.n++;
    *out = s.base;
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------------------------------- */
/* Linear memory                                                                             */
/* ---------------------------------------------------------------------------------------- */

/* Allocate bytes of linear device memory on c's device (g_mu held). */
static CUresult linear_alloc(struct CUctx_st *c, unsigned long long bytes, CUdeviceptr *out)
{
    struct range r;
    CUresult rc;

    if (bytes < GRAN) {
        /* Small: pack into the newest chunk of this context with room, else a new chunk. */
        unsigned long long need = round_up(bytes, SMALL_ALIGN);
        struct range *chunk = NULL;

        for (size_t k = g_ranges.n; k-- > 0;) {
            struct range *cr = &g_ranges.v[k];

            if (cr->kind == R_CHUNK && cr->ctx == c && cr->pool == NULL && cr->next + need <= cr->span) {
                chunk = cr;
                break;
            }
        }
        if (chunk == NULL) {
            memset(&r, 0, sizeof(r));
            r.base = va_find(GRAN, GRAN, 0);
            if (r.base == 0)
                return CUDA_ERROR_OUT_OF_MEMORY;
            rc = charge(c->dev, GRAN);
            if (rc != CUDA_SUCCESS)
                return rc;
            r.span = r.size = r.charge = GRAN;
            r.kind = R_CHUNK;
            r.dev = c->dev;
            r.ctx = c;
            chunk = range_insert(&r);
            if (chunk == NULL) {
                uncharge(c->dev, GRAN);
                return CUDA_ERROR_OUT_OF_MEMORY;
            }
        }
        return sub_insert(chunk, bytes, out);
    }
    memset(&r, 0, sizeof(r));
    r.span = round_up(bytes, GRAN);
    if (r.span < bytes)
        return CUDA_ERROR_OUT_OF_MEMORY;
    rc = charge(c->dev, r.span);
    if (rc != CUDA_SUCCESS)
        return rc;
    r.base = va_find(r.span, GRAN, 0);
    if (r.base == 0) {
        uncharge(c->dev, r.span);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    r.size = bytes;
    r.charge = r.span;
    r.kind = R_LINEAR;
    r.dev = c->dev;
    r.ctx = c;
    if (range_insert(&r) == NULL) {
        uncharge(c->dev, r.span);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *out = r.base;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    struct CUctx_st *c;
    CUresult rc;

    ENTER();
    rc = need_ctx(&c);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (dptr == NULL || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    rc = linear_alloc(c, bytesize, dptr);
    UNLOCK();
    return rc;
}

/* The 32-bit entry points of the CUDA 2.x ABI answer INVALID_CONTEXT in a 64-bit process, even
 * with a current context (seen on driver 580.159.04 for cuMemAlloc and cuMemGetInfo). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
ENTRY_POINT(cuMemAlloc, (gs_CUdeviceptr_v1 *dptr, unsigned int bytesize), CUDA_ERROR_INVALID_CONTEXT)
ENTRY_POINT(cuMemAllocPitch,
            (gs_CUdeviceptr_v1 *dptr, unsigned int *pPitch, unsigned int WidthInBytes, unsigned int Height,
             unsigned int ElementSizeBytes),
            CUDA_ERROR_INVALID_CONTEXT)
ENTRY_POINT(cuMemFree, (gs_CUdeviceptr_v1 dptr), CUDA_ERROR_INVALID_CONTEXT)
ENTRY_POINT(cuMemAllocHost, (void **pp, unsigned int bytesize), CUDA_ERROR_INVALID_CONTEXT)
#pragma GCC diagnostic pop

EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                                   unsigned int ElementSizeBytes)
{
    struct CUctx_st *c;
    unsigned long long pitch, bytes;
    CUresult rc;

    ENTER();
    rc = need_ctx(&c);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (dptr == NULL || pPitch == NULL || WidthInBytes == 0 || Height == 0 ||
        (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
        return CUDA_ERROR_INVALID_VALUE;
    pitch = round_up(WidthInBytes, PITCH_ALIGN);
    if (pitch < WidthInBytes || Height > ULLONG_MAX / pitch)
        return CUDA_ERROR_OUT_OF_MEMORY;
    bytes = pitch * Height;
    LOCK();
    rc = linear_alloc(c, bytes, dptr);
    UNLOCK();
    if (rc == CUDA_SUCCESS)
        *pPitch = (size_t)pitch;
    return rc;
}

EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    struct CUctx_st *c;
    struct range r;
    void *p;
    CUresult rc;

    ENTER();
    rc = need_ctx(&c);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (dptr == NULL || bytesize == 0 || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
        return CUDA_ERROR_INVALID_VALUE;
    /* Real host memory (managed memory is host-accessible); not resident on the device until a
     * kernel touches it, so not charged (seen: +0 MiB for 64 MiB on driver 580.159.04). */
    p = mmap(NULL, round_up(bytesize, 4096), PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    memset(&r, 0, sizeof(r));
    r.base = (uintptr_t)p;
    r.span = round_up(bytesize, 4096);
    r.size = bytesize;
    r.kind = R_MANAGED;
    r.dev = c->dev;
    r.ctx = c;
    LOCK();
    if (range_insert(&r) == NULL) {
        UNLOCK();
        munmap(p, r.span);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    UNLOCK();
    *dptr = r.base;
    return CUDA_SUCCESS;
}

/* Free one range's memory (g_mu held); r is removed from g_ranges. */
void free_range_locked(struct range *r)
{
    if (r->kind == R_MANAGED)
        munmap((void *)(uintptr_t)r->base, r->span);
    if (r->kind == R_CHUNK) {
        size_t i = sub_lower(r->base), j = i;

        while (j < g_subs.n && g_subs.v[j].base < r->base + r->span)
            j++;
        memmove(&g_subs.v[i], &g_subs.v[j], (g_subs.n - j) * sizeof(*g_subs.v));
        g_subs.n -= j - i;
    }
    if ((r->kind == R_POOL || r->kind == R_CHUNK) && r->pool != NULL) {
        /* Freed with its context: the pool memory goes back too. */
        if (r->pool->outstanding > 0)
            r->pool->outstanding--;
    }
    if (r->charge > 0)
        uncharge(r->dev, r->charge);
    range_remove(r);
}

/* Free a pointer from cuMemAlloc*, cuMemAllocManaged or the stream-ordered allocators
 * (g_mu held). *pool_dev: the device whose pool got memory back, or -1. */
CUresult release_pointer(CUdeviceptr p, int *pool_dev)
{
    struct range *r;
    size_t i;

    *pool_dev = -1;
    i = sub_lower(p);
    if (i < g_subs.n && g_subs.v[i].base == p) {
        r = range_at(p);
        memmove(&g_subs.v[i], &g_subs.v[i + 1], (g_subs.n - i - 1) * sizeof(*g_subs.v));
        g_subs.n--;
        if (r != NULL && r->kind == R_CHUNK && --r->nsubs == 0) {
            if (r->pool != NULL) {
                *pool_dev = r->pool->dev;
                pool_retire(r);
            } else {
                free_range_locked(r);
            }
        }
        return CUDA_SUCCESS;
    }
    r = range_at(p);
    if (r == NULL || r->base != p || (r->kind != R_LINEAR && r->kind != R_MANAGED && r->kind != R_POOL))
        return CUDA_ERROR_INVALID_VALUE;   /* unknown, interior, VMM: seen INVALID_VALUE */
    if (r->kind == R_POOL) {
        *pool_dev = r->pool->dev;
        pool_retire(r);
    } else {
        free_range_locked(r);
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    CUresult rc;
    int pool_dev;

    ENTER();
    if (dptr == 0)
        return CUDA_SUCCESS;   /* seen */
    LOCK();
    rc = release_pointer(dptr, &pool_dev);
    /* cuMemFree of a stream-ordered allocation synchronises: the pool lets the memory go. */
    if (pool_dev >= 0)
        pools_release_cached_locked(pool_dev);
    UNLOCK();
    return rc;
}

/* As the real driver, the 32-bit cuMemGetInfo answers INVALID_CONTEXT in a 64-bit process (above).
 * FAKEGPU_LEGACY_MEMINFO=1 plays a driver that answers it (each value saturated at 4 GiB - 1), so
 * that what an interposer does with such an answer can be tested too. */
EXPORT CUresult cuMemGetInfo_v2(size_t *free, size_t *total);
EXPORT CUresult cuMemGetInfo(unsigned int *free, unsigned int *total)
{
    size_t f, t;
    CUresult rc;

    ENTER();
    if (getenv("FAKEGPU_LEGACY_MEMINFO") == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    rc = cuMemGetInfo_v2(&f, &t);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (free != NULL)
        *free = f > 0xffffffffu ? 0xffffffffu : (unsigned int)f;
    if (total != NULL)
        *total = t > 0xffffffffu ? 0xffffffffu : (unsigned int)t;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemGetInfo_v2(size_t *free, size_t *total)
{
    struct CUctx_st *c;
    CUresult rc;
    int locked;

    ENTER();
    rc = need_ctx(&c);
    if (rc != CUDA_SUCCESS)
        return rc;
    /* NULL pointers are accepted (seen). */
    LOCK();
    locked = fg_state_lock(&g_shared) == 0;
    if (locked)
        fg_state_reap(&g_shared);
    if (free != NULL)
        *free = (size_t)dev_free(c->dev);
    if (total != NULL)
        *total = (size_t)g_dev[c->dev].total;
    if (locked)
        fg_state_unlock(&g_shared);
    UNLOCK();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    struct CUctx_st *c;
    void *p;
    CUresult rc;

    ENTER();
    rc = need_ctx(&c);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (pp == NULL || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    p = mmap(NULL, bytesize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    LOCK();
    if (VEC_RESERVE(g_hosts, g_hosts.n + 1) < 0) {
        UNLOCK();
        munmap(p, bytesize);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    g_hosts.v[g_hosts.n++] = (struct host_alloc){ p, bytesize, c };
    UNLOCK();
    *pp = p;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFreeHost(void *p)
{
    ENTER();
    LOCK();
    for (size_t i = 0; i < g_hosts.n; i++) {
        if (g_hosts.v[i].p == p) {
            munmap(p, g_hosts.v[i].size);
            g_hosts.v[i] = g_hosts.v[--g_hosts.n];
            UNLOCK();
            return CUDA_SUCCESS;
        }
    }
    UNLOCK();
    return CUDA_ERROR_INVALID_VALUE;
}
