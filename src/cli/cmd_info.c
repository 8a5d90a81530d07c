/* gpuslice info [--csv|--json]: the driver and the GPUs NVML reports. */
#include <getopt.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const char info_help[] =
        "Usage: gpuslice [GLOBAL OPTIONS] info [--csv | --json]\n"
        "\n"
        "Query the driver (through NVML, in an isolated helper) and report its version and the\n"
        "GPUs it detected, with their MIG devices.\n"
        "\n"
        "  --csv     two CSV tables (driver, devices), as nvidia-container-cli info --csv\n"
        "  --json    one JSON object: {\"driver\":{...},\"gpus\":[{...,\"mig_devices\":[...]}]}\n"
        "  -h, --help\n";

static void print_text(const struct gs_device_info *d)
{
        printf("%-15s %s\n%-15s %s\n", "NVRM version:", d->driver_version, "CUDA version:", d->cuda_version);
        for (unsigned i = 0; i < d->ngpus; i++) {
                const struct gs_gpu *g = &d->gpus[i];
                printf("\n%-15s %u\n%-15s %u\n%-15s %s\n%-15s %s\n%-15s %s\n%-15s %s\n%-15s %s\n",
                       "Device Index:", g->index, "Device Minor:", g->minor, "Model:", g->model, "Brand:", g->brand,
                       "GPU UUID:", g->uuid, "Bus Location:", g->bus_id, "Architecture:", g->arch);
                if (!g->mig_enabled)
                        continue;
                for (unsigned j = 0; j < g->nmigs; j++) {
                        const struct gs_mig_device *m = &g->migs[j];
                        printf("\n%-19s %u:%u\n%-19s %s\n%-19s %u\n%-19s %u\n", "MIG Device Index:", g->index,
                               m->index, "MIG UUID:", m->uuid, "GPU Instance:", m->gi, "Compute Instance:", m->ci);
                }
        }
}

static void print_csv(const struct gs_device_info *d)
{
        printf("NVRM version,CUDA version\n%s,%s\n", d->driver_version, d->cuda_version);
        printf("\nDevice Index,Device Minor,Model,Brand,GPU UUID,Bus Location,Architecture\n");
        for (unsigned i = 0; i < d->ngpus; i++) {
                const struct gs_gpu *g = &d->gpus[i];
                printf("%u,%u,%s,%s,%s,%s,%s\n", g->index, g->minor, g->model, g->brand, g->uuid, g->bus_id, g->arch);
        }
        bool any_mig = false;
        for (unsigned i = 0; i < d->ngpus; i++)
                any_mig |= d->gpus[i].mig_enabled && d->gpus[i].nmigs > 0;
        if (!any_mig)
                return;
        printf("\nMIG Device Index,MIG UUID,GPU Instance,Compute Instance\n");
        for (unsigned i = 0; i < d->ngpus; i++)
                for (unsigned j = 0; j < d->gpus[i].nmigs; j++) {
                        const struct gs_mig_device *m = &d->gpus[i].migs[j];
                        printf("%u:%u,%s,%u,%u\n", i, m->index, m->uuid, m->gi, m->ci);
                }
}

static int print_json(const struct gs_device_info *d)
{
        json_object *root = json_object_new_object();
        json_object *drv = json_object_new_object();
        json_object_object_add(drv, "version", json_object_new_string(d->driver_version));
        json_object_object_add(drv, "cuda_version", json_object_new_string(d->cuda_version));
        json_object_object_add(root, "driver", drv);
        json_object *gpus = json_object_new_array();
        for (unsigned i = 0; i < d->ngpus; i++) {
                const struct gs_gpu *g = &d->gpus[i];
                json_object *o = json_object_new_object();
                json_object_object_add(o, "index", json_object_new_int64(g->index));
                json_object_object_add(o, "minor", json_object_new_int64(g->minor));
                json_object_object_add(o, "model", json_object_new_string(g->model));
                json_object_object_add(o, "brand", json_object_new_string(g->brand));
                json_object_object_add(o, "uuid", json_object_new_string(g->uuid));
                json_object_object_add(o, "bus_id", json_object_new_string(g->bus_id));
                json_object_object_add(o, "arch", json_object_new_string(g->arch));
                json_object_object_add(o, "memory_total_bytes", json_object_new_uint64(g->memory_total));
                json_object_object_add(o, "mig_enabled", json_object_new_boolean(g->mig_enabled));
                json_object *migs = json_object_new_array();
                for (unsigned j = 0; j < g->nmigs; j++) {
                        const struct gs_mig_device *m = &g->migs[j];
                        json_object *mo = json_object_new_object();
                        json_object_object_add(mo, "index", json_object_new_int64(m->index));
                        json_object_object_add(mo, "uuid", json_object_new_string(m->uuid));
                        json_object_object_add(mo, "gpu_instance", json_object_new_int64(m->gi));
                        json_object_object_add(mo, "compute_instance", json_object_new_int64(m->ci));
                        json_object_object_add(mo, "memory_total_bytes", json_object_new_uint64(m->memory_total));
                        json_object_array_add(migs, mo);
                }
                json_object_object_add(o, "mig_devices", migs);
                json_object_array_add(gpus, o);
        }
        json_object_object_add(root, "gpus", gpus);
        cli_print_json(root);
        return 0;
}

int cmd_info(const struct cli_globals *g, int argc, char **argv)
{
        static const struct option opts[] = {
                {"csv", no_argument, NULL, 'c'},
                {"json", no_argument, NULL, 'j'},
                {"help", no_argument, NULL, 'h'},
                {0},
        };
        bool csv = false, json = false;
        int c;
        while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
                switch (c) {
                case 'c':
                        csv = true;
                        break;
                case 'j':
                        json = true;
                        break;
                case 'h':
                        fputs(info_help, stdout);
                        return 0;
                default:
                        return cli_usage_error("info", "unknown option '%s'", argv[optind - 1]);
                }
        }
        if (optind < argc)
                return cli_usage_error("info", "unexpected argument '%s'", argv[optind]);
        if (csv && json)
                return cli_usage_error("info", "--csv and --json are exclusive");

        struct gs_context *ctx = cli_open_context(g);
        if (ctx == NULL)
                return CLI_EXIT_FAILURE;
        const struct gs_device_info *d = cli_query_devices(ctx, false);
        if (d == NULL) {
                gs_context_free(ctx);
                return CLI_EXIT_FAILURE;
        }
        if (json)
                print_json(d);
        else if (csv)
                print_csv(d);
        else
                print_text(d);
        gs_context_free(ctx);
        return 0;
}
