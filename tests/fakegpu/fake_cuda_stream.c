/* SPDX-License-Identifier: Apache-2.0 */
/* Fake libcuda.so.1 (fake_cuda.h): streams: create, destroy, query, synchronize, and what a
 * stream is to the time model (stream_resolve): its tail, its SMs, its capture. The legacy and
 * per-thread default streams are always valid; the legacy stream's tail is its device's (it
 * waits for all other work), the per-thread streams of a device share one tail. */
#include "fake_cuda.h"

struct CUstream_st g_streams[MAX_STREAMS];

/* The per-thread default stream's capture (capture is per thread, like that stream). */
static __thread struct CUgraph_st *t_ptds_capture;

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

CUresult stream_resolve(CUstream s, int ptsz, struct sref *out)
{
    struct CUctx_st *c;
    CUresult rc;

    if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD) {
        rc = need_ctx(&c);
        if (rc != CUDA_SUCCESS)
            return rc;
        out->ctx = c;
        out->dev = c->dev;
        out->sms = ctx_sms(cur_ctx());
        if (s == CU_STREAM_PER_THREAD || (s == NULL && ptsz)) {
            out->tail = tl_ptds_tail(c->dev);
            out->capture = &t_ptds_capture;
        } else {
            out->tail = tl_device_tail(c->dev);
            out->capture = NULL;
        }
        return CUDA_SUCCESS;
    }
    if (!stream_ok(s))
        return CUDA_ERROR_INVALID_HANDLE;
    out->ctx = s->ctx;
    out->dev = s->ctx->dev;
    out->sms = s->sms;
    out->tail = &s->tail;
    out->capture = &s->capture;
    return CUDA_SUCCESS;
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
            g_streams[i].sms = ctx_sms(cur_ctx());   /* a green context's streams run on its SMs */
            g_streams[i].tail = 0;
            g_streams[i].capture = NULL;
            __atomic_store_n(&g_streams[i].live, 1, __ATOMIC_RELEASE);
            *phStream = &g_streams[i];
            UNLOCK();
            return CUDA_SUCCESS;
        }
    }
    UNLOCK();
    return CUDA_ERROR_OUT_OF_MEMORY;
}

void stream_retire(struct CUstream_st *s)
{
    struct CUgraph_st *g = __atomic_exchange_n(&s->capture, NULL, __ATOMIC_ACQ_REL);

    if (g != NULL)
        graph_drop(g);
    __atomic_store_n(&s->live, 0, __ATOMIC_RELEASE);
}

static CUresult stream_destroy(CUstream s)
{
    if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD || !stream_ok(s))
        return CUDA_ERROR_INVALID_HANDLE;
    LOCK();
    stream_retire(s);
    UNLOCK();
    return CUDA_SUCCESS;
}

ENTRY_POINT(cuStreamDestroy, (CUstream hStream), stream_destroy(hStream))
ENTRY_POINT(cuStreamDestroy_v2, (CUstream hStream), stream_destroy(hStream))

/* Query and synchronize are illegal on a capturing stream (and invalidate the capture). */
static CUresult stream_query(CUstream s, int ptsz)
{
    struct sref r;
    struct CUgraph_st *g;
    CUresult rc = stream_resolve(s, ptsz, &r);

    if (rc != CUDA_SUCCESS)
        return rc;
    if ((g = capture_of(&r)) != NULL)
        return capture_violation(g);
    return tail_of(r.tail) > now_ns() ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

ENTRY_POINT(cuStreamQuery, (CUstream hStream), stream_query(hStream, 0))
ENTRY_POINT(cuStreamQuery_ptsz, (CUstream hStream), stream_query(hStream, 1))

static CUresult stream_sync(CUstream s, int ptsz)
{
    struct sref r;
    struct CUgraph_st *g;
    CUresult rc = stream_resolve(s, ptsz, &r);

    if (rc != CUDA_SUCCESS)
        return rc;
    if ((g = capture_of(&r)) != NULL)
        return capture_violation(g);
    sleep_until(tail_of(r.tail));
    pools_release_cached(r.dev);
    return CUDA_SUCCESS;
}

ENTRY_POINT(cuStreamSynchronize, (CUstream hStream), stream_sync(hStream, 0))
ENTRY_POINT(cuStreamSynchronize_ptsz, (CUstream hStream), stream_sync(hStream, 1))
