/*
 * TOML edited as text, for the engines' configs (containerd's config.toml, CRI-O's drop-ins):
 * Debian ships no C TOML library, and a rewrite from a parsed tree would lose the comments and
 * layout a person wrote. We find table headers, read and set one-line values of bare keys, and
 * keep every other byte.
 */
#include "engine/engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"

#define MAX_PARTS 16
#define PART_LEN 256

struct header {
        char parts[MAX_PARTS][PART_LEN];
        size_t n;
};

static bool bare_char(char c)
{
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

/* Parse "[a.\"b\".c]" in [p, eol): 1 a table header, 0 not one (an array of tables or no header). */
static int parse_header(const char *p, const char *eol, struct header *h)
{
        while (p < eol && (*p == ' ' || *p == '\t'))
                p++;
        if (p >= eol || *p != '[' || (p + 1 < eol && p[1] == '['))
                return 0;
        p++;
        h->n = 0;
        for (;;) {
                while (p < eol && (*p == ' ' || *p == '\t'))
                        p++;
                if (h->n == MAX_PARTS || p >= eol)
                        return 0;
                char *out = h->parts[h->n];
                size_t o = 0;
                if (*p == '"' || *p == '\'') {
                        char q = *p++;
                        while (p < eol && *p != q) {
                                if (q == '"' && *p == '\\' && p + 1 < eol)
                                        p++; /* \" and \\ (the names engines use need no more) */
                                if (o + 1 < PART_LEN)
                                        out[o++] = *p;
                                p++;
                        }
                        if (p >= eol)
                                return 0;
                        p++;
                } else {
                        while (p < eol && bare_char(*p))
                                if (o + 1 < PART_LEN)
                                        out[o++] = *p++;
                                else
                                        p++;
                        if (o == 0)
                                return 0;
                }
                out[o] = '\0';
                h->n++;
                while (p < eol && (*p == ' ' || *p == '\t'))
                        p++;
                if (p < eol && *p == '.') {
                        p++;
                        continue;
                }
                return p < eol && *p == ']' ? 1 : 0;
        }
}

static bool header_is(const struct header *h, const char *const *path, size_t n)
{
        if (h->n != n)
                return false;
        for (size_t i = 0; i < n; i++)
                if (strcmp(h->parts[i], path[i]) != 0)
                        return false;
        return true;
}

static const char *line_end(const char *p)
{
        const char *e = strchr(p, '\n');
        return e != NULL ? e : p + strlen(p);
}

/* The table's header line [*hdr, *body) and its body [*body, *end). 1 found, 0 not, -1 twice.
 * npath 0: the top-level keys before the first header. */
static int find_table(const char *text, const char *const *path, size_t npath, size_t *hdr, size_t *body, size_t *end)
{
        int found = 0;
        bool in = npath == 0;
        if (in) {
                *hdr = *body = 0;
                found = 1;
        }
        for (const char *p = text; *p;) {
                const char *e = line_end(p);
                struct header h;
                if (parse_header(p, e, &h) || (strncmp(p + strspn(p, " \t"), "[[", 2) == 0)) {
                        if (in) {
                                *end = (size_t)(p - text);
                                in = false;
                        }
                        if (npath > 0 && header_is(&h, path, npath) && strncmp(p + strspn(p, " \t"), "[[", 2) != 0) {
                                if (found)
                                        return -1;
                                found = 1;
                                in = true;
                                *hdr = (size_t)(p - text);
                                *body = (size_t)(e - text) + (*e == '\n');
                        }
                }
                p = *e ? e + 1 : e;
        }
        if (in)
                *end = strlen(text);
        return found;
}

/* In [body, end): the line defining `key` (bare, or "key"): its start, and its value's start. */
static bool find_key(const char *text, size_t body, size_t end, const char *key, size_t *line, size_t *val,
                     size_t *lend)
{
        size_t kl = strlen(key);
        for (size_t off = body; off < end;) {
                const char *p = text + off, *e = line_end(p);
                const char *k = p + strspn(p, " \t");
                const char *after = NULL;
                if (strncmp(k, key, kl) == 0 && !bare_char(k[kl]) && k[kl] != '.')
                        after = k + kl;
                else if (*k == '"' && strncmp(k + 1, key, kl) == 0 && k[kl + 1] == '"')
                        after = k + kl + 2;
                if (after != NULL) {
                        after += strspn(after, " \t");
                        if (*after == '=') {
                                *line = off;
                                *val = (size_t)(after + 1 + strspn(after + 1, " \t") - text);
                                *lend = (size_t)(e - text);
                                return true;
                        }
                }
                off = (size_t)(e - text) + (*e == '\n');
        }
        return false;
}

/* The value text of a one-line value: up to a comment outside quotes, trailing blanks dropped.
 * NULL for a value that goes on past the line (an open array, a multi-line string). */
static char *one_line_value(const char *v, const char *e)
{
        if (strncmp(v, "\"\"\"", 3) == 0 || strncmp(v, "'''", 3) == 0)
                return NULL;
        const char *p = v;
        int depth = 0;
        char q = 0;
        for (; p < e; p++) {
                if (q) {
                        if (q == '"' && *p == '\\' && p + 1 < e)
                                p++;
                        else if (*p == q)
                                q = 0;
                } else if (*p == '"' || *p == '\'')
                        q = *p;
                else if (*p == '[' || *p == '{')
                        depth++;
                else if (*p == ']' || *p == '}')
                        depth--;
                else if (*p == '#')
                        break;
        }
        if (q || depth != 0)
                return NULL;
        while (p > v && (p[-1] == ' ' || p[-1] == '\t' || p[-1] == '\r'))
                p--;
        return strndup(v, (size_t)(p - v));
}

char *gs_toml_get(const char *text, const char *const *path, size_t npath, const char *key)
{
        size_t hdr, body, end, line, val, lend;
        if (find_table(text, path, npath, &hdr, &body, &end) != 1 || !find_key(text, body, end, key, &line, &val, &lend))
                return NULL;
        return one_line_value(text + val, text + lend);
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

static void header_text(char *buf, size_t len, const char *const *path, size_t npath)
{
        size_t n = (size_t)snprintf(buf, len, "[");
        for (size_t i = 0; i < npath && n < len; i++) {
                bool bare = path[i][0] != '\0';
                for (const char *c = path[i]; *c; c++)
                        bare &= bare_char(*c);
                n += (size_t)snprintf(buf + n, len - n, bare ? "%s%s" : "%s\"%s\"", i ? "." : "", path[i]);
        }
        if (n < len)
                snprintf(buf + n, len - n, "]");
}

/* Where a new key goes in [body, end): after the table's last one-line key, else at body. */
static size_t after_last_key(const char *text, size_t body, size_t end)
{
        size_t at = body;
        for (size_t off = body; off < end;) {
                const char *p = text + off, *e = line_end(p);
                size_t w = strspn(p, " \t");
                const char *eq = memchr(p, '=', (size_t)(e - p));
                bool key = p + w < e && p[w] != '#' && p[w] != '[' && eq != NULL;
                size_t next = (size_t)(e - text) + (*e == '\n');
                if (key) {
                        char *v = one_line_value(eq + 1 + strspn(eq + 1, " \t"), e);
                        if (v == NULL)
                                return body; /* a value over several lines: stay at the top */
                        free(v);
                        at = next;
                }
                off = next;
        }
        return at;
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

/* The indentation of the first key line of the body, else the header's and two more. */
static void indent_of(const char *text, size_t hdr, size_t body, size_t end, bool top, char *ind, size_t len)
{
        for (size_t off = body; off < end;) {
                const char *p = text + off, *e = line_end(p);
                size_t w = strspn(p, " \t");
                if (p + w < e && p[w] != '#' && p[w] != '\r' && p[w] != '[') {
                        snprintf(ind, len, "%.*s", (int)(w < len ? w : len - 1), p);
                        return;
                }
                off = (size_t)(e - text) + (*e == '\n');
        }
        size_t w = top ? 0 : strspn(text + hdr, " \t");
        snprintf(ind, len, "%.*s%s", (int)(w < len - 3 ? w : 0), text + hdr, top ? "" : "  ");
}

char *gs_toml_set(const char *text, const char *const *path, size_t npath, const char *key, const char *value,
                  bool *changed, struct gs_error *err)
{
        *changed = false;
        size_t hdr = 0, body = 0, end = 0, line, val, lend;
        int f = find_table(text, path, npath, &hdr, &body, &end);
        char hbuf[2048];
        header_text(hbuf, sizeof(hbuf), path, npath);
        if (f < 0) {
                gs_error_set(err, GS_EFORMAT, "the table %s is defined twice", hbuf);
                return NULL;
        }
        char *ins = NULL, ind[64];
        char *out = NULL;
        if (f == 1 && find_key(text, body, end, key, &line, &val, &lend)) {
                char *old = one_line_value(text + val, text + lend);
                if (old == NULL) {
                        gs_error_set(err, GS_EFORMAT, "%s %s: its value spans lines; cannot edit it", hbuf, key);
                        return NULL;
                }
                bool same = strcmp(old, value) == 0;
                size_t vlen = strlen(old);
                free(old);
                if (same)
                        return strdup(text);
                out = splice(text, val, vlen, value);
        } else if (f == 1) {
                indent_of(text, hdr, body, end, npath == 0, ind, sizeof(ind));
                body = after_last_key(text, body, end);
                if (asprintf(&ins, "%s%s = %s\n", ind, key, value) < 0)
                        ins = NULL;
                /* a header line without its newline (the file's last line) gets one */
                if (ins != NULL && body > 0 && text[body - 1] != '\n') {
                        char *t = ins;
                        ins = NULL;
                        if (asprintf(&ins, "\n%s", t) < 0)
                                ins = NULL;
                        free(t);
                }
                out = ins != NULL ? splice(text, body, 0, ins) : NULL;
        } else {
                size_t tl = strlen(text);
                const char *sep = tl == 0 ? "" : text[tl - 1] == '\n' ? "\n" : "\n\n";
                if (asprintf(&ins, "%s%s\n  %s = %s\n", sep, hbuf, key, value) < 0)
                        ins = NULL;
                out = ins != NULL ? splice(text, tl, 0, ins) : NULL;
        }
        free(ins);
        if (out == NULL) {
                gs_error_set(err, GS_ENOMEM, "out of memory");
                return NULL;
        }
        *changed = true;
        return out;
}
