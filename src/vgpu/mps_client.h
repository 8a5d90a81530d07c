/*
 * The MPS client side of a slice (mps_client.c): cap mode through the host's MPS server.
 */
#ifndef GS_VGPU_MPS_CLIENT_H
#define GS_VGPU_MPS_CLIENT_H

#include <stdbool.h>

#include "vgpu/vgpu.h"

/* In the constructor, before cuInit: true when the process becomes a client of the slice's MPS
 * server (its compute share is then the server's SM partition, and no launch is intercepted). */
bool gs_mps_client_connect(void) GS_HIDDEN;

#endif
