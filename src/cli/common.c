#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/privilege.h"
#include "runtime/hostconfig.h"

void cli_error(const char *stage, const char *fmt, ...)
{
        va_list ap;
        fprintf(stderr, "gpuslice: %s error: ", stage);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
}

int cli_usage_error(const char *verb, const char *fmt, ...)
{
        va_list ap;
        fputs("gpuslice: input error: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fprintf(stderr, "\nTry 'gpuslice %s%s--help' for more information.\n", verb ? verb : "", verb ? " " : "");
        return CLI_EXIT_USAGE;
}

void cli_warn(const char *fmt, ...)
{
        va_list ap;
        fputs("gpuslice: warning: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
}

struct gs_context *cli_open_context(const struct cli_globals *g)
{
        struct gs_config cfg = {
                .root = g->root,
                .ldcache = g->ldcache,
                .uid = g->uid,
                .gid = g->gid,
                .nvml_timeout_ms = g->nvml_timeout_ms,
        };
        struct gs_error err = {0};
        struct gs_context *ctx = gs_context_new(&cfg, &err);
        if (ctx == NULL) {
                cli_error("initialization", "%s", err.msg);
                return NULL;
        }
        if (g->load_kmods) {
                gs_caps_enter(GS_STAGE_KMODS, NULL);
                gs_load_kmods(ctx, &err);
                gs_caps_enter(GS_STAGE_INIT, NULL);
        }
        return ctx;
}

const struct gs_device_info *cli_query_devices(struct gs_context *ctx, bool basic)
{
        struct gs_error err = {0};
        const struct gs_device_info *info = basic ? gs_devices_basic(ctx, &err) : gs_devices(ctx, &err);
        if (info == NULL) {
                bool init = err.code == GS_EINIT || err.code == GS_ETIMEOUT || err.code == GS_EHELPER;
                cli_error(init ? "initialization" : "detection", "%s", err.msg);
        }
        return info;
}

static int parse_id(const char *s, bool group, unsigned long *out)
{
        char *end;
        errno = 0;
        unsigned long v = strtoul(s, &end, 10);
        if (*s != '\0' && *end == '\0' && errno == 0 && v < 0xffffffffUL) {
                *out = v;
                return 0;
        }
        if (group) {
                struct group *gr = getgrnam(s);
                if (gr == NULL)
                        return -1;
                *out = gr->gr_gid;
        } else {
                struct passwd *pw = getpwnam(s);
                if (pw == NULL)
                        return -1;
                *out = pw->pw_uid;
        }
        return 0;
}

int cli_parse_user(struct cli_globals *g, const char *arg)
{
        if (arg == NULL) {
                g->uid = geteuid();
                g->gid = getegid();
                return 0;
        }
        char buf[256];
        if (strlen(arg) >= sizeof(buf) || *arg == '\0')
                return cli_usage_error(NULL, "invalid user: %s", arg);
        strcpy(buf, arg);
        char *colon = strchr(buf, ':');
        if (colon != NULL)
                *colon++ = '\0';
        unsigned long uid, gid;
        if (parse_id(buf, false, &uid) < 0)
                return cli_usage_error(NULL, "unknown user: %s", buf);
        g->uid = (uid_t)uid;
        if (colon != NULL) {
                if (parse_id(colon, true, &gid) < 0)
                        return cli_usage_error(NULL, "unknown group: %s", colon);
                g->gid = (gid_t)gid;
        } else {
                struct passwd *pw = getpwuid(g->uid);
                g->gid = pw != NULL ? pw->pw_gid : (gid_t)uid;
        }
        return 0;
}

int cli_parse_seconds(const char *verb, const char *opt, const char *arg, unsigned *ms)
{
        char *end;
        errno = 0;
        double s = strtod(arg, &end);
        if (*arg == '\0' || *end != '\0' || errno != 0 || !(s > 0) || s > 3600)
                return cli_usage_error(verb, "invalid %s: %s (seconds, > 0 and <= 3600)", opt, arg);
        *ms = (unsigned)(s * 1000 + 0.5);
        if (*ms == 0)
                *ms = 1;
        return 0;
}

int cli_parse_recover(const char *verb, const char *arg, unsigned *ms, bool *never)
{
        char *end;
        *never = strtod(arg, &end) == 0 && *arg != '\0' && *end == '\0';
        return *never ? 0 : cli_parse_seconds(verb, "--health-recover", arg, ms);
}

int cli_subcommand_help(int argc, char **argv, const char *help)
{
        if (argc < 2) {
                fputs(help, stderr);
                return CLI_EXIT_USAGE;
        }
        if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
                fputs(help, stdout);
                return 0;
        }
        return -1;
}

void cli_print_json(json_object *root)
{
        puts(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                          JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(root);
}

int cli_join(char **list, const char *arg)
{
        size_t old = *list != NULL ? strlen(*list) : 0;
        char *n = realloc(*list, old + strlen(arg) + 2);
        if (n == NULL)
                return -1;
        if (old > 0)
                n[old++] = ',';
        strcpy(n + old, arg);
        *list = n;
        return 0;
}

int cli_take_indexed(const char *verb, int argc, char **argv, char **out, const char *name, const char **vals, int max)
{
        int n = 0;
        size_t nlen = strlen(name);
        bool rest = false;
        for (int i = 0; i < argc; i++) {
                unsigned idx;
                int off = 0;
                if (!rest && strcmp(argv[i], "--") == 0)
                        rest = true;
                if (rest || strncmp(argv[i], "--", 2) != 0 || strncmp(argv[i] + 2, name, nlen) != 0 ||
                    argv[i][2 + nlen] != '-' || sscanf(argv[i] + 3 + nlen, "%u%n", &idx, &off) != 1 ||
                    (argv[i][3 + nlen + off] != '=' && argv[i][3 + nlen + off] != '\0')) {
                        out[n++] = argv[i];
                        continue;
                }
                const char *opt = argv[i], *eq = argv[i] + 3 + nlen + off;
                const char *val = *eq == '=' ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
                if (val == NULL || idx >= (unsigned)max) {
                        cli_usage_error(verb, "invalid %s: %s (device index < %d)", opt,
                                        val != NULL ? val : "missing value", max);
                        return -1;
                }
                vals[idx] = val;
        }
        out[n] = NULL;
        return n;
}

void cli_hook_environment(const char *verb)
{
        static const char *const loader[] = {"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT"};
        for (size_t i = 0; i < sizeof(loader) / sizeof(loader[0]); i++)
                if (getenv(loader[i]) != NULL)
                        cli_warn("%s is set in the %s's environment (ignored): give the hook an explicit \"env\" in "
                                 "its OCI/CDI definition", loader[i], verb);
        clearenv();
        setenv("PATH", "/usr/sbin:/usr/bin:/sbin:/bin", 1);
}

void cli_note_line(void *verb, const char *line)
{
        char ts[32];
        time_t t = time(NULL);
        struct tm tm;
        strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
        fprintf(stderr, "%s gpuslice %s: %s\n", ts, (const char *)verb, line);
        fflush(stderr);
}

struct gs_context *cli_open_host_context(const struct cli_globals *g, const char *config, struct gs_hostconfig **hc,
                                         int *rv)
{
        struct gs_error err = {0};
        *rv = CLI_EXIT_FAILURE;
        *hc = malloc(sizeof(**hc));
        if (*hc == NULL || gs_hostconfig_load(*hc, config, &err) < 0) {
                cli_error("config", "%s", *hc == NULL ? "out of memory" : err.msg);
                goto fail;
        }
        struct cli_globals eff = *g;
        int urv;
        if (!g->user_set && (*hc)->user[0] != '\0' && (urv = cli_parse_user(&eff, (*hc)->user)) != 0) {
                *rv = urv;
                goto fail;
        }
        eff.root = g->root_set ? g->root : (*hc)->root;
        eff.ldcache = g->ldcache_set ? g->ldcache : (*hc)->ldcache;
        eff.nvml_timeout_ms = g->timeout_set ? g->nvml_timeout_ms : (*hc)->nvml_timeout_s * 1000;
        eff.load_kmods = g->load_kmods || (*hc)->load_kmods;
        struct gs_context *ctx = cli_open_context(&eff);
        if (ctx != NULL)
                return ctx;
fail:
        free(*hc);
        *hc = NULL;
        return NULL;
}
