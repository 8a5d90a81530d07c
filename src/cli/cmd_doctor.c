/* gpuslice doctor [--json]: option parsing and printing; the checks are in src/doctor. */
#include <getopt.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "doctor/doctor.h"
#include "runtime/hostconfig.h"

static const char doctor_help[] =
        "Usage: gpuslice [GLOBAL OPTIONS] doctor [OPTIONS]\n"
        "\n"
        "Check that this node can give containers GPUs and slices, and say in plain words what is\n"
        "missing or wrong, with a fix for each: the host config, the driver (kernel module and NVML\n"
        "agree), device nodes, the cgroup version, the runtime hooks (hooks.d, the\n"
        "nvidia-container-runtime-hook name docker --gpus runs), the engines' runtime shim, the CDI spec (present and current),\n"
        "the interposer, the regions directory and the MPS daemons. Nothing is changed.\n"
        "The driver root is --root, else driver.root of the host config (as the hook takes it).\n"
        "\n"
        "  -c, --config=FILE      host config (default " GS_HOSTCONFIG_DEFAULT_PATH ")\n"
        "      --hooks-dir=DIR    an OCI hooks.d directory to look in (repeatable; default\n"
        "                         /usr/share/containers/oci/hooks.d and /etc/containers/oci/hooks.d)\n"
        "      --cdi-spec=FILE    a CDI spec to check (repeatable; default those of\n"
        "                         /var/run/cdi/nvidia.yaml, /etc/cdi/nvidia.yaml (.json) that exist)\n"
        "      --cgroup-root=DIR  the cgroup mount (default " GS_DOCTOR_CGROUP_ROOT ")\n"
        "      --engine-config=ENGINE=FILE  docker, containerd or crio's config to check for the\n"
        "                         runtime shim (repeatable; default those of /etc/docker/daemon.json,\n"
        "                         /etc/containerd/config.toml, /etc/crio/crio.conf.d/99-gpuslice.toml\n"
        "                         that exist)\n"
        "      --json             one JSON object: {\"root\", \"config\", \"checks\": [{\"name\", \"status\",\n"
        "                         \"message\", \"fix\"}], \"summary\"}\n"
        "  -h, --help\n"
        "\n"
        "Status of a check: ok, warn (works, but should be looked at), fail (something does not\n"
        "work), skip (could not be checked: an earlier check failed). Exit status 1 when any\n"
        "check failed, else 0.\n";

enum { O_HOOKS = 0x100, O_CDI, O_CGROUP, O_JSON, O_ENGINE };

static int add_path(const char **list, const char *arg, const char *opt)
{
        for (int i = 0; i < GS_DOCTOR_MAX_PATHS; i++)
                if (list[i] == NULL) {
                        list[i] = arg;
                        return 0;
                }
        return cli_usage_error("doctor", "too many %s options (at most %d)", opt, GS_DOCTOR_MAX_PATHS);
}

static int parse(int argc, char **argv, struct gs_doctor_opts *o, bool *json)
{
        static const struct option opts[] = {
                {"config", required_argument, NULL, 'c'},
                {"hooks-dir", required_argument, NULL, O_HOOKS},
                {"cdi-spec", required_argument, NULL, O_CDI},
                {"cgroup-root", required_argument, NULL, O_CGROUP},
                {"json", no_argument, NULL, O_JSON},
                {"engine-config", required_argument, NULL, O_ENGINE},
                {"help", no_argument, NULL, 'h'},
                {0},
        };
        int c, rc;
        while ((c = getopt_long(argc, argv, "+:c:h", opts, NULL)) != -1) {
                switch (c) {
                case 'c': o->config = optarg; break;
                case O_HOOKS:
                        if ((rc = add_path(o->hooks_dirs, optarg, "--hooks-dir")) != 0)
                                return rc;
                        break;
                case O_CDI:
                        if ((rc = add_path(o->cdi_specs, optarg, "--cdi-spec")) != 0)
                                return rc;
                        break;
                case O_CGROUP: o->cgroup_root = optarg; break;
                case O_JSON: *json = true; break;
                case O_ENGINE: {
                        static const char *const names[] = {"docker=", "containerd=", "crio="};
                        int e = -1;
                        for (int i = 0; i < 3; i++)
                                if (strncmp(optarg, names[i], strlen(names[i])) == 0 && optarg[strlen(names[i])] != '\0')
                                        e = i;
                        if (e < 0)
                                return cli_usage_error("doctor", "--engine-config wants docker=FILE, containerd=FILE or "
                                                       "crio=FILE, not '%s'", optarg);
                        o->engine_configs[e] = optarg + strlen(names[e]);
                        break;
                }
                case 'h': fputs(doctor_help, stdout); return 0;
                case ':': return cli_usage_error("doctor", "option '%s' needs a value", argv[optind - 1]);
                default: return cli_usage_error("doctor", "unknown option '%s'", argv[optind - 1]);
                }
        }
        if (optind < argc)
                return cli_usage_error("doctor", "unexpected argument '%s'", argv[optind]);
        return -1;
}

static void print_text(const struct gs_doctor_report *r)
{
        printf("gpuslice doctor: driver root %s, host config %s\n\n", r->root,
               r->config[0] != '\0' ? r->config : "(none: built-in defaults)");
        for (size_t i = 0; i < r->n; i++) {
                const struct gs_doctor_result *c = &r->results[i];
                static const char *const tag[] = {"ok", "WARN", "FAIL", "skip"};
                printf("%-5s %-13s %s\n", tag[c->status], c->name, c->message);
                if (c->fix[0] != '\0')
                        printf("%-5s %-13s fix: %s\n", "", "", c->fix);
        }
        printf("\n%u failed, %u warning%s, %u ok", r->nfail, r->nwarn, r->nwarn == 1 ? "" : "s", r->nok);
        if (r->nskip > 0)
                printf(", %u skipped", r->nskip);
        putchar('\n');
}

static void print_json(const struct gs_doctor_report *r)
{
        json_object *root = json_object_new_object();
        json_object_object_add(root, "root", json_object_new_string(r->root));
        json_object_object_add(root, "config", r->config[0] != '\0' ? json_object_new_string(r->config) : NULL);
        json_object *checks = json_object_new_array();
        for (size_t i = 0; i < r->n; i++) {
                const struct gs_doctor_result *c = &r->results[i];
                json_object *o = json_object_new_object();
                json_object_object_add(o, "name", json_object_new_string(c->name));
                json_object_object_add(o, "status", json_object_new_string(gs_doctor_status_name(c->status)));
                json_object_object_add(o, "message", json_object_new_string(c->message));
                json_object_object_add(o, "fix", c->fix[0] != '\0' ? json_object_new_string(c->fix) : NULL);
                json_object_array_add(checks, o);
        }
        json_object_object_add(root, "checks", checks);
        json_object *sum = json_object_new_object();
        json_object_object_add(sum, "ok", json_object_new_int64(r->nok));
        json_object_object_add(sum, "warn", json_object_new_int64(r->nwarn));
        json_object_object_add(sum, "fail", json_object_new_int64(r->nfail));
        json_object_object_add(sum, "skip", json_object_new_int64(r->nskip));
        json_object_object_add(root, "summary", sum);
        cli_print_json(root);
}

int cmd_doctor(const struct cli_globals *g, int argc, char **argv)
{
        struct gs_doctor_opts o = {
                .cfg = {
                        .root = g->root_set ? g->root : NULL,
                        .ldcache = g->ldcache_set ? g->ldcache : NULL,
                        .uid = g->uid,
                        .gid = g->gid,
                        .nvml_timeout_ms = g->timeout_set ? g->nvml_timeout_ms : 0,
                },
        };
        bool json = false;
        int rc = parse(argc, argv, &o, &json);
        if (rc >= 0)
                return rc;
        struct gs_doctor_report *r = malloc(sizeof(*r));
        if (r == NULL) {
                cli_error("doctor", "out of memory");
                return CLI_EXIT_FAILURE;
        }
        gs_doctor_run(&o, r);
        if (json)
                print_json(r);
        else
                print_text(r);
        rc = r->nfail > 0 ? CLI_EXIT_FAILURE : 0;
        free(r);
        return rc;
}
