/*
 * Device numbers between the program and the driver (devmap.h): one by value, inside structs and
 * arrays, and the devices of memory pools.
 */

#include <stdlib.h>
#include <string.h>

#include "vgpu/devmap.h"

#define S gs_vgpu_state

static bool hiding(void) { return S.cfg.devices[0] != '\0'; }

/* Where the driver hides (initialised through our cuInit), its ordinals are the slice's: a
 * number it does not show is outside the slice. Atomic loads only: no lock, no syscall. */
static bool foreign(CUdevice dev)
{
        return dev < 0 || dev >= GS_VGPU_MAX_DEVICES || S.vis_of_cuda[dev] < 0;
}

CUdevice gs_vgpu_translated(int ordinal)
{
        for (int i = 0, k = 0; i < S.nvisible; i++)
                if (S.cuda_of[i] >= 0 && k++ == ordinal)
                        return S.cuda_of[i];
        return -1;
}

/* Is there a map of an initialised driver (not NVML's, not before cuInit)? Then device numbers
 * are ours to check; before cuInit the driver answers itself. */
static bool mapped(void)
{
        if (!hiding())
                return false;
        gs_vgpu_map_devices();
        return __atomic_load_n(&S.nvisible, __ATOMIC_ACQUIRE) >= 0 && !S.nvml_mapped;
}

int gs_vgpu_dev_in(CUdevice dev, CUdevice *real)
{
        *real = dev;
        if (!mapped())
                return 0;
        if (!S.driver_hides) {
                CUdevice r = dev >= 0 ? gs_vgpu_translated(dev) : -1;
                if (r < 0)
                        return -1;
                *real = r;
                return 0;
        }
        return foreign(dev) ? -1 : 0;
}

CUdevice gs_vgpu_dev_out(CUdevice real)
{
        if (!mapped())
                return real;
        if (foreign(real))
                return -1;
        if (S.driver_hides)
                return real;
        int vis = S.vis_of_cuda[real], k = 0;
        if (S.cuda_of[vis] != real)
                return -1;
        for (int i = 0; i < vis; i++)
                k += S.cuda_of[i] >= 0;
        return k;
}

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
