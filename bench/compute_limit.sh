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
# Prints a line per run as it comes, then the tables. Exits 77 without a GPU, 1 if a run failed.
# Needs BUILD/libgpuslice-vgpu.so and BUILD/gpu-carry/compute_shapes (tests/gpu/prepare.sh).
# CS_TORCH=0 leaves PyTorch out; CS_SHAPES overrides the shape list; CS_PARTS="cap share cost".
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
PARTS=${CS_PARTS:-cap share cost}
fails=0

# rate SHAPE [ENV...]: run the shape (with the environment given), print its rate or nothing
rate() {
        local shape=$1; shift
        local out=$W/out.$BASHPID
        if [ "$shape" = torch ]; then
                env "$@" "$PY" bench/compute_torch.py "$SECS" >"$out" 2>"$out.err"
        else
                env "$@" "$CS" "$shape" "$SECS" >"$out" 2>"$out.err"
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
limited() { # SHAPE L [MODE]: a fresh slice at L %
        rate "$1" LD_PRELOAD="$LIB" GPUSLICE_COMPUTE_LIMIT="$2" GPUSLICE_COMPUTE_MODE="${3:-cap}" \
                GPUSLICE_REGION="$W/region-$1-$2-$RANDOM"
}
frac() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f", 100 * a / b; else print "-" }'; }

echo "== compute limiter ($(date -u +%F), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)), ${SECS} s per run"
if [[ " $PARTS " == *" cap "* ]]; then
        for s in $SHAPES; do
                n1=$(rate "$s") || { fails=$((fails + 1)); continue; }
                echo "  $s native $n1"
                for l in $LIMITS; do
                        r=$(limited "$s" "$l") || { fails=$((fails + 1)); continue; }
                        echo "$s $l $r" >>"$W/cap"
                        echo "  $s L=$l $r"
                done
                n2=$(rate "$s") || { fails=$((fails + 1)); continue; }
                echo "  $s native $n2"
                echo "$s $n1 $n2" >>"$W/native"
        done
        echo
        echo "cap mode: achieved % of native (the mean of the native runs before and after) at L %"
        awk -v limits="$LIMITS" '
        FILENAME ~ /native$/ { base[$1] = ($2 + $3) / 2; drift[$1] = $3 / $2; order[++n] = $1; next }
        { r[$1, $2] = $3 }
        END {
                nl = split(limits, L, " ")
                printf "%-7s", "shape"; for (i = 1; i <= nl; i++) printf " %8s", "L=" L[i]; printf " %9s %8s\n", "max |err|", "drift"
                worst = 0
                for (k = 1; k <= n; k++) {
                        s = order[k]; printf "%-7s", s; m = 0
                        for (i = 1; i <= nl; i++) {
                                if (!((s, L[i]) in r)) { printf " %8s", "-"; continue }
                                a = 100 * r[s, L[i]] / base[s]; e = a - L[i]; if (e < 0) e = -e; if (e > m) m = e
                                printf " %8.1f", a
                        }
                        printf " %9.1f %8.4f\n", m, drift[s]; if (m > worst) worst = m
                }
                printf "worst |achieved - L| = %.1f points (target 2)\n", worst
        }' "$W/native" "$W/cap"
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
echo "runs failed: $fails"
[ "$fails" -eq 0 ]
