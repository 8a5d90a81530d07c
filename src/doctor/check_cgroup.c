/* gpuslice doctor: the cgroup version, and a way to allow GPU nodes in a container's cgroup. */
#include "doctor/internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/vfs.h>

#ifndef CGROUP_SUPER_MAGIC
#define CGROUP_SUPER_MAGIC 0x27e0eb
#endif
#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

enum layout { L_MISSING, L_V2, L_HYBRID, L_V1, L_NO_DEVICES };

static long fs_type(const char *path)
{
        struct statfs sfs;
        if (statfs(path, &sfs) < 0)
                return -1;
        return (long)sfs.f_type;
}

static enum layout detect(const char *root, char *devices, size_t len, int *err)
{
        long t = fs_type(root);
        *err = errno;
        if (t < 0)
                return L_MISSING;
        if (t == CGROUP2_SUPER_MAGIC)
                return L_V2;
        char unified[PATH_MAX];
        snprintf(devices, len, "%s/devices", root);
        snprintf(unified, sizeof(unified), "%s/unified", root);
        if (fs_type(devices) != CGROUP_SUPER_MAGIC)
                return L_NO_DEVICES;
        return fs_type(unified) == CGROUP2_SUPER_MAGIC ? L_HYBRID : L_V1;
}

static const char *const to_v2 =
        "move the node to cgroup v2: boot with systemd.unified_cgroup_hierarchy=1 (the default of current "
        "distributions); gpuslice then allows GPU nodes through BPF device programs";

void doctor_check_cgroup(struct doctor *d, struct gs_doctor_result *r)
{
        const char *root = d->o->cgroup_root != NULL ? d->o->cgroup_root : GS_DOCTOR_CGROUP_ROOT;
        char devices[PATH_MAX];
        int err = 0;
        enum layout l = detect(root, devices, sizeof(devices), &err);
        if (d->hc.no_cgroups) {
                doctor_set(r, GS_DOCTOR_OK, "hook.no-cgroups = true: the runtime alone manages the containers' "
                           "device cgroups (%s is %s)", root,
                           l == L_V2 ? "cgroup v2" : l == L_V1 ? "cgroup v1" : l == L_HYBRID ? "hybrid" : "no cgroup");
                return;
        }
        switch (l) {
        case L_MISSING:
                doctor_set(r, GS_DOCTOR_FAIL, "%s: %s: no cgroup filesystem to allow GPU nodes in", root,
                           strerror(err));
                doctor_fix(r, "mount cgroup2 on %s (systemd does at boot), or set hook.no-cgroups = true if the "
                           "runtime manages device access itself", root);
                return;
        case L_V2:
                doctor_set(r, GS_DOCTOR_OK, "cgroup v2 (unified hierarchy at %s): GPU nodes are allowed through "
                           "BPF device programs", root);
                return;
        case L_HYBRID:
                doctor_set(r, GS_DOCTOR_WARN, "hybrid cgroups: v1 controllers (devices at %s) beside cgroup2 at "
                           "%s/unified; gpuslice uses the v1 devices controller, and some runtimes (crun) refuse "
                           "hybrid hosts", devices, root);
                doctor_fix(r, "%s", to_v2);
                return;
        case L_V1:
                doctor_set(r, GS_DOCTOR_WARN, "cgroup v1 (legacy hierarchy, devices controller at %s): supported "
                           "(gpuslice writes devices.allow), but cgroup v1 is deprecated and being removed from "
                           "systemd and Kubernetes", devices);
                doctor_fix(r, "%s", to_v2);
                return;
        case L_NO_DEVICES:
                doctor_set(r, GS_DOCTOR_FAIL, "%s is neither cgroup2 nor a cgroup v1 tree with a devices "
                           "controller: the hook cannot allow GPU nodes in containers", root);
                doctor_fix(r, "boot with cgroup v2 (systemd.unified_cgroup_hierarchy=1) or mount the v1 devices "
                           "controller at %s/devices; if the runtime manages device access itself, set "
                           "hook.no-cgroups = true", root);
                return;
        }
}
