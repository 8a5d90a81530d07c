/* __attribute__((cleanup)) helpers: resources are released when the variable goes out of scope. */
#ifndef GS_COMMON_CLEANUP_H
#define GS_COMMON_CLEANUP_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline void gs_freep(void *p) { free(*(void **)p); }
static inline void gs_closep(int *fd)
{
        if (*fd >= 0)
                close(*fd);
}
static inline void gs_fclosep(FILE **f)
{
        if (*f != NULL)
                fclose(*f);
}

#define gs_autofree __attribute__((cleanup(gs_freep)))
#define gs_autoclose __attribute__((cleanup(gs_closep)))
#define gs_autofclose __attribute__((cleanup(gs_fclosep)))

/* Hand a resource out of an auto variable. */
static inline int gs_steal_fd(int *fd)
{
        int r = *fd;
        *fd = -1;
        return r;
}
static inline void *gs_steal_ptr(void *pp)
{
        void **p = pp;
        void *r = *p;
        *p = NULL;
        return r;
}

#define GS_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
