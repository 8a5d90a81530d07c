/* The OCI state / config.json parsers and the NVIDIA / HAMi env contract (src/runtime). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/hook.h"
#include "runtime/hostconfig.h"
#include "runtime/oci.h"
#include "runtime/request.h"
#include "runtime/slice_gpus.h"
#include "slice/slice.h"

#define S(x) x, strlen(x)

static void state_runc_and_crun(void **unused)
{
        (void)unused;
        struct gs_oci_state st;
        struct gs_error err = {0};
        /* runc prestart */
        assert_int_equal(gs_oci_state_parse(S("{\"ociVersion\":\"1.0.2-dev\",\"id\":\"c1\",\"status\":\"creating\","
                                              "\"pid\":4242,\"bundle\":\"/b/c1\",\"annotations\":{\"a\":\"b\"}}"),
                                            &st, &err),
                         0);
        assert_string_equal(st.id, "c1");
        assert_int_equal(st.pid, 4242);
        assert_string_equal(st.bundle, "/b/c1");
        assert_string_equal(st.status, "creating");
        /* crun: pid 0, extra "root", unknown keys; the pre-2017 bundlePath */
        assert_int_equal(gs_oci_state_parse(S("{\"ociVersion\":\"1.0\",\"id\":\"c2\",\"pid\":0,\"root\":\"rootfs\","
                                              "\"bundlePath\":\"/b/c2\",\"status\":\"created\",\"x\":[1,2]}\n"),
                                            &st, &err),
                         0);
        assert_int_equal(st.pid, 0);
        assert_string_equal(st.bundle, "/b/c2");
        /* poststop: no pid at all */
        assert_int_equal(gs_oci_state_parse(S("{\"id\":\"c3\",\"bundle\":\"/b\",\"status\":\"stopped\"}"), &st, &err), 0);
        assert_int_equal(st.pid, 0);
}

static void state_errors(void **unused)
{
        (void)unused;
        static const struct {
                const char *json, *msg;
        } bad[] = {
                {"", "invalid OCI state"},
                {"[]", "not a JSON object"},
                {"{\"id\":\"x\"", "invalid OCI state"},
                {"{\"bundle\":\"/b\"}", "no container id"},
                {"{\"id\":\"\",\"bundle\":\"/b\"}", "no container id"},
                {"{\"id\":\"x\"}", "no bundle"},
                {"{\"id\":\"x\",\"bundle\":\"rel\"}", "not an absolute path"},
                {"{\"id\":\"x\",\"bundle\":\"/b\",\"pid\":\"12\"}", "'pid' is not an integer"},
                {"{\"id\":\"x\",\"bundle\":\"/b\",\"pid\":-1}", "invalid pid"},
                {"{\"id\":7,\"bundle\":\"/b\"}", "'id' is not a string"},
                {"{\"id\":\"x\",\"bundle\":\"/b\"} trailing", "trailing data"},
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct gs_oci_state st;
                struct gs_error err = {0};
                assert_int_equal(gs_oci_state_parse(bad[i].json, strlen(bad[i].json), &st, &err), -1);
                if (strstr(err.msg, bad[i].msg) == NULL)
                        fail_msg("'%s': got '%s', want '%s'", bad[i].json, err.msg, bad[i].msg);
        }
}

static void config_parse(void **unused)
{
        (void)unused;
        struct gs_oci_config cfg;
        struct gs_error err = {0};
        const char *json = "{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"rootfs\"},"
                           "\"process\":{\"env\":[\"PATH=/bin\",\"NVIDIA_VISIBLE_DEVICES=0\",\"A=1\",\"A=2\"],"
                           "\"user\":{\"uid\":1000,\"gid\":100},"
                           "\"capabilities\":{\"bounding\":[\"CAP_CHOWN\",\"CAP_SYS_ADMIN\"]}},"
                           "\"annotations\":{\"io.kubernetes.pod.name\":\"p\"}}";
        assert_int_equal(gs_oci_config_parse(S(json), "/bundles/x", &cfg, &err), 0);
        assert_string_equal(cfg.rootfs, "/bundles/x/rootfs");
        assert_int_equal(cfg.nenv, 4);
        assert_string_equal(gs_env_get(cfg.env, cfg.nenv, "NVIDIA_VISIBLE_DEVICES"), "0");
        assert_string_equal(gs_env_get(cfg.env, cfg.nenv, "A"), "2"); /* the last one wins */
        assert_null(gs_env_get(cfg.env, cfg.nenv, "NVIDIA"));
        assert_true(cfg.privileged);
        assert_int_equal(cfg.uid, 1000);
        assert_int_equal(cfg.gid, 100);
        assert_int_equal(cfg.nannotations, 1);
        assert_string_equal(cfg.annotations[0], "io.kubernetes.pod.name=p");
        gs_oci_config_release(&cfg);

        assert_int_equal(gs_oci_config_parse(S("{\"root\":{\"path\":\"/abs/root\"}}"), "/b", &cfg, &err), 0);
        assert_string_equal(cfg.rootfs, "/abs/root");
        assert_false(cfg.privileged);
        assert_int_equal(cfg.nenv, 0);
        gs_oci_config_release(&cfg);

        assert_int_equal(gs_oci_config_parse(S("{\"process\":{}}"), "/b", &cfg, &err), -1);
        assert_non_null(strstr(err.msg, "no 'root' object"));
        assert_int_equal(gs_oci_config_parse(S("{\"root\":{\"path\":\"r\"},\"process\":{\"env\":\"A=1\"}}"), "/b", &cfg,
                                             &err),
                         -1);
        assert_non_null(strstr(err.msg, "'process.env' is not an array"));
}

/* --- the env contract ------------------------------------------------------------------------ */

static struct gs_hostconfig hc;

static int setup_hc(void **unused)
{
        (void)unused;
        gs_hostconfig_defaults(&hc);
        return 0;
}

/* The request of a container with env (the NULL-terminated rest) and the allocator's options
 * `alloc` (NULL: none, through gs_request_from_env as the env-only callers do). */
static int vreq(struct gs_request *rq, struct gs_error *err, const struct gs_slice_opts *alloc, bool privileged,
                va_list ap)
{
        char *env[64];
        size_t n = 0;
        for (const char *e; (e = va_arg(ap, const char *)) != NULL && n < 64;)
                env[n++] = (char *)e;
        env[n] = NULL;
        memset(err, 0, sizeof(*err));
        if (alloc == NULL)
                return gs_request_from_env(rq, env, n, privileged, &hc, err);
        struct gs_request_src in = {.env = env, .nenv = n, .privileged = privileged, .alloc = alloc};
        return gs_request_from_src(rq, &in, &hc, err);
}

static int req(struct gs_request *rq, struct gs_error *err, bool privileged, ...)
{
        va_list ap;
        va_start(ap, privileged);
        int rc = vreq(rq, err, NULL, privileged, ap);
        va_end(ap);
        return rc;
}

static void visible_devices(void **unused)
{
        (void)unused;
        struct gs_request rq;
        struct gs_error err;
        assert_int_equal(req(&rq, &err, false, "PATH=/bin", NULL), 0); /* unset: not a GPU container */
        assert_false(rq.gpu);
        assert_true(rq.opts.no_gpu);
        assert_false(gs_slice_requested(&rq.opts.slice));
        assert_int_equal(req(&rq, &err, false, "NVIDIA_VISIBLE_DEVICES=", NULL), 0);
        assert_false(rq.gpu);
        assert_int_equal(req(&rq, &err, false, "NVIDIA_VISIBLE_DEVICES=void", NULL), 0);
        assert_false(rq.gpu);
        assert_int_equal(req(&rq, &err, false, "NVIDIA_VISIBLE_DEVICES=none", NULL), 0);
        assert_true(rq.gpu);
        assert_null(rq.opts.devices);
        assert_int_equal(rq.opts.caps, GS_CAP_UTILITY | GS_CAP_COMPUTE); /* the default */
        assert_int_equal(req(&rq, &err, false, "NVIDIA_VISIBLE_DEVICES=all", NULL), 0);
        assert_string_equal(rq.opts.devices, "all");
        assert_int_equal(req(&rq, &err, false, "NVIDIA_VISIBLE_DEVICES=0,GPU-abc", NULL), 0);
        assert_string_equal(rq.opts.devices, "0,GPU-abc");
        /* as NVIDIA's hook: entries trimmed, empty ones dropped, any "void" = no GPU, any "all" = all */
        assert_int_equal(req(&rq, &err, false, "NVIDIA_VISIBLE_DEVICES= 0, ,1 ,", NULL), 0);
        assert_string_equal(rq.opts.devices, "0,1");
        assert_int_equal(req(&rq, &err, false, "NVIDIA_VISIBLE_DEVICES= ", NULL), 0);
        assert_false(rq.gpu);
        assert_int_equal(req(&rq, &err, false, "NVIDIA_VISIBLE_DEVICES=0,void", NULL), 0);
        assert_false(rq.gpu);
        assert_int_equal(req(&rq, &err, false, "NVIDIA_VISIBLE_DEVICES=1,all", NULL), 0);
        assert_string_equal(rq.opts.devices, "all");
        assert_int_equal(req(&rq, &err, false, "NVIDIA_VISIBLE_DEVICES= none ", NULL), 0);
        assert_true(rq.gpu);
        assert_null(rq.opts.devices);
        gs_request_release(&rq);
}

static void legacy_image(void **unused)
{
        (void)unused;
        struct gs_request rq;
        struct gs_error err;
        /* CUDA_VERSION without NVIDIA_REQUIRE_CUDA: all devices, all supported caps, cuda>=11.0 */
        assert_int_equal(req(&rq, &err, false, "CUDA_VERSION=11.0.3", NULL), 0);
        assert_true(rq.gpu);
        assert_string_equal(rq.opts.devices, "all");
        assert_int_equal(rq.opts.caps, hc.supported_caps);
        assert_int_equal(rq.opts.nrequires, 1);
        assert_string_equal(rq.opts.requires[0], "cuda>=11.0");
        gs_request_release(&rq);
        assert_int_equal(req(&rq, &err, false, "CUDA_VERSION=12", NULL), 0);
        assert_string_equal(rq.opts.requires[0], "cuda>=12.0");
        gs_request_release(&rq);
        assert_int_equal(req(&rq, &err, false, "CUDA_VERSION=12.4.1-rc1", NULL), 0);
        assert_string_equal(rq.opts.requires[0], "cuda>=12.4");
        gs_request_release(&rq);
        /* an invalid version fails (as NVIDIA's hook), unless requirements are disabled */
        assert_int_equal(req(&rq, &err, false, "CUDA_VERSION=abc", NULL), -1);
        assert_string_equal(err.msg, "failed to get version: invalid CUDA version abc");
        assert_int_equal(req(&rq, &err, false, "CUDA_VERSION=11.x", NULL), -1);
        assert_int_equal(req(&rq, &err, false, "CUDA_VERSION=abc", "NVIDIA_DISABLE_REQUIRE=true", NULL), 0);
        assert_int_equal(rq.opts.nrequires, 0);
        /* an empty CUDA_VERSION is not a legacy image */
        assert_int_equal(req(&rq, &err, false, "CUDA_VERSION=", NULL), 0);
        assert_false(rq.gpu);
        /* a modern image (NVIDIA_REQUIRE_CUDA set): no implicit devices */
        assert_int_equal(req(&rq, &err, false, "CUDA_VERSION=12.4.1", "NVIDIA_REQUIRE_CUDA=cuda>=12.4", NULL), 0);
        assert_false(rq.gpu);
        gs_request_release(&rq);
}

static void capabilities(void **unused)
{
        (void)unused;
        struct gs_request rq;
        struct gs_error err;
        assert_int_equal(req(&rq, &err, false, "NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_DRIVER_CAPABILITIES=compute,video", NULL), 0);
        assert_int_equal(rq.opts.caps, GS_CAP_COMPUTE | GS_CAP_VIDEO);
        assert_int_equal(req(&rq, &err, false, "NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_DRIVER_CAPABILITIES=all", NULL), 0);
        assert_int_equal(rq.opts.caps, hc.supported_caps);
        assert_int_equal(req(&rq, &err, false, "NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_DRIVER_CAPABILITIES=compute,warp", NULL), -1);
        assert_non_null(strstr(err.msg, "unknown driver capability 'warp'"));
        assert_string_equal(err.stage, "hook");
        hc.supported_caps = GS_CAP_COMPUTE | GS_CAP_UTILITY;
        assert_int_equal(req(&rq, &err, false, "NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_DRIVER_CAPABILITIES=graphics", NULL), -1);
        assert_non_null(strstr(err.msg, "unsupported capabilities found"));
        gs_hostconfig_defaults(&hc);
        /* gs_caps_* helpers */
        assert_int_equal(gs_caps_expand(GS_CAP_VIDEO), GS_CAP_VIDEO | GS_CAP_COMPUTE);
        assert_int_equal(gs_caps_expand(GS_CAP_DISPLAY), GS_CAP_DISPLAY | GS_CAP_GRAPHICS);
        assert_true(gs_caps_drvopts(GS_CAP_UTILITY, 0) & GS_DRV_NO_LIBS32);
        assert_true(gs_caps_drvopts(GS_CAP_UTILITY, 0) & GS_DRV_NO_UVM);
        assert_false(gs_caps_drvopts(GS_CAP_COMPUTE | GS_CAP_COMPAT32, 0) & (GS_DRV_NO_LIBS32 | GS_DRV_NO_UVM));
        assert_true(gs_caps_want(GS_CAP_COMPUTE, 0));
        assert_false(gs_caps_want(GS_CAP_COMPUTE, GS_CAP_GRAPHICS));
}

static void requirements(void **unused)
{
        (void)unused;
        struct gs_request rq;
        struct gs_error err;
        assert_int_equal(req(&rq, &err, false, "NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_REQUIRE_CUDA=cuda>=12.0",
                             "NVIDIA_REQUIRE_BRAND=brand=tesla", "NVIDIA_REQUIRE_JETPACK=csv-mounts=all",
                             "NVIDIA_REQUIRE_EMPTY=", NULL),
                         0);
        assert_int_equal(rq.opts.nrequires, 2);
        assert_string_equal(rq.opts.requires[0], "cuda>=12.0");
        assert_string_equal(rq.opts.requires[1], "brand=tesla");
        gs_request_release(&rq);
        /* the last definition of a variable wins */
        assert_int_equal(req(&rq, &err, false, "NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_REQUIRE_CUDA=cuda>=99",
                             "NVIDIA_REQUIRE_CUDA=cuda>=11", NULL),
                         0);
        assert_int_equal(rq.opts.nrequires, 1);
        assert_string_equal(rq.opts.requires[0], "cuda>=11");
        gs_request_release(&rq);
        /* NVIDIA_DISABLE_REQUIRE, as Go's ParseBool */
        static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
        for (size_t i = 0; i < 6; i++) {
                char v[64];
                snprintf(v, sizeof(v), "NVIDIA_DISABLE_REQUIRE=%s", yes[i]);
                assert_int_equal(req(&rq, &err, false, "NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_REQUIRE_CUDA=cuda>=99", v, NULL), 0);
                assert_int_equal(rq.opts.nrequires, 0);
        }
        assert_int_equal(req(&rq, &err, false, "NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_REQUIRE_CUDA=cuda>=99",
                             "NVIDIA_DISABLE_REQUIRE=yes", NULL),
                         0);
        assert_int_equal(rq.opts.nrequires, 1);
        gs_request_release(&rq);
        hc.disable_require = true;
        assert_int_equal(req(&rq, &err, false, "NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_REQUIRE_CUDA=cuda>=99", NULL), 0);
        assert_int_equal(rq.opts.nrequires, 0);
        gs_hostconfig_defaults(&hc);
}

static void mig_and_imex(void **unused)
{
        (void)unused;
        struct gs_request rq;
        struct gs_error err;
        assert_int_equal(req(&rq, &err, false, "NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_MIG_CONFIG_DEVICES=all", NULL), -1);
        assert_string_equal(err.msg, "cannot set MIG_CONFIG_DEVICES in non privileged container");
        assert_int_equal(req(&rq, &err, true, "NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_MIG_CONFIG_DEVICES=all",
                             "NVIDIA_MIG_MONITOR_DEVICES=all", NULL),
                         0);
        assert_string_equal(rq.opts.mig_config, "all");
        assert_string_equal(rq.opts.mig_monitor, "all");
        assert_int_equal(req(&rq, &err, false, "NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_IMEX_CHANNELS=0,3", NULL), 0);
        assert_string_equal(rq.opts.imex_channels, "0,3");
        assert_int_equal(req(&rq, &err, false, "NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_IMEX_CHANNELS=all", NULL), 0);
        assert_null(rq.opts.imex_channels);
}

static void slices(void **unused)
{
        (void)unused;
        struct gs_request rq;
        struct gs_error err;
        assert_int_equal(req(&rq, &err, false, "GPUSLICE_MEMORY_LIMIT=4Gi", NULL), 0);
        assert_false(rq.gpu); /* a slice alone: the GPUs come from elsewhere (CDI) */
        assert_true(gs_slice_requested(&rq.opts.slice));
        assert_string_equal(rq.opts.slice.memory, "4Gi");
        /* HAMi's names beside ours: the tightest of all of them wins */
        assert_int_equal(req(&rq, &err, false, "CUDA_DEVICE_MEMORY_LIMIT=2g", "CUDA_DEVICE_MEMORY_LIMIT_1=1g",
                             "GPUSLICE_MEMORY_LIMIT_1=512Mi", "CUDA_DEVICE_SM_LIMIT=30",
                             "GPU_CORE_UTILIZATION_POLICY=force", NULL),
                         0);
        assert_string_equal(rq.opts.slice.memory, "2g");
        assert_string_equal(rq.opts.slice.memory_dev[1], "512Mi");
        assert_null(rq.opts.slice.memory_dev[0]);
        assert_string_equal(rq.opts.slice.compute, "30");
        assert_string_equal(rq.opts.slice.compute_mode, "cap");
        /* "0" and "unlimited" ask for nothing */
        assert_int_equal(req(&rq, &err, false, "GPUSLICE_MEMORY_LIMIT=unlimited", "GPUSLICE_COMPUTE_LIMIT=0", NULL), 0);
        assert_false(gs_slice_requested(&rq.opts.slice));
        /* errors name the variable and the stage */
        assert_int_equal(req(&rq, &err, false, "GPUSLICE_MEMORY_LIMIT=4 GB", NULL), -1);
        assert_string_equal(err.stage, "slice");
        assert_non_null(strstr(err.msg, "invalid GPUSLICE_MEMORY_LIMIT '4 GB'"));
        assert_int_equal(req(&rq, &err, false, "CUDA_DEVICE_SM_LIMIT_2=101", NULL), -1);
        assert_non_null(strstr(err.msg, "invalid CUDA_DEVICE_SM_LIMIT_2 '101'"));
        assert_int_equal(req(&rq, &err, false, "GPUSLICE_COMPUTE_MODE=fast", NULL), -1);
        assert_non_null(strstr(err.msg, "invalid GPUSLICE_COMPUTE_MODE 'fast'"));
}

/* GPUSLICE_PRIORITY (words) and HAMi's CUDA_TASK_PRIORITY (0 high, 1 normal, 2 or more low):
 * read as the compute mode is, the lowest of both winning; the slice gets the word (high: in a
 * privileged container, see env_may_not_raise). */
static void priorities(void **unused)
{
        (void)unused;
        struct gs_request rq;
        struct gs_error err;
        static const struct {
                const char *var, *want;
        } good[] = {
                {"GPUSLICE_PRIORITY=high", "high"},   {"GPUSLICE_PRIORITY=Normal", "normal"},
                {"GPUSLICE_PRIORITY=LOW", "low"},     {"CUDA_TASK_PRIORITY=0", "high"},
                {"CUDA_TASK_PRIORITY=1", "normal"},   {"CUDA_TASK_PRIORITY=2", "low"},
                {"CUDA_TASK_PRIORITY=17", "low"},
        };
        for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
                if (req(&rq, &err, true, "GPUSLICE_COMPUTE_LIMIT=30", good[i].var, NULL) != 0)
                        fail_msg("%s: %s", good[i].var, err.msg);
                if (rq.opts.slice.priority == NULL || strcmp(rq.opts.slice.priority, good[i].want) != 0)
                        fail_msg("%s: priority %s, want %s", good[i].var, rq.opts.slice.priority ? rq.opts.slice.priority : "(null)",
                                 good[i].want);
        }
        /* the lower of ours and HAMi's; unset or empty: none (the interposer's default, normal) */
        assert_int_equal(req(&rq, &err, false, "GPUSLICE_COMPUTE_LIMIT=30", "CUDA_TASK_PRIORITY=0", "GPUSLICE_PRIORITY=low",
                             NULL), 0);
        assert_string_equal(rq.opts.slice.priority, "low");
        assert_int_equal(req(&rq, &err, false, "GPUSLICE_COMPUTE_LIMIT=30", NULL), 0);
        assert_null(rq.opts.slice.priority);
        assert_int_equal(req(&rq, &err, false, "GPUSLICE_COMPUTE_LIMIT=30", "GPUSLICE_PRIORITY=", NULL), 0);
        assert_null(rq.opts.slice.priority);
        /* a priority alone makes no slice (it orders compute-limited slices), as a mode alone */
        assert_int_equal(req(&rq, &err, true, "NVIDIA_VISIBLE_DEVICES=0", "GPUSLICE_PRIORITY=high", NULL), 0);
        assert_string_equal(rq.opts.slice.priority, "high");
        assert_false(gs_slice_requested(&rq.opts.slice));
        /* errors name the variable, the value and what is valid; stage "slice" */
        static const struct {
                const char *var, *msg;
        } bad[] = {
                {"GPUSLICE_PRIORITY=urgent", "invalid GPUSLICE_PRIORITY 'urgent' (high, normal or low)"},
                {"GPUSLICE_PRIORITY=0", "invalid GPUSLICE_PRIORITY '0' (high, normal or low)"},
                {"GPUSLICE_PRIORITY=high ", "invalid GPUSLICE_PRIORITY 'high ' (high, normal or low)"},
                {"CUDA_TASK_PRIORITY=high", "invalid CUDA_TASK_PRIORITY 'high' (0 high, 1 normal, 2 or more low)"},
                {"CUDA_TASK_PRIORITY=-1", "invalid CUDA_TASK_PRIORITY '-1' (0 high, 1 normal, 2 or more low)"},
                {"CUDA_TASK_PRIORITY=1.5", "invalid CUDA_TASK_PRIORITY '1.5'"},
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                assert_int_equal(req(&rq, &err, false, "GPUSLICE_COMPUTE_LIMIT=30", bad[i].var, NULL), -1);
                assert_string_equal(err.stage, "slice");
                if (strcmp(err.msg, bad[i].msg) != 0 && strncmp(err.msg, bad[i].msg, strlen(bad[i].msg)) != 0)
                        fail_msg("%s: '%s', want '%s'", bad[i].var, err.msg, bad[i].msg);
        }
}

/* --- who sets the slice (runtime/slice_rules.h; issue 31) ---------------------------------- */

static const char *or_null(const char *s)
{
        return s != NULL ? s : "(null)";
}

#define EXPECT_STR(got, want, what)                                                                        \
        do {                                                                                               \
                const char *g_ = (got), *w_ = (want);                                                      \
                if ((g_ == NULL) != (w_ == NULL) || (g_ != NULL && strcmp(g_, w_) != 0))                    \
                        fail_msg("%s: %s, want %s", (what), or_null(g_), or_null(w_));                     \
        } while (0)

/* No allocator: of all the names (ours, HAMi's, global, per device) the tightest wins: no env
 * value widens another. */
static void env_tightest_wins(void **unused)
{
        (void)unused;
        struct gs_request rq;
        struct gs_error err;
        static const struct {
                const char *a, *b;
                const char *memory, *memory0; /* what the slice gets: global, device 0 */
        } mem[] = {
                /* a per-device value never widens the global one */
                {"GPUSLICE_MEMORY_LIMIT=1Gi", "GPUSLICE_MEMORY_LIMIT_0=4Gi", "1Gi", NULL},
                {"GPUSLICE_MEMORY_LIMIT=1Gi", "CUDA_DEVICE_MEMORY_LIMIT_0=8Gi", "1Gi", NULL},
                {"CUDA_DEVICE_MEMORY_LIMIT=1Gi", "GPUSLICE_MEMORY_LIMIT_0=4Gi", "1Gi", NULL},
                {"GPUSLICE_MEMORY_LIMIT=1Gi", "GPUSLICE_MEMORY_LIMIT_0=unlimited", "1Gi", NULL},
                {"GPUSLICE_MEMORY_LIMIT=1Gi", "CUDA_DEVICE_MEMORY_LIMIT_0=0", "1Gi", NULL},
                /* ... but narrows it */
                {"GPUSLICE_MEMORY_LIMIT=1Gi", "GPUSLICE_MEMORY_LIMIT_0=512Mi", "1Gi", "512Mi"},
                /* neither of our name and HAMi's widens the other */
                {"GPUSLICE_MEMORY_LIMIT=4Gi", "CUDA_DEVICE_MEMORY_LIMIT=1Gi", "1Gi", NULL},
                {"GPUSLICE_MEMORY_LIMIT=1Gi", "CUDA_DEVICE_MEMORY_LIMIT=4Gi", "1Gi", NULL},
                {"GPUSLICE_MEMORY_LIMIT_0=4Gi", "CUDA_DEVICE_MEMORY_LIMIT_0=1Gi", NULL, "1Gi"},
                {"GPUSLICE_MEMORY_LIMIT=unlimited", "CUDA_DEVICE_MEMORY_LIMIT=2Gi", "2Gi", NULL},
        };
        for (size_t i = 0; i < sizeof(mem) / sizeof(mem[0]); i++) {
                char what[160];
                snprintf(what, sizeof(what), "%s %s", mem[i].a, mem[i].b);
                if (req(&rq, &err, false, mem[i].a, mem[i].b, NULL) != 0)
                        fail_msg("%s: %s", what, err.msg);
                EXPECT_STR(rq.opts.slice.memory, mem[i].memory, what);
                EXPECT_STR(rq.opts.slice.memory_dev[0], mem[i].memory0, what);
        }
        static const struct {
                const char *a, *b;
                const char *compute, *compute0;
        } cpu[] = {
                {"GPUSLICE_COMPUTE_LIMIT=30", "GPUSLICE_COMPUTE_LIMIT_0=100", "30", NULL},
                {"GPUSLICE_COMPUTE_LIMIT=30", "CUDA_DEVICE_SM_LIMIT_0=90", "30", NULL},
                {"CUDA_DEVICE_SM_LIMIT=30", "GPUSLICE_COMPUTE_LIMIT_0=0", "30", NULL},
                {"GPUSLICE_COMPUTE_LIMIT=60", "CUDA_DEVICE_SM_LIMIT=30", "30", NULL},
                {"GPUSLICE_COMPUTE_LIMIT=30", "GPUSLICE_COMPUTE_LIMIT_0=20", "30", "20"},
        };
        for (size_t i = 0; i < sizeof(cpu) / sizeof(cpu[0]); i++) {
                char what[160];
                snprintf(what, sizeof(what), "%s %s", cpu[i].a, cpu[i].b);
                if (req(&rq, &err, false, cpu[i].a, cpu[i].b, NULL) != 0)
                        fail_msg("%s: %s", what, err.msg);
                EXPECT_STR(rq.opts.slice.compute, cpu[i].compute, what);
                EXPECT_STR(rq.opts.slice.compute_dev[0], cpu[i].compute0, what);
        }
        /* the narrowest mode of both names, the lowest priority */
        assert_int_equal(req(&rq, &err, true, "GPUSLICE_COMPUTE_LIMIT=30", "GPUSLICE_COMPUTE_MODE=off",
                             "GPU_CORE_UTILIZATION_POLICY=force", NULL), 0);
        EXPECT_STR(rq.opts.slice.compute_mode, "cap", "mode off beside HAMi's force");
        assert_int_equal(req(&rq, &err, true, "GPUSLICE_COMPUTE_LIMIT=30", "GPUSLICE_COMPUTE_MODE=share",
                             "GPU_CORE_UTILIZATION_POLICY=disable", NULL), 0);
        EXPECT_STR(rq.opts.slice.compute_mode, "share", "mode share beside HAMi's disable");
        assert_int_equal(req(&rq, &err, true, "GPUSLICE_COMPUTE_LIMIT=30", "GPUSLICE_PRIORITY=high",
                             "CUDA_TASK_PRIORITY=1", NULL), 0);
        EXPECT_STR(rq.opts.slice.priority, "normal", "priority high beside HAMi's 1");
}

/* No allocator: mode off and priority high raise a slice over its neighbours: only with the
 * host's slice.env-may-raise or in a privileged container; else ignored (and noted), not an
 * error. Mode share is the container's to choose. */
static void env_may_not_raise(void **unused)
{
        (void)unused;
        struct gs_request rq;
        struct gs_error err;
        static const struct {
                const char *var, *field, *raised;
        } raise[] = {
                {"GPUSLICE_COMPUTE_MODE=off", "mode", "off"},   {"GPU_CORE_UTILIZATION_POLICY=disable", "mode", "off"},
                {"GPUSLICE_PRIORITY=high", "priority", "high"}, {"CUDA_TASK_PRIORITY=0", "priority", "high"},
        };
        for (size_t i = 0; i < sizeof(raise) / sizeof(raise[0]); i++) {
                bool mode = strcmp(raise[i].field, "mode") == 0;
                for (int how = 0; how < 3; how++) { /* plain, privileged, env-may-raise */
                        hc.env_may_raise = how == 2;
                        if (req(&rq, &err, how == 1, "GPUSLICE_COMPUTE_LIMIT=30", raise[i].var, NULL) != 0)
                                fail_msg("%s: %s", raise[i].var, err.msg);
                        const char *got = mode ? rq.opts.slice.compute_mode : rq.opts.slice.priority;
                        char what[160];
                        snprintf(what, sizeof(what), "%s (%s)", raise[i].var,
                                 how == 0 ? "unprivileged" : how == 1 ? "privileged" : "env-may-raise");
                        EXPECT_STR(got, how == 0 ? NULL : raise[i].raised, what);
                        if (how == 0 && strstr(rq.slice.ignored, raise[i].var) == NULL)
                                fail_msg("%s: not noted as ignored: '%s'", what, rq.slice.ignored);
                }
                hc.env_may_raise = false;
        }
        assert_int_equal(req(&rq, &err, false, "GPUSLICE_COMPUTE_LIMIT=30", "GPUSLICE_COMPUTE_MODE=share", NULL), 0);
        EXPECT_STR(rq.opts.slice.compute_mode, "share", "mode share, unprivileged");
        assert_int_equal(req(&rq, &err, false, "GPUSLICE_COMPUTE_LIMIT=30", "CUDA_TASK_PRIORITY=2", NULL), 0);
        EXPECT_STR(rq.opts.slice.priority, "low", "CUDA_TASK_PRIORITY=2, unprivileged");
        assert_string_equal(rq.slice.ignored, "");
}

static int reqa(struct gs_request *rq, struct gs_error *err, const struct gs_slice_opts *alloc, bool privileged, ...)
{
        va_list ap;
        va_start(ap, privileged);
        int rc = vreq(rq, err, alloc, privileged, ap);
        va_end(ap);
        return rc;
}

/* An allocator (the hook's options): its values are the ceiling, for privileged containers and
 * under env-may-raise too; each env name can only narrow them. */
static void allocator_is_the_ceiling(void **unused)
{
        (void)unused;
        struct gs_request rq;
        struct gs_error err;
        struct gs_slice_opts a = {.memory = "1Gi", .compute = "30"};
        static const struct {
                const char *var;
                const char *memory, *memory0, *compute, *compute0, *mode, *priority;
                bool noted;
        } c[] = {
                {"GPUSLICE_MEMORY_LIMIT_0=4Gi", "1Gi", NULL, "30", NULL, NULL, NULL, true},
                {"CUDA_DEVICE_MEMORY_LIMIT_0=4Gi", "1Gi", NULL, "30", NULL, NULL, NULL, true},
                {"GPUSLICE_MEMORY_LIMIT=70Gi", "1Gi", NULL, "30", NULL, NULL, NULL, true},
                {"CUDA_DEVICE_MEMORY_LIMIT=unlimited", "1Gi", NULL, "30", NULL, NULL, NULL, true},
                {"GPUSLICE_COMPUTE_LIMIT_0=100", "1Gi", NULL, "30", NULL, NULL, NULL, true},
                {"GPUSLICE_COMPUTE_LIMIT=90", "1Gi", NULL, "30", NULL, NULL, NULL, true},
                {"CUDA_DEVICE_SM_LIMIT_0=60", "1Gi", NULL, "30", NULL, NULL, NULL, true},
                {"GPUSLICE_COMPUTE_MODE=off", "1Gi", NULL, "30", NULL, "cap", NULL, true},
                {"GPUSLICE_COMPUTE_MODE=share", "1Gi", NULL, "30", NULL, "cap", NULL, true},
                {"GPU_CORE_UTILIZATION_POLICY=disable", "1Gi", NULL, "30", NULL, "cap", NULL, true},
                {"GPU_CORE_UTILIZATION_POLICY=default", "1Gi", NULL, "30", NULL, "cap", NULL, true},
                {"GPUSLICE_PRIORITY=high", "1Gi", NULL, "30", NULL, NULL, "normal", true},
                {"CUDA_TASK_PRIORITY=0", "1Gi", NULL, "30", NULL, NULL, "normal", true},
                /* narrowing is the container's */
                {"GPUSLICE_MEMORY_LIMIT_0=512Mi", "1Gi", "512Mi", "30", NULL, NULL, NULL, false},
                {"CUDA_DEVICE_MEMORY_LIMIT=256Mi", "256Mi", NULL, "30", NULL, NULL, NULL, false},
                {"GPUSLICE_COMPUTE_LIMIT_0=10", "1Gi", NULL, "30", "10", NULL, NULL, false},
                {"GPUSLICE_COMPUTE_MODE=cap", "1Gi", NULL, "30", NULL, "cap", NULL, false},
                {"CUDA_TASK_PRIORITY=2", "1Gi", NULL, "30", NULL, NULL, "low", false},
        };
        for (int how = 0; how < 3; how++) { /* plain, privileged, env-may-raise: the same */
                hc.env_may_raise = how == 2;
                for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
                        char what[160];
                        snprintf(what, sizeof(what), "allocator 1Gi 30 %%, %s (%s)", c[i].var,
                                 how == 0 ? "unprivileged" : how == 1 ? "privileged" : "env-may-raise");
                        if (reqa(&rq, &err, &a, how == 1, c[i].var, NULL) != 0)
                                fail_msg("%s: %s", what, err.msg);
                        EXPECT_STR(rq.opts.slice.memory, c[i].memory, what);
                        EXPECT_STR(rq.opts.slice.memory_dev[0], c[i].memory0, what);
                        EXPECT_STR(rq.opts.slice.compute, c[i].compute, what);
                        EXPECT_STR(rq.opts.slice.compute_dev[0], c[i].compute0, what);
                        EXPECT_STR(rq.opts.slice.compute_mode, c[i].mode, what);
                        EXPECT_STR(rq.opts.slice.priority, c[i].priority, what);
                        if (c[i].noted != (strstr(rq.slice.ignored, c[i].var) != NULL))
                                fail_msg("%s: noted '%s'", what, rq.slice.ignored);
                }
        }
        hc.env_may_raise = false;
        /* the allocator's mode and priority are ceilings too; its per-device value wins over its global one */
        struct gs_slice_opts b = {.memory = "1Gi", .compute = "50", .compute_mode = "share", .priority = "high"};
        b.memory_dev[1] = "8Gi";
        assert_int_equal(reqa(&rq, &err, &b, false, NULL), 0);
        EXPECT_STR(rq.opts.slice.memory_dev[1], "8Gi", "allocator --memory-1=8Gi");
        EXPECT_STR(rq.opts.slice.compute_mode, "share", "allocator share, no env");
        EXPECT_STR(rq.opts.slice.priority, "high", "allocator high, no env");
        assert_int_equal(reqa(&rq, &err, &b, false, "GPUSLICE_MEMORY_LIMIT_1=16Gi", "GPUSLICE_COMPUTE_MODE=off",
                              "GPUSLICE_PRIORITY=normal", NULL), 0);
        EXPECT_STR(rq.opts.slice.memory_dev[1], "8Gi", "allocator --memory-1=8Gi, env 16Gi");
        EXPECT_STR(rq.opts.slice.compute_mode, "share", "allocator share, env off");
        EXPECT_STR(rq.opts.slice.priority, "normal", "allocator high, env normal");
        assert_int_equal(reqa(&rq, &err, &b, false, "GPUSLICE_MEMORY_LIMIT_1=2Gi", "GPU_CORE_UTILIZATION_POLICY=force",
                              NULL), 0);
        EXPECT_STR(rq.opts.slice.memory_dev[1], "2Gi", "allocator --memory-1=8Gi, env 2Gi");
        EXPECT_STR(rq.opts.slice.compute_mode, "cap", "allocator share, env force");
        /* a malformed value still fails the start (the container's own doing) */
        assert_int_equal(reqa(&rq, &err, &a, false, "GPUSLICE_MEMORY_LIMIT_0=lots", NULL), -1);
        assert_string_equal(err.stage, "slice");
        assert_non_null(strstr(err.msg, "invalid GPUSLICE_MEMORY_LIMIT_0 'lots'"));
}

/* The allocator's options, one parser for configure and the hook. */
static void slice_args(void **unused)
{
        (void)unused;
        char *argv[] = {"hook", "--memory=1Gi", "--compute-share", "30", "--memory-2=512Mi", "createRuntime",
                        "--compute-share-1=20", "--compute-mode=share", "--priority", "low", "--", "--memory=9Gi", NULL};
        char *out[16];
        struct gs_slice_opts s = {0};
        struct gs_error err = {0};
        unsigned given;
        int n = gs_slice_args_take(12, argv, out, &s, &given, &err);
        assert_int_equal(n, 4);
        assert_int_equal(given, 6);
        assert_string_equal(out[0], "hook");
        assert_string_equal(out[1], "createRuntime");
        assert_string_equal(out[2], "--");
        assert_string_equal(out[3], "--memory=9Gi");
        assert_null(out[4]);
        assert_string_equal(s.memory, "1Gi");
        assert_string_equal(s.compute, "30");
        assert_string_equal(s.memory_dev[2], "512Mi");
        assert_string_equal(s.compute_dev[1], "20");
        assert_string_equal(s.compute_mode, "share");
        assert_string_equal(s.priority, "low");
        static const struct {
                const char *arg, *msg;
        } bad[] = {
                {"--memory=4GB", "invalid --memory: 4GB (bytes, or K/M/G/T or Ki/Mi/Gi/Ti)"},
                {"--memory-1=x", "invalid --memory-1: x (bytes, or K/M/G/T or Ki/Mi/Gi/Ti)"},
                {"--compute-share=120", "invalid --compute-share: 120 (a percentage, 1..100)"},
                {"--compute-share=0", "invalid --compute-share: 0 (a percentage, 1..100)"},
                {"--compute-mode=fast", "invalid --compute-mode: fast (cap, share or off)"},
                {"--priority=urgent", "invalid --priority: urgent (high, normal or low)"},
                {"--memory-16=1Gi", "invalid --memory-16: 1Gi (device index < 16)"},
                {"--priority", "option '--priority' needs a value"},
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                char *av[] = {"x", (char *)bad[i].arg, NULL};
                memset(&s, 0, sizeof(s));
                assert_int_equal(gs_slice_args_take(2, av, out, &s, &given, &err), -1);
                if (strcmp(err.msg, bad[i].msg) != 0)
                        fail_msg("%s: '%s', want '%s'", bad[i].arg, err.msg, bad[i].msg);
        }
        /* not ours: kept */
        char *other[] = {"x", "--memoryx=1", "--compute-shares=2", "--memory-a=1", NULL};
        assert_int_equal(gs_slice_args_take(4, other, out, &s, &given, &err), 4);
        assert_int_equal(given, 0);
}

/* Per-GPU slices (runtime/slice_gpus.h): each hook's limits at its GPU's index, never another's. */
#define UA "GPU-2f8c1d4e-7a90-3b5c-e6d1-0a9b8c7d6e5f"
#define UB "GPU-9e3a5b7c-1d2f-4a6b-8c0d-2e4f6a8b0c1d"
static void slice_gpus(void **unused)
{
        (void)unused;
        char *a[] = {"gpuslice-hook", "--gpu=" UB, "--memory=2Gi", "--compute-share=50", "--priority=high", "createRuntime", NULL};
        char *b[] = {"gpuslice-hook", "--memory=1Gi", "--gpu", UA, "--compute-share=30", "createRuntime", NULL};
        char *const *hooks[] = {a, b};
        const char *gpus[] = {UA, UB};
        struct gs_slice_opts m = {0};
        struct gs_error err = {0};
        assert_int_equal(gs_slice_gpus_merge(NULL, NULL, hooks, 2, gpus, 2, &m, &err), 0);
        assert_string_equal(m.memory_dev[0], "1Gi");
        assert_string_equal(m.memory_dev[1], "2Gi");
        assert_string_equal(m.compute_dev[0], "30");
        assert_string_equal(m.compute_dev[1], "50");
        assert_null(m.memory_dev[2]);
        assert_string_equal(m.memory, "0"); /* they differ: none for all */
        assert_string_equal(m.priority, "normal"); /* the lowest: b's default */
        assert_string_equal(m.compute_mode, "cap");
        /* the same GPU twice: the tightest of each value; one GPU: written once, for all */
        char *c[] = {"h", "--gpu=" UA, "--memory=2Gi", "--compute-share=20", "createRuntime", NULL};
        char *const *same[] = {c, b};
        assert_int_equal(gs_slice_gpus_merge(NULL, NULL, same, 2, gpus, 1, &m, &err), 0);
        assert_string_equal(m.memory_dev[0], "1Gi");
        assert_string_equal(m.compute_dev[0], "20");
        assert_string_equal(m.memory, "1Gi");
        assert_string_equal(m.compute, "20");
        /* a GPU the container lacks; a per-device option beside --gpu */
        assert_int_equal(gs_slice_gpus_merge(NULL, NULL, hooks, 2, gpus, 1, &m, &err), -1);
        assert_non_null(strstr(err.msg, "which the container does not have"));
        char *d[] = {"h", "--gpu=" UA, "--memory-1=2Gi", "createRuntime", NULL};
        char *const *dev[] = {d};
        assert_int_equal(gs_slice_gpus_merge(NULL, NULL, dev, 1, gpus, 2, &m, &err), -1);
        assert_non_null(strstr(err.msg, "per-device limit beside --gpu"));
        /* this hook's own options count where config.json does not hold it (never lost: unlimited) */
        struct gs_slice_opts own = {.memory = "3Gi"};
        char *const *none[] = {NULL};
        assert_int_equal(gs_slice_gpus_merge(UB, &own, none, 0, gpus, 2, &m, &err), 0);
        assert_string_equal(m.memory_dev[1], "3Gi");
        assert_null(m.memory_dev[0]);
        /* --gpu taken out of argv */
        char *av[] = {"x", "--gpu=" UA, "y", NULL}, *out[4];
        const char *g = NULL;
        assert_int_equal(gs_slice_gpu_take(3, av, out, &g, &err), 2);
        assert_string_equal(g, UA);
        assert_string_equal(out[1], "y");
        char *bad[] = {"x", "--gpu=../etc", NULL};
        assert_int_equal(gs_slice_gpu_take(2, bad, out, &g, &err), -1);
        char *twice[] = {"x", "--gpu=" UA, "--gpu=" UB, NULL};
        assert_int_equal(gs_slice_gpu_take(3, twice, out, &g, &err), -1);
        /* a share of a MIG device names its MIG- UUID (its limits the MIG device's) */
        char *mig[] = {"x", "--gpu=MIG-d41f6a2c-8e3b-5b9d-a07e-6c2f4a1e8d53", NULL};
        assert_int_equal(gs_slice_gpu_take(2, mig, out, &g, &err), 1);
        assert_string_equal(g, "MIG-d41f6a2c-8e3b-5b9d-a07e-6c2f4a1e8d53");
        const char *migs[] = {"MIG-d41f6a2c-8e3b-5b9d-a07e-6c2f4a1e8d53"};
        struct gs_slice_opts mo = {.memory = "4Gi"};
        assert_int_equal(gs_slice_gpus_merge(migs[0], &mo, none, 0, migs, 1, &m, &err), 0);
        assert_string_equal(m.memory, "4Gi");
        char *migbad[] = {"x", "--gpu=MIG-GPU-x/1/0", NULL};
        assert_int_equal(gs_slice_gpu_take(2, migbad, out, &g, &err), -1);
}

static void hook_stages_and_ids(void **unused)
{
        (void)unused;
        enum gs_hook_stage s;
        assert_int_equal(gs_hook_stage_parse("prestart", &s), 0);
        assert_int_equal(s, GS_HOOK_PRESTART);
        assert_int_equal(gs_hook_stage_parse("createRuntime", &s), 0);
        assert_int_equal(s, GS_HOOK_CREATE_RUNTIME);
        assert_int_equal(gs_hook_stage_parse("poststop", &s), 0);
        assert_int_equal(gs_hook_stage_parse("createContainer", &s), -1);
        assert_true(gs_slice_id_valid("4f2a9c_x.y-z"));
        assert_false(gs_slice_id_valid(""));
        assert_false(gs_slice_id_valid(".."));
        assert_false(gs_slice_id_valid("a/b"));
        assert_false(gs_slice_id_valid("a b"));
}

/* --- who may ask for GPUs (issue 31): NVIDIA's accept-nvidia-visible-devices-* rules ----------- */

static void path_clean(void **unused)
{
        (void)unused;
        static const char *const cases[][2] = {
                {"/var/run/nvidia-container-devices/../nvidia-container-devices/./0/", "/var/run/nvidia-container-devices/0"},
                {"//dev//null", "/dev/null"}, {"/dev/../dev/null", "/dev/null"}, {"/../x", "/x"}, {"a/../../b", "../b"},
                {"", "."}, {"abc/./", "abc"}, {"/", "/"}, {"a/b/../..", "."}, {"../../a", "../../a"},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char buf[256];
                snprintf(buf, sizeof(buf), "%s", cases[i][0]);
                gs_oci_path_clean(buf);
                assert_string_equal(buf, cases[i][1]);
        }
}

#define MNT(src, dst) "{\"source\":\"" src "\",\"destination\":\"" dst "\",\"type\":\"bind\"}"
#define DEVS "/var/run/nvidia-container-devices"

static void device_mounts(void **unused)
{
        (void)unused;
        struct gs_oci_config cfg;
        struct gs_error err = {0};
        const char *json = "{\"root\":{\"path\":\"r\"},\"mounts\":[" MNT("/dev/null", DEVS "/0") ","
                           MNT("/dev/../dev/null", DEVS "//GPU-1/") "," MNT("tmpfs", DEVS "/all") ","
                           MNT("/dev/null", DEVS "X/1") "," MNT("/dev/null", DEVS) "," MNT("/dev/null", DEVS "/0") ","
                           MNT("/dev/null", DEVS "/cdi/nvidia.com/gpu/1") "," MNT("/dev/null", DEVS "/imex/3") ","
                           MNT("/dev/null", "/var/run/other/0") ",{\"destination\":7},3]}";
        assert_int_equal(gs_oci_config_parse(S(json), "/b", &cfg, &err), 0);
        assert_int_equal(cfg.ndevice_mounts, 4); /* a tmpfs, a longer name, the directory itself, a repeat: none */
        assert_string_equal(cfg.device_mounts[0], "0");
        assert_string_equal(cfg.device_mounts[1], "GPU-1");
        assert_string_equal(cfg.device_mounts[2], "cdi/nvidia.com/gpu/1");
        assert_string_equal(cfg.device_mounts[3], "imex/3");
        assert_null(cfg.device_mounts[4]);
        gs_oci_config_release(&cfg);
}

static int req_oci(struct gs_request *rq, const char *json)
{
        struct gs_oci_config cfg;
        struct gs_error err = {0};
        assert_int_equal(gs_oci_config_parse(json, strlen(json), "/b", &cfg, &err), 0);
        int r = gs_request_from_oci(rq, &cfg, NULL, &hc, &err);
        gs_oci_config_release(&cfg);
        return r;
}

#define CAPS(c) ",\"capabilities\":{\"bounding\":[" c "]}"
#define PROC(env, caps) "{\"root\":{\"path\":\"r\"},\"process\":{\"env\":[" env "]" caps "}"

static void host_rules(void **unused)
{
        (void)unused;
        struct gs_request rq;
        /* NVIDIA's defaults: the env of an unprivileged container counts, mounts do not */
        assert_int_equal(req_oci(&rq, PROC("\"NVIDIA_VISIBLE_DEVICES=all\"", "") "}"), 0);
        assert_true(rq.gpu);
        assert_false(rq.env_refused);
        assert_int_equal(req_oci(&rq, PROC("\"NVIDIA_VISIBLE_DEVICES=" DEVS "\"", "") ",\"mounts\":[" MNT("/dev/null", DEVS "/0") "]}"), 0);
        assert_false(rq.gpu); /* the directory itself asks for nothing; mounts not accepted */
        /* a Kubernetes node */
        hc.accept_env_unprivileged = false;
        hc.accept_volume_mounts = true;
        assert_int_equal(req_oci(&rq, PROC("\"NVIDIA_VISIBLE_DEVICES=all\"", CAPS("\"CAP_CHOWN\"")) "}"), 0);
        assert_false(rq.gpu);
        assert_true(rq.env_refused);
        assert_int_equal(req_oci(&rq, PROC("\"CUDA_VERSION=12.4.1\"", "") "}"), 0);
        assert_false(rq.gpu); /* a legacy image's implicit all */
        assert_int_equal(req_oci(&rq, PROC("\"NVIDIA_VISIBLE_DEVICES=all\",\"NVIDIA_IMEX_CHANNELS=1\"", CAPS("\"CAP_SYS_ADMIN\"")) "}"), 0);
        assert_true(rq.gpu); /* privileged */
        assert_string_equal(rq.opts.devices, "all");
        assert_string_equal(rq.opts.imex_channels, "1");
        gs_request_release(&rq);
        assert_int_equal(req_oci(&rq, PROC("\"NVIDIA_VISIBLE_DEVICES=all\",\"NVIDIA_IMEX_CHANNELS=1\"", "") ",\"mounts\":["
                                      MNT("/dev/null", DEVS "/GPU-1") "," MNT("/dev/null", DEVS "/cdi/nvidia.com/gpu/0") ","
                                      MNT("/dev/null", DEVS "/imex/3") "," MNT("/dev/null", DEVS "/0") "]}"), 0);
        assert_true(rq.gpu); /* the mounts win over the env */
        assert_string_equal(rq.opts.devices, "GPU-1,0");
        assert_string_equal(rq.devices_from, "volume mounts");
        assert_string_equal(rq.opts.imex_channels, "3");
        gs_request_release(&rq);
        assert_int_equal(req_oci(&rq, PROC("\"NVIDIA_VISIBLE_DEVICES=all\"", "") ",\"mounts\":[" MNT("/tmp/x", DEVS "/0") "]}"), 0);
        assert_false(rq.gpu); /* not /dev/null: no device; and the env refused */
        hc.accept_volume_mounts = false;
        assert_int_equal(req_oci(&rq, PROC("", "") ",\"mounts\":[" MNT("/dev/null", DEVS "/0") "]}"), 0);
        assert_false(rq.gpu);
}

/* The allocator's slice as volume mounts (slice/<option>=<value>, the device plugin's
 * volume-mounts answers): taken where the host takes volume mounts, the ceiling as the hook's
 * options are; never devices. */
static void slice_mounts(void **unused)
{
        (void)unused;
        struct gs_request rq;
        hc.accept_env_unprivileged = false;
        hc.accept_volume_mounts = true;
        const char *hostile = "\"NVIDIA_VISIBLE_DEVICES=" DEVS "\",\"GPUSLICE_MEMORY_LIMIT=70Gi\","
                              "\"GPUSLICE_MEMORY_LIMIT_1=70Gi\",\"GPUSLICE_COMPUTE_MODE=off\",\"CUDA_TASK_PRIORITY=0\"";
        char json[2048];
        snprintf(json, sizeof(json), PROC("%s", "") ",\"mounts\":[" MNT("/dev/null", DEVS "/GPU-1") ","
                 MNT("/dev/null", DEVS "/slice/memory=8Gi") "," MNT("/dev/null", DEVS "/slice/compute-share=50") ","
                 MNT("/dev/null", DEVS "/slice/memory-1=4Gi") "]}", hostile);
        assert_int_equal(req_oci(&rq, json), 0);
        assert_true(rq.gpu);
        assert_string_equal(rq.opts.devices, "GPU-1"); /* the slice mounts are no devices */
        EXPECT_STR(rq.opts.slice.memory, "8Gi", "slice mounts 8Gi, env 70Gi");
        EXPECT_STR(rq.opts.slice.memory_dev[1], "4Gi", "slice mounts memory-1=4Gi, env 70Gi");
        EXPECT_STR(rq.opts.slice.compute, "50", "slice mounts 50 %");
        EXPECT_STR(rq.opts.slice.compute_mode, "cap", "slice mounts, env mode off");
        EXPECT_STR(rq.opts.slice.priority, "normal", "slice mounts, env CUDA_TASK_PRIORITY=0");
        gs_request_release(&rq);
        /* a bad one fails the start; one that is no slice option too */
        snprintf(json, sizeof(json), PROC("", "") ",\"mounts\":[" MNT("/dev/null", DEVS "/slice/memory=lots") "]}");
        assert_int_equal(req_oci(&rq, json), -1);
        snprintf(json, sizeof(json), PROC("", "") ",\"mounts\":[" MNT("/dev/null", DEVS "/slice/regions-dir=x") "]}");
        assert_int_equal(req_oci(&rq, json), -1);
        /* not /dev/null (an image's VOLUME, a tmpfs): nothing; a host that takes no mounts: nothing */
        snprintf(json, sizeof(json), PROC("\"GPUSLICE_MEMORY_LIMIT=2Gi\"", "") ",\"mounts\":["
                 MNT("/tmp/x", DEVS "/slice/memory=70Gi") "]}");
        assert_int_equal(req_oci(&rq, json), 0);
        EXPECT_STR(rq.opts.slice.memory, "2Gi", "a tmpfs slice mount");
        hc.accept_volume_mounts = false;
        snprintf(json, sizeof(json), PROC("\"GPUSLICE_MEMORY_LIMIT=2Gi\"", "") ",\"mounts\":["
                 MNT("/dev/null", DEVS "/slice/memory=1Gi") "]}");
        assert_int_equal(req_oci(&rq, json), 0);
        EXPECT_STR(rq.opts.slice.memory, "2Gi", "slice mounts on a host that takes no volume mounts");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(state_runc_and_crun),
                cmocka_unit_test(state_errors),
                cmocka_unit_test(config_parse),
                cmocka_unit_test_setup(visible_devices, setup_hc),
                cmocka_unit_test_setup(legacy_image, setup_hc),
                cmocka_unit_test_setup(capabilities, setup_hc),
                cmocka_unit_test_setup(requirements, setup_hc),
                cmocka_unit_test_setup(mig_and_imex, setup_hc),
                cmocka_unit_test_setup(slices, setup_hc),
                cmocka_unit_test_setup(priorities, setup_hc),
                cmocka_unit_test_setup(env_tightest_wins, setup_hc),
                cmocka_unit_test_setup(env_may_not_raise, setup_hc),
                cmocka_unit_test_setup(allocator_is_the_ceiling, setup_hc),
                cmocka_unit_test(slice_args),
                cmocka_unit_test(slice_gpus),
                cmocka_unit_test(hook_stages_and_ids),
                cmocka_unit_test(path_clean),
                cmocka_unit_test(device_mounts),
                cmocka_unit_test_setup(slice_mounts, setup_hc),
                cmocka_unit_test_setup(host_rules, setup_hc),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
