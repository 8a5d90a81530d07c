#!/usr/bin/env bash
# kill -9 storm, full size, on the simulated GPU (no GPU needed):
#   bench/kill_storm.sh [BUILD=build] [KILLS=10000] [WORKERS=6]
# 10 000 kill -9 into one slice (8 GiB, compute 50 % cap) whose processes allocate, free and
# launch, every 100th kill taking all of them and the region (its next first process killed while
# it creates it), another slice beside it on the GPU; then the checks of tests/vgpu/kill_storm.sh
# (no deadlock, no usage left, the quota to the byte, no dead turn past the lease). CI runs the
# same with 300 kills (meson test vgpu_kills). Prints the check lines and "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
SRC=$PWD BUILD=$PWD/${1:-build} KILLS=${2:-10000} WORKERS=${3:-6}
TMP=$(mktemp -d /tmp/gs-kill-storm.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"' EXIT
unset LD_LIBRARY_PATH LD_PRELOAD
. tests/lib/check.sh
echo "== kill -9 storm: $KILLS kills, $WORKERS workers ($(date -u +%F), $(nproc) cores, simulated GPU)"
start=$(date +%s)
. tests/vgpu/kill_storm.sh 2>/dev/null
echo "wall $(( $(date +%s) - start )) s"
echo "$nok passed, $nfail failed"
[ "$nfail" = 0 ]
