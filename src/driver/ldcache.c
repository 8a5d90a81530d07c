/*
 * Reader of glibc's ld.so.cache, written from the published layout of the format:
 *
 *   old (libc5, glibc < 2.32 "compat" caches), optional:
 *     0   char     magic[11] = "ld.so-1.7.0"
 *     12  uint32   nlibs                    (offset 12: the magic is padded to 4 bytes)
 *     16  nlibs x { int32 flags; uint32 key; uint32 value; }      12 bytes each
 *         padding up to an 8-byte boundary, then the new format
 *
 *   new (what glibc >= 2.32 ldconfig writes on its own):
 *     0   char     magic[17] = "glibc-ld.so.cache"
 *     17  char     version[3] = "1.1"
 *     20  uint32   nlibs
 *     24  uint32   len_strings
 *     28  uint8    flags (bits 0-1: endianness: 0 unset, 1 invalid, 2 little, 3 big), 3 bytes pad
 *     32  uint32   extension_offset
 *     36  uint32   unused[3]
 *     48  nlibs x { int32 flags; uint32 key; uint32 value; uint32 osversion; uint64 hwcap; }
 *
 * Key and value of a new entry are offsets from the start of the new header to NUL-terminated
 * strings. The file is read in host byte order (a cache is only ever read on the machine whose
 * ldconfig wrote it); a cache that declares the other byte order is refused.
 *
 * Nothing in the file is trusted: every count is checked against the file size with 64-bit
 * arithmetic, and every string is proven NUL-terminated inside the file before it is handed out.
 * Fields are read with memcpy, so unaligned buffers are fine.
 */
#include "driver/ldcache.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"

#define OLD_MAGIC "ld.so-1.7.0"
#define OLD_MAGIC_LEN (sizeof(OLD_MAGIC) - 1)
#define OLD_HDR_SIZE 16u
#define OLD_ENTRY_SIZE 12u

#define NEW_MAGIC "glibc-ld.so.cache"
#define NEW_MAGIC_LEN (sizeof(NEW_MAGIC) - 1)
#define NEW_VERSION "1.1"
#define NEW_VERSION_LEN (sizeof(NEW_VERSION) - 1)
#define NEW_OFF_NLIBS 20u
#define NEW_OFF_FLAGS 28u
#define NEW_HDR_SIZE 48u
#define NEW_ENTRY_SIZE 24u
#define NEW_ENTRY_OFF_KEY 4u
#define NEW_ENTRY_OFF_VALUE 8u

#define NEW_FLAGS_ENDIAN_MASK 0x3u
#define NEW_FLAGS_ENDIAN_UNSET 0u
#define NEW_FLAGS_ENDIAN_LITTLE 2u
#define NEW_FLAGS_ENDIAN_BIG 3u

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define NEW_FLAGS_ENDIAN_HOST NEW_FLAGS_ENDIAN_LITTLE
#else
#define NEW_FLAGS_ENDIAN_HOST NEW_FLAGS_ENDIAN_BIG
#endif

static uint32_t rd_u32(const uint8_t *p)
{
        uint32_t v;
        memcpy(&v, p, sizeof(v));
        return v;
}

static int32_t rd_i32(const uint8_t *p)
{
        int32_t v;
        memcpy(&v, p, sizeof(v));
        return v;
}

static int unsupported(struct gs_error *err, const char *name)
{
        return gs_error_set(err, GS_EFORMAT, "unsupported file format: %s", name);
}

/* Prove that the string at `off` (relative to the new header) lies inside the file and is
 * NUL-terminated there; return it, or NULL. */
static const char *cache_string(const struct gs_ldcache *c, uint32_t off)
{
        uint64_t abs = (uint64_t)c->hdr + off;
        if (abs >= c->size)
                return NULL;
        const uint8_t *s = c->map + abs;
        if (memchr(s, '\0', c->size - (size_t)abs) == NULL)
                return NULL;
        return (const char *)s;
}

/* Read entry i (already known to lie inside the file); 0 or -1 with the error set. */
static int cache_entry(const struct gs_ldcache *c, uint32_t i, const char *name, int32_t *flags,
                       const char **key, const char **value, struct gs_error *err)
{
        const uint8_t *e = c->map + c->hdr + NEW_HDR_SIZE + (size_t)i * NEW_ENTRY_SIZE;
        uint32_t koff = rd_u32(e + NEW_ENTRY_OFF_KEY);
        uint32_t voff = rd_u32(e + NEW_ENTRY_OFF_VALUE);

        *flags = rd_i32(e);
        *value = NULL;
        *key = cache_string(c, koff);
        if (*key == NULL)
                return gs_error_set(err, GS_EFORMAT,
                                    "corrupted ldcache entry: %s: entry %u: key offset %u out of "
                                    "range or unterminated",
                                    name, i, koff);
        *value = cache_string(c, voff);
        if (*value == NULL)
                return gs_error_set(err, GS_EFORMAT,
                                    "corrupted ldcache entry: %s: entry %u: value offset %u out "
                                    "of range or unterminated",
                                    name, i, voff);
        return 0;
}

static int ldcache_parse(struct gs_ldcache *c, const uint8_t *data, size_t size, const char *name,
                         struct gs_error *err)
{
        uint64_t hdr = 0;

        memset(c, 0, sizeof(*c));
        if (data == NULL)
                return unsupported(err, name);

        /* Optional old section: skip its header and entries, then align to 8. */
        if (size >= OLD_HDR_SIZE && memcmp(data, OLD_MAGIC, OLD_MAGIC_LEN) == 0) {
                uint64_t old_nlibs = rd_u32(data + 12);
                uint64_t end = OLD_HDR_SIZE + old_nlibs * OLD_ENTRY_SIZE; /* < 2^36: no overflow */
                hdr = (end + 7u) & ~(uint64_t)7u;
                if (hdr > size)
                        return unsupported(err, name);
        }

        if (size - hdr < NEW_HDR_SIZE)
                return unsupported(err, name);
        const uint8_t *h = data + hdr;
        if (memcmp(h, NEW_MAGIC, NEW_MAGIC_LEN) != 0 ||
            memcmp(h + NEW_MAGIC_LEN, NEW_VERSION, NEW_VERSION_LEN) != 0)
                return unsupported(err, name);

        /* An explicit byte-order marker must match ours ("unset" is what older ldconfig wrote). */
        uint32_t endian = h[NEW_OFF_FLAGS] & NEW_FLAGS_ENDIAN_MASK;
        if (endian != NEW_FLAGS_ENDIAN_UNSET && endian != NEW_FLAGS_ENDIAN_HOST)
                return unsupported(err, name);

        uint32_t nlibs = rd_u32(h + NEW_OFF_NLIBS);
        /* 64-bit arithmetic: nlibs * 24 < 2^37, so neither product nor sum can wrap. */
        uint64_t need = NEW_HDR_SIZE + (uint64_t)nlibs * NEW_ENTRY_SIZE;
        if (need > size - hdr)
                return gs_error_set(err, GS_EFORMAT,
                                    "corrupted ldcache entry: %s: %u entries exceed the file size "
                                    "(%zu bytes)",
                                    name, nlibs, size);

        c->map = data;
        c->size = size;
        c->hdr = (size_t)hdr;
        c->nlibs = nlibs;

        /* Validate every entry now, so a bad cache fails before anyone acts on part of it. */
        for (uint32_t i = 0; i < nlibs; i++) {
                int32_t flags;
                const char *key, *value;
                if (cache_entry(c, i, name, &flags, &key, &value, err) < 0) {
                        memset(c, 0, sizeof(*c));
                        return -1;
                }
        }
        return 0;
}

int gs_ldcache_parse(struct gs_ldcache *c, const void *data, size_t size, struct gs_error *err)
{
        return ldcache_parse(c, data, size, "buffer", err);
}

int gs_ldcache_open(struct gs_ldcache *c, int dirfd, const char *path, struct gs_error *err)
{
        gs_autoclose int fd = -1;
        struct stat st;

        memset(c, 0, sizeof(*c));
        if (*path == '\0') {
                /* dirfd is the open cache file itself (resolved in a root by the caller). */
                fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
                path = "ld.so.cache";
        } else {
                fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
        }
        if (fd < 0)
                return gs_error_sys(err, "open failed: %s", path);
        if (fstat(fd, &st) < 0)
                return gs_error_sys(err, "stat failed: %s", path);
        if (!S_ISREG(st.st_mode) || st.st_size <= 0)
                return unsupported(err, path);
        if ((uint64_t)st.st_size > SIZE_MAX)
                return unsupported(err, path);

        size_t size = (size_t)st.st_size;
        void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED)
                return gs_error_sys(err, "mmap failed: %s", path);

        if (ldcache_parse(c, map, size, path, err) < 0) {
                int saved = errno;
                munmap(map, size);
                errno = saved;
                return -1;
        }
        c->mapped = 1;
        return 0;
}

void gs_ldcache_close(struct gs_ldcache *c)
{
        if (c == NULL)
                return;
        if (c->mapped && c->map != NULL)
                munmap((void *)c->map, c->size);
        memset(c, 0, sizeof(*c));
}

int gs_ldcache_foreach(const struct gs_ldcache *c, uint32_t arch, gs_ldcache_fn fn, void *arg,
                       struct gs_error *err)
{
        if (c == NULL || c->map == NULL)
                return gs_error_set(err, GS_EINVAL, "ldcache not open");

        /* Re-check the table bound: the struct is public and could have been filled by hand. */
        if (c->hdr > c->size || NEW_HDR_SIZE + (uint64_t)c->nlibs * NEW_ENTRY_SIZE > c->size - c->hdr)
                return gs_error_set(err, GS_EFORMAT,
                                    "corrupted ldcache entry: %u entries exceed the file size",
                                    c->nlibs);

        for (uint32_t i = 0; i < c->nlibs; i++) {
                int32_t flags;
                const char *key, *value;
                if (cache_entry(c, i, "ldcache", &flags, &key, &value, err) < 0)
                        return -1;
                if ((flags & GS_LD_FLAG_ELF) == 0)
                        continue;
                if (((uint32_t)flags & GS_LD_ARCH_MASK) != arch)
                        continue;
                int r = fn(arg, key, value, flags);
                if (r < 0)
                        return -1;
                if (r > 0)
                        break;
        }
        return 0;
}
