/*
 * Host defaults: /etc/gpuslice/config.toml, a flat TOML subset (see hostconfig.h).
 *
 * The parser works line by line on a length-bounded buffer (never past `len`, no NUL needed):
 * every value is on one line, so every error names exactly one line. Values are parsed into a
 * copy of the caller's struct, which is replaced only when the whole text is valid.
 */
#include "runtime/hostconfig.h"
#include "runtime/mps.h"
#include "runtime/request.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/strutil.h"

#define HOSTCONFIG_MAX_SIZE (1024 * 1024)

/* ---------------------------------------------------------------------------------------------
 * The known keys.
 */
enum section { SEC_DRIVER, SEC_HOOK, SEC_SLICE, SEC_DP, SEC_RUNTIME, NSECS };
static const char *const section_names[NSECS] = {"driver", "hook", "slice", "device-plugin", "runtime"};

enum value_type { T_STRING, T_BOOL, T_UINT, T_CAPS, T_COMPAT, T_LIST };

/* Checks on a string value. */
enum {
        V_ABSOLUTE = 1u << 0,          /* an absolute path */
        V_ABSOLUTE_OR_EMPTY = 1u << 1, /* "" or an absolute path */
        V_LDCONFIG = 1u << 2,          /* "/abs" or "@/abs" */
};

struct key {
        enum section section;
        const char *name;
        enum value_type type;
        size_t off;  /* offsetof(struct gs_hostconfig, field) */
        size_t size; /* T_STRING: size of the field, NUL included */
        unsigned checks;
        unsigned min, max; /* T_UINT */
};

#define STR(sec, name, field, checks) \
        {sec, name, T_STRING, offsetof(struct gs_hostconfig, field), \
         sizeof(((struct gs_hostconfig *)0)->field), checks, 0, 0}
#define BOOL(sec, name, field) {sec, name, T_BOOL, offsetof(struct gs_hostconfig, field), 0, 0, 0, 0}
#define UINT(sec, name, field, min, max) {sec, name, T_UINT, offsetof(struct gs_hostconfig, field), 0, 0, min, max}

static const struct key keys[] = {
        STR(SEC_DRIVER, "root", root, V_ABSOLUTE),
        STR(SEC_DRIVER, "ldcache", ldcache, 0),
        STR(SEC_DRIVER, "path", path, 0),
        STR(SEC_DRIVER, "ldconfig", ldconfig, V_LDCONFIG),
        BOOL(SEC_DRIVER, "load-kmods", load_kmods),
        STR(SEC_DRIVER, "user", user, 0),
        {SEC_DRIVER, "nvml-timeout", T_UINT, offsetof(struct gs_hostconfig, nvml_timeout_s), 0, 0, 1, 3600},
        BOOL(SEC_HOOK, "no-cgroups", no_cgroups),
        {SEC_HOOK, "default-capabilities", T_CAPS, offsetof(struct gs_hostconfig, default_caps), 0, 0, 0, 0},
        {SEC_HOOK, "supported-capabilities", T_CAPS, offsetof(struct gs_hostconfig, supported_caps), 0, 0, 0, 0},
        BOOL(SEC_HOOK, "disable-require", disable_require),
        STR(SEC_HOOK, "log-file", log_file, V_ABSOLUTE_OR_EMPTY),
        {SEC_HOOK, "cuda-compat-mode", T_COMPAT, offsetof(struct gs_hostconfig, compat_mode), 0, 0, 0, 0},
        BOOL(SEC_HOOK, "accept-nvidia-visible-devices-envvar-when-unprivileged", accept_env_unprivileged),
        BOOL(SEC_HOOK, "accept-nvidia-visible-devices-as-volume-mounts", accept_volume_mounts),
        STR(SEC_SLICE, "library", vgpu_library, V_ABSOLUTE_OR_EMPTY),
        STR(SEC_SLICE, "regions-dir", regions_dir, V_ABSOLUTE),
        STR(SEC_SLICE, "mps-root", mps_root, V_ABSOLUTE),
        STR(SEC_SLICE, "mps", mps, 0), /* T_STRING, checked: off, auto or on */
        BOOL(SEC_SLICE, "env-may-raise", env_may_raise),
        STR(SEC_DP, "socket-dir", dp.socket_dir, V_ABSOLUTE),
        STR(SEC_DP, "resource", dp.resource, 0),
        UINT(SEC_DP, "replicas", dp.replicas, 1, 64),
        STR(SEC_DP, "replica-memory", dp.replica_memory, 0),
        UINT(SEC_DP, "replica-compute", dp.replica_compute, 0, 100),
        STR(SEC_DP, "replica-priority", dp.replica_priority, 0),
        {SEC_DP, "slices", T_LIST, offsetof(struct gs_hostconfig, dp.slices), 0, 0, 0, 0},
        STR(SEC_DP, "slice-domain", dp.slice_domain, 0),
        STR(SEC_DP, "allocate", dp.allocate, 0),
        STR(SEC_DP, "cdi-spec", dp.cdi_spec, V_ABSOLUTE),
        STR(SEC_DP, "cdi-kind", dp.cdi_kind, 0),
        STR(SEC_DP, "hook-path", dp.hook_path, V_ABSOLUTE_OR_EMPTY),
        STR(SEC_DP, "host-root", dp.host_root, V_ABSOLUTE_OR_EMPTY),
        STR(SEC_DP, "pod-resources-socket", dp.pod_resources_socket, V_ABSOLUTE_OR_EMPTY),
        UINT(SEC_DP, "label-interval", dp.label_interval_s, 0, 3600),
        BOOL(SEC_DP, "health-checks", dp.health_checks),
        STR(SEC_DP, "sysfs", dp.sysfs, V_ABSOLUTE),
        STR(SEC_RUNTIME, "mode", rt.mode, 0), /* T_STRING, checked: legacy, cdi, jit-cdi or auto */
        {SEC_RUNTIME, "runtimes", T_LIST, offsetof(struct gs_hostconfig, rt.runtimes), 0, 0, 0, 0},
        {SEC_RUNTIME, "cdi-spec-dirs", T_LIST, offsetof(struct gs_hostconfig, rt.cdi_spec_dirs), 0, 0, 0, 0},
        {SEC_RUNTIME, "env-cdi-kinds", T_LIST, offsetof(struct gs_hostconfig, rt.env_cdi_kinds), 0, 0, 0, 0},
        STR(SEC_RUNTIME, "hook-path", rt.hook_path, V_ABSOLUTE_OR_EMPTY),
        STR(SEC_RUNTIME, "log-file", rt.log_file, V_ABSOLUTE_OR_EMPTY),
};
#define NKEYS GS_ARRAY_SIZE(keys)

static const struct {
        const char *name;
        enum gs_compat_mode mode;
} compat_names[] = {
        {"ldconfig", GS_COMPAT_LDCONFIG}, {"mount", GS_COMPAT_MOUNT}, {"disabled", GS_COMPAT_DISABLED},
};

void gs_hostconfig_defaults(struct gs_hostconfig *hc)
{
        memset(hc, 0, sizeof(*hc));
        snprintf(hc->root, sizeof(hc->root), "/");
        snprintf(hc->ldcache, sizeof(hc->ldcache), "/etc/ld.so.cache");
        snprintf(hc->path, sizeof(hc->path), "%s", GS_HOSTCONFIG_DEFAULT_BIN_PATH);
        hc->ldconfig[0] = '\0'; /* @/sbin/ldconfig.real if that exists, else @/sbin/ldconfig */
        hc->load_kmods = false;
        hc->user[0] = '\0';
        hc->nvml_timeout_s = 10;
        hc->no_cgroups = false;
        hc->default_caps = GS_CAP_UTILITY | GS_CAP_COMPUTE;
        hc->supported_caps = GS_CAP_ALL;
        hc->disable_require = false;
        hc->log_file[0] = '\0';
        hc->compat_mode = GS_COMPAT_LDCONFIG;
        hc->accept_env_unprivileged = true; /* NVIDIA's defaults */
        hc->accept_volume_mounts = false;
        hc->vgpu_library[0] = '\0';
        snprintf(hc->regions_dir, sizeof(hc->regions_dir), "%s", GS_SLICE_REGIONS_DIR);
        snprintf(hc->mps_root, sizeof(hc->mps_root), "%s", GS_MPS_ROOT_DEFAULT);
        snprintf(hc->mps, sizeof(hc->mps), "off");
        struct gs_hostconfig_dp *dp = &hc->dp;
        snprintf(dp->socket_dir, sizeof(dp->socket_dir), "/var/lib/kubelet/device-plugins");
        snprintf(dp->resource, sizeof(dp->resource), "nvidia.com/gpu");
        dp->replicas = 1;
        snprintf(dp->slice_domain, sizeof(dp->slice_domain), "gpuslice.io");
        snprintf(dp->allocate, sizeof(dp->allocate), "cdi");
        snprintf(dp->cdi_spec, sizeof(dp->cdi_spec), "/var/run/cdi/gpuslice-k8s.yaml");
        snprintf(dp->cdi_kind, sizeof(dp->cdi_kind), "k8s.gpuslice.io/gpu");
        snprintf(dp->pod_resources_socket, sizeof(dp->pod_resources_socket), "/var/lib/kubelet/pod-resources/kubelet.sock");
        dp->label_interval_s = 30;
        dp->health_checks = true;
        snprintf(dp->sysfs, sizeof(dp->sysfs), "/sys");
        struct gs_hostconfig_rt *rt = &hc->rt;
        snprintf(rt->mode, sizeof(rt->mode), "auto");
        rt->runtimes.n = 2;
        snprintf(rt->runtimes.v[0], sizeof(rt->runtimes.v[0]), "runc");
        snprintf(rt->runtimes.v[1], sizeof(rt->runtimes.v[1]), "crun");
        rt->cdi_spec_dirs.n = 2;
        snprintf(rt->cdi_spec_dirs.v[0], sizeof(rt->cdi_spec_dirs.v[0]), "/etc/cdi");
        snprintf(rt->cdi_spec_dirs.v[1], sizeof(rt->cdi_spec_dirs.v[1]), "/var/run/cdi");
        rt->env_cdi_kinds.n = 1;
        snprintf(rt->env_cdi_kinds.v[0], sizeof(rt->env_cdi_kinds.v[0]), "nvidia.com/gpu");
}

/* ---------------------------------------------------------------------------------------------
 * The parser. `p` walks the current line [p, eol) (newline and a CR before it excluded).
 */
struct parser {
        const char *p, *eol;
        const char *name;
        unsigned line;
        struct gs_error *err;
        char key[160]; /* "section.key" of the value being parsed, for messages */
};

static int perr(struct parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int perr(struct parser *ps, const char *fmt, ...)
{
        char msg[GS_ERRMSG_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        return gs_error_set(ps->err, GS_EFORMAT, "%s:%u: %s", ps->name, ps->line, msg);
}

static bool is_ws(char c) { return c == ' ' || c == '\t'; }
static bool is_key_char(char c)
{
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}
/* TOML: control characters other than tab are not allowed in strings and comments. */
static bool is_ctl(char c) { return ((unsigned char)c < 0x20 && c != '\t') || c == 0x7f; }

static void skip_ws(struct parser *ps)
{
        while (ps->p < ps->eol && is_ws(*ps->p))
                ps->p++;
}

/* Length of the valid UTF-8 sequence at s (n bytes available), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
        unsigned char c = s[0];
        size_t len;
        unsigned char lo = 0x80, hi = 0xbf; /* range of the second byte */
        if (c < 0x80)
                return 1;
        if (c >= 0xc2 && c <= 0xdf) {
                len = 2;
        } else if (c >= 0xe0 && c <= 0xef) {
                len = 3;
                if (c == 0xe0)
                        lo = 0xa0; /* overlong */
                else if (c == 0xed)
                        hi = 0x9f; /* surrogates */
        } else if (c >= 0xf0 && c <= 0xf4) {
                len = 4;
                if (c == 0xf0)
                        lo = 0x90; /* overlong */
                else if (c == 0xf4)
                        hi = 0x8f; /* > U+10FFFF */
        } else {
                return 0;
        }
        if (n < len || s[1] < lo || s[1] > hi)
                return 0;
        for (size_t i = 2; i < len; i++)
                if (s[i] < 0x80 || s[i] > 0xbf)
                        return 0;
        return len;
}

static size_t utf8_encode(uint32_t cp, char out[4])
{
        if (cp < 0x80) {
                out[0] = (char)cp;
                return 1;
        }
        if (cp < 0x800) {
                out[0] = (char)(0xc0 | (cp >> 6));
                out[1] = (char)(0x80 | (cp & 0x3f));
                return 2;
        }
        if (cp < 0x10000) {
                out[0] = (char)(0xe0 | (cp >> 12));
                out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
                out[2] = (char)(0x80 | (cp & 0x3f));
                return 3;
        }
        out[0] = (char)(0xf0 | (cp >> 18));
        out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[3] = (char)(0x80 | (cp & 0x3f));
        return 4;
}

/* A comment from '#' to the end of the line. */
static int parse_comment(struct parser *ps)
{
        for (; ps->p < ps->eol; ps->p++)
                if (is_ctl(*ps->p))
                        return perr(ps, "control character in comment");
        return 0;
}

/* After a value or a header: only whitespace and a comment. */
static int parse_line_end(struct parser *ps, const char *after)
{
        skip_ws(ps);
        if (ps->p == ps->eol)
                return 0;
        if (*ps->p == '#')
                return parse_comment(ps);
        return perr(ps, "unexpected text after %s", after);
}

/* A basic "string" or a 'literal string' at ps->p, decoded into out (size outsz, NUL-terminated).
 * -1 with an error set; -2 (no error set) when it does not fit: the caller names the problem. */
static int parse_string(struct parser *ps, char *out, size_t outsz)
{
        const char quote = *ps->p;
        size_t n = 0;
        bool overflow = false;

        if (ps->eol - ps->p >= 3 && ps->p[1] == quote && ps->p[2] == quote)
                return perr(ps, "multi-line strings are not supported");
        ps->p++;
        for (;;) {
                char buf[4];
                size_t k;
                if (ps->p >= ps->eol)
                        return perr(ps, "unterminated string");
                char c = *ps->p;
                if (c == quote) {
                        ps->p++;
                        break;
                }
                if (c == '\\' && quote == '"') {
                        if (ps->eol - ps->p < 2)
                                return perr(ps, "unterminated string");
                        char e = ps->p[1];
                        ps->p += 2;
                        k = 1;
                        switch (e) {
                        case 'b': buf[0] = '\b'; break;
                        case 't': buf[0] = '\t'; break;
                        case 'n': buf[0] = '\n'; break;
                        case 'f': buf[0] = '\f'; break;
                        case 'r': buf[0] = '\r'; break;
                        case '"': buf[0] = '"'; break;
                        case '\\': buf[0] = '\\'; break;
                        case 'u':
                        case 'U': {
                                int ndig = e == 'u' ? 4 : 8;
                                uint32_t cp = 0;
                                if (ps->eol - ps->p < ndig)
                                        return perr(ps, "invalid unicode escape: \\%c needs %d hex digits", e, ndig);
                                for (int i = 0; i < ndig; i++) {
                                        int h = gs_hex_digit(ps->p[i]);
                                        if (h < 0)
                                                return perr(ps, "invalid unicode escape: \\%c needs %d hex digits",
                                                            e, ndig);
                                        cp = cp << 4 | (uint32_t)h;
                                }
                                if (cp == 0)
                                        return perr(ps, "\\%c%0*X is not allowed in a string", e, ndig, 0u);
                                if ((cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
                                        return perr(ps, "invalid unicode escape \\%c%.*s: not a Unicode scalar value",
                                                    e, ndig, ps->p);
                                ps->p += ndig;
                                k = utf8_encode(cp, buf);
                                break;
                        }
                        default:
                                if ((unsigned char)e > 0x20 && (unsigned char)e < 0x7f)
                                        return perr(ps, "invalid escape '\\%c' in string", e);
                                return perr(ps, "invalid escape in string");
                        }
                } else if (is_ctl(c)) {
                        return perr(ps, "control character in string");
                } else {
                        k = utf8_len((const unsigned char *)ps->p, (size_t)(ps->eol - ps->p));
                        if (k == 0)
                                return perr(ps, "invalid UTF-8 in string");
                        memcpy(buf, ps->p, k);
                        ps->p += k;
                }
                if (n + k < outsz) {
                        memcpy(out + n, buf, k);
                        n += k;
                } else {
                        overflow = true; /* keep going: syntax errors come first */
                }
        }
        if (outsz > 0)
                out[n] = '\0';
        return overflow ? -2 : 0;
}

/* The bare token at ps->p (up to whitespace, a comment or the end of the line). */
static size_t bare_token(const struct parser *ps)
{
        const char *q = ps->p;
        while (q < ps->eol && !is_ws(*q) && *q != '#')
                q++;
        return (size_t)(q - ps->p);
}

static bool token_is(const char *t, size_t n, const char *word)
{
        return n == strlen(word) && memcmp(t, word, n) == 0;
}

/* A TOML decimal integer: [+-]?(0|[1-9](_?[0-9])*). *neg and *val (saturated at UINT64_MAX). */
static bool parse_integer(const char *t, size_t n, bool *neg, uint64_t *val)
{
        size_t i = 0;
        *neg = false;
        *val = 0;
        if (i < n && (t[i] == '+' || t[i] == '-'))
                *neg = t[i++] == '-';
        if (i == n || t[i] < '0' || t[i] > '9')
                return false;
        if (t[i] == '0' && n - i > 1)
                return false; /* leading zero, or 0x / 0o / 0b, or a float */
        for (; i < n; i++) {
                if (t[i] == '_') {
                        /* between two digits */
                        if (i + 1 == n || t[i + 1] < '0' || t[i + 1] > '9')
                                return false;
                        continue;
                }
                if (t[i] < '0' || t[i] > '9')
                        return false;
                unsigned d = (unsigned)(t[i] - '0');
                *val = *val > (UINT64_MAX - d) / 10 ? UINT64_MAX : *val * 10 + d;
        }
        return true;
}

static bool is_absolute(const char *s) { return s[0] == '/'; }

/* A one-line array of strings: `each` gets every element read into buf (bufsize bytes; `too_long`
 * when it did not fit, buf then holding its start) and returns 0 or perr's -1. */
static int parse_array(struct parser *ps, char *buf, size_t bufsize,
                       int (*each)(struct parser *ps, const char *elem, bool too_long, void *arg), void *arg)
{
        if (*ps->p != '[')
                return perr(ps, "'%s' must be an array of strings", ps->key);
        ps->p++;
        for (;;) {
                skip_ws(ps);
                if (ps->p == ps->eol || *ps->p == '#')
                        return perr(ps, "unterminated array (arrays must be on one line)");
                if (*ps->p == ']')
                        break;
                if (*ps->p != '"' && *ps->p != '\'')
                        return perr(ps, "'%s' must be an array of strings", ps->key);
                int r = parse_string(ps, buf, bufsize);
                if (r == -1 || each(ps, buf, r == -2, arg) < 0)
                        return -1;
                skip_ws(ps);
                if (ps->p == ps->eol || *ps->p == '#')
                        return perr(ps, "unterminated array (arrays must be on one line)");
                if (*ps->p == ',') {
                        ps->p++;
                        continue;
                }
                if (*ps->p != ']')
                        return perr(ps, "expected ',' or ']' after an element of '%s'", ps->key);
        }
        ps->p++; /* ']' */
        return 0;
}

static int add_cap(struct parser *ps, const char *name, bool too_long, void *arg)
{
        if (too_long)
                return perr(ps, "'%s': unknown capability '%s...'", ps->key, name);
        unsigned cap = gs_cap_from_name(name, strlen(name));
        if (cap == 0)
                return perr(ps, "'%s': unknown capability '%s'", ps->key, name);
        *(unsigned *)arg |= cap;
        return 0;
}

static int parse_caps(struct parser *ps, unsigned *out)
{
        char name[32];
        unsigned caps = 0;
        if (parse_array(ps, name, sizeof(name), add_cap, &caps) < 0)
                return -1;
        *out = caps;
        return 0;
}

static int add_element(struct parser *ps, const char *elem, bool too_long, void *arg)
{
        struct gs_hostconfig_list *l = arg;
        if (l->n == GS_HOSTCONFIG_MAX_LIST)
                return perr(ps, "'%s' has more than %d elements", ps->key, GS_HOSTCONFIG_MAX_LIST);
        if (too_long)
                return perr(ps, "'%s': an element is too long (at most %d bytes)", ps->key, GS_HOSTCONFIG_LIST_STR - 1);
        memcpy(l->v[l->n++], elem, strlen(elem) + 1);
        return 0;
}

/* A one-line array of strings (each shorter than GS_HOSTCONFIG_LIST_STR), replacing the list. */
static int parse_list(struct parser *ps, struct gs_hostconfig_list *out)
{
        char elem[GS_HOSTCONFIG_LIST_STR];
        out->n = 0;
        return parse_array(ps, elem, sizeof(elem), add_element, out);
}

/* runtime.env-cdi-kinds: each a CDI kind (vendor/class), none a Kubernetes allocator's (k8s.*):
 * the kubelet names those devices, never a container's env. */
static int check_env_kinds(struct parser *ps, const struct gs_hostconfig_list *l)
{
        for (unsigned i = 0; i < l->n; i++) {
                const char *k = l->v[i], *slash = strchr(k, '/');
                if (slash == NULL || slash == k || slash[1] == '\0' || strchr(slash + 1, '/') != NULL || strchr(k, '=') != NULL)
                        return perr(ps, "'%s': '%s' is not a CDI kind (vendor/class)", ps->key, k);
                if (strncmp(k, "k8s.", 4) == 0)
                        return perr(ps, "'%s': '%s' is a Kubernetes allocator's kind: its devices (another pod's claim, "
                                    "a device plugin's 'all') are never taken from a container's env", ps->key, k);
        }
        return 0;
}

static int parse_value(struct parser *ps, const struct key *k, struct gs_hostconfig *hc)
{
        char *field = (char *)hc + k->off;
        const char *t = ps->p;
        size_t n;

        switch (k->type) {
        case T_BOOL:
                n = bare_token(ps);
                if (!token_is(t, n, "true") && !token_is(t, n, "false"))
                        return perr(ps, "'%s' must be a boolean", ps->key);
                *(bool *)field = t[0] == 't';
                ps->p += n;
                return 0;
        case T_UINT: {
                bool neg;
                uint64_t v;
                n = bare_token(ps);
                if (!parse_integer(t, n, &neg, &v))
                        return perr(ps, "'%s' must be an integer", ps->key);
                if ((neg && v != 0) || v < k->min || v > k->max)
                        return perr(ps, "'%s' must be between %u and %u", ps->key, k->min, k->max);
                *(unsigned *)field = (unsigned)v;
                ps->p += n;
                return 0;
        }
        case T_CAPS:
                return parse_caps(ps, (unsigned *)field);
        case T_LIST:
                if (parse_list(ps, (struct gs_hostconfig_list *)field) < 0)
                        return -1;
                return k->off == offsetof(struct gs_hostconfig, rt.env_cdi_kinds)
                               ? check_env_kinds(ps, (struct gs_hostconfig_list *)field)
                               : 0;
        case T_STRING:
        case T_COMPAT:
                break;
        }

        if (*ps->p != '"' && *ps->p != '\'')
                return perr(ps, "'%s' must be a string", ps->key);
        char buf[GS_HOSTCONFIG_MAX_STR];
        size_t size = k->type == T_STRING ? k->size : sizeof(buf);
        int r = parse_string(ps, buf, size);
        if (r == -1)
                return -1;
        if (k->type == T_COMPAT) {
                for (size_t i = 0; r == 0 && i < GS_ARRAY_SIZE(compat_names); i++)
                        if (strcmp(buf, compat_names[i].name) == 0) {
                                *(enum gs_compat_mode *)field = compat_names[i].mode;
                                return 0;
                        }
                return perr(ps, "'%s' must be ldconfig, mount or disabled, not '%.64s%s'", ps->key, buf,
                            r == -2 || strlen(buf) > 64 ? "..." : "");
        }
        if (r == -2)
                return perr(ps, "'%s' is too long (at most %zu bytes)", ps->key, size - 1);
        if ((k->checks & V_ABSOLUTE) && !is_absolute(buf))
                return perr(ps, "'%s' must be an absolute path", ps->key);
        if ((k->checks & V_ABSOLUTE_OR_EMPTY) && buf[0] != '\0' && !is_absolute(buf))
                return perr(ps, "'%s' must be empty or an absolute path", ps->key);
        if ((k->checks & V_LDCONFIG) && !is_absolute(buf[0] == '@' ? buf + 1 : buf))
                return perr(ps, "'%s' must be an absolute path, or '@' and an absolute host path", ps->key);
        if (k->off == offsetof(struct gs_hostconfig, mps) && (buf[0] == '\0' || gs_mps_mode_parse(buf) < 0))
                return perr(ps, "'%s' must be off, auto or on, not '%.64s'", ps->key, buf);
        if (k->off == offsetof(struct gs_hostconfig, rt.mode) && strcmp(buf, "legacy") != 0 && strcmp(buf, "cdi") != 0 &&
            strcmp(buf, "jit-cdi") != 0 && strcmp(buf, "auto") != 0)
                return perr(ps, "'%s' must be legacy, cdi, jit-cdi or auto, not '%.64s'", ps->key, buf);
        memcpy(field, buf, strlen(buf) + 1);
        return 0;
}

struct parse_state {
        int section; /* -1: before any section header */
        bool seen_section[NSECS];
        bool seen_key[NKEYS];
};

static int parse_section(struct parser *ps, struct parse_state *st)
{
        ps->p++; /* '[' */
        if (ps->p < ps->eol && *ps->p == '[')
                return perr(ps, "arrays of tables are not supported");
        skip_ws(ps);
        const char *name = ps->p;
        while (ps->p < ps->eol && is_key_char(*ps->p))
                ps->p++;
        size_t n = (size_t)(ps->p - name);
        skip_ws(ps);
        if (n > 0 && ps->p < ps->eol && *ps->p == '.')
                return perr(ps, "dotted section names are not supported");
        if (n == 0 || ps->p == ps->eol || *ps->p != ']')
                return perr(ps, "invalid section header");
        ps->p++;
        int sec = -1;
        for (int i = 0; i < NSECS; i++)
                if (token_is(name, n, section_names[i]))
                        sec = i;
        if (sec < 0)
                return perr(ps, "unknown section '[%.*s]'", (int)(n > 64 ? 64 : n), name);
        if (st->seen_section[sec])
                return perr(ps, "duplicate section '[%s]'", section_names[sec]);
        st->seen_section[sec] = true;
        st->section = sec;
        return parse_line_end(ps, "the section header");
}

static int parse_key_value(struct parser *ps, struct parse_state *st, struct gs_hostconfig *hc)
{
        const char *name = ps->p;
        while (ps->p < ps->eol && is_key_char(*ps->p))
                ps->p++;
        size_t n = (size_t)(ps->p - name);
        if (n == 0) {
                unsigned char c = (unsigned char)*ps->p;
                if (c == '"' || c == '\'')
                        return perr(ps, "quoted keys are not supported");
                if (c > 0x20 && c < 0x7f)
                        return perr(ps, "expected a key, not '%c'", c);
                return perr(ps, "expected a key, not byte 0x%02x", c);
        }
        int shown = (int)(n > 64 ? 64 : n);
        skip_ws(ps);
        if (ps->p < ps->eol && *ps->p == '.')
                return perr(ps, "dotted keys are not supported (use a [section] header)");
        if (ps->p == ps->eol || *ps->p != '=')
                return perr(ps, "expected '=' after '%.*s'", shown, name);
        ps->p++;
        if (st->section < 0)
                snprintf(ps->key, sizeof(ps->key), "%.*s", shown, name);
        else
                snprintf(ps->key, sizeof(ps->key), "%s.%.*s", section_names[st->section], shown, name);

        size_t ki = NKEYS;
        for (size_t i = 0; st->section >= 0 && i < NKEYS; i++)
                if ((int)keys[i].section == st->section && token_is(name, n, keys[i].name))
                        ki = i;
        if (ki == NKEYS)
                return perr(ps, "unknown key '%s'", ps->key);
        if (st->seen_key[ki])
                return perr(ps, "duplicate key '%s'", ps->key);
        st->seen_key[ki] = true;

        skip_ws(ps);
        if (ps->p == ps->eol || *ps->p == '#')
                return perr(ps, "missing value for '%s'", ps->key);
        if (parse_value(ps, &keys[ki], hc) < 0)
                return -1;
        return parse_line_end(ps, "the value");
}

int gs_hostconfig_parse(struct gs_hostconfig *hc, const char *text, size_t len, const char *name,
                        struct gs_error *err)
{
        struct parser ps = {.name = name != NULL ? name : "<config>", .line = 1, .err = err};
        struct parse_state st = {.section = -1};

        if (len == 0)
                return 0; /* nothing to change (text may be NULL) */
        if (text == NULL)
                return gs_error_set(err, GS_EINVAL, "%s: no text", ps.name);
        gs_autofree struct gs_hostconfig *tmp = malloc(sizeof(*tmp));
        if (tmp == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        *tmp = *hc;

        const char *p = text, *end = text + len;
        if (len >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0)
                p += 3; /* a UTF-8 byte order mark */
        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t)(end - p));
                const char *eol = nl != NULL ? nl : end;
                if (eol > p && eol[-1] == '\r')
                        eol--;
                ps.p = p;
                ps.eol = eol;
                skip_ws(&ps);
                int r;
                if (ps.p == ps.eol)
                        r = 0;
                else if (*ps.p == '#')
                        r = parse_comment(&ps);
                else if (*ps.p == '[')
                        r = parse_section(&ps, &st);
                else
                        r = parse_key_value(&ps, &st, tmp);
                if (r < 0)
                        return -1;
                if (nl == NULL)
                        break;
                p = nl + 1;
                ps.line++;
        }
        *hc = *tmp;
        return 0;
}

int gs_hostconfig_load(struct gs_hostconfig *hc, const char *path, struct gs_error *err)
{
        const char *p = path != NULL ? path : GS_HOSTCONFIG_DEFAULT_PATH;

        gs_hostconfig_defaults(hc);
        /* No O_NOFOLLOW: the default path may be a link kept by configuration management.
         * O_NONBLOCK: opening a FIFO must not hang (it is refused below). */
        gs_autoclose int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                if (path == NULL && errno == ENOENT)
                        return 0;
                return gs_error_sys(err, "cannot open %s", p);
        }
        struct stat sb;
        if (fstat(fd, &sb) < 0)
                return gs_error_sys(err, "stat %s", p);
        if (!S_ISREG(sb.st_mode))
                return gs_error_set(err, GS_EFORMAT, "%s is not a regular file", p);
        if (sb.st_size > HOSTCONFIG_MAX_SIZE)
                return gs_error_set(err, GS_EFORMAT, "%s is larger than 1 MiB", p);

        /* Read to EOF, one byte past the limit: the file may have grown since fstat. */
        gs_autofree char *buf = malloc(HOSTCONFIG_MAX_SIZE + 1);
        if (buf == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        size_t n = 0;
        while (n < HOSTCONFIG_MAX_SIZE + 1) {
                ssize_t r = read(fd, buf + n, HOSTCONFIG_MAX_SIZE + 1 - n);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        return gs_error_sys(err, "read %s", p);
                if (r == 0)
                        break;
                n += (size_t)r;
        }
        if (n > HOSTCONFIG_MAX_SIZE)
                return gs_error_set(err, GS_EFORMAT, "%s is larger than 1 MiB", p);
        return gs_hostconfig_parse(hc, buf, n, p, err);
}
