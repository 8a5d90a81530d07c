/*
 * Device cgroup rules (v1 devices.allow, v2 BPF_CGROUP_DEVICE programs) and cgroup discovery.
 *
 * v2 in short. The kernel runs every device program attached to (or inherited by) a cgroup and
 * allows an access only when all of them do, so adding a program of our own can never widen what
 * the runtime's program allows. Instead each program attached to the cgroup is replaced by
 *
 *      [gpuslice prefix: "char device in our list, access within rw -> return 1"] [old program]
 *
 * The old program's instructions come from the kernel (BPF_OBJ_GET_INFO_BY_FD, xlated form) and
 * are re-loaded unchanged behind the prefix: the prefix does not touch r1 (the context) or the
 * stack, and falls through to the old first instruction, so the old code runs exactly as before
 * for everything we do not allow. Jumps are relative, so nothing in the old code needs fixing.
 *
 * Prefix layout (N rules, 10 + 4N instructions):
 *
 *      0-1   ld_imm64 r0, GS_MARK_HI << 32 | GS_PREFIX_VERSION << 16 | N    marker (r0 is dead)
 *      2     ldxw  r2, [r1 + 0]          access_type
 *      3     and32 r2, 0xffff            device type (BPF_DEVCG_DEV_*)
 *      4     ldxw  r3, [r1 + 0]
 *      5     rsh32 r3, 16                access (BPF_DEVCG_ACC_*)
 *      6     ldxw  r4, [r1 + 4]          major
 *      7     ldxw  r5, [r1 + 8]          minor
 *      8     jne   r2, DEV_CHAR, +(1+4N) not a char device -> old program
 *      9     jset  r3, ~(READ|WRITE), +4N  mknod (or anything but rw) -> old program
 *      10+4k jne   r4, MAJOR_k, +3       rule k
 *      11+4k jne   r5, MINOR_k, +2
 *      12+4k mov64 r0, 1
 *      13+4k exit
 *      10+4N first instruction of the old program
 *
 * The marker makes the operation idempotent: a program that already starts with a prefix that
 * regenerates byte for byte from the rules it carries is stripped, its rules are merged with the
 * new ones, and a fresh prefix goes in front of the old body (a prefix that already holds every
 * rule means nothing to do). 32-bit loads (no narrow ctx loads) keep it endian-neutral.
 *
 * Checks on the old instructions, each with its own error (see libnvidia-container's history:
 * zero-filled dumps under JIT constant blinding, "last insn is not an exit or jmp", EPERM in LXC):
 * non-empty, not all zero, registers r0-r10 only (blinding uses a hidden 11th register), no
 * ld_imm64 of maps/BTF objects, no calls (their xlated immediates are kernel addresses), the last
 * instruction an exit or a jump. Whatever else is wrong, the verifier says (its last log line is
 * put in the error).
 *
 * Swap: BPF_PROG_ATTACH(BPF_F_ALLOW_MULTI | BPF_F_REPLACE, replace_bpf_fd = old) is atomic
 * (Linux >= 5.6). Where BPF_F_REPLACE is refused with EINVAL (older kernels), the new program is
 * attached next to the old one first (both run: never less restrictive than before) and the old
 * one is detached after. A program attached without BPF_F_ALLOW_MULTI (single-program mode) is
 * replaced by attaching with the same flags, which the kernel does atomically. All new programs
 * are loaded (verified) before the first swap; a failed swap puts back the programs already
 * swapped.
 */
#include "container/cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/bpf.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "common/strutil.h"

#ifndef CGROUP_SUPER_MAGIC
#define CGROUP_SUPER_MAGIC 0x27e0eb
#endif
#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif
#ifndef BPF_F_REPLACE
#define BPF_F_REPLACE (1U << 2)
#endif
#ifndef BPF_JMP32
#define BPF_JMP32 0x06
#endif

#define GS_MARK_HI 0x67736c63u /* "gslc" */
#define GS_PREFIX_VERSION 1u
#define GS_PREFIX_HEAD 10u    /* instructions before the first rule */
#define GS_PREFIX_PER_RULE 4u
#define GS_MAX_MAJOR 0xfffu   /* Linux dev_t: 12-bit major, 20-bit minor */
#define GS_MAX_MINOR 0xfffffu
#define GS_PROG_NAME "gpuslice_dev"
#define GS_PROG_LICENSE "Apache-2.0"
#define GS_NO_CGROUPS_HINT "run with --no-cgroups and give the devices to the runtime (CDI or --device)"

/* ------------------------------------------------------------------------------------------ */
/* Discovery                                                                                   */
/* ------------------------------------------------------------------------------------------ */

/* Does the comma-separated list contain token? */
static bool list_has(const char *list, const char *token)
{
        size_t len = strlen(token);
        for (const char *p = list; *p != '\0';) {
                const char *end = strchr(p, ',');
                size_t n = end != NULL ? (size_t)(end - p) : strlen(p);
                if (n == len && strncmp(p, token, len) == 0)
                        return true;
                if (end == NULL)
                        break;
                p = end + 1;
        }
        return false;
}

/* mountinfo escapes space, tab, newline and backslash as \ooo; decode in place. */
static void unescape_octal(char *s)
{
        char *w = s;
        for (char *r = s; *r != '\0';) {
                if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
                    r[3] >= '0' && r[3] <= '7') {
                        *w++ = (char)((r[1] - '0') << 6 | (r[2] - '0') << 3 | (r[3] - '0'));
                        r += 4;
                } else {
                        *w++ = *r++;
                }
        }
        *w = '\0';
}

/* A path from /proc/<pid>/cgroup must be absolute and free of "." / ".." components. */
static bool cgroup_path_ok(const char *p)
{
        if (p[0] != '/')
                return false;
        for (const char *c = p; *c != '\0';) {
                while (*c == '/')
                        c++;
                const char *end = strchrnul(c, '/');
                size_t n = (size_t)(end - c);
                if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
                        return false;
                c = end;
        }
        return true;
}

static bool starts_with_dotdot(const char *p)
{
        return strncmp(p, "/..", 3) == 0 && (p[3] == '/' || p[3] == '\0');
}

/* Read the v1 devices path and the v2 path of pid (each may be absent: empty string). */
static int read_proc_cgroup(pid_t pid, char *v1, size_t v1_size, bool *has_v1, char *v2, size_t v2_size,
                            bool *has_v2, struct gs_error *err)
{
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
        gs_autofclose FILE *f = fopen(path, "re");
        if (f == NULL)
                return gs_error_sys(err, "open %s", path);
        *has_v1 = *has_v2 = false;
        gs_autofree char *line = NULL;
        size_t cap = 0;
        ssize_t len;
        while ((len = getline(&line, &cap, f)) >= 0) {
                if (len > 0 && line[len - 1] == '\n')
                        line[--len] = '\0';
                /* hierarchy-ID:controller-list:path (the path may itself contain ':') */
                char *c1 = strchr(line, ':');
                if (c1 == NULL)
                        continue;
                char *c2 = strchr(c1 + 1, ':');
                if (c2 == NULL)
                        continue;
                *c1 = *c2 = '\0';
                const char *hier = line, *ctrls = c1 + 1, *cgpath = c2 + 1;
                if (!*has_v1 && list_has(ctrls, "devices")) {
                        if (!gs_strlcpy(v1, cgpath, v1_size))
                                return gs_error_set(err, GS_EFORMAT, "%s: cgroup path too long", path);
                        *has_v1 = true;
                } else if (!*has_v2 && strcmp(hier, "0") == 0 && *ctrls == '\0') {
                        if (!gs_strlcpy(v2, cgpath, v2_size))
                                return gs_error_set(err, GS_EFORMAT, "%s: cgroup path too long", path);
                        *has_v2 = true;
                }
        }
        if (ferror(f))
                return gs_error_sys(err, "read %s", path);
        return 0;
}

/*
 * Find the mount of the hierarchy (v1 devices / cgroup2) through which cgpath is visible and
 * build <mountpoint><cgpath minus the mount's root>.
 */
static int find_mount(const char *mountinfo, bool own_ns, int version, const char *cgpath, char *out,
                      size_t out_size, struct gs_error *err)
{
        gs_autofclose FILE *f = fopen(mountinfo, "re");
        if (f == NULL)
                return gs_error_sys(err, "open %s", mountinfo);
        gs_autofree char *line = NULL;
        size_t cap = 0;
        ssize_t len;
        bool seen = false, dotdot = false, shadowed = false;
        while ((len = getline(&line, &cap, f)) >= 0) {
                if (len > 0 && line[len - 1] == '\n')
                        line[--len] = '\0';
                /* id parent maj:min root mountpoint options [optional...] - fstype source superopts */
                char *fields[6] = {0};
                char *save = NULL, *tok = strtok_r(line, " ", &save);
                size_t nf = 0;
                for (; tok != NULL && nf < 6; tok = strtok_r(NULL, " ", &save))
                        fields[nf++] = tok;
                if (nf < 6)
                        continue;
                /* skip optional fields up to the "-" separator */
                while (tok != NULL && strcmp(tok, "-") != 0)
                        tok = strtok_r(NULL, " ", &save);
                if (tok == NULL)
                        continue;
                const char *fstype = strtok_r(NULL, " ", &save);
                const char *source = strtok_r(NULL, " ", &save);
                const char *superopts = strtok_r(NULL, " ", &save);
                if (fstype == NULL || source == NULL || superopts == NULL)
                        continue;
                if (version == GS_CGROUP_V1) {
                        if (strcmp(fstype, "cgroup") != 0 || !list_has(superopts, "devices"))
                                continue;
                } else if (strcmp(fstype, "cgroup2") != 0) {
                        continue;
                }
                seen = true;
                char *root = fields[3], *mnt = fields[4];
                unescape_octal(root);
                unescape_octal(mnt);
                if (starts_with_dotdot(root)) {
                        dotdot = true;
                        continue;
                }
                const char *rel;
                if (strcmp(root, "/") == 0) {
                        rel = cgpath;
                } else {
                        size_t rl = strlen(root);
                        if (strncmp(cgpath, root, rl) != 0 || (cgpath[rl] != '/' && cgpath[rl] != '\0'))
                                continue; /* this mount shows another part of the hierarchy */
                        rel = cgpath + rl;
                }
                if (own_ns) {
                        /* skip a mount hidden by a later one on or above its mountpoint */
                        unsigned maj, min;
                        struct stat st;
                        if (sscanf(fields[2], "%u:%u", &maj, &min) != 2 || stat(mnt, &st) < 0 ||
                            st.st_dev != makedev(maj, min)) {
                                shadowed = true;
                                continue;
                        }
                }
                if (strcmp(rel, "/") == 0)
                        rel = "";
                if (strcmp(mnt, "/") == 0 && *rel != '\0')
                        mnt = "";
                int n = snprintf(out, out_size, "%s%s", mnt, rel);
                if (n < 0 || (size_t)n >= out_size)
                        return gs_error_set(err, GS_EINVAL, "cgroup path too long: %s%s", mnt, rel);
                return 0;
        }
        if (ferror(f))
                return gs_error_sys(err, "read %s", mountinfo);
        if (dotdot)
                return gs_error_set(err, GS_EINVAL,
                                    "the %s mount's root is outside this cgroup namespace (starts with /..)",
                                    version == GS_CGROUP_V1 ? "devices cgroup" : "cgroup2");
        if (seen)
                return gs_error_set(err, GS_ENOTFOUND, "cgroup %s is not visible through any %s mount in %s%s",
                                    cgpath, version == GS_CGROUP_V1 ? "devices cgroup" : "cgroup2", mountinfo,
                                    shadowed ? " (some are hidden by other mounts)" : "");
        if (version == GS_CGROUP_V1)
                return gs_error_set(err, GS_ENOTFOUND, "cgroup subsystem devices not found");
        return gs_error_set(err, GS_ENOTFOUND, "cgroup2 mount not found");
}

int gs_cgroup_find_version(pid_t pid, int version, pid_t mountinfo_pid, struct gs_cgroup *cg,
                           struct gs_error *err)
{
        if (cg == NULL || pid <= 0 || mountinfo_pid < 0 ||
            (version != 0 && version != GS_CGROUP_V1 && version != GS_CGROUP_V2))
                return gs_error_set(err, GS_EINVAL, "gs_cgroup_find: invalid argument");
        char v1[4096], v2[4096];
        bool has_v1 = false, has_v2 = false;
        if (read_proc_cgroup(pid, v1, sizeof(v1), &has_v1, v2, sizeof(v2), &has_v2, err) < 0)
                return -1;
        if (version == 0)
                version = has_v1 ? GS_CGROUP_V1 : GS_CGROUP_V2;
        const char *cgpath;
        if (version == GS_CGROUP_V1) {
                if (!has_v1)
                        return gs_error_set(err, GS_ENOTFOUND,
                                            "cgroup subsystem devices not found (process %d has no devices cgroup)",
                                            (int)pid);
                cgpath = v1;
        } else {
                if (!has_v2)
                        return gs_error_set(err, GS_ENOTFOUND,
                                            "process %d has no unified (cgroup v2) hierarchy entry", (int)pid);
                cgpath = v2;
        }
        if (starts_with_dotdot(cgpath))
                return gs_error_set(err, GS_EINVAL,
                                    "cgroup %s of process %d is outside this cgroup namespace (starts with /..)",
                                    cgpath, (int)pid);
        if (!cgroup_path_ok(cgpath))
                return gs_error_set(err, GS_EFORMAT, "invalid cgroup path %s of process %d", cgpath, (int)pid);
        char mountinfo[64];
        if (mountinfo_pid == 0)
                snprintf(mountinfo, sizeof(mountinfo), "/proc/self/mountinfo");
        else
                snprintf(mountinfo, sizeof(mountinfo), "/proc/%d/mountinfo", (int)mountinfo_pid);
        if (find_mount(mountinfo, mountinfo_pid == 0 || mountinfo_pid == getpid(), version, cgpath, cg->path,
                       sizeof(cg->path), err) < 0)
                return -1;
        cg->version = (enum gs_cgroup_version)version;
        gs_log_info("device cgroup of process %d: v%d %s", (int)pid, version, cg->path);
        return 0;
}

int gs_cgroup_find(pid_t pid, struct gs_cgroup *cg, struct gs_error *err)
{
        return gs_cgroup_find_version(pid, 0, 0, cg, err);
}

/* ------------------------------------------------------------------------------------------ */
/* Common                                                                                      */
/* ------------------------------------------------------------------------------------------ */

static int check_rules(const struct gs_devrule *rules, size_t n, struct gs_error *err)
{
        if (n > 0 && rules == NULL)
                return gs_error_set(err, GS_EINVAL, "device rules: NULL array");
        if (n > GS_CGROUP_MAX_RULES)
                return gs_error_set(err, GS_EINVAL, "too many device rules (%zu, at most %d)", n,
                                    GS_CGROUP_MAX_RULES);
        for (size_t i = 0; i < n; i++)
                if (rules[i].major > GS_MAX_MAJOR || rules[i].minor > GS_MAX_MINOR)
                        return gs_error_set(err, GS_EINVAL, "invalid device number %u:%u", rules[i].major,
                                            rules[i].minor);
        return 0;
}

/* Open the cgroup directory and check it lives on the expected cgroup file system. */
static int open_cgroup_dir(const struct gs_cgroup *cg, struct gs_error *err)
{
        int fd = open(cg->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return gs_error_sys(err, "open cgroup %s", cg->path);
        struct statfs sfs;
        if (fstatfs(fd, &sfs) < 0) {
                gs_error_sys(err, "statfs %s", cg->path);
                close(fd);
                return -1;
        }
        unsigned long want = cg->version == GS_CGROUP_V1 ? CGROUP_SUPER_MAGIC : CGROUP2_SUPER_MAGIC;
        if ((unsigned long)sfs.f_type != want) {
                close(fd);
                return gs_error_set(err, GS_EINVAL, "%s is not a cgroup %s directory", cg->path,
                                    cg->version == GS_CGROUP_V1 ? "v1" : "v2");
        }
        return fd;
}

static bool rule_in(const struct gs_devrule *v, size_t n, struct gs_devrule r)
{
        for (size_t i = 0; i < n; i++)
                if (v[i].major == r.major && v[i].minor == r.minor)
                        return true;
        return false;
}

/* ------------------------------------------------------------------------------------------ */
/* v1                                                                                          */
/* ------------------------------------------------------------------------------------------ */

static int v1_allow(const struct gs_cgroup *cg, const struct gs_devrule *rules, size_t n, unsigned flags,
                    struct gs_error *err)
{
        gs_autoclose int dfd = open_cgroup_dir(cg, err);
        if (dfd < 0)
                return -1;
        gs_autoclose int fd = openat(dfd, "devices.allow", O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return gs_error_sys(err, "open %s/devices.allow", cg->path);
        if (flags & GS_CGROUP_DRY_RUN)
                return 0;
        for (size_t i = 0; i < n; i++) {
                char buf[64];
                int len = snprintf(buf, sizeof(buf), "c %u:%u rw", rules[i].major, rules[i].minor);
                ssize_t w = write(fd, buf, (size_t)len);
                if (w < 0)
                        return gs_error_sys(err, "write \"%s\" to %s/devices.allow", buf, cg->path);
                if (w != len)
                        return gs_error_set(err, GS_ESYS, "short write of \"%s\" to %s/devices.allow", buf,
                                            cg->path);
                gs_log_info("cgroup v1 %s: allowed %s", cg->path, buf);
        }
        return 0;
}

static int v1_list(const struct gs_cgroup *cg, struct gs_devrule **out, size_t *nout, struct gs_error *err)
{
        gs_autoclose int dfd = open_cgroup_dir(cg, err);
        if (dfd < 0)
                return -1;
        int fd = openat(dfd, "devices.list", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return gs_error_sys(err, "open %s/devices.list", cg->path);
        gs_autofclose FILE *f = fdopen(fd, "re");
        if (f == NULL) {
                close(fd);
                return gs_error_sys(err, "fdopen %s/devices.list", cg->path);
        }
        gs_autofree struct gs_devrule *v = NULL;
        size_t n = 0, cap = 0;
        gs_autofree char *line = NULL;
        size_t lcap = 0;
        while (getline(&line, &lcap, f) >= 0) {
                char type, majs[16], mins[16], acc[8];
                if (sscanf(line, "%c %15[0-9*]:%15[0-9*] %7s", &type, majs, mins, acc) != 4)
                        continue;
                unsigned long long maj, min;
                if (type != 'c' || strchr(acc, 'r') == NULL || strchr(acc, 'w') == NULL ||
                    gs_parse_uint(majs, UINT_MAX, &maj) < 0 || gs_parse_uint(mins, UINT_MAX, &min) < 0)
                        continue;
                struct gs_devrule r = {(unsigned)maj, (unsigned)min};
                if (rule_in(v, n, r))
                        continue;
                if (n == cap) {
                        size_t ncap = cap ? cap * 2 : 16;
                        struct gs_devrule *nv = realloc(v, ncap * sizeof(*nv));
                        if (nv == NULL)
                                return gs_error_set(err, GS_ENOMEM, "out of memory");
                        v = nv;
                        cap = ncap;
                }
                v[n++] = r;
        }
        if (ferror(f))
                return gs_error_sys(err, "read %s/devices.list", cg->path);
        *out = gs_steal_ptr(&v);
        *nout = n;
        return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* v2: bpf(2)                                                                                  */
/* ------------------------------------------------------------------------------------------ */

static long sys_bpf(int cmd, union bpf_attr *attr)
{
        return syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

static struct bpf_insn insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
        struct bpf_insn i;
        memset(&i, 0, sizeof(i));
        i.code = code;
        i.dst_reg = dst & 0xf;
        i.src_reg = src & 0xf;
        i.off = off;
        i.imm = imm;
        return i;
}

/* Number of instructions of the prefix for n rules. */
static size_t prefix_len(size_t n)
{
        return GS_PREFIX_HEAD + GS_PREFIX_PER_RULE * n;
}

/* Write the prefix for rules into out (prefix_len(n) slots). */
static void build_prefix(const struct gs_devrule *rules, size_t n, struct bpf_insn *out)
{
        uint32_t lo = GS_PREFIX_VERSION << 16 | (uint32_t)n;
        int32_t body = (int32_t)(GS_PREFIX_PER_RULE * n);
        size_t k = 0;
        out[k++] = insn(BPF_LD | BPF_IMM | BPF_DW, BPF_REG_0, 0, 0, (int32_t)lo);
        out[k++] = insn(0, 0, 0, 0, (int32_t)GS_MARK_HI);
        out[k++] = insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_2, BPF_REG_1, 0, 0);
        out[k++] = insn(BPF_ALU | BPF_AND | BPF_K, BPF_REG_2, 0, 0, 0xffff);
        out[k++] = insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_3, BPF_REG_1, 0, 0);
        out[k++] = insn(BPF_ALU | BPF_RSH | BPF_K, BPF_REG_3, 0, 0, 16);
        out[k++] = insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_4, BPF_REG_1, 4, 0);
        out[k++] = insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_5, BPF_REG_1, 8, 0);
        out[k++] = insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_2, 0, (int16_t)(1 + body), BPF_DEVCG_DEV_CHAR);
        out[k++] = insn(BPF_JMP | BPF_JSET | BPF_K, BPF_REG_3, 0, (int16_t)body,
                        (int32_t) ~(uint32_t)(BPF_DEVCG_ACC_READ | BPF_DEVCG_ACC_WRITE));
        for (size_t i = 0; i < n; i++) {
                out[k++] = insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_4, 0, 3, (int32_t)rules[i].major);
                out[k++] = insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_5, 0, 2, (int32_t)rules[i].minor);
                out[k++] = insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 1);
                out[k++] = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
        }
}

/*
 * If insns start with a prefix of ours, return its rules (malloc'd; *nrules may be 0 only if
 * the prefix has none) and its length; else *plen = 0.
 */
static int parse_prefix(const struct bpf_insn *insns, size_t n, struct gs_devrule **rules, size_t *nrules,
                        size_t *plen, struct gs_error *err)
{
        *rules = NULL;
        *nrules = 0;
        *plen = 0;
        if (n < GS_PREFIX_HEAD + 1 || insns[0].code != (BPF_LD | BPF_IMM | BPF_DW) ||
            insns[0].dst_reg != BPF_REG_0 || insns[0].src_reg != 0 || (uint32_t)insns[1].imm != GS_MARK_HI)
                return 0;
        uint32_t lo = (uint32_t)insns[0].imm;
        size_t cnt = lo & 0xffff;
        if (lo >> 16 != GS_PREFIX_VERSION || cnt > GS_CGROUP_MAX_RULES || prefix_len(cnt) >= n) {
                gs_log_warn("device program starts with an unknown gpuslice marker 0x%08x; treated as foreign", lo);
                return 0;
        }
        gs_autofree struct gs_devrule *v = calloc(cnt ? cnt : 1, sizeof(*v));
        gs_autofree struct bpf_insn *again = calloc(prefix_len(cnt), sizeof(*again));
        if (v == NULL || again == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        for (size_t i = 0; i < cnt; i++) {
                v[i].major = (unsigned)insns[GS_PREFIX_HEAD + GS_PREFIX_PER_RULE * i].imm;
                v[i].minor = (unsigned)insns[GS_PREFIX_HEAD + GS_PREFIX_PER_RULE * i + 1].imm;
        }
        build_prefix(v, cnt, again);
        if (memcmp(again, insns, prefix_len(cnt) * sizeof(*insns)) != 0) {
                gs_log_warn("device program has a gpuslice marker but a different prefix; treated as foreign");
                return 0;
        }
        *rules = gs_steal_ptr(&v);
        *nrules = cnt;
        *plen = prefix_len(cnt);
        return 0;
}

static void read_jit_harden(char *buf, size_t size)
{
        snprintf(buf, size, "?");
        gs_autofclose FILE *f = fopen("/proc/sys/net/core/bpf_jit_harden", "re");
        if (f != NULL && fgets(buf, (int)size, f) != NULL)
                buf[strcspn(buf, "\n")] = '\0';
}

/* Can these (old, xlated) instructions be loaded again behind our prefix? */
static int check_old_insns(uint32_t id, const struct bpf_insn *insns, size_t n, struct gs_error *err)
{
        char harden[16];
        if (n == 0)
                return gs_error_set(err, GS_EINVAL,
                                    "device program %u: the kernel gave no instructions (reading them needs "
                                    "CAP_SYS_ADMIN or CAP_BPF); %s",
                                    id, GS_NO_CGROUPS_HINT);
        bool zero = true;
        for (size_t i = 0; i < n && zero; i++) {
                static const struct bpf_insn z;
                zero = memcmp(&insns[i], &z, sizeof(z)) == 0;
        }
        if (zero) {
                read_jit_harden(harden, sizeof(harden));
                return gs_error_set(err, GS_EINVAL,
                                    "device program %u: its instructions read back as zeros: the kernel hides "
                                    "programs hardened by JIT constant blinding from dumps (net.core.bpf_jit_harden "
                                    "is %s now); have the runtime load it with net.core.bpf_jit_harden=0 (or 1, "
                                    "which spares privileged loaders), or %s",
                                    id, harden, GS_NO_CGROUPS_HINT);
        }
        for (size_t i = 0; i < n; i++) {
                const struct bpf_insn *p = &insns[i];
                uint8_t cls = BPF_CLASS(p->code);
                if (p->dst_reg > BPF_REG_10 || p->src_reg > BPF_REG_10) {
                        read_jit_harden(harden, sizeof(harden));
                        return gs_error_set(err, GS_EINVAL,
                                            "device program %u: instruction %zu uses the kernel's hidden register: "
                                            "the program was hardened by JIT constant blinding when it was loaded "
                                            "(net.core.bpf_jit_harden is %s now) and cannot be loaded again; have "
                                            "the runtime load it with net.core.bpf_jit_harden=0 (or 1, which spares "
                                            "privileged loaders), or %s",
                                            id, i, harden, GS_NO_CGROUPS_HINT);
                }
                if (p->code == (BPF_LD | BPF_IMM | BPF_DW)) {
                        if (i + 1 >= n)
                                return gs_error_set(err, GS_EINVAL,
                                                    "device program %u: truncated ld_imm64 at instruction %zu", id, i);
                        if (p->src_reg != 0)
                                return gs_error_set(err, GS_EINVAL,
                                                    "device program %u: instruction %zu loads a map or kernel object "
                                                    "(ld_imm64 src_reg %u); such programs cannot be rebuilt from "
                                                    "their dump; %s",
                                                    id, i, p->src_reg, GS_NO_CGROUPS_HINT);
                        i++;
                        continue;
                }
                if ((cls == BPF_JMP || cls == BPF_JMP32) && BPF_OP(p->code) == BPF_CALL)
                        return gs_error_set(err, GS_EINVAL,
                                            "device program %u: instruction %zu calls a helper or function; such "
                                            "programs cannot be rebuilt from their dump; %s",
                                            id, i, GS_NO_CGROUPS_HINT);
        }
        const struct bpf_insn *last = &insns[n - 1];
        uint8_t lcls = BPF_CLASS(last->code);
        if (!((lcls == BPF_JMP && (BPF_OP(last->code) == BPF_EXIT || BPF_OP(last->code) == BPF_JA)) ||
              (lcls == BPF_JMP32 && BPF_OP(last->code) == BPF_JA)))
                return gs_error_set(err, GS_EINVAL,
                                    "device program %u: last instruction (opcode 0x%02x) is not an exit or a jump; "
                                    "refusing to extend a program that was not read back whole",
                                    id, last->code);
        return 0;
}

/* One attached program: what we read and what we build. */
struct v2_prog {
        uint32_t id;
        int old_fd;
        int new_fd;            /* -1: nothing to do for this one */
        bool swapped;
};

struct v2_state {
        int cgfd;
        uint32_t attach_flags;
        size_t n;
        struct v2_prog *progs;
};

static void v2_state_release(struct v2_state *s)
{
        for (size_t i = 0; i < s->n; i++) {
                if (s->progs[i].old_fd >= 0)
                        close(s->progs[i].old_fd);
                if (s->progs[i].new_fd >= 0)
                        close(s->progs[i].new_fd);
        }
        free(s->progs);
        if (s->cgfd >= 0)
                close(s->cgfd);
        memset(s, 0, sizeof(*s));
        s->cgfd = -1;
}

static int perm_error(struct gs_error *err, int e, const char *what, const char *path)
{
        int r = gs_error_set(err, GS_ESYS,
                             "%s (cgroup %s): %s: the kernel, an LSM or a user namespace (LXC, Proxmox, "
                             "rootless) forbids inspecting device programs; %s",
                             what, path, strerror(e), GS_NO_CGROUPS_HINT);
        if (err != NULL)
                err->sys_errno = e;
        return r;
}

/*
 * Query the programs attached to the cgroup itself. *ids malloc'd. *unsupported: the kernel has
 * no BPF_PROG_QUERY / cgroup-bpf (then no device program can be attached either).
 */
static int v2_query(int cgfd, const char *path, uint32_t **ids, size_t *n, uint32_t *attach_flags,
                    bool *unsupported, struct gs_error *err)
{
        *ids = NULL;
        *n = 0;
        *unsupported = false;
        uint32_t cap = 64;
        for (int tries = 0; tries < 8; tries++) {
                gs_autofree uint32_t *v = calloc(cap, sizeof(*v));
                if (v == NULL)
                        return gs_error_set(err, GS_ENOMEM, "out of memory");
                union bpf_attr attr;
                memset(&attr, 0, sizeof(attr));
                attr.query.target_fd = (uint32_t)cgfd;
                attr.query.attach_type = BPF_CGROUP_DEVICE;
                attr.query.prog_ids = (uint64_t)(uintptr_t)v;
                attr.query.prog_cnt = cap;
                if (sys_bpf(BPF_PROG_QUERY, &attr) < 0) {
                        int e = errno;
                        if (e == ENOSPC) {
                                cap = attr.query.prog_cnt > cap ? attr.query.prog_cnt : cap * 2;
                                continue;
                        }
                        if (e == EPERM || e == EACCES)
                                return perm_error(err, e, "bpf_prog_query(BPF_CGROUP_DEVICE) failed", path);
                        if (e == ENOSYS || e == EINVAL) {
                                *unsupported = true;
                                return 0;
                        }
                        errno = e;
                        return gs_error_sys(err, "bpf_prog_query(BPF_CGROUP_DEVICE) on %s", path);
                }
                *attach_flags = attr.query.attach_flags;
                *n = attr.query.prog_cnt;
                *ids = gs_steal_ptr(&v);
                return 0;
        }
        return gs_error_set(err, GS_ESYS, "bpf_prog_query(BPF_CGROUP_DEVICE) on %s: the program list kept growing",
                            path);
}

/* Number of effective (own + inherited) device programs, or -1 if unknown. */
static long v2_query_effective(int cgfd)
{
        union bpf_attr attr;
        memset(&attr, 0, sizeof(attr));
        attr.query.target_fd = (uint32_t)cgfd;
        attr.query.attach_type = BPF_CGROUP_DEVICE;
        attr.query.query_flags = BPF_F_QUERY_EFFECTIVE;
        if (sys_bpf(BPF_PROG_QUERY, &attr) < 0)
                return -1;
        return attr.query.prog_cnt;
}

/* Open program id and read its xlated instructions (malloc'd). */
static int v2_fetch(uint32_t id, const char *path, int *fd_out, struct bpf_insn **insns, size_t *n,
                    struct gs_error *err)
{
        union bpf_attr attr;
        memset(&attr, 0, sizeof(attr));
        attr.prog_id = id;
        int fd = (int)sys_bpf(BPF_PROG_GET_FD_BY_ID, &attr);
        if (fd < 0) {
                int e = errno;
                char what[64];
                snprintf(what, sizeof(what), "bpf_prog_get_fd_by_id(%u) failed", id);
                if (e == EPERM || e == EACCES)
                        return perm_error(err, e, what, path);
                if (e == ENOENT)
                        return gs_error_set(err, GS_ESYS, "device program %u of %s went away while reading it", id,
                                            path);
                errno = e;
                return gs_error_sys(err, "%s", what);
        }
        gs_autoclose int pfd = fd;
        struct bpf_prog_info info;
        memset(&info, 0, sizeof(info));
        memset(&attr, 0, sizeof(attr));
        attr.info.bpf_fd = (uint32_t)pfd;
        attr.info.info_len = sizeof(info);
        attr.info.info = (uint64_t)(uintptr_t)&info;
        if (sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &attr) < 0) {
                int e = errno;
                if (e == EPERM || e == EACCES)
                        return perm_error(err, e, "bpf_obj_get_info_by_fd failed", path);
                errno = e;
                return gs_error_sys(err, "bpf_obj_get_info_by_fd(program %u)", id);
        }
        if (info.type != BPF_PROG_TYPE_CGROUP_DEVICE)
                return gs_error_set(err, GS_EINVAL, "program %u attached as a device program has type %u", id,
                                    info.type);
        uint32_t len = info.xlated_prog_len;
        size_t cnt = len / sizeof(struct bpf_insn);
        gs_autofree struct bpf_insn *v = calloc(cnt ? cnt : 1, sizeof(*v));
        if (v == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        if (cnt > 0) {
                memset(&info, 0, sizeof(info));
                info.xlated_prog_len = (uint32_t)(cnt * sizeof(struct bpf_insn));
                info.xlated_prog_insns = (uint64_t)(uintptr_t)v;
                memset(&attr, 0, sizeof(attr));
                attr.info.bpf_fd = (uint32_t)pfd;
                attr.info.info_len = sizeof(info);
                attr.info.info = (uint64_t)(uintptr_t)&info;
                if (sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &attr) < 0)
                        return gs_error_sys(err, "bpf_obj_get_info_by_fd(program %u)", id);
                if (info.xlated_prog_len != len)
                        return gs_error_set(err, GS_ESYS, "device program %u changed size while reading it", id);
        }
        *fd_out = gs_steal_fd(&pfd);
        *insns = gs_steal_ptr(&v);
        *n = cnt;
        return 0;
}

/* Last non-empty line of a verifier log. */
static const char *last_log_line(char *log)
{
        size_t len = strlen(log);
        while (len > 0 && (log[len - 1] == '\n' || log[len - 1] == ' '))
                log[--len] = '\0';
        char *nl = strrchr(log, '\n');
        return nl != NULL ? nl + 1 : log;
}

static int load_once(const struct bpf_insn *insns, size_t n, bool named, char *log, size_t log_size)
{
        union bpf_attr attr;
        memset(&attr, 0, sizeof(attr));
        attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
        attr.insns = (uint64_t)(uintptr_t)insns;
        attr.insn_cnt = (uint32_t)n;
        attr.license = (uint64_t)(uintptr_t)GS_PROG_LICENSE;
        if (named) {
                attr.expected_attach_type = BPF_CGROUP_DEVICE;
                memcpy(attr.prog_name, GS_PROG_NAME, sizeof(GS_PROG_NAME));
        }
        if (log != NULL) {
                log[0] = '\0';
                attr.log_buf = (uint64_t)(uintptr_t)log;
                attr.log_size = (uint32_t)log_size;
                attr.log_level = 1;
        }
        return (int)sys_bpf(BPF_PROG_LOAD, &attr);
}

/* Load a device program; on failure the error carries the verifier's last log line. */
static int v2_load(const struct bpf_insn *insns, size_t n, struct gs_error *err)
{
        bool named = true;
        int fd = load_once(insns, n, named, NULL, 0);
        if (fd < 0 && (errno == EINVAL || errno == E2BIG)) {
                /* kernels before 4.17 know neither the name nor expected_attach_type */
                named = false;
                fd = load_once(insns, n, named, NULL, 0);
        }
        if (fd >= 0)
                return fd;
        int e = errno;
        if (e == EPERM) {
                gs_error_set(err, GS_ESYS,
                             "bpf_prog_load(BPF_PROG_TYPE_CGROUP_DEVICE) failed: %s: loading BPF programs is not "
                             "permitted here (needs CAP_SYS_ADMIN or CAP_BPF; an LSM or a user namespace may "
                             "forbid it); %s",
                             strerror(e), GS_NO_CGROUPS_HINT);
                if (err != NULL)
                        err->sys_errno = e;
                return -1;
        }
        /* once more with the verifier's log, for its words */
        size_t log_size = 1u << 16;
        gs_autofree char *log = malloc(log_size);
        const char *why = "no verifier log";
        if (log != NULL) {
                fd = load_once(insns, n, named, log, log_size);
                if (fd >= 0) {
                        gs_log_warn("device program loaded only at the second try");
                        return fd;
                }
                if (log[0] != '\0')
                        why = last_log_line(log);
        }
        gs_error_set(err, GS_ESYS, "the kernel refused the rewritten device program: %s (verifier: %s)", strerror(e),
                     why);
        if (err != NULL)
                err->sys_errno = e;
        return -1;
}

static int v2_attach(int cgfd, int prog_fd, uint32_t flags, int replace_fd)
{
        union bpf_attr attr;
        memset(&attr, 0, sizeof(attr));
        attr.target_fd = (uint32_t)cgfd;
        attr.attach_bpf_fd = (uint32_t)prog_fd;
        attr.attach_type = BPF_CGROUP_DEVICE;
        attr.attach_flags = flags;
        if (replace_fd >= 0)
                attr.replace_bpf_fd = (uint32_t)replace_fd;
        return (int)sys_bpf(BPF_PROG_ATTACH, &attr);
}

static int v2_detach(int cgfd, int prog_fd)
{
        union bpf_attr attr;
        memset(&attr, 0, sizeof(attr));
        attr.target_fd = (uint32_t)cgfd;
        attr.attach_bpf_fd = (uint32_t)prog_fd;
        attr.attach_type = BPF_CGROUP_DEVICE;
        return (int)sys_bpf(BPF_PROG_DETACH, &attr);
}

/* Put to_fd where from_fd is attached. */
static int v2_swap(int cgfd, uint32_t attach_flags, int from_fd, int to_fd, bool no_replace, const char *path,
                   struct gs_error *err)
{
        if (!(attach_flags & BPF_F_ALLOW_MULTI)) {
                /* single-program mode: attaching with the same flags replaces the program */
                if (v2_attach(cgfd, to_fd, attach_flags, -1) < 0)
                        return gs_error_sys(err, "bpf_prog_attach(BPF_CGROUP_DEVICE) on %s", path);
                return 0;
        }
        if (!no_replace) {
                if (v2_attach(cgfd, to_fd, attach_flags | BPF_F_REPLACE, from_fd) == 0)
                        return 0;
                if (errno == ENOENT)
                        return gs_error_sys(err,
                                            "bpf_prog_attach(BPF_CGROUP_DEVICE, BPF_F_REPLACE) on %s (the old program "
                                            "was detached meanwhile, or is attached through a bpf_link, which "
                                            "gpuslice does not update)",
                                            path);
                if (errno != EINVAL)
                        return gs_error_sys(err, "bpf_prog_attach(BPF_CGROUP_DEVICE, BPF_F_REPLACE) on %s", path);
                gs_log_warn("BPF_F_REPLACE refused (kernel < 5.6?): attaching, then detaching");
        }
        if (v2_attach(cgfd, to_fd, attach_flags, -1) < 0)
                return gs_error_sys(err, "bpf_prog_attach(BPF_CGROUP_DEVICE) on %s", path);
        if (v2_detach(cgfd, from_fd) < 0) {
                int e = errno;
                v2_detach(cgfd, to_fd); /* back to how it was */
                errno = e;
                return gs_error_sys(err, "bpf_prog_detach(BPF_CGROUP_DEVICE) on %s%s", path,
                                    e == ENOENT ? " (is the old program attached through a bpf_link?)" : "");
        }
        return 0;
}

/* Open the cgroup, query and open every attached program. */
static int v2_open(const struct gs_cgroup *cg, struct v2_state *s, bool *unsupported, struct gs_error *err)
{
        memset(s, 0, sizeof(*s));
        s->cgfd = open_cgroup_dir(cg, err);
        if (s->cgfd < 0)
                return -1;
        gs_autofree uint32_t *ids = NULL;
        size_t n = 0;
        if (v2_query(s->cgfd, cg->path, &ids, &n, &s->attach_flags, unsupported, err) < 0)
                return -1;
        if (*unsupported || n == 0)
                return 0;
        s->progs = calloc(n, sizeof(*s->progs));
        if (s->progs == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        for (size_t i = 0; i < n; i++)
                s->progs[i] = (struct v2_prog){.id = ids[i], .old_fd = -1, .new_fd = -1};
        s->n = n;
        return 0;
}

/* Merge (old ∪ new, old order first). *out malloc'd. */
static int merge_rules(const struct gs_devrule *a, size_t na, const struct gs_devrule *b, size_t nb,
                       struct gs_devrule **out, size_t *nout, struct gs_error *err)
{
        struct gs_devrule *v = calloc(na + nb + 1, sizeof(*v));
        if (v == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        size_t n = 0;
        for (size_t i = 0; i < na; i++)
                if (!rule_in(v, n, a[i]))
                        v[n++] = a[i];
        for (size_t i = 0; i < nb; i++)
                if (!rule_in(v, n, b[i]))
                        v[n++] = b[i];
        *out = v;
        *nout = n;
        return 0;
}

/* Build and load the replacement of one program; p->new_fd stays -1 when it already allows all. */
static int v2_prepare(struct v2_prog *p, const char *path, const struct gs_devrule *rules, size_t n,
                      struct gs_error *err)
{
        gs_autofree struct bpf_insn *old = NULL;
        size_t nold = 0;
        if (v2_fetch(p->id, path, &p->old_fd, &old, &nold, err) < 0)
                return -1;
        if (check_old_insns(p->id, old, nold, err) < 0)
                return -1;
        gs_autofree struct gs_devrule *have = NULL;
        size_t nhave = 0, plen = 0;
        if (parse_prefix(old, nold, &have, &nhave, &plen, err) < 0)
                return -1;
        bool all = true;
        for (size_t i = 0; i < n && all; i++)
                all = rule_in(have, nhave, rules[i]);
        if (all && plen > 0) {
                gs_log_info("device program %u of %s already allows the %zu device(s)", p->id, path, n);
                return 0;
        }
        gs_autofree struct gs_devrule *merged = NULL;
        size_t nmerged = 0;
        if (merge_rules(have, nhave, rules, n, &merged, &nmerged, err) < 0)
                return -1;
        if (nmerged > GS_CGROUP_MAX_RULES)
                return gs_error_set(err, GS_EINVAL, "device program %u of %s: too many device rules (%zu, at most %d)",
                                    p->id, path, nmerged, GS_CGROUP_MAX_RULES);
        size_t body = nold - plen;
        size_t total = prefix_len(nmerged) + body;
        if (total > 1000000)
                return gs_error_set(err, GS_EINVAL, "device program %u of %s is too large (%zu instructions)", p->id,
                                    path, total);
        gs_autofree struct bpf_insn *prog = calloc(total, sizeof(*prog));
        if (prog == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        build_prefix(merged, nmerged, prog);
        memcpy(prog + prefix_len(nmerged), old + plen, body * sizeof(*prog));
        int fd = v2_load(prog, total, err);
        if (fd < 0)
                return gs_error_wrap(err, "device program %u of %s", p->id, path);
        p->new_fd = fd;
        gs_log_info("device program %u of %s: rebuilt with %zu rule(s) in front of %zu instruction(s)", p->id, path,
                    nmerged, body);
        return 0;
}

static int v2_allow(const struct gs_cgroup *cg, const struct gs_devrule *rules, size_t n, unsigned flags,
                    struct gs_error *err)
{
        struct v2_state s __attribute__((cleanup(v2_state_release))) = {.cgfd = -1};
        bool unsupported = false;
        if (v2_open(cg, &s, &unsupported, err) < 0)
                return -1;
        if (unsupported) {
                gs_log_info("cgroup v2 %s: this kernel has no BPF device programs; nothing to do", cg->path);
                return 0;
        }
        long eff = v2_query_effective(s.cgfd);
        if (eff > (long)s.n)
                gs_log_warn("cgroup v2 %s: %ld device program(s) inherited from parent cgroups also apply and are "
                            "left alone",
                            cg->path, eff - (long)s.n);
        if (s.n == 0) {
                gs_log_info("cgroup v2 %s: no device program attached, device access is not restricted by eBPF; "
                            "nothing to do",
                            cg->path);
                return 0;
        }
        if (n == 0)
                return 0;

        struct rlimit saved, inf = {RLIM_INFINITY, RLIM_INFINITY};
        bool restore = getrlimit(RLIMIT_MEMLOCK, &saved) == 0 && setrlimit(RLIMIT_MEMLOCK, &inf) == 0;
        int rc = 0;
        for (size_t i = 0; i < s.n && rc == 0; i++)
                rc = v2_prepare(&s.progs[i], cg->path, rules, n, err);
        if (restore)
                setrlimit(RLIMIT_MEMLOCK, &saved);
        if (rc < 0 || (flags & GS_CGROUP_DRY_RUN))
                return rc;

        bool no_replace = (flags & GS_CGROUP_NO_REPLACE) != 0;
        for (size_t i = 0; i < s.n; i++) {
                struct v2_prog *p = &s.progs[i];
                if (p->new_fd < 0)
                        continue;
                if (v2_swap(s.cgfd, s.attach_flags, p->old_fd, p->new_fd, no_replace, cg->path, err) < 0) {
                        /* put back the programs already swapped */
                        for (size_t j = 0; j < i; j++) {
                                struct v2_prog *q = &s.progs[j];
                                if (q->swapped &&
                                    v2_swap(s.cgfd, s.attach_flags, q->new_fd, q->old_fd, no_replace, cg->path, NULL) < 0)
                                        gs_log_err("could not put back device program %u on %s", q->id, cg->path);
                        }
                        return -1;
                }
                p->swapped = true;
                gs_log_info("cgroup v2 %s: device program %u replaced", cg->path, p->id);
        }
        return 0;
}

static int v2_list(const struct gs_cgroup *cg, struct gs_devrule **out, size_t *nout, struct gs_error *err)
{
        struct v2_state s __attribute__((cleanup(v2_state_release))) = {.cgfd = -1};
        bool unsupported = false;
        if (v2_open(cg, &s, &unsupported, err) < 0)
                return -1;
        gs_autofree struct gs_devrule *common = NULL;
        size_t ncommon = 0;
        for (size_t i = 0; i < s.n; i++) {
                gs_autofree struct bpf_insn *insns = NULL;
                size_t ninsns = 0;
                if (v2_fetch(s.progs[i].id, cg->path, &s.progs[i].old_fd, &insns, &ninsns, err) < 0)
                        return -1;
                gs_autofree struct gs_devrule *have = NULL;
                size_t nhave = 0, plen = 0;
                if (parse_prefix(insns, ninsns, &have, &nhave, &plen, err) < 0)
                        return -1;
                if (i == 0) {
                        common = gs_steal_ptr(&have);
                        ncommon = nhave;
                        continue;
                }
                size_t k = 0;
                for (size_t j = 0; j < ncommon; j++)
                        if (rule_in(have, nhave, common[j]))
                                common[k++] = common[j];
                ncommon = k;
        }
        if (ncommon == 0) {
                *out = NULL;
                *nout = 0;
                return 0;
        }
        *out = gs_steal_ptr(&common);
        *nout = ncommon;
        return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* API                                                                                         */
/* ------------------------------------------------------------------------------------------ */

int gs_cgroup_allow_ex(const struct gs_cgroup *cg, const struct gs_devrule *rules, size_t n, unsigned flags,
                       struct gs_error *err)
{
        if (cg == NULL)
                return gs_error_set(err, GS_EINVAL, "gs_cgroup_allow: no cgroup");
        if (check_rules(rules, n, err) < 0)
                return -1;
        switch (cg->version) {
        case GS_CGROUP_V1:
                return v1_allow(cg, rules, n, flags, err);
        case GS_CGROUP_V2:
                return v2_allow(cg, rules, n, flags, err);
        }
        return gs_error_set(err, GS_EINVAL, "unknown cgroup version %d", (int)cg->version);
}

int gs_cgroup_allow(const struct gs_cgroup *cg, const struct gs_devrule *rules, size_t n, struct gs_error *err)
{
        return gs_cgroup_allow_ex(cg, rules, n, 0, err);
}

int gs_cgroup_list_rules(const struct gs_cgroup *cg, struct gs_devrule **rules, size_t *n, struct gs_error *err)
{
        if (cg == NULL || rules == NULL || n == NULL)
                return gs_error_set(err, GS_EINVAL, "gs_cgroup_list_rules: invalid argument");
        *rules = NULL;
        *n = 0;
        switch (cg->version) {
        case GS_CGROUP_V1:
                return v1_list(cg, rules, n, err);
        case GS_CGROUP_V2:
                return v2_list(cg, rules, n, err);
        }
        return gs_error_set(err, GS_EINVAL, "unknown cgroup version %d", (int)cg->version);
}

int gs_cgroup_count_programs(const struct gs_cgroup *cg, size_t *n, struct gs_error *err)
{
        if (cg == NULL || n == NULL || cg->version != GS_CGROUP_V2)
                return gs_error_set(err, GS_EINVAL, "gs_cgroup_count_programs: needs a cgroup v2");
        gs_autoclose int cgfd = open_cgroup_dir(cg, err);
        if (cgfd < 0)
                return -1;
        gs_autofree uint32_t *ids = NULL;
        uint32_t flags;
        bool unsupported = false;
        if (v2_query(cgfd, cg->path, &ids, n, &flags, &unsupported, err) < 0)
                return -1;
        return 0;
}
