/*
 * `gpuslice dra-plugin`: a Kubernetes DRA driver's kubelet plugin (resource.k8s.io/v1, or v1beta2
 * where v1 is not served: dra/apiversion.h; the kubelet's DRA gRPC service v1 and v1beta1) for GPUs, MIG devices and memory + compute slices of
 * a GPU (consumable capacity). One thread, one poll loop, as the device plugin (plugin.h):
 *
 *   registration  Registration (pluginregistration v1) on <registry-dir>/<driver>-reg.sock: GetInfo
 *                 answers type DRAPlugin, the driver name, the DRA socket and the services
 *                 "v1.DRAPlugin", "v1beta1.DRAPlugin"; NotifyRegistrationStatus is logged. A kubelet
 *                 that restarts finds the socket again; a socket removed is made anew (checked on
 *                 inotify-free ticks every second)
 *   DRA service   <plugin-dir>/dra.sock: NodePrepareResources / NodeUnprepareResources under both
 *                 /k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/ and .v1beta1.DRAPlugin/ (the kubelet's
 *                 gRPC paths; dra/prepare.c), an error per claim
 *   ResourceSlice published at start (dra/slices.c; created, or updated from the one there), again
 *                 when a device's health changes (health.c), tried again every 5 s while the API
 *                 server does not take it; read back every resync period and published again when
 *                 it is gone (the kubelet deletes a node's slices when it restarts and after a
 *                 driver unregisters); kept when the plugin stops (SIGTERM, SIGINT): a restart or
 *                 an upgrade leaves the node schedulable
 *   instances     with an instance id (--instance-id, $POD_UID) the sockets are
 *                 <driver>-<id>-reg.sock and dra-<id>.sock, so that a new plugin registers beside
 *                 the old one (the kubelet plugin helper's rolling update); the checkpoint is shared
 *                 between them (dra/prepare.h: locked, read again for every call)
 *   usage         each prepared slice share's memory, peak, GPU-time share and throttled time in its
 *                 claim's status.devices[].data, and an Event when it hits its memory quota
 *                 (dra/usage.h), every status period at most (--status-period)
 *   app XIDs      an application XID (13, 31, ...) whose process is a slice's marks that claim's
 *                 share (a condition and an Event on the claim), never the GPU (dra/appxid.h: the
 *                 kernel's log, --kmsg)
 *   metrics       prepare and unprepare counts and durations, the claims prepared, on
 *                 --metrics-listen (dra/stats.h: a thread of its own)
 */
#ifndef GS_DRA_PLUGIN_H
#define GS_DRA_PLUGIN_H

#include <gpuslice/gpuslice.h>

#include "runtime/hostconfig.h"

#define GS_DRA_DEFAULT_DRIVER "gpu.gpuslice.io"
#define GS_DRA_DEFAULT_CDI_DIR "/var/run/cdi"
#define GS_DRA_DEFAULT_REGISTRY "/var/lib/kubelet/plugins_registry"
#define GS_DRA_DEFAULT_PLUGINS "/var/lib/kubelet/plugins"

struct gs_dra_opts {
        const struct gs_hostconfig *hc; /* [driver], device-plugin.hook-path / host-root / sysfs / health-checks */
        struct gs_context *ctx;
        const char *driver;          /* NULL: GS_DRA_DEFAULT_DRIVER */
        const char *kubeconfig;      /* NULL: in-cluster */
        const char *node;            /* NULL: $NODE_NAME */
        const char *cdi_dir;         /* NULL: GS_DRA_DEFAULT_CDI_DIR */
        const char *plugin_dir;      /* NULL: GS_DRA_DEFAULT_PLUGINS/<driver> */
        const char *registry_dir;    /* NULL: GS_DRA_DEFAULT_REGISTRY */
        unsigned health_period_ms;   /* 0: 5000 */
        unsigned health_recover_ms;  /* 0: GS_K8S_HEALTH_RECOVER_MS; quiet this long: healthy again (kubelet/health.h) */
        bool health_recover_never;   /* unhealthy until the plugin restarts */
        unsigned resync_period_ms;   /* 0: 10000; how often the ResourceSlice is checked (deleted: published again) */
        unsigned stale_period_ms;    /* 0: 600000; how often prepared claims are checked against the API server */
        const char *instance;        /* NULL: $POD_UID, else none; per-instance socket names (rolling update) */
        unsigned status_period_ms;   /* 0: 30000; how often a share's usage may be written on its claim */
        bool status_off;             /* no usage on claims (dra/usage.h) */
        const char *api_version;     /* NULL or "auto": v1 when served, else v1beta2; "v1", "v1beta2" (dra/apiversion.h) */
        const char *metrics_listen;  /* NULL: no metrics endpoint; ADDR:PORT (dra/stats.h) */
        const char *kmsg;            /* NULL: GS_XIDLOG_DEFAULT; "": off; the kernel's log (dra/appxid.h) */
        void (*note)(void *ud, const char *line);
        void *ud;
};

/* Run until SIGTERM or SIGINT: 0. -1 with err when it cannot start. */
int gs_dra_plugin_run(const struct gs_dra_opts *o, struct gs_error *err);

#endif
