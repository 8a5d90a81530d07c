#!/usr/bin/env bash
# gpuslice configure as an OCI prestart hook of the real runc (runc-hook.sh), with the simulated
# driver: the container's own view (files, nodes, /proc/driver/nvidia, read-only mounts, ldconfig,
# nvidia-smi, the device cgroup as the kernel enforces it), then an unsatisfied requirement that
# must make `runc run` fail and leave no container behind.
#
# runc (1.1) runs prestart hooks in the runtime's namespaces after it has made the container's
# mounts and set its cgroup, before pivot_root (libcontainer process_linux.go, the procHooks
# sync: "Setup cgroup before prestart hook, so that the prestart hook could apply cgroup
# permissions"). On a host with a v1 devices controller runc uses it, and gpuslice adds its rules
# to the container's devices.allow.
. "$(dirname "$0")/lib.sh"

RUNC=$(command -v runc || echo /usr/sbin/runc)
need "$RUNC" jq

DRV=$(mkroot drv 2gpu.conf)
STATE=$TMP/runc-state
CG=gs-it-runc-$$
HOOK=$TMP/runc-hook.sh
cp "$SRC/tests/integration/runc-hook.sh" "$HOOK" && chmod 755 "$HOOK"
ids=()
cleanup_runc() {
        local id
        for id in "${ids[@]}"; do "$RUNC" --root "$STATE" delete -f "$id" >/dev/null 2>&1; done
        for id in "${ids[@]}"; do [ -d "/sys/fs/cgroup/devices/$CG-$id" ] && rmdir "/sys/fs/cgroup/devices/$CG-$id" 2>/dev/null; done
}
trap 'cleanup_runc; rm -rf "$TMP"' EXIT

# The checks, run by the container's process (busybox sh): one line "PASS name", "FAIL name: why"
# or "SKIP name: why" each, then DONE.
CHECKS="libcuda libnvml nvidia-smi nvidia0 nvidiactl nvidia-uvm no-nvidia2 gpus params lib-ro
lib-flags ldconfig smi-L open-nvidia0 mknod-nvidia0 mknod-nvidia2 cgroup-list"
write_check_sh() {
        cat >"$1" <<'EOF'
L=/usr/lib/x86_64-linux-gnu
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $(echo "$2" | tr '\n' ' ')"; }
check() { n=$1; shift; if "$@" >/tmp/check.out 2>&1; then pass "$n"; else fail "$n" "$(head -3 /tmp/check.out)"; fi; }
# opens FILE read-only; prints the error message, or "opened"
open_err() { if cat "$1" >/dev/null 2>/tmp/open.err; then echo opened; else cat /tmp/open.err; fi; }
check libcuda test -f $L/libcuda.so.580.159.04
check libnvml test -f $L/libnvidia-ml.so.580.159.04
check nvidia-smi test -x /usr/bin/nvidia-smi
check nvidia0 test -c /dev/nvidia0
check nvidiactl test -c /dev/nvidiactl
check nvidia-uvm test -c /dev/nvidia-uvm
if test -e /dev/nvidia2; then fail no-nvidia2 "/dev/nvidia2 exists"; else pass no-nvidia2; fi
g=$(ls /proc/driver/nvidia/gpus 2>&1)
[ "$g" = "0000:3b:00.0" ] && pass gpus || fail gpus "$g"
check params grep -q "ModifyDeviceFiles: 0" /proc/driver/nvidia/params
if (echo x >$L/libcuda.so.580.159.04) 2>/tmp/ro.err; then fail lib-ro "a library is writable"
elif grep -q "Read-only file system" /tmp/ro.err; then pass lib-ro
else fail lib-ro "$(cat /tmp/ro.err)"; fi
f=$(awk -v p=$L/libcuda.so.580.159.04 '$5 == p { print $6 }' /proc/self/mountinfo | tail -1)
case ",$f," in *,ro,*nosuid*nodev*) pass lib-flags ;; *) fail lib-flags "mount options '$f'" ;; esac
ldconfig -p >/tmp/ldp.out 2>&1
grep -q "libcuda.so.1 (libc6,x86-64) => $L/libcuda.so.1" /tmp/ldp.out && pass ldconfig || fail ldconfig "$(head -3 /tmp/ldp.out)"
env FAKEGPU_CONFIG=/etc/fakegpu.conf nvidia-smi -L >/tmp/smi.out 2>&1
grep -q "^GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-2f8c1d4e-7a90-3b5c-e6d1-0a9b8c7d6e5f)" /tmp/smi.out &&
        pass smi-L || fail smi-L "$(head -3 /tmp/smi.out)"
# The device cgroup, as the kernel enforces it: allowed but no driver behind major 195 -> ENXIO;
# denied by the cgroup -> EPERM (checked before the driver is looked up).
e=$(open_err /dev/nvidia0)
case $e in *"No such device or address"*) pass open-nvidia0 ;; *) fail open-nvidia0 "$e" ;; esac
# nodes made here (CAP_MKNOD; runc's default rules allow mknod of any device): for GPU 0 (same
# answer as the bind-mounted node), for the unselected GPU 1 (minor 2: the cgroup must deny it)
if busybox mknod /dev/nvidia0-probe c 195 0 2>/tmp/mknod.err; then
        e=$(open_err /dev/nvidia0-probe)
        case $e in *"No such device or address"*) pass mknod-nvidia0 ;; *) fail mknod-nvidia0 "$e" ;; esac
else fail mknod-nvidia0 "mknod: $(cat /tmp/mknod.err)"; fi
if busybox mknod /dev/nvidia2-probe c 195 2 2>/tmp/mknod.err; then
        e=$(open_err /dev/nvidia2-probe)
        case $e in *"Operation not permitted"*) pass mknod-nvidia2 ;; *) fail mknod-nvidia2 "$e" ;; esac
else fail mknod-nvidia2 "mknod: $(cat /tmp/mknod.err)"; fi
# runc bind-mounts the container's own v1 devices cgroup at /sys/fs/cgroup/devices
d=/sys/fs/cgroup/devices/devices.list
if [ -r $d ]; then
        l=$(cat $d)
        case "$l" in *"c 195:2 "*) fail cgroup-list "allows 195:2: $l" ;;
                *"c 195:0 rw"*) pass cgroup-list ;; *) fail cgroup-list "no 195:0: $l" ;; esac
else echo "SKIP cgroup-list: no $d (no v1 devices controller)"; fi
echo DONE
EOF
}

# bundle NAME CONFIGURE-OPTIONS...: a bundle at $TMP/NAME (rootfs by mkrootfs.sh, config.json by
# `runc spec` edited with jq) whose prestart hook runs gpuslice configure with those options.
bundle() {
        local name=$1 b=$TMP/$1; shift
        mkdir -p "$b"
        "$SRC/tests/integration/mkrootfs.sh" "$b/rootfs" || { echo "mkrootfs failed" >&2; exit 1; }
        for a in awk; do ln -sfn busybox "$b/rootfs/bin/$a"; done
        write_check_sh "$b/rootfs/check.sh"
        cp "$DRV/etc/fakegpu/gpus.conf" "$b/rootfs/etc/fakegpu.conf"
        (cd "$b" && "$RUNC" spec) || { echo "runc spec failed" >&2; exit 1; }
        local flags; flags=$(printf '%s\n' "$@" | jq -R . | jq -cs .)
        jq --arg hook "$HOOK" --arg gs "$GS" --arg drv "$DRV" --arg log "$b/hook.log" \
           --arg cg "/$CG-$name" --argjson flags "$flags" '
                .root = {path: "rootfs", readonly: false}
                | .process.terminal = false
                | .process.args = ["/bin/sh", "/check.sh"]
                | .process.capabilities |= with_entries(.value += ["CAP_MKNOD"])
                | .linux.cgroupsPath = $cg
                | .hooks.prestart = [{path: $hook, args: (["runc-hook.sh", $gs, $drv] + $flags),
                                      env: ["PATH=/usr/sbin:/usr/bin:/sbin:/bin", "GS_HOOK_LOG=" + $log]}]
           ' <"$b/config.json" >"$b/config.json.new" && mv "$b/config.json.new" "$b/config.json" ||
                { echo "jq failed" >&2; exit 1; }
}
files_of() { (cd "$1" && find . -xdev | sort); }
no_container_left() { # NAME DESC
        local left; left=$("$RUNC" --root "$STATE" list -q 2>&1)
        if [ -z "$left" ]; then ok "$2: runc list is empty"; else not_ok "$2: runc list shows: $left"; fi
        if [ -d "/sys/fs/cgroup/devices/$CG-$1" ]; then not_ok "$2: the cgroup $CG-$1 is left"; else ok "$2: its cgroup is gone"; fi
}

# 1. A container that gets GPU 0 (compute, utility).
bundle ok --compute --utility --device 0
id=gs-runc-$$-ok; ids+=("$id")
run ok -- timeout 60 "$RUNC" --root "$STATE" run --bundle "$TMP/ok" "$id" </dev/null
expect_rc ok 0 "runc run with the gpuslice prestart hook"
log=$TMP/ok/hook.log
if [ -s "$log" ]; then
        grep -qx "rootfs=$TMP/ok/rootfs" "$log" && grep -qx "bundle=$TMP/ok" "$log" &&
                ok "the hook got the bundle from the OCI state and passed rootfs $TMP/ok/rootfs" ||
                not_ok "hook state: $(tr '\n' ' ' <"$log")"
        grep -qx "status=creating" "$log" && ok "the hook ran while the container was 'creating'" ||
                not_ok "hook status: $(grep status "$log")"
        grep -qx "rootfs_mounted=yes" "$log" && grep -qx "pivoted=no" "$log" &&
                ok "at hook time the rootfs is runc's bind mount at its host path, before pivot_root" ||
                not_ok "hook saw: $(tr '\n' ' ' <"$log")"
else
        not_ok "the hook did not run (no $log)"
fi
for c in $CHECKS; do
        line=$(grep -E "^(PASS|FAIL|SKIP) $c(:|$)" "$TMP/ok.out" | head -1)
        case $line in
        "PASS $c") ok "in the container: $c" ;;
        "SKIP $c"*) echo "# $line" ;;
        "FAIL $c"*) not_ok "in the container: ${line#FAIL }" ;;
        *) not_ok "in the container: $c: no result" ;;
        esac
done
grep -qx DONE "$TMP/ok.out" && ok "the check script ran to its end" ||
        { not_ok "the check script did not finish"; sed 's/^/    # /' "$TMP/ok.out" "$TMP/ok.err" | tail -20; }
no_container_left ok "after the run"

# 2. An unsatisfied requirement: the hook fails, so runc must fail and tear the container down.
bundle req --compute --device 0 --require 'cuda>=99'
files_of "$TMP/req/rootfs" >"$TMP/req.fbefore"
id=gs-runc-$$-req; ids+=("$id")
run req -- timeout 60 "$RUNC" --root "$STATE" run --bundle "$TMP/req" "$id" </dev/null
if [ "$(rc_of req)" != 0 ]; then ok "runc run fails when the hook fails (exit $(rc_of req))"; else
        not_ok "runc run succeeded with an unsatisfied requirement"; fi
cat "$TMP/req.out" >>"$TMP/req.err"
expect_err req "unsatisfied condition: cuda>=99" "runc's error carries gpuslice's message"
grep -q "^PASS\|^FAIL\|^DONE" "$TMP/req.err" && not_ok "the container's process ran" || ok "the container's process never ran"
no_container_left req "after the failure"
files_of "$TMP/req/rootfs" >"$TMP/req.fafter"
if diff "$TMP/req.fbefore" "$TMP/req.fafter" >"$TMP/req.fdiff"; then ok "gpuslice created nothing in the rootfs"; else
        not_ok "the rootfs changed: $(head -5 "$TMP/req.fdiff" | tr '\n' ' ')"; fi
finish
