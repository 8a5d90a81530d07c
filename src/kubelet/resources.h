/*
 * What the device plugin offers: the host config's [device-plugin] section applied to the GPUs
 * found, as a list of extended resources, each with its device IDs (the kubelet's unit of
 * allocation), and what one device of each stands for.
 *
 *   resource (nvidia.com/gpu)  every GPU not in MIG mode, ID = its UUID, and every MIG device,
 *                              ID = its MIG UUID; with replicas = N > 1 each such GPU is offered N
 *                              times instead, ID = <UUID>::<n> (NVIDIA's time-slicing names), each
 *                              replica a share with replica-memory / replica-compute (if set)
 *                              and replica-priority
 *   slices (NAME=MEM[,COMPUTE[,PRIORITY]])
 *                              <slice-domain>/NAME: each GPU not in MIG mode offered as
 *                              min(total / MEM, 100 / COMPUTE) shares (at most GS_K8S_MAX_SHARES),
 *                              ID = <UUID>::<n>; a container's shares of one GPU add up
 *
 * One endpoint (socket) per resource: gpuslice-<resource with / and . as ->.sock.
 */
#ifndef GS_KUBELET_RESOURCES_H
#define GS_KUBELET_RESOURCES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gpuslice/gpuslice.h>

#include "runtime/hostconfig.h"

#define GS_K8S_MAX_RESOURCES (1 + GS_HOSTCONFIG_MAX_LIST)
#define GS_K8S_MAX_ID 64     /* the kubelet's limit is 63 characters */
#define GS_K8S_MAX_SHARES 32 /* shares of one GPU per resource */
#define GS_K8S_MAX_NAME 256

enum gs_k8s_alloc_mode {
        GS_K8S_ALLOC_CDI,             /* ContainerAllocateResponse.cdi_devices */
        GS_K8S_ALLOC_CDI_ANNOTATIONS, /* cdi.k8s.io/ annotations (runtimes without the CDI field) */
        GS_K8S_ALLOC_ENV,             /* env + device specs, for the OCI hook */
        GS_K8S_ALLOC_VOLUME_MOUNTS,   /* /dev/null mounts + device specs, for the OCI hook */
};

struct gs_k8s_device {
        char id[GS_K8S_MAX_ID];
        unsigned gpu;  /* index into the device info's gpus[] */
        int mig;       /* index into that GPU's migs[], or -1 */
        unsigned share; /* 0-based share number (shared resources) */
};

struct gs_k8s_resource {
        char name[GS_K8S_MAX_NAME];     /* nvidia.com/gpu, gpuslice.io/gpu-4g-25 */
        char endpoint[GS_K8S_MAX_NAME]; /* socket file name in the kubelet's directory */
        char env_key[GS_K8S_MAX_NAME];  /* GPUSLICE_K8S_DEVICES_<NAME>: the IDs, in the container */
        bool shared;                    /* devices are shares of GPUs */
        uint64_t memory;                /* per share, bytes (0: no quota) */
        unsigned compute;               /* per share, percent (0: no compute share) */
        char priority[8];               /* high|normal|low ("": not set; with a compute share only) */
        char cdi_slice[64];             /* the CDI slice device of one share ("": a plain GPU device) */
        size_t ndevs;
        struct gs_k8s_device *devs;
};

/* The GPUs' place in the machine, for GetPreferredAllocation (topology.c). */
struct gs_k8s_topology {
        int numa[GS_MAX_GPUS];          /* NUMA node, -1 unknown */
        char pci[GS_MAX_GPUS][256];     /* sysfs device path below /devices (PCI hierarchy), "" unknown */
};

struct gs_k8s_plan {
        const struct gs_device_info *dev;
        size_t nres;
        struct gs_k8s_resource res[GS_K8S_MAX_RESOURCES];
        enum gs_k8s_alloc_mode mode;
        char cdi_vendor[GS_K8S_MAX_NAME];
        char cdi_class[64];
        struct gs_k8s_topology topo;
};

/* "cdi" | "cdi-annotations" | "env" | "volume-mounts". */
int gs_k8s_parse_alloc_mode(const char *s, enum gs_k8s_alloc_mode *out, struct gs_error *err);

/* Build the plan from the config and the devices (which must outlive it). Errors name the key:
 * "device-plugin.slices: ...". A config that offers nothing at all is an error. */
int gs_k8s_plan_build(const struct gs_hostconfig_dp *cfg, const struct gs_device_info *dev, struct gs_k8s_plan *plan,
                      struct gs_error *err);
void gs_k8s_plan_release(struct gs_k8s_plan *plan);

/* The device of resource r with this ID, or NULL. */
const struct gs_k8s_device *gs_k8s_find(const struct gs_k8s_resource *r, const char *id);

/* How many shares of GPU `gpu` resource r offers (0 for whole-GPU resources). */
unsigned gs_k8s_shares_of(const struct gs_k8s_resource *r, unsigned gpu);

/* The CDI slice device (its name after "<gpu>-") of k shares of resource r in the plugin's spec:
 * r->cdi_slice for one share, "<cdi_slice>-x<k>" for more. -1 when it does not fit len. */
int gs_k8s_slice_device(const struct gs_k8s_resource *r, unsigned k, char *buf, size_t len);

/* A size for the slice env: "<n>Gi" / "<n>Mi" when exact, else bytes. */
void gs_k8s_format_size(uint64_t bytes, char *buf, size_t len);

#endif
