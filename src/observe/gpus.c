/* The NVML poller: a background thread asks the isolated helper; readers copy its last answer (gpus.h). */
#include "observe/gpus.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/error.h"
#include "common/log.h"
#include "common/proc.h"
#include "common/strutil.h"
#include "driver/context.h"

struct gs_gpu_poller {
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t cond;          /* stop requested / an attempt ended / someone waits for an answer */
        bool stop;
        bool busy;                    /* an attempt is in progress */
        uint64_t hurry_until_ms;      /* CLOCK_MONOTONIC: till then a failed attempt is retried soon */
        unsigned interval_ms;
        void (*log)(void *arg, const char *line);
        void *log_arg;
        struct gs_context *ctx;       /* the thread's own */
        struct gs_gpu_stats st;       /* under lock */
};

static uint64_t realtime_ns(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* (gs_now_ms as the unsigned milliseconds this file computes with) */
static uint64_t mono_ms(void)
{
        return (uint64_t)gs_now_ms();
}

/* The CLOCK_MONOTONIC instant `ms` (mono_ms), for the condition variable. */
static struct timespec mono_at(uint64_t ms)
{
        return (struct timespec){.tv_sec = (time_t)(ms / 1000u), .tv_nsec = (long)(ms % 1000u) * 1000000L};
}

/* One attempt, published under the lock; a change of NVML's state is logged (outside it). */
static void attempt(struct gs_gpu_poller *p)
{
        struct gs_error err = {0};
        pthread_mutex_lock(&p->lock);
        p->busy = true;
        pthread_mutex_unlock(&p->lock);
        const struct gs_device_info *info = gs_devices_requery(p->ctx, &err);
        char line[GS_ERRMSG_MAX + 64] = "";
        pthread_mutex_lock(&p->lock);
        p->busy = false;
        p->st.attempts++;
        if (info != NULL) {
                if (p->st.attempts > 1 && !p->st.fresh)
                        snprintf(line, sizeof(line), "NVML answers again (%u GPUs)", info->ngpus);
                p->st.valid = p->st.fresh = true;
                p->st.answered_ns = realtime_ns();
                p->st.error[0] = '\0';
                memcpy(&p->st.info, info, sizeof(p->st.info));
        } else {
                const char *why = err.msg[0] != '\0' ? err.msg : "unknown error";
                if (p->st.fresh || p->st.attempts == 1 || strcmp(p->st.error, why) != 0)
                        snprintf(line, sizeof(line), "NVML: %s (per-GPU metrics left out until it answers)", why);
                p->st.fresh = false;
                p->st.failures++;
                gs_strlcpy(p->st.error, why, sizeof(p->st.error));
        }
        pthread_cond_broadcast(&p->cond);
        pthread_mutex_unlock(&p->lock);
        if (line[0] != '\0') {
                gs_log_warn("%s", line);
                if (p->log != NULL)
                        p->log(p->log_arg, line);
        }
}

/* The next attempt comes an interval after the last one ended; sooner (GS_GPU_RETRY_MS) while the
 * last one failed and someone waits for an answer (gs_gpu_poller_wait_answer). */
static void *poll_loop(void *arg)
{
        struct gs_gpu_poller *p = arg;
        for (;;) {
                attempt(p);
                uint64_t ended = mono_ms();
                pthread_mutex_lock(&p->lock);
                while (!p->stop) {
                        uint64_t now = mono_ms(), next = ended + p->interval_ms;
                        if (!p->st.fresh && now < p->hurry_until_ms && ended + GS_GPU_RETRY_MS < next)
                                next = ended + GS_GPU_RETRY_MS;
                        if (now >= next)
                                break;
                        struct timespec until = mono_at(next);
                        pthread_cond_timedwait(&p->cond, &p->lock, &until);
                }
                bool stop = p->stop;
                pthread_mutex_unlock(&p->lock);
                if (stop)
                        return NULL;
        }
}

struct gs_gpu_poller *gs_gpu_poller_start(const struct gs_gpu_poller_opts *o, struct gs_error *err)
{
        struct gs_gpu_poller *p = calloc(1, sizeof(*p));
        if (p == NULL) {
                gs_error_set(err, GS_ENOMEM, "out of memory");
                return NULL;
        }
        p->interval_ms = o->interval_ms > 0 ? o->interval_ms : 5000;
        p->log = o->log;
        p->log_arg = o->log_arg;
        if ((p->ctx = gs_context_new(o->cfg, err)) == NULL) {
                free(p);
                return NULL;
        }
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&p->cond, &ca);
        pthread_condattr_destroy(&ca);
        pthread_mutex_init(&p->lock, NULL);
        /* Before the thread: the helpers are forked by a process that has none (context.h). */
        if ((p->ctx->nvml_launcher = gs_nvml_launcher_start(p->ctx, err)) == NULL) {
                gs_context_free(p->ctx);
                pthread_cond_destroy(&p->cond);
                pthread_mutex_destroy(&p->lock);
                free(p);
                return NULL;
        }
        int rc = pthread_create(&p->thread, NULL, poll_loop, p);
        if (rc != 0) {
                errno = rc;
                gs_error_sys(err, "cannot start the NVML thread");
                gs_nvml_launcher_stop(p->ctx->nvml_launcher);
                gs_context_free(p->ctx);
                pthread_cond_destroy(&p->cond);
                pthread_mutex_destroy(&p->lock);
                free(p);
                return NULL;
        }
        return p;
}

void gs_gpu_poller_get(struct gs_gpu_poller *p, struct gs_gpu_stats *out)
{
        pthread_mutex_lock(&p->lock);
        memcpy(out, &p->st, sizeof(*out));
        pthread_mutex_unlock(&p->lock);
}

bool gs_gpu_poller_wait_answer(struct gs_gpu_poller *p, unsigned retry_ms)
{
        uint64_t until = mono_ms() + retry_ms;
        /* an attempt begun in time ends by its own NVML deadline; this bounds the wait whatever */
        uint64_t hard = until + p->ctx->nvml_timeout_ms + 1000u;
        pthread_mutex_lock(&p->lock);
        if (p->hurry_until_ms < until)
                p->hurry_until_ms = until;
        pthread_cond_broadcast(&p->cond); /* a failed attempt is retried now, not an interval later */
        while (!p->st.valid && !p->stop) {
                uint64_t now = mono_ms();
                if (now >= hard || (now >= until && !p->busy))
                        break;
                struct timespec ts = mono_at(now < until ? until : hard);
                pthread_cond_timedwait(&p->cond, &p->lock, &ts);
        }
        bool valid = p->st.valid;
        pthread_mutex_unlock(&p->lock);
        return valid;
}

void gs_gpu_poller_stop(struct gs_gpu_poller *p)
{
        if (p == NULL)
                return;
        pthread_mutex_lock(&p->lock);
        p->stop = true;
        pthread_cond_broadcast(&p->cond);
        pthread_mutex_unlock(&p->lock);
        pthread_join(p->thread, NULL);
        gs_nvml_launcher_stop(p->ctx->nvml_launcher);
        gs_context_free(p->ctx);
        pthread_cond_destroy(&p->cond);
        pthread_mutex_destroy(&p->lock);
        free(p);
}

int gs_gpu_stats_index(const struct gs_gpu_stats *s, const char *uuid)
{
        if (!s->valid || uuid == NULL || uuid[0] == '\0')
                return -1;
        for (unsigned i = 0; i < s->info.ngpus && i < GS_MAX_GPUS; i++) {
                const struct gs_gpu *g = &s->info.gpus[i];
                if (strcmp(g->uuid, uuid) == 0)
                        return (int)g->index;
                for (unsigned m = 0; m < g->nmigs && m < GS_MAX_MIGS; m++)
                        if (strcmp(g->migs[m].uuid, uuid) == 0)
                                return (int)g->index;
        }
        return -1;
}
