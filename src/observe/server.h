/*
 * The /metrics endpoint (libmicrohttpd): GET or HEAD /metrics (one scrape: every region read
 * now, NVML's last answer), /healthz ("ok"), / (a pointer to /metrics). A pool of threads
 * answers; scans are serialized on the collector's lock, rendering is not. The listening socket
 * is ours (its errors are exact, port 0 picks a free port, the bound address is known).
 */
#ifndef GS_OBSERVE_SERVER_H
#define GS_OBSERVE_SERVER_H

#include <stdbool.h>
#include <sys/socket.h>

#include <gpuslice/gpuslice.h>

#include "observe/collect.h"
#include "observe/gpus.h"
#include "observe/listen.h"
#include "observe/metrics.h"

struct gs_metrics_server_opts {
        const char *listen;
        struct gs_collector *collector;   /* the server serializes its scans */
        struct gs_gpu_poller *gpus;       /* NULL: no NVML facts */
        struct gs_metrics_opts render;
        unsigned threads;                 /* 0: 4 */
        void (*log)(void *arg, const char *line);
        void *log_arg;
};

struct gs_metrics_server;

struct gs_metrics_server *gs_metrics_server_start(const struct gs_metrics_server_opts *o, struct gs_error *err);
/* The bound address, "127.0.0.1:9394" / "[::]:9394". */
const char *gs_metrics_server_address(const struct gs_metrics_server *s);
/* Housekeeping, about once a second: a scan (compute windows close even without scrapes) and,
 * when containers are gone, the sweep of their slice directories. */
void gs_metrics_server_tick(struct gs_metrics_server *s);
void gs_metrics_server_stop(struct gs_metrics_server *s);

#endif
