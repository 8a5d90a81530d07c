/* gpuslice doctor: the host config, and what slices need on the host: the interposer, the
 * regions directory, MPS daemons. */
#include "doctor/internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "runtime/mps.h"
#include "slice/slice.h"

void doctor_check_config(struct doctor *d, struct gs_doctor_result *r)
{
        const char *path = d->o->config != NULL ? d->o->config : GS_HOSTCONFIG_DEFAULT_PATH;
        if (d->config_err.code != 0) {
                doctor_set(r, GS_DOCTOR_FAIL, "%s (the hook refuses to run; the checks below use the built-in "
                           "defaults)", d->config_err.msg);
                if (d->config_found)
                        doctor_fix(r, "correct that line: every key, its type and its default are in "
                                   "gpuslice.conf(5) and, commented out, in the file the package installs");
                else
                        doctor_fix(r, "give an existing file with --config, or none for %s",
                                   GS_HOSTCONFIG_DEFAULT_PATH);
                return;
        }
        if (!d->config_found) {
                doctor_set(r, GS_DOCTOR_OK, "no %s: the built-in defaults apply", path);
                return;
        }
        doctor_set(r, GS_DOCTOR_OK, "%s is valid (driver root %s, regions-dir %s, mps-root %s)", path, d->hc.root,
                   d->hc.regions_dir, d->hc.mps_root);
}

void doctor_check_interposer(struct doctor *d, struct gs_doctor_result *r)
{
        char lib[PATH_MAX];
        struct gs_error err = {0};
        if (gs_slice_find_library(d->hc.vgpu_library, lib, sizeof(lib), &err) < 0) {
                doctor_set(r, GS_DOCTOR_FAIL, "%s: containers that ask for a slice (GPUSLICE_MEMORY_LIMIT, "
                           "CUDA_DEVICE_MEMORY_LIMIT, a CDI slice device) fail to start", err.msg);
                doctor_fix(r, "reinstall gpuslice (it puts libgpuslice-vgpu.so in <libdir>/gpuslice/), or set "
                           "slice.library in the host config to the library's absolute path");
                return;
        }
        char real[PATH_MAX];
        doctor_set(r, GS_DOCTOR_OK, "%s (mounted into sliced containers at %s)",
                   realpath(lib, real) != NULL ? real : lib, GS_SLICE_LIB_PATH);
}

/* Is the container that owns slice directory `id` still there ("<pid> <start time>" in owner)? */
static bool slice_live(int regfd, const char *id)
{
        return gs_slice_owner_alive(regfd, id, NULL) == 1;
}

/* Count the slice directories under `dir`: live ones and those of containers that are gone. */
static void count_slices(const char *dir, unsigned *live, unsigned *gone, char *first_gone, size_t len)
{
        DIR *dh = opendir(dir);
        if (dh == NULL)
                return;
        for (struct dirent *e; (e = readdir(dh)) != NULL;) {
                if (e->d_name[0] == '.' || e->d_type != DT_DIR)
                        continue;
                if (slice_live(dirfd(dh), e->d_name)) {
                        (*live)++;
                } else if ((*gone)++ == 0) {
                        snprintf(first_gone, len, "%s", e->d_name);
                }
        }
        closedir(dh);
}

void doctor_check_regions(struct doctor *d, struct gs_doctor_result *r)
{
        const char *dir = d->hc.regions_dir;
        struct stat st;
        if (lstat(dir, &st) < 0) {
                if (errno == ENOENT) {
                        doctor_set(r, GS_DOCTOR_OK, "%s does not exist yet: gpuslice makes it (0755) at the first "
                                   "sliced container", dir);
                        return;
                }
                doctor_set(r, GS_DOCTOR_FAIL, "%s: %s", dir, strerror(errno));
                doctor_fix(r, "make %s reachable by root, or set slice.regions-dir in the host config", dir);
                return;
        }
        if (!S_ISDIR(st.st_mode)) {
                doctor_set(r, GS_DOCTOR_FAIL, "%s is not a directory: sliced containers cannot start", dir);
                doctor_fix(r, "remove it (sudo rm %s): gpuslice makes the directory at the next sliced container",
                           dir);
                return;
        }
        if ((st.st_uid != 0 && st.st_uid != geteuid()) || (st.st_mode & 022) != 0) {
                doctor_set(r, GS_DOCTOR_FAIL, "%s is writable by others (mode %04o, owner uid %u): another user "
                           "could plant, change or remove slices", dir, (unsigned)(st.st_mode & 07777),
                           (unsigned)st.st_uid);
                doctor_fix(r, "sudo chown root:root %s && sudo chmod 0755 %s", dir, dir);
                return;
        }
        unsigned live = 0, gone = 0;
        char first[256] = "";
        count_slices(dir, &live, &gone, first, sizeof(first));
        if (gone > 0) {
                doctor_set(r, GS_DOCTOR_WARN, "%s: %u slice director%s of containers that are gone (%s%s), %u live",
                           dir, gone, gone == 1 ? "y" : "ies", first, gone > 1 ? ", ..." : "", live);
                doctor_fix(r, "nothing urgent: every hook run (the next container start) removes them; to remove "
                           "them now: sudo rm -r %s/%s", dir, first);
                return;
        }
        doctor_set(r, GS_DOCTOR_OK, "%s: %u live slice%s", dir, live, live == 1 ? "" : "s");
}

/* The GPUs' daemons: one that does not answer, a poisoned server. Problems go into r. */
static void mps_problems(struct doctor *d, const struct gs_mps_report *rep, struct gs_doctor_result *r)
{
        for (unsigned i = 0; i < rep->n; i++) {
                const struct gs_mps_gpu *m = &rep->gpus[i];
                struct gs_mps_state st;
                if (gs_mps_state_read(m->client_dir, &st) > 0 && st.poisoned) {
                        doctor_problem(r, GS_DOCTOR_WARN, "GPU %u's MPS server %d is poisoned (a client hit a fatal GPU "
                                       "error): its clients fail every CUDA call, and new slice processes use the time "
                                       "limiter until the supervisor restarts the daemon", m->index, (int)st.server);
                        doctor_fix(r, "restart the containers that use GPU %u through MPS (gpuslice top lists the "
                                   "slices; `echo get_client_list %d | CUDA_MPS_PIPE_DIRECTORY=%s nvidia-cuda-mps-control` "
                                   "their processes): once they are gone the daemon is restarted", m->index,
                                   (int)st.server, m->pipe_dir);
                }
                if (m->running && !m->servers_known) {
                        doctor_problem(r, GS_DOCTOR_WARN, "GPU %u's MPS daemon (pid %d) does not answer: %s", m->index,
                                       (int)m->pid, m->query_error);
                        doctor_fix(r, "restart it: sudo gpuslice mps stop --device %u; sudo gpuslice mps start "
                                   "--device %u", m->index, m->index);
                }
        }
        (void)d;
}

void doctor_check_mps(struct doctor *d, struct gs_doctor_result *r)
{
        int mode = gs_mps_mode_parse(d->hc.mps);
        const char *root = d->hc.mps_root;
        long long age = 0;
        pid_t sup = gs_mps_supervisor(root, &age);
        if (d->dev == NULL) {
                doctor_set(r, GS_DOCTOR_SKIP, "no driver to ask which GPUs there are (slice.mps = %s)", d->hc.mps);
                return;
        }
        gs_autofree struct gs_mps_report *rep = calloc(1, sizeof(*rep));
        struct gs_mps_opts o = {.root = root, .timeout_ms = 2000};
        struct gs_error err = {0};
        if (rep == NULL || gs_mps_status(d->ctx, d->dev, &o, rep, &err) < 0) {
                doctor_set(r, GS_DOCTOR_WARN, "cannot read the MPS daemons' state under %s: %s", root,
                           rep == NULL ? "out of memory" : err.msg);
                doctor_fix(r, "check slice.mps-root in the host config (an absolute path, at most 88 bytes with "
                           "the GPU's UUID)");
                return;
        }
        mps_problems(d, rep, r);
        if (r->status != GS_DOCTOR_OK)
                return;
        unsigned running = 0;
        for (unsigned i = 0; i < rep->n; i++)
                running += rep->gpus[i].running;
        if (mode > 0 && (sup == 0 || age > 30)) {
                doctor_set(r, GS_DOCTOR_WARN, "slice.mps = %s, but no gpuslice mps supervise %s under %s: a poisoned MPS "
                           "server is not noticed (new slice processes keep connecting to it and fail), a dead daemon "
                           "is not restarted, and %u of %u GPUs have a daemon%s", d->hc.mps,
                           sup == 0 ? "runs" : "has looked at the GPUs lately", root, running, rep->n,
                           mode == GS_MPS_MODE_AUTO && running < rep->n ? " (cap slices on the others use the time limiter)"
                                                                     : "");
                doctor_fix(r, "sudo systemctl enable --now gpuslice-mps.service (see gpuslice-mps(1)), or slice.mps = "
                           "\"off\" in the host config");
                return;
        }
        if (mode == GS_MPS_MODE_OFF)
                doctor_set(r, GS_DOCTOR_OK, "slice.mps = off: compute slices take turns on their GPU (the time limiter; "
                           "gpuslice.conf(5) for MPS's trade-off); MPS daemons under %s: ", root);
        else
                doctor_set(r, GS_DOCTOR_OK, "slice.mps = %s: cap slices on one GPU run beside each other through its MPS "
                           "daemon, supervised (pid %d); daemons under %s: ", d->hc.mps, (int)sup, root);
        if (running == 0)
                doctor_append(r, "none");
        for (unsigned i = 0, k = 0; i < rep->n; i++) {
                const struct gs_mps_gpu *m = &rep->gpus[i];
                if (!m->running)
                        continue;
                struct gs_mps_state st;
                bool have = gs_mps_state_read(m->client_dir, &st) > 0;
                doctor_append(r, "%sGPU %u (pid %d, %zu server%s", k++ == 0 ? "" : ", ", m->index, (int)m->pid,
                              m->nservers, m->nservers == 1 ? "" : "s");
                if (have)
                        doctor_append(r, ", %llu fault%s", st.faults, st.faults == 1 ? "" : "s");
                doctor_append(r, ")");
        }
}
