/* SPDX-License-Identifier: Apache-2.0 */
/* fakegpu configuration parser. Format: see README.md. */
#include "fakegpu_config.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FG_MAX_FILE (1u << 20)

struct parser {
    const char *name;
    unsigned line;
    char *err;
    size_t errlen;
    struct fg_config *cfg;
    struct fg_gpu *gpu;       /* GPU block being filled, or NULL */
};

__attribute__((format(printf, 2, 3)))
static int fail(struct parser *p, const char *fmt, ...)
{
    char msg[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (p->err != NULL && p->errlen > 0) {
        if (p->line > 0)
            snprintf(p->err, p->errlen, "%s:%u: %s", p->name, p->line, msg);
        else
            snprintf(p->err, p->errlen, "%s: %s", p->name, msg);
    }
    return -1;
}

const char *fg_config_path(void)
{
    const char *env = getenv(FG_CONFIG_ENV);

    return (env != NULL && env[0] != '\0') ? env : FG_DEFAULT_CONFIG_PATH;
}

static int parse_uint(const char *s, unsigned long long max, unsigned long long *out)
{
    char *end;
    unsigned long long v;

    if (s == NULL || *s == '\0' || *s == '-' || isspace((unsigned char)*s))
        return -1;
    errno = 0;
    v = strtoull(s, &end, 0);
    if (errno != 0 || *end != '\0' || v > max)
        return -1;
    *out = v;
    return 0;
}

int fg_parse_size(const char *s, unsigned long long *out)
{
    static const struct { const char *suffix; unsigned long long mult; } units[] = {
        { "",    1ULL },
        { "B",   1ULL },
        { "K",   1024ULL },            { "KiB", 1024ULL },            { "KB", 1000ULL },
        { "M",   1024ULL * 1024 },     { "MiB", 1024ULL * 1024 },     { "MB", 1000ULL * 1000 },
        { "G",   1024ULL << 20 },      { "GiB", 1024ULL << 20 },      { "GB", 1000ULL * 1000 * 1000 },
        { "T",   1024ULL << 30 },      { "TiB", 1024ULL << 30 },      { "TB", 1000ULL * 1000 * 1000 * 1000 },
    };
    char *end;
    unsigned long long v;

    if (s == NULL || !isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0)
        return -1;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcmp(end, units[i].suffix) == 0) {
            if (v > ULLONG_MAX / units[i].mult)
                return -1;
            *out = v * units[i].mult;
            return 0;
        }
    }
    return -1;
}

static const char *const brand_names[] = {
    [0] = "Unknown",   [1] = "Quadro",      [2] = "Tesla",     [3] = "NVS",
    [4] = "GRID",      [5] = "GeForce",     [6] = "TITAN",     [7] = "VApps",
    [8] = "VPC",       [9] = "VCS",         [10] = "VWS",      [11] = "CloudGaming",
    [12] = "QuadroRTX", [13] = "NvidiaRTX", [14] = "Nvidia",   [15] = "GeForceRTX",
    [16] = "TitanRTX",
};

int fg_brand_from_name(const char *s)
{
    for (size_t i = 0; i < sizeof(brand_names) / sizeof(brand_names[0]); i++)
        if (strcasecmp(s, brand_names[i]) == 0)
            return (int)i;
    return -1;
}

const char *fg_brand_name(int brand)
{
    if (brand < 0 || (size_t)brand >= sizeof(brand_names) / sizeof(brand_names[0]))
        return "Unknown";
    return brand_names[brand];
}

void fg_gpu_busid(const struct fg_gpu *gpu, char *buf, size_t len)
{
    snprintf(buf, len, "%08X:%02X:%02X.%X", gpu->domain, gpu->bus, gpu->device, gpu->function);
}

static char *trim(char *s)
{
    char *e;

    while (isspace((unsigned char)*s))
        s++;
    e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

static int copy_str(struct parser *p, char *dst, size_t len, const char *src, const char *what)
{
    if (*src == '\0')
        return fail(p, "%s: empty value", what);
    if (strlen(src) >= len)
        return fail(p, "%s: value too long (max %zu characters)", what, len - 1);
    memcpy(dst, src, strlen(src) + 1);
    return 0;
}

/* "key=value key2=value2" -> calls back per pair. */
typedef int (*kv_fn)(struct parser *p, void *obj, const char *key, const char *val);

static int parse_kv(struct parser *p, char *args, void *obj, kv_fn fn)
{
    char *save = NULL;

    for (char *tok = strtok_r(args, " \t", &save); tok != NULL; tok = strtok_r(NULL, " \t", &save)) {
        char *eq = strchr(tok, '=');

        if (eq == NULL || eq == tok)
            return fail(p, "expected key=value, got '%s'", tok);
        *eq = '\0';
        if (fn(p, obj, tok, eq + 1) < 0)
            return -1;
    }
    return 0;
}

static int parse_cc(struct parser *p, const char *v, int *major, int *minor)
{
    int ma, mi, n = 0;

    if (sscanf(v, "%d.%d%n", &ma, &mi, &n) != 2 || v[n] != '\0' || ma < 1 || ma > 99 || mi < 0 || mi > 9)
        return fail(p, "arch: expected a compute capability like 9.0, got '%s'", v);
    *major = ma;
    *minor = mi;
    return 0;
}

static int parse_busid(struct parser *p, struct fg_gpu *g, const char *v)
{
    unsigned dom, bus, dev, fn;
    int n = 0;

    if (sscanf(v, "%x:%x:%x.%x%n", &dom, &bus, &dev, &fn, &n) != 4 || v[n] != '\0' ||
        bus > 0xff || dev > 0x1f || fn > 7)
        return fail(p, "bus: expected a PCI bus id like 00000000:3B:00.0, got '%s'", v);
    g->domain = dom;
    g->bus = bus;
    g->device = dev;
    g->function = fn;
    return 0;
}

static int mig_kv(struct parser *p, void *obj, const char *key, const char *val)
{
    struct fg_mig *m = obj;
    unsigned long long v;

    if (strcmp(key, "gi") == 0 || strcmp(key, "ci") == 0 || strcmp(key, "index") == 0) {
        if (parse_uint(val, strcmp(key, "index") == 0 ? FG_MAX_MIG - 1 : 255, &v) < 0)
            return fail(p, "mig_device: bad %s '%s'", key, val);
        if (key[0] == 'g')
            m->gi = (unsigned)v;
        else if (key[0] == 'c')
            m->ci = (unsigned)v;
        else
            m->index = (unsigned)v;
        return 0;
    }
    if (strcmp(key, "uuid") == 0) {
        if (strncmp(val, "MIG-", 4) != 0)
            return fail(p, "mig_device: uuid must start with MIG-, got '%s'", val);
        return copy_str(p, m->uuid, sizeof(m->uuid), val, "mig_device uuid");
    }
    if (strcmp(key, "memory") == 0) {
        if (fg_parse_size(val, &m->memory) < 0)
            return fail(p, "mig_device: bad memory size '%s'", val);
        return 0;
    }
    if (strcmp(key, "profile") == 0)
        return copy_str(p, m->profile, sizeof(m->profile), val, "mig_device profile");
    return fail(p, "mig_device: unknown key '%s'", key);
}

static int proc_kv(struct parser *p, void *obj, const char *key, const char *val)
{
    struct fg_process *pr = obj;
    unsigned long long v;

    if (strcmp(key, "used") == 0) {
        if (fg_parse_size(val, &pr->used) < 0)
            return fail(p, "process: bad used size '%s'", val);
        return 0;
    }
    if (strcmp(key, "gpu") == 0 || strcmp(key, "pid") == 0 || strcmp(key, "mig") == 0 ||
        strcmp(key, "sm") == 0 || strcmp(key, "mem") == 0) {
        unsigned long long max = strcmp(key, "pid") == 0 ? INT_MAX :
                                 (strcmp(key, "sm") == 0 || strcmp(key, "mem") == 0) ? 100 : 1024;

        if (parse_uint(val, max, &v) < 0)
            return fail(p, "process: bad %s '%s'", key, val);
        if (strcmp(key, "gpu") == 0)
            pr->gpu = (unsigned)v;
        else if (strcmp(key, "pid") == 0)
            pr->pid = (unsigned)v;
        else if (strcmp(key, "mig") == 0)
            pr->mig = (int)v;
        else if (strcmp(key, "sm") == 0)
            pr->sm_util = (unsigned)v;
        else
            pr->mem_util = (unsigned)v;
        return 0;
    }
    return fail(p, "process: unknown key '%s'", key);
}

static int util_kv(struct parser *p, void *obj, const char *key, const char *val)
{
    struct fg_gpu *g = obj;
    unsigned long long v;

    if (parse_uint(val, 100, &v) < 0)
        return fail(p, "utilization: bad percentage '%s'", val);
    if (strcmp(key, "gpu") == 0)
        g->util_gpu = (unsigned)v;
    else if (strcmp(key, "memory") == 0)
        g->util_mem = (unsigned)v;
    else
        return fail(p, "utilization: unknown key '%s' (gpu=, memory=)", key);
    return 0;
}

static int parse_fault(struct parser *p, char *args)
{
    struct fg_fault *f;
    char *save = NULL;
    char *func = strtok_r(args, " \t", &save);
    char *action = strtok_r(NULL, " \t", &save);
    char *arg = strtok_r(NULL, " \t", &save);
    unsigned long long v;

    if (func == NULL || action == NULL)
        return fail(p, "fault: expected 'fault <function|init> <error CODE|hang|crash|delay MS>'");
    if (p->cfg->nfaults >= FG_MAX_FAULTS)
        return fail(p, "fault: too many faults (max %d)", FG_MAX_FAULTS);
    f = &p->cfg->faults[p->cfg->nfaults];
    memset(f, 0, sizeof(*f));
    if (copy_str(p, f->func, sizeof(f->func), func, "fault function") < 0)
        return -1;
    if (strcmp(action, "error") == 0) {
        f->action = FG_FAULT_ERROR;
        if (arg == NULL)
            return fail(p, "fault: 'error' needs an error name or number");
        if (copy_str(p, f->arg, sizeof(f->arg), arg, "fault error") < 0)
            return -1;
    } else if (strcmp(action, "hang") == 0) {
        f->action = FG_FAULT_HANG;
    } else if (strcmp(action, "crash") == 0) {
        f->action = FG_FAULT_CRASH;
    } else if (strcmp(action, "delay") == 0) {
        f->action = FG_FAULT_DELAY;
        if (arg == NULL || parse_uint(arg, 3600000, &v) < 0)
            return fail(p, "fault: 'delay' needs milliseconds");
        f->delay_ms = (unsigned)v;
    } else {
        return fail(p, "fault: unknown action '%s' (error, hang, crash, delay)", action);
    }
    if ((f->action == FG_FAULT_HANG || f->action == FG_FAULT_CRASH) && arg != NULL)
        return fail(p, "fault: unexpected argument '%s'", arg);
    if (strtok_r(NULL, " \t", &save) != NULL)
        return fail(p, "fault: trailing arguments");
    p->cfg->nfaults++;
    return 0;
}

static int parse_gpu_key(struct parser *p, const char *key, char *val)
{
    struct fg_gpu *g = p->gpu;
    unsigned long long v;

    if (strcmp(key, "name") == 0)
        return copy_str(p, g->name, sizeof(g->name), val, "name");
    if (strcmp(key, "uuid") == 0) {
        if (strncmp(val, "GPU-", 4) != 0)
            return fail(p, "uuid must start with GPU-, got '%s'", val);
        return copy_str(p, g->uuid, sizeof(g->uuid), val, "uuid");
    }
    if (strcmp(key, "bus") == 0)
        return parse_busid(p, g, val);
    if (strcmp(key, "minor") == 0) {
        if (parse_uint(val, 253, &v) < 0)
            return fail(p, "minor: expected 0..253, got '%s'", val);
        g->minor = (unsigned)v;
        return 0;
    }
    if (strcmp(key, "memory") == 0 || strcmp(key, "reserved") == 0 || strcmp(key, "used") == 0) {
        unsigned long long *dst = key[0] == 'm' ? &g->memory : key[0] == 'r' ? &g->reserved : &g->used;

        if (fg_parse_size(val, dst) < 0)
            return fail(p, "%s: bad size '%s' (bytes, or with K/M/G/T, KiB/MiB/GiB/TiB, KB/MB/GB/TB)", key, val);
        return 0;
    }
    if (strcmp(key, "arch") == 0)
        return parse_cc(p, val, &g->cc_major, &g->cc_minor);
    if (strcmp(key, "sm_count") == 0) {
        if (parse_uint(val, 1024, &v) < 0 || v == 0)
            return fail(p, "sm_count: expected 1..1024, got '%s'", val);
        g->sm_count = (unsigned)v;
        return 0;
    }
    if (strcmp(key, "brand") == 0) {
        int b = fg_brand_from_name(val);

        if (b < 0)
            return fail(p, "brand: unknown brand '%s'", val);
        g->brand = b;
        return 0;
    }
    if (strcmp(key, "mig") == 0) {
        if (strcmp(val, "on") == 0)
            g->mig = FG_MIG_ON;
        else if (strcmp(val, "off") == 0)
            g->mig = FG_MIG_OFF;
        else if (strcmp(val, "unsupported") == 0)
            g->mig = FG_MIG_UNSUPPORTED;
        else
            return fail(p, "mig: expected on, off or unsupported, got '%s'", val);
        return 0;
    }
    if (strcmp(key, "mig_max") == 0) {
        if (parse_uint(val, FG_MAX_MIG, &v) < 0)
            return fail(p, "mig_max: expected 0..%d, got '%s'", FG_MAX_MIG, val);
        g->mig_max = (unsigned)v;
        return 0;
    }
    if (strcmp(key, "pci_device_id") == 0 || strcmp(key, "pci_subsystem_id") == 0) {
        if (parse_uint(val, 0xffffffffULL, &v) < 0)
            return fail(p, "%s: expected a 32-bit number, got '%s'", key, val);
        if (key[4] == 'd')
            g->pci_device_id = (unsigned)v;
        else
            g->pci_subsystem_id = (unsigned)v;
        return 0;
    }
    if (strcmp(key, "utilization") == 0)
        return parse_kv(p, val, g, util_kv);
    if (strcmp(key, "mig_device") == 0) {
        struct fg_mig *m;

        if (g->nmig >= FG_MAX_MIG)
            return fail(p, "mig_device: too many MIG devices (max %d)", FG_MAX_MIG);
        m = &g->migs[g->nmig];
        memset(m, 0, sizeof(*m));
        m->gi = m->ci = m->index = UINT_MAX;
        if (parse_kv(p, val, m, mig_kv) < 0)
            return -1;
        if (m->gi == UINT_MAX || m->ci == UINT_MAX || m->uuid[0] == '\0' || m->memory == 0)
            return fail(p, "mig_device: gi=, ci=, uuid= and memory= are required");
        if (m->index == UINT_MAX) {
            /* Next index after the highest one used so far. */
            m->index = 0;
            for (unsigned i = 0; i < g->nmig; i++)
                if (g->migs[i].index >= m->index)
                    m->index = g->migs[i].index + 1;
        }
        if (m->profile[0] == '\0')
            snprintf(m->profile, sizeof(m->profile), "%ug.%llugb", 1u,
                     (m->memory + (1ULL << 30) - 1) >> 30);
        g->nmig++;
        return 0;
    }
    return fail(p, "unknown key '%s'", key);
}

static int check_config(struct parser *p)
{
    struct fg_config *c = p->cfg;

    p->line = 0;
    if (c->driver[0] == '\0')
        return fail(p, "missing 'driver <version>'");
    if (c->cuda == 0)
        return fail(p, "missing 'cuda <major.minor>'");
    if (c->nvml_version[0] == '\0')
        snprintf(c->nvml_version, sizeof(c->nvml_version), "%d.%s", c->cuda / 1000, c->driver);
    for (unsigned i = 0; i < c->ngpus; i++) {
        struct fg_gpu *g = &c->gpus[i];

        if (g->name[0] == '\0' || g->uuid[0] == '\0' || g->memory == 0 || g->cc_major == 0)
            return fail(p, "gpu %u: name, uuid, memory and arch are required", i);
        if (g->reserved + g->used > g->memory)
            return fail(p, "gpu %u: reserved + used exceed memory", i);
        if (g->mig != FG_MIG_ON && g->nmig > 0)
            return fail(p, "gpu %u: mig_device given but 'mig on' is not set", i);
        if (g->mig == FG_MIG_ON && g->mig_max == 0)
            g->mig_max = 7;
        for (unsigned m = 0; m < g->nmig; m++)
            if (g->migs[m].index >= g->mig_max)
                return fail(p, "gpu %u: MIG index %u not below mig_max (%u)", i, g->migs[m].index, g->mig_max);
        for (unsigned j = 0; j < i; j++) {
            const struct fg_gpu *o = &c->gpus[j];

            if (strcasecmp(o->uuid, g->uuid) == 0)
                return fail(p, "gpu %u: uuid %s already used by gpu %u", i, g->uuid, j);
            if (o->minor == g->minor)
                return fail(p, "gpu %u: minor %u already used by gpu %u", i, g->minor, j);
            if (o->domain == g->domain && o->bus == g->bus && o->device == g->device &&
                o->function == g->function)
                return fail(p, "gpu %u: bus id already used by gpu %u", i, j);
        }
        for (unsigned m = 0; m < g->nmig; m++)
            for (unsigned n = 0; n < m; n++) {
                if (strcasecmp(g->migs[m].uuid, g->migs[n].uuid) == 0)
                    return fail(p, "gpu %u: MIG uuid %s given twice", i, g->migs[m].uuid);
                if (g->migs[m].index == g->migs[n].index)
                    return fail(p, "gpu %u: MIG index %u given twice", i, g->migs[m].index);
                if (g->migs[m].gi == g->migs[n].gi && g->migs[m].ci == g->migs[n].ci)
                    return fail(p, "gpu %u: MIG gi=%u ci=%u given twice", i, g->migs[m].gi, g->migs[m].ci);
            }
    }
    for (unsigned i = 0; i < c->nprocs; i++) {
        const struct fg_process *pr = &c->procs[i];

        if (pr->gpu >= c->ngpus)
            return fail(p, "process %u: gpu=%u does not exist", pr->pid, pr->gpu);
        if (pr->mig >= 0 && (unsigned)pr->mig >= c->gpus[pr->gpu].nmig)
            return fail(p, "process %u: mig=%d does not exist on gpu %u", pr->pid, pr->mig, pr->gpu);
    }
    return 0;
}

static int parse_line(struct parser *p, char *line)
{
    struct fg_config *c = p->cfg;
    char *key, *val;
    unsigned long long v;

    /* Comments: '#' at the start of a line or after whitespace. */
    for (char *h = line; (h = strchr(h, '#')) != NULL; h++) {
        if (h == line || isspace((unsigned char)h[-1])) {
            *h = '\0';
            break;
        }
    }
    key = trim(line);
    if (*key == '\0')
        return 0;
    val = key;
    while (*val != '\0' && !isspace((unsigned char)*val))
        val++;
    if (*val != '\0')
        *val++ = '\0';
    val = trim(val);

    if (strcmp(key, "driver") == 0) {
        p->gpu = NULL;
        if (strchr(val, ' ') != NULL || strchr(val, '/') != NULL)
            return fail(p, "driver: bad version '%s'", val);
        return copy_str(p, c->driver, sizeof(c->driver), val, "driver");
    }
    if (strcmp(key, "cuda") == 0) {
        int ma, mi, n = 0;

        p->gpu = NULL;
        if (sscanf(val, "%d.%d%n", &ma, &mi, &n) == 2 && val[n] == '\0' && ma > 0 && ma < 100 &&
            mi >= 0 && mi < 100)
            c->cuda = ma * 1000 + mi * 10;
        else if (parse_uint(val, 999999, &v) == 0 && v >= 1000)
            c->cuda = (int)v;
        else
            return fail(p, "cuda: expected a version like 13.0 or 13000, got '%s'", val);
        return 0;
    }
    if (strcmp(key, "nvml") == 0) {
        p->gpu = NULL;
        return copy_str(p, c->nvml_version, sizeof(c->nvml_version), val, "nvml");
    }
    if (strcmp(key, "context_memory") == 0 || strcmp(key, "module_memory") == 0) {
        unsigned long long *dst = key[0] == 'c' ? &c->context_memory : &c->module_memory;

        p->gpu = NULL;
        if (fg_parse_size(val, dst) < 0)
            return fail(p, "%s: bad size '%s'", key, val);
        return 0;
    }
    if (strcmp(key, "kernel_us") == 0 || strcmp(key, "queue_ms") == 0) {
        int us = key[0] == 'k';

        p->gpu = NULL;
        if (parse_uint(val, us ? FG_MAX_KERNEL_US : FG_MAX_QUEUE_MS, us ? &c->kernel_us : &c->queue_ms) < 0)
            return fail(p, "%s: expected a number up to %llu, got '%s'", key,
                        us ? FG_MAX_KERNEL_US : FG_MAX_QUEUE_MS, val);
        return 0;
    }
    if (strcmp(key, "gpu") == 0) {
        if (*val != '\0' && (parse_uint(val, FG_MAX_GPUS, &v) < 0 || v != c->ngpus))
            return fail(p, "gpu: GPUs are numbered in order; expected %u, got '%s'", c->ngpus, val);
        if (c->ngpus >= FG_MAX_GPUS)
            return fail(p, "too many GPUs (max %d)", FG_MAX_GPUS);
        p->gpu = &c->gpus[c->ngpus];
        memset(p->gpu, 0, sizeof(*p->gpu));
        p->gpu->minor = c->ngpus;
        p->gpu->brand = 2; /* Tesla */
        p->gpu->pci_device_id = 0x20b010de;
        p->gpu->pci_subsystem_id = 0x134f10de;
        p->gpu->bus = c->ngpus + 1;
        c->ngpus++;
        return 0;
    }
    if (strcmp(key, "process") == 0) {
        struct fg_process *pr;

        p->gpu = NULL;
        if (c->nprocs >= FG_MAX_PROCS)
            return fail(p, "too many processes (max %d)", FG_MAX_PROCS);
        pr = &c->procs[c->nprocs];
        memset(pr, 0, sizeof(*pr));
        pr->gpu = UINT_MAX;
        pr->mig = -1;
        if (parse_kv(p, val, pr, proc_kv) < 0)
            return -1;
        if (pr->gpu == UINT_MAX || pr->pid == 0)
            return fail(p, "process: gpu= and pid= are required");
        c->nprocs++;
        return 0;
    }
    if (strcmp(key, "fault") == 0) {
        p->gpu = NULL;
        return parse_fault(p, val);
    }
    if (p->gpu == NULL)
        return fail(p, "'%s' outside a gpu block (or unknown keyword)", key);
    return parse_gpu_key(p, key, val);
}

int fg_config_parse(const char *text, const char *name, struct fg_config *cfg, char *err, size_t errlen)
{
    struct parser p = { .name = name, .err = err, .errlen = errlen, .cfg = cfg };
    char *copy;
    int rc = 0;

    memset(cfg, 0, sizeof(*cfg));
    cfg->context_memory = FG_DEFAULT_CONTEXT_MEMORY;
    cfg->module_memory = FG_DEFAULT_MODULE_MEMORY;
    cfg->kernel_us = FG_DEFAULT_KERNEL_US;
    cfg->queue_ms = FG_DEFAULT_QUEUE_MS;
    cfg->text_hash = 0xcbf29ce484222325ULL;             /* FNV-1a 64 */
    for (const unsigned char *t = (const unsigned char *)text; *t != '\0'; t++)
        cfg->text_hash = (cfg->text_hash ^ *t) * 0x100000001b3ULL;
    copy = strdup(text);
    if (copy == NULL)
        return fail(&p, "out of memory");
    /* strtok_r would merge empty lines and break line numbers: split by hand. */
    for (char *line = copy, *next; line != NULL; line = next) {
        next = strchr(line, '\n');
        if (next != NULL)
            *next++ = '\0';
        p.line++;
        if (parse_line(&p, line) < 0) {
            rc = -1;
            break;
        }
    }
    free(copy);
    if (rc == 0)
        rc = check_config(&p);
    return rc;
}

int fg_config_load(const char *path, struct fg_config *cfg, char *err, size_t errlen)
{
    struct parser p = { .name = path, .err = err, .errlen = errlen, .cfg = cfg };
    FILE *f;
    char *buf;
    size_t n;
    int rc;

    f = fopen(path, "re");
    if (f == NULL)
        return fail(&p, "cannot open: %s", strerror(errno));
    buf = malloc(FG_MAX_FILE + 1);
    if (buf == NULL) {
        fclose(f);
        return fail(&p, "out of memory");
    }
    n = fread(buf, 1, FG_MAX_FILE + 1, f);
    if (ferror(f)) {
        rc = fail(&p, "read error: %s", strerror(errno));
    } else if (n > FG_MAX_FILE) {
        rc = fail(&p, "file too large (max %u bytes)", FG_MAX_FILE);
    } else if (memchr(buf, '\0', n) != NULL) {
        rc = fail(&p, "binary data (NUL byte) in config");
    } else {
        buf[n] = '\0';
        rc = fg_config_parse(buf, path, cfg, err, errlen);
    }
    free(buf);
    fclose(f);
    return rc;
}

unsigned fg_gpu_sm_count(const struct fg_gpu *gpu)
{
    if (gpu->sm_count != 0)
        return gpu->sm_count;
    switch (gpu->cc_major * 10 + gpu->cc_minor) {
    case 70: return 80;    /* V100 */
    case 75: return 40;    /* T4 */
    case 80: return 108;   /* A100 */
    case 86: return 84;    /* A40 */
    case 89: return 142;   /* L40S */
    case 90: return 132;   /* H100 SXM */
    case 100: return 148;  /* B200 */
    default: return 80;
    }
}

static int base_name_eq(const char *want, const char *func)
{
    size_t len = strlen(func);
    const char *v = strrchr(func, '_');

    if (strcmp(want, func) == 0)
        return 1;
    /* func ends in _v<digits>: compare want with the part before it. */
    if (v != NULL && v[1] == 'v' && v[2] != '\0' && strspn(v + 2, "0123456789") == strlen(v + 2)) {
        len = (size_t)(v - func);
        return strlen(want) == len && strncmp(want, func, len) == 0;
    }
    return 0;
}

const struct fg_fault *fg_config_fault(const struct fg_config *cfg, const char *func)
{
    if (cfg == NULL)
        return NULL;
    for (unsigned i = 0; i < cfg->nfaults; i++)
        if (base_name_eq(cfg->faults[i].func, func))
            return &cfg->faults[i];
    return NULL;
}

void fg_fault_act(const struct fg_fault *fault)
{
    if (fault == NULL)
        return;
    switch (fault->action) {
    case FG_FAULT_HANG:
        for (;;)
            pause();
    case FG_FAULT_CRASH:
        /* A real invalid access, as a crashing driver library would make: the caller's own
         * SIGSEGV handler (if any) runs, as it would with the real NVML. */
        {
            static volatile uintptr_t bad_address = 8; /* opaque to the compiler */
            *(volatile int *)bad_address = 1;
        }
        abort();
    case FG_FAULT_DELAY: {
        struct timespec ts = { .tv_sec = fault->delay_ms / 1000,
                               .tv_nsec = (long)(fault->delay_ms % 1000) * 1000000L };

        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
            ;
        break;
    }
    case FG_FAULT_ERROR:
        break;
    }
}
