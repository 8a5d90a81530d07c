/* The /metrics endpoint on libmicrohttpd (server.h). */
#include "observe/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "common/proc.h"
#include "common/strutil.h"
#include "observe/prom.h"

#define SWEEP_MIN_MS 2000    /* at most this often while containers are gone */
#define SWEEP_EVERY_MS 60000 /* and this often anyway (half-made directories) */

struct gs_metrics_server {
        struct MHD_Daemon *mhd;
        struct gs_collector *collector;
        pthread_mutex_t lock; /* the collector's scans */
        struct gs_gpu_poller *gpus;
        struct gs_metrics_opts render;
        void (*log)(void *arg, const char *line);
        void *log_arg;
        char address[INET6_ADDRSTRLEN + 16];
        long long last_sweep_ms;
};

/* ------------------------------------------------------------------------------------------- */
/* --listen                                                                                    */

static int parse_port(const char *s, in_port_t *port)
{
        unsigned long long v;
        if (*s == '\0' || strlen(s) > 5 || gs_parse_uint(s, 65535, &v) < 0)
                return -1;
        *port = htons((in_port_t)v);
        return 0;
}

/* A host name or numeric address into out (port set by the caller). */
static int resolve(const char *host, struct gs_listen_addr *out)
{
        struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
        struct addrinfo *ai = NULL;
        if (getaddrinfo(host, NULL, &hints, &ai) != 0 || ai == NULL)
                return -1;
        memcpy(&out->ss, ai->ai_addr, ai->ai_addrlen);
        out->len = ai->ai_addrlen;
        freeaddrinfo(ai);
        return 0;
}

int gs_listen_parse(const char *spec, struct gs_listen_addr *out, struct gs_error *err)
{
        memset(out, 0, sizeof(*out));
        char host[256];
        const char *colon = strrchr(spec, ':'), *port;
        if (spec[0] == '[') {
                const char *close = strchr(spec, ']');
                if (close == NULL || close[1] != ':' || (size_t)(close - spec - 1) >= sizeof(host))
                        goto bad;
                memcpy(host, spec + 1, (size_t)(close - spec - 1));
                host[close - spec - 1] = '\0';
                port = close + 2;
        } else {
                if (colon == NULL || (size_t)(colon - spec) >= sizeof(host))
                        goto bad;
                memcpy(host, spec, (size_t)(colon - spec));
                host[colon - spec] = '\0';
                if (strchr(host, ':') != NULL)
                        return gs_error_set(err, GS_EINVAL, "invalid --listen '%s': an IPv6 address needs brackets "
                                                            "([::1]:9394)", spec);
                port = colon + 1;
        }
        in_port_t p;
        if (parse_port(port, &p) < 0)
                return gs_error_set(err, GS_EINVAL, "invalid --listen '%s': the port must be a number 0..65535", spec);
        if (host[0] == '\0' || strcmp(host, "*") == 0) {
                struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&out->ss;
                a6->sin6_family = AF_INET6;
                a6->sin6_addr = in6addr_any;
                out->len = sizeof(*a6);
                out->any = true;
        } else if (resolve(host, out) < 0) {
                return gs_error_set(err, GS_EINVAL, "invalid --listen '%s': cannot resolve '%s'", spec, host);
        }
        if (out->ss.ss_family == AF_INET6)
                ((struct sockaddr_in6 *)&out->ss)->sin6_port = p;
        else
                ((struct sockaddr_in *)&out->ss)->sin_port = p;
        return 0;
bad:
        return gs_error_set(err, GS_EINVAL, "invalid --listen '%s': ADDR:PORT, e.g. :9394, 127.0.0.1:9394 or [::1]:9394",
                            spec);
}

static void format_address(const struct sockaddr_storage *ss, char *out, size_t len)
{
        char ip[INET6_ADDRSTRLEN] = "?";
        if (ss->ss_family == AF_INET6) {
                const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
                inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip));
                snprintf(out, len, "[%s]:%u", ip, ntohs(a->sin6_port));
        } else {
                const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
                inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
                snprintf(out, len, "%s:%u", ip, ntohs(a->sin_port));
        }
}

/* socket, bind, listen; the bound address into addr. */
static int open_listener(const char *spec, const struct gs_listen_addr *a, char *addr, size_t addrlen,
                         struct gs_error *err)
{
        struct gs_listen_addr cur = *a;
        int fd = socket(cur.ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0 && cur.any && errno == EAFNOSUPPORT) {
                /* no IPv6 on this host: every IPv4 address */
                struct sockaddr_in *a4 = (struct sockaddr_in *)&cur.ss;
                in_port_t port = ((const struct sockaddr_in6 *)&a->ss)->sin6_port;
                memset(&cur.ss, 0, sizeof(cur.ss));
                a4->sin_family = AF_INET;
                a4->sin_addr.s_addr = htonl(INADDR_ANY);
                a4->sin_port = port;
                cur.len = sizeof(*a4);
                fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        }
        if (fd < 0)
                return gs_error_sys(err, "cannot listen on %s: socket", spec);
        int one = 1, zero = 0;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (cur.any && cur.ss.ss_family == AF_INET6)
                setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
        if (bind(fd, (const struct sockaddr *)&cur.ss, cur.len) < 0 || listen(fd, 128) < 0) {
                gs_error_sys(err, "cannot listen on %s", spec);
                close(fd);
                return -1;
        }
        struct sockaddr_storage bound;
        socklen_t blen = sizeof(bound);
        if (getsockname(fd, (struct sockaddr *)&bound, &blen) < 0)
                bound = cur.ss;
        format_address(&bound, addr, addrlen);
        return fd;
}

/* ------------------------------------------------------------------------------------------- */
/* requests                                                                                    */

#define server_log(s, ...) gs_log_warn_to((s)->log, (s)->log_arg, __VA_ARGS__)

static void mhd_log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
        char line[512];
        vsnprintf(line, sizeof(line), fmt, ap);
        size_t n = strlen(line);
        while (n > 0 && line[n - 1] == '\n')
                line[--n] = '\0';
        struct gs_metrics_server *s = cls;
        server_log(s, "http: %s", line);
}

/* Queue a response: `body` is freed by MHD when `owned`, else it must be static. */
static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *type, char *body, size_t len,
                             bool owned)
{
        struct MHD_Response *r =
                MHD_create_response_from_buffer(len, body, owned ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
        if (r == NULL) {
                if (owned)
                        free(body);
                return MHD_NO;
        }
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
        MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
        if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
                MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
        enum MHD_Result rc = MHD_queue_response(conn, status, r);
        MHD_destroy_response(r);
        return rc;
}

#define STATIC_REPLY(conn, status, text) reply(conn, status, "text/plain; charset=utf-8", (char *)(text), sizeof(text) - 1, false)

static enum MHD_Result serve_metrics(struct gs_metrics_server *s, struct MHD_Connection *conn)
{
        struct gs_error err = {0};
        size_t len = 0;
        char *text = gs_metrics_scrape(s->collector, &s->lock, s->gpus, &s->render, &len, &err);
        if (text == NULL) {
                server_log(s, "scrape failed: %s", err.msg);
                return STATIC_REPLY(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "scrape failed (see the exporter's log)\n");
        }
        return reply(conn, MHD_HTTP_OK, GS_PROM_CONTENT_TYPE, text, len, true);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                              const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
        (void)version;
        (void)upload_data;
        /* Answer once the whole request is in (MHD calls again after the body): a response
         * queued at the headers would make MHD close the connection (keep-alive lost). */
        static int headers_seen;
        if (*con_cls == NULL) {
                *con_cls = &headers_seen;
                return MHD_YES;
        }
        if (*upload_data_size != 0) { /* a body nobody asked for: swallow it */
                *upload_data_size = 0;
                return MHD_YES;
        }
        if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
                return STATIC_REPLY(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n");
        if (strcmp(url, "/metrics") == 0)
                return serve_metrics(cls, conn);
        if (strcmp(url, "/healthz") == 0)
                return STATIC_REPLY(conn, MHD_HTTP_OK, "ok\n");
        if (strcmp(url, "/") == 0)
                return STATIC_REPLY(conn, MHD_HTTP_OK, "gpuslice metrics: Prometheus metrics at /metrics, health at /healthz\n");
        return STATIC_REPLY(conn, MHD_HTTP_NOT_FOUND, "not found (try /metrics)\n");
}

/* ------------------------------------------------------------------------------------------- */
/* life cycle                                                                                  */

struct gs_metrics_server *gs_metrics_server_start(const struct gs_metrics_server_opts *o, struct gs_error *err)
{
        struct gs_listen_addr a;
        if (gs_listen_parse(o->listen, &a, err) < 0)
                return NULL;
        struct gs_metrics_server *s = calloc(1, sizeof(*s));
        if (s == NULL) {
                gs_error_set(err, GS_ENOMEM, "out of memory");
                return NULL;
        }
        s->collector = o->collector;
        s->gpus = o->gpus;
        s->render = o->render;
        s->log = o->log;
        s->log_arg = o->log_arg;
        s->last_sweep_ms = gs_now_ms();
        pthread_mutex_init(&s->lock, NULL);
        int fd = open_listener(o->listen, &a, s->address, sizeof(s->address), err);
        if (fd < 0) {
                pthread_mutex_destroy(&s->lock);
                free(s);
                return NULL;
        }
        s->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG, 0, NULL, NULL,
                                  handle, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s, MHD_OPTION_LISTEN_SOCKET, fd,
                                  MHD_OPTION_THREAD_POOL_SIZE, (unsigned)(o->threads != 0 ? o->threads : 4),
                                  MHD_OPTION_CONNECTION_LIMIT, 256u, MHD_OPTION_CONNECTION_TIMEOUT, 30u,
                                  MHD_OPTION_END);
        if (s->mhd == NULL) {
                close(fd);
                pthread_mutex_destroy(&s->lock);
                free(s);
                gs_error_set(err, GS_ESYS, "cannot start the HTTP server on %s (libmicrohttpd)", o->listen);
                return NULL;
        }
        return s;
}

const char *gs_metrics_server_address(const struct gs_metrics_server *s)
{
        return s->address;
}

void gs_metrics_server_tick(struct gs_metrics_server *s)
{
        struct gs_observation obs;
        struct gs_error err = {0};
        pthread_mutex_lock(&s->lock);
        int rc = gs_collector_scan(s->collector, &obs, &err);
        long long now = gs_now_ms();
        if (rc == 0 && ((obs.gone > 0 && now - s->last_sweep_ms >= SWEEP_MIN_MS) || now - s->last_sweep_ms >= SWEEP_EVERY_MS)) {
                gs_collector_sweep(s->collector);
                s->last_sweep_ms = now;
        }
        pthread_mutex_unlock(&s->lock);
        if (rc == 0)
                gs_observation_release(&obs);
        else
                server_log(s, "scan failed: %s", err.msg);
}

void gs_metrics_server_stop(struct gs_metrics_server *s)
{
        if (s == NULL)
                return;
        MHD_stop_daemon(s->mhd);
        pthread_mutex_destroy(&s->lock);
        free(s);
}
