/*
 * The GPU arbiter: weighted turns on a GPU between slices (arbiter.h for the file and the idea).
 */
#include "vgpu/arbiter.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define GS_ARB_MAGIC 0x0100004252415347ull /* "GSARB\0\0\1" little-endian */
#define GS_ARB_QUANTUM_NS 20000000ull      /* a turn while others wait */
#define GS_ARB_WANT_NS 2000000ull          /* a slice wants the GPU if it said so this recently */
#define GS_ARB_STALE_NS 10000000000ull     /* a slot silent this long may be taken over */

static uint64_t lease_word(int idx, uint64_t expiry_ns) { return ((uint64_t)(idx + 1) << 48) | (expiry_ns >> 10); }
static int lease_holder(uint64_t l) { return (int)(l >> 48) - 1; }
static uint64_t lease_expiry(uint64_t l) { return (l & ((1ull << 48) - 1)) << 10; }

static int map_file(const char *path, struct gs_arb_file **out)
{
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
        if (fd < 0)
                return -1;
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
            ((size_t)st.st_size < sizeof(struct gs_arb_file) && ftruncate(fd, sizeof(struct gs_arb_file)) < 0) ||
            (size_t)st.st_size > sizeof(struct gs_arb_file)) {
                close(fd);
                return -1;
        }
        if (st.st_uid == geteuid())
                fchmod(fd, 0666); /* other slices (other users, containers) share it */
        void *p = mmap(NULL, sizeof(struct gs_arb_file), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (p == MAP_FAILED)
                return -1;
        struct gs_arb_file *f = p;
        uint64_t zero = 0;
        if (atomic_compare_exchange_strong(&f->magic, &zero, GS_ARB_MAGIC)) {
                f->version = 1;
                f->slots = GS_ARB_SLOTS;
        } else if (zero != GS_ARB_MAGIC) {
                munmap(p, sizeof(*f));
                errno = EINVAL;
                return -1;
        }
        *out = f;
        return 0;
}

/* The least vtime among wanting slices other than `self` (UINT64_MAX if none). */
static uint64_t min_wanting_vtime(const struct gs_arb_file *f, int self, uint64_t now)
{
        uint64_t min = UINT64_MAX;
        for (int i = 0; i < GS_ARB_SLOTS; i++) {
                if (i == self || atomic_load(&f->slot[i].key) == 0 ||
                    now - atomic_load(&f->slot[i].want_ns) > GS_ARB_WANT_NS)
                        continue;
                uint64_t v = atomic_load(&f->slot[i].vtime);
                if (v < min)
                        min = v;
        }
        return min;
}

/* Our slice's slot if another of its processes made it, else a free or stale one: the slot
 * index, or -1. A new slot starts level with the slices that want the GPU now. */
static int claim_slot(struct gs_arb_file *f, uint64_t key, uint64_t now)
{
        for (int i = 0; i < GS_ARB_SLOTS; i++)
                if (atomic_load(&f->slot[i].key) == key)
                        return i;
        for (int i = 0; i < GS_ARB_SLOTS; i++) {
                struct gs_arb_slot *s = &f->slot[i];
                uint64_t k = atomic_load(&s->key);
                if ((k == 0 || now - atomic_load(&s->want_ns) > GS_ARB_STALE_NS) &&
                    atomic_compare_exchange_strong(&s->key, &k, key)) {
                        uint64_t v = min_wanting_vtime(f, i, now);
                        atomic_store(&s->vtime, v == UINT64_MAX ? 0 : v);
                        atomic_store(&s->want_ns, now);
                        return i;
                }
        }
        return -1;
}

static uint64_t mono_now(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int gs_arb_open(struct gs_arb *a, const char *dir, const char *uuid, uint64_t key, uint32_t weight)
{
        memset(a, 0, sizeof(*a));
        a->idx = -1;
        char path[512];
        if (key == 0 || weight == 0 || snprintf(path, sizeof(path), "%s/gpuslice-gpu-%s", dir, uuid) >= (int)sizeof(path) ||
            map_file(path, &a->f) < 0) {
                a->f = NULL;
                return -1;
        }
        a->idx = claim_slot(a->f, key, mono_now());
        if (a->idx < 0) {
                munmap(a->f, sizeof(*a->f));
                a->f = NULL;
                return -1;
        }
        a->key = key;
        a->weight = weight;
        atomic_store(&a->f->slot[a->idx].weight, weight);
        return 0;
}

/* Is `self` the wanting slice with the least vtime (ties: the lower slot)? */
static bool my_turn(const struct gs_arb_file *f, int self, uint64_t now)
{
        uint64_t mine = atomic_load(&f->slot[self].vtime);
        for (int i = 0; i < GS_ARB_SLOTS; i++) {
                if (i == self || atomic_load(&f->slot[i].key) == 0 ||
                    now - atomic_load(&f->slot[i].want_ns) > GS_ARB_WANT_NS)
                        continue;
                uint64_t v = atomic_load(&f->slot[i].vtime);
                if (v < mine || (v == mine && i < self))
                        return false;
        }
        return true;
}

/* Take the lease `l` if it is free or expired and it is our turn. */
static void take(struct gs_arb *a, uint64_t l, uint64_t now)
{
        if ((l == 0 || lease_expiry(l) < now) && my_turn(a->f, a->idx, now) &&
            atomic_compare_exchange_strong(&a->f->lease, &l, lease_word(a->idx, now + 2 * GS_ARB_QUANTUM_NS))) {
                a->since = now;
                __atomic_store_n(&a->draining, false, __ATOMIC_RELAXED);
        }
}

void gs_arb_tick(struct gs_arb *a, uint64_t now, bool wanting, uint64_t busy_ns, bool idle)
{
        if (a->f == NULL)
                return;
        struct gs_arb_file *f = a->f;
        struct gs_arb_slot *me = &f->slot[a->idx];
        if (atomic_load(&me->key) != a->key) { /* taken over while we were silent: take a slot again */
                int idx = claim_slot(f, a->key, now);
                if (idx < 0)
                        return;
                __atomic_store_n(&a->idx, idx, __ATOMIC_RELAXED);
                atomic_store(&f->slot[idx].weight, a->weight);
                me = &f->slot[idx];
        }
        if (busy_ns != 0)
                atomic_fetch_add(&me->vtime, busy_ns * 10000u / a->weight);
        if (wanting) {
                /* Back after a pause: no credit for the time we did not want the GPU. */
                if (now - atomic_load(&me->want_ns) > 100 * GS_ARB_WANT_NS) {
                        uint64_t v = min_wanting_vtime(f, a->idx, now);
                        if (v != UINT64_MAX && atomic_load(&me->vtime) < v)
                                atomic_store(&me->vtime, v);
                }
                atomic_store(&me->want_ns, now);
        }
        uint64_t l = atomic_load(&f->lease);
        if (lease_holder(l) == a->idx) {
                bool others = min_wanting_vtime(f, a->idx, now) != UINT64_MAX;
                if (!a->draining && others && now - a->since > GS_ARB_QUANTUM_NS)
                        __atomic_store_n(&a->draining, true, __ATOMIC_RELAXED);
                /* Idle and alone: keep it (our next launch need not wait for it). */
                if ((!wanting && idle && others) || (a->draining && idle)) {
                        atomic_compare_exchange_strong(&f->lease, &l, 0);
                        __atomic_store_n(&a->draining, false, __ATOMIC_RELAXED);
                } else {
                        atomic_compare_exchange_strong(&f->lease, &l, lease_word(a->idx, now + 2 * GS_ARB_QUANTUM_NS));
                }
                return;
        }
        if (wanting)
                take(a, l, now);
}

void gs_arb_try_take(struct gs_arb *a, uint64_t now)
{
        if (a->f == NULL)
                return;
        atomic_store(&a->f->slot[a->idx].want_ns, now);
        take(a, atomic_load(&a->f->lease), now);
}
