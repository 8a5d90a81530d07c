// CK(call) / CKD(call): a CUDA runtime / driver call a bench program cannot go on without. On an
// error they print "PROG: FILE:LINE: CALL: ERROR" on stderr and exit 1; PROG is CK_PROG, which
// the program defines before including this header.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cuda.h>
#include <cuda_runtime.h>

#define CK(x)                                                                                      \
        do {                                                                                       \
                cudaError_t e_ = (x);                                                              \
                if (e_ != cudaSuccess) {                                                           \
                        std::fprintf(stderr, "%s: %s:%d: %s: %s\n", CK_PROG, __FILE__, __LINE__, #x, \
                                     cudaGetErrorString(e_));                                      \
                        std::exit(1);                                                              \
                }                                                                                  \
        } while (0)

#define CKD(x)                                                                                     \
        do {                                                                                       \
                CUresult r_ = (x);                                                                 \
                if (r_ != CUDA_SUCCESS) {                                                          \
                        std::fprintf(stderr, "%s: %s:%d: %s: CUresult %d\n", CK_PROG, __FILE__, __LINE__, #x, \
                                     (int)r_);                                                     \
                        std::exit(1);                                                              \
                }                                                                                  \
        } while (0)
