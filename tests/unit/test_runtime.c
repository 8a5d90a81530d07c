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

static int req(struct gs_request *rq, struct gs_error *err, bool privileged, ...)
{
        char *env[64];
        size_t n = 0;
        va_list ap;
        va_start(ap, privileged);
        for (const char *e; (e = va_arg(ap, const char *)) != NULL && n < 64;)
                env[n++] = (char *)e;
        va_end(ap);
        env[n] = NULL;
        memset(err, 0, sizeof(*err));
        return gs_request_from_env(rq, env, n, privileged, &hc, err);
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
        /* HAMi's names; ours win */
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
 * read as the compute mode is, ours winning; the slice gets the word. */
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
                if (req(&rq, &err, false, "GPUSLICE_COMPUTE_LIMIT=30", good[i].var, NULL) != 0)
                        fail_msg("%s: %s", good[i].var, err.msg);
                if (rq.opts.slice.priority == NULL || strcmp(rq.opts.slice.priority, good[i].want) != 0)
                        fail_msg("%s: priority %s, want %s", good[i].var, rq.opts.slice.priority ? rq.opts.slice.priority : "(null)",
                                 good[i].want);
        }
        /* ours wins over HAMi's; unset or empty: none (the interposer's default, normal) */
        assert_int_equal(req(&rq, &err, false, "GPUSLICE_COMPUTE_LIMIT=30", "CUDA_TASK_PRIORITY=0", "GPUSLICE_PRIORITY=low",
                             NULL), 0);
        assert_string_equal(rq.opts.slice.priority, "low");
        assert_int_equal(req(&rq, &err, false, "GPUSLICE_COMPUTE_LIMIT=30", NULL), 0);
        assert_null(rq.opts.slice.priority);
        assert_int_equal(req(&rq, &err, false, "GPUSLICE_COMPUTE_LIMIT=30", "GPUSLICE_PRIORITY=", NULL), 0);
        assert_null(rq.opts.slice.priority);
        /* a priority alone makes no slice (it orders compute-limited slices), as a mode alone */
        assert_int_equal(req(&rq, &err, false, "NVIDIA_VISIBLE_DEVICES=0", "GPUSLICE_PRIORITY=high", NULL), 0);
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
        int r = gs_request_from_oci(rq, &cfg, &hc, &err);
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
                cmocka_unit_test(hook_stages_and_ids),
                cmocka_unit_test(path_clean),
                cmocka_unit_test(device_mounts),
                cmocka_unit_test_setup(host_rules, setup_hc),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
