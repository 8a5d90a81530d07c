/*
 * A slice's host side: the directory <regions_dir>/<container-id>/ that the observer scans, and
 * the files the container gets from it (all made by root on the host, none from the container):
 *   owner          "<pid> <start time>" of the container's init: who this directory belongs to
 *   slice.conf     the limits (KEY=VALUE, read by libgpuslice-vgpu.so), mounted read-only at
 *                  GS_SLICE_FILE_PATH; it marks itself enforced, so no variable of the
 *                  container's processes changes a limit (vgpu/config.h); what the container's
 *                  env asked at its start is already in it, only where it narrowed the
 *                  allocator's word (runtime/slice_rules.h)
 *   ld.so.preload  the image's own /etc/ld.so.preload lines, kept, plus the interposer's path;
 *                  mounted read-only over the container's /etc/ld.so.preload
 *   usage          the usage region (sized by the first process), mounted read-write at
 *                  GS_SLICE_USAGE_PATH; 0660, owned by the container's process user and group
 *                  (the hook's config.json; mapped through its user namespace), else its root
 *   live/limits    the live limits (slice/live.h), replaced whole by `gpuslice slice set`; live/
 *                  is mounted read-only at GS_SLICE_LIVE_DIR
 *   changes        who changed the limits, when, old -> new (one line each; host-only)
 * and, for a compute-limited slice, in each of its GPUs' arbiter directories
 * <regions_dir>/../arbiter/gpuslice-gpu-<UUID>/ (sticky, world-writable: host slices of any user add
 * their own file there) a file named after the container (0660, as the usage region, 64 bytes) and
 * its host record `.host-<id>` (root's, 0644: the slice's share, class and mode on that GPU, all
 * the others believe of it; vgpu/arbiter.h): the directory is mounted read-only at
 * GS_SLICE_ARBITER_DIR/gpuslice-gpu-<UUID>, and only the container's own record in it read-write,
 * so a container can write its own turn-taking record and read the others'.
 * A cap-mode slice on one GPU that goes through its GPU's `gpuslice mps` daemon (opts->mps_dir, as
 * runtime/mps.h's gs_mps_slice_attach chose it under slice.mps) gets the GPU's client directory,
 * mounted read-only at the same path, named in slice.conf.
 * The directory goes when the container does: a poststop hook removes it, and every hook run
 * sweeps the directories whose owner is no longer alive.
 */
#ifndef GS_SLICE_SLICE_H
#define GS_SLICE_SLICE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <gpuslice/gpuslice.h>

#define GS_SLICE_USAGE_PATH GS_SLICE_RUN_DIR "/usage"

struct gs_slice_host {
        char dir[PATH_MAX];     /* <regions_dir>/<id> */
        char lib[PATH_MAX];     /* host path of libgpuslice-vgpu.so */
        int dirfd;              /* O_DIRECTORY fd on dir, or -1 */
        bool created;           /* we made dir (remove it on failure) */
        bool already;           /* dir existed for this same live container: nothing to do */
        char id[256];           /* the container's id (names its directory and arbiter files) */
        char arb_root[PATH_MAX]; /* the GPUs' arbiter directories (<regions_dir>/../arbiter) */
        unsigned narb;          /* GPUs whose arbiter file we made for the container */
        char arb_uuid[GS_MAX_GPUS][GS_STR_LONG];
        char mps_pipe[PATH_MAX]; /* the GPU's MPS client directory the slice connects through, or "" */
};

/* The interposer: `configured` if set (must be readable), else next to the running executable
 * (libgpuslice-vgpu.so, ../lib/gpuslice/, ../lib/<multiarch>/gpuslice/, ../lib/). */
int gs_slice_find_library(const char *configured, char *out, size_t len, struct gs_error *err);

/* A container id usable as a directory name ([A-Za-z0-9_.+-], not "." or "..", < 256 chars). */
bool gs_slice_id_valid(const char *id);

/* Host side, before anything in the container is touched: find the interposer, create the
 * directory for `owner_pid`'s container and write owner, slice.conf (with `devices`, the
 * visible GPU UUIDs, comma-separated, or NULL) and an empty usage file. If the directory exists
 * for the same live container, sets `already` and does nothing; a stale one (dead owner) is
 * replaced. */
int gs_slice_prepare(const struct gs_slice_opts *s, pid_t owner_pid, const char *devices,
                     struct gs_slice_host *h, struct gs_error *err);

/* `gpuslice exec`'s slice (host processes): the directory <regions_dir>/<id> with owner (this
 * process), live/limits (from s: gs_slice_write_live) and an empty usage file (the region the
 * command's processes share: GPUSLICE_REGION), so that `gpuslice slice` finds and changes it and
 * the observer shows it; no slice file, preload line or arbiter files (the environment carries
 * the rest). A dead exec's directory of that name is replaced. Remove it with gs_slice_abort. */
int gs_slice_prepare_exec(const struct gs_slice_opts *s, const char *id, struct gs_slice_host *h, struct gs_error *err);

/* The ld.so.preload for the container: `image` (its current file, may be NULL/empty) with the
 * interposer's line appended unless present. Written into the host directory (0444). */
int gs_slice_write_preload(struct gs_slice_host *h, const char *image, size_t len, struct gs_error *err);

/* Undo gs_slice_prepare (on a failed configure): remove the directory if we created it. */
void gs_slice_abort(struct gs_slice_host *h);
void gs_slice_close(struct gs_slice_host *h);

struct gs_slice_limits;
/* A live change of the container's slice (gs_slice_set, before it replaces the live file): its
 * arbiter host records rewritten with the new share, class and mode, on each of its GPUs that has
 * one (`dirfd`: the slice's directory, whose slice file lists them). */
int gs_slice_update_arbiter(const char *regions_dir, int dirfd, const char *id, const struct gs_slice_limits *l,
                            struct gs_error *err);

/* poststop: remove the container's directory and arbiter files (no error if they are gone). */
int gs_slice_remove(const char *regions_dir, const char *id, struct gs_error *err);

/* Whether the container that owns <id> under the regions directory fd lives (its owner record's
 * pid with the same start time): 1 alive, 0 gone, -1 no readable owner record. */
int gs_slice_owner_alive(int regfd, const char *id, pid_t *pid_out);

/* Remove the directories whose owner is dead (and half-made ones older than a minute). Returns
 * how many were removed; never fails (problems are logged). */
unsigned gs_slice_sweep(const char *regions_dir);

/* ---- for the observer (gpuslice metrics / top) ----
 *   labels         JSON object {"namespace": ..., "pod": ..., "container": ..., "claim": ...}
 *                  (each optional), from the CRI annotations of the container's config.json:
 *                  CRI-O's io.kubernetes.pod.namespace, io.kubernetes.pod.name,
 *                  io.kubernetes.container.name, else containerd's
 *                  io.kubernetes.cri.sandbox-namespace, -sandbox-name, -container-name; else
 *                  what the host gave the hook on its command line (`gpuslice hook --k8s-claim
 *                  --k8s-namespace --k8s-pod`: a DRA claim's CDI device names its ResourceClaim
 *                  and the pod it is reserved for). Never from the container's env, which the
 *                  image and the pod spec write (issue 31): `gpuslice slice set NS/POD` acts on
 *                  them. Absent when none is set. */
#define GS_SLICE_LABEL_MAX 254 /* Kubernetes names are at most 253 characters */
struct gs_slice_labels {
        char ns[GS_SLICE_LABEL_MAX];
        char pod[GS_SLICE_LABEL_MAX];
        char container[GS_SLICE_LABEL_MAX];
        char claim[GS_SLICE_LABEL_MAX];
};

/* Write <regions_dir>/<id>/labels from the "key=value" annotations and the names the host gave
 * (`given`, "" fields unset; either may be NULL; the annotations win), replacing it atomically;
 * nothing when neither names a label. The directory must exist (gs_slice_prepare). */
int gs_slice_write_labels(const char *regions_dir, const char *id, char *const *annotations, size_t n,
                          const struct gs_slice_labels *given, struct gs_error *err);
/* A name the host may give as a label: a Kubernetes name (a DNS subdomain: [a-z0-9.-], at most
 * 253 characters, starting and ending with a letter or digit). */
bool gs_slice_label_valid(const char *s);
/* Read <id>/labels under the regions directory fd: 1 read (missing keys are ""), 0 no labels
 * file, -1 unreadable or not a JSON object (out is all "" then). */
int gs_slice_read_labels(int regfd, const char *id, struct gs_slice_labels *out);
/* The owner record <id>/owner: the container's init pid (host namespace) and its start time
 * (/proc/<pid>/stat field 22). 0, or -1 when missing or malformed. */
int gs_slice_read_owner(int regfd, const char *id, pid_t *pid, unsigned long long *start);

#endif
