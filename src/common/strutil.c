#include "common/strutil.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"

bool gs_str_has_prefix(const char *s, const char *prefix)
{
        return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool gs_str_has_suffix(const char *s, const char *suffix)
{
        size_t ls = strlen(s), lx = strlen(suffix);
        return ls >= lx && memcmp(s + ls - lx, suffix, lx) == 0;
}

bool gs_strlcpy(char *dst, const char *src, size_t size)
{
        if (size == 0)
                return false;
        size_t n = strnlen(src, size);
        if (n >= size) {
                memcpy(dst, src, size - 1);
                dst[size - 1] = '\0';
                return false;
        }
        memcpy(dst, src, n + 1);
        return true;
}

int gs_parse_uint(const char *s, unsigned long long max, unsigned long long *out)
{
        if (s == NULL || *s == '\0')
                return -1;
        unsigned long long v = 0;
        for (const char *p = s; *p != '\0'; p++) {
                if (*p < '0' || *p > '9')
                        return -1;
                unsigned d = (unsigned)(*p - '0');
                if (v > (max - d) / 10)
                        return -1;
                v = v * 10 + d;
        }
        *out = v;
        return 0;
}

int gs_file_list_add(struct gs_file_list *l, const char *path, unsigned caps, struct gs_error *err)
{
        struct gs_file *v = realloc(l->v, (l->n + 1) * sizeof(*v));
        if (v == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        l->v = v;
        char *copy = strdup(path);
        if (copy == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        l->v[l->n++] = (struct gs_file){.path = copy, .caps = caps};
        return 0;
}

bool gs_file_list_contains(const struct gs_file_list *l, const char *path)
{
        for (size_t i = 0; i < l->n; i++)
                if (strcmp(l->v[i].path, path) == 0)
                        return true;
        return false;
}

void gs_file_list_release(struct gs_file_list *l)
{
        for (size_t i = 0; i < l->n; i++)
                free(l->v[i].path);
        free(l->v);
        l->v = NULL;
        l->n = 0;
}

int gs_hex_digit(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

const char *gs_env_get(char *const *env, size_t nenv, const char *key)
{
        size_t klen = strlen(key);
        const char *v = NULL;
        for (size_t i = 0; i < nenv; i++)
                if (strncmp(env[i], key, klen) == 0 && env[i][klen] == '=')
                        v = env[i] + klen + 1;
        return v;
}
