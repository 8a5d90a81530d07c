/* SPDX-License-Identifier: Apache-2.0 */
/* The check counters and macros of the fake driver's self-tests (test_fake_cuda, test_fake_nvml).
 * Each prints "not ok - FILE:LINE: ..." on failure; main() reports nok/nfail. */
#ifndef FAKEGPU_SELFTEST_H
#define FAKEGPU_SELFTEST_H

#include <stdio.h>

static int nfail, nok;

#define CHECK(cond)                                                                 \
    do {                                                                            \
        if (cond) {                                                                 \
            nok++;                                                                  \
        } else {                                                                    \
            nfail++;                                                                \
            printf("not ok - %s:%d: %s\n", __FILE__, __LINE__, #cond);              \
        }                                                                           \
    } while (0)

/* expr returns an enum status (CUresult, nvmlReturn_t) that must equal want. */
#define CHECK_RC(expr, want)                                                        \
    do {                                                                            \
        int rc_ = (int)(expr);                                                      \
        if (rc_ == (int)(want)) {                                                   \
            nok++;                                                                  \
        } else {                                                                    \
            nfail++;                                                                \
            printf("not ok - %s:%d: %s returned %d, wanted %d (%s)\n", __FILE__,    \
                   __LINE__, #expr, rc_, (int)(want), #want);                       \
        }                                                                           \
    } while (0)

#define MiB (1024ULL * 1024ULL)

#endif
