/* The observer's parts, as `metrics` and `top` start them (cli.h: cli_observe_start). */
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "common/cleanup.h"
#include "observe/collect.h"
#include "observe/gpus.h"
#include "runtime/hostconfig.h"

int cli_observe_start(const struct cli_globals *g, const struct cli_observe_opts *o, struct gs_collector **collector,
                      struct gs_gpu_poller **gpus)
{
        gs_autofree struct gs_hostconfig *hc = malloc(sizeof(*hc));
        struct gs_error err = {0};
        if (hc == NULL || gs_hostconfig_load(hc, o->config, &err) < 0) {
                cli_error("config", "%s", hc == NULL ? "out of memory" : err.msg);
                return -1;
        }
        struct gs_collector_opts co = {
                .regions_dir = o->regions_dir != NULL ? o->regions_dir : hc->regions_dir,
                .regions = o->regions,
                .nregions = o->nregions,
                .window_ms = o->window_ms,
                .log = o->log,
        };
        if ((*collector = gs_collector_new(&co, &err)) == NULL) {
                cli_error(o->verb, "%s", err.msg);
                return -1;
        }
        if (o->no_nvml)
                return 0;
        /* NVML through the isolated helper, as `info` runs it: the global options, else the host
         * config's driver root, identity and timeout. */
        struct cli_globals eff = *g;
        if (!g->user_set && hc->user[0] != '\0' && cli_parse_user(&eff, hc->user) != 0)
                return -1;
        struct gs_config cfg = {
                .root = g->root_set ? g->root : hc->root,
                .ldcache = g->ldcache_set ? g->ldcache : hc->ldcache,
                .uid = eff.uid,
                .gid = eff.gid,
                .nvml_timeout_ms = g->timeout_set ? g->nvml_timeout_ms : hc->nvml_timeout_s * 1000,
        };
        struct gs_gpu_poller_opts po = {.cfg = &cfg, .interval_ms = o->nvml_interval_ms, .log = o->log};
        if ((*gpus = gs_gpu_poller_start(&po, &err)) == NULL) {
                cli_error("initialization", "%s", err.msg);
                return -1;
        }
        return 0;
}
