#!/usr/bin/env bash
# gpuslice dra-plugin against a fake API server (fake_apiserver.py: HTTPS, a certificate made here,
# a bearer token, what the plugin writes checked against resource.k8s.io/v1's schema) and the
# kubelet's side (fake_dra_kubelet.py, python3-grpcio), on the simulated 2-GPU machine:
#   1. registration (GetInfo, NotifyRegistrationStatus) and the ResourceSlice published;
#   2. a slice claim (4 Gi and 30 %, priority high) prepared through v1: its CDI spec run by podman
#      with runc, the container sees 4096 MiB and hits OOM past it; prepared again: the same
#      answer without asking the API server; a whole GPU through v1beta1;
#   3. bad claims refused with a clear error, nothing prepared or left behind;
#   4. a plugin restart (SIGTERM: the slice kept, sockets gone) with claims prepared: the
#      checkpoint answers; unprepare removes the spec; the API server down (bounded retries, no busy
#      loop) and slow; the registration socket removed (a kubelet cleaning up): made anew;
#   5. an XID on GPU 1: the slice published again without it; the MIG machine's slice and a MIG
#      claim; garbage and malformed calls on the sockets.
# Issue 33's (the plugin in a cluster's life: the slice deleted, two instances side by side, stale
# claims, a torn checkpoint, over-commit, an API server with DRAConsumableCapacity off):
# test_dra_production.sh. The set-up both make: dra_lib.sh.
. "$(dirname "$0")/dra_lib.sh" # with tests/integration/lib.sh, bundle.sh (the simulated GPUs' uuids), tests/k8s/lib.sh

dra_cleanup_more() { if [ -d "$TMP/podman-root" ]; then pod rm -af -t 0 >/dev/null 2>&1; fi; }
dra_setup
# the MIG machine (section 5), built while the test goes on
mkroot mig 8gpu-mig.conf >"$TMP/mig.root" &
MIG_ROOT_PID=$!
start_apiserver "$API_STATE" "$TMP/kubeconfig"
plugin_args=(-c "$TMP/dra.toml" --driver-name "$DRIVER" --kubeconfig "$TMP/kubeconfig" --node "$NODE"
             --cdi-dir "$CDI_DIR" --plugin-dir "$PLUG" --registry-dir "$REG" --health-period 1)
start_dra "$TMP/dra.log" "${plugin_args[@]}"
REGSOCK=$REG/$DRIVER-reg.sock SOCK=$PLUG/dra.sock
SLICE=$API_STATE/slices/$NODE-$DRIVER.json

# ---------------------------------------------------------------------------------------------
# 1. Registration and the ResourceSlice

if wait_for 20 test -S "$REGSOCK"; then ok "the plugin serves its registration socket in the plugin registry"
else not_ok "no $REGSOCK: $(tail -5 "$TMP/dra.log")"; finish; fi
dra register "$REGSOCK"
kexpect "GetInfo: type DRAPlugin, the driver name, the DRA socket, services v1.DRAPlugin and v1beta1.DRAPlugin" \
        ".ok and .info.type == \"DRAPlugin\" and .info.name == \"$DRIVER\" and .info.endpoint == \"$SOCK\"
         and .info.supported_versions == [\"v1.DRAPlugin\", \"v1beta1.DRAPlugin\"]"
wait_for 5 grep -q "registered with the kubelet" "$TMP/dra.log" && ok "NotifyRegistrationStatus: the plugin heard it" ||
        not_ok "NotifyRegistrationStatus not logged"
if wait_for 10 test -s "$SLICE"; then ok "the ResourceSlice is published (the fake API server took it: schema-valid)"
else not_ok "no ResourceSlice: $(cat "$API_STATE/invalid.log" 2>/dev/null) $(tail -3 "$TMP/dra.log")"; fi
[ ! -s "$API_STATE/invalid.log" ] && ok "... nothing the plugin wrote was refused by the schema" ||
        not_ok "refused writes: $(head -3 "$API_STATE/invalid.log")"
jq -e --arg n "$NODE" --arg d "$DRIVER" --arg g0 "$GPU0" --arg g1 "$GPU1" '
        .spec.driver == $d and .spec.nodeName == $n and .spec.pool == {name: $n, generation: 1, resourceSliceCount: 1}
        and [.spec.devices[].name] == ["gpu-0", "gpu-1"]
        and [.spec.devices[].attributes.uuid.string] == [$g0, $g1]
        and .spec.devices[0].attributes.productName.string == "NVIDIA A100-SXM4-40GB"
        and .spec.devices[0].attributes.architecture.string == "Ampere"
        and .spec.devices[0].attributes.cudaComputeCapability.version == "8.0.0"
        and .spec.devices[0].attributes.driverVersion.version == "580.159.4"
        and .spec.devices[0].attributes.cudaDriverVersion.version == "13.0.0"
        and .spec.devices[1].attributes.index.int == 1
        and .spec.devices[0].attributes.pciBusID.string == "0000:3b:00.0"
        and .spec.devices[0].capacity.memory.value == "40Gi" and .spec.devices[0].capacity.compute.value == "100"
        and .spec.devices[0].capacity.memory.requestPolicy.default == "40Gi"
        and .spec.devices[0].capacity.memory.requestPolicy.validRange == {min: "1Mi", max: "40Gi", step: "1Mi"}
        and all(.spec.devices[]; .allowMultipleAllocations == true)' "$SLICE" >/dev/null &&
        ok "ResourceSlice: gpu-0, gpu-1 with uuid, model, architecture, versions as semver, index, PCI bus id; memory 40Gi and compute 100 consumable (1 Mi / 1 % steps)" ||
        not_ok "ResourceSlice (attributes, capacity): $(jq -c '.spec | {pool, devices: [.devices[] | {name, attributes, capacity}]}' "$SLICE" | head -c 900)"

# ---------------------------------------------------------------------------------------------
# 2. Claims prepared, run as containers

U1=11111111-aaaa-4bbb-8ccc-000000000001 U2=11111111-aaaa-4bbb-8ccc-000000000002
claim_json ml slice-4g-30 "$U1" "$DRIVER" "[{\"request\": \"gpu\", \"driver\": \"$DRIVER\", \"pool\": \"$NODE\",
        \"device\": \"gpu-0\", \"shareID\": \"5f1c9d1e-0000-4000-8000-000000000001\",
        \"consumedCapacity\": {\"memory\": \"4Gi\", \"compute\": \"30\"}}]" \
        "[{\"source\": \"FromClass\", \"opaque\": {\"driver\": \"$DRIVER\", \"parameters\":
          {\"apiVersion\": \"gpu.gpuslice.io/v1alpha1\", \"kind\": \"SliceConfig\", \"priority\": \"high\"}}},
          {\"source\": \"FromClaim\", \"requests\": [\"gpu\"], \"opaque\": {\"driver\": \"$DRIVER\", \"parameters\":
          {\"apiVersion\": \"gpu.gpuslice.io/v1alpha1\", \"kind\": \"SliceConfig\", \"priority\": \"high\"}}}]"
claim_json ml whole-1 "$U2" "$DRIVER" "[{\"request\": \"gpu\", \"driver\": \"$DRIVER\", \"pool\": \"$NODE\", \"device\": \"gpu-1\"}]"
# reserved for one pod (as the scheduler leaves it): the slice's labels name it
jq '.status.reservedFor = [{"resource": "pods", "name": "trainer-0", "uid": "7a000000-0000-4000-8000-000000000001"}]' \
        "$API_STATE/claims/ml/slice-4g-30.json" >"$TMP/c.json" && mv "$TMP/c.json" "$API_STATE/claims/ml/slice-4g-30.json"
dra prepare "$SOCK" v1 "ml/slice-4g-30/$U1"
cp "$TMP/k.json" "$TMP/p-slice.json"
kexpect "NodePrepareResources (v1) of a 4 Gi / 30 % claim on gpu-0: one device, its CDI name, its share_id (field 5) echoed" \
        ".ok and .claims[\"$U1\"].devices == [{\"request_names\": [\"gpu\"], \"pool_name\": \"$NODE\", \"device_name\": \"gpu-0\",
          \"cdi_device_ids\": [\"$KIND=$U1-gpu-0\"], \"share_id\": \"5f1c9d1e-0000-4000-8000-000000000001\"}] and (.claims[\"$U1\"].error // \"\") == \"\""
SPEC1=$CDI_DIR/$DRIVER-claim-$U1.json
jq -e --arg n "$U1-gpu-0" '.kind == "'"$KIND"'" and [.devices[].name] == [$n]
        and (.devices[0].containerEdits.env | map(select(startswith("GPUSLICE_MEMORY_LIMIT") or startswith("GPUSLICE_COMPUTE_LIMIT"))) == []
             and index("GPUSLICE_PRIORITY=high") != null)
        and (.devices[0].containerEdits.hooks[0].args | index("--gpu='"$GPU0"'") != null)
        and ([.devices[0].containerEdits.deviceNodes[].path] | index("/dev/nvidia0") != null and index("/dev/nvidia2") == null)
        and ([.devices[0].containerEdits.hooks[] | [.args[0], .args[-1]]] == [["gpuslice-hook", "createRuntime"], ["gpuslice-hook", "poststop"]])
        and (.devices[0].containerEdits.hooks[0].args | index("--memory=4Gi") != null and index("--compute-share=30") != null
             and index("--priority=high") != null)' "$SPEC1" >/dev/null &&
        ok "... its CDI spec: one device, GPU 0's node, 4Gi / 30 % / the claim's priority (its class's bound) as the slice hook's options (the allocator's word) for GPU 0 (--gpu, its limits in no env: per-GPU slices), the slice hooks (gpuslice-hook)" ||
        not_ok "spec $SPEC1: $(jq -c '.devices' "$SPEC1" 2>&1 | head -c 600)"
# issue 31: the slice's labels on its hook's command line, where the container cannot write them
jq -e '.devices[0].containerEdits | ([.hooks[] | select(.hookName == "createRuntime") | .args[]] as $a
        | ["--k8s-claim=slice-4g-30", "--k8s-namespace=ml", "--k8s-pod=trainer-0"] - $a == [])
        and ([(.env // [])[] | select(startswith("GPUSLICE_K8S_"))] == [])' "$SPEC1" >/dev/null &&
        ok "... the claim, its namespace and pod as the createRuntime hook's --k8s-* options, none in the env" ||
        not_ok "labels in spec: $(jq -c '.devices[0].containerEdits | {env, hooks}' "$SPEC1" | head -c 600)"
"$GS" cdi list --spec "$SPEC1" >"$TMP/cdinames" 2>&1 && grep -qx "$KIND=$U1-gpu-0" "$TMP/cdinames" &&
        ok "... a spec gpuslice cdi list reads (a CDI consumer's checks)" || not_ok "cdi list: $(head -3 "$TMP/cdinames")"
n0=$(gets ml slice-4g-30)
dra prepare "$SOCK" v1 "ml/slice-4g-30/$U1"
if [ "$(jq -c . "$TMP/k.json")" = "$(jq -c . "$TMP/p-slice.json")" ] && [ "$(gets ml slice-4g-30)" = "$n0" ]; then
        ok "prepared again: the same answer, the API server not asked again (idempotent)"
else not_ok "prepare again: $(head -c 300 "$TMP/k.json"), GETs $n0 -> $(gets ml slice-4g-30)"; fi
"$BUILD/tests/dra-probe" "$SOCK" prepare "ml/slice-4g-30/$U1" >"$TMP/probe.json" 2>&1 &&
        jq -e --arg u "$U1" --arg n "$KIND=$U1-gpu-0" '.[$u] == {cdi: [$n], error: ""}' "$TMP/probe.json" >/dev/null &&
        ok "dra-probe (the GPU host's and the bench's kubelet side, in C) gets the same answer" ||
        not_ok "dra-probe: $(head -c 300 "$TMP/probe.json")"
dra prepare "$SOCK" v1beta1 "ml/whole-1/$U2"
cp "$TMP/k.json" "$TMP/p-whole.json"
kexpect "NodePrepareResources through v1beta1: a whole gpu-1" \
        ".ok and .claims[\"$U2\"].devices[0].cdi_device_ids == [\"$KIND=$U2-gpu-1\"]"
jq -e '.devices[0].containerEdits | (.env // []) == [] and (.hooks // []) == []' "$CDI_DIR/$DRIVER-claim-$U2.json" >/dev/null &&
        ok "... its device is the GPU alone: no slice env, no slice hooks" || not_ok "whole GPU spec: $(jq -c .devices "$CDI_DIR/$DRIVER-claim-$U2.json")"

PODMAN=$(command -v podman || true)
if [ -z "$PODMAN" ] || ! [ -x "$RUNC" ]; then
        not_ok "podman or runc is not installed (make test-deps): the CDI specs were not run as containers"
else
        specs_unleaked "$SPEC1" "$CDI_DIR/$DRIVER-claim-$U2.json"
        fresh() { rm -rf "$TMP/rootfs-$1"; make_rootfs "$TMP/rootfs-$1"; echo "$TMP/rootfs-$1"; }
        run c-slice -- pod run --rm --network=none --ulimit nofile=20000:20000 --ulimit nproc=4096:4096 --device "$KIND=$U1-gpu-0" -e EXPECT_TOTAL_MIB=4096 \
                --rootfs "$(fresh slice)" /bin/sh /check.sh
        expect_done c-slice "podman (runc) with the slice claim's CDI device"
        expect_fact c-slice "HAS /dev/nvidia0" "slice claim: GPU 0's node"
        expect_fact c-slice "NO /dev/nvidia2" "slice claim: not GPU 1's"
        expect_slice c-slice "slice claim (4 Gi, 30 %)" 4Gi 4096
        expect_fact c-slice "SLICE GPUSLICE_COMPUTE_LIMIT=30" "slice claim: slice.conf holds the 30 % compute share"
        expect_fact c-slice "SLICE GPUSLICE_PRIORITY=high" "slice claim: ... and the opaque config's priority"
        run c-whole -- pod run --rm --network=none --ulimit nofile=20000:20000 --ulimit nproc=4096:4096 --device "$KIND=$U2-gpu-1" --rootfs "$(fresh whole)" /bin/sh /check.sh
        expect_done c-whole "podman (runc) with the whole-GPU claim's CDI device"
        expect_fact c-whole "HAS /dev/nvidia2" "whole gpu-1: its node /dev/nvidia2"
        expect_fact c-whole "NO /dev/nvidia0" "whole gpu-1: not GPU 0's"
        expect_no_slice c-whole "whole gpu-1"
        # a running container of the slice claim: metrics and top name its claim and pod (the pod
        # and namespace from its hook's command line (the claim's spec), the container from the runtime's annotation)
        pod run -d --network=none --ulimit nofile=20000:20000 --ulimit nproc=4096:4096 --device "$KIND=$U1-gpu-0" --annotation io.kubernetes.container.name=main \
                --rootfs "$(fresh live)" /usr/bin/vgpu-probe hold 64 60 >"$TMP/live.out" 2>"$TMP/live.err"
        cid=$(tr -d '\n' <"$TMP/live.out")
        L=/run/gpuslice/slices/$cid/labels
        wait_for 10 test -s "$L"
        wait_for 10 test -s "/run/gpuslice/slices/$cid/usage" # its CUDA process holds 64 MiB: a region to show
        if [ -n "$cid" ] && [ "$(jq -c . "$L" 2>/dev/null)" = '{"namespace":"ml","pod":"trainer-0","container":"main","claim":"slice-4g-30"}' ]; then
                ok "a running container of the slice claim: its slice labelled ml/trainer-0/main, claim slice-4g-30"
        else not_ok "claim labels: ${cid:-no container}: $(cat "$L" 2>&1) $(tail -3 "$TMP/live.err")"; fi
        "$GS" metrics --once --no-nvml --no-hami --window 0.2 >"$TMP/metrics.txt" 2>"$TMP/metrics.err"
        if grep "^gpuslice_slice_info{" "$TMP/metrics.txt" | grep "container_id=\"$cid\"" |
                grep -q 'namespace="ml",pod="trainer-0",container="main",claim="slice-4g-30"' &&
           grep "^gpuslice_slice_memory_limit_bytes{" "$TMP/metrics.txt" | grep "container_id=\"$cid\"" | grep -q 'claim="slice-4g-30"'; then
                ok "gpuslice metrics: its series carry claim=\"slice-4g-30\" and pod=\"trainer-0\""
        else not_ok "metrics: $(grep "$cid" "$TMP/metrics.txt" | head -2) $(head -3 "$TMP/metrics.err")"; fi
        "$GS" top --json --no-nvml --interval 0.2 >"$TMP/top.json" 2>"$TMP/top.err"
        if jq -e --arg c "$cid" '[.slices[] | select(.id == $c)][0] | .claim == "slice-4g-30" and .pod == "trainer-0"
                and .name == "ml/trainer-0/main (claim slice-4g-30)"' "$TMP/top.json" >/dev/null; then
                ok "gpuslice top: its row named ml/trainer-0/main (claim slice-4g-30), claim and pod in --json"
        else not_ok "top: $(jq -c --arg c "$cid" '[.slices[]? | select(.id == $c)]' "$TMP/top.json" 2>&1 | head -c 400) $(head -3 "$TMP/top.err")"; fi
        pod rm -f -t 0 "$cid" >/dev/null 2>&1
        # issue 31: a container of the claim whose env names another claim, namespace and pod: the
        # labels stay the host's (its hook's command line)
        pod run -d --network=none --ulimit nofile=20000:20000 --ulimit nproc=4096:4096 --device "$KIND=$U1-gpu-0" \
                -e GPUSLICE_K8S_CLAIM=stolen -e GPUSLICE_K8S_NAMESPACE=prod -e GPUSLICE_K8S_POD=victim \
                --rootfs "$(fresh liar)" /bin/sleep 60 >"$TMP/liar.out" 2>"$TMP/liar.err"
        cid=$(tr -d '\n' <"$TMP/liar.out")
        L=/run/gpuslice/slices/$cid/labels
        wait_for 10 test -s "$L"
        if [ -n "$cid" ] && [ "$(jq -c . "$L" 2>/dev/null)" = '{"namespace":"ml","pod":"trainer-0","claim":"slice-4g-30"}' ]; then
                ok "a container of the claim whose env names claim stolen, prod/victim: labelled ml/trainer-0, claim slice-4g-30 all the same"
        else not_ok "liar's labels: ${cid:-no container}: $(cat "$L" 2>&1) $(tail -3 "$TMP/liar.err")"; fi
        "$GS" slice show --json prod/victim >"$TMP/liar-show.out" 2>&1 &&
                not_ok "slice show prod/victim found a slice: $(head -c 200 "$TMP/liar-show.out")" ||
                ok "... and slice show prod/victim finds none ($(head -c 80 "$TMP/liar-show.out"))"
        pod rm -f -t 0 "$cid" >/dev/null 2>&1
fi

# ---------------------------------------------------------------------------------------------
# 3. Bad claims: an error for the claim, nothing prepared

OPQ='[{"source": "FromClaim", "opaque": {"driver": "'"$DRIVER"'", "parameters": {"apiVersion": "gpu.gpuslice.io/v1alpha1", "kind": "SliceConfig", "prio": "high"}}}]'
claim_json ml too-big b0000000-0000-4000-8000-000000000001 "$DRIVER" "$(res gpu-0 "" '{"memory": "80Gi"}')"
claim_json ml unknown-dev b0000000-0000-4000-8000-000000000002 "$DRIVER" "$(res gpu-7)"
claim_json ml bad-opaque b0000000-0000-4000-8000-000000000003 "$DRIVER" "$(res gpu-0 "" '{"memory": "1Gi"}')" "$OPQ"
claim_json ml too-much-compute b0000000-0000-4000-8000-000000000004 "$DRIVER" "$(res gpu-0 "" '{"compute": "150"}')"
claim_json ml other-node b0000000-0000-4000-8000-000000000005 "$DRIVER" "$(res gpu-0 node-b)"
claim_json ml replaced b0000000-0000-4000-8000-00000000aaaa "$DRIVER" "$(res gpu-0)"
claim_json ml bad-quantity b0000000-0000-4000-8000-000000000007 "$DRIVER" "$(res gpu-0 "" '{"memory": "4 Gi"}')"
# issue 31: a claim may not ask more than its DeviceClass's config allows (the class's config
# reaches the plugin as the allocation's FromClass entries)
sc() { # SOURCE JSON-MEMBERS: one opaque config entry of ours
        echo "{\"source\": \"$1\", \"opaque\": {\"driver\": \"$DRIVER\", \"parameters\": {\"apiVersion\": \"gpu.gpuslice.io/v1alpha1\", \"kind\": \"SliceConfig\"${2:+, $2}}}}"
}
SL='{"memory": "2Gi", "compute": "20"}'
claim_json ml widen-prio c0000000-0000-4000-8000-000000000001 "$DRIVER" "$(res gpu-0 "" "$SL")" \
        "[$(sc FromClass '"priority": "normal"'), $(sc FromClaim '"priority": "high"')]"
claim_json ml widen-off c0000000-0000-4000-8000-000000000002 "$DRIVER" "$(res gpu-0 "" "$SL")" "[$(sc FromClaim '"computeMode": "off"')]"
claim_json ml widen-share c0000000-0000-4000-8000-000000000003 "$DRIVER" "$(res gpu-0 "" "$SL")" \
        "[$(sc FromClass '"computeMode": "cap"'), $(sc FromClaim '"computeMode": "share"')]"
claim_json ml widen-high c0000000-0000-4000-8000-000000000004 "$DRIVER" "$(res gpu-0 "" "$SL")" "[$(sc FromClaim '"priority": "high"')]"
claim_json ml own-bound c0000000-0000-4000-8000-000000000005 "$DRIVER" "$(res gpu-0 "" "$SL")" \
        "[$(sc FromClaim '"maxComputeMode": "off", "computeMode": "off"')]"
claim_json ml narrow c0000000-0000-4000-8000-000000000006 "$DRIVER" "$(res gpu-0 "" "$SL")" \
        "[$(sc FromClass '"maxPriority": "high", "computeMode": "share"'), $(sc FromClaim '"priority": "low", "computeMode": "cap"')]"
claim_json ml not-ours b0000000-0000-4000-8000-000000000008 other.example.com "$(res gpu-0 | sed "s/$DRIVER/other.example.com/")"
bad too-big b0000000-0000-4000-8000-000000000001 "consumes 85899345920 bytes of gpu-0, which has" "more memory than gpu-0 has" PrepareFailed
bad unknown-dev b0000000-0000-4000-8000-000000000002 "unknown device 'gpu-7'" "an unknown device" PrepareFailed
bad bad-opaque b0000000-0000-4000-8000-000000000003 "unknown field 'prio'" "an opaque config with a field we do not know" InvalidClaim
bad too-much-compute b0000000-0000-4000-8000-000000000004 "not a percentage" "150 % compute" InvalidClaim
bad other-node b0000000-0000-4000-8000-000000000005 "is not on this node" "a device of another node's pool" PrepareFailed
bad replaced b0000000-0000-4000-8000-000000000006 "not b0000000-0000-4000-8000-000000000006" "a claim whose uid is not the kubelet's (made anew)"
bad bad-quantity b0000000-0000-4000-8000-000000000007 "invalid quantity" "a malformed quantity" InvalidClaim
bad not-ours b0000000-0000-4000-8000-000000000008 "has no device of $DRIVER" "a claim of another driver"
bad widen-prio c0000000-0000-4000-8000-000000000001 "the claim asks priority high; its DeviceClass allows at most normal" \
        "priority high over the class's normal" ExceedsDeviceClass
bad widen-off c0000000-0000-4000-8000-000000000002 "the claim asks computeMode off; its DeviceClass allows at most cap" \
        "computeMode off with no class config (the bound: cap)" ExceedsDeviceClass
bad widen-share c0000000-0000-4000-8000-000000000003 "the claim asks computeMode share; its DeviceClass allows at most cap" \
        "computeMode share over the class's cap" ExceedsDeviceClass
bad widen-high c0000000-0000-4000-8000-000000000004 "the claim asks priority high; its DeviceClass allows at most normal" \
        "priority high with no class config (the bound: normal)" ExceedsDeviceClass
bad own-bound c0000000-0000-4000-8000-000000000005 "maxComputeMode is a DeviceClass's bound" \
        "a claim setting its own bound (maxComputeMode)" InvalidClaim
UN=c0000000-0000-4000-8000-000000000006
dra prepare "$SOCK" v1 "ml/narrow/$UN"
kexpect "a claim narrowing its class (class: up to high, share; claim: low, cap): prepared" \
        ".ok and (.claims[\"$UN\"].devices | length) == 1 and (.claims[\"$UN\"].error // \"\") == \"\""
# the values reach the slice through the spec: its env, or its hook's command line (issue 31, D1)
jq -e '.devices[0].containerEdits | ((.env // []) + [.hooks[]? | select(.hookName == "createRuntime") | .args[]]) as $w
        | ($w | index("GPUSLICE_PRIORITY=low") != null or index("--priority=low") != null)
          and ($w | index("GPUSLICE_COMPUTE_MODE=cap") != null or index("--compute-mode=cap") != null)
          and ($w | map(select(test("=high$|=share$"))) == [])' "$CDI_DIR/$DRIVER-claim-$UN.json" >/dev/null &&
        ok "... its spec: priority low and compute mode cap (the claim's, narrower than the class's)" ||
        not_ok "narrow spec: $(jq -c '.devices[0].containerEdits | {env, hooks}' "$CDI_DIR/$DRIVER-claim-$UN.json" 2>&1 | head -c 600)"
dra unprepare "$SOCK" v1 "ml/narrow/$UN"
# issue 33, several shares: one claim with shares of two GPUs (tensor parallelism), each its own
UT=c0000000-0000-4000-8000-000000000007
claim_json ml tp-2x "$UT" "$DRIVER" "[{\"request\": \"gpu\", \"driver\": \"$DRIVER\", \"pool\": \"$NODE\", \"device\": \"gpu-0\",
          \"shareID\": \"5f1c9d1e-0000-4000-8000-000000000007\", \"consumedCapacity\": {\"memory\": \"2Gi\", \"compute\": \"20\"}},
        {\"request\": \"gpu\", \"driver\": \"$DRIVER\", \"pool\": \"$NODE\", \"device\": \"gpu-1\",
          \"shareID\": \"5f1c9d1e-0000-4000-8000-000000000008\", \"consumedCapacity\": {\"memory\": \"3Gi\", \"compute\": \"40\"}}]"
dra unprepare "$SOCK" v1 "ml/whole-1/$U2" # (gpu-1 whole: prepared again below)
dra prepare "$SOCK" v1 "ml/tp-2x/$UT"
kexpect "a claim with shares of two GPUs (2 Gi / 20 % of gpu-0, 3 Gi / 40 % of gpu-1): prepared, one device each" \
        ".ok and (.claims[\"$UT\"].error // \"\") == \"\" and [.claims[\"$UT\"].devices[].cdi_device_ids[0]] == [\"$KIND=$UT-gpu-0\", \"$KIND=$UT-gpu-1\"]"
jq -e --arg g0 "$GPU0" --arg g1 "$GPU1" '[.devices[] | .containerEdits | {nodes: [.deviceNodes[].path | select(test("^/dev/nvidia[0-9]+$"))],
        args: [.hooks[] | select(.hookName == "createRuntime") | .args[] | select(test("^--(gpu|memory|compute-share)="))],
        limits: [(.env // [])[] | select(test("^GPUSLICE_(MEMORY|COMPUTE)_LIMIT"))]}]
        == [{nodes: ["/dev/nvidia0"], args: ["--memory=2Gi", "--compute-share=20", ("--gpu=" + $g0)], limits: []},
            {nodes: ["/dev/nvidia2"], args: ["--memory=3Gi", "--compute-share=40", ("--gpu=" + $g1)], limits: []}]' \
        "$CDI_DIR/$DRIVER-claim-$UT.json" >/dev/null &&
        ok "... its spec: each GPU's device with its own node, its own limits and its GPU on its slice hook (--gpu), none in the env" ||
        not_ok "two-GPU spec: $(jq -c '[.devices[].containerEdits | {deviceNodes, hooks, env}]' "$CDI_DIR/$DRIVER-claim-$UT.json" 2>&1 | head -c 900)"
dra unprepare "$SOCK" v1 "ml/tp-2x/$UT"
dra prepare "$SOCK" v1 "ml/whole-1/$U2"
kexpect "... unprepared; the whole gpu-1 claim prepared again" ".ok and (.claims[\"$U2\"].devices | length) == 1"
bad missing b0000000-0000-4000-8000-000000000009 "does not exist" "a claim the API server does not have"
bad "..%2fx" b0000000-0000-4000-8000-00000000000a "invalid claim name" "a claim name that would change the API path"
dra prepare "$SOCK" v1 "ml/too-big/b0000000-0000-4000-8000-000000000001" "ml/slice-4g-30/$U1"
kexpect "two claims in one call, one bad: the good one prepared, the bad one's error" \
        ".ok and (.claims[\"$U1\"].devices | length) == 1 and (.claims[\"b0000000-0000-4000-8000-000000000001\"].error | length) > 0"
grep -q "^PATCH /apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/too-big/status?fieldManager=$DRIVER&force=true 200" \
        "$API_STATE/requests.log" && ! grep -q "^PATCH status" "$API_STATE/invalid.log" 2>/dev/null &&
        ok "the status written by a server-side apply (fieldManager $DRIVER), every one valid (AllocatedDeviceStatus, metav1.Condition)" ||
        not_ok "status writes: $(grep PATCH "$API_STATE/requests.log" | tail -2) $(grep PATCH "$API_STATE/invalid.log" 2>/dev/null | head -2)"
# the refused claim made right (its status kept, as the API server keeps it): prepared, Ready again
UB=b0000000-0000-4000-8000-000000000001
# (and 10 % compute: with none given it would consume the whole GPU's, beside slice-4g-30's 30 %)
jq '.status.allocation.devices.results[0].consumedCapacity = {memory: "4Gi", compute: "10"}' "$API_STATE/claims/ml/too-big.json" >"$TMP/tb.json" &&
        mv "$TMP/tb.json" "$API_STATE/claims/ml/too-big.json"
dra prepare "$SOCK" v1 "ml/too-big/$UB"
kexpect "the refused claim made right: prepared" ".ok and (.claims[\"$UB\"].devices | length) == 1"
st=$(ready too-big)
[ "$(echo "$st" | wc -l)" = 1 ] && [[ "$st" == "gpu-0 True Prepared "* ]] && ok "... its status: Ready True, Prepared (the old error replaced)" ||
        not_ok "... its status after: '$st'"
dra unprepare "$SOCK" v1 "ml/too-big/$UB"
# the status cannot be written (RBAC missing, say): the answer is the same, the plugin lives on
touch "$API_STATE/forbid-status"
claim_json ml forbidden b0000000-0000-4000-8000-00000000000b "$DRIVER" "$(res gpu-9)"
dra prepare "$SOCK" v1 "ml/forbidden/b0000000-0000-4000-8000-00000000000b"
rm "$API_STATE/forbid-status"
kexpect "the status write forbidden (403): the claim's error in the answer all the same" \
        ".ok and (.claims[\"b0000000-0000-4000-8000-00000000000b\"].error | contains(\"unknown device 'gpu-9'\"))"
wait_for 5 grep -q "forbidden.*refused: .*the claim's status not written: .*HTTP 403" "$TMP/dra.log" &&
        kill -0 "$DRA_PID" 2>/dev/null && ok "... logged (status not written: HTTP 403), the plugin alive" ||
        not_ok "forbidden status: $(grep forbidden "$TMP/dra.log" | tail -1)"

# ---------------------------------------------------------------------------------------------
# 4. Restarts, unprepare, the API server down and slow

stop_dra
[ "$DRA_RC" = 0 ] && ok "SIGTERM: the plugin stops (exit 0)" || not_ok "SIGTERM: exit $DRA_RC"
[ ! -e "$REGSOCK" ] && [ ! -e "$SOCK" ] && ok "... its sockets are gone" || not_ok "sockets left: $(ls "$REG" "$PLUG")"
[ -s "$SLICE" ] && ! grep -q "^DELETE /apis/resource.k8s.io/v1/resourceslices/" "$API_STATE/requests.log" &&
        ok "... and its ResourceSlice kept (a restart or an upgrade leaves the node schedulable; no DELETE)" ||
        not_ok "ResourceSlice not kept: $(grep DELETE "$API_STATE/requests.log" | tail -3)"
rm "$API_STATE/claims/ml/slice-4g-30.json" # only the checkpoint knows it now
start_dra "$TMP/dra2.log" "${plugin_args[@]}"
wait_for 20 test -S "$SOCK" || not_ok "the plugin did not start again: $(tail -3 "$TMP/dra2.log")"
dra prepare "$SOCK" v1 "ml/slice-4g-30/$U1"
if [ "$(jq -c . "$TMP/k.json")" = "$(jq -c . "$TMP/p-slice.json")" ]; then
        ok "restarted: a claim prepared before is answered from the checkpoint (the claim is gone from the API server)"
else not_ok "after restart: $(head -c 300 "$TMP/k.json")"; fi
grep -q "checkpoint: 2 claim(s) prepared before" "$TMP/dra2.log" && ok "... the checkpoint held both prepared claims" ||
        not_ok "checkpoint: $(grep checkpoint "$TMP/dra2.log")"
SPEC2=$CDI_DIR/$DRIVER-claim-$U2.json n2=$(gets ml whole-1)
: >"$SPEC2" # what a crash of the machine may leave of a spec written without fsync
dra prepare "$SOCK" v1 "ml/whole-1/$U2"
if [ "$(jq -c . "$TMP/k.json")" = "$(jq -c . "$TMP/p-whole.json")" ] && [ "$(gets ml whole-1)" = $((n2 + 1)) ] &&
   jq -e '.devices | length == 1' "$SPEC2" >/dev/null 2>&1; then
        ok "a checkpointed claim whose spec a crash emptied: read again from the API server, its spec written anew"
else not_ok "emptied spec: $(head -c 300 "$TMP/k.json"), GETs $n2 -> $(gets ml whole-1), spec $(head -c 100 "$SPEC2")"; fi
dra unprepare "$SOCK" v1 "ml/slice-4g-30/$U1"
kexpect "NodeUnprepareResources: no error" ".ok and (.claims[\"$U1\"].error // \"\") == \"\""
[ ! -e "$SPEC1" ] && no_checkpoint_entry "$U1" &&
        ok "... the claim's spec and checkpoint entry are gone" ||
        not_ok "after unprepare: $(ls "$CDI_DIR" | grep "$U1"); checkpoint: $(head -c 300 "$PLUG/checkpoint.json" 2>&1)"
dra unprepare "$SOCK" v1beta1 "ml/slice-4g-30/$U1"
kexpect "... unprepared again (v1beta1): no error (idempotent)" ".ok and (.claims[\"$U1\"].error // \"\") == \"\""

U3=33333333-aaaa-4bbb-8ccc-000000000003
claim_json ml while-down "$U3" "$DRIVER" "$(res gpu-0 "" '{"memory": "2Gi"}')"
# the registration socket removed (a kubelet cleaning up): the plugin looks every second; its look
# comes while the API server is down and slow (checked after those)
rm -f "$REGSOCK"
touch "$API_STATE/down"
t0=$(date +%s%N)
dra prepare "$SOCK" v1 "ml/while-down/$U3"
ms=$((($(date +%s%N) - t0) / 1000000))
tries=$(grep -c "^GET /apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/while-down 503" "$API_STATE/requests.log")
kexpect "the API server down (503): the claim's error says so" ".ok and (.claims[\"$U3\"].error | contains(\"HTTP 503\"))"
if [ "$tries" = 4 ] && [ "$ms" -ge 4000 ] && [ "$ms" -lt 20000 ]; then
        ok "... after 4 tries with backoff (${ms} ms in all): bounded, no busy loop"
else not_ok "... tries $tries in $ms ms"; fi
rm "$API_STATE/down"
echo 1.5 >"$API_STATE/delay"
dra prepare "$SOCK" v1 "ml/while-down/$U3"
kexpect "the API server slow (1.5 s an answer): prepared" ".ok and (.claims[\"$U3\"].devices | length) == 1"
rm "$API_STATE/delay"
wait_for 5 test -S "$REGSOCK" && ok "the registration socket removed (a kubelet cleaning up): made anew" ||
        not_ok "no new $REGSOCK"
dra register "$REGSOCK"
kexpect "... and GetInfo answers on it" '.ok and .info.type == "DRAPlugin"'

# ---------------------------------------------------------------------------------------------
# 5. Health, MIG, garbage

wait_for 10 test -s "$SLICE" || not_ok "no ResourceSlice after the restart"
g0=$(jq .spec.pool.generation "$SLICE")
echo "xid $GPU1 79" >>"$DRV/etc/fakegpu/events"
# (the fake API server's DRADeviceTaints gate is on: the device stays, tainted; test_dra_taints.sh
# has the taint's fields and the gate off)
if wait_for 15 jq -e '[.spec.devices[].name] == ["gpu-0", "gpu-1"] and .spec.devices[1].taints[0].value == "xid-79"' \
        "$SLICE" >/dev/null 2>&1 && [ "$(jq .spec.pool.generation "$SLICE")" -gt "$g0" ]; then
        ok "XID 79 on GPU 1: the ResourceSlice published again with gpu-1 tainted, a newer pool generation"
else not_ok "after XID 79: $(jq -c '[.spec.pool, [.spec.devices[] | {name, taints}]]' "$SLICE")"; fi
dra prepare "$SOCK" v1 "ml/whole-1/$U2"
kexpect "a claim prepared before the XID is still answered (checkpoint)" ".ok and (.claims[\"$U2\"].devices | length) == 1"
U4=44444444-aaaa-4bbb-8ccc-000000000004
claim_json ml on-bad-gpu "$U4" "$DRIVER" "$(res gpu-1)"
dra prepare "$SOCK" v1 "ml/on-bad-gpu/$U4"
kexpect "... a new claim on the unhealthy gpu-1: refused" ".ok and (.claims[\"$U4\"].error | contains(\"unhealthy\"))"

"$PY" -c 'import os, socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(os.urandom(3000)); s.close()' "$SOCK" 2>/dev/null
dra raw "$SOCK" /k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources ffffff
kexpect "a malformed NodePrepareResources: INVALID_ARGUMENT" '.code == "INVALID_ARGUMENT"'
dra raw "$SOCK" /k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeGetInfo ""
kexpect "an unknown method: UNIMPLEMENTED" '.code == "UNIMPLEMENTED"'
# (the package as the registration names the service, not the kubelet's: no such path)
dra raw "$SOCK" /v1.DRAPlugin/NodePrepareResources ffffff
kexpect "the registration's name for a path (/v1.DRAPlugin/): UNIMPLEMENTED, the kubelet's path is /k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/" '.code == "UNIMPLEMENTED"'
kill -0 "$DRA_PID" 2>/dev/null && ok "the plugin is alive after garbage and malformed calls" || not_ok "the plugin died"
stop_dra
[ "$DRA_RC" = 0 ] && ok "the plugin stops cleanly again" || not_ok "exit $DRA_RC"

# the API server checked: another CA (a server in the middle) and a wrong token get nothing
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=localhost \
        -addext "subjectAltName=IP:127.0.0.1" -keyout "$TMP/other-key.pem" -out "$TMP/other-ca.pem" 2>/dev/null
sed 's|certificate-authority: api-cert.pem|certificate-authority: other-ca.pem|' "$TMP/kubeconfig" >"$TMP/kubeconfig-ca"
sed "s|token: $TOKEN|token: wrong|" "$TMP/kubeconfig" >"$TMP/kubeconfig-token"
api DELETE "/apis/resource.k8s.io/v1/resourceslices/$NODE-$DRIVER" >/dev/null # kept by the plugins before
for k in ca token; do
        start_dra "$TMP/dra-$k.log" -c "$TMP/dra.toml" --driver-name "$DRIVER" --kubeconfig "$TMP/kubeconfig-$k" --node "$NODE" \
                --cdi-dir "$CDI_DIR" --plugin-dir "$PLUG" --registry-dir "$REG"
        wait_for 10 grep -q "cannot publish the ResourceSlice" "$TMP/dra-$k.log"
        stop_dra
done
grep -q "cannot publish the ResourceSlice: .*SSL peer certificate" "$TMP/dra-ca.log" && [ ! -e "$SLICE" ] &&
        ok "a server whose certificate is not the cluster CA's: refused (TLS verified), nothing published" ||
        not_ok "another CA: $(grep -m1 "publish" "$TMP/dra-ca.log")"
grep -q "cannot publish the ResourceSlice: POST .*HTTP 401\|cannot publish the ResourceSlice: GET .*HTTP 401" "$TMP/dra-token.log" &&
        ok "a wrong token: the API server's 401 reported, nothing published" ||
        not_ok "wrong token: $(grep -m1 "publish" "$TMP/dra-token.log")"

# the MIG machine: its slice and a MIG claim (a second plugin, another driver name)
wait "$MIG_ROOT_PID" || { not_ok "mkroot 8gpu-mig.conf failed: $(tail -3 "$TMP/mig.mkroot.log")"; finish; }
MDRV=$(cat "$TMP/mig.root")
printf '[driver]\nroot = "%s"\n' "$MDRV" >"$TMP/mig.toml"
MDRIVER=m$DRIVER
start_dra "$TMP/mig.log" -c "$TMP/mig.toml" --driver-name "$MDRIVER" --kubeconfig "$TMP/kubeconfig" --node node-m \
        --cdi-dir "$CDI_DIR" --plugin-dir "$TMP/plugins/$MDRIVER" --registry-dir "$REG"
MSLICE=$API_STATE/slices/node-m-$MDRIVER.json
if wait_for 15 test -s "$MSLICE" && jq -e '
        ([.spec.devices[] | select(.attributes.type.string == "mig")] | length) == 3
        and ([.spec.devices[] | select(.attributes.type.string == "gpu")] | length) == 7
        and (.spec.devices | map(select(.name == "gpu-2-mig-2"))[0] | .attributes.uuid.string == "MIG-d41f6a2c-8e3b-5b9d-a07e-6c2f4a1e8d53"
             and .capacity.memory.value == "9856Mi" and .capacity.compute.value == "100" and .allowMultipleAllocations == true)
        and (.spec.devices | map(select(.name == "gpu-2")) | length) == 0' "$MSLICE" >/dev/null; then
        ok "MIG machine: 7 GPUs + 3 MIG devices published (gpu-2 in MIG mode only as its MIG devices, each shared as a GPU: test_dra_mig.sh)"
else not_ok "MIG slice: $(jq -c '[.spec.devices[] | {name, t: .attributes.type.string, c: .capacity}]' "$MSLICE" 2>&1 | head -c 700)"; fi
U5=55555555-aaaa-4bbb-8ccc-000000000005 U6=66666666-aaaa-4bbb-8ccc-000000000006
claim_json ml mig-claim "$U5" "$MDRIVER" "$(res gpu-2-mig-2 node-m | sed "s/$DRIVER/$MDRIVER/")"
claim_json ml mig-slice "$U6" "$MDRIVER" "$(res gpu-2-mig-2 node-m '{"compute": "30"}' | sed "s/$DRIVER/$MDRIVER/")"
wait_for 10 test -S "$TMP/plugins/$MDRIVER/dra.sock"
dra prepare "$TMP/plugins/$MDRIVER/dra.sock" v1 "ml/mig-claim/$U5" "ml/mig-slice/$U6"
kexpect "a MIG claim prepared: k8s.$MDRIVER/claim=<uid>-gpu-2-mig-2; a share of the same MIG device beside it refused (over-committed)" \
        ".ok and .claims[\"$U5\"].devices[0].cdi_device_ids == [\"k8s.$MDRIVER/claim=$U5-gpu-2-mig-2\"]
         and (.claims[\"$U6\"].error | contains(\"gpu-2-mig-2 would be over-committed\"))"
jq -e '[.devices[0].containerEdits.deviceNodes[].path] | index("/dev/nvidia2") != null and any(.[]; test("nvidia-caps"))' \
        "$CDI_DIR/$MDRIVER-claim-$U5.json" >/dev/null && ok "... its spec: the parent GPU's node and the MIG caps nodes" ||
        not_ok "MIG spec: $(jq -c '.devices[0].containerEdits.deviceNodes' "$CDI_DIR/$MDRIVER-claim-$U5.json" 2>&1 | head -c 500)"
stop_dra

# the GPU host's check (tests/gpu/dra_check.sh) on the simulated GPU: everything before its
# containers (the API server on the standard library alone, prepare, the spec applied to bundles)
GS_RUNC=$RUNC DRA_ROOT=$DRV bash "$SRC/tests/gpu/dra_check.sh" "$BUILD" "$TMP/dra-check" >"$TMP/dra-check.txt" 2>&1
rc=$?
if [ "$rc" = 0 ] && [ "$(grep -c '^PASS ' "$TMP/dra-check.txt")" -ge 11 ] && ! grep -q '^FAIL ' "$TMP/dra-check.txt" &&
   tail -1 "$TMP/dra-check.txt" | grep -qE '^[0-9]+ passed, 0 failed, 2 skipped$'; then
        ok "tests/gpu/dra_check.sh on the simulated GPU: $(tail -1 "$TMP/dra-check.txt") (the containers: the GPU host's)"
else not_ok "tests/gpu/dra_check.sh (rc $rc): $(grep -E '^(FAIL|SKIP)' "$TMP/dra-check.txt" | head -5) $(tail -3 "$TMP/dra-check.txt")"; fi

# deploy/k8s/dra: what the cluster gets parses, and says what the plugin reads
if "$PY" - "$SRC/deploy/k8s/dra" "$GS" >"$TMP/deploy.out" 2>&1 <<'PYEOF'
import glob, os, subprocess, sys, yaml
d, gs = sys.argv[1], sys.argv[2]
docs = [x for f in sorted(glob.glob(d + "/*.yaml")) for x in yaml.safe_load_all(open(f)) if x]
kinds = sorted({x["kind"] for x in docs})
assert kinds == ["ClusterRole", "ClusterRoleBinding", "ConfigMap", "DaemonSet", "DeviceClass", "Pod",
                 "ResourceClaimTemplate", "ServiceAccount", "ValidatingAdmissionPolicy",
                 "ValidatingAdmissionPolicyBinding"], kinds
role = [x for x in docs if x["kind"] == "ClusterRole"][0]
assert {(r["resources"][0], tuple(r["verbs"]), tuple(r.get("resourceNames", ()))) for r in role["rules"]} == {
    ("resourceclaims", ("get",), ()), ("resourceclaims/status", ("patch",), ()),
    ("resourceclaims/driver", ("associated-node:patch",), ("gpu.gpuslice.io",)),
    ("resourceslices", ("get", "create", "update", "delete"), ()), ("events", ("create",), ()), ("nodes", ("get",), ())}, role["rules"]
assert all(len(r["resources"]) == 1 for r in role["rules"]), role["rules"]
ds = [x for x in docs if x["kind"] == "DaemonSet"][0]["spec"]["template"]["spec"]
c = ds["containers"][0]
helptext = subprocess.run([gs, "dra-plugin", "--help"], capture_output=True, text=True).stdout
for a in c["args"][1:]:
    assert not a.startswith("--") or a in helptext, "option %s not in --help" % a
assert c["env"][0]["name"] == "NODE_NAME"
assert {"name": "POD_UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}} in c["env"], c["env"]
mounts = {m["mountPath"] for m in c["volumeMounts"]}
assert {"/var/lib/kubelet/plugins_registry", "/var/lib/kubelet/plugins", "/var/run/cdi"} <= mounts, mounts
t = {x["metadata"]["name"]: x for x in docs if x["kind"] == "ResourceClaimTemplate"}
req = t["slice-4g-30"]["spec"]["spec"]["devices"]["requests"][0]["exactly"]
assert req["capacity"]["requests"] == {"memory": "4Gi", "compute": "30"}, req
mreq = t["mig-share-2g-20"]["spec"]["spec"]["devices"]["requests"][0]["exactly"]
assert mreq["deviceClassName"] == "mig.gpuslice.io" and mreq["capacity"]["requests"] == {"memory": "2Gi", "compute": "20"}, mreq
cls = {x["metadata"]["name"]: x["spec"] for x in docs if x["kind"] == "DeviceClass"}
assert set(cls) == {"gpu.gpuslice.io", "mig.gpuslice.io", "gpu-high.gpuslice.io"}, set(cls)
# the example claim asks priority high: its class must allow it (issue 31), the others must not
assert req["deviceClassName"] == "gpu-high.gpuslice.io", req
assert "config" not in cls["gpu.gpuslice.io"] and "config" not in cls["mig.gpuslice.io"]
hp = cls["gpu-high.gpuslice.io"]["config"][0]["opaque"]
assert hp["driver"] == "gpu.gpuslice.io" and hp["parameters"] == {"apiVersion": "gpu.gpuslice.io/v1alpha1",
    "kind": "SliceConfig", "maxPriority": "high", "maxComputeMode": "share"}, hp
cfg = t["slice-4g-30"]["spec"]["spec"]["devices"]["config"][0]["opaque"]["parameters"]
assert cfg["priority"] == "high", cfg
# the admission policy: the plugin's own service account (as rbac.yaml and the DaemonSet name it)
# writes only the slices of the node its token is bound to, of its driver; bound with Deny
sa = [x for x in docs if x["kind"] == "ServiceAccount"][0]["metadata"]
assert ds["serviceAccountName"] == sa["name"], (ds["serviceAccountName"], sa)
vap = [x for x in docs if x["kind"] == "ValidatingAdmissionPolicy"][0]
spec = vap["spec"]
assert spec["failurePolicy"] == "Fail"
rr = spec["matchConstraints"]["resourceRules"]
assert [(r["apiGroups"], r["resources"], sorted(r["operations"])) for r in rr] == \
    [(["resource.k8s.io"], ["resourceslices"], ["CREATE", "DELETE", "UPDATE"])], rr
user = "system:serviceaccount:%s:%s" % (sa["namespace"], sa["name"])
assert [m["expression"].strip() for m in spec["matchConditions"]] == ["request.userInfo.username == '%s'" % user], spec
v = {x["name"]: x["expression"].strip() for x in spec["variables"]}
assert "authentication.kubernetes.io/node-name" in v["tokenNode"] and "oldObject" in v["slice"] \
    and v["sliceNode"] == "variables.slice.spec.?nodeName.orValue('')", v
checks = [x["expression"].strip() for x in spec["validations"]]
assert checks == ["variables.tokenNode != ''", "variables.sliceNode == variables.tokenNode",
                  "variables.slice.spec.driver == 'gpu.gpuslice.io'"], checks
b = [x for x in docs if x["kind"] == "ValidatingAdmissionPolicyBinding"][0]["spec"]
assert b == {"policyName": vap["metadata"]["name"], "validationActions": ["Deny"]}, b
print("ok")
PYEOF
then ok "deploy/k8s/dra: DeviceClasses (gpu-high.gpuslice.io the only one allowing high and share; the example's), RBAC (get claims, patch their status (+ the 1.36 driver verb for ours); get/create/update/delete slices; create events; get nodes), POD_UID for sockets of the instance's own, the DaemonSet's options in --help, the 4Gi/30 % template and the 2Gi/20 % MIG share's, the admission policy (the plugin's service account writes only its own node's slices, bound with Deny)"
else not_ok "deploy/k8s/dra: $(tail -3 "$TMP/deploy.out")"; fi
finish
