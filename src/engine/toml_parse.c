/*
 * TOML 1.0 read for editing (toml_doc.h): strings of the four kinds (a multi-line one may hold
 * lines that look like headers), arrays over several lines, inline tables, dotted keys, [tables]
 * and [[arrays of tables]]; each table and key with where the text defines it. The rules for
 * defining a table are TOML's, as python3's tomllib applies them: a table is defined once, by a
 * header or by the dotted keys of one section; an inline table is closed. A file that breaks them
 * is refused, naming the line.
 */
#include "engine/toml_doc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/error.h"

#define MAX_PARTS 64
#define MAX_DEPTH 64

struct lx {
        struct gs_tdoc *d;
        const char *s;
        size_t p, n;
        struct gs_error *err;
        struct gs_tnode **pend; /* made or extended by dotted keys since the last header */
        size_t npend, cpend;
};

unsigned gs_tdoc_line(const struct gs_tdoc *d, size_t off)
{
        unsigned l = 1;
        for (size_t i = 0; i < off && i < d->len; i++)
                l += d->text[i] == '\n';
        return l;
}

static int fail(struct lx *x, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct lx *x, size_t at, const char *fmt, ...)
{
        char msg[GS_ERRMSG_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        return gs_error_set(x->err, GS_EFORMAT, "line %u: %s", gs_tdoc_line(x->d, at), msg);
}

static bool bare_char(char c)
{
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

bool gs_toml_bare(const char *s)
{
        if (*s == '\0')
                return false;
        for (; *s; s++)
                if (!bare_char(*s))
                        return false;
        return true;
}

/* ------------------------------------------------------------------------------------------ */
/* nodes */

static struct gs_tnode *node(struct lx *x, char *name, enum gs_tkind kind, enum gs_thow how, size_t at)
{
        struct gs_tnode *t = calloc(1, sizeof(*t));
        if (t == NULL) {
                free(name);
                gs_error_set(x->err, GS_ENOMEM, "out of memory");
                return NULL;
        }
        t->name = name;
        t->kind = kind;
        t->how = how;
        t->at = at;
        return t;
}

static void node_free(struct gs_tnode *t)
{
        if (t == NULL)
                return;
        for (size_t i = 0; i < t->nkids; i++)
                node_free(t->kids[i]);
        free(t->kids);
        free(t->name);
        free(t->str);
        free(t);
}

/* t's new child k (freed on failure). */
static int add_kid(struct lx *x, struct gs_tnode *t, struct gs_tnode *k)
{
        if (t->nkids == t->cap) {
                size_t c = t->cap ? t->cap * 2 : 4;
                struct gs_tnode **nk = realloc(t->kids, c * sizeof(*nk));
                if (nk == NULL) {
                        node_free(k);
                        return gs_error_set(x->err, GS_ENOMEM, "out of memory");
                }
                t->kids = nk;
                t->cap = c;
        }
        k->parent = t;
        t->kids[t->nkids++] = k;
        return 0;
}

struct gs_tnode *gs_tnode_child(const struct gs_tnode *t, const char *name)
{
        for (size_t i = t->nkids; i-- > 0;)
                if (t->kids[i]->name != NULL && strcmp(t->kids[i]->name, name) == 0)
                        return t->kids[i];
        return NULL;
}

struct gs_tnode *gs_tnode_last(const struct gs_tnode *aot)
{
        return aot->nkids > 0 ? aot->kids[aot->nkids - 1] : NULL;
}

static void freeze(struct gs_tnode *t)
{
        t->frozen = true;
        for (size_t i = 0; i < t->nkids; i++)
                freeze(t->kids[i]);
}

static void free_parts(char **parts, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(parts[i]);
}

/* ------------------------------------------------------------------------------------------ */
/* lexing */

static void skip_ws(struct lx *x)
{
        while (x->p < x->n && (x->s[x->p] == ' ' || x->s[x->p] == '\t'))
                x->p++;
}

static bool at_nl(const struct lx *x)
{
        return x->p < x->n && (x->s[x->p] == '\n' || (x->s[x->p] == '\r' && x->p + 1 < x->n && x->s[x->p + 1] == '\n'));
}

static void skip_nl(struct lx *x) { x->p += x->s[x->p] == '\r' ? 2 : 1; }

static void skip_comment(struct lx *x)
{
        if (x->p < x->n && x->s[x->p] == '#')
                while (x->p < x->n && x->s[x->p] != '\n')
                        x->p++;
}

/* Blanks, comments and newlines (in an array). */
static void skip_space(struct lx *x)
{
        for (;;) {
                skip_ws(x);
                skip_comment(x);
                if (!at_nl(x))
                        return;
                skip_nl(x);
        }
}

/* After a statement: blanks, a comment, the end of the line (or of the file). */
static int end_of_line(struct lx *x)
{
        skip_ws(x);
        skip_comment(x);
        if (x->p >= x->n)
                return 0;
        if (x->s[x->p] == '\r' && x->p + 1 < x->n && x->s[x->p + 1] == '\n')
                x->p++;
        if (x->s[x->p] != '\n')
                return fail(x, x->p, "the line goes on after a complete statement");
        x->p++;
        return 0;
}

static size_t line_start(const struct lx *x, size_t at)
{
        while (at > 0 && x->s[at - 1] != '\n')
                at--;
        return at;
}

struct sbuf {
        char *b;
        size_t n, cap;
};

static bool put(struct sbuf *b, const char *c, size_t n)
{
        if (b->n + n + 1 > b->cap) {
                size_t cap = (b->n + n + 1) * 2;
                char *nb = realloc(b->b, cap);
                if (nb == NULL)
                        return false;
                b->b = nb;
                b->cap = cap;
        }
        memcpy(b->b + b->n, c, n);
        b->n += n;
        b->b[b->n] = '\0';
        return true;
}

static bool put_utf8(struct sbuf *b, unsigned long c)
{
        char u[4];
        size_t n;
        if (c < 0x80) {
                u[0] = (char)c;
                n = 1;
        } else if (c < 0x800) {
                u[0] = (char)(0xc0 | (c >> 6));
                u[1] = (char)(0x80 | (c & 0x3f));
                n = 2;
        } else if (c < 0x10000) {
                u[0] = (char)(0xe0 | (c >> 12));
                u[1] = (char)(0x80 | ((c >> 6) & 0x3f));
                u[2] = (char)(0x80 | (c & 0x3f));
                n = 3;
        } else {
                u[0] = (char)(0xf0 | (c >> 18));
                u[1] = (char)(0x80 | ((c >> 12) & 0x3f));
                u[2] = (char)(0x80 | ((c >> 6) & 0x3f));
                u[3] = (char)(0x80 | (c & 0x3f));
                n = 4;
        }
        return put(b, u, n);
}

/* A backslash escape of a basic string at x->p (the character after the backslash). */
static int escape(struct lx *x, bool multi, struct sbuf *b)
{
        static const char from[] = "btnfr\"\\", to[] = "\b\t\n\f\r\"\\";
        char e = x->s[x->p];
        const char *f = e != '\0' ? strchr(from, e) : NULL;
        if (f != NULL) {
                x->p++;
                return put(b, &to[f - from], 1) ? 0 : gs_error_set(x->err, GS_ENOMEM, "out of memory");
        }
        if (e == 'u' || e == 'U') {
                size_t len = e == 'u' ? 4 : 8;
                unsigned long c = 0;
                for (size_t i = 1; i <= len; i++) {
                        char h = x->p + i < x->n ? x->s[x->p + i] : '\0';
                        int v = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
                        if (v < 0)
                                return fail(x, x->p, "\\%c needs %zu hex digits", e, len);
                        c = c * 16 + (unsigned long)v;
                }
                if (c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
                        return fail(x, x->p, "\\%c: not a Unicode scalar value", e);
                x->p += len + 1;
                return put_utf8(b, c) ? 0 : gs_error_set(x->err, GS_ENOMEM, "out of memory");
        }
        if (multi) { /* a line-ending backslash: the newline and the blanks after it go */
                size_t q = x->p;
                skip_ws(x);
                if (at_nl(x)) {
                        while (x->p < x->n && (x->s[x->p] == ' ' || x->s[x->p] == '\t' || at_nl(x)))
                                x->p += at_nl(x) && x->s[x->p] == '\r' ? 2 : 1;
                        return 0;
                }
                x->p = q;
        }
        return fail(x, x->p, "invalid escape \\%c in a string", e);
}

/* A string of any kind at x->p (its decoded text in *out). A key may not be a multi-line one. */
static int string(struct lx *x, bool multi_ok, char **out)
{
        size_t start = x->p;
        char q = x->s[x->p];
        bool ml = x->p + 2 < x->n && x->s[x->p + 1] == q && x->s[x->p + 2] == q;
        if (ml && !multi_ok)
                return fail(x, start, "a multi-line string cannot be a key");
        struct sbuf b = {0};
        x->p += ml ? 3 : 1;
        if (ml && at_nl(x))
                skip_nl(x); /* a newline right after the opening quotes is not part of it */
        for (;;) {
                if (x->p >= x->n || (!ml && (x->s[x->p] == '\n' || x->s[x->p] == '\r'))) {
                        free(b.b);
                        return fail(x, start, ml ? "a multi-line string opened here is never closed"
                                                 : "a string opened here is not closed on its line");
                }
                char c = x->s[x->p];
                if (c == q && (!ml || (x->p + 2 < x->n && x->s[x->p + 1] == q && x->s[x->p + 2] == q))) {
                        size_t r = 1;
                        while (ml && x->p + r < x->n && x->s[x->p + r] == q)
                                r++;
                        if (r > 5) {
                                free(b.b);
                                return fail(x, x->p, "too many quotes closing a multi-line string");
                        }
                        for (size_t i = 3; ml && i < r; i++)
                                put(&b, &q, 1);
                        x->p += r;
                        break;
                }
                if (c == '\\' && q == '"') {
                        x->p++;
                        if (escape(x, ml, &b) < 0) {
                                free(b.b);
                                return -1;
                        }
                        continue;
                }
                if (c == '\r' && at_nl(x))
                        x->p++, c = '\n';
                if (!put(&b, &c, 1)) {
                        free(b.b);
                        return gs_error_set(x->err, GS_ENOMEM, "out of memory");
                }
                x->p++;
        }
        *out = b.b != NULL ? b.b : strdup("");
        return *out != NULL ? 0 : gs_error_set(x->err, GS_ENOMEM, "out of memory");
}

/* A key: parts separated by dots (bare, "basic" or 'literal'). */
static int key(struct lx *x, char **parts, size_t *np)
{
        *np = 0;
        for (;;) {
                skip_ws(x);
                if (*np == MAX_PARTS) {
                        free_parts(parts, *np);
                        return fail(x, x->p, "a key of more than %d parts", MAX_PARTS);
                }
                char c = x->p < x->n ? x->s[x->p] : '\0';
                if (c == '"' || c == '\'') {
                        if (string(x, false, &parts[*np]) < 0) {
                                free_parts(parts, *np);
                                return -1;
                        }
                } else {
                        size_t q = x->p;
                        while (x->p < x->n && bare_char(x->s[x->p]))
                                x->p++;
                        if (x->p == q) {
                                free_parts(parts, *np);
                                return fail(x, q, "a key was expected");
                        }
                        if ((parts[*np] = strndup(x->s + q, x->p - q)) == NULL) {
                                free_parts(parts, *np);
                                return gs_error_set(x->err, GS_ENOMEM, "out of memory");
                        }
                }
                (*np)++;
                skip_ws(x);
                if (x->p < x->n && x->s[x->p] == '.') {
                        x->p++;
                        continue;
                }
                return 0;
        }
}

/* ------------------------------------------------------------------------------------------ */
/* values */

static int value(struct lx *x, struct gs_tnode *v, int depth);

static bool scalar_char(char c) { return bare_char(c) || c == '+' || c == '.' || c == ':'; }

/* A number, boolean or date: a run of its characters (a date and time may have a blank between). */
static int scalar(struct lx *x)
{
        size_t q = x->p;
        while (x->p < x->n && scalar_char(x->s[x->p]))
                x->p++;
        if (x->p - q == 10 && x->s[q + 4] == '-' && x->s[q + 7] == '-' && x->p + 1 < x->n && x->s[x->p] == ' ' &&
            x->s[x->p + 1] >= '0' && x->s[x->p + 1] <= '9') {
                x->p++;
                while (x->p < x->n && scalar_char(x->s[x->p]))
                        x->p++;
        }
        size_t l = x->p - q;
        const char *t = x->s + q;
        bool word = (l == 4 && strncmp(t, "true", 4) == 0) || (l == 5 && strncmp(t, "false", 5) == 0) ||
                    (l == 3 && (strncmp(t, "inf", 3) == 0 || strncmp(t, "nan", 3) == 0));
        if (l == 0 || !(word || (*t >= '0' && *t <= '9') || *t == '+' || *t == '-'))
                return fail(x, q, "a value was expected (a string, number, boolean, date, array or inline table)");
        return 0;
}

static int array(struct lx *x, struct gs_tnode *v, int depth)
{
        v->is_array = true;
        x->p++;
        for (;;) {
                skip_space(x);
                if (x->p >= x->n)
                        return fail(x, v->vstart, "an array opened here is never closed");
                if (x->s[x->p] == ']')
                        break;
                struct gs_tnode *e = node(x, NULL, GS_TK_VALUE, GS_TH_INLINE, x->p);
                if (e == NULL || add_kid(x, v, e) < 0 || value(x, e, depth + 1) < 0)
                        return -1;
                v->last_end = e->vend;
                skip_space(x);
                if (x->p < x->n && x->s[x->p] == ',') {
                        x->p++;
                        continue;
                }
                if (x->p < x->n && x->s[x->p] == ']')
                        break;
                return fail(x, x->p, "',' or ']' was expected in the array opened on line %u",
                            gs_tdoc_line(x->d, v->vstart));
        }
        x->p++;
        freeze(v);
        return 0;
}

/* `k = v` of an inline table t: the key's tables made inside t (they close with it). */
static int inline_entry(struct lx *x, struct gs_tnode *t, int depth)
{
        char *parts[MAX_PARTS];
        size_t np, at = x->p;
        if (key(x, parts, &np) < 0)
                return -1;
        skip_ws(x);
        if (x->p >= x->n || x->s[x->p] != '=') {
                free_parts(parts, np);
                return fail(x, x->p, "'=' was expected after a key");
        }
        x->p++;
        skip_ws(x);
        struct gs_tnode *c = t;
        for (size_t i = 0; i + 1 < np; i++) {
                struct gs_tnode *k = gs_tnode_child(c, parts[i]);
                if (k == NULL) {
                        if ((k = node(x, gs_steal_ptr(&parts[i]), GS_TK_TABLE, GS_TH_INLINE, at)) == NULL ||
                            add_kid(x, c, k) < 0) {
                                free_parts(parts, np);
                                return -1;
                        }
                } else if (k->kind != GS_TK_TABLE || k->frozen) {
                        fail(x, at, "%s is defined on line %u and cannot be extended here", parts[i],
                             gs_tdoc_line(x->d, k->at));
                        free_parts(parts, np);
                        return -1;
                }
                c = k;
        }
        if (gs_tnode_child(c, parts[np - 1]) != NULL) {
                fail(x, at, "key %s is defined twice in the inline table", parts[np - 1]);
                free_parts(parts, np);
                return -1;
        }
        struct gs_tnode *v = node(x, gs_steal_ptr(&parts[np - 1]), GS_TK_VALUE, GS_TH_INLINE, at);
        free_parts(parts, np);
        if (v == NULL || add_kid(x, c, v) < 0 || value(x, v, depth + 1) < 0)
                return -1;
        t->last_end = v->vend;
        return 0;
}

static int inline_table(struct lx *x, struct gs_tnode *t, int depth)
{
        t->kind = GS_TK_TABLE;
        t->how = GS_TH_INLINE;
        t->inline_value = true;
        x->p++;
        skip_ws(x);
        if (x->p < x->n && x->s[x->p] == '}') {
                x->p++;
                freeze(t);
                return 0;
        }
        for (;;) {
                skip_ws(x);
                if (inline_entry(x, t, depth) < 0)
                        return -1;
                skip_ws(x);
                if (x->p < x->n && x->s[x->p] == ',') {
                        x->p++;
                        continue;
                }
                if (x->p < x->n && x->s[x->p] == '}')
                        break;
                return fail(x, x->p, "',' or '}' was expected in the inline table opened on line %u "
                                     "(an inline table is one line)",
                            gs_tdoc_line(x->d, t->vstart));
        }
        x->p++;
        freeze(t);
        return 0;
}

static int value(struct lx *x, struct gs_tnode *v, int depth)
{
        if (depth > MAX_DEPTH)
                return fail(x, x->p, "values nested more than %d deep", MAX_DEPTH);
        v->vstart = x->p;
        char c = x->p < x->n ? x->s[x->p] : '\0';
        int rc = c == '"' || c == '\'' ? string(x, true, &v->str)
                 : c == '['            ? array(x, v, depth)
                 : c == '{'            ? inline_table(x, v, depth)
                                       : scalar(x);
        v->vend = x->p;
        return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* statements */

static int pend(struct lx *x, struct gs_tnode *t)
{
        if (t->pending)
                return 0;
        if (x->npend == x->cpend) {
                size_t c = x->cpend ? x->cpend * 2 : 16;
                struct gs_tnode **np = realloc(x->pend, c * sizeof(*np));
                if (np == NULL)
                        return gs_error_set(x->err, GS_ENOMEM, "out of memory");
                x->pend = np;
                x->cpend = c;
        }
        t->pending = true;
        x->pend[x->npend++] = t;
        return 0;
}

/* The tables made or extended by dotted keys of the section that ends: no header defines them. */
static void finalize(struct lx *x)
{
        for (size_t i = 0; i < x->npend; i++) {
                x->pend[i]->is_explicit = true;
                x->pend[i]->pending = false;
        }
        x->npend = 0;
}

/* The table in which a dotted key's value goes: its parts but the last, from the section's table. */
static struct gs_tnode *dotted(struct lx *x, size_t sect, char **parts, size_t np, size_t at)
{
        struct gs_tnode *t = x->d->sections[sect].table;
        for (size_t i = 0; i + 1 < np; i++) {
                struct gs_tnode *k = gs_tnode_child(t, parts[i]);
                if (k == NULL) {
                        if ((k = node(x, strdup(parts[i]), GS_TK_TABLE, GS_TH_DOTTED, at)) == NULL || add_kid(x, t, k) < 0)
                                return NULL;
                        if (k->name == NULL)
                                return gs_error_set(x->err, GS_ENOMEM, "out of memory"), NULL;
                        k->section = sect;
                } else if (k->kind != GS_TK_TABLE) {
                        return fail(x, at, "%s is %s (line %u), not a table", parts[i],
                                    k->kind == GS_TK_AOT ? "an array of tables" : "a value", gs_tdoc_line(x->d, k->at)), NULL;
                } else if (k->frozen) {
                        return fail(x, at, "%s is an inline table (line %u): it cannot be extended", parts[i],
                                    gs_tdoc_line(x->d, k->at)), NULL;
                } else if (k->is_explicit) {
                        return fail(x, at, "the table %s is defined on line %u: dotted keys of another table "
                                           "cannot add to it", parts[i], gs_tdoc_line(x->d, k->at)), NULL;
                } else if (k->how == GS_TH_IMPLICIT) {
                        k->how = GS_TH_DOTTED;
                        k->section = sect;
                }
                if (pend(x, k) < 0)
                        return NULL;
                t = k;
        }
        if (t->frozen)
                return fail(x, at, "an inline table cannot be extended"), NULL;
        return t;
}

static int key_value(struct lx *x)
{
        size_t sect = x->d->nsections - 1, at = x->p;
        char *parts[MAX_PARTS];
        size_t np;
        if (key(x, parts, &np) < 0)
                return -1;
        skip_ws(x);
        struct gs_tnode *t = NULL;
        if (x->p >= x->n || x->s[x->p] != '=')
                fail(x, x->p, "'=' was expected after a key");
        else if ((t = dotted(x, sect, parts, np, at)) != NULL && gs_tnode_child(t, parts[np - 1]) != NULL) {
                fail(x, at, "key %s is defined twice (first on line %u)", parts[np - 1],
                     gs_tdoc_line(x->d, gs_tnode_child(t, parts[np - 1])->at));
                t = NULL;
        }
        struct gs_tnode *v = t != NULL ? node(x, gs_steal_ptr(&parts[np - 1]), GS_TK_VALUE, GS_TH_INLINE, at) : NULL;
        free_parts(parts, np);
        if (v == NULL || add_kid(x, t, v) < 0)
                return -1;
        x->p++;
        skip_ws(x);
        if (value(x, v, 0) < 0 || end_of_line(x) < 0)
                return -1;
        struct gs_tsection *s = &x->d->sections[sect];
        if (!s->has_kv)
                s->first_kv = line_start(x, at);
        s->has_kv = true;
        s->last_kv_end = x->p;
        return 0;
}

static int add_section(struct lx *x, struct gs_tnode *t, size_t hdr)
{
        struct gs_tdoc *d = x->d;
        if (d->nsections == d->cap) {
                size_t c = d->cap ? d->cap * 2 : 16;
                struct gs_tsection *ns = realloc(d->sections, c * sizeof(*ns));
                if (ns == NULL)
                        return gs_error_set(x->err, GS_ENOMEM, "out of memory");
                d->sections = ns;
                d->cap = c;
        }
        d->sections[d->nsections++] = (struct gs_tsection){.table = t, .hdr = hdr, .body = x->p};
        return 0;
}

/* The header's table: parts but the last walked (made IMPLICIT), an array of tables' last element. */
static struct gs_tnode *header_parent(struct lx *x, char **parts, size_t np, size_t at)
{
        struct gs_tnode *t = x->d->root;
        for (size_t i = 0; i + 1 < np; i++) {
                struct gs_tnode *k = gs_tnode_child(t, parts[i]);
                if (k == NULL) {
                        if ((k = node(x, strdup(parts[i]), GS_TK_TABLE, GS_TH_IMPLICIT, at)) == NULL || add_kid(x, t, k) < 0)
                                return NULL;
                        if (k->name == NULL)
                                return gs_error_set(x->err, GS_ENOMEM, "out of memory"), NULL;
                } else if (k->frozen || k->kind == GS_TK_VALUE) {
                        return fail(x, at, "%s is %s (line %u): a header cannot add to it", parts[i],
                                    k->frozen && k->kind == GS_TK_TABLE ? "an inline table" : "a value",
                                    gs_tdoc_line(x->d, k->at)), NULL;
                } else if (k->kind == GS_TK_AOT) {
                        k = gs_tnode_last(k);
                }
                t = k;
        }
        return t;
}

static int header(struct lx *x)
{
        size_t at = x->p, hdr = line_start(x, at);
        bool aot = x->p + 1 < x->n && x->s[x->p + 1] == '[';
        char *parts[MAX_PARTS];
        size_t np;
        x->p += aot ? 2 : 1;
        if (key(x, parts, &np) < 0)
                return -1;
        bool closed = x->p < x->n && x->s[x->p] == ']' && (!aot || (x->p + 1 < x->n && x->s[x->p + 1] == ']'));
        x->p += closed ? (aot ? 2 : 1) : 0;
        finalize(x);
        struct gs_tnode *t = closed && end_of_line(x) == 0 ? header_parent(x, parts, np, at) : NULL;
        if (!closed)
                fail(x, at, "a header that is not closed with %s", aot ? "]]" : "]");
        struct gs_tnode *k = t != NULL ? gs_tnode_child(t, parts[np - 1]) : NULL;
        if (t == NULL) {
                k = NULL;
        } else if (k == NULL) {
                k = node(x, gs_steal_ptr(&parts[np - 1]), aot ? GS_TK_AOT : GS_TK_TABLE, GS_TH_HEADER, at);
                if (k == NULL || add_kid(x, t, k) < 0)
                        k = NULL;
        } else if (aot ? k->kind != GS_TK_AOT || k->frozen : k->kind != GS_TK_TABLE || k->is_explicit || k->frozen) {
                char name[1024] = "";
                for (size_t i = 0; i < np; i++)
                        snprintf(name + strlen(name), sizeof(name) - strlen(name), gs_toml_bare(parts[i]) ? "%s%s" : "%s\"%s\"",
                                 i ? "." : "", parts[i]);
                fail(x, at, "the table %s%s%s is defined twice (first on line %u%s)", aot ? "[[" : "[", name,
                     aot ? "]]" : "]", gs_tdoc_line(x->d, k->at), k->how == GS_TH_DOTTED ? ", by dotted keys" : "");
                k = NULL;
        } else if (!aot) {
                k->how = GS_TH_HEADER;
                k->at = at;
        }
        free_parts(parts, np);
        if (k == NULL)
                return -1;
        if (aot) {
                struct gs_tnode *e = node(x, NULL, GS_TK_TABLE, GS_TH_HEADER, at);
                if (e == NULL || add_kid(x, k, e) < 0)
                        return -1;
                k = e;
        }
        k->is_explicit = true;
        k->section = x->d->nsections;
        return add_section(x, k, hdr);
}

int gs_tdoc_parse(struct gs_tdoc *d, const char *text, struct gs_error *err)
{
        memset(d, 0, sizeof(*d));
        d->text = text;
        d->len = strlen(text);
        struct lx x = {.d = d, .s = text, .n = d->len, .err = err};
        int rc = -1;
        if ((d->root = node(&x, NULL, GS_TK_TABLE, GS_TH_ROOT, 0)) == NULL || add_section(&x, d->root, 0) < 0)
                goto out;
        d->root->is_explicit = true;
        while (x.p < x.n) {
                skip_ws(&x);
                char c = x.p < x.n ? x.s[x.p] : '\n';
                if (at_nl(&x) || x.p >= x.n)
                        x.p += x.p < x.n ? (c == '\r' ? 2 : 1) : 0;
                else if (c == '#' ? end_of_line(&x) < 0
                         : c == '[' ? header(&x) < 0
                         : bare_char(c) || c == '"' || c == '\'' ? key_value(&x) < 0
                                                                 : fail(&x, x.p, "not a key, a [table] or a comment") < 0)
                        goto out;
        }
        rc = 0;
out:
        free(x.pend);
        if (rc < 0)
                gs_tdoc_free(d);
        return rc;
}

void gs_tdoc_free(struct gs_tdoc *d)
{
        node_free(d->root);
        free(d->sections);
        d->root = NULL;
        d->sections = NULL;
        d->nsections = d->cap = 0;
}
