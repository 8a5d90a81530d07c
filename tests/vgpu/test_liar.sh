#!/usr/bin/env bash
# A neighbour that lies in its arbiter record (issue 31): everything a container's processes can
# write there (class high, owed, virtual time 0, weight 100 %, a lease taken by a cut and renewed,
# always wanting), beside an honest share-50 slice on the simulated GPU for 10 s. Its host record
# (what the hook writes for a container: share 50, normal, share mode) it cannot change. The liar
# runs no GPU work: what the honest slice gets is the arbiter's doing alone. The honest slice must
# keep at least 0.9 of its share (0.45 of the GPU), less what CPU stalls of its own run cost it.
# In a sanitizer build (GS_SANITIZE, from meson.build; the interposer is never instrumented, the
# liar, the probe and the simulated GPU are) the first liar runs; the other two, the same liar with
# other hold and free times, are skipped ("skip - ...: timing accuracy is checked in the normal build").
set -uo pipefail
SRC=${GS_SOURCE_DIR:?} BUILD=${GS_BUILD_DIR:?}
unset LD_LIBRARY_PATH LD_PRELOAD
LIB=$BUILD/libgpuslice-vgpu.so
PROBE=$BUILD/tests/vgpu/compute-probe
LIAR=$BUILD/tests/vgpu/arb-liar
FAKE=$BUILD/tests/fakegpu
TMP=$(mktemp -d /tmp/gs-liar.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$TMP"' EXIT
export FAKEGPU_CONFIG=$SRC/tests/fakegpu/configs/1gpu.conf
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0
UUID=GPU-6b1fe2a6-3b64-d9c1-4a3e-5f0b2c7d8e91
. "$SRC/tests/lib/check.sh"
. "$SRC/tests/lib/probe.sh"
SECONDS_RUN=${GS_LIAR_SECONDS:-10}
n=0
# liar_run: the liar (LIAR_HOLD, LIAR_FREE) and the honest slice side by side for SECONDS_RUN, the
# honest slice's report in $TMP/honest (probe_case's FN: a run too disturbed to judge is repeated)
liar_run() {
        n=$((n + 1))
        export FAKEGPU_STATE=$TMP/state.$n FAKEGPU_SHARED_TIMELINE=$TMP/timeline.$n GPUSLICE_ARBITER_DIR=$TMP/arb.$n
        mkdir -p "$GPUSLICE_ARBITER_DIR"
        LIAR_HOST=5000,1,1 "$LIAR" "$GPUSLICE_ARBITER_DIR" $UUID liar $((SECONDS_RUN + 1)) "$LIAR_HOLD" "$LIAR_FREE" >"$TMP/liar.$n" 2>&1 &
        local l=$!
        sleep 0.2
        env LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$LIB" GPUSLICE_REGION="$TMP/region.$n" GPUSLICE_ARBITER_NAME=honest \
                GPUSLICE_COMPUTE_LIMIT=50 GPUSLICE_COMPUTE_MODE=share GPUSLICE_LOG_LEVEL=1 \
                "$PROBE" kernel "$SECONDS_RUN" 2000 >"$TMP/honest.$n" 2>&1
        wait $l
        cp "$TMP/honest.$n" "$TMP/honest"
        local frac lo
        frac=$(probe_field fraction "$TMP/honest")
        lo=$(probe_lo 0.45 "$TMP/honest")
        PROBE_SAID="the honest share-50 slice got ${frac:-nothing} of the GPU over ${SECONDS_RUN} s (want >= $lo)"
        [ -n "$frac" ] && awk -v f="$frac" -v lo="$lo" 'BEGIN { exit !(f >= lo) }'
}
# liar_case NAME HOLD_MS FREE_MS [timing: the normal build only]
liar_case() {
        [ "${4:-}" = timing ] && sanitized_skip "$1" && return 0
        LIAR_HOLD=$2 LIAR_FREE=$3
        probe_case "$1" liar_run "$TMP/honest" || tail -n 4 "$TMP/honest.$n" "$TMP/liar.$n"
}

liar_case "a liar that holds the GPU 90 ms of every 100" 90 10
liar_case "a liar that wants the GPU first in line all the time and never takes it" 0 1 timing
liar_case "a liar that holds the GPU all the time" 1000 0 timing
finish
