/*
 * gRPC over HTTP/2 cleartext on a UNIX socket, both ends (nghttp2 for HTTP/2; the gRPC layer here):
 * the device plugin serves the kubelet (unary calls and one server-streaming call, ListAndWatch)
 * and calls it (Register, pod-resources List).
 *
 * gRPC's framing, as its PROTOCOL-HTTP2 document gives it: a request is a POST to
 * /<package>.<Service>/<Method> with content-type application/grpc and te: trailers; each
 * message on the stream is one byte "compressed" (0 here: no compression is offered or accepted),
 * a 4-byte big-endian length, the protobuf bytes; the response is :status 200, the messages, then
 * trailers grpc-status (and grpc-message, percent-encoded). An error before any message is a
 * "trailers-only" response: one HEADERS frame with :status 200 and grpc-status, END_STREAM.
 *
 * Robustness: every message is at most GS_H2C_MAX_MESSAGE bytes (larger: RESOURCE_EXHAUSTED),
 * header blocks at most GS_H2C_MAX_HEADERS bytes (larger: the stream is reset), at most
 * GS_H2C_MAX_STREAMS concurrent streams per connection (SETTINGS_MAX_CONCURRENT_STREAMS), a
 * connection's queued output is bounded by HTTP/2 flow control plus one write buffer, and a
 * malformed frame ends the connection (GOAWAY), never the process. Connections own no thread:
 * the caller polls gs_h2c_fd() for gs_h2c_events() and calls gs_h2c_io().
 *
 * Callbacks run inside gs_h2c_io() / gs_h2c_feed(); they may reply, send and finish streams of
 * the same connection, but must not free it (gs_h2c_io() says when it is finished).
 */
#ifndef GS_KUBELET_H2C_H
#define GS_KUBELET_H2C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gpuslice/gpuslice.h>

#define GS_H2C_MAX_MESSAGE (4u << 20) /* gRPC's default limit for a received message */
#define GS_H2C_MAX_HEADERS (16u << 10)
#define GS_H2C_MAX_STREAMS 64u
#define GS_H2C_MAX_PATH 128u

/* gRPC status codes (grpc/doc/statuscodes.md). */
enum gs_grpc_status {
        GS_GRPC_OK = 0,
        GS_GRPC_CANCELLED = 1,
        GS_GRPC_UNKNOWN = 2,
        GS_GRPC_INVALID_ARGUMENT = 3,
        GS_GRPC_DEADLINE_EXCEEDED = 4,
        GS_GRPC_NOT_FOUND = 5,
        GS_GRPC_RESOURCE_EXHAUSTED = 8,
        GS_GRPC_FAILED_PRECONDITION = 9,
        GS_GRPC_UNIMPLEMENTED = 12,
        GS_GRPC_INTERNAL = 13,
        GS_GRPC_UNAVAILABLE = 14,
};

struct gs_h2c_conn;

/* The server side: `call` gets each complete request (its one message; an empty body is an empty
 * message) and answers with gs_h2c_reply / gs_h2c_fail, or keeps the stream open for a stream of
 * answers (gs_h2c_send ... gs_h2c_finish). `closed` is called for every stream `call` saw, when it
 * ends for any reason (finished, reset by the peer, connection gone). */
struct gs_h2c_server_ops {
        void (*call)(struct gs_h2c_conn *c, int32_t stream, const char *path, const uint8_t *msg, size_t len,
                     void *ud);
        void (*closed)(struct gs_h2c_conn *c, int32_t stream, void *ud);
};

/* A finished client call: status (GS_GRPC_*; UNAVAILABLE when the connection failed,
 * DEADLINE_EXCEEDED at the deadline), the server's grpc-message (decoded, may be ""), and the
 * answer's message (NULL unless status is OK). */
typedef void (*gs_h2c_done_fn)(struct gs_h2c_conn *c, int status, const char *message, const uint8_t *msg,
                               size_t len, void *ud);

/* Take over the connected socket `fd` (made non-blocking; closed by gs_h2c_free). fd -1: no
 * socket, for gs_h2c_feed (the fuzzer): output is discarded. */
struct gs_h2c_conn *gs_h2c_server_new(int fd, const struct gs_h2c_server_ops *ops, void *ud, struct gs_error *err);
struct gs_h2c_conn *gs_h2c_client_new(int fd, struct gs_error *err);
void gs_h2c_free(struct gs_h2c_conn *c);

/* A unary call on a client connection: `done` is called exactly once (also when the connection
 * ends first or at the deadline, gs_now_ms() time; 0 = none). */
int gs_h2c_call(struct gs_h2c_conn *c, const char *path, const uint8_t *msg, size_t len, long long deadline,
                gs_h2c_done_fn done, void *ud, struct gs_error *err);

/* Server answers. gs_h2c_reply: one message, then OK. gs_h2c_send: one message on a stream that
 * stays open; -1 if the stream is gone or already holds more than GS_H2C_MAX_MESSAGE unsent bytes.
 * gs_h2c_finish / gs_h2c_fail: the trailers (status, message) end the stream. */
int gs_h2c_reply(struct gs_h2c_conn *c, int32_t stream, const uint8_t *msg, size_t len);
int gs_h2c_send(struct gs_h2c_conn *c, int32_t stream, const uint8_t *msg, size_t len);
int gs_h2c_finish(struct gs_h2c_conn *c, int32_t stream, int status, const char *message);
#define gs_h2c_fail gs_h2c_finish

/* The socket, and the poll events it waits for (POLLIN, plus POLLOUT while output is pending). */
int gs_h2c_fd(const struct gs_h2c_conn *c);
short gs_h2c_events(const struct gs_h2c_conn *c);
/* Read what is there, process it, write what can be written. 0: go on; -1: the connection is
 * finished (closed by the peer, a protocol error, a write error, a client's calls all done):
 * free it. `now` (gs_now_ms()) ends client calls past their deadline. */
int gs_h2c_io(struct gs_h2c_conn *c, short revents, long long now);
/* Feed bytes as if read from the socket (no socket: the fuzzer, tests). -1: finished. */
int gs_h2c_feed(struct gs_h2c_conn *c, const uint8_t *data, size_t len);
/* Milliseconds since the connection last received anything. */
long long gs_h2c_idle_ms(const struct gs_h2c_conn *c, long long now);
/* Open streams (server: requests not yet ended; client: calls in flight). */
unsigned gs_h2c_nstreams(const struct gs_h2c_conn *c);
/* Send GOAWAY and finish once written. */
void gs_h2c_shutdown(struct gs_h2c_conn *c);

/* Percent-encode a grpc-message (printable ASCII except '%' kept). */
void gs_grpc_message_encode(const char *in, char *out, size_t len);
/* ... and decode (invalid escapes are kept as they are). */
void gs_grpc_message_decode(const char *in, size_t n, char *out, size_t len);

#endif
