/* The gpuslice command line: shared pieces of the verbs. */
#ifndef GS_CLI_CLI_H
#define GS_CLI_CLI_H

#include <json-c/json.h>
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
        bool from_nvidia_name;  /* run as nvidia-container-runtime-hook (or -runtime) */
        bool root_set, ldcache_set, user_set, timeout_set; /* given on the command line */
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

/* A long-running verb's context: its host config (`config`, NULL for the default) loaded into a
 * new *hc (the caller frees it), the context opened with the globals the command line gave and,
 * where it gave none, the config's (user, root, ldcache, NVML timeout, kernel modules). NULL with
 * the exit code in *rv (and *hc NULL) on failure, the error printed. */
struct gs_hostconfig;
struct gs_context *cli_open_host_context(const struct cli_globals *g, const char *config, struct gs_hostconfig **hc,
                                         int *rv);

/* A plugin's progress line on stderr: "TIME gpuslice VERB: LINE" (VERB: the string `verb` points
 * to; the signature of the plugins' note callbacks). */
void cli_note_line(void *verb, const char *line);

/* --user[=UID[:GID]] (numbers or names) into g->uid/gid; a usage error code on failure. */
int cli_parse_user(struct cli_globals *g, const char *arg);

/* `metrics` and `top`: the host config (--config), the collector over the regions directory
 * (--regions-dir, else the config's) and extra regions, and, unless no_nvml, the NVML poller
 * (global options, else the config's driver root, user and timeout). Errors are printed; -1. */
struct gs_collector;
struct gs_gpu_poller;
struct cli_observe_opts {
        const char *verb;
        const char *config;
        const char *regions_dir;
        const char *const *regions;
        size_t nregions;
        unsigned window_ms;
        unsigned nvml_interval_ms;
        bool no_nvml;
        void (*log)(void *arg, const char *line);
};
int cli_observe_start(const struct cli_globals *g, const struct cli_observe_opts *o, struct gs_collector **collector,
                      struct gs_gpu_poller **gpus);

/* For a runtime hook (`verb`): its environment may be the image's (a runtime that runs hooks
 * without an explicit env). Warn about loader variables, then clear it all: PATH becomes
 * /usr/sbin:/usr/bin:/sbin:/bin and nothing else is read from it or passed on. */
void cli_hook_environment(const char *verb);

/* SECS (> 0, <= 3600, fractions allowed) of option `opt` into milliseconds (at least 1); a usage
 * error code (naming `verb`, NULL for a global option) on failure. */
int cli_parse_seconds(const char *verb, const char *opt, const char *arg, unsigned *ms);
/* --health-recover=SECS of the plugins: as cli_parse_seconds, and 0 sets *never. */
int cli_parse_recover(const char *verb, const char *arg, unsigned *ms, bool *never);

/* A verb with subcommands (`cdi`, `mps`, ...): without one, `help` on stderr and CLI_EXIT_USAGE;
 * with -h, --help or help, `help` on stdout and 0; else -1 (argv[1] is the subcommand). */
int cli_subcommand_help(int argc, char **argv, const char *help);

/* One JSON document on stdout, as every --json prints it (pretty, spaced, '/' unescaped); the
 * object is released. */
void cli_print_json(json_object *root);

/* Append `arg` to a comma-joined list (repeatable options such as --device). */
int cli_join(char **list, const char *arg);

/* Take the options --<name>-<i>[=]VALUE (i < max; not a fixed getopt name) out of argv, up to "--":
 * vals[i] = VALUE; the other arguments go to `out` (room for argc + 1). Returns the new argc, or -1
 * after printing a usage error. */
int cli_take_indexed(const char *verb, int argc, char **argv, char **out, const char *name, const char **vals,
                     int max);

int cmd_info(const struct cli_globals *g, int argc, char **argv);
int cmd_list(const struct cli_globals *g, int argc, char **argv);
int cmd_configure(const struct cli_globals *g, int argc, char **argv);
int cmd_exec(const struct cli_globals *g, int argc, char **argv);
int cmd_hook(const struct cli_globals *g, int argc, char **argv);
int cmd_runtime(const struct cli_globals *g, int argc, char **argv);
int cmd_runtime_configure(const struct cli_globals *g, int argc, char **argv);
int cmd_cdi(const struct cli_globals *g, int argc, char **argv);
int cmd_cdi_hook(const struct cli_globals *g, int argc, char **argv);
/* `word` is one of cdi-hook's commands (create-symlinks, update-ldcache): gpuslice-hook takes them
 * as its first argument. */
bool cli_is_cdi_hook_command(const char *word);
int cmd_mps(const struct cli_globals *g, int argc, char **argv);
int cmd_slice(const struct cli_globals *g, int argc, char **argv);
int cmd_metrics(const struct cli_globals *g, int argc, char **argv);
int cmd_top(const struct cli_globals *g, int argc, char **argv);
int cmd_doctor(const struct cli_globals *g, int argc, char **argv);
int cmd_device_plugin(const struct cli_globals *g, int argc, char **argv);
int cmd_dra_plugin(const struct cli_globals *g, int argc, char **argv);
/* `gpuslice help VERB`: man gpuslice-VERB when man has the page, else `run` with --help. */
int cmd_help(const struct cli_globals *g, const char *verb, int (*run)(const struct cli_globals *g, int argc, char **argv));

#endif
