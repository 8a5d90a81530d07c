/*
 * The DRA plugin's word on a claim's status (resource.k8s.io/v1 ResourceClaim status.devices, one
 * AllocatedDeviceStatus per device of ours: driver, pool, device, shareID, and a condition "Ready"
 * True or False with a reason, a message and its lastTransitionTime), written by a server-side
 * apply on the status subresource:
 *
 *   PATCH /apis/resource.k8s.io/v1/namespaces/NS/resourceclaims/NAME/status
 *         ?fieldManager=<driver>&force=true, application/apply-patch+yaml
 *
 * so the entries are the driver's own (the list is a map keyed by driver, pool, device and
 * shareID: other drivers' entries stay). metadata.uid goes with it: the API server refuses the
 * write to a claim made anew under the same name. One try, bounded by the client's timeout: the
 * status is the user's explanation, never a reason to hold or fail a prepare. RBAC:
 * resourceclaims/status patch, and resourceclaims/driver associated-node:patch (Kubernetes 1.36's
 * granular status authorization).
 */
#ifndef GS_DRA_STATUS_H
#define GS_DRA_STATUS_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include <gpuslice/gpuslice.h>

#include "dra/claim.h"
#include "kubelet/kubeapi.h"

#define GS_DRA_STATUS_MAX_MESSAGE 32768 /* the API's limit on a condition's message */

/* Ready = `ready` with `reason` (CamelCase, [A-Za-z][A-Za-z0-9_,:]*) and `message` on each of the
 * claim's devices c->r[0..n). 0: the API server took it; -1 with err otherwise. */
int gs_dra_status_write(struct gs_kubeapi *api, const char *driver, const struct gs_dra_claim *c, bool ready,
                        const char *reason, const char *message, struct gs_error *err);

/* The usage of a claim's shares (dra/usage.h) in status.devices[].data, applied as a field
 * manager of its own, <driver>-usage: the entries' conditions (the driver's manager) stay, and a
 * usage write never moves their lastTransitionTime. `data` is each entry's object (borrowed). */
#define GS_DRA_USAGE_MANAGER_SUFFIX "-usage"
struct gs_dra_status_entry {
        const char *pool, *device, *share_id;
        json_object *data;
};
int gs_dra_status_data(struct gs_kubeapi *api, const char *driver, const char *ns, const char *name, const char *uid,
                       const struct gs_dra_status_entry *e, size_t n, struct gs_error *err);

/* Conditions of a claim's shares other than Ready (dra/appxid.h: ApplicationError), applied as
 * the field manager <driver>-appxid: `data` is each entry's conditions array (borrowed). The
 * conditions list is a map keyed by type, so the driver's Ready condition stays. */
#define GS_DRA_APPXID_MANAGER_SUFFIX "-appxid"
int gs_dra_status_conditions(struct gs_kubeapi *api, const char *driver, const char *ns, const char *name,
                             const char *uid, const struct gs_dra_status_entry *e, size_t n, struct gs_error *err);

/* A core/v1 Event on this node (involvedObject: the Node `node`, namespace "default", as the kubelet
 * writes node events), type Warning, `reason` and `message`, reported by `driver`; one try. RBAC:
 * create on events. 0: the API server took it. */
int gs_dra_event_node(struct gs_kubeapi *api, const char *driver, const char *node, const char *reason,
                      const char *message, struct gs_error *err);
/* The same about a ResourceClaim (in its namespace: `kubectl describe resourceclaim` shows it). */
int gs_dra_event_claim(struct gs_kubeapi *api, const char *driver, const char *node, const char *ns, const char *name,
                       const char *uid, const char *reason, const char *message, struct gs_error *err);

/* A line for the plugin's log through `note(ud, line)` (nothing when `note` is NULL): the status
 * writers' (usage.c, appxid.c) way of saying what they could not do. */
void gs_dra_say(void (*note)(void *ud, const char *line), void *ud, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

#endif
