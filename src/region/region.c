/*
 * The per-container usage region (see region.h for the ABI and the crash-safety argument).
 * libc only: the interposer links this file directly. No printing, no exit().
 */
#include "region.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct gs_region {
        struct gs_region_file *f; /* mapping (rw) or private copy (snapshot) */
        int snapshot;             /* 1: private pread copy, never written to the file */
        unsigned lock_timeout_ms;
        char *path;               /* snapshot: for gs_region_refresh */
};

/* ------------------------------------------------------------------------------------------- */
/* small helpers                                                                               */

static void seterr(char *err, size_t errlen, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
        if (err == NULL || errlen == 0)
                return;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
}

static uint64_t magic_value(void)
{
        uint64_t v;
        memcpy(&v, GS_REGION_MAGIC_BYTES, sizeof(v));
        return v;
}

static inline uint64_t sat_add(uint64_t a, uint64_t b)
{
        uint64_t s = a + b;
        return s < a ? UINT64_MAX : s;
}

static uint64_t realtime_ns(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline unsigned hwm_of(const struct gs_region *r)
{
        unsigned h = atomic_load_explicit(&r->f->hdr.slot_hwm, memory_order_acquire);
        return h > GS_REGION_MAX_PROCS ? GS_REGION_MAX_PROCS : h; /* a hostile file stays in bounds */
}

static inline unsigned ndev_of(const struct gs_region *r)
{
        unsigned n = r->f->hdr.ndevices;
        return n > GS_REGION_MAX_DEVICES ? GS_REGION_MAX_DEVICES : n;
}

static int check_slot_dev(const struct gs_region *r, int slot, unsigned dev)
{
        if (r == NULL || slot < 0 || slot >= GS_REGION_MAX_PROCS || dev >= ndev_of(r)) {
                errno = EINVAL;
                return -1;
        }
        if (r->snapshot) {
                errno = EROFS;
                return -1;
        }
        return 0;
}

/* ------------------------------------------------------------------------------------------- */
/* liveness                                                                                    */

struct proc_stat {
        char state;
        long num_threads;
        uint64_t start_time;
};

/* 1 = parsed, 0 = no such process, -1 = cannot tell. */
static int read_proc_stat(int pid, struct proc_stat *ps)
{
        char path[64], buf[1024];
        snprintf(path, sizeof(path), "/proc/%d/stat", pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return (errno == ENOENT || errno == ESRCH) ? 0 : -1;
        size_t len = 0;
        while (len < sizeof(buf) - 1) {
                ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        int e = errno;
                        close(fd);
                        return e == ESRCH ? 0 : -1;
                }
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        close(fd);
        buf[len] = '\0';
        /* comm may hold spaces and ')': fields start after the LAST ')'. */
        char *p = strrchr(buf, ')');
        if (p == NULL || p[1] != ' ')
                return -1;
        p += 2;
        /* token 0 = field 3 (state), token 17 = field 20 (num_threads), token 19 = field 22. */
        int tok = 0;
        memset(ps, 0, sizeof(*ps));
        while (*p != '\0' && tok <= 19) {
                char *end = p;
                while (*end != ' ' && *end != '\0' && *end != '\n')
                        end++;
                if (tok == 0)
                        ps->state = *p;
                else if (tok == 17)
                        ps->num_threads = strtol(p, NULL, 10);
                else if (tok == 19) {
                        ps->start_time = strtoull(p, NULL, 10);
                        return 1;
                }
                if (*end != ' ')
                        break;
                p = end + 1;
                tok++;
        }
        return -1;
}

uint64_t gs_region_proc_start_time(int pid)
{
        struct proc_stat ps;
        int saved_errno = errno;
        int rc = pid > 0 ? read_proc_stat(pid, &ps) : -1;
        errno = saved_errno;
        return rc == 1 ? ps.start_time : 0;
}

/* True only when the slot's process is provably gone; unsure → alive. */
static int slot_dead(int pid, uint64_t start_time)
{
        if (pid <= 0)
                return 1;
        if (kill(pid, 0) < 0 && errno == ESRCH)
                return 1;
        struct proc_stat ps;
        int rc = read_proc_stat(pid, &ps);
        if (rc == 0) /* gone since kill(), or hidden by hidepid=: only kill() can tell */
                return kill(pid, 0) < 0 && errno == ESRCH;
        if (rc < 0)
                return 0;
        if (start_time != 0 && ps.start_time != start_time)
                return 1; /* the pid was reused by another process */
        /* A zombie leader with live threads (main called pthread_exit) is alive. */
        if ((ps.state == 'Z' || ps.state == 'X') && ps.num_threads <= 1)
                return 1;
        return 0;
}

/* ------------------------------------------------------------------------------------------- */
/* lock + repair                                                                               */

static void clear_slot_counters(struct gs_region_slot *s)
{
        for (unsigned d = 0; d < GS_REGION_MAX_DEVICES; d++) {
                atomic_store_explicit(&s->used[d], 0, memory_order_relaxed);
                atomic_store_explicit(&s->extra[d], 0, memory_order_relaxed);
                atomic_store_explicit(&s->busy_ns[d], 0, memory_order_relaxed);
        }
        atomic_store_explicit(&s->last_launch_ns, 0, memory_order_relaxed);
}

/*
 * Caller holds the lock. Every slot with a dead owner: counters to 0, then pid to 0 (release).
 * Then set slot_hwm to 1 + the highest live slot: only claims (under this lock) create live
 * slots, so nothing live can appear above it meanwhile. Idempotent, so a reaper killed half-way
 * leaves work the next reaper finishes.
 */
static int reap_locked(struct gs_region *r)
{
        struct gs_region_file *f = r->f;
        unsigned top = 0;
        int n = 0, saved_errno = errno; /* kill()/open() failures here are answers, not errors */
        /* The /proc reads below are cancellation points: a thread cancelled here would leave the
         * lock held by a live process. Nothing else done under the lock is one. */
        int oldcs;
        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &oldcs);
        /* All slots, not just [0, slot_hwm): this also repairs a damaged slot_hwm, and the pid
         * loads cost nothing next to one /proc read. */
        for (unsigned i = 0; i < GS_REGION_MAX_PROCS; i++) {
                struct gs_region_slot *s = &f->slots[i];
                int pid = atomic_load_explicit(&s->pid, memory_order_acquire);
                if (pid == 0)
                        continue;
                if (slot_dead(pid, atomic_load_explicit(&s->start_time, memory_order_relaxed))) {
                        clear_slot_counters(s);
                        atomic_store_explicit(&s->host_pid, 0, memory_order_relaxed);
                        /* CAS: a slot released by its owner meanwhile is not counted twice. */
                        if (atomic_compare_exchange_strong_explicit(&s->pid, &pid, 0, memory_order_release,
                                                                    memory_order_relaxed))
                                n++;
                        continue;
                }
                top = i + 1;
        }
        atomic_store_explicit(&f->hdr.slot_hwm, top, memory_order_release);
        if (n > 0)
                atomic_fetch_add_explicit(&f->hdr.reaped, (uint64_t)n, memory_order_relaxed);
        pthread_setcancelstate(oldcs, NULL);
        errno = saved_errno;
        return n;
}

/* 0 locked, 1 locked after recovering from a dead holder, -1 errno. No cancellation point is
 * reached while the lock is held, except in reap_locked, which disables cancellation itself (the
 * allocation fast path pays no pthread_setcancelstate). */
static int lock_region(struct gs_region *r)
{
        pthread_mutex_t *m = &r->f->hdr.lock.m;
        int rc = pthread_mutex_trylock(m);
        if (rc == EBUSY) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_sec += r->lock_timeout_ms / 1000;
                ts.tv_nsec += (long)(r->lock_timeout_ms % 1000) * 1000000L;
                if (ts.tv_nsec >= 1000000000L) {
                        ts.tv_sec++;
                        ts.tv_nsec -= 1000000000L;
                }
                do
                        rc = pthread_mutex_timedlock(m, &ts);
                while (rc == EINTR);
        }
        if (rc == EOWNERDEAD) {
                /* The holder died somewhere inside a critical section: repair, then declare the
                 * state consistent. If we die here too, the next locker repeats both steps. */
                atomic_fetch_add_explicit(&r->f->hdr.recoveries, 1, memory_order_relaxed);
                reap_locked(r);
                rc = pthread_mutex_consistent(m);
                if (rc != 0) {
                        pthread_mutex_unlock(m);
                        errno = rc;
                        return -1;
                }
                return 1;
        }
        if (rc != 0) {
                errno = rc;
                return -1;
        }
        return 0;
}

static void unlock_region(struct gs_region *r)
{
        pthread_mutex_unlock(&r->f->hdr.lock.m);
}

/* ------------------------------------------------------------------------------------------- */
/* open / create / validate                                                                    */

static int validate_header(const struct gs_region_header *h, const char *path, char *err, size_t errlen)
{
        if (h->version != GS_REGION_VERSION) {
                seterr(err, errlen, "usage region %s: version %u, this gpuslice speaks version %u", path,
                       h->version, GS_REGION_VERSION);
                return -1;
        }
        if (h->header_size != GS_REGION_HEADER_SIZE || h->slot_size != GS_REGION_SLOT_SIZE ||
            h->max_procs != GS_REGION_MAX_PROCS || h->region_size != GS_REGION_SIZE) {
                seterr(err, errlen,
                       "usage region %s: layout mismatch (header %u, slot %u, %u slots, %llu bytes; "
                       "expected %u, %u, %u, %u)",
                       path, h->header_size, h->slot_size, h->max_procs, (unsigned long long)h->region_size,
                       GS_REGION_HEADER_SIZE, GS_REGION_SLOT_SIZE, GS_REGION_MAX_PROCS, GS_REGION_SIZE);
                return -1;
        }
        if (h->ndevices < 1 || h->ndevices > GS_REGION_MAX_DEVICES) {
                seterr(err, errlen, "usage region %s: bad device count %u (1..%d)", path, h->ndevices,
                       GS_REGION_MAX_DEVICES);
                return -1;
        }
        return 0;
}

static int init_region(struct gs_region_file *f, unsigned ndevices, const uint64_t *limits,
                       const char (*uuids)[GS_REGION_UUID_LEN], char *err, size_t errlen)
{
        /* Nobody else can touch it: openers wait on the flock, and none attached (no magic). */
        memset(f, 0, sizeof(*f));
        struct gs_region_header *h = &f->hdr;
        h->version = GS_REGION_VERSION;
        h->header_size = GS_REGION_HEADER_SIZE;
        h->ndevices = ndevices;
        h->max_procs = GS_REGION_MAX_PROCS;
        h->slot_size = GS_REGION_SLOT_SIZE;
        h->region_size = GS_REGION_SIZE;
        h->created_ns = realtime_ns();
        h->creator_pid = (int32_t)getpid();
        atomic_store_explicit(&f->ctr.priority, GS_REGION_UNSET, memory_order_relaxed);
        for (unsigned d = 0; d < GS_REGION_MAX_DEVICES; d++)
                atomic_store_explicit(&f->ctr.dev[d].compute_via, GS_REGION_UNSET, memory_order_relaxed);
        for (unsigned d = 0; d < ndevices; d++) {
                h->limit[d] = limits != NULL ? limits[d] : 0;
                if (uuids != NULL) {
                        memcpy(h->uuid[d], uuids[d], GS_REGION_UUID_LEN);
                        h->uuid[d][GS_REGION_UUID_LEN - 1] = '\0';
                }
        }
        pthread_mutexattr_t a;
        int rc = pthread_mutexattr_init(&a);
        if (rc == 0)
                rc = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
        if (rc == 0)
                rc = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
        if (rc == 0)
                rc = pthread_mutex_init(&h->lock.m, &a);
        pthread_mutexattr_destroy(&a);
        if (rc != 0) {
                seterr(err, errlen, "cannot initialize the region lock: %s", strerror(rc));
                errno = rc;
                return -1;
        }
        atomic_store_explicit(&h->magic, magic_value(), memory_order_release);
        return 0;
}

/* flock with a deadline: an initializer that is stopped (not dead) must not hang us forever. */
static int flock_deadline(int fd, unsigned ms)
{
        struct timespec start, now;
        clock_gettime(CLOCK_MONOTONIC, &start);
        for (;;) {
                if (flock(fd, LOCK_EX | LOCK_NB) == 0)
                        return 0;
                if (errno != EWOULDBLOCK && errno != EINTR)
                        return -1;
                clock_gettime(CLOCK_MONOTONIC, &now);
                long long el = (long long)(now.tv_sec - start.tv_sec) * 1000 +
                               (now.tv_nsec - start.tv_nsec) / 1000000;
                if (el >= (long long)ms) {
                        errno = ETIMEDOUT;
                        return -1;
                }
                struct timespec d = { 0, 1000000 };
                nanosleep(&d, NULL);
        }
}

static struct gs_region *new_handle(void)
{
        struct gs_region *r = calloc(1, sizeof(*r));
        if (r != NULL)
                r->lock_timeout_ms = GS_REGION_LOCK_TIMEOUT_MS_DEFAULT;
        return r;
}

int gs_region_open(const char *path, unsigned ndevices, const uint64_t *limits,
                   const char (*uuids)[GS_REGION_UUID_LEN], struct gs_region **out, char *err, size_t errlen)
{
        if (out != NULL)
                *out = NULL;
        if (path == NULL || out == NULL || ndevices < 1 || ndevices > GS_REGION_MAX_DEVICES) {
                seterr(err, errlen, "usage region: bad arguments (device count %u, must be 1..%d)", ndevices,
                       GS_REGION_MAX_DEVICES);
                errno = EINVAL;
                return -1;
        }
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0660);
        if (fd < 0) {
                int e = errno;
                seterr(err, errlen, "cannot open usage region %s: %s", path, strerror(e));
                errno = e;
                return -1;
        }
        void *map = MAP_FAILED;
        int e = 0;
        struct stat st;
        if (fstat(fd, &st) < 0) {
                e = errno;
                seterr(err, errlen, "cannot stat usage region %s: %s", path, strerror(e));
                goto fail;
        }
        if (!S_ISREG(st.st_mode)) {
                e = EINVAL;
                seterr(err, errlen, "usage region %s is not a regular file", path);
                goto fail;
        }
        if (flock_deadline(fd, GS_REGION_LOCK_TIMEOUT_MS_DEFAULT) < 0) {
                e = errno;
                seterr(err, errlen, "cannot lock usage region %s for initialization: %s", path, strerror(e));
                goto fail;
        }
        if (fstat(fd, &st) < 0) { /* size again, now that creation is serialized */
                e = errno;
                seterr(err, errlen, "cannot stat usage region %s: %s", path, strerror(e));
                goto fail;
        }
        uint64_t magic = 0;
        if (st.st_size >= (off_t)sizeof(magic) && pread(fd, &magic, sizeof(magic), 0) != (ssize_t)sizeof(magic)) {
                e = errno ? errno : EIO;
                seterr(err, errlen, "cannot read usage region %s: %s", path, strerror(e));
                goto fail;
        }
        if (magic != 0 && magic != magic_value()) {
                e = EINVAL;
                seterr(err, errlen, "usage region %s: bad magic (not a gpuslice usage region)", path);
                goto fail;
        }
        if (magic != 0) {
                struct gs_region_header h;
                if (st.st_size < (off_t)sizeof(h) || pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
                        e = EINVAL;
                        seterr(err, errlen, "usage region %s: truncated header (%lld bytes)", path,
                               (long long)st.st_size);
                        goto fail;
                }
                if (validate_header(&h, path, err, errlen) < 0) {
                        e = EINVAL;
                        goto fail;
                }
        }
        if (st.st_size != 0 && st.st_size != (off_t)GS_REGION_SIZE) {
                e = EINVAL;
                seterr(err, errlen, "usage region %s: size %lld bytes, expected %u", path, (long long)st.st_size,
                       GS_REGION_SIZE);
                goto fail;
        }
        int create = magic == 0;
        if (create) {
                /* New file, or one whose creator died before storing the magic. Reserve the
                 * blocks now: a full tmpfs must fail here, not SIGBUS the application later. */
                if (st.st_size == 0 && ftruncate(fd, GS_REGION_SIZE) < 0) {
                        e = errno;
                        seterr(err, errlen, "cannot size usage region %s: %s", path, strerror(e));
                        goto fail;
                }
                int frc = posix_fallocate(fd, 0, GS_REGION_SIZE);
                if (frc != 0 && frc != EOPNOTSUPP && frc != EINVAL) {
                        e = frc;
                        seterr(err, errlen, "cannot allocate usage region %s: %s", path, strerror(e));
                        goto fail;
                }
                /* (its mode stays its maker's: the hook makes a container's 0660, of the container's
                 * user and group; never widened for any local user to write) */
        }
        map = mmap(NULL, GS_REGION_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (map == MAP_FAILED) {
                e = errno;
                seterr(err, errlen, "cannot map usage region %s: %s", path, strerror(e));
                goto fail;
        }
        if (create && init_region(map, ndevices, limits, uuids, err, errlen) < 0) {
                e = errno;
                goto fail;
        }
        struct gs_region *r = new_handle();
        if (r == NULL) {
                e = ENOMEM;
                seterr(err, errlen, "out of memory");
                goto fail;
        }
        r->f = map;
        /* Unlock explicitly: the mapping holds a reference to the open file description, so
         * close() alone would keep the flock (a dead process drops both). */
        flock(fd, LOCK_UN);
        close(fd);
        *out = r;
        return 0;
fail:
        if (map != MAP_FAILED)
                munmap(map, GS_REGION_SIZE);
        flock(fd, LOCK_UN);
        close(fd);
        errno = e;
        return -1;
}

static int load_snapshot(struct gs_region *r, char *err, size_t errlen)
{
        int fd = open(r->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                int e = errno;
                seterr(err, errlen, "cannot open usage region %s: %s", r->path, strerror(e));
                errno = e;
                return -1;
        }
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                close(fd);
                seterr(err, errlen, "usage region %s is not a regular file", r->path);
                errno = EINVAL;
                return -1;
        }
        size_t got = 0;
        char *buf = (char *)r->f;
        while (got < GS_REGION_SIZE) {
                ssize_t n = pread(fd, buf + got, GS_REGION_SIZE - got, (off_t)got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                got += (size_t)n;
        }
        close(fd);
        struct gs_region_header *h = &r->f->hdr;
        if (got < sizeof(*h) || atomic_load_explicit(&h->magic, memory_order_relaxed) != magic_value()) {
                seterr(err, errlen, "usage region %s: %s", r->path,
                       got < sizeof(uint64_t) || atomic_load_explicit(&h->magic, memory_order_relaxed) == 0
                               ? "not initialized yet"
                               : "bad magic (not a gpuslice usage region)");
                errno = EINVAL;
                return -1;
        }
        if (validate_header(h, r->path, err, errlen) < 0) {
                errno = EINVAL;
                return -1;
        }
        if (got != GS_REGION_SIZE) {
                seterr(err, errlen, "usage region %s: truncated (%zu bytes, expected %u)", r->path, got,
                       GS_REGION_SIZE);
                errno = EINVAL;
                return -1;
        }
        for (unsigned d = 0; d < GS_REGION_MAX_DEVICES; d++)
                h->uuid[d][GS_REGION_UUID_LEN - 1] = '\0';
        return 0;
}

int gs_region_open_snapshot(const char *path, struct gs_region **out, char *err, size_t errlen)
{
        if (out != NULL)
                *out = NULL;
        if (path == NULL || out == NULL) {
                seterr(err, errlen, "usage region: bad arguments");
                errno = EINVAL;
                return -1;
        }
        struct gs_region *r = new_handle();
        if (r != NULL) {
                r->f = calloc(1, sizeof(*r->f));
                r->path = strdup(path);
        }
        if (r == NULL || r->f == NULL || r->path == NULL) {
                gs_region_close(r);
                seterr(err, errlen, "out of memory");
                errno = ENOMEM;
                return -1;
        }
        r->snapshot = 1;
        if (load_snapshot(r, err, errlen) < 0) {
                int e = errno;
                gs_region_close(r);
                errno = e;
                return -1;
        }
        *out = r;
        return 0;
}

int gs_region_refresh(struct gs_region *r, char *err, size_t errlen)
{
        if (r == NULL || !r->snapshot) {
                seterr(err, errlen, "usage region: refresh needs a snapshot handle");
                errno = EINVAL;
                return -1;
        }
        return load_snapshot(r, err, errlen);
}

void gs_region_close(struct gs_region *r)
{
        if (r == NULL)
                return;
        if (r->snapshot)
                free(r->f);
        else if (r->f != NULL)
                munmap(r->f, GS_REGION_SIZE);
        free(r->path);
        free(r);
}

int gs_region_limits_match(const struct gs_region *r, unsigned ndevices, const uint64_t *limits,
                           const char (*uuids)[GS_REGION_UUID_LEN], char *err, size_t errlen)
{
        const struct gs_region_header *h = &r->f->hdr;
        if (h->ndevices != ndevices) {
                seterr(err, errlen, "usage region has %u devices, this process has %u", h->ndevices, ndevices);
                return 0;
        }
        for (unsigned d = 0; d < ndev_of(r); d++) {
                uint64_t want = limits != NULL ? limits[d] : 0;
                if (h->limit[d] != want) {
                        seterr(err, errlen,
                               "usage region limit for device %u is %llu bytes, this process asks for %llu "
                               "(the region's creator set it; the region's value is enforced)",
                               d, (unsigned long long)h->limit[d], (unsigned long long)want);
                        return 0;
                }
                if (uuids != NULL && strncmp(h->uuid[d], uuids[d], GS_REGION_UUID_LEN) != 0) {
                        seterr(err, errlen, "usage region device %u is %.96s, this process has %.96s", d,
                               h->uuid[d], uuids[d]);
                        return 0;
                }
        }
        return 1;
}

/* ------------------------------------------------------------------------------------------- */
/* slots and counters                                                                          */

int gs_region_register(struct gs_region *r, int pid, int *slot)
{
        if (r == NULL || slot == NULL || pid <= 0) {
                errno = EINVAL;
                return -1;
        }
        if (r->snapshot) {
                errno = EROFS;
                return -1;
        }
        uint64_t st = gs_region_proc_start_time(pid); /* outside the lock: a /proc read */
        if (lock_region(r) < 0)
                return -1;
        struct gs_region_file *f = r->f;
        /* No reap here: a process's start-up must not cost a /proc read per live process (the
         * slice's processes leave their slots at exit; usage of killed ones is reaped when a
         * charge would not fit, by the reconciler, and below when no slot is free). */
        bool reaped = false;
again:;
        unsigned hwm = hwm_of(r);
        int freeslot = -1, idx = -1;
        for (unsigned i = 0; i < hwm; i++) {
                int p = atomic_load_explicit(&f->slots[i].pid, memory_order_relaxed);
                if (p == 0) {
                        if (freeslot < 0)
                                freeslot = (int)i;
                } else if (p == pid &&
                           atomic_load_explicit(&f->slots[i].start_time, memory_order_relaxed) == st) {
                        idx = (int)i; /* same process again (exec): its old allocations are gone */
                        break;
                }
        }
        if (idx < 0 && freeslot < 0 && hwm < GS_REGION_MAX_PROCS)
                freeslot = (int)hwm;
        if (idx < 0 && freeslot < 0 && !reaped) {
                reap_locked(r);
                reaped = true;
                goto again;
        }
        if (idx < 0 && freeslot < 0) {
                unlock_region(r);
                errno = ENOSPC;
                return -1;
        }
        struct gs_region_slot *s = &f->slots[idx >= 0 ? idx : freeslot];
        if (idx < 0) {
                idx = freeslot;
                /* Order matters for a holder killed half-way and for lock-free readers: bound
                 * first, then contents, then the pid (release) that makes the slot live. */
                if ((unsigned)idx >= hwm)
                        atomic_store_explicit(&f->hdr.slot_hwm, (unsigned)idx + 1, memory_order_release);
                clear_slot_counters(s);
                atomic_store_explicit(&s->start_time, st, memory_order_relaxed);
                atomic_store_explicit(&s->host_pid, 0, memory_order_relaxed);
                atomic_store_explicit(&s->heartbeat_ns, realtime_ns(), memory_order_relaxed);
                atomic_store_explicit(&s->pid, pid, memory_order_release);
        } else {
                clear_slot_counters(s);
                atomic_store_explicit(&s->heartbeat_ns, realtime_ns(), memory_order_relaxed);
        }
        unlock_region(r);
        *slot = idx;
        return 0;
}

int gs_region_unregister(struct gs_region *r, int slot)
{
        if (check_slot_dev(r, slot, 0) < 0)
                return -1;
        struct gs_region_slot *s = &r->f->slots[slot];
        int pid = atomic_load_explicit(&s->pid, memory_order_acquire);
        if (pid == 0)
                return 0;
        if (pid != (int)getpid()) {
                errno = EPERM;
                return -1;
        }
        clear_slot_counters(s);
        atomic_store_explicit(&s->host_pid, 0, memory_order_relaxed);
        atomic_compare_exchange_strong_explicit(&s->pid, &pid, 0, memory_order_release, memory_order_relaxed);
        return 0;
}

/* Lock-free sum of used+extra over live slots. */
static uint64_t sum_usage(const struct gs_region *r, unsigned dev)
{
        const struct gs_region_file *f = r->f;
        unsigned hwm = hwm_of(r);
        uint64_t sum = 0;
        for (unsigned i = 0; i < hwm; i++) {
                const struct gs_region_slot *s = &f->slots[i];
                if (atomic_load_explicit(&s->pid, memory_order_acquire) == 0)
                        continue;
                sum = sat_add(sum, atomic_load_explicit(&s->used[dev], memory_order_relaxed));
                sum = sat_add(sum, atomic_load_explicit(&s->extra[dev], memory_order_relaxed));
        }
        return sum;
}

int gs_region_try_charge(struct gs_region *r, int slot, unsigned dev, uint64_t bytes, uint64_t *usage)
{
        if (check_slot_dev(r, slot, dev) < 0)
                return -1;
        return gs_region_try_charge_limit(r, slot, dev, bytes, r->f->hdr.limit[dev], usage);
}

int gs_region_try_charge_limit(struct gs_region *r, int slot, unsigned dev, uint64_t bytes, uint64_t limit,
                               uint64_t *usage)
{
        if (check_slot_dev(r, slot, dev) < 0)
                return -1;
        struct gs_region_file *f = r->f;
        struct gs_region_slot *s = &f->slots[slot];
        if (limit == 0 || bytes == 0) { /* nothing to enforce; unlimited still counts (observer) */
                if (atomic_load_explicit(&s->pid, memory_order_relaxed) == 0) {
                        errno = ESTALE;
                        return -1;
                }
                if (bytes != 0)
                        atomic_fetch_add_explicit(&s->used[dev], bytes, memory_order_relaxed);
                if (usage != NULL)
                        *usage = sum_usage(r, dev);
                return 0;
        }
        if (lock_region(r) < 0)
                return -1;
        if (atomic_load_explicit(&s->pid, memory_order_relaxed) == 0) {
                unlock_region(r);
                errno = ESTALE;
                return -1;
        }
        uint64_t sum = sum_usage(r, dev);
        if (sat_add(sum, bytes) > limit) {
                /* Dead processes may still hold usage: reap (the only /proc access) and re-check. */
                reap_locked(r);
                if (atomic_load_explicit(&s->pid, memory_order_relaxed) == 0) {
                        unlock_region(r);
                        errno = ESTALE;
                        return -1;
                }
                sum = sum_usage(r, dev);
                if (sat_add(sum, bytes) > limit) {
                        atomic_fetch_add_explicit(&f->hdr.refused, 1, memory_order_relaxed);
                        unlock_region(r);
                        if (usage != NULL)
                                *usage = sum;
                        return 1;
                }
        }
        atomic_fetch_add_explicit(&s->used[dev], bytes, memory_order_relaxed);
        unlock_region(r);
        if (usage != NULL)
                *usage = sum + bytes;
        return 0;
}

int gs_region_uncharge(struct gs_region *r, int slot, unsigned dev, uint64_t bytes)
{
        if (check_slot_dev(r, slot, dev) < 0)
                return -1;
        _Atomic uint64_t *c = &r->f->slots[slot].used[dev];
        uint64_t old = atomic_load_explicit(c, memory_order_relaxed), nv;
        do
                nv = old > bytes ? old - bytes : 0;
        while (!atomic_compare_exchange_weak_explicit(c, &old, nv, memory_order_relaxed, memory_order_relaxed));
        return 0;
}

int gs_region_set_extra(struct gs_region *r, int slot, unsigned dev, uint64_t bytes)
{
        if (check_slot_dev(r, slot, dev) < 0)
                return -1;
        atomic_store_explicit(&r->f->slots[slot].extra[dev], bytes, memory_order_relaxed);
        return 0;
}

int gs_region_heartbeat(struct gs_region *r, int slot)
{
        if (check_slot_dev(r, slot, 0) < 0)
                return -1;
        atomic_store_explicit(&r->f->slots[slot].heartbeat_ns, realtime_ns(), memory_order_relaxed);
        return 0;
}

int gs_region_set_host_pid(struct gs_region *r, int slot, int host_pid)
{
        if (check_slot_dev(r, slot, 0) < 0)
                return -1;
        atomic_store_explicit(&r->f->slots[slot].host_pid, host_pid, memory_order_relaxed);
        return 0;
}

int gs_region_set_compute(struct gs_region *r, unsigned dev, uint32_t basis_points, uint32_t mode)
{
        if (check_slot_dev(r, 0, dev) < 0)
                return -1;
        atomic_store_explicit(&r->f->hdr.compute_limit[dev], basis_points, memory_order_relaxed);
        atomic_store_explicit(&r->f->hdr.compute_mode, mode, memory_order_relaxed);
        return 0;
}

int gs_region_set_busy(struct gs_region *r, int slot, unsigned dev, uint64_t busy_ns)
{
        if (check_slot_dev(r, slot, dev) < 0)
                return -1;
        atomic_store_explicit(&r->f->slots[slot].busy_ns[dev], busy_ns, memory_order_relaxed);
        return 0;
}

int gs_region_set_last_launch(struct gs_region *r, int slot, uint64_t realtime)
{
        if (check_slot_dev(r, slot, 0) < 0)
                return -1;
        atomic_store_explicit(&r->f->slots[slot].last_launch_ns, realtime, memory_order_relaxed);
        return 0;
}

uint64_t gs_region_busy(const struct gs_region *r, unsigned dev)
{
        if (r == NULL || dev >= ndev_of(r))
                return 0;
        const struct gs_region_file *f = r->f;
        unsigned hwm = hwm_of(r);
        uint64_t sum = 0;
        for (unsigned i = 0; i < hwm; i++) {
                const struct gs_region_slot *s = &f->slots[i];
                if (atomic_load_explicit(&s->pid, memory_order_acquire) != 0)
                        sum = sat_add(sum, atomic_load_explicit(&s->busy_ns[dev], memory_order_relaxed));
        }
        return sum;
}

_Atomic int64_t *gs_region_tokens(struct gs_region *r, unsigned dev)
{
        if (check_slot_dev(r, 0, dev) < 0)
                return NULL;
        return &r->f->hdr.tokens[dev];
}

uint64_t gs_region_refill_claim(struct gs_region *r, uint64_t now_ns)
{
        if (r == NULL || r->snapshot)
                return now_ns;
        return atomic_exchange_explicit(&r->f->hdr.refill_ns, now_ns, memory_order_relaxed);
}

/* The counters of dev, or NULL (no region, a snapshot, dev out of range): for the writers. */
static inline struct gs_region_dev_counters *dev_counters(struct gs_region *r, unsigned dev)
{
        if (r == NULL || r->snapshot || dev >= ndev_of(r))
                return NULL;
        return &r->f->ctr.dev[dev];
}

void gs_region_note_wait(struct gs_region *r, unsigned dev, uint64_t wait_ns)
{
        struct gs_region_dev_counters *c = dev_counters(r, dev);
        if (c == NULL || wait_ns == 0)
                return;
        atomic_fetch_add_explicit(&c->wait_bucket[gs_region_wait_bucket(wait_ns)], 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&c->wait_sum_ns, wait_ns, memory_order_relaxed);
}

void gs_region_add_launches(struct gs_region *r, unsigned dev, uint64_t n)
{
        struct gs_region_dev_counters *c = dev_counters(r, dev);
        if (c != NULL && n != 0)
                atomic_fetch_add_explicit(&c->launches, n, memory_order_relaxed);
}

void gs_region_set_priority(struct gs_region *r, uint32_t prio)
{
        if (r == NULL || r->snapshot)
                return;
        atomic_store_explicit(&r->f->ctr.priority, prio > GS_REGION_PRIO_LOW ? GS_REGION_PRIO_LOW : prio,
                              memory_order_relaxed);
}

void gs_region_set_compute_via(struct gs_region *r, unsigned dev, uint32_t via)
{
        struct gs_region_dev_counters *c = dev_counters(r, dev);
        if (c != NULL && via <= GS_REGION_VIA_TIME_FALLBACK)
                atomic_store_explicit(&c->compute_via, via, memory_order_relaxed);
}

int gs_region_usage(const struct gs_region *r, unsigned dev, uint64_t *used_total)
{
        if (r == NULL || used_total == NULL || dev >= ndev_of(r)) {
                errno = EINVAL;
                return -1;
        }
        *used_total = sum_usage(r, dev);
        return 0;
}

uint64_t gs_region_max_extra(const struct gs_region *r, unsigned dev)
{
        if (r == NULL || dev >= ndev_of(r))
                return 0;
        const struct gs_region_file *f = r->f;
        unsigned hwm = hwm_of(r);
        uint64_t max = 0;
        for (unsigned i = 0; i < hwm; i++) {
                const struct gs_region_slot *s = &f->slots[i];
                if (atomic_load_explicit(&s->pid, memory_order_acquire) == 0)
                        continue;
                uint64_t e = atomic_load_explicit(&s->extra[dev], memory_order_relaxed);
                if (e > max)
                        max = e;
        }
        return max;
}

int gs_region_reap(struct gs_region *r)
{
        if (r == NULL) {
                errno = EINVAL;
                return -1;
        }
        if (r->snapshot) {
                errno = EROFS;
                return -1;
        }
        if (lock_region(r) < 0)
                return -1;
        int n = reap_locked(r);
        unlock_region(r);
        return n;
}

uint64_t gs_region_limit(const struct gs_region *r, unsigned dev)
{
        if (r == NULL || dev >= ndev_of(r))
                return 0;
        return r->f->hdr.limit[dev];
}

void gs_region_publish_limit(struct gs_region *r, unsigned dev, uint64_t bytes)
{
        if (r == NULL || r->snapshot || dev >= ndev_of(r))
                return;
        atomic_store_explicit(&r->f->hdr.limit[dev], bytes, memory_order_relaxed);
}

uint32_t gs_region_limits_gen(const struct gs_region *r)
{
        return r == NULL ? 0 : atomic_load_explicit(&r->f->hdr.limits_gen, memory_order_relaxed);
}

unsigned gs_region_ndevices(const struct gs_region *r)
{
        return r != NULL ? ndev_of(r) : 0;
}

int gs_region_find_uuid(const struct gs_region *r, const char *uuid)
{
        if (r == NULL || uuid == NULL || uuid[0] == '\0')
                return -1;
        for (unsigned d = 0; d < ndev_of(r); d++)
                if (strncmp(r->f->hdr.uuid[d], uuid, GS_REGION_UUID_LEN) == 0)
                        return (int)d;
        return -1;
}

const struct gs_region_file *gs_region_file(const struct gs_region *r)
{
        return r != NULL ? r->f : NULL;
}

void gs_region_set_lock_timeout(struct gs_region *r, unsigned ms)
{
        if (r != NULL && ms > 0)
                r->lock_timeout_ms = ms;
}

/* For tools and tests. */
int gs_region_lock(struct gs_region *r)
{
        if (r == NULL || r->snapshot) {
                errno = r == NULL ? EINVAL : EROFS;
                return -1;
        }
        return lock_region(r);
}

int gs_region_unlock(struct gs_region *r)
{
        if (r == NULL || r->snapshot) {
                errno = r == NULL ? EINVAL : EROFS;
                return -1;
        }
        int rc = pthread_mutex_unlock(&r->f->hdr.lock.m);
        if (rc != 0) {
                errno = rc;
                return -1;
        }
        return 0;
}

int gs_region_stats(const struct gs_region *r, struct gs_region_stats *st)
{
        if (r == NULL || st == NULL) {
                errno = EINVAL;
                return -1;
        }
        const struct gs_region_file *f = r->f;
        memset(st, 0, sizeof(*st));
        st->hwm = hwm_of(r);
        for (unsigned i = 0; i < st->hwm; i++)
                if (atomic_load_explicit(&f->slots[i].pid, memory_order_relaxed) != 0)
                        st->live++;
        st->reaped = atomic_load_explicit(&f->hdr.reaped, memory_order_relaxed);
        st->recoveries = atomic_load_explicit(&f->hdr.recoveries, memory_order_relaxed);
        st->refused = atomic_load_explicit(&f->hdr.refused, memory_order_relaxed);
        return 0;
}
