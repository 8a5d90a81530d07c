/*
 * Host defaults for the hook, configure and CDI: /etc/gpuslice/config.toml.
 *
 * A flat TOML subset, parsed by our own small parser (Debian ships no C TOML library):
 * `# comments`, `[section]` headers (one level, no dotted or array-of-table headers), and
 * `key = value` lines whose value is a basic "string" (escapes \" \\ \n \t \uXXXX, and TOML's
 * \b \f \r \UXXXXXXXX; no \u0000), a 'literal string', true/false, a decimal integer (optional
 * sign, '_' between digits), or a one-line array of strings ["a", "b"]. CRLF line ends are fine.
 * Keys are bare ([A-Za-z0-9_-]). Every key is known: an unknown key, a duplicate key (or
 * section), a value of the wrong type or a syntax error is an error naming the line:
 *   "<file>:<line>: unknown key 'hook.foo'".
 *
 * Known keys (section.key, type, default):
 *   driver.root              string   "/"            driver root (--root)
 *   driver.ldcache           string   "/etc/ld.so.cache"
 *   driver.path              string   GS_HOSTCONFIG_DEFAULT_BIN_PATH  where the driver's binaries
 *                                     (nvidia-smi, ...) are looked for inside the root, as $PATH
 *   driver.ldconfig          string   "@/sbin/ldconfig" ("@/sbin/ldconfig.real" if that exists)
 *   driver.load-kmods        bool     false
 *   driver.user              string   ""             NVML helper identity ("" = default)
 *   driver.nvml-timeout      integer  10             seconds (1..3600)
 *   hook.no-cgroups          bool     false
 *   hook.default-capabilities array   ["utility", "compute"]  when NVIDIA_DRIVER_CAPABILITIES is unset
 *   hook.supported-capabilities array ["compat32","compute","display","graphics","ngx","utility","video"]
 *   hook.disable-require     bool     false          ignore NVIDIA_REQUIRE_* (as NVIDIA_DISABLE_REQUIRE)
 *   hook.log-file            string   ""             debug log of the hook ("" = none)
 *   hook.cuda-compat-mode    string   "ldconfig"     ldconfig | mount | disabled
 *   hook.accept-nvidia-visible-devices-envvar-when-unprivileged
 *                            bool     true           NVIDIA_VISIBLE_DEVICES (and NVIDIA_IMEX_CHANNELS) of
 *                                                    a container without CAP_SYS_ADMIN are honoured (NVIDIA's
 *                                                    name and default; false on a Kubernetes node)
 *   hook.accept-nvidia-visible-devices-as-volume-mounts
 *                            bool     false          mounts of /dev/null onto
 *                                                    /var/run/nvidia-container-devices/<device> name the
 *                                                    devices (and win over the env); true with the device
 *                                                    plugin's allocate = "volume-mounts"
 *   slice.library            string   ""             host path of libgpuslice-vgpu.so ("" = next to gpuslice,
 *                                                    then the install dir)
 *   slice.regions-dir        string   "/run/gpuslice/slices"
 *   slice.mps-root           string   "/run/gpuslice/mps"   `gpuslice mps`: one MPS pipe directory per
 *                                                    GPU under it (<root>/<GPU-UUID>/)
 *   slice.mps                string   "off"          off | auto | on: cap slices on one GPU through
 *                                                    its MPS daemon (runtime/mps.h); the hook,
 *                                                    configure and exec follow it
 *   slice.env-may-raise      bool     false          without an allocator (a plain hook), may the
 *                                                    container's env turn the compute gate off or
 *                                                    ask priority high? (runtime/slice_rules.h;
 *                                                    privileged containers may)
 * and for `gpuslice device-plugin` (src/k8s), in [device-plugin]:
 *   socket-dir               string   "/var/lib/kubelet/device-plugins"  the kubelet's directory
 *   resource                 string   "nvidia.com/gpu"  whole GPUs and MIG devices ("" = not offered)
 *   replicas                 integer  1              each GPU offered this many times under `resource`
 *                                                    (1..64; time-slicing: replicas share the GPU)
 *   replica-memory           string   ""             each replica's memory quota (a size; "" = none)
 *   replica-compute          integer  0              each replica's compute share in percent (0 = none)
 *   replica-priority         string   ""             each replica's priority: high|normal|low ("" = the
 *                                                    container's env decides; needs replica-compute)
 *   slices                   array    []             "NAME=MEM[,COMPUTE[,PRIORITY]]": resource
 *                                                    <slice-domain>/NAME, each GPU offered as shares of
 *                                                    MEM (and COMPUTE %, at that priority)
 *   slice-domain             string   "gpuslice.io"
 *   allocate                 string   "cdi"          cdi | cdi-annotations | env | volume-mounts
 *   cdi-spec                 string   "/var/run/cdi/gpuslice-k8s.yaml"  the spec the plugin writes
 *   cdi-kind                 string   "k8s.gpuslice.io/gpu"
 *   hook-path                string   ""             the gpuslice the spec's hooks run, on the host
 *                                                    ("" = this executable)
 *   host-root                string   ""             the driver root as the host sees it ("" = driver.root)
 *   pod-resources-socket     string   "/var/lib/kubelet/pod-resources/kubelet.sock" (read, ignored)
 *   label-interval           integer  30             (read, ignored: no pod-resources labeller, issue 31)
 *   health-checks            bool     true           watch NVML's XID events and lost GPUs
 *   sysfs                    string   "/sys"         PCI topology and NUMA nodes
 * and for `gpuslice runtime` (nvidia-container-runtime, src/engine/shim.c), in [runtime]:
 *   mode                     string   "auto"         legacy | cdi | jit-cdi | auto
 *   runtimes                 array    ["runc", "crun"]  low-level runtimes (names on PATH or absolute
 *                                                    paths): the first found runs
 *   cdi-spec-dirs            array    ["/etc/cdi", "/var/run/cdi"]  where mode cdi finds specs
 *   env-cdi-kinds            array    ["nvidia.com/gpu"]  the CDI kinds a name from the container's
 *                                                    env (NVIDIA_VISIBLE_DEVICES) may resolve to; never a
 *                                                    Kubernetes allocator's kind (k8s.*: the device
 *                                                    plugin's, the DRA plugin's per-claim specs), nor
 *                                                    device-plugin.cdi-kind
 *   hook-path                string   ""             the gpuslice the added hooks run ("" = this one)
 *   log-file                 string   ""             the shim's own log ("" = none)
 */
#ifndef GS_RUNTIME_HOSTCONFIG_H
#define GS_RUNTIME_HOSTCONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include <gpuslice/gpuslice.h>

#define GS_HOSTCONFIG_DEFAULT_PATH "/etc/gpuslice/config.toml"
#define GS_HOSTCONFIG_MAX_STR 4096
#define GS_HOSTCONFIG_DEFAULT_BIN_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define GS_HOSTCONFIG_MAX_LIST 16
#define GS_HOSTCONFIG_LIST_STR 128

/* An array of strings. */
struct gs_hostconfig_list {
        unsigned n;
        char v[GS_HOSTCONFIG_MAX_LIST][GS_HOSTCONFIG_LIST_STR];
};

/* [device-plugin] */
struct gs_hostconfig_dp {
        char socket_dir[GS_HOSTCONFIG_MAX_STR];
        char resource[256];
        unsigned replicas;
        char replica_memory[64];
        unsigned replica_compute;
        char replica_priority[16];
        struct gs_hostconfig_list slices;
        char slice_domain[128];
        char allocate[32];
        char cdi_spec[GS_HOSTCONFIG_MAX_STR];
        char cdi_kind[256];
        char hook_path[GS_HOSTCONFIG_MAX_STR];
        char host_root[GS_HOSTCONFIG_MAX_STR];
        char pod_resources_socket[GS_HOSTCONFIG_MAX_STR];
        unsigned label_interval_s;
        bool health_checks;
        char sysfs[GS_HOSTCONFIG_MAX_STR];
};

/* [runtime]: `gpuslice runtime` (nvidia-container-runtime), the OCI runtime shim */
struct gs_hostconfig_rt {
        char mode[16];                        /* legacy | cdi | jit-cdi | auto */
        struct gs_hostconfig_list runtimes;   /* low-level runtimes, the first found runs */
        struct gs_hostconfig_list cdi_spec_dirs;
        struct gs_hostconfig_list env_cdi_kinds; /* the kinds a name from the env may resolve to */
        char hook_path[GS_HOSTCONFIG_MAX_STR]; /* the gpuslice-hook (or gpuslice) the added hooks run ("" = the
                                                 * gpuslice-hook beside the shim) */
        char log_file[GS_HOSTCONFIG_MAX_STR];  /* the shim's own log ("" = none) */
};

struct gs_hostconfig {
        char root[GS_HOSTCONFIG_MAX_STR];
        char ldcache[GS_HOSTCONFIG_MAX_STR];
        char path[GS_HOSTCONFIG_MAX_STR];       /* where driver binaries are searched, in the root */
        char ldconfig[GS_HOSTCONFIG_MAX_STR];   /* "" = the built-in default */
        bool load_kmods;
        char user[256];
        unsigned nvml_timeout_s;
        bool no_cgroups;
        unsigned default_caps;                  /* GS_CAP_* */
        unsigned supported_caps;                /* GS_CAP_* */
        bool disable_require;
        char log_file[GS_HOSTCONFIG_MAX_STR];
        enum gs_compat_mode compat_mode;
        bool accept_env_unprivileged;           /* hook.accept-nvidia-visible-devices-envvar-when-unprivileged */
        bool accept_volume_mounts;              /* hook.accept-nvidia-visible-devices-as-volume-mounts */
        char vgpu_library[GS_HOSTCONFIG_MAX_STR];
        char regions_dir[GS_HOSTCONFIG_MAX_STR];
        char mps_root[GS_HOSTCONFIG_MAX_STR];
        char mps[32];                           /* slice.mps: off, auto or on */
        bool env_may_raise;                     /* slice.env-may-raise */
        struct gs_hostconfig_dp dp;
        struct gs_hostconfig_rt rt;
};

/* The defaults above. */
void gs_hostconfig_defaults(struct gs_hostconfig *hc);

/* Parse `text` (len bytes; need not be NUL-terminated) over the values already in hc. `name`
 * is used in messages. -1 with GS_EFORMAT and "<name>:<line>: <what>" on any error. */
int gs_hostconfig_parse(struct gs_hostconfig *hc, const char *text, size_t len, const char *name,
                        struct gs_error *err);

/* Defaults, then the file at `path` (NULL: GS_HOSTCONFIG_DEFAULT_PATH). A missing file is not an
 * error when `path` is NULL (defaults apply); a missing file given explicitly is. Files larger
 * than 1 MiB are refused. */
int gs_hostconfig_load(struct gs_hostconfig *hc, const char *path, struct gs_error *err);

#endif
