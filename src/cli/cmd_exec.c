/* gpuslice exec: run a command with a GPU slice applied (the interposer preloaded, the limits
 * in its environment, a usage region of its own shared by the command's processes). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/cleanup.h"
#include "runtime/hostconfig.h"
#include "runtime/mps.h"
#include "slice/slice.h"
#include "vgpu/config.h"

static const char exec_help[] =
        "Usage: gpuslice [GLOBAL OPTIONS] exec [--device LIST] [--memory SIZE] [--memory-<i> SIZE]\n"
        "                [--compute PERCENT] [--compute-<i> PERCENT] [--compute-mode cap|share|off]\n"
        "                [--priority high|normal|low]\n"
        "                [--mps-pipe-dir DIR] [--region PATH | --regions-dir DIR] -- COMMAND [ARGS...]\n"
        "\n"
        "Run COMMAND with a GPU slice: libgpuslice-vgpu.so is preloaded into it and every process it\n"
        "starts, which then see at most SIZE of GPU memory per device and together never use more,\n"
        "and together get PERCENT of each device's time.\n"
        "\n"
        "  --memory=SIZE         memory quota per visible device: bytes, or K/M/G/T or Ki/Mi/Gi/Ti\n"
        "                        (powers of 1024); 'unlimited' for none\n"
        "  --memory-<i>=SIZE     quota for visible device i (overrides --memory)\n"
        "  --compute=PERCENT     compute share per visible device, 1..100 (100: unlimited)\n"
        "  --compute-<i>=PERCENT share of visible device i (overrides --compute)\n"
        "  --compute-mode=MODE   cap: never more than PERCENT (default); share: at least PERCENT,\n"
        "                        more while the rest of the GPU is idle; off: not enforced\n"
        "  --priority=PRIORITY   high, normal (default) or low: the order in which compute-limited\n"
        "                        slices get the GPU (no effect without a compute share)\n"
        "  --mps-pipe-dir=DIR    cap mode through the MPS server whose pipe directory is DIR\n"
        "                        (`gpuslice mps start`): the command runs on PERCENT of the SMs,\n"
        "                        beside other slices instead of taking turns (one PERCENT for\n"
        "                        all devices; without a running server: the time limiter)\n"
        "                        Without it, a cap slice on one GPU follows slice.mps of the\n"
        "                        host config (off, auto, on: gpuslice.conf(5))\n"
        "      --config=FILE     the host config (default /etc/gpuslice/config.toml)\n"
        "  -d, --device=LIST     devices the command may see (as for `list`); default all\n"
        "      --region=PATH     usage region file to share (default: a new one, removed at exit)\n"
        "      --regions-dir=DIR a slice directory exec-<pid> for the command in DIR (e.g.\n"
        "                        /run/gpuslice/slices, as root): `gpuslice slice` changes its\n"
        "                        limits while it runs, `metrics` and `top` show it; removed at exit\n"
        "  -h, --help\n"
        "\n"
        "At least one of --memory, --memory-<i>, --compute, --compute-<i> is required.\n"
        "The exit status is COMMAND's (128+N if it died of signal N).\n";

struct exec_opts {
        const char *memory, *compute, *compute_mode, *priority, *mps_dir, *region, *config, *regions_dir;
        const char *memory_dev[GS_VGPU_MAX_DEVICES];
        const char *compute_dev[GS_VGPU_MAX_DEVICES];
        char *devices;
        char **argv; /* COMMAND */
};

static pid_t child = -1;

static void forward(int sig)
{
        if (child > 0)
                kill(child, sig);
}

/* GPUSLICE_DEVICES: the selected GPUs' UUIDs, in NVML order. */
static int export_devices(const struct cli_globals *g, const char *devices)
{
        struct gs_context *ctx = cli_open_context(g);
        if (ctx == NULL)
                return -1;
        const struct gs_device_info *d = cli_query_devices(ctx, true);
        struct gs_selection sel;
        struct gs_error err = {0};
        if (d == NULL || gs_select_devices(devices, d, &sel, &err) < 0) {
                if (d != NULL)
                        cli_error("device", "%s", err.msg);
                gs_context_free(ctx);
                return -1;
        }
        char list[1024] = "";
        for (unsigned i = 0; i < d->ngpus; i++) {
                if (!gs_selection_uses_gpu(&sel, i))
                        continue;
                if (strlen(list) + strlen(d->gpus[i].uuid) + 2 >= sizeof(list))
                        break;
                if (list[0] != '\0')
                        strcat(list, ",");
                strcat(list, d->gpus[i].uuid);
        }
        gs_context_free(ctx);
        setenv("GPUSLICE_DEVICES", list, 1);
        return 0;
}

static void set_indexed(const char *prefix, const char *const *vals)
{
        for (int i = 0; i < GS_VGPU_MAX_DEVICES; i++) {
                if (vals[i] == NULL)
                        continue;
                char name[64];
                snprintf(name, sizeof(name), "%s_%d", prefix, i);
                setenv(name, vals[i], 1);
        }
}

/* The slice's environment: limits, region, and the interposer first in LD_PRELOAD. */
static void export_slice(const char *lib, const char *region, const struct exec_opts *o)
{
        setenv("GPUSLICE_REGION", region, 1);
        if (o->memory != NULL)
                setenv("GPUSLICE_MEMORY_LIMIT", o->memory, 1);
        if (o->compute != NULL)
                setenv("GPUSLICE_COMPUTE_LIMIT", o->compute, 1);
        if (o->compute_mode != NULL)
                setenv("GPUSLICE_COMPUTE_MODE", o->compute_mode, 1);
        if (o->priority != NULL)
                setenv("GPUSLICE_PRIORITY", o->priority, 1);
        if (o->mps_dir != NULL)
                setenv("GPUSLICE_MPS_PIPE_DIRECTORY", o->mps_dir, 1);
        set_indexed("GPUSLICE_MEMORY_LIMIT", o->memory_dev);
        set_indexed("GPUSLICE_COMPUTE_LIMIT", o->compute_dev);
        const char *old = getenv("LD_PRELOAD");
        char preload[PATH_MAX * 2];
        snprintf(preload, sizeof(preload), "%s%s%s", lib, old && *old ? ":" : "", old && *old ? old : "");
        setenv("LD_PRELOAD", preload, 1);
}

/* Run argv, forwarding INT/TERM/HUP; its exit status (128+N for signal N), or -1. */
static int run_child(char **argv)
{
        fflush(NULL);
        child = fork();
        if (child < 0) {
                cli_error("exec", "fork: %s", strerror(errno));
                return -1;
        }
        if (child == 0) {
                execvp(argv[0], argv);
                fprintf(stderr, "gpuslice: exec error: %s: %s\n", argv[0], strerror(errno));
                _exit(errno == ENOENT ? 127 : 126);
        }
        struct sigaction sa = {.sa_handler = forward};
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGHUP, &sa, NULL);
        int st = 0;
        while (waitpid(child, &st, 0) < 0 && errno == EINTR) {
        }
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* An option's value, checked: 0, or a usage error's exit code. */
static int check_size(const char *opt, const char *v)
{
        uint64_t bytes;
        if (v != NULL && gs_vgpu_parse_size(v, &bytes) < 0)
                return cli_usage_error("exec", "invalid %s: %s (bytes, or K/M/G/T or Ki/Mi/Gi/Ti)", opt, v);
        return 0;
}

static int check_percent(const char *opt, const char *v)
{
        unsigned pct;
        if (v != NULL && (gs_vgpu_parse_percent(v, &pct) < 0 || pct == 0))
                return cli_usage_error("exec", "invalid %s: %s (a percentage, 1..100)", opt, v);
        return 0;
}

/* --memory-<i> / --compute-<i>: checked; *any is set when one is given. */
static int check_indexed(const char *name, const char *const *vals, int (*check)(const char *, const char *), bool *any)
{
        for (int i = 0; i < GS_VGPU_MAX_DEVICES; i++) {
                char opt[32];
                snprintf(opt, sizeof(opt), "--%s-%d", name, i);
                if (check(opt, vals[i]) != 0)
                        return CLI_EXIT_USAGE;
                *any |= vals[i] != NULL;
        }
        return 0;
}

/* Options into o (argv is rewritten into av); 0, -1 after --help, or an exit code. */
static int parse_options(int argc, char **argv, char **av, struct exec_opts *o)
{
        enum { O_MEMORY = 0x100, O_REGION, O_COMPUTE, O_COMPUTE_MODE, O_PRIORITY, O_MPS_DIR, O_CONFIG, O_REGIONS_DIR };
        static const struct option opts[] = {
                {"memory", required_argument, NULL, O_MEMORY},
                {"compute", required_argument, NULL, O_COMPUTE},
                {"compute-mode", required_argument, NULL, O_COMPUTE_MODE},
                {"priority", required_argument, NULL, O_PRIORITY},
                {"mps-pipe-dir", required_argument, NULL, O_MPS_DIR},
                {"config", required_argument, NULL, O_CONFIG},
                {"region", required_argument, NULL, O_REGION},
                {"regions-dir", required_argument, NULL, O_REGIONS_DIR},
                {"device", required_argument, NULL, 'd'},
                {"help", no_argument, NULL, 'h'},
                {0},
        };
        /* --memory-<i> and --compute-<i> are not fixed option names: out of argv before getopt. */
        argc = cli_take_indexed("exec", argc, argv, av, "memory", o->memory_dev, GS_VGPU_MAX_DEVICES);
        if (argc >= 0)
                argc = cli_take_indexed("exec", argc, av, av, "compute", o->compute_dev, GS_VGPU_MAX_DEVICES);
        if (argc < 0)
                return CLI_EXIT_USAGE;
        bool any = false;
        if (check_indexed("memory", o->memory_dev, check_size, &any) != 0 ||
            check_indexed("compute", o->compute_dev, check_percent, &any) != 0)
                return CLI_EXIT_USAGE;
        int c;
        while ((c = getopt_long(argc, av, "+:d:h", opts, NULL)) != -1) {
                switch (c) {
                case O_MEMORY:
                        if (check_size("--memory", optarg) != 0)
                                return CLI_EXIT_USAGE;
                        o->memory = optarg;
                        break;
                case O_COMPUTE:
                        if (check_percent("--compute", optarg) != 0)
                                return CLI_EXIT_USAGE;
                        o->compute = optarg;
                        break;
                case O_COMPUTE_MODE:
                        if (gs_vgpu_parse_compute_mode(optarg) < 0)
                                return cli_usage_error("exec", "invalid --compute-mode: %s (cap, share or off)", optarg);
                        o->compute_mode = optarg;
                        break;
                case O_PRIORITY: {
                        int prio = gs_vgpu_parse_priority(optarg, false);
                        if (prio < 0)
                                return cli_usage_error("exec", "invalid --priority: %s (high, normal or low)", optarg);
                        o->priority = gs_vgpu_priority_name(prio);
                        break;
                }
                case O_CONFIG:
                        o->config = optarg;
                        break;
                case O_MPS_DIR:
                        if (optarg[0] != '/')
                                return cli_usage_error("exec", "--mps-pipe-dir must be an absolute path: %s", optarg);
                        o->mps_dir = optarg;
                        break;
                case O_REGION:
                        if (optarg[0] != '/')
                                return cli_usage_error("exec", "--region must be an absolute path: %s", optarg);
                        o->region = optarg;
                        break;
                case O_REGIONS_DIR:
                        if (optarg[0] != '/')
                                return cli_usage_error("exec", "--regions-dir must be an absolute path: %s", optarg);
                        o->regions_dir = optarg;
                        break;
                case 'd':
                        if (cli_join(&o->devices, optarg) < 0) {
                                cli_error("input", "out of memory");
                                return CLI_EXIT_FAILURE;
                        }
                        break;
                case 'h':
                        fputs(exec_help, stdout);
                        return -1;
                case ':':
                        return cli_usage_error("exec", "option '%s' needs a value", av[optind - 1]);
                default:
                        return cli_usage_error("exec", "unknown option '%s'", av[optind - 1]);
                }
        }
        if (optind >= argc)
                return cli_usage_error("exec", "missing COMMAND (use: gpuslice exec --memory 4Gi -- COMMAND)");
        if (o->region != NULL && o->regions_dir != NULL)
                return cli_usage_error("exec", "--region and --regions-dir exclude each other (the slice directory "
                                               "holds the region)");
        if (o->memory == NULL && o->compute == NULL && !any)
                return cli_usage_error("exec", "--memory SIZE or --compute PERCENT is required (or --memory-<i>, "
                                               "--compute-<i>; 'unlimited' for no memory quota)");
        o->argv = av + optind;
        return 0;
}

/* slice.mps of the host config for a cap slice on one GPU without --mps-pipe-dir: the GPU's
 * MPS client directory into o->mps_dir (held in `dir`), or a warning why not. 0, or -1 after
 * printing the config's error. */
static int mps_from_host(const struct cli_globals *g, struct exec_opts *o, const char *devices, char *dir, size_t len)
{
        struct gs_slice_opts so = {.compute = o->compute, .compute_mode = o->compute_mode};
        so.compute_dev[0] = o->compute_dev[0];
        if (o->mps_dir != NULL || gs_mps_slice_share(&so, "GPU-") == 0)
                return 0;
        gs_autofree struct gs_hostconfig *hc = malloc(sizeof(*hc));
        struct gs_error err = {0};
        if (hc == NULL || gs_hostconfig_load(hc, o->config, &err) < 0) {
                cli_error("config", "%s", hc == NULL ? "out of memory" : err.msg);
                return -1;
        }
        int mode = gs_mps_mode_parse(hc->mps);
        if (mode <= 0)
                return 0;
        struct gs_context *ctx = cli_open_context(g);
        const struct gs_device_info *info = ctx != NULL ? cli_query_devices(ctx, true) : NULL;
        struct gs_selection sel;
        unsigned n = 0, gpu = 0;
        if (info != NULL && gs_select_devices(devices != NULL ? devices : "all", info, &sel, &err) == 0)
                for (unsigned i = 0; i < info->ngpus; i++)
                        if (gs_selection_uses_gpu(&sel, i))
                                n++, gpu = i;
        if (n == 1 && sel.nmigs == 0 && !info->gpus[gpu].mig_enabled) {
                char id[32], why[256];
                snprintf(id, sizeof(id), "exec-%d", (int)getpid());
                so.mps = hc->mps;
                so.mps_root = hc->mps_root;
                if (gs_slice_mps_choose(ctx, info, &so, info->gpus[gpu].uuid, id, getpid(), dir, len, why, sizeof(why)) == 1)
                        o->mps_dir = dir;
                else if (why[0] != '\0')
                        cli_warn("%s: the time limiter keeps the %u %% share", why, gs_mps_slice_share(&so, info->gpus[gpu].uuid));
        }
        gs_context_free(ctx);
        return 0;
}

int cmd_exec(const struct cli_globals *g, int argc, char **argv)
{
        struct exec_opts o = {0};
        gs_autofree char **av = calloc((size_t)argc + 1, sizeof(char *));
        if (av == NULL) {
                cli_error("input", "out of memory");
                return CLI_EXIT_FAILURE;
        }
        int rc = parse_options(argc, argv, av, &o);
        gs_autofree char *devices = o.devices;
        if (rc != 0)
                return rc < 0 ? 0 : rc;
        char lib[PATH_MAX];
        struct gs_error err = {0};
        const char *env_lib = getenv("GPUSLICE_VGPU_LIB");
        if (gs_slice_find_library(env_lib, lib, sizeof(lib), &err) < 0) {
                cli_error("initialization", "%s%s", err.msg, env_lib == NULL ? " (or set GPUSLICE_VGPU_LIB)" : "");
                return CLI_EXIT_FAILURE;
        }
        if (devices != NULL && export_devices(g, devices) < 0)
                return CLI_EXIT_FAILURE;
        char mps_dir[PATH_MAX];
        if (mps_from_host(g, &o, devices, mps_dir, sizeof(mps_dir)) < 0)
                return CLI_EXIT_FAILURE;
        char made_region[PATH_MAX] = "";
        const char *region = o.region;
        struct gs_slice_host h = {.dirfd = -1};
        if (o.regions_dir != NULL) {
                char id[32], live[PATH_MAX + 16];
                struct gs_slice_opts so = {.memory = o.memory, .compute = o.compute, .compute_mode = o.compute_mode,
                                           .priority = o.priority, .regions_dir = o.regions_dir};
                memcpy(so.memory_dev, o.memory_dev, sizeof(so.memory_dev));
                memcpy(so.compute_dev, o.compute_dev, sizeof(so.compute_dev));
                snprintf(id, sizeof(id), "exec-%d", (int)getpid());
                if (gs_slice_prepare_exec(&so, id, &h, &err) < 0) {
                        cli_error("slice", "%s", err.msg);
                        return CLI_EXIT_FAILURE;
                }
                snprintf(made_region, sizeof(made_region), "%s/usage", h.dir);
                snprintf(live, sizeof(live), "%s/live/limits", h.dir);
                setenv("GPUSLICE_LIVE_LIMITS", live, 1);
                region = made_region;
        } else if (region == NULL) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                snprintf(made_region, sizeof(made_region), "/dev/shm/gpuslice-exec-%d-%ld", (int)getpid(),
                         (long)ts.tv_nsec);
                region = made_region;
        }
        export_slice(lib, region, &o);
        int rv = run_child(o.argv);
        if (h.created)
                gs_slice_abort(&h); /* the directory, its region with it */
        else if (made_region[0] != '\0')
                unlink(made_region);
        return rv < 0 ? CLI_EXIT_FAILURE : rv;
}
