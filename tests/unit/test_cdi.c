/* Unit tests: CDI specs (src/cdi): the YAML emitter and reader, device names, the minimum
 * cdiVersion, --slice and name validation, reading specs back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "cdi/cdi.h"
#include "runtime/cdi_hook.h"

/* ------------------------------------------------------------------------------------------ */
/* YAML */

/* {"k": s} as YAML: the line after "k: ". */
static char *emit_value(const char *s, size_t n)
{
        json_object *o = json_object_new_object();
        json_object_object_add(o, "k", json_object_new_string_len(s, (int)n));
        struct gs_error err = {0};
        char *y = gs_yaml_emit(o, &err);
        json_object_put(o);
        assert_non_null(y);
        assert_true(strncmp(y, "k: ", 3) == 0);
        return y;
}

/* Emit and read back: the same tree. */
static void roundtrip(json_object *o)
{
        struct gs_error err = {0};
        char *y = gs_yaml_emit(o, &err);
        assert_non_null(y);
        json_object *back = gs_yaml_parse(y, strlen(y), &err);
        if (back == NULL || !json_object_equal(o, back))
                fail_msg("round trip failed (%s):\n%s\nread back: %s", err.msg, y,
                         back ? json_object_to_json_string(back) : "NULL");
        json_object_put(back);
        free(y);
}

static void roundtrip_string(const char *s, size_t n)
{
        json_object *o = json_object_new_object();
        json_object_object_add(o, "k", json_object_new_string_len(s, (int)n));
        json_object_object_add(o, s, json_object_new_int(1)); /* as a key too (no NUL in keys) */
        if (strlen(s) != n)
                json_object_object_del(o, s);
        roundtrip(o);
        json_object *a = json_object_new_array();
        json_object_array_add(a, json_object_new_string_len(s, (int)n));
        roundtrip(a);
        json_object_put(a);
        json_object_put(o);
}

static void test_yaml_quoting(void **state)
{
        (void)state;
        static const struct {
                const char *in, *out;
        } cases[] = {
                {"plain", "plain"},
                {"/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04", "/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04"},
                {"nvidia.com/gpu", "nvidia.com/gpu"},
                {"NVIDIA_VISIBLE_DEVICES=void", "NVIDIA_VISIBLE_DEVICES=void"},
                {"all-4g", "all-4g"},
                {"0", "\"0\""},
                {"12", "\"12\""},
                {"0:1", "\"0:1\""},
                {"1.5", "\"1.5\""},
                {"0x1F", "\"0x1F\""},
                {"true", "\"true\""},
                {"True", "\"True\""},
                {"FALSE", "\"FALSE\""},
                {"yes", "\"yes\""},
                {"No", "\"No\""},
                {"on", "\"on\""},
                {"off", "\"off\""},
                {"y", "\"y\""},
                {"n", "\"n\""},
                {"null", "\"null\""},
                {"Null", "\"Null\""},
                {"~", "\"~\""},
                {"", "\"\""},
                {"a: b", "\"a: b\""},
                {"a:b", "\"a:b\""},
                {"PATH=/usr/sbin:/usr/bin", "\"PATH=/usr/sbin:/usr/bin\""},
                {"libcuda.so.1::/usr/lib/libcuda.so", "\"libcuda.so.1::/usr/lib/libcuda.so\""},
                {"-x", "\"-x\""},
                {"--link", "\"--link\""},
                {"-", "\"-\""},
                {"#", "\"#\""},
                {"a #b", "\"a #b\""},
                {"?q", "\"?q\""},
                {"&anchor", "\"&anchor\""},
                {"*alias", "\"*alias\""},
                {"!tag", "\"!tag\""},
                {"|lit", "\"|lit\""},
                {">fold", "\">fold\""},
                {"'sq", "\"'sq\""},
                {"%dir", "\"%dir\""},
                {"@at", "\"@at\""},
                {"`bt", "\"`bt\""},
                {"[a]", "\"[a]\""},
                {"{b}", "\"{b}\""},
                {",c", "\",c\""},
                {".inf", "\".inf\""},
                {"<<", "\"<<\""},
                {" lead", "\" lead\""},
                {"trail ", "\"trail \""},
                {"line\nbreak", "\"line\\nbreak\""},
                {"tab\there", "\"tab\\there\""},
                {"say \"hi\"", "say \"hi\""},
                {"back\\slash", "back\\slash"},
                {"-say \"hi\"", "\"-say \\\"hi\\\"\""},
                {"-back\\slash", "\"-back\\\\slash\""},
                {"\x01\x1b\x7f", "\"\\x01\\e\\x7F\""},
                {"caf\xc3\xa9 \xe2\x82\xac", "\"caf\xc3\xa9 \xe2\x82\xac\""},
                {"\xe2\x80\xa8", "\"\\L\""},
                {"\xc2\x85", "\"\\N\""},
                {"\xc2\xa0", "\"\\_\""},
                {"\xef\xbb\xbf" "bom", "\"\\uFEFFbom\""},
                {"\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\""},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char *y = emit_value(cases[i].in, strlen(cases[i].in));
                char want[256];
                snprintf(want, sizeof(want), "k: %s\n", cases[i].out);
                if (strcmp(y, want) != 0)
                        fail_msg("'%s': emitted %s wanted %s", cases[i].in, y, want);
                free(y);
                roundtrip_string(cases[i].in, strlen(cases[i].in));
        }
        /* an embedded NUL */
        char *y = emit_value("a\0b", 3);
        assert_string_equal(y, "k: \"a\\0b\"\n");
        free(y);
        roundtrip_string("a\0b", 3);
}

static void test_yaml_invalid_utf8(void **state)
{
        (void)state;
        static const char *const bad[] = {"\xff", "a\xc3", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                json_object *o = json_object_new_array();
                json_object_array_add(o, json_object_new_string(bad[i]));
                struct gs_error err = {0};
                char *y = gs_yaml_emit(o, &err);
                assert_null(y);
                assert_int_equal(err.code, GS_EFORMAT);
                assert_non_null(strstr(err.msg, "not valid UTF-8"));
                json_object_put(o);
        }
}

static void test_yaml_structures(void **state)
{
        (void)state;
        const char *json = "{\"cdiVersion\":\"0.5.0\",\"kind\":\"nvidia.com/gpu\",\"devices\":[{\"name\":\"0\","
                           "\"containerEdits\":{\"deviceNodes\":[{\"path\":\"/dev/nvidia0\",\"hostPath\":\"/dev/nvidia0\"}]}}],"
                           "\"empty_obj\":{},\"empty_arr\":[],\"nested\":[[1,2],[],[[\"x\"]],{}],\"n\":null,"
                           "\"t\":true,\"f\":false,\"i\":-42,\"big\":9007199254740993,\"d\":1.5,\"obj\":{\"a\":{\"b\":{}}},"
                           "\"list\":[{\"a\":1,\"b\":[\"x\",\"y\"]},{\"c\":{\"d\":\"e\"}}]}";
        json_object *o = json_tokener_parse(json);
        assert_non_null(o);
        roundtrip(o);
        struct gs_error err = {0};
        char *y = gs_yaml_emit(o, &err);
        assert_non_null(y);
        /* sequences under a key at the key's indentation, objects in sequences inline after "- " */
        assert_non_null(strstr(y, "devices:\n- name: \"0\"\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia0\n"));
        assert_non_null(strstr(y, "empty_obj: {}\n"));
        assert_non_null(strstr(y, "empty_arr: []\n"));
        assert_non_null(strstr(y, "nested:\n- - 1\n  - 2\n- []\n- - - x\n- {}\n"));
        assert_non_null(strstr(y, "\"n\": null\nt: true\nf: false\ni: -42\n"));
        free(y);
        json_object_put(o);

        /* a key longer than YAML's 1024-character limit for implicit keys is written as an explicit
         * key ("? key" / ": value"), with a scalar, a mapping and a sequence as its value (found by
         * fuzz_cdi: libyaml refused the implicit form) */
        char longkey[1500];
        memset(longkey, 'k', sizeof(longkey) - 1);
        longkey[sizeof(longkey) - 1] = '\0';
        json_object *lk = json_object_new_object();
        json_object_object_add(lk, longkey, json_object_new_string("v"));
        json_object *lm = json_object_new_object();
        json_object_object_add(lm, "a", json_object_new_int(1));
        json_object *wrap = json_object_new_object();
        json_object_object_add(wrap, longkey, lm);
        json_object *la = json_object_new_array();
        json_object_array_add(la, json_object_new_string("x"));
        json_object_array_add(la, wrap);
        json_object_object_add(lk, "short", la);
        longkey[0] = 'K'; /* a second long key, whose value is a sequence */
        json_object *ls = json_object_new_array();
        json_object_array_add(ls, json_object_new_string("y"));
        json_object_array_add(ls, json_object_new_int(2));
        json_object_object_add(lk, longkey, ls);
        json_object *seq = json_object_new_array();
        json_object_array_add(seq, lk);
        roundtrip(seq);
        y = gs_yaml_emit(seq, &err);
        assert_non_null(y);
        assert_non_null(strstr(y, "- ? kkk"));
        free(y);
        json_object_put(seq);

        /* integers at the edges of int64 and uint64 read back as the same integers (found by
         * fuzz_cdi: 2^64-1 came back as a float) */
        json_object *ints = json_tokener_parse("[9223372036854775807, 9223372036854775808, 18446744073709551615, "
                                               "-9223372036854775808, 0, -1]");
        assert_non_null(ints);
        roundtrip(ints);
        json_object_put(ints);

        /* scalars and empty containers at the top */
        json_object *s = json_object_new_string("0");
        y = gs_yaml_emit(s, &err);
        assert_string_equal(y, "\"0\"\n");
        free(y);
        json_object_put(s);
        json_object *e = json_object_new_array();
        y = gs_yaml_emit(e, &err);
        assert_string_equal(y, "[]\n");
        free(y);
        json_object_put(e);
}

static void test_yaml_reader(void **state)
{
        (void)state;
        struct gs_error err = {0};
        const char *y = "a: 0\nb: '0'\nc: \"x\"\nd: yes\ne: ~\nf:\ng: 1.5e3\nh: 010\ni: 0x10\nj: -7\nk: \"5\"\n"
                        "l: [1, two, {x: z, w: y}]\nm: &anc {p: q}\nn: *anc\no: .inf\n";
        json_object *o = gs_yaml_parse(y, strlen(y), &err);
        assert_non_null(o);
        json_object *want = json_tokener_parse("{\"a\":0,\"b\":\"0\",\"c\":\"x\",\"d\":true,\"e\":null,\"f\":null,"
                                               "\"g\":1500.0,\"h\":10,\"i\":16,\"j\":-7,\"k\":\"5\","
                                               "\"l\":[1,\"two\",{\"x\":\"z\",\"w\":true}],\"m\":{\"p\":\"q\"},\"n\":{\"p\":\"q\"}}");
        json_object *inf = json_object_object_get(o, "o");
        assert_true(json_object_is_type(inf, json_type_double) && json_object_get_double(inf) > 1e308);
        json_object_object_del(o, "o");
        if (!json_object_equal(o, want))
                fail_msg("read %s", json_object_to_json_string(o));
        json_object_put(o);
        json_object_put(want);

        static const struct {
                const char *doc, *msg;
        } bad[] = {
                {"a: [1, 2\n", "invalid YAML"},
                {"a: b\n  c: d\n", "invalid YAML"},
                {"a: 1\na: 2\n", "duplicate key 'a'"},
                {"? [x]\n: y\n", "not a scalar"},
                {"\"unterminated\n", "invalid YAML"},
                {"", "empty YAML document"},
                {"a: *nope\n", "invalid YAML"},
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                memset(&err, 0, sizeof(err));
                json_object *r = gs_yaml_parse(bad[i].doc, strlen(bad[i].doc), &err);
                if (r != NULL || strstr(err.msg, bad[i].msg) == NULL)
                        fail_msg("'%s': got %s, message '%s'", bad[i].doc, r ? "a tree" : "NULL", err.msg);
        }
}

/* Aliases that expand exponentially stop at the node limit, quickly. */
static void test_yaml_alias_bomb(void **state)
{
        (void)state;
        const char *y = "a: &a [x, x, x, x, x, x, x, x, x]\n"
                        "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                        "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
                        "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                        "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
                        "f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
                        "g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]\n"
                        "h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]\n"
                        "i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]\n";
        struct gs_error err = {0};
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        json_object *o = gs_yaml_parse(y, strlen(y), &err);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        assert_null(o);
        assert_non_null(strstr(err.msg, "nodes"));
        assert_true(t1.tv_sec - t0.tv_sec < 10);
}

/* ------------------------------------------------------------------------------------------ */
/* Names, versions, slices */

static void test_device_names(void **state)
{
        (void)state;
        struct gs_gpu g = {.index = 3, .minor = 5};
        snprintf(g.uuid, sizeof(g.uuid), "GPU-11111111-2222-3333-4444-555555555555");
        struct gs_mig_device m = {.index = 2, .gi = 9, .ci = 1};
        snprintf(m.uuid, sizeof(m.uuid), "MIG-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee");
        char buf[128];
        gs_cdi_device_name(GS_CDI_NAME_INDEX, &g, NULL, buf, sizeof(buf));
        assert_string_equal(buf, "3");
        gs_cdi_device_name(GS_CDI_NAME_INDEX, &g, &m, buf, sizeof(buf));
        assert_string_equal(buf, "3:2");
        gs_cdi_device_name(GS_CDI_NAME_UUID, &g, NULL, buf, sizeof(buf));
        assert_string_equal(buf, "GPU-11111111-2222-3333-4444-555555555555");
        gs_cdi_device_name(GS_CDI_NAME_UUID, &g, &m, buf, sizeof(buf));
        assert_string_equal(buf, "MIG-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee");
        gs_cdi_device_name(GS_CDI_NAME_TYPE_INDEX, &g, NULL, buf, sizeof(buf));
        assert_string_equal(buf, "gpu3");
        gs_cdi_device_name(GS_CDI_NAME_TYPE_INDEX, &g, &m, buf, sizeof(buf));
        assert_string_equal(buf, "mig3:2");

        enum gs_cdi_strategy s;
        struct gs_error err = {0};
        assert_int_equal(gs_cdi_parse_strategy("uuid", &s, &err), 0);
        assert_int_equal(s, GS_CDI_NAME_UUID);
        assert_int_equal(gs_cdi_parse_strategy("type-index", &s, &err), 0);
        assert_int_equal(s, GS_CDI_NAME_TYPE_INDEX);
        assert_int_equal(gs_cdi_parse_strategy("index", &s, &err), 0);
        assert_int_equal(s, GS_CDI_NAME_INDEX);
        assert_int_equal(gs_cdi_parse_strategy("Index", &s, &err), -1);
        assert_non_null(strstr(err.msg, "invalid device name strategy 'Index'"));

        static const char *const good[] = {"0", "0:1", "all", "GPU-1234", "gpu0-4g", "a.b_c-d:e"};
        static const char *const bad[] = {"", "-a", "a-", ":0", "0:", "a b", "a/b", "a=b", "ä"};
        for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
                assert_int_equal(gs_cdi_validate_device_name(good[i], &err), 0);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(gs_cdi_validate_device_name(bad[i], &err), -1);
}

static void test_kind_validation(void **state)
{
        (void)state;
        struct gs_error err = {0};
        static const char *const vgood[] = {"nvidia.com", "test-12345.gpuslice.io", "example", "a_b.c0"};
        static const struct {
                const char *v, *msg;
        } vbad[] = {
                {"", "empty"},
                {"1nvidia.com", "must start with a letter"},
                {"nvidia.com.", "must end with a letter or digit"},
                {"nvidia..com", "label"},
                {"nvidia.-x.com", "label"},
                {"nvidia-.com", "label"},
                {"nvi dia.com", "invalid character ' '"},
                {"nvidia.com/gpu", "invalid character '/'"},
        };
        for (size_t i = 0; i < sizeof(vgood) / sizeof(vgood[0]); i++)
                assert_int_equal(gs_cdi_validate_vendor(vgood[i], &err), 0);
        for (size_t i = 0; i < sizeof(vbad) / sizeof(vbad[0]); i++) {
                assert_int_equal(gs_cdi_validate_vendor(vbad[i].v, &err), -1);
                if (strstr(err.msg, vbad[i].msg) == NULL || strstr(err.msg, "invalid vendor") == NULL)
                        fail_msg("vendor '%s': %s", vbad[i].v, err.msg);
        }
        static const char *const cgood[] = {"gpu", "gpu-slice_2", "g.pu", "G"};
        static const struct {
                const char *c, *msg;
        } cbad[] = {
                {"", "empty"},
                {"0gpu", "must start with a letter"},
                {"gpu-", "must end with a letter or digit"},
                {"g/pu", "invalid character '/'"},
                {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "longer than 63"},
        };
        for (size_t i = 0; i < sizeof(cgood) / sizeof(cgood[0]); i++)
                assert_int_equal(gs_cdi_validate_class(cgood[i], &err), 0);
        for (size_t i = 0; i < sizeof(cbad) / sizeof(cbad[0]); i++) {
                assert_int_equal(gs_cdi_validate_class(cbad[i].c, &err), -1);
                if (strstr(err.msg, cbad[i].msg) == NULL || strstr(err.msg, "invalid class") == NULL)
                        fail_msg("class '%s': %s", cbad[i].c, err.msg);
        }
}

static void expect_version(const char *json, const char *want)
{
        json_object *o = json_tokener_parse(json);
        assert_non_null(o);
        const char *v = gs_cdi_min_version(o);
        if (strcmp(v, want) != 0)
                fail_msg("%s: version %s, wanted %s", json, v, want);
        json_object_put(o);
}

static void test_min_version(void **state)
{
        (void)state;
        expect_version("{\"kind\":\"a.com/gpu\",\"devices\":[{\"name\":\"gpu0\",\"containerEdits\":{\"env\":[\"A=1\"],"
                       "\"deviceNodes\":[{\"path\":\"/dev/x\"}],\"mounts\":[{\"hostPath\":\"/a\",\"containerPath\":\"/a\"}],"
                       "\"hooks\":[{\"hookName\":\"createContainer\",\"path\":\"/bin/true\"}]}}]}",
                       "0.3.0");
        expect_version("{\"kind\":\"a.com/gpu\",\"devices\":[{\"name\":\"gpu0\",\"containerEdits\":{}}],"
                       "\"containerEdits\":{\"mounts\":[{\"hostPath\":\"/a\",\"containerPath\":\"/a\",\"type\":\"bind\"}]}}",
                       "0.4.0");
        expect_version("{\"kind\":\"a.com/gpu\",\"devices\":[{\"name\":\"gpu0\",\"containerEdits\":{\"deviceNodes\":"
                       "[{\"path\":\"/dev/x\",\"hostPath\":\"/dev/y\"}]}}]}",
                       "0.5.0");
        expect_version("{\"kind\":\"a.com/gpu\",\"devices\":[{\"name\":\"gpu0\",\"containerEdits\":{}}],"
                       "\"containerEdits\":{\"deviceNodes\":[{\"path\":\"/dev/x\",\"hostPath\":\"/dev/x\"}]}}",
                       "0.5.0");
        expect_version("{\"kind\":\"a.com/gpu\",\"devices\":[{\"name\":\"0\",\"containerEdits\":{}}]}", "0.5.0");
        expect_version("{\"kind\":\"a.com/gpu\",\"devices\":[{\"name\":\"gpu0\",\"containerEdits\":{\"deviceNodes\":"
                       "[{\"path\":\"/dev/x\",\"hostPath\":\"\"}]}}]}",
                       "0.3.0");
        expect_version("{\"kind\":\"a.com/g.pu\",\"devices\":[{\"name\":\"gpu0\",\"containerEdits\":{}}]}", "0.6.0");
        expect_version("{\"kind\":\"a.com/gpu\",\"annotations\":{\"a\":\"b\"},\"devices\":[]}", "0.6.0");
        expect_version("{\"kind\":\"a.com/gpu\",\"devices\":[{\"name\":\"0\",\"annotations\":{\"a\":\"b\"}}]}", "0.6.0");
        expect_version("{\"kind\":\"a.com/gpu\",\"devices\":[{\"name\":\"gpu0\",\"containerEdits\":{\"additionalGids\":[5]}}]}",
                       "0.7.0");
        expect_version("{\"kind\":\"a.com/gpu\",\"containerEdits\":{\"intelRdt\":{\"closID\":\"x\"}},\"devices\":[]}", "0.7.0");
        expect_version("{\"kind\":\"a.com/gpu\",\"containerEdits\":{\"netDevices\":[{\"hostInterfaceName\":\"e\","
                       "\"name\":\"f\"}]},\"devices\":[]}",
                       "1.1.0");
}

static void test_slices(void **state)
{
        (void)state;
        struct gs_cdi_slice s;
        struct gs_error err = {0};
        assert_int_equal(gs_cdi_parse_slice("4g=4Gi", &s, &err), 0);
        assert_string_equal(s.name, "4g");
        assert_string_equal(s.memory, "4Gi");
        assert_int_equal(s.compute, 0);
        assert_int_equal(gs_cdi_parse_slice("a.b_c-1=1.5G,50", &s, &err), 0);
        assert_string_equal(s.name, "a.b_c-1");
        assert_string_equal(s.memory, "1.5G");
        assert_int_equal(s.compute, 50);
        assert_int_equal(gs_cdi_parse_slice("x=1073741824,100", &s, &err), 0);
        assert_int_equal(s.compute, 100);
        assert_string_equal(s.priority, "");
        /* a priority after the compute share, as a word (any case; written in lower case) */
        assert_int_equal(gs_cdi_parse_slice("hi=4Gi,25,high", &s, &err), 0);
        assert_string_equal(s.memory, "4Gi");
        assert_int_equal(s.compute, 25);
        assert_string_equal(s.priority, "high");
        assert_int_equal(gs_cdi_parse_slice("lo=2Gi,10,LOW", &s, &err), 0);
        assert_string_equal(s.priority, "low");
        assert_int_equal(gs_cdi_parse_slice("n=2Gi,10,normal", &s, &err), 0);
        assert_string_equal(s.priority, "normal");

        static const struct {
                const char *arg, *msg;
        } bad[] = {
                {"4Gi", "expected NAME=MEM[,COMPUTE[,PRIORITY]]"},
                {"=4Gi", "empty slice name"},
                {"a b=4Gi", "invalid character ' '"},
                {"a/b=4Gi", "invalid character '/'"},
                {"a:b=4Gi", "invalid character ':'"},
                {"a-=4Gi", "must end with a letter or digit"},
                {"a=", "no memory size"},
                {"a=,50", "no memory size"},
                {"a=4GB", "invalid memory size '4GB'"},
                {"a=4 Gi", "invalid memory size"},
                {"a=-1", "invalid memory size"},
                {"a=0", "more than 0"},
                {"a=unlimited", "more than 0"},
                {"a=4Gi,0", "invalid compute share '0'"},
                {"a=4Gi,101", "invalid compute share '101'"},
                {"a=4Gi,", "invalid compute share ''"},
                {"a=4Gi,50%", "invalid compute share '50%'"},
                {"a=4Gi,50,1", "invalid priority '1' (high, normal or low)"},
                {"a=4Gi,50,urgent", "invalid priority 'urgent'"},
                {"a=4Gi,50,", "invalid priority ''"},
                {"a=4Gi,50,high,x", "invalid priority 'high,x'"},
                {"a=4Gi,,high", "invalid compute share ''"},
                {"a=4Gi,high", "invalid compute share 'high'"},
                {"a=4Gi,101,low", "invalid compute share '101'"},
                {"a=4Gi,12345678901234567890,low", "invalid compute share '12345678901234567890'"},
                {"a=4Gi,-5", "invalid compute share"},
                {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa=1G", "longer than"},
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                memset(&err, 0, sizeof(err));
                assert_int_equal(gs_cdi_parse_slice(bad[i].arg, &s, &err), -1);
                if (strstr(err.msg, bad[i].msg) == NULL || strstr(err.msg, "invalid --slice") == NULL)
                        fail_msg("'%s': %s", bad[i].arg, err.msg);
        }
}

static void test_links(void **state)
{
        (void)state;
        char buf[256];
        const char *t, *l;
        struct gs_error err = {0};
        assert_int_equal(gs_cdi_parse_link("libcuda.so.1::/usr/lib/libcuda.so", buf, sizeof(buf), &t, &l, &err), 0);
        assert_string_equal(t, "libcuda.so.1");
        assert_string_equal(l, "/usr/lib/libcuda.so");
        assert_int_equal(gs_cdi_parse_link("/abs/target::/l", buf, sizeof(buf), &t, &l, &err), 0);
        assert_string_equal(t, "/abs/target");
        assert_int_equal(gs_cdi_parse_link("a:b", buf, sizeof(buf), &t, &l, &err), -1);
        assert_int_equal(gs_cdi_parse_link("::/l", buf, sizeof(buf), &t, &l, &err), -1);
        assert_int_equal(gs_cdi_parse_link("t::rel", buf, sizeof(buf), &t, &l, &err), -1);
        assert_int_equal(gs_cdi_parse_link("t::/", buf, sizeof(buf), &t, &l, &err), -1);
        assert_int_equal(gs_cdi_parse_link("t::/dir/", buf, sizeof(buf), &t, &l, &err), -1);
}

/* ------------------------------------------------------------------------------------------ */
/* Reading specs */

static void expect_names(const char *text, int hint, const char *want)
{
        struct gs_error err = {0};
        json_object *o = gs_cdi_spec_parse(text, strlen(text), hint, &err);
        if (o == NULL)
                fail_msg("parse: %s", err.msg);
        char **names;
        size_t n;
        if (gs_cdi_spec_names(o, &names, &n, &err) < 0)
                fail_msg("names: %s", err.msg);
        char got[1024] = "";
        for (size_t i = 0; i < n; i++) {
                strcat(got, names[i]);
                strcat(got, " ");
        }
        assert_string_equal(got, want);
        gs_cdi_names_free(names);
        json_object_put(o);
}

static void expect_bad(const char *text, int hint, const char *msg)
{
        struct gs_error err = {0};
        json_object *o = gs_cdi_spec_parse(text, strlen(text), hint, &err);
        char **names = NULL;
        size_t n;
        if (o != NULL && gs_cdi_spec_names(o, &names, &n, &err) == 0)
                fail_msg("'%s' was accepted", text);
        if (strstr(err.msg, msg) == NULL)
                fail_msg("'%s': message '%s', wanted '%s'", text, err.msg, msg);
        json_object_put(o);
}

static void test_spec_names(void **state)
{
        (void)state;
        expect_names("{\"cdiVersion\":\"0.5.0\",\"kind\":\"nvidia.com/gpu\",\"devices\":[{\"name\":\"0\",\"containerEdits\":{}},"
                     "{\"name\":\"all\",\"containerEdits\":{}}]}",
                     -1, "nvidia.com/gpu=0 nvidia.com/gpu=all ");
        expect_names("cdiVersion: 0.5.0\nkind: example.com/gpu\ndevices:\n- name: 0\n  containerEdits: {}\n"
                     "- name: \"1:0\"\n  containerEdits: {}\n",
                     -1, "example.com/gpu=0 example.com/gpu=1:0 ");
        expect_names("  \n{\"cdiVersion\":\"0.3.0\",\"kind\":\"a.b/c\",\"devices\":[{\"name\":\"x\"}]}", GS_CDI_YAML, "a.b/c=x ");

        expect_bad("", -1, "empty spec");
        expect_bad("{\"cdiVersion\": ", -1, "invalid JSON");
        expect_bad("{\"a\":1} x", -1, "trailing data");
        expect_bad("[1, 2]", -1, "not a mapping");
        expect_bad("just text", -1, "not a mapping");
        expect_bad("a: [", -1, "invalid YAML");
        expect_bad("kind: a.com/gpu\ndevices: [{name: x}]\n", -1, "no cdiVersion");
        expect_bad("cdiVersion: 0.5\nkind: a.com/gpu\ndevices: [{name: x}]\n", -1, "invalid cdiVersion");
        expect_bad("cdiVersion: 0.5.0\ndevices: [{name: x}]\n", -1, "no kind");
        expect_bad("cdiVersion: 0.5.0\nkind: gpu\ndevices: [{name: x}]\n", -1, "invalid kind 'gpu'");
        expect_bad("cdiVersion: 0.5.0\nkind: 1a.com/gpu\ndevices: [{name: x}]\n", -1, "invalid vendor");
        expect_bad("cdiVersion: 0.5.0\nkind: a.com/gpu\n", -1, "no devices");
        expect_bad("cdiVersion: 0.5.0\nkind: a.com/gpu\ndevices: []\n", -1, "has no devices");
        expect_bad("cdiVersion: 0.5.0\nkind: a.com/gpu\ndevices: [{containerEdits: {}}]\n", -1, "device 1 has no name");
        expect_bad("cdiVersion: 0.5.0\nkind: a.com/gpu\ndevices: [{name: -x}]\n", -1, "invalid device name '-x'");
        expect_bad("cdiVersion: 0.5.0\nkind: a.com/gpu\ndevices: [{name: x}, {name: x}]\n", -1, "defined twice");
        expect_bad("cdiVersion: 0.3.0\nkind: a.com/gpu\ndevices: [{name: \"0\"}]\n", -1, "too low");
        expect_bad("{\"cdiVersion\":\"0.5.0\"}", GS_CDI_JSON, "no kind");
        expect_bad("cdiVersion: 0.5.0", GS_CDI_JSON, "invalid JSON");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_yaml_quoting),
                cmocka_unit_test(test_yaml_invalid_utf8),
                cmocka_unit_test(test_yaml_structures),
                cmocka_unit_test(test_yaml_reader),
                cmocka_unit_test(test_yaml_alias_bomb),
                cmocka_unit_test(test_device_names),
                cmocka_unit_test(test_kind_validation),
                cmocka_unit_test(test_min_version),
                cmocka_unit_test(test_slices),
                cmocka_unit_test(test_links),
                cmocka_unit_test(test_spec_names),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
