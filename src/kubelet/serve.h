/* What the device plugin and the DRA plugin serve alike: the signals that stop them, and when a
 * kubelet connection has been silent long enough to drop. */
#ifndef GS_KUBELET_SERVE_H
#define GS_KUBELET_SERVE_H

#include <stdarg.h>
#include <stdbool.h>

#include "common/error.h"
#include "kubelet/h2c.h"

#define GS_K8S_HANDSHAKE_MS 10000  /* a connection silent this long after it opened is dropped */
#define GS_K8S_IDLE_MS 600000      /* a server connection with no stream, silent this long */

/* SIGTERM and SIGINT blocked and read from a signalfd (non-blocking), SIGPIPE ignored: the fd, or
 * -1 with err. */
int gs_k8s_signals_open(struct gs_error *err);

/* Drain the signalfd: the stopping signal read last (SIGTERM or SIGINT), 0 for none. */
unsigned gs_k8s_signals_read(int fd);

/* A server connection (opened at `opened`, ms) with no stream open that has been silent past the
 * handshake limit (never heard from) or the idle limit. */
bool gs_k8s_conn_expired(const struct gs_h2c_conn *h, long long opened, long long now);

/* A plugin's progress line: formatted, into the debug log, and to `note` (with `ud`) if set. */
void gs_k8s_vnote(void (*note)(void *ud, const char *line), void *ud, const char *fmt, va_list ap)
        __attribute__((format(printf, 3, 0)));

#endif
