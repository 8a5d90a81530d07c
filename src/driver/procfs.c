/*
 * Devices from the driver's procfs, without NVML. NVML's start-up (attaching every GPU) takes
 * ~15 ms on an H200 with persistence mode; what `list` (and later `configure` without
 * requirements) needs (RM version, and per GPU: minor, UUID, bus id, model) is also in
 * <root>/proc/driver/nvidia. We answer from there only when it answers fully: version readable,
 * every GPU's information file readable, and no GPU has MIG instances (MIG UUIDs and indexes are
 * NVML's alone). Otherwise the caller falls back to the NVML helper.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "common/path.h"
#include "common/strutil.h"
#include "driver/context.h"

/* "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ..." or
 * "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar ...": the first token
 * after "Module" made of digits and at least one dot. */
int gs_parse_nvrm_version(const char *text, char *out, size_t len)
{
        const char *p = strstr(text, "NVRM version:");
        if (p == NULL)
                return -1;
        const char *eol = strchr(p, '\n');
        const char *m = strstr(p, "Module");
        if (m == NULL || (eol != NULL && m > eol))
                return -1;
        for (p = m + 6; *p != '\0' && *p != '\n';) {
                while (*p == ' ' || *p == '\t')
                        p++;
                size_t n = strcspn(p, " \t\n");
                bool ver = n > 0 && p[0] >= '0' && p[0] <= '9' && memchr(p, '.', n) != NULL;
                for (size_t i = 0; ver && i < n; i++)
                        ver = (p[i] >= '0' && p[i] <= '9') || p[i] == '.';
                if (ver) {
                        if (n >= len)
                                return -1;
                        memcpy(out, p, n);
                        out[n] = '\0';
                        return 0;
                }
                p += n;
        }
        return -1;
}

/* Value of "Key:<spaces/tabs>value" in an information file, or NULL. */
static const char *field(const char *text, const char *key, char *out, size_t len)
{
        size_t kl = strlen(key);
        for (const char *line = text; line != NULL && *line != '\0';) {
                if (strncmp(line, key, kl) == 0 && line[kl] == ':') {
                        const char *v = line + kl + 1;
                        while (*v == ' ' || *v == '\t')
                                v++;
                        size_t n = strcspn(v, "\n");
                        while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
                                n--;
                        if (n >= len)
                                return NULL;
                        memcpy(out, v, n);
                        out[n] = '\0';
                        return out;
                }
                line = strchr(line, '\n');
                if (line != NULL)
                        line++;
        }
        return NULL;
}

struct busdir {
        unsigned long key; /* domain:bus:dev.fn packed for PCI order */
        char name[64];
};

static int cmp_bus(const void *a, const void *b)
{
        const struct busdir *x = a, *y = b;
        return (x->key > y->key) - (x->key < y->key);
}

static bool has_mig_instances(int rootfd, unsigned minor, bool *capable)
{
        char dir[128];
        snprintf(dir, sizeof(dir), "/proc/driver/nvidia/capabilities/gpu%u/mig", minor);
        struct gs_error oerr = {0};
        DIR *d = gs_opendir_in_root(rootfd, dir, &oerr);
        *capable = d != NULL;
        if (d == NULL) /* absent: not MIG-capable; there but unreadable: cannot tell, ask NVML */
                return oerr.code != GS_ENOTFOUND;
        bool any = false;
        struct dirent *e;
        while ((e = readdir(d)) != NULL)
                if (strncmp(e->d_name, "gi", 2) == 0)
                        any = true;
        closedir(d);
        return any;
}

int gs_devices_from_procfs(struct gs_context *ctx, struct gs_device_info *out, struct gs_error *err)
{
        char buf[4096];
        memset(out, 0, sizeof(*out));
        if (gs_read_in_root(ctx->rootfd, "/proc/driver/nvidia/version", buf, sizeof(buf), NULL) < 0 ||
            gs_parse_nvrm_version(buf, out->driver_version, sizeof(out->driver_version)) < 0)
                return gs_error_set(err, GS_ENOTFOUND, "no readable /proc/driver/nvidia/version");
        DIR *d = gs_opendir_in_root(ctx->rootfd, "/proc/driver/nvidia/gpus", NULL);
        if (d == NULL)
                return gs_error_set(err, GS_ENOTFOUND, "no readable /proc/driver/nvidia/gpus");
        struct busdir dirs[GS_MAX_GPUS];
        size_t n = 0;
        struct dirent *e;
        bool too_many = false;
        while ((e = readdir(d)) != NULL) {
                unsigned dom, bus, dev, fn;
                char extra;
                if (sscanf(e->d_name, "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &extra) != 4)
                        continue;
                if (n == GS_MAX_GPUS) {
                        too_many = true;
                        break;
                }
                dirs[n].key = ((unsigned long)dom << 24) | (bus << 16) | (dev << 8) | fn;
                gs_strlcpy(dirs[n].name, e->d_name, sizeof(dirs[n].name));
                n++;
        }
        closedir(d);
        if (too_many)
                return gs_error_set(err, GS_EINVAL, "more than %d GPUs", GS_MAX_GPUS);
        qsort(dirs, n, sizeof(dirs[0]), cmp_bus);
        for (size_t i = 0; i < n; i++) {
                char path[160], v[GS_STR_LONG];
                snprintf(path, sizeof(path), "/proc/driver/nvidia/gpus/%s/information", dirs[i].name);
                if (gs_read_in_root(ctx->rootfd, path, buf, sizeof(buf), NULL) < 0)
                        return gs_error_set(err, GS_ENOTFOUND, "cannot read %s", path);
                if (field(buf, "GPU Excluded", v, sizeof(v)) != NULL && strcmp(v, "Yes") == 0)
                        continue; /* NVML does not enumerate excluded GPUs either */
                struct gs_gpu *g = &out->gpus[out->ngpus];
                unsigned long long minor;
                unsigned dom, bus, dev, fn;
                if (field(buf, "Model", g->model, sizeof(g->model)) == NULL ||
                    field(buf, "GPU UUID", g->uuid, sizeof(g->uuid)) == NULL ||
                    field(buf, "Device Minor", v, sizeof(v)) == NULL || gs_parse_uint(v, 255, &minor) < 0 ||
                    field(buf, "Bus Location", v, sizeof(v)) == NULL ||
                    sscanf(v, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4 || strncmp(g->uuid, "GPU-", 4) != 0)
                        return gs_error_set(err, GS_EFORMAT, "%s: missing or malformed fields", path);
                g->index = out->ngpus;
                g->minor = (unsigned)minor;
                snprintf(g->bus_id, sizeof(g->bus_id), "%08x:%02x:%02x.0", dom, bus, dev);
                if (has_mig_instances(ctx->rootfd, g->minor, &g->mig_capable))
                        return gs_error_set(err, GS_EINVAL, "GPU %u has MIG instances", g->index);
                out->ngpus++;
        }
        out->from_procfs = true;
        return 0;
}

const struct gs_device_info *gs_devices_basic(struct gs_context *ctx, struct gs_error *err)
{
        if (ctx->devices_loaded)
                return &ctx->devices;
        const char *detect = secure_getenv("GPUSLICE_DETECT");
        if (detect == NULL || strcmp(detect, "nvml") != 0) {
                struct gs_error perr = {0};
                if (gs_devices_from_procfs(ctx, &ctx->basic, &perr) == 0) {
                        gs_log_info("devices from %s/proc/driver/nvidia: %u GPU(s), driver %s", ctx->root,
                                    ctx->basic.ngpus, ctx->basic.driver_version);
                        return &ctx->basic;
                }
                gs_log_info("procfs cannot answer (%s); asking NVML", perr.msg);
        }
        return gs_devices(ctx, err);
}
