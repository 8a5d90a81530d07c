/*
 * Device cgroup tests (root only; exit 77 otherwise). They act on real cgroups: a test cgroup
 * under the cgroup2 mount (and under the v1 devices hierarchy where there is one), a child
 * process moved into it that opens device nodes made with mknod in a temp dir:
 *   null = c 1:3, zero = c 1:5, random = c 1:8, urandom = c 1:9.
 * The "runtime" device programs are written here (allow 1:3 and 1:5, deny everything else).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "skips.h"

#include <linux/bpf.h>

#include "container/cgroup.h"

enum { DEV_NULL, DEV_ZERO, DEV_RANDOM, DEV_URANDOM, NDEV };
#define BIT(i) (1u << (i))
static const char *dev_names[NDEV] = {"null", "zero", "random", "urandom"};
static const unsigned dev_minor[NDEV] = {3, 5, 8, 9};

static char v2_mount[4096]; /* "" when there is no cgroup2 mount */
static char v1_mount[4096]; /* "" when there is no v1 devices hierarchy */
static char devdir[] = "/tmp/gs-cgdev.XXXXXX";

/* ------------------------------------------------------------------------------------------ */
/* helpers                                                                                     */
/* ------------------------------------------------------------------------------------------ */

static void find_mounts(void)
{
        FILE *f = fopen("/proc/self/mountinfo", "re");
        if (f == NULL)
                return;
        char line[8192];
        while (fgets(line, sizeof(line), f) != NULL) {
                char root[4096], mnt[4096];
                if (sscanf(line, "%*s %*s %*s %4095s %4095s", root, mnt) != 2 || strcmp(root, "/") != 0)
                        continue;
                char *sep = strstr(line, " - ");
                if (sep == NULL)
                        continue;
                char fstype[64], source[256], opts[1024];
                if (sscanf(sep + 3, "%63s %255s %1023s", fstype, source, opts) != 3)
                        continue;
                if (strcmp(fstype, "cgroup2") == 0 && v2_mount[0] == '\0')
                        snprintf(v2_mount, sizeof(v2_mount), "%s", mnt);
                if (strcmp(fstype, "cgroup") == 0 && v1_mount[0] == '\0' &&
                    (strstr(opts, ",devices") != NULL || strncmp(opts, "devices", 7) == 0))
                        snprintf(v1_mount, sizeof(v1_mount), "%s", mnt);
        }
        fclose(f);
}

static int write_file(const char *path, const char *s)
{
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        ssize_t w = write(fd, s, strlen(s));
        int e = errno;
        close(fd);
        errno = e;
        return w == (ssize_t)strlen(s) ? 0 : -1;
}

static char *read_all(const char *path)
{
        FILE *f = fopen(path, "re");
        if (f == NULL)
                return NULL;
        char *buf = calloc(1, 65536);
        size_t n = fread(buf, 1, 65535, f);
        buf[n] = '\0';
        fclose(f);
        return buf;
}

/* A child that sits waiting for commands: 'p' = try to open every node, answer with a bitmask. */
struct child {
        pid_t pid;
        int cmd, res;
};

static void child_loop(int cmd, int res)
{
        char c;
        while (read(cmd, &c, 1) == 1) {
                if (c != 'p')
                        break;
                unsigned mask = 0;
                for (int i = 0; i < NDEV; i++) {
                        char path[256];
                        snprintf(path, sizeof(path), "%s/%s", devdir, dev_names[i]);
                        int fd = open(path, O_RDONLY | O_CLOEXEC);
                        if (fd >= 0) {
                                mask |= BIT(i);
                                close(fd);
                        }
                }
                if (write(res, &mask, sizeof(mask)) != sizeof(mask))
                        break;
        }
        _exit(0);
}

static void child_start(struct child *c)
{
        int a[2], b[2];
        assert_int_equal(pipe2(a, O_CLOEXEC), 0);
        assert_int_equal(pipe2(b, O_CLOEXEC), 0);
        c->pid = fork();
        assert_true(c->pid >= 0);
        if (c->pid == 0) {
                close(a[1]);
                close(b[0]);
                child_loop(a[0], b[1]);
        }
        close(a[0]);
        close(b[1]);
        c->cmd = a[1];
        c->res = b[0];
}

static unsigned child_probe(struct child *c)
{
        unsigned mask = ~0u;
        assert_int_equal(write(c->cmd, "p", 1), 1);
        assert_int_equal(read(c->res, &mask, sizeof(mask)), (ssize_t)sizeof(mask));
        return mask;
}

static void child_stop(struct child *c)
{
        if (c->pid <= 0)
                return;
        close(c->cmd);
        close(c->res);
        int st;
        waitpid(c->pid, &st, 0);
        c->pid = 0;
}

static void move_to(const char *cgdir, pid_t pid)
{
        char path[4200], buf[32];
        snprintf(path, sizeof(path), "%s/cgroup.procs", cgdir);
        snprintf(buf, sizeof(buf), "%d", (int)pid);
        if (write_file(path, buf) < 0)
                fail_msg("move %d to %s: %s", (int)pid, path, strerror(errno));
}

/* --- bpf, as a runtime would do it ---------------------------------------------------------- */

static long sys_bpf(int cmd, union bpf_attr *attr)
{
        return syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

#define I(c, d, s, o, i) ((struct bpf_insn){.code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i)})

static int load_prog(const struct bpf_insn *insns, size_t n)
{
        static char log[65536];
        union bpf_attr attr;
        memset(&attr, 0, sizeof(attr));
        attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
        attr.insns = (uint64_t)(uintptr_t)insns;
        attr.insn_cnt = (uint32_t)n;
        attr.license = (uint64_t)(uintptr_t) "GPL";
        attr.log_buf = (uint64_t)(uintptr_t)log;
        attr.log_size = sizeof(log);
        attr.log_level = 1;
        int fd = (int)sys_bpf(BPF_PROG_LOAD, &attr);
        if (fd < 0)
                fail_msg("load test program: %s\n%s", strerror(errno), log);
        return fd;
}

/*
 * The "runtime" program: char 1:3 and 1:5 allowed (any access), everything else denied. It
 * uses callee-saved registers and the stack on purpose. extra_minor (0 = none): one more 1:x.
 */
static int load_runtime(unsigned extra_minor)
{
        struct bpf_insn p[] = {
                I(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_6, BPF_REG_1, 0, 0),        /* access_type */
                I(BPF_ALU | BPF_AND | BPF_K, BPF_REG_6, 0, 0, 0xffff),
                I(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_7, BPF_REG_1, 4, 0),        /* major */
                I(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_8, BPF_REG_1, 8, 0),        /* minor */
                I(BPF_STX | BPF_MEM | BPF_W, BPF_REG_10, BPF_REG_8, -4, 0),      /* round trip via stack */
                I(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_9, BPF_REG_10, -4, 0),
                I(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0),
                I(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_6, 0, 6, BPF_DEVCG_DEV_CHAR), /* -> exit */
                I(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_7, 0, 5, 1),                  /* -> exit */
                I(BPF_JMP | BPF_JEQ | BPF_K, BPF_REG_9, 0, 3, 3),                  /* -> allow */
                I(BPF_JMP | BPF_JEQ | BPF_K, BPF_REG_9, 0, 2, 5),                  /* -> allow */
                I(BPF_JMP | BPF_JEQ | BPF_K, BPF_REG_9, 0, 1, (int32_t)extra_minor), /* -> allow */
                I(BPF_JMP | BPF_JA, 0, 0, 1, 0),                                   /* -> exit */
                I(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 1),                /* allow */
                I(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
        };
        return load_prog(p, sizeof(p) / sizeof(p[0]));
}

static void attach(int cgfd, int prog, uint32_t flags)
{
        union bpf_attr attr;
        memset(&attr, 0, sizeof(attr));
        attr.target_fd = (uint32_t)cgfd;
        attr.attach_bpf_fd = (uint32_t)prog;
        attr.attach_type = BPF_CGROUP_DEVICE;
        attr.attach_flags = flags;
        if (sys_bpf(BPF_PROG_ATTACH, &attr) < 0)
                fail_msg("attach: %s", strerror(errno));
}

/* A runtime-style device program attached to cgfd, as runc leaves it. */
static void attach_runtime(int cgfd, uint32_t flags)
{
        int rt = load_runtime(0);
        attach(cgfd, rt, flags);
        close(rt);
}

/* Ids of the device programs attached to cgfd. */
static size_t query(int cgfd, uint32_t *ids, size_t cap)
{
        union bpf_attr attr;
        memset(&attr, 0, sizeof(attr));
        attr.query.target_fd = (uint32_t)cgfd;
        attr.query.attach_type = BPF_CGROUP_DEVICE;
        attr.query.prog_ids = (uint64_t)(uintptr_t)ids;
        attr.query.prog_cnt = (uint32_t)cap;
        if (sys_bpf(BPF_PROG_QUERY, &attr) < 0)
                fail_msg("query: %s", strerror(errno));
        return attr.query.prog_cnt;
}

/* xlated instructions of program id into out (cap slots); returns the count. */
static size_t dump(uint32_t id, struct bpf_insn *out, size_t cap)
{
        union bpf_attr attr;
        memset(&attr, 0, sizeof(attr));
        attr.prog_id = id;
        int fd = (int)sys_bpf(BPF_PROG_GET_FD_BY_ID, &attr);
        assert_true(fd >= 0);
        struct bpf_prog_info info;
        memset(&info, 0, sizeof(info));
        info.xlated_prog_len = (uint32_t)(cap * sizeof(*out));
        info.xlated_prog_insns = (uint64_t)(uintptr_t)out;
        memset(&attr, 0, sizeof(attr));
        attr.info.bpf_fd = (uint32_t)fd;
        attr.info.info_len = sizeof(info);
        attr.info.info = (uint64_t)(uintptr_t)&info;
        assert_int_equal(sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &attr), 0);
        close(fd);
        assert_true(info.xlated_prog_len <= cap * sizeof(*out));
        return info.xlated_prog_len / sizeof(*out);
}

static uint32_t prog_id(int fd)
{
        struct bpf_prog_info info;
        memset(&info, 0, sizeof(info));
        union bpf_attr attr;
        memset(&attr, 0, sizeof(attr));
        attr.info.bpf_fd = (uint32_t)fd;
        attr.info.info_len = sizeof(info);
        attr.info.info = (uint64_t)(uintptr_t)&info;
        assert_int_equal(sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &attr), 0);
        return info.id;
}

/* ------------------------------------------------------------------------------------------ */
/* fixtures                                                                                    */
/* ------------------------------------------------------------------------------------------ */

struct fix {
        char dir[4096];  /* test cgroup */
        char dir2[4096]; /* second one (v2 dir in the v1 find test), or "" */
        int cgfd;
        struct child child;
};

static int make_cgroup(const char *mount, char *out, size_t size)
{
        snprintf(out, size, "%s/gs-test.XXXXXX", mount);
        return mkdtemp(out) != NULL ? 0 : -1;
}

/* Move every process out of dir into its parent, then remove it. */
static void remove_cgroup(const char *dir)
{
        if (dir[0] == '\0')
                return;
        char procs[4200], parent[4096];
        snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
        snprintf(parent, sizeof(parent), "%s", dir);
        *strrchr(parent, '/') = '\0';
        for (int tries = 0; tries < 50; tries++) {
                FILE *f = fopen(procs, "re");
                int pid, moved = 0;
                while (f != NULL && fscanf(f, "%d", &pid) == 1) {
                        char pp[4200], buf[32];
                        snprintf(pp, sizeof(pp), "%s/cgroup.procs", parent);
                        snprintf(buf, sizeof(buf), "%d", pid);
                        write_file(pp, buf);
                        moved++;
                }
                if (f != NULL)
                        fclose(f);
                if (rmdir(dir) == 0 || errno == ENOENT)
                        return;
                usleep(10000);
        }
        fprintf(stderr, "warning: could not remove %s: %s\n", dir, strerror(errno));
}

/* Why the last setup left *state NULL: a hierarchy this host does not have. */
static const char *no_fixture_why = "";

static int setup_v2(void **state)
{
        if (v2_mount[0] == '\0') {
                no_fixture_why = "no cgroup2 mount on this host (cgroup v1 only)";
                *state = NULL;
                return 0;
        }
        struct fix *f = calloc(1, sizeof(*f));
        f->cgfd = -1;
        if (make_cgroup(v2_mount, f->dir, sizeof(f->dir)) < 0) {
                fprintf(stderr, "mkdir under %s: %s\n", v2_mount, strerror(errno));
                free(f);
                return -1;
        }
        f->cgfd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        child_start(&f->child);
        move_to(f->dir, f->child.pid);
        *state = f;
        return 0;
}

static int setup_v1(void **state)
{
        if (v1_mount[0] == '\0') {
                no_fixture_why = "no cgroup v1 devices hierarchy on this host (cgroup v2 only)";
                *state = NULL;
                return 0;
        }
        struct fix *f = calloc(1, sizeof(*f));
        f->cgfd = -1;
        if (make_cgroup(v1_mount, f->dir, sizeof(f->dir)) < 0) {
                fprintf(stderr, "mkdir under %s: %s\n", v1_mount, strerror(errno));
                free(f);
                return -1;
        }
        child_start(&f->child);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fix *f = *state;
        if (f == NULL)
                return 0;
        child_stop(&f->child);
        if (f->cgfd >= 0)
                close(f->cgfd);
        remove_cgroup(f->dir);
        remove_cgroup(f->dir2);
        free(f);
        return 0;
}

/* NEED(f): the setup found no hierarchy of its kind (why: no_fixture_why): a visible skip */
#define NEED(f)                                                                                                \
        do {                                                                                                   \
                if ((f) == NULL) {                                                                             \
                        GS_SKIP("%s", no_fixture_why);                                                         \
                        return;                                                                                \
                }                                                                                              \
        } while (0)

static struct gs_cgroup v2_of(const struct fix *f)
{
        struct gs_cgroup cg = {.version = GS_CGROUP_V2};
        snprintf(cg.path, sizeof(cg.path), "%s", f->dir);
        return cg;
}

static size_t nprogs(const struct gs_cgroup *cg)
{
        size_t n = 99;
        struct gs_error err = {0};
        if (gs_cgroup_count_programs(cg, &n, &err) < 0)
                fail_msg("count: %s", err.msg);
        return n;
}

static void allow_ok(const struct gs_cgroup *cg, const struct gs_devrule *r, size_t n, unsigned flags)
{
        struct gs_error err = {0};
        if (gs_cgroup_allow_ex(cg, r, n, flags, &err) < 0)
                fail_msg("gs_cgroup_allow: %s", err.msg);
}

#define MASK_RUNTIME (BIT(DEV_NULL) | BIT(DEV_ZERO))

/* ------------------------------------------------------------------------------------------ */
/* v2                                                                                          */
/* ------------------------------------------------------------------------------------------ */

static void test_v2_allow(void **state)
{
        struct fix *f = *state;
        NEED(f);
        struct gs_cgroup cg = v2_of(f);
        assert_int_equal(child_probe(&f->child), BIT(DEV_NULL) | BIT(DEV_ZERO) | BIT(DEV_RANDOM) | BIT(DEV_URANDOM));

        int rt = load_runtime(0);
        attach(f->cgfd, rt, BPF_F_ALLOW_MULTI);
        struct bpf_insn orig[256];
        size_t norig = dump(prog_id(rt), orig, 256);
        close(rt);
        assert_int_equal(child_probe(&f->child), MASK_RUNTIME);

        struct gs_devrule r8 = {1, 8};
        allow_ok(&cg, &r8, 1, 0);
        assert_int_equal(child_probe(&f->child), MASK_RUNTIME | BIT(DEV_RANDOM));
        assert_int_equal(nprogs(&cg), 1);

        /* the new program is our prefix + the runtime's instructions, unchanged */
        uint32_t ids[8];
        assert_int_equal(query(f->cgfd, ids, 8), 1);
        uint32_t id1 = ids[0];
        struct bpf_insn now[512];
        size_t nnow = dump(id1, now, 512);
        assert_int_equal(nnow, 10 + 4 + norig);
        assert_memory_equal(now + 14, orig, norig * sizeof(*orig));

        struct gs_devrule *list = NULL;
        size_t nlist = 0;
        struct gs_error err = {0};
        assert_int_equal(gs_cgroup_list_rules(&cg, &list, &nlist, &err), 0);
        assert_int_equal(nlist, 1);
        assert_int_equal(list[0].major, 1);
        assert_int_equal(list[0].minor, 8);
        free(list);

        /* again: nothing to do, the same program stays */
        allow_ok(&cg, &r8, 1, 0);
        assert_int_equal(query(f->cgfd, ids, 8), 1);
        assert_int_equal(ids[0], id1);
        assert_int_equal(child_probe(&f->child), MASK_RUNTIME | BIT(DEV_RANDOM));

        /* more rules: merged into one prefix, not stacked */
        struct gs_devrule more[] = {{1, 8}, {1, 9}, {1, 9}};
        allow_ok(&cg, more, 3, 0);
        assert_int_equal(query(f->cgfd, ids, 8), 1);
        assert_int_not_equal(ids[0], id1);
        nnow = dump(ids[0], now, 512);
        assert_int_equal(nnow, 10 + 2 * 4 + norig);
        assert_memory_equal(now + 18, orig, norig * sizeof(*orig));
        assert_int_equal(child_probe(&f->child), MASK_RUNTIME | BIT(DEV_RANDOM) | BIT(DEV_URANDOM));
        assert_int_equal(gs_cgroup_list_rules(&cg, &list, &nlist, &err), 0);
        assert_int_equal(nlist, 2);
        free(list);

}

static void test_v2_urandom_still_denied(void **state)
{
        struct fix *f = *state;
        NEED(f);
        struct gs_cgroup cg = v2_of(f);
        attach_runtime(f->cgfd, BPF_F_ALLOW_MULTI);
        struct gs_devrule r8 = {1, 8};
        allow_ok(&cg, &r8, 1, 0);
        allow_ok(&cg, &r8, 1, 0);
        assert_int_equal(child_probe(&f->child), MASK_RUNTIME | BIT(DEV_RANDOM));
        assert_int_equal(nprogs(&cg), 1);
}

static void test_v2_no_program(void **state)
{
        struct fix *f = *state;
        NEED(f);
        struct gs_cgroup cg = v2_of(f);
        struct gs_devrule r8 = {1, 8};
        allow_ok(&cg, &r8, 1, 0);
        assert_int_equal(nprogs(&cg), 0);
        assert_int_equal(child_probe(&f->child), BIT(DEV_NULL) | BIT(DEV_ZERO) | BIT(DEV_RANDOM) | BIT(DEV_URANDOM));
        struct gs_devrule *list = NULL;
        size_t nlist = 1;
        struct gs_error err = {0};
        assert_int_equal(gs_cgroup_list_rules(&cg, &list, &nlist, &err), 0);
        assert_int_equal(nlist, 0);
        assert_null(list);
}

static void test_v2_no_replace(void **state)
{
        struct fix *f = *state;
        NEED(f);
        struct gs_cgroup cg = v2_of(f);
        attach_runtime(f->cgfd, BPF_F_ALLOW_MULTI);
        struct gs_devrule r8 = {1, 8};
        allow_ok(&cg, &r8, 1, GS_CGROUP_NO_REPLACE);
        assert_int_equal(nprogs(&cg), 1);
        assert_int_equal(child_probe(&f->child), MASK_RUNTIME | BIT(DEV_RANDOM));
}

static void test_v2_single_mode(void **state)
{
        struct fix *f = *state;
        NEED(f);
        struct gs_cgroup cg = v2_of(f);
        attach_runtime(f->cgfd, 0); /* no BPF_F_ALLOW_MULTI */
        assert_int_equal(child_probe(&f->child), MASK_RUNTIME);
        struct gs_devrule r8 = {1, 8};
        allow_ok(&cg, &r8, 1, 0);
        assert_int_equal(nprogs(&cg), 1);
        assert_int_equal(child_probe(&f->child), MASK_RUNTIME | BIT(DEV_RANDOM));
}

static void test_v2_two_programs(void **state)
{
        struct fix *f = *state;
        NEED(f);
        struct gs_cgroup cg = v2_of(f);
        int a = load_runtime(0), b = load_runtime(9); /* b also allows urandom; a does not */
        attach(f->cgfd, a, BPF_F_ALLOW_MULTI);
        attach(f->cgfd, b, BPF_F_ALLOW_MULTI);
        close(a);
        close(b);
        assert_int_equal(child_probe(&f->child), MASK_RUNTIME);
        struct gs_devrule r8 = {1, 8};
        allow_ok(&cg, &r8, 1, 0);
        assert_int_equal(nprogs(&cg), 2);
        assert_int_equal(child_probe(&f->child), MASK_RUNTIME | BIT(DEV_RANDOM));
        struct gs_devrule *list = NULL;
        size_t nlist = 0;
        struct gs_error err = {0};
        assert_int_equal(gs_cgroup_list_rules(&cg, &list, &nlist, &err), 0);
        assert_int_equal(nlist, 1);
        free(list);
}

static void test_v2_dry_run(void **state)
{
        struct fix *f = *state;
        NEED(f);
        struct gs_cgroup cg = v2_of(f);
        int rt = load_runtime(0);
        attach(f->cgfd, rt, BPF_F_ALLOW_MULTI);
        uint32_t id = prog_id(rt);
        close(rt);
        struct gs_devrule r8 = {1, 8};
        allow_ok(&cg, &r8, 1, GS_CGROUP_DRY_RUN);
        uint32_t ids[4];
        assert_int_equal(query(f->cgfd, ids, 4), 1);
        assert_int_equal(ids[0], id);
        assert_int_equal(child_probe(&f->child), MASK_RUNTIME);
}

static void expect_refusal(struct fix *f, int rt, const char *needle)
{
        struct gs_cgroup cg = v2_of(f);
        attach(f->cgfd, rt, BPF_F_ALLOW_MULTI);
        uint32_t id = prog_id(rt);
        close(rt);
        struct gs_devrule r8 = {1, 8};
        struct gs_error err = {0};
        assert_int_equal(gs_cgroup_allow(&cg, &r8, 1, &err), -1);
        printf("# error text: %s\n", err.msg);
        if (strstr(err.msg, needle) == NULL)
                fail_msg("error \"%s\" lacks \"%s\"", err.msg, needle);
        assert_non_null(strstr(err.msg, "--no-cgroups"));
        uint32_t ids[4];
        assert_int_equal(query(f->cgfd, ids, 4), 1);
        assert_int_equal(ids[0], id); /* untouched */
}

static void test_v2_refuse_map(void **state)
{
        struct fix *f = *state;
        NEED(f);
        union bpf_attr attr;
        memset(&attr, 0, sizeof(attr));
        attr.map_type = BPF_MAP_TYPE_ARRAY;
        attr.key_size = 4;
        attr.value_size = 4;
        attr.max_entries = 1;
        int map = (int)sys_bpf(BPF_MAP_CREATE, &attr);
        assert_true(map >= 0);
        struct bpf_insn p[] = {
                I(BPF_LD | BPF_IMM | BPF_DW, BPF_REG_2, BPF_PSEUDO_MAP_FD, 0, map),
                I(0, 0, 0, 0, 0),
                I(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0),
                I(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
        };
        int rt = load_prog(p, 4);
        close(map);
        expect_refusal(f, rt, "map");
}

static void test_v2_refuse_call(void **state)
{
        struct fix *f = *state;
        NEED(f);
        struct bpf_insn p[] = {
                I(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_get_prandom_u32),
                I(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0),
                I(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
        };
        expect_refusal(f, load_prog(p, 3), "calls a helper");
}

/* Without capabilities (as in an LXC container or under an LSM), bpf() says EPERM. */
static void test_v2_eperm(void **state)
{
        struct fix *f = *state;
        NEED(f);
        attach_runtime(f->cgfd, BPF_F_ALLOW_MULTI);
        int p[2];
        assert_int_equal(pipe(p), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                close(p[0]);
                char out[GS_ERRMSG_MAX + 16] = "capabilities not dropped";
                cap_t none = cap_init();
                if (none != NULL && cap_set_proc(none) == 0) {
                        struct gs_cgroup cg = v2_of(f);
                        struct gs_devrule r8 = {1, 8};
                        struct gs_error err = {0};
                        if (gs_cgroup_allow(&cg, &r8, 1, &err) == 0)
                                snprintf(out, sizeof(out), "allowed without capabilities");
                        else
                                snprintf(out, sizeof(out), "%d %s", err.sys_errno, err.msg);
                }
                if (write(p[1], out, strlen(out) + 1) < 0)
                        _exit(1);
                _exit(0);
        }
        close(p[1]);
        char got[GS_ERRMSG_MAX + 16] = {0};
        assert_true(read(p[0], got, sizeof(got) - 1) > 0);
        close(p[0]);
        int st;
        waitpid(pid, &st, 0);
        printf("# error text: %s\n", got);
        assert_int_equal(atoi(got), EPERM);
        assert_non_null(strstr(got, "bpf_prog_query(BPF_CGROUP_DEVICE) failed"));
        assert_non_null(strstr(got, "--no-cgroups"));
        assert_int_equal(child_probe(&f->child), MASK_RUNTIME);
}

static int read_sysctl(const char *path, char *buf, size_t size)
{
        FILE *fp = fopen(path, "re");
        if (fp == NULL)
                return -1;
        int ok = fgets(buf, (int)size, fp) != NULL;
        fclose(fp);
        if (!ok)
                return -1;
        buf[strcspn(buf, "\n")] = '\0';
        return 0;
}

/* JIT constant blinding: the runtime's program reads back with the hidden register (or zeros). */
static void test_v2_jit_harden(void **state)
{
        struct fix *f = *state;
        NEED(f);
        static const char *knob = "/proc/sys/net/core/bpf_jit_harden";
        char saved[16], jit[16];
        if (read_sysctl(knob, saved, sizeof(saved)) < 0 ||
            read_sysctl("/proc/sys/net/core/bpf_jit_enable", jit, sizeof(jit)) < 0 || strcmp(jit, "1") != 0) {
                GS_SKIP("this kernel's BPF JIT is off or unreadable (net.core.bpf_jit_enable != 1): no blinding");
                return;
        }
        if (write_file(knob, "2") < 0) {
                GS_SKIP("cannot set %s here: %s", knob, strerror(errno));
                return;
        }
        int rt = load_runtime(0);
        write_file(knob, saved); /* at once: the knob is global */
        struct bpf_insn d[256];
        size_t n = dump(prog_id(rt), d, 256);
        int blinded = 0;
        for (size_t i = 0; i < n; i++)
                blinded |= d[i].dst_reg > BPF_REG_10 || d[i].src_reg > BPF_REG_10;
        static const struct bpf_insn z;
        blinded |= n > 0 && memcmp(&d[0], &z, sizeof(z)) == 0;
        if (!blinded) {
                close(rt);
                GS_SKIP("this kernel did not blind the program at bpf_jit_harden=2");
                return;
        }
        expect_refusal(f, rt, "bpf_jit_harden");
}

static void test_v2_bad_rules(void **state)
{
        struct fix *f = *state;
        NEED(f);
        struct gs_cgroup cg = v2_of(f);
        struct gs_devrule bad = {4096, 0};
        struct gs_error err = {0};
        assert_int_equal(gs_cgroup_allow(&cg, &bad, 1, &err), -1);
        assert_int_equal(err.code, GS_EINVAL);
        struct gs_cgroup wrong = {.version = GS_CGROUP_V2};
        snprintf(wrong.path, sizeof(wrong.path), "%s", devdir); /* not a cgroup */
        struct gs_devrule r8 = {1, 8};
        assert_int_equal(gs_cgroup_allow(&wrong, &r8, 1, &err), -1);
        assert_non_null(strstr(err.msg, "not a cgroup v2 directory"));
}

/* gs_cgroup_find with an explicit v2 request (on hybrid hosts, auto picks v1). */
static void test_v2_find(void **state)
{
        struct fix *f = *state;
        NEED(f);
        struct gs_cgroup cg;
        struct gs_error err = {0};
        if (gs_cgroup_find_version(f->child.pid, GS_CGROUP_V2, 0, &cg, &err) < 0)
                fail_msg("find: %s", err.msg);
        assert_int_equal(cg.version, GS_CGROUP_V2);
        assert_string_equal(cg.path, f->dir);
        if (v1_mount[0] == '\0') {
                assert_int_equal(gs_cgroup_find(f->child.pid, &cg, &err), 0);
                assert_int_equal(cg.version, GS_CGROUP_V2);
                assert_string_equal(cg.path, f->dir);
        }
        /* through another process's mountinfo */
        assert_int_equal(gs_cgroup_find_version(f->child.pid, GS_CGROUP_V2, getpid(), &cg, &err), 0);
        assert_string_equal(cg.path, f->dir);
        assert_int_equal(gs_cgroup_find(999999999, &cg, &err), -1);
}

/*
 * The mount's root prefix is stripped: in a private mount namespace where the cgroup2 hierarchy
 * is visible only through a bind mount of the test cgroup (mountinfo root = /gs-test.XXXXXX), a
 * process in <test cgroup>/inner is found at <bind mountpoint>/inner. The original mount is
 * either unmounted, or still listed in mountinfo but hidden under a tmpfs (must be skipped).
 */
static void find_through_bind(struct fix *f, bool shadow)
{
        char sub[4200];
        snprintf(sub, sizeof(sub), "%s/inner", f->dir);
        assert_int_equal(mkdir(sub, 0755), 0);
        struct child g; /* a grandchild inside f->dir/inner */
        child_start(&g);
        move_to(sub, g.pid);
        char mnt[] = "/tmp/gs-cgmnt.XXXXXX";
        assert_non_null(mkdtemp(mnt));
        int p[2];
        assert_int_equal(pipe(p), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                close(p[0]);
                char out[4200] = "setup failed";
                struct gs_cgroup cg;
                struct gs_error err = {0};
                if (unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0 &&
                    mount(f->dir, mnt, NULL, MS_BIND, NULL) == 0 &&
                    (shadow ? mount("tmpfs", v2_mount, "tmpfs", 0, NULL) : umount2(v2_mount, MNT_DETACH)) == 0) {
                        if (gs_cgroup_find_version(g.pid, GS_CGROUP_V2, 0, &cg, &err) == 0)
                                snprintf(out, sizeof(out), "%s", cg.path);
                        else
                                snprintf(out, sizeof(out), "error: %s", err.msg);
                        /* a process outside the bind mount's subtree is not visible */
                        if (gs_cgroup_find_version(getppid(), GS_CGROUP_V2, 0, &cg, &err) == 0)
                                snprintf(out, sizeof(out), "parent unexpectedly found at %s", cg.path);
                        else if (strstr(err.msg, "is not visible through any cgroup2 mount") == NULL)
                                snprintf(out, sizeof(out), "unexpected error: %s", err.msg);
                }
                if (write(p[1], out, strlen(out) + 1) < 0)
                        _exit(1);
                _exit(0);
        }
        close(p[1]);
        char got[4200] = {0};
        ssize_t n = read(p[0], got, sizeof(got) - 1);
        close(p[0]);
        int st;
        waitpid(pid, &st, 0);
        child_stop(&g);
        rmdir(sub);
        rmdir(mnt);
        assert_true(n > 0);
        char want[4300];
        snprintf(want, sizeof(want), "%s/inner", mnt);
        assert_string_equal(got, want);
}

static void test_v2_find_bind_root(void **state)
{
        struct fix *f = *state;
        NEED(f);
        find_through_bind(f, false);
}

static void test_v2_find_shadowed(void **state)
{
        struct fix *f = *state;
        NEED(f);
        find_through_bind(f, true);
}

/* ------------------------------------------------------------------------------------------ */
/* v1                                                                                          */
/* ------------------------------------------------------------------------------------------ */

static void test_v1_allow(void **state)
{
        struct fix *f = *state;
        NEED(f);
        char p[4200];
        snprintf(p, sizeof(p), "%s/devices.deny", f->dir);
        assert_int_equal(write_file(p, "a"), 0);
        snprintf(p, sizeof(p), "%s/devices.allow", f->dir);
        assert_int_equal(write_file(p, "c 1:3 rw"), 0);
        move_to(f->dir, f->child.pid);
        assert_int_equal(child_probe(&f->child), BIT(DEV_NULL));

        struct gs_cgroup cg;
        struct gs_error err = {0};
        if (gs_cgroup_find(f->child.pid, &cg, &err) < 0)
                fail_msg("find: %s", err.msg);
        assert_int_equal(cg.version, GS_CGROUP_V1);
        assert_string_equal(cg.path, f->dir);

        struct gs_devrule r8 = {1, 8};
        allow_ok(&cg, &r8, 1, GS_CGROUP_DRY_RUN);
        assert_int_equal(child_probe(&f->child), BIT(DEV_NULL));
        allow_ok(&cg, &r8, 1, 0);
        allow_ok(&cg, &r8, 1, 0); /* idempotent */
        assert_int_equal(child_probe(&f->child), BIT(DEV_NULL) | BIT(DEV_RANDOM));
        snprintf(p, sizeof(p), "%s/devices.list", f->dir);
        char *list = read_all(p);
        assert_non_null(list);
        assert_non_null(strstr(list, "c 1:8 rw"));
        free(list);

        struct gs_devrule *rules = NULL;
        size_t n = 0;
        assert_int_equal(gs_cgroup_list_rules(&cg, &rules, &n, &err), 0);
        assert_int_equal(n, 2);
        assert_int_equal(rules[0].minor + rules[1].minor, 3 + 8);
        free(rules);
}

/* Auto detection picks v1 on a hybrid host; an explicit v1 request on a v2-only process fails. */
static void test_v1_find(void **state)
{
        struct fix *f = *state;
        NEED(f);
        move_to(f->dir, f->child.pid);
        if (v2_mount[0] != '\0') {
                assert_int_equal(make_cgroup(v2_mount, f->dir2, sizeof(f->dir2)), 0);
                move_to(f->dir2, f->child.pid);
        }
        struct gs_cgroup cg;
        struct gs_error err = {0};
        assert_int_equal(gs_cgroup_find(f->child.pid, &cg, &err), 0);
        assert_int_equal(cg.version, GS_CGROUP_V1);
        assert_string_equal(cg.path, f->dir);
        assert_int_equal(gs_cgroup_find_version(f->child.pid, GS_CGROUP_V1, 0, &cg, &err), 0);
        assert_string_equal(cg.path, f->dir);
        if (v2_mount[0] != '\0') {
                assert_int_equal(gs_cgroup_find_version(f->child.pid, GS_CGROUP_V2, 0, &cg, &err), 0);
                assert_int_equal(cg.version, GS_CGROUP_V2);
                assert_string_equal(cg.path, f->dir2);
        }
}

/* ------------------------------------------------------------------------------------------ */

static void remove_devdir(void)
{
        for (int i = 0; i < NDEV; i++) {
                char path[256];
                snprintf(path, sizeof(path), "%s/%s", devdir, dev_names[i]);
                unlink(path);
        }
        rmdir(devdir);
}

int main(void)
{
        if (geteuid() != 0) {
                printf("# skipped: needs root\n");
                return 77;
        }
        find_mounts();
        if (v2_mount[0] == '\0' && v1_mount[0] == '\0') {
                printf("# skipped: no cgroup2 mount and no v1 devices hierarchy\n");
                return 77;
        }
        if (mkdtemp(devdir) == NULL) {
                perror("mkdtemp");
                return 1;
        }
        for (int i = 0; i < NDEV; i++) {
                char path[256];
                snprintf(path, sizeof(path), "%s/%s", devdir, dev_names[i]);
                if (mknod(path, S_IFCHR | 0666, makedev(1, dev_minor[i])) < 0) {
                        perror("mknod");
                        remove_devdir();
                        return 77;
                }
                int fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0) { /* nodev mount? */
                        printf("# skipped: cannot open device nodes in %s: %s\n", devdir, strerror(errno));
                        remove_devdir();
                        return 77;
                }
                close(fd);
        }
        printf("# cgroup2 mount: %s; v1 devices: %s\n", v2_mount[0] ? v2_mount : "(none)",
               v1_mount[0] ? v1_mount : "(none)");
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_v2_allow, setup_v2, teardown),
                cmocka_unit_test_setup_teardown(test_v2_urandom_still_denied, setup_v2, teardown),
                cmocka_unit_test_setup_teardown(test_v2_no_program, setup_v2, teardown),
                cmocka_unit_test_setup_teardown(test_v2_no_replace, setup_v2, teardown),
                cmocka_unit_test_setup_teardown(test_v2_single_mode, setup_v2, teardown),
                cmocka_unit_test_setup_teardown(test_v2_two_programs, setup_v2, teardown),
                cmocka_unit_test_setup_teardown(test_v2_dry_run, setup_v2, teardown),
                cmocka_unit_test_setup_teardown(test_v2_refuse_map, setup_v2, teardown),
                cmocka_unit_test_setup_teardown(test_v2_refuse_call, setup_v2, teardown),
                cmocka_unit_test_setup_teardown(test_v2_eperm, setup_v2, teardown),
                cmocka_unit_test_setup_teardown(test_v2_jit_harden, setup_v2, teardown),
                cmocka_unit_test_setup_teardown(test_v2_bad_rules, setup_v2, teardown),
                cmocka_unit_test_setup_teardown(test_v2_find, setup_v2, teardown),
                cmocka_unit_test_setup_teardown(test_v2_find_bind_root, setup_v2, teardown),
                cmocka_unit_test_setup_teardown(test_v2_find_shadowed, setup_v2, teardown),
                cmocka_unit_test_setup_teardown(test_v1_allow, setup_v1, teardown),
                cmocka_unit_test_setup_teardown(test_v1_find, setup_v1, teardown),
        };
        int rc = cmocka_run_group_tests(tests, NULL, NULL);
        remove_devdir();
        return gs_skips_result(rc, sizeof(tests) / sizeof(tests[0]));
}
