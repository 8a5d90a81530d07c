/* The device plugin's start-up and its poll loop (see plugin.h). */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "common/log.h"
#include "common/proc.h"
#include "k8s/plugin_int.h"
#include "kubelet/cdispec.h"
#include "kubelet/serve.h"
#include "kubelet/topology.h"

#define TICK_MS 1000

enum { FD_SIGNAL, FD_INOTIFY, FD_HEALTH, FD_FIXED };

struct pollset {
        struct pollfd fds[FD_FIXED + GS_K8S_MAX_RESOURCES + GS_K8S_MAX_CONNS];
        size_t nfds;
        size_t ep_at, conn_at; /* where the endpoints' and the connections' entries start */
};

static void build_pollset(struct gs_k8s_plugin *p, struct pollset *ps)
{
        ps->fds[FD_SIGNAL] = (struct pollfd){.fd = p->signal_fd, .events = POLLIN};
        ps->fds[FD_INOTIFY] = (struct pollfd){.fd = p->inotify_fd, .events = POLLIN};
        ps->fds[FD_HEALTH] = (struct pollfd){.fd = gs_k8s_health_fd(&p->hw), .events = POLLIN};
        ps->nfds = FD_FIXED;
        ps->ep_at = ps->nfds;
        for (size_t i = 0; i < p->plan.nres; i++)
                ps->fds[ps->nfds++] = (struct pollfd){.fd = p->ep[i].lfd, .events = POLLIN};
        ps->conn_at = ps->nfds;
        for (unsigned i = 0; i < p->nconns; i++)
                ps->fds[ps->nfds++] = (struct pollfd){.fd = gs_h2c_fd(p->conns[i].h), .events = gs_h2c_events(p->conns[i].h)};
}

_Static_assert(offsetof(struct gs_k8s_conn, h) == 0 && GS_K8S_MAX_CONNS <= GS_K8S_CONNS_MAX,
               "gs_k8s_conns_serve's table: the handle first, at most GS_K8S_CONNS_MAX");

/* Should this connection go (timeouts)? (connections added during this round, Register calls,
 * get their first flush in gs_k8s_conns_serve) */
static bool expired(const void *conn, long long now)
{
        const struct gs_k8s_conn *c = conn;
        return c->kind == GS_K8S_CONN_SERVER && gs_k8s_conn_expired(c->h, c->opened, now);
}

static int loop(struct gs_k8s_plugin *p)
{
        long long next_tick = 0;
        while (!p->stop) {
                struct pollset ps;
                long long now = gs_now_ms();
                if (now >= next_tick) {
                        gs_k8s_endpoints_check(p, now);
                        next_tick = now + TICK_MS;
                }
                if (gs_k8s_health_poll(&p->hw, &p->health, now))
                        gs_k8s_broadcast(p);
                build_pollset(p, &ps);
                unsigned nconns = p->nconns;
                int timeout = (int)(next_tick - now);
                if (poll(ps.fds, ps.nfds, timeout < 0 ? 0 : timeout) < 0 && errno != EINTR)
                        return -1;
                now = gs_now_ms();
                if (ps.fds[FD_SIGNAL].revents)
                        p->stop |= gs_k8s_signals_stop(p->signal_fd, gs_k8s_note_cb, p);
                if (ps.fds[FD_INOTIFY].revents)
                        gs_k8s_dir_event(p, now);
                for (size_t i = 0; i < p->plan.nres; i++)
                        if (ps.fds[ps.ep_at + i].revents && p->ep[i].lfd == ps.fds[ps.ep_at + i].fd)
                                gs_k8s_accept(&p->ep[i], now);
                gs_k8s_conns_serve(p->conns, sizeof(p->conns[0]), &p->nconns, ps.fds + ps.conn_at, nconns, now, expired);
        }
        return 0;
}

static int setup_signals(struct gs_k8s_plugin *p, struct gs_error *err)
{
        p->signal_fd = gs_k8s_signals_open(err);
        return p->signal_fd < 0 ? -1 : 0;
}

/* Devices, the plan, topology, the CDI spec: everything before the kubelet hears of us. */
static int prepare(struct gs_k8s_plugin *p, struct gs_error *err)
{
        const struct gs_k8s_opts *o = p->o;
        p->dev = gs_devices(o->ctx, err);
        if (p->dev == NULL) {
                if (err->stage == NULL)
                        err->stage = err->code == GS_EINIT || err->code == GS_ETIMEOUT || err->code == GS_EHELPER
                                             ? "initialization" : "detection";
                return -1;
        }
        if (gs_k8s_plan_build(p->cfg, p->dev, &p->plan, err) < 0)
                return -1;
        gs_k8s_topology_read(&p->plan, p->cfg->sysfs);
        snprintf(p->root, sizeof(p->root), "%s", gs_context_root(o->ctx));
        snprintf(p->host_root, sizeof(p->host_root), "%s", p->cfg->host_root[0] ? p->cfg->host_root : p->root);
        struct stat st;
        if (stat(p->cfg->socket_dir, &st) < 0 || !S_ISDIR(st.st_mode))
                return gs_error_set(err, GS_ENOTFOUND, "the kubelet's directory %s is not there (device-plugin.socket-dir)",
                                    p->cfg->socket_dir);
        if (p->plan.mode == GS_K8S_ALLOC_CDI || p->plan.mode == GS_K8S_ALLOC_CDI_ANNOTATIONS) {
                if (gs_k8s_cdi_write(o->ctx, &p->plan, p->cfg->cdi_spec, p->cfg->hook_path, p->host_root, err) < 0)
                        return -1;
                gs_k8s_note(p, "wrote the CDI spec %s (kind %s/%s)", p->cfg->cdi_spec, p->plan.cdi_vendor,
                            p->plan.cdi_class);
        }
        return 0;
}

int gs_k8s_plugin_run(const struct gs_k8s_opts *o, struct gs_error *err)
{
        struct gs_k8s_plugin *p = calloc(1, sizeof(*p));
        if (p == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        p->o = o;
        p->cfg = &o->hc->dp;
        p->inotify_fd = p->signal_fd = -1;
        int rv = -1;
        if (prepare(p, err) < 0 || setup_signals(p, err) < 0 || gs_k8s_endpoints_open(p, err) < 0 ||
            gs_k8s_watch_dir(p, err) < 0)
                goto out;
        if (p->cfg->health_checks)
                gs_k8s_health_start(&p->hw, o->ctx, p->dev, o->health_period_ms ? o->health_period_ms : 5000,
                                    o->health_recover_never ? 0 : o->health_recover_ms ? o->health_recover_ms : GS_K8S_HEALTH_RECOVER_MS,
                                    gs_k8s_note_cb, p);
        rv = loop(p);
        if (rv < 0)
                gs_error_sys(err, "poll");
out:
        gs_k8s_health_stop(&p->hw);
        while (p->nconns > 0)
                gs_h2c_free(p->conns[--p->nconns].h);
        gs_k8s_endpoints_close(p);
        if (p->inotify_fd >= 0)
                close(p->inotify_fd);
        if (p->signal_fd >= 0)
                close(p->signal_fd);
        gs_k8s_plan_release(&p->plan);
        free(p);
        return rv;
}
