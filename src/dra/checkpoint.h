/*
 * The DRA plugin's checkpoint, <plugin-dir>/checkpoint.json: every prepared claim (its answer, its
 * spec, the memory and compute each of its devices holds), shared by the plugin's instances on the
 * node (a new plugin beside the old one in a rolling update):
 *
 *   lock      every call holds <plugin-dir>/checkpoint.lock (flock) and reads the file again
 *             first, so that one instance sees what the other prepared (the books of a GPU's
 *             memory and compute, racing claims included); written atomically and durably
 *   corrupt   a checkpoint that cannot be read is set aside (checkpoint.json.bad) and rebuilt from
 *             the claims' CDI specs in the CDI directory (<driver>-claim-<uid>.json: each device
 *             "<uid>-<device>", a slice's memory and compute from its hook's --memory and
 *             --compute-share, the claim's namespace and name from --k8s-namespace / --k8s-claim, or
 *             for a device without that hook (a whole GPU, a MIG device) from the claim's
 *             reference <plugin-dir>/claim-<uid>.ref: "NAMESPACE NAME", written at prepare beside the
 *             spec and removed with it; not in the spec: CDI has annotations only from 0.6.0, which
 *             the runtimes before it (containerd 1.7's, podman 4's) refuse; a share's shareID from
 *             the reference's "DEVICE SHAREID" lines: its usage and condition entries on the claim's
 *             status need it, the API server refuses an entry without it),
 *             marked "rebuilt" (prepared anew when the kubelet asks again: the answer's request
 *             names are the API server's), and a Warning Event CheckpointRebuilt on the Node
 *   books     what the prepared claims hold on one device: a device held whole (a GPU allocated
 *             whole, a MIG device), or a slice's memory or compute not given (no limit), counts
 *             as all of it
 */
#ifndef GS_DRA_CHECKPOINT_H
#define GS_DRA_CHECKPOINT_H

#include <stdint.h>

#include "dra/prepare.h"

/* Paths, the lock file, the first read. */
int gs_dra_ck_open(struct gs_dra_prep *p, const char *plugin_dir, struct gs_error *err);
void gs_dra_ck_close(struct gs_dra_prep *p);
/* Lock and read again (p->claims is the file's). -1: the lock cannot be had. */
int gs_dra_ck_begin(struct gs_dra_prep *p, struct gs_error *err);
void gs_dra_ck_end(struct gs_dra_prep *p);
int gs_dra_ck_save(struct gs_dra_prep *p, struct gs_error *err);
/* The claim's reference (its namespace and name, its shares' ids, for a rebuild), and its removal. */
int gs_dra_ck_ref_write(const struct gs_dra_prep *p, const struct gs_dra_claim *c, struct gs_error *err);
void gs_dra_ck_ref_remove(const struct gs_dra_prep *p, const char *uid);
/* What the checkpoint's claims other than `except_uid` hold on `device`, whose memory is `total`:
 * bytes and percent (each at most total, 100 per claim). */
void gs_dra_ck_held(const struct gs_dra_prep *p, const char *device, const char *except_uid, uint64_t total,
                    uint64_t *memory, unsigned *compute);

#endif
