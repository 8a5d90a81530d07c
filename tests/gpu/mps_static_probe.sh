#!/usr/bin/env bash
# Does this host's MPS offer static SM partitioning (nvidia-cuda-mps-control -S, CUDA 13.1's MPS)?
# Starts a private control daemon with -S, asks it for its partitions and help, stops it. Prints
# what it saw; exits 0 when the daemon took -S and answered an sm_partition query, 1 otherwise.
set -uo pipefail
d=$(mktemp -d)
export CUDA_MPS_PIPE_DIRECTORY=$d/pipe CUDA_MPS_LOG_DIRECTORY=$d/log
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
echo "== nvidia-cuda-mps-control -v"; nvidia-cuda-mps-control -v 2>&1 | head -3
echo "== -S -d"; out=$(timeout 10 nvidia-cuda-mps-control -S -d 2>&1); rc=$?; echo "$out" | head -5
sleep 1
ok=1 # supported: the daemon started with -S and answers a partition query with something else than an error
[ "$rc" = 0 ] && ! grep -qi "unrecognized" <<<"$out" && ok=0
for q in "lspart" "sm_partition list"; do
        echo "== $q"; out=$(echo "$q" | timeout 10 nvidia-cuda-mps-control 2>&1 | head -20); echo "$out"
        grep -qi "cannot find\|unknown\|invalid\|not supported\|error" <<<"$out" && ok=1
done
echo quit | timeout 10 nvidia-cuda-mps-control >/dev/null 2>&1
sleep 1
echo "== control.log"; tail -n 20 "$CUDA_MPS_LOG_DIRECTORY/control.log" 2>/dev/null
rm -rf "$d"
exit $ok
