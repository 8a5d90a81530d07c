/* The metric set (metrics.h): families in a fixed order, each written whole. */
#include "observe/metrics.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/error.h"

enum value {
        V_USED, V_ALLOCATED, V_OVERHEAD, V_LIMIT, V_OVER_QUOTA, V_COMPUTE_LIMIT, V_COMPUTE_USED, V_BUSY, V_PROCS,
        V_LAST_KERNEL, V_UTIL_PERCENT, V_KERNEL_ELAPSED, V_ZERO,
};

struct slice_metric {
        struct gs_prom_family f;
        enum value v;
};

#define G GS_PROM_GAUGE
static const struct slice_metric ours[] = {
        {{"gpuslice_slice_memory_used_bytes", G, "Device memory the slice uses on the device as its quota counts it: "
                                                 "its allocations plus the driver's overhead"}, V_USED},
        {{"gpuslice_slice_memory_allocated_bytes", G, "Device memory the slice's processes allocated on the device"},
         V_ALLOCATED},
        {{"gpuslice_slice_memory_overhead_bytes", G, "Device memory the driver uses for the slice beyond its allocations "
                                                     "(contexts, modules, page rounding)"}, V_OVERHEAD},
        {{"gpuslice_slice_memory_limit_bytes", G, "The slice's memory quota on the device (absent when unlimited)"},
         V_LIMIT},
        {{"gpuslice_slice_memory_over_quota", G, "1 while the slice uses more of the device's memory than its quota "
                                                 "(a live shrink below usage: new allocations fail until it is under), "
                                                 "else 0 (absent when unlimited)"}, V_OVER_QUOTA},
        {{"gpuslice_slice_compute_limit_ratio", G, "The slice's compute share of the device, 0-1 (absent when unlimited "
                                                   "or before the slice's first kernel launch)"}, V_COMPUTE_LIMIT},
        {{"gpuslice_slice_compute_used_ratio", G, "GPU time the slice used on the device over the last window, as a "
                                                  "fraction of the window's wall time"}, V_COMPUTE_USED},
        {{"gpuslice_slice_compute_busy_seconds_total", GS_PROM_COUNTER,
          "GPU time the slice used on the device since the exporter first saw it"}, V_BUSY},
        {{"gpuslice_slice_processes", G, "Processes of the slice with memory or GPU time on the device"}, V_PROCS},
        {{"gpuslice_slice_last_kernel_timestamp_seconds", G, "Unix time of a recent kernel launch of the slice "
                                                             "(recorded by compute-limited processes)"}, V_LAST_KERNEL},
};

static const struct slice_metric hami[] = {
        {{"hami_vgpu_memory_used_bytes", G, "vGPU device memory usage in bytes"}, V_USED},
        {{"hami_vgpu_memory_limit_bytes", G, "vGPU device memory limit in bytes"}, V_LIMIT},
        {{"hami_container_device_memory_bytes", G, "Container device memory usage in bytes"}, V_USED},
        {{"hami_container_device_utilization_ratio", G, "Container device SM utilization, 0-100 (HAMi's unit): "
                                                        "gpuslice_slice_compute_used_ratio times 100"}, V_UTIL_PERCENT},
        {{"hami_container_last_kernel_elapsed_seconds", G, "Seconds since last kernel execution in container"},
         V_KERNEL_ELAPSED},
        {{"hami_vgpu_memory_context_bytes", G, "Container device memory context size in bytes (gpuslice: the driver's "
                                               "overhead, contexts and modules together)"}, V_OVERHEAD},
        {{"hami_vgpu_memory_module_bytes", G, "Container device memory module size in bytes (gpuslice counts modules "
                                              "in hami_vgpu_memory_context_bytes: always 0)"}, V_ZERO},
        {{"hami_vgpu_memory_buffer_bytes", G, "Container device memory buffer size in bytes"}, V_ALLOCATED},
};

/* Nanoseconds as seconds, to the millisecond (all a launch time sampled by the limiter is good
 * for, and short to print). */
static double millis(uint64_t ns)
{
        return (double)((ns + 500000) / 1000000) / 1000.0;
}

/* The value of v for one slice device: false when it has none (left out). */
static bool value_of(enum value v, const struct gs_obs_slice *s, const struct gs_obs_device *d, uint64_t now_ns,
                     double *out)
{
        switch (v) {
        case V_USED: *out = (double)d->memory_used; return true;
        case V_ALLOCATED: *out = (double)d->memory_allocated; return true;
        case V_OVERHEAD: *out = (double)d->memory_overhead; return true;
        case V_LIMIT: *out = (double)d->memory_limit; return d->memory_limit != 0;
        case V_OVER_QUOTA: *out = d->memory_used > d->memory_limit; return d->memory_limit != 0;
        case V_COMPUTE_LIMIT: *out = d->compute_limit; return d->compute_limit > 0;
        case V_COMPUTE_USED: *out = d->compute_used; return d->compute_used_valid;
        case V_UTIL_PERCENT: *out = d->compute_used * 100.0; return d->compute_used_valid;
        case V_BUSY: *out = (double)d->busy_ns_total / 1e9; return d->compute_measured;
        case V_PROCS: *out = d->processes; return true;
        case V_LAST_KERNEL: *out = millis(s->last_kernel_ns); return s->last_kernel_ns != 0;
        case V_KERNEL_ELAPSED:
                *out = millis(now_ns > s->last_kernel_ns ? now_ns - s->last_kernel_ns : 0);
                return s->last_kernel_ns != 0;
        case V_ZERO: *out = 0; return true;
        }
        return false;
}

/* The labels of one slice device: ours (7) and HAMi's (6). */
struct dev_labels {
        char vdev[16], gpu[16];
        struct gs_prom_label ours[8], hami[6];
};

static void make_labels(struct dev_labels *l, const struct gs_obs_slice *s, const struct gs_obs_device *d,
                        const struct gs_gpu_stats *gpus)
{
        int g = gpus != NULL ? gs_gpu_stats_index(gpus, d->uuid) : -1;
        snprintf(l->vdev, sizeof(l->vdev), "%u", d->index);
        snprintf(l->gpu, sizeof(l->gpu), "%d", g);
        if (g < 0)
                l->gpu[0] = '\0';
        const struct gs_prom_label o[] = {
                {"container_id", s->id}, {"namespace", s->labels.ns}, {"pod", s->labels.pod},
                {"container", s->labels.container}, {"claim", s->labels.claim}, {"vdevice", l->vdev}, {"gpu", l->gpu},
                {"UUID", d->uuid},
        };
        const struct gs_prom_label h[] = {
                {"namespace", s->labels.ns}, {"pod", s->labels.pod}, {"container", s->labels.container},
                {"vdevice_index", l->vdev}, {"device_uuid", d->uuid}, {"container_id", s->id},
        };
        memcpy(l->ours, o, sizeof(o));
        memcpy(l->hami, h, sizeof(h));
}

/* Every slice device with its rendered label sets, made once per render. */
struct dev_row {
        const struct gs_obs_slice *s;
        const struct gs_obs_device *d;
        char *ours, *hami;
};

static void free_rows(struct dev_row *rows, size_t n)
{
        for (size_t i = 0; rows != NULL && i < n; i++) {
                free(rows[i].ours);
                free(rows[i].hami);
        }
        free(rows);
}

static struct dev_row *make_rows(const struct gs_observation *obs, const struct gs_gpu_stats *gpus, size_t *n)
{
        size_t total = 0;
        for (size_t i = 0; i < obs->nslices; i++)
                total += obs->slices[i].ndevices;
        struct dev_row *rows = calloc(total > 0 ? total : 1, sizeof(*rows));
        if (rows == NULL)
                return NULL;
        size_t k = 0;
        for (size_t i = 0; i < obs->nslices; i++)
                for (unsigned d = 0; d < obs->slices[i].ndevices; d++, k++) {
                        struct dev_labels l;
                        rows[k].s = &obs->slices[i];
                        rows[k].d = &obs->slices[i].dev[d];
                        make_labels(&l, rows[k].s, rows[k].d, gpus);
                        rows[k].ours = gs_prom_labels(l.ours, GS_ARRAY_SIZE(l.ours));
                        rows[k].hami = gs_prom_labels(l.hami, GS_ARRAY_SIZE(l.hami));
                        if (rows[k].ours == NULL || rows[k].hami == NULL) {
                                free_rows(rows, k + 1);
                                return NULL;
                        }
                }
        *n = total;
        return rows;
}

static void render_slice_family(const struct slice_metric *m, bool is_hami, const struct dev_row *rows, size_t n,
                                uint64_t now_ns, struct gs_prom *p)
{
        for (size_t i = 0; i < n; i++) {
                double v;
                if (value_of(m->v, rows[i].s, rows[i].d, now_ns, &v))
                        gs_prom_sample_raw(p, &m->f, is_hami ? rows[i].hami : rows[i].ours, v);
        }
}

static void render_slice_info(const struct gs_observation *obs, struct gs_prom *p)
{
        static const struct gs_prom_family f = {"gpuslice_slice_info", G,
                                                "A slice on this host (1): its container, pod names and region"};
        static const char *const modes[] = {"cap", "share", "off"};
        static const char *const prios[] = {"high", "normal", "low"};
        for (size_t i = 0; i < obs->nslices; i++) {
                const struct gs_obs_slice *s = &obs->slices[i];
                const struct gs_prom_label l[] = {
                        {"container_id", s->id}, {"namespace", s->labels.ns}, {"pod", s->labels.pod},
                        {"container", s->labels.container}, {"claim", s->labels.claim}, {"region", s->region},
                        {"compute_mode", s->compute_mode < 3 ? modes[s->compute_mode] : ""},
                        {"priority", s->priority < 3 ? prios[s->priority] : ""},
                };
                gs_prom_sample(p, &f, l, GS_ARRAY_SIZE(l), 1);
        }
}

/* Launch waits: a histogram per slice device whose waits are counted (a version 3 region). */
static void render_waits(const struct dev_row *rows, size_t n, struct gs_prom *p)
{
        static const struct gs_prom_family f = {
                "gpuslice_slice_launch_wait_seconds", GS_PROM_HISTOGRAM,
                "How long the slice's kernel launches waited for the GPU in its gate (a launch that did not wait "
                "counts as 0), since the slice's region was made"};
        char le[GS_REGION_WAIT_BUCKETS][24];
        const char *les[GS_REGION_WAIT_BUCKETS];
        for (unsigned i = 0; i < GS_REGION_WAIT_BUCKETS; i++) {
                if (i + 1 < GS_REGION_WAIT_BUCKETS)
                        snprintf(le[i], sizeof(le[i]), "%g", (double)gs_region_wait_edge_ns(i) / 1e9);
                else
                        snprintf(le[i], sizeof(le[i]), "+Inf");
                les[i] = le[i];
        }
        for (size_t i = 0; i < n; i++) {
                const struct gs_obs_device *d = rows[i].d;
                if (d->waits_known)
                        gs_prom_histogram_raw(p, &f, rows[i].ours, les, d->waits.cum, GS_REGION_WAIT_BUCKETS,
                                              (double)d->waits.sum_ns / 1e9, d->waits.count);
        }
}

/* How each slice device's compute share is enforced, where the interposer reported it. */
static void render_mechanism(const struct dev_row *rows, size_t n, struct gs_prom *p)
{
        static const struct gs_prom_family f = {
                "gpuslice_slice_compute_mechanism", G,
                "How the slice's compute share is enforced on the device (1): mechanism time (the time limiter), mps "
                "(the GPU's MPS server), time_fallback (the time limiter after a poisoned or absent MPS server)"};
        static const char *const via[] = {"time", "mps", "time_fallback"};
        for (size_t i = 0; i < n; i++)
                if (rows[i].d->compute_via < GS_ARRAY_SIZE(via))
                        gs_prom_sample_raw_plus(p, &f, rows[i].ours, "mechanism", via[rows[i].d->compute_via], 1);
}

enum gpu_value { GV_USED, GV_TOTAL, GV_UTIL, GV_UTIL_PERCENT };

struct gpu_metric {
        struct gs_prom_family f;
        enum gpu_value v;
        bool hami;
};

static const struct gpu_metric gpu_metrics[] = {
        {{"gpuslice_gpu_memory_used_bytes", G, "Device memory in use on the GPU (NVML)"}, GV_USED, false},
        {{"gpuslice_gpu_memory_total_bytes", G, "Device memory of the GPU (NVML)"}, GV_TOTAL, false},
        {{"gpuslice_gpu_utilization_ratio", G, "Fraction of the last sample period a kernel ran on the GPU (NVML), 0-1"},
         GV_UTIL, false},
        {{"hami_host_gpu_memory_used_bytes", G, "GPU device memory usage in bytes"}, GV_USED, true},
        {{"hami_host_gpu_utilization_ratio", G, "GPU core utilization ratio (0-100)"}, GV_UTIL_PERCENT, true},
};

static void render_gpus(const struct gs_gpu_stats *gpus, const struct gs_metrics_opts *o, struct gs_prom *p)
{
        for (size_t k = 0; k < GS_ARRAY_SIZE(gpu_metrics); k++) {
                const struct gpu_metric *m = &gpu_metrics[k];
                if (m->hami && !o->hami)
                        continue;
                for (unsigned i = 0; i < gpus->info.ngpus && i < GS_MAX_GPUS; i++) {
                        const struct gs_gpu *g = &gpus->info.gpus[i];
                        if ((m->v == GV_UTIL || m->v == GV_UTIL_PERCENT) && !g->utilization_valid)
                                continue;
                        double v = m->v == GV_USED    ? (double)g->memory_used
                                   : m->v == GV_TOTAL ? (double)g->memory_total
                                   : m->v == GV_UTIL  ? g->utilization_gpu / 100.0
                                                      : (double)g->utilization_gpu;
                        char idx[16], type[GS_STR_LONG + 8];
                        snprintf(idx, sizeof(idx), "%u", g->index);
                        snprintf(type, sizeof(type), "NVIDIA-%s", g->model);
                        const struct gs_prom_label ol[] = {{"gpu", idx}, {"UUID", g->uuid}, {"model_name", g->model}};
                        const struct gs_prom_label hl[] = {
                                {"node", o->node}, {"device_index", idx}, {"device_uuid", g->uuid}, {"device_type", type}};
                        if (m->hami)
                                gs_prom_sample(p, &m->f, hl, GS_ARRAY_SIZE(hl), v);
                        else
                                gs_prom_sample(p, &m->f, ol, GS_ARRAY_SIZE(ol), v);
                }
        }
}

static void render_self(const struct gs_observation *obs, const struct gs_gpu_stats *gpus, struct gs_prom *p)
{
        static const struct gs_prom_family f_slices = {"gpuslice_slices", G, "Slices shown"};
        static const struct gs_prom_family f_skipped = {
                "gpuslice_regions_skipped", G, "Usage regions left out of this scrape as unreadable or invalid (see the log)"};
        static const struct gs_prom_family f_pending = {
                "gpuslice_regions_pending", G, "Usage regions not written yet (slices that have not used the GPU)"};
        static const struct gs_prom_family f_scan = {"gpuslice_collect_duration_seconds", G,
                                                     "Time this scrape took to read every usage region"};
        static const struct gs_prom_family f_up = {"gpuslice_nvml_up", G,
                                                   "1 if NVML answered the exporter's last query in time, else 0"};
        static const struct gs_prom_family f_when = {"gpuslice_nvml_last_answer_timestamp_seconds", G,
                                                     "Unix time of NVML's last answer"};
        gs_prom_sample(p, &f_slices, NULL, 0, (double)obs->nslices);
        gs_prom_sample(p, &f_skipped, NULL, 0, obs->skipped);
        gs_prom_sample(p, &f_pending, NULL, 0, obs->pending);
        gs_prom_sample(p, &f_scan, NULL, 0, (double)obs->scan_ns / 1e9);
        if (gpus == NULL)
                return;
        gs_prom_sample(p, &f_up, NULL, 0, gpus->fresh ? 1 : 0);
        if (gpus->answered_ns != 0)
                gs_prom_sample(p, &f_when, NULL, 0, (double)gpus->answered_ns / 1e9);
}

void gs_metrics_render(const struct gs_observation *obs, const struct gs_gpu_stats *gpus,
                       const struct gs_metrics_opts *o, struct gs_prom *p)
{
        render_slice_info(obs, p);
        size_t n = 0;
        struct dev_row *rows = make_rows(obs, gpus, &n);
        if (rows == NULL) {
                p->oom = true;
                return;
        }
        for (size_t k = 0; k < GS_ARRAY_SIZE(ours); k++)
                render_slice_family(&ours[k], false, rows, n, obs->time_ns, p);
        render_waits(rows, n, p);
        render_mechanism(rows, n, p);
        for (size_t k = 0; o->hami && k < GS_ARRAY_SIZE(hami); k++)
                render_slice_family(&hami[k], true, rows, n, obs->time_ns, p);
        free_rows(rows, n);
        if (gpus != NULL && gpus->valid && gpus->fresh)
                render_gpus(gpus, o, p);
        gs_metrics_render_mps(o->mps_root, p);
        render_self(obs, gpus, p);
}
#undef G

char *gs_metrics_scrape(struct gs_collector *c, pthread_mutex_t *lock, struct gs_gpu_poller *gpus,
                        const struct gs_metrics_opts *o, size_t *len, struct gs_error *err)
{
        struct gs_observation obs;
        if (lock != NULL)
                pthread_mutex_lock(lock);
        int rc = gs_collector_scan(c, &obs, err);
        if (lock != NULL)
                pthread_mutex_unlock(lock);
        if (rc < 0)
                return NULL;
        gs_autofree struct gs_gpu_stats *st = gpus != NULL ? malloc(sizeof(*st)) : NULL;
        if (st != NULL)
                gs_gpu_poller_get(gpus, st);
        /* room for about what the last scrape took: no reallocation on the way */
        static _Atomic size_t last_len;
        struct gs_prom p;
        gs_prom_init_size(&p, atomic_load_explicit(&last_len, memory_order_relaxed) * 9 / 8);
        gs_metrics_render(&obs, st, o, &p);
        gs_observation_release(&obs);
        char *text = gs_prom_take(&p, len);
        if (text != NULL)
                atomic_store_explicit(&last_len, *len, memory_order_relaxed);
        if (text == NULL || (gpus != NULL && st == NULL)) {
                free(text);
                gs_error_set(err, GS_ENOMEM, "out of memory");
                return NULL;
        }
        return text;
}
