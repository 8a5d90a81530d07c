/*
 * YAML for CDI specs: a block-style emitter over a json-c tree (what nvidia-ctk's YAML looks like:
 * sequences under a key at the key's indentation), and a reader (libyaml's document loader) that
 * turns the first document into a json-c tree.
 *
 * The emitter quotes every string a YAML 1.1 or 1.2 reader could take for something other than
 * that string: empty, numbers and anything starting with a digit, booleans and null in all their
 * YAML 1.1 spellings (yes/no/on/off/y/n/~), indicators at the start (- ? : , [ ] { } # & * ! | >
 * ' " % @ ` . + < = ~ and space), any ':' or '#', trailing spaces, and anything outside printable
 * ASCII. Quoted strings are double-quoted with YAML's escapes; valid UTF-8 is kept as is.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "cdi/cdi.h"
#include "common/error.h"

#define YAML_MAX_DEPTH 128
#define YAML_MAX_NODES 1000000u /* alias expansion ("billion laughs") stops here */

/* ------------------------------------------------------------------------------------------ */
/* Output buffer */

/* Longest key written as an implicit one (YAML allows 1024 characters; bytes counted here). */
#define YAML_MAX_IMPLICIT_KEY 1000

struct obuf {
        char *p;
        size_t n, cap;
        bool oom;
};

static void put(struct obuf *b, const char *s, size_t n)
{
        if (b->oom)
                return;
        if (b->n + n + 1 > b->cap) {
                size_t cap = b->cap != 0 ? b->cap : 4096;
                while (cap < b->n + n + 1)
                        cap *= 2;
                char *p = realloc(b->p, cap);
                if (p == NULL) {
                        b->oom = true;
                        return;
                }
                b->p = p;
                b->cap = cap;
        }
        memcpy(b->p + b->n, s, n);
        b->n += n;
        b->p[b->n] = '\0';
}

static void puts_(struct obuf *b, const char *s) { put(b, s, strlen(s)); }

static void putf(struct obuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(struct obuf *b, const char *fmt, ...)
{
        char tmp[64];
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
        va_end(ap);
        if (n > 0)
                put(b, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

static void indent(struct obuf *b, int n)
{
        static const char spaces[] = "                                ";
        while (n > 0) {
                int k = n < (int)sizeof(spaces) - 1 ? n : (int)sizeof(spaces) - 1;
                put(b, spaces, (size_t)k);
                n -= k;
        }
}

/* ------------------------------------------------------------------------------------------ */
/* Strings */

/* Decode one UTF-8 sequence at s (n bytes left): its length, or 0 if invalid (overlong forms,
 * surrogates and values past U+10FFFF are invalid). */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
        if (s[0] < 0x80) {
                *cp = s[0];
                return 1;
        }
        size_t len;
        uint32_t min, c;
        if ((s[0] & 0xe0) == 0xc0) {
                len = 2, min = 0x80, c = s[0] & 0x1f;
        } else if ((s[0] & 0xf0) == 0xe0) {
                len = 3, min = 0x800, c = s[0] & 0x0f;
        } else if ((s[0] & 0xf8) == 0xf0) {
                len = 4, min = 0x10000, c = s[0] & 0x07;
        } else {
                return 0;
        }
        if (len > n)
                return 0;
        for (size_t i = 1; i < len; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                c = (c << 6) | (s[i] & 0x3f);
        }
        if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
                return 0;
        *cp = c;
        return len;
}

static bool utf8_valid(const char *s, size_t n)
{
        const unsigned char *u = (const unsigned char *)s;
        for (size_t i = 0; i < n;) {
                uint32_t cp;
                size_t k = utf8_decode(u + i, n - i, &cp);
                if (k == 0)
                        return false;
                i += k;
        }
        return true;
}

/* Words a YAML 1.1 or 1.2 reader resolves to a boolean or null when plain. */
static bool special_word(const char *s)
{
        static const char *const words[] = {"y", "n", "yes", "no", "on", "off", "true", "false", "null"};
        for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
                if (strcasecmp(s, words[i]) == 0)
                        return true;
        return false;
}

/* Can s (n bytes, no NUL inside when this returns true) be written as a plain scalar? */
static bool plain_ok(const char *s, size_t n)
{
        if (n == 0 || strlen(s) != n)
                return false;
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char)s[i];
                if (c < 0x20 || c > 0x7e || c == ':' || c == '#')
                        return false;
        }
        unsigned char c0 = (unsigned char)s[0];
        if ((c0 >= '0' && c0 <= '9') || strchr(" -?:,[]{}#&*!|>'\"%@`.+<=~\\", c0) != NULL)
                return false;
        if (s[n - 1] == ' ')
                return false;
        return !special_word(s);
}

static void emit_quoted(struct obuf *b, const char *s, size_t n)
{
        const unsigned char *u = (const unsigned char *)s;
        put(b, "\"", 1);
        for (size_t i = 0; i < n;) {
                uint32_t cp;
                size_t k = utf8_decode(u + i, n - i, &cp);
                if (k == 0) { /* callers check validity first; never reached */
                        putf(b, "\\x%02X", u[i]);
                        i++;
                        continue;
                }
                switch (cp) {
                case '"': puts_(b, "\\\""); break;
                case '\\': puts_(b, "\\\\"); break;
                case 0x00: puts_(b, "\\0"); break;
                case 0x07: puts_(b, "\\a"); break;
                case 0x08: puts_(b, "\\b"); break;
                case 0x09: puts_(b, "\\t"); break;
                case 0x0a: puts_(b, "\\n"); break;
                case 0x0b: puts_(b, "\\v"); break;
                case 0x0c: puts_(b, "\\f"); break;
                case 0x0d: puts_(b, "\\r"); break;
                case 0x1b: puts_(b, "\\e"); break;
                case 0x85: puts_(b, "\\N"); break;
                case 0xa0: puts_(b, "\\_"); break;
                case 0x2028: puts_(b, "\\L"); break;
                case 0x2029: puts_(b, "\\P"); break;
                default:
                        if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f))
                                putf(b, "\\x%02X", (unsigned)cp);
                        else if (cp == 0xfeff || cp == 0xfffe || cp == 0xffff)
                                putf(b, "\\u%04X", (unsigned)cp);
                        else
                                put(b, s + i, k);
                }
                i += k;
        }
        put(b, "\"", 1);
}

static int emit_string(struct obuf *b, const char *s, size_t n, struct gs_error *err)
{
        if (!utf8_valid(s, n))
                return gs_error_set(err, GS_EFORMAT, "cannot write YAML: a string is not valid UTF-8: %.64s", s);
        if (plain_ok(s, n))
                put(b, s, n);
        else
                emit_quoted(b, s, n);
        return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Emitter */

static bool is_container(json_object *v)
{
        return json_object_is_type(v, json_type_object) || json_object_is_type(v, json_type_array);
}

static bool is_empty_container(json_object *v)
{
        if (json_object_is_type(v, json_type_object))
                return json_object_object_length(v) == 0;
        if (json_object_is_type(v, json_type_array))
                return json_object_array_length(v) == 0;
        return false;
}

static int emit_scalar(struct obuf *b, json_object *v, struct gs_error *err)
{
        switch (json_object_get_type(v)) {
        case json_type_null:
                puts_(b, "null");
                return 0;
        case json_type_boolean:
                puts_(b, json_object_get_boolean(v) ? "true" : "false");
                return 0;
        case json_type_double: {
                double d = json_object_get_double(v);
                if (isnan(d))
                        puts_(b, ".nan");
                else if (isinf(d))
                        puts_(b, d > 0 ? ".inf" : "-.inf");
                else
                        puts_(b, json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
                return 0;
        }
        case json_type_int:
                puts_(b, json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
                return 0;
        case json_type_string:
                return emit_string(b, json_object_get_string(v), (size_t)json_object_get_string_len(v), err);
        case json_type_object:
                puts_(b, "{}");
                return 0;
        case json_type_array:
                puts_(b, "[]");
                return 0;
        }
        return 0;
}

/* A non-empty mapping or sequence at indentation `ind`; with `inline_first` the first line
 * continues the current one (after "- "). */
static int emit_block(struct obuf *b, json_object *v, int ind, bool inline_first, int depth, struct gs_error *err)
{
        if (depth > YAML_MAX_DEPTH)
                return gs_error_set(err, GS_EINVAL, "cannot write YAML: nested too deeply");
        bool first = true;
        if (json_object_is_type(v, json_type_object)) {
                json_object_object_foreach(v, key, val)
                {
                        if (!(first && inline_first))
                                indent(b, ind);
                        first = false;
                        /* YAML limits an implicit key to 1024 characters: a longer one is written
                         * as an explicit key ("? key" then ": value" on the next line). */
                        struct obuf k = {0};
                        if (emit_string(&k, key, strlen(key), err) < 0) {
                                free(k.p);
                                return -1;
                        }
                        bool explicit_key = k.n > YAML_MAX_IMPLICIT_KEY;
                        if (explicit_key)
                                put(b, "? ", 2);
                        put(b, k.p != NULL ? k.p : "", k.n);
                        b->oom |= k.oom;
                        free(k.p);
                        if (explicit_key) {
                                put(b, "\n", 1);
                                indent(b, ind);
                        }
                        put(b, ":", 1);
                        if (is_container(val) && !is_empty_container(val)) {
                                put(b, "\n", 1);
                                int child = json_object_is_type(val, json_type_array) && !explicit_key ? ind : ind + 2;
                                if (emit_block(b, val, child, false, depth + 1, err) < 0)
                                        return -1;
                        } else {
                                put(b, " ", 1);
                                if (emit_scalar(b, val, err) < 0)
                                        return -1;
                                put(b, "\n", 1);
                        }
                }
                return 0;
        }
        size_t n = json_object_array_length(v);
        for (size_t i = 0; i < n; i++) {
                json_object *val = json_object_array_get_idx(v, i);
                if (!(first && inline_first))
                        indent(b, ind);
                first = false;
                put(b, "- ", 2);
                if (is_container(val) && !is_empty_container(val)) {
                        if (emit_block(b, val, ind + 2, true, depth + 1, err) < 0)
                                return -1;
                } else {
                        if (emit_scalar(b, val, err) < 0)
                                return -1;
                        put(b, "\n", 1);
                }
        }
        return 0;
}

char *gs_yaml_emit(json_object *obj, struct gs_error *err)
{
        struct obuf b = {0};
        int rc;
        if (obj != NULL && is_container(obj) && !is_empty_container(obj)) {
                rc = emit_block(&b, obj, 0, false, 0, err);
        } else {
                rc = obj != NULL ? emit_scalar(&b, obj, err) : (puts_(&b, "null"), 0);
                put(&b, "\n", 1);
        }
        if (rc == 0 && b.oom)
                rc = gs_error_set(err, GS_ENOMEM, "out of memory");
        if (rc < 0) {
                free(b.p);
                return NULL;
        }
        return b.p;
}

/* ------------------------------------------------------------------------------------------ */
/* Reader */

struct reader {
        yaml_document_t *doc;
        unsigned long nodes;
        struct gs_error *err;
};

static bool all_digits(const char *s, const char *digits)
{
        if (*s == '\0')
                return false;
        for (; *s != '\0'; s++)
                if (strchr(digits, *s) == NULL)
                        return false;
        return true;
}

/* YAML's float syntax (1.2 core, plus 1.1's forms that need a dot): [-+]? (. digits | digits
 * [. digits*]) ([eE] [-+]? digits)?, and .inf / .nan. */
static bool float_syntax(const char *s)
{
        const char *p = s;
        if (*p == '-' || *p == '+')
                p++;
        if (strcasecmp(p, ".inf") == 0 || (p == s && strcasecmp(p, ".nan") == 0))
                return true;
        bool digits = false;
        while (*p >= '0' && *p <= '9')
                p++, digits = true;
        if (*p == '.') {
                p++;
                while (*p >= '0' && *p <= '9')
                        p++, digits = true;
        }
        if (!digits)
                return false;
        if (*p == 'e' || *p == 'E') {
                p++;
                if (*p == '-' || *p == '+')
                        p++;
                if (!(*p >= '0' && *p <= '9'))
                        return false;
                while (*p >= '0' && *p <= '9')
                        p++;
        }
        return *p == '\0';
}

/* A plain scalar, resolved (null, boolean, integer, float, else string). */
static json_object *resolve_plain(const char *s, size_t n)
{
        if (strlen(s) != n) /* a NUL inside: only a string can hold it */
                return json_object_new_string_len(s, (int)n);
        if (n == 0 || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 || strcmp(s, "Null") == 0 ||
            strcmp(s, "NULL") == 0)
                return NULL;
        static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON", "y", "Y"};
        static const char *const no[] = {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF", "n", "N"};
        for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
                if (strcmp(s, yes[i]) == 0)
                        return json_object_new_boolean(1);
                if (strcmp(s, no[i]) == 0)
                        return json_object_new_boolean(0);
        }
        const char *d = (s[0] == '-' || s[0] == '+') ? s + 1 : s;
        if (all_digits(d, "0123456789") || (d[0] == '0' && (d[1] == 'x' || d[1] == 'o') &&
                                            all_digits(d + 2, d[1] == 'x' ? "0123456789abcdefABCDEF" : "01234567"))) {
                errno = 0;
                char *end;
                if (d[0] == '0' && (d[1] == 'x' || d[1] == 'o')) {
                        long long v = strtoll(d + 2, &end, d[1] == 'x' ? 16 : 8);
                        if (errno == 0 && *end == '\0')
                                return json_object_new_int64(s[0] == '-' ? -v : v);
                } else if (s[0] == '-') {
                        long long v = strtoll(s, &end, 10); /* 010 is ten (YAML 1.2), never octal */
                        if (errno == 0 && *end == '\0')
                                return json_object_new_int64(v);
                } else {
                        /* up to 2^64-1, as json-c reads JSON integers */
                        unsigned long long u = strtoull(d, &end, 10);
                        if (errno == 0 && *end == '\0')
                                return u <= INT64_MAX ? json_object_new_int64((int64_t)u) : json_object_new_uint64(u);
                }
                /* too large for an integer: a float, as YAML readers do */
        }
        if (float_syntax(s) || all_digits(d, "0123456789")) {
                const char *p = (s[0] == '-' || s[0] == '+') ? s + 1 : s;
                double v;
                if (strcasecmp(p, ".inf") == 0)
                        v = INFINITY;
                else if (strcasecmp(p, ".nan") == 0)
                        v = NAN;
                else
                        v = strtod(p, NULL);
                return json_object_new_double(s[0] == '-' ? -v : v);
        }
        return json_object_new_string_len(s, (int)n);
}

static int convert(struct reader *r, yaml_node_t *node, int depth, json_object **out);

static int convert_mapping(struct reader *r, yaml_node_t *node, int depth, json_object **out)
{
        json_object *obj = json_object_new_object();
        if (obj == NULL)
                return gs_error_set(r->err, GS_ENOMEM, "out of memory");
        for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top; p++) {
                yaml_node_t *k = yaml_document_get_node(r->doc, p->key);
                yaml_node_t *v = yaml_document_get_node(r->doc, p->value);
                if (k == NULL || v == NULL || k->type != YAML_SCALAR_NODE) {
                        json_object_put(obj);
                        return gs_error_set(r->err, GS_EFORMAT, "invalid YAML: a mapping key is not a scalar at line %zu",
                                            (k != NULL ? k->start_mark.line : node->start_mark.line) + 1);
                }
                char *key = strndup((const char *)k->data.scalar.value, k->data.scalar.length);
                if (key == NULL) {
                        json_object_put(obj);
                        return gs_error_set(r->err, GS_ENOMEM, "out of memory");
                }
                bool merge = strcmp(key, "<<") == 0 && k->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
                if (merge || json_object_object_get_ex(obj, key, NULL)) {
                        gs_error_set(r->err, GS_EFORMAT, "invalid YAML: %s key '%.64s' at line %zu",
                                     merge ? "unsupported merge" : "duplicate", key, k->start_mark.line + 1);
                        free(key);
                        json_object_put(obj);
                        return -1;
                }
                json_object *val = NULL;
                if (convert(r, v, depth + 1, &val) < 0) {
                        free(key);
                        json_object_put(obj);
                        return -1;
                }
                json_object_object_add(obj, key, val);
                free(key);
        }
        *out = obj;
        return 0;
}

static int convert(struct reader *r, yaml_node_t *node, int depth, json_object **out)
{
        if (depth > YAML_MAX_DEPTH)
                return gs_error_set(r->err, GS_EFORMAT, "invalid YAML: nested more than %d levels (or a recursive alias)",
                                    YAML_MAX_DEPTH);
        if (++r->nodes > YAML_MAX_NODES)
                return gs_error_set(r->err, GS_EFORMAT, "invalid YAML: more than %u nodes (aliases expanded)",
                                    YAML_MAX_NODES);
        *out = NULL;
        switch (node->type) {
        case YAML_SCALAR_NODE: {
                const char *s = (const char *)node->data.scalar.value;
                size_t n = node->data.scalar.length;
                if (n > INT_MAX)
                        return gs_error_set(r->err, GS_EFORMAT, "invalid YAML: scalar too long");
                /* Tags are not looked at (libyaml's loader gives an untagged scalar the !!str tag,
                 * so an explicit one cannot be told apart): plain scalars are resolved, quoted ones
                 * are strings. */
                if (node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
                        *out = resolve_plain(s, n);
                        if (*out == NULL && n != 0 && strcmp(s, "~") != 0 && strcasecmp(s, "null") != 0)
                                return gs_error_set(r->err, GS_ENOMEM, "out of memory");
                        return 0;
                }
                *out = json_object_new_string_len(s, (int)n);
                return *out != NULL ? 0 : gs_error_set(r->err, GS_ENOMEM, "out of memory");
        }
        case YAML_SEQUENCE_NODE: {
                json_object *arr = json_object_new_array();
                if (arr == NULL)
                        return gs_error_set(r->err, GS_ENOMEM, "out of memory");
                for (yaml_node_item_t *it = node->data.sequence.items.start; it < node->data.sequence.items.top; it++) {
                        yaml_node_t *child = yaml_document_get_node(r->doc, *it);
                        json_object *val = NULL;
                        if (child == NULL || convert(r, child, depth + 1, &val) < 0) {
                                json_object_put(arr);
                                return child == NULL ? gs_error_set(r->err, GS_EFORMAT, "invalid YAML: bad node") : -1;
                        }
                        json_object_array_add(arr, val);
                }
                *out = arr;
                return 0;
        }
        case YAML_MAPPING_NODE:
                return convert_mapping(r, node, depth, out);
        case YAML_NO_NODE:
                break;
        }
        return gs_error_set(r->err, GS_EFORMAT, "invalid YAML: empty node");
}

json_object *gs_yaml_parse(const char *text, size_t len, struct gs_error *err)
{
        yaml_parser_t parser;
        yaml_document_t doc;
        if (!yaml_parser_initialize(&parser)) {
                gs_error_set(err, GS_ENOMEM, "out of memory");
                return NULL;
        }
        yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
        if (!yaml_parser_load(&parser, &doc)) {
                const char *what = parser.problem != NULL ? parser.problem : "parse error";
                if (parser.context != NULL)
                        gs_error_set(err, GS_EFORMAT, "invalid YAML: %s %s at line %zu, column %zu", parser.context,
                                     what, parser.problem_mark.line + 1, parser.problem_mark.column + 1);
                else
                        gs_error_set(err, GS_EFORMAT, "invalid YAML: %s at line %zu, column %zu", what,
                                     parser.problem_mark.line + 1, parser.problem_mark.column + 1);
                yaml_parser_delete(&parser);
                return NULL;
        }
        json_object *out = NULL;
        yaml_node_t *root = yaml_document_get_root_node(&doc);
        if (root == NULL) {
                gs_error_set(err, GS_EFORMAT, "empty YAML document");
        } else {
                struct reader r = {.doc = &doc, .err = err};
                if (convert(&r, root, 0, &out) < 0)
                        out = NULL;
                else if (out == NULL)
                        gs_error_set(err, GS_EFORMAT, "the YAML document is null");
        }
        yaml_document_delete(&doc);
        yaml_parser_delete(&parser);
        return out;
}
