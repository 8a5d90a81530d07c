#!/usr/bin/env bash
# What the real MPS control daemon does under `gpuslice mps` (the simulated one in tests/fakegpu
# copies it): the files it makes, its environment, start/stop/status, and what `quit` leaves.
#   tests/gpu/mps_check.sh [BUILD_DIR]   (on the GPU host, as root; stops what it starts)
# A record of facts (the -x trace); what must hold for it to mean anything is checked: PASS/FAIL
# lines, then "N passed, N failed, N skipped" (tests/gpu/lib.sh); exit 1 on a FAIL.
set -u
BUILD=${1:-build}
cd "$(dirname "$0")/../.."
. tests/gpu/lib.sh
GS=$PWD/$BUILD/gpuslice R=$(mktemp -d /tmp/gs-mps.XXXXXX)
[ -d "$BUILD/runtime-libs" ] && export LD_LIBRARY_PATH=$PWD/$BUILD/runtime-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
set -x
command -v nvidia-cuda-mps-control
"$GS" list -b | grep mps
"$GS" mps start --mps-root "$R"; rc=$?; echo "rc=$rc"
check "gpuslice mps start (exit $rc)" test "$rc" = 0
P=$(ls -d "$R"/*/pipe | head -1)
ls -la "$P" "$R"/*/log
cat "$P/nvidia-cuda-mps-control.pid"; echo
pid=$(cat "$P/nvidia-cuda-mps-control.pid")
cat "/proc/$pid/comm"; tr '\0' '\n' <"/proc/$pid/environ"
check "its pid file names a running nvidia-cuda-mps-control (pid ${pid:-none})" grep -q '^nvidia-cuda-mps' "/proc/${pid:-0}/comm"
"$GS" mps start --mps-root "$R"; echo "rc=$?"
echo "start_server -uid 0" | CUDA_MPS_PIPE_DIRECTORY=$P nvidia-cuda-mps-control; echo "rc=$?"
sleep 2
"$GS" mps status --mps-root "$R"; "$GS" mps status --json --mps-root "$R"
echo get_server_list | CUDA_MPS_PIPE_DIRECTORY=$P nvidia-cuda-mps-control
"$GS" mps stop --mps-root "$R"; rc=$?; echo "rc=$rc"
check "gpuslice mps stop (exit $rc)" test "$rc" = 0
"$GS" mps stop --mps-root "$R"; echo "rc=$?"
ls -la "$P" "$R"/*/log
echo get_server_list | CUDA_MPS_PIPE_DIRECTORY=$P nvidia-cuda-mps-control >"$R/o" 2>"$R/e"; echo "rc=$?"
cat "$R/o"; echo ---; cat "$R/e"
"$GS" mps status --mps-root "$R"; echo "rc=$?"
cat "$R"/*/log/control.log 2>/dev/null | tail -20
rm -rf "$R"
finish
