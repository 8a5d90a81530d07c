/* The plugin's side of the kubelet: endpoint sockets, Register, and noticing a kubelet restart
 * (its directory watched with inotify, and checked every second as well). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "api.pb-c.h"
#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "common/proc.h"
#include "k8s/plugin_int.h"

static int unix_addr(const char *path, struct sockaddr_un *a, struct gs_error *err)
{
        memset(a, 0, sizeof(*a));
        a->sun_family = AF_UNIX;
        if (strlen(path) >= sizeof(a->sun_path))
                return gs_error_set(err, GS_EINVAL, "socket path too long: %s", path);
        strcpy(a->sun_path, path);
        return 0;
}

static bool same_file(const struct stat *st, dev_t dev, ino_t ino, const struct timespec *ctime)
{
        return st->st_dev == dev && st->st_ino == ino && st->st_ctim.tv_sec == ctime->tv_sec &&
               st->st_ctim.tv_nsec == ctime->tv_nsec;
}

int gs_k8s_dial(const char *path, struct gs_error *err)
{
        struct sockaddr_un a;
        if (unix_addr(path, &a, err) < 0)
                return -1;
        gs_autoclose int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return gs_error_sys(err, "socket");
        if (connect(fd, (const struct sockaddr *)&a, sizeof(a)) < 0)
                return gs_error_sys(err, "connect %s", path);
        return gs_steal_fd(&fd);
}

/* Make (or make anew) an endpoint's listening socket. */
static int listen_on(struct gs_k8s_endpoint *ep, struct gs_error *err)
{
        struct sockaddr_un a;
        if (unix_addr(ep->path, &a, err) < 0)
                return -1;
        if (ep->lfd >= 0)
                close(ep->lfd);
        ep->lfd = -1;
        if (unlink(ep->path) < 0 && errno != ENOENT)
                return gs_error_sys(err, "remove %s", ep->path);
        gs_autoclose int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return gs_error_sys(err, "socket");
        if (bind(fd, (const struct sockaddr *)&a, sizeof(a)) < 0)
                return gs_error_sys(err, "bind %s", ep->path);
        if (listen(fd, 16) < 0)
                return gs_error_sys(err, "listen %s", ep->path);
        struct stat st;
        if (stat(ep->path, &st) < 0)
                return gs_error_sys(err, "stat %s", ep->path);
        ep->dev = st.st_dev;
        ep->ino = st.st_ino;
        ep->ctime = st.st_ctim;
        ep->lfd = gs_steal_fd(&fd);
        return 0;
}

int gs_k8s_endpoints_open(struct gs_k8s_plugin *p, struct gs_error *err)
{
        snprintf(p->kubelet_sock, sizeof(p->kubelet_sock), "%s/kubelet.sock", p->cfg->socket_dir);
        for (size_t i = 0; i < p->plan.nres; i++) {
                struct gs_k8s_endpoint *ep = &p->ep[i];
                ep->p = p;
                ep->res = &p->plan.res[i];
                ep->lfd = -1;
                ep->want_register = true;
                if ((size_t)snprintf(ep->path, sizeof(ep->path), "%s/%s", p->cfg->socket_dir, ep->res->endpoint) >=
                    sizeof(ep->path))
                        return gs_error_set(err, GS_EINVAL, "socket path too long: %s", p->cfg->socket_dir);
                if (listen_on(ep, err) < 0)
                        return -1;
                gs_k8s_note(p, "serving %s (%zu devices) on %s", ep->res->name, ep->res->ndevs, ep->path);
        }
        return 0;
}

void gs_k8s_endpoints_close(struct gs_k8s_plugin *p)
{
        for (size_t i = 0; i < p->plan.nres; i++) {
                struct gs_k8s_endpoint *ep = &p->ep[i];
                struct stat st;
                if (ep->lfd < 0)
                        continue;
                close(ep->lfd);
                ep->lfd = -1;
                /* only our own socket: a newer plugin may have taken the name */
                if (stat(ep->path, &st) == 0 && same_file(&st, ep->dev, ep->ino, &ep->ctime))
                        unlink(ep->path);
        }
}

/* ------------------------------------------------------------------------------------------ */
/* Register                                                                                    */

static void registered(struct gs_h2c_conn *c, int status, const char *message, const uint8_t *msg, size_t len,
                       void *ud)
{
        (void)c;
        (void)msg;
        (void)len;
        struct gs_k8s_endpoint *ep = ud;
        ep->registering = false;
        if (status == GS_GRPC_OK) {
                ep->registered = true;
                gs_k8s_note(ep->p, "registered %s with the kubelet (endpoint %s)", ep->res->name, ep->res->endpoint);
                return;
        }
        ep->registered = false;
        ep->want_register = true;
        ep->retry_at = gs_now_ms() + GS_K8S_RETRY_MS;
        gs_k8s_note(ep->p, "the kubelet refused to register %s: %s (status %d); trying again in %d s", ep->res->name,
                    message, status, GS_K8S_RETRY_MS / 1000);
}

static void start_register(struct gs_k8s_endpoint *ep, long long now)
{
        struct gs_k8s_plugin *p = ep->p;
        struct gs_error err = {0};
        V1beta1__DevicePluginOptions opts = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
        opts.get_preferred_allocation_available = 1;
        V1beta1__RegisterRequest rq = V1BETA1__REGISTER_REQUEST__INIT;
        rq.version = (char *)"v1beta1";
        rq.endpoint = (char *)ep->res->endpoint;
        rq.resource_name = (char *)ep->res->name;
        rq.options = &opts;
        uint8_t buf[1024];
        size_t len = v1beta1__register_request__get_packed_size(&rq);
        int fd = len <= sizeof(buf) ? gs_k8s_dial(p->kubelet_sock, &err) : -1;
        struct gs_h2c_conn *h = fd >= 0 ? gs_h2c_client_new(fd, &err) : NULL;
        if (h == NULL && fd >= 0)
                close(fd);
        v1beta1__register_request__pack(&rq, buf);
        if (h != NULL && gs_h2c_call(h, "/v1beta1.Registration/Register", buf, len, now + GS_K8S_CALL_TIMEOUT_MS,
                                     registered, ep, &err) == 0 &&
            gs_k8s_conn_add(p, h, GS_K8S_CONN_REGISTER, ep) != NULL) {
                ep->registering = true;
                ep->want_register = false;
                return;
        }
        gs_h2c_free(h);
        ep->retry_at = now + GS_K8S_RETRY_MS;
        gs_k8s_note(p, "cannot register %s with the kubelet: %s; trying again in %d s", ep->res->name,
                    err.msg[0] ? err.msg : "too many connections", GS_K8S_RETRY_MS / 1000);
}

/* ------------------------------------------------------------------------------------------ */
/* Restarts                                                                                    */

void gs_k8s_endpoints_check(struct gs_k8s_plugin *p, long long now)
{
        struct stat st;
        bool kubelet_up = stat(p->kubelet_sock, &st) == 0 && S_ISSOCK(st.st_mode);
        if (kubelet_up && !same_file(&st, p->kubelet_dev, p->kubelet_ino, &p->kubelet_ctime)) {
                if (p->kubelet_ino != 0)
                        gs_k8s_note(p, "the kubelet restarted (%s is new): registering again", p->kubelet_sock);
                p->kubelet_dev = st.st_dev;
                p->kubelet_ino = st.st_ino;
                p->kubelet_ctime = st.st_ctim;
                for (size_t i = 0; i < p->plan.nres; i++) {
                        p->ep[i].want_register = true;
                        p->ep[i].retry_at = 0;
                }
        }
        for (size_t i = 0; i < p->plan.nres; i++) {
                struct gs_k8s_endpoint *ep = &p->ep[i];
                struct gs_error err = {0};
                if (stat(ep->path, &st) < 0 || !same_file(&st, ep->dev, ep->ino, &ep->ctime)) {
                        gs_k8s_note(p, "%s was removed: serving it again", ep->path);
                        if (listen_on(ep, &err) < 0) {
                                gs_k8s_note(p, "cannot serve %s: %s", ep->path, err.msg);
                                continue;
                        }
                        ep->want_register = true;
                        ep->retry_at = 0;
                        ep->registered = false;
                }
                if (kubelet_up && ep->want_register && !ep->registering && now >= ep->retry_at && ep->lfd >= 0)
                        start_register(ep, now);
        }
}

int gs_k8s_watch_dir(struct gs_k8s_plugin *p, struct gs_error *err)
{
        p->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (p->inotify_fd < 0) {
                gs_log_warn("inotify: %s (checking the kubelet's directory every second only)", strerror(errno));
                return 0;
        }
        if (inotify_add_watch(p->inotify_fd, p->cfg->socket_dir, IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO) < 0)
                return gs_error_sys(err, "watch %s", p->cfg->socket_dir);
        return 0;
}

void gs_k8s_dir_event(struct gs_k8s_plugin *p, long long now)
{
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        while (read(p->inotify_fd, buf, sizeof(buf)) > 0) {
                /* what changed does not matter: look at the sockets */
        }
        gs_k8s_endpoints_check(p, now);
}

void gs_k8s_accept(struct gs_k8s_endpoint *ep, long long now)
{
        (void)now;
        for (int i = 0; i < 16; i++) {
                int fd = accept4(ep->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (fd < 0)
                        return;
                struct gs_error err = {0};
                struct gs_h2c_conn *h = gs_h2c_server_new(fd, &gs_k8s_service, ep, &err);
                if (h == NULL) {
                        close(fd);
                        gs_k8s_note(ep->p, "connection on %s dropped: %s", ep->path, err.msg);
                        continue;
                }
                if (gs_k8s_conn_add(ep->p, h, GS_K8S_CONN_SERVER, ep) == NULL) {
                        gs_log_warn("%s: too many connections: one dropped", ep->path);
                        gs_h2c_free(h);
                }
        }
}
