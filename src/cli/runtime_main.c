/* gpuslice-runtime, also installed as nvidia-container-runtime: the OCI runtime shim in an
 * executable of its own. The shim stands in front of runc for every container an engine starts,
 * GPU or not, so it links only what the shim needs (the core and engine rooms: libc, json-c,
 * libyaml, libcap, libseccomp): the whole gpuslice executable also loads the metrics server's
 * TLS stack, the device plugin's HTTP/2 and the terminal library, and starting it cost about as
 * much as starting runc itself. `gpuslice runtime` runs the same code. */
#include <string.h>

#include "cli/cli.h"

static bool invoked_as(const char *argv0, const char *name)
{
        const char *base = strrchr(argv0, '/');
        return strcmp(base != NULL ? base + 1 : argv0, name) == 0;
}

int main(int argc, char **argv)
{
        struct cli_globals g = {.uid = (uid_t)-1, .gid = (gid_t)-1};
        /* as nvidia-container-runtime every argument is the engine's, for the low-level runtime;
         * as gpuslice-runtime, `gpuslice-runtime --help` and `gpuslice-runtime configure` too */
        g.from_nvidia_name = argc > 0 && invoked_as(argv[0], "nvidia-container-runtime");
        return cmd_runtime(&g, argc, argv);
}
