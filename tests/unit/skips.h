/*
 * Skipped cmocka cases, made visible in the run's totals (include after <cmocka.h>).
 *
 * cmocka's skip() marks a case "[  SKIPPED ]", but cmocka_run_group_tests() returns only the
 * number of failed cases: a binary whose cases were all skipped exits 0, and meson (protocol
 * exitcode) counts it as a pass. So a case skips only through GS_SKIP, which prints one
 * "skip - CASE: WHY" line (the form tests/lib/check.sh prints; tests/run-all.sh counts these lines
 * in meson's test log) and counts it; main returns gs_skips_result(), which makes "every case
 * skipped" exit 77 (meson's SKIP). A skip is only for what this machine cannot have (cgroup v1 on
 * a v2-only host); a piece that `make test-deps` installs (compilers, busybox, ldconfig) being
 * absent or broken is a failure: fail_msg, not a skip.
 */
#ifndef GS_TEST_SKIPS_H
#define GS_TEST_SKIPS_H

#include <stddef.h>
#include <stdio.h>

static int gs_skipped;

/* GS_SKIP(FMT, ...): the reason, then cmocka's skip(), which leaves the case (it longjmps). */
#define GS_SKIP(...)                                                                                           \
        do {                                                                                                   \
                printf("skip - %s: ", __func__);                                                               \
                printf(__VA_ARGS__);                                                                           \
                printf("\n");                                                                                  \
                fflush(stdout);                                                                                \
                gs_skipped++;                                                                                  \
                skip();                                                                                        \
        } while (0)

/* The exit status for cmocka_run_group_tests()'s result over NCASES cases: 1 if any failed (never
 * the count itself: 77 failures would read as a skip), 77 if every case skipped, else 0. */
static inline int gs_skips_result(int failed, size_t ncases)
{
        printf("# %d of %zu cases skipped\n", gs_skipped, ncases);
        if (failed != 0)
                return 1;
        if (gs_skipped > 0 && (size_t)gs_skipped >= ncases) {
                printf("# every case skipped: this binary tested nothing here\n");
                return 77;
        }
        return 0;
}

#endif
