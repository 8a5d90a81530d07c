#!/usr/bin/env bash
# Compute-share harness, native runs (the baseline the limiter will be measured against):
#   bench/compute.sh BUILD [SECONDS=3]
# Runs every workload shape of bench/compute_shapes.cu (short, long, tiny, graph, coop, and
# green contexts of 8, 16, 32, 64, 104, 128 SMs) and bench/compute_torch.py, each for SECONDS
# after its warm-up, twice: round A in this order, round B in the reverse order (an A/A control
# that shows the noise floor). Prints each run's line as it comes, then a table: both rates,
# B/A, and for short and green the fraction of native `short` throughput beside the fraction of
# SMs. Exits 1 if any run failed (non-zero exit, no result line: a CUDA error or a wrong result
# in the shape's own check), 77 where there is no NVIDIA GPU.
# Needs BUILD/gpu-carry/compute_shapes (tests/gpu/prepare.sh BUILD builds it); without it, and
# with nvcc at $NVCC (default /usr/local/cuda/bin/nvcc), it is built into a temp dir first.
# CS_TORCH=0 leaves the PyTorch loop out; CS_ONLY="short green32 ..." runs only those labels;
# PYTHON picks the interpreter (default python3); CS_WARMUP / CS_ITERS pass through.
set -uo pipefail
BUILD=${1:-build} SECS=${2:-3}
cd "$(dirname "$0")/.."
if [ ! -e /dev/nvidiactl ] || ! command -v nvidia-smi >/dev/null 2>&1; then
        echo "SKIP: no NVIDIA GPU here (no /dev/nvidiactl or nvidia-smi): compute shapes not run"
        exit 77
fi
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
CS=$PWD/$BUILD/gpu-carry/compute_shapes
if [ ! -x "$CS" ]; then
        NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
        [ -x "$NVCC" ] || { echo "compute: $CS missing (tests/gpu/prepare.sh $BUILD builds it) and no nvcc"; exit 1; }
        echo "compute: $CS missing: building it with $NVCC"
        "$NVCC" -O2 -arch=sm_90 -o "$W/compute_shapes" bench/compute_shapes.cu || { echo "compute: nvcc failed"; exit 1; }
        CS=$W/compute_shapes
fi
PY=${PYTHON:-python3}

LABELS=(short long tiny graph coop green8 green16 green32 green64 green104 green128 torch)
sel=()
for l in "${LABELS[@]}"; do
        [ "$l" = torch ] && [ "${CS_TORCH:-1}" != 1 ] && continue
        [ -n "${CS_ONLY:-}" ] && [[ " $CS_ONLY " != *" $l "* ]] && continue
        sel+=("$l")
done
[ ${#sel[@]} -gt 0 ] || { echo "compute: no shape selected"; exit 1; }

fails=0
one() { # LABEL ROUND: run it, append "LABEL ROUND shape=... rate=..." to $W/data
        local l=$1 r=$2 rc line t0 t1
        t0=$(date +%s.%N)
        case $l in
        torch) "$PY" bench/compute_torch.py "$SECS" >"$W/out" 2>"$W/err" ;;
        green*) "$CS" green "$SECS" "${l#green}" >"$W/out" 2>"$W/err" ;;
        *) "$CS" "$l" "$SECS" >"$W/out" 2>"$W/err" ;;
        esac
        rc=$?
        t1=$(date +%s.%N)
        line=$(grep '^shape=' "$W/out" | tail -n 1)
        if [ "$rc" -ne 0 ] || [ -z "$line" ]; then
                fails=$((fails + 1))
                echo "FAIL $l (round $r): exit $rc, no result line or a failed check; its stderr ends:"
                tail -n 8 "$W/err" | sed 's/^/    /'
                return
        fi
        echo "$l $r $line" >>"$W/data"
        grep '^compute_shapes: \(device SM resource\|coop grid\)' "$W/err" >>"$W/notes"
        printf '  %-9s %s  %s  (%.1f s)\n' "$l" "$r" "$line" "$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')"
}

start=$(date +%s)
echo "== compute shapes, native ($(date -u +%F), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1)), ${SECS} s each, rounds A and B"
for l in "${sel[@]}"; do one "$l" A; done
for ((i = ${#sel[@]} - 1; i >= 0; i--)); do one "${sel[i]}" B; done
[ -s "$W/notes" ] && sort -u "$W/notes" | sed 's/^compute_shapes: /  note: /'

touch "$W/data"
awk -v order="${sel[*]}" '
function kv(s, key,   n, i, f, p) { n = split(s, f, " "); for (i = 1; i <= n; i++) { p = index(f[i], "="); if (substr(f[i], 1, p - 1) == key) return substr(f[i], p + 1) } return "" }
{
        l = $1; r = $2
        rate[l, r] = kv($0, "rate") + 0; kms[l, r] = kv($0, "kernel_ms"); sms[l] = kv($0, "sms")
}
END {
        n = split(order, L, " ")
        base = (("short", "A") in rate && ("short", "B") in rate) ? (rate["short", "A"] + rate["short", "B"]) / 2 : 0
        allsms = sms["short"]
        printf "\n%-9s %-9s %5s %12s %12s %8s %10s %10s %9s\n", "shape", "unit", "sms", "rate A", "rate B", "B/A", "kernel_ms", "of native", "SM share"
        worst = 0; pairs = 0
        for (i = 1; i <= n; i++) {
                l = L[i]
                if (!((l, "A") in rate) && !((l, "B") in rate)) { printf "%-9s (no result)\n", l; continue }
                ha = ((l, "A") in rate); hb = ((l, "B") in rate); a = rate[l, ha ? "A" : "B"]; b = rate[l, hb ? "B" : "A"]
                unit = l == "torch" ? "steps/s" : l == "coop" ? "launch/s" : "kernel/s"
                ratio = "-"
                if (ha && hb && a > 0) { ratio = sprintf("%.4f", b / a); d = b / a - 1; if (d < 0) d = -d; if (d > worst) worst = d; pairs++ }
                k = kms[l, ha ? "A" : "B"]
                frac = "-"; share = "-"
                if ((l == "short" || l ~ /^green/) && base > 0 && ha && hb) {
                        frac = sprintf("%.1f %%", 100 * (a + b) / 2 / base)
                        if (allsms > 0 && sms[l] != "") share = sprintf("%.1f %%", 100 * sms[l] / allsms)
                }
                printf "%-9s %-9s %5s %12s %12s %8s %10s %10s %9s\n", l, unit, (l == "torch" ? "-" : sms[l]), (ha ? sprintf("%.2f", a) : "-"), (hb ? sprintf("%.2f", b) : "-"), ratio, (l == "torch" ? "-" : k), frac, share
        }
        if (pairs) printf "A/A control: largest |B/A - 1| = %.2f %% over %d shapes\n", 100 * worst, pairs
}' "$W/data"
echo "runs failed: $fails; total $(($(date +%s) - start)) s"
[ "$fails" -eq 0 ]
