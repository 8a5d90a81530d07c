/* driver/xidlog: the NVIDIA driver's XID lines as /dev/kmsg reads them, and the non-blocking reader. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "driver/xidlog.h"

static void test_parse_with_pid(void **state)
{
        (void)state;
        struct gs_xid_record r;
        assert_true(gs_xid_parse_kmsg("4,1733,2914881234,-;NVRM: Xid (PCI:0000:3b:00): 31, pid=12345, name=python3, "
                                      "Ch 00000010, intr 10000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted",
                                      &r));
        assert_int_equal(r.xid, 31);
        assert_int_equal(r.domain, 0);
        assert_int_equal(r.bus, 0x3b);
        assert_int_equal(r.device, 0);
        assert_int_equal(r.pid, 12345);
        assert_string_equal(r.name, "python3");
        assert_string_equal(r.text, "Ch 00000010, intr 10000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted");
        assert_true(r.ts_us == 2914881234ull);
        /* the H200's own record (driver 580.159.04, /dev/kmsg, 2026-11-29: an illegal write by
         * tests/gpu/mps_fault.cu; tests/gpu/results/2026-11-29b-xid) */
        assert_true(gs_xid_parse_kmsg("4,360,29050224,c;NVRM: Xid (PCI:0000:00:06): 31, pid=472, name=mf, channel "
                                      "0x0000000a, intr 00000000. MMU Fault: ENGINE GRAPHICS GPC1 GPCCLIENT_T1_4 "
                                      "faulted @ 0x0_00000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_WRITE",
                                      &r));
        assert_int_equal(r.xid, 31);
        assert_int_equal(r.bus, 0);
        assert_int_equal(r.device, 6);
        assert_int_equal(r.pid, 472);
        assert_string_equal(r.name, "mf");
        assert_true(r.ts_us == 29050224ull);
        /* more fields after the flags (newer kernels' caller id) */
        assert_true(gs_xid_parse_kmsg("3,9,77,-,caller=T1234;NVRM: Xid (PCI:0001:cb:1f): 13, pid=7, name=a b, x", &r));
        assert_int_equal(r.domain, 1);
        assert_int_equal(r.bus, 0xcb);
        assert_int_equal(r.device, 0x1f);
        assert_int_equal(r.pid, 7);
        assert_string_equal(r.name, "a b");
}

static void test_parse_no_pid(void **state)
{
        (void)state;
        struct gs_xid_record r;
        assert_true(gs_xid_parse_kmsg("4,1,2,-;NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics "
                                      "SM Warp Exception on (GPC 7, TPC 0, SM 1)", &r));
        assert_int_equal(r.xid, 13);
        assert_int_equal(r.pid, 0);
        assert_string_equal(r.name, "");
        assert_string_equal(r.text, "Graphics SM Warp Exception on (GPC 7, TPC 0, SM 1)");
        /* an older driver: no pid at all */
        assert_true(gs_xid_parse_kmsg("4,1,2,-;NVRM: Xid (PCI:0000:23:00): 79, GPU has fallen off the bus.", &r));
        assert_int_equal(r.xid, 79);
        assert_int_equal(r.pid, 0);
        assert_string_equal(r.text, "GPU has fallen off the bus.");
}

/* Only the kernel's records: a process that writes /dev/kmsg gets the facility user (or the one
 * it names, never 0); dictionary lines, other lines, damaged ones are not XIDs. */
static void test_parse_refuses(void **state)
{
        (void)state;
        struct gs_xid_record r;
        assert_false(gs_xid_parse_kmsg("12,5,6,-;NVRM: Xid (PCI:0000:3b:00): 31, pid=1, name=x, y", &r)); /* user.warning */
        assert_false(gs_xid_parse_kmsg("14,5,6,-;NVRM: Xid (PCI:0000:3b:00): 31, pid=1, name=x, y", &r));
        assert_false(gs_xid_parse_kmsg("8,5,6,-;NVRM: Xid (PCI:0000:3b:00): 31, pid=1, name=x, y", &r));
        assert_false(gs_xid_parse_kmsg(" SUBSYSTEM=pci", &r));
        assert_false(gs_xid_parse_kmsg("6,5,6,-;nvidia-peermem nv_get_p2p_free_callback:127 ERROR", &r));
        assert_false(gs_xid_parse_kmsg("NVRM: Xid (PCI:0000:3b:00): 31, pid=1, name=x, y", &r)); /* no prefix */
        assert_false(gs_xid_parse_kmsg("4,5,6,-;NVRM: Xid (PCI:0000:3b:00): x31, pid=1", &r));
        assert_false(gs_xid_parse_kmsg("4,5,6,-;NVRM: Xid (PCI:0000:3b:00) 31", &r));
        assert_false(gs_xid_parse_kmsg("4,5,6,-;NVRM: Xid (PCI:0000:3b:00): -31, x", &r));
        assert_false(gs_xid_parse_kmsg("-4,5,6,-;NVRM: Xid (PCI:0000:3b:00): 31, x", &r));
        assert_false(gs_xid_parse_kmsg("4,5,6,-NVRM: Xid (PCI:0000:3b:00): 31, x", &r)); /* no ';' */
        assert_false(gs_xid_parse_kmsg("", &r));
        /* a pid past int: not a pid */
        assert_true(gs_xid_parse_kmsg("4,5,6,-;NVRM: Xid (PCI:0000:3b:00): 31, pid=99999999999, name=x, y", &r));
        assert_int_equal(r.pid, 0);
}

/* The process's name is its own choice: printable ASCII only, at most a comm's length. */
static void test_parse_name_sanitized(void **state)
{
        (void)state;
        struct gs_xid_record r;
        assert_true(gs_xid_parse_kmsg("4,5,6,-;NVRM: Xid (PCI:0000:3b:00): 31, pid=9, name=\x1b[31mevil\x7f, Ch 1", &r));
        assert_string_equal(r.name, "?[31mevil?");
        assert_true(gs_xid_parse_kmsg("4,5,6,-;NVRM: Xid (PCI:0000:3b:00): 31, pid=9, name=abcdefghijklmnopqrstuvwxyz, Ch", &r));
        assert_int_equal(strlen(r.name), GS_XIDLOG_NAME - 1);
}

static void test_application(void **state)
{
        (void)state;
        static const unsigned long long app[] = {13, 31, 43, 45, 68, 109};
        for (size_t i = 0; i < sizeof(app) / sizeof(app[0]); i++) {
                assert_true(gs_xid_application(app[i]));
                assert_true(gs_xid_meaning(app[i])[0] != '\0');
        }
        assert_false(gs_xid_application(79));
        assert_false(gs_xid_application(48));
        assert_string_equal(gs_xid_meaning(31), "GPU memory page fault");
}

struct seen {
        unsigned n;
        struct gs_xid_record last;
};

static void count(void *ud, const struct gs_xid_record *r)
{
        struct seen *s = ud;
        s->n++;
        s->last = *r;
}

/* A regular file (a test's log): read from its end on, a record written in two pieces seen once
 * whole, a line longer than the buffer dropped, the bound on lines per call kept. */
static void test_reader_file(void **state)
{
        (void)state;
        char path[] = "/tmp/gs-xidlog-XXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        FILE *f = fdopen(fd, "a");
        fprintf(f, "4,1,1,-;NVRM: Xid (PCI:0000:3b:00): 31, pid=1, name=old, before the open\n");
        fflush(f);
        struct gs_xidlog l;
        struct gs_error err = {0};
        struct seen s = {0};
        assert_int_equal(gs_xidlog_open(&l, path, &err), 0);
        assert_int_equal(gs_xidlog_fd(&l), -1); /* a file: read on a timer */
        assert_int_equal(gs_xidlog_read(&l, 64, count, &s, &err), 0);
        fprintf(f, "4,2,2,-;NVRM: Xid (PCI:0000:3b:00): 43, pid=2, na");
        fflush(f);
        assert_int_equal(gs_xidlog_read(&l, 64, count, &s, &err), 0);
        assert_int_equal(s.n, 0);
        fprintf(f, "me=new, Ch 1\n SUBSYSTEM=pci\n");
        fflush(f);
        assert_int_equal(gs_xidlog_read(&l, 64, count, &s, &err), 2);
        assert_int_equal(s.n, 1);
        assert_int_equal(s.last.xid, 43);
        assert_string_equal(s.last.name, "new");
        for (int i = 0; i < 2000; i++) /* 20 KiB without a newline, then an XID's tail */
                fputs("4,3,3,-;NVRM:", f);
        fprintf(f, " Xid (PCI:0000:3b:00): 31, pid=3, name=long, x\n");
        for (int i = 0; i < 10; i++)
                fprintf(f, "4,%d,4,-;NVRM: Xid (PCI:0000:3b:00): 13, pid=%d, name=n, x\n", 10 + i, 10 + i);
        fflush(f);
        s.n = 0;
        int got = gs_xidlog_read(&l, 4, count, &s, &err);
        assert_true(got == 4);
        while ((got = gs_xidlog_read(&l, 4, count, &s, &err)) > 0)
                ;
        assert_int_equal(got, 0);
        assert_int_equal(s.n, 10); /* the long line dropped whole, the ten after it all seen */
        assert_int_equal(s.last.pid, 19);
        gs_xidlog_close(&l);
        fclose(f);
        unlink(path);
        assert_int_equal(gs_xidlog_open(&l, "/nonexistent/kmsg", &err), -1);
        assert_int_equal(gs_xidlog_open(&l, "/tmp", &err), -1); /* a directory is no log */
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_with_pid),     cmocka_unit_test(test_parse_no_pid),
                cmocka_unit_test(test_parse_refuses),      cmocka_unit_test(test_parse_name_sanitized),
                cmocka_unit_test(test_application),        cmocka_unit_test(test_reader_file),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
