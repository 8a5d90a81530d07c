# The checks every test script counts (sourced). Each script is one meson test: it prints one
# line per check ("ok - ", "not ok - ", "skip - ") and ends with `finish`, which exits 1 if any
# check failed, 77 (meson's SKIP) if every check was skipped, and 1 if no check ran at all: a
# script that tested nothing has not passed. tests/run-all.sh counts the "skip - " lines too.
nok=0 nfail=0 nskip=0

ok() { nok=$((nok + 1)); echo "ok - $1"; }
not_ok() {
        nfail=$((nfail + 1)); echo "not ok - $1"
        # GS_STOP_AT_CHECK=TEXT (set only by the mutation check, tests/mutation/run.sh, to the
        # check meant for the mutation): the first failed check that names TEXT ends the script
        # there, through `finish` (exit 1; its EXIT trap cleans up); what comes after it is not run.
        if [ -n "${GS_STOP_AT_CHECK:-}" ] && [[ "$1" == *"$GS_STOP_AT_CHECK"* ]]; then
                echo "# stopped at the check GS_STOP_AT_CHECK names"; finish
        fi
}
# skip DESC: a check that cannot run on this machine, with the reason in DESC. Never for a piece
# the test itself installs or builds: a broken environment is a failure, not a skip.
skip() { nskip=$((nskip + 1)); echo "skip - $1"; }

# sanitized_skip DESC [WHY]: in the sanitizer build (GS_SANITIZE: meson's b_sanitize, which
# meson.build passes to the timing tests; anything but none), a "skip - DESC: WHY" line and true;
# false in the normal build. WHY defaults to "timing accuracy is checked in the normal build".
# The timing tests (tests/vgpu, tests/gpu/test_latency_script.sh) run every case in the normal
# build; the sanitizer build, there for memory errors, runs the cases that exercise distinct code
# paths and skips, visibly, those that only repeat one at another share or limit:
#   sanitized_skip "cap 10 %" || run "cap 10 %" ...
sanitized() { case ${GS_SANITIZE:-none} in none | "" | "[]") return 1 ;; esac; }
sanitized_skip() {
        sanitized || return 1
        skip "$1: ${2:-timing accuracy is checked in the normal build}"
}

# check DESC CMD...: ok when CMD exits 0, not ok (with its exit status) otherwise
check() {
        local desc=$1 rc; shift
        if "$@"; then ok "$desc"; else rc=$?; not_ok "$desc (exit $rc)"; fi
}

# run_ok DESC CMD...: run CMD, which must succeed; on failure a not-ok line with the status and
# the command's stderr (stdout passes through). Returns CMD's status, so a negative check can sit
# behind it: `run_ok "ran" cmd && { negative checks on what it produced; }`.
run_ok() {
        local desc=$1 rc errf; shift
        errf=$(mktemp)
        "$@" 2>"$errf"; rc=$?
        if [ "$rc" -eq 0 ]; then ok "$desc"; else
                not_ok "$desc: exit $rc"; sed 's/^/    # /' "$errf" | head -20; fi
        rm -f "$errf"
        return "$rc"
}

# started DESC PID: a guard before checks that something did NOT happen inside a process: the
# pid is non-empty and the process exists (or existed: a zombie or a pid in /proc). Returns
# non-zero, with a not-ok line, when the process never started.
started() {
        if [ -n "${2:-}" ] && [ "$2" -gt 0 ] 2>/dev/null && [ -e "/proc/$2" ]; then
                ok "$1 (pid $2)"; return 0; fi
        not_ok "$1: no process (pid '${2:-}')"; return 1
}

# finish: the totals, then exit (it never returns, wherever it is called)
finish() {
        echo "# $nok ok, $nfail not ok, $nskip skipped"
        if [ "$nfail" -gt 0 ]; then exit 1; fi
        if [ "$nok" -eq 0 ]; then
                if [ "$nskip" -gt 0 ]; then exit 77; fi
                echo "# no check ran: that is not a pass"; exit 1
        fi
        exit 0
}

# need CMD...: every command is there (a name on PATH or an executable path), else one not-ok line
# naming the missing ones and the end of the script: `make test-deps` installs them, so a missing
# one is a broken environment, never a skip.
need() {
        local t missing=
        for t in "$@"; do command -v "$t" >/dev/null 2>&1 || [ -x "$t" ] || missing="$missing $t"; done
        [ -z "$missing" ] && return 0
        not_ok "not installed:$missing (make test-deps installs it)"
        finish
}
