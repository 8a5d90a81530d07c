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
#include "runtime/slice.h"

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

void doctor_check_mps(struct doctor *d, struct gs_doctor_result *r)
{
        if (d->dev == NULL) {
                doctor_set(r, GS_DOCTOR_SKIP, "no driver to ask which GPUs there are");
                return;
        }
        gs_autofree struct gs_mps_report *rep = calloc(1, sizeof(*rep));
        struct gs_mps_opts o = {.root = d->hc.mps_root, .timeout_ms = 2000};
        struct gs_error err = {0};
        if (rep == NULL || gs_mps_status(d->ctx, d->dev, &o, rep, &err) < 0) {
                doctor_set(r, GS_DOCTOR_WARN, "cannot read the MPS daemons' state under %s: %s", d->hc.mps_root,
                           rep == NULL ? "out of memory" : err.msg);
                doctor_fix(r, "check slice.mps-root in the host config (an absolute path, at most 88 bytes with "
                           "the GPU's UUID)");
                return;
        }
        unsigned running = 0;
        for (unsigned i = 0; i < rep->n; i++) {
                const struct gs_mps_gpu *m = &rep->gpus[i];
                if (!m->running)
                        continue;
                running++;
                if (!m->servers_known) {
                        doctor_problem(r, GS_DOCTOR_WARN, "GPU %u's MPS daemon (pid %d) does not answer: %s", m->index,
                                       (int)m->pid, m->query_error);
                        doctor_fix(r, "restart it: sudo gpuslice mps stop --device %u; sudo gpuslice mps start "
                                   "--device %u", m->index, m->index);
                }
        }
        if (r->status != GS_DOCTOR_OK)
                return;
        if (running == 0) {
                doctor_set(r, GS_DOCTOR_OK, "no MPS daemon under %s: compute limits are kept by the interposer's "
                           "time-slicing alone (gpuslice mps start adds MPS's SM partitioning for cap-mode slices)",
                           d->hc.mps_root);
                return;
        }
        doctor_set(r, GS_DOCTOR_OK, "MPS daemons under %s:", d->hc.mps_root);
        for (unsigned i = 0, k = 0; i < rep->n; i++)
                if (rep->gpus[i].running)
                        doctor_append(r, "%s GPU %u (pid %d, %zu server%s)", k++ == 0 ? "" : ",", rep->gpus[i].index,
                                      (int)rep->gpus[i].pid, rep->gpus[i].nservers,
                                      rep->gpus[i].nservers == 1 ? "" : "s");
}
