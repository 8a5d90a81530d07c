/*
 * NVML, isolated. NVML is closed, stateful and threaded and must be loaded from the driver root,
 * so it never runs in our (possibly privileged) process: a forked helper chroots into the driver
 * root, drops to an unprivileged identity, loads NVML, asks everything `info`/`list`/`configure`
 * need in one go, and writes one fixed-size reply on a socketpair. The parent waits with a
 * deadline; a hung NVML is killed, a crashing one is reported with its signal.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
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

#define REPLY_MAGIC 0x67734e56u /* "gsNV" */

enum reply_status {
        REPLY_OK = 0,
        REPLY_INIT_FAILED = 1,  /* library missing, privileges, nvmlInit */
        REPLY_QUERY_FAILED = 2, /* an NVML query failed */
        REPLY_CRASHED = 3,      /* a fatal signal in the helper (signo in `signo`) */
};

/* First message: who to kill if no answer comes in time. */
struct hello {
        uint32_t magic;
        int32_t pid;
};

struct reply {
        uint32_t magic;
        int32_t status;
        int32_t signo;
        char msg[GS_ERRMSG_MAX - 64];
        struct gs_device_info info;
};

const char *gs_brand_name(int brand)
{
        static const char *const names[] = {
                "Unknown", "Quadro",    "Tesla",     "NVS",       "GRID",   "GeForce",
                "TITAN",   "VApps",     "VPC",       "VCS",       "VWS",    "CloudGaming",
                "QuadroRTX", "NvidiaRTX", "Nvidia",  "GeForceRTX", "TitanRTX",
        };
        if (brand < 0 || (size_t)brand >= GS_ARRAY_SIZE(names))
                return "Unknown";
        return names[brand];
}

/* ------------------------------------------------------------------------------------------ */
/* The helper (child) side                                                                     */
/* ------------------------------------------------------------------------------------------ */

struct nvml {
        void *h;
        struct gs_nvml_fns fn;
};

static const char *nvml_strerror(const struct nvml *n, nvmlReturn_t rc)
{
        const char *s = n->fn.nvmlErrorString != NULL ? n->fn.nvmlErrorString(rc) : NULL;
        return s != NULL ? s : "unknown error";
}

#define QUERY(r, call, what, idx)                                                                  \
        do {                                                                                       \
                nvmlReturn_t rc_ = (call);                                                         \
                if (rc_ != NVML_SUCCESS) {                                                         \
                        snprintf((r)->msg, sizeof((r)->msg), "nvml error: %s(GPU %u): %s", what,  \
                                 (unsigned)(idx), nvml_strerror(n, rc_));                          \
                        (r)->status = REPLY_QUERY_FAILED;                                          \
                        return;                                                                    \
                }                                                                                  \
        } while (0)

static void query_mig(const struct nvml *n, nvmlDevice_t dev, struct gs_gpu *g, struct reply *r)
{
        unsigned max = 0;
        QUERY(r, n->fn.nvmlDeviceGetMaxMigDeviceCount(dev, &max), "nvmlDeviceGetMaxMigDeviceCount", g->index);
        for (unsigned i = 0; i < max && g->nmigs < GS_MAX_MIGS; i++) {
                nvmlDevice_t mig;
                nvmlReturn_t rc = n->fn.nvmlDeviceGetMigDeviceHandleByIndex(dev, i, &mig);
                if (rc == NVML_ERROR_NOT_FOUND || rc == NVML_ERROR_INVALID_ARGUMENT)
                        continue;
                QUERY(r, rc, "nvmlDeviceGetMigDeviceHandleByIndex", g->index);
                struct gs_mig_device *m = &g->migs[g->nmigs];
                m->index = i;
                QUERY(r, n->fn.nvmlDeviceGetUUID(mig, m->uuid, sizeof(m->uuid)), "nvmlDeviceGetUUID", g->index);
                QUERY(r, n->fn.nvmlDeviceGetGpuInstanceId(mig, &m->gi), "nvmlDeviceGetGpuInstanceId", g->index);
                QUERY(r, n->fn.nvmlDeviceGetComputeInstanceId(mig, &m->ci), "nvmlDeviceGetComputeInstanceId", g->index);
                nvmlMemory_t mem;
                if (n->fn.nvmlDeviceGetMemoryInfo(mig, &mem) == NVML_SUCCESS) {
                        m->memory_total = mem.total;
                        m->memory_used = mem.used;
                }
                g->nmigs++;
        }
}

static void query_all(const struct nvml *n, struct reply *r)
{
        struct gs_device_info *info = &r->info;
        char buf[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
        QUERY(r, n->fn.nvmlSystemGetDriverVersion(buf, sizeof(buf)), "nvmlSystemGetDriverVersion", 0);
        gs_strlcpy(info->driver_version, buf, sizeof(info->driver_version));
        int cuda = 0;
        QUERY(r, n->fn.nvmlSystemGetCudaDriverVersion(&cuda), "nvmlSystemGetCudaDriverVersion", 0);
        snprintf(info->cuda_version, sizeof(info->cuda_version), "%d.%d", NVML_CUDA_DRIVER_VERSION_MAJOR(cuda),
                 NVML_CUDA_DRIVER_VERSION_MINOR(cuda));
        unsigned count = 0;
        QUERY(r, n->fn.nvmlDeviceGetCount_v2(&count), "nvmlDeviceGetCount", 0);
        if (count > GS_MAX_GPUS) {
                snprintf(r->msg, sizeof(r->msg), "%u GPUs found, at most %d are supported", count, GS_MAX_GPUS);
                r->status = REPLY_QUERY_FAILED;
                return;
        }
        for (unsigned i = 0; i < count; i++) {
                struct gs_gpu *g = &info->gpus[i];
                nvmlDevice_t dev;
                g->index = i;
                QUERY(r, n->fn.nvmlDeviceGetHandleByIndex_v2(i, &dev), "nvmlDeviceGetHandleByIndex", i);
                QUERY(r, n->fn.nvmlDeviceGetMinorNumber(dev, &g->minor), "nvmlDeviceGetMinorNumber", i);
                QUERY(r, n->fn.nvmlDeviceGetName(dev, g->model, sizeof(g->model)), "nvmlDeviceGetName", i);
                nvmlBrandType_t brand = NVML_BRAND_UNKNOWN;
                QUERY(r, n->fn.nvmlDeviceGetBrand(dev, &brand), "nvmlDeviceGetBrand", i);
                gs_strlcpy(g->brand, gs_brand_name((int)brand), sizeof(g->brand));
                QUERY(r, n->fn.nvmlDeviceGetUUID(dev, g->uuid, sizeof(g->uuid)), "nvmlDeviceGetUUID", i);
                nvmlPciInfo_t pci;
                memset(&pci, 0, sizeof(pci));
                QUERY(r, n->fn.nvmlDeviceGetPciInfo_v3(dev, &pci), "nvmlDeviceGetPciInfo", i);
                snprintf(g->bus_id, sizeof(g->bus_id), "%08x:%02x:%02x.0", pci.domain, pci.bus, pci.device);
                int major = 0, minor = 0;
                QUERY(r, n->fn.nvmlDeviceGetCudaComputeCapability(dev, &major, &minor),
                      "nvmlDeviceGetCudaComputeCapability", i);
                snprintf(g->arch, sizeof(g->arch), "%d.%d", major, minor);
                nvmlMemory_t mem;
                QUERY(r, n->fn.nvmlDeviceGetMemoryInfo(dev, &mem), "nvmlDeviceGetMemoryInfo", i);
                g->memory_total = mem.total;
                g->memory_used = mem.used;
                /* Optional (the observer's figures): NOT_SUPPORTED on MIG-enabled GPUs, absent in
                 * old drivers; never a reason to fail the query. */
                nvmlUtilization_t util;
                if (n->fn.nvmlDeviceGetUtilizationRates != NULL &&
                    n->fn.nvmlDeviceGetUtilizationRates(dev, &util) == NVML_SUCCESS) {
                        g->utilization_valid = true;
                        g->utilization_gpu = util.gpu > 100 ? 100 : util.gpu;
                        g->utilization_memory = util.memory > 100 ? 100 : util.memory;
                }
                unsigned cur = 0, pending = 0;
                nvmlReturn_t rc = n->fn.nvmlDeviceGetMigMode(dev, &cur, &pending);
                if (rc == NVML_SUCCESS) {
                        g->mig_capable = true;
                        g->mig_enabled = cur == NVML_DEVICE_MIG_ENABLE;
                } else if (rc != NVML_ERROR_NOT_SUPPORTED) {
                        QUERY(r, rc, "nvmlDeviceGetMigMode", i);
                }
                if (g->mig_enabled) {
                        query_mig(n, dev, g, r);
                        if (r->status != REPLY_OK)
                                return;
                }
                info->ngpus = i + 1;
        }
}

/* Prefer the versioned symbol, then the old name (older drivers). */
static void *sym2(void *h, const char *a, const char *b)
{
        void *p = dlsym(h, a);
        return p != NULL || b == NULL ? p : dlsym(h, b);
}

static int nvml_load(struct nvml *n, const char *path, struct reply *r)
{
        memset(n, 0, sizeof(*n));
        n->h = dlopen(path != NULL ? path : "libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
        if (n->h == NULL) {
                const char *e = dlerror();
                snprintf(r->msg, sizeof(r->msg), "load library failed: %s", e != NULL ? e : "unknown error");
                return -1;
        }
        n->fn.nvmlInit_v2 = (gs_nvmlInit_v2_fn)sym2(n->h, "nvmlInit_v2", "nvmlInit");
        n->fn.nvmlShutdown = (gs_nvmlShutdown_fn)dlsym(n->h, "nvmlShutdown");
        n->fn.nvmlErrorString = (gs_nvmlErrorString_fn)dlsym(n->h, "nvmlErrorString");
        n->fn.nvmlSystemGetDriverVersion = (gs_nvmlSystemGetDriverVersion_fn)dlsym(n->h, "nvmlSystemGetDriverVersion");
        n->fn.nvmlSystemGetCudaDriverVersion = (gs_nvmlSystemGetCudaDriverVersion_fn)sym2(
                n->h, "nvmlSystemGetCudaDriverVersion", "nvmlSystemGetCudaDriverVersion_v2");
        n->fn.nvmlDeviceGetCount_v2 = (gs_nvmlDeviceGetCount_v2_fn)sym2(n->h, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
        n->fn.nvmlDeviceGetHandleByIndex_v2 = (gs_nvmlDeviceGetHandleByIndex_v2_fn)sym2(
                n->h, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
        n->fn.nvmlDeviceGetMinorNumber = (gs_nvmlDeviceGetMinorNumber_fn)dlsym(n->h, "nvmlDeviceGetMinorNumber");
        n->fn.nvmlDeviceGetName = (gs_nvmlDeviceGetName_fn)dlsym(n->h, "nvmlDeviceGetName");
        n->fn.nvmlDeviceGetBrand = (gs_nvmlDeviceGetBrand_fn)dlsym(n->h, "nvmlDeviceGetBrand");
        n->fn.nvmlDeviceGetUUID = (gs_nvmlDeviceGetUUID_fn)dlsym(n->h, "nvmlDeviceGetUUID");
        n->fn.nvmlDeviceGetPciInfo_v3 = (gs_nvmlDeviceGetPciInfo_v3_fn)sym2(n->h, "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2");
        if (n->fn.nvmlDeviceGetPciInfo_v3 == NULL)
                n->fn.nvmlDeviceGetPciInfo_v3 = (gs_nvmlDeviceGetPciInfo_v3_fn)dlsym(n->h, "nvmlDeviceGetPciInfo");
        n->fn.nvmlDeviceGetCudaComputeCapability =
                (gs_nvmlDeviceGetCudaComputeCapability_fn)dlsym(n->h, "nvmlDeviceGetCudaComputeCapability");
        n->fn.nvmlDeviceGetMemoryInfo = (gs_nvmlDeviceGetMemoryInfo_fn)dlsym(n->h, "nvmlDeviceGetMemoryInfo");
        n->fn.nvmlDeviceGetMigMode = (gs_nvmlDeviceGetMigMode_fn)dlsym(n->h, "nvmlDeviceGetMigMode");
        n->fn.nvmlDeviceGetMaxMigDeviceCount = (gs_nvmlDeviceGetMaxMigDeviceCount_fn)dlsym(n->h, "nvmlDeviceGetMaxMigDeviceCount");
        n->fn.nvmlDeviceGetMigDeviceHandleByIndex =
                (gs_nvmlDeviceGetMigDeviceHandleByIndex_fn)dlsym(n->h, "nvmlDeviceGetMigDeviceHandleByIndex");
        n->fn.nvmlDeviceGetGpuInstanceId = (gs_nvmlDeviceGetGpuInstanceId_fn)dlsym(n->h, "nvmlDeviceGetGpuInstanceId");
        n->fn.nvmlDeviceGetComputeInstanceId = (gs_nvmlDeviceGetComputeInstanceId_fn)dlsym(n->h, "nvmlDeviceGetComputeInstanceId");
        n->fn.nvmlDeviceGetUtilizationRates = (gs_nvmlDeviceGetUtilizationRates_fn)dlsym(n->h, "nvmlDeviceGetUtilizationRates");

        const struct {
                const char *name;
                const void *p;
        } required[] = {
                {"nvmlInit_v2", (const void *)n->fn.nvmlInit_v2},
                {"nvmlShutdown", (const void *)n->fn.nvmlShutdown},
                {"nvmlSystemGetDriverVersion", (const void *)n->fn.nvmlSystemGetDriverVersion},
                {"nvmlSystemGetCudaDriverVersion", (const void *)n->fn.nvmlSystemGetCudaDriverVersion},
                {"nvmlDeviceGetCount", (const void *)n->fn.nvmlDeviceGetCount_v2},
                {"nvmlDeviceGetHandleByIndex", (const void *)n->fn.nvmlDeviceGetHandleByIndex_v2},
                {"nvmlDeviceGetMinorNumber", (const void *)n->fn.nvmlDeviceGetMinorNumber},
                {"nvmlDeviceGetName", (const void *)n->fn.nvmlDeviceGetName},
                {"nvmlDeviceGetBrand", (const void *)n->fn.nvmlDeviceGetBrand},
                {"nvmlDeviceGetUUID", (const void *)n->fn.nvmlDeviceGetUUID},
                {"nvmlDeviceGetPciInfo", (const void *)n->fn.nvmlDeviceGetPciInfo_v3},
                {"nvmlDeviceGetCudaComputeCapability", (const void *)n->fn.nvmlDeviceGetCudaComputeCapability},
                {"nvmlDeviceGetMemoryInfo", (const void *)n->fn.nvmlDeviceGetMemoryInfo},
                {"nvmlDeviceGetMigMode", (const void *)n->fn.nvmlDeviceGetMigMode},
                {"nvmlDeviceGetMaxMigDeviceCount", (const void *)n->fn.nvmlDeviceGetMaxMigDeviceCount},
                {"nvmlDeviceGetMigDeviceHandleByIndex", (const void *)n->fn.nvmlDeviceGetMigDeviceHandleByIndex},
                {"nvmlDeviceGetGpuInstanceId", (const void *)n->fn.nvmlDeviceGetGpuInstanceId},
                {"nvmlDeviceGetComputeInstanceId", (const void *)n->fn.nvmlDeviceGetComputeInstanceId},
        };
        for (size_t i = 0; i < GS_ARRAY_SIZE(required); i++) {
                if (required[i].p == NULL) {
                        snprintf(r->msg, sizeof(r->msg), "load library failed: %s: symbol %s not found",
                                 path != NULL ? path : "libnvidia-ml.so.1", required[i].name);
                        return -1;
                }
        }
        return 0;
}

static int write_all(int fd, const void *buf, size_t len)
{
        const char *p = buf;
        while (len > 0) {
                ssize_t n = write(fd, p, len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -1;
                }
                p += n;
                len -= (size_t)n;
        }
        return 0;
}

static int drop_privileges(uid_t uid, gid_t gid, char *msg, size_t msglen)
{
        if (geteuid() == 0) {
                if (setgroups(1, &gid) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0) {
                        snprintf(msg, msglen, "privilege change failed (uid %u gid %u): %s", (unsigned)uid,
                                 (unsigned)gid, strerror(errno));
                        return -1;
                }
        }
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
                snprintf(msg, msglen, "no_new_privs failed: %s", strerror(errno));
                return -1;
        }
        return 0;
}

int gs_nvml_confine(const struct gs_context *ctx, char *msg, size_t len)
{
        if (strcmp(ctx->root, "/") != 0) {
                /* Libraries NVML needs that a minimal driver root may lack (as nvidia-container-cli). */
                static const char *const preload[] = {"libm.so.6", "librt.so.1", "libpthread.so.0", "libdl.so.2"};
                for (size_t i = 0; i < GS_ARRAY_SIZE(preload); i++)
                        dlopen(preload[i], RTLD_NOW | RTLD_GLOBAL);
                if (fchdir(ctx->rootfd) < 0 || chroot(".") < 0 || chdir("/") < 0) {
                        snprintf(msg, len, "chroot to %s failed: %s", ctx->root, strerror(errno));
                        return -1;
                }
        }
        return drop_privileges(ctx->uid, ctx->gid, msg, len);
}

/* The helper is not our child (see gs_nvml_query), so it reports its own crash. */
static struct reply g_reply; /* large: keep it off the stack */
static int g_sock = -1;

static void on_fatal_signal(int sig)
{
        g_reply.status = REPLY_CRASHED;
        g_reply.signo = sig;
        const char *p = (const char *)&g_reply;
        size_t left = sizeof(g_reply);
        while (left > 0) {
                ssize_t n = write(g_sock, p, left);
                if (n <= 0)
                        break;
                p += n;
                left -= (size_t)n;
        }
        raise(sig); /* SA_RESETHAND: now the default action */
}

static __attribute__((noreturn)) void helper_main(const struct gs_context *ctx, const char *nvml_path, int sock)
{
        struct reply *rp = &g_reply;
#define r (*rp)
        memset(&r, 0, sizeof(r));
        r.magic = REPLY_MAGIC;
        r.status = REPLY_INIT_FAILED;
        g_sock = sock;

        struct hello h = {.magic = REPLY_MAGIC, .pid = getpid()};
        if (write(sock, &h, sizeof(h)) != (ssize_t)sizeof(h))
                _exit(1);
        /* Never outlive the deadline, even if the caller is gone: SIGALRM ends a hung NVML. */
        alarm(ctx->nvml_timeout_ms / 1000 + 2);
        static const int fatal[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS};
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_fatal_signal;
        sa.sa_flags = (int)SA_RESETHAND;
        sigemptyset(&sa.sa_mask);
        for (size_t i = 0; i < GS_ARRAY_SIZE(fatal); i++)
                sigaction(fatal[i], &sa, NULL);
        prctl(PR_SET_NAME, "gpuslice-nvml");
        /* NVML must not write into our stdout (it carries `list` output). */
        int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (devnull >= 0) {
                dup2(devnull, STDIN_FILENO);
                dup2(devnull, STDOUT_FILENO);
                close(devnull);
        }

        if (gs_nvml_confine(ctx, r.msg, sizeof(r.msg)) < 0)
                goto reply;

        struct nvml n;
        if (nvml_load(&n, nvml_path, &r) < 0)
                goto reply;
        /* nvmlInitWithFlags(NO_ATTACH) would be faster but enumerates no GPUs (seen on driver
         * 580.159.04), so the plain init it is. */
        nvmlReturn_t rc = n.fn.nvmlInit_v2();
        if (rc != NVML_SUCCESS) {
                snprintf(r.msg, sizeof(r.msg), "nvml error: %s", nvml_strerror(&n, rc));
                goto reply;
        }
        r.status = REPLY_OK;
        query_all(&n, &r);
        /* One-shot helper: no nvmlShutdown, process exit releases NVML's handles, and nobody
         * waits for an orderly teardown. */
        if (write_all(sock, &r, sizeof(r)) < 0)
                _exit(1);
        _exit(0);
reply:
        write_all(sock, &r, sizeof(r));
        _exit(0);
#undef r
}

/* ------------------------------------------------------------------------------------------ */
/* The parent side                                                                             */
/* ------------------------------------------------------------------------------------------ */

static void sanitize(struct gs_device_info *info)
{
#define TERM(s) ((s)[sizeof(s) - 1] = '\0')
        TERM(info->driver_version);
        TERM(info->cuda_version);
        if (info->ngpus > GS_MAX_GPUS)
                info->ngpus = GS_MAX_GPUS;
        for (unsigned i = 0; i < info->ngpus; i++) {
                struct gs_gpu *g = &info->gpus[i];
                TERM(g->model);
                TERM(g->brand);
                TERM(g->uuid);
                TERM(g->bus_id);
                TERM(g->arch);
                if (g->nmigs > GS_MAX_MIGS)
                        g->nmigs = GS_MAX_MIGS;
                for (unsigned j = 0; j < g->nmigs; j++)
                        TERM(g->migs[j].uuid);
        }
#undef TERM
}

/* Read exactly len bytes before the deadline: 1 done, 0 timed out, -1 EOF or error. */
static int read_deadline(int fd, void *buf, size_t len, long long deadline)
{
        size_t got = 0;
        while (got < len) {
                long long left = deadline - gs_now_ms();
                if (left <= 0)
                        return 0;
                struct pollfd pfd = {.fd = fd, .events = POLLIN};
                int pr = poll(&pfd, 1, (int)(left > 60000 ? 60000 : left));
                if (pr < 0 && errno != EINTR)
                        return -1;
                if (pr <= 0)
                        continue;
                ssize_t n = read(fd, (char *)buf + got, len - got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return -1;
                got += (size_t)n;
        }
        return 1;
}

/*
 * Directly, the helper is a grandchild: the child forks it and exits at once, so the helper is
 * nobody's child of ours and we never wait for its exit, which (closing NVML's device handles)
 * takes ~3 ms after it has answered. It sends its pid first (so a hung one can be killed),
 * reports a crash itself (signal handlers), and cannot outlive the deadline (alarm) even if we
 * die. Returns our end of its socket.
 */
static int fork_helper(const struct gs_context *ctx, const char *nvml_path, struct gs_error *err)
{
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
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
                pid_t g = fork();
                if (g == 0)
                        helper_main(ctx, nvml_path, sv[1]);
                _exit(g < 0 ? 1 : 0);
        }
        close(sv[1]);
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                close(sv[0]);
                return gs_error_set(err, GS_EHELPER, "cannot start the nvml helper (fork failed)");
        }
        return sv[0];
}

/* ------------------------------------------------------------------------------------------ */
/* The launcher (context.h): forks the helpers of a caller that has threads                    */
/* ------------------------------------------------------------------------------------------ */

/* One request: the helper's end of its socket rides along (SCM_RIGHTS). */
struct launch_req {
        uint32_t magic;
        char path[PATH_MAX]; /* "" = let the loader search */
};

struct gs_nvml_launcher {
        int sock; /* SOCK_SEQPACKET: one request a message; EOF ends the launcher */
        pid_t pid;
        bool gone; /* it died: we fork the helpers ourselves (said once) */
};

/* 1 with *fd set, 0 at EOF, -1 on error (a malformed request is dropped here). */
static int recv_req(int sock, struct launch_req *req, int *fd)
{
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int))];
        } c;
        struct iovec iov = {.iov_base = req, .iov_len = sizeof(*req)};
        struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf, .msg_controllen = sizeof(c.buf)};
        ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
        if (n <= 0)
                return n == 0 ? 0 : -1;
        struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
        *fd = -1;
        if (cm != NULL && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
            cm->cmsg_len == CMSG_LEN(sizeof(int)))
                memcpy(fd, CMSG_DATA(cm), sizeof(int));
        if (*fd >= 0 && n == (ssize_t)sizeof(*req) && req->magic == REPLY_MAGIC)
                return 1;
        if (*fd >= 0)
                close(*fd);
        errno = EPROTO;
        return -1;
}

/* The launcher: one thread, no allocation of its own; each helper is forked from here. Helpers
 * are reaped by the kernel (SA_NOCLDWAIT): nobody waits for their teardown. */
static __attribute__((noreturn)) void launcher_main(const struct gs_context *ctx, int sock)
{
        prctl(PR_SET_NAME, "gs-nvml-launch");
        struct sigaction sa = {.sa_handler = SIG_IGN, .sa_flags = SA_NOCLDWAIT};
        sigemptyset(&sa.sa_mask);
        sigaction(SIGCHLD, &sa, NULL);
        for (;;) {
                struct launch_req req;
                int fd = -1;
                int rc = recv_req(sock, &req, &fd);
                if (rc == 0)
                        _exit(0); /* stopped, or the caller is gone */
                if (rc < 0) {
                        if (errno == EINTR || errno == EPROTO)
                                continue;
                        _exit(1);
                }
                req.path[sizeof(req.path) - 1] = '\0';
                pid_t pid = fork();
                if (pid == 0) {
                        close(sock);
                        signal(SIGCHLD, SIG_DFL);
                        helper_main(ctx, req.path[0] != '\0' ? req.path : NULL, fd);
                }
                if (pid < 0) { /* the caller reads this instead of the helper's greeting */
                        struct hello h = {.magic = REPLY_MAGIC, .pid = -1};
                        write_all(fd, &h, sizeof(h));
                }
                close(fd);
        }
}

struct gs_nvml_launcher *gs_nvml_launcher_start(const struct gs_context *ctx, struct gs_error *err)
{
        gs_autofree struct gs_nvml_launcher *l = calloc(1, sizeof(*l));
        int sv[2];
        if (l == NULL) {
                gs_error_set(err, GS_ENOMEM, "out of memory");
                return NULL;
        }
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
                gs_error_sys(err, "socketpair");
                return NULL;
        }
        fflush(NULL);
        l->pid = fork();
        if (l->pid < 0) {
                gs_error_sys(err, "cannot start the nvml launcher: fork");
                close(sv[0]);
                close(sv[1]);
                return NULL;
        }
        if (l->pid == 0) {
                close(sv[0]);
                launcher_main(ctx, sv[1]);
        }
        close(sv[1]);
        l->sock = sv[0];
        gs_log_info("nvml launcher started (pid %d)", (int)l->pid);
        return gs_steal_ptr(&l);
}

void gs_nvml_launcher_stop(struct gs_nvml_launcher *l)
{
        if (l == NULL)
                return;
        close(l->sock); /* EOF: it exits */
        int status;
        if (gs_wait_until(l->pid, gs_now_ms() + 2000, &status) == 0) {
                kill(l->pid, SIGKILL);
                while (waitpid(l->pid, &status, 0) < 0 && errno == EINTR) {
                }
        }
        free(l);
}

/* Ask the launcher for a helper: our end of its socket, or -1 with errno when the launcher is gone. */
static int launch_helper(struct gs_nvml_launcher *l, const char *nvml_path)
{
        struct launch_req req = {.magic = REPLY_MAGIC};
        if (nvml_path != NULL && !gs_strlcpy(req.path, nvml_path, sizeof(req.path))) {
                errno = ENAMETOOLONG;
                return -1;
        }
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return -1;
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int))];
        } c;
        memset(&c, 0, sizeof(c));
        struct iovec iov = {.iov_base = &req, .iov_len = sizeof(req)};
        struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf, .msg_controllen = sizeof(c.buf)};
        struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &sv[1], sizeof(int));
        ssize_t n;
        while ((n = sendmsg(l->sock, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
        }
        int saved = errno;
        close(sv[1]);
        if (n != (ssize_t)sizeof(req)) {
                close(sv[0]);
                errno = n < 0 ? saved : EPROTO;
                return -1;
        }
        return sv[0];
}

/* Our end of a new helper's socket: from the launcher when there is one (and it is alive). */
static int start_helper(const struct gs_context *ctx, const char *nvml_path, struct gs_error *err)
{
        struct gs_nvml_launcher *l = ctx->nvml_launcher;
        if (l == NULL || l->gone)
                return fork_helper(ctx, nvml_path, err);
        int sock = launch_helper(l, nvml_path);
        if (sock >= 0)
                return sock;
        if (errno != EPIPE && errno != ECONNRESET && errno != ENOTCONN)
                return gs_error_sys(err, "cannot start the nvml helper: launcher");
        gs_log_warn("the nvml launcher (pid %d) is gone: forking the helpers from here", (int)l->pid);
        l->gone = true;
        return fork_helper(ctx, nvml_path, err);
}

int gs_nvml_query(const struct gs_context *ctx, const char *nvml_path, struct gs_device_info *out,
                  struct gs_error *err)
{
        long long start = gs_now_ms();
        gs_autoclose int sock = start_helper(ctx, nvml_path, err);
        if (sock < 0)
                return -1;
        long long deadline = start + ctx->nvml_timeout_ms;
        struct hello h = {0};
        gs_autofree struct reply *r = calloc(1, sizeof(*r));
        if (r == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        int rc = read_deadline(sock, &h, sizeof(h), deadline);
        if (rc == 1 && h.magic == REPLY_MAGIC && h.pid < 0)
                return gs_error_set(err, GS_EHELPER, "cannot start the nvml helper (fork failed)");
        if (rc == 1 && (h.magic != REPLY_MAGIC || h.pid <= 1))
                return gs_error_set(err, GS_EHELPER, "nvml helper sent a malformed greeting");
        /* Pin the helper with a pidfd at once, so a kill at the deadline can never hit a
         * recycled pid (the helper is not our child: nothing else holds its pid for us). */
        gs_autoclose int pidfd = rc == 1 ? (int)syscall(SYS_pidfd_open, h.pid, 0) : -1;
        bool no_pidfd = pidfd < 0 && errno == ENOSYS;
        if (rc == 1)
                rc = read_deadline(sock, r, sizeof(*r), deadline);
        if (rc == 0) {
                if (pidfd >= 0)
                        syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
                else if (h.pid > 1 && no_pidfd)
                        kill(h.pid, SIGKILL); /* kernel < 5.3 */
                gs_log_err("nvml helper timed out after %u ms", ctx->nvml_timeout_ms);
                return gs_error_set(err, GS_ETIMEOUT,
                                    "nvml helper timed out after %.1f s (NVML hung; raise --nvml-timeout if the "
                                    "driver is just slow, e.g. with persistence mode off)",
                                    ctx->nvml_timeout_ms / 1000.0);
        }
        if (rc < 0)
                return gs_error_set(err, GS_EHELPER, "nvml helper died before answering");
        gs_log_info("nvml helper answered in %lld ms (pid %d)", gs_now_ms() - start, (int)h.pid);
        if (r->magic != REPLY_MAGIC)
                return gs_error_set(err, GS_EHELPER, "nvml helper sent a malformed reply");
        r->msg[sizeof(r->msg) - 1] = '\0';
        switch (r->status) {
        case REPLY_OK:
                break;
        case REPLY_CRASHED:
                return gs_error_set(err, GS_EHELPER, "nvml helper died before answering: killed by signal %d (%s)",
                                    r->signo, strsignal(r->signo));
        case REPLY_INIT_FAILED:
                return gs_error_set(err, GS_EINIT, "%s", r->msg);
        default:
                return gs_error_set(err, GS_ENVML, "%s", r->msg);
        }
        sanitize(&r->info);
        memcpy(out, &r->info, sizeof(*out));
        return 0;
}
