/* An application XID marks its process's share (see dra/appxid.h). */
#include "dra/appxid.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/error.h"
#include "common/privilege.h"
#include "common/strutil.h"
#include "dra/checkpoint.h"
#include "dra/slices.h"
#include "dra/status.h"
#include "driver/xidlog.h"
#include "observe/collect.h"

#define GAP_MS 60000       /* one condition write and Event a share a minute at most */
#define RETRY_MS 5000      /* a refused write tried again */
#define LINES_PER_TICK 256 /* the log's lines read in one turn of the loop */
#define PENDING_MAX 64     /* application XIDs with a pid handled in one turn (the others: counted, said) */
#define SHARES_MAX 256
#define FAR_MS 3600000

struct share {
        char uid[64], ns[64], name[254], pool[254], device[64], share_id[64];
        unsigned long long count;     /* application XIDs of its processes */
        unsigned long long told;      /* ... of them in an Event */
        struct gs_xid_record last;
        char since[32], last_at[32];  /* RFC 3339: the first one (lastTransitionTime), the last one */
        bool due;                     /* something new to write */
        long long event_at, retry_at; /* gs_now_ms: the last write and Event; a refused one's retry */
};

struct gs_dra_appxid {
        struct gs_dra_prep *prep;
        void (*note)(void *ud, const char *line);
        void *ud;
        struct gs_xidlog log;
        struct gs_collector *col;
        unsigned file_period_ms;
        long long read_at;            /* a regular file: read again then */
        struct gs_xid_record pend[PENDING_MAX];
        size_t npend;
        unsigned long long dropped, lost_said;
        char write_noted[256];        /* the last write error said ("": none) */
        struct share s[SHARES_MAX];
        size_t n;
};

#define say(x, ...) gs_dra_say((x)->note, (x)->ud, __VA_ARGS__)

/* The kernel's pids are the host's: they name processes only in the host's pid namespace. */
static bool host_pidns(void)
{
        struct stat st;
        return stat("/proc/self/ns/pid", &st) == 0 && st.st_ino == 0xEFFFFFFCu; /* PROC_PID_INIT_INO */
}

struct gs_dra_appxid *gs_dra_appxid_new(struct gs_dra_prep *prep, const char *path, const char *regions_dir,
                                        unsigned file_period_ms, void (*note)(void *ud, const char *line), void *ud)
{
        struct gs_error err = {0};
        struct gs_dra_appxid *a = calloc(1, sizeof(*a));
        if (a == NULL)
                return NULL;
        a->prep = prep;
        a->note = note;
        a->ud = ud;
        a->file_period_ms = file_period_ms ? file_period_ms : 1000;
        a->log.fd = -1;
        if (!host_pidns()) {
                say(a, "application XIDs: not in the host's pid namespace, the kernel's pids name no process here: "
                       "they mark no share (run with the host's pid namespace)");
                gs_dra_appxid_free(a);
                return NULL;
        }
        struct gs_collector_opts co = {.regions_dir = regions_dir, .log = note, .log_arg = ud};
        if ((a->col = gs_collector_new(&co, &err)) == NULL || gs_xidlog_open(&a->log, path, &err) < 0) {
                say(a, "application XIDs: %s: they mark no share", err.msg);
                gs_dra_appxid_free(a);
                return NULL;
        }
        say(a, "application XIDs: reading %s: an XID of a slice's process marks its claim's share", path);
        return a;
}

void gs_dra_appxid_free(struct gs_dra_appxid *a)
{
        if (a == NULL)
                return;
        gs_xidlog_close(&a->log);
        gs_collector_free(a->col);
        free(a);
}

int gs_dra_appxid_fd(const struct gs_dra_appxid *a)
{
        return a != NULL ? gs_xidlog_fd(&a->log) : -1;
}

/* The GPU of ours at the line's PCI address, or -1. */
static int gpu_at(const struct gs_device_info *dev, const struct gs_xid_record *r)
{
        for (unsigned i = 0; i < dev->ngpus; i++) {
                unsigned d, b, s, f;
                if (sscanf(dev->gpus[i].bus_id, "%x:%x:%x.%x", &d, &b, &s, &f) == 4 && d == r->domain && b == r->bus &&
                    s == r->device)
                        return (int)i;
        }
        return -1;
}

static void on_record(void *ud, const struct gs_xid_record *r)
{
        struct gs_dra_appxid *a = ud;
        if (!gs_xid_application(r->xid))
                return; /* a critical one: NVML's event taints the GPU (kubelet/health.c) */
        if (r->pid <= 0) {
                say(a, "application XID %llu (%s) at PCI %04x:%02x:%02x: the driver names no process: no share marked",
                    r->xid, gs_xid_meaning(r->xid), r->domain, r->bus, r->device);
                return;
        }
        if (a->npend == PENDING_MAX) {
                a->dropped++;
                return;
        }
        a->pend[a->npend++] = *r;
}

static const char *str_of(json_object *o, const char *key)
{
        json_object *v = NULL;
        return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string) ? json_object_get_string(v)
                                                                                                  : "";
}

static struct share *share_get(struct gs_dra_appxid *a, const char *uid, const char *device)
{
        for (size_t i = 0; i < a->n; i++)
                if (strcmp(a->s[i].uid, uid) == 0 && strcmp(a->s[i].device, device) == 0)
                        return &a->s[i];
        if (a->n == SHARES_MAX)
                return NULL;
        struct share *s = &a->s[a->n++];
        memset(s, 0, sizeof(*s));
        gs_strlcpy(s->uid, uid, sizeof(s->uid));
        gs_strlcpy(s->device, device, sizeof(s->device));
        return s;
}

static void rfc3339(char *buf, size_t len)
{
        time_t t = time(NULL);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The prepared claim ns/name's devices on GPU g: each share's count up. How many were marked. */
static unsigned mark(struct gs_dra_appxid *a, const char *ns, const char *name, unsigned g, const struct gs_xid_record *r)
{
        unsigned marked = 0;
        struct gs_error e = {0};
        if (gs_dra_ck_begin(a->prep, &e) < 0)
                return 0;
        json_object_object_foreach(a->prep->claims, uid, entry) {
                json_object *devs = NULL;
                if (strcmp(str_of(entry, "namespace"), ns) != 0 || strcmp(str_of(entry, "name"), name) != 0 ||
                    !json_object_object_get_ex(entry, "devices", &devs) || !json_object_is_type(devs, json_type_array))
                        continue;
                for (size_t k = 0; k < json_object_array_length(devs); k++) {
                        json_object *d = json_object_array_get_idx(devs, k);
                        unsigned gpu;
                        int mig;
                        if (gs_dra_device_lookup(a->prep->dev, str_of(d, "device"), &gpu, &mig, &e) < 0 || gpu != g)
                                continue;
                        struct share *s = share_get(a, uid, str_of(d, "device"));
                        if (s == NULL)
                                continue;
                        gs_strlcpy(s->ns, ns, sizeof(s->ns));
                        gs_strlcpy(s->name, name, sizeof(s->name));
                        gs_strlcpy(s->pool, str_of(d, "pool"), sizeof(s->pool));
                        gs_strlcpy(s->share_id, str_of(d, "share_id"), sizeof(s->share_id));
                        if (s->count++ == 0)
                                rfc3339(s->since, sizeof(s->since));
                        rfc3339(s->last_at, sizeof(s->last_at));
                        s->last = *r;
                        s->due = true;
                        marked++;
                }
        }
        gs_dra_ck_end(a->prep);
        return marked;
}

/* One pending XID: its process's slice, the slice's claim, the claim's share on the GPU. */
static void attribute(struct gs_dra_appxid *a, const struct gs_observation *obs, const struct gs_xid_record *r)
{
        int g = gpu_at(a->prep->dev, r);
        size_t idx[8];
        size_t n = 0;
        if (g >= 0) { /* another user's /proc/<pid>/ns needs CAP_SYS_PTRACE: only for this (as top --pids) */
                gs_caps_enter(GS_STAGE_CONTAINER, NULL);
                n = gs_obs_slices_of_host_pid(obs, r->pid, idx, 8);
                gs_caps_enter(GS_STAGE_INIT, NULL);
        }
        const struct gs_obs_slice *sl = n > 0 && n <= 8 ? &obs->slices[idx[0]] : NULL;
        for (size_t i = 1; sl != NULL && i < n; i++)
                if (strcmp(obs->slices[idx[i]].labels.ns, sl->labels.ns) != 0 ||
                    strcmp(obs->slices[idx[i]].labels.claim, sl->labels.claim) != 0)
                        sl = NULL; /* slices of several claims name it: none is believed */
        const char *why = g < 0 ? "not a GPU of ours"
                          : n == 0 ? "no slice's process (gone already, or outside every slice)"
                          : sl == NULL ? "slices of several claims name it"
                          : sl->labels.claim[0] == '\0' ? "its slice belongs to no claim"
                          : NULL;
        if (why == NULL && mark(a, sl->labels.ns, sl->labels.claim, (unsigned)g, r) == 0)
                why = "its claim has no prepared share on that GPU";
        if (why != NULL) {
                say(a, "application XID %llu (%s) at PCI %04x:%02x:%02x, pid %d (%s): %s: no share marked", r->xid,
                    gs_xid_meaning(r->xid), r->domain, r->bus, r->device, r->pid, r->name, why);
                return;
        }
        say(a, "application XID %llu (%s) on GPU %d, pid %d (%s): a process of claim %s/%s: its share is marked, "
               "the GPU stays healthy", r->xid, gs_xid_meaning(r->xid), g, r->pid, r->name, sl->labels.ns,
            sl->labels.claim);
}

static json_object *condition_of(const struct share *s)
{
        char reason[32], msg[768];
        snprintf(reason, sizeof(reason), "Xid%llu", s->last.xid);
        snprintf(msg, sizeof(msg), "XID %llu (%s) in process %d (%s) at %s: %s; %llu application XID(s) from this "
                 "share's processes since %s; the GPU and the other shares are not affected", s->last.xid,
                 gs_xid_meaning(s->last.xid), s->last.pid, s->last.name[0] ? s->last.name : "?", s->last_at,
                 s->last.text, s->count, s->since);
        json_object *c = json_object_new_object(), *list = json_object_new_array();
        json_object_object_add(c, "type", json_object_new_string("ApplicationError"));
        json_object_object_add(c, "status", json_object_new_string("True"));
        json_object_object_add(c, "reason", json_object_new_string(reason));
        json_object_object_add(c, "message", json_object_new_string(msg));
        json_object_object_add(c, "lastTransitionTime", json_object_new_string(s->since));
        json_object_array_add(list, c);
        return list;
}

/* Every marked share of s's claim in one apply (an entry the manager leaves out would lose its
 * condition), then the Event of s. */
static void write_claim(struct gs_dra_appxid *a, struct share *s, long long now)
{
        struct gs_dra_status_entry e[GS_DRA_MAX_RESULTS] = {{0}};
        size_t n = 0;
        for (size_t i = 0; i < a->n && n < GS_DRA_MAX_RESULTS; i++)
                if (strcmp(a->s[i].uid, s->uid) == 0)
                        e[n++] = (struct gs_dra_status_entry){a->s[i].pool, a->s[i].device, a->s[i].share_id,
                                                              condition_of(&a->s[i])};
        struct gs_error err = {0};
        int rc = gs_dra_status_conditions(a->prep->api, a->prep->driver, s->ns, s->name, s->uid, e, n, &err);
        for (size_t i = 0; i < n; i++)
                json_object_put(e[i].data);
        if (rc < 0) { /* said once per error, not at every retry */
                if (strcmp(a->write_noted, err.msg) != 0)
                        say(a, "cannot write the ApplicationError condition on claim %s/%s: %s", s->ns, s->name, err.msg);
                gs_strlcpy(a->write_noted, err.msg, sizeof(a->write_noted));
                s->retry_at = now + RETRY_MS;
                return;
        }
        a->write_noted[0] = '\0';
        char msg[768];
        snprintf(msg, sizeof(msg), "XID %llu (%s) in process %d (%s) of the claim's share of %s: %s (%llu application "
                 "XID(s) since the last Event); the GPU and the other shares are not affected", s->last.xid,
                 gs_xid_meaning(s->last.xid), s->last.pid, s->last.name[0] ? s->last.name : "?", s->device,
                 s->last.text, s->count - s->told);
        if (gs_dra_event_claim(a->prep->api, a->prep->driver, a->prep->node, s->ns, s->name, s->uid, "ApplicationError",
                               msg, &err) < 0)
                say(a, "cannot post the ApplicationError Event on claim %s/%s: %s", s->ns, s->name, err.msg);
        s->told = s->count;
        s->due = false;
        s->event_at = now;
}

/* The shares whose claim is no longer prepared are forgotten. */
static void forget_gone(struct gs_dra_appxid *a)
{
        struct gs_error e = {0};
        if (a->n == 0 || gs_dra_ck_begin(a->prep, &e) < 0)
                return;
        size_t k = 0;
        for (size_t i = 0; i < a->n; i++)
                if (json_object_object_get_ex(a->prep->claims, a->s[i].uid, NULL))
                        a->s[k++] = a->s[i];
        a->n = k;
        gs_dra_ck_end(a->prep);
}

static void read_log(struct gs_dra_appxid *a)
{
        struct gs_error err = {0};
        if (gs_xidlog_read(&a->log, LINES_PER_TICK, on_record, a, &err) < 0) {
                say(a, "application XIDs: %s: the kernel's log is no longer read", err.msg);
                gs_xidlog_close(&a->log);
        }
        if (a->log.lost != a->lost_said) {
                say(a, "application XIDs: %llu kernel log record(s) overwritten before they were read",
                    a->log.lost - a->lost_said);
                a->lost_said = a->log.lost;
        }
        if (a->dropped > 0) {
                say(a, "application XIDs: %llu more in one turn than can be followed: not attributed", a->dropped);
                a->dropped = 0;
        }
        if (a->npend == 0)
                return;
        if (a->n > SHARES_MAX / 2)
                forget_gone(a); /* room for new shares: those of claims unprepared since go */
        struct gs_observation obs;
        if (gs_collector_scan(a->col, &obs, &err) == 0) {
                for (size_t i = 0; i < a->npend; i++)
                        attribute(a, &obs, &a->pend[i]);
                gs_observation_release(&obs);
        }
        a->npend = 0;
}

/* When a share's news may go out: a minute after its last, or its retry. */
static long long due_at(const struct share *s)
{
        long long at = s->event_at != 0 ? s->event_at + GAP_MS : 0;
        return at > s->retry_at ? at : s->retry_at;
}

long long gs_dra_appxid_tick(struct gs_dra_appxid *a, long long now)
{
        long long next = now + FAR_MS;
        if (a->log.pollable || now >= a->read_at) {
                read_log(a);
                a->read_at = now + a->file_period_ms;
        }
        if (!a->log.pollable && a->log.fd >= 0)
                next = a->read_at;
        bool ready = false;
        for (size_t i = 0; i < a->n; i++)
                ready |= a->s[i].due && now >= due_at(&a->s[i]);
        if (ready)
                forget_gone(a); /* (before a write: not at every turn of the loop) */
        for (size_t i = 0; i < a->n; i++) {
                struct share *s = &a->s[i];
                if (!s->due)
                        continue;
                long long at = due_at(s);
                if (now >= at) {
                        write_claim(a, s, now);
                        at = s->due ? s->retry_at : now + FAR_MS;
                }
                next = at < next ? at : next;
        }
        return next;
}
