/* gpuslice cdi generate | list: option parsing and printing; the work is in src/cdi (the hooks a
 * spec names: cmd_cdi_hook.c, cmd_hook.c). */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cdi/cdi.h"
#include "cli/cli.h"
#include "common/error.h"
#include "runtime/hook_exe.h"

static const char cdi_help[] =
        "Usage: gpuslice [GLOBAL OPTIONS] cdi COMMAND [OPTIONS]\n"
        "\n"
        "CDI (Container Device Interface) specs for CDI-aware runtimes (podman, containerd >= 1.7,\n"
        "CRI-O, Docker >= 25), which then give containers GPUs by name: nvidia.com/gpu=0.\n"
        "\n"
        "Commands:\n"
        "  generate   write a spec for the GPUs and driver under the driver root (--root)\n"
        "  list       the device names a spec (or the generated spec) offers\n"
        "\n"
        "'gpuslice cdi COMMAND --help' for a command's options.\n";

static const char generate_help[] =
        "Usage: gpuslice [GLOBAL OPTIONS] cdi generate [OPTIONS]\n"
        "\n"
        "Write a CDI spec for the GPUs, MIG devices and driver files found under the driver root\n"
        "(every capability; 32-bit libraries left out). Devices: one per GPU (a GPU in MIG mode is\n"
        "offered as its MIG devices), one per MIG device, 'all', and per --slice one more for each\n"
        "GPU and for all. Its hooks run gpuslice-hook, the lean hook installed beside this\n"
        "gpuslice (else this gpuslice's 'cdi-hook' and 'hook').\n"
        "\n"
        "  -o, --output=FILE         write FILE (atomically, mode 0644) instead of standard output\n"
        "      --format=json|yaml    default: from FILE's extension (.json: json), else yaml\n"
        "      --json                the same as --format=json\n"
        "      --vendor=NAME         vendor part of the kind (default " GS_CDI_DEFAULT_VENDOR ")\n"
        "      --class=NAME          class part of the kind (default " GS_CDI_DEFAULT_CLASS ")\n"
        "      --device-name-strategy=index|uuid|type-index\n"
        "                            device names: 0 and 0:1 (default), GPU-<uuid> and MIG-<uuid>,\n"
        "                            or gpu0 and mig0:1\n"
        "      --slice=NAME=MEM[,COMPUTE[,PRIORITY]]\n"
        "                            a GPU slice: device <gpu>-NAME (e.g. nvidia.com/gpu=0-4g)\n"
        "                            gets that GPU with a memory quota MEM (K/M/G/T or Ki/Mi/Gi/Ti),\n"
        "                            a compute share COMPUTE (percent, 1..100) and its priority\n"
        "                            PRIORITY (high, normal or low; default normal), all as the\n"
        "                            options of its createRuntime hook: a ceiling the container's\n"
        "                            env can only narrow; repeatable\n"
        "      --hook-path=PATH      the executable the hooks run: a gpuslice-hook (args\n"
        "                            'gpuslice-hook STAGE') or a gpuslice ('gpuslice hook STAGE');\n"
        "                            default: the gpuslice-hook beside this executable, else this one\n"
        "  -h, --help\n";

static const char list_help[] =
        "Usage: gpuslice [GLOBAL OPTIONS] cdi list [OPTIONS] [FILE]\n"
        "\n"
        "Print the fully qualified device names (nvidia.com/gpu=0, one per line) that the spec FILE\n"
        "(JSON or YAML) offers, or, without one, that `cdi generate` with the same options would.\n"
        "\n"
        "  -s, --spec=FILE           the spec to read (or FILE as an argument)\n"
        "      --json                print a JSON array\n"
        "      --vendor, --class, --device-name-strategy, --slice\n"
        "                            as for generate (without a spec file)\n"
        "  -h, --help\n";

static int cdi_fail(const struct gs_error *err)
{
        cli_error(err->stage != NULL ? err->stage : "cdi", "%s", err->msg);
        return CLI_EXIT_FAILURE;
}

struct gen_opts {
        struct gs_cdi_opts cdi;
        struct gs_cdi_slice slices[GS_CDI_MAX_SLICES];
        const char *output;
        const char *format;
        const char *spec;
        bool json;
        bool naming; /* any of vendor / class / strategy / slice given */
        char exe[PATH_MAX];
};

enum { O_FORMAT = 0x100, O_JSON, O_VENDOR, O_CLASS, O_STRATEGY, O_SLICE, O_HOOKPATH };

/* The options generate and list share; 1 if `c` was not one of them, 0 or an exit code. */
static int common_opt(struct gen_opts *go, int c, int *rv)
{
        struct gs_error err = {0};
        switch (c) {
        case O_VENDOR:
                go->cdi.vendor = optarg;
                go->naming = true;
                return 0;
        case O_CLASS:
                go->cdi.class = optarg;
                go->naming = true;
                return 0;
        case O_STRATEGY:
                go->naming = true;
                if (gs_cdi_parse_strategy(optarg, &go->cdi.strategy, &err) < 0)
                        *rv = cdi_fail(&err);
                return 0;
        case O_SLICE:
                go->naming = true;
                if (go->cdi.nslices >= GS_CDI_MAX_SLICES) {
                        cli_error("cdi", "too many slices (at most %d)", GS_CDI_MAX_SLICES);
                        *rv = CLI_EXIT_FAILURE;
                } else if (gs_cdi_parse_slice(optarg, &go->slices[go->cdi.nslices], &err) < 0) {
                        *rv = cdi_fail(&err);
                } else {
                        go->cdi.nslices++;
                }
                return 0;
        case O_JSON:
                go->json = true;
                return 0;
        }
        return 1;
}

/* Checks that need no driver, then discovery and the spec. NULL after printing the error. */
static json_object *generate(const struct cli_globals *g, struct gen_opts *go)
{
        struct gs_error err = {0};
        go->cdi.slices = go->slices;
        if ((go->cdi.vendor != NULL && gs_cdi_validate_vendor(go->cdi.vendor, &err) < 0) ||
            (go->cdi.class != NULL && gs_cdi_validate_class(go->cdi.class, &err) < 0)) {
                cdi_fail(&err);
                return NULL;
        }
        if (go->cdi.hook_path == NULL) {
                if (gs_hook_exe_default(go->exe, sizeof(go->exe), &err) < 0) {
                        cli_error("cdi", "%s; use --hook-path", err.msg);
                        return NULL;
                }
                go->cdi.hook_path = go->exe;
        } else if (go->cdi.hook_path[0] != '/') {
                cli_error("cdi", "--hook-path must be an absolute path: %s", go->cdi.hook_path);
                return NULL;
        }
        struct gs_context *ctx = cli_open_context(g);
        if (ctx == NULL)
                return NULL;
        json_object *spec = gs_cdi_generate(ctx, &go->cdi, &err);
        gs_context_free(ctx);
        if (spec == NULL) {
                cdi_fail(&err);
                return NULL;
        }
        const char *ver = json_object_get_string(json_object_object_get(spec, "cdiVersion"));
        if (strcmp(ver, "0.5.0") > 0)
                cli_warn("the spec needs cdiVersion %s: podman 4.x and other CDI 0.5 readers refuse it", ver);
        return spec;
}

static int cdi_generate(const struct cli_globals *g, int argc, char **argv)
{
        static const struct option opts[] = {
                {"output", required_argument, NULL, 'o'},
                {"format", required_argument, NULL, O_FORMAT},
                {"json", no_argument, NULL, O_JSON},
                {"vendor", required_argument, NULL, O_VENDOR},
                {"class", required_argument, NULL, O_CLASS},
                {"device-name-strategy", required_argument, NULL, O_STRATEGY},
                {"slice", required_argument, NULL, O_SLICE},
                {"hook-path", required_argument, NULL, O_HOOKPATH},
                {"help", no_argument, NULL, 'h'},
                {0},
        };
        struct gen_opts *go = calloc(1, sizeof(*go));
        if (go == NULL) {
                cli_error("cdi", "out of memory");
                return CLI_EXIT_FAILURE;
        }
        int c, rv = -1;
        while (rv < 0 && (c = getopt_long(argc, argv, "+:o:h", opts, NULL)) != -1) {
                if (common_opt(go, c, &rv) == 0)
                        continue;
                switch (c) {
                case 'o': go->output = optarg; break;
                case O_FORMAT: go->format = optarg; break;
                case O_HOOKPATH: go->cdi.hook_path = optarg; break;
                case 'h':
                        fputs(generate_help, stdout);
                        rv = 0;
                        break;
                case ':':
                        rv = cli_usage_error("cdi generate", "option '%s' needs a value", argv[optind - 1]);
                        break;
                default:
                        rv = cli_usage_error("cdi generate", "unknown option '%s'", argv[optind - 1]);
                        break;
                }
        }
        if (rv < 0 && optind < argc)
                rv = cli_usage_error("cdi generate", "unexpected argument '%s'", argv[optind]);
        enum gs_cdi_format fmt = gs_cdi_format_for_path(go->output);
        if (rv < 0 && go->format != NULL) {
                if (strcmp(go->format, "json") == 0)
                        fmt = GS_CDI_JSON;
                else if (strcmp(go->format, "yaml") == 0 || strcmp(go->format, "yml") == 0)
                        fmt = GS_CDI_YAML;
                else {
                        cli_error("cdi", "invalid --format '%s' (json or yaml)", go->format);
                        rv = CLI_EXIT_FAILURE;
                }
        }
        if (rv < 0 && go->json) {
                if (go->format != NULL && fmt != GS_CDI_JSON) {
                        cli_error("cdi", "--json contradicts --format %s", go->format);
                        rv = CLI_EXIT_FAILURE;
                }
                fmt = GS_CDI_JSON;
        }
        if (rv >= 0) {
                free(go);
                return rv;
        }
        json_object *spec = generate(g, go);
        char *text = NULL;
        struct gs_error err = {0};
        rv = CLI_EXIT_FAILURE;
        if (spec == NULL)
                goto out;
        if ((text = gs_cdi_spec_format(spec, fmt, &err)) == NULL) {
                cdi_fail(&err);
                goto out;
        }
        if (go->output == NULL) {
                fputs(text, stdout);
                rv = 0;
                goto out;
        }
        if (gs_cdi_write_file(go->output, text, &err) < 0) {
                cdi_fail(&err);
                goto out;
        }
        json_object *devs = json_object_object_get(spec, "devices");
        fprintf(stderr, "gpuslice: wrote %zu devices (%s/%s, cdiVersion %s) to %s\n", json_object_array_length(devs),
                go->cdi.vendor != NULL ? go->cdi.vendor : GS_CDI_DEFAULT_VENDOR,
                go->cdi.class != NULL ? go->cdi.class : GS_CDI_DEFAULT_CLASS,
                json_object_get_string(json_object_object_get(spec, "cdiVersion")), go->output);
        rv = 0;
out:
        free(text);
        json_object_put(spec);
        free(go);
        return rv;
}

static int cdi_list(const struct cli_globals *g, int argc, char **argv)
{
        static const struct option opts[] = {
                {"spec", required_argument, NULL, 's'},
                {"json", no_argument, NULL, O_JSON},
                {"vendor", required_argument, NULL, O_VENDOR},
                {"class", required_argument, NULL, O_CLASS},
                {"device-name-strategy", required_argument, NULL, O_STRATEGY},
                {"slice", required_argument, NULL, O_SLICE},
                {"help", no_argument, NULL, 'h'},
                {0},
        };
        struct gen_opts *go = calloc(1, sizeof(*go));
        if (go == NULL) {
                cli_error("cdi", "out of memory");
                return CLI_EXIT_FAILURE;
        }
        int c, rv = -1;
        while (rv < 0 && (c = getopt_long(argc, argv, "+:s:h", opts, NULL)) != -1) {
                if (common_opt(go, c, &rv) == 0)
                        continue;
                switch (c) {
                case 's': go->spec = optarg; break;
                case 'h':
                        fputs(list_help, stdout);
                        rv = 0;
                        break;
                case ':':
                        rv = cli_usage_error("cdi list", "option '%s' needs a value", argv[optind - 1]);
                        break;
                default:
                        rv = cli_usage_error("cdi list", "unknown option '%s'", argv[optind - 1]);
                        break;
                }
        }
        if (rv < 0 && optind < argc) {
                if (go->spec != NULL || optind + 1 < argc)
                        rv = cli_usage_error("cdi list", "unexpected argument '%s'", argv[go->spec != NULL ? optind : optind + 1]);
                else
                        go->spec = argv[optind];
        }
        if (rv < 0 && go->spec != NULL && go->naming)
                rv = cli_usage_error("cdi list", "--vendor, --class, --device-name-strategy and --slice are for the "
                                     "generated spec, not with a spec file");
        if (rv >= 0) {
                free(go);
                return rv;
        }
        struct gs_error err = {0};
        json_object *spec = NULL;
        char **names = NULL;
        size_t n = 0;
        rv = CLI_EXIT_FAILURE;
        if (go->spec != NULL) {
                if ((spec = gs_cdi_spec_load(go->spec, &err)) == NULL) {
                        cdi_fail(&err);
                        goto out;
                }
        } else {
                go->cdi.hook_path = "/"; /* not written anywhere; names only */
                if ((spec = generate(g, go)) == NULL)
                        goto out;
        }
        if (gs_cdi_spec_names(spec, &names, &n, &err) < 0) {
                if (go->spec != NULL)
                        gs_error_wrap(&err, "%s", go->spec);
                cdi_fail(&err);
                goto out;
        }
        if (go->json) {
                json_object *arr = json_object_new_array();
                for (size_t i = 0; arr != NULL && i < n; i++)
                        json_object_array_add(arr, json_object_new_string(names[i]));
                puts(json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
                json_object_put(arr);
        } else {
                for (size_t i = 0; i < n; i++)
                        puts(names[i]);
        }
        rv = 0;
out:
        gs_cdi_names_free(names);
        json_object_put(spec);
        free(go);
        return rv;
}

int cmd_cdi(const struct cli_globals *g, int argc, char **argv)
{
        int rc = cli_subcommand_help(argc, argv, cdi_help);
        if (rc >= 0)
                return rc;
        const char *sub = argv[1];
        optind = 0;
        if (strcmp(sub, "generate") == 0)
                return cdi_generate(g, argc - 1, argv + 1);
        if (strcmp(sub, "list") == 0)
                return cdi_list(g, argc - 1, argv + 1);
        return cli_usage_error("cdi", "unknown cdi command '%s' (generate or list)", sub);
}
