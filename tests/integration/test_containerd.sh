#!/usr/bin/env bash
# The runtime shim under a REAL containerd (Debian 12's 1.6), started here with its own root,
# state and socket: a busybox image imported from a tarball built here (an OCI image layout),
# `ctr run` with the shim as the runc binary (legacy mode: GPU 0 and a 1 GiB slice inside; a
# container that asks for no GPU runs untouched), and `gpuslice runtime configure --runtime
# containerd` on a copy of `containerd config default`, which containerd then loads with the
# nvidia handler (BinaryName the shim) and serves; then its CRI service as a kubelet drives it
# (tests/integration/cri/cri_client.py, python3-grpcio): a pod on the handler "nvidia" whose
# container sees GPU 0 and its slice's quota, and the same pod on the default handler without.
. "$(dirname "$0")/lib.sh"
. "$SRC/tests/integration/bundle.sh"

need containerd ctr jq sha256sum tar "$RUNC"
[ -x "$GS" ] || { not_ok "$GS is not built"; finish; }

DRV=$(mkroot drv 2gpu.conf)
SLICES=$TMP/slices
CONF=$TMP/hook.toml
hook_config "$CONF" "$DRV" "$SLICES"
printf '\n[runtime]\nmode = "legacy"\nruntimes = ["%s"]\n' "$RUNC" >>"$CONF"
mkdir -p "$TMP/bin" "$TMP/ctd"
ln -s "$BUILD/gpuslice-runtime" "$TMP/bin/nvidia-container-runtime"
SHIM=$TMP/bin/nvidia-container-runtime
SOCK=$TMP/ctd/containerd.sock
NS=gpuslice-test
CTD_PID=
cleanup() {
        if [ -n "$CTD_PID" ]; then
                for c in $(ctr -a "$SOCK" -n "$NS" tasks ls -q 2>/dev/null); do ctr -a "$SOCK" -n "$NS" tasks kill -s KILL "$c" >/dev/null 2>&1; done
                kill "$CTD_PID" 2>/dev/null; wait "$CTD_PID" 2>/dev/null
        fi
        umount -R "$TMP/ctd" 2>/dev/null
        rm -rf "$TMP"
}
trap cleanup EXIT
ctr_() { ctr -a "$SOCK" -n "$NS" "$@"; }

# 1. runtime configure on the config containerd ships (config default), then containerd reads it
containerd config default >"$TMP/config.toml"
cp "$TMP/config.toml" "$TMP/config.orig.toml"
run cfg -- "$GS" runtime configure --runtime containerd --config "$TMP/config.toml" --path "$SHIM"
expect_rc cfg 0 "runtime configure --runtime containerd on containerd's default config"
expect_out_has cfg "set $TMP/config.toml: [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia.options] BinaryName = \"$SHIM\"" "... says what it set"
lines_gone=$(diff "$TMP/config.orig.toml" "$TMP/config.toml" | grep -c '^<')
check "... keeps every line of the default config" [ "$lines_gone" = 0 ]
check "... and backs it up" [ -n "$(ls "$TMP"/config.toml.*.bak 2>/dev/null)" ]
run dump -- containerd --config "$TMP/config.toml" config dump
expect_rc dump 0 "containerd parses the configured file"
got=$(awk '/^ *\[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options\]/ { o = 1; next } o && /^ *\[/ { o = 0 } o && /BinaryName/ { print $3 }' "$TMP/dump.out")
check "... and sees the nvidia handler with BinaryName the shim" [ "$got" = "\"$SHIM\"" ]
got=$(awk '/^ *\[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia\]/ { o = 1; next } o && /^ *\[/ { o = 0 } o && /runtime_type/ { print $3 }' "$TMP/dump.out")
check "... runtime_type io.containerd.runc.v2" [ "$got" = '"io.containerd.runc.v2"' ]
before=$(sha256sum <"$TMP/config.toml")
run cfg2 -- "$GS" runtime configure --runtime containerd --config "$TMP/config.toml" --path "$SHIM"
expect_rc cfg2 0 "runtime configure again"
expect_out_has cfg2 "$TMP/config.toml: unchanged" "... says nothing changed"
check "... and the file is byte-identical (idempotent)" [ "$(sha256sum <"$TMP/config.toml")" = "$before" ]

# containerd itself, on that file with its own root, state and socket; its CRI plugin with the
# native snapshotter, no AppArmor profile, oom_score_adj not below containerd's own (a sandbox
# of this machine may not lower it: runc init would fail), and the pause image built here (sed on
# the test's copy)
PAUSE=gpuslice.test/pause:1
sed -i -e "s|^root = .*|root = \"$TMP/ctd/root\"|" -e "s|^state = .*|state = \"$TMP/ctd/state\"|" \
        -e "s|^  address = \"/run/containerd/containerd.sock\"|  address = \"$SOCK\"|" \
        -e 's|^\( *\)snapshotter = "overlayfs"|\1snapshotter = "native"|' -e 's|^\( *\)disable_apparmor = false|\1disable_apparmor = true|' \
        -e 's|^\( *\)restrict_oom_score_adj = false|\1restrict_oom_score_adj = true|' \
        -e "s|^\( *\)sandbox_image = .*|\1sandbox_image = \"$PAUSE\"|" "$TMP/config.toml"
GPUSLICE_CONFIG=$CONF containerd --config "$TMP/config.toml" >"$TMP/containerd.log" 2>&1 &
CTD_PID=$!
for _ in $(seq 100); do ctr -a "$SOCK" version >/dev/null 2>&1 && break; sleep 0.1; done
run ver -- ctr -a "$SOCK" version
expect_rc ver 0 "containerd started on its own socket"

# 2. the images: tarballs built here (an OCI image layout, one uncompressed layer): busybox with
#    /check.sh, and a pause image (the same layer, a shell that waits) for the CRI's sandboxes
IMG=$TMP/img
make_rootfs "$IMG/rootfs"
tar -C "$IMG/rootfs" --numeric-owner -cf "$IMG/layer.tar" .
# make_image NAME REF CONFIG-JSON: $IMG/NAME.tar
make_image() {
        local L=$IMG/$1 d s cd_ cs md ms
        mkdir -p "$L/blobs/sha256"
        blob() { local x; x=$(sha256sum <"$1" | cut -d' ' -f1); cp "$1" "$L/blobs/sha256/$x"; echo "$x"; }
        d=$(blob "$IMG/layer.tar"); s=$(stat -c %s "$IMG/layer.tar")
        jq -n --arg d "sha256:$d" --argjson c "$3" '{architecture: "amd64", os: "linux",
                rootfs: {type: "layers", diff_ids: [$d]}, config: $c}' >"$IMG/$1.config.json"
        cd_=$(blob "$IMG/$1.config.json"); cs=$(stat -c %s "$IMG/$1.config.json")
        jq -n --arg c "sha256:$cd_" --argjson cs "$cs" --arg l "sha256:$d" --argjson ls "$s" '{schemaVersion: 2,
                mediaType: "application/vnd.oci.image.manifest.v1+json",
                config: {mediaType: "application/vnd.oci.image.config.v1+json", digest: $c, size: $cs},
                layers: [{mediaType: "application/vnd.oci.image.layer.v1.tar", digest: $l, size: $ls}]}' >"$IMG/$1.manifest.json"
        md=$(blob "$IMG/$1.manifest.json"); ms=$(stat -c %s "$IMG/$1.manifest.json")
        jq -n --arg m "sha256:$md" --argjson ms "$ms" --arg ref "$2" '{schemaVersion: 2, manifests: [{
                mediaType: "application/vnd.oci.image.manifest.v1+json", digest: $m, size: $ms,
                annotations: {"io.containerd.image.name": $ref, "org.opencontainers.image.ref.name": "latest"}}]}' >"$L/index.json"
        echo '{"imageLayoutVersion": "1.0.0"}' >"$L/oci-layout"
        tar -C "$L" -cf "$IMG/$1.tar" .
}
REF=docker.io/library/gs-busybox:latest
make_image busybox "$REF" '{"Cmd": ["/bin/sh"], "Env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"]}'
make_image pause "$PAUSE" '{"Entrypoint": ["/bin/sh", "-c", "trap \"exit 0\" TERM INT; while :; do sleep 3600 & wait; done"]}'
run import -- ctr_ images import --snapshotter native "$IMG/busybox.tar"
expect_rc import 0 "ctr images import of the busybox tarball"
for i in busybox pause; do
        run "import-k8s-$i" -- ctr -a "$SOCK" -n k8s.io images import --snapshotter native "$IMG/$i.tar"
        expect_rc "import-k8s-$i" 0 "the $i image imported for the CRI (namespace k8s.io)"
done

# ctr_run NAME [ctr run options...]: /check.sh in a container through the shim (60 s at most)
ctr_run() {
        local n=$1; shift
        run "$n" -- timeout 60 ctr -a "$SOCK" -n "$NS" run --rm --snapshotter native --runc-binary "$SHIM" \
                --cgroup "/gs-ctd-$$-$n" "$@" "$REF" "gs-$$-$n" /bin/sh /check.sh
}

# 3. no GPU asked: the container runs, nothing of the driver
ctr_run plain
expect_done plain "ctr run through the shim, no GPU asked"
expect_nothing plain "ctr run, no GPU asked"

# 4. NVIDIA_VISIBLE_DEVICES=0 and a 1 GiB slice: GPU 0, the driver's files and the quota inside
ctr_run gpu --env NVIDIA_VISIBLE_DEVICES=0 --env GPUSLICE_MEMORY_LIMIT=1Gi --env EXPECT_TOTAL_MIB=1024
expect_done gpu "ctr run through the shim, NVIDIA_VISIBLE_DEVICES=0 and a 1 GiB slice"
expect_gpu0 gpu "containerd"
expect_slice gpu "containerd slice" 1Gi 1024

# 5. The CRI, as a kubelet drives it (cri_client.py, python3-grpcio): RunPodSandbox with the runtime
#    handler "nvidia" that runtime configure registered (host network, the pause image built here),
#    CreateContainer with NVIDIA_VISIBLE_DEVICES=0 and a 1 GiB slice: GPU 0 and the quota inside.
#    The same pod on the default handler (runc itself): no GPU, which shows the handler did it.
PY=/usr/bin/python3
if ! "$PY" -c 'import grpc, grpc_tools.protoc' 2>/dev/null; then
        not_ok "$PY cannot import grpc and grpc_tools (make test-deps: python3-grpcio python3-grpc-tools)"
        finish
fi
# cri_pod NAME HANDLER: the pod; the container's output (the CRI log's text) in $TMP/NAME.out
cri_pod() {
        local n=$1 h=$2
        mkdir -p "$TMP/cri-$n"
        run "$n.cri" -- timeout 120 "$PY" "$SRC/tests/integration/cri/cri_client.py" --socket "$SOCK" \
                --proto-dir "$SRC/tests/integration/cri" --handler "$h" --image "$REF" --log-dir "$TMP/cri-$n" \
                --cgroup-parent "/gs-cri-$$-$n" --env NVIDIA_VISIBLE_DEVICES=0 --env GPUSLICE_MEMORY_LIMIT=1Gi \
                --env EXPECT_TOTAL_MIB=1024 -- /bin/sh /check.sh
        jq -r '"\(.state) \(.exit_code) \(.error // "")"' "$TMP/$n.cri.out" 2>/dev/null >"$TMP/$n.status"
        cut -d' ' -f4- "$TMP/cri-$n/gpu.log" >"$TMP/$n.out" 2>/dev/null
        cp "$TMP/$n.cri.err" "$TMP/$n.err"
        [ "$(cat "$TMP/$n.status")" = "CONTAINER_EXITED 0 " ] && echo 0 >"$TMP/$n.rc" || echo 1 >"$TMP/$n.rc"
        echo "# CRI $n: $(cat "$TMP/$n.cri.out" "$TMP/$n.cri.err" | tr '\n' ' ' | head -c 600)"
}
cri_pod crigpu nvidia
expect_done crigpu "CRI: RunPodSandbox (handler nvidia, host network) + CreateContainer with NVIDIA_VISIBLE_DEVICES=0 and a 1 GiB slice"
check "CRI: containerd's CRI answered Version" grep -q '"runtime": "containerd' "$TMP/crigpu.cri.out"
expect_gpu0 crigpu "CRI (handler nvidia)"
expect_slice crigpu "CRI (handler nvidia) slice" 1Gi 1024
cri_pod cridefault ""
expect_done cridefault "CRI: the same pod on the default handler (runc)"
expect_nothing cridefault "CRI default handler: the env alone gives no GPU"
finish
