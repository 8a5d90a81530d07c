/* gpuslice top: options and the terminal loop (ncurses); the view is src/observe/top.c. */
#include <curses.h>
#include <term.h>
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/cleanup.h"
#include "common/privilege.h"
#include "common/proc.h"
#include "common/strutil.h"
#include "observe/collect.h"
#include "observe/gpus.h"
#include "observe/top.h"
#include "runtime/hostconfig.h"

static const char top_help[] =
        "Usage: gpuslice [GLOBAL OPTIONS] top [OPTIONS]\n"
        "\n"
        "A live view of every GPU slice on this host, a row per slice and device: container, GPU,\n"
        "memory used / quota with a bar, compute used / limit, priority, the 99th percentile of the\n"
        "kernel launches' waits for the GPU over the interval (WAIT), processes; per GPU, NVML's\n"
        "memory and utilization (run in the isolated helper, never in this process). Refreshes every\n"
        "interval.\n"
        "Keys: m, c, n sort by memory, compute, name (the sorted column is marked *); q quits.\n"
        "\n"
        "  --interval=SECS          refresh every SECS (default 1); compute used is measured over it\n"
        "  --sort=KEY               memory (default), compute or name\n"
        "  --pids                   a PIDS column: the host pids of each slice's processes (from /proc)\n"
        "  --once                   print the view once (after one interval, so that compute used is\n"
        "                           measured, and once NVML has answered: a failing NVML is asked\n"
        "                           again for 3 s) and exit; needs no terminal\n"
        "  --json                   with --once: a JSON document instead of the table (implies --once)\n"
        "  --regions-dir=DIR        the slice directories of the hook and configure (default:\n"
        "                           slice.regions-dir of the host config, else " GS_SLICE_REGIONS_DIR ")\n"
        "  --region=PATH            also this usage region (gpuslice exec --region PATH), or every file a\n"
        "                           glob pattern matches (quote it: '/dev/shm/gpuslice-exec-*');\n"
        "                           repeatable\n"
        "  --config=FILE            host config to read (default " GS_HOSTCONFIG_DEFAULT_PATH ", if any)\n"
        "  --nvml-interval=SECS     ask NVML this often (default 5); each answer within --nvml-timeout\n"
        "  --no-nvml                no per-GPU lines and no host GPU indexes (NVML is never asked)\n"
        "  -h, --help\n"
        "\n"
        "Nothing is removed or changed: top only reads the usage regions. Skipped regions are shown on\n"
        "the bottom line (with --once: on stderr), once per file and reason.\n";

struct top_cli {
        const char *regions_dir, *config;
        const char **regions;
        size_t nregions;
        unsigned interval_ms, nvml_interval_ms;
        enum gs_top_sort sort;
        bool once, json, pids, no_nvml;
};

/* 0 parsed, -1 after --help, else an exit code. */
static int parse(struct top_cli *t, int argc, char **argv)
{
        enum { O_INTERVAL = 0x100, O_SORT, O_PIDS, O_ONCE, O_JSON, O_DIR, O_REGION, O_CONFIG, O_NVML_INTERVAL, O_NO_NVML };
        static const struct option opts[] = {
                {"interval", required_argument, NULL, O_INTERVAL}, {"sort", required_argument, NULL, O_SORT},
                {"pids", no_argument, NULL, O_PIDS},               {"once", no_argument, NULL, O_ONCE},
                {"json", no_argument, NULL, O_JSON},               {"regions-dir", required_argument, NULL, O_DIR},
                {"region", required_argument, NULL, O_REGION},     {"config", required_argument, NULL, O_CONFIG},
                {"nvml-interval", required_argument, NULL, O_NVML_INTERVAL},
                {"no-nvml", no_argument, NULL, O_NO_NVML},         {"help", no_argument, NULL, 'h'},
                {0},
        };
        int c, rc = 0;
        while (rc == 0 && (c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
                switch (c) {
                case O_INTERVAL: rc = cli_parse_seconds("top", "--interval", optarg, &t->interval_ms); break;
                case O_SORT:
                        if (gs_top_sort_parse(optarg, &t->sort) < 0)
                                return cli_usage_error("top", "invalid --sort: %s (memory, compute or name)", optarg);
                        break;
                case O_PIDS: t->pids = true; break;
                case O_ONCE: t->once = true; break;
                case O_JSON: t->json = t->once = true; break;
                case O_DIR:
                        if (optarg[0] != '/')
                                return cli_usage_error("top", "--regions-dir must be an absolute path: %s", optarg);
                        t->regions_dir = optarg;
                        break;
                case O_REGION:
                        if (optarg[0] != '/')
                                return cli_usage_error("top", "--region must be an absolute path: %s", optarg);
                        t->regions[t->nregions++] = optarg;
                        break;
                case O_CONFIG: t->config = optarg; break;
                case O_NVML_INTERVAL: rc = cli_parse_seconds("top", "--nvml-interval", optarg, &t->nvml_interval_ms); break;
                case O_NO_NVML: t->no_nvml = true; break;
                case 'h':
                        fputs(top_help, stdout);
                        return -1;
                case ':':
                        return cli_usage_error("top", "option '%s' needs a value", argv[optind - 1]);
                default:
                        return cli_usage_error("top", "unknown option '%s'", argv[optind - 1]);
                }
        }
        if (rc == 0 && optind < argc)
                return cli_usage_error("top", "unexpected argument '%s'", argv[optind]);
        if (rc == 0 && t->interval_ms == 0)
                t->interval_ms = 1000;
        return rc;
}

/* ------------------------------------------------------------------------------------------- */
/* log lines: stderr with --once; on the live screen, the latest on its bottom line            */

static struct {
        pthread_mutex_t lock;
        bool live;
        char last[512];
} logs = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* From the collector (this thread) and the NVML poller (its thread). */
static void log_line(void *arg, const char *line)
{
        (void)arg;
        pthread_mutex_lock(&logs.lock);
        if (logs.live) {
                gs_strlcpy(logs.last, line, sizeof(logs.last));
        } else {
                fprintf(stderr, "gpuslice top: %s\n", line);
                fflush(stderr);
        }
        pthread_mutex_unlock(&logs.lock);
}

/* ------------------------------------------------------------------------------------------- */
/* the parts: collector, NVML poller, the current observation and its view                     */

struct top_state {
        const struct top_cli *o;
        struct gs_collector *collector;
        struct gs_gpu_poller *gpus;
        struct gs_gpu_stats *stats;   /* the poller's last answer, copied at each refresh */
        struct gs_observation obs;
        struct gs_top_view view;
        bool have;                    /* obs and view hold a scan */
        enum gs_top_sort by;
};

static int start_parts(const struct cli_globals *g, const struct top_cli *o, struct top_state *t)
{
        struct cli_observe_opts oo = {
                .verb = "top",
                .config = o->config,
                .regions_dir = o->regions_dir,
                .regions = o->regions,
                .nregions = o->nregions,
                .window_ms = o->interval_ms, /* each refresh closes a window */
                .nvml_interval_ms = o->nvml_interval_ms,
                .no_nvml = o->no_nvml,
                .log = log_line,
        };
        if (!o->no_nvml && (t->stats = malloc(sizeof(*t->stats))) == NULL) {
                cli_error("top", "out of memory");
                return -1;
        }
        return cli_observe_start(g, &oo, &t->collector, &t->gpus);
}

static void drop_view(struct top_state *t)
{
        if (!t->have)
                return;
        gs_top_view_release(&t->view);
        gs_observation_release(&t->obs);
        t->have = false;
}

/* Scan, and make the view of it (host pids with --pids), sorted; it replaces the last one. -1 when
 * out of memory. */
static int refresh_view(struct top_state *t, struct gs_error *err)
{
        struct gs_observation obs;
        struct gs_top_view view;
        if (gs_collector_scan(t->collector, &obs, err) < 0)
                return -1;
        if (t->gpus != NULL)
                gs_gpu_poller_get(t->gpus, t->stats);
        if (gs_top_view_build(&view, &obs, t->gpus != NULL ? t->stats : NULL, err) < 0) {
                gs_observation_release(&obs);
                return -1;
        }
        int rc = 0;
        if (t->o->pids) {
                /* other users' /proc/<pid>/ns needs CAP_SYS_PTRACE: only for this */
                gs_caps_enter(GS_STAGE_CONTAINER, NULL);
                rc = gs_top_view_host_pids(&view, t->have ? &t->view : NULL, err);
                gs_caps_enter(GS_STAGE_INIT, NULL);
        }
        drop_view(t);
        t->obs = obs;
        t->view = view;
        t->view.obs = &t->obs; /* the view points at the observation it was made of: moved here */
        t->have = true;
        if (rc < 0)
                return -1;
        gs_top_sort(&t->view, t->by);
        return 0;
}

static void sleep_ms(unsigned ms)
{
        struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
        }
}

static void clock_text(uint64_t realtime_ns, char *out, size_t len)
{
        time_t secs = (time_t)(realtime_ns / 1000000000ull);
        struct tm tm;
        if (localtime_r(&secs, &tm) == NULL || strftime(out, len, "%H:%M:%S", &tm) == 0)
                out[0] = '\0';
}

/* ------------------------------------------------------------------------------------------- */
/* --once                                                                                      */

static int print_once(struct top_state *t)
{
        struct gs_error err = {0};
        struct gs_observation prime;
        if (gs_collector_scan(t->collector, &prime, &err) == 0)
                gs_observation_release(&prime);
        sleep_ms(t->o->interval_ms);
        /* one run, complete output: NVML's answer, not its first attempt (a failed one is retried
         * for a few seconds; if none answers, the view and --json say why) */
        if (t->gpus != NULL)
                gs_gpu_poller_wait_answer(t->gpus, GS_GPU_ONCE_WAIT_MS);
        if (refresh_view(t, &err) < 0) {
                cli_error("top", "%s", err.msg);
                return CLI_EXIT_FAILURE;
        }
        if (t->o->json) {
                json_object *doc = gs_top_json(&t->view);
                if (doc == NULL) {
                        cli_error("top", "out of memory");
                        return CLI_EXIT_FAILURE;
                }
                cli_print_json(doc);
                return 0;
        }
        unsigned width = 0; /* not a terminal: as wide as the content */
        struct winsize ws;
        if (isatty(STDOUT_FILENO))
                width = ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 80;
        struct gs_top_layout l;
        gs_top_layout(&t->view, width, t->o->pids, &l);
        char clock[16], line[4096];
        clock_text(t->obs.time_ns, clock, sizeof(clock));
        gs_top_format_title(&t->view, t->by, clock, width, line, sizeof(line));
        puts(line);
        for (unsigned i = 0; i < t->view.ngpus; i++) {
                gs_top_format_gpu(&t->view, i, width, line, sizeof(line));
                puts(line);
        }
        putchar('\n');
        gs_top_format_header(&l, t->by, line, sizeof(line));
        puts(line);
        for (size_t i = 0; i < t->view.nrows; i++) {
                gs_top_format_row(&t->view, &l, &t->view.rows[i], line, sizeof(line));
                puts(line);
        }
        return 0;
}

/* ------------------------------------------------------------------------------------------- */
/* the live view                                                                               */

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig) { stop_signal = sig; }

enum { PAIR_OK = 1, PAIR_HIGH, PAIR_FULL };

/* (gs_now_ms as the unsigned milliseconds this file computes with) */
static uint64_t mono_ms(void)
{
        return (uint64_t)gs_now_ms();
}

static void put_line(int y, int cols, const char *s, attr_t attr)
{
        if (attr != A_NORMAL)
                attron(attr);
        mvaddnstr(y, 0, s, cols);
        if (attr != A_NORMAL)
                attroff(attr);
}

static void draw(struct top_state *t, bool colors)
{
        int rows, cols;
        getmaxyx(stdscr, rows, cols);
        erase();
        if (rows < 1 || cols < 1)
                return;
        unsigned width = (unsigned)cols;
        char line[4096], clock[16];
        if (width >= sizeof(line))
                width = sizeof(line) - 1;
        int y = 0, last = rows - 1; /* the bottom line: keys and the latest log line */
        clock_text(t->obs.time_ns, clock, sizeof(clock));
        gs_top_format_title(&t->view, t->by, clock, width, line, sizeof(line));
        put_line(y++, cols, line, A_BOLD);
        for (unsigned i = 0; i < t->view.ngpus && y < last - 2; i++) {
                gs_top_format_gpu(&t->view, i, width, line, sizeof(line));
                put_line(y++, cols, line, A_NORMAL);
        }
        if (rows >= 10) /* a blank line before the table, where there is room */
                y++;
        struct gs_top_layout l;
        gs_top_layout(&t->view, width, t->o->pids, &l);
        if (y < last) {
                gs_top_format_header(&l, t->by, line, sizeof(line));
                put_line(y, cols, line, A_REVERSE);
                mvchgat(y, 0, -1, A_REVERSE, 0, NULL);
                y++;
        }
        size_t room = y < last ? (size_t)(last - y) : 0, shown = t->view.nrows;
        if (shown > room)
                shown = room > 0 ? room - 1 : 0; /* the last line of the room says how many more */
        for (size_t i = 0; i < shown; i++, y++) {
                const struct gs_top_row *r = &t->view.rows[i];
                gs_top_format_row(&t->view, &l, r, line, sizeof(line));
                put_line(y, cols, line, A_NORMAL);
                unsigned fill = gs_top_bar_fill(&l, r);
                if (colors && fill > 0 && l.bar_col + 1 + fill <= width) {
                        double f = gs_top_memory_fraction(r);
                        short pair = f >= 0.9 ? PAIR_FULL : f >= 0.75 ? PAIR_HIGH : PAIR_OK;
                        mvchgat(y, (int)l.bar_col + 1, (int)fill, A_NORMAL, pair, NULL);
                }
        }
        if (shown < t->view.nrows && y < last) {
                snprintf(line, sizeof(line), "... %zu more row%s (a taller terminal shows them)", t->view.nrows - shown,
                         t->view.nrows - shown == 1 ? "" : "s");
                put_line(y++, cols, line, A_DIM);
        }
        if (t->view.nrows == 0 && y < last)
                put_line(y++, cols, "no slices yet (a slice shows once its container or exec region uses the GPU)",
                         A_DIM);
        char msg[512];
        pthread_mutex_lock(&logs.lock);
        gs_strlcpy(msg, logs.last, sizeof(msg));
        pthread_mutex_unlock(&logs.lock);
        char printable[512];
        gs_top_printable(msg, printable, sizeof(printable));
        snprintf(line, sizeof(line), "m memory  c compute  n name  q quit%s%s", printable[0] ? "  | " : "", printable);
        if (last > 0 || rows == 1)
                put_line(last, cols > 1 ? cols - 1 : 1, line, A_DIM); /* never the bottom-right cell */
        refresh();
}

static int live(struct top_state *t)
{
        SCREEN *scr = newterm(NULL, stdout, stdin);
        if (scr == NULL) {
                const char *term = getenv("TERM");
                cli_error("terminal", "cannot use this terminal (TERM=%s): use --once for a plain table",
                          term != NULL ? term : "unset");
                return CLI_EXIT_FAILURE;
        }
        const char *cup = tigetstr("cup");
        if (cup == NULL || cup == (char *)-1) { /* no cursor addressing: a dumb terminal */
                endwin();
                delscreen(scr);
                const char *term = getenv("TERM");
                cli_error("terminal", "this terminal (TERM=%s) cannot address the cursor: use --once for a plain table",
                          term != NULL ? term : "unset");
                return CLI_EXIT_FAILURE;
        }
        pthread_mutex_lock(&logs.lock);
        logs.live = true;
        pthread_mutex_unlock(&logs.lock);
        cbreak();
        noecho();
        nonl();
        keypad(stdscr, TRUE);
        curs_set(0);
        bool colors = has_colors() && start_color() == OK;
        if (colors) {
                use_default_colors();
                init_pair(PAIR_OK, COLOR_GREEN, -1);
                init_pair(PAIR_HIGH, COLOR_YELLOW, -1);
                init_pair(PAIR_FULL, COLOR_RED, -1);
        }
        struct gs_error err = {0};
        int rv = 0;
        uint64_t next = mono_ms();
        bool dirty = true;
        while (stop_signal == 0) {
                uint64_t now = mono_ms();
                if (now >= next) {
                        if (refresh_view(t, &err) < 0) {
                                rv = -1;
                                break;
                        }
                        next = now + t->o->interval_ms;
                        dirty = true;
                }
                if (dirty)
                        draw(t, colors);
                dirty = false;
                now = mono_ms();
                uint64_t wait = next > now ? next - now : 0;
                timeout(wait > 200 ? 200 : (int)wait); /* signals are seen within 200 ms */
                int ch = getch();
                if (ch == 'q' || ch == 'Q')
                        break;
                enum gs_top_sort by = t->by;
                if (ch == 'm' || ch == 'M')
                        by = GS_TOP_SORT_MEMORY;
                else if (ch == 'c' || ch == 'C')
                        by = GS_TOP_SORT_COMPUTE;
                else if (ch == 'n' || ch == 'N')
                        by = GS_TOP_SORT_NAME;
                else if (ch == KEY_RESIZE)
                        dirty = true;
                else if (ch == 12) { /* Ctrl-L */
                        clearok(curscr, TRUE);
                        dirty = true;
                }
                if (by != t->by) {
                        t->by = by;
                        gs_top_sort(&t->view, by);
                        dirty = true;
                }
        }
        endwin();
        delscreen(scr);
        pthread_mutex_lock(&logs.lock);
        logs.live = false;
        pthread_mutex_unlock(&logs.lock);
        if (rv < 0) {
                cli_error("top", "%s", err.msg);
                return CLI_EXIT_FAILURE;
        }
        return 0;
}

int cmd_top(const struct cli_globals *g, int argc, char **argv)
{
        struct top_cli o = {0};
        gs_autofree const char **regions = calloc((size_t)argc + 1, sizeof(char *));
        if (regions == NULL) {
                cli_error("input", "out of memory");
                return CLI_EXIT_FAILURE;
        }
        o.regions = regions;
        int rc = parse(&o, argc, argv);
        if (rc != 0)
                return rc < 0 ? 0 : rc;
        if (!o.once && (!isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO)))
                return cli_usage_error("top", "the live view needs a terminal (std%s is not one): use --once, or "
                                              "--once --json, for scripts",
                                       isatty(STDOUT_FILENO) ? "in" : "out");
        /* The stop signals and SIGWINCH belong to this thread (the terminal loop): blocked while
         * the NVML thread starts, so that it inherits them blocked. */
        sigset_t sigs, old;
        sigemptyset(&sigs);
        sigaddset(&sigs, SIGINT);
        sigaddset(&sigs, SIGTERM);
        sigaddset(&sigs, SIGHUP);
        sigaddset(&sigs, SIGWINCH);
        if (!o.once) {
                struct sigaction sa = {.sa_handler = on_stop}; /* no SA_RESTART: wake the wait */
                sigemptyset(&sa.sa_mask);
                sigaction(SIGINT, &sa, NULL);
                sigaction(SIGTERM, &sa, NULL);
                sigaction(SIGHUP, &sa, NULL);
        }
        pthread_sigmask(SIG_BLOCK, &sigs, &old);
        struct top_state t = {.o = &o, .by = o.sort};
        int rv = CLI_EXIT_FAILURE;
        bool started = start_parts(g, &o, &t) == 0;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (started)
                rv = o.once ? print_once(&t) : live(&t);
        drop_view(&t);
        gs_gpu_poller_stop(t.gpus);
        gs_collector_free(t.collector);
        free(t.stats);
        return rv;
}
