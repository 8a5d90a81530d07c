/* Unit tests of the device plugin's parts (cmocka): the plan from the config, preferred
 * allocation, Allocate's answers, grpc-message coding, and gRPC over HTTP/2 between a client and a
 * server connection of h2c.c on a socketpair (replies, errors, a deadline, size limits). */
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/proc.h"
#include "dra/claim.h"
#include "dra/slices.h"
#include "k8s/allocate.h"
#include "k8s/prefer.h"
#include "kubelet/h2c.h"
#include "kubelet/health.h"
#include "kubelet/resources.h"
#define GS_NVML_NO_PROTOTYPES
#include "abi/nvml.h"

static struct gs_device_info dev;
static struct gs_hostconfig hc;
static struct gs_k8s_plan plan;
static struct gs_k8s_health health;

/* GPU 0 and 1: 80 GiB; GPU 2: MIG mode with two MIG devices (gi 1, 2); GPU 3: 20 GiB. */
static int setup(void **state)
{
        (void)state;
        memset(&dev, 0, sizeof(dev));
        memset(&health, 0, sizeof(health));
        dev.ngpus = 4;
        for (unsigned i = 0; i < dev.ngpus; i++) {
                struct gs_gpu *g = &dev.gpus[i];
                g->index = i;
                g->minor = i;
                g->memory_total = i == 3 ? 20ull << 30 : 81559ull << 20;
                snprintf(g->uuid, sizeof(g->uuid), "GPU-%u", i);
                snprintf(g->bus_id, sizeof(g->bus_id), "00000000:0%u:00.0", i + 1);
        }
        dev.gpus[2].mig_enabled = true;
        dev.gpus[2].nmigs = 2;
        for (unsigned j = 0; j < 2; j++) {
                dev.gpus[2].migs[j].index = j;
                dev.gpus[2].migs[j].gi = 1 + j;
                snprintf(dev.gpus[2].migs[j].uuid, sizeof(dev.gpus[2].migs[j].uuid), "MIG-%u", j);
        }
        gs_hostconfig_defaults(&hc);
        return 0;
}

static int teardown(void **state)
{
        (void)state;
        gs_k8s_plan_release(&plan);
        return 0;
}

static void add_slice(const char *s)
{
        strcpy(hc.dp.slices.v[hc.dp.slices.n++], s);
}

static const struct gs_k8s_resource *res(const char *name)
{
        for (size_t i = 0; i < plan.nres; i++)
                if (strcmp(plan.res[i].name, name) == 0)
                        return &plan.res[i];
        fail_msg("no resource %s", name);
        return NULL;
}

static void test_plan(void **state)
{
        (void)state;
        struct gs_error err = {0};
        add_slice("a-4g=4Gi,25");
        add_slice("m=1Gi");
        add_slice("huge=40Gi");
        assert_int_equal(gs_k8s_plan_build(&hc.dp, &dev, &plan, &err), 0);
        assert_int_equal(plan.nres, 4);
        const struct gs_k8s_resource *w = res("nvidia.com/gpu");
        assert_false(w->shared);
        assert_int_equal(w->ndevs, 5); /* GPU 0, 1, the 2 MIG devices of GPU 2, GPU 3 */
        assert_string_equal(w->devs[2].id, "MIG-0");
        assert_int_equal(w->devs[2].gpu, 2);
        assert_int_equal(w->devs[2].mig, 0);
        assert_string_equal(w->endpoint, "gpuslice-nvidia.com_gpu.sock");
        assert_string_equal(w->env_key, "GPUSLICE_K8S_DEVICES_NVIDIA_COM_GPU");
        const struct gs_k8s_resource *a = res("gpuslice.io/a-4g");
        assert_true(a->shared);
        assert_int_equal(a->memory, 4ull << 30);
        assert_int_equal(a->compute, 25);
        assert_string_equal(a->cdi_slice, "a-4g");
        /* 100 / 25 = 4 shares per GPU; GPU 2 (MIG) none; GPU 3 (20 GiB): 4 as well */
        assert_int_equal(gs_k8s_shares_of(a, 0), 4);
        assert_int_equal(gs_k8s_shares_of(a, 2), 0);
        assert_int_equal(gs_k8s_shares_of(a, 3), 4);
        assert_string_equal(a->devs[1].id, "GPU-0::1");
        /* memory only: 79 GiB / 1 GiB, capped at 32 */
        assert_int_equal(gs_k8s_shares_of(res("gpuslice.io/m"), 0), GS_K8S_MAX_SHARES);
        assert_int_equal(gs_k8s_shares_of(res("gpuslice.io/m"), 3), 20);
        /* 40 GiB shares: one per 80 GiB GPU, none of the 20 GiB one */
        assert_int_equal(gs_k8s_shares_of(res("gpuslice.io/huge"), 1), 1);
        assert_int_equal(gs_k8s_shares_of(res("gpuslice.io/huge"), 3), 0);
        assert_non_null(gs_k8s_find(a, "GPU-3::3"));
        assert_null(gs_k8s_find(a, "GPU-3::4"));
}

static void test_plan_replicas(void **state)
{
        (void)state;
        struct gs_error err = {0};
        hc.dp.replicas = 3;
        strcpy(hc.dp.replica_memory, "20Gi");
        assert_int_equal(gs_k8s_plan_build(&hc.dp, &dev, &plan, &err), 0);
        const struct gs_k8s_resource *w = res("nvidia.com/gpu");
        assert_true(w->shared);
        assert_string_equal(w->cdi_slice, "k8s-replica");
        assert_int_equal(gs_k8s_shares_of(w, 0), 3);
        assert_int_equal(w->ndevs, 3 * 3 + 2); /* 3 GPUs x 3 replicas + 2 MIG devices */
        assert_string_equal(w->devs[0].id, "GPU-0::0");
}

static void expect_plan_error(const char *what)
{
        struct gs_error err = {0};
        assert_int_equal(gs_k8s_plan_build(&hc.dp, &dev, &plan, &err), -1);
        if (strstr(err.msg, what) == NULL)
                fail_msg("'%s' lacks '%s'", err.msg, what);
        gs_hostconfig_defaults(&hc);
}

static void test_plan_errors(void **state)
{
        (void)state;
        strcpy(hc.dp.resource, "gpu");
        expect_plan_error("device-plugin.resource: 'gpu' is not DOMAIN/NAME");
        strcpy(hc.dp.resource, "Nvidia.com/gpu");
        expect_plan_error("DNS subdomain");
        strcpy(hc.dp.resource, "nvidia.com/-gpu");
        expect_plan_error("a letter or digit at both ends");
        add_slice("x=1Gi");
        add_slice("x=2Gi");
        expect_plan_error("gpuslice.io/x is offered twice");
        add_slice("bad size=1Gi");
        expect_plan_error("device-plugin.slices");
        strcpy(hc.dp.allocate, "envvar");
        expect_plan_error("device-plugin.allocate");
        strcpy(hc.dp.cdi_kind, "nokind");
        expect_plan_error("device-plugin.cdi-kind");
        strcpy(hc.dp.replica_memory, "1Gi");
        expect_plan_error("need replicas > 1");
        hc.dp.resource[0] = '\0';
        expect_plan_error("nothing to offer");
        strcpy(hc.dp.slice_domain, "x.io");
        add_slice("k8s-replica=1Gi");
        hc.dp.replicas = 2;
        strcpy(hc.dp.replica_memory, "1Gi");
        expect_plan_error("the name 'k8s-replica' is taken");
}

static void test_format_size(void **state)
{
        (void)state;
        char b[32];
        gs_k8s_format_size(8ull << 30, b, sizeof(b));
        assert_string_equal(b, "8Gi");
        gs_k8s_format_size(1536ull << 20, b, sizeof(b));
        assert_string_equal(b, "1536Mi");
        gs_k8s_format_size(1000, b, sizeof(b));
        assert_string_equal(b, "1000");
        gs_k8s_format_size(0, b, sizeof(b));
        assert_string_equal(b, "0");
}

/* Indexes of all devices of r. */
static size_t all(const struct gs_k8s_resource *r, size_t *out)
{
        for (size_t i = 0; i < r->ndevs; i++)
                out[i] = i;
        return r->ndevs;
}

static void test_prefer_shares(void **state)
{
        (void)state;
        struct gs_error err = {0};
        add_slice("q=4Gi,25");
        assert_int_equal(gs_k8s_plan_build(&hc.dp, &dev, &plan, &err), 0);
        const struct gs_k8s_resource *r = res("gpuslice.io/q");
        size_t av[64], out[16], n = all(r, av);
        /* 3 shares: all on GPU 0 (the first that fits, fewest GPUs) */
        assert_int_equal(gs_k8s_prefer(&plan, r, av, n, NULL, 0, 3, out, &err), 0);
        for (int i = 0; i < 3; i++)
                assert_int_equal(r->devs[out[i]].gpu, 0);
        /* 5: a whole GPU's 4 and 1 more */
        assert_int_equal(gs_k8s_prefer(&plan, r, av, n, NULL, 0, 5, out, &err), 0);
        unsigned on0 = 0;
        for (int i = 0; i < 5; i++)
                on0 += r->devs[out[i]].gpu == r->devs[out[0]].gpu;
        assert_int_equal(on0, 4);
        /* best fit: GPU 1 has only 2 free, GPU 0 all 4: 2 shares go to GPU 1 */
        size_t some[6] = {0, 1, 2, 3, 6, 7}; /* GPU 0: ::0-3, GPU 1: ::2, ::3 */
        assert_int_equal(gs_k8s_prefer(&plan, r, some, 6, NULL, 0, 2, out, &err), 0);
        assert_int_equal(r->devs[out[0]].gpu, 1);
        assert_int_equal(r->devs[out[1]].gpu, 1);
        /* a must-include share on GPU 3 keeps the rest there */
        const struct gs_k8s_device *m = gs_k8s_find(r, "GPU-3::2");
        size_t must = (size_t)(m - r->devs);
        assert_int_equal(gs_k8s_prefer(&plan, r, av, n, &must, 1, 3, out, &err), 0);
        assert_int_equal(out[0], must);
        assert_int_equal(r->devs[out[1]].gpu, 3);
        assert_int_equal(r->devs[out[2]].gpu, 3);
        /* impossible sizes */
        assert_int_equal(gs_k8s_prefer(&plan, r, av, n, NULL, 0, n + 1, out, &err), -1);
        assert_int_equal(gs_k8s_prefer(&plan, r, av, n, NULL, 0, 0, out, &err), -1);
        size_t twice[2] = {must, must};
        assert_int_equal(gs_k8s_prefer(&plan, r, av, n, twice, 2, 3, out, &err), -1);
}

static void test_prefer_whole(void **state)
{
        (void)state;
        struct gs_error err = {0};
        assert_int_equal(gs_k8s_plan_build(&hc.dp, &dev, &plan, &err), 0);
        /* GPUs 0 and 3 on NUMA node 0 behind one switch, GPU 1 on node 1 */
        plan.topo.numa[0] = plan.topo.numa[3] = 0;
        plan.topo.numa[1] = 1;
        strcpy(plan.topo.pci[0], "pci0000:00/0000:00:01.0/0000:01:00.0");
        strcpy(plan.topo.pci[3], "pci0000:00/0000:00:01.0/0000:04:00.0");
        strcpy(plan.topo.pci[1], "pci0000:80/0000:80:01.0/0000:81:00.0");
        const struct gs_k8s_resource *w = res("nvidia.com/gpu");
        size_t av[3] = {0, 1, 4}, out[4]; /* GPU 0, GPU 1, GPU 3 */
        assert_int_equal(gs_k8s_prefer(&plan, w, av, 3, NULL, 0, 2, out, &err), 0);
        assert_string_equal(w->devs[out[0]].id, "GPU-0");
        assert_string_equal(w->devs[out[1]].id, "GPU-3");
        size_t must = 1; /* GPU 1 */
        assert_int_equal(gs_k8s_prefer(&plan, w, av, 3, &must, 1, 2, out, &err), 0);
        assert_string_equal(w->devs[out[0]].id, "GPU-1");
        /* the two MIG devices of one GPU go together */
        size_t mav[4] = {0, 2, 1, 3}; /* GPU-0, MIG-0, GPU-1, MIG-1 */
        assert_int_equal(gs_k8s_prefer(&plan, w, mav, 4, NULL, 0, 2, out, &err), 0);
        assert_string_equal(w->devs[out[0]].id, "MIG-0");
        assert_string_equal(w->devs[out[1]].id, "MIG-1");
}

/* Allocate, and the answer's env value of `key` (NULL if absent). */
static const char *env_of(const V1beta1__ContainerAllocateResponse *o, const char *key)
{
        for (size_t i = 0; i < o->n_envs; i++)
                if (strcmp(o->envs[i]->key, key) == 0)
                        return o->envs[i]->value;
        return NULL;
}

static int alloc(const char *resource, const char *ids, struct gs_k8s_arena *a, V1beta1__ContainerAllocateResponse *o,
                 struct gs_error *err)
{
        static char buf[1024];
        char *v[32];
        size_t n = 0;
        strcpy(buf, ids);
        for (char *s = strtok(buf, ","); s != NULL; s = strtok(NULL, ","))
                v[n++] = s;
        struct gs_k8s_alloc_ctx x = {&plan, &health, "/nonexistent", "/host"};
        return gs_k8s_allocate(&x, res(resource), v, n, a, o, err);
}

static void test_allocate_cdi(void **state)
{
        (void)state;
        struct gs_error err = {0};
        struct gs_k8s_arena a = {0};
        V1beta1__ContainerAllocateResponse o;
        add_slice("q=4Gi,25");
        assert_int_equal(gs_k8s_plan_build(&hc.dp, &dev, &plan, &err), 0);
        assert_int_equal(alloc("gpuslice.io/q", "GPU-1::0", &a, &o, &err), 0);
        assert_int_equal(o.n_cdi_devices, 1);
        assert_string_equal(o.cdi_devices[0]->name, "k8s.gpuslice.io/gpu=1-q");
        assert_null(env_of(&o, "GPUSLICE_MEMORY_LIMIT_0"));
        assert_string_equal(env_of(&o, "GPUSLICE_K8S_DEVICES_GPUSLICE_IO_Q"), "GPU-1::0");
        /* two shares of GPU 1: the slice device of two shares (its hook's args hold 8Gi / 50 %), no
         * limit in the env (the container's to change) */
        assert_int_equal(alloc("gpuslice.io/q", "GPU-1::1,GPU-1::0", &a, &o, &err), 0);
        assert_int_equal(o.n_cdi_devices, 1);
        assert_string_equal(o.cdi_devices[0]->name, "k8s.gpuslice.io/gpu=1-q-x2");
        assert_null(env_of(&o, "GPUSLICE_MEMORY_LIMIT_0"));
        assert_null(env_of(&o, "GPUSLICE_MEMORY_LIMIT"));
        /* 2 shares of GPU 3 and 2 of GPU 0 (given out of order): NVML order, two shares each */
        assert_int_equal(alloc("gpuslice.io/q", "GPU-3::0,GPU-0::1,GPU-3::1,GPU-0::3", &a, &o, &err), 0);
        assert_int_equal(o.n_cdi_devices, 2);
        assert_string_equal(o.cdi_devices[0]->name, "k8s.gpuslice.io/gpu=0-q-x2");
        assert_string_equal(o.cdi_devices[1]->name, "k8s.gpuslice.io/gpu=3-q-x2");
        /* 1 share of GPU 3 and 3 of GPU 0: one slice per container, the fewest shares on each (never
         * more than a GPU was given), no per-device env */
        assert_int_equal(alloc("gpuslice.io/q", "GPU-3::0,GPU-0::1,GPU-0::2,GPU-0::3", &a, &o, &err), 0);
        assert_int_equal(o.n_cdi_devices, 2);
        assert_string_equal(o.cdi_devices[0]->name, "k8s.gpuslice.io/gpu=0-q");
        assert_string_equal(o.cdi_devices[1]->name, "k8s.gpuslice.io/gpu=3-q");
        assert_null(env_of(&o, "GPUSLICE_MEMORY_LIMIT_0"));
        assert_null(env_of(&o, "GPUSLICE_COMPUTE_LIMIT_1"));
        /* a MIG device: its own CDI name */
        assert_int_equal(alloc("nvidia.com/gpu", "MIG-1", &a, &o, &err), 0);
        assert_string_equal(o.cdi_devices[0]->name, "k8s.gpuslice.io/gpu=2:1");
        /* refusals */
        assert_int_equal(alloc("gpuslice.io/q", "GPU-0::0,GPU-0::0", &a, &o, &err), -1);
        assert_int_equal(err.code, GS_EINVAL);
        assert_int_equal(alloc("gpuslice.io/q", "GPU-9::0", &a, &o, &err), -1);
        assert_int_equal(err.code, GS_ENOTFOUND);
        health.gpu_bad[1] = true;
        assert_int_equal(alloc("gpuslice.io/q", "GPU-1::2", &a, &o, &err), -1);
        assert_non_null(strstr(err.msg, "unhealthy"));
        health.mig_bad[2][0] = true;
        assert_int_equal(alloc("nvidia.com/gpu", "MIG-1", &a, &o, &err), 0);
        assert_int_equal(alloc("nvidia.com/gpu", "MIG-0", &a, &o, &err), -1);
        gs_k8s_arena_free(&a);
}

static void test_allocate_env(void **state)
{
        (void)state;
        struct gs_error err = {0};
        struct gs_k8s_arena a = {0};
        V1beta1__ContainerAllocateResponse o;
        add_slice("q=4Gi,25");
        strcpy(hc.dp.allocate, "env");
        assert_int_equal(gs_k8s_plan_build(&hc.dp, &dev, &plan, &err), 0);
        assert_int_equal(alloc("gpuslice.io/q", "GPU-1::1,GPU-1::0", &a, &o, &err), 0);
        assert_int_equal(o.n_cdi_devices, 0);
        assert_string_equal(env_of(&o, "NVIDIA_VISIBLE_DEVICES"), "GPU-1");
        assert_string_equal(env_of(&o, "GPUSLICE_MEMORY_LIMIT"), "8Gi");
        assert_string_equal(env_of(&o, "GPUSLICE_COMPUTE_LIMIT"), "50");
        assert_int_equal(o.n_devices, 0); /* no such nodes under /nonexistent */
        assert_int_equal(alloc("gpuslice.io/q", "GPU-1::1,GPU-0::0", &a, &o, &err), 0);
        assert_string_equal(env_of(&o, "NVIDIA_VISIBLE_DEVICES"), "GPU-0,GPU-1");
        assert_null(env_of(&o, "GPUSLICE_MEMORY_LIMIT_0")); /* uniform: global */
        assert_string_equal(env_of(&o, "GPUSLICE_MEMORY_LIMIT"), "4Gi");
        assert_int_equal(alloc("nvidia.com/gpu", "MIG-0,GPU-3", &a, &o, &err), 0);
        assert_string_equal(env_of(&o, "NVIDIA_VISIBLE_DEVICES"), "MIG-0,GPU-3");
        assert_null(env_of(&o, "GPUSLICE_MEMORY_LIMIT"));
        gs_k8s_arena_free(&a);
}

/* volume-mounts: as env, the devices as /dev/null mounts, NVIDIA_VISIBLE_DEVICES the directory. */
static void test_allocate_volume_mounts(void **state)
{
        (void)state;
        struct gs_error err = {0};
        struct gs_k8s_arena a = {0};
        V1beta1__ContainerAllocateResponse o;
        add_slice("q=4Gi,25");
        strcpy(hc.dp.allocate, "volume-mounts");
        assert_int_equal(gs_k8s_plan_build(&hc.dp, &dev, &plan, &err), 0);
        assert_int_equal(alloc("gpuslice.io/q", "GPU-1::1,GPU-1::0", &a, &o, &err), 0);
        assert_int_equal(o.n_cdi_devices, 0);
        assert_string_equal(env_of(&o, "NVIDIA_VISIBLE_DEVICES"), "/var/run/nvidia-container-devices");
        /* two shares of one GPU: one device mount, and the slice as mounts (the allocator's word: the
         * kubelet's mounts, not the env the pod writes too) */
        assert_int_equal(o.n_mounts, 3);
        assert_string_equal(o.mounts[0]->container_path, "/var/run/nvidia-container-devices/GPU-1");
        assert_string_equal(o.mounts[0]->host_path, "/dev/null");
        assert_true(o.mounts[0]->read_only);
        assert_string_equal(o.mounts[1]->container_path, "/var/run/nvidia-container-devices/slice/memory=8Gi");
        assert_string_equal(o.mounts[2]->container_path, "/var/run/nvidia-container-devices/slice/compute-share=50");
        assert_true(o.mounts[1]->read_only && strcmp(o.mounts[1]->host_path, "/dev/null") == 0);
        assert_null(env_of(&o, "GPUSLICE_MEMORY_LIMIT"));
        assert_null(env_of(&o, "GPUSLICE_COMPUTE_LIMIT"));
        /* shares that differ: per device */
        assert_int_equal(alloc("gpuslice.io/q", "GPU-1::1,GPU-1::0,GPU-3::0", &a, &o, &err), 0);
        assert_int_equal(o.n_mounts, 6);
        assert_string_equal(o.mounts[2]->container_path, "/var/run/nvidia-container-devices/slice/memory-0=8Gi");
        assert_string_equal(o.mounts[5]->container_path, "/var/run/nvidia-container-devices/slice/compute-share-1=25");
        assert_int_equal(alloc("nvidia.com/gpu", "MIG-0,GPU-3", &a, &o, &err), 0);
        assert_int_equal(o.n_mounts, 2);
        assert_string_equal(o.mounts[0]->container_path, "/var/run/nvidia-container-devices/MIG-0");
        assert_string_equal(o.mounts[1]->container_path, "/var/run/nvidia-container-devices/GPU-3");
        gs_k8s_arena_free(&a);
}

/* A priority per slice resource (slices = "NAME=MEM,COMPUTE,PRIORITY", replica-priority): CDI
 * answers leave it to the slice device, env answers carry GPUSLICE_PRIORITY once per container. */
static void test_priority(void **state)
{
        (void)state;
        struct gs_error err = {0};
        struct gs_k8s_arena a = {0};
        V1beta1__ContainerAllocateResponse o;
        add_slice("lat=4Gi,25,High");
        add_slice("q=4Gi,25");
        hc.dp.replicas = 2;
        hc.dp.replica_compute = 50;
        strcpy(hc.dp.replica_priority, "low");
        assert_int_equal(gs_k8s_plan_build(&hc.dp, &dev, &plan, &err), 0);
        assert_string_equal(res("gpuslice.io/lat")->priority, "high");
        assert_string_equal(res("gpuslice.io/q")->priority, "");
        assert_string_equal(res("nvidia.com/gpu")->priority, "low");
        assert_int_equal(alloc("gpuslice.io/lat", "GPU-1::0", &a, &o, &err), 0);
        assert_string_equal(o.cdi_devices[0]->name, "k8s.gpuslice.io/gpu=1-lat");
        assert_null(env_of(&o, "GPUSLICE_PRIORITY"));
        gs_k8s_plan_release(&plan);
        strcpy(hc.dp.allocate, "env");
        assert_int_equal(gs_k8s_plan_build(&hc.dp, &dev, &plan, &err), 0);
        assert_int_equal(alloc("gpuslice.io/lat", "GPU-1::0", &a, &o, &err), 0);
        assert_string_equal(env_of(&o, "GPUSLICE_PRIORITY"), "high");
        assert_string_equal(env_of(&o, "GPUSLICE_COMPUTE_LIMIT"), "25");
        /* per-device limits: still one priority for the container */
        assert_int_equal(alloc("gpuslice.io/lat", "GPU-3::0,GPU-0::1,GPU-0::2", &a, &o, &err), 0);
        assert_string_equal(env_of(&o, "GPUSLICE_PRIORITY"), "high");
        assert_string_equal(env_of(&o, "GPUSLICE_COMPUTE_LIMIT_0"), "50");
        size_t n = 0;
        for (size_t i = 0; i < o.n_envs; i++)
                n += strcmp(o.envs[i]->key, "GPUSLICE_PRIORITY") == 0;
        assert_int_equal(n, 1);
        assert_int_equal(alloc("gpuslice.io/q", "GPU-1::0", &a, &o, &err), 0);
        assert_null(env_of(&o, "GPUSLICE_PRIORITY"));
        assert_int_equal(alloc("nvidia.com/gpu", "GPU-0::1", &a, &o, &err), 0);
        assert_string_equal(env_of(&o, "GPUSLICE_PRIORITY"), "low");
        /* a MIG device of a resource with a priority is no slice: nothing */
        assert_int_equal(alloc("nvidia.com/gpu", "MIG-0", &a, &o, &err), 0);
        assert_null(env_of(&o, "GPUSLICE_PRIORITY"));
        gs_k8s_arena_free(&a);
        gs_k8s_plan_release(&plan);
        /* errors name the key */
        gs_hostconfig_defaults(&hc);
        hc.dp.replicas = 2;
        hc.dp.replica_compute = 50;
        strcpy(hc.dp.replica_priority, "urgent");
        expect_plan_error("device-plugin.replica-priority: invalid priority 'urgent' (high, normal or low)");
        hc.dp.replicas = 2;
        strcpy(hc.dp.replica_memory, "1Gi");
        strcpy(hc.dp.replica_priority, "high");
        expect_plan_error("device-plugin.replica-priority needs replica-compute");
        add_slice("lat=4Gi,25,urgent");
        expect_plan_error("device-plugin.slices");
        add_slice("lat=4Gi,25,urgent");
        expect_plan_error("invalid priority 'urgent'");
}

static void test_grpc_message(void **state)
{
        (void)state;
        char enc[256], dec[256];
        gs_grpc_message_encode("100% done\n\xc3\xa9", enc, sizeof(enc));
        assert_string_equal(enc, "100%25 done%0A%C3%A9");
        gs_grpc_message_decode(enc, strlen(enc), dec, sizeof(dec));
        assert_string_equal(dec, "100% done\n\xc3\xa9");
        gs_grpc_message_decode("bad %zz %4", 10, dec, sizeof(dec));
        assert_string_equal(dec, "bad %zz %4");
        gs_grpc_message_encode("abcdef", enc, 5); /* truncated, still terminated */
        assert_string_equal(enc, "ab");
}

/* ------------------------------------------------------------------------------------------ */
/* h2c on a socketpair                                                                         */

struct result {
        int calls, status;
        char message[256];
        uint8_t msg[64];
        size_t len;
};

static void srv_call(struct gs_h2c_conn *c, int32_t stream, const char *path, const uint8_t *msg, size_t len, void *ud)
{
        int *closed = ud;
        (void)closed;
        if (strcmp(path, "/t.S/Echo") == 0)
                gs_h2c_reply(c, stream, msg, len);
        else if (strcmp(path, "/t.S/Fail") == 0)
                gs_h2c_fail(c, stream, GS_GRPC_FAILED_PRECONDITION, "nope: 100%");
        else if (strcmp(path, "/t.S/Stream") == 0) {
                gs_h2c_send(c, stream, (const uint8_t *)"a", 1);
                gs_h2c_send(c, stream, (const uint8_t *)"b", 1);
        } else if (strcmp(path, "/t.S/Never") != 0)
                gs_h2c_fail(c, stream, GS_GRPC_UNIMPLEMENTED, "unknown method");
}

static void srv_closed(struct gs_h2c_conn *c, int32_t stream, void *ud)
{
        (void)c;
        (void)stream;
        (*(int *)ud)++;
}

static const struct gs_h2c_server_ops ops = {srv_call, srv_closed};

static void done(struct gs_h2c_conn *c, int status, const char *message, const uint8_t *msg, size_t len, void *ud)
{
        (void)c;
        struct result *r = ud;
        r->calls++;
        r->status = status;
        snprintf(r->message, sizeof(r->message), "%s", message);
        r->len = len < sizeof(r->msg) ? len : sizeof(r->msg);
        if (msg != NULL)
                memcpy(r->msg, msg, r->len);
}

/* Drive both ends until the client's connection is finished (all its calls done) or 5 s. */
static void drive(struct gs_h2c_conn *cli, struct gs_h2c_conn *srv)
{
        long long end = gs_now_ms() + 5000;
        bool cdone = false;
        while (!cdone && gs_now_ms() < end) {
                struct pollfd p[2] = {{gs_h2c_fd(cli), gs_h2c_events(cli), 0}, {gs_h2c_fd(srv), gs_h2c_events(srv), 0}};
                poll(p, 2, 50);
                cdone = gs_h2c_io(cli, p[0].revents, gs_now_ms()) < 0;
                assert_int_equal(gs_h2c_io(srv, p[1].revents, gs_now_ms()), 0);
        }
        assert_true(cdone);
}

static void test_h2c_loopback(void **state)
{
        (void)state;
        struct gs_error err = {0};
        int sv[2], closed = 0;
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        struct gs_h2c_conn *srv = gs_h2c_server_new(sv[0], &ops, &closed, &err);
        struct gs_h2c_conn *cli = gs_h2c_client_new(sv[1], &err);
        assert_non_null(srv);
        assert_non_null(cli);
        struct result echo = {0}, fail = {0}, never = {0}, unknown = {0}, empty = {0};
        long long dl = gs_now_ms() + 3000;
        assert_int_equal(gs_h2c_call(cli, "/t.S/Echo", (const uint8_t *)"hello", 5, dl, done, &echo, &err), 0);
        assert_int_equal(gs_h2c_call(cli, "/t.S/Echo", NULL, 0, dl, done, &empty, &err), 0);
        assert_int_equal(gs_h2c_call(cli, "/t.S/Fail", (const uint8_t *)"x", 1, dl, done, &fail, &err), 0);
        assert_int_equal(gs_h2c_call(cli, "/t.S/Nope", (const uint8_t *)"x", 1, dl, done, &unknown, &err), 0);
        assert_int_equal(gs_h2c_call(cli, "/t.S/Never", (const uint8_t *)"x", 1, gs_now_ms() + 300, done, &never, &err), 0);
        /* a message over 4 MiB is refused before anything is sent */
        uint8_t *big = calloc(1, GS_H2C_MAX_MESSAGE + 1);
        assert_int_equal(gs_h2c_call(cli, "/t.S/Echo", big, GS_H2C_MAX_MESSAGE + 1, dl, done, &echo, &err), -1);
        free(big);
        drive(cli, srv);
        assert_int_equal(echo.calls, 1);
        assert_int_equal(echo.status, GS_GRPC_OK);
        assert_int_equal(echo.len, 5);
        assert_memory_equal(echo.msg, "hello", 5);
        assert_int_equal(empty.status, GS_GRPC_OK);
        assert_int_equal(empty.len, 0);
        assert_int_equal(fail.status, GS_GRPC_FAILED_PRECONDITION);
        assert_string_equal(fail.message, "nope: 100%");
        assert_int_equal(unknown.status, GS_GRPC_UNIMPLEMENTED);
        assert_int_equal(never.calls, 1);
        assert_int_equal(never.status, GS_GRPC_DEADLINE_EXCEEDED);
        gs_h2c_free(cli);
        /* the server notices the end: its stream's closed callbacks ran (Never included) */
        for (int i = 0; i < 20 && gs_h2c_io(srv, POLLIN, gs_now_ms()) == 0; i++)
                usleep(10000);
        gs_h2c_free(srv);
        assert_int_equal(closed, 5);
}

static void test_h2c_stream_is_not_unary(void **state)
{
        (void)state;
        struct gs_error err = {0};
        int sv[2], closed = 0;
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        struct gs_h2c_conn *srv = gs_h2c_server_new(sv[0], &ops, &closed, &err);
        struct gs_h2c_conn *cli = gs_h2c_client_new(sv[1], &err);
        struct result r = {0};
        /* two messages and no end: a unary client times out (the stream stays open) */
        assert_int_equal(gs_h2c_call(cli, "/t.S/Stream", NULL, 0, gs_now_ms() + 300, done, &r, &err), 0);
        drive(cli, srv);
        assert_int_equal(r.status, GS_GRPC_DEADLINE_EXCEEDED);
        gs_h2c_free(cli);
        gs_h2c_free(srv);
}

/* A claim of one slice request "gpu": the class's parameters (a JSON object's members, or NULL
 * for no class config) and the claim's, parsed by gs_dra_claim_parse. */
static int parse_bound(const char *cls, const char *clm, struct gs_dra_claim *c, struct gs_error *err)
{
        char doc[4096], cfg[2048] = "";
#define PARAMS "\"opaque\": {\"driver\": \"gpu.gpuslice.io\", \"parameters\": {\"apiVersion\": " \
               "\"gpu.gpuslice.io/v1alpha1\", \"kind\": \"SliceConfig\""
        if (cls != NULL)
                snprintf(cfg, sizeof(cfg), "{\"source\": \"FromClass\", " PARAMS "%s%s}}}", cls[0] ? ", " : "", cls);
        if (clm != NULL)
                snprintf(cfg + strlen(cfg), sizeof(cfg) - strlen(cfg), "%s{\"source\": \"FromClaim\", \"requests\": "
                         "[\"gpu\"], " PARAMS "%s%s}}}", cfg[0] ? ", " : "", clm[0] ? ", " : "", clm);
#undef PARAMS
        snprintf(doc, sizeof(doc), "{\"metadata\": {\"name\": \"c\", \"namespace\": \"ml\", \"uid\": \"u-1\"}, "
                 "\"status\": {\"allocation\": {\"devices\": {\"results\": [{\"request\": \"gpu\", \"driver\": "
                 "\"gpu.gpuslice.io\", \"pool\": \"n\", \"device\": \"gpu-0\", \"consumedCapacity\": {\"memory\": "
                 "\"4Gi\", \"compute\": \"30\"}}], \"config\": [%s]}}}}", cfg);
        memset(err, 0, sizeof(*err));
        return gs_dra_claim_parse(doc, strlen(doc), "gpu.gpuslice.io", c, err);
}

/* issue 31: a DeviceClass's config bounds the claim's. The class's priority and computeMode are
 * the widest a claim may ask (maxPriority / maxComputeMode say it without a default); without
 * them the bound is the defaults (normal, cap). A claim may narrow; one asking more is refused. */
/* issue 33: a GPU whose memory is not a whole number of MiB: requestPolicy's default and max are
 * rounded down to the 1 Mi step (the API server refuses them otherwise); the value stays exact. */
static void test_dra_capacity_step(void **state)
{
        (void)state;
        dev.gpus[3].memory_total = (20ull << 30) + (512ull << 10); /* 20 GiB + 512 KiB */
        json_object *s = gs_dra_slice_build(&dev, NULL, NULL, true, "gpu.gpuslice.io", "node-a", 1, NULL);
        assert_non_null(s);
        json_object *spec = NULL, *devs = NULL, *mem = NULL;
        assert_true(json_object_object_get_ex(s, "spec", &spec) && json_object_object_get_ex(spec, "devices", &devs));
        for (size_t i = 0; i < json_object_array_length(devs); i++) {
                json_object *d = json_object_array_get_idx(devs, i), *n = NULL, *cap = NULL;
                json_object_object_get_ex(d, "name", &n);
                if (strcmp(json_object_get_string(n), "gpu-3") == 0 && json_object_object_get_ex(d, "capacity", &cap))
                        json_object_object_get_ex(cap, "memory", &mem);
        }
        assert_non_null(mem);
        const char *text = json_object_to_json_string_ext(mem, JSON_C_TO_STRING_PLAIN);
        assert_string_equal(text, "{\"value\":\"20972032Ki\",\"requestPolicy\":{\"default\":\"20Gi\",\"validRange\":"
                                  "{\"min\":\"1Mi\",\"max\":\"20Gi\",\"step\":\"1Mi\"}}}");
        json_object_put(s);
}

static void quiet(void *ud, const char *fmt, ...)
{
        (void)ud;
        (void)fmt;
}

/* The slice's devices: "name[:value:effect]" each, comma-separated (a device without taints: its name). */
static void slice_devices(json_object *s, char *out, size_t len)
{
        json_object *spec = NULL, *devs = NULL;
        out[0] = '\0';
        assert_true(json_object_object_get_ex(s, "spec", &spec) && json_object_object_get_ex(spec, "devices", &devs));
        for (size_t i = 0; i < json_object_array_length(devs); i++) {
                json_object *d = json_object_array_get_idx(devs, i), *n = NULL, *ts = NULL, *v = NULL, *e = NULL, *k = NULL,
                            *t = NULL;
                json_object_object_get_ex(d, "name", &n);
                snprintf(out + strlen(out), len - strlen(out), "%s%s", i ? "," : "", json_object_get_string(n));
                if (!json_object_object_get_ex(d, "taints", &ts))
                        continue;
                assert_int_equal(json_object_array_length(ts), 1);
                json_object *t0 = json_object_array_get_idx(ts, 0);
                assert_true(json_object_object_get_ex(t0, "key", &k) && json_object_object_get_ex(t0, "value", &v) &&
                            json_object_object_get_ex(t0, "effect", &e) && json_object_object_get_ex(t0, "timeAdded", &t));
                assert_string_equal(json_object_get_string(k), "gpuslice.io/unhealthy");
                assert_int_equal(strlen(json_object_get_string(t)), 20); /* 2026-11-29T01:53:19Z */
                snprintf(out + strlen(out), len - strlen(out), ":%s:%s", json_object_get_string(v), json_object_get_string(e));
        }
}

/* issue 33, item 4: health as device taints. An XID on a GPU: NoSchedule; on a MIG device (the
 * event names its instance): that device alone; the GPU then lost: NoExecute, the first time kept.
 * Without taints (the gate off) the unhealthy devices are left out. */
static void test_dra_taints(void **state)
{
        (void)state;
        struct gs_nvml_event xid0 = {.kind = GS_NVML_EV_XID, .index = 0, .xid = 79, .gi = GS_NVML_INVALID_INSTANCE_ID,
                                     .ci = GS_NVML_INVALID_INSTANCE_ID},
                             xidmig = {.kind = GS_NVML_EV_XID, .index = 2, .xid = 48, .gi = 2, .ci = 0},
                             app = {.kind = GS_NVML_EV_XID, .index = 1, .xid = 31, .gi = GS_NVML_INVALID_INSTANCE_ID,
                                    .ci = GS_NVML_INVALID_INSTANCE_ID},
                             lost0 = {.kind = GS_NVML_EV_LOST, .index = 0};
        char got[512];
        assert_true(gs_k8s_health_apply(&dev, &health, &xid0, quiet, NULL));
        assert_true(gs_k8s_health_apply(&dev, &health, &xidmig, quiet, NULL));
        assert_false(gs_k8s_health_apply(&dev, &health, &app, quiet, NULL)); /* an application's XID */
        assert_false(gs_k8s_health_apply(&dev, &health, &xid0, quiet, NULL)); /* again: no change */
        json_object *s = gs_dra_slice_build(&dev, NULL, &health, true, "gpu.gpuslice.io", "node-a", 2, NULL);
        assert_non_null(s);
        slice_devices(s, got, sizeof(got));
        assert_string_equal(got, "gpu-0:xid-79:NoSchedule,gpu-1,gpu-2-mig-0,gpu-2-mig-1:xid-48:NoSchedule,gpu-3");
        assert_true(gs_dra_slice_tainted(s));
        json_object_put(s);
        health.gpu_why[0].since -= 100; /* turned unhealthy a while ago: kept when lost */
        long long since = health.gpu_why[0].since;
        assert_true(gs_k8s_health_apply(&dev, &health, &lost0, quiet, NULL));
        assert_true(health.gpu_why[0].since == since && health.gpu_why[0].lost);
        s = gs_dra_slice_build(&dev, NULL, &health, true, "gpu.gpuslice.io", "node-a", 3, NULL);
        slice_devices(s, got, sizeof(got));
        assert_string_equal(got, "gpu-0:gpu-lost:NoExecute,gpu-1,gpu-2-mig-0,gpu-2-mig-1:xid-48:NoSchedule,gpu-3");
        json_object_put(s);
        s = gs_dra_slice_build(&dev, NULL, &health, false, "gpu.gpuslice.io", "node-a", 4, NULL);
        slice_devices(s, got, sizeof(got));
        assert_string_equal(got, "gpu-1,gpu-2-mig-0,gpu-3");
        assert_false(gs_dra_slice_tainted(s));
        json_object_put(s);
}

/* issue 33, item 4: recovery. A device quiet (no critical XID) for the recovery time is healthy
 * again; a GPU NVML named lost only once it answers again, counted from then; 0: never. */
static void test_health_recover(void **state)
{
        (void)state;
        struct gs_nvml_event xid0 = {.kind = GS_NVML_EV_XID, .index = 0, .xid = 79, .gi = GS_NVML_INVALID_INSTANCE_ID,
                                     .ci = GS_NVML_INVALID_INSTANCE_ID},
                             xidmig = {.kind = GS_NVML_EV_XID, .index = 2, .xid = 48, .gi = 2, .ci = 0},
                             lost1 = {.kind = GS_NVML_EV_LOST, .index = 1},
                             alive1 = {.kind = GS_NVML_EV_ALIVE, .index = 1},
                             alive0 = {.kind = GS_NVML_EV_ALIVE, .index = 0};
        assert_true(gs_k8s_health_apply(&dev, &health, &xid0, quiet, NULL));
        assert_true(gs_k8s_health_apply(&dev, &health, &xidmig, quiet, NULL));
        assert_true(gs_k8s_health_apply(&dev, &health, &lost1, quiet, NULL));
        assert_false(gs_k8s_health_apply(&dev, &health, &alive0, quiet, NULL)); /* answering: not quiet yet */
        long long t = gs_now_ms();
        assert_false(gs_k8s_health_recover(&dev, &health, t + 100000, 0, quiet, NULL)); /* 0: never */
        assert_false(gs_k8s_health_recover(&dev, &health, t + 500, 1000, quiet, NULL)); /* not quiet long enough */
        assert_true(health.gpu_bad[0] && health.mig_bad[2][1] && health.gpu_bad[1]);
        assert_true(gs_k8s_health_recover(&dev, &health, t + 1000, 1000, quiet, NULL));
        assert_false(health.gpu_bad[0] || health.mig_bad[2][1]);
        assert_true(health.gpu_healthy_since[0] > 0 && health.mig_healthy_since[2][1] > 0);
        assert_true(health.gpu_bad[1] && health.gpu_why[1].lost); /* lost: not while it does not answer */
        assert_false(gs_k8s_health_recover(&dev, &health, t + 100000, 1000, quiet, NULL));
        assert_false(gs_k8s_health_apply(&dev, &health, &alive1, quiet, NULL));
        t = gs_now_ms();
        assert_false(gs_k8s_health_recover(&dev, &health, t + 500, 1000, quiet, NULL)); /* counted from its answer */
        assert_true(gs_k8s_health_recover(&dev, &health, t + 1000, 1000, quiet, NULL));
        assert_false(health.gpu_bad[1] || health.gpu_why[1].lost);
        /* a critical XID again starts the quiet time again */
        assert_true(gs_k8s_health_apply(&dev, &health, &xid0, quiet, NULL));
        health.gpu_why[0].quiet_ms -= 800;
        assert_false(gs_k8s_health_apply(&dev, &health, &xid0, quiet, NULL));
        assert_false(gs_k8s_health_recover(&dev, &health, gs_now_ms() + 500, 1000, quiet, NULL));
        /* a GPU waiting for a repair (a remapped row, PENDING) does not recover until it answers
         * without one (ALIVE), counted from then */
        struct gs_nvml_event pending0 = {.kind = GS_NVML_EV_PENDING, .index = 0};
        assert_false(gs_k8s_health_apply(&dev, &health, &pending0, quiet, NULL));
        assert_false(gs_k8s_health_recover(&dev, &health, gs_now_ms() + 100000, 1000, quiet, NULL));
        assert_false(gs_k8s_health_apply(&dev, &health, &alive0, quiet, NULL));
        t = gs_now_ms();
        assert_false(gs_k8s_health_recover(&dev, &health, t + 500, 1000, quiet, NULL));
        assert_true(gs_k8s_health_recover(&dev, &health, t + 1000, 1000, quiet, NULL));
        assert_false(health.gpu_bad[0]);
}

static void test_dra_class_bound(void **state)
{
        (void)state;
        static const struct {
                const char *cls, *clm;
                const char *prio, *mode; /* accepted: the result's; NULL: refused */
                const char *why;         /* refused: in the error */
        } cases[] = {
                /* widening: refused, whatever the class said or left out */
                {"\"priority\": \"low\"", "\"priority\": \"high\"", NULL, NULL, "priority high"},
                {"\"priority\": \"normal\"", "\"priority\": \"high\"", NULL, NULL, "at most normal"},
                {"\"computeMode\": \"cap\"", "\"computeMode\": \"off\"", NULL, NULL, "computeMode off"},
                {"\"computeMode\": \"cap\"", "\"computeMode\": \"share\"", NULL, NULL, "at most cap"},
                {"\"computeMode\": \"share\"", "\"computeMode\": \"off\"", NULL, NULL, "at most share"},
                {NULL, "\"priority\": \"high\"", NULL, NULL, "at most normal"},
                {NULL, "\"computeMode\": \"off\"", NULL, NULL, "at most cap"},
                {NULL, "\"computeMode\": \"share\"", NULL, NULL, "at most cap"},
                {"", "\"priority\": \"high\", \"computeMode\": \"off\"", NULL, NULL, "priority high"},
                {"\"maxPriority\": \"normal\"", "\"priority\": \"high\"", NULL, NULL, "at most normal"},
                {"\"maxComputeMode\": \"share\"", "\"computeMode\": \"off\"", NULL, NULL, "at most share"},
                /* a claim cannot set its own bound, nor a class contradict its own */
                {"\"priority\": \"high\"", "\"maxPriority\": \"high\"", NULL, NULL, "a DeviceClass's"},
                {NULL, "\"maxComputeMode\": \"off\"", NULL, NULL, "a DeviceClass's"},
                {"\"priority\": \"high\", \"maxPriority\": \"normal\"", NULL, NULL, NULL, "above its own maxPriority"},
                {"\"computeMode\": \"off\", \"maxComputeMode\": \"share\"", NULL, NULL, NULL, "above its own maxComputeMode"},
                {"\"maxComputeMode\": \"all\"", NULL, NULL, NULL, "maxComputeMode 'all'"},
                /* narrowing, or within the bound: accepted */
                {"\"priority\": \"high\"", "\"priority\": \"low\"", "low", "", NULL},
                {"\"priority\": \"high\"", "\"priority\": \"high\"", "high", "", NULL},
                {"\"priority\": \"high\"", NULL, "high", "", NULL},
                {"\"computeMode\": \"share\"", "\"computeMode\": \"cap\"", "", "cap", NULL},
                {"\"computeMode\": \"off\"", "\"computeMode\": \"share\"", "", "share", NULL},
                {"\"computeMode\": \"off\"", NULL, "", "off", NULL},
                {NULL, "\"priority\": \"normal\", \"computeMode\": \"cap\"", "normal", "cap", NULL},
                {NULL, "\"priority\": \"low\"", "low", "", NULL},
                {"\"maxPriority\": \"high\", \"maxComputeMode\": \"share\"", "\"priority\": \"high\", \"computeMode\": \"share\"",
                 "high", "share", NULL},
                {"\"maxPriority\": \"high\", \"priority\": \"low\"", NULL, "low", "", NULL},
                {"\"maxPriority\": \"high\", \"priority\": \"low\"", "\"priority\": \"high\"", "high", "", NULL},
                {NULL, NULL, "", "", NULL},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                static struct gs_dra_claim c;
                struct gs_error err;
                int rc = parse_bound(cases[i].cls, cases[i].clm, &c, &err);
                if (cases[i].prio == NULL) {
                        /* beyond_class (the status's reason ExceedsDeviceClass): a widening; a malformed
                         * config is InvalidClaim */
                        bool widening = strstr(err.msg, "allows at most") != NULL;
                        if (rc == 0 || strstr(err.msg, cases[i].why) == NULL || c.beyond_class != widening)
                                fail_msg("case %zu (class {%s}, claim {%s}): want refused with '%s', got rc %d '%s'%s", i,
                                         cases[i].cls ? cases[i].cls : "none", cases[i].clm ? cases[i].clm : "none",
                                         cases[i].why, rc, err.msg, c.beyond_class ? " (beyond_class)" : "");
                        assert_int_equal(c.n, 1); /* its device is known: the refusal goes on its status */
                } else {
                        if (rc != 0)
                                fail_msg("case %zu (class {%s}, claim {%s}): want accepted, got '%s'", i,
                                         cases[i].cls ? cases[i].cls : "none", cases[i].clm ? cases[i].clm : "none", err.msg);
                        assert_string_equal(c.r[0].priority, cases[i].prio);
                        assert_string_equal(c.r[0].compute_mode, cases[i].mode);
                        assert_false(c.beyond_class);
                }
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_plan, setup, teardown),
                cmocka_unit_test_setup_teardown(test_plan_replicas, setup, teardown),
                cmocka_unit_test_setup_teardown(test_plan_errors, setup, teardown),
                cmocka_unit_test(test_format_size),
                cmocka_unit_test_setup_teardown(test_prefer_shares, setup, teardown),
                cmocka_unit_test_setup_teardown(test_prefer_whole, setup, teardown),
                cmocka_unit_test_setup_teardown(test_allocate_cdi, setup, teardown),
                cmocka_unit_test_setup_teardown(test_allocate_env, setup, teardown),
                cmocka_unit_test_setup_teardown(test_allocate_volume_mounts, setup, teardown),
                cmocka_unit_test_setup_teardown(test_priority, setup, teardown),
                cmocka_unit_test(test_dra_class_bound),
                cmocka_unit_test_setup_teardown(test_dra_capacity_step, setup, teardown),
                cmocka_unit_test_setup_teardown(test_dra_taints, setup, teardown),
                cmocka_unit_test_setup_teardown(test_health_recover, setup, teardown),
                cmocka_unit_test(test_grpc_message),
                cmocka_unit_test(test_h2c_loopback),
                cmocka_unit_test(test_h2c_stream_is_not_unary),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
