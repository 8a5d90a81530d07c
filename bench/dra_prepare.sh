#!/usr/bin/env bash
# gpuslice dra-plugin's speed (issue 23), against the fake API server (tests/k8s/fake_apiserver.py,
# HTTPS on localhost, no schema check) and the simulated GPU unless a driver root is given:
#   1. NodePrepareResources of a slice claim (4 Gi and 30 %): the median of 20, each a new claim
#      read from the API server and a CDI spec written (then unprepared: nothing kept between
#      calls), timed by dra-probe (C, one connection per call); the baseline in the same run: the
#      median of 20 prepares answered from the checkpoint (the same gRPC round trip, no API call,
#      no spec) -> what preparing itself costs;
#      the plugin's own log line breaks each prepare down (API read, spec built, spec written,
#      checkpoint written): their medians;
#   2. ResourceSlice publication for 8 GPUs x 7 MIG devices (56 devices) in one request: the
#      plugin's own timing line (GET + POST to the API server, the object's size).
#   bench/dra_prepare.sh [BUILD [DRIVER_ROOT]]     (as root; prints results, exits 1 on a failure)
set -euo pipefail
BUILD=${1:-build} ROOT=${2:-}
cd "$(dirname "$0")/.."
GS=$PWD/$BUILD/gpuslice PROBE=$PWD/$BUILD/tests/dra-probe PY=/usr/bin/python3
[ -x "$GS" ] && [ -x "$PROBE" ] || { echo "bench: build first (meson with -Dtests=true: dra-probe)"; exit 1; }
W=$(mktemp -d /tmp/gs-bench-dra.XXXXXX)
chmod 755 "$W"
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$W"' EXIT
mkdir -p "$W/api/claims/b" "$W/reg"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=localhost \
        -addext "subjectAltName=IP:127.0.0.1" -keyout "$W/key.pem" -out "$W/cert.pem" 2>/dev/null
"$PY" tests/k8s/fake_apiserver.py --cert "$W/cert.pem" --key "$W/key.pem" --token t --state "$W/api" --schema none \
        --port-file "$W/port" 2>"$W/api.err" &
pids+=($!)
for _ in $(seq 100); do [ -s "$W/port" ] && break; sleep 0.1; done
printf 'apiVersion: v1\nkind: Config\ncurrent-context: b\nclusters:\n- name: b\n  cluster: {server: "https://127.0.0.1:%s", certificate-authority: cert.pem}\ncontexts:\n- name: b\n  context: {cluster: b, user: b}\nusers:\n- name: b\n  user: {token: t}\n' \
        "$(cat "$W/port")" >"$W/kubeconfig"
plugin() { # NAME ROOT: the plugin on that root, until its ResourceSlice is published
        printf '[driver]\nroot = "%s"\n' "$2" >"$W/$1.toml"
        "$GS" dra-plugin -c "$W/$1.toml" --driver-name "$1.bench.gpuslice.io" --kubeconfig "$W/kubeconfig" --node n \
                --cdi-dir "$W/cdi" --plugin-dir "$W/$1" --registry-dir "$W/reg" 2>"$W/$1.log" &
        pids+=($!)
        for _ in $(seq 300); do grep -q "published ResourceSlice" "$W/$1.log" && return 0; sleep 0.1; done
        echo "bench: the plugin did not publish: $(tail -3 "$W/$1.log")"; exit 1
}
claim() { # NAME UID DRIVER
        cat >"$W/api/claims/b/$1.json" <<JSON
{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "$1", "namespace": "b", "uid": "$2"},
 "status": {"allocation": {"devices": {"results": [{"request": "gpu", "driver": "$3", "pool": "n", "device": "gpu-0",
  "consumedCapacity": {"memory": "4Gi", "compute": "30"}}]}}}}
JSON
}

if [ -z "$ROOT" ]; then
        tests/fakegpu/mkroot.sh --build "$BUILD" tests/fakegpu/configs/2gpu.conf "$W/r2" >/dev/null
        ROOT=$W/r2
        echo "== no driver root given: the simulated GPU (not comparable with GPU-host numbers)"
fi
plugin s "$ROOT"
claim slice 0b000000-0000-4000-8000-000000000001 s.bench.gpuslice.io
echo "== NodePrepareResources of a 4 Gi / 30 % slice claim ($(date -u +%F), $(nproc) CPUs)"
"$PROBE" "$W/s/dra.sock" time 20 b/slice/0b000000-0000-4000-8000-000000000001 | tail -1 | sed 's/^/prepare (API read + CDI spec written, unprepared after each): /'
"$PROBE" "$W/s/dra.sock" prepare b/slice/0b000000-0000-4000-8000-000000000001 >/dev/null
for i in $(seq 20); do
        t0=$(date +%s%N)
        "$PROBE" "$W/s/dra.sock" prepare b/slice/0b000000-0000-4000-8000-000000000001 >/dev/null
        echo $(( ($(date +%s%N) - t0) / 1000 ))
done | sort -n | awk '{a[NR]=$1} END {printf "baseline, prepared already (checkpoint, the same round trip; dra-probe started each time): median %.2f ms over %d\n", (NR%2?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2)/1000, NR}'
grep -o "(API .*)" "$W/s.log" | head -20 | awk '{api[NR]=$2; b[NR]=$6; w[NR]=$8; c[NR]=$10} function med(a,  n,i,j,t){n=NR; for(i=1;i<=n;i++) for(j=i+1;j<=n;j++) if (a[j]+0<a[i]+0){t=a[i];a[i]=a[j];a[j]=t}; return (n%2?a[(n+1)/2]:(a[n/2]+a[n/2+1])/2)} END {printf "  in the plugin, medians (ms): API read %.1f, spec built %.1f, spec written %.1f, checkpoint written %.1f\n", med(api), med(b), med(w), med(c)}'
leftover=$(find "$W/cdi" -name 's.bench.gpuslice.io-claim-*' | wc -l)
echo "specs left: $leftover (the one prepared for the baseline)"

# 8 GPUs x 7 MIG devices
{
        echo "driver 580.159.04"; echo "cuda 13.0"
        for g in $(seq 0 7); do
                printf '\ngpu %d\n  name NVIDIA H100 80GB HBM3\n  uuid GPU-%08d-0000-4000-8000-000000000000\n  bus 00000000:%02X:00.0\n' "$g" "$g" $((16 + g))
                printf '  minor %d\n  memory 81559MiB\n  reserved 517MiB\n  arch 9.0\n  brand Nvidia\n  pci_device_id 0x233010de\n  mig on\n  mig_max 7\n' "$g"
                for m in $(seq 0 6); do
                        printf '  mig_device gi=%d ci=0 profile=1g.10gb memory=9856MiB uuid=MIG-%08d-%04d-4000-8000-000000000000\n' $((7 + m)) "$g" "$m"
                done
        done
} >"$W/8x7.conf"
tests/fakegpu/mkroot.sh --build "$BUILD" "$W/8x7.conf" "$W/r8" >/dev/null
plugin m "$W/r8"
echo "== ResourceSlice publication, 8 GPUs x 7 MIG devices, one request"
grep -o "published ResourceSlice .*" "$W/m.log" | head -1
