#!/usr/bin/env bash
# The NVIDIA driver's XID line on the real GPU, read as the DRA plugin reads it (issue 33, item 4:
# an application XID marks its process's share): a kernel that writes to an illegal address
# (tests/gpu/mps_fault.cu, no MPS) gives XID 31 (or 13 on some GPUs) in /dev/kmsg, and
# src/driver/xidlog.c (BUILD/tests/gpu/xidlog-probe) reads it from the kernel's records with the
# faulting process's pid and name and the GPU's PCI address; the fake libcuda's line
# (tests/fakegpu/fake_cuda_init.c) is written after that format.
#   tests/gpu/xid_kmsg_check.sh [BUILD]   (on the GPU host, as root; PASS/FAIL/SKIP lines, then the count)
set -u
cd "$(dirname "$0")/../.."
. tests/gpu/lib.sh
BUILD=${1:-build}
PROBE=$BUILD/tests/gpu/xidlog-probe
export PATH=$PATH:/usr/local/cuda/bin
command -v nvidia-smi >/dev/null 2>&1 || { skip "no NVIDIA GPU"; finish; }
R=$(mktemp -d /tmp/gs-xidkmsg.XXXXXX)
cleanup() { rm -rf "$R"; }
finish_trap cleanup
check "$PROBE is built (-Dtests=true)" test -x "$PROBE" || finish
check "nvcc builds tests/gpu/mps_fault.cu" nvcc -O2 -o "$R/xid-fault" tests/gpu/mps_fault.cu || finish
"$PROBE" 15 >"$R/probe.out" 2>&1 &
probe=$!
for _ in $(seq 50); do grep -q '^ready$' "$R/probe.out" && break; sleep 0.1; done
check "xidlog-probe reads /dev/kmsg" grep -q '^ready$' "$R/probe.out" || { cat "$R/probe.out"; finish; }
CUDA_VISIBLE_DEVICES=0 "$R/xid-fault" fault 2 >"$R/fault.out" 2>&1 &
fpid=$!
wait "$fpid"
sed 's/^/    # /' "$R/fault.out"
for _ in $(seq 50); do grep -q "^xid=" "$R/probe.out" && break; sleep 0.2; done
kill "$probe" 2>/dev/null; wait "$probe" 2>/dev/null
sed 's/^/    # /' "$R/probe.out"
IFS=':.' read -r dom b d _ < <(nvidia-smi -i 0 --query-gpu=pci.bus_id --format=csv,noheader) # 00000000:3B:00.0
bus=$(printf '%04x:%s:%s' $((16#$dom % 65536)) "${b,,}" "${d,,}")
line=$(grep -E "^xid=(31|13|43) " "$R/probe.out" | head -1)
check "an application XID read from the kernel's records (the driver's line parsed): $line" test -n "$line"
check "... with the faulting process's pid ($fpid) and name (xid-fault)" \
        grep -qE "^xid=(31|13|43) pci=[0-9a-f:]+ pid=$fpid name=xid-fault " "$R/probe.out"
check "... and GPU 0's PCI address ($bus)" grep -qE "^xid=(31|13|43) pci=$bus " "$R/probe.out"
finish
