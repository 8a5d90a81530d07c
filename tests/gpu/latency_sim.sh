#!/usr/bin/env bash
# A stand-in for BUILD/gpu-carry/latency (bench/latency.cu) and bench/latency_torch.py on the
# simulated GPU, so that bench/latency.sh runs end to end without a GPU (its cells, configurations,
# windows, PyTorch synchronisation and targets; not the GPU's figures):
#   latency_sim.sh calibrate US | request SECONDS ITERS | batch SECONDS ITERS     (as latency.cu)
#   latency_sim.sh torch serve SECONDS PERIOD_MS | torch train SECONDS          (as latency_torch.py)
# Each runs tests/vgpu's compute-probe ($LAT_SIM_BUILD/tests/vgpu/compute-probe) on the fake
# libcuda ($LAT_SIM_BUILD/tests/fakegpu), with kernels of ITERS microseconds (calibrate answers
# iters=US), and prints latency.cu's (latency_torch.py's) fields. LAT_PRELOAD is the interposer,
# preloaded into the probe alone. The caller sets FAKEGPU_CONFIG, FAKEGPU_SHARED_TIMELINE and
# FAKEGPU_STATE. A PyTorch service is 6 kernels of 60 us per request, the training loop 4 kernels
# of 1 ms per step for at most LAT_SIM_TRAIN_SECONDS (the probe cannot watch for the stop file).
set -uo pipefail
B=${LAT_SIM_BUILD:?}
PROBE=$B/tests/vgpu/compute-probe
num() { sed -n "s/.*\<$1=\([-0-9.]*\).*/\1/p" <<<"$2" | tail -1; }
probe() { # MODE SECONDS KERNEL_US [ENV...]: the probe's output
        local mode=$1 secs=$2 us=$3
        shift 3
        env "$@" LD_LIBRARY_PATH="$B/tests/fakegpu" ${LAT_PRELOAD:+LD_PRELOAD=$LAT_PRELOAD} "$PROBE" "$mode" "$secs" "$us"
}
until_epoch() { # T: sleep until T (seconds since the epoch)
        local d
        d=$(awk -v t="$1" -v n="$EPOCHREALTIME" 'BEGIN { printf "%.3f", t - n }')
        awk -v d="$d" 'BEGIN { exit !(d > 0) }' && sleep "$d"
}
request() { # SECONDS KERNEL_US KERNELS PERIOD_MS
        local o
        o=$(probe request "$1" "$2" PROBE_REQ_KERNELS="$3" PROBE_PERIOD_US="$(awk -v p="$4" 'BEGIN { printf "%d", p * 1000 }')" \
                ${LAT_TIMELINE:+PROBE_TIMELINE="$LAT_TIMELINE"}) ||
                { echo "$o" >&2; exit 1; }
        awk -v r="$(num requests "$o")" -v d="$(num due "$o")" -v a="$(num p50_us "$o")" -v b="$(num p99_us "$o")" -v c="$(num max_us "$o")" \
                'BEGIN { printf "due=%d requests=%d p50_ms=%.3f p99_ms=%.3f max_ms=%.3f\n", d, r, a / 1e3, b / 1e3, c / 1e3 }'
}
sync_ready() { # LAT_SYNC: as latency_torch.py
        [ -n "${LAT_SYNC:-}" ] || return 0
        : >"$LAT_SYNC/ready.$$"
        local i
        for ((i = 0; i < 6000; i++)); do
                [ "$(find "$LAT_SYNC" -name 'ready.*' | wc -l)" -ge "${LAT_SYNC_N:-1}" ] && return 0
                sleep 0.01
        done
        echo "latency_sim: sync timed out" >&2
        exit 1
}
case ${1:-} in
calibrate) echo "iters=$2 blocks=528 kernel_ms=$(awk -v u="$2" 'BEGIN { printf "%.4f", u / 1e3 }')" ;;
request)
        [ -n "${LAT_START_EPOCH:-}" ] && until_epoch "$LAT_START_EPOCH"
        request "$2" "$3" "${LAT_KERNELS:-4}" "${LAT_PERIOD_MS:-20}"
        ;;
batch)
        t0=$EPOCHREALTIME
        case ${LAT_BATCH_KIND:-kernel} in graph) mode=graph ;; coop) mode=coop ;; *) mode="batch" ;; esac
        step=${LAT_STEP:-0}; [ "$step" -gt 0 ] || step=4
        o=$(probe "$mode" "$2" "$3" PROBE_BATCH="$step") || { echo "$o" >&2; exit 1; }
        t1=$EPOCHREALTIME
        # the kernels (work / kernel length) over the run, counted by its overlap with the window
        awk -v w="$(num work_us "$o")" -v us="$3" -v t0="$t0" -v t1="$t1" -v win="${LAT_WINDOW_EPOCH:-}" 'BEGIN {
                a = t0; b = t1
                if (win != "") { split(win, x, ":"); if (x[1] > a) a = x[1]; if (x[2] < b) b = x[2] }
                s = b > a ? b - a : 0; k = w / us * s / (t1 - t0)
                printf "kernels=%d rate=%.2f blocks=528 secs=%.3f\n", k, (s > 0 ? k / s : 0), s }'
        ;;
torch)
        case ${2:-} in
        serve)
                sync_ready
                request "$3" 60 6 "$4"
                ;;
        train)
                sync_ready
                secs=$(awk -v a="$3" -v b="${LAT_SIM_TRAIN_SECONDS:-$3}" 'BEGIN { print (a < b ? a : b) }')
                o=$(probe batch "$secs" 1000 PROBE_BATCH=4) || { echo "$o" >&2; exit 1; }
                awk -v w="$(num work_us "$o")" -v t="$(num wall_us "$o")" \
                        'BEGIN { printf "steps=%d rate=%.2f secs=%.3f kernel_ms=1.000\n", w / 4000, w / 4000 / (t / 1e6), t / 1e6 }'
                ;;
        *) exit 2 ;;
        esac
        ;;
*)
        echo "usage: latency_sim.sh calibrate US | request SECONDS ITERS | batch SECONDS ITERS | torch serve|train ..." >&2
        exit 2
        ;;
esac
