/*
 * The device plugin's own CDI spec, the one its Allocate answers name: `gpuslice cdi generate`'s
 * spec (src/cdi) with the plugin's kind (device-plugin.cdi-kind) and, for each resource whose
 * shares have limits, that resource's slice (<gpu>-<slice>: the GPU, the limits of one share,
 * and the createRuntime/poststop hooks of `gpuslice hook` that put the interposer in). Written at
 * start-up, atomically, so it always matches the devices the plugin offers.
 *
 * When the plugin sees the driver root at another path than the host's runtime does (a DaemonSet
 * with the host's / mounted at /host), host_root replaces the root in every hostPath.
 */
#ifndef GS_KUBELET_CDISPEC_H
#define GS_KUBELET_CDISPEC_H

#include <json-c/json.h>

#include <gpuslice/gpuslice.h>

#include "kubelet/resources.h"

/* hook_path: the executable the hooks run on the host, gpuslice-hook or gpuslice ("" or NULL: the
 * gpuslice-hook beside this executable, else this one: runtime/hook_exe.h). */
int gs_k8s_cdi_write(struct gs_context *ctx, const struct gs_k8s_plan *p, const char *path, const char *hook_path,
                     const char *host_root, struct gs_error *err);

/* Every "hostPath" under `root` in the tree `o` moved under `host_root` (the DRA plugin's
 * per-claim specs too). */
int gs_k8s_cdi_rebase(json_object *o, const char *root, const char *host_root, struct gs_error *err);

#endif
