/* GetPreferredAllocation's choice (see prefer.h). */
#include "k8s/prefer.h"

#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "kubelet/topology.h"

static unsigned gpu_of(const struct gs_k8s_resource *r, size_t d)
{
        return r->devs[d].gpu;
}

/* Closeness of candidate c to the chosen set. */
static long score_with(const struct gs_k8s_plan *p, const struct gs_k8s_resource *r, const size_t *set, size_t n,
                       size_t c)
{
        long s = 0;
        for (size_t i = 0; i < n; i++)
                s += gs_k8s_affinity(&p->topo, gpu_of(r, set[i]), gpu_of(r, c));
        return s;
}

/* Grow set[0..*n) to `size` from the untaken available devices, closest first. */
static long grow(const struct gs_k8s_plan *p, const struct gs_k8s_resource *r, const size_t *avail, size_t navail,
                 bool *taken, size_t *set, size_t n, size_t size)
{
        long total = 0;
        for (size_t i = 0; i < n; i++)
                total += score_with(p, r, set, i, set[i]);
        while (n < size) {
                size_t best = (size_t)-1;
                long bs = -1;
                for (size_t i = 0; i < navail; i++) {
                        if (taken[avail[i]])
                                continue;
                        long s = score_with(p, r, set, n, avail[i]);
                        if (s > bs || (s == bs && avail[i] < best)) {
                                bs = s;
                                best = avail[i];
                        }
                }
                taken[best] = true;
                set[n++] = best;
                total += bs;
        }
        return total;
}

static int prefer_whole(const struct gs_k8s_plan *p, const struct gs_k8s_resource *r, const size_t *avail,
                        size_t navail, const size_t *must, size_t nmust, size_t size, size_t *out, struct gs_error *err)
{
        gs_autofree bool *taken = calloc(r->ndevs, sizeof(bool));
        gs_autofree bool *base = calloc(r->ndevs, sizeof(bool));
        gs_autofree size_t *set = calloc(size, sizeof(size_t));
        if (taken == NULL || base == NULL || set == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        for (size_t i = 0; i < nmust; i++)
                base[must[i]] = true;
        if (nmust > 0) {
                memcpy(taken, base, r->ndevs);
                memcpy(out, must, nmust * sizeof(size_t));
                grow(p, r, avail, navail, taken, out, nmust, size);
                return 0;
        }
        /* Seeds: the first available device of each GPU (a GPU's MIG devices are alike here). */
        long best = -1;
        bool seen_gpu[GS_MAX_GPUS] = {false};
        for (size_t i = 0; i < navail; i++) {
                unsigned g = gpu_of(r, avail[i]);
                if (g >= GS_MAX_GPUS || seen_gpu[g])
                        continue;
                seen_gpu[g] = true;
                memcpy(taken, base, r->ndevs);
                taken[avail[i]] = true;
                set[0] = avail[i];
                long s = grow(p, r, avail, navail, taken, set, 1, size);
                if (s > best) {
                        best = s;
                        memcpy(out, set, size * sizeof(size_t));
                }
        }
        return 0;
}

/* Which GPU gets the next shares: see prefer.h. */
static int pick_gpu(const struct gs_k8s_plan *p, const unsigned *nfree, const bool *used, size_t need)
{
        int best = -1;
        long bkey[4] = {0};
        for (unsigned g = 0; g < p->dev->ngpus && g < GS_MAX_GPUS; g++) {
                if (nfree[g] == 0)
                        continue;
                long aff = 0;
                for (unsigned u = 0; u < p->dev->ngpus; u++)
                        if (used[u] && u != g)
                                aff += gs_k8s_affinity(&p->topo, g, u);
                bool fits = nfree[g] >= need;
                long key[4] = {used[g], fits, aff, fits ? -(long)nfree[g] : (long)nfree[g]};
                int c = 0; /* lexicographic; on a tie the lower index (seen first) stays */
                for (int k = 0; k < 4 && c == 0; k++)
                        c = (key[k] > bkey[k]) - (key[k] < bkey[k]);
                if (best < 0 || c > 0) {
                        best = (int)g;
                        memcpy(bkey, key, sizeof(key));
                }
        }
        return best;
}

static int prefer_shares(const struct gs_k8s_plan *p, const struct gs_k8s_resource *r, const size_t *avail,
                         size_t navail, const size_t *must, size_t nmust, size_t size, size_t *out)
{
        unsigned nfree[GS_MAX_GPUS] = {0};
        bool used[GS_MAX_GPUS] = {false};
        gs_autofree bool *taken = calloc(r->ndevs, sizeof(bool));
        if (taken == NULL)
                return -1;
        size_t n = 0;
        for (size_t i = 0; i < nmust; i++) {
                taken[must[i]] = true;
                used[gpu_of(r, must[i])] = true;
                out[n++] = must[i];
        }
        for (size_t i = 0; i < navail; i++)
                if (!taken[avail[i]] && gpu_of(r, avail[i]) < GS_MAX_GPUS)
                        nfree[gpu_of(r, avail[i])]++;
        while (n < size) {
                int g = pick_gpu(p, nfree, used, size - n);
                if (g < 0)
                        return -1;
                used[g] = true;
                /* its free shares, lowest share number first */
                while (n < size && nfree[g] > 0) {
                        size_t best = (size_t)-1;
                        for (size_t i = 0; i < navail; i++)
                                if (!taken[avail[i]] && gpu_of(r, avail[i]) == (unsigned)g &&
                                    (best == (size_t)-1 || r->devs[avail[i]].share < r->devs[best].share))
                                        best = avail[i];
                        taken[best] = true;
                        nfree[g]--;
                        out[n++] = best;
                }
        }
        return 0;
}

int gs_k8s_prefer(const struct gs_k8s_plan *p, const struct gs_k8s_resource *r, const size_t *avail, size_t navail,
                  const size_t *must, size_t nmust, size_t size, size_t *out, struct gs_error *err)
{
        if (size == 0)
                return gs_error_set(err, GS_EINVAL, "allocation size 0");
        if (nmust > size)
                return gs_error_set(err, GS_EINVAL, "%zu devices must be included in an allocation of %zu", nmust, size);
        /* distinct available devices that are not must-include ones */
        gs_autofree bool *seen = calloc(r->ndevs, sizeof(bool));
        gs_autofree size_t *av = calloc(navail + 1, sizeof(size_t));
        if (seen == NULL || av == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        for (size_t i = 0; i < nmust; i++) {
                if (seen[must[i]])
                        return gs_error_set(err, GS_EINVAL, "device %s must be included twice", r->devs[must[i]].id);
                seen[must[i]] = true;
        }
        size_t nav = 0;
        for (size_t i = 0; i < navail; i++)
                if (!seen[avail[i]]) {
                        seen[avail[i]] = true;
                        av[nav++] = avail[i];
                }
        if (nav + nmust < size)
                return gs_error_set(err, GS_EINVAL, "%zu devices wanted, %zu available", size, nav + nmust);
        int rc = r->shared ? prefer_shares(p, r, av, nav, must, nmust, size, out)
                           : prefer_whole(p, r, av, nav, must, nmust, size, out, err);
        if (rc < 0 && err != NULL && err->code == 0)
                gs_error_set(err, GS_ENOMEM, "out of memory");
        return rc;
}
