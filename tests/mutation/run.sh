#!/usr/bin/env bash
# The mutation check: break a behaviour on purpose and require that the test which guards it fails.
#
#   tests/mutation/run.sh [WORKDIR]        (make mutation; WORKDIR defaults to build-mut)
#
# It copies the source tree (git's tracked and untracked-but-not-ignored files) to WORKDIR/src,
# configures one build there (WORKDIR/build: debugoptimized, tests on, warnings not errors: a
# mutation may leave a variable unused), builds only what the chosen tests need, and requires that
# those tests pass on the unbroken tree (a test that fails or skips there proves nothing). Then, for
# each mutation below: replace one exact piece of text in one file (it must occur exactly once, or
# the check fails: a refactor must not turn a mutation into a silent no-op), rebuild the tests'
# targets (the rebuild must compile something), run the named tests, REQUIRE that one of them
# fails, and put the file back. One line per mutation, "killed by TEST" or "SURVIVED", then
# "mutations: N killed, N survived"; the exit status is non-zero on any survivor, any mutation
# that did not apply or did not build, or a baseline that did not pass. Logs: WORKDIR/logs/.
#
# Two at a time where that is safe: the mutations whose tests may all run beside others (meson's
# is_parallel, which the normal build honours, running three tests at a time) go first, in two
# lanes, the second in a tree and build of its own (WORKDIR/src2, WORKDIR/build2: a second copy,
# configured and built for those tests), never two runs of one test at once; then those with a
# timing test (is_parallel: false: vgpu_*) one at a time, with nothing else running.
#
# Needs what the tests need (root: mounts, cgroups, unshare). MUTATION_JOBS: ninja's -j (default:
# every CPU). MUTATION_LANES=1: one mutation at a time throughout. MUTATION_ONLY="NAME...": run
# those mutations alone (also the slow ones, left out of the default run). MUTATION_BASELINE=TESTLOG:
# a meson testlog.json of this same tree's tests; those that passed there are not run again as the
# baseline.
#
# A mutation is: NAME, TESTS (space-separated meson test names), FILE, OLD, NEW, the behaviour it
# breaks and, optionally, CHECK: a piece of the name of the check meant for it (a check.sh line's
# text, a cmocka test's name). Pick OLD as small as can be while unique; the point is the
# behaviour, not the text.
#
# Killed means killed by the test meant for it, for the reason meant: a named test fails (FAIL,
# TIMEOUT, ERROR: a SKIP kills nothing) and, where the mutation gives CHECK, one of that test's
# failed checks ("not ok - " lines, cmocka's "[  FAILED  ] NAME") contains CHECK (a test that
# failed elsewhere, or crashed or timed out before it got there, did not kill it: "SURVIVED
# (failed elsewhere)"). Each kill prints the first failing check it saw, so that a reader can
# judge the rest.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
t0=$SECONDS
TOP=$PWD
WORK=$(realpath -m "${1:-build-mut}")
SRC=$WORK/src BUILD=$WORK/build LOGS=$WORK/logs
JOBS=${MUTATION_JOBS:-$(nproc)}

MUTATIONS=()
declare -A TESTS FILE OLD NEW DESC CHECK
# mutation NAME TESTS FILE OLD NEW DESCRIPTION [CHECK]
mutation() { MUTATIONS+=("$1"); TESTS[$1]=$2 FILE[$1]=$3 OLD[$1]=$4 NEW[$1]=$5 DESC[$1]=$6 CHECK[$1]=${7:-}; }

mutation quota vgpu src/vgpu/hooks_cuda.c \
        'if ((bytes) == 0 || gs_vgpu_charge((vis), (bytes)) == 0) {' \
        'if ((bytes) == 0 || gs_vgpu_charge((vis), (bytes)) == 0 || 1) {' \
        "the memory quota never refuses an allocation (cuMemAlloc*'s charge is ignored)" \
        "quota granted"
mutation devices vgpu_devices src/vgpu/devmap.c \
        'CUdevice r = dev >= 0 ? gs_vgpu_translated(dev) : -1;' \
        'CUdevice r = dev;' \
        "where the driver shows more GPUs, a device number reaches the driver untranslated (GPU 0 for 0)" \
        "ordinal 0 = GPU 1"
mutation gpunodes integration_configure src/container/configure.c \
        'snprintf(node, sizeof(node), "/dev/nvidia%u", g->minor);' \
        'snprintf(node, sizeof(node), "/dev/nvidia%u", g->minor); continue;' \
        "configure mounts no GPU device node (/dev/nvidiaN, its MIG caps)" \
        "/dev/nvidia0 is a char device"
mutation rollback integration_configure src/container/configure.c \
        'rollback(x);' \
        'if (0) rollback(x); /* mutation */' \
        "a failed configure leaves its mounts and files in the container (rollback skipped)" \
        "failure injected at step"
mutation failinject integration_configure src/container/fail_inject.c \
        '#if GS_FAILURE_INJECTION' \
        '#if 1 /* mutation */' \
        "a build without failure injection (a release build) still honours GPUSLICE_TEST_FAIL_AT" \
        "GPUSLICE_TEST_FAIL_AT=1: test build exit"
mutation void unit_runtime src/runtime/request.c \
        'if (l == 4 && strncmp(t, "void", 4) == 0) {' \
        'if (0) {' \
        "NVIDIA_VISIBLE_DEVICES=void gives the container devices (\"void\" read as a device name)"
mutation require unit_require src/select/require.c \
        'if (r == 0) {' \
        'if (0) {' \
        "every --require / NVIDIA_REQUIRE_* condition is satisfied"
mutation abslink unit_mount src/common/path.c \
        "if (link[0] == '/') {" \
        'if (0) {' \
        "an absolute symlink in the rootfs is not re-rooted at the rootfs (resolved from where it lies)"
mutation cgminor unit_cgroup src/container/cgroup.c \
        'BPF_REG_5, 0, 2, (int32_t)rules[i].minor);' \
        'BPF_REG_4, 0, 2, (int32_t)rules[i].major);' \
        "the cgroup v2 device program ignores the minor: allowing GPU 0 allows every GPU"
mutation regionlimit vgpu_resize src/vgpu/vgpu.c \
        'int rc = gs_region_try_charge_limit(S.region, S.slot, (unsigned)vis, bytes, gs_vgpu_quota(vis), &usage);' \
        'int rc = gs_region_try_charge(S.region, S.slot, (unsigned)vis, bytes, &usage);' \
        "the interposer takes its quota from the usage region, which any process of the slice can write" \
        "its allocations still stop at the host's"
mutation livewatch vgpu_resize src/vgpu/live.c \
        "if (S.cfg.live[0] == '\\0' || atomic_exchange(&V.running, true))" \
        'if (1)' \
        "a process applies a live change only when it allocates (no watcher: an idle one keeps the old limits)" \
        "an idle process (no call into CUDA) applied generation"
mutation liverw integration_resize_hook src/container/configure.c \
        '{"live", GS_SLICE_LIVE_DIR, GS_NODE_DIR, GS_MNT_PROC},' \
        '{"live", GS_SLICE_LIVE_DIR, GS_NODE_DIR, GS_MNT_IPC},' \
        "the live limits directory is mounted writable: the container rewrites its own limits" \
        "root in the container cannot write the live file"
mutation leanhook integration_runtime src/runtime/hook_exe.c \
        'if (beside(self, GS_HOOK_EXE, out, len) || beside(self, "gpuslice", out, len))' \
        'if (beside(self, "gpuslice", out, len))' \
        "the hooks gpuslice writes run the whole gpuslice (TLS, HTTP/2, protobuf, ncurses mapped at every container start), not gpuslice-hook" \
        "legacy: the prestart hook added"
# (vgpu_compute stops at its first capped launch path: ~10 s, where the whole test takes ~100)
mutation limiter vgpu_compute src/vgpu/limiter.c \
        'if (__builtin_expect(!over_budget(d) && !queue_full(d), 1) && (!beside_higher(d) || strict_go(d)))' \
        'if (1)' \
        "the compute limiter never waits (the launch gate always open)" \
        "cap 30 %, kernel"
# issue 31 (shim): whole GPUs only as the host allows
mutation shimenv integration_runtime src/engine/shim.c \
        'if (!cfg->privileged && !hc->accept_env_unprivileged) {' \
        'if (0) {' \
        "the runtime shim honours an image's NVIDIA_VISIBLE_DEVICES (all, a CDI name) in an unprivileged container when the host refuses it" \
        "k8s node, cdi, env all refused"
mutation hookenv integration_runtime src/runtime/request.c \
        'if (vis == NULL || in->privileged || hc->accept_env_unprivileged) {' \
        'if (1) {' \
        "the hook (and the shim's legacy mode) takes NVIDIA_VISIBLE_DEVICES, a CUDA image's implicit all, from an unprivileged container when the host refuses it" \
        "k8s node, auto, env all refused"
mutation envkinds integration_runtime src/engine/shim.c \
        'for (size_t i = 0; k->from_env && i < k->nnames; i++)' \
        'for (size_t i = 0; 0 && i < k->nnames; i++)' \
        "a CDI name from the env resolves to any kind: the device plugin's =all, another claim's per-claim device" \
        "env NVIDIA_VISIBLE_DEVICES=k8s.gpuslice.io/gpu=all: refused"
mutation devnullsrc integration_runtime src/runtime/oci.c \
        'if (strcmp(s, "/dev/null") != 0 || strncmp(d, root, sizeof(root) - 1) != 0' \
        'if (strncmp(d, root, sizeof(root) - 1) != 0' \
        "any mount under /var/run/nvidia-container-devices (an image's VOLUME, a tmpfs) asks for devices, not only the kubelet's /dev/null" \
        "a mount not of /dev/null asks for nothing"
mutation k8sdoctor integration_doctor src/doctor/check_requests.c \
        'if (hc->accept_env_unprivileged && signs[0] != '"'"'\0'"'"') {' \
        'if (0) {' \
        "doctor says nothing of a Kubernetes node that takes NVIDIA_VISIBLE_DEVICES from unprivileged containers" \
        "gpu-requests is 'ok', wanted 'warn'"
# issue 31 (dra)
mutation drabound unit_k8s src/dra/claim.c \
        'if (bound(&cls[k], &clm[k], &c->r[k], &c->beyond_class, err) < 0)' \
        'if (bound(&clm[k], &clm[k], &c->r[k], &c->beyond_class, err) < 0)' \
        "a DRA claim's config is its own bound: it asks priority high or compute mode off over its DeviceClass's"
mutation labelsenv observe_hook src/runtime/hook.c \
        'gs_slice_write_labels(s->regions_dir, id, cfg->annotations, cfg->nannotations, given, &lerr)' \
        'gs_slice_write_labels(s->regions_dir, id, cfg->env, cfg->nenv, given, &lerr)' \
        "a slice's labels read from the container's env (its image's ENV, the pod spec): it passes for another pod" \
        "no labels file in"
# issue 31 (arbiter)
mutation arbclass unit_arbiter src/vgpu/arbiter.c \
        'p->prio = p->host.prio == GS_ARB_PRIO_HIGH && !p->host_root ? GS_ARB_PRIO_NORMAL : p->host.prio;' \
        'p->prio = r->prio;' \
        "a slice's class on the arbiter is read from its own record (a container claims high), not its host record" \
        "test_class_from_host_record"
mutation arbowed unit_arbiter src/vgpu/arbiter.c \
        'return (struct place){p->owed ? 0 : p->prio + 1, p->vtime};' \
        'return (struct place){(p->flags & GS_ARB_OWED) ? 0 : p->prio + 1, p->vtime};' \
        "\"owed\" is what a slice's record claims, not what its readers judge" \
        "test_class_from_host_record"
mutation arbcost unit_arbiter src/vgpu/arbiter.c \
        'p->ignored = (over || probation) && (a->guaranteed || p->prio >= a->prio);' \
        'p->ignored = false;' \
        "a peer that costs a slice more than its share while the slice is short of its own is still obeyed (a liar holds it)" \
        "test_liar_costs_its_share"
mutation regionmode integration_hostfiles src/slice/slice.c \
        'write_owned(h->dirfd, "usage", "", 0, 0660, uid, gid, err) < 0)' \
        'write_owned(h->dirfd, "usage", "", 0, 0666, uid, gid, err) < 0)' \
        "a container's usage region is world-writable on the host (any local user wedges its accounting)" \
        "nothing under the slices and arbiter directories is world-writable"
mutation slicelock integration_hostfiles src/slice/live.c \
        'gs_autoclose int lockfd = lock_slice(dirfd, regions_dir, id, err);' \
        'gs_autoclose int lockfd = dup(dirfd); flock(lockfd, LOCK_EX);' \
        "slice set locks the slice directory, which any user can lock, and waits for it forever" \
        "slice set while another user holds the slice directory's flock"
# issue 31 (devices)
mutation devices_hook vgpu_devices src/vgpu/hooks_device.c \
        'ONE_DEVICE(cuMulticastAddDevice, (CUmemGenericAllocationHandle mcHandle, CUdevice dev), dev, mcHandle, dev)' \
        'GS_EXPORT CUresult cuMulticastAddDevice(CUmemGenericAllocationHandle mcHandle, CUdevice dev) { return REAL(cuMulticastAddDevice, mcHandle, dev); }' \
        "a device-taking entry point (cuMulticastAddDevice) hooked but forwarding the device unchecked" \
        "past cuInit, ordinal 1"
mutation devices_out vgpu_devices src/vgpu/hooks_device.c \
        'GS_EXPORT CUresult cuCtxGetDevice(CUdevice *device) { return device_out(REAL(cuCtxGetDevice, device), device); }' \
        'GS_EXPORT CUresult cuCtxGetDevice(CUdevice *device) { return REAL(cuCtxGetDevice, device); }' \
        "cuCtxGetDevice answers the driver's number of the slice's GPU (1), not the slice's (0)" \
        "ordinal 0 = GPU 1"
mutation devices_nvml vgpu_devices src/vgpu/hooks_nvml.c \
        'return slice_handle(NREAL(nvmlDeviceGetHandleBySerial, serial, &h), &h, device);' \
        'return NREAL(nvmlDeviceGetHandleBySerial, serial, device);' \
        "nvmlDeviceGetHandleBySerial hands out a GPU outside the slice" \
        "NVML: serial and topology lists reach past the slice"
mutation devices_pool vgpu_devices src/vgpu/devmap.c \
        'return gs_vgpu_visible_of(real1 - 1);' \
        'return gs_vgpu_current_device();' \
        "cuMemAllocFromPoolAsync charges the current context's GPU, not the pool's" \
        "pool allocations charged to the wrong GPU"
# issue 31 (engines)
mutation tomltable "unit_toml_tomllib integration_runtime_configure" src/engine/toml_parse.c \
        'struct gs_tnode *t = x->d->sections[sect].table;' \
        'struct gs_tnode *t = x->d->root;' \
        "the TOML editor reads a dotted key of a [table] as a key of the document, so it writes keys into the wrong table (a duplicate table containerd and tomllib refuse)"
mutation backupmode integration_runtime_configure src/engine/conffile.c \
        'if (fill(fd, out, old, f, err) < 0) {' \
        'if (fill(fd, out, old, &(struct gs_conffile){.mode = 0644, .uid = (uid_t)-1, .gid = (gid_t)-1}, err) < 0) {' \
        "an engine config's backup is 0644 and root's, whatever the original's owner and mode (registry credentials readable by every user)" \
        "the backup is 0600"
mutation conffifo integration_runtime_configure src/engine/conffile.c \
        'O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);' \
        'O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);' \
        "a config that is a FIFO hangs \`runtime configure\` on its open instead of being refused" \
        "refused, not hung"
mutation confdangling integration_runtime_configure src/engine/conffile.c \
        'if (lstat(path, &lst) < 0) {' \
        'if (stat(path, &lst) < 0) {' \
        "a link to no file is taken for no file: a new file is written over the link (the link lost)" \
        "link to no file: refused"
# issue 31 (alloc): the allocator's word is the slice's ceiling (src/runtime/slice_rules.c)
mutation allocceiling unit_runtime src/runtime/slice_rules.c \
        'dev = tightest(al, env_dev);' \
        'dev = env_dev.s != NULL ? env_dev : al;' \
        "env widens the allocator's limit (a per-device variable wins over the allocator's value)" \
        "allocator_is_the_ceiling"
mutation envraise unit_runtime src/runtime/slice_rules.c \
        '} else if (mode == GS_COMPUTE_OFF && !may_raise) {' \
        '} else if (0) {' \
        "without an allocator the env turns the compute gate off unasked (no env-may-raise, unprivileged)" \
        "env_may_not_raise"
mutation oneslice integration_allocator src/runtime/hook.c \
        'if (same)' \
        'if (1)' \
        "two slice devices of one container that differ: the first hook's slice holds for every GPU (maybe the wider)" \
        "never the wider slice"
mutation pergpu integration_slice_gpus src/runtime/slice_gpus.c \
        'tighten(&m->memory_dev[idx], o.memory != NULL ? o.memory : "0", false);' \
        'for (size_t j = 0; j < ngpus && j < GS_SLICE_MAX_DEVICES; j++) tighten(&m->memory_dev[j], o.memory != NULL ? o.memory : "0", false);' \
        "per-GPU slices: one claim's memory limit applied to both GPUs of the container (each slice hook's on every GPU, the tightest kept)" \
        "GPU 1's memory is its claim's 2Gi"
mutation slicemounts unit_runtime src/runtime/request.c \
        'if (alloc == NULL && hc->accept_volume_mounts) {' \
        'if (0) {' \
        "a volume-mounts answer's slice (the kubelet's slice/ mounts) is not the ceiling: the pod's env replaces its limits" \
        "slice_mounts"
# issue 34 (checks)
mutation livecompute vgpu_resize src/vgpu/limiter.c \
        '__atomic_store_n(&d->bp, bp, __ATOMIC_RELAXED);' \
        '(void)bp; /* mutation */' \
        "a live compute change ignored by the limiter (published in the region, logged and given to the arbiter, but the slice keeps its old share)" \
        "the slice gets 60 % of the GPU after the change"
mutation ownwait lib_probe tests/vgpu/compute_probe.c \
        'tw > others / wall ? tw - others / wall : 0' \
        'tw' \
        "compute-probe's cpu_wait (the tests' CPU-stall allowance) counts the time its own process's threads (the interposer's ticker) kept it off its CPU: the product's threads loosen the bound that judges it" \
        "a thread of the probe's own process kept it off its CPU"
mutation allocnone integration_resize_hook src/vgpu/hooks_cuda.c \
        'if ((bytes) == 0 || gs_vgpu_charge((vis), (bytes)) == 0) {' \
        'if ((bytes) == 0 || (gs_vgpu_charge((vis), (bytes)) == 0 && (gs_vgpu_uncharge((vis), (bytes)), 0))) {' \
        "every allocation refused, out of memory (a quota's refusal checked only as 'refused' passes)" \
        "while 1000 MiB in the same process are granted"
mutation prioclass vgpu_turns src/vgpu/config.c \
        'v = lookup(src, "GPUSLICE_PRIORITY", "CUDA_TASK_PRIORITY", &name);' \
        'v = NULL; /* mutation */' \
        "priority classes ignored (GPUSLICE_PRIORITY not read: a high slice treated as normal, a low one too): cap 60 high beside cap 60 low split the GPU" \
        "cap 60 high beside cap 60 low"
# issue 33 (dra): tests/k8s/test_dra_production.sh puts the check meant for each of these first
mutation drarepublish k8s_dra_production src/dra/plugin.c \
        'if (rc == 0 && status == 404) {' \
        'if (0) {' \
        "the DRA plugin never publishes its ResourceSlice again once deleted (the kubelet deletes a node's slices when it restarts)" \
        "published again at the next read-back"
mutation draowner k8s_dra_production src/dra/plugin.c \
        'owner(p, s);' \
        '(void)owner; /* mutation */' \
        "the DRA plugin's ResourceSlice has no owner: kept at stop, it outlives a Node deleted from the cluster" \
        "owned by its Node"
mutation drainstance k8s_dra_production src/dra/plugin.c \
        'if (inst != NULL && inst[0] != '"'"'\0'"'"') {' \
        'if (0) {' \
        "the DRA plugin's sockets have fixed names whatever its instance: a new plugin takes the old one's sockets (no rolling update)" \
        "two instances side by side"
mutation drashared k8s_dra_production src/dra/checkpoint.c \
        'load(p); /* what another instance wrote since */' \
        '/* mutation */' \
        "the DRA plugin's checkpoint read once at start: an instance beside another does not see what that one prepared" \
        "instance B answers it from the shared checkpoint"
mutation drastale k8s_dra_production src/dra/prepare.c \
        'if (status == 404)
                return true;' \
        'if (0)
                return true;' \
        "a prepared claim deleted from the API server is never cleaned up (its spec and checkpoint entry stay)" \
        "unprepared by the stale sweep"
mutation dracorrupt k8s_dra_production src/dra/checkpoint.c \
        'size_t n = rebuild(p);' \
        'size_t n = 0;' \
        "a corrupt DRA checkpoint is set aside and the plugin starts empty: the prepared claims' books are lost" \
        "rebuilt from the claims' specs"
mutation dracommit k8s_dra_production src/dra/prepare.c \
        'if (held_mem + mem <= total && held_cs + cs <= 100)' \
        'if (1)' \
        "the DRA plugin prepares a claim that, with the claims already prepared on the GPU, over-commits its memory or compute (issue 34: an over-committed claim prepared)" \
        "beside a prepared 20 Gi"
mutation drashareid k8s_dra_production src/dra/service.c \
        'if (member(d, "share_id")[0] != '"'"'\0'"'"')' \
        'if (0)' \
        "the DRA plugin's answer leaves out the device's share_id (field 5): the kubelet cannot tell two shares of one GPU apart" \
        "share_id (field 5) echoed"
mutation dracapstep unit_k8s src/dra/slices.c \
        'uint64_t top = min > 0 ? value - value % min : value;' \
        'uint64_t top = value;' \
        "the DRA slice's memory requestPolicy default and max not on the 1 Mi step (the API server refuses the slice)" \
        "test_dra_capacity_step"
mutation dragate k8s_dra_production src/dra/plugin.c \
        'if (gpus && !shared && !p->gate_noted)' \
        'if (0)' \
        "the DRA plugin says nothing when the API server drops its consumable capacity (DRAConsumableCapacity off): slices silently never scheduled" \
        "the plugin says so: GPUs allocated whole"
mutation drataint k8s_dra_taints src/dra/slices.c \
        'if (d != NULL && why != NULL)' \
        'if (0)' \
        "the DRA plugin publishes an unhealthy GPU untainted (DRADeviceTaints on): the scheduler keeps giving claims a GPU with an XID" \
        "gpu-1 stays in the slice with the taint"
mutation drataintexec k8s_dra_taints src/dra/slices.c \
        'why->lost ? "NoExecute" : "NoSchedule"' \
        '"NoExecute"' \
        "the DRA plugin's taint for any XID is NoExecute: every pod using the GPU evicted on an error that may concern one process" \
        "gpu-1 stays in the slice with the taint"
mutation drataintgate k8s_dra_taints src/dra/plugin.c \
        'if (kept) {' \
        'if (1) {' \
        "the DRA plugin never notices an API server that drops taints (DRADeviceTaints off): an unhealthy GPU published untainted, schedulable" \
        "DRADeviceTaints off: gpu-1 left out of the slice"
mutation drataintdry k8s_dra_taints src/dra/plugin.c \
        'if (tainted && p->taints_gate == GS_DRA_TAINTS_UNKNOWN) {' \
        'if (0) {' \
        "the DRA plugin writes its first tainted slice without a dry run: with DRADeviceTaints off an unhealthy GPU is stored untainted until the answer shows it" \
        "found out by a dry run"
mutation dracref k8s_dra_production src/dra/checkpoint.c \
        'ref_name(ref, ns, cn)) {' \
        '0) {' \
        "a whole-GPU claim rebuilt from its spec has no namespace and name: the stale sweep never looks it up, it stays prepared for ever" \
        "the whole-GPU claim rebuilt with its namespace and name"
mutation drarebuildshare "k8s_dra_usage k8s_dra_production" src/dra/checkpoint.c \
        'ref_shares(ref, out);' \
        'if (0) ref_shares(ref, out); /* mutation */' \
        "a share rebuilt from its spec has no shareID: its usage status is refused (422, not an allocated device) until the kubelet prepares it again" \
        "usage after the rebuild"
mutation drarefshare k8s_dra_usage src/dra/checkpoint.c \
        "if (c->r[i].share_id[0] != '\\0')" \
        'if (0)' \
        "prepare writes no shareID into the claim's reference: a rebuild cannot recover it" \
        "the rebuilt share's entry"
mutation healthrecover "k8s_dra_taints unit_k8s" src/kubelet/health.c \
        'if (!*bad || why->gone || waits || now - why->quiet_ms < (long long)recover_ms)' \
        'if (1)' \
        "no recovery: a GPU reset or quiet again stays tainted (and Unhealthy) until the plugin restarts" \
        "GPU 1 reset (NVML answers for it again): the taint gone from gpu-1"
mutation healthgone "k8s_dra_taints unit_k8s" src/kubelet/health.c \
        'if (!*bad || why->gone || waits' \
        'if (!*bad || waits' \
        "a GPU NVML names lost is healthy again after the recovery time although it does not answer: claims prepared on a GPU off the bus" \
        "kept past the recovery time"
mutation healthrepair "k8s_dra_taints unit_k8s" src/kubelet/health.c \
        'why->gone || waits ||' \
        'why->gone ||' \
        "a GPU waiting for a reset (a remapped row pending) is healthy again after the recovery time: claims prepared on a GPU that needs a reset" \
        "kept while a remapped row waits for a reset"
mutation healthquiet "k8s_dra_taints unit_k8s" src/kubelet/health.c \
        'why->quiet_ms = now;' \
        '(void)now;' \
        "a critical XID on a device already unhealthy does not start its quiet time again: a GPU that keeps failing is healthy again between its XIDs" \
        "healthy again 2 s after the second"
mutation drahealth k8s_dra_health src/dra/plugin.c \
        'gs_dra_health_changed(p);' \
        '(void)0;' \
        "the DRA health service sends nothing on a change: the kubelet shows an XID'd GPU healthy in the pod's status until it reconnects" \
        "XID 79 on GPU 1: the stream"
mutation drausage k8s_dra_usage src/dra/usage.c \
        'now - s->written_at >= (long long)u->period_ms && moved(s) &&' \
        '!s->written && moved(s) &&' \
        "the DRA plugin writes a share's usage on its claim once and never again: the claim's status shows its first sample forever" \
        "no usage data on the claim"
mutation drachanged k8s_dra_usage src/dra/usage.c \
        'if (!s->written)
                return true;' \
        'if (1)
                return true;' \
        "the DRA plugin writes every share's usage every period, changed or not (a node of idle shares keeps the API server busy)" \
        "a share that holds still is written again"
mutation draclamp k8s_dra_usage src/dra/usage.c \
        'm->used = m->used < s->total ? m->used : s->total;' \
        '/* mutation */' \
        "the DRA plugin takes the memory a tenant's region claims as it is: 2^64-1 bytes in use goes on the claim (as -1)" \
        "clamped"
mutation draevents k8s_dra_usage src/dra/usage.c \
        '(s->event_at != 0 && now - s->event_at < gap)' \
        '(0 && gap)' \
        "the DRA plugin posts a MemoryQuotaReached Event at every sample the refusals grew: a tenant failing allocations in a loop floods the API server with Events" \
        "no second Event"
mutation drastatusoff k8s_dra_usage src/dra/plugin.c \
        'if (!o->status_off &&' \
        'if (1 &&' \
        "gpuslice dra-plugin --status-period 0 still writes the shares' usage on their claims (it cannot be turned off)" \
        "--status-period 0 still writes"
mutation drametrics k8s_dra_usage src/dra/service.c \
        'gs_dra_stats_note(p->stats, GS_DRA_OP_PREPARE, devs != NULL, mono_s() - t0);' \
        'gs_dra_stats_note(p->stats, GS_DRA_OP_PREPARE, true, mono_s() - t0);' \
        "the DRA plugin's metrics count a refused claim as prepared (gpuslice_dra_prepare_total{result=\"refused\"} never moves)" \
        "the plugin's metrics"
# issue 33, item 4: an application XID marks its process's share (tests/k8s/test_dra_appxid.sh)
mutation draappxid k8s_dra_appxid src/dra/appxid.c \
        'a->pend[a->npend++] = *r;' \
        '(void)r;' \
        "the DRA plugin reads the kernel's log but attributes no application XID: a share whose process faults is never marked (only a log line, as before)" \
        "claim A: no ApplicationError condition"
mutation draappxidkern k8s_dra_appxid src/driver/xidlog.c \
        'if (prio >> 3 != 0)' \
        'if (0)' \
        "the DRA plugin believes any line of the kernel's log, also one a process wrote (facility user): a host process can mark another tenant's claim" \
        "B marked by a line a process wrote"
mutation draappxidgap k8s_dra_appxid src/dra/appxid.c \
        'long long at = s->event_at != 0 ? s->event_at + GAP_MS : 0;' \
        'long long at = 0;' \
        "the DRA plugin writes the condition and posts an Event for every application XID: a tenant that faults in a loop floods the API server" \
        "Events after a second fault"
mutation xidname unit_xidlog src/driver/xidlog.c \
        "dst[k++] = src[i] >= 0x20 && src[i] < 0x7f ? src[i] : '?';" \
        'dst[k++] = src[i];' \
        "the process's name from the kernel's XID line (its own choice: prctl PR_SET_NAME) goes on the claim's condition and Event as it is, control characters too" \
        "test_parse_name_sanitized"
# issue 33, item 5: an admin-access claim (tests/k8s/test_dra_admin.sh puts these checks first)
mutation draadminro k8s_dra_admin src/dra/prepare.c \
        '{"ro", "nosuid", "nodev", "noexec", "bind"}' \
        '{"rw", "nosuid", "nodev", "noexec", "bind"}' \
        "an admin-access claim's view of the slices' regions is writable: a monitoring pod can corrupt the tenants' accounting" \
        "mounts the slices' regions directory read-only"
mutation draadminbooks k8s_dra_admin src/dra/prepare.c \
        'if (!pl[i].admin && fits(p, c, &c->r[i], &pl[i], err) < 0)' \
        'if (fits(p, c, &c->r[i], &pl[i], err) < 0)' \
        "an admin-access claim is on the node's books as a whole GPU: refused on a GPU its slices fill (the scheduler books it as consuming nothing)" \
        "an admin-access claim of the full gpu-0: prepared"
mutation draadminheld k8s_dra_admin src/dra/checkpoint.c \
        '(json_object_object_get_ex(d, "admin", &m) && json_object_get_boolean(m)))' \
        '(0 && json_object_object_get_ex(d, "admin", &m)))' \
        "a prepared admin-access claim counts on the node's books as a whole GPU: every slice claim of that GPU prepared after it is refused" \
        "a slice of gpu-0 after the admin claim: fits"
# issue 33, item 6: resource.k8s.io v1beta2 where v1 is not served (Kubernetes 1.33)
mutation draversion k8s_dra_versions src/dra/apiversion.c \
        'strcpy(api->res_version, v1 ? "v1" : "v1beta2");' \
        'strcpy(api->res_version, "v1");' \
        "the DRA plugin speaks resource.k8s.io/v1 whatever the API server serves (discovery's answer ignored): on a 1.33 cluster nothing is published, no claim read" \
        "v1beta2-only API server: the slice published at"
mutation drav1beta2whole k8s_dra_versions src/dra/plugin.c \
        'gs_dra_slice_version(s, p->api.res_version, gs_dra_api_shares(&p->api));' \
        'gs_dra_slice_version(s, p->api.res_version, true);' \
        "through v1beta2 the DRA plugin writes v1's consumable-capacity fields, which v1beta2 (1.33) lacks: dropped with warnings, never a slice of a GPU" \
        "no field v1beta2 lacks written"
# issue 33, item 3: shares of MIG devices
mutation dramigcap k8s_dra_mig src/dra/slices.c \
        'capacity(cap, "memory", m != NULL ? m->memory_total : g->memory_total, GS_DRA_MIN_MEMORY, true);' \
        'capacity(cap, "memory", g->memory_total, GS_DRA_MIN_MEMORY, true);' \
        "a MIG device is published with its parent GPU's memory, not its instance's: the scheduler books shares the MIG device does not have" \
        "MIG device in the slice"
mutation dramigbooks k8s_dra_mig src/dra/prepare.c \
        'uint64_t total = pl->mig >= 0 ? g->migs[pl->mig].memory_total : g->memory_total, held_mem = 0;' \
        'uint64_t total = g->memory_total, held_mem = 0;' \
        "the DRA plugin's books hold a MIG device's shares against its parent GPU's memory: a share over-committing the MIG instance is prepared" \
        "a third share (2 Gi) beside 8 Gi prepared"
mutation dramigusage k8s_dra_mig src/dra/usage.c \
        's->total = mig >= 0 ? g->migs[mig].memory_total : g->memory_total;' \
        's->total = g->memory_total;' \
        "a MIG share's usage on its claim is clamped to its parent GPU's memory, not its instance's: a tenant's region shows more than the MIG device has" \
        "MIG share usage clamped"
mutation dramigdevs k8s_dra_mig src/runtime/hook.c \
        'has = has || cfg->cap_minors[k] == minor;' \
        'has = true;' \
        "the slice hook counts every MIG device of a GPU whose node the container has as the container's (not only those whose CI node it has): a MIG share's quota lands on another index, its MIG device unlimited" \
        "CUDA device 0 is the MIG device, at the share's 4096 MiB"
# issue 33, item 3: several slice claims in one container, through the plugin's own specs
mutation drasharesroot k8s_dra_shares src/dra/prepare.c \
        '*val[] = {uuid, c->name, c->ns, c->pod, strcmp(root, "/") != 0 ? root : ""};' \
        '*val[] = {uuid, c->name, c->ns, c->pod, ""};' \
        "a DRA slice hook does not name the driver root its spec's mounts come from: where that is not / and no host config says so, a container of several slice claims does not start (the hook cannot read the GPUs' order)" \
        "two slice claims in one container"
mutation hookdriverroot k8s_dra_shares src/cli/cmd_hook.c \
        '.root = g->root_set ? g->root : driver_root != NULL ? driver_root : hc.root,' \
        '.root = g->root_set ? g->root : hc.root,' \
        "the hook ignores --driver-root (the host config's driver root only): a container of several DRA slice claims does not start where the driver is not at /" \
        "one claim with shares of both GPUs"
mutation migsliceuuid integration_slice_gpus src/container/configure.c \
        'add_uuid(uuids, sizeof(uuids), g->migs[j].uuid);' \
        'add_uuid(uuids, sizeof(uuids), g->uuid);' \
        "a slice of a selected MIG device names its parent GPU in GPUSLICE_DEVICES: the interposer, which knows CUDA's devices by UUID, finds no device of the slice (the MIG device hidden, its quota nowhere)" \
        "slice.conf names the MIG device by its MIG UUID"
# (uncoveredwait, drain()'s old wait for a covering event, is not here: vgpu_compute's stalled-ticker
# case reproduces the starvation in most runs, not all: six of six on this VM at 500:60, but CI's
# mutation runs, twice, met a run where it did not, and a check that passes the broken code now
# and then is no mutation check; the case itself stays as the behaviour's test)
mutation hookgpusonce integration_slice_gpus src/runtime/hook.c \
        'if (!gl->known)' \
        'if (true)' \
        "the slice hook walks a container's GPUs twice (its per-GPU slice, then its slice's GPUs): on the procfs path each container start reads the driver root's /proc/driver/nvidia once more per hook" \
        "each of its two hooks read the host's GPUs once"
mutation cdislicegpus integration_slice_pair src/runtime/hook.c \
        "rq.opts.slice.devices = node_gpus[0] != '\\0' ? node_gpus : NULL;" \
        'rq.opts.slice.devices = NULL;' \
        "a CDI container's slice (NVIDIA_VISIBLE_DEVICES=void, its GPU's node in config.json) names no GPU: no arbiter record, two such containers of one GPU never take turns (their kernels interleave, each charged for the other's: caps 30 and 50 got 13 and 37 % on the H200)" \
        "cdi: their kernels do not overlap"
# issue 32 (lat)
mutation sharewindow vgpu_latency_conserve src/vgpu/limiter.c \
        'atomic_store(&d->borrow, u.gpu <= (own > own_second ? own : own_second) + 5);' \
        'atomic_store(&d->borrow, u.gpu <= own + 5 + 0 * own_second);' \
        "share mode judges NVML's lagging utilization against the slices' last 100 ms only: a share slice beside an idle one stops borrowing for a second at a time" \
        "beside an idle slice"
mutation joinplace vgpu_latency_join src/vgpu/arbiter.c \
        'bool joining = last == 0 || ago > GS_ARB_SHARED_NS;' \
        'bool joining = false;' \
        "a slice that joins keeps its virtual time 0 (or a quantum of credit below the least of those wanting the GPU): its turns run a whole quantum against a waiting latency client" \
        "a batch joining as 8 new slices"
mutation quiethandover vgpu_latency_two src/vgpu/arbiter.c \
        'if (((others && (quiet || (!wanting && idle))) || (near && quiet)) && judged) {' \
        'if (others && (quiet || (!wanting && idle)) && judged) {' \
        "a quiet holder keeps its turn beside a slice that may want the GPU until its ticker (napping 5 ms) sees that slice want it: the other's requests wait for the turn to be handed back" \
        "two latency slices"
mutation takewake vgpu_latency_handover src/vgpu/limiter.c \
        '                return;
        wake_napping(NAP_LONG);' \
        '                return;
        if (0) wake_napping(NAP_LONG);' \
        "a turn a launcher takes while its ticker naps 5 ms is held idle until the nap ends: the other equal slice's request waits for it" \
        "handed over when the work is done"
mutation stallwake unit_arbiter src/vgpu/arbiter.c \
        '(ago > GS_ARB_WANT_NS && a->unwanted_at > last)' \
        '(ago > GS_ARB_WANT_NS)' \
        "a slice whose threads were kept off a CPU for 2 ms while it wanted the GPU is taken for waking: a quantum of credit, and it cuts the holder's turn (a turn more than its share on a loaded machine)" \
        "test_stall_is_no_waking"
mutation owedgrace unit_arbiter src/vgpu/arbiter.c \
        '(was ? now - a->owed_cause_at <= GS_ARB_OWED_GRACE_NS && got < owed' \
        '(was ? higher && wanting && got < owed' \
        "a share-mode slice's owed mark goes off at the first tick that saw no demand of the higher class within 2 ms (a stall): the high slice then cuts the owed turn by class" \
        "test_owed_through_a_stall"
mutation honestmargin unit_arbiter src/vgpu/arbiter.c \
        '#define GS_ARB_MARGIN_NS GS_ARB_QUANTUM_NS' \
        '#define GS_ARB_MARGIN_NS 0ull' \
        "the liar guard's margin is the slack alone: an honest peer whose turn of 43 ms costs a slice 20 ms more than its share is taken for a liar (its record ignored, both hold the GPU)" \
        "test_lumpy_peer_not_ignored"
mutation leavehandover vgpu_latency_leave src/vgpu/arbiter.c \
        'note(a, "hand over: the process ends");' \
        'note(a, "hand over: the process ends"); if (0)' \
        "a process that ends holding its slice's turn leaves the lease to run out (up to two quanta after the exit): the GPU idle meanwhile for the slices that cannot cut it" \
        "slices that leave hand their turn over"
mutation liarheld unit_arbiter src/vgpu/arbiter.c \
        'a->short_of_share = (got > held ? got : held) + GS_ARB_OWED_SLACK_NS < owed;' \
        'a->short_of_share = (got > held ? got : got) + GS_ARB_OWED_SLACK_NS < owed;' \
        "the liar guard judges what a slice received by its GPU time alone: a light slice that held the GPU for its share of turns (its requests' CPU gaps in them) is short of its share, and takes a peer that cut its turns for a liar" \
        "test_turn_holder_not_short"
mutation capwant unit_arbiter src/vgpu/arbiter.c \
        'if (quiet || held_back) {' \
        'if (quiet) {' \
        "a capped slice held back by its own budget still says it wants the GPU for 2 ms: first in the order, it keeps the others from a GPU it cannot use, and each charges it the wait" \
        "test_budget_pause_wants_nothing"
mutation capnap unit_arbiter src/vgpu/arbiter.c \
        'return a->want_began > last ? a->want_began : last;' \
        'return last;' \
        "the time a slice wanted the GPU is counted from the tick before its demand: the ticker's 5 ms nap while a capped slice waited for its own budget is time it wanted, charged to the peer holding the GPU" \
        "test_budget_pause_not_wanted"
mutation capwoke unit_arbiter src/vgpu/arbiter.c \
        'a->woke = !a->held_back;' \
        'a->woke = true;' \
        "a capped slice that hands its turn over for want of budget wakes when its budget is back: its second look cuts the holder's turn" \
        "test_budget_pause_wants_nothing"
mutation donehandback vgpu_latency_handback src/vgpu/limiter.c \
        '|| (done != 0 && done <= now)) && !held_back;' \
        ') && !held_back;' \
        "a request client's turn goes back only once nothing of its own happened for a tick, at its ticker's next look (0.3-0.5 ms after the request), not when its wait returned and its steps say it is done" \
        "a turn goes back when the request is done"
mutation ctxsync13 vgpu_latency_handback src/vgpu/hooks.h \
        'X(cuCtxSynchronize_v2)' \
        '' \
        "CUDA 13's context synchronization (cuCtxSynchronize_v2: cudaDeviceSynchronize, torch.cuda.synchronize) is not seen as the application's wait: a PyTorch service's turn goes back only at the ticker's quiet" \
        "waits by CUDA 13's cuCtxSynchronize"
mutation costahead unit_arbiter src/vgpu/arbiter.c \
        'first->ahead += dt;' \
        '' \
        "the log's cost of a peer does not tell its place in line from the turns it held" \
        "test_cost_ahead_in_line"
mutation chargefirst unit_arbiter src/vgpu/arbiter.c \
        '(first == NULL || ahead_of(peer_place(p), p->name, peer_place(first), first->name)))' \
        'true) { p->charged += dt; p->ahead += dt; }' \
        "every slice in line ahead of us is charged the whole of a tick's wait" \
        "test_charged_first_in_line"
mutation probation unit_arbiter src/vgpu/arbiter.c \
        'if (p->prob_at == 0 || now - p->prob_at >= GS_ARB_WINDOW_NS)' \
        'if (true || p->prob_at == 0 || now - p->prob_at >= GS_ARB_WINDOW_NS)' \
        "a record believed again is judged on the window alone: two colluding records in line keep a share-50 slice well under its share until the window makes it short again" \
        "test_colluding_liars_in_line"
mutation judgemin unit_arbiter src/vgpu/arbiter.c \
        '#define GS_ARB_JUDGE_NS 250000000ull' \
        '#define GS_ARB_JUDGE_NS 1ull' \
        "a peer is judged a liar on the first 100 ms of our wanting the GPU (the turn of a slice that started first)" \
        "test_not_judged_on_little"
mutation joinclass unit_arbiter src/vgpu/arbiter.c \
        'struct place_least *l = p->prio == a->prio ? &ours : &other;' \
        'struct place_least *l = &ours;' \
        "a joining low slice goes behind a high slice's virtual time, a quantum ahead of the slices of its class" \
        "test_join_behind_own_class"
mutation latedemand unit_arbiter src/vgpu/arbiter.c \
        'uint64_t ago = now > last ? now - last : 0;' \
        'uint64_t ago = now - last;' \
        "a launcher's demand noted after the ticker read its clock makes the ticker's tick a join" \
        "test_late_demand_no_join"
mutation vtimesane unit_arbiter src/vgpu/arbiter.c \
        'if (p->vtime >= GS_ARB_VTIME_SANE)' \
        'if (false)' \
        "a record claiming a virtual time no slice reaches places a joiner beside it, and the joiner's virtual time wraps to first in line" \
        "test_join_not_by_absurd_vtime"
mutation highcutsowed unit_arbiter src/vgpu/arbiter.c \
        '!may_cut_as_peer(mine, a->weight, light, pp, p->flags & GS_ARB_LIGHT, waking) &&' \
        '/* mutation */' \
        "a waking high slice that asks for little waits behind the turn of a slice owed its share that wants the GPU (up to a quantum)" \
        "test_high_cuts_owed"
mutation firstbudget vgpu_latency_first src/vgpu/limiter.c \
        '                        first_budget(d);' \
        '' \
        "a new slice's budget starts empty: its first request waits for a burst to accrue (20 ms beside another slice)" \
        "a new slice's first request"
mutation firstsync vgpu_latency_first src/vgpu/limiter.c \
        'atomic_load_explicit(&d->synced, memory_order_relaxed) <=' \
        '0 * atomic_load_explicit(&d->synced, memory_order_relaxed) <=' \
        "before its first measurement a process counts launches its application waited for as outstanding (its ticker naps 5 ms)" \
        "a new slice's first request"
# (since the twenty-second session a light slice that wakes also passes a batch waiting in line,
# which alone serves this case too: the mutation takes both away, light_waker)
mutation lightjoin vgpu_latency_pause src/vgpu/arbiter.c \
        'return atomic_load(&a->light);' \
        'return false && atomic_load(&a->light);' \
        "a light slice back from a pause of over a second joins behind the turn it finds, and waits in line behind the batch that waits for it (a batch's turn: up to a quantum)" \
        "a light slice back from a pause"
mutation lightfirst vgpu_latency_pause src/vgpu/limiter.c \
        '!atomic_load_explicit(&d->arb.light, memory_order_relaxed) && light_now(d, now, false))' \
        '!atomic_load_explicit(&d->arb.light, memory_order_relaxed) && false)' \
        "a slice's first pause makes it light only at the ticker's next look, after its request joined behind the turn it found" \
        "a light slice back from a pause"
mutation lowerwake vgpu_latency_lower src/vgpu/limiter.c \
        'else if (gs_arb_held_wanted(&d->arb))' \
        'else if (false && gs_arb_held_wanted(&d->arb))' \
        "a high client's turn beside lower classes is kept until its ticker's long nap ends (up to 5 ms past its request)" \
        "a high client beside three low batches"
mutation aheadlight vgpu_latency_ahead src/vgpu/limiter.c \
        'if (out != 0 && gs_arb_shared(&d->arb) && !gs_arb_among_light(&d->arb)) {' \
        'if (out != 0 && gs_arb_shared(&d->arb)) {' \
        "a light slice beside light ones keeps its work launched ahead within 0.5 ms of its estimate, waiting on an idle GPU" \
        "two light slices launching ahead"
mutation sidebyside unit_arbiter src/vgpu/arbiter.c \
        'pass = light && a->guaranteed && !below;' \
        'pass = false && light && a->guaranteed && !below;' \
        "light share-mode slices of one class take turns through each other's CPU gaps, never launching side by side" \
        "test_side_by_side"
mutation tickerslack vgpu_latency_handback src/vgpu/limiter.c \
        '        precise_naps();
        while (!atomic_load(&L.stopping)) {' \
        '        while (!atomic_load(&L.stopping)) {' \
        "the ticker's naps end its timer slack (50 us) late: a turn goes back ~115 us after a request, not ~67" \
        "a turn goes back when the request is done"
mutation chargenet unit_arbiter src/vgpu/arbiter.c \
        'dt = dt > ours ? dt - ours : 0;' \
        'dt = dt + 0 * ours;' \
        "a peer is charged the time our own queued work ran at the start of its turn: a capped 70 slice beside a 30 one holds its budget and those waits, and is taken for a liar" \
        "test_charge_net_of_ours"
mutation ctxswitch fakegpu_ctx_switch tests/fakegpu/fake_cuda_time.c \
        'start += switch_from(dev);' \
        'start += 0 * switch_from(dev);' \
        "the simulated GPU switches between processes' work for free whatever FAKEGPU_CTX_SWITCH_US says" \
        "a switch of 300 us"
mutation guardwait vgpu_latency_guard src/vgpu/limiter.c \
        '|| 2 * waited < now - since) { /* a fair wait */' \
        '|| (2 * waited < now - since && false)) { /* a fair wait */' \
        "the starvation guard judges a stretch of waiting by what the slice got alone: a light slice that wants little takes itself for starved" \
        "a light normal client beside a high one is no starved slice"
mutation bell unit_arbiter src/vgpu/arbiter.c \
        'syscall(SYS_futex, (uint32_t *)&a->me->state, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);' \
        '(void)0;' \
        "a turn's end wakes nobody: the launchers waiting for it look again only when their nap ends" \
        "test_release_wakes_waiter"
mutation bellrate unit_arbiter src/vgpu/arbiter.c \
        'if (a->me == NULL || now - atomic_load(&a->woken_at) < ns || !view_lock(a))' \
        'if (a->me == NULL || !view_lock(a))' \
        "a holder that wakes its waiters again and again keeps their threads reading the records at each wake" \
        "test_wakes_no_more_than_naps"
mutation turnmark vgpu_latency_charge src/vgpu/limiter.c \
        'if (GS_LIMITER_START_MARK && !held && gs_arb_may_launch(&d->arb) &&' \
        'if (0 && GS_LIMITER_START_MARK && !held && gs_arb_may_launch(&d->arb) &&' \
        "a turn's first kernel is charged from its launch: the wait for the holder's running kernel and the switch is the cutter's GPU time too" \
        "what a cut costs the cutter"
mutation calend vgpu_latency_charge src/vgpu/limiter.c \
        'd->ref_ns = t1 - (w < GS_LIMITER_CAL_GOOD_NS ? w : GS_LIMITER_CAL_GOOD_NS) / 2;' \
        'd->ref_ns = t0 + w / 2;' \
        "a clock reference whose try waited for the GPU (a slice started beside a busy one) is placed at the middle of the wait: its events look up to a kernel early, and its GPU time is undercounted" \
        "what a cut costs the cutter"
mutation sidebysidetwo vgpu_latency_two src/vgpu/arbiter.c \
        'pass = light && a->guaranteed && !below;' \
        'pass = false && light && a->guaranteed && !below;' \
        "two light share-mode latency slices take turns through each other's CPU gaps on the simulated GPU: the second client's p95 1.14-1.15 x its unsliced one (1.33-1.39 before the twenty-third session's cut)" \
        "two light slices side by side"
mutation sidebysidecharge unit_arbiter src/vgpu/arbiter.c \
        'atomic_load(&a->me->state) != GS_ARB_FREE || atomic_load(&a->pass))' \
        'atomic_load(&a->me->state) != GS_ARB_FREE)' \
        "a slice launching beside another's turn charges that turn to it as if kept from the GPU (the liar guard's cost)" \
        "test_side_by_side"
# issue 34 (item 4: latency request by request)
mutation strictone vgpu_turns src/vgpu/limiter.c \
        'return gs_arb_below(&d->arb) &&' \
        'return 0 && gs_arb_below(&d->arb) &&' \
        "beside a slice of a higher class, a batch's long kernels are not launched one at a time on a fresh look at the records: its next kernel, launched on a view from before the high client took the GPU, runs ahead of the client's request (a late start)" \
        "beside 5 ms batch kernels, request by request"
mutation aheadshared vgpu_turns src/vgpu/limiter.c \
        'if (out != 0 && gs_arb_shared(&d->arb) && !gs_arb_among_light(&d->arb)) {' \
        'if (0 && out != 0 && gs_arb_shared(&d->arb) && !gs_arb_among_light(&d->arb)) {' \
        "beside a slice of its class a batch keeps up to four kernels (or 4 ms of work) queued, not one behind the one running: a waking client's request waits for all of them" \
        "share 50/50, 2000 us batch kernels, request by request"
# issue 32 (the high client's late batch kernels)
mutation askheed unit_arbiter src/vgpu/arbiter.c \
        'bool asked = fresh && atomic_load(&a->me->state) != GS_ARB_FREE && higher_asks(a);' \
        'bool asked = false && fresh && atomic_load(&a->me->state) != GS_ARB_FREE && higher_asks(a);' \
        "a holder of a lower class launches its next long kernel on a look from before a high slice's take, while that slice has just asked for the GPU: the kernel runs ahead of the high client's first" \
        "test_higher_ask_holds_launch"
mutation turnwant vgpu_latency_capchurn src/vgpu/limiter.c \
        '(atomic_load(&d->waiting_budget) == 0 || refilled(d));' \
        '(atomic_load(&d->waiting) == 0 || refilled(d));' \
        "a launcher that waits for a turn with less than a whole burst left is no demand to its ticker: the turn it takes goes straight back, every nap, and capped batches that come and go take each other for liars and keep less than their cap" \
        "capped batches that come and go keep their cap"
mutation lightpass unit_arbiter src/vgpu/arbiter.c \
        '!(light && pp.cls == mine.cls && !(p->flags & GS_ARB_LIGHT) && !peer_holds(p, now)))' \
        '!(0 && light && peers(mine, pp) && !(p->flags & GS_ARB_LIGHT) && !peer_holds(p, now)))' \
        "a light slice that wakes waits in line behind a batch of its class that waits for the holder's turn (a new batch slice, less virtual time): its request waits for the holder's quantum" \
        "test_light_passes_batch_in_line"
mutation lightcut unit_arbiter src/vgpu/arbiter.c \
        'return light && mine.cls == h.cls && !h_light && cut_stands(mine, weight, h);' \
        'return 0 && light && mine.cls == h.cls && !h_light && cut_stands(mine, weight, h);' \
        "a light slice that wakes cuts a batch's turn only where it is the cut slack below it: a capped batch paused for its budget, left below the client, keeps its requests waiting for milliseconds of its turns" \
        "test_light_cuts_batch_ahead"
mutation crowd unit_arbiter src/vgpu/arbiter.c \
        'uint64_t now = gs_mono_ns(), t = record_alive(a->dirfd, name);' \
        'uint64_t now = gs_mono_ns(), t = 0 * record_alive(a->dirfd, name);' \
        "a directory crowded with the records of slices gone lately: the first 63 listed take part, and a slice that has just come may not" \
        "test_crowded_directory"
mutation fdreserve vgpu src/vgpu/limiter.c \
        'gs_arb_reserve_fds(); /* (in the constructor, while the process has one thread) */' \
        '/* (in the constructor, while the process has one thread) */' \
        "a compute-limited slice's descriptor table grows only when an open needs it, in a process of threads: the kernel waits for an RCU grace period (5-31 ms on the H200) in the arbiter's open, its view's lock held" \
        "descriptor table"
mutation fdreservefork vgpu src/vgpu/limiter.c \
        'if (gs_limiter_enabled) /* (a child'"'"'s table) */' \
        'if (0) /* (a child'"'"'s table) */' \
        "a forked child's descriptor table is not grown again: the kernel sized it to the descriptors open at the fork, and its first arbiter opens, with threads, wait for an RCU grace period" \
        "forked child"
SLOW=(prioclass strictone)

if [ -n "${MUTATION_ONLY:-}" ]; then
        MUTATIONS=()
        for m in $MUTATION_ONLY; do
                [ -n "${FILE[$m]:-}" ] || { echo "no mutation named $m" >&2; exit 2; }
                MUTATIONS+=("$m")
        done
else
        keep=()
        for m in "${MUTATIONS[@]}"; do [[ " ${SLOW[*]} " == *" $m "* ]] || keep+=("$m"); done
        MUTATIONS=("${keep[@]}")
fi

# ---- the scratch trees and builds -------------------------------------------------------------

# setup_tree SRC BUILD LOG: the source copy's mutated files made newer than anything built, and the
# build configured (tests on, warnings not errors)
setup_tree() { # SRC BUILD LOG
        local src=$1 build=$2 log=$3
        # The copy keeps the files' times, and an earlier run's build holds objects of mutated files
        # that are newer than them (the last mutation is never rebuilt back; a run may have been
        # killed): make the mutated files newer than anything built, so that ninja compiles them again.
        for f in "${FILE[@]}"; do touch "$src/$f" || return 1; done
        if [ ! -f "$build/build.ninja" ]; then
                meson setup "$build" "$src" --buildtype=debugoptimized -Dtests=true -Dwerror=false >"$log" 2>&1 ||
                        { echo "meson setup failed: $log" >&2; tail -20 "$log" >&2; return 1; }
        elif jq -e '.[] | select(.name == "werror" and .value) , select(.name == "tests" and (.value | not))' \
                <(meson introspect "$build" --buildoptions) >/dev/null; then
                meson configure "$build" -Dwerror=false -Dtests=true >"$log" 2>&1 || return 1
        fi
        # (an earlier run's build knows the tests of its day: regenerated now, before `targets`
        # asks it for this tree's tests, not at the first build)
        ninja -C "$build" build.ninja >>"$log" 2>&1 || { echo "meson regenerate failed: $log" >&2; return 1; }
}

rm -rf "$SRC" "$LOGS" "$WORK"/mutating* "$WORK/sched"
mkdir -p "$SRC" "$LOGS"
if git -C "$TOP" rev-parse --git-dir >/dev/null 2>&1; then
        git -C "$TOP" ls-files -z --cached --others --exclude-standard |
                while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
                tar -cf - --null -T - | tar -xf - -C "$SRC" || { echo "copying the tree failed" >&2; exit 1; }
else
        tar -cf - --exclude='./build' --exclude='./build-*' . | tar -xf - -C "$SRC" || exit 1
fi
setup_tree "$SRC" "$BUILD" "$LOGS/setup.log" || exit 1
MUTATING=$WORK/mutating

# targets TEST...: the build outputs (relative to the build dir) the tests run or depend on
targets() {
        local names; names=$(printf '%s\n' "$@" | jq -R . | jq -s .)
        jq -r --argjson names "$names" --slurpfile tg <(meson introspect "$BUILD" --targets) --arg b "$BUILD/" '
                ($tg[0] | map({key: .id, value: .filename}) | from_entries) as $f
                | .[] | select(.name as $n | $names | index($n))
                | ((.depends[] | $f[.][]?), (.cmd[0] | select(startswith($b))))
                | ltrimstr($b)' <(meson introspect "$BUILD" --tests) | sort -u
}
# build LOG TEST...: build what the tests need; prints "no work" when nothing was compiled
build() {
        local log=$1; shift
        local t; mapfile -t t < <(targets "$@")
        [ "${#t[@]}" -gt 0 ] || { echo "no targets for: $*" >"$log"; return 1; }
        ninja -C "$BUILD" -j "$JOBS" "${t[@]}" >"$log" 2>&1 || return 1
        grep -q "^ninja: no work to do" "$log" && echo "no work"
        return 0
}
# run_tests LOG TEST...: run them; prints "RESULT NAME" a line (meson's results: OK, FAIL, SKIP, TIMEOUT...).
# With STOP_AT set (a mutation's CHECK), a check.sh test stops at the first failed check that
# names it (GS_STOP_AT_CHECK, tests/lib/check.sh; a cmocka test that takes it runs that case
# alone): the rest of that test would only tell more.
run_tests() {
        local log=$1; shift
        rm -f "$BUILD/meson-logs/testlog.json"
        GS_STOP_AT_CHECK=${STOP_AT:-} meson test -C "$BUILD" --no-rebuild --num-processes 1 "$@" >"$log" 2>&1
        cat "$BUILD/meson-logs/testlog.txt" >>"$log" 2>/dev/null # every test's whole output
        [ -s "$BUILD/meson-logs/testlog.json" ] || return 1
        jq -r '"\(.result) \(.name | sub(".* / "; ""))"' "$BUILD/meson-logs/testlog.json"
}
# failed_checks TEST: the failed checks in TEST's output in the last run (testlog.json): check.sh's
# "not ok - " lines, cmocka's "[  FAILED  ] NAME" (not its summary)
failed_checks() {
        jq -r --arg t "$1" 'select((.name | sub(".* / "; "")) == $t) | (.stdout // "") + (.stderr // "")' \
                "$BUILD/meson-logs/testlog.json" | grep -aE '^not ok - |^\[  FAILED  \] [A-Za-z_]' | awk '!seen[$0]++'
}

all_tests=()
for m in "${MUTATIONS[@]}"; do for t in ${TESTS[$m]}; do all_tests+=("$t"); done; done
mapfile -t all_tests < <(printf '%s\n' "${all_tests[@]}" | sort -u)

# Two lanes (MUTATION_LANES, 1 or 2; default 2): the mutations whose tests may all run beside
# others (meson's is_parallel: the normal build runs them three at a time) run first, two at a time,
# each lane in a scratch tree and build of its own (WORKDIR/src2, WORKDIR/build2 for the second),
# never two runs of one test at once (a test's fixed names: its containers, cgroups, sockets); then
# those with a timing test (is_parallel: false, vgpu_*) one at a time, alone on the machine.
declare -A SERIAL_TEST
while IFS= read -r t; do SERIAL_TEST[$t]=1; done < <(meson introspect "$BUILD" --tests | jq -r '.[] | select(.is_parallel | not) | .name')
par=() ser=() par_tests=()
declare -A TIMING # (the mutations with a timing test: ser)
for m in "${MUTATIONS[@]}"; do
        s=""
        for t in ${TESTS[$m]}; do [ -n "${SERIAL_TEST[$t]:-}" ] && s=1; done
        if [ -n "$s" ]; then ser+=("$m"); TIMING[$m]=1; else par+=("$m"); for t in ${TESTS[$m]}; do par_tests+=("$t"); done; fi
done
LANES=${MUTATION_LANES:-2}
[ "${#par[@]}" -ge 2 ] || LANES=1

echo "# building ${#all_tests[@]} test(s)' targets in $BUILD (-j$JOBS)"
build "$LOGS/build.log" "${all_tests[@]}" >/dev/null || { echo "build failed: $LOGS/build.log" >&2; tail -20 "$LOGS/build.log" >&2; exit 1; }
# MUTATION_BASELINE=TESTLOG (tests/run-all.sh: its normal build's meson-logs/testlog.json, a run of
# this same tree a few minutes before): the tests that passed there need not run again; the rest
# (failed, skipped, or not in that log) run here as the baseline.
need=("${all_tests[@]}") base=""
if [ -n "${MUTATION_BASELINE:-}" ] && [ -s "$MUTATION_BASELINE" ]; then
        mapfile -t passed_there < <(jq -r 'select(.result == "OK") | .name | sub(".* / "; "")' "$MUTATION_BASELINE" | sort -u)
        mapfile -t need < <(comm -23 <(printf '%s\n' "${all_tests[@]}") <(printf '%s\n' "${passed_there[@]}") | sed '/^$/d')
        base=" ($(( ${#all_tests[@]} - ${#need[@]} )) of ${#all_tests[@]} passed in $MUTATION_BASELINE, this tree's test run)"
fi
echo "# baseline: ${need[*]:-none left to run}$base ($((SECONDS - t0)) s so far)"
res="" bad=""
if [ "${#need[@]}" -gt 0 ]; then
        res=$(run_tests "$LOGS/baseline.log" "${need[@]}") || { echo "baseline: no test log ($LOGS/baseline.log)" >&2; exit 1; }
        bad=$(awk '$1 != "OK"' <<<"$res")
fi
if [ -n "$bad" ] || { [ "${#need[@]}" -gt 0 ] && [ "$(wc -l <<<"$res")" -ne "${#need[@]}" ]; }; then
        echo "baseline: these tests must pass on the unbroken tree, or a mutation proves nothing:" >&2
        awk '$1 != "OK" {print "  " $2 ": " $1}' <<<"$res" >&2
        echo "  (log: $LOGS/baseline.log)" >&2; exit 1
fi

# ---- the mutations ----------------------------------------------------------------------------

# apply FILE OLD NEW: replace the one occurrence of OLD (fixed text); fails unless there is one
apply() {
        local f=$SRC/$1 old=$2 new=$3 text
        IFS= read -r -d '' text <"$f"
        local rest=${text//"$old"/}
        local n=$(( (${#text} - ${#rest}) / ${#old} ))
        [ "$n" -eq 1 ] || { echo "$n occurrences of the text to mutate in $1 (want 1)"; return 1; }
        cp "$f" "$MUTATING" || return 1
        printf '%s' "${text/"$old"/"$new"}" >"$f"
}
# restore FILE: the original back, with a new mtime (so that ninja rebuilds from it)
restore() { [ -e "$MUTATING" ] && cp "$MUTATING" "$SRC/$1" && rm -f "$MUTATING"; }

# mutate NAME: apply, build, test, restore, in this lane's tree ($SRC, $BUILD); prints its line
# and returns 0 (killed), 1 (survived) or 2 (not applied, not built)
mutate() {
        local m=$1 file=${FILE[$1]} tests=${TESTS[$1]} mt0=$SECONDS why nw res
        trap 'restore "$file"; exit 130' INT TERM
        if ! why=$(apply "$file" "${OLD[$m]}" "${NEW[$m]}"); then
                trap - INT TERM; echo "$m: DID NOT APPLY ($why)"; return 2
        fi
        # shellcheck disable=SC2086
        if ! nw=$(build "$LOGS/$m.build.log" $tests); then
                restore "$file"; trap - INT TERM; echo "$m: DID NOT BUILD ($LOGS/$m.build.log)"; return 2
        elif [ "$nw" = "no work" ]; then
                restore "$file"; trap - INT TERM; echo "$m: NOT COMPILED into $tests' targets"; return 2
        fi
        # shellcheck disable=SC2086
        res=$(STOP_AT=${CHECK[$m]} run_tests "$LOGS/$m.test.log" $tests)
        restore "$file"
        trap - INT TERM
        # killed: a named test failed (FAIL, TIMEOUT, ERROR...; a SKIP kills nothing) and, with a
        # CHECK, one of its failed checks is that one
        local by="" elsewhere="" t fails line
        why=""
        for t in $(awk '$1 != "OK" && $1 != "SKIP" && $1 != "EXPECTEDFAIL" {print $2}' <<<"$res"); do
                fails=$(failed_checks "$t")
                if [ -n "${CHECK[$m]}" ]; then
                        line=$(grep -aF -- "${CHECK[$m]}" <<<"$fails" | head -1)
                        [ -n "$line" ] || { elsewhere="$elsewhere $t: ${fails:-no failed check (a crash or a timeout)}"; continue; }
                else
                        line=$(head -1 <<<"$fails")
                fi
                by="${by:+$by,}$t" why="${why:-${line:-no failed check: $(awk -v t="$t" '$2 == t {print $1}' <<<"$res")}}"
        done
        if [ -n "$by" ]; then
                echo "$m: killed by $by ($((SECONDS - mt0)) s): ${why:0:200}"; return 0
        elif [ -n "$elsewhere" ]; then
                echo "$m: SURVIVED (failed elsewhere, not at '${CHECK[$m]}'): ${DESC[$m]} (${elsewhere:1:400}; $LOGS/$m.test.log)"
        else
                echo "$m: SURVIVED: ${DESC[$m]} ($(awk '{print $2 " " $1}' <<<"$res" | paste -sd, -); $LOGS/$m.test.log)"
        fi
        return 1
}

killed=0 survived=0 broken=0
count() { case $1 in 0) killed=$((killed + 1)) ;; 1) survived=$((survived + 1)) ;; *) broken=$((broken + 1)) ;; esac; }

# The lanes take the parallel mutations in order from a queue ($WORK/sched/queue, under its
# flock): each the first whose tests the other lane is not running ($WORK/sched/running/TEST).
# next_mutation: prints the one taken; exit 1 when the queue is empty, 2 when all left must wait
next_mutation() {
        local q=$WORK/sched
        (
                flock 9 || exit 1
                local left m t busy
                mapfile -t left <"$q/queue"
                [ "${#left[@]}" -gt 0 ] || exit 1
                for m in "${left[@]}"; do
                        busy=""
                        for t in ${TESTS[$m]}; do [ -e "$q/running/$t" ] && busy=1; done
                        [ -z "$busy" ] || continue
                        for t in ${TESTS[$m]}; do : >"$q/running/$t"; done
                        printf '%s\n' "${left[@]}" | grep -vxF -- "$m" >"$q/queue.new"
                        mv "$q/queue.new" "$q/queue"
                        echo "$m"; exit 0
                done
                exit 2
        ) 9>"$q/lock"
}
# lane N: run mutations from the queue until it is empty; "RC NAME" lines into $WORK/sched/lane.N.
# The second lane first configures and builds its tree (while the first lane already runs
# mutations); if that fails, the first lane runs them all.
lane() {
        local n=$1 m rc t
        MUTATING=$WORK/mutating.$n
        if [ "$n" != 1 ]; then
                SRC=$WORK/src$n BUILD=$WORK/build$n
                if ! { setup_tree "$SRC" "$BUILD" "$LOGS/setup$n.log" && build "$LOGS/build$n.log" "${par_tests[@]}" >/dev/null; }; then
                        echo "# lane $n: its build failed ($LOGS/build$n.log): lane 1 runs its mutations"; return 0
                fi
        fi
        for (( ; ; )); do
                m=$(next_mutation); rc=$?
                [ "$rc" -ne 1 ] || break
                if [ "$rc" -ne 0 ]; then sleep 0.2; continue; fi
                mutate "$m"; rc=$?
                echo "$rc $m" >>"$WORK/sched/lane.$n"
                (flock 9 && for t in ${TESTS[$m]}; do rm -f "$WORK/sched/running/$t"; done) 9>"$WORK/sched/lock"
        done
}

if [ "$LANES" -gt 1 ]; then
        mapfile -t par_tests < <(printf '%s\n' "${par_tests[@]}" | sort -u)
        echo "# a second lane for the ${#par[@]} mutation(s) of ${#par_tests[@]} test(s) that may run beside others: $WORK/src2, $WORK/build2"
        rm -rf "$WORK/src2"
        cp -a "$SRC" "$WORK/src2" || { echo "copying the tree failed" >&2; exit 1; }
        mkdir -p "$WORK/sched/running" && printf '%s\n' "${par[@]}" >"$WORK/sched/queue" || exit 1
        lane 1 & l1=$!
        lane 2 & l2=$!
        trap 'kill -TERM $l1 $l2 2>/dev/null; wait; exit 130' INT TERM
        wait $l1 $l2
        trap - INT TERM
        while read -r rc m; do count "$rc"; done < <(cat "$WORK/sched/lane.1" "$WORK/sched/lane.2" 2>/dev/null)
        done_n=$(cat "$WORK/sched/lane.1" "$WORK/sched/lane.2" 2>/dev/null | wc -l)
        if [ "$done_n" -ne "${#par[@]}" ]; then
                echo "the lanes ran $done_n of ${#par[@]} mutations" >&2; broken=$((broken + ${#par[@]} - done_n))
        fi
        echo "# the ${#par[@]} that may run beside others done, two at a time ($((SECONDS - t0)) s so far); now one at a time: ${ser[*]:-none}"
        MUTATIONS=("${ser[@]}")
fi
# A timing mutation that survived runs again, MUTATION_TIMING_TRIES runs in all (default 3): a
# timing test compares a slice with a run measured beside it (no slicing, alone), and a machine
# that disturbed that baseline once hides the mutation once (CI: sidebysidetwo survived when the
# unsliced clients' p95 came out 2.7 x its usual, 3.7 ms). A "# NAME: survived run N" line says
# so before each repeat; it survives only if it survives every run. A mutation with no timing
# test runs once (its tests measure nothing).
TIMING_TRIES=${MUTATION_TIMING_TRIES:-3}
for m in "${MUTATIONS[@]}"; do
        for ((try = 1; ; try++)); do
                out=$(mutate "$m"); rc=$?
                if [ "$rc" -eq 1 ] && [ -n "${TIMING[$m]:-}" ] && [ "$try" -lt "$TIMING_TRIES" ]; then
                        echo "# $m: survived run $try of $TIMING_TRIES ($(sed 's/SURVIVED/survived/g' <<<"${out#*: }")): running it again"
                        continue
                fi
                [ "$try" -gt 1 ] && [ "$rc" -eq 0 ] && out="$out (on run $try of $TIMING_TRIES)"
                echo "$out"
                break
        done
        count $rc
done

notrun=""
[ "$broken" -gt 0 ] && notrun=", $broken not applied or not built"
echo "mutations: $killed killed, $survived survived$notrun ($((SECONDS - t0)) s)"
[ "$survived" -eq 0 ] && [ "$broken" -eq 0 ]
