/*
 * The MPS client side of a slice (mps_client.c): cap mode through the host's MPS server.
 */
#ifndef GS_VGPU_MPS_CLIENT_H
#define GS_VGPU_MPS_CLIENT_H

#include <stdbool.h>

#include "vgpu/vgpu.h"

/* In the constructor, before cuInit: true when the process becomes a client of the slice's MPS
 * server (its compute share is then the server's SM partition, and no launch is intercepted);
 * false, logged, when the server is not running or poisoned (<dir>/state). */
bool gs_mps_client_connect(void) GS_HIDDEN;
/* In cuInit, right before the real one: the slice's CUDA_MPS_ACTIVE_THREAD_PERCENTAGE and
 * CUDA_MPS_PIPE_DIRECTORY again, whatever the process set since (it cannot raise its share). */
void gs_mps_client_before_init(void) GS_HIDDEN;
/* In cuInit, after the first successful one (the device map made): the region's compute_via of
 * each limited device (time, mps, or time after falling back from an absent or poisoned server). */
void gs_mps_client_after_init(void) GS_HIDDEN;

#endif
