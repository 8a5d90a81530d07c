/* `gpuslice dra-plugin`: start-up, sockets, the loop and the ResourceSlice (see dra/plugin.h). */
#include "dra/plugin.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "common/proc.h"
#include "common/strutil.h"
#include "dra/apiversion.h"
#include "dra/plugin_int.h"
#include "dra/slices.h"
#include "driver/xidlog.h"
#include "kubelet/serve.h"
#include "kubelet/topology.h"
#include "runtime/hook_exe.h"

#define TICK_MS 1000
#define PUBLISH_RETRY_MS 5000
#define RESYNC_MS 10000
#define STALE_MS 600000
#define STATUS_MS 30000

/* ------------------------------------------------------------------------------------------ */
/* Sockets                                                                                     */

static int sock_listen(struct gs_dra_sock *s, struct gs_error *err)
{
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        if (strlen(s->path) >= sizeof(a.sun_path))
                return gs_error_set(err, GS_EINVAL, "socket path too long: %s", s->path);
        strcpy(a.sun_path, s->path);
        if (s->lfd >= 0)
                close(s->lfd);
        s->lfd = -1;
        if (unlink(s->path) < 0 && errno != ENOENT)
                return gs_error_sys(err, "remove %s", s->path);
        gs_autoclose int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return gs_error_sys(err, "socket");
        if (bind(fd, (const struct sockaddr *)&a, sizeof(a)) < 0)
                return gs_error_sys(err, "bind %s", s->path);
        if (listen(fd, 16) < 0)
                return gs_error_sys(err, "listen %s", s->path);
        struct stat st;
        if (stat(s->path, &st) < 0)
                return gs_error_sys(err, "stat %s", s->path);
        s->dev = st.st_dev;
        s->ino = st.st_ino;
        s->ctime = st.st_ctim;
        s->lfd = gs_steal_fd(&fd);
        return 0;
}

static bool sock_there(const struct gs_dra_sock *s)
{
        struct stat st;
        return stat(s->path, &st) == 0 && st.st_dev == s->dev && st.st_ino == s->ino &&
               st.st_ctim.tv_sec == s->ctime.tv_sec && st.st_ctim.tv_nsec == s->ctime.tv_nsec;
}

static void sock_close(struct gs_dra_sock *s)
{
        if (s->lfd < 0)
                return;
        close(s->lfd);
        s->lfd = -1;
        if (sock_there(s)) /* only our own: a newer plugin may have taken the name */
                unlink(s->path);
}

static void accept_on(struct gs_dra *p, struct gs_dra_sock *s)
{
        for (int i = 0; i < 16; i++) {
                int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (fd < 0)
                        return;
                struct gs_error err = {0};
                struct gs_h2c_conn *h = gs_h2c_server_new(fd, &gs_dra_service, p, &err);
                if (h == NULL) {
                        close(fd);
                        gs_dra_note(p, "connection on %s dropped: %s", s->path, err.msg);
                        continue;
                }
                if (p->nconns == GS_DRA_MAX_CONNS) {
                        gs_log_warn("%s: too many connections: one dropped", s->path);
                        gs_h2c_free(h);
                        continue;
                }
                p->conns[p->nconns++] = (struct gs_dra_conn){h, gs_now_ms()};
        }
}

/* Sockets removed (a kubelet that cleans its directories, an operator): made anew. The kubelet's
 * plugin watcher then finds the registration socket and calls GetInfo again. */
static void check_socks(struct gs_dra *p)
{
        struct gs_dra_sock *socks[] = {&p->svc, &p->reg};
        for (int i = 0; i < 2; i++) {
                struct gs_error err = {0};
                if (sock_there(socks[i]))
                        continue;
                gs_dra_note(p, "%s was removed: serving it again", socks[i]->path);
                if (sock_listen(socks[i], &err) < 0)
                        gs_dra_note(p, "cannot serve %s: %s", socks[i]->path, err.msg);
        }
}

/* ------------------------------------------------------------------------------------------ */
/* The ResourceSlice                                                                           */

static long long old_slice(struct gs_dra *p, const char *path, char *rv, size_t rvlen, struct gs_error *err)
{
        long status = 0;
        gs_autofree char *body = NULL;
        rv[0] = '\0';
        if (gs_kubeapi_call(&p->api, "GET", path, NULL, &status, &body, err) < 0)
                return -1;
        if (status == 404)
                return 0;
        if (status != 200)
                return gs_error_set(err, GS_EINVAL, "GET %s: HTTP %ld", path, status);
        json_object *o = json_tokener_parse(body), *meta = NULL, *v = NULL, *spec = NULL, *pool = NULL, *gen = NULL;
        long long g = 0;
        if (o != NULL && json_object_object_get_ex(o, "metadata", &meta) &&
            json_object_object_get_ex(meta, "resourceVersion", &v))
                gs_strlcpy(rv, json_object_get_string(v), rvlen);
        if (o != NULL && json_object_object_get_ex(o, "spec", &spec) && json_object_object_get_ex(spec, "pool", &pool) &&
            json_object_object_get_ex(pool, "generation", &gen))
                g = json_object_get_int64(gen);
        json_object_put(o);
        if (rv[0] == '\0')
                return gs_error_set(err, GS_EFORMAT, "GET %s: no resourceVersion in the answer", path);
        return g < 0 ? 0 : g;
}

/* The slice as the API server stored it: a server whose DRAConsumableCapacity gate is off drops
 * allowMultipleAllocations and the request policies silently; then no claim can hold a slice of a
 * GPU (the scheduler allocates each whole): said once, not fought (no publishing again). */
static void gate_check(struct gs_dra *p, const char *answer)
{
        json_object *o = answer != NULL ? json_tokener_parse(answer) : NULL, *spec = NULL, *devs = NULL;
        bool gpus = false, shared = false;
        if (o != NULL && json_object_object_get_ex(o, "spec", &spec) && json_object_object_get_ex(spec, "devices", &devs))
                for (size_t i = 0; i < json_object_array_length(devs); i++) {
                        json_object *d = json_object_array_get_idx(devs, i), *a = NULL, *t = NULL, *ty = NULL;
                        if (json_object_object_get_ex(d, "attributes", &a) && json_object_object_get_ex(a, "type", &t) &&
                            json_object_object_get_ex(t, "string", &ty) && strcmp(json_object_get_string(ty), "gpu") == 0) {
                                gpus = true;
                                shared |= json_object_object_get_ex(d, "allowMultipleAllocations", NULL);
                        }
                }
        json_object_put(o);
        if (gpus && !shared && !p->gate_noted)
                gs_dra_note(p, "the API server dropped the GPUs' allowMultipleAllocations (its DRAConsumableCapacity feature "
                            "gate is off): GPUs are allocated whole, no claim gets a slice");
        p->gate_noted |= gpus && !shared;
}

/* The slice owned by its Node (as the kubelet plugin helper does): kept when the plugin stops, it
 * goes with the Node when the node leaves the cluster (the garbage collector). The Node's uid is
 * asked once; without it (no RBAC for nodes) the slice has no owner, and that is said. */
static void owner(struct gs_dra *p, json_object *slice)
{
        if (!p->node_asked) {
                char path[400];
                long status = 0;
                gs_autofree char *body = NULL;
                struct gs_error err = {0};
                snprintf(path, sizeof(path), "/api/v1/nodes/%s", p->node);
                if (gs_kubeapi_call(&p->api, "GET", path, NULL, &status, &body, &err) < 0)
                        return; /* asked again at the next publication */
                p->node_asked = true;
                json_object *o = status == 200 && body != NULL ? json_tokener_parse(body) : NULL, *meta = NULL, *uid = NULL;
                if (o != NULL && json_object_object_get_ex(o, "metadata", &meta) && json_object_object_get_ex(meta, "uid", &uid))
                        gs_strlcpy(p->node_uid, json_object_get_string(uid), sizeof(p->node_uid));
                json_object_put(o);
                if (p->node_uid[0] == '\0')
                        gs_dra_note(p, "the Node %s cannot be read (HTTP %ld): the ResourceSlice has no owner and outlives "
                                    "the Node (RBAC: get nodes)", p->node, status);
        }
        json_object *meta = NULL;
        if (p->node_uid[0] == '\0' || !json_object_object_get_ex(slice, "metadata", &meta))
                return;
        json_object *refs = json_object_new_array(), *r = json_object_new_object();
        json_object_object_add(r, "apiVersion", json_object_new_string("v1"));
        json_object_object_add(r, "kind", json_object_new_string("Node"));
        json_object_object_add(r, "name", json_object_new_string(p->node));
        json_object_object_add(r, "uid", json_object_new_string(p->node_uid));
        json_object_object_add(r, "controller", json_object_new_boolean(1));
        json_object_array_add(refs, r);
        json_object_object_add(meta, "ownerReferences", refs);
}

/* Device taints need the API server's DRADeviceTaints feature gate (alpha, off by default in
 * 1.33-1.34); a server without it drops them silently, and an unhealthy device would be published
 * untainted: schedulable. So the first slice with a taint is written as a dry run first; a server
 * that drops them (then, or in any later answer) is said once, and unhealthy devices are left out
 * of the slice instead (published again at once when a real write lost them). True: dropped. */
static bool taints_dropped(struct gs_dra *p, bool sent, const char *answer)
{
        if (!sent)
                return false;
        json_object *o = answer != NULL ? json_tokener_parse(answer) : NULL;
        bool kept = gs_dra_slice_tainted(o);
        json_object_put(o);
        if (kept) {
                p->taints_gate = GS_DRA_TAINTS_ON;
                return false;
        }
        if (p->taints_gate != GS_DRA_TAINTS_OFF)
                gs_dra_note(p, "the API server dropped the devices' taints (its DRADeviceTaints feature gate is off): "
                            "unhealthy devices are left out of the ResourceSlice instead");
        p->taints_gate = GS_DRA_TAINTS_OFF;
        return true;
}

/* PUT (a resourceVersion: the slice is there) or POST the slice; dry: only asked (?dryRun=All). */
static int write_slice(struct gs_dra *p, const char *path, const char *rv, const char *body, bool dry, long *status,
                       char **answer, struct gs_error *err)
{
        char url[1100];
        char coll[64];
        snprintf(coll, sizeof(coll), "/apis/resource.k8s.io/%s/resourceslices", p->api.res_version);
        snprintf(url, sizeof(url), "%s%s", rv[0] != '\0' ? path : coll, dry ? "?dryRun=All" : "");
        if (gs_kubeapi_call(&p->api, rv[0] != '\0' ? "PUT" : "POST", url, body, status, answer, err) < 0)
                return -1;
        if (*status != 200 && *status != 201)
                return gs_error_set(err, GS_EINVAL, "%s %s%s: HTTP %ld", rv[0] ? "PUT" : "POST", path,
                                    dry ? " (dry run)" : "", *status);
        return 0;
}

static json_object *build(struct gs_dra *p, long long gen, const char *rv)
{
        json_object *s = gs_dra_slice_build(p->dev, &p->topo, &p->health, p->taints_gate != GS_DRA_TAINTS_OFF,
                                            p->driver, p->node, gen, rv);
        if (s != NULL) {
                gs_dra_slice_version(s, p->api.res_version, gs_dra_api_shares(&p->api));
                owner(p, s);
        }
        return s;
}

static int publish(struct gs_dra *p, struct gs_error *err)
{
        char name[512], path[1024], rv[128];
        long long t0 = gs_now_ms();
        gs_dra_slice_name(p->driver, p->node, name, sizeof(name));
        snprintf(path, sizeof(path), "/apis/resource.k8s.io/%s/resourceslices/%s", p->api.res_version, name);
        long long old = old_slice(p, path, rv, sizeof(rv), err);
        if (old < 0)
                return -1;
        long long gen = (old > p->generation ? old : p->generation) + 1;
        json_object *s = build(p, gen, rv);
        if (s == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        bool tainted = gs_dra_slice_tainted(s);
        long status = 0;
        if (tainted && p->taints_gate == GS_DRA_TAINTS_UNKNOWN) {
                gs_autofree char *dry = NULL;
                if (write_slice(p, path, rv, json_object_to_json_string_ext(s, JSON_C_TO_STRING_PLAIN), true, &status,
                                &dry, err) < 0) {
                        json_object_put(s);
                        return -1;
                }
                if (taints_dropped(p, true, dry)) {
                        json_object_put(s);
                        if ((s = build(p, gen, rv)) == NULL)
                                return gs_error_set(err, GS_ENOMEM, "out of memory");
                        tainted = false;
                }
        }
        const char *body = json_object_to_json_string_ext(s, JSON_C_TO_STRING_PLAIN);
        size_t body_len = strlen(body);
        gs_autofree char *answer = NULL;
        int rc = write_slice(p, path, rv, body, false, &status, &answer, err);
        json_object *devs = NULL, *spec = NULL;
        json_object_object_get_ex(s, "spec", &spec);
        json_object_object_get_ex(spec, "devices", &devs);
        size_t ndevs = json_object_array_length(devs);
        json_object_put(s);
        if (rc < 0)
                return -1;
        p->generation = gen;
        p->published = true;
        gate_check(p, answer);
        if (taints_dropped(p, tainted, answer)) {
                p->publish_due = true;
                p->publish_at = 0;
        }
        p->check_at = gs_now_ms() + (p->o->resync_period_ms ? p->o->resync_period_ms : RESYNC_MS);
        gs_dra_note(p, "published ResourceSlice %s: %zu device(s), pool generation %lld (%lld ms, %zu bytes)", name, ndevs,
                    gen, gs_now_ms() - t0, body_len);
        return 0;
}

/* The resource.k8s.io version, asked (dra/apiversion.h) and said. -1 with err: the API server
 * answered that it has neither (the plugin cannot work); 0 otherwise: known, or not yet (the API
 * server did not answer: err says why; v1 meanwhile, asked again before the next publication). */
static int ask_version(struct gs_dra *p, struct gs_error *err)
{
        if (p->version_known)
                return 0;
        unsigned attempts = p->api.attempts;
        p->api.attempts = 1; /* the loop asks again itself */
        int rc = gs_dra_api_version(&p->api, p->o->api_version, err);
        p->api.attempts = attempts;
        if (rc < 0)
                return err->code == GS_ENOTFOUND || err->code == GS_EUNSATISFIED ? -1 : 0;
        p->version_known = true;
        bool asked = p->o->api_version == NULL || strcmp(p->o->api_version, "auto") == 0;
        if (gs_dra_api_shares(&p->api))
                gs_dra_note(p, "resource.k8s.io/%s (%s)", p->api.res_version, asked ? "the API server serves it" : "--api-version");
        else
                gs_dra_note(p, "resource.k8s.io/%s (%s): no consumable capacity in that version, GPUs are allocated "
                            "whole, no claim gets a slice", p->api.res_version,
                            asked ? "the API server does not serve v1" : "--api-version");
        return 0;
}

static void publish_tick(struct gs_dra *p, long long now)
{
        if (!p->publish_due || now < p->publish_at)
                return;
        struct gs_error err = {0};
        unsigned attempts = p->api.attempts;
        p->api.attempts = 1; /* the loop tries again itself: never blocks it long */
        p->publish_due = false; /* publish() may ask for another at once */
        int rc = ask_version(p, &err) < 0 || !p->version_known ? -1 : publish(p, &err);
        p->api.attempts = attempts;
        if (rc == 0)
                return;
        p->publish_due = true;
        p->publish_at = now + PUBLISH_RETRY_MS;
        gs_dra_note(p, "cannot publish the ResourceSlice: %s; trying again in %d s", err.msg, PUBLISH_RETRY_MS / 1000);
}

/* The slice read back: one deleted (the kubelet restarting, an operator) is published again. Kept
 * when the plugin stops: a restart or an upgrade must not leave the node with nothing to schedule. */
static void slice_check(struct gs_dra *p, long long now)
{
        if (!p->published || p->publish_due || now < p->check_at)
                return;
        unsigned period = p->o->resync_period_ms ? p->o->resync_period_ms : RESYNC_MS;
        p->check_at = now + period;
        char name[512], path[1024];
        struct gs_error err = {0};
        long status = 0;
        gs_dra_slice_name(p->driver, p->node, name, sizeof(name));
        snprintf(path, sizeof(path), "/apis/resource.k8s.io/%s/resourceslices/%s", p->api.res_version, name);
        unsigned attempts = p->api.attempts;
        p->api.attempts = 1;
        int rc = gs_kubeapi_call(&p->api, "GET", path, NULL, &status, NULL, &err);
        p->api.attempts = attempts;
        if (rc == 0 && status == 404) {
                gs_dra_note(p, "the ResourceSlice %s was deleted: publishing it again", name);
                p->publish_due = true;
                p->publish_at = 0;
        }
}

/* ------------------------------------------------------------------------------------------ */
/* The loop                                                                                    */

enum { FD_SIGNAL, FD_HEALTH, FD_KMSG, FD_REG, FD_SVC, FD_FIXED };

_Static_assert(offsetof(struct gs_dra_conn, h) == 0 && GS_DRA_MAX_CONNS <= GS_K8S_CONNS_MAX,
               "gs_k8s_conns_serve's table: the handle first, at most GS_K8S_CONNS_MAX");

static bool conn_expired(const void *c, long long now)
{
        const struct gs_dra_conn *x = c;
        return gs_k8s_conn_expired(x->h, x->opened, now);
}

static int loop(struct gs_dra *p)
{
        long long next_tick = 0;
        while (!p->stop) {
                struct pollfd fds[FD_FIXED + GS_DRA_MAX_CONNS];
                long long now = gs_now_ms();
                if (now >= next_tick) {
                        check_socks(p);
                        next_tick = now + TICK_MS;
                }
                if (now >= p->sweep_at) {
                        size_t n = p->sweep_at > 0 ? gs_dra_sweep_stale(&p->prep) : 0;
                        if (n > 0)
                                gs_dra_note(p, "%zu prepared claim(s) gone from the API server: unprepared", n);
                        p->sweep_at = gs_now_ms() + (p->o->stale_period_ms ? p->o->stale_period_ms : STALE_MS);
                }
                if (gs_k8s_health_poll(&p->hw, &p->health, now)) {
                        gs_dra_health_changed(p);
                        p->publish_due = true;
                        p->publish_at = 0;
                }
                publish_tick(p, now);
                slice_check(p, now);
                long long usage_at = p->usage != NULL ? gs_dra_usage_tick(p->usage, gs_now_ms()) : next_tick;
                long long xid_at = p->appxid != NULL ? gs_dra_appxid_tick(p->appxid, gs_now_ms()) : next_tick;
                fds[FD_SIGNAL] = (struct pollfd){.fd = p->signal_fd, .events = POLLIN};
                fds[FD_HEALTH] = (struct pollfd){.fd = gs_k8s_health_fd(&p->hw), .events = POLLIN};
                fds[FD_KMSG] = (struct pollfd){.fd = gs_dra_appxid_fd(p->appxid), .events = POLLIN};
                fds[FD_REG] = (struct pollfd){.fd = p->reg.lfd, .events = POLLIN};
                fds[FD_SVC] = (struct pollfd){.fd = p->svc.lfd, .events = POLLIN};
                unsigned n = p->nconns;
                for (unsigned i = 0; i < n; i++)
                        fds[FD_FIXED + i] = (struct pollfd){.fd = gs_h2c_fd(p->conns[i].h), .events = gs_h2c_events(p->conns[i].h)};
                long long wake = next_tick < usage_at ? next_tick : usage_at;
                wake = xid_at < wake ? xid_at : wake;
                if (p->publish_due && p->publish_at < wake)
                        wake = p->publish_at;
                if (p->published && !p->publish_due && p->check_at < wake)
                        wake = p->check_at;
                int timeout = (int)(wake - now);
                if (poll(fds, FD_FIXED + n, timeout < 0 ? 0 : timeout) < 0 && errno != EINTR)
                        return -1;
                now = gs_now_ms();
                if (fds[FD_SIGNAL].revents)
                        p->stop |= gs_k8s_signals_stop(p->signal_fd, gs_dra_note_cb, p);
                gs_k8s_conns_serve(p->conns, sizeof(p->conns[0]), &p->nconns, fds + FD_FIXED, n, now, conn_expired);
                if (p->stats != NULL)
                        gs_dra_stats_prepared(p->stats, gs_dra_prepared_count(&p->prep));
                if (fds[FD_REG].revents && p->reg.lfd >= 0)
                        accept_on(p, &p->reg);
                if (fds[FD_SVC].revents && p->svc.lfd >= 0)
                        accept_on(p, &p->svc);
        }
        return 0;
}

static int setup_signals(struct gs_dra *p, struct gs_error *err)
{
        p->signal_fd = gs_k8s_signals_open(err);
        return p->signal_fd < 0 ? -1 : 0;
}

static bool dns_subdomain(const char *s)
{
        size_t n = strlen(s);
        if (n == 0 || n > 253)
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
                if (!alnum && !((c == '-' || c == '.') && i > 0 && i + 1 < n))
                        return false;
        }
        return true;
}

static void usage_note(void *ud, const char *line)
{
        gs_dra_note(ud, "%s", line);
}

/* Names, paths, the devices, the API client, the checkpoint: everything before serving. */
static int start(struct gs_dra *p, struct gs_error *err)
{
        const struct gs_dra_opts *o = p->o;
        const char *node = o->node != NULL && o->node[0] ? o->node : getenv("NODE_NAME");
        if (!dns_subdomain(p->driver))
                return gs_error_set(err, GS_EINVAL, "invalid driver name '%s' (a DNS subdomain)", p->driver);
        if (node == NULL || node[0] == '\0')
                return gs_error_set(err, GS_EINVAL, "no node name: give --node or set NODE_NAME");
        if (!dns_subdomain(node) || !gs_strlcpy(p->node, node, sizeof(p->node)))
                return gs_error_set(err, GS_EINVAL, "invalid node name '%s'", node);
        const char *regdir = o->registry_dir ? o->registry_dir : GS_DRA_DEFAULT_REGISTRY;
        if (o->plugin_dir != NULL)
                snprintf(p->plugin_dir, sizeof(p->plugin_dir), "%s", o->plugin_dir);
        else
                snprintf(p->plugin_dir, sizeof(p->plugin_dir), "%s/%s", GS_DRA_DEFAULT_PLUGINS, p->driver);
        struct stat st;
        if (stat(regdir, &st) < 0 || !S_ISDIR(st.st_mode))
                return gs_error_set(err, GS_ENOTFOUND, "the kubelet's plugin registry %s is not there (--registry-dir)", regdir);
        if (mkdir(p->plugin_dir, 0750) < 0 && errno != EEXIST)
                return gs_error_sys(err, "mkdir %s", p->plugin_dir);
        const char *inst = o->instance != NULL ? o->instance : getenv("POD_UID");
        if (inst != NULL && inst[0] != '\0') { /* sockets of its own: a new instance registers beside the old one */
                if (strlen(inst) > 63 || strspn(inst, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(inst))
                        return gs_error_set(err, GS_EINVAL, "invalid instance id '%.63s' (lower-case letters, digits, '-')", inst);
                snprintf(p->reg.path, sizeof(p->reg.path), "%s/%s-%s-reg.sock", regdir, p->driver, inst);
                snprintf(p->svc.path, sizeof(p->svc.path), "%s/dra-%s.sock", p->plugin_dir, inst);
        } else {
                snprintf(p->reg.path, sizeof(p->reg.path), "%s/%s-reg.sock", regdir, p->driver);
                snprintf(p->svc.path, sizeof(p->svc.path), "%s/dra.sock", p->plugin_dir);
        }
        p->dev = gs_devices(o->ctx, err);
        if (p->dev == NULL) {
                if (err->stage == NULL)
                        err->stage = err->code == GS_EINIT || err->code == GS_ETIMEOUT || err->code == GS_EHELPER
                                             ? "initialization" : "detection";
                return -1;
        }
        struct gs_k8s_plan plan = {.dev = p->dev};
        gs_k8s_topology_read(&plan, o->hc->dp.sysfs);
        p->topo = plan.topo;
        if (gs_kubeapi_open(&p->api, o->kubeconfig, err) < 0)
                return gs_error_wrap(err, "API server");
        p->api_open = true;
        if (ask_version(p, err) < 0)
                return gs_error_wrap(err, "API server");
        *err = (struct gs_error){0}; /* not answered: asked again before publishing */
        static char exe[PATH_MAX];
        const char *hook = o->hc->dp.hook_path;
        if (hook[0] == '\0') {
                if (gs_hook_exe_default(exe, sizeof(exe), err) < 0)
                        return -1;
                hook = exe;
        }
        p->prep = (struct gs_dra_prep){.ctx = o->ctx, .dev = p->dev, .api = &p->api, .health = &p->health,
                                       .driver = p->driver, .node = p->node,
                                       .cdi_dir = o->cdi_dir ? o->cdi_dir : GS_DRA_DEFAULT_CDI_DIR,
                                       .hook_path = hook, .host_root = o->hc->dp.host_root,
                                       .regions_dir = o->hc->regions_dir};
        if (mkdir(p->prep.cdi_dir, 0755) < 0 && errno != EEXIST)
                return gs_error_sys(err, "mkdir %s", p->prep.cdi_dir);
        p->prep_open = true;
        if (gs_dra_prep_open(&p->prep, p->plugin_dir, err) < 0)
                return -1;
        if (gs_dra_prepared_count(&p->prep) > 0)
                gs_dra_note(p, "checkpoint: %zu claim(s) prepared before", gs_dra_prepared_count(&p->prep));
        if (!o->status_off &&
            (p->usage = gs_dra_usage_new(&p->prep, o->hc->regions_dir, o->status_period_ms ? o->status_period_ms : STATUS_MS,
                                         usage_note, p, err)) == NULL)
                return -1;
        if (o->hc->dp.health_checks && (o->kmsg == NULL || o->kmsg[0] != '\0'))
                p->appxid = gs_dra_appxid_new(&p->prep, o->kmsg ? o->kmsg : GS_XIDLOG_DEFAULT, o->hc->regions_dir,
                                              o->health_period_ms ? o->health_period_ms : 5000, usage_note,
                                              p); /* NULL: said, off */
        if (o->metrics_listen != NULL) {
                if ((p->stats = gs_dra_stats_start(o->metrics_listen, err)) == NULL)
                        return gs_error_wrap(err, "--metrics-listen");
                gs_dra_stats_prepared(p->stats, gs_dra_prepared_count(&p->prep));
                gs_dra_note(p, "metrics on http://%s/metrics", gs_dra_stats_address(p->stats));
        }
        if (sock_listen(&p->svc, err) < 0 || sock_listen(&p->reg, err) < 0)
                return -1;
        gs_dra_note(p, "serving %s (DRA v1, v1beta1) and %s (registration), node %s", p->svc.path, p->reg.path, p->node);
        return 0;
}

int gs_dra_plugin_run(const struct gs_dra_opts *o, struct gs_error *err)
{
        struct gs_dra *p = calloc(1, sizeof(*p));
        if (p == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        p->o = o;
        p->driver = o->driver != NULL ? o->driver : GS_DRA_DEFAULT_DRIVER;
        p->signal_fd = p->reg.lfd = p->svc.lfd = -1;
        p->publish_due = true;
        p->health_since = (long long)time(NULL);
        int rv = -1;
        if (setup_signals(p, err) < 0 || start(p, err) < 0)
                goto out;
        if (o->hc->dp.health_checks)
                gs_k8s_health_start(&p->hw, o->ctx, p->dev, o->health_period_ms ? o->health_period_ms : 5000,
                                    o->health_recover_never ? 0 : o->health_recover_ms ? o->health_recover_ms : GS_K8S_HEALTH_RECOVER_MS,
                                    gs_dra_note_cb, p);
        rv = loop(p);
        if (rv < 0)
                gs_error_sys(err, "poll");
out:
        gs_k8s_health_stop(&p->hw);
        gs_dra_health_end(p);
        while (p->nconns > 0)
                gs_h2c_free(p->conns[--p->nconns].h);
        sock_close(&p->reg);
        sock_close(&p->svc);
        if (p->api_open)
                gs_kubeapi_close(&p->api); /* the ResourceSlice kept (slice_check) */
        gs_dra_usage_free(p->usage);
        gs_dra_appxid_free(p->appxid);
        gs_dra_stats_stop(p->stats);
        if (p->prep_open)
                gs_dra_prep_close(&p->prep);
        if (p->signal_fd >= 0)
                close(p->signal_fd);
        free(p);
        return rv;
}
