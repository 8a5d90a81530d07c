/* The device plugin's state, shared by its parts: plugin.c (the loop and the DevicePlugin
 * service), kubelet.c (endpoints and registration). */
#ifndef GS_K8S_PLUGIN_INT_H
#define GS_K8S_PLUGIN_INT_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>
#include <time.h>

#include "k8s/plugin.h"
#include "kubelet/h2c.h"
#include "kubelet/health.h"
#include "kubelet/resources.h"

#define GS_K8S_MAX_CONNS 64     /* connections of all kinds at once */
#define GS_K8S_MAX_WATCHERS 8   /* ListAndWatch streams per endpoint */
#define GS_K8S_CALL_TIMEOUT_MS 10000
#define GS_K8S_RETRY_MS 5000

struct gs_k8s_plugin;

struct gs_k8s_watcher {
        struct gs_h2c_conn *c;
        int32_t stream;
};

struct gs_k8s_endpoint {
        struct gs_k8s_plugin *p;
        const struct gs_k8s_resource *res;
        char path[PATH_MAX];       /* <socket-dir>/<endpoint> */
        int lfd;                   /* listening socket, -1 */
        dev_t dev;                 /* of the socket file we made (with its change time: */
        ino_t ino;                 /* an inode number can come back at once on tmpfs) */
        struct timespec ctime;
        bool want_register;        /* register at the next chance */
        bool registering;          /* a Register call is in flight */
        bool registered;
        long long retry_at;        /* gs_now_ms() time of the next attempt after a failure */
        struct gs_k8s_watcher watchers[GS_K8S_MAX_WATCHERS];
        unsigned nwatchers;
};

enum gs_k8s_conn_kind { GS_K8S_CONN_SERVER, GS_K8S_CONN_REGISTER };

struct gs_k8s_conn {
        struct gs_h2c_conn *h;
        enum gs_k8s_conn_kind kind;
        struct gs_k8s_endpoint *ep; /* server and register connections */
        long long opened;
        bool heard;                 /* something was received */
};

struct gs_k8s_plugin {
        const struct gs_k8s_opts *o;
        const struct gs_hostconfig_dp *cfg;
        const struct gs_device_info *dev;
        struct gs_k8s_plan plan;
        struct gs_k8s_health health;
        struct gs_k8s_health_watch hw;
        struct gs_k8s_endpoint ep[GS_K8S_MAX_RESOURCES];
        struct gs_k8s_conn conns[GS_K8S_MAX_CONNS];
        unsigned nconns;
        char kubelet_sock[PATH_MAX];
        dev_t kubelet_dev;         /* kubelet.sock we registered with (0: none yet) */
        ino_t kubelet_ino;
        struct timespec kubelet_ctime;
        int inotify_fd;
        int signal_fd;
        bool stop;
        bool cdi_written;
        char root[PATH_MAX];       /* the driver root, as seen here */
        char host_root[PATH_MAX];  /* ... and on the host */
};

/* A progress line (also in the debug log). */
void gs_k8s_note(struct gs_k8s_plugin *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The health.c callback form of it. */
void gs_k8s_note_cb(void *ud, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Track a new connection (NULL when the table is full: the caller frees h). */
struct gs_k8s_conn *gs_k8s_conn_add(struct gs_k8s_plugin *p, struct gs_h2c_conn *h, enum gs_k8s_conn_kind kind,
                                    struct gs_k8s_endpoint *ep);
/* A connected, non-blocking client socket to a UNIX socket path; -1 with err. */
int gs_k8s_dial(const char *path, struct gs_error *err);

/* kubelet.c */
int gs_k8s_endpoints_open(struct gs_k8s_plugin *p, struct gs_error *err);
void gs_k8s_endpoints_close(struct gs_k8s_plugin *p);
/* Sockets gone or replaced (ours made anew), kubelet.sock replaced: (re-)register. */
void gs_k8s_endpoints_check(struct gs_k8s_plugin *p, long long now);
int gs_k8s_watch_dir(struct gs_k8s_plugin *p, struct gs_error *err);
void gs_k8s_dir_event(struct gs_k8s_plugin *p, long long now);
void gs_k8s_accept(struct gs_k8s_endpoint *ep, long long now);

/* plugin.c: the DevicePlugin service */
extern const struct gs_h2c_server_ops gs_k8s_service;
void gs_k8s_broadcast(struct gs_k8s_plugin *p);

#endif
