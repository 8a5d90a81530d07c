#!/usr/bin/env bash
# `gpuslice metrics` and a container started by the real runc with our hook: the hook writes the
# pod's names (the CRI annotations of config.json: CRI-O's keys in one container, containerd's in
# the other) beside the slice; the exporter shows the container's slice with them and with what
# its process allocated; when the container is killed (no poststop hook runs), its slice leaves
# the output and the exporter removes its directory.
. "$(dirname "$0")/../integration/lib.sh"
. "$SRC/tests/integration/bundle.sh"

need "$RUNC" jq curl promtool
for f in "$GS" "$VGPU_LIB" "$PROBE"; do [ -e "$f" ] || { echo "not ok - $f is not built"; exit 1; }; done

DRV=$(mkroot drv 2gpu.conf)
STATE=$TMP/runc-state
CG=gs-obs-hook-$$
SLICES=$TMP/slices
CONF=$TMP/hook.toml
hook_config "$CONF" "$DRV" "$SLICES"
ids=()
server=
cleanup() {
        local id d
        [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
        for id in "${ids[@]}"; do "$RUNC" --root "$STATE" delete -f "$id" >/dev/null 2>&1; done
        for d in /sys/fs/cgroup/*/"$CG"-*; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done
        rm -rf "$TMP"
}
trap cleanup EXIT
H_PRESTART='{path: $gs, args: ["gpuslice", "--root", $drv, "hook", "--config", $conf, "prestart"], env: $hookenv}'

# start NAME ANNOTATIONS-JSON [ENV-JSON]: a detached container on GPU 0 with a 1 GiB slice whose
# process allocates 64 MiB and holds it; only a prestart hook (nothing cleans up after it but the
# exporter); ENV-JSON: more of the container's env
start() {
        local name=$1 id=gs-$$-$1
        make_bundle "$name" '.process.env += ["NVIDIA_VISIBLE_DEVICES=0", "GPUSLICE_MEMORY_LIMIT=1Gi"] + $env
                | .process.args = ["/usr/bin/vgpu-probe", "hold", "64", "60"]
                | .annotations = $ann | .hooks = {prestart: ['"$H_PRESTART"']}' --argjson ann "$2" --argjson env "${3:-[]}"
        ids+=("$id")
        run "$name" -- timeout 60 "$RUNC" --root "$STATE" run -d --bundle "$TMP/$name" "$id" </dev/null
        expect_rc "$name" 0 "runc run -d of a slice container ($name)"
}
start crio '{"io.kubernetes.pod.namespace": "team-a", "io.kubernetes.pod.name": "trainer-0",
        "io.kubernetes.container.name": "main", "io.kubernetes.cri-o.Something": "x"}'
start containerd '{"io.kubernetes.cri.sandbox-namespace": "team-b", "io.kubernetes.cri.sandbox-name": "infer-1",
        "io.kubernetes.cri.container-name": "server", "io.kubernetes.cri.container-type": "container"}'
for n in crio containerd; do
        jq -e . "$SLICES/gs-$$-$n/labels" >/dev/null 2>&1 && ok "$n: the hook wrote the labels file" ||
                not_ok "$n: no labels file in $SLICES/gs-$$-$n: $(ls "$SLICES/gs-$$-$n" 2>&1)"
done
# issue 31: labels only from the host. A container's env (the image's ENV, the pod spec's env)
# naming another pod, or a claim, is not a label: one without annotations claims team-a/trainer-0
# (crio's pod), one team-z/victim (also by env entries named as the CRI annotations); one of pod
# team-b/infer-2 claims a DRA claim's name.
FAKE='["GPUSLICE_K8S_NAMESPACE=team-a", "GPUSLICE_K8S_POD=trainer-0", "GPUSLICE_K8S_CLAIM=stolen",
       "GPUSLICE_K8S_CONTAINER=main", "GPUSLICE_K8S_DEVICES_GPU=x"]'
start impostor '{}' "$FAKE"
start impostor2 '{}' '["GPUSLICE_K8S_NAMESPACE=team-z", "GPUSLICE_K8S_POD=victim", "io.kubernetes.pod.namespace=team-z",
        "io.kubernetes.pod.name=victim", "io.kubernetes.cri.sandbox-name=victim"]'
start claimer '{"io.kubernetes.cri.sandbox-namespace": "team-b", "io.kubernetes.cri.sandbox-name": "infer-2",
        "io.kubernetes.cri.container-name": "c"}' '["GPUSLICE_K8S_CLAIM=stolen", "GPUSLICE_K8S_POD=other"]'
for n in impostor impostor2; do
        if [ -d "$SLICES/gs-$$-$n" ] && ! grep -q . "$SLICES/gs-$$-$n/labels" 2>/dev/null; then
                ok "$n: a container naming another pod in its env: no labels"
        else not_ok "$n: labels $(cat "$SLICES/gs-$$-$n/labels" 2>&1)"; fi
done
[ "$(jq -c . "$SLICES/gs-$$-claimer/labels" 2>&1)" = '{"namespace":"team-b","pod":"infer-2","container":"c"}' ] &&
        ok "claimer: its pod's names from the annotations, no claim from its env" ||
        not_ok "claimer: labels $(cat "$SLICES/gs-$$-claimer/labels" 2>&1)"
"$GS" slice show --regions-dir "$SLICES" --json team-a/trainer-0 >"$TMP/show.json" 2>"$TMP/show.err"
jq -e --arg id "gs-$$-crio" '.id == $id' "$TMP/show.json" >/dev/null &&
        ok "slice show team-a/trainer-0: the pod's own container, not the one whose env names it" ||
        not_ok "slice show team-a/trainer-0: $(head -c 300 "$TMP/show.json") $(head -3 "$TMP/show.err")"
if ! "$GS" slice set --regions-dir "$SLICES" team-z/victim --memory 2Gi >"$TMP/set.out" 2>"$TMP/set.err" &&
   grep -q "no live slice of pod team-z/victim" "$TMP/set.err" && [ "$(jq -r .memory "$SLICES/gs-$$-impostor2/live/limits" 2>/dev/null)" != 2Gi ]; then
        ok "slice set team-z/victim: no such slice (a container's env cannot make one its pod)"
else not_ok "slice set team-z/victim: $(cat "$TMP/set.out" "$TMP/set.err" | head -3)"; fi
"$GS" slice list --regions-dir "$SLICES" --json >"$TMP/list.json" 2>&1
jq -e '[.. | strings | select(. == "stolen" or . == "victim" or . == "team-z")] == []' "$TMP/list.json" >/dev/null &&
        ok "slice list: no label from a container's env" || not_ok "slice list: $(head -c 400 "$TMP/list.json")"

"$GS" --root "$DRV" metrics --listen 127.0.0.1:0 --regions-dir "$SLICES" --nvml-interval 1 >"$TMP/srv.out" 2>"$TMP/srv.err" &
server=$!
for _ in $(seq 100); do
        PORT=$(sed -n 's/.*listening on .*:\([0-9][0-9]*\)$/\1/p' "$TMP/srv.err"); [ -n "$PORT" ] && break; sleep 0.05
done
[ -n "$PORT" ] && ok "the exporter listens ($PORT)" || { not_ok "the exporter did not start"; cat "$TMP/srv.err"; finish; exit 1; }
scrape() { curl -sf --max-time 5 "http://127.0.0.1:$PORT/metrics" >"$TMP/$1.prom"; }
# wait until both containers' processes hold their 64 MiB
for _ in $(seq 100); do
        scrape s1
        [ "$(grep -c '^gpuslice_slice_memory_allocated_bytes{.* 67108864$' "$TMP/s1.prom")" = 5 ] && break
        sleep 0.1
done
promtool check metrics <"$TMP/s1.prom" >"$TMP/promtool.out" 2>&1 && ok "promtool check metrics passes" ||
        not_ok "promtool: $(head -3 "$TMP/promtool.out")"
line() { grep "^$1{" "$TMP/s1.prom" | grep -F "container_id=\"gs-$$-$2\"" | head -1; }
want_crio="namespace=\"team-a\",pod=\"trainer-0\",container=\"main\",vdevice=\"0\",gpu=\"0\",UUID=\"$GPU0_UUID\""
want_cd="namespace=\"team-b\",pod=\"infer-1\",container=\"server\",vdevice=\"0\",gpu=\"0\",UUID=\"$GPU0_UUID\""
for c in "crio $want_crio" "containerd $want_cd"; do
        n=${c%% *} want=${c#* }
        l=$(line gpuslice_slice_memory_allocated_bytes "$n")
        [ "$l" = "gpuslice_slice_memory_allocated_bytes{container_id=\"gs-$$-$n\",$want} 67108864" ] &&
                ok "$n: its pod's names, GPU 0, and the 64 MiB its process allocated" || not_ok "$n: got '$l'"
        l=$(line gpuslice_slice_memory_limit_bytes "$n")
        [ "${l##* }" = 1073741824 ] && ok "$n: its 1 GiB quota" || not_ok "$n: quota line '$l'"
        l=$(line hami_vgpu_memory_limit_bytes "$n")
        [ "${l##* }" = 1073741824 ] && ok "$n: HAMi's name, HAMi's labels ($(echo "$l" | cut -d'{' -f2 | cut -d, -f1-3))" ||
                not_ok "$n: HAMi line '$l'"
done

for n in impostor impostor2 claimer; do
        l=$(grep "^gpuslice_slice_info{" "$TMP/s1.prom" | grep -F "container_id=\"gs-$$-$n\"")
        if [ -n "$l" ] && ! grep -qE 'stolen|victim|team-z|team-a|trainer-0|pod="other"' <<<"$l" &&
           ! grep -F "container_id=\"gs-$$-$n\"" "$TMP/s1.prom" | grep -qE 'stolen|victim|team-a'; then
                ok "metrics, $n: no label from its env ($(cut -d'{' -f2 <<<"$l" | cut -d, -f1-4))"
        else not_ok "metrics, $n: '$l'"; fi
done
"$GS" top --json --no-nvml --regions-dir "$SLICES" --interval 0.2 >"$TMP/top.json" 2>"$TMP/top.err"
if jq -e '.slices | length >= 5' "$TMP/top.json" >/dev/null &&
   jq -e '[.. | strings | select(test("stolen|victim|team-z"))] == []' "$TMP/top.json" >/dev/null &&
   jq -e --arg i "gs-$$-impostor" '[.slices[] | select(.id == $i)][0] | (.pod // "") == "" and (.namespace // "") == ""' "$TMP/top.json" >/dev/null; then
        ok "top: no label from a container's env"
else not_ok "top: $(jq -c '[.slices[]? | {id, name, pod, claim}]' "$TMP/top.json" 2>&1 | head -c 500) $(head -2 "$TMP/top.err")"; fi

# kill one container (no poststop hook: its directory stays behind for the exporter to find)
"$RUNC" --root "$STATE" kill "gs-$$-crio" KILL >/dev/null 2>&1
for _ in $(seq 50); do [ "$("$RUNC" --root "$STATE" state "gs-$$-crio" 2>/dev/null | jq -r .status)" = stopped ] && break; sleep 0.1; done
scrape s2
grep -q "container_id=\"gs-$$-crio\"" "$TMP/s2.prom" && not_ok "the killed container's slice is still shown" ||
        ok "the killed container's slice vanished from the next scrape"
grep -q "container_id=\"gs-$$-containerd\"" "$TMP/s2.prom" && ok "the other container's slice stays" ||
        not_ok "the running container's slice is gone"
for _ in $(seq 60); do [ -e "$SLICES/gs-$$-crio" ] || break; sleep 0.1; done
[ -e "$SLICES/gs-$$-crio" ] && not_ok "the exporter left $SLICES/gs-$$-crio" ||
        ok "the exporter removed the dead container's slice directory"
[ -e "$SLICES/gs-$$-containerd/usage" ] && ok "... and only that one" || not_ok "the live container's directory was removed"
grep -q "slice gs-$$-crio: its container is gone" "$TMP/srv.err" && ok "... and said so in its log" || not_ok "no log line"
finish
