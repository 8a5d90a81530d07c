/*
 * The createContainer hooks a generated CDI spec names (`gpuslice cdi-hook ...`): the container work
 * of CDI (src/cdi describes the specs that name these hooks).
 *
 * The OCI runtime runs them in the container's mount namespace, before pivot_root (runc: in the
 * container's init, cwd = the rootfs, the host's / still visible), with the OCI state on stdin.
 * The rootfs is the bundle's root.path (config.json is the runtime's, not the image's); what lies
 * below it is hostile: every path in it is resolved inside it by fd (src/container/mount.c), and
 * ldconfig runs in the sandbox of src/container/ldconfig.c. Nothing is read from the environment,
 * which a runtime may have taken from the image.
 */
#include "runtime/cdi_hook.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/error.h"
#include "common/log.h"
#include "common/privilege.h"
#include "container/ldconfig.h"
#include "container/mount.h"
#include "runtime/oci.h"

struct hook_root {
        char rootfs[PATH_MAX];
        uid_t uid;
        gid_t gid;
};

/* The rootfs of the container the state on `state_fd` names, and its owner. */
static int hook_root(int state_fd, struct hook_root *h, struct gs_error *err)
{
        struct gs_oci_state st;
        struct gs_oci_config cfg;
        memset(&cfg, 0, sizeof(cfg));
        if (gs_oci_state_read(state_fd, &st, err) < 0)
                return -1;
        if (gs_oci_config_load(st.bundle, &cfg, err) < 0)
                return -1;
        int rv = 0;
        if (cfg.rootfs[0] != '/' || strlen(cfg.rootfs) >= sizeof(h->rootfs))
                rv = gs_error_set(err, GS_EINVAL, "invalid rootfs in %s/config.json: '%s'", st.bundle, cfg.rootfs);
        else
                memcpy(h->rootfs, cfg.rootfs, strlen(cfg.rootfs) + 1);
        gs_oci_config_release(&cfg);
        if (rv < 0)
                return -1;
        struct stat sb;
        if (stat(h->rootfs, &sb) < 0)
                return gs_error_sys(err, "rootfs %s", h->rootfs);
        if (!S_ISDIR(sb.st_mode))
                return gs_error_set(err, GS_EINVAL, "rootfs %s is not a directory", h->rootfs);
        h->uid = sb.st_uid;
        h->gid = sb.st_gid;
        gs_log_info("cdi-hook: container %s, rootfs %s (owner %u:%u)", st.id, h->rootfs, (unsigned)h->uid,
                    (unsigned)h->gid);
        return 0;
}

int gs_cdi_parse_link(const char *arg, char *buf, size_t len, const char **target, const char **link,
                      struct gs_error *err)
{
        const char *sep = strstr(arg, "::");
        if (sep == NULL)
                return gs_error_set(err, GS_EINVAL, "invalid --link '%s': expected TARGET::LINK", arg);
        if (strlen(arg) >= len)
                return gs_error_set(err, GS_EINVAL, "invalid --link '%.64s...': too long", arg);
        size_t tlen = (size_t)(sep - arg);
        memcpy(buf, arg, strlen(arg) + 1);
        buf[tlen] = '\0';
        *target = buf;
        *link = buf + tlen + 2;
        if (tlen == 0)
                return gs_error_set(err, GS_EINVAL, "invalid --link '%s': empty target", arg);
        if ((*link)[0] != '/')
                return gs_error_set(err, GS_EINVAL, "invalid --link '%s': the link must be an absolute path", arg);
        if (strcmp(*link, "/") == 0 || (*link)[strlen(*link) - 1] == '/')
                return gs_error_set(err, GS_EINVAL, "invalid --link '%s': the link must name a file", arg);
        return 0;
}

int gs_cdi_hook_create_symlinks(int state_fd, const char *const *links, size_t n, struct gs_error *err)
{
        char(*bufs)[PATH_MAX * 2 + 4] = calloc(n + 1, sizeof(*bufs));
        const char **targets = calloc(n + 1, sizeof(*targets));
        const char **paths = calloc(n + 1, sizeof(*paths));
        struct hook_root h;
        struct gs_rootfs r = {.fd = -1};
        int rv = -1;
        if (bufs == NULL || targets == NULL || paths == NULL) {
                gs_error_set(err, GS_ENOMEM, "out of memory");
                goto out;
        }
        for (size_t i = 0; i < n; i++)
                if (gs_cdi_parse_link(links[i], bufs[i], sizeof(bufs[i]), &targets[i], &paths[i], err) < 0)
                        goto out;
        if (hook_root(state_fd, &h, err) < 0)
                goto out;
        if (gs_caps_enter(GS_STAGE_MOUNT, err) < 0 || gs_rootfs_open(&r, h.rootfs, h.uid, h.gid, err) < 0)
                goto out;
        for (size_t i = 0; i < n; i++) {
                gs_log_info("cdi-hook: link %s -> %s in %s", paths[i], targets[i], h.rootfs);
                if (gs_rootfs_symlink(&r, targets[i], paths[i], err) < 0) {
                        gs_mount_rollback(&r);
                        goto out;
                }
        }
        gs_mount_commit(&r);
        rv = 0;
out:
        gs_rootfs_close(&r);
        gs_caps_enter(GS_STAGE_SHUTDOWN, NULL);
        free(bufs);
        free(targets);
        free(paths);
        return rv;
}

/* As configure: Ubuntu's /sbin/ldconfig is a wrapper script around ldconfig.real. The host's
 * file system is still the one at / here (before pivot_root). */
static const char *host_ldconfig(void)
{
        struct stat st;
        return stat("/sbin/ldconfig.real", &st) == 0 ? "@/sbin/ldconfig.real" : "@/sbin/ldconfig";
}

int gs_cdi_hook_update_ldcache(int state_fd, const char *const *folders, size_t n, struct gs_error *err)
{
        for (size_t i = 0; i < n; i++)
                if (folders[i][0] != '/')
                        return gs_error_set(err, GS_EINVAL, "invalid --folder '%s': must be an absolute path", folders[i]);
        struct hook_root h;
        if (hook_root(state_fd, &h, err) < 0)
                return -1;
        struct gs_ldconfig_opts lo = {
                .mntns_pid = 0,
                .rootfs = h.rootfs,
                .ldconfig = host_ldconfig(),
                .dirs = folders,
                .ndirs = n,
                .uid = h.uid,
                .gid = h.gid,
                .log_fd = -1,
        };
        int rv = 0;
        if (gs_caps_enter(GS_STAGE_LDCACHE, err) < 0 || gs_ldconfig_run(&lo, err) < 0)
                rv = -1;
        gs_caps_enter(GS_STAGE_SHUTDOWN, NULL);
        return rv;
}
