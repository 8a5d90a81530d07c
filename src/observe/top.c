/* The view of `gpuslice top`: rows, sorting, lines of a given width, JSON (top.h). */
#include "observe/top.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/strutil.h"

/* Columns: NAME GPU MEMORY(used / quota) BAR COMPUTE(used / limit) PRIO WAIT PROCS [PIDS], one
 * space apart. */
#define GPU_W 3
#define MEM_W 13     /* "1023M / 1023M" */
#define COMPUTE_W 11 /* "100% / 100%" */
#define PRIO_W 4     /* "high", "norm", "low" */
#define WAIT_W 5     /* the launch waits' p99: "2.5ms", "250us", ">1s", "idle" */
#define PROCS_W 5
#define NAME_MIN 12
#define NAME_COMFORT 20
#define BAR_MIN 8
#define BAR_NAT 16
#define BAR_MAX 32
#define PIDS_MIN 10
#define PIDS_MAX 160
#define SHORT_ID 12 /* docker's short container id */

static const char *const sort_names[] = {
        [GS_TOP_SORT_MEMORY] = "memory",
        [GS_TOP_SORT_COMPUTE] = "compute",
        [GS_TOP_SORT_NAME] = "name",
};

const char *gs_top_sort_name(enum gs_top_sort by)
{
        return (unsigned)by < GS_ARRAY_SIZE(sort_names) ? sort_names[by] : "?";
}

int gs_top_sort_parse(const char *s, enum gs_top_sort *out)
{
        for (size_t i = 0; i < GS_ARRAY_SIZE(sort_names); i++)
                if (strcmp(s, sort_names[i]) == 0 || (s[0] == sort_names[i][0] && s[1] == '\0')) {
                        *out = (enum gs_top_sort)i;
                        return 0;
                }
        return -1;
}

/* ------------------------------------------------------------------------------------------- */
/* text pieces                                                                                 */

/* Length of the valid UTF-8 sequence at s (2..4), or 0. */
static size_t utf8_seq(const unsigned char *s)
{
        size_t n;
        unsigned min;
        if (s[0] >= 0xc2 && s[0] <= 0xdf)
                n = 2, min = 0x80;
        else if (s[0] >= 0xe0 && s[0] <= 0xef)
                n = 3, min = 0x800;
        else if (s[0] >= 0xf0 && s[0] <= 0xf4)
                n = 4, min = 0x10000;
        else
                return 0;
        unsigned cp = s[0] & (0x7f >> n);
        for (size_t i = 1; i < n; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (s[i] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
                return 0;
        return n;
}

void gs_top_printable(const char *s, char *out, size_t len)
{
        size_t k = 0;
        const unsigned char *u = (const unsigned char *)s;
        while (*u != '\0' && k + 1 < len) {
                size_t n = *u >= 0x80 ? utf8_seq(u) : 0;
                out[k++] = *u >= 0x20 && *u < 0x7f ? (char)*u : '?';
                u += n > 0 ? n : 1;
        }
        if (len > 0)
                out[k] = '\0';
}

/* s with its invalid UTF-8 bytes replaced by '?' (allocated; NULL when out of memory). */
static char *utf8_repaired(const char *s)
{
        size_t n = strlen(s);
        char *out = malloc(n + 1);
        if (out == NULL)
                return NULL;
        const unsigned char *u = (const unsigned char *)s;
        size_t k = 0;
        while (*u != '\0') {
                size_t q = *u >= 0x80 ? utf8_seq(u) : 1;
                if (q == 0) {
                        out[k++] = '?';
                        u++;
                } else {
                        memcpy(out + k, u, q);
                        k += q;
                        u += q;
                }
        }
        out[k] = '\0';
        return out;
}

static bool is_hex_id(const char *s)
{
        size_t n = strspn(s, "0123456789abcdef");
        return n > SHORT_ID && s[n] == '\0';
}

void gs_top_fit(const char *name, unsigned w, char *out, size_t len)
{
        char p[GS_TOP_NAME_MAX];
        gs_top_printable(name, p, sizeof(p));
        size_t n = strlen(p);
        if (w + 1 > len)
                w = len > 0 ? (unsigned)(len - 1) : 0;
        if (n <= w) {
                memcpy(out, p, n + 1);
                return;
        }
        if (w < 5 || is_hex_id(p)) { /* a container id: its prefix is what runtimes accept */
                unsigned k = is_hex_id(p) && w > SHORT_ID ? SHORT_ID : w;
                memcpy(out, p, k);
                out[k] = '\0';
                return;
        }
        if (p[0] == '/') { /* a path: its end names it */
                snprintf(out, len, "..%s", p + n - (w - 2));
                return;
        }
        unsigned head = (w - 2 + 1) / 2, tail = w - 2 - head;
        snprintf(out, len, "%.*s..%s", (int)head, p, p + n - tail);
}

const char *gs_top_fmt_bytes(uint64_t bytes, char out[8])
{
        static const char units[] = "BKMGTPE";
        if (bytes < 1024) {
                snprintf(out, 8, bytes == 0 ? "0" : "%uB", (unsigned)bytes);
                return out;
        }
        double v = (double)bytes;
        unsigned u = 0;
        while (v >= 1024 && u + 1 < sizeof(units) - 1) {
                v /= 1024;
                u++;
        }
        if (v < 9.95) {
                snprintf(out, 8, "%.1f%c", v, units[u]);
        } else if (v < 1023.5 || u + 2 >= sizeof(units)) {
                snprintf(out, 8, "%.0f%c", v > 9999 ? 9999 : v, units[u]);
        } else {
                snprintf(out, 8, "1.0%c", units[u + 1]);
        }
        return out;
}

static const char *fmt_percent(double ratio, char out[8])
{
        double p = ratio * 100;
        snprintf(out, 8, "%.0f%%", p > 999 ? 999 : p < 0 ? 0 : p);
        return out;
}

/* ------------------------------------------------------------------------------------------- */
/* the view                                                                                    */

static void display_name(const struct gs_obs_slice *s, char *out, size_t len)
{
        const struct gs_slice_labels *l = &s->labels;
        char raw[GS_TOP_NAME_MAX];
        if (l->pod[0] != '\0' || l->container[0] != '\0')
                snprintf(raw, sizeof(raw), "%s%s%s%s%s", l->ns, l->ns[0] ? "/" : "", l->pod,
                         l->pod[0] && l->container[0] ? "/" : "", l->container);
        else
                gs_strlcpy(raw, s->id, sizeof(raw));
        if (l->claim[0] != '\0') { /* a DRA claim's slice: "... (claim NAME)" */
                size_t n = strlen(raw);
                snprintf(raw + n, sizeof(raw) - n, " (claim %s)", l->claim);
        }
        gs_top_printable(raw, out, len);
}

int gs_top_view_build(struct gs_top_view *v, const struct gs_observation *obs, const struct gs_gpu_stats *gpus,
                      struct gs_error *err)
{
        memset(v, 0, sizeof(*v));
        v->obs = obs;
        size_t total = 0;
        for (size_t i = 0; i < obs->nslices; i++)
                total += obs->slices[i].ndevices;
        v->rows = calloc(total > 0 ? total : 1, sizeof(*v->rows));
        v->names = calloc(obs->nslices > 0 ? obs->nslices : 1, sizeof(*v->names));
        if (gpus != NULL) {
                v->nvml = true;
                v->nvml_valid = gpus->valid;
                v->nvml_fresh = gpus->fresh;
                gs_strlcpy(v->nvml_error, gpus->error, sizeof(v->nvml_error));
                if (gpus->valid && gpus->info.ngpus > 0)
                        v->gpus = calloc(gpus->info.ngpus, sizeof(*v->gpus));
        }
        if (v->rows == NULL || v->names == NULL || (v->nvml_valid && gpus->info.ngpus > 0 && v->gpus == NULL)) {
                gs_top_view_release(v);
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        }
        for (unsigned g = 0; v->gpus != NULL && g < gpus->info.ngpus && g < GS_MAX_GPUS; g++) {
                const struct gs_gpu *src = &gpus->info.gpus[g];
                struct gs_top_gpu *dst = &v->gpus[v->ngpus++];
                dst->index = src->index;
                gs_strlcpy(dst->uuid, src->uuid, sizeof(dst->uuid));
                gs_strlcpy(dst->model, src->model, sizeof(dst->model));
                dst->memory_used = src->memory_used;
                dst->memory_total = src->memory_total;
                dst->utilization_valid = src->utilization_valid;
                dst->utilization = src->utilization_gpu;
        }
        for (size_t i = 0; i < obs->nslices; i++) {
                const struct gs_obs_slice *s = &obs->slices[i];
                display_name(s, v->names[i], sizeof(v->names[i]));
                for (unsigned d = 0; d < s->ndevices; d++) {
                        struct gs_top_row *r = &v->rows[v->nrows++];
                        r->slice = s;
                        r->dev = &s->dev[d];
                        r->slice_index = i;
                        r->name = v->names[i];
                        r->gpu = gpus != NULL ? gs_gpu_stats_index(gpus, s->dev[d].uuid) : -1;
                }
        }
        return 0;
}

/* The slice with this id in a view (its observation is sorted by id), or -1. */
static long find_slice(const struct gs_top_view *v, const char *id)
{
        size_t lo = 0, hi = v->obs != NULL ? v->obs->nslices : 0;
        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                int c = strcmp(v->obs->slices[mid].id, id);
                if (c == 0)
                        return (long)mid;
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return -1;
}

/* What prev knew of slice s's processes, where it still holds: how many of them. */
static unsigned reuse_pids(const struct gs_top_view *prev, const struct gs_obs_slice *s, pid_t *out)
{
        long pi = prev != NULL && prev->host_pids != NULL ? find_slice(prev, s->id) : -1;
        if (pi < 0)
                return 0;
        const struct gs_obs_slice *ps = &prev->obs->slices[pi];
        const pid_t *php = prev->host_pids[pi];
        unsigned found = 0;
        for (unsigned i = 0; i < s->nprocs; i++) {
                const struct gs_obs_proc *pr = &s->procs[i];
                for (unsigned j = 0; pr->start_time != 0 && j < ps->nprocs; j++) {
                        const struct gs_obs_proc *pp = &ps->procs[j];
                        if (pp->slot == pr->slot && pp->pid == pr->pid && pp->start_time == pr->start_time &&
                            php[j] > 0 && gs_region_proc_start_time(php[j]) == pr->start_time) {
                                out[i] = php[j];
                                found++;
                                break;
                        }
                }
        }
        return found;
}

int gs_top_view_host_pids(struct gs_top_view *v, const struct gs_top_view *prev, struct gs_error *err)
{
        const struct gs_observation *obs = v->obs;
        if (v->host_pids == NULL && (v->host_pids = calloc(obs->nslices > 0 ? obs->nslices : 1, sizeof(pid_t *))) == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        for (size_t i = 0; i < obs->nslices; i++) {
                const struct gs_obs_slice *s = &obs->slices[i];
                free(v->host_pids[i]);
                if ((v->host_pids[i] = calloc(s->nprocs > 0 ? s->nprocs : 1, sizeof(pid_t))) == NULL)
                        return gs_error_set(err, GS_ENOMEM, "out of memory");
                if (s->nprocs > 0 && reuse_pids(prev, s, v->host_pids[i]) < s->nprocs)
                        gs_obs_host_pids(s, v->host_pids[i]);
        }
        return 0;
}

void gs_top_view_release(struct gs_top_view *v)
{
        for (size_t i = 0; v->host_pids != NULL && v->obs != NULL && i < v->obs->nslices; i++)
                free(v->host_pids[i]);
        free(v->host_pids);
        free(v->rows);
        free(v->names);
        free(v->gpus);
        memset(v, 0, sizeof(*v));
}

static int cmp_u64_desc(uint64_t a, uint64_t b) { return a < b ? 1 : a > b ? -1 : 0; }

/* Compute used as a sort key: measured ratios first (largest first), then slices whose window has
 * not closed, then unmeasured ones. */
static double compute_key(const struct gs_obs_device *d)
{
        return d->compute_used_valid ? d->compute_used : d->compute_measured ? -1 : -2;
}

static int by_name(const struct gs_top_row *a, const struct gs_top_row *b)
{
        int c = strcmp(a->name, b->name);
        if (c == 0)
                c = strcmp(a->slice->id, b->slice->id);
        if (c == 0)
                c = a->dev->index < b->dev->index ? -1 : a->dev->index > b->dev->index;
        return c;
}

static int cmp_rows(const void *pa, const void *pb, void *arg)
{
        const struct gs_top_row *a = pa, *b = pb;
        enum gs_top_sort by = *(const enum gs_top_sort *)arg;
        int c = 0;
        if (by == GS_TOP_SORT_MEMORY) {
                c = cmp_u64_desc(a->dev->memory_used, b->dev->memory_used);
        } else if (by == GS_TOP_SORT_COMPUTE) {
                double ka = compute_key(a->dev), kb = compute_key(b->dev);
                c = ka < kb ? 1 : ka > kb ? -1 : 0;
                if (c == 0)
                        c = cmp_u64_desc(a->dev->memory_used, b->dev->memory_used);
        }
        return c != 0 ? c : by_name(a, b);
}

void gs_top_sort(struct gs_top_view *v, enum gs_top_sort by)
{
        if (v->nrows > 1)
                qsort_r(v->rows, v->nrows, sizeof(*v->rows), cmp_rows, &by);
}

/* ------------------------------------------------------------------------------------------- */
/* lines                                                                                       */

/* The host pids of the row's slice, "123,456" ('?' for one not found), cut at w with "+N". */
static void fmt_pids(const struct gs_top_view *v, const struct gs_top_row *r, unsigned w, char *out, size_t len)
{
        const struct gs_obs_slice *s = r->slice;
        const pid_t *hp = v->host_pids != NULL ? v->host_pids[r->slice_index] : NULL;
        snprintf(out, len, "%s", s->nprocs == 0 ? "-" : "");
        if (w + 1 < len)
                len = w + 1;
        /* all of them, if they fit; else as many as fit with room for "+N" after them */
        for (int pass = 0; pass < 2; pass++) {
                size_t k = 0;
                out[0] = '\0';
                for (unsigned i = 0; i < s->nprocs; i++) {
                        char one[16], more[16];
                        if (hp != NULL && hp[i] > 0)
                                snprintf(one, sizeof(one), "%s%d", i > 0 ? "," : "", (int)hp[i]);
                        else
                                snprintf(one, sizeof(one), "%s?", i > 0 ? "," : "");
                        size_t n = strlen(one), need = n;
                        if (pass == 1 && i + 1 < s->nprocs)
                                need += (size_t)snprintf(more, sizeof(more), ",+%u", s->nprocs - i - 1);
                        if (k + need >= len) {
                                if (pass == 0)
                                        break;
                                snprintf(more, sizeof(more), "%s+%u", i > 0 ? "," : "", s->nprocs - i);
                                if (k + strlen(more) < len)
                                        memcpy(out + k, more, strlen(more) + 1);
                                return;
                        }
                        memcpy(out + k, one, n + 1);
                        k += n;
                        if (pass == 0 && i + 1 == s->nprocs)
                                return;
                }
        }
}

static size_t pids_natural(const struct gs_top_view *v, const struct gs_top_row *r)
{
        char buf[PIDS_MAX + 1];
        fmt_pids(v, r, PIDS_MAX, buf, sizeof(buf));
        return strlen(buf);
}

void gs_top_layout(const struct gs_top_view *v, unsigned width, bool pids, struct gs_top_layout *l)
{
        size_t name_nat = strlen("CONTAINER") + 1, name_short = name_nat, pids_nat = pids ? strlen("PIDS") + 1 : 0;
        for (size_t i = 0; i < v->nrows; i++) {
                size_t n = strlen(v->rows[i].name);
                if (n > name_nat)
                        name_nat = n;
                size_t sh = is_hex_id(v->rows[i].name) ? SHORT_ID : n;
                if (sh > name_short)
                        name_short = sh;
                if (pids) {
                        size_t p = pids_natural(v, &v->rows[i]);
                        if (p > pids_nat)
                                pids_nat = p;
                }
        }
        memset(l, 0, sizeof(*l));
        l->width = width;
        if (width == 0) {
                l->name_w = (unsigned)name_nat;
                l->bar_w = BAR_NAT;
                l->pids_w = (unsigned)pids_nat;
        } else {
                /* NAME and BAR share what the fixed columns leave: the name up to a comfortable
                 * width, the bar to its natural one, then the name to its full length (a container
                 * id only to its short form), then PIDS, then the bar up to its maximum. */
                unsigned name_min = name_nat < NAME_MIN ? (unsigned)name_nat : NAME_MIN;
                unsigned pids_min = !pids ? 0 : pids_nat < PIDS_MIN ? (unsigned)pids_nat : PIDS_MIN;
                unsigned fixed = GPU_W + MEM_W + COMPUTE_W + PRIO_W + WAIT_W + PROCS_W + 7 + (pids ? 1 + pids_min : 0);
                unsigned rest = width > fixed + name_min + BAR_MIN ? width - fixed - name_min - BAR_MIN : 0;
                unsigned name_w = name_min, bar_w = BAR_MIN, pids_w = pids_min;
#define GROW(var, target)                                                                                   \
        do {                                                                                                \
                unsigned want_ = (target) > (var) ? (unsigned)(target) - (var) : 0;                         \
                unsigned add_ = want_ < rest ? want_ : rest;                                                \
                (var) += add_;                                                                              \
                rest -= add_;                                                                               \
        } while (0)
                size_t name_target = name_short < name_nat && width < fixed + name_nat + BAR_NAT ? name_short : name_nat;
                GROW(name_w, name_target < NAME_COMFORT ? name_target : NAME_COMFORT);
                GROW(bar_w, BAR_NAT);
                GROW(name_w, name_target);
                if (pids)
                        GROW(pids_w, pids_nat < PIDS_MAX ? pids_nat : PIDS_MAX);
                GROW(bar_w, BAR_MAX);
#undef GROW
                /* too narrow even for the minimums: PIDS gives way first (down to "+N") */
                unsigned total = fixed - pids_min + name_w + bar_w + pids_w;
                if (pids && total > width) {
                        unsigned give = total - width < pids_w - 2 ? total - width : pids_w > 2 ? pids_w - 2 : 0;
                        pids_w -= give;
                }
                l->name_w = name_w;
                l->bar_w = bar_w;
                l->pids_w = pids_w;
        }
        l->bar_col = l->name_w + 1 + GPU_W + 1 + MEM_W + 1;
}

static void cut(char *buf, size_t len, unsigned width)
{
        if (width > 0 && width < len && strlen(buf) > width)
                buf[width] = '\0';
}

void gs_top_format_title(const struct gs_top_view *v, enum gs_top_sort by, const char *clock, unsigned width,
                         char *buf, size_t len)
{
        const struct gs_observation *o = v->obs;
        size_t k = 0;
#define ADD(...) (k += (size_t)snprintf(buf + k, k < len ? len - k : 0, __VA_ARGS__), k = k < len ? k : len)
        ADD("gpuslice top");
        if (clock != NULL && clock[0] != '\0')
                ADD("  %s", clock);
        ADD("  %zu slice%s", o->nslices, o->nslices == 1 ? "" : "s");
        ADD("  sort: %s", gs_top_sort_name(by));
        if (o->skipped > 0)
                ADD("  %u skipped", o->skipped);
        if (o->pending > 0)
                ADD("  %u pending", o->pending);
        if (v->nvml && !v->nvml_valid)
                ADD("  NVML: %s", v->nvml_error[0] != '\0' ? v->nvml_error : "no answer yet");
        else if (v->nvml && !v->nvml_fresh)
                ADD("  NVML (stale): %s", v->nvml_error);
#undef ADD
        /* the NVML error is the helper's text: made printable like everything else */
        char tmp[1024];
        gs_top_printable(buf, tmp, sizeof(tmp));
        gs_strlcpy(buf, tmp, len);
        cut(buf, len, width);
}

void gs_top_format_gpu(const struct gs_top_view *v, unsigned i, unsigned width, char *buf, size_t len)
{
        const struct gs_top_gpu *g = &v->gpus[i];
        char model[GS_STR_LONG], used[8], total[8], util[16] = "";
        gs_top_printable(g->model, model, sizeof(model));
        if (g->utilization_valid)
                snprintf(util, sizeof(util), "  util %u%%", g->utilization);
        snprintf(buf, len, "GPU %u  %s  memory %s / %s%s", g->index, model, gs_top_fmt_bytes(g->memory_used, used),
                 gs_top_fmt_bytes(g->memory_total, total), util);
        cut(buf, len, width);
}

void gs_top_format_header(const struct gs_top_layout *l, enum gs_top_sort by, char *buf, size_t len)
{
        char name[32], mem[16], comp[16];
        snprintf(name, sizeof(name), "CONTAINER%s", by == GS_TOP_SORT_NAME ? "*" : "");
        snprintf(mem, sizeof(mem), "MEMORY%s", by == GS_TOP_SORT_MEMORY ? "*" : "");
        snprintf(comp, sizeof(comp), "COMPUTE%s", by == GS_TOP_SORT_COMPUTE ? "*" : "");
        int n = snprintf(buf, len, "%-*s %*s %*s %-*s %*s %-*s %*s %*s", (int)l->name_w, name, GPU_W, "GPU", MEM_W,
                         mem, (int)l->bar_w, "", COMPUTE_W, comp, PRIO_W, "PRIO", WAIT_W, "WAIT", PROCS_W, "PROCS");
        if (l->pids_w > 0 && n > 0 && (size_t)n < len)
                snprintf(buf + n, len - (size_t)n, " %-*s", (int)l->pids_w, "PIDS");
        /* no trailing blanks */
        size_t e = strlen(buf);
        while (e > 0 && buf[e - 1] == ' ')
                buf[--e] = '\0';
        cut(buf, len, l->width);
}

double gs_top_memory_fraction(const struct gs_top_row *r)
{
        if (r->dev->memory_limit == 0)
                return -1;
        return (double)r->dev->memory_used / (double)r->dev->memory_limit;
}

unsigned gs_top_bar_fill(const struct gs_top_layout *l, const struct gs_top_row *r)
{
        double f = gs_top_memory_fraction(r);
        unsigned cells = l->bar_w > 2 ? l->bar_w - 2 : 0;
        if (f <= 0)
                return 0;
        double n = f * cells + 0.5;
        return n >= cells ? cells : (unsigned)n;
}

static void fmt_bar(const struct gs_top_layout *l, const struct gs_top_row *r, char *out, size_t len)
{
        unsigned cells = l->bar_w > 2 ? l->bar_w - 2 : 0;
        char in[BAR_MAX + 1];
        double f = gs_top_memory_fraction(r);
        if (cells > BAR_MAX - 2)
                cells = BAR_MAX - 2;
        memset(in, ' ', cells);
        in[cells] = '\0';
        if (f < 0) {
                const char *t = cells >= 8 ? "no quota" : "-";
                size_t n = strlen(t) < cells ? strlen(t) : cells;
                memcpy(in, t, n);
        } else {
                unsigned fill = gs_top_bar_fill(l, r);
                memset(in, '#', fill);
                char pct[8];
                fmt_percent(f, pct);
                size_t n = strlen(pct);
                if (cells >= n + 1)
                        memcpy(in + cells - n, pct, n);
        }
        snprintf(out, len, "[%s]", in);
}

const char *gs_top_priority_name(uint32_t prio)
{
        static const char *const names[] = {"high", "normal", "low"};
        return prio < GS_ARRAY_SIZE(names) ? names[prio] : NULL;
}

const char *gs_top_fmt_wait_edge(int bucket, char out[8])
{
        if (bucket < 0) {
                snprintf(out, 8, "0");
                return out;
        }
        if (bucket >= GS_REGION_WAIT_BUCKETS - 1) {
                snprintf(out, 8, ">%gs", (double)gs_region_wait_edge_ns(GS_REGION_WAIT_BUCKETS - 2) / 1e9);
                return out;
        }
        uint64_t ns = gs_region_wait_edge_ns((unsigned)bucket);
        if (ns < 1000000)
                snprintf(out, 8, "%gus", (double)ns / 1e3);
        else if (ns < 1000000000)
                snprintf(out, 8, "%gms", (double)ns / 1e6);
        else
                snprintf(out, 8, "%gs", (double)ns / 1e9);
        return out;
}

/* WAIT: the bound of the last window's 99th percentile launch wait; "-" not counted, ".." no
 * window closed yet, "idle" no launch in it. */
static const char *fmt_wait(const struct gs_obs_device *d, char out[8])
{
        if (!d->waits_known)
                snprintf(out, 8, "-");
        else if (!d->waits_window_valid)
                snprintf(out, 8, "..");
        else if (d->waits_window.launches == 0)
                snprintf(out, 8, "idle");
        else
                gs_top_fmt_wait_edge(d->waits_window.p99, out);
        return out;
}

void gs_top_format_row(const struct gs_top_view *v, const struct gs_top_layout *l, const struct gs_top_row *r,
                       char *buf, size_t len)
{
        const struct gs_obs_device *d = r->dev;
        char name[GS_TOP_NAME_MAX], gpu[16], used[8], quota[8], mem[32], bar[BAR_MAX + 3], cu[8], cl[8], comp[32],
                wait[8];
        static const char *const prios[] = {"high", "norm", "low"}; /* PRIO_W wide */
        const char *prio = r->slice->priority < GS_ARRAY_SIZE(prios) ? prios[r->slice->priority] : "-";
        gs_top_fit(r->name, l->name_w, name, sizeof(name));
        if (r->gpu >= 0)
                snprintf(gpu, sizeof(gpu), "%d", r->gpu);
        else
                snprintf(gpu, sizeof(gpu), "?");
        gs_top_fmt_bytes(d->memory_used, used);
        if (d->memory_limit > 0)
                gs_top_fmt_bytes(d->memory_limit, quota);
        else
                snprintf(quota, sizeof(quota), "-");
        snprintf(mem, sizeof(mem), "%5s / %-5s", used, quota);
        fmt_bar(l, r, bar, sizeof(bar));
        if (d->compute_used_valid)
                fmt_percent(d->compute_used, cu);
        else
                snprintf(cu, sizeof(cu), "%s", d->compute_measured ? ".." : "-");
        if (d->compute_limit > 0)
                fmt_percent(d->compute_limit, cl);
        else
                snprintf(cl, sizeof(cl), "-");
        snprintf(comp, sizeof(comp), "%4s / %-4s", cu, cl);
        int n = snprintf(buf, len, "%-*s %*s %s %-*s %*s %-*s %*s %*u", (int)l->name_w, name, GPU_W, gpu, mem,
                         (int)l->bar_w, bar, COMPUTE_W, comp, PRIO_W, prio, WAIT_W,
                         fmt_wait(d, wait), PROCS_W, d->processes);
        if (l->pids_w > 0 && n > 0 && (size_t)n < len) {
                char pids[PIDS_MAX + 1];
                fmt_pids(v, r, l->pids_w < PIDS_MAX ? l->pids_w : PIDS_MAX, pids, sizeof(pids));
                snprintf(buf + n, len - (size_t)n, " %s", pids);
        }
        cut(buf, len, l->width);
}

/* ------------------------------------------------------------------------------------------- */
/* JSON                                                                                        */

static bool add(json_object *o, const char *key, json_object *val)
{
        if (val == NULL)
                return false;
        return json_object_object_add(o, key, val) == 0 || (json_object_put(val), false);
}

static json_object *str_or_null(const char *s, bool *ok)
{
        if (s == NULL || s[0] == '\0')
                return NULL;
        char *r = utf8_repaired(s);
        json_object *j = r != NULL ? json_object_new_string(r) : NULL;
        free(r);
        if (j == NULL)
                *ok = false;
        return j;
}

/* key: string, or null when empty; false when out of memory. */
static bool add_str(json_object *o, const char *key, const char *s)
{
        bool ok = true;
        json_object *j = str_or_null(s, &ok);
        if (!ok)
                return false;
        return json_object_object_add(o, key, j) == 0 || (json_object_put(j), false);
}

static bool add_null(json_object *o, const char *key) { return json_object_object_add(o, key, NULL) == 0; }

static double seconds(uint64_t ns) { return (double)ns / 1e9; }

/* A double with as many digits as it means (json-c's own form has 17: 0.29999999999999999). */
enum num_form { NUM_RATIO, NUM_SECONDS, NUM_TIMESTAMP };

static json_object *num(enum num_form f, double v)
{
        char text[64];
        if (f == NUM_RATIO)
                snprintf(text, sizeof(text), "%.6g", v);
        else if (f == NUM_SECONDS)
                snprintf(text, sizeof(text), "%.6f", v);
        else
                snprintf(text, sizeof(text), "%.3f", v);
        return json_object_new_double_s(v, text);
}
#define RATIO(v) num(NUM_RATIO, (v))
#define TIME(ns) num(NUM_TIMESTAMP, seconds(ns))

/* A window's launch waits: launches, how many waited, the mean and the 99th percentile's bound. */
static json_object *wait_window_json(const struct gs_obs_slice *s, const struct gs_obs_device *d)
{
        const struct gs_wait_window *w = &d->waits_window;
        json_object *o = json_object_new_object();
        if (o == NULL)
                return NULL;
        bool any = w->launches > 0, over = any && w->p99 >= GS_REGION_WAIT_BUCKETS - 1;
        double p99 = !any || w->p99 < 0 ? 0
                     : seconds(gs_region_wait_edge_ns(over ? GS_REGION_WAIT_BUCKETS - 2 : (unsigned)w->p99));
        bool ok = add(o, "seconds", num(NUM_SECONDS, seconds(s->waits_window_ns))) &&
                  add(o, "launches", json_object_new_uint64(w->launches)) &&
                  add(o, "waited", json_object_new_uint64(w->waited)) &&
                  (any ? add(o, "mean_seconds", RATIO(seconds(w->sum_ns) / (double)w->launches))
                       : add_null(o, "mean_seconds")) &&
                  (any ? add(o, "p99_seconds", RATIO(p99)) : add_null(o, "p99_seconds")) &&
                  add(o, "p99_over", json_object_new_boolean(over));
        if (!ok) {
                json_object_put(o);
                return NULL;
        }
        return o;
}

/* The launch waits of a device: totals since the region was made, and the last window. */
static json_object *waits_json(const struct gs_top_row *r)
{
        const struct gs_obs_device *d = r->dev;
        json_object *o = json_object_new_object();
        if (o == NULL)
                return NULL;
        bool ok = add(o, "launches", json_object_new_uint64(d->waits.count)) &&
                  add(o, "wait_seconds", num(NUM_SECONDS, seconds(d->waits.sum_ns))) &&
                  (d->waits_window_valid ? add(o, "window", wait_window_json(r->slice, d)) : add_null(o, "window"));
        if (!ok) {
                json_object_put(o);
                return NULL;
        }
        return o;
}

static json_object *device_json(const struct gs_top_row *r)
{
        static const char *const via[] = {"time", "mps", "time_fallback"};
        const struct gs_obs_device *d = r->dev;
        json_object *o = json_object_new_object();
        if (o == NULL)
                return NULL;
        bool ok = add(o, "index", json_object_new_int((int)d->index)) && add_str(o, "uuid", d->uuid) &&
                  (r->gpu >= 0 ? add(o, "gpu", json_object_new_int(r->gpu)) : add_null(o, "gpu")) &&
                  add(o, "memory_used", json_object_new_uint64(d->memory_used)) &&
                  add(o, "memory_allocated", json_object_new_uint64(d->memory_allocated)) &&
                  add(o, "memory_overhead", json_object_new_uint64(d->memory_overhead)) &&
                  (d->memory_limit > 0 ? add(o, "memory_limit", json_object_new_uint64(d->memory_limit))
                                       : add_null(o, "memory_limit")) &&
                  (d->compute_limit > 0 ? add(o, "compute_limit", RATIO(d->compute_limit))
                                        : add_null(o, "compute_limit")) &&
                  (d->compute_used_valid ? add(o, "compute_used", RATIO(d->compute_used))
                                         : add_null(o, "compute_used")) &&
                  (d->compute_measured ? add(o, "compute_busy_seconds", num(NUM_SECONDS, seconds(d->busy_ns_total)))
                                       : add_null(o, "compute_busy_seconds")) &&
                  add(o, "processes", json_object_new_int((int)d->processes)) &&
                  (d->compute_via < GS_ARRAY_SIZE(via) ? add(o, "compute_mechanism", json_object_new_string(via[d->compute_via]))
                                                       : add_null(o, "compute_mechanism")) &&
                  (d->waits_known ? add(o, "launch_wait", waits_json(r)) : add_null(o, "launch_wait"));
        if (!ok) {
                json_object_put(o);
                return NULL;
        }
        return o;
}

static json_object *int_array(const int *vals, unsigned n, bool zero_is_null)
{
        json_object *a = json_object_new_array();
        for (unsigned i = 0; a != NULL && i < n; i++) {
                json_object *e = NULL;
                if (!(zero_is_null && vals[i] == 0) && (e = json_object_new_int(vals[i])) == NULL) {
                        json_object_put(a);
                        return NULL;
                }
                if (json_object_array_add(a, e) != 0) {
                        json_object_put(e);
                        json_object_put(a);
                        return NULL;
                }
        }
        return a;
}

static json_object *slice_json(const struct gs_top_view *v, size_t si, const struct gs_top_row *rows)
{
        static const char *const modes[] = {"cap", "share", "off"};
        const struct gs_obs_slice *s = &v->obs->slices[si];
        json_object *o = json_object_new_object();
        if (o == NULL)
                return NULL;
        int *pids = calloc(s->nprocs > 0 ? s->nprocs : 1, sizeof(int));
        bool ok = pids != NULL;
        for (unsigned i = 0; ok && i < s->nprocs; i++)
                pids[i] = s->procs[i].pid;
        ok = ok && add_str(o, "id", s->id) && add_str(o, "name", v->names[si]) &&
             add(o, "kind", json_object_new_string(s->in_regions_dir ? "container" : "region")) &&
             add_str(o, "region", s->region) &&
             (s->owner_pid > 0 ? add(o, "owner_pid", json_object_new_int((int)s->owner_pid)) : add_null(o, "owner_pid")) &&
             add_str(o, "namespace", s->labels.ns) && add_str(o, "pod", s->labels.pod) &&
             add_str(o, "container", s->labels.container) && add_str(o, "claim", s->labels.claim) &&
             (s->compute_mode < 3 ? add(o, "compute_mode", json_object_new_string(modes[s->compute_mode]))
                                  : add_null(o, "compute_mode")) &&
             (gs_top_priority_name(s->priority) != NULL
                      ? add(o, "priority", json_object_new_string(gs_top_priority_name(s->priority)))
                      : add_null(o, "priority")) &&
             add(o, "created", TIME(s->created_ns)) &&
             (s->last_kernel_ns > 0 ? add(o, "last_kernel", TIME(s->last_kernel_ns))
                                    : add_null(o, "last_kernel")) &&
             add(o, "processes", json_object_new_int((int)s->nprocs)) && add(o, "pids", int_array(pids, s->nprocs, false));
        if (ok && v->host_pids != NULL) {
                for (unsigned i = 0; i < s->nprocs; i++)
                        pids[i] = (int)v->host_pids[si][i];
                ok = add(o, "host_pids", int_array(pids, s->nprocs, true));
        }
        free(pids);
        json_object *devs = ok ? json_object_new_array() : NULL;
        ok = ok && add(o, "devices", devs);
        for (unsigned d = 0; ok && d < s->ndevices; d++) {
                json_object *dj = device_json(&rows[d]);
                ok = dj != NULL && (json_object_array_add(devs, dj) == 0 || (json_object_put(dj), false));
        }
        if (!ok) {
                json_object_put(o);
                return NULL;
        }
        return o;
}

/* The rows of slice si in the observation's order (the view's rows may be sorted otherwise). */
static void slice_rows(const struct gs_top_view *v, size_t si, struct gs_top_row *out)
{
        for (size_t i = 0; i < v->nrows; i++)
                if (v->rows[i].slice_index == si)
                        out[v->rows[i].dev - v->obs->slices[si].dev] = v->rows[i];
}

static json_object *gpus_json(const struct gs_top_view *v)
{
        json_object *a = json_object_new_array();
        for (unsigned i = 0; a != NULL && i < v->ngpus; i++) {
                const struct gs_top_gpu *g = &v->gpus[i];
                json_object *o = json_object_new_object();
                bool ok = o != NULL && add(o, "index", json_object_new_int((int)g->index)) && add_str(o, "uuid", g->uuid) &&
                          add_str(o, "model", g->model) && add(o, "memory_used", json_object_new_uint64(g->memory_used)) &&
                          add(o, "memory_total", json_object_new_uint64(g->memory_total)) &&
                          (g->utilization_valid ? add(o, "utilization", RATIO(g->utilization / 100.0))
                                                : add_null(o, "utilization"));
                if (!ok || json_object_array_add(a, o) != 0) {
                        json_object_put(o);
                        json_object_put(a);
                        return NULL;
                }
        }
        return a;
}

json_object *gs_top_json(const struct gs_top_view *v)
{
        const struct gs_observation *obs = v->obs;
        json_object *root = json_object_new_object();
        json_object *slices = json_object_new_array();
        if (root == NULL || slices == NULL) {
                json_object_put(root);
                json_object_put(slices);
                return NULL;
        }
        if (!add(root, "time", TIME(obs->time_ns))) {
                json_object_put(root);
                json_object_put(slices);
                return NULL;
        }
        bool ok = add(root, "slices", slices);
        bool nvml_up = v->nvml_valid && v->nvml_fresh;
        const char *nvml_error = NULL; /* why it did not answer */
        if (v->nvml && !nvml_up)
                nvml_error = v->nvml_error[0] != '\0' ? v->nvml_error : "no answer yet";
        struct gs_top_row rows[GS_REGION_MAX_DEVICES];
        for (size_t i = 0; ok && i < obs->nslices; i++) {
                memset(rows, 0, sizeof(rows));
                slice_rows(v, i, rows);
                json_object *s = slice_json(v, i, rows);
                ok = s != NULL && (json_object_array_add(slices, s) == 0 || (json_object_put(s), false));
        }
        ok = ok && add(root, "skipped", json_object_new_int((int)obs->skipped)) &&
             add(root, "pending", json_object_new_int((int)obs->pending)) &&
             add(root, "gone", json_object_new_int((int)obs->gone)) &&
             (v->nvml ? add(root, "nvml_up", json_object_new_boolean(nvml_up))
                      : add_null(root, "nvml_up")) &&
             add_str(root, "nvml_error", nvml_error) && add(root, "gpus", gpus_json(v));
        if (!ok) {
                json_object_put(root);
                return NULL;
        }
        return root;
}
