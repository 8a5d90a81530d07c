// The FMA loop of the compute-bound bench kernels (compute_shapes.cu, latency.cu): a and b are
// kernel arguments (1 and 0 at run time, unknown to the compiler), so every FMA is executed and
// each chain ends where it started: the result is 4v + 6, exactly (fma_expect).
#ifndef GS_BENCH_FMA_WORK_H
#define GS_BENCH_FMA_WORK_H

__device__ __forceinline__ float fma_work(unsigned gid, float a, float b, int iters)
{
        float v = (float)(gid & 1023u);
        float x0 = v, x1 = v + 1.0f, x2 = v + 2.0f, x3 = v + 3.0f;
#pragma unroll 8
        for (int i = 0; i < iters; i++) {
                x0 = fmaf(x0, a, b);
                x1 = fmaf(x1, a, b);
                x2 = fmaf(x2, a, b);
                x3 = fmaf(x3, a, b);
        }
        return x0 + x1 + x2 + x3;
}

static inline float fma_expect(unsigned gid) { return 4.0f * (float)(gid & 1023u) + 6.0f; }

#endif
