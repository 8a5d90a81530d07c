/*
 * Live limits in the interposer (vgpu.h: gs_vgpu_live_*). The slice's limits file
 * (GPUSLICE_LIVE_LIMITS) is the host's: read-only in a container (a directory mounted read-only,
 * so that the host's rename of a new file over it shows through), replaced whole by `gpuslice
 * slice set`. A process re-reads it
 *   - at once on an allocation path, when the generation the host bumps in the usage region moved
 *     (a relaxed load; the region is only a hint: any process of the slice can write it, and
 *     what is read is always the host's file);
 *   - every 250 ms in a thread of its own (started with the region: only processes that use the
 *     GPU), when the file changed (inode, size, time) or the generation moved.
 * Memory limits apply at once (views and charges read gs_vgpu_quota); the limiter takes compute
 * changes at its next window (gs_vgpu_live_version moves). Nothing is freed or killed when a
 * quota falls below what is in use: new allocations fail until usage is under it, and this
 * process says so once per change.
 */
#include "vgpu/vgpu.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "region/region.h"

#define S gs_vgpu_state
#define GS_LIVE_POLL_NS 250000000L

static struct {
        pthread_mutex_t lock;           /* reloads (never on a launch path) */
        _Atomic uint64_t quota[GS_VGPU_MAX_DEVICES];
        _Atomic unsigned version;       /* bumped by every applied change */
        _Atomic uint32_t region_gen;    /* the region's generation when we last read the file */
        _Atomic bool running;
        struct gs_vgpu_live now;        /* under lock */
        struct stat seen;               /* the file we applied (ino, size, mtime) */
} V = {.lock = PTHREAD_MUTEX_INITIALIZER};

void gs_vgpu_live_init(void)
{
        for (int i = 0; i < GS_VGPU_MAX_DEVICES; i++)
                atomic_store_explicit(&V.quota[i], S.cfg.limit[i], memory_order_relaxed);
        memcpy(V.now.limit, S.cfg.limit, sizeof(V.now.limit));
        memcpy(V.now.compute, S.cfg.compute, sizeof(V.now.compute));
        V.now.compute_mode = S.cfg.compute_mode;
        V.now.priority = S.cfg.priority;
        V.now.generation = S.cfg.live_gen;
        /* (V.seen stays empty: the watcher's first look reads the file again, so that a change
         * made between the configuration's read and now is not missed) */
}

uint64_t gs_vgpu_quota(int vis)
{
        if (vis < 0 || vis >= GS_VGPU_MAX_DEVICES)
                return 0;
        return atomic_load_explicit(&V.quota[vis], memory_order_relaxed);
}

unsigned gs_vgpu_live_version(void)
{
        return atomic_load_explicit(&V.version, memory_order_relaxed);
}

void gs_vgpu_live_get(struct gs_vgpu_live *out)
{
        pthread_mutex_lock(&V.lock);
        *out = V.now;
        pthread_mutex_unlock(&V.lock);
}

static void fmt_size(uint64_t b, char *buf, size_t len)
{
        if (b == 0)
                snprintf(buf, len, "unlimited");
        else if (b % (1ull << 20) == 0)
                snprintf(buf, len, "%llu MiB", (unsigned long long)(b >> 20));
        else
                snprintf(buf, len, "%llu bytes", (unsigned long long)b);
}

/* The new memory quotas: applied, published for the observer, said when below usage. */
static void apply_memory(const struct gs_vgpu_live *l)
{
        int n = S.nvisible > 0 ? S.nvisible : GS_VGPU_MAX_DEVICES;
        for (int i = 0; i < GS_VGPU_MAX_DEVICES; i++) {
                uint64_t old = atomic_exchange_explicit(&V.quota[i], l->limit[i], memory_order_relaxed);
                if (i >= n)
                        continue;
                if (S.region != NULL)
                        gs_region_publish_limit(S.region, (unsigned)i, l->limit[i]);
                if (old == l->limit[i])
                        continue;
                char a[32], b[32];
                fmt_size(old, a, sizeof(a));
                fmt_size(l->limit[i], b, sizeof(b));
                uint64_t used = 0;
                if (S.region != NULL && (unsigned)i < gs_region_ndevices(S.region))
                        gs_region_usage(S.region, (unsigned)i, &used);
                if (l->limit[i] != 0 && used > l->limit[i]) {
                        char u[32];
                        fmt_size(used, u, sizeof(u));
                        gs_vgpu_log(1, "device %d: memory quota %s -> %s, below the %s in use: nothing is freed; new "
                                       "allocations fail until usage is under the quota", i, a, b, u);
                } else {
                        gs_vgpu_log(2, "device %d: memory quota %s -> %s", i, a, b);
                }
        }
}

/* Read the file and apply it if it is another one. Caller holds V.lock. */
static void reload_locked(void)
{
        struct stat st;
        uint32_t gen = S.region != NULL ? gs_region_limits_gen(S.region) : 0;
        atomic_store_explicit(&V.region_gen, gen, memory_order_relaxed);
        if (stat(S.cfg.live, &st) < 0)
                return; /* gone (the slice is being removed): keep what we have */
        if (st.st_ino == V.seen.st_ino && st.st_size == V.seen.st_size && st.st_mtim.tv_sec == V.seen.st_mtim.tv_sec &&
            st.st_mtim.tv_nsec == V.seen.st_mtim.tv_nsec)
                return;
        struct gs_vgpu_live l;
        char why[300];
        if (gs_vgpu_live_read(S.cfg.live, &l, why, sizeof(why)) < 0) {
                gs_vgpu_log(1, "live limits ignored: %s (the limits stay as they are)", why);
                V.seen = st;
                return;
        }
        V.seen = st;
        if (l.generation == V.now.generation)
                return;
        if (S.cfg.error && S.cfg.ignore_errors)
                memset(l.limit, 0, sizeof(l.limit)); /* running without limits: so it stays */
        apply_memory(&l);
        gs_vgpu_log(2, "live limits generation %llu applied (was %llu)", (unsigned long long)l.generation,
                    (unsigned long long)V.now.generation);
        V.now = l;
        atomic_fetch_add_explicit(&V.version, 1, memory_order_release);
}

void gs_vgpu_live_poll(void)
{
        if (S.cfg.live[0] == '\0' || S.region == NULL ||
            gs_region_limits_gen(S.region) == atomic_load_explicit(&V.region_gen, memory_order_relaxed))
                return;
        pthread_mutex_lock(&V.lock);
        reload_locked();
        pthread_mutex_unlock(&V.lock);
}

static void *watcher(void *arg)
{
        (void)arg;
        for (;;) {
                struct timespec ts = {0, GS_LIVE_POLL_NS};
                nanosleep(&ts, NULL);
                pthread_mutex_lock(&V.lock);
                reload_locked();
                pthread_mutex_unlock(&V.lock);
        }
        return NULL;
}

void gs_vgpu_live_start(void)
{
        if (S.cfg.live[0] == '\0' || atomic_exchange(&V.running, true))
                return;
        /* The region is open now: what it says about generations counts from here. */
        atomic_store_explicit(&V.region_gen, S.region != NULL ? gs_region_limits_gen(S.region) : 0, memory_order_relaxed);
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old); /* the application's signals stay with its threads */
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, 128 * 1024);
        if (pthread_create(&t, &attr, watcher, NULL) != 0)
                atomic_store(&V.running, false);
        pthread_attr_destroy(&attr);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void gs_vgpu_live_after_fork(void)
{
        pthread_mutex_init(&V.lock, NULL);
        atomic_store(&V.running, false);
}
