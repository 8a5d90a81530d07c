/* The DRA plugin's devices and its ResourceSlice (see dra/slices.h). */
#include "dra/slices.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/error.h"
#include "kubelet/quantity.h"

void gs_dra_device_name(unsigned gpu, int mig, char *buf, size_t len)
{
        if (mig < 0)
                snprintf(buf, len, "gpu-%u", gpu);
        else
                snprintf(buf, len, "gpu-%u-mig-%d", gpu, mig);
}

int gs_dra_device_lookup(const struct gs_device_info *dev, const char *name, unsigned *gpu, int *mig,
                         struct gs_error *err)
{
        for (unsigned i = 0; i < dev->ngpus; i++) {
                const struct gs_gpu *g = &dev->gpus[i];
                char buf[64];
                if (!g->mig_enabled) {
                        gs_dra_device_name(g->index, -1, buf, sizeof(buf));
                        if (strcmp(buf, name) == 0) {
                                *gpu = i;
                                *mig = -1;
                                return 0;
                        }
                        continue;
                }
                for (unsigned j = 0; j < g->nmigs; j++) {
                        gs_dra_device_name(g->index, (int)g->migs[j].index, buf, sizeof(buf));
                        if (strcmp(buf, name) == 0) {
                                *gpu = i;
                                *mig = (int)j;
                                return 0;
                        }
                }
        }
        return gs_error_set(err, GS_ENOTFOUND, "unknown device '%.63s' (not one of this node's)", name);
}

void gs_dra_slice_name(const char *driver, const char *node, char *buf, size_t len)
{
        snprintf(buf, len, "%s-%s", node, driver);
}

/* A version as semver: "9.0" -> "9.0.0", "580.159.04" -> "580.159.4"; "" when not numeric. */
static void semver(const char *in, char *out, size_t len)
{
        unsigned long part[3] = {0, 0, 0};
        int n = 0;
        const char *p = in;
        out[0] = '\0';
        while (n < 3) {
                char *end;
                if (*p < '0' || *p > '9')
                        return;
                part[n++] = strtoul(p, &end, 10);
                p = end;
                if (*p == '\0')
                        break;
                if (*p++ != '.')
                        return;
        }
        if (*p != '\0')
                return;
        snprintf(out, len, "%lu.%lu.%lu", part[0], part[1], part[2]);
}

static const char *arch_name(const char *cc)
{
        int major = atoi(cc), minor = strchr(cc, '.') != NULL ? atoi(strchr(cc, '.') + 1) : 0;
        switch (major) {
        case 6: return "Pascal";
        case 7: return minor >= 5 ? "Turing" : "Volta";
        case 8: return minor == 9 ? "Ada Lovelace" : "Ampere";
        case 9: return "Hopper";
        case 10:
        case 12: return "Blackwell";
        default: return "unknown";
        }
}

static void attr(json_object *a, const char *name, const char *type, json_object *v)
{
        json_object *o = json_object_new_object();
        json_object_object_add(o, type, v);
        json_object_object_add(a, name, o);
}

static void attr_str(json_object *a, const char *name, const char *v)
{
        if (v != NULL && v[0] != '\0')
                attr(a, name, "string", json_object_new_string(v));
}

static void attr_ver(json_object *a, const char *name, const char *v)
{
        char sv[64];
        semver(v, sv, sizeof(sv));
        if (sv[0] != '\0')
                attr(a, name, "version", json_object_new_string(sv));
}

static json_object *quantity(uint64_t v)
{
        char buf[64];
        gs_k8s_quantity_format(v, buf, sizeof(buf));
        return json_object_new_string(buf);
}

/* capacity.<name> = {value, requestPolicy{default, validRange{min, step, max}}}: default and max
 * the value rounded down to the step (min = step), which the API server requires of them (a GPU's
 * memory is not always a whole number of MiB). */
static void capacity(json_object *cap, const char *name, uint64_t value, uint64_t min, bool policy)
{
        json_object *c = json_object_new_object();
        json_object_object_add(c, "value", quantity(value));
        if (policy) {
                json_object *rp = json_object_new_object(), *range = json_object_new_object();
                uint64_t top = min > 0 ? value - value % min : value;
                json_object_object_add(rp, "default", quantity(top));
                json_object_object_add(range, "min", quantity(min));
                json_object_object_add(range, "max", quantity(top));
                json_object_object_add(range, "step", quantity(min));
                json_object_object_add(rp, "validRange", range);
                json_object_object_add(c, "requestPolicy", rp);
        }
        json_object_object_add(cap, name, c);
}

static json_object *device(const struct gs_device_info *dev, const struct gs_k8s_topology *topo, unsigned i,
                           int j)
{
        const struct gs_gpu *g = &dev->gpus[i];
        const struct gs_mig_device *m = j >= 0 ? &g->migs[j] : NULL;
        json_object *d = json_object_new_object(), *a = json_object_new_object(), *cap = json_object_new_object();
        char name[64], bus[GS_STR_SHORT];
        gs_dra_device_name(g->index, m != NULL ? (int)m->index : -1, name, sizeof(name));
        json_object_object_add(d, "name", json_object_new_string(name));
        attr_str(a, "type", m != NULL ? "mig" : "gpu");
        attr_str(a, "uuid", m != NULL ? m->uuid : g->uuid);
        if (m != NULL) {
                attr_str(a, "parentUUID", g->uuid);
                attr(a, "migIndex", "int", json_object_new_int64(m->index));
        }
        attr_str(a, "productName", g->model);
        attr_str(a, "brand", g->brand);
        if (g->arch[0] != '\0')
                attr_str(a, "architecture", arch_name(g->arch));
        attr_ver(a, "cudaComputeCapability", g->arch);
        attr_ver(a, "driverVersion", dev->driver_version);
        attr_ver(a, "cudaDriverVersion", dev->cuda_version);
        attr(a, "index", "int", json_object_new_int64(g->index));
        /* NVML's 8-digit PCI domain as the kernel (and Kubernetes' pcieRoot) write it: 4 digits */
        const char *b = g->bus_id;
        if (strlen(b) == 16 && b[8] == ':' && strncmp(b, "0000", 4) == 0)
                b += 4;
        snprintf(bus, sizeof(bus), "%s", b);
        for (char *p = bus; *p; p++)
                if (*p >= 'A' && *p <= 'F')
                        *p = (char)(*p - 'A' + 'a');
        attr_str(a, "pciBusID", bus);
        if (topo != NULL && i < GS_MAX_GPUS && topo->numa[i] >= 0)
                attr(a, "numaNode", "int", json_object_new_int64(topo->numa[i]));
        json_object_object_add(d, "attributes", a);
        /* a MIG device shared as a GPU is (issue 33): its own memory, compute in percent of it */
        capacity(cap, "memory", m != NULL ? m->memory_total : g->memory_total, GS_DRA_MIN_MEMORY, true);
        capacity(cap, "compute", 100, 1, true);
        json_object_object_add(d, "capacity", cap);
        json_object_object_add(d, "allowMultipleAllocations", json_object_new_boolean(1));
        return d;
}

/* taints: [{key, value, effect, timeAdded}] for an unhealthy device. A GPU NVML names lost is
 * NoExecute (its pods cannot use it any more: evicted, their controllers start them elsewhere);
 * an XID, or NVML failing, is NoSchedule (the pods running keep running: an XID may touch one
 * process, and NVML failing says nothing about the GPUs). */
static void taint(json_object *d, const struct gs_k8s_fault *why)
{
        json_object *ts = json_object_new_array(), *t = json_object_new_object();
        char value[64], when[32];
        time_t since = (time_t)why->since;
        struct tm tm;
        if (why->lost)
                snprintf(value, sizeof(value), "gpu-lost");
        else if (why->xid != 0)
                snprintf(value, sizeof(value), "xid-%llu", why->xid);
        else
                snprintf(value, sizeof(value), "nvml-error");
        if (gmtime_r(&since, &tm) == NULL || strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
                when[0] = '\0';
        json_object_object_add(t, "key", json_object_new_string(GS_DRA_TAINT_KEY));
        json_object_object_add(t, "value", json_object_new_string(value));
        json_object_object_add(t, "effect", json_object_new_string(why->lost ? "NoExecute" : "NoSchedule"));
        if (when[0] != '\0')
                json_object_object_add(t, "timeAdded", json_object_new_string(when));
        json_object_array_add(ts, t);
        json_object_object_add(d, "taints", ts);
}

/* A device: tainted when unhealthy (taints), or left out (NULL why: healthy). */
static void add_device(json_object *devs, json_object *d, const struct gs_k8s_fault *why)
{
        if (d != NULL && why != NULL)
                taint(d, why);
        json_object_array_add(devs, d);
}

json_object *gs_dra_slice_build(const struct gs_device_info *dev, const struct gs_k8s_topology *topo,
                                const struct gs_k8s_health *health, bool taints, const char *driver,
                                const char *node, long long generation, const char *resource_version)
{
        json_object *s = json_object_new_object(), *meta = json_object_new_object(), *spec = json_object_new_object(),
                    *pool = json_object_new_object(), *devs = json_object_new_array();
        char name[512];
        if (s == NULL || meta == NULL || spec == NULL || pool == NULL || devs == NULL) {
                json_object_put(s);
                json_object_put(meta);
                json_object_put(spec);
                json_object_put(pool);
                json_object_put(devs);
                return NULL;
        }
        json_object_object_add(s, "apiVersion", json_object_new_string("resource.k8s.io/v1"));
        json_object_object_add(s, "kind", json_object_new_string("ResourceSlice"));
        gs_dra_slice_name(driver, node, name, sizeof(name));
        json_object_object_add(meta, "name", json_object_new_string(name));
        if (resource_version != NULL && resource_version[0] != '\0')
                json_object_object_add(meta, "resourceVersion", json_object_new_string(resource_version));
        json_object_object_add(s, "metadata", meta);
        json_object_object_add(spec, "driver", json_object_new_string(driver));
        json_object_object_add(spec, "nodeName", json_object_new_string(node));
        json_object_object_add(pool, "name", json_object_new_string(node));
        json_object_object_add(pool, "generation", json_object_new_int64(generation));
        json_object_object_add(pool, "resourceSliceCount", json_object_new_int64(1));
        json_object_object_add(spec, "pool", pool);
        for (unsigned i = 0; i < dev->ngpus; i++) {
                const struct gs_gpu *g = &dev->gpus[i];
                const struct gs_k8s_fault *gbad = health != NULL && health->gpu_bad[i] ? &health->gpu_why[i] : NULL;
                if (gbad != NULL && !taints)
                        continue;
                if (!g->mig_enabled) {
                        add_device(devs, device(dev, topo, i, -1), gbad);
                        continue;
                }
                for (unsigned j = 0; j < g->nmigs; j++) {
                        const struct gs_k8s_fault *bad = gbad;
                        if (bad == NULL && health != NULL && j < GS_MAX_MIGS && health->mig_bad[i][j])
                                bad = &health->mig_why[i][j];
                        if (bad == NULL || taints)
                                add_device(devs, device(dev, topo, i, (int)j), bad);
                }
        }
        json_object_object_add(spec, "devices", devs);
        json_object_object_add(s, "spec", spec);
        return s;
}

void gs_dra_slice_version(json_object *slice, const char *version, bool shares)
{
        char v[64];
        json_object *spec = NULL, *devs = NULL;
        snprintf(v, sizeof(v), "resource.k8s.io/%s", version);
        json_object_object_add(slice, "apiVersion", json_object_new_string(v));
        if (shares || !json_object_object_get_ex(slice, "spec", &spec) || !json_object_object_get_ex(spec, "devices", &devs))
                return;
        for (size_t i = 0; i < json_object_array_length(devs); i++) {
                json_object *d = json_object_array_get_idx(devs, i), *caps = NULL;
                json_object_object_del(d, "allowMultipleAllocations");
                if (!json_object_object_get_ex(d, "capacity", &caps))
                        continue;
                json_object_object_foreach(caps, key, c) {
                        (void)key;
                        json_object_object_del(c, "requestPolicy");
                }
        }
}

bool gs_dra_slice_tainted(json_object *slice)
{
        json_object *spec = NULL, *devs = NULL;
        if (slice == NULL || !json_object_object_get_ex(slice, "spec", &spec) ||
            !json_object_object_get_ex(spec, "devices", &devs))
                return false;
        for (size_t i = 0; i < json_object_array_length(devs); i++)
                if (json_object_object_get_ex(json_object_array_get_idx(devs, i), "taints", NULL))
                        return true;
        return false;
}
