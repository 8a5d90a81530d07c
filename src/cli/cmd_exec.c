/* gpuslice exec: run a command with a GPU slice applied (the interposer preloaded, the limits
 * in its environment, a usage region of its own shared by the command's processes). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "vgpu/config.h"

static const char exec_help[] =
        "Usage: gpuslice [GLOBAL OPTIONS] exec [--device LIST] --memory SIZE [--memory-<i> SIZE]\n"
        "                [--region PATH] -- COMMAND [ARGS...]\n"
        "\n"
        "Run COMMAND with a GPU slice: libgpuslice-vgpu.so is preloaded into it and every process it\n"
        "starts, which then see at most SIZE of GPU memory per device and together never use more.\n"
        "\n"
        "  --memory=SIZE         memory quota per visible device: bytes, or K/M/G/T or Ki/Mi/Gi/Ti\n"
        "                        (powers of 1024); 'unlimited' for none\n"
        "  --memory-<i>=SIZE     quota for visible device i (overrides --memory)\n"
        "  -d, --device=LIST     devices the command may see (as for `list`); default all\n"
        "      --region=PATH     usage region file to share (default: a new one, removed at exit)\n"
        "  -h, --help\n"
        "\n"
        "The exit status is COMMAND's (128+N if it died of signal N).\n";

static pid_t child = -1;

static void forward(int sig)
{
        if (child > 0)
                kill(child, sig);
}

/* The interposer next to this executable, or $GPUSLICE_VGPU_LIB. */
static int find_vgpu_lib(char *out, size_t len)
{
        const char *env = getenv("GPUSLICE_VGPU_LIB");
        if (env != NULL && *env != '\0') {
                snprintf(out, len, "%s", env);
                return access(out, R_OK);
        }
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (n <= 0)
                return -1;
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash == NULL)
                return -1;
        *slash = '\0';
        static const char *const rel[] = {"/libgpuslice-vgpu.so", "/../lib/gpuslice/libgpuslice-vgpu.so",
                                          "/../lib/libgpuslice-vgpu.so"};
        for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
                snprintf(out, len, "%s%s", exe, rel[i]);
                if (access(out, R_OK) == 0)
                        return 0;
        }
        return -1;
}

int cmd_exec(const struct cli_globals *g, int argc, char **argv)
{
        enum { O_MEMORY = 0x100, O_REGION };
        static const struct option opts[] = {
                {"memory", required_argument, NULL, O_MEMORY},
                {"region", required_argument, NULL, O_REGION},
                {"device", required_argument, NULL, 'd'},
                {"help", no_argument, NULL, 'h'},
                {0},
        };
        const char *memory = NULL, *region = NULL;
        char *devices = NULL;
        char per_dev[GS_VGPU_MAX_DEVICES][64];
        bool have_dev[GS_VGPU_MAX_DEVICES] = {false};
        int c, rv = CLI_EXIT_USAGE, ac = 0;
        char **owned = NULL;
        uint64_t bytes;
        /* --memory-<i> is not a fixed option name: take it out of argv before getopt runs. */
        char **av = calloc((size_t)argc + 1, sizeof(char *));
        if (av == NULL) {
                cli_error("input", "out of memory");
                return CLI_EXIT_FAILURE;
        }
        owned = av;
        bool rest = false;
        for (int i = 0; i < argc; i++) {
                unsigned idx;
                int off = 0;
                if (!rest && strcmp(argv[i], "--") == 0)
                        rest = true;
                if (rest || sscanf(argv[i], "--memory-%u%n", &idx, &off) != 1 ||
                    (argv[i][off] != '=' && argv[i][off] != '\0')) {
                        av[ac++] = argv[i];
                        continue;
                }
                const char *opt = argv[i];
                const char *val = argv[i][off] == '=' ? argv[i] + off + 1 : (i + 1 < argc ? argv[++i] : NULL);
                if (idx >= GS_VGPU_MAX_DEVICES || val == NULL || gs_vgpu_parse_size(val, &bytes) < 0) {
                        rv = cli_usage_error("exec", "invalid %s value: %s (device index < %d; size: bytes, or "
                                             "K/M/G/T or Ki/Mi/Gi/Ti)", opt, val != NULL ? val : "(missing)",
                                             GS_VGPU_MAX_DEVICES);
                        goto done;
                }
                snprintf(per_dev[idx], sizeof(per_dev[idx]), "%s", val);
                have_dev[idx] = true;
        }
        argc = ac;
        argv = av;
        while ((c = getopt_long(argc, argv, "+:d:h", opts, NULL)) != -1) {
                switch (c) {
                case O_MEMORY:
                        if (gs_vgpu_parse_size(optarg, &bytes) < 0) {
                                rv = cli_usage_error("exec", "invalid --memory: %s (bytes, or K/M/G/T or Ki/Mi/Gi/Ti)", optarg);
                                goto done;
                        }
                        memory = optarg;
                        break;
                case O_REGION:
                        if (optarg[0] != '/') {
                                rv = cli_usage_error("exec", "--region must be an absolute path: %s", optarg);
                                goto done;
                        }
                        region = optarg;
                        break;
                case 'd':
                        if (cli_join(&devices, optarg) < 0) {
                                cli_error("input", "out of memory");
                                rv = CLI_EXIT_FAILURE;
                                goto done;
                        }
                        break;
                case 'h':
                        fputs(exec_help, stdout);
                        rv = 0;
                        goto done;
                case ':':
                        rv = cli_usage_error("exec", "option '%s' needs a value", argv[optind - 1]);
                        goto done;
                default:
                        rv = cli_usage_error("exec", "unknown option '%s'", argv[optind - 1]);
                        goto done;
                }
        }
        if (optind >= argc) {
                rv = cli_usage_error("exec", "missing COMMAND (use: gpuslice exec --memory 4Gi -- COMMAND)");
                goto done;
        }
        if (memory == NULL) {
                bool any = false;
                for (int i = 0; i < GS_VGPU_MAX_DEVICES; i++)
                        any |= have_dev[i];
                if (!any) {
                        rv = cli_usage_error("exec", "--memory SIZE is required (or --memory-<i>; 'unlimited' for none)");
                        goto done;
                }
        }
        char lib[PATH_MAX];
        if (find_vgpu_lib(lib, sizeof(lib)) < 0) {
                cli_error("initialization", "libgpuslice-vgpu.so not found next to gpuslice (set GPUSLICE_VGPU_LIB)");
                rv = CLI_EXIT_FAILURE;
                goto done;
        }
        if (devices != NULL) {
                struct gs_context *ctx = cli_open_context(g);
                if (ctx == NULL) {
                        rv = CLI_EXIT_FAILURE;
                        goto done;
                }
                const struct gs_device_info *d = cli_query_devices(ctx, true);
                struct gs_selection sel;
                struct gs_error err = {0};
                if (d == NULL || gs_select_devices(devices, d, &sel, &err) < 0) {
                        if (d != NULL)
                                cli_error("device", "%s", err.msg);
                        gs_context_free(ctx);
                        rv = CLI_EXIT_FAILURE;
                        goto done;
                }
                char list[1024] = "";
                for (unsigned i = 0; i < d->ngpus; i++) {
                        if (!gs_selection_uses_gpu(&sel, i))
                                continue;
                        if (strlen(list) + strlen(d->gpus[i].uuid) + 2 >= sizeof(list))
                                break;
                        if (list[0] != '\0')
                                strcat(list, ",");
                        strcat(list, d->gpus[i].uuid);
                }
                gs_context_free(ctx);
                setenv("GPUSLICE_DEVICES", list, 1);
        }
        char made_region[PATH_MAX] = "";
        if (region == NULL) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                snprintf(made_region, sizeof(made_region), "/dev/shm/gpuslice-exec-%d-%ld", (int)getpid(), (long)ts.tv_nsec);
                region = made_region;
        }
        setenv("GPUSLICE_REGION", region, 1);
        if (memory != NULL)
                setenv("GPUSLICE_MEMORY_LIMIT", memory, 1);
        for (int i = 0; i < GS_VGPU_MAX_DEVICES; i++) {
                if (!have_dev[i])
                        continue;
                char name[64];
                snprintf(name, sizeof(name), "GPUSLICE_MEMORY_LIMIT_%d", i);
                setenv(name, per_dev[i], 1);
        }
        const char *old = getenv("LD_PRELOAD");
        char preload[PATH_MAX * 2];
        snprintf(preload, sizeof(preload), "%s%s%s", lib, old && *old ? ":" : "", old && *old ? old : "");
        setenv("LD_PRELOAD", preload, 1);

        fflush(NULL);
        child = fork();
        if (child < 0) {
                cli_error("exec", "fork: %s", strerror(errno));
                rv = CLI_EXIT_FAILURE;
                goto done;
        }
        if (child == 0) {
                execvp(argv[optind], argv + optind);
                fprintf(stderr, "gpuslice: exec error: %s: %s\n", argv[optind], strerror(errno));
                _exit(errno == ENOENT ? 127 : 126);
        }
        struct sigaction sa = {.sa_handler = forward};
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGHUP, &sa, NULL);
        int st = 0;
        while (waitpid(child, &st, 0) < 0 && errno == EINTR) {
        }
        if (made_region[0] != '\0')
                unlink(made_region);
        rv = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
done:
        free(owned);
        free(devices);
        return rv;
}
