#!/usr/bin/env bash
# Two GPUs (issue 25), on the GPU host as root:  tests/gpu/multigpu_check.sh [BUILD_DIR]
# (OUT=DIR keeps the outputs). With fewer than two GPUs it prints one SKIP line and exits 77.
# PASS/FAIL/SKIP lines, then "N passed, N failed, N skipped" (tests/gpu/lib.sh); exit 1 on a FAIL.
#   1. a slice of GPU 1 only (`gpuslice exec --device 1 --memory 4Gi`): CUDA (a literal CUdevice
#      0, and every entry point of our ABI table that takes a device, with made-up ordinals:
#      build/tests/vgpu/device-probe), PyTorch and nvidia-smi inside see one GPU, GPU 1, with the
#      quota; NVML finds no GPU 0 by UUID inside; on the host, NVML's per-process view has the
#      slice's process on GPU 1 and nothing of it on GPU 0;
#   2. per-device quotas and compute shares in one slice of both GPUs (--memory-0/-1,
#      --compute-1): each device's total, a fill of GPU 1, the matmul rate on GPU 1 at 30 % vs 100 %;
#   3. NCCL all-reduce between the two GPUs in one slice (PyTorch, two ranks), each rank's device
#      view its own quota (memory counted per device); skipped where this python3 has no torch
#      with NCCL;
#   4. `gpuslice top --json` and `gpuslice metrics --once`: a row / series per GPU of the slice;
#   5. `gpuslice cdi generate`: a device per GPU (index and UUID names) on two GPUs;
#   6. MPS per GPU: a daemon each, slices of GPU 0 and GPU 1 through their own GPU's daemon at once.
# (The container through the hook with NVIDIA_VISIBLE_DEVICES=1 and a slice, and the device
# plugin on two GPUs, run in tests/gpu/run.sh's part multigpu, beside the other runc checks.)
set -u
BUILD=${1:-build}
cd "$(dirname "$0")/../.."
GS=$PWD/$BUILD/gpuslice CARRY=$PWD/$BUILD/gpu-carry
PROBE=$PWD/$BUILD/tests/vgpu/vgpu-probe DPROBE=$PWD/$BUILD/tests/vgpu/device-probe
[ -d "$BUILD/runtime-libs" ] && export LD_LIBRARY_PATH=$PWD/$BUILD/runtime-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# The probes are linked against the simulated driver (RUNPATH build/tests/fakegpu): the real
# libcuda.so.1's directory goes first, so that they load the real one
realcuda=$(ldconfig -p | awk '/libcuda\.so\.1 .*x86-64/ {print $NF; exit}')
[ -n "$realcuda" ] && export LD_LIBRARY_PATH=$(dirname "$(readlink -f "$realcuda")")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
. tests/gpu/lib.sh
n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
if [ "$n" -lt 2 ]; then
        skip "multigpu: this host has $n GPU(s); the checks need two"
        finish # (exit 77)
fi
T=$(mktemp -d /tmp/gs-multigpu.XXXXXX)
O=${OUT:-$T}
cleanup() { rm -rf "$T"; }
finish_trap cleanup
mapfile -t UU < <(nvidia-smi --query-gpu=uuid --format=csv,noheader)
mapfile -t BB < <(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader)
U0=${UU[0]} U1=${UU[1]}
# CUDA's bus id form: 4 hex digits of domain, lower case (nvidia-smi gives 00000000:3B:00.0)
cbus() { local b=${1,,}; echo "${b: -12}"; }
B0=$(cbus "${BB[0]}") B1=$(cbus "${BB[1]}")
echo "== $n GPUs: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1); GPU 0 $U0 ($B0), GPU 1 $U1 ($B1)"
x1() { "$GS" exec --device 1 --memory 4Gi "$@"; }
Q=$((4 << 30))

# --- 1. a slice of GPU 1 only -------------------------------------------------------------------
x1 -- "$PROBE" literal >"$O/literal.txt" 2>&1; cat "$O/literal.txt"
lit() { grep -qx "count 1" "$O/literal.txt" && grep -qix "uuid0 $U1" "$O/literal.txt" && grep -qx "total0 4096" "$O/literal.txt" &&
        grep -qix "primary0 $U1" "$O/literal.txt" && grep -qx "meminfo0 4096" "$O/literal.txt" && grep -qix "created0 $U1" "$O/literal.txt"; }
check "CUDA in a slice of GPU 1: one device; a literal CUdevice 0 (UUID, total, primary and created context, cuMemGetInfo) is GPU 1 at 4096 MiB" lit
# every entry point of the ABI table with a device (the list tests/vgpu/test_devices.sh makes)
mapfile -t NAMES < <(sed -n '/^#define GS_CUDA_FUNCTIONS(X)/,/^$/p' src/abi/cuda.h | tr -d '\\\n' |
        grep -oE 'X\([A-Za-z0-9_]+, *[A-Za-z_]+, *\([^)]*\)\)' |
        grep -E '\bCUdevice\b|CUmemAllocationProp|CUmemAccessDesc|CUmemPoolProps' | sed -E 's/^X\(([A-Za-z0-9_]+),.*/\1/')
if [ -x "$DPROBE" ]; then
        for o in 0 1 2 -1; do x1 -- "$DPROBE" "$o" "$([ "$o" = 0 ] && echo "$B1" || echo "$B0")" "${NAMES[@]}" >"$O/dev$o.txt" 2>&1; done
        cat "$O/dev1.txt"
        own() { ! grep -qE '^(nocase|init [^0])' "$O/dev0.txt" &&
                ! awk '$2 == 0 && $3 == 101 && $1 != "cuDeviceGetP2PAttribute" && $1 != "cuDeviceGetP2PAtomicCapabilities"' "$O/dev0.txt" | grep -q . &&
                [ "$(grep -c ' 0 ' "$O/dev0.txt")" -ge ${#NAMES[@]} ]; }
        check "ordinal 0 (GPU 1) is accepted by all ${#NAMES[@]} entry points with a device" own
        for o in 1 2 -1; do
                # -1 is CU_DEVICE_CPU, the host, to cuMemAdvise and cuMemPrefetchAsync(_ptsz): 0 there
                foreign() { grep -qx "init 0" "$O/dev$1.txt" && [ "$(grep -cE "^[A-Za-z0-9_]+ $1 " "$O/dev$1.txt")" = ${#NAMES[@]} ] &&
                        ! awk -v u="${U1,,}" -v o="$1" '$3 != 101 && !($3 == 0 && tolower($4) == u) &&
                                !(o == -1 && $3 == 0 && $1 ~ /^cuMem(Advise|PrefetchAsync|PrefetchAsync_ptsz)$/)' \
                                <(grep -E "^[A-Za-z0-9_]+ $1 " "$O/dev$1.txt") | grep -q .; }
                check "made-up ordinal $o (GPU 0's bus id): all ${#NAMES[@]} refused (101) or answered GPU 1" foreign "$o"
        done
else
        check "device-probe built ($DPROBE: a build with -Dtests=true)" false
fi
x1 -- nvidia-smi --query-gpu=uuid,memory.total --format=csv,noheader,nounits >"$O/smi.txt" 2>&1; cat "$O/smi.txt"
check "nvidia-smi inside: one GPU, GPU 1, at 4096 MiB" test "$(tr -d ' ' <"$O/smi.txt")" = "$U1,4096"
x1 -- nvidia-smi -L >"$O/smiL.txt" 2>&1; rcl=$?
x1 -- nvidia-smi -i "$U0" -L >"$O/smi0.txt" 2>&1; rc=$?; cat "$O/smiL.txt" "$O/smi0.txt"
# (behind nvidia-smi -L in the same slice listing GPU 1 alone: proof that the slice and nvidia-smi ran)
check "nvidia-smi -L inside lists GPU 1 alone (exit $rcl), and -i <GPU 0's UUID> finds nothing (exit $rc)" \
        test "$rcl" = 0 -a "$(grep -c '^GPU ' "$O/smiL.txt")" = 1 -a -n "$(grep -i "$U1" "$O/smiL.txt")" \
        -a "$rc" != 0 -a -z "$(grep -i "$U0" "$O/smi0.txt")"
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
        x1 -- python3 tests/gpu/multigpu_torch.py info >"$O/torch1.txt" 2>&1; cat "$O/torch1.txt"
        check "PyTorch inside: one device, its total the quota ($Q)" test "$(grep -c '^dev ' "$O/torch1.txt") $(grep -oE 'total=[0-9]+' "$O/torch1.txt")" = "1 total=$Q"
else
        skip "PyTorch in a slice of GPU 1: this host's python3 has no torch with CUDA"
fi
if [ -x "$CARRY/cuda_fill" ]; then
        x1 -- "$CARRY/cuda_fill" 6 >"$O/fill1.txt" 2>&1 &
        fp=$!
        for _ in $(seq 100); do grep -q '^filled' "$O/fill1.txt" && break; sleep 0.1; done
        nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory --format=csv,noheader,nounits >"$O/apps.txt"
        wait "$fp"; cat "$O/fill1.txt" "$O/apps.txt"
        pid=$(pgrep -f "^$CARRY/cuda_fill" | head -1)
        on() { awk -F', ' -v u="$1" '$2 == u' "$O/apps.txt" | grep -c .; }
        check "host NVML, per process: the slice's fill on GPU 1 ($(on "$U1") process(es)), nothing on GPU 0 ($(on "$U0"))" \
                test "$(on "$U1")" -ge 1 -a "$(on "$U0")" = 0
        used=$(awk -F', ' -v u="$U1" '$2 == u {s += $3} END {print s + 0}' "$O/apps.txt")
        check "... and GPU 1's count within the quota ($used <= 4096 MiB)" test "$used" -le 4096 -a "$used" -gt 0
else
        check "cuda_fill carried ($CARRY/cuda_fill: tests/gpu/prepare.sh)" false
fi

# --- 2. per-device quotas and compute shares -----------------------------------------------------
x2() { "$GS" exec --device 0,1 --memory-0 2Gi --memory-1 6Gi "$@"; }
x2 -- "$PROBE" devices >"$O/devices2.txt" 2>&1; cat "$O/devices2.txt"
check "a slice of both GPUs: CUDA sees two devices in NVML's order" grep -qx "count 2" "$O/devices2.txt"
if [ -x "$CARRY/cuda_fill" ]; then
        x2 -- env CUDA_VISIBLE_DEVICES=1 "$CARRY/cuda_fill" 0 >"$O/fill2.txt" 2>&1; cat "$O/fill2.txt"
        f=$(awk '/^filled/ {print $2}' "$O/fill2.txt")
        check "--memory-1 6Gi: GPU 1 shows 6144 MiB and fills ${f:-?} MiB (<= 6144, > 4096)" \
                test -n "$(grep -E '^before: .*total 6144 MiB' "$O/fill2.txt")" -a "${f:-0}" -le 6144 -a "${f:-0}" -gt 4096
        x2 -- env CUDA_VISIBLE_DEVICES=0 "$CARRY/cuda_fill" 0 >"$O/fill3.txt" 2>&1
        check "--memory-0 2Gi: GPU 0 shows 2048 MiB" grep -qE '^before: .*total 2048 MiB' "$O/fill3.txt"
fi
if python3 -c 'import torch; assert torch.cuda.device_count() >= 2' 2>/dev/null; then
        x2 -- python3 tests/gpu/multigpu_torch.py info >"$O/torch2.txt" 2>&1; cat "$O/torch2.txt"
        check "PyTorch: two devices, totals 2 GiB and 6 GiB" \
                test "$(grep -oE '^dev [01] total=[0-9]+' "$O/torch2.txt" | tr '\n' ' ')" = "dev 0 total=$((2 << 30)) dev 1 total=$((6 << 30)) "
        # compute: GPU 1 at 30 % and at 100 % (each run alone on the GPUs), the ratio of matmul rates
        r30=$("$GS" exec --device 0,1 --compute-1 30 -- python3 tests/gpu/multigpu_torch.py rate 1 5 2>&1 | awk '/^rate/ {print $3}')
        r100=$("$GS" exec --device 0,1 --compute-1 100 --memory 70Gi -- python3 tests/gpu/multigpu_torch.py rate 1 5 2>&1 | awk '/^rate/ {print $3}')
        r0=$("$GS" exec --device 0,1 --compute-1 30 -- python3 tests/gpu/multigpu_torch.py rate 0 5 2>&1 | awk '/^rate/ {print $3}')
        echo "matmul rate: GPU 1 at 30 % ${r30:-?}/s, at 100 % ${r100:-?}/s; GPU 0 (no share set) beside --compute-1 30: ${r0:-?}/s"
        ratio() { python3 -c "import sys; a, b, lo, hi = map(float, sys.argv[1:]); sys.exit(0 if lo <= a / b <= hi else 1)" "$@"; }
        check "--compute-1 30: GPU 1 at 0.25-0.36 of its full rate" ratio "${r30:-0}" "${r100:-1}" 0.25 0.36
        check "... and GPU 0 of the same slice unthrottled (>= 0.9 of GPU 1's full rate)" ratio "${r0:-0}" "${r100:-1}" 0.9 10
        # --- 3. NCCL between the two GPUs of one slice ---
        if python3 -c 'import torch.distributed as d; assert d.is_nccl_available()' 2>/dev/null; then
                x2 -- python3 tests/gpu/multigpu_torch.py nccl 512 >"$O/nccl.txt" 2>&1; cat "$O/nccl.txt"
                rk() { grep "^rank $1 " "$O/nccl.txt"; }
                check "NCCL all-reduce between GPU 0 and GPU 1 in one slice: both ranks sum to 2" \
                        test "$(grep -c '^rank [01] sum=2.0 ' "$O/nccl.txt")" = 2
                check "... memory counted per device: rank 0 sees 2 GiB, rank 1 sees 6 GiB" \
                        test -n "$(rk 0 | grep "total=$((2 << 30)) ")" -a -n "$(rk 1 | grep "total=$((6 << 30)) ")"
        else
                skip "NCCL all-reduce: this host's torch has no NCCL"
        fi
else
        skip "PyTorch on two devices, compute shares, NCCL: this host's python3 has no torch with two GPUs"
fi

# --- 4. metrics and top per GPU ------------------------------------------------------------------
R=/dev/shm/gs-multigpu-$$
if [ -x "$CARRY/cuda_fill" ]; then
        "$GS" exec --device 0,1 --memory-0 2Gi --memory-1 6Gi --compute 50 --region "$R" -- \
                sh -c "CUDA_VISIBLE_DEVICES=0 GS_FILL_CAP_MIB=512 '$CARRY/cuda_fill' 8 & CUDA_VISIBLE_DEVICES=1 GS_FILL_CAP_MIB=1024 '$CARRY/cuda_fill' 8; wait" \
                >"$O/fill4.txt" 2>&1 &
        fp=$!
        for _ in $(seq 100); do [ "$(grep -c '^filled' "$O/fill4.txt")" = 2 ] && break; sleep 0.1; done
        "$GS" top --json --region "$R" >"$O/top.json" 2>"$O/top.err"
        "$GS" metrics --once --region "$R" >"$O/metrics.txt" 2>"$O/metrics.err"
        wait "$fp"; rm -f "$R"
        python3 - "$O/top.json" "$U0" "$U1" >"$O/top.facts" 2>&1 <<'PY'
import json, sys
doc, u0, u1 = json.load(open(sys.argv[1])), sys.argv[2].lower(), sys.argv[3].lower()
for s in doc["slices"]:
    for d in s["devices"]:
        g = d["uuid"].lower() == u0 and "gpu0" or d["uuid"].lower() == u1 and "gpu1" or "other"
        want = {"gpu0": (2 << 30, 512 << 20), "gpu1": (6 << 30, 1024 << 20)}.get(g)
        ok = want is not None and d["memory_limit"] == want[0] and (d["memory_allocated"] or 0) >= want[1]
        print(g, d["memory_limit"], d["memory_allocated"], "ok" if ok else "bad")
PY
        cat "$O/top.facts"
        check "top --json: the slice has a row per GPU, each with its own quota and its fill (512 MiB on GPU 0, 1 GiB on GPU 1)" \
                test "$(grep -cE '^gpu[01] .* ok$' "$O/top.facts")" = 2
        check "metrics: a memory-limit series for each of the two GPUs" \
                test "$(grep -E '^gpuslice_[a-z_]*memory_limit_bytes\{' "$O/metrics.txt" | grep -ciE "$U0|$U1")" -ge 2
fi

# --- 5. the CDI spec on two GPUs -------------------------------------------------------------------
"$GS" cdi generate >"$O/cdi.yaml" 2>"$O/cdi.err"; rc=$?
check "cdi generate: a device for each of the two GPUs (0, 1), each with its own device node" \
        test "$rc" = 0 -a -n "$(grep -E 'name: "?0"?$' "$O/cdi.yaml")" -a -n "$(grep -E 'name: "?1"?$' "$O/cdi.yaml")" \
        -a "$(grep -oE 'path: "?/dev/nvidia[0-9]+' "$O/cdi.yaml" | sort -u | wc -l)" -ge 2

# --- 6. MPS per GPU: a daemon per GPU (`gpuslice mps start` on both), and under slice.mps = auto a
# 30 % slice of GPU 1 and a 50 % slice of GPU 0 at once, each through its own GPU's daemon: 38 and
# 66 of 132 SMs, and each daemon's control log has the client that came to it -------------------
if command -v nvidia-cuda-mps-control >/dev/null && nvcc -O2 -o "$T/sms.bin" tests/gpu/mps_fault.cu 2>"$T/nvcc.err"; then
        M=$T/mps
        printf '[slice]\nmps-root = "%s"\nmps = "auto"\nregions-dir = "%s"\n' "$M" "$T/mps-regions" >"$T/mps.toml"
        u0=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | sed -n 1p)
        u1=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | sed -n 2p)
        "$GS" mps start --device 0,1 --mps-root "$M" >"$O/mps-start.txt" 2>&1; rc=$?
        cat "$O/mps-start.txt"
        check "mps start --device 0,1: a daemon per GPU, each with its own pipe directory (rc $rc)" \
                test "$rc" = 0 -a -S "$M/$u0/pipe/control" -a -S "$M/$u1/pipe/control"
        "$GS" exec --config "$T/mps.toml" --device 1 --compute 30 -- "$T/sms.bin" sms >"$O/mps-gpu1.txt" 2>&1 &
        a=$!
        "$GS" exec --config "$T/mps.toml" --device 0 --compute 50 -- "$T/sms.bin" sms >"$O/mps-gpu0.txt" 2>&1 &
        b=$!
        wait $a $b
        cat "$O/mps-gpu1.txt" "$O/mps-gpu0.txt"
        check "MPS, GPU 1's 30 % slice: 38 of 132 SMs" grep -q "sms=38 " "$O/mps-gpu1.txt"
        check "MPS, GPU 0's 50 % slice at the same time: 66 of 132 SMs" grep -q "sms=66 " "$O/mps-gpu0.txt"
        c0=$(grep -c "NEW CLIENT" "$M/$u0/log/control.log" 2>/dev/null) c1=$(grep -c "NEW CLIENT" "$M/$u1/log/control.log" 2>/dev/null)
        check "MPS: each GPU's daemon served its own slice (clients in the control logs: GPU 0 ${c0:-0}, GPU 1 ${c1:-0})" \
                test "${c0:-0}" -ge 1 -a "${c1:-0}" -ge 1
        "$GS" mps stop --mps-root "$M" >/dev/null 2>&1
else
        skip "MPS per GPU: no nvidia-cuda-mps-control or nvcc on this host"
fi
finish
