/* gpuslice configure [OPTIONS] ROOTFS: the selected GPUs and the driver into a container. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/strutil.h"

static const char configure_help[] =
        "Usage: gpuslice [GLOBAL OPTIONS] configure [OPTIONS] ROOTFS\n"
        "\n"
        "Make the selected GPUs and the driver's files usable in a container whose rootfs is\n"
        "ROOTFS (absolute, as seen in the container's mount namespace, before pivot_root: the host\n"
        "filesystem must still be reachable there, as in an OCI prestart hook). Everything or\n"
        "nothing: on any failure every mount and node already made is undone.\n"
        "\n"
        "  -p, --pid=PID             the container's init process (supervised mode); without it\n"
        "                            gpuslice works in its own mount namespace (standalone)\n"
        "  -d, --device=LIST         GPUs / MIG devices (repeatable), as for `list`; default none\n"
        "  -r, --require=EXPR        requirement to check first (repeatable, at most 32)\n"
        "  -l, --ldconfig=PATH       ldconfig to run: @/host/path (copied into a sealed memfd) or a\n"
        "                            container path; default @/sbin/ldconfig(.real)\n"
        "  -c, --compute  -u, --utility  -v, --video  -g, --graphics  -D, --display  -n, --ngx\n"
        "      --compat32            driver capabilities to mount\n"
        "      --mig-config=all      the MIG configuration capability (privileged containers)\n"
        "      --mig-monitor=all     the MIG monitoring capability\n"
        "      --imex-channel=LIST   IMEX channel ids (< 2^20)\n"
        "      --no-cgroups          leave the device cgroup alone\n"
        "      --no-devbind          do not bind-mount device nodes (the caller creates them)\n"
        "      --no-persistenced, --no-fabricmanager, --no-gsp-firmware\n"
        "      --cuda-compat-mode=disabled|mount|ldconfig   (default ldconfig)\n"
        "  -h, --help\n"
        "\n"
        "Errors: 'gpuslice: <stage> error: <message>' with nvidia-container-cli's stage names.\n";

int cmd_configure(const struct cli_globals *g, int argc, char **argv)
{
        enum { O_COMPAT32 = 0x100, O_MIGCONF, O_MIGMON, O_IMEX, O_NOCG, O_NODEVBIND, O_NOPERS, O_NOFM, O_NOGSP, O_COMPAT };
        static const struct option opts[] = {
                {"pid", required_argument, NULL, 'p'},
                {"device", required_argument, NULL, 'd'},
                {"require", required_argument, NULL, 'r'},
                {"ldconfig", required_argument, NULL, 'l'},
                {"compute", no_argument, NULL, 'c'},
                {"utility", no_argument, NULL, 'u'},
                {"video", no_argument, NULL, 'v'},
                {"graphics", no_argument, NULL, 'g'},
                {"display", no_argument, NULL, 'D'},
                {"ngx", no_argument, NULL, 'n'},
                {"compat32", no_argument, NULL, O_COMPAT32},
                {"mig-config", required_argument, NULL, O_MIGCONF},
                {"mig-monitor", required_argument, NULL, O_MIGMON},
                {"imex-channel", required_argument, NULL, O_IMEX},
                {"no-cgroups", no_argument, NULL, O_NOCG},
                {"no-devbind", no_argument, NULL, O_NODEVBIND},
                {"no-persistenced", no_argument, NULL, O_NOPERS},
                {"no-fabricmanager", no_argument, NULL, O_NOFM},
                {"no-gsp-firmware", no_argument, NULL, O_NOGSP},
                {"cuda-compat-mode", required_argument, NULL, O_COMPAT},
                {"help", no_argument, NULL, 'h'},
                {0},
        };
        struct gs_configure_opts o = {.compat_mode = GS_COMPAT_LDCONFIG};
        const char *requires[GS_MAX_REQUIRES];
        char *devices = NULL, *imex = NULL;
        int c, rv = CLI_EXIT_USAGE;
        unsigned long long pid;
        while ((c = getopt_long(argc, argv, "+:p:d:r:l:cuvgDnh", opts, NULL)) != -1) {
                switch (c) {
                case 'p':
                        if (gs_parse_uint(optarg, 0x3fffffff, &pid) < 0 || pid == 0) {
                                rv = cli_usage_error("configure", "invalid --pid: %s", optarg);
                                goto done;
                        }
                        o.pid = (pid_t)pid;
                        break;
                case 'd':
                        if (cli_join(&devices, optarg) < 0)
                                goto nomem;
                        break;
                case 'r':
                        if (o.nrequires >= GS_MAX_REQUIRES) {
                                cli_error("requirement", "too many requirements");
                                rv = CLI_EXIT_FAILURE;
                                goto done;
                        }
                        requires[o.nrequires++] = optarg;
                        break;
                case 'l': o.ldconfig = optarg; break;
                case 'c': o.caps |= GS_CAP_COMPUTE; break;
                case 'u': o.caps |= GS_CAP_UTILITY; break;
                case 'v': o.caps |= GS_CAP_VIDEO; break;
                case 'g': o.caps |= GS_CAP_GRAPHICS; break;
                case 'D': o.caps |= GS_CAP_DISPLAY; break;
                case 'n': o.caps |= GS_CAP_NGX; break;
                case O_COMPAT32: o.caps |= GS_CAP_COMPAT32; break;
                case O_MIGCONF: o.mig_config = optarg; break;
                case O_MIGMON: o.mig_monitor = optarg; break;
                case O_IMEX:
                        if (cli_join(&imex, optarg) < 0)
                                goto nomem;
                        break;
                case O_NOCG: o.no_cgroups = true; break;
                case O_NODEVBIND: o.no_devbind = true; break;
                case O_NOPERS: o.drvopts |= GS_DRV_NO_PERSISTENCED; break;
                case O_NOFM: o.drvopts |= GS_DRV_NO_FABRICMANAGER; break;
                case O_NOGSP: o.drvopts |= GS_DRV_NO_GSP_FIRMWARE; break;
                case O_COMPAT:
                        if (strcmp(optarg, "ldconfig") == 0)
                                o.compat_mode = GS_COMPAT_LDCONFIG;
                        else if (strcmp(optarg, "mount") == 0)
                                o.compat_mode = GS_COMPAT_MOUNT;
                        else if (strcmp(optarg, "disabled") == 0)
                                o.compat_mode = GS_COMPAT_DISABLED;
                        else {
                                rv = cli_usage_error("configure", "invalid --cuda-compat-mode: %s", optarg);
                                goto done;
                        }
                        break;
                case 'h':
                        fputs(configure_help, stdout);
                        rv = 0;
                        goto done;
                case ':':
                        rv = cli_usage_error("configure", "option '%s' needs a value", argv[optind - 1]);
                        goto done;
                default:
                        rv = cli_usage_error("configure", "unknown option '%s'", argv[optind - 1]);
                        goto done;
                }
        }
        if (optind != argc - 1) {
                rv = cli_usage_error("configure", optind >= argc ? "missing ROOTFS" : "unexpected argument '%s'",
                                     optind < argc ? argv[optind + 1] : "");
                goto done;
        }
        o.rootfs = argv[optind];
        if (o.rootfs[0] != '/' || strspn(o.rootfs, "/") == strlen(o.rootfs)) {
                cli_error("input", "invalid rootfs directory");
                rv = CLI_EXIT_FAILURE;
                goto done;
        }
        o.devices = devices;
        o.imex_channels = imex;
        o.requires = requires;
        o.no_pivot = g->no_pivot;

        struct gs_error err = {0};
        struct gs_context *ctx = cli_open_context(g);
        if (ctx == NULL) {
                rv = CLI_EXIT_FAILURE;
                goto done;
        }
        if (gs_configure(ctx, &o, &err) < 0) {
                cli_error(err.stage != NULL ? err.stage : "configure", "%s", err.msg);
                rv = CLI_EXIT_FAILURE;
        } else {
                rv = 0;
        }
        gs_context_free(ctx);
        goto done;
nomem:
        cli_error("input", "out of memory");
        rv = CLI_EXIT_FAILURE;
done:
        free(devices);
        free(imex);
        return rv;
}
