/*
 * NVIDIA MPS on the host: one control daemon (`nvidia-cuda-mps-control -d`) per whole GPU, so that
 * compute-limited slices can be connected to "their" GPU's server with a thread percentage.
 *
 * Layout, per GPU, under the MPS root (default GS_MPS_ROOT_DEFAULT, host config slice.mps-root):
 *   <root>/<GPU-UUID>/pipe/  the daemon's CUDA_MPS_PIPE_DIRECTORY (0755: clients of every UID
 *                            must reach its sockets; the daemon makes them 0666 itself)
 *   <root>/<GPU-UUID>/log/   its CUDA_MPS_LOG_DIRECTORY (control.log, server.log)
 * (Not the log directory inside the pipe directory: the daemon makes a FIFO named `log` there.)
 * All three directories are 0755, owned by the caller.
 * The daemon runs with exactly CUDA_VISIBLE_DEVICES=<GPU-UUID>, those two directories and a PATH of
 * the driver root's binary directories: nothing of the caller's environment (no LD_PRELOAD).
 *
 * A MIG device has no daemon of its own here: selecting one is an error, and so is a selected
 * GPU in MIG mode (with `all`, `start` passes over such GPUs and says so).
 */
#ifndef GS_RUNTIME_MPS_H
#define GS_RUNTIME_MPS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <gpuslice/gpuslice.h>

#define GS_MPS_ROOT_DEFAULT "/run/gpuslice/mps"
#define GS_MPS_TIMEOUT_MS_DEFAULT 5000u
#define GS_MPS_MAX_SERVERS 64
/* A pipe directory longer than this cannot hold the daemon's sockets (sun_path is 108 bytes,
 * and the longest socket name is "control_privileged"). */
#define GS_MPS_DIR_MAX 88

struct gs_mps_opts {
        const char *devices;  /* --device list; NULL: all */
        const char *root;     /* the MPS root (absolute); NULL: GS_MPS_ROOT_DEFAULT */
        unsigned timeout_ms;  /* how long start/stop wait for the daemon; 0: GS_MPS_TIMEOUT_MS_DEFAULT */
};

enum gs_mps_action {
        GS_MPS_QUERIED,         /* status */
        GS_MPS_STARTED,         /* start: a daemon was started */
        GS_MPS_ALREADY_RUNNING, /* start: one was already answering on that pipe directory */
        GS_MPS_SKIPPED_MIG,     /* start with `all`: the GPU is in MIG mode */
        GS_MPS_STOPPED,         /* stop: it was told to quit and is gone */
        GS_MPS_NOT_RUNNING,     /* stop: there was none */
};

struct gs_mps_gpu {
        unsigned index;               /* NVML index */
        char uuid[GS_STR_LONG];
        char dir[GS_MPS_DIR_MAX + 1];     /* <root>/<GPU-UUID> */
        char pipe_dir[GS_MPS_DIR_MAX + 1];
        char log_dir[GS_MPS_DIR_MAX + 1];
        enum gs_mps_action action;
        bool running;                 /* after the action */
        pid_t pid;                    /* the control daemon's (running), or the one stopped */
        bool servers_known;           /* status: the daemon answered get_server_list */
        size_t nservers;
        pid_t servers[GS_MPS_MAX_SERVERS];
        char query_error[256];        /* status: why the servers are not known ("" if they are) */
};

struct gs_mps_report {
        unsigned n;                   /* GPUs handled so far (on failure: those before the failing one) */
        struct gs_mps_gpu gpus[GS_MAX_GPUS];
};

/* Start a daemon for every selected GPU that has none (bounded wait until it answers). Stops at
 * the first GPU that fails; `r` then holds the GPUs done before it. */
int gs_mps_start(struct gs_context *ctx, const struct gs_device_info *info, const struct gs_mps_opts *o,
                 struct gs_mps_report *r, struct gs_error *err);
/* `quit` every selected GPU's daemon and wait (bounded) until it is gone; removes its pipe and log
 * directories (and <root>/<GPU-UUID>) if they are empty then, nothing else. */
int gs_mps_stop(struct gs_context *ctx, const struct gs_device_info *info, const struct gs_mps_opts *o,
                struct gs_mps_report *r, struct gs_error *err);
/* Whether each selected GPU's daemon runs, and its servers (get_server_list). Creates nothing. */
int gs_mps_status(struct gs_context *ctx, const struct gs_device_info *info, const struct gs_mps_opts *o,
                  struct gs_mps_report *r, struct gs_error *err);

#endif
