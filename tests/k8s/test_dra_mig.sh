#!/usr/bin/env bash
# gpuslice dra-plugin (issue 33, item 3): shares of MIG devices, against the fake API server and
# the kubelet's side (dra_lib.sh), on the simulated 8-GPU machine whose GPU 2 is in MIG mode
# (tests/fakegpu/configs/8gpu-mig.conf: gpu-2-mig-2 is a 1g.10gb instance of 9856 MiB):
#   1. the ResourceSlice: each MIG device with consumable capacity as a GPU has (memory = the
#      instance's, 1 Mi steps; compute 100, 1 % steps; multiple allocations);
#   2. two share claims of one MIG device (4 Gi / 30 % and 4 Gi / 40 %) prepared: their specs give
#      the MIG device's nodes and a slice hook naming the MIG device (--gpu=MIG-...);
#   3. a third (2 Gi) refused as over-committed against the MIG device's own 9856 MiB, also
#      after a torn checkpoint (rebuilt from the shares' specs, their shareIDs from their
#      references); a share of more than the instance refused;
#   4. the shares' usage on their claims (status.devices[].data, from regions region_tool writes),
#      from their rebuilt entries (not prepared again): the MIG device's, clamped to the
#      instance's memory;
#   5. the first share's spec run by podman with runc (the fake driver shows the container only the
#      devices whose nodes it has, as the real one does: FAKEGPU_DEVICE_NODES=1; the slice hook
#      reads the simulated host's driver root, so the container's GPUs come from the host's MIG
#      devices and the container's /dev/nvidia-caps nodes, as on a node): its one CUDA device is
#      the MIG device, at the share's 4096 MiB, an allocation past it refused.
#
# The mutation check (tests/mutation/run.sh) runs this test up to the check meant for its
# mutations (dramigcap, dramigbooks, dramigusage, dramigdevs): their checks come in that order.
. "$(dirname "$0")/../integration/lib.sh"
. "$SRC/tests/integration/bundle.sh"
. "$SRC/tests/k8s/lib.sh"
. "$SRC/tests/k8s/dra_lib.sh"

OWNER_PID=
dra_cleanup_more() {
        [ -n "$OWNER_PID" ] && kill "$OWNER_PID" 2>/dev/null
        if [ -d "$TMP/podman-root" ]; then pod rm -af -t 0 >/dev/null 2>&1; fi
}
DRA_CONF=8gpu-mig.conf dra_setup
start_apiserver "$API_STATE" "$TMP/kubeconfig"
start_dra "$TMP/dra.log" -c "$TMP/dra.toml" --driver-name "$DRIVER" --kubeconfig "$TMP/kubeconfig" --node "$NODE" \
        --cdi-dir "$CDI_DIR" --plugin-dir "$PLUG" --registry-dir "$REG"
SOCK=$PLUG/dra.sock SLICE=$API_STATE/slices/$NODE-$DRIVER.json
MIG2=MIG-d41f6a2c-8e3b-5b9d-a07e-6c2f4a1e8d53 # gpu-2-mig-2: GI 9, CI 0, 9856 MiB
# its CI's access node: minor 3 + 135 * 2 + 9 * 9 + 1 + 0 (tests/fakegpu/mkroot.sh)
CI_NODE=/dev/nvidia-caps/nvidia-cap355

# ---------------------------------------------------------------------------------------------
# 1. The ResourceSlice

if wait_for 20 test -s "$SLICE" && jq -e '.spec.devices | map(select(.name == "gpu-2-mig-2"))[0]
        | .attributes.uuid.string == "'"$MIG2"'" and .allowMultipleAllocations == true
          and .capacity.memory == {value: "9856Mi", requestPolicy: {default: "9856Mi", validRange: {min: "1Mi", max: "9856Mi", step: "1Mi"}}}
          and .capacity.compute == {value: "100", requestPolicy: {default: "100", validRange: {min: "1", max: "100", step: "1"}}}' \
        "$SLICE" >/dev/null && [ ! -s "$API_STATE/invalid.log" ]; then
        ok "ResourceSlice: a MIG device (gpu-2-mig-2) with consumable memory (its instance's 9856Mi, 1 Mi steps) and compute (100, 1 % steps), multiple allocations"
else not_ok "MIG device in the slice: $(jq -c '.spec.devices | map(select(.name == "gpu-2-mig-2"))' "$SLICE" 2>&1 | head -c 600) $(head -2 "$API_STATE/invalid.log" 2>/dev/null)"; fi

# ---------------------------------------------------------------------------------------------
# 2. Two shares of gpu-2-mig-2

UA=a1000000-0000-4000-8000-00000000000a UB=b1000000-0000-4000-8000-00000000000b
SA=5f1c9d1e-0000-4000-8000-0000000000a1 SB=5f1c9d1e-0000-4000-8000-0000000000b1
share() { # NAME UID SHAREID MEMORY COMPUTE
        claim_json ml "$1" "$2" "$DRIVER" "[{\"request\": \"gpu\", \"driver\": \"$DRIVER\", \"pool\": \"$NODE\",
                \"device\": \"gpu-2-mig-2\", \"shareID\": \"$3\", \"consumedCapacity\": {\"memory\": \"$4\", \"compute\": \"$5\"}}]"
}
share mig-a "$UA" "$SA" 4Gi 30
share mig-b "$UB" "$SB" 4Gi 40
wait_for 10 test -S "$SOCK"
dra prepare "$SOCK" v1 "ml/mig-a/$UA" "ml/mig-b/$UB"
kexpect "two shares of one MIG device (4 Gi / 30 %, 4 Gi / 40 % of gpu-2-mig-2's 9856 MiB) prepared, each share_id echoed" \
        ".ok and .claims[\"$UA\"].devices == [{\"request_names\": [\"gpu\"], \"pool_name\": \"$NODE\", \"device_name\": \"gpu-2-mig-2\",
          \"cdi_device_ids\": [\"$KIND=$UA-gpu-2-mig-2\"], \"share_id\": \"$SA\"}]
         and .claims[\"$UB\"].devices[0].share_id == \"$SB\" and (.claims[\"$UB\"].error // \"\") == \"\""
SPECA=$CDI_DIR/$DRIVER-claim-$UA.json
jq -e '.devices[0].containerEdits | ([.deviceNodes[].path] | index("/dev/nvidia2") != null and index("'"$CI_NODE"'") != null
                and index("/dev/nvidia0") == null)
        and ([.hooks[] | select(.hookName == "createRuntime") | .args[]] | index("--gpu='"$MIG2"'") != null
             and index("--memory=4Gi") != null and index("--compute-share=30") != null)' "$SPECA" >/dev/null &&
        ok "... the first share's spec: the MIG device's nodes (its parent's, its CI's $CI_NODE), its slice hook names the MIG device (--gpu=$MIG2) with 4Gi / 30 %" ||
        not_ok "MIG share spec: $(jq -c '.devices[0].containerEdits | {deviceNodes, hooks}' "$SPECA" 2>&1 | head -c 700)"

# ---------------------------------------------------------------------------------------------
# 3. The MIG device's own books

claim_json ml mig-c c1000000-0000-4000-8000-00000000000c "$DRIVER" "$(res gpu-2-mig-2 "" '{"memory": "2Gi", "compute": "10"}')"
bad mig-c c1000000-0000-4000-8000-00000000000c \
        "gpu-2-mig-2 would be over-committed: the claim consumes 2Gi and 10 %, the claims prepared on this node hold 8Gi and 70 % of its 9856Mi" \
        "a third share (2 Gi) beside 8 Gi prepared on the 9856 MiB MIG device" Overcommitted
# a checkpoint torn by a crash: the MIG shares' books rebuilt from their specs (the device, the
# hook's --memory and --compute-share), the third share still refused
printf '{"version": 1, "claims": {"%s": {"na' "$UA" >"$PLUG/torn.json" && mv "$PLUG/torn.json" "$PLUG/checkpoint.json"
bad mig-c c1000000-0000-4000-8000-00000000000c "gpu-2-mig-2 would be over-committed: the claim consumes 2Gi and 10 %, the claims prepared on this node hold 8Gi and 70 %" \
        "after a torn checkpoint, the third share again" Overcommitted
jq -e --arg a "$UA" --arg b "$UB" --arg sa "$SA" --arg sb "$SB" '
        (.claims[$a].devices == [{device: "gpu-2-mig-2", pool: "'"$NODE"'", memory: 4294967296, compute: 30, share_id: $sa}])
        and (.claims[$b].devices == [{device: "gpu-2-mig-2", pool: "'"$NODE"'", memory: 4294967296, compute: 40, share_id: $sb}])' \
        "$PLUG/checkpoint.json" >/dev/null &&
        ok "... the checkpoint rebuilt from the MIG shares' specs (gpu-2-mig-2: 4 Gi / 30 %, 4 Gi / 40 %, their shareIDs from their references)" ||
        not_ok "checkpoint rebuilt: $(head -c 500 "$PLUG/checkpoint.json")"
# (the shares stay as rebuilt, not prepared again: section 4's usage is written from these entries)
claim_json ml mig-big d1000000-0000-4000-8000-00000000000d "$DRIVER" "$(res gpu-2-mig-0 "" '{"memory": "40Gi", "compute": "10"}')"
bad mig-big d1000000-0000-4000-8000-00000000000d "of gpu-2-mig-0, which has" "a share of 40 Gi of a 40192 MiB MIG device (more than its instance)" PrepareFailed

# ---------------------------------------------------------------------------------------------
# 4. The shares' usage on their claims (status.devices[].data; their regions as a tenant could
#    leave them, written by region_tool): the MIG device's, clamped to the instance's memory

stop_dra
REGIONS=$TMP/regions
mkdir -p "$REGIONS"
printf '[driver]\nroot = "%s"\n\n[slice]\nregions-dir = "%s"\n' "$DRV" "$REGIONS" >"$TMP/dra-usage.toml"
start_dra "$TMP/dra-u.log" -c "$TMP/dra-usage.toml" --driver-name "$DRIVER" --kubeconfig "$TMP/kubeconfig" --node "$NODE" \
        --cdi-dir "$CDI_DIR" --plugin-dir "$PLUG" --registry-dir "$REG" --status-period 0.3
dra_slice_owner
# slice ID CLAIM USED: a container's slice directory of CLAIM (its owner a live process, the labels
# its spec gave the hook) and its region: one device (the MIG device, as the interposer names it in
# a CDI container: GPU-<its hex>), a 4 Gi quota, USED bytes in use
slice() {
        dra_slice_dir "$1" "$2"
        "$BUILD/tests/region_tool" share "$REGIONS/$1/usage" "GPU-${MIG2#MIG-}" 4294967296 "$3" 0 0 0 0 || not_ok "region_tool share"
}
slice c-a mig-a 3221225472
slice c-b mig-b 18446744073709551615
# data CLAIM JQ: our entry's data on the claim satisfies JQ
data() { jq -e --arg d "$DRIVER" "[.status.devices // [] | .[] | select(.driver == \$d) | .data // empty] | .[0] // {} | $2" \
        "$API_STATE/claims/ml/$1.json" >/dev/null 2>&1; }
if wait_for 10 data mig-a '.memory.usedBytes == 3221225472' && data mig-a '.memory.limitBytes == 4294967296 and .compute.limitPercent == 30'; then
        ok "a MIG share's usage on its claim: 3 of its 4 Gi, its 30 %"
else not_ok "MIG share usage: $(jq -c '.status.devices' "$API_STATE/claims/ml/mig-a.json" 2>&1 | head -c 500); $(tail -2 "$TMP/dra-u.log")"; fi
if wait_for 10 data mig-b '.memory.usedBytes != null' && data mig-b '.memory.usedBytes == 10334765056 and .memory.peakBytes == 10334765056'; then
        ok "a MIG share's region claiming 2^64-1 bytes in use: clamped to the instance's 9856 MiB (not the GPU's 80 GiB)"
else not_ok "MIG share usage clamped: $(jq -c '.status.devices' "$API_STATE/claims/ml/mig-b.json" 2>&1 | head -c 500)"; fi
kill "$OWNER_PID" 2>/dev/null; OWNER_PID=

# ---------------------------------------------------------------------------------------------
# 5. The share in a container

PODMAN=$(command -v podman || true)
if [ -z "$PODMAN" ] || ! [ -x "$RUNC" ]; then
        not_ok "podman or runc is not installed (make test-deps): the MIG share's spec was not run as a container"
        finish
fi
# (the spec as the plugin wrote it: its slice hook reads the simulated host's driver root, which
# it names, --driver-root; the container's GPUs then come from the host's MIG devices and the
# container's nodes, as on a node)
specs_unleaked "$SPECA"
make_rootfs "$TMP/rootfs-mig"
run c-mig -- pod run --rm --network=none --ulimit nofile=20000:20000 --ulimit nproc=4096:4096 --device "$KIND=$UA-gpu-2-mig-2" \
        -e PROBE_TOTALS=1 -e FAKEGPU_DEVICE_NODES=1 -e EXPECT_TOTAL_MIB=4096 --rootfs "$TMP/rootfs-mig" /bin/sh /check.sh
expect_done c-mig "podman (runc) with the MIG share's CDI device"
expect_fact c-mig "SLICE GPUSLICE_MEMORY_LIMIT=4Gi" "MIG share: slice.conf holds its 4Gi"
expect_fact c-mig "SLICE GPUSLICE_COMPUTE_LIMIT=30" "MIG share: ... and its 30 %"
# the probe prints a device's UUID bytes as GPU-<hex>: the MIG device's hex
expect_fact c-mig "PROBE_T dev 0 GPU-${MIG2#MIG-} total 4096" "MIG share: CUDA device 0 is the MIG device, at the share's 4096 MiB (of 9856)"
expect_fact c-mig "PROBE_T dev 0 over 2" "MIG share: ... an allocation past it refused (out of memory)"
expect_no_fact c-mig "PROBE_T dev 1 over 2" "MIG share: the container shows no other CUDA device"
finish
