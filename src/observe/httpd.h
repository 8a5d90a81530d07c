/* What the two HTTP endpoints (`gpuslice metrics`, `gpuslice dra-plugin --metrics-listen`) share
 * on top of libmicrohttpd. */
#ifndef GS_OBSERVE_HTTPD_H
#define GS_OBSERVE_HTTPD_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

/* Queue a response of `type`, never cached (and, for 405, the methods allowed: GET, HEAD):
 * `body` is freed by MHD when `owned`, else it must be static. */
enum MHD_Result gs_http_reply(struct MHD_Connection *conn, unsigned status, const char *type, char *body, size_t len,
                              bool owned);

#endif
