/* SPDX-License-Identifier: Apache-2.0 */
/* Fake libcuda.so.1 (fake_cuda.h): events on the GPU time model. Recording one captures the
 * time its stream's queued work ends (or now, if later); it is complete once that time has
 * passed. Elapsed time is the difference of two such times. Recording on a capturing stream
 * succeeds and records nothing (no event node is simulated). Record, query, synchronize and
 * elapsed time are lock-free. */
#include "fake_cuda.h"

#include <stdio.h>
#include <stdlib.h>

static struct CUevent_st g_events[MAX_EVENTS];

#define EVENT_FLAGS (CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS)

static int event_ok(const struct CUevent_st *e)
{
    uintptr_t p = (uintptr_t)e;

    return e != NULL && p >= (uintptr_t)&g_events[0] && p < (uintptr_t)&g_events[MAX_EVENTS] &&
           (p - (uintptr_t)&g_events[0]) % sizeof(*e) == 0 && __atomic_load_n(&e->live, __ATOMIC_ACQUIRE) &&
           ctx_active(e->ctx);
}

void events_release_ctx(const struct CUctx_st *c)
{
    for (unsigned i = 0; i < MAX_EVENTS; i++)
        if (g_events[i].live && g_events[i].ctx == c)
            __atomic_store_n(&g_events[i].live, 0, __ATOMIC_RELEASE);
}

EXPORT CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    struct CUctx_st *c;
    CUresult rc;

    ENTER();
    rc = need_ctx(&c);
    if (rc != CUDA_SUCCESS)
        return rc;
    /* cuda.h: CU_EVENT_INTERPROCESS must come with CU_EVENT_DISABLE_TIMING */
    if (phEvent == NULL || (Flags & ~(unsigned)EVENT_FLAGS) != 0 ||
        ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING)))
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    for (unsigned i = 0; i < MAX_EVENTS; i++) {
        struct CUevent_st *e = &g_events[i];

        if (!e->live) {
            e->ctx = c;
            e->flags = Flags;
            e->when = 0;
            __atomic_store_n(&e->live, 1, __ATOMIC_RELEASE);
            *phEvent = e;
            UNLOCK();
            return CUDA_SUCCESS;
        }
    }
    UNLOCK();
    return CUDA_ERROR_OUT_OF_MEMORY;
}

/* cuda.h: the event and the stream must belong to the same context (else INVALID_HANDLE). */
static CUresult event_record(CUevent e, CUstream s, int ptsz)
{
    struct CUctx_st *c;
    struct sref r;
    uint64_t now, tail;
    CUresult rc = need_ctx(&c);

    if (rc != CUDA_SUCCESS)
        return rc;
    if (!event_ok(e))
        return CUDA_ERROR_INVALID_HANDLE;
    rc = stream_resolve(s, ptsz, &r);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (r.ctx != e->ctx)
        return CUDA_ERROR_INVALID_HANDLE;
    if (capture_of(&r) != NULL)
        return CUDA_SUCCESS;   /* not simulated: nothing recorded */
    now = now_ns();
    tail = tail_of(r.tail);
    /* (on a stream with nothing of ours queued: when the GPU comes to this context, tl_ready) */
    __atomic_store_n(&e->when, tail > now ? tail : tl_ready(r.dev, now), __ATOMIC_RELEASE);
    return CUDA_SUCCESS;
}

ENTRY_POINT(cuEventRecord, (CUevent hEvent, CUstream hStream), event_record(hEvent, hStream, 0))
ENTRY_POINT(cuEventRecord_ptsz, (CUevent hEvent, CUstream hStream), event_record(hEvent, hStream, 1))

/* FAKEGPU_QUERY_STALL=N:MS (tests): every Nth cuEventQuery of the process sleeps MS ms first, as a
 * thread kept off its CPU by a loaded machine would (the interposer's ticker queries its events:
 * tests/vgpu/test_compute.sh stalls it so, its application thread running on). Read once. */
static void query_stall(void)
{
    static int every = -1;
    static unsigned long long ms, calls;
    const char *v;

    if (__atomic_load_n(&every, __ATOMIC_ACQUIRE) < 0) {
        int n = 0;
        unsigned long long m = 0;

        v = getenv("FAKEGPU_QUERY_STALL");
        if (v == NULL || sscanf(v, "%d:%llu", &n, &m) != 2 || n <= 0 || m > 10000)
            n = 0;
        ms = m;
        __atomic_store_n(&every, n, __ATOMIC_RELEASE);
    }
    if (every > 0 && __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED) % (unsigned long long)every == 0)
        sleep_until(now_ns() + ms * 1000000ULL);
}

/* Never recorded: an empty set of work, complete (cuda.h). */
EXPORT CUresult cuEventQuery(CUevent hEvent)
{
    ENTER();
    query_stall();
    if (!event_ok(hEvent))
        return CUDA_ERROR_INVALID_HANDLE;
    return __atomic_load_n(&hEvent->when, __ATOMIC_ACQUIRE) > now_ns() ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

EXPORT CUresult cuEventSynchronize(CUevent hEvent)
{
    ENTER();
    if (!event_ok(hEvent))
        return CUDA_ERROR_INVALID_HANDLE;
    sleep_until(__atomic_load_n(&hEvent->when, __ATOMIC_ACQUIRE));
    return CUDA_SUCCESS;
}

/* cuda.h: INVALID_HANDLE if either event was never recorded or has CU_EVENT_DISABLE_TIMING,
 * NOT_READY if either is still pending; else milliseconds (negative if hEnd came first). */
static CUresult elapsed(float *ms, CUevent start, CUevent end)
{
    uint64_t t0, t1, now;

    if (ms == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!event_ok(start) || !event_ok(end) || ((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING))
        return CUDA_ERROR_INVALID_HANDLE;
    t0 = __atomic_load_n(&start->when, __ATOMIC_ACQUIRE);
    t1 = __atomic_load_n(&end->when, __ATOMIC_ACQUIRE);
    if (t0 == 0 || t1 == 0)
        return CUDA_ERROR_INVALID_HANDLE;
    now = now_ns();
    if (t0 > now || t1 > now)
        return CUDA_ERROR_NOT_READY;
    *ms = (float)((double)(int64_t)(t1 - t0) / 1e6);
    return CUDA_SUCCESS;
}

/* The two versions answer alike here (CUDA 12.8 added _v2; cuda.h documents one behaviour). */
#define ELAPSED_PARAMS (float *pMilliseconds, CUevent hStart, CUevent hEnd)
ENTRY_POINT(cuEventElapsedTime, ELAPSED_PARAMS, elapsed(pMilliseconds, hStart, hEnd))
ENTRY_POINT(cuEventElapsedTime_v2, ELAPSED_PARAMS, elapsed(pMilliseconds, hStart, hEnd))
#undef ELAPSED_PARAMS

/* An event may be destroyed while pending (cuda.h). */
static CUresult event_destroy(CUevent e)
{
    CUresult rc = CUDA_ERROR_INVALID_HANDLE;

    LOCK();
    if (event_ok(e)) {
        __atomic_store_n(&e->live, 0, __ATOMIC_RELEASE);
        rc = CUDA_SUCCESS;
    }
    UNLOCK();
    return rc;
}

ENTRY_POINT(cuEventDestroy, (CUevent hEvent), event_destroy(hEvent))
ENTRY_POINT(cuEventDestroy_v2, (CUevent hEvent), event_destroy(hEvent))
