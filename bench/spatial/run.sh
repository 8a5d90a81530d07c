#!/usr/bin/env bash
# Issue 32, item 6 (a time-boxed experiment, not a block): does a request client confined to SMs of
# its own meet 1.5 x its latency alone beside a batch on the other SMs, with the batch keeping >= 0.8
# of its share?   bench/spatial/run.sh BUILD [SECONDS=5]     (~1 min on the H200 at 5 s)
# The client: every 20 ms a request of 4 ~70 us kernels (bench/latency.sh's req4); the batch: ~2 ms
# kernels back to back; both 4 x SMs blocks of fixed work (calibrated natively by the latency
# program). Runs, each SECONDS:
#   alone         the client alone, native, whole GPU (the 1.5 x bound) and on a green context of
#                 each CLIENT_SMS (what the partition alone costs it); the batch alone (its rate)
#   green C       one process, two threads: the client on a green context of C SMs (SPATIAL_SMS,
#                 default "32 72": 72 holds a 528-block grid in one wave), the batch on the SMs left
#                 (green contexts confine only their own process's work: the ceiling of a spatial
#                 split, not yet a path between containers)
#   mps P/Q       two processes under an MPS daemon started here: the batch at
#                 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE P, the client at Q (SPATIAL_MPS, default
#                 "50/100 50/50 45/55")
# Prints per run "result NAME: client sms=.. p99_ms=.. (bound B) PASS|MISS, batch .. of native
# (its share S: kept K) PASS|MISS", and first the facts: the driver, MPS's version, and that MPS's
# static SM partitions (CUDA 13.1's MPS) need driver >= 590. Every process runs under `timeout`; a
# run that fails prints "FAIL ..." and the script exits 1; without a GPU it exits 77.
# Needs BUILD/gpu-carry/latency and BUILD/gpu-carry/spatial (tests/gpu/prepare.sh), or nvcc to build
# spatial here (into a temporary directory).
set -uo pipefail
BUILD=${1:-build} SECS=${2:-5}
cd "$(dirname "$0")/../.." || exit 1
if [ ! -e /dev/nvidiactl ] || ! command -v nvidia-smi >/dev/null 2>&1; then
        echo "SKIP: no NVIDIA GPU here: the spatial experiment not run"
        exit 77
fi
W=$(mktemp -d)
MPSD=$W/mps
trap 'kill $(jobs -p) 2>/dev/null; [ -S "$MPSD/pipe/control" ] && echo quit | CUDA_MPS_PIPE_DIRECTORY=$MPSD/pipe timeout 10 nvidia-cuda-mps-control >/dev/null 2>&1; rm -rf "$W"' EXIT
LAT=$BUILD/gpu-carry/latency SP=$BUILD/gpu-carry/spatial
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
field() { sed -n "s/.*\<$1=\([0-9.]*\).*/\1/p" <<<"$2" | tail -1; }
calc() { awk "BEGIN { printf \"%.3f\", $1 }"; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && b != "" && a + 0 <= b + 0) }'; }
if [ ! -x "$SP" ]; then
        NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
        SP=$W/spatial
        "$NVCC" -O2 -arch=sm_90 -o "$SP" bench/spatial/spatial.cu -L"$(dirname "$NVCC")/../lib64/stubs" -lcuda ||
                { echo "FAIL spatial: not carried and not built"; exit 1; }
fi
[ -x "$LAT" ] || { echo "FAIL spatial: needs $LAT (tests/gpu/prepare.sh)"; exit 1; }
drv=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
echo "# driver $drv; MPS static SM partitions (CUDA 13.1's MPS) need driver >= 590: $(awk -v d="${drv%%.*}" 'BEGIN { print (d >= 590 ? "this driver has them (not tried here)" : "not on this driver") }')"
echo "# nvidia-cuda-mps-control -v: $(nvidia-cuda-mps-control -v 2>&1 | head -1)"
run() { timeout -k 5 $((${SECS%.*} + 60)) "$@" 2>&1; }
cal() { run "$LAT" calibrate "$1"; }
c=$(cal 70) && b=$(cal 2000) || { echo "FAIL spatial: calibration: $c $b"; exit 1; }
RI=$(field iters "$c") BI=$(field iters "$b") KMS=$(field kernel_ms "$b")
export LAT_BLOCKS
LAT_BLOCKS=$(field blocks "$c")
echo "# request kernel $(field kernel_ms "$c") ms, batch kernel $KMS ms, $LAT_BLOCKS blocks"
o=$(run "$SP" client "$SECS" "$RI") || fail "client alone: $o"
ALONE=$(field p99_ms "$o")
o2=$(run "$SP" batch "$SECS" "$BI") || fail "batch alone: $o2"
RATE=$(field rate "$o2")
[ -n "$ALONE" ] && [ -n "$RATE" ] || { echo "FAIL spatial: no baseline"; exit 1; }
BOUND=$(calc "1.5 * $ALONE")
echo "result alone: client p99_ms=$ALONE ($o); batch $RATE kernels/s"
# judge NAME CLIENT-OUTPUT BATCH-OUTPUT: the client's p99 against 1.5 x alone, the batch's rate
# against its share (its SMs of all, or its MPS percentage)
judge() {
        local p99 share kept frac
        p99=$(field p99_ms "$2")
        frac=$(calc "$(field rate "$3") / $RATE")
        share=$4
        kept=$(calc "$frac / $share")
        echo "result $1: client p99_ms=$p99 max_ms=$(field max_ms "$2") served $(field requests "$2")/$(field due "$2") (bound $BOUND)" \
                "$(le "$p99" "$BOUND" && echo PASS || echo MISS), batch $frac of native (its share $share: kept $kept)" \
                "$(le 0.8 "$kept" && echo PASS || echo MISS)"
}
SMS_LIST=${SPATIAL_SMS:-32 72}
for s in $SMS_LIST; do
        o=$(run "$SP" client "$SECS" "$RI" "$s") || { fail "client alone on $s SMs: $o"; continue; }
        echo "result alone on green $s: client p99_ms=$(field p99_ms "$o") ($o)"
        o=$(run "$SP" pair "$SECS" "$RI" "$BI" "$s") || { fail "green $s: $o"; continue; }
        cs=$(sed -n 's/^client sms=\([0-9]*\).*/\1/p' <<<"$o") bs=$(sed -n 's/^batch sms=\([0-9]*\).*/\1/p' <<<"$o")
        [ -n "$cs" ] && [ -n "$bs" ] || { fail "green $s: $o"; continue; }
        judge "green $cs+$bs" "$(grep '^client' <<<"$o")" "$(grep '^batch' <<<"$o")" "$(calc "$bs / ($cs + $bs)")"
done
if command -v nvidia-cuda-mps-control >/dev/null; then
        mkdir -p "$MPSD/pipe" "$MPSD/log"
        export CUDA_MPS_PIPE_DIRECTORY=$MPSD/pipe CUDA_MPS_LOG_DIRECTORY=$MPSD/log
        if timeout 20 nvidia-cuda-mps-control -d; then
                for pq in ${SPATIAL_MPS:-50/100 50/50 45/55}; do
                        p=${pq%/*} q=${pq#*/}
                        LAT_WINDOW="1.5:$(calc "$SECS + 1")" CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$p run "$LAT" batch $((${SECS%.*} + 2)) "$BI" >"$W/b" &
                        bp=$!
                        sleep 1
                        o=$(CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$q run "$SP" client "$SECS" "$RI") || fail "mps $pq client: $o"
                        wait $bp || fail "mps $pq batch: $(cat "$W/b")"
                        # (the batch's rate over the client's window, about)
                        judge "mps $pq" "$o" "$(cat "$W/b")" "$(calc "$p / 100")"
                done
                echo quit | timeout 10 nvidia-cuda-mps-control >/dev/null 2>&1
        else
                fail "mps: nvidia-cuda-mps-control -d did not start: $(tail -3 "$MPSD/log/control.log" 2>/dev/null)"
        fi
else
        echo "# no nvidia-cuda-mps-control: the MPS runs are left out"
fi
echo "spatial: $fails failed"
[ "$fails" = 0 ]
