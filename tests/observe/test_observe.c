/*
 * Unit tests: the observer (src/observe): the defensive region reader and its corpus, the GPU-time
 * accounting, the collector over a regions directory (owners alive and gone, labels, extra
 * regions and patterns, skipped regions reported once), the exposition format, the metric set,
 * --listen parsing, and the slice's labels file. Non-root; temp files. No timing is asserted:
 * the accounting is driven with explicit times.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "observe/busy.h"
#include "observe/waits.h"
#include "observe/collect.h"
#include "observe/metrics.h"
#include "observe/prom.h"
#include "observe/region_read.h"
#include "observe/server.h"
#include "observe/top.h"
#include "region/region.h"
#include "slice/slice.h"
#include "synth.h"

#define MiB GS_SYNTH_MiB
#define MS 1000000ull

static char dir[128];
static struct gs_region_file file;
static struct gs_region_image img;

static void write_region(const char *path, const void *data, size_t len, size_t size)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, data, len), (ssize_t)len);
        if (size > len)
                assert_int_equal(ftruncate(fd, (off_t)size), 0);
        close(fd);
}

static void rm_rf(const char *path)
{
        char cmd[512];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
        assert_int_equal(system(cmd), 0);
}

static int setup(void **state)
{
        (void)state;
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof(dir), "%s/gsobserve.XXXXXX", tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
        return mkdtemp(dir) == NULL ? -1 : 0;
}

static int teardown(void **state)
{
        (void)state;
        rm_rf(dir);
        return 0;
}

/* ------------------------------------------------------------------------------------------- */
/* the reader                                                                                  */

static void test_read_valid(void **state)
{
        (void)state;
        char path[256];
        snprintf(path, sizeof(path), "%s/valid", dir);
        gs_synth_region(&file, 3, 5, 42);
        write_region(path, &file, sizeof(file), 0);
        struct gs_error err = {0};
        assert_int_equal(gs_region_read_at(AT_FDCWD, path, &img, &err), 0);
        assert_int_equal(img.hdr.ndevices, 3);
        assert_int_equal(img.nslots, 5);
        struct gs_region_sums s;
        gs_region_image_sum(&img, &s);
        assert_int_equal(s.live, 5);
        /* slots hold 1..5 MiB: 15 MiB allocated, 5 x 64 MiB overhead, 1+..+5 ms busy */
        for (unsigned d = 0; d < 3; d++) {
                assert_int_equal(s.allocated[d], 15 * MiB);
                assert_int_equal(s.overhead[d], 5 * 64 * MiB);
                assert_int_equal(s.busy_ns[d], 15 * MS);
                assert_int_equal(s.procs[d], 5);
        }
        assert_int_equal(s.allocated[3], 0);
        /* a freed slot is not counted */
        atomic_store(&file.slots[2].pid, 0);
        write_region(path, &file, sizeof(file), 0);
        assert_int_equal(gs_region_read_at(AT_FDCWD, path, &img, &err), 0);
        gs_region_image_sum(&img, &s);
        assert_int_equal(s.live, 4);
        assert_int_equal(s.allocated[0], 12 * MiB);
}

struct corpus_case {
        const char *kind;
        int rc;
        int code;
        const char *words;
};

static void test_read_corpus(void **state)
{
        (void)state;
        static const struct corpus_case cases[] = {
                {"truncated", -1, GS_EFORMAT, "size 232480 bytes"},
                {"huge", -1, GS_EFORMAT, "size 67108864 bytes"},
                {"magic", -1, GS_EFORMAT, "bad magic"},
                {"version", -1, GS_EFORMAT, "version 1 (this gpuslice reads versions 2 and 3)"},
                {"layout", -1, GS_EFORMAT, "layout mismatch"},
                {"hwm", -1, GS_EFORMAT, "slot_hwm 4096"},
                {"ndev0", -1, GS_EFORMAT, "device count 0"},
                {"ndev99", -1, GS_EFORMAT, "device count 99"},
                {"uuid", -1, GS_EFORMAT, "UUID without its terminator"},
                {"share", -1, GS_EFORMAT, "20000 basis points"},
                {"zero", 1, GS_EFORMAT, "not initialized yet"},
                {"priority", -1, GS_EFORMAT, "unknown priority 3"},
                {"via", -1, GS_EFORMAT, "device 1: unknown compute mechanism 7"},
                {"v2big", -1, GS_EFORMAT, "layout mismatch (version 2: header 2048, slot 448, 1024 slots, 464960 bytes in a file of 464960; expected 2048, 448, 1024, 460800)"},
                {"v3small", -1, GS_EFORMAT, "layout mismatch (version 3: header 2048, slot 448, 1024 slots, 464960 bytes in a file of 460800"},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char path[256];
                size_t len, size;
                snprintf(path, sizeof(path), "%s/corpus-%s", dir, cases[i].kind);
                assert_int_equal(gs_synth_corrupt(cases[i].kind, &file, &len, &size), 0);
                write_region(path, &file, len, size);
                struct gs_error err = {0};
                int rc = gs_region_read_at(AT_FDCWD, path, &img, &err);
                printf("# %-10s -> %d: %s\n", cases[i].kind, rc, err.msg);
                assert_int_equal(rc, cases[i].rc);
                assert_int_equal(err.code, cases[i].code);
                assert_non_null(strstr(err.msg, cases[i].words));
                /* the same verdict from memory */
                struct gs_error merr = {0};
                if (size == 0)
                        assert_int_equal(gs_region_image_parse(&file, len, &img, &merr), cases[i].rc);
        }
}

static void test_read_not_files(void **state)
{
        (void)state;
        char fifo[256], link[256], sub[256], empty[256], target[256], gone[256];
        snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
        snprintf(link, sizeof(link), "%s/link", dir);
        snprintf(sub, sizeof(sub), "%s/subdir", dir);
        snprintf(empty, sizeof(empty), "%s/empty", dir);
        snprintf(target, sizeof(target), "%s/target", dir);
        snprintf(gone, sizeof(gone), "%s/gone", dir);
        gs_synth_region(&file, 1, 1, 1);
        write_region(target, &file, sizeof(file), 0);
        assert_int_equal(mkfifo(fifo, 0644), 0);
        assert_int_equal(symlink(target, link), 0);
        assert_int_equal(mkdir(sub, 0755), 0);
        write_region(empty, "", 0, 0);
        struct gs_error err = {0};
        /* a FIFO with no writer would block a plain open: this must return at once */
        assert_int_equal(gs_region_read_at(AT_FDCWD, fifo, &img, &err), -1);
        assert_non_null(strstr(err.msg, "a FIFO"));
        assert_int_equal(gs_region_read_at(AT_FDCWD, link, &img, &err), -1);
        assert_non_null(strstr(err.msg, "a symbolic link"));
        assert_int_equal(gs_region_read_at(AT_FDCWD, sub, &img, &err), -1);
        assert_non_null(strstr(err.msg, "a directory"));
        assert_int_equal(gs_region_read_at(AT_FDCWD, "/dev/null", &img, &err), -1);
        assert_non_null(strstr(err.msg, "a device node"));
        assert_int_equal(gs_region_read_at(AT_FDCWD, empty, &img, &err), 1);
        assert_non_null(strstr(err.msg, "not initialized yet"));
        assert_int_equal(gs_region_read_at(AT_FDCWD, gone, &img, &err), -1);
        assert_int_equal(err.code, GS_ENOTFOUND);
        assert_int_equal(gs_region_read_at(AT_FDCWD, target, &img, &err), 0);
}

/* ------------------------------------------------------------------------------------------- */
/* GPU-time accounting                                                                         */

static void set_busy(unsigned slot, uint64_t ns)
{
        atomic_store(&file.slots[slot].busy_ns[0], ns);
        atomic_store(&file.slots[slot].busy_ns[1], ns / 2);
}

static void reread(void)
{
        struct gs_error err = {0};
        assert_int_equal(gs_region_image_parse(&file, sizeof(file), &img, &err), 0);
}

static void test_busy_windows(void **state)
{
        (void)state;
        struct gs_busy b = {0};
        gs_synth_region(&file, 2, 2, 3);
        set_busy(0, 100 * MS);
        set_busy(1, 0);
        reread();
        uint64_t t = 1000 * MS;
        assert_int_equal(gs_busy_update(&b, &img, t, 1000 * MS), 0);
        assert_false(b.ratio_valid); /* first reading: no window yet, and nothing counted */
        assert_int_equal(b.total_ns[0], 0);
        /* 300 ms of GPU time in 600 ms: the window (1 s) is still open */
        set_busy(0, 250 * MS);
        set_busy(1, 150 * MS);
        reread();
        assert_int_equal(gs_busy_update(&b, &img, t + 600 * MS, 1000 * MS), 0);
        assert_false(b.ratio_valid);
        assert_int_equal(b.total_ns[0], 300 * MS);
        /* slot 1's process exits (its time leaves the region), a new one takes the slot with
         * 40 ms, slot 0 adds 160 ms: 500 ms in 1.25 s = 0.4 */
        atomic_store(&file.slots[1].pid, 555);
        set_busy(0, 410 * MS);
        set_busy(1, 40 * MS);
        reread();
        assert_int_equal(gs_busy_update(&b, &img, t + 1250 * MS, 1000 * MS), 0);
        assert_true(b.ratio_valid);
        assert_int_equal(b.total_ns[0], 500 * MS);
        assert_int_equal(b.total_ns[1], 250 * MS);
        assert_true(b.ratio[0] > 0.3999 && b.ratio[0] < 0.4001);
        assert_true(b.ratio[1] > 0.1999 && b.ratio[1] < 0.2001);
        assert_int_equal(b.ratio_window_ns, 1250 * MS);
        /* the same process with less time re-registered (exec): its new time counts from 0 */
        set_busy(0, 10 * MS);
        reread();
        assert_int_equal(gs_busy_update(&b, &img, t + 2250 * MS, 1000 * MS), 0);
        assert_int_equal(b.total_ns[0], 510 * MS);
        assert_true(b.ratio[0] > 0.0099 && b.ratio[0] < 0.0101);
        /* a region made anew (another creation time): the accounting starts over */
        file.hdr.created_ns += 1;
        reread();
        assert_int_equal(gs_busy_update(&b, &img, t + 3250 * MS, 1000 * MS), 0);
        assert_false(b.ratio_valid);
        assert_int_equal(b.total_ns[0], 0);
        gs_busy_release(&b);
}

/* ------------------------------------------------------------------------------------------- */
/* version 2 and 3 regions; launch waits                                                       */

static void test_read_versions(void **state)
{
        (void)state;
        char p2[256], p3[256];
        snprintf(p2, sizeof(p2), "%s/v2", dir);
        snprintf(p3, sizeof(p3), "%s/v3", dir);
        struct gs_error err = {0};
        /* version 2 (an older interposer's): shown, without counters */
        gs_synth_region_v2(&file, 2, 3, 4);
        write_region(p2, &file, GS_REGION_SIZE_V2, 0);
        memset(&img, 0xff, sizeof(img));
        assert_int_equal(gs_region_read_at(AT_FDCWD, p2, &img, &err), 0);
        assert_false(img.counters);
        assert_int_equal(img.hdr.version, 2);
        assert_int_equal(img.ctr.priority, 0);
        assert_int_equal(img.ctr.dev[0].launches, 0);
        struct gs_region_sums s;
        gs_region_image_sum(&img, &s);
        assert_int_equal(s.live, 3);
        assert_int_equal(s.allocated[1], 6 * MiB);
        assert_int_equal(gs_region_image_parse(&file, GS_REGION_SIZE_V2, &img, &err), 0);
        assert_false(img.counters);
        /* version 3: the counters area read as written */
        gs_synth_region(&file, 2, 3, 4);
        write_region(p3, &file, sizeof(file), 0);
        assert_int_equal(gs_region_read_at(AT_FDCWD, p3, &img, &err), 0);
        assert_true(img.counters);
        assert_int_equal(img.ctr.priority, 1);
        assert_int_equal(img.ctr.dev[1].launches, GS_SYNTH_LAUNCHES(1));
        assert_int_equal(img.ctr.dev[1].wait_bucket[5], 10);
        assert_int_equal(img.ctr.dev[1].wait_sum_ns, GS_SYNTH_WAIT_SUM_NS(1));
        assert_int_equal(img.ctr.dev[1].compute_via, 1);
        assert_int_equal(gs_region_image_parse(&file, sizeof(file), &img, &err), 0);
        assert_true(img.counters);
        assert_int_equal(img.ctr.dev[0].wait_bucket[13], 1);
        /* a version 3 region written whole by the interposer's own code: unset fields are read
         * as such; counts from gs_region_note_wait / gs_region_add_launches */
        unlink(p3);
        struct gs_region *r = NULL;
        char e[256];
        assert_int_equal(gs_region_open(p3, 1, NULL, NULL, &r, e, sizeof(e)), 0);
        gs_region_add_launches(r, 0, 7);
        gs_region_note_wait(r, 0, 60000);
        assert_int_equal(gs_region_read_at(AT_FDCWD, p3, &img, &err), 0);
        assert_int_equal(img.ctr.priority, GS_REGION_UNSET);
        assert_int_equal(img.ctr.dev[0].compute_via, GS_REGION_UNSET);
        assert_int_equal(img.ctr.dev[0].launches, 7);
        assert_int_equal(img.ctr.dev[0].wait_bucket[1], 1);
        gs_region_close(r);
}

static void test_wait_quantile(void **state)
{
        (void)state;
        uint64_t b[GS_REGION_WAIT_BUCKETS] = {0};
        /* nothing waited, or nothing at all: 0 */
        assert_int_equal(gs_waits_quantile_bucket(100, b, 99), -1);
        assert_int_equal(gs_waits_quantile_bucket(0, b, 99), -1);
        /* 1 of 100 waited: the 99th of 100 did not wait */
        b[5] = 1;
        assert_int_equal(gs_waits_quantile_bucket(100, b, 99), -1);
        assert_int_equal(gs_waits_quantile_bucket(100, b, 100), 5);
        /* 2 of 100: the 99th is the first of the waits (bucket 5); rank 99, exactly, no rounding up */
        b[7] = 1;
        assert_int_equal(gs_waits_quantile_bucket(100, b, 99), 5);
        assert_int_equal(gs_waits_quantile_bucket(100, b, 100), 7);
        /* 101 launches: rank ceil(99.99) = 100 */
        assert_int_equal(gs_waits_quantile_bucket(101, b, 99), 5);
        /* all waited, over 1 s */
        memset(b, 0, sizeof(b));
        b[13] = 3;
        assert_int_equal(gs_waits_quantile_bucket(3, b, 99), 13);
        /* fewer launches counted than waits (the launches' add comes later): all waited */
        b[13] = 0;
        b[2] = 10;
        assert_int_equal(gs_waits_quantile_bucket(4, b, 50), 2);
        /* huge counts: no overflow */
        b[2] = UINT64_MAX / 2;
        assert_int_equal(gs_waits_quantile_bucket(UINT64_MAX, b, 99), 2);
        assert_int_equal(gs_waits_quantile_bucket(UINT64_MAX, b, 40), -1);
}

static void set_waits(unsigned dev, uint64_t launches, uint64_t b0, uint64_t b4, uint64_t b13, uint64_t sum)
{
        struct gs_region_dev_counters *c = &file.ctr.dev[dev];
        memset(c->wait_bucket, 0, sizeof(c->wait_bucket));
        atomic_store(&c->launches, launches);
        atomic_store(&c->wait_bucket[0], b0);
        atomic_store(&c->wait_bucket[4], b4);
        atomic_store(&c->wait_bucket[13], b13);
        atomic_store(&c->wait_sum_ns, sum);
}

static void test_waits_windows(void **state)
{
        (void)state;
        struct gs_waits w = {0};
        gs_synth_region(&file, 2, 1, 3);
        /* 1000 launches, 10 waited 30 us, 20 waited 1 ms, 1 waited 2 s */
        set_waits(0, 1000, 10, 20, 1, 10 * 30000 + 20 * MS + 2000 * MS);
        set_waits(1, 0, 0, 0, 0, 0);
        reread();
        uint64_t t = 1000 * MS;
        gs_waits_update(&w, &img, t, 1000 * MS);
        assert_true(w.known);
        assert_false(w.window_valid);
        /* the histogram as shown: cumulative, +Inf = the count */
        const struct gs_wait_hist *h = &w.hist[0];
        assert_int_equal(h->cum[0], 1000 - 21); /* did not wait, or at most 50 us */
        assert_int_equal(h->cum[3], 979);
        assert_int_equal(h->cum[4], 999);       /* <= 1 ms */
        assert_int_equal(h->cum[12], 999);      /* <= 1 s */
        assert_int_equal(h->cum[13], 1000);
        assert_int_equal(h->count, 1000);
        assert_int_equal(h->sum_ns, 10 * 30000 + 20 * MS + 2000 * MS);
        assert_int_equal(w.hist[1].count, 0);
        /* 300 ms later: 100 waits of 1 ms noted, their launches not counted yet (a reading between
         * the two adds): the first bucket does not go back, the count covers the waits */
        set_waits(0, 1000, 10, 120, 1, 10 * 30000 + 120 * MS + 2000 * MS);
        reread();
        gs_waits_update(&w, &img, t + 300 * MS, 1000 * MS);
        assert_false(w.window_valid);
        assert_int_equal(h->cum[0], 979);
        assert_int_equal(h->cum[4], 1099);
        assert_int_equal(h->count, 1100);
        /* 1.2 s in: the launches counted, 900 more that did not wait; the window closes */
        set_waits(0, 2000, 10, 120, 1, 10 * 30000 + 120 * MS + 2000 * MS);
        set_waits(1, 50, 0, 0, 0, 0);
        reread();
        gs_waits_update(&w, &img, t + 1200 * MS, 1000 * MS);
        assert_true(w.window_valid);
        assert_int_equal(w.window_ns, 1200 * MS);
        assert_int_equal(h->cum[0], 2000 - 121);
        assert_int_equal(h->count, 2000);
        const struct gs_wait_window *win = &w.win[0];
        assert_int_equal(win->launches, 1000);
        assert_int_equal(win->waited, 100);
        assert_int_equal(win->sum_ns, 100 * MS);
        assert_int_equal(win->p99, 4); /* 10 % waited 1 ms: the 99th percentile is <= 1 ms */
        assert_int_equal(w.win[1].launches, 50);
        assert_int_equal(w.win[1].p99, -1);
        /* the next window: 1000 launches, 5 waited 1 ms: p99 0 */
        set_waits(0, 3000, 10, 125, 1, 10 * 30000 + 125 * MS + 2000 * MS);
        reread();
        gs_waits_update(&w, &img, t + 2300 * MS, 1000 * MS);
        assert_int_equal(win->launches, 1000);
        assert_int_equal(win->waited, 5);
        assert_int_equal(win->p99, -1);
        /* a region made anew: counts start over, no window */
        file.hdr.created_ns += 1;
        set_waits(0, 5, 0, 0, 0, 0);
        reread();
        gs_waits_update(&w, &img, t + 3300 * MS, 1000 * MS);
        assert_false(w.window_valid);
        assert_int_equal(h->count, 5);
        assert_int_equal(h->cum[0], 5);
        /* version 2: nothing known */
        gs_synth_region_v2(&file, 1, 1, 3);
        assert_int_equal(gs_region_image_parse(&file, GS_REGION_SIZE_V2, &img, &(struct gs_error){0}), 0);
        gs_waits_update(&w, &img, t + 4300 * MS, 1000 * MS);
        assert_false(w.known);
        assert_false(w.window_valid);
}

/* ------------------------------------------------------------------------------------------- */
/* the collector                                                                               */

static char logged[64][512];
static int nlogged;

static void capture(void *arg, const char *line)
{
        (void)arg;
        if (nlogged < 64)
                snprintf(logged[nlogged++], sizeof(logged[0]), "%s", line);
}

static int count_logged(const char *words)
{
        int n = 0;
        for (int i = 0; i < nlogged; i++)
                n += strstr(logged[i], words) != NULL;
        return n;
}

static unsigned long long my_start_time(pid_t pid)
{
        return (unsigned long long)gs_region_proc_start_time(pid);
}

/* <regions>/<id>/ with owner (pid, its start time) and a synthetic region. */
static void make_slice(const char *regions, const char *id, pid_t owner, unsigned ndev, unsigned nprocs)
{
        char p[512], owner_line[64];
        snprintf(p, sizeof(p), "%s/%s", regions, id);
        assert_int_equal(mkdir(p, 0755), 0);
        snprintf(p, sizeof(p), "%s/%s/owner", regions, id);
        int n = snprintf(owner_line, sizeof(owner_line), "%d %llu\n", (int)owner, my_start_time(owner));
        write_region(p, owner_line, (size_t)n, 0);
        snprintf(p, sizeof(p), "%s/%s/usage", regions, id);
        gs_synth_region(&file, ndev, nprocs, (unsigned)owner);
        write_region(p, &file, sizeof(file), 0);
}

static const struct gs_obs_slice *find_slice(const struct gs_observation *o, const char *id)
{
        for (size_t i = 0; i < o->nslices; i++)
                if (strcmp(o->slices[i].id, id) == 0)
                        return &o->slices[i];
        return NULL;
}

static pid_t dead_pid(void)
{
        pid_t p = fork();
        if (p == 0)
                _exit(0);
        /* a zombie until reaped: its pid and start time still answer, only its pidfd says gone */
        siginfo_t si;
        assert_int_equal(waitid(P_PID, (id_t)p, &si, WEXITED | WNOWAIT), 0);
        return p;
}

static void test_collector(void **state)
{
        (void)state;
        char regions[256], extra[256], pattern[256], bad[256], path[512];
        snprintf(regions, sizeof(regions), "%s/slices", dir);
        snprintf(extra, sizeof(extra), "%s/exec-one", dir);
        snprintf(pattern, sizeof(pattern), "%s/exec-*", dir);
        snprintf(bad, sizeof(bad), "%s/bad-version", dir);
        assert_int_equal(mkdir(regions, 0755), 0);
        make_slice(regions, "alive", getpid(), 2, 3);
        pid_t zombie = dead_pid();
        make_slice(regions, "dead", zombie, 1, 1);
        /* labels: the pod's names */
        char *ann[] = {"io.kubernetes.pod.namespace=team-a", "io.kubernetes.pod.name=trainer-0",
                       "io.kubernetes.container.name=main", "other=x"};
        struct gs_error err = {0};
        assert_int_equal(gs_slice_write_labels(regions, "alive", ann, 4, NULL, &err), 0);
        gs_synth_region(&file, 1, 2, 9);
        write_region(extra, &file, sizeof(file), 0);
        size_t len, size;
        gs_synth_corrupt("version", &file, &len, &size);
        write_region(bad, &file, len, size);
        const char *regs[] = {pattern, bad};
        nlogged = 0;
        struct gs_collector_opts o = {.regions_dir = regions, .regions = regs, .nregions = 2, .log = capture};
        struct gs_collector *c = gs_collector_new(&o, &err);
        assert_non_null(c);
        struct gs_observation obs;
        assert_int_equal(gs_collector_scan_at(c, 1000 * MS, &obs, &err), 0);
        waitpid(zombie, NULL, 0);
        for (int i = 0; i < nlogged; i++)
                printf("# log: %s\n", logged[i]);
        assert_int_equal(obs.nslices, 2);
        const struct gs_obs_slice *a = find_slice(&obs, "alive"), *e = find_slice(&obs, extra);
        assert_non_null(a);
        assert_non_null(e);
        assert_null(find_slice(&obs, "dead"));
        assert_int_equal(obs.gone, 1);
        assert_int_equal(obs.skipped, 1);
        assert_string_equal(a->labels.ns, "team-a");
        assert_string_equal(a->labels.pod, "trainer-0");
        assert_string_equal(a->labels.container, "main");
        assert_int_equal(a->owner_pid, getpid());
        assert_int_equal(a->ndevices, 2);
        assert_int_equal(a->nprocs, 3);
        assert_int_equal(a->dev[1].memory_allocated, 6 * MiB);
        assert_int_equal(a->dev[1].memory_used, 6 * MiB + 3 * 64 * MiB);
        assert_int_equal(a->dev[1].memory_limit, 2048 * MiB);
        assert_true(a->dev[0].compute_limit > 0.2499 && a->dev[0].compute_limit < 0.2501);
        assert_true(a->dev[0].compute_measured);
        assert_false(a->dev[0].compute_used_valid);
        assert_false(e->in_regions_dir);
        assert_int_equal(e->nprocs, 2);
        assert_int_equal(count_logged("version 1"), 1);
        assert_int_equal(count_logged("its container is gone"), 1);
        gs_observation_release(&obs);

        /* a second scan, 1.5 s later, 30 ms more GPU time on device 0 of "alive": the window
         * closes; nothing is reported twice */
        snprintf(path, sizeof(path), "%s/alive/usage", regions);
        gs_synth_region(&file, 2, 3, (unsigned)getpid());
        atomic_store(&file.slots[0].busy_ns[0], 1 * MS + 30 * MS);
        write_region(path, &file, sizeof(file), 0);
        assert_int_equal(gs_collector_scan_at(c, 2500 * MS, &obs, &err), 0);
        a = find_slice(&obs, "alive");
        assert_non_null(a);
        /* created_ns changed with the rewrite: the accounting restarted, no window yet */
        assert_false(a->dev[0].compute_used_valid);
        gs_observation_release(&obs);
        atomic_store(&file.slots[0].busy_ns[0], 1 * MS + 330 * MS);
        write_region(path, &file, sizeof(file), 0);
        assert_int_equal(gs_collector_scan_at(c, 4000 * MS, &obs, &err), 0);
        a = find_slice(&obs, "alive");
        assert_true(a->dev[0].compute_used_valid);
        assert_true(a->dev[0].compute_used > 0.1999 && a->dev[0].compute_used < 0.2001);
        assert_int_equal(a->dev[0].busy_ns_total, 300 * MS);
        assert_int_equal(count_logged("version 1"), 1);
        assert_int_equal(count_logged("its container is gone"), 1);
        gs_observation_release(&obs);

        /* the bad region heals: said once; the extra region goes: it leaves the output */
        gs_synth_region(&file, 1, 1, 5);
        write_region(bad, &file, sizeof(file), 0);
        assert_int_equal(unlink(extra), 0);
        assert_int_equal(gs_collector_scan_at(c, 5000 * MS, &obs, &err), 0);
        assert_non_null(find_slice(&obs, bad));
        assert_null(find_slice(&obs, extra));
        assert_int_equal(count_logged("valid again"), 1);
        gs_observation_release(&obs);

        /* the sweep removes the dead container's directory, never the live one's */
        assert_int_equal(gs_collector_sweep(c), 1);
        snprintf(path, sizeof(path), "%s/dead", regions);
        assert_int_equal(access(path, F_OK), -1);
        snprintf(path, sizeof(path), "%s/alive/usage", regions);
        assert_int_equal(access(path, F_OK), 0);
        gs_collector_free(c);
}

/* A version 2 and a version 3 region side by side through the collector; the version 3 one's
 * counts grow through the interposer's functions between two scans. */
static void test_collector_waits(void **state)
{
        (void)state;
        char p2[256], p3[256], pattern[256];
        snprintf(p2, sizeof(p2), "%s/exec-v2", dir);
        snprintf(p3, sizeof(p3), "%s/exec-v3", dir);
        snprintf(pattern, sizeof(pattern), "%s/exec-*", dir);
        gs_synth_region_v2(&file, 1, 1, 5);
        write_region(p2, &file, GS_REGION_SIZE_V2, 0);
        gs_synth_region(&file, 2, 1, 4); /* priority normal; device 1 through MPS */
        write_region(p3, &file, sizeof(file), 0);
        const char *regs[] = {pattern};
        nlogged = 0;
        struct gs_error err = {0};
        struct gs_collector_opts o = {.regions_dir = "", .regions = regs, .nregions = 1, .log = capture};
        struct gs_collector *c = gs_collector_new(&o, &err);
        assert_non_null(c);
        struct gs_observation obs;
        assert_int_equal(gs_collector_scan_at(c, 1000 * MS, &obs, &err), 0);
        assert_int_equal(nlogged, 0);
        assert_int_equal(obs.nslices, 2);
        const struct gs_obs_slice *a = find_slice(&obs, p2), *b = find_slice(&obs, p3);
        assert_non_null(a);
        assert_non_null(b);
        /* version 2: shown, its memory as ever, no waits, no priority, no mechanism */
        assert_int_equal(a->dev[0].memory_allocated, 1 * MiB);
        assert_false(a->dev[0].waits_known);
        assert_int_equal(a->priority, GS_REGION_UNSET);
        assert_int_equal(a->dev[0].compute_via, GS_REGION_UNSET);
        /* version 3: the synthetic counts (synth.h) */
        assert_int_equal(b->priority, GS_REGION_PRIO_NORMAL);
        assert_int_equal(b->dev[0].compute_via, GS_REGION_VIA_TIME);
        assert_int_equal(b->dev[1].compute_via, GS_REGION_VIA_MPS);
        assert_true(b->dev[1].waits_known);
        assert_false(b->dev[1].waits_window_valid);
        assert_int_equal(b->dev[1].waits.count, GS_SYNTH_LAUNCHES(1));
        assert_int_equal(b->dev[1].waits.cum[0], GS_SYNTH_LAUNCHES(1) - 11);
        assert_int_equal(b->dev[1].waits.cum[5], GS_SYNTH_LAUNCHES(1) - 1);
        assert_int_equal(b->dev[1].waits.sum_ns, GS_SYNTH_WAIT_SUM_NS(1));
        gs_observation_release(&obs);
        /* 400 launches on device 1, 8 of them waiting 20 ms, through the region API */
        struct gs_region *r = NULL;
        char e[256];
        assert_int_equal(gs_region_open(p3, 2, NULL, NULL, &r, e, sizeof(e)), 0);
        gs_region_add_launches(r, 1, 400);
        for (int i = 0; i < 8; i++)
                gs_region_note_wait(r, 1, 20 * MS);
        gs_region_set_priority(r, GS_REGION_PRIO_HIGH);
        gs_region_set_compute_via(r, 1, GS_REGION_VIA_TIME_FALLBACK);
        gs_region_close(r);
        assert_int_equal(gs_collector_scan_at(c, 2500 * MS, &obs, &err), 0);
        b = find_slice(&obs, p3);
        assert_int_equal(b->priority, GS_REGION_PRIO_HIGH);
        assert_int_equal(b->dev[1].compute_via, GS_REGION_VIA_TIME_FALLBACK);
        assert_true(b->dev[1].waits_window_valid);
        assert_int_equal(b->waits_window_ns, 1500 * MS);
        const struct gs_wait_window *w = &b->dev[1].waits_window;
        assert_int_equal(w->launches, 400);
        assert_int_equal(w->waited, 8);
        assert_int_equal(w->sum_ns, 160 * MS);
        assert_int_equal(w->p99, gs_region_wait_bucket(20 * MS)); /* 2 % waited: p99 is one of them */
        assert_int_equal(b->dev[1].waits.count, GS_SYNTH_LAUNCHES(1) + 400);
        assert_int_equal(b->dev[1].waits.cum[7], GS_SYNTH_LAUNCHES(1) + 400 - 9);    /* <= 10 ms: not the 8 */
        assert_int_equal(b->dev[1].waits.cum[8], GS_SYNTH_LAUNCHES(1) + 400 - 1);    /* <= 25 ms */
        assert_int_equal(b->dev[0].waits_window.launches, 0);
        a = find_slice(&obs, p2);
        assert_false(a->dev[0].waits_known);
        gs_observation_release(&obs);
        gs_collector_free(c);
}

static void test_host_pids(void **state)
{
        (void)state;
        struct gs_obs_proc procs[2] = {
                {.slot = 0, .pid = getpid(), .start_time = gs_region_proc_start_time(getpid())},
                {.slot = 1, .pid = getpid(), .start_time = 12345}, /* the pid, but another process */
        };
        struct gs_obs_slice s = {.nprocs = 2, .procs = procs, .owner_pid = getpid(), .in_regions_dir = true};
        pid_t out[2];
        assert_int_equal(gs_obs_host_pids(&s, out), 1);
        assert_int_equal(out[0], getpid());
        assert_int_equal(out[1], 0);

        /* The region's host_pid is written by the container: a hint naming another process (with
         * that process's real start time) is not taken. */
        usleep(30000); /* another process, started clock ticks after this one */
        pid_t other = fork();
        assert_true(other >= 0);
        if (other == 0) {
                pause();
                _exit(0);
        }
        while (gs_region_proc_start_time(other) == 0)
                usleep(1000);
        assert_int_not_equal(gs_region_proc_start_time(other), gs_region_proc_start_time(getpid()));
        struct gs_obs_proc liar = {.slot = 0, .pid = getpid(), .host_pid = other,
                                   .start_time = gs_region_proc_start_time(other)};
        struct gs_obs_slice ls = {.nprocs = 1, .procs = &liar};
        unsigned got = gs_obs_host_pids(&ls, out);
        kill(other, SIGKILL);
        waitpid(other, NULL, 0);
        assert_int_equal(got, 0);
        assert_int_equal(out[0], 0);
        /* ... and one naming the slot's own process is */
        liar.host_pid = getpid();
        liar.start_time = gs_region_proc_start_time(getpid());
        assert_int_equal(gs_obs_host_pids(&ls, out), 1);
        assert_int_equal(out[0], getpid());
}

/* ------------------------------------------------------------------------------------------- */
/* top's view                                                                                  */

static void test_top_pieces(void **state)
{
        (void)state;
        char b[8], out[128];
        assert_string_equal(gs_top_fmt_bytes(0, b), "0");
        assert_string_equal(gs_top_fmt_bytes(512, b), "512B");
        assert_string_equal(gs_top_fmt_bytes(1536, b), "1.5K");
        assert_string_equal(gs_top_fmt_bytes(100 * MiB, b), "100M");
        assert_string_equal(gs_top_fmt_bytes(1023 * MiB, b), "1023M");
        assert_string_equal(gs_top_fmt_bytes(1024 * MiB - 1, b), "1.0G");
        assert_string_equal(gs_top_fmt_bytes(40 * 1024 * MiB, b), "40G");
        assert_string_equal(gs_top_fmt_bytes(UINT64_MAX, b), "16E");
        /* terminal escapes and control characters never reach the terminal; UTF-8: one '?' each */
        gs_top_printable("a\x1b[2Jb\tc\x7f caf\xc3\xa9 \xe2\x82\xac \xff", out, sizeof(out));
        assert_string_equal(out, "a?[2Jb?c? caf? ? ?");
        /* shortening: container ids to docker's 12, paths from the left, the rest in the middle */
        const char *id = "4f3c2b1a0e9d8c7b6a5f4e3d2c1b0a99887766554433221100ffeeddccbbaa99";
        gs_top_fit(id, 30, out, sizeof(out));
        assert_string_equal(out, "4f3c2b1a0e9d");
        gs_top_fit(id, 8, out, sizeof(out));
        assert_string_equal(out, "4f3c2b1a");
        gs_top_fit(id, 64, out, sizeof(out));
        assert_string_equal(out, id);
        gs_top_fit("/dev/shm/gpuslice-exec-c30", 12, out, sizeof(out));
        assert_string_equal(out, "..e-exec-c30");
        gs_top_fit("team-a/trainer-0/main", 12, out, sizeof(out));
        assert_string_equal(out, "team-../main");
        assert_int_equal(strlen(out), 12);
        gs_top_fit("short", 12, out, sizeof(out));
        assert_string_equal(out, "short");
        enum gs_top_sort by;
        assert_int_equal(gs_top_sort_parse("compute", &by), 0);
        assert_int_equal(by, GS_TOP_SORT_COMPUTE);
        assert_int_equal(gs_top_sort_parse("n", &by), 0);
        assert_int_equal(by, GS_TOP_SORT_NAME);
        assert_int_equal(gs_top_sort_parse("cpu", &by), -1);
}

/* Three slices: a container (hex id, 2 devices: 3 GiB of 4 used, 30 % of its 50 % share; an idle
 * second device), a pod's container with labels (unlimited memory, 1 GiB; compute not measured)
 * and an exec region (512 MiB of 1 GiB; measured, no window closed yet). */
struct top_fixture {
        struct gs_observation obs;
        struct gs_obs_slice s[3];
        struct gs_obs_proc procs[3];
        char regions[3][64];
};

static void top_fixture(struct top_fixture *f)
{
        memset(f, 0, sizeof(*f));
        struct gs_obs_slice *a = &f->s[1], *b = &f->s[2], *c = &f->s[0]; /* by id, as the collector gives them */
        snprintf(a->id, sizeof(a->id), "%s", "4f3c2b1a0e9d8c7b6a5f4e3d2c1b0a99887766554433221100ffeeddccbbaa99");
        snprintf(b->id, sizeof(b->id), "%s", "b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0");
        snprintf(c->id, sizeof(c->id), "%s", "/dev/shm/gpuslice-exec-one");
        for (int i = 0; i < 3; i++) {
                snprintf(f->regions[i], sizeof(f->regions[i]), "/r/%d", i);
                f->s[i].region = f->regions[i];
                f->s[i].ndevices = 1;
                f->s[i].nprocs = 1;
                f->s[i].procs = &f->procs[i];
                f->procs[i] = (struct gs_obs_proc){.slot = 0, .pid = i == 0 ? getpid() : 1,
                                                   .start_time = i == 0 ? gs_region_proc_start_time(getpid()) : 77};
                snprintf(f->s[i].dev[0].uuid, sizeof(f->s[i].dev[0].uuid), "GPU-%d", i);
        }
        a->in_regions_dir = b->in_regions_dir = true;
        a->owner_pid = b->owner_pid = 1;
        a->ndevices = 2;
        a->dev[0] = (struct gs_obs_device){.index = 0, .uuid = "GPU-0", .memory_used = 3072 * MiB,
                                           .memory_allocated = 3000 * MiB, .memory_overhead = 72 * MiB,
                                           .memory_limit = 4096 * MiB, .compute_limit = 0.5, .compute_measured = true,
                                           .compute_used_valid = true, .compute_used = 0.3,
                                           .busy_ns_total = 1500000000ull, .processes = 1};
        a->dev[1] = (struct gs_obs_device){.index = 1, .uuid = "GPU-1", .memory_limit = 4096 * MiB,
                                           .compute_via = GS_REGION_UNSET};
        /* launch waits: a high-priority slice through MPS whose last window (2 s) had 1000 launches,
         * 30 of them waiting 1.5 ms: p99 in the bucket up to 2.5 ms */
        a->priority = GS_REGION_PRIO_HIGH;
        a->waits_window_ns = 2000 * MS;
        a->dev[0].compute_via = GS_REGION_VIA_MPS;
        a->dev[0].waits_known = a->dev[0].waits_window_valid = true;
        a->dev[0].waits = (struct gs_wait_hist){.count = 5000, .sum_ns = 90 * MS};
        a->dev[0].waits_window = (struct gs_wait_window){.launches = 1000, .waited = 30, .sum_ns = 45 * MS, .p99 = 5};
        b->priority = GS_REGION_UNSET;
        snprintf(b->labels.ns, sizeof(b->labels.ns), "team-a");
        snprintf(b->labels.pod, sizeof(b->labels.pod), "trainer-0");
        snprintf(b->labels.container, sizeof(b->labels.container), "main\x1b]0;x");
        b->compute_mode = 2;
        b->dev[0].memory_used = b->dev[0].memory_allocated = 1024 * MiB;
        b->dev[0].processes = 1;
        c->dev[0] = (struct gs_obs_device){.index = 0, .uuid = "GPU-0", .memory_used = 512 * MiB,
                                           .memory_allocated = 512 * MiB, .memory_limit = 1024 * MiB,
                                           .compute_limit = 0.25, .compute_measured = true, .processes = 1,
                                           .waits_known = true, .compute_via = GS_REGION_VIA_TIME_FALLBACK};
        c->priority = GS_REGION_PRIO_LOW;
        f->obs.nslices = 3;
        f->obs.slices = f->s;
        f->obs.time_ns = 1795690840123000000ull;
        f->obs.skipped = 1;
}

static void row_order(const struct gs_top_view *v, char *out, size_t len)
{
        out[0] = '\0';
        for (size_t i = 0; i < v->nrows; i++)
                snprintf(out + strlen(out), len - strlen(out), "%s%c%u", i ? " " : "",
                         v->rows[i].name[0] == '/' ? 'x' : v->rows[i].name[0], v->rows[i].dev->index);
}

/* The view's rows: the orders of each sort key, then a row laid out at 80, 40 and any columns. */
static void check_top_rows(struct top_fixture *f, struct gs_top_view *v)
{
        char order[64];
        gs_top_sort(v, GS_TOP_SORT_MEMORY);
        row_order(v, order, sizeof(order));
        assert_string_equal(order, "40 t0 x0 41");
        gs_top_sort(v, GS_TOP_SORT_COMPUTE); /* measured first, then a window not closed, then none */
        row_order(v, order, sizeof(order));
        assert_string_equal(order, "40 x0 t0 41");
        gs_top_sort(v, GS_TOP_SORT_NAME);
        row_order(v, order, sizeof(order));
        assert_string_equal(order, "x0 40 41 t0");

        /* 80 columns: every line fits, the numbers are whole */
        struct gs_top_layout l;
        char line[512];
        gs_top_sort(v, GS_TOP_SORT_MEMORY);
        gs_top_layout(v, 80, false, &l);
        gs_top_format_header(&l, GS_TOP_SORT_MEMORY, line, sizeof(line));
        assert_true(strlen(line) <= 80);
        assert_non_null(strstr(line, "MEMORY*"));
        assert_null(strstr(line, "COMPUTE*"));
        assert_non_null(strstr(line, " COMPUTE PRIO  WAIT PROCS"));
        gs_top_format_row(v, &l, &v->rows[0], line, sizeof(line));
        assert_true(strlen(line) <= 80);
        assert_true(strncmp(line, "4f3c2b1a0e9d ", 13) == 0);
        assert_non_null(strstr(line, "  3.0G / 4.0G "));
        assert_non_null(strstr(line, "75%]"));
        assert_non_null(strstr(line, "30% / 50%  high 2.5ms     1"));
        assert_int_equal(gs_top_bar_fill(&l, &v->rows[0]), (unsigned)((l.bar_w - 2) * 0.75 + 0.5));
        gs_top_format_row(v, &l, &v->rows[1], line, sizeof(line));
        assert_true(strlen(line) <= 80);
        assert_non_null(strstr(line, "1.0G / -  "));
        assert_non_null(strstr(line, "[no quota"));
        assert_non_null(strstr(line, "   - / -    -        -     1"));
        assert_null(strchr(line, '\x1b'));
        gs_top_format_row(v, &l, &v->rows[2], line, sizeof(line));
        assert_non_null(strstr(line, "  .. / 25%  low     ..     1"));
        gs_top_format_title(v, GS_TOP_SORT_MEMORY, "12:00:00", 80, line, sizeof(line));
        assert_string_equal(line, "gpuslice top  12:00:00  3 slices  sort: memory  1 skipped");
        /* 40 columns: cut, never wrapped */
        gs_top_layout(v, 40, false, &l);
        gs_top_format_row(v, &l, &v->rows[0], line, sizeof(line));
        assert_int_equal(strlen(line), 40);
        /* not a terminal: as wide as the content (the whole id) */
        gs_top_layout(v, 0, false, &l);
        gs_top_format_row(v, &l, &v->rows[0], line, sizeof(line));
        assert_true(strncmp(line, f->s[1].id, strlen(f->s[1].id)) == 0);
}

/* Host pids: this process for the exec region, a slot /proc cannot resolve, the PIDS column. */
static void check_top_pids(struct top_fixture *f, struct gs_top_view *v)
{
        struct gs_error err = {0};
        struct gs_top_layout l;
        char line[512];
        /* host pids: this process for the exec region; PIDS column */
        assert_int_equal(gs_top_view_host_pids(v, NULL, &err), 0);
        assert_int_equal(v->host_pids[0][0], getpid());
        /* the next refresh takes the last one's answer while the host pid has the slot's start
         * time: a slot /proc cannot resolve (pid 999999 here) shows that nothing was walked */
        {
                struct top_fixture g;
                top_fixture(&g);
                g.procs[0].pid = 999999;
                f->procs[0].pid = 999999;
                struct gs_top_view w;
                assert_int_equal(gs_top_view_build(&w, &g.obs, NULL, &err), 0);
                assert_int_equal(gs_top_view_host_pids(&w, v, &err), 0);
                assert_int_equal(w.host_pids[0][0], getpid());
                assert_int_equal(w.host_pids[1][0], 0);
                /* ... not when the process is another one (another start time) */
                gs_top_view_release(&w);
                g.procs[0].start_time++;
                f->procs[0].start_time++;
                assert_int_equal(gs_top_view_build(&w, &g.obs, NULL, &err), 0);
                assert_int_equal(gs_top_view_host_pids(&w, v, &err), 0);
                assert_int_equal(w.host_pids[0][0], 0);
                gs_top_view_release(&w);
                f->procs[0].pid = getpid();
                f->procs[0].start_time--;
        }
        gs_top_layout(v, 80, true, &l);
        gs_top_sort(v, GS_TOP_SORT_NAME);
        gs_top_format_row(v, &l, &v->rows[0], line, sizeof(line));
        char want[32];
        snprintf(want, sizeof(want), " %d", (int)getpid());
        assert_true(strlen(line) <= 80);
        assert_non_null(strstr(line, want));
}

/* The --json document: in the observation's order whatever the sort; nulls for the unknown. */
static void check_top_json(struct top_fixture *f, struct gs_top_view *v)
{
        /* JSON: in the observation's order (the collector's: by id) whatever the sort; nulls for
         * what is unknown or unlimited */
        json_object *doc = gs_top_json(v);
        assert_non_null(doc);
        json_object *sl = json_object_object_get(doc, "slices"), *x;
        assert_int_equal(json_object_array_length(sl), 3);
        json_object *s0 = json_object_array_get_idx(sl, 1);
        assert_string_equal(json_object_get_string(json_object_object_get(s0, "id")), f->s[1].id);
        assert_string_equal(json_object_get_string(json_object_object_get(s0, "kind")), "container");
        assert_int_equal(json_object_array_length(json_object_object_get(s0, "devices")), 2);
        json_object *d0 = json_object_array_get_idx(json_object_object_get(s0, "devices"), 0);
        assert_int_equal(json_object_get_uint64(json_object_object_get(d0, "memory_limit")), 4096 * MiB);
        assert_int_equal(json_object_get_uint64(json_object_object_get(d0, "memory_used")), 3072 * MiB);
        assert_string_equal(json_object_to_json_string(json_object_object_get(d0, "compute_used")), "0.3");
        assert_string_equal(json_object_to_json_string(json_object_object_get(d0, "compute_limit")), "0.5");
        assert_string_equal(json_object_to_json_string(json_object_object_get(d0, "compute_busy_seconds")), "1.500000");
        assert_true(json_object_object_get_ex(d0, "gpu", &x) && x == NULL);
        assert_string_equal(json_object_get_string(json_object_object_get(s0, "priority")), "high");
        assert_string_equal(json_object_get_string(json_object_object_get(d0, "compute_mechanism")), "mps");
        json_object *lw = json_object_object_get(d0, "launch_wait"), *lww = json_object_object_get(lw, "window");
        assert_int_equal(json_object_get_uint64(json_object_object_get(lw, "launches")), 5000);
        assert_string_equal(json_object_to_json_string(json_object_object_get(lw, "wait_seconds")), "0.090000");
        assert_string_equal(json_object_to_json_string(json_object_object_get(lww, "seconds")), "2.000000");
        assert_int_equal(json_object_get_uint64(json_object_object_get(lww, "launches")), 1000);
        assert_int_equal(json_object_get_uint64(json_object_object_get(lww, "waited")), 30);
        assert_string_equal(json_object_to_json_string(json_object_object_get(lww, "mean_seconds")), "4.5e-05");
        assert_string_equal(json_object_to_json_string(json_object_object_get(lww, "p99_seconds")), "0.0025");
        assert_false(json_object_get_boolean(json_object_object_get(lww, "p99_over")));
        json_object *d1 = json_object_array_get_idx(json_object_object_get(s0, "devices"), 1);
        assert_true(json_object_object_get_ex(d1, "launch_wait", &x) && x == NULL);
        assert_true(json_object_object_get_ex(d1, "compute_mechanism", &x) && x == NULL);
        assert_true(json_object_object_get_ex(s0, "host_pids", &x) && json_object_is_type(x, json_type_array));
        /* the container's pid 1 with a start time that is not init's: not resolved, null */
        assert_true(json_object_is_type(json_object_array_get_idx(x, 0), json_type_null));
        assert_int_equal(json_object_get_int(json_object_array_get_idx(json_object_object_get(s0, "pids"), 0)), 1);
        json_object *s1 = json_object_array_get_idx(sl, 2);
        assert_string_equal(json_object_get_string(json_object_object_get(s1, "pod")), "trainer-0");
        assert_string_equal(json_object_get_string(json_object_object_get(s1, "container")), "main\x1b]0;x");
        assert_string_equal(json_object_get_string(json_object_object_get(s1, "compute_mode")), "off");
        assert_true(json_object_object_get_ex(s1, "priority", &x) && x == NULL);
        d0 = json_object_array_get_idx(json_object_object_get(s1, "devices"), 0);
        assert_true(json_object_object_get_ex(d0, "memory_limit", &x) && x == NULL);
        assert_true(json_object_object_get_ex(d0, "compute_used", &x) && x == NULL);
        json_object *s2 = json_object_array_get_idx(sl, 0);
        assert_string_equal(json_object_get_string(json_object_object_get(s2, "kind")), "region");
        assert_string_equal(json_object_get_string(json_object_object_get(s2, "priority")), "low");
        x = json_object_array_get_idx(json_object_object_get(s2, "devices"), 0);
        assert_string_equal(json_object_get_string(json_object_object_get(x, "compute_mechanism")), "time_fallback");
        x = json_object_object_get(x, "launch_wait");
        assert_non_null(x);
        assert_true(json_object_object_get_ex(x, "window", &x) && x == NULL); /* no window closed yet */
        x = json_object_array_get_idx(json_object_object_get(s2, "host_pids"), 0);
        assert_int_equal(json_object_get_int(x), getpid());
        assert_true(json_object_object_get_ex(doc, "nvml_up", &x) && x == NULL);
        assert_int_equal(json_object_get_int(json_object_object_get(doc, "skipped")), 1);
        assert_string_equal(json_object_to_json_string(json_object_object_get(doc, "time")), "1795690840.123");
        /* invalid UTF-8 in a label: '?' in JSON, the document stays valid */
        snprintf(f->s[2].labels.pod, sizeof(f->s[2].labels.pod), "caf\xc3\xa9-\xff");
        json_object *doc2 = gs_top_json(v);
        s1 = json_object_array_get_idx(json_object_object_get(doc2, "slices"), 2);
        assert_string_equal(json_object_get_string(json_object_object_get(s1, "pod")), "caf\xc3\xa9-?");
        json_object_put(doc2);
        json_object_put(doc);
}

static void test_top_view(void **state)
{
        (void)state;
        struct top_fixture f;
        top_fixture(&f);
        struct gs_top_view v;
        struct gs_error err = {0};
        assert_int_equal(gs_top_view_build(&v, &f.obs, NULL, &err), 0);
        assert_int_equal(v.nrows, 4);
        assert_string_equal(v.names[2], "team-a/trainer-0/main?]0;x");
        check_top_rows(&f, &v);
        check_top_pids(&f, &v);
        check_top_json(&f, &v);
        gs_top_view_release(&v);
}

/* ------------------------------------------------------------------------------------------- */
/* exposition                                                                                  */

static void test_prom_escaping(void **state)
{
        (void)state;
        char out[256];
        assert_string_equal(gs_prom_escape_value("a\"b\\c\nd", out, sizeof(out)), "a\\\"b\\\\c\\nd");
        assert_string_equal(gs_prom_escape_value("caf\xc3\xa9 \xe2\x82\xac", out, sizeof(out)), "caf\xc3\xa9 \xe2\x82\xac");
        /* invalid UTF-8: a stray continuation byte, an overlong '/', a surrogate, a cut sequence */
        assert_string_equal(gs_prom_escape_value("x\x80y\xc0\xafz\xed\xa0\x80w\xe2\x82", out, sizeof(out)), "x?y??z???w??");
}

static void test_prom_samples(void **state)
{
        (void)state;
        static const struct gs_prom_family f = {"t_bytes", GS_PROM_GAUGE, "help with \\ and\nnewline"};
        static const struct gs_prom_family g = {"t_total", GS_PROM_COUNTER, "c"};
        struct gs_prom p;
        gs_prom_init(&p);
        struct gs_prom_label l[] = {{"a", "1"}, {"empty", ""}, {"b", "x\"y"}};
        gs_prom_sample(&p, &f, l, 3, 104857600);
        gs_prom_sample(&p, &f, NULL, 0, 0.3);
        gs_prom_sample(&p, &f, NULL, 0, 1795690840.123);
        gs_prom_sample(&p, &f, NULL, 0, -0.5);
        gs_prom_sample(&p, &f, NULL, 0, 0.1 + 0.2);
        gs_prom_sample(&p, &f, NULL, 0, 0.2977042833869981);
        gs_prom_sample(&p, &g, NULL, 0, 1.0 / 0.0);
        gs_prom_sample(&p, &g, l, 1, 0.0 / 0.0);
        size_t len;
        char *t = gs_prom_take(&p, &len);
        assert_non_null(t);
        assert_string_equal(t, "# HELP t_bytes help with \\\\ and\\nnewline\n"
                               "# TYPE t_bytes gauge\n"
                               "t_bytes{a=\"1\",b=\"x\\\"y\"} 104857600\n"
                               "t_bytes 0.3\n"
                               "t_bytes 1795690840.123\n"
                               "t_bytes -0.5\n"
                               "t_bytes 0.30000000000000004\n"
                               "t_bytes 0.29770428338699811\n"
                               "# HELP t_total c\n"
                               "# TYPE t_total counter\n"
                               "t_total +Inf\n"
                               "t_total{a=\"1\"} NaN\n");
        assert_int_equal(len, strlen(t));
        free(t);
}

static void test_metrics_render(void **state)
{
        (void)state;
        struct gs_obs_slice s = {.id = "c0ffee", .region = "/run/gpuslice/slices/c0ffee/usage", .ndevices = 1,
                                 .in_regions_dir = true, .last_kernel_ns = 1700000000ull * 1000000000ull};
        snprintf(s.labels.ns, sizeof(s.labels.ns), "team-a");
        snprintf(s.labels.pod, sizeof(s.labels.pod), "p\"q");
        s.dev[0] = (struct gs_obs_device){.index = 0, .uuid = "GPU-2f8c1d4e-7a90-3b5c-e6d1-0a9b8c7d6e5f",
                                          .memory_used = 300 * MiB, .memory_allocated = 100 * MiB,
                                          .memory_overhead = 200 * MiB, .memory_limit = 1024 * MiB,
                                          .compute_limit = 0.3, .compute_measured = true,
                                          .compute_used_valid = true, .compute_used = 0.25,
                                          .busy_ns_total = 1500 * MS, .processes = 2,
                                          .compute_via = GS_REGION_VIA_TIME, .waits_known = true};
        /* 1000 launches: 994 waited at most 50 us (most not at all), 5 up to 2.5 ms, 1 over 1 s */
        for (unsigned i = 0; i < GS_REGION_WAIT_BUCKETS; i++)
                s.dev[0].waits.cum[i] = i < 5 ? 994 : i < 13 ? 999 : 1000;
        s.dev[0].waits.count = 1000;
        s.dev[0].waits.sum_ns = 2010300000ull;
        s.priority = GS_REGION_PRIO_NORMAL;
        struct gs_observation obs = {.time_ns = 1700000010ull * 1000000000ull, .nslices = 1, .slices = &s};
        static struct gs_gpu_stats gpus;
        gpus.valid = gpus.fresh = true;
        gpus.info.ngpus = 2;
        snprintf(gpus.info.gpus[1].uuid, GS_STR_LONG, "GPU-2f8c1d4e-7a90-3b5c-e6d1-0a9b8c7d6e5f");
        snprintf(gpus.info.gpus[1].model, GS_STR_LONG, "NVIDIA A100-SXM4-40GB");
        gpus.info.gpus[1].index = 1;
        gpus.info.gpus[1].memory_used = 2048 * MiB;
        gpus.info.gpus[1].utilization_valid = true;
        gpus.info.gpus[1].utilization_gpu = 35;
        struct gs_metrics_opts o = {.hami = true, .node = "node-1"};
        struct gs_prom p;
        gs_prom_init(&p);
        gs_metrics_render(&obs, &gpus, &o, &p);
        size_t len;
        char *t = gs_prom_take(&p, &len);
        assert_non_null(t);
        const char *want[] = {
                "gpuslice_slice_memory_used_bytes{container_id=\"c0ffee\",namespace=\"team-a\",pod=\"p\\\"q\",vdevice=\"0\","
                "gpu=\"1\",UUID=\"GPU-2f8c1d4e-7a90-3b5c-e6d1-0a9b8c7d6e5f\"} 314572800\n",
                "gpuslice_slice_memory_limit_bytes{container_id=\"c0ffee\"",
                "gpuslice_slice_compute_limit_ratio{container_id=\"c0ffee\",namespace=\"team-a\",pod=\"p\\\"q\",vdevice=\"0\","
                "gpu=\"1\",UUID=\"GPU-2f8c1d4e-7a90-3b5c-e6d1-0a9b8c7d6e5f\"} 0.3\n",
                "} 0.25\n",
                "gpuslice_slice_compute_busy_seconds_total{",
                "gpuslice_slice_last_kernel_timestamp_seconds{",
                "hami_vgpu_memory_used_bytes{namespace=\"team-a\",pod=\"p\\\"q\",vdevice_index=\"0\","
                "device_uuid=\"GPU-2f8c1d4e-7a90-3b5c-e6d1-0a9b8c7d6e5f\",container_id=\"c0ffee\"} 314572800\n",
                "hami_container_device_utilization_ratio{namespace=\"team-a\"",
                "} 25\n",
                "hami_container_last_kernel_elapsed_seconds{namespace=\"team-a\",pod=\"p\\\"q\",vdevice_index=\"0\","
                "device_uuid=\"GPU-2f8c1d4e-7a90-3b5c-e6d1-0a9b8c7d6e5f\",container_id=\"c0ffee\"} 10\n",
                "gpuslice_gpu_memory_used_bytes{gpu=\"1\",UUID=\"GPU-2f8c1d4e-7a90-3b5c-e6d1-0a9b8c7d6e5f\","
                "model_name=\"NVIDIA A100-SXM4-40GB\"} 2147483648\n",
                "gpuslice_gpu_utilization_ratio{gpu=\"1\"",
                "hami_host_gpu_utilization_ratio{node=\"node-1\",device_index=\"1\","
                "device_uuid=\"GPU-2f8c1d4e-7a90-3b5c-e6d1-0a9b8c7d6e5f\",device_type=\"NVIDIA-NVIDIA A100-SXM4-40GB\"} 35\n",
                "gpuslice_nvml_up 1\n",
                "gpuslice_slices 1\n",
        };
        for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
                if (strstr(t, want[i]) == NULL)
                        fail_msg("missing %s in:\n%s", want[i], t);
        }
        /* every family's header comes once */
        assert_null(strstr(strstr(t, "# TYPE gpuslice_slice_memory_used_bytes") + 1, "# TYPE gpuslice_slice_memory_used_bytes"));
        /* the slice's priority on its info metric; the mechanism; the launch-wait histogram, whole */
        assert_non_null(strstr(t, "gpuslice_slice_info{container_id=\"c0ffee\",namespace=\"team-a\",pod=\"p\\\"q\","
                                  "region=\"/run/gpuslice/slices/c0ffee/usage\",compute_mode=\"cap\",priority=\"normal\"} 1\n"));
        const char *dl = "container_id=\"c0ffee\",namespace=\"team-a\",pod=\"p\\\"q\",vdevice=\"0\",gpu=\"1\","
                         "UUID=\"GPU-2f8c1d4e-7a90-3b5c-e6d1-0a9b8c7d6e5f\"";
        char line[512];
        snprintf(line, sizeof(line), "# TYPE gpuslice_slice_compute_mechanism gauge\n"
                                     "gpuslice_slice_compute_mechanism{%s,mechanism=\"time\"} 1\n", dl);
        if (strstr(t, line) == NULL)
                fail_msg("missing %s in:\n%s", line, t);
        static const char *const les[] = {"5e-05", "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005",
                                          "0.01", "0.025", "0.05", "0.1", "0.25", "1", "+Inf"};
        char hist[8192];
        size_t k = (size_t)snprintf(hist, sizeof(hist), "# TYPE gpuslice_slice_launch_wait_seconds histogram\n");
        for (unsigned i = 0; i < GS_REGION_WAIT_BUCKETS; i++)
                k += (size_t)snprintf(hist + k, sizeof(hist) - k, "gpuslice_slice_launch_wait_seconds_bucket{%s,le=\"%s\"} %u\n",
                                      dl, les[i], i < 5 ? 994 : i < 13 ? 999 : 1000);
        snprintf(hist + k, sizeof(hist) - k,
                 "gpuslice_slice_launch_wait_seconds_sum{%s} 2.0103\ngpuslice_slice_launch_wait_seconds_count{%s} 1000\n"
                 "# HELP ", dl, dl);
        if (strstr(t, hist) == NULL)
                fail_msg("missing %s in:\n%s", hist, t);
        free(t);
        /* a slice of a version 2 region: no histogram, no mechanism, no priority (absent, not 0) */
        s.dev[0].waits_known = false;
        s.dev[0].compute_via = GS_REGION_UNSET;
        s.priority = GS_REGION_UNSET;
        gs_prom_init(&p);
        gs_metrics_render(&obs, &gpus, &o, &p);
        t = gs_prom_take(&p, &len);
        assert_null(strstr(t, "gpuslice_slice_launch_wait_seconds"));
        assert_null(strstr(t, "gpuslice_slice_compute_mechanism"));
        assert_null(strstr(t, "priority="));
        assert_non_null(strstr(t, "compute_mode=\"cap\"} 1\n"));
        free(t);
        /* without HAMi's names, and with NVML down: no hami_ family, no per-GPU sample */
        o.hami = false;
        gpus.fresh = false;
        gs_prom_init(&p);
        gs_metrics_render(&obs, &gpus, &o, &p);
        t = gs_prom_take(&p, &len);
        assert_null(strstr(t, "hami_"));
        assert_null(strstr(t, "gpuslice_gpu_memory_used_bytes{"));
        assert_non_null(strstr(t, "gpuslice_nvml_up 0\n"));
        free(t);
}

/* ------------------------------------------------------------------------------------------- */
/* --listen, labels                                                                            */

static void test_listen_parse(void **state)
{
        (void)state;
        struct gs_listen_addr a;
        struct gs_error err = {0};
        assert_int_equal(gs_listen_parse(":9394", &a, &err), 0);
        assert_true(a.any);
        assert_int_equal(gs_listen_parse("127.0.0.1:0", &a, &err), 0);
        assert_int_equal(a.ss.ss_family, AF_INET);
        assert_int_equal(gs_listen_parse("[::1]:9394", &a, &err), 0);
        assert_int_equal(a.ss.ss_family, AF_INET6);
        assert_int_equal(gs_listen_parse("*:80", &a, &err), 0);
        static const char *const bad[] = {"9394", "::1:9394", "127.0.0.1:", "127.0.0.1:65536", ":-1",
                                          "[::1]9394", "[::1", "127.0.0.1:80x", ":123456"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                memset(&err, 0, sizeof(err));
                assert_int_equal(gs_listen_parse(bad[i], &a, &err), -1);
                assert_non_null(strstr(err.msg, "invalid --listen"));
        }
}

static void test_labels_file(void **state)
{
        (void)state;
        char regions[256], p[512];
        snprintf(regions, sizeof(regions), "%s/labels", dir);
        assert_int_equal(mkdir(regions, 0755), 0);
        snprintf(p, sizeof(p), "%s/ctr", regions);
        assert_int_equal(mkdir(p, 0755), 0);
        int regfd = open(regions, O_RDONLY | O_DIRECTORY);
        assert_true(regfd >= 0);
        struct gs_slice_labels l;
        struct gs_error err = {0};
        /* none of the keys: no file */
        char *none[] = {"io.kubernetes.cri.container-type=container"};
        assert_int_equal(gs_slice_write_labels(regions, "ctr", none, 1, NULL, &err), 0);
        assert_int_equal(gs_slice_read_labels(regfd, "ctr", &l), 0);
        /* containerd's keys, with a quote and a newline in a value */
        char *cd[] = {"io.kubernetes.cri.sandbox-namespace=ns\"1", "io.kubernetes.cri.sandbox-name=pod\nx",
                      "io.kubernetes.cri.container-name=ctr"};
        assert_int_equal(gs_slice_write_labels(regions, "ctr", cd, 3, NULL, &err), 0);
        assert_int_equal(gs_slice_read_labels(regfd, "ctr", &l), 1);
        assert_string_equal(l.ns, "ns\"1");
        assert_string_equal(l.pod, "pod\nx");
        assert_string_equal(l.container, "ctr");
        /* CRI-O's keys win over containerd's; the file is replaced */
        char *both[] = {"io.kubernetes.cri.sandbox-name=cd", "io.kubernetes.pod.name=crio"};
        assert_int_equal(gs_slice_write_labels(regions, "ctr", both, 2, NULL, &err), 0);
        assert_int_equal(gs_slice_read_labels(regfd, "ctr", &l), 1);
        assert_string_equal(l.pod, "crio");
        assert_string_equal(l.ns, "");
        /* the names the host gave the hook (a DRA claim's CDI device: --k8s-claim ...): the claim,
         * and the namespace and pod where no annotation names them */
        struct gs_slice_labels given = {.ns = "ml", .pod = "host-pod", .claim = "slice-4g-30"};
        assert_int_equal(gs_slice_write_labels(regions, "ctr", both, 2, &given, &err), 0);
        assert_int_equal(gs_slice_read_labels(regfd, "ctr", &l), 1);
        assert_string_equal(l.pod, "crio"); /* the runtime's annotation wins */
        assert_string_equal(l.ns, "ml");
        assert_string_equal(l.claim, "slice-4g-30");
        assert_int_equal(gs_slice_write_labels(regions, "ctr", NULL, 0, &given, &err), 0);
        assert_int_equal(gs_slice_read_labels(regfd, "ctr", &l), 1);
        assert_string_equal(l.pod, "host-pod");
        /* issue 31: the container's env is no source: an annotation list holding env-like entries
         * (what a caller passing cfg->env would give) names nothing */
        char *env[] = {"GPUSLICE_K8S_NAMESPACE=ml", "GPUSLICE_K8S_POD=env-pod", "GPUSLICE_K8S_CLAIM=stolen"};
        struct gs_slice_labels claim_only = {.claim = "c1"};
        assert_int_equal(gs_slice_write_labels(regions, "ctr", env, 3, &claim_only, &err), 0);
        assert_int_equal(gs_slice_read_labels(regfd, "ctr", &l), 1);
        assert_string_equal(l.claim, "c1");
        assert_string_equal(l.pod, "");
        assert_string_equal(l.ns, "");
        /* what the hook takes as a host-given name */
        assert_true(gs_slice_label_valid("slice-4g-30") && gs_slice_label_valid("a.b-c"));
        assert_false(gs_slice_label_valid("") || gs_slice_label_valid("-a") || gs_slice_label_valid("a/b") ||
                     gs_slice_label_valid("A") || gs_slice_label_valid("a\nb") || gs_slice_label_valid("x."));
        /* not JSON */
        snprintf(p, sizeof(p), "%s/ctr/labels", regions);
        write_region(p, "{not json", 9, 0);
        assert_int_equal(gs_slice_read_labels(regfd, "ctr", &l), -1);
        assert_int_equal(gs_slice_write_labels(regions, "../x", both, 2, NULL, &err), -1);
        close(regfd);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_read_valid, setup, teardown),
                cmocka_unit_test_setup_teardown(test_read_corpus, setup, teardown),
                cmocka_unit_test_setup_teardown(test_read_not_files, setup, teardown),
                cmocka_unit_test(test_busy_windows),
                cmocka_unit_test_setup_teardown(test_read_versions, setup, teardown),
                cmocka_unit_test(test_wait_quantile),
                cmocka_unit_test(test_waits_windows),
                cmocka_unit_test_setup_teardown(test_collector, setup, teardown),
                cmocka_unit_test_setup_teardown(test_collector_waits, setup, teardown),
                cmocka_unit_test(test_host_pids),
                cmocka_unit_test(test_top_pieces),
                cmocka_unit_test(test_top_view),
                cmocka_unit_test(test_prom_escaping),
                cmocka_unit_test(test_prom_samples),
                cmocka_unit_test(test_metrics_render),
                cmocka_unit_test(test_listen_parse),
                cmocka_unit_test_setup_teardown(test_labels_file, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
