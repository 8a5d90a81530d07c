/*
 * The GPU arbiter: weighted turns on a GPU between slices (arbiter.h for the files and the idea).
 */
#include "vgpu/arbiter.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/name.h"

#define GS_ARB_MAGIC 0x0200004252415347ull /* "GSARB\0\0\2" little-endian */
#define GS_ARB_QUANTUM_NS 40000000ull      /* a turn while others wait (each hand-over costs the GPU
                                            * some idle time: 20 ms lost 2-3 % of it) */
#define GS_ARB_WANT_NS 2000000ull          /* a slice wants the GPU if it said so this recently */
#define GS_ARB_READ_NS 1000000ull          /* the others' files are read this often while we hold the GPU, */
#define GS_ARB_READ_WANT_NS 200000ull      /* this often by the ticker while we want it, */
#define GS_ARB_READ_WAIT_NS 100000ull      /* and by a launcher waiting for its turn */
#define GS_ARB_LIST_NS 1000000000ull       /* the directory is listed at least this often */
#define GS_ARB_GONE_NS 60000000000ull      /* a slice silent this long is gone: its file is removed */

/* ----------------------------------------------------------------------------------------- */
/* Files                                                                                     */
/* ----------------------------------------------------------------------------------------- */

/* The GPU's directory: opened, or made (sticky and world-writable, as /dev/shm: every slice adds
 * its own file, none can remove another's). */
static int open_gpu_dir(const char *dir, const char *uuid)
{
        char path[512];
        if (snprintf(path, sizeof(path), "%s/gpuslice-gpu-%s", dir, uuid) >= (int)sizeof(path)) {
                errno = ENAMETOOLONG;
                return -1;
        }
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT && (mkdir(path, 01777) == 0 || errno == EEXIST)) {
                fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                struct stat st;
                if (fd >= 0 && fstat(fd, &st) == 0 && st.st_uid == geteuid())
                        fchmod(fd, 01777); /* past the umask */
        }
        return fd;
}

/* Our slice's file: made if missing, sized, mapped. */
static struct gs_arb_rec *map_own(int dirfd, const char *name)
{
        int fd = openat(dirfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return NULL;
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
            ((size_t)st.st_size < sizeof(struct gs_arb_rec) && ftruncate(fd, sizeof(struct gs_arb_rec)) < 0)) {
                close(fd);
                errno = EINVAL;
                return NULL;
        }
        void *p = mmap(NULL, sizeof(struct gs_arb_rec), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (p == MAP_FAILED)
                return NULL;
        struct gs_arb_rec *r = p;
        uint64_t m = atomic_load(&r->magic);
        if (m != GS_ARB_MAGIC) { /* new (or another version's): start level, not holding */
                atomic_store(&r->state, GS_ARB_FREE);
                atomic_store(&r->since, 0);
                atomic_store(&r->until, 0);
                atomic_store(&r->vtime, 0);
                atomic_store(&r->magic, GS_ARB_MAGIC);
        }
        return r;
}

/* Our file was removed (we were silent for a minute: stopped, or idle without ticking): make it
 * again, keeping our virtual time. The old mapping stays: a launching thread may be reading it. */
static void remake_own(struct gs_arb *a)
{
        struct gs_arb_rec *r = map_own(a->dirfd, a->name);
        if (r == NULL)
                return;
        atomic_store(&r->vtime, atomic_load(&a->me->vtime));
        atomic_store(&r->weight, a->weight);
        a->me = r;
}

static void forget_peer(struct gs_arb_peer *p)
{
        if (p->fd >= 0)
                close(p->fd);
        p->fd = -1;
        p->valid = false;
}

/* Another slice's file: a regular file, opened without following links or blocking. */
static int open_peer(int dirfd, const char *name)
{
        int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        struct stat st;
        if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
                close(fd);
                fd = -1;
        }
        return fd;
}

static bool peer_holds(const struct gs_arb_peer *p, uint64_t now);
static bool peer_wants(const struct gs_arb_peer *p, uint64_t now);

/* Files a reader may remove when their slice is gone: those of slices without a name of their own
 * ("x-" and 16 hex digits, from the region). A container's file is the hook's to remove. */
static bool collectable(const char *name)
{
        return strncmp(name, "x-", 2) == 0 && strlen(name) == 18 && strspn(name + 2, "0123456789abcdef") == 16;
}

/* Re-list the directory: keep the peers still there (and their descriptors), add new ones. */
static void list_peers(struct gs_arb *a)
{
        int fd = dup(a->dirfd);
        if (fd < 0)
                return;
        DIR *d = fdopendir(fd);
        if (d == NULL) {
                close(fd);
                return;
        }
        rewinddir(d);
        bool seen[GS_ARB_PEERS] = {false}, self = false;
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
                if (strcmp(e->d_name, a->name) == 0)
                        self = true;
                if (!gs_name_is_safe(e->d_name, GS_ARB_NAME_MAX) || strcmp(e->d_name, a->name) == 0)
                        continue;
                unsigned i = 0;
                while (i < a->npeers && strcmp(a->peer[i].name, e->d_name) != 0)
                        i++;
                if (i == a->npeers) {
                        if (a->npeers == GS_ARB_PEERS)
                                continue; /* more than we read: the first ones listed take part */
                        struct gs_arb_peer *p = &a->peer[a->npeers++];
                        memset(p, 0, sizeof(*p));
                        snprintf(p->name, sizeof(p->name), "%s", e->d_name);
                        p->fd = -1;
                }
                seen[i] = true;
        }
        closedir(d);
        for (unsigned i = 0; i < a->npeers;) { /* gone: drop (the last one takes its place) */
                if (seen[i]) {
                        i++;
                        continue;
                }
                forget_peer(&a->peer[i]);
                a->peer[i] = a->peer[--a->npeers];
                seen[i] = seen[a->npeers];
        }
        if (!self)
                remake_own(a);
}

/* Read every peer's record (pread: a truncated or odd file is a short read, never a fault). */
static void read_peers(struct gs_arb *a, uint64_t now)
{
        struct stat st;
        int64_t mt = fstat(a->dirfd, &st) == 0 ? (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec : 0;
        if (mt != a->dir_mtime_ns || now - a->listed_at > GS_ARB_LIST_NS) {
                a->dir_mtime_ns = mt;
                a->listed_at = now;
                list_peers(a);
        }
        uint64_t read_ns = gs_mono_ns();
        for (unsigned i = 0; i < a->npeers; i++) {
                struct gs_arb_peer *p = &a->peer[i];
                if (p->fd < 0 && (p->fd = open_peer(a->dirfd, p->name)) < 0)
                        continue;
                struct gs_arb_rec r;
                p->valid = pread(p->fd, &r, sizeof(r), 0) == (ssize_t)sizeof(r) && r.magic == GS_ARB_MAGIC &&
                           r.weight > 0 && r.weight <= 10000;
                if (!p->valid)
                        continue;
                /* A record that claims the GPU further ahead than any lease runs (two quanta past
                 * its renewal, a quantum of slack for clock reads) is no peer's: a slice never
                 * writes one. It takes no part in the turns, neither its lease nor its demand.
                 * (Judged on the clock read now: the caller's `now` may be late, after a slow
                 * calibration, and a lease renewed since would look far ahead of it.) */
                if (r.state != GS_ARB_FREE && r.until > read_ns && r.until - read_ns > 3 * GS_ARB_QUANTUM_NS) {
                        p->valid = false;
                        continue;
                }
                p->want_ns = r.want_ns;
                p->vtime = r.vtime;
                p->since = r.since;
                p->until = r.until;
                p->weight = r.weight;
                p->state = r.state;
                p->alive_ns = r.alive_ns;
                if (collectable(p->name) && now > p->alive_ns + GS_ARB_GONE_NS && !peer_holds(p, now) &&
                    unlinkat(a->dirfd, p->name, 0) == 0)
                        forget_peer(p); /* dropped from the table at the next listing */
        }
        bool contended = false;
        for (unsigned i = 0; i < a->npeers && !contended; i++)
                contended = peer_wants(&a->peer[i], now) || peer_holds(&a->peer[i], now);
        atomic_store_explicit(&a->contended, contended, memory_order_relaxed);
        a->read_at = now;
}

int gs_arb_open(struct gs_arb *a, const char *dir, const char *uuid, const char *name, uint32_t weight)
{
        memset(a, 0, sizeof(*a));
        a->dirfd = -1;
        atomic_flag_clear(&a->busy);
        if (weight == 0 || weight > 10000 || !gs_name_is_safe(name, GS_ARB_NAME_MAX)) {
                errno = EINVAL;
                return -1;
        }
        a->dirfd = open_gpu_dir(dir, uuid);
        if (a->dirfd < 0)
                return -1;
        a->me = map_own(a->dirfd, name);
        if (a->me == NULL) {
                int e = errno;
                close(a->dirfd);
                a->dirfd = -1;
                errno = e;
                return -1;
        }
        snprintf(a->name, sizeof(a->name), "%s", name);
        a->weight = weight;
        atomic_store(&a->me->weight, weight);
        return 0;
}

/* ----------------------------------------------------------------------------------------- */
/* Turns                                                                                     */
/* ----------------------------------------------------------------------------------------- */

static bool peer_wants(const struct gs_arb_peer *p, uint64_t now)
{
        return p->valid && now - p->want_ns <= GS_ARB_WANT_NS;
}

/* (A record claiming more than a lease is not valid: read_peers.) */
static bool peer_holds(const struct gs_arb_peer *p, uint64_t now)
{
        return p->valid && p->state != GS_ARB_FREE && p->until > now;
}

/* The least vtime among the other wanting slices (UINT64_MAX if none). */
static uint64_t min_wanting_vtime(const struct gs_arb *a, uint64_t now)
{
        uint64_t min = UINT64_MAX;
        for (unsigned i = 0; i < a->npeers; i++)
                if (peer_wants(&a->peer[i], now) && a->peer[i].vtime < min)
                        min = a->peer[i].vtime;
        return min;
}

/* Are we the wanting slice with the least vtime (ties: the lesser name)? */
static bool my_turn(const struct gs_arb *a, uint64_t now)
{
        uint64_t mine = atomic_load(&a->me->vtime);
        for (unsigned i = 0; i < a->npeers; i++) {
                const struct gs_arb_peer *p = &a->peer[i];
                if (peer_wants(p, now) && (p->vtime < mine || (p->vtime == mine && strcmp(p->name, a->name) < 0)))
                        return false;
        }
        return true;
}

/* Another slice holds the GPU, and took it before us (or at the same instant, with a lesser name). */
static bool held_before_us(const struct gs_arb *a, uint64_t now, bool holding)
{
        uint64_t since = atomic_load(&a->me->since);
        for (unsigned i = 0; i < a->npeers; i++) {
                const struct gs_arb_peer *p = &a->peer[i];
                if (peer_holds(p, now) &&
                    (!holding || p->since < since || (p->since == since && strcmp(p->name, a->name) < 0)))
                        return true;
        }
        return false;
}

static void release(struct gs_arb *a)
{
        atomic_store(&a->me->state, GS_ARB_FREE);
        atomic_store(&a->me->until, 0);
        atomic_store(&a->me->since, 0);
}

static void take(struct gs_arb *a, uint64_t now)
{
        if (held_before_us(a, now, false) || !my_turn(a, now))
                return;
        atomic_store(&a->me->since, now);
        atomic_store(&a->me->until, now + 2 * GS_ARB_QUANTUM_NS);
        atomic_store(&a->me->state, GS_ARB_HOLDING);
}

/* Our slice's lease: renewed, handed over at the end of a quantum, or given up to an earlier
 * holder. */
static void keep_or_hand_over(struct gs_arb *a, uint64_t now, bool wanting, bool idle)
{
        struct gs_arb_rec *me = a->me;
        if (held_before_us(a, now, true)) { /* two took it at once: the later backs off */
                release(a);
                return;
        }
        bool others = min_wanting_vtime(a, now) != UINT64_MAX;
        uint32_t st = atomic_load(&me->state);
        if (st == GS_ARB_HOLDING && others && now - atomic_load(&me->since) > GS_ARB_QUANTUM_NS)
                atomic_store(&me->state, st = GS_ARB_DRAINING);
        /* Idle and alone: keep it (our next launch need not wait for it). */
        if ((!wanting && idle && others) || (st == GS_ARB_DRAINING && idle))
                release(a);
        else
                atomic_store(&me->until, now + 2 * GS_ARB_QUANTUM_NS);
}

void gs_arb_tick(struct gs_arb *a, uint64_t now, bool wanting, uint64_t busy_ns, bool idle)
{
        if (a->me == NULL)
                return;
        if (busy_ns != 0)
                atomic_fetch_add(&a->me->vtime, busy_ns * 10000u / a->weight);
        if (atomic_flag_test_and_set(&a->busy))
                return; /* a waiting launcher is at it */
        bool holding = atomic_load(&a->me->state) != GS_ARB_FREE;
        if (now - a->read_at >= (holding || !wanting ? GS_ARB_READ_NS : GS_ARB_READ_WANT_NS))
                read_peers(a, now);
        struct gs_arb_rec *me = a->me; /* (the listing may have made it again) */
        atomic_store(&me->alive_ns, now);
        if (wanting) {
                /* Back after a pause: no credit for the time we did not want the GPU. */
                if (now - atomic_load(&me->want_ns) > 100 * GS_ARB_WANT_NS) {
                        uint64_t v = min_wanting_vtime(a, now);
                        if (v != UINT64_MAX && atomic_load(&me->vtime) < v)
                                atomic_store(&me->vtime, v);
                }
                atomic_store(&me->want_ns, now);
        }
        if (atomic_load(&me->state) != GS_ARB_FREE && atomic_load(&me->until) <= now)
                release(a); /* expired: its holder (a process of ours) stopped renewing it */
        if (atomic_load(&me->state) != GS_ARB_FREE)
                keep_or_hand_over(a, now, wanting, idle);
        else if (wanting)
                take(a, now);
        atomic_flag_clear(&a->busy);
}

void gs_arb_try_take(struct gs_arb *a, uint64_t now)
{
        if (a->me == NULL || atomic_flag_test_and_set(&a->busy))
                return;
        atomic_store(&a->me->want_ns, now);
        if (now - a->read_at >= GS_ARB_READ_WAIT_NS)
                read_peers(a, now);
        uint32_t st = atomic_load(&a->me->state);
        if (st == GS_ARB_FREE || atomic_load(&a->me->until) <= now)
                take(a, now);
        atomic_flag_clear(&a->busy);
}
