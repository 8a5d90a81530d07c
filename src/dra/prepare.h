/*
 * The DRA plugin's NodePrepareResources / NodeUnprepareResources for one claim, and what survives
 * a restart.
 *
 *   prepare    the claim (namespace/name from the kubelet) read from the API server, its uid
 *              checked against the kubelet's; every device of ours in its allocation checked
 *              against this node (pool = the node, a known device, consumed capacity within the
 *              device's); then one CDI spec for the claim, transient, <cdi-dir>/<driver>-claim-
 *              <uid>.json, kind k8s.<driver>/claim, a device "<uid>-<device>" per allocated device:
 *              src/cdi's spec (the same discovery and rules as `cdi generate`), whose GPU or MIG
 *              device is given whole, or, for a device the claim consumes part of, as the slice
 *              device (its hook's --memory = consumed memory, --compute-share = consumed
 *              compute, GPUSLICE_PRIORITY / GPUSLICE_COMPUTE_MODE from the opaque config, and the
 *              hooks that bring the interposer; the createRuntime hook's --k8s-claim /
 *              --k8s-namespace / --k8s-pod, the claim and the one pod it is reserved for, which the
 *              hook writes as the slice's labels for metrics, top and slice set: never env, which
 *              the container writes) and --gpu=<uuid> (its limits are that GPU's:
 *              runtime/slice_gpus.h; the limits leave the env, where two claims' would collide).
 *              A claim may hold slices of several GPUs, one device each. The answer: the CDI names, per device, with its request and pool.
 *   checkpoint <plugin-dir>/checkpoint.json: every prepared claim's answer and spec path, written
 *              atomically after the spec and durably (fsync of the file, rename, fsync of the
 *              directory) before the answer; a prepare of a claim already there answers from it
 *              (idempotent, no API call), also after a restart of the plugin, if its spec is
 *              there: the spec is transient and written without an fsync (/var/run/cdi is a tmpfs
 *              on a node), so one a crash lost or emptied makes the claim prepared anew
 *   the books  a claim whose consumed memory or compute, added to what the claims prepared on this
 *              node hold of that device (the shared checkpoint: other instances' and racing
 *              claims included; a device held whole, or a limit not given, counts as all of it),
 *              exceeds the device is refused: reason Overcommitted on its status
 *   unprepare  removes the claim's spec and its checkpoint entry; an unknown claim is no error
 *   stale      a prepared claim the API server no longer has is unprepared (gs_dra_sweep_stale)
 *   shared     the checkpoint is locked and read again for each call (dra/checkpoint.h), so that
 *              instances side by side (a rolling update) share it
 *
 *   admin      a device allocated with adminAccess (dra/claim.h) is given as a whole device (its
 *              nodes, as cdi generate gives them) with the slices' regions directory bind-mounted
 *              read-only (ro, nosuid, nodev, noexec) at GS_DRA_ADMIN_VIEW, for `gpuslice top` and
 *              `gpuslice metrics` in a monitoring pod; it is no share: off the books (it never
 *              counts toward, or is refused for, what the GPU's claims hold), no limits, no usage
 *              data; its checkpoint entry says "admin" (a rebuilt one: the view's mount)
 * A refused claim leaves nothing: no spec, no checkpoint entry. Its error also goes on the claim's
 * status (dra/status.h: Ready False, reason InvalidClaim or PrepareFailed, the error as message)
 * when the claim was read and names devices of ours; a claim prepared after such an error gets
 * Ready True (reason Prepared). Best effort: the answer does not wait on it or depend on it.
 */
#ifndef GS_DRA_PREPARE_H
#define GS_DRA_PREPARE_H

#define GS_DRA_ADMIN_VIEW GS_SLICE_REGIONS_DIR /* where an admin claim's container sees the regions */

#include <json-c/json.h>
#include <limits.h>
#include <stdbool.h>

#include <gpuslice/gpuslice.h>

#include "dra/claim.h"
#include "kubelet/health.h"
#include "kubelet/kubeapi.h"

struct gs_dra_prep {
        struct gs_context *ctx;
        const struct gs_device_info *dev;
        struct gs_kubeapi *api;
        const struct gs_k8s_health *health; /* NULL: all healthy */
        const char *driver;
        const char *node;
        const char *cdi_dir;
        const char *hook_path;  /* absolute; the gpuslice-hook (or gpuslice) the CDI hooks run */
        const char *host_root;  /* the driver root as the host's runtime sees it ("" : the same) */
        const char *regions_dir; /* the host's slice.regions-dir: an admin-access claim's read-only view */
        char checkpoint[PATH_MAX];
        int lock_fd;            /* <plugin-dir>/checkpoint.lock (dra/checkpoint.h) */
        unsigned rebuilt;       /* times the checkpoint was rebuilt from the specs */
        struct gs_driver_info drv;
        bool have_drv;
        json_object *claims;    /* the checkpoint's claims: {uid: {namespace, name, spec, devices}} */
        const char *refusal;    /* the last refusal's status reason when not PrepareFailed (Overcommitted), or NULL */
        char status_note[256];  /* the last prepare's word on the claim's status, or "" */
        /* the last prepare's steps, in ms (0: not done; for the log line and the bench) */
        struct {
                double api, build, spec, checkpoint;
        } took;
};

/* Discover the driver's files and read the checkpoint (<plugin_dir>/checkpoint.json; a missing
 * one is empty, an unreadable one is set aside as checkpoint.json.bad and rebuilt from the specs). */
int gs_dra_prep_open(struct gs_dra_prep *p, const char *plugin_dir, struct gs_error *err);
void gs_dra_prep_close(struct gs_dra_prep *p);

/* The claim's devices: a JSON array [{"requests": [...], "pool", "device", "cdi": [...]}], owned
 * by p (valid until the next call). NULL with err: the claim is refused, nothing prepared. */
json_object *gs_dra_prepare(struct gs_dra_prep *p, const char *ns, const char *name, const char *uid,
                            struct gs_error *err);
/* Prepare from a claim already read (the API step skipped; tests, bench). */
json_object *gs_dra_prepare_claim(struct gs_dra_prep *p, const struct gs_dra_claim *c, struct gs_error *err);
int gs_dra_unprepare(struct gs_dra_prep *p, const char *uid, struct gs_error *err);
/* Every prepared claim whose namespace and name are known looked up in the API server: one it no
 * longer has (404, or a claim made anew under its name) is unprepared. Returns how many. */
size_t gs_dra_sweep_stale(struct gs_dra_prep *p);
size_t gs_dra_prepared_count(const struct gs_dra_prep *p);

#endif
