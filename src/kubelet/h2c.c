/* gRPC over HTTP/2 cleartext (nghttp2), server and client ends: see h2c.h. */
#include "kubelet/h2c.h"

#include <errno.h>
#include <fcntl.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "common/proc.h"
#include "common/strutil.h"

#define GRPC_PREFIX 5u
#define READ_CHUNK 16384u
#define READS_PER_IO 16 /* at most 256 KiB per gs_h2c_io: other connections get their turn */
#define REQUEST_MS 30000 /* a request must be complete this long after its headers began */

struct outmsg {
        struct outmsg *next;
        size_t len, off;
        uint8_t data[];
};

struct stream {
        struct stream *next, *prev; /* the connection's list */
        struct gs_h2c_conn *c;
        int32_t id;
        bool client;
        /* received: request (server) or answer (client) body, gRPC-framed */
        uint8_t *in;
        size_t in_len, in_cap;
        bool in_overflow;
        size_t header_bytes;
        /* server: the request's headers */
        char path[GS_H2C_MAX_PATH];
        bool path_too_long, post, grpc, dispatched;
        long long begun; /* gs_now_ms() of its first header */
        /* what we send */
        struct outmsg *out_head, *out_tail;
        size_t out_bytes;
        bool responded;   /* HEADERS submitted (server) / request submitted (client) */
        bool deferred;    /* the data provider said DEFERRED: resume it when there is more */
        bool end_pending; /* end the stream once the queue is drained (server: with trailers) */
        bool ended;       /* trailers (or END_STREAM) submitted */
        int status;
        char message[256];
        /* client */
        gs_h2c_done_fn done;
        void *ud;
        long long deadline;
        bool done_called;
        int http_status;
        int grpc_status; /* -1 until received */
        char grpc_message[256];
};

struct gs_h2c_conn {
        nghttp2_session *s;
        int fd;
        bool server;
        const struct gs_h2c_server_ops *ops;
        void *ud;
        uint8_t *wbuf; /* bytes nghttp2 produced that the socket has not taken yet */
        size_t wlen, woff, wcap;
        long long last_recv;
        bool dead, eof, calls_made;
        unsigned nstreams;
        struct stream *streams;
};

/* ------------------------------------------------------------------------------------------ */
/* Streams                                                                                     */

static struct stream *stream_new(struct gs_h2c_conn *c, bool client)
{
        struct stream *st = calloc(1, sizeof(*st));
        if (st == NULL)
                return NULL;
        st->c = c;
        st->client = client;
        st->grpc_status = -1;
        st->next = c->streams;
        if (c->streams != NULL)
                c->streams->prev = st;
        c->streams = st;
        c->nstreams++;
        return st;
}

static void stream_free(struct stream *st)
{
        struct gs_h2c_conn *c = st->c;
        if (st->prev != NULL)
                st->prev->next = st->next;
        else
                c->streams = st->next;
        if (st->next != NULL)
                st->next->prev = st->prev;
        c->nstreams--;
        for (struct outmsg *m = st->out_head, *n; m != NULL; m = n) {
                n = m->next;
                free(m);
        }
        free(st->in);
        free(st);
}

static struct stream *stream_of(struct gs_h2c_conn *c, int32_t id)
{
        return c->s != NULL ? nghttp2_session_get_stream_user_data(c->s, id) : NULL;
}

/* Queue one gRPC-framed message. */
static int enqueue(struct stream *st, const uint8_t *msg, size_t len)
{
        if (len > GS_H2C_MAX_MESSAGE || st->out_bytes > GS_H2C_MAX_MESSAGE)
                return -1;
        struct outmsg *m = malloc(sizeof(*m) + GRPC_PREFIX + len);
        if (m == NULL)
                return -1;
        m->next = NULL;
        m->off = 0;
        m->len = GRPC_PREFIX + len;
        m->data[0] = 0;
        m->data[1] = (uint8_t)(len >> 24);
        m->data[2] = (uint8_t)(len >> 16);
        m->data[3] = (uint8_t)(len >> 8);
        m->data[4] = (uint8_t)len;
        if (len > 0)
                memcpy(m->data + GRPC_PREFIX, msg, len);
        if (st->out_tail != NULL)
                st->out_tail->next = m;
        else
                st->out_head = m;
        st->out_tail = m;
        st->out_bytes += m->len;
        return 0;
}

/* The body received so far: exactly one gRPC message? 0 with *msg and *len, else a status. */
static int one_message(const struct stream *st, const uint8_t **msg, size_t *len, const char **why)
{
        if (st->in_overflow) {
                *why = "message larger than 4 MiB";
                return GS_GRPC_RESOURCE_EXHAUSTED;
        }
        if (st->in_len < GRPC_PREFIX) {
                *why = st->in_len == 0 ? "no message" : "truncated message prefix";
                return GS_GRPC_INTERNAL;
        }
        const uint8_t *p = st->in;
        size_t n = (size_t)p[1] << 24 | (size_t)p[2] << 16 | (size_t)p[3] << 8 | p[4];
        if (p[0] == 1) {
                *why = "compressed messages are not supported (grpc-accept-encoding: identity)";
                return GS_GRPC_UNIMPLEMENTED;
        }
        if (p[0] != 0) {
                *why = "invalid message prefix";
                return GS_GRPC_INTERNAL;
        }
        if (n > GS_H2C_MAX_MESSAGE) {
                *why = "message larger than 4 MiB";
                return GS_GRPC_RESOURCE_EXHAUSTED;
        }
        if (st->in_len - GRPC_PREFIX != n) {
                *why = st->in_len - GRPC_PREFIX < n ? "truncated message" : "more than one message in a unary call";
                return GS_GRPC_INTERNAL;
        }
        *msg = p + GRPC_PREFIX;
        *len = n;
        return GS_GRPC_OK;
}

static int append_in(struct stream *st, const uint8_t *data, size_t len)
{
        if (st->in_overflow || len == 0)
                return 0;
        if (st->in_len + len > GS_H2C_MAX_MESSAGE + GRPC_PREFIX) {
                st->in_overflow = true;
                free(st->in);
                st->in = NULL;
                st->in_len = st->in_cap = 0;
                return 0;
        }
        if (st->in_len + len > st->in_cap) {
                size_t cap = st->in_cap ? st->in_cap : 1024;
                while (cap < st->in_len + len)
                        cap *= 2;
                uint8_t *n = realloc(st->in, cap);
                if (n == NULL)
                        return -1;
                st->in = n;
                st->in_cap = cap;
        }
        memcpy(st->in + st->in_len, data, len);
        st->in_len += len;
        return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Sending: the data provider drains a stream's queue, then ends it                             */

#define NV(n, v) {(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NONE}

static int submit_trailers(struct stream *st)
{
        char status[16], msg[3 * sizeof(st->message)];
        snprintf(status, sizeof(status), "%d", st->status);
        gs_grpc_message_encode(st->message, msg, sizeof(msg));
        nghttp2_nv nv[] = {NV("grpc-status", status), NV("grpc-message", msg)};
        st->ended = true;
        return nghttp2_submit_trailer(st->c->s, st->id, nv, msg[0] != '\0' ? 2 : 1);
}

static ssize_t read_body(nghttp2_session *s, int32_t id, uint8_t *buf, size_t length, uint32_t *flags,
                         nghttp2_data_source *src, void *user)
{
        (void)s;
        (void)id;
        (void)user;
        struct stream *st = src->ptr;
        size_t n = 0;
        while (n < length && st->out_head != NULL) {
                struct outmsg *m = st->out_head;
                size_t k = m->len - m->off < length - n ? m->len - m->off : length - n;
                memcpy(buf + n, m->data + m->off, k);
                m->off += k;
                n += k;
                if (m->off == m->len) {
                        st->out_head = m->next;
                        if (st->out_head == NULL)
                                st->out_tail = NULL;
                        st->out_bytes -= m->len;
                        free(m);
                }
        }
        if (st->out_head == NULL && st->end_pending && !st->ended) {
                *flags |= NGHTTP2_DATA_FLAG_EOF;
                if (st->client) {
                        st->ended = true; /* END_STREAM on this DATA frame */
                } else {
                        *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
                        if (submit_trailers(st) != 0)
                                return NGHTTP2_ERR_CALLBACK_FAILURE;
                }
                return (ssize_t)n;
        }
        if (n > 0)
                return (ssize_t)n;
        st->deferred = true;
        return NGHTTP2_ERR_DEFERRED;
}

static int submit_response(struct stream *st, bool trailers_only)
{
        char status[16], msg[3 * sizeof(st->message)];
        nghttp2_nv nv[5] = {NV(":status", "200"), NV("content-type", "application/grpc")};
        size_t n = 2;
        if (trailers_only) {
                snprintf(status, sizeof(status), "%d", st->status);
                gs_grpc_message_encode(st->message, msg, sizeof(msg));
                nv[n++] = (nghttp2_nv)NV("grpc-status", status);
                if (msg[0] != '\0')
                        nv[n++] = (nghttp2_nv)NV("grpc-message", msg);
                st->ended = true;
        }
        nghttp2_data_provider prd = {.source.ptr = st, .read_callback = read_body};
        st->responded = true;
        return nghttp2_submit_response(st->c->s, st->id, nv, n, trailers_only ? NULL : &prd) == 0 ? 0 : -1;
}

/* Data was queued or the end asked for: start the response or wake its provider. */
static int kick(struct stream *st)
{
        if (!st->responded)
                return submit_response(st, st->end_pending && st->out_head == NULL);
        if (st->deferred) {
                st->deferred = false;
                return nghttp2_session_resume_data(st->c->s, st->id) == 0 ? 0 : -1;
        }
        return 0;
}

static struct stream *open_server_stream(struct gs_h2c_conn *c, int32_t stream)
{
        struct stream *st = stream_of(c, stream);
        return st != NULL && !st->client && !st->ended && !st->end_pending ? st : NULL;
}

int gs_h2c_send(struct gs_h2c_conn *c, int32_t stream, const uint8_t *msg, size_t len)
{
        struct stream *st = open_server_stream(c, stream);
        if (st == NULL || enqueue(st, msg, len) < 0)
                return -1;
        return kick(st);
}

int gs_h2c_finish(struct gs_h2c_conn *c, int32_t stream, int status, const char *message)
{
        struct stream *st = open_server_stream(c, stream);
        if (st == NULL)
                return -1;
        st->status = status;
        gs_strlcpy(st->message, message != NULL ? message : "", sizeof(st->message));
        st->end_pending = true;
        return kick(st);
}

int gs_h2c_reply(struct gs_h2c_conn *c, int32_t stream, const uint8_t *msg, size_t len)
{
        if (gs_h2c_send(c, stream, msg, len) < 0) {
                gs_h2c_finish(c, stream, GS_GRPC_INTERNAL, "cannot queue the answer");
                return -1;
        }
        return gs_h2c_finish(c, stream, GS_GRPC_OK, NULL);
}

/* ------------------------------------------------------------------------------------------ */
/* Receiving                                                                                   */

static int on_begin_headers(nghttp2_session *s, const nghttp2_frame *f, void *user)
{
        struct gs_h2c_conn *c = user;
        if (!c->server || f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
                return 0;
        if (c->nstreams >= GS_H2C_MAX_STREAMS)
                return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* RST_STREAM this one */
        struct stream *st = stream_new(c, false);
        if (st == NULL)
                return NGHTTP2_ERR_CALLBACK_FAILURE;
        st->id = f->hd.stream_id;
        st->begun = gs_now_ms();
        if (nghttp2_session_set_stream_user_data(s, st->id, st) != 0) {
                stream_free(st);
                return NGHTTP2_ERR_CALLBACK_FAILURE;
        }
        return 0;
}

static bool is(const uint8_t *a, size_t n, const char *b)
{
        return n == strlen(b) && memcmp(a, b, n) == 0;
}

static void request_header(struct stream *st, const uint8_t *name, size_t nlen, const uint8_t *value, size_t vlen)
{
        if (is(name, nlen, ":path")) {
                st->path_too_long = vlen >= sizeof(st->path);
                if (!st->path_too_long) {
                        memcpy(st->path, value, vlen);
                        st->path[vlen] = '\0';
                }
        } else if (is(name, nlen, ":method")) {
                st->post = is(value, vlen, "POST");
        } else if (is(name, nlen, "content-type")) {
                /* application/grpc, optionally +proto or ;params */
                static const char ct[] = "application/grpc";
                st->grpc = vlen >= sizeof(ct) - 1 && memcmp(value, ct, sizeof(ct) - 1) == 0 &&
                           (vlen == sizeof(ct) - 1 || value[sizeof(ct) - 1] == '+' || value[sizeof(ct) - 1] == ';');
        }
}

static void answer_header(struct stream *st, const uint8_t *name, size_t nlen, const uint8_t *value, size_t vlen)
{
        char v[16];
        if (is(name, nlen, ":status") && vlen < sizeof(v)) {
                memcpy(v, value, vlen);
                v[vlen] = '\0';
                st->http_status = atoi(v);
        } else if (is(name, nlen, "grpc-status") && vlen > 0 && vlen < sizeof(v)) {
                memcpy(v, value, vlen);
                v[vlen] = '\0';
                char *end;
                long x = strtol(v, &end, 10);
                st->grpc_status = *end == '\0' && x >= 0 && x <= 16 ? (int)x : GS_GRPC_UNKNOWN;
        } else if (is(name, nlen, "grpc-message")) {
                gs_grpc_message_decode((const char *)value, vlen, st->grpc_message, sizeof(st->grpc_message));
        }
}

static int on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name, size_t nlen,
                     const uint8_t *value, size_t vlen, uint8_t flags, void *user)
{
        (void)flags;
        struct gs_h2c_conn *c = user;
        if (f->hd.type != NGHTTP2_HEADERS)
                return 0;
        struct stream *st = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
        if (st == NULL)
                return 0;
        st->header_bytes += nlen + vlen + 32;
        if (st->header_bytes > GS_H2C_MAX_HEADERS)
                return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
        if (c->server && f->headers.cat == NGHTTP2_HCAT_REQUEST)
                request_header(st, name, nlen, value, vlen);
        else if (!c->server)
                answer_header(st, name, nlen, value, vlen);
        return 0;
}

static int on_data_chunk(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data, size_t len, void *user)
{
        (void)flags;
        (void)user;
        struct stream *st = nghttp2_session_get_stream_user_data(s, id);
        if (st == NULL || (!st->client && st->dispatched))
                return 0;
        return append_in(st, data, len) < 0 ? NGHTTP2_ERR_CALLBACK_FAILURE : 0;
}

/* A request has ended: check it and hand it to the service. */
static void dispatch(struct gs_h2c_conn *c, struct stream *st)
{
        const uint8_t *msg = NULL;
        size_t len = 0;
        const char *why = NULL;
        int status;
        if (!st->post || !st->grpc) {
                status = GS_GRPC_INTERNAL;
                why = !st->post ? "only POST is served" : "content-type must be application/grpc";
        } else if (st->path_too_long) {
                status = GS_GRPC_UNIMPLEMENTED;
                why = "unknown method";
        } else {
                status = one_message(st, &msg, &len, &why);
        }
        st->dispatched = true;
        if (status != GS_GRPC_OK) {
                gs_log_info("grpc: %s: %s", st->path, why);
                gs_h2c_finish(c, st->id, status, why);
                return;
        }
        c->ops->call(c, st->id, st->path, msg, len, c->ud);
}

static int on_frame_recv(nghttp2_session *s, const nghttp2_frame *f, void *user)
{
        struct gs_h2c_conn *c = user;
        if (!c->server || (f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA) ||
            !(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
                return 0;
        struct stream *st = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
        if (st != NULL && !st->dispatched)
                dispatch(c, st);
        return 0;
}

/* A client call's end: exactly once. */
static void call_done(struct stream *st, int status, const char *why)
{
        if (st->done_called)
                return;
        st->done_called = true;
        const uint8_t *msg = NULL;
        size_t len = 0;
        const char *reason = why;
        if (status < 0) {
                if (st->grpc_status >= 0) {
                        status = st->grpc_status;
                        reason = st->grpc_message;
                } else {
                        status = st->http_status != 0 && st->http_status != 200 ? GS_GRPC_UNAVAILABLE : GS_GRPC_INTERNAL;
                        reason = st->http_status != 0 && st->http_status != 200 ? "HTTP error status"
                                                                                 : "the stream ended without grpc-status";
                }
                if (status == GS_GRPC_OK) {
                        int r = one_message(st, &msg, &len, &reason);
                        if (r != GS_GRPC_OK) {
                                status = r;
                                msg = NULL;
                                len = 0;
                        }
                }
        }
        if (st->done != NULL)
                st->done(st->c, status, reason != NULL ? reason : "", msg, len, st->ud);
}

static int on_stream_close(nghttp2_session *s, int32_t id, uint32_t code, void *user)
{
        (void)code;
        struct gs_h2c_conn *c = user;
        struct stream *st = nghttp2_session_get_stream_user_data(s, id);
        if (st == NULL)
                return 0;
        nghttp2_session_set_stream_user_data(s, id, NULL);
        if (st->client)
                call_done(st, code == NGHTTP2_NO_ERROR || st->grpc_status >= 0 ? -1 : GS_GRPC_UNAVAILABLE,
                          "the stream was reset");
        else if (st->dispatched && c->ops->closed != NULL)
                c->ops->closed(c, id, c->ud);
        stream_free(st);
        return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Connections                                                                                 */

static struct gs_h2c_conn *conn_new(int fd, bool server, struct gs_error *err)
{
        struct gs_h2c_conn *c = calloc(1, sizeof(*c));
        nghttp2_session_callbacks *cb = NULL;
        nghttp2_option *opt = NULL;
        if (c == NULL || nghttp2_session_callbacks_new(&cb) != 0 || nghttp2_option_new(&opt) != 0) {
                gs_error_set(err, GS_ENOMEM, "out of memory");
                goto fail;
        }
        c->fd = fd;
        c->server = server;
        c->last_recv = gs_now_ms();
        if (fd >= 0 && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) {
                gs_error_sys(err, "fcntl");
                goto fail;
        }
        nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
        nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data_chunk);
        nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
        nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
        nghttp2_option_set_max_send_header_block_length(opt, GS_H2C_MAX_HEADERS);
        /* A server takes any :authority: gRPC clients on UNIX sockets send "localhost", the socket's
         * path (grpc-go without WithAuthority) or its escaped form, and nghttp2's HTTP checks refuse
         * a '/' there. What a gRPC request needs (POST, the content-type, a path) is checked here. */
        if (server)
                nghttp2_option_set_no_http_messaging(opt, 1);
        nghttp2_option_set_max_settings(opt, 32);
        nghttp2_option_set_max_outbound_ack(opt, 256);
#ifdef GS_HAVE_NGHTTP2_RESET_LIMIT
        nghttp2_option_set_stream_reset_rate_limit(opt, 256, 32);
#endif
        int r = server ? nghttp2_session_server_new2(&c->s, cb, c, opt) : nghttp2_session_client_new2(&c->s, cb, c, opt);
        if (r != 0) {
                gs_error_set(err, GS_ENOMEM, "nghttp2: %s", nghttp2_strerror(r));
                goto fail;
        }
        nghttp2_settings_entry iv[] = {
                {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, GS_H2C_MAX_STREAMS},
                {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, GS_H2C_MAX_HEADERS},
                {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
        };
        if (nghttp2_submit_settings(c->s, NGHTTP2_FLAG_NONE, iv, server ? 2 : 3) != 0) {
                gs_error_set(err, GS_ENOMEM, "nghttp2: cannot queue SETTINGS");
                goto fail;
        }
        nghttp2_session_callbacks_del(cb);
        nghttp2_option_del(opt);
        return c;
fail:
        nghttp2_session_callbacks_del(cb);
        nghttp2_option_del(opt);
        if (c != NULL && c->s != NULL)
                nghttp2_session_del(c->s);
        free(c);
        return NULL;
}

struct gs_h2c_conn *gs_h2c_server_new(int fd, const struct gs_h2c_server_ops *ops, void *ud, struct gs_error *err)
{
        struct gs_h2c_conn *c = conn_new(fd, true, err);
        if (c != NULL) {
                c->ops = ops;
                c->ud = ud;
        }
        return c;
}

struct gs_h2c_conn *gs_h2c_client_new(int fd, struct gs_error *err)
{
        return conn_new(fd, false, err);
}

void gs_h2c_free(struct gs_h2c_conn *c)
{
        if (c == NULL)
                return;
        while (c->streams != NULL) {
                struct stream *st = c->streams;
                if (c->s != NULL)
                        nghttp2_session_set_stream_user_data(c->s, st->id, NULL);
                if (st->client)
                        call_done(st, GS_GRPC_UNAVAILABLE, "the connection closed");
                else if (st->dispatched && c->ops->closed != NULL)
                        c->ops->closed(c, st->id, c->ud);
                stream_free(st);
        }
        if (c->s != NULL)
                nghttp2_session_del(c->s);
        if (c->fd >= 0)
                close(c->fd);
        free(c->wbuf);
        free(c);
}

int gs_h2c_call(struct gs_h2c_conn *c, const char *path, const uint8_t *msg, size_t len, long long deadline,
                gs_h2c_done_fn done, void *ud, struct gs_error *err)
{
        if (c->server || c->dead)
                return gs_error_set(err, GS_EINVAL, "not a usable client connection");
        struct stream *st = stream_new(c, true);
        if (st == NULL || enqueue(st, msg, len) < 0) {
                if (st != NULL)
                        stream_free(st);
                return gs_error_set(err, GS_ENOMEM, "out of memory (or a message over 4 MiB)");
        }
        st->done = done;
        st->ud = ud;
        st->deadline = deadline;
        st->end_pending = true;
        char timeout[32] = "";
        if (deadline > 0)
                snprintf(timeout, sizeof(timeout), "%lldm", deadline > gs_now_ms() ? deadline - gs_now_ms() : 1);
        nghttp2_nv nv[] = {
                NV(":method", "POST"),           NV(":scheme", "http"),       NV(":path", path),
                NV(":authority", "localhost"),  NV("content-type", "application/grpc"),
                NV("te", "trailers"),            NV("user-agent", "gpuslice/" GS_VERSION_STRING),
                NV("grpc-timeout", timeout),
        };
        nghttp2_data_provider prd = {.source.ptr = st, .read_callback = read_body};
        int32_t id = nghttp2_submit_request(c->s, NULL, nv, GS_ARRAY_SIZE(nv) - (timeout[0] == '\0'), &prd, st);
        if (id < 0) {
                stream_free(st);
                return gs_error_set(err, GS_EINVAL, "nghttp2: %s", nghttp2_strerror(id));
        }
        st->id = id;
        st->responded = true;
        c->calls_made = true;
        return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* I/O                                                                                         */

int gs_h2c_fd(const struct gs_h2c_conn *c)
{
        return c->fd;
}

short gs_h2c_events(const struct gs_h2c_conn *c)
{
        short ev = POLLIN;
        if (c->woff < c->wlen || nghttp2_session_want_write(c->s))
                ev |= POLLOUT;
        return ev;
}

long long gs_h2c_idle_ms(const struct gs_h2c_conn *c, long long now)
{
        return now - c->last_recv;
}

unsigned gs_h2c_nstreams(const struct gs_h2c_conn *c)
{
        return c->nstreams;
}

void gs_h2c_shutdown(struct gs_h2c_conn *c)
{
        if (c->s != NULL && !c->dead)
                nghttp2_session_terminate_session(c->s, NGHTTP2_NO_ERROR);
}

static int feed(struct gs_h2c_conn *c, const uint8_t *data, size_t len)
{
        c->last_recv = gs_now_ms();
        ssize_t r = nghttp2_session_mem_recv(c->s, data, len);
        if (r < 0) {
                gs_log_info("http2: %s: closing the connection", nghttp2_strerror((int)r));
                c->dead = true;
                return -1;
        }
        return 0;
}

/* Write what nghttp2 has to send, as far as the socket takes it (no socket: discard it). */
static int flush(struct gs_h2c_conn *c)
{
        for (;;) {
                while (c->woff < c->wlen) {
                        if (c->fd < 0) {
                                c->woff = c->wlen;
                                break;
                        }
                        ssize_t n = send(c->fd, c->wbuf + c->woff, c->wlen - c->woff, MSG_NOSIGNAL | MSG_DONTWAIT);
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                                return 0;
                        if (n <= 0) {
                                c->dead = true;
                                return -1;
                        }
                        c->woff += (size_t)n;
                }
                c->woff = c->wlen = 0;
                const uint8_t *data;
                ssize_t n = nghttp2_session_mem_send(c->s, &data);
                if (n < 0) {
                        c->dead = true;
                        return -1;
                }
                if (n == 0)
                        return 0;
                if ((size_t)n > c->wcap) {
                        uint8_t *b = realloc(c->wbuf, (size_t)n);
                        if (b == NULL) {
                                c->dead = true;
                                return -1;
                        }
                        c->wbuf = b;
                        c->wcap = (size_t)n;
                }
                memcpy(c->wbuf, data, (size_t)n);
                c->wlen = (size_t)n;
        }
}

static void check_deadlines(struct gs_h2c_conn *c, long long now)
{
        for (struct stream *st = c->streams; st != NULL; st = st->next) {
                if (!st->client && !st->dispatched && !st->ended && now - st->begun > REQUEST_MS) {
                        st->ended = true; /* a request that never ends holds nothing for long */
                        nghttp2_submit_rst_stream(c->s, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_CANCEL);
                }
                if (st->client && !st->done_called && st->deadline > 0 && now >= st->deadline) {
                        call_done(st, GS_GRPC_DEADLINE_EXCEEDED, "deadline exceeded");
                        nghttp2_submit_rst_stream(c->s, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_CANCEL);
                }
        }
}

static bool finished(const struct gs_h2c_conn *c)
{
        if (c->dead || c->eof)
                return true;
        if (c->woff < c->wlen)
                return false;
        if (!nghttp2_session_want_read(c->s) && !nghttp2_session_want_write(c->s))
                return true;
        if (!c->server && c->calls_made) {
                for (const struct stream *st = c->streams; st != NULL; st = st->next)
                        if (!st->done_called)
                                return false;
                return true;
        }
        return false;
}

int gs_h2c_io(struct gs_h2c_conn *c, short revents, long long now)
{
        if (c->fd >= 0 && (revents & (POLLIN | POLLHUP | POLLERR))) {
                uint8_t buf[READ_CHUNK];
                for (int i = 0; i < READS_PER_IO && !c->dead; i++) {
                        ssize_t n = read(c->fd, buf, sizeof(buf));
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                                break;
                        if (n <= 0) {
                                c->eof = true;
                                break;
                        }
                        if (feed(c, buf, (size_t)n) < 0)
                                break;
                }
        }
        check_deadlines(c, now);
        if (!c->dead)
                flush(c);
        return finished(c) ? -1 : 0;
}

int gs_h2c_feed(struct gs_h2c_conn *c, const uint8_t *data, size_t len)
{
        if (c->dead || feed(c, data, len) < 0)
                return -1;
        flush(c);
        return c->dead ? -1 : 0;
}

/* ------------------------------------------------------------------------------------------ */
/* grpc-message                                                                                */

void gs_grpc_message_encode(const char *in, char *out, size_t len)
{
        static const char hex[] = "0123456789ABCDEF";
        size_t o = 0;
        for (const unsigned char *p = (const unsigned char *)in; *p != '\0' && o + 4 <= len; p++) {
                if (*p >= 0x20 && *p <= 0x7e && *p != '%') {
                        out[o++] = (char)*p;
                } else {
                        out[o++] = '%';
                        out[o++] = hex[*p >> 4];
                        out[o++] = hex[*p & 15];
                }
        }
        if (len > 0)
                out[o] = '\0';
}

void gs_grpc_message_decode(const char *in, size_t n, char *out, size_t len)
{
        size_t o = 0;
        for (size_t i = 0; i < n && o + 1 < len; i++) {
                int h, l;
                if (in[i] == '%' && i + 2 < n && (h = gs_hex_digit(in[i + 1])) >= 0 && (l = gs_hex_digit(in[i + 2])) >= 0) {
                        out[o++] = (char)(h << 4 | l);
                        i += 2;
                } else {
                        out[o++] = in[i];
                }
        }
        if (len > 0)
                out[o] = '\0';
}
