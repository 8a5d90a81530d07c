#!/usr/bin/env bash
# Clocks and power while a workload runs natively and under a compute cap (does a GPU that is
# idle part of the time run faster while busy?):  bench/clocks.sh BUILD SHAPE L [SECONDS=4]
# SHAPE: a bench/compute_shapes.cu shape or torch. Prints, per run, the rate and the mean SM
# clock (MHz) and power (W) over the samples taken while the GPU was busy (utilization > 0).
set -uo pipefail
BUILD=$1 SHAPE=$2 L=$3 SECS=${4:-4}
cd "$(dirname "$0")/.."
CS=$PWD/$BUILD/gpu-carry/compute_shapes LIB=$PWD/$BUILD/libgpuslice-vgpu.so
W=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$W"' EXIT
one() { # LABEL ENV...
        local label=$1; shift
        nvidia-smi --query-gpu=clocks.sm,power.draw,utilization.gpu --format=csv,noheader,nounits -lms 100 >"$W/s" &
        local smi=$!
        if [ "$SHAPE" = torch ]; then env "$@" python3 bench/compute_torch.py "$SECS" >"$W/o"; else env "$@" "$CS" "$SHAPE" "$SECS" >"$W/o"; fi
        kill $smi; wait $smi 2>/dev/null
        awk -F', ' -v l="$label" -v r="$(sed -n 's/.*rate=\([0-9.]*\).*/\1/p' "$W/o")" '
                $3 > 0 { c += $1; p += $2; n++ } END { printf "%-8s rate %s  busy samples %d  sm clock %.0f MHz  power %.0f W\n", l, r, n, c / n, p / n }' "$W/s"
}
one native
one "L=$L" LD_PRELOAD="$LIB" GPUSLICE_COMPUTE_LIMIT="$L" GPUSLICE_REGION="$W/r"
one native
one "L=$L" LD_PRELOAD="$LIB" GPUSLICE_COMPUTE_LIMIT="$L" GPUSLICE_REGION="$W/r2"
