/*
 * Where each GPU sits in the machine, for GetPreferredAllocation: its NUMA node and its path in
 * the PCI hierarchy, both from sysfs (<sysfs>/bus/pci/devices/<domain:bus:dev.fn> is a link into
 * <sysfs>/devices/pci<root>/<bridge>/.../<gpu>; numa_node beside it). GPUs behind the same switch
 * share a longer path prefix.
 */
#ifndef GS_KUBELET_TOPOLOGY_H
#define GS_KUBELET_TOPOLOGY_H

#include "kubelet/resources.h"

/* Fill plan->topo for plan->dev's GPUs from `sysfs` (what is missing stays unknown). */
void gs_k8s_topology_read(struct gs_k8s_plan *plan, const char *sysfs);

/* How close two GPUs are: 100 for the same GPU (MIG devices, shares), else 10 for the same NUMA
 * node plus one per PCI path component they share. Higher is closer. */
int gs_k8s_affinity(const struct gs_k8s_topology *t, unsigned a, unsigned b);

#endif
