/* SPDX-License-Identifier: Apache-2.0 */
/* Fake libcuda.so.1 (fake_cuda.h): graphs made by stream capture. While a stream captures,
 * its launches (and graph launches) are added to the capture instead of running; a graph keeps
 * only its kernels' count and summed duration, and cuGraphLaunch runs that as one piece of
 * work on the stream. Capture modes are kept (cuThreadExchangeStreamCaptureMode swaps the
 * thread's) but only decide who may end a capture: "unsafe" calls are not policed. */
#include "fake_cuda.h"

#include <string.h>

static struct CUgraph_st g_graphs[MAX_GRAPHS];
static struct CUgraphExec_st g_execs[MAX_EXECS];
static __thread CUstreamCaptureMode t_mode;   /* CU_STREAM_CAPTURE_MODE_GLOBAL (0) at first */

/* CUgraphInstantiate_flags: AUTO_FREE_ON_LAUNCH 1, UPLOAD 2, DEVICE_LAUNCH 4, USE_NODE_PRIORITY 8 */
#define INSTANTIATE_FLAGS 0xFULL

static int graph_ok(const struct CUgraph_st *g)
{
    uintptr_t p = (uintptr_t)g;

    return g != NULL && p >= (uintptr_t)&g_graphs[0] && p < (uintptr_t)&g_graphs[MAX_GRAPHS] &&
           (p - (uintptr_t)&g_graphs[0]) % sizeof(*g) == 0 && __atomic_load_n(&g->live, __ATOMIC_ACQUIRE) &&
           !g->capturing;
}

static int exec_ok(const struct CUgraphExec_st *e)
{
    uintptr_t p = (uintptr_t)e;

    return e != NULL && p >= (uintptr_t)&g_execs[0] && p < (uintptr_t)&g_execs[MAX_EXECS] &&
           (p - (uintptr_t)&g_execs[0]) % sizeof(*e) == 0 && __atomic_load_n(&e->live, __ATOMIC_ACQUIRE);
}

/* ---------------------------------------------------------------------------------------- */
/* Capture                                                                                   */
/* ---------------------------------------------------------------------------------------- */

void graph_append(struct CUgraph_st *g, uint64_t ns, unsigned long long kernels)
{
    __atomic_add_fetch(&g->ns, ns, __ATOMIC_RELAXED);
    __atomic_add_fetch(&g->kernels, kernels, __ATOMIC_RELAXED);
}

struct CUgraph_st *capture_of(const struct sref *r)
{
    return r->capture != NULL ? __atomic_load_n(r->capture, __ATOMIC_ACQUIRE) : NULL;
}

CUresult capture_violation(struct CUgraph_st *g)
{
    __atomic_store_n(&g->invalidated, 1, __ATOMIC_RELEASE);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

void graph_drop(struct CUgraph_st *g)
{
    __atomic_store_n(&g->live, 0, __ATOMIC_RELEASE);
}

/* A new graph being captured (g_mu held), or NULL. */
static struct CUgraph_st *graph_new(CUstreamCaptureMode mode)
{
    for (unsigned i = 0; i < MAX_GRAPHS; i++) {
        struct CUgraph_st *g = &g_graphs[i];

        if (!g->live) {
            memset(g, 0, sizeof(*g));
            g->capturing = 1;
            g->mode = mode;
            g->thread = pthread_self();
            __atomic_store_n(&g->live, 1, __ATOMIC_RELEASE);
            return g;
        }
    }
    return NULL;
}

static CUresult begin_capture(CUstream s, CUstreamCaptureMode mode, int ptsz)
{
    struct sref r;
    struct CUgraph_st *g;
    CUresult rc = stream_resolve(s, ptsz, &r);

    if (rc != CUDA_SUCCESS)
        return rc;
    if ((unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    if (r.capture == NULL)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;   /* the legacy stream */
    LOCK();
    if (__atomic_load_n(r.capture, __ATOMIC_ACQUIRE) != NULL) {
        UNLOCK();
        return CUDA_ERROR_ILLEGAL_STATE;   /* already capturing */
    }
    g = graph_new(mode);
    if (g != NULL)
        __atomic_store_n(r.capture, g, __ATOMIC_RELEASE);
    UNLOCK();
    return g != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

#define BEGIN_PARAMS (CUstream hStream, CUstreamCaptureMode mode)
ENTRY_POINT(cuStreamBeginCapture_v2, BEGIN_PARAMS, begin_capture(hStream, mode, 0))
ENTRY_POINT(cuStreamBeginCapture_v2_ptsz, BEGIN_PARAMS, begin_capture(hStream, mode, 1))
#undef BEGIN_PARAMS

/* An invalidated capture ends without a graph: STREAM_CAPTURE_INVALIDATED, *phGraph NULL. */
static CUresult end_capture(CUstream s, CUgraph *phGraph, int ptsz)
{
    struct sref r;
    struct CUgraph_st *g;
    CUresult rc;

    if (phGraph == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    rc = stream_resolve(s, ptsz, &r);
    if (rc != CUDA_SUCCESS)
        return rc;
    LOCK();
    g = capture_of(&r);
    if (g == NULL) {
        UNLOCK();
        return CUDA_ERROR_ILLEGAL_STATE;   /* not capturing */
    }
    if (g->mode != CU_STREAM_CAPTURE_MODE_RELAXED && !pthread_equal(g->thread, pthread_self())) {
        UNLOCK();
        return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
    }
    __atomic_store_n(r.capture, NULL, __ATOMIC_RELEASE);
    g->capturing = 0;
    *phGraph = __atomic_load_n(&g->invalidated, __ATOMIC_ACQUIRE) ? NULL : g;
    if (*phGraph == NULL)
        graph_drop(g);
    UNLOCK();
    return *phGraph != NULL ? CUDA_SUCCESS : CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
}

#define END_PARAMS (CUstream hStream, CUgraph *phGraph)
ENTRY_POINT(cuStreamEndCapture, END_PARAMS, end_capture(hStream, phGraph, 0))
ENTRY_POINT(cuStreamEndCapture_ptsz, END_PARAMS, end_capture(hStream, phGraph, 1))
#undef END_PARAMS

/* The legacy stream never captures (the real driver's STREAM_CAPTURE_IMPLICIT answer while a
 * blocking stream captures is not simulated). */
static CUresult is_capturing(CUstream s, CUstreamCaptureStatus *status, int ptsz)
{
    struct sref r;
    struct CUgraph_st *g;
    CUresult rc;

    if (status == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    rc = stream_resolve(s, ptsz, &r);
    if (rc != CUDA_SUCCESS)
        return rc;
    g = capture_of(&r);
    *status = g == NULL                                           ? CU_STREAM_CAPTURE_STATUS_NONE
              : __atomic_load_n(&g->invalidated, __ATOMIC_ACQUIRE) ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                                                  : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    return CUDA_SUCCESS;
}

#define IS_PARAMS (CUstream hStream, CUstreamCaptureStatus *captureStatus)
ENTRY_POINT(cuStreamIsCapturing, IS_PARAMS, is_capturing(hStream, captureStatus, 0))
ENTRY_POINT(cuStreamIsCapturing_ptsz, IS_PARAMS, is_capturing(hStream, captureStatus, 1))
#undef IS_PARAMS

EXPORT CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    CUstreamCaptureMode old = t_mode;

    ENTER();
    if (mode == NULL || (unsigned)*mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    t_mode = *mode;
    *mode = old;
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------------------------------- */
/* Graphs and executable graphs                                                              */
/* ---------------------------------------------------------------------------------------- */

static CUresult instantiate(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags)
{
    CUresult rc = CUDA_ERROR_OUT_OF_MEMORY;

    if (phGraphExec == NULL || (flags & ~INSTANTIATE_FLAGS) != 0 || (flags & 5) == 5)   /* AUTO_FREE + DEVICE_LAUNCH */
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    if (!graph_ok(hGraph)) {
        UNLOCK();
        return CUDA_ERROR_INVALID_VALUE;
    }
    for (unsigned i = 0; i < MAX_EXECS; i++) {
        struct CUgraphExec_st *e = &g_execs[i];

        if (!e->live) {
            e->ns = __atomic_load_n(&hGraph->ns, __ATOMIC_RELAXED);
            e->kernels = __atomic_load_n(&hGraph->kernels, __ATOMIC_RELAXED);
            __atomic_store_n(&e->live, 1, __ATOMIC_RELEASE);
            *phGraphExec = e;
            rc = CUDA_SUCCESS;
            break;
        }
    }
    UNLOCK();
    return rc;
}

ENTRY_POINT(cuGraphInstantiateWithFlags, (CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags),
            instantiate(phGraphExec, hGraph, flags))

/* Lock-free, like a kernel launch: the whole graph is one piece of work of its summed duration
 * (on a capturing stream: added to that capture, as a child graph). */
static CUresult graph_launch(CUgraphExec e, CUstream s, int ptsz)
{
    struct CUctx_st *c;
    struct sref r;
    struct CUgraph_st *g;
    CUresult rc = need_ctx(&c);

    if (rc != CUDA_SUCCESS)
        return rc;
    if (!exec_ok(e))
        return CUDA_ERROR_INVALID_VALUE;
    rc = stream_resolve(s, ptsz, &r);
    if (rc != CUDA_SUCCESS)
        return rc;
    g = capture_of(&r);
    if (g != NULL)
        graph_append(g, e->ns, e->kernels);
    else
        tl_run(r.dev, r.tail, e->ns, e->kernels);
    return CUDA_SUCCESS;
}

ENTRY_POINT(cuGraphLaunch, (CUgraphExec hGraphExec, CUstream hStream), graph_launch(hGraphExec, hStream, 0))
ENTRY_POINT(cuGraphLaunch_ptsz, (CUgraphExec hGraphExec, CUstream hStream), graph_launch(hGraphExec, hStream, 1))

/* An executable graph may be destroyed while it runs: its work stays on the timeline. */
static CUresult exec_destroy(CUgraphExec e)
{
    CUresult rc = CUDA_ERROR_INVALID_VALUE;

    LOCK();
    if (exec_ok(e)) {
        __atomic_store_n(&e->live, 0, __ATOMIC_RELEASE);
        rc = CUDA_SUCCESS;
    }
    UNLOCK();
    return rc;
}

ENTRY_POINT(cuGraphExecDestroy, (CUgraphExec hGraphExec), exec_destroy(hGraphExec))

static CUresult graph_destroy(CUgraph g)
{
    CUresult rc = CUDA_ERROR_INVALID_VALUE;

    LOCK();
    if (graph_ok(g)) {
        graph_drop(g);
        rc = CUDA_SUCCESS;
    }
    UNLOCK();
    return rc;
}

ENTRY_POINT(cuGraphDestroy, (CUgraph hGraph), graph_destroy(hGraph))
