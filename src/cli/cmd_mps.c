/* gpuslice mps start | stop | status | supervise: option parsing and printing; the work is in src/runtime/mps.c. */
#include <getopt.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/strutil.h"
#include "runtime/hostconfig.h"
#include "runtime/mps.h"

static const char mps_help[] =
        "Usage: gpuslice [GLOBAL OPTIONS] mps COMMAND [OPTIONS]\n"
        "\n"
        "One NVIDIA MPS control daemon (nvidia-cuda-mps-control, from the driver root) per GPU, so\n"
        "that compute-limited slices can share a GPU through it. Per GPU, under the MPS root:\n"
        "  <mps-root>/<GPU-UUID>/       the daemon's pipe directory (CUDA_MPS_PIPE_DIRECTORY)\n"
        "  <mps-root>/<GPU-UUID>/log/   its log directory (CUDA_MPS_LOG_DIRECTORY)\n"
        "  <mps-root>/<GPU-UUID>/client/  what slices connect through, and the GPU's MPS state\n"
        "\n"
        "Commands:\n"
        "  start    start a daemon for each selected GPU that has none\n"
        "  stop     tell each selected GPU's daemon to quit and wait until it is gone\n"
        "  status   whether each selected GPU's daemon runs, and its MPS servers\n"
        "  supervise  keep one daemon per GPU running and healthy (the gpuslice-mps service)\n"
        "\n"
        "'gpuslice mps COMMAND --help' for a command's options.\n";

static const char start_help[] =
        "Usage: gpuslice [GLOBAL OPTIONS] mps start [OPTIONS]\n"
        "\n"
        "Start nvidia-cuda-mps-control -d for each selected GPU, with only CUDA_VISIBLE_DEVICES=<its\n"
        "UUID>, its pipe and log directories and a PATH of the driver's binary directories in its\n"
        "environment, and wait until it answers. A daemon already answering there is left alone.\n"
        "\n"
        "  -d, --device=LIST         GPUs (repeatable; comma list; default all): index, GPU-UUID, PCI\n"
        "                            bus id; MIG devices are refused (with all, GPUs in MIG mode are\n"
        "                            passed over)\n"
        "      --mps-root=DIR        absolute; default: slice.mps-root of the host config, else\n"
        "                            " GS_MPS_ROOT_DEFAULT "\n"
        "      --config=FILE         host config to read (default " GS_HOSTCONFIG_DEFAULT_PATH ", if any)\n"
        "      --timeout=SECS        wait at most this long per GPU (default 5)\n"
        "  -h, --help\n";

static const char stop_help[] =
        "Usage: gpuslice [GLOBAL OPTIONS] mps stop [OPTIONS]\n"
        "\n"
        "Send 'quit' to each selected GPU's daemon and wait until it has exited (it waits for its\n"
        "MPS servers and clients to finish). A GPU without a daemon is not an error. Its pipe and log\n"
        "directories are removed only if empty.\n"
        "\n"
        "  -d, --device=LIST, --mps-root=DIR, --config=FILE   as for start\n"
        "      --timeout=SECS        wait at most this long per GPU (default 5)\n"
        "  -h, --help\n";

static const char status_help[] =
        "Usage: gpuslice [GLOBAL OPTIONS] mps status [OPTIONS]\n"
        "\n"
        "For each selected GPU: whether its control daemon runs (its pid file names a live\n"
        "nvidia-cuda-mps-control), its pipe and log directories, and its servers (get_server_list).\n"
        "\n"
        "  -d, --device=LIST, --mps-root=DIR, --config=FILE   as for start\n"
        "      --json                one JSON object: {\"gpus\":[{\"index\":0,\"uuid\":...,\"running\":true,\n"
        "                            \"pid\":...,\"pipe_directory\":...,\"log_directory\":...,\n"
        "                            \"servers\":[pid,...]}]}\n"
        "      --timeout=SECS        how long a daemon may take to answer (default 5)\n"
        "  -h, --help\n";

static const char supervise_help[] =
        "Usage: gpuslice [GLOBAL OPTIONS] mps supervise [OPTIONS]\n"
        "\n"
        "In the foreground until SIGTERM or SIGINT: start a daemon for each selected GPU that has\n"
        "none; watch its servers (server.log, get_server_status): a server in FAULT (a client hit a\n"
        "fatal GPU error; all its clients fail) marks the GPU poisoned in <GPU-UUID>/client/state,\n"
        "so that new slice processes stay on the time limiter, and once the faulted server has no\n"
        "client left the daemon is restarted; keep the servers' active thread percentage at the\n"
        "largest share of the slices on the GPU. One line per event on stderr. The daemons keep\n"
        "running when it stops.\n"
        "\n"
        "  -d, --device=LIST, --mps-root=DIR, --config=FILE   as for start\n"
        "      --interval=SECS       between two looks at the GPUs (default 1)\n"
        "      --cycles=N            stop after N looks (default: never)\n"
        "      --timeout=SECS        for starting a daemon and each command (default 5)\n"
        "  -h, --help\n";

enum verb { V_START, V_STOP, V_STATUS, V_SUPERVISE };

struct mps_cli {
        enum verb verb;
        const char *name; /* "mps start", ... */
        char *devices;
        const char *mps_root;
        const char *config;
        unsigned timeout_ms;
        unsigned interval_ms, cycles;
        bool json;
};

static int parse(struct mps_cli *mc, int argc, char **argv)
{
        enum { O_ROOT = 0x100, O_CONFIG, O_TIMEOUT, O_JSON, O_INTERVAL, O_CYCLES };
        static const struct option opts[] = {
                {"device", required_argument, NULL, 'd'},
                {"mps-root", required_argument, NULL, O_ROOT},
                {"config", required_argument, NULL, O_CONFIG},
                {"timeout", required_argument, NULL, O_TIMEOUT},
                {"json", no_argument, NULL, O_JSON},
                {"interval", required_argument, NULL, O_INTERVAL},
                {"cycles", required_argument, NULL, O_CYCLES},
                {"help", no_argument, NULL, 'h'},
                {0},
        };
        static const char *const helps[] = {start_help, stop_help, status_help, supervise_help};
        int c;
        while ((c = getopt_long(argc, argv, "+:d:h", opts, NULL)) != -1) {
                switch (c) {
                case 'd':
                        if (cli_join(&mc->devices, optarg) < 0) {
                                cli_error("mps", "out of memory");
                                return CLI_EXIT_FAILURE;
                        }
                        break;
                case O_ROOT:
                        if (optarg[0] != '/')
                                return cli_usage_error(mc->name, "--mps-root must be an absolute path: %s", optarg);
                        mc->mps_root = optarg;
                        break;
                case O_CONFIG:
                        mc->config = optarg;
                        break;
                case O_TIMEOUT: {
                        int rc = cli_parse_seconds(mc->name, "--timeout", optarg, &mc->timeout_ms);
                        if (rc != 0)
                                return rc;
                        break;
                }
                case O_INTERVAL:
                case O_CYCLES: {
                        if (mc->verb != V_SUPERVISE)
                                return cli_usage_error(mc->name, "%s is an option of 'mps supervise'",
                                                       c == O_INTERVAL ? "--interval" : "--cycles");
                        unsigned long long n;
                        if (c == O_INTERVAL) {
                                int rc = cli_parse_seconds(mc->name, "--interval", optarg, &mc->interval_ms);
                                if (rc != 0)
                                        return rc;
                        } else if (gs_parse_uint(optarg, 1000000000, &n) < 0 || n == 0) {
                                return cli_usage_error(mc->name, "invalid --cycles: %s", optarg);
                        } else {
                                mc->cycles = (unsigned)n;
                        }
                        break;
                }
                case O_JSON:
                        if (mc->verb != V_STATUS)
                                return cli_usage_error(mc->name, "--json is an option of 'mps status'");
                        mc->json = true;
                        break;
                case 'h':
                        fputs(helps[mc->verb], stdout);
                        return 0;
                case ':':
                        return cli_usage_error(mc->name, "option '%s' needs a value", argv[optind - 1]);
                default:
                        return cli_usage_error(mc->name, "unknown option '%s'", argv[optind - 1]);
                }
        }
        if (optind < argc)
                return cli_usage_error(mc->name, "unexpected argument '%s'", argv[optind]);
        return -1;
}

/* gpuslice's word on the GPU's MPS (written by `mps supervise`), when there is one. */
static void print_state(const struct gs_mps_gpu *m)
{
        struct gs_mps_state st;
        if (gs_mps_state_read(m->client_dir, &st) <= 0)
                return;
        printf("  state:          %s", st.poisoned ? "POISONED" : "ok");
        if (st.poisoned)
                printf(" (server %d faulted; new slice processes use the time limiter)", (int)st.server);
        printf(", %llu fault%s, %llu restart%s", st.faults, st.faults == 1 ? "" : "s", st.restarts,
               st.restarts == 1 ? "" : "s");
        if (st.percentage != 0)
                printf(", servers held at %u %%", st.percentage);
        putchar('\n');
}

static void log_line(void *arg, const char *line)
{
        (void)arg;
        fprintf(stderr, "gpuslice: mps supervise: %s\n", line);
}

static void print_text(const struct mps_cli *mc, const struct gs_mps_report *r)
{
        for (unsigned i = 0; i < r->n; i++) {
                const struct gs_mps_gpu *m = &r->gpus[i];
                printf("GPU %u (%s): ", m->index, m->uuid);
                switch (m->action) {
                case GS_MPS_STARTED:
                        printf("started the MPS control daemon (pid %d), pipe directory %s\n", (int)m->pid, m->pipe_dir);
                        break;
                case GS_MPS_ALREADY_RUNNING:
                        printf("already running (pid %d), pipe directory %s\n", (int)m->pid, m->pipe_dir);
                        break;
                case GS_MPS_SKIPPED_MIG:
                        printf("skipped: MIG mode is enabled\n");
                        break;
                case GS_MPS_STOPPED:
                        printf("stopped the MPS control daemon (pid %d)\n", (int)m->pid);
                        break;
                case GS_MPS_NOT_RUNNING:
                        printf("not running\n");
                        break;
                case GS_MPS_QUERIED:
                        if (m->running)
                                printf("running (control daemon pid %d)\n", (int)m->pid);
                        else
                                printf("not running\n");
                        printf("  pipe directory: %s\n  log directory:  %s\n", m->pipe_dir, m->log_dir);
                        print_state(m);
                        if (!m->running)
                                break;
                        if (!m->servers_known) {
                                printf("  servers:        unknown (%s)\n", m->query_error);
                                break;
                        }
                        printf("  servers:       ");
                        if (m->nservers == 0)
                                printf(" none");
                        for (size_t k = 0; k < m->nservers; k++)
                                printf(" %d", (int)m->servers[k]);
                        putchar('\n');
                        break;
                }
        }
        (void)mc;
}

static void print_json(const struct gs_mps_report *r)
{
        json_object *root = json_object_new_object();
        json_object *gpus = json_object_new_array();
        for (unsigned i = 0; i < r->n; i++) {
                const struct gs_mps_gpu *m = &r->gpus[i];
                json_object *o = json_object_new_object();
                json_object_object_add(o, "index", json_object_new_int64(m->index));
                json_object_object_add(o, "uuid", json_object_new_string(m->uuid));
                json_object_object_add(o, "running", json_object_new_boolean(m->running));
                json_object_object_add(o, "pid", m->running ? json_object_new_int64(m->pid) : NULL);
                json_object_object_add(o, "pipe_directory", json_object_new_string(m->pipe_dir));
                json_object_object_add(o, "log_directory", json_object_new_string(m->log_dir));
                json_object *servers = json_object_new_array();
                for (size_t k = 0; k < m->nservers; k++)
                        json_object_array_add(servers, json_object_new_int64(m->servers[k]));
                json_object_object_add(o, "servers", servers);
                if (m->running && !m->servers_known)
                        json_object_object_add(o, "error", json_object_new_string(m->query_error));
                struct gs_mps_state st;
                if (gs_mps_state_read(m->client_dir, &st) > 0) {
                        json_object *so = json_object_new_object();
                        json_object_object_add(so, "poisoned", json_object_new_boolean(st.poisoned));
                        json_object_object_add(so, "faults", json_object_new_int64((int64_t)st.faults));
                        json_object_object_add(so, "restarts", json_object_new_int64((int64_t)st.restarts));
                        json_object_object_add(so, "percentage", st.percentage ? json_object_new_int64(st.percentage) : NULL);
                        json_object_object_add(o, "state", so);
                }
                json_object_array_add(gpus, o);
        }
        json_object_object_add(root, "gpus", gpus);
        cli_print_json(root);
}

static int run(const struct cli_globals *g, struct mps_cli *mc)
{
        /* --mps-root, else the host config's slice.mps-root (the default when there is no file). */
        struct gs_hostconfig *hc = malloc(sizeof(*hc));
        struct gs_mps_report *r = calloc(1, sizeof(*r));
        struct gs_context *ctx = NULL;
        struct gs_error err = {0};
        int rv = CLI_EXIT_FAILURE;
        if (hc == NULL || r == NULL) {
                cli_error("mps", "out of memory");
                goto out;
        }
        if (gs_hostconfig_load(hc, mc->config, &err) < 0) {
                cli_error("mps", "%s", err.msg);
                goto out;
        }
        struct gs_mps_opts o = {
                .devices = mc->devices,
                .root = mc->mps_root != NULL ? mc->mps_root : hc->mps_root,
                .timeout_ms = mc->timeout_ms,
        };
        if ((ctx = cli_open_context(g)) == NULL)
                goto out;
        /* NVML's answer: MIG mode is NVML's to tell. */
        const struct gs_device_info *info = cli_query_devices(ctx, false);
        if (info == NULL)
                goto out;
        if (mc->verb == V_SUPERVISE) {
                struct gs_mps_supervise_opts so = {.mps = o, .interval_ms = mc->interval_ms, .max_cycles = mc->cycles,
                                                   .log = log_line};
                if (gs_mps_supervise(ctx, info, &so, &err) < 0) {
                        cli_error("mps", "%s", err.msg);
                        goto out;
                }
                rv = 0;
                goto out;
        }
        int r_ok = mc->verb == V_START  ? gs_mps_start(ctx, info, &o, r, &err)
                   : mc->verb == V_STOP ? gs_mps_stop(ctx, info, &o, r, &err)
                                        : gs_mps_status(ctx, info, &o, r, &err);
        if (mc->json && r_ok == 0)
                print_json(r);
        else if (!mc->json)
                print_text(mc, r); /* on failure: the GPUs done before it */
        if (r_ok < 0) {
                fflush(stdout);
                cli_error("mps", "%s", err.msg);
                goto out;
        }
        rv = 0;
out:
        gs_context_free(ctx);
        free(r);
        free(hc);
        return rv;
}

int cmd_mps(const struct cli_globals *g, int argc, char **argv)
{
        int rc = cli_subcommand_help(argc, argv, mps_help);
        if (rc >= 0)
                return rc;
        const char *sub = argv[1];
        struct mps_cli mc = {0};
        if (strcmp(sub, "start") == 0)
                mc = (struct mps_cli){.verb = V_START, .name = "mps start"};
        else if (strcmp(sub, "stop") == 0)
                mc = (struct mps_cli){.verb = V_STOP, .name = "mps stop"};
        else if (strcmp(sub, "status") == 0)
                mc = (struct mps_cli){.verb = V_STATUS, .name = "mps status"};
        else if (strcmp(sub, "supervise") == 0)
                mc = (struct mps_cli){.verb = V_SUPERVISE, .name = "mps supervise"};
        else
                return cli_usage_error("mps", "unknown mps command '%s' (start, stop, status or supervise)", sub);
        optind = 0;
        int rv = parse(&mc, argc - 1, argv + 1);
        if (rv < 0)
                rv = run(g, &mc);
        free(mc.devices);
        return rv;
}
