#!/usr/bin/env bash
# Everything `make test` runs: the normal build (warnings as errors) and its tests, the same tests
# under ASan+UBSan, then each libFuzzer harness briefly. Ends with "N passed, N failed, N skipped".
set -uo pipefail
BUILD=${1:-build} BUILD_ASAN=${2:-build-asan} BUILD_FUZZ=${3:-build-fuzz} FUZZ_SECONDS=${4:-20}
cd "$(dirname "$0")/.."
passed=0 failed=0 skipped=0
failures=()

count_meson() { # build dir, label
        local log="$1/meson-logs/testlog.json"
        if [ ! -s "$log" ]; then
                failed=$((failed + 1)); failures+=("$2: no test log"); return
        fi
        local p f s
        p=$(jq -s '[.[] | select(.result == "OK" or .result == "EXPECTEDFAIL")] | length' "$log")
        s=$(jq -s '[.[] | select(.result == "SKIP")] | length' "$log")
        f=$(jq -s '[.[] | select(.result != "OK" and .result != "EXPECTEDFAIL" and .result != "SKIP")] | length' "$log")
        passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
        while IFS= read -r name; do failures+=("$2: $name"); done < <(jq -r 'select(.result != "OK" and .result != "EXPECTEDFAIL" and .result != "SKIP") | .name' "$log")
        while IFS= read -r name; do echo "SKIPPED ($2): $name"; done < <(jq -r 'select(.result == "SKIP") | .name' "$log")
}

run_suite() { # build dir, label, meson setup args...
        local dir=$1 label=$2; shift 2
        echo "=== $label: configure + build ($dir)"
        # A directory first configured by `make run` has the tests off (-Dtests=false): turn them on
        # (and apply this suite's options) so every test is built and run.
        local reconf=()
        [ -f "$dir/build.ninja" ] && reconf=(--reconfigure)
        if ! meson setup "${reconf[@]+"${reconf[@]}"}" "$dir" "$@" -Dtests=true; then
                failed=$((failed + 1)); failures+=("$label: configure"); return
        fi
        if ! ninja -C "$dir"; then failed=$((failed + 1)); failures+=("$label: build"); return; fi
        echo "=== $label: test"
        rm -f "$dir/meson-logs/testlog.json"
        meson test -C "$dir" --print-errorlogs --num-processes 2
        count_meson "$dir" "$label"
}

if [ -z "${FUZZ_ONLY:-}" ]; then
        run_suite "$BUILD" "build" --buildtype=debugoptimized -Dwerror=true
        run_suite "$BUILD_ASAN" "asan+ubsan" --buildtype=debug -Dwerror=true \
                -Db_sanitize=address,undefined -Db_lundef=false
fi

# Every interposer hook must be exported in a release build too (HAMi's Release build exports
# none of its hooks and silently disables itself).
if [ -z "${FUZZ_ONLY:-}" ]; then
        echo "=== release build of libgpuslice-vgpu.so: exported hooks"
        if { [ -f build-release/build.ninja ] || meson setup build-release --buildtype=release -Dtests=false >/dev/null; } &&
                ninja -C build-release libgpuslice-vgpu.so >/dev/null &&
                tests/vgpu/check_exports.sh . build-release/libgpuslice-vgpu.so; then
                passed=$((passed + 1))
        else
                failed=$((failed + 1)); failures+=("release: libgpuslice-vgpu.so exports")
        fi
fi

echo "=== fuzz: configure + build ($BUILD_FUZZ)"
if { [ -f "$BUILD_FUZZ/build.ninja" ] || CC=clang meson setup "$BUILD_FUZZ" -Dfuzz=true -Dtests=true \
        --buildtype=debug -Db_sanitize=address,undefined -Db_lundef=false -Dc_args=-fsanitize=fuzzer-no-link; } &&
        ninja -C "$BUILD_FUZZ" tests/fuzz/fuzz_ldcache tests/fuzz/fuzz_devices tests/fuzz/fuzz_require \
                tests/fuzz/fuzz_hostconfig tests/fuzz/fuzz_oci tests/fuzz/fuzz_cdi tests/fuzz/fuzz_region tests/fuzz/fuzz_k8s; then
        for f in ldcache devices require hostconfig oci cdi region k8s; do
                corpus=$(mktemp -d)
                [ -d "tests/fuzz/corpus/$f" ] && cp -r "tests/fuzz/corpus/$f/." "$corpus/"
                echo "=== fuzz_$f for ${FUZZ_SECONDS}s"
                if "$BUILD_FUZZ/tests/fuzz/fuzz_$f" -max_total_time="$FUZZ_SECONDS" -print_final_stats=0 \
                        -artifact_prefix="$BUILD_FUZZ/crash-$f-" "$corpus" >"$BUILD_FUZZ/fuzz_$f.log" 2>&1; then
                        passed=$((passed + 1)); echo "fuzz_$f: OK ($(grep -c '' "$BUILD_FUZZ/fuzz_$f.log") log lines)"
                else
                        failed=$((failed + 1)); failures+=("fuzz: fuzz_$f (see $BUILD_FUZZ/fuzz_$f.log)")
                        tail -n 40 "$BUILD_FUZZ/fuzz_$f.log"
                fi
                rm -rf "$corpus"
        done
else
        failed=$((failed + 1)); failures+=("fuzz: build")
fi

echo
for f in "${failures[@]+"${failures[@]}"}"; do echo "FAILED: $f"; done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
