#!/usr/bin/env bash
# gpuslice dra-plugin (issue 33): each prepared slice share's usage in its ResourceClaim's
# status.devices[].data, and an Event when the share hits its memory quota, against the fake API
# server. Claims are prepared through the fake kubelet; their slices' usage regions are written
# here (tests/observe/region_tool share: what a container's processes could leave in them, from a
# fair 3.9 GiB / 30 % to garbage):
#   1. the plugin's own metrics (--metrics-listen): prepare and unprepare counts and durations;
#   2. --status-period 0: nothing written;
#   3. a 4 Gi / 30 % share at 3.9 GiB and ~30 % GPU time: its data on the claim (memory in use,
#      peak, quota, GPU-time share, throttled time, a summary), the Ready condition the driver
#      wrote beside it kept (a field manager of its own);
#   4. a damaged region (bad magic): no data, the plugin lives on; a valid-looking region with
#      absurd numbers: clamped (memory to the GPU's, GPU time to 100 %, counts to JSON's);
#   5. the usage falls: the data follows, the peak stays; a steady share writes nothing more;
#   6. refusals at the quota: one MemoryQuotaReached Event on the claim, not one per refusal;
#   7. a torn checkpoint, the plugin restarted: the share's entry rebuilt with its shareID, and
#      its usage written again (not refused: 422 without the shareID).
#
# The mutation check (tests/mutation/run.sh) runs this test up to the check meant for each of its
# mutations (drametrics, drastatusoff, drausage, draclamp, drachanged, draevents, drarefshare,
# drarebuildshare): those checks come in that order, as early as they can. The status period is
# short (P, 0.3 s; the GPU-time window is the period), every wait ends on what the plugin wrote
# where there is something to wait for, and the sleeps left (a share holding still, a second Event
# not posted) count periods.
. "$(dirname "$0")/dra_lib.sh" # with tests/integration/lib.sh, bundle.sh (the simulated GPUs' uuids), tests/k8s/lib.sh

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
SOCK=$PLUG/dra.sock
P=0.3 # the status period (s), the GPU-time window with it
# periods N: N status periods, in seconds
periods() { awk -v n="$1" -v p="$P" 'BEGIN { print n * p }'; }
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
# plugin LOG ARGS...: a plugin of the test's driver (ARGS: its status period and more), serving $SOCK
plugin() {
        local log=$1; shift
        rm -f "$SOCK"
        start_dra "$log" -c "$TMP/dra.toml" --driver-name "$DRIVER" --kubeconfig "$TMP/kubeconfig" --node "$NODE" \
                --cdi-dir "$TMP/cdi" --plugin-dir "$PLUG" --registry-dir "$REG" --resync-period 1 "$@"
        wait_for 20 test -S "$SOCK" || { not_ok "the plugin ($*) does not serve $SOCK: $(tail -5 "$log")"; finish; }
}

# share NAME UID DEVICE MEMORY COMPUTE: an allocated slice claim in namespace ml
share() {
        claim_json ml "$1" "$2" "$DRIVER" "[{\"request\": \"gpu\", \"driver\": \"$DRIVER\", \"pool\": \"$NODE\",
                \"device\": \"$3\", \"shareID\": \"5f1c9d1e-0000-4000-8000-${2: -12}\",
                \"consumedCapacity\": {\"memory\": \"$4\", \"compute\": \"$5\"}}]"
}
U1=22222222-aaaa-4bbb-8ccc-000000000001 U2=22222222-aaaa-4bbb-8ccc-000000000002 U3=22222222-aaaa-4bbb-8ccc-000000000003
U4=22222222-aaaa-4bbb-8ccc-000000000004 U9=22222222-aaaa-4bbb-8ccc-000000000009
share slice-4g-30 "$U1" gpu-0 4Gi 30
share garbage "$U2" gpu-0 2Gi 20
share absurd "$U3" gpu-0 1Gi 10
share spare "$U4" gpu-0 1Gi 10

# slice ID CLAIM: the slice directory a container of CLAIM would have (the hook writes it: the owner,
# a live process here, and the labels the claim's CDI spec gave the hook); its region is written apart
dra_slice_owner
slice() {
        dra_slice_dir "$1" "$2"
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
# stop_regions: the background region_tool runs ended (their regions stay as last written)
stop_regions() {
        local p
        for p in "${TOOL_PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
        TOOL_PIDS=()
}
claimfile() { echo "$API_STATE/claims/ml/$1.json"; }
# data CLAIM JQ: the claim's data of our entry satisfies JQ
data() { jq -e --arg d "$DRIVER" "[.status.devices // [] | .[] | select(.driver == \$d) | .data // empty] | .[0] // {} | $2" "$(claimfile "$1")" >/dev/null 2>&1; }
entry() { jq -c --arg d "$DRIVER" '[.status.devices // [] | .[] | select(.driver == $d)]' "$(claimfile "$1")" | head -c 900; }
patches() { grep -c "^PATCH /apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/$1/status?fieldManager=$DRIVER-usage" "$API_STATE/requests.log"; }

# ---------------------------------------------------------------------------------------------
# 1. The plugin's own metrics (--metrics-listen): counts and durations since it started (this
#    first plugin writes no usage: --status-period 0)

plugin "$TMP/dra.log" --status-period 0 --metrics-listen 127.0.0.1:0
MURL=$(sed -n 's|.*metrics on \(http://[^ ]*\).*|\1|p' "$TMP/dra.log" | head -1)
[ -n "$MURL" ] && ok "--metrics-listen 127.0.0.1:0: the plugin says where ($MURL)" || not_ok "no metrics address logged: $(tail -3 "$TMP/dra.log")"
dra prepare "$SOCK" v1 "ml/slice-4g-30/$U1" "ml/garbage/$U2" "ml/absurd/$U3" "ml/spare/$U4" "ml/no-such-claim/$U9"
kexpect "four claims prepared, a claim the API server does not have refused" \
        ".ok and [.claims[\"$U1\", \"$U2\", \"$U3\", \"$U4\"] | .error // \"\"] == [\"\", \"\", \"\", \"\"] and (.claims[\"$U9\"].error // \"\") != \"\""
dra unprepare "$SOCK" v1 "ml/spare/$U4"
kexpect "the spare claim unprepared" '.ok'
curl -sS -o "$TMP/metrics.txt" -w '%{http_code} %{content_type}' "$MURL" >"$TMP/metrics.code" 2>&1
m() { awk -v k="$1" '$1 == k {print $2}' "$TMP/metrics.txt"; }
if grep -q '^200 text/plain; version=0.0.4' "$TMP/metrics.code" &&
   [ "$(m 'gpuslice_dra_prepare_total{result="prepared"}')" = 4 ] && [ "$(m 'gpuslice_dra_prepare_total{result="refused"}')" = 1 ] &&
   [ "$(m 'gpuslice_dra_unprepare_total{result="unprepared"}')" = 1 ] && [ "$(m 'gpuslice_dra_unprepare_total{result="failed"}')" = 0 ] &&
   [ "$(m gpuslice_dra_prepare_duration_seconds_count)" = 5 ] && [ "$(m 'gpuslice_dra_prepare_duration_seconds_bucket{le="+Inf"}')" = 5 ] &&
   [ "$(m gpuslice_dra_unprepare_duration_seconds_count)" = 1 ] && [ "$(m gpuslice_dra_prepared_claims)" = 3 ] &&
   awk '$1 == "gpuslice_dra_prepare_duration_seconds_sum" { exit !($2 > 0 && $2 < 10) }' "$TMP/metrics.txt"; then
        ok "GET /metrics: prepare 4 prepared + 1 refused, unprepare 1, their durations (histograms), 3 claims prepared"
else not_ok "the plugin's metrics: $(cat "$TMP/metrics.code"); $(grep -v '^#' "$TMP/metrics.txt" | head -40 | tr '\n' ' ')"; fi
code=$(curl -sS -o /dev/null -w '%{http_code}' -X POST "$MURL" 2>&1)
[ "$code" = 405 ] && [ "$(curl -sS "${MURL%/metrics}/healthz")" = ok ] && ok "... POST refused (405), /healthz ok" ||
        not_ok "POST /metrics: $code, /healthz: $(curl -sS "${MURL%/metrics}/healthz" 2>&1)"

# ---------------------------------------------------------------------------------------------
# 2. --status-period 0: off. A plugin samples its shares as it starts: one restarted (with
#    --status-period 0) over a prepared share with a region writes nothing before it serves the
#    kubelet's call, nor after

"$GS" dra-plugin --status-period=-1 >"$TMP/sp.out" 2>&1
[ $? = 2 ] && grep -q "invalid --status-period" "$TMP/sp.out" && ok "--status-period=-1 refused (a usage error)" ||
        not_ok "--status-period=-1: $(head -c 300 "$TMP/sp.out")"
slice c1 slice-4g-30
region c1 4187593113 0 0 0 0
stop_dra
plugin "$TMP/dra0.log" --status-period 0
dra prepare "$SOCK" v1 "ml/slice-4g-30/$U1"
kexpect "a prepared claim asked again (answered from the checkpoint)" ".ok and (.claims[\"$U1\"].error // \"\") == \"\""
stop_dra
[ "$(patches slice-4g-30)" = 0 ] && ! data slice-4g-30 '. != {}' &&
        ok "--status-period 0: the usage not written" || not_ok "--status-period 0 still writes: $(entry slice-4g-30)"

# ---------------------------------------------------------------------------------------------
# 3. A fair share: its usage on the claim (and the other regions' for section 4: all are
#    sampled from the plugin's start on)

# the driver's own word on the entry first (as after an error and a prepare: Ready True)
driver_ready slice-4g-30 5f1c9d1e-0000-4000-8000-000000000001
[ "$code" = 200 ] || not_ok "the driver's condition not applied: HTTP $code $(head -c 300 "$TMP/api.out")"

# the regions' busy runs start before the plugin: its first window is busy throughout
region c1 4187593113 0 300 50 20000
slice c2 garbage
"$TOOL" corrupt magic "$REGIONS/c2/usage" || not_ok "region_tool corrupt"
slice c3 absurd
region c3 18446744073709551615 18446744073709551615 50000 1000000 20000
plugin "$TMP/dra1.log" --status-period "$P"
# (two samples: the first primes the GPU-time window; ~13 periods at most)
if wait_for 4 data slice-4g-30 '.memory.usedBytes == 4187593113 and (.compute.usedPercent // 0) > 0'; then
        ok "a 3.9 GiB / ~30 % share: its usage in the claim's status.devices[].data within a few periods"
else not_ok "no usage data on the claim: $(entry slice-4g-30); $(tail -3 "$TMP/dra1.log")"; fi
data slice-4g-30 '.memory == {usedBytes: 4187593113, peakBytes: 4187593113, limitBytes: 4294967296, quotaRefusals: 0}
        and .compute.limitPercent == 30 and .compute.usedPercent >= 15 and .compute.usedPercent <= 45
        and .compute.windowSeconds >= '"$(periods 0.9)"' and .compute.throttledSeconds > 0 and .compute.throttledSeconds <= 2
        and .processes == 1 and (.summary | startswith("3.9 of 4 Gi (peak 3.9 Gi), GPU time "))' &&
        ok "... memory in use, peak and quota in bytes (the claim's quota, not the region's), GPU time near 30 % of 30 % over the window (a period), throttled time, the processes, \"3.9 of 4 Gi\"" ||
        not_ok "... data: $(entry slice-4g-30)"
jq -e --arg d "$DRIVER" '[.status.devices[] | select(.driver == $d)] | length == 1 and .[0].conditions[0].reason == "Prepared"
        and .[0].conditions[0].lastTransitionTime == "2026-01-01T00:00:00Z" and .[0].data != null' "$(claimfile slice-4g-30)" >/dev/null &&
        ok "... in the driver's entry beside its Ready condition, which stays as it was (the usage is a field manager of its own)" ||
        not_ok "... the entry: $(entry slice-4g-30)"
[ ! -s "$API_STATE/invalid.log" ] && ok "... nothing the plugin wrote was refused (AllocatedDeviceStatus, data at most 10 KiB)" ||
        not_ok "refused writes: $(head -3 "$API_STATE/invalid.log")"

# ---------------------------------------------------------------------------------------------
# 4. The tenant's garbage

if wait_for 10 data absurd '(.compute.usedPercent // 0) > 0'; then
        data absurd '.memory.usedBytes == 42949672960 and .memory.peakBytes == 42949672960 and .memory.limitBytes == 1073741824
                and .memory.quotaRefusals == 9223372036854775807 and .compute.usedPercent == 100
                and .compute.throttledSeconds <= (.compute.windowSeconds + 0.5) and .processes == 1' &&
                ok "a region with absurd numbers (2^64-1 bytes and refusals, 50x the wall time busy): clamped (40 GiB, the GPU's; 2^63-1; 100 %; throttled at most the window)" ||
                not_ok "absurd region's data not clamped: $(entry absurd)"
else not_ok "no data for the absurd region: $(entry absurd); $(tail -3 "$TMP/dra1.log")"; fi
stop_regions
jq -e --arg d "$DRIVER" '[.status.devices // [] | .[] | select(.driver == $d and .data != null)] == []' "$(claimfile garbage)" >/dev/null &&
        ok "a damaged region (bad magic): no data on its claim (the plugin sampled it as long as the others)" || not_ok "garbage region's claim: $(entry garbage)"
kill -0 "$DRA_PID" 2>/dev/null && ok "the plugin lives on" || not_ok "the plugin died: $(tail -5 "$TMP/dra1.log")"
[ ! -s "$API_STATE/invalid.log" ] && ok "nothing the plugin wrote was refused" || not_ok "refused writes: $(head -3 "$API_STATE/invalid.log")"
dra unprepare "$SOCK" v1 "ml/absurd/$U3"
kexpect "the absurd claim unprepared" '.ok'

# ---------------------------------------------------------------------------------------------
# 5. The usage falls, then holds still

region c1 1073741824 0 0 0 0
if wait_for 10 data slice-4g-30 '.memory.usedBytes == 1073741824 and .memory.peakBytes == 4187593113'; then
        ok "the share frees memory: usedBytes follows (1 GiB), peakBytes stays at 3.9 GiB"
else not_ok "the data did not follow: $(entry slice-4g-30)"; fi
wait_for 10 data slice-4g-30 '.compute.usedPercent == 0 and .compute.throttledSeconds == 0' ||
        not_ok "the idle share's GPU time or throttled time not 0: $(entry slice-4g-30)"
sleep "$P" # (a margin: nothing moves once both are 0)
n0=$(patches slice-4g-30)
sleep "$(periods 4)"
n1=$(patches slice-4g-30)
[ "$n1" = "$n0" ] && ok "a share that holds still is not written again ($n0 usage writes so far, none in 4 periods of $P s)" ||
        not_ok "a share that holds still is written again: $((n1 - n0)) times in 4 periods of $P s"

# ---------------------------------------------------------------------------------------------
# 6. The quota hit

region c1 4294967296 3 0 0 0
# events: the MemoryQuotaReached Events on slice-4g-30 (the absurd region's refusals have one on theirs)
quota_events() { jq -c 'select(.reason == "MemoryQuotaReached" and .involvedObject.name == "slice-4g-30")' "$API_STATE/events.log" 2>/dev/null; }
events() { quota_events | wc -l; }
has_event() { [ "$(events)" -ge 1 ] 2>/dev/null; }
if wait_for 10 has_event; then ok "refusals at the quota: a MemoryQuotaReached Event"
else not_ok "no MemoryQuotaReached Event: $(cat "$API_STATE/events.log" 2>/dev/null | head -c 600); $(tail -3 "$TMP/dra1.log")"; fi
quota_events | head -1 | jq -e --arg u "$U1" '.type == "Warning" and .metadata.namespace == "ml"
        and .involvedObject == {apiVersion: "resource.k8s.io/v1", kind: "ResourceClaim", namespace: "ml", name: "slice-4g-30", uid: $u}
        and (.message | test("share of gpu-0 hit its memory quota of 4Gi: 3 allocation"))' >/dev/null &&
        ok "... on the ResourceClaim (kubectl describe resourceclaim shows it), Warning, the device, the quota, the refusals" ||
        not_ok "... the Event: $(quota_events | head -1 | head -c 600)"
wait_for 10 data slice-4g-30 '.memory.quotaRefusals == 3' && ok "... the refusals in the data (quotaRefusals 3)" ||
        not_ok "... quotaRefusals: $(entry slice-4g-30)"
region c1 4294967296 50 0 0 0
# (the plugin posts an Event before it writes the data of the same sample)
wait_for 10 data slice-4g-30 '.memory.quotaRefusals == 50' || not_ok "quotaRefusals not 50: $(entry slice-4g-30)"
sleep "$P"
[ "$(events)" = 1 ] && ok "... 47 more refusals within the minute: no second Event (a tenant failing in a loop floods nothing)" ||
        not_ok "no second Event expected within the minute: $(events) MemoryQuotaReached Events"

[ "$(grep -c "usage region $REGIONS/c2/usage: bad magic" "$TMP/dra1.log")" = 1 ] &&
        ok "the damaged region: said once in the plugin's log, sampled all along" || not_ok "... not in the log once: $(tail -5 "$TMP/dra1.log")"

# ---------------------------------------------------------------------------------------------
# 7. A torn checkpoint: the plugin restarted over it rebuilds the share's entry from its spec, its
#    shareID from the claim's reference (claim-<uid>.ref, written at prepare), and its usage is
#    written again (an entry without the shareID is no AllocatedDeviceStatus of the claim: 422)

stop_dra
printf '{"version": 1, "claims": {"%s": {"na' "$U1" >"$PLUG/torn.json" && mv "$PLUG/torn.json" "$PLUG/checkpoint.json"
region c1 2147483648 0 0 0 0
plugin "$TMP/dra2.log" --status-period "$P"
jq -e --arg u "$U1" '.claims[$u] | .rebuilt == true and .devices[0].share_id == "5f1c9d1e-0000-4000-8000-000000000001"' \
        "$PLUG/checkpoint.json" >/dev/null &&
        ok "a torn checkpoint rebuilt over a share: its entry keeps the share's shareID (from claim-<uid>.ref)" ||
        not_ok "the rebuilt share's entry: $(jq -c --arg u "$U1" '.claims[$u]' "$PLUG/checkpoint.json" 2>&1 | head -c 400)"
if wait_for 10 data slice-4g-30 '.memory.usedBytes == 2147483648' && [ ! -s "$API_STATE/invalid.log" ]; then
        ok "... after the rebuild the share's usage written to its claim's status again (2 GiB in use), nothing refused"
else not_ok "... usage after the rebuild: $(entry slice-4g-30); refused: $(head -c 400 "$API_STATE/invalid.log" 2>&1)"; fi

finish
