/*
 * NVIDIA MPS on the host: one control daemon (`nvidia-cuda-mps-control -d`) per whole GPU, so that
 * compute-limited slices can be connected to "their" GPU's server with a thread percentage.
 *
 * Layout, per GPU, under the MPS root (default GS_MPS_ROOT_DEFAULT, host config slice.mps-root):
 *   <root>/<GPU-UUID>/pipe/  the daemon's CUDA_MPS_PIPE_DIRECTORY (0755: clients of every UID
 *                            must reach its sockets; the daemon makes them 0666 itself)
 *   <root>/<GPU-UUID>/log/   its CUDA_MPS_LOG_DIRECTORY (control.log, server.log)
 *   <root>/<GPU-UUID>/client/  what a slice's processes get (mounted read-only into containers,
 *                            their CUDA_MPS_PIPE_DIRECTORY): `control`, a hard link to the
 *                            daemon's control socket (renewed whenever a daemon starts), and
 *                            `state`, gpuslice's word on the GPU's MPS (mps_slice.c)
 *   <root>/<GPU-UUID>/slices/  one file per slice connected through it: its share, for the
 *                            server's active thread percentage (mps_slice.c)
 * (Not the log directory inside the pipe directory: the daemon makes a FIFO named `log` there.)
 * All of them are 0755, owned by the caller. A container never sees the pipe directory: measured
 * on the H100 (driver 580), a client needs nothing but the control socket, which works through a
 * read-only mount, while the pipe directory's `control_privileged` socket would let the
 * container's root change the daemon's defaults (set_default_active_thread_percentage).
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
        char client_dir[GS_MPS_DIR_MAX + 3];
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

/* ---------------------------------------------------------------------------------------------
 * Slices through MPS (mps_slice.c): the host setting slice.mps, and what a cap slice gets.
 *   off   never (the default): every compute slice takes turns on its GPU (the time limiter)
 *   auto  a cap slice on one GPU connects through that GPU's daemon when one runs and is not
 *         poisoned; else the time limiter
 *   on    as auto, and a GPU without a daemon gets one started (gs_mps_start) first; when that
 *         fails, the time limiter (logged)
 */
enum gs_mps_mode { GS_MPS_MODE_OFF = 0, GS_MPS_MODE_AUTO, GS_MPS_MODE_ON };
/* "off", "auto", "on" (NULL or "": off); -1 for anything else. */
int gs_mps_mode_parse(const char *s);
const char *gs_mps_mode_name(int mode);

/* A GPU's MPS as gpuslice sees it: <root>/<uuid>/client/state, written by the supervisor. */
struct gs_mps_state {
        bool poisoned;          /* a client hit a fatal GPU error: the server's clients are lost */
        long long since;        /* unix seconds of the last change */
        pid_t server;           /* the faulted server (poisoned) */
        unsigned long long faults, restarts, resets; /* server faults seen, daemon restarts after
                                                       * one, server percentages put back */
        unsigned percentage;    /* the servers' active thread percentage gpuslice keeps (0: none) */
};
/* Read it: 1 read, 0 no state file (a GPU nobody supervises), -1 unreadable. */
int gs_mps_state_read(const char *client_dir, struct gs_mps_state *st);
/* Replace it (a temporary file renamed over it: readers see the old or the new one). */
int gs_mps_state_write(const char *client_dir, const struct gs_mps_state *st, struct gs_error *err);

/* A cap slice of `pct` % (1..99) on the one GPU `uuid`: */
struct gs_mps_slice {
        const char *root;       /* the MPS root (NULL: GS_MPS_ROOT_DEFAULT) */
        int mode;               /* GS_MPS_MODE_* */
        const char *uuid;
        unsigned index;         /* the GPU's NVML index (messages) */
        unsigned pct;
        const char *id;         /* names its registration (the container id, exec-<pid>) */
        pid_t owner;            /* registered while this process lives */
        unsigned timeout_ms;    /* for starting a daemon and each command (0: the default) */
        char why[256];          /* out: why the slice stays on the time limiter ("" when it does not) */
};
/* Whether the slice runs through the GPU's MPS: 1 and `dir` = the GPU's client directory (it is
 * registered, and every server's percentage is at least its share: the largest share of the
 * live slices registered on the GPU), or 0 and the time limiter, the reason logged (mode off:
 * silently). Never an error: a slice is never refused for MPS. */
int gs_mps_slice_attach(struct gs_context *ctx, const struct gs_device_info *info, struct gs_mps_slice *s,
                        char *dir, size_t len);
/* The slice's options that may go through MPS: cap mode, one GPU (`devices`: its UUID, no comma),
 * one share of 1..99 %: that share, else 0. */
unsigned gs_mps_slice_share(const struct gs_slice_opts *s, const char *devices);

/* slice.mps for a slice with options `s` (mps, mps_root, compute) on the one GPU `uuid` of `info`:
 * 1 and the GPU's MPS client directory in `dir` when it runs through the GPU's MPS daemon (it is
 * registered as `id`, alive while `owner` lives: gs_mps_slice_attach), else 0 and `dir` "" (it
 * takes turns; `why`, when not NULL, says why, "" when MPS was not asked for). gs_configure hands
 * it to the configure pipeline (runtime/configure.c, container/configure.h). */
int gs_slice_mps_choose(struct gs_context *ctx, const struct gs_device_info *info, const struct gs_slice_opts *s,
                        const char *uuid, const char *id, pid_t owner, char *dir, size_t len, char *why, size_t wlen);

/* The active thread percentage the GPU's servers should have: the largest share among the live
 * slices registered under <root>/<uuid>/slices (0: none). Files of dead owners are removed. */
unsigned gs_mps_slices_ceiling(const struct gs_mps_gpu *m);
/* Give every server of the daemon and the daemon's default (the next server's) `pct` where they
 * differ; *changed: how many servers had another value. */
int gs_mps_apply_percentage(struct gs_context *ctx, const struct gs_mps_gpu *m, unsigned pct, unsigned timeout_ms,
                            unsigned *changed, struct gs_error *err);

/* ---------------------------------------------------------------------------------------------
 * gpuslice mps supervise (mps_supervise.c): keep one daemon per selected GPU, in the foreground,
 * until SIGTERM or SIGINT (the daemons stay).
 */
struct gs_mps_supervise_opts {
        struct gs_mps_opts mps;   /* devices, root, timeout */
        unsigned interval_ms;     /* between two looks at every GPU (0: 1000) */
        unsigned max_cycles;      /* stop after this many (tests; 0: never) */
        void (*log)(void *arg, const char *line); /* what it does and sees, one line each */
        void *log_arg;
};
int gs_mps_supervise(struct gs_context *ctx, const struct gs_device_info *info, const struct gs_mps_supervise_opts *o,
                     struct gs_error *err);
/* The supervisor's pid record <root>/supervise.pid ("<pid> <start time>"): its pid when that
 * process lives, else 0; *age_s: seconds since it last looked at the GPUs (the file's mtime). */
pid_t gs_mps_supervisor(const char *root, long long *age_s);

#endif
