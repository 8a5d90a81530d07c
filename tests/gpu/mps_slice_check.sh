#!/usr/bin/env bash
# slice.mps = "auto" on the real GPU, end to end: `gpuslice exec` through the host setting, a
# slice process that asks for more SMs, and `gpuslice mps supervise` through a fault (poisoned,
# the fallback, the restart), with the metrics. Needs the build (gpuslice, libgpuslice-vgpu.so)
# and nvcc; stops what it starts.
#   tests/gpu/mps_slice_check.sh [BUILD_DIR]      (on the GPU host, as root; OUT=DIR keeps the outputs)
# PASS/FAIL lines, then "N passed, N failed, N skipped" (tests/gpu/lib.sh); exit 1 on a FAIL.
set -u
BUILD=${1:-build}
cd "$(dirname "$0")/../.."
. tests/gpu/lib.sh
export PATH=$PATH:/usr/local/cuda/bin
GS=$PWD/$BUILD/gpuslice
[ -d "$BUILD/runtime-libs" ] && export LD_LIBRARY_PATH=$PWD/$BUILD/runtime-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
R=$(mktemp -d /tmp/gs-mpss.XXXXXX)
chmod 755 "$R"
if ! nvcc -O2 -o "$R/client.bin" tests/gpu/mps_fault.cu; then
        rm -rf "$R"; check "nvcc builds tests/gpu/mps_fault.cu" false; finish
fi
UUID=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1)
M=$R/m C=$R/m/$UUID/client P=$R/m/$UUID/pipe
printf '[slice]\nmps-root = "%s"\nmps = "auto"\nregions-dir = "%s"\n' "$M" "$R/regions" >"$R/auto.toml"
x() { "$GS" exec --config "$R/auto.toml" --device 0 --compute 30 -- env GPUSLICE_LOG_LEVEL=1 "$@"; }
ui() { echo "$*" | CUDA_MPS_PIPE_DIRECTORY=$P nvidia-cuda-mps-control 2>&1; }
sup=""
cleanup() {
        [ -n "$sup" ] && kill "$sup" 2>/dev/null && wait "$sup"
        "$GS" mps stop --mps-root "$M" 2>&1
        echo "== supervisor"; cat "$R/sup.log" 2>/dev/null
        echo "== state"; cat "$C/state" 2>/dev/null
        echo "== server.log (tail)"; tail -40 "$M/$UUID/log/server.log" 2>/dev/null
        [ -n "${OUT:-}" ] && cp -r "$M/$UUID/log" "$OUT/mps-slice-log" 2>/dev/null
        rm -rf "$R"
}
finish_trap cleanup
echo "== $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1), $UUID"

"$GS" mps supervise --device 0 --mps-root "$M" --interval 0.5 2>"$R/sup.log" &
sup=$!
for _ in $(seq 100); do grep -q '^state=ok' "$C/state" 2>/dev/null && break; sleep 0.1; done
check "supervise started the daemon and wrote the state" grep -q '^state=ok' "$C/state"
x "$R/client.bin" sms >"$R/a.out" 2>&1; cat "$R/a.out"
check "exec --compute 30 under slice.mps = auto: 38 of 132 SMs through MPS" grep -q "sms=38 " "$R/a.out"
CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100 x "$R/client.bin" sms >"$R/b.out" 2>&1; cat "$R/b.out"
check "... with CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100 in its environment: still 38" grep -q "sms=38 " "$R/b.out"
x env PROBE_SETENV_PCT=100 "$R/client.bin" sms >"$R/c.out" 2>&1; cat "$R/c.out"
check "... setting it to 100 itself before its first CUDA call: still 38" grep -q "sms=38 " "$R/c.out"
S=$(ui get_server_list | head -1)
echo "server $S: $(ui get_active_thread_percentage "$S") %, default $(ui get_default_active_thread_percentage) %"
check "the server and the daemon's default held at 30 %" test "$(ui get_active_thread_percentage "$S") $(ui get_default_active_thread_percentage)" = "30.0 30.0"
CUDA_MPS_PIPE_DIRECTORY=$C CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100 "$R/client.bin" sms >"$R/d.out" 2>&1; cat "$R/d.out"
check "a process without the interposer asking 100 %: the server's 30 % (38)" grep -q "sms=38 " "$R/d.out"

D1=$(cat "$P/nvidia-cuda-mps-control.pid")
x "$R/client.bin" serve 10 >"$R/serve.out" 2>&1 &
sv=$!
sleep 2
x "$R/client.bin" fault 3 >"$R/fault.out" 2>&1 &
fl=$!
for _ in $(seq 50); do grep -q '^state=poisoned' "$C/state" 2>/dev/null && break; sleep 0.1; done
check "the supervisor marked the GPU poisoned" grep -q '^state=poisoned' "$C/state"
x "$R/client.bin" sms >"$R/e.out" 2>&1; cat "$R/e.out"
check "a new exec slice while poisoned takes turns (132 SMs)" grep -q "sms=132 " "$R/e.out"
check "... and says why" grep -q "poisoned" "$R/e.out"
"$GS" metrics --once --no-nvml --no-hami --window 0.2 --config "$R/auto.toml" 2>/dev/null | grep '^gpuslice_mps_' | tee "$R/m1.txt"
check "metric: gpuslice_mps_poisoned 1" grep -q '^gpuslice_mps_poisoned{UUID="'"$UUID"'"} 1$' "$R/m1.txt"
wait $fl $sv
echo "--- the serving client:"; cat "$R/serve.out"; echo "--- the faulting client:"; cat "$R/fault.out"
check "the serving client failed from the fault on (one fate)" grep -qE "served requests=[0-9]+ failed=[1-9]" "$R/serve.out"
for _ in $(seq 150); do grep -q '^restarts=1' "$C/state" 2>/dev/null && grep -q '^state=ok' "$C/state" && break; sleep 0.1; done
check "its clients gone, the supervisor restarted the daemon and cleared the mark" grep -q '^restarts=1' "$C/state"
D2=$(cat "$P/nvidia-cuda-mps-control.pid" 2>/dev/null)
check "... a new daemon ($D2, was $D1)" test -n "$D2" -a "$D2" != "$D1"
x "$R/client.bin" sms >"$R/f.out" 2>&1; cat "$R/f.out"
check "after the restart: through MPS again (38)" grep -q "sms=38 " "$R/f.out"
"$GS" metrics --once --no-nvml --no-hami --window 0.2 --config "$R/auto.toml" 2>/dev/null | grep '^gpuslice_mps_' | tee "$R/m2.txt"
check "metric: one fault, one restart, not poisoned" grep -q '^gpuslice_mps_daemon_restarts_total{UUID="'"$UUID"'"} 1$' "$R/m2.txt"
# The daemon killed with -9, three times: the supervisor starts a new one each time and lives on.
# (Its queries meanwhile find no daemon. On the simulated daemon, a control binary that exited
# before reading its command once ended the supervisor with SIGPIPE, without a word.)
# What the real control binary does without a daemon, for the record:
rc=0
echo get_server_list | CUDA_MPS_PIPE_DIRECTORY=$R/none nvidia-cuda-mps-control >"$R/nodaemon.out" 2>&1 || rc=$?
echo "control without a daemon: exit $rc: $(head -2 "$R/nodaemon.out" | tr '\n' ' ')"
again=0
for _ in 1 2 3; do
        Dk=$(cat "$P/nvidia-cuda-mps-control.pid" 2>/dev/null)
        [ -n "$Dk" ] && kill -9 "$Dk"
        Dn=
        for _ in $(seq 100); do
                Dn=$(cat "$P/nvidia-cuda-mps-control.pid" 2>/dev/null)
                [ -n "$Dn" ] && [ "$Dn" != "$Dk" ] && kill -0 "$Dn" 2>/dev/null && break
                Dn=; sleep 0.1
        done
        echo "daemon $Dk killed: ${Dn:-none} started"
        [ -n "$Dn" ] && again=$((again + 1))
done
check "a daemon killed with -9 three times is started again each time ($again of 3)" test "$again" = 3
check "... and the supervisor lives on" kill -0 "$sup"
x "$R/client.bin" sms >"$R/g.out" 2>&1; cat "$R/g.out"
check "... and new slices go through MPS (38)" grep -q "sms=38 " "$R/g.out"
finish
