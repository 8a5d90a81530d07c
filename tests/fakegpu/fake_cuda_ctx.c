/* SPDX-License-Identifier: Apache-2.0 */
/* Fake libcuda.so.1 (fake_cuda.h): contexts: the per-thread context stack, refcounted primary
 * contexts, created contexts (cuCtxCreate*), the contexts of green contexts, what destroying
 * one frees, and cuCtxSynchronize (waits for its device's timeline). */
#include "fake_cuda.h"

#include <string.h>
#include <sys/mman.h>

struct CUctx_st g_prim[MAX_DEV];
static struct CUctx_st g_ctx[MAX_CTX];

__thread struct CUctx_st *t_stack[CTX_STACK];
__thread int t_depth;

/* ---------------------------------------------------------------------------------------- */
/* The context stack                                                                         */
/* ---------------------------------------------------------------------------------------- */

struct CUctx_st *cur_ctx(void)
{
    return t_depth > 0 ? t_stack[t_depth - 1] : NULL;
}

int ctx_handle_ok(const struct CUctx_st *c)
{
    uintptr_t p = (uintptr_t)c;

    if (p >= (uintptr_t)&g_prim[0] && p < (uintptr_t)&g_prim[MAX_DEV])
        return (p - (uintptr_t)&g_prim[0]) % sizeof(*c) == 0 && c->kind == 1;
    if (p >= (uintptr_t)&g_ctx[0] && p < (uintptr_t)&g_ctx[MAX_CTX])
        return (p - (uintptr_t)&g_ctx[0]) % sizeof(*c) == 0 && (c->kind == 2 || c->kind == 3);
    return 0;
}

int ctx_active(const struct CUctx_st *c)
{
    return __atomic_load_n(&c->active, __ATOMIC_ACQUIRE);
}

unsigned ctx_sms(const struct CUctx_st *c)
{
    return c->kind == 3 ? c->sms : dev_sm_count(c->dev);
}

/* The current context, which must be usable. The context of a green context stands for the
 * device's primary context (cuda.h: "a normal primary context but with the resources of the
 * specified green context"): what is allocated in it belongs to the primary context. */
CUresult need_ctx(struct CUctx_st **out)
{
    struct CUctx_st *c = cur_ctx();

    if (c == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!ctx_active(c))
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;   /* also after cuGreenCtxDestroy (seen) */
    if (c->kind == 3) {
        c = &g_prim[c->dev];
        if (!ctx_active(c))
            return CUDA_ERROR_CONTEXT_IS_DESTROYED;   /* primary context reset under it */
    }
    *out = c;
    return CUDA_SUCCESS;
}

/* Free everything owned by ctx (g_mu held). */
static void ctx_free_resources(struct CUctx_st *c)
{
    for (size_t i = g_ranges.n; i-- > 0;) {
        if (g_ranges.v[i].ctx == c)
            free_range_locked(&g_ranges.v[i]);
    }
    for (size_t i = 0; i < g_hosts.n;) {
        if (g_hosts.v[i].ctx == c) {
            munmap(g_hosts.v[i].p, g_hosts.v[i].size);
            g_hosts.v[i] = g_hosts.v[--g_hosts.n];
        } else {
            i++;
        }
    }
    for (unsigned i = 0; i < MAX_ARRAYS; i++) {
        if (g_arrays[i].live && g_arrays[i].ctx == c) {
            uncharge(g_arrays[i].dev, g_arrays[i].charge);
            __atomic_store_n(&g_arrays[i].live, 0, __ATOMIC_RELEASE);
        }
    }
    for (unsigned i = 0; i < MAX_MODULES; i++) {
        if (g_mods[i].live && g_mods[i].ctx == c) {
            for (unsigned j = 0; j < MAX_FUNCS; j++)
                if (g_funcs[j].live && g_funcs[j].mod == &g_mods[i])
                    __atomic_store_n(&g_funcs[j].live, 0, __ATOMIC_RELEASE);
            uncharge(c->dev, g_mods[i].charge);
            __atomic_store_n(&g_mods[i].live, 0, __ATOMIC_RELEASE);
        }
    }
    for (unsigned i = 0; i < MAX_STREAMS; i++)
        if (g_streams[i].live && g_streams[i].ctx == c)
            stream_retire(&g_streams[i]);
    events_release_ctx(c);
    uncharge(c->dev, c->charge);
    c->charge = 0;
}

/* Activate a context: charge its memory (g_mu held). */
static CUresult ctx_activate(struct CUctx_st *c, int dev, unsigned flags)
{
    unsigned long long cost = round_up(g_cfg.context_memory, GRAN);
    CUresult rc = charge(dev, cost);

    if (rc != CUDA_SUCCESS)
        return rc;
    c->dev = dev;
    c->flags = flags;
    c->charge = cost;
    __atomic_store_n(&c->active, 1, __ATOMIC_RELEASE);
    return CUDA_SUCCESS;
}

static CUresult push_ctx(struct CUctx_st *c)
{
    if (t_depth >= CTX_STACK)
        return CUDA_ERROR_OUT_OF_MEMORY;
    t_stack[t_depth++] = c;
    return CUDA_SUCCESS;
}

/* Remove c from this thread's stack if it is on top (cuCtxDestroy of the current context). */
static void pop_if_top(struct CUctx_st *c)
{
    if (t_depth > 0 && t_stack[t_depth - 1] == c)
        t_depth--;
}

/* ---------------------------------------------------------------------------------------- */
/* Primary contexts                                                                          */
/* ---------------------------------------------------------------------------------------- */

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    CUresult rc = CUDA_SUCCESS;
    struct CUctx_st *c;

    ENTER();
    if (pctx == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    c = &g_prim[dev];
    LOCK();
    if (!c->active)   /* first retain, or the first one after a reset */
        rc = ctx_activate(c, dev, c->flags);
    if (rc == CUDA_SUCCESS) {
        c->refcount++;
        *pctx = c;
    }
    UNLOCK();
    return rc;
}

/* Destroy a context's state (primary released to zero or reset, created destroyed). g_mu held. */
static void primary_teardown(struct CUctx_st *c)
{
    __atomic_store_n(&c->active, 0, __ATOMIC_RELEASE);
    ctx_free_resources(c);
}

static CUresult primary_release(CUdevice dev)
{
    struct CUctx_st *c;
    CUresult rc = CUDA_SUCCESS;

    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    c = &g_prim[dev];
    LOCK();
    if (c->refcount == 0)
        rc = CUDA_ERROR_INVALID_CONTEXT;   /* seen: release without retain */
    else if (--c->refcount == 0 && c->active)
        primary_teardown(c);
    UNLOCK();
    return rc;
}

ENTRY_POINT(cuDevicePrimaryCtxRelease, (CUdevice dev), primary_release(dev))
ENTRY_POINT(cuDevicePrimaryCtxRelease_v2, (CUdevice dev), primary_release(dev))

static CUresult primary_reset(CUdevice dev)
{
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    LOCK();
    /* Frees everything of the primary context and deactivates it; the retain count stays
     * (seen: after a reset the context reads inactive, allocations in it answer
     * CONTEXT_IS_DESTROYED, one release still succeeds). The next retain reactivates it. */
    if (g_prim[dev].active)
        primary_teardown(&g_prim[dev]);
    UNLOCK();
    return CUDA_SUCCESS;
}

ENTRY_POINT(cuDevicePrimaryCtxReset, (CUdevice dev), primary_reset(dev))
ENTRY_POINT(cuDevicePrimaryCtxReset_v2, (CUdevice dev), primary_reset(dev))

EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    ENTER();
    if (flags == NULL || active == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    *flags = g_prim[dev].flags;
    *active = ctx_active(&g_prim[dev]);
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------------------------------- */
/* Created contexts, the current context                                                     */
/* ---------------------------------------------------------------------------------------- */

static CUresult ctx_create(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    struct CUctx_st *c = NULL;
    CUresult rc;

    if (pctx == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    if (flags & ~(unsigned)CU_CTX_FLAGS_MASK)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    for (unsigned i = 0; i < MAX_CTX; i++) {
        if (g_ctx[i].kind == 0 || !g_ctx[i].active) {
            c = &g_ctx[i];
            break;
        }
    }
    if (c == NULL) {
        UNLOCK();
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    memset(c, 0, sizeof(*c));
    c->kind = 2;
    rc = ctx_activate(c, dev, flags);
    if (rc == CUDA_SUCCESS)
        rc = push_ctx(c);
    if (rc == CUDA_SUCCESS)
        *pctx = c;
    else if (c->active)
        primary_teardown(c);
    UNLOCK();
    return rc;
}

ENTRY_POINT(cuCtxCreate, (CUcontext *pctx, unsigned int flags, CUdevice dev), ctx_create(pctx, flags, dev))
ENTRY_POINT(cuCtxCreate_v2, (CUcontext *pctx, unsigned int flags, CUdevice dev), ctx_create(pctx, flags, dev))

EXPORT CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
                               unsigned int flags, CUdevice dev)
{
    ENTER();
    if (numParams < 0 || (numParams > 0 && paramsArray == NULL))
        return CUDA_ERROR_INVALID_VALUE;
    return ctx_create(pctx, flags, dev);
}

EXPORT CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags,
                               CUdevice dev)
{
    ENTER();
    if (ctxCreateParams != NULL && ctxCreateParams->numExecAffinityParams > 0 &&
        ctxCreateParams->execAffinityParams == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return ctx_create(pctx, flags, dev);
}

static CUresult ctx_destroy(CUcontext ctx)
{
    if (ctx == NULL || !ctx_handle_ok(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    /* seen: cuCtxDestroy of a primary context, and of a green context's (cuGreenCtxDestroy
     * destroys that one) */
    if (ctx->kind != 2)
        return CUDA_ERROR_INVALID_CONTEXT;
    LOCK();
    if (!ctx->active) {
        UNLOCK();
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    primary_teardown(ctx);
    UNLOCK();
    pop_if_top(ctx);
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------------------------------- */
/* The contexts of green contexts (fake_cuda_green.c)                                         */
/* ---------------------------------------------------------------------------------------- */

CUresult green_ctx_open(int dev, unsigned sms, struct CUgreenCtx_st *green, struct CUctx_st **out)
{
    struct CUctx_st *c = NULL, *prim = &g_prim[dev];
    CUresult rc = CUDA_SUCCESS;

    for (unsigned i = 0; i < MAX_CTX; i++) {
        if (g_ctx[i].kind == 0 || !g_ctx[i].active) {
            c = &g_ctx[i];
            break;
        }
    }
    if (c == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    /* cuda.h: cuGreenCtxCreate retains the device's primary context (seen: it is active after). */
    if (!prim->active)
        rc = ctx_activate(prim, dev, prim->flags);
    if (rc != CUDA_SUCCESS)
        return rc;
    prim->refcount++;
    memset(c, 0, sizeof(*c));
    c->kind = 3;
    c->dev = dev;
    c->flags = prim->flags;
    c->sms = sms;
    c->green = green;
    __atomic_store_n(&c->active, 1, __ATOMIC_RELEASE);
    *out = c;
    return CUDA_SUCCESS;
}

void green_ctx_close(struct CUctx_st *c)
{
    struct CUctx_st *prim = &g_prim[c->dev];

    /* It stays current where it is (seen): calls in it then answer CONTEXT_IS_DESTROYED. */
    __atomic_store_n(&c->active, 0, __ATOMIC_RELEASE);
    if (prim->refcount > 0 && --prim->refcount == 0 && prim->active)
        primary_teardown(prim);
}

ENTRY_POINT(cuCtxDestroy, (CUcontext ctx), ctx_destroy(ctx))
ENTRY_POINT(cuCtxDestroy_v2, (CUcontext ctx), ctx_destroy(ctx))

EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    ENTER();
    if (pctx == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = cur_ctx();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
    ENTER();
    if (ctx == NULL) {
        if (t_depth > 0)
            t_depth--;
        return CUDA_SUCCESS;
    }
    if (!ctx_handle_ok(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (t_depth == 0)
        return push_ctx(ctx);
    t_stack[t_depth - 1] = ctx;
    return CUDA_SUCCESS;
}

static CUresult ctx_get_device(CUdevice *device, struct CUctx_st *c)
{
    if (device == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (c == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    *device = c->dev;   /* also for a released primary context (seen) */
    return CUDA_SUCCESS;
}

ENTRY_POINT(cuCtxGetDevice, (CUdevice *device), ctx_get_device(device, cur_ctx()))

EXPORT CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
    ENTER();
    if (ctx != NULL && !ctx_handle_ok(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    return ctx_get_device(device, ctx != NULL ? ctx : cur_ctx());
}

static CUresult ctx_push(CUcontext ctx)
{
    if (ctx == NULL)
        return CUDA_ERROR_INVALID_VALUE;   /* seen */
    if (!ctx_handle_ok(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    return push_ctx(ctx);
}

ENTRY_POINT(cuCtxPushCurrent, (CUcontext ctx), ctx_push(ctx))
ENTRY_POINT(cuCtxPushCurrent_v2, (CUcontext ctx), ctx_push(ctx))

static CUresult ctx_pop(CUcontext *pctx)
{
    if (t_depth == 0)
        return CUDA_ERROR_INVALID_CONTEXT;   /* seen */
    t_depth--;
    if (pctx != NULL)
        *pctx = t_stack[t_depth];
    return CUDA_SUCCESS;
}

ENTRY_POINT(cuCtxPopCurrent, (CUcontext *pctx), ctx_pop(pctx))
ENTRY_POINT(cuCtxPopCurrent_v2, (CUcontext *pctx), ctx_pop(pctx))

static CUresult ctx_sync(struct CUctx_st *c)
{
    if (c == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!ctx_active(c))
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    sleep_until(tail_of(tl_device_tail(c->dev)));   /* everything queued on its device */
    pools_release_cached(c->dev);
    return CUDA_SUCCESS;
}

ENTRY_POINT(cuCtxSynchronize, (void), ctx_sync(cur_ctx()))

EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
    ENTER();
    if (ctx != NULL && !ctx_handle_ok(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    return ctx_sync(ctx != NULL ? ctx : cur_ctx());
}
