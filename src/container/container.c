#include "container/container.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "common/log.h"
#include "common/path.h"
#include "common/strutil.h"

int gs_container_open(struct gs_container *c, pid_t pid, const char *rootfs, struct gs_error *err)
{
        memset(c, 0, sizeof(*c));
        c->ns_fd = c->self_ns_fd = -1;
        if (rootfs == NULL || rootfs[0] != '/' || strcmp(rootfs, "/") == 0 || strspn(rootfs, "/") == strlen(rootfs))
                return gs_error_set(err, GS_EINVAL, "invalid rootfs directory");
        if (!gs_strlcpy(c->rootfs, rootfs, sizeof(c->rootfs)))
                return gs_error_set(err, GS_EINVAL, "invalid rootfs directory");
        c->pid = pid;
        struct stat st;
        if (pid > 0) {
                char p[64];
                snprintf(p, sizeof(p), "/proc/%d", (int)pid);
                if (stat(p, &st) < 0)
                        return gs_error_sys(err, "container process %d", (int)pid);
                c->uid = st.st_uid;
                c->gid = st.st_gid;
                snprintf(p, sizeof(p), "/proc/%d/ns/mnt", (int)pid);
                c->ns_fd = open(p, O_RDONLY | O_CLOEXEC);
                if (c->ns_fd < 0)
                        return gs_error_sys(err, "open %s", p);
                c->self_ns_fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
                if (c->self_ns_fd < 0) {
                        gs_error_sys(err, "open /proc/self/ns/mnt");
                        gs_container_close(c);
                        return -1;
                }
        } else {
                if (stat(rootfs, &st) < 0)
                        return gs_error_sys(err, "rootfs %s", rootfs);
                c->uid = st.st_uid;
                c->gid = st.st_gid;
        }
        gs_strlcpy(c->bins_dir, "/usr/bin", sizeof(c->bins_dir));
        gs_log_info("container pid %d, rootfs %s, owner %u:%u", (int)pid, rootfs, (unsigned)c->uid, (unsigned)c->gid);
        return 0;
}

void gs_container_close(struct gs_container *c)
{
        if (c->entered)
                gs_container_leave(c, NULL);
        if (c->ns_fd >= 0)
                close(c->ns_fd);
        if (c->self_ns_fd >= 0)
                close(c->self_ns_fd);
        c->ns_fd = c->self_ns_fd = -1;
}

int gs_container_enter(struct gs_container *c, struct gs_error *err)
{
        if (c->ns_fd < 0 || c->entered)
                return 0;
        if (setns(c->ns_fd, CLONE_NEWNS) < 0)
                return gs_error_sys(err, "cannot enter the mount namespace of process %d", (int)c->pid);
        c->entered = true;
        return 0;
}

int gs_container_leave(struct gs_container *c, struct gs_error *err)
{
        if (!c->entered)
                return 0;
        if (setns(c->self_ns_fd, CLONE_NEWNS) < 0)
                return gs_error_sys(err, "cannot return to our mount namespace");
        c->entered = false;
        return 0;
}

static bool is_dir_in(int rootfd, const char *p)
{
        int fd = gs_open_in_root(rootfd, p, O_PATH | O_DIRECTORY, NULL);
        if (fd < 0)
                return false;
        close(fd);
        return true;
}

void gs_container_pick_dirs(struct gs_container *c, int rootfd)
{
        struct gs_error e = {0};
        int fd = gs_open_in_root(rootfd, "/etc/debian_version", O_PATH, &e);
        bool debian = fd >= 0;
        if (!debian)
                gs_log_info("not a Debian-style rootfs (%s)", e.msg);
        if (fd >= 0)
                close(fd);
#if defined(__x86_64__)
        const char *multi = "/usr/lib/x86_64-linux-gnu", *multi32 = "/usr/lib/i386-linux-gnu";
#elif defined(__aarch64__)
        const char *multi = "/usr/lib/aarch64-linux-gnu", *multi32 = "/usr/lib/arm-linux-gnueabihf";
#else
        const char *multi = "/usr/lib/powerpc64le-linux-gnu", *multi32 = "/usr/lib32";
#endif
        gs_strlcpy(c->libs_dir, debian ? multi : "/usr/lib64", sizeof(c->libs_dir));
        if (debian)
                gs_strlcpy(c->libs32_dir, multi32, sizeof(c->libs32_dir));
        else if (is_dir_in(rootfd, "/usr/lib32"))
                gs_strlcpy(c->libs32_dir, "/usr/lib32", sizeof(c->libs32_dir));
        else
                gs_strlcpy(c->libs32_dir, "/usr/lib", sizeof(c->libs32_dir));
        gs_log_info("container dirs: libs %s, libs32 %s, bins %s", c->libs_dir, c->libs32_dir, c->bins_dir);
}
