#!/usr/bin/env bash
# `gpuslice metrics` against two slices on a real GPU (issue 10):
#   A: `gpuslice exec --memory 4Gi` running cuda_fill (fills its quota, holds it);
#   B: `gpuslice exec --compute 30` running compute_shapes short (a compute-bound stream).
# While both run, one scrape (--once) is compared with the truth: A's memory with nvidia-smi's
# per-process count (within 1 %), B's compute used ratio with the share B measured for itself
# (its rate / the native rate, within 2 points).
#   tests/gpu/metrics_check.sh BUILD OUTDIR    (GPU host; PASS/FAIL lines, then "N passed, N failed,
#                                               N skipped" (tests/gpu/lib.sh); exits 1 on a FAIL)
set -u
BUILD=${1:-build} OUT=${2:-$(mktemp -d)}
cd "$(dirname "$0")/../.."
. tests/gpu/lib.sh
GS=$PWD/$BUILD/gpuslice CARRY=$PWD/$BUILD/gpu-carry
[ -d "$BUILD/runtime-libs" ] && export LD_LIBRARY_PATH=$PWD/$BUILD/runtime-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
W=$(mktemp -d /tmp/gs-metrics.XXXXXX)
cleanup() { kill $(jobs -p) 2>/dev/null; rm -rf "$W"; }
finish_trap cleanup
rate() { sed -n 's/.* rate=\([0-9.]*\).*/\1/p' "$1" | tail -1; }

"$CARRY/compute_shapes" short 3 >"$W/native1.txt" 2>&1
"$GS" exec --memory 4Gi --region "$W/a.region" -- "$CARRY/cuda_fill" 14 >"$OUT/metrics-a.txt" 2>&1 &
"$GS" exec --compute 30 --region "$W/b.region" -- "$CARRY/compute_shapes" short 12 >"$OUT/metrics-b.txt" 2>&1 &
for _ in $(seq 100); do grep -q '^filled' "$OUT/metrics-a.txt" && break; sleep 0.1; done
sleep 3 # B well into its run
"$GS" metrics --once --no-hami --window 2 --region "$W/a.region" --region "$W/b.region" >"$OUT/metrics-scrape.txt" 2>"$OUT/metrics-scrape.err"
echo "scrape rc=$?"
nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits >"$OUT/metrics-smi.txt"
apid=$(pgrep -x cuda_fill | head -1)
wait
"$CARRY/compute_shapes" short 3 >"$W/native2.txt" 2>&1
grep -E '^gpuslice_slice_(memory_used|compute_used|compute_limit|processes)' "$OUT/metrics-scrape.txt"
cat "$OUT/metrics-smi.txt"

# A: the slice's memory used vs nvidia-smi's count for its process (cuda_fill's pid)
mem_a=$(awk -v r="$W/a.region" 'index($0, "gpuslice_slice_memory_used_bytes{") == 1 && index($0, r) { print $NF }' "$OUT/metrics-scrape.txt" | head -1)
smi_a=$(awk -F', ' -v p="${apid:-none}" '$1 == p { print $2 }' "$OUT/metrics-smi.txt")
echo "A: metrics ${mem_a:-?} bytes, nvidia-smi ${smi_a:-?} MiB (pid ${apid:-?})"
check "slice A's memory in /metrics matches nvidia-smi's per-process count within 1 %" \
        awk -v m="${mem_a:-0}" -v s="${smi_a:-0}" 'BEGIN { mm = m / 1048576; exit !(s > 0 && mm >= s * 0.99 && mm <= s * 1.01) }'
# B: compute used vs the share B measured
used_b=$(awk -v r="$W/b.region" 'index($0, "gpuslice_slice_compute_used_ratio{") == 1 && index($0, r) { print $NF }' "$OUT/metrics-scrape.txt" | head -1)
share_b=$(awk -v b="$(rate "$OUT/metrics-b.txt")" -v n1="$(rate "$W/native1.txt")" -v n2="$(rate "$W/native2.txt")" \
        'BEGIN { n = (n1 + n2) / 2; if (n > 0) printf "%.4f", b / n }')
echo "B: compute used ${used_b:-?} in /metrics, measured share ${share_b:-?}"
check "slice B's compute used in /metrics matches its measured share within 2 points" \
        awk -v u="${used_b:--1}" -v s="${share_b:--9}" 'BEGIN { d = u - s; if (d < 0) d = -d; exit !(u >= 0 && d <= 0.02) }'
finish
