/* SPDX-License-Identifier: Apache-2.0 */
/* Fake libcuda.so.1 (fake_cuda.h): streams (create, destroy, synchronize; the legacy and
 * per-thread default streams are always valid). */
#include "fake_cuda.h"

struct CUstream_st g_streams[MAX_STREAMS];

int stream_ok(CUstream s)
{
    uintptr_t p = (uintptr_t)s;

    if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
        return 1;
    if (p < (uintptr_t)&g_streams[0] || p >= (uintptr_t)&g_streams[MAX_STREAMS] ||
        (p - (uintptr_t)&g_streams[0]) % sizeof(struct CUstream_st) != 0)
        return 0;
    return __atomic_load_n(&s->live, __ATOMIC_ACQUIRE) && ctx_active(s->ctx);
}

EXPORT CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    struct CUctx_st *c;
    CUresult rc;

    ENTER();
    rc = need_ctx(&c);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (phStream == NULL || (Flags & ~(unsigned)CU_STREAM_NON_BLOCKING) != 0)
        return CUDA_ERROR_INVALID_VALUE;   /* seen for flags 8 */
    LOCK();
    for (unsigned i = 0; i < MAX_STREAMS; i++) {
        if (!g_streams[i].live) {
            g_streams[i].ctx = c;
            g_streams[i].flags = Flags;
            __atomic_store_n(&g_streams[i].live, 1, __ATOMIC_RELEASE);
            *phStream = &g_streams[i];
            UNLOCK();
            return CUDA_SUCCESS;
        }
    }
    UNLOCK();
    return CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult stream_destroy(CUstream s)
{
    if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD || !stream_ok(s))
        return CUDA_ERROR_INVALID_HANDLE;
    __atomic_store_n(&s->live, 0, __ATOMIC_RELEASE);
    return CUDA_SUCCESS;
}

ENTRY_POINT(cuStreamDestroy, (CUstream hStream), stream_destroy(hStream))
ENTRY_POINT(cuStreamDestroy_v2, (CUstream hStream), stream_destroy(hStream))

static CUresult stream_sync(CUstream s)
{
    struct CUctx_st *c;
    CUresult rc;

    if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD) {
        rc = need_ctx(&c);
        if (rc != CUDA_SUCCESS)
            return rc;
    } else {
        if (!stream_ok(s))
            return CUDA_ERROR_INVALID_HANDLE;
        c = s->ctx;
    }
    pools_release_cached(c->dev);
    return CUDA_SUCCESS;
}

ENTRY_POINT(cuStreamSynchronize, (CUstream hStream), stream_sync(hStream))
ENTRY_POINT(cuStreamSynchronize_ptsz, (CUstream hStream), stream_sync(hStream))
