#!/usr/bin/env bash
# gpuslice dra-plugin and resource.k8s.io's versions (issue 33, item 6): against a fake API server
# that serves only v1beta2 (Kubernetes 1.33: --versions v1beta2) the plugin finds so by discovery
# and speaks v1beta2 on every path: the slice published there without the consumable-capacity
# fields v1beta2 lacks (GPUs allocated whole), a claim read there, its status written there;
# against one that serves v1 and v1beta2 (1.34 and later) it speaks v1. On the simulated 2-GPU
# machine, no container (the specs stay in the test's directory). Every wait ends on what the
# plugin did (a log line, the API server's requests), never on a timeout alone.
#
# The mutation check (tests/mutation/run.sh) runs this test for draversion (version detection
# skipped: always v1) and drav1beta2whole (the v1-only fields written through v1beta2).
. "$(dirname "$0")/dra_lib.sh" # with tests/integration/lib.sh, bundle.sh (the simulated GPUs' uuids), tests/k8s/lib.sh

CDI_DIR=$TMP/cdi
dra_setup
BOTH=$TMP/api-both
dra_side_apiserver both
start_apiserver "$API_STATE" "$TMP/kubeconfig" --versions v1beta2
common=(-c "$TMP/dra.toml" --driver-name "$DRIVER" --node "$NODE" --resync-period 0.2)
start_dra_side both "$TMP/dra-both.log" "${common[@]}"
PID_BOTH=$DRA_PID
start_dra "$TMP/dra.log" "${common[@]}" --kubeconfig "$TMP/kubeconfig" --cdi-dir "$CDI_DIR" --plugin-dir "$PLUG" \
        --registry-dir "$REG"
PID=$DRA_PID SOCK=$PLUG/dra.sock
SLICE=$API_STATE/slices/$NODE-$DRIVER.json
running() { ps -o stat= -p "$1" 2>/dev/null | grep -qv Z; }
# said LOG PID TEXT: the plugin's log holds TEXT, or the plugin is no longer running
said() { grep -qF -- "$3" "$1" || ! running "$2"; }
# v1paths STATE: the requests to resource.k8s.io/v1 paths that server saw
v1paths() { grep -c " /apis/resource.k8s.io/v1/" "$1/requests.log"; }

# ---------------------------------------------------------------------------------------------
# A v1beta2-only API server (Kubernetes 1.33)

# published, or failed to (then the check fails at once, not at the wait's end)
tried() { said "$TMP/dra.log" "$PID" "published ResourceSlice" || grep -q "cannot publish the ResourceSlice" "$TMP/dra.log"; }
if wait_for 20 tried && grep -q "published ResourceSlice" "$TMP/dra.log" &&
   grep -q "^POST /apis/resource.k8s.io/v1beta2/resourceslices 201" "$API_STATE/requests.log" &&
   [ "$(v1paths "$API_STATE")" = 0 ] && [ -s "$SLICE" ]; then
        ok "v1beta2-only API server: the slice published at /apis/resource.k8s.io/v1beta2/resourceslices, no v1 path asked"
else not_ok "v1beta2-only API server: the slice published at /apis/resource.k8s.io/v1beta2/resourceslices, no v1 path asked:" \
        "$(grep -v "^GET /api/v1/nodes" "$API_STATE/requests.log" | head -4 | tr '\n' ';') $(tail -2 "$TMP/dra.log")"; fi

if grep -qF "resource.k8s.io/v1beta2 (the API server does not serve v1): no consumable capacity" "$TMP/dra.log"; then
        ok "... the plugin says which version it speaks, and that GPUs are allocated whole there"
else not_ok "... the plugin does not say which version it speaks: $(head -3 "$TMP/dra.log")"; fi

# v1beta2 as 1.33 serves it has no consumable capacity: fields it lacks would be dropped with a
# warning (DIR/unknown-fields.log); the plugin writes none, so each GPU is one whole device
if [ ! -e "$API_STATE/unknown-fields.log" ] && [ ! -s "$API_STATE/invalid.log" ] &&
   jq -e '[.spec.devices[].name] == ["gpu-0", "gpu-1"] and
          ([.spec.devices[] | .allowMultipleAllocations, (.capacity[] | .requestPolicy)] | map(select(. != null)) == []) and
          (.spec.devices[0].capacity.memory.value | length > 0)' "$SLICE" >/dev/null; then
        ok "... no field v1beta2 lacks written (allowMultipleAllocations, requestPolicy): whole GPUs, their capacity kept"
else not_ok "... no field v1beta2 lacks written: $(head -3 "$API_STATE/unknown-fields.log" 2>/dev/null | tr '\n' ';')" \
        "$(head -2 "$API_STATE/invalid.log" 2>/dev/null) $(jq -c '.spec.devices[0]' "$SLICE" 2>&1 | head -c 300)"; fi

U=f0000000-0000-4000-8000-000000000001
claim_json ml whole-b2 "$U" "$DRIVER" "$(res gpu-1)"
dra prepare "$SOCK" v1 "ml/whole-b2/$U"
kexpect "a claim of gpu-1 read through v1beta2, prepared (its CDI device)" \
        ".ok and .claims[\"$U\"].devices == [{\"request_names\": [\"gpu\"], \"pool_name\": \"$NODE\", \"device_name\": \"gpu-1\",
          \"cdi_device_ids\": [\"$KIND=$U-gpu-1\"]}]"
[ "$(gets ml whole-b2)" = 0 ] && grep -q "^GET /apis/resource.k8s.io/v1beta2/namespaces/ml/resourceclaims/whole-b2 200" \
        "$API_STATE/requests.log" && ok "... read from v1beta2's claim path" ||
        not_ok "... not read from v1beta2's claim path: $(grep whole-b2 "$API_STATE/requests.log" | tr '\n' ';')"
# a claim the plugin refuses (a device this node has not): its status says why, applied at v1beta2
UB=f0000000-0000-4000-8000-000000000002
claim_json ml bad-b2 "$UB" "$DRIVER" "$(res gpu-9)"
dra prepare "$SOCK" v1 "ml/bad-b2/$UB"
if [ "$(kq ".ok and (.claims[\"$UB\"].devices // []) == [] and (.claims[\"$UB\"].error | length > 0)")" = true ] &&
   grep -q "^PATCH /apis/resource.k8s.io/v1beta2/namespaces/ml/resourceclaims/bad-b2/status?fieldManager=$DRIVER&force=true 200" \
        "$API_STATE/requests.log" && [[ "$(ready bad-b2)" == "gpu-9 False PrepareFailed unknown device"* ]] && [ "$(v1paths "$API_STATE")" = 0 ]; then
        ok "a claim refused (gpu-9): its status (Ready False, PrepareFailed) applied at v1beta2's status path"
else not_ok "a claim refused (gpu-9): its status through v1beta2: '$(ready bad-b2)' $(head -c 200 "$TMP/k.json")" \
        "$(grep bad-b2 "$API_STATE/requests.log" | tr '\n' ';') $(tail -2 "$API_STATE/invalid.log" 2>/dev/null)"; fi

# the kubelet deletes the slice: read back and published again, at v1beta2 too
n0=$(grep -c "^POST /apis/resource.k8s.io/v1beta2/resourceslices 201" "$API_STATE/requests.log")
code=$(api DELETE "/apis/resource.k8s.io/v1beta2/resourceslices/$NODE-$DRIVER")
again() { [ "$(grep -c "^POST /apis/resource.k8s.io/v1beta2/resourceslices 201" "$API_STATE/requests.log")" -gt "$n0" ] ||
          ! running "$PID"; }
if [ "$code" = 200 ] && wait_for 10 again && [ -s "$SLICE" ] && [ "$(v1paths "$API_STATE")" = 0 ]; then
        ok "... the slice deleted: read back and published again at v1beta2"
else not_ok "... the slice deleted (HTTP $code): not published again at v1beta2: $(tail -3 "$API_STATE/requests.log" | tr '\n' ';')"; fi

# ---------------------------------------------------------------------------------------------
# An API server serving v1 and v1beta2 (Kubernetes 1.34-1.35): v1, with its consumable capacity

if wait_for 20 said "$TMP/dra-both.log" "$PID_BOTH" "published ResourceSlice" &&
   grep -q "^POST /apis/resource.k8s.io/v1/resourceslices 201" "$BOTH/requests.log" &&
   ! grep -q "resource.k8s.io/v1beta2/" "$BOTH/requests.log" &&
   grep -qF "resource.k8s.io/v1 (the API server serves it)" "$TMP/dra-both.log" &&
   jq -e '[.spec.devices[] | .allowMultipleAllocations] == [true, true]' "$BOTH/slices/$NODE-$DRIVER.json" >/dev/null; then
        ok "v1 and v1beta2 served: v1 spoken (said in the log), the GPUs shareable (allowMultipleAllocations)"
else not_ok "v1 and v1beta2 served: not v1: $(grep resourceslices "$BOTH/requests.log" | head -2 | tr '\n' ';') $(head -3 "$TMP/dra-both.log")"; fi

# deploy/k8s/dra/presets.yaml: gpu-quarter's request, as the scheduler allocates it on v1 (its
# capacity requests consumed), prepared as a quarter: the memory asked, 25 % of the GPU's time
if "$PY" - "$SRC/deploy/k8s/dra/presets.yaml" >"$TMP/presets.json" 2>"$TMP/presets.err" <<'PYEOF'
import json, sys, yaml
t = {x["metadata"]["name"]: x for x in yaml.safe_load_all(open(sys.argv[1])) if x}
assert set(t) == {"gpu-quarter", "gpu-half"} and all(x["kind"] == "ResourceClaimTemplate" for x in t.values()), t
r = {n: x["spec"]["spec"]["devices"]["requests"][0]["exactly"] for n, x in t.items()}
assert all(q["deviceClassName"] == "gpu.gpuslice.io" for q in r.values()), r
mi = lambda q: int(q.removesuffix("Mi"))
q, h = r["gpu-quarter"]["capacity"]["requests"], r["gpu-half"]["capacity"]["requests"]
assert (q["compute"], h["compute"]) == ("25", "50") and 4 * mi(q["memory"]) <= 81559 and 2 * mi(h["memory"]) <= 81559 \
    and mi(h["memory"]) == 2 * mi(q["memory"]), (q, h)
print(json.dumps(q))
PYEOF
then
        UQ=f0000000-0000-4000-8000-000000000003 QMEM=$(jq -r .memory "$TMP/presets.json")
        API_STATE=$BOTH claim_json ml quarter "$UQ" "$DRIVER" "$(res gpu-0 "" "$(cat "$TMP/presets.json")")"
        dra prepare "$TMP/plugins-both/dra.sock" v1 "ml/quarter/$UQ"
        # (the share's limits: its slice hook's options, per GPU)
        env=$(jq -c '[.devices[0].containerEdits.hooks[] | select(.hookName == "createRuntime") | .args[]]' \
                "$TMP/cdi-both/$DRIVER-claim-$UQ.json" 2>&1)
        if [ "$(kq ".ok and (.claims[\"$UQ\"].devices | length) == 1")" = true ] &&
           jq -e --arg m "--memory=$QMEM" 'index($m) != null and index("--compute-share=25") != null' \
                <<<"$env" >/dev/null; then
                ok "presets.yaml: gpu-quarter ($QMEM, 25 %; gpu-half twice it, both fitting 80 GB GPUs) prepared as its share"
        else not_ok "presets.yaml: gpu-quarter not prepared as its share: $(head -c 300 "$TMP/k.json") $env"; fi
else not_ok "presets.yaml: $(tail -2 "$TMP/presets.err")"; fi

# --api-version v1beta2 taken as given (nothing asked), and checked
"$GS" dra-plugin --api-version v1beta3 >"$TMP/bad.out" 2>&1
rc=$?
if [ "$rc" = 2 ] && grep -q "none of auto, v1, v1beta2" "$TMP/bad.out"; then ok "--api-version v1beta3: a usage error"
else not_ok "--api-version v1beta3: rc $rc: $(head -2 "$TMP/bad.out")"; fi

stop_dra
[ "$DRA_RC" = 0 ] && ok "the plugin stops on SIGTERM (exit 0)" || not_ok "the plugin's exit status at SIGTERM: $DRA_RC"
finish
