# Slices on the simulated GPU for the timing tests (test_turns.sh, test_latency.sh,
# test_latency_handover.sh); sourced once TMP, LIB (the interposer) and FAKE (the fake driver
# libraries) are set.
n=0
# fresh: a new simulated GPU (state, timeline) and arbiter directory for the next case
fresh() {
        n=$((n + 1))
        export FAKEGPU_STATE=$TMP/state.$n FAKEGPU_SHARED_TIMELINE=$TMP/timeline.$n GPUSLICE_ARBITER_DIR=$TMP/arb.$n
        mkdir -p "$GPUSLICE_ARBITER_DIR"
}
# sliced NAME ENV... -- PROBE ARGS: a slice of its own (region NAME) in the background, its output
# in $TMP/NAME
sliced() {
        local name=$1; shift
        env LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$LIB" GPUSLICE_REGION="$TMP/region.$n.$name" "$@" >"$TMP/$name" 2>&1 &
}
