/*
 * Unit tests of the ld.so.cache reader (src/driver/ldcache.c) and the ELF inspector
 * (src/driver/elf.c): caches written by the real ldconfig, hand-built hostile caches, the host's
 * own /etc/ld.so.cache, and real / hand-built ELF files.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "skips.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "driver/elf.h"
#include "driver/ldcache.h"

/* ------------------------------------------------------------------------------------------- */
/* helpers                                                                                      */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st;
        (void)flag;
        (void)ftw;
        return remove(path);
}

static void rm_tree(const char *dir)
{
        nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static char *make_tmpdir(void)
{
        const char *base = getenv("TMPDIR");
        char *dir;
        if (base == NULL || base[0] == '\0')
                base = "/tmp";
        assert_true(asprintf(&dir, "%s/gs-test-ldcache.XXXXXX", base) > 0);
        assert_non_null(mkdtemp(dir));
        return dir;
}

static void write_file(const char *path, const void *data, size_t len)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, data, len), (ssize_t)len);
        close(fd);
}

static bool have_cc(void)
{
        return system("command -v cc >/dev/null 2>&1") == 0;
}

static const char *find_ldconfig(void)
{
        static const char *const cands[] = {"/sbin/ldconfig.real", "/sbin/ldconfig",
                                            "/usr/sbin/ldconfig"};
        for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]); i++)
                if (access(cands[i], X_OK) == 0)
                        return cands[i];
        return NULL;
}

/* Copy into an exact-size heap block so that ASan catches any read past the end. */
static uint8_t *dup_exact(const uint8_t *p, size_t n)
{
        uint8_t *q = malloc(n ? n : 1);
        assert_non_null(q);
        memcpy(q, p, n);
        return q;
}

/* ------------------------------------------------------------------------------------------- */
/* cache builder                                                                                */

struct ent {
        int32_t flags;
        const char *key;
        const char *value;
};

#define FL_X86_64 (0x0003 | GS_LD_ARCH_X86_64) /* libc6, x86-64 */
#define FL_I386 0x0003                          /* libc6, i386 */
#define FL_AARCH64 (0x0003 | GS_LD_ARCH_AARCH64)

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

/* Build a cache into buf. old_nlibs < 0: new format alone; else an old section with that many
 * (zeroed) entries first, padded to 8 (or not, when misalign). Returns the size. */
static size_t build_cache(uint8_t *buf, size_t cap, int old_nlibs, bool misalign,
                          const struct ent *e, size_t n)
{
        size_t pos = 0;
        memset(buf, 0, cap);
        if (old_nlibs >= 0) {
                memcpy(buf, "ld.so-1.7.0", 11);
                put32(buf + 12, (uint32_t)old_nlibs);
                pos = 16 + (size_t)old_nlibs * 12;
                if (!misalign)
                        pos = (pos + 7) & ~(size_t)7;
        }
        size_t hdr = pos;
        uint8_t *h = buf + hdr;
        memcpy(h, "glibc-ld.so.cache1.1", 20);
        put32(h + 20, (uint32_t)n);
        h[28] = 2; /* little endian */
        size_t str = 48 + n * 24;
        size_t strings_start = str;
        for (size_t i = 0; i < n; i++) {
                uint8_t *en = h + 48 + i * 24;
                size_t kl = strlen(e[i].key) + 1, vl = strlen(e[i].value) + 1;
                assert_true(hdr + str + kl + vl <= cap);
                put32(en, (uint32_t)e[i].flags);
                put32(en + 4, (uint32_t)str);
                memcpy(h + str, e[i].key, kl);
                str += kl;
                put32(en + 8, (uint32_t)str);
                memcpy(h + str, e[i].value, vl);
                str += vl;
        }
        put32(h + 24, (uint32_t)(str - strings_start));
        return hdr + str;
}

struct seen {
        size_t n;
        char keys[16][64];
        char values[16][128];
        int32_t flags[16];
        int stop_after; /* return 1 after this many calls (0: never) */
        int fail;       /* return -1 on the first call */
};

static int collect(void *arg, const char *key, const char *value, int32_t flags)
{
        struct seen *s = arg;
        if (s->fail)
                return -1;
        if (s->n < 16) {
                snprintf(s->keys[s->n], sizeof(s->keys[0]), "%s", key);
                snprintf(s->values[s->n], sizeof(s->values[0]), "%s", value);
                s->flags[s->n] = flags;
        }
        s->n++;
        if (s->stop_after > 0 && (int)s->n >= s->stop_after)
                return 1;
        return 0;
}

static const struct ent mixed[] = {
        {FL_X86_64, "libfoo.so.1", "/usr/lib/x86_64-linux-gnu/libfoo.so.1"},
        {FL_I386, "libfoo.so.1", "/usr/lib/i386-linux-gnu/libfoo.so.1"},
        {0x0000 | GS_LD_ARCH_X86_64, "libnotelf.so.1", "/lib/libnotelf.so.1"},  /* type 0 */
        {0x0002 | GS_LD_ARCH_X86_64, "libc5.so.5", "/lib/libc5.so.5"},          /* libc5: no ELF bit */
        {0x0001 | GS_LD_ARCH_X86_64, "libplain.so.2", "/lib64/libplain.so.2"},  /* plain ELF */
        {FL_AARCH64, "libarm.so.1", "/lib/aarch64-linux-gnu/libarm.so.1"},
        {FL_X86_64, "libbar.so.3", "/usr/lib/x86_64-linux-gnu/libbar.so.3"},
};

/* Parse an exact-size copy; return the result and the error. */
static int parse_copy(const uint8_t *buf, size_t len, struct gs_error *err)
{
        uint8_t *copy = dup_exact(buf, len);
        struct gs_ldcache c;
        gs_error_clear(err);
        int r = gs_ldcache_parse(&c, copy, len, err);
        free(copy);
        return r;
}

/* ------------------------------------------------------------------------------------------- */
/* hand-built caches                                                                            */

static void test_new_format_filters(void **state)
{
        (void)state;
        static uint8_t buf[4096];
        size_t len = build_cache(buf, sizeof(buf), -1, false, mixed, 7);
        uint8_t *copy = dup_exact(buf, len);
        struct gs_ldcache c;
        struct gs_error err = {0};

        assert_int_equal(gs_ldcache_parse(&c, copy, len, &err), 0);
        assert_int_equal(c.nlibs, 7);
        assert_int_equal(c.hdr, 0);

        struct seen s = {0};
        assert_int_equal(gs_ldcache_foreach(&c, GS_LD_ARCH_X86_64, collect, &s, &err), 0);
        assert_int_equal(s.n, 3);
        assert_string_equal(s.keys[0], "libfoo.so.1");
        assert_string_equal(s.values[0], "/usr/lib/x86_64-linux-gnu/libfoo.so.1");
        assert_int_equal(s.flags[0], FL_X86_64);
        assert_string_equal(s.keys[1], "libplain.so.2");
        assert_string_equal(s.values[1], "/lib64/libplain.so.2");
        assert_string_equal(s.keys[2], "libbar.so.3");

        memset(&s, 0, sizeof(s));
        assert_int_equal(gs_ldcache_foreach(&c, GS_LD_ARCH_I386, collect, &s, &err), 0);
        assert_int_equal(s.n, 1);
        assert_string_equal(s.values[0], "/usr/lib/i386-linux-gnu/libfoo.so.1");

        memset(&s, 0, sizeof(s));
        assert_int_equal(gs_ldcache_foreach(&c, GS_LD_ARCH_AARCH64, collect, &s, &err), 0);
        assert_int_equal(s.n, 1);
        assert_string_equal(s.keys[0], "libarm.so.1");

        memset(&s, 0, sizeof(s));
        assert_int_equal(gs_ldcache_foreach(&c, GS_LD_ARCH_PPC64LE, collect, &s, &err), 0);
        assert_int_equal(s.n, 0);

        gs_ldcache_close(&c); /* not mapped: must not munmap the heap block */
        free(copy);
}

static void test_empty_cache(void **state)
{
        (void)state;
        static uint8_t buf[256];
        size_t len = build_cache(buf, sizeof(buf), -1, false, NULL, 0);
        assert_int_equal(len, 48);
        uint8_t *copy = dup_exact(buf, len);
        struct gs_ldcache c;
        struct gs_error err = {0};
        assert_int_equal(gs_ldcache_parse(&c, copy, len, &err), 0);
        struct seen s = {0};
        assert_int_equal(gs_ldcache_foreach(&c, GS_LD_ARCH_HOST, collect, &s, &err), 0);
        assert_int_equal(s.n, 0);
        free(copy);
}

static void check_combined(int old_nlibs, size_t expect_hdr)
{
        static uint8_t buf[4096];
        size_t len = build_cache(buf, sizeof(buf), old_nlibs, false, mixed, 7);
        uint8_t *copy = dup_exact(buf, len);
        struct gs_ldcache c;
        struct gs_error err = {0};

        assert_int_equal(gs_ldcache_parse(&c, copy, len, &err), 0);
        assert_int_equal(c.hdr, expect_hdr);
        assert_int_equal(c.nlibs, 7);
        struct seen s = {0};
        assert_int_equal(gs_ldcache_foreach(&c, GS_LD_ARCH_X86_64, collect, &s, &err), 0);
        assert_int_equal(s.n, 3);
        /* string offsets are relative to the new header */
        assert_string_equal(s.keys[0], "libfoo.so.1");
        assert_string_equal(s.values[2], "/usr/lib/x86_64-linux-gnu/libbar.so.3");
        free(copy);
}

static void test_old_plus_new(void **state)
{
        (void)state;
        check_combined(0, 16);  /* 16 -> 16 */
        check_combined(1, 32);  /* 28 -> 32: padding */
        check_combined(2, 40);  /* 40 -> 40 */
        check_combined(3, 56);  /* 52 -> 56 */
}

static void test_old_misaligned_new_rejected(void **state)
{
        (void)state;
        static uint8_t buf[4096];
        struct gs_error err;
        size_t len = build_cache(buf, sizeof(buf), 1, true, mixed, 7); /* new header at 28 */
        assert_int_equal(parse_copy(buf, len, &err), -1);
        assert_int_equal(err.code, GS_EFORMAT);
        assert_string_equal(err.msg, "unsupported file format: buffer");
}

static void test_old_only_rejected(void **state)
{
        (void)state;
        uint8_t buf[16 + 2 * 12 + 16] = {0};
        struct gs_error err;
        memcpy(buf, "ld.so-1.7.0", 11);
        put32(buf + 12, 2);
        assert_int_equal(parse_copy(buf, sizeof(buf), &err), -1);
        assert_int_equal(err.code, GS_EFORMAT);
        assert_string_equal(err.msg, "unsupported file format: buffer");

        /* old nlibs pointing far past the end */
        put32(buf + 12, 0xffffffffu);
        assert_int_equal(parse_copy(buf, sizeof(buf), &err), -1);
        assert_int_equal(err.code, GS_EFORMAT);
        assert_string_equal(err.msg, "unsupported file format: buffer");

        /* old magic in a file too short for its own header */
        assert_int_equal(parse_copy(buf, 12, &err), -1);
        assert_string_equal(err.msg, "unsupported file format: buffer");
}

static void test_truncated_header(void **state)
{
        (void)state;
        static uint8_t buf[4096];
        struct gs_error err;
        size_t len = build_cache(buf, sizeof(buf), -1, false, NULL, 0);
        for (size_t cut = 0; cut < len; cut++) {
                assert_int_equal(parse_copy(buf, cut, &err), -1);
                assert_int_equal(err.code, GS_EFORMAT);
                assert_string_equal(err.msg, "unsupported file format: buffer");
        }
        struct gs_ldcache c;
        assert_int_equal(gs_ldcache_parse(&c, NULL, 0, &err), -1);
        assert_int_equal(err.code, GS_EFORMAT);
}

static void test_truncated_entries(void **state)
{
        (void)state;
        static uint8_t buf[4096];
        struct gs_error err;
        size_t len = build_cache(buf, sizeof(buf), -1, false, mixed, 7);
        /* every cut after the header is either a short table or a string cut off */
        for (size_t cut = 48; cut < len; cut++) {
                assert_int_equal(parse_copy(buf, cut, &err), -1);
                assert_int_equal(err.code, GS_EFORMAT);
                assert_non_null(strstr(err.msg, "corrupted ldcache entry: "));
        }
        assert_int_equal(parse_copy(buf, len, &err), 0);
}

static void test_nlibs_overflow(void **state)
{
        (void)state;
        static uint8_t buf[4096];
        struct gs_error err;
        size_t len = build_cache(buf, sizeof(buf), -1, false, mixed, 2);
        static const uint32_t bad[] = {
                0xffffffffu,
                178956971u, /* * 24 wraps to 8 in 32 bits */
                0x0aaaaaabu, /* * 24 wraps to 8 as well */
                3u,          /* just one too many */
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                put32(buf + 20, bad[i]);
                assert_int_equal(parse_copy(buf, len, &err), -1);
                assert_int_equal(err.code, GS_EFORMAT);
                assert_non_null(strstr(err.msg, "corrupted ldcache entry: buffer: "));
        }
}

static void test_offsets_out_of_range(void **state)
{
        (void)state;
        static uint8_t buf[4096];
        struct gs_error err;
        size_t len = build_cache(buf, sizeof(buf), 1, false, mixed, 2);
        size_t hdr = 32;
        uint8_t *e1 = buf + hdr + 48 + 24; /* second entry */
        uint32_t good_key, good_value;
        memcpy(&good_key, e1 + 4, 4);
        memcpy(&good_value, e1 + 8, 4);

        static const uint32_t bad[] = {0xffffffffu, 0x80000000u, 0};
        for (size_t i = 0; i < 3; i++) {
                uint32_t off = bad[i] ? bad[i] : (uint32_t)(len - hdr); /* exactly at the end */
                put32(e1 + 4, off);
                assert_int_equal(parse_copy(buf, len, &err), -1);
                assert_int_equal(err.code, GS_EFORMAT);
                assert_non_null(strstr(err.msg, "corrupted ldcache entry: buffer: entry 1: key"));
                put32(e1 + 4, good_key);

                put32(e1 + 8, off);
                assert_int_equal(parse_copy(buf, len, &err), -1);
                assert_int_equal(err.code, GS_EFORMAT);
                assert_non_null(strstr(err.msg, "entry 1: value"));
                put32(e1 + 8, good_value);
        }
        assert_int_equal(parse_copy(buf, len, &err), 0);

        /* an offset pointing into the old section (before the new header) is impossible to
         * express (unsigned, relative to the header): the last byte of the file is a NUL, so the
         * largest in-range offset works */
        put32(e1 + 8, (uint32_t)(len - hdr - 1));
        assert_int_equal(parse_copy(buf, len, &err), 0);
}

static void test_unterminated_string(void **state)
{
        (void)state;
        static uint8_t buf[4096];
        struct gs_error err;
        size_t len = build_cache(buf, sizeof(buf), -1, false, mixed, 3);
        assert_int_equal(buf[len - 1], '\0');
        buf[len - 1] = 'X'; /* last value loses its NUL, which was the file's last byte */
        assert_int_equal(parse_copy(buf, len, &err), -1);
        assert_int_equal(err.code, GS_EFORMAT);
        assert_non_null(strstr(err.msg, "corrupted ldcache entry: buffer: entry 2: value"));
}

static void test_wrong_magic_version_endian(void **state)
{
        (void)state;
        static uint8_t buf[4096];
        struct gs_error err;
        size_t len = build_cache(buf, sizeof(buf), -1, false, mixed, 2);

        buf[0] = 'G';
        assert_int_equal(parse_copy(buf, len, &err), -1);
        assert_int_equal(err.code, GS_EFORMAT);
        assert_string_equal(err.msg, "unsupported file format: buffer");
        buf[0] = 'g';

        memcpy(buf + 17, "1.0", 3);
        assert_int_equal(parse_copy(buf, len, &err), -1);
        assert_string_equal(err.msg, "unsupported file format: buffer");
        memcpy(buf + 17, "1.1", 3);

        buf[28] = 3; /* big endian */
        assert_int_equal(parse_copy(buf, len, &err), -1);
        assert_string_equal(err.msg, "unsupported file format: buffer");
        buf[28] = 1; /* "invalid" */
        assert_int_equal(parse_copy(buf, len, &err), -1);
        buf[28] = 0; /* unset: accepted */
        assert_int_equal(parse_copy(buf, len, &err), 0);
        buf[28] = 2;
        assert_int_equal(parse_copy(buf, len, &err), 0);

        /* garbage and text */
        const char *text = "this is not an ld.so.cache file at all, it is just some text....";
        assert_int_equal(parse_copy((const uint8_t *)text, strlen(text), &err), -1);
        assert_string_equal(err.msg, "unsupported file format: buffer");
}

static void test_callback_stop_and_fail(void **state)
{
        (void)state;
        static uint8_t buf[4096];
        size_t len = build_cache(buf, sizeof(buf), -1, false, mixed, 7);
        uint8_t *copy = dup_exact(buf, len);
        struct gs_ldcache c;
        struct gs_error err = {0};
        assert_int_equal(gs_ldcache_parse(&c, copy, len, &err), 0);

        struct seen s = {0};
        s.stop_after = 1;
        assert_int_equal(gs_ldcache_foreach(&c, GS_LD_ARCH_X86_64, collect, &s, &err), 0);
        assert_int_equal(s.n, 1);
        assert_string_equal(s.keys[0], "libfoo.so.1");

        memset(&s, 0, sizeof(s));
        s.stop_after = 2;
        assert_int_equal(gs_ldcache_foreach(&c, GS_LD_ARCH_X86_64, collect, &s, &err), 0);
        assert_int_equal(s.n, 2);

        memset(&s, 0, sizeof(s));
        s.fail = 1;
        gs_error_set(&err, GS_ENOTFOUND, "set by the callback");
        assert_int_equal(gs_ldcache_foreach(&c, GS_LD_ARCH_X86_64, collect, &s, &err), -1);
        assert_int_equal(err.code, GS_ENOTFOUND);
        assert_string_equal(err.msg, "set by the callback");

        /* a struct that was never parsed */
        struct gs_ldcache zero = {0};
        assert_int_equal(gs_ldcache_foreach(&zero, GS_LD_ARCH_X86_64, collect, &s, &err), -1);

        /* a hand-filled struct claiming more entries than the file holds */
        struct gs_ldcache lie = c;
        lie.nlibs = 1000;
        assert_int_equal(gs_ldcache_foreach(&lie, GS_LD_ARCH_X86_64, collect, &s, &err), -1);
        assert_int_equal(err.code, GS_EFORMAT);
        free(copy);
}

/* ------------------------------------------------------------------------------------------- */
/* files                                                                                        */

static void test_open_errors(void **state)
{
        (void)state;
        char *dir = make_tmpdir();
        char path[4096];
        struct gs_ldcache c;
        struct gs_error err;

        snprintf(path, sizeof(path), "%s/empty", dir);
        write_file(path, "", 0);
        gs_error_clear(&err);
        assert_int_equal(gs_ldcache_open(&c, AT_FDCWD, path, &err), -1);
        assert_int_equal(err.code, GS_EFORMAT);
        char want[4200];
        snprintf(want, sizeof(want), "unsupported file format: %s", path);
        assert_string_equal(err.msg, want);

        /* a directory is not a cache */
        assert_int_equal(gs_ldcache_open(&c, AT_FDCWD, dir, &err), -1);
        assert_int_equal(err.code, GS_EFORMAT);

        /* missing file: a system error */
        snprintf(path, sizeof(path), "%s/missing", dir);
        assert_int_equal(gs_ldcache_open(&c, AT_FDCWD, path, &err), -1);
        assert_int_equal(err.code, GS_ESYS);
        assert_int_equal(err.sys_errno, ENOENT);

        /* corrupted file: the message names the path */
        static uint8_t buf[4096];
        size_t len = build_cache(buf, sizeof(buf), -1, false, mixed, 3);
        buf[len - 1] = 'X';
        snprintf(path, sizeof(path), "%s/corrupt", dir);
        write_file(path, buf, len);
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(dfd >= 0);
        assert_int_equal(gs_ldcache_open(&c, dfd, "corrupt", &err), -1);
        assert_int_equal(err.code, GS_EFORMAT);
        assert_non_null(strstr(err.msg, "corrupted ldcache entry: corrupt: entry 2"));

        /* the good one, relative to a dirfd */
        buf[len - 1] = '\0';
        write_file(path, buf, len);
        assert_int_equal(gs_ldcache_open(&c, dfd, "corrupt", &err), 0);
        assert_int_equal(c.mapped, 1);
        struct seen s = {0};
        assert_int_equal(gs_ldcache_foreach(&c, GS_LD_ARCH_X86_64, collect, &s, &err), 0);
        assert_int_equal(s.n, 1);
        gs_ldcache_close(&c);
        assert_null(c.map);
        gs_ldcache_close(&c); /* twice is harmless */
        close(dfd);

        rm_tree(dir);
        free(dir);
}

struct found {
        int hits[3];
        int notlib;
        int32_t flags[3];
        char values[3][4300];
};
struct walk {
        struct found *f;
        const char *const *sonames;
};
static int real_cb(void *arg, const char *key, const char *value, int32_t flags)
{
        struct walk *w = arg;
        if (strcmp(key, "libgsnot.so.1") == 0)
                w->f->notlib++;
        for (size_t i = 0; i < 3; i++) {
                if (strcmp(key, w->sonames[i]) == 0) {
                        w->f->hits[i]++;
                        w->f->flags[i] = flags;
                        snprintf(w->f->values[i], sizeof(w->f->values[i]), "%s", value);
                }
        }
        return 0;
}

/* A cache written by the real ldconfig over shared objects built now. */
static void test_real_ldconfig(void **state)
{
        (void)state;
        const char *ldconfig = find_ldconfig();
        if (ldconfig == NULL)
                fail_msg("no ldconfig (/sbin/ldconfig.real, /sbin/ldconfig, /usr/sbin/ldconfig): libc-bin has it");
        if (!have_cc())
                fail_msg("no C compiler (cc): `make test-deps` installs it");

        char *dir = make_tmpdir();
        char cmd[8192];
        static const char *const sonames[] = {"libgsfoo.so.1", "libgsbar.so.2", "libgsbaz.so.0"};

        snprintf(cmd, sizeof(cmd), "mkdir -p '%s/lib' '%s/etc'", dir, dir);
        assert_int_equal(system(cmd), 0);
        for (size_t i = 0; i < 3; i++) {
                snprintf(cmd, sizeof(cmd),
                         "cc -shared -fPIC -nostdlib -Wl,-soname,%s -o '%s/lib/%s' -x c /dev/null "
                         ">/dev/null 2>&1",
                         sonames[i], dir, sonames[i]);
                if (system(cmd) != 0) {
                        rm_tree(dir);
                        free(dir);
                        fail_msg("the compiler failed: %s", cmd);
                }
        }
        /* a file that is not a library: ldconfig must not list it */
        snprintf(cmd, sizeof(cmd), "%s/lib/libgsnot.so.1", dir);
        write_file(cmd, "not elf", 7);

        /* As root: chroot into the tree (nothing outside it is read or written, aux-cache
         * included); otherwise point -C/-f into it (the host's trusted dirs are scanned too). */
        char prefix[4096] = "";
        int rc = -1;
        if (geteuid() == 0) {
                char conf[4096];
                snprintf(conf, sizeof(conf), "%s/etc/ld.so.conf", dir);
                write_file(conf, "/lib\n", 5);
                snprintf(cmd, sizeof(cmd),
                         "%s -X -r '%s' -C /etc/ld.so.cache -f /etc/ld.so.conf >/dev/null 2>&1",
                         ldconfig, dir);
                rc = system(cmd);
        }
        if (rc != 0) {
                char conf[4096], line[4200];
                snprintf(prefix, sizeof(prefix), "%s", dir);
                snprintf(conf, sizeof(conf), "%s/etc/ld.so.conf", dir);
                int n = snprintf(line, sizeof(line), "%s/lib\n", dir);
                write_file(conf, line, (size_t)n);
                snprintf(cmd, sizeof(cmd),
                         "%s -X -C '%s/etc/ld.so.cache' -f '%s' >/dev/null 2>&1", ldconfig, dir,
                         conf);
                rc = system(cmd);
        }
        if (rc != 0) {
                rm_tree(dir);
                free(dir);
                fail_msg("ldconfig could not write a cache (exit %d): %s", rc, cmd);
        }

        char path[4200];
        snprintf(path, sizeof(path), "%s/etc/ld.so.cache", dir);
        struct gs_ldcache c;
        struct gs_error err = {0};
        assert_int_equal(gs_ldcache_open(&c, AT_FDCWD, path, &err), 0);
        assert_true(c.nlibs >= 3);

        /* collect only our libraries (the non-root variant also lists the host's) */
        struct found *f = calloc(1, sizeof(*f));
        assert_non_null(f);
        struct walk w = {f, sonames};
        assert_int_equal(gs_ldcache_foreach(&c, GS_LD_ARCH_HOST, real_cb, &w, &err), 0);

        for (size_t i = 0; i < 3; i++) {
                char want[4300];
                snprintf(want, sizeof(want), "%s/lib/%s", prefix, sonames[i]);
                assert_int_equal(f->hits[i], 1);
                assert_string_equal(f->values[i], want);
                assert_true((f->flags[i] & GS_LD_FLAG_ELF) != 0);
                assert_int_equal(f->flags[i] & GS_LD_ARCH_MASK, GS_LD_ARCH_HOST);
        }
        assert_int_equal(f->notlib, 0);

#if GS_LD_HAVE_ARCH32
        /* nothing 32-bit was built */
        memset(f, 0, sizeof(*f));
        assert_int_equal(gs_ldcache_foreach(&c, GS_LD_ARCH_HOST32, real_cb, &w, &err), 0);
        for (size_t i = 0; i < 3; i++)
                assert_int_equal(f->hits[i], 0);
#endif
        gs_ldcache_close(&c);
        free(f);
        rm_tree(dir);
        free(dir);
}

static int find_libc(void *arg, const char *key, const char *value, int32_t flags)
{
        (void)flags;
        int *found = arg;
        if (strcmp(key, "libc.so.6") == 0 && value[0] == '/') {
                *found = 1;
                return 1;
        }
        return 0;
}

static int count_all(void *arg, const char *key, const char *value, int32_t flags)
{
        (void)flags;
        size_t *n = arg;
        *n += strlen(key) + strlen(value) > 0;
        return 0;
}

static void test_system_cache(void **state)
{
        (void)state;
        if (access("/etc/ld.so.cache", R_OK) != 0)
                fail_msg("/etc/ld.so.cache: %s (ldconfig writes it on every glibc host)", strerror(errno));
        struct gs_ldcache c;
        struct gs_error err = {0};
        assert_int_equal(gs_ldcache_open(&c, AT_FDCWD, "/etc/ld.so.cache", &err), 0);
        assert_true(c.nlibs > 0);
        int found = 0;
        assert_int_equal(gs_ldcache_foreach(&c, GS_LD_ARCH_HOST, find_libc, &found, &err), 0);
        assert_int_equal(found, 1);
        size_t n = 0;
        assert_int_equal(gs_ldcache_foreach(&c, GS_LD_ARCH_HOST, count_all, &n, &err), 0);
        assert_true(n > 0);
        gs_ldcache_close(&c);

        /* through a dirfd for "/" (how the driver root is used) */
        int root = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(root >= 0);
        assert_int_equal(gs_ldcache_open(&c, root, "etc/ld.so.cache", &err), 0);
        gs_ldcache_close(&c);
        close(root);
}

/* ------------------------------------------------------------------------------------------- */
/* ELF                                                                                          */

static int inspect_path(const char *path, struct gs_elf_info *info)
{
        struct gs_error err = {0};
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        int r = gs_elf_inspect(fd, info, &err);
        close(fd);
        return r;
}

static int inspect_bytes(const void *data, size_t len, struct gs_elf_info *info)
{
        char *dir = make_tmpdir();
        char path[4200];
        snprintf(path, sizeof(path), "%s/f", dir);
        write_file(path, data, len);
        int r = inspect_path(path, info);
        rm_tree(dir);
        free(dir);
        return r;
}

static void test_elf_host_binary(void **state)
{
        (void)state;
        struct gs_elf_info info;
        const char *bin = access("/bin/true", R_OK) == 0 ? "/bin/true" : "/usr/bin/true";
        assert_int_equal(inspect_path(bin, &info), 0);
        assert_true(info.is_elf);
        assert_true(info.is_64);
#if defined(__x86_64__)
        assert_int_equal(info.machine, EM_X86_64);
#elif defined(__aarch64__)
        assert_int_equal(info.machine, EM_AARCH64);
#endif
        assert_true(gs_elf_matches_arch(&info, false));
        assert_false(gs_elf_matches_arch(&info, true));

        /* /proc/self/exe: this very test, an ELF of the host arch */
        assert_int_equal(inspect_path("/proc/self/exe", &info), 0);
        assert_true(info.is_elf);
        assert_true(gs_elf_matches_arch(&info, false));
}

static void test_elf_not_elf(void **state)
{
        (void)state;
        struct gs_elf_info info;
        assert_int_equal(inspect_bytes("#!/bin/sh\necho hi\n", 18, &info), 0);
        assert_false(info.is_elf);
        assert_false(gs_elf_matches_arch(&info, false));
        assert_false(gs_elf_abi_at_least(&info, 0, 0, 0));

        assert_int_equal(inspect_bytes("", 0, &info), 0);
        assert_false(info.is_elf);
        assert_int_equal(inspect_bytes("\x7f" "ELF", 4, &info), 0);
        assert_false(info.is_elf);

        /* a directory */
        int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct gs_error err = {0};
        assert_int_equal(gs_elf_inspect(fd, &info, &err), 0);
        assert_false(info.is_elf);
        close(fd);

        /* a bad fd is an I/O error */
        assert_int_equal(gs_elf_inspect(-1, &info, &err), -1);
        assert_int_equal(err.code, GS_ESYS);
}

static void test_elf_truncated(void **state)
{
        (void)state;
        const char *bin = access("/bin/true", R_OK) == 0 ? "/bin/true" : "/usr/bin/true";
        int fd = open(bin, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        uint8_t head[4096];
        ssize_t n = read(fd, head, sizeof(head));
        close(fd);
        assert_true(n >= 1024);

        struct gs_elf_info info;
        /* shorter than the ELF header */
        assert_int_equal(inspect_bytes(head, 40, &info), 0);
        assert_false(info.is_elf);
        /* header only: the program header table lies past the end */
        assert_int_equal(inspect_bytes(head, 64, &info), 0);
        assert_false(info.is_elf);
        /* every prefix is handled */
        for (size_t cut = 0; cut <= 1024; cut += 7)
                assert_int_equal(inspect_bytes(head, cut, &info), 0);
}

/* Hand-built ELF: header + one PT_NOTE (or a bogus one) + a note area. */
struct note_abi {
        uint32_t namesz, descsz, type;
        char name[4];
        uint32_t desc[4];
};

static size_t build_elf64(uint8_t *buf, size_t cap, uint16_t machine, const void *notes,
                          size_t notes_len, uint64_t note_off_override, uint64_t note_align)
{
        Elf64_Ehdr eh;
        Elf64_Phdr ph[2];
        memset(buf, 0, cap);
        memset(&eh, 0, sizeof(eh));
        memset(ph, 0, sizeof(ph));
        memcpy(eh.e_ident, ELFMAG, SELFMAG);
        eh.e_ident[EI_CLASS] = ELFCLASS64;
        eh.e_ident[EI_DATA] = ELFDATA2LSB;
        eh.e_ident[EI_VERSION] = EV_CURRENT;
        eh.e_type = ET_DYN;
        eh.e_machine = machine;
        eh.e_version = EV_CURRENT;
        eh.e_phoff = sizeof(eh);
        eh.e_ehsize = sizeof(eh);
        eh.e_phentsize = sizeof(Elf64_Phdr);
        eh.e_phnum = 2;
        ph[0].p_type = PT_LOAD;
        ph[1].p_type = PT_NOTE;
        size_t off = sizeof(eh) + sizeof(ph);
        ph[1].p_offset = note_off_override ? note_off_override : off;
        ph[1].p_filesz = notes_len;
        ph[1].p_align = note_align;
        assert_true(off + notes_len <= cap);
        memcpy(buf, &eh, sizeof(eh));
        memcpy(buf + sizeof(eh), ph, sizeof(ph));
        memcpy(buf + off, notes, notes_len);
        return off + notes_len;
}

static size_t build_elf32(uint8_t *buf, size_t cap, uint16_t machine, const void *notes,
                          size_t notes_len)
{
        Elf32_Ehdr eh;
        Elf32_Phdr ph;
        memset(buf, 0, cap);
        memset(&eh, 0, sizeof(eh));
        memset(&ph, 0, sizeof(ph));
        memcpy(eh.e_ident, ELFMAG, SELFMAG);
        eh.e_ident[EI_CLASS] = ELFCLASS32;
        eh.e_ident[EI_DATA] = ELFDATA2LSB;
        eh.e_ident[EI_VERSION] = EV_CURRENT;
        eh.e_type = ET_DYN;
        eh.e_machine = machine;
        eh.e_version = EV_CURRENT;
        eh.e_phoff = sizeof(eh);
        eh.e_ehsize = sizeof(eh);
        eh.e_phentsize = sizeof(Elf32_Phdr);
        eh.e_phnum = 1;
        ph.p_type = PT_NOTE;
        ph.p_offset = sizeof(eh) + sizeof(ph);
        ph.p_filesz = (uint32_t)notes_len;
        ph.p_align = 4;
        size_t off = sizeof(eh) + sizeof(ph);
        assert_true(off + notes_len <= cap);
        memcpy(buf, &eh, sizeof(eh));
        memcpy(buf + sizeof(eh), &ph, sizeof(ph));
        memcpy(buf + off, notes, notes_len);
        return off + notes_len;
}

static void test_elf_abi_tag_built(void **state)
{
        (void)state;
        uint8_t buf[1024];
        struct gs_elf_info info;
        /* a build-id-like note first, then the ABI tag */
        uint8_t notes[64];
        struct note_abi abi = {4, 16, NT_GNU_ABI_TAG, "GNU", {0, 2, 3, 99}};
        const uint32_t other[3] = {4, 4, 3}; /* NT_GNU_BUILD_ID, 4-byte desc */
        memcpy(notes, other, 12);
        memcpy(notes + 12, "GNU", 4);
        memcpy(notes + 16, "\1\2\3\4", 4);
        memcpy(notes + 20, &abi, sizeof(abi));
        size_t nlen = 20 + sizeof(abi);

        size_t len = build_elf64(buf, sizeof(buf), EM_X86_64, notes, nlen, 0, 4);
        assert_int_equal(inspect_bytes(buf, len, &info), 0);
        assert_true(info.is_elf);
        assert_true(info.is_64);
        assert_int_equal(info.machine, EM_X86_64);
        assert_true(info.has_abi_tag);
        assert_int_equal(info.abi[0], 2);
        assert_int_equal(info.abi[1], 3);
        assert_int_equal(info.abi[2], 99);
        assert_true(gs_elf_abi_at_least(&info, 2, 3, 99));
        assert_true(gs_elf_abi_at_least(&info, 2, 3, 98));
        assert_true(gs_elf_abi_at_least(&info, 1, 9, 999));
        assert_false(gs_elf_abi_at_least(&info, 2, 4, 0));
        assert_false(gs_elf_abi_at_least(&info, 3, 0, 0));
        assert_false(gs_elf_abi_at_least(&info, 2, 3, 100));

        /* 8-aligned note segment layout (names/descs padded to 8) */
        uint8_t n8[48] = {0};
        const uint32_t h8[3] = {4, 16, NT_GNU_ABI_TAG};
        const uint32_t d8[4] = {0, 4, 5, 6};
        memcpy(n8, h8, 12);
        memcpy(n8 + 12, "GNU", 4);
        memcpy(n8 + 16, d8, 16); /* 12 + 4 = 16 is already 8-aligned */
        len = build_elf64(buf, sizeof(buf), EM_X86_64, n8, 32, 0, 8);
        assert_int_equal(inspect_bytes(buf, len, &info), 0);
        assert_true(info.has_abi_tag);
        assert_int_equal(info.abi[0], 4);

        /* a non-Linux OS word does not count */
        abi.desc[0] = 1; /* GNU/Hurd */
        len = build_elf64(buf, sizeof(buf), EM_X86_64, &abi, sizeof(abi), 0, 4);
        assert_int_equal(inspect_bytes(buf, len, &info), 0);
        assert_true(info.is_elf);
        assert_false(info.has_abi_tag);
        assert_false(gs_elf_abi_at_least(&info, 0, 0, 0));
        abi.desc[0] = 0;

        /* 32-bit i386 with the tag */
        len = build_elf32(buf, sizeof(buf), EM_386, &abi, sizeof(abi));
        assert_int_equal(inspect_bytes(buf, len, &info), 0);
        assert_true(info.is_elf);
        assert_false(info.is_64);
        assert_int_equal(info.machine, EM_386);
        assert_true(info.has_abi_tag);
        assert_int_equal(info.abi[2], 99);
#if defined(__x86_64__)
        assert_true(gs_elf_matches_arch(&info, true));
        assert_false(gs_elf_matches_arch(&info, false));
#endif
        /* 32-bit ARM: never matches on x86_64 */
        len = build_elf32(buf, sizeof(buf), EM_ARM, &abi, sizeof(abi));
        assert_int_equal(inspect_bytes(buf, len, &info), 0);
        assert_true(info.is_elf);
#if defined(__x86_64__)
        assert_false(gs_elf_matches_arch(&info, true));
#elif defined(__aarch64__)
        assert_true(gs_elf_matches_arch(&info, true));
#endif
        /* 64-bit aarch64 */
        len = build_elf64(buf, sizeof(buf), EM_AARCH64, &abi, sizeof(abi), 0, 4);
        assert_int_equal(inspect_bytes(buf, len, &info), 0);
#if defined(__x86_64__)
        assert_false(gs_elf_matches_arch(&info, false));
#elif defined(__aarch64__)
        assert_true(gs_elf_matches_arch(&info, false));
#endif
}

static void test_elf_hostile(void **state)
{
        (void)state;
        uint8_t buf[1024];
        struct gs_elf_info info;
        struct note_abi abi = {4, 16, NT_GNU_ABI_TAG, "GNU", {0, 2, 3, 99}};
        size_t len;

        /* PT_NOTE pointing past the end: skipped, still an ELF */
        len = build_elf64(buf, sizeof(buf), EM_X86_64, &abi, sizeof(abi), 0xfffffffffffffff0ull, 4);
        assert_int_equal(inspect_bytes(buf, len, &info), 0);
        assert_true(info.is_elf);
        assert_false(info.has_abi_tag);

        /* namesz / descsz huge: no read past the segment */
        struct note_abi evil = abi;
        evil.namesz = 0xfffffff0u;
        len = build_elf64(buf, sizeof(buf), EM_X86_64, &evil, sizeof(evil), 0, 4);
        assert_int_equal(inspect_bytes(buf, len, &info), 0);
        assert_false(info.has_abi_tag);
        evil = abi;
        evil.descsz = 0xffffffffu;
        len = build_elf64(buf, sizeof(buf), EM_X86_64, &evil, sizeof(evil), 0, 4);
        assert_int_equal(inspect_bytes(buf, len, &info), 0);
        assert_false(info.has_abi_tag);
        /* descriptor too short for a version triple */
        evil = abi;
        evil.descsz = 8;
        len = build_elf64(buf, sizeof(buf), EM_X86_64, &evil, sizeof(evil), 0, 4);
        assert_int_equal(inspect_bytes(buf, len, &info), 0);
        assert_false(info.has_abi_tag);

        /* segment cut in the middle of the note */
        len = build_elf64(buf, sizeof(buf), EM_X86_64, &abi, sizeof(abi) - 4, 0, 4);
        assert_int_equal(inspect_bytes(buf, len, &info), 0);
        assert_true(info.is_elf);
        assert_false(info.has_abi_tag);

        /* program header table out of range / absurd */
        len = build_elf64(buf, sizeof(buf), EM_X86_64, &abi, sizeof(abi), 0, 4);
        Elf64_Ehdr eh;
        memcpy(&eh, buf, sizeof(eh));
        Elf64_Ehdr bad = eh;
        bad.e_phoff = 0xffffffffffffff00ull;
        memcpy(buf, &bad, sizeof(bad));
        assert_int_equal(inspect_bytes(buf, len, &info), 0);
        assert_false(info.is_elf);
        bad = eh;
        bad.e_phnum = 0xffff;
        memcpy(buf, &bad, sizeof(bad));
        assert_int_equal(inspect_bytes(buf, len, &info), 0);
        assert_false(info.is_elf);
        bad = eh;
        bad.e_phentsize = 8; /* smaller than a program header */
        memcpy(buf, &bad, sizeof(bad));
        assert_int_equal(inspect_bytes(buf, len, &info), 0);
        assert_false(info.is_elf);
        assert_false(info.is_64); /* nothing is reported about a file that is not ELF */
        assert_int_equal(info.machine, 0);
        bad = eh;
        bad.e_phnum = 0; /* no program headers: an ELF without notes */
        memcpy(buf, &bad, sizeof(bad));
        assert_int_equal(inspect_bytes(buf, len, &info), 0);
        assert_true(info.is_elf);
        assert_false(info.has_abi_tag);

        /* big-endian and unknown class: not handled -> not ELF */
        bad = eh;
        bad.e_ident[EI_DATA] = ELFDATA2MSB;
        memcpy(buf, &bad, sizeof(bad));
        assert_int_equal(inspect_bytes(buf, len, &info), 0);
        assert_false(info.is_elf);
        bad = eh;
        bad.e_ident[EI_CLASS] = 3;
        memcpy(buf, &bad, sizeof(bad));
        assert_int_equal(inspect_bytes(buf, len, &info), 0);
        assert_false(info.is_elf);
        bad = eh;
        bad.e_ident[EI_VERSION] = 0;
        memcpy(buf, &bad, sizeof(bad));
        assert_int_equal(inspect_bytes(buf, len, &info), 0);
        assert_false(info.is_elf);
}

/* A shared object built now with an ABI tag note, and the host's libc (which usually has one). */
static void test_elf_abi_tag_compiled(void **state)
{
        (void)state;
        if (!have_cc())
                fail_msg("no C compiler (cc): `make test-deps` installs it");
        char *dir = make_tmpdir();
        char src[4200], so[4200], cmd[9000];
        snprintf(src, sizeof(src), "%s/tag.c", dir);
        snprintf(so, sizeof(so), "%s/libtag.so.1", dir);
        static const char code[] =
                "__asm__(\".section .note.ABI-tag,\\\"a\\\",@note\\n\"\n"
                "        \".balign 4\\n\"\n"
                "        \".long 4\\n.long 16\\n.long 1\\n\"\n"
                "        \".asciz \\\"GNU\\\"\\n\"\n"
                "        \".long 0\\n.long 2\\n.long 3\\n.long 99\\n\"\n"
                "        \".previous\\n\");\n"
                "int gs_tag_dummy(void) { return 0; }\n";
        write_file(src, code, sizeof(code) - 1);
        snprintf(cmd, sizeof(cmd),
                 "cc -shared -fPIC -Wl,-soname,libtag.so.1 -o '%s' '%s' >/dev/null 2>&1", so, src);
        if (system(cmd) != 0) {
                rm_tree(dir);
                free(dir);
                fail_msg("the compiler failed: %s", cmd);
        }
        struct gs_elf_info info;
        assert_int_equal(inspect_path(so, &info), 0);
        assert_true(info.is_elf);
        assert_true(gs_elf_matches_arch(&info, false));
        assert_true(info.has_abi_tag);
        assert_int_equal(info.abi[0], 2);
        assert_int_equal(info.abi[1], 3);
        assert_int_equal(info.abi[2], 99);
        assert_true(gs_elf_abi_at_least(&info, 2, 3, 99));
        assert_false(gs_elf_abi_at_least(&info, 2, 4, 0));

        /* built without the note: no tag */
        snprintf(cmd, sizeof(cmd),
                 "cc -shared -fPIC -nostdlib -o '%s' -x c /dev/null >/dev/null 2>&1", so);
        assert_int_equal(system(cmd), 0);
        assert_int_equal(inspect_path(so, &info), 0);
        assert_true(info.is_elf);
        assert_false(info.has_abi_tag);

        rm_tree(dir);
        free(dir);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_new_format_filters),
                cmocka_unit_test(test_empty_cache),
                cmocka_unit_test(test_old_plus_new),
                cmocka_unit_test(test_old_misaligned_new_rejected),
                cmocka_unit_test(test_old_only_rejected),
                cmocka_unit_test(test_truncated_header),
                cmocka_unit_test(test_truncated_entries),
                cmocka_unit_test(test_nlibs_overflow),
                cmocka_unit_test(test_offsets_out_of_range),
                cmocka_unit_test(test_unterminated_string),
                cmocka_unit_test(test_wrong_magic_version_endian),
                cmocka_unit_test(test_callback_stop_and_fail),
                cmocka_unit_test(test_open_errors),
                cmocka_unit_test(test_real_ldconfig),
                cmocka_unit_test(test_system_cache),
                cmocka_unit_test(test_elf_host_binary),
                cmocka_unit_test(test_elf_not_elf),
                cmocka_unit_test(test_elf_truncated),
                cmocka_unit_test(test_elf_abi_tag_built),
                cmocka_unit_test(test_elf_hostile),
                cmocka_unit_test(test_elf_abi_tag_compiled),
        };
        return gs_skips_result(cmocka_run_group_tests(tests, NULL, NULL), sizeof(tests) / sizeof(tests[0]));
}
