#!/usr/bin/env bash
# gpuslice dra-plugin's device health as device taints (issue 33, item 4; KEP-5055, resource.k8s.io
# v1 Device.taints), against two fake API servers on the simulated 2-GPU machine: one with the
# DRADeviceTaints gate on (an XID on GPU 1: gpu-1 stays in the ResourceSlice with a NoSchedule
# taint, its claims refused at prepare; the GPU then lost: NoExecute, timeAdded kept, past the
# recovery time while NVML says lost; the GPU reset (NVML answers for it again): the taint gone
# once it has been quiet for the recovery time, without a restart; an XID then taints it until
# it has been quiet again), one with it off (alpha, off by default in 1.33-1.34: the server
# drops taints silently; the plugin finds it out with a dry run, says so once, and leaves
# the unhealthy device out instead, never publishing it untainted; killed with SIGKILL at the
# end: its NVML helper ends too).
#
# The mutation check (tests/mutation/run.sh) runs this test up to the check meant for each of its
# mutations (drataint, drataintexec, drataintgate, drataintdry, healthrecover, healthgone,
# healthrepair, healthquiet). Every wait ends on what the plugins did (the slice, a log
# line), never on a timeout alone; the first two (the XID's taint, the device dropped) give up
# after 6 s, which a mutation waits out (the plugins look at health every 0.2 s: under a second
# is seen, under ASan too). Two checks wait on time by their nature: a taint kept past the
# recovery time (--health-recover 2) is looked at after 3 s.
. "$(dirname "$0")/dra_lib.sh" # with tests/integration/lib.sh, bundle.sh (the simulated GPUs' uuids), tests/k8s/lib.sh

CDI_DIR=$TMP/cdi # no container runs here: the specs stay in the test's directory
dra_setup
OFF=$TMP/api-off
dra_side_apiserver off --feature-gates DRADeviceTaints=false
start_apiserver "$API_STATE" "$TMP/kubeconfig"
common=(-c "$TMP/dra.toml" --driver-name "$DRIVER" --node "$NODE" --health-period 0.2)
on_args=("${common[@]}" --kubeconfig "$TMP/kubeconfig" --cdi-dir "$CDI_DIR" --plugin-dir "$PLUG" --registry-dir "$REG")
start_dra "$TMP/dra-on.log" "${on_args[@]}"
PID_ON=$DRA_PID
start_dra_side off "$TMP/dra-off.log" "${common[@]}"
PID_OFF=$DRA_PID
SLICE=$API_STATE/slices/$NODE-$DRIVER.json SLICE_OFF=$OFF/slices/$NODE-$DRIVER.json
SOCK=$PLUG/dra.sock
running() { ps -o stat= -p "$1" 2>/dev/null | grep -qv Z; }
# said LOG PID TEXT: the plugin's log holds TEXT, or the plugin is no longer running
said() { grep -qF -- "$3" "$1" || ! running "$2"; }
# dev SLICE NAME: the device's entry in the slice (null: not there)
dev() { jq -c --arg n "$2" '[.spec.devices[] | select(.name == $n)][0]' "$1" 2>/dev/null; }
published() { [ "$(jq -r '[.spec.devices[].name] | join(",")' "$1" 2>/dev/null)" = "gpu-0,gpu-1" ]; }
if wait_for 20 published "$SLICE" && wait_for 20 published "$SLICE_OFF" &&
   [ "$(dev "$SLICE" gpu-1 | jq -c .taints)" = null ]; then
        ok "both plugins publish gpu-0 and gpu-1, healthy: no taints"
else not_ok "the slices before any XID: $(jq -c '[.spec.devices[] | {name, taints}]' "$SLICE" "$SLICE_OFF" 2>&1 | head -c 600) $(tail -2 "$TMP/dra-on.log")"; fi

# ---------------------------------------------------------------------------------------------
# An XID on GPU 1

t0=$(date -u +%s)
echo "xid $GPU1 79" >>"$DRV/etc/fakegpu/events"
tainted() { [ "$(dev "$SLICE" gpu-1 | jq -r '.taints[0].value // empty')" = xid-79 ] || ! running "$PID_ON"; }
wait_for 6 tainted
taint=$(dev "$SLICE" gpu-1 | jq -c .taints)
added=$(jq -r '.[0].timeAdded // empty' <<<"$taint" 2>/dev/null)
added_s=$(date -u -d "$added" +%s 2>/dev/null || echo 0)
if jq -e 'length == 1 and .[0].key == "gpuslice.io/unhealthy" and .[0].value == "xid-79" and .[0].effect == "NoSchedule"' \
        <<<"$taint" >/dev/null 2>&1 && [ "$added_s" -ge $((t0 - 1)) ] && [ "$added_s" -le $(($(date -u +%s) + 1)) ] &&
   [ "$(dev "$SLICE" gpu-0 | jq -c .taints)" = null ]; then
        ok "DRADeviceTaints on: XID 79 on GPU 1: gpu-1 stays in the slice with the taint gpuslice.io/unhealthy=xid-79:NoSchedule, timeAdded now; gpu-0 untainted"
else not_ok "DRADeviceTaints on: XID 79 on GPU 1: gpu-1 stays in the slice with the taint gpuslice.io/unhealthy=xid-79:NoSchedule: $taint (t0 $t0) $(jq -c '[.spec.devices[].name]' "$SLICE") $(tail -2 "$TMP/dra-on.log")"; fi
[ ! -s "$API_STATE/invalid.log" ] && ok "... the tainted slice is schema-valid (key, value, effect, timeAdded)" ||
        not_ok "refused writes: $(head -3 "$API_STATE/invalid.log")"
! grep -q "DRADeviceTaints" "$TMP/dra-on.log" && ok "... and the plugin says no gate is off" ||
        not_ok "the plugin says the gate is off: $(grep DRADeviceTaints "$TMP/dra-on.log")"

# the gate off: a dry run finds the taints dropped; gpu-1 left out, said once
dropped() { [ "$(jq -r '[.spec.devices[].name] | join(",")' "$SLICE_OFF" 2>/dev/null)" = gpu-0 ] || ! running "$PID_OFF"; }
wait_for 6 dropped
if [ "$(jq -r '[.spec.devices[].name] | join(",")' "$SLICE_OFF")" = gpu-0 ] &&
   grep -q "DRADeviceTaints feature gate is off): unhealthy devices are left out" "$TMP/dra-off.log"; then
        ok "DRADeviceTaints off: gpu-1 left out of the slice, the plugin says the gate is off"
else not_ok "DRADeviceTaints off: gpu-1 left out of the slice, the plugin says the gate is off: $(jq -c '[.spec.devices[] | {name, taints}]' "$SLICE_OFF") $(grep -c DRADeviceTaints "$TMP/dra-off.log") $(tail -2 "$TMP/dra-off.log")"; fi
# never stored untainted: every stored version of the slice after the XID lacks gpu-1 (the dry
# run came before the write)
grep -qx "PUT /apis/resource.k8s.io/v1/resourceslices/$NODE-$DRIVER" "$OFF/dry-runs.log" 2>/dev/null &&
        ok "... found out by a dry run (?dryRun=All) before the write: gpu-1 never published untainted" ||
        not_ok "... found out by a dry run (?dryRun=All) before the write: none in the API server's log: $(cat "$OFF/dry-runs.log" 2>&1)"

# prepare of the tainted device refused (a claim that tolerates the taint gets no unhealthy GPU)
U1=11111111-aaaa-4bbb-8ccc-000000000001
claim_json ml on-bad-gpu "$U1" "$DRIVER" "$(res gpu-1)"
dra prepare "$SOCK" v1 "ml/on-bad-gpu/$U1"
kexpect "a claim on the tainted gpu-1 (one that tolerates the taint): refused at prepare" \
        ".ok and (.claims[\"$U1\"].error | contains(\"unhealthy\"))"
U2=11111111-aaaa-4bbb-8ccc-000000000002
claim_json ml on-good-gpu "$U2" "$DRIVER" "$(res gpu-0)"
dra prepare "$SOCK" v1 "ml/on-good-gpu/$U2"
kexpect "... one on gpu-0: prepared" ".ok and (.claims[\"$U2\"].devices | length) == 1"

# ---------------------------------------------------------------------------------------------
# GPU 1 then lost: NoExecute, the first timeAdded kept

echo "lost $GPU1" >>"$DRV/etc/fakegpu/events"
lost() { [ "$(dev "$SLICE" gpu-1 | jq -r '.taints[0].value // empty')" = gpu-lost ] || ! running "$PID_ON"; }
wait_for 15 lost
taint2=$(dev "$SLICE" gpu-1 | jq -c .taints)
if jq -e --arg t "$added" 'length == 1 and .[0].key == "gpuslice.io/unhealthy" and .[0].value == "gpu-lost"
        and .[0].effect == "NoExecute" and .[0].timeAdded == $t' <<<"$taint2" >/dev/null 2>&1; then
        ok "GPU 1 then lost: the taint is gpu-lost:NoExecute (its pods evicted), timeAdded kept from the XID ($added)"
else not_ok "GPU 1 then lost: the taint is gpu-lost:NoExecute, timeAdded kept: $taint2 (was $taint) $(tail -2 "$TMP/dra-on.log")"; fi
[ "$(grep -c "DRADeviceTaints feature gate is off" "$TMP/dra-off.log")" = 1 ] &&
        [ "$(jq -r '[.spec.devices[].name] | join(",")' "$SLICE_OFF")" = gpu-0 ] &&
        ok "... the gate off: still left out, said once" ||
        not_ok "... the gate off: $(grep -c "DRADeviceTaints feature gate is off" "$TMP/dra-off.log") notes, $(jq -c '[.spec.devices[].name]' "$SLICE_OFF")"

# ---------------------------------------------------------------------------------------------
# Recovery without a restart: GPU 1 reset and the plugin restarted, with --health-recover 2 (a
# plugin does not start with a GPU lost); GPU 1 lost again: tainted, and kept past the recovery
# time while NVML says lost; reset: it answers again, and 2 s quiet later the taint goes (the
# slice, the health stream, the log); then an XID (twice, 1.5 s apart): tainted, and healthy again
# 2 s after the second

DRA_PID=$PID_ON stop_dra
echo "reset $GPU1" >>"$DRV/etc/fakegpu/events"
gen=$(jq .spec.pool.generation "$SLICE")
start_dra "$TMP/dra-on2.log" "${on_args[@]}" --health-recover 2
PID_ON=$DRA_PID
restarted() { { [ "$(jq .spec.pool.generation "$SLICE")" -gt "$gen" ] && published "$SLICE" &&
                [ "$(dev "$SLICE" gpu-1 | jq -c .taints)" = null ]; } || ! running "$PID_ON"; }
wait_for 15 restarted
[ "$(dev "$SLICE" gpu-1 | jq -c .taints)" = null ] && [ "$(jq .spec.pool.generation "$SLICE")" -gt "$gen" ] &&
        ok "GPU 1 reset, the plugin restarted: published again, gpu-1 untainted" ||
        not_ok "GPU 1 reset, the plugin restarted: $(dev "$SLICE" gpu-1 | jq -c .taints) $(tail -2 "$TMP/dra-on2.log")"
echo "lost $GPU1" >>"$DRV/etc/fakegpu/events"
wait_for 15 lost
sleep 3 # the recovery time, passed while GPU 1 is lost
if [ "$(dev "$SLICE" gpu-1 | jq -r '.taints[0].value // empty')" = gpu-lost ] && ! grep -q "healthy again" "$TMP/dra-on2.log"; then
        ok "GPU 1 lost: gpu-lost:NoExecute, kept past the recovery time (2 s) while NVML says lost"
else not_ok "GPU 1 lost: gpu-lost:NoExecute, kept past the recovery time (2 s) while NVML says lost: 3 s later $(dev "$SLICE" gpu-1 | jq -c .taints) $(tail -3 "$TMP/dra-on2.log")"; fi
watch "$TMP/w.json"
wait_for 20 lines "$TMP/w.json" 1
gen=$(jq .spec.pool.generation "$SLICE")
t_reset=$(date -u +%s.%N)
echo "reset $GPU1" >>"$DRV/etc/fakegpu/events"
cleared() { { [ "$(jq .spec.pool.generation "$SLICE")" -gt "$gen" ] && published "$SLICE" &&
              [ "$(dev "$SLICE" gpu-1 | jq -c .taints)" = null ]; } || ! running "$PID_ON"; }
wait_for 15 cleared
t_clear=$(date -u +%s.%N)
if [ "$(jq .spec.pool.generation "$SLICE")" -gt "$gen" ] && [ "$(dev "$SLICE" gpu-1 | jq -c .taints)" = null ] &&
   awk -v a="$t_reset" -v b="$t_clear" 'BEGIN { exit !(b - a >= 2) }'; then
        ok "GPU 1 reset (NVML answers for it again): the taint gone from gpu-1 $(awk -v a="$t_reset" -v b="$t_clear" 'BEGIN { printf "%.1f", b - a }') s later (quiet for 2 s first), no restart"
else not_ok "GPU 1 reset (NVML answers for it again): the taint gone from gpu-1 after 2 s quiet: $(dev "$SLICE" gpu-1 | jq -c .taints) gen $(jq .spec.pool.generation "$SLICE") (was $gen), $(awk -v a="$t_reset" -v b="$t_clear" 'BEGIN { print b - a }') s $(tail -3 "$TMP/dra-on2.log")"; fi
grep -q "GPU 1 ($GPU1) answers NVML again" "$TMP/dra-on2.log" &&
        grep -q "GPU 1 ($GPU1): quiet and answering for 2 s (unhealthy: lost): healthy again" "$TMP/dra-on2.log" &&
        ok "... the log says it answers again, then that it is healthy again" ||
        not_ok "... the log: $(grep -E "GPU 1|health" "$TMP/dra-on2.log" | tail -4)"
wait_for 10 lines "$TMP/w.json" 2
last=$(grep -c '"devices"' "$TMP/w.json")
upd=$(sed -n "${last}p" "$TMP/w.json" | jq -r '.devices[] | select(.device.device_name == "gpu-1") | .last_updated_time' 2>/dev/null)
[ "$(health "$TMP/w.json" 1)" = "gpu-0=HEALTHY@$NODE gpu-1=UNHEALTHY@$NODE" ] &&
        [ "$(health "$TMP/w.json" "$last")" = "gpu-0=HEALTHY@$NODE gpu-1=HEALTHY@$NODE" ] && [ "${upd:-0}" -ge "${t_reset%.*}" ] &&
        ok "... the DRA health service streams gpu-1 HEALTHY on the open stream (UNHEALTHY before), last_updated_time its recovery" ||
        not_ok "... the health stream: $(health "$TMP/w.json" 1) then $(health "$TMP/w.json" "$last") (gpu-1 updated $upd, reset at $t_reset)"

gen=$(jq .spec.pool.generation "$SLICE")
echo "xid $GPU1 48" >>"$DRV/etc/fakegpu/events"
sleep 1.5
t_xid=$(date -u +%s.%N)
echo "xid $GPU1 48" >>"$DRV/etc/fakegpu/events"
healed() { [ "$(grep -c "healthy again" "$TMP/dra-on2.log")" -ge 2 ] || ! running "$PID_ON"; }
wait_for 15 healed && wait_for 10 cleared
t_clear=$(date -u +%s.%N)
if grep -q "GPU 1 ($GPU1): quiet and answering for 2 s (unhealthy: XID 48): healthy again" "$TMP/dra-on2.log" &&
   [ "$(dev "$SLICE" gpu-1 | jq -c .taints)" = null ] && [ "$(jq .spec.pool.generation "$SLICE")" -ge $((gen + 2)) ] &&
   awk -v a="$t_xid" -v b="$t_clear" 'BEGIN { exit !(b - a >= 2) }'; then
        ok "an XID 48 on GPU 1, again 1.5 s later: tainted, healthy again 2 s after the second (not the first), no restart"
else not_ok "an XID 48 twice: healthy again 2 s after the second: $(dev "$SLICE" gpu-1 | jq -c .taints) gen $(jq .spec.pool.generation "$SLICE") (was $gen), $(awk -v a="$t_xid" -v b="$t_clear" 'BEGIN { print b - a }') s after the second $(grep -E "GPU 1" "$TMP/dra-on2.log" | tail -3)"; fi
# a remapped row waiting for a reset (the simulated NVML's remap-pending) and an XID 63 (ECC page
# retirement or row remapping): tainted, kept past the recovery time until the reset
echo "remap-pending $GPU1" >>"$DRV/etc/fakegpu/events"
echo "xid $GPU1 63" >>"$DRV/etc/fakegpu/events"
xid63() { [ "$(dev "$SLICE" gpu-1 | jq -r '.taints[0].value // empty')" = xid-63 ] || ! running "$PID_ON"; }
wait_for 6 xid63
sleep 3
if [ "$(dev "$SLICE" gpu-1 | jq -r '.taints[0].value // empty')" = xid-63 ] &&
   grep -q "GPU 1 ($GPU1): a remapped row waits for a reset: its devices are not healthy again before it is done" "$TMP/dra-on2.log"; then
        ok "a remapped row pending and XID 63 on GPU 1: tainted, kept while a remapped row waits for a reset (3 s, past the recovery time)"
else not_ok "a remapped row pending and XID 63 on GPU 1: tainted, kept while a remapped row waits for a reset: $(dev "$SLICE" gpu-1 | jq -c .taints) $(grep "GPU 1" "$TMP/dra-on2.log" | tail -3)"; fi
gen=$(jq .spec.pool.generation "$SLICE")
t_reset=$(date -u +%s.%N)
echo "reset $GPU1" >>"$DRV/etc/fakegpu/events"
wait_for 15 cleared
t_clear=$(date -u +%s.%N)
if [ "$(dev "$SLICE" gpu-1 | jq -c .taints)" = null ] && awk -v a="$t_reset" -v b="$t_clear" 'BEGIN { exit !(b - a >= 2) }' &&
   grep -q "GPU 1 ($GPU1): quiet and answering for 2 s (unhealthy: XID 63): healthy again" "$TMP/dra-on2.log"; then
        ok "... reset (the remapping applied): healthy again 2 s later"
else not_ok "... reset: healthy again 2 s later: $(dev "$SLICE" gpu-1 | jq -c .taints) $(awk -v a="$t_reset" -v b="$t_clear" 'BEGIN { print b - a }') s $(grep "GPU 1" "$TMP/dra-on2.log" | tail -2)"; fi

U3=11111111-aaaa-4bbb-8ccc-000000000003
claim_json ml after-repair "$U3" "$DRIVER" "$(res gpu-1)"
dra prepare "$SOCK" v1 "ml/after-repair/$U3"
kexpect "... a claim on gpu-1 prepared again (healthy again, no restart)" ".ok and (.claims[\"$U3\"].devices | length) == 1"

stop_dra
[ "$DRA_RC" = 0 ] && ok "the plugin stops cleanly" || not_ok "exit $DRA_RC"
# a plugin killed (SIGKILL: it cannot stop its NVML helper): the helper goes too (its identity
# changed, which clears PR_SET_PDEATHSIG: it sees its socket closed)
helper=$(pgrep -P "$PID_OFF" -x gpuslice-health | head -1)
kill -KILL "$PID_OFF"
wait "$PID_OFF" 2>/dev/null
helper_gone() { [ -n "$helper" ] && ! kill -0 "$helper" 2>/dev/null; }
if wait_for 10 helper_gone; then
        ok "a plugin killed with SIGKILL: its NVML helper ($helper) ends too"
else not_ok "a plugin killed with SIGKILL: its NVML helper ends too: '$helper' still runs ($(ps -o stat=,etime=,comm= -p "${helper:-1}" 2>&1))"
        kill -KILL "$helper" 2>/dev/null; fi
finish
