/* Whether a daemon listens on a UNIX socket path (header-only, libc only: the interposer uses it). */
#ifndef GS_COMMON_UNIXSOCK_H
#define GS_COMMON_UNIXSOCK_H

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* `dir`/`name` accepts a stream connection, or refuses it only for its type (a live listener of
 * another socket type answers EPROTOTYPE: MPS's control socket does). A socket file left behind by
 * a daemon that quit refuses (ECONNREFUSED). */
static inline bool gs_unix_listens(const char *dir, const char *name)
{
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        if ((size_t)snprintf(a.sun_path, sizeof(a.sun_path), "%s/%s", dir, name) >= sizeof(a.sun_path))
                return false;
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return false;
        bool ok = connect(fd, (const struct sockaddr *)&a, sizeof(a)) == 0 || errno == EPROTOTYPE;
        close(fd);
        return ok;
}

#endif
