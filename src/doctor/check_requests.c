/* Who may ask for GPUs: on a Kubernetes node, images and pod specs are the tenants', so the env of
 * an unprivileged container (every CUDA image says NVIDIA_VISIBLE_DEVICES=all, or implies it) must
 * not give GPUs; the devices come from the kubelet (CDI, or the device plugin's volume mounts). */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "doctor/internal.h"

static bool is_dir(const char *p)
{
        struct stat st;
        return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* What says a kubelet runs here, comma-joined into out ("" when nothing does): its device-plugin
 * directory (device-plugin.socket-dir), its plugin registry beside it (DRA drivers register
 * there), the device plugin's CDI spec. */
static void kubelet_signs(const struct gs_hostconfig *hc, char *out, size_t len)
{
        out[0] = '\0';
        char reg[PATH_MAX], dir[PATH_MAX];
        snprintf(dir, sizeof(dir), "%s", hc->dp.socket_dir);
        snprintf(reg, sizeof(reg), "%s/plugins_registry", dirname(dir));
        const char *found[3] = {is_dir(hc->dp.socket_dir) ? hc->dp.socket_dir : NULL, is_dir(reg) ? reg : NULL,
                                access(hc->dp.cdi_spec, F_OK) == 0 ? hc->dp.cdi_spec : NULL};
        for (size_t i = 0; i < 3; i++)
                if (found[i] != NULL)
                        snprintf(out + strlen(out), len - strlen(out), "%s%s", out[0] ? ", " : "", found[i]);
}

void doctor_check_requests(struct doctor *d, struct gs_doctor_result *r)
{
        const struct gs_hostconfig *hc = &d->hc;
        char signs[3 * PATH_MAX + 8];
        kubelet_signs(hc, signs, sizeof(signs));
        doctor_set(r, GS_DOCTOR_OK, "%s", "");
        if (hc->accept_env_unprivileged && signs[0] != '\0') {
                doctor_problem(r, GS_DOCTOR_WARN,
                               "a Kubernetes node (%s) whose hook and runtime take NVIDIA_VISIBLE_DEVICES from "
                               "unprivileged containers (hook.accept-nvidia-visible-devices-envvar-when-unprivileged = "
                               "true): a pod that asked for no GPU gets every GPU its image names (a CUDA image: all)",
                               signs);
                doctor_fix(r, "sudo gpuslice runtime configure --kubernetes (the device plugin then answers with CDI or "
                           "volume mounts)");
        }
        if (!hc->accept_env_unprivileged && strcmp(hc->dp.allocate, "env") == 0) {
                doctor_problem(r, GS_DOCTOR_FAIL,
                               "device-plugin.allocate = \"env\", which the hook refuses from unprivileged containers "
                               "(hook.accept-nvidia-visible-devices-envvar-when-unprivileged = false): its pods get no GPU");
                doctor_fix(r, "set device-plugin.allocate = \"volume-mounts\" (or \"cdi\")");
        }
        if (!hc->accept_volume_mounts && strcmp(hc->dp.allocate, "volume-mounts") == 0) {
                doctor_problem(r, GS_DOCTOR_FAIL,
                               "device-plugin.allocate = \"volume-mounts\", which the hook ignores "
                               "(hook.accept-nvidia-visible-devices-as-volume-mounts = false): its pods get no GPU");
                doctor_fix(r, "sudo gpuslice runtime configure --kubernetes");
        }
        if (r->status != GS_DOCTOR_OK)
                return;
        if (!hc->accept_env_unprivileged)
                doctor_set(r, GS_DOCTOR_OK, "NVIDIA_VISIBLE_DEVICES of unprivileged containers is refused; volume mounts "
                           "are %s%s%s", hc->accept_volume_mounts ? "accepted" : "not", signs[0] ? " (Kubernetes: " : "",
                           signs[0] ? signs : "");
        if (!hc->accept_env_unprivileged && signs[0] != '\0')
                doctor_append(r, ")");
        if (hc->accept_env_unprivileged)
                doctor_set(r, GS_DOCTOR_OK, "NVIDIA_VISIBLE_DEVICES is taken from unprivileged containers, as NVIDIA's "
                           "default; no Kubernetes here (no %s)", hc->dp.socket_dir);
}
