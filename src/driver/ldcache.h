/*
 * Our own reader of glibc's /etc/ld.so.cache (no dependency on the host's dynamic loader).
 *
 * Formats: the "new" format (magic "glibc-ld.so.cache" + version "1.1", 24-byte entries
 * {int32 flags, uint32 key, uint32 value, uint32 osversion, uint64 hwcap}, string offsets relative
 * to the start of the new header), optionally preceded by the old libc5 format ("ld.so-1.7.0",
 * uint32 nlibs, 12-byte entries), which is skipped (aligned to 8 bytes after its entries).
 * Every offset and string is bounds-checked: a hostile or truncated cache is an error, never a
 * read past the mapping.
 */
#ifndef GS_DRIVER_LDCACHE_H
#define GS_DRIVER_LDCACHE_H

#include <stddef.h>
#include <stdint.h>

#include <gpuslice/gpuslice.h>

/* flags & 0x00ff: type; flags & 0xff00: architecture. */
#define GS_LD_FLAG_ELF 0x0001
#define GS_LD_TYPE_MASK 0x00ff
#define GS_LD_ARCH_MASK 0xff00
#define GS_LD_ARCH_I386 0x0000
#define GS_LD_ARCH_X86_64 0x0300
#define GS_LD_ARCH_PPC64LE 0x0500
#define GS_LD_ARCH_ARMHF 0x0900
#define GS_LD_ARCH_AARCH64 0x0a00

#if defined(__x86_64__)
#define GS_LD_ARCH_HOST GS_LD_ARCH_X86_64
#define GS_LD_ARCH_HOST32 GS_LD_ARCH_I386
#define GS_LD_HAVE_ARCH32 1
#elif defined(__aarch64__)
#define GS_LD_ARCH_HOST GS_LD_ARCH_AARCH64
#define GS_LD_ARCH_HOST32 GS_LD_ARCH_ARMHF
#define GS_LD_HAVE_ARCH32 1
#elif defined(__powerpc64__)
#define GS_LD_ARCH_HOST GS_LD_ARCH_PPC64LE
#define GS_LD_ARCH_HOST32 0
#define GS_LD_HAVE_ARCH32 0
#else
#error "unsupported architecture"
#endif

struct gs_ldcache {
        const uint8_t *map;   /* whole file (owned when mapped by gs_ldcache_open) */
        size_t size;
        size_t hdr;           /* offset of the new-format header in map */
        uint32_t nlibs;       /* number of new-format entries (validated to fit) */
        int mapped;           /* 1 if map must be munmap'ed */
};

/* Validate an in-memory cache image (not copied: `data` must outlive the struct). */
int gs_ldcache_parse(struct gs_ldcache *c, const void *data, size_t size, struct gs_error *err);

/* mmap and validate `path`, opened relative to `dirfd` (AT_FDCWD allowed); O_NOFOLLOW is not
 * applied: the caller resolves the path in the root first. An empty `path` means `dirfd` is the
 * open cache file itself (not consumed). */
int gs_ldcache_open(struct gs_ldcache *c, int dirfd, const char *path, struct gs_error *err);
void gs_ldcache_close(struct gs_ldcache *c);

/* Callback: return 0 to continue, 1 to stop early, -1 to fail (err already set by the callback). */
typedef int (*gs_ldcache_fn)(void *arg, const char *key, const char *value, int32_t flags);

/* Call fn for each entry, in file order, that is an ELF library (flags & GS_LD_FLAG_ELF) of
 * architecture `arch` ((flags & GS_LD_ARCH_MASK) == arch). key/value are NUL-terminated strings
 * proven to lie inside the file. A corrupted entry (offset or string out of bounds) fails with
 * GS_EFORMAT "corrupted ldcache entry: ...". */
int gs_ldcache_foreach(const struct gs_ldcache *c, uint32_t arch, gs_ldcache_fn fn, void *arg,
                       struct gs_error *err);

#endif
