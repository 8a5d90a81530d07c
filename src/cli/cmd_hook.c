/* gpuslice hook STAGE (and gpuslice-hook STAGE, nvidia-container-runtime-hook STAGE: the lean
 * executable, src/cli/hook_main.c): an OCI runtime hook. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/cleanup.h"
#include "common/log.h"
#include "runtime/hook.h"
#include "runtime/hostconfig.h"
#include "runtime/slice_gpus.h"
#include "runtime/slice_rules.h"
#include "slice/slice.h"

static const char hook_help[] =
        "Usage: gpuslice [GLOBAL OPTIONS] hook [--config FILE] [SLICE OPTIONS] STAGE\n"
        "       gpuslice-hook [--config FILE] [SLICE OPTIONS] STAGE\n"
        "       nvidia-container-runtime-hook STAGE\n"
        "       gpuslice-hook create-symlinks|update-ldcache ...  (gpuslice cdi-hook's commands)\n"
        "\n"
        "An OCI runtime hook: reads the container state on stdin, loads <bundle>/config.json and\n"
        "gives the container what its environment asks for, through the configure pipeline:\n"
        "  NVIDIA_VISIBLE_DEVICES, NVIDIA_DRIVER_CAPABILITIES, NVIDIA_REQUIRE_*, NVIDIA_DISABLE_REQUIRE,\n"
        "  NVIDIA_MIG_CONFIG_DEVICES, NVIDIA_MIG_MONITOR_DEVICES (privileged only), NVIDIA_IMEX_CHANNELS\n"
        "  (as nvidia-container-runtime-hook reads them), and a GPU slice:\n"
        "  GPUSLICE_MEMORY_LIMIT[_<i>] / CUDA_DEVICE_MEMORY_LIMIT[_<i>], the compute share\n"
        "  GPUSLICE_COMPUTE_LIMIT[_<i>] / CUDA_DEVICE_SM_LIMIT[_<i>] (percent) and its mode\n"
        "  GPUSLICE_COMPUTE_MODE / GPU_CORE_UTILIZATION_POLICY (cap|force, share|default, off|disable)\n"
        "  and its priority GPUSLICE_PRIORITY / CUDA_TASK_PRIORITY (high|0, normal|1, low|2 or more).\n"
        "  Of all these names the tightest value wins; mode off and priority high need the host's\n"
        "  slice.env-may-raise or a privileged container.\n"
        "\n"
        "SLICE OPTIONS: the allocator's slice (a CDI slice device's hook, before or after STAGE),\n"
        "checked as configure checks them. Any of them given: they are the container's ceiling, and\n"
        "its env can only narrow them (less memory or compute, cap for share, a lower priority);\n"
        "wider env values are ignored (and logged).\n"
        "      --memory=SIZE  --memory-<i>=SIZE  (a per-device value wins over --memory)\n"
        "      --compute-share=PCT  --compute-share-<i>=PCT  (1..100)\n"
        "      --compute-mode=cap|share|off (default cap)  --priority=high|normal|low (default normal)\n"
        "      --gpu=UUID   the limits are this GPU's (GPU-) or MIG device's (MIG-) only (a DRA\n"
        "                   claim's slice device): the slice of every such hook in config.json,\n"
        "                   each GPU its own (the tightest where two name one GPU), the narrowest\n"
        "                   mode and priority, GPUs none names unlimited\n"
        "\n"
        "STAGE: prestart or createRuntime (configure the container: same semantics), poststart\n"
        "(nothing), poststop (remove the container's slice directory). Every run also removes the\n"
        "slice directories of containers that are gone.\n"
        "\n"
        "  -c, --config=FILE   host defaults (default " GS_HOSTCONFIG_DEFAULT_PATH "; see gpuslice.conf):\n"
        "                      driver root, ldconfig, no-cgroups, default capabilities, log file ...\n"
        "                      Global options given on the command line win over it.\n"
        "      --driver-root=DIR\n"
        "                      the driver root as this host sees it, over the config's driver.root\n"
        "                      (a DRA claim's CDI device gives the one its mounts come from, where\n"
        "                      that is not /: a slice hook of several GPUs reads them there)\n"
        "      --k8s-claim=NAME, --k8s-namespace=NAMESPACE, --k8s-pod=NAME\n"
        "                      the slice's labels for metrics, top and `slice set NAMESPACE/POD`\n"
        "                      where the runtime's CRI annotations name none (a DRA claim's CDI\n"
        "                      device gives them); never read from the container's env\n"
        "  -h, --help\n"
        "\n"
        "gpuslice-hook (and nvidia-container-runtime-hook, a link to it) is this hook in an\n"
        "executable that loads only what the hooks use; it takes no global options (the host\n"
        "config gives the driver root and the rest). The hooks gpuslice writes name it.\n"
        "\n"
        "The hook and everything it starts run with a fixed minimal environment: nothing in its\n"
        "environment (which some runtimes take from the image) is used. Errors go to stderr as\n"
        "'gpuslice: <stage> error: <message>' and fail the container's start.\n";

/* NVIDIA's hook takes Go-style flags (-config FILE, -debug) before the stage: skip them. */
static int nvidia_args(int argc, char **argv, const char **stage)
{
        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-help") == 0) {
                        fputs(hook_help, stdout);
                        return 1;
                }
                if ((strcmp(argv[i], "-config") == 0 || strcmp(argv[i], "--config") == 0) && i + 1 < argc) {
                        i++; /* NVIDIA's TOML: not ours; /etc/gpuslice/config.toml applies */
                        continue;
                }
                if (argv[i][0] == '-')
                        continue;
                if (*stage != NULL)
                        return cli_usage_error("hook", "unexpected argument '%s'", argv[i]);
                *stage = argv[i];
        }
        return 0;
}

int cmd_hook(const struct cli_globals *g, int argc, char **argv)
{
        static const struct option opts[] = {
                {"config", required_argument, NULL, 'c'},
                {"help", no_argument, NULL, 'h'},
                {"k8s-claim", required_argument, NULL, 'K'},
                {"k8s-namespace", required_argument, NULL, 'N'},
                {"k8s-pod", required_argument, NULL, 'P'},
                {"driver-root", required_argument, NULL, 'R'},
                {0},
        };
        const char *config = NULL, *stage_name = NULL, *driver_root = NULL;
        struct gs_hook_opts h = {.state_fd = 0};
        struct gs_slice_labels labels = {0};
        int c;
        /* the allocator's slice options (a CDI slice device's hook args), before or after STAGE */
        gs_autofree char **av = calloc((size_t)argc + 1, sizeof(char *));
        struct gs_error aerr = {0};
        unsigned given = 0;
        if (av == NULL) {
                cli_error("hook", "out of memory");
                return CLI_EXIT_FAILURE;
        }
        argc = gs_slice_gpu_take(argc, argv, av, &h.alloc_gpu, &aerr);
        if (argc >= 0)
                argc = gs_slice_args_take(argc, av, av, &h.alloc, &given, &aerr);
        if (argc < 0)
                return cli_usage_error("hook", "%s", aerr.msg);
        argv = av;
        h.alloc_given = given > 0 || h.alloc_gpu != NULL;
        if (g->from_nvidia_name) {
                int rc = nvidia_args(argc, argv, &stage_name);
                if (rc != 0)
                        return rc == 1 ? 0 : rc;
        } else {
                while ((c = getopt_long(argc, argv, "+:c:h", opts, NULL)) != -1) {
                        switch (c) {
                        case 'c': config = optarg; break;
                        case 'h': fputs(hook_help, stdout); return 0;
                        case 'R':
                                if (optarg[0] != '/')
                                        return cli_usage_error("hook", "--driver-root: '%s' is not an absolute path", optarg);
                                driver_root = optarg;
                                break;
                        case 'K': case 'N': case 'P': {
                                char *dst = c == 'K' ? labels.claim : c == 'N' ? labels.ns : labels.pod;
                                if (!gs_slice_label_valid(optarg))
                                        return cli_usage_error("hook", "'%s' is not a Kubernetes name ([a-z0-9.-])",
                                                               optarg);
                                snprintf(dst, GS_SLICE_LABEL_MAX, "%s", optarg);
                                break;
                        }
                        case ':': return cli_usage_error("hook", "option '%s' needs a value", argv[optind - 1]);
                        default: return cli_usage_error("hook", "unknown option '%s'", argv[optind - 1]);
                        }
                }
                if (optind < argc)
                        stage_name = argv[optind++];
                if (optind < argc)
                        return cli_usage_error("hook", "unexpected argument '%s'", argv[optind]);
        }
        if (stage_name == NULL)
                return cli_usage_error("hook", "missing STAGE (prestart, createRuntime, poststart or poststop)");
        h.labels = labels;
        if (gs_hook_stage_parse(stage_name, &h.stage) < 0)
                return cli_usage_error("hook", "unknown STAGE '%s' (prestart, createRuntime, poststart or poststop)",
                                       stage_name);
        cli_hook_environment("hook");

        struct gs_hostconfig hc;
        struct gs_error err = {0};
        if (gs_hostconfig_load(&hc, config, &err) < 0) {
                cli_error("config", "%s", err.msg);
                return CLI_EXIT_FAILURE;
        }
        setenv("PATH", hc.path, 1); /* where the driver's binaries are looked for, in the root */
        if (g->debug == NULL && hc.log_file[0] != '\0' && gs_log_open(hc.log_file) < 0)
                cli_warn("cannot open the hook's log file %s", hc.log_file);
        struct cli_globals eff = *g;
        if (!g->user_set && hc.user[0] != '\0') {
                int rc = cli_parse_user(&eff, hc.user);
                if (rc != 0)
                        return rc;
        }
        h.hc = &hc;
        h.ctx = (struct gs_config){
                .root = g->root_set ? g->root : driver_root != NULL ? driver_root : hc.root,
                .ldcache = g->ldcache_set ? g->ldcache : hc.ldcache,
                .uid = eff.uid,
                .gid = eff.gid,
                .nvml_timeout_ms = g->timeout_set ? g->nvml_timeout_ms : hc.nvml_timeout_s * 1000,
        };
        h.load_kmods = g->load_kmods || hc.load_kmods;
        h.no_pivot = g->no_pivot;
        if (gs_hook_run(&h, &err) < 0) {
                cli_error(err.stage != NULL ? err.stage : "hook", "%s", err.msg);
                return CLI_EXIT_FAILURE;
        }
        return 0;
}
