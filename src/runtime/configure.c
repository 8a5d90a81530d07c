/*
 * gs_configure (include/gpuslice/gpuslice.h): the configure pipeline (container/configure.c) with
 * slice.mps, the choice of the GPU's MPS daemon for a slice (mps_slice.c), which may start that
 * daemon and so lives in this room, above the pipeline.
 */
#include <gpuslice/gpuslice.h>

#include "container/configure.h"
#include "runtime/mps.h"

int gs_configure(struct gs_context *ctx, const struct gs_configure_opts *o, struct gs_error *err)
{
        return gs_configure_pipeline(ctx, o, gs_slice_mps_choose, err);
}
