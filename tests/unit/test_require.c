/* Unit tests: requirement DSL (src/select/require.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <gpuslice/gpuslice.h>

#include "select/require.h"

#define HINT ", please update your driver to a newer version, or use an earlier cuda container"

static struct gs_error err;

static const struct gs_require_facts tesla = { "12.4", "550.54.15", "8.0", "Tesla" };

static int check(const char *expr, const struct gs_require_facts *f)
{
        memset(&err, 0, sizeof(err));
        return gs_require_check(expr, f, &err);
}

static void expect_pass(const char *expr, const struct gs_require_facts *f)
{
        if (check(expr, f) != 0)
                fail_msg("'%s' should pass, got: %s", expr, err.msg);
        assert_int_equal(err.code, 0);
}

static void expect_invalid(const char *expr, const struct gs_require_facts *f)
{
        if (check(expr, f) != -1)
                fail_msg("'%s' should be invalid", expr);
        assert_int_equal(err.code, GS_EINVAL);
        assert_string_equal(err.msg, "invalid expression");
}

static void expect_unsat(const char *expr, const struct gs_require_facts *f, const char *msg)
{
        if (check(expr, f) != -1)
                fail_msg("'%s' should be unsatisfied", expr);
        assert_int_equal(err.code, GS_EUNSATISFIED);
        assert_string_equal(err.msg, msg);
}

/* ------------------------------------------------------------------------------------------- */

static void test_version_compare(void **state)
{
        (void)state;
        assert_int_equal(gs_version_compare("11", "11.0"), 0);
        assert_int_equal(gs_version_compare("11.0.0", "11"), 0);
        assert_int_equal(gs_version_compare("12.4", "12"), 1);
        assert_int_equal(gs_version_compare("12", "12.4"), -1);
        assert_int_equal(gs_version_compare("12.10", "12.9"), 1);
        assert_int_equal(gs_version_compare("12.09", "12.9"), 0);
        assert_int_equal(gs_version_compare("0012.4", "12.4"), 0);
        assert_int_equal(gs_version_compare("550.54.15", "550.54.14"), 1);
        assert_int_equal(gs_version_compare("550.54.15", "550.54.15.0.0"), 0);
        assert_int_equal(gs_version_compare("550.54.15", "550.54.15.0.1"), -1);
        assert_int_equal(gs_version_compare("384", "384.111"), -1);
        assert_int_equal(gs_version_compare("0", "0.0.0"), 0);
        assert_int_equal(gs_version_compare("0", "00"), 0);
        /* far beyond 64-bit components */
        assert_int_equal(gs_version_compare("99999999999999999999999999", "99999999999999999999999998"), 1);
        assert_int_equal(gs_version_compare("1.99999999999999999999999999", "2"), -1);
        assert_int_equal(gs_version_compare("100000000000000000000", "99999999999999999999"), 1);
        /* invalid */
        assert_int_equal(gs_version_compare("", "1"), -2);
        assert_int_equal(gs_version_compare("1", ""), -2);
        assert_int_equal(gs_version_compare(NULL, "1"), -2);
        assert_int_equal(gs_version_compare("1", NULL), -2);
        assert_int_equal(gs_version_compare("1.a", "1"), -2);
        assert_int_equal(gs_version_compare("v1", "1"), -2);
        assert_int_equal(gs_version_compare("-1", "1"), -2);
        assert_int_equal(gs_version_compare("1 ", "1"), -2);
        assert_int_equal(gs_version_compare(".1", "1"), -2);
        assert_int_equal(gs_version_compare("1.", "1"), -2);
        assert_int_equal(gs_version_compare("1..2", "1"), -2);
        assert_int_equal(gs_version_compare(".", "1"), -2);
}

static void test_operators_version(void **state)
{
        (void)state;
        struct {
                const char *op;
                bool lt, eq, gt; /* result when fact < value, fact = value, fact > value */
        } ops[] = {
                { "=", false, true, false },  { "!=", true, false, true }, { "<", true, false, false },
                { "<=", true, true, false },  { ">", false, false, true }, { ">=", false, true, true },
        };
        const char *keys[] = { "cuda", "driver", "arch" };
        const char *facts_v[] = { "12.4", "550.54.15", "8.0" };
        const char *below[] = { "12.5", "550.54.16", "8.6" };  /* fact < value */
        const char *same[] = { "12.4.0", "550.54.15", "8" };   /* fact = value */
        const char *above[] = { "12", "550", "7.5" };          /* fact > value */

        for (size_t k = 0; k < 3; k++) {
                for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
                        const char *vals[] = { below[k], same[k], above[k] };
                        bool want[] = { ops[o].lt, ops[o].eq, ops[o].gt };
                        for (size_t v = 0; v < 3; v++) {
                                char expr[128];
                                snprintf(expr, sizeof(expr), "%s%s%s", keys[k], ops[o].op, vals[v]);
                                int rc = check(expr, &tesla);
                                if ((rc == 0) != want[v])
                                        fail_msg("'%s' with %s: rc %d (%s)", expr, facts_v[k], rc,
                                                 err.msg);
                                if (rc != 0) {
                                        assert_int_equal(err.code, GS_EUNSATISFIED);
                                        char msg[256];
                                        snprintf(msg, sizeof(msg), "unsatisfied condition: %s%s", expr,
                                                 k == 0 && o == 5 ? HINT : "");
                                        assert_string_equal(err.msg, msg);
                                }
                        }
                }
        }
}

static void test_examples(void **state)
{
        (void)state;
        expect_pass("cuda=12.4", &tesla);
        expect_pass("cuda=12.4.0", &tesla);
        expect_pass("cuda>12", &tesla);
        expect_pass("driver>=550", &tesla);
        expect_pass("driver<551", &tesla);
        expect_pass("arch=8.0", &tesla);
        expect_pass("arch=8", &tesla);
        const struct gs_require_facts eleven = { "11", "450.80.02", "7.0", "Tesla" };
        expect_pass("cuda=11.0", &eleven);
        expect_pass("cuda=11.0.0", &eleven);
        expect_unsat("cuda>11.0", &eleven, "unsatisfied condition: cuda>11.0");
}

static void test_brand(void **state)
{
        (void)state;
        expect_pass("brand=Tesla", &tesla);
        expect_pass("brand=tesla", &tesla);
        expect_pass("brand=TESLA", &tesla);
        expect_pass("brand!=geforce", &tesla);
        expect_unsat("brand=geforce", &tesla, "unsatisfied condition: brand=geforce");
        expect_unsat("brand!=tesla", &tesla, "unsatisfied condition: brand!=tesla");
        expect_unsat("brand=tesl", &tesla, "unsatisfied condition: brand=tesl");
        expect_unsat("brand=teslaa", &tesla, "unsatisfied condition: brand=teslaa");
        expect_invalid("brand<x", &tesla);
        expect_invalid("brand>x", &tesla);
        expect_invalid("brand<=x", &tesla);
        expect_invalid("brand>=x", &tesla);
        expect_invalid("brand=", &tesla);
        /* brand values are not versions: anything goes after the operator */
        expect_pass("brand!=a=b", &tesla);
        expect_pass("brand!=1.2", &tesla);
}

static void test_keys_case(void **state)
{
        (void)state;
        expect_pass("CUDA>=12", &tesla);
        expect_pass("Driver>=550", &tesla);
        expect_pass("ARCH>=7.0", &tesla);
        expect_pass("BrAnD=tesla", &tesla);
        expect_unsat("CUDA>=13", &tesla, "unsatisfied condition: CUDA>=13" HINT);
        expect_invalid("cudaa>=1", &tesla);
        expect_invalid("cud>=1", &tesla);
        expect_invalid("gpu>=1", &tesla);
        expect_invalid("jetpack>=1", &tesla);
        expect_invalid(" cuda", &tesla);
}

static void test_invalid(void **state)
{
        (void)state;
        const char *bad[] = {
                "cuda",        "cuda1",      "cuda==12",    "cuda=>12",    "cuda=<12",  "cuda!12",
                "cuda!",       "cuda<>12",   "cuda>=",      "cuda=",       "=12",       ">=12",
                "cuda>=12a",   "cuda>=v12",  "cuda>=-1",    "cuda>=1.",    "cuda>=.1",  "cuda>=1..2",
                "cuda>=12>",   "cuda>=1=2",  "cuda >= 9.0", "cuda >=9.0",  "cuda>= 9.0", "cuda\t>=9",
                "cuda>=9\tarch>=1", "driver>=x", "arch=8.0a", "cuda>=12,foo=1", "cuda>=1 foo",
                "cuda>=1,", /* trailing comma is fine... */
        };
        for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]) - 1; k++)
                expect_invalid(bad[k], &tesla);
        expect_pass("cuda>=1,", &tesla);

        /* invalid anywhere, even after a passing term */
        expect_invalid("cuda>=1 cuda==2", &tesla);
        expect_invalid("cuda>=1,driver>=1 brand<x", &tesla);
        /* ...and even when an early false condition ends its term */
        expect_invalid("cuda>=99,bogus=1", &tesla);
        /* and even without facts */
        expect_invalid("cuda==1", NULL);
        expect_invalid(NULL, &tesla);
        /* NULL error pointer */
        assert_int_equal(gs_require_check("cuda==1", &tesla, NULL), -1);
        assert_int_equal(gs_require_check("cuda>99", &tesla, NULL), -1);
        assert_int_equal(gs_require_check("cuda>1", &tesla, NULL), 0);
}

static void test_empty(void **state)
{
        (void)state;
        const char *empty[] = { "", " ", "   ", ",", ",,", " , ", ", ,", ",,, ,,," };
        for (size_t k = 0; k < sizeof(empty) / sizeof(empty[0]); k++)
                expect_pass(empty[k], &tesla);
        expect_pass("  cuda>=12  ", &tesla);
        expect_pass(",,cuda>=12,,driver>=550,,", &tesla);
        expect_pass("cuda>=99   ,  cuda>=12", &tesla);
        expect_unsat("cuda>=99,,", &tesla, "unsatisfied condition: cuda>=99,," HINT);
        /* the first term with a condition is named, as written */
        expect_unsat(" ,  ,cuda>=99 arch>=9", &tesla, "unsatisfied condition: ,cuda>=99" HINT);
}

static void test_or_and(void **state)
{
        (void)state;
        /* space = OR */
        expect_pass("cuda>=13 cuda>=12", &tesla);
        expect_pass("cuda>=12 cuda>=13", &tesla);
        expect_unsat("cuda>=13 cuda>=14", &tesla, "unsatisfied condition: cuda>=13" HINT);
        /* comma = AND */
        expect_pass("cuda>=12,driver>=550,arch>=8.0,brand=tesla", &tesla);
        expect_unsat("cuda>=12,driver>=551", &tesla, "unsatisfied condition: cuda>=12,driver>=551" HINT);
        /* the hint depends on the first term, not on the failing condition */
        expect_unsat("driver>=551,cuda>=13", &tesla, "unsatisfied condition: driver>=551,cuda>=13");
        expect_unsat("driver>=551 cuda>=13", &tesla, "unsatisfied condition: driver>=551");
        expect_unsat("cuda>13", &tesla, "unsatisfied condition: cuda>13");
        expect_unsat("cuda=13", &tesla, "unsatisfied condition: cuda=13");
        expect_unsat("arch>=9.0 cuda>=13", &tesla, "unsatisfied condition: arch>=9.0");
}

static void test_typical_image(void **state)
{
        (void)state;
        const char *req = "cuda>=10.0 brand=tesla,driver>=384,driver<385";
        const struct gs_require_facts new_driver = { "10.2", "440.33.01", "7.0", "GeForce" };
        const struct gs_require_facts tesla_384 = { "9.0", "384.111", "7.0", "Tesla" };
        const struct gs_require_facts tesla_390 = { "9.1", "390.46", "7.0", "Tesla" };
        const struct gs_require_facts geforce_384 = { "9.0", "384.111", "6.1", "GeForce" };
        const struct gs_require_facts no_device = { "9.0", "384.111", NULL, NULL };
        expect_pass(req, &new_driver);
        expect_pass(req, &tesla_384);
        expect_pass(req, &no_device); /* brand missing passes */
        const char *msg = "unsatisfied condition: cuda>=10.0" HINT;
        expect_unsat(req, &tesla_390, msg);
        expect_unsat(req, &geforce_384, msg);
}

static void test_missing_facts(void **state)
{
        (void)state;
        expect_pass("cuda>=99,driver>=999,arch>=99,brand=nope", NULL);
        const struct gs_require_facts none = { NULL, NULL, NULL, NULL };
        expect_pass("cuda>=99,driver>=999,arch>=99,brand=nope", &none);
        const struct gs_require_facts empty = { "", "", "", "" };
        expect_pass("cuda>=99,driver>=999,arch>=99,brand=nope", &empty);
        const struct gs_require_facts only_cuda = { "12.4", NULL, NULL, NULL };
        expect_pass("driver>=999", &only_cuda);
        expect_unsat("cuda>=99", &only_cuda, "unsatisfied condition: cuda>=99" HINT);
        /* a fact that is not a version is an error when needed, never a silent pass */
        const struct gs_require_facts weird = { "12.4", "N/A", "8.0", "Tesla" };
        expect_invalid("driver>=1", &weird);
        expect_pass("cuda>=1", &weird);
        expect_pass("cuda>=1 driver>=1", &weird); /* never evaluated */
}

static void test_long(void **state)
{
        (void)state;
        size_t n = 100000;
        char *e = malloc(n + 1);
        assert_non_null(e);
        /* "cuda>=99,cuda>=99,..." : a huge failing term, message truncated */
        size_t off = 0;
        while (off + 9 <= n) {
                memcpy(e + off, "cuda>=99,", 9);
                off += 9;
        }
        e[off] = '\0';
        assert_int_equal(check(e, &tesla), -1);
        assert_int_equal(err.code, GS_EUNSATISFIED);
        assert_true(strnlen(err.msg, sizeof(err.msg)) < sizeof(err.msg));
        assert_true(strncmp(err.msg, "unsatisfied condition: cuda>=99,cuda>=99,", 41) == 0);
        assert_non_null(strstr(err.msg, "..." HINT));

        /* a huge version number */
        memcpy(e, "cuda<", 5);
        memset(e + 5, '9', n - 5);
        e[n] = '\0';
        expect_pass(e, &tesla);
        e[4] = '>';
        assert_int_equal(check(e, &tesla), -1);
        assert_int_equal(err.code, GS_EUNSATISFIED);
        assert_true(strnlen(err.msg, sizeof(err.msg)) < sizeof(err.msg));

        /* many spaces and commas */
        memset(e, ' ', n);
        for (size_t i = 0; i < n; i += 3)
                e[i] = ',';
        memcpy(e + n / 2, "cuda>=1", 7);
        expect_pass(e, &tesla);
        free(e);
}

/* ------------------------------------------------------------------------------------------- */

static struct gs_device_info info;

static int setup_info(void **state)
{
        (void)state;
        memset(&info, 0, sizeof(info));
        snprintf(info.driver_version, sizeof(info.driver_version), "550.54.15");
        snprintf(info.cuda_version, sizeof(info.cuda_version), "12.4");
        info.ngpus = 3;
        snprintf(info.gpus[0].arch, sizeof(info.gpus[0].arch), "8.0");
        snprintf(info.gpus[0].brand, sizeof(info.gpus[0].brand), "Tesla");
        snprintf(info.gpus[1].arch, sizeof(info.gpus[1].arch), "9.0");
        snprintf(info.gpus[1].brand, sizeof(info.gpus[1].brand), "NvidiaRTX");
        info.gpus[1].mig_capable = info.gpus[1].mig_enabled = true;
        info.gpus[1].nmigs = 2;
        info.gpus[1].migs[1].index = 1;
        snprintf(info.gpus[2].arch, sizeof(info.gpus[2].arch), "7.5");
        snprintf(info.gpus[2].brand, sizeof(info.gpus[2].brand), "GeForce");
        return 0;
}

static int check_all(const char *const *exprs, size_t n, const struct gs_selection *sel)
{
        memset(&err, 0, sizeof(err));
        return gs_require_check_all(exprs, n, &info, sel, &err);
}

static void test_all_nothing_selected(void **state)
{
        (void)state;
        struct gs_selection sel;
        memset(&sel, 0, sizeof(sel));
        const char *r1[] = { "arch>=99,brand=nope" };
        assert_int_equal(check_all(r1, 1, &sel), 0);  /* no device: arch/brand missing */
        assert_int_equal(check_all(r1, 1, NULL), 0);
        const char *r2[] = { "cuda>=13" };
        assert_int_equal(check_all(r2, 1, &sel), -1);
        assert_int_equal(err.code, GS_EUNSATISFIED);
        assert_string_equal(err.msg, "unsatisfied condition: cuda>=13" HINT);
        assert_int_equal(check_all(r2, 1, NULL), -1);
        const char *r3[] = { "driver<550" };
        assert_int_equal(check_all(r3, 1, NULL), -1);
        assert_string_equal(err.msg, "unsatisfied condition: driver<550");
        /* n == 0 with NULL exprs */
        assert_int_equal(check_all(NULL, 0, &sel), 0);
        /* NULL info: nothing is known, everything passes */
        memset(&err, 0, sizeof(err));
        assert_int_equal(gs_require_check_all(r2, 1, NULL, &sel, &err), 0);
        /* empty cuda/driver strings count as missing */
        info.cuda_version[0] = '\0';
        info.driver_version[0] = '\0';
        assert_int_equal(check_all(r2, 1, NULL), 0);
        assert_int_equal(check_all(r3, 1, NULL), 0);
}

static void test_all_per_gpu(void **state)
{
        (void)state;
        struct gs_selection sel;
        memset(&sel, 0, sizeof(sel));
        sel.gpu[0] = true;
        sel.ngpus = 1;
        const char *r1[] = { "arch>=8.0", "brand=tesla" };
        assert_int_equal(check_all(r1, 2, &sel), 0);
        sel.gpu[2] = true; /* GeForce, 7.5 */
        sel.ngpus = 2;
        assert_int_equal(check_all(r1, 2, &sel), -1);
        assert_int_equal(err.code, GS_EUNSATISFIED);
        assert_string_equal(err.msg, "unsatisfied condition: arch>=8.0");
        const char *r2[] = { "brand=tesla brand=geforce", "arch>=7.5" };
        assert_int_equal(check_all(r2, 2, &sel), 0);
        /* every expression must pass */
        const char *r3[] = { "cuda>=12", "driver>=551", "arch>=1" };
        assert_int_equal(check_all(r3, 3, &sel), -1);
        assert_string_equal(err.msg, "unsatisfied condition: driver>=551");
}

static void test_all_mig_parent(void **state)
{
        (void)state;
        struct gs_selection sel;
        memset(&sel, 0, sizeof(sel));
        sel.mig[1][1] = true; /* MIG device of GPU 1 (9.0, NvidiaRTX) */
        sel.nmigs = 1;
        const char *pass[] = { "arch=9.0,brand=nvidiartx" };
        assert_int_equal(check_all(pass, 1, &sel), 0);
        const char *fail[] = { "brand=tesla" };
        assert_int_equal(check_all(fail, 1, &sel), -1);
        assert_string_equal(err.msg, "unsatisfied condition: brand=tesla");
        /* selection beyond ngpus is ignored: no device => passes */
        memset(&sel, 0, sizeof(sel));
        sel.gpu[5] = true;
        assert_int_equal(check_all(fail, 1, &sel), 0);
}

static void test_all_errors(void **state)
{
        (void)state;
        const char *many[GS_MAX_REQUIRES + 1];
        for (size_t k = 0; k < GS_MAX_REQUIRES + 1; k++)
                many[k] = "cuda>=1";
        assert_int_equal(check_all(many, GS_MAX_REQUIRES, NULL), 0);
        assert_int_equal(check_all(many, GS_MAX_REQUIRES + 1, NULL), -1);
        assert_int_equal(err.code, GS_EINVAL);
        assert_string_equal(err.msg, "too many requirements");
        assert_int_equal(check_all(NULL, 1, NULL), -1);
        assert_int_equal(err.code, GS_EINVAL);
        const char *withnull[] = { "cuda>=1", NULL };
        assert_int_equal(check_all(withnull, 2, NULL), -1);
        assert_string_equal(err.msg, "invalid expression");
        /* syntax is checked for all expressions before any is evaluated */
        const char *late[] = { "cuda>=99", "cuda==1" };
        assert_int_equal(check_all(late, 2, NULL), -1);
        assert_int_equal(err.code, GS_EINVAL);
        assert_string_equal(err.msg, "invalid expression");
        assert_int_equal(gs_require_check_all(late, 2, &info, NULL, NULL), -1);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_version_compare),
                cmocka_unit_test(test_operators_version),
                cmocka_unit_test(test_examples),
                cmocka_unit_test(test_brand),
                cmocka_unit_test(test_keys_case),
                cmocka_unit_test(test_invalid),
                cmocka_unit_test(test_empty),
                cmocka_unit_test(test_or_and),
                cmocka_unit_test(test_typical_image),
                cmocka_unit_test(test_missing_facts),
                cmocka_unit_test(test_long),
                cmocka_unit_test_setup(test_all_nothing_selected, setup_info),
                cmocka_unit_test_setup(test_all_per_gpu, setup_info),
                cmocka_unit_test_setup(test_all_mig_parent, setup_info),
                cmocka_unit_test_setup(test_all_errors, setup_info),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
