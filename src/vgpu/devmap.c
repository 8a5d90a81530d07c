/*
 * Device numbers inside structs and arrays, and the devices of memory pools (devmap.h). The
 * scalar translation (gs_vgpu_dev_in/out) lives with the visibility hooks in hooks_cuda.c.
 */

#include <stdlib.h>
#include <string.h>

#include "vgpu/devmap.h"

#define S gs_vgpu_state

int gs_vgpu_devx_in(CUdevice dev, CUdevice *real)
{
        if (dev == CU_DEVICE_CPU || dev == CU_DEVICE_INVALID) {
                *real = dev;
                return 0;
        }
        return gs_vgpu_dev_in(dev, real);
}

CUdevice gs_vgpu_devx_out(CUdevice real)
{
        if (real == CU_DEVICE_CPU || real == CU_DEVICE_INVALID)
                return real;
        CUdevice d = gs_vgpu_dev_out(real);
        return d < 0 ? CU_DEVICE_INVALID : d;
}

int gs_vgpu_loc_in(CUmemLocation *loc)
{
        return loc->type == CU_MEM_LOCATION_TYPE_DEVICE ? gs_vgpu_dev_in(loc->id, &loc->id) : 0;
}

int gs_vgpu_loc_out(CUmemLocation *loc)
{
        if (loc->type != CU_MEM_LOCATION_TYPE_DEVICE)
                return 0;
        CUdevice d = gs_vgpu_dev_out(loc->id);
        loc->id = d < 0 ? CU_DEVICE_INVALID : d;
        return d < 0 ? -1 : 0;
}

/* Room for count elements of size: local, or malloc'ed; NULL when neither. */
static void *room_for(size_t count, size_t size, void *local, size_t room)
{
        if (count <= room)
                return local;
        return count > SIZE_MAX / size ? NULL : malloc(count * size);
}

int gs_vgpu_access_in(const CUmemAccessDesc *desc, size_t count, CUmemAccessDesc *local, size_t room,
                      CUmemAccessDesc **out)
{
        *out = (CUmemAccessDesc *)desc;
        if (desc == NULL || count == 0)
                return 0;
        CUmemAccessDesc *copy = room_for(count, sizeof(*desc), local, room);
        *out = copy;
        if (copy == NULL)
                return -1;
        memcpy(copy, desc, count * sizeof(*desc));
        for (size_t i = 0; i < count; i++)
                if (gs_vgpu_loc_in(&copy[i].location) < 0) {
                        if (copy != local)
                                free(copy);
                        *out = local;
                        return -1;
                }
        return 0;
}

int gs_vgpu_locs_in(const CUmemLocation *locs, size_t count, CUmemLocation *local, size_t room, CUmemLocation **out)
{
        *out = (CUmemLocation *)locs;
        if (locs == NULL || count == 0)
                return 0;
        CUmemLocation *copy = room_for(count, sizeof(*locs), local, room);
        *out = copy;
        if (copy == NULL)
                return -1;
        memcpy(copy, locs, count * sizeof(*locs));
        for (size_t i = 0; i < count; i++)
                if (gs_vgpu_loc_in(&copy[i]) < 0) {
                        if (copy != local)
                                free(copy);
                        *out = local;
                        return -1;
                }
        return 0;
}

/* Pools by handle: a fixed table, an entry claimed with a compare-and-swap of its handle and never
 * removed (a destroyed pool's handle names no pool; one the driver hands out again is recorded
 * again). real1 is the driver's device + 1, stored after the claim: 0 while not yet known. */
#define GS_POOLS 256
static struct {
        CUmemoryPool pool;
        int real1;
} pools[GS_POOLS];

void gs_vgpu_pool_seen(CUmemoryPool pool, CUdevice real)
{
        if (pool == NULL || real < 0)
                return;
        for (int i = 0; i < GS_POOLS; i++) {
                CUmemoryPool p = __atomic_load_n(&pools[i].pool, __ATOMIC_ACQUIRE);
                if (p == NULL && __atomic_compare_exchange_n(&pools[i].pool, &p, pool, false, __ATOMIC_ACQ_REL,
                                                             __ATOMIC_ACQUIRE))
                        p = pool;
                if (p == pool) {
                        __atomic_store_n(&pools[i].real1, real + 1, __ATOMIC_RELEASE);
                        return;
                }
        }
}

int gs_vgpu_pool_device(CUmemoryPool pool)
{
        for (int i = 0; i < GS_POOLS && pool != NULL; i++) {
                CUmemoryPool p = __atomic_load_n(&pools[i].pool, __ATOMIC_ACQUIRE);
                if (p == NULL)
                        break;
                int real1 = p == pool ? __atomic_load_n(&pools[i].real1, __ATOMIC_ACQUIRE) : 0;
                if (real1 > 0)
                        return gs_vgpu_visible_of(real1 - 1);
        }
        return gs_vgpu_current_device();
}
