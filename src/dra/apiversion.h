/*
 * Which resource.k8s.io version the DRA plugin speaks to the API server: v1 (Kubernetes 1.34 and
 * later) when served, else v1beta2 (Kubernetes 1.33, where v1 is not served). Asked once by
 * discovery, GET /apis/resource.k8s.io (an APIGroup: its versions[].version); the answer goes
 * into api->res_version, which every DRA path and object takes (ResourceSlices, ResourceClaims,
 * their status, Events about claims).
 *
 * v1beta2 carries the same devices as v1 (no v1beta1 `basic` wrapper). What it lacks is the
 * consumable capacity of Kubernetes 1.34 (a device's allowMultipleAllocations, its capacities'
 * requestPolicy, a result's consumedCapacity and shareID): a server serving v1beta2 without v1
 * has none, so on v1beta2 the plugin publishes GPUs to be allocated whole, as with the
 * DRAConsumableCapacity gate off (dra/slices.h gs_dra_slice_whole); MIG devices are whole anyway.
 */
#ifndef GS_DRA_APIVERSION_H
#define GS_DRA_APIVERSION_H

#include <stdbool.h>

#include <gpuslice/gpuslice.h>

#include "kubelet/kubeapi.h"

/* `want`: "auto" (NULL too: discovery), "v1" or "v1beta2" (taken as said, nothing asked).
 * 0: api->res_version set; -1 with err: no answer (api->res_version left as it was), the group
 * not served (GS_ENOTFOUND: the DynamicResourceAllocation feature off), or neither version served
 * (GS_EUNSATISFIED: v1beta1 only, Kubernetes 1.32). */
int gs_dra_api_version(struct gs_kubeapi *api, const char *want, struct gs_error *err);
/* Is `want` one of auto, v1, v1beta2? */
bool gs_dra_api_version_valid(const char *want);
/* Does the version api->res_version speak have consumable capacity (shares of a device)? */
bool gs_dra_api_shares(const struct gs_kubeapi *api);

#endif
