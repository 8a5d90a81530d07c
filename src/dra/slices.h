/*
 * The DRA plugin's devices and the ResourceSlice that publishes them (resource.k8s.io/v1).
 *
 * One device per GPU not in MIG mode ("gpu-<index>") and per MIG device ("gpu-<index>-mig-<n>",
 * n its enumeration index under the GPU), as the device plugin offers them. Attributes (in the
 * driver's domain, unqualified): type (gpu|mig), uuid, parentUUID (MIG), productName, brand,
 * architecture, cudaComputeCapability, driverVersion, cudaDriverVersion (versions as semver),
 * index, migIndex, pciBusID, numaNode (when sysfs says). Capacity: memory (bytes: a MIG
 * device's own, its instance's) and compute (percent of the device, 100) on every device. Every
 * device allows multiple allocations (consumable capacity: each claim consumes memory and compute,
 * a request policy of 1 Mi / 1 % steps, and a claim that asks for no capacity consumes the
 * default, all of it: the device whole); a MIG device is shared as a GPU is (issue 33), its
 * shares' limits its own.
 *
 * The slice: name <node>-<driver>, pool <node> (generation bumped on every change), one slice in
 * the pool, nodeName <node>. An unhealthy device (kubelet/health.h) carries a taint (KEP-5055,
 * resource.k8s.io/v1 Device.taints): key GS_DRA_TAINT_KEY, value "xid-<n>", "gpu-lost" or
 * "nvml-error", effect NoExecute for a GPU NVML names lost, NoSchedule otherwise, timeAdded when
 * it turned unhealthy. Without taints (the API server's DRADeviceTaints gate off) it is left out.
 */
#ifndef GS_DRA_SLICES_H
#define GS_DRA_SLICES_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include <gpuslice/gpuslice.h>

#include "kubelet/health.h"
#include "kubelet/resources.h"

#define GS_DRA_TAINT_KEY "gpuslice.io/unhealthy"
#define GS_DRA_MIN_MEMORY (1u << 20) /* the smallest memory a claim consumes, and its step */

/* "gpu-0" / "gpu-0-mig-1" into a GPU and MIG index (mig -1: the GPU). -1 (GS_ENOTFOUND) for a
 * name that is none of this node's devices (a GPU in MIG mode is no device; its MIG devices are). */
int gs_dra_device_lookup(const struct gs_device_info *dev, const char *name, unsigned *gpu, int *mig,
                         struct gs_error *err);
void gs_dra_device_name(unsigned gpu, int mig, char *buf, size_t len);

/* The ResourceSlice object; resource_version "" for a create; taints: unhealthy devices tainted
 * (else left out). NULL when out of memory. */
json_object *gs_dra_slice_build(const struct gs_device_info *dev, const struct gs_k8s_topology *topo,
                                const struct gs_k8s_health *health, bool taints, const char *driver,
                                const char *node, long long generation, const char *resource_version);
/* The slice as resource.k8s.io/`version` (its apiVersion); without shares (v1beta2: no consumable
 * capacity, dra/apiversion.h) its devices lose allowMultipleAllocations and their capacities'
 * requestPolicy: each GPU is allocated whole. */
void gs_dra_slice_version(json_object *slice, const char *version, bool shares);
/* Does a slice (as built, or as the API server answered) carry a device taint? */
bool gs_dra_slice_tainted(json_object *slice);
/* Its name: <node>-<driver> (a DNS subdomain when both are). */
void gs_dra_slice_name(const char *driver, const char *node, char *buf, size_t len);

#endif
