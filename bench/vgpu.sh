#!/usr/bin/env bash
# Slicing overhead, native and sliced runs interleaved in one session (ROUNDS each):
# empty-kernel launch time, cudaMalloc+cudaFree (1 MiB), a launch-bound PyTorch training loop.
# Sliced = `gpuslice exec --memory 70Gi` (a quota is set, so every allocation is charged).
#   bench/vgpu.sh BUILD [ROUNDS=5]
set -uo pipefail
BUILD=${1:-build} ROUNDS=${2:-5}
cd "$(dirname "$0")/.."
GS=$PWD/$BUILD/gpuslice B=$PWD/$BUILD/gpu-carry/vgpu_bench
W=$(mktemp -d)
for r in $(seq "$ROUNDS"); do
        "$B" >>"$W/native.micro" || exit 1
        "$GS" exec --memory 70Gi -- "$B" >>"$W/sliced.micro" || exit 1
        python3 bench/torch_mlp.py >>"$W/native.torch" || exit 1
        "$GS" exec --memory 70Gi -- python3 bench/torch_mlp.py >>"$W/sliced.torch" || exit 1
done
med() { sort -n | awk '{a[NR]=$1} END {print (NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2}'; }
get() { awk -v k="$2" '$1 == k {print $2}' "$W/$1" | med; }
nl=$(get native.micro launch_us) sl=$(get sliced.micro launch_us)
nm=$(get native.micro malloc_us) sm=$(get sliced.micro malloc_us)
nt=$(get native.torch steps_per_s) st=$(get sliced.torch steps_per_s)
printf '%-44s %12s %12s %9s\n' "measure (median of $ROUNDS interleaved runs)" native sliced ratio
printf '%-44s %12s %12s %9.4f\n' "empty-kernel launch, us (rate ratio)" "$nl" "$sl" "$(awk -v a="$nl" -v b="$sl" 'BEGIN {print a / b}')"
printf '%-44s %12s %12s %9.4f\n' "cudaMalloc+cudaFree 1 MiB, us (time ratio)" "$nm" "$sm" "$(awk -v a="$sm" -v b="$nm" 'BEGIN {print a / b}')"
printf '%-44s %12s %12s %9.4f\n' "PyTorch 24x256 MLP, steps/s (rate ratio)" "$nt" "$st" "$(awk -v a="$st" -v b="$nt" 'BEGIN {print a / b}')"
# Process start: a short CUDA process (context + one cudaMalloc/cudaFree), native vs sliced,
# first alone in its slice, then with 16 other processes of the slice alive and registered.
T=$PWD/$BUILD/bench/timecmd S=$PWD/$BUILD/gpu-carry/cuda_startup
if [ -x "$T" ] && [ -x "$S" ]; then
        R=/dev/shm/gs-bench-start-$$
        echo "process start (context + 1 MiB cudaMalloc/cudaFree + exit), 10 interleaved rounds:"
        echo "  rows: native; interposer preloaded (quota set); the same through gpuslice exec"
        # timecmd splits its commands at "--": hide gpuslice's own "--" inside sh -c (both sides)
        L=$PWD/$BUILD/libgpuslice-vgpu.so
        "$T" -n 10 -w 2 -- sh -c "exec '$S'" -- sh -c "exec env LD_PRELOAD='$L' GPUSLICE_MEMORY_LIMIT=70Gi GPUSLICE_REGION='$R' '$S'" \
                -- sh -c "exec '$GS' exec --memory 70Gi --region '$R' -- '$S'"
        for i in $(seq 16); do
                GS_FILL_CAP_MIB=64 "$GS" exec --memory 70Gi --region "$R" -- "$PWD/$BUILD/gpu-carry/cuda_fill" 30 >/dev/null 2>&1 &
        done
        sleep 8
        echo "... with 16 other processes alive in the same slice:"
        "$T" -n 10 -w 2 -- sh -c "exec '$S'" -- sh -c "exec env LD_PRELOAD='$L' GPUSLICE_MEMORY_LIMIT=70Gi GPUSLICE_REGION='$R' '$S'" \
                -- sh -c "exec '$GS' exec --memory 70Gi --region '$R' -- '$S'"
        pkill -f "gpu-carry/cuda_fill" ; wait 2>/dev/null; rm -f "$R"
fi
rm -rf "$W"
