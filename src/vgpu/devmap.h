/*
 * Device numbers between the program and the driver (hooks_cuda.c, devmap.c). Under a slice a
 * device number the program passes or is given is the slice's ordinal: where the driver was
 * initialised through our cuInit it shows only the slice's GPUs and its ordinals are those; where
 * it shows more (initialised past us), every number is translated both ways. A number outside
 * the slice is refused (CUDA_ERROR_INVALID_DEVICE) and the driver's number of another GPU is
 * never given to the program. Lock-free: atomic loads of the map only.
 */
#ifndef GS_VGPU_DEVMAP_H
#define GS_VGPU_DEVMAP_H

#include <stddef.h>

#include "abi/cuda.h"
#include "vgpu/vgpu.h"

/* Where the driver shows more: its ordinal of the slice's k-th device it has, or -1. */
CUdevice gs_vgpu_translated(int ordinal) GS_HIDDEN;
/* The driver's device for the program's number: 0 (*real set), -1 outside the slice. */
int gs_vgpu_dev_in(CUdevice dev, CUdevice *real) GS_HIDDEN;
/* The program's number for the driver's device; -1 for a GPU outside the slice. */
CUdevice gs_vgpu_dev_out(CUdevice real) GS_HIDDEN;
/* The same for a device number that may be the host (CU_DEVICE_CPU) or none (CU_DEVICE_INVALID):
 * those pass unchanged. */
int gs_vgpu_devx_in(CUdevice dev, CUdevice *real) GS_HIDDEN;
CUdevice gs_vgpu_devx_out(CUdevice real) GS_HIDDEN;
/* A memory location (only CU_MEM_LOCATION_TYPE_DEVICE names a device), in place: 0, or -1 for
 * a device outside the slice (_out: the id becomes CU_DEVICE_INVALID). */
int gs_vgpu_loc_in(CUmemLocation *loc) GS_HIDDEN;
int gs_vgpu_loc_out(CUmemLocation *loc) GS_HIDDEN;
/* Copies of arrays the program passes, translated: into `local` (room for `room`) or, when
 * larger, a malloc'ed array the caller frees (*out != local). -1: a device outside the slice, or
 * no memory (*out NULL). count 0 or a NULL array: *out is the program's own array. */
int gs_vgpu_access_in(const CUmemAccessDesc *desc, size_t count, CUmemAccessDesc *local, size_t room,
                      CUmemAccessDesc **out) GS_HIDDEN;
int gs_vgpu_locs_in(const CUmemLocation *locs, size_t count, CUmemLocation *local, size_t room,
                    CUmemLocation **out) GS_HIDDEN;
/* Memory pools and their devices (the driver's number), for charging a pool's allocations to
 * the pool's GPU: recorded where a pool is made or handed out. */
void gs_vgpu_pool_seen(CUmemoryPool pool, CUdevice real) GS_HIDDEN;
/* The visible index of the pool's device; the current context's where the pool is unknown. */
int gs_vgpu_pool_device(CUmemoryPool pool) GS_HIDDEN;

#endif
