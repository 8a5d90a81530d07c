/*
 * gs_configure (configure.h: gs_configure_pipeline): the selected GPUs and the driver's files into a
 * container, everything or nothing.
 *
 * Stages (nvidia-container-cli's names, each with its own effective capabilities):
 *   detection   devices (procfs or the NVML helper) and driver files under the driver root
 *   device      --device selection;  mig-config / mig-monitor checks;  requirement  --require
 *   container   the container's owner and mount namespace
 *   mount       inside its mount namespace: /proc/driver/nvidia masked, binaries, libraries,
 *               links, firmware, IPC, device nodes, MIG caps (all journalled)
 *   slice       (when a GPU slice is asked for) the container's host directory, slice file and
 *               usage region; in the container: the interposer, slice file, region, ld.so.preload
 *   cgroup      device cgroup rules for every node made (unless --no-cgroups)
 *   ldcache     ldconfig in the sandbox
 * With no_gpu only the container and slice stages run (a slice for a container whose GPUs come
 * from elsewhere, e.g. a CDI spec).
 * A failure after the first mount rolls every mount and node back before returning.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "container/configure.h"

#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "common/path.h"
#include "common/privilege.h"
#include "common/strutil.h"
#include "container/cgroup.h"
#include "container/container.h"
#include "container/fail_inject.h"
#include "container/ldconfig.h"
#include "container/mount.h"
#include "driver/context.h"
#include "select/caps.h"
#include "slice/slice.h"

#ifndef PROC_SUPER_MAGIC
#define PROC_SUPER_MAGIC 0x9fa0
#endif

#define MAX_RULES 512

struct run {
        struct gs_context *ctx;
        const struct gs_configure_opts *o;
        gs_slice_mps_fn mps;      /* the slice's MPS choice (NULL: none) */
        const struct gs_device_info *dev;
        struct gs_driver_info drv;
        struct gs_selection sel;
        struct gs_container c;
        struct gs_rootfs r;
        bool rootfs_open;
        unsigned caps; /* expanded */
        struct gs_devrule rules[MAX_RULES];
        size_t nrules;
        struct gs_file_list done; /* MIG capability files already mounted */
        const char *compat_dir;   /* CUDA forward-compat dir for ldconfig, or NULL */
        unsigned long fail_after; /* test hook: fail before mount operation N (0 = never) */
        unsigned long ops;
        bool mounted;             /* the mount stage began: roll back on failure */
        struct gs_slice_host slice;
        bool slice_ready;         /* slice directory prepared */
};

static int fail(struct gs_error *err, const char *stage)
{
        if (err != NULL && err->stage == NULL)
                err->stage = stage;
        return -1;
}

/* Test hook (fail_inject.h: a test build's GPUSLICE_TEST_FAIL_AT=N): make the Nth mount operation
 * fail, to prove rollback. */
static int count_op(struct run *x, const char *what, struct gs_error *err)
{
        x->ops++;
        if (x->fail_after != 0 && x->ops >= x->fail_after)
                return gs_error_set(err, GS_EINVAL, "injected failure before %s (operation %lu)", what, x->fail_after);
        return 0;
}

static void host_path(const struct run *x, const char *in_root, char *out, size_t len)
{
        gs_context_host_path(x->ctx, in_root, out, len);
}

static bool wanted(const struct run *x, unsigned item_caps)
{
        return gs_caps_want(x->caps, item_caps);
}

static int add_rule(struct run *x, dev_t rdev, struct gs_error *err)
{
        for (size_t i = 0; i < x->nrules; i++)
                if (x->rules[i].major == major(rdev) && x->rules[i].minor == minor(rdev))
                        return 0;
        if (x->nrules == MAX_RULES)
                return gs_error_set(err, GS_EINVAL, "too many device nodes");
        x->rules[x->nrules++] = (struct gs_devrule){major(rdev), minor(rdev)};
        return 0;
}

static int bind(struct run *x, const char *src_in_root, const char *dst, enum gs_node_kind kind,
                unsigned long flags, struct gs_error *err)
{
        char src[PATH_MAX];
        host_path(x, src_in_root, src, sizeof(src));
        if (count_op(x, dst, err) < 0)
                return -1;
        gs_log_info("mounting %s at %s%s", src, x->c.rootfs, dst);
        return gs_mount_bind(&x->r, src, dst, kind, flags, err);
}

/* A device node: bind it (unless --no-devbind) and remember its rule for the cgroup. */
static int device(struct run *x, const char *node, struct gs_error *err)
{
        char src[PATH_MAX];
        struct stat st;
        host_path(x, node, src, sizeof(src));
        if (stat(src, &st) < 0)
                return gs_error_sys(err, "device %s", src);
        if (!S_ISCHR(st.st_mode))
                return gs_error_set(err, GS_EFORMAT, "invalid device node: %s", src);
        if (add_rule(x, st.st_rdev, err) < 0)
                return -1;
        if (x->o->no_devbind)
                return 0;
        return bind(x, node, node, GS_NODE_CHAR, GS_MNT_DEVNODE, err);
}

/* ModifyDeviceFiles: 1 -> 0, so NVML/CUDA in the container never mknod/chmod device nodes. */
static void patch_params(char *buf)
{
        char *p = strstr(buf, "ModifyDeviceFiles: ");
        if (p != NULL && p[19] == '1')
                p[19] = '0';
}

/* /proc/driver/nvidia: a tmpfs with params (patched), version, registry, and only the selected
 * GPUs' gpus/<busid> directories. */
static int mount_procfs_as_root(struct run *x, struct gs_error *err);

/* Our own tmpfs holds root-owned copies, as procfs does: nodes in it are made as root. */
static int mount_procfs(struct run *x, struct gs_error *err)
{
        uid_t u = x->r.uid;
        gid_t g = x->r.gid;
        x->r.uid = 0;
        x->r.gid = 0;
        int rc = mount_procfs_as_root(x, err);
        x->r.uid = u;
        x->r.gid = g;
        return rc;
}

static int mount_procfs_as_root(struct run *x, struct gs_error *err)
{
        const char *target = "/proc/driver/nvidia";
        if (!gs_rootfs_exists(&x->r, target)) {
                /* The container's /proc is a real procfs without the NVIDIA driver (the simulated
                 * driver root): cover /proc/driver instead so there is somewhere to mount. */
                struct statfs sf;
                int pfd = gs_open_in_root(x->r.fd, "/proc", O_PATH | O_DIRECTORY, NULL);
                bool procfs = pfd >= 0 && fstatfs(pfd, &sf) == 0 && sf.f_type == PROC_SUPER_MAGIC;
                if (pfd >= 0)
                        close(pfd);
                if (procfs) {
                        gs_log_warn("no /proc/driver/nvidia in the container's procfs: covering /proc/driver");
                        if (count_op(x, "/proc/driver", err) < 0 ||
                            gs_mount_tmpfs(&x->r, "/proc/driver", "mode=0555", MS_NODEV | MS_NOSUID | MS_NOEXEC, err) < 0)
                                return -1;
                }
        }
        if (count_op(x, target, err) < 0 ||
            gs_mount_tmpfs(&x->r, target, "mode=0555", MS_NODEV | MS_NOSUID | MS_NOEXEC, err) < 0)
                return -1;
        static const char *const files[] = {"params", "version", "registry"};
        for (size_t i = 0; i < GS_ARRAY_SIZE(files); i++) {
                char src[128], dst[128], buf[16384];
                snprintf(src, sizeof(src), "/proc/driver/nvidia/%s", files[i]);
                struct gs_error rerr = {0};
                ssize_t n = gs_read_in_root(gs_context_rootfd(x->ctx), src, buf, sizeof(buf), &rerr);
                if (n < 0) {
                        gs_log_warn("skipping %s: %s", src, rerr.msg);
                        continue;
                }
                if (i == 0)
                        patch_params(buf);
                snprintf(dst, sizeof(dst), "%s/%s", target, files[i]);
                if (count_op(x, dst, err) < 0 || gs_rootfs_write_file(&x->r, dst, buf, (size_t)n, 0444, err) < 0)
                        return -1;
        }
        for (unsigned i = 0; i < x->dev->ngpus; i++) {
                if (!gs_selection_uses_gpu(&x->sel, i))
                        continue;
                /* NVML's bus id has an 8-digit domain; procfs uses 4 digits. */
                char p8[128], p4[128];
                snprintf(p8, sizeof(p8), "/proc/driver/nvidia/gpus/%s", x->dev->gpus[i].bus_id);
                snprintf(p4, sizeof(p4), "/proc/driver/nvidia/gpus/%s", x->dev->gpus[i].bus_id + 4);
                char host[PATH_MAX];
                struct stat st;
                const char *p = p8;
                host_path(x, p8, host, sizeof(host));
                if (stat(host, &st) < 0) {
                        p = p4;
                        host_path(x, p4, host, sizeof(host));
                        if (stat(host, &st) < 0) {
                                gs_log_warn("no %s for GPU %u", p4, i);
                                continue;
                        }
                }
                if (bind(x, p, p, GS_NODE_DIR, GS_MNT_PROC, err) < 0)
                        return -1;
        }
        return 0;
}

static const char *base_of(const char *p)
{
        const char *b = strrchr(p, '/');
        return b != NULL ? b + 1 : p;
}

static int mount_files(struct run *x, const struct gs_file_list *l, const char *dir, struct gs_error *err)
{
        for (size_t i = 0; i < l->n; i++) {
                if (!wanted(x, l->v[i].caps))
                        continue;
                char dst[PATH_MAX];
                if (dir != NULL)
                        snprintf(dst, sizeof(dst), "%s/%s", dir, base_of(l->v[i].path));
                else
                        snprintf(dst, sizeof(dst), "%s", l->v[i].path);
                if (bind(x, l->v[i].path, dst, GS_NODE_FILE, GS_MNT_RO_LIB, err) < 0)
                        return -1;
        }
        return 0;
}

/* libcuda.so -> libcuda.so.1 style links next to the mounted libraries. */
static int make_links(struct run *x, struct gs_error *err)
{
        const struct gs_lib_link *links = gs_lib_links;
        for (size_t k = 0; k < gs_nlib_links; k++) {
                if (!(x->caps & links[k].caps))
                        continue;
                for (size_t i = 0; i < x->drv.libs.n; i++) {
                        const char *b = base_of(x->drv.libs.v[i].path);
                        if (!gs_str_has_prefix(b, links[k].lib))
                                continue;
                        char dst[PATH_MAX];
                        snprintf(dst, sizeof(dst), "%s/%s", x->c.libs_dir, links[k].link);
                        if (count_op(x, dst, err) < 0 ||
                            gs_rootfs_symlink(&x->r, links[k].target != NULL ? links[k].target : b, dst, err) < 0)
                                return -1;
                }
        }
        return 0;
}

static int mount_ipcs(struct run *x, struct gs_error *err)
{
        for (size_t i = 0; i < x->drv.ipcs.n; i++) {
                const struct gs_file *f = &x->drv.ipcs.v[i];
                if (!wanted(x, f->caps))
                        continue;
                char host[PATH_MAX];
                struct stat st;
                host_path(x, f->path, host, sizeof(host));
                if (lstat(host, &st) < 0)
                        continue;
                enum gs_node_kind kind = S_ISDIR(st.st_mode) ? GS_NODE_DIR : GS_NODE_SOCKET;
                if (bind(x, f->path, f->path, kind, GS_MNT_IPC, err) < 0)
                        return -1;
        }
        return 0;
}

static int mount_devices(struct run *x, struct gs_error *err)
{
        for (size_t i = 0; i < x->drv.ndevs; i++)
                if (wanted(x, x->drv.devs[i].caps) && device(x, x->drv.devs[i].path, err) < 0)
                        return -1;
        bool dev_style = gs_nvcaps_dev_style(x->ctx);
        for (unsigned i = 0; i < x->dev->ngpus; i++) {
                if (!gs_selection_uses_gpu(&x->sel, i))
                        continue;
                const struct gs_gpu *g = &x->dev->gpus[i];
                char node[64];
                snprintf(node, sizeof(node), "/dev/nvidia%u", g->minor);
                if (device(x, node, err) < 0)
                        return -1;
                bool mig_all = x->o->mig_config != NULL || x->o->mig_monitor != NULL;
                for (unsigned j = 0; j < g->nmigs && !mig_all; j++) {
                        if (!x->sel.mig[i][j])
                                continue;
                        char paths[2][256];
                        gs_mig_gi_access_path(g, &g->migs[j], paths[0], sizeof(paths[0]));
                        gs_mig_ci_access_path(g, &g->migs[j], paths[1], sizeof(paths[1]));
                        for (int k = 0; k < 2; k++) {
                                if (gs_file_list_contains(&x->done, paths[k]))
                                        continue; /* a GI shared by two selected CIs: once */
                                if (gs_file_list_add(&x->done, paths[k], 0, err) < 0)
                                        return -1;
                                uid_t u = x->r.uid;
                                gid_t gg = x->r.gid;
                                x->r.uid = 0; /* inside our /proc/driver/nvidia tmpfs */
                                x->r.gid = 0;
                                int brc = bind(x, paths[k], paths[k], GS_NODE_FILE, GS_MNT_PROC, err);
                                x->r.uid = u;
                                x->r.gid = gg;
                                if (brc < 0)
                                        return -1;
                                if (!dev_style)
                                        continue;
                                char capnode[128];
                                dev_t rdev;
                                if (gs_nvcaps_node(x->ctx, paths[k], capnode, sizeof(capnode), &rdev, err) < 0 ||
                                    device(x, capnode, err) < 0)
                                        return -1;
                        }
                }
        }
        static const char *const mig_files[2] = {"config", "monitor"};
        const char *mig_opts[2] = {x->o->mig_config, x->o->mig_monitor};
        bool caps_dir_done = false;
        for (int k = 0; k < 2; k++) {
                if (mig_opts[k] == NULL)
                        continue;
                if (!caps_dir_done) {
                        if (bind(x, GS_NV_CAPS_PROC, GS_NV_CAPS_PROC, GS_NODE_DIR, GS_MNT_PROC, err) < 0)
                                return -1;
                        if (dev_style && bind(x, GS_NV_CAPS_DEV_DIR, GS_NV_CAPS_DEV_DIR, GS_NODE_DIR,
                                              MS_NOSUID | MS_NOEXEC, err) < 0)
                                return -1;
                        caps_dir_done = true;
                }
                if (!dev_style)
                        continue;
                char path[128], capnode[128];
                dev_t rdev;
                snprintf(path, sizeof(path), GS_NV_CAPS_PROC "/mig/%s", mig_files[k]);
                if (gs_nvcaps_node(x->ctx, path, capnode, sizeof(capnode), &rdev, err) < 0 ||
                    add_rule(x, rdev, err) < 0)
                        return -1;
        }
        if (x->o->imex_channels != NULL) {
                char list[256];
                gs_strlcpy(list, x->o->imex_channels, sizeof(list));
                char *save = NULL;
                for (char *t = strtok_r(list, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
                        unsigned long long ch;
                        if (gs_parse_uint(t, (1u << 20) - 1, &ch) < 0)
                                return gs_error_set(err, GS_EINVAL, "invalid IMEX channel: %s", t);
                        char node[96];
                        snprintf(node, sizeof(node), "/dev/nvidia-caps-imex-channels/channel%llu", ch);
                        if (device(x, node, err) < 0)
                                return -1;
                }
        }
        return 0;
}

/* Leading decimal number of s (up to a non-digit); -1 if none. */
static long leading_number(const char *s)
{
        if (*s < '0' || *s > '9')
                return -1;
        return strtol(s, NULL, 10);
}

/*
 * CUDA forward compatibility: the image's /usr/local/cuda/compat/lib*.so.<major>... files.
 *   ldconfig (default): if any has a driver major strictly greater than the host's, its
 *                       directory is indexed by ldconfig first (nothing mounted);
 *   mount:              libs_dir/<name> links to each whose major differs from the host's, so
 *                       ldconfig picks the newest (nvidia-container-cli bind-mounts them; we
 *                       never mount a file that lives in the container: a link stays inside it);
 *   disabled:           ignored.
 */
static int cuda_compat(struct run *x, struct gs_error *err)
{
        if (x->o->compat_mode == GS_COMPAT_DISABLED || !(x->caps & GS_CAP_COMPUTE))
                return 0;
        long host_major = leading_number(x->dev->driver_version);
        const char *dir = "/usr/local/cuda/compat";
        DIR *d = gs_opendir_in_root(x->r.fd, dir, NULL);
        if (d == NULL)
                return 0;
        int rv = 0;
        struct dirent *e;
        while (rv == 0 && (e = readdir(d)) != NULL) {
                const char *so = strstr(e->d_name, ".so.");
                struct stat st;
                if (strncmp(e->d_name, "lib", 3) != 0 || so == NULL ||
                    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
                        continue;
                long major = leading_number(so + 4);
                if (major < 0)
                        continue;
                if (x->o->compat_mode == GS_COMPAT_LDCONFIG) {
                        if (major > host_major) {
                                gs_log_info("forward compatibility: %s/%s (driver %ld > host %ld)", dir, e->d_name,
                                            major, host_major);
                                x->compat_dir = dir;
                        }
                } else if (major != host_major) {
                        char target[PATH_MAX], dst[PATH_MAX];
                        snprintf(target, sizeof(target), "%s/%s", dir, e->d_name);
                        snprintf(dst, sizeof(dst), "%s/%s", x->c.libs_dir, e->d_name);
                        rv = count_op(x, dst, err) < 0 ? -1 : gs_rootfs_symlink(&x->r, target, dst, err);
                }
        }
        closedir(d);
        return rv;
}

static int do_mounts(struct run *x, struct gs_error *err)
{
        gs_container_pick_dirs(&x->c, x->r.fd);
        if (mount_procfs(x, err) < 0 || mount_files(x, &x->drv.bins, x->c.bins_dir, err) < 0 ||
            mount_files(x, &x->drv.libs, x->c.libs_dir, err) < 0 ||
            ((x->caps & GS_CAP_COMPAT32) && mount_files(x, &x->drv.libs32, x->c.libs32_dir, err) < 0) ||
            make_links(x, err) < 0 || mount_files(x, &x->drv.firmwares, NULL, err) < 0 || mount_ipcs(x, err) < 0 ||
            mount_devices(x, err) < 0 || cuda_compat(x, err) < 0)
                return -1;
        return 0;
}

static const char *default_ldconfig(void)
{
        struct stat st;
        return stat("/sbin/ldconfig.real", &st) == 0 ? "@/sbin/ldconfig.real" : "@/sbin/ldconfig";
}

/* detection, device, mig-config/mig-monitor, requirement: nothing in the container is touched
 * before these pass. */
static int stage_detect(struct run *x, struct gs_error *err)
{
        const struct gs_configure_opts *o = x->o;
        if (gs_caps_enter(GS_STAGE_INIT, err) < 0)
                return fail(err, "permission");
        x->dev = o->nrequires > 0 ? gs_devices(x->ctx, err) : gs_devices_basic(x->ctx, err);
        if (x->dev == NULL)
                return fail(err, err != NULL && (err->code == GS_EINIT || err->code == GS_ETIMEOUT || err->code == GS_EHELPER)
                                         ? "initialization"
                                         : "detection");
        if (gs_driver_discover(x->ctx, x->dev->driver_version, gs_caps_drvopts(x->caps, o->drvopts), &x->drv, err) < 0)
                return fail(err, "detection");
        if (gs_select_devices(o->devices, x->dev, &x->sel, err) < 0)
                return fail(err, "device");
        for (int k = 0; k < 2; k++) {
                const char *v = k == 0 ? o->mig_config : o->mig_monitor;
                const char *stage = k == 0 ? "mig-config" : "mig-monitor";
                if (v == NULL)
                        continue;
                if (strcasecmp(v, "all") != 0) {
                        gs_error_set(err, GS_EINVAL, "only 'all' devices are currently supported");
                        return fail(err, stage);
                }
                if (x->sel.nmigs > 0 && !x->sel.all) {
                        gs_error_set(err, GS_EINVAL, "cannot enable %s with specific MIG devices selected", stage);
                        return fail(err, stage);
                }
        }
        if (gs_require_check_all(o->requires, o->nrequires, x->dev, &x->sel, err) < 0)
                return fail(err, "requirement");
        return 0;
}

static void add_uuid(char *list, size_t len, const char *uuid)
{
        if (uuid[0] != '\0' && strlen(list) + strlen(uuid) + 2 <= len)
                strcat(strcat(list, list[0] != '\0' ? "," : ""), uuid);
}

/* slice (host side): the container's directory under the regions dir, its slice file (with the
 * selected devices' UUIDs, else the slice's own list (a CDI container's, from its device nodes):
 * the interposer's visible devices, as CUDA knows them: a selected MIG device by its MIG UUID,
 * its parent GPU's not being one CUDA shows; and each one's arbiter record) and usage region. */
static int stage_slice_prepare(struct run *x, struct gs_error *err)
{
        char uuids[GS_MAX_GPUS * (GS_STR_LONG + 1)] = "";
        for (unsigned i = 0; x->dev != NULL && i < x->dev->ngpus; i++) {
                const struct gs_gpu *g = &x->dev->gpus[i];
                bool migs = false;
                for (unsigned j = 0; j < g->nmigs && j < GS_MAX_MIGS; j++)
                        if (x->sel.mig[i][j]) {
                                add_uuid(uuids, sizeof(uuids), g->migs[j].uuid);
                                migs = true;
                        }
                if (gs_selection_uses_gpu(&x->sel, i) && (x->sel.gpu[i] || !migs))
                        add_uuid(uuids, sizeof(uuids), g->uuid);
        }
        /* none selected (CDI: the nodes in config.json): the GPUs the caller found in the nodes */
        if (uuids[0] == '\0' && x->o->slice.devices != NULL)
                snprintf(uuids, sizeof(uuids), "%s", x->o->slice.devices);
        pid_t owner = x->o->pid > 0 ? x->o->pid : getppid();
        /* slice.mps: a cap slice on one GPU may run through the GPU's MPS daemon (never an error). */
        struct gs_slice_opts so = x->o->slice;
        char mps_dir[PATH_MAX] = "", pidid[32];
        snprintf(pidid, sizeof(pidid), "pid-%d", (int)owner);
        if (x->mps != NULL)
                x->mps(x->ctx, x->dev, &so, uuids, so.container_id != NULL ? so.container_id : pidid, owner, mps_dir,
                       sizeof(mps_dir), NULL, 0);
        so.mps_dir = mps_dir[0] != '\0' ? mps_dir : NULL;
        if (gs_caps_enter(GS_STAGE_SLICE, err) < 0 || gs_slice_prepare(&so, owner, uuids, &x->slice, err) < 0)
                return fail(err, "slice");
        x->slice_ready = true;
        return 0;
}

static int slice_bind(struct run *x, const char *host, const char *dst, enum gs_node_kind kind, unsigned long flags,
                      struct gs_error *err)
{
        if (count_op(x, dst, err) < 0)
                return -1;
        gs_log_info("mounting %s at %s%s", host, x->c.rootfs, dst);
        return gs_mount_bind(&x->r, host, dst, kind, flags, err);
}

/* slice (in the container): the interposer, the slice file, the usage region, the live limits'
 * directory (read-only: the host replaces the file in it), the preload list that makes every
 * process load the interposer, and the GPUs' arbiter directories. */
static int mount_slice(struct run *x, struct gs_error *err)
{
        if (!x->slice_ready || x->slice.already)
                return 0;
        char image[65536], host[PATH_MAX];
        struct gs_error rerr = {0};
        ssize_t n = gs_read_in_root(x->r.fd, "/etc/ld.so.preload", image, sizeof(image), &rerr);
        if (n < 0 && rerr.sys_errno != ENOENT && rerr.code != GS_ENOTFOUND)
                return gs_error_set(err, rerr.code, "/etc/ld.so.preload: %s", rerr.msg);
        if (n >= (ssize_t)sizeof(image) - 1)
                return gs_error_set(err, GS_EFORMAT, "/etc/ld.so.preload: larger than %zu bytes", sizeof(image) - 2);
        if (gs_slice_write_preload(&x->slice, image, n > 0 ? (size_t)n : 0, err) < 0)
                return -1;
        static const struct {
                const char *name, *dst;
                enum gs_node_kind kind;
                unsigned long flags;
        } files[] = {
                {NULL, GS_SLICE_LIB_PATH, GS_NODE_FILE, GS_MNT_RO_LIB},
                {"slice.conf", GS_SLICE_FILE_PATH, GS_NODE_FILE, GS_MNT_PROC},
                {"usage", GS_SLICE_USAGE_PATH, GS_NODE_FILE, GS_MNT_IPC},
                {"live", GS_SLICE_LIVE_DIR, GS_NODE_DIR, GS_MNT_PROC},
                {"ld.so.preload", "/etc/ld.so.preload", GS_NODE_FILE, GS_MNT_PROC},
        };
        for (size_t i = 0; i < GS_ARRAY_SIZE(files); i++) {
                if (files[i].name == NULL)
                        snprintf(host, sizeof(host), "%s", x->slice.lib);
                else
                        snprintf(host, sizeof(host), "%s/%s", x->slice.dir, files[i].name);
                if (slice_bind(x, host, files[i].dst, files[i].kind, files[i].flags, err) < 0)
                        return -1;
        }
        /* Each GPU's arbiter directory read-only, and in it the container's own record read-write. */
        for (unsigned i = 0; i < x->slice.narb; i++) {
                char dst[PATH_MAX];
                snprintf(host, sizeof(host), "%s/gpuslice-gpu-%s", x->slice.arb_root, x->slice.arb_uuid[i]);
                snprintf(dst, sizeof(dst), "%s/gpuslice-gpu-%s", GS_SLICE_ARBITER_DIR, x->slice.arb_uuid[i]);
                if (slice_bind(x, host, dst, GS_NODE_DIR, GS_MNT_PROC, err) < 0)
                        return -1;
                size_t hn = strlen(host), dn = strlen(dst);
                snprintf(host + hn, sizeof(host) - hn, "/%s", x->slice.id);
                snprintf(dst + dn, sizeof(dst) - dn, "/%s", x->slice.id);
                if (slice_bind(x, host, dst, GS_NODE_FILE, GS_MNT_IPC, err) < 0)
                        return -1;
        }
        /* The GPU's MPS daemon (cap mode through MPS): its client directory (the control socket's
         * link and gpuslice's state file), read-only where it is on the host: connecting to a
         * socket needs no write access to its mount (measured), and nothing else of the daemon's
         * pipe directory is the container's to see. */
        if (x->slice.mps_pipe[0] != '\0' && slice_bind(x, x->slice.mps_pipe, x->slice.mps_pipe, GS_NODE_DIR, GS_MNT_PROC, err) < 0)
                return -1;
        return 0;
}

/* container, mount: enter its mount namespace, make every mount (journalled), come back. */
static int stage_mount(struct run *x, struct gs_error *err)
{
        const struct gs_configure_opts *o = x->o;
        if (gs_caps_enter(GS_STAGE_CONTAINER, err) < 0 || gs_container_open(&x->c, o->pid, o->rootfs, err) < 0)
                return fail(err, "container");
        if (gs_caps_enter(GS_STAGE_MOUNT, err) < 0 || gs_container_enter(&x->c, err) < 0 ||
            gs_rootfs_open(&x->r, o->rootfs, x->c.uid, x->c.gid, err) < 0)
                return fail(err, "mount");
        x->rootfs_open = true;
        x->mounted = true;
        if (!o->no_gpu && do_mounts(x, err) < 0)
                return fail(err, "mount");
        if (mount_slice(x, err) < 0)
                return fail(err, "slice");
        if (gs_container_leave(&x->c, err) < 0)
                return fail(err, "mount");
        return 0;
}

static int stage_cgroup(struct run *x, struct gs_error *err)
{
        struct gs_cgroup cg;
        if (gs_caps_enter(GS_STAGE_CGROUP, err) < 0 || count_op(x, "cgroup", err) < 0 ||
            gs_cgroup_find(x->o->pid > 0 ? x->o->pid : getppid(), &cg, err) < 0 ||
            gs_cgroup_allow(&cg, x->rules, x->nrules, err) < 0)
                return fail(err, "cgroup");
        return 0;
}

static int stage_ldcache(struct run *x, struct gs_error *err)
{
        /* The compat dir first: its newer libcuda must win over the host's. */
        const char *dirs[3];
        size_t ndirs = 0;
        if (x->compat_dir != NULL)
                dirs[ndirs++] = x->compat_dir;
        dirs[ndirs++] = x->c.libs_dir;
        if (x->caps & GS_CAP_COMPAT32)
                dirs[ndirs++] = x->c.libs32_dir;
        struct gs_ldconfig_opts lo = {
                .mntns_pid = x->o->pid,
                .rootfs = x->o->rootfs,
                .ldconfig = x->o->ldconfig != NULL ? x->o->ldconfig : default_ldconfig(),
                .dirs = dirs,
                .ndirs = ndirs,
                .uid = x->c.uid,
                .gid = x->c.gid,
                .no_pivot = x->o->no_pivot,
                .log_fd = -1,
        };
        if (gs_caps_enter(GS_STAGE_LDCACHE, err) < 0 || count_op(x, "ldconfig", err) < 0 ||
            gs_ldconfig_run(&lo, err) < 0)
                return fail(err, "ldcache");
        return 0;
}

static int run_stages(struct run *x, struct gs_error *err)
{
        const struct gs_configure_opts *o = x->o;
        bool gpu = !o->no_gpu;
        if (gpu && stage_detect(x, err) < 0)
                return -1;
        if (gs_slice_requested(&o->slice) && stage_slice_prepare(x, err) < 0)
                return -1;
        if (stage_mount(x, err) < 0)
                return -1;
        if (gpu && !o->no_cgroups && stage_cgroup(x, err) < 0)
                return -1;
        if (gpu && stage_ldcache(x, err) < 0)
                return -1;
        return 0;
}

/* Roll every mount back from inside the container's mount namespace. */
static void rollback(struct run *x)
{
        struct gs_error lerr = {0};
        gs_caps_enter(GS_STAGE_MOUNT, &lerr);
        if (gs_container_enter(&x->c, &lerr) == 0)
                gs_mount_rollback(&x->r);
        else
                gs_log_err("rollback impossible: %s", lerr.msg);
        gs_log_info("rolled back %lu operation(s)", x->ops);
}

int gs_configure_pipeline(struct gs_context *ctx, const struct gs_configure_opts *o, gs_slice_mps_fn mps,
                          struct gs_error *err)
{
        struct run *x = calloc(1, sizeof(*x));
        if (x == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        x->ctx = ctx;
        x->o = o;
        x->mps = mps;
        x->c.ns_fd = x->c.self_ns_fd = -1;
        x->slice.dirfd = -1;
        x->caps = gs_caps_expand(o->caps);
        x->fail_after = gs_fail_inject_at(); /* 0 unless a test build and GPUSLICE_TEST_FAIL_AT */

        int rv = run_stages(x, err);
        if (x->rootfs_open) {
                if (rv == 0)
                        gs_mount_commit(&x->r);
                else if (x->mounted)
                        rollback(x);
                gs_rootfs_close(&x->r);
        }
        if (rv != 0)
                gs_slice_abort(&x->slice);
        gs_slice_close(&x->slice);
        gs_container_close(&x->c);
        gs_caps_enter(GS_STAGE_SHUTDOWN, NULL);
        gs_driver_info_release(&x->drv);
        gs_file_list_release(&x->done);
        free(x);
        return rv;
}
