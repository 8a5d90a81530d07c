#!/usr/bin/env bash
# gpuslice mps start | stop | status against fake driver roots, whose nvidia-cuda-mps-control is
# the simulated one (tests/fakegpu/fake_mps_control.c).
. "$(dirname "$0")/lib.sh"

# Every control daemon this test started is ended at exit, by the pid its pid file names (and
# only if that pid is still an MPS process), never by name.
cleanup() {
        local f p
        while IFS= read -r f; do
                p=$(cat "$f" 2>/dev/null) || continue
                [ "$(cat "/proc/$p/comm" 2>/dev/null)" = nvidia-cuda-mps ] && kill -CONT "$p" 2>/dev/null && kill "$p" 2>/dev/null
        done < <(find "$TMP" -name nvidia-cuda-mps-control.pid 2>/dev/null)
        rm -rf "$TMP"
}
trap cleanup EXIT

check() { # DESC CMD...: ok when CMD succeeds
        local d=$1; shift
        if "$@" >/dev/null 2>&1; then ok "$d"; else not_ok "$d"; fi
}
# A live MPS process (a zombie has an empty cmdline).
alive() { [ -n "$1" ] && [ "$(cat "/proc/$1/comm" 2>/dev/null)" = nvidia-cuda-mps ] &&
        [ -n "$(tr -d '\0' <"/proc/$1/cmdline" 2>/dev/null)" ]; }
session_of() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{ print $4 }'; }
dead() { ! alive "$1"; }
pidfile() { echo "$1/$2/pipe/nvidia-cuda-mps-control.pid"; } # MPSROOT UUID
daemon_of() { cat "$(pidfile "$1" "$2")" 2>/dev/null; }
jqcheck() { # NAME DESC FILTER: jq -e FILTER on NAME's stdout
        if jq -e "$3" "$TMP/$1.out" >/dev/null 2>&1; then ok "$2"; else not_ok "$2"; sed 's/^/    # /' "$TMP/$1.out" | head -30; fi
}

ROOT=$(mkroot 2gpu 2gpu.conf)
MPS=$TMP/mps
U0=GPU-2f8c1d4e-7a90-3b5c-e6d1-0a9b8c7d6e5f
U1=GPU-9e3a5b7c-1d2f-4a6b-8c0d-2e4f6a8b0c1d
M=("$GS" --root "$ROOT" mps)

# ---- usage -------------------------------------------------------------------------------------
run help -- "${M[@]}" --help
expect_rc help 0 "mps --help"
expect_out_lacks help "no such" "mps --help prints the help"
grep -q "start" "$TMP/help.out" && grep -q "status" "$TMP/help.out" && ok "mps --help names the commands" ||
        not_ok "mps --help names the commands"
for sub in start stop status; do
        run "help_$sub" -- "${M[@]}" "$sub" --help
        expect_rc "help_$sub" 0 "mps $sub --help"
        grep -q -- "--mps-root" "$TMP/help_$sub.out" && ok "mps $sub --help shows --mps-root" ||
                not_ok "mps $sub --help shows --mps-root"
done
run nosub -- "${M[@]}"
expect_rc nosub 2 "mps without a command is a usage error"
run badsub -- "${M[@]}" restart
expect_rc badsub 2 "an unknown mps command is a usage error"
expect_err badsub "unknown mps command 'restart'" "... named"
run startjson -- "${M[@]}" start --json --mps-root "$MPS"
expect_rc startjson 2 "--json is for status only"
run relroot -- "${M[@]}" start --mps-root relative/mps
expect_rc relroot 2 "a relative --mps-root is a usage error"
expect_err relroot "--mps-root must be an absolute path: relative/mps" "... with a clear message"
run extra -- "${M[@]}" status extra --mps-root "$MPS"
expect_rc extra 2 "an extra argument is a usage error"
run badtimeout -- "${M[@]}" start --timeout 0 --mps-root "$MPS"
expect_rc badtimeout 2 "--timeout 0 is a usage error"
check "usage errors created nothing" test ! -e "$MPS"

# ---- start: both GPUs, a hostile caller environment ---------------------------------------------
run start -- env LD_PRELOAD=/nonexistent/poison.so LD_LIBRARY_PATH=/nonexistent GPUSLICE_CALLER_ONLY=1 \
        CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=10 "${M[@]}" start --mps-root "$MPS"
expect_rc start 0 "start on a 2-GPU root"
P0=$(daemon_of "$MPS" $U0) P1=$(daemon_of "$MPS" $U1)
expect_out_has start "GPU 0 ($U0): started the MPS control daemon (pid $P0), pipe directory $MPS/$U0/pipe" \
        "start reports GPU 0's daemon and its pipe directory"
expect_out_has start "GPU 1 ($U1): started the MPS control daemon (pid $P1), pipe directory $MPS/$U1/pipe" \
        "start reports GPU 1's daemon"
check "GPU 0's daemon is alive" alive "$P0"
check "GPU 1's daemon is alive" alive "$P1"
check "two different daemons" test "$P0" != "$P1"
for u in $U0 $U1; do
        for d in "$MPS/$u" "$MPS/$u/pipe" "$MPS/$u/log"; do
                check "${d#"$TMP"/} is a 0755 directory" test "$(stat -c '%F %a' "$d" 2>/dev/null)" = "directory 755"
        done
        check "$u: the control socket is in the pipe directory" test -S "$MPS/$u/pipe/control"
        check "$u: control.log is in the log directory" grep -q "Starting control daemon using socket $MPS/$u/pipe/control" "$MPS/$u/log/control.log"
done
# The daemon's whole environment: exactly these four, nothing of the caller's.
tr '\0' '\n' <"/proc/$P0/environ" | sort >"$TMP/env0.out"
printf '%s\n' "CUDA_MPS_LOG_DIRECTORY=$MPS/$U0/log" "CUDA_MPS_PIPE_DIRECTORY=$MPS/$U0/pipe" \
        "CUDA_VISIBLE_DEVICES=$U0" "PATH=$ROOT/usr/bin" >"$TMP/env0.expected"
expect_same env0 "$TMP/env0.expected" "the daemon's environment is exactly its GPU, its directories and the root's PATH"
check "no LD_PRELOAD in the daemon's environment" sh -c "! tr '\0' '\n' </proc/$P1/environ | grep -q '^LD_'"
check "GPU 1's daemon sees only GPU 1" sh -c "tr '\0' '\n' </proc/$P1/environ | grep -qx CUDA_VISIBLE_DEVICES=$U1"
check "the daemon is in a session of its own (not the caller's)" \
        test -n "$(session_of "$P0")" -a "$(session_of "$P0")" != "$(session_of $$)"

# ---- status ----------------------------------------------------------------------------------
run status -- "${M[@]}" status --mps-root "$MPS"
expect_rc status 0 "status"
expect_out_has status "GPU 0 ($U0): running (control daemon pid $P0)" "status: GPU 0 running with its pid"
expect_out_has status "  pipe directory: $MPS/$U0/pipe" "status: GPU 0's pipe directory"
expect_out_has status "  log directory:  $MPS/$U0/log" "status: GPU 0's log directory"
expect_out_has status "  servers:        none" "status: no servers yet"
run sjson -- "${M[@]}" status --json --mps-root "$MPS"
expect_rc sjson 0 "status --json"
jqcheck sjson "status --json: both GPUs, running, with pids, directories and no servers" \
        "(.gpus|length) == 2 and
         .gpus[0] == {index: 0, uuid: \"$U0\", running: true, pid: $P0, pipe_directory: \"$MPS/$U0/pipe\",
                      log_directory: \"$MPS/$U0/log\", servers: []} and
         .gpus[1].index == 1 and .gpus[1].uuid == \"$U1\" and .gpus[1].running and .gpus[1].pid == $P1"

# An MPS server (as a client's first connection would start one): status lists its pid.
echo "start_server -uid 0" | env -i CUDA_MPS_PIPE_DIRECTORY="$MPS/$U0/pipe" "$ROOT/usr/bin/nvidia-cuda-mps-control" \
        >"$TMP/srv.out" 2>&1
run sjson2 -- "${M[@]}" status --json --mps-root "$MPS"
S0=$(jq -r '.gpus[0].servers[0] // empty' "$TMP/sjson2.out" 2>/dev/null)
jqcheck sjson2 "status --json lists GPU 0's one server, none on GPU 1" '(.gpus[0].servers|length) == 1 and .gpus[1].servers == []'
check "... that is a live nvidia-cuda-mps-server (found through the daemon's PATH)" \
        sh -c "tr '\0' '\n' </proc/$S0/cmdline | head -1 | grep -qx nvidia-cuda-mps-server"
run status2 -- "${M[@]}" status --mps-root "$MPS" --device 0
expect_out_has status2 "  servers:        $S0" "status text lists the server"

# ---- start again: nothing new ------------------------------------------------------------------
run again -- "${M[@]}" start --mps-root "$MPS"
expect_rc again 0 "start again succeeds"
expect_out_has again "GPU 0 ($U0): already running (pid $P0), pipe directory $MPS/$U0/pipe" "... says GPU 0 is already running"
expect_out_has again "GPU 1 ($U1): already running (pid $P1), pipe directory $MPS/$U1/pipe" "... and GPU 1"
check "... and started no other daemon" test "$(daemon_of "$MPS" $U0) $(daemon_of "$MPS" $U1)" = "$P0 $P1"

# ---- stop, by selection and all -----------------------------------------------------------------
run stop1 -- "${M[@]}" stop --device 1 --mps-root "$MPS"
expect_rc stop1 0 "stop --device 1"
expect_out_has stop1 "GPU 1 ($U1): stopped the MPS control daemon (pid $P1)" "... stops GPU 1's daemon"
expect_out_lacks stop1 "GPU 0" "... and touches nothing of GPU 0"
check "GPU 1's daemon is gone" dead "$P1"
check "GPU 0's daemon still runs" alive "$P0"
check "GPU 1's pid file is gone" test ! -e "$(pidfile "$MPS" $U1)"
run sjson3 -- "${M[@]}" status --json --mps-root "$MPS"
jqcheck sjson3 "status --json after stopping GPU 1" \
        '.gpus[0].running and (.gpus[1] | .running == false and .pid == null and .servers == [])'
run stopall -- "${M[@]}" stop --mps-root "$MPS"
expect_rc stopall 0 "stop (all)"
expect_out_has stopall "GPU 0 ($U0): stopped the MPS control daemon (pid $P0)" "... stops GPU 0's daemon"
expect_out_has stopall "GPU 1 ($U1): not running" "... and says GPU 1 was not running"
check "GPU 0's daemon is gone" dead "$P0"
check "... and its server with it" dead "$S0"
check "the daemon's own files stay (its control.log)" test -s "$MPS/$U0/log/control.log"
run stopagain -- "${M[@]}" stop --mps-root "$MPS"
expect_rc stopagain 0 "stop with nothing running succeeds"
expect_out_has stopagain "GPU 0 ($U0): not running" "... and says so"
run status3 -- "${M[@]}" status --mps-root "$MPS"
if grep -qxF "GPU 0 ($U0): not running" "$TMP/status3.out"; then ok "status: not running, though its control socket is left"
else not_ok "status after stop"; fi

# ---- selection by UUID, restart over the old daemon's files ------------------------------------
run byuuid -- "${M[@]}" start --device "$U1" --mps-root "$MPS"
expect_rc byuuid 0 "start --device GPU-UUID"
P1=$(daemon_of "$MPS" $U1)
check "... starts GPU 1's daemon again over the files the last one left" alive "$P1"
expect_out_lacks byuuid "GPU 0" "... and only GPU 1's"
check "GPU 0 stays stopped" test ! -e "$(pidfile "$MPS" $U0)"

# ---- a killed daemon (its pid file left behind) ----------------------------------------------
kill -9 "$P1"
for _ in $(seq 50); do dead "$P1" && break; sleep 0.1; done
run sjson4 -- "${M[@]}" status --json --mps-root "$MPS" --device 1
jqcheck sjson4 "a killed daemon's stale pid file does not count as running" '.gpus[0].running == false'
run restart -- "${M[@]}" start --device 1 --mps-root "$MPS"
expect_rc restart 0 "start after a killed daemon"
P1b=$(daemon_of "$MPS" $U1)
check "... starts a new daemon" alive "$P1b"
check "... with a new pid" test "$P1b" != "$P1"

# ---- a stopped (unresponsive) daemon: bounded waits ----------------------------------------------
kill -STOP "$P1b"
start_ms=$(date +%s%3N)
run hung_status -- "${M[@]}" status --json --mps-root "$MPS" --device 1 --timeout 0.5
ms=$(( $(date +%s%3N) - start_ms ))
expect_rc hung_status 0 "status of an unresponsive daemon still answers"
jqcheck hung_status "... running, servers unknown, with an error" \
        '.gpus[0].running and .gpus[0].servers == [] and (.gpus[0].error | test("did not finish in time"))'
if [ "$ms" -lt 3000 ]; then ok "... within the timeout (${ms} ms)"; else not_ok "status took ${ms} ms"; fi
run hung_stop -- "${M[@]}" stop --device 1 --mps-root "$MPS" --timeout 0.5
expect_rc hung_stop 1 "stop of an unresponsive daemon fails"
expect_err hung_stop "gpuslice: mps error:" "... as an mps error"
expect_err hung_stop "did not finish in time" "... saying it timed out"
check "... and leaves the daemon alone" alive "$P1b"
# The timed-out stop's quit is still queued on the daemon's socket: continued, the daemon carries it
# out, so this stop mostly finds it gone or going, its pid file removed: "not running", and no pid to wait
# for (stop waits until a daemon it finds running is gone: the stops above check that at once).
# The process itself may still be on its way out (seen in CI: the sanitizer build, under load), so
# it gets a bounded moment to go.
kill -CONT "$P1b"
run stop_cont -- "${M[@]}" stop --device 1 --mps-root "$MPS"
expect_rc stop_cont 0 "once it answers again, stop works"
for _ in $(seq 50); do dead "$P1b" && break; sleep 0.1; done
check "... and it is gone (within 5 s: the quit the timed-out stop left is carried out)" dead "$P1b"

# ---- two starts at once: one daemon --------------------------------------------------------------
"${M[@]}" start --device 0 --mps-root "$MPS" >"$TMP/c1.out" 2>&1 &
c1=$!
"${M[@]}" start --device 0 --mps-root "$MPS" >"$TMP/c2.out" 2>&1 &
c2=$!
wait $c1; r1=$?
wait $c2; r2=$?
check "two concurrent starts both succeed" test "$r1 $r2" = "0 0"
n_started=$(cat "$TMP/c1.out" "$TMP/c2.out" | grep -c "started the MPS control daemon")
n_already=$(cat "$TMP/c1.out" "$TMP/c2.out" | grep -c "already running")
check "... one started the daemon, the other found it running" test "$n_started $n_already" = "1 1"
run stopc -- "${M[@]}" stop --mps-root "$MPS"
expect_rc stopc 0 "stop after the concurrent starts"

# ---- the host config's slice.mps-root ------------------------------------------------------------
printf '[slice]\nmps-root = "%s"\n' "$TMP/mps-conf" >"$TMP/config.toml"
run conf -- "${M[@]}" start --device 0 --config "$TMP/config.toml"
expect_rc conf 0 "start with slice.mps-root from --config"
check "... puts the pipe directory under it" test -S "$TMP/mps-conf/$U0/pipe/control"
PC=$(daemon_of "$TMP/mps-conf" $U0)
run confover -- "${M[@]}" status --json --device 0 --config "$TMP/config.toml" --mps-root "$MPS"
jqcheck confover "--mps-root wins over the config" ".gpus[0].running == false and .gpus[0].pipe_directory == \"$MPS/$U0/pipe\""
run confstop -- "${M[@]}" stop --config "$TMP/config.toml"
expect_out_has confstop "GPU 0 ($U0): stopped the MPS control daemon (pid $PC)" "... which was running there"
expect_rc confstop 0 "stop with the same config"
check "... stops that daemon" test ! -e "$(pidfile "$TMP/mps-conf" $U0)"
printf '[slice]\nmps-root = "relative"\n' >"$TMP/bad.toml"
run badconf -- "${M[@]}" status --config "$TMP/bad.toml"
expect_rc badconf 1 "a relative slice.mps-root in the config is refused"
expect_err badconf "gpuslice: mps error: $TMP/bad.toml:2: 'slice.mps-root' must be an absolute path" "... naming the file and line"

# ---- bad MPS roots and selections ----------------------------------------------------------------
touch "$TMP/afile"
run rootfile -- "${M[@]}" start --mps-root "$TMP/afile"
expect_rc rootfile 1 "an MPS root that is a file is refused"
expect_err rootfile "gpuslice: mps error: MPS root: $TMP/afile is not a directory" "... with a clear message"
run rootunder -- "${M[@]}" start --mps-root "$TMP/afile/mps"
expect_rc rootunder 1 "an MPS root under a file is refused"
expect_err rootunder "$TMP/afile is not a directory" "... naming the file"
run statusfile -- "${M[@]}" status --mps-root "$TMP/afile"
expect_rc statusfile 1 "status with an MPS root that is a file fails too"
long=$TMP/$(printf 'x%.0s' $(seq 60))
run toolong -- "${M[@]}" start --mps-root "$long"
expect_rc toolong 1 "an MPS root too long for the daemon's sockets is refused"
expect_err toolong "would not fit a UNIX socket address" "... saying why"
check "... before creating anything" test ! -e "$long"
mkdir -p "$TMP/mps-link"
ln -s "$TMP" "$TMP/mps-link/$U0"
run link -- "${M[@]}" start --device 0 --mps-root "$TMP/mps-link"
expect_rc link 1 "a symlink in place of a GPU directory is refused"
expect_err link "$TMP/mps-link/$U0 is not a directory (or is a symlink)" "... with a clear message"
run none -- "${M[@]}" start --device none --mps-root "$MPS"
expect_rc none 1 "--device none selects nothing: an error"
expect_err none "gpuslice: mps error: no GPU selected" "... saying so"
run unknown -- "${M[@]}" status --device 7 --mps-root "$MPS"
expect_rc unknown 1 "an unknown device"
expect_err unknown "7: unknown device" "... is named"

# ---- MIG --------------------------------------------------------------------------------------
MROOT=$(mkroot mig 8gpu-mig.conf)
MM=("$GS" --root "$MROOT" mps)
run mig -- "${MM[@]}" start --device MIG-8c5f0e2a-6d1b-5a7e-9f3c-4b2d1e0a9c87 --mps-root "$TMP/mps-mig"
expect_rc mig 1 "a MIG device is refused"
expect_err mig "gpuslice: mps error: MIG-8c5f0e2a-6d1b-5a7e-9f3c-4b2d1e0a9c87: MIG devices are not supported" "... clearly"
run migmode -- "${MM[@]}" start --device 2 --mps-root "$TMP/mps-mig"
expect_rc migmode 1 "a GPU in MIG mode is refused"
expect_err migmode "GPU 2 (GPU-2c3d4e5f-6071-8293-a4b5-c6d7e8f90a12) is in MIG mode" "... clearly"
check "... and nothing was created" test ! -e "$TMP/mps-mig"
run migall -- "${MM[@]}" start --device 1,2,3 --mps-root "$TMP/mps-mig"
expect_rc migall 1 "a list with a GPU in MIG mode is refused as a whole"
check "... before any daemon starts" test ! -e "$TMP/mps-mig"
run migall2 -- "${MM[@]}" start --mps-root "$TMP/mps-mig"
expect_rc migall2 0 "start with all on a machine with a MIG GPU"
expect_out_has migall2 "GPU 2 (GPU-2c3d4e5f-6071-8293-a4b5-c6d7e8f90a12): skipped: MIG mode is enabled" "... passes over the MIG GPU"
check "... and starts the other seven" test "$(grep -c 'started the MPS control daemon' "$TMP/migall2.out")" = 7
run migstop -- "${MM[@]}" stop --mps-root "$TMP/mps-mig"
expect_rc migstop 0 "stop them all"
check "... seven stopped" test "$(grep -c 'stopped the MPS control daemon' "$TMP/migstop.out")" = 7

# ---- the control binary: missing, or one that never starts a daemon -----------------------------
NROOT=$(mkroot nomps 1gpu.conf)
rm -f "$NROOT/usr/bin/nvidia-cuda-mps-control"
U=$(awk '$1 == "uuid" { print $2; exit }' "$SRC/tests/fakegpu/configs/1gpu.conf")
run nobin -- "$GS" --root "$NROOT" mps start --mps-root "$TMP/mps-nobin"
expect_rc nobin 1 "start without nvidia-cuda-mps-control in the root"
expect_err nobin "gpuslice: mps error: nvidia-cuda-mps-control not found under the driver root $NROOT" "... says what is missing where"
check "... and creates nothing" test ! -e "$TMP/mps-nobin"
run nobinstatus -- "$GS" --root "$NROOT" mps status --mps-root "$TMP/mps-nobin"
expect_rc nobinstatus 0 "status without the binary, nothing running"
expect_out_has nobinstatus "GPU 0 ($U): not running" "... says not running"
install -m 0755 "$BUILD/tests/fakegpu/fakegpu-stub-bin" "$NROOT/usr/bin/nvidia-cuda-mps-control"
start_ms=$(date +%s%3N)
run stub -- "$GS" --root "$NROOT" mps start --mps-root "$TMP/mps-stub" --timeout 0.5
ms=$(( $(date +%s%3N) - start_ms ))
expect_rc stub 1 "a control binary that starts no daemon"
expect_err stub "the MPS control daemon did not come up within 0.5 s (no live nvidia-cuda-mps-control.pid in the pipe directory)" \
        "... is a timeout error saying what is missing"
if [ "$ms" -lt 3000 ]; then ok "... within the timeout (${ms} ms)"; else not_ok "the stub start took ${ms} ms"; fi
check "... and the empty directories it made are removed" test ! -e "$TMP/mps-stub/$U"

finish
