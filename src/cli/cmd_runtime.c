/* gpuslice runtime [RUNTIME ARGS] (and nvidia-container-runtime): the OCI runtime shim;
 * gpuslice runtime configure: register it in an engine's config. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/log.h"
#include "engine/engine.h"
#include "runtime/hook_exe.h"
#include "runtime/hostconfig.h"

static const char runtime_help[] =
        "Usage: gpuslice runtime [RUNTIME OPTIONS] COMMAND [ARGS]\n"
        "       nvidia-container-runtime [RUNTIME OPTIONS] COMMAND [ARGS]\n"
        "       gpuslice runtime configure --runtime docker|containerd|crio [OPTIONS]\n"
        "\n"
        "An OCI runtime shim, for engines configured with a runtime (docker --runtime=nvidia, a\n"
        "containerd or CRI-O runtime handler, Kubernetes RuntimeClass nvidia). On create and run it\n"
        "loads the bundle's config.json (--bundle, else the working directory); when the container\n"
        "asks for GPUs (NVIDIA_VISIBLE_DEVICES, cdi.k8s.io/* annotations, mounts under\n"
        "/var/run/nvidia-container-devices, a GPUSLICE_* or HAMi slice) it changes the spec per\n"
        "runtime.mode of the host config and writes it back atomically:\n"
        "  legacy   add the `gpuslice-hook prestart` hook (gpuslice-hook: the lean hook beside\n"
        "           this executable, else `gpuslice hook`; runtime.hook-path names another)\n"
        "  cdi      resolve CDI device names in runtime.cdi-spec-dirs and apply their edits\n"
        "  jit-cdi  the same with a spec made now for the requested GPUs\n"
        "  auto     cdi when the container names CDI devices, else legacy\n"
        "A slice adds the `gpuslice-hook createRuntime` and `poststop` hooks in cdi and jit-cdi.\n"
        "Then it runs the first low-level runtime of runtime.runtimes (runc, crun) with the same\n"
        "arguments. Every other command goes to that runtime untouched; a container that asks for\n"
        "no GPU is not touched. Errors go to stderr and to the runtime's --log (--log-format json or\n"
        "text). The host config is " GS_HOSTCONFIG_DEFAULT_PATH " (GPUSLICE_CONFIG names another).\n"
        "\n"
        "  -h, --help          this help (only as `gpuslice runtime --help`)\n"
        "\n"
        "See `gpuslice runtime configure --help` for registering the shim with an engine.\n";

static int shim_main(int argc, char **argv)
{
        struct gs_shim_args a;
        gs_shim_parse_args(argc, argv, &a);
        struct gs_error err = {0};
        struct gs_hostconfig hc;
        const char *cfg = secure_getenv("GPUSLICE_CONFIG");
        char msg[GS_ERRMSG_MAX + 64];
        if (gs_hostconfig_load(&hc, cfg != NULL && cfg[0] != '\0' ? cfg : NULL, &err) < 0) {
                snprintf(msg, sizeof(msg), "config: %s", err.msg);
                gs_shim_log_error(&a, msg);
                /* a create fails (it may ask for GPUs); state, kill, delete ... still reach the
                 * runtime, with the default list, so no container is left that cannot be deleted */
                if (a.creates)
                        return CLI_EXIT_FAILURE;
                gs_hostconfig_defaults(&hc);
        }
        if (hc.rt.log_file[0] != '\0')
                gs_log_open(hc.rt.log_file);
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        self[n > 0 ? n : 0] = '\0';
        char rt[PATH_MAX];
        if (gs_shim_find_runtime(&hc.rt.runtimes, self, rt, sizeof(rt), &err) < 0) {
                gs_shim_log_error(&a, err.msg);
                return CLI_EXIT_FAILURE;
        }
        if (a.creates) {
                /* The hooks it adds run the lean hook beside this executable (gpuslice-hook,
                 * installed in one directory with gpuslice-runtime, nvidia-container-runtime and
                 * gpuslice), else the gpuslice there, else this executable (`gpuslice runtime`). */
                char hookbin[PATH_MAX];
                if (gs_hook_exe_default(hookbin, sizeof(hookbin), &err) < 0)
                        snprintf(hookbin, sizeof(hookbin), "%s", self);
                struct gs_shim_opts o = {
                        .hc = &hc,
                        .self = hookbin,
                        .ctx = {.root = hc.root, .ldcache = hc.ldcache, .uid = (uid_t)-1, .gid = (gid_t)-1,
                                .nvml_timeout_ms = hc.nvml_timeout_s * 1000},
                };
                struct gs_shim_result res;
                if (gs_shim_prepare_bundle(&o, a.bundle, &res, &err) < 0) {
                        gs_shim_log_error(&a, err.msg);
                        return CLI_EXIT_FAILURE;
                }
                if (res.gpu)
                        gs_log_info("runtime: %s", res.what);
        }
        gs_log_close();
        gs_shim_exec(rt, argv, &err);
        gs_shim_log_error(&a, err.msg);
        return 127;
}

int cmd_runtime(const struct cli_globals *g, int argc, char **argv)
{
        if (!g->from_nvidia_name && argc >= 2) {
                if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
                        fputs(runtime_help, stdout);
                        return 0;
                }
                if (strcmp(argv[1], "configure") == 0)
                        return cmd_runtime_configure(g, argc - 1, argv + 1);
        }
        return shim_main(argc, argv);
}

static const char configure_help[] =
        "Usage: gpuslice runtime configure --runtime docker|containerd|crio [OPTIONS]\n"
        "       gpuslice runtime configure [--runtime ENGINE [OPTIONS]] --kubernetes [--host-config FILE]\n"
        "\n"
        "Register the runtime shim (nvidia-container-runtime) with a container engine, keeping\n"
        "everything else in its config: docker's daemon.json (runtimes.nvidia), containerd's\n"
        "config.toml (a runtime handler with BinaryName the shim; schema version 2 or 3, for a\n"
        "version 3 config a drop-in under /etc/containerd/conf.d that the config imports), CRI-O's\n"
        "drop-in crio.conf.d/99-gpuslice.toml. A file is written only when it changes, after a\n"
        "backup beside it (<file>.<time>.bak, the original's owner and mode); a symlinked config is\n"
        "edited through the link (its target replaced, the link kept). containerd reads each new\n"
        "file (containerd --config FILE config dump) before it replaces the original; a file it\n"
        "refuses is not written. A TOML shape the editor cannot change safely, or a daemon.json\n"
        "value of the wrong type, is refused, naming it. Each change is printed. Restart the\n"
        "engine after.\n"
        "With --kubernetes, also gpuslice's host config gets the values a Kubernetes node needs, where\n"
        "images and pod specs are the tenants': [hook] accept-nvidia-visible-devices-envvar-when-\n"
        "unprivileged = false (an unprivileged container's NVIDIA_VISIBLE_DEVICES, every CUDA image's\n"
        "included, gives no GPU), accept-nvidia-visible-devices-as-volume-mounts = true (the device\n"
        "plugin's volume-mounts answers do), and [device-plugin] allocate = \"volume-mounts\" where it\n"
        "was \"env\".\n"
        "\n"
        "  -r, --runtime=ENGINE    docker, containerd or crio\n"
        "  -c, --config=FILE       the file to edit (default /etc/docker/daemon.json,\n"
        "                          /etc/containerd/config.toml, /etc/crio/crio.conf.d/99-gpuslice.toml)\n"
        "      --drop-in=FILE      containerd: put the handler in FILE and import it from the config\n"
        "      --name=NAME         the runtime handler's name (default nvidia)\n"
        "      --path=FILE         the shim (default /usr/bin/nvidia-container-runtime)\n"
        "      --set-as-default    make it the engine's default runtime\n"
        "      --cdi.enabled       docker: features.cdi; containerd: enable_cdi (CRI-O: always on)\n"
        "      --kubernetes        gpuslice's host config for a Kubernetes node (above)\n"
        "      --host-config=FILE  that host config (default " GS_HOSTCONFIG_DEFAULT_PATH ")\n"
        "      --dry-run           print the changes and the new file(s), write nothing\n"
        "      --json              the result as JSON\n"
        "  -h, --help\n";

/* The results (the engine's, the host config's) as one report. */
static void print_result(const struct gs_engine_result *rs, size_t nr, bool dry_run, bool json)
{
        if (json) {
                json_object *root = json_object_new_object(), *files = json_object_new_array(),
                            *changes = json_object_new_array(), *notes = json_object_new_array();
                for (size_t k = 0; k < nr; k++) {
                        const struct gs_engine_result *r = &rs[k];
                        for (size_t i = 0; i < r->nfiles; i++) {
                                json_object *f = json_object_new_object();
                                json_object_object_add(f, "path", json_object_new_string(r->files[i].path));
                                json_object_object_add(f, "changed", json_object_new_boolean(r->files[i].changed));
                                if (r->files[i].cf.linked)
                                        json_object_object_add(f, "target", json_object_new_string(r->files[i].cf.real));
                                json_object_object_add(f, "backup", r->files[i].backup[0]
                                                                            ? json_object_new_string(r->files[i].backup)
                                                                            : NULL);
                                if (dry_run)
                                        json_object_object_add(f, "content", json_object_new_string(r->files[i].after));
                                json_object_array_add(files, f);
                        }
                        for (size_t i = 0; i < r->nchanges; i++)
                                json_object_array_add(changes, json_object_new_string(r->changes[i]));
                        for (size_t i = 0; i < r->nnotes; i++)
                                json_object_array_add(notes, json_object_new_string(r->notes[i]));
                }
                json_object_object_add(root, "dry_run", json_object_new_boolean(dry_run));
                json_object_object_add(root, "files", files);
                json_object_object_add(root, "changes", changes);
                json_object_object_add(root, "notes", notes);
                cli_print_json(root);
                return;
        }
        for (size_t k = 0; k < nr; k++)
                for (size_t i = 0; i < rs[k].nchanges; i++)
                        printf("%s%s\n", dry_run ? "would set " : "set ", rs[k].changes[i]);
        for (size_t k = 0; k < nr; k++) {
                for (size_t i = 0; i < rs[k].nfiles; i++) {
                        const struct gs_engine_file *f = &rs[k].files[i];
                        if (!f->changed)
                                printf("%s: unchanged\n", f->path);
                        else if (dry_run)
                                printf("--- %s (new content) ---\n%s", f->path, f->after);
                        else
                                printf("wrote %s%s%s%s%s%s\n", f->path, f->cf.linked ? " -> " : "",
                                       f->cf.linked ? f->cf.real : "", f->backup[0] ? " (backup " : "", f->backup,
                                       f->backup[0] ? ")" : "");
                }
                for (size_t i = 0; i < rs[k].nnotes; i++)
                        printf("note: %s\n", rs[k].notes[i]);
        }
}

int cmd_runtime_configure(const struct cli_globals *g, int argc, char **argv)
{
        (void)g;
        static const struct option opts[] = {
                {"runtime", required_argument, NULL, 'r'},
                {"config", required_argument, NULL, 'c'},
                {"drop-in", required_argument, NULL, 0x100},
                {"name", required_argument, NULL, 0x101},
                {"path", required_argument, NULL, 0x102},
                {"set-as-default", no_argument, NULL, 0x103},
                {"cdi.enabled", no_argument, NULL, 0x104},
                {"dry-run", no_argument, NULL, 0x105},
                {"json", no_argument, NULL, 0x106},
                {"kubernetes", no_argument, NULL, 0x107},
                {"host-config", required_argument, NULL, 0x108},
                {"help", no_argument, NULL, 'h'},
                {0},
        };
        struct gs_engine_opts o = {0};
        bool have_engine = false, json = false, k8s = false;
        const char *host_config = NULL;
        int c;
        optind = 0;
        while ((c = getopt_long(argc, argv, "+:r:c:h", opts, NULL)) != -1) {
                switch (c) {
                case 'r':
                        if (gs_engine_parse(optarg, &o.engine) < 0)
                                return cli_usage_error("runtime configure", "unknown --runtime '%s' (docker, containerd or crio)",
                                                       optarg);
                        have_engine = true;
                        break;
                case 'c': o.config = optarg; break;
                case 0x100: o.drop_in = optarg; break;
                case 0x101: o.name = optarg; break;
                case 0x102: o.path = optarg; break;
                case 0x103: o.set_as_default = true; break;
                case 0x104: o.cdi_enabled = true; break;
                case 0x105: o.dry_run = true; break;
                case 0x106: json = true; break;
                case 0x107: k8s = true; break;
                case 0x108: host_config = optarg; break;
                case 'h': fputs(configure_help, stdout); return 0;
                case ':': return cli_usage_error("runtime configure", "option '%s' needs a value", argv[optind - 1]);
                default: return cli_usage_error("runtime configure", "unknown option '%s'", argv[optind - 1]);
                }
        }
        if (optind < argc)
                return cli_usage_error("runtime configure", "unexpected argument '%s'", argv[optind]);
        if (!have_engine && !k8s)
                return cli_usage_error("runtime configure", "missing --runtime (docker, containerd or crio)");
        if (host_config != NULL && !k8s)
                return cli_usage_error("runtime configure", "--host-config is for --kubernetes");
        if (!have_engine && (o.config != NULL || o.drop_in != NULL || o.name != NULL || o.path != NULL ||
                             o.set_as_default || o.cdi_enabled))
                return cli_usage_error("runtime configure", "engine options need --runtime");
        if (o.drop_in != NULL && o.engine != GS_ENGINE_CONTAINERD)
                return cli_usage_error("runtime configure", "--drop-in is for --runtime containerd");
        struct gs_engine_result r[2] = {0};
        struct gs_error err = {0};
        size_t nr = 0;
        int rc = have_engine ? gs_engine_configure(&o, &r[nr++], &err) : 0;
        if (rc == 0 && k8s)
                rc = gs_hostconfig_configure_k8s(host_config, o.dry_run, &r[nr++], &err);
        if (rc == 0)
                print_result(r, nr, o.dry_run, json);
        else
                cli_error("runtime", "%s", err.msg);
        for (size_t i = 0; i < nr; i++)
                gs_engine_result_release(&r[i]);
        return rc < 0 ? CLI_EXIT_FAILURE : 0;
}
