/* SPDX-License-Identifier: Apache-2.0 */
/* Fake libcuda.so.1 (fake_cuda.h): the process-wide state, growable arrays and the memory
 * accounting every allocation path goes through. */
#include "fake_cuda.h"

#include <stdlib.h>

pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
int g_state;                          /* atomic: ST_* */
struct fg_config g_cfg;
struct fdev g_dev[MAX_DEV];
int g_ndev;
struct fg_state g_shared = { .fd = -1, .slot = -1 };

int vec_grow(void **v, size_t *cap, size_t need, size_t elem)
{
    size_t ncap = *cap ? *cap : 16;
    void *nv;

    while (ncap < need)
        ncap *= 2;
    nv = realloc(*v, ncap * elem);
    if (nv == NULL)
        return -1;
    *v = nv;
    *cap = ncap;
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Memory accounting                                                                         */
/* ---------------------------------------------------------------------------------------- */

/* Free bytes of device d as this process sees them (g_mu held; state lock held if open). */
unsigned long long dev_free(int d)
{
    struct fdev *fd = &g_dev[d];
    unsigned long long others = fg_state_unit_used(&g_shared, fd->unit, 1);
    unsigned long long taken = others + fd->used;

    return taken >= fd->capacity ? 0 : fd->capacity - taken;
}

/* Charge bytes (already rounded) to device d. g_mu held. */
CUresult charge(int d, unsigned long long bytes)
{
    int locked = fg_state_lock(&g_shared) == 0;
    CUresult rc = CUDA_SUCCESS;

    if (locked)
        fg_state_reap(&g_shared);
    if (bytes > dev_free(d)) {
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        g_dev[d].used += bytes;
        fg_state_set_own(&g_shared, g_dev[d].unit, g_dev[d].used);
    }
    if (locked)
        fg_state_unlock(&g_shared);
    return rc;
}

void uncharge(int d, unsigned long long bytes)
{
    g_dev[d].used = bytes > g_dev[d].used ? 0 : g_dev[d].used - bytes;
    fg_state_set_own(&g_shared, g_dev[d].unit, g_dev[d].used);
}
