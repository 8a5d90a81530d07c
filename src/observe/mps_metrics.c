/* The GPUs' MPS state for /metrics (metrics.h): what `gpuslice mps supervise` keeps under the MPS
 * root, per GPU that has a directory there. */
#include "observe/metrics.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "runtime/mps.h"
#include "runtime/mps_int.h"

#define G GS_PROM_GAUGE
#define C GS_PROM_COUNTER
static const struct gs_prom_family f_up = {"gpuslice_mps_daemon_up", G,
                                           "1 if the GPU's MPS control daemon runs (its pid file names a live one)"};
static const struct gs_prom_family f_poisoned = {
        "gpuslice_mps_poisoned", G,
        "1 while the GPU's MPS server is poisoned: a client hit a fatal GPU error, every client of the server "
        "fails, and new slice processes use the time limiter until the daemon is restarted"};
static const struct gs_prom_family f_faults = {"gpuslice_mps_server_faults_total", C,
                                               "MPS server faults (fatal GPU errors) gpuslice mps supervise saw"};
static const struct gs_prom_family f_restarts = {"gpuslice_mps_daemon_restarts_total", C,
                                                 "MPS daemon restarts after a fault (or after it died while poisoned)"};
static const struct gs_prom_family f_resets = {
        "gpuslice_mps_percentage_resets_total", C,
        "MPS servers whose active thread percentage someone else changed, put back by the supervisor"};
static const struct gs_prom_family f_pct = {
        "gpuslice_mps_active_thread_percentage", G,
        "The active thread percentage the supervisor keeps the GPU's MPS servers at (the largest share of its "
        "MPS slices)"};
static const struct gs_prom_family f_sup = {
        "gpuslice_mps_supervisor_up", G,
        "1 if gpuslice mps supervise runs for this MPS root and looked at the GPUs within the last 30 s"};
#undef G
#undef C

struct mps_row {
        char uuid[GS_STR_LONG];
        bool up, have;
        struct gs_mps_state st;
};

/* A family's samples (all of one family together, as the format wants). */
static void family(struct gs_prom *p, const struct gs_prom_family *f, const struct mps_row *r, unsigned n, int what)
{
        for (unsigned i = 0; i < n; i++) {
                const struct gs_prom_label l[] = {{"UUID", r[i].uuid}};
                const struct gs_mps_state *st = &r[i].st;
                if (what == 0)
                        gs_prom_sample(p, f, l, 1, r[i].up ? 1 : 0);
                else if (!r[i].have)
                        continue;
                else if (what == 1)
                        gs_prom_sample(p, f, l, 1, st->poisoned ? 1 : 0);
                else if (what == 2)
                        gs_prom_sample(p, f, l, 1, (double)st->faults);
                else if (what == 3)
                        gs_prom_sample(p, f, l, 1, (double)st->restarts);
                else if (what == 4)
                        gs_prom_sample(p, f, l, 1, (double)st->resets);
                else if (st->percentage != 0)
                        gs_prom_sample(p, f, l, 1, st->percentage);
        }
}

void gs_metrics_render_mps(const char *root, struct gs_prom *p)
{
        if (root == NULL)
                return;
        int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = fd < 0 ? NULL : fdopendir(fd);
        if (d == NULL) {
                if (fd >= 0)
                        close(fd);
                return;
        }
        gs_autofree struct mps_row *rows = calloc(GS_MAX_GPUS, sizeof(*rows));
        unsigned n = 0;
        for (struct dirent *e; rows != NULL && n < GS_MAX_GPUS && (e = readdir(d)) != NULL;) {
                struct gs_mps_gpu m;
                if (strncmp(e->d_name, "GPU-", 4) != 0 || mps_gpu_paths(root, e->d_name, 0, &m, NULL) < 0)
                        continue;
                snprintf(rows[n].uuid, sizeof(rows[n].uuid), "%s", m.uuid);
                rows[n].up = mps_daemon_pid(m.pipe_dir) != 0;
                rows[n].have = gs_mps_state_read(m.client_dir, &rows[n].st) > 0;
                n++;
        }
        closedir(d);
        if (n == 0)
                return;
        const struct gs_prom_family *fs[] = {&f_up, &f_poisoned, &f_faults, &f_restarts, &f_resets, &f_pct};
        for (int k = 0; k < (int)(sizeof(fs) / sizeof(fs[0])); k++)
                family(p, fs[k], rows, n, k);
        long long age = 0;
        gs_prom_sample(p, &f_sup, NULL, 0, gs_mps_supervisor(root, &age) != 0 && age <= 30 ? 1 : 0);
}
