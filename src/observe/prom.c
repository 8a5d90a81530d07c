/* Prometheus text exposition 0.0.4 (prom.h). */
#include "observe/prom.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool reserve(struct gs_prom *p, size_t more)
{
        if (p->oom)
                return false;
        if (p->len + more + 1 <= p->cap)
                return true;
        size_t cap = p->cap ? p->cap : 256;
        while (cap < p->len + more + 1)
                cap *= 2;
        char *b = realloc(p->buf, cap);
        if (b == NULL) {
                p->oom = true;
                return false;
        }
        p->buf = b;
        p->cap = cap;
        return true;
}

void gs_prom_init(struct gs_prom *p)
{
        memset(p, 0, sizeof(*p));
}

void gs_prom_init_size(struct gs_prom *p, size_t hint)
{
        gs_prom_init(p);
        if (hint > 0)
                reserve(p, hint);
}

void gs_prom_release(struct gs_prom *p)
{
        free(p->buf);
        memset(p, 0, sizeof(*p));
}

static inline void put(struct gs_prom *p, const char *s, size_t n)
{
        if (p->len + n + 1 > p->cap && !reserve(p, n))
                return;
        memcpy(p->buf + p->len, s, n);
        p->len += n;
}

static void puts_(struct gs_prom *p, const char *s)
{
        put(p, s, strlen(s));
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if s[0] does not start one. */
static size_t utf8_len(const unsigned char *s)
{
        unsigned char c = s[0];
        size_t n;
        unsigned min;
        unsigned cp;
        if (c < 0x80)
                return 1;
        if (c >= 0xc2 && c <= 0xdf)
                n = 2, cp = c & 0x1f, min = 0x80;
        else if (c >= 0xe0 && c <= 0xef)
                n = 3, cp = c & 0x0f, min = 0x800;
        else if (c >= 0xf0 && c <= 0xf4)
                n = 4, cp = c & 0x07, min = 0x10000;
        else
                return 0;
        for (size_t i = 1; i < n; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (s[i] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
                return 0;
        return n;
}

/* Escape for a label value (quote = true) or HELP text (quote = false); runs of plain ASCII are
 * copied whole. */
static void put_escaped(struct gs_prom *p, const char *s, bool quote)
{
        const unsigned char *u = (const unsigned char *)s;
        while (*u != '\0') {
                const unsigned char *run = u;
                while (*u != '\0' && *u < 0x80 && *u != '\\' && *u != '\n' && (*u != '"' || !quote))
                        u++;
                if (u > run)
                        put(p, (const char *)run, (size_t)(u - run));
                if (*u == '\0')
                        break;
                size_t n = utf8_len(u);
                if (n == 0) {
                        put(p, "?", 1);
                        u++;
                } else if (*u == '\\') {
                        put(p, "\\\\", 2), u++;
                } else if (*u == '\n') {
                        put(p, "\\n", 2), u++;
                } else if (*u == '"' && quote) {
                        put(p, "\\\"", 2), u++;
                } else {
                        put(p, (const char *)u, n);
                        u += n;
                }
        }
}

/* Integers (the byte counts: most samples) without printf. */
static void put_integer(struct gs_prom *p, double v)
{
        char num[24], *e = num + sizeof(num), *q = e;
        bool neg = v < 0;
        uint64_t x = (uint64_t)(neg ? -v : v);
        do
                *--q = (char)('0' + x % 10);
        while ((x /= 10) != 0);
        if (neg)
                *--q = '-';
        put(p, q, (size_t)(e - q));
}

/* v when it is exactly k/1000 (ratios like 0.25, times rounded to milliseconds): "I.FFF" without
 * trailing zeros, without printf; false otherwise. k/1000.0 is the double nearest the decimal
 * k/1000, which is what a reader's strtod makes of the text: it reads back as v. */
static bool put_millis(struct gs_prom *p, double v)
{
        if (!(fabs(v) < 9.0e12))
                return false;
        long long k = llround(v * 1000.0);
        if ((double)k / 1000.0 != v)
                return false;
        if (k < 0) {
                put(p, "-", 1);
                k = -k;
        }
        put_integer(p, (double)(k / 1000));
        int frac = (int)(k % 1000);
        char f[5] = {'.', (char)('0' + frac / 100), (char)('0' + frac / 10 % 10), (char)('0' + frac % 10), 0};
        size_t n = 4;
        while (f[n - 1] == '0')
                n--;
        put(p, f, n);
        return true;
}

static void put_value(struct gs_prom *p, double v)
{
        char num[64];
        if (isnan(v))
                snprintf(num, sizeof(num), "NaN");
        else if (isinf(v))
                snprintf(num, sizeof(num), "%s", v > 0 ? "+Inf" : "-Inf");
        else if (v == floor(v) && fabs(v) < 9007199254740992.0)
                return put_integer(p, v);
        else if (put_millis(p, v))
                return;
        else {
                /* the shortest of these that reads back as the same double */
                snprintf(num, sizeof(num), "%.15g", v);
                if (strtod(num, NULL) != v)
                        snprintf(num, sizeof(num), "%.17g", v);
        }
        puts_(p, num);
}

static void header(struct gs_prom *p, const struct gs_prom_family *f)
{
        puts_(p, "# HELP ");
        puts_(p, f->name);
        put(p, " ", 1);
        put_escaped(p, f->help, false);
        puts_(p, "\n# TYPE ");
        puts_(p, f->name);
        puts_(p, f->type == GS_PROM_COUNTER ? " counter\n" : f->type == GS_PROM_HISTOGRAM ? " histogram\n" : " gauge\n");
        p->family = f->name;
}

/* {a="x",b="y"} of the labels with a value, or "" when none has one. */
static void put_labels(struct gs_prom *p, const struct gs_prom_label *labels, size_t nlabels)
{
        bool any = false;
        for (size_t i = 0; i < nlabels; i++) {
                if (labels[i].value == NULL || labels[i].value[0] == '\0')
                        continue;
                put(p, any ? "," : "{", 1);
                puts_(p, labels[i].name);
                put(p, "=\"", 2);
                put_escaped(p, labels[i].value, true);
                put(p, "\"", 1);
                any = true;
        }
        if (any)
                put(p, "}", 1);
}

void gs_prom_sample_raw(struct gs_prom *p, const struct gs_prom_family *f, const char *labels, double value)
{
        if (p->family == NULL || strcmp(p->family, f->name) != 0)
                header(p, f);
        puts_(p, f->name);
        puts_(p, labels);
        put(p, " ", 1);
        put_value(p, value);
        put(p, "\n", 1);
}

void gs_prom_sample(struct gs_prom *p, const struct gs_prom_family *f, const struct gs_prom_label *labels,
                    size_t nlabels, double value)
{
        if (p->family == NULL || strcmp(p->family, f->name) != 0)
                header(p, f);
        puts_(p, f->name);
        put_labels(p, labels, nlabels);
        put(p, " ", 1);
        put_value(p, value);
        put(p, "\n", 1);
}

/* NAME + suffix + labels + one more label, then the value. */
static void sample_more(struct gs_prom *p, const char *name, const char *suffix, const char *labels,
                        const char *more, const char *more_value, double value)
{
        puts_(p, name);
        puts_(p, suffix);
        size_t n = strlen(labels);
        if (more != NULL) {
                if (n >= 2 && labels[n - 1] == '}') {
                        put(p, labels, n - 1);
                        put(p, ",", 1);
                } else {
                        put(p, "{", 1);
                }
                puts_(p, more);
                put(p, "=\"", 2);
                put_escaped(p, more_value, true);
                put(p, "\"}", 2);
        } else {
                put(p, labels, n);
        }
        put(p, " ", 1);
        put_value(p, value);
        put(p, "\n", 1);
}

void gs_prom_sample_raw_plus(struct gs_prom *p, const struct gs_prom_family *f, const char *labels, const char *name,
                             const char *value, double v)
{
        if (p->family == NULL || strcmp(p->family, f->name) != 0)
                header(p, f);
        sample_more(p, f->name, "", labels, name, value, v);
}

void gs_prom_histogram_raw(struct gs_prom *p, const struct gs_prom_family *f, const char *labels,
                           const char *const *les, const uint64_t *cum, size_t n, double sum, uint64_t count)
{
        if (p->family == NULL || strcmp(p->family, f->name) != 0)
                header(p, f);
        for (size_t i = 0; i < n; i++)
                sample_more(p, f->name, "_bucket", labels, "le", les[i], (double)cum[i]);
        sample_more(p, f->name, "_sum", labels, NULL, NULL, sum);
        sample_more(p, f->name, "_count", labels, NULL, NULL, (double)count);
}

char *gs_prom_labels(const struct gs_prom_label *labels, size_t nlabels)
{
        struct gs_prom p;
        gs_prom_init(&p);
        put_labels(&p, labels, nlabels);
        size_t len;
        return gs_prom_take(&p, &len);
}

char *gs_prom_take(struct gs_prom *p, size_t *len)
{
        if (p->oom || !reserve(p, 0)) {
                gs_prom_release(p);
                return NULL;
        }
        char *b = p->buf;
        b[p->len] = '\0';
        *len = p->len;
        p->buf = NULL;
        p->len = p->cap = 0;
        p->family = NULL;
        return b;
}

char *gs_prom_escape_value(const char *s, char *out, size_t outlen)
{
        struct gs_prom p;
        gs_prom_init(&p);
        put_escaped(&p, s, true);
        size_t len;
        char *t = gs_prom_take(&p, &len);
        snprintf(out, outlen, "%s", t != NULL ? t : "");
        free(t);
        gs_prom_release(&p);
        return out;
}
