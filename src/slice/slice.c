/* A slice's host directory and the files the container gets from it (see slice.h). */
#include "slice/slice.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "common/name.h"
#include "common/path.h"
#include "common/strutil.h"
#include "common/unixsock.h"
#include "region/region.h"
#include "slice/live.h"
#include "vgpu/arbiter.h"
#include "vgpu/config.h"

#if defined(__x86_64__)
#define GS_MULTIARCH "x86_64-linux-gnu"
#elif defined(__aarch64__)
#define GS_MULTIARCH "aarch64-linux-gnu"
#elif defined(__powerpc64__)
#define GS_MULTIARCH "powerpc64le-linux-gnu"
#else
#define GS_MULTIARCH "unknown"
#endif

/* gpuslice.h */
bool gs_slice_requested(const struct gs_slice_opts *s)
{
        if (s->memory != NULL || s->compute != NULL)
                return true;
        for (int i = 0; i < GS_SLICE_MAX_DEVICES; i++)
                if (s->memory_dev[i] != NULL || s->compute_dev[i] != NULL)
                        return true;
        return false;
}

static bool readable_file(const char *p)
{
        struct stat st;
        return stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, R_OK) == 0;
}

int gs_slice_find_library(const char *configured, char *out, size_t len, struct gs_error *err)
{
        if (configured != NULL && *configured != '\0') {
                if (!gs_strlcpy(out, configured, len))
                        return gs_error_set(err, GS_EINVAL, "slice library path too long");
                if (!readable_file(out))
                        return gs_error_set(err, GS_ENOTFOUND, "slice library %s: not a readable file", out);
                return 0;
        }
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (n <= 0)
                return gs_error_sys(err, "readlink /proc/self/exe");
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash != NULL)
                *slash = '\0';
        static const char *const rel[] = {"/libgpuslice-vgpu.so", "/../lib/gpuslice/libgpuslice-vgpu.so",
                                          "/../lib/" GS_MULTIARCH "/gpuslice/libgpuslice-vgpu.so",
                                          "/../lib/" GS_MULTIARCH "/libgpuslice-vgpu.so", "/../lib/libgpuslice-vgpu.so"};
        for (size_t i = 0; i < GS_ARRAY_SIZE(rel); i++) {
                snprintf(out, len, "%s%s", exe, rel[i]);
                if (readable_file(out))
                        return 0;
        }
        return gs_error_set(err, GS_ENOTFOUND,
                            "libgpuslice-vgpu.so not found next to %s (set slice.library in the host config)", exe);
}

bool gs_slice_id_valid(const char *id)
{
        return gs_name_is_safe(id, 256);
}

/* Field 22 of /proc/<pid>/stat (clock ticks since boot); 0 if the process is gone. */
static unsigned long long start_time(pid_t pid)
{
        return gs_region_proc_start_time((int)pid);
}

/* Create `name` under dirfd with `data`, owned by uid:gid ((uid_t)-1: ours) and of `mode`. */
static int write_owned(int dirfd, const char *name, const char *data, size_t len, mode_t mode, uid_t uid, gid_t gid,
                       struct gs_error *err)
{
        gs_autoclose int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd < 0)
                return gs_error_sys(err, "create %s", name);

        for (size_t off = 0; off < len;) {
                ssize_t w = write(fd, data + off, len - off);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        return gs_error_sys(err, "write %s", name);
                off += (size_t)w;
        }
        if (fchmod(fd, mode) < 0)
                return gs_error_sys(err, "chmod %s", name);
        if (uid != (uid_t)-1 && fchown(fd, uid, gid) < 0) /* (last: then it is no longer ours) */
                return gs_error_sys(err, "chown %s", name);
        return 0;
}

static int write_at(int dirfd, const char *name, const char *data, size_t len, mode_t mode, struct gs_error *err)
{
        return write_owned(dirfd, name, data, len, mode, (uid_t)-1, (gid_t)-1, err);
}

/* `id` of the container (process.user) as the host sees it, through /proc/<pid>/uid_map or
 * gid_map ("inside outside count" lines); (unsigned)-1 where it is not mapped. */
static unsigned map_id(pid_t pid, const char *which, unsigned id)
{
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, which);
        FILE *f = fopen(path, "re");
        if (f == NULL)
                return (unsigned)-1;
        unsigned long in, out, count, r = (unsigned)-1;
        while (fscanf(f, "%lu %lu %lu", &in, &out, &count) == 3)
                if (id >= in && id - in < count) {
                        r = out + (id - in);
                        break;
                }
        fclose(f);
        return (unsigned)r;
}

/* Who owns the container's writable host files (its usage region and arbiter records; docs/
 * slicing.md): its process user and that user's group (the hook reads them from config.json;
 * processes of other users in the container use them through the group), as the host sees them;
 * else (unknown, or not mapped) its root, the owner of /proc/<pid>. */
static void host_ids(const struct gs_slice_opts *s, pid_t pid, uid_t *uid, gid_t *gid)
{
        char path[32];
        struct stat st;
        snprintf(path, sizeof(path), "/proc/%d", (int)pid);
        *uid = stat(path, &st) == 0 ? st.st_uid : 0;
        *gid = stat(path, &st) == 0 ? st.st_gid : 0;
        if (!s->user_set)
                return;
        unsigned u = map_id(pid, "uid_map", (unsigned)s->user_uid), g = map_id(pid, "gid_map", (unsigned)s->user_gid);
        if (u != (unsigned)-1 && g != (unsigned)-1) {
                *uid = (uid_t)u;
                *gid = (gid_t)g;
        }
}

/* Remove `name` under parentfd, recursively, never following a symlink; bounded depth. */
static void remove_tree(int parentfd, const char *name, int depth)
{
        int fd = openat(parentfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
                if (unlinkat(parentfd, name, 0) < 0 && errno != ENOENT)
                        gs_log_warn("cannot remove %s: %s", name, strerror(errno));
                return;
        }
        DIR *d = fdopendir(fd);
        if (d == NULL) {
                close(fd);
                return;
        }
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
                if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                        continue;
                if ((e->d_type == DT_DIR || e->d_type == DT_UNKNOWN) && depth < 8)
                        remove_tree(dirfd(d), e->d_name, depth + 1);
                else if (unlinkat(dirfd(d), e->d_name, 0) < 0)
                        gs_log_warn("cannot remove %s/%s: %s", name, e->d_name, strerror(errno));
        }
        closedir(d);
        if (unlinkat(parentfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
                gs_log_warn("cannot remove %s: %s", name, strerror(errno));
}

static int open_regions(const char *regions_dir, bool create, struct gs_error *err)
{
        if (create) {
                int made = gs_mkdir_p(regions_dir, 0755, err);
                if (made < 0)
                        return -1;
                close(made);
        }
        int fd = open(regions_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return gs_error_sys(err, "open %s", regions_dir);
        return fd;
}

/* The owner recorded in <regions>/<id>/owner: 1 alive (and the same process), 0 dead, -1 none. */
int gs_slice_owner_alive(int regfd, const char *id, pid_t *pid_out)
{
        pid_t pid;
        unsigned long long st;
        if (gs_slice_read_owner(regfd, id, &pid, &st) < 0)
                return -1;
        if (pid_out != NULL)
                *pid_out = pid;
        return start_time(pid) == st ? 1 : 0;
}

/* ---- the GPUs' arbiter directories (turn-taking between compute-limited slices) ---- */

static bool compute_limited(const struct gs_slice_opts *s)
{
        bool any = s->compute != NULL;
        for (int i = 0; i < GS_SLICE_MAX_DEVICES; i++)
                any = any || s->compute_dev[i] != NULL;
        return any && (s->compute_mode == NULL || strcmp(s->compute_mode, "off") != 0);
}

/* <regions_dir>/../arbiter */
static int arbiter_root(const char *regions, char *out, size_t len, struct gs_error *err)
{
        const char *slash = strrchr(regions, '/');
        size_t n = slash != NULL ? (size_t)(slash - regions) : 0;
        if (n + sizeof("/arbiter") > len)
                return gs_error_set(err, GS_EINVAL, "regions directory path too long");
        memcpy(out, regions, n);
        memcpy(out + n, "/arbiter", sizeof("/arbiter"));
        return 0;
}

/* The GPU's arbiter directory under the root: sticky and world-writable, ours (root's). */
static int open_gpu_arbiter(int rootfd, const char *uuid, bool create, struct gs_error *err)
{
        char name[GS_STR_LONG + 16];
        if (snprintf(name, sizeof(name), "gpuslice-gpu-%s", uuid) >= (int)sizeof(name) || !gs_name_is_safe(name, sizeof(name)))
                return gs_error_set(err, GS_EINVAL, "unusable GPU UUID for an arbiter directory: '%s'", uuid);
        if (create && mkdirat(rootfd, name, 01777) < 0 && errno != EEXIST)
                return gs_error_sys(err, "mkdir %s", name);
        int fd = openat(rootfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return gs_error_sys(err, "open %s", name);
        struct stat st;
        if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || fchmod(fd, 01777) < 0) {
                close(fd);
                return gs_error_set(err, GS_EFORMAT, "arbiter directory %s is not ours (owner, or not a directory)", name);
        }
        return fd;
}

/* The arbiter's host record of the slice on its i-th device (vgpu/arbiter.h): its share there
 * (basis points), class and mode, from the allocator's limits, never from the container. */
static int host_record(const struct gs_slice_limits *l, unsigned i, struct gs_arb_host *r, struct gs_error *err)
{
        memset(r, 0, sizeof(*r));
        r->magic = GS_ARB_HOST_MAGIC;
        const char *v = i < GS_SLICE_MAX_DEVICES && l->compute_dev[i][0] != '\0' ? l->compute_dev[i] : l->compute;
        double pct = *v != '\0' ? strtod(v, NULL) : 100.0;
        r->weight = pct >= 100.0 ? 10000u : pct <= 0.01 ? 1u : (uint32_t)(pct * 100.0 + 0.5);
        int prio = l->priority[0] != '\0' ? gs_vgpu_parse_priority(l->priority, false) : GS_ARB_PRIO_NORMAL;
        if (prio < 0)
                return gs_error_set(err, GS_EINVAL, "invalid slice priority '%s' (high, normal or low)", l->priority);
        r->prio = (uint32_t)prio;
        r->mode = strcmp(l->compute_mode, "share") == 0;
        return 0;
}

/* Write (replace) the host record `.host-<id>` in the GPU's arbiter directory gfd: root's, 0644. */
static int write_host_record(int gfd, const char *id, const struct gs_arb_host *r, struct gs_error *err)
{
        char name[GS_ARB_NAME_MAX + sizeof(GS_ARB_HOST_PREFIX)], tmp[sizeof(name) + 8];
        snprintf(name, sizeof(name), GS_ARB_HOST_PREFIX "%s", id);
        snprintf(tmp, sizeof(tmp), "%s.tmp", name);
        unlinkat(gfd, tmp, 0);
        if (write_at(gfd, tmp, (const char *)r, sizeof(*r), 0644, err) < 0)
                return -1;
        if (renameat(gfd, tmp, gfd, name) < 0) {
                unlinkat(gfd, tmp, 0);
                return gs_error_sys(err, "rename %s", name);
        }
        return 0;
}

/* For each of the container's GPUs (`devices`, comma-separated UUIDs): its arbiter directory and,
 * in it, a fresh record named after the container (anything there by that name is replaced),
 * the container's to write (owned by uid:gid, 0660), and beside it the slice's host record. */
static int make_arbiter_files(struct gs_slice_host *h, const struct gs_slice_opts *s, const char *devices, uid_t uid,
                              gid_t gid, struct gs_error *err)
{
        struct gs_slice_limits l;
        if (gs_slice_limits_from_opts(s, &l, err) < 0)
                return -1;
        int made = gs_mkdir_p(h->arb_root, 0755, err);
        if (made < 0)
                return -1;
        gs_autoclose int rootfd = made;
        static const char zero[64];
        for (const char *p = devices; p != NULL && *p != '\0' && h->narb < GS_MAX_GPUS;) {
                size_t n = strcspn(p, ",");
                if (n > 0 && n < GS_STR_LONG) {
                        char uuid[GS_STR_LONG];
                        memcpy(uuid, p, n);
                        uuid[n] = '\0';
                        gs_autoclose int gfd = open_gpu_arbiter(rootfd, uuid, true, err);
                        if (gfd < 0)
                                return -1;
                        struct gs_arb_host hr;
                        if (unlinkat(gfd, h->id, 0) < 0 && errno != ENOENT)
                                return gs_error_sys(err, "remove %s/gpuslice-gpu-%s/%s", h->arb_root, uuid, h->id);
                        if (host_record(&l, h->narb, &hr, err) < 0 || write_host_record(gfd, h->id, &hr, err) < 0 ||
                            write_owned(gfd, h->id, zero, sizeof(zero), 0660, uid, gid, err) < 0)
                                return -1;
                        memcpy(h->arb_uuid[h->narb++], uuid, n + 1);
                }
                p += n + (p[n] == ',');
        }
        return 0;
}

/* Remove the container's record (and its host record) from every GPU's arbiter directory. */
static void remove_arbiter_files(const char *arb_root, const char *id)
{
        char host[GS_ARB_NAME_MAX + sizeof(GS_ARB_HOST_PREFIX)];
        snprintf(host, sizeof(host), GS_ARB_HOST_PREFIX "%s", id);
        int fd = open(arb_root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return;
        DIR *d = fdopendir(fd);
        if (d == NULL) {
                close(fd);
                return;
        }
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
                if (strncmp(e->d_name, "gpuslice-gpu-", 13) != 0)
                        continue;
                gs_autoclose int gfd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (gfd >= 0 && unlinkat(gfd, id, 0) < 0 && errno != ENOENT)
                        gs_log_warn("cannot remove %s/%s/%s: %s", arb_root, e->d_name, id, strerror(errno));
                if (gfd >= 0)
                        unlinkat(gfd, host, 0);
        }
        closedir(d);
}

int gs_slice_update_arbiter(const char *regions_dir, int dirfd, const char *id, const struct gs_slice_limits *l,
                            struct gs_error *err)
{
        char arb[PATH_MAX], conf[8192];
        if (arbiter_root(regions_dir, arb, sizeof(arb), err) < 0)
                return -1;
        gs_autoclose int fd = openat(dirfd, "slice.conf", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        ssize_t n = fd < 0 ? -1 : read(fd, conf, sizeof(conf) - 1);
        if (n < 0)
                return 0; /* (no slice file: an exec slice, whose processes keep their own) */
        conf[n] = '\0';
        const char *d = strstr(conf, "\nGPUSLICE_DEVICES=");
        gs_autoclose int rootfd = open(arb, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (d == NULL || rootfd < 0)
                return 0;
        char host[GS_ARB_NAME_MAX + sizeof(GS_ARB_HOST_PREFIX)];
        snprintf(host, sizeof(host), GS_ARB_HOST_PREFIX "%s", id);
        d += strlen("\nGPUSLICE_DEVICES=");
        for (unsigned i = 0; *d != '\0' && *d != '\n' && i < GS_MAX_GPUS; i++) {
                size_t k = strcspn(d, ",\n");
                char uuid[GS_STR_LONG];
                if (k > 0 && k < sizeof(uuid)) {
                        memcpy(uuid, d, k);
                        uuid[k] = '\0';
                        struct gs_error ignore = {0};
                        gs_autoclose int gfd = open_gpu_arbiter(rootfd, uuid, false, &ignore);
                        struct gs_arb_host r;
                        struct stat st;
                        if (gfd >= 0 && fstatat(gfd, host, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                            (host_record(l, i, &r, err) < 0 || write_host_record(gfd, id, &r, err) < 0))
                                return -1;
                }
                d += k + (d[k] == ',');
        }
        return 0;
}

/* Cap mode through MPS: the GPU's client directory gs_configure chose (runtime/mps.h). */
static void find_mps_pipe(const struct gs_slice_opts *s, const char *devices, struct gs_slice_host *h)
{
        (void)devices;
        snprintf(h->mps_pipe, sizeof(h->mps_pipe), "%s", s->mps_dir != NULL ? s->mps_dir : "");
}

static int write_slice_conf(int dirfd, const struct gs_slice_opts *s, const char *devices,
                            const struct gs_slice_host *h, struct gs_error *err)
{
        char buf[8192];
        size_t n = 0;
#define ADD(...) n += (size_t)snprintf(buf + n, n < sizeof(buf) ? sizeof(buf) - n : 0, __VA_ARGS__)
        ADD("# Written by gpuslice for this container; read-only inside it.\n");
        ADD("GPUSLICE_SLICE_ENFORCED=1\n");
        ADD("GPUSLICE_REGION=%s\n", GS_SLICE_USAGE_PATH);
        if (devices != NULL && *devices != '\0')
                ADD("GPUSLICE_DEVICES=%s\n", devices);
        if (s->memory != NULL)
                ADD("GPUSLICE_MEMORY_LIMIT=%s\n", s->memory);
        for (int i = 0; i < GS_SLICE_MAX_DEVICES; i++)
                if (s->memory_dev[i] != NULL)
                        ADD("GPUSLICE_MEMORY_LIMIT_%d=%s\n", i, s->memory_dev[i]);
        if (s->compute != NULL)
                ADD("GPUSLICE_COMPUTE_LIMIT=%s\n", s->compute);
        for (int i = 0; i < GS_SLICE_MAX_DEVICES; i++)
                if (s->compute_dev[i] != NULL)
                        ADD("GPUSLICE_COMPUTE_LIMIT_%d=%s\n", i, s->compute_dev[i]);
        if (s->compute_mode != NULL)
                ADD("GPUSLICE_COMPUTE_MODE=%s\n", s->compute_mode);
        if (s->priority != NULL) {
                int prio = gs_vgpu_parse_priority(s->priority, false);
                if (prio < 0)
                        return gs_error_set(err, GS_EINVAL, "invalid slice priority '%s' (high, normal or low)", s->priority);
                ADD("GPUSLICE_PRIORITY=%s\n", gs_vgpu_priority_name(prio));
        }
        if (h->narb > 0)
                ADD("GPUSLICE_ARBITER_DIR=%s\nGPUSLICE_ARBITER_NAME=%s\n", GS_SLICE_ARBITER_DIR, h->id);
        if (h->mps_pipe[0] != '\0')
                ADD("GPUSLICE_MPS_PIPE_DIRECTORY=%s\n", h->mps_pipe);
        ADD("GPUSLICE_LIVE_LIMITS=%s\n", GS_SLICE_LIVE_PATH);
#undef ADD
        if (n >= sizeof(buf))
                return gs_error_set(err, GS_EINVAL, "slice configuration too long");
        return write_at(dirfd, "slice.conf", buf, n, 0444, err);
}

int gs_slice_prepare(const struct gs_slice_opts *s, pid_t owner_pid, const char *devices, struct gs_slice_host *h,
                     struct gs_error *err)
{
        memset(h, 0, sizeof(*h));
        h->dirfd = -1;
        const char *regions = s->regions_dir != NULL ? s->regions_dir : GS_SLICE_REGIONS_DIR;
        char pidid[32];
        const char *id = s->container_id;
        if (id == NULL) {
                snprintf(pidid, sizeof(pidid), "pid-%d", (int)owner_pid);
                id = pidid;
        }
        if (!gs_slice_id_valid(id))
                return gs_error_set(err, GS_EINVAL, "invalid container id for a slice: '%s'", id);
        if (gs_slice_find_library(s->vgpu_lib, h->lib, sizeof(h->lib), err) < 0)
                return -1;
        if (snprintf(h->dir, sizeof(h->dir), "%s/%s", regions, id) >= (int)sizeof(h->dir) ||
            arbiter_root(regions, h->arb_root, sizeof(h->arb_root), err) < 0)
                return gs_error_set(err, GS_EINVAL, "regions directory path too long");
        snprintf(h->id, sizeof(h->id), "%s", id);
        unsigned long long st = start_time(owner_pid);
        if (st == 0)
                return gs_error_set(err, GS_ENOTFOUND, "the container's process %d is gone", (int)owner_pid);

        gs_autoclose int regfd = open_regions(regions, true, err);
        if (regfd < 0)
                return -1;
        if (mkdirat(regfd, id, 0755) < 0) {
                if (errno != EEXIST)
                        return gs_error_sys(err, "mkdir %s", h->dir);
                pid_t was = 0;
                if (gs_slice_owner_alive(regfd, id, &was) == 1 && was == owner_pid) {
                        h->already = true;
                        gs_log_info("slice directory %s already set up for this container", h->dir);
                        return 0;
                }
                gs_log_info("replacing stale slice directory %s", h->dir);
                remove_tree(regfd, id, 0);
                if (mkdirat(regfd, id, 0755) < 0)
                        return gs_error_sys(err, "mkdir %s", h->dir);
        }
        h->created = true;
        h->dirfd = openat(regfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (h->dirfd < 0) {
                gs_error_sys(err, "open %s", h->dir);
                goto fail;
        }
        if (fchmod(h->dirfd, 0755) < 0) {
                gs_error_sys(err, "chmod %s", h->dir);
                goto fail;
        }
        char owner[64];
        int on = snprintf(owner, sizeof(owner), "%d %llu\n", (int)owner_pid, st);
        struct gs_slice_limits live;
        uid_t uid;
        gid_t gid;
        host_ids(s, owner_pid, &uid, &gid);
        if (write_at(h->dirfd, "owner", owner, (size_t)on, 0644, err) < 0 ||
            (compute_limited(s) && (find_mps_pipe(s, devices, h), make_arbiter_files(h, s, devices, uid, gid, err) < 0)) ||
            write_slice_conf(h->dirfd, s, devices, h, err) < 0 || gs_slice_limits_from_opts(s, &live, err) < 0 ||
            gs_slice_write_live(h->dirfd, &live, err) < 0 ||
            write_owned(h->dirfd, "usage", "", 0, 0660, uid, gid, err) < 0)
                goto fail;
        return 0;
fail:
        gs_slice_abort(h);
        return -1;
}

int gs_slice_prepare_exec(const struct gs_slice_opts *s, const char *id, struct gs_slice_host *h, struct gs_error *err)
{
        memset(h, 0, sizeof(*h));
        h->dirfd = -1;
        const char *regions = s->regions_dir != NULL ? s->regions_dir : GS_SLICE_REGIONS_DIR;
        if (!gs_slice_id_valid(id))
                return gs_error_set(err, GS_EINVAL, "invalid slice id '%s'", id);
        if (snprintf(h->dir, sizeof(h->dir), "%s/%s", regions, id) >= (int)sizeof(h->dir))
                return gs_error_set(err, GS_EINVAL, "regions directory path too long");
        snprintf(h->id, sizeof(h->id), "%s", id);
        pid_t me = getpid();
        unsigned long long st = start_time(me);
        gs_autoclose int regfd = open_regions(regions, true, err);
        if (regfd < 0)
                return -1;
        if (mkdirat(regfd, id, 0755) < 0) {
                if (errno != EEXIST || gs_slice_owner_alive(regfd, id, NULL) == 1)
                        return gs_error_sys(err, "mkdir %s", h->dir);
                remove_tree(regfd, id, 0); /* a dead exec's */
                if (mkdirat(regfd, id, 0755) < 0)
                        return gs_error_sys(err, "mkdir %s", h->dir);
        }
        h->created = true;
        h->dirfd = openat(regfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        char owner[64];
        int on = snprintf(owner, sizeof(owner), "%d %llu\n", (int)me, st);
        struct gs_slice_limits live;
        if (h->dirfd < 0 || fchmod(h->dirfd, 0755) < 0) {
                gs_error_sys(err, "open %s", h->dir);
                goto fail;
        }
        if (gs_slice_limits_from_opts(s, &live, err) < 0 || gs_slice_write_live(h->dirfd, &live, err) < 0 ||
            write_at(h->dirfd, "usage", "", 0, 0600, err) < 0 || write_at(h->dirfd, "owner", owner, (size_t)on, 0644, err) < 0)
                goto fail;
        return 0;
fail:
        gs_slice_abort(h);
        return -1;
}

int gs_slice_write_preload(struct gs_slice_host *h, const char *image, size_t len, struct gs_error *err)
{
        size_t liblen = strlen(GS_SLICE_LIB_PATH);
        /* already there (a line of its own)? */
        for (size_t i = 0; image != NULL && i + liblen <= len; i++)
                if ((i == 0 || image[i - 1] == '\n' || image[i - 1] == ' ' || image[i - 1] == '\t' || image[i - 1] == ':') &&
                    memcmp(image + i, GS_SLICE_LIB_PATH, liblen) == 0 &&
                    (i + liblen == len || strchr("\n \t:", image[i + liblen]) != NULL))
                        return write_at(h->dirfd, "ld.so.preload", image, len, 0444, err);
        gs_autofree char *buf = malloc(len + liblen + 2);
        if (buf == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        size_t n = 0;
        if (image != NULL && len > 0) {
                memcpy(buf, image, len);
                n = len;
                if (buf[n - 1] != '\n')
                        buf[n++] = '\n';
        }
        memcpy(buf + n, GS_SLICE_LIB_PATH, liblen);
        n += liblen;
        buf[n++] = '\n';
        return write_at(h->dirfd, "ld.so.preload", buf, n, 0444, err);
}

void gs_slice_abort(struct gs_slice_host *h)
{
        if (h->created) {
                char *slash = strrchr(h->dir, '/');
                if (slash != NULL) {
                        *slash = '\0';
                        int regfd = open(h->dir[0] != '\0' ? h->dir : "/", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (regfd >= 0) {
                                remove_tree(regfd, slash + 1, 0);
                                close(regfd);
                        }
                        *slash = '/';
                }
                if (h->narb > 0)
                        remove_arbiter_files(h->arb_root, h->id);
                h->narb = 0;
                h->created = false;
        }
        gs_slice_close(h);
}

void gs_slice_close(struct gs_slice_host *h)
{
        if (h->dirfd >= 0)
                close(h->dirfd);
        h->dirfd = -1;
}

int gs_slice_remove(const char *regions_dir, const char *id, struct gs_error *err)
{
        if (regions_dir == NULL)
                regions_dir = GS_SLICE_REGIONS_DIR;
        if (!gs_slice_id_valid(id))
                return gs_error_set(err, GS_EINVAL, "invalid container id: '%s'", id);
        char arb[PATH_MAX];
        if (arbiter_root(regions_dir, arb, sizeof(arb), err) < 0)
                return -1;
        remove_arbiter_files(arb, id);
        gs_autoclose int regfd = open(regions_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (regfd < 0)
                return errno == ENOENT ? 0 : gs_error_sys(err, "open %s", regions_dir);
        struct stat st;
        if (fstatat(regfd, id, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return 0;
        gs_log_info("removing slice directory %s/%s", regions_dir, id);
        remove_tree(regfd, id, 0);
        return 0;
}

unsigned gs_slice_sweep(const char *regions_dir)
{
        if (regions_dir == NULL)
                regions_dir = GS_SLICE_REGIONS_DIR;
        char arb[PATH_MAX];
        bool arb_ok = arbiter_root(regions_dir, arb, sizeof(arb), NULL) == 0;
        int regfd = open(regions_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (regfd < 0)
                return 0;
        DIR *d = fdopendir(regfd);
        if (d == NULL) {
                close(regfd);
                return 0;
        }
        unsigned removed = 0;
        time_t now = time(NULL);
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
                if (e->d_name[0] == '.')
                        continue;
                int alive = gs_slice_owner_alive(dirfd(d), e->d_name, NULL);
                if (alive == 1)
                        continue;
                struct stat st;
                if (alive < 0 && (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || now - st.st_mtime < 60))
                        continue; /* being made right now, perhaps */
                gs_log_info("sweeping slice directory %s/%s (its container is gone)", regions_dir, e->d_name);
                remove_tree(dirfd(d), e->d_name, 0);
                if (arb_ok)
                        remove_arbiter_files(arb, e->d_name);
                removed++;
        }
        closedir(d);
        return removed;
}

/* ------------------------------------------------------------------------------------------- */
/* The observer's view of a slice directory: its owner record and its labels.                  */

/* The pod's names as the CRI runtimes put them into config.json's annotations: CRI-O's keys,
 * then containerd's; then what the host gave the hook on its command line (a DRA claim's CDI
 * device: src/dra/prepare.c). Never the container's env (issue 31): the image and the pod
 * spec write that. */
static const struct {
        const char *label;
        const char *keys[2];
} label_keys[] = {
        {"namespace", {"io.kubernetes.pod.namespace", "io.kubernetes.cri.sandbox-namespace"}},
        {"pod", {"io.kubernetes.pod.name", "io.kubernetes.cri.sandbox-name"}},
        {"container", {"io.kubernetes.container.name", "io.kubernetes.cri.container-name"}},
        {"claim", {NULL, NULL}},
};

bool gs_slice_label_valid(const char *s)
{
        size_t n = strlen(s);
        if (n == 0 || n >= GS_SLICE_LABEL_MAX)
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || ((c == '-' || c == '.') && i > 0 && i + 1 < n)))
                        return false;
        }
        return true;
}

int gs_slice_write_labels(const char *regions_dir, const char *id, char *const *annotations, size_t n,
                          const struct gs_slice_labels *given, struct gs_error *err)
{
        if (regions_dir == NULL)
                regions_dir = GS_SLICE_REGIONS_DIR;
        if (!gs_slice_id_valid(id))
                return gs_error_set(err, GS_EINVAL, "invalid container id: '%s'", id);
        json_object *o = json_object_new_object();
        if (o == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        const char *from_host[] = {given ? given->ns : NULL, given ? given->pod : NULL, given ? given->container : NULL,
                                   given ? given->claim : NULL};
        int found = 0;
        for (size_t i = 0; i < GS_ARRAY_SIZE(label_keys); i++)
                for (size_t k = 0; k < 3; k++) {
                        const char *key = k < 2 ? label_keys[i].keys[k] : NULL;
                        const char *v = k == 2 ? from_host[i]
                                        : key != NULL && annotations != NULL ? gs_env_get(annotations, n, key) : NULL;
                        if (v != NULL && *v != '\0' && strlen(v) < GS_SLICE_LABEL_MAX) {
                                json_object_object_add(o, label_keys[i].label, json_object_new_string(v));
                                found++;
                                break;
                        }
                }
        int rc = 0;
        if (found > 0) {
                const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
                gs_autoclose int regfd = open(regions_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                gs_autoclose int dfd = regfd < 0 ? -1 : openat(regfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (dfd < 0)
                        rc = gs_error_sys(err, "open %s/%s", regions_dir, id);
                else {
                        /* Whole or not at all: a temporary file renamed over the old one. */
                        unlinkat(dfd, ".labels.tmp", 0);
                        rc = write_at(dfd, ".labels.tmp", text, strlen(text), 0644, err);
                        if (rc == 0 && renameat(dfd, ".labels.tmp", dfd, "labels") < 0)
                                rc = gs_error_sys(err, "rename %s/%s/labels", regions_dir, id);
                }
        }
        json_object_put(o);
        return rc;
}

/* Read at most `max` bytes of the regular file <id>/<name> under regfd (NUL-terminated). */
static ssize_t read_small(int regfd, const char *id, const char *name, char *buf, size_t max)
{
        char path[PATH_MAX];
        if (snprintf(path, sizeof(path), "%s/%s", id, name) >= (int)sizeof(path))
                return -1;
        gs_autoclose int fd = openat(regfd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size >= (off_t)max)
                return -1;
        size_t len = 0;
        while (len < max - 1) {
                ssize_t r = read(fd, buf + len, max - 1 - len);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        return -1;
                if (r == 0)
                        break;
                len += (size_t)r;
        }
        buf[len] = '\0';
        return (ssize_t)len;
}

int gs_slice_read_labels(int regfd, const char *id, struct gs_slice_labels *out)
{
        memset(out, 0, sizeof(*out));
        char buf[8192]; /* four names of < 254 bytes, each escaped at worst 6 times over */
        ssize_t len = read_small(regfd, id, "labels", buf, sizeof(buf));
        if (len < 0)
                return errno == ENOENT ? 0 : -1;
        json_tokener *tok = json_tokener_new();
        json_object *o = tok != NULL ? json_tokener_parse_ex(tok, buf, (int)len) : NULL;
        int rc = -1;
        if (o != NULL && json_tokener_get_error(tok) == json_tokener_success && json_object_is_type(o, json_type_object)) {
                char *dst[] = {out->ns, out->pod, out->container, out->claim};
                for (size_t i = 0; i < GS_ARRAY_SIZE(label_keys); i++) {
                        json_object *v;
                        if (json_object_object_get_ex(o, label_keys[i].label, &v) && json_object_is_type(v, json_type_string))
                                gs_strlcpy(dst[i], json_object_get_string(v), GS_SLICE_LABEL_MAX);
                }
                rc = 1;
        }
        json_object_put(o);
        if (tok != NULL)
                json_tokener_free(tok);
        return rc;
}

int gs_slice_read_owner(int regfd, const char *id, pid_t *pid, unsigned long long *start)
{
        char buf[64];
        long p;
        if (read_small(regfd, id, "owner", buf, sizeof(buf)) <= 0 || sscanf(buf, "%ld %llu", &p, start) != 2 ||
            p <= 0 || p > INT32_MAX)
                return -1;
        *pid = (pid_t)p;
        return 0;
}
