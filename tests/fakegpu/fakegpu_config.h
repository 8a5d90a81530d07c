/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fakegpu configuration: the text file that describes the simulated GPUs, shared by the
 * fake libnvidia-ml.so.1 and the fake libcuda.so.1. Format: see README.md.
 *
 * The parser has no global state and never exits: it fills a caller-provided struct and,
 * on error, a message "<path>:<line>: <what>".
 */
#ifndef FAKEGPU_CONFIG_H
#define FAKEGPU_CONFIG_H

#include <stddef.h>

#define FG_MAX_GPUS     64
#define FG_MAX_MIG      8     /* MIG devices per GPU (A100/H100 allow 7) */
#define FG_MAX_PROCS    64
#define FG_MAX_FAULTS   32
#define FG_STR          96    /* names and UUIDs (NVML V2 buffer sizes) */

#define FG_DEFAULT_CONFIG_PATH "/etc/fakegpu/gpus.conf"
#define FG_CONFIG_ENV          "FAKEGPU_CONFIG"

enum fg_mig_mode {
    FG_MIG_UNSUPPORTED = 0,  /* GPU without MIG: MIG queries answer NOT_SUPPORTED */
    FG_MIG_OFF,              /* MIG-capable, disabled */
    FG_MIG_ON,               /* MIG enabled */
};

struct fg_mig {
    unsigned index;                /* nvmlDeviceGetMigDeviceHandleByIndex index (may be sparse) */
    unsigned gi;                   /* GPU instance id */
    unsigned ci;                   /* compute instance id */
    char uuid[FG_STR];             /* "MIG-..." */
    char profile[32];              /* e.g. "3g.40gb" (for nvidia-smi -L and the MIG name) */
    unsigned long long memory;     /* bytes */
};

struct fg_gpu {
    char name[FG_STR];
    char uuid[FG_STR];             /* "GPU-..." */
    unsigned domain, bus, device, function;
    unsigned minor;
    unsigned long long memory;     /* total, bytes */
    unsigned long long reserved;   /* bytes reserved by the driver (nvmlMemory_v2_t.reserved) */
    unsigned long long used;       /* bytes in use besides the listed processes */
    int cc_major, cc_minor;        /* compute capability ("arch") */
    unsigned sm_count;             /* multiprocessors (default from arch, see fg_gpu_sm_count) */
    int brand;                     /* nvmlBrandType_t value */
    unsigned pci_device_id;        /* (device id << 16) | 0x10de */
    unsigned pci_subsystem_id;
    unsigned util_gpu, util_mem;   /* percent */
    enum fg_mig_mode mig;
    unsigned mig_max;              /* nvmlDeviceGetMaxMigDeviceCount when MIG is on */
    unsigned nmig;
    struct fg_mig migs[FG_MAX_MIG];
};

struct fg_process {
    unsigned gpu;                  /* GPU index */
    unsigned pid;
    unsigned long long used;       /* bytes */
    int mig;                       /* index into the GPU's migs[], or -1 */
    unsigned sm_util, mem_util;    /* percent, for process-utilization samples */
};

enum fg_fault_action {
    FG_FAULT_ERROR = 1,            /* return the error named in arg */
    FG_FAULT_HANG,                 /* sleep forever */
    FG_FAULT_CRASH,                /* raise SIGSEGV */
    FG_FAULT_DELAY,                /* sleep delay_ms, then behave normally */
};

struct fg_fault {
    char func[64];                 /* "init", an exported name, or a name without _vN */
    enum fg_fault_action action;
    char arg[48];                  /* error name or number (library-specific meaning) */
    unsigned delay_ms;
};

struct fg_config {
    char driver[32];               /* "580.159.04" */
    int cuda;                      /* 13000 for "13.0" */
    char nvml_version[80];         /* default "<cuda major>.<driver>" */
    unsigned ngpus;
    struct fg_gpu gpus[FG_MAX_GPUS];
    unsigned nprocs;
    struct fg_process procs[FG_MAX_PROCS];
    unsigned nfaults;
    struct fg_fault faults[FG_MAX_FAULTS];
    /* fake libcuda.so.1 */
    unsigned long long context_memory;  /* charged per CUDA context (default FG_DEFAULT_CONTEXT_MEMORY) */
    unsigned long long module_memory;   /* charged per loaded module (default FG_DEFAULT_MODULE_MEMORY) */
    unsigned long long kernel_us;       /* simulated duration of a kernel whose name gives none
                                         * (default FG_DEFAULT_KERNEL_US; env FAKEGPU_KERNEL_US wins) */
    unsigned long long queue_ms;        /* how far a device's work may run ahead of the host before a
                                         * launch blocks (default FG_DEFAULT_QUEUE_MS) */
    unsigned long long text_hash;       /* FNV-1a 64 of the config text (names the shared state file) */
};

/* Defaults. Measured with tests/fakegpu/cuda_probe.c on an H200, driver 580.159.04 (NVML
 * per-process usage): a context costs 518 MiB there (say `context_memory 518MiB` to mimic it;
 * the default stays at a round 300 MiB that tests already count on); a small PTX module adds
 * nothing visible. */
#define FG_DEFAULT_CONTEXT_MEMORY (300ULL << 20)
#define FG_DEFAULT_MODULE_MEMORY  0ULL
/* The fake libcuda's GPU time model (fake_cuda_time.c): a kernel whose name does not end in
 * `_<N>us` lasts kernel_us; a launch waits while its device has more than queue_ms of work
 * queued (a real driver's push buffer fills up the same way). */
#define FG_DEFAULT_KERNEL_US      10ULL
#define FG_DEFAULT_QUEUE_MS       100ULL
#define FG_MAX_KERNEL_US          3600000000ULL   /* an hour */
#define FG_MAX_QUEUE_MS           3600000ULL

/* The config path: $FAKEGPU_CONFIG if set and non-empty, else FG_DEFAULT_CONFIG_PATH. */
const char *fg_config_path(void);

/* Parse the file at path into cfg. Returns 0, or -1 with err filled. */
int fg_config_load(const char *path, struct fg_config *cfg, char *err, size_t errlen);

/* Parse text (for tests); name is used in messages. */
int fg_config_parse(const char *text, const char *name, struct fg_config *cfg, char *err, size_t errlen);

/* The fault configured for func (exact name, or name minus a trailing "_v<N>"), or NULL.
 * "init" matches every init entry point when func is "init". */
const struct fg_fault *fg_config_fault(const struct fg_config *cfg, const char *func);

/* Run a HANG, CRASH or DELAY fault (does nothing for ERROR). Never returns for HANG/CRASH. */
void fg_fault_act(const struct fg_fault *fault);

/* "81559MiB", "80GiB", "1073741824", "4G" -> bytes. Returns 0 or -1. */
int fg_parse_size(const char *s, unsigned long long *out);

/* Brand name ("Tesla", "Nvidia", "GeForce", "QuadroRTX", ...) -> nvmlBrandType_t value, -1 if unknown. */
int fg_brand_from_name(const char *s);

/* nvmlBrandType_t value -> the name nvidia-container-cli prints ("Tesla", "Nvidia", ...). */
const char *fg_brand_name(int brand);

/* Multiprocessor count of gpu: its sm_count, else a typical value for its arch. */
unsigned fg_gpu_sm_count(const struct fg_gpu *gpu);

/* "00000000:3B:00.0" (NVML form) -> bus id string normalised to upper-case NVML form. */
void fg_gpu_busid(const struct fg_gpu *gpu, char *buf, size_t len);

#endif /* FAKEGPU_CONFIG_H */
