#!/usr/bin/env bash
# The fake libcuda must answer the edge-case probe as the real driver did on the GPU host
# (tests/gpu/cuda-probe.real.txt, driver 580.159.04). Lines starting with '~' are measurements
# of that GPU (sizes, usage deltas) and are not compared. Where the real driver crashed
# ("crash": NULL out-pointers it does not check), the fake must answer an error code instead.
set -uo pipefail
src=$1 build=$2
real=$src/../gpu/cuda-probe.real.txt
if [ ! -s "$real" ]; then echo "SKIP: no recorded real-driver probe yet ($real)"; exit 77; fi
state=$(mktemp /tmp/fakegpu-cuda-probe.XXXXXX)
trap 'rm -f "$state" "$state.fake"' EXIT
FAKEGPU_CONFIG=$src/configs/1gpu.conf FAKEGPU_STATE=$state LD_LIBRARY_PATH=$build "$build/cuda-probe" >"$state.fake" 2>&1 ||
        { echo "probe failed:"; cat "$state.fake"; exit 1; }
# real "crash" + fake non-zero code -> rewrite the fake line to "crash" before diffing
normalized=$(awk 'NR == FNR { if ($2 == "crash") crash[$1] = 1; next }
        !/^~/ { if (($1 in crash) && $2 ~ /^[0-9]+$/ && $2 != "0") { printf "%-48s crash\n", $1; next } print }' \
        "$real" "$state.fake")
if diff -u <(grep -v '^~' "$real") <(echo "$normalized"); then
        echo "fake libcuda answers the probe as the real driver"
else
        echo "FAIL: the fake libcuda differs from the real driver (lines above: - real, + fake)"; exit 1
fi
