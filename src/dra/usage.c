/* Each prepared share's usage on its claim's status, and its quota Event (see dra/usage.h). */
#include "dra/usage.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/error.h"
#include "common/strutil.h"
#include "dra/checkpoint.h"
#include "dra/slices.h"
#include "dra/status.h"
#include "kubelet/quantity.h"
#include "observe/collect.h"

#define SAMPLE_MAX_MS 5000
#define EVENT_MIN_MS 60000
#define WRITES_PER_SAMPLE 8 /* claims written at one sample: the loop (the kubelet's calls) waits on them */
#define MiB (1024ull * 1024)

/* One sample of a share, clamped (see usage.h). */
struct sample {
        unsigned containers;        /* regions that matched */
        uint64_t used;              /* bytes, at most the GPU's */
        uint64_t peak;              /* the share's peak so far */
        uint64_t refused;           /* charges refused at the quota, at most INT64_MAX */
        unsigned procs;             /* live processes with memory or GPU time on the device */
        bool compute_valid;         /* a window has closed on every matched region that measures */
        double compute;             /* 0..1 */
        uint64_t window_ms;
        bool throttle_valid;
        uint64_t throttled_ms;      /* in the window, at most window * processes */
};

struct share {
        char uid[64], ns[64], name[254], pool[254], device[64], share_id[64];
        uint64_t quota;             /* the claim's consumed memory (0: none given) */
        unsigned compute_limit;     /* percent, 0: none given */
        unsigned gpu;               /* its GPU's index */
        int mig;                    /* its MIG device's (-1: the GPU's share) */
        uint64_t total;             /* the GPU's (MIG device's) memory */
        bool live;                  /* in the checkpoint at this sample */
        bool done;                  /* written (or skipped) at this sample */
        struct sample now, last;
        bool written;               /* `last` went out */
        uint64_t peak;
        uint64_t refused;           /* the refusals an Event told of */
        long long written_at, event_at;
};

struct gs_dra_usage {
        struct gs_dra_prep *prep;
        unsigned period_ms;
        void (*note)(void *ud, const char *line);
        void *ud;
        struct gs_collector *col;
        struct share *s;
        size_t n;
        bool full_noted;
        char write_noted[256];      /* the last write error said ("" none) */
        long long next;
};

#define say(x, ...) gs_dra_say((x)->note, (x)->ud, __VA_ARGS__)

struct gs_dra_usage *gs_dra_usage_new(struct gs_dra_prep *prep, const char *regions_dir, unsigned period_ms,
                                      void (*note)(void *ud, const char *line), void *ud, struct gs_error *err)
{
        struct gs_dra_usage *u = calloc(1, sizeof(*u));
        if (u == NULL || (u->s = calloc(GS_DRA_USAGE_MAX_SHARES, sizeof(*u->s))) == NULL) {
                free(u);
                gs_error_set(err, GS_ENOMEM, "out of memory");
                return NULL;
        }
        u->prep = prep;
        u->period_ms = period_ms;
        u->note = note;
        u->ud = ud;
        struct gs_collector_opts co = {.regions_dir = regions_dir, .window_ms = period_ms, .log = note, .log_arg = ud};
        if ((u->col = gs_collector_new(&co, err)) == NULL) {
                gs_dra_usage_free(u);
                return NULL;
        }
        return u;
}

void gs_dra_usage_free(struct gs_dra_usage *u)
{
        if (u == NULL)
                return;
        gs_collector_free(u->col);
        free(u->s);
        free(u);
}

static struct share *share_get(struct gs_dra_usage *u, const char *uid, const char *device)
{
        for (size_t i = 0; i < u->n; i++)
                if (strcmp(u->s[i].uid, uid) == 0 && strcmp(u->s[i].device, device) == 0)
                        return &u->s[i];
        if (u->n == GS_DRA_USAGE_MAX_SHARES) {
                if (!u->full_noted)
                        say(u, "more than %d prepared shares: the others get no usage on their claims",
                            GS_DRA_USAGE_MAX_SHARES);
                u->full_noted = true;
                return NULL;
        }
        struct share *s = &u->s[u->n++];
        memset(s, 0, sizeof(*s));
        gs_strlcpy(s->uid, uid, sizeof(s->uid));
        gs_strlcpy(s->device, device, sizeof(s->device));
        return s;
}

static const char *str_of(json_object *o, const char *key)
{
        json_object *v = NULL;
        return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string) ? json_object_get_string(v)
                                                                                                  : "";
}

/* One device entry of a checkpoint claim: followed if it is a slice share of a GPU or MIG device
 * of ours. */
static void follow(struct gs_dra_usage *u, const char *uid, json_object *entry, json_object *d)
{
        json_object *mem = NULL, *cs = NULL;
        unsigned gpu;
        int mig;
        struct gs_error e = {0};
        const char *device = str_of(d, "device");
        if (!json_object_object_get_ex(d, "memory", &mem) || !json_object_object_get_ex(d, "compute", &cs) ||
            gs_dra_device_lookup(u->prep->dev, device, &gpu, &mig, &e) < 0)
                return; /* a device held whole: no slice, no region */
        struct share *s = share_get(u, uid, device);
        if (s == NULL)
                return;
        s->live = true;
        gs_strlcpy(s->ns, str_of(entry, "namespace"), sizeof(s->ns));
        gs_strlcpy(s->name, str_of(entry, "name"), sizeof(s->name));
        gs_strlcpy(s->pool, str_of(d, "pool"), sizeof(s->pool));
        gs_strlcpy(s->share_id, str_of(d, "share_id"), sizeof(s->share_id));
        int64_t q = json_object_get_int64(mem);
        int c = json_object_get_int(cs);
        const struct gs_gpu *g = &u->prep->dev->gpus[gpu];
        s->gpu = gpu;
        s->mig = mig;
        s->total = mig >= 0 ? g->migs[mig].memory_total : g->memory_total;
        s->quota = q > 0 && (uint64_t)q < s->total ? (uint64_t)q : 0;
        s->compute_limit = c > 0 && c < 100 ? (unsigned)c : 0;
}

/* The shares the checkpoint holds now (read under its lock); those gone are forgotten. */
static void refresh(struct gs_dra_usage *u)
{
        struct gs_error e = {0};
        if (gs_dra_ck_begin(u->prep, &e) < 0)
                return; /* the lock cannot be had now: the shares of the last sample */
        for (size_t i = 0; i < u->n; i++)
                u->s[i].live = false;
        json_object_object_foreach(u->prep->claims, uid, entry) {
                json_object *devs = NULL;
                if (str_of(entry, "namespace")[0] == '\0' || str_of(entry, "name")[0] == '\0' ||
                    !json_object_object_get_ex(entry, "devices", &devs) || !json_object_is_type(devs, json_type_array))
                        continue;
                for (size_t k = 0; k < json_object_array_length(devs); k++)
                        follow(u, uid, entry, json_object_array_get_idx(devs, k));
        }
        gs_dra_ck_end(u->prep);
        size_t k = 0;
        for (size_t i = 0; i < u->n; i++)
                if (u->s[i].live)
                        u->s[k++] = u->s[i];
        u->n = k;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
        return a + b < a ? UINT64_MAX : a + b;
}

/* The regions of the share's claim into s->now, clamped: what the tenant wrote is never trusted. */
static void measure(struct gs_dra_usage *u, struct share *s, const struct gs_observation *obs)
{
        const struct gs_gpu *g = &u->prep->dev->gpus[s->gpu];
        const char *uuid = s->mig >= 0 ? g->migs[s->mig].uuid : g->uuid;
        struct sample *m = &s->now;
        memset(m, 0, sizeof(*m));
        m->compute_valid = m->throttle_valid = true;
        uint64_t throttled_ns = 0, window_ns = 0;
        for (size_t i = 0; i < obs->nslices; i++) {
                const struct gs_obs_slice *sl = &obs->slices[i];
                if (!sl->in_regions_dir || strcmp(sl->labels.ns, s->ns) != 0 || strcmp(sl->labels.claim, s->name) != 0)
                        continue;
                int d = -1;
                /* the device by its UUID's hex (a MIG device's region may name it GPU-<hex>: the
                 * driver's UUID bytes do not say which kind they are) */
                for (unsigned k = 0; k < sl->ndevices && k < GS_REGION_MAX_DEVICES; k++)
                        if (strlen(sl->dev[k].uuid) > 4 && strcasecmp(sl->dev[k].uuid + 4, uuid + 4) == 0)
                                d = (int)k;
                if (d < 0 && sl->ndevices == 1)
                        d = 0;
                if (d < 0)
                        continue;
                const struct gs_obs_device *dv = &sl->dev[d];
                m->containers++;
                m->used = sat_add(m->used, dv->memory_used);
                m->refused = sat_add(m->refused, sl->refused);
                m->procs += dv->processes <= GS_REGION_MAX_PROCS ? dv->processes : GS_REGION_MAX_PROCS;
                double c = dv->compute_used;
                m->compute_valid &= dv->compute_used_valid;
                m->compute += dv->compute_used_valid && isfinite(c) && c > 0 ? (c < 1 ? c : 1) : 0;
                m->throttle_valid &= dv->waits_known && dv->waits_window_valid;
                if (dv->waits_known && dv->waits_window_valid) {
                        throttled_ns = sat_add(throttled_ns, dv->waits_window.sum_ns);
                        window_ns = sl->waits_window_ns > window_ns ? sl->waits_window_ns : window_ns;
                }
        }
        m->used = m->used < s->total ? m->used : s->total;
        m->refused = m->refused < (uint64_t)INT64_MAX ? m->refused : (uint64_t)INT64_MAX;
        m->compute = m->compute < 1 ? m->compute : 1;
        m->compute_valid &= m->containers > 0;
        m->throttle_valid &= m->containers > 0;
        uint64_t bound = window_ns / 1000000 * (m->procs > 0 ? m->procs : 1);
        m->window_ms = window_ns / 1000000;
        m->throttled_ms = throttled_ns / 1000000 < bound ? throttled_ns / 1000000 : bound;
        if (m->containers > 0 && m->used > s->peak)
                s->peak = m->used;
        m->peak = s->peak;
}

static uint64_t diff(uint64_t a, uint64_t b)
{
        return a > b ? a - b : b - a;
}

/* Has the share moved enough since its last write to be worth one (usage.h)? */
static bool moved(const struct share *s)
{
        const struct sample *a = &s->now, *b = &s->last;
        if (!s->written)
                return true;
        uint64_t step = (s->quota ? s->quota : s->total) / 100;
        step = step > MiB ? step : MiB;
        uint64_t tstep = a->window_ms / 100 > 100 ? a->window_ms / 100 : 100;
        return diff(a->used, b->used) >= step || a->refused != b->refused || a->procs != b->procs ||
               a->containers != b->containers || a->compute_valid != b->compute_valid ||
               fabs(a->compute - b->compute) >= 0.01 || a->throttle_valid != b->throttle_valid ||
               diff(a->throttled_ms, b->throttled_ms) >= tstep || diff(a->peak, b->peak) >= step;
}

/* "3.9 of 4 Gi": in GiB when the bound is 1 GiB or more, else MiB. */
static void human(uint64_t used, uint64_t of, char *buf, size_t len)
{
        double unit = of >= 1024 * MiB ? 1024.0 * MiB : (double)MiB;
        snprintf(buf, len, "%.1f of %.4g %s", (double)used / unit, (double)of / unit, of >= 1024 * MiB ? "Gi" : "Mi");
}

/* A number written with `decimals` decimals (json-c's own would print 29.399999999999999). */
static json_object *num(double v, int decimals)
{
        char text[64];
        snprintf(text, sizeof(text), "%.*f", decimals, v);
        return json_object_new_double_s(v, text);
}

/* The share's data object: a fixed shape, numbers and strings formatted here (usage.h). */
static json_object *data_of(const struct share *s)
{
        const struct sample *m = &s->now;
        char mem[64], peak[64], sum[320], gpu[96] = "", thr[64] = "";
        uint64_t bound = s->quota ? s->quota : s->total;
        human(m->used, bound, mem, sizeof(mem));
        human(m->peak, bound, peak, sizeof(peak));
        char *of = strstr(peak, " of ");
        if (of != NULL)
                *of = '\0';
        if (m->compute_valid && s->compute_limit)
                snprintf(gpu, sizeof(gpu), ", GPU time %.1f %% of %u %% over %.0f s", m->compute * 100, s->compute_limit,
                         (double)m->window_ms / 1000);
        else if (m->compute_valid)
                snprintf(gpu, sizeof(gpu), ", GPU time %.1f %% over %.0f s", m->compute * 100, (double)m->window_ms / 1000);
        if (m->throttle_valid)
                snprintf(thr, sizeof(thr), ", throttled %.1f s", (double)m->throttled_ms / 1000);
        snprintf(sum, sizeof(sum), "%s%s (peak %s%s)%s%s", mem, s->quota ? "" : " (no quota)", peak,
                 bound >= 1024 * MiB ? " Gi" : " Mi", gpu, thr);
        json_object *d = json_object_new_object(), *jm = json_object_new_object(), *jc = json_object_new_object();
        json_object_object_add(d, "summary", json_object_new_string(sum));
        json_object_object_add(jm, "usedBytes", json_object_new_int64((int64_t)m->used));
        json_object_object_add(jm, "peakBytes", json_object_new_int64((int64_t)m->peak));
        if (s->quota)
                json_object_object_add(jm, "limitBytes", json_object_new_int64((int64_t)s->quota));
        json_object_object_add(jm, "quotaRefusals", json_object_new_int64((int64_t)m->refused));
        json_object_object_add(d, "memory", jm);
        if (s->compute_limit)
                json_object_object_add(jc, "limitPercent", json_object_new_int((int)s->compute_limit));
        if (m->compute_valid) {
                json_object_object_add(jc, "usedPercent", num(m->compute * 100, 1));
                json_object_object_add(jc, "windowSeconds", num((double)m->window_ms / 1000, 1));
        }
        if (m->throttle_valid)
                json_object_object_add(jc, "throttledSeconds", num((double)m->throttled_ms / 1000, 3));
        json_object_object_add(d, "compute", jc);
        json_object_object_add(d, "processes", json_object_new_int((int)(m->procs < 1u << 20 ? m->procs : 1u << 20)));
        return d;
}

/* All the measured shares of s's claim in one apply (the claim's entries of our manager are all of
 * them at once: an entry left out would be taken away). */
static void write_claim(struct gs_dra_usage *u, struct share *s, long long now)
{
        struct gs_dra_status_entry e[GS_DRA_MAX_RESULTS];
        struct share *which[GS_DRA_MAX_RESULTS];
        size_t n = 0;
        for (size_t i = 0; i < u->n && n < GS_DRA_MAX_RESULTS; i++) {
                struct share *t = &u->s[i];
                if (strcmp(t->uid, s->uid) != 0 || t->now.containers == 0)
                        continue;
                t->done = true;
                which[n] = t;
                e[n] = (struct gs_dra_status_entry){t->pool, t->device, t->share_id, data_of(t)};
                n++;
        }
        struct gs_error err = {0};
        int rc = gs_dra_status_data(u->prep->api, u->prep->driver, s->ns, s->name, s->uid, e, n, &err);
        for (size_t i = 0; i < n; i++) {
                json_object_put(e[i].data);
                if (rc == 0) {
                        which[i]->written = true;
                        which[i]->last = which[i]->now;
                }
                which[i]->written_at = now; /* a refused write is tried again a period later */
        }
        if (rc < 0 && strcmp(u->write_noted, err.msg) != 0)
                say(u, "cannot write the usage on claim %s/%s: %s", s->ns, s->name, err.msg);
        gs_strlcpy(u->write_noted, rc < 0 ? err.msg : "", sizeof(u->write_noted));
}

/* The refusals grew: the share hit its quota. One Event a share a max(period, 60 s) at most; the
 * refusals of a first sight count (the plugin may have restarted since). */
static void quota_event(struct gs_dra_usage *u, struct share *s, long long now)
{
        long long gap = u->period_ms > EVENT_MIN_MS ? u->period_ms : EVENT_MIN_MS;
        if (s->now.containers == 0)
                return;
        if (s->now.refused < s->refused)
                s->refused = 0; /* a region made anew (the container restarted): counted from there */
        if (s->now.refused == s->refused || (s->event_at != 0 && now - s->event_at < gap))
                return;
        char msg[512], q[32], used[32];
        gs_k8s_quantity_format(s->quota ? s->quota : s->total, q, sizeof(q));
        gs_k8s_quantity_format(s->now.used, used, sizeof(used));
        snprintf(msg, sizeof(msg), "the claim's share of %s hit its memory quota of %s: %" PRIu64 " allocation(s) refused "
                 "(%" PRIu64 " in all), %s in use", s->device, q, s->now.refused - s->refused, s->now.refused, used);
        struct gs_error err = {0};
        if (gs_dra_event_claim(u->prep->api, u->prep->driver, u->prep->node, s->ns, s->name, s->uid, "MemoryQuotaReached",
                               msg, &err) < 0) {
                say(u, "cannot post the MemoryQuotaReached Event on claim %s/%s: %s", s->ns, s->name, err.msg);
                return; /* tried again at the next sample */
        }
        say(u, "claim %s/%s: %s", s->ns, s->name, msg);
        s->event_at = now;
        s->refused = s->now.refused;
}

long long gs_dra_usage_tick(struct gs_dra_usage *u, long long now)
{
        if (now < u->next)
                return u->next;
        unsigned every = u->period_ms < SAMPLE_MAX_MS ? u->period_ms : SAMPLE_MAX_MS;
        u->next = now + every;
        refresh(u);
        struct gs_observation obs;
        struct gs_error err = {0};
        if (u->n == 0 || gs_collector_scan(u->col, &obs, &err) < 0)
                return u->next;
        for (size_t i = 0; i < u->n; i++) {
                u->s[i].done = false;
                measure(u, &u->s[i], &obs);
        }
        gs_observation_release(&obs);
        unsigned writes = 0;
        for (size_t i = 0; i < u->n; i++) {
                struct share *s = &u->s[i];
                quota_event(u, s, now);
                if (!s->done && s->now.containers > 0 && now - s->written_at >= (long long)u->period_ms && moved(s) &&
                    writes < WRITES_PER_SAMPLE) {
                        write_claim(u, s, now);
                        writes++; /* the others at the next sample */
                }
        }
        return u->next;
}
