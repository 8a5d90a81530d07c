#!/usr/bin/env bash
# The counting of the real-GPU scripts, without a GPU (issue 34, finding 1): tests/gpu/lib.sh's
# finish gives a sub-script's exit status from its checks, and run.sh's `sub` adds a sub-script's
# checks to the totals and FAILs a part whose exit status disagrees with its count. Then the real
# tests/gpu/multigpu_check.sh against a fake condition (an nvidia-smi on PATH that lists two GPUs
# and nothing else; no gpuslice, no probes): its checks fail, and it must exit 1 and be counted so.
#   tests/gpu/test_counting.sh        (meson test gpu_counting)
set -u
SRC=$(cd "$(dirname "$0")/../.." && pwd)
. "$SRC/tests/lib/check.sh"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
LIB=$SRC/tests/gpu/lib.sh

# sub-scripts of every kind: SCRIPT-NAME BODY (sourcing lib.sh)
mk() { printf '%s\n' ". '$LIB'" "$2" >"$TMP/$1.sh"; }
mk good 'check "one" true; check "two" true; finish'
mk onefail 'check "one" true; check "two (a wrong expected value)" test 1 = 2; finish'
mk allskip 'skip "no second GPU"; finish'
mk none 'finish'
mk trapfail 'c() { echo cleaned; }; finish_trap c; check "one" true; check "two" false; true'
mk early 'c() { echo cleaned; }; finish_trap c; check "one" true; exit 3; check "never" true'
# the old pattern (multigpu_check.sh before issue 34): its own counters, the count printed by the
# EXIT trap, the last command's status as the script's
printf '%s\n' 'p=0 f=0; trap '\''echo "$p passed, $f failed, 0 skipped"'\'' EXIT' \
        'f=$((f + 1)); echo "FAIL a check"; p=$((p + 1)); echo "PASS another"; true' >"$TMP/oldtrap.sh"
# no count at all (a crash)
printf '%s\n' 'echo "PASS something"; kill -SEGV $$' >"$TMP/crash.sh"

# status SCRIPT: its exit status and last line
status() { bash "$TMP/$1.sh" >"$TMP/$1.out" 2>&1; echo "$? $(tail -1 "$TMP/$1.out")"; }
check "finish: all passed: exit 0" test "$(status good)" = "0 2 passed, 0 failed, 0 skipped"
check "finish: a failed check (wrong expected value): exit 1" test "$(status onefail)" = "1 1 passed, 1 failed, 0 skipped"
check "finish: every check skipped: exit 77" test "$(status allskip)" = "77 0 passed, 0 failed, 1 skipped"
check "finish: no check at all: exit 1" test "$(status none)" = "1 0 passed, 0 failed, 0 skipped"
check "finish_trap: the script ends without finish after a FAIL: exit 1" test "$(status trapfail)" = "1 1 passed, 1 failed, 0 skipped"
check "... and the cleanup ran" grep -qx cleaned "$TMP/trapfail.out"
check "finish_trap: an exit 3 of its own after a PASS is a FAIL: exit 1" test "$(status early)" = "1 1 passed, 1 failed, 0 skipped"
check "... it says so" grep -q '^FAIL the script stopped before its end (exit 3)$' "$TMP/early.out"

# runsub SCRIPT: sub run in a shell of its own, from totals of 5 passed, 1 failed, 2 skipped:
# "STATUS PASS FAIL SKIPPED" after it
runsub() {
        (
                . "$LIB"
                pass=5 fail=1 skipped=2 OUTDIR=$TMP/out
                mkdir -p "$OUTDIR"
                sub part "$TMP/$1.sh" >"$TMP/sub-$1.out" 2>&1; rc=$?
                echo "$rc $pass $fail $skipped"
        )
}
check "sub: a passing sub-script adds its 2 passes" test "$(runsub good)" = "0 7 1 2"
check "sub: one failed check is counted (1 + 1), the part fails" test "$(runsub onefail)" = "1 6 2 2"
check "sub: all skipped is counted as a skip, the part does not pass" test "$(runsub allskip)" = "1 5 1 3"
check "sub: a sub-script that checked nothing fails the part" test "$(runsub none)" = "1 5 2 2"
check "sub: the old pattern (exit 0, its FAIL in its count) counts its FAIL and one more for the exit 0" \
        test "$(runsub oldtrap)" = "1 6 3 2"
check "... naming the disagreement" grep -q '^FAIL part: .*oldtrap.sh exited 0 with 1 failed check(s)$' "$TMP/sub-oldtrap.out"
check "sub: a crash with no count is one FAIL" test "$(runsub crash)" = "1 5 2 2"
check "... naming it" grep -q '^FAIL part: .*crash.sh printed no count' "$TMP/sub-crash.out"
check "sub: the sub-script's output is kept in OUTDIR/<name>.txt" grep -qx 'FAIL two (a wrong expected value)' "$TMP/out/onefail.txt"

# The real multigpu_check.sh where its checks must fail: an nvidia-smi listing two GPUs, a build
# directory with nothing in it. Before issue 34 it exited 0 here (the last command was `mps stop`
# or a skip) and run.sh printed "PASS multigpu".
mkdir -p "$TMP/bin" "$TMP/build"
cat >"$TMP/bin/nvidia-smi" <<'EOF'
#!/bin/sh
case "$*" in
-L) echo "GPU 0: Fake (UUID: GPU-00000000-0000-0000-0000-000000000000)"; echo "GPU 1: Fake (UUID: GPU-11111111-1111-1111-1111-111111111111)" ;;
*--query-gpu=uuid\ *|*--query-gpu=uuid) printf 'GPU-00000000-0000-0000-0000-000000000000\nGPU-11111111-1111-1111-1111-111111111111\n' ;;
*--query-gpu=pci.bus_id*) printf '00000000:3B:00.0\n00000000:5B:00.0\n' ;;
*--query-gpu=name,driver_version*) printf 'Fake, 0.0\nFake, 0.0\n' ;;
*) exit 9 ;;
esac
EOF
chmod +x "$TMP/bin/nvidia-smi"
rel=$(realpath --relative-to="$SRC" "$TMP/build") # (the script takes BUILD relative to the tree)
(
        . "$LIB"
        OUTDIR=$TMP/mg
        mkdir -p "$OUTDIR"
        export PATH=$TMP/bin:$PATH
        OUT=$OUTDIR sub multigpu "$SRC/tests/gpu/multigpu_check.sh" "$rel" >"$TMP/mg.out" 2>&1
        echo "$? $pass $fail $skipped"
) >"$TMP/mg.totals"
grep -E '^(PASS|FAIL|SKIP|[0-9]+ passed|== part)' "$TMP/mg.out" | sed 's/^/    # /' | head -30
mgline=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$TMP/mg.out" | tail -1)
read -r mgrc mgp mgf mgs <"$TMP/mg.totals"
echo "    # sub: status $mgrc, totals $mgp passed, $mgf failed, $mgs skipped"
read -r np _ nf _ ns _ <<<"${mgline//,/}"
check "multigpu_check.sh, its checks failing: its count says so ($mgline)" test -n "$mgline" -a "${nf:-0}" -ge 3
check "... it exits 1 (no FAIL for a disagreement between its status and its count)" \
        test -z "$(grep -E '^FAIL multigpu: ' "$TMP/mg.out")"
check "... sub added its checks to the totals and failed the part" test "$mgrc $mgp $mgf $mgs" = "1 $np $nf $ns"
finish
