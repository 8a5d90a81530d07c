/* SPDX-License-Identifier: Apache-2.0 */
/* Fake libcuda.so.1 (fake_cuda.h): cuInit (the config, the device enumeration with
 * CUDA_VISIBLE_DEVICES, the device address space, the shared state file, the time model),
 * what a fork does, cuDriverGetVersion and cuGetExportTable. */
#include "fake_cuda.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static CUresult g_init_rc;
static int g_cfg_loaded;              /* g_cfg valid (also before cuInit, for the version) */

static void atfork_child(void)
{
    /* CUDA does not survive fork: the child of an initialised process gets NOT_INITIALIZED
     * everywhere (seen on driver 580.159.04), and drops its copy of the state file (the slot
     * lock stays with the parent). */
    if (g_shared.fd >= 0) {
        if (g_shared.map != NULL)
            munmap(g_shared.map, sizeof(*g_shared.map));
        close(g_shared.fd);
        g_shared.fd = -1;
        g_shared.map = NULL;
        g_shared.slot = -1;
    }
    if (__atomic_load_n(&g_state, __ATOMIC_ACQUIRE) != ST_UNINIT)
        __atomic_store_n(&g_state, ST_FORKED, __ATOMIC_RELEASE);
    pthread_mutex_init(&g_mu, NULL);
    t_depth = 0;
}

static void load_config_locked(void)
{
    char err[512];

    if (g_cfg_loaded)
        return;
    if (fg_config_load(fg_config_path(), &g_cfg, err, sizeof(err)) < 0) {
        fprintf(stderr, "fakegpu: cuda: %s (simulating a host without a working driver)\n", err);
        memset(&g_cfg, 0, sizeof(g_cfg));
        g_cfg_loaded = -1;
        return;
    }
    g_cfg_loaded = 1;
}

static unsigned long long config_process_bytes(unsigned gpu, int mig)
{
    unsigned long long sum = 0;

    for (unsigned i = 0; i < g_cfg.nprocs; i++)
        if (g_cfg.procs[i].gpu == gpu && (mig == -2 || g_cfg.procs[i].mig == mig))
            sum += g_cfg.procs[i].used;
    return sum;
}

static void add_device(unsigned gpu, int mig)
{
    const struct fg_gpu *g = &g_cfg.gpus[gpu];
    struct fdev *d = &g_dev[g_ndev++];
    unsigned long long busy;

    d->gpu = gpu;
    d->mig = mig;
    d->unit = fg_state_unit(gpu, mig);
    d->used = 0;
    if (mig < 0) {
        d->total = g->memory - g->reserved;
        busy = g->used + config_process_bytes(gpu, -2);
    } else {
        d->total = g->migs[mig].memory;
        busy = config_process_bytes(gpu, mig);
    }
    d->capacity = busy >= d->total ? 0 : d->total - busy;
}

/* FAKEGPU_DEVICE_NODES=1: the driver's view from inside a container, which shows only the devices
 * whose nodes it can open: a GPU its /dev/nvidia<minor>, a MIG device that and its compute
 * instance's access node /dev/nvidia-caps/nvidia-cap<N> (N as mkroot.sh numbers them, as the
 * driver does: 3 + 135 minor + 9 gi + 1 + ci). Unset: every device (a host's view). */
static int node_visible(const struct fg_gpu *g, const struct fg_mig *m)
{
    const char *v = getenv("FAKEGPU_DEVICE_NODES");
    char path[64];
    struct stat st;

    if (v == NULL || strcmp(v, "1") != 0)
        return 1;
    snprintf(path, sizeof(path), "/dev/nvidia%u", g->minor);
    if (stat(path, &st) != 0)
        return 0;
    if (m == NULL)
        return 1;
    snprintf(path, sizeof(path), "/dev/nvidia-caps/nvidia-cap%u", 3 + 135 * g->minor + 9 * m->gi + 1 + m->ci);
    return stat(path, &st) == 0;
}

/* The default enumeration: GPUs in config order, a MIG-enabled GPU replaced by its MIG
 * devices (in MIG index order); with FAKEGPU_DEVICE_NODES=1 only those whose nodes are there. */
static int default_order(unsigned *gpus, int *migs, int max)
{
    int n = 0;

    for (unsigned i = 0; i < g_cfg.ngpus && n < max; i++) {
        const struct fg_gpu *g = &g_cfg.gpus[i];

        if (g->mig != FG_MIG_ON) {
            if (!node_visible(g, NULL))
                continue;
            gpus[n] = i;
            migs[n++] = -1;
            continue;
        }
        for (unsigned idx = 0; idx < FG_MAX_MIG; idx++)
            for (unsigned m = 0; m < g->nmig && n < max; m++)
                if (g->migs[m].index == idx && node_visible(g, &g->migs[m])) {
                    gpus[n] = i;
                    migs[n++] = (int)m;
                }
    }
    return n;
}

const char *dev_uuid_str(unsigned gpu, int mig)
{
    return mig < 0 ? g_cfg.gpus[gpu].uuid : g_cfg.gpus[gpu].migs[mig].uuid;
}

/* CUDA_VISIBLE_DEVICES: comma-separated indexes into the default order (an entry's leading
 * digits, as strtoul reads them: "1gpu2" is 1, as PyTorch's _parse_visible_devices models the
 * driver) or UUIDs (GPU-..., MIG-..., a unique prefix is enough); the list ends at the first
 * invalid entry; empty: no device. A device named twice (by index or UUID) makes cuInit fail
 * with CUDA_ERROR_INVALID_DEVICE (seen on driver 580.159.04: "0,0"). Returns 0, or that error. */
static CUresult enumerate(void)
{
    static unsigned gpus[MAX_DEV];
    static int migs[MAX_DEV];
    int n = default_order(gpus, migs, MAX_DEV);
    const char *env = getenv("CUDA_VISIBLE_DEVICES");
    char buf[4096];
    char *save = NULL;
    int used[MAX_DEV];

    g_ndev = 0;
    if (env == NULL) {
        for (int i = 0; i < n; i++)
            add_device(gpus[i], migs[i]);
        return CUDA_SUCCESS;
    }
    memset(used, 0, sizeof(used));
    snprintf(buf, sizeof(buf), "%s", env);
    for (char *tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        int pick = -1;
        char *end;

        while (isspace((unsigned char)*tok))
            tok++;
        for (end = tok + strlen(tok); end > tok && isspace((unsigned char)end[-1]); end--)
            *--end = '\0';
        if (isdigit((unsigned char)tok[0])) {
            unsigned long v = strtoul(tok, NULL, 10);

            if (v >= (unsigned long)n)
                break;
            pick = (int)v;
        } else if (strncasecmp(tok, "GPU-", 4) == 0 || strncasecmp(tok, "MIG-", 4) == 0) {
            int matches = 0;

            for (int i = 0; i < n; i++) {
                if (strncasecmp(dev_uuid_str(gpus[i], migs[i]), tok, strlen(tok)) == 0) {
                    pick = i;
                    matches++;
                }
            }
            /* A GPU UUID of a MIG-enabled GPU selects its first MIG device. */
            if (matches == 0 && strncasecmp(tok, "GPU-", 4) == 0)
                for (int i = 0; i < n && matches == 0; i++)
                    if (migs[i] >= 0 && strncasecmp(g_cfg.gpus[gpus[i]].uuid, tok, strlen(tok)) == 0) {
                        pick = i;
                        matches = 1;
                    }
            if (matches != 1)
                break;
        } else {
            break;
        }
        if (used[pick]) {
            g_ndev = 0;
            return CUDA_ERROR_INVALID_DEVICE;
        }
        used[pick] = 1;
        add_device(gpus[pick], migs[pick]);
    }
    return CUDA_SUCCESS;
}

/* An MPS client (shared/reference/compute-share.md and tests/gpu/mps_fault_check.sh, measured on
 * an H100): with a control daemon listening in $CUDA_MPS_PIPE_DIRECTORY (its `control` socket
 * accepts a connection) the process is a client of its user's server, kept on a connection to the
 * simulated daemon (fake_mps_control.c: "CLIENT <pid> <percentage>", answered "OK <server>
 * <percentage>"): every device of the process has the percentage the daemon gives it (the
 * server's, or CUDA_MPS_ACTIVE_THREAD_PERCENTAGE when lower) of its SMs, rounded down to an even
 * count (80/50/30/20/10 % of 132 SMs: 104/66/38/26/12), reports it as its SM count and runs
 * kernels on it. A server in FAULT refuses it: cuInit fails with CUDA_ERROR_MPS_SERVER_NOT_READY
 * (seen at the process's first call). A kernel writing to an illegal address (fault_kernel_launched)
 * gives the process CUDA_ERROR_ILLEGAL_ADDRESS for every later call; an MPS client's tells the
 * daemon, which sends the same to every client of the server: a thread here reads it. Without a
 * daemon the variables change nothing. A daemon that does not speak the connection protocol (an
 * older fake) leaves the percentage to the variable. */
unsigned g_mps_pct;
int g_sticky;
static int g_mps_fd = -1;

static void *mps_watch(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[256];
    ssize_t n;

    while ((n = read(fd, buf, sizeof(buf) - 1)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        buf[n] = '\0';
        if (strstr(buf, "FAULT") != NULL)
            __atomic_store_n(&g_sticky, (int)CUDA_ERROR_ILLEGAL_ADDRESS, __ATOMIC_RELAXED);
    }
    return NULL;
}

/* The NVIDIA driver's line for an MMU fault, as /dev/kmsg reads it (a kernel record: facility 0,
 * level 4; sequence number and timestamp from the monotonic clock), appended to the test's file
 * when there is one: "NVRM: Xid (PCI:dddd:bb:dd): 31, pid=PID, name=COMM, channel 0x..., intr ....
 * MMU Fault: ...", word for word as the H200's driver 580.159.04 wrote it for an illegal write
 * (tests/gpu/results/2026-11-29b-xid). The pid is the process's own (the host's when it runs in the host's pid
 * namespace, as the kernel's tgid is); the name its comm. */
static void kmsg_xid31(int dev)
{
    const char *path = getenv("FAKEGPU_KMSG");
    const struct fg_gpu *g;
    char comm[32] = "", line[512];
    struct timespec ts;
    unsigned long long us;
    int fd, n;

    if (dev < 0 || dev >= g_ndev)
        return;
    g = &g_cfg.gpus[g_dev[dev].gpu];
    fd = open(path != NULL && *path != '\0' ? path : "/etc/fakegpu/kmsg", O_WRONLY | O_APPEND | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return;   /* no log to write: the fault is silent there */
    n = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
    if (n >= 0) {
        int c = n;

        n = (int)read(c, comm, sizeof(comm) - 1);
        close(c);
    }
    n = n > 0 ? n : 0;
    comm[n] = '\0';
    while (n > 0 && (comm[n - 1] == '\n' || comm[n - 1] == '\0'))
        comm[--n] = '\0';
    clock_gettime(CLOCK_MONOTONIC, &ts);
    us = (unsigned long long)ts.tv_sec * 1000000ull + (unsigned long long)ts.tv_nsec / 1000;
    n = snprintf(line, sizeof(line), "4,%llu,%llu,c;NVRM: Xid (PCI:%04x:%02x:%02x): 31, pid=%d, name=%s, channel "
                 "0x0000000a, intr 00000000. MMU Fault: ENGINE GRAPHICS GPC1 GPCCLIENT_T1_4 faulted @ 0x0_00000000. "
                 "Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_WRITE\n", us, us, g->domain & 0xffff, g->bus & 0xff, g->device & 0x1f,
                 (int)getpid(), comm);
    if (n > 0 && n < (int)sizeof(line)) {
        ssize_t w = write(fd, line, (size_t)n);   /* one write: one record */

        (void)w;
    }
    close(fd);
}

void fault_kernel_launched(int dev)
{
    __atomic_store_n(&g_sticky, (int)CUDA_ERROR_ILLEGAL_ADDRESS, __ATOMIC_RELAXED);
    kmsg_xid31(dev);
    if (g_mps_fd >= 0) {
        ssize_t w = write(g_mps_fd, "FAULT\n", 6);

        (void)w;
    }
}

/* The daemon's answer line (bounded wait); 0 with none. */
static size_t mps_answer(int fd, char *buf, size_t len)
{
    size_t n = 0;

    while (n < len - 1) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        ssize_t r;

        if (poll(&p, 1, 2000) <= 0)
            break;
        r = read(fd, buf + n, 1);
        if (r <= 0 || buf[n] == '\n')
            break;
        n++;
    }
    buf[n] = '\0';
    return n;
}

static CUresult mps_init(void)
{
    const char *dir = getenv("CUDA_MPS_PIPE_DIRECTORY"), *pct = getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    char *end, msg[64], ans[128];
    unsigned long v = 0;
    int fd, n;
    unsigned server, got;
    pthread_t t;

    g_mps_pct = 0;
    __atomic_store_n(&g_sticky, 0, __ATOMIC_RELAXED);
    if (dir == NULL || (size_t)snprintf(a.sun_path, sizeof(a.sun_path), "%s/control", dir) >= sizeof(a.sun_path))
        return CUDA_SUCCESS;
    if (pct != NULL) {
        v = strtoul(pct, &end, 10);
        if (*pct == '\0' || *end != '\0' || v < 1 || v > 100)
            v = 0;
    }
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return CUDA_SUCCESS;
    if (connect(fd, (const struct sockaddr *)&a, sizeof(a)) != 0) {
        close(fd);
        return CUDA_SUCCESS;
    }
    n = snprintf(msg, sizeof(msg), "CLIENT %d %lu\n", (int)getpid(), v);
    if (write(fd, msg, (size_t)n) != n || mps_answer(fd, ans, sizeof(ans)) == 0) {
        close(fd);
        g_mps_pct = v < 100 ? (unsigned)v : 0;
        return CUDA_SUCCESS;
    }
    if (sscanf(ans, "REFUSED %u", &got) == 1) {
        close(fd);
        return (CUresult)got;
    }
    if (sscanf(ans, "OK %u %u", &server, &got) != 2) {
        close(fd);
        return CUDA_ERROR_MPS_CONNECTION_FAILED;
    }
    g_mps_pct = got >= 1 && got < 100 ? got : 0;
    g_mps_fd = fd;
    if (pthread_create(&t, NULL, mps_watch, (void *)(intptr_t)fd) == 0)
        pthread_detach(t);
    return CUDA_SUCCESS;
}

static CUresult do_init(void)
{
    char path[512];

    g_cfg_loaded = 0;   /* cuInit reads the config afresh (cuDriverGetVersion may have read it) */
    load_config_locked();
    if (g_cfg_loaded < 0)
        return CUDA_ERROR_NO_DEVICE;
    {
        CUresult rc = fault("cuInit");

        if (rc != CUDA_SUCCESS)
            return rc;
    }
    {
        CUresult rc = enumerate();

        if (rc != CUDA_SUCCESS)
            return rc;
    }
    if (g_ndev == 0)
        return CUDA_ERROR_NO_DEVICE;
    if (g_arena_base == 0) {
        /* Device addresses: a PROT_NONE reservation, so they never alias host memory and a
         * host dereference faults. Smaller fallbacks for tight RLIMIT_AS. */
        for (unsigned long long sz = ARENA_SIZE; sz >= (1ULL << 32); sz >>= 2) {
            void *p = mmap(NULL, sz, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

            if (p != MAP_FAILED) {
                g_arena_base = round_up((uintptr_t)p, GRAN);
                g_arena_end = (uintptr_t)p + sz;
                g_cursor = g_arena_base;
                break;
            }
        }
        if (g_arena_base == 0)
            return CUDA_ERROR_OUT_OF_MEMORY;
    }
    fg_state_path(&g_cfg, path, sizeof(path));
    if (fg_state_open(&g_shared, path, 1) < 0) {
        fprintf(stderr, "fakegpu: cuda: cannot open the shared state %s: %s (usage not shared)\n", path,
                strerror(errno));
    } else {
        int locked = fg_state_lock(&g_shared) == 0;

        if (fg_state_claim(&g_shared, (unsigned)getpid()) < 0)
            fprintf(stderr, "fakegpu: cuda: shared state %s is full (usage not shared)\n", path);
        if (locked)
            fg_state_unlock(&g_shared);
    }
    time_init();
    {
        CUresult rc = mps_init();

        if (rc != CUDA_SUCCESS)
            return rc;
    }
    for (int d = 0; d < g_ndev; d++) {
        memset(&g_prim[d], 0, sizeof(g_prim[d]));
        g_prim[d].kind = 1;
        g_prim[d].dev = d;
        memset(&g_default_pool[d], 0, sizeof(g_default_pool[d]));
        g_default_pool[d].live = 1;
        g_default_pool[d].is_default = 1;
        g_default_pool[d].dev = d;
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult cuInit(unsigned int Flags)
{
    int st;

    st = __atomic_load_n(&g_state, __ATOMIC_ACQUIRE);
    if (st == ST_FORKED)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    st = __atomic_load_n(&g_state, __ATOMIC_ACQUIRE);
    if (st == ST_UNINIT) {
        static int atfork_done;

        if (!atfork_done) {
            pthread_atfork(NULL, NULL, atfork_child);
            atfork_done = 1;
        }
        g_init_rc = do_init();
        __atomic_store_n(&g_state, g_init_rc == CUDA_SUCCESS ? ST_READY : ST_FAILED, __ATOMIC_RELEASE);
    }
    UNLOCK();
    return __atomic_load_n(&g_state, __ATOMIC_ACQUIRE) == ST_FORKED ? CUDA_ERROR_NOT_INITIALIZED : g_init_rc;
}

EXPORT CUresult cuDriverGetVersion(int *driverVersion)
{
    if (driverVersion == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    load_config_locked();
    *driverVersion = g_cfg_loaded > 0 ? g_cfg.cuda : GS_CUDA_API_VERSION;
    UNLOCK();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
{
    ENTER();
    if (ppExportTable == NULL || pExportTableId == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *ppExportTable = NULL;
    return CUDA_ERROR_NOT_SUPPORTED;   /* private tables: the fake has none */
}

/* The driver's cuInit under a name no interposer wraps: tests/vgpu/device_probe.c uses it to
 * initialise the driver as a program that reached it past the interposer would (the driver then
 * shows every GPU, whatever the slice). Not part of the real driver's ABI. */
/* A function of its own, not an alias: dladdr of cuInit's address must name cuInit (the
 * cuGetProcAddress checks read it), whichever alias the symbol table lists first. -Bsymbolic binds
 * the call to this library's cuInit. */
EXPORT CUresult fakegpu_cuInit_unhooked(unsigned int Flags)
{
    return cuInit(Flags);
}
