#!/usr/bin/env bash
# What the real MPS daemon does when one client faults, and who can change the SM percentage:
# the facts the simulated daemon (tests/fakegpu/fake_mps_control.c) and `gpuslice mps supervise`
# are built on. Needs only the driver's nvidia-cuda-mps-control and nvcc; stops what it starts.
#   tests/gpu/mps_fault_check.sh      (on the GPU host, as root; OUT=DIR keeps the raw outputs)
# Parts:
#   A. the fault: client A serves requests, client B writes to an illegal address; what A and B
#      get, whether a new client is refused while they live and served after, the server's pid
#      before/after, the daemon's answers (get_server_list, get_client_list, get_server_status,
#      ps) at each step, and the whole control.log and server.log
#   B. the percentage: set_default_active_thread_percentage / set_active_thread_percentage against
#      a client that sets CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100 itself
#   C. who may send commands: a non-root user; root in a mount namespace where the pipe
#      directory's control_privileged is masked (as a container would see it: the settings, then
#      start_server, shutdown_server, quit); a client there, one with the pipe directory mounted
#      read-only, one through a read-only directory holding a hard link of the control socket
#      (gpuslice's <mps-root>/<GPU-UUID>/client/), one through a bind of the socket alone
# A record of facts; what it needs and the fact `gpuslice mps supervise` is built on (once the
# faulting client and its peers are gone, the daemon serves new clients) are checked: PASS/FAIL
# lines, then "N passed, N failed, N skipped" (tests/gpu/lib.sh); exit 1 on a FAIL.
set -u
cd "$(dirname "$0")/../.."
. tests/gpu/lib.sh
export PATH=$PATH:/usr/local/cuda/bin
R=$(mktemp -d /tmp/gs-mpsfault.XXXXXX)
OUTDIR=${OUT:-$R/out}
mkdir -p "$OUTDIR" "$R/pipe" "$R/log"
chmod 755 "$R" "$R/pipe" "$R/log"
check "nvcc builds tests/gpu/mps_fault.cu" nvcc -O2 -o "$R/client.bin" tests/gpu/mps_fault.cu || { rm -rf "$R"; finish; }
chmod 755 "$R/client.bin"
UUID=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1)
echo "== $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1), GPU $UUID"
export CUDA_MPS_PIPE_DIRECTORY=$R/pipe CUDA_MPS_LOG_DIRECTORY=$R/log
ui() { echo "\$ $*"; echo "$*" | nvidia-cuda-mps-control 2>&1; echo "(rc=$?)"; }
servers() { echo get_server_list | nvidia-cuda-mps-control 2>/dev/null | tr '\n' ' '; }
state() { # LABEL: the daemon's view right now
        echo "---- daemon state: $1"
        ui get_server_list
        for s in $(servers); do
                ui get_client_list "$s"
                ui get_server_status "$s"
                ui get_active_thread_percentage "$s"
        done
        ui ps
        ui get_device_client_list
}
cleanup() {
        echo quit | nvidia-cuda-mps-control >/dev/null 2>&1
        for _ in $(seq 50); do [ -e "$R/pipe/nvidia-cuda-mps-control.pid" ] || break; sleep 0.1; done
        echo "== control.log"; cat "$R/log/control.log" 2>/dev/null
        echo "== server.log"; cat "$R/log/server.log" 2>/dev/null
        echo "== files left in the pipe and log directories"; ls -la "$R/pipe" "$R/log"
        cp -r "$R/log" "$OUTDIR/mps-log" 2>/dev/null
        rm -rf "$R"
}
finish_trap cleanup

check "nvidia-cuda-mps-control -d starts the daemon" env CUDA_VISIBLE_DEVICES="$UUID" nvidia-cuda-mps-control -d || finish
for _ in $(seq 50); do [ -S "$R/pipe/control" ] && [ -e "$R/pipe/nvidia-cuda-mps-control.pid" ] && break; sleep 0.1; done
echo "== pipe directory with the daemon up"; ls -la "$R/pipe"

echo "######## A. one client's fault"
"$R/client.bin" sms; rc=$?; echo "(warm-up client rc=$rc)"
check "a first client runs through the daemon (exit $rc)" test "$rc" = 0
state "after a first client, before the fault"
S1=$(servers)
CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50 timeout 60 "$R/client.bin" serve 14 >"$R/a.out" 2>&1 &
A=$!
sleep 2
ls -la "$R/pipe"
state "while A serves"
CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50 timeout 60 "$R/client.bin" fault 4 >"$R/b.out" 2>&1 &
B=$!
sleep 1
state "1 s after B's fault (A and B alive)"
echo "---- a new client while A and B live:"; timeout 30 "$R/client.bin" sms; echo "(rc=$?)"
wait $B; echo "(B rc=$?)"
sleep 1
state "B gone, A alive"
echo "---- a new client while A lives:"; timeout 30 "$R/client.bin" sms; echo "(rc=$?)"
wait $A; echo "(A rc=$?)"
echo "---- client A (serving requests; B faulted at t~2000):"; cat "$R/a.out"
echo "---- client B (the faulting one):"; cat "$R/b.out"
for i in 1 2 3 4 5 6; do
        state "A and B gone, check $i"
        echo "---- a new client:"; timeout 30 "$R/client.bin" sms; rc=$?; echo "(rc=$rc)"
        [ $rc = 0 ] && break
        sleep 1
done
check "A and B gone, a new client is served again (exit $rc, check $i of 6)" test "$rc" = 0
echo "server pids: before the fault: $S1, now: $(servers)"
echo "---- control.log so far"; cat "$R/log/control.log"
echo "---- server.log so far"; cat "$R/log/server.log"

echo "######## B. the percentage: the daemon's against the client's"
ui get_default_active_thread_percentage
for pct in 100 20; do echo "-- client asks $pct %:"; CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$pct "$R/client.bin" sms; done
S=$(servers); S=${S%% *}
if [ -n "$S" ]; then
        ui set_active_thread_percentage "$S" 30
        ui get_active_thread_percentage "$S"
        for pct in 100 20; do echo "-- server $S at 30 %, client asks $pct %:"; CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$pct "$R/client.bin" sms; done
        echo "-- a client that lives across a change to 60 % (it started at 30 %):"
        CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100 "$R/client.bin" serve 3 >"$R/c.out" 2>&1 &
        C=$!; sleep 1
        ui set_active_thread_percentage "$S" 60
        echo "-- new client after the change to 60 %, asking 100 %:"; CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100 "$R/client.bin" sms
        wait $C; cat "$R/c.out"
fi
ui set_default_active_thread_percentage 40
ui get_default_active_thread_percentage
echo "-- with a server running, default 40 %, client asks 100 %:"; CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100 "$R/client.bin" sms
state "before restarting the server"
for s in $(servers); do ui shutdown_server "$s" ; done
sleep 2
echo "-- after the server was shut down (default 40 %), client asks 100 %:"; CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100 "$R/client.bin" sms
state "after a new server started at default 40 %"

echo "######## C. who may send commands"
S=$(servers); S=${S%% *}
if command -v setpriv >/dev/null; then
        echo "-- as uid 65534:"
        chmod 755 "$R" 2>/dev/null
        echo "set_default_active_thread_percentage 90" | setpriv --reuid=65534 --regid=65534 --clear-groups \
                env CUDA_MPS_PIPE_DIRECTORY="$R/pipe" nvidia-cuda-mps-control; echo "(rc=$?)"
        [ -n "$S" ] && { echo "set_active_thread_percentage $S 90" | setpriv --reuid=65534 --regid=65534 --clear-groups \
                env CUDA_MPS_PIPE_DIRECTORY="$R/pipe" nvidia-cuda-mps-control; echo "(rc=$?)"; }
        echo "get_server_list" | setpriv --reuid=65534 --regid=65534 --clear-groups \
                env CUDA_MPS_PIPE_DIRECTORY="$R/pipe" nvidia-cuda-mps-control; echo "(rc=$?)"
        ui get_default_active_thread_percentage
        [ -n "$S" ] && ui get_active_thread_percentage "$S"
fi
echo "-- root in a mount namespace with control_privileged masked (/dev/null bound over it):"
unshare -m --propagation private -- sh -c "
        mount --bind /dev/null '$R/pipe/control_privileged' || echo 'cannot mask control_privileged'
        ls -la '$R/pipe'
        echo 'set_default_active_thread_percentage 80' | nvidia-cuda-mps-control; echo \"(rc=\$?)\"
        [ -n '$S' ] && { echo 'set_active_thread_percentage $S 80' | nvidia-cuda-mps-control; echo \"(rc=\$?)\"; }
        echo get_server_list | nvidia-cuda-mps-control; echo \"(rc=\$?)\"
        echo '-- a client there, asking 20 %:'
        CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=20 '$R/client.bin' sms; echo \"(rc=\$?)\"
"
ui get_default_active_thread_percentage
[ -n "$S" ] && ui get_active_thread_percentage "$S"
echo "-- a client with the pipe directory mounted read-only, asking 20 %:"
unshare -m --propagation private -- sh -c "
        mount --bind '$R/pipe' '$R/pipe' && mount -o remount,bind,ro '$R/pipe' || echo 'cannot remount read-only'
        touch '$R/pipe/x' 2>&1
        CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=20 '$R/client.bin' sms; echo \"(rc=\$?)\"
"
echo "-- root in a mount namespace with control_privileged masked: quit, shutdown_server, start_server:"
unshare -m --propagation private -- sh -c "
        mount --bind /dev/null '$R/pipe/control_privileged'
        for c in 'start_server -uid 4321' 'shutdown_server 999999' 'quit'; do
                echo \"\$c\" | nvidia-cuda-mps-control; echo \"(\$c: rc=\$?)\"
        done
"
sleep 1
echo "-- is the daemon still there after that quit? pid file: $(cat "$R/pipe/nvidia-cuda-mps-control.pid" 2>&1)"
ui get_server_list
if [ ! -e "$R/pipe/nvidia-cuda-mps-control.pid" ]; then
        echo "(the masked quit stopped the daemon: starting it again for the rest)"
        CUDA_VISIBLE_DEVICES=$UUID nvidia-cuda-mps-control -d
        for _ in $(seq 50); do [ -e "$R/pipe/nvidia-cuda-mps-control.pid" ] && break; sleep 0.1; done
fi
echo "-- a client through a directory holding a hard link of the control socket (gpuslice's client/), read-only:"
mkdir -p "$R/client" && ln "$R/pipe/control" "$R/client/control" && ls -li "$R/pipe/control" "$R/client/control"
unshare -m --propagation private -- sh -c "
        mount --bind '$R/client' '$R/client' && mount -o remount,bind,ro '$R/client'
        CUDA_MPS_PIPE_DIRECTORY='$R/client' CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=20 '$R/client.bin' sms; echo \"(rc=\$?)\"
"
echo "-- a client with only the control socket visible (a directory of its own holding a bind of it):"
mkdir -p "$R/only"
unshare -m --propagation private -- sh -c "
        mount -t tmpfs tmpfs '$R/only' && touch '$R/only/control' && mount --bind '$R/pipe/control' '$R/only/control'
        CUDA_MPS_PIPE_DIRECTORY='$R/only' CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=20 '$R/client.bin' sms; echo \"(rc=\$?)\"
"
state "at the end"
finish
