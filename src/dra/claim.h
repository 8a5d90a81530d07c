/*
 * A ResourceClaim as the API server returns it (resource.k8s.io/v1), read for one driver: the
 * devices allocated to it (status.allocation.devices.results whose driver is ours) with the
 * capacity each consumes, and the driver's opaque config (status.allocation.devices.config),
 * applied per request: the DeviceClass's (source FromClass, copied there by the API server) bounds
 * the claim's (FromClaim), which may only narrow it.
 *
 *   adminAccess        true: the device is allocated for administrative access (DRAAdminAccess;
 *                      only in a namespace the cluster admin labelled): it consumes nothing
 *                      (its consumedCapacity is not read), a monitoring view (dra/prepare.h)
 *   consumedCapacity   "memory" (bytes) and "compute" (percent, 1..100): the slice; absent on a
 *                      device allocated whole. Any other capacity name is an error.
 *   opaque parameters  {"apiVersion": "gpu.gpuslice.io/v1alpha1", "kind": "SliceConfig",
 *                      "priority": "high"|"normal"|"low", "computeMode": "cap"|"share"|"off",
 *                      and a class's only: "maxPriority", "maxComputeMode"}; anything else in it
 *                      is an error (a typo must not pass silently)
 *   the bound          the class's maxPriority, else its priority, else normal; its
 *                      maxComputeMode, else its computeMode, else cap (wider: high > normal > low,
 *                      off > share > cap). A claim asking more is refused (beyond_class); a
 *                      claim's value wins over the class's within the bound.
 *
 * The document is hostile input (whoever can write claims writes it): every string is bounded,
 * every type checked, the size and nesting limited; an error names what is wrong.
 */
#ifndef GS_DRA_CLAIM_H
#define GS_DRA_CLAIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gpuslice/gpuslice.h>

#define GS_DRA_MAX_RESULTS 32
#define GS_DRA_MAX_DOC (1u << 20) /* a claim document larger than this is refused */
#define GS_DRA_CONFIG_API "gpu.gpuslice.io/v1alpha1"
#define GS_DRA_CONFIG_KIND "SliceConfig"

struct gs_dra_result {
        char request[128];  /* the request's name ("req" or "req/sub") */
        char pool[254];
        char device[64];    /* a DNS label: the ResourceSlice's device name */
        char share_id[64];  /* "" unless the device was allocated as a share */
        uint64_t memory;    /* consumed bytes, 0: none given */
        unsigned compute;   /* consumed percent, 0: none given */
        char priority[8];   /* "" or high|normal|low */
        char compute_mode[8]; /* "" or cap|share|off */
        bool admin;         /* adminAccess: true (the API server's word): a read-only view, no share */
};

struct gs_dra_claim {
        char uid[64];
        char ns[64];
        char name[254];
        size_t n;
        struct gs_dra_result r[GS_DRA_MAX_RESULTS];
        bool error_reported; /* status.devices: an entry of ours says Ready False */
        bool beyond_class;   /* refused: its config asks more than its DeviceClass allows */
        char pod[254];       /* status.reservedFor: the one pod it is reserved for, or "" (none, several) */
};

/* Parse `len` bytes of JSON for `driver`. A claim not allocated, or with no device of `driver`,
 * is an error (GS_EINVAL), as is anything malformed. On an error, out->uid/ns/name (when read)
 * and out->r[0..n) hold what was read: well-formed request, pool, device and shareID (enough to
 * report the error on those devices' status), nothing else to be trusted. */
int gs_dra_claim_parse(const char *json, size_t len, const char *driver, struct gs_dra_claim *out,
                       struct gs_error *err);

#endif
