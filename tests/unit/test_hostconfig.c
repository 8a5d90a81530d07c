/* Unit tests: the host config file /etc/gpuslice/config.toml (src/runtime/hostconfig.c). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "skips.h"

#include <gpuslice/gpuslice.h>

#include "runtime/hostconfig.h"

#define NAME "test.toml"

static struct gs_error err;
static struct gs_hostconfig hc;

/* Parse `text` over hc from a heap copy of exactly its length (no NUL after it: ASan sees any
 * read past the end). */
static int parse_n(const char *text, size_t len)
{
        memset(&err, 0, sizeof(err));
        char *copy = malloc(len > 0 ? len : 1);
        assert_non_null(copy);
        memcpy(copy, text, len);
        int rc = gs_hostconfig_parse(&hc, copy, len, NAME, &err);
        free(copy);
        return rc;
}

static int parse(const char *text) { return parse_n(text, strlen(text)); }

static void expect_ok(const char *text)
{
        if (parse(text) != 0)
                fail_msg("'%s' should parse, got: %s", text, err.msg);
        assert_int_equal(err.code, 0);
}

static void expect_error_n(const char *text, size_t len, const char *msg)
{
        struct gs_hostconfig before = hc;
        if (parse_n(text, len) != -1)
                fail_msg("'%.*s' should fail with: %s", (int)len, text, msg);
        assert_int_equal(err.code, GS_EFORMAT);
        assert_string_equal(err.msg, msg);
        /* a failed parse leaves the config as it was */
        assert_memory_equal(&before, &hc, sizeof(hc));
}

static void expect_error(const char *text, const char *msg) { expect_error_n(text, strlen(text), msg); }

static int reset(void **state)
{
        (void)state;
        gs_hostconfig_defaults(&hc);
        memset(&err, 0, sizeof(err));
        return 0;
}

static void assert_defaults(const struct gs_hostconfig *c)
{
        assert_string_equal(c->root, "/");
        assert_string_equal(c->ldcache, "/etc/ld.so.cache");
        assert_string_equal(c->ldconfig, "");
        assert_false(c->load_kmods);
        assert_string_equal(c->user, "");
        assert_int_equal(c->nvml_timeout_s, 10);
        assert_false(c->no_cgroups);
        assert_int_equal(c->default_caps, GS_CAP_UTILITY | GS_CAP_COMPUTE);
        assert_int_equal(c->supported_caps, GS_CAP_ALL);
        assert_false(c->disable_require);
        assert_string_equal(c->log_file, "");
        assert_int_equal(c->compat_mode, GS_COMPAT_LDCONFIG);
        assert_true(c->accept_env_unprivileged); /* NVIDIA's defaults */
        assert_false(c->accept_volume_mounts);
        assert_int_equal(c->rt.env_cdi_kinds.n, 1);
        assert_string_equal(c->rt.env_cdi_kinds.v[0], "nvidia.com/gpu");
        assert_string_equal(c->vgpu_library, "");
        assert_string_equal(c->regions_dir, "/run/gpuslice/slices");
        assert_string_equal(c->mps_root, "/run/gpuslice/mps");
        assert_string_equal(c->mps, "off");
        assert_false(c->env_may_raise);
        const struct gs_hostconfig_dp *d = &c->dp;
        assert_string_equal(d->socket_dir, "/var/lib/kubelet/device-plugins");
        assert_string_equal(d->resource, "nvidia.com/gpu");
        assert_int_equal(d->replicas, 1);
        assert_string_equal(d->replica_memory, "");
        assert_int_equal(d->replica_compute, 0);
        assert_string_equal(d->replica_priority, "");
        assert_int_equal(d->slices.n, 0);
        assert_string_equal(d->slice_domain, "gpuslice.io");
        assert_string_equal(d->allocate, "cdi");
        assert_string_equal(d->cdi_spec, "/var/run/cdi/gpuslice-k8s.yaml");
        assert_string_equal(d->cdi_kind, "k8s.gpuslice.io/gpu");
        assert_string_equal(d->hook_path, "");
        assert_string_equal(d->host_root, "");
        assert_string_equal(d->pod_resources_socket, "/var/lib/kubelet/pod-resources/kubelet.sock");
        assert_int_equal(d->label_interval_s, 30);
        assert_true(d->health_checks);
        assert_string_equal(d->sysfs, "/sys");
        const struct gs_hostconfig_rt *r = &c->rt;
        assert_string_equal(r->mode, "auto");
        assert_int_equal(r->runtimes.n, 2);
        assert_string_equal(r->runtimes.v[0], "runc");
        assert_string_equal(r->runtimes.v[1], "crun");
        assert_int_equal(r->cdi_spec_dirs.n, 2);
        assert_string_equal(r->cdi_spec_dirs.v[0], "/etc/cdi");
        assert_string_equal(r->cdi_spec_dirs.v[1], "/var/run/cdi");
        assert_string_equal(r->hook_path, "");
        assert_string_equal(r->log_file, "");
}

/* Every key set to something other than its default. */
static const char every_key[] =
        "[driver]\n"
        "root = \"/run/nvidia/driver\"\n"
        "ldcache = \"/etc/other.cache\"\n"
        "ldconfig = \"@/sbin/ldconfig.real\"\n"
        "load-kmods = true\n"
        "user = \"1000:video\"\n"
        "nvml-timeout = 30\n"
        "[hook]\n"
        "no-cgroups = true\n"
        "default-capabilities = [\"compute\", \"video\"]\n"
        "supported-capabilities = [\"compute\", \"utility\", \"video\", \"graphics\"]\n"
        "disable-require = true\n"
        "log-file = \"/var/log/gpuslice-hook.log\"\n"
        "cuda-compat-mode = \"mount\"\n"
        "accept-nvidia-visible-devices-envvar-when-unprivileged = false\n"
        "accept-nvidia-visible-devices-as-volume-mounts = true\n"
        "[slice]\n"
        "library = \"/opt/gpuslice/lib/libgpuslice-vgpu.so\"\n"
        "regions-dir = \"/var/run/slices\"\n"
        "mps-root = \"/var/run/mps\"\n"
        "mps = \"on\"\n"
        "env-may-raise = true\n"
        "[device-plugin]\n"
        "socket-dir = \"/var/lib/k/dp\"\n"
        "resource = \"example.com/gpu\"\n"
        "replicas = 4\n"
        "replica-memory = \"20Gi\"\n"
        "replica-compute = 25\n"
        "replica-priority = \"high\"\n"
        "slices = [\"a=1Gi\", 'b=2Gi,50', \"c=2Gi,50,low\"]\n"
        "slice-domain = \"example.com\"\n"
        "allocate = \"env\"\n"
        "cdi-spec = \"/etc/cdi/k8s.json\"\n"
        "cdi-kind = \"example.com/gpu\"\n"
        "hook-path = \"/usr/bin/gpuslice\"\n"
        "host-root = \"/\"\n"
        "pod-resources-socket = \"\"\n"
        "label-interval = 0\n"
        "health-checks = false\n"
        "sysfs = \"/host/sys\"\n"
        "[runtime]\n"
        "mode = \"jit-cdi\"\n"
        "runtimes = [\"/usr/local/bin/crun\"]\n"
        "cdi-spec-dirs = [\"/run/cdi\"]\n"
        "hook-path = \"/opt/gpuslice/bin/gpuslice\"\n"
        "log-file = \"/var/log/gpuslice-runtime.log\"\n"
        "env-cdi-kinds = [\"nvidia.com/gpu\", \"example.com/slice\"]\n";

static void assert_every_key(const struct gs_hostconfig *c)
{
        assert_string_equal(c->root, "/run/nvidia/driver");
        assert_string_equal(c->ldcache, "/etc/other.cache");
        assert_string_equal(c->ldconfig, "@/sbin/ldconfig.real");
        assert_true(c->load_kmods);
        assert_string_equal(c->user, "1000:video");
        assert_int_equal(c->nvml_timeout_s, 30);
        assert_true(c->no_cgroups);
        assert_int_equal(c->default_caps, GS_CAP_COMPUTE | GS_CAP_VIDEO);
        assert_int_equal(c->supported_caps, GS_CAP_COMPUTE | GS_CAP_UTILITY | GS_CAP_VIDEO | GS_CAP_GRAPHICS);
        assert_true(c->disable_require);
        assert_string_equal(c->log_file, "/var/log/gpuslice-hook.log");
        assert_int_equal(c->compat_mode, GS_COMPAT_MOUNT);
        assert_false(c->accept_env_unprivileged);
        assert_true(c->accept_volume_mounts);
        assert_string_equal(c->vgpu_library, "/opt/gpuslice/lib/libgpuslice-vgpu.so");
        assert_string_equal(c->regions_dir, "/var/run/slices");
        assert_string_equal(c->mps_root, "/var/run/mps");
        assert_string_equal(c->mps, "on");
        assert_true(c->env_may_raise);
        const struct gs_hostconfig_dp *d = &c->dp;
        assert_string_equal(d->socket_dir, "/var/lib/k/dp");
        assert_string_equal(d->resource, "example.com/gpu");
        assert_int_equal(d->replicas, 4);
        assert_string_equal(d->replica_memory, "20Gi");
        assert_int_equal(d->replica_compute, 25);
        assert_string_equal(d->replica_priority, "high");
        assert_int_equal(d->slices.n, 3);
        assert_string_equal(d->slices.v[0], "a=1Gi");
        assert_string_equal(d->slices.v[1], "b=2Gi,50");
        assert_string_equal(d->slices.v[2], "c=2Gi,50,low");
        assert_string_equal(d->slice_domain, "example.com");
        assert_string_equal(d->allocate, "env");
        assert_string_equal(d->cdi_spec, "/etc/cdi/k8s.json");
        assert_string_equal(d->cdi_kind, "example.com/gpu");
        assert_string_equal(d->hook_path, "/usr/bin/gpuslice");
        assert_string_equal(d->host_root, "/");
        assert_string_equal(d->pod_resources_socket, "");
        assert_int_equal(d->label_interval_s, 0);
        assert_false(d->health_checks);
        assert_string_equal(d->sysfs, "/host/sys");
        assert_string_equal(c->rt.mode, "jit-cdi");
        assert_int_equal(c->rt.runtimes.n, 1);
        assert_string_equal(c->rt.runtimes.v[0], "/usr/local/bin/crun");
        assert_int_equal(c->rt.cdi_spec_dirs.n, 1);
        assert_string_equal(c->rt.cdi_spec_dirs.v[0], "/run/cdi");
        assert_string_equal(c->rt.hook_path, "/opt/gpuslice/bin/gpuslice");
        assert_string_equal(c->rt.log_file, "/var/log/gpuslice-runtime.log");
        assert_int_equal(c->rt.env_cdi_kinds.n, 2);
        assert_string_equal(c->rt.env_cdi_kinds.v[1], "example.com/slice");
}

/* [device-plugin].slices: a one-line array of strings, bounded in count and length. */
static void test_string_list(void **state)
{
        (void)state;
        expect_ok("[device-plugin]\nslices = []\n");
        assert_int_equal(hc.dp.slices.n, 0);
        expect_ok("[device-plugin]\nslices = [ \"x=1G\" , ]\n");
        assert_int_equal(hc.dp.slices.n, 1);
        assert_string_equal(hc.dp.slices.v[0], "x=1G");
        expect_error("[device-plugin]\nslices = \"x=1G\"\n", NAME ":2: 'device-plugin.slices' must be an array of strings");
        expect_error("[device-plugin]\nslices = [1]\n", NAME ":2: 'device-plugin.slices' must be an array of strings");
        expect_error("[device-plugin]\nslices = [\"a\"\n", NAME ":2: unterminated array (arrays must be on one line)");
        expect_error("[device-plugin]\nslices = [\"a\" \"b\"]\n",
                     NAME ":2: expected ',' or ']' after an element of 'device-plugin.slices'");
        char text[4096] = "[device-plugin]\nslices = [";
        for (int i = 0; i < GS_HOSTCONFIG_MAX_LIST + 1; i++)
                strcat(text, "\"s=1G\",");
        strcat(text, "]\n");
        expect_error(text, NAME ":2: 'device-plugin.slices' has more than 16 elements");
        char longv[GS_HOSTCONFIG_LIST_STR + 64];
        memset(longv, 'a', sizeof(longv) - 1);
        longv[sizeof(longv) - 1] = '\0';
        snprintf(text, sizeof(text), "[device-plugin]\nslices = [\"%s\"]\n", longv);
        expect_error(text, NAME ":2: 'device-plugin.slices': an element is too long (at most 127 bytes)");
        expect_error("[device-plugin]\nreplicas = 0\n", NAME ":2: 'device-plugin.replicas' must be between 1 and 64");
        expect_error("[device-plugin]\nsocket-dir = \"rel\"\n", NAME ":2: 'device-plugin.socket-dir' must be an absolute path");
}

/* ------------------------------------------------------------------------------------------- */

static void test_defaults(void **state)
{
        (void)state;
        memset(&hc, 0x5a, sizeof(hc));
        gs_hostconfig_defaults(&hc);
        assert_defaults(&hc);
        /* empty text, blank lines and comments only: nothing changes */
        expect_ok("");
        assert_defaults(&hc);
        expect_ok("\n\n   \t\n# only a comment\n  # indented comment\n");
        assert_defaults(&hc);
        expect_ok("[driver]\n[hook]\n[slice]\n");
        assert_defaults(&hc);
        assert_int_equal(gs_hostconfig_parse(&hc, NULL, 0, NAME, &err), 0);
        assert_defaults(&hc);
}

static void test_every_key(void **state)
{
        (void)state;
        expect_ok(every_key);
        assert_every_key(&hc);
}

static void test_parse_over_existing(void **state)
{
        (void)state;
        expect_ok(every_key);
        /* only the keys given change */
        expect_ok("[hook]\nno-cgroups = false\n[driver]\nnvml-timeout = 5\n");
        assert_false(hc.no_cgroups);
        assert_int_equal(hc.nvml_timeout_s, 5);
        assert_string_equal(hc.root, "/run/nvidia/driver");
        assert_int_equal(hc.compat_mode, GS_COMPAT_MOUNT);
        assert_true(hc.disable_require);
        /* sections in any order */
        expect_ok("[slice]\nregions-dir = \"/x\"\n[driver]\nroot = \"/y\"\n");
        assert_string_equal(hc.regions_dir, "/x");
        assert_string_equal(hc.root, "/y");
        /* the same key in a second text is not a duplicate */
        expect_ok("[slice]\nregions-dir = \"/z\"\n");
        assert_string_equal(hc.regions_dir, "/z");
}

static void test_booleans(void **state)
{
        (void)state;
        expect_ok("[driver]\nload-kmods = true\n[hook]\nno-cgroups = true\ndisable-require = true\n");
        assert_true(hc.load_kmods);
        assert_true(hc.no_cgroups);
        assert_true(hc.disable_require);
        expect_ok("[driver]\nload-kmods = false\n[hook]\nno-cgroups=false\ndisable-require\t=\tfalse#c\n");
        assert_false(hc.load_kmods);
        assert_false(hc.no_cgroups);
        assert_false(hc.disable_require);
        expect_error("[driver]\nload-kmods = yes\n", NAME ":2: 'driver.load-kmods' must be a boolean");
        expect_error("[driver]\nload-kmods = \"true\"\n", NAME ":2: 'driver.load-kmods' must be a boolean");
        expect_error("[driver]\nload-kmods = True\n", NAME ":2: 'driver.load-kmods' must be a boolean");
        expect_error("[driver]\nload-kmods = 1\n", NAME ":2: 'driver.load-kmods' must be a boolean");
        expect_error("[driver]\nload-kmods = truex\n", NAME ":2: 'driver.load-kmods' must be a boolean");
        expect_error("[hook]\nno-cgroups = tru", NAME ":2: 'hook.no-cgroups' must be a boolean");
        expect_error("[hook]\ndisable-require = [true]\n", NAME ":2: 'hook.disable-require' must be a boolean");
}

static void test_integers(void **state)
{
        (void)state;
        static const struct {
                const char *text;
                unsigned value;
        } good[] = {
                {"1", 1}, {"3600", 3600}, {"+30", 30}, {"1_0", 10}, {"3_6_0_0", 3600},
        };
        char text[128];
        for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
                snprintf(text, sizeof(text), "[driver]\nnvml-timeout = %s\n", good[i].text);
                expect_ok(text);
                assert_int_equal(hc.nvml_timeout_s, good[i].value);
        }
        static const char *const not_int[] = {
                "1.5", "\"10\"", "ten", "1__0", "0_1", "00", "_1", "1_", "010", "0x10", "1e3", "+", "-", "10s",
                "[10]", "inf",
        };
        for (size_t i = 0; i < sizeof(not_int) / sizeof(not_int[0]); i++) {
                snprintf(text, sizeof(text), "[driver]\nnvml-timeout = %s\n", not_int[i]);
                expect_error(text, NAME ":2: 'driver.nvml-timeout' must be an integer");
        }
        static const char *const out_of_range[] = {
                "0", "-0", "+0", "3601", "-1", "-3600", "4294967297", "99999999999999999999999999999",
        };
        for (size_t i = 0; i < sizeof(out_of_range) / sizeof(out_of_range[0]); i++) {
                snprintf(text, sizeof(text), "[driver]\nnvml-timeout = %s\n", out_of_range[i]);
                expect_error(text, NAME ":2: 'driver.nvml-timeout' must be between 1 and 3600");
        }
        /* an integer ends at whitespace or a comment */
        expect_ok("[driver]\nnvml-timeout = 42# comment\n");
        assert_int_equal(hc.nvml_timeout_s, 42);
}

static void test_strings(void **state)
{
        (void)state;
        expect_ok("[driver]\nuser = \"a\\\"b\\\\c\\td\\ne\"\n");
        assert_string_equal(hc.user, "a\"b\\c\td\ne");
        expect_ok("[driver]\nuser = \"\\b\\f\\r\"\n");
        assert_string_equal(hc.user, "\b\f\r");
        /* \uXXXX and \UXXXXXXXX to UTF-8, hex digits in either case */
        expect_ok("[driver]\nuser = \"caf\\u00e9 \\u00E9 \\u20ac \\U0001F600 \\u0041\"\n");
        assert_string_equal(hc.user, "caf\xc3\xa9 \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 A");
        /* raw UTF-8 and tabs are fine */
        expect_ok("[driver]\nuser = \"\xc3\xa9\t\xe2\x82\xac\"\n");
        assert_string_equal(hc.user, "\xc3\xa9\t\xe2\x82\xac");
        /* literal strings: no escapes */
        expect_ok("[driver]\nuser = 'C:\\Users\\n \"quoted\"'\n");
        assert_string_equal(hc.user, "C:\\Users\\n \"quoted\"");
        /* '#' inside a string is not a comment; a comment after it is */
        expect_ok("[driver]\nuser = \"a#b\" # comment \"x\"\n");
        assert_string_equal(hc.user, "a#b");
        expect_ok("[driver]\nuser = 'a#b'#c\n");
        assert_string_equal(hc.user, "a#b");
        expect_ok("[driver]\nuser = \"\"\n");
        assert_string_equal(hc.user, "");
        expect_ok("[driver]\nuser = ''\n");
        assert_string_equal(hc.user, "");

        expect_error("[driver]\nuser = \"abc\n", NAME ":2: unterminated string");
        expect_error("[driver]\nuser = \"abc", NAME ":2: unterminated string");
        expect_error("[driver]\nuser = \"abc\\\"\n", NAME ":2: unterminated string");
        expect_error("[driver]\nuser = \"abc\\", NAME ":2: unterminated string");
        expect_error("[driver]\nuser = 'abc\n", NAME ":2: unterminated string");
        expect_error("[driver]\nuser = \"abc\r\n", NAME ":2: unterminated string");
        expect_error("[driver]\nuser = \"a\\xb\"\n", NAME ":2: invalid escape '\\x' in string");
        expect_error("[driver]\nuser = \"a\\ b\"\n", NAME ":2: invalid escape in string");
        expect_error("[driver]\nuser = \"\\u12\"\n", NAME ":2: invalid unicode escape: \\u needs 4 hex digits");
        expect_error("[driver]\nuser = \"\\u12", NAME ":2: invalid unicode escape: \\u needs 4 hex digits");
        expect_error("[driver]\nuser = \"\\U0001F60\"\n", NAME ":2: invalid unicode escape: \\U needs 8 hex digits");
        expect_error("[driver]\nuser = \"\\uD800\"\n",
                     NAME ":2: invalid unicode escape \\uD800: not a Unicode scalar value");
        expect_error("[driver]\nuser = \"\\U00110000\"\n",
                     NAME ":2: invalid unicode escape \\U00110000: not a Unicode scalar value");
        expect_error("[driver]\nuser = \"\\u0000\"\n", NAME ":2: \\u0000 is not allowed in a string");
        expect_error("[driver]\nuser = \"\\U00000000\"\n", NAME ":2: \\U00000000 is not allowed in a string");
        expect_error("[driver]\nuser = \"a\x01\"\n", NAME ":2: control character in string");
        expect_error("[driver]\nuser = 'a\x7f'\n", NAME ":2: control character in string");
        static const char nul[] = "[driver]\nuser = \"a\0b\"\n";
        expect_error_n(nul, sizeof(nul) - 1, NAME ":2: control character in string");
        expect_error("[driver]\nuser = \"\xff\"\n", NAME ":2: invalid UTF-8 in string");
        expect_error("[driver]\nuser = \"\xc3\"\n", NAME ":2: invalid UTF-8 in string");
        expect_error("[driver]\nuser = \"\xc0\xaf\"\n", NAME ":2: invalid UTF-8 in string");     /* overlong */
        expect_error("[driver]\nuser = \"\xed\xa0\x80\"\n", NAME ":2: invalid UTF-8 in string"); /* surrogate */
        expect_error("[driver]\nuser = \"\xe2\x82", NAME ":2: invalid UTF-8 in string");       /* cut at the end */
        expect_error("[driver]\nuser = \"\"\"x\"\"\"\n", NAME ":2: multi-line strings are not supported");
        expect_error("[driver]\nuser = '''x'''\n", NAME ":2: multi-line strings are not supported");
        expect_error("[driver]\nuser = \"a\" \"b\"\n", NAME ":2: unexpected text after the value");
        expect_error("[driver]\nuser = \"a\"x\n", NAME ":2: unexpected text after the value");
        expect_error("[driver]\nuser = a\n", NAME ":2: 'driver.user' must be a string");
        expect_error("[driver]\nuser = 1000\n", NAME ":2: 'driver.user' must be a string");
        expect_error("[driver]\nuser = [\"a\"]\n", NAME ":2: 'driver.user' must be a string");
        expect_error("[driver]\nuser = true\n", NAME ":2: 'driver.user' must be a string");
}

static void test_string_lengths(void **state)
{
        (void)state;
        char *text = malloc(2 * GS_HOSTCONFIG_MAX_STR + 64);
        assert_non_null(text);
        /* user: 255 bytes fit, 256 do not (never truncated) */
        int n = sprintf(text, "[driver]\nuser = \"");
        memset(text + n, 'u', 255);
        strcpy(text + n + 255, "\"\n");
        expect_ok(text);
        assert_int_equal(strlen(hc.user), 255);
        memset(text + n, 'v', 256);
        strcpy(text + n + 256, "\"\n");
        expect_error(text, NAME ":2: 'driver.user' is too long (at most 255 bytes)");
        assert_int_equal(strlen(hc.user), 255);
        assert_int_equal(hc.user[0], 'u');
        /* decoded bytes count: 128 x "\u00e9" is 256 bytes of UTF-8 */
        n = sprintf(text, "[driver]\nuser = \"");
        for (int i = 0; i < 128; i++)
                n += sprintf(text + n, "\\u00e9");
        strcpy(text + n, "\"\n");
        expect_error(text, NAME ":2: 'driver.user' is too long (at most 255 bytes)");
        /* root: 4095 bytes fit, 4096 do not */
        n = sprintf(text, "\n[driver]\nroot = '/");
        memset(text + n, 'r', GS_HOSTCONFIG_MAX_STR - 2);
        strcpy(text + n + GS_HOSTCONFIG_MAX_STR - 2, "'\n");
        expect_ok(text);
        assert_int_equal(strlen(hc.root), GS_HOSTCONFIG_MAX_STR - 1);
        memset(text + n, 's', GS_HOSTCONFIG_MAX_STR - 1);
        strcpy(text + n + GS_HOSTCONFIG_MAX_STR - 1, "'\n");
        expect_error(text, NAME ":3: 'driver.root' is too long (at most 4095 bytes)");
        /* a syntax error in an over-long string is reported as such */
        text[strlen(text) - 2] = '\0';
        expect_error(text, NAME ":3: unterminated string");
        /* compat mode: a long value is just not one of the three */
        n = sprintf(text, "[hook]\ncuda-compat-mode = \"");
        memset(text + n, 'm', 5000);
        strcpy(text + n + 5000, "\"\n");
        expect_error(text, NAME ":2: 'hook.cuda-compat-mode' must be ldconfig, mount or disabled, not "
                           "'mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm...'");
        free(text);
}

static void test_arrays(void **state)
{
        (void)state;
        expect_ok("[hook]\ndefault-capabilities = [\"compute\"]\n");
        assert_int_equal(hc.default_caps, GS_CAP_COMPUTE);
        expect_ok("[hook]\ndefault-capabilities = []\n");
        assert_int_equal(hc.default_caps, 0);
        expect_ok("[hook]\ndefault-capabilities = [ ]\n");
        assert_int_equal(hc.default_caps, 0);
        expect_ok("[hook]\ndefault-capabilities = [\"all\"]\n");
        assert_int_equal(hc.default_caps, GS_CAP_ALL);
        expect_ok("[hook]\nsupported-capabilities = [ 'utility' ,\"graphics\",\t\"utility\", ]  # trailing comma\n");
        assert_int_equal(hc.supported_caps, GS_CAP_UTILITY | GS_CAP_GRAPHICS);
        /* every name */
        static const struct {
                const char *name;
                unsigned cap;
        } names[] = {
                {"compute", GS_CAP_COMPUTE}, {"compat32", GS_CAP_COMPAT32}, {"display", GS_CAP_DISPLAY},
                {"graphics", GS_CAP_GRAPHICS}, {"ngx", GS_CAP_NGX}, {"utility", GS_CAP_UTILITY},
                {"video", GS_CAP_VIDEO},
        };
        char text[256];
        unsigned all = 0;
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                snprintf(text, sizeof(text), "[hook]\nsupported-capabilities = [\"%s\"]\n", names[i].name);
                expect_ok(text);
                assert_int_equal(hc.supported_caps, names[i].cap);
                all |= names[i].cap;
        }
        assert_int_equal(all, GS_CAP_ALL);
        expect_ok("[hook]\nsupported-capabilities = [\"compat32\",\"compute\",\"display\",\"graphics\",\"ngx\","
                  "\"utility\",\"video\"]\n");
        assert_int_equal(hc.supported_caps, GS_CAP_ALL);

        expect_error("[hook]\ndefault-capabilities = [\"compute\", \"foo\"]\n",
                     NAME ":2: 'hook.default-capabilities': unknown capability 'foo'");
        expect_error("[hook]\ndefault-capabilities = [\"Compute\"]\n",
                     NAME ":2: 'hook.default-capabilities': unknown capability 'Compute'");
        expect_error("[hook]\ndefault-capabilities = [\"\"]\n",
                     NAME ":2: 'hook.default-capabilities': unknown capability ''");
        expect_error("[hook]\ndefault-capabilities = [\"computecomputecomputecomputecomputecompute\"]\n",
                     NAME ":2: 'hook.default-capabilities': unknown capability 'computecomputecomputecomputecom...'");
        expect_error("[hook]\nsupported-capabilities = \"compute\"\n",
                     NAME ":2: 'hook.supported-capabilities' must be an array of strings");
        expect_error("[hook]\nsupported-capabilities = [1]\n",
                     NAME ":2: 'hook.supported-capabilities' must be an array of strings");
        expect_error("[hook]\nsupported-capabilities = [[\"compute\"]]\n",
                     NAME ":2: 'hook.supported-capabilities' must be an array of strings");
        expect_error("[hook]\nsupported-capabilities = [,]\n",
                     NAME ":2: 'hook.supported-capabilities' must be an array of strings");
        expect_error("[hook]\nsupported-capabilities = [\"compute\",,]\n",
                     NAME ":2: 'hook.supported-capabilities' must be an array of strings");
        expect_error("[hook]\nsupported-capabilities = [\"compute\" \"video\"]\n",
                     NAME ":2: expected ',' or ']' after an element of 'hook.supported-capabilities'");
        expect_error("[hook]\nsupported-capabilities = [\"compute\",\n\"video\"]\n",
                     NAME ":2: unterminated array (arrays must be on one line)");
        expect_error("[hook]\nsupported-capabilities = [\"compute\" # comment\n]\n",
                     NAME ":2: unterminated array (arrays must be on one line)");
        expect_error("[hook]\nsupported-capabilities = [", NAME ":2: unterminated array (arrays must be on one line)");
        expect_error("[hook]\nsupported-capabilities = [\"comp", NAME ":2: unterminated string");
        expect_error("[hook]\nsupported-capabilities = [\"compute\"] x\n", NAME ":2: unexpected text after the value");
}

static void test_compat_mode(void **state)
{
        (void)state;
        expect_ok("[hook]\ncuda-compat-mode = \"mount\"\n");
        assert_int_equal(hc.compat_mode, GS_COMPAT_MOUNT);
        expect_ok("[hook]\ncuda-compat-mode = 'disabled'\n");
        assert_int_equal(hc.compat_mode, GS_COMPAT_DISABLED);
        expect_ok("[hook]\ncuda-compat-mode = \"ldconfig\"\n");
        assert_int_equal(hc.compat_mode, GS_COMPAT_LDCONFIG);
        expect_error("[hook]\ncuda-compat-mode = \"Mount\"\n",
                     NAME ":2: 'hook.cuda-compat-mode' must be ldconfig, mount or disabled, not 'Mount'");
        expect_error("[hook]\ncuda-compat-mode = \"\"\n",
                     NAME ":2: 'hook.cuda-compat-mode' must be ldconfig, mount or disabled, not ''");
        expect_error("[hook]\ncuda-compat-mode = mount\n", NAME ":2: 'hook.cuda-compat-mode' must be a string");
}

static void test_paths(void **state)
{
        (void)state;
        expect_error("[driver]\nroot = \"run/nvidia/driver\"\n", NAME ":2: 'driver.root' must be an absolute path");
        expect_error("[driver]\nroot = \"\"\n", NAME ":2: 'driver.root' must be an absolute path");
        expect_error("[slice]\nregions-dir = \"\"\n", NAME ":2: 'slice.regions-dir' must be an absolute path");
        expect_error("[slice]\nregions-dir = \"./slices\"\n", NAME ":2: 'slice.regions-dir' must be an absolute path");
        expect_error("[slice]\nmps-root = \"\"\n", NAME ":2: 'slice.mps-root' must be an absolute path");
        expect_error("[slice]\nmps-root = \"run/mps\"\n", NAME ":2: 'slice.mps-root' must be an absolute path");
        expect_error("[driver]\nmps-root = \"/run/mps\"\n", NAME ":2: unknown key 'driver.mps-root'");
        /* slice.mps: off, auto or on, nothing else (not even "") */
        expect_ok("[slice]\nmps = \"auto\"\n");
        assert_string_equal(hc.mps, "auto");
        expect_error("[slice]\nmps = \"sometimes\"\n", NAME ":2: 'slice.mps' must be off, auto or on, not 'sometimes'");
        expect_error("[slice]\nmps = \"\"\n", NAME ":2: 'slice.mps' must be off, auto or on, not ''");
        expect_error("[slice]\nmps = \"ON\"\n", NAME ":2: 'slice.mps' must be off, auto or on, not 'ON'");
        expect_error("[runtime]\nmode = \"nvidia\"\n", NAME ":2: 'runtime.mode' must be legacy, cdi, jit-cdi or auto, not 'nvidia'");
        /* a Kubernetes allocator's kind is never one the env may name */
        expect_error("[runtime]\nenv-cdi-kinds = [\"nvidia.com/gpu\", \"k8s.gpuslice.io/gpu\"]\n",
                     NAME ":2: 'runtime.env-cdi-kinds': 'k8s.gpuslice.io/gpu' is a Kubernetes allocator's kind: its "
                          "devices (another pod's claim, a device plugin's 'all') are never taken from a container's env");
        expect_error("[runtime]\nenv-cdi-kinds = [\"nvidia.com\"]\n",
                     NAME ":2: 'runtime.env-cdi-kinds': 'nvidia.com' is not a CDI kind (vendor/class)");
        expect_ok("[runtime]\nenv-cdi-kinds = []\n");
        expect_error("[runtime]\nhook-path = \"gpuslice\"\n", NAME ":2: 'runtime.hook-path' must be empty or an absolute path");
        expect_error("[slice]\nmps = true\n", NAME ":2: 'slice.mps' must be a string");
        expect_error("[slice]\nlibrary = \"libgpuslice-vgpu.so\"\n",
                     NAME ":2: 'slice.library' must be empty or an absolute path");
        expect_error("[hook]\nlog-file = \"hook.log\"\n", NAME ":2: 'hook.log-file' must be empty or an absolute path");
        expect_ok(every_key);
        expect_ok("[slice]\nlibrary = \"\"\n[hook]\nlog-file = \"\"\n");
        assert_string_equal(hc.vgpu_library, "");
        assert_string_equal(hc.log_file, "");
        /* ldconfig: a container path or '@' and a host path */
        expect_ok("[driver]\nldconfig = \"/sbin/ldconfig\"\n");
        assert_string_equal(hc.ldconfig, "/sbin/ldconfig");
        expect_ok("[driver]\nldconfig = \"@/usr/sbin/ldconfig\"\n");
        assert_string_equal(hc.ldconfig, "@/usr/sbin/ldconfig");
        static const char *const bad_ldconfig[] = {"", "@", "ldconfig", "@ldconfig", "@@/sbin/ldconfig", " /sbin/x"};
        char text[128];
        for (size_t i = 0; i < sizeof(bad_ldconfig) / sizeof(bad_ldconfig[0]); i++) {
                snprintf(text, sizeof(text), "[driver]\nldconfig = \"%s\"\n", bad_ldconfig[i]);
                expect_error(text, NAME ":2: 'driver.ldconfig' must be an absolute path, or '@' and an absolute "
                                   "host path");
        }
        /* ldcache is inside the root: any string */
        expect_ok("[driver]\nldcache = \"etc/ld.so.cache\"\n");
        assert_string_equal(hc.ldcache, "etc/ld.so.cache");
}

static void test_comments_whitespace(void **state)
{
        (void)state;
        expect_ok("\xef\xbb\xbf# a byte order mark first is fine\n"
                  "  [driver]   # the driver\n"
                  "\t root\t=\t\"/r\"\t# root\n"
                  "# [hook]\n"
                  "#no-cgroups = true\n"
                  "[ hook ]\n"
                  "no-cgroups=true#x\n"
                  "   \n"
                  "\t\n"
                  "# comment with \xc3\xa9 and tab\there");
        assert_string_equal(hc.root, "/r");
        assert_true(hc.no_cgroups);
        expect_error("# a\x01 comment\n", NAME ":1: control character in comment");
        expect_error("[driver] # a\x7f comment\n", NAME ":1: control character in comment");
        expect_error("\n[driver]\nroot = \"/\" # \x1b[1m\n", NAME ":3: control character in comment");
}

static void test_crlf(void **state)
{
        (void)state;
        expect_ok("# windows\r\n[driver]\r\nroot = \"/w\"\r\nload-kmods = true\r\n\r\n[hook]\r\n"
                  "default-capabilities = [\"video\"]  # x\r\nlog-file = '/l'\r\n");
        assert_string_equal(hc.root, "/w");
        assert_true(hc.load_kmods);
        assert_int_equal(hc.default_caps, GS_CAP_VIDEO);
        assert_string_equal(hc.log_file, "/l");
        /* no CR in values; line numbers count CRLF lines */
        expect_ok("[driver]\r\nuser = \"u\"\r\n");
        assert_string_equal(hc.user, "u");
        expect_error("[driver]\r\n\r\nbogus = 1\r\n", NAME ":3: unknown key 'driver.bogus'");
        /* a lone CR is not a line end */
        expect_error("[driver]\rroot = \"/\"\n", NAME ":1: unexpected text after the section header");
        expect_error("[driver]\nload-kmods = true\r\r\n", NAME ":2: 'driver.load-kmods' must be a boolean");
}

static void test_errors(void **state)
{
        (void)state;
        expect_error("[hook]\nno-cgroups = true\nfoo = 1\n", NAME ":3: unknown key 'hook.foo'");
        expect_error("[driver]\nno-cgroups = true\n", NAME ":2: unknown key 'driver.no-cgroups'");
        expect_error("root = \"/\"\n", NAME ":1: unknown key 'root'");
        expect_error("[nvidia-container-cli]\n", NAME ":1: unknown section '[nvidia-container-cli]'");
        expect_error("[Driver]\n", NAME ":1: unknown section '[Driver]'");
        expect_error("[driver]\n[hook]\n[driver]\n", NAME ":3: duplicate section '[driver]'");
        expect_error("[driver]\nroot = \"/a\"\n\nroot = \"/b\"\n", NAME ":4: duplicate key 'driver.root'");
        expect_error("[hook]\nno-cgroups = true\nno-cgroups = true\n", NAME ":3: duplicate key 'hook.no-cgroups'");
        expect_error("[[driver]]\n", NAME ":1: arrays of tables are not supported");
        expect_error("[driver.x]\n", NAME ":1: dotted section names are not supported");
        expect_error("[driver\n", NAME ":1: invalid section header");
        expect_error("[driver", NAME ":1: invalid section header");
        expect_error("[]\n", NAME ":1: invalid section header");
        expect_error("[\"driver\"]\n", NAME ":1: invalid section header");
        expect_error("[driver] x\n", NAME ":1: unexpected text after the section header");
        expect_error("[driver]\nroot \"/\"\n", NAME ":2: expected '=' after 'root'");
        expect_error("[driver]\nroot", NAME ":2: expected '=' after 'root'");
        expect_error("[driver]\nroot = \n", NAME ":2: missing value for 'driver.root'");
        expect_error("[driver]\nroot =", NAME ":2: missing value for 'driver.root'");
        expect_error("[driver]\nroot = # nothing\n", NAME ":2: missing value for 'driver.root'");
        expect_error("driver.root = \"/\"\n", NAME ":1: dotted keys are not supported (use a [section] header)");
        expect_error("[driver]\n\"root\" = \"/\"\n", NAME ":2: quoted keys are not supported");
        expect_error("[driver]\n= \"/\"\n", NAME ":2: expected a key, not '='");
        expect_error("[driver]\n\x01 = 1\n", NAME ":2: expected a key, not byte 0x01");
        expect_error_n("\n\n\0", 3, NAME ":3: expected a key, not byte 0x00");
        expect_error("[driver]\nroot = \"/\"\nload-kmods = true\nnvml-timeout = 0\n",
                     NAME ":4: 'driver.nvml-timeout' must be between 1 and 3600");
        /* the name is used as given */
        memset(&err, 0, sizeof(err));
        assert_int_equal(gs_hostconfig_parse(&hc, "x", 1, "/etc/gpuslice/config.toml", &err), -1);
        assert_string_equal(err.msg, "/etc/gpuslice/config.toml:1: expected '=' after 'x'");
        /* err may be NULL */
        assert_int_equal(gs_hostconfig_parse(&hc, "x", 1, NAME, NULL), -1);
}

static void test_no_nul_terminator(void **state)
{
        (void)state;
        /* parse_n hands over exactly len bytes: every ending at the buffer's end */
        static const char *const cut[] = {
                "[driver]\nroot = \"/x\"", "[driver]\nnvml-timeout = 12", "[driver]\nload-kmods = false",
                "[hook]\ndefault-capabilities = [\"video\"]", "# comment", "[driver]", "[driver]\nuser = '\\'",
        };
        for (size_t i = 0; i < sizeof(cut) / sizeof(cut[0]); i++)
                expect_ok(cut[i]);
        assert_int_equal(hc.nvml_timeout_s, 12);
        assert_string_equal(hc.user, "\\");
        /* and every prefix of a full config either parses or fails cleanly */
        size_t len = strlen(every_key);
        for (size_t n = 0; n <= len; n++) {
                gs_hostconfig_defaults(&hc);
                int rc = parse_n(every_key, n);
                assert_true(rc == 0 || (rc == -1 && err.code == GS_EFORMAT && strncmp(err.msg, NAME ":", 10) == 0));
        }
        gs_hostconfig_defaults(&hc);
        assert_int_equal(parse_n(every_key, len), 0);
        assert_every_key(&hc);
}

/* ---------------------------------------------------------------------------------------------
 * gs_hostconfig_load
 */
static char tmpdir[PATH_MAX];

static int setup_dir(void **state)
{
        (void)state;
        const char *base = getenv("TMPDIR");
        snprintf(tmpdir, sizeof(tmpdir), "%s/test_hostconfig.XXXXXX", base != NULL && base[0] ? base : "/tmp");
        if (mkdtemp(tmpdir) == NULL)
                return -1;
        return reset(state);
}

static int teardown_dir(void **state)
{
        (void)state;
        char cmd[PATH_MAX + 16];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        return system(cmd) == 0 ? 0 : -1;
}

static void write_file(const char *path, const char *text, size_t len)
{
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        assert_int_equal(fwrite(text, 1, len, f), len);
        assert_int_equal(fclose(f), 0);
}

static void test_load_file(void **state)
{
        (void)state;
        char path[PATH_MAX + 32], lpath[PATH_MAX + 32];
        snprintf(path, sizeof(path), "%s/config.toml", tmpdir);
        write_file(path, every_key, strlen(every_key));
        memset(&hc, 0x5a, sizeof(hc));
        memset(&err, 0, sizeof(err));
        assert_int_equal(gs_hostconfig_load(&hc, path, &err), 0);
        assert_every_key(&hc);
        /* load starts from the defaults */
        write_file(path, "[hook]\nno-cgroups = true\n", 25);
        assert_int_equal(gs_hostconfig_load(&hc, path, &err), 0);
        assert_true(hc.no_cgroups);
        assert_string_equal(hc.root, "/");
        assert_int_equal(hc.nvml_timeout_s, 10);
        /* a link to the file is followed (config management keeps such links) */
        snprintf(lpath, sizeof(lpath), "%s/link.toml", tmpdir);
        assert_int_equal(symlink("config.toml", lpath), 0);
        gs_hostconfig_defaults(&hc);
        assert_int_equal(gs_hostconfig_load(&hc, lpath, &err), 0);
        assert_true(hc.no_cgroups);
        /* errors name the file as given and the line */
        write_file(path, "[hook]\n\nfoo = 1\n", 15);
        assert_int_equal(gs_hostconfig_load(&hc, path, &err), -1);
        assert_int_equal(err.code, GS_EFORMAT);
        char want[PATH_MAX + 64];
        snprintf(want, sizeof(want), "%s:3: unknown key 'hook.foo'", path);
        assert_string_equal(err.msg, want);
        /* an empty file: the defaults */
        write_file(path, "", 0);
        memset(&hc, 0x5a, sizeof(hc));
        assert_int_equal(gs_hostconfig_load(&hc, path, &err), 0);
        assert_defaults(&hc);
}

static void test_load_missing(void **state)
{
        (void)state;
        char path[PATH_MAX + 32], want[PATH_MAX + 96];
        snprintf(path, sizeof(path), "%s/missing.toml", tmpdir);
        memset(&err, 0, sizeof(err));
        /* given explicitly, a missing file is an error */
        assert_int_equal(gs_hostconfig_load(&hc, path, &err), -1);
        assert_int_equal(err.code, GS_ESYS);
        assert_int_equal(err.sys_errno, ENOENT);
        snprintf(want, sizeof(want), "cannot open %s: %s", path, strerror(ENOENT));
        assert_string_equal(err.msg, want);
        /* the default path missing: the defaults apply */
        if (access(GS_HOSTCONFIG_DEFAULT_PATH, F_OK) == 0 || errno != ENOENT)
                GS_SKIP("%s exists on this machine: not testing its absence", GS_HOSTCONFIG_DEFAULT_PATH);
        memset(&hc, 0x5a, sizeof(hc));
        memset(&err, 0, sizeof(err));
        assert_int_equal(gs_hostconfig_load(&hc, NULL, &err), 0);
        assert_int_equal(err.code, 0);
        assert_defaults(&hc);
}

static void test_load_too_big(void **state)
{
        (void)state;
        char path[PATH_MAX + 32], want[PATH_MAX + 64];
        snprintf(path, sizeof(path), "%s/big.toml", tmpdir);
        size_t mib = 1024 * 1024;
        char *text = malloc(mib + 1);
        assert_non_null(text);
        /* exactly 1 MiB: comment lines, then a key on the last line */
        memset(text, '\n', mib + 1);
        for (size_t i = 0; i + 64 < mib; i += 64) {
                text[i] = '#';
                memset(text + i + 1, 'c', 62);
        }
        static const char tail[] = "[driver]\nnvml-timeout = 7\n";
        memcpy(text + mib - strlen(tail), tail, strlen(tail));
        write_file(path, text, mib);
        memset(&err, 0, sizeof(err));
        assert_int_equal(gs_hostconfig_load(&hc, path, &err), 0);
        assert_int_equal(hc.nvml_timeout_s, 7);
        /* one byte more is refused */
        write_file(path, text, mib + 1);
        assert_int_equal(gs_hostconfig_load(&hc, path, &err), -1);
        assert_int_equal(err.code, GS_EFORMAT);
        snprintf(want, sizeof(want), "%s is larger than 1 MiB", path);
        assert_string_equal(err.msg, want);
        free(text);
}

static void test_load_not_regular(void **state)
{
        (void)state;
        char path[PATH_MAX + 32], want[PATH_MAX + 64];
        /* a directory */
        memset(&err, 0, sizeof(err));
        assert_int_equal(gs_hostconfig_load(&hc, tmpdir, &err), -1);
        assert_int_equal(err.code, GS_EFORMAT);
        snprintf(want, sizeof(want), "%s is not a regular file", tmpdir);
        assert_string_equal(err.msg, want);
        /* a FIFO with no writer: refused, not waited on */
        snprintf(path, sizeof(path), "%s/fifo.toml", tmpdir);
        assert_int_equal(mkfifo(path, 0600), 0);
        assert_int_equal(gs_hostconfig_load(&hc, path, &err), -1);
        snprintf(want, sizeof(want), "%s is not a regular file", path);
        assert_string_equal(err.msg, want);
        /* a character device */
        assert_int_equal(gs_hostconfig_load(&hc, "/dev/null", &err), -1);
        assert_string_equal(err.msg, "/dev/null is not a regular file");
}

/* packaging/config.toml: it parses, it documents every key, and its values are the defaults. */
static void test_example_config(void **state)
{
        (void)state;
        const char *path = getenv("GS_HOSTCONFIG_EXAMPLE");
        if (path == NULL) /* tests/unit/meson.build sets it */
                fail_msg("GS_HOSTCONFIG_EXAMPLE is not set: run this test through meson");
        memset(&err, 0, sizeof(err));
        if (gs_hostconfig_load(&hc, path, &err) != 0)
                fail_msg("%s", err.msg);
        assert_defaults(&hc);

        /* Uncomment every "#key = value" line and parse that over a config where every key differs
         * from its default: each key must be there, with its default value. */
        FILE *f = fopen(path, "r");
        assert_non_null(f);
        size_t cap = 64 * 1024, n = 0;
        char *text = malloc(cap), line[1024];
        assert_non_null(text);
        unsigned nkeys = 0;
        while (fgets(line, sizeof(line), f) != NULL) {
                const char *l = line;
                if (line[0] == '#' && line[1] >= 'a' && line[1] <= 'z' && strstr(line, " = ") != NULL) {
                        l = line + 1;
                        nkeys++;
                }
                size_t k = strlen(l);
                assert_true(n + k < cap);
                memcpy(text + n, l, k);
                n += k;
        }
        fclose(f);
        assert_int_equal(nkeys, 43); /* issue 31 (shim): +3; (alloc): slice.env-may-raise */
        gs_hostconfig_defaults(&hc);
        expect_ok(every_key);
        if (parse_n(text, n) != 0)
                fail_msg("uncommented %s: %s", path, err.msg);
        free(text);
        /* ldconfig's built-in default ("") depends on the host; the example shows the usual one */
        assert_string_equal(hc.ldconfig, "@/sbin/ldconfig");
        hc.ldconfig[0] = '\0';
        assert_defaults(&hc);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup(test_defaults, reset),
                cmocka_unit_test_setup(test_every_key, reset),
                cmocka_unit_test_setup(test_parse_over_existing, reset),
                cmocka_unit_test_setup(test_booleans, reset),
                cmocka_unit_test_setup(test_integers, reset),
                cmocka_unit_test_setup(test_strings, reset),
                cmocka_unit_test_setup(test_string_lengths, reset),
                cmocka_unit_test_setup(test_arrays, reset),
                cmocka_unit_test_setup(test_string_list, reset),
                cmocka_unit_test_setup(test_compat_mode, reset),
                cmocka_unit_test_setup(test_paths, reset),
                cmocka_unit_test_setup(test_comments_whitespace, reset),
                cmocka_unit_test_setup(test_crlf, reset),
                cmocka_unit_test_setup(test_errors, reset),
                cmocka_unit_test_setup(test_no_nul_terminator, reset),
                cmocka_unit_test_setup_teardown(test_load_file, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_load_missing, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_load_too_big, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_load_not_regular, setup_dir, teardown_dir),
                cmocka_unit_test_setup(test_example_config, reset),
        };
        return gs_skips_result(cmocka_run_group_tests(tests, NULL, NULL), sizeof(tests) / sizeof(tests[0]));
}
