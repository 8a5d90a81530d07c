/*
 * The configure pipeline (configure.c) as the rooms above call it. The public gs_configure
 * (include/gpuslice/gpuslice.h) is this pipeline with the runtime's MPS choice for slices
 * (runtime/configure.c): whether a slice runs through its GPU's MPS daemon is decided, and the
 * daemon started under slice.mps = on, by runtime/mps_slice.c, a room above this one, so the
 * pipeline takes that decision as a function.
 */
#ifndef GS_CONTAINER_CONFIGURE_H
#define GS_CONTAINER_CONFIGURE_H

#include <stddef.h>
#include <sys/types.h>

#include <gpuslice/gpuslice.h>

/* slice.mps for a slice with options `s` on its GPUs `uuid` (comma-separated) of `info`, registered
 * as `id` while `owner` lives: 1 and the GPU's MPS client directory in `dir`, else 0 and `dir` ""
 * (the signature of runtime/mps.h's gs_slice_mps_choose; `why` may be NULL). */
typedef int (*gs_slice_mps_fn)(struct gs_context *ctx, const struct gs_device_info *info,
                               const struct gs_slice_opts *s, const char *uuid, const char *id, pid_t owner,
                               char *dir, size_t len, char *why, size_t wlen);

/* gs_configure with the MPS choice `mps` (NULL: no slice goes through MPS). */
int gs_configure_pipeline(struct gs_context *ctx, const struct gs_configure_opts *o, gs_slice_mps_fn mps,
                          struct gs_error *err);

#endif
