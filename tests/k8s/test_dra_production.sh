#!/usr/bin/env bash
# gpuslice dra-plugin in a cluster's life (issue 33), against the fake API server and the kubelet's
# side (dra_lib.sh: the set-up test_dra_plugin.sh makes too), on the simulated 2-GPU machine:
# two instances side by side (a rolling update, --instance-id) sharing one checkpoint; the
# ResourceSlice owned by its Node, and published again when deleted; the node's books across
# instances (over-commit refused, two racing claims); a claim gone from the API server (unprepared
# by the stale sweep); a torn checkpoint (rebuilt from the specs, a whole-GPU claim's namespace
# and name from its reference, an Event); an API server whose DRAConsumableCapacity gate is off.
#
# The mutation check (tests/mutation/run.sh) runs this test up to the check meant for each of its
# mutations (drainstance, draowner, dragate, drarepublish, drashareid, drashared, drastale,
# dracommit, dracorrupt, dracref), once per mutation: those checks come first, in that order, and
# every wait ends on what the plugins did (a log line, the API server's requests), never on a timeout
# alone.
# The periods are short (--resync-period 0.2, --stale-period 0.3) so that a read-back or a sweep
# is never far.
. "$(dirname "$0")/dra_lib.sh" # with tests/integration/lib.sh, bundle.sh (the simulated GPUs' uuids), tests/k8s/lib.sh

CDI_DIR=$TMP/cdi # no container runs here: the specs stay in the test's directory
dra_setup
# the gated server first: start_apiserver leaves $API_PORT (api's) to the last one
GATED=$TMP/api-gated
dra_side_apiserver gated --feature-gates DRAConsumableCapacity=false
start_apiserver "$API_STATE" "$TMP/kubeconfig"
common=(-c "$TMP/dra.toml" --driver-name "$DRIVER" --node "$NODE" --resync-period 0.2)
start_dra_side gated "$TMP/dra-g.log" "${common[@]}"
PID_G=$DRA_PID
prod=("${common[@]}" --kubeconfig "$TMP/kubeconfig" --cdi-dir "$CDI_DIR" --plugin-dir "$PLUG" --registry-dir "$REG"
      --stale-period 0.3)
start_dra "$TMP/dra-a.log" "${prod[@]}" --instance-id inst-a
PID_A=$DRA_PID
SOCK_A=$PLUG/dra-inst-a.sock SOCK_B=$PLUG/dra-inst-b.sock REG_A=$REG/$DRIVER-inst-a-reg.sock REG_B=$REG/$DRIVER-inst-b-reg.sock
SLICE=$API_STATE/slices/$NODE-$DRIVER.json
# running PID: the process is there and not a zombie
running() { ps -o stat= -p "$1" 2>/dev/null | grep -qv Z; }
# said LOG PID TEXT: the plugin's log holds TEXT, or the plugin is no longer running
said() { grep -qF -- "$3" "$1" || ! running "$2"; }
# the new instance, B, beside the old one once that one has published the slice (as a rolling
# update starts it; B then updates the slice A made, and no write of one fails on the other's)
wait_for 20 said "$TMP/dra-a.log" "$PID_A" "published ResourceSlice"
start_dra "$TMP/dra-b.log" "${prod[@]}" --instance-id inst-b
PID_B=$DRA_PID

# ---------------------------------------------------------------------------------------------
# Two instances side by side; the ResourceSlice (its owner, the gate, published again)

both_serve() { said "$TMP/dra-a.log" "$PID_A" "serving " && said "$TMP/dra-b.log" "$PID_B" "serving "; }
if wait_for 20 both_serve && [ -S "$SOCK_A" ] && [ -S "$SOCK_B" ] && [ -S "$REG_A" ] && [ -S "$REG_B" ]; then
        ok "two instances side by side (--instance-id): each with registration and DRA sockets of its own"
else not_ok "two instances side by side (--instance-id): not each with sockets of its own: $(ls "$PLUG" "$REG" | tr '\n' ' ') $(tail -2 "$TMP/dra-b.log")"; fi

NODE_UID=$("$PY" -c 'import uuid, sys; print(uuid.uuid5(uuid.NAMESPACE_DNS, sys.argv[1]))' "$NODE")
if wait_for 10 test -s "$SLICE" && jq -e --arg n "$NODE" --arg u "$NODE_UID" '.metadata.ownerReferences ==
        [{apiVersion: "v1", kind: "Node", name: $n, uid: $u, controller: true}]' "$SLICE" >/dev/null; then
        ok "the ResourceSlice is owned by its Node (kept at stop, gone with the Node)"
else not_ok "the ResourceSlice is not owned by its Node: $(jq -c .metadata.ownerReferences "$SLICE" 2>&1) $(tail -2 "$TMP/dra-a.log")"; fi

# an API server whose DRAConsumableCapacity gate is off (a 1.34 cluster as installed: the gate is
# alpha) drops the consumable-capacity fields, silently, as the real one (issue 34, item 13b): the
# plugin notes it before it logs the slice published
if wait_for 15 said "$TMP/dra-g.log" "$PID_G" "published ResourceSlice" &&
   grep -q "DRAConsumableCapacity feature gate is off): GPUs are allocated whole" "$TMP/dra-g.log"; then
        ok "DRAConsumableCapacity off: the plugin says so: GPUs allocated whole, no slices"
else not_ok "DRAConsumableCapacity off: the plugin says so: GPUs allocated whole, no slices: not in its log: $(tail -3 "$TMP/dra-g.log")"; fi

# the kubelet deletes a node's slices when it restarts: published again (a new object) at the next
# read-back. Each instance GETs the deleted slice twice at most before it writes it (the read-back,
# then its publishing's own look; one whose write then fails on the other's waits 5 s to try
# again, reading nothing back meanwhile): a fifth 404 means neither published it again.
slice404() { grep -c "^GET /apis/resource.k8s.io/v1/resourceslices/$NODE-$DRIVER 404" "$API_STATE/requests.log"; }
uid0=$(jq -r .metadata.uid "$SLICE" 2>/dev/null) n0=$(slice404)
republished() { [ -s "$SLICE" ] && [ "$(jq -r .metadata.uid "$SLICE" 2>/dev/null)" != "$uid0" ]; }
republished_or_not() { republished || [ $(($(slice404) - n0)) -ge 5 ]; }
code=$(api DELETE "/apis/resource.k8s.io/v1/resourceslices/$NODE-$DRIVER")
if [ "$code" = 200 ] && wait_for 10 republished_or_not && republished &&
   jq -e '[.spec.devices[].name] == ["gpu-0", "gpu-1"] and .spec.pool.generation >= 1' "$SLICE" >/dev/null; then
        ok "the ResourceSlice deleted (as a restarting kubelet deletes it): published again at the next read-back"
else not_ok "the ResourceSlice deleted (HTTP $code): not published again at the next read-back: $(($(slice404) - n0)) GETs found it gone; $(tail -2 "$TMP/dra-a.log")"; fi

# ---------------------------------------------------------------------------------------------
# One checkpoint, one node's books: A's claim answered by B, over-commit refused, a stale claim,
# a torn checkpoint

UX=d0000000-0000-4000-8000-000000000001 UY=d0000000-0000-4000-8000-000000000002 UZ=d0000000-0000-4000-8000-000000000003
SHARE=5f1c9d1e-0000-4000-8000-0000000000d1
claim_json ml shared-x "$UX" "$DRIVER" "[{\"request\": \"gpu\", \"driver\": \"$DRIVER\", \"pool\": \"$NODE\", \"device\": \"gpu-0\",
        \"shareID\": \"$SHARE\", \"consumedCapacity\": {\"memory\": \"20Gi\", \"compute\": \"60\"}}]"
claim_json ml gone-x "$UZ" "$DRIVER" "$(res gpu-1)"
dra prepare "$SOCK_A" v1 "ml/shared-x/$UX" "ml/gone-x/$UZ"
jq -c ".claims[\"$UX\"]" "$TMP/k.json" >"$TMP/p-x.json"
kexpect "instance A prepares a 20 Gi / 60 % claim on gpu-0 (and a whole gpu-1): its device's share_id (field 5) echoed" \
        ".ok and .claims[\"$UX\"].devices == [{\"request_names\": [\"gpu\"], \"pool_name\": \"$NODE\", \"device_name\": \"gpu-0\",
          \"cdi_device_ids\": [\"$KIND=$UX-gpu-0\"], \"share_id\": \"$SHARE\"}] and (.claims[\"$UZ\"].devices | length) == 1"
# gone-x deleted from the API server while prepared (the kubelet never unprepares it): the sweeps'
rm "$API_STATE/claims/ml/gone-x.json"

dra prepare "$SOCK_B" v1 "ml/shared-x/$UX"
# (the API server's GETs of the claim also count the instances' stale sweeps: B's own line says)
if [ "$(jq -c ".claims[\"$UX\"]" "$TMP/k.json")" = "$(cat "$TMP/p-x.json")" ] &&
   grep -q "NodePrepareResources ml/shared-x ($UX): 1 device(s), prepared before" "$TMP/dra-b.log"; then
        ok "instance B answers it from the shared checkpoint (the same answer, prepared before: not read again)"
else not_ok "instance B answers it from the shared checkpoint: not so: $(head -c 300 "$TMP/k.json"); $(grep shared-x "$TMP/dra-b.log" | tail -1)"; fi

# Each instance looks gone-x up once at most after it is gone (the one that finds it gone
# unprepares it at once; the other may have listed it just before): a third 404, and the sweeps
# did not unprepare it.
gone404() { grep -c "^GET /apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/gone-x 404" "$API_STATE/requests.log"; }
swept() { no_checkpoint_entry "$UZ" && [ ! -e "$CDI_DIR/$DRIVER-claim-$UZ.json" ]; }
swept_or_not() { swept || [ "$(gone404)" -ge 3 ]; }
if wait_for 10 swept_or_not && swept; then
        ok "a prepared claim gone from the API server: unprepared by the stale sweep (--stale-period 0.3), its spec removed"
else not_ok "a prepared claim gone from the API server: not unprepared by the stale sweep: $(jq -c '.claims | keys' "$PLUG/checkpoint.json" 2>&1) $(ls "$CDI_DIR" | grep -c "$UZ"); $(gone404) GETs found it gone"; fi

# issue 33, item 2: the node's books, across instances: A's 20 Gi / 60 % is on gpu-0
claim_json ml over-mem e0000000-0000-4000-8000-000000000001 "$DRIVER" "$(res gpu-0 "" '{"memory": "24Gi", "compute": "30"}')"
SOCK=$SOCK_B
bad over-mem e0000000-0000-4000-8000-000000000001 "gpu-0 would be over-committed: the claim consumes 24Gi and 30 %, the claims prepared on this node hold 20Gi and 60 %" \
        "24 Gi beside a prepared 20 Gi on a 40 Gi GPU (the other instance's claim)" Overcommitted

# a checkpoint torn by a crash: rebuilt from the claims' specs (shared-x's, after-crash's and
# whole-w's: a whole GPU, whose spec has no hook to name its claim), an Event says so
UW=f0000000-0000-4000-8000-0000000000aa
claim_json ml whole-w "$UW" "$DRIVER" "$(res gpu-1)"
dra prepare "$SOCK_B" v1 "ml/whole-w/$UW"
kexpect "a whole-GPU claim prepared (gpu-1)" ".ok and (.claims[\"$UW\"].devices | length) == 1"
claim_json ml after-crash "$UY" "$DRIVER" "$(res gpu-0 "" '{"memory": "16Gi", "compute": "40"}')"
dra prepare "$SOCK_B" v1 "ml/after-crash/$UY"
cp "$TMP/k.json" "$TMP/p-y.json"
kexpect "a 16 Gi / 40 % claim prepared by the new instance" ".ok and (.claims[\"$UY\"].devices | length) == 1"
printf '{"version": 1, "claims": {"%s": {"na' "$UY" >"$PLUG/torn.json" && mv "$PLUG/torn.json" "$PLUG/checkpoint.json"
dra unprepare "$SOCK_B" v1 "ml/nothing/d0000000-0000-4000-8000-0000000000ff"
if jq -e --arg u "$UY" --arg x "$UX" '(.claims | length) == 3 and (.claims[$u] | .rebuilt == true and .namespace == "ml"
        and .name == "after-crash" and .devices == [{device: "gpu-0", pool: "node-a", memory: 17179869184, compute: 40}])
        and (.claims[$x] | .rebuilt == true and .devices == [{device: "gpu-0", pool: "node-a", memory: 21474836480, compute: 60,
                                                              share_id: "'"$SHARE"'"}])' \
        "$PLUG/checkpoint.json" >/dev/null && [ -s "$PLUG/checkpoint.json.bad" ]; then
        ok "a torn checkpoint: set aside, rebuilt from the claims' specs (gpu-0, 16 Gi, 40 %, the claim ml/after-crash; shared-x's 20 Gi, 60 %, its shareID)"
else not_ok "a torn checkpoint: not rebuilt from the claims' specs: $(head -c 400 "$PLUG/checkpoint.json")"; fi
jq -e --arg w "$UW" '.claims[$w] | .rebuilt == true and .namespace == "ml" and .name == "whole-w" and .devices == [{device: "gpu-1", pool: "node-a"}]' \
        "$PLUG/checkpoint.json" >/dev/null &&
        ok "... the whole-GPU claim rebuilt with its namespace and name (ml/whole-w: the stale sweep can look it up)" ||
        not_ok "... the whole-GPU claim rebuilt with its namespace and name: $(jq -c --arg w "$UW" '.claims[$w]' "$PLUG/checkpoint.json" 2>&1)"
if wait_for 5 test -s "$API_STATE/events.log" && jq -e -s --arg n "$NODE" 'map(select(.reason == "CheckpointRebuilt")) | length == 1 and
        (.[0] | .type == "Warning" and .involvedObject == {apiVersion: "v1", kind: "Node", name: $n}
         and (.message | contains("rebuilt from 3 claim spec")))' "$API_STATE/events.log" >/dev/null; then
        ok "... and a Warning Event CheckpointRebuilt on the Node says so"
else not_ok "no CheckpointRebuilt Event: $(head -c 400 "$API_STATE/events.log" 2>&1)"; fi
dra prepare "$SOCK_B" v1 "ml/after-crash/$UY"
if [ "$(jq -c . "$TMP/k.json")" = "$(jq -c . "$TMP/p-y.json")" ] &&
   [ "$(grep -c "NodePrepareResources ml/after-crash ($UY): 1 device(s) (API" "$TMP/dra-b.log")" = 2 ] &&
   jq -e --arg u "$UY" '.claims[$u] | has("rebuilt") | not' "$PLUG/checkpoint.json" >/dev/null; then
        ok "... the rebuilt claim asked again: prepared anew from the API server, the same answer"
else not_ok "rebuilt claim prepared again: $(head -c 300 "$TMP/k.json"); $(grep after-crash "$TMP/dra-b.log" | tail -2)"; fi
dra unprepare "$SOCK_B" v1 "ml/after-crash/$UY"
dra unprepare "$SOCK_B" v1 "ml/whole-w/$UW"
kexpect "... the whole-GPU claim unprepared" ".ok and (.claims[\"$UW\"].error // \"\") == \"\""
[ ! -e "$PLUG/claim-$UW.ref" ] && [ ! -e "$PLUG/claim-$UY.ref" ] && [ -s "$PLUG/claim-$UX.ref" ] &&
        ok "... the claims' references (claim-<uid>.ref) removed with them; shared-x's kept" ||
        not_ok "... the claims' references: $(ls "$PLUG")"

# the books again, shared-x's entry now the rebuilt one
claim_json ml over-compute e0000000-0000-4000-8000-000000000002 "$DRIVER" "$(res gpu-0 "" '{"memory": "16Gi", "compute": "50"}')"
claim_json ml over-whole e0000000-0000-4000-8000-000000000003 "$DRIVER" "$(res gpu-0)"
bad over-compute e0000000-0000-4000-8000-000000000002 "the claim consumes 16Gi and 50 %, the claims prepared on this node hold 20Gi and 60 %" \
        "50 % beside a prepared 60 %" Overcommitted
bad over-whole e0000000-0000-4000-8000-000000000003 "the claim consumes 40Gi and 100 %" "the whole GPU beside a prepared slice" Overcommitted
# two claims at once, one on each instance, each fitting alone (20 Gi / 60 % held; 10 Gi / 30 % each): one is refused
claim_json ml race-1 e0000000-0000-4000-8000-000000000011 "$DRIVER" "$(res gpu-0 "" '{"memory": "10Gi", "compute": "30"}')"
claim_json ml race-2 e0000000-0000-4000-8000-000000000012 "$DRIVER" "$(res gpu-0 "" '{"memory": "10Gi", "compute": "30"}')"
racers=()
for i in 1 2; do
        s=$SOCK_A; [ "$i" = 2 ] && s=$SOCK_B
        "$PY" "$SRC/tests/k8s/fake_dra_kubelet.py" --proto-dir "$SRC/src/kubelet/proto" --stubs "$TMP/dra-stubs" prepare "$s" v1 \
                "ml/race-$i/e0000000-0000-4000-8000-00000000001$i" >"$TMP/race-$i.json" 2>>"$TMP/dra-kubelet.err" &
        racers+=("$!")
done
wait "${racers[@]}"
nprep=$(jq -s '[.[] | .claims[] | select((.devices // []) | length == 1)] | length' "$TMP/race-1.json" "$TMP/race-2.json")
nover=$(jq -s '[.[] | .claims[] | select((.error // "") | contains("over-committed"))] | length' "$TMP/race-1.json" "$TMP/race-2.json")
[ "$nprep" = 1 ] && [ "$nover" = 1 ] &&
        ok "two racing claims on two instances, each fitting alone, not both: one prepared, one refused as over-committed" ||
        not_ok "racing claims: $(cat "$TMP/race-1.json" "$TMP/race-2.json" | head -c 600)"
dra unprepare "$SOCK_B" v1 "ml/race-1/e0000000-0000-4000-8000-000000000011" "ml/race-2/e0000000-0000-4000-8000-000000000012"

# the rolling update's end: the new instance registered, the old one stopped
dra register "$REG_B"
kexpect "the new instance's GetInfo names its own DRA socket" ".ok and .info.endpoint == \"$SOCK_B\""
DRA_PID=$PID_A stop_dra
[ "$DRA_RC" = 0 ] && [ ! -e "$SOCK_A" ] && [ ! -e "$REG_A" ] && [ -S "$SOCK_B" ] && [ -S "$REG_B" ] && [ -s "$SLICE" ] &&
        ok "the old instance stops: its sockets gone, the new one's and the ResourceSlice left" ||
        not_ok "old instance stopped (rc $DRA_RC): $(ls "$PLUG" "$REG" | tr '\n' ' ')"

# ---------------------------------------------------------------------------------------------
# The gated server's slice and claim

GSLICE=$GATED/slices/$NODE-$DRIVER.json
# two read-backs since the slice was written: no writing again over the dropped fields
reads() { grep -c "^GET /apis/resource.k8s.io/v1/resourceslices/$NODE-$DRIVER 200" "$GATED/requests.log"; }
read_twice() { [ "$(reads)" -ge 2 ]; }
if wait_for 10 read_twice && jq -e '[.spec.devices[].name] == ["gpu-0", "gpu-1"] and all(.spec.devices[]; (has("allowMultipleAllocations") | not)
        and (.capacity.memory | has("requestPolicy") | not) and .capacity.memory.value == "40Gi")' "$GSLICE" >/dev/null &&
   [ "$(grep -cE "^(POST|PUT) /apis/resource.k8s.io/v1/resourceslices" "$GATED/requests.log")" = 1 ] &&
   [ ! -s "$GATED/invalid.log" ]; then
        ok "DRAConsumableCapacity off: the slice stored without allowMultipleAllocations and request policies, written once (read back $(reads) times: no loop over the dropped fields)"
else not_ok "gate off: $(jq -c '[.spec.devices[] | {name, allowMultipleAllocations, capacity}]' "$GSLICE" 2>&1 | head -c 400) $(grep -c resourceslices "$GATED/requests.log") requests, $(reads) read-backs"; fi
UG=f0000000-0000-4000-8000-000000000001
API_STATE=$GATED claim_json ml gated "$UG" "$DRIVER" "[{\"request\": \"gpu\", \"driver\": \"$DRIVER\", \"pool\": \"$NODE\", \"device\": \"gpu-0\",
        \"shareID\": \"5f1c9d1e-0000-4000-8000-0000000000f1\", \"consumedCapacity\": {\"memory\": \"4Gi\", \"compute\": \"30\"}}]"
dra prepare "$TMP/plugins-gated/dra.sock" v1 "ml/gated/$UG"
if [ "$(kq ".ok and (.claims[\"$UG\"].devices | length) == 1 and (.claims[\"$UG\"].devices[0] | has(\"share_id\") | not)")" = true ] &&
   jq -e '.devices[0].containerEdits | (.env // []) == [] and (.hooks // []) == []' "$TMP/cdi-gated/$DRIVER-claim-$UG.json" >/dev/null; then
        ok "... a claim read from it has no consumedCapacity or shareID: prepared as the whole GPU (no slice hooks, no share_id)"
else not_ok "gated claim: $(head -c 300 "$TMP/k.json") $(jq -c '.devices[0].containerEdits.hooks' "$TMP/cdi-gated/$DRIVER-claim-$UG.json" 2>&1 | head -c 200)"; fi
kill -TERM "$PID_G" "$PID_B" 2>/dev/null # both at once
DRA_PID=$PID_G stop_dra
stop_dra
finish
