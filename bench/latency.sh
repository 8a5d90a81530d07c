#!/usr/bin/env bash
# Latency beside a batch slice on a real GPU:  bench/latency.sh BUILD [SECONDS=6]
# A latency-sensitive client (bench/latency.cu `request`: every 20 ms a request of 4 compute-bound
# kernels, each waited for) beside a batch neighbour (`batch`: kernels back to back), in three
# shapes (LAT_SHAPES, name:request-kernel-us:batch-kernel-us):
#   base        ~70 us request kernels (a ~0.3 ms request), ~2 ms batch kernels
#   longreq     requests 5x longer (~350 us kernels)
#   shortbatch  batch kernels 5x shorter (~0.4 ms)
# and these configurations (LAT_CONFIGS), each a fresh pair of processes:
#   alone   the client alone, native              none   both native: the driver time-slices them
#   share   both `--compute 50 --compute-mode share`   cap    both `--compute 50` (cap)
#   high    share 50/50, the client GPUSLICE_PRIORITY=high, the batch low
#   mps     both cap 50 through `gpuslice mps` (a daemon started and stopped here)
#   mpsprio as mps, the client at MPS client priority NORMAL, the batch BELOW_NORMAL
#   mpsfit  as mps, the batch sizing its grid to the SMs it sees (4 per SM: its kernels stay
#           as long as natively; its share is counted by work)
#   mpsfree as mps, but the client uncapped (MPS 100 %): where MPS puts a client's blocks
# Per run: the client's p50/p99/max request latency over SECONDS, and the batch's throughput over
# the same window as a fraction of its rate alone (measured first). Kernel lengths are calibrated
# natively alone once per shape (iterations of a fixed FMA loop, 4 x SM count blocks: fixed, so a
# kernel under MPS does the same work on fewer SMs). The targets (issue 20), judged per shape:
#   share, cap: p99 <= none's p99           high: p99 <= 1.5 x alone's p99 + one batch kernel
#   mps (base): p99 <= 1.5 ms                share, cap, high: the batch keeps >= 48 % of its rate
# are printed as "target ... PASS|MISS"; the last line is "latency: N targets met, M missed".
# Exits 77 without a GPU, 1 if a run failed. Needs BUILD/gpu-carry/latency (tests/gpu/prepare.sh)
# and BUILD/libgpuslice-vgpu.so (or LAT_LIB); mps needs BUILD/gpuslice and nvidia-cuda-mps-control.
# LAT_TIMELINE_DIR=DIR: each pair also writes its kernels' GPU times there (and its output, with
# the interposer's log: LAT_SLICE_ENV="GPUSLICE_LOG_LEVEL=4" adds the turns taken and given up),
# and a line "# timeline SHAPE CONFIG: ..." tells where the client's requests waited
# (bench/latency_timeline.py).
set -uo pipefail
BUILD=${1:-build} SECS=${2:-6}
cd "$(dirname "$0")/.."
if [ ! -e /dev/nvidiactl ] || ! command -v nvidia-smi >/dev/null 2>&1; then
        echo "SKIP: no NVIDIA GPU here: latency not measured"
        exit 77
fi
LAT=$PWD/$BUILD/gpu-carry/latency LIB=${LAT_LIB:-$PWD/$BUILD/libgpuslice-vgpu.so} GS=$PWD/$BUILD/gpuslice
TL=${LAT_TIMELINE_DIR:-}
[ -x "$LAT" ] && [ -e "$LIB" ] || { echo "latency: needs $LAT and $LIB (tests/gpu/prepare.sh $BUILD)"; exit 1; }
W=$(mktemp -d)
MR=$W/mps
trap 'kill $(jobs -p) 2>/dev/null; [ -d "$MR" ] && "$GS" mps stop --mps-root "$MR" >/dev/null 2>&1; rm -rf "$W"' EXIT
export GPUSLICE_ARBITER_DIR=$W/arbiter
mkdir -p "$GPUSLICE_ARBITER_DIR"
SHAPES=${LAT_SHAPES:-base:70:2000 longreq:350:2000 shortbatch:70:400}
CONFIGS=${LAT_CONFIGS:-alone none share cap high mps}
fails=0 met=0 missed=0
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" "$2" | tail -1; }

MPS_PIPE=
if [[ " $CONFIGS " == *" mps"* ]]; then
        if command -v nvidia-cuda-mps-control >/dev/null && "$GS" mps start --mps-root "$MR" >"$W/mps.out" 2>&1; then
                MPS_PIPE=$(ls -d "$MR"/*/pipe | head -1)
        else
                echo "FAIL mps: no MPS daemon: $(cat "$W/mps.out" 2>/dev/null)"
                fails=$((fails + 1))
        fi
fi

# slice CONFIG ROLE: the environment of one process of a configuration (ROLE client or batch)
slice() {
        local reg="GPUSLICE_REGION=$W/region-$2-$RANDOM ${LAT_SLICE_ENV:-}"
        case $1 in
        alone | none) ;;
        share) echo "LD_PRELOAD=$LIB GPUSLICE_COMPUTE_LIMIT=50 GPUSLICE_COMPUTE_MODE=share $reg" ;;
        cap) echo "LD_PRELOAD=$LIB GPUSLICE_COMPUTE_LIMIT=50 $reg" ;;
        high) echo "LD_PRELOAD=$LIB GPUSLICE_COMPUTE_LIMIT=50 GPUSLICE_COMPUTE_MODE=share $reg" \
                "GPUSLICE_PRIORITY=$([ "$2" = client ] && echo high || echo low)" ;;
        mps) echo "LD_PRELOAD=$LIB GPUSLICE_COMPUTE_LIMIT=50 GPUSLICE_MPS_PIPE_DIRECTORY=$MPS_PIPE $reg" ;;
        mpsprio) echo "LD_PRELOAD=$LIB GPUSLICE_COMPUTE_LIMIT=50 GPUSLICE_MPS_PIPE_DIRECTORY=$MPS_PIPE $reg" \
                "CUDA_MPS_CLIENT_PRIORITY=$([ "$2" = client ] && echo 0 || echo 1)" ;;
        mpsfit) echo "LD_PRELOAD=$LIB GPUSLICE_COMPUTE_LIMIT=50 GPUSLICE_MPS_PIPE_DIRECTORY=$MPS_PIPE $reg" \
                "$([ "$2" = batch ] && echo LAT_BLOCKS=0)" ;;
        mpsfree) if [ "$2" = client ]; then echo "CUDA_MPS_PIPE_DIRECTORY=$MPS_PIPE"; else
                echo "LD_PRELOAD=$LIB GPUSLICE_COMPUTE_LIMIT=50 GPUSLICE_MPS_PIPE_DIRECTORY=$MPS_PIPE $reg"; fi ;;
        esac
}

# judge NAME CONDITION...: a target
judge() {
        local name=$1; shift
        if "$@"; then met=$((met + 1)); echo "target $name PASS"; else missed=$((missed + 1)); echo "target $name MISS"; fi
}
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && b != "" && a <= b) }'; }

printf '%-10s %-7s %9s %9s %9s %11s\n' shape config p50_ms p99_ms max_ms batch_share
for sh in $SHAPES; do
        IFS=: read -r name rus bus <<<"$sh"
        "$LAT" calibrate "$rus" >"$W/cal-r" 2>&1 && "$LAT" calibrate "$bus" >"$W/cal-b" 2>&1 ||
                { echo "FAIL $name: calibration: $(cat "$W/cal-r" "$W/cal-b")"; fails=$((fails + 1)); continue; }
        ri=$(field iters "$W/cal-r") bi=$(field iters "$W/cal-b") blocks=$(field blocks "$W/cal-r")
        bms=$(field kernel_ms "$W/cal-b")
        echo "# $name: request kernel $(field kernel_ms "$W/cal-r") ms (iters $ri), batch kernel $bms ms (iters $bi), $blocks blocks"
        export LAT_BLOCKS=$blocks
        if ! "$LAT" batch "$SECS" "$bi" >"$W/alone-b" 2>&1; then
                echo "FAIL $name: batch alone: $(tail -2 "$W/alone-b")"; fails=$((fails + 1)); continue
        fi
        base_rate=$(field rate "$W/alone-b")
        declare -A P99=()
        for c in $CONFIGS; do
                [[ $c == mps* ]] && [ -z "$MPS_PIPE" ] && continue
                share=-
                tlc= tlb=
                [ -n "$TL" ] && tlc=LAT_TIMELINE=$TL/$name-$c-client.txt tlb=LAT_TIMELINE=$TL/$name-$c-batch.txt
                if [ "$c" = alone ]; then
                        env $tlc $(slice "$c" client) "$LAT" request "$SECS" "$ri" >"$W/r" 2>&1
                        rc=$?
                else
                        LAT_WINDOW="1:$((SECS + 1))" env $tlb $(slice "$c" batch) "$LAT" batch "$((SECS + 2))" "$bi" >"$W/b" 2>&1 &
                        bp=$!
                        sleep 1
                        env $tlc $(slice "$c" client) "$LAT" request "$SECS" "$ri" >"$W/r" 2>&1
                        rc=$?
                        wait $bp || rc=1
                        # (by work: a batch that sized its grid to its SMs does less per kernel)
                        share=$(awk -v r="$(field rate "$W/b")" -v a="$base_rate" -v n="$(field blocks "$W/b")" -v m="$blocks" \
                                'BEGIN { printf "%.3f", r * (n > 0 ? n : m) / (a * m) }')
                fi
                if [ $rc -ne 0 ]; then
                        echo "FAIL $name $c: $(tail -2 "$W/r" "$W/b" 2>/dev/null | tr '\n' ' ')"; fails=$((fails + 1)); continue
                fi
                P99[$c]=$(field p99_ms "$W/r")
                printf '%-10s %-7s %9s %9s %9s %11s\n' "$name" "$c" "$(field p50_ms "$W/r")" "${P99[$c]}" "$(field max_ms "$W/r")" "$share"
                [ -n "$TL" ] && cp "$W/r" "$TL/$name-$c-client.log" && { [ "$c" = alone ] || cp "$W/b" "$TL/$name-$c-batch.log"; }
                if [ -n "$TL" ] && [ "$c" != alone ]; then
                        bound=
                        [ "$c" = high ] && [ -n "${P99[alone]:-}" ] &&
                                bound=$(awk -v a="${P99[alone]}" -v k="$bms" 'BEGIN { printf "%.3f", 1.5 * a + k }')
                        python3 bench/latency_timeline.py "$TL/$name-$c-client.txt" "$TL/$name-$c-batch.txt" $bound |
                                sed "s/^/# timeline $name $c: /"
                fi
                case $c in share | cap | high) judge "$name $c: the batch keeps >= 48 % of its rate ($share)" le 0.48 "$share" ;; esac
        done
        for c in share cap; do
                [ -n "${P99[$c]:-}" ] && [ -n "${P99[none]:-}" ] &&
                        judge "$name $c: p99 ${P99[$c]} <= no slicing's ${P99[none]} ms" le "${P99[$c]}" "${P99[none]}"
        done
        if [ -n "${P99[high]:-}" ] && [ -n "${P99[alone]:-}" ]; then
                bound=$(awk -v a="${P99[alone]}" -v k="$bms" 'BEGIN { printf "%.3f", 1.5 * a + k }')
                judge "$name high: p99 ${P99[high]} <= 1.5 x alone + one batch kernel = $bound ms" le "${P99[high]}" "$bound"
        fi
        [ "$name" = base ] && [ -n "${P99[mps]:-}" ] && judge "$name mps: p99 ${P99[mps]} <= 1.5 ms" le "${P99[mps]}" 1.5
        unset P99
done
echo "latency: $met targets met, $missed missed"
[ "$fails" = 0 ]
