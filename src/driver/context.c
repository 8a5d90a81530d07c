#include "driver/context.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "common/path.h"
#include "common/strutil.h"

const char *gs_version(void) { return GS_VERSION_STRING; }

static unsigned read_overflow_id(const char *path)
{
        unsigned v = 65534;
        FILE *f = fopen(path, "re");
        if (f != NULL) {
                if (fscanf(f, "%u", &v) != 1)
                        v = 65534;
                fclose(f);
        }
        return v;
}

struct gs_context *gs_context_new(const struct gs_config *cfg, struct gs_error *err)
{
        struct gs_config defaults = {.uid = (uid_t)-1, .gid = (gid_t)-1};
        if (cfg == NULL)
                cfg = &defaults;
        struct gs_context *ctx = calloc(1, sizeof(*ctx));
        if (ctx == NULL) {
                gs_error_set(err, GS_ENOMEM, "out of memory");
                return NULL;
        }
        ctx->rootfd = -1;
        const char *root = cfg->root != NULL && *cfg->root != '\0' ? cfg->root : "/";
        if (root[0] != '/') {
                gs_error_set(err, GS_EINVAL, "driver root must be an absolute path: %s", root);
                goto fail;
        }
        if (realpath(root, ctx->root) == NULL) {
                gs_error_sys(err, "driver root %s", root);
                goto fail;
        }
        ctx->rootfd = open(ctx->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (ctx->rootfd < 0) {
                gs_error_sys(err, "driver root %s", ctx->root);
                goto fail;
        }
        const char *ldc = cfg->ldcache != NULL && *cfg->ldcache != '\0' ? cfg->ldcache : "/etc/ld.so.cache";
        if (!gs_strlcpy(ctx->ldcache_path, ldc, sizeof(ctx->ldcache_path))) {
                gs_error_set(err, GS_EINVAL, "ldcache path too long");
                goto fail;
        }
        ctx->uid = cfg->uid;
        ctx->gid = cfg->gid;
        if (ctx->uid == (uid_t)-1)
                ctx->uid = geteuid() == 0 ? read_overflow_id("/proc/sys/kernel/overflowuid") : geteuid();
        if (ctx->gid == (gid_t)-1)
                ctx->gid = geteuid() == 0 ? read_overflow_id("/proc/sys/kernel/overflowgid") : getegid();
        ctx->nvml_timeout_ms = cfg->nvml_timeout_ms != 0 ? cfg->nvml_timeout_ms : GS_DEFAULT_NVML_TIMEOUT_MS;
        gs_log_info("driver root %s, ldcache %s, nvml helper uid %u gid %u, timeout %u ms", ctx->root,
                    ctx->ldcache_path, (unsigned)ctx->uid, (unsigned)ctx->gid, ctx->nvml_timeout_ms);
        return ctx;
fail:
        gs_context_free(ctx);
        return NULL;
}

void gs_context_free(struct gs_context *ctx)
{
        if (ctx == NULL)
                return;
        if (ctx->ldcache_loaded)
                gs_ldcache_close(&ctx->ldcache);
        if (ctx->rootfd >= 0)
                close(ctx->rootfd);
        free(ctx);
}

const char *gs_context_root(const struct gs_context *ctx) { return ctx->root; }

int gs_context_rootfd(const struct gs_context *ctx) { return ctx->rootfd; }

const struct gs_ldcache *gs_context_ldcache(struct gs_context *ctx, struct gs_error *err)
{
        if (ctx->ldcache_loaded)
                return &ctx->ldcache;
        gs_autoclose int fd = gs_open_in_root(ctx->rootfd, ctx->ldcache_path, O_RDONLY, err);
        if (fd < 0) {
                gs_error_wrap(err, "cannot read the dynamic linker cache under %s", ctx->root);
                return NULL;
        }
        if (gs_ldcache_open(&ctx->ldcache, fd, "", err) < 0) {
                if (err != NULL) {
                        char msg[GS_ERRMSG_MAX];
                        snprintf(msg, sizeof(msg), "%s (%s under %s)", err->msg, ctx->ldcache_path, ctx->root);
                        memcpy(err->msg, msg, sizeof(msg));
                }
                return NULL;
        }
        ctx->ldcache_loaded = true;
        return &ctx->ldcache;
}

/* First 64-bit cache entry whose key is exactly libnvidia-ml.so.1, resolved in the root. */
struct nvml_find {
        const struct gs_context *ctx;
        char path[PATH_MAX];
        bool found;
};

static int find_nvml_cb(void *arg, const char *key, const char *value, int32_t flags)
{
        (void)flags;
        struct nvml_find *f = arg;
        if (strcmp(key, "libnvidia-ml.so.1") != 0)
                return 0;
        if (gs_path_resolve(f->ctx->rootfd, value, f->path, sizeof(f->path), false, NULL, NULL) < 0)
                return 0; /* dangling entry: keep looking */
        f->found = true;
        return 1;
}

bool gs_nvml_library_path(struct gs_context *ctx, char *out, size_t len)
{
        struct nvml_find f = {.ctx = ctx};
        struct gs_error lerr = {0};
        const struct gs_ldcache *lc = gs_context_ldcache(ctx, &lerr);
        if (lc == NULL || gs_ldcache_foreach(lc, GS_LD_ARCH_HOST, find_nvml_cb, &f, &lerr) < 0 || !f.found)
                return false;
        return gs_strlcpy(out, f.path, len);
}

const struct gs_device_info *gs_devices(struct gs_context *ctx, struct gs_error *err)
{
        if (ctx->devices_loaded)
                return &ctx->devices;
        struct nvml_find f = {.ctx = ctx};
        struct gs_error lerr = {0};
        const struct gs_ldcache *lc = gs_context_ldcache(ctx, &lerr);
        if (lc != NULL && gs_ldcache_foreach(lc, GS_LD_ARCH_HOST, find_nvml_cb, &f, &lerr) < 0)
                f.found = false;
        if (!f.found)
                gs_log_warn("libnvidia-ml.so.1 not in the ldcache%s%s; letting the loader search",
                            lerr.msg[0] ? ": " : "", lerr.msg);
        else
                gs_log_info("using %s", f.path);
        if (gs_nvml_query(ctx, f.found ? f.path : NULL, &ctx->devices, err) < 0)
                return NULL;
        ctx->devices_loaded = true;
        return &ctx->devices;
}

const struct gs_device_info *gs_devices_requery(struct gs_context *ctx, struct gs_error *err)
{
        ctx->devices_loaded = false;
        return gs_devices(ctx, err);
}

void gs_context_host_path(const struct gs_context *ctx, const char *in_root, char *out, size_t len)
{
        if (strcmp(ctx->root, "/") == 0)
                snprintf(out, len, "%s", in_root);
        else
                snprintf(out, len, "%s%s", ctx->root, in_root);
}
