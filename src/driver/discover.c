/*
 * Driver file discovery: which libraries, binaries, IPC sockets, firmware files and control device
 * nodes of the NVIDIA driver exist under the driver root, in nvidia-container-cli's order.
 * Every lookup is resolved inside the root by fd (src/common/path.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "common/path.h"
#include "common/strutil.h"
#include "driver/context.h"
#include "driver/elf.h"
#include "driver/ldcache.h"

#define NV_DEVICE_MAJOR 195
#define NV_CTL_MINOR 255
#define NV_MODESET_MINOR 254

struct libspec {
        const char *name; /* base name, prefix-matched against ldcache keys */
        unsigned caps;
        unsigned need_opts;   /* include only when these driver options are set */
        unsigned reject_opts; /* exclude when any of these driver options is set */
};

/* nvidia-container-cli's lists, in its order: utility, compute, video, graphics, GLVND (or the
 * legacy GL names with no-glvnd), ngx. */
static const struct libspec libraries[] = {
        {"libnvidia-ml.so", GS_CAP_UTILITY, 0, 0},
        {"libnvidia-cfg.so", GS_CAP_UTILITY, 0, 0},
        {"libnvidia-nscq.so", GS_CAP_UTILITY, 0, 0},
        {"libcuda.so", GS_CAP_COMPUTE, 0, 0},
        {"libcudadebugger.so", GS_CAP_COMPUTE, 0, 0},
        {"libnvidia-opencl.so", GS_CAP_COMPUTE, 0, 0},
        {"libnvidia-gpucomp.so", GS_CAP_COMPUTE, 0, 0},
        {"libnvidia-ptxjitcompiler.so", GS_CAP_COMPUTE, 0, 0},
        {"libnvidia-fatbinaryloader.so", GS_CAP_COMPUTE, 0, 0},
        {"libnvidia-allocator.so", GS_CAP_COMPUTE, 0, 0},
        {"libnvidia-compiler.so", GS_CAP_COMPUTE, 0, 0},
        {"libnvidia-pkcs11.so", GS_CAP_COMPUTE, 0, 0},
        {"libnvidia-pkcs11-openssl3.so", GS_CAP_COMPUTE, 0, 0},
        {"libnvidia-nvvm.so", GS_CAP_COMPUTE, 0, 0},
        {"libnvidia-tileiras.so", GS_CAP_COMPUTE, 0, 0},
        {"libvdpau_nvidia.so", GS_CAP_VIDEO, 0, 0},
        {"libnvidia-encode.so", GS_CAP_VIDEO, 0, 0},
        {"libnvidia-opticalflow.so", GS_CAP_VIDEO, 0, 0},
        {"libnvcuvid.so", GS_CAP_VIDEO, 0, 0},
        {"libnvidia-eglcore.so", GS_CAP_GRAPHICS, 0, 0},
        {"libnvidia-glcore.so", GS_CAP_GRAPHICS, 0, 0},
        {"libnvidia-tls.so", GS_CAP_GRAPHICS, 0, 0},
        {"libnvidia-glsi.so", GS_CAP_GRAPHICS, 0, 0},
        {"libnvidia-fbc.so", GS_CAP_GRAPHICS, 0, 0},
        {"libnvidia-ifr.so", GS_CAP_GRAPHICS, 0, 0},
        {"libnvidia-rtcore.so", GS_CAP_GRAPHICS, 0, 0},
        {"libnvoptix.so", GS_CAP_GRAPHICS, 0, 0},
        {"libGLX_nvidia.so", GS_CAP_GRAPHICS, 0, GS_DRV_NO_GLVND},
        {"libEGL_nvidia.so", GS_CAP_GRAPHICS, 0, GS_DRV_NO_GLVND},
        {"libGLESv2_nvidia.so", GS_CAP_GRAPHICS, 0, GS_DRV_NO_GLVND},
        {"libGLESv1_CM_nvidia.so", GS_CAP_GRAPHICS, 0, GS_DRV_NO_GLVND},
        {"libnvidia-glvkspirv.so", GS_CAP_GRAPHICS, 0, GS_DRV_NO_GLVND},
        {"libnvidia-cbl.so", GS_CAP_GRAPHICS, 0, GS_DRV_NO_GLVND},
        {"libGL.so", GS_CAP_GRAPHICS, GS_DRV_NO_GLVND, 0},
        {"libEGL.so", GS_CAP_GRAPHICS, GS_DRV_NO_GLVND, 0},
        {"libGLESv1_CM.so", GS_CAP_GRAPHICS, GS_DRV_NO_GLVND, 0},
        {"libGLESv2.so", GS_CAP_GRAPHICS, GS_DRV_NO_GLVND, 0},
        {"libnvidia-ngx.so", GS_CAP_NGX, 0, 0},
};
#define NLIBS GS_ARRAY_SIZE(libraries)

struct binspec {
        const char *name;
        unsigned caps;
        unsigned reject_opts;
};

static const struct binspec binaries[] = {
        {"nvidia-smi", GS_CAP_UTILITY, 0},
        {"nvidia-debugdump", GS_CAP_UTILITY, 0},
        {"nvidia-persistenced", GS_CAP_UTILITY, 0},
        {"nv-fabricmanager", GS_CAP_UTILITY, 0},
        {"nvidia-cuda-mps-control", GS_CAP_COMPUTE, GS_DRV_NO_MPS},
        {"nvidia-cuda-mps-server", GS_CAP_COMPUTE, GS_DRV_NO_MPS},
};

unsigned gs_library_caps(const char *basename)
{
        for (size_t i = 0; i < NLIBS; i++)
                if (gs_str_has_prefix(basename, libraries[i].name))
                        return libraries[i].caps;
        return 0;
}

static bool lib_wanted(const struct libspec *l, unsigned opts)
{
        return (l->need_opts & ~opts) == 0 && (l->reject_opts & opts) == 0;
}

/* One ldcache pass (64-bit or 32-bit): picks[i] is the chosen in-root path for libraries[i]. */
struct lib_pass {
        struct gs_context *ctx;
        const char *version;
        unsigned opts;
        bool want32;
        char *picks[NLIBS];
        struct gs_error *err;
};

/* Would nvidia-container-cli take this file? It must be an ELF object of the pass's architecture
 * whose name ends with the RM version; libnvidia-tls must carry the 2.3.99 ABI note. */
static bool select_library(struct lib_pass *p, const struct libspec *l, const char *path)
{
        const char *base = strrchr(path, '/');
        base = base != NULL ? base + 1 : path;
        if (!gs_str_has_suffix(base, p->version)) {
                gs_log_info("skipping %s (not version %s)", path, p->version);
                return false;
        }
        gs_autoclose int fd = gs_open_in_root(p->ctx->rootfd, path, O_RDONLY, NULL);
        if (fd < 0) {
                gs_log_warn("skipping %s (cannot open)", path);
                return false;
        }
        struct gs_elf_info ei;
        if (gs_elf_inspect(fd, &ei, NULL) < 0 || !gs_elf_matches_arch(&ei, p->want32)) {
                gs_log_info("skipping %s (not an ELF object for this architecture)", path);
                return false;
        }
        if (strcmp(l->name, "libnvidia-tls.so") == 0 && !gs_elf_abi_at_least(&ei, 2, 3, 99)) {
                gs_log_info("skipping %s (old TLS ABI)", path);
                return false;
        }
        return true;
}

static int lib_pass_cb(void *arg, const char *key, const char *value, int32_t flags)
{
        (void)flags;
        struct lib_pass *p = arg;
        for (size_t j = 0; j < NLIBS; j++) {
                const struct libspec *l = &libraries[j];
                if (!gs_str_has_prefix(key, l->name))
                        continue;
                if (!lib_wanted(l, p->opts))
                        return 0;
                char path[PATH_MAX];
                if (gs_path_resolve(p->ctx->rootfd, value, path, sizeof(path), false, NULL, NULL) < 0) {
                        gs_log_warn("skipping %s (cannot resolve %s)", key, value);
                        return 0;
                }
                if (p->picks[j] != NULL && strcmp(p->picks[j], path) == 0)
                        return 0;
                if (!select_library(p, l, path))
                        return 0;
                /* As nvidia-container-cli: a later valid entry replaces an earlier pick. */
                gs_log_info("selecting %s%s%s", path, p->picks[j] ? " over " : "", p->picks[j] ? p->picks[j] : "");
                char *copy = strdup(path);
                if (copy == NULL)
                        return gs_error_set(p->err, GS_ENOMEM, "out of memory");
                free(p->picks[j]);
                p->picks[j] = copy;
                return 0;
        }
        return 0;
}

static int lookup_libraries(struct gs_context *ctx, const char *version, unsigned opts, bool want32,
                            struct gs_file_list *out, struct gs_error *err)
{
        const struct gs_ldcache *lc = gs_context_ldcache(ctx, err);
        if (lc == NULL)
                return -1;
        struct lib_pass p = {.ctx = ctx, .version = version, .opts = opts, .want32 = want32, .err = err};
        uint32_t arch = want32 ? GS_LD_ARCH_HOST32 : GS_LD_ARCH_HOST;
        int rv = gs_ldcache_foreach(lc, arch, lib_pass_cb, &p, err);
        for (size_t j = 0; j < NLIBS; j++) {
                if (rv == 0 && p.picks[j] != NULL)
                        rv = gs_file_list_add(out, p.picks[j], libraries[j].caps, err);
                else if (rv == 0 && lib_wanted(&libraries[j], opts))
                        gs_log_warn("missing %slibrary %s", want32 ? "compat32 " : "", libraries[j].name);
                free(p.picks[j]);
        }
        return rv;
}

/* A driver binary: a regular ELF executable of this architecture inside the root. A wrapper
 * script (some hosts have /usr/bin/nvidia-smi exec the real one elsewhere) is passed over: its
 * target would not be in the container. */
static bool is_binary_in_root(int rootfd, const char *path, char *canon, size_t len)
{
        int fd = -1;
        if (gs_path_resolve(rootfd, path, canon, len, false, &fd, NULL) < 0)
                return false;
        struct stat st;
        bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
        close(fd);
        if (!ok)
                return false;
        gs_autoclose int rfd = gs_open_in_root(rootfd, canon, O_RDONLY | O_NOFOLLOW, NULL);
        struct gs_elf_info ei;
        if (rfd < 0 || gs_elf_inspect(rfd, &ei, NULL) < 0 || !gs_elf_matches_arch(&ei, false)) {
                gs_log_info("skipping %s: not an ELF executable for this machine (a wrapper script?)", canon);
                return false;
        }
        return true;
}

/* The first `name` in the search path (colon-separated; NULL: the caller's $PATH, else the usual
 * default) that is a driver binary inside the root; its canonical in-root path into canon.
 * Relative entries are skipped: they make no sense inside another root. */
static bool find_binary(struct gs_context *ctx, const char *search, const char *name, char *canon, size_t len)
{
        for (const char *dir = search;;) {
                size_t dlen = strcspn(dir, ":");
                char cand[PATH_MAX];
                int n = snprintf(cand, sizeof(cand), "%.*s/%s", (int)dlen, dlen ? dir : ".", name);
                if (n > 0 && (size_t)n < sizeof(cand) && cand[0] == '/' &&
                    is_binary_in_root(ctx->rootfd, cand, canon, len))
                        return true;
                if (dir[dlen] == '\0')
                        return false;
                dir += dlen + 1;
        }
}

static const char *binary_search_path(void)
{
        const char *env = secure_getenv("PATH");
        return env != NULL && *env != '\0' ? env : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
}

int gs_driver_find_binary(struct gs_context *ctx, const char *name, char *out, size_t len, struct gs_error *err)
{
        const char *search = binary_search_path();
        if (!find_binary(ctx, search, name, out, len))
                return gs_error_set(err, GS_ENOTFOUND, "%s not found under the driver root %s (searched $PATH: %s)",
                                    name, ctx->root, search);
        gs_log_info("selecting %s", out);
        return 0;
}

static int lookup_binaries(struct gs_context *ctx, unsigned opts, struct gs_file_list *out, struct gs_error *err)
{
        const char *search = binary_search_path();
        for (size_t i = 0; i < GS_ARRAY_SIZE(binaries); i++) {
                const struct binspec *b = &binaries[i];
                if (b->reject_opts & opts)
                        continue;
                char canon[PATH_MAX];
                if (!find_binary(ctx, search, b->name, canon, sizeof(canon))) {
                        gs_log_warn("missing binary %s", b->name);
                        continue;
                }
                if (gs_file_list_add(out, canon, b->caps, err) < 0)
                        return -1;
                gs_log_info("selecting %s", canon);
        }
        return 0;
}

static int lookup_ipc(struct gs_context *ctx, const char *path, unsigned caps, bool want_dir,
                      struct gs_file_list *out, struct gs_error *err)
{
        char canon[PATH_MAX];
        int fd = -1;
        if (gs_path_resolve(ctx->rootfd, path, canon, sizeof(canon), false, &fd, NULL) < 0) {
                gs_log_warn("missing ipc %s", path);
                return 0;
        }
        struct stat st;
        bool ok = fstat(fd, &st) == 0 && (want_dir ? S_ISDIR(st.st_mode) : S_ISSOCK(st.st_mode));
        close(fd);
        if (!ok) {
                gs_log_warn("skipping ipc %s (not a %s)", canon, want_dir ? "directory" : "socket");
                return 0;
        }
        gs_log_info("listing ipc %s", canon);
        return gs_file_list_add(out, canon, caps, err);
}

static int lookup_ipcs(struct gs_context *ctx, unsigned opts, struct gs_file_list *out, struct gs_error *err)
{
        if (!(opts & GS_DRV_NO_PERSISTENCED) &&
            lookup_ipc(ctx, "/var/run/nvidia-persistenced/socket", GS_CAP_UTILITY, false, out, err) < 0)
                return -1;
        if (!(opts & GS_DRV_NO_FABRICMANAGER) &&
            lookup_ipc(ctx, "/var/run/nvidia-fabricmanager/socket", GS_CAP_UTILITY, false, out, err) < 0)
                return -1;
        if (!(opts & GS_DRV_NO_MPS)) {
                const char *mps = secure_getenv("CUDA_MPS_PIPE_DIRECTORY");
                if (mps == NULL || mps[0] != '/')
                        mps = "/tmp/nvidia-mps";
                if (lookup_ipc(ctx, mps, GS_CAP_COMPUTE, true, out, err) < 0)
                        return -1;
        }
        return 0;
}

static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int lookup_firmwares(struct gs_context *ctx, const char *version, struct gs_file_list *out,
                            struct gs_error *err)
{
        char dir[PATH_MAX], canon[PATH_MAX];
        snprintf(dir, sizeof(dir), "/lib/firmware/nvidia/%s", version);
        gs_autoclose int fd = -1;
        if (gs_path_resolve(ctx->rootfd, dir, canon, sizeof(canon), false, &fd, NULL) < 0) {
                gs_log_info("no GSP firmware directory %s", dir);
                return 0;
        }
        DIR *d = gs_opendir_in_root(ctx->rootfd, canon, NULL);
        if (d == NULL)
                return 0;
        char *names[256];
        size_t n = 0;
        struct dirent *e;
        while ((e = readdir(d)) != NULL && n < GS_ARRAY_SIZE(names)) {
                if (!gs_str_has_prefix(e->d_name, "gsp") || !gs_str_has_suffix(e->d_name, ".bin"))
                        continue;
                if (e->d_type != DT_REG && e->d_type != DT_UNKNOWN)
                        continue;
                names[n] = strdup(e->d_name);
                if (names[n] != NULL)
                        n++;
        }
        closedir(d);
        qsort(names, n, sizeof(names[0]), cmp_str);
        int rv = 0;
        for (size_t i = 0; i < n; i++) {
                char path[PATH_MAX];
                if (rv == 0 && gs_path_join(path, sizeof(path), canon, names[i], err) == 0)
                        rv = gs_file_list_add(out, path, 0, err);
                free(names[i]);
        }
        return rv;
}

static int add_devnode(struct gs_driver_info *info, const char *path, dev_t rdev, unsigned caps,
                       struct gs_error *err)
{
        struct gs_devnode *v = realloc(info->devs, (info->ndevs + 1) * sizeof(*v));
        if (v == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        info->devs = v;
        char *copy = strdup(path);
        if (copy == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        info->devs[info->ndevs++] = (struct gs_devnode){.path = copy, .rdev = rdev, .caps = caps};
        return 0;
}

/* stat a device node inside the root: 1 found (char device), 0 absent, -1 error. */
static int stat_devnode(struct gs_context *ctx, const char *path, dev_t *rdev, struct gs_error *err)
{
        char canon[PATH_MAX];
        int fd = -1;
        if (gs_path_resolve(ctx->rootfd, path, canon, sizeof(canon), false, &fd, NULL) < 0)
                return 0;
        struct stat st;
        int r = fstat(fd, &st);
        close(fd);
        if (r < 0)
                return gs_error_sys(err, "stat %s", path);
        if (!S_ISCHR(st.st_mode))
                return gs_error_set(err, GS_EFORMAT, "%s under %s is not a character device", path, ctx->root);
        *rdev = st.st_rdev;
        return 1;
}

static int lookup_devices(struct gs_context *ctx, unsigned opts, struct gs_driver_info *info, struct gs_error *err)
{
        dev_t rdev;
        int r = stat_devnode(ctx, "/dev/nvidiactl", &rdev, err);
        if (r < 0)
                return -1;
        if (r == 0)
                return gs_error_set(err, GS_ENOTFOUND,
                                    "/dev/nvidiactl not found under %s: is the NVIDIA kernel driver loaded?", ctx->root);
        if (major(rdev) != NV_DEVICE_MAJOR || minor(rdev) != NV_CTL_MINOR)
                return gs_error_set(err, GS_EFORMAT, "/dev/nvidiactl under %s has device number %u:%u, expected %d:%d",
                                    ctx->root, major(rdev), minor(rdev), NV_DEVICE_MAJOR, NV_CTL_MINOR);
        if (add_devnode(info, "/dev/nvidiactl", rdev, 0, err) < 0)
                return -1;
        if (!(opts & GS_DRV_NO_UVM)) {
                static const char *const uvm[] = {"/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"};
                for (size_t i = 0; i < GS_ARRAY_SIZE(uvm); i++) {
                        r = stat_devnode(ctx, uvm[i], &rdev, err);
                        if (r < 0)
                                return -1;
                        if (r == 0)
                                gs_log_warn("missing device %s", uvm[i]);
                        else if (add_devnode(info, uvm[i], rdev, GS_CAP_COMPUTE, err) < 0)
                                return -1;
                }
        }
        if (!(opts & GS_DRV_NO_MODESET)) {
                r = stat_devnode(ctx, "/dev/nvidia-modeset", &rdev, err);
                if (r < 0)
                        return -1;
                if (r == 0)
                        gs_log_warn("missing device /dev/nvidia-modeset");
                else if (add_devnode(info, "/dev/nvidia-modeset", rdev, GS_CAP_DISPLAY, err) < 0)
                        return -1;
        }
        return 0;
}

int gs_driver_discover(struct gs_context *ctx, const char *version, unsigned opts,
                       struct gs_driver_info *out, struct gs_error *err)
{
        memset(out, 0, sizeof(*out));
        if (version == NULL || *version == '\0')
                return gs_error_set(err, GS_EINVAL, "unknown driver version");
        if (strchr(version, '/') != NULL)
                return gs_error_set(err, GS_EINVAL, "invalid driver version: %s", version);
        gs_strlcpy(out->version, version, sizeof(out->version));
        if (lookup_devices(ctx, opts, out, err) < 0 ||
            lookup_libraries(ctx, version, opts, false, &out->libs, err) < 0 ||
#if GS_LD_HAVE_ARCH32
            (!(opts & GS_DRV_NO_LIBS32) && lookup_libraries(ctx, version, opts, true, &out->libs32, err) < 0) ||
#endif
            lookup_binaries(ctx, opts, &out->bins, err) < 0 || lookup_ipcs(ctx, opts, &out->ipcs, err) < 0 ||
            (!(opts & GS_DRV_NO_GSP_FIRMWARE) && lookup_firmwares(ctx, version, &out->firmwares, err) < 0)) {
                gs_driver_info_release(out);
                return -1;
        }
        return 0;
}

void gs_driver_info_release(struct gs_driver_info *info)
{
        gs_file_list_release(&info->libs);
        gs_file_list_release(&info->libs32);
        gs_file_list_release(&info->bins);
        gs_file_list_release(&info->ipcs);
        gs_file_list_release(&info->firmwares);
        for (size_t i = 0; i < info->ndevs; i++)
                free(info->devs[i].path);
        free(info->devs);
        info->devs = NULL;
        info->ndevs = 0;
}
