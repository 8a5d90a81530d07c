#include "common/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int gs_error_set(struct gs_error *err, int code, const char *fmt, ...)
{
        if (err == NULL)
                return -1;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
        err->code = code;
        err->sys_errno = 0;
        return -1;
}

int gs_error_sys(struct gs_error *err, const char *fmt, ...)
{
        int saved = errno;
        if (err == NULL)
                return -1;
        char buf[GS_ERRMSG_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        snprintf(err->msg, sizeof(err->msg), "%s: %s", buf, strerror(saved));
        err->code = GS_ESYS;
        err->sys_errno = saved;
        errno = saved;
        return -1;
}

int gs_error_wrap(struct gs_error *err, const char *fmt, ...)
{
        if (err == NULL)
                return -1;
        char prefix[GS_ERRMSG_MAX];
        char old[GS_ERRMSG_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(prefix, sizeof(prefix), fmt, ap);
        va_end(ap);
        memcpy(old, err->msg, sizeof(old));
        old[sizeof(old) - 1] = '\0';
        snprintf(err->msg, sizeof(err->msg), "%s: %s", prefix, old);
        return -1;
}

void gs_error_clear(struct gs_error *err)
{
        if (err != NULL)
                memset(err, 0, sizeof(*err));
}
