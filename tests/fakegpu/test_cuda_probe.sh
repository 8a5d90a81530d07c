#!/usr/bin/env bash
# The fake libcuda must answer the edge-case probe as the real driver did on the GPU host
# (tests/gpu/cuda-probe.real.txt, driver 580.159.04). Lines starting with '~' are measurements
# of that GPU (sizes, usage deltas) and are not compared.
set -uo pipefail
src=$1 build=$2
real=$src/../gpu/cuda-probe.real.txt
if [ ! -s "$real" ]; then echo "SKIP: no recorded real-driver probe yet ($real)"; exit 77; fi
state=$(mktemp /tmp/fakegpu-cuda-probe.XXXXXX)
trap 'rm -f "$state"' EXIT
out=$(FAKEGPU_CONFIG=$src/configs/1gpu.conf FAKEGPU_STATE=$state LD_LIBRARY_PATH=$build "$build/cuda-probe") ||
        { echo "probe failed: $out"; exit 1; }
if diff -u <(grep -v '^~' "$real") <(echo "$out" | grep -v '^~'); then
        echo "fake libcuda answers the probe as the real driver"
else
        echo "FAIL: the fake libcuda differs from the real driver (lines above: - real, + fake)"; exit 1
fi
