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
#include "observe/httpd.h"
#include "observe/listen.h"
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

#define STATIC_REPLY(conn, status, text) gs_http_reply(conn, status, "text/plain; charset=utf-8", (char *)(text), sizeof(text) - 1, false)

static enum MHD_Result serve_metrics(struct gs_metrics_server *s, struct MHD_Connection *conn)
{
        struct gs_error err = {0};
        size_t len = 0;
        char *text = gs_metrics_scrape(s->collector, &s->lock, s->gpus, &s->render, &len, &err);
        if (text == NULL) {
                server_log(s, "scrape failed: %s", err.msg);
                return STATIC_REPLY(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "scrape failed (see the exporter's log)\n");
        }
        return gs_http_reply(conn, MHD_HTTP_OK, GS_PROM_CONTENT_TYPE, text, len, true);
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
        int fd = gs_listen_open(o->listen, &a, s->address, sizeof(s->address), err);
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
