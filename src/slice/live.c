/* A slice's live limits, the host's side (live.h). */
#include "slice/live.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "common/strutil.h"
#include "region/region.h"
#include "slice/slice.h"
#include "vgpu/config.h"

static int copy_value(char *dst, const char *v, const char *what, struct gs_error *err)
{
        if (!gs_strlcpy(dst, v, GS_SLICE_VALUE_MAX))
                return gs_error_set(err, GS_EINVAL, "%s '%.40s...': too long", what, v);
        return 0;
}

static int check_size(const char *v, const char *what, struct gs_error *err)
{
        uint64_t b;
        if (gs_vgpu_parse_size(v, &b) < 0)
                return gs_error_set(err, GS_EINVAL, "invalid %s '%s' (a size: bytes, or K/M/G/T or Ki/Mi/Gi/Ti; "
                                                    "'unlimited' for none)", what, v);
        return 0;
}

static int check_percent(const char *v, const char *what, struct gs_error *err)
{
        unsigned p;
        if (gs_vgpu_parse_percent(v, &p) < 0 || p == 0)
                return gs_error_set(err, GS_EINVAL, "invalid %s '%s' (a percentage, 1..100; 100: unlimited)", what, v);
        return 0;
}

/* Validate and copy the limits `s` sets into l (the others stay). */
static int merge(const struct gs_slice_opts *s, struct gs_slice_limits *l, struct gs_error *err)
{
        if (s->memory != NULL) {
                if (check_size(s->memory, "memory", err) < 0 || copy_value(l->memory, s->memory, "memory", err) < 0)
                        return -1;
                memset(l->memory_dev, 0, sizeof(l->memory_dev));
        }
        if (s->compute != NULL) {
                if (check_percent(s->compute, "compute", err) < 0 || copy_value(l->compute, s->compute, "compute", err) < 0)
                        return -1;
                memset(l->compute_dev, 0, sizeof(l->compute_dev));
        }
        for (int i = 0; i < GS_SLICE_MAX_DEVICES; i++) {
                char what[32];
                snprintf(what, sizeof(what), "memory-%d", i);
                if (s->memory_dev[i] != NULL &&
                    (check_size(s->memory_dev[i], what, err) < 0 || copy_value(l->memory_dev[i], s->memory_dev[i], what, err) < 0))
                        return -1;
                snprintf(what, sizeof(what), "compute-%d", i);
                if (s->compute_dev[i] != NULL && (check_percent(s->compute_dev[i], what, err) < 0 ||
                                                  copy_value(l->compute_dev[i], s->compute_dev[i], what, err) < 0))
                        return -1;
        }
        if (s->compute_mode != NULL) {
                int m = gs_vgpu_parse_compute_mode(s->compute_mode);
                if (m < 0)
                        return gs_error_set(err, GS_EINVAL, "invalid compute mode '%s' (cap, share or off)", s->compute_mode);
                snprintf(l->compute_mode, sizeof(l->compute_mode), "%s",
                         m == GS_COMPUTE_CAP ? "cap" : m == GS_COMPUTE_SHARE ? "share" : "off");
        }
        if (s->priority != NULL) {
                int p = gs_vgpu_parse_priority(s->priority, false);
                if (p < 0)
                        return gs_error_set(err, GS_EINVAL, "invalid priority '%s' (high, normal or low)", s->priority);
                snprintf(l->priority, sizeof(l->priority), "%s", gs_vgpu_priority_name(p));
        }
        return 0;
}

unsigned gs_slice_limits_compute(const struct gs_slice_limits *l, unsigned i)
{
        const char *v = i < GS_SLICE_MAX_DEVICES && l->compute_dev[i][0] != '\0' ? l->compute_dev[i] : l->compute;
        unsigned p = 0;
        if (*v == '\0' || gs_vgpu_parse_percent(v, &p) < 0 || p >= 100)
                return 0;
        return p;
}

uint64_t gs_slice_limits_memory(const struct gs_slice_limits *l, unsigned i)
{
        const char *v = i < GS_SLICE_MAX_DEVICES && l->memory_dev[i][0] != '\0' ? l->memory_dev[i] : l->memory;
        uint64_t b = 0;
        if (*v == '\0' || gs_vgpu_parse_size(v, &b) < 0)
                return 0;
        return b;
}

static bool any_compute(const struct gs_slice_limits *l)
{
        for (unsigned i = 0; i < GS_SLICE_MAX_DEVICES; i++)
                if (gs_slice_limits_compute(l, i) != 0)
                        return true;
        return false;
}

int gs_slice_limits_from_opts(const struct gs_slice_opts *s, struct gs_slice_limits *l, struct gs_error *err)
{
        memset(l, 0, sizeof(*l));
        l->generation = 1;
        if (merge(s, l, err) < 0)
                return -1;
        l->compute_gated = any_compute(l) && strcmp(l->compute_mode, "off") != 0;
        return 0;
}

static int render(const struct gs_slice_limits *l, char *buf, size_t size)
{
        size_t n = 0;
#define ADD(...) n += (size_t)snprintf(buf + n, n < size ? size - n : 0, __VA_ARGS__)
        ADD("# The slice's live limits, written by gpuslice on the host (`gpuslice slice set`).\n");
        ADD("GPUSLICE_GENERATION=%llu\n", (unsigned long long)l->generation);
        ADD("GPUSLICE_COMPUTE_GATED=%d\n", l->compute_gated ? 1 : 0);
        if (l->memory[0] != '\0')
                ADD("GPUSLICE_MEMORY_LIMIT=%s\n", l->memory);
        for (int i = 0; i < GS_SLICE_MAX_DEVICES; i++)
                if (l->memory_dev[i][0] != '\0')
                        ADD("GPUSLICE_MEMORY_LIMIT_%d=%s\n", i, l->memory_dev[i]);
        if (l->compute[0] != '\0')
                ADD("GPUSLICE_COMPUTE_LIMIT=%s\n", l->compute);
        for (int i = 0; i < GS_SLICE_MAX_DEVICES; i++)
                if (l->compute_dev[i][0] != '\0')
                        ADD("GPUSLICE_COMPUTE_LIMIT_%d=%s\n", i, l->compute_dev[i]);
        if (l->compute_mode[0] != '\0')
                ADD("GPUSLICE_COMPUTE_MODE=%s\n", l->compute_mode);
        if (l->priority[0] != '\0')
                ADD("GPUSLICE_PRIORITY=%s\n", l->priority);
#undef ADD
        return n < size ? (int)n : -1;
}

int gs_slice_write_live(int dirfd, const struct gs_slice_limits *l, struct gs_error *err)
{
        char buf[4096];
        int n = render(l, buf, sizeof(buf));
        if (n < 0)
                return gs_error_set(err, GS_EINVAL, "live limits too long");
        if (mkdirat(dirfd, "live", 0755) < 0 && errno != EEXIST)
                return gs_error_sys(err, "mkdir live");
        gs_autoclose int live = openat(dirfd, "live", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (live < 0)
                return gs_error_sys(err, "open live");
        char tmp[64];
        snprintf(tmp, sizeof(tmp), ".limits.%d", (int)getpid());
        unlinkat(live, tmp, 0);
        gs_autoclose int fd = openat(live, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
        if (fd < 0)
                return gs_error_sys(err, "create live/%s", tmp);
        for (int off = 0; off < n;) {
                ssize_t w = write(fd, buf + off, (size_t)(n - off));
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0) {
                        gs_error_sys(err, "write live/%s", tmp);
                        unlinkat(live, tmp, 0);
                        return -1;
                }
                off += (int)w;
        }
        if (fchmod(fd, 0444) < 0 || renameat(live, tmp, live, "limits") < 0) {
                gs_error_sys(err, "replace live/limits");
                unlinkat(live, tmp, 0);
                return -1;
        }
        return 0;
}

/* The value of KEY= in text (a copy into out), or false. */
static bool get_key(const char *text, const char *key, char *out, size_t len)
{
        size_t k = strlen(key);
        for (const char *line = text; line != NULL && *line != '\0';) {
                const char *next = strchr(line, '\n');
                size_t ll = next != NULL ? (size_t)(next - line) : strlen(line);
                if (ll > k && strncmp(line, key, k) == 0 && line[k] == '=') {
                        size_t vl = ll - k - 1;
                        if (vl >= len)
                                return false;
                        memcpy(out, line + k + 1, vl);
                        out[vl] = '\0';
                        return true;
                }
                line = next != NULL ? next + 1 : NULL;
        }
        return false;
}

int gs_slice_read_live(int regfd, const char *id, struct gs_slice_limits *l)
{
        memset(l, 0, sizeof(*l));
        char path[PATH_MAX], buf[4096];
        if (snprintf(path, sizeof(path), "%s/live/limits", id) >= (int)sizeof(path))
                return -1;
        gs_autoclose int fd = openat(regfd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return errno == ENOENT ? 0 : -1;
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size >= (off_t)sizeof(buf))
                return -1;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        if (n <= 0)
                return -1;
        buf[n] = '\0';
        char v[GS_SLICE_VALUE_MAX];
        if (!get_key(buf, "GPUSLICE_GENERATION", v, sizeof(v)) || (l->generation = strtoull(v, NULL, 10)) == 0)
                return -1;
        l->compute_gated = get_key(buf, "GPUSLICE_COMPUTE_GATED", v, sizeof(v)) && strcmp(v, "1") == 0;
        get_key(buf, "GPUSLICE_MEMORY_LIMIT", l->memory, sizeof(l->memory));
        get_key(buf, "GPUSLICE_COMPUTE_LIMIT", l->compute, sizeof(l->compute));
        get_key(buf, "GPUSLICE_COMPUTE_MODE", l->compute_mode, sizeof(l->compute_mode));
        get_key(buf, "GPUSLICE_PRIORITY", l->priority, sizeof(l->priority));
        for (int i = 0; i < GS_SLICE_MAX_DEVICES; i++) {
                char k[48];
                snprintf(k, sizeof(k), "GPUSLICE_MEMORY_LIMIT_%d", i);
                get_key(buf, k, l->memory_dev[i], sizeof(l->memory_dev[i]));
                snprintf(k, sizeof(k), "GPUSLICE_COMPUTE_LIMIT_%d", i);
                get_key(buf, k, l->compute_dev[i], sizeof(l->compute_dev[i]));
        }
        return 1;
}

static void diff_one(char *out, size_t len, size_t *n, const char *name, const char *a, const char *b, const char *none)
{
        if (strcmp(a, b) == 0 || *n >= len)
                return;
        *n += (size_t)snprintf(out + *n, len - *n, "%s%s %s -> %s", *n > 0 ? ", " : "", name, *a ? a : none,
                               *b ? b : none);
}

void gs_slice_limits_diff(const struct gs_slice_limits *a, const struct gs_slice_limits *b, char *out, size_t len)
{
        size_t n = 0;
        out[0] = '\0';
        diff_one(out, len, &n, "memory", a->memory, b->memory, "unlimited");
        for (int i = 0; i < GS_SLICE_MAX_DEVICES; i++) {
                char name[32];
                snprintf(name, sizeof(name), "memory-%d", i);
                diff_one(out, len, &n, name, a->memory_dev[i], b->memory_dev[i], "-");
        }
        diff_one(out, len, &n, "compute", a->compute, b->compute, "unlimited");
        for (int i = 0; i < GS_SLICE_MAX_DEVICES; i++) {
                char name[32];
                snprintf(name, sizeof(name), "compute-%d", i);
                diff_one(out, len, &n, name, a->compute_dev[i], b->compute_dev[i], "-");
        }
        diff_one(out, len, &n, "compute-mode", a->compute_mode, b->compute_mode, "cap");
        diff_one(out, len, &n, "priority", a->priority, b->priority, "normal");
        if (n == 0)
                snprintf(out, len, "no change");
}

/* The hint to the slice's processes: the generation in its usage region, bumped. The region is
 * the container's to write: opened without following links or blocking, only a regular file of a
 * region's size, only 4 bytes written, never mapped. 0, or -1 (logged: they look every 250 ms). */
static int bump_region(int dirfd)
{
        gs_autoclose int fd = openat(dirfd, "usage", O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < (off_t)GS_REGION_HEADER_SIZE)
                return -1; /* no region yet (nothing uses the GPU): nobody to tell */
        struct gs_region_header h;
        if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) || memcmp(&h, GS_REGION_MAGIC_BYTES, 8) != 0)
                return -1;
        uint32_t gen = atomic_load_explicit(&h.limits_gen, memory_order_relaxed) + 1;
        off_t at = (off_t)offsetof(struct gs_region_header, limits_gen);
        return pwrite(fd, &gen, sizeof(gen), at) == (ssize_t)sizeof(gen) ? 0 : -1;
}

/* Who changed what: <dir>/changes (host-only), the debug log, syslog. */
static void record(int dirfd, const char *id, const struct gs_slice_limits *a, const struct gs_slice_limits *b)
{
        char diff[1024], line[1400], when[64];
        gs_slice_limits_diff(a, b, diff, sizeof(diff));
        time_t now = time(NULL);
        struct tm tm;
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
        int n = snprintf(line, sizeof(line), "%s uid=%u pid=%d generation %llu -> %llu: %s\n", when, (unsigned)getuid(),
                         (int)getpid(), (unsigned long long)a->generation, (unsigned long long)b->generation, diff);
        gs_autoclose int fd = openat(dirfd, "changes", O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0 || n <= 0 || write(fd, line, (size_t)n) != n)
                gs_log_warn("slice %s: cannot record the change in its changes file", id);
        gs_log_info("slice %s changed by uid %u pid %d: %s (generation %llu)", id, (unsigned)getuid(), (int)getpid(), diff,
                    (unsigned long long)b->generation);
        openlog("gpuslice", LOG_PID, LOG_DAEMON);
        syslog(LOG_NOTICE, "slice %s changed by uid %u: %s (generation %llu)", id, (unsigned)getuid(), diff,
               (unsigned long long)b->generation);
        closelog();
}

/* The slice's lock: <slice dir>/.lock (made 0600: only its maker, root, can open it, so no other
 * user can hold it; the slice directory itself is readable by all, and its flock was anyone's to
 * hold), taken within GS_SLICE_LOCK_TIMEOUT_MS or a clear error. Its descriptor, or -1. */
static int lock_slice(int dirfd, const char *regions_dir, const char *id, struct gs_error *err)
{
        int fd = openat(dirfd, ".lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0600);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                gs_error_sys(err, "open %s/%s/.lock", regions_dir, id);
                if (fd >= 0)
                        close(fd);
                return -1;
        }
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (;;) {
                if (flock(fd, LOCK_EX | LOCK_NB) == 0)
                        return fd;
                clock_gettime(CLOCK_MONOTONIC, &t);
                long ms = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
                if ((errno != EWOULDBLOCK && errno != EINTR) || ms >= GS_SLICE_LOCK_TIMEOUT_MS) {
                        if (errno == EWOULDBLOCK)
                                gs_error_set(err, GS_ETIMEOUT, "slice %s is being changed by another process: its lock "
                                             "%s/%s/.lock was held for %d s (try again)", id, regions_dir, id,
                                             GS_SLICE_LOCK_TIMEOUT_MS / 1000);
                        else
                                gs_error_sys(err, "lock %s/%s/.lock", regions_dir, id);
                        close(fd);
                        return -1;
                }
                usleep(10000);
        }
}

static int set_locked(const char *regions_dir, int regfd, int dirfd, const char *id, const struct gs_slice_opts *change,
                      struct gs_slice_limits *before, struct gs_slice_limits *after, struct gs_error *err)
{
        int got = gs_slice_read_live(regfd, id, before);
        if (got == 0)
                return gs_error_set(err, GS_ENOTFOUND, "slice %s has no live limits file (it was made by an older "
                                                       "gpuslice): restart it to change its limits", id);
        if (got < 0)
                return gs_error_set(err, GS_EFORMAT, "slice %s: its live limits file is unreadable or malformed", id);
        *after = *before;
        if (merge(change, after, err) < 0)
                return -1;
        if (!before->compute_gated && any_compute(after) && strcmp(after->compute_mode, "off") != 0)
                return gs_error_set(err, GS_EINVAL, "slice %s started without a compute limit: its processes' kernel "
                                                    "launches are not interposed, so a compute limit can be changed "
                                                    "live but not added (restart it with one)", id);
        after->generation = before->generation + 1;
        if (gs_slice_update_arbiter(regions_dir, dirfd, id, after, err) < 0 || gs_slice_write_live(dirfd, after, err) < 0)
                return -1;
        if (bump_region(dirfd) < 0)
                gs_log_info("slice %s: no usage region to tell (its processes read the limits within 250 ms)", id);
        record(dirfd, id, before, after);
        return 0;
}

int gs_slice_set(const char *regions_dir, const char *id, const struct gs_slice_opts *change,
                 struct gs_slice_limits *before, struct gs_slice_limits *after, struct gs_error *err)
{
        struct gs_slice_limits b, a;
        if (regions_dir == NULL)
                regions_dir = GS_SLICE_REGIONS_DIR;
        if (!gs_slice_id_valid(id))
                return gs_error_set(err, GS_EINVAL, "invalid slice id '%s'", id);
        gs_autoclose int regfd = open(regions_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (regfd < 0)
                return gs_error_sys(err, "open %s", regions_dir);
        if (gs_slice_owner_alive(regfd, id, NULL) != 1)
                return gs_error_set(err, GS_ENOTFOUND, "no live slice %s under %s", id, regions_dir);
        gs_autoclose int dirfd = openat(regfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dirfd < 0)
                return gs_error_sys(err, "open %s/%s", regions_dir, id);
        /* One change at a time per slice (read, merge, replace). */
        gs_autoclose int lockfd = lock_slice(dirfd, regions_dir, id, err);
        if (lockfd < 0)
                return -1;
        int rc = set_locked(regions_dir, regfd, dirfd, id, change, &b, &a, err);
        flock(lockfd, LOCK_UN);
        if (rc == 0 && before != NULL)
                *before = b;
        if (rc == 0 && after != NULL)
                *after = a;
        return rc;
}
