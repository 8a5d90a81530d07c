/* gpuslice metrics: option parsing and the serving loop; the work is in src/observe/. */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/cleanup.h"
#include "runtime/hostconfig.h"
#include "observe/collect.h"
#include "observe/gpus.h"
#include "observe/metrics.h"
#include "observe/server.h"

static const char metrics_help[] =
        "Usage: gpuslice [GLOBAL OPTIONS] metrics [OPTIONS]\n"
        "\n"
        "Serve Prometheus metrics of every GPU slice on this host: per slice and device, memory used\n"
        "and quota, compute used and limit, processes, last kernel launch; per GPU, memory and\n"
        "utilization from NVML (run in the isolated helper, never in this process). Our names in base\n"
        "units, and HAMi's vGPU monitor names beside them. Endpoints: /metrics, /healthz.\n"
        "\n"
        "  --listen=ADDR:PORT       where to listen (default :9394, every address); 127.0.0.1:9394,\n"
        "                           [::1]:9394; port 0 picks a free one (the address is logged)\n"
        "  --regions-dir=DIR        the slice directories of the hook and configure (default:\n"
        "                           slice.regions-dir of the host config, else " GS_SLICE_REGIONS_DIR ")\n"
        "  --region=PATH            also this usage region (gpuslice exec --region PATH), or every file a\n"
        "                           glob pattern matches (quote it: '/dev/shm/gpuslice-exec-*');\n"
        "                           repeatable\n"
        "  --config=FILE            host config to read (default " GS_HOSTCONFIG_DEFAULT_PATH ", if any)\n"
        "  --window=SECS            compute used is measured over windows this long (default 1)\n"
        "  --nvml-interval=SECS     ask NVML this often (default 5); each answer within --nvml-timeout\n"
        "  --no-nvml                no per-GPU metrics (NVML is never asked)\n"
        "  --node=NAME              HAMi's node label (default $NODE_NAME, else the host name)\n"
        "  --no-hami                only gpuslice's names, not HAMi's\n"
        "  --once                   print one scrape to stdout and exit (after one window, and once\n"
        "                           NVML has answered: a failing NVML is asked again for 3 s)\n"
        "  -h, --help\n"
        "\n"
        "Skipped regions (unreadable, foreign, damaged, another version) are logged on stderr, once\n"
        "per file and reason. Slice directories of containers that are gone are left out and removed.\n";

struct metrics_cli {
        const char *listen, *regions_dir, *config, *node;
        const char **regions;
        size_t nregions;
        unsigned window_ms, nvml_interval_ms;
        bool no_nvml, no_hami, once;
};

/* 0 parsed, -1 after --help, else an exit code. */
static int parse(struct metrics_cli *m, int argc, char **argv)
{
        enum { O_LISTEN = 0x100, O_DIR, O_REGION, O_CONFIG, O_WINDOW, O_INTERVAL, O_NO_NVML, O_NODE, O_NO_HAMI, O_ONCE };
        static const struct option opts[] = {
                {"listen", required_argument, NULL, O_LISTEN},   {"regions-dir", required_argument, NULL, O_DIR},
                {"region", required_argument, NULL, O_REGION},   {"config", required_argument, NULL, O_CONFIG},
                {"window", required_argument, NULL, O_WINDOW},   {"nvml-interval", required_argument, NULL, O_INTERVAL},
                {"no-nvml", no_argument, NULL, O_NO_NVML},       {"node", required_argument, NULL, O_NODE},
                {"no-hami", no_argument, NULL, O_NO_HAMI},       {"once", no_argument, NULL, O_ONCE},
                {"help", no_argument, NULL, 'h'},                {0},
        };
        struct gs_listen_addr la;
        struct gs_error err = {0};
        int c, rc = 0;
        while (rc == 0 && (c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
                switch (c) {
                case O_LISTEN:
                        if (gs_listen_parse(optarg, &la, &err) < 0)
                                return cli_usage_error("metrics", "%s", err.msg);
                        m->listen = optarg;
                        break;
                case O_DIR:
                        if (optarg[0] != '/')
                                return cli_usage_error("metrics", "--regions-dir must be an absolute path: %s", optarg);
                        m->regions_dir = optarg;
                        break;
                case O_REGION:
                        if (optarg[0] != '/')
                                return cli_usage_error("metrics", "--region must be an absolute path: %s", optarg);
                        m->regions[m->nregions++] = optarg;
                        break;
                case O_CONFIG: m->config = optarg; break;
                case O_WINDOW: rc = cli_parse_seconds("metrics", "--window", optarg, &m->window_ms); break;
                case O_INTERVAL: rc = cli_parse_seconds("metrics", "--nvml-interval", optarg, &m->nvml_interval_ms); break;
                case O_NO_NVML: m->no_nvml = true; break;
                case O_NODE: m->node = optarg; break;
                case O_NO_HAMI: m->no_hami = true; break;
                case O_ONCE: m->once = true; break;
                case 'h':
                        fputs(metrics_help, stdout);
                        return -1;
                case ':':
                        return cli_usage_error("metrics", "option '%s' needs a value", argv[optind - 1]);
                default:
                        return cli_usage_error("metrics", "unknown option '%s'", argv[optind - 1]);
                }
        }
        if (rc == 0 && optind < argc)
                return cli_usage_error("metrics", "unexpected argument '%s'", argv[optind]);
        return rc;
}

/* Every line the exporter logs: stderr (the journal under systemd). */
static void log_line(void *arg, const char *line)
{
        (void)arg;
        fprintf(stderr, "gpuslice metrics: %s\n", line);
        fflush(stderr);
}

struct parts {
        struct gs_collector *collector;
        struct gs_gpu_poller *gpus;
        struct gs_metrics_opts render;
        char node[256];
        char mps_root[4096];
};

static int start_parts(const struct cli_globals *g, const struct metrics_cli *m, struct parts *p)
{
        struct cli_observe_opts oo = {
                .verb = "metrics",
                .config = m->config,
                .regions_dir = m->regions_dir,
                .regions = m->regions,
                .nregions = m->nregions,
                .window_ms = m->window_ms,
                .nvml_interval_ms = m->nvml_interval_ms,
                .no_nvml = m->no_nvml,
                .log = log_line,
        };
        if (cli_observe_start(g, &oo, &p->collector, &p->gpus) < 0)
                return -1;
        const char *node = m->node != NULL ? m->node : getenv("NODE_NAME");
        if (node == NULL || *node == '\0') {
                if (gethostname(p->node, sizeof(p->node)) < 0)
                        p->node[0] = '\0';
                p->node[sizeof(p->node) - 1] = '\0';
        } else {
                snprintf(p->node, sizeof(p->node), "%s", node);
        }
        /* the GPUs' MPS state: under the host config's slice.mps-root */
        struct gs_hostconfig *hc = malloc(sizeof(*hc));
        struct gs_error err = {0};
        if (hc != NULL && gs_hostconfig_load(hc, m->config, &err) == 0)
                snprintf(p->mps_root, sizeof(p->mps_root), "%s", hc->mps_root);
        free(hc);
        p->render = (struct gs_metrics_opts){.hami = !m->no_hami, .node = p->node,
                                             .mps_root = p->mps_root[0] != '\0' ? p->mps_root : NULL};
        return 0;
}

/* --once: prime, wait one window and NVML's first answer (a failing NVML asked again for a few
 * seconds; without an answer, gpuslice_nvml_up 0), scrape. */
static int print_once(const struct metrics_cli *m, struct parts *p)
{
        struct gs_error err = {0};
        struct gs_observation obs;
        if (gs_collector_scan(p->collector, &obs, &err) == 0)
                gs_observation_release(&obs);
        unsigned window = m->window_ms != 0 ? m->window_ms : 1000;
        struct timespec ts = {window / 1000, (long)(window % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
        }
        if (p->gpus != NULL)
                gs_gpu_poller_wait_answer(p->gpus, GS_GPU_ONCE_WAIT_MS);
        size_t len;
        gs_autofree char *text = gs_metrics_scrape(p->collector, NULL, p->gpus, &p->render, &len, &err);
        if (text == NULL) {
                cli_error("metrics", "%s", err.msg);
                return CLI_EXIT_FAILURE;
        }
        fwrite(text, 1, len, stdout);
        return 0;
}

/* Serve until SIGINT, SIGTERM or SIGHUP; housekeeping once a second. */
static int serve(const struct metrics_cli *m, struct parts *p, const sigset_t *stop)
{
        struct gs_error err = {0};
        struct gs_metrics_server_opts so = {
                .listen = m->listen != NULL ? m->listen : ":9394",
                .collector = p->collector,
                .gpus = p->gpus,
                .render = p->render,
                .log = log_line,
        };
        struct gs_metrics_server *s = gs_metrics_server_start(&so, &err);
        if (s == NULL) {
                cli_error("metrics", "%s", err.msg);
                return CLI_EXIT_FAILURE;
        }
        char line[128];
        snprintf(line, sizeof(line), "listening on %s", gs_metrics_server_address(s));
        log_line(NULL, line);
        gs_metrics_server_tick(s);
        for (;;) {
                struct timespec one = {1, 0};
                int sig = sigtimedwait(stop, NULL, &one);
                if (sig > 0) {
                        fprintf(stderr, "gpuslice metrics: %s: stopping\n", strsignal(sig));
                        break;
                }
                gs_metrics_server_tick(s);
        }
        gs_metrics_server_stop(s);
        return 0;
}

int cmd_metrics(const struct cli_globals *g, int argc, char **argv)
{
        struct metrics_cli m = {0};
        gs_autofree const char **regions = calloc((size_t)argc + 1, sizeof(char *));
        if (regions == NULL) {
                cli_error("input", "out of memory");
                return CLI_EXIT_FAILURE;
        }
        m.regions = regions;
        int rc = parse(&m, argc, argv);
        if (rc != 0)
                return rc < 0 ? 0 : rc;
        /* Before any thread starts, so that every thread inherits it: the stop signals are
         * taken by sigtimedwait only; a client going away must not kill us. */
        sigset_t stop;
        sigemptyset(&stop);
        sigaddset(&stop, SIGINT);
        sigaddset(&stop, SIGTERM);
        sigaddset(&stop, SIGHUP);
        if (!m.once)
                pthread_sigmask(SIG_BLOCK, &stop, NULL);
        signal(SIGPIPE, SIG_IGN);
        /* A long-running server whose every scrape makes and frees the same few large buffers
         * (the exposition, the slices): keep them in the heap, not a fresh mmap each time (page
         * faults were a fifth of a scrape's cost). */
        mallopt(M_MMAP_THRESHOLD, 64 << 20);
        mallopt(M_TRIM_THRESHOLD, 128 << 20);
        struct parts p = {0};
        int rv = start_parts(g, &m, &p) < 0 ? CLI_EXIT_FAILURE : m.once ? print_once(&m, &p) : serve(&m, &p, &stop);
        gs_gpu_poller_stop(p.gpus);
        gs_collector_free(p.collector);
        return rv;
}
