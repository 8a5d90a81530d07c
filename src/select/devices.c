/*
 * Device selection (--device, NVIDIA_VISIBLE_DEVICES).
 *
 * A comma-separated list of tokens; empty items are ignored and duplicates collapse. Tokens are
 * taken as written: whitespace is part of a token (so " 0" is an unknown device). Each token is
 * one of (tried in this order):
 *
 *   all                    every GPU and every MIG device (case-insensitive); sel->all = true
 *   none                   nothing (case-insensitive); may not be combined with other devices
 *   MIG-<uuid>             a MIG device by UUID (case-insensitive exact match)
 *   MIG-GPU-<uuid>/<G>/<C> the pre-R470 MIG UUID form: the MIG device of GPU-<uuid> whose GPU
 *                          instance is G and compute instance is C (also matches where NVML
 *                          reports that form verbatim)
 *   <gpu>:gi<G>[:ci<C>]    a GPU instance (all its compute instances) or one compute instance
 *                          of GPU <gpu>, which is a decimal index or a GPU UUID; "gi"/"ci" are
 *                          case-insensitive
 *   GPU-<uuid>             a GPU by UUID (case-insensitive exact match)
 *   [dom:]bus:dev.fn       a GPU by PCI bus id, in hex (any case); dom has 1-8 digits and is 0
 *                          when omitted, bus and dev 1-2 digits, fn one digit; compared
 *                          numerically with NVML's bus id, so 0000:3b:00.0, 0:3b:00.0,
 *                          00000000:3B:00.0 and 3b:00.0 are the same GPU. A token is taken as a
 *                          bus id when it contains both ':' and '.'.
 *   <n>                    a GPU by NVML enumeration index (plain decimal, leading zeros allowed)
 *   <g>:<m>                MIG device m (its enumeration index on the GPU, not a GI/CI id) of
 *                          GPU index g
 *
 * Anything else is "<token>: unknown device". Three colon-separated decimals ("0:1:0") are refused
 * as ambiguous rather than guessed at (nvidia-container-cli reads them as a bus id or silently drops
 * the last number). A MIG index, GI or CI on a GPU without MIG enabled is an unknown device.
 *
 * Differences from nvidia-container-cli (deliberate): `none` is a keyword; the bus id domain may
 * be omitted and any PCI function matches; `<gpu>:gi<G>[:ci<C>]` exists; tokens after `all` are
 * still validated; a MIG selection marks only the MIG device (gs_selection_uses_gpu() tells whether
 * its parent is needed).
 */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "common/error.h"
#include "common/strutil.h"

/* No valid token is longer than this (UUIDs are < GS_STR_LONG); longer ones are unknown. */
#define TOKEN_MAX 255
/* How much of a token an error message quotes. */
#define TOKEN_SHOW 128

struct slice {
        const char *p;
        size_t n;
};

struct busid {
        unsigned long domain;
        unsigned bus, dev, fn;
};

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* Plain decimal (digits only, at least one, leading zeros allowed) that fits `max`. */
static bool parse_dec(struct slice s, unsigned max, unsigned *out)
{
        unsigned v = 0;

        if (s.n == 0)
                return false;
        for (size_t i = 0; i < s.n; i++) {
                if (!is_digit(s.p[i]))
                        return false;
                unsigned d = (unsigned)(s.p[i] - '0');
                if (d > max || v > (max - d) / 10)
                        return false; /* would exceed max (or overflow) */
                v = v * 10 + d;
        }
        *out = v;
        return true;
}

static bool all_digits(struct slice s)
{
        if (s.n == 0)
                return false;
        for (size_t i = 0; i < s.n; i++)
                if (!is_digit(s.p[i]))
                        return false;
        return true;
}

/* 1..maxdigits hex digits. */
static bool parse_hex(struct slice s, size_t maxdigits, unsigned long *out)
{
        unsigned long v = 0;

        if (s.n == 0 || s.n > maxdigits)
                return false;
        for (size_t i = 0; i < s.n; i++) {
                int d = gs_hex_digit(s.p[i]);
                if (d < 0)
                        return false;
                v = (v << 4) | (unsigned long)d;
        }
        *out = v;
        return true;
}

static bool has_prefix_ci(struct slice s, const char *prefix)
{
        size_t n = strlen(prefix);
        return s.n >= n && strncasecmp(s.p, prefix, n) == 0;
}

static bool equal_ci(struct slice s, const char *str)
{
        return strlen(str) == s.n && strncasecmp(s.p, str, s.n) == 0;
}

static struct slice slice_from(struct slice s, size_t off)
{
        return (struct slice){ s.p + off, s.n - off };
}

/* Index of the first `c` in s, or s.n. */
static size_t find_char(struct slice s, char c)
{
        const char *q = s.n ? memchr(s.p, c, s.n) : NULL;
        return q ? (size_t)(q - s.p) : s.n;
}

static size_t count_char(struct slice s, char c)
{
        size_t k = 0;
        for (size_t i = 0; i < s.n; i++)
                k += s.p[i] == c;
        return k;
}

/* [domain:]bus:device.function, all hex. */
static bool parse_busid(struct slice s, struct busid *b)
{
        unsigned long v;
        size_t colons = count_char(s, ':');
        struct slice dom = { "0", 1 }, rest = s;

        if (colons == 2) {
                size_t c = find_char(s, ':');
                dom = (struct slice){ s.p, c };
                rest = slice_from(s, c + 1);
        } else if (colons != 1) {
                return false;
        }
        size_t c = find_char(rest, ':');
        struct slice bus = { rest.p, c };
        struct slice devfn = slice_from(rest, c + 1);
        size_t d = find_char(devfn, '.');
        if (d == devfn.n)
                return false;
        struct slice dev = { devfn.p, d };
        struct slice fn = slice_from(devfn, d + 1);

        if (!parse_hex(dom, 8, &b->domain))
                return false;
        if (!parse_hex(bus, 2, &v))
                return false;
        b->bus = (unsigned)v;
        if (!parse_hex(dev, 2, &v) || v > 0x1f)
                return false;
        b->dev = (unsigned)v;
        if (!parse_hex(fn, 1, &v) || v > 7)
                return false;
        b->fn = (unsigned)v;
        return true;
}

static unsigned gpu_count(const struct gs_device_info *info)
{
        if (info == NULL)
                return 0;
        return info->ngpus < GS_MAX_GPUS ? info->ngpus : GS_MAX_GPUS;
}

/* MIG devices that exist on a GPU: none unless MIG mode is on. */
static unsigned mig_count(const struct gs_gpu *g)
{
        if (!g->mig_enabled)
                return 0;
        return g->nmigs < GS_MAX_MIGS ? g->nmigs : GS_MAX_MIGS;
}

static int token_error(struct gs_error *err, struct slice tok, const char *what)
{
        int show = tok.n > TOKEN_SHOW ? TOKEN_SHOW : (int)tok.n;
        return gs_error_set(err, GS_EINVAL, "%.*s%s: %s", show, tok.p,
                            tok.n > TOKEN_SHOW ? "..." : "", what);
}

static int unknown(struct gs_error *err, struct slice tok)
{
        return token_error(err, tok, "unknown device");
}

/* GPU index of a GPU UUID, or -1. */
static int find_gpu_uuid(const struct gs_device_info *info, struct slice uuid)
{
        unsigned n = gpu_count(info);
        for (unsigned i = 0; i < n; i++) {
                const struct gs_gpu *g = &info->gpus[i];
                if (strnlen(g->uuid, sizeof(g->uuid)) == sizeof(g->uuid))
                        continue; /* not terminated: never matches */
                if (g->uuid[0] != '\0' && equal_ci(uuid, g->uuid))
                        return (int)i;
        }
        return -1;
}

/* Select the MIG devices of GPU `gpu` with GPU instance `gi` and (if has_ci) compute instance
 * `ci`. Returns how many matched. */
static unsigned select_gi_ci(const struct gs_device_info *info, unsigned gpu, unsigned gi,
                             bool has_ci, unsigned ci, struct gs_selection *out)
{
        const struct gs_gpu *g = &info->gpus[gpu];
        unsigned m = mig_count(g), hits = 0;
        for (unsigned j = 0; j < m; j++) {
                if (g->migs[j].gi != gi)
                        continue;
                if (has_ci && g->migs[j].ci != ci)
                        continue;
                out->mig[gpu][j] = true;
                hits++;
        }
        return hits;
}

static int select_all(const struct gs_device_info *info, struct gs_selection *out)
{
        unsigned n = gpu_count(info);
        out->all = true;
        for (unsigned i = 0; i < n; i++) {
                out->gpu[i] = true;
                unsigned m = mig_count(&info->gpus[i]);
                for (unsigned j = 0; j < m; j++)
                        out->mig[i][j] = true;
        }
        return 0;
}

/* MIG-<uuid> or MIG-GPU-<gpu-uuid>/<gi>/<ci>. */
static int select_mig_uuid(const struct gs_device_info *info, struct slice tok,
                           struct gs_selection *out, struct gs_error *err)
{
        unsigned n = gpu_count(info), hits = 0;

        for (unsigned i = 0; i < n; i++) {
                const struct gs_gpu *g = &info->gpus[i];
                unsigned m = mig_count(g);
                for (unsigned j = 0; j < m; j++) {
                        const char *u = g->migs[j].uuid;
                        if (strnlen(u, GS_STR_LONG) == GS_STR_LONG)
                                continue;
                        if (equal_ci(tok, u)) {
                                out->mig[i][j] = true;
                                hits++;
                        }
                }
        }
        if (hits > 0)
                return 0;

        /* Legacy form: MIG-GPU-<uuid>/<gi>/<ci>. */
        struct slice rest = slice_from(tok, strlen("MIG-"));
        if (!has_prefix_ci(rest, "GPU-"))
                return unknown(err, tok);
        size_t s1 = find_char(rest, '/');
        if (s1 == rest.n)
                return unknown(err, tok);
        struct slice uuid = { rest.p, s1 };
        struct slice ids = slice_from(rest, s1 + 1);
        size_t s2 = find_char(ids, '/');
        if (s2 == ids.n)
                return unknown(err, tok);
        unsigned gi, ci;
        if (!parse_dec((struct slice){ ids.p, s2 }, 0xffffffffu, &gi) ||
            !parse_dec(slice_from(ids, s2 + 1), 0xffffffffu, &ci))
                return unknown(err, tok);
        int gpu = find_gpu_uuid(info, uuid);
        if (gpu < 0 || select_gi_ci(info, (unsigned)gpu, gi, true, ci, out) == 0)
                return unknown(err, tok);
        return 0;
}

/* <gpu>:gi<G>[:ci<C>]; `colon` is the position of the first ':' (rest starts with "gi"). */
static int select_instance(const struct gs_device_info *info, struct slice tok, size_t colon,
                           struct gs_selection *out, struct gs_error *err)
{
        struct slice gpu_part = { tok.p, colon };
        struct slice rest = slice_from(tok, colon + 1 + 2); /* past ":gi" */
        size_t c = find_char(rest, ':');
        struct slice gi_part = { rest.p, c };
        bool has_ci = false;
        unsigned gi, ci = 0, gpu;

        if (!parse_dec(gi_part, 0xffffffffu, &gi))
                return unknown(err, tok);
        if (c < rest.n) {
                struct slice ci_part = slice_from(rest, c + 1);
                if (!has_prefix_ci(ci_part, "ci") ||
                    !parse_dec(slice_from(ci_part, 2), 0xffffffffu, &ci))
                        return unknown(err, tok);
                has_ci = true;
        }

        if (all_digits(gpu_part)) {
                if (!parse_dec(gpu_part, GS_MAX_GPUS, &gpu) || gpu >= gpu_count(info))
                        return unknown(err, tok);
        } else if (has_prefix_ci(gpu_part, "GPU-")) {
                int i = find_gpu_uuid(info, gpu_part);
                if (i < 0)
                        return unknown(err, tok);
                gpu = (unsigned)i;
        } else {
                return unknown(err, tok);
        }
        if (select_gi_ci(info, gpu, gi, has_ci, ci, out) == 0)
                return unknown(err, tok);
        return 0;
}

static int select_busid(const struct gs_device_info *info, struct slice tok,
                        struct gs_selection *out, struct gs_error *err)
{
        struct busid want, have;
        unsigned n = gpu_count(info), hits = 0;

        if (!parse_busid(tok, &want))
                return unknown(err, tok);
        for (unsigned i = 0; i < n; i++) {
                const char *b = info->gpus[i].bus_id;
                struct slice bs = { b, strnlen(b, sizeof(info->gpus[i].bus_id)) };
                if (!parse_busid(bs, &have))
                        continue;
                if (have.domain == want.domain && have.bus == want.bus && have.dev == want.dev &&
                    have.fn == want.fn) {
                        out->gpu[i] = true;
                        hits++;
                }
        }
        return hits > 0 ? 0 : unknown(err, tok);
}

static int select_token(const struct gs_device_info *info, struct slice tok,
                        struct gs_selection *out, struct gs_error *err)
{
        unsigned n = gpu_count(info);

        if (tok.n > TOKEN_MAX)
                return unknown(err, tok);

        if (equal_ci(tok, "all"))
                return select_all(info, out);

        if (has_prefix_ci(tok, "MIG-"))
                return select_mig_uuid(info, tok, out, err);

        size_t colon = find_char(tok, ':');
        if (colon < tok.n && has_prefix_ci(slice_from(tok, colon + 1), "gi"))
                return select_instance(info, tok, colon, out, err);

        if (has_prefix_ci(tok, "GPU-")) {
                int i = find_gpu_uuid(info, tok);
                if (i < 0)
                        return unknown(err, tok);
                out->gpu[i] = true;
                return 0;
        }

        if (colon < tok.n && find_char(tok, '.') < tok.n)
                return select_busid(info, tok, out, err);

        unsigned g, m;
        if (colon == tok.n) {
                if (!parse_dec(tok, GS_MAX_GPUS, &g) || g >= n)
                        return unknown(err, tok);
                out->gpu[g] = true;
                return 0;
        }

        struct slice first = { tok.p, colon };
        struct slice rest = slice_from(tok, colon + 1);
        size_t c2 = find_char(rest, ':');
        if (c2 < rest.n) {
                struct slice second = { rest.p, c2 };
                struct slice third = slice_from(rest, c2 + 1);
                if (all_digits(first) && all_digits(second) && all_digits(third))
                        return token_error(err, tok,
                                           "ambiguous device (for a GPU instance / compute "
                                           "instance use <gpu>:gi<G>:ci<C>)");
                return unknown(err, tok);
        }
        if (!parse_dec(first, GS_MAX_GPUS, &g) || g >= n || !parse_dec(rest, GS_MAX_MIGS, &m))
                return unknown(err, tok);
        const struct gs_gpu *gpu = &info->gpus[g];
        unsigned count = mig_count(gpu);
        for (unsigned j = 0; j < count; j++) {
                if (gpu->migs[j].index == m) {
                        out->mig[g][j] = true;
                        return 0;
                }
        }
        return unknown(err, tok);
}

int gs_select_devices(const char *list, const struct gs_device_info *info, struct gs_selection *out,
                      struct gs_error *err)
{
        bool saw_none = false, saw_other = false;

        if (out == NULL)
                return gs_error_set(err, GS_EINVAL, "no selection to fill");
        memset(out, 0, sizeof(*out));
        if (list == NULL)
                return 0;

        const char *p = list;
        for (;;) {
                const char *end = strchr(p, ',');
                size_t len = end ? (size_t)(end - p) : strlen(p);
                struct slice tok = { p, len };

                if (len > 0) {
                        if (equal_ci(tok, "none")) {
                                saw_none = true;
                        } else {
                                saw_other = true;
                                if (select_token(info, tok, out, err) < 0) {
                                        memset(out, 0, sizeof(*out));
                                        return -1;
                                }
                        }
                }
                if (end == NULL)
                        break;
                p = end + 1;
        }

        if (saw_none && saw_other) {
                memset(out, 0, sizeof(*out));
                return gs_error_set(err, GS_EINVAL, "none cannot be combined with other devices");
        }

        for (unsigned i = 0; i < GS_MAX_GPUS; i++) {
                out->ngpus += out->gpu[i];
                for (unsigned j = 0; j < GS_MAX_MIGS; j++)
                        out->nmigs += out->mig[i][j];
        }
        return 0;
}

bool gs_selection_uses_gpu(const struct gs_selection *sel, unsigned i)
{
        if (sel == NULL || i >= GS_MAX_GPUS)
                return false;
        if (sel->gpu[i])
                return true;
        for (unsigned j = 0; j < GS_MAX_MIGS; j++)
                if (sel->mig[i][j])
                        return true;
        return false;
}
