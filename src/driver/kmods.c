/*
 * --load-kmods: load the NVIDIA kernel modules and create their device nodes under the driver
 * root, as nvidia-container-cli does before it looks for the driver. Failures are logged, not
 * fatal (the detection that follows reports what is really missing). Skipped inside a user
 * namespace, where neither modprobe nor mknod can work.
 *
 * Which nodes: /dev/nvidiactl (195:255); /dev/nvidia<minor> for each GPU the root's
 * /proc/driver/nvidia/gpus lists; /dev/nvidia-uvm and -tools (the nvidia-uvm major of the root's
 * /proc/devices, minors 0 and 1); /dev/nvidia-modeset (195:254) when the modeset module is loaded;
 * /dev/nvidia-caps/nvidia-cap<N> for each line of /proc/driver/nvidia-caps/mig-minors whose
 * capability file exists. Nodes that exist are left alone.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "common/path.h"
#include "common/strutil.h"
#include "driver/context.h"

static bool in_user_namespace(void)
{
        char buf[256] = "";
        FILE *f = fopen("/proc/self/uid_map", "re");
        if (f == NULL)
                return false;
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        unsigned a, b, len;
        return !(sscanf(buf, " %u %u %u", &a, &b, &len) == 3 && a == 0 && b == 0 && len == 4294967295u);
}

static void modprobe(const char *module)
{
        char sys[128];
        snprintf(sys, sizeof(sys), "/sys/module/%s", module);
        for (char *p = sys + 12; *p != '\0'; p++)
                if (*p == '-')
                        *p = '_';
        if (access(sys, F_OK) == 0)
                return; /* already loaded */
        pid_t pid = fork();
        if (pid == 0) {
                int fd = open("/dev/null", O_RDWR);
                if (fd >= 0) {
                        dup2(fd, 0);
                        dup2(fd, 1);
                        dup2(fd, 2);
                }
                char *const argv[] = {"modprobe", (char *)module, NULL};
                char *const envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
                execve("/sbin/modprobe", argv, envp);
                _exit(127);
        }
        int st = 0;
        if (pid > 0)
                waitpid(pid, &st, 0);
        if (pid < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
                gs_log_warn("modprobe %s failed", module);
        else
                gs_log_info("loaded kernel module %s", module);
}

static long proc_major(int rootfd, const char *name)
{
        char buf[8192];
        if (gs_read_in_root(rootfd, "/proc/devices", buf, sizeof(buf), NULL) < 0)
                return -1;
        for (char *line = buf; line != NULL && *line != '\0';) {
                unsigned maj;
                char n[64];
                if (sscanf(line, " %u %63s", &maj, n) == 2 && strcmp(n, name) == 0)
                        return maj;
                if (strncmp(line, "Block devices", 13) == 0)
                        break;
                line = strchr(line, '\n');
                if (line != NULL)
                        line++;
        }
        return -1;
}

/* mknod dir/name (in-root dir, created if missing) unless something is already there. */
static void node(int rootfd, const char *dir, const char *name, unsigned maj, unsigned min, mode_t mode)
{
        char canon[PATH_MAX];
        if (gs_path_resolve(rootfd, dir, canon, sizeof(canon), true, NULL, NULL) < 0)
                return;
        gs_autoclose int dfd = gs_open_in_root(rootfd, canon, O_PATH | O_DIRECTORY, NULL);
        if (dfd < 0) {
                gs_autoclose int parent = gs_open_in_root(rootfd, "/dev", O_PATH | O_DIRECTORY, NULL);
                const char *leaf = strrchr(canon, '/');
                if (parent < 0 || leaf == NULL || mkdirat(parent, leaf + 1, 0755) < 0)
                        return;
                dfd = gs_open_in_root(rootfd, canon, O_PATH | O_DIRECTORY, NULL);
                if (dfd < 0)
                        return;
        }
        struct stat st;
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
                return;
        if (mknodat(dfd, name, S_IFCHR | mode, makedev(maj, min)) < 0) {
                gs_log_warn("mknod %s/%s (%u:%u) failed: %s", canon, name, maj, min, strerror(errno));
                return;
        }
        fchmodat(dfd, name, mode, 0); /* umask-free */
        gs_log_info("created %s/%s (%u:%u)", canon, name, maj, min);
}

int gs_load_kmods(struct gs_context *ctx, struct gs_error *err)
{
        (void)err;
        if (in_user_namespace()) {
                gs_log_info("in a user namespace: not loading kernel modules");
                return 0;
        }
        modprobe("nvidia");
        modprobe("nvidia-uvm");
        modprobe("nvidia-modeset");
        int rootfd = ctx->rootfd;
        node(rootfd, "/dev", "nvidiactl", 195, 255, 0666);
        DIR *d = gs_opendir_in_root(rootfd, "/proc/driver/nvidia/gpus", NULL);
        if (d != NULL) {
                struct dirent *e;
                while ((e = readdir(d)) != NULL) {
                        if (e->d_name[0] == '.')
                                continue;
                        char path[PATH_MAX], buf[4096];
                        snprintf(path, sizeof(path), "/proc/driver/nvidia/gpus/%s/information", e->d_name);
                        const char *m = gs_read_in_root(rootfd, path, buf, sizeof(buf), NULL) >= 0 ? strstr(buf, "Device Minor:") : NULL;
                        unsigned minor;
                        if (m != NULL && sscanf(m, "Device Minor: %u", &minor) == 1 && minor < 255) {
                                char name[32];
                                snprintf(name, sizeof(name), "nvidia%u", minor);
                                node(rootfd, "/dev", name, 195, minor, 0666);
                        }
                }
                closedir(d);
        }
        long uvm = proc_major(rootfd, "nvidia-uvm");
        if (uvm > 0) {
                node(rootfd, "/dev", "nvidia-uvm", (unsigned)uvm, 0, 0666);
                node(rootfd, "/dev", "nvidia-uvm-tools", (unsigned)uvm, 1, 0666);
        }
        if (access("/sys/module/nvidia_modeset", F_OK) == 0)
                node(rootfd, "/dev", "nvidia-modeset", 195, 254, 0666);
        long caps = proc_major(rootfd, "nvidia-caps");
        char buf[16384];
        if (caps > 0 && gs_read_in_root(rootfd, "/proc/driver/nvidia-caps/mig-minors", buf, sizeof(buf), NULL) >= 0) {
                char *save = NULL;
                for (char *line = strtok_r(buf, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
                        char rel[128];
                        unsigned minor;
                        if (sscanf(line, "%127s %u", rel, &minor) != 2)
                                continue;
                        /* "gpu0/gi1/ci0/access" -> capabilities/gpu0/mig/gi1/ci0/access; "config" -> mig/config */
                        char capfile[256];
                        if (strncmp(rel, "gpu", 3) == 0) {
                                char *slash = strchr(rel, '/');
                                if (slash == NULL)
                                        continue;
                                *slash = '\0';
                                snprintf(capfile, sizeof(capfile), GS_NV_CAPS_PROC "/%s/mig/%s", rel, slash + 1);
                        } else {
                                snprintf(capfile, sizeof(capfile), GS_NV_CAPS_PROC "/mig/%s", rel);
                        }
                        gs_autoclose int cfd = gs_open_in_root(rootfd, capfile, O_PATH, NULL);
                        if (cfd < 0)
                                continue;
                        char name[32];
                        snprintf(name, sizeof(name), "nvidia-cap%u", minor);
                        node(rootfd, GS_NV_CAPS_DEV_DIR, name, (unsigned)caps, minor, 0444);
                }
        }
        return 0;
}
