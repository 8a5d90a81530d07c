/* NVML's events in a long-lived, confined helper process (see nvml_events.h). */
#include "driver/nvml_events.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define GS_NVML_NO_PROTOTYPES
#include "abi/nvml.h"
#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "common/proc.h"
#include "common/strutil.h"
#include "driver/context.h"

#define EVENT_MAGIC 0x67734576u /* "gsEv" */

struct fns {
        gs_nvmlInit_v2_fn init;
        gs_nvmlErrorString_fn error_string;
        gs_nvmlDeviceGetCount_v2_fn count;
        gs_nvmlDeviceGetHandleByIndex_v2_fn by_index;
        gs_nvmlDeviceGetHandleByUUID_fn by_uuid;
        gs_nvmlDeviceGetUUID_fn uuid;
        gs_nvmlDeviceGetMemoryInfo_fn memory;
        gs_nvmlEventSetCreate_fn set_create;
        gs_nvmlDeviceGetSupportedEventTypes_fn supported;
        gs_nvmlDeviceRegisterEvents_fn reg;
        gs_nvmlEventSetWait_v2_fn wait;
        gs_nvmlDeviceGetRemappedRows_fn remapped;          /* NULL: an NVML without them */
        gs_nvmlDeviceGetRetiredPagesPendingStatus_fn retired;
};

struct helper {
        int sock;
        struct fns f;
        unsigned ngpus;
        nvmlDevice_t dev[GS_MAX_GPUS];
        char uuid[GS_MAX_GPUS][GS_STR_LONG];
        nvmlEventSet_t set; /* NULL: no events */
        enum { ST_UNKNOWN, ST_ANSWERS, ST_LOST, ST_PENDING } state[GS_MAX_GPUS]; /* what was last said */
};

/* ------------------------------------------------------------------------------------------ */
/* The helper (child) side                                                                     */

static void send_event(struct helper *h, int kind, int index, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void send_event(struct helper *h, int kind, int index, const char *fmt, ...)
{
        struct gs_nvml_event ev = {.magic = EVENT_MAGIC, .kind = kind, .index = index,
                                   .gi = GS_NVML_INVALID_INSTANCE_ID, .ci = GS_NVML_INVALID_INSTANCE_ID};
        if (index >= 0 && (unsigned)index < h->ngpus)
                gs_strlcpy(ev.uuid, h->uuid[index], sizeof(ev.uuid));
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ev.msg, sizeof(ev.msg), fmt, ap);
        va_end(ap);
        if (send(h->sock, &ev, sizeof(ev), MSG_NOSIGNAL) != (ssize_t)sizeof(ev))
                _exit(0); /* the parent is gone */
}

static const char *nv_err(const struct helper *h, nvmlReturn_t rc)
{
        const char *s = h->f.error_string != NULL ? h->f.error_string(rc) : NULL;
        return s != NULL ? s : "unknown error";
}

static int load(struct helper *h, const char *path)
{
        void *lib = dlopen(path[0] != '\0' ? path : "libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
        if (lib == NULL) {
                const char *e = dlerror();
                send_event(h, GS_NVML_EV_ERROR, -1, "load library failed: %s", e != NULL ? e : "unknown error");
                return -1;
        }
        h->f.init = (gs_nvmlInit_v2_fn)dlsym(lib, "nvmlInit_v2");
        h->f.error_string = (gs_nvmlErrorString_fn)dlsym(lib, "nvmlErrorString");
        h->f.count = (gs_nvmlDeviceGetCount_v2_fn)dlsym(lib, "nvmlDeviceGetCount_v2");
        h->f.by_index = (gs_nvmlDeviceGetHandleByIndex_v2_fn)dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
        h->f.by_uuid = (gs_nvmlDeviceGetHandleByUUID_fn)dlsym(lib, "nvmlDeviceGetHandleByUUID");
        h->f.uuid = (gs_nvmlDeviceGetUUID_fn)dlsym(lib, "nvmlDeviceGetUUID");
        h->f.memory = (gs_nvmlDeviceGetMemoryInfo_fn)dlsym(lib, "nvmlDeviceGetMemoryInfo");
        h->f.set_create = (gs_nvmlEventSetCreate_fn)dlsym(lib, "nvmlEventSetCreate");
        h->f.supported = (gs_nvmlDeviceGetSupportedEventTypes_fn)dlsym(lib, "nvmlDeviceGetSupportedEventTypes");
        h->f.reg = (gs_nvmlDeviceRegisterEvents_fn)dlsym(lib, "nvmlDeviceRegisterEvents");
        h->f.wait = (gs_nvmlEventSetWait_v2_fn)dlsym(lib, "nvmlEventSetWait_v2");
        h->f.remapped = (gs_nvmlDeviceGetRemappedRows_fn)dlsym(lib, "nvmlDeviceGetRemappedRows");
        h->f.retired = (gs_nvmlDeviceGetRetiredPagesPendingStatus_fn)dlsym(lib, "nvmlDeviceGetRetiredPagesPendingStatus");
        if (h->f.init == NULL || h->f.count == NULL || h->f.by_index == NULL || h->f.uuid == NULL ||
            h->f.memory == NULL) {
                send_event(h, GS_NVML_EV_ERROR, -1, "load library failed: %s lacks a basic NVML function", path);
                return -1;
        }
        return 0;
}

/* Handles, UUIDs, and XID registration; the event set or NULL when events are not available. */
static nvmlEventSet_t setup(struct helper *h)
{
        nvmlReturn_t rc = h->f.init();
        unsigned n = 0;
        if (rc == NVML_SUCCESS)
                rc = h->f.count(&n);
        if (rc != NVML_SUCCESS) {
                send_event(h, GS_NVML_EV_ERROR, -1, "nvml error: %s", nv_err(h, rc));
                _exit(1);
        }
        h->ngpus = n < GS_MAX_GPUS ? n : GS_MAX_GPUS;
        nvmlEventSet_t set = NULL;
        bool events = h->f.set_create != NULL && h->f.reg != NULL && h->f.wait != NULL &&
                      h->f.set_create(&set) == NVML_SUCCESS;
        char nosupport[160] = "";
        for (unsigned i = 0; i < h->ngpus; i++) {
                rc = h->f.by_index(i, &h->dev[i]);
                if (rc == NVML_SUCCESS)
                        rc = h->f.uuid(h->dev[i], h->uuid[i], sizeof(h->uuid[i]));
                if (rc != NVML_SUCCESS) {
                        if (rc == NVML_ERROR_GPU_IS_LOST)
                                h->state[i] = ST_LOST;
                        send_event(h, rc == NVML_ERROR_GPU_IS_LOST ? GS_NVML_EV_LOST : GS_NVML_EV_ERROR, (int)i,
                                   "GPU %u: %s", i, nv_err(h, rc));
                        h->dev[i] = NULL;
                        continue;
                }
                unsigned long long types = 0;
                if (events && h->f.supported != NULL && h->f.supported(h->dev[i], &types) != NVML_SUCCESS)
                        types = 0;
                if (!events || !(types & nvmlEventTypeXidCriticalError) ||
                    h->f.reg(h->dev[i], nvmlEventTypeXidCriticalError, set) != NVML_SUCCESS) {
                        size_t l = strlen(nosupport);
                        snprintf(nosupport + l, sizeof(nosupport) - l, "%s%u", l ? "," : "", i);
                }
        }
        send_event(h, GS_NVML_EV_READY, -1, "%s%s", nosupport[0] ? "no XID events on GPU " : "", nosupport);
        h->set = events ? set : NULL;
        return h->set;
}

/* A handle for GPU i where it has none or was lost: by its UUID once known (a GPU back after a
 * reset may have a new handle), else by its index; NVML's answer. */
static nvmlReturn_t handle(struct helper *h, unsigned i)
{
        if (h->dev[i] != NULL && h->state[i] != ST_LOST)
                return NVML_SUCCESS;
        nvmlDevice_t d = NULL;
        nvmlReturn_t rc;
        if (h->uuid[i][0] == '\0') {
                if ((rc = h->f.by_index(i, &d)) == NVML_SUCCESS)
                        rc = h->f.uuid(d, h->uuid[i], sizeof(h->uuid[i]));
        } else if (h->f.by_uuid != NULL) {
                rc = h->f.by_uuid(h->uuid[i], &d);
        } else { /* an old NVML: the handle it had */
                d = h->dev[i];
                rc = d != NULL ? NVML_SUCCESS : NVML_ERROR_GPU_IS_LOST;
        }
        if (rc != NVML_SUCCESS)
                return rc;
        if (d != h->dev[i] && h->set != NULL && h->f.reg != NULL) /* a new handle: its XIDs again */
                h->f.reg(d, nvmlEventTypeXidCriticalError, h->set);
        h->dev[i] = d;
        return NVML_SUCCESS;
}

/* A repair the GPU waits for (a reset to apply a remapped row, or a failed remapping; pages
 * waiting to be retired, before Ampere), where NVML has them: its name, or NULL. */
static const char *repair_pending(const struct helper *h, nvmlDevice_t d)
{
        unsigned corr = 0, unc = 0, pending = 0, failed = 0;
        nvmlEnableState_t retire = NVML_FEATURE_DISABLED;
        if (h->f.remapped != NULL && h->f.remapped(d, &corr, &unc, &pending, &failed) == NVML_SUCCESS &&
            (pending || failed))
                return failed ? "a row remapping failed" : "a remapped row waits for a reset";
        if (h->f.retired != NULL && h->f.retired(d, &retire) == NVML_SUCCESS && retire == NVML_FEATURE_ENABLED)
                return "retired pages wait for a reset";
        return NULL;
}

/* Ask each GPU for its memory: GPU_IS_LOST is said once (LOST); answering, with no repair
 * pending, once at first and again after LOST or PENDING (ALIVE); a repair pending once
 * (PENDING). Returns how many are newly lost. */
static unsigned probe(struct helper *h)
{
        unsigned found = 0;
        for (unsigned i = 0; i < h->ngpus; i++) {
                nvmlMemory_t mem;
                nvmlReturn_t rc = handle(h, i);
                if (rc == NVML_SUCCESS)
                        rc = h->f.memory(h->dev[i], &mem);
                const char *repair = rc == NVML_SUCCESS ? repair_pending(h, h->dev[i]) : NULL;
                if (rc == NVML_ERROR_GPU_IS_LOST && h->state[i] != ST_LOST) {
                        h->state[i] = ST_LOST;
                        found++;
                        send_event(h, GS_NVML_EV_LOST, (int)i, "GPU %u: %s", i, nv_err(h, rc));
                } else if (repair != NULL && h->state[i] != ST_PENDING) {
                        h->state[i] = ST_PENDING;
                        send_event(h, GS_NVML_EV_PENDING, (int)i, "%s", repair);
                } else if (rc == NVML_SUCCESS && repair == NULL && h->state[i] != ST_ANSWERS) {
                        send_event(h, GS_NVML_EV_ALIVE, (int)i, "GPU %u answers%s", i,
                                   h->state[i] == ST_LOST ? " again" : "");
                        h->state[i] = ST_ANSWERS;
                }
        }
        return found;
}

static void on_xid(struct helper *h, const nvmlEventData_t *d)
{
        int index = -1;
        for (unsigned i = 0; i < h->ngpus; i++)
                if (h->dev[i] != NULL && h->dev[i] == d->device)
                        index = (int)i;
        struct gs_nvml_event ev = {.magic = EVENT_MAGIC, .kind = GS_NVML_EV_XID, .index = index,
                                   .gi = d->gpuInstanceId, .ci = d->computeInstanceId, .xid = d->eventData};
        if (index >= 0)
                gs_strlcpy(ev.uuid, h->uuid[index], sizeof(ev.uuid));
        snprintf(ev.msg, sizeof(ev.msg), "XID %llu", (unsigned long long)d->eventData);
        if (send(h->sock, &ev, sizeof(ev), MSG_NOSIGNAL) != (ssize_t)sizeof(ev))
                _exit(0);
}

/* The plugin gone (its end of the socket closed: killed, SIGKILL too): the helper ends. Asked each
 * period, as the helper may have nothing to send for days. */
static void end_with_parent(const struct helper *h)
{
        struct pollfd p = {.fd = h->sock, .events = 0};
        if (poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR | POLLNVAL)))
                _exit(0);
}

static __attribute__((noreturn)) void watch_loop(struct helper *h, nvmlEventSet_t set, unsigned period_ms)
{
        unsigned errors = 0;
        for (;;) {
                end_with_parent(h);
                if (set == NULL) {
                        struct timespec ts = {period_ms / 1000, (long)(period_ms % 1000) * 1000000L};
                        nanosleep(&ts, NULL);
                        probe(h);
                        continue;
                }
                nvmlEventData_t d;
                memset(&d, 0, sizeof(d));
                d.gpuInstanceId = d.computeInstanceId = GS_NVML_INVALID_INSTANCE_ID;
                nvmlReturn_t rc = h->f.wait(set, &d, period_ms);
                if (rc == NVML_SUCCESS) {
                        errors = 0;
                        if (d.eventType & nvmlEventTypeXidCriticalError)
                                on_xid(h, &d);
                } else if (rc == NVML_ERROR_GPU_IS_LOST) {
                        if (probe(h) == 0)
                                send_event(h, GS_NVML_EV_LOST, -1, "%s", nv_err(h, rc));
                } else if (rc != NVML_ERROR_TIMEOUT) {
                        send_event(h, GS_NVML_EV_ERROR, -1, "nvmlEventSetWait: %s", nv_err(h, rc));
                        if (++errors >= 10)
                                _exit(1); /* the parent starts a new helper */
                        sleep(1);
                }
                probe(h);
        }
}

/* Close every descriptor but stdio and `keep`: the helper must not hold the plugin's sockets open
 * (a connection the plugin closes would stay open for its peer). */
static void close_others(int keep, int keep2)
{
        DIR *d = opendir("/proc/self/fd");
        if (d == NULL) {
                for (int fd = 3; fd < 1024; fd++)
                        if (fd != keep && fd != keep2)
                                close(fd);
                return;
        }
        int dfd = dirfd(d);
        struct dirent *e;
        int fds[1024], n = 0;
        while ((e = readdir(d)) != NULL && n < 1024) {
                int fd = atoi(e->d_name);
                if (fd > 2 && fd != keep && fd != keep2 && fd != dfd)
                        fds[n++] = fd;
        }
        closedir(d);
        for (int i = 0; i < n; i++)
                close(fds[i]);
}

static __attribute__((noreturn)) void helper_main(struct gs_context *ctx, const char *nvml_path, int sock,
                                                  unsigned period_ms)
{
        struct helper h = {.sock = sock};
        pid_t parent = getppid();
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        prctl(PR_SET_NAME, "gpuslice-health");
        int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (devnull >= 0) {
                dup2(devnull, STDIN_FILENO);
                dup2(devnull, STDOUT_FILENO);
                close(devnull);
        }
        close_others(sock, ctx->rootfd); /* keep none of the plugin's sockets open */
        char msg[GS_ERRMSG_MAX];
        if (gs_nvml_confine(ctx, msg, sizeof(msg)) < 0) {
                send_event(&h, GS_NVML_EV_ERROR, -1, "%s", msg);
                _exit(1);
        }
        /* the identity change cleared the parent-death signal: set again (a parent gone meanwhile
         * is seen by getppid) */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
                _exit(0);
        if (load(&h, nvml_path) < 0)
                _exit(1);
        nvmlEventSet_t set = setup(&h);
        watch_loop(&h, set, period_ms);
}

/* ------------------------------------------------------------------------------------------ */
/* The parent side                                                                             */

int gs_nvml_watch_start(struct gs_context *ctx, unsigned period_ms, struct gs_nvml_watch *w, struct gs_error *err)
{
        char path[PATH_MAX] = "";
        if (!gs_nvml_library_path(ctx, path, sizeof(path)))
                gs_log_warn("libnvidia-ml.so.1 not in the root's ldcache; letting the loader search");
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                return gs_error_sys(err, "socketpair");
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) {
                close(sv[0]);
                close(sv[1]);
                return gs_error_sys(err, "fork");
        }
        if (pid == 0) {
                close(sv[0]);
                helper_main(ctx, path, sv[1], period_ms);
        }
        close(sv[1]);
        if (fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK) < 0) {
                close(sv[0]);
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
                return gs_error_sys(err, "fcntl");
        }
        w->pid = pid;
        w->fd = sv[0];
        return 0;
}

int gs_nvml_watch_read(struct gs_nvml_watch *w, struct gs_nvml_event *ev)
{
        ssize_t n = recv(w->fd, ev, sizeof(*ev), MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
                return 0;
        if (n != (ssize_t)sizeof(*ev) || ev->magic != EVENT_MAGIC)
                return -1;
        ev->uuid[sizeof(ev->uuid) - 1] = '\0';
        ev->msg[sizeof(ev->msg) - 1] = '\0';
        return 1;
}

void gs_nvml_watch_stop(struct gs_nvml_watch *w)
{
        if (w->fd >= 0)
                close(w->fd);
        w->fd = -1;
        if (w->pid > 0) {
                kill(w->pid, SIGKILL);
                while (waitpid(w->pid, NULL, 0) < 0 && errno == EINTR) {
                }
        }
        w->pid = -1;
}
