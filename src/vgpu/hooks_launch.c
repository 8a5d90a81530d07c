/*
 * Launch hooks: every path by which work reaches the GPU (kernels, cooperative kernels, launches
 * with attributes, graphs; each with its per-thread default stream variant) passes the compute
 * limiter's gate and reports the launch (limiter.h); a synchronization first lets the limiter
 * cover the launches it waits for with an event (the application is about to wait anyway).
 * Without a compute limit they are never handed out (dlsym.c), and a program linked against them
 * directly reaches the driver through one branch.
 */

#include "vgpu/limiter.h"

#define S gs_vgpu_state

/* The real entry point, if the driver has it. */
#define REAL_FN(name) (gs_vgpu_load_cuda() == 0 ? S.cu.name : NULL)

#define GS_LAUNCH_(name, stream, params, args)                                                     \
        GS_EXPORT CUresult name params                                                             \
        {                                                                                          \
                gs_##name##_fn real = REAL_FN(name);                                               \
                if (real == NULL)                                                                  \
                        return CUDA_ERROR_NOT_INITIALIZED;                                         \
                if (!gs_limiter_enabled)                                                           \
                        return real args;                                                          \
                int vis = gs_limiter_gate(stream);                                                 \
                CUresult rc = real args;                                                           \
                if (rc == CUDA_SUCCESS && vis >= 0)                                                \
                        gs_limiter_launched(vis, stream);                                          \
                return rc;                                                                         \
        }

#define KERNEL_PARAMS                                                                              \
        (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,         \
         unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,                    \
         unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)
#define KERNEL_ARGS                                                                                \
        (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, \
         kernelParams, extra)
#define COOP_PARAMS                                                                                \
        (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,         \
         unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,                    \
         unsigned int sharedMemBytes, CUstream hStream, void **kernelParams)
#define COOP_ARGS                                                                                  \
        (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, \
         kernelParams)
#define EX_PARAMS (const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
#define EX_ARGS (config, f, kernelParams, extra)
#define EX_STREAM (config != NULL ? config->hStream : NULL)
#define GRAPH_PARAMS (CUgraphExec hGraphExec, CUstream hStream)
#define GRAPH_ARGS (hGraphExec, hStream)

GS_LAUNCH_(cuLaunchKernel, hStream, KERNEL_PARAMS, KERNEL_ARGS)
GS_LAUNCH_(cuLaunchKernel_ptsz, hStream, KERNEL_PARAMS, KERNEL_ARGS)
GS_LAUNCH_(cuLaunchCooperativeKernel, hStream, COOP_PARAMS, COOP_ARGS)
GS_LAUNCH_(cuLaunchCooperativeKernel_ptsz, hStream, COOP_PARAMS, COOP_ARGS)
GS_LAUNCH_(cuLaunchKernelEx, EX_STREAM, EX_PARAMS, EX_ARGS)
GS_LAUNCH_(cuLaunchKernelEx_ptsz, EX_STREAM, EX_PARAMS, EX_ARGS)
GS_LAUNCH_(cuGraphLaunch, hStream, GRAPH_PARAMS, GRAPH_ARGS)
GS_LAUNCH_(cuGraphLaunch_ptsz, hStream, GRAPH_PARAMS, GRAPH_ARGS)

#define GS_SYNC_(name, stream, params, args)                                                       \
        GS_EXPORT CUresult name params                                                             \
        {                                                                                          \
                gs_##name##_fn real = REAL_FN(name);                                               \
                if (real == NULL)                                                                  \
                        return CUDA_ERROR_NOT_INITIALIZED;                                         \
                if (!gs_limiter_enabled)                                                           \
                        return real args;                                                          \
                gs_limiter_before_sync(stream);                                                    \
                CUresult rc_ = real args;                                                          \
                if (rc_ == CUDA_SUCCESS)                                                           \
                        gs_limiter_after_sync();                                                   \
                return rc_;                                                                        \
        }

GS_SYNC_(cuCtxSynchronize, CU_STREAM_LEGACY, (void), ())
/* (CUDA 13's: cuGetProcAddress gives it for "cuCtxSynchronize" at cudaVersion 13000, so the
 * runtime's cudaDeviceSynchronize, PyTorch's torch.cuda.synchronize, comes here; a context other
 * than the current one is waited for as the driver does, our event recorded in the current one) */
GS_SYNC_(cuCtxSynchronize_v2, CU_STREAM_LEGACY, (CUcontext ctx), (ctx))
GS_SYNC_(cuStreamSynchronize, hStream, (CUstream hStream), (hStream))
GS_SYNC_(cuStreamSynchronize_ptsz, hStream, (CUstream hStream), (hStream))
