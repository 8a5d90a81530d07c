/* gpuslice doctor: the driver (kernel module and NVML agree) and its device nodes. */
#include "doctor/internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/path.h"
#include "driver/context.h"

#define NV_MAJOR 195u
#define NVIDIACTL_MINOR 255u

/* A file of the driver's procfs: under the driver root, else (a containerised driver's root has
 * no /proc of its own) the host's. -1 when neither is readable. */
static ssize_t read_proc(const struct doctor *d, const char *path, char *buf, size_t len)
{
        if (d->ctx != NULL && gs_read_in_root(gs_context_rootfd(d->ctx), path, buf, len, NULL) >= 0)
                return (ssize_t)strlen(buf);
        if (d->ctx != NULL && strcmp(gs_context_root(d->ctx), "/") == 0)
                return -1;
        FILE *f = fopen(path, "re");
        if (f == NULL)
                return -1;
        size_t n = fread(buf, 1, len - 1, f);
        fclose(f);
        buf[n] = '\0';
        return (ssize_t)n;
}

/* The " --root R" to repeat in a fix, or "". */
static const char *root_arg(const struct doctor *d, char *buf, size_t len)
{
        const char *root = d->ctx != NULL ? gs_context_root(d->ctx) : "/";
        if (strcmp(root, "/") == 0)
                return "";
        snprintf(buf, len, " --root %s", root);
        return buf;
}

static void driver_fail_fix(struct doctor *d, struct gs_doctor_result *r, const char *kmod)
{
        switch (d->dev_err.code) {
        case GS_EINIT:
                doctor_fix(r, "install the driver's user-space libraries%s%s (libnvidia-ml.so.1, libcuda.so.1) and "
                           "run ldconfig; for a driver installed elsewhere give its root (--root, driver.root)",
                           kmod[0] != '\0' ? " of version " : "", kmod);
                break;
        case GS_ETIMEOUT:
                doctor_fix(r, "NVML hung: look for Xid errors in dmesg and check that nvidia-persistenced runs; "
                           "a slow node can be given longer with --nvml-timeout or driver.nvml-timeout");
                break;
        default:
                doctor_fix(r, "run nvidia-smi for NVML's own error and look for NVIDIA errors in dmesg");
                break;
        }
}

void doctor_check_driver(struct doctor *d, struct gs_doctor_result *r)
{
        if (d->ctx == NULL) {
                doctor_set(r, GS_DOCTOR_FAIL, "cannot open the driver root: %s", d->ctx_err.msg);
                doctor_fix(r, "give the root of the NVIDIA driver's files: --root or driver.root in the host "
                           "config (\"/\" for a driver installed on this host, e.g. /run/nvidia/driver for a "
                           "containerised one)");
                return;
        }
        char buf[4096], kmod[GS_STR_LONG] = "";
        if (read_proc(d, "/proc/driver/nvidia/version", buf, sizeof(buf)) < 0 ||
            gs_parse_nvrm_version(buf, kmod, sizeof(kmod)) < 0)
                kmod[0] = '\0';
        if (d->dev == NULL) {
                if (kmod[0] == '\0')
                        doctor_set(r, GS_DOCTOR_FAIL, "no NVIDIA driver: the kernel module is not loaded (no "
                                   "/proc/driver/nvidia/version) and NVML does not answer: %s", d->dev_err.msg);
                else
                        doctor_set(r, GS_DOCTOR_FAIL, "the NVIDIA kernel module %s is loaded, but NVML does not "
                                   "answer: %s", kmod, d->dev_err.msg);
                if (kmod[0] == '\0' && d->dev_err.code == GS_EINIT)
                        doctor_fix(r, "install the NVIDIA driver, then load it: sudo modprobe nvidia nvidia-uvm "
                                   "(or run gpuslice with --load-kmods); for a driver installed elsewhere give "
                                   "its root (--root, driver.root)");
                else
                        driver_fail_fix(d, r, kmod);
                return;
        }
        const struct gs_device_info *dev = d->dev;
        if (kmod[0] != '\0' && strcmp(kmod, dev->driver_version) != 0) {
                doctor_set(r, GS_DOCTOR_FAIL, "driver/library version mismatch: the kernel module is %s, the "
                           "libraries (NVML) are %s", kmod, dev->driver_version);
                doctor_fix(r, "reboot (or unload and reload the nvidia modules) so that the kernel module matches "
                           "the installed libraries, %s", dev->driver_version);
                return;
        }
        if (dev->ngpus == 0) {
                doctor_set(r, GS_DOCTOR_WARN, "NVIDIA driver %s (CUDA %s) answers but sees no GPU",
                           dev->driver_version, dev->cuda_version);
                doctor_fix(r, "check that the GPUs are on the bus (lspci -d 10de:) and bound to the nvidia driver, "
                           "not to vfio-pci");
                return;
        }
        doctor_set(r, GS_DOCTOR_OK, "NVIDIA driver %s (CUDA %s), %u GPU%s:", dev->driver_version, dev->cuda_version,
                   dev->ngpus, dev->ngpus == 1 ? "" : "s");
        for (unsigned i = 0; i < dev->ngpus; i++)
                doctor_append(r, "%s %u %s%s", i == 0 ? "" : ",", dev->gpus[i].index, dev->gpus[i].model,
                              dev->gpus[i].mig_enabled ? " (MIG mode)" : "");
        if (kmod[0] == '\0')
                doctor_append(r, "; no /proc/driver/nvidia/version: the kernel module's version was not compared");
}

/* ------------------------------------------------------------------------------------------ */
/* Device nodes */

struct nodes {
        struct gs_doctor_result *r;
        unsigned nbad;
};

static void problem(struct nodes *n, bool fail, const char *msg)
{
        n->nbad++;
        doctor_problem(n->r, fail ? GS_DOCTOR_FAIL : GS_DOCTOR_WARN, "%s", msg);
}

/* `path` (in the root) must be a character device maj:min. `what` names it for the user. */
static void expect_node(struct doctor *d, struct nodes *n, const char *path, unsigned maj, unsigned min,
                        const char *what, bool required)
{
        char canon[PATH_MAX], msg[PATH_MAX + 128];
        int fd = -1;
        if (gs_path_resolve(gs_context_rootfd(d->ctx), path, canon, sizeof(canon), false, &fd, NULL) < 0) {
                snprintf(msg, sizeof(msg), "%s%s is missing", path, what);
                problem(n, required, msg);
                return;
        }
        struct stat st;
        int rc = fstat(fd, &st);
        close(fd);
        if (rc < 0 || !S_ISCHR(st.st_mode)) {
                snprintf(msg, sizeof(msg), "%s%s is not a character device", path, what);
                problem(n, true, msg);
                return;
        }
        if (major(st.st_rdev) != maj || minor(st.st_rdev) != min) {
                snprintf(msg, sizeof(msg), "%s%s has device number %u:%u, not %u:%u", path, what,
                         major(st.st_rdev), minor(st.st_rdev), maj, min);
                problem(n, true, msg);
        }
}

/* The major number of a character device driver in the root's /proc/devices, or -1. */
static long proc_major(const struct doctor *d, const char *name)
{
        char buf[8192];
        if (read_proc(d, "/proc/devices", buf, sizeof(buf)) < 0)
                return -1;
        char *end = strstr(buf, "Block devices");
        if (end != NULL)
                *end = '\0';
        for (char *line = buf; line != NULL && *line != '\0';) {
                unsigned maj;
                char nm[64];
                if (sscanf(line, " %u %63s", &maj, nm) == 2 && strcmp(nm, name) == 0)
                        return maj;
                line = strchr(line, '\n');
                line = line != NULL ? line + 1 : NULL;
        }
        return -1;
}

/* Each GPU's /dev/nvidia<minor>, from NVML's answer, else from the root's procfs. */
static void expect_gpu_nodes(struct doctor *d, struct nodes *n)
{
        char path[64], what[64];
        if (d->dev != NULL) {
                for (unsigned i = 0; i < d->dev->ngpus; i++) {
                        snprintf(path, sizeof(path), "/dev/nvidia%u", d->dev->gpus[i].minor);
                        snprintf(what, sizeof(what), " (GPU %u)", d->dev->gpus[i].index);
                        expect_node(d, n, path, NV_MAJOR, d->dev->gpus[i].minor, what, true);
                }
                return;
        }
        DIR *dir = gs_opendir_in_root(gs_context_rootfd(d->ctx), "/proc/driver/nvidia/gpus", NULL);
        for (struct dirent *e; dir != NULL && (e = readdir(dir)) != NULL;) {
                char info[PATH_MAX], buf[4096];
                unsigned minor;
                if (e->d_name[0] == '.')
                        continue;
                snprintf(info, sizeof(info), "/proc/driver/nvidia/gpus/%s/information", e->d_name);
                const char *m = read_proc(d, info, buf, sizeof(buf)) >= 0 ? strstr(buf, "Device Minor:") : NULL;
                if (m == NULL || sscanf(m, "Device Minor: %u", &minor) != 1 || minor >= 255)
                        continue;
                snprintf(path, sizeof(path), "/dev/nvidia%u", minor);
                snprintf(what, sizeof(what), " (GPU at %.40s)", e->d_name);
                expect_node(d, n, path, NV_MAJOR, minor, what, true);
        }
        if (dir != NULL)
                closedir(dir);
}

/* The /dev/nvidia-caps nodes of every MIG device (when capabilities are device nodes). */
static void expect_mig_nodes(struct doctor *d, struct nodes *n)
{
        if (d->dev == NULL || !gs_nvcaps_dev_style(d->ctx))
                return;
        for (unsigned i = 0; i < d->dev->ngpus; i++) {
                const struct gs_gpu *g = &d->dev->gpus[i];
                for (unsigned j = 0; g->mig_enabled && j < g->nmigs; j++) {
                        char proc[PATH_MAX], node[PATH_MAX], what[64], msg[GS_ERRMSG_MAX + 64];
                        dev_t rdev;
                        struct gs_error err = {0};
                        gs_mig_gi_access_path(g, &g->migs[j], proc, sizeof(proc));
                        snprintf(what, sizeof(what), "MIG device %u:%u", g->index, g->migs[j].index);
                        for (int ci = 0; ci < 2; ci++) {
                                if (ci == 1)
                                        gs_mig_ci_access_path(g, &g->migs[j], proc, sizeof(proc));
                                if (gs_nvcaps_node(d->ctx, proc, node, sizeof(node), &rdev, &err) < 0) {
                                        snprintf(msg, sizeof(msg), "%s: %s", what, err.msg);
                                        problem(n, true, msg);
                                }
                        }
                }
        }
}

void doctor_check_devnodes(struct doctor *d, struct gs_doctor_result *r)
{
        if (d->ctx == NULL) {
                doctor_set(r, GS_DOCTOR_SKIP, "no driver root to look in");
                return;
        }
        struct nodes n = {.r = r};
        expect_node(d, &n, "/dev/nvidiactl", NV_MAJOR, NVIDIACTL_MINOR, "", true);
        expect_gpu_nodes(d, &n);
        long uvm = proc_major(d, "nvidia-uvm");
        if (uvm < 0) {
                problem(&n, true, "the nvidia-uvm module is not loaded (no nvidia-uvm in /proc/devices): CUDA "
                        "cannot start");
        } else {
                expect_node(d, &n, "/dev/nvidia-uvm", (unsigned)uvm, 0, "", true);
                expect_node(d, &n, "/dev/nvidia-uvm-tools", (unsigned)uvm, 1, "", false);
        }
        expect_mig_nodes(d, &n);
        char rb[PATH_MAX + 16];
        const char *ra = root_arg(d, rb, sizeof(rb));
        if (n.nbad > 0) {
                doctor_fix(r, "create the missing nodes with the right numbers: sudo gpuslice%s --load-kmods info "
                           "(it loads nvidia and nvidia-uvm and makes the nodes, as nvidia-modprobe does); remove "
                           "anything else in their place first", ra);
                return;
        }
        doctor_set(r, GS_DOCTOR_OK, "/dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidia-uvm-tools and every GPU's node "
                   "are character devices with the driver's numbers");
}
