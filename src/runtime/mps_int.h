/*
 * Internals of runtime/mps.c shared with mps_slice.c (slices through MPS) and mps_supervise.c
 * (`gpuslice mps supervise`). Not an API: the three files are one room.
 */
#ifndef GS_RUNTIME_MPS_INT_H
#define GS_RUNTIME_MPS_INT_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

#include "runtime/mps.h"

#define MPS_OUTPUT_MAX 8192

/* What one run of the control binary left. */
struct run_result {
        int status;                 /* waitpid status */
        char out[MPS_OUTPUT_MAX];   /* stdout and stderr, as much as fits */
        size_t len;
};

/* The binaries and the PATH the daemon gets, found once per call (when first needed), and the
 * result of the last run. */
struct mps_exec {
        bool resolved;
        char control[PATH_MAX];    /* host path */
        char path_env[2 * PATH_MAX + 8];
        struct run_result res;
};

/* <root>/<uuid> and its pipe, log and client directories into m (index as given). */
int mps_gpu_paths(const char *root, const char *uuid, unsigned index, struct gs_mps_gpu *m, struct gs_error *err);
/* Find the driver root's nvidia-cuda-mps-control (once per x). */
int mps_resolve_exec(struct gs_context *ctx, struct mps_exec *x, struct gs_error *err);
/* One command line to GPU m's daemon through the control binary (client mode), bounded by
 * timeout_ms: 0 with its answer in x->res.out (trailing blanks cut), -1 when it could not run,
 * exited non-zero or timed out. The real binary says "Insufficient privileges ..." and exits 0
 * when it refuses: callers look at the answer. */
int mps_ui(struct mps_exec *x, const struct gs_mps_gpu *m, const char *line, unsigned timeout_ms,
           struct gs_error *err);
/* The live control daemon of the pipe directory (its pid file, checked against /proc), or 0. */
pid_t mps_daemon_pid(const char *pipe_dir);
/* get_server_list into m->servers (m->servers_known). */
int mps_query_servers(struct mps_exec *x, struct gs_mps_gpu *m, unsigned timeout_ms, struct gs_error *err);
/* Start / stop one GPU's daemon as gs_mps_start / gs_mps_stop do (they take the GPU's lock). */
int mps_start_one(struct gs_context *ctx, struct mps_exec *x, const struct gs_mps_opts *o, struct gs_mps_gpu *m,
                  unsigned timeout_ms, struct gs_error *err);
int mps_stop_one(struct gs_context *ctx, struct mps_exec *x, const struct gs_mps_opts *o, struct gs_mps_gpu *m,
                 unsigned timeout_ms, struct gs_error *err);
/* flock <root>/<uuid> (which must exist): the descriptor holding the lock, or -1. Not while
 * calling mps_start_one / mps_stop_one, which take it themselves. */
int mps_lock_gpu(const struct gs_mps_gpu *m, unsigned timeout_ms, struct gs_error *err);
/* Make <uuid>/client/control a link to <uuid>/pipe/control again (after a daemon started). */
int mps_link_client(const struct gs_mps_gpu *m, struct gs_error *err);

#endif
