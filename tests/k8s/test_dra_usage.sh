#!/usr/bin/env bash
# gpuslice dra-plugin (issue 33): each prepared slice share's usage in its ResourceClaim's
# status.devices[].data, and an Event when the share hits its memory quota, against the fake API
# server. Claims are prepared through the fake kubelet; their slices' usage regions are written
# here (tests/observe/region_tool share: what a container's processes could leave in them, from a
# fair 3.9 GiB / 30 % to garbage):
#   1. a 4 Gi / 30 % share at 3.9 GiB and ~30 % GPU time: its data on the claim (memory in use,
#      peak, quota, GPU-time share, throttled time, a summary), the Ready condition the driver
#      wrote beside it kept (a field manager of its own);
#   2. the usage falls: the data follows, the peak stays; a steady share writes nothing more;
#   3. refusals at the quota: one MemoryQuotaReached Event on the claim, not one per refusal;
#   4. a damaged region (bad magic): no data, the plugin lives on; a valid-looking region with
#      absurd numbers: clamped (memory to the GPU's, GPU time to 100 %, counts to JSON's);
#   5. --status-period 0: nothing written;
#   6. the plugin's own metrics (--metrics-listen): prepare and unprepare counts and durations.
. "$(dirname "$0")/../integration/lib.sh"
. "$SRC/tests/integration/bundle.sh"
. "$SRC/tests/k8s/lib.sh"
. "$SRC/tests/k8s/dra_lib.sh"

need jq
need openssl
TOOL=$BUILD/tests/region_tool
[ -x "$GS" ] && [ -x "$TOOL" ] || { echo "not ok - $GS or $TOOL is not built"; exit 1; }
if ! have_grpc || ! "$PY" -c 'import jsonschema' 2>/dev/null; then
        not_ok "$PY cannot import grpc, grpc_tools and jsonschema (make test-deps: python3-grpcio python3-grpc-tools python3-jsonschema)"
        finish
fi

DRV=$(mkroot drv 2gpu.conf)
GPU0=$GPU0_UUID
DRIVER=u$$.gpuslice.io
NODE=node-u
API_STATE=$TMP/api
REGIONS=$TMP/regions
REG=$TMP/plugins_registry PLUG=$TMP/plugins/$DRIVER
mkdir -p "$REG" "$TMP/plugins" "$TMP/cdi" "$REGIONS"
OWNER_PID= TOOL_PIDS=()
cleanup() {
        stop_all_dra
        stop_apiserver
        for p in "${TOOL_PIDS[@]}" $OWNER_PID; do kill "$p" 2>/dev/null; done
        rm -rf "$TMP"
}
trap cleanup EXIT

printf '[driver]\nroot = "%s"\n\n[slice]\nregions-dir = "%s"\n' "$DRV" "$REGIONS" >"$TMP/dra.toml"
start_apiserver "$API_STATE" "$TMP/kubeconfig"
start_dra "$TMP/dra.log" -c "$TMP/dra.toml" --driver-name "$DRIVER" --kubeconfig "$TMP/kubeconfig" --node "$NODE" \
        --cdi-dir "$TMP/cdi" --plugin-dir "$PLUG" --registry-dir "$REG" --resync-period 1 --status-period 1
SOCK=$PLUG/dra.sock
wait_for 20 test -S "$SOCK" || { not_ok "the plugin does not serve $SOCK: $(tail -5 "$TMP/dra.log")"; finish; }

# share NAME UID DEVICE MEMORY COMPUTE: an allocated slice claim in namespace ml
share() {
        claim_json ml "$1" "$2" "$DRIVER" "[{\"request\": \"gpu\", \"driver\": \"$DRIVER\", \"pool\": \"$NODE\",
                \"device\": \"$3\", \"shareID\": \"5f1c9d1e-0000-4000-8000-${2: -12}\",
                \"consumedCapacity\": {\"memory\": \"$4\", \"compute\": \"$5\"}}]"
}
U1=22222222-aaaa-4bbb-8ccc-000000000001 U2=22222222-aaaa-4bbb-8ccc-000000000002 U3=22222222-aaaa-4bbb-8ccc-000000000003
share slice-4g-30 "$U1" gpu-0 4Gi 30
share garbage "$U2" gpu-0 2Gi 20
share absurd "$U3" gpu-0 1Gi 10
for c in "slice-4g-30/$U1" "garbage/$U2" "absurd/$U3"; do
        dra prepare "$SOCK" v1 "ml/$c"
        kexpect "claim ml/${c%/*} prepared" ".ok and (.claims[\"${c#*/}\"].error // \"\") == \"\""
done

# slice ID CLAIM: the slice directory a container of CLAIM would have (the hook writes it: the owner,
# a live process here, and the labels the claim's CDI spec gave the hook); its region is written apart
sleep 600 &
OWNER_PID=$!
slice() {
        mkdir -p "$REGIONS/$1"
        echo "$OWNER_PID $(awk '{print $22}' "/proc/$OWNER_PID/stat")" >"$REGIONS/$1/owner"
        printf '{"namespace": "ml", "pod": "trainer-0", "claim": "%s"}\n' "$2" >"$REGIONS/$1/labels"
}
# region ID USED REFUSED BUSY WAIT MS: region_tool share (see it), in the background when MS > 0
region() {
        if [ "$6" = 0 ]; then
                "$TOOL" share "$REGIONS/$1/usage" "$GPU0" 4294967296 "$2" "$3" "$4" "$5" 0 || not_ok "region_tool share"
                return
        fi
        "$TOOL" share "$REGIONS/$1/usage" "$GPU0" 4294967296 "$2" "$3" "$4" "$5" "$6" &
        TOOL_PIDS+=($!)
}
claimfile() { echo "$API_STATE/claims/ml/$1.json"; }
# data CLAIM JQ: the claim's data of our entry satisfies JQ
data() { jq -e --arg d "$DRIVER" "[.status.devices // [] | .[] | select(.driver == \$d) | .data // empty] | .[0] // {} | $2" "$(claimfile "$1")" >/dev/null 2>&1; }
entry() { jq -c --arg d "$DRIVER" '[.status.devices // [] | .[] | select(.driver == $d)]' "$(claimfile "$1")" | head -c 900; }
patches() { grep -c "^PATCH /apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/$1/status?fieldManager=$DRIVER-usage" "$API_STATE/requests.log"; }

# ---------------------------------------------------------------------------------------------
# 1. A fair share: its usage on the claim

# the driver's own word on the entry first (as after an error and a prepare: Ready True)
cond='{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "slice-4g-30", "namespace": "ml"},
       "status": {"devices": [{"driver": "'"$DRIVER"'", "pool": "'"$NODE"'", "device": "gpu-0",
        "shareID": "5f1c9d1e-0000-4000-8000-000000000001", "conditions": [{"type": "Ready", "status": "True",
        "reason": "Prepared", "message": "prepared", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}]}}'
code=$(curl -sS -o "$TMP/api.out" -w '%{http_code}' --cacert "$TMP/api-cert.pem" -H "Authorization: Bearer $TOKEN" \
        -H 'Content-Type: application/apply-patch+yaml' -X PATCH --data "$cond" \
        "https://127.0.0.1:$API_PORT/apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/slice-4g-30/status?fieldManager=$DRIVER&force=true")
[ "$code" = 200 ] || not_ok "the driver's condition not applied: HTTP $code $(head -c 300 "$TMP/api.out")"

slice c1 slice-4g-30
region c1 4187593113 0 300 50 6000
if wait_for 15 data slice-4g-30 '.memory.usedBytes == 4187593113 and (.compute.usedPercent // 0) > 0'; then
        ok "a 3.9 GiB / ~30 % share: its usage in the claim's status.devices[].data within a few periods"
else not_ok "no usage data on the claim: $(entry slice-4g-30); $(tail -3 "$TMP/dra.log")"; fi
data slice-4g-30 '.memory == {usedBytes: 4187593113, peakBytes: 4187593113, limitBytes: 4294967296, quotaRefusals: 0}
        and .compute.limitPercent == 30 and .compute.usedPercent >= 15 and .compute.usedPercent <= 45
        and .compute.windowSeconds >= 0.9 and .compute.throttledSeconds > 0 and .compute.throttledSeconds <= 2
        and .processes == 1 and (.summary | startswith("3.9 of 4 Gi (peak 3.9 Gi), GPU time "))' &&
        ok "... memory in use, peak and quota in bytes (the claim's quota, not the region's), GPU time near 30 % of 30 % over the window, throttled time, the processes, \"3.9 of 4 Gi\"" ||
        not_ok "... data: $(entry slice-4g-30)"
jq -e --arg d "$DRIVER" '[.status.devices[] | select(.driver == $d)] | length == 1 and .[0].conditions[0].reason == "Prepared"
        and .[0].conditions[0].lastTransitionTime == "2026-01-01T00:00:00Z" and .[0].data != null' "$(claimfile slice-4g-30)" >/dev/null &&
        ok "... in the driver's entry beside its Ready condition, which stays as it was (the usage is a field manager of its own)" ||
        not_ok "... the entry: $(entry slice-4g-30)"
[ ! -s "$API_STATE/invalid.log" ] && ok "... nothing the plugin wrote was refused (AllocatedDeviceStatus, data at most 10 KiB)" ||
        not_ok "refused writes: $(head -3 "$API_STATE/invalid.log")"

# ---------------------------------------------------------------------------------------------
# 2. The usage falls, then holds still

wait "${TOOL_PIDS[@]}" 2>/dev/null; TOOL_PIDS=()
region c1 1073741824 0 0 0 0
if wait_for 10 data slice-4g-30 '.memory.usedBytes == 1073741824 and .memory.peakBytes == 4187593113'; then
        ok "the share frees memory: usedBytes follows (1 GiB), peakBytes stays at 3.9 GiB"
else not_ok "the data did not follow: $(entry slice-4g-30)"; fi
wait_for 10 data slice-4g-30 '.compute.usedPercent == 0' || not_ok "the idle share's GPU time not 0: $(entry slice-4g-30)"
sleep 2.5
n0=$(patches slice-4g-30)
sleep 4
n1=$(patches slice-4g-30)
[ "$n1" = "$n0" ] && ok "a share that holds still is not written again ($n0 usage writes so far, none in 4 s at a 1 s period)" ||
        not_ok "a share that holds still is written again: $((n1 - n0)) times in 4 s"

# ---------------------------------------------------------------------------------------------
# 3. The quota hit

region c1 4294967296 3 0 0 0
events() { grep -c '"reason": "MemoryQuotaReached"' "$API_STATE/events.log" 2>/dev/null; }
has_event() { [ "$(events)" -ge 1 ] 2>/dev/null; }
if wait_for 10 has_event; then ok "refusals at the quota: a MemoryQuotaReached Event"
else not_ok "no MemoryQuotaReached Event: $(cat "$API_STATE/events.log" 2>/dev/null | head -c 600); $(tail -3 "$TMP/dra.log")"; fi
grep '"MemoryQuotaReached"' "$API_STATE/events.log" | head -1 | jq -e --arg u "$U1" '.type == "Warning" and .metadata.namespace == "ml"
        and .involvedObject == {apiVersion: "resource.k8s.io/v1", kind: "ResourceClaim", namespace: "ml", name: "slice-4g-30", uid: $u}
        and (.message | test("share of gpu-0 hit its memory quota of 4Gi: 3 allocation"))' >/dev/null &&
        ok "... on the ResourceClaim (kubectl describe resourceclaim shows it), Warning, the device, the quota, the refusals" ||
        not_ok "... the Event: $(grep MemoryQuotaReached "$API_STATE/events.log" | head -1 | head -c 600)"
wait_for 10 data slice-4g-30 '.memory.quotaRefusals == 3' && ok "... the refusals in the data (quotaRefusals 3)" ||
        not_ok "... quotaRefusals: $(entry slice-4g-30)"
region c1 4294967296 50 0 0 0
wait_for 10 data slice-4g-30 '.memory.quotaRefusals == 50' || not_ok "quotaRefusals not 50: $(entry slice-4g-30)"
sleep 1.5
[ "$(events)" = 1 ] && ok "... 47 more refusals within the minute: no second Event (a tenant failing in a loop floods nothing)" ||
        not_ok "no second Event expected within the minute: $(events) MemoryQuotaReached Events"

# ---------------------------------------------------------------------------------------------
# 4. The tenant's garbage

slice c2 garbage
"$TOOL" corrupt magic "$REGIONS/c2/usage" || not_ok "region_tool corrupt"
slice c3 absurd
region c3 18446744073709551615 18446744073709551615 50000 1000000 3000
if wait_for 10 data absurd '(.compute.usedPercent // 0) > 0'; then
        data absurd '.memory.usedBytes == 42949672960 and .memory.peakBytes == 42949672960 and .memory.limitBytes == 1073741824
                and .memory.quotaRefusals == 9223372036854775807 and .compute.usedPercent == 100
                and .compute.throttledSeconds <= (.compute.windowSeconds + 0.5) and .processes == 1' &&
                ok "a region with absurd numbers (2^64-1 bytes and refusals, 50x the wall time busy): clamped (40 GiB, the GPU's; 2^63-1; 100 %; throttled at most the window)" ||
                not_ok "absurd region's data not clamped: $(entry absurd)"
else not_ok "no data for the absurd region: $(entry absurd); $(tail -3 "$TMP/dra.log")"; fi
sleep 1
jq -e --arg d "$DRIVER" '[.status.devices // [] | .[] | select(.driver == $d and .data != null)] == []' "$(claimfile garbage)" >/dev/null &&
        ok "a damaged region (bad magic): no data on its claim" || not_ok "garbage region's claim: $(entry garbage)"
[ "$(grep -c "usage region $REGIONS/c2/usage: bad magic" "$TMP/dra.log")" = 1 ] && ok "... said once in the plugin's log" ||
        not_ok "... not in the log: $(tail -5 "$TMP/dra.log")"
kill -0 "$DRA_PID" 2>/dev/null && ok "the plugin lives on" || not_ok "the plugin died: $(tail -5 "$TMP/dra.log")"
[ ! -s "$API_STATE/invalid.log" ] && ok "nothing the plugin wrote was refused" || not_ok "refused writes: $(head -3 "$API_STATE/invalid.log")"
dra unprepare "$SOCK" v1 "ml/absurd/$U3"
kexpect "the absurd claim unprepared" '.ok'

# ---------------------------------------------------------------------------------------------
# 5. --status-period 0: off

"$GS" dra-plugin --status-period=-1 >"$TMP/sp.out" 2>&1
[ $? = 2 ] && grep -q "invalid --status-period" "$TMP/sp.out" && ok "--status-period=-1 refused (a usage error)" ||
        not_ok "--status-period=-1: $(head -c 300 "$TMP/sp.out")"
stop_dra
n0=$(patches slice-4g-30) # (a plugin writes a share's usage at its first sample: none here)
start_dra "$TMP/dra2.log" -c "$TMP/dra.toml" --driver-name "$DRIVER" --kubeconfig "$TMP/kubeconfig" --node "$NODE" \
        --cdi-dir "$TMP/cdi" --plugin-dir "$PLUG" --registry-dir "$REG" --resync-period 1 --status-period 0 \
        --metrics-listen 127.0.0.1:0
wait_for 20 test -S "$SOCK" || not_ok "the plugin (--status-period 0) does not serve $SOCK: $(tail -5 "$TMP/dra2.log")"
region c1 2147483648 50 0 0 0
sleep 3
[ "$(patches slice-4g-30)" = "$n0" ] && data slice-4g-30 '.memory.usedBytes == 4294967296' &&
        ok "--status-period 0: the usage not written (the claim keeps the last data)" ||
        not_ok "--status-period 0 still writes: $(entry slice-4g-30)"

# ---------------------------------------------------------------------------------------------
# 6. The plugin's own metrics (--metrics-listen): counts and durations since it started

MURL=$(sed -n 's|.*metrics on \(http://[^ ]*\).*|\1|p' "$TMP/dra2.log" | head -1)
[ -n "$MURL" ] && ok "--metrics-listen 127.0.0.1:0: the plugin says where ($MURL)" || not_ok "no metrics address logged: $(tail -3 "$TMP/dra2.log")"
dra prepare "$SOCK" v1 "ml/slice-4g-30/$U1"
kexpect "a prepared claim asked again (answered from the checkpoint)" ".ok and (.claims[\"$U1\"].error // \"\") == \"\""
dra prepare "$SOCK" v1 "ml/no-such-claim/22222222-aaaa-4bbb-8ccc-000000000009"
kexpect "a claim the API server does not have: refused" ".ok and (.claims[\"22222222-aaaa-4bbb-8ccc-000000000009\"].error // \"\") != \"\""
dra unprepare "$SOCK" v1 "ml/garbage/$U2"
kexpect "the garbage claim unprepared" '.ok'
curl -sS -o "$TMP/metrics.txt" -w '%{http_code} %{content_type}' "$MURL" >"$TMP/metrics.code" 2>&1
m() { awk -v k="$1" '$1 == k {print $2}' "$TMP/metrics.txt"; }
if grep -q '^200 text/plain; version=0.0.4' "$TMP/metrics.code" &&
   [ "$(m 'gpuslice_dra_prepare_total{result="prepared"}')" = 1 ] && [ "$(m 'gpuslice_dra_prepare_total{result="refused"}')" = 1 ] &&
   [ "$(m 'gpuslice_dra_unprepare_total{result="unprepared"}')" = 1 ] && [ "$(m 'gpuslice_dra_unprepare_total{result="failed"}')" = 0 ] &&
   [ "$(m gpuslice_dra_prepare_duration_seconds_count)" = 2 ] && [ "$(m 'gpuslice_dra_prepare_duration_seconds_bucket{le="+Inf"}')" = 2 ] &&
   [ "$(m gpuslice_dra_unprepare_duration_seconds_count)" = 1 ] && [ "$(m gpuslice_dra_prepared_claims)" = 1 ] &&
   awk '$1 == "gpuslice_dra_prepare_duration_seconds_sum" { exit !($2 > 0 && $2 < 10) }' "$TMP/metrics.txt"; then
        ok "GET /metrics: prepare 1 prepared + 1 refused, unprepare 1, their durations (histograms), 1 claim prepared"
else not_ok "the plugin's metrics: $(cat "$TMP/metrics.code"); $(grep -v '^#' "$TMP/metrics.txt" | head -40 | tr '\n' ' ')"; fi
code=$(curl -sS -o /dev/null -w '%{http_code}' -X POST "$MURL" 2>&1)
[ "$code" = 405 ] && [ "$(curl -sS "${MURL%/metrics}/healthz")" = ok ] && ok "... POST refused (405), /healthz ok" ||
        not_ok "POST /metrics: $code, /healthz: $(curl -sS "${MURL%/metrics}/healthz" 2>&1)"

finish
