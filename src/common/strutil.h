/* Small string helpers. */
#ifndef GS_COMMON_STRUTIL_H
#define GS_COMMON_STRUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gpuslice/gpuslice.h>

/* Value of a hex digit (0-9, a-f, A-F), or -1. */
int gs_hex_digit(char c);
bool gs_str_has_prefix(const char *s, const char *prefix);
bool gs_str_has_suffix(const char *s, const char *suffix);
/* Copy with truncation, always NUL-terminated; returns false if truncated. */
bool gs_strlcpy(char *dst, const char *src, size_t size);
/* Parse an unsigned decimal in [0, max]; whole string must be digits. */
int gs_parse_uint(const char *s, unsigned long long max, unsigned long long *out);
/* Value of KEY in a KEY=VALUE list (the last one wins, as execve's consumers read it), or NULL. */
const char *gs_env_get(char *const *env, size_t nenv, const char *key);

/* Append a copy of path (with caps) to a file list. */
int gs_file_list_add(struct gs_file_list *l, const char *path, unsigned caps, struct gs_error *err);
bool gs_file_list_contains(const struct gs_file_list *l, const char *path);
void gs_file_list_release(struct gs_file_list *l);

#endif
