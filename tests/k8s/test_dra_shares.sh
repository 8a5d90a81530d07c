#!/usr/bin/env bash
# gpuslice dra-plugin (issue 33, item 3, "several shares"): slice claims of several GPUs in ONE
# real container, run through the plugin's own CDI specs (nothing in them edited), against the
# fake API server and the kubelet's side (dra_lib.sh), on the simulated 2-GPU root. podman with
# runc applies the specs' devices (the fake driver shows the container only the GPUs whose nodes
# it has, as the real one does: FAKEGPU_DEVICE_NODES=1); inside, the interposer probe prints each
# CUDA device's total as cuMemGetInfo shows it and tries an allocation 64 MiB past it:
#   1. two slice claims (gpu-0 4 Gi / 30 %, gpu-1 2 Gi / 50 %), both CDI devices in one
#      container: each GPU its own claim's quota and share, an allocation past each refused;
#   2. one claim with shares of both GPUs (gpu-0 3 Gi / 20 %, gpu-1 1 Gi / 40 %): the same.
# With several slice hooks (--gpu) the hook must read the host's GPUs (the container's GPUs'
# order); the plugin's driver root is not /, as on a node whose driver is under
# /run/nvidia/driver: the specs' slice hooks carry it (--driver-root), as their mounts' host
# paths do, so a hook that reads only the host config (driver root /) still finds the GPUs.
. "$(dirname "$0")/../integration/lib.sh"
. "$SRC/tests/integration/bundle.sh"
. "$SRC/tests/k8s/lib.sh"
. "$SRC/tests/k8s/dra_lib.sh"

dra_cleanup_more() {
        if [ -d "$TMP/podman-root" ]; then pod rm -af -t 0 >/dev/null 2>&1; fi
}
dra_setup
start_apiserver "$API_STATE" "$TMP/kubeconfig"
start_dra "$TMP/dra.log" -c "$TMP/dra.toml" --driver-name "$DRIVER" --kubeconfig "$TMP/kubeconfig" --node "$NODE" \
        --cdi-dir "$CDI_DIR" --plugin-dir "$PLUG" --registry-dir "$REG"
SOCK=$PLUG/dra.sock
# share DEVICE SHAREID MEMORY COMPUTE: one result of a slice claim
share() {
        echo "{\"request\": \"gpu\", \"driver\": \"$DRIVER\", \"pool\": \"$NODE\", \"device\": \"$1\",
                \"shareID\": \"$2\", \"consumedCapacity\": {\"memory\": \"$3\", \"compute\": \"$4\"}}"
}
UA=a3000000-0000-4000-8000-00000000000a UB=b3000000-0000-4000-8000-00000000000b UT=c3000000-0000-4000-8000-00000000000c
claim_json ml s-gpu0 "$UA" "$DRIVER" "[$(share gpu-0 5f1c9d1e-0000-4000-8000-0000000000a3 4Gi 30)]"
claim_json ml s-gpu1 "$UB" "$DRIVER" "[$(share gpu-1 5f1c9d1e-0000-4000-8000-0000000000b3 2Gi 50)]"
claim_json ml tp-2x "$UT" "$DRIVER" "[$(share gpu-0 5f1c9d1e-0000-4000-8000-0000000000c3 3Gi 20),
        $(share gpu-1 5f1c9d1e-0000-4000-8000-0000000000d3 1Gi 40)]"
wait_for 10 test -S "$SOCK"
dra prepare "$SOCK" v1 "ml/s-gpu0/$UA" "ml/s-gpu1/$UB" "ml/tp-2x/$UT"
kexpect "three slice claims prepared: gpu-0 4 Gi / 30 %, gpu-1 2 Gi / 50 %, and one with shares of both (3 Gi / 20 %, 1 Gi / 40 %)" \
        ".ok and .claims[\"$UA\"].devices[0].cdi_device_ids == [\"$KIND=$UA-gpu-0\"]
         and .claims[\"$UB\"].devices[0].cdi_device_ids == [\"$KIND=$UB-gpu-1\"]
         and [.claims[\"$UT\"].devices[].cdi_device_ids[0]] == [\"$KIND=$UT-gpu-0\", \"$KIND=$UT-gpu-1\"]"
# the specs' slice hooks: their GPU, and the driver root the specs' mounts come from
jq -e -s --arg drv "$DRV" '[.[].devices[].containerEdits.hooks[] | select(.hookName == "createRuntime") | .args]
        | length == 4 and all(index("--driver-root=" + $drv) != null)' \
        "$CDI_DIR/$DRIVER-claim-$UA.json" "$CDI_DIR/$DRIVER-claim-$UB.json" "$CDI_DIR/$DRIVER-claim-$UT.json" >/dev/null &&
        ok "... each slice hook in their specs names the driver root their mounts come from (--driver-root=$DRV)" ||
        not_ok "slice hooks' args: $(jq -c '[.devices[].containerEdits.hooks[] | select(.hookName == "createRuntime") | .args]' \
                "$CDI_DIR/$DRIVER-claim-$UT.json" 2>&1 | head -c 600)"

PODMAN=$(command -v podman || true)
if [ -z "$PODMAN" ] || ! [ -x "$RUNC" ]; then
        not_ok "podman or runc is not installed (make test-deps): the claims' specs were not run as a container"
        finish
fi
specs_unleaked "$CDI_DIR/$DRIVER"-claim-*.json
make_rootfs "$TMP/rootfs"
# in_pod NAME CDI-DEVICE...: the check script in a container of those CDI devices
in_pod() {
        local n=$1 a=() d; shift
        for d in "$@"; do a+=(--device "$KIND=$d"); done
        run "$n" -- pod run --rm --network=none --ulimit nofile=20000:20000 --ulimit nproc=4096:4096 "${a[@]}" \
                -e PROBE_TOTALS=1 -e FAKEGPU_DEVICE_NODES=1 --rootfs "$TMP/rootfs" /bin/sh /check.sh
}
# quotas NAME DESC MIB0 PCT0 MIB1 PCT1: slice.conf's per-GPU lines, and CUDA's device 0 (GPU 0)
# and 1 (GPU 1) at their quotas, an allocation past each refused (2: out of memory)
quotas() {
        local n=$1 d=$2
        expect_done "$n" "$d"
        expect_fact "$n" "SLICE GPUSLICE_MEMORY_LIMIT_0=$(($3 / 1024))Gi" "$d: slice.conf: GPU 0's memory $(($3 / 1024))Gi"
        expect_fact "$n" "SLICE GPUSLICE_MEMORY_LIMIT_1=$(($5 / 1024))Gi" "$d: slice.conf: GPU 1's memory $(($5 / 1024))Gi"
        expect_fact "$n" "SLICE GPUSLICE_COMPUTE_LIMIT_0=$4" "$d: slice.conf: GPU 0's share $4 %"
        expect_fact "$n" "SLICE GPUSLICE_COMPUTE_LIMIT_1=$6" "$d: slice.conf: GPU 1's share $6 %"
        expect_fact "$n" "PROBE_T dev 0 $GPU0 total $3" "$d: CUDA device 0 ($GPU0) shows $3 MiB"
        expect_fact "$n" "PROBE_T dev 0 over 2" "$d: ... an allocation past it refused (out of memory)"
        expect_fact "$n" "PROBE_T dev 1 $GPU1 total $5" "$d: CUDA device 1 ($GPU1) shows $5 MiB"
        expect_fact "$n" "PROBE_T dev 1 over 2" "$d: ... an allocation past it refused (out of memory)"
}

# 1. two slice claims, one container
in_pod two "$UA-gpu-0" "$UB-gpu-1"
quotas two "two slice claims in one container (gpu-0 4 Gi / 30 %, gpu-1 2 Gi / 50 %)" 4096 30 2048 50

# 2. one claim with shares of both GPUs
in_pod tp "$UT-gpu-0" "$UT-gpu-1"
quotas tp "one claim with shares of both GPUs (gpu-0 3 Gi / 20 %, gpu-1 1 Gi / 40 %)" 3072 20 1024 40
finish
