/*
 * Requirement DSL (--require, NVIDIA_REQUIRE_*), as nvidia-container-cli reads it.
 *
 *   predicate := term ( " " term )*          space = OR (only the space character)
 *   term      := cond ( "," cond )*          comma = AND
 *   cond      := KEY OP VALUE
 *   KEY       := the text before the first of < > = !  -- cuda | driver | arch | brand, any case
 *   OP        := the whole run of < > = ! that follows; exactly one of = != < <= > >=
 *   VALUE     := the non-empty rest
 *
 * Empty terms and conditions (doubled separators) are skipped; a term with no condition at all is
 * no term. cuda/driver/arch values are versions: only [0-9.], dot-separated non-empty decimal
 * components compared numerically (no size limit), missing trailing components count as 0
 * ("11" = "11.0", "12.4" > "12"). brand compares strings case-insensitively and allows only = and
 * !=. A missing fact (NULL or "") makes its condition true (arch/brand with no device selected).
 *
 * Evaluation: terms are tried left to right; in a term the first false condition ends it; the
 * predicate holds as soon as one term has all its conditions true. A predicate with no condition
 * holds. When it fails the error is "unsatisfied condition: <first term as written>", with a hint
 * to update the driver when that term's first condition is a cuda>= one (key matched in any case).
 *
 * Choice: nvidia-container-cli parses lazily while it evaluates, so a syntax error after a term that
 * already passed goes unnoticed there. We validate the whole expression first: any syntax error
 * anywhere is "invalid expression", whatever the facts. This is stricter (an image cannot carry a
 * broken requirement that only fails on some hosts) and the only difference is expressions that
 * nvidia-container-cli would accept by luck. A fact that is not a version (e.g. a driver version
 * string that is not [0-9.]) is also "invalid expression" when a condition needs it, as there.
 */
#include "select/require.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "common/error.h"

/* How much of a term an "unsatisfied condition" message quotes (fits GS_ERRMSG_MAX with hint). */
#define TERM_SHOW 360

#define HINT_UPDATE ", please update your driver to a newer version, or use an earlier cuda container"

struct slice {
        const char *p;
        size_t n;
};

enum key { KEY_CUDA, KEY_DRIVER, KEY_ARCH, KEY_BRAND };
enum op { OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE };

struct cond {
        enum key key;
        enum op op;
        struct slice value;
};

static const struct {
        const char *name;
        enum key key;
} keys[] = {
        { "cuda", KEY_CUDA },
        { "driver", KEY_DRIVER },
        { "arch", KEY_ARCH },
        { "brand", KEY_BRAND },
};

static const struct {
        const char *text;
        enum op op;
} ops[] = {
        { "=", OP_EQ }, { "!=", OP_NE }, { "<", OP_LT }, { "<=", OP_LE }, { ">", OP_GT }, { ">=", OP_GE },
};

static bool is_op_char(char c) { return c == '<' || c == '>' || c == '=' || c == '!'; }

static bool slice_eq(struct slice s, const char *str, bool nocase)
{
        if (strlen(str) != s.n)
                return false;
        return nocase ? strncasecmp(s.p, str, s.n) == 0 : memcmp(s.p, str, s.n) == 0;
}

/* ---------------------------------------------------------------------------------------------
 * Versions
 */

/* Non-empty, [0-9.] only, every dot-separated component non-empty. */
static bool version_valid(struct slice v)
{
        bool want_digit = true;

        if (v.n == 0)
                return false;
        for (size_t i = 0; i < v.n; i++) {
                char c = v.p[i];
                if (c >= '0' && c <= '9')
                        want_digit = false;
                else if (c == '.' && !want_digit)
                        want_digit = true;
                else
                        return false;
        }
        return !want_digit;
}

/* Next component of a valid version at *pos (past its dot), leading zeros stripped; an exhausted
 * version yields the empty component (= 0). */
static struct slice next_component(struct slice v, size_t *pos)
{
        size_t i = *pos, start;

        if (i >= v.n)
                return (struct slice){ v.p + v.n, 0 };
        start = i;
        while (i < v.n && v.p[i] != '.')
                i++;
        *pos = i < v.n ? i + 1 : i;
        while (start < i && v.p[start] == '0')
                start++;
        return (struct slice){ v.p + start, i - start };
}

/* Both valid. */
static int version_cmp(struct slice a, struct slice b)
{
        size_t pa = 0, pb = 0;

        while (pa < a.n || pb < b.n) {
                struct slice ca = next_component(a, &pa);
                struct slice cb = next_component(b, &pb);
                if (ca.n != cb.n)
                        return ca.n < cb.n ? -1 : 1;
                int r = memcmp(ca.p, cb.p, ca.n);
                if (r != 0)
                        return r < 0 ? -1 : 1;
        }
        return 0;
}

int gs_version_compare(const char *a, const char *b)
{
        if (a == NULL || b == NULL)
                return -2;
        struct slice sa = { a, strlen(a) }, sb = { b, strlen(b) };
        if (!version_valid(sa) || !version_valid(sb))
                return -2;
        return version_cmp(sa, sb);
}

/* ---------------------------------------------------------------------------------------------
 * Parsing
 */

static bool parse_cond(struct slice s, struct cond *c)
{
        size_t k = 0, o;
        bool found = false;

        while (k < s.n && !is_op_char(s.p[k]))
                k++;
        if (k == 0 || k == s.n)
                return false; /* no key, or no operator */
        struct slice key = { s.p, k };
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
                if (slice_eq(key, keys[i].name, true)) {
                        c->key = keys[i].key;
                        found = true;
                        break;
                }
        }
        if (!found)
                return false;

        o = k;
        while (o < s.n && is_op_char(s.p[o]))
                o++;
        struct slice op = { s.p + k, o - k };
        found = false;
        for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
                if (slice_eq(op, ops[i].text, false)) {
                        c->op = ops[i].op;
                        found = true;
                        break;
                }
        }
        if (!found)
                return false;

        c->value = (struct slice){ s.p + o, s.n - o };
        if (c->value.n == 0)
                return false;
        if (c->key == KEY_BRAND)
                return c->op == OP_EQ || c->op == OP_NE;
        return version_valid(c->value);
}

/* Split `s` at the first `sep` starting at *pos: the piece, and *pos past the separator.
 * Returns false when nothing is left. */
static bool next_piece(struct slice s, char sep, size_t *pos, struct slice *piece)
{
        if (*pos > s.n)
                return false;
        const char *start = s.p + *pos;
        size_t left = s.n - *pos;
        const char *q = left ? memchr(start, sep, left) : NULL;
        size_t len = q ? (size_t)(q - start) : left;
        *piece = (struct slice){ start, len };
        *pos += len + 1; /* past the separator, or past the end (> s.n) */
        return true;
}

/* Whole-expression syntax check. */
static bool expr_valid(const char *expr)
{
        struct slice all = { expr, strlen(expr) }, term, f;
        size_t tp = 0;
        struct cond c;

        while (next_piece(all, ' ', &tp, &term)) {
                size_t fp = 0;
                while (next_piece(term, ',', &fp, &f)) {
                        if (f.n > 0 && !parse_cond(f, &c))
                                return false;
                }
        }
        return true;
}

/* ---------------------------------------------------------------------------------------------
 * Evaluation
 */

static const char *fact_of(const struct gs_require_facts *facts, enum key k)
{
        const char *v = NULL;

        if (facts == NULL)
                return NULL;
        switch (k) {
        case KEY_CUDA: v = facts->cuda; break;
        case KEY_DRIVER: v = facts->driver; break;
        case KEY_ARCH: v = facts->arch; break;
        case KEY_BRAND: v = facts->brand; break;
        }
        return v != NULL && v[0] != '\0' ? v : NULL;
}

/* 1 true, 0 false, -1 the fact is unusable. */
static int eval_cond(const struct cond *c, const struct gs_require_facts *facts)
{
        const char *fact = fact_of(facts, c->key);
        int cmp;

        if (fact == NULL)
                return 1;
        struct slice f = { fact, strlen(fact) };
        if (c->key == KEY_BRAND) {
                bool eq = f.n == c->value.n && strncasecmp(f.p, c->value.p, f.n) == 0;
                return c->op == OP_EQ ? eq : !eq;
        }
        if (!version_valid(f))
                return -1;
        cmp = version_cmp(f, c->value);
        switch (c->op) {
        case OP_EQ: return cmp == 0;
        case OP_NE: return cmp != 0;
        case OP_LT: return cmp < 0;
        case OP_LE: return cmp <= 0;
        case OP_GT: return cmp > 0;
        case OP_GE: return cmp >= 0;
        }
        return -1;
}

static int invalid(struct gs_error *err)
{
        return gs_error_set(err, GS_EINVAL, "invalid expression");
}

/* Evaluate a syntactically valid expression. */
static int evaluate(const char *expr, const struct gs_require_facts *facts, struct gs_error *err)
{
        struct slice all = { expr, strlen(expr) }, term, f;
        struct slice first = { NULL, 0 };
        struct cond first_cond = { 0 };
        size_t tp = 0;
        bool any = false;
        struct cond c;

        while (next_piece(all, ' ', &tp, &term)) {
                size_t fp = 0;
                bool has_cond = false, ok = true;

                while (next_piece(term, ',', &fp, &f)) {
                        if (f.n == 0)
                                continue;
                        if (!parse_cond(f, &c))
                                return invalid(err); /* not reached: validated before */
                        if (first.p == NULL) {
                                first = term;
                                first_cond = c;
                        }
                        has_cond = true;
                        int r = eval_cond(&c, facts);
                        if (r < 0)
                                return invalid(err);
                        if (r == 0) {
                                ok = false;
                                break;
                        }
                }
                if (!has_cond)
                        continue;
                any = true;
                if (ok)
                        return 0;
        }
        if (!any)
                return 0;

        bool hint = first_cond.key == KEY_CUDA && first_cond.op == OP_GE;
        int show = first.n > TERM_SHOW ? TERM_SHOW : (int)first.n;
        return gs_error_set(err, GS_EUNSATISFIED, "unsatisfied condition: %.*s%s%s", show, first.p,
                            first.n > TERM_SHOW ? "..." : "", hint ? HINT_UPDATE : "");
}

int gs_require_check(const char *expr, const struct gs_require_facts *facts, struct gs_error *err)
{
        if (expr == NULL || !expr_valid(expr))
                return invalid(err);
        return evaluate(expr, facts, err);
}

static const char *nonempty(const char *s, size_t size)
{
        if (s[0] == '\0' || strnlen(s, size) == size)
                return NULL; /* empty, or not terminated: treat as missing */
        return s;
}

int gs_require_check_all(const char *const *exprs, size_t n, const struct gs_device_info *info,
                         const struct gs_selection *sel, struct gs_error *err)
{
        struct gs_require_facts facts = { 0 };
        bool any = false;

        if (n > GS_MAX_REQUIRES)
                return gs_error_set(err, GS_EINVAL, "too many requirements");
        if (n > 0 && exprs == NULL)
                return invalid(err);
        for (size_t k = 0; k < n; k++)
                if (exprs[k] == NULL || !expr_valid(exprs[k]))
                        return invalid(err);
        if (n == 0)
                return 0;

        if (info != NULL) {
                facts.cuda = nonempty(info->cuda_version, sizeof(info->cuda_version));
                facts.driver = nonempty(info->driver_version, sizeof(info->driver_version));
        }

        /* One check per GPU that is selected or whose MIG device is (a MIG device is checked
         * against its parent GPU, so several MIG devices of one GPU give the same answer). */
        unsigned ngpus = info == NULL ? 0 : (info->ngpus < GS_MAX_GPUS ? info->ngpus : GS_MAX_GPUS);
        for (unsigned i = 0; i < ngpus; i++) {
                if (!gs_selection_uses_gpu(sel, i))
                        continue;
                any = true;
                facts.arch = nonempty(info->gpus[i].arch, sizeof(info->gpus[i].arch));
                facts.brand = nonempty(info->gpus[i].brand, sizeof(info->gpus[i].brand));
                for (size_t k = 0; k < n; k++)
                        if (evaluate(exprs[k], &facts, err) < 0)
                                return -1;
        }
        if (any)
                return 0;

        facts.arch = NULL;
        facts.brand = NULL;
        for (size_t k = 0; k < n; k++)
                if (evaluate(exprs[k], &facts, err) < 0)
                        return -1;
        return 0;
}
