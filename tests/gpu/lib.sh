# shellcheck shell=bash
# The counting of the real-GPU scripts (sourced by tests/gpu/run.sh and every sub-script it runs).
# A sub-script prints one line per check ("PASS desc", "FAIL desc", "SKIP desc") through `check`
# and `skip`, and ends with `finish`: its count "N passed, N failed, N skipped" as a line of its
# own, then exit 1 if any check failed or none ran (a script that checked nothing has not
# passed), 77 if every check was skipped, 0 otherwise. A script with a cleanup names it with
# `finish_trap CLEANUP`: whichever way it exits, the cleanup runs, then the count and the status.
# run.sh runs each sub-script through `sub`, which adds the sub-script's count to its own totals
# and FAILs the part where the exit status disagrees with that count (tests/gpu/test_counting.sh
# checks both without a GPU).
pass=0 fail=0 skipped=0

# check DESC CMD...: PASS when CMD exits 0, FAIL otherwise; returns 1 on a FAIL (`check ... || finish`)
check() {
        local d=$1; shift
        if "$@"; then pass=$((pass + 1)); echo "PASS $d"; else fail=$((fail + 1)); echo "FAIL $d"; return 1; fi
}
# skip DESC: a check this host cannot run (the reason in DESC)
skip() { skipped=$((skipped + 1)); echo "SKIP $1"; }

# gpu_status: the exit status the counts give (1: a failure or no check at all, 77: all skipped)
gpu_status() {
        [ "$fail" -gt 0 ] && return 1
        [ "$pass" -gt 0 ] && return 0
        [ "$skipped" -gt 0 ] && return 77
        return 1
}
# finish [STATUS]: the cleanup named by finish_trap (once), the count (the last line), then exit
# with gpu_status (it never returns). STATUS, given by the EXIT trap, is the status the script was
# leaving with: non-zero (an `exit 1` of its own, a command that stopped it) is one FAIL more.
finish() {
        local rc c=${GPU_CLEANUP:-}
        GPU_CLEANUP=
        [ -n "$c" ] && "$c"
        [ "${1:-0}" = 0 ] || check "the script stopped before its end (exit $1)" false
        [ $((pass + fail + skipped)) -gt 0 ] || echo "no check ran: that is not a pass"
        echo "$pass passed, $fail failed, $skipped skipped"
        gpu_status; rc=$?
        trap - EXIT
        exit "$rc"
}
# finish_trap [CLEANUP]: on any exit (finish, an `exit N`, the end of the script) run CLEANUP (a
# function) once, then print the count and exit as finish does
finish_trap() { GPU_CLEANUP=${1:-}; trap 'finish $?' EXIT; }

# sub PART SCRIPT ARGS...: run the sub-script (bash SCRIPT ARGS; its output to the terminal and to
# $OUTDIR/<script>.txt), add its own count (its last "N passed, N failed, N skipped" line) to pass,
# fail and skipped, and one FAIL more where its exit status disagrees with that count: no count
# at all (it stopped before its end), a non-zero status with no failed check (a crash, an exit of
# its own), 0 with a failed check or with no check passed, 77 with a check that ran.
# Returns 0 when the part passed.
sub() {
        local p=$1 s=$2 log rc line np nf ns; shift 2
        log=${OUTDIR:-/tmp}/$(basename "$s" .sh).txt
        bash "$s" "$@" 2>&1 | tee "$log"
        rc=${PIPESTATUS[0]}
        line=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$log" | tail -1)
        if [ -z "$line" ]; then
                check "$p: $s printed no count (exit $rc): it stopped before its end" false
                return 1
        fi
        read -r np _ nf _ ns _ <<<"${line//,/}"
        pass=$((pass + np)) fail=$((fail + nf)) skipped=$((skipped + ns))
        echo "== part $p: $s counted $line (exit $rc); added to the totals"
        case $rc in
        0) [ "$nf" = 0 ] || { check "$p: $s exited 0 with $nf failed check(s)" false; return 1; }
           [ "$np" -gt 0 ] || { check "$p: $s exited 0 and passed no check" false; return 1; } ;;
        77) [ "$np" = 0 ] && [ "$nf" = 0 ] || { check "$p: $s exited 77 (all skipped) after checks ran" false; return 1; } ;;
        *) [ "$nf" -gt 0 ] || { check "$p: $s exited $rc with no failed check counted" false; return 1; }
           return 1 ;;
        esac
        [ "$rc" = 0 ]
}
