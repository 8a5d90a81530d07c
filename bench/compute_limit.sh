#!/usr/bin/env bash
# The compute limiter on a real GPU:  bench/compute_limit.sh BUILD [SECONDS=3]
#   1. cap: every shape of bench/compute_shapes.cu (short, long, tiny, graph, coop) and
#      bench/compute_torch.py under GPUSLICE_COMPUTE_LIMIT=L (CS_LIMITS, default "10 20 30 50 80"),
#      each divided by the same shape's native rate in this run (native before and after the
#      limited runs: the mean is the baseline, their ratio the drift). Target: |achieved - L| <= 2.
#   2. share: two slices (separate regions) at 30 % and 70 % running `short` together, in share
#      mode and in cap mode (they take turns through the GPU's arbiter file in /dev/shm), and a
#      30 % share-mode slice alone (target: >= 95 % of native).
#   3. cost: `half` (a GPU busy about half the time) natively and under a 80 % cap it never
#      reaches, paired (CS_PAIRS rounds, alternating); and `tiny` with the interposer preloaded but
#      no compute limit (nothing intercepted).
#   4. mps: cap mode through a real MPS daemon (`gpuslice mps start`, BUILD/gpuslice): short,
#      long and tiny at every L, and two slices at 30 % and 70 % together.
#   5. runtimes: short, graph and coop at 30 % under every other CUDA runtime prepare.sh built
#      (gpu-carry/compute_shapes-11.8-static, -shared, -ptds, 12.4 likewise), each against its
#      own native rate.
#   6. hami: HAMi-core's own limiter (BUILD/gpu-carry/hami/libvgpu.so, carried there by
#      GS_PREPARE_HAMI=/path/to/libvgpu.so tests/gpu/prepare.sh) on the same shapes and limits as
#      cap, measured the same way: LD_PRELOAD=libvgpu.so CUDA_REDIRECT=libvgpu.so
#      CUDA_DEVICE_SM_LIMIT=L GPU_CORE_UTILIZATION_POLICY=force and a fresh
#      CUDA_DEVICE_MEMORY_SHARED_CACHE file per run (HAMi takes its limits from the environment
#      only when that file is created). Each run is bounded by SECONDS + CS_HAMI_TIMEOUT (default
#      60) seconds: a run HAMi hangs or kills is a FAIL cell. In the default parts only when the
#      library is there.
# Native runs also sample NVML's GPU utilization (nvidia-smi, every 100 ms): "busy" is that native
# fraction. `tiny`, whose native rate drifts run to run, is measured in CS_TINY_ROUNDS (default 3)
# native/limited pairs per L, and its cell is the median of the paired ratios; CS_TINY_PIN=CPUS
# pins those runs (taskset), natives and limited alike (a launch-bound rate moves with the cores it
# lands on). On the H100 it takes 12 pinned rounds to resolve that cell to a point.
# Prints a line per run as it comes, then the tables. Exits 77 without a GPU, 1 if a run failed.
# Needs BUILD/libgpuslice-vgpu.so and BUILD/gpu-carry/compute_shapes (tests/gpu/prepare.sh).
# CS_TORCH=0 leaves PyTorch out; CS_SHAPES overrides the shape list; CS_PARTS="cap share cost mps
# runtimes" (and hami when BUILD/gpu-carry/hami/libvgpu.so exists; also overhead, loaded on request).
set -uo pipefail
BUILD=${1:-build} SECS=${2:-3}
cd "$(dirname "$0")/.."
if [ ! -e /dev/nvidiactl ] || ! command -v nvidia-smi >/dev/null 2>&1; then
        echo "SKIP: no NVIDIA GPU here: compute limiter not measured"
        exit 77
fi
CS=$PWD/$BUILD/gpu-carry/compute_shapes LIB=$PWD/$BUILD/libgpuslice-vgpu.so PY=${PYTHON:-python3}
[ -x "$CS" ] && [ -e "$LIB" ] || { echo "compute_limit: needs $CS and $LIB (tests/gpu/prepare.sh $BUILD)"; exit 1; }
W=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$W"' EXIT
LIMITS=${CS_LIMITS:-10 20 30 50 80}
SHAPES=${CS_SHAPES:-short long tiny graph coop torch}
[ "${CS_TORCH:-1}" = 1 ] || SHAPES=${SHAPES//torch/}
HAMI=$PWD/$BUILD/gpu-carry/hami/libvgpu.so
PARTS=${CS_PARTS:-cap share cost mps runtimes}
[ -n "${CS_PARTS:-}" ] || [ ! -e "$HAMI" ] || PARTS="$PARTS hami"
TINY_PIN=${CS_TINY_PIN:+taskset -c $CS_TINY_PIN}
fails=0

# rate SHAPE [ENV...]: run the shape (with the environment given), print its rate or nothing;
# TMO, when set, is a command prefix that bounds the run (timeout ...)
rate() {
        local shape=$1; shift
        local out=$W/out.$BASHPID
        if [ "$shape" = torch ]; then
                ${TMO:-} env "$@" "$PY" bench/compute_torch.py "$SECS" >"$out" 2>"$out.err"
        else
                ${TMO:-} env "$@" ${PIN:-} "$CS" "$shape" "$SECS" >"$out" 2>"$out.err"
        fi
        local rc=$? r
        r=$(sed -n 's/^shape=.* rate=\([0-9.]*\).*/\1/p' "$out" | tail -1)
        if [ $rc -ne 0 ] || [ -z "$r" ]; then
                echo "FAIL $shape $* (exit $rc)" >&2
                tail -n 5 "$out.err" | sed 's/^/    /' >&2
                return 1
        fi
        echo "$r"
}
# native_busy SHAPE: its native rate, and NVML's mean GPU utilization over the run ("RATE BUSY")
native_busy() {
        nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits -lms 100 >"$W/util" 2>/dev/null &
        local smi=$! r
        r=$(rate "$1")
        local rc=$?
        kill $smi 2>/dev/null; wait $smi 2>/dev/null
        [ $rc = 0 ] || return 1
        echo "$r $(awk '$1 > 0 { s += $1; n++ } END { if (n) printf "%.1f", s / n; else print 0 }' "$W/util")"
}
limited() { # SHAPE L [MODE]: a fresh slice at L %
        rate "$1" LD_PRELOAD="$LIB" GPUSLICE_COMPUTE_LIMIT="$2" GPUSLICE_COMPUTE_MODE="${3:-cap}" \
                GPUSLICE_REGION="$W/region-$1-$2-$RANDOM"
}
frac() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f", 100 * a / b; else print "-" }'; }

echo "== compute limiter ($(date -u +%F), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)), ${SECS} s per run"
# limiter_part NAME RUNNER TITLE: every shape at every L through RUNNER (a function taking
# SHAPE L and printing a rate, like `limited`), each divided by the shape's native rate in this
# run (native before and after the shape's limited runs: the mean is the baseline, their ratio
# the drift; `tiny` in paired rounds). A run that fails or times out is a FAIL cell.
limiter_part() {
        local part=$1 runner=$2 title=$3 s l n1 n2 nb busy r a b i
        : >"$W/$part" && : >"$W/native-$part"
        for s in $SHAPES; do
                nb=$(native_busy "$s") || { fails=$((fails + 1)); continue; }
                n1=${nb% *} busy=${nb#* }
                echo "  $s native $n1 (GPU busy $busy %)"
                for l in $LIMITS; do
                        if [ "$s" = tiny ]; then # paired rounds: the median of limited/native
                                : >"$W/tiny"
                                for i in $(seq "${CS_TINY_ROUNDS:-3}"); do
                                        a=$(PIN=$TINY_PIN rate tiny) && b=$(PIN=$TINY_PIN $runner tiny "$l") &&
                                                echo "$a $b" >>"$W/tiny" || fails=$((fails + 1))
                                done
                                r=$(awk '{ print $2 / $1 }' "$W/tiny" | sort -g | awk -v n1="$n1" '{ q[NR] = $1 }
                                        END { if (!NR) exit 1; m = NR % 2 ? q[(NR + 1) / 2] : (q[NR / 2] + q[NR / 2 + 1]) / 2; printf "%.2f", m * n1 }') ||
                                        r=FAIL
                                echo "  tiny L=$l pairs: $(awk '{ printf "%.3f ", $2 / $1 }' "$W/tiny")-> $r (as a rate on the first native)"
                        else
                                r=$($runner "$s" "$l") || { fails=$((fails + 1)); r=FAIL; }
                                echo "  $s L=$l $r"
                        fi
                        echo "$s $l $r" >>"$W/$part"
                done
                n2=$(rate "$s") || { fails=$((fails + 1)); continue; }
                [ "$s" = tiny ] && n2=$n1 # its cells are already paired ratios
                echo "  $s native $n2"
                echo "$s $n1 $n2 $busy" >>"$W/native-$part"
        done
        echo
        echo "$title"
        awk -v limits="$LIMITS" '
        FILENAME ~ /native-/ { base[$1] = ($2 + $3) / 2; drift[$1] = $3 / $2; busy[$1] = $4; order[++n] = $1; next }
        { r[$1, $2] = $3 }
        END {
                nl = split(limits, L, " ")
                printf "%-7s", "shape"; for (i = 1; i <= nl; i++) printf " %8s", "L=" L[i]; printf " %9s %8s %6s\n", "max |err|", "drift", "busy"
                worst = 0
                for (k = 1; k <= n; k++) {
                        s = order[k]; printf "%-7s", s; m = 0
                        for (i = 1; i <= nl; i++) {
                                if (!((s, L[i]) in r)) { printf " %8s", "-"; continue }
                                if (r[s, L[i]] == "FAIL") { printf " %8s", "FAIL"; continue }
                                a = 100 * r[s, L[i]] / base[s]; e = a - L[i]; if (e < 0) e = -e; if (e > m) m = e
                                printf " %8.1f", a
                        }
                        printf " %9.1f %8.4f %6s\n", m, drift[s], busy[s]; if (m > worst) worst = m
                }
                printf "worst |achieved - L| = %.1f points (target 2)\n", worst
        }' "$W/native-$part" "$W/$part"
}
if [[ " $PARTS " == *" cap "* ]]; then
        limiter_part cap limited "cap mode: achieved % of native (the mean of the native runs before and after) at L %"
fi
if [[ " $PARTS " == *" hami "* ]]; then
        # HAMi-core's token bucket, the same shapes and limits, each run a fresh container's view:
        # its own shared-region cache file (HAMi captures the limits when the file is created),
        # FORCE so its monitor-driven switch cannot turn throttling off, and a time limit, so that
        # a run HAMi hangs is a FAIL cell, not a hung benchmark. Its log lines go to stderr, which
        # rate() keeps apart from the rate it parses.
        echo
        if [ ! -e "$HAMI" ]; then
                echo "FAIL hami: no $HAMI (GS_PREPARE_HAMI=/path/to/libvgpu.so tests/gpu/prepare.sh $BUILD)"
                fails=$((fails + 1))
        else
                echo "HAMi-core: $HAMI"
                hami_limited() {
                        TMO="timeout -k 10 $((${SECS%.*} + ${CS_HAMI_TIMEOUT:-60}))" rate "$1" LD_PRELOAD="$HAMI" \
                                CUDA_REDIRECT="$HAMI" CUDA_DEVICE_SM_LIMIT="$2" GPU_CORE_UTILIZATION_POLICY=force \
                                CUDA_DEVICE_MEMORY_SHARED_CACHE="$W/hami-$1-$2-$RANDOM.cache"
                }
                limiter_part hami hami_limited "HAMi-core (libvgpu.so, GPU_CORE_UTILIZATION_POLICY=force): achieved % of native at CUDA_DEVICE_SM_LIMIT=L"
        fi
fi

if [[ " $PARTS " == *" share "* ]]; then
        echo
        n=$(rate short) || fails=$((fails + 1))
        for mode in share cap; do
                limited short 30 $mode >"$W/s30" &
                limited short 70 $mode >"$W/s70" &
                wait
                a=$(cat "$W/s30") b=$(cat "$W/s70")
                echo "$mode $(frac "$a" "$n") $(frac "$b" "$n")" >>"$W/pair"
        done
        alone=$(limited short 30 share) || fails=$((fails + 1))
        echo "two slices on one GPU (short; native $n), each in its own slice, together:"
        awk '{ printf "  %-5s 30 %% and 70 %%: %s %% and %s %% of native (target 30/70 +- 3)\n", $1, $2, $3 }' "$W/pair"
        echo "  share 30 % alone: $(frac "$alone" "$n") % of native (target >= 95)"
fi

if [[ " $PARTS " == *" cost "* ]]; then
        echo
        : >"$W/pairs"
        : >"$W/pairs0"
        for i in $(seq "${CS_PAIRS:-3}"); do
                a=$(rate half) && b=$(limited half 80) && echo "$a $b" >>"$W/pairs" || fails=$((fails + 1))
                a=$(rate tiny) && b=$(rate tiny LD_PRELOAD="$LIB" GPUSLICE_REGION="$W/r-unlimited-$i") &&
                        echo "$a $b" >>"$W/pairs0" || fails=$((fails + 1))
        done
        show() { awk -v t="$1" '{ printf "  %s %s  ratio %.4f\n", $1, $2, $2 / $1; s += $2 / $1; n++ } END { if (n) printf "  mean ratio %.4f (%s)\n", s / n, t }' "$2"; }
        echo "cost: half (busy ~50 %) under an 80 % cap it never reaches, paired rounds (native, limited):"
        show "target >= 0.99" "$W/pairs"
        echo "cost: tiny (launch-bound) with the interposer but no compute limit (native, preloaded):"
        show "nothing intercepted on the launch path" "$W/pairs0"
fi
if [[ " $PARTS " == *" mps "* ]]; then
        echo
        GS=$PWD/$BUILD/gpuslice MR=$W/mps
        if ! command -v nvidia-cuda-mps-control >/dev/null || ! "$GS" mps start --mps-root "$MR" >"$W/mps.out" 2>&1; then
                echo "FAIL mps: no MPS daemon: $(cat "$W/mps.out" 2>/dev/null)"
                fails=$((fails + 1))
        else
                cat "$W/mps.out"
                P=$(ls -d "$MR"/*/pipe | head -1)
                mpsl() { rate "$1" LD_PRELOAD="$LIB" GPUSLICE_COMPUTE_LIMIT="$2" GPUSLICE_MPS_PIPE_DIRECTORY="$P" \
                        GPUSLICE_REGION="$W/region-mps-$1-$2-$RANDOM"; }
                : >"$W/mps.table"
                # compute_shapes sizes its grids by the SM count it sees (16 blocks per SM): under
                # MPS a kernel does seen/native of the native work, so its rate is scaled by that.
                lastsms() { sed -n 's/.* sms=\([0-9]*\).*/\1/p' "$(ls -t "$W"/out.* | grep -v '\.err$' | head -1)"; }
                work() { awk -v r="$1" -v s="$2" -v n="$3" -v shape="$4" 'BEGIN { printf "%.4f", shape == "torch" || shape == "tiny" || s == "" ? r : r * s / n }'; }
                for s in ${CS_MPS_SHAPES:-short long tiny}; do
                        n=$(rate "$s") || { fails=$((fails + 1)); continue; }
                        nsms=$(lastsms)
                        line="$s"
                        for l in $LIMITS; do
                                r=$(mpsl "$s" "$l") || { fails=$((fails + 1)); r=0; }
                                sms=$(lastsms)
                                line="$line $(frac "$(work "$r" "$sms" "$nsms" "$s")" "$n")/$sms"
                        done
                        echo "$line" | tee -a "$W/mps.table"
                done
                n=$(rate short)
                nsms=$(lastsms)
                mpsl short 30 >"$W/m30" & mpsl short 70 >"$W/m70" & wait
                echo "cap mode through MPS: achieved % of native work / SMs the process saw, at L = $LIMITS"
                cat "$W/mps.table"
                a=$(work "$(cat "$W/m30")" "$(( nsms * 30 / 100 / 2 * 2 ))" "$nsms" short)
                b=$(work "$(cat "$W/m70")" "$(( nsms * 70 / 100 / 2 * 2 ))" "$nsms" short)
                echo "  two slices through MPS, 30 % and 70 % together: $(frac "$a" "$n") % and $(frac "$b" "$n") % of native work (target 30/70 +- 3)"
                "$GS" mps status --mps-root "$MR"
                "$GS" mps stop --mps-root "$MR"
        fi
fi
if [[ " $PARTS " == *" overhead "* ]]; then
        # What a stream loses to the limiter itself: CS_OVERHEAD_SHAPE (default tiny, launch-bound;
        # half: a launch and a synchronization per kernel) under caps of CS_OVERHEAD_LIMITS (99 80
        # 50 10: each should give L % of native; half uses about half the GPU, so a cap above that
        # is its cost alone) with the interposer built here and with every variant in
        # BUILD/lib-variants/ (the same code built with other -DGS_LIMITER_* periods), in paired
        # rounds between two native runs.
        echo
        : >"$W/ovh"
        OS=${CS_OVERHEAD_SHAPE:-tiny}
        # tiny pinned to two CPUs (CS_TINY_PIN, here 2,3 unless set)
        [ "$OS" = tiny ] && PIN="taskset -c ${CS_TINY_PIN:-2,3}"
        for i in $(seq "${CS_OVERHEAD_ROUNDS:-5}"); do
                a=$(rate "$OS") || { fails=$((fails + 1)); continue; }
                row=""
                for lib in "$LIB" "$PWD/$BUILD"/lib-variants/*.so; do
                        [ -e "$lib" ] || continue
                        for l in ${CS_OVERHEAD_LIMITS:-99 80 50 10}; do
                                r=$(LIB=$lib limited "$OS" "$l") || r=0
                                row="$row ${lib##*/}@$l=$r"
                        done
                done
                b=$(rate "$OS") || { fails=$((fails + 1)); continue; }
                echo "$a $b$row" | tee -a "$W/ovh"
        done
        PIN=
        echo "overhead: $OS under a cap, % of native (paired with the mean of the natives around it; medians):"
        awk '{ n = ($1 + $2) / 2; for (i = 3; i <= NF; i++) { split($i, kv, "="); printf "%s %.1f\n", kv[1], 100 * kv[2] / n } }' "$W/ovh" |
                sort -k1,1 -k2,2g | awk '{ v[$1] = v[$1] " " $2; c[$1]++; x[$1, c[$1]] = $2 }
                END { for (k in c) { m = c[k]; printf "  %-36s %6.1f  (%s)\n", k, m % 2 ? x[k, (m + 1) / 2] : (x[k, m / 2] + x[k, m / 2 + 1]) / 2, substr(v[k], 2) } }' | sort
fi
if [[ " $PARTS " == *" loaded "* ]]; then
        # A cap on GPU time is a cap on throughput at the clock the GPU runs. Alone under a cap the
        # GPU idles part of the time and boosts; beside another slice that keeps it busy it runs at
        # the clock it runs natively. torch at L % alone and beside `short` capped at 100 - L %
        # (started first, running longer), each with the mean SM clock and power while the GPU was
        # busy (samples at >= 90 % utilization: idle samples would hide the clock the work ran at),
        # and the share of those samples with NVML's SW power cap reason set (0x4); then torch at L %
        # and torch at 100 - L % together.
        echo
        clk_start() { nvidia-smi --query-gpu=clocks.sm,power.draw,utilization.gpu,clocks_event_reasons.active \
                --format=csv,noheader,nounits -lms 50 >"$W/clk" 2>/dev/null & CLK=$!; }
        clk_stop() { kill $CLK 2>/dev/null; wait $CLK 2>/dev/null
                awk -F', ' '$3 >= 90 { c += $1; p += $2; n++; if (index("4567cdefCDEF", substr($4, length($4))) > 0) k++ }
                        END { if (n) printf "%d MHz %d W, power-capped %d %% of busy samples", c / n, p / n, 100 * k / n; else print "-" }' "$W/clk"; }
        for l in ${CS_LOADED_LIMITS:-80 50}; do
                clk_start; n1=$(rate torch) || n1=0; cn=$(clk_stop)
                clk_start; a=$(limited torch "$l") || a=0; ca=$(clk_stop)
                (SECS=$((${SECS%.*} + 10)) limited short $((100 - l)) >/dev/null) &
                bg=$!
                sleep 2
                clk_start; b=$(limited torch "$l") || b=0; cb=$(clk_stop)
                wait $bg
                # beside a second torch slice capped at 100 - L %, both started together: the GPU
                # as busy, and drawing as much power, as one torch process natively
                clk_start
                limited torch "$l" >"$W/pair-a" & pa=$!
                limited torch $((100 - l)) >"$W/pair-b" & pb=$!
                wait $pa || fails=$((fails + 1)); wait $pb || fails=$((fails + 1))
                cp=$(clk_stop)
                n2=$(rate torch) || n2=0
                n=$(awk -v a="$n1" -v b="$n2" 'BEGIN { print (a + b) / 2 }')
                echo "  torch L=$l: alone $(frac "$a" "$n") % ($ca), beside short at $((100 - l)) %: $(frac "$b" "$n") % ($cb); native $n1, $n2 ($cn)"
                echo "  torch L=$l beside torch at $((100 - l)) %: $(frac "$(cat "$W/pair-a")" "$n") % and $(frac "$(cat "$W/pair-b")" "$n") % ($cp)"
        done
fi
if [[ " $PARTS " == *" runtimes "* ]] && ls "$CS"-* >/dev/null 2>&1; then
        echo
        echo "cap 30 % under each CUDA runtime (gpu-carry/compute_shapes-VERSION-LINKING): % of native, per shape"
        for b in "$CS"-*; do
                [ -x "$b" ] || continue
                line="  ${b##*/compute_shapes-}:"
                for s in ${CS_RT_SHAPES:-short graph coop}; do
                        if n=$(CS=$b rate "$s") && r=$(CS=$b limited "$s" 30); then
                                line="$line $s $(frac "$r" "$n")"
                        else
                                fails=$((fails + 1)) line="$line $s failed"
                        fi
                done
                echo "$line"
        done
fi
echo "runs failed: $fails"
[ "$fails" -eq 0 ]
