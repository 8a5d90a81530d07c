/*
 * libgpuslice-vgpu.so: state, lazy loading of the real libraries, the visible-device map, the
 * quota (through the usage region), the allocation table and the reconciler.
 */

#include "vgpu/vgpu.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "region/region.h"
#include "vgpu/hooks.h"
#include "vgpu/limiter.h"

struct gs_vgpu gs_vgpu_state = {
        .slot = -1,
        .nvisible = -1,
        .lock = PTHREAD_MUTEX_INITIALIZER,
};

#define S gs_vgpu_state

bool gs_vgpu_timing;
uint64_t gs_vgpu_phase_ns[GS_PHASE_COUNT];
unsigned gs_vgpu_phase_calls[GS_PHASE_COUNT];

/* ------------------------------------------------------------------------------------------ */
/* Logging: to stderr, prefixed, only at or below the configured level.                       */
/* ------------------------------------------------------------------------------------------ */

void gs_vgpu_log(int level, const char *fmt, ...)
{
        if (level > S.cfg.log_level)
                return;
        char buf[512];
        static const char *const names[] = {"error", "warning", "info", "debug", "trace"};
        int n = snprintf(buf, sizeof(buf), "gpuslice-vgpu[%d]: %s: ", (int)getpid(), names[level < 0 ? 0 : level > 4 ? 4 : level]);
        va_list ap;
        va_start(ap, fmt);
        if (n > 0 && (size_t)n < sizeof(buf))
                vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
        va_end(ap);
        size_t len = strlen(buf);
        if (len + 1 < sizeof(buf))
                buf[len++] = '\n';
        if (write(STDERR_FILENO, buf, len) < 0) {
                /* nothing to do */
        }
}

/* ------------------------------------------------------------------------------------------ */
/* Loading the real libraries (first use only).                                               */
/* ------------------------------------------------------------------------------------------ */

static void resolve_cuda(void *h)
{
#define GS_LOAD_(name, ret, params) S.cu.name = (gs_##name##_fn)gs_real_dlsym(h, #name);
        GS_CUDA_FUNCTIONS(GS_LOAD_)
#undef GS_LOAD_
}

static void resolve_nvml(void *h)
{
#define GS_LOAD_(name, ret, params) S.nv.name = (gs_##name##_fn)gs_real_dlsym(h, #name);
        GS_NVML_FUNCTIONS(GS_LOAD_)
#undef GS_LOAD_
}

/* dlopen soname and resolve its entry points, once; 0 when the library is usable. A missing
 * library is logged at missing_level. */
static inline int load_once(bool *loaded, void **handle, const char *soname, int missing_level,
                            void (*resolve)(void *))
{
        if (__atomic_load_n(loaded, __ATOMIC_ACQUIRE))
                return *handle != NULL ? 0 : -1;
        uint64_t t0 = gs_vgpu_clock();
        pthread_mutex_lock(&S.lock);
        if (!*loaded) {
                if (gs_real_dlsym == NULL)
                        gs_resolve_real_dlsym(); /* a library's constructor called the driver before ours ran */
                *handle = dlopen(soname, RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE);
                if (*handle == NULL)
                        gs_vgpu_log(missing_level, "cannot load %s: %s", soname, dlerror());
                else
                        resolve(*handle);
                __atomic_store_n(loaded, true, __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&S.lock);
        gs_vgpu_spent(GS_PHASE_LOAD, t0);
        return *handle != NULL ? 0 : -1;
}

int gs_vgpu_load_cuda(void) { return load_once(&S.cuda_loaded, &S.cuda_handle, "libcuda.so.1", 0, resolve_cuda); }

int gs_vgpu_load_nvml(void)
{
        return load_once(&S.nvml_loaded, &S.nvml_handle, "libnvidia-ml.so.1", 2, resolve_nvml);
}

/* ------------------------------------------------------------------------------------------ */
/* The visible-device map. Visible index order: GPUSLICE_DEVICES order when given, else PCI    */
/* bus order (which is also NVML's index order), so CUDA and NVML agree on "device i".        */
/* ------------------------------------------------------------------------------------------ */

static void format_uuid(const CUuuid *u, char *out, size_t len)
{
        const unsigned char *b = (const unsigned char *)u->bytes;
        snprintf(out, len, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                 b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

static int cuda_uuid(CUdevice d, char *out, size_t len)
{
        CUuuid u;
        CUresult rc = CUDA_ERROR_NOT_FOUND;
        if (S.cu.cuDeviceGetUuid_v2 != NULL)
                rc = S.cu.cuDeviceGetUuid_v2(&u, d);
        else if (S.cu.cuDeviceGetUuid != NULL)
                rc = S.cu.cuDeviceGetUuid(&u, d);
        if (rc != CUDA_SUCCESS)
                return -1;
        format_uuid(&u, out, len);
        return 0;
}

struct realdev {
        CUdevice d;
        char bus[32];
        char uuid[96];
};

static int cmp_bus(const void *a, const void *b)
{
        return strcasecmp(((const struct realdev *)a)->bus, ((const struct realdev *)b)->bus);
}

/* The driver's devices with their bus ids and UUIDs (those whose UUID it gives), in bus order;
 * *n: how many it has. -1 before cuInit. */
static int driver_devices(struct realdev *devs, int *n)
{
        if (S.cu.cuDeviceGetCount(n) != CUDA_SUCCESS)
                return -1;
        int have = 0;
        for (int i = 0; i < *n && have < GS_VGPU_MAX_DEVICES; i++) {
                memset(&devs[have], 0, sizeof(devs[have]));
                devs[have].d = i;
                if (S.cu.cuDeviceGetPCIBusId != NULL)
                        S.cu.cuDeviceGetPCIBusId(devs[have].bus, sizeof(devs[have].bus), i);
                if (cuda_uuid(i, devs[have].uuid, sizeof(devs[have].uuid)) == 0)
                        have++;
        }
        qsort(devs, (size_t)have, sizeof(devs[0]), cmp_bus);
        return have;
}

/* Does a slice entry (GPU- or MIG-, then hex: a UUID or a prefix of one) name the driver's device
 * `uuid`? The driver's UUID bytes do not say which kind they are: the hex is compared. */
static bool names(const char *entry, const char *uuid)
{
        size_t len = strlen(entry);
        return len > 4 && strlen(uuid) >= len && strncasecmp(entry + 4, uuid + 4, len - 4) == 0;
}

/* GPUSLICE_DEVICES: visible index i is the slice's device i, whichever of them this process's
 * driver shows and in whatever order (its CUDA_VISIBLE_DEVICES); true when the driver shows no
 * other device. Caller holds S.lock. */
static bool map_slice(const struct realdev *devs, int have, int n)
{
        bool only_slice = have == n;
        _Static_assert(sizeof(S.uuid_of[0]) == sizeof(S.cfg.uuid[0]), "one UUID size");
        for (int i = 0; i < S.cfg.nuuids; i++) {
                S.cuda_of[i] = -1;
                memcpy(S.uuid_of[i], S.cfg.uuid[i], sizeof(S.uuid_of[i]));
        }
        for (int j = 0; j < have; j++) {
                int vis = -1;
                for (int i = 0; i < S.cfg.nuuids && vis < 0; i++)
                        if (names(S.cfg.uuid[i], devs[j].uuid))
                                vis = i;
                only_slice = only_slice && vis >= 0;
                if (vis < 0 || devs[j].d >= GS_VGPU_MAX_DEVICES)
                        continue;
                S.vis_of_cuda[devs[j].d] = vis;
                if (S.cuda_of[vis] < 0 || devs[j].d < S.cuda_of[vis]) {
                        S.cuda_of[vis] = devs[j].d;
                        /* the entry's kind, the driver's full UUID (the entry may be a prefix) */
                        memcpy(S.uuid_of[vis], S.cfg.uuid[vis], 4);
                        snprintf(S.uuid_of[vis] + 4, sizeof(S.uuid_of[vis]) - 4, "%s", devs[j].uuid + 4);
                }
        }
        return only_slice;
}

void gs_vgpu_map_devices(void)
{
        if (__atomic_load_n(&S.nvisible, __ATOMIC_ACQUIRE) >= 0 && !S.nvml_mapped)
                return;
        if (gs_vgpu_load_cuda() < 0 || S.cu.cuDeviceGetCount == NULL)
                return;
        uint64_t t0 = gs_vgpu_clock();
        pthread_mutex_lock(&S.lock);
        if (S.nvisible >= 0 && !S.nvml_mapped) {
                pthread_mutex_unlock(&S.lock);
                return;
        }
        int n = 0;
        struct realdev devs[GS_VGPU_MAX_DEVICES];
        int have = driver_devices(devs, &n);
        if (have < 0) { /* not initialised: the map is made after cuInit */
                pthread_mutex_unlock(&S.lock);
                return;
        }
        for (int i = 0; i < GS_VGPU_MAX_DEVICES; i++)
                S.vis_of_cuda[i] = -1;
        int nvis = S.cfg.nuuids;
        if (S.cfg.devices[0] != '\0') {
                S.driver_hides = map_slice(devs, have, n);
        } else {
                for (nvis = 0; nvis < have; nvis++) {
                        S.cuda_of[nvis] = devs[nvis].d;
                        if (devs[nvis].d < GS_VGPU_MAX_DEVICES)
                                S.vis_of_cuda[devs[nvis].d] = nvis;
                        memcpy(S.uuid_of[nvis], devs[nvis].uuid, sizeof(S.uuid_of[nvis]));
                }
        }
        __atomic_store_n(&S.nvisible, nvis, __ATOMIC_RELEASE);
        S.nvml_mapped = false;
        bool leak = S.cfg.devices[0] != '\0' && !S.driver_hides;
        pthread_mutex_unlock(&S.lock);
        gs_vgpu_spent(GS_PHASE_MAP, t0);
        gs_vgpu_log(3, "%d visible device(s)", nvis);
        if (leak)
                gs_vgpu_log(1, "the driver shows GPUs outside the slice (it was initialised without the slice's "
                               "CUDA_VISIBLE_DEVICES): device numbers are translated to the slice's both ways");
}

void gs_vgpu_map_from_nvml(char (*uuids)[96], int n)
{
        pthread_mutex_lock(&S.lock);
        if (S.nvisible < 0) {
                if (n > GS_VGPU_MAX_DEVICES)
                        n = GS_VGPU_MAX_DEVICES;
                for (int i = 0; i < n; i++) {
                        S.cuda_of[i] = -1; /* not known without CUDA; gs_vgpu_map_devices redoes it */
                        memcpy(S.uuid_of[i], uuids[i], sizeof(S.uuid_of[i]));
                }
                for (int i = 0; i < GS_VGPU_MAX_DEVICES; i++)
                        S.vis_of_cuda[i] = -1;
                __atomic_store_n(&S.nvisible, n, __ATOMIC_RELEASE);
                S.nvml_mapped = true;
        }
        pthread_mutex_unlock(&S.lock);
}

int gs_vgpu_visible_of(CUdevice real)
{
        gs_vgpu_map_devices();
        return real >= 0 && real < GS_VGPU_MAX_DEVICES && S.nvisible >= 0 ? S.vis_of_cuda[real] : -1;
}

int gs_vgpu_current_device(void)
{
        CUdevice d;
        if (gs_vgpu_load_cuda() < 0 || S.cu.cuCtxGetDevice == NULL || S.cu.cuCtxGetDevice(&d) != CUDA_SUCCESS)
                return -1;
        return gs_vgpu_visible_of(d);
}

/* ------------------------------------------------------------------------------------------ */
/* The usage region: a file shared by the slice's processes (GPUSLICE_REGION), else a private  */
/* memfd (the quota is then per process).                                                      */
/* ------------------------------------------------------------------------------------------ */

static void at_exit(void)
{
        uint64_t t0 = gs_vgpu_clock();
        if (S.region != NULL && S.slot >= 0)
                gs_region_unregister(S.region, S.slot);
        gs_vgpu_spent(GS_PHASE_EXIT, t0);
}

/* Registered first (so it runs last): the start-up cost report of a GPUSLICE_LOG_LEVEL>=3 run. */
static void report_startup_cost(void)
{
        const uint64_t *ns = gs_vgpu_phase_ns;
        uint64_t total = 0;
        for (int i = 0; i < GS_PHASE_EXIT; i++)
                total += ns[i];
        gs_vgpu_log(3,
                    "start-up cost: %llu us in gpuslice (constructor %llu, loading the driver %llu, "
                    "cuGetProcAddress %llu in %u calls, device map %llu, context admission %llu, first "
                    "allocation %llu); exit %llu us",
                    (unsigned long long)(total / 1000), (unsigned long long)(ns[GS_PHASE_CTOR] / 1000),
                    (unsigned long long)(ns[GS_PHASE_LOAD] / 1000), (unsigned long long)(ns[GS_PHASE_PROCADDR] / 1000),
                    gs_vgpu_phase_calls[GS_PHASE_PROCADDR], (unsigned long long)(ns[GS_PHASE_MAP] / 1000),
                    (unsigned long long)(ns[GS_PHASE_CONTEXT] / 1000), (unsigned long long)(ns[GS_PHASE_FIRST] / 1000),
                    (unsigned long long)(ns[GS_PHASE_EXIT] / 1000));
}

/* Open the region (and, with `reg`, claim our slot). Caller holds S.lock. */
static int region_ready(bool reg)
{
        if (S.region == NULL) {
                /* The device map is built by the caller, outside S.lock: from CUDA
                 * (gs_vgpu_map_devices) or, in an NVML-only process such as nvidia-smi, from NVML
                 * (gs_vgpu_map_from_nvml). */
                if (S.nvisible <= 0)
                        return -1;
                char path[600];
                if (S.cfg.region[0] != '\0') {
                        snprintf(path, sizeof(path), "%s", S.cfg.region);
                } else {
                        int fd = memfd_create("gpuslice-region", MFD_CLOEXEC);
                        if (fd < 0)
                                return -1;
                        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
                }
                uint64_t limits[GS_VGPU_MAX_DEVICES];
                for (int i = 0; i < GS_VGPU_MAX_DEVICES; i++)
                        limits[i] = gs_vgpu_quota(i);
                char err[256];
                if (gs_region_open(path, (unsigned)S.nvisible, limits, (const char(*)[GS_REGION_UUID_LEN])S.uuid_of,
                                   &S.region, err, sizeof(err)) < 0) {
                        gs_vgpu_log(0, "usage region %s: %s", path, err);
                        return -1;
                }
                /* The quota is this process's own (its host-written configuration), never the
                 * file's: any process of the slice can write the region. Publish ours there. */
                if (!gs_region_limits_match(S.region, (unsigned)S.nvisible, limits, NULL, err, sizeof(err)))
                        gs_vgpu_log(2, "usage region %s was created with other limits (this process keeps its "
                                       "slice's): %s", path, err);
                for (int i = 0; i < S.nvisible; i++)
                        gs_region_publish_limit(S.region, (unsigned)i, gs_vgpu_quota(i));
        }
        gs_vgpu_live_start(); /* (once per process: a forked child, whose region is inherited, too) */
        if (reg && S.slot < 0) {
                int slot;
                if (gs_region_register(S.region, (int)getpid(), &slot) < 0) {
                        gs_vgpu_log(0, "cannot register in the usage region: %s", strerror(errno));
                        return -1;
                }
                __atomic_store_n(&S.slot, slot, __ATOMIC_RELEASE); /* after S.region: the fast path reads them in this order */
                static bool registered_exit;
                if (!registered_exit) {
                        atexit(at_exit);
                        registered_exit = true;
                }
        }
        return 0;
}

int gs_vgpu_slot_ready(void)
{
        pthread_mutex_lock(&S.lock);
        int rc = region_ready(true);
        pthread_mutex_unlock(&S.lock);
        return rc;
}

uint64_t gs_vgpu_limit(int vis)
{
        if (vis < 0 || vis >= GS_VGPU_MAX_DEVICES)
                return 0;
        pthread_mutex_lock(&S.lock);
        region_ready(false);
        pthread_mutex_unlock(&S.lock);
        gs_vgpu_live_poll();
        return gs_vgpu_quota(vis);
}

uint64_t gs_vgpu_usage(int vis)
{
        uint64_t u = 0;
        pthread_mutex_lock(&S.lock);
        if (region_ready(false) == 0)
                gs_region_usage(S.region, (unsigned)vis, &u);
        pthread_mutex_unlock(&S.lock);
        return u;
}

uint64_t gs_vgpu_busy(int vis)
{
        uint64_t b = 0;
        pthread_mutex_lock(&S.lock);
        if (region_ready(false) == 0)
                b = gs_region_busy(S.region, (unsigned)vis);
        pthread_mutex_unlock(&S.lock);
        return b;
}

static void start_reconciler(void);

/* The context size last measured on this GPU on this host, by any slice (/dev/shm, per GPU
 * UUID): the first process of a new slice starts from it instead of measuring synchronously;
 * the reconciler corrects it within a second of the first allocation. */
static void context_cache_path(int vis, char *buf, size_t len)
{
        snprintf(buf, len, "/dev/shm/gpuslice-context-%s", S.uuid_of[vis]);
}

static uint64_t context_cache_read(int vis)
{
        char path[200], buf[32];
        context_cache_path(vis, path, sizeof(path));
        int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return 0;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
                return 0;
        buf[n] = '\0';
        uint64_t v = strtoull(buf, NULL, 10);
        return v < (64ull << 30) ? v : 0; /* a context is never 64 GiB: ignore nonsense */
}

static void context_cache_write(int vis, uint64_t bytes)
{
        char path[200], tmp[240], buf[32];
        context_cache_path(vis, path, sizeof(path));
        snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return;
        int n = snprintf(buf, sizeof(buf), "%llu\n", (unsigned long long)bytes);
        bool ok = write(fd, buf, (size_t)n) == n;
        close(fd); /* (0644: a local user must not plant a context size others start from) */
        if (!ok || rename(tmp, path) < 0)
                unlink(tmp);
}

static uint64_t alloc_generation; /* bumped by every charge/uncharge: the reconciler looks then */
/* Allocations and frees between their charge and the driver's call (or the driver's free and the
 * uncharge): while one is, our count and the driver's differ by it, and a measurement then would
 * make it context (one allocation's size too little or too much, kept until the next look). The
 * thread's own (a refusal measures from inside its charge, before anything moved) does not count. */
static unsigned alloc_inflight;
static _Thread_local unsigned tl_inflight;

void gs_vgpu_alloc_begin(void)
{
        tl_inflight++;
        __atomic_add_fetch(&alloc_inflight, 1, __ATOMIC_SEQ_CST);
}

void gs_vgpu_alloc_end(void)
{
        __atomic_add_fetch(&alloc_generation, 1, __ATOMIC_SEQ_CST);
        __atomic_sub_fetch(&alloc_inflight, 1, __ATOMIC_SEQ_CST);
        tl_inflight--;
}

/* No other thread is between an allocation's two halves. */
static bool others_settled(void)
{
        return __atomic_load_n(&alloc_inflight, __ATOMIC_SEQ_CST) == tl_inflight;
}
/* Our context on a device is the slice's estimate, not yet measured by the reconciler. */
static bool context_estimated[GS_VGPU_MAX_DEVICES];

int gs_vgpu_charge(int vis, uint64_t bytes)
{
        if (vis < 0)
                return 0; /* a device we do not know: not ours to limit */
        /* Fast path (every allocation after the first): registered, context counted. No
         * process-wide lock; the region's own lock makes the check-and-charge exact. */
        if (!(__atomic_load_n(&S.slot, __ATOMIC_ACQUIRE) >= 0 && __atomic_load_n(&S.measured[vis], __ATOMIC_ACQUIRE))) {
                uint64_t t0 = gs_vgpu_clock();
                pthread_mutex_lock(&S.lock);
                int ok = region_ready(true);
                bool first = ok == 0 && !S.measured[vis];
                pthread_mutex_unlock(&S.lock);
                if (ok < 0)
                        return gs_vgpu_quota(vis) == 0 ? 0 : -1; /* no region: refuse rather than run unlimited */
                if (first) {
                        /* Context memory counts from the first allocation. The slice's first
                         * process measures it (NVML, once); later ones start from the largest
                         * context already measured in the slice and let the reconciler correct
                         * it, so their start-up makes no NVML call and stays flat in the number
                         * of processes. */
                        uint64_t known = gs_region_max_extra(S.region, (unsigned)vis);
                        const char *from = "the slice";
                        if (known == 0) {
                                known = context_cache_read(vis);
                                from = "this host's last measurement";
                        }
                        if (known != 0 && S.slot >= 0) {
                                gs_region_set_extra(S.region, S.slot, (unsigned)vis, known);
                                __atomic_store_n(&context_estimated[vis], true, __ATOMIC_RELEASE);
                                __atomic_store_n(&S.measured[vis], true, __ATOMIC_RELEASE);
                                __atomic_add_fetch(&alloc_generation, 1, __ATOMIC_RELAXED); /* reconcile soon */
                                gs_vgpu_log(3, "device %d: context estimated at %llu bytes from %s", vis,
                                            (unsigned long long)known, from);
                        } else {
                                gs_vgpu_reconcile(vis);
                        }
                        start_reconciler();
                }
                gs_vgpu_spent(GS_PHASE_FIRST, t0);
        }
        gs_vgpu_live_poll();
        uint64_t usage = 0;
        int rc = gs_region_try_charge_limit(S.region, S.slot, (unsigned)vis, bytes, gs_vgpu_quota(vis), &usage);
        if (rc == 1 && __atomic_load_n(&context_estimated[vis], __ATOMIC_ACQUIRE)) {
                /* Refused while our context is still the slice's estimate (the largest any of
                 * its processes measured, allocation overheads included, dead ones' too until
                 * they are reaped): measure ours now, then look again. */
                gs_vgpu_reconcile(vis);
                if (!__atomic_load_n(&context_estimated[vis], __ATOMIC_ACQUIRE))
                        rc = gs_region_try_charge_limit(S.region, S.slot, (unsigned)vis, bytes, gs_vgpu_quota(vis), &usage);
        }
        if (rc == 1) {
                gs_vgpu_log(2, "device %d: %llu bytes refused: %llu of %llu in use", vis, (unsigned long long)bytes,
                            (unsigned long long)usage, (unsigned long long)gs_vgpu_quota(vis));
                return -1;
        }
        if (rc < 0 && errno == ESTALE) {
                /* our slot was reaped (pid reuse after fork, or a long stall): claim a new one */
                pthread_mutex_lock(&S.lock);
                __atomic_store_n(&S.slot, -1, __ATOMIC_RELEASE);
                int ok = region_ready(true);
                pthread_mutex_unlock(&S.lock);
                if (ok == 0)
                        rc = gs_region_try_charge_limit(S.region, S.slot, (unsigned)vis, bytes, gs_vgpu_quota(vis), &usage);
        }
        if (rc == 0 && bytes != 0) {
                __atomic_add_fetch(&S.mine[vis], bytes, __ATOMIC_RELAXED);
                __atomic_add_fetch(&alloc_generation, 1, __ATOMIC_RELAXED);
        }
        return rc == 0 ? 0 : -1;
}

int gs_vgpu_admit_context(int vis)
{
        if (vis < 0)
                return 0;
        uint64_t limit = gs_vgpu_limit(vis);
        if (limit == 0 || S.region == NULL)
                return 0;
        /* The largest context another process of the slice has measured is what this one will
         * cost; refuse it when that no longer fits (the driver would otherwise put it beyond the
         * quota before we could see it). */
        uint64_t ctx = gs_region_max_extra(S.region, (unsigned)vis);
        uint64_t used = gs_vgpu_usage(vis);
        if (ctx != 0 && used + ctx > limit && gs_region_reap(S.region) > 0) {
                /* dead processes' memory is gone with them: look again */
                ctx = gs_region_max_extra(S.region, (unsigned)vis);
                used = gs_vgpu_usage(vis);
        }
        if (ctx != 0 && used + ctx > limit) {
                gs_vgpu_log(2, "device %d: no room for a context of ~%llu bytes (%llu of %llu in use)", vis,
                            (unsigned long long)ctx, (unsigned long long)used, (unsigned long long)limit);
                return -1;
        }
        return 0;
}

void gs_vgpu_uncharge(int vis, uint64_t bytes)
{
        if (vis < 0 || S.region == NULL || S.slot < 0)
                return;
        gs_region_uncharge(S.region, S.slot, (unsigned)vis, bytes);
        __atomic_add_fetch(&alloc_generation, 1, __ATOMIC_RELAXED);
        uint64_t cur = __atomic_load_n(&S.mine[vis], __ATOMIC_RELAXED);
        uint64_t next;
        do {
                next = cur > bytes ? cur - bytes : 0;
        } while (!__atomic_compare_exchange_n(&S.mine[vis], &cur, next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
}

/* ------------------------------------------------------------------------------------------ */
/* Allocation table: open addressing, keyed by (kind, pointer/handle). Allocation paths only.  */
/* ------------------------------------------------------------------------------------------ */

struct entry {
        uint64_t key;
        uint64_t bytes;
        int8_t kind; /* 0 empty, -1 deleted */
        int8_t vis;
};

static struct entry *table;
static size_t table_cap, table_used, table_live;

/* The table's own lock: a test-and-test-and-set spinlock (a few instructions uncontended; the
 * critical sections are a handful of probes, and growth, which is rare). */
static int table_lock;

static void table_acquire(void)
{
        unsigned spins = 0;
        while (__atomic_exchange_n(&table_lock, 1, __ATOMIC_ACQUIRE) != 0)
                while (__atomic_load_n(&table_lock, __ATOMIC_RELAXED) != 0) {
                        if (++spins % 128 == 0)
                                sched_yield(); /* the holder may have been preempted */
#if defined(__x86_64__)
                        __builtin_ia32_pause();
#elif defined(__aarch64__)
                        __asm__ volatile("yield");
#endif
                }
}

static void table_release(void) { __atomic_store_n(&table_lock, 0, __ATOMIC_RELEASE); }

static size_t slot_of(uint64_t key, int kind, size_t cap)
{
        uint64_t h = (key ^ ((uint64_t)kind << 56)) * 0x9E3779B97F4A7C15ull;
        return (size_t)(h >> 17) & (cap - 1);
}

static int table_grow(void)
{
        size_t cap = table_cap != 0 ? table_cap * 2 : 1024;
        struct entry *t = mmap(NULL, cap * sizeof(*t), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (t == MAP_FAILED)
                return -1;
        for (size_t i = 0; i < table_cap; i++) {
                if (table[i].kind <= 0)
                        continue;
                size_t j = slot_of(table[i].key, table[i].kind, cap);
                while (t[j].kind != 0)
                        j = (j + 1) & (cap - 1);
                t[j] = table[i];
        }
        if (table != NULL)
                munmap(table, table_cap * sizeof(*table));
        table = t;
        table_cap = cap;
        table_used = table_live;
        return 0;
}

int gs_vgpu_track(enum gs_alloc_kind kind, uint64_t key, int vis, uint64_t bytes)
{
        table_acquire();
        int rc = 0;
        if ((table_used + 1) * 4 >= table_cap * 3 && table_grow() < 0) {
                rc = -1;
        } else {
                size_t j = slot_of(key, (int)kind, table_cap);
                while (table[j].kind > 0 && !(table[j].key == key && table[j].kind == (int8_t)kind))
                        j = (j + 1) & (table_cap - 1);
                if (table[j].kind <= 0) {
                        if (table[j].kind == 0)
                                table_used++;
                        table_live++;
                }
                table[j] = (struct entry){.key = key, .bytes = bytes, .kind = (int8_t)kind, .vis = (int8_t)vis};
        }
        table_release();
        return rc;
}

int gs_vgpu_untrack(enum gs_alloc_kind kind, uint64_t key, int *vis, uint64_t *bytes)
{
        int found = 0;
        table_acquire();
        if (table_cap != 0) {
                size_t j = slot_of(key, (int)kind, table_cap);
                while (table[j].kind != 0) {
                        if (table[j].kind == (int8_t)kind && table[j].key == key) {
                                *vis = table[j].vis;
                                *bytes = table[j].bytes;
                                table[j].kind = -1;
                                table_live--;
                                found = 1;
                                break;
                        }
                        j = (j + 1) & (table_cap - 1);
                }
        }
        table_release();
        return found;
}

/* ------------------------------------------------------------------------------------------ */
/* Reconciliation with the driver (NVML per-process used memory).                              */
/* ------------------------------------------------------------------------------------------ */

/* One measurement; false when an allocation of another thread was half-made (try again). */
static bool reconcile_once(int vis);

void gs_vgpu_reconcile(int vis)
{
        if (vis >= 0 && vis < GS_VGPU_MAX_DEVICES)
                reconcile_once(vis);
}

static bool reconcile_once(int vis)
{
        S.measured[vis] = true;
        /* The driver reports each process by its pid in the *caller's* pid namespace (it
         * translates with the kernel's pid_vnr() and leaves out processes the caller cannot see),
         * so getpid() is the right key in a container's pid namespace too; no host pid needed. */
        int pid = (int)getpid();
        if (gs_vgpu_load_nvml() < 0 || S.nv.nvmlInit_v2 == NULL ||
            S.nv.nvmlDeviceGetHandleByUUID == NULL || S.nv.nvmlDeviceGetComputeRunningProcesses_v3 == NULL)
                return true;
        static bool nvml_up;
        if (!nvml_up) {
                if (S.nv.nvmlInit_v2() != NVML_SUCCESS)
                        return true;
                nvml_up = true;
        }
        nvmlDevice_t h;
        if (S.nv.nvmlDeviceGetHandleByUUID(S.uuid_of[vis], &h) != NVML_SUCCESS)
                return true;
        /* The driver's count and ours must be of the same moment: an allocation freed between the
         * query and the read of our count would count as context (and the slice's largest context
         * is what every later process is charged). If allocations moved meanwhile, the next round
         * looks again (the generation moved, so it comes within a second). */
        if (!others_settled())
                return false;
        uint64_t gen = __atomic_load_n(&alloc_generation, __ATOMIC_SEQ_CST);
        uint64_t mine = __atomic_load_n(&S.mine[vis], __ATOMIC_RELAXED);
        nvmlProcessInfo_t infos[64];
        unsigned count = 64;
        if (S.nv.nvmlDeviceGetComputeRunningProcesses_v3(h, &count, infos) != NVML_SUCCESS)
                return true;
        if (!others_settled() || __atomic_load_n(&alloc_generation, __ATOMIC_SEQ_CST) != gen ||
            __atomic_load_n(&S.mine[vis], __ATOMIC_RELAXED) != mine)
                return false;
        for (unsigned i = 0; i < count && i < 64; i++) {
                if ((int)infos[i].pid != pid)
                        continue;
                uint64_t used = infos[i].usedGpuMemory;
                uint64_t extra = used > mine ? used - mine : 0;
                if (S.region != NULL && S.slot >= 0) {
                        gs_region_set_extra(S.region, S.slot, (unsigned)vis, extra);
                        gs_region_heartbeat(S.region, S.slot);
                        __atomic_store_n(&context_estimated[vis], false, __ATOMIC_RELEASE);
                }
                static bool cached[GS_VGPU_MAX_DEVICES];
                if (!cached[vis] && mine == 0 && extra != 0) {
                        context_cache_write(vis, extra); /* nothing allocated yet: the context alone */
                        cached[vis] = true;
                }
                gs_vgpu_log(3, "device %d: driver counts %llu bytes for us, %llu tracked, %llu extra", vis,
                            (unsigned long long)used, (unsigned long long)mine, (unsigned long long)extra);
                return true;
        }
        return true;
}

static bool reconciler_running;

/* Every second, but only when this process's allocations changed since the last look (the
 * driver's per-process count moves with them; a steady training loop costs no NVML call), and at
 * least every 30 s to catch module and context growth. */
static void *reconciler(void *arg)
{
        (void)arg;
        uint64_t seen = 0;
        unsigned idle = 0;
        for (;;) {
                struct timespec ts = {1, 0};
                nanosleep(&ts, NULL);
                uint64_t gen = __atomic_load_n(&alloc_generation, __ATOMIC_RELAXED);
                if (gen == seen && ++idle < 30)
                        continue;
                seen = gen;
                idle = 0;
                /* a device whose allocations are moving: look again for up to 0.1 s, between them */
                for (int i = 0; i < GS_VGPU_MAX_DEVICES; i++)
                        for (int tries = 0; S.measured[i] && !reconcile_once(i) && tries < 200; tries++) {
                                struct timespec pause = {0, 500000};
                                nanosleep(&pause, NULL);
                        }
                if (S.region != NULL)
                        gs_region_reap(S.region);
        }
        return NULL;
}

static void start_reconciler(void)
{
        if (__atomic_exchange_n(&reconciler_running, true, __ATOMIC_ACQ_REL))
                return;
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old); /* the application's signals stay with its threads */
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, 64 * 1024);
        if (pthread_create(&t, &attr, reconciler, NULL) != 0)
                __atomic_store_n(&reconciler_running, false, __ATOMIC_RELEASE);
        pthread_attr_destroy(&attr);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* A forked child is another process: it gets its own slot and its own (empty) table. */
static void after_fork_child(void)
{
        pthread_mutex_init(&S.lock, NULL);
        S.slot = -1;
        reconciler_running = false;
        memset(S.measured, 0, sizeof(S.measured));
        memset(S.mine, 0, sizeof(S.mine));
        table_lock = 0;
        gs_limiter_after_fork();
        gs_vgpu_live_after_fork();
        if (table != NULL) {
                munmap(table, table_cap * sizeof(*table));
                table = NULL;
                table_cap = table_used = table_live = 0;
        }
}

static const char *env_lookup(const char *name) { return getenv(name); }

static void configure(void)
{
        struct timespec ts0;
        clock_gettime(CLOCK_MONOTONIC, &ts0);
        gs_vgpu_config_load(&S.cfg, env_lookup);
        if (S.cfg.error)
                gs_vgpu_log(0, "%s%s", S.cfg.message,
                            S.cfg.ignore_errors ? "; running WITHOUT limits (GPUSLICE_ON_CONFIG_ERROR=unlimited)"
                                                : "; CUDA will not initialise (set GPUSLICE_ON_CONFIG_ERROR=unlimited to run "
                                                  "without limits)");
        if (S.cfg.error && S.cfg.ignore_errors)
                memset(S.cfg.limit, 0, sizeof(S.cfg.limit));
        gs_vgpu_live_init();
        gs_limiter_configure();
        if (S.cfg.env_message[0] != '\0')
                gs_vgpu_log(1, "ignored: %s (this container's slice file applies)", S.cfg.env_message);
        pthread_atfork(NULL, NULL, after_fork_child);
        if (S.cfg.log_level >= 3) {
                gs_vgpu_timing = true;
                atexit(report_startup_cost);
                gs_vgpu_spent(GS_PHASE_CTOR, (uint64_t)ts0.tv_sec * 1000000000u + (uint64_t)ts0.tv_nsec);
        }
}

static pthread_once_t configured = PTHREAD_ONCE_INIT;

void gs_vgpu_configure(void) { pthread_once(&configured, configure); }

__attribute__((constructor(102))) static void vgpu_init(void) { gs_vgpu_configure(); }
