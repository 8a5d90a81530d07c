#!/usr/bin/env bash
# Live resize on a real GPU (issue 25, part 2): a running PyTorch process in a 4 GiB slice
# (`gpuslice exec --regions-dir`) is resized to 8 GiB with `gpuslice slice set`:
# torch.cuda.mem_get_info shows 8192 MiB within 1 s, without a restart, and it can then allocate
# past the old quota; nvidia-smi run in the slice shows the new quota; shrunk to 2 GiB below what it
# holds, nothing is freed or killed, a new allocation is refused (torch's OutOfMemoryError), `slice
# show` and the over-quota metric say so, and once it frees, allocations are granted again.
#   tests/gpu/resize_check.sh BUILD [OUTDIR]   (GPU host, python3 with torch; PASS/FAIL lines,
#                                              then "N passed, N failed, N skipped" (tests/gpu/lib.sh);
#                                              exit 1 on a FAIL)
set -u
BUILD=${1:-build} OUT=${2:-$(mktemp -d)}
cd "$(dirname "$0")/../.."
. tests/gpu/lib.sh
GS=$PWD/$BUILD/gpuslice LIB=$PWD/$BUILD/libgpuslice-vgpu.so
[ -d "$BUILD/runtime-libs" ] && export LD_LIBRARY_PATH=$PWD/$BUILD/runtime-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
W=$(mktemp -d /tmp/gs-resize.XXXXXX)
cleanup() { exec 4>&- 2>/dev/null; kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$W"; }
finish_trap cleanup
if ! python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
        check "python3 with a CUDA-capable torch is there" false; finish
fi
mkdir "$W/slices"
mkfifo "$W/in"
exec 4<>"$W/in"
# The PyTorch process: one command a line on stdin, one answer a line.
cat >"$W/torch_live.py" <<'PY'
import sys, torch
held = []
torch.cuda.init()
print("ready", flush=True)
for line in sys.stdin:
    cmd = line.split()
    if not cmd:
        continue
    if cmd[0] == "info":
        free, total = torch.cuda.mem_get_info()
        print("info total=%d free=%d" % (total >> 20, free >> 20), flush=True)
    elif cmd[0] == "alloc":
        try:
            held.append(torch.empty(int(cmd[1]) << 20, dtype=torch.uint8, device="cuda"))
            print("alloc ok", flush=True)
        except torch.cuda.OutOfMemoryError as e:
            print("alloc refused", flush=True)
    elif cmd[0] == "free":
        held.clear()
        torch.cuda.empty_cache()
        print("free ok", flush=True)
    elif cmd[0] == "quit":
        break
PY
GPUSLICE_VGPU_LIB=$LIB "$GS" exec --regions-dir "$W/slices" --memory 4Gi -- python3 "$W/torch_live.py" <&4 >"$OUT/resize-torch.txt" 2>"$OUT/resize-torch.err" &
EXEC=$!
ask() {
        local n i
        n=$(( $(wc -l <"$OUT/resize-torch.txt") + 1 ))
        echo "$1" >&4
        for i in $(seq 600); do [ "$(wc -l <"$OUT/resize-torch.txt")" -ge "$n" ] && break; sleep 0.05; done
        sed -n "${n}p" "$OUT/resize-torch.txt"
}
total() { sed -n 's/.*total=\([0-9]*\).*/\1/p' <<<"$1"; }
for _ in $(seq 600); do grep -q '^ready' "$OUT/resize-torch.txt" && break; sleep 0.05; done
ID=exec-$EXEC
check "PyTorch runs in a 4 GiB exec slice $ID" grep -q '^ready' "$OUT/resize-torch.txt" || finish
a=$(ask info); echo "before: $a"
check "torch.cuda.mem_get_info shows the 4096 MiB quota" test "$(total "$a")" = 4096
"$GS" slice set --regions-dir "$W/slices" "$ID" --memory 8Gi
t0=$(date +%s%N) seen=
while [ $(( ($(date +%s%N) - t0) / 1000000 )) -lt 3000 ]; do
        a=$(ask info)
        [ "$(total "$a")" = 8192 ] && { seen=$(( ($(date +%s%N) - t0) / 1000000 )); break; }
        sleep 0.05
done
echo "after set --memory 8Gi: $a (after ${seen:-never} ms)"
check "resized to 8 GiB: torch.cuda.mem_get_info shows 8192 MiB within 1 s (${seen:-never} ms), same process" \
        test -n "$seen" -a "${seen:-9999}" -le 1000
check "the same process allocates 6000 MiB (more than its old quota)" test "$(ask 'alloc 6000')" = "alloc ok"
LD_PRELOAD=$LIB GPUSLICE_REGION="$W/slices/$ID/usage" GPUSLICE_LIVE_LIMITS="$W/slices/$ID/live/limits" GPUSLICE_MEMORY_LIMIT=4Gi \
        nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits >"$OUT/resize-smi.txt" 2>&1
echo "nvidia-smi in the slice: $(head -1 "$OUT/resize-smi.txt") MiB total"
check "nvidia-smi in the slice shows the new 8192 MiB" test "$(head -1 "$OUT/resize-smi.txt" | tr -d ' ')" = 8192
"$GS" slice set --regions-dir "$W/slices" "$ID" --memory 2Gi
check "shrunk to 2 GiB below the ~6 GiB it holds: a new allocation is refused (OutOfMemoryError)" \
        test "$(ask 'alloc 64')" = "alloc refused"
check "... nothing was freed or killed: the process runs" kill -0 "$EXEC"
"$GS" slice show --regions-dir "$W/slices" "$ID" >"$OUT/resize-show.txt" 2>&1; cat "$OUT/resize-show.txt"
check "... slice show says OVER QUOTA" grep -q 'OVER QUOTA' "$OUT/resize-show.txt"
"$GS" metrics --once --no-nvml --regions-dir "$W/slices" >"$OUT/resize-metrics.txt" 2>&1
check "... gpuslice_slice_memory_over_quota is 1, the limit 2 GiB" \
        sh -c "grep -q '^gpuslice_slice_memory_over_quota{container_id=\"$ID\".* 1\$' '$OUT/resize-metrics.txt' &&
               grep -q '^gpuslice_slice_memory_limit_bytes{container_id=\"$ID\".* 2147483648\$' '$OUT/resize-metrics.txt'"
check "... and the process said so" grep -q 'below the .* in use: nothing is freed' "$OUT/resize-torch.err"
check "freed" test "$(ask free)" = "free ok"
check "after the free, 512 MiB are granted again" test "$(ask 'alloc 512')" = "alloc ok"
ask quit >/dev/null
wait "$EXEC"; rc=$?
check "the process exits 0 and exec removes the slice directory (exit $rc)" test "$rc" = 0 -a ! -e "$W/slices/$ID"
finish
