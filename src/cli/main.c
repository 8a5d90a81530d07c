/* gpuslice: global options, then one verb. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/log.h"
#include "common/privilege.h"
#include "gs_commit.h"

static const char global_help[] =
        "Usage: gpuslice [GLOBAL OPTIONS] COMMAND [OPTIONS] [ARGS]\n"
        "\n"
        "Give Linux containers NVIDIA GPUs (the nvidia-container-cli contract).\n"
        "\n"
        "Commands:\n"
        "  info           report the driver and the GPUs it detected\n"
        "  list           list the driver files and devices a container would get\n"
        "  configure      put GPUs and the driver into a container (everything or nothing)\n"
        "  hook           the OCI runtime hook (also run as nvidia-container-runtime-hook)\n"
        "  runtime        the OCI runtime shim (also run as nvidia-container-runtime); runtime\n"
        "                 configure registers it with docker, containerd or CRI-O\n"
        "  cdi            generate and list CDI specs (podman, containerd, CRI-O, docker)\n"
        "  cdi-hook       the createContainer hooks of a generated CDI spec\n"
        "  exec           run a command in a GPU slice (memory quota, compute share)\n"
        "  mps            start, stop, query or supervise one MPS control daemon per GPU\n"
        "  slice          list the running slices, show one, change its limits live\n"
        "  metrics        serve Prometheus metrics of every slice and GPU on this host\n"
        "  top            a live view of every slice on this host (--once [--json] for scripts)\n"
        "  doctor         check this node (driver, nodes, hooks, CDI spec, MPS), say what to fix\n"
        "  device-plugin  serve this node's GPUs and GPU slices to the kubelet (Kubernetes)\n"
        "  dra-plugin     a Kubernetes DRA driver: GPUs, MIG devices and slices per ResourceClaim\n"
        "  help [COMMAND] this help, or COMMAND's man page (its --help without man)\n"
        "\n"
        "Global options:\n"
        "  -r, --root=DIR            driver root (default /): libraries, binaries, ld.so.cache,\n"
        "                            device nodes and NVML are taken from under it\n"
        "  -l, --ldcache=FILE        ld.so.cache inside the root (default /etc/ld.so.cache)\n"
        "  -u, --user[=UID[:GID]]    identity of the NVML helper (numbers or names; without a\n"
        "                            value the caller's; default: caller, or nobody as root)\n"
        "  -d, --debug=FILE          append a debug log to FILE\n"
        "  -k, --load-kmods          load the NVIDIA kernel modules and create missing /dev nodes\n"
        "  -n, --no-pivot            ldconfig sandbox: MS_MOVE+chroot instead of pivot_root\n"
        "      --nvml-timeout=SECS   give NVML this long to answer (default 10, max 3600)\n"
        "  -h, --help                this help (COMMAND --help for a command's options)\n"
        "  -V, --version             print the version and the commit it was built from\n"
        "\n"
        "Errors print 'gpuslice: <stage> error: <message>' and exit 1; usage errors exit 2.\n";

/* Run as nvidia-container-runtime-hook: `nvidia-container-runtime-hook prestart` (docker --gpus,
 * podman hooks.d) is `gpuslice hook prestart`. NVIDIA's hook flags (-config, -debug) are accepted
 * by the hook verb. (The installed name links to gpuslice-hook, hook_main.c, which does the same;
 * a link to gpuslice keeps working.) */
static bool invoked_as(const char *argv0, const char *name)
{
        const char *b = strrchr(argv0, '/');
        return strcmp(b != NULL ? b + 1 : argv0, name) == 0;
}

/* The global options before the verb: -1 to go on (optind at the verb), else the exit status. */
static int parse_globals(struct cli_globals *g, int argc, char **argv)
{
        static const struct option opts[] = {
                {"root", required_argument, NULL, 'r'},
                {"ldcache", required_argument, NULL, 'l'},
                {"user", optional_argument, NULL, 'u'},
                {"debug", required_argument, NULL, 'd'},
                {"nvml-timeout", required_argument, NULL, 0x100},
                {"load-kmods", no_argument, NULL, 'k'},
                {"no-pivot", no_argument, NULL, 'n'},
                {"help", no_argument, NULL, 'h'},
                {"version", no_argument, NULL, 'V'},
                {0},
        };
        opterr = 0;
        int c;
        while ((c = getopt_long(argc, argv, "+:r:l:u::d:knhV", opts, NULL)) != -1) {
                int rc = 0;
                switch (c) {
                case 'r':
                        if (optarg[0] != '/')
                                return cli_usage_error(NULL, "--root must be an absolute path: %s", optarg);
                        g->root = optarg;
                        g->root_set = true;
                        break;
                case 'l':
                        g->ldcache = optarg;
                        g->ldcache_set = true;
                        break;
                case 'u':
                        rc = cli_parse_user(g, optarg);
                        g->user_set = true;
                        break;
                case 'd':
                        g->debug = optarg;
                        break;
                case 0x100:
                        rc = cli_parse_seconds(NULL, "--nvml-timeout", optarg, &g->nvml_timeout_ms);
                        g->timeout_set = true;
                        break;
                case 'k':
                        g->load_kmods = true;
                        break;
                case 'n':
                        g->no_pivot = true;
                        break;
                case 'h':
                        fputs(global_help, stdout);
                        return 0;
                case 'V':
                        printf("gpuslice %s (commit %s)\n", gs_version(), GS_COMMIT);
                        return 0;
                case ':':
                        return cli_usage_error(NULL, "option '%s' needs a value", argv[optind - 1]);
                default:
                        return cli_usage_error(NULL, "unknown option '%s'", argv[optind - 1]);
                }
                if (rc != 0)
                        return rc;
        }
        if (optind >= argc) {
                fputs(global_help, stderr);
                return CLI_EXIT_USAGE;
        }
        return -1;
}

/* The commands (the packaging tests read this table: every name has a man page and completion). */
static const struct {
        const char *name;
        int (*run)(const struct cli_globals *g, int argc, char **argv);
} verbs[] = {
        {"info", cmd_info},
        {"list", cmd_list},
        {"configure", cmd_configure},
        {"exec", cmd_exec},
        {"hook", cmd_hook},
        {"runtime", cmd_runtime},
        {"cdi", cmd_cdi},
        {"cdi-hook", cmd_cdi_hook},
        {"mps", cmd_mps},
        {"slice", cmd_slice},
        {"metrics", cmd_metrics},
        {"top", cmd_top},
        {"doctor", cmd_doctor},
        {"device-plugin", cmd_device_plugin},
        {"dra-plugin", cmd_dra_plugin},
};

static int run_verb(const struct cli_globals *g, const char *verb, int argc, char **argv)
{
        optind = 0; /* re-initialise getopt for the verb */
        for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
                if (strcmp(verb, verbs[i].name) == 0)
                        return verbs[i].run(g, argc, argv);
        if (strcmp(verb, "help") == 0) {
                if (argc < 2 || strcmp(argv[1], "help") == 0) {
                        fputs(global_help, stdout);
                        return 0;
                }
                for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
                        if (strcmp(argv[1], verbs[i].name) == 0)
                                return cmd_help(g, verbs[i].name, verbs[i].run);
                return cli_usage_error(NULL, "unknown command '%s'", argv[1]);
        }
        return cli_usage_error(NULL, "unknown command '%s'", verb);
}

int main(int argc, char **argv)
{
        struct cli_globals g = {.uid = (uid_t)-1, .gid = (gid_t)-1};
        /* Installed also as nvidia-container-runtime: the runtime shim, which hands its privileges
         * whole to the low-level runtime it execs (no capability stages). */
        if (argc > 0 && invoked_as(argv[0], "nvidia-container-runtime")) {
                g.from_nvidia_name = true;
                return cmd_runtime(&g, argc, argv);
        }
        if (argc > 0 && invoked_as(argv[0], "nvidia-container-runtime-hook")) {
                struct gs_error cerr = {0};
                if (gs_caps_init(&cerr) < 0 || gs_caps_enter(GS_STAGE_INIT, &cerr) < 0) {
                        cli_error("permission", "%s", cerr.msg);
                        return CLI_EXIT_FAILURE;
                }
                g.from_nvidia_name = true;
                int rv = cmd_hook(&g, argc, argv);
                gs_log_close();
                return rv;
        }
        int rv = parse_globals(&g, argc, argv);
        if (rv >= 0)
                return rv;
        /* A hook's environment may be the image's (a runtime that runs hooks without an explicit
         * env): it names no file we write to. */
        if (g.debug == NULL && strcmp(argv[optind], "hook") != 0 && strcmp(argv[optind], "cdi-hook") != 0)
                g.debug = secure_getenv("GPUSLICE_DEBUG_FILE");
        if (g.debug != NULL && gs_log_open(g.debug) < 0)
                cli_warn("cannot open debug log %s: %s", g.debug, strerror(errno));

        if (strcmp(argv[optind], "runtime") == 0) /* as nvidia-container-runtime above */
                return cmd_runtime(&g, argc - optind, argv + optind);

        /* Least privilege from here on: a fixed permitted set, effective raised per stage. */
        struct gs_error cerr = {0};
        if (gs_caps_init(&cerr) < 0 || gs_caps_enter(GS_STAGE_INIT, &cerr) < 0) {
                cli_error("permission", "%s", cerr.msg);
                return CLI_EXIT_FAILURE;
        }
        rv = run_verb(&g, argv[optind], argc - optind, argv + optind);
        if (fflush(stdout) != 0 && rv == 0) {
                cli_error("output", "%s", strerror(errno));
                rv = CLI_EXIT_FAILURE;
        }
        gs_log_close();
        return rv;
}
