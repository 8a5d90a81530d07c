/* One error idiom: functions fill a caller-provided struct gs_error and return -1 / NULL. */
#ifndef GS_COMMON_ERROR_H
#define GS_COMMON_ERROR_H

#include <gpuslice/gpuslice.h>

/* Set code and message (printf-style). Safe with err == NULL. Always returns -1. */
int gs_error_set(struct gs_error *err, int code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
/* Like gs_error_set with code GS_ESYS, appending ": strerror(errno)" and keeping errno. */
int gs_error_sys(struct gs_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prefix an existing message: "<prefix>: <old message>". */
int gs_error_wrap(struct gs_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gs_error_clear(struct gs_error *err);

#endif
