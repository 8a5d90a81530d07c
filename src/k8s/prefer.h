/*
 * GetPreferredAllocation: which of the available devices a container should get.
 *
 *   whole GPUs / MIG devices  the set (with the must-include devices) whose members are closest
 *                             to each other (topology.c: MIG devices of one GPU, then the same NUMA
 *                             node, then the longest shared PCI path), grown greedily from each
 *                             possible first device; ties go to NVML order
 *   shares                    packed on as few GPUs as possible: first the GPUs the must-include
 *                             shares are on, then the GPU whose free shares fit the rest most
 *                             tightly (leaving whole GPUs free), spilling over to the GPU closest
 *                             to those already chosen
 */
#ifndef GS_K8S_PREFER_H
#define GS_K8S_PREFER_H

#include <stddef.h>

#include "kubelet/resources.h"

/* avail/must: indexes into r->devs (must ⊆ avail is not required: a must device is taken as
 * is). out: room for `size` indexes. -1 with err when size is 0, smaller than must, or more than
 * there are devices. */
int gs_k8s_prefer(const struct gs_k8s_plan *p, const struct gs_k8s_resource *r, const size_t *avail, size_t navail,
                  const size_t *must, size_t nmust, size_t size, size_t *out, struct gs_error *err);

#endif
