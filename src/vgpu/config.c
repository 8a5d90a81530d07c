#include "vgpu/config.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* KEY=VALUE lines of the slice file, looked up by name (the environment wins over it). */
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
                        static char value[600];
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

static const char *lookup(const char *(*env)(const char *), struct slice_file *sf, const char *ours,
                          const char *alias, const char **used_name)
{
        const char *v = env(ours);
        *used_name = ours;
        if (v == NULL && alias != NULL) {
                v = env(alias);
                *used_name = alias;
        }
        if (v == NULL && sf->loaded) {
                v = slice_get(sf, ours);
                *used_name = ours;
        }
        return v;
}

void gs_vgpu_config_load(struct gs_vgpu_config *cfg, const char *(*env)(const char *name))
{
        memset(cfg, 0, sizeof(*cfg));
        cfg->log_level = 1;
        static struct slice_file sf;
        memset(&sf, 0, sizeof(sf));
        const char *path = env("GPUSLICE_SLICE_FILE");
        if (path == NULL)
                path = "/etc/gpuslice/slice.conf";
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
                ssize_t n = read(fd, sf.buf, sizeof(sf.buf) - 1);
                close(fd);
                if (n > 0) {
                        sf.buf[n] = '\0';
                        sf.loaded = true;
                }
        }
        const char *name, *v;
        v = lookup(env, &sf, "GPUSLICE_ON_CONFIG_ERROR", NULL, &name);
        cfg->ignore_errors = v != NULL && strcmp(v, "unlimited") == 0;
        v = lookup(env, &sf, "GPUSLICE_LOG_LEVEL", "LIBCUDA_LOG_LEVEL", &name);
        if (v != NULL) {
                if (v[0] >= '0' && v[0] <= '4' && v[1] == '\0')
                        cfg->log_level = v[0] - '0';
                else
                        fail(cfg, "invalid %s '%s' (0..4)", name, v);
        }
        v = lookup(env, &sf, "GPUSLICE_MEMORY_LIMIT", "CUDA_DEVICE_MEMORY_LIMIT", &name);
        if (v != NULL && gs_vgpu_parse_size(v, &cfg->limit_all) < 0)
                fail(cfg, "invalid %s '%s' (a size: bytes, or K/M/G/T or Ki/Mi/Gi/Ti)", name, v);
        for (int i = 0; i < GS_VGPU_MAX_DEVICES; i++) {
                char ours[64], alias[64];
                snprintf(ours, sizeof(ours), "GPUSLICE_MEMORY_LIMIT_%d", i);
                snprintf(alias, sizeof(alias), "CUDA_DEVICE_MEMORY_LIMIT_%d", i);
                cfg->limit[i] = cfg->limit_all;
                v = lookup(env, &sf, ours, alias, &name);
                if (v != NULL && gs_vgpu_parse_size(v, &cfg->limit[i]) < 0)
                        fail(cfg, "invalid %s '%s' (a size: bytes, or K/M/G/T or Ki/Mi/Gi/Ti)", name, v);
        }
        v = lookup(env, &sf, "GPUSLICE_REGION", "CUDA_DEVICE_MEMORY_SHARED_CACHE", &name);
        if (v != NULL) {
                if (v[0] != '/' || strlen(v) >= sizeof(cfg->region))
                        fail(cfg, "invalid %s '%s' (an absolute path)", name, v);
                else
                        strcpy(cfg->region, v);
        }
        v = lookup(env, &sf, "GPUSLICE_DEVICES", NULL, &name);
        if (v != NULL) {
                if (strlen(v) >= sizeof(cfg->devices))
                        fail(cfg, "invalid %s '%s' (too long)", name, v);
                else
                        strcpy(cfg->devices, v);
        }
}
