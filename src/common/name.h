/* One rule for names that become a single path component on the host (a container's slice
 * directory, a slice's arbiter file): [A-Za-z0-9_.+-], 1..max-1 bytes, not "." or "..".
 * Header-only and libc-only: the interposer uses it too. */
#ifndef GS_COMMON_NAME_H
#define GS_COMMON_NAME_H

#include <stdbool.h>
#include <string.h>

static inline bool gs_name_is_safe(const char *s, size_t max)
{
        size_t n = strnlen(s, max);
        if (n == 0 || n >= max || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
                return false;
        return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.+-") == n;
}

#endif
