#include "vgpu/config.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/name.h"

int gs_vgpu_parse_size(const char *s, uint64_t *bytes)
{
        if (s == NULL || *s == '\0')
                return -1;
        if (strcmp(s, "unlimited") == 0) {
                *bytes = 0;
                return 0;
        }
        const char *p = s;
        uint64_t whole = 0;
        int digits = 0;
        while (*p >= '0' && *p <= '9') {
                unsigned d = (unsigned)(*p - '0');
                if (whole > (UINT64_MAX - d) / 10)
                        return -1;
                whole = whole * 10 + d;
                p++;
                digits++;
        }
        /* fraction: up to 9 digits kept as a numerator over 10^k */
        uint64_t frac = 0, scale = 1;
        if (*p == '.') {
                p++;
                int fd = 0;
                while (*p >= '0' && *p <= '9') {
                        if (fd < 9) {
                                frac = frac * 10 + (uint64_t)(*p - '0');
                                scale *= 10;
                        }
                        fd++;
                        p++;
                }
                if (fd == 0)
                        return -1;
        }
        if (digits == 0)
                return -1;
        unsigned shift = 0;
        switch (*p) {
        case '\0': break;
        case 'k': case 'K': shift = 10; p++; break;
        case 'm': case 'M': shift = 20; p++; break;
        case 'g': case 'G': shift = 30; p++; break;
        case 't': case 'T': shift = 40; p++; break;
        default: return -1;
        }
        if (shift != 0 && *p == 'i')
                p++;
        if (*p != '\0')
                return -1;
        if (shift == 0 && scale != 1)
                return -1; /* fractional bytes */
        if (shift != 0 && whole > (UINT64_MAX >> shift))
                return -1;
        uint64_t v = whole << shift;
        if (scale != 1) {
                /* frac/scale of one unit, rounded down to whole bytes */
                unsigned __int128 f = ((unsigned __int128)frac << shift) / scale;
                if (v > UINT64_MAX - (uint64_t)f)
                        return -1;
                v += (uint64_t)f;
        }
        *bytes = v;
        return 0;
}

int gs_vgpu_parse_percent(const char *s, unsigned *pct)
{
        unsigned v = 0;
        if (s == NULL || *s == '\0' || strlen(s) > 3)
                return -1;
        for (const char *p = s; *p != '\0'; p++) {
                if (*p < '0' || *p > '9')
                        return -1;
                v = v * 10 + (unsigned)(*p - '0');
        }
        if (v > 100)
                return -1;
        *pct = v;
        return 0;
}

int gs_vgpu_parse_compute_mode(const char *s)
{
        static const struct {
                const char *name;
                int mode;
        } modes[] = {{"cap", GS_COMPUTE_CAP},     {"force", GS_COMPUTE_CAP},     {"share", GS_COMPUTE_SHARE},
                     {"default", GS_COMPUTE_SHARE}, {"off", GS_COMPUTE_OFF}, {"disable", GS_COMPUTE_OFF}};
        for (size_t i = 0; s != NULL && i < sizeof(modes) / sizeof(modes[0]); i++)
                if (strcasecmp(s, modes[i].name) == 0)
                        return modes[i].mode;
        return -1;
}

int gs_vgpu_parse_priority(const char *s, bool hami)
{
        static const char *const names[] = {"high", "normal", "low"};
        if (s == NULL || *s == '\0')
                return -1;
        if (!hami) {
                for (int i = 0; i < 3; i++)
                        if (strcasecmp(s, names[i]) == 0)
                                return i;
                return -1;
        }
        if (strlen(s) > 9 || strspn(s, "0123456789") != strlen(s))
                return -1;
        long v = strtol(s, NULL, 10);
        return v == 0 ? GS_PRIO_HIGH : v == 1 ? GS_PRIO_NORMAL : GS_PRIO_LOW;
}

const char *gs_vgpu_priority_name(int prio)
{
        return prio == GS_PRIO_HIGH ? "high" : prio == GS_PRIO_LOW ? "low" : "normal";
}

bool gs_vgpu_compute_limited(const struct gs_vgpu_config *cfg)
{
        if (cfg->compute_mode == GS_COMPUTE_OFF || (cfg->error && cfg->ignore_errors))
                return false;
        for (int i = 0; i < GS_VGPU_MAX_DEVICES; i++)
                if (cfg->compute[i] != 0)
                        return true;
        return false;
}

static void fail(struct gs_vgpu_config *cfg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct gs_vgpu_config *cfg, const char *fmt, ...)
{
        if (!cfg->error) {
                va_list ap;
                va_start(ap, fmt);
                vsnprintf(cfg->message, sizeof(cfg->message), fmt, ap);
                va_end(ap);
        }
        cfg->error = true;
}

/* KEY=VALUE lines of the slice file, looked up by name. */
struct slice_file {
        char buf[8192];
        bool loaded;
};

static const char *slice_get(struct slice_file *sf, const char *name)
{
        size_t n = strlen(name);
        for (char *line = sf->buf; line != NULL && *line != '\0';) {
                char *next = strchr(line, '\n');
                if (strncmp(line, name, n) == 0 && line[n] == '=') {
                        static _Thread_local char value[1100]; /* GPUSLICE_DEVICES: 16 UUIDs */
                        size_t len = next != NULL ? (size_t)(next - line) - n - 1 : strlen(line + n + 1);
                        if (len >= sizeof(value))
                                len = sizeof(value) - 1;
                        memcpy(value, line + n + 1, len);
                        value[len] = '\0';
                        return value;
                }
                line = next != NULL ? next + 1 : NULL;
        }
        return NULL;
}

static bool slice_load(struct slice_file *sf, const char *path)
{
        memset(sf, 0, sizeof(*sf));
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return false;
        ssize_t n = read(fd, sf->buf, sizeof(sf->buf) - 1);
        close(fd);
        if (n <= 0)
                return false;
        sf->buf[n] = '\0';
        sf->loaded = true;
        return true;
}

/* Where values come from: the environment (ours, then HAMi's name), then the slice file. Either
 * may be absent. */
struct source {
        const char *(*env)(const char *);
        struct slice_file *sf;
};

static const char *lookup(const struct source *src, const char *ours, const char *alias, const char **used_name)
{
        const char *v = NULL;
        *used_name = ours;
        if (src->env != NULL) {
                v = src->env(ours);
                if (v == NULL && alias != NULL) {
                        v = src->env(alias);
                        *used_name = alias;
                }
        }
        if (v == NULL && src->sf != NULL && src->sf->loaded) {
                v = slice_get(src->sf, ours);
                *used_name = ours;
        }
        return v;
}

/* An absolute path setting (ours, or HAMi's alias) into out; left as it is when unset. */
static void load_path(struct gs_vgpu_config *cfg, const struct source *src, const char *ours, const char *alias,
                      char *out, size_t size)
{
        const char *name, *v = lookup(src, ours, alias, &name);
        if (v == NULL)
                return;
        if (v[0] != '/' || strlen(v) >= size)
                fail(cfg, "invalid %s '%s' (an absolute path)", name, v);
        else
                strcpy(out, v);
}

/* A device UUID as NVML spells it: GPU- or MIG-, then hex digits and dashes. */
static bool is_uuid(const char *s, size_t len)
{
        if (len <= 4 || (strncasecmp(s, "GPU-", 4) != 0 && strncasecmp(s, "MIG-", 4) != 0))
                return false;
        for (size_t i = 4; i < len; i++)
                if (!isxdigit((unsigned char)s[i]) && s[i] != '-')
                        return false;
        return true;
}

/* GPUSLICE_DEVICES into cfg->devices (as given: an invalid list hides every device) and
 * cfg->uuid[] (each UUID, prefix in upper and hex in lower case, as the driver's are compared);
 * -1 when it is not a list of UUIDs. An empty value is no list: every device. */
static int load_devices(struct gs_vgpu_config *cfg, const char *v)
{
        if (strlen(v) >= sizeof(cfg->devices))
                return -1;
        strcpy(cfg->devices, v);
        int n = 0;
        for (const char *p = v; *p != '\0'; p += *p == ',') {
                size_t len = strcspn(p, ",");
                /* (an empty entry, a trailing comma's included, is no UUID) */
                if (n == GS_VGPU_MAX_DEVICES || len >= sizeof(cfg->uuid[0]) || !is_uuid(p, len) ||
                    (p[len] == ',' && p[len + 1] == '\0'))
                        return -1;
                char *d = cfg->uuid[n++];
                for (size_t i = 0; i < len; i++)
                        d[i] = (char)(i < 4 ? toupper((unsigned char)p[i]) : tolower((unsigned char)p[i]));
                d[len] = '\0';
                p += len;
        }
        cfg->nuuids = n;
        return 0;
}

/* The slice device (index into cfg->device) that one CUDA_VISIBLE_DEVICES entry names, or -1. */
static int visible_pick(const struct gs_vgpu_config *cfg, const char *e, size_t len)
{
        while (len > 0 && isspace((unsigned char)*e))
                e++, len--;
        while (len > 0 && isspace((unsigned char)e[len - 1]))
                len--;
        if (len > 0 && isdigit((unsigned char)*e)) {
                /* the driver takes the leading digits, as strtoul does ("1gpu2" is 1) */
                unsigned long v = 0;
                for (size_t i = 0; i < len && isdigit((unsigned char)e[i]) && v <= GS_VGPU_MAX_DEVICES; i++)
                        v = v * 10 + (unsigned long)(e[i] - '0');
                return v < (unsigned long)cfg->nuuids ? (int)v : -1;
        }
        if (len < 4 || (strncasecmp(e, "GPU-", 4) != 0 && strncasecmp(e, "MIG-", 4) != 0))
                return -1;
        int found = -1;
        for (int i = 0; i < cfg->nuuids; i++) {
                if (strlen(cfg->uuid[i]) < len || strncasecmp(cfg->uuid[i], e, len) != 0)
                        continue;
                if (found >= 0)
                        return -1; /* a prefix of two: names none */
                found = i;
        }
        return found;
}

int gs_vgpu_cuda_visible(const struct gs_vgpu_config *cfg, const char *user, char *out, size_t size)
{
        size_t used = 0;
        int n = 0;
        if (size == 0)
                return -1;
        out[0] = '\0';
        for (const char *p = user; user == NULL ? n < cfg->nuuids : p != NULL; n++) {
                int i = n;
                if (user != NULL) {
                        size_t len = strcspn(p, ",");
                        i = visible_pick(cfg, p, len);
                        p = p[len] == ',' ? p + len + 1 : NULL;
                }
                if (i < 0)
                        break;
                int w = snprintf(out + used, size - used, "%s%s", n > 0 ? "," : "", cfg->uuid[i]);
                if (w < 0 || (size_t)w >= size - used) {
                        out[0] = '\0';
                        return -1;
                }
                used += (size_t)w;
        }
        return n;
}

static void load_from(struct gs_vgpu_config *cfg, const struct source *src)
{
        memset(cfg, 0, sizeof(*cfg));
        cfg->log_level = 1;
        const char *name, *v;
        v = lookup(src, "GPUSLICE_ON_CONFIG_ERROR", NULL, &name);
        cfg->ignore_errors = v != NULL && strcmp(v, "unlimited") == 0;
        v = lookup(src, "GPUSLICE_LOG_LEVEL", "LIBCUDA_LOG_LEVEL", &name);
        if (v != NULL) {
                if (v[0] >= '0' && v[0] <= '4' && v[1] == '\0')
                        cfg->log_level = v[0] - '0';
                else
                        fail(cfg, "invalid %s '%s' (0..4)", name, v);
        }
        v = lookup(src, "GPUSLICE_MEMORY_LIMIT", "CUDA_DEVICE_MEMORY_LIMIT", &name);
        if (v != NULL && gs_vgpu_parse_size(v, &cfg->limit_all) < 0)
                fail(cfg, "invalid %s '%s' (a size: bytes, or K/M/G/T or Ki/Mi/Gi/Ti)", name, v);
        for (int i = 0; i < GS_VGPU_MAX_DEVICES; i++) {
                char ours[64], alias[64];
                snprintf(ours, sizeof(ours), "GPUSLICE_MEMORY_LIMIT_%d", i);
                snprintf(alias, sizeof(alias), "CUDA_DEVICE_MEMORY_LIMIT_%d", i);
                cfg->limit[i] = cfg->limit_all;
                v = lookup(src, ours, alias, &name);
                if (v != NULL && gs_vgpu_parse_size(v, &cfg->limit[i]) < 0)
                        fail(cfg, "invalid %s '%s' (a size: bytes, or K/M/G/T or Ki/Mi/Gi/Ti)", name, v);
        }
        v = lookup(src, "GPUSLICE_COMPUTE_LIMIT", "CUDA_DEVICE_SM_LIMIT", &name);
        if (v != NULL && gs_vgpu_parse_percent(v, &cfg->compute_all) < 0)
                fail(cfg, "invalid %s '%s' (a percentage, 0..100)", name, v);
        for (int i = 0; i < GS_VGPU_MAX_DEVICES; i++) {
                char ours[64], alias[64];
                snprintf(ours, sizeof(ours), "GPUSLICE_COMPUTE_LIMIT_%d", i);
                snprintf(alias, sizeof(alias), "CUDA_DEVICE_SM_LIMIT_%d", i);
                cfg->compute[i] = cfg->compute_all;
                v = lookup(src, ours, alias, &name);
                if (v != NULL && gs_vgpu_parse_percent(v, &cfg->compute[i]) < 0)
                        fail(cfg, "invalid %s '%s' (a percentage, 0..100)", name, v);
                if (cfg->compute[i] >= 100)
                        cfg->compute[i] = 0; /* the whole GPU: nothing to limit */
        }
        v = lookup(src, "GPUSLICE_COMPUTE_MODE", "GPU_CORE_UTILIZATION_POLICY", &name);
        if (v != NULL && *v != '\0' && (cfg->compute_mode = gs_vgpu_parse_compute_mode(v)) < 0) {
                cfg->compute_mode = GS_COMPUTE_CAP;
                fail(cfg, "invalid %s '%s' (cap, share or off)", name, v);
        }
        cfg->priority = GS_PRIO_NORMAL;
        v = lookup(src, "GPUSLICE_PRIORITY", "CUDA_TASK_PRIORITY", &name);
        if (v != NULL && *v != '\0' &&
            (cfg->priority = gs_vgpu_parse_priority(v, strcmp(name, "CUDA_TASK_PRIORITY") == 0)) < 0) {
                cfg->priority = GS_PRIO_NORMAL;
                fail(cfg, strcmp(name, "CUDA_TASK_PRIORITY") == 0 ? "invalid %s '%s' (0 high, 1 normal, 2 or more low)"
                                                                  : "invalid %s '%s' (high, normal or low)", name, v);
        }
        load_path(cfg, src, "GPUSLICE_REGION", "CUDA_DEVICE_MEMORY_SHARED_CACHE", cfg->region, sizeof(cfg->region));
        struct stat st;
        strcpy(cfg->arbiter_dir, stat(GS_VGPU_HOST_ARBITER_DIR, &st) == 0 && S_ISDIR(st.st_mode)
                                         ? GS_VGPU_HOST_ARBITER_DIR : "/dev/shm");
        load_path(cfg, src, "GPUSLICE_ARBITER_DIR", NULL, cfg->arbiter_dir, sizeof(cfg->arbiter_dir));
        v = lookup(src, "GPUSLICE_ARBITER_NAME", NULL, &name);
        if (v != NULL && !gs_name_is_safe(v, sizeof(cfg->arbiter_name)))
                fail(cfg, "invalid %s '%s' (letters, digits, '_', '.', '+', '-')", name, v);
        else if (v != NULL)
                strcpy(cfg->arbiter_name, v);
        load_path(cfg, src, "GPUSLICE_MPS_PIPE_DIRECTORY", NULL, cfg->mps_dir, sizeof(cfg->mps_dir));
        load_path(cfg, src, "GPUSLICE_LIVE_LIMITS", NULL, cfg->live, sizeof(cfg->live));
        v = lookup(src, "GPUSLICE_DEVICES", NULL, &name);
        if (v != NULL && load_devices(cfg, v) < 0)
                fail(cfg, "invalid %s '%s' (at most %d GPU- or MIG- UUIDs, comma-separated)", name, v,
                      GS_VGPU_MAX_DEVICES);
}

int gs_vgpu_live_read(const char *path, struct gs_vgpu_live *out, char *why, size_t whylen)
{
        struct slice_file sf;
        struct gs_vgpu_config c;
        if (!slice_load(&sf, path)) {
                snprintf(why, whylen, "%s: %s", path, errno != 0 ? strerror(errno) : "empty");
                return -1;
        }
        size_t n = strlen(sf.buf);
        const char *g = slice_get(&sf, "GPUSLICE_GENERATION");
        char *end = NULL;
        unsigned long long gen = g != NULL ? strtoull(g, &end, 10) : 0;
        if (n == 0 || sf.buf[n - 1] != '\n' || g == NULL || *g == '\0' || *end != '\0' || gen == 0) {
                snprintf(why, whylen, "%s: not a whole live limits file", path);
                return -1;
        }
        struct source src = {NULL, &sf};
        load_from(&c, &src);
        if (c.error) {
                snprintf(why, whylen, "%s: %s", path, c.message);
                return -1;
        }
        out->generation = gen;
        memcpy(out->limit, c.limit, sizeof(out->limit));
        memcpy(out->compute, c.compute, sizeof(out->compute));
        out->compute_mode = c.compute_mode;
        out->priority = c.priority;
        return 0;
}

void gs_vgpu_live_apply(struct gs_vgpu_config *cfg, const struct gs_vgpu_live *l)
{
        memcpy(cfg->limit, l->limit, sizeof(cfg->limit));
        memcpy(cfg->compute, l->compute, sizeof(cfg->compute));
        cfg->compute_mode = l->compute_mode;
        cfg->priority = l->priority;
        cfg->live_gen = l->generation;
}

/* The live limits, when the configuration names a file: they are the slice's current ones. */
static void load_live(struct gs_vgpu_config *cfg)
{
        struct gs_vgpu_live l;
        char why[256];
        if (cfg->live[0] != '\0' && !cfg->error && gs_vgpu_live_read(cfg->live, &l, why, sizeof(why)) == 0)
                gs_vgpu_live_apply(cfg, &l);
}

void gs_vgpu_config_load(struct gs_vgpu_config *cfg, const char *(*env)(const char *name))
{
        static struct slice_file sf;
        /* A slice file that the host wrote for a container (GPUSLICE_SLICE_ENFORCED=1, mounted
         * read-only) holds the container's limits: no variable can change them, point the region
         * or the slice file elsewhere, or opt out. (A lower per-process limit would not hold
         * either: the processes of a container share one region, and its limits apply.) */
        bool enforced = slice_load(&sf, "/etc/gpuslice/slice.conf") &&
                        (slice_get(&sf, "GPUSLICE_SLICE_ENFORCED") != NULL &&
                         strcmp(slice_get(&sf, "GPUSLICE_SLICE_ENFORCED"), "1") == 0);
        if (!enforced) {
                const char *path = env("GPUSLICE_SLICE_FILE");
                if (path != NULL)
                        slice_load(&sf, path);
                struct source both = {env, &sf};
                load_from(cfg, &both);
                load_live(cfg);
                return;
        }
        struct source file = {NULL, &sf}, own = {env, NULL};
        load_from(cfg, &file);
        load_live(cfg);
        struct gs_vgpu_config mine;
        load_from(&mine, &own);
        cfg->enforced = true;
        if (mine.error) {
                /* Never a way out: an invalid variable is ignored, the slice file applies. */
                snprintf(cfg->env_message, sizeof(cfg->env_message), "%s", mine.message);
                return;
        }
        /* Only the log level is the process's own. */
        if (env("GPUSLICE_LOG_LEVEL") != NULL || env("LIBCUDA_LOG_LEVEL") != NULL)
                cfg->log_level = mine.log_level;
}
