/*
 * fail_inject.h: GPUSLICE_TEST_FAIL_AT, read only where the build asks for it
 * (GS_FAILURE_INJECTION=1, from meson's failure_injection option). tests/meson.build compiles this
 * file a second time without it into gpuslice-noinject, whose test shows the variable ignored.
 */
#include <stdlib.h>

#include "container/fail_inject.h"

#ifndef GS_FAILURE_INJECTION
#define GS_FAILURE_INJECTION 0
#endif

unsigned long gs_fail_inject_at(void)
{
#if GS_FAILURE_INJECTION
        const char *fa = secure_getenv("GPUSLICE_TEST_FAIL_AT");
        return fa != NULL ? strtoul(fa, NULL, 10) : 0;
#else
        return 0;
#endif
}
