#!/usr/bin/env bash
# Everything `make test` runs: the normal build (warnings as errors) and its tests, the same tests
# under ASan+UBSan, then each libFuzzer harness briefly. Ends with "N passed, N failed, N skipped":
# passed and failed count tests (meson tests, the release export check, fuzz harnesses); skipped
# counts whole tests meson reports SKIP (exit 77) and, inside the tests that ran, every skipped
# check: the "skip - " lines of tests/lib/check.sh and of the cmocka tests (tests/unit/skips.h),
# and the "SKIP " lines of the GPU-host run (tests/gpu/run.sh). Each build's tests are also totalled
# per layer (unit, integration, GPU host), and every skip is listed with its reason, every timing
# case run again after a disturbed failure with its "retry - " line (RETRIED). A test run
# that executed no test, or a whole run that passed nothing, is a failure.
# The sanitizer build runs the timing tests on the simulated GPU (vgpu_compute, vgpu_turns,
# vgpu_liar, vgpu_latency_*, gpu_latency_script) reduced: meson.build passes b_sanitize to them
# (GS_SANITIZE), and they run the cases that exercise distinct code paths (what the sanitizers are
# there for: the interposer itself is never instrumented, the simulated GPU, the probes and gpuslice
# are) and skip those that repeat one at another share, limit or kernel length: each such check a
# "skip - ...: timing accuracy is checked in the normal build" line, counted and listed with the
# skips below. The normal build runs them all.
set -uo pipefail
BUILD=${1:-build} BUILD_ASAN=${2:-build-asan} BUILD_FUZZ=${3:-build-fuzz} FUZZ_SECONDS=${4:-10}
cd "$(dirname "$0")/.."
passed=0 failed=0 skipped=0
failures=() skips=() retries=()

# meson_tests LOG: one line per test of meson's testlog.json, tab-separated: layer (meson's suite
# "unit" -> unit, "gpu" -> gpu host, any other -> integration), state (pass, fail, skip), name,
# then for a skipped test its reason (its first output line that says skip), for one that ran its
# skipped checks' lines, each "|"-separated.
meson_tests() {
        jq -r '
          ((.name | capture("^[^:]*:(?<s>[^ ]+) / ") | .s) // "") as $suite
          | (if $suite == "unit" then "unit" elif $suite == "gpu" then "gpu host" else "integration" end) as $layer
          | (if .result == "OK" or .result == "EXPECTEDFAIL" then "pass" elif .result == "SKIP" then "skip" else "fail" end) as $state
          | ((.stdout // "") + "\n" + (.stderr // "") | split("\n")) as $out
          | (if $state == "skip" then ([$out[] | select(test("^(skip - |SKIP|skipped|# skipped)"))]
                                     + [$out[] | select(test("skip"; "i"))] | .[0:1])
             else [(.stdout // "") | split("\n")[] | select(test("^(skip - |SKIP )"))] end) as $why
          | [$layer, $state, (.name | sub("^[^/]*/ "; "")), ($why | map(gsub("[\t|]"; " ")) | join("|"))] | @tsv' "$1"
}

count_meson() { # build dir, label
        local log="$1/meson-logs/testlog.json" layer state name why line
        if [ ! -s "$log" ]; then
                failed=$((failed + 1)); failures+=("$2: no test log"); return
        fi
        local -A lp=() lf=() lst=() lsc=()
        while IFS=$'\t' read -r layer state name why; do
                case $state in
                pass) lp[$layer]=$((${lp[$layer]:-0} + 1)) ;;
                fail) lf[$layer]=$((${lf[$layer]:-0} + 1)); failures+=("$2: $name") ;;
                skip) lst[$layer]=$((${lst[$layer]:-0} + 1)); skips+=("$2, $layer: $name (the whole test): ${why:-no reason given}")
                      continue ;;
                esac
                [ -n "$why" ] || continue
                while IFS= read -r line; do
                        lsc[$layer]=$((${lsc[$layer]:-0} + 1)); skips+=("$2, $layer: $name: $line")
                done < <(tr '|' '\n' <<<"$why")
        done < <(meson_tests "$log")
        local p=0 f=0 s=0
        for layer in unit integration "gpu host"; do
                local lpl=${lp[$layer]:-0} lfl=${lf[$layer]:-0} lstl=${lst[$layer]:-0} lscl=${lsc[$layer]:-0}
                echo "$2, $layer: $lpl passed, $lfl failed, $((lstl + lscl)) skipped (tests: $lstl, checks in tests that ran: $lscl)"
                p=$((p + lpl)); f=$((f + lfl)); s=$((s + lstl + lscl))
        done
        passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
        # (a timing case run again because the machine disturbed a failed run: its "retry - " line,
        # tests/lib/probe.sh; listed at the end, so that a repeat is never silent)
        while IFS=$'\t' read -r name line; do
                retries+=("$2: $name: $line")
        done < <(jq -r '(.name | sub("^[^/]*/ "; "")) as $n | (.stdout // "") | split("\n")[]
                        | select(startswith("retry - ")) | [$n, .] | @tsv' "$log")
        if [ "$p" -eq 0 ]; then failed=$((failed + 1)); failures+=("$2: no test passed: this run tested nothing"); fi
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
        meson test -C "$dir" --print-errorlogs --num-processes "${TEST_JOBS:-2}"
        count_meson "$dir" "$label"
}

if [ -z "${FUZZ_ONLY:-}" ]; then
        # Three tests at a time in the normal build (its parallel tests mostly wait: containers,
        # servers, polls; the timing tests run alone either way, meson's is_parallel: false), two in
        # the sanitizer build, whose tests are CPU-bound.
        TEST_JOBS=3 run_suite "$BUILD" "build" --buildtype=debugoptimized -Dwerror=true
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
# Failure injection stays out of a release build (-Dtests=false, so -Dfailure_injection=auto is
# off): its gpuslice does not contain the variable's name (tests/integration/test_configure.sh
# runs the same check, and the variable ignored, on the test build's gpuslice-noinject).
if [ -z "${FUZZ_ONLY:-}" ]; then
        echo "=== release build of gpuslice: no failure injection"
        if [ -f build-release/build.ninja ] && ninja -C build-release gpuslice >/dev/null && [ -s build-release/gpuslice ] &&
                ! grep -qa GPUSLICE_TEST_FAIL_AT build-release/gpuslice; then
                passed=$((passed + 1))
        else
                failed=$((failed + 1)); failures+=("release: gpuslice built without GPUSLICE_TEST_FAIL_AT (failure injection)")
        fi
fi

# fuzz_one HARNESS: run it FUZZ_SECONDS on a copy of its corpus; its exit status in fuzz_HARNESS.rc
fuzz_one() {
        local f=$1 corpus rc
        corpus=$(mktemp -d)
        [ -d "tests/fuzz/corpus/$f" ] && cp -r "tests/fuzz/corpus/$f/." "$corpus/"
        "$BUILD_FUZZ/tests/fuzz/fuzz_$f" -max_total_time="$FUZZ_SECONDS" -print_final_stats=0 \
                -artifact_prefix="$BUILD_FUZZ/crash-$f-" "$corpus" >"$BUILD_FUZZ/fuzz_$f.log" 2>&1
        rc=$?
        echo "$rc" >"$BUILD_FUZZ/fuzz_$f.rc"
        rm -rf "$corpus"
}

echo "=== fuzz: configure + build ($BUILD_FUZZ)"
if { [ -f "$BUILD_FUZZ/build.ninja" ] || CC=clang meson setup "$BUILD_FUZZ" -Dfuzz=true -Dtests=true \
        --buildtype=debug -Db_sanitize=address,undefined -Db_lundef=false -Dc_args=-fsanitize=fuzzer-no-link; } &&
        ninja -C "$BUILD_FUZZ" tests/fuzz/fuzz_ldcache tests/fuzz/fuzz_devices tests/fuzz/fuzz_require \
                tests/fuzz/fuzz_hostconfig tests/fuzz/fuzz_oci tests/fuzz/fuzz_cdi tests/fuzz/fuzz_region tests/fuzz/fuzz_k8s tests/fuzz/fuzz_toml tests/fuzz/fuzz_dra tests/fuzz/fuzz_dra_grpc tests/fuzz/fuzz_xidlog; then
        # Two harnesses at a time (one per CPU of a CI machine; each runs FUZZ_SECONDS of wall time).
        harnesses=(ldcache devices require hostconfig oci cdi region k8s toml dra dra_grpc xidlog)
        for f in "${harnesses[@]}"; do
                while [ "$(jobs -rp | wc -l)" -ge "${FUZZ_JOBS:-2}" ]; do wait -n; done
                echo "=== fuzz_$f for ${FUZZ_SECONDS}s"
                rm -f "$BUILD_FUZZ/fuzz_$f.rc"
                fuzz_one "$f" &
        done
        wait
        for f in "${harnesses[@]}"; do
                if [ "$(cat "$BUILD_FUZZ/fuzz_$f.rc" 2>/dev/null)" = 0 ]; then
                        passed=$((passed + 1)); echo "fuzz_$f: OK ($(grep -c '' "$BUILD_FUZZ/fuzz_$f.log") log lines)"
                else
                        failed=$((failed + 1)); failures+=("fuzz: fuzz_$f (see $BUILD_FUZZ/fuzz_$f.log)")
                        tail -n 40 "$BUILD_FUZZ/fuzz_$f.log"
                fi
        done
else
        failed=$((failed + 1)); failures+=("fuzz: build")
fi

# The mutation check (tests/mutation/): behaviours broken on purpose in a scratch copy; each one
# the suite does not catch, and each that did not apply or build, is a failure.
if [ -z "${FUZZ_ONLY:-}" ]; then
        echo "=== mutation check (${BUILD_MUT:-build-mut})"
        mut_log=$(mktemp)
        # (the normal build's run of this same tree is the baseline: the tests that passed there are
        # not run again unbroken)
        MUTATION_BASELINE=$BUILD/meson-logs/testlog.json tests/mutation/run.sh "${BUILD_MUT:-build-mut}" 2>&1 | tee "$mut_log"
        mut_rc=${PIPESTATUS[0]}
        k=$(grep -c ': killed by ' "$mut_log")
        passed=$((passed + k))
        while IFS= read -r line; do failed=$((failed + 1)); failures+=("mutation: $line"); done \
                < <(grep -E ': (SURVIVED|DID NOT APPLY|DID NOT BUILD)' "$mut_log")
        if [ "$mut_rc" -ne 0 ] && ! grep -qE ': (SURVIVED|DID NOT APPLY|DID NOT BUILD)' "$mut_log"; then
                failed=$((failed + 1)); failures+=("mutation: the check itself failed (exit $mut_rc; see above)")
        fi
        rm -f "$mut_log"
fi

echo
for r in "${retries[@]+"${retries[@]}"}"; do echo "RETRIED ($r)"; done
for s in "${skips[@]+"${skips[@]}"}"; do echo "SKIPPED ($s)"; done
for f in "${failures[@]+"${failures[@]}"}"; do echo "FAILED: $f"; done
if [ "$passed" -eq 0 ]; then failed=$((failed + 1)); echo "FAILED: nothing passed: this run tested nothing"; fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
