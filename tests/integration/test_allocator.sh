#!/usr/bin/env bash
# The allocator's word is the slice's ceiling (issue 31, finding 1; runtime/slice_rules.h): real
# containers on the simulated GPU whose env (the image's ENV, the pod's, podman -e) tries to widen
# the slice it was given, through every name: a per-device memory limit (ours, HAMi's), a larger
# global one, a compute share of 100, mode off / share (HAMi's disable), priority high (HAMi's 0).
#   1. runc, `gpuslice hook --memory=1Gi --compute-share=30 createRuntime` (the allocator's options,
#      as a CDI slice device's hook carries them) with a hostile config.json env: 1024 MiB, cap 30,
#      normal; privileged too; a narrower env is the container's.
#   2. runc, a plain hook (no allocator: hooks.d, docker --gpus -e): the tightest env value wins;
#      mode off and priority high only with [slice] env-may-raise or in a privileged container.
#   3. podman with a CDI spec from `gpuslice cdi generate --slice 1g=1Gi --slice c30=1Gi,30`, each
#      name tried with -e; two slice devices in one container: one slice when they agree, never
#      the wider when they differ (refused, where their hooks' slices differ).
# What the container got is read from inside: its slice file and the quota a CUDA program sees.
. "$(dirname "$0")/lib.sh"
. "$SRC/tests/integration/bundle.sh"

runc_prereqs "$GS" "$VGPU_LIB" "$PROBE"

LOG=$TMP/hook.log
runc_setup alloc "$LOG"
RAISE=$TMP/raise.toml
hook_config "$RAISE" "$DRV" "$SLICES" "$LOG"
printf 'env-may-raise = true\n' >>"$RAISE"
CDI_SPEC=
cleanup() {
        runc_cleanup
        [ -n "$CDI_SPEC" ] && rm -f "$CDI_SPEC"
        rm -rf "$TMP"
}
trap cleanup EXIT

env_json() { printf '%s\n' "$@" | jq -R . | jq -cs .; }
ALL_CAPS='["CAP_CHOWN","CAP_DAC_OVERRIDE","CAP_FSETID","CAP_FOWNER","CAP_MKNOD","CAP_NET_RAW","CAP_SETGID","CAP_SETUID","CAP_SETFCAP","CAP_SETPCAP","CAP_NET_BIND_SERVICE","CAP_SYS_CHROOT","CAP_KILL","CAP_AUDIT_WRITE","CAP_SYS_ADMIN"]'

# hook_case NAME CONF PRIVILEGED HOOK-OPTIONS(json array) ENV...: a bundle whose createRuntime
# hook is `gpuslice hook --config CONF OPTIONS createRuntime`, with ENV in config.json; run it.
hook_case() {
        local name=$1 conf=$2 priv=$3 opts=$4; shift 4
        local filter='.process.env += $env
                | .hooks = {createRuntime: [{path: $gs, args: (["gpuslice", "--root", $drv, "hook", "--config", $c]
                        + $opts + ["createRuntime"]), env: $hookenv}],
                    poststop: [{path: $gs, args: ["gpuslice", "hook", "--config", $c, "poststop"], env: $hookenv}]}'
        [ "$priv" = yes ] && filter="$filter | .process.capabilities |= with_entries(.value = \$all)"
        make_bundle "$name" "$filter" --argjson env "$(env_json "$@")" --arg c "$conf" --argjson opts "$opts" \
                --argjson all "$ALL_CAPS"
        run_bundle "$name"
}
# no_line NAME PREFIX DESC: the container printed no line starting with PREFIX
no_line() {
        if grep -q -- "^$2" "$TMP/$1.out"; then not_ok "$3: $(grep -- "^$2" "$TMP/$1.out" | head -2 | tr '\n' ' ')"
        else ok "$3"; fi
}
# quota NAME MIB DESC: the interposer's view in the container is MIB MiB
quota() {
        expect_fact "$1" "PROBE_M ok total is the quota ($2 MiB)" "$3: cuMemGetInfo total = $2 MiB"
}
# held NAME DESC: 1 GiB, cap 30 %, normal priority (the allocator's word), whatever the env said
held() {
        local n=$1 d=$2
        expect_done "$n" "$d"
        expect_fact "$n" "SLICE GPUSLICE_MEMORY_LIMIT=1Gi" "$d: slice.conf holds the allocator's 1Gi"
        no_line "$n" "SLICE GPUSLICE_MEMORY_LIMIT_" "$d: ... and no per-device memory limit above it"
        expect_fact "$n" "SLICE GPUSLICE_COMPUTE_LIMIT=30" "$d: slice.conf holds the allocator's 30 %"
        no_line "$n" "SLICE GPUSLICE_COMPUTE_LIMIT_" "$d: ... and no per-device share above it"
        no_line "$n" "SLICE GPUSLICE_COMPUTE_MODE=\(off\|share\)" "$d: the mode stays cap"
        no_line "$n" "SLICE GPUSLICE_PRIORITY=high" "$d: the priority stays normal"
        quota "$n" 1024 "$d"
}

G0=NVIDIA_VISIBLE_DEVICES=0
ALLOC='["--memory=1Gi", "--compute-share=30"]'

# ---------------------------------------------------------------------------------------------
# 1. The allocator's options on the hook's command line; the image's / pod's env tries to widen.
hook_case a-ours "$CONF" no "$ALLOC" $G0 EXPECT_TOTAL_MIB=1024 GPUSLICE_MEMORY_LIMIT_0=4Gi GPUSLICE_MEMORY_LIMIT=70Gi \
        GPUSLICE_COMPUTE_LIMIT_0=100 GPUSLICE_COMPUTE_MODE=off GPUSLICE_PRIORITY=high
held a-ours "hook --memory=1Gi --compute-share=30, env GPUSLICE_MEMORY_LIMIT_0=4Gi _LIMIT=70Gi COMPUTE_LIMIT_0=100 MODE=off PRIORITY=high"
grep -q "ignored GPUSLICE_MEMORY_LIMIT=70Gi" "$LOG" && grep -q "GPUSLICE_COMPUTE_MODE=off (wider than the allocator's mode)" "$LOG" &&
        ok "... the hook's log names what the env asked and did not get" || not_ok "... hook log: $(grep -i ignored "$LOG" | tail -2)"
hook_case a-hami "$CONF" no "$ALLOC" $G0 EXPECT_TOTAL_MIB=1024 CUDA_DEVICE_MEMORY_LIMIT_0=8Gi CUDA_DEVICE_MEMORY_LIMIT=8Gi \
        CUDA_DEVICE_SM_LIMIT=100 GPU_CORE_UTILIZATION_POLICY=disable CUDA_TASK_PRIORITY=0
held a-hami "hook --memory=1Gi --compute-share=30, HAMi's names asking 8Gi, 100 %, disable, priority 0"
hook_case a-share "$CONF" no "$ALLOC" $G0 EXPECT_TOTAL_MIB=1024 GPUSLICE_COMPUTE_MODE=share CUDA_DEVICE_SM_LIMIT_0=90
held a-share "hook --memory=1Gi --compute-share=30, env GPUSLICE_COMPUTE_MODE=share CUDA_DEVICE_SM_LIMIT_0=90"
expect_fact a-share "SLICE GPUSLICE_COMPUTE_MODE=cap" "... mode share asked over the allocator's cap: cap"
hook_case a-priv "$CONF" yes "$ALLOC" $G0 EXPECT_TOTAL_MIB=1024 GPUSLICE_MEMORY_LIMIT_0=4Gi GPUSLICE_COMPUTE_MODE=off \
        GPUSLICE_PRIORITY=high
held a-priv "a privileged container, hook --memory=1Gi --compute-share=30, env asking 4Gi, off, high"
hook_case a-raise "$RAISE" no "$ALLOC" $G0 EXPECT_TOTAL_MIB=1024 GPUSLICE_MEMORY_LIMIT_0=4Gi GPUSLICE_COMPUTE_MODE=off \
        CUDA_TASK_PRIORITY=0
held a-raise "slice.env-may-raise = true, hook --memory=1Gi --compute-share=30, env asking 4Gi, off, 0"
# narrower is the container's own choice
hook_case a-lower "$CONF" no '["--memory=1Gi", "--compute-share=30", "--compute-mode=share", "--priority=high"]' $G0 \
        EXPECT_TOTAL_MIB=512 GPUSLICE_MEMORY_LIMIT_0=512Mi GPUSLICE_COMPUTE_LIMIT=20 GPU_CORE_UTILIZATION_POLICY=force \
        CUDA_TASK_PRIORITY=2
expect_done a-lower "hook --memory=1Gi --compute-share=30 --compute-mode=share --priority=high, env narrower"
expect_fact a-lower "SLICE GPUSLICE_MEMORY_LIMIT_0=512Mi" "... a smaller per-device memory limit from the env is taken"
expect_fact a-lower "SLICE GPUSLICE_COMPUTE_LIMIT=20" "... a smaller compute share from the env is taken"
expect_fact a-lower "SLICE GPUSLICE_COMPUTE_MODE=cap" "... cap (HAMi's force) under the allocator's share is taken"
expect_fact a-lower "SLICE GPUSLICE_PRIORITY=low" "... a lower priority (CUDA_TASK_PRIORITY=2) is taken"
quota a-lower 512 "... the narrower slice"
# the allocator's options are checked as configure's: a bad one fails the start
hook_case a-bad "$CONF" no '["--memory=4GB"]' $G0
[ "$(rc_of a-bad)" != 0 ] && grep -q "invalid --memory: 4GB" "$TMP/a-bad.err" "$TMP/a-bad.out" &&
        ok "hook --memory=4GB: the start fails naming the option" || not_ok "hook --memory=4GB: exit $(rc_of a-bad): $(tail -2 "$TMP/a-bad.err")"

# ---------------------------------------------------------------------------------------------
# 2. No allocator (a plain hook): the tightest env value of all names; no raising without leave.
hook_case p-env "$CONF" no '[]' $G0 EXPECT_TOTAL_MIB=1024 GPUSLICE_MEMORY_LIMIT=1Gi GPUSLICE_MEMORY_LIMIT_0=8Gi \
        CUDA_DEVICE_MEMORY_LIMIT_0=8Gi GPUSLICE_COMPUTE_LIMIT=30 GPUSLICE_COMPUTE_LIMIT_0=100 GPUSLICE_COMPUTE_MODE=off \
        GPUSLICE_PRIORITY=high
held p-env "plain hook, env 1Gi / 30 % with per-device 8Gi, 100 %, mode off, priority high"
hook_case p-hami "$CONF" no '[]' $G0 EXPECT_TOTAL_MIB=1024 GPUSLICE_MEMORY_LIMIT=4Gi CUDA_DEVICE_MEMORY_LIMIT=1Gi \
        CUDA_DEVICE_SM_LIMIT=30 GPU_CORE_UTILIZATION_POLICY=disable CUDA_TASK_PRIORITY=0
expect_done p-hami "plain hook, GPUSLICE_MEMORY_LIMIT=4Gi beside HAMi's 1Gi, disable, priority 0"
expect_fact p-hami "SLICE GPUSLICE_MEMORY_LIMIT=1Gi" "... the tighter of our name and HAMi's (1Gi)"
no_line p-hami "SLICE GPUSLICE_COMPUTE_MODE=off" "... HAMi's disable is not taken unprivileged"
no_line p-hami "SLICE GPUSLICE_PRIORITY=high" "... HAMi's priority 0 is not taken unprivileged"
quota p-hami 1024 "... the tighter quota"
hook_case p-raise "$RAISE" no '[]' $G0 GPUSLICE_MEMORY_LIMIT=1Gi GPUSLICE_COMPUTE_LIMIT=30 GPUSLICE_COMPUTE_MODE=off \
        GPUSLICE_PRIORITY=high
expect_fact p-raise "SLICE GPUSLICE_COMPUTE_MODE=off" "plain hook, slice.env-may-raise = true: mode off is the env's"
expect_fact p-raise "SLICE GPUSLICE_PRIORITY=high" "... and so is priority high"
hook_case p-priv "$CONF" yes '[]' $G0 GPUSLICE_MEMORY_LIMIT=1Gi GPUSLICE_COMPUTE_LIMIT=30 GPU_CORE_UTILIZATION_POLICY=disable \
        CUDA_TASK_PRIORITY=0
expect_fact p-priv "SLICE GPUSLICE_COMPUTE_MODE=off" "plain hook, a privileged container: HAMi's disable is taken"
expect_fact p-priv "SLICE GPUSLICE_PRIORITY=high" "... and HAMi's priority 0"

# ---------------------------------------------------------------------------------------------
# 3. podman with CDI slice devices (the spec's hook args are the allocator's word).
PODMAN=$(command -v podman || true)
[ -n "$PODMAN" ] || { not_ok "podman is not installed (make test-deps)"; finish; }
VENDOR=alloc-$$.gpuslice.io
[ -d /var/run/cdi ] || mkdir -p /var/run/cdi
CDI_SPEC=/var/run/cdi/gpuslice-alloc-$$.json
run gen -- "$GS" --root "$DRV" cdi generate --vendor "$VENDOR" --slice 1g=1Gi --slice c30=1Gi,30 --slice hi=1Gi,30,high -o "$CDI_SPEC"
expect_rc gen 0 "cdi generate --slice 1g=1Gi --slice c30=1Gi,30 --slice hi=1Gi,30,high"
jq -e '[.devices[] | select(.name == "0-c30") | .containerEdits.hooks[] | select(.hookName == "createRuntime") | .args]
        == [["gpuslice-hook", "--memory=1Gi", "--compute-share=30", "createRuntime"]]' "$CDI_SPEC" >/dev/null &&
        ok "... the slice device's createRuntime hook carries its limits as options" ||
        not_ok "... hook args: $(jq -c '[.devices[] | select(.name == "0-c30") | .containerEdits.hooks]' "$CDI_SPEC")"
if sanitized; then
        jq '(.. | objects | select(has("hookName")) | .env) |= (. + ["ASAN_OPTIONS=detect_leaks=0"])' "$CDI_SPEC" \
                >"$CDI_SPEC.tmp" && mv "$CDI_SPEC.tmp" "$CDI_SPEC"
fi
# The hooks of the spec read the host config at its default path: give them the test's regions
# directory through GPUSLICE_CONFIG? No: `gpuslice hook` reads /etc/gpuslice/config.toml, so the
# slices of this part go to the default regions directory, as test_cdi.sh's do.
pod_case() { # NAME DEVICE -e ...
        local name=$1 dev=$2; shift 2
        rm -rf "$TMP/$name"; mkdir -p "$TMP/$name"
        make_rootfs "$TMP/$name/rootfs"
        run "$name" -- timeout 180 "$PODMAN" --root "$TMP/podman-root" --runroot "$TMP/podman-run" --tmpdir "$TMP/podman-tmp" \
                --cgroup-manager=cgroupfs --events-backend=file --runtime "$RUNC" \
                run --rm --network=none --ulimit nofile=20000:20000 --ulimit nproc=4096:4096 \
                --device "$VENDOR/gpu=$dev" "$@" --rootfs "$TMP/$name/rootfs" /bin/sh /check.sh </dev/null
}
pod_case c-ours 0-1g -e EXPECT_TOTAL_MIB=1024 -e GPUSLICE_MEMORY_LIMIT_0=4Gi
expect_done c-ours "podman 0-1g -e GPUSLICE_MEMORY_LIMIT_0=4Gi"
expect_fact c-ours "SLICE GPUSLICE_MEMORY_LIMIT=1Gi" "... slice.conf holds 1Gi"
no_line c-ours "SLICE GPUSLICE_MEMORY_LIMIT_" "... no per-device limit above it"
quota c-ours 1024 "podman 0-1g -e GPUSLICE_MEMORY_LIMIT_0=4Gi"
pod_case c-hami 0-1g -e EXPECT_TOTAL_MIB=1024 -e CUDA_DEVICE_MEMORY_LIMIT_0=8Gi -e CUDA_DEVICE_MEMORY_LIMIT=8Gi
expect_done c-hami "podman 0-1g -e CUDA_DEVICE_MEMORY_LIMIT_0=8Gi"
no_line c-hami "SLICE GPUSLICE_MEMORY_LIMIT_" "... no per-device limit above 1Gi"
quota c-hami 1024 "podman 0-1g -e CUDA_DEVICE_MEMORY_LIMIT_0=8Gi"
for e in GPUSLICE_COMPUTE_MODE=off GPU_CORE_UTILIZATION_POLICY=disable GPUSLICE_COMPUTE_MODE=share GPUSLICE_COMPUTE_LIMIT_0=100 \
        GPUSLICE_PRIORITY=high CUDA_TASK_PRIORITY=0; do
        n=c-${e%%=*}-${e#*=}
        pod_case "$n" 0-c30 -e EXPECT_TOTAL_MIB=1024 -e "$e"
        held "$n" "podman 0-c30 -e $e"
done
# One slice per container: its first slice hook makes it for every GPU. Two slice devices that
# agree (a share of each GPU) make one; two that differ (two slice resources) are refused, never
# the wider one on both GPUs (whichever hook ran first).
pod_case c-two 0-c30 --device "$VENDOR/gpu=1-c30" -e EXPECT_TOTAL_MIB=1024
expect_done c-two "podman 0-c30 and 1-c30 (two slice devices that agree)"
expect_fact c-two "SLICE GPUSLICE_COMPUTE_LIMIT=30" "... one slice of 1Gi / 30 % on both GPUs"
# (the first slice hook that runs is the first device's: hi's, priority high, which its env edit
# also gives the c30 device's hook, whose allocator says normal)
pod_case c-differ 0-hi --device "$VENDOR/gpu=1-c30" -e EXPECT_TOTAL_MIB=1024
if [ "$(rc_of c-differ)" != 0 ]; then
        ! grep -qx DONE "$TMP/c-differ.out" && grep -q "one slice per container" "$TMP/c-differ.err" &&
                ok "podman 0-hi and 1-c30 (two slice devices that differ): refused, naming the rule" ||
                not_ok "podman 0-hi and 1-c30: exit $(rc_of c-differ): $(grep -m3 -i "error" "$TMP/c-differ.err" | tr '\n' ' ')"
else
        no_line c-differ "SLICE GPUSLICE_PRIORITY=high" "podman 0-hi and 1-c30: never the wider slice (high on GPU 1's normal share)"
fi
pod_case c-lower 0-c30 -e EXPECT_TOTAL_MIB=512 -e GPUSLICE_MEMORY_LIMIT_0=512Mi -e CUDA_TASK_PRIORITY=2
expect_done c-lower "podman 0-c30 -e GPUSLICE_MEMORY_LIMIT_0=512Mi -e CUDA_TASK_PRIORITY=2"
expect_fact c-lower "SLICE GPUSLICE_PRIORITY=low" "... a lower priority is the container's"
quota c-lower 512 "... a smaller quota is the container's"
finish
