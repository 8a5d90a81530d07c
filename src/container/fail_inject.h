/*
 * Failure injection for the rollback tests (GPUSLICE_TEST_FAIL_AT=N: configure's Nth journalled
 * operation fails). Only in a build with -Dfailure_injection on (the test builds: `auto`, the
 * default, follows -Dtests); a release build (-Dtests=false, or -Dfailure_injection=false) never
 * reads the variable and does not contain its name.
 */
#ifndef GS_CONTAINER_FAIL_INJECT_H
#define GS_CONTAINER_FAIL_INJECT_H

/* The operation number to fail at from GPUSLICE_TEST_FAIL_AT (secure_getenv), 0 for none; always
 * 0 in a build without failure injection. */
unsigned long gs_fail_inject_at(void);

#endif
