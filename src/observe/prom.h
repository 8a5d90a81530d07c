/*
 * The Prometheus text exposition format, version 0.0.4: a growable buffer, families written
 * lazily (# HELP and # TYPE before a family's first sample, once), samples with label values
 * escaped (\\ \" \n) and made valid UTF-8 (a byte that does not start or continue a valid
 * sequence becomes '?': regions are hostile input). Values: integers exactly up to 2^53, else
 * %.15g, or %.17g where that does not read back as the same double; NaN and +Inf/-Inf as Prometheus spells them. Out of memory is
 * sticky: gs_prom_take then returns NULL.
 */
#ifndef GS_OBSERVE_PROM_H
#define GS_OBSERVE_PROM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GS_PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct gs_prom {
        char *buf;
        size_t len, cap;
        bool oom;
        const char *family;   /* the family whose header was written last */
};

struct gs_prom_label {
        const char *name;     /* [a-zA-Z_][a-zA-Z0-9_]* (not checked: our own constants) */
        const char *value;    /* NULL or "" leaves the label out */
};

enum gs_prom_type { GS_PROM_GAUGE, GS_PROM_COUNTER, GS_PROM_HISTOGRAM };

struct gs_prom_family {
        const char *name;
        enum gs_prom_type type;
        const char *help;
};

void gs_prom_init(struct gs_prom *p);
/* The same, with room for about `hint` bytes already (the last scrape's size). */
void gs_prom_init_size(struct gs_prom *p, size_t hint);
void gs_prom_release(struct gs_prom *p);
/* One sample of family f (its header first, if f is not the family written last). */
void gs_prom_sample(struct gs_prom *p, const struct gs_prom_family *f, const struct gs_prom_label *labels,
                    size_t nlabels, double value);
/* The label part of a sample, {a="x",b="y"} ("" when no label has a value), made once for
 * samples of several families with the same labels (allocated; NULL when out of memory), and a
 * sample that uses it. */
char *gs_prom_labels(const struct gs_prom_label *labels, size_t nlabels);
void gs_prom_sample_raw(struct gs_prom *p, const struct gs_prom_family *f, const char *labels, double value);
/* A sample with the labels made by gs_prom_labels plus one more label (name="value"). */
void gs_prom_sample_raw_plus(struct gs_prom *p, const struct gs_prom_family *f, const char *labels, const char *name,
                             const char *value, double v);
/* One series of a histogram family f: NAME_bucket with `labels` (as gs_prom_labels makes them,
 * "" for none) plus le="les[i]" and the cumulative count cum[i] for each of the n buckets (the
 * last should be "+Inf" with the count), then NAME_sum and NAME_count. */
void gs_prom_histogram_raw(struct gs_prom *p, const struct gs_prom_family *f, const char *labels,
                           const char *const *les, const uint64_t *cum, size_t n, double sum, uint64_t count);
/* The text (NUL-terminated, *len without the NUL), handed over; NULL after an allocation failure. */
char *gs_prom_take(struct gs_prom *p, size_t *len);

/* Escaped, UTF-8-valid label value of s into out (for tests); returns out. */
char *gs_prom_escape_value(const char *s, char *out, size_t outlen);

#endif
