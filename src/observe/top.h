/*
 * The view of `gpuslice top` (the terminal loop is src/cli/cmd_top.c): one row per slice and
 * device from a collector's observation, sorted by memory, compute or name, each row formatted
 * into a line of a given width (80 columns and narrower: long names are shortened, never the
 * numbers), and the JSON document of `top --once --json` (gpuslice-top(1) documents it).
 *
 * Everything shown comes from regions that containers write, so names and labels are made
 * printable before they reach a terminal: bytes outside printable ASCII become '?' (a UTF-8
 * sequence one '?'), and in JSON invalid UTF-8 becomes '?'.
 */
#ifndef GS_OBSERVE_TOP_H
#define GS_OBSERVE_TOP_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "observe/collect.h"
#include "observe/gpus.h"

/* A display name: "namespace/pod/container" (labels) or the id, then " (claim NAME)" for a DRA
 * claim's slice, made printable. */
#define GS_TOP_NAME_MAX (4 * GS_SLICE_LABEL_MAX + GS_OBS_ID_MAX + 16) /* ns/pod/container (claim NAME) */

enum gs_top_sort {
        GS_TOP_SORT_MEMORY,   /* memory used, largest first */
        GS_TOP_SORT_COMPUTE,  /* compute used over the last window, largest first (unmeasured last) */
        GS_TOP_SORT_NAME,     /* display name, then device */
};

/* "memory", "compute", "name". */
const char *gs_top_sort_name(enum gs_top_sort by);
/* The same names (or their first letter) into *out; -1 when unknown. */
int gs_top_sort_parse(const char *s, enum gs_top_sort *out);

struct gs_top_row {
        const struct gs_obs_slice *slice;   /* in the observation */
        const struct gs_obs_device *dev;
        size_t slice_index;                 /* the slice's index in the observation */
        const char *name;                   /* the slice's display name (the view's) */
        int gpu;                            /* the host's GPU index (NVML, by UUID); -1 unknown */
};

struct gs_top_gpu {
        unsigned index;
        char uuid[GS_STR_LONG];
        char model[GS_STR_LONG];
        uint64_t memory_used, memory_total;
        bool utilization_valid;
        unsigned utilization;               /* percent */
};

struct gs_top_view {
        const struct gs_observation *obs;   /* not owned: release it after the view */
        size_t nrows;
        struct gs_top_row *rows;
        char (*names)[GS_TOP_NAME_MAX];     /* per slice */
        pid_t **host_pids;                  /* per slice after gs_top_view_host_pids, else NULL;
                                               0 where a pid was not found */
        bool nvml;                          /* NVML was asked (gpus given to the build) */
        bool nvml_valid, nvml_fresh;        /* it has answered; its last attempt was answered */
        char nvml_error[GS_ERRMSG_MAX];
        unsigned ngpus;
        struct gs_top_gpu *gpus;
};

/* The rows of obs (in the observation's order: by id, then device), with GPU indexes and facts
 * from gpus (NULL: NVML not asked). -1 only when out of memory. */
int gs_top_view_build(struct gs_top_view *v, const struct gs_observation *obs, const struct gs_gpu_stats *gpus,
                      struct gs_error *err);
/* Host pids of every slice's processes (observe/collect.h: gs_obs_host_pids; the caller holds
 * the capability it needs). `prev`, the view of the previous refresh (or NULL), saves the walks
 * through /proc: a process it resolved is taken again while its host pid has the same start time
 * (the same process). -1 only when out of memory. */
int gs_top_view_host_pids(struct gs_top_view *v, const struct gs_top_view *prev, struct gs_error *err);
void gs_top_view_release(struct gs_top_view *v);
void gs_top_sort(struct gs_top_view *v, enum gs_top_sort by);

/* Column widths for a terminal `width` columns wide (0: as wide as the content needs). */
struct gs_top_layout {
        unsigned width;                     /* 0: unbounded */
        unsigned name_w, bar_w, pids_w;     /* pids_w 0: no PIDS column */
        unsigned bar_col;                   /* where the bar starts ('[') */
};

void gs_top_layout(const struct gs_top_view *v, unsigned width, bool pids, struct gs_top_layout *l);

/* Lines, cut to the layout's width; `len` bytes of room (a line is at most len - 1 long). */
void gs_top_format_title(const struct gs_top_view *v, enum gs_top_sort by, const char *clock, unsigned width,
                         char *buf, size_t len);
void gs_top_format_gpu(const struct gs_top_view *v, unsigned i, unsigned width, char *buf, size_t len);
void gs_top_format_header(const struct gs_top_layout *l, enum gs_top_sort by, char *buf, size_t len);
void gs_top_format_row(const struct gs_top_view *v, const struct gs_top_layout *l, const struct gs_top_row *r,
                       char *buf, size_t len);
/* The row's memory used / quota, 0..1 (more when over), or -1 without a quota. */
double gs_top_memory_fraction(const struct gs_top_row *r);
/* How many of the bar's cells the row fills (for colouring them). */
unsigned gs_top_bar_fill(const struct gs_top_layout *l, const struct gs_top_row *r);

/* The document of `top --once --json` (by id, then device; whatever the sort). NULL when out of
 * memory. */
json_object *gs_top_json(const struct gs_top_view *v);

/* Pieces, for tests. */
/* Bytes in at most 5 characters: 0, 512B, 1.5K, 100M, 1023M, 40G (binary units). */
const char *gs_top_fmt_bytes(uint64_t bytes, char out[8]);
/* "high", "normal", "low" for GS_REGION_PRIO_*; NULL for another value (not reported). */
const char *gs_top_priority_name(uint32_t prio);
/* The upper edge of launch-wait bucket `bucket` in at most 7 characters: 50us, 2.5ms, 1s; ">1s"
 * for the last bucket; "0" for -1 (observe/waits.h: no wait). */
const char *gs_top_fmt_wait_edge(int bucket, char out[8]);
/* s made printable (see above) into out. */
void gs_top_printable(const char *s, char *out, size_t len);
/* Name (printable) shortened to w columns: a container id (hex, longer than 12) to its first 12
 * characters, a path to its end ("..ec-c30"), anything else in the middle ("team-a/tr..er-0/main"). */
void gs_top_fit(const char *name, unsigned w, char *out, size_t len);

#endif
