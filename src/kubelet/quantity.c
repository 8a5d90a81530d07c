/* Kubernetes resource quantities (see quantity.h). */
#include "kubelet/quantity.h"

#include <stdio.h>
#include <string.h>

#include "common/error.h"

#define LIMIT (UINT64_C(1) << 63)

static int bad(const char *s, struct gs_error *err)
{
        return gs_error_set(err, GS_EINVAL, "invalid quantity '%.64s'", s);
}

/* mantissa digits (whole . frac) times 2^bin * 10^dec, rounded up. */
static int scale(const char *s, uint64_t whole, uint64_t frac, unsigned nfrac, unsigned bin, int dec, uint64_t *out,
                 struct gs_error *err)
{
        /* value = (whole * 10^nfrac + frac) * 2^bin * 10^dec / 10^nfrac */
        int e10 = dec - (int)nfrac;
        __uint128_t v = (__uint128_t)whole;
        for (unsigned i = 0; i < nfrac; i++)
                v *= 10;
        v += frac;
        v <<= bin;
        for (; e10 > 0; e10--) {
                v *= 10;
                if (v >= LIMIT)
                        return bad(s, err);
        }
        __uint128_t div = 1;
        for (; e10 < 0; e10++) {
                div *= 10;
                if (div > ((__uint128_t)1 << 100))
                        break; /* far below one unit: rounds up to 1 (or 0) */
        }
        __uint128_t q = v / div + (v % div != 0);
        if (q >= LIMIT)
                return bad(s, err);
        *out = (uint64_t)q;
        return 0;
}

int gs_k8s_quantity_parse(const char *s, uint64_t *out, struct gs_error *err)
{
        const char *p = s;
        uint64_t whole = 0, frac = 0;
        unsigned nwhole = 0, nfrac = 0;
        if (s == NULL || *s == '\0')
                return bad(s ? s : "", err);
        if (*p == '+')
                p++;
        for (; *p >= '0' && *p <= '9'; p++, nwhole++) {
                if (whole > (LIMIT - 9) / 10)
                        return bad(s, err);
                whole = whole * 10 + (uint64_t)(*p - '0');
        }
        if (*p == '.') {
                for (p++; *p >= '0' && *p <= '9'; p++) {
                        if (nfrac < 18) { /* further digits only round */
                                frac = frac * 10 + (uint64_t)(*p - '0');
                                nfrac++;
                        } else if (*p != '0') {
                                frac++; /* rounding up later covers it (at most one unit) */
                        }
                }
        }
        if (nwhole == 0 && nfrac == 0)
                return bad(s, err);
        unsigned bin = 0;
        int dec = 0;
        static const struct {
                const char *sfx;
                unsigned bin;
                int dec;
        } sfx[] = {{"Ki", 10, 0}, {"Mi", 20, 0}, {"Gi", 30, 0}, {"Ti", 40, 0}, {"Pi", 50, 0}, {"Ei", 60, 0},
                   {"k", 0, 3},   {"M", 0, 6},   {"G", 0, 9},   {"T", 0, 12},  {"P", 0, 15},  {"E", 0, 18},
                   {"m", 0, -3},  {"u", 0, -6},  {"n", 0, -9},  {"", 0, 0}};
        if ((*p == 'e' || *p == 'E') && p[1] != '\0' && p[1] != 'i') {
                const char *q = p + 1;
                int sign = 1, n = 0;
                if (*q == '+' || *q == '-')
                        sign = *q++ == '-' ? -1 : 1;
                if (*q < '0' || *q > '9')
                        return bad(s, err);
                for (; *q >= '0' && *q <= '9'; q++)
                        if ((n = n * 10 + (*q - '0')) > 40)
                                return bad(s, err);
                if (*q != '\0')
                        return bad(s, err);
                return scale(s, whole, frac, nfrac, 0, sign * n, out, err);
        }
        for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
                if (strcmp(p, sfx[i].sfx) == 0) {
                        bin = sfx[i].bin;
                        dec = sfx[i].dec;
                        return scale(s, whole, frac, nfrac, bin, dec, out, err);
                }
        }
        return bad(s, err);
}

void gs_k8s_quantity_format(uint64_t v, char *buf, size_t len)
{
        static const char *const sfx[] = {"Ei", "Pi", "Ti", "Gi", "Mi", "Ki"};
        for (int i = 0; i < 6; i++) {
                unsigned shift = (unsigned)(60 - 10 * i);
                if (v != 0 && (v & ((UINT64_C(1) << shift) - 1)) == 0) {
                        snprintf(buf, len, "%llu%s", (unsigned long long)(v >> shift), sfx[i]);
                        return;
                }
        }
        snprintf(buf, len, "%llu", (unsigned long long)v);
}
