#!/usr/bin/env bash
# The fake NVML must answer the edge-case probe exactly as the real driver did on the GPU host
# (recorded in tests/gpu/nvml-probe.real.txt by tests/gpu/run.sh).
set -uo pipefail
src=$1 build=$2
real=$src/../gpu/nvml-probe.real.txt
if [ ! -s "$real" ]; then echo "SKIP: no recorded real-driver probe yet ($real)"; exit 77; fi
out=$(FAKEGPU_CONFIG=$src/configs/1gpu.conf LD_LIBRARY_PATH=$build "$build/nvml-probe") || { echo "probe failed"; exit 1; }
if diff -u "$real" <(echo "$out"); then echo "fake NVML answers the probe as the real driver"; else
        echo "FAIL: the fake NVML differs from the real driver (lines above: - real, + fake)"; exit 1; fi
