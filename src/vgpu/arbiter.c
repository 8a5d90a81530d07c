/*
 * The GPU arbiter: weighted turns on a GPU between slices (arbiter.h for the files and the idea).
 */
#include "vgpu/arbiter.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/name.h"

#define GS_ARB_MAGIC 0x0300004252415347ull /* "GSARB\0\0\3" little-endian */
#define GS_ARB_QUANTUM_NS 40000000ull      /* a turn while others wait (each hand-over costs the GPU
                                            * some idle time: 20 ms lost 2-3 % of it) */
#define GS_ARB_WANT_NS 2000000ull          /* a slice wants the GPU if it said so this recently; one
                                            * that did not for longer is waking when it wants again */
#define GS_ARB_CUT_SLACK 2000000ull        /* virtual time: a waking cut needs the cutter this far
                                            * below the holder (it stands for a quantum: credit()) */
#define GS_ARB_WINDOW_NS 1000000000ull     /* a share-mode slice is owed its share over this window, */
#define GS_ARB_OWED_SLACK_NS 20000000ull   /* and served first from this much GPU time short of it */
#define GS_ARB_MARGIN_NS GS_ARB_QUANTUM_NS /* a peer may cost us a turn more than its share (judge_peers) */
#define GS_ARB_OWED_GRACE_NS 10000000ull   /* ... through a lapse this long of wanting it beside a
                                            * higher class (a CPU stall of ours or of the other) */
#define GS_ARB_READ_NS 500000ull           /* the others' files are read this often while we hold the GPU, */
#define GS_ARB_READ_WANT_NS 200000ull      /* this often by the ticker while we want it, */
#define GS_ARB_READ_WAIT_NS 100000ull      /* and by a launcher waiting for its turn or for queue room */
#define GS_ARB_LIST_NS 1000000000ull       /* the directory is listed at least this often */
#define GS_ARB_SHARED_NS 1000000000ull     /* a peer that ticked this recently shares the GPU */
#define GS_ARB_PRESENT_NS 50000000ull      /* a slice that ticked this recently is there (a live
                                            * process ticks every 5 ms at least; one that left
                                            * is not, though its record shares the GPU a second) */
#define GS_ARB_GONE_NS 60000000000ull      /* a slice silent this long is gone: its file is removed */
#define GS_ARB_CHARGE_MAX_NS 10000000ull   /* a tick charges the others at most this much (a late one) */
#define GS_ARB_JUDGE_NS 250000000ull       /* a peer is taken for a liar on no less than this much of our wanting the GPU */

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
        /* Alive from the start: a reader collects a slice's file once its last sign of life is a
         * minute old, and a new file's first tick may come after another slice read it. */
        atomic_store(&r->alive_ns, gs_mono_ns());
        uint64_t m = atomic_load(&r->magic);
        if (m != GS_ARB_MAGIC) { /* new (or another version's): start level, not holding */
                atomic_store(&r->state, GS_ARB_FREE);
                atomic_store(&r->since, 0);
                atomic_store(&r->until, 0);
                atomic_store(&r->vtime, 0);
                atomic_store(&r->flags, 0);
                atomic_store(&r->magic, GS_ARB_MAGIC);
        }
        return r;
}

/* Our file was removed (we were silent for a minute: stopped, or idle without ticking; or
 * someone removed it): make it again with all we said in it, a turn we hold included (a turn
 * the others no longer see is one they take too, and the work of both then waits in one queue,
 * charged to both). The old mapping stays: a launching thread may be reading it. */
static void remake_own(struct gs_arb *a)
{
        struct gs_arb_rec *r = map_own(a->dirfd, a->name), *old = a->me;
        if (r == NULL)
                return;
        atomic_store(&r->vtime, atomic_load(&old->vtime));
        atomic_store(&r->want_ns, atomic_load(&old->want_ns));
        atomic_store(&r->got_ns, atomic_load(&old->got_ns));
        atomic_store(&r->flags, atomic_load(&old->flags));
        atomic_store(&r->weight, a->weight);
        atomic_store(&r->prio, a->prio);
        atomic_store(&r->since, atomic_load(&old->since));
        atomic_store(&r->until, atomic_load(&old->until));
        atomic_store(&r->state, atomic_load(&old->state));
        a->me = r;
}

static void forget_peer(struct gs_arb_peer *p)
{
        if (p->bell != NULL)
                munmap(p->bell, sizeof(struct gs_arb_rec));
        p->bell = NULL;
        if (p->fd >= 0)
                close(p->fd);
        p->fd = -1;
        p->valid = false;
}

/* A peer's record mapped for gs_arb_wait_turn's futex alone (NULL: not mapped; the waiter naps). */
static void *map_bell(int fd)
{
        void *m = mmap(NULL, sizeof(struct gs_arb_rec), PROT_READ, MAP_SHARED, fd, 0);
        return m == MAP_FAILED ? NULL : m;
}

/* Another slice's file: a regular file, opened without following links or blocking; its owner in
 * `uid` (may be NULL). */
static int open_peer(int dirfd, const char *name, unsigned *uid)
{
        int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        struct stat st;
        if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
                close(fd);
                fd = -1;
        }
        if (fd >= 0 && uid != NULL)
                *uid = st.st_uid;
        return fd;
}

/* The name of slice `name`'s host record. */
static bool host_name(const char *name, char *out, size_t len)
{
        return snprintf(out, len, GS_ARB_HOST_PREFIX "%s", name) < (int)len;
}

/* Slice `name`'s host record: true when it is a whole one of this version, written by root or by
 * the owner of the slice's own record (`rec_uid`: a slice started on the host by a user is its own
 * host side); `root` says whether root wrote it. */
static bool read_host(int dirfd, const char *name, unsigned rec_uid, struct gs_arb_host *h, bool *root)
{
        char hn[GS_ARB_NAME_MAX + sizeof(GS_ARB_HOST_PREFIX)];
        unsigned uid = 0;
        int fd = host_name(name, hn, sizeof(hn)) ? open_peer(dirfd, hn, &uid) : -1;
        if (fd < 0)
                return false;
        bool ok = (uid == 0 || uid == rec_uid) && pread(fd, h, sizeof(*h), 0) == (ssize_t)sizeof(*h) &&
                  h->magic == GS_ARB_HOST_MAGIC && h->weight >= 1 && h->weight <= 10000 && h->prio <= GS_ARB_PRIO_LOW &&
                  h->mode <= 1;
        close(fd);
        *root = uid == 0;
        return ok;
}

/* Our host record: written where we may (a slice started on the host: its processes are its host
 * side); else (a container: the directory is read-only there, the hook wrote it) read, and what it
 * says is ours too, so that we judge our place in the turns as the others do. */
static void sync_host(struct gs_arb *a)
{
        char hn[GS_ARB_NAME_MAX + sizeof(GS_ARB_HOST_PREFIX)];
        if (!host_name(a->name, hn, sizeof(hn)))
                return;
        struct gs_arb_host h = {.magic = GS_ARB_HOST_MAGIC, .weight = a->weight, .prio = a->prio, .mode = a->guaranteed};
        int fd = openat(a->dirfd, hn, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0644);
        struct stat st;
        bool wrote = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
                     pwrite(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h);
        if (fd >= 0)
                close(fd);
        bool root;
        if (!wrote && read_host(a->dirfd, a->name, (unsigned)geteuid(), &h, &root)) {
                a->weight = h.weight;
                a->prio = h.prio == GS_ARB_PRIO_HIGH && !root ? GS_ARB_PRIO_NORMAL : h.prio;
                a->guaranteed = h.mode == 1;
        }
}
static bool peer_holds(const struct gs_arb_peer *p, uint64_t now);
static bool peer_wants(const struct gs_arb_peer *p, uint64_t now);
/* A slice's place in the order of turns: its class (a share-mode slice owed its share first, then
 * high, normal, low), then its virtual time. */
struct place {
        uint32_t cls;
        uint64_t vtime;
};
static struct place peer_place(const struct gs_arb_peer *p);
static struct place my_place(const struct gs_arb *a);

/* Files a reader may remove when their slice is gone: those of slices without a name of their own
 * ("x-" and 16 hex digits, from the region). A container's file is the hook's to remove. */
static bool collectable(const char *name)
{
        return strncmp(name, "x-", 2) == 0 && strlen(name) == 18 && strspn(name + 2, "0123456789abcdef") == 16;
}

/* A table slot for slice `name`, nothing read of it yet (read_peers opens it). */
static void new_peer(struct gs_arb_peer *p, const char *name)
{
        memset(p, 0, sizeof(*p));
        snprintf(p->name, sizeof(p->name), "%s", name);
        p->fd = -1;
}

/* The time a record in the directory last ticked (0: none, or not a whole record of this
 * version). */
static uint64_t record_alive(int dirfd, const char *name)
{
        int fd = open_peer(dirfd, name, NULL);
        struct gs_arb_rec r;
        bool ok = fd >= 0 && pread(fd, &r, sizeof(r), 0) == (ssize_t)sizeof(r) && r.magic == GS_ARB_MAGIC;
        if (fd >= 0)
                close(fd);
        return ok ? r.alive_ns : 0;
}

/* A full table and a name new to it: the slot of a peer whose record has not ticked for
 * GS_ARB_SHARED_NS (the longest silent of them, not holding the GPU), if the new one's record
 * ticked in that time; else GS_ARB_PEERS. Records linger for GS_ARB_GONE_NS after their slice's
 * last process ended (jobs that come and go leave one each), and "the first listed take part"
 * let them crowd out a slice that had just come: on the simulated GPU the eighth cell of a
 * bench/latency.sh run (80 records in a minute, in hash order on ext4) had two capped batches
 * taking each other for liars and keeping 0.18-0.21 of the GPU for 0.25. (Only while the
 * directory holds more records than the table: a read of each record new to it.) */
static unsigned make_room(struct gs_arb *a, const char *name)
{
        uint64_t now = gs_mono_ns(), t = record_alive(a->dirfd, name);
        if (t == 0 || t + GS_ARB_SHARED_NS <= now || t > now + GS_ARB_SHARED_NS)
                return GS_ARB_PEERS;
        unsigned v = GS_ARB_PEERS;
        for (unsigned i = 0; i < a->npeers; i++) {
                struct gs_arb_peer *p = &a->peer[i];
                if (p->alive_ns == 0 && p->fd < 0) /* (listed, not read yet) */
                        p->alive_ns = record_alive(a->dirfd, p->name);
                if (p->alive_ns + GS_ARB_SHARED_NS < now && !peer_holds(p, now) &&
                    (v == GS_ARB_PEERS || p->alive_ns < a->peer[v].alive_ns))
                        v = i;
        }
        if (v == GS_ARB_PEERS)
                return v;
        forget_peer(&a->peer[v]);
        new_peer(&a->peer[v], name);
        return v;
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
                /* (".host-<name>": a slice's host record, not a slice) */
                if (!gs_name_is_safe(e->d_name, GS_ARB_NAME_MAX) || e->d_name[0] == '.' || strcmp(e->d_name, a->name) == 0)
                        continue;
                unsigned i = 0;
                while (i < a->npeers && strcmp(a->peer[i].name, e->d_name) != 0)
                        i++;
                if (i == a->npeers) {
                        if (a->npeers < GS_ARB_PEERS)
                                new_peer(&a->peer[a->npeers++], e->d_name);
                        else if ((i = make_room(a, e->d_name)) == GS_ARB_PEERS)
                                continue; /* more than we read, and no silent one to make room */
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

static void judge_peers(struct gs_arb *a, uint64_t now);
static void judge_pass(struct gs_arb *a, uint64_t now, bool below);

/* What we believe of a peer's weight, class and mode: its host record's, else (none, or one we do
 * not trust) its record's weight, class normal at best, cap mode. */
static void believe(struct gs_arb_peer *p, const struct gs_arb_rec *r)
{
        if (p->host_ok) {
                p->weight = p->host.weight;
                p->prio = p->host.prio == GS_ARB_PRIO_HIGH && !p->host_root ? GS_ARB_PRIO_NORMAL : p->host.prio;
                p->share = p->host.mode == 1;
        } else {
                p->weight = r->weight;
                p->prio = r->prio < GS_ARB_PRIO_NORMAL ? GS_ARB_PRIO_NORMAL : r->prio > GS_ARB_PRIO_LOW ? GS_ARB_PRIO_LOW : r->prio;
                p->share = false;
        }
}

/* Read every peer's record (pread: a truncated or odd file is a short read, never a fault), and
 * at each listing its host record. */
static void read_peers(struct gs_arb *a, uint64_t now)
{
        struct stat st;
        int64_t mt = fstat(a->dirfd, &st) == 0 ? (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec : 0;
        bool listed = mt != a->dir_mtime_ns || now - a->listed_at > GS_ARB_LIST_NS;
        if (listed) {
                a->dir_mtime_ns = mt;
                a->listed_at = now;
                list_peers(a);
        }
        uint64_t read_ns = gs_mono_ns();
        for (unsigned i = 0; i < a->npeers; i++) {
                struct gs_arb_peer *p = &a->peer[i];
                if (p->fd < 0) {
                        if ((p->fd = open_peer(a->dirfd, p->name, &p->uid)) < 0)
                                continue;
                        p->bell = map_bell(p->fd);
                        p->host_ok = read_host(a->dirfd, p->name, p->uid, &p->host, &p->host_root);
                } else if (listed) {
                        p->host_ok = read_host(a->dirfd, p->name, p->uid, &p->host, &p->host_root);
                }
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
                p->state = r.state;
                p->alive_ns = r.alive_ns;
                p->got_ns = r.got_ns;
                p->flags = r.flags;
                believe(p, &r);
                if (r.state == GS_ARB_FREE || r.until <= now)
                        p->free_seen = now;
                /* (a record never alive is one being made: its maker stores alive_ns first) */
                char hn[GS_ARB_NAME_MAX + sizeof(GS_ARB_HOST_PREFIX)];
                if (collectable(p->name) && p->alive_ns != 0 && now > p->alive_ns + GS_ARB_GONE_NS && !peer_holds(p, now) &&
                    unlinkat(a->dirfd, p->name, 0) == 0) {
                        if (host_name(p->name, hn, sizeof(hn)))
                                unlinkat(a->dirfd, hn, 0);
                        forget_peer(p); /* dropped from the table at the next listing */
                }
        }
        judge_peers(a, now);
        bool contended = false, shared = false, below = false, level = false;
        uint32_t mine = my_place(a).cls;
        for (unsigned i = 0; i < a->npeers; i++) {
                const struct gs_arb_peer *p = &a->peer[i];
                bool here = p->valid && p->alive_ns + GS_ARB_SHARED_NS > now;
                contended |= peer_wants(p, now) || peer_holds(p, now);
                shared |= here;
                below |= (here || peer_wants(p, now) || peer_holds(p, now)) && peer_place(p).cls < mine;
                level |= here && !p->ignored && p->prio == a->prio;
        }
        atomic_store_explicit(&a->level, level, memory_order_relaxed);
        judge_pass(a, now, below);
        atomic_store_explicit(&a->contended, contended, memory_order_relaxed);
        atomic_store_explicit(&a->shared, shared || contended, memory_order_relaxed);
        atomic_store_explicit(&a->below, below, memory_order_relaxed);
        a->read_at = now;
}

void gs_arb_reserve_fds(void)
{
        struct rlimit rl;
        rlim_t n = GS_ARB_FDS;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < n)
                n = rl.rlim_cur;
        int fd = open("/", O_PATH | O_CLOEXEC);
        if (fd < 0 || n < 2) {
                if (fd >= 0)
                        close(fd);
                return;
        }
        /* (the lowest free descriptor at or above n - 1: never one the process uses) */
        int high = fcntl(fd, F_DUPFD_CLOEXEC, (int)(n - 1));
        if (high >= 0)
                close(high);
        close(fd);
}

int gs_arb_open(struct gs_arb *a, const char *dir, const char *uuid, const char *name, uint32_t weight, uint32_t prio,
                bool guaranteed)
{
        memset(a, 0, sizeof(*a));
        a->dirfd = -1;
        atomic_flag_clear(&a->busy);
        if (weight == 0 || weight > 10000 || prio > GS_ARB_PRIO_LOW || !gs_name_is_safe(name, GS_ARB_NAME_MAX) ||
            name[0] == '.') {
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
        a->prio = prio;
        a->guaranteed = guaranteed;
        sync_host(a);
        atomic_store(&a->me->weight, a->weight);
        atomic_store(&a->me->prio, a->prio);
        return 0;
}

/* ----------------------------------------------------------------------------------------- */
/* Turns                                                                                     */
/* ----------------------------------------------------------------------------------------- */

/* (An ignored peer neither wants nor holds the GPU for us: judge_peers.) */
static bool peer_wants(const struct gs_arb_peer *p, uint64_t now)
{
        return p->valid && !p->ignored && now - p->want_ns <= GS_ARB_WANT_NS;
}

/* (A record claiming more than a lease is not valid: read_peers.) */
static bool peer_holds(const struct gs_arb_peer *p, uint64_t now)
{
        return p->valid && !p->ignored && p->state != GS_ARB_FREE && p->until > now;
}

/* (Its class and owed as we believe them: believe(), judge_peers(); its virtual time as it says.) */
static struct place peer_place(const struct gs_arb_peer *p)
{
        return (struct place){p->owed ? 0 : p->prio + 1, p->vtime};
}

static struct place my_place(const struct gs_arb *a)
{
        return (struct place){(atomic_load(&a->me->flags) & GS_ARB_OWED) ? 0 : a->prio + 1, atomic_load(&a->me->vtime)};
}

/* a is before b (a higher class, or the same class and less virtual time); 0 for a tie. */
static int before(struct place a, struct place b)
{
        if (a.cls != b.cls)
                return a.cls < b.cls ? 1 : -1;
        return a.vtime < b.vtime ? 1 : a.vtime > b.vtime ? -1 : 0;
}

/* a is ahead of b in line (a better place, or the same and the lesser name) */
static bool ahead_of(struct place a, const char *an, struct place b, const char *bn)
{
        int o = before(a, b);
        return o > 0 || (o == 0 && strcmp(an, bn) < 0);
}

/* A slice's credit when it wakes: at most a quantum of its own GPU time behind the others. */
static uint64_t credit(uint32_t weight)
{
        return GS_ARB_QUANTUM_NS * 10000u / weight;
}

/* Two places compared by virtual time for cuts: the same class, or high and a share-mode slice
 * owed its share (it goes first at hand-overs, but a waking high slice that used less than its
 * share may still cut its turn: a slice that asks for little stays served within about a kernel
 * whatever the guarantees of the others). */
static bool peers(struct place a, struct place b)
{
        return a.cls == b.cls || (a.cls <= GS_ARB_PRIO_HIGH + 1 && b.cls <= GS_ARB_PRIO_HIGH + 1);
}

/* A cut of `holder`'s turn by `cutter` (of weight `weight`) stands while the cutter is of a higher
 * class, or of the same class and has not got more than a quantum of its own GPU time ahead of
 * the holder (a cut turn is a turn: what the cutter's work waited behind the holder's last
 * kernels is charged to it too, and must not end its turn before its work is done). The holder
 * and the cutter judge it alike (each from its own record and the other's last one). */
static bool cut_stands(struct place cutter, uint32_t weight, struct place holder)
{
        if (!peers(cutter, holder))
                return cutter.cls < holder.cls;
        uint64_t c = credit(weight);
        return cutter.vtime < (holder.vtime > UINT64_MAX - c ? UINT64_MAX : holder.vtime + c);
}

/* Light, for the place of a slice that wakes: a light slice (a request client, back from a pause
 * or between requests) goes ahead of the slices of its class it finds when it joins (note_want),
 * past a slice of its class that is not light and waits in line (my_turn), and may cut the turn
 * of one that holds the GPU (may_cut_as_peer). Each serves a request that comes while a batch
 * holds the GPU within about a kernel (vgpu_latency_pause, vgpu_latency_capchurn). */
static bool light_waker(const struct gs_arb *a)
{
        return atomic_load(&a->light);
}

/* May a waking slice at `mine` (of weight `weight`) cut the turn of a slice at `h`? Of its class
 * (or high beside an owed slice: peers()) when it is the cut slack below in virtual time: it used
 * less than its share. A light one (`light`: light_waker) may also cut the turn of a slice of its
 * class that is not light (`h_light`: its record's flag) wherever the cut would stand: it is at
 * most a quantum of its own GPU time ahead of that slice (cut_stands, which the holder applies
 * alike). A waking slice's virtual time is raised to a quantum's credit behind the least of those
 * that *want* the GPU; beside capped batches, one of them paused for its budget (wanting nothing
 * at that moment, and often far behind the others: it joined later) was left below the client,
 * and each of its turns then kept the client's requests waiting until it had received the few
 * milliseconds of GPU time between them (on the H200, p99 in the same call: coop cap 8.1-8.4 ->
 * 2.2-2.3 ms, two cap 5.7-11.0 -> 3.4-3.5, two share 4.8-6.0 -> 3.6-3.8, its longest request 42.6 ->
 * 5.7; bench/RESULTS.md, twenty-third session). Over a window nothing changes: the cut
 * stands only while the cutter is at most that quantum ahead, and a slice is light only while its
 * recent use is under its share (from three quarters of it; it stays light up to twice it, in
 * short requests: the limiter's judge). */
static bool may_cut_as_peer(struct place mine, uint32_t weight, bool light, struct place h, bool h_light, bool waking)
{
        if (!peers(mine, h) || !waking)
                return false;
        if (mine.vtime < h.vtime && h.vtime - mine.vtime > GS_ARB_CUT_SLACK)
                return true;
        return light && mine.cls == h.cls && !h_light && cut_stands(mine, weight, h);
}

/* Are we the wanting slice first in order (ties: the lesser name)? A waking slice is also before
 * one it may cut (a high slice that asks for little, beside a slice owed its share that wants the
 * GPU: that one is ahead in line, but a request of ours waited behind its turn for up to a quantum:
 * coop's high client on the H200, 4-27 ms beside a new low batch process short of its share), and
 * a light one that wakes before one of its class that is not light and waits without holding the
 * GPU (a batch slice that had just joined, less virtual time than a request client, waited for
 * the holder's quantum ahead of it, and the client's request with it: two share on the H200, p99
 * 11-35 ms; a liar that says it is light only keeps its own place). */
static bool my_turn(const struct gs_arb *a, uint64_t now, bool waking)
{
        struct place mine = my_place(a);
        bool light = waking && light_waker(a);
        for (unsigned i = 0; i < a->npeers; i++) {
                const struct gs_arb_peer *p = &a->peer[i];
                struct place pp = peer_place(p);
                if (peer_wants(p, now) && ahead_of(pp, p->name, mine, a->name) &&
                    !may_cut_as_peer(mine, a->weight, light, pp, p->flags & GS_ARB_LIGHT, waking) &&
                    !(light && pp.cls == mine.cls && !(p->flags & GS_ARB_LIGHT) && !peer_holds(p, now)))
                        return false;
        }
        return true;
}

/* May we cut the turn of every slice that holds the GPU now? A slice of a higher class than the
 * holder may; one of its class (or high beside an owed slice: peers()) may when it wakes and is
 * the slack below the holder in virtual time (it used less than its share). */
static bool may_cut_all(const struct gs_arb *a, uint64_t now, bool waking)
{
        struct place mine = my_place(a);
        bool light = waking && light_waker(a), any = false;
        for (unsigned i = 0; i < a->npeers; i++) {
                const struct gs_arb_peer *p = &a->peer[i];
                if (!peer_holds(p, now))
                        continue;
                struct place h = peer_place(p);
                bool ok = (!peers(mine, h) && mine.cls < h.cls) ||
                          may_cut_as_peer(mine, a->weight, light, h, p->flags & GS_ARB_LIGHT, waking);
                if (!ok)
                        return false;
                any = true;
        }
        return any;
}

static bool anyone_holds(const struct gs_arb *a, uint64_t now)
{
        for (unsigned i = 0; i < a->npeers; i++)
                if (peer_holds(&a->peer[i], now))
                        return true;
        return false;
}

/* While we hold: must we give the GPU up to another holder? Two holders at once are either a
 * race (both took it within a refresh: the later one backs off, then the greater name) or a cut
 * (the later one took it from the earlier: the earlier one backs off while the cut stands). */
enum { KEEP, YIELD_RACE, YIELD_CUT };
static int yield_to_holder(const struct gs_arb *a, uint64_t now)
{
        uint64_t since = atomic_load(&a->me->since);
        struct place mine = my_place(a);
        bool cutting = atomic_load(&a->me->flags) & GS_ARB_CUT;
        for (unsigned i = 0; i < a->npeers; i++) {
                const struct gs_arb_peer *p = &a->peer[i];
                if (!peer_holds(p, now))
                        continue;
                struct place e = peer_place(p);
                /* (a holder we saw free after we took the GPU took it after us, whatever it says) */
                bool earlier = (p->since < since || (p->since == since && strcmp(p->name, a->name) < 0)) &&
                               p->free_seen <= since;
                if (earlier && !cutting)
                        return YIELD_RACE;
                if (earlier ? !cut_stands(mine, a->weight, e) : ((p->flags & GS_ARB_CUT) && cut_stands(e, p->weight, mine)))
                        return YIELD_CUT;
        }
        return KEEP;
}

static void note(const struct gs_arb *a, const char *what)
{
        if (a->note != NULL)
                a->note(a, what);
}

/* Our turn ends: the launchers of other slices waiting for it wake now (gs_arb_wait_turn), not
 * at their next look, a nap of 0.1 ms later. Among eight equal latency slices on the H200 each
 * hand-over left the GPU idle 0.28-0.35 ms at the median (the switch between contexts 0.14 of
 * it), and their 1400 a second 41-42 % of the time; woken, 0.18-0.23 ms and 39 % (share mode;
 * cap mode's hand-overs wait for the budget too, and stayed at 0.36-0.38). One system call, at a
 * turn's end only. */
static void release(struct gs_arb *a)
{
        atomic_store(&a->me->state, GS_ARB_FREE);
        atomic_store(&a->me->until, 0);
        atomic_store(&a->me->since, 0);
        atomic_fetch_and(&a->me->flags, ~GS_ARB_CUT);
        syscall(SYS_futex, (uint32_t *)&a->me->state, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* Give the GPU up to another holder: after a race we are as waking as we were when we took it;
 * after a cut (ours ran out, or another slice cut our turn) we are not. */
static void yield(struct gs_arb *a, int why)
{
        note(a, why == YIELD_RACE ? "yield: another slice took the GPU at the same time" : "yield: our turn was cut");
        release(a);
        if (why == YIELD_RACE)
                a->woke = a->woke_taken;
}

/* Take the GPU: when nobody holds it and it is our turn, or by cutting the holder's turn. */
static void take(struct gs_arb *a, uint64_t now, bool waking)
{
        if (!my_turn(a, now, waking))
                return;
        bool cut = false;
        if (anyone_holds(a, now)) {
                if (!may_cut_all(a, now, waking))
                        return;
                cut = true;
        }
        if (cut)
                atomic_fetch_or(&a->me->flags, GS_ARB_CUT);
        else
                atomic_fetch_and(&a->me->flags, ~GS_ARB_CUT);
        atomic_store(&a->me->since, now);
        atomic_store(&a->me->until, now + 2 * GS_ARB_QUANTUM_NS);
        atomic_store(&a->me->state, GS_ARB_HOLDING);
        a->taken_since = now;
        a->woke_taken = waking;
        a->woke = false;
        if (cut)
                atomic_fetch_add_explicit(&a->cuts, 1, memory_order_relaxed);
        note(a, cut ? "take: cut the holder's turn" : waking ? "take: waking" : "take");
}

/* Our slice's lease: renewed, handed over at the end of a quantum or when our work ran out while
 * others want the GPU, or given up to another holder (a cut, or a race). */
static void keep_or_hand_over(struct gs_arb *a, uint64_t now, bool wanting, bool idle, bool quiet)
{
        struct gs_arb_rec *me = a->me;
        int why = yield_to_holder(a, now);
        if (why != KEEP) {
                yield(a, why);
                return;
        }
        bool others = false;
        for (unsigned i = 0; i < a->npeers && !others; i++)
                others = peer_wants(&a->peer[i], now);
        /* (a launcher's take may be later than our `now`) */
        uint64_t since = atomic_load(&me->since), held = since < now ? now - since : 0;
        uint32_t st = atomic_load(&me->state);
        if (st == GS_ARB_HOLDING && others && held > GS_ARB_QUANTUM_NS)
                atomic_store(&me->state, st = GS_ARB_DRAINING);
        /* Out of work while others want the GPU: theirs (our next work wakes us: it may cut their
         * turn). Idle and alone: keep it (our next launch need not wait for it). Not a turn taken
         * after `now`: what the caller judged of our work (idle, quiet) was judged before a
         * launcher took it, its launch on the way (handed over then, the holder whose turn it cut,
         * not having looked yet, never saw the cut, and its next kernel ran between a latency
         * client's first two: 0.2-0.6 % of the requests on the H200). */
        bool judged = since <= now;
        /* Quiet beside another slice that may want the GPU any moment (it is there: ticked in
         * the last 50 ms, not one that left a moment ago): hand over too, before it asks. Its request then takes a free GPU at once; kept,
         * the turn went to it only when our ticker, napping 5 ms while we are quiet, next looked
         * (the request waited for a turn we did not use: two latency clients at 50 % each, p99
         * 4.6 x their p99 without slicing on the simulated GPU). Our own next launch takes the GPU
         * back through the gate (a read of the records: microseconds) or waits its turn. */
        bool near = false;
        for (unsigned i = 0; i < a->npeers && !near; i++) {
                const struct gs_arb_peer *p = &a->peer[i];
                near = p->valid && !p->ignored && p->alive_ns + GS_ARB_PRESENT_NS > now;
        }
        if (((others && (quiet || (!wanting && idle))) || (near && quiet)) && judged) {
                note(a, quiet ? "hand over: quiet" : "hand over: out of work");
                release(a);
                /* (out of budget is no want of work: our next demand is no waking, and cuts
                 * nobody's turn; it did at the second look after each of a capped slice's pauses) */
                a->woke = !a->held_back;
        } else if (st == GS_ARB_DRAINING && idle && judged) {
                note(a, "hand over: end of the quantum");
                release(a);
        } else {
                atomic_store(&me->until, now + 2 * GS_ARB_QUANTUM_NS);
        }
}

/* The least virtual time of the others that want or hold the GPU, and of those there (ticked in
 * the last GS_ARB_PRESENT_NS), among those of our class where any is (else among all: a class
 * alone, as a high latency client beside batches, keeps its virtual time level with theirs, which
 * the cuts between it and a slice owed its share compare). A class's virtual time orders its own
 * turns: placed by a high slice's (a latency client's, a quantum's credit behind the low batches
 * from its last request), each new low batch process of coop's shape came a quantum of GPU time
 * ahead of the low batches there and took it from them. */
#define GS_ARB_VTIME_SANE (1ull << 62) /* no slice's virtual time gets here (GPU time / share: 146
                                        * years of it at a whole GPU's share, 1.5 at 1 %) */
struct place_least {
        uint64_t wanting, there;
};
static struct place_least least_of_others(const struct gs_arb *a, uint64_t now)
{
        struct place_least ours = {UINT64_MAX, UINT64_MAX}, other = {UINT64_MAX, UINT64_MAX};
        for (unsigned i = 0; i < a->npeers; i++) {
                const struct gs_arb_peer *p = &a->peer[i];
                /* (a record's virtual time is its own to write: one no slice reaches places nobody;
                 * followed, a joiner's virtual time went there and wrapped at its next GPU time,
                 * to first in line among the honest slices of its class) */
                if (p->vtime >= GS_ARB_VTIME_SANE)
                        continue;
                struct place_least *l = p->prio == a->prio ? &ours : &other;
                bool wants = peer_wants(p, now) || peer_holds(p, now);
                bool there = p->valid && !p->ignored && p->alive_ns + GS_ARB_PRESENT_NS > now;
                if (wants && p->vtime < l->wanting)
                        l->wanting = p->vtime;
                if (there && p->vtime < l->there)
                        l->there = p->vtime;
        }
        if (ours.wanting == UINT64_MAX)
                ours.wanting = other.wanting;
        if (ours.there == UINT64_MAX)
                ours.there = other.there;
        return ours;
}

/* We want the GPU: note it. A slice that did not want it for a while, or that gave up its last
 * turn for want of work, is waking: it gets no credit
 * for the time it did not want the GPU beyond a quantum of its own (its virtual time is raised
 * to that far behind the least of the others that want or hold it). Returns `waking`. "Did not
 * want it" is what our ticker saw after our last demand, not the age of that demand alone: a
 * slice whose threads were all kept off a CPU for GS_ARB_WANT_NS (a loaded machine) wanted the GPU
 * all along, and taken for waking it got a quantum of credit and cut the holder's turn: a batch
 * slice took a turn more than its share, and its neighbours, short of theirs, took it for a liar
 * (eight share-12 slices in CI's sanitizer build). */
static bool note_want(struct gs_arb *a, uint64_t now)
{
        struct gs_arb_rec *me = a->me;
        /* (a pause for our own budget is no waking: a capped slice that cut a turn at each refill
         * would pay for the holder's queued kernels at each) */
        uint64_t last = atomic_load(&me->want_ns);
        /* (since our last demand: none when a launcher noted one after the clock read of ours,
         * `now` a ticker's; as a wrap, ~2^64 ns, a slice there all along "joined" at such ticks) */
        uint64_t ago = now > last ? now - last : 0;
        bool waking = ((ago > GS_ARB_WANT_NS && a->unwanted_at > last) || a->woke) && !a->held_back;
        /* (joining: a new record, or back after more than GS_ARB_SHARED_NS; also where its budget
         * held it back: a new slice's budget starts empty) */
        bool joining = last == 0 || ago > GS_ARB_SHARED_NS;
        a->held_back = false;
        if (a->want_began <= a->unwanted_at) /* (our first demand since the ticker saw none) */
                a->want_began = now;
        if (waking || joining) {
                struct place_least least = least_of_others(a, now);
                uint64_t c = credit(a->weight), v = atomic_load(&me->vtime);
                if (waking && least.wanting != UINT64_MAX && least.wanting > c && v < least.wanting - c) {
                        atomic_store(&me->vtime, v = least.wanting - c);
                        note(a, "wake: a quantum's credit behind the least");
                }
                /* A slice that joins gets no credit for the time it was not there: it goes just
                 * behind the least of the slices of its class that are there (least_of_others:
                 * ticked in the last 50 ms, not one that just left, whose record lingers; twice
                 * the cut slack, so that any of them that wakes may cut its turn). With a quantum of credit below the least of
                 * those *wanting* the GPU, a joiner went below a latency slice (which then could
                 * not cut its turns), or to virtual time 0 while that slice was between requests:
                 * each of its turns ran a whole quantum against the waiting requests. A light
                 * slice (a service back from a pause of a second or more, its request a moment's
                 * work) goes as far ahead of them instead, so that it may cut the turn it finds:
                 * behind, it waited for the rest of a batch's turn (42 ms on the H200). */
                uint64_t here = least.there;
                uint64_t at = !light_waker(a) ? here + 2 * GS_ARB_CUT_SLACK
                              : here > 2 * GS_ARB_CUT_SLACK ? here - 2 * GS_ARB_CUT_SLACK : 0;
                if (joining && here != UINT64_MAX && here < UINT64_MAX - 2 * GS_ARB_CUT_SLACK && v < at)
                        atomic_store(&me->vtime, at);
                if (joining)
                        note(a, "join");
        }
        if (now > last)
                atomic_store(&me->want_ns, now);
        return waking;
}

/* The time since our tick at `last` that we wanted the GPU began at the later of that tick and our
 * first demand since the ticker last saw none (a launcher's, or this tick's). A tick judges our
 * demand now, not along the whole time since the last one: the ticker naps 5 ms while nothing of
 * ours happens (a request's launcher that waits for a turn does not wake it), and a capped slice
 * waits for its own budget wanting nothing (the limiter), the ticker napping. Counted from the
 * tick before, that nap was time we "wanted" the GPU and the others kept us from it: a capped
 * slice, its budget spent at each few requests, was short of its share by its own cap and charged
 * its peers the naps (judge_peers: eight equal cap-12 latency clients on the H200 took each other
 * for liars, 59-65 times in 5 s; share mode, borrowing, none). */
static uint64_t wanted_from(const struct gs_arb *a, uint64_t last)
{
        return a->want_began > last ? a->want_began : last;
}

/* A cumulative count's part over the window: since its value at the window's oldest step. */
static uint64_t in_window(uint64_t total, uint64_t then)
{
        return total > then ? total - then : 0;
}

/* A share-mode slice is owed its share while a slice of a higher class takes turns: over the
 * last window, the GPU time the slice got (`got_total`: every process of it) against its share of
 * the time it wanted the GPU (this process's view). It is served as high from
 * GS_ARB_OWED_SLACK_NS short of that until it has it all, also through a lapse of up to
 * GS_ARB_OWED_GRACE_NS in its wanting the GPU beside a higher class. (Dropped at the first tick
 * that saw no demand of ours, or none of the higher class, within GS_ARB_WANT_NS, as on a loaded
 * machine each of the two threads that refresh it may be kept off a CPU for longer, the flag went
 * off in the middle of the owed turn; the higher slice then cut that turn by class, and a low
 * share-30 slice beside a high one got 0.22 of the GPU in CI's sanitizer build.) */
static void judge_owed(struct gs_arb *a, uint64_t now, bool wanting, uint64_t got_total)
{
        struct gs_arb_rec *me = a->me;
        uint64_t from = wanted_from(a, a->win_tick);
        if (a->win_tick != 0 && wanting && now > from) {
                a->win_want += now - from;
                /* (as charge() sees it: before a hand-over; launching beside the turns is holding) */
                if (atomic_load(&me->state) != GS_ARB_FREE || atomic_load(&a->pass))
                        a->win_hold += now - from;
        }
        a->win_tick = now;
        if (now - a->win_at >= GS_ARB_WINDOW_NS / GS_ARB_BUCKETS) {
                if (a->win_at == 0) /* the first step: the whole window starts here */
                        for (unsigned i = 0; i < GS_ARB_BUCKETS; i++) {
                                a->win_got[i] = got_total, a->win_wanted[i] = a->win_want, a->win_held[i] = a->win_hold;
                                for (unsigned k = 0; k < a->npeers; k++)
                                        a->peer[k].win_ch[i] = a->peer[k].charged, a->peer[k].win_ah[i] = a->peer[k].ahead;
                        }
                a->win_at = now;
                a->win_i = (a->win_i + 1) % GS_ARB_BUCKETS;
                a->win_got[a->win_i] = got_total;
                a->win_wanted[a->win_i] = a->win_want;
                a->win_held[a->win_i] = a->win_hold;
                for (unsigned k = 0; k < a->npeers; k++)
                        a->peer[k].win_ch[a->win_i] = a->peer[k].charged, a->peer[k].win_ah[a->win_i] = a->peer[k].ahead;
        }
        bool higher = false;
        for (unsigned i = 0; i < a->npeers && !higher; i++) { /* (one we ignore too: judge_peers) */
                struct gs_arb_peer p = a->peer[i];
                p.ignored = false;
                higher = p.prio < a->prio && (peer_wants(&p, now) || peer_holds(&p, now));
        }
        unsigned oldest = (a->win_i + 1) % GS_ARB_BUCKETS;
        /* (a process of the slice that ended takes its GPU time with it: never below zero) */
        uint64_t got = in_window(got_total, a->win_got[oldest]);
        uint64_t owed = (a->win_want - a->win_wanted[oldest]) / 10000u * a->weight;
        uint64_t held = a->win_hold - a->win_held[oldest];
        a->short_of_share = (got > held ? got : held) + GS_ARB_OWED_SLACK_NS < owed;
        bool was = atomic_load(&me->flags) & GS_ARB_OWED;
        if (higher && wanting)
                a->owed_cause_at = now;
        bool is = a->guaranteed && (was ? now - a->owed_cause_at <= GS_ARB_OWED_GRACE_NS && got < owed
                                        : higher && wanting && got + GS_ARB_OWED_SLACK_NS < owed);
        if (is != was) {
                if (is)
                        atomic_fetch_or(&me->flags, GS_ARB_OWED);
                else
                        atomic_fetch_and(&me->flags, ~GS_ARB_OWED);
        }
}

/* ----------------------------------------------------------------------------------------- */
/* Liars: what a reader believes of the others                                               */
/* ----------------------------------------------------------------------------------------- */

/* A peer's record is its own to write: its class, weight and mode come from its host record
 * (believe()), and what it says of its turns we weigh against what it cost us. Each tick while
 * we want the GPU and do not hold it, the time since the last tick is charged to whoever kept us
 * from it: the peers holding it, else the peers wanting it ahead of us (charge()). Over the owed
 * window (GS_ARB_WINDOW_NS) a peer may cost us its share of the time we wanted the GPU (its
 * weight, at most what our share leaves; a class above ours: all that our share leaves). While
 * we are short of our own share by GS_ARB_OWED_SLACK_NS (judge_owed: over the window we neither
 * got nor held the GPU for our share of the time we wanted it), a peer that cost us more
 * than that by its margin (GS_ARB_MARGIN_NS, a turn, and the slack; for a class above ours,
 * beside which the owed rule serves us first, three times the slack; never a class above ours
 * when we are a cap-mode slice: no guarantee to keep) is ignored: its record takes no part in our
 * turns (neither its lease, nor its demand, nor its cuts) until what it cost us is as far below
 * its share (it is charged nothing while ignored: the window moves on, and our wanting raises its
 * share). Whatever its record says (a lease never handed over, cuts, virtual time 0, first in
 * line without taking the GPU), it costs us about its share on average, never its margin more
 * in a window (a peer believed again: on probation, on_probation()), and at our start, before
 * we wanted the GPU GS_ARB_JUDGE_NS, no more than that: judged on the first 100 ms, the turn of a
 * slice that started first, 90 ms, was its share and margin of them, and a cap 30 + 70 pair on
 * the H200 took each other for liars, ran at once and got 0.18 and 0.55 of the GPU. Honest
 * slices rarely get there. An honest peer's cost comes in turns of up to a
 * quantum (and the kernel it drains), and weighted fair queuing lets a slice run up to a turn
 * ahead of its share: over a window an honest peer may cost us a turn more than its share, and
 * an owed slice waits up to a turn of the higher class before it is served. With the slack alone
 * as the margin (three times it for a class above; believed again at the slack below its share),
 * honest slices took each other for liars: eight equal share-12 slices, one ignored some of the
 * others every run, held the GPU beside their turns and got 0.177 of it; a low share-30 slice
 * ignored the high one beside it, both ran at once, its kernels waited behind the other's and it
 * measured that wait as its own GPU time: 0.22 of the GPU where it measured
 * its 0.3). What we received is counted as the time we held the GPU too, not our GPU time
 * alone: a peer's cost is the time it held the GPU (or stood ahead of us), and so is what its
 * record can keep from us; what we do with a turn we hold is ours. Judged by GPU time alone, a
 * latency slice (its turns mostly its requests' CPU gaps) waiting in the turn order of eight equal
 * slices, "wanting" the GPU 600-950 ms of each second and getting 65-70 ms of GPU time in the 200-260
 * ms of turns it held, was short of its share (100-110 ms) in every run, took the lighter peers that cut its
 * turns for liars and launched beside them (the turns broken: tests/vgpu's vgpu_latency_equal8).
 * An ignored peer is logged (warn, log level 2). "Owed" (served first) we believe of a share-mode peer beside a higher
 * class that has not cost us its share (plus twice the slack: what catching up on its own window
 * may take). */
static uint64_t cost_of(const struct gs_arb_peer *p, unsigned oldest)
{
        return in_window(p->charged, p->win_ch[oldest]);
}

static void warn_ignored(const struct gs_arb *a, const struct gs_arb_peer *p, unsigned oldest, uint64_t cost,
                         uint64_t allowed, uint64_t wanted, uint64_t held, bool probation)
{
        if (a->warn == NULL)
                return;
        uint64_t ahead = in_window(p->ahead, p->win_ah[oldest]);
        char what[GS_ARB_NAME_MAX + 240];
        snprintf(what, sizeof(what),
                 "%s slice %s's record: it cost us %llu ms of the %llu ms we wanted the GPU in the last second "
                 "(%llu ms of them in line ahead of us, not holding it; its share: %llu ms; we held it %llu ms)%s",
                 p->ignored ? "ignoring" : "believing again", p->name, (unsigned long long)(cost / 1000000u),
                 (unsigned long long)(wanted / 1000000u), (unsigned long long)(ahead / 1000000u),
                 (unsigned long long)(allowed / 1000000u), (unsigned long long)(held / 1000000u),
                 probation ? "; on probation: over its share since it was believed again" : "");
        a->warn(a, what);
}

/* A peer believed again is on probation for a window: judged on what it cost us since, against
 * its share of the time we wanted the GPU since, while we were short of ours since (once we wanted
 * it GS_ARB_JUDGE_NS since: an honest share-30 peer just believed again, its next turn a moment
 * later, was taken for a liar again and again on the H200, its costs within its share over the
 * window). Judged on the window alone, a record believed again could keep us from the GPU until
 * the window made us short again, which the turns we held while we ignored it delayed by up to
 * the window: two records that want the GPU first in line for ever without taking it kept a
 * share-50 slice at 0.30-0.46 of it, by when the guard first judged them. */
static bool on_probation(const struct gs_arb *a, const struct gs_arb_peer *p, uint64_t now, uint32_t w,
                         uint64_t margin)
{
        if (p->prob_at == 0 || now - p->prob_at >= GS_ARB_WINDOW_NS)
                return false;
        uint64_t wanted = a->win_want - p->prob_want, held = a->win_hold - p->prob_hold;
        uint64_t cost = p->charged - p->prob_ch;
        return wanted >= GS_ARB_JUDGE_NS && held + GS_ARB_OWED_SLACK_NS < wanted / 10000u * a->weight &&
               cost > wanted / 10000u * w + margin;
}

static void judge_peers(struct gs_arb *a, uint64_t now)
{
        (void)now;
        unsigned oldest = (a->win_i + 1) % GS_ARB_BUCKETS;
        uint64_t wanted = in_window(a->win_want, a->win_wanted[oldest]);
        uint64_t held = a->win_hold - a->win_held[oldest];
        for (unsigned i = 0; i < a->npeers; i++) {
                struct gs_arb_peer *p = &a->peer[i];
                /* (a class above ours may take all but our share, and the owed rule serves us
                 * beside it first: for it, all but our share and a wider margin) */
                bool above = p->prio < a->prio;
                uint32_t w = !above && p->weight < 10000u - a->weight ? p->weight : 10000u - a->weight;
                uint64_t cost = cost_of(p, oldest), allowed = wanted / 10000u * w;
                uint64_t margin = (above ? 3 * GS_ARB_OWED_SLACK_NS : GS_ARB_OWED_SLACK_NS) + GS_ARB_MARGIN_NS;
                bool was = p->ignored, probation = false;
                if (p->ignored) { /* (until it is as far below its share) */
                        p->ignored = cost + margin > allowed;
                        if (!p->ignored)
                                p->prob_at = now, p->prob_ch = p->charged, p->prob_want = a->win_want, p->prob_hold = a->win_hold;
                } else {
                        bool over = a->short_of_share && wanted >= GS_ARB_JUDGE_NS && cost > allowed + margin;
                        probation = !over && on_probation(a, p, now, w, margin);
                        p->ignored = (over || probation) && (a->guaranteed || p->prio >= a->prio);
                }
                if (p->ignored != was)
                        warn_ignored(a, p, oldest, cost, allowed, wanted, held, probation);
                /* (owed: catching up on its window may take it a little past its share of ours) */
                p->owed = p->valid && (p->flags & GS_ARB_OWED) && p->share && cost <= allowed + 2 * GS_ARB_OWED_SLACK_NS;
        }
        /* (owed only beside a higher class that wants or holds the GPU: us, or another peer) */
        for (unsigned i = 0; i < a->npeers; i++) {
                struct gs_arb_peer *p = &a->peer[i];
                bool higher = a->prio < p->prio;
                for (unsigned k = 0; k < a->npeers && p->owed && !higher; k++)
                        higher = a->peer[k].prio < p->prio && (peer_wants(&a->peer[k], now) || peer_holds(&a->peer[k], now));
                p->owed = p->owed && higher;
        }
}

/* ----------------------------------------------------------------------------------------- */
/* Side by side                                                                              */
/* ----------------------------------------------------------------------------------------- */

/* Turns make a slice's idle moments exclusive: a request client holds its turn through the CPU
 * gaps between its kernels (a request of eight 70 us kernels held it 1-1.4 ms for 0.56 ms of GPU
 * time), and a second latency client of its class waits for all of it (two PyTorch services on
 * the H200: 2.4-3.0 ms at p99 where the driver alone, interleaving their kernels, gives 0.8-1.0).
 * Between two slices far under their shares there is nothing to share out. So a light slice (the
 * limiter's judge, published in its record: its application pauses after its waits, its
 * stretches of work are short, and it used well under its share lately) launches beside the turn
 * of another while the one other slice that wants or holds the GPU is light too, of our class,
 * and neither a higher class nor a slice owed its share is there: the driver interleaves their
 * kernels as without slicing. Not so:
 *  - in cap mode (ours or the other's): a cap is a limit in GPU time, and beside another context
 *    a kernel that waits behind its work is measured as ours, charged to a budget a cap does not
 *    forgive (eight capped clients launching side by side in pairs on the H200: requests waited
 *    up to 640 ms for their budgets); share mode borrows while the GPU is not full;
 *  - beside more than GS_ARB_PASS_PEERS others: the GPU switches between the contexts of
 *    processes, and eight that launch at once saturate it by switching (eight such clients
 *    without slicing on the H200: the heavy ones served 510 of 715 requests; in turns, all).
 * A slice that is not light (a batch, a client past its share) takes turns as before, and once
 * one wants the GPU the light ones take turns with it again (a launcher's view is good for
 * GS_ARB_PASS_NS, then read again). While we launch beside a turn nobody keeps us from the GPU:
 * nothing is charged (charge()), and the time counts as held (judge_owed). Whatever a record
 * says, this widens nothing: a record that claims to be light lets us launch beside it, never
 * keeps us from the GPU (a slice that launches without turns could do that anyway, and a batch
 * beside it takes turns and weighs what it costs). Our own GPU time is measured as always
 * (the other's work our kernels waited behind counts as ours: a light slice errs towards using
 * less of its share). */
#define GS_ARB_PASS_NS 1000000ull /* a launcher's view that lets it launch beside the turns is good this long */
#define GS_ARB_PASS_PEERS 1u      /* ... beside at most this many others that want or hold the GPU */
static void judge_pass(struct gs_arb *a, uint64_t now, bool below)
{
        bool light = atomic_load(&a->light), pass = light && a->guaranteed && !below;
        const struct gs_arb_peer *heavy = NULL; /* (the slice that is not light, for the log) */
        unsigned n = 0;
        for (unsigned i = 0; i < a->npeers && pass; i++) {
                const struct gs_arb_peer *p = &a->peer[i];
                if (!peer_wants(p, now) && !peer_holds(p, now))
                        continue;
                pass = p->prio == a->prio && p->share && (p->flags & GS_ARB_LIGHT) && !p->owed;
                if (!pass)
                        heavy = p;
                n++;
        }
        bool many = pass && n > GS_ARB_PASS_PEERS;
        pass = pass && !many;
        if (pass)
                atomic_store_explicit(&a->pass_until, now + GS_ARB_PASS_NS, memory_order_relaxed);
        if (atomic_exchange_explicit(&a->pass, pass, memory_order_relaxed) == pass || a->note == NULL)
                return;
        char what[GS_ARB_NAME_MAX + 64];
        snprintf(what, sizeof(what), "side by side: %s%s%s", pass ? "on" : "off: ",
                 pass ? "" : !light ? "we are not light" : !a->guaranteed ? "cap mode" : below ? "a higher class is there" : many ? "too many want the GPU" : "not light, or cap mode: ",
                 heavy != NULL ? heavy->name : "");
        note(a, what);
}

/* Charge the time since our last tick to whoever kept us from the GPU (judge_peers): each slice
 * that held it the whole of it (records that hold it at once, together, for ever, are each a
 * liar), else all of it to the one first in line, whose turn it was. Each one in line got the
 * whole of it before: a hand-over with three in line ahead of us cost three ticks, and among eight
 * capped latency clients on the H200 half of the heavy ones' costs were place in line: they took
 * each other for liars, then held the GPU at once, and the light ones ignored four of them
 * (bench/RESULTS.md, 2026-11-29, twelfth session). A record that wants the GPU first for ever
 * without taking it is still the one charged. */
static void charge(struct gs_arb *a, uint64_t now, bool wanting, uint64_t ours)
{
        uint64_t from = wanted_from(a, a->charge_at); /* (the time we wanted it: judge_owed) */
        uint64_t dt = a->charge_at != 0 && now > from ? now - from : 0;
        a->charge_at = now;
        /* (net of the GPU time we received meanwhile: our queued work that ran in another's turn,
         * at its start, kept us from nothing; the limiter counts a slice's time from when the GPU
         * comes to its context, and a turn then lasts its budget and that wait) */
        dt = dt > ours ? dt - ours : 0;
        if (!wanting || dt == 0 || atomic_load(&a->me->state) != GS_ARB_FREE || atomic_load(&a->pass))
                return; /* (launching beside the turns, nobody kept us from the GPU) */
        if (dt > GS_ARB_CHARGE_MAX_NS)
                dt = GS_ARB_CHARGE_MAX_NS;
        bool held = false;
        for (unsigned i = 0; i < a->npeers; i++)
                if (peer_holds(&a->peer[i], now)) {
                        a->peer[i].charged += dt;
                        held = true;
                }
        if (held)
                return;
        struct place mine = my_place(a);
        struct gs_arb_peer *first = NULL;
        for (unsigned i = 0; i < a->npeers; i++) {
                struct gs_arb_peer *p = &a->peer[i];
                if (peer_wants(p, now) && ahead_of(peer_place(p), p->name, mine, a->name) &&
                    (first == NULL || ahead_of(peer_place(p), p->name, peer_place(first), first->name)))
                        first = p;
        }
        if (first != NULL) {
                first->charged += dt;
                first->ahead += dt;
        }
}

void gs_arb_tick(struct gs_arb *a, uint64_t now, bool wanting, uint64_t busy_ns, uint64_t got_total, bool idle,
                 bool quiet, bool held_back)
{
        if (a->me == NULL)
                return;
        if (busy_ns != 0)
                atomic_fetch_add(&a->me->vtime, busy_ns * 10000u / a->weight);
        if (atomic_flag_test_and_set(&a->busy))
                return; /* a waiting launcher is at it */
        /* Out of work: we want nothing, and the others see it at once (not only once our last
         * demand is GS_ARB_WANT_NS old), so that the next in line takes the GPU now. */
        if (held_back) {
                a->held_back = true;
                a->woke = false;
        }
        /* Held back by our budget we want nothing the others must wait for either: our demand
         * goes off at once, as when we are quiet. It stayed on for GS_ARB_WANT_NS after our last
         * launch, and where we were first in the order nobody took the GPU meanwhile: idle up to
         * 2 ms at each of our budget's pauses, each waiting slice charging it to us, that is to
         * a capped slice that wanted its cap (eight equal cap-12 latency clients on the H200: the
         * heavy ones, their requests at their cap, served 57-83 % of them, and taken for liars). */
        if (quiet || held_back) {
                wanting = false;
                if (now - atomic_load(&a->me->want_ns) <= GS_ARB_WANT_NS)
                        atomic_store(&a->me->want_ns, now - GS_ARB_WANT_NS - 1);
        }
        bool holding = atomic_load(&a->me->state) != GS_ARB_FREE;
        if (now - a->read_at >= (holding || !wanting ? GS_ARB_READ_NS : GS_ARB_READ_WANT_NS))
                read_peers(a, now);
        struct gs_arb_rec *me = a->me; /* (the listing may have made it again) */
        atomic_store(&me->alive_ns, now);
        bool light = atomic_load(&a->light);
        if (light != ((atomic_load(&me->flags) & GS_ARB_LIGHT) != 0)) {
                if (light)
                        atomic_fetch_or(&me->flags, GS_ARB_LIGHT);
                else
                        atomic_fetch_and(&me->flags, ~GS_ARB_LIGHT);
        }
        if (!wanting)
                a->unwanted_at = now;
        bool waking = wanting && note_want(a, now);
        judge_owed(a, now, wanting, got_total);
        charge(a, now, wanting, busy_ns);
        atomic_store(&me->got_ns, got_total);
        if (atomic_load(&me->state) != GS_ARB_FREE && atomic_load(&me->until) <= now) {
                note(a, "expired");
                release(a); /* expired: its holder (a process of ours) stopped renewing it */
        }
        if (atomic_load(&me->state) != GS_ARB_FREE)
                keep_or_hand_over(a, now, wanting, idle, quiet);
        else if (wanting)
                take(a, now, waking);
        atomic_flag_clear(&a->busy);
}

uint64_t gs_arb_others_got(const struct gs_arb *a)
{
        uint64_t sum = 0;
        for (unsigned i = 0; i < a->npeers; i++)
                if (a->peer[i].valid && a->peer[i].got_ns < UINT64_MAX - sum)
                        sum += a->peer[i].got_ns;
        return sum;
}

uint64_t gs_arb_others_recent(const struct gs_arb *a, uint64_t upto, uint64_t span)
{
        uint64_t sum = 0, from = upto > span ? upto - span : 0;
        for (unsigned i = 0; i < a->npeers; i++) {
                const struct gs_arb_peer *p = &a->peer[i];
                uint64_t last = p->alive_ns < upto ? p->alive_ns : upto;
                if (!p->valid || last <= from)
                        continue;
                sum += p->got_ns < last - from ? p->got_ns : last - from;
        }
        return sum < span ? sum : span;
}

/* The peer table is ours to refresh: a launcher that waits for the GPU waits the ticker's refresh
 * out (it lasts microseconds: a few pread()s), up to GS_ARB_VIEW_WAIT_NS, rather than act on the
 * view from before it: a cut that came meanwhile would go unseen until the next look, and a
 * kernel launched on that view runs ahead of the cutter's. */
#define GS_ARB_VIEW_WAIT_NS 200000ull
static bool view_lock(struct gs_arb *a)
{
        if (!atomic_flag_test_and_set(&a->busy))
                return true;
        uint64_t t0 = gs_mono_ns();
        for (;;) {
                sched_yield();
                if (!atomic_flag_test_and_set(&a->busy))
                        return true;
                if (gs_mono_ns() - t0 > GS_ARB_VIEW_WAIT_NS)
                        return false; /* (the ticker was preempted: the caller looks again) */
        }
}

void gs_arb_try_take(struct gs_arb *a)
{
        if (a->me == NULL || !view_lock(a))
                return;
        uint64_t now = gs_mono_ns(); /* (after any wait for the view) */
        if (now - a->read_at >= GS_ARB_READ_WAIT_NS || atomic_exchange(&a->reread, false))
                read_peers(a, now);
        bool waking = note_want(a, now);
        uint32_t st = atomic_load(&a->me->state);
        if (st == GS_ARB_FREE || atomic_load(&a->me->until) <= now) {
                if (st != GS_ARB_FREE)
                        release(a);
                take(a, now, waking);
        }
        atomic_flag_clear(&a->busy);
}

int gs_arb_wait_turn(struct gs_arb *a, uint64_t ns)
{
        /* (a holder's record is its own to write, and so is a wake on it: one that wakes its
         * waiters again and again, to keep their threads busy reading the records, gets them to
         * look as often as their naps would, no more often) */
        uint64_t now = gs_mono_ns();
        if (a->me == NULL || now - atomic_load(&a->woken_at) < ns || !view_lock(a))
                return -1;
        void *word = NULL;
        uint32_t st = 0;
        for (unsigned i = 0; i < a->npeers && word == NULL; i++) {
                const struct gs_arb_peer *p = &a->peer[i];
                if (p->bell != NULL && p->valid && !p->ignored && peer_holds(p, now)) {
                        word = (char *)p->bell + offsetof(struct gs_arb_rec, state);
                        st = p->state;
                }
        }
        atomic_flag_clear(&a->busy);
        if (word == NULL)
                return -1;
        /* (a mapping the ticker drops meanwhile, at a listing: EFAULT, or a wait on whatever the
         * address then holds, to the end of `ns`) */
        /* (the application's errno is its own: this runs in its launch) */
        struct timespec ts = gs_ns_timespec(ns);
        int saved = errno, rc;
        if (syscall(SYS_futex, word, FUTEX_WAIT, st, &ts, NULL, 0) == 0 || errno == EAGAIN || errno == EINTR) {
                atomic_store(&a->reread, true);
                atomic_store(&a->woken_at, gs_mono_ns());
                rc = 1;
        } else {
                rc = errno == ETIMEDOUT ? 0 : -1;
        }
        errno = saved;
        return rc;
}

/* Has a slice of a higher class than ours (one that may cut our turn) asked for the GPU
 * GS_ARB_ASK_NS ago or less ("Asks", arbiter.h)? Its record is read once more now, after the
 * caller's look at all of them: the last read before our launch, so that as little time as can be
 * lies between them (an ask published after it is a race we lose by a kernel). An ask from the
 * future (a clock we do not share, or a writer's lie) is no ask; only a class that may cut our turn
 * anyway is heeded, and for GS_ARB_ASK_NS at most. */
static bool higher_asks(struct gs_arb *a)
{
        struct place mine = my_place(a);
        for (unsigned i = 0; i < a->npeers; i++) {
                struct gs_arb_peer *p = &a->peer[i];
                struct place e = peer_place(p);
                if (!p->valid || p->ignored || p->fd < 0 || peers(e, mine) || e.cls >= mine.cls)
                        continue;
                struct gs_arb_rec r;
                if (pread(p->fd, &r, sizeof(r), 0) != (ssize_t)sizeof(r) || r.magic != GS_ARB_MAGIC)
                        continue;
                uint64_t now = gs_mono_ns();
                if (r.ask_ns <= now && now - r.ask_ns <= GS_ARB_ASK_NS)
                        return true;
        }
        return false;
}

bool gs_arb_poll(struct gs_arb *a, bool fresh)
{
        if (a->me == NULL || atomic_load(&a->me->state) == GS_ARB_FREE)
                return true;
        if (!fresh && atomic_flag_test_and_set(&a->busy))
                return false;
        if (fresh && !view_lock(a))
                return false;
        uint64_t now = gs_mono_ns(); /* (after any wait for the view) */
        if (fresh || now - a->read_at >= GS_ARB_READ_WAIT_NS) {
                read_peers(a, now);
                int why = atomic_load(&a->me->state) != GS_ARB_FREE ? yield_to_holder(a, now) : KEEP;
                if (why != KEEP)
                        yield(a, why);
        }
        bool asked = fresh && atomic_load(&a->me->state) != GS_ARB_FREE && higher_asks(a);
        atomic_flag_clear(&a->busy);
        return !asked;
}

/* The process ends: a turn it took goes back now, its demand with it. Kept, the lease (renewed a
 * moment before: the ticker renews it at each tick) ran on for up to two quanta after the exit,
 * the GPU idle meanwhile for every slice that could not cut it (one mid-request, a batch): a
 * process that ended just after its work, as jobs and the requests' clients do, held it on its
 * way out (eight latency slices: requests waited 60-140 ms at each exit; batch slices that come
 * and go). A turn another process of the slice took since (the record is the slice's) stays. */
void gs_arb_leave(struct gs_arb *a)
{
        if (a->me == NULL || !view_lock(a))
                return;
        struct gs_arb_rec *me = a->me;
        uint64_t now = gs_mono_ns();
        if (atomic_load(&me->state) != GS_ARB_FREE && a->taken_since != 0 && atomic_load(&me->since) == a->taken_since) {
                note(a, "hand over: the process ends");
                release(a);
                if (now - atomic_load(&me->want_ns) <= GS_ARB_WANT_NS)
                        atomic_store(&me->want_ns, now - GS_ARB_WANT_NS - 1);
        }
        atomic_flag_clear(&a->busy);
}

void gs_arb_update(struct gs_arb *a, uint32_t weight, uint32_t prio, bool guaranteed)
{
        if (a->me == NULL || weight == 0 || weight > 10000 || prio > GS_ARB_PRIO_LOW)
                return;
        a->weight = weight;
        a->prio = prio;
        a->guaranteed = guaranteed;
        sync_host(a); /* (in a container: the host record `slice set` rewrote) */
        atomic_store(&a->me->weight, a->weight);
        atomic_store(&a->me->prio, a->prio);
}
