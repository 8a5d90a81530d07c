/* gpuslice list: the files and devices a container would get, one path per line, in
 * nvidia-container-cli's order: driver nodes, GPU nodes, MIG access files (and their /dev caps
 * nodes), MIG config/monitor files, binaries, libraries (64-bit, then 32-bit), IPC paths, firmware.
 * Paths are inside the driver root. */
#include <getopt.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <fcntl.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/path.h"
#include "common/strutil.h"
#include "select/caps.h"

static const char list_help[] =
        "Usage: gpuslice [GLOBAL OPTIONS] list [OPTIONS]\n"
        "\n"
        "Query the driver and list what configuring a container with GPU support would use.\n"
        "With no options (or only --require, --json): --device=all --compat32 -l -b -i -f.\n"
        "Paths are inside the driver root.\n"
        "\n"
        "  -d, --device=LIST         devices to list nodes for (repeatable; comma list): all, none,\n"
        "                            index, GPU-UUID, PCI bus id ([domain:]bus:dev.fn), MIG-UUID,\n"
        "                            GPU:MIG index, <gpu>:gi<G>[:ci<C>]\n"
        "  -l, --libraries           list driver libraries\n"
        "  -b, --binaries            list driver binaries\n"
        "  -i, --ipcs                list driver IPC sockets and directories\n"
        "  -f, --firmwares           list GSP firmware files\n"
        "      --compat32            also list 32-bit libraries (with -l)\n"
        "      --compute, --utility, --video, --graphics, --display, --ngx\n"
        "                            only what these driver capabilities need (default: all)\n"
        "      --mig-config=all      list the MIG configuration capability files\n"
        "      --mig-monitor=all     list the MIG monitoring capability files\n"
        "      --require=EXPR        fail unless EXPR holds for each selected GPU (repeatable;\n"
        "                            e.g. 'cuda>=12.0 brand=tesla,driver>=535')\n"
        "      --no-persistenced, --no-fabricmanager, --no-gsp-firmware\n"
        "                            leave out that socket / that socket / the firmware\n"
        "      --json                print one JSON object with a list per category\n"
        "  -h, --help\n";

enum { CAT_DEVICES, CAT_BINARIES, CAT_LIBRARIES, CAT_LIBRARIES32, CAT_IPCS, CAT_FIRMWARES, NCATS };
static const char *const cat_names[NCATS] = {"devices", "binaries", "libraries", "compat32_libraries",
                                             "ipcs", "firmwares"};

struct out {
        bool json;
        json_object *cats[NCATS];
        struct gs_file_list seen; /* device paths printed so far (two CIs share a GI file) */
};

static void emit(struct out *o, int cat, const char *path)
{
        if (cat == CAT_DEVICES) {
                if (gs_file_list_contains(&o->seen, path))
                        return;
                gs_file_list_add(&o->seen, path, 0, NULL);
        }
        if (!o->json) {
                puts(path);
                return;
        }
        if (o->cats[cat] == NULL)
                o->cats[cat] = json_object_new_array();
        json_object_array_add(o->cats[cat], json_object_new_string(path));
}

struct list_opts {
        char *devices;
        char *mig_config;
        char *mig_monitor;
        const char *requires[GS_MAX_REQUIRES + 1];
        size_t nrequires;
        bool libs, bins, ipcs, firmwares, compat32, json;
        unsigned caps;    /* 0 = no filter */
        unsigned drvopts; /* GS_DRV_* */
};

static bool want(const struct list_opts *lo, unsigned item_caps)
{
        return lo->caps == 0 || gs_caps_want(gs_caps_expand(lo->caps), item_caps);
}

/* stat an in-root path (links resolved inside the root); false if it does not exist. */
static bool stat_in_root(struct gs_context *ctx, const char *path, struct stat *st)
{
        int fd = gs_open_in_root(gs_context_rootfd(ctx), path, O_PATH, NULL);
        if (fd < 0)
                return false;
        bool ok = fstat(fd, st) == 0;
        close(fd);
        return ok;
}

/* A GPU node /dev/nvidia<minor> under the root: true if it exists as that char device. */
static bool gpu_node_present(struct gs_context *ctx, unsigned minor, char *path, size_t len)
{
        snprintf(path, len, "/dev/nvidia%u", minor);
        struct stat st;
        return stat_in_root(ctx, path, &st) && S_ISCHR(st.st_mode) && major(st.st_rdev) == 195 &&
               minor(st.st_rdev) == minor;
}

/* A /proc/driver/nvidia/capabilities file or directory: listed only if the root has it. */
static bool emit_if_present(struct out *o, struct gs_context *ctx, const char *path)
{
        struct stat st;
        if (!stat_in_root(ctx, path, &st)) {
                cli_warn("%s is missing under %s", path, gs_context_root(ctx));
                return false;
        }
        emit(o, CAT_DEVICES, path);
        return true;
}

static void emit_cap(struct out *o, struct gs_context *ctx, bool dev_style, const char *proc_path)
{
        if (!emit_if_present(o, ctx, proc_path) || !dev_style)
                return;
        char node[128];
        dev_t rdev;
        struct gs_error err = {0};
        if (gs_nvcaps_node(ctx, proc_path, node, sizeof(node), &rdev, &err) < 0)
                cli_warn("%s", err.msg);
        else
                emit(o, CAT_DEVICES, node);
}

static int check_all_only(const char *stage, const char *value)
{
        if (value != NULL && strcasecmp(value, "all") != 0) {
                cli_error(stage, "only 'all' devices are currently supported");
                return -1;
        }
        return 0;
}

static int run_list(const struct cli_globals *g, struct list_opts *lo)
{
        int rv = CLI_EXIT_FAILURE;
        struct gs_driver_info drv = {0};
        struct out o = {.json = lo->json};
        struct gs_error err = {0};

        if (check_all_only("mig-config", lo->mig_config) < 0 || check_all_only("mig-monitor", lo->mig_monitor) < 0)
                return CLI_EXIT_FAILURE;
        struct gs_context *ctx = cli_open_context(g);
        if (ctx == NULL)
                return CLI_EXIT_FAILURE;
        /* Requirements need NVML's facts (cuda, arch, brand); plain listing does not. */
        const struct gs_device_info *d = cli_query_devices(ctx, lo->nrequires == 0);
        if (d == NULL)
                goto out;
        unsigned drvopts = lo->drvopts | ((lo->libs && lo->compat32) ? 0 : GS_DRV_NO_LIBS32);
        if (gs_driver_discover(ctx, d->driver_version, drvopts, &drv, &err) < 0) {
                cli_error("detection", "%s", err.msg);
                goto out;
        }
        struct gs_selection sel;
        if (gs_select_devices(lo->devices, d, &sel, &err) < 0) {
                cli_error("device", "%s", err.msg);
                goto out;
        }
        bool mig_all = lo->mig_config != NULL || lo->mig_monitor != NULL;
        if (mig_all && sel.nmigs > 0 && !sel.all) {
                cli_error(lo->mig_config != NULL ? "mig-config" : "mig-monitor",
                          "cannot enable %s with specific MIG devices selected",
                          lo->mig_config != NULL ? "mig-config" : "mig-monitor");
                goto out;
        }
        if (gs_require_check_all(lo->requires, lo->nrequires, d, &sel, &err) < 0) {
                cli_error("requirement", "%s", err.msg);
                goto out;
        }

        bool dev_style = gs_nvcaps_dev_style(ctx);
        char path[PATH_MAX];
        if (lo->devices != NULL) {
                for (size_t i = 0; i < drv.ndevs; i++)
                        if (want(lo, drv.devs[i].caps))
                                emit(&o, CAT_DEVICES, drv.devs[i].path);
                for (unsigned i = 0; i < d->ngpus; i++) {
                        if (!gs_selection_uses_gpu(&sel, i))
                                continue;
                        if (gpu_node_present(ctx, d->gpus[i].minor, path, sizeof(path)))
                                emit(&o, CAT_DEVICES, path);
                        else
                                cli_warn("GPU %u: %s is missing under %s", i, path, gs_context_root(ctx));
                }
                if (!mig_all) {
                        for (unsigned i = 0; i < d->ngpus; i++)
                                for (unsigned j = 0; j < d->gpus[i].nmigs; j++) {
                                        if (!sel.mig[i][j])
                                                continue;
                                        gs_mig_gi_access_path(&d->gpus[i], &d->gpus[i].migs[j], path, sizeof(path));
                                        emit_cap(&o, ctx, dev_style, path);
                                        gs_mig_ci_access_path(&d->gpus[i], &d->gpus[i].migs[j], path, sizeof(path));
                                        emit_cap(&o, ctx, dev_style, path);
                                }
                }
        }
        static const char *const mig_files[2] = {"config", "monitor"};
        const char *mig_opts[2] = {lo->mig_config, lo->mig_monitor};
        for (int k = 0; k < 2; k++) {
                if (mig_opts[k] == NULL)
                        continue;
                snprintf(path, sizeof(path), GS_NV_CAPS_PROC "/mig/%s", mig_files[k]);
                emit_cap(&o, ctx, dev_style, path);
                for (unsigned i = 0; i < d->ngpus; i++) {
                        if (!gs_selection_uses_gpu(&sel, i) || !d->gpus[i].mig_capable)
                                continue;
                        gs_mig_caps_dir(&d->gpus[i], path, sizeof(path));
                        emit_if_present(&o, ctx, path);
                }
        }
        if (lo->bins)
                for (size_t i = 0; i < drv.bins.n; i++)
                        if (want(lo, drv.bins.v[i].caps))
                                emit(&o, CAT_BINARIES, drv.bins.v[i].path);
        if (lo->libs) {
                for (size_t i = 0; i < drv.libs.n; i++)
                        if (want(lo, drv.libs.v[i].caps))
                                emit(&o, CAT_LIBRARIES, drv.libs.v[i].path);
                if (lo->compat32)
                        for (size_t i = 0; i < drv.libs32.n; i++)
                                if (want(lo, drv.libs32.v[i].caps))
                                        emit(&o, CAT_LIBRARIES32, drv.libs32.v[i].path);
        }
        if (lo->ipcs)
                for (size_t i = 0; i < drv.ipcs.n; i++)
                        if (want(lo, drv.ipcs.v[i].caps))
                                emit(&o, CAT_IPCS, drv.ipcs.v[i].path);
        if (lo->firmwares)
                for (size_t i = 0; i < drv.firmwares.n; i++)
                        emit(&o, CAT_FIRMWARES, drv.firmwares.v[i].path);
        if (o.json) {
                json_object *root = json_object_new_object();
                for (int c = 0; c < NCATS; c++)
                        json_object_object_add(root, cat_names[c], o.cats[c] ? o.cats[c] : json_object_new_array());
                cli_print_json(root);
        }
        rv = 0;
out:
        gs_file_list_release(&o.seen);
        gs_driver_info_release(&drv);
        gs_context_free(ctx);
        return rv;
}

int cmd_list(const struct cli_globals *g, int argc, char **argv)
{
        enum { O_COMPAT32 = 0x100, O_MIGCONF, O_MIGMON, O_REQUIRE, O_NOPERS, O_NOFM, O_NOGSP, O_JSON, O_CAP };
        static const struct option opts[] = {
                {"device", required_argument, NULL, 'd'},
                {"libraries", no_argument, NULL, 'l'},
                {"binaries", no_argument, NULL, 'b'},
                {"ipcs", no_argument, NULL, 'i'},
                {"firmwares", no_argument, NULL, 'f'},
                {"compat32", no_argument, NULL, O_COMPAT32},
                {"mig-config", required_argument, NULL, O_MIGCONF},
                {"mig-monitor", required_argument, NULL, O_MIGMON},
                {"require", required_argument, NULL, O_REQUIRE},
                {"no-persistenced", no_argument, NULL, O_NOPERS},
                {"no-fabricmanager", no_argument, NULL, O_NOFM},
                {"no-gsp-firmware", no_argument, NULL, O_NOGSP},
                {"json", no_argument, NULL, O_JSON},
                {"compute", no_argument, NULL, O_CAP},
                {"utility", no_argument, NULL, O_CAP},
                {"video", no_argument, NULL, O_CAP},
                {"graphics", no_argument, NULL, O_CAP},
                {"display", no_argument, NULL, O_CAP},
                {"ngx", no_argument, NULL, O_CAP},
                {"help", no_argument, NULL, 'h'},
                {0},
        };
        struct list_opts lo = {0};
        /* Any option other than --json and --require: a requirement is a gate, not a selection,
         * so `list --require EXPR` lists what `list` lists (when EXPR holds). */
        bool listing_opt = false;
        int c, idx = 0, rv = CLI_EXIT_USAGE;
        while ((c = getopt_long(argc, argv, "+:d:lbifh", opts, &idx)) != -1) {
                if (c != O_JSON && c != O_REQUIRE)
                        listing_opt = true;
                switch (c) {
                case 'd':
                        if (cli_join(&lo.devices, optarg) < 0)
                                goto nomem;
                        break;
                case 'l': lo.libs = true; break;
                case 'b': lo.bins = true; break;
                case 'i': lo.ipcs = true; break;
                case 'f': lo.firmwares = true; break;
                case O_COMPAT32: lo.compat32 = true; break;
                case O_MIGCONF:
                        if (cli_join(&lo.mig_config, optarg) < 0)
                                goto nomem;
                        break;
                case O_MIGMON:
                        if (cli_join(&lo.mig_monitor, optarg) < 0)
                                goto nomem;
                        break;
                case O_REQUIRE:
                        if (lo.nrequires >= GS_MAX_REQUIRES) {
                                cli_error("requirement", "too many requirements");
                                rv = CLI_EXIT_FAILURE;
                                goto done;
                        }
                        lo.requires[lo.nrequires++] = optarg;
                        break;
                case O_NOPERS: lo.drvopts |= GS_DRV_NO_PERSISTENCED; break;
                case O_NOFM: lo.drvopts |= GS_DRV_NO_FABRICMANAGER; break;
                case O_NOGSP: lo.drvopts |= GS_DRV_NO_GSP_FIRMWARE; break;
                case O_JSON: lo.json = true; break;
                case O_CAP: {
                        unsigned cap = 0;
                        gs_caps_parse(opts[idx].name, &cap, NULL);
                        lo.caps |= cap;
                        break;
                }
                case 'h':
                        fputs(list_help, stdout);
                        rv = 0;
                        goto done;
                case ':':
                        rv = cli_usage_error("list", "option '%s' needs a value", argv[optind - 1]);
                        goto done;
                default:
                        rv = cli_usage_error("list", "unknown option '%s'", argv[optind - 1]);
                        goto done;
                }
        }
        if (optind < argc) {
                rv = cli_usage_error("list", "unexpected argument '%s'", argv[optind]);
                goto done;
        }
        if (!listing_opt) {
                if (cli_join(&lo.devices, "all") < 0)
                        goto nomem;
                lo.compat32 = lo.libs = lo.bins = lo.ipcs = lo.firmwares = true;
        }
        if (lo.drvopts & GS_DRV_NO_GSP_FIRMWARE)
                lo.firmwares = false;
        rv = run_list(g, &lo);
        goto done;
nomem:
        cli_error("input", "out of memory");
        rv = CLI_EXIT_FAILURE;
done:
        free(lo.devices);
        free(lo.mig_config);
        free(lo.mig_monitor);
        return rv;
}
