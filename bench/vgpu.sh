#!/usr/bin/env bash
# Slicing overhead on the GPU host, native and sliced runs interleaved in one session:
#   bench/vgpu.sh BUILD [ROUNDS=30] [TORCH_ROUNDS=12]      (0 skips a part)
# 1. empty-kernel launch time and cudaMalloc+cudaFree (1 MiB) time (bench/vgpu_bench.cu),
#    ROUNDS rounds of native / sliced / native again (an A/A control that shows the noise floor),
#    the order reversed every other round;
# 2. a launch-bound PyTorch training loop (bench/torch_mlp.py), TORCH_ROUNDS rounds;
# 3. process start: the interposer's own start-up cost as it measures it (GPUSLICE_LOG_LEVEL=3),
#    alone and with 16 and 64 other processes of the slice alive; then the end-to-end wall time
#    of a short CUDA process, native vs sliced (bench/timecmd, paired differences).
# Sliced = `gpuslice exec --memory 70Gi` (a quota is set, so every allocation is charged).
# Ratios are per round (adjacent runs) and summarised by bench/pairs.py: median [95% CI].
set -uo pipefail
BUILD=${1:-build} ROUNDS=${2:-30} TROUNDS=${3:-12}
cd "$(dirname "$0")/.."
GS=$PWD/$BUILD/gpuslice B=$PWD/$BUILD/gpu-carry/vgpu_bench L=$PWD/$BUILD/libgpuslice-vgpu.so
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
run() { # ROUND VARIANT CMD...: append "ROUND VARIANT METRIC VALUE" lines
        local r=$1 v=$2; shift 2
        "$@" 2>/dev/null | awk -v r="$r" -v v="$v" 'NF == 2 {print r, v, $1, $2}' >>"$W/data" || return 1
}
echo "== slicing overhead ($(date -u +%F), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1))"
for r in $(seq "$ROUNDS"); do
        if [ $((r % 2)) = 1 ]; then
                run "$r" native "$B" && run "$r" sliced "$GS" exec --memory 70Gi -- "$B" && run "$r" native-AA "$B"
        else
                run "$r" native-AA "$B" && run "$r" sliced "$GS" exec --memory 70Gi -- "$B" && run "$r" native "$B"
        fi || { echo "bench: vgpu_bench failed"; exit 1; }
done
for r in $(seq "$TROUNDS"); do
        if [ $((r % 2)) = 1 ]; then
                run "$r" native python3 bench/torch_mlp.py && run "$r" sliced "$GS" exec --memory 70Gi -- python3 bench/torch_mlp.py
        else
                run "$r" sliced "$GS" exec --memory 70Gi -- python3 bench/torch_mlp.py && run "$r" native python3 bench/torch_mlp.py
        fi || { echo "bench: torch_mlp failed"; exit 1; }
done
python3 bench/pairs.py "$W/data" native "launch_us:lower:empty-kernel launch, us" \
        "malloc_us:lower:cudaMalloc+cudaFree 1 MiB, us" "steps_per_s:higher:PyTorch 24x256 MLP, steps/s"

# --- process start ----------------------------------------------------------------------------
T=$PWD/$BUILD/bench/timecmd S=$PWD/$BUILD/gpu-carry/cuda_startup F=$PWD/$BUILD/gpu-carry/cuda_fill
[ -x "$T" ] && [ -x "$S" ] && [ "$ROUNDS" -gt 0 ] || exit 0
R=/dev/shm/gs-bench-start-$$
cost() { # LABEL: 20 processes in the slice $R, their own start-up cost (us) as the interposer logs it
        for i in $(seq 20); do
                env LD_PRELOAD="$L" GPUSLICE_MEMORY_LIMIT=70Gi GPUSLICE_REGION="$R" GPUSLICE_LOG_LEVEL=3 "$S" 2>&1 |
                        sed -n 's/.*start-up cost: \([0-9]*\) us.*/\1/p'
        done | sort -n | awk -v l="$1" '{a[NR] = $1} END {printf "  %-40s median %5d us, max %5d us (n=%d)\n", l, a[int((NR + 1) / 2)], a[NR], NR}'
}
alive() { # N: start N more processes of the slice that hold a context and 64 MiB for 60 s
        for i in $(seq "$1"); do
                GS_FILL_CAP_MIB=64 "$GS" exec --memory 70Gi --region "$R" -- "$F" 60 >/dev/null 2>&1 &
        done
        sleep $(($1 / 8 + 4))
}
echo "process start: the interposer's own start-up cost (constructor, cuGetProcAddress answers, device map,"
echo "context admission, first allocation), as it measures it:"
cost "alone in the slice"
alive 16
cost "16 other processes of the slice alive"
alive 48
cost "64 other processes of the slice alive"
pkill -f "gpu-carry/cuda_fill"; wait 2>/dev/null; rm -f "$R"
echo "process start, end to end (context + 1 MiB cudaMalloc/cudaFree + exit), $ROUNDS interleaved rounds:"
echo "  rows: native; interposer preloaded (quota set, one slice); through gpuslice exec (a new slice each time)"
# timecmd splits its commands at "--": hide gpuslice's own "--" inside sh -c (both sides)
"$T" -n "$ROUNDS" -w 2 -- sh -c "exec '$S'" -- sh -c "exec env LD_PRELOAD='$L' GPUSLICE_MEMORY_LIMIT=70Gi GPUSLICE_REGION='$R' '$S'" \
        -- sh -c "exec '$GS' exec --memory 70Gi -- '$S'"
alive 16
echo "... with 16 other processes alive in the preloaded rows' slice:"
"$T" -n "$ROUNDS" -w 2 -- sh -c "exec '$S'" -- sh -c "exec env LD_PRELOAD='$L' GPUSLICE_MEMORY_LIMIT=70Gi GPUSLICE_REGION='$R' '$S'"
pkill -f "gpu-carry/cuda_fill"; wait 2>/dev/null; rm -f "$R"
