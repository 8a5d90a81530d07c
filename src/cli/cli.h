/* The gpuslice command line: shared pieces of the verbs. */
#ifndef GS_CLI_CLI_H
#define GS_CLI_CLI_H

#include <stdbool.h>
#include <sys/types.h>

#include <gpuslice/gpuslice.h>

#define CLI_EXIT_FAILURE 1
#define CLI_EXIT_USAGE 2

struct cli_globals {
        const char *root;
        const char *ldcache;
        const char *debug;
        uid_t uid;
        gid_t gid;
        unsigned nvml_timeout_ms;
        bool load_kmods;
        bool no_pivot;
};

/* "gpuslice: <stage> error: <message>" on stderr. */
void cli_error(const char *stage, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Usage error: message plus a pointer to --help; returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Context + device query with the right error stages; NULL after printing the error. `basic`:
 * only what gs_devices_basic() guarantees is needed (procfs may answer instead of NVML). */
struct gs_context *cli_open_context(const struct cli_globals *g);
const struct gs_device_info *cli_query_devices(struct gs_context *ctx, bool basic);

/* Append `arg` to a comma-joined list (repeatable options such as --device). */
int cli_join(char **list, const char *arg);

/* Capability flags shared by list/configure: returns the GS_CAP_* bit for a long option name. */
unsigned cli_cap_flag(const char *name);
/* video implies compute, display implies graphics (what each flag mounts). */
unsigned cli_caps_expand(unsigned caps);

int cmd_info(const struct cli_globals *g, int argc, char **argv);
int cmd_list(const struct cli_globals *g, int argc, char **argv);
int cmd_configure(const struct cli_globals *g, int argc, char **argv);
int cmd_exec(const struct cli_globals *g, int argc, char **argv);

#endif
