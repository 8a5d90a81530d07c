#!/usr/bin/env bash
# gpuslice dra-plugin on a real GPU (issue 23): a ResourceClaim for 4 Gi and 30 % of GPU 0,
# prepared as the kubelet would, its CDI spec applied to runc bundles as a CDI runtime would:
#   - the fake API server (tests/k8s/fake_apiserver.py --schema none, run by `python3 -I -S`: the
#     standard library only, as this host's python3 has no grpcio or jsonschema) over HTTPS with a
#     token; the plugin publishes its ResourceSlice there and reads the claim from it;
#   - dra-probe (the kubelet's DRA calls in C) prepares the claim: its CDI name, its spec;
#   - tests/gpu/cdi_apply.py applies the claim's device to two runc bundles: one fills the GPU
#     (cuda_fill: nvidia-smi and cudaMemGetInfo show 4096 MiB, cudaMalloc is refused at the quota,
#     NVML's count for the process within 1 % under it), one runs compute_shapes short (its rate
#     30 +- 2 % of the native rate measured before and after, on the host);
#   - the claim's status data (issue 33, --status-period 1): memory in use within 2 % of NVML's count
#     for the filling process, a MemoryQuotaReached Event when it hit the quota;
#   - two claims of one GPU side by side (issue 33): an 8 Gi / 50 % claim prepared beside the first,
#     both filled at once (each at its own quota, each claim's status data within 2 % of NVML's count
#     for its own process), then both computing at once (their arbiter records in one GPU's
#     directory: they take turns; 30 and 50 +- 2 % of native);
#   - unprepare removes the spec; SIGTERM keeps the ResourceSlice.
#   tests/gpu/dra_check.sh BUILD OUTDIR   (as root; PASS/FAIL/SKIP lines, then "N passed, N failed,
#                                          N skipped" (tests/gpu/lib.sh); exits 1 on a FAIL, 77
#                                          without a GPU)
# DRA_ROOT=DIR: the plugin on that driver root instead (the simulated GPU, tests/fakegpu/mkroot.sh):
# everything up to the bundles is checked, the containers are not run (SKIP lines): this script's
# own check where there is no GPU. Needs BUILD/tests/dra-probe (-Dtests=true), BUILD/gpu-carry
# (tests/gpu/prepare.sh: busybox, runc, cuda_fill, compute_shapes, dra/cert.pem + key.pem) or, for
# the certificate, openssl.
set -u
BUILD=$(realpath -m "${1:-build}") OUT=$(realpath -m "${2:-$(mktemp -d)}")
cd "$(dirname "$0")/../.." || exit 1
GS=$BUILD/gpuslice CARRY=$BUILD/gpu-carry PROBE=$BUILD/tests/dra-probe
RUNC=${GS_RUNC:-$CARRY/runc/runc}
SIM=${DRA_ROOT:-}
if [ -z "$SIM" ] && { [ ! -e /dev/nvidiactl ] || ! command -v nvidia-smi >/dev/null 2>&1; }; then
        echo "SKIP: no NVIDIA GPU here (and no DRA_ROOT): the DRA check not run"
        exit 77
fi
[ -d "$BUILD/runtime-libs" ] && export LD_LIBRARY_PATH=$BUILD/runtime-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p "$OUT"
. tests/gpu/lib.sh
kv() { awk -v k="$1" 'index($0, k "=") == 1 {print substr($0, length(k) + 2); exit}' "$2"; }
rate() { sed -n 's/.* rate=\([0-9.]*\).*/\1/p' "$1" | tail -1; }
wait_for() { local t=$1; shift; for _ in $(seq $((t * 10))); do "$@" && return 0; sleep 0.1; done; return 1; }

W=$(mktemp -d /tmp/gs-dra-check.XXXXXX)
chmod 755 "$W"
API_PID="" DRA_PID="" ids=()
cleanup() {
        local id
        for id in "${ids[@]}"; do "$RUNC" --root "$W/runc-state" delete -f "$id" >/dev/null 2>&1; done
        [ -n "$DRA_PID" ] && kill "$DRA_PID" 2>/dev/null
        [ -n "$API_PID" ] && kill "$API_PID" 2>/dev/null
        wait 2>/dev/null
        for id in "${ids[@]}"; do rm -rf "/run/gpuslice/slices/$id"; rmdir "/sys/fs/cgroup/$id" 2>/dev/null; done
        rm -rf "$W"
}
finish_trap cleanup

missing=()
for f in "$GS" "$PROBE"; do [ -x "$f" ] || missing+=("$f"); done
command -v python3 >/dev/null || missing+=(python3)
if [ ${#missing[@]} -gt 0 ]; then check "dra: cannot run: missing ${missing[*]}" false; finish; fi

# --- the API server, HTTPS with the carried certificate (or one made here) ---------------------
if [ -s "$CARRY/dra/cert.pem" ] && [ -s "$CARRY/dra/key.pem" ]; then
        cp "$CARRY/dra/cert.pem" "$CARRY/dra/key.pem" "$W/"
elif ! openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=localhost \
        -addext "subjectAltName=IP:127.0.0.1" -keyout "$W/key.pem" -out "$W/cert.pem" >"$W/openssl.err" 2>&1; then
        check "dra: a certificate for the API server: none carried ($CARRY/dra, tests/gpu/prepare.sh) and openssl failed" false
        finish
fi
TOKEN=token-$$-$RANDOM
mkdir -p "$W/api/claims/gs" "$W/reg"
python3 -I -S tests/k8s/fake_apiserver.py --cert "$W/cert.pem" --key "$W/key.pem" --token "$TOKEN" --state "$W/api" \
        --schema none --port-file "$W/port" 2>"$OUT/dra-apiserver.err" &
API_PID=$!
wait_for 10 test -s "$W/port"
check "the fake API server runs on the standard library alone (python3 -I -S, --schema none)" test -s "$W/port"
[ -s "$W/port" ] || { cat "$OUT/dra-apiserver.err"; finish; }
printf 'apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n  cluster: {server: "https://127.0.0.1:%s", certificate-authority: cert.pem}\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\nusers:\n- name: u\n  user: {token: %s}\n' \
        "$(cat "$W/port")" "$TOKEN" >"$W/kubeconfig"

# --- the plugin ---------------------------------------------------------------------------------
DRIVER=gpu.gpuslice.io NODE=gpu-host UID_=0d5a0000-0000-4000-8000-$(printf '%012d' $$)
{
        echo '[driver]'
        if [ -n "$SIM" ]; then echo "root = \"$SIM\""; else echo "path = \"$PATH\""; fi
        [ -z "$SIM" ] && [ -x /sbin/ldconfig.real ] && echo 'ldconfig = "@/sbin/ldconfig.real"'
} >"$W/config.toml"
"$GS" dra-plugin -c "$W/config.toml" --driver-name "$DRIVER" --kubeconfig "$W/kubeconfig" --node "$NODE" \
        --cdi-dir "$W/cdi" --plugin-dir "$W/plugin" --registry-dir "$W/reg" --status-period 1 2>"$OUT/dra-plugin.log" &
DRA_PID=$!
SLICE=$W/api/slices/$NODE-$DRIVER.json
published_or_dead() { [ -s "$SLICE" ] || ! kill -0 "$DRA_PID" 2>/dev/null; }
wait_for 30 published_or_dead
check "dra-plugin registered its socket and published its ResourceSlice with gpu-0" \
        python3 -c 'import json, sys; s = json.load(open(sys.argv[1]))["spec"]; sys.exit(not any(d["name"] == "gpu-0" for d in s["devices"]))' "$SLICE"
[ -s "$SLICE" ] || { tail -5 "$OUT/dra-plugin.log"; finish; }
cp "$SLICE" "$OUT/dra-resourceslice.json"
cat >"$W/api/claims/gs/slice-4g-30.json" <<JSON
{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
 "metadata": {"name": "slice-4g-30", "namespace": "gs", "uid": "$UID_"},
 "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.gpuslice.io"}}]}},
 "status": {"allocation": {"devices": {"results": [{"request": "gpu", "driver": "$DRIVER", "pool": "$NODE",
   "device": "gpu-0", "consumedCapacity": {"memory": "4Gi", "compute": "30"}}]}}}}
JSON
wait_for 10 test -S "$W/plugin/dra.sock"
"$PROBE" "$W/plugin/dra.sock" prepare "gs/slice-4g-30/$UID_" >"$OUT/dra-prepare.json" 2>&1
cat "$OUT/dra-prepare.json"
NAME=k8s.$DRIVER/claim=$UID_-gpu-0
SPEC=$W/cdi/$DRIVER-claim-$UID_.json
check "NodePrepareResources of the 4 Gi / 30 % claim answers its CDI device $NAME" \
        python3 -c 'import json, sys; a = json.load(open(sys.argv[1])); sys.exit(a != {sys.argv[2]: {"cdi": [sys.argv[3]], "error": ""}})' \
        "$OUT/dra-prepare.json" "$UID_" "$NAME"
[ -s "$SPEC" ] && cp "$SPEC" "$OUT/dra-claim-spec.json"
python3 tests/gpu/cdi_apply.py --list "$SPEC" >"$W/names.txt" 2>&1
check "the claim's spec loads as a CDI runtime loads it and offers $NAME" grep -qx "$NAME" "$W/names.txt"
check "... its device's slice hook carries --memory=4Gi, --compute-share=30 and its GPU (--gpu: per-GPU slices)" \
        python3 -c 'import json, sys; h = json.load(open(sys.argv[1]))["devices"][0]["containerEdits"]["hooks"]
a = [x for x in h if x["hookName"] == "createRuntime"][0]["args"]
sys.exit(not ({"--memory=4Gi", "--compute-share=30"} <= set(a) and any(x.startswith("--gpu=GPU-") for x in a)))' "$SPEC"
SMI=$(python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))
m = [x["containerPath"] for x in s.get("containerEdits", {}).get("mounts", []) if x["containerPath"].endswith("/nvidia-smi")]
print(m[0] if m else "/usr/bin/nvidia-smi")' "$SPEC" 2>/dev/null)

# --- two runc bundles with the claim's device ----------------------------------------------------
# mkbundle NAME ARGS-JSON [SPEC CDI-NAME]: W/NAME from `runc spec`, its process ARGS, the claim's
# device applied (the first claim's unless SPEC and CDI-NAME name another's)
mkbundle() {
        local b=$W/$1 spec=${3:-$SPEC} name=${4:-$NAME}
        mkdir -p "$b" && cp -a "$W/base" "$b/rootfs" && (cd "$b" && "$RUNC" spec) || return 1
        python3 - "$b/config.json" "$2" "/gs-dra-$1-$$" <<'PY' || return 1
import json, sys
p, args, cg = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
c = json.load(open(p))
c["root"] = {"path": "rootfs", "readonly": False}
c["linux"]["cgroupsPath"] = cg
c["process"]["terminal"] = False
c["process"]["args"] = args
json.dump(c, open(p, "w"), indent=2)
PY
        python3 tests/gpu/cdi_apply.py "$b/config.json" "$spec" -- "$name" 2>>"$OUT/dra-cdi-apply.txt" || return 1
        # hooks run with the env their definition gives: where gpuslice needs the carried
        # libraries (BUILD/runtime-libs), ours get LD_LIBRARY_PATH too
        env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "$GS" --version >/dev/null 2>&1 && return 0
        python3 - "$b/config.json" "$(readlink -f "$GS")" "LD_LIBRARY_PATH=$LD_LIBRARY_PATH" <<'PY'
import json, sys
p, gs, ldlp = sys.argv[1:4]
c = json.load(open(p))
for hs in c.get("hooks", {}).values():
    for h in hs:
        if h["path"] in (gs, gs + "-hook"):
            h.setdefault("env", []).append(ldlp)
json.dump(c, open(p, "w"), indent=2)
PY
}
bins_ok=1
for f in "$CARRY/busybox" "$RUNC" "$CARRY/cuda_fill" "$CARRY/compute_shapes"; do
        [ -x "$f" ] || { [ -n "$SIM" ] || check "dra: cannot run the containers: missing $f (tests/gpu/prepare.sh)" false; bins_ok=0; }
done
if [ "$bins_ok" = 0 ] && [ -n "$SIM" ]; then # the simulated GPU: this machine's busybox and runc will do
        RUNC=${GS_RUNC:-$(command -v runc || echo /usr/sbin/runc)}
        [ -x "$RUNC" ] && [ -x /bin/busybox ] && bins_ok=1
        printf '#!/bin/sh\necho "simulated: not run"\n' >"$W/nocuda"
fi
if [ "$bins_ok" = 1 ]; then
        BUSYBOX=$([ -x "$CARRY/busybox" ] && echo "$CARRY/busybox" || echo /bin/busybox) \
                tests/integration/mkrootfs.sh "$W/base" >/dev/null
        for b in cuda_fill compute_shapes; do
                if [ -x "$CARRY/$b" ]; then cp "$CARRY/$b" "$W/base/$b"; else cp "$W/nocuda" "$W/base/$b"; fi
        done
        cat >"$W/base/fill.sh" <<EOF
echo "smi_total=\$($SMI --query-gpu=memory.total --format=csv,noheader,nounits 2>&1 | head -1)"
if [ -e /etc/ld.so.preload ]; then echo "preload=\$(tr '\n' ' ' </etc/ld.so.preload)"; else echo "preload=(none)"; fi
/cuda_fill 3; echo "fill_rc=\$?"
echo DONE
EOF
        mkbundle fill '["/bin/sh", "/fill.sh"]' && mkbundle compute '["/compute_shapes", "short", "3"]'
        check "the claim's device applied to two runc bundles (cdi_apply.py)" test -s "$W/fill/config.json" -a -s "$W/compute/config.json"
        cp "$W/fill/config.json" "$OUT/dra-fill-config.json" 2>/dev/null
        check "... their config.json: the slice hooks (gpuslice-hook --gpu=GPU 0 --memory=4Gi --compute-share=30 createRuntime, poststop), GPU 0's node" \
                python3 -c 'import json, sys
c = json.load(open(sys.argv[1]))
hooks = {k: [[h["args"][0], h["args"][-1]] for h in v] for k, v in c.get("hooks", {}).items()}  # options before the stage
args = [a for h in c.get("hooks", {}).get("createRuntime", []) for a in h["args"]]
ok = "--memory=4Gi" in args and "--compute-share=30" in args and any(a.startswith("--gpu=GPU-") for a in args)
ok &= ["gpuslice-hook", "createRuntime"] in hooks.get("createRuntime", []) and ["gpuslice-hook", "poststop"] in hooks.get("poststop", [])
ok &= any(d["path"] == "/dev/nvidia0" for d in c["linux"].get("devices", []))
sys.exit(not ok)' "$W/fill/config.json"
fi

# --- the containers (a real GPU only) ------------------------------------------------------------
Q=4096
if [ -n "$SIM" ]; then
        skip "dra: the containers (quota, OOM, compute share): DRA_ROOT is the simulated GPU"
elif [ "$bins_ok" = 1 ]; then
        id=gs-dra-fill-$$ ids+=("$id")
        timeout 90 "$RUNC" --root "$W/runc-state" run --bundle "$W/fill" "$id" </dev/null >"$OUT/dra-fill.txt" 2>&1 &
        rp=$!
        for _ in $(seq 200); do grep -q '^filled\|^DONE' "$OUT/dra-fill.txt" && break; kill -0 "$rp" 2>/dev/null || break; sleep 0.1; done
        fp=$(pgrep -x cuda_fill | head -1)
        used=$(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits | awk -F', ' -v p="$fp" '$1 == p {print $2}')
        slice_during=no; [ -d "/run/gpuslice/slices/$id" ] && slice_during=yes
        # issue 33: the share's usage on the claim (--status-period 1), read while the container holds
        CLAIM=$W/api/claims/gs/slice-4g-30.json
        claim_used() { python3 -c 'import json, sys
d = [x.get("data", {}) for x in json.load(open(sys.argv[1])).get("status", {}).get("devices", [])]
print(d[0]["memory"]["usedBytes"] // 1048576 if d and d[0].get("memory", {}).get("usedBytes", 0) > 0 else "")' "$CLAIM" 2>/dev/null; }
        claim_mib=
        for _ in $(seq 30); do claim_mib=$(claim_used); [ -n "$claim_mib" ] && [ "$claim_mib" -ge $((Q - 41)) ] && break; kill -0 "$rp" 2>/dev/null || break; sleep 0.1; done
        cp "$CLAIM" "$OUT/dra-claim-status.json" 2>/dev/null
        wait "$rp"; rc=$?
        cat "$OUT/dra-fill.txt"
        echo "  NVML counts ${used:-?} MiB for the container's cuda_fill (pid ${fp:-?}); the slice directory was there: $slice_during"
        check "claim container: runc ran it to its end" test "$rc" = 0 -a -n "$(grep -x DONE "$OUT/dra-fill.txt")"
        check "claim container: nvidia-smi shows 4096 MiB ($(kv smi_total "$OUT/dra-fill.txt"))" test "$(kv smi_total "$OUT/dra-fill.txt")" = $Q
        check "claim container: cudaMemGetInfo shows 4096 MiB" grep -q "^before: .*total $Q MiB" "$OUT/dra-fill.txt"
        check "claim container: past the quota cudaMalloc fails with out-of-memory" \
                grep -q '^filled .*first refusal: cudaErrorMemoryAllocation' "$OUT/dra-fill.txt"
        check "claim container: NVML's count for the process reaches the quota and stays in it ($((Q - 41)) <= ${used:-?} <= $Q MiB)" \
                test "${used:-0}" -ge $((Q - 41)) -a "${used:-99999}" -le $Q
        echo "  the claim's status data: $(python3 -c 'import json, sys; print(json.dumps([x.get("data") for x in json.load(open(sys.argv[1]))["status"]["devices"]]))' "$OUT/dra-claim-status.json" 2>&1)"
        check "claim status (issue 33): memory.usedBytes ${claim_mib:-?} MiB within 2 % of NVML's ${used:-?} MiB for the process" \
                awk -v a="${claim_mib:-0}" -v b="${used:-0}" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 0 && b > 0 && d <= 82) }'
        wait_for 3 grep -q '"MemoryQuotaReached"' "$W/api/events.log"
        grep '"MemoryQuotaReached"' "$W/api/events.log" 2>/dev/null | head -1 >"$OUT/dra-quota-event.json"
        check "claim status (issue 33): a MemoryQuotaReached Event on the claim when cudaMalloc was refused at the quota" \
                grep -q '"name": "slice-4g-30"' "$OUT/dra-quota-event.json"
        check "claim container: the slice directory existed while it ran" test "$slice_during" = yes
        check "claim container: poststop removed the slice directory" test "$slice_during" = yes -a ! -e "/run/gpuslice/slices/$id"

        "$CARRY/compute_shapes" short 3 >"$OUT/dra-native1.txt" 2>&1
        id=gs-dra-compute-$$ ids+=("$id")
        timeout 90 "$RUNC" --root "$W/runc-state" run --bundle "$W/compute" "$id" </dev/null >"$OUT/dra-compute.txt" 2>&1
        rc=$?
        "$CARRY/compute_shapes" short 3 >"$OUT/dra-native2.txt" 2>&1
        cat "$OUT/dra-compute.txt"
        echo "  the claim's status data after compute_shapes (the last 1 s window): $(python3 -c 'import json, sys; print(json.dumps([x.get("data") for x in json.load(open(sys.argv[1]))["status"]["devices"]]))' "$W/api/claims/gs/slice-4g-30.json" 2>&1)"
        n1=$(rate "$OUT/dra-native1.txt") n2=$(rate "$OUT/dra-native2.txt") r=$(rate "$OUT/dra-compute.txt")
        pct=$(awk -v a="${r:-0}" -v n1="${n1:-0}" -v n2="${n2:-0}" 'BEGIN { n = (n1 + n2) / 2; printf "%.1f", (n > 0 ? 100 * a / n : -1) }')
        echo "  compute: the claim's container $r, native $n1 / $n2: $pct % of native"
        check "claim container: compute_shapes short ran (rc $rc)" test "$rc" = 0 -a -n "$r"
        check "claim container: its compute is 30 +- 2 % of native ($pct %)" awk -v p="$pct" 'BEGIN { exit !(p >= 28 && p <= 32) }'
fi

# --- issue 33: two claims of one GPU side by side -------------------------------------------------
# A second claim, 8 Gi / 50 % of the same GPU, prepared beside the first (4 Gi / 30 %): both filled
# at once (each at its own quota; each claim's status data within 2 % of NVML's count for its own
# process), then both computing at once (30 and 50 +- 2 % of native: each cap holds beside the other).
UID2=0d5a0000-0000-4000-9000-$(printf '%012d' $$) NAME2= SPEC2=
cat >"$W/api/claims/gs/slice-8g-50.json" <<JSON
{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
 "metadata": {"name": "slice-8g-50", "namespace": "gs", "uid": "$UID2"},
 "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.gpuslice.io"}}]}},
 "status": {"allocation": {"devices": {"results": [{"request": "gpu", "driver": "$DRIVER", "pool": "$NODE",
   "device": "gpu-0", "consumedCapacity": {"memory": "8Gi", "compute": "50"}}]}}}}
JSON
"$PROBE" "$W/plugin/dra.sock" prepare "gs/slice-8g-50/$UID2" >"$OUT/dra-prepare2.json" 2>&1
NAME2=k8s.$DRIVER/claim=$UID2-gpu-0 SPEC2=$W/cdi/$DRIVER-claim-$UID2.json
check "two claims of one GPU: the 8 Gi / 50 % claim prepared beside the 4 Gi / 30 % one ($NAME2)" \
        python3 -c 'import json, sys; a = json.load(open(sys.argv[1])); sys.exit(a != {sys.argv[2]: {"cdi": [sys.argv[3]], "error": ""}})' \
        "$OUT/dra-prepare2.json" "$UID2" "$NAME2"
if [ -n "$SIM" ]; then
        skip "dra: two claims' containers side by side: DRA_ROOT is the simulated GPU"
elif [ "$bins_ok" = 1 ] && [ -s "$SPEC2" ]; then
        sed 's|/cuda_fill 3|/cuda_fill 6|' "$W/base/fill.sh" >"$W/base/fill6.sh"
        mkbundle fill2a '["/bin/sh", "/fill6.sh"]' && mkbundle fill2b '["/bin/sh", "/fill6.sh"]' "$SPEC2" "$NAME2" &&
                mkbundle comp2a '["/compute_shapes", "short", "4"]' && mkbundle comp2b '["/compute_shapes", "short", "4"]' "$SPEC2" "$NAME2"
        check "two claims: four bundles, two of each claim's device" test -s "$W/fill2b/config.json" -a -s "$W/comp2b/config.json"
        # pid_in CGROUP-PATH: the cuda_fill process of that container's cgroup
        pid_in() { local p; for p in $(pgrep -x cuda_fill); do grep -q "$1\$" "/proc/$p/cgroup" 2>/dev/null && echo "$p"; done | head -1; }
        claim_mib_of() { python3 -c 'import json, sys
d = [x.get("data", {}) for x in json.load(open(sys.argv[1])).get("status", {}).get("devices", [])]
print(d[0]["memory"]["usedBytes"] // 1048576 if d and d[0].get("memory", {}).get("usedBytes", 0) > 0 else "")' "$1" 2>/dev/null; }
        for x in a b; do
                id=gs-dra-fill2$x-$$ ids+=("$id")
                timeout 90 "$RUNC" --root "$W/runc-state" run --bundle "$W/fill2$x" "$id" </dev/null >"$OUT/dra-fill2$x.txt" 2>&1 &
                eval "rp_$x=\$!"
        done
        for _ in $(seq 300); do
                grep -q '^filled\|^DONE' "$OUT/dra-fill2a.txt" && grep -q '^filled\|^DONE' "$OUT/dra-fill2b.txt" && break
                sleep 0.1
        done
        pa=$(pid_in "/gs-dra-fill2a-$$") pb=$(pid_in "/gs-dra-fill2b-$$")
        smi_used() { nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits | awk -F', ' -v p="$1" '$1 == p {print $2}'; }
        ua=$(smi_used "$pa") ub=$(smi_used "$pb")
        ca= cb=
        for _ in $(seq 30); do
                ca=$(claim_mib_of "$W/api/claims/gs/slice-4g-30.json") cb=$(claim_mib_of "$W/api/claims/gs/slice-8g-50.json")
                [ -n "$ca" ] && [ -n "$cb" ] && [ "$ca" -ge $((4096 - 41)) ] && [ "$cb" -ge $((8192 - 82)) ] && break
                sleep 0.1
        done
        cp "$W/api/claims/gs/slice-8g-50.json" "$OUT/dra-claim2-status.json" 2>/dev/null
        wait "$rp_a"; rca=$?; wait "$rp_b"; rcb=$?
        cat "$OUT/dra-fill2a.txt" "$OUT/dra-fill2b.txt"
        echo "  side by side: NVML counts ${ua:-?} MiB (pid ${pa:-?}, 4 Gi claim) and ${ub:-?} MiB (pid ${pb:-?}, 8 Gi claim); the claims say ${ca:-?} and ${cb:-?} MiB"
        check "two claims: both containers ran to their end (rc $rca, $rcb)" test "$rca" = 0 -a "$rcb" = 0
        check "two claims: nvidia-smi shows each its own quota (4096: $(kv smi_total "$OUT/dra-fill2a.txt"); 8192: $(kv smi_total "$OUT/dra-fill2b.txt"))" \
                test "$(kv smi_total "$OUT/dra-fill2a.txt")" = 4096 -a "$(kv smi_total "$OUT/dra-fill2b.txt")" = 8192
        check "two claims: each filled to its own quota and was refused there (NVML: ${ua:-?} of 4096, ${ub:-?} of 8192 MiB)" \
                test "${ua:-0}" -ge $((4096 - 41)) -a "${ua:-99999}" -le 4096 -a "${ub:-0}" -ge $((8192 - 82)) -a "${ub:-99999}" -le 8192
        check "two claims: each claim's status data within 2 % of NVML's count for its own process (${ca:-?} ~ ${ua:-?}, ${cb:-?} ~ ${ub:-?} MiB)" \
                awk -v a="${ca:-0}" -v b="${ua:-0}" -v c="${cb:-0}" -v d="${ub:-0}" 'function ab(x) { return x < 0 ? -x : x }
                        BEGIN { exit !(a > 0 && b > 0 && c > 0 && d > 0 && ab(a - b) <= 0.02 * b && ab(c - d) <= 0.02 * d) }'
        "$CARRY/compute_shapes" short 3 >"$OUT/dra-native3.txt" 2>&1
        for x in a b; do
                id=gs-dra-comp2$x-$$ ids+=("$id")
                timeout 90 "$RUNC" --root "$W/runc-state" run --bundle "$W/comp2$x" "$id" </dev/null >"$OUT/dra-comp2$x.txt" 2>&1 &
                eval "rp_$x=\$!"
        done
        # both containers' arbiter records in the GPU's directory (the hook makes them: they take
        # turns; a CDI container's slice named no GPU before, and had none: 13.4 + 36.5 %)
        arb_both=
        for _ in $(seq 30); do
                for d in /run/gpuslice/arbiter/gpuslice-gpu-*/; do
                        [ -e "$d/gs-dra-comp2a-$$" ] && [ -e "$d/gs-dra-comp2b-$$" ] && arb_both=$d
                done
                [ -n "$arb_both" ] && break
                sleep 0.1
        done
        ls -la /run/gpuslice/arbiter/*/ >"$OUT/dra-arbiter.txt" 2>&1
        wait "$rp_a"; rca=$?; wait "$rp_b"; rcb=$?
        check "two claims: both containers' records in the GPU's arbiter directory (${arb_both:-none}: they take turns)" test -n "$arb_both"
        "$CARRY/compute_shapes" short 3 >"$OUT/dra-native4.txt" 2>&1
        n3=$(rate "$OUT/dra-native3.txt") n4=$(rate "$OUT/dra-native4.txt") ra=$(rate "$OUT/dra-comp2a.txt") rb=$(rate "$OUT/dra-comp2b.txt")
        pa=$(awk -v a="${ra:-0}" -v n1="${n3:-0}" -v n2="${n4:-0}" 'BEGIN { n = (n1 + n2) / 2; printf "%.1f", (n > 0 ? 100 * a / n : -1) }')
        pb=$(awk -v a="${rb:-0}" -v n1="${n3:-0}" -v n2="${n4:-0}" 'BEGIN { n = (n1 + n2) / 2; printf "%.1f", (n > 0 ? 100 * a / n : -1) }')
        echo "  side by side: the 30 % claim's container $ra, the 50 % claim's $rb, native $n3 / $n4: $pa % and $pb % of native"
        echo "  the claims' status data after: $(python3 -c 'import json, sys; print(json.dumps([[x.get("data") for x in json.load(open(f))["status"]["devices"]] for f in sys.argv[1:]]))' "$W/api/claims/gs/slice-4g-30.json" "$W/api/claims/gs/slice-8g-50.json" 2>&1)"
        check "two claims: both compute containers ran (rc $rca, $rcb)" test "$rca" = 0 -a "$rcb" = 0 -a -n "$ra" -a -n "$rb"
        check "two claims at once: 30 +- 2 % ($pa %) and 50 +- 2 % ($pb %) of native" \
                awk -v a="$pa" -v b="$pb" 'BEGIN { exit !(a >= 28 && a <= 32 && b >= 48 && b <= 52) }'
fi
"$PROBE" "$W/plugin/dra.sock" unprepare "gs/slice-8g-50/$UID2" >"$OUT/dra-unprepare2.json" 2>&1
check "two claims: the second unprepared (its spec removed)" test ! -e "$SPEC2" -a -n "$(grep -F '"error":""' "$OUT/dra-unprepare2.json")"

# --- unprepare, stop ---------------------------------------------------------------------------------
"$PROBE" "$W/plugin/dra.sock" unprepare "gs/slice-4g-30/$UID_" >"$OUT/dra-unprepare.json" 2>&1
check "NodeUnprepareResources: no error, the claim's spec removed" test ! -e "$SPEC" -a -n "$(grep -F '"error":""' "$OUT/dra-unprepare.json")"
kill -TERM "$DRA_PID"
wait_for 10 eval '! kill -0 "$DRA_PID" 2>/dev/null'
wait "$DRA_PID"; rc=$?
DRA_PID=
check "SIGTERM: the plugin stops (rc $rc) and keeps its ResourceSlice (issue 33: the node stays schedulable)" test "$rc" = 0 -a -s "$SLICE"
finish
