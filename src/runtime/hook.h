/*
 * `gpuslice hook`: an OCI runtime hook that applies the NVIDIA / HAMi env contract of the
 * container's config.json through the one configure pipeline.
 *   prestart, createRuntime   runtime namespace, the container's pid in the state: configure it
 *                             (the slice: the allocator's options on the hook's command line as
 *                             the ceiling, the container's env narrowing it: runtime/slice_rules.h)
 *   poststart                 nothing (accepted, as nvidia-container-runtime-hook accepts it)
 *   poststop                  remove the container's slice directory
 * Every run first sweeps slice directories of containers that are gone.
 */
#ifndef GS_RUNTIME_HOOK_H
#define GS_RUNTIME_HOOK_H

#include <stdbool.h>

#include <gpuslice/gpuslice.h>

#include "runtime/hostconfig.h"
#include "slice/slice.h"

enum gs_hook_stage { GS_HOOK_PRESTART, GS_HOOK_CREATE_RUNTIME, GS_HOOK_POSTSTART, GS_HOOK_POSTSTOP };

/* "prestart", "createRuntime" (or "create-runtime"), "poststart", "poststop"; -1 if unknown. */
int gs_hook_stage_parse(const char *name, enum gs_hook_stage *out);

struct gs_hook_opts {
        enum gs_hook_stage stage;
        int state_fd;                   /* the OCI state (stdin) */
        const struct gs_hostconfig *hc; /* host defaults */
        struct gs_config ctx;           /* driver root etc. (the command line over the host config) */
        bool load_kmods, no_pivot;
        struct gs_slice_opts alloc;     /* the allocator's slice options (runtime/slice_rules.h) ... */
        bool alloc_given;               /* ... when it gave any: its values are the slice's ceiling */
        const char *alloc_gpu;          /* --gpu=UUID: they are that GPU's (runtime/slice_gpus.h) */
        struct gs_slice_labels labels;  /* --k8s-claim/-namespace/-pod: the host's names for the
                                           slice's labels ("" unset; CRI annotations win) */
};

/* Run the hook. err->stage names the failing stage ("hook" for the state, config.json and env
 * contract, then configure's stages). */
int gs_hook_run(const struct gs_hook_opts *h, struct gs_error *err);

#endif
