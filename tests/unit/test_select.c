/* Unit tests: device selection grammar (src/select/devices.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <gpuslice/gpuslice.h>

#define UUID0 "GPU-11111111-2222-3333-4444-555555555555"
#define UUID1 "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
#define UUID2 "GPU-99999999-8888-7777-6666-000000000000"
#define MIG10 "MIG-0a0a0a0a-1111-2222-3333-444444444444"
#define MIG11 "MIG-1b1b1b1b-1111-2222-3333-444444444444"
#define MIG12 "MIG-2c2c2c2c-1111-2222-3333-444444444444"
#define MIG_LEGACY "MIG-GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee/3/0"

static struct gs_device_info info;

static void add_mig(struct gs_gpu *g, unsigned gi, unsigned ci, const char *uuid)
{
        struct gs_mig_device *m = &g->migs[g->nmigs];
        m->index = g->nmigs;
        m->gi = gi;
        m->ci = ci;
        snprintf(m->uuid, sizeof(m->uuid), "%s", uuid);
        g->nmigs++;
}

/*
 * GPU 0: plain, 00000000:3B:00.0.
 * GPU 1: MIG enabled, 00000000:5E:00.0; migs 0 (gi1 ci0), 1 (gi2 ci0), 2 (gi2 ci1),
 *        3 (gi3 ci0, reported with a legacy UUID).
 * GPU 2: MIG capable but disabled (stale MIG entries must be ignored), 00000001:AF:01.2.
 */
static int setup(void **state)
{
        (void)state;
        memset(&info, 0, sizeof(info));
        snprintf(info.driver_version, sizeof(info.driver_version), "550.54.15");
        snprintf(info.cuda_version, sizeof(info.cuda_version), "12.4");
        info.ngpus = 3;

        struct gs_gpu *g = &info.gpus[0];
        g->index = 0;
        g->minor = 2;
        snprintf(g->uuid, sizeof(g->uuid), UUID0);
        snprintf(g->bus_id, sizeof(g->bus_id), "00000000:3B:00.0");

        g = &info.gpus[1];
        g->index = 1;
        g->minor = 0;
        snprintf(g->uuid, sizeof(g->uuid), UUID1);
        snprintf(g->bus_id, sizeof(g->bus_id), "00000000:5E:00.0");
        g->mig_capable = g->mig_enabled = true;
        add_mig(g, 1, 0, MIG10);
        add_mig(g, 2, 0, MIG11);
        add_mig(g, 2, 1, MIG12);
        add_mig(g, 3, 0, MIG_LEGACY);

        g = &info.gpus[2];
        g->index = 2;
        g->minor = 1;
        snprintf(g->uuid, sizeof(g->uuid), UUID2);
        snprintf(g->bus_id, sizeof(g->bus_id), "00000001:AF:01.2");
        g->mig_capable = true;
        g->mig_enabled = false;
        add_mig(g, 1, 0, "MIG-ffffffff-0000-0000-0000-000000000000");
        return 0;
}

static struct gs_selection sel;
static struct gs_error err;

static int sel_ok(const char *list)
{
        memset(&sel, 0xa5, sizeof(sel)); /* output must be zeroed first */
        memset(&err, 0, sizeof(err));
        return gs_select_devices(list, &info, &sel, &err);
}

static void assert_empty_selection(void)
{
        struct gs_selection zero;
        memset(&zero, 0, sizeof(zero));
        assert_memory_equal(&sel, &zero, sizeof(sel));
}

static void expect_gpus(const char *list, unsigned mask)
{
        if (sel_ok(list) != 0)
                fail_msg("'%s' failed: %s", list, err.msg);
        for (unsigned i = 0; i < GS_MAX_GPUS; i++) {
                if (sel.gpu[i] != (i < 32 && ((mask >> i) & 1)))
                        fail_msg("'%s': gpu %u is %d", list, i, sel.gpu[i]);
        }
        assert_int_equal(sel.ngpus, __builtin_popcount(mask));
        assert_int_equal(sel.nmigs, 0);
        assert_false(sel.all);
}

static void expect_mig(const char *list, unsigned gpu, unsigned mask)
{
        if (sel_ok(list) != 0)
                fail_msg("'%s' failed: %s", list, err.msg);
        for (unsigned i = 0; i < GS_MAX_GPUS; i++) {
                assert_false(sel.gpu[i]);
                for (unsigned j = 0; j < GS_MAX_MIGS; j++) {
                        bool want = i == gpu && ((mask >> j) & 1);
                        if (sel.mig[i][j] != want)
                                fail_msg("'%s': mig %u:%u is %d", list, i, j, sel.mig[i][j]);
                }
        }
        assert_int_equal(sel.ngpus, 0);
        assert_int_equal(sel.nmigs, __builtin_popcount(mask));
        assert_true(gs_selection_uses_gpu(&sel, gpu));
}

static void expect_error(const char *list, const char *msg)
{
        int rc = sel_ok(list);
        if (rc != -1)
                fail_msg("'%s' should fail with '%s'", list, msg);
        assert_int_equal(err.code, GS_EINVAL);
        assert_string_equal(err.msg, msg);
        assert_empty_selection();
}

static void expect_unknown(const char *token)
{
        char msg[GS_ERRMSG_MAX];
        snprintf(msg, sizeof(msg), "%s: unknown device", token);
        expect_error(token, msg);
}

/* ------------------------------------------------------------------------------------------- */

static void test_empty_and_null(void **state)
{
        (void)state;
        assert_int_equal(sel_ok(NULL), 0);
        assert_empty_selection();
        assert_int_equal(sel_ok(""), 0);
        assert_empty_selection();
        assert_int_equal(sel_ok(","), 0);
        assert_empty_selection();
        assert_int_equal(sel_ok(",,,"), 0);
        assert_empty_selection();
}

static void test_null_out_and_info(void **state)
{
        (void)state;
        memset(&err, 0, sizeof(err));
        assert_int_equal(gs_select_devices("0", &info, NULL, &err), -1);
        assert_int_equal(err.code, GS_EINVAL);
        /* NULL error pointer is fine too */
        assert_int_equal(gs_select_devices("0", &info, NULL, NULL), -1);
        assert_int_equal(gs_select_devices("bogus", &info, &sel, NULL), -1);
        assert_empty_selection();

        /* No device info: no GPUs; all / none still parse. */
        memset(&sel, 0xa5, sizeof(sel));
        assert_int_equal(gs_select_devices("all", NULL, &sel, &err), 0);
        assert_true(sel.all);
        assert_int_equal(sel.ngpus, 0);
        assert_int_equal(gs_select_devices("none", NULL, &sel, &err), 0);
        assert_int_equal(gs_select_devices("0", NULL, &sel, &err), -1);
        assert_string_equal(err.msg, "0: unknown device");
}

static void test_all(void **state)
{
        (void)state;
        const char *forms[] = { "all", "ALL", "All", "all,all", ",all,", "all,0", "0,all" };
        for (size_t k = 0; k < sizeof(forms) / sizeof(forms[0]); k++) {
                assert_int_equal(sel_ok(forms[k]), 0);
                assert_true(sel.all);
                assert_int_equal(sel.ngpus, 3);
                assert_true(sel.gpu[0] && sel.gpu[1] && sel.gpu[2]);
                assert_false(sel.gpu[3]);
                /* every MIG device of MIG-enabled GPUs, none of the disabled one */
                assert_int_equal(sel.nmigs, 4);
                for (unsigned j = 0; j < 4; j++)
                        assert_true(sel.mig[1][j]);
                assert_false(sel.mig[2][0]);
                assert_false(sel.mig[0][0]);
        }
        /* tokens after all are still validated */
        expect_unknown("bogus");
        expect_error("all,bogus", "bogus: unknown device");
}

static void test_none(void **state)
{
        (void)state;
        const char *forms[] = { "none", "NONE", "None", "none,", ",none", "none,none" };
        for (size_t k = 0; k < sizeof(forms) / sizeof(forms[0]); k++) {
                assert_int_equal(sel_ok(forms[k]), 0);
                assert_empty_selection();
        }
        expect_error("none,0", "none cannot be combined with other devices");
        expect_error("0,none", "none cannot be combined with other devices");
        expect_error("all,none", "none cannot be combined with other devices");
        expect_error("none,all", "none cannot be combined with other devices");
        expect_error("none,bogus", "bogus: unknown device");
}

static void test_index(void **state)
{
        (void)state;
        expect_gpus("0", 1);
        expect_gpus("1", 2);
        expect_gpus("2", 4);
        expect_gpus("0,2", 5);
        expect_gpus("2,0", 5);
        expect_gpus("00", 1);     /* leading zeros */
        expect_gpus("0002", 4);
        expect_gpus("0,0,0", 1);  /* duplicates collapse */
        expect_gpus(",1,,1,", 2);
        expect_unknown("3");
        expect_unknown("64");
        expect_unknown("-1");
        expect_unknown("+1");
        expect_unknown("0x1");
        expect_unknown("1a");
        expect_unknown(" 0");
        expect_unknown("0 ");
        expect_unknown("4294967296");
        expect_unknown("18446744073709551617");
        expect_unknown("99999999999999999999999999999999999999");
        /* a valid token before a bad one: nothing is selected */
        expect_error("0,1,7", "7: unknown device");
}

static void test_gpu_uuid(void **state)
{
        (void)state;
        expect_gpus(UUID0, 1);
        expect_gpus(UUID1, 2);
        expect_gpus("gpu-aaaaaaaa-BBBB-cccc-dddd-EEEEEEEEEEEE", 2); /* case-insensitive */
        expect_gpus(UUID0 "," UUID2, 5);
        expect_gpus(UUID0 ",0", 1);
        expect_unknown("GPU-11111111-2222-3333-4444-55555555555");   /* prefix only */
        expect_unknown("GPU-11111111-2222-3333-4444-5555555555555"); /* longer */
        expect_unknown("GPU-");
        expect_unknown("GPU");
        expect_unknown("11111111-2222-3333-4444-555555555555");
}

static void test_busid(void **state)
{
        (void)state;
        const char *gpu0[] = {
                "0000:3b:00.0", "0:3b:00.0", "00000000:3B:00.0", "3b:00.0", "3B:0.0", "00000000:3b:00.0",
                "0000:3B:00.0",
        };
        for (size_t k = 0; k < sizeof(gpu0) / sizeof(gpu0[0]); k++)
                expect_gpus(gpu0[k], 1);
        expect_gpus("5e:00.0", 2);
        expect_gpus("1:af:01.2", 4);
        expect_gpus("0001:AF:1.2", 4);
        expect_gpus("00000001:af:01.2,0:3b:0.0", 5);
        expect_unknown("af:01.2");     /* domain 0 */
        expect_unknown("1:af:01.0");   /* other function */
        expect_unknown("0000:3b:00.1");
        expect_unknown("0000:3c:00.0");
        expect_unknown("000000000:3b:00.0"); /* domain too long */
        expect_unknown("0000:03b:00.0");     /* bus too long */
        expect_unknown("0000:3b:000.0");
        expect_unknown("0000:3b:20.0");      /* device > 0x1f */
        expect_unknown("0000:3b:00.8");      /* function > 7 */
        expect_unknown("0000:3b:00.00");
        expect_unknown("0000:3b:00.");
        expect_unknown("0000:3b:.0");
        expect_unknown(":3b:00.0");
        expect_unknown("0000::00.0");
        expect_unknown("0:0:3b:00.0");
        expect_unknown("0000:3g:00.0");
        expect_unknown("0000:3b:00.0.0");
        expect_unknown(".:");
        expect_unknown("0:1.0");
}

static void test_mig_uuid(void **state)
{
        (void)state;
        expect_mig(MIG10, 1, 1);
        expect_mig(MIG12, 1, 4);
        expect_mig("mig-1B1B1B1B-1111-2222-3333-444444444444", 1, 2);
        expect_mig(MIG10 "," MIG11 "," MIG10, 1, 3);
        /* reported verbatim in the legacy form */
        expect_mig(MIG_LEGACY, 1, 8);
        /* the MIG device of a disabled GPU does not exist */
        expect_unknown("MIG-ffffffff-0000-0000-0000-000000000000");
        expect_unknown("MIG-0a0a0a0a-1111-2222-3333-44444444444");
        expect_unknown("MIG-");
        expect_unknown("MIG");
}

static void test_mig_legacy(void **state)
{
        (void)state;
        /* MIG-GPU-<uuid>/<gi>/<ci> of R470+ devices that report MIG-<uuid> */
        expect_mig("MIG-" UUID1 "/1/0", 1, 1);
        expect_mig("MIG-" UUID1 "/2/0", 1, 2);
        expect_mig("MIG-" UUID1 "/2/1", 1, 4);
        expect_mig("mig-gpu-AAAAAAAA-bbbb-cccc-dddd-eeeeeeeeeeee/2/1", 1, 4);
        expect_mig("MIG-" UUID1 "/2/1,1:1", 1, 6);
        expect_unknown("MIG-" UUID1 "/2/2");
        expect_unknown("MIG-" UUID1 "/4/0");
        expect_unknown("MIG-" UUID1 "/2");
        expect_unknown("MIG-" UUID1 "/2/");
        expect_unknown("MIG-" UUID1 "//1");
        expect_unknown("MIG-" UUID1 "/2/1/0");
        expect_unknown("MIG-" UUID1 "/-2/1");
        expect_unknown("MIG-" UUID1 "/2/99999999999999999999");
        expect_unknown("MIG-" UUID1 "/ 2/1");
        expect_unknown("MIG-" UUID0 "/1/0");  /* no MIG on GPU 0 */
        expect_unknown("MIG-" UUID2 "/1/0");  /* MIG disabled on GPU 2 */
        expect_unknown("MIG-GPU-nope/1/0");
        expect_unknown("MIG-GPU-/1/0");
}

static void test_mig_index(void **state)
{
        (void)state;
        expect_mig("1:0", 1, 1);
        expect_mig("1:3", 1, 8);
        expect_mig("01:02", 1, 4);
        expect_mig("1:0,1:0,1:1", 1, 3);
        expect_unknown("1:4");   /* no such MIG device */
        expect_unknown("1:8");
        expect_unknown("1:9");
        expect_unknown("1:99999999999999999999");
        expect_unknown("0:0");   /* GPU 0 has no MIG */
        expect_unknown("2:0");   /* MIG disabled */
        expect_unknown("3:0");   /* no GPU 3 */
        expect_unknown("1:");
        expect_unknown(":0");
        expect_unknown(":");
        expect_unknown("1:-1");
        expect_unknown("1:+1");
        expect_unknown("1:0x1");
        expect_unknown("a:0");
}

static void test_mixed_gpu_and_mig(void **state)
{
        (void)state;
        assert_int_equal(sel_ok("0,1:1," MIG12), 0);
        assert_true(sel.gpu[0]);
        assert_false(sel.gpu[1]); /* MIG selections mark only the MIG device */
        assert_true(sel.mig[1][1] && sel.mig[1][2]);
        assert_int_equal(sel.ngpus, 1);
        assert_int_equal(sel.nmigs, 2);
        assert_true(gs_selection_uses_gpu(&sel, 0));
        assert_true(gs_selection_uses_gpu(&sel, 1));
        assert_false(gs_selection_uses_gpu(&sel, 2));

        assert_int_equal(sel_ok("1,1:0"), 0);
        assert_true(sel.gpu[1] && sel.mig[1][0]);
        assert_int_equal(sel.ngpus, 1);
        assert_int_equal(sel.nmigs, 1);
}

static void test_instance(void **state)
{
        (void)state;
        expect_mig("1:gi1:ci0", 1, 1);
        expect_mig("1:gi2:ci1", 1, 4);
        expect_mig("1:gi2", 1, 6);            /* every CI of GI 2 */
        expect_mig("1:GI2:CI0", 1, 2);
        expect_mig("1:Gi3", 1, 8);
        expect_mig(UUID1 ":gi2:ci0", 1, 2);
        expect_mig("gpu-AAAAAAAA-bbbb-cccc-dddd-eeeeeeeeeeee:gi1", 1, 1);
        expect_mig("1:gi2,1:gi2:ci1,1:2", 1, 6);
        expect_mig("001:gi002:ci001", 1, 4);
        expect_unknown("1:gi4");
        expect_unknown("1:gi2:ci2");
        expect_unknown("0:gi1:ci0");          /* no MIG */
        expect_unknown("2:gi1:ci0");          /* MIG disabled */
        expect_unknown("3:gi1");
        expect_unknown(UUID0 ":gi1");
        expect_unknown("GPU-nope:gi1");
        expect_unknown("bogus:gi1");
        expect_unknown(":gi1");
        expect_unknown("1:gi");
        expect_unknown("1:gi:ci0");
        expect_unknown("1:gi1:ci");
        expect_unknown("1:gi1:");
        expect_unknown("1:gi1:c0");
        expect_unknown("1:gi2:xx1");
        expect_unknown("1:gi2:gi1");
        expect_unknown("1:gi1:ci0:x");
        expect_unknown("1:gi-1");
        expect_unknown("1:gi 1");
        expect_unknown("1:gi1:ci0 ");
        expect_unknown("1:gi99999999999999999999");
        expect_unknown("1:gi1:ci99999999999999999999");
        expect_unknown("1:ci0:gi1");
}

static void test_instance_trailing_comma(void **state)
{
        (void)state;
        /* (the expect_unknown above with a trailing comma fails as a whole token list) */
        expect_mig("1:gi1:ci0,", 1, 1);
}

static void test_ambiguous(void **state)
{
        (void)state;
        const char *amb = ": ambiguous device (for a GPU instance / compute instance use "
                          "<gpu>:gi<G>:ci<C>)";
        const char *forms[] = { "0:1:0", "1:2:1", "00:0:00", "99:99:99" };
        for (size_t k = 0; k < sizeof(forms) / sizeof(forms[0]); k++) {
                char msg[GS_ERRMSG_MAX];
                snprintf(msg, sizeof(msg), "%s%s", forms[k], amb);
                expect_error(forms[k], msg);
        }
        /* not three decimals: plain unknown */
        expect_unknown("0:1:a");
        expect_unknown("0:1:");
        expect_unknown("0::0");
        expect_unknown("0:1:0:0");
        expect_unknown("a:b:c");
}

static void test_unknown_misc(void **state)
{
        (void)state;
        expect_unknown("bogus");
        expect_unknown("al");
        expect_unknown("alll");
        expect_unknown(" all");
        expect_unknown("all ");
        expect_unknown("non");
        expect_unknown("void");
        expect_unknown("nvidia.com/gpu=0");
        expect_unknown("\t");
        expect_unknown("é");
        expect_error("0,\xff", "\xff: unknown device");
}

static void test_long_tokens(void **state)
{
        (void)state;
        size_t sizes[] = { 95, 96, 127, 128, 129, 255, 256, 511, 512, 513, 4096, 100000 };
        for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
                size_t n = sizes[k];
                char *tok = malloc(n + 1);
                assert_non_null(tok);
                memset(tok, 'x', n);
                memcpy(tok, "GPU-", 4);
                tok[n] = '\0';
                assert_int_equal(sel_ok(tok), -1);
                assert_int_equal(err.code, GS_EINVAL);
                assert_true(strnlen(err.msg, sizeof(err.msg)) < sizeof(err.msg));
                assert_non_null(strstr(err.msg, ": unknown device"));
                assert_true(strncmp(err.msg, "GPU-xxx", 7) == 0);
                if (n > 128)
                        assert_non_null(strstr(err.msg, "...: unknown device"));
                /* also as MIG and instance forms, and long digit strings */
                memcpy(tok, "MIG-", 4);
                assert_int_equal(sel_ok(tok), -1);
                memset(tok, '1', n);
                assert_int_equal(sel_ok(tok), -1);
                assert_true(strnlen(err.msg, sizeof(err.msg)) < sizeof(err.msg));
                tok[1] = ':';
                tok[n / 2] = ':';
                assert_int_equal(sel_ok(tok), -1);
                assert_true(strnlen(err.msg, sizeof(err.msg)) < sizeof(err.msg));
                free(tok);
        }
}

static void test_uuid_not_terminated(void **state)
{
        (void)state;
        /* A malformed info (unterminated strings) must not be read past. */
        struct gs_device_info bad;
        memcpy(&bad, &info, sizeof(bad));
        memset(bad.gpus[0].uuid, 'A', sizeof(bad.gpus[0].uuid));
        memset(bad.gpus[0].bus_id, '1', sizeof(bad.gpus[0].bus_id));
        memset(bad.gpus[1].migs[0].uuid, 'B', sizeof(bad.gpus[1].migs[0].uuid));
        assert_int_equal(gs_select_devices("GPU-AAAA", &bad, &sel, &err), -1);
        assert_int_equal(gs_select_devices("MIG-BBBB", &bad, &sel, &err), -1);
        assert_int_equal(gs_select_devices("11:11:1.1", &bad, &sel, &err), -1);
        assert_int_equal(gs_select_devices("5e:00.0", &bad, &sel, &err), 0);
        assert_true(sel.gpu[1]);

        /* ngpus beyond the array is clamped */
        bad.ngpus = 1000;
        assert_int_equal(gs_select_devices("63", &bad, &sel, &err), 0);
        assert_true(sel.gpu[63]);
        assert_int_equal(gs_select_devices("64", &bad, &sel, &err), -1);
        assert_int_equal(gs_select_devices("all", &bad, &sel, &err), 0);
        assert_int_equal(sel.ngpus, GS_MAX_GPUS);
        /* nmigs beyond the array is clamped */
        bad.gpus[1].nmigs = 200;
        assert_int_equal(gs_select_devices("all", &bad, &sel, &err), 0);
        assert_int_equal(gs_select_devices("1:8", &bad, &sel, &err), -1);
}

static void test_uses_gpu(void **state)
{
        (void)state;
        assert_false(gs_selection_uses_gpu(NULL, 0));
        assert_int_equal(sel_ok("0"), 0);
        assert_true(gs_selection_uses_gpu(&sel, 0));
        assert_false(gs_selection_uses_gpu(&sel, 1));
        assert_false(gs_selection_uses_gpu(&sel, GS_MAX_GPUS));
        assert_false(gs_selection_uses_gpu(&sel, (unsigned)-1));
        assert_int_equal(sel_ok("1:3"), 0);
        assert_false(gs_selection_uses_gpu(&sel, 0));
        assert_true(gs_selection_uses_gpu(&sel, 1));
        struct gs_selection s;
        memset(&s, 0, sizeof(s));
        s.mig[GS_MAX_GPUS - 1][GS_MAX_MIGS - 1] = true;
        assert_true(gs_selection_uses_gpu(&s, GS_MAX_GPUS - 1));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup(test_empty_and_null, setup),
                cmocka_unit_test_setup(test_null_out_and_info, setup),
                cmocka_unit_test_setup(test_all, setup),
                cmocka_unit_test_setup(test_none, setup),
                cmocka_unit_test_setup(test_index, setup),
                cmocka_unit_test_setup(test_gpu_uuid, setup),
                cmocka_unit_test_setup(test_busid, setup),
                cmocka_unit_test_setup(test_mig_uuid, setup),
                cmocka_unit_test_setup(test_mig_legacy, setup),
                cmocka_unit_test_setup(test_mig_index, setup),
                cmocka_unit_test_setup(test_mixed_gpu_and_mig, setup),
                cmocka_unit_test_setup(test_instance, setup),
                cmocka_unit_test_setup(test_instance_trailing_comma, setup),
                cmocka_unit_test_setup(test_ambiguous, setup),
                cmocka_unit_test_setup(test_unknown_misc, setup),
                cmocka_unit_test_setup(test_long_tokens, setup),
                cmocka_unit_test_setup(test_uuid_not_terminated, setup),
                cmocka_unit_test_setup(test_uses_gpu, setup),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
