#!/usr/bin/env bash
# Benchmarks. On the GPU host (bash tests/gpu/run.sh runs this too):
#   median wall time of `gpuslice list` and `gpuslice info` over 20 runs, interleaved with
#   `nvidia-smi -L` (the same NVML initialisation, done by NVIDIA's own tool) as the baseline;
#   then bench/metrics.sh (one scrape of `gpuslice metrics` with 100 slices, and 50 scrapes/s).
set -euo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/.."
T=$BUILD/bench/timecmd
GS=$BUILD/gpuslice
[ -x "$T" ] || { echo "bench: build first (make build)"; exit 1; }
if [ -e /dev/nvidiactl ] && command -v nvidia-smi >/dev/null; then
        echo "== gpuslice list / info vs nvidia-smi -L, 20 interleaved rounds ($(date -u +%F), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1))"
        "$T" -n 20 -w 3 -- nvidia-smi -L -- "$GS" list -- env GPUSLICE_DETECT=nvml "$GS" list -- "$GS" info -- "$GS" info --json
else
        echo "== no NVIDIA GPU: timing against the simulated GPU (not comparable with GPU-host numbers)"
        root=$(mktemp -d)
        tests/fakegpu/mkroot.sh --build "$BUILD" tests/fakegpu/configs/8gpu-mig.conf "$root/r" >/dev/null
        "$T" -n 20 -w 3 -- "$GS" --root "$root/r" list -- "$GS" --root "$root/r" info
        rm -rf "$root"
fi
# `gpuslice metrics` with 100 slices' regions (no GPU needed): bench/metrics.sh
if command -v curl >/dev/null && [ -x "$BUILD/tests/region_tool" ]; then
        echo
        bash bench/metrics.sh "$BUILD"
fi
