#!/usr/bin/env bash
# gpuslice dra-plugin's DRA health service (issue 33, item 4; KEP-4680, the kubelet's
# ResourceHealthStatus gate, alpha in 1.34): the kubelet's NodeWatchResources stream
# (/v1alpha1.DRAResourceHealth/, messages as tests/k8s/kubelet_wire.txt has them from upstream)
# on the simulated 2-GPU machine: on connect every device of the slice, HEALTHY; an XID on GPU 1
# (the simulated NVML events): an UNHEALTHY gpu-1 arrives on the open stream, gpu-0 still healthy;
# a stream past the watcher bound is refused; SIGTERM ends the streams.
#
# The mutation check (tests/mutation/run.sh, drahealth: no message on a change) is meant for the XID check.
# Every wait ends on what the plugin did (a message on the stream), the XID's after 6 s at most
# (the plugin looks at health every 0.2 s).
. "$(dirname "$0")/dra_lib.sh" # with tests/integration/lib.sh, bundle.sh (the simulated GPUs' uuids), tests/k8s/lib.sh

CDI_DIR=$TMP/cdi
dra_setup
start_apiserver "$API_STATE" "$TMP/kubeconfig"
start_dra "$TMP/dra.log" -c "$TMP/dra.toml" --driver-name "$DRIVER" --node "$NODE" --health-period 0.2 \
        --kubeconfig "$TMP/kubeconfig" --cdi-dir "$CDI_DIR" --plugin-dir "$PLUG" --registry-dir "$REG"
SOCK=$PLUG/dra.sock
wait_for 20 test -S "$SOCK" || not_ok "no DRA socket: $(tail -3 "$TMP/dra.log")"

t0=$(date -u +%s)
watch "$TMP/w1.json"
wait_for 20 lines "$TMP/w1.json" 1
got=$(health "$TMP/w1.json" 1)
[ "$got" = "gpu-0=HEALTHY@$NODE gpu-1=HEALTHY@$NODE" ] &&
        ok "NodeWatchResources: on connect every device of the slice (pool $NODE), HEALTHY" ||
        not_ok "NodeWatchResources on connect: '$got' $(head -c 400 "$TMP/w1.json") $(tail -3 "$TMP/dra-kubelet.err") $(tail -2 "$TMP/dra.log")"
ts=$(sed -n 1p "$TMP/w1.json" | jq -r '[.devices[].last_updated_time | tonumber] | min' 2>/dev/null)
[ -n "$ts" ] && [ "$ts" -ge $((t0 - 60)) ] && [ "$ts" -le $(($(date -u +%s) + 1)) ] &&
        ok "... with last_updated_time (Unix seconds) the plugin's start" || not_ok "... last_updated_time: '$ts' (now $t0)"

# the XID on GPU 1: a second message on the same open stream
t1=$(date -u +%s)
echo "xid $GPU1 79" >>"$DRV/etc/fakegpu/events"
wait_for 6 lines "$TMP/w1.json" 2
got=$(health "$TMP/w1.json" 2)
upd=$(sed -n 2p "$TMP/w1.json" | jq -r '.devices[] | select(.device.device_name == "gpu-1") | .last_updated_time' 2>/dev/null)
if [ "$got" = "gpu-0=HEALTHY@$NODE gpu-1=UNHEALTHY@$NODE" ] && [ "${upd:-0}" -ge $((t1 - 1)) ]; then
        ok "XID 79 on GPU 1: UNHEALTHY gpu-1 (last_updated_time the XID's) arrives on the open stream, gpu-0 HEALTHY"
else not_ok "XID 79 on GPU 1: the stream's second message: '$got' (updated $upd, XID at $t1) $(tail -2 "$TMP/dra.log")"; fi

# a new watcher gets the current state at once
watch "$TMP/w2.json"
wait_for 20 lines "$TMP/w2.json" 1
[ "$(health "$TMP/w2.json" 1)" = "gpu-0=HEALTHY@$NODE gpu-1=UNHEALTHY@$NODE" ] &&
        ok "a watcher connecting later gets gpu-1 UNHEALTHY at once" || not_ok "a later watcher: $(health "$TMP/w2.json" 1)"

# bounded: with 4 open, a fifth is refused (RESOURCE_EXHAUSTED), the open ones still served
watch "$TMP/w3.json"
watch "$TMP/w4.json"
wait_for 20 lines "$TMP/w4.json" 1 && wait_for 20 lines "$TMP/w3.json" 1
dra watch-health "$SOCK" 5
jq -e '.ok == false and .code == "RESOURCE_EXHAUSTED"' "$TMP/k.json" >/dev/null 2>&1 &&
        ok "a fifth watcher is refused: RESOURCE_EXHAUSTED (at most 4 streams)" ||
        not_ok "a fifth watcher: $(cat "$TMP/k.json")"
# one goes away: its place is free again
kill "${WATCH[3]}" 2>/dev/null
five() { dra watch-health "$SOCK" 1; sed -n 1p "$TMP/k.json" | grep -q '"devices"'; }
wait_for 10 five && ok "a watcher gone frees its place" || not_ok "after a watcher left: $(cat "$TMP/k.json")"

# SIGTERM: the open streams end (the fake kubelet's call returns), the plugin exits 0
stop_dra
ended() { grep -q '"end"\|"ok": false' "$TMP/w1.json"; }
wait_for 10 ended && [ "$DRA_RC" = 0 ] && ok "SIGTERM ends the open health streams; the plugin exits 0" ||
        not_ok "SIGTERM: rc $DRA_RC, the stream: $(tail -1 "$TMP/w1.json")"
finish
