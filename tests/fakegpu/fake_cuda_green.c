/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fake libcuda.so.1 (fake_cuda.h): green contexts (CUDA 12.4): a device's SM resource, SM
 * splits, resource descriptors, green contexts and the contexts they convert to.
 *
 * The answers marked "seen" are those of driver 580.159.04 on an H100 80GB HBM3 (132 SMs),
 * CUDA 13.0 (a probe of every call below; see README.md):
 *   - the device's SM resource: 132 SMs, minSmPartitionSize 8, smCoscheduledAlignment 8;
 *   - a split makes groups of minCount rounded up to the alignment, at least the minimum
 *     (1..8 -> 8, 9..16 -> 16, 26 -> 32, 66 -> 72, 124..128 -> 128), as many as fit in the
 *     aligned part of the input (132 -> 128 SMs) but at most 15 (132 split by 8: 15 groups
 *     and 12 remaining; by 16: 8 and 4; by 32: 4 and 4; by 72: 1 and 60); a minCount past the
 *     aligned part but within the input (129..132) gives the whole input as one group and a
 *     zeroed remaining; past the input (133) -> INVALID_RESOURCE_CONFIGURATION, nothing written;
 *   - groups and the remaining report minSmPartitionSize = smCoscheduledAlignment = 0; they
 *     cannot be split again (INVALID_RESOURCE_CONFIGURATION); a green context's resource can;
 *   - CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING: minimum 2, alignment 2 (1 -> 2, 3 -> 4,
 *     26 -> 26); other flag bits (2, 4, 8) change nothing and are not refused;
 *   - a resource whose smCount was edited after the driver wrote it -> INVALID_RESOURCE_
 *     CONFIGURATION (split and descriptor), a zeroed one -> INVALID_RESOURCE_TYPE.
 * The driver keeps its own data in CUdevResource's 92 internal bytes; the fake keeps there
 * what it needs (struct res_internal).
 */
#include "fake_cuda.h"

#include <string.h>

#define MAX_GREEN   1024
#define MAX_DESCS   4096
#define MAX_GROUPS  15              /* seen: 132 SMs split by 8 give 15 groups, not 16 */
#define RES_MAGIC   0x53524746u     /* "FGRS" */

struct CUdevResourceDesc_st {
    int live;
    int dev;
    unsigned sms;
};

static struct CUgreenCtx_st g_greens[MAX_GREEN];
static struct CUdevResourceDesc_st g_descs[MAX_DESCS];   /* the API has no way to free one */
static unsigned g_split_seq;                             /* g_mu */

/* What the fake keeps in CUdevResource._internal_padding. */
struct res_internal {
    uint32_t magic;
    int32_t dev;
    uint32_t sms;            /* smCount as written: an edited smCount is refused */
    uint32_t splittable;     /* from a device or a (green) context, not from a split */
    uint32_t split;          /* the split that made it (0: none) */
    uint32_t part;           /* its index in that split (the remaining: the group count) */
};

_Static_assert(sizeof(struct res_internal) <= GS_CU_DEV_RESOURCE_INTERNAL_BYTES, "fits the internal bytes");

static void res_write(CUdevResource *r, int dev, unsigned sms, int splittable, unsigned split, unsigned part)
{
    struct res_internal in = { RES_MAGIC, dev, sms, (uint32_t)splittable, split, part };

    memset(r, 0, sizeof(*r));
    r->type = CU_DEV_RESOURCE_TYPE_SM;
    memcpy(r->_internal_padding, &in, sizeof(in));
    r->sm.smCount = sms;
    if (splittable)   /* seen: split results report 0 for both */
        dev_sm_split_rules(dev, &r->sm.minSmPartitionSize, &r->sm.smCoscheduledAlignment);
}

/* A resource this library wrote: INVALID_RESOURCE_TYPE for another type, INVALID_RESOURCE_
 * CONFIGURATION for one it did not write or whose smCount was edited. */
static CUresult res_read(const CUdevResource *r, struct res_internal *in)
{
    if (r->type != CU_DEV_RESOURCE_TYPE_SM)
        return CUDA_ERROR_INVALID_RESOURCE_TYPE;
    memcpy(in, r->_internal_padding, sizeof(*in));
    if (in->magic != RES_MAGIC || !valid_dev(in->dev) || in->sms != r->sm.smCount || in->sms == 0)
        return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------------------------------- */
/* Resources                                                                                 */
/* ---------------------------------------------------------------------------------------- */

EXPORT CUresult cuDeviceGetDevResource(CUdevice device, CUdevResource *resource, CUdevResourceType type)
{
    ENTER();
    if (!valid_dev(device))
        return CUDA_ERROR_INVALID_DEVICE;          /* seen for 7 and -1 */
    if (resource == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (type != CU_DEV_RESOURCE_TYPE_SM)
        return CUDA_ERROR_INVALID_RESOURCE_TYPE;   /* seen for 0, 2, 1000 */
    res_write(resource, device, dev_sm_count(device), 1, 0, 0);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetDevResource(CUcontext hCtx, CUdevResource *resource, CUdevResourceType type)
{
    ENTER();
    /* seen: NULL answers INVALID_CONTEXT even with a context current; a pointer that is no
     * context, and the context of a destroyed green context, CONTEXT_IS_DESTROYED */
    if (hCtx == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!ctx_handle_ok(hCtx) || !ctx_active(hCtx))
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    if (resource == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (type != CU_DEV_RESOURCE_TYPE_SM)
        return CUDA_ERROR_INVALID_RESOURCE_TYPE;
    /* a green context's context has its partition; the others the whole device (seen) */
    res_write(resource, hCtx->dev, hCtx->kind == 3 ? hCtx->sms : dev_sm_count(hCtx->dev), 1, 0, 0);
    return CUDA_SUCCESS;
}

/* A green context handle: INVALID_CONTEXT for NULL or a pointer that is none, CONTEXT_IS_DESTROYED
 * after cuGreenCtxDestroy (seen). */
static CUresult green_check(CUgreenCtx h)
{
    uintptr_t p = (uintptr_t)h;

    if (h == NULL || p < (uintptr_t)&g_greens[0] || p >= (uintptr_t)&g_greens[MAX_GREEN] ||
        (p - (uintptr_t)&g_greens[0]) % sizeof(*h) != 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!__atomic_load_n(&h->live, __ATOMIC_ACQUIRE))
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGreenCtxGetDevResource(CUgreenCtx hCtx, CUdevResource *resource, CUdevResourceType type)
{
    CUresult rc;

    ENTER();
    rc = green_check(hCtx);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (resource == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (type != CU_DEV_RESOURCE_TYPE_SM)
        return CUDA_ERROR_INVALID_RESOURCE_TYPE;
    res_write(resource, hCtx->dev, hCtx->sms, 1, 0, 0);   /* seen: minimum and alignment 8 again */
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------------------------------- */
/* Splits and descriptors                                                                    */
/* ---------------------------------------------------------------------------------------- */

EXPORT CUresult cuDevSmResourceSplitByCount(CUdevResource *result, unsigned int *nbGroups, const CUdevResource *input,
                                            CUdevResource *remaining, unsigned int useFlags, unsigned int minCount)
{
    struct res_internal in;
    unsigned min_part, align, size, aligned, fit, n, split;
    CUresult rc;

    ENTER();
    if (nbGroups == NULL || input == NULL)
        return CUDA_ERROR_INVALID_VALUE;           /* seen */
    if (result != NULL && *nbGroups == 0)
        return CUDA_ERROR_INVALID_VALUE;           /* seen */
    rc = res_read(input, &in);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!in.splittable)
        return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;   /* seen: a group or a remaining */
    if (minCount > in.sms)
        return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;   /* seen: 133 of 132; nothing written */
    if (useFlags & CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING) {
        min_part = 2;                              /* seen on the H100 */
        align = 2;
    } else {
        dev_sm_split_rules(in.dev, &min_part, &align);
    }
    size = (unsigned)round_up(minCount, align);
    if (size < min_part)
        size = min_part;
    aligned = in.sms / align * align;
    if (size > aligned) {
        size = in.sms;                             /* seen: 129..132 of 132 give all 132 */
        fit = 1;
    } else {
        fit = aligned / size;
        if (fit > MAX_GROUPS)
            fit = MAX_GROUPS;
    }
    if (result == NULL) {                          /* the number of groups a split would make */
        *nbGroups = fit;
        return CUDA_SUCCESS;
    }
    n = *nbGroups < fit ? *nbGroups : fit;
    LOCK();
    split = ++g_split_seq;
    if (split == 0)
        split = ++g_split_seq;
    UNLOCK();
    for (unsigned i = 0; i < n; i++)
        res_write(&result[i], in.dev, size, 0, split, i);
    *nbGroups = n;
    if (remaining != NULL) {
        if (in.sms - n * size == 0)
            memset(remaining, 0, sizeof(*remaining));   /* seen: type INVALID, all zero */
        else
            res_write(remaining, in.dev, in.sms - n * size, 0, split, n);
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevResourceGenerateDesc(CUdevResourceDesc *phDesc, CUdevResource *resources, unsigned int nbResources)
{
    struct res_internal first = { 0 }, in;
    unsigned long long sms = 0;
    struct CUdevResourceDesc_st *d = NULL;
    CUresult rc;

    ENTER();
    /* nbResources 0 crashes the real driver (seen); the fake answers INVALID_VALUE. */
    if (phDesc == NULL || resources == NULL || nbResources == 0)
        return CUDA_ERROR_INVALID_VALUE;           /* seen for the NULL pointers */
    for (unsigned i = 0; i < nbResources; i++) {
        int dup = 0;

        rc = res_read(&resources[i], &in);
        if (rc != CUDA_SUCCESS)
            return rc;                             /* seen: zeroed -> TYPE, edited -> CONFIGURATION */
        if (i == 0)
            first = in;
        else if (in.dev != first.dev)
            return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;   /* cuda.h: not of one device */
        /* Seen accepted: the same group twice, groups of two splits (cuda.h says
         * INVALID_RESOURCE_CONFIGURATION for the latter; driver 580.159.04 accepts them). A
         * part given twice counts once. */
        for (unsigned j = 0; j < i && in.split != 0; j++) {
            struct res_internal o;

            memcpy(&o, resources[j]._internal_padding, sizeof(o));
            dup |= o.split == in.split && o.part == in.part;
        }
        if (!dup)
            sms += in.sms;
    }
    if (sms > dev_sm_count(first.dev))
        sms = dev_sm_count(first.dev);
    LOCK();
    for (unsigned i = 0; i < MAX_DESCS; i++) {
        if (!g_descs[i].live) {
            d = &g_descs[i];
            break;
        }
    }
    if (d != NULL) {
        d->live = 1;
        d->dev = first.dev;
        d->sms = (unsigned)sms;
    }
    UNLOCK();
    if (d == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *phDesc = d;
    return CUDA_SUCCESS;
}

static int desc_ok(const struct CUdevResourceDesc_st *d)
{
    uintptr_t p = (uintptr_t)d;

    return p >= (uintptr_t)&g_descs[0] && p < (uintptr_t)&g_descs[MAX_DESCS] &&
           (p - (uintptr_t)&g_descs[0]) % sizeof(*d) == 0 && d->live;
}

/* ---------------------------------------------------------------------------------------- */
/* Green contexts                                                                            */
/* ---------------------------------------------------------------------------------------- */

EXPORT CUresult cuGreenCtxCreate(CUgreenCtx *phCtx, CUdevResourceDesc desc, CUdevice dev, unsigned int flags)
{
    struct CUgreenCtx_st *g = NULL;
    struct CUctx_st *c;
    unsigned sms;
    CUresult rc;

    ENTER();
    if (phCtx == NULL || flags != CU_GREEN_CTX_DEFAULT_STREAM)
        return CUDA_ERROR_INVALID_VALUE;           /* seen: NULL, flags 0 and 3 */
    if (!valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;          /* seen */
    if (desc == NULL) {
        sms = dev_sm_count(dev);                   /* seen accepted; the whole device assumed */
    } else {
        if (!desc_ok(desc) || desc->dev != dev)
            return CUDA_ERROR_INVALID_VALUE;
        sms = desc->sms;
    }
    LOCK();
    for (unsigned i = 0; i < MAX_GREEN; i++) {
        if (!g_greens[i].live) {
            g = &g_greens[i];
            break;
        }
    }
    if (g == NULL) {
        UNLOCK();
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    rc = green_ctx_open(dev, sms, g, &c);
    if (rc == CUDA_SUCCESS) {
        g->dev = dev;
        g->sms = sms;
        g->ctx = c;
        __atomic_store_n(&g->live, 1, __ATOMIC_RELEASE);
        *phCtx = g;                                /* not made current (seen) */
    }
    UNLOCK();
    return rc;
}

EXPORT CUresult cuGreenCtxDestroy(CUgreenCtx hCtx)
{
    CUresult rc;

    ENTER();
    LOCK();
    rc = green_check(hCtx);
    if (rc == CUDA_SUCCESS) {
        __atomic_store_n(&hCtx->live, 0, __ATOMIC_RELEASE);
        green_ctx_close(hCtx->ctx);
    }
    UNLOCK();
    return rc;
}

EXPORT CUresult cuCtxFromGreenCtx(CUcontext *pContext, CUgreenCtx hCtx)
{
    CUresult rc;

    ENTER();
    if (pContext == NULL)
        return CUDA_ERROR_INVALID_VALUE;           /* seen */
    rc = green_check(hCtx);
    if (rc == CUDA_SUCCESS)
        *pContext = hCtx->ctx;                     /* the same handle each time, not the primary's (seen) */
    return rc;
}
