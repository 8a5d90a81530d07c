/* A slice's GPU time: per-process increases into a monotonic counter, and windows (busy.h). */
#include "observe/busy.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static void reset(struct gs_busy *b, const struct gs_region_image *img)
{
        struct gs_busy_slot *v = b->v;
        size_t cap = b->cap;
        memset(b, 0, sizeof(*b));
        b->v = v;
        b->cap = cap;
        b->created_ns = img->hdr.created_ns;
        b->creator = img->hdr.creator_pid;
}

/* The previous reading of slot idx, if it was the same process. */
static const struct gs_busy_slot *find_prev(const struct gs_busy *b, size_t *cursor, uint32_t idx, int32_t pid,
                                            uint64_t start)
{
        while (*cursor < b->n && b->v[*cursor].idx < idx)
                (*cursor)++;
        if (*cursor < b->n && b->v[*cursor].idx == idx && b->v[*cursor].pid == pid && b->v[*cursor].start == start)
                return &b->v[*cursor];
        return NULL;
}

/* Count each live process's increase since the last reading into total_ns; next := this reading. */
static void account(struct gs_busy *b, const struct gs_region_image *img, struct gs_busy_slot *next, size_t *nnext)
{
        unsigned ndev = img->hdr.ndevices;
        size_t cursor = 0, k = 0;
        for (unsigned i = 0; i < img->nslots; i++) {
                const struct gs_region_slot *s = &img->slots[i];
                int32_t pid = atomic_load_explicit(&s->pid, memory_order_relaxed);
                if (pid <= 0)
                        continue;
                struct gs_busy_slot *cur = &next[k++];
                memset(cur, 0, sizeof(*cur));
                cur->idx = i;
                cur->pid = pid;
                cur->start = atomic_load_explicit(&s->start_time, memory_order_relaxed);
                const struct gs_busy_slot *prev = find_prev(b, &cursor, i, pid, cur->start);
                for (unsigned d = 0; d < ndev; d++) {
                        cur->busy[d] = atomic_load_explicit(&s->busy_ns[d], memory_order_relaxed);
                        if (!b->primed)
                                continue;
                        /* A new process started since: all of its time is new. The same process
                         * with less time than before re-registered (exec reset its counters). */
                        uint64_t before = prev != NULL && cur->busy[d] >= prev->busy[d] ? prev->busy[d] : 0;
                        uint64_t t = b->total_ns[d] + (cur->busy[d] - before);
                        b->total_ns[d] = t < b->total_ns[d] ? UINT64_MAX : t;
                }
        }
        *nnext = k;
}

int gs_busy_update(struct gs_busy *b, const struct gs_region_image *img, uint64_t now_ns, uint64_t window_ns)
{
        if (b->primed && (b->created_ns != img->hdr.created_ns || b->creator != img->hdr.creator_pid))
                reset(b, img); /* the file was made anew: another slice's accounting */
        size_t need = img->nslots > 0 ? img->nslots : 1;
        struct gs_busy_slot *next = malloc(need * sizeof(*next));
        if (next == NULL)
                return -1;
        size_t n = 0;
        account(b, img, next, &n);
        free(b->v);
        b->v = next;
        b->n = n;
        b->cap = need;
        if (!b->primed) {
                b->primed = true;
                b->created_ns = img->hdr.created_ns;
                b->creator = img->hdr.creator_pid;
                b->win_start = now_ns;
                memcpy(b->win_total, b->total_ns, sizeof(b->win_total));
                return 0;
        }
        uint64_t elapsed = now_ns > b->win_start ? now_ns - b->win_start : 0;
        if (elapsed > 0 && elapsed >= window_ns) {
                for (unsigned d = 0; d < GS_REGION_MAX_DEVICES; d++)
                        b->ratio[d] = (double)(b->total_ns[d] - b->win_total[d]) / (double)elapsed;
                b->ratio_valid = true;
                b->ratio_window_ns = elapsed;
                b->win_start = now_ns;
                memcpy(b->win_total, b->total_ns, sizeof(b->win_total));
        }
        return 0;
}

void gs_busy_release(struct gs_busy *b)
{
        free(b->v);
        memset(b, 0, sizeof(*b));
}
