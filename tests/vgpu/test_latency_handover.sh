#!/usr/bin/env bash
# Issue 32, item 3 on the simulated GPU: a turn that a slice's launcher takes while the slice's
# ticker naps is handed over as soon as the slice's work is done, not when the nap ends.
#
# Two equal latency-bound slices (50/50, share and cap): client A, a request of four 150 us kernels
# every 8 ms; client B, eight 150 us kernels every 7 ms; 2 s each, first without slicing, then
# sliced, on one simulated GPU (FAKEGPU_SHARED_TIMELINE). A's ticker naps 5 ms at a time once its
# request is done (about 1 ms after its last kernel): with an 8 ms period its next request comes
# about a millisecond into a nap, and its launcher takes the turn itself. Before, that turn stayed
# with A, idle, until the nap ended (about 3 ms after A's request was done), and B's request, which
# came meanwhile and could not cut it (B is not waking in the middle of its own request), waited
# for it. Now the launcher wakes its ticker (limiter.c: wake_ticker), which hands the turn over
# about a tick after A's work is done. The clients wait for their kernels with events
# (cuEventSynchronize, PROBE_REQ_WAIT=event): the hand-back at a request's end (limiter.c,
# done_at: vgpu_latency_handback), which learns from the application's stream waits and covers
# this case too where it has them, is then out of play, and the launcher's wake is what is checked
# (with stream waits, mutation takewake survived it).
#
# The check: the share of B's requests that took more than 2 ms longer than B's median without
# slicing stays at most 8 %: each request's latency less the time B's launching thread waited for
# a CPU during it (PROBE_TIMELINE's RUN field: B's own stalls on a loaded machine are not the
# product's), and a run too disturbed to judge (off its CPU > 15 %, or steal over 0.002 of the
# machine's CPUs, which no thread's waits show) is repeated (probe_case, PROBE_CASE_TAIL); one
# failed with steal in every run was not judged: a skip line saying so.
# Measured on the 2-core VM with one CPU kept busy (`yes`), of ~275 requests a run:
#   wake on (this code): share 1-3, cap 2-3 (5 runs); in the ASan build beside vgpu_turns and
#     vgpu_compute, share 2-4, cap 2-6 (4 runs; one of them with B off its CPU 21 %: 4);
#   wake off (mutation takewake): share 36-45, cap 44-55; ASan beside the tests, share 38-46,
#     cap 38-42 (13-20 %; the disturbed runs that were repeated 34-46: they failed too).
# The bound (8 %, ~22) is over 3 x the worst seen with the wake and 1.6 x below the least without.
# By raw latency the split is the same, but a stall of B's (off its CPU 5-15 %) alone moved the
# count to 24-42, sliced or not; the mean of medians of eight equal slices (branch n2-lat2's
# check) moved with the load across the old code's figures: 2.5-5.6 ms against 6.4-7.3 ms.
# Issue 32's target (p99 within 1.1 x no slicing) is the GPU host's (tests/gpu, bench/latency.sh).
# In a sanitizer build (GS_SANITIZE, from meson.build; the interposer is never instrumented) share
# mode runs and cap mode, the same hand-over, is skipped: "skip - ...: timing accuracy is checked in
# the normal build".
set -uo pipefail
SRC=${GS_SOURCE_DIR:?} BUILD=${GS_BUILD_DIR:?}
unset LD_LIBRARY_PATH LD_PRELOAD
LIB=$BUILD/libgpuslice-vgpu.so
PROBE=$BUILD/tests/vgpu/compute-probe
FAKE=$BUILD/tests/fakegpu
TMP=$(mktemp -d /tmp/gs-handover.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$TMP"' EXIT
export FAKEGPU_CONFIG=$SRC/tests/fakegpu/configs/1gpu.conf FAKEGPU_NVML_UTIL=timeline
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0
. "$SRC/tests/lib/check.sh"
. "$SRC/tests/lib/probe.sh"
. "$SRC/tests/vgpu/sim_slices.sh" # fresh, sliced

# pair MODE (none: no slicing): the two clients; reports in $TMP/a.MODE, $TMP/b.MODE, B's requests
# in $TMP/b.MODE.q
pair() {
        fresh
        local lim="" a
        [ "$1" != none ] && lim="GPUSLICE_COMPUTE_LIMIT=50 GPUSLICE_COMPUTE_MODE=$1"
        sliced a.$1 PROBE_PERIOD_US=8000 PROBE_REQ_KERNELS=4 PROBE_REQ_WAIT=event $lim "$PROBE" request 2 150
        a=$!
        sliced b.$1 PROBE_PERIOD_US=7000 PROBE_REQ_KERNELS=8 PROBE_REQ_WAIT=event PROBE_TIMELINE="$TMP/b.$1.q" $lim "$PROBE" request 2 150
        wait $a $!
}

# (RUN latencies of FILE's requests in us, sorted)
runs() { awk '$1 == "q" && NF >= 5 { printf "%d\n", $5 / 1000 }' "$1" | sort -n; }

# handover MODE (probe_case's FN): one unsliced and one sliced run, judged
MODE=
handover() {
        pair none
        pair "$MODE"
        local base cnt tot p90 b90
        base=$(runs "$TMP/b.none.q" | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }')
        read -r cnt tot p90 < <(runs "$TMP/b.$MODE.q" | awk -v b="${base:-0}" '{ v[NR] = $1; if ($1 > b + 2000) c++ }
                END { if (NR) print c + 0, NR, v[int(NR * 0.9)] }')
        b90=$(runs "$TMP/b.none.q" | awk '{ v[NR] = $1 } END { if (NR) print v[int(NR * 0.9)] }')
        PROBE_SAID="${cnt:-none} of ${tot:-none} of B's requests over its unsliced median ${base:-none} us + 2 ms (want <= 8 %;"
        PROBE_SAID+=" p90 ${p90:-none} us, unsliced ${b90:-none}; B off its CPU $(probe_off "$TMP/b.$MODE"))"
        [ -n "$base" ] && [ -n "$cnt" ] && [ "$tot" -ge 100 ] && [ $((cnt * 100)) -le $((tot * 8)) ]
}
for MODE in share cap; do
        [ $MODE = cap ] && sanitized_skip "a turn taken while the ticker naps is handed over when the work is done, $MODE 50/50" && continue
        PROBE_CASE_TAIL=1 probe_case "a turn taken while the ticker naps is handed over when the work is done, $MODE 50/50" handover \
                "$TMP/a.none" "$TMP/b.none" "$TMP/a.$MODE" "$TMP/b.$MODE" ||
                tail -n 2 "$TMP/a.$MODE" "$TMP/b.$MODE"
done

finish
