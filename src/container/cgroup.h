/*
 * Device cgroup rules for a container: allow character devices (GPU nodes) in the container's
 * cgroup, keeping what the runtime already allowed.
 *   v1: append "c MAJ:MIN rw" to <cgroup>/devices.allow.
 *   v2: BPF_CGROUP_DEVICE programs on the cgroup directory. The kernel ANDs every attached
 *       program, so a second program cannot widen access: each program attached to the cgroup is
 *       replaced by a copy of itself with a hand-written prefix that allows our devices first
 *       ("ours OR the runtime's rules"). See cgroup.c for the prefix layout, the checks made on
 *       the runtime's instructions and the atomic swap.
 * Cgroup discovery: from /proc/<pid>/cgroup and a mountinfo (hybrid hosts: a v1 devices
 * controller and a cgroup2 mount may both exist; v1 wins when the process has a devices line).
 */
#ifndef GS_CONTAINER_CGROUP_H
#define GS_CONTAINER_CGROUP_H

#include <stddef.h>
#include <sys/types.h>

#include <gpuslice/gpuslice.h>

struct gs_devrule {
        unsigned major, minor;
};

enum gs_cgroup_version { GS_CGROUP_V1 = 1, GS_CGROUP_V2 = 2 };

struct gs_cgroup {
        enum gs_cgroup_version version;
        char path[4096]; /* host path of the container's device cgroup directory */
};

/* Most rules gpuslice's v2 prefix carries (each rule is 4 instructions). */
#define GS_CGROUP_MAX_RULES 1024

/* Find the device cgroup of process `pid` (auto version, mounts from /proc/self/mountinfo). */
int gs_cgroup_find(pid_t pid, struct gs_cgroup *cg, struct gs_error *err);

/*
 * Same with choices: version 0 = auto (v1 if /proc/<pid>/cgroup has a devices line, else v2),
 * GS_CGROUP_V1 / GS_CGROUP_V2 = that one or an error. mountinfo_pid 0 = /proc/self/mountinfo,
 * else /proc/<mountinfo_pid>/mountinfo (e.g. the runtime's, as nvidia's supervised mode does).
 */
int gs_cgroup_find_version(pid_t pid, int version, pid_t mountinfo_pid, struct gs_cgroup *cg,
                           struct gs_error *err);

/* Allow read/write access to each char device in rules (idempotent). */
int gs_cgroup_allow(const struct gs_cgroup *cg, const struct gs_devrule *rules, size_t n, struct gs_error *err);

enum gs_cgroup_allow_flags {
        /* Check everything, change nothing. v1: devices.allow can be opened for writing.
         * v2: every attached program can be read and rewritten, and the new program passes the
         * verifier (it is loaded, never attached). */
        GS_CGROUP_DRY_RUN = 1u << 0,
        /* v2: do not use BPF_F_REPLACE; attach the new program, then detach the old one (what
         * happens by itself on kernels < 5.6). For tests. */
        GS_CGROUP_NO_REPLACE = 1u << 1,
};

/* gs_cgroup_allow with flags (enum gs_cgroup_allow_flags). */
int gs_cgroup_allow_ex(const struct gs_cgroup *cg, const struct gs_devrule *rules, size_t n,
                       unsigned flags, struct gs_error *err);

/*
 * The char devices explicitly allowed read/write, as a malloc'd array (free() it; NULL when
 * *n == 0).
 *   v1: the "c MAJ:MIN" entries of devices.list (exact numbers, access with r and w).
 *   v2: the rules of gpuslice's prefix that every attached program carries; programs without
 *       the prefix contribute nothing (their logic is not interpreted). No program: *n = 0.
 */
int gs_cgroup_list_rules(const struct gs_cgroup *cg, struct gs_devrule **rules, size_t *n,
                         struct gs_error *err);

/* v2: number of BPF_CGROUP_DEVICE programs attached to the cgroup itself (not inherited). */
int gs_cgroup_count_programs(const struct gs_cgroup *cg, size_t *n, struct gs_error *err);

#endif
