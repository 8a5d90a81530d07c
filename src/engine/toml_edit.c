/*
 * TOML edited as text, for the engines' configs (containerd's config.toml, CRI-O's drop-ins):
 * Debian ships no C TOML library, and a rewrite from a parsed tree would lose the comments and
 * layout a person wrote. The text is parsed (toml_parse.c) to know where each table and key is
 * defined; a value is replaced where it stands, and a new key goes where TOML lets that table
 * grow: in its [header]'s section, beside the dotted keys that define it, inside the braces of
 * the inline table that holds it, else under a new [header] at the end. Every other byte is
 * kept; every edit is read back before it is returned.
 */
#include "engine/engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "engine/toml_doc.h"

/* The deepest table of `path` that exists (*depth parts of it); refused where a part is a value
 * or an array of tables. */
static struct gs_tnode *walk(const struct gs_tdoc *d, const char *const *path, size_t npath, size_t *depth,
                             struct gs_error *err)
{
        struct gs_tnode *t = d->root;
        for (*depth = 0; *depth < npath; (*depth)++) {
                struct gs_tnode *k = gs_tnode_child(t, path[*depth]);
                if (k == NULL)
                        break;
                if (k->kind != GS_TK_TABLE) {
                        if (err != NULL)
                                gs_error_set(err, GS_EFORMAT, "line %u: %s is %s, not a table; not edited",
                                             gs_tdoc_line(d, k->at), path[*depth],
                                             k->kind == GS_TK_AOT ? "an array of tables" : "a value");
                        return NULL;
                }
                t = k;
        }
        return t;
}

/* The value node of path.key (an inline table { } too), or NULL. */
static struct gs_tnode *lookup(const struct gs_tdoc *d, const char *const *path, size_t npath, const char *key)
{
        size_t depth;
        struct gs_tnode *t = walk(d, path, npath, &depth, NULL);
        struct gs_tnode *v = t != NULL && depth == npath ? gs_tnode_child(t, key) : NULL;
        return v != NULL && (v->kind == GS_TK_VALUE || v->inline_value) ? v : NULL;
}

char *gs_toml_get(const char *text, const char *const *path, size_t npath, const char *key)
{
        struct gs_tdoc d;
        struct gs_error e = {0};
        if (gs_tdoc_parse(&d, text, &e) < 0)
                return NULL;
        struct gs_tnode *v = lookup(&d, path, npath, key);
        char *out = v != NULL ? strndup(text + v->vstart, v->vend - v->vstart) : NULL;
        gs_tdoc_free(&d);
        return out;
}

int gs_toml_check(const char *text, struct gs_error *err)
{
        struct gs_tdoc d;
        if (gs_tdoc_parse(&d, text, err) < 0)
                return -1;
        gs_tdoc_free(&d);
        return 0;
}

char *gs_toml_quote(const char *s)
{
        size_t n = 3;
        for (const char *p = s; *p; p++)
                n += 6;
        char *out = malloc(n), *o = out;
        if (out == NULL)
                return NULL;
        *o++ = '"';
        for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
                if (*p == '"' || *p == '\\') {
                        *o++ = '\\';
                        *o++ = (char)*p;
                } else if (*p < 0x20 || *p == 0x7f)
                        o += sprintf(o, "\\u%04x", *p);
                else
                        *o++ = (char)*p;
        }
        *o++ = '"';
        *o = '\0';
        return out;
}

/* ------------------------------------------------------------------------------------------ */
/* text */

struct buf {
        char *b;
        size_t n, cap;
        bool oom;
};

static void add(struct buf *b, const char *s, size_t n)
{
        if (b->oom)
                return;
        if (b->n + n + 1 > b->cap) {
                size_t cap = (b->n + n + 1) * 2 + 64;
                char *nb = realloc(b->b, cap);
                if (nb == NULL) {
                        b->oom = true;
                        return;
                }
                b->b = nb;
                b->cap = cap;
        }
        memcpy(b->b + b->n, s, n);
        b->n += n;
        b->b[b->n] = '\0';
}
static void adds(struct buf *b, const char *s) { add(b, s, strlen(s)); }

/* A key of parts (bare where it can be, else "quoted"), joined with dots. */
static void add_key(struct buf *b, const char *const *parts, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                if (i > 0)
                        adds(b, ".");
                if (gs_toml_bare(parts[i])) {
                        adds(b, parts[i]);
                } else {
                        gs_autofree char *q = gs_toml_quote(parts[i]);
                        if (q == NULL)
                                b->oom = true;
                        else
                                adds(b, q);
                }
        }
}

/* The names from below `base` down to t (at most `max`), in order; their count. */
static size_t rel_path(const struct gs_tnode *base, const struct gs_tnode *t, const char **out, size_t max)
{
        size_t n = 0;
        for (const struct gs_tnode *c = t; c != NULL && c != base; c = c->parent)
                n++;
        if (n > max)
                return (size_t)-1;
        size_t i = n;
        for (const struct gs_tnode *c = t; c != NULL && c != base; c = c->parent)
                out[--i] = c->name;
        return n;
}

/* A new line `key = value` into section s: after its last key/value line, else after its header. */
static size_t section_insert(const struct gs_tdoc *d, const struct gs_tsection *s, bool root, struct buf *line)
{
        size_t at = s->has_kv ? s->last_kv_end : s->body;
        const char *t = d->text;
        char ind[64] = "";
        const char *from = s->has_kv ? t + s->first_kv : t + s->hdr;
        size_t w = s->has_kv || !root ? strspn(from, " \t") : 0;
        if (w > 40)
                w = 40;
        snprintf(ind, sizeof(ind), "%.*s%s", (int)w, from, s->has_kv || root ? "" : "  ");
        if (at > 0 && t[at - 1] != '\n')
                adds(line, "\n");
        adds(line, ind);
        return at;
}

/* Where and what to insert for a new path.key = value (path[depth..] does not exist yet under the
 * existing table t). */
static int plan_insert(const struct gs_tdoc *d, struct gs_tnode *t, const char *const *path, size_t npath,
                       size_t depth, const char *key, const char *value, size_t *at, struct buf *ins,
                       struct gs_error *err)
{
        const char *rel[160];
        size_t n = 0;
        const struct gs_tnode *base = NULL;
        if (t->frozen) { /* into the braces of the inline table that holds it */
                base = t;
                while (!base->inline_value)
                        base = base->parent;
        } else if (t->how == GS_TH_DOTTED) { /* beside the dotted keys that make it */
                base = d->sections[t->section].table;
        } else if ((t->how == GS_TH_HEADER || t->how == GS_TH_ROOT) && depth == npath) {
                base = t;
        }
        if (base != NULL) {
                n = rel_path(base, t, rel, 64);
                if (n == (size_t)-1)
                        return gs_error_set(err, GS_EFORMAT, "the key is too deep to edit");
                for (size_t i = depth; i < npath; i++)
                        rel[n++] = path[i];
                rel[n++] = key;
        }
        if (base != NULL && base->inline_value) {
                *at = base->last_end != 0 ? base->last_end : base->vstart + 1;
                /* in the inline table's own style: a = { b = { key = value } } */
                adds(ins, base->last_end != 0 ? ", " : " ");
                for (size_t i = 0; i < n; i++) {
                        add_key(ins, &rel[i], 1);
                        adds(ins, i + 1 < n ? " = { " : " = ");
                }
                adds(ins, value);
                for (size_t i = 1; i < n; i++)
                        adds(ins, " }");
                if (base->last_end == 0)
                        adds(ins, " ");
        } else if (base != NULL) {
                const struct gs_tsection *s = &d->sections[t->section];
                *at = section_insert(d, s, t->section == 0, ins);
                add_key(ins, rel, n);
                adds(ins, " = ");
                adds(ins, value);
                adds(ins, "\n");
        } else { /* a new [path] at the end */
                *at = d->len;
                adds(ins, d->len == 0 ? "" : d->text[d->len - 1] == '\n' ? "\n" : "\n\n");
                adds(ins, "[");
                add_key(ins, path, npath);
                adds(ins, "]\n  ");
                add_key(ins, &key, 1);
                adds(ins, " = ");
                adds(ins, value);
                adds(ins, "\n");
        }
        return ins->oom ? gs_error_set(err, GS_ENOMEM, "out of memory") : 0;
}

/* text[0, at) + ins + text[at + cut, ...) */
static char *splice(const char *text, size_t at, size_t cut, const char *ins)
{
        size_t tl = strlen(text), il = strlen(ins);
        char *out = malloc(tl - cut + il + 1);
        if (out == NULL)
                return NULL;
        memcpy(out, text, at);
        memcpy(out + at, ins, il);
        memcpy(out + at + il, text + at + cut, tl - at - cut + 1);
        return out;
}

/* The new text reads back: valid TOML, path.key's value exactly `value`. */
static int read_back(const char *out, const char *const *path, size_t npath, const char *key, const char *value,
                     struct gs_error *err)
{
        struct gs_tdoc d;
        struct gs_error e = {0};
        if (gs_tdoc_parse(&d, out, &e) < 0)
                return gs_error_set(err, GS_EFORMAT, "the edit of %s would not be valid TOML (%s); not written", key, e.msg);
        struct gs_tnode *v = lookup(&d, path, npath, key);
        bool same = v != NULL && v->vend - v->vstart == strlen(value) && strncmp(out + v->vstart, value, strlen(value)) == 0;
        gs_tdoc_free(&d);
        return same ? 0 : gs_error_set(err, GS_EFORMAT, "the edit of %s would not read back; not written", key);
}

/* The edit: where (at, cut) and what (ins); *unchanged when the value is there already. */
static int plan(const struct gs_tdoc *d, const char *const *path, size_t npath, const char *key, const char *value,
                size_t *at, size_t *cut, struct buf *ins, bool *unchanged, struct gs_error *err)
{
        size_t depth;
        struct gs_tnode *t = walk(d, path, npath, &depth, err);
        if (t == NULL)
                return -1;
        struct gs_tnode *k = depth == npath ? gs_tnode_child(t, key) : NULL;
        *cut = 0;
        if (k != NULL && k->kind != GS_TK_VALUE && !k->inline_value)
                return gs_error_set(err, GS_EFORMAT, "line %u: %s is a table, not a value; not edited",
                                    gs_tdoc_line(d, k->at), key);
        if (k != NULL) {
                *unchanged = k->vend - k->vstart == strlen(value) && strncmp(d->text + k->vstart, value, strlen(value)) == 0;
                *at = k->vstart;
                *cut = k->vend - k->vstart;
                adds(ins, value);
                return ins->oom ? gs_error_set(err, GS_ENOMEM, "out of memory") : 0;
        }
        return plan_insert(d, t, path, npath, depth, key, value, at, ins, err);
}

char *gs_toml_set(const char *text, const char *const *path, size_t npath, const char *key, const char *value,
                  bool *changed, struct gs_error *err)
{
        *changed = false;
        struct gs_tdoc d;
        if (gs_tdoc_parse(&d, text, err) < 0)
                return NULL;
        struct buf ins = {0};
        size_t at = 0, cut = 0;
        bool unchanged = false;
        int rc = plan(&d, path, npath, key, value, &at, &cut, &ins, &unchanged, err);
        gs_tdoc_free(&d);
        char *out = NULL;
        if (rc == 0 && unchanged)
                out = strdup(text);
        else if (rc == 0)
                out = splice(text, at, cut, ins.b != NULL ? ins.b : "");
        free(ins.b);
        if (rc < 0)
                return NULL;
        if (out == NULL) {
                gs_error_set(err, GS_ENOMEM, "out of memory");
                return NULL;
        }
        if (!unchanged && read_back(out, path, npath, key, value, err) < 0) {
                free(out);
                return NULL;
        }
        *changed = !unchanged;
        return out;
}

/* ------------------------------------------------------------------------------------------ */
/* arrays of strings */

int gs_toml_strings(const char *text, const char *const *path, size_t npath, const char *key, char ***out,
                    size_t *n, struct gs_error *err)
{
        *out = NULL;
        *n = 0;
        struct gs_tdoc d;
        if (gs_tdoc_parse(&d, text, err) < 0)
                return -1;
        struct gs_tnode *v = lookup(&d, path, npath, key);
        int rc = 0;
        if (v != NULL && !v->is_array) {
                rc = gs_error_set(err, GS_EFORMAT, "line %u: %s is not an array", gs_tdoc_line(&d, v->at), key);
        } else if (v != NULL && v->nkids > 0) {
                *out = calloc(v->nkids, sizeof(char *));
                for (size_t i = 0; *out != NULL && rc == 0 && i < v->nkids; i++) {
                        if (v->kids[i]->str == NULL)
                                rc = gs_error_set(err, GS_EFORMAT, "line %u: %s is not an array of strings",
                                                  gs_tdoc_line(&d, v->at), key);
                        else if (((*out)[(*n)++] = strdup(v->kids[i]->str)) == NULL)
                                rc = gs_error_set(err, GS_ENOMEM, "out of memory");
                }
                if (*out == NULL)
                        rc = gs_error_set(err, GS_ENOMEM, "out of memory");
        }
        gs_tdoc_free(&d);
        if (rc < 0)
                gs_toml_strings_free(out, n);
        return rc;
}

void gs_toml_strings_free(char ***list, size_t *n)
{
        for (size_t i = 0; *list != NULL && i < *n; i++)
                free((*list)[i]);
        free(*list);
        *list = NULL;
        *n = 0;
}

char *gs_toml_append(const char *text, const char *const *path, size_t npath, const char *key, const char *elem,
                     struct gs_error *err)
{
        struct gs_tdoc d;
        if (gs_tdoc_parse(&d, text, err) < 0)
                return NULL;
        struct gs_tnode *v = lookup(&d, path, npath, key);
        char *out = NULL;
        bool changed;
        if (v == NULL || !v->is_array) {
                gs_tdoc_free(&d);
                gs_autofree char *arr = NULL;
                if (v != NULL) {
                        gs_error_set(err, GS_EFORMAT, "%s is not an array", key);
                        return NULL;
                }
                if (asprintf(&arr, "[%s]", elem) < 0) {
                        gs_error_set(err, GS_ENOMEM, "out of memory");
                        return NULL;
                }
                return gs_toml_set(text, path, npath, key, arr, &changed, err);
        }
        size_t at = v->last_end != 0 ? v->last_end : v->vstart + 1;
        gs_autofree char *ins = NULL;
        if (asprintf(&ins, "%s%s", v->last_end != 0 ? ", " : "", elem) < 0)
                ins = NULL;
        gs_tdoc_free(&d);
        if (ins == NULL || (out = splice(text, at, 0, ins)) == NULL)
                gs_error_set(err, GS_ENOMEM, "out of memory");
        else if (gs_toml_check(out, err) < 0) {
                free(out);
                out = NULL;
        }
        return out;
}
