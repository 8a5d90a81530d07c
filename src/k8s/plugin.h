/*
 * `gpuslice device-plugin`: a kubelet device plugin (v1beta1) for GPUs, GPU shares (slices) and
 * MIG devices. One process serves one endpoint (a UNIX socket in the kubelet's device-plugins
 * directory) per resource of the plan (resources.h), registers each with the kubelet, and runs
 * single-threaded: one poll loop over the endpoints' sockets and connections, the kubelet's
 * directory (inotify), the health watcher and the signals.
 *
 *   registration   Register(version v1beta1, endpoint, resource, GetPreferredAllocation
 *                  available) on <socket-dir>/kubelet.sock; again whenever kubelet.sock is
 *                  replaced (a kubelet restart) or an endpoint's socket disappears (the kubelet
 *                  removes them when it starts), which is then made anew; a refused or failed
 *                  registration is tried again every 5 s
 *   ListAndWatch   the devices with their health and NUMA node at once, then again on every
 *                  health change (health.c)
 *   GetPreferredAllocation  prefer.c;  Allocate  allocate.c;  PreStartContainer: nothing to do
 *   labels         none: a slice's pod labels come from the runtime's CRI annotations (the hook).
 *                  The kubelet's pod-resources API names no container, so tying a slice to a pod
 *                  through it would take the container's word (its env) for its device IDs; the
 *                  labeller that did is gone (issue 31), label-interval and pod-resources-socket
 *                  are read and ignored.
 *
 * It writes its CDI spec (cdispec.c) before registering (allocate = cdi or cdi-annotations) and
 * removes its sockets when it stops (SIGTERM, SIGINT); the spec stays (containers that start or
 * restart meanwhile need it; the next start writes it anew).
 */
#ifndef GS_K8S_PLUGIN_H
#define GS_K8S_PLUGIN_H

#include <gpuslice/gpuslice.h>

#include "runtime/hostconfig.h"

struct gs_k8s_opts {
        const struct gs_hostconfig *hc;
        struct gs_context *ctx;     /* the driver root and the NVML helper's identity */
        unsigned health_period_ms;  /* NVML event wait / lost-GPU probe period (0: 5000) */
        unsigned health_recover_ms; /* 0: GS_K8S_HEALTH_RECOVER_MS; quiet this long: healthy again (kubelet/health.h) */
        bool health_recover_never;  /* unhealthy until the plugin restarts */
        /* Progress lines (registration, health changes, kubelet restarts), one per call. */
        void (*note)(void *ud, const char *line);
        void *ud;
};

/* Run until SIGTERM or SIGINT: 0. -1 with err when it cannot start (no GPU, invalid config,
 * the kubelet's directory missing, a socket that cannot be made, the CDI spec not written). */
int gs_k8s_plugin_run(const struct gs_k8s_opts *o, struct gs_error *err);

#endif
