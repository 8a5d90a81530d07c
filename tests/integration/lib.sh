# Shared helpers for the integration tests (sourced). Each test script is one meson test; it
# prints "ok"/"not ok" per check and exits non-zero if any check failed.
set -uo pipefail
if [ "$(id -u)" != 0 ]; then echo "SKIP: integration tests need root (mknod, chroot)"; exit 77; fi
SRC=${GS_SOURCE_DIR:?} BUILD=${GS_BUILD_DIR:?}
unset LD_LIBRARY_PATH  # meson adds the fake NVML dir; the tests must find it the real way
GS=$BUILD/gpuslice
MKROOT=$SRC/tests/fakegpu/mkroot.sh
EXPECTED=$SRC/tests/integration/expected
TMP=$(mktemp -d /tmp/gs-it.XXXXXX)
chmod 755 "$TMP" # the NVML helper runs as nobody
trap 'rm -rf "$TMP"' EXIT
. "$SRC/tests/lib/check.sh" # ok, not_ok, skip, check, run_ok, started, finish
. "$SRC/tests/lib/probe.sh" # probe_field, probe_lo: reading compute_probe's report

# mkroot NAME CONFIG [mkroot options...]: build a fake driver root at $TMP/NAME, echo its path.
mkroot() {
        local name=$1 conf=$2; shift 2
        "$MKROOT" --build "$BUILD" "$@" "$SRC/tests/fakegpu/configs/$conf" "$TMP/$name" >"$TMP/$name.mkroot.log" 2>&1 ||
                { cat "$TMP/$name.mkroot.log" >&2; echo "mkroot $conf failed" >&2; exit 1; }
        echo "$TMP/$name"
}

# run NAME -- CMD...: run, keep stdout/stderr/rc in $TMP/NAME.{out,err,rc}
run() {
        local name=$1; shift; [ "$1" = "--" ] && shift
        "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
        echo $? >"$TMP/$name.rc"
}
rc_of() { cat "$TMP/$1.rc"; }

# expect_rc NAME RC DESC
expect_rc() {
        if [ "$(rc_of "$1")" = "$2" ]; then ok "$3 (exit $2)"; else
                not_ok "$3: exit $(rc_of "$1"), wanted $2"; sed 's/^/    # /' "$TMP/$1.err" | head -20; fi
}
# expect_same NAME FILE DESC: stdout equals the expected file (with @ROOT@ replaced)
expect_same() {
        local want=$TMP/$1.want
        sed "s|@ROOT@|${ROOT:-}|g" "$2" >"$want"
        if diff -u "$want" "$TMP/$1.out" >"$TMP/$1.diff"; then ok "$3"; else
                not_ok "$3"; sed 's/^/    # /' "$TMP/$1.diff" | head -40; fi
}
# expect_err NAME TEXT DESC: stderr contains TEXT (fixed string)
expect_err() {
        if grep -qF -- "$2" "$TMP/$1.err"; then ok "$3"; else
                not_ok "$3: stderr lacks '$2'"; sed 's/^/    # /' "$TMP/$1.err" | head -20; fi
}
expect_out_has() {
        if grep -qxF -- "$2" "$TMP/$1.out"; then ok "$3"; else not_ok "$3: stdout lacks line '$2'"; fi
}
expect_out_lacks() {
        if grep -qF -- "$2" "$TMP/$1.out"; then not_ok "$3: stdout has '$2'"; else ok "$3"; fi
}
expect_empty_out() {
        if [ ! -s "$TMP/$1.out" ]; then ok "$2"; else not_ok "$2: stdout not empty"; fi
}
# sanitized: $GS is an ASan build (its hooks then need ASAN_OPTIONS=detect_leaks=0 inside a
# container). (ldd's output read whole: `ldd | grep -q` under pipefail fails when grep quits first.)
sanitized() { [[ $(ldd "$GS" 2>/dev/null) == *libasan* ]]; }
