/* gpuslice-hook, also installed as nvidia-container-runtime-hook: the privileged hooks in an
 * executable of their own. A runtime starts a hook as root at every GPU container's start (and
 * the CDI hooks at every container of a CDI device), so it links only what the hooks use (the
 * core room: libc, json-c, libcap, libseccomp): the whole gpuslice executable also loads the
 * metrics server's TLS stack, the device plugin's HTTP/2 and protobuf, the terminal library and
 * libyaml. The same verbs as gpuslice's, the same code:
 *   gpuslice-hook [--config FILE] STAGE             = gpuslice hook [--config FILE] STAGE
 *   gpuslice-hook create-symlinks|update-ldcache .. = gpuslice cdi-hook create-symlinks|...
 *   nvidia-container-runtime-hook [-config F] STAGE  (NVIDIA's flags accepted, as gpuslice does)
 * Global options are not taken: their settings come from the host config (driver.root, ...), as
 * for every hook. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "common/log.h"
#include "common/privilege.h"
#include "gs_commit.h"

static bool invoked_as(const char *argv0, const char *name)
{
        const char *base = strrchr(argv0, '/');
        return strcmp(base != NULL ? base + 1 : argv0, name) == 0;
}

int main(int argc, char **argv)
{
        struct cli_globals g = {.uid = (uid_t)-1, .gid = (gid_t)-1};
        g.from_nvidia_name = argc > 0 && invoked_as(argv[0], "nvidia-container-runtime-hook");
        if (!g.from_nvidia_name && argc == 2 && (strcmp(argv[1], "-V") == 0 || strcmp(argv[1], "--version") == 0)) {
                printf("gpuslice-hook %s (commit %s)\n", gs_version(), GS_COMMIT);
                return 0;
        }
        /* Least privilege, as gpuslice's verbs: a fixed permitted set, effective raised per stage. */
        struct gs_error cerr = {0};
        if (gs_caps_init(&cerr) < 0 || gs_caps_enter(GS_STAGE_INIT, &cerr) < 0) {
                cli_error("permission", "%s", cerr.msg);
                return CLI_EXIT_FAILURE;
        }
        int rv = !g.from_nvidia_name && argc > 1 && cli_is_cdi_hook_command(argv[1]) ? cmd_cdi_hook(&g, argc, argv)
                                                                                   : cmd_hook(&g, argc, argv);
        if (fflush(stdout) != 0 && rv == 0) {
                cli_error("output", "%s", strerror(errno));
                rv = CLI_EXIT_FAILURE;
        }
        gs_log_close();
        return rv;
}
