#!/usr/bin/env bash
# bench/latency.sh without a GPU (issue 32): the GPU host gets one call for it, so its cells, rows and
# targets are checked here first.
#   1. on the simulated GPU (tests/gpu/latency_sim.sh: compute-probe on the fake libcuda, the real
#      interposer in share, cap and high cells): shapes two (two batches coming and going), equal2
#      and torch (the PyTorch protocol: processes wait for each other, the training loop stops when
#      the service is done) at 1 s: every cell ran, one row per client and configuration, the
#      batches' fractions, the issue's targets for each, and the count line agrees with them;
#   2. with a stand-in of fixed answers: a sliced client slower than the unsliced one is a MISS,
#      faster a PASS (the judge can fail both ways); where no slicing fell behind (served fewer
#      than due) both sides are judged from the due times; a failing process is a FAIL and exit 1,
#      and an unknown shape is a FAIL. These run beside 1 (bash and sleep only, while 1's checks judge no
#      timing), each bench/latency.sh in a W directory of its own.
#   In a sanitizer build (GS_SANITIZE, from meson.build; the interposer is never instrumented, the
#   probe and the simulated GPU are) 1 runs shape two alone (every configuration: alone, none,
#   share, cap, high) and skips equal2 and torch, which run the same programs in other patterns
#   ("skip - ...: timing accuracy is checked in the normal build").
#   GS_SOURCE_DIR=. GS_BUILD_DIR=build tests/gpu/test_latency_script.sh   (meson test gpu_latency_script)
set -uo pipefail
SRC=${GS_SOURCE_DIR:?} BUILD=${GS_BUILD_DIR:?}
unset LD_LIBRARY_PATH LD_PRELOAD
. "$SRC/tests/lib/check.sh"
TMP=$(mktemp -d /tmp/gs-latscript.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$TMP"' EXIT
SIM=$SRC/tests/gpu/latency_sim.sh

# 2. fixed answers (started first, in the background, read after 1): STUB_SLOW=1 makes a sliced client's p99 5 ms (unsliced 2), STUB_FAIL=1 a batch fail,
# STUB_BEHIND=1 the unsliced client fall behind (40 of 50 served, 900 ms at p99 from the due times; sliced: 5 and 6 ms)
cat >"$TMP/stub" <<'EOF'
#!/usr/bin/env bash
case $1 in
calibrate) echo "iters=$2 blocks=528 kernel_ms=0.5" ;;
request) p=1; [ -n "${LAT_PRELOAD:-}" ] && p=$([ "${STUB_SLOW:-0}" = 1 ] && echo 5 || echo 1.5)
        [ -z "${LAT_PRELOAD:-}" ] && [ -n "${LAT_START_EPOCH:-}" ] && p=2
        if [ "${STUB_BEHIND:-0}" = 1 ] && [ "$p" = 2 ]; then echo "due=50 requests=40 p50_ms=0.5 p99_ms=2 max_ms=2 p99_due_ms=900 max_due_ms=950"
        elif [ "${STUB_BEHIND:-0}" = 1 ] && [ -n "${LAT_PRELOAD:-}" ]; then echo "due=50 requests=50 p50_ms=0.5 p99_ms=5 max_ms=5 p99_due_ms=6 max_due_ms=7"
        else echo "due=50 requests=50 p50_ms=0.5 p99_ms=$p max_ms=$p p99_due_ms=7.25"; fi ;;
batch) [ "${STUB_FAIL:-0}" = 1 ] && [ -n "${LAT_PRELOAD:-}" ] && { echo "stub: batch failed" >&2; exit 1; }
        sleep "$2"; echo "kernels=100 rate=100 blocks=528 secs=1" ;;
esac
EOF
chmod +x "$TMP/stub"
# stub NAME: bench/latency.sh on the stand-in, its output in $TMP/NAME, its exit status in $TMP/NAME.rc
stub() {
        LAT_SIMULATED=1 LAT_LEAD_SECONDS=0.5 LAT_BASE_SECONDS=0.2 LAT_BIN=$TMP/stub LAT_SHAPES=${SHAPE:-req4} LAT_CONFIGS="alone none cap" bash "$SRC/bench/latency.sh" "$BUILD" 0.2 >"$TMP/$1" 2>&1
        echo $? >"$TMP/$1.rc"
}
stub fast &
stubs=($!)
STUB_SLOW=1 stub slow &
stubs+=($!)
STUB_FAIL=1 stub failed &
stubs+=($!)
SHAPE=nosuch stub unknown &
stubs+=($!)
STUB_BEHIND=1 stub behind &
stubs+=($!)

# 1. the simulated GPU
export LAT_SIM_BUILD=$BUILD FAKEGPU_CONFIG=$SRC/tests/fakegpu/configs/1gpu.conf
export FAKEGPU_SHARED_TIMELINE=$TMP/timeline FAKEGPU_STATE=$TMP/state LAT_SIM_TRAIN_SECONDS=1.3
# (the sanitizer build's interposer is preloaded into programs not built with ASan, as in tests/vgpu)
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0
O=$TMP/sim.txt
shapes="two,equal2 torch"
sanitized && shapes=two
# (the clients 0.5 s after the batches, not 1.5: the simulated processes start in a moment; the
# batch alone 1 s, not 3: no check here judges what it measures)
LAT_SIMULATED=1 LAT_BIN=$SIM LAT_TORCH_CMD="$SIM torch" LAT_LIB=$BUILD/libgpuslice-vgpu.so LAT_SHAPES="$shapes" \
        LAT_LEAD_SECONDS=0.5 LAT_BASE_SECONDS=1 \
        bash "$SRC/bench/latency.sh" "$BUILD" 1 >"$O" 2>&1
rc=$?
check "simulated: bench/latency.sh ran every cell" test "$rc" = 0
[ "$rc" = 0 ] || sed 's/^/    # /' "$O" | grep -v '^    # target' | head -30
rows() { awk -v s="$1" -v c="$2" '$1 == s && $2 == c' "$O" | wc -l; }
# want SHAPE CONFIG ROWS: that many rows
want() { check "simulated: $1 $2: $3 row(s) (one per client)" test "$(rows "$1" "$2")" = "$3"; }
for c in alone none share cap high; do want two "$c" 1; done
full=1
sanitized_skip "simulated: the shapes equal2 and torch (the sanitizer build runs two)" && full=
if [ -n "$full" ]; then
        for c in alone none share cap; do want equal2 "$c" 2; done
        want equal2 high 0
        for c in alone none share cap high; do want torch "$c" 1; done
fi
# the batches' fractions: two numbers beside two batches, one beside the training loop
check "simulated: two share: the fraction each of the two batches kept" \
        grep -Eq '^two +share +1 c1 .* [0-9.]+,[0-9.]+$' "$O"
[ -n "$full" ] && check "simulated: torch cap: the fraction the training loop kept" grep -Eq '^torch +cap +1 c1 .* [0-9.]+$' "$O"
check "simulated: two targets: p99 against no slicing, every due request served, each batch against 0.95 x L" \
        test "$(grep -Ec '^target two (share|cap) run 1: (p99 .* <= no slicing|max |every due request)|^target two cap run 1: batch [12] keeps .* 0.95 x L = 0.314' "$O")" = 8
[ -n "$full" ] && check "simulated: equal2 targets: each client's p99 against 1.1 x its no-slicing p99" \
        test "$(grep -Ec '^target equal2 (share|cap) run 1 c[12]: p99 .* <= 1.1 x no slicing' "$O")" = 4
[ -n "$full" ] && check "simulated: torch targets: high's bound is 1.5 x alone + one forward matmul (1 ms simulated)" \
        grep -Eq '^target torch high run 1: p99 .* <= 1.5 x alone \+ one batch kernel = ' "$O"
[ -n "$full" ] && check "simulated: torch share: the training loop keeps >= 0.75 (share 50)" grep -q '^target torch share run 1: batch 1 keeps' "$O"
met=$(sed -n 's/^latency: \([0-9]*\) targets met, \([0-9]*\) missed$/\1 \2/p' "$O")
check "simulated: the count line agrees with the target lines ($met)" \
        test "$(awk '{ print $1 + $2 }' <<<"${met:-x}")" = "$(grep -c '^target ' "$O")"

# 2. (started above)
wait "${stubs[@]}"
check "fixed answers: a sliced p99 of 1.5 under no slicing's 2 ms is a PASS" \
        grep -q '^target req4 cap run 1: p99 1.5 <= no slicing.s 2 ms PASS$' "$TMP/fast"
check "fixed answers: a row gives the p99 from the due times (7.25 where the stand-in says so)" \
        test "$(awk '$1 == "req4" && $2 == "cap" { print $9 }' "$TMP/fast")" = 7.25
check "fixed answers: a sliced p99 of 5 over no slicing's 2 ms is a MISS" \
        grep -q '^target req4 cap run 1: p99 5 <= no slicing.s 2 ms MISS$' "$TMP/slow"
check "fixed answers: no slicing fell behind: p99 and max judged from the due times on both sides (6 and 7 ms against 900 and 950)" \
        test "$(grep -Ec '^target req4 cap run 1: (p99 6 <= no slicing.s 900 ms|max 7 <= 2 x no slicing.s 950 ms) \(from the due times: no slicing served 40 of 50\) PASS$' "$TMP/behind")" = 2
rc=$(cat "$TMP/failed.rc")
check "fixed answers: a batch process that fails is a FAIL and exit 1 (exit $rc, once)" \
        test "$rc" = 1 -a "$(grep -c '^FAIL req4 cap run 1: .*stub: batch failed' "$TMP/failed")" = 1
rc=$(cat "$TMP/unknown.rc")
check "an unknown shape is a FAIL and exit 1 (exit $rc)" test "$rc" = 1 -a "$(grep -c "^FAIL LAT_SHAPES: no shape 'nosuch'" "$TMP/unknown")" = 1
finish
