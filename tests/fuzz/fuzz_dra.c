/* libFuzzer harness: what the DRA plugin reads from the API server, which whoever writes
 * ResourceClaims controls: a claim document (dra/claim.c, with the quantities of its consumed
 * capacity, quantity.c), and a quantity on its own (the input's first line). Nothing may crash,
 * leak or read out of bounds; an accepted claim must hold what the parser promises. The seed corpus
 * (corpus/dra) holds allocated claims: a slice with opaque config, a whole GPU, a MIG device, a
 * class's bound (maxPriority, maxComputeMode) and a claim within it. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dra/claim.h"
#include "kubelet/quantity.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static struct gs_dra_claim c;
        struct gs_error err = {0};
        if (gs_dra_claim_parse((const char *)data, size, "gpu.gpuslice.io", &c, &err) == 0) {
                if (c.n == 0 || c.n > GS_DRA_MAX_RESULTS || c.uid[0] == '\0' || c.ns[0] == '\0' || c.name[0] == '\0')
                        abort();
                if (c.beyond_class)
                        abort();
                for (size_t i = 0; i < c.n; i++) {
                        const char *p = c.r[i].priority, *m = c.r[i].compute_mode;
                        if (c.r[i].compute > 100 || c.r[i].device[0] == '\0' || c.r[i].pool[0] == '\0' ||
                            strlen(c.r[i].device) > 63)
                                abort();
                        /* issue 31: what is accepted is a word we know, and "high" / "off" / "share"
                         * only where a class's config said so (the document must name them in a
                         * FromClass entry: without one the bound is normal / cap) */
                        if ((p[0] && strcmp(p, "high") && strcmp(p, "normal") && strcmp(p, "low")) ||
                            (m[0] && strcmp(m, "cap") && strcmp(m, "share") && strcmp(m, "off")))
                                abort();
                        if ((strcmp(p, "high") == 0 || strcmp(m, "off") == 0 || strcmp(m, "share") == 0) &&
                            memmem(data, size, "FromClass", 9) == NULL)
                                abort();
                }
        }
        size_t n = 0;
        while (n < size && n < 64 && data[n] != '\n')
                n++;
        char q[65];
        memcpy(q, data, n);
        q[n] = '\0';
        uint64_t v;
        char back[64];
        if (gs_k8s_quantity_parse(q, &v, &err) == 0) {
                if (v >= (UINT64_C(1) << 63))
                        abort();
                gs_k8s_quantity_format(v, back, sizeof(back)); /* what we write must read back the same */
                uint64_t w;
                if (gs_k8s_quantity_parse(back, &w, &err) < 0 || w != v)
                        abort();
        }
        return 0;
}
