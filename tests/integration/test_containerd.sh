#!/usr/bin/env bash
# The runtime shim under a REAL containerd (Debian 12's 1.6), started here with its own root,
# state and socket: a busybox image imported from a tarball built here (an OCI image layout),
# `ctr run` with the shim as the runc binary (legacy mode: GPU 0 and a 1 GiB slice inside; a
# container that asks for no GPU runs untouched), and `gpuslice runtime configure --runtime
# containerd` on a copy of `containerd config default`, which containerd then loads with the
# nvidia handler (BinaryName the shim) and serves.
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
ln -s "$GS" "$TMP/bin/nvidia-container-runtime"
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

# containerd itself, on that file with its own root, state and socket (sed on the test's copy)
sed -i -e "s|^root = .*|root = \"$TMP/ctd/root\"|" -e "s|^state = .*|state = \"$TMP/ctd/state\"|" \
        -e "s|^  address = \"/run/containerd/containerd.sock\"|  address = \"$SOCK\"|" "$TMP/config.toml"
GPUSLICE_CONFIG=$CONF containerd --config "$TMP/config.toml" >"$TMP/containerd.log" 2>&1 &
CTD_PID=$!
for _ in $(seq 100); do ctr -a "$SOCK" version >/dev/null 2>&1 && break; sleep 0.1; done
run ver -- ctr -a "$SOCK" version
expect_rc ver 0 "containerd started on its own socket"

# 2. the image: a tarball built here (OCI image layout, one uncompressed layer)
IMG=$TMP/img
make_rootfs "$IMG/rootfs"
mkdir -p "$IMG/layout/blobs/sha256"
tar -C "$IMG/rootfs" --numeric-owner -cf "$IMG/layer.tar" .
blob() { local d; d=$(sha256sum <"$1" | cut -d' ' -f1); cp "$1" "$IMG/layout/blobs/sha256/$d"; echo "$d"; }
ld=$(blob "$IMG/layer.tar"); ls_=$(stat -c %s "$IMG/layer.tar")
jq -n --arg d "sha256:$ld" '{architecture: "amd64", os: "linux", rootfs: {type: "layers", diff_ids: [$d]},
        config: {Cmd: ["/bin/sh"], Env: ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"]}}' >"$IMG/config.json"
cd_=$(blob "$IMG/config.json"); cs=$(stat -c %s "$IMG/config.json")
jq -n --arg c "sha256:$cd_" --argjson cs "$cs" --arg l "sha256:$ld" --argjson ls "$ls_" '{schemaVersion: 2,
        mediaType: "application/vnd.oci.image.manifest.v1+json",
        config: {mediaType: "application/vnd.oci.image.config.v1+json", digest: $c, size: $cs},
        layers: [{mediaType: "application/vnd.oci.image.layer.v1.tar", digest: $l, size: $ls}]}' >"$IMG/manifest.json"
md=$(blob "$IMG/manifest.json"); ms=$(stat -c %s "$IMG/manifest.json")
jq -n --arg m "sha256:$md" --argjson ms "$ms" '{schemaVersion: 2, manifests: [{mediaType: "application/vnd.oci.image.manifest.v1+json",
        digest: $m, size: $ms, annotations: {"io.containerd.image.name": "docker.io/library/gs-busybox:latest",
        "org.opencontainers.image.ref.name": "latest"}}]}' >"$IMG/layout/index.json"
echo '{"imageLayoutVersion": "1.0.0"}' >"$IMG/layout/oci-layout"
tar -C "$IMG/layout" -cf "$IMG/image.tar" .
run import -- ctr_ images import --snapshotter native "$IMG/image.tar"
expect_rc import 0 "ctr images import of the busybox tarball"
REF=docker.io/library/gs-busybox:latest

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
finish
