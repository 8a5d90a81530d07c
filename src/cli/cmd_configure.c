/* gpuslice configure [OPTIONS] ROOTFS: the selected GPUs and the driver into a container. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/strutil.h"
#include "runtime/hostconfig.h"
#include "runtime/mps.h"
#include "runtime/slice_rules.h"

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
        "\n"
        "A GPU slice (libgpuslice-vgpu.so is preloaded into every process of the container):\n"
        "      --memory=SIZE         memory quota per visible device (K/M/G/T or Ki/Mi/Gi/Ti)\n"
        "      --memory-<i>=SIZE     quota of visible device i (wins over --memory)\n"
        "      --compute-share=PCT   compute share per visible device, 1..100 (100: unlimited)\n"
        "      --compute-share-<i>=PCT share of visible device i (wins over --compute-share)\n"
        "      --compute-mode=MODE   cap (default: never above the share), share (borrow idle\n"
        "                            time), off\n"
        "      --priority=PRIORITY   high, normal (default) or low: the order in which\n"
        "                            compute-limited slices get the GPU (no effect without a share)\n"
        "      --slice-id=ID         names the slice's host directory (default pid-<PID>)\n"
        "      --container-user=UID[:GID]  the container's process user, as numbers seen in the\n"
        "                            container (config.json's process.user; GID default: UID): its\n"
        "                            usage region and arbiter records are that user's and group's\n"
        "                            (0660), through the container's uid/gid map (default: the\n"
        "                            owner of the container process, its root)\n"
        "      --regions-dir=DIR     where slice directories live (default " GS_SLICE_REGIONS_DIR "; the GPUs'\n"
        "                            arbiter directories are in DIR/../arbiter)\n"
        "      --mps=MODE            off, auto or on: a cap slice on one GPU through the GPU's MPS\n"
        "                            daemon (see gpuslice.conf(5), slice.mps); default: the host\n"
        "                            config's slice.mps\n"
        "      --mps-root=DIR        where the GPUs' MPS daemons are (default: slice.mps-root)\n"
        "      --config=FILE         the host config for slice.mps and slice.mps-root (default\n"
        "                            /etc/gpuslice/config.toml; read for a compute slice only)\n"
        "  -h, --help\n"
        "\n"
        "Errors: 'gpuslice: <stage> error: <message>' with nvidia-container-cli's stage names.\n";

enum { O_COMPAT32 = 0x100, O_MIGCONF, O_MIGMON, O_IMEX, O_NOCG, O_NODEVBIND, O_NOPERS, O_NOFM, O_NOGSP, O_COMPAT,
       O_SLICEID, O_REGIONS, O_MPSROOT, O_MPS, O_CONFIG, O_CUSER };

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
        {"mps-root", required_argument, NULL, O_MPSROOT},
        {"mps", required_argument, NULL, O_MPS},
        {"config", required_argument, NULL, O_CONFIG},
        {"slice-id", required_argument, NULL, O_SLICEID},
        {"regions-dir", required_argument, NULL, O_REGIONS},
        {"container-user", required_argument, NULL, O_CUSER},
        {"help", no_argument, NULL, 'h'},
        {0},
};

/* What the command line asks for; the strings of `o` point into argv and the lists here. */
struct args {
        struct gs_configure_opts o;
        const char *requires[GS_MAX_REQUIRES];
        char *devices, *imex;
        char **argv; /* argv without the slice's options (runtime/slice_rules.h) */
        const char *config;
        struct gs_hostconfig hc; /* slice.mps and slice.mps-root, when --mps or --mps-root are not given */
};

/* One option (not the slice's sizes or the ones that only set a flag); -1 to go on, else the
 * exit code. */
static int take_option(struct args *a, int c, char **argv)
{
        struct gs_configure_opts *o = &a->o;
        unsigned long long pid;
        switch (c) {
        case 'p':
                if (gs_parse_uint(optarg, 0x3fffffff, &pid) < 0 || pid == 0)
                        return cli_usage_error("configure", "invalid --pid: %s", optarg);
                o->pid = (pid_t)pid;
                return -1;
        case 'd':
        case O_IMEX:
                if (cli_join(c == 'd' ? &a->devices : &a->imex, optarg) < 0) {
                        cli_error("input", "out of memory");
                        return CLI_EXIT_FAILURE;
                }
                return -1;
        case 'r':
                if (o->nrequires >= GS_MAX_REQUIRES) {
                        cli_error("requirement", "too many requirements");
                        return CLI_EXIT_FAILURE;
                }
                a->requires[o->nrequires++] = optarg;
                return -1;
        case O_COMPAT:
                if (strcmp(optarg, "ldconfig") == 0)
                        o->compat_mode = GS_COMPAT_LDCONFIG;
                else if (strcmp(optarg, "mount") == 0)
                        o->compat_mode = GS_COMPAT_MOUNT;
                else if (strcmp(optarg, "disabled") == 0)
                        o->compat_mode = GS_COMPAT_DISABLED;
                else
                        return cli_usage_error("configure", "invalid --cuda-compat-mode: %s", optarg);
                return -1;
        case O_REGIONS:
                if (optarg[0] != '/')
                        return cli_usage_error("configure", "--regions-dir must be an absolute path: %s", optarg);
                o->slice.regions_dir = optarg;
                return -1;
        case O_MPSROOT:
                if (optarg[0] != '/')
                        return cli_usage_error("configure", "--mps-root must be an absolute path: %s", optarg);
                o->slice.mps_root = optarg;
                return -1;
        case O_MPS:
                if (gs_mps_mode_parse(optarg) < 0 || optarg[0] == '\0')
                        return cli_usage_error("configure", "invalid --mps: %s (off, auto or on)", optarg);
                o->slice.mps = optarg;
                return -1;
        case O_CONFIG:
                a->config = optarg;
                return -1;
        case O_CUSER: {
                /* numbers only: a name would be looked up in the host's databases, not the image's */
                unsigned long long u, g;
                char *colon = strchr(optarg, ':');
                if (colon != NULL)
                        *colon = '\0';
                bool bad = gs_parse_uint(optarg, 0xfffffffeull, &u) < 0 ||
                           (colon != NULL && gs_parse_uint(colon + 1, 0xfffffffeull, &g) < 0);
                if (colon != NULL)
                        *colon = ':';
                if (bad)
                        return cli_usage_error("configure", "invalid --container-user: %s (UID[:GID], numbers)", optarg);
                o->slice.user_uid = (uid_t)u;
                o->slice.user_gid = (gid_t)(colon != NULL ? g : u);
                o->slice.user_set = true;
                return -1;
        }
        case 'h':
                fputs(configure_help, stdout);
                return 0;
        case ':':
                return cli_usage_error("configure", "option '%s' needs a value", argv[optind - 1]);
        default:
                return cli_usage_error("configure", "unknown option '%s'", argv[optind - 1]);
        }
}

/* Parse the command line into a; -1 to go on, else the exit code. */
static int parse_args(struct args *a, int argc, char **argv)
{
        struct gs_configure_opts *o = &a->o;
        /* the slice's options: one parser for configure and the hook (runtime/slice_rules.h) */
        a->argv = calloc((size_t)argc + 1, sizeof(char *));
        if (a->argv == NULL) {
                cli_error("input", "out of memory");
                return CLI_EXIT_FAILURE;
        }
        struct gs_error err = {0};
        unsigned given;
        argc = gs_slice_args_take(argc, argv, a->argv, &o->slice, &given, &err);
        if (argc < 0)
                return cli_usage_error("configure", "%s", err.msg);
        argv = a->argv;
        int c;
        while ((c = getopt_long(argc, argv, "+:p:d:r:l:cuvgDnh", opts, NULL)) != -1) {
                switch (c) {
                case 'l': o->ldconfig = optarg; break;
                case 'c': o->caps |= GS_CAP_COMPUTE; break;
                case 'u': o->caps |= GS_CAP_UTILITY; break;
                case 'v': o->caps |= GS_CAP_VIDEO; break;
                case 'g': o->caps |= GS_CAP_GRAPHICS; break;
                case 'D': o->caps |= GS_CAP_DISPLAY; break;
                case 'n': o->caps |= GS_CAP_NGX; break;
                case O_COMPAT32: o->caps |= GS_CAP_COMPAT32; break;
                case O_MIGCONF: o->mig_config = optarg; break;
                case O_MIGMON: o->mig_monitor = optarg; break;
                case O_NOCG: o->no_cgroups = true; break;
                case O_NODEVBIND: o->no_devbind = true; break;
                case O_NOPERS: o->drvopts |= GS_DRV_NO_PERSISTENCED; break;
                case O_NOFM: o->drvopts |= GS_DRV_NO_FABRICMANAGER; break;
                case O_NOGSP: o->drvopts |= GS_DRV_NO_GSP_FIRMWARE; break;
                case O_SLICEID: o->slice.container_id = optarg; break;
                default: {
                        int rc = take_option(a, c, argv);
                        if (rc >= 0)
                                return rc;
                }
                }
        }
        if (optind != argc - 1)
                return cli_usage_error("configure", optind >= argc ? "missing ROOTFS" : "unexpected argument '%s'",
                                       optind < argc ? argv[optind + 1] : "");
        o->rootfs = argv[optind];
        if (o->rootfs[0] != '/' || strspn(o->rootfs, "/") == strlen(o->rootfs)) {
                cli_error("input", "invalid rootfs directory");
                return CLI_EXIT_FAILURE;
        }
        o->devices = a->devices;
        o->imex_channels = a->imex;
        o->requires = a->requires;
        return -1;
}

/* slice.mps and slice.mps-root of the host config, where the options do not say (a compute
 * slice only: nothing else reads them). -1 after printing the config's error. */
static int mps_from_config(struct args *a)
{
        struct gs_slice_opts *s = &a->o.slice;
        if ((s->mps != NULL && s->mps_root != NULL) || gs_mps_slice_share(s, "GPU-") == 0)
                return 0;
        struct gs_error err = {0};
        if (gs_hostconfig_load(&a->hc, a->config, &err) < 0) {
                cli_error("config", "%s", err.msg);
                return -1;
        }
        if (s->mps == NULL)
                s->mps = a->hc.mps;
        if (s->mps_root == NULL)
                s->mps_root = a->hc.mps_root;
        return 0;
}

int cmd_configure(const struct cli_globals *g, int argc, char **argv)
{
        struct args a = {.o = {.compat_mode = GS_COMPAT_LDCONFIG}};
        int rv = parse_args(&a, argc, argv);
        if (rv < 0) {
                a.o.no_pivot = g->no_pivot;
                struct gs_error err = {0};
                struct gs_context *ctx = mps_from_config(&a) == 0 ? cli_open_context(g) : NULL;
                rv = CLI_EXIT_FAILURE;
                if (ctx != NULL && gs_configure(ctx, &a.o, &err) < 0)
                        cli_error(err.stage != NULL ? err.stage : "configure", "%s", err.msg);
                else if (ctx != NULL)
                        rv = 0;
                gs_context_free(ctx);
        }
        free(a.devices);
        free(a.imex);
        free(a.argv);
        return rv;
}
