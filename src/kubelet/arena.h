/*
 * A bump allocator for the protobuf messages the plugin builds (answers are built from many small
 * strings and arrays and freed at once after packing). Allocations are zeroed; a failed one
 * returns NULL and marks the arena failed (gs_k8s_arena_failed), so a builder can check once.
 */
#ifndef GS_KUBELET_ARENA_H
#define GS_KUBELET_ARENA_H

#include <stdbool.h>
#include <stddef.h>

struct gs_k8s_arena_block;

struct gs_k8s_arena {
        struct gs_k8s_arena_block *head;
        bool failed;
};

void *gs_k8s_arena_alloc(struct gs_k8s_arena *a, size_t size);
char *gs_k8s_arena_strdup(struct gs_k8s_arena *a, const char *s);
char *gs_k8s_arena_printf(struct gs_k8s_arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool gs_k8s_arena_failed(const struct gs_k8s_arena *a);
void gs_k8s_arena_free(struct gs_k8s_arena *a);

#endif
