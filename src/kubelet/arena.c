/* A bump allocator for built protobuf messages (see arena.h). */
#include "kubelet/arena.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK 16384u

struct gs_k8s_arena_block {
        struct gs_k8s_arena_block *next;
        size_t used, size;
        max_align_t data[];
};

void *gs_k8s_arena_alloc(struct gs_k8s_arena *a, size_t size)
{
        size = (size + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
        struct gs_k8s_arena_block *b = a->head;
        if (size == 0)
                size = sizeof(max_align_t);
        if (b == NULL || b->size - b->used < size) {
                size_t n = size > BLOCK ? size : BLOCK;
                b = malloc(sizeof(*b) + n);
                if (b == NULL) {
                        a->failed = true;
                        return NULL;
                }
                b->next = a->head;
                b->used = 0;
                b->size = n;
                a->head = b;
        }
        void *p = (char *)b->data + b->used;
        b->used += size;
        memset(p, 0, size);
        return p;
}

char *gs_k8s_arena_strdup(struct gs_k8s_arena *a, const char *s)
{
        size_t n = strlen(s) + 1;
        char *p = gs_k8s_arena_alloc(a, n);
        if (p != NULL)
                memcpy(p, s, n);
        return p;
}

char *gs_k8s_arena_printf(struct gs_k8s_arena *a, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(NULL, 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
                a->failed = true;
                return NULL;
        }
        char *p = gs_k8s_arena_alloc(a, (size_t)n + 1);
        if (p == NULL)
                return NULL;
        va_start(ap, fmt);
        vsnprintf(p, (size_t)n + 1, fmt, ap);
        va_end(ap);
        return p;
}

bool gs_k8s_arena_failed(const struct gs_k8s_arena *a)
{
        return a->failed;
}

void gs_k8s_arena_free(struct gs_k8s_arena *a)
{
        for (struct gs_k8s_arena_block *b = a->head, *n; b != NULL; b = n) {
                n = b->next;
                free(b);
        }
        a->head = NULL;
        a->failed = false;
}
