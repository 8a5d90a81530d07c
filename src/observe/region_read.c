/* The observer's defensive reader of usage regions (see region_read.h). */
#include "observe/region_read.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"

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

static int check_devices(const struct gs_region_header *h, struct gs_error *err)
{
        for (unsigned d = 0; d < h->ndevices; d++) {
                uint32_t bp = atomic_load_explicit(&h->compute_limit[d], memory_order_relaxed);
                if (bp > 10000)
                        return gs_error_set(err, GS_EFORMAT, "device %u: compute share of %u basis points (at most 10000)",
                                            d, bp);
                const char *u = h->uuid[d];
                const char *end = memchr(u, '\0', GS_REGION_UUID_LEN);
                if (end == NULL)
                        return gs_error_set(err, GS_EFORMAT, "device %u: UUID without its terminator", d);
                for (const char *c = u; c < end; c++)
                        if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e)
                                return gs_error_set(err, GS_EFORMAT, "device %u: UUID with a non-printable byte 0x%02x",
                                                    d, (unsigned char)*c);
        }
        return 0;
}

/* The size of a region of version v, 0 for a version this reader does not know. */
static uint64_t size_of_version(uint32_t v)
{
        return v == GS_REGION_VERSION ? GS_REGION_SIZE : v == GS_REGION_VERSION_2 ? GS_REGION_SIZE_V2 : 0;
}

static bool known_size(uint64_t size)
{
        return size == GS_REGION_SIZE || size == GS_REGION_SIZE_V2;
}

/* The counters area (version 3): the numbers are taken as they are, the codes must be known. */
static int check_counters(const struct gs_region_counters *c, unsigned ndevices, struct gs_error *err)
{
        uint32_t prio = atomic_load_explicit(&c->priority, memory_order_relaxed);
        if (prio > GS_REGION_PRIO_LOW && prio != GS_REGION_UNSET)
                return gs_error_set(err, GS_EFORMAT, "unknown priority %u", prio);
        for (unsigned d = 0; d < ndevices; d++) {
                uint32_t via = atomic_load_explicit(&c->dev[d].compute_via, memory_order_relaxed);
                if (via > GS_REGION_VIA_TIME_FALLBACK && via != GS_REGION_UNSET)
                        return gs_error_set(err, GS_EFORMAT, "device %u: unknown compute mechanism %u", d, via);
        }
        return 0;
}

/* 0 valid, 1 not initialized yet, -1 invalid (err). `size`: the file's. */
static int check_header(const struct gs_region_header *h, uint64_t size, struct gs_error *err)
{
        uint64_t magic = atomic_load_explicit(&h->magic, memory_order_relaxed);
        if (magic == 0) {
                gs_error_set(err, GS_EFORMAT, "not initialized yet (no magic)");
                return 1;
        }
        if (magic != magic_value())
                return gs_error_set(err, GS_EFORMAT, "bad magic (not a gpuslice usage region)");
        uint64_t want = size_of_version(h->version);
        if (want == 0)
                return gs_error_set(err, GS_EFORMAT, "version %u (this gpuslice reads versions %u and %u)", h->version,
                                    GS_REGION_VERSION_2, GS_REGION_VERSION);
        if (h->header_size != GS_REGION_HEADER_SIZE || h->slot_size != GS_REGION_SLOT_SIZE ||
            h->max_procs != GS_REGION_MAX_PROCS || h->region_size != want || size != want)
                return gs_error_set(err, GS_EFORMAT,
                                    "layout mismatch (version %u: header %u, slot %u, %u slots, %llu bytes in a file of "
                                    "%llu; expected %u, %u, %u, %llu)",
                                    h->version, h->header_size, h->slot_size, h->max_procs,
                                    (unsigned long long)h->region_size, (unsigned long long)size, GS_REGION_HEADER_SIZE,
                                    GS_REGION_SLOT_SIZE, GS_REGION_MAX_PROCS, (unsigned long long)want);
        if (h->ndevices < 1 || h->ndevices > GS_REGION_MAX_DEVICES)
                return gs_error_set(err, GS_EFORMAT, "device count %u (1..%d)", h->ndevices, GS_REGION_MAX_DEVICES);
        uint32_t hwm = atomic_load_explicit(&h->slot_hwm, memory_order_relaxed);
        if (hwm > GS_REGION_MAX_PROCS)
                return gs_error_set(err, GS_EFORMAT, "slot_hwm %u past the %d slots", hwm, GS_REGION_MAX_PROCS);
        uint32_t mode = atomic_load_explicit(&h->compute_mode, memory_order_relaxed);
        if (mode > 2)
                return gs_error_set(err, GS_EFORMAT, "unknown compute mode %u", mode);
        return check_devices(h, err);
}

/* pread exactly len bytes at off: 0, or -1 (short: the file shrank; or an I/O error). */
static int pread_all(int fd, void *buf, size_t len, off_t off, struct gs_error *err)
{
        size_t got = 0;
        while (got < len) {
                ssize_t n = pread(fd, (char *)buf + got, len - got, off + (off_t)got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return gs_error_sys(err, "read");
                if (n == 0)
                        return gs_error_set(err, GS_EFORMAT, "truncated while being read (%zu of %zu bytes)",
                                            (size_t)off + got, (size_t)off + len);
                got += (size_t)n;
        }
        return 0;
}

static const char *kind_of(mode_t m)
{
        return S_ISLNK(m) ? "a symbolic link" : S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO"
             : S_ISSOCK(m) ? "a socket" : S_ISCHR(m) || S_ISBLK(m) ? "a device node" : "not a regular file";
}

/* The file's type and size, before it is opened: 0 to go on, 1 empty, -1 refused. */
static int check_stat(const struct stat *st, struct gs_error *err)
{
        if (!S_ISREG(st->st_mode))
                return gs_error_set(err, GS_EINVAL, "%s, not a regular file (refused)", kind_of(st->st_mode));
        if (st->st_size == 0) {
                gs_error_set(err, GS_EFORMAT, "empty: not initialized yet");
                return 1;
        }
        if (!known_size((uint64_t)st->st_size))
                return gs_error_set(err, GS_EFORMAT, "size %lld bytes, a usage region has %u (or %u: version 2)",
                                    (long long)st->st_size, GS_REGION_SIZE, GS_REGION_SIZE_V2);
        return 0;
}

/* The slots a first read takes along with the header (most slices have a few processes). */
#define FIRST_SLOTS 8

int gs_region_read_at(int dirfd, const char *path, struct gs_region_image *img, struct gs_error *err)
{
        /* Non-blocking (a FIFO opens at once, then is refused: no writer can hang us) and never
         * through a symbolic link; what it is, is asked of the open file. (Device nodes can only
         * be made by root, so opening one is no container's doing.) */
        gs_autoclose int fd = openat(dirfd, path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
        if (fd < 0) {
                if (errno == ENOENT)
                        return gs_error_set(err, GS_ENOTFOUND, "gone");
                if (errno == ELOOP)
                        return gs_error_set(err, GS_EINVAL, "a symbolic link, not a regular file (refused)");
                if (errno == ENXIO)
                        return gs_error_set(err, GS_EINVAL, "a socket, not a regular file (refused)");
                return gs_error_sys(err, "open");
        }
        struct stat st;
        if (fstat(fd, &st) < 0)
                return gs_error_sys(err, "stat");
        int rc = check_stat(&st, err);
        if (rc != 0)
                return rc;
        /* The header and the first slots in one read; the rest of [0, slot_hwm) if there is more. */
        size_t first = sizeof(img->hdr) + FIRST_SLOTS * sizeof(img->slots[0]);
        if (pread_all(fd, &img->hdr, first, 0, err) < 0)
                return -1;
        if ((rc = check_header(&img->hdr, (uint64_t)st.st_size, err)) != 0)
                return rc;
        img->counters = img->hdr.version >= GS_REGION_VERSION;
        if (!img->counters)
                memset(&img->ctr, 0, sizeof(img->ctr));
        else if (pread_all(fd, &img->ctr, sizeof(img->ctr), GS_REGION_COUNTERS_OFFSET, err) < 0 ||
                 check_counters(&img->ctr, img->hdr.ndevices, err) < 0)
                return -1;
        img->nslots = atomic_load_explicit(&img->hdr.slot_hwm, memory_order_relaxed);
        if (img->nslots <= FIRST_SLOTS)
                return 0;
        return pread_all(fd, &img->slots[FIRST_SLOTS], (size_t)(img->nslots - FIRST_SLOTS) * sizeof(img->slots[0]),
                         (off_t)first, err);
}

int gs_region_image_parse(const void *data, size_t len, struct gs_region_image *img, struct gs_error *err)
{
        if (len == 0) {
                gs_error_set(err, GS_EFORMAT, "empty: not initialized yet");
                return 1;
        }
        if (!known_size(len))
                return gs_error_set(err, GS_EFORMAT, "size %zu bytes, a usage region has %u (or %u: version 2)", len,
                                    GS_REGION_SIZE, GS_REGION_SIZE_V2);
        memcpy(&img->hdr, data, sizeof(img->hdr));
        int rc = check_header(&img->hdr, len, err);
        if (rc != 0)
                return rc;
        img->counters = img->hdr.version >= GS_REGION_VERSION;
        memset(&img->ctr, 0, sizeof(img->ctr));
        if (img->counters) {
                memcpy(&img->ctr, (const char *)data + GS_REGION_COUNTERS_OFFSET, sizeof(img->ctr));
                if (check_counters(&img->ctr, img->hdr.ndevices, err) < 0)
                        return -1;
        }
        img->nslots = atomic_load_explicit(&img->hdr.slot_hwm, memory_order_relaxed);
        memcpy(img->slots, (const char *)data + GS_REGION_HEADER_SIZE, (size_t)img->nslots * sizeof(img->slots[0]));
        return 0;
}

void gs_region_image_sum(const struct gs_region_image *img, struct gs_region_sums *s)
{
        memset(s, 0, sizeof(*s));
        unsigned ndev = img->hdr.ndevices <= GS_REGION_MAX_DEVICES ? img->hdr.ndevices : GS_REGION_MAX_DEVICES;
        unsigned n = img->nslots <= GS_REGION_MAX_PROCS ? img->nslots : GS_REGION_MAX_PROCS;
        for (unsigned i = 0; i < n; i++) {
                const struct gs_region_slot *sl = &img->slots[i];
                if (atomic_load_explicit(&sl->pid, memory_order_relaxed) <= 0)
                        continue;
                s->live++;
                uint64_t last = atomic_load_explicit(&sl->last_launch_ns, memory_order_relaxed);
                if (last > s->last_launch_ns)
                        s->last_launch_ns = last;
                for (unsigned d = 0; d < ndev; d++) {
                        uint64_t u = atomic_load_explicit(&sl->used[d], memory_order_relaxed);
                        uint64_t e = atomic_load_explicit(&sl->extra[d], memory_order_relaxed);
                        uint64_t b = atomic_load_explicit(&sl->busy_ns[d], memory_order_relaxed);
                        s->allocated[d] = sat_add(s->allocated[d], u);
                        s->overhead[d] = sat_add(s->overhead[d], e);
                        s->busy_ns[d] = sat_add(s->busy_ns[d], b);
                        if (u != 0 || e != 0 || b != 0)
                                s->procs[d]++;
                }
        }
}
