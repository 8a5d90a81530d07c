#!/usr/bin/env bash
# tests/lib/probe.sh, the CPU-stall allowance of the compute tests, on made-up probe reports: a
# lower bound is loosened by a run's off-CPU share only up to a floor (PROBE_OFF_MAX, 0.15 of the
# bound); a run off its CPU longer than that is too disturbed to judge: its bound is not loosened
# at all, probe_case says so ("retry - ") and runs the case again, and a case still disturbed at
# its last run fails naming the disturbance; never a pass with a bound loosened to nothing. And
# compute-probe's cpu_wait: a thread of the probe's own process (as the interposer's ticker) that
# keeps its application thread off the CPU is no allowance.
set -uo pipefail
SRC=${GS_SOURCE_DIR:?} BUILD=${GS_BUILD_DIR:?}
TMP=$(mktemp -d /tmp/gs-probelib.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
. "$SRC/tests/lib/check.sh"
. "$SRC/tests/lib/probe.sh"

# report FILE CPU_WAIT STEAL FRACTION: a compute_probe report
report() { echo "cpu_wait=$2 thread_wait=$2 others=0.0000 steal=$3 launches=1 work_us=1 wall_us=1 fraction=$4 intercepted=1 sms=132 util=-1" >"$1"; }
report "$TMP/quiet" 0.0300 0.0100 0.3000
report "$TMP/busy" 0.1000 0.0200 0.3000
report "$TMP/hog" 0.6000 0.0000 0.2000
report "$TMP/steal" 0.0500 0.1200 0.3000
: >"$TMP/none"
eq() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a - b < 0.0005 && b - a < 0.0005) }'; }

lo=$(probe_lo 0.45 "$TMP/quiet" 2>/dev/null)
eq "$lo" 0.432 && ok "a quiet run (off its CPU 0.04): the bound 0.45 allows for it, $lo" || not_ok "quiet run: probe_lo 0.45 = $lo (want 0.432)"
lo=$(probe_lo 0.45 "$TMP/quiet" "$TMP/busy" 2>/dev/null)
eq "$lo" 0.396 && ok "two runs: the worst share (0.12) counts, $lo" || not_ok "two runs: probe_lo 0.45 = $lo (want 0.396)"
lo=$(probe_lo 0.45 "$TMP/hog" 2>"$TMP/hog.err")
eq "$lo" 0.45 && ok "a run off its CPU 0.6 of the time: the bound 0.45 is not loosened at all ($lo; it was 0.18)" ||
        not_ok "a run off its CPU 0.6 of the time: probe_lo 0.45 = $lo (want 0.45, never below 0.3825)"
grep -q "lower bound 0.45 not loosened: too disturbed to judge: hog: off its CPU 0.600" "$TMP/hog.err" &&
        ok "... and says so: $(cat "$TMP/hog.err")" || not_ok "probe_lo on a disturbed run said: $(cat "$TMP/hog.err")"
lo=$(probe_lo 0.45 "$TMP/steal" 2>/dev/null)
eq "$lo" 0.45 && ok "cpu_wait 0.05 + steal 0.12 (0.17) is too disturbed as well" || not_ok "steal counted: probe_lo 0.45 = $lo"
lo=$(probe_lo 0.45 "$TMP/none" 2>/dev/null)
eq "$lo" 0.45 && ok "a file without a report loosens nothing" || not_ok "empty report: probe_lo 0.45 = $lo"
probe_disturbed "$TMP/none" >/dev/null && not_ok "a run that reported nothing called disturbed (it would be retried)" ||
        ok "a run that reported nothing (a crashed probe) is no disturbance to retry: it fails"
probe_disturbed "$TMP/quiet" "$TMP/busy" >/dev/null && not_ok "runs off their CPU 0.04 and 0.12 called disturbed" ||
        ok "runs off their CPU 0.04 and 0.12 (<= $PROBE_OFF_MAX) are judged"
why=$(probe_disturbed "$TMP/quiet" "$TMP/hog") && [[ "$why" == "too disturbed to judge: hog: off its CPU 0.600"* ]] &&
        ok "probe_disturbed names the run: $why" || not_ok "probe_disturbed: '$why'"

# case FN FILE: probe_case in a shell of its own (its own counts): its output and exit status
case_of() { ( . "$SRC/tests/lib/check.sh"; probe_case "the case" "$@"; finish ) >"$TMP/case.out" 2>&1; }
tries=0
fails_on() { tries=$((tries + 1)); echo "$tries" >"$TMP/tries"; cp "$1" "$TMP/run"; PROBE_SAID="fraction $(probe_field fraction "$TMP/run")"; return 1; }
hogged() { fails_on "$TMP/hog"; }
case_of hogged "$TMP/run"
[ $? = 1 ] && [ "$(grep -c '^retry - the case: too disturbed to judge: run: off its CPU 0.600' "$TMP/case.out")" = 2 ] &&
        [ "$(cat "$TMP/tries")" = 3 ] &&
        grep -q "^not ok - the case: fraction 0.2000 (too disturbed to judge: run: off its CPU 0.600.*in each of 3 runs)" "$TMP/case.out" &&
        ok "a failing case too disturbed to judge: two retry lines, three runs, then not ok naming the disturbance" ||
        { not_ok "a disturbed failing case"; sed 's/^/    # /' "$TMP/case.out"; }
report "$TMP/stolen1" 0.0100 0.0410 0.9000
stolenfail() { fails_on "$TMP/stolen1"; }
tries=0; ( . "$SRC/tests/lib/check.sh"; PROBE_CASE_TAIL=1 probe_case "the case" stolenfail "$TMP/run"; echo "status $? skipped $nskip failed $nfail" ) >"$TMP/case.out" 2>&1
[ "$(grep -c '^retry - the case: too disturbed to judge a tail' "$TMP/case.out")" = 2 ] && [ "$(cat "$TMP/tries")" = 3 ] &&
        grep -q "^skip - the case: fraction 0.9000 (not judged: too disturbed to judge a tail: .*steal 0.0410.*in each of 3 runs)" "$TMP/case.out" &&
        grep -qx "status 0 skipped 1 failed 0" "$TMP/case.out" &&
        ok "a tail case (PROBE_CASE_TAIL) failing with steal 0.041 in each run: two retries, then skipped as not judged" ||
        { not_ok "a tail case of probe_case with steal"; sed 's/^/    # /' "$TMP/case.out"; }
tries=0; ( . "$SRC/tests/lib/check.sh"; probe_case "the case" stolenfail "$TMP/run"; echo "status $?" ) >"$TMP/case.out" 2>&1
! grep -q "^retry" "$TMP/case.out" && grep -q "^not ok - the case" "$TMP/case.out" &&
        ok "... the same run of a lower bound's case (no PROBE_CASE_TAIL): steal 0.041 under the 0.15 allowance, a failure" ||
        { not_ok "a lower bound's case with steal 0.041"; sed 's/^/    # /' "$TMP/case.out"; }
quietfail() { fails_on "$TMP/quiet"; }
case_of quietfail "$TMP/run"
[ $? = 1 ] && ! grep -q "^retry" "$TMP/case.out" && [ "$(cat "$TMP/tries")" = 1 ] &&
        grep -qx "not ok - the case: fraction 0.3000" "$TMP/case.out" &&
        ok "a failing case of a quiet run: not ok at once, no retry" || { not_ok "a quiet failing case"; sed 's/^/    # /' "$TMP/case.out"; }
calm_second() { tries=$(($(cat "$TMP/tries" 2>/dev/null || echo 0) + 1)); echo $tries >"$TMP/tries"
        [ "$tries" = 1 ] && cp "$TMP/hog" "$TMP/run" || cp "$TMP/quiet" "$TMP/run"; PROBE_SAID=x; [ "$tries" -ge 2 ]; }
rm -f "$TMP/tries"
case_of calm_second "$TMP/run"
[ $? = 0 ] && [ "$(grep -c '^retry - ' "$TMP/case.out")" = 1 ] && grep -qx "ok - the case: x" "$TMP/case.out" &&
        ok "a disturbed run repeated, the quiet repeat judged: ok" || { not_ok "a retried case"; sed 's/^/    # /' "$TMP/case.out"; }
passes() { cp "$TMP/hog" "$TMP/run"; PROBE_SAID=y; }
case_of passes "$TMP/run"
[ $? = 0 ] && ! grep -q "^retry" "$TMP/case.out" && grep -qx "ok - the case: y" "$TMP/case.out" &&
        ok "a disturbed run that meets its bound unloosened passes (a stall only lowers a fraction)" ||
        { not_ok "a disturbed passing case"; sed 's/^/    # /' "$TMP/case.out"; }

# A tail case (probe_tail_try): a failed run with steal above PROBE_STEAL_TAIL_MAX is repeated,
# one without is not, and a case whose every run failed with steal in it says so for its not-ok
# lines; a failed run that reported nothing is no disturbance.
report "$TMP/stolen" 0.0000 0.0410 0.9000
report "$TMP/calm" 0.0000 0.0012 0.9000
tail_of() { ( . "$SRC/tests/lib/check.sh"; probe_tail_try "the tail" "$@" && echo "status 0" || { echo "status 1 why=$PROBE_TAIL_WHY"; tail_not_ok "the check"; } ) >"$TMP/tail.out" 2>&1; }
stolen_fails() { tries=$((tries + 1)); echo "$tries" >"$TMP/tries"; cp "$TMP/stolen" "$TMP/run"; return 1; }
tries=0; tail_of stolen_fails "$TMP/run"
[ "$(grep -c '^retry - the tail: too disturbed to judge a tail: the hypervisor took CPUs (run: steal 0.0410 > 0.002) (run [12] of 3 failed)' "$TMP/tail.out")" = 2 ] &&
        [ "$(cat "$TMP/tries")" = 3 ] && grep -q "^status 1 why=not judged: too disturbed to judge a tail: .*steal 0.0410.*, in each of 3 runs" "$TMP/tail.out" &&
        grep -q "^skip - the check (not judged: too disturbed to judge a tail: .*steal 0.0410.*, in each of 3 runs)" "$TMP/tail.out" && ! grep -q "^not ok" "$TMP/tail.out" &&
        ok "a tail case failing with steal 0.041 in each run: two retry lines, three runs, its failed check skipped as not judged, naming the steal" ||
        { not_ok "a tail case failing with steal"; sed 's/^/    # /' "$TMP/tail.out"; }
tries=0; GS_STOP_AT_CHECK="the check" tail_of stolen_fails "$TMP/run"
grep -q "^not ok - the check" "$TMP/tail.out" && ! grep -q "^skip" "$TMP/tail.out" &&
        ok "under the mutation check a tail check that failed with steal in each run is not ok (it failed)" ||
        { not_ok "a disturbed tail check under GS_STOP_AT_CHECK"; sed 's/^/    # /' "$TMP/tail.out"; }
calm_fails() { tries=$((tries + 1)); echo "$tries" >"$TMP/tries"; cp "$TMP/calm" "$TMP/run"; return 1; }
tries=0; tail_of calm_fails "$TMP/run"
! grep -q "^retry" "$TMP/tail.out" && [ "$(cat "$TMP/tries")" = 1 ] && grep -qx "status 1 why=" "$TMP/tail.out" &&
        grep -qx "not ok - the check" "$TMP/tail.out" &&
        ok "a tail case failing with steal 0.0012 (<= $PROBE_STEAL_TAIL_MAX): failed at once, no retry, not ok" ||
        { not_ok "a calm failing tail case"; sed 's/^/    # /' "$TMP/tail.out"; }
stolen_then_calm() { tries=$((tries + 1)); echo "$tries" >"$TMP/tries"
        [ "$tries" = 1 ] && { cp "$TMP/stolen" "$TMP/run"; return 1; }; cp "$TMP/calm" "$TMP/run"; }
tries=0; tail_of stolen_then_calm "$TMP/run"
[ "$(grep -c '^retry - ' "$TMP/tail.out")" = 1 ] && grep -qx "status 0" "$TMP/tail.out" &&
        ok "a tail case failed with steal, passed on its calm repeat: ok" || { not_ok "a repeated tail case"; sed 's/^/    # /' "$TMP/tail.out"; }
none_fails() { tries=$((tries + 1)); echo "$tries" >"$TMP/tries"; : >"$TMP/run"; return 1; }
tries=0; tail_of none_fails "$TMP/run"
! grep -q "^retry" "$TMP/tail.out" && [ "$(cat "$TMP/tries")" = 1 ] &&
        ok "a failed tail run that reported nothing is no disturbance to retry" || { not_ok "an empty tail report retried"; sed 's/^/    # /' "$TMP/tail.out"; }

# A whole case (probe_case_try), the steal over it measured from /proc/stat (here a made-up
# counter: probe_steal_now redefined; each run of the case advances it by 1000 ticks, STOLEN of
# them stolen). A case with a failed check and steal 0.041 runs three times, two retry lines, and
# its last run's lines are counted; without steal it fails at once; a calm repeat passes; a case
# that ends its shell is a failure; each run's simulated GPUs are its own (`n`).
probe_steal_now() { cat "$TMP/ticks"; }
advance() { read -r s t <"$TMP/ticks"; echo "$((s + $1)) $((t + 1000))" >"$TMP/ticks"; }
whole_of() { echo "0 0" >"$TMP/ticks"; ( . "$SRC/tests/lib/check.sh"; probe_case_try "the case" "$@"; echo "status $? counts $nok $nfail $nskip" ) >"$TMP/whole.out" 2>&1; }
# (each run is a subshell: the count of runs is kept in a file)
run_no() { runs=$(($(cat "$TMP/runs" 2>/dev/null || echo 0) + 1)); echo "$runs" >"$TMP/runs"; }
stolen_case() { run_no; echo "n $n" >>"$TMP/ns"; advance 41; ok "first check"; not_ok "the tail"; }
rm -f "$TMP/ns" "$TMP/runs"; whole_of stolen_case
[ "$(grep -c '^retry - the case: too disturbed to judge a tail: the hypervisor took 0.0410 .*run [12] of 3: not ok - the tail)' "$TMP/whole.out")" = 2 ] &&
        [ "$(cat "$TMP/runs")" = 3 ] && grep -qx "status 0 counts 1 0 1" "$TMP/whole.out" &&
        grep -q "^skip - the tail (not judged: the hypervisor took 0.0410 .*in each of 3 runs)" "$TMP/whole.out" &&
        grep -qx "ok - first check" "$TMP/whole.out" && ! grep -q "^not ok" "$TMP/whole.out" &&
        [ "$(sort -u "$TMP/ns" | wc -l)" = 3 ] &&
        ok "a case failing with steal 0.041 in each run: two retry lines, three runs on GPUs of their own, the last counted (1 ok, its failed check skipped as not judged, naming the steal)" ||
        { not_ok "a case failing with steal"; sed 's/^/    # /' "$TMP/whole.out" "$TMP/ns"; }
calm_case() { run_no; advance 1; not_ok "the tail"; }
rm -f "$TMP/runs"; whole_of calm_case
! grep -q "^retry" "$TMP/whole.out" && [ "$(cat "$TMP/runs")" = 1 ] && grep -qx "status 1 counts 0 1 0" "$TMP/whole.out" &&
        ok "a case failing with steal 0.001: failed at once, no retry" || { not_ok "a calm failing case"; sed 's/^/    # /' "$TMP/whole.out"; }
calm_repeat() { run_no
        if [ "$runs" = 1 ]; then advance 41; not_ok "the tail"; else advance 0; ok "the tail"; fi; }
rm -f "$TMP/runs"; whole_of calm_repeat
[ "$(grep -c '^retry - ' "$TMP/whole.out")" = 1 ] && grep -qx "ok - the tail" "$TMP/whole.out" && ! grep -q "^not ok" "$TMP/whole.out" &&
        grep -qx "status 0 counts 1 0 0" "$TMP/whole.out" &&
        ok "a case failed with steal, passed on its calm repeat: ok, the failed run not counted" || { not_ok "a repeated case"; sed 's/^/    # /' "$TMP/whole.out"; }
ends_shell() { ok "first"; exit 0; }
whole_of ends_shell
grep -q "^not ok - the case: the case ended before its last check" "$TMP/whole.out" && grep -qx "status 1 counts 0 1 0" "$TMP/whole.out" &&
        ok "a case that ends its shell is a failure, never a pass" || { not_ok "a case ending its shell"; sed 's/^/    # /' "$TMP/whole.out"; }

# The probe pinned to one CPU with a thread of its own spinning there the whole run (quiet mode:
# its launching thread busy between launches, always runnable): that thread waits for the CPU about
# half the run (thread_wait), for its own process's spinner (others: its CPU time); cpu_wait, what
# the bounds allow for, is the wait less that, what the rest of the machine took (about 0 on a
# quiet machine). (The fake GPU alone; no interposer needed.)
taskset -c 0 env LD_LIBRARY_PATH="$BUILD/tests/fakegpu" FAKEGPU_CONFIG="$SRC/tests/fakegpu/configs/1gpu.conf" \
        FAKEGPU_STATE="$TMP/fg.state" PROBE_BUSY_THREAD=1 "$BUILD/tests/vgpu/compute-probe" quiet 1 500 >"$TMP/own" 2>&1
tw=$(probe_field thread_wait "$TMP/own") cw=$(probe_field cpu_wait "$TMP/own") ot=$(probe_field others "$TMP/own")
if [ -z "$tw" ] || [ -z "$ot" ] || ! awk -v t="$tw" -v o="$ot" 'BEGIN { exit !(t >= 0.2 && o >= 0.2) }'; then
        not_ok "the probe beside a spinning thread of its own on one CPU: waited or spun too little to judge: $(tail -1 "$TMP/own")"
else
        awk -v c="$cw" -v t="$tw" -v o="$ot" 'BEGIN { m = t - o; exit !(c != "" && c <= (m > 0 ? m : 0) + 0.02) }' &&
                ok "a thread of the probe's own process kept it off its CPU: thread_wait $tw, its CPU time $ot, no allowance for it (cpu_wait $cw)" ||
                not_ok "a thread of the probe's own process kept it off its CPU: thread_wait $tw, its CPU time $ot, allowed for anyway (cpu_wait $cw; want <= thread_wait - others): $(tail -1 "$TMP/own")"
fi
finish
