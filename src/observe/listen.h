/* A TCP listener from an ADDR:PORT option (`gpuslice metrics --listen`, `gpuslice dra-plugin
 * --metrics-listen`): the socket is ours, so its errors are exact, port 0 picks a free port, and
 * the bound address is known. */
#ifndef GS_OBSERVE_LISTEN_H
#define GS_OBSERVE_LISTEN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include <gpuslice/gpuslice.h>

/* ADDR:PORT: ":PORT" or "*:PORT" (every address, IPv6 and IPv4 where the host has IPv6),
 * "IPV4:PORT", "[IPV6]:PORT", "HOSTNAME:PORT"; PORT 0..65535 (0: any free port). */
struct gs_listen_addr {
        struct sockaddr_storage ss;
        socklen_t len;
        bool any;
};
int gs_listen_parse(const char *spec, struct gs_listen_addr *out, struct gs_error *err);

/* socket (non-blocking, close-on-exec), bind, listen: the socket, its bound address in `addr`
 * ("127.0.0.1:9394", "[::]:9394"); -1 with err (`spec` names it). */
int gs_listen_open(const char *spec, const struct gs_listen_addr *a, char *addr, size_t addrlen, struct gs_error *err);

#endif
