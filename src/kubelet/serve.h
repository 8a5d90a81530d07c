/* What the device plugin and the DRA plugin serve alike: the signals that stop them, their
 * connections' I/O (and when a kubelet connection has been silent long enough to drop). */
#ifndef GS_KUBELET_SERVE_H
#define GS_KUBELET_SERVE_H

#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"
#include "kubelet/h2c.h"

#define GS_K8S_HANDSHAKE_MS 10000  /* a connection silent this long after it opened is dropped */
#define GS_K8S_IDLE_MS 600000      /* a server connection with no stream, silent this long */
#define GS_K8S_CONNS_MAX 64        /* a plugin's connection table at most (gs_k8s_conns_serve) */

/* What changed, for the log: one line per call of `note`. */
typedef void (*gs_k8s_note_fn)(void *ud, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* SIGTERM and SIGINT blocked and read from a signalfd (non-blocking), SIGPIPE ignored: the fd, or
 * -1 with err. */
int gs_k8s_signals_open(struct gs_error *err);

/* Drain the signalfd: the stopping signal read last (SIGTERM or SIGINT), 0 for none. */
unsigned gs_k8s_signals_read(int fd);
/* The same, said: true when a stopping signal came (`note`: "signal N: stopping"). */
bool gs_k8s_signals_stop(int fd, gs_k8s_note_fn note, void *ud);

/* A server connection (opened at `opened`, ms) with no stream open that has been silent past the
 * handshake limit (never heard from) or the idle limit. */
bool gs_k8s_conn_expired(const struct gs_h2c_conn *h, long long opened, long long now);

/* A plugin's connection table: *n entries of `size` bytes (at most GS_K8S_CONNS_MAX), each
 * beginning with its struct gs_h2c_conn * (the plugins' struct gs_k8s_conn, gs_dra_conn). Every
 * connection does its I/O (the first `npoll` with fds[i].revents, those added since with none);
 * one whose I/O ends it, or that `expired` says should go, is removed from the table (the last
 * entry moved into its place) and freed; freeing runs its streams' callbacks, which may add
 * connections: the table is consistent by then. */
void gs_k8s_conns_serve(void *conns, size_t size, unsigned *n, const struct pollfd *fds, unsigned npoll, long long now,
                        bool (*expired)(const void *conn, long long now));

/* A plugin's progress line: formatted, into the debug log, and to `note` (with `ud`) if set. */
void gs_k8s_vnote(void (*note)(void *ud, const char *line), void *ud, const char *fmt, va_list ap)
        __attribute__((format(printf, 3, 0)));

#endif
