/* SPDX-License-Identifier: Apache-2.0 */
/* Fake libcuda.so.1 (fake_cuda.h): kernel launches: cuLaunchKernel, cuLaunchKernelEx (launch
 * attributes; COOPERATIVE is honoured, the others are accepted and ignored) and
 * cuLaunchCooperativeKernel, each also _ptsz. A launch is validated as the real driver does,
 * then runs on its device's timeline (fake_cuda_time.c) or, on a capturing stream, goes into
 * the capture (fake_cuda_graph.c). Lock-free; no system call but the back-pressure sleep. */
#include "fake_cuda.h"

/* A cooperative grid must be resident at once: at most floor(threads per SM / threads per
 * block) blocks on each SM (CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 2048). */
#define COOP_THREADS_PER_SM 2048ULL

struct launch {
    CUfunction f;
    unsigned grid[3];
    unsigned block[3];
    unsigned shmem;
    CUstream stream;
    void **params;
    void **extra;
    int ptsz;                         /* a _ptsz entry point: NULL is the per-thread stream */
    int coop;
};

static int func_ok(CUfunction f)
{
    uintptr_t p = (uintptr_t)f;

    return f != NULL && p >= (uintptr_t)&g_funcs[0] && p < (uintptr_t)&g_funcs[MAX_FUNCS] &&
           (p - (uintptr_t)&g_funcs[0]) % sizeof(*f) == 0 && __atomic_load_n(&f->live, __ATOMIC_ACQUIRE);
}

static CUresult check_dims(const struct launch *l)
{
    const unsigned *g = l->grid, *b = l->block;

    if (g[0] == 0 || g[1] == 0 || g[2] == 0 || b[0] == 0 || b[1] == 0 || b[2] == 0 || g[1] > 65535 ||
        g[2] > 65535 || b[0] > 1024 || b[1] > 1024 || b[2] > 64 || (unsigned long long)b[0] * b[1] * b[2] > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    /* an empty extra list is fine (seen) */
    if (l->params != NULL && l->extra != NULL && l->extra[0] != NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (l->shmem > 232448)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

static int coop_fits(const struct launch *l, unsigned long long blocks, unsigned sms)
{
    unsigned long long threads = (unsigned long long)l->block[0] * l->block[1] * l->block[2];

    return blocks <= sms * (COOP_THREADS_PER_SM / threads);
}

static CUresult launch(const struct launch *l)
{
    struct CUctx_st *c;
    struct sref r;
    struct CUgraph_st *g;
    unsigned long long blocks;
    uint64_t ns;
    CUresult rc = need_ctx(&c);

    if (rc != CUDA_SUCCESS)
        return rc;
    if (!func_ok(l->f))
        return CUDA_ERROR_INVALID_HANDLE;   /* seen for NULL */
    rc = check_dims(l);
    if (rc == CUDA_SUCCESS)
        rc = stream_resolve(l->stream, l->ptsz, &r);
    if (rc != CUDA_SUCCESS)
        return rc;
    blocks = (unsigned long long)l->grid[0] * l->grid[1] * l->grid[2];
    if (l->coop && !coop_fits(l, blocks, r.sms))
        return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
    if (l->f->fault) {
        /* The launch itself succeeds (seen); the context's next call fails. */
        fault_kernel_launched(r.dev);
        return CUDA_SUCCESS;
    }
    ns = kernel_ns(l->f->base_ns, blocks, r.sms, r.dev);
    g = capture_of(&r);
    if (g != NULL)
        graph_append(g, ns, 1);
    else
        tl_run(r.dev, r.tail, ns, 1);
    return CUDA_SUCCESS;
}

static CUresult launch_kernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                              unsigned bz, unsigned shmem, CUstream s, void **params, void **extra, int ptsz,
                              int coop)
{
    struct launch l = { f, { gx, gy, gz }, { bx, by, bz }, shmem, s, params, extra, ptsz, coop };

    return launch(&l);
}

static CUresult launch_ex(const CUlaunchConfig *cfg, CUfunction f, void **params, void **extra, int ptsz)
{
    int coop = 0;

    if (cfg == NULL || (cfg->numAttrs > 0 && cfg->attrs == NULL))
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < cfg->numAttrs; i++)
        if (cfg->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE)
            coop = cfg->attrs[i].value.cooperative != 0;
    return launch_kernel(f, cfg->gridDimX, cfg->gridDimY, cfg->gridDimZ, cfg->blockDimX, cfg->blockDimY,
                         cfg->blockDimZ, cfg->sharedMemBytes, cfg->hStream, params, extra, ptsz, coop);
}

/* cuLaunchKernel and cuLaunchCooperativeKernel with their per-thread default stream variants. */
#define LAUNCH_PARAMS                                                                                     \
    (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,                   \
     unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, \
     CUstream hStream, void **kernelParams, void **extra)
#define COOP_PARAMS                                                                                       \
    (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,                   \
     unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, \
     CUstream hStream, void **kernelParams)
#define LAUNCH_ARGS(extra_, ptsz_, coop_)                                                                      \
    launch_kernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, \
                  kernelParams, extra_, ptsz_, coop_)

ENTRY_POINT(cuLaunchKernel, LAUNCH_PARAMS, LAUNCH_ARGS(extra, 0, 0))
ENTRY_POINT(cuLaunchKernel_ptsz, LAUNCH_PARAMS, LAUNCH_ARGS(extra, 1, 0))
ENTRY_POINT(cuLaunchCooperativeKernel, COOP_PARAMS, LAUNCH_ARGS(NULL, 0, 1))
ENTRY_POINT(cuLaunchCooperativeKernel_ptsz, COOP_PARAMS, LAUNCH_ARGS(NULL, 1, 1))

#define EX_PARAMS (const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)

ENTRY_POINT(cuLaunchKernelEx, EX_PARAMS, launch_ex(config, f, kernelParams, extra, 0))
ENTRY_POINT(cuLaunchKernelEx_ptsz, EX_PARAMS, launch_ex(config, f, kernelParams, extra, 1))

#undef LAUNCH_PARAMS
#undef COOP_PARAMS
#undef LAUNCH_ARGS
#undef EX_PARAMS
