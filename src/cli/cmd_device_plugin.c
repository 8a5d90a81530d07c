/* gpuslice device-plugin: option parsing and printing; the plugin is src/k8s (plugin.h). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "k8s/plugin.h"
#include "runtime/hostconfig.h"

static const char help[] =
        "Usage: gpuslice [GLOBAL OPTIONS] device-plugin [OPTIONS]\n"
        "\n"
        "A Kubernetes device plugin (kubelet API v1beta1): offers this node's GPUs, MIG devices and GPU\n"
        "slices as extended resources, registers with the kubelet (again after it restarts), reports\n"
        "device health from NVML's XID events, and answers Allocate with CDI device names (its own CDI\n"
        "spec, written at start) or, for runtimes without CDI, the environment `gpuslice hook` reads.\n"
        "Runs until SIGTERM or SIGINT; progress lines go to standard error.\n"
        "\n"
        "What is offered and how is the host config's [device-plugin] section (with [driver] and\n"
        "[slice]); every key and its default: " GS_HOSTCONFIG_DEFAULT_PATH " as packaging/config.toml\n"
        "shows it. E.g. slices = [\"gpu-4g-25=4Gi,25\"] offers gpuslice.io/gpu-4g-25, each GPU as\n"
        "shares of 4 GiB and 25 % of its time.\n"
        "\n"
        "  -c, --config=FILE         host config to read (default " GS_HOSTCONFIG_DEFAULT_PATH ", if any)\n"
        "      --health-period=SECS  how often NVML is asked whether a GPU fell off the bus, between\n"
        "                            events (default 5)\n"
        "      --health-recover=SECS an unhealthy device quiet (no critical XID) and answering NVML this\n"
        "                            long is Healthy again (default 300, 0: never, until the plugin\n"
        "                            restarts)\n"
        "  -h, --help\n";

struct dp_cli {
        const char *config;
        unsigned health_period_ms, health_recover_ms;
        bool recover_never;
};

static int parse(struct dp_cli *d, int argc, char **argv)
{
        enum { O_HEALTH = 0x100, O_RECOVER };
        static const struct option opts[] = {
                {"config", required_argument, NULL, 'c'},
                {"health-period", required_argument, NULL, O_HEALTH},
                {"health-recover", required_argument, NULL, O_RECOVER},
                {"help", no_argument, NULL, 'h'},
                {0},
        };
        int c;
        while ((c = getopt_long(argc, argv, "+:c:h", opts, NULL)) != -1) {
                switch (c) {
                case 'c':
                        d->config = optarg;
                        break;
                case O_HEALTH: {
                        int rc = cli_parse_seconds("device-plugin", "--health-period", optarg, &d->health_period_ms);
                        if (rc != 0)
                                return rc;
                        break;
                }
                case O_RECOVER: {
                        int rc = cli_parse_recover("device-plugin", optarg, &d->health_recover_ms, &d->recover_never);
                        if (rc != 0)
                                return rc;
                        break;
                }
                case 'h':
                        fputs(help, stdout);
                        return 0;
                case ':':
                        return cli_usage_error("device-plugin", "option '%s' needs a value", argv[optind - 1]);
                default:
                        return cli_usage_error("device-plugin", "unknown option '%s'", argv[optind - 1]);
                }
        }
        if (optind < argc)
                return cli_usage_error("device-plugin", "unexpected argument '%s'", argv[optind]);
        return -1;
}

int cmd_device_plugin(const struct cli_globals *g, int argc, char **argv)
{
        struct dp_cli d = {0};
        int rv = parse(&d, argc, argv);
        if (rv >= 0)
                return rv;
        struct gs_hostconfig *hc;
        struct gs_context *ctx = cli_open_host_context(g, d.config, &hc, &rv);
        if (ctx == NULL)
                return rv;
        struct gs_k8s_opts o = {.hc = hc, .ctx = ctx, .health_period_ms = d.health_period_ms,
                                .health_recover_ms = d.health_recover_ms, .health_recover_never = d.recover_never, .note = cli_note_line,
                                .ud = (void *)"device-plugin"};
        struct gs_error err = {0};
        rv = 0;
        if (gs_k8s_plugin_run(&o, &err) < 0) {
                cli_error(err.stage != NULL ? err.stage : "device-plugin", "%s", err.msg);
                rv = CLI_EXIT_FAILURE;
        }
        gs_context_free(ctx);
        free(hc);
        return rv;
}
