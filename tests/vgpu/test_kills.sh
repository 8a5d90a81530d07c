#!/usr/bin/env bash
# The kill -9 storm in short (tests/vgpu/kill_storm.sh says what it checks): KILLS (default 300)
# kills into one slice; bench/kill_storm.sh runs the same with 10 000.
set -uo pipefail
SRC=${GS_SOURCE_DIR:?} BUILD=${GS_BUILD_DIR:?}
unset LD_LIBRARY_PATH LD_PRELOAD
TMP=$(mktemp -d /tmp/gs-kills.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"' EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0
. "$SRC/tests/lib/check.sh"
KILLS=${KILLS:-300}
. "$SRC/tests/vgpu/kill_storm.sh"
finish
