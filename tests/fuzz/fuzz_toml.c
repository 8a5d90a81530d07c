/* The engines' TOML editor (src/engine/toml_edit.c, toml_parse.c) on arbitrary text. For a text
 * the editor reads as TOML (gs_toml_check), any set either is refused with a reason naming the
 * line (a value or an array of tables in the way, the key a table) or: reads back as set, is
 * valid TOML to the editor's parser again, changes nothing when repeated, and keeps every line of
 * the input, in order, but the one replaced (when the old value was one line; an inline table
 * gains the key on its line). The editor never fails its own read-back (that would be an edit
 * that lands elsewhere than meant). The first byte picks the table, key and value; the rest is
 * the file. An independent parser reads the editor's output in unit_toml_tomllib
 * (tests/unit/test_toml_edit.py: python3's tomllib, over this corpus and generated documents). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

static const char *const p_cri[] = {"plugins", "io.containerd.grpc.v1.cri", "containerd", "runtimes", "nvidia"};
static const char *const p_crio[] = {"crio", "runtime"};
static const char *const p_a[] = {"a"};
static const struct {
        const char *const *path;
        size_t n;
} tables[] = {{NULL, 0}, {p_cri, 5}, {p_crio, 2}, {p_a, 1}};
static const char *const keys[] = {"version", "runtime_type", "default_runtime", "BinaryName"};
static const char *const values[] = {"\"io.containerd.runc.v2\"", "true", "2", "[\"a\", \"b\"]"};

static size_t line_len(const char *p) { return strcspn(p, "\n"); }
static const char *next_line(const char *p) { size_t l = line_len(p); return p + l + (p[l] == '\n'); }
static bool same_line(const char *x, const char *y)
{
        size_t lx = line_len(x);
        return lx == line_len(y) && strncmp(x, y, lx) == 0;
}

/* `b` is `a` with new lines put in (a new key after a table's last key: one line; a new table
 * at the end: a blank line, the header, the key) and at most `skip` lines replaced in place. */
/* "KEY = VALUE" (or "\"KEY\" = VALUE") with any blanks around '=' and after, and maybe a comment */
static bool is_set_line(const char *p, const char *key, const char *value)
{
        p += strspn(p, " \t");
        size_t kl = strlen(key), vl = strlen(value);
        bool quoted = *p == '"';
        if (strncmp(p + quoted, key, kl) != 0 || (quoted && p[kl + 1] != '"'))
                return false;
        p += kl + 2 * quoted;
        p += strspn(p, " \t");
        if (*p++ != '=')
                return false;
        p += strspn(p, " \t");
        return strncmp(p, value, vl) == 0;
}

static bool lines_kept(const char *a, const char *b, int skip, const char *key, const char *value)
{
        const char *pa = a, *pb = b;
        while (*pa) {
                if (*pb && same_line(pa, pb)) {
                        pa = next_line(pa);
                        pb = next_line(pb);
                        continue;
                }
                /* the key's line, its value replaced */
                if (skip > 0 && *pb && is_set_line(pb, key, value)) {
                        skip--;
                        pa = next_line(pa);
                        pb = next_line(pb);
                        continue;
                }
                const char *f = pb;
                int k = 0;
                while (*f && k < 3 && !same_line(pa, f)) {
                        f = next_line(f);
                        k++;
                }
                if (*f && same_line(pa, f)) { /* k lines inserted before it */
                        pb = next_line(f);
                } else if (skip-- > 0 && *pb) { /* replaced in place */
                        pb = next_line(pb);
                } else {
                        return false;
                }
                pa = next_line(pa);
        }
        return true;
}

static void fail(const char *why)
{
        fprintf(stderr, "fuzz_toml: %s\n", why);
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 1 || size > 65536 || memchr(data + 1, 0, size - 1) != NULL)
                return 0;
        char *text = malloc(size);
        memcpy(text, data + 1, size - 1);
        text[size - 1] = '\0';
        unsigned sel = data[0];
        const char *const *path = tables[sel & 3].path;
        size_t n = tables[sel & 3].n;
        const char *key = keys[(sel >> 2) & 3], *value = values[(sel >> 4) & 3];
        struct gs_error err = {0};
        bool changed, again;
        bool toml = gs_toml_check(text, &err) == 0;
        char *old = gs_toml_get(text, path, n, key);
        char *out = gs_toml_set(text, path, n, key, value, &changed, &err);
        if (out == NULL && toml && strncmp(err.msg, "line ", 5) != 0)
                fail(err.msg); /* a refusal of a TOML text says where; never a failed read-back */
        if (out != NULL) {
                if (!toml)
                        fail("a text the editor does not read was edited");
                if (gs_toml_check(out, &err) != 0)
                        fail("the output is not TOML to the editor's own parser");
                char *got = gs_toml_get(out, path, n, key);
                if (got == NULL || strcmp(got, value) != 0)
                        fail("set, not read back");
                free(got);
                char *out2 = gs_toml_set(out, path, n, key, value, &again, &err);
                if (out2 == NULL || again || strcmp(out, out2) != 0)
                        fail("not idempotent");
                free(out2);
                if (!changed && strcmp(out, text) != 0)
                        fail("\"unchanged\" but changed");
                if ((old == NULL || strchr(old, '\n') == NULL) && !lines_kept(text, out, 1, key, value))
                        fail("a line of the input lost");
        }
        free(old);
        free(out);
        free(text);
        return 0;
}
