#!/usr/bin/env bash
# MPS on the simulated GPU, the interposer's side (the host's side: tests/integration/test_mps_slice.sh):
#   1. the simulated daemon's fault, as measured on the H100 (tests/gpu/mps_fault_check.sh): one
#      client's illegal address gives every client of the server CUDA_ERROR_ILLEGAL_ADDRESS, the
#      server reports FAULT and refuses new clients (807) until they are gone, then serves again;
#   2. a slice's process cannot raise its SM percentage: not through its environment, not by
#      setenv before cuInit, not by dropping the pipe directory; and the server's percentage (the
#      host's) holds even for a process without the interposer;
#   3. a poisoned server (the supervisor's state file) or no daemon: the slice's new processes use
#      the time limiter, say so, and the usage region says how (the metric).
set -uo pipefail
SRC=${GS_SOURCE_DIR:?} BUILD=${GS_BUILD_DIR:?}
unset LD_LIBRARY_PATH LD_PRELOAD
LIB=$BUILD/libgpuslice-vgpu.so
PROBE=$BUILD/tests/vgpu/mps-probe
FAKE=$BUILD/tests/fakegpu
GS=$BUILD/gpuslice
TMP=$(mktemp -d /tmp/gs-mps.XXXXXX)
export FAKEGPU_CONFIG=$SRC/tests/fakegpu/configs/1gpu.conf FAKEGPU_STATE=$TMP/fakegpu.state
export GPUSLICE_ARBITER_DIR=$TMP/arbiter
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0
UUID=$(awk '$1 == "uuid" { print $2; exit }' "$FAKEGPU_CONFIG")
M=$TMP/mps/$UUID P=$M/pipe L=$M/log C=$M/client
mkdir -p "$GPUSLICE_ARBITER_DIR" "$P" "$L" "$C" "$TMP/bin" "$TMP/regions"
# the daemon starts its servers as nvidia-cuda-mps-server from its PATH: the same binary
ln -s "$FAKE/nvidia-cuda-mps-control" "$TMP/bin/nvidia-cuda-mps-server"
ui() { echo "$*" | CUDA_MPS_PIPE_DIRECTORY=$P "$FAKE/nvidia-cuda-mps-control" 2>&1; }
start_daemon() {
        env PATH="$TMP/bin:$PATH" CUDA_MPS_PIPE_DIRECTORY="$P" CUDA_MPS_LOG_DIRECTORY="$L" "$FAKE/nvidia-cuda-mps-control" -d
        for _ in $(seq 50); do [ -e "$P/nvidia-cuda-mps-control.pid" ] && [ -S "$P/control" ] && break; sleep 0.1; done
        ln -f "$P/control" "$C/control" # what `gpuslice mps` gives slices: the socket, linked
}
# (the simulated daemon is told to quit: it is not a job of ours)
trap 'kill $(jobs -p) 2>/dev/null; [ -e "$P/nvidia-cuda-mps-control.pid" ] && ui quit >/dev/null; rm -rf "$TMP"' EXIT
. "$SRC/tests/lib/check.sh" # ok, not_ok, skip, check, run_ok, started, finish
has() { # DESC FILE PATTERN (grep -E): a line of FILE matches
        if grep -qE -- "$3" "$2"; then ok "$1"; else not_ok "$1: no '$3' in:"; sed 's/^/    # /' "$2" | tail -8; fi
}
mps() { env LD_LIBRARY_PATH="$FAKE" CUDA_MPS_PIPE_DIRECTORY="$P" "$@"; }
sliced() { env LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$LIB" GPUSLICE_COMPUTE_LIMIT=30 GPUSLICE_MPS_PIPE_DIRECTORY="$C" \
        GPUSLICE_LOG_LEVEL=1 "$@"; }

start_daemon
[ -S "$C/control" ] && ok "the simulated daemon runs, its control socket linked into the client directory" ||
        not_ok "no simulated daemon: $(ls -la "$P")"

# ---- 1. one client's fault is every client's ---------------------------------------------------
# (env execs the probe: $! is its pid)
env LD_LIBRARY_PATH="$FAKE" CUDA_MPS_PIPE_DIRECTORY="$P" CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50 "$PROBE" serve 3 >"$TMP/a.out" 2>&1 &
A=$!
sleep 0.7
SRV=$(ui get_server_list | head -1)
[ "$(ui get_server_status "$SRV")" = ACTIVE ] && ok "a server ($SRV) for the first client, ACTIVE" ||
        not_ok "server status before the fault: $(ui get_server_status "$SRV")"
env LD_LIBRARY_PATH="$FAKE" CUDA_MPS_PIPE_DIRECTORY="$P" CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50 "$PROBE" fault 1.2 >"$TMP/b.out" 2>&1 &
B=$!
sleep 0.5
[ "$(ui get_server_status "$SRV")" = FAULT ] && ok "after one client's illegal address the server is in FAULT" ||
        not_ok "server status after the fault: $(ui get_server_status "$SRV")"
mps "$PROBE" sms >"$TMP/c.out" 2>&1
has "a new client while the fault's clients live is refused: cuInit 807 (MPS_SERVER_NOT_READY)" "$TMP/c.out" "^init=807 "
[ "$(ui get_client_list "$SRV" | sort | tr '\n' ' ')" = "$(printf '%s\n' "$A" "$B" | sort | tr '\n' ' ')" ] &&
        ok "get_client_list names the two clients" || not_ok "get_client_list: $(ui get_client_list "$SRV" | tr '\n' ' ')"
wait $B
wait $A
has "the faulting client: the launch succeeds, then 700 (ILLEGAL_ADDRESS) for every call" "$TMP/b.out" "^launch=0 synchronize=700 next=700$"
has "the other client ran on its 50 % (66 SMs) before" "$TMP/a.out" "^init=0 sms=66 "
has "... and got 700 from the fault on" "$TMP/a.out" "^request [0-9]+: 700$"
has "... to its last request" "$TMP/a.out" "^served requests=[0-9]+ failed=[1-9][0-9]* last=700$"
[ "$(ui get_server_status "$SRV")" = ACTIVE ] && ok "its clients gone, the same server is ACTIVE again" ||
        not_ok "server status after the clients left: $(ui get_server_status "$SRV")"
mps CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50 "$PROBE" serve 0.3 >"$TMP/d.out" 2>&1
has "... and serves a new client" "$TMP/d.out" "^served requests=[0-9]+ failed=0 last=0$"
[ "$(ui get_server_list | head -1)" = "$SRV" ] && ok "... with the same server process (the daemon and server live on)" ||
        not_ok "server list after the fault: $(ui get_server_list | tr '\n' ' ')"
# (the server names the client that connected first, A, though B faulted: as the real one did)
for line in "Client \{PID: $A, Context: 1\} encountered a fatal GPU error\." "Server is handling a fatal GPU error\." \
        "The following client process have a sticky error set:" "Server teardown in progress\. Refusing to accept new client" \
        "Destroy server context on device 0"; do
        has "server.log: '$line'" "$L/server.log" "\[[0-9: .-]+ Server +$SRV\] $line"
done
# Without MPS, a fault stays in its process (time mode measured the same on the H100).
env LD_LIBRARY_PATH="$FAKE" "$PROBE" serve 1.5 >"$TMP/e.out" 2>&1 &
E=$!
sleep 0.3
env LD_LIBRARY_PATH="$FAKE" "$PROBE" fault 0.2 >"$TMP/f.out" 2>&1
wait $E
has "without MPS the faulting process gets 700 ..." "$TMP/f.out" "^launch=0 synchronize=700 next=700$"
has "... and its neighbour nothing" "$TMP/e.out" "^served requests=[0-9]+ failed=0 last=0$"

# ---- 2. raising the SM percentage from inside ---------------------------------------------------
# The host holds the server (and the default) at the slice's 30 %, as gpuslice does.
[ "$(ui set_active_thread_percentage "$SRV" 30)" = 30.0 ] && [ "$(ui set_default_active_thread_percentage 30)" = 30.0 ] &&
        ok "the server and the daemon's default at 30 %" || not_ok "cannot set the server's percentage"
sliced CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100 "$PROBE" sms >"$TMP/r1.out" 2>&1
has "a slice process with CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100 in its environment: 38 of 132 SMs, through MPS" \
        "$TMP/r1.out" "^init=0 sms=38 intercepted=0$"
sliced PROBE_SETENV_PCT=100 "$PROBE" sms >"$TMP/r2.out" 2>&1
has "one that sets it to 100 itself before cuInit: 38 SMs" "$TMP/r2.out" "^init=0 sms=38 intercepted=0$"
has "... and the interposer says it put the slice's back" "$TMP/r2.out" "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100 .* set by the process: cuInit gets the slice's 30"
sliced PROBE_UNSET_PIPE=1 "$PROBE" sms >"$TMP/r3.out" 2>&1
has "one that unsets CUDA_MPS_PIPE_DIRECTORY before cuInit (to run off MPS, unconfined): still 38 SMs through MPS" \
        "$TMP/r3.out" "^init=0 sms=38 intercepted=0$"
mps CUDA_MPS_PIPE_DIRECTORY="$C" CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100 "$PROBE" sms >"$TMP/r4.out" 2>&1
has "a process without the interposer asking 100 %: the server's 30 % (38 SMs), the host's ceiling" "$TMP/r4.out" "^init=0 sms=38 "
# Negative controls: each guard alone. The server at 100 %:
ui set_active_thread_percentage "$SRV" 100 >/dev/null
mps CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100 "$PROBE" sms >"$TMP/n1.out" 2>&1
has "control: with the server at 100 % a process without the interposer gets every SM (132)" "$TMP/n1.out" "^init=0 sms=132 "
sliced PROBE_SETENV_PCT=100 "$PROBE" sms >"$TMP/n2.out" 2>&1
has "... while the interposer alone still holds its slice at 38" "$TMP/n2.out" "^init=0 sms=38 intercepted=0$"
ui set_active_thread_percentage "$SRV" 30 >/dev/null
# A user other than the server's may not change its percentage (the real daemon's answer).
if command -v setpriv >/dev/null; then
        chmod 755 "$TMP" "$TMP/mps" "$M" "$P"
        out=$(echo "set_active_thread_percentage $SRV 100" | setpriv --reuid=65534 --regid=65534 --clear-groups \
                env CUDA_MPS_PIPE_DIRECTORY="$P" "$FAKE/nvidia-cuda-mps-control" 2>&1)
        [[ $out == "Insufficient privileges for UID 65534."* ]] && [ "$(ui get_active_thread_percentage "$SRV")" = 30.0 ] &&
                ok "another user's set_active_thread_percentage is refused, as the real daemon refuses it" ||
                not_ok "uid 65534 set the percentage: $out / $(ui get_active_thread_percentage "$SRV")"
else
        not_ok "setpriv is not installed (util-linux, make test-deps): another user's request not tried"
fi

# ---- 3. poisoned, or no daemon: the time limiter, said and recorded ----------------------------
printf '[slice]\nmps-root = "%s"\nregions-dir = "%s"\n' "$TMP/mps" "$TMP/regions" >"$TMP/config.toml"
metrics() { "$GS" metrics --once --no-nvml --no-hami --window 0.2 --config "$TMP/config.toml" --region "$1" 2>"$TMP/metrics.err"; }
printf 'state=poisoned\nsince=1\nserver=%s\nfaults=1\nrestarts=0\nresets=0\npercentage=30\n' "$SRV" >"$C/state"
sliced GPUSLICE_REGION="$TMP/poisoned.region" "$PROBE" sms >"$TMP/p.out" 2>&1
has "poisoned: the slice's new process says so" "$TMP/p.out" "MPS: the GPU's MPS server is poisoned .*; using the time limiter"
has "... does not connect (every SM seen) and its launches go through the time limiter" "$TMP/p.out" "^init=0 sms=132 intercepted=1$"
[ "$(ui get_client_list "$SRV")" = "" ] && ok "... and is no client of the server" || not_ok "clients: $(ui get_client_list "$SRV")"
metrics "$TMP/poisoned.region" >"$TMP/m1.out"
has "metric: the slice's compute mechanism is time_fallback" "$TMP/m1.out" '^gpuslice_slice_compute_mechanism\{.*mechanism="time_fallback"\} 1$'
has "metric: the GPU's MPS is poisoned" "$TMP/m1.out" "^gpuslice_mps_poisoned\{UUID=\"$UUID\"\} 1$"
has "metric: one server fault" "$TMP/m1.out" "^gpuslice_mps_server_faults_total\{UUID=\"$UUID\"\} 1$"
printf 'state=ok\nsince=2\nserver=0\nfaults=1\nrestarts=1\nresets=0\npercentage=30\n' >"$C/state"
sliced GPUSLICE_REGION="$TMP/ok.region" "$PROBE" sms >"$TMP/o.out" 2>&1
has "the state ok again: the slice's next process connects (38 SMs, nothing intercepted)" "$TMP/o.out" "^init=0 sms=38 intercepted=0$"
metrics "$TMP/ok.region" >"$TMP/m2.out"
has "metric: its mechanism is mps" "$TMP/m2.out" '^gpuslice_slice_compute_mechanism\{.*mechanism="mps"\} 1$'
has "metric: not poisoned, the fault and the restart counted" "$TMP/m2.out" "^gpuslice_mps_poisoned\{UUID=\"$UUID\"\} 0$"
has "metric: the daemon is up" "$TMP/m2.out" "^gpuslice_mps_daemon_up\{UUID=\"$UUID\"\} 1$"
ui quit >/dev/null
for _ in $(seq 50); do [ -e "$P/nvidia-cuda-mps-control.pid" ] || break; sleep 0.1; done
sliced GPUSLICE_REGION="$TMP/gone.region" "$PROBE" sms >"$TMP/g.out" 2>&1
has "no daemon: the slice's process says so" "$TMP/g.out" "MPS: no control daemon at $C; using the time limiter"
has "... and takes turns (every SM, intercepted)" "$TMP/g.out" "^init=0 sms=132 intercepted=1$"
metrics "$TMP/gone.region" >"$TMP/m3.out"
has "metric: time_fallback" "$TMP/m3.out" '^gpuslice_slice_compute_mechanism\{.*mechanism="time_fallback"\} 1$'
has "metric: the daemon is down" "$TMP/m3.out" "^gpuslice_mps_daemon_up\{UUID=\"$UUID\"\} 0$"
env LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$LIB" GPUSLICE_COMPUTE_LIMIT=30 GPUSLICE_REGION="$TMP/time.region" "$PROBE" sms >/dev/null 2>&1
metrics "$TMP/time.region" >"$TMP/m4.out"
has "a slice without MPS: mechanism time" "$TMP/m4.out" '^gpuslice_slice_compute_mechanism\{.*mechanism="time"\} 1$'

finish
