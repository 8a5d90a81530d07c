/*
 * The DRA plugin's own metrics (issue 33): the claims NodePrepareResources and
 * NodeUnprepareResources were asked for, by result, how long each took (a histogram), and the
 * claims prepared on the node; Prometheus text on --metrics-listen ADDR:PORT (GET /metrics,
 * /healthz), served by a thread of its own (libmicrohttpd: one thread, 16 connections at most, 10 s
 * each), so a scrape never waits on the plugin's loop nor the loop on a scrape. The counts are
 * atomics the loop adds to.
 *
 *   gpuslice_dra_prepare_total{result="prepared"|"refused"}         counter
 *   gpuslice_dra_unprepare_total{result="unprepared"|"failed"}       counter
 *   gpuslice_dra_prepare_duration_seconds                           histogram, per claim
 *   gpuslice_dra_unprepare_duration_seconds                         histogram, per claim
 *   gpuslice_dra_prepared_claims                                    gauge
 */
#ifndef GS_DRA_STATS_H
#define GS_DRA_STATS_H

#include <stdbool.h>
#include <stddef.h>

#include <gpuslice/gpuslice.h>

enum gs_dra_op { GS_DRA_OP_PREPARE, GS_DRA_OP_UNPREPARE };

struct gs_dra_stats;

/* Serve on `listen` (observe/listen.h's ADDR:PORT). NULL with err. */
struct gs_dra_stats *gs_dra_stats_start(const char *listen, struct gs_error *err);
/* The bound address ("127.0.0.1:9395"). */
const char *gs_dra_stats_address(const struct gs_dra_stats *s);
/* One claim's call: `ok` or not, `seconds` long. s NULL: nothing. */
void gs_dra_stats_note(struct gs_dra_stats *s, enum gs_dra_op op, bool ok, double seconds);
void gs_dra_stats_prepared(struct gs_dra_stats *s, size_t n);
/* The exposition text (allocated, *len without the NUL); NULL when out of memory. */
char *gs_dra_stats_render(struct gs_dra_stats *s, size_t *len);
void gs_dra_stats_stop(struct gs_dra_stats *s);

#endif
