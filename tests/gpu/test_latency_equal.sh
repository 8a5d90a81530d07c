#!/usr/bin/env bash
# bench/latency_equal.py, the equal shapes' timeline summary (bench/latency.sh's "# timeline equal8
# ..." lines), on two clients' timelines made here, whose figures are worked out by hand:
#   client 1: kernels 0-100 and 500-600 us, two requests of 0.1 ms;
#   client 2: kernels 240-340 and 1000-1100 us, requests of 0.34 and 0.6 ms (also in the
#   simulated GPU's form: the fake's kernel log and compute-probe's request lines).
# The GPU: busy 400 of 1100 us (0.36); three changes of client, gaps 140, 160 and 400 us (2727 a
# second, 0.64 of the span). The slowest client (2) at its p99 (0.6 ms): one request, due at 500 us,
# the GPU busy 200 of its 600 us, one kernel of the other client, one change.
#   GS_SOURCE_DIR=. tests/gpu/test_latency_equal.sh   (meson test gpu_latency_equal)
set -uo pipefail
SRC=${GS_SOURCE_DIR:?}
. "$SRC/tests/lib/check.sh"
TMP=$(mktemp -d /tmp/gs-latequal.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
printf 'r 0 100000\nr 1 100000\nk 0 100000\nk 500000 600000\n' >"$TMP/c1.txt"
printf 'r 0 340000\nr 1 600000\nk 240000 340000\nk 1000000 1100000\n' >"$TMP/c2.txt"
O=$(python3 "$SRC/bench/latency_equal.py" "$TMP/c1.txt" "$TMP/c2.txt")
check "the GPU's busy fraction, changes of client a second, the gaps at a change and their share" \
        test "$(sed -n 1p <<<"$O")" = "all: busy 0.36 changes/s 2727 gap_p10_us 140 gap_p50_us 160 gap_p90_us 400 gaps 0.64"
check "the slowest client's requests at its p99: the GPU's busy fraction, the others' kernels and runs" \
        test "$(sed -n 2p <<<"$O")" = "slow: client c2 p99_ms 0.60 requests 1 busy 0.33 others_kernels 1 runs 1"
# the simulated GPU's form: the fake's kernel log (k lines) and compute-probe's requests (q lines)
printf 'k 240000 340000\nk 1000000 1100000\nq 0 0 340000 340000\nq 1 500000 600000 600000\n' >"$TMP/c2sim.txt"
check "the simulated GPU's timelines (q lines for the requests) give the same figures" \
        test "$(python3 "$SRC/bench/latency_equal.py" "$TMP/c1.txt" "$TMP/c2sim.txt")" = "$O"
printf 'r 0 1\n' >"$TMP/empty.txt"
python3 "$SRC/bench/latency_equal.py" "$TMP/empty.txt" >"$TMP/out" 2>&1
check "a timeline without kernels is said so, exit 1" test "$?" = 1 -a "$(cat "$TMP/out")" = "no kernels"
finish
