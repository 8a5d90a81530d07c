/* A TCP listener from --listen ADDR:PORT (listen.h): `gpuslice metrics`, the DRA plugin's metrics. */
#include "observe/listen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "common/strutil.h"

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

int gs_listen_open(const char *spec, const struct gs_listen_addr *a, char *addr, size_t addrlen, struct gs_error *err)
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

