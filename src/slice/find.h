/*
 * Finding the slices on this host (`gpuslice slice`): the live directories under the regions
 * directory, and one of them by what a person knows of it: its container id (or a unique prefix of
 * one, as docker prints them), its directory, or its Kubernetes pod (namespace/pod, or
 * namespace/pod/container where the pod has several sliced containers), from the labels the hook
 * records from the host (slice.h: gs_slice_read_labels; never the container's env).
 */
#ifndef GS_SLICE_FIND_H
#define GS_SLICE_FIND_H

#include <stddef.h>
#include <sys/types.h>

#include "slice/live.h"
#include "slice/slice.h"

struct gs_slice_entry {
        char id[256];
        pid_t owner;                   /* the container's init (or gpuslice exec) on the host */
        struct gs_slice_labels labels; /* "" when none */
        int has_live;                  /* 1 live limits read, 0 none (an older slice), -1 malformed */
        struct gs_slice_limits limits;
};

/* The live slices under regions_dir (NULL: GS_SLICE_REGIONS_DIR), sorted by id, into a malloc'd
 * array (*out, free() it; NULL with *n = 0 when none). A missing directory is no slice. */
int gs_slice_list(const char *regions_dir, struct gs_slice_entry **out, size_t *n, struct gs_error *err);

/* The id of the one live slice that `what` names (see above) into id (256 bytes); -1 with a
 * message naming the candidates when it names none or several. */
int gs_slice_resolve(const char *regions_dir, const char *what, char *id, size_t len, struct gs_error *err);

/* One slice in full (`gpuslice slice show`): its entry, each device of its usage region (none
 * before a process used the GPU) with the quota and share in force, and its last changes. */
struct gs_slice_device {
        char uuid[96];
        uint64_t used;                 /* bytes in use (every process of the slice) */
        uint64_t quota;                /* the host's limit, bytes; 0 = unlimited */
        unsigned compute;              /* percent; 0 = unlimited */
        bool over;                     /* used > quota: new allocations fail until it is under */
};
#define GS_SLICE_CHANGES_SHOWN 10
struct gs_slice_info {
        struct gs_slice_entry e;
        unsigned ndevices;
        struct gs_slice_device dev[GS_SLICE_MAX_DEVICES];
        unsigned nchanges;             /* the last ones, oldest first */
        char changes[GS_SLICE_CHANGES_SHOWN][512];
};
int gs_slice_show(const char *regions_dir, const char *id, struct gs_slice_info *out, struct gs_error *err);

#endif
