/* MIG capability files under /proc/driver/nvidia/capabilities and their /dev/nvidia-caps nodes. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/path.h"
#include "driver/context.h"

void gs_mig_caps_dir(const struct gs_gpu *gpu, char *buf, size_t len)
{
        snprintf(buf, len, GS_NV_CAPS_PROC "/gpu%u/mig", gpu->minor);
}

void gs_mig_gi_access_path(const struct gs_gpu *gpu, const struct gs_mig_device *mig, char *buf, size_t len)
{
        snprintf(buf, len, GS_NV_CAPS_PROC "/gpu%u/mig/gi%u/access", gpu->minor, mig->gi);
}

void gs_mig_ci_access_path(const struct gs_gpu *gpu, const struct gs_mig_device *mig, char *buf, size_t len)
{
        snprintf(buf, len, GS_NV_CAPS_PROC "/gpu%u/mig/gi%u/ci%u/access", gpu->minor, mig->gi, mig->ci);
}

bool gs_nvcaps_dev_style(struct gs_context *ctx)
{
        char buf[8192];
        if (gs_read_in_root(ctx->rootfd, "/proc/devices", buf, sizeof(buf), NULL) < 0)
                return false;
        for (char *line = strtok(buf, "\n"); line != NULL; line = strtok(NULL, "\n")) {
                unsigned maj;
                char name[64];
                if (sscanf(line, " %u %63s", &maj, name) == 2 && strcmp(name, "nvidia-caps") == 0)
                        return true;
        }
        return false;
}

int gs_nvcaps_node(struct gs_context *ctx, const char *proc_path, char *node, size_t len, dev_t *rdev,
                   struct gs_error *err)
{
        char buf[512];
        if (gs_read_in_root(ctx->rootfd, proc_path, buf, sizeof(buf), err) < 0)
                return -1;
        const char *p = strstr(buf, "DeviceFileMinor:");
        unsigned minor;
        if (p == NULL || sscanf(p, "DeviceFileMinor: %u", &minor) != 1)
                return gs_error_set(err, GS_EFORMAT, "%s: no DeviceFileMinor", proc_path);
        snprintf(node, len, GS_NV_CAPS_DEV_DIR "/nvidia-cap%u", minor);
        gs_autoclose int fd = -1;
        char canon[256];
        if (gs_path_resolve(ctx->rootfd, node, canon, sizeof(canon), false, &fd, err) < 0)
                return -1;
        struct stat st;
        if (fstat(fd, &st) < 0)
                return gs_error_sys(err, "stat %s", node);
        if (!S_ISCHR(st.st_mode))
                return gs_error_set(err, GS_EFORMAT, "%s is not a character device", node);
        *rdev = st.st_rdev;
        return 0;
}
