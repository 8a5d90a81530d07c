/* The DRA plugin's state, shared by dra/plugin.c (sockets, the loop, publication) and
 * dra/service.c (the Registration and DRAPlugin services). */
#ifndef GS_DRA_PLUGIN_INT_H
#define GS_DRA_PLUGIN_INT_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>
#include <time.h>

#include "dra/appxid.h"
#include "dra/plugin.h"
#include "dra/prepare.h"
#include "dra/stats.h"
#include "dra/usage.h"
#include "kubelet/h2c.h"
#include "kubelet/health.h"
#include "kubelet/kubeapi.h"
#include "kubelet/resources.h"

#define GS_DRA_MAX_CONNS 32
#define GS_DRA_MAX_CLAIMS 256 /* claims in one call */
#define GS_DRA_MAX_WATCHERS 4 /* NodeWatchResources streams at once (the kubelet opens one) */

struct gs_dra_sock {
        char path[PATH_MAX];
        int lfd;
        dev_t dev;
        ino_t ino;
        struct timespec ctime;
};

/* An open NodeWatchResources stream (dra/healthsvc.c). */
struct gs_dra_watcher {
        struct gs_h2c_conn *c;
        int32_t stream;
};

struct gs_dra_conn {
        struct gs_h2c_conn *h;
        long long opened;
};

/* The API server's DRADeviceTaints gate, as its answers show it (dra/plugin.c taints_dropped). */
enum gs_dra_taints_gate { GS_DRA_TAINTS_UNKNOWN, GS_DRA_TAINTS_ON, GS_DRA_TAINTS_OFF };

struct gs_dra {
        const struct gs_dra_opts *o;
        const char *driver;
        char node[254];
        char plugin_dir[PATH_MAX];
        const struct gs_device_info *dev;
        struct gs_k8s_topology topo;
        struct gs_k8s_health health;
        struct gs_k8s_health_watch hw;
        struct gs_kubeapi api;
        bool api_open;
        bool version_known;    /* api.res_version asked (dra/apiversion.h), or given */
        struct gs_dra_prep prep;
        bool prep_open;
        struct gs_dra_sock reg, svc;
        struct gs_dra_conn conns[GS_DRA_MAX_CONNS];
        unsigned nconns;
        struct gs_dra_watcher watch[GS_DRA_MAX_WATCHERS];
        unsigned nwatch;
        long long health_since; /* wall-clock seconds: a healthy device's last_updated_time */
        int signal_fd;
        bool stop;
        bool registered;
        bool publish_due;      /* the slice must be (re)published */
        long long publish_at;  /* not before (gs_now_ms) */
        long long generation;  /* the pool generation last published */
        bool published;
        long long check_at;
        bool gate_noted;
        enum gs_dra_taints_gate taints_gate;
        bool node_asked;       /* the Node's uid asked (owner) */
        char node_uid[64];     /* the slice's owner; "": none */       /* said: the API server drops consumable capacity */
        struct gs_dra_usage *usage; /* NULL: off */
        struct gs_dra_stats *stats; /* NULL: no --metrics-listen */
        struct gs_dra_appxid *appxid; /* NULL: off (dra/appxid.h) */
        long long sweep_at;    /* stale claims looked up then (0: not yet scheduled) */    /* the slice read back then (gs_now_ms) */
};

void gs_dra_note(struct gs_dra *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gs_dra_note_cb(void *ud, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* dra/healthsvc.c: NodeWatchResources. watch: a new stream (sent the list, or refused); unwatch: a
 * stream ended; changed: the list to every watcher; end: finish every stream (the plugin stops). */
void gs_dra_health_watch(struct gs_dra *p, struct gs_h2c_conn *c, int32_t stream);
void gs_dra_health_unwatch(struct gs_dra *p, struct gs_h2c_conn *c, int32_t stream);
void gs_dra_health_changed(struct gs_dra *p);
void gs_dra_health_end(struct gs_dra *p);

/* dra/service.c */
extern const struct gs_h2c_server_ops gs_dra_service;

#endif
