#!/usr/bin/env bash
# `gpuslice hook` as the real runc (1.1) runs it: bundles whose config.json hooks call
# `gpuslice --root DRV hook --config CONF prestart|createRuntime|poststop` directly (each with an
# explicit "env", as every hook we ship or generate has), the container's request in process.env
# (the NVIDIA contract and the slice variables), and the container's own view checked from inside
# (bundle.sh's /check.sh). Then the CVE-2025-23266 ("NVIDIAScape") regression test: an image whose
# environment preloads a library from its own rootfs and poisons PATH must never get code into a
# hook, with a negative control showing the attack works against a hook that has no "env".
. "$(dirname "$0")/lib.sh"
. "$SRC/tests/integration/bundle.sh"

# runc and jq come with `make test-deps`: without them the test fails (not a skip).
runc_prereqs "$GS" "$VGPU_LIB" "$PROBE" "$POC"

runc_setup hook
cleanup() {
        runc_cleanup
        [ -d "$TMP/mps" ] && "$GS" --root "$DRV" mps stop --mps-root "$TMP/mps" >/dev/null 2>&1
        rm -rf "$TMP"
}
trap cleanup EXIT

# env_json VAR=VALUE...: a JSON array of strings
env_json() { printf '%s\n' "$@" | jq -R . | jq -cs .; }
# jq filters for make_bundle: our hooks, as we ship them (explicit env).
H_PRESTART='{path: $gs, args: ["gpuslice", "--root", $drv, "hook", "--config", $conf, "prestart"], env: $hookenv}'
H_CREATERT='{path: $gs, args: ["gpuslice", "--root", $drv, "hook", "--config", $conf, "createRuntime"], env: $hookenv}'
H_POSTSTOP='{path: $gs, args: ["gpuslice", "hook", "--config", $conf, "poststop"], env: $hookenv}'
# an observer run after ours: what the regions directory holds while the container is created
H_OBSERVE='{path: "/bin/sh", args: ["sh", "-c", "ls -A \"$0\" >\"$1/slices.during\"; cat \"$0\"/*/owner >>\"$1/slices.during\"", ($tmp + "/slices"), $bundle], env: $hookenv}'

# gpu_case NAME ENV...: a bundle with our prestart + poststop hooks and that env; run it.
gpu_case() {
        local name=$1; shift 1
        make_bundle "$name" '.process.env += $env | .hooks = {prestart: ['"$H_PRESTART"'], poststop: ['"$H_POSTSTOP"']}' \
                --argjson env "$(env_json "$@")"
        run_bundle "$name"
}
no_container_left() { # NAME DESC
        local left d; left=$("$RUNC" --root "$STATE" list -q 2>&1)
        if [ -z "$left" ]; then ok "$2: runc list is empty"; else not_ok "$2: runc list shows: $left"; fi
        for d in /sys/fs/cgroup/*/"$CG-$1"; do
                [ -d "$d" ] && { not_ok "$2: the cgroup $d is left"; return; }
        done
        ok "$2: its cgroups are gone"
}
no_slice_dirs() { # DESC
        local left; left=$(ls -A "$SLICES" 2>/dev/null)
        if [ -z "$left" ]; then ok "$1: no slice directory in the regions dir"; else not_ok "$1: slice directories left: $left"; fi
}
expect_fail() { # NAME MESSAGE DESC: runc run failed with gpuslice's message, the process never ran
        if [ "$(rc_of "$1")" != 0 ]; then ok "$3: runc run fails (exit $(rc_of "$1"))"; else not_ok "$3: runc run succeeded"; fi
        cat "$TMP/$1.out" >>"$TMP/$1.err"
        expect_err "$1" "$2" "$3: runc's error carries gpuslice's message"
        if grep -q "^DONE\|^HAS \|^NO " "$TMP/$1.err"; then not_ok "$3: the container's process ran"; else ok "$3: the container's process never ran"; fi
}

# 1. NVIDIA_VISIBLE_DEVICES=0, default capabilities (utility, compute).
gpu_case dev0 NVIDIA_VISIBLE_DEVICES=0
expect_done dev0 "NVIDIA_VISIBLE_DEVICES=0"
expect_gpu0 dev0 "NVIDIA_VISIBLE_DEVICES=0"
expect_fact dev0 "HAS /dev/nvidia-uvm" "NVIDIA_VISIBLE_DEVICES=0: /dev/nvidia-uvm (compute)"
expect_no_slice dev0 "NVIDIA_VISIBLE_DEVICES=0 (no slice asked)"
no_container_left dev0 "NVIDIA_VISIBLE_DEVICES=0"

# 2. all
gpu_case all NVIDIA_VISIBLE_DEVICES=all
expect_done all "NVIDIA_VISIBLE_DEVICES=all"
expect_all_gpus all "NVIDIA_VISIBLE_DEVICES=all"

# 3. none: driver files and control nodes, no GPU node
gpu_case none NVIDIA_VISIBLE_DEVICES=none
expect_done none "NVIDIA_VISIBLE_DEVICES=none"
expect_fact none "HAS /dev/nvidiactl" "none: /dev/nvidiactl"
expect_fact none "HAS $LIBDIR/libcuda.so.$DRV_VERSION" "none: libcuda"
expect_fact none "HAS /usr/bin/nvidia-smi" "none: nvidia-smi"
expect_fact none "NO /dev/nvidia0" "none: no /dev/nvidia0"
expect_fact none "NO /dev/nvidia2" "none: no /dev/nvidia2"
expect_fact none "GPUS " "none: no GPU in /proc/driver/nvidia/gpus"

# 4. void and unset: nothing mounted at all
gpu_case void NVIDIA_VISIBLE_DEVICES=void
expect_done void "NVIDIA_VISIBLE_DEVICES=void"
expect_nothing void "NVIDIA_VISIBLE_DEVICES=void"
expect_no_slice void "NVIDIA_VISIBLE_DEVICES=void"
gpu_case unset FOO=bar
expect_done unset "NVIDIA_VISIBLE_DEVICES unset"
expect_nothing unset "NVIDIA_VISIBLE_DEVICES unset"
gpu_case empty NVIDIA_VISIBLE_DEVICES=
expect_done empty "NVIDIA_VISIBLE_DEVICES empty"
expect_nothing empty "NVIDIA_VISIBLE_DEVICES empty"

# 5. the createRuntime stage does the same as prestart
make_bundle crt '.process.env += ["NVIDIA_VISIBLE_DEVICES=0"] | .hooks = {createRuntime: ['"$H_CREATERT"'], poststop: ['"$H_POSTSTOP"']}'
run_bundle crt
expect_done crt "createRuntime hook"
expect_gpu0 crt "createRuntime hook"

# 6. capabilities: utility only (no libcuda), and an unknown one fails the container
gpu_case util NVIDIA_VISIBLE_DEVICES=0 NVIDIA_DRIVER_CAPABILITIES=utility
expect_done util "NVIDIA_DRIVER_CAPABILITIES=utility"
expect_fact util "HAS $LIBDIR/libnvidia-ml.so.$DRV_VERSION" "utility: libnvidia-ml"
expect_fact util "NO $LIBDIR/libcuda.so.$DRV_VERSION" "utility: no libcuda"
expect_fact util "NO /dev/nvidia-uvm" "utility: no /dev/nvidia-uvm"
gpu_case badcap NVIDIA_VISIBLE_DEVICES=0 NVIDIA_DRIVER_CAPABILITIES=compute,bogus
expect_fail badcap "unknown driver capability 'bogus'" "NVIDIA_DRIVER_CAPABILITIES=compute,bogus"
no_container_left badcap "after the capability error"

# 7. requirements: an unsatisfied one fails `runc run` and leaves nothing (with a slice asked
#    too: no slice directory either); NVIDIA_DISABLE_REQUIRE lets the same container start.
make_bundle req '.process.env += $env | .hooks = {prestart: ['"$H_PRESTART"'], poststop: ['"$H_POSTSTOP"']}' \
        --argjson env "$(env_json NVIDIA_VISIBLE_DEVICES=0 'NVIDIA_REQUIRE_CUDA=cuda>=99' GPUSLICE_MEMORY_LIMIT=1Gi)"
files_of "$TMP/req/rootfs" >"$TMP/req.fbefore"
run_bundle req
expect_fail req "unsatisfied condition: cuda>=99" "NVIDIA_REQUIRE_CUDA=cuda>=99"
no_container_left req "after the requirement error"
files_of "$TMP/req/rootfs" >"$TMP/req.fafter"
if diff "$TMP/req.fbefore" "$TMP/req.fafter" >"$TMP/req.fdiff"; then ok "cuda>=99: the rootfs is unchanged"; else
        not_ok "cuda>=99: the rootfs changed: $(head -5 "$TMP/req.fdiff" | tr '\n' ' ')"; fi
no_slice_dirs "cuda>=99"
gpu_case noreq NVIDIA_VISIBLE_DEVICES=0 'NVIDIA_REQUIRE_CUDA=cuda>=99' NVIDIA_DISABLE_REQUIRE=true
expect_done noreq "NVIDIA_DISABLE_REQUIRE=true with cuda>=99"
expect_gpu0 noreq "NVIDIA_DISABLE_REQUIRE=true"
gpu_case reqs NVIDIA_VISIBLE_DEVICES=0 'NVIDIA_REQUIRE_CUDA=cuda>=12.0' 'NVIDIA_REQUIRE_ARCH=arch>=9.0'
expect_fail reqs "unsatisfied condition: arch>=9.0" "NVIDIA_REQUIRE_* are ANDed (cuda>=12.0 holds, arch>=9.0 does not)"

# 8. a legacy image (CUDA_VERSION, no NVIDIA_VISIBLE_DEVICES): every GPU, and cuda>=11.0
gpu_case legacy CUDA_VERSION=11.0.3
expect_done legacy "legacy image (CUDA_VERSION=11.0.3)"
expect_all_gpus legacy "legacy image"
gpu_case legacy99 CUDA_VERSION=99.1
expect_fail legacy99 "unsatisfied condition: cuda>=99.1" "legacy image CUDA_VERSION=99.1 requires cuda>=99.1"

# 9. MIG configuration needs a privileged container (CAP_SYS_ADMIN in the bounding set)
gpu_case mig NVIDIA_VISIBLE_DEVICES=0 NVIDIA_MIG_CONFIG_DEVICES=all
expect_fail mig "cannot set MIG_CONFIG_DEVICES in non privileged container" "NVIDIA_MIG_CONFIG_DEVICES, unprivileged"
no_container_left mig "after the MIG error"
make_bundle migpriv '.process.env += ["NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_MIG_CONFIG_DEVICES=all"]
        | .process.capabilities.bounding += ["CAP_SYS_ADMIN"]
        | .process.args = ["/bin/sh", "-c", "sh /check.sh; ls /dev/nvidia-caps /proc/driver/nvidia/capabilities/mig 2>&1 | sed \"s/^/CAPS /\""]
        | .hooks = {prestart: ['"$H_PRESTART"'], poststop: ['"$H_POSTSTOP"']}'
run_bundle migpriv
expect_done migpriv "NVIDIA_MIG_CONFIG_DEVICES=all, privileged (CAP_SYS_ADMIN in the bounding set)"
expect_fact migpriv "CAPS nvidia-cap1" "privileged MIG config: /dev/nvidia-caps/nvidia-cap1 (the config capability)"

# 10. Slices. A GPU with GPUSLICE_MEMORY_LIMIT=1Gi: the interposer comes in through
#     /etc/ld.so.preload alone (the container has no LD_PRELOAD) and the quota holds; while the
#     container is being created its slice directory exists (an observer hook after ours lists
#     it); after it, the poststop hook has removed it.
make_bundle slice '.process.env += $env
        | .hooks = {prestart: ['"$H_PRESTART"', '"$H_OBSERVE"'], poststop: ['"$H_POSTSTOP"']}' \
        --argjson env "$(env_json NVIDIA_VISIBLE_DEVICES=0 GPUSLICE_MEMORY_LIMIT=1Gi EXPECT_TOTAL_MIB=1024)"
run_bundle slice
expect_done slice "GPUSLICE_MEMORY_LIMIT=1Gi"
expect_gpu0 slice "slice"
expect_slice slice "GPUSLICE_MEMORY_LIMIT=1Gi" 1Gi 1024
expect_fact slice "SLICE GPUSLICE_DEVICES=$GPU0_UUID" "slice: slice.conf names the visible GPU"
expect_fact slice "HAS /run/gpuslice/usage" "slice: the usage region is mounted"
if grep -qx "gs-$$-slice" "$TMP/slice/slices.during" 2>/dev/null; then
        ok "slice: its directory $SLICES/gs-$$-slice existed while the container was created"
else not_ok "slice: no slice directory during creation: $(tr '\n' ' ' <"$TMP/slice/slices.during" 2>&1)"; fi
[ -e "$SLICES/gs-$$-slice" ] && not_ok "slice: the poststop hook left $SLICES/gs-$$-slice" ||
        ok "slice: the poststop hook removed its directory"

# HAMi's variable, and an image that already has an /etc/ld.so.preload line (kept).
make_bundle hami '.process.env += $env | .hooks = {prestart: ['"$H_PRESTART"'], poststop: ['"$H_POSTSTOP"']}' \
        --argjson env "$(env_json NVIDIA_VISIBLE_DEVICES=0 CUDA_DEVICE_MEMORY_LIMIT=768m EXPECT_TOTAL_MIB=768)"
echo "$LIBDIR/libm.so.6" >"$TMP/hami/rootfs/etc/ld.so.preload" # the image's own (harmless) line
run_bundle hami
expect_done hami "CUDA_DEVICE_MEMORY_LIMIT=768m (HAMi)"
expect_slice hami "CUDA_DEVICE_MEMORY_LIMIT=768m" 768m 768
expect_fact hami "PRELOAD $LIBDIR/libm.so.6" "HAMi: the image's own /etc/ld.so.preload line is kept"
[ "$(grep '^PRELOAD ' "$TMP/hami.out" | head -1)" = "PRELOAD $LIBDIR/libm.so.6" ] &&
        ok "HAMi: ... first, then the interposer's" || not_ok "HAMi: preload order: $(grep '^PRELOAD' "$TMP/hami.out" | tr '\n' ' ')"
[ "$(cat "$TMP/hami/rootfs/etc/ld.so.preload")" = "$LIBDIR/libm.so.6" ] &&
        ok "HAMi: the image's own /etc/ld.so.preload file is unchanged on disk" ||
        not_ok "HAMi: the image's /etc/ld.so.preload was modified: $(cat "$TMP/hami/rootfs/etc/ld.so.preload")"

# A slice without a GPU (void): only the slice; nothing of the driver.
gpu_case sliceonly NVIDIA_VISIBLE_DEVICES=void GPUSLICE_MEMORY_LIMIT=1Gi
expect_done sliceonly "void + GPUSLICE_MEMORY_LIMIT"
expect_nothing sliceonly "void + slice"
expect_fact sliceonly "PRELOAD /usr/lib/gpuslice/libgpuslice-vgpu.so" "void + slice: the preload line"
expect_fact sliceonly "SLICE GPUSLICE_MEMORY_LIMIT=1Gi" "void + slice: slice.conf"
expect_fact_re sliceonly "^SLICE_WRITE .*Read-only file system" "void + slice: slice.conf is read-only"
no_slice_dirs "after the slice runs (poststop)"

# A slice directory whose container is gone (here: no poststop hook ran) is swept by the next
# hook run, whatever it is; one whose owner is alive stays.
make_bundle leak '.process.env += ["NVIDIA_VISIBLE_DEVICES=void", "GPUSLICE_MEMORY_LIMIT=1Gi"]
        | .hooks = {prestart: ['"$H_PRESTART"']}'
run_bundle leak
expect_done leak "a slice container without a poststop hook"
[ -f "$SLICES/gs-$$-leak/owner" ] && ok "sweep: its directory is left behind (its owner is dead)" ||
        not_ok "sweep: no leftover directory to sweep: $(ls -A "$SLICES" 2>&1)"
mkdir -p "$SLICES/alive"
echo "$$ $(awk '{ sub(/.*\) /, ""); print $20 }' /proc/$$/stat)" >"$SLICES/alive/owner"
gpu_case sweeper NVIDIA_VISIBLE_DEVICES=void
expect_done sweeper "the next hook run"
[ -e "$SLICES/gs-$$-leak" ] && not_ok "sweep: the next hook run left $SLICES/gs-$$-leak" ||
        ok "sweep: the next hook run removed the dead container's slice directory"
[ -f "$SLICES/alive/owner" ] && ok "sweep: a directory whose owner is alive stays" || not_ok "sweep: removed a live owner's directory"
rm -rf "$SLICES/alive"
# ... and so does the directory of a container that is running (runc run -d), whose init has
# exec'd its own program since the hook ran; `runc delete` then runs the poststop hook.
make_bundle live '.process.env += ["NVIDIA_VISIBLE_DEVICES=void", "GPUSLICE_MEMORY_LIMIT=1Gi"]
        | .process.args = ["/bin/sleep", "60"] | .hooks = {prestart: ['"$H_PRESTART"'], poststop: ['"$H_POSTSTOP"']}'
live=gs-$$-live; ids+=("$live")
run live -- timeout 60 "$RUNC" --root "$STATE" run -d --bundle "$TMP/live" "$live" </dev/null
expect_rc live 0 "runc run -d of a slice container"
[ -f "$SLICES/$live/owner" ] && ok "live: its slice directory exists" || not_ok "live: no slice directory: $(ls -A "$SLICES" 2>&1)"
gpu_case sweeper2 NVIDIA_VISIBLE_DEVICES=void
expect_done sweeper2 "another container's hook run"
[ -f "$SLICES/$live/owner" ] && ok "live: a running container's slice directory survives other hook runs" ||
        not_ok "live: another container's hook run swept the running container's slice directory"
"$RUNC" --root "$STATE" kill "$live" KILL >/dev/null 2>&1
for _ in $(seq 50); do [ "$("$RUNC" --root "$STATE" state "$live" 2>/dev/null | jq -r .status)" = stopped ] && break; sleep 0.1; done
run livedel -- "$RUNC" --root "$STATE" delete "$live"
expect_rc livedel 0 "runc delete of the stopped container"
[ -e "$SLICES/$live" ] && not_ok "live: runc delete (poststop) left its slice directory" ||
        ok "live: runc delete ran the poststop hook, which removed its slice directory"

# Two compute-limited containers on one GPU take turns through the GPU's arbiter directory: the
# hook makes each container's record in <regions>/../arbiter/gpuslice-gpu-<UUID>/, mounts the
# directory read-only and only the container's own record read-write. In share mode on an idle
# (simulated) GPU each would borrow everything; taking turns, together they get the GPU once.
# A container cannot add files there, nor write the other's record; poststop removes its record.
ARBDIR=$TMP/arbiter/gpuslice-gpu-$GPU0_UUID
for pct in 30 70; do
        make_bundle "arb$pct" '.process.env += $env
                | .process.args = ["/bin/sh", "-c", "d=/run/gpuslice/arbiter/gpuslice-gpu-" + $uuid
                    + "; sed \"s/^/SLICE /\" /etc/gpuslice/slice.conf; (sleep 1.5; ls $d | sed \"s/^/ARB /\") &"
                    + " /usr/bin/compute-probe kernel 3 500 | sed \"s/^/PROBE /\"; wait; (: >$d/evil) 2>/dev/null && echo ADD_FILE written || echo ADD_FILE refused"
                    + "; for f in $d/gs-*; do [ $f = $d/" + $id + " ] && continue; (printf x >>$f) 2>/dev/null && echo OTHER written || echo OTHER refused; done"
                    + "; (printf \"\" >>$d/" + $id + ") 2>/dev/null && echo OWN writable || echo OWN read-only; echo DONE"]
                | .hooks = {prestart: ['"$H_PRESTART"'], poststop: ['"$H_POSTSTOP"']}' \
                --arg uuid "$GPU0_UUID" --arg id "gs-$$-arb$pct" \
                --argjson env "$(env_json NVIDIA_VISIBLE_DEVICES=0 GPUSLICE_COMPUTE_LIMIT=$pct GPUSLICE_COMPUTE_MODE=share)"
        cp "$BUILD/tests/integration/hook-compute-probe" "$TMP/arb$pct/rootfs/usr/bin/compute-probe"
        ids+=("gs-$$-arb$pct")
done
run_bundle arb30 & run_bundle arb70 & wait
for pct in 30 70; do
        expect_done "arb$pct" "compute share $pct % (share mode)"
        expect_fact "arb$pct" "SLICE GPUSLICE_ARBITER_DIR=/run/gpuslice/arbiter" "arbiter $pct: slice.conf names the arbiter directory"
        expect_fact "arb$pct" "SLICE GPUSLICE_ARBITER_NAME=gs-$$-arb$pct" "arbiter $pct: ... and the container's record"
        expect_fact "arb$pct" "ADD_FILE refused" "arbiter $pct: the GPU's arbiter directory is read-only in the container"
        expect_fact "arb$pct" "OWN writable" "arbiter $pct: the container's own record is writable"
        expect_no_fact "arb$pct" "OTHER written" "arbiter $pct: the other container's record is not"
done
expect_fact arb30 "ARB gs-$$-arb70" "arbiter: each container sees the other's record"
a=$(sed -n 's/^PROBE .*fraction=\([0-9.]*\).*/\1/p' "$TMP/arb30.out") b=$(sed -n 's/^PROBE .*fraction=\([0-9.]*\).*/\1/p' "$TMP/arb70.out")
# (the lower bounds allow for the CPU stalls each probe measured in its run, up to a floor:
# tests/lib/probe.sh; the split b/a, which no stall of the machine moves much, is checked beside
# them. The containers' other facts come from this same run, so it is judged once: a run too
# disturbed to judge fails, saying so)
alo=$(probe_lo 0.22 "$TMP/arb30.out") blo=$(probe_lo 0.55 "$TMP/arb70.out")
why=$(probe_disturbed "$TMP/arb30.out" "$TMP/arb70.out") || why=
awk -v a="${a:-0}" -v b="${b:-0}" -v alo="$alo" -v blo="$blo" \
        'BEGIN { exit !(a >= alo && b >= blo && a + b <= 1.05 && a > 0 && b / a >= 1.7 && b / a <= 3.2) }' &&
        ok "two containers, shares 30 % and 70 % of an idle GPU: $a and $b (>= $alo, >= $blo, b/a 1.7..3.2; turns, not overlap)" ||
        not_ok "two containers 30/70 share: $a and $b (want >= $alo, >= $blo, sum <= 1.05, b/a 1.7..3.2)${why:+ ($why)}"
left=$(ls -A "$ARBDIR" 2>&1)
[ -d "$ARBDIR" ] && [ -z "$left" ] && [ "$(stat -c %a "$ARBDIR")" = 1777 ] &&
        ok "arbiter: poststop removed both records; the GPU's directory stays (sticky, for host slices)" ||
        not_ok "arbiter directory after the containers: $(stat -c %a "$ARBDIR" 2>&1) $left"

# Priorities. The container's GPUSLICE_PRIORITY (or HAMi's CUDA_TASK_PRIORITY) goes into the slice
# file as a word; an invalid one fails the container's start, naming the variable. A process in the
# container cannot raise its slice's priority: with the enforced slice file its own
# GPUSLICE_PRIORITY=high / CUDA_TASK_PRIORITY=0 are ignored, and the interposer's line on the first
# limited launch (log level 2, the process's own) says the slice's priority. The control: the same
# probe and variables outside any container do set the priority, so the line can tell them apart.
prio_bundle() { # NAME ENV...
        local name=$1; shift
        make_bundle "$name" '.process.env += $env
                | .process.args = ["/bin/sh", "-c", "sed \"s/^/SLICE /\" /etc/gpuslice/slice.conf; GPUSLICE_PRIORITY=high CUDA_TASK_PRIORITY=0 GPUSLICE_LOG_LEVEL=2 /usr/bin/compute-probe kernel 0.3 200 2>&1 | sed \"s/^/PROBE /\"; echo DONE"]
                | .hooks = {prestart: ['"$H_PRESTART"'], poststop: ['"$H_POSTSTOP"']}' \
                --argjson env "$(env_json NVIDIA_VISIBLE_DEVICES=0 "$@")"
        cp "$BUILD/tests/integration/hook-compute-probe" "$TMP/$name/rootfs/usr/bin/compute-probe"
        run_bundle "$name"
}
prio_bundle priolow GPUSLICE_COMPUTE_LIMIT=30 GPUSLICE_PRIORITY=low
expect_done priolow "compute 30 %, GPUSLICE_PRIORITY=low"
expect_fact priolow "SLICE GPUSLICE_PRIORITY=low" "priority: slice.conf holds GPUSLICE_PRIORITY=low"
expect_fact_re priolow "^PROBE .*compute limit on device 0: 30\.00 % \(cap, priority low\)" \
        "priority: a process that sets GPUSLICE_PRIORITY=high and CUDA_TASK_PRIORITY=0 still runs at low"
if grep -q "^PROBE .*priority high" "$TMP/priolow.out"; then not_ok "priority: the process raised its slice's priority"
else ok "priority: no line says high"; fi
prio_bundle priodef GPUSLICE_COMPUTE_LIMIT=30 GPUSLICE_COMPUTE_MODE=share
expect_done priodef "compute 30 % (share), no priority"
expect_no_fact priodef "SLICE GPUSLICE_PRIORITY=high" "priority: none asked, none in slice.conf"
expect_fact_re priodef "^PROBE .*compute limit on device 0: 30\.00 % \(share, priority normal\)" \
        "priority: a slice without one runs at normal, whatever its process sets"
prio_bundle priohami GPUSLICE_COMPUTE_LIMIT=30 CUDA_TASK_PRIORITY=5
expect_done priohami "compute 30 %, CUDA_TASK_PRIORITY=5 (HAMi)"
expect_fact priohami "SLICE GPUSLICE_PRIORITY=low" "priority: HAMi's CUDA_TASK_PRIORITY=5 is low in slice.conf"
# High raises a slice over its neighbours: without an allocator only where the host allows it
# (slice.env-may-raise) or in a privileged container (runtime/slice_rules.h; test_allocator.sh).
prio_bundle priohigh GPUSLICE_COMPUTE_LIMIT=30 CUDA_TASK_PRIORITY=0 GPUSLICE_PRIORITY=high
expect_no_fact priohigh "SLICE GPUSLICE_PRIORITY=high" "priority: GPUSLICE_PRIORITY=high is not the env's to ask (unprivileged)"
expect_fact_re priohigh "^PROBE .*compute limit on device 0: 30\.00 % \(cap, priority normal\)" "priority: ... the slice runs at normal"
hook_config "$TMP/raise.toml" "$DRV" "$SLICES"
printf 'env-may-raise = true\n' >>"$TMP/raise.toml"
CONF=$TMP/raise.toml prio_bundle priohigh2 GPUSLICE_COMPUTE_LIMIT=30 CUDA_TASK_PRIORITY=0 GPUSLICE_PRIORITY=high
expect_fact priohigh2 "SLICE GPUSLICE_PRIORITY=high" "priority: with slice.env-may-raise, GPUSLICE_PRIORITY=high in slice.conf"
expect_fact_re priohigh2 "^PROBE .*compute limit on device 0: 30\.00 % \(cap, priority high\)" "priority: ... and the slice runs at high"
gpu_case priobad NVIDIA_VISIBLE_DEVICES=0 GPUSLICE_COMPUTE_LIMIT=30 GPUSLICE_PRIORITY=urgent
expect_fail priobad "invalid GPUSLICE_PRIORITY 'urgent' (high, normal or low)" "GPUSLICE_PRIORITY=urgent"
gpu_case priobadh NVIDIA_VISIBLE_DEVICES=0 GPUSLICE_COMPUTE_LIMIT=30 CUDA_TASK_PRIORITY=high
expect_fail priobadh "invalid CUDA_TASK_PRIORITY 'high' (0 high, 1 normal, 2 or more low)" "CUDA_TASK_PRIORITY=high"
no_container_left priobadh "after the priority errors"
run prioctl -- env LD_PRELOAD="$VGPU_LIB" FAKEGPU_CONFIG="$DRV/etc/fakegpu/gpus.conf" GPUSLICE_REGION="$TMP/prioctl.region" GPUSLICE_COMPUTE_LIMIT=30 \
        GPUSLICE_PRIORITY=high GPUSLICE_LOG_LEVEL=2 "$BUILD/tests/integration/hook-compute-probe" kernel 0.3 200
if grep -q "compute limit on device 0: 30\.00 % (cap, priority high)" "$TMP/prioctl.out" "$TMP/prioctl.err"; then
        ok "priority control: outside a container (no slice file) the process's GPUSLICE_PRIORITY=high is its priority"
else not_ok "priority control: $(cat "$TMP/prioctl.out" "$TMP/prioctl.err" | tr '\n' ' ')"; fi

# With slice.mps = "auto" (tests/integration/test_mps_slice.sh for off, on and the rest), a
# cap-mode slice on a GPU whose `gpuslice mps` daemon runs goes through it: the GPU's client
# directory mounted where it is on the host, named in slice.conf, and the interposer (no launch
# intercepted) gives the process 30 % of the SMs. Share mode stays on time.
MPSROOT=$TMP/mps
CONF_MPS=$TMP/hook-mps.toml
{ cat "$CONF"; printf 'mps-root = "%s"\nmps = "auto"\n' "$MPSROOT"; } >"$CONF_MPS"
if "$GS" --root "$DRV" mps start --device 0 --mps-root "$MPSROOT" >"$TMP/mpsstart.out" 2>&1; then
        PIPE=$MPSROOT/$GPU0_UUID/client
        for mode in cap share; do
                CONF=$CONF_MPS make_bundle "mps$mode" '.process.env += $env
                        | .process.args = ["/bin/sh", "-c", "sed \"s/^/SLICE /\" /etc/gpuslice/slice.conf; /usr/bin/compute-probe procaddr 1 500 | sed \"s/^/PROBE /\"; echo DONE"]
                        | .hooks = {prestart: ['"$H_PRESTART"'], poststop: ['"$H_POSTSTOP"']}' \
                        --argjson env "$(env_json NVIDIA_VISIBLE_DEVICES=0 GPUSLICE_COMPUTE_LIMIT=30 GPUSLICE_COMPUTE_MODE=$mode)"
                cp "$BUILD/tests/integration/hook-compute-probe" "$TMP/mps$mode/rootfs/usr/bin/compute-probe"
                run_bundle "mps$mode"
                expect_done "mps$mode" "compute 30 % ($mode mode) with an MPS daemon on the GPU"
        done
        expect_fact mpscap "SLICE GPUSLICE_MPS_PIPE_DIRECTORY=$PIPE" "MPS: slice.conf names the GPU's client directory (cap mode)"
        expect_fact_re mpscap "^PROBE .*intercepted=0 sms=32 " "MPS: in the container the process runs on 32 of the GPU's 108 SMs, nothing intercepted"
        expect_no_fact mpsshare "SLICE GPUSLICE_MPS_PIPE_DIRECTORY=$PIPE" "MPS: share mode stays on the time limiter"
        expect_fact_re mpsshare "^PROBE .*intercepted=1 sms=108 " "MPS: ... (launches intercepted, every SM seen)"
        "$GS" --root "$DRV" mps stop --mps-root "$MPSROOT" >/dev/null 2>&1
        # A daemon that is not running: the slice stays on the time limiter.
        CONF=$CONF_MPS make_bundle mpsgone '.process.env += $env
                | .process.args = ["/bin/sh", "-c", "sed \"s/^/SLICE /\" /etc/gpuslice/slice.conf; echo DONE"]
                | .hooks = {prestart: ['"$H_PRESTART"'], poststop: ['"$H_POSTSTOP"']}' \
                --argjson env "$(env_json NVIDIA_VISIBLE_DEVICES=0 GPUSLICE_COMPUTE_LIMIT=30)"
        run_bundle mpsgone
        expect_done mpsgone "compute 30 % after the MPS daemon stopped"
        expect_no_fact mpsgone "SLICE GPUSLICE_MPS_PIPE_DIRECTORY=$PIPE" "MPS: no daemon, no MPS in slice.conf"
else
        not_ok "gpuslice mps start for the hook test: $(cat "$TMP/mpsstart.out")"
fi

# 11. CVE-2025-23266. The image: LD_PRELOAD=/proc/self/cwd/poc.so (poc.so in the rootfs and the
#     bundle: a createContainer hook's cwd is the rootfs, a prestart hook's the bundle),
#     LD_LIBRARY_PATH=/proc/self/cwd/evil with poc.so copies named like our libraries, PATH with
#     /evil first (and its /proc/self/cwd twin) holding ldconfig & co. that write the marker, and
#     an /etc/ld.so.preload naming /poc.so. The container's own process is static busybox, so
#     nothing in it loads poc.so legitimately.
MARK=$TMP/poisoned
poison_bundle() { # NAME JQ-HOOKS [jq args...]
        local b=$TMP/$1 l hooks=$2
        shift 2
        make_bundle "${b##*/}" '.process.env = $env | .hooks = '"$hooks" "$@" --argjson env "$(env_json \
                PATH=/evil:/proc/self/cwd/evil:/usr/bin:/bin LD_PRELOAD=/proc/self/cwd/poc.so \
                LD_LIBRARY_PATH=/proc/self/cwd/evil GS_POISON_MARKER="$MARK" \
                NVIDIA_VISIBLE_DEVICES=0 GPUSLICE_MEMORY_LIMIT=1Gi)"
        cp "$POC" "$b/rootfs/poc.so"; cp "$POC" "$b/poc.so"
        mkdir -p "$b/rootfs/evil"
        for l in $(ldd "$GS" | awk '$2 == "=>" { print $1 }'); do
                case $l in libc.so*|ld-linux*) ;; *) cp "$POC" "$b/rootfs/evil/$l" ;; esac
        done
        cp "$POC" "$b/rootfs/evil/libgpuslice.so.0"
        for l in ldconfig ldconfig.real nvidia-smi modprobe sh env true jq gpuslice nvidia-container-cli; do
                printf '#!/bin/sh\necho "path $0 $$" >>%s; echo "path $0 $$" >>"${0%%/*}/POISONED"\n' "$MARK" >"$b/rootfs/evil/$l"
                chmod 755 "$b/rootfs/evil/$l"
        done
        echo /poc.so >"$b/rootfs/etc/ld.so.preload"
        # the check script must not run anything dynamic: only busybox facts
        printf 'echo "ENV_LD_PRELOAD ${LD_PRELOAD-unset}"\nls /dev/nvidia0 >/dev/null 2>&1 && echo "HAS /dev/nvidia0"\necho DONE\n' >"$b/rootfs/check.sh"
}
markers() { # NAME: every marker poc.so or an evil program may have left
        local b=$TMP/$1
        cat "$MARK" "$b/POISONED" "$b/rootfs/POISONED" "$b/rootfs/evil/POISONED" 2>/dev/null
}
H_CC_POSTSTART='{path: $gs, args: ["gpuslice", "hook", "--config", $conf, "poststart"], env: $hookenv}'
H_CC_ENV='{path: "/usr/bin/env", args: ["env", "-0"], env: $hookenv}'
# The createContainer hooks exactly as `gpuslice cdi generate` writes them (gpuslice-hook
# create-symlinks, update-ldcache; `gpuslice cdi-hook ...` before). The case below claims them: a failed generate, or a spec
# without both, is a failure (the case would otherwise run without them and prove less).
CDI_CC='[]'
run cdigen -- "$GS" --root "$DRV" cdi generate --json
expect_rc cdigen 0 "cdi generate --json, for the generated createContainer hooks"
CDI_CC=$(jq -c '[.containerEdits.hooks[]?, .devices[].containerEdits.hooks[]?]
        | map(select(.hookName == "createContainer") | del(.hookName)) | unique' "$TMP/cdigen.out" 2>/dev/null)
[ -n "$CDI_CC" ] || CDI_CC='[]' # no spec: the case runs without them, and the checks below say so
# CDI_CMD: a jq function, the CDI hook command of a hook (gpuslice-hook CMD, gpuslice cdi-hook CMD)
CDI_CMD='def cmd: if .args[1] == "cdi-hook" then .args[2] else .args[1] end;'
# cdi_hooks_in JSON: the array holds the CDI hooks create-symlinks and update-ldcache, each with an env
cdi_hooks_in() {
        jq -e "$CDI_CMD"' (map(cmd) | index("create-symlinks") != null and index("update-ldcache") != null)
                and all(.env | length > 0)' <<<"$1" >/dev/null 2>&1
}
if cdi_hooks_in "$CDI_CC"; then
        ok "cdi generate: $(jq length <<<"$CDI_CC") createContainer hooks ($(jq -r "$CDI_CMD"' map(cmd) | join(", ")' <<<"$CDI_CC")), each with an explicit env"
else not_ok "cdi generate: no create-symlinks + update-ldcache hooks with an explicit env: $CDI_CC"; fi
# (A sanitizer build's createContainer hooks run in the container's pid namespace with the host's
# /proc: the executable itself switches LeakSanitizer off where /proc/self is not its pid,
# src/cli/lsan.c; no ASAN_OPTIONS are added here, so this case checks that too.)
rm -f "$MARK"
poison_bundle cve '{prestart: ['"$H_PRESTART"'], createRuntime: ['"$H_CREATERT"'],
        createContainer: (['"$H_CC_POSTSTART"', '"$H_CC_ENV"'] + $cdi), poststart: ['"$H_CC_POSTSTART"'],
        poststop: ['"$H_POSTSTOP"']}' --argjson cdi "$CDI_CC"
run_bundle cve
expect_done cve "poisoned image, our hooks with an explicit env (prestart, createRuntime, createContainer incl. the generated CDI ones, poststart, poststop)"
# The generated hooks were in what runc ran (the bundle's config.json), and create-symlinks ran:
# the links it was asked for that configure (prestart) does not make itself exist.
if cdi_hooks_in "$(jq -c '.hooks.createContainer // []' "$TMP/cve/config.json")"; then
        ok "poisoned image: the bundle's createContainer hooks include cdi-hook create-symlinks and update-ldcache"
else not_ok "poisoned image: the bundle lacks the generated CDI hooks: $(jq -c '.hooks.createContainer' "$TMP/cve/config.json")"; fi
links=$(jq -r "$CDI_CMD"' .[] | select(cmd == "create-symlinks") | .args[] | select(contains("::")) | sub(".*::"; "")
        | select(endswith("/libcuda.so") | not)' <<<"$CDI_CC")
made=
for l in $links; do [ -L "$TMP/cve/rootfs$l" ] && made="$made $l"; done
[ -n "$made" ] && ok "poisoned image: the generated cdi-hook create-symlinks ran (made$made)" ||
        not_ok "poisoned image: none of the links ($(echo $links)) exists: did the generated createContainer hooks run?"
expect_fact cve "HAS /dev/nvidia0" "poisoned image: the GPU is there all the same"
expect_fact cve "ENV_LD_PRELOAD /proc/self/cwd/poc.so" "poisoned image: the container's own environment has the LD_PRELOAD"
m=$(markers cve)
if [ -z "$m" ]; then ok "poisoned image: poc.so and the PATH programs never ran in any hook (no marker)"
else not_ok "poisoned image: a hook ran the image's code: $(echo "$m" | tr '\n' ' ')"; fi
if grep -q "LD_PRELOAD is set" "$TMP/cve.err"; then not_ok "poisoned image: gpuslice saw LD_PRELOAD in its environment"
else ok "poisoned image: no hook of ours saw the image's LD_PRELOAD"; fi

# Negative control: the same createContainer hook entry WITHOUT "env". runc 1.1 runs it in the
# container's init, whose environment is already the image's (ecosystem.md 1.2), so the host's
# /usr/bin/env gets poc.so preloaded; and a static host busybox finds `ldconfig` on the image's
# PATH. If this does not happen here, the test above proves nothing on this runc: say so.
rm -f "$MARK"
poison_bundle ctl '{createContainer: [{path: "/usr/bin/env", args: ["env"]}]}'
run_bundle ctl
m=$(markers ctl)
if echo "$m" | grep -q "^preload .* /usr/bin/env "; then
        ok "control: a createContainer hook without \"env\" gets the image's LD_PRELOAD (poc.so ran in /usr/bin/env)"
else
        not_ok "control: the no-env createContainer hook did not load poc.so on this runc ($("$RUNC" --version | head -1)): markers '$m', runc exit $(rc_of ctl)"
        sed 's/^/    # /' "$TMP/ctl.err" | tail -5
fi
if [ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1; then
        rm -f "$MARK"
        poison_bundle ctlpath '{createContainer: [{path: "/bin/busybox", args: ["busybox", "env", "ldconfig"]}]}'
        run_bundle ctlpath
        m=$(markers ctlpath)
        if echo "$m" | grep -q "^path .*/evil/ldconfig"; then
                ok "control: a createContainer hook without \"env\" runs the image's ldconfig from its PATH"
        else not_ok "control: PATH poisoning did not reach the no-env hook: markers '$m', runc exit $(rc_of ctlpath)"; fi
else
        not_ok "control: no static /bin/busybox on the host (busybox-static, make test-deps) for the PATH control"
fi
no_container_left cve "after the CVE cases"
# Loader variables that do reach the hook (a definition without "env" on a runtime that passes the
# image's) are reported and dropped before anything runs.
echo '{"id":"envcheck","bundle":"/nonexistent"}' >"$TMP/envcheck.json"
run envcheck -- env LD_LIBRARY_PATH=/nonexistent/evil "$GS" --root "$DRV" hook --config "$CONF" poststop <"$TMP/envcheck.json"
expect_rc envcheck 0 "hook poststop with LD_LIBRARY_PATH in its environment"
expect_err envcheck "LD_LIBRARY_PATH is set in the hook's environment (ignored): give the hook an explicit \"env\"" \
        "... warns that its definition should give it an explicit env"
# 12. The lean hook. What a runtime starts at every GPU container is the executable gpuslice's
#     hook definitions name: a CDI spec's hooks (here), the shim's (test_runtime.sh), the hooks.d
#     file and the drop-in name (test_podman.sh, packaging). It holds only what the hooks use:
#     DT_NEEDED libc, json-c, libcap, libseccomp (no TLS, HTTP/2, protobuf, terminal, HTTP-server,
#     YAML or HTTP-client library; `gpuslice` itself has them for metrics, the plugins and top).
#     And at run: the spec's own createRuntime and poststop hooks (path, args, env; --config added)
#     on a runc container asking for GPU 0 and a 1 GiB slice, with LD_DEBUG=libs in their env:
#     every object the hook processes loaded (the NVML helper's dlopen included) is one of those,
#     or the driver's own library under the driver root.
LEAN_LIBS='libc.so.6 libjson-c.so.5 libcap.so.2 libseccomp.so.2 ld-linux-x86-64.so.2'
# (a sanitizer build links the sanitizers' runtimes too, and they what they need)
sanitized && LEAN_LIBS="$LEAN_LIBS libasan.so.8 libubsan.so.1 libstdc++.so.6 libgcc_s.so.1 libm.so.6"
lean_lib() { [[ " $LEAN_LIBS " == *" ${1##*/} "* ]]; }
run leanspec -- "$GS" --root "$DRV" cdi generate --format json --slice 1g=1Gi
expect_rc leanspec 0 "cdi generate --slice 1g=1Gi (the spec whose hooks run at every container)"
lean_paths=$(jq -r '[.containerEdits.hooks[]?, .devices[].containerEdits.hooks[]?] | map(.path) | unique | .[]' "$TMP/leanspec.out")
if [ "$(wc -w <<<"$lean_paths")" = 1 ] && [ -x "$lean_paths" ] &&
        jq -e --arg p "$lean_paths" '[.containerEdits.hooks[]?, .devices[].containerEdits.hooks[]?] |
                all(.path == $p and .args[0] == ($p | split("/") | last))' "$TMP/leanspec.out" >/dev/null; then
        ok "the spec's hooks all run one executable, args[0] its name: $lean_paths"
else not_ok "the spec's hooks run: $(echo $lean_paths)"; fi
for exe in $lean_paths; do
        libs=$(readelf -d "$exe" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
        extra=""
        for l in $libs; do lean_lib "$l" || extra="$extra $l"; done
        if [ -n "$libs" ] && [ -z "$extra" ]; then ok "the hook executable $exe needs only $libs"
        else not_ok "the hook executable $exe needs${extra:- nothing (readelf read no DT_NEEDED)} besides $LEAN_LIBS"; fi
done
# the 0-1g device's hooks as the spec gives them, with --config CONF before the stage and LD_DEBUG
mkdir -p "$TMP/lddebug"
lean_hook() { # STAGE: the spec's hook of that stage (device 0-1g), for this test
        jq -c --arg st "$1" --arg conf "$CONF" --arg out "$TMP/lddebug/$1" '.devices[] | select(.name == "0-1g") |
                .containerEdits.hooks[] | select(.hookName == $st) | del(.hookName) |
                .args = .args[:-1] + ["--config", $conf] + .args[-1:] | .env += ["LD_DEBUG=libs", "LD_DEBUG_OUTPUT=" + $out]' \
                "$TMP/leanspec.out"
}
make_bundle lean '.process.env += ["NVIDIA_VISIBLE_DEVICES=0", "GPUSLICE_MEMORY_LIMIT=1Gi", "EXPECT_TOTAL_MIB=1024"]
        | .hooks = {createRuntime: [$create], poststop: [$stop]}' \
        --argjson create "$(lean_hook createRuntime)" --argjson stop "$(lean_hook poststop)"
run_bundle lean
expect_done lean "the spec's createRuntime hook, GPU 0 and a 1 GiB slice"
expect_gpu0 lean "the spec's hook"
expect_slice lean "the spec's hook" 1Gi 1024
loaded=$(cat "$TMP"/lddebug/createRuntime.* "$TMP"/lddebug/poststop.* 2>/dev/null |
        sed -n 's/.*calling init: \(.*\)$/\1/p' | sort -u)
extra=""
for l in $loaded; do lean_lib "$l" || [[ $l == "$DRV"/* ]] || extra="$extra $l"; done
if [ -n "$loaded" ] && [ -z "$extra" ]; then
        ok "at run the hook processes loaded only $(for l in $loaded; do printf '%s ' "${l##*/}"; done)(driver libraries from the driver root)"
else not_ok "at run the hook loaded${extra:- nothing (no LD_DEBUG output: $(ls "$TMP/lddebug"))}"; fi
no_container_left lean "the spec's hooks"
no_slice_dirs "at the end"
finish
