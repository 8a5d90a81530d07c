/* The collector: every slice on this host, from the regions directory and extra regions (collect.h). */
#include "observe/collect.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "common/strutil.h"
#include "observe/busy.h"
#include "observe/region_read.h"

/* The pid namespace every host process is in (PROC_PID_INIT_INO). */
#define GS_INIT_PID_NS_INO 0xEFFFFFFCu

/* What the collector remembers of one region between scans. */
struct source {
        char *key;                          /* slice id, or the extra region's absolute path */
        bool in_dir;
        bool seen;                          /* in this scan */
        bool owner_known, owner_dead;
        pid_t owner_pid;
        unsigned long long owner_start;
        int pidfd;                          /* on the owner, or -1 */
        bool labels_done;
        struct gs_slice_labels labels;
        char logged[256];                   /* the last reason reported for it ("" = fine) */
        struct gs_busy busy;
        struct gs_waits waits;
};

struct gs_collector {
        char regions_dir[PATH_MAX];         /* "" = none */
        char **patterns;
        size_t npatterns;
        uint64_t window_ns;
        bool host_pidns;                    /* owners' pids mean something here */
        void (*log)(void *arg, const char *line);
        void *log_arg;
        char dir_logged[256];               /* the regions directory's last reported problem */
        struct source **src;                /* sorted by key */
        size_t nsrc, capsrc;
        struct gs_region_image *img;        /* scratch */
};

static uint64_t clock_ns(clockid_t id)
{
        struct timespec ts;
        clock_gettime(id, &ts);
        return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#define report(c, ...) gs_log_warn_to((c)->log, (c)->log_arg, __VA_ARGS__)

/* Report `why` for a source unless it is what was reported last for it. */
static void note(struct gs_collector *c, struct source *s, const char *path, const char *why)
{
        if (strcmp(s->logged, why) == 0)
                return;
        gs_strlcpy(s->logged, why, sizeof(s->logged));
        report(c, "usage region %s: %s (skipped)", path, why);
}

static void heal(struct gs_collector *c, struct source *s, const char *path)
{
        if (s->logged[0] == '\0')
                return;
        s->logged[0] = '\0';
        report(c, "usage region %s: valid again", path);
}

static bool in_host_pidns(void)
{
        struct stat st;
        return stat("/proc/self/ns/pid", &st) == 0 && st.st_ino == GS_INIT_PID_NS_INO;
}

struct gs_collector *gs_collector_new(const struct gs_collector_opts *o, struct gs_error *err)
{
        struct gs_collector *c = calloc(1, sizeof(*c));
        if (c == NULL || (c->img = malloc(sizeof(*c->img))) == NULL) {
                free(c);
                gs_error_set(err, GS_ENOMEM, "out of memory");
                return NULL;
        }
        const char *dir = o->regions_dir != NULL ? o->regions_dir : GS_SLICE_REGIONS_DIR;
        if (!gs_strlcpy(c->regions_dir, dir, sizeof(c->regions_dir)) || (dir[0] != '\0' && dir[0] != '/')) {
                gs_collector_free(c);
                gs_error_set(err, GS_EINVAL, "the regions directory must be an absolute path: %s", dir);
                return NULL;
        }
        c->patterns = calloc(o->nregions + 1, sizeof(char *));
        for (size_t i = 0; c->patterns != NULL && i < o->nregions; i++) {
                if (o->regions[i][0] != '/') {
                        gs_collector_free(c);
                        gs_error_set(err, GS_EINVAL, "a region must be an absolute path: %s", o->regions[i]);
                        return NULL;
                }
                if ((c->patterns[i] = strdup(o->regions[i])) == NULL)
                        break;
                c->npatterns++;
        }
        if (c->patterns == NULL || c->npatterns != o->nregions) {
                gs_collector_free(c);
                gs_error_set(err, GS_ENOMEM, "out of memory");
                return NULL;
        }
        c->window_ns = (uint64_t)(o->window_ms != 0 ? o->window_ms : 1000) * 1000000ull;
        c->log = o->log;
        c->log_arg = o->log_arg;
        c->host_pidns = in_host_pidns();
        if (!c->host_pidns && c->regions_dir[0] != '\0')
                report(c, "not in the host's pid namespace: containers' liveness cannot be judged from here, so "
                          "every slice directory is shown and none is cleaned up (run with the host's pid namespace)");
        return c;
}

static void source_free(struct source *s)
{
        if (s == NULL)
                return;
        if (s->pidfd >= 0)
                close(s->pidfd);
        gs_busy_release(&s->busy);
        free(s->key);
        free(s);
}

void gs_collector_free(struct gs_collector *c)
{
        if (c == NULL)
                return;
        for (size_t i = 0; i < c->nsrc; i++)
                source_free(c->src[i]);
        free(c->src);
        for (size_t i = 0; c->patterns != NULL && i < c->npatterns; i++)
                free(c->patterns[i]);
        free(c->patterns);
        free(c->img);
        free(c);
}

/* The source for key (made if new), or NULL when out of memory. */
static struct source *source_get(struct gs_collector *c, const char *key, bool in_dir)
{
        size_t lo = 0, hi = c->nsrc;
        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                int cmp = strcmp(c->src[mid]->key, key);
                if (cmp == 0)
                        return c->src[mid];
                if (cmp < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        if (c->nsrc == c->capsrc) {
                size_t cap = c->capsrc ? c->capsrc * 2 : 64;
                struct source **v = realloc(c->src, cap * sizeof(*v));
                if (v == NULL)
                        return NULL;
                c->src = v;
                c->capsrc = cap;
        }
        struct source *s = calloc(1, sizeof(*s));
        if (s == NULL || (s->key = strdup(key)) == NULL) {
                free(s);
                return NULL;
        }
        s->in_dir = in_dir;
        s->pidfd = -1;
        memmove(&c->src[lo + 1], &c->src[lo], (c->nsrc - lo) * sizeof(*c->src));
        c->src[lo] = s;
        c->nsrc++;
        return s;
}

/* Forget the regions not seen in this scan (their container or file is gone). */
static void drop_unseen(struct gs_collector *c)
{
        size_t k = 0;
        for (size_t i = 0; i < c->nsrc; i++) {
                if (c->src[i]->seen)
                        c->src[k++] = c->src[i];
                else
                        source_free(c->src[i]);
        }
        c->nsrc = k;
}

/* 1 the owner lives, 0 it is gone, -1 no owner record (yet). */
static int owner_alive(struct gs_collector *c, struct source *s, int regfd)
{
        if (!c->host_pidns)
                return 1;
        if (!s->owner_known) {
                if (gs_slice_read_owner(regfd, s->key, &s->owner_pid, &s->owner_start) < 0)
                        return -1;
                s->owner_known = true;
                /* The pidfd first, then the start time: if both agree, the pidfd is the owner. */
                s->pidfd = (int)syscall(SYS_pidfd_open, s->owner_pid, 0);
                if (gs_region_proc_start_time(s->owner_pid) != s->owner_start)
                        s->owner_dead = true;
        }
        if (s->owner_dead)
                return 0;
        if (s->pidfd >= 0) {
                struct pollfd p = {.fd = s->pidfd, .events = POLLIN};
                if (poll(&p, 1, 0) > 0)
                        s->owner_dead = true; /* readable: the process has exited */
        } else if (gs_region_proc_start_time(s->owner_pid) != s->owner_start) {
                s->owner_dead = true;
        }
        return s->owner_dead ? 0 : 1;
}

static struct gs_obs_slice *new_slice(struct gs_observation *out, size_t *cap)
{
        if (out->nslices == *cap) {
                size_t n = *cap ? *cap * 2 : 16;
                struct gs_obs_slice *v = realloc(out->slices, n * sizeof(*v));
                if (v == NULL)
                        return NULL;
                out->slices = v;
                *cap = n;
        }
        struct gs_obs_slice *sl = &out->slices[out->nslices];
        memset(sl, 0, sizeof(*sl));
        return sl;
}

static void fill_waits(struct gs_obs_device *dv, const struct gs_region_image *img, const struct gs_waits *w,
                       unsigned d)
{
        dv->compute_via = img->counters ? atomic_load_explicit(&img->ctr.dev[d].compute_via, memory_order_relaxed)
                                        : GS_REGION_UNSET;
        /* Counted where the gate runs (a compute limit) or launches were counted at all. */
        dv->waits_known = w->known && (dv->compute_measured || w->hist[d].count > 0);
        if (!dv->waits_known)
                return;
        dv->waits = w->hist[d];
        dv->waits_window_valid = w->window_valid;
        if (w->window_valid)
                dv->waits_window = w->win[d];
}

static void fill_devices(struct gs_obs_slice *sl, const struct gs_region_image *img, const struct source *s,
                         const struct gs_region_sums *sums)
{
        const struct gs_busy *b = &s->busy;
        const struct gs_region_header *h = &img->hdr;
        sl->ndevices = h->ndevices;
        for (unsigned d = 0; d < h->ndevices; d++) {
                struct gs_obs_device *dv = &sl->dev[d];
                uint32_t bp = atomic_load_explicit(&h->compute_limit[d], memory_order_relaxed);
                dv->index = d;
                memcpy(dv->uuid, h->uuid[d], sizeof(dv->uuid));
                dv->memory_allocated = sums->allocated[d];
                dv->memory_overhead = sums->overhead[d];
                dv->memory_used = sums->allocated[d] + sums->overhead[d];
                if (dv->memory_used < sums->allocated[d])
                        dv->memory_used = UINT64_MAX;
                dv->memory_limit = h->limit[d];
                dv->compute_limit = bp / 10000.0;
                dv->compute_measured = bp > 0 && sl->compute_mode != 2;
                dv->compute_used_valid = dv->compute_measured && b->ratio_valid;
                dv->compute_used = dv->compute_used_valid ? b->ratio[d] : 0;
                dv->busy_ns_total = b->total_ns[d];
                dv->processes = sums->procs[d];
                fill_waits(dv, img, &s->waits, d);
        }
}

/* One valid region into the observation: -1 out of memory. */
static int add_slice(struct gs_observation *out, size_t *cap, const struct source *s, const char *path,
                     const struct gs_region_image *img)
{
        struct gs_region_sums sums;
        gs_region_image_sum(img, &sums);
        struct gs_obs_slice *sl = new_slice(out, cap);
        if (sl == NULL)
                return -1;
        out->nslices++; /* counted now: released with the observation whatever happens below */
        if (sums.live > 0 && (sl->procs = calloc(sums.live, sizeof(*sl->procs))) == NULL)
                return -1;
        gs_strlcpy(sl->id, s->key, sizeof(sl->id));
        if ((sl->region = strdup(path)) == NULL)
                return -1;
        sl->in_regions_dir = s->in_dir;
        sl->owner_pid = s->in_dir && s->owner_known ? s->owner_pid : 0;
        sl->labels = s->labels;
        sl->compute_mode = atomic_load_explicit(&img->hdr.compute_mode, memory_order_relaxed);
        sl->created_ns = img->hdr.created_ns;
        sl->refused = atomic_load_explicit(&img->hdr.refused, memory_order_relaxed);
        sl->last_kernel_ns = sums.last_launch_ns;
        sl->compute_window_ns = s->busy.ratio_valid ? s->busy.ratio_window_ns : 0;
        sl->priority = img->counters ? atomic_load_explicit(&img->ctr.priority, memory_order_relaxed) : GS_REGION_UNSET;
        sl->waits_window_ns = s->waits.window_valid ? s->waits.window_ns : 0;
        for (unsigned i = 0; i < img->nslots && sl->nprocs < sums.live; i++) {
                const struct gs_region_slot *slot = &img->slots[i];
                int pid = atomic_load_explicit(&slot->pid, memory_order_relaxed);
                if (pid <= 0)
                        continue;
                sl->procs[sl->nprocs++] = (struct gs_obs_proc){
                        .slot = i,
                        .pid = pid,
                        .host_pid = atomic_load_explicit(&slot->host_pid, memory_order_relaxed),
                        .start_time = atomic_load_explicit(&slot->start_time, memory_order_relaxed),
                };
        }
        fill_devices(sl, img, s, &sums);
        return 0;
}

struct scan {
        struct gs_collector *c;
        uint64_t now;
        struct gs_observation *out;
        size_t cap;
};

/* Read one source's region: shown, or skipped (and reported once). -1 out of memory. */
static int read_region(struct scan *sc, struct source *s, int dirfd, const char *rel, const char *path)
{
        struct gs_collector *c = sc->c;
        struct gs_error e = {0};
        int rc = gs_region_read_at(dirfd, rel, c->img, &e);
        if (rc > 0 || (rc < 0 && e.code == GS_ENOTFOUND && s->in_dir)) {
                /* Not written yet (or, in a slice directory being made, not there yet). A hook's
                 * slice is like that until its first GPU use: the debug log only. */
                sc->out->pending++;
                if (rc > 0 && !s->in_dir)
                        note(c, s, path, e.msg);
                else
                        gs_log_info("usage region %s: %s", path, rc > 0 ? e.msg : "not there yet");
                return 0;
        }
        if (rc < 0) {
                if (e.code != GS_ENOTFOUND)
                        sc->out->skipped++;
                note(c, s, path, e.code == GS_ENOTFOUND ? "no such file" : e.msg);
                return 0;
        }
        heal(c, s, path);
        if (gs_busy_update(&s->busy, c->img, sc->now, c->window_ns) < 0)
                return -1;
        gs_waits_update(&s->waits, c->img, sc->now, c->window_ns);
        return add_slice(sc->out, &sc->cap, s, path, c->img);
}

/* One entry of the regions directory. -1 out of memory. */
static int scan_slice_dir(struct scan *sc, int regfd, const char *name)
{
        struct gs_collector *c = sc->c;
        struct source *s = source_get(c, name, true);
        if (s == NULL)
                return -1;
        s->seen = true;
        char path[PATH_MAX], rel[GS_OBS_ID_MAX + 8];
        snprintf(path, sizeof(path), "%s/%s/usage", c->regions_dir, name);
        snprintf(rel, sizeof(rel), "%s/usage", name);
        int alive = owner_alive(c, s, regfd);
        if (alive == 0) {
                sc->out->gone++;
                if (strcmp(s->logged, "gone") != 0) {
                        gs_strlcpy(s->logged, "gone", sizeof(s->logged));
                        report(c, "slice %s: its container is gone (left out; its directory is swept)", name);
                }
                return 0;
        }
        if (alive < 0) { /* being made (the hook writes the owner first), or half-made: the sweep's */
                gs_log_info("slice %s: no owner record yet", name);
                return 0;
        }
        if (!s->labels_done) {
                int lr = gs_slice_read_labels(regfd, name, &s->labels);
                if (lr < 0)
                        report(c, "slice %s: its labels file is unreadable or not a JSON object (ignored)", name);
                s->labels_done = lr != 0;
        }
        return read_region(sc, s, regfd, rel, path);
}

static int scan_regions_dir(struct scan *sc)
{
        struct gs_collector *c = sc->c;
        int regfd = open(c->regions_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = regfd >= 0 ? fdopendir(regfd) : NULL;
        if (d == NULL) {
                char why[256];
                snprintf(why, sizeof(why), "%s", strerror(errno));
                if (regfd >= 0)
                        close(regfd);
                if (strcmp(c->dir_logged, why) != 0) {
                        gs_strlcpy(c->dir_logged, why, sizeof(c->dir_logged));
                        report(c, "regions directory %s: %s (no slices there yet?)", c->regions_dir, why);
                }
                return 0;
        }
        c->dir_logged[0] = '\0';
        struct dirent *e;
        int rc = 0;
        while (rc == 0 && (e = readdir(d)) != NULL) {
                if (e->d_name[0] == '.' || !gs_slice_id_valid(e->d_name))
                        continue;
                struct stat st;
                if (e->d_type != DT_DIR &&
                    (e->d_type != DT_UNKNOWN || fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                     !S_ISDIR(st.st_mode)))
                        continue;
                rc = scan_slice_dir(sc, dirfd(d), e->d_name);
        }
        closedir(d);
        return rc;
}

static int scan_extra(struct scan *sc, const char *path)
{
        struct source *s = source_get(sc->c, path, false);
        if (s == NULL)
                return -1;
        if (s->seen)
                return 0; /* matched by two patterns */
        s->seen = true;
        return read_region(sc, s, AT_FDCWD, path, path);
}

static int scan_pattern(struct scan *sc, const char *pattern)
{
        if (strpbrk(pattern, "*?[") == NULL)
                return scan_extra(sc, pattern);
        glob_t g;
        int grc = glob(pattern, GLOB_NOSORT, NULL, &g);
        int rc = 0;
        for (size_t i = 0; grc == 0 && rc == 0 && i < g.gl_pathc; i++)
                rc = scan_extra(sc, g.gl_pathv[i]);
        if (grc == 0 || grc == GLOB_NOMATCH)
                globfree(&g);
        return grc == GLOB_NOSPACE ? -1 : rc;
}

static int by_id(const void *a, const void *b)
{
        return strcmp((*(const struct gs_obs_slice *const *)a)->id, (*(const struct gs_obs_slice *const *)b)->id);
}

/* Order the slices by id: sort pointers, then move each slice once. -1 out of memory. */
static int sort_slices(struct gs_observation *out)
{
        if (out->nslices < 2)
                return 0;
        struct gs_obs_slice **ptr = malloc(out->nslices * sizeof(*ptr));
        struct gs_obs_slice *sorted = malloc(out->nslices * sizeof(*sorted));
        if (ptr == NULL || sorted == NULL) {
                free(ptr);
                free(sorted);
                return -1;
        }
        for (size_t i = 0; i < out->nslices; i++)
                ptr[i] = &out->slices[i];
        qsort(ptr, out->nslices, sizeof(*ptr), by_id);
        for (size_t i = 0; i < out->nslices; i++)
                memcpy(&sorted[i], ptr[i], sizeof(sorted[i]));
        free(ptr);
        free(out->slices);
        out->slices = sorted;
        return 0;
}

int gs_collector_scan_at(struct gs_collector *c, uint64_t mono_ns, struct gs_observation *out, struct gs_error *err)
{
        memset(out, 0, sizeof(*out));
        uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
        for (size_t i = 0; i < c->nsrc; i++)
                c->src[i]->seen = false;
        struct scan sc = {.c = c, .now = mono_ns, .out = out};
        int rc = c->regions_dir[0] != '\0' ? scan_regions_dir(&sc) : 0;
        for (size_t i = 0; rc == 0 && i < c->npatterns; i++)
                rc = scan_pattern(&sc, c->patterns[i]);
        if (rc == 0)
                rc = sort_slices(out);
        if (rc < 0) {
                gs_observation_release(out);
                /* keep every source: a failed scan must not reset the accounting */
                for (size_t i = 0; i < c->nsrc; i++)
                        c->src[i]->seen = true;
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        }
        drop_unseen(c);
        out->time_ns = clock_ns(CLOCK_REALTIME);
        out->scan_ns = clock_ns(CLOCK_MONOTONIC) - t0;
        return 0;
}

int gs_collector_scan(struct gs_collector *c, struct gs_observation *out, struct gs_error *err)
{
        return gs_collector_scan_at(c, clock_ns(CLOCK_MONOTONIC), out, err);
}

void gs_observation_release(struct gs_observation *o)
{
        for (size_t i = 0; o->slices != NULL && i < o->nslices; i++) {
                free(o->slices[i].procs);
                free(o->slices[i].region);
        }
        free(o->slices);
        memset(o, 0, sizeof(*o));
}

unsigned gs_collector_sweep(struct gs_collector *c)
{
        if (!c->host_pidns || c->regions_dir[0] == '\0')
                return 0;
        unsigned n = gs_slice_sweep(c->regions_dir);
        if (n > 0)
                report(c, "removed %u slice director%s of containers that are gone", n, n == 1 ? "y" : "ies");
        return n;
}
