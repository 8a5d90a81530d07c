/* gpuslice dra-plugin: option parsing and printing; the plugin is src/dra (plugin.h). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "dra/apiversion.h"
#include "dra/plugin.h"
#include "driver/xidlog.h"
#include "runtime/hostconfig.h"

static const char help[] =
        "Usage: gpuslice [GLOBAL OPTIONS] dra-plugin [OPTIONS]\n"
        "\n"
        "A Kubernetes DRA driver's kubelet plugin (resource.k8s.io/v1, or v1beta2 where v1 is not served;\n"
        "the kubelet's DRA service v1 and v1beta1): publishes this node's GPUs and MIG devices as a ResourceSlice (a GPU's memory and\n"
        "compute as consumable capacity), registers with the kubelet's plugin watcher, and prepares each\n"
        "claim with a CDI spec of its own: a whole GPU, a MIG device, or a slice of a GPU (the memory\n"
        "and compute the claim consumes). Runs until SIGTERM or SIGINT (the ResourceSlice is kept: a\n"
        "restart or an upgrade leaves the node schedulable); progress lines go to standard error.\n"
        "\n"
        "  -c, --config=FILE         host config to read (default " GS_HOSTCONFIG_DEFAULT_PATH ", if any):\n"
        "                            [driver], and device-plugin.hook-path, host-root, sysfs, health-checks\n"
        "      --driver-name=NAME    the DRA driver name (default " GS_DRA_DEFAULT_DRIVER ")\n"
        "      --kubeconfig=FILE     the API server from a kubeconfig (default: in-cluster config)\n"
        "      --node=NAME           this node's name (default $NODE_NAME)\n"
        "      --cdi-dir=DIR         where claims' CDI specs go (default " GS_DRA_DEFAULT_CDI_DIR ")\n"
        "      --plugin-dir=DIR      the DRA socket and the checkpoint (default\n"
        "                            " GS_DRA_DEFAULT_PLUGINS "/<driver>)\n"
        "      --registry-dir=DIR    the kubelet's plugin registry (default " GS_DRA_DEFAULT_REGISTRY ")\n"
        "      --health-period=SECS  how often NVML is asked whether a GPU fell off the bus (default 5)\n"
        "      --health-recover=SECS an unhealthy device quiet (no critical XID) and answering NVML this\n"
        "                            long is healthy again: its taint goes (default 300, 0: never, until\n"
        "                            the plugin restarts)\n"
        "      --resync-period=SECS  how often the ResourceSlice is read back and, when deleted, published\n"
        "                            again (default 10)\n"
        "      --stale-period=SECS   how often prepared claims are looked up; one the API server no\n"
        "                            longer has is unprepared (default 600)\n"
        "      --status-period=SECS  how often each slice share's usage (memory in use and peak, GPU-time\n"
        "                            share, throttled time) may be written on its claim's status; also the\n"
        "                            GPU-time window (default 30, 0: off)\n"
        "      --metrics-listen=ADDR:PORT\n"
        "                            serve the plugin's own metrics (prepare and unprepare counts and\n"
        "                            durations, the claims prepared) at http://ADDR:PORT/metrics, e.g.\n"
        "                            :9395 or 127.0.0.1:9395; port 0 picks a free one (logged; default:\n"
        "                            none)\n"
        "      --kmsg=PATH           the kernel's log, where the NVIDIA driver names the process of an\n"
        "                            XID: an application XID (13, 31, 43, 45, 68, 109) of a slice's process\n"
        "                            marks that claim's share (a condition ApplicationError and an Event),\n"
        "                            not the GPU (default " GS_XIDLOG_DEFAULT "; '': off)\n"
        "      --api-version=VERSION resource.k8s.io's version: auto (default: v1 when the API server\n"
        "                            serves it, else v1beta2), v1, or v1beta2 (Kubernetes 1.33: no\n"
        "                            consumable capacity, so GPUs are allocated whole, no slices)\n"
        "      --instance-id=ID      sockets of this instance's own (default $POD_UID, else none), so\n"
        "                            that a new plugin registers beside the old one (rolling update)\n"
        "  -h, --help\n";

struct dra_cli {
        const char *config;
        struct gs_dra_opts o;
};

static int parse(struct dra_cli *d, int argc, char **argv)
{
        enum { O_DRIVER = 0x100, O_KUBECONFIG, O_NODE, O_CDI, O_PLUGIN, O_REGISTRY, O_HEALTH, O_RESYNC, O_STALE, O_INSTANCE, O_STATUS, O_METRICS, O_APIVER, O_KMSG, O_RECOVER };
        static const struct option opts[] = {
                {"config", required_argument, NULL, 'c'},
                {"driver-name", required_argument, NULL, O_DRIVER},
                {"kubeconfig", required_argument, NULL, O_KUBECONFIG},
                {"node", required_argument, NULL, O_NODE},
                {"cdi-dir", required_argument, NULL, O_CDI},
                {"plugin-dir", required_argument, NULL, O_PLUGIN},
                {"registry-dir", required_argument, NULL, O_REGISTRY},
                {"health-period", required_argument, NULL, O_HEALTH},
                {"health-recover", required_argument, NULL, O_RECOVER},
                {"resync-period", required_argument, NULL, O_RESYNC},
                {"stale-period", required_argument, NULL, O_STALE},
                {"instance-id", required_argument, NULL, O_INSTANCE},
                {"status-period", required_argument, NULL, O_STATUS},
                {"metrics-listen", required_argument, NULL, O_METRICS},
                {"api-version", required_argument, NULL, O_APIVER},
                {"kmsg", required_argument, NULL, O_KMSG},
                {"help", no_argument, NULL, 'h'},
                {0},
        };
        int c;
        while ((c = getopt_long(argc, argv, "+:c:h", opts, NULL)) != -1) {
                switch (c) {
                case 'c': d->config = optarg; break;
                case O_DRIVER: d->o.driver = optarg; break;
                case O_KUBECONFIG: d->o.kubeconfig = optarg; break;
                case O_NODE: d->o.node = optarg; break;
                case O_CDI: d->o.cdi_dir = optarg; break;
                case O_PLUGIN: d->o.plugin_dir = optarg; break;
                case O_REGISTRY: d->o.registry_dir = optarg; break;
                case O_HEALTH:
                case O_RESYNC:
                case O_STALE: {
                        unsigned *ms = c == O_HEALTH ? &d->o.health_period_ms
                                       : c == O_RESYNC ? &d->o.resync_period_ms : &d->o.stale_period_ms;
                        int rc = cli_parse_seconds("dra-plugin", c == O_HEALTH ? "--health-period" : c == O_RESYNC ? "--resync-period" : "--stale-period", optarg, ms);
                        if (rc != 0)
                                return rc;
                        break;
                }
                case O_RECOVER: {
                        int rc = cli_parse_recover("dra-plugin", optarg, &d->o.health_recover_ms, &d->o.health_recover_never);
                        if (rc != 0)
                                return rc;
                        break;
                }
                case O_INSTANCE: d->o.instance = optarg; break;
                case O_METRICS: d->o.metrics_listen = optarg; break;
                case O_KMSG: d->o.kmsg = optarg; break;
                case O_APIVER:
                        if (!gs_dra_api_version_valid(optarg))
                                return cli_usage_error("dra-plugin", "--api-version: '%s' is none of auto, v1, v1beta2", optarg);
                        d->o.api_version = optarg;
                        break;
                case O_STATUS:
                        d->o.status_off = strcmp(optarg, "0") == 0;
                        if (!d->o.status_off) {
                                int rc = cli_parse_seconds("dra-plugin", "--status-period", optarg, &d->o.status_period_ms);
                                if (rc != 0)
                                        return rc;
                        }
                        break;
                case 'h':
                        fputs(help, stdout);
                        return 0;
                case ':':
                        return cli_usage_error("dra-plugin", "option '%s' needs a value", argv[optind - 1]);
                default:
                        return cli_usage_error("dra-plugin", "unknown option '%s'", argv[optind - 1]);
                }
        }
        if (optind < argc)
                return cli_usage_error("dra-plugin", "unexpected argument '%s'", argv[optind]);
        return -1;
}

int cmd_dra_plugin(const struct cli_globals *g, int argc, char **argv)
{
        struct dra_cli d = {0};
        int rv = parse(&d, argc, argv);
        if (rv >= 0)
                return rv;
        struct gs_hostconfig *hc;
        struct gs_context *ctx = cli_open_host_context(g, d.config, &hc, &rv);
        if (ctx == NULL)
                return rv;
        d.o.hc = hc;
        d.o.ctx = ctx;
        d.o.note = cli_note_line;
        d.o.ud = (void *)"dra-plugin";
        struct gs_error err = {0};
        rv = 0;
        if (gs_dra_plugin_run(&d.o, &err) < 0) {
                cli_error(err.stage != NULL ? err.stage : "dra-plugin", "%s", err.msg);
                rv = CLI_EXIT_FAILURE;
        }
        gs_context_free(ctx);
        free(hc);
        return rv;
}
