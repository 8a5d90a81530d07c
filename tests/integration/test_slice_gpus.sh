#!/usr/bin/env bash
# Per-GPU slices (issue 33, "several shares"; runtime/slice_gpus.h): a container whose slice
# devices are on different GPUs (two slice claims, or one claim with shares of two GPUs) gets each
# GPU's own limits, never one device's limits on the other GPU, and the env cannot widen either.
# Real runc containers on the simulated 2-GPU root; each has two createRuntime hooks
# `gpuslice hook --gpu=<uuid> --memory=... --compute-share=... createRuntime`, as the DRA plugin's
# per-claim CDI specs give them. What each GPU got is read from inside: slice.conf's per-device
# lines and, per CUDA device, the total cuMemGetInfo shows and an allocation 64 MiB past it
# (refused: 2, CUDA_ERROR_OUT_OF_MEMORY).
#   1. GPU 0: 1Gi / 30 %, GPU 1: 2Gi / 50 % (the second GPU's hook listed first): each its own.
#   2. the same with a hostile env (per-device and global, ours and HAMi's names): nothing widens;
#      a narrower per-device value is the container's.
#   3. two differing slices of the SAME GPU: the tightest of them (memory, share, priority).
#   4. only GPU 1 in the container: its limits at the container's device 0.
#   5. a hook naming a GPU the container lacks: the start fails.
#   6. as CDI gives the GPUs (NVIDIA_VISIBLE_DEVICES=void, the nodes in linux.devices): the
#      visible order from the nodes.
#   7. a MIG device (the simulated 8gpu-mig root), selected or as CDI gives it: a slice hook of
#      the MIG device (--gpu=MIG-...) puts its quota on it, the container's one CUDA device.
. "$(dirname "$0")/lib.sh"
. "$SRC/tests/integration/bundle.sh"

runc_prereqs "$GS" "$VGPU_LIB" "$PROBE"
LOG=$TMP/hook.log
runc_setup slicegpus "$LOG"
trap 'runc_cleanup; rm -rf "$TMP"' EXIT

env_json() { printf '%s\n' "$@" | jq -R . | jq -cs .; }
U0=$GPU0_UUID U1=$GPU1_UUID

# gpus_case NAME HOOKS(json array of option arrays, one hook each) ENV...: a bundle whose
# createRuntime hooks are `gpuslice hook --config $CONF OPTIONS createRuntime`, one per option array.
gpus_case() {
        local name=$1 hooks=$2; shift 2
        make_bundle "$name" '.process.env += $env
                | .hooks = {createRuntime: [$hooks[] | {path: $gs, args: (["gpuslice", "--root", $drv, "hook",
                        "--config", $conf] + . + ["createRuntime"]), env: $hookenv}],
                    poststop: [{path: $gs, args: ["gpuslice", "hook", "--config", $conf, "poststop"], env: $hookenv}]}' \
                --argjson env "$(env_json PROBE_TOTALS=1 "$@")" --argjson hooks "$hooks"
        run_bundle "$name"
}
# gpu NAME INDEX UUID MIB DESC: CUDA device INDEX is UUID, shows MIB MiB and refuses past it
gpu() {
        local n=$1 i=$2 u=$3 mib=$4 d=$5
        expect_fact "$n" "PROBE_T dev $i $u total $mib" "$d: CUDA device $i ($u) shows $mib MiB"
        expect_fact "$n" "PROBE_T dev $i over 2" "$d: ... and refuses an allocation past it (out of memory)"
}
# each NAME DESC: GPU 0 1Gi / 30 %, GPU 1 2Gi / 50 %
each() {
        local n=$1 d=$2
        expect_done "$n" "$d"
        expect_fact "$n" "SLICE GPUSLICE_MEMORY_LIMIT_0=1Gi" "$d: slice.conf: GPU 0's memory is its claim's 1Gi"
        expect_fact "$n" "SLICE GPUSLICE_MEMORY_LIMIT_1=2Gi" "$d: slice.conf: GPU 1's memory is its claim's 2Gi"
        expect_fact "$n" "SLICE GPUSLICE_COMPUTE_LIMIT_0=30" "$d: slice.conf: GPU 0's share is 30 %"
        expect_fact "$n" "SLICE GPUSLICE_COMPUTE_LIMIT_1=50" "$d: slice.conf: GPU 1's share is 50 %"
        gpu "$n" 0 "$U0" 1024 "$d"
        gpu "$n" 1 "$U1" 2048 "$d"
}

TWO='[["--gpu='$U1'", "--memory=2Gi", "--compute-share=50"], ["--gpu='$U0'", "--memory=1Gi", "--compute-share=30"]]'

# 1. each GPU its own claim's limits
gpus_case two "$TWO" NVIDIA_VISIBLE_DEVICES=0,1
each two "two slice hooks, GPU 0 1Gi/30 % and GPU 1 2Gi/50 %"

# 2. the env tries to raise one GPU's limit (and all of them): nothing changes
gpus_case hostile "$TWO" NVIDIA_VISIBLE_DEVICES=0,1 GPUSLICE_MEMORY_LIMIT_0=8Gi CUDA_DEVICE_MEMORY_LIMIT_0=8Gi \
        GPUSLICE_MEMORY_LIMIT=70Gi CUDA_DEVICE_MEMORY_LIMIT=70Gi GPUSLICE_COMPUTE_LIMIT_0=100 CUDA_DEVICE_SM_LIMIT_1=100 \
        GPUSLICE_COMPUTE_MODE=off GPUSLICE_PRIORITY=high
each hostile "env GPUSLICE_MEMORY_LIMIT_0=8Gi (and HAMi's), _LIMIT=70Gi, COMPUTE_LIMIT_0=100, SM_LIMIT_1=100, off, high"
grep -q "ignored GPUSLICE_MEMORY_LIMIT" "$LOG" && ok "... the hook's log names what the env asked and did not get" ||
        not_ok "... hook log: $(grep -i ignored "$LOG" | tail -2)"
gpus_case narrow "$TWO" NVIDIA_VISIBLE_DEVICES=0,1 GPUSLICE_MEMORY_LIMIT_1=512Mi
expect_done narrow "env GPUSLICE_MEMORY_LIMIT_1=512Mi (narrower than GPU 1's 2Gi)"
gpu narrow 0 "$U0" 1024 "... GPU 0 keeps its 1Gi"
gpu narrow 1 "$U1" 512 "... GPU 1 takes the narrower 512Mi"

# 3. two differing slices of one GPU: the tightest
gpus_case same '[["--gpu='$U0'", "--memory=2Gi", "--compute-share=30", "--priority=high"],
        ["--gpu='$U0'", "--memory=1Gi", "--compute-share=50"]]' NVIDIA_VISIBLE_DEVICES=0
expect_done same "two slice hooks of GPU 0 (2Gi/30 %/high and 1Gi/50 %)"
expect_fact same "SLICE GPUSLICE_COMPUTE_LIMIT=30" "... the smaller share (30 %)"
expect_fact same "SLICE GPUSLICE_PRIORITY=normal" "... the lower priority (normal)"
gpu same 0 "$U0" 1024 "... the smaller memory"

# 4. GPU 1 alone: the container's device 0
gpus_case one '[["--gpu='$U1'", "--memory=2Gi"]]' NVIDIA_VISIBLE_DEVICES=1
expect_done one "a slice hook of GPU 1, the container has GPU 1 only"
gpu one 0 "$U1" 2048 "... GPU 1 is the container's device 0"

# 6 (here: before 5). As CDI gives the GPUs (NVIDIA_VISIBLE_DEVICES=void, the device nodes in
# config.json's linux.devices; the hook mounts no driver, so only slice.conf is read): GPU 1's
# node alone gives GPU 1 index 0; both nodes, each its own index.
NODES='[{path: "/dev/nvidia2", type: "c", major: 1, minor: 3, fileMode: 438, uid: 0, gid: 0}]'
gpus_cdi() { # NAME NODES HOOKS [ENV...]: (the driver's libcuda bind-mounted, as a CDI spec's mounts give it)
        local name=$1 nodes=$2 hooks=$3; shift 3
        make_bundle "$name" '.process.env += ["NVIDIA_VISIBLE_DEVICES=void"] + $env | .linux.devices = ((.linux.devices // []) + '"$nodes"')
                | .mounts += [{destination: "'"$LIBDIR"'/libcuda.so.1", source: ($drv + "'"$LIBDIR"'/libcuda.so.1"),
                        type: "bind", options: ["rbind", "ro"]}]
                | .hooks = {createRuntime: [$hooks[] | {path: $gs, args: (["gpuslice", "--root", $drv, "hook",
                        "--config", $conf] + . + ["createRuntime"]), env: $hookenv}],
                    poststop: [{path: $gs, args: ["gpuslice", "hook", "--config", $conf, "poststop"], env: $hookenv}]}' \
                --argjson hooks "$hooks" --argjson env "$(env_json PROBE_TOTALS=1 "$@")"
        run_bundle "$name"
}
gpus_cdi cdi-one "$NODES" '[["--gpu='$U1'", "--memory=2Gi"]]'
expect_done cdi-one "CDI-style container of GPU 1's node (minor 2), its slice hook's 2Gi"
expect_fact cdi-one "SLICE GPUSLICE_MEMORY_LIMIT=2Gi" "... GPU 1, the container's only GPU, has its 2Gi"
gpus_cdi cdi-two '[{path: "/dev/nvidia0", type: "c", major: 1, minor: 3, fileMode: 438, uid: 0, gid: 0},
        {path: "/dev/nvidia2", type: "c", major: 1, minor: 3, fileMode: 438, uid: 0, gid: 0}]' "$TWO"
expect_done cdi-two "CDI-style container of both GPUs' nodes, two slice hooks"
expect_fact cdi-two "SLICE GPUSLICE_MEMORY_LIMIT_0=1Gi" "... GPU 0 (minor 0) is index 0: its 1Gi"
expect_fact cdi-two "SLICE GPUSLICE_MEMORY_LIMIT_1=2Gi" "... GPU 1 (minor 2) is index 1: its 2Gi"
# Each hook walks the container's GPUs once: its per-GPU slice's walk names the slice's GPUs too
# (src/runtime/hook.c; walked twice, the procfs path read the driver root's /proc/driver/nvidia
# twice per hook). The hook's log says each read ("devices from ..."), with the hook's pid.
reads=$(awk -v c="container gs-$$-cdi-two:" '/procfs\.c:.*devices from/ { n[$3]++ } index($0, c) { h[$3] = 1 }
        END { for (p in h) print n[p] + 0 }' "$LOG" | sort | tr '\n' ' ')
[ "$reads" = "1 1 " ] && ok "... each of its two hooks read the host's GPUs once" ||
        not_ok "... each of its two hooks read the host's GPUs once: reads per hook: ${reads:-none logged}"
# the app's CUDA_VISIBLE_DEVICES reorders the GPUs: each keeps its own quota (the slice names its
# GPUs by UUID: GPUSLICE_DEVICES), never the other's (GPU 0 would get GPU 1's 2Gi)
BOTH='[{path: "/dev/nvidia0", type: "c", major: 1, minor: 3, fileMode: 438, uid: 0, gid: 0},
        {path: "/dev/nvidia2", type: "c", major: 1, minor: 3, fileMode: 438, uid: 0, gid: 0}]'
for c in cdi-reorder:void run-reorder:0,1; do
        n=${c%%:*}
        if [ "${c#*:}" = void ]; then gpus_cdi "$n" "$BOTH" "$TWO" CUDA_VISIBLE_DEVICES=1,0
        else gpus_case "$n" "$TWO" NVIDIA_VISIBLE_DEVICES=0,1 CUDA_VISIBLE_DEVICES=1,0; fi
        expect_done "$n" "$n: two slice hooks, the container's env CUDA_VISIBLE_DEVICES=1,0"
        expect_fact_re "$n" "^PROBE_T dev [01] $U0 total 1024\$" "$n: ... GPU 0 keeps its 1Gi, whatever its number"
        expect_fact_re "$n" "^PROBE_T dev [01] $U1 total 2048\$" "$n: ... GPU 1 keeps its 2Gi"
done
gpus_cdi cdi-missing "$NODES" "$TWO"
[ "$(rc_of cdi-missing)" != 0 ] && grep -q "which the container does not have" "$TMP/cdi-missing.err" &&
        ok "... GPU 1's node alone with a slice hook of GPU 0 too: the start fails" ||
        not_ok "cdi-missing: exit $(rc_of cdi-missing): $(grep -m3 -i error "$TMP/cdi-missing.err" | tr '\n' ' ')"

# 5. a GPU the container does not have
gpus_case missing '[["--gpu='$U1'", "--memory=2Gi"]]' NVIDIA_VISIBLE_DEVICES=0
[ "$(rc_of missing)" != 0 ] && ! grep -qx DONE "$TMP/missing.out" && grep -q "which the container does not have" "$TMP/missing.err" &&
        ok "a slice hook naming GPU 1 in a container of GPU 0: the start fails, naming it" ||
        not_ok "missing GPU: exit $(rc_of missing): $(grep -m3 -i error "$TMP/missing.err" | tr '\n' ' ')"

# 7. a MIG device (the simulated 8-GPU root, GPU 2 in MIG mode): a slice hook of the MIG device
# (--gpu=MIG-...), the MIG device selected by its UUID (NVIDIA_VISIBLE_DEVICES) or, as CDI gives
# it, by its nodes (the parent's /dev/nvidia2 and its CI's access node; the fake driver then shows
# the container that MIG device alone, as the real one: FAKEGPU_DEVICE_NODES=1): the MIG device is
# the container's device 0, at its hook's quota (the interposer knows it by its MIG UUID)
DRV=$(mkroot mig 8gpu-mig.conf)
CONF=$TMP/hook-mig.toml
hook_config "$CONF" "$DRV" "$SLICES" "$LOG"
M2=MIG-d41f6a2c-8e3b-5b9d-a07e-6c2f4a1e8d53 # GPU 2's MIG device 2: GI 9, CI 0, 9856 MiB
MIGHOOK='[["--gpu='$M2'", "--memory=4Gi", "--compute-share=30"]]'
gpus_case mig-sel "$MIGHOOK" NVIDIA_VISIBLE_DEVICES=$M2
expect_done mig-sel "a slice hook of MIG device $M2, the container's NVIDIA_VISIBLE_DEVICES=$M2"
expect_fact mig-sel "SLICE GPUSLICE_DEVICES=$M2" "... slice.conf names the MIG device by its MIG UUID (the interposer's device)"
expect_fact mig-sel "SLICE GPUSLICE_MEMORY_LIMIT=4Gi" "... its 4Gi"
gpu mig-sel 0 "GPU-${M2#MIG-}" 4096 "... the MIG device"
expect_no_fact mig-sel "PROBE_T dev 1 over 2" "... the container shows no other CUDA device"
MIGNODES='[{path: "/dev/nvidia2", type: "c", major: 1, minor: 3, fileMode: 438, uid: 0, gid: 0},
        {path: "/dev/nvidia-caps/nvidia-cap354", type: "c", major: 1, minor: 3, fileMode: 438, uid: 0, gid: 0},
        {path: "/dev/nvidia-caps/nvidia-cap355", type: "c", major: 1, minor: 3, fileMode: 438, uid: 0, gid: 0}]'
gpus_cdi mig-cdi "$MIGNODES" "$MIGHOOK" FAKEGPU_DEVICE_NODES=1
expect_done mig-cdi "CDI-style container of MIG device $M2's nodes (its GI's and CI's nvidia-cap354, 355), its slice hook"
expect_fact mig-cdi "SLICE GPUSLICE_MEMORY_LIMIT=4Gi" "... its 4Gi"
gpu mig-cdi 0 "GPU-${M2#MIG-}" 4096 "... the MIG device, its one CUDA device"
finish
