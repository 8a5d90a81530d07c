/* A slice's kernel-launch waits: a consistent monotonic histogram and windows (waits.h). */
#include "observe/waits.h"

#include <stdatomic.h>
#include <string.h>

static inline uint64_t sat_add(uint64_t a, uint64_t b)
{
        uint64_t s = a + b;
        return s < a ? UINT64_MAX : s;
}

static inline uint64_t sub0(uint64_t a, uint64_t b)
{
        return a > b ? a - b : 0;
}

static void read_raw(const struct gs_region_dev_counters *c, struct gs_wait_raw *r)
{
        for (unsigned i = 0; i < GS_REGION_WAIT_BUCKETS; i++)
                r->bucket[i] = atomic_load_explicit(&c->wait_bucket[i], memory_order_relaxed);
        r->launches = atomic_load_explicit(&c->launches, memory_order_relaxed);
        r->sum_ns = atomic_load_explicit(&c->wait_sum_ns, memory_order_relaxed);
}

/* The shown histogram from a reading: the first bucket (launches that did not wait, and waits up
 * to the first edge) is launches minus the waits above it, never less than it was shown before. */
static void show(struct gs_wait_hist *h, const struct gs_wait_raw *r)
{
        uint64_t above = 0;
        for (unsigned i = 1; i < GS_REGION_WAIT_BUCKETS; i++)
                above = sat_add(above, r->bucket[i]);
        uint64_t first = sub0(r->launches, above);
        if (first < h->cum[0])
                first = h->cum[0];
        h->cum[0] = first;
        for (unsigned i = 1; i < GS_REGION_WAIT_BUCKETS; i++)
                h->cum[i] = sat_add(h->cum[i - 1], r->bucket[i]);
        h->count = h->cum[GS_REGION_WAIT_BUCKETS - 1];
        h->sum_ns = r->sum_ns;
}

int gs_waits_quantile_bucket(uint64_t launches, const uint64_t bucket[GS_REGION_WAIT_BUCKETS], unsigned percent)
{
        uint64_t waited = 0;
        for (unsigned i = 0; i < GS_REGION_WAIT_BUCKETS; i++)
                waited = sat_add(waited, bucket[i]);
        if (launches < waited)
                launches = waited; /* a reading between a wait and its launch's count */
        if (percent > 100)
                percent = 100;
        /* the rank of the quantile, ceil(launches * percent / 100), in integers (no rounding, no
         * overflow) */
        uint64_t rank = launches / 100 * percent + ((launches % 100) * percent + 99) / 100;
        uint64_t seen = launches - waited;
        if (rank <= seen)
                return -1;
        for (unsigned i = 0; i < GS_REGION_WAIT_BUCKETS; i++) {
                seen = sat_add(seen, bucket[i]);
                if (rank <= seen)
                        return (int)i;
        }
        return GS_REGION_WAIT_BUCKETS - 1;
}

static void close_window(struct gs_wait_window *w, const struct gs_wait_raw *now, const struct gs_wait_raw *then)
{
        uint64_t delta[GS_REGION_WAIT_BUCKETS];
        uint64_t waited = 0;
        for (unsigned i = 0; i < GS_REGION_WAIT_BUCKETS; i++) {
                delta[i] = sub0(now->bucket[i], then->bucket[i]);
                waited = sat_add(waited, delta[i]);
        }
        w->launches = sub0(now->launches, then->launches);
        if (w->launches < waited)
                w->launches = waited;
        w->waited = waited;
        w->sum_ns = sub0(now->sum_ns, then->sum_ns);
        w->p99 = gs_waits_quantile_bucket(w->launches, delta, 99);
}

void gs_waits_update(struct gs_waits *w, const struct gs_region_image *img, uint64_t now_ns, uint64_t window_ns)
{
        if (w->primed && (w->created_ns != img->hdr.created_ns || w->creator != img->hdr.creator_pid ||
                          w->known != img->counters))
                memset(w, 0, sizeof(*w)); /* the file was made anew: another slice's counts */
        w->known = img->counters;
        if (!w->known)
                return;
        unsigned ndev = img->hdr.ndevices <= GS_REGION_MAX_DEVICES ? img->hdr.ndevices : GS_REGION_MAX_DEVICES;
        struct gs_wait_raw raw[GS_REGION_MAX_DEVICES];
        memset(raw, 0, sizeof(raw));
        for (unsigned d = 0; d < ndev; d++) {
                read_raw(&img->ctr.dev[d], &raw[d]);
                show(&w->hist[d], &raw[d]);
        }
        if (!w->primed) {
                w->primed = true;
                w->created_ns = img->hdr.created_ns;
                w->creator = img->hdr.creator_pid;
                w->win_start = now_ns;
                memcpy(w->win_raw, raw, sizeof(raw));
                return;
        }
        uint64_t elapsed = now_ns > w->win_start ? now_ns - w->win_start : 0;
        if (elapsed == 0 || elapsed < window_ns)
                return;
        for (unsigned d = 0; d < ndev; d++)
                close_window(&w->win[d], &raw[d], &w->win_raw[d]);
        w->window_valid = true;
        w->window_ns = elapsed;
        w->win_start = now_ns;
        memcpy(w->win_raw, raw, sizeof(raw));
}
