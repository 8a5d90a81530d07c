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

# start NAME ANNOTATIONS-JSON: a detached container on GPU 0 with a 1 GiB slice whose process
# allocates 64 MiB and holds it; only a prestart hook (nothing cleans up after it but the exporter)
start() {
        local name=$1 id=gs-$$-$1
        make_bundle "$name" '.process.env += ["NVIDIA_VISIBLE_DEVICES=0", "GPUSLICE_MEMORY_LIMIT=1Gi"]
                | .process.args = ["/usr/bin/vgpu-probe", "hold", "64", "60"]
                | .annotations = $ann | .hooks = {prestart: ['"$H_PRESTART"']}' --argjson ann "$2"
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
        [ "$(grep -c '^gpuslice_slice_memory_allocated_bytes{.* 67108864$' "$TMP/s1.prom")" = 2 ] && break
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
