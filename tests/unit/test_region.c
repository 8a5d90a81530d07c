/*
 * Unit tests: the per-container usage region (src/region/region.c). Non-root; temp files.
 * Children are forked processes that talk to the parent through pipes and exit codes only (no
 * cmocka calls in a child). Timings are printed for information, never asserted.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "region/region.h"

#define MiB (1024ull * 1024ull)
#define UUID0 "GPU-11111111-2222-3333-4444-555555555555"
#define UUID1 "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"

static char dir[64];
static char path[128];
static const char uuids2[2][GS_REGION_UUID_LEN] = { UUID0, UUID1 };

static int setup(void **state)
{
        (void)state;
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof(dir), "%s/gsregion.XXXXXX", tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
        if (mkdtemp(dir) == NULL)
                return -1;
        snprintf(path, sizeof(path), "%s/usage", dir);
        return 0;
}

static int teardown(void **state)
{
        (void)state;
        unlink(path);
        rmdir(dir);
        return 0;
}

static uint64_t now_ns(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct gs_region_file *W(struct gs_region *r)
{
        return (struct gs_region_file *)gs_region_file(r); /* the rw mapping: tests forge slots */
}

static struct gs_region *open2(uint64_t lim0, uint64_t lim1)
{
        char err[256] = "";
        uint64_t lim[2] = { lim0, lim1 };
        struct gs_region *r = NULL;
        int rc = gs_region_open(path, 2, lim, uuids2, &r, err, sizeof(err));
        if (rc != 0)
                print_error("gs_region_open: %s\n", err);
        assert_int_equal(rc, 0);
        assert_non_null(r);
        return r;
}

static uint64_t usage(struct gs_region *r, unsigned dev)
{
        uint64_t u = 0;
        assert_int_equal(gs_region_usage(r, dev, &u), 0);
        return u;
}

static void read_full(int fd, void *buf, size_t len)
{
        size_t got = 0;
        while (got < len) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                int pr = poll(&p, 1, 15000);
                assert_true(pr == 1 || (pr < 0 && errno == EINTR)); /* 15 s: a child hung */
                if (pr != 1)
                        continue;
                ssize_t n = read(fd, (char *)buf + got, len - got);
                if (n < 0 && errno == EINTR)
                        continue;
                assert_true(n > 0);
                got += (size_t)n;
        }
}

static void write_full(int fd, const void *buf, size_t len)
{
        while (len > 0) {
                ssize_t n = write(fd, buf, len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        _exit(90);
                buf = (const char *)buf + n;
                len -= (size_t)n;
        }
}

/* Child preamble: die with the parent, never outlive a hung test. */
static void child_guard(void)
{
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        alarm(60);
}

static void wait_exit0(pid_t pid)
{
        int st = 0;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
                print_error("child %d: status 0x%x\n", (int)pid, st);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static char proc_state(pid_t pid)
{
        char p[64], buf[512];
        snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
        FILE *f = fopen(p, "r");
        if (f == NULL)
                return '?';
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        char *c = strrchr(buf, ')');
        return c != NULL && c[1] == ' ' ? c[2] : '?';
}

static void wait_state(pid_t pid, char want)
{
        for (int i = 0; i < 5000; i++) {
                if (proc_state(pid) == want)
                        return;
                usleep(1000);
        }
        fail_msg("pid %d never reached state %c", (int)pid, want);
}

/* ------------------------------------------------------------------------------------------- */

static void test_layout(void **state)
{
        (void)state;
        assert_int_equal(sizeof(struct gs_region_file), 464960);
        assert_int_equal(sizeof(struct gs_region_header), 2048);
        assert_int_equal(sizeof(struct gs_region_slot), 448);
        assert_int_equal(offsetof(struct gs_region_file, slots), 2048);
        assert_int_equal(offsetof(struct gs_region_file, slots[1]), 2048 + 448);
        assert_int_equal(offsetof(struct gs_region_slot, busy_ns[1]), 288 + 8);
        assert_int_equal(offsetof(struct gs_region_header, compute_limit[1]), 1856 + 4);
        assert_int_equal(offsetof(struct gs_region_header, tokens[15]), 1920 + 15 * 8);
        assert_int_equal(offsetof(struct gs_region_header, lock), 64);
        assert_int_equal(offsetof(struct gs_region_header, slot_hwm), 128);
        assert_int_equal(offsetof(struct gs_region_header, limit), 192);
        assert_int_equal(offsetof(struct gs_region_header, uuid[1]), 320 + 96);
        assert_int_equal(offsetof(struct gs_region_slot, used[1]), 40);
        assert_int_equal(offsetof(struct gs_region_slot, extra[15]), 160 + 15 * 8);
        /* Version 3's counters area, after the slots (every version 2 offset above unchanged). */
        assert_int_equal(offsetof(struct gs_region_file, ctr), 460800);
        assert_int_equal(offsetof(struct gs_region_file, ctr.priority), 460800);
        assert_int_equal(offsetof(struct gs_region_file, ctr.dev[0].wait_bucket[13]), 460800 + 64 + 13 * 8);
        assert_int_equal(offsetof(struct gs_region_file, ctr.dev[1].wait_sum_ns), 460800 + 64 + 256 + 112);
        assert_int_equal(offsetof(struct gs_region_file, ctr.dev[15].launches), 460800 + 64 + 15 * 256 + 120);
        assert_int_equal(offsetof(struct gs_region_file, ctr.dev[2].compute_via), 460800 + 64 + 2 * 256 + 128);

        /* The on-disk bytes. */
        struct gs_region *r = open2(64 * MiB, 0);
        gs_region_close(r);
        int fd = open(path, O_RDONLY);
        assert_true(fd >= 0);
        unsigned char h[48];
        assert_int_equal(pread(fd, h, sizeof(h), 0), sizeof(h));
        close(fd);
        assert_memory_equal(h, "GSLICE\0\1", 8);
        uint32_t v[5];
        memcpy(v, h + 8, sizeof(v));
        assert_int_equal(v[0], 3);    /* version */
        assert_int_equal(v[1], 2048); /* header_size */
        assert_int_equal(v[2], 2);    /* ndevices */
        assert_int_equal(v[3], 1024); /* max_procs */
        assert_int_equal(v[4], 448);  /* slot_size */
}

static void test_create_attach(void **state)
{
        (void)state;
        struct gs_region *a = open2(64 * MiB, 0);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_size, GS_REGION_SIZE);
        assert_int_equal(st.st_mode & 0007, 0); /* never any local user's to write (issue 31) */
        assert_int_equal(gs_region_ndevices(a), 2);
        assert_int_equal(gs_region_limit(a, 0), 64 * MiB);
        assert_int_equal(gs_region_limit(a, 1), 0);
        assert_int_equal(gs_region_limit(a, 2), 0);
        assert_int_equal(gs_region_find_uuid(a, UUID1), 1);
        assert_int_equal(gs_region_find_uuid(a, "GPU-nope"), -1);
        assert_int_equal(W(a)->hdr.creator_pid, getpid());
        assert_true(W(a)->hdr.created_ns > 0);

        /* Attach with other arguments: the file's values win, and the difference is reported. */
        char err[256] = "";
        uint64_t other[1] = { 32 * MiB };
        struct gs_region *b = NULL;
        assert_int_equal(gs_region_open(path, 1, other, NULL, &b, err, sizeof(err)), 0);
        assert_int_equal(gs_region_ndevices(b), 2);
        assert_int_equal(gs_region_limit(b, 0), 64 * MiB);
        uint64_t same[2] = { 64 * MiB, 0 }, diff[2] = { 64 * MiB, 8 * MiB };
        assert_int_equal(gs_region_limits_match(b, 2, same, uuids2, err, sizeof(err)), 1);
        assert_int_equal(gs_region_limits_match(b, 2, same, NULL, err, sizeof(err)), 1);
        assert_int_equal(gs_region_limits_match(b, 2, diff, NULL, err, sizeof(err)), 0);
        assert_non_null(strstr(err, "limit for device 1 is 0 bytes"));
        assert_int_equal(gs_region_limits_match(b, 1, other, NULL, err, sizeof(err)), 0);
        assert_non_null(strstr(err, "has 2 devices"));
        const char swapped[2][GS_REGION_UUID_LEN] = { UUID1, UUID0 };
        assert_int_equal(gs_region_limits_match(b, 2, same, swapped, err, sizeof(err)), 0);
        assert_non_null(strstr(err, "device 0 is " UUID0));

        /* Both handles see one region. */
        int s = -1;
        assert_int_equal(gs_region_register(a, getpid(), &s), 0);
        assert_int_equal(gs_region_try_charge(a, s, 0, 3 * MiB, NULL), 0);
        assert_int_equal(usage(b, 0), 3 * MiB);

        /* Observer snapshot: pread copy, read-only. */
        struct gs_region *o = NULL;
        assert_int_equal(gs_region_open_snapshot(path, &o, err, sizeof(err)), 0);
        assert_int_equal(usage(o, 0), 3 * MiB);
        assert_int_equal(gs_region_limit(o, 0), 64 * MiB);
        assert_int_equal(gs_region_try_charge(o, s, 0, 1, NULL), -1);
        assert_int_equal(errno, EROFS);
        assert_int_equal(gs_region_register(o, getpid(), &s), -1);
        assert_int_equal(errno, EROFS);
        assert_int_equal(gs_region_reap(o), -1);
        assert_int_equal(gs_region_try_charge(b, s, 0, 1 * MiB, NULL), 0);
        assert_int_equal(usage(o, 0), 3 * MiB); /* a copy... */
        assert_int_equal(gs_region_refresh(o, err, sizeof(err)), 0);
        assert_int_equal(usage(o, 0), 4 * MiB); /* ...until refreshed */
        gs_region_close(o);

        assert_int_equal(gs_region_unregister(a, s), 0);
        assert_int_equal(usage(b, 0), 0);
        assert_int_equal(gs_region_try_charge(a, s, 0, 1, NULL), -1);
        assert_int_equal(errno, ESTALE);
        assert_int_equal(gs_region_try_charge(a, s, 1, 1, NULL), -1); /* unlimited path too */
        assert_int_equal(errno, ESTALE);
        assert_int_equal(gs_region_try_charge(a, s, 2, 1, NULL), -1);
        assert_int_equal(errno, EINVAL);
        assert_int_equal(gs_region_try_charge(a, 1024, 0, 1, NULL), -1);
        assert_int_equal(errno, EINVAL);
        gs_region_close(a);
        gs_region_close(b);
        gs_region_close(NULL);
}

static void write_file(const void *data, size_t len, off_t size)
{
        int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
        assert_true(fd >= 0);
        if (len > 0)
                assert_int_equal(pwrite(fd, data, len, 0), (ssize_t)len);
        assert_int_equal(ftruncate(fd, size), 0);
        close(fd);
}

static void expect_open_error(const char *needle)
{
        char err[256] = "";
        struct gs_region *r = (struct gs_region *)1;
        assert_int_equal(gs_region_open(path, 1, NULL, NULL, &r, err, sizeof(err)), -1);
        assert_null(r);
        if (strstr(err, needle) == NULL)
                print_error("error \"%s\" lacks \"%s\"\n", err, needle);
        assert_non_null(strstr(err, needle));
}

static void test_mismatch(void **state)
{
        (void)state;
        char err[256] = "";
        struct gs_region *r = NULL;

        /* Bad arguments. */
        assert_int_equal(gs_region_open(path, 0, NULL, NULL, &r, err, sizeof(err)), -1);
        assert_int_equal(errno, EINVAL);
        assert_int_equal(gs_region_open(path, 17, NULL, NULL, &r, err, sizeof(err)), -1);
        assert_non_null(strstr(err, "1..16"));

        /* A foreign file of the right size. */
        static char junk[GS_REGION_SIZE];
        memset(junk, 'x', sizeof(junk));
        write_file(junk, sizeof(junk), GS_REGION_SIZE);
        expect_open_error("bad magic");
        /* HAMi's cache file at the same path (other size, other magic). */
        write_file(junk, 64, 2008952);
        expect_open_error("bad magic");

        /* A region of another version / size. */
        unlink(path);
        gs_region_close(open2(0, 0));
        int fd = open(path, O_RDWR);
        uint32_t v4 = 4;
        assert_int_equal(pwrite(fd, &v4, 4, 8), 4);
        close(fd);
        expect_open_error("version 4, this gpuslice speaks version 3");
        assert_int_equal(gs_region_open_snapshot(path, &r, err, sizeof(err)), -1);
        assert_non_null(strstr(err, "version 4"));
        /* A version 2 region (an older interposer's: no counters area) is not attached to. */
        fd = open(path, O_RDWR);
        uint32_t v2 = 2;
        uint64_t size2 = GS_REGION_SIZE_V2;
        assert_int_equal(pwrite(fd, &v2, 4, 8), 4);
        assert_int_equal(pwrite(fd, &size2, 8, 32), 8);
        assert_int_equal(ftruncate(fd, GS_REGION_SIZE_V2), 0);
        close(fd);
        expect_open_error("version 2, this gpuslice speaks version 3");
        unlink(path);
        gs_region_close(open2(0, 0));
        assert_int_equal(truncate(path, GS_REGION_SIZE + 4096), 0);
        expect_open_error("size 469056 bytes, expected 464960");
        fd = open(path, O_RDWR);
        uint32_t slots = 2048;
        assert_int_equal(pwrite(fd, &slots, 4, 20), 4);
        close(fd);
        expect_open_error("layout mismatch");

        /* Not a regular file. */
        unlink(path);
        assert_int_equal(mkdir(path, 0700), 0);
        char dpath[sizeof(path)];
        memcpy(dpath, path, sizeof(path));
        assert_int_equal(gs_region_open(dpath, 1, NULL, NULL, &r, err, sizeof(err)), -1);
        assert_non_null(strstr(err, "usage region"));
        rmdir(path);

        /* Right size, no magic: a creator died before finishing; the next opener initializes. */
        write_file(NULL, 0, GS_REGION_SIZE);
        assert_int_equal(gs_region_open_snapshot(path, &r, err, sizeof(err)), -1);
        assert_non_null(strstr(err, "not initialized yet"));
        uint64_t lim[1] = { 5 * MiB };
        assert_int_equal(gs_region_open(path, 1, lim, NULL, &r, err, sizeof(err)), 0);
        assert_int_equal(gs_region_limit(r, 0), 5 * MiB);
        gs_region_close(r);

        /* Truncated by someone after creation: the observer refuses, no SIGBUS. */
        assert_int_equal(truncate(path, 4096), 0);
        assert_int_equal(gs_region_open_snapshot(path, &r, err, sizeof(err)), -1);
        assert_non_null(strstr(err, "truncated"));
        expect_open_error("size 4096 bytes");
}

/* The initializer dies holding the init flock (before the magic): the next open succeeds. */
static void test_init_lock_holder_killed(void **state)
{
        (void)state;
        int p[2];
        assert_int_equal(pipe(p), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                child_guard();
                int fd = open(path, O_RDWR | O_CREAT, 0666);
                if (fd < 0 || flock(fd, LOCK_EX) < 0 || ftruncate(fd, GS_REGION_SIZE) < 0)
                        _exit(1);
                write_full(p[1], "k", 1);
                for (;;)
                        pause();
        }
        char c;
        read_full(p[0], &c, 1);
        kill(pid, SIGKILL);
        int st;
        waitpid(pid, &st, 0);
        close(p[0]);
        close(p[1]);
        struct gs_region *r = open2(7 * MiB, 0);
        assert_int_equal(gs_region_limit(r, 0), 7 * MiB);
        gs_region_close(r);
}

/*
 * Two processes race 1 MiB charges to a 64 MiB limit: exactly 64 are granted in total, every
 * round. Each charge is followed by a short spin so that the two really interleave.
 */
#define RACE_ROUNDS 20

static void race_child(int go_rd, int res_wr)
{
        child_guard();
        char err[256];
        struct gs_region *c = NULL; /* a separate open, as another process would */
        int s;
        if (gs_region_open(path, 1, NULL, NULL, &c, err, sizeof(err)) < 0 ||
            gs_region_register(c, getpid(), &s) < 0)
                _exit(1);
        char ch;
        while (read(go_rd, &ch, 1) == 1) { /* "go": charge until refused */
                int32_t granted = 0;
                for (;;) {
                        int rc = gs_region_try_charge(c, s, 0, MiB, NULL);
                        if (rc < 0)
                                _exit(3);
                        if (rc == 1)
                                break;
                        granted++;
                        uint64_t spin = now_ns() + 20000;
                        while (now_ns() < spin)
                                ;
                }
                write_full(res_wr, &granted, sizeof(granted));
                if (read(go_rd, &ch, 1) != 1) /* "release": give it all back */
                        _exit(4);
                if (gs_region_uncharge(c, s, 0, (uint64_t)granted * MiB) < 0)
                        _exit(5);
                write_full(res_wr, &granted, sizeof(granted));
        }
        if (gs_region_unregister(c, s) < 0)
                _exit(6);
        gs_region_close(c);
        _exit(0);
}

static void test_two_process_race(void **state)
{
        (void)state;
        enum { NPROC = 2 };
        struct gs_region *r = open2(64 * MiB, 0);
        int go[NPROC][2], res[2];
        assert_int_equal(pipe(res), 0);
        pid_t pids[NPROC];
        for (int i = 0; i < NPROC; i++) {
                assert_int_equal(pipe(go[i]), 0);
                pids[i] = fork();
                assert_true(pids[i] >= 0);
                if (pids[i] == 0) {
                        close(res[0]);
                        for (int k = 0; k <= i; k++)
                                close(go[k][1]);
                        race_child(go[i][0], res[1]);
                }
                close(go[i][0]);
        }
        close(res[1]);
        int split[NPROC] = { 0 }, interleaved = 0;
        for (int round = 0; round < RACE_ROUNDS; round++) {
                for (int i = 0; i < NPROC; i++)
                        write_full(go[i][1], "g", 1);
                int32_t total = 0, g[NPROC];
                for (int i = 0; i < NPROC; i++) {
                        read_full(res[0], &g[i], sizeof(g[i]));
                        total += g[i];
                }
                assert_int_equal(total, 64);
                assert_int_equal(usage(r, 0), 64 * MiB);
                split[0] += g[0];
                split[1] += g[1];
                interleaved += g[0] != 0 && g[1] != 0;
                for (int i = 0; i < NPROC; i++)
                        write_full(go[i][1], "r", 1);
                for (int i = 0; i < NPROC; i++)
                        read_full(res[0], &g[i], sizeof(g[i]));
                assert_int_equal(usage(r, 0), 0);
        }
        print_message("%d rounds, 64 MiB granted in each; split over all rounds %d/%d MiB, both processes "
                      "granted in %d rounds\n",
                      RACE_ROUNDS, split[0], split[1], interleaved);
        for (int i = 0; i < NPROC; i++)
                close(go[i][1]);
        for (int i = 0; i < NPROC; i++)
                wait_exit0(pids[i]);
        close(res[0]);
        assert_int_equal(usage(r, 0), 0);
        struct gs_region_stats st;
        assert_int_equal(gs_region_stats(r, &st), 0);
        assert_int_equal(st.live, 0);
        assert_true(st.refused >= NPROC * RACE_ROUNDS);
        gs_region_close(r);
}

/* Threads of one process share its slot. */
struct thr_arg {
        struct gs_region *r;
        int slot;
        int granted;
};

static void *charge_thread(void *p)
{
        struct thr_arg *a = p;
        while (gs_region_try_charge(a->r, a->slot, 0, MiB, NULL) == 0)
                a->granted++;
        return NULL;
}

static void *uncharge_thread(void *p)
{
        struct thr_arg *a = p;
        for (int i = 0; i < 20000; i++)
                gs_region_uncharge(a->r, a->slot, 1, 1);
        return NULL;
}

static void test_threads(void **state)
{
        (void)state;
        struct gs_region *r = open2(64 * MiB, 0);
        int s;
        assert_int_equal(gs_region_register(r, getpid(), &s), 0);
        struct thr_arg a[4];
        pthread_t t[4];
        for (int i = 0; i < 4; i++) {
                a[i] = (struct thr_arg){ r, s, 0 };
                assert_int_equal(pthread_create(&t[i], NULL, charge_thread, &a[i]), 0);
        }
        int total = 0;
        for (int i = 0; i < 4; i++) {
                pthread_join(t[i], NULL);
                total += a[i].granted;
        }
        assert_int_equal(total, 64);
        assert_int_equal(atomic_load(&W(r)->slots[s].used[0]), 64 * MiB);

        /* Concurrent uncharges below zero clamp at 0, never wrap. */
        assert_int_equal(gs_region_try_charge(r, s, 1, 1000, NULL), 0);
        for (int i = 0; i < 4; i++)
                assert_int_equal(pthread_create(&t[i], NULL, uncharge_thread, &a[i]), 0);
        for (int i = 0; i < 4; i++)
                pthread_join(t[i], NULL);
        assert_int_equal(usage(r, 1), 0);
        assert_int_equal(gs_region_unregister(r, s), 0);
        gs_region_close(r);
}

static void test_uncharge_extra(void **state)
{
        (void)state;
        struct gs_region *r = open2(16 * MiB, 0);
        int s;
        assert_int_equal(gs_region_register(r, getpid(), &s), 0);
        assert_int_equal(gs_region_try_charge(r, s, 0, 10, NULL), 0);
        assert_int_equal(gs_region_uncharge(r, s, 0, 20), 0);
        assert_int_equal(usage(r, 0), 0);
        assert_int_equal(gs_region_uncharge(r, s, 0, UINT64_MAX), 0);
        assert_int_equal(usage(r, 0), 0);
        assert_int_equal(gs_region_uncharge(r, s, 5, 1), -1);
        assert_int_equal(errno, EINVAL);

        /* extra counts toward the limit. */
        uint64_t u = 0;
        assert_int_equal(gs_region_set_extra(r, s, 0, 6 * MiB), 0);
        assert_int_equal(usage(r, 0), 6 * MiB);
        assert_int_equal(gs_region_try_charge(r, s, 0, 10 * MiB, &u), 0);
        assert_int_equal(u, 16 * MiB);
        assert_int_equal(gs_region_try_charge(r, s, 0, 1, &u), 1);
        assert_int_equal(u, 16 * MiB);
        assert_int_equal(gs_region_set_extra(r, s, 0, 7 * MiB), 0); /* measured above the limit */
        assert_int_equal(gs_region_try_charge(r, s, 0, 0, &u), 0);  /* 0 bytes: never refused */
        assert_int_equal(u, 17 * MiB);
        assert_int_equal(gs_region_try_charge(r, s, 0, 1, &u), 1);
        assert_int_equal(gs_region_set_extra(r, s, 0, 0), 0);
        assert_int_equal(gs_region_try_charge(r, s, 0, 6 * MiB, &u), 0);
        /* Overflowing requests are refused, not wrapped. */
        assert_int_equal(gs_region_try_charge(r, s, 0, UINT64_MAX, &u), 1);
        /* Unlimited device: everything is granted and counted. */
        assert_int_equal(gs_region_try_charge(r, s, 1, 1ull << 40, &u), 0);
        assert_int_equal(u, 1ull << 40);
        assert_int_equal(gs_region_heartbeat(r, s), 0);
        assert_int_equal(gs_region_set_host_pid(r, s, 4242), 0);
        assert_int_equal(atomic_load(&W(r)->slots[s].host_pid), 4242);

        /* Same process again (exec): same slot, counters reset. */
        int s2;
        assert_int_equal(gs_region_register(r, getpid(), &s2), 0);
        assert_int_equal(s2, s);
        assert_int_equal(usage(r, 0), 0);
        assert_int_equal(usage(r, 1), 0);
        assert_int_equal(gs_region_unregister(r, s), 0);
        gs_region_close(r);
}

/* The compute fields: the share in the header, busy time per slot (summed over live slots and
 * gone with the slot), the shared budget and the refill clock; a snapshot cannot write them. */
static void test_compute(void **state)
{
        (void)state;
        struct gs_region *r = open2(0, 0);
        int s;
        assert_int_equal(gs_region_register(r, getpid(), &s), 0);
        assert_int_equal(gs_region_set_compute(r, 1, 3000, 1), 0);
        assert_int_equal(atomic_load(&W(r)->hdr.compute_limit[1]), 3000);
        assert_int_equal(atomic_load(&W(r)->hdr.compute_mode), 1);
        assert_int_equal(gs_region_set_compute(r, 2, 1, 0), -1); /* 2 devices */
        assert_int_equal(errno, EINVAL);
        assert_int_equal(gs_region_set_busy(r, s, 1, 123456), 0);
        assert_int_equal(gs_region_busy(r, 1), 123456);
        assert_int_equal(gs_region_busy(r, 0), 0);
        assert_int_equal(gs_region_set_last_launch(r, s, 42), 0);
        _Atomic int64_t *t = gs_region_tokens(r, 1);
        assert_non_null(t);
        assert_null(gs_region_tokens(r, 2));
        atomic_fetch_sub(t, 5);
        assert_int_equal(atomic_load(&W(r)->hdr.tokens[1]), -5);
        assert_int_equal(gs_region_refill_claim(r, 100), 0);
        assert_int_equal(gs_region_refill_claim(r, 250), 100);

        struct gs_region *snap = NULL;
        char err[256];
        assert_int_equal(gs_region_open_snapshot(path, &snap, err, sizeof(err)), 0);
        assert_int_equal(gs_region_busy(snap, 1), 123456);
        assert_null(gs_region_tokens(snap, 1));
        assert_int_equal(gs_region_set_busy(snap, s, 1, 1), -1);
        assert_int_equal(errno, EROFS);
        gs_region_close(snap);

        assert_int_equal(gs_region_unregister(r, s), 0);
        assert_int_equal(gs_region_busy(r, 1), 0);
        assert_int_equal(atomic_load(&W(r)->slots[s].last_launch_ns), 0);
        gs_region_close(r);
}

/* The counters area (version 3): launch waits by bucket, their sum, launches, priority and how the
 * compute share is enforced; slice-wide, so a process's exit leaves them as they are. */
static uint64_t bucket(struct gs_region *r, unsigned dev, unsigned i)
{
        return atomic_load(&W(r)->ctr.dev[dev].wait_bucket[i]);
}

static void test_counters(void **state)
{
        (void)state;
        struct gs_region *r = open2(0, 0);
        /* Not reported yet: distinguishable from high priority and the time limiter. */
        assert_int_equal(atomic_load(&W(r)->ctr.priority), GS_REGION_UNSET);
        assert_int_equal(atomic_load(&W(r)->ctr.dev[0].compute_via), GS_REGION_UNSET);
        assert_int_equal(atomic_load(&W(r)->ctr.dev[15].compute_via), GS_REGION_UNSET);

        /* Bucket boundaries: an edge belongs to its own bucket (Prometheus's le), one ns more to
         * the next; past 1 s is the last bucket. */
        static const struct { uint64_t ns; unsigned b; } cases[] = {
                { 1, 0 },          { 50000, 0 },      { 50001, 1 },       { 100000, 1 },     { 100001, 2 },
                { 250000, 2 },     { 499999, 3 },     { 500000, 3 },      { 1000000, 4 },    { 1000001, 5 },
                { 2500000, 5 },    { 5000000, 6 },    { 10000000, 7 },    { 25000000, 8 },   { 50000000, 9 },
                { 100000000, 10 }, { 250000000, 11 }, { 250000001, 12 },  { 1000000000, 12 },
                { 1000000001, 13 }, { UINT64_MAX / 4, 13 },
        };
        uint64_t want[GS_REGION_WAIT_BUCKETS] = {0}, sum = 0;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                assert_int_equal(gs_region_wait_bucket(cases[i].ns), cases[i].b);
                gs_region_note_wait(r, 1, cases[i].ns);
                want[cases[i].b]++;
                sum += cases[i].ns;
        }
        for (unsigned i = 0; i < GS_REGION_WAIT_BUCKETS; i++) {
                if (bucket(r, 1, i) != want[i])
                        print_error("bucket %u: %llu, want %llu\n", i, (unsigned long long)bucket(r, 1, i),
                                    (unsigned long long)want[i]);
                assert_int_equal(bucket(r, 1, i), want[i]);
                assert_int_equal(bucket(r, 0, i), 0); /* the other device untouched */
        }
        assert_int_equal(atomic_load(&W(r)->ctr.dev[1].wait_sum_ns), sum);
        assert_int_equal(gs_region_wait_edge_ns(0), 50000);
        assert_int_equal(gs_region_wait_edge_ns(12), 1000000000);
        assert_true(gs_region_wait_edge_ns(13) == UINT64_MAX);

        /* A wait of 0 is no wait; launches are counted on their own. */
        gs_region_note_wait(r, 0, 0);
        for (unsigned i = 0; i < GS_REGION_WAIT_BUCKETS; i++)
                assert_int_equal(bucket(r, 0, i), 0);
        gs_region_add_launches(r, 0, 5);
        gs_region_add_launches(r, 0, 1);
        gs_region_add_launches(r, 0, 0);
        assert_int_equal(atomic_load(&W(r)->ctr.dev[0].launches), 6);
        assert_int_equal(atomic_load(&W(r)->ctr.dev[0].wait_sum_ns), 0);

        /* Priority and mechanism; out-of-range values. */
        gs_region_set_priority(r, GS_REGION_PRIO_HIGH);
        assert_int_equal(atomic_load(&W(r)->ctr.priority), 0);
        gs_region_set_priority(r, 7); /* HAMi: larger than 2 is low */
        assert_int_equal(atomic_load(&W(r)->ctr.priority), GS_REGION_PRIO_LOW);
        gs_region_set_compute_via(r, 1, GS_REGION_VIA_MPS);
        assert_int_equal(atomic_load(&W(r)->ctr.dev[1].compute_via), 1);
        gs_region_set_compute_via(r, 1, 3); /* unknown: ignored */
        assert_int_equal(atomic_load(&W(r)->ctr.dev[1].compute_via), 1);
        gs_region_set_compute_via(r, 1, GS_REGION_VIA_TIME_FALLBACK);
        assert_int_equal(atomic_load(&W(r)->ctr.dev[1].compute_via), 2);

        /* No-ops: NULL, a device past the region's 2 (even one inside the 16 of the layout), a
         * snapshot handle. */
        gs_region_note_wait(NULL, 0, 1000);
        gs_region_add_launches(NULL, 0, 1);
        gs_region_set_priority(NULL, 1);
        gs_region_set_compute_via(NULL, 0, 1);
        gs_region_note_wait(r, 2, 1000);
        gs_region_add_launches(r, 2, 1);
        gs_region_add_launches(r, 1000, 1);
        gs_region_set_compute_via(r, 2, GS_REGION_VIA_MPS);
        assert_int_equal(atomic_load(&W(r)->ctr.dev[2].launches), 0);
        assert_int_equal(bucket(r, 2, 0), 0);
        assert_int_equal(atomic_load(&W(r)->ctr.dev[2].compute_via), GS_REGION_UNSET);
        struct gs_region *snap = NULL;
        char err[256];
        assert_int_equal(gs_region_open_snapshot(path, &snap, err, sizeof(err)), 0);
        gs_region_add_launches(snap, 0, 100);
        gs_region_note_wait(snap, 0, 1000);
        gs_region_set_priority(snap, 1);
        assert_int_equal(gs_region_file(snap)->ctr.dev[0].launches, 6); /* read, not written */
        gs_region_close(snap);
        assert_int_equal(atomic_load(&W(r)->ctr.dev[0].launches), 6);
        assert_int_equal(atomic_load(&W(r)->ctr.priority), GS_REGION_PRIO_LOW);

        /* Slice-wide: a process that counts, then exits (unregistered or killed and reaped),
         * leaves its counts; a later opener sees them. */
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                child_guard();
                struct gs_region *c = NULL;
                int slot;
                if (gs_region_open(path, 2, NULL, NULL, &c, err, sizeof(err)) < 0 ||
                    gs_region_register(c, getpid(), &slot) < 0)
                        _exit(1);
                gs_region_add_launches(c, 0, 10);
                gs_region_note_wait(c, 0, 3000000);
                gs_region_unregister(c, slot);
                _exit(0);
        }
        wait_exit0(pid);
        gs_region_reap(r);
        gs_region_close(r);
        r = open2(0, 0);
        assert_int_equal(atomic_load(&W(r)->ctr.dev[0].launches), 16);
        assert_int_equal(bucket(r, 0, 6), 1);
        assert_int_equal(atomic_load(&W(r)->ctr.dev[0].wait_sum_ns), 3000000);
        gs_region_close(r);
}

/* Concurrent writers (threads of this process and another process): no count is lost. */
struct wait_arg {
        struct gs_region *r;
        unsigned seed;
};

#define WAIT_ITERS 100000

static void *wait_thread(void *p)
{
        struct wait_arg *a = p;
        for (unsigned i = 0; i < WAIT_ITERS; i++) {
                gs_region_add_launches(a->r, 1, 1);
                if (i % 2 == 0) /* waits of 1..2^20 ns by a fixed rule: the parent recomputes them */
                        gs_region_note_wait(a->r, 1, 1 + ((i * 2654435761u + a->seed) & 0xfffff));
        }
        return NULL;
}

static void test_counters_concurrent(void **state)
{
        (void)state;
        struct gs_region *r = open2(0, 0);
        enum { NT = 4 };
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                child_guard();
                struct gs_region *c = NULL;
                char err[256];
                if (gs_region_open(path, 2, NULL, NULL, &c, err, sizeof(err)) < 0)
                        _exit(1);
                struct wait_arg a = { c, NT };
                wait_thread(&a);
                _exit(0);
        }
        struct wait_arg a[NT];
        pthread_t t[NT];
        for (unsigned i = 0; i < NT; i++) {
                a[i] = (struct wait_arg){ r, i };
                assert_int_equal(pthread_create(&t[i], NULL, wait_thread, &a[i]), 0);
        }
        for (unsigned i = 0; i < NT; i++)
                pthread_join(t[i], NULL);
        wait_exit0(pid);
        uint64_t want[GS_REGION_WAIT_BUCKETS] = {0}, sum = 0;
        for (unsigned seed = 0; seed <= NT; seed++)
                for (unsigned i = 0; i < WAIT_ITERS; i += 2) {
                        uint64_t w = 1 + ((i * 2654435761u + seed) & 0xfffff);
                        want[gs_region_wait_bucket(w)]++;
                        sum += w;
                }
        uint64_t waited = 0;
        for (unsigned i = 0; i < GS_REGION_WAIT_BUCKETS; i++) {
                assert_int_equal(bucket(r, 1, i), want[i]);
                waited += want[i];
        }
        assert_int_equal(waited, (NT + 1) * WAIT_ITERS / 2);
        assert_int_equal(atomic_load(&W(r)->ctr.dev[1].launches), (NT + 1) * WAIT_ITERS);
        assert_int_equal(atomic_load(&W(r)->ctr.dev[1].wait_sum_ns), sum);
        assert_int_equal(atomic_load(&W(r)->ctr.dev[0].launches), 0);
        gs_region_close(r);
}

/* A slot whose pid is alive but belongs to another process (start time differs) is reaped. */
static void test_pid_reuse(void **state)
{
        (void)state;
        struct gs_region *r = open2(16 * MiB, 0);
        int s;
        assert_int_equal(gs_region_register(r, getpid(), &s), 0);
        uint64_t mine = gs_region_proc_start_time(getpid());
        assert_true(mine != 0);
        assert_int_equal(atomic_load(&W(r)->slots[s].start_time), mine);
        assert_int_equal(gs_region_try_charge(r, s, 0, 5 * MiB, NULL), 0);
        assert_int_equal(gs_region_reap(r), 0); /* we are alive */

        /* Forge "the process that had this pid died and the pid was reused". */
        atomic_store(&W(r)->slots[s].start_time, mine + 1);
        assert_int_equal(gs_region_reap(r), 1);
        assert_int_equal(atomic_load(&W(r)->slots[s].pid), 0);
        assert_int_equal(usage(r, 0), 0);

        /* A dead pid: never running (pid_max + something is never valid). */
        atomic_store(&W(r)->slots[3].start_time, 1);
        atomic_store(&W(r)->slots[3].used[0], 9 * MiB);
        atomic_store(&W(r)->slots[3].pid, 0x3ffffff0);
        atomic_store(&W(r)->hdr.slot_hwm, 4);
        assert_int_equal(usage(r, 0), 9 * MiB);
        /* A charge that would be refused reaps first, then succeeds. */
        assert_int_equal(gs_region_register(r, getpid(), &s), 0);
        assert_int_equal(s, 0);
        /* Registering reads no /proc (a start-up must not cost one read per live process):
         * the dead slot is still counted... */
        assert_int_equal(usage(r, 0), 9 * MiB);
        /* ...until a charge would not fit: then it is reaped and the charge re-checked. */
        assert_int_equal(gs_region_try_charge(r, s, 0, 10 * MiB, NULL), 0);
        assert_int_equal(usage(r, 0), 10 * MiB);
        struct gs_region_stats st;
        gs_region_stats(r, &st);
        assert_int_equal(st.reaped, 2);
        assert_int_equal(st.hwm, 1); /* shrunk to the highest live slot */
        assert_int_equal(gs_region_unregister(r, s), 0);
        gs_region_close(r);
}

/* Child: register, charge `mib` on dev 0, report the slot, then do `what`. */
static pid_t spawn_charger(int mib, int what, int *slot)
{
        int p[2];
        assert_int_equal(pipe(p), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                child_guard();
                char err[256];
                struct gs_region *c = NULL;
                int s;
                if (gs_region_open(path, 1, NULL, NULL, &c, err, sizeof(err)) < 0 ||
                    gs_region_register(c, getpid(), &s) < 0 ||
                    gs_region_try_charge(c, s, 0, (uint64_t)mib * MiB, NULL) != 0)
                        _exit(1);
                if (what == 2 && gs_region_lock(c) != 0) /* hold the region lock, then get killed */
                        _exit(2);
                write_full(p[1], &s, sizeof(s));
                if (what == 0)
                        _exit(0); /* exit without unregistering */
                for (;;)
                        pause();
        }
        close(p[1]);
        read_full(p[0], slot, sizeof(*slot));
        close(p[0]);
        return pid;
}

static void test_reap_after_exit(void **state)
{
        (void)state;
        struct gs_region *r = open2(16 * MiB, 0);
        int s;
        /* Exited but not waited for: a zombie is dead. */
        pid_t pid = spawn_charger(10, 0, &s);
        wait_state(pid, 'Z');
        assert_int_equal(usage(r, 0), 10 * MiB); /* lazy: counted until reaped */
        assert_int_equal(gs_region_reap(r), 1);
        assert_int_equal(usage(r, 0), 0);
        assert_int_equal(atomic_load(&W(r)->slots[s].pid), 0);
        wait_exit0(pid);

        /* Exited and waited for (kill(pid, 0) == ESRCH). */
        pid = spawn_charger(10, 0, &s);
        wait_exit0(pid);
        assert_int_equal(usage(r, 0), 10 * MiB);
        /* Our charge would be refused: try_charge reaps and re-checks. */
        int me;
        assert_int_equal(gs_region_register(r, getpid(), &me), 0); /* (register does not reap) */
        assert_int_equal(usage(r, 0), 10 * MiB);
        assert_int_equal(gs_region_try_charge(r, me, 0, 8 * MiB, NULL), 0);
        assert_int_equal(usage(r, 0), 8 * MiB);
        gs_region_unregister(r, me);

        /* Killed by SIGKILL while alive and charging. */
        pid = spawn_charger(12, 1, &s);
        assert_int_equal(gs_region_register(r, getpid(), &me), 0);
        uint64_t u;
        assert_int_equal(gs_region_try_charge(r, me, 0, 8 * MiB, &u), 1);
        assert_int_equal(u, 12 * MiB);
        kill(pid, SIGKILL);
        int st;
        waitpid(pid, &st, 0);
        assert_int_equal(gs_region_try_charge(r, me, 0, 8 * MiB, &u), 0);
        assert_int_equal(u, 8 * MiB);
        gs_region_unregister(r, me);
        gs_region_close(r);
}

/* main() calls pthread_exit while a thread lives on: the leader shows 'Z' but the process lives. */
static void *sleeper(void *p)
{
        (void)p;
        for (;;)
                pause();
        return NULL;
}

static void test_zombie_leader_alive(void **state)
{
        (void)state;
        struct gs_region *r = open2(16 * MiB, 0);
        int p[2];
        assert_int_equal(pipe(p), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                child_guard();
                int s;
                pthread_t t;
                if (gs_region_register(r, getpid(), &s) < 0 || gs_region_try_charge(r, s, 0, MiB, NULL) != 0 ||
                    pthread_create(&t, NULL, sleeper, NULL) != 0)
                        _exit(1);
                write_full(p[1], &s, sizeof(s));
                pthread_exit(NULL);
        }
        close(p[1]);
        int s;
        read_full(p[0], &s, sizeof(s));
        close(p[0]);
        wait_state(pid, 'Z');
        assert_int_equal(gs_region_reap(r), 0);
        assert_int_equal(usage(r, 0), MiB);
        kill(pid, SIGKILL);
        int st;
        waitpid(pid, &st, 0);
        assert_int_equal(gs_region_reap(r), 1);
        assert_int_equal(usage(r, 0), 0);
        gs_region_close(r);
}

/* A process SIGKILLed while HOLDING the region lock: the next locker recovers (EOWNERDEAD). */
static void test_owner_dead_while_locked(void **state)
{
        (void)state;
        struct gs_region *r = open2(16 * MiB, 0);
        int me, s;
        assert_int_equal(gs_region_register(r, getpid(), &me), 0);
        for (int round = 0; round < 2; round++) {
                pid_t pid = spawn_charger(8, 2, &s); /* holds the lock now */
                if (round == 0) {
                        kill(pid, SIGKILL);
                        int st;
                        waitpid(pid, &st, 0);
                } else {
                        /* Not waited for: our lock attempt blocks until the kernel releases the
                         * dead holder's robust futex, then recovers. */
                        kill(pid, SIGKILL);
                }
                uint64_t u;
                assert_int_equal(gs_region_try_charge(r, me, 0, MiB, &u), 0);
                if (round == 0) /* the recovery reaped the dead child's 8 MiB */
                        assert_int_equal(u, MiB);
                struct gs_region_stats st;
                gs_region_stats(r, &st);
                assert_int_equal(st.recoveries, (uint64_t)round + 1);
                if (round == 1) {
                        /* The robust futex is released early in exit, maybe before the process
                         * looks dead: its slot may be left for the next reap. */
                        int stt;
                        waitpid(pid, &stt, 0);
                        assert_true(gs_region_reap(r) >= 0);
                }
                gs_region_stats(r, &st);
                assert_int_equal(st.live, 1);
                assert_int_equal(usage(r, 0), (uint64_t)(round + 1) * MiB);
        }
        /* The lock works normally afterwards. */
        assert_int_equal(gs_region_lock(r), 0);
        assert_int_equal(gs_region_unlock(r), 0);
        assert_int_equal(gs_region_try_charge(r, me, 0, MiB, NULL), 0);
        gs_region_unregister(r, me);
        gs_region_close(r);
}

/* A live holder that never lets go (stopped, stuck): lockers give up after the timeout, and
 * lock-free readers never wait. */
static void test_lock_timeout(void **state)
{
        (void)state;
        struct gs_region *r = open2(16 * MiB, 0);
        int me, s;
        assert_int_equal(gs_region_register(r, getpid(), &me), 0);
        pid_t pid = spawn_charger(4, 2, &s);
        gs_region_set_lock_timeout(r, 200);
        uint64_t t0 = now_ns();
        assert_int_equal(gs_region_try_charge(r, me, 0, MiB, NULL), -1);
        assert_int_equal(errno, ETIMEDOUT);
        print_message("lock timeout after %.0f ms (set 200 ms)\n", (double)(now_ns() - t0) / 1e6);
        assert_int_equal(usage(r, 0), 4 * MiB);
        assert_int_equal(gs_region_uncharge(r, me, 0, 1), 0); /* lock-free paths still work */
        kill(pid, SIGKILL);
        int st;
        waitpid(pid, &st, 0);
        assert_int_equal(gs_region_try_charge(r, me, 0, MiB, NULL), 0);
        gs_region_unregister(r, me);
        gs_region_close(r);
}

/* 1024 live slots: register fails clearly; a freed slot is reused; forked children may not
 * unregister their parent's slot. */
static void test_full(void **state)
{
        (void)state;
        struct gs_region *r = open2(0, 0);
        uint64_t mine = gs_region_proc_start_time(getpid());
        struct gs_region_file *f = W(r);
        for (int i = 0; i < GS_REGION_MAX_PROCS; i++) {
                atomic_store(&f->slots[i].start_time, mine);
                atomic_store(&f->slots[i].pid, getpid());
        }
        atomic_store(&f->hdr.slot_hwm, GS_REGION_MAX_PROCS);
        int p[2];
        assert_int_equal(pipe(p), 0);
        pid_t pid = fork();
        if (pid == 0) {
                child_guard();
                close(p[1]);
                char c;
                /* Someone else's slot: refused. */
                if (gs_region_unregister(r, 5) != -1 || errno != EPERM)
                        _exit(1);
                (void)!read(p[0], &c, 1);
                _exit(0);
        }
        close(p[0]);
        int s = -1;
        assert_int_equal(gs_region_register(r, pid, &s), -1);
        assert_int_equal(errno, ENOSPC);
        atomic_store(&f->slots[700].pid, 0);
        assert_int_equal(gs_region_register(r, pid, &s), 0);
        assert_int_equal(s, 700);
        close(p[1]);
        wait_exit0(pid);
        assert_int_equal(gs_region_reap(r), 1);
        for (int i = 0; i < GS_REGION_MAX_PROCS; i++)
                if (i != 700)
                        assert_int_equal(gs_region_unregister(r, i), 0);
        struct gs_region_stats st;
        gs_region_stats(r, &st);
        assert_int_equal(st.live, 0);
        assert_int_equal(gs_region_reap(r), 0);
        gs_region_stats(r, &st);
        assert_int_equal(st.hwm, 0);
        /* Every slot held by a dead process: registering reaps them, then takes a slot. */
        for (int i = 0; i < GS_REGION_MAX_PROCS; i++) {
                atomic_store(&f->slots[i].start_time, 1);
                atomic_store(&f->slots[i].pid, 0x3ffffff0);
        }
        atomic_store(&f->hdr.slot_hwm, GS_REGION_MAX_PROCS);
        assert_int_equal(gs_region_register(r, getpid(), &s), 0);
        assert_int_equal(s, 0);
        gs_region_stats(r, &st);
        assert_int_equal(st.live, 1);
        assert_int_equal(gs_region_unregister(r, s), 0);
        gs_region_close(r);
}

/* ------------------------------------------------------------------------------------------- */
/* kill -9 loop                                                                                */

#define KL_CHILDREN 8
#define KL_KILLS 200
#define KL_LIMIT (64 * MiB)

static volatile sig_atomic_t kl_stop;
static void kl_on_usr1(int sig)
{
        (void)sig;
        kl_stop = 1;
}

struct kl_result {
        int32_t pid;
        int32_t pad;
        uint64_t total0; /* used + extra on dev 0 */
        uint64_t total1; /* used on dev 1 (unlimited) */
};

static uint64_t xorshift(uint64_t *s)
{
        uint64_t x = *s;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        return *s = x;
}

static void kl_child(struct gs_region *inherited, int own_open, int ctl_rd, int res_wr)
{
        child_guard();
        struct gs_region *r = inherited;
        char err[256];
        if (own_open && gs_region_open(path, 1, NULL, NULL, &r, err, sizeof(err)) < 0)
                _exit(10);
        gs_region_set_lock_timeout(r, 5000);
        int s;
        if (gs_region_register(r, getpid(), &s) < 0)
                _exit(11);
        uint64_t rng = ((uint64_t)getpid() << 32) ^ now_ns();
        if (rng == 0)
                rng = 1;
        uint64_t used0 = 0, extra0 = 0, used1 = 0;
        while (!kl_stop) {
                uint64_t x = xorshift(&rng);
                uint64_t sz = (x >> 8) % (4 * MiB) + 1;
                switch (x % 8) {
                case 0:
                case 1:
                case 2: {
                        int rc = gs_region_try_charge(r, s, 0, sz, NULL);
                        if (rc < 0)
                                _exit(12);
                        if (rc == 0)
                                used0 += sz;
                        break;
                }
                case 3:
                case 4: {
                        uint64_t un = used0 ? (x >> 16) % used0 + 1 : 0;
                        if (gs_region_uncharge(r, s, 0, un) < 0)
                                _exit(13);
                        used0 -= un;
                        break;
                }
                case 5:
                        if (gs_region_try_charge(r, s, 1, sz, NULL) != 0)
                                _exit(14);
                        used1 += sz;
                        break;
                case 6: {
                        uint64_t un = used1 ? (x >> 16) % used1 + 1 : 0;
                        gs_region_uncharge(r, s, 1, un);
                        used1 -= un;
                        break;
                }
                case 7:
                        extra0 = (x >> 24) % MiB;
                        gs_region_set_extra(r, s, 0, extra0);
                        break;
                }
        }
        struct kl_result res = { getpid(), 0, used0 + extra0, used1 };
        write_full(res_wr, &res, sizeof(res));
        char c;
        for (;;) {
                ssize_t n = read(ctl_rd, &c, 1);
                if (n == 0 || (n < 0 && errno != EINTR))
                        break;
        }
        if (gs_region_unregister(r, s) < 0)
                _exit(15);
        _exit(0);
}

static void test_kill9_loop(void **state)
{
        (void)state;
        struct gs_region *r = open2(KL_LIMIT, 0);
        int ctl[2], res[2];
        assert_int_equal(pipe(ctl), 0);
        assert_int_equal(pipe(res), 0);
        struct sigaction sa = { .sa_handler = kl_on_usr1 }, old;
        sigemptyset(&sa.sa_mask);
        assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0); /* inherited: no child dies of SIGUSR1 */
        kl_stop = 0;

        pid_t pids[KL_CHILDREN];
        int spawned = 0;
        uint64_t t0 = now_ns();
        for (int i = 0; i < KL_CHILDREN + KL_KILLS; i++) {
                int idx = i < KL_CHILDREN ? i : -1;
                uint64_t rng = now_ns() * 2654435761u + (uint64_t)i;
                if (idx < 0) {
                        /* Let them run a random while, then kill a random one at a random point. */
                        struct timespec d = { 0, (long)(xorshift(&rng) % 2000) * 1000 };
                        nanosleep(&d, NULL);
                        idx = (int)(xorshift(&rng) % KL_CHILDREN);
                        assert_int_equal(kill(pids[idx], SIGKILL), 0);
                        int st = 0;
                        assert_int_equal(waitpid(pids[idx], &st, 0), pids[idx]);
                        if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL))
                                fail_msg("child %d ended by itself: status 0x%x", (int)pids[idx], st);
                        /* The invariant: under the lock, charges never exceed the limit. */
                        if ((xorshift(&rng) & 7) == 0) {
                                assert_true(gs_region_lock(r) >= 0);
                                uint64_t sum = 0;
                                for (int k = 0; k < GS_REGION_MAX_PROCS; k++)
                                        sum += atomic_load(&W(r)->slots[k].used[0]);
                                assert_int_equal(gs_region_unlock(r), 0);
                                assert_true(sum <= KL_LIMIT);
                        }
                }
                pid_t pid = fork();
                assert_true(pid >= 0);
                if (pid == 0) {
                        close(ctl[1]);
                        close(res[0]);
                        kl_child(r, spawned % 2, ctl[0], res[1]);
                }
                pids[idx] = pid;
                spawned++;
        }
        uint64_t t_kill = now_ns();
        usleep(50000);
        for (int i = 0; i < KL_CHILDREN; i++)
                kill(pids[i], SIGUSR1);
        close(res[1]);
        uint64_t want0 = 0, want1 = 0;
        for (int i = 0; i < KL_CHILDREN; i++) {
                struct kl_result kr;
                read_full(res[0], &kr, sizeof(kr)); /* times out (fails) if a survivor hangs */
                want0 += kr.total0;
                want1 += kr.total1;
        }
        int reaped = gs_region_reap(r);
        assert_true(reaped >= 0);
        struct gs_region_stats st;
        gs_region_stats(r, &st);
        assert_int_equal(st.live, KL_CHILDREN);
        assert_int_equal(usage(r, 0), want0);
        assert_int_equal(usage(r, 1), want1);
        print_message("kill -9 loop: %d processes, %d SIGKILLs in %.2f s; survivors hold %llu + %llu B; "
                      "reaped %llu slots, %llu lock recoveries (EOWNERDEAD), %llu refusals\n",
                      spawned, KL_KILLS, (double)(t_kill - t0) / 1e9, (unsigned long long)want0,
                      (unsigned long long)want1, (unsigned long long)st.reaped,
                      (unsigned long long)st.recoveries, (unsigned long long)st.refused);

        close(ctl[1]); /* survivors unregister and exit */
        for (int i = 0; i < KL_CHILDREN; i++)
                wait_exit0(pids[i]);
        close(ctl[0]);
        close(res[0]);
        sigaction(SIGUSR1, &old, NULL);
        assert_int_equal(gs_region_reap(r), 0);
        assert_int_equal(usage(r, 0), 0);
        assert_int_equal(usage(r, 1), 0);
        gs_region_stats(r, &st);
        assert_int_equal(st.live, 0);
        gs_region_close(r);
}

/* ------------------------------------------------------------------------------------------- */

static void test_timings(void **state)
{
        (void)state;
        struct gs_region *r = open2(1ull << 40, 0);
        int s;
        uint64_t t0 = now_ns();
        assert_int_equal(gs_region_register(r, getpid(), &s), 0);
        uint64_t t_reg = now_ns() - t0;
        enum { N = 200000 };
        for (int live = 1; live <= 8; live *= 8) {
                for (int i = 1; i < live; i++) { /* more live slots (our pid) to scan */
                        atomic_store(&W(r)->slots[s + i].start_time, gs_region_proc_start_time(getpid()));
                        atomic_store(&W(r)->slots[s + i].pid, getpid());
                        atomic_store(&W(r)->hdr.slot_hwm, (unsigned)(s + i + 1));
                }
                t0 = now_ns();
                for (int i = 0; i < N; i++) {
                        if (gs_region_try_charge(r, s, 0, 4096, NULL) != 0)
                                fail();
                        gs_region_uncharge(r, s, 0, 4096);
                }
                uint64_t t_pair = now_ns() - t0;
                t0 = now_ns();
                for (int i = 0; i < N; i++)
                        if (gs_region_try_charge(r, s, 1, 4096, NULL) != 0)
                                fail();
                uint64_t t_unl = now_ns() - t0;
                uint64_t u, acc = 0;
                t0 = now_ns();
                for (int i = 0; i < N; i++) {
                        gs_region_usage(r, 0, &u);
                        acc += u;
                }
                uint64_t t_use = now_ns() - t0;
                t0 = now_ns();
                int reps = 200;
                for (int i = 0; i < reps; i++)
                        gs_region_reap(r);
                uint64_t t_reap = now_ns() - t0;
                print_message("%d live slot(s): try_charge+uncharge (limited) %.0f ns, try_charge (unlimited) "
                              "%.0f ns, usage %.0f ns, reap %.1f us\n",
                              live, (double)t_pair / N, (double)t_unl / N, (double)t_use / N,
                              (double)t_reap / reps / 1e3);
                (void)acc;
        }
        /* With 8 live processes: no per-process /proc read (flat in the number of processes). */
        assert_int_equal(gs_region_unregister(r, s), 0);
        t0 = now_ns();
        assert_int_equal(gs_region_register(r, getpid(), &s), 0);
        uint64_t t_reg8 = now_ns() - t0;
        print_message("register: %.1f us first (own /proc start time, page faults), %.1f us with 8 live\n",
                      (double)t_reg / 1e3, (double)t_reg8 / 1e3);
        for (int i = 0; i < 8; i++)
                gs_region_unregister(r, s + i);
        gs_region_close(r);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_layout, setup, teardown),
                cmocka_unit_test_setup_teardown(test_create_attach, setup, teardown),
                cmocka_unit_test_setup_teardown(test_mismatch, setup, teardown),
                cmocka_unit_test_setup_teardown(test_init_lock_holder_killed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_two_process_race, setup, teardown),
                cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
                cmocka_unit_test_setup_teardown(test_uncharge_extra, setup, teardown),
                cmocka_unit_test_setup_teardown(test_compute, setup, teardown),
                cmocka_unit_test_setup_teardown(test_counters, setup, teardown),
                cmocka_unit_test_setup_teardown(test_counters_concurrent, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pid_reuse, setup, teardown),
                cmocka_unit_test_setup_teardown(test_reap_after_exit, setup, teardown),
                cmocka_unit_test_setup_teardown(test_zombie_leader_alive, setup, teardown),
                cmocka_unit_test_setup_teardown(test_owner_dead_while_locked, setup, teardown),
                cmocka_unit_test_setup_teardown(test_lock_timeout, setup, teardown),
                cmocka_unit_test_setup_teardown(test_full, setup, teardown),
                cmocka_unit_test_setup_teardown(test_kill9_loop, setup, teardown),
                cmocka_unit_test_setup_teardown(test_timings, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
