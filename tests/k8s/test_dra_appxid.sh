#!/usr/bin/env bash
# gpuslice dra-plugin (issue 33, item 4): an application XID whose process belongs to one slice
# marks that claim's share, not the GPU. Two slice claims of GPU 0 (A and B), each with a process
# of its own on the simulated GPU (the fake libcuda under the interposer, its region in the slice's
# directory); A's process launches a kernel that writes to an illegal address, and the simulated
# driver writes its XID 31 line, with the process's pid, into the test's kernel log (--kmsg):
#   1. A's claim gets the condition ApplicationError (Xid31, the pid, the process's name) and a
#      Warning Event ApplicationError; B's claim neither; the GPU stays untainted, in the slice;
#   2. lines that must change nothing: the same XID naming B's process written by a process
#      (facility user: /dev/kmsg marks every line a process writes so), an XID of a process that is
#      no slice's, one whose pid the driver could not tell, a critical XID's line (NVML's to judge);
#   3. A's processes fault again within the minute: no second Event (a tenant that faults in a loop
#      floods nothing), the log says it was attributed;
#   4. a torn checkpoint, the plugin restarted: B's share, rebuilt from its spec (its shareID from
#      its reference), marked when B's process faults, its condition not refused.
#
# The mutation check (tests/mutation/run.sh) runs this test up to the check meant for each of its
# mutations (draappxid, draappxidkern; the rebuilt shareID is drarebuildshare's, killed in k8s_dra_usage). Every wait ends on what the plugin wrote
# (the claim, the Event, its log line), never on a timeout alone; the plugin reads the log every
# 0.2 s (--health-period).
. "$(dirname "$0")/../integration/lib.sh"
. "$SRC/tests/integration/bundle.sh"
. "$SRC/tests/k8s/lib.sh"
. "$SRC/tests/k8s/dra_lib.sh"

PROBE=$BUILD/tests/vgpu/mps-probe FAKE=$BUILD/tests/fakegpu
[ -x "$PROBE" ] && [ -e "$VGPU_LIB" ] || { echo "not ok - $PROBE or $VGPU_LIB is not built"; exit 1; }
if [ "$(stat -L -c %i /proc/self/ns/pid)" != 4026531836 ]; then # PROC_PID_INIT_INO
        skip "not in the host's pid namespace: the kernel's pids name no process here (the plugin marks no share)"
        finish
fi
CDI_DIR=$TMP/cdi # no container runs here
dra_setup
REGIONS=$TMP/regions KMSG=$TMP/kmsg
mkdir -p "$REGIONS"
: >"$KMSG"
printf '[driver]\nroot = "%s"\n\n[slice]\nregions-dir = "%s"\n' "$DRV" "$REGIONS" >"$TMP/dra.toml"
OWNER_PID= PROC_PIDS=()
dra_cleanup_more() { for p in "${PROC_PIDS[@]}" $OWNER_PID; do kill "$p" 2>/dev/null; done; }
start_apiserver "$API_STATE" "$TMP/kubeconfig"
SOCK=$PLUG/dra.sock
start_dra "$TMP/dra.log" -c "$TMP/dra.toml" --driver-name "$DRIVER" --kubeconfig "$TMP/kubeconfig" --node "$NODE" \
        --cdi-dir "$CDI_DIR" --plugin-dir "$PLUG" --registry-dir "$REG" --health-period 0.2 --status-period 0 \
        --kmsg "$KMSG"
wait_for 20 test -S "$SOCK" || { not_ok "the plugin does not serve $SOCK: $(tail -5 "$TMP/dra.log")"; finish; }

# share NAME UID: an allocated 4 Gi / 30 % slice claim of gpu-0 in namespace ml
share() {
        claim_json ml "$1" "$2" "$DRIVER" "[{\"request\": \"gpu\", \"driver\": \"$DRIVER\", \"pool\": \"$NODE\",
                \"device\": \"gpu-0\", \"shareID\": \"5f1c9d1e-0000-4000-8000-${2: -12}\",
                \"consumedCapacity\": {\"memory\": \"4Gi\", \"compute\": \"30\"}}]"
}
UA=33333333-aaaa-4bbb-8ccc-00000000000a UB=33333333-aaaa-4bbb-8ccc-00000000000b
share slice-a "$UA"
share slice-b "$UB"
dra prepare "$SOCK" v1 "ml/slice-a/$UA" "ml/slice-b/$UB"
kexpect "two slice claims of gpu-0 prepared" ".ok and [.claims[\"$UA\"], .claims[\"$UB\"] | .error // \"\"] == [\"\", \"\"]"

# the driver's own Ready condition on A's entry (as a prepare writes it), which must stay
driver_ready slice-a 5f1c9d1e-0000-4000-8000-00000000000a
[ "$code" = 200 ] || not_ok "the driver's Ready condition not applied: HTTP $code $(head -c 300 "$TMP/api.out")"

# slice ID CLAIM: the slice directory a container of CLAIM would have (the hook writes it: the
# owner, a live process here, and the labels the claim's CDI spec gave the hook)
dra_slice_owner
slice() {
        dra_slice_dir "$1" "$2"
}
# proc SLICE OUT ARGS...: mps-probe ARGS as a process of SLICE (the interposer, its region), in the
# background; its pid in $PROC
proc() {
        local s=$1 out=$2; shift 2
        env LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$VGPU_LIB" FAKEGPU_CONFIG="$DRV/etc/fakegpu/gpus.conf" \
                FAKEGPU_STATE="$TMP/fakegpu.state" FAKEGPU_KMSG="$KMSG" GPUSLICE_REGION="$REGIONS/$s/usage" \
                GPUSLICE_MEMORY_LIMIT=4g PROBE_ALLOC_MIB=64 \
                ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0 \
                "$PROBE" "$@" >"$TMP/$out" 2>&1 & # (a sanitizer build's probe: the interposer preloaded ahead of ASan's runtime)
        PROC=$!
        PROC_PIDS+=("$PROC")
}
slice ca slice-a
slice cb slice-b
proc cb b.out hold 120
PB=$PROC
wait_for 10 grep -q "^init=0 " "$TMP/b.out" || not_ok "B's process does not start: $(cat "$TMP/b.out")"

claimfile() { echo "$API_STATE/claims/ml/$1.json"; }
# cond CLAIM: our entries' ApplicationError conditions of the claim (JSON, one a line)
cond() { jq -c --arg d "$DRIVER" '.status.devices // [] | .[] | select(.driver == $d) | .conditions // [] | .[] | select(.type == "ApplicationError")' "$(claimfile "$1")" 2>/dev/null; }
xid_events() { jq -c --arg n "$1" 'select(.reason == "ApplicationError" and .involvedObject.name == $n)' "$API_STATE/events.log" 2>/dev/null; }
said() { grep -qF -- "$1" "$TMP/dra.log"; }
SLICE=$API_STATE/slices/$NODE-$DRIVER.json
published() { [ "$(jq -r '[.spec.devices[].name] | join(",")' "$SLICE" 2>/dev/null)" = "gpu-0,gpu-1" ]; }

# ---------------------------------------------------------------------------------------------
# 1. A's process faults

proc ca a.out fault 120
PA=$PROC
wait_for 10 grep -q "^launch=" "$TMP/a.out"
grep -q "^launch=0 synchronize=700 next=700$" "$TMP/a.out" &&
        grep -qE "^4,[0-9]+,[0-9]+,c;NVRM: Xid \(PCI:0000:3b:00\): 31, pid=$PA, name=mps-probe, channel 0x0000000a, intr 00000000\. MMU Fault: " "$KMSG" &&
        ok "A's process ($PA): an illegal address (700), and the simulated driver's XID 31 line in the kernel's log, with its pid" ||
        not_ok "A's fault: $(cat "$TMP/a.out"); the log: $(head -c 400 "$KMSG")"
marked() { [ -n "$(cond slice-a)" ]; }
if wait_for 10 marked; then
        cond slice-a | jq -e --arg p "$PA" '.status == "True" and .reason == "Xid31"
                and (.message | test("^XID 31 \\(GPU memory page fault\\) in process " + $p + " \\(mps-probe\\) at .*MMU Fault"))
                and (.message | test("1 application XID"))' >/dev/null &&
                ok "claim A: its share's condition ApplicationError True, Xid31, the pid and the process's name, the driver's words" ||
                not_ok "claim A's condition: $(cond slice-a)"
else not_ok "claim A: no ApplicationError condition: $(jq -c .status "$(claimfile slice-a)"); $(tail -3 "$TMP/dra.log")"; fi
has_event() { [ -n "$(xid_events slice-a)" ]; }
if wait_for 10 has_event; then
        xid_events slice-a | head -1 | jq -e --arg u "$UA" '.type == "Warning" and .metadata.namespace == "ml"
                and .involvedObject == {apiVersion: "resource.k8s.io/v1", kind: "ResourceClaim", namespace: "ml", name: "slice-a", uid: $u}
                and (.message | test("XID 31 .* of the claim.s share of gpu-0"))' >/dev/null &&
                ok "claim A: a Warning Event ApplicationError on the ResourceClaim" || not_ok "the Event: $(xid_events slice-a | head -c 600)"
else not_ok "claim A: no ApplicationError Event: $(head -c 600 "$API_STATE/events.log" 2>/dev/null)"; fi
jq -e --arg d "$DRIVER" '[.status.devices[] | select(.driver == $d) | .conditions[] | select(.type == "Ready")]
        == [{type: "Ready", status: "True", reason: "Prepared", message: "prepared", lastTransitionTime: "2026-01-01T00:00:00Z"}]' \
        "$(claimfile slice-a)" >/dev/null && ok "... beside the driver's Ready condition, which stays as it was (a field manager of its own)" ||
        not_ok "claim A's conditions: $(jq -c .status.devices "$(claimfile slice-a)")"
[ -z "$(cond slice-b)" ] && [ -z "$(xid_events slice-b)" ] && ok "claim B (same GPU): no condition, no Event" ||
        not_ok "claim B was marked: $(cond slice-b) $(xid_events slice-b)"
published && [ "$(jq -c '[.spec.devices[] | .taints // empty]' "$SLICE")" = "[]" ] &&
        ok "the GPU stays untainted in the ResourceSlice (schedulable)" ||
        not_ok "the slice after an application XID: $(jq -c '[.spec.devices[] | {name, taints}]' "$SLICE" 2>&1)"
[ ! -s "$API_STATE/invalid.log" ] && ok "nothing the plugin wrote was refused (conditions as metav1.Condition)" ||
        not_ok "refused writes: $(head -3 "$API_STATE/invalid.log")"

# ---------------------------------------------------------------------------------------------
# 2. Lines that change nothing

line() { echo "$1,$RANDOM,$(awk '{printf "%d", $1 * 1000000}' /proc/uptime),-;NVRM: Xid (PCI:0000:3b:00): $2" >>"$KMSG"; }
line 12 "31, pid=$PB, name=mps-probe, channel 0x0000000a, intr 00000000. MMU Fault: written by a process" # user.warning
line 4 "31, pid=$OWNER_PID, name=sleep, channel 0x0000000a, intr 00000000. MMU Fault: no slice's process"
line 4 "13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0)"
line 4 "79, pid=$PB, name=mps-probe, GPU has fallen off the bus."
# (both in one wait: the plugin may read the log between two of these appends, and then says the
# first line's news a read before the second's)
both_said() {
        said "pid $OWNER_PID (sleep): no slice's process" &&
                said "application XID 13 (graphics engine exception) at PCI 0000:3b:00: the driver names no process"
}
wait_for 10 both_said &&
        ok "an XID of a process that is no slice's, one without a pid: a line in the log each" ||
        not_ok "the log lines: $(grep -i xid "$TMP/dra.log" | tail -4)"
sleep 1 # (five reads of the log)
if [ -z "$(cond slice-b)" ] && [ -z "$(xid_events slice-b)" ] && ! said "pid $PB"; then
        ok "a line naming B's process written by a process (facility user, not the kernel's): nothing marked"
else not_ok "B marked by a line a process wrote: $(cond slice-b) $(grep "pid $PB" "$TMP/dra.log")"; fi
[ "$(jq -c '[.spec.devices[] | .taints // empty]' "$SLICE")" = "[]" ] &&
        ok "a critical XID's line in the log changes nothing here (NVML's event judges the GPU)" ||
        not_ok "tainted by a log line: $(jq -c '[.spec.devices[] | {name, taints}]' "$SLICE")"

# ---------------------------------------------------------------------------------------------
# 3. A faults again within the minute

proc ca a2.out fault 120
PA2=$PROC
wait_for 10 said "pid $PA2 (mps-probe): a process of claim ml/slice-a" ||
        not_ok "A's second fault not attributed: $(grep -i xid "$TMP/dra.log" | tail -3)"
sleep 1
[ "$(xid_events slice-a | wc -l)" = 1 ] && [ "$(cond slice-a | wc -l)" = 1 ] &&
        ok "a second fault of A within the minute: attributed (the log), no second Event (one a share a minute)" ||
        not_ok "Events after a second fault: $(xid_events slice-a | wc -l); $(cond slice-a)"
kill -0 "$DRA_PID" 2>/dev/null && ok "the plugin lives on" || not_ok "the plugin died: $(tail -5 "$TMP/dra.log")"
stop_dra
[ "$DRA_RC" = 0 ] && ok "the plugin stops cleanly" || not_ok "exit $DRA_RC"

# ---------------------------------------------------------------------------------------------
# 4. A torn checkpoint, the plugin restarted over it: B's share (rebuilt from its spec, its
#    shareID from its reference) marked when B's process faults, its condition not refused (422)

printf '{"version": 1, "claims": {"%s": {"na' "$UB" >"$PLUG/torn.json" && mv "$PLUG/torn.json" "$PLUG/checkpoint.json"
start_dra "$TMP/dra2.log" -c "$TMP/dra.toml" --driver-name "$DRIVER" --kubeconfig "$TMP/kubeconfig" --node "$NODE" \
        --cdi-dir "$CDI_DIR" --plugin-dir "$PLUG" --registry-dir "$REG" --health-period 0.2 --status-period 0 \
        --kmsg "$KMSG"
wait_for 20 test -S "$SOCK" || { not_ok "the plugin does not serve $SOCK: $(tail -5 "$TMP/dra2.log")"; finish; }
jq -e --arg u "$UB" '.claims[$u].rebuilt == true' "$PLUG/checkpoint.json" >/dev/null || not_ok "the checkpoint not rebuilt"
proc cb b2.out fault 120
PB2=$PROC
marked_b() { [ -n "$(cond slice-b)" ]; }
if wait_for 10 marked_b && cond slice-b | jq -e --arg p "$PB2" '.reason == "Xid31" and (.message | contains("process " + $p))' >/dev/null &&
   [ ! -s "$API_STATE/invalid.log" ]; then
        ok "after a torn checkpoint (the plugin restarted): B's rebuilt share marked when its process faults (Xid31), nothing refused"
else not_ok "B's rebuilt share not marked: $(cond slice-b); refused: $(head -c 400 "$API_STATE/invalid.log" 2>&1); $(grep -i xid "$TMP/dra2.log" | tail -3)"; fi
stop_dra
finish
