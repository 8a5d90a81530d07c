/* gpuslice slice list | show | set: option parsing and printing; the work is in src/slice/live.c
 * (changing a slice's live limits) and src/slice/find.c (finding slices). */
#include <ctype.h>
#include <getopt.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/cleanup.h"
#include "runtime/hostconfig.h"
#include "slice/find.h"
#include "slice/live.h"
#include "vgpu/config.h"

static const char slice_help[] =
        "Usage: gpuslice [GLOBAL OPTIONS] slice COMMAND [OPTIONS]\n"
        "\n"
        "The GPU slices running on this host (containers configured with a slice, and `gpuslice exec\n"
        "--regions-dir`), and live changes of their limits: every process of the slice applies a new\n"
        "limit within a second, without a restart.\n"
        "\n"
        "Commands:\n"
        "  list     the live slices: id, pod, limits\n"
        "  show     one slice: its limits, each device's memory in use, its last changes\n"
        "  set      change a slice's memory quota, compute share, compute mode or priority\n"
        "\n"
        "SLICE is a container id (or a unique start of one), a slice directory, or a Kubernetes\n"
        "pod as NAMESPACE/POD (NAMESPACE/POD/CONTAINER when the pod has several sliced containers).\n"
        "'gpuslice slice COMMAND --help' for a command's options.\n";

static const char list_help[] =
        "Usage: gpuslice [GLOBAL OPTIONS] slice list [OPTIONS]\n"
        "\n"
        "The live slices under the regions directory, one a line: id, pod, memory quota, compute\n"
        "share, mode, priority, the generation of their limits.\n"
        "\n"
        "      --regions-dir=DIR  slice directories (default: slice.regions-dir of the host config,\n"
        "                         else " GS_SLICE_REGIONS_DIR ")\n"
        "      --config=FILE      host config to read (default " GS_HOSTCONFIG_DEFAULT_PATH ", if any)\n"
        "      --json             one JSON document\n"
        "  -h, --help\n";

static const char show_help[] =
        "Usage: gpuslice [GLOBAL OPTIONS] slice show [OPTIONS] SLICE\n"
        "\n"
        "One slice: its limits, each device's memory in use against its quota (OVER QUOTA when a\n"
        "shrink left it above: new allocations fail until it is under), and its last changes (who,\n"
        "when, old -> new).\n"
        "\n"
        "      --regions-dir=DIR, --config=FILE, --json   as for list\n"
        "  -h, --help\n";

static const char set_help[] =
        "Usage: gpuslice [GLOBAL OPTIONS] slice set [OPTIONS] SLICE [--memory SIZE] [--memory-<i> SIZE]\n"
        "                [--compute PERCENT] [--compute-<i> PERCENT] [--compute-mode cap|share|off]\n"
        "                [--priority high|normal|low]\n"
        "\n"
        "Change the limits of a running slice. The host's live limits file of the slice is replaced\n"
        "whole (the container sees it read-only); every process of the slice applies it within a\n"
        "second: memory at once (cudaMemGetInfo, NVML and nvidia-smi inside show the new quota),\n"
        "compute at the limiter's next window. A quota below what is in use frees and kills nothing:\n"
        "new allocations fail until usage is under it. Each change is recorded with the uid and pid\n"
        "that made it (the slice's changes, the debug log, syslog).\n"
        "\n"
        "  --memory=SIZE         quota of every device (bytes, or K/M/G/T or Ki/Mi/Gi/Ti; 'unlimited')\n"
        "  --memory-<i>=SIZE     quota of device i\n"
        "  --compute=PERCENT     share of every device, 1..100 (100: unlimited); only for a slice that\n"
        "                        started with a compute limit\n"
        "  --compute-<i>=PERCENT share of device i\n"
        "  --compute-mode=MODE   cap, share or off (off: the gate stays, at the whole GPU)\n"
        "  --priority=PRIORITY   high, normal or low\n"
        "      --regions-dir=DIR, --config=FILE, --json   as for list\n"
        "  -h, --help\n";

enum verb { V_LIST, V_SHOW, V_SET };

struct slice_cli {
        enum verb verb;
        const char *name, *help;
        const char *regions_dir, *config, *what;
        bool json;
        struct gs_slice_opts change;
        bool any;
};

/* Options into sc; -1 to go on, else the exit status. */
static int parse(struct slice_cli *sc, int argc, char **argv, char **av)
{
        enum { O_REGIONS = 0x100, O_CONFIG, O_JSON, O_MEMORY, O_COMPUTE, O_MODE, O_PRIORITY };
        static const struct option all[] = {
                {"regions-dir", required_argument, NULL, O_REGIONS}, {"config", required_argument, NULL, O_CONFIG},
                {"json", no_argument, NULL, O_JSON},                 {"help", no_argument, NULL, 'h'},
                {"memory", required_argument, NULL, O_MEMORY},       {"compute", required_argument, NULL, O_COMPUTE},
                {"compute-mode", required_argument, NULL, O_MODE},   {"priority", required_argument, NULL, O_PRIORITY},
                {0},
        };
        static const struct option common[] = {
                {"regions-dir", required_argument, NULL, O_REGIONS}, {"config", required_argument, NULL, O_CONFIG},
                {"json", no_argument, NULL, O_JSON}, {"help", no_argument, NULL, 'h'}, {0},
        };
        if (sc->verb == V_SET) {
                argc = cli_take_indexed(sc->name, argc, argv, av, "memory", sc->change.memory_dev, GS_SLICE_MAX_DEVICES);
                if (argc >= 0)
                        argc = cli_take_indexed(sc->name, argc, av, av, "compute", sc->change.compute_dev,
                                                GS_SLICE_MAX_DEVICES);
                if (argc < 0)
                        return CLI_EXIT_USAGE;
                for (int i = 0; i < GS_SLICE_MAX_DEVICES; i++)
                        sc->any = sc->any || sc->change.memory_dev[i] != NULL || sc->change.compute_dev[i] != NULL;
        } else {
                for (int i = 0; i < argc; i++)
                        av[i] = argv[i];
                av[argc] = NULL;
        }
        int c;
        while ((c = getopt_long(argc, av, ":h", sc->verb == V_SET ? all : common, NULL)) != -1) {
                switch (c) {
                case O_REGIONS:
                        if (optarg[0] != '/')
                                return cli_usage_error(sc->name, "--regions-dir must be an absolute path: %s", optarg);
                        sc->regions_dir = optarg;
                        break;
                case O_CONFIG: sc->config = optarg; break;
                case O_JSON: sc->json = true; break;
                case O_MEMORY: sc->change.memory = optarg, sc->any = true; break;
                case O_COMPUTE: sc->change.compute = optarg, sc->any = true; break;
                case O_MODE: sc->change.compute_mode = optarg, sc->any = true; break;
                case O_PRIORITY: sc->change.priority = optarg, sc->any = true; break;
                case 'h': fputs(sc->help, stdout); return 0;
                case ':': return cli_usage_error(sc->name, "option '%s' needs a value", av[optind - 1]);
                default: return cli_usage_error(sc->name, "unknown option '%s'", av[optind - 1]);
                }
        }
        if (sc->verb == V_LIST) {
                if (optind < argc)
                        return cli_usage_error(sc->name, "unexpected argument '%s'", av[optind]);
                return -1;
        }
        if (optind >= argc)
                return cli_usage_error(sc->name, "missing SLICE (a container id, a slice directory or NAMESPACE/POD)");
        if (optind + 1 < argc)
                return cli_usage_error(sc->name, "unexpected argument '%s'", av[optind + 1]);
        sc->what = av[optind];
        if (sc->verb == V_SET && !sc->any)
                return cli_usage_error(sc->name, "nothing to change: give --memory, --compute, --compute-mode or --priority");
        return -1;
}

/* Text from a file the container could write: printable ASCII only. */
static void printable(const char *in, char *out, size_t len)
{
        size_t i = 0;
        for (; in[i] != '\0' && i + 1 < len; i++)
                out[i] = isprint((unsigned char)in[i]) ? in[i] : '?';
        out[i] = '\0';
}

static void pod_of(const struct gs_slice_entry *e, char *out, size_t len)
{
        if (e->labels.pod[0] == '\0')
                snprintf(out, len, "-");
        else
                snprintf(out, len, "%s/%s%s%s", e->labels.ns, e->labels.pod, e->labels.container[0] ? "/" : "",
                         e->labels.container);
}

static void memory_text(const struct gs_slice_limits *l, char *out, size_t len)
{
        size_t n = (size_t)snprintf(out, len, "%s", l->memory[0] ? l->memory : "unlimited");
        for (int i = 0; i < GS_SLICE_MAX_DEVICES && n < len; i++)
                if (l->memory_dev[i][0] != '\0')
                        n += (size_t)snprintf(out + n, len - n, " [%d]=%s", i, l->memory_dev[i]);
}

static void compute_text(const struct gs_slice_limits *l, char *out, size_t len)
{
        size_t n = (size_t)snprintf(out, len, "%s%s", l->compute[0] ? l->compute : "unlimited", l->compute[0] ? "%" : "");
        for (int i = 0; i < GS_SLICE_MAX_DEVICES && n < len; i++)
                if (l->compute_dev[i][0] != '\0')
                        n += (size_t)snprintf(out + n, len - n, " [%d]=%s%%", i, l->compute_dev[i]);
}

static json_object *limits_json(const struct gs_slice_limits *l)
{
        json_object *o = json_object_new_object();
        json_object_object_add(o, "generation", json_object_new_uint64(l->generation));
        json_object_object_add(o, "memory", l->memory[0] ? json_object_new_string(l->memory) : NULL);
        json_object_object_add(o, "compute", l->compute[0] ? json_object_new_string(l->compute) : NULL);
        json_object *md = json_object_new_object(), *cd = json_object_new_object();
        for (int i = 0; i < GS_SLICE_MAX_DEVICES; i++) {
                char k[8];
                snprintf(k, sizeof(k), "%d", i);
                if (l->memory_dev[i][0] != '\0')
                        json_object_object_add(md, k, json_object_new_string(l->memory_dev[i]));
                if (l->compute_dev[i][0] != '\0')
                        json_object_object_add(cd, k, json_object_new_string(l->compute_dev[i]));
        }
        json_object_object_add(o, "memory_device", md);
        json_object_object_add(o, "compute_device", cd);
        json_object_object_add(o, "compute_mode", json_object_new_string(l->compute_mode[0] ? l->compute_mode : "cap"));
        json_object_object_add(o, "priority", json_object_new_string(l->priority[0] ? l->priority : "normal"));
        json_object_object_add(o, "compute_changeable", json_object_new_boolean(l->compute_gated));
        return o;
}

static json_object *entry_json(const struct gs_slice_entry *e)
{
        json_object *o = json_object_new_object();
        json_object_object_add(o, "id", json_object_new_string(e->id));
        json_object_object_add(o, "owner_pid", json_object_new_int(e->owner));
        json_object_object_add(o, "namespace", e->labels.ns[0] ? json_object_new_string(e->labels.ns) : NULL);
        json_object_object_add(o, "pod", e->labels.pod[0] ? json_object_new_string(e->labels.pod) : NULL);
        json_object_object_add(o, "container", e->labels.container[0] ? json_object_new_string(e->labels.container) : NULL);
        json_object_object_add(o, "limits", e->has_live == 1 ? limits_json(&e->limits) : NULL);
        return o;
}

static int do_list(const struct slice_cli *sc)
{
        gs_autofree struct gs_slice_entry *v = NULL;
        size_t n = 0;
        struct gs_error err = {0};
        if (gs_slice_list(sc->regions_dir, &v, &n, &err) < 0) {
                cli_error("slice", "%s", err.msg);
                return CLI_EXIT_FAILURE;
        }
        if (sc->json) {
                json_object *root = json_object_new_object(), *a = json_object_new_array();
                for (size_t i = 0; i < n; i++)
                        json_object_array_add(a, entry_json(&v[i]));
                json_object_object_add(root, "slices", a);
                cli_print_json(root);
                return 0;
        }
        printf("%-20s %-30s %-14s %-10s %-6s %-7s %s\n", "ID", "POD", "MEMORY", "COMPUTE", "MODE", "PRIO", "GEN");
        for (size_t i = 0; i < n; i++) {
                char pod[800], pp[800], mem[256], cmp[256], id[24];
                pod_of(&v[i], pod, sizeof(pod));
                printable(pod, pp, sizeof(pp));
                snprintf(id, sizeof(id), "%.20s", v[i].id);
                if (v[i].has_live != 1) {
                        printf("%-20s %-30s (no live limits: made by an older gpuslice)\n", id, pp);
                        continue;
                }
                const struct gs_slice_limits *l = &v[i].limits;
                memory_text(l, mem, sizeof(mem));
                compute_text(l, cmp, sizeof(cmp));
                printf("%-20s %-30s %-14s %-10s %-6s %-7s %llu\n", id, pp, mem, cmp, l->compute_mode[0] ? l->compute_mode : "cap",
                       l->priority[0] ? l->priority : "normal", (unsigned long long)l->generation);
        }
        return 0;
}

static void fmt_mib(uint64_t b, char *out, size_t len)
{
        if (b == 0)
                snprintf(out, len, "unlimited");
        else
                snprintf(out, len, "%.1f MiB", (double)b / (1024.0 * 1024.0));
}

static int print_show(const struct slice_cli *sc, const struct gs_slice_info *in)
{
        if (sc->json) {
                json_object *root = entry_json(&in->e), *devs = json_object_new_array(), *ch = json_object_new_array();
                for (unsigned i = 0; i < in->ndevices; i++) {
                        const struct gs_slice_device *d = &in->dev[i];
                        json_object *o = json_object_new_object();
                        json_object_object_add(o, "index", json_object_new_int((int)i));
                        json_object_object_add(o, "uuid", json_object_new_string(d->uuid));
                        json_object_object_add(o, "memory_used", json_object_new_uint64(d->used));
                        json_object_object_add(o, "memory_limit", d->quota ? json_object_new_uint64(d->quota) : NULL);
                        json_object_object_add(o, "compute_limit", d->compute ? json_object_new_int((int)d->compute) : NULL);
                        json_object_object_add(o, "over_quota", json_object_new_boolean(d->over));
                        json_object_array_add(devs, o);
                }
                for (unsigned i = 0; i < in->nchanges; i++)
                        json_object_array_add(ch, json_object_new_string(in->changes[i]));
                json_object_object_add(root, "devices", devs);
                json_object_object_add(root, "changes", ch);
                cli_print_json(root);
                return 0;
        }
        char pod[800], pp[800], buf[256];
        pod_of(&in->e, pod, sizeof(pod));
        printable(pod, pp, sizeof(pp));
        printf("slice:       %s\npod:         %s\nowner pid:   %d\n", in->e.id, pp, (int)in->e.owner);
        if (in->e.has_live == 1) {
                const struct gs_slice_limits *l = &in->e.limits;
                memory_text(l, buf, sizeof(buf));
                printf("memory:      %s\n", buf);
                compute_text(l, buf, sizeof(buf));
                printf("compute:     %s%s\n", buf, l->compute_gated ? "" : " (not changeable: started without one)");
                printf("mode:        %s\npriority:    %s\ngeneration:  %llu\n", l->compute_mode[0] ? l->compute_mode : "cap",
                       l->priority[0] ? l->priority : "normal", (unsigned long long)l->generation);
        } else {
                printf("limits:      (no live limits file: made by an older gpuslice)\n");
        }
        if (in->ndevices == 0)
                printf("devices:     (no usage region yet: nothing has used the GPU)\n");
        for (unsigned i = 0; i < in->ndevices; i++) {
                char used[32], quota[32], uuid[96];
                fmt_mib(in->dev[i].used, used, sizeof(used));
                fmt_mib(in->dev[i].quota, quota, sizeof(quota));
                printable(in->dev[i].uuid, uuid, sizeof(uuid));
                printf("device %-2u    %s: %s of %s%s\n", i, uuid[0] ? uuid : "-", used, quota,
                       in->dev[i].over ? "  OVER QUOTA: new allocations fail until usage is under it" : "");
        }
        for (unsigned i = 0; i < in->nchanges; i++) {
                printable(in->changes[i], buf, sizeof(buf));
                printf("%s %s\n", i == 0 ? "changes:    " : "            ", buf);
        }
        return 0;
}

static int run(const struct slice_cli *sc)
{
        if (sc->verb == V_LIST)
                return do_list(sc);
        char id[256];
        struct gs_error err = {0};
        if (gs_slice_resolve(sc->regions_dir, sc->what, id, sizeof(id), &err) < 0) {
                cli_error("slice", "%s", err.msg);
                return CLI_EXIT_FAILURE;
        }
        if (sc->verb == V_SHOW) {
                gs_autofree struct gs_slice_info *in = malloc(sizeof(*in));
                if (in == NULL || gs_slice_show(sc->regions_dir, id, in, &err) < 0) {
                        cli_error("slice", "%s", in == NULL ? "out of memory" : err.msg);
                        return CLI_EXIT_FAILURE;
                }
                return print_show(sc, in);
        }
        struct gs_slice_limits before, after;
        if (gs_slice_set(sc->regions_dir, id, &sc->change, &before, &after, &err) < 0) {
                cli_error("slice", "%s", err.msg);
                return CLI_EXIT_FAILURE;
        }
        char diff[1024];
        gs_slice_limits_diff(&before, &after, diff, sizeof(diff));
        if (sc->json) {
                json_object *root = json_object_new_object();
                json_object_object_add(root, "id", json_object_new_string(id));
                json_object_object_add(root, "before", limits_json(&before));
                json_object_object_add(root, "after", limits_json(&after));
                json_object_object_add(root, "change", json_object_new_string(diff));
                cli_print_json(root);
        } else {
                printf("slice %s: %s (generation %llu)\n", id, diff, (unsigned long long)after.generation);
        }
        return 0;
}

/* The regions directory: --regions-dir, else the host config's. */
static int regions_from_config(struct slice_cli *sc, struct gs_hostconfig *hc)
{
        if (sc->regions_dir != NULL)
                return 0;
        struct gs_error err = {0};
        if (gs_hostconfig_load(hc, sc->config, &err) < 0) {
                cli_error("config", "%s", err.msg);
                return -1;
        }
        sc->regions_dir = hc->regions_dir;
        return 0;
}

int cmd_slice(const struct cli_globals *g, int argc, char **argv)
{
        (void)g;
        int rc = cli_subcommand_help(argc, argv, slice_help);
        if (rc >= 0)
                return rc;
        const char *sub = argv[1];
        struct slice_cli sc = {0};
        if (strcmp(sub, "list") == 0)
                sc = (struct slice_cli){.verb = V_LIST, .name = "slice list", .help = list_help};
        else if (strcmp(sub, "show") == 0)
                sc = (struct slice_cli){.verb = V_SHOW, .name = "slice show", .help = show_help};
        else if (strcmp(sub, "set") == 0)
                sc = (struct slice_cli){.verb = V_SET, .name = "slice set", .help = set_help};
        else
                return cli_usage_error("slice", "unknown slice command '%s' (list, show or set)", sub);
        gs_autofree char **av = calloc((size_t)argc + 1, sizeof(char *));
        gs_autofree struct gs_hostconfig *hc = malloc(sizeof(*hc));
        if (av == NULL || hc == NULL) {
                cli_error("input", "out of memory");
                return CLI_EXIT_FAILURE;
        }
        optind = 0;
        int rv = parse(&sc, argc - 1, argv + 1, av);
        if (rv >= 0)
                return rv;
        if (regions_from_config(&sc, hc) < 0)
                return CLI_EXIT_FAILURE;
        return run(&sc);
}
