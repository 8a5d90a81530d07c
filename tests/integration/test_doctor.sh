#!/usr/bin/env bash
# gpuslice doctor against fake driver roots: a healthy node (every check ok), then one broken thing
# at a time, each with its status, its message and its fix checked. Runs in a private mount
# namespace: the cgroup trees it checks are mounted there, and /usr/local/sbin (the first directory
# of the PATH docker uses) is a tmpfs holding the nvidia-container-runtime-hook under test.
if [ -z "${GS_DOCTOR_NS:-}" ] && [ "$(id -u)" = 0 ]; then
        GS_DOCTOR_NS=1 exec unshare --mount --propagation private bash "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"

# Every MPS daemon this test started is ended at exit, by the pid its pid file names.
cleanup() {
        local f p
        while IFS= read -r f; do
                p=$(cat "$f" 2>/dev/null) || continue
                [ "$(cat "/proc/$p/comm" 2>/dev/null)" = nvidia-cuda-mps ] && kill -CONT "$p" 2>/dev/null && kill "$p" 2>/dev/null
        done < <(find "$TMP" -name nvidia-cuda-mps-control.pid 2>/dev/null)
        rm -rf "$TMP"
}
trap cleanup EXIT

ROOT=$(mkroot 2gpu 2gpu.conf)
CFG=$TMP/config.toml
REG=$TMP/regions
HOOKS=$TMP/hooks.d
SPEC=$TMP/cdi/nvidia.yaml
CG=$TMP/cg2
mkdir -p -m 0755 "$REG" "$HOOKS" "$TMP/cdi" "$CG" "$TMP/empty"
# write_cfg [SLICE-AND-LATER-LINES] [DEVICE-PLUGIN-LINES]: the kubelet's directories under $TMP/kubelet
# (none made: not a Kubernetes node)
KUBELET=$TMP/kubelet
write_cfg() {
        printf '[device-plugin]\nsocket-dir = "%s"\ncdi-spec = "%s"\n%s\n[slice]\nregions-dir = "%s"\nmps-root = "%s"\n%s\n' \
                "$KUBELET/device-plugins" "$TMP/run-cdi/gpuslice-k8s.yaml" "${2:-}" "$REG" "$TMP/mps" "${1:-}" >"$CFG"
}
write_cfg
mount -t tmpfs tmpfs /usr/local/sbin || { echo "cannot mount a tmpfs on /usr/local/sbin"; exit 1; }
HOOKBIN=/usr/local/sbin/nvidia-container-runtime-hook
ln -s "$BUILD/gpuslice-hook" "$HOOKBIN"  # as installed: the drop-in name is the lean hook
jq --arg p "$HOOKBIN" '.hook.path = $p' "$SRC/packaging/oci-gpuslice-hook.json" >"$HOOKS/oci-gpuslice-hook.json"
mount -t cgroup2 none "$CG" || { echo "cannot mount cgroup2"; exit 1; }
"$GS" --root "$ROOT" cdi generate --output "$SPEC" 2>/dev/null || { echo "cdi generate failed"; exit 1; }

# containerd's default config with the runtime shim registered (a link to gpuslice)
ln -s "$GS" /usr/local/sbin/nvidia-container-runtime
containerd config default >"$TMP/ctd-ok.toml" 2>/dev/null && cp "$TMP/ctd-ok.toml" "$TMP/ctd-plain.toml" &&
        "$GS" runtime configure --runtime containerd --config "$TMP/ctd-ok.toml" --path /usr/local/sbin/nvidia-container-runtime \
        >/dev/null || { echo "containerd config default / runtime configure failed"; exit 1; }
# doctor NAME [extra options]: the JSON report in $TMP/NAME.out
doctor() {
        local name=$1; shift
        run "$name" -- "$GS" --root "${DROOT:-$ROOT}" doctor --config "$CFG" --hooks-dir "${DHOOKS:-$HOOKS}" \
                --cdi-spec "${DSPEC:-$SPEC}" --cgroup-root "${DCG:-$CG}" --engine-config "containerd=${DENGINE:-$TMP/ctd-ok.toml}" \
                --json "$@"
}
field() { jq -r --arg n "$3" ".checks[] | select(.name == \$n) | .$2" "$TMP/$1.out" 2>/dev/null; }
# expect NAME CHECK STATUS MESSAGE-PART [FIX-PART]: one check's status, message and fix
expect() {
        local name=$1 check=$2 status=$3 msg=$4 fix=${5:-}
        local got_s got_m got_f
        got_s=$(field "$name" status "$check") got_m=$(field "$name" message "$check") got_f=$(field "$name" fix "$check")
        if [ "$got_s" != "$status" ]; then
                not_ok "$name: $check is '$got_s', wanted '$status' ($got_m)"
        elif [[ $got_m != *"$msg"* ]]; then
                not_ok "$name: $check message lacks '$msg': $got_m"
        elif [ -n "$fix" ] && [[ $got_f != *"$fix"* ]]; then
                not_ok "$name: $check fix lacks '$fix': $got_f"
        elif [ -z "$fix" ] && [ "$status" = ok ] && [ "$got_f" != null ]; then
                not_ok "$name: $check is ok but has a fix: $got_f"
        else
                ok "$name: $check $status: $msg${fix:+ / fix: $fix}"
        fi
}

# ---- healthy -----------------------------------------------------------------------------------
doctor healthy
expect_rc healthy 0 "healthy node: doctor exits 0"
if jq -e '(.checks | length) == 12 and all(.checks[]; .status == "ok" and .fix == null) and
          .summary == {"ok": 12, "warn": 0, "fail": 0, "skip": 0} and (.root | type) == "string" and
          (.config | type) == "string"' "$TMP/healthy.out" >/dev/null; then
        ok "healthy node: all 12 checks ok, no fix, summary counts them"
else
        not_ok "healthy node: $(jq -c '[.checks[] | select(.status != "ok")]' "$TMP/healthy.out" 2>&1 | head -c 2000)"
fi
expect healthy driver ok "NVIDIA driver 580.159.04 (CUDA 13.0), 2 GPUs"
expect healthy device-nodes ok "every GPU's node are character devices"
expect healthy cgroups ok "cgroup v2"
expect healthy oci-hook ok "runs $HOOKBIN at prestart with an explicit env"
expect healthy docker-hook ok "docker run --gpus runs $HOOKBIN (gpuslice"
expect healthy engines ok "containerd ($TMP/ctd-ok.toml) runs /usr/local/sbin/nvidia-container-runtime"
expect healthy cdi-spec ok "$SPEC: 3 devices (nvidia.com/gpu=0, ...), current"
expect healthy gpu-requests ok "NVIDIA_VISIBLE_DEVICES is taken from unprivileged containers, as NVIDIA's default; no Kubernetes here"
expect healthy interposer ok "libgpuslice-vgpu.so"
expect healthy regions-dir ok "$REG: 0 live slices"
expect healthy mps ok "slice.mps = off: compute slices take turns on their GPU (the time limiter; gpuslice.conf(5) for MPS's trade-off); MPS daemons under $TMP/mps: none"
run text -- "$GS" --root "$ROOT" doctor --config "$CFG" --hooks-dir "$HOOKS" --cdi-spec "$SPEC" --cgroup-root "$CG" --engine-config "containerd=$TMP/ctd-ok.toml"
expect_rc text 0 "text report exits 0"
grep -qx "0 failed, 0 warnings, 12 ok" "$TMP/text.out" && ok "text report ends with the summary" ||
        not_ok "text report summary: $(tail -1 "$TMP/text.out")"
grep -q "^ok    driver        NVIDIA driver 580.159.04" "$TMP/text.out" && ok "text report: one line per check" ||
        not_ok "text report layout: $(sed -n 3p "$TMP/text.out")"
run help -- "$GS" doctor --help
expect_rc help 0 "doctor --help"
run bad -- "$GS" doctor --frobnicate
expect_rc bad 2 "an unknown option is a usage error"

# ---- the driver ----------------------------------------------------------------------------------
V=$ROOT/proc/driver/nvidia/version
cp "$V" "$TMP/version.saved"
sed -i 's/580\.159\.04/575.51.03/' "$V"
doctor mismatch
expect_rc mismatch 1 "version mismatch: exit 1"
expect mismatch driver fail "driver/library version mismatch: the kernel module is 575.51.03, the libraries (NVML) are 580.159.04" \
        "reboot (or unload and reload the nvidia modules)"
cp "$TMP/version.saved" "$V"

DROOT=$TMP/empty doctor nodriver
expect_rc nodriver 1 "no driver: exit 1"
# (On a host with a loaded NVIDIA driver the module is the host's: "... is loaded, but NVML does not answer".)
expect nodriver driver fail "NVML does not answer" "install the "
expect nodriver device-nodes fail "/dev/nvidiactl is missing" "--root $TMP/empty --load-kmods info"
expect nodriver mps skip "no driver"

# ---- device nodes ------------------------------------------------------------------------------
mv "$ROOT/dev/nvidia2" "$TMP/nvidia2.saved"
doctor nonode
expect_rc nonode 1 "a missing GPU node: exit 1"
expect nonode device-nodes fail "/dev/nvidia2 (GPU 1) is missing" "sudo gpuslice --root $ROOT --load-kmods info"
expect nonode cdi-spec fail "is stale: 1 of the files and nodes it names are gone ($ROOT/dev/nvidia2)" \
        "sudo systemctl restart gpuslice-cdi.service"
expect nonode driver ok "2 GPUs"
mv "$TMP/nvidia2.saved" "$ROOT/dev/nvidia2"

mv "$ROOT/dev/nvidia-uvm" "$TMP/uvm.saved"
touch "$ROOT/dev/nvidia-uvm"
mv "$ROOT/dev/nvidia0" "$TMP/nvidia0.saved"
mknod "$ROOT/dev/nvidia0" c 195 7
doctor badnodes
expect badnodes device-nodes fail "/dev/nvidia0 (GPU 0) has device number 195:7, not 195:0"
expect badnodes device-nodes fail "/dev/nvidia-uvm is not a character device"
rm -f "$ROOT/dev/nvidia-uvm" "$ROOT/dev/nvidia0"
mv "$TMP/uvm.saved" "$ROOT/dev/nvidia-uvm"
mv "$TMP/nvidia0.saved" "$ROOT/dev/nvidia0"
doctor nodes_back
expect nodes_back device-nodes ok "character devices"

# MIG devices: their /dev/nvidia-caps nodes.
MIG=$(mkroot mig 8gpu-mig.conf)
DROOT=$MIG doctor mig
expect mig device-nodes ok "character devices"
expect mig driver ok "(MIG mode)"
cap=$(find "$MIG/dev/nvidia-caps" -type c -name 'nvidia-cap*' ! -name nvidia-cap1 ! -name nvidia-cap2 | sort | head -1)
rm -f "$cap"
DROOT=$MIG doctor migcap
expect migcap device-nodes fail "MIG device "

# ---- cgroups -----------------------------------------------------------------------------------
CG1=$TMP/cg1
mkdir -p "$CG1" && mount -t tmpfs tmpfs "$CG1" && mkdir "$CG1/devices" "$CG1/unified"
DCG=$CG1 doctor nodevices
expect nodevices cgroups fail "is neither cgroup2 nor a cgroup v1 tree with a devices controller" "hook.no-cgroups = true"
if mount -t cgroup -o devices none "$CG1/devices" 2>/dev/null; then
        DCG=$CG1 doctor v1
        expect_rc v1 0 "cgroup v1 is a warning: exit 0"
        expect v1 cgroups warn "cgroup v1 (legacy hierarchy, devices controller at $CG1/devices)" \
                "boot with systemd.unified_cgroup_hierarchy=1"
        mount -t cgroup2 none "$CG1/unified"
        DCG=$CG1 doctor hybrid
        expect hybrid cgroups warn "hybrid cgroups: v1 controllers (devices at $CG1/devices) beside cgroup2" \
                "systemd.unified_cgroup_hierarchy=1"
else
        echo "SKIP: cgroup v1 and hybrid cases: this kernel does not mount a v1 devices hierarchy"
fi
write_cfg $'[hook]\nno-cgroups = true'
DCG=$TMP/empty doctor nocgroups
expect nocgroups cgroups ok "hook.no-cgroups = true"
write_cfg

# ---- who may ask for GPUs ----------------------------------------------------------------------
# a kubelet here (its device-plugin directory) and the env of unprivileged containers accepted
mkdir -p "$KUBELET/device-plugins"
doctor k8senv
expect k8senv gpu-requests warn "a Kubernetes node ($KUBELET/device-plugins) whose hook and runtime take NVIDIA_VISIBLE_DEVICES from unprivileged containers" \
        "sudo gpuslice runtime configure --kubernetes"
expect_rc k8senv 0 "... a warning: doctor exits 0"
rmdir "$KUBELET/device-plugins"; mkdir -p "$KUBELET/plugins_registry" "$TMP/run-cdi"
doctor k8sdra
expect k8sdra gpu-requests warn "a Kubernetes node ($KUBELET/plugins_registry)" "gpuslice runtime configure --kubernetes"
rmdir "$KUBELET/plugins_registry"; touch "$TMP/run-cdi/gpuslice-k8s.yaml"
doctor k8sspec
expect k8sspec gpu-requests warn "a Kubernetes node ($TMP/run-cdi/gpuslice-k8s.yaml)" "gpuslice runtime configure --kubernetes"
# the config `runtime configure --kubernetes` writes: ok
mkdir -p "$KUBELET/device-plugins"
"$GS" runtime configure --kubernetes --host-config "$CFG" >/dev/null || not_ok "runtime configure --kubernetes on the doctor's config"
doctor k8ssafe
expect k8ssafe gpu-requests ok "NVIDIA_VISIBLE_DEVICES of unprivileged containers is refused; volume mounts are accepted (Kubernetes: $KUBELET/device-plugins"
# the device plugin's answers the hook would refuse: pods without GPUs
write_cfg $'[hook]\naccept-nvidia-visible-devices-envvar-when-unprivileged = false' 'allocate = "env"'
doctor k8sdpenv
expect k8sdpenv gpu-requests fail 'device-plugin.allocate = "env", which the hook refuses from unprivileged containers' 'allocate = "volume-mounts"'
write_cfg '' 'allocate = "volume-mounts"'
doctor k8sdpvol
expect k8sdpvol gpu-requests fail 'device-plugin.allocate = "volume-mounts", which the hook ignores' "gpuslice runtime configure --kubernetes"
rm -rf "$KUBELET" "$TMP/run-cdi"
write_cfg

# ---- runtime hooks -----------------------------------------------------------------------------
DHOOKS=$TMP/empty doctor nohook
expect_rc nohook 1 "no hooks.d file: exit 1"
expect nohook oci-hook fail "no hooks.d file runs gpuslice (looked in $TMP/empty)" \
        "install oci-gpuslice-hook.json (packaging/oci-gpuslice-hook.json in the source) into /usr/share/containers/oci/hooks.d/"

H2=$TMP/hooks2.d
mkdir -p "$H2"
jq 'del(.hook.env)' "$HOOKS/oci-gpuslice-hook.json" >"$H2/oci-gpuslice-hook.json"
DHOOKS=$H2 doctor noenv
expect noenv oci-hook warn "has no \"env\": the runtime may hand the hook the image's environment (CVE-2025-23266)" \
        "PATH=/usr/sbin:/usr/bin:/sbin:/bin"
jq '.hook.path = "/nonexistent/gpuslice"' "$HOOKS/oci-gpuslice-hook.json" >"$H2/oci-gpuslice-hook.json"
DHOOKS=$H2 doctor gonehook
expect gonehook oci-hook fail "runs /nonexistent/gpuslice, which does not exist" "reinstall gpuslice"
mkdir -p "$TMP/nvidia"
printf '#!/bin/sh\nexit 0\n' >"$TMP/nvidia/nvidia-container-runtime-hook"
chmod 755 "$TMP/nvidia/nvidia-container-runtime-hook"
cp "$HOOKS/oci-gpuslice-hook.json" "$H2/oci-gpuslice-hook.json"
jq --arg p "$TMP/nvidia/nvidia-container-runtime-hook" '.hook.path = $p' "$HOOKS/oci-gpuslice-hook.json" \
        >"$H2/oci-nvidia-hook.json"
DHOOKS=$H2 doctor nvidiahook
expect nvidiahook oci-hook warn "oci-nvidia-hook.json runs NVIDIA's own hook $TMP/nvidia/nvidia-container-runtime-hook too"
rm "$H2/oci-nvidia-hook.json"
cp "$HOOKS/oci-gpuslice-hook.json" "$H2/zz-again.json"
DHOOKS=$H2 doctor twice
expect twice oci-hook warn "oci-gpuslice-hook.json and $H2/zz-again.json both run gpuslice"

ln -sf "$TMP/nvidia/nvidia-container-runtime-hook" "$HOOKBIN"
doctor dockernv
expect dockernv docker-hook warn "docker run --gpus runs $HOOKBIN, which is not gpuslice" "remove NVIDIA's hook"
ln -sf /nonexistent/gpuslice "$HOOKBIN"
doctor dockergone
expect dockergone docker-hook fail "$HOOKBIN cannot be run (a dangling link?)" "sudo ln -sf $(readlink -f "$BUILD")/gpuslice-hook $HOOKBIN"
ln -sf "$GS" "$HOOKBIN"
doctor dockerold
expect dockerold docker-hook ok "docker run --gpus runs $HOOKBIN (gpuslice: $(readlink -f "$GS"))"
ln -sf "$BUILD/gpuslice-hook" "$HOOKBIN"

# ---- the engines' runtime shim -------------------------------------------------------------------
DENGINE=$TMP/ctd-plain.toml doctor ctdplain
expect ctdplain engines warn "containerd ($TMP/ctd-plain.toml) has no nvidia runtime" \
        "sudo gpuslice runtime configure --runtime containerd --config $TMP/ctd-plain.toml"
sed "s|/usr/local/sbin/nvidia-container-runtime|$TMP/gone/nvidia-container-runtime|" "$TMP/ctd-ok.toml" >"$TMP/ctd-gone.toml"
DENGINE=$TMP/ctd-gone.toml doctor ctdgone
expect ctdgone engines fail "runs $TMP/gone/nvidia-container-runtime as its nvidia runtime, which is missing" \
        "runtime configure --runtime containerd --config $TMP/ctd-gone.toml --path"
expect_rc ctdgone 1 "a missing shim fails doctor"
run dockerfix -- "$GS" runtime configure --runtime docker --config "$TMP/daemon.json" --path /usr/local/sbin/nvidia-container-runtime
run ctdfixed -- "$GS" --root "$ROOT" doctor --config "$CFG" --hooks-dir "$HOOKS" --cdi-spec "$SPEC" --cgroup-root "$CG" \
        --engine-config "docker=$TMP/daemon.json" --engine-config "containerd=$TMP/ctd-plain.toml" --json
expect ctdfixed engines warn "containerd ($TMP/ctd-plain.toml) has no nvidia runtime" "--runtime containerd"
got=$(field ctdfixed message engines)
[[ $got != *docker* ]] && ok "a docker daemon.json with the shim registered is not reported" || not_ok "engines: $got"
# the fix doctor prints, run: doctor is then content
"$GS" runtime configure --runtime containerd --config "$TMP/ctd-plain.toml" --path /usr/local/sbin/nvidia-container-runtime >/dev/null
DENGINE=$TMP/ctd-plain.toml doctor ctdafter
expect ctdafter engines ok "containerd ($TMP/ctd-plain.toml) runs /usr/local/sbin/nvidia-container-runtime"

# ---- CDI spec ----------------------------------------------------------------------------------
"$GS" --root "$ROOT" cdi generate --hook-path /nonexistent/gpuslice --output "$TMP/cdi/badhook.yaml" 2>/dev/null
DSPEC=$TMP/cdi/badhook.yaml doctor cdihook
expect cdihook cdi-spec fail "its hooks run /nonexistent/gpuslice, which cannot be run"
DSPEC=$TMP/cdi/missing.yaml doctor cdimissing
expect cdimissing cdi-spec fail "$TMP/cdi/missing.yaml: " "regenerate it"
# A driver update: the same root rebuilt with another version; the spec names the old files.
sed 's/^driver 580\.159\.04/driver 580.200.01/' "$SRC/tests/fakegpu/configs/2gpu.conf" >"$TMP/2gpu-new.conf"
"$MKROOT" --build "$BUILD" --force "$TMP/2gpu-new.conf" "$ROOT" >"$TMP/mkroot-new.log" 2>&1 || { cat "$TMP/mkroot-new.log"; exit 1; }
doctor stale
expect_rc stale 1 "a stale CDI spec: exit 1"
expect stale driver ok "NVIDIA driver 580.200.01"
expect stale cdi-spec fail "of the files and nodes it names are gone ($ROOT/lib/firmware/nvidia/580.159.04/" \
        "sudo systemctl restart gpuslice-cdi.service"
expect stale cdi-spec fail "$SPEC is stale: "
expect stale cdi-spec fail "of the driver's ($ROOT/lib/firmware/nvidia/580.200.01/"
"$GS" --root "$ROOT" cdi generate --output "$SPEC" 2>/dev/null
doctor regenerated
expect regenerated cdi-spec ok "current"

# ---- host config, interposer, regions directory ------------------------------------------------
printf '[slice]\nregions-dir = "%s"\n[hook]\nfoo = 1\n' "$REG" >"$CFG"
doctor badcfg
expect_rc badcfg 1 "an invalid host config: exit 1"
expect badcfg config fail "$CFG:4: unknown key 'hook.foo' (the hook refuses to run" "gpuslice.conf(5)"
write_cfg 'library = "/nonexistent/libgpuslice-vgpu.so"'
doctor nolib
expect nolib interposer fail "slice library /nonexistent/libgpuslice-vgpu.so: not a readable file" "slice.library"
write_cfg
chmod 0777 "$REG"
doctor openreg
expect openreg regions-dir fail "$REG is writable by others (mode 0777" "sudo chown root:root $REG && sudo chmod 0755 $REG"
chmod 0755 "$REG"
mkdir "$REG/gone-container" "$REG/live-container"
echo "999999999 1" >"$REG/gone-container/owner"
echo "$$ $(awk '{ sub(/.*\) /, ""); print $20 }' /proc/$$/stat)" >"$REG/live-container/owner"
doctor deadslice
expect deadslice regions-dir warn "$REG: 1 slice directory of containers that are gone (gone-container), 1 live" \
        "every hook run (the next container start) removes them"
rm -rf "$REG/gone-container" "$REG/live-container"
rm -rf "$REG"
doctor noreg
expect noreg regions-dir ok "$REG does not exist yet"
mkdir -m 0755 "$REG"

# ---- MPS ---------------------------------------------------------------------------------------
U0=GPU-2f8c1d4e-7a90-3b5c-e6d1-0a9b8c7d6e5f
if "$GS" --root "$ROOT" mps start --device 0 --mps-root "$TMP/mps" >"$TMP/mpsstart.log" 2>&1; then
        doctor mpsup
        expect mpsup mps ok "MPS daemons under $TMP/mps: GPU 0 (pid "
        pid=$(cat "$TMP/mps/$U0/pipe/nvidia-cuda-mps-control.pid")
        kill -STOP "$pid"
        doctor mpsstuck
        expect mpsstuck mps warn "GPU 0's MPS daemon (pid $pid) does not answer" \
                "sudo gpuslice mps stop --device 0; sudo gpuslice mps start --device 0"
        kill -CONT "$pid"
        "$GS" --root "$ROOT" mps stop --mps-root "$TMP/mps" >/dev/null 2>&1
else
        not_ok "mps start for the MPS checks: $(cat "$TMP/mpsstart.log")"
fi
finish
