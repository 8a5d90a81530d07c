/* gpuslice cdi-hook create-symlinks | update-ldcache (and gpuslice-hook create-symlinks |
 * update-ldcache): the createContainer hooks of a generated CDI spec; option parsing only, the
 * work is in src/runtime/cdi_hook.c. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/error.h"
#include "runtime/cdi_hook.h"

static const char hook_help[] =
        "Usage: gpuslice cdi-hook COMMAND [OPTIONS]\n"
        "       gpuslice-hook COMMAND [OPTIONS]\n"
        "\n"
        "The OCI createContainer hooks of a generated CDI spec. The runtime runs them with the OCI\n"
        "state on standard input, in the container's mount namespace, before pivot_root; they act\n"
        "on the rootfs named by the bundle's config.json and read nothing from the environment.\n"
        "gpuslice-hook, the lean hook executable, runs the same commands.\n"
        "\n"
        "Commands:\n"
        "  create-symlinks --link=TARGET::LINK...\n"
        "                 a symlink LINK -> TARGET in the rootfs (LINK resolved inside it; an existing\n"
        "                 entry is left alone)\n"
        "  update-ldcache [--folder=DIR]...\n"
        "                 the host's ldconfig, sandboxed, on the rootfs, indexing each DIR too\n";

bool cli_is_cdi_hook_command(const char *word)
{
        return word != NULL && (strcmp(word, "create-symlinks") == 0 || strcmp(word, "update-ldcache") == 0);
}

static int hook_args(int argc, char **argv, const char *verb, const char *opt, const char ***vals, size_t *n)
{
        const struct option opts[] = {
                {opt, required_argument, NULL, 'v'},
                {"help", no_argument, NULL, 'h'},
                {0},
        };
        char where[64];
        snprintf(where, sizeof(where), "cdi-hook %s", verb);
        *vals = calloc((size_t)argc + 1, sizeof(**vals));
        *n = 0;
        if (*vals == NULL) {
                cli_error("cdi-hook", "out of memory");
                return CLI_EXIT_FAILURE;
        }
        int c;
        while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
                switch (c) {
                case 'v': (*vals)[(*n)++] = optarg; break;
                case 'h':
                        fputs(hook_help, stdout);
                        return 0;
                case ':':
                        return cli_usage_error(where, "option '%s' needs a value", argv[optind - 1]);
                default:
                        return cli_usage_error(where, "unknown option '%s'", argv[optind - 1]);
                }
        }
        if (optind < argc)
                return cli_usage_error(where, "unexpected argument '%s'", argv[optind]);
        return -1;
}

int cmd_cdi_hook(const struct cli_globals *g, int argc, char **argv)
{
        (void)g;
        cli_hook_environment("cdi-hook");
        int rc = cli_subcommand_help(argc, argv, hook_help);
        if (rc >= 0)
                return rc;
        const char *sub = argv[1];
        bool links = strcmp(sub, "create-symlinks") == 0;
        if (!cli_is_cdi_hook_command(sub))
                return cli_usage_error("cdi-hook", "unknown cdi-hook command '%s' (create-symlinks or update-ldcache)",
                                       sub);
        optind = 0;
        const char **vals = NULL;
        size_t n = 0;
        int rv = hook_args(argc - 1, argv + 1, sub, links ? "link" : "folder", &vals, &n);
        if (rv < 0) {
                struct gs_error err = {0};
                int r = links ? gs_cdi_hook_create_symlinks(0, vals, n, &err)
                              : gs_cdi_hook_update_ldcache(0, vals, n, &err);
                if (r < 0) {
                        cli_error(err.stage != NULL ? err.stage : "cdi-hook", "%s: %s", sub, err.msg);
                        rv = CLI_EXIT_FAILURE;
                } else {
                        rv = 0;
                }
        }
        free(vals);
        return rv;
}
