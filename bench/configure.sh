#!/usr/bin/env bash
# configure benchmark: median wall time of `gpuslice configure --compute --utility --device 0`
# (ldconfig included) over N fresh containers, then M configures started at once (all must
# succeed). Each container is an unshare'd process with its own copy of a minimal rootfs
# (bench/lib.sh).
#   bench/configure.sh BUILD [ROUNDS=20] [CONCURRENT=50] [DRIVER_ROOT=/]
set -uo pipefail
BUILD=${1:-build} N=${2:-20} M=${3:-50} DRV=${4:-/}
cd "$(dirname "$0")/.."
GS=$PWD/$BUILD/gpuslice
. bench/lib.sh
for i in $(seq $N); do start "s$i" || { echo "container s$i did not start"; exit 1; }; done
: >"$W/seq.us"; : >"$W/smi.us"; fails=0
for i in $(seq $N); do
        if command -v nvidia-smi >/dev/null; then
                a=$(date +%s%N); nvidia-smi -L >/dev/null; b=$(date +%s%N); ms "$a" "$b" >>"$W/smi.us"
        fi
        a=$(date +%s%N)
        "$GS" --root "$DRV" configure --pid "$(cat "$W/s$i.pid")" --compute --utility --device 0 "$W/rs$i" || fails=$((fails + 1))
        b=$(date +%s%N); ms "$a" "$b" >>"$W/seq.us"
done
echo "configure (compute+utility, 1 GPU, ldconfig included), $N containers one after another:"
echo "  median $(median <"$W/seq.us") ms, max $(max <"$W/seq.us") ms, failures $fails"
[ -s "$W/smi.us" ] && echo "  baseline nvidia-smi -L interleaved: median $(median <"$W/smi.us") ms"
for i in $(seq $M); do start "c$i" || { echo "container c$i did not start"; exit 1; }; done
a=$(date +%s%N)
jobs_=()
for i in $(seq $M); do
        ( s=$(date +%s%N)
          if "$GS" --root "$DRV" configure --pid "$(cat "$W/c$i.pid")" --compute --utility --device 0 "$W/rc$i" 2>"$W/c$i.err"; then
                  e=$(date +%s%N); echo $(( (e - s) / 1000 )) >"$W/c$i.us"
          else echo FAIL >"$W/c$i.us"; fi ) &
        jobs_+=($!)
done
wait "${jobs_[@]}"
b=$(date +%s%N)
cf=$(cat "$W"/c*.us | grep -c FAIL)
echo "$M configures at once: $((M - cf)) succeeded, $cf failed; all done in $(( (b - a) / 1000000 )) ms;" \
        "per configure median $(cat "$W"/c*.us | grep -v FAIL | median) ms, max $(cat "$W"/c*.us | grep -v FAIL | max) ms"
[ "$cf" -gt 0 ] && head -3 "$W"/c*.err
[ "$fails" -eq 0 ] && [ "$cf" -eq 0 ]
