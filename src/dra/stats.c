/* The DRA plugin's own metrics on their HTTP endpoint (see dra/stats.h). */
#include "dra/stats.h"

#include <microhttpd.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "observe/httpd.h"
#include "observe/listen.h"
#include "observe/prom.h"

#define NB 14 /* buckets, the last +Inf */
static const double edges[NB - 1] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
static const char *const les[NB] = {"0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1",
                                    "0.25", "0.5", "1", "2.5", "5", "10", "+Inf"};

struct gs_dra_stats {
        _Atomic uint64_t count[2][2];   /* [op][ok] */
        _Atomic uint64_t bucket[2][NB]; /* [op][bucket], not cumulative */
        _Atomic uint64_t sum_us[2];
        _Atomic uint64_t prepared;
        struct MHD_Daemon *mhd;
        char address[80];
};

void gs_dra_stats_note(struct gs_dra_stats *s, enum gs_dra_op op, bool ok, double seconds)
{
        if (s == NULL)
                return;
        unsigned b = 0;
        while (b < NB - 1 && seconds > edges[b])
                b++;
        atomic_fetch_add(&s->count[op][ok], 1);
        atomic_fetch_add(&s->bucket[op][b], 1);
        atomic_fetch_add(&s->sum_us[op], (uint64_t)(seconds > 0 ? seconds * 1e6 + 0.5 : 0));
}

void gs_dra_stats_prepared(struct gs_dra_stats *s, size_t n)
{
        if (s != NULL)
                atomic_store(&s->prepared, n);
}

static void histogram(struct gs_prom *p, const struct gs_dra_stats *s, enum gs_dra_op op, const struct gs_prom_family *f)
{
        uint64_t cum[NB], n = 0;
        for (unsigned b = 0; b < NB; b++)
                cum[b] = n += atomic_load(&s->bucket[op][b]);
        gs_prom_histogram_raw(p, f, "", les, cum, NB, (double)atomic_load(&s->sum_us[op]) / 1e6, n);
}

char *gs_dra_stats_render(struct gs_dra_stats *s, size_t *len)
{
        static const struct gs_prom_family prep = {"gpuslice_dra_prepare_total", GS_PROM_COUNTER,
                                                   "Claims NodePrepareResources was asked to prepare, by result."},
                                           unprep = {"gpuslice_dra_unprepare_total", GS_PROM_COUNTER,
                                                     "Claims NodeUnprepareResources was asked to unprepare, by result."},
                                           prep_s = {"gpuslice_dra_prepare_duration_seconds", GS_PROM_HISTOGRAM,
                                                     "How long preparing one claim took (the API server's read included)."},
                                           unprep_s = {"gpuslice_dra_unprepare_duration_seconds", GS_PROM_HISTOGRAM,
                                                       "How long unpreparing one claim took."},
                                           held = {"gpuslice_dra_prepared_claims", GS_PROM_GAUGE,
                                                   "Claims prepared on this node (the checkpoint)."};
        struct gs_prom p;
        gs_prom_init(&p);
        gs_prom_sample_raw(&p, &prep, "{result=\"prepared\"}", (double)atomic_load(&s->count[GS_DRA_OP_PREPARE][1]));
        gs_prom_sample_raw(&p, &prep, "{result=\"refused\"}", (double)atomic_load(&s->count[GS_DRA_OP_PREPARE][0]));
        gs_prom_sample_raw(&p, &unprep, "{result=\"unprepared\"}", (double)atomic_load(&s->count[GS_DRA_OP_UNPREPARE][1]));
        gs_prom_sample_raw(&p, &unprep, "{result=\"failed\"}", (double)atomic_load(&s->count[GS_DRA_OP_UNPREPARE][0]));
        histogram(&p, s, GS_DRA_OP_PREPARE, &prep_s);
        histogram(&p, s, GS_DRA_OP_UNPREPARE, &unprep_s);
        gs_prom_sample_raw(&p, &held, "", (double)atomic_load(&s->prepared));
        return gs_prom_take(&p, len);
}

#define TEXT(conn, status, s) gs_http_reply(conn, status, "text/plain; charset=utf-8", (char *)(s), sizeof(s) - 1, false)

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                              const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
        (void)version;
        (void)upload_data;
        static int headers_seen; /* answer once the whole request is in (keep-alive kept) */
        if (*con_cls == NULL) {
                *con_cls = &headers_seen;
                return MHD_YES;
        }
        if (*upload_data_size != 0) {
                *upload_data_size = 0;
                return MHD_YES;
        }
        if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
                return TEXT(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n");
        if (strcmp(url, "/healthz") == 0)
                return TEXT(conn, MHD_HTTP_OK, "ok\n");
        if (strcmp(url, "/metrics") != 0)
                return TEXT(conn, MHD_HTTP_NOT_FOUND, "not found (try /metrics)\n");
        size_t len = 0;
        char *text = gs_dra_stats_render(cls, &len);
        if (text == NULL)
                return TEXT(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
        return gs_http_reply(conn, MHD_HTTP_OK, GS_PROM_CONTENT_TYPE, text, len, true);
}

struct gs_dra_stats *gs_dra_stats_start(const char *listen, struct gs_error *err)
{
        struct gs_listen_addr a;
        if (gs_listen_parse(listen, &a, err) < 0)
                return NULL;
        struct gs_dra_stats *s = calloc(1, sizeof(*s));
        if (s == NULL) {
                gs_error_set(err, GS_ENOMEM, "out of memory");
                return NULL;
        }
        int fd = gs_listen_open(listen, &a, s->address, sizeof(s->address), err);
        if (fd < 0) {
                free(s);
                return NULL;
        }
        s->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, 0, NULL, NULL, handle, s,
                                  MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT, 16u,
                                  MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
        if (s->mhd == NULL) {
                close(fd);
                free(s);
                gs_error_set(err, GS_ESYS, "cannot start the metrics server on %s (libmicrohttpd)", listen);
                return NULL;
        }
        return s;
}

const char *gs_dra_stats_address(const struct gs_dra_stats *s)
{
        return s->address;
}

void gs_dra_stats_stop(struct gs_dra_stats *s)
{
        if (s == NULL)
                return;
        MHD_stop_daemon(s->mhd);
        free(s);
}
