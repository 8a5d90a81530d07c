/* The GPU's arbiter (src/vgpu/arbiter.c) as two slices of one process see it: the files in its
 * directory, which a reader may collect once their slice is gone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/clock.h"
#include "vgpu/arbiter.h"

static char dir[64];
static struct gs_arb a, b; /* (large: a table of peers each) */

static int setup(void **state)
{
        (void)state;
        snprintf(dir, sizeof(dir), "/tmp/gs-arb.XXXXXX");
        return mkdtemp(dir) == NULL ? -1 : 0;
}

static int teardown(void **state)
{
        (void)state;
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        return system(cmd) == 0 ? 0 : -1;
}

static bool file_there(const char *name)
{
        char path[256];
        snprintf(path, sizeof(path), "%s/gpuslice-gpu-GPU-test/%s", dir, name);
        return access(path, F_OK) == 0;
}

/* A slice's file is alive from the moment it is made: a slice that reads the directory before
 * the new slice's first tick must not take it for the file of a slice gone a minute ago (it did:
 * the new slice then held turns nobody else saw, and the work of two slices ran in one queue,
 * charged to both; one of eight equal slices got half its share). */
static void test_new_file_not_collected(void **state)
{
        (void)state;
        assert_int_equal(gs_arb_open(&a, dir, "GPU-test", "x-00000000000000aa", 5000, GS_ARB_PRIO_NORMAL, true), 0);
        assert_int_equal(gs_arb_open(&b, dir, "GPU-test", "x-00000000000000bb", 5000, GS_ARB_PRIO_NORMAL, true), 0);
        assert_true(file_there("x-00000000000000aa"));
        /* b reads the others' files (and collects those gone): a has not ticked yet */
        gs_arb_tick(&b, gs_mono_ns(), true, 0, 0, false, false, false);
        assert_true(file_there("x-00000000000000aa"));
        /* and b, the only one wanting, took the GPU; a sees b hold it */
        gs_arb_tick(&a, gs_mono_ns(), true, 0, 0, false, false, false);
        assert_false(gs_arb_may_launch(&a));
        assert_true(gs_arb_may_launch(&b));
}

/* A slice whose file was removed makes it again with its turn in it: the others keep seeing the
 * GPU held, and none takes it beside it. */
static void test_remade_file_keeps_turn(void **state)
{
        (void)state;
        assert_int_equal(gs_arb_open(&a, dir, "GPU-test", "x-00000000000000aa", 5000, GS_ARB_PRIO_NORMAL, true), 0);
        assert_int_equal(gs_arb_open(&b, dir, "GPU-test", "x-00000000000000bb", 5000, GS_ARB_PRIO_NORMAL, true), 0);
        gs_arb_tick(&a, gs_mono_ns(), true, 0, 0, false, false, false);
        assert_true(gs_arb_may_launch(&a));
        char path[256];
        snprintf(path, sizeof(path), "%s/gpuslice-gpu-GPU-test/x-00000000000000aa", dir);
        assert_int_equal(unlink(path), 0);
        usleep(20000); /* (the directory's time moves on: a's next read lists it again) */
        /* (between two launches: a holds the turn, its work still queued, nothing waits to launch) */
        gs_arb_tick(&a, gs_mono_ns(), false, 0, 0, false, false, false);
        assert_true(file_there("x-00000000000000aa"));
        /* b wants the GPU: it must see a's turn in the new file, and wait */
        gs_arb_tick(&b, gs_mono_ns(), true, 0, 0, false, false, false);
        assert_false(gs_arb_may_launch(&b));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_new_file_not_collected, setup, teardown),
                cmocka_unit_test_setup_teardown(test_remade_file_keeps_turn, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
