#!/usr/bin/env bash
# slice.mps (off | auto | on) on a fake driver root whose MPS daemon is the simulated one
# (tests/fakegpu/fake_mps_control.c): `gpuslice exec` and the hook under the real runc follow the
# host setting; a container sees only the GPU's client directory, read-only, and cannot raise its
# SM percentage; `gpuslice mps supervise` notices a poisoned server (log line, state file,
# metrics), new slice processes fall back to the time limiter, the daemon is restarted once the
# fault's clients are gone, a percentage changed behind its back is put back; doctor reports it.
# (The interposer's side, with the daemon alone: tests/vgpu/test_mps.sh.)
. "$(dirname "$0")/lib.sh"
. "$SRC/tests/integration/bundle.sh"

need "$RUNC" jq
MPROBE=$BUILD/tests/integration/hook-mps-probe
for f in "$GS" "$VGPU_LIB" "$PROBE" "$MPROBE"; do
        [ -e "$f" ] || { echo "not ok - $f is not built"; exit 1; }
done

DRV=$(mkroot drv 2gpu.conf)
STATE=$TMP/runc-state
CG=gs-it-mpss-$$
SLICES=$TMP/slices
MR=$TMP/m
U0=$GPU0_UUID
PIPE=$MR/$U0/pipe CLIENT=$MR/$U0/client
# (the probe's fake libcuda reads the root's GPUs; gpuslice's NVML helper finds them in the root itself)
FC=$DRV/etc/fakegpu/gpus.conf
export FAKEGPU_STATE=$TMP/fakegpu.state GPUSLICE_ARBITER_DIR=$TMP/arbiter
mkdir -p "$GPUSLICE_ARBITER_DIR"
ids=()
sup=""
cleanup() {
        local id
        for id in "${ids[@]}"; do "$RUNC" --root "$STATE" delete -f "$id" >/dev/null 2>&1; done
        [ -n "$sup" ] && kill "$sup" 2>/dev/null
        kill $(jobs -p) 2>/dev/null
        "$GS" --root "$DRV" mps stop --mps-root "$MR" >/dev/null 2>&1
        rm -rf "$TMP"
}
trap cleanup EXIT

conf() { # FILE MODE: the hook's config with slice.mps = MODE
        hook_config "$1" "$DRV" "$SLICES"
        printf 'mps-root = "%s"\nmps = "%s"\n' "$MR" "$2" >>"$1"
}
for m in off auto on; do conf "$TMP/$m.toml" $m; done
ui() { echo "$*" | CUDA_MPS_PIPE_DIRECTORY=$PIPE "$DRV/usr/bin/nvidia-cuda-mps-control" 2>&1; }
daemon() { cat "$PIPE/nvidia-cuda-mps-control.pid" 2>/dev/null; }
# A live MPS process (a zombie, left where no init reaps it, has an empty cmdline).
alive() { [ -n "$1" ] && [ "$(cat "/proc/$1/comm" 2>/dev/null)" = nvidia-cuda-mps ] &&
        [ -n "$(tr -d '\0' <"/proc/$1/cmdline" 2>/dev/null)" ]; }
start_daemon() { "$GS" --root "$DRV" mps start --device 0 --mps-root "$MR" >"$TMP/start.log" 2>&1; }
stop_daemon() { "$GS" --root "$DRV" mps stop --mps-root "$MR" >/dev/null 2>&1; }
check() { # DESC NAME PATTERN: a line of NAME's stdout (or stderr) matches the ERE
        if grep -qE -- "$3" "$TMP/$2.out" "$TMP/$2.err"; then ok "$1"; else
                not_ok "$1: no /$3/ in:"; sed 's/^/    # /' "$TMP/$2.out" "$TMP/$2.err" | tail -8; fi
}
lacks() { # DESC NAME PATTERN
        if grep -qE -- "$3" "$TMP/$2.out" "$TMP/$2.err"; then not_ok "$1: /$3/ found"; else ok "$1"; fi
}
# xrun NAME CONFIG [exec options] -- probe args: gpuslice exec of the MPS probe on GPU 0, 30 % cap
xrun() {
        local name=$1 cfg=$2; shift 2
        local opts=()
        while [ "$1" != -- ]; do opts+=("$1"); shift; done
        shift
        run "$name" -- "$GS" --root "$DRV" exec --config "$cfg" --device 0 --compute 30 "${opts[@]}" -- \
                env FAKEGPU_CONFIG="$FC" "$MPROBE" "$@"
}
wait_for() { # SECONDS CMD...: until CMD succeeds
        local i
        for ((i = 0; i < $1 * 10; i++)); do "${@:2}" && return 0; sleep 0.1; done
        return 1
}
state_is() { grep -q "^$1$" "$CLIENT/state" 2>/dev/null; }
# The supervisor writes its state file before it logs; a log line may come a moment after the state.
sup_says() { wait_for 3 grep -qE "$1" "$TMP/sup.log"; }
mps_check() { # NAME CONFIG: doctor's mps check as JSON {status, message, fix}
        run "$1" -- "$GS" --root "$DRV" doctor --config "$2" --json
        jq -c '.checks[] | select(.name == "mps")' "$TMP/$1.out" >"$TMP/$1.mps" 2>/dev/null
}
doc_expect() { # NAME STATUS MESSAGE-PART [FIX-PART]
        local s m f
        s=$(jq -r .status "$TMP/$1.mps" 2>/dev/null) m=$(jq -r .message "$TMP/$1.mps" 2>/dev/null) f=$(jq -r .fix "$TMP/$1.mps" 2>/dev/null)
        if [ "$s" = "$2" ] && [[ $m == *"$3"* ]] && { [ -z "${4:-}" ] || [[ $f == *"$4"* ]]; }; then ok "doctor $1: mps $2: $3"
        else not_ok "doctor $1: mps is '$s': $m / fix: $f (wanted $2, '$3', '${4:-}')"; fi
}

# ---- gpuslice exec --------------------------------------------------------------------------
start_daemon || not_ok "mps start: $(cat "$TMP/start.log")"
xrun xoff "$TMP/off.toml" -- sms
check "exec, slice.mps = off, a daemon running: the time limiter (every SM, launches intercepted)" xoff "^init=0 sms=108 intercepted=1$"
lacks "... silently" xoff "warning"
xrun xauto "$TMP/auto.toml" -- sms
check "exec, slice.mps = auto, a daemon running: 30 % of the SMs through MPS (32 of 108), nothing intercepted" xauto "^init=0 sms=32 intercepted=0$"
SRV=$(ui get_server_list | head -1)
[ "$(ui get_active_thread_percentage "$SRV")" = 30.0 ] && [ "$(ui get_default_active_thread_percentage)" = 30.0 ] &&
        ok "... and the daemon's server and default held at the slice's 30 %" ||
        not_ok "server percentage: $(ui get_active_thread_percentage "$SRV") default $(ui get_default_active_thread_percentage)"
[ -S "$CLIENT/control" ] && [ "$(stat -c %i "$CLIENT/control")" = "$(stat -c %i "$PIPE/control")" ] &&
        ok "the client directory's control is the daemon's socket (a hard link)" || not_ok "client/control: $(ls -li "$CLIENT" "$PIPE")"
run xall -- "$GS" --root "$DRV" exec --config "$TMP/auto.toml" --compute 30 -- env FAKEGPU_CONFIG="$FC" "$MPROBE" sms
check "exec on both GPUs (no --device): one MPS percentage cannot hold two, the time limiter" xall "^init=0 sms=108 intercepted=1$"
xrun xshare "$TMP/auto.toml" --compute-mode share -- sms
check "exec in share mode: the time limiter (share mode never goes through MPS)" xshare "^init=0 sms=108 intercepted=1$"
stop_daemon
xrun xnone "$TMP/auto.toml" -- sms
check "exec, slice.mps = auto, no daemon: the time limiter" xnone "^init=0 sms=108 intercepted=1$"
check "... said on stderr" xnone "gpuslice: warning: no MPS daemon for GPU 0 under $MR .*: the time limiter keeps the 30 % share"
xrun xon "$TMP/on.toml" -- sms
check "exec, slice.mps = on, no daemon: one is started and the slice runs through it" xon "^init=0 sms=32 intercepted=0$"
alive "$(daemon)" && ok "... and the daemon it started runs on" || not_ok "no daemon after slice.mps = on"
xrun xexplicit "$TMP/off.toml" --mps-pipe-dir "$CLIENT" -- sms
check "exec --mps-pipe-dir stays an explicit choice under slice.mps = off" xexplicit "^init=0 sms=32 intercepted=0$"
printf '[slice]\nmps = "sometimes"\n' >"$TMP/bad.toml"
xrun xbad "$TMP/bad.toml" -- sms
expect_rc xbad 1 "exec with slice.mps = \"sometimes\": an error"
expect_err xbad "'slice.mps' must be off, auto or on, not 'sometimes'" "... naming the key and the values"

# ---- gpuslice configure ------------------------------------------------------------------------
# Into a process in its own mount namespace (as test_configure.sh): the slice file tells.
cfg_container() { # NAME: a rootfs and a process holding its mount namespace; echoes the pid
        local r=$TMP/$1.rootfs
        "$SRC/tests/integration/mkrootfs.sh" "$r" >/dev/null 2>&1 || { echo "mkrootfs failed" >&2; exit 1; }
        ( exec unshare -m --propagation private -- sh -c "mount --bind '$r' '$r' && mount -t proc proc '$r/proc' && echo \$\$ >'$TMP/$1.pid' && exec sleep 600" ) >/dev/null 2>&1 &
        for _ in $(seq 50); do [ -s "$TMP/$1.pid" ] && break; sleep 0.1; done
        cat "$TMP/$1.pid"
}
cfg() { # NAME CONFIG [options]: configure a 30 % slice on GPU 0 into a fresh container
        local name=$1 c=$2 pid; shift 2
        pid=$(cfg_container "$name")
        run "$name" -- "$GS" --root "$DRV" configure --pid "$pid" --compute --utility --no-cgroups --device 0 \
                --compute-share 30 --slice-id "$name" --regions-dir "$SLICES" --config "$c" "$@" "$TMP/$name.rootfs"
        expect_rc "$name" 0 "configure $name"
}
start_daemon
cfg cauto "$TMP/auto.toml"
grep -qx "GPUSLICE_MPS_PIPE_DIRECTORY=$CLIENT" "$SLICES/cauto/slice.conf" &&
        ok "configure follows the host config's slice.mps = auto: the slice goes through the GPU's daemon" ||
        not_ok "configure, auto: $(cat "$SLICES/cauto/slice.conf")"
cfg coff "$TMP/off.toml"
# (slice.conf must be there and be the slice's: a missing file names no MPS either)
if ! grep -qx "GPUSLICE_SLICE_ENFORCED=1" "$SLICES/coff/slice.conf" 2>/dev/null ||
        ! grep -q "^GPUSLICE_COMPUTE_LIMIT=" "$SLICES/coff/slice.conf"; then
        not_ok "configure, off: no slice.conf with the 30 % slice: $(cat "$SLICES/coff/slice.conf" 2>&1)"
elif grep -q "MPS" "$SLICES/coff/slice.conf"; then not_ok "configure, off: $(cat "$SLICES/coff/slice.conf")"
else ok "configure follows slice.mps = off: slice.conf names no MPS"; fi
cfg cflag "$TMP/off.toml" --mps auto
grep -qx "GPUSLICE_MPS_PIPE_DIRECTORY=$CLIENT" "$SLICES/cflag/slice.conf" && ok "configure --mps auto wins over the config" ||
        not_ok "configure --mps auto: $(cat "$SLICES/cflag/slice.conf")"
run cbad -- "$GS" --root "$DRV" configure --mps maybe --compute-share 30 "$TMP/cauto.rootfs"
expect_rc cbad 2 "configure --mps maybe: a usage error"
stop_daemon

# ---- the hook under runc ----------------------------------------------------------------------
# The container prints its slice file, the probe's view, three ways of asking for more SMs, what
# the client directory holds and whether it can write there, and whether the pipe directory is
# visible.
CT_SCRIPT="sed 's/^/SLICE /' /etc/gpuslice/slice.conf
/usr/bin/mps-probe sms | sed 's/^/PROBE /'
CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100 /usr/bin/mps-probe sms | sed 's/^/RAISE_ENV /'
PROBE_SETENV_PCT=100 PROBE_UNSET_PIPE=1 /usr/bin/mps-probe sms 2>/dev/null | sed 's/^/RAISE_SETENV /'
GPUSLICE_COMPUTE_LIMIT=100 GPUSLICE_MPS_PIPE_DIRECTORY=/tmp CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100 /usr/bin/mps-probe sms 2>/dev/null | sed 's/^/RAISE_SLICE /'
if [ -d $CLIENT ]; then ls -A $CLIENT | tr '\n' ' ' | sed 's/^/CLIENT_LS /'; echo
  (: >$CLIENT/x) 2>/dev/null && echo CLIENT_WRITE written || echo CLIENT_WRITE refused; fi
[ -e $PIPE ] && echo PIPE visible || echo PIPE hidden
echo DONE"
H_PRESTART='{path: $gs, args: ["gpuslice", "--root", $drv, "hook", "--config", $conf, "prestart"], env: $hookenv}'
H_POSTSTOP='{path: $gs, args: ["gpuslice", "hook", "--config", $conf, "poststop"], env: $hookenv}'
# no_mps NAME DESC: the container printed its slice.conf (it is there, the slice's) and it names no
# MPS pipe directory (a missing slice.conf names none either)
no_mps() {
        if ! grep -qx "SLICE GPUSLICE_SLICE_ENFORCED=1" "$TMP/$1.out"; then
                not_ok "$2: the container's /etc/gpuslice/slice.conf is missing or not the slice's"
                sed 's/^/    # /' "$TMP/$1.out" | head -10
        elif grep -q "^SLICE GPUSLICE_MPS_PIPE_DIRECTORY=" "$TMP/$1.out"; then
                not_ok "$2: $(grep "^SLICE GPUSLICE_MPS_PIPE_DIRECTORY=" "$TMP/$1.out")"
        else ok "$2"; fi
}
ct() { # NAME CONFIG ENV...: a container on GPU 0 running CT_SCRIPT
        local name=$1; CONF=$2; shift 2
        make_bundle "$name" '.process.env += $env | .process.args = ["/bin/sh", "-c", $script]
                | .hooks = {prestart: ['"$H_PRESTART"'], poststop: ['"$H_POSTSTOP"']}' \
                --argjson env "$(printf '%s\n' NVIDIA_VISIBLE_DEVICES=0 "$@" | jq -R . | jq -cs .)" --arg script "$CT_SCRIPT"
        cp "$MPROBE" "$TMP/$name/rootfs/usr/bin/mps-probe"
        run_bundle "$name"
        expect_done "$name" "$name"
}
start_daemon
ct hoff "$TMP/off.toml" GPUSLICE_COMPUTE_LIMIT=30
no_mps hoff "hook, slice.mps = off, a daemon running: no MPS in slice.conf"
expect_fact hoff "PROBE init=0 sms=108 intercepted=1" "... the time limiter"
ct hauto "$TMP/auto.toml" GPUSLICE_COMPUTE_LIMIT=30
expect_fact hauto "SLICE GPUSLICE_MPS_PIPE_DIRECTORY=$CLIENT" "hook, slice.mps = auto: slice.conf names the GPU's client directory"
expect_fact hauto "PROBE init=0 sms=32 intercepted=0" "... the container's process runs on 30 % of the SMs through MPS"
expect_fact hauto "RAISE_ENV init=0 sms=32 intercepted=0" "... CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100 in its environment: still 32"
expect_fact hauto "RAISE_SETENV init=0 sms=32 intercepted=0" "... setenv 100 and unsetenv CUDA_MPS_PIPE_DIRECTORY before cuInit: still 32"
expect_fact hauto "RAISE_SLICE init=0 sms=32 intercepted=0" "... its own GPUSLICE_COMPUTE_LIMIT=100 and pipe directory: still 32 (the slice file is enforced)"
expect_fact hauto "CLIENT_LS control " "... the client directory holds the control socket only (no control_privileged, no pid file)"
expect_fact hauto "CLIENT_WRITE refused" "... and is read-only in the container"
expect_fact hauto "PIPE hidden" "... the daemon's pipe directory is not in the container"
ct hshare "$TMP/auto.toml" GPUSLICE_COMPUTE_LIMIT=30 GPUSLICE_COMPUTE_MODE=share
no_mps hshare "hook, slice.mps = auto, share mode: no MPS (share mode takes turns)"
expect_fact hshare "PROBE init=0 sms=108 intercepted=1" "... the time limiter"
stop_daemon
ct hnone "$TMP/auto.toml" GPUSLICE_COMPUTE_LIMIT=30
no_mps hnone "hook, slice.mps = auto, no daemon: no MPS"
expect_fact hnone "PROBE init=0 sms=108 intercepted=1" "... the time limiter"
ct hon "$TMP/on.toml" GPUSLICE_COMPUTE_LIMIT=30
expect_fact hon "SLICE GPUSLICE_MPS_PIPE_DIRECTORY=$CLIENT" "hook, slice.mps = on, no daemon: the hook starts one, slice.conf names it"
expect_fact hon "PROBE init=0 sms=32 intercepted=0" "... and the container runs through it"
alive "$(daemon)" && ok "... the daemon the hook started runs on" || not_ok "no daemon after the hook's slice.mps = on"

# ---- the supervisor ----------------------------------------------------------------------------
stop_daemon
mps_check dnosup "$TMP/auto.toml"
doc_expect dnosup warn "slice.mps = auto, but no gpuslice mps supervise runs under $MR" "systemctl enable --now gpuslice-mps.service"
mps_check doff "$TMP/off.toml"
doc_expect doff ok "slice.mps = off: compute slices take turns on their GPU"
"$GS" --root "$DRV" mps supervise --device 0 --mps-root "$MR" --interval 0.2 2>"$TMP/sup.log" &
sup=$!
wait_for 10 state_is state=ok && ok "supervise: the GPU's state file, ok" || not_ok "no state file: $(cat "$TMP/sup.log")"
D1=$(daemon)
sup_says "GPU 0: started the MPS control daemon \\(pid $D1\\)" && alive "$D1" &&
        ok "supervise started GPU 0's daemon ($D1), and said so" || not_ok "supervise start: $(cat "$TMP/sup.log")"
mps_check dsup "$TMP/auto.toml"
doc_expect dsup ok "slice.mps = auto: cap slices on one GPU run beside each other through its MPS daemon, supervised (pid $sup)"
run metrics0 -- "$GS" metrics --once --no-nvml --no-hami --window 0.2 --config "$TMP/auto.toml"
check "metrics: the supervisor is up" metrics0 '^gpuslice_mps_supervisor_up 1$'
check "metrics: GPU 0's daemon up, no fault" metrics0 "^gpuslice_mps_server_faults_total\{UUID=\"$U0\"\} 0$"

# A fault: A serves requests, B writes to an illegal address, X (a slice attached before the fault)
# starts a new process while the server is poisoned.
"$GS" --root "$DRV" exec --config "$TMP/auto.toml" --device 0 --compute 30 -- env FAKEGPU_CONFIG="$FC" "$MPROBE" serve 3 \
        >"$TMP/fa.out" 2>&1 &
fa=$!
"$GS" --root "$DRV" exec --config "$TMP/auto.toml" --device 0 --compute 30 -- \
        sh -c "sleep 1.6; FAKEGPU_CONFIG=$FC GPUSLICE_LOG_LEVEL=1 exec $MPROBE sms" >"$TMP/fx.out" 2>&1 &
fx=$!
sleep 0.8
"$GS" --root "$DRV" exec --config "$TMP/auto.toml" --device 0 --compute 30 -- env FAKEGPU_CONFIG="$FC" "$MPROBE" fault 2 \
        >"$TMP/fb.out" 2>&1 &
fb=$!
wait_for 5 state_is state=poisoned && ok "supervise: the GPU is marked poisoned in its state file" ||
        not_ok "not poisoned: $(cat "$CLIENT/state" 2>&1; tail -5 "$TMP/sup.log")"
sup_says "GPU 0: MPS server [0-9]+ is poisoned: a client hit a fatal GPU error" && ok "... and said so" ||
        not_ok "supervise log: $(tail -5 "$TMP/sup.log")"
run metrics1 -- "$GS" metrics --once --no-nvml --no-hami --window 0.2 --config "$TMP/auto.toml"
check "metrics: gpuslice_mps_poisoned 1" metrics1 "^gpuslice_mps_poisoned\{UUID=\"$U0\"\} 1$"
check "metrics: one server fault" metrics1 "^gpuslice_mps_server_faults_total\{UUID=\"$U0\"\} 1$"
mps_check dpois "$TMP/auto.toml"
doc_expect dpois warn "GPU 0's MPS server" "restart the containers that use GPU 0 through MPS"
xrun xpois "$TMP/auto.toml" -- sms
check "a new exec slice while poisoned: not through MPS (every SM, intercepted)" xpois "^init=0 sms=108 intercepted=1$"
check "... said on stderr" xpois "GPU 0's MPS server is poisoned .*: the time limiter keeps the 30 % share"
wait $fx
check "a new process of a slice attached before the fault: does not connect, says why" fx "MPS: the GPU's MPS server is poisoned"
check "... and takes turns" fx "^init=0 sms=108 intercepted=1$"
wait $fb $fa
check "the faulting client got 700" fb "^launch=0 synchronize=700 next=700$"
check "the other client, connected before, got 700 too (one fate)" fa "^served requests=[0-9]+ failed=[1-9][0-9]* last=700$"
wait_for 8 state_is restarts=1 && state_is state=ok && ok "its clients gone: the daemon restarted, the state ok again" ||
        not_ok "no restart: $(cat "$CLIENT/state" 2>&1; tail -5 "$TMP/sup.log")"
D2=$(daemon)
[ -n "$D2" ] && [ "$D2" != "$D1" ] && alive "$D2" && ! alive "$D1" && ok "... a new daemon ($D2 for $D1)" ||
        not_ok "daemon after the restart: $D2 (was $D1)"
sup_says "restarting the daemon" && ok "... said so" || not_ok "restart log: $(tail -5 "$TMP/sup.log")"
run metrics2 -- "$GS" metrics --once --no-nvml --no-hami --window 0.2 --config "$TMP/auto.toml"
check "metrics: not poisoned any more" metrics2 "^gpuslice_mps_poisoned\{UUID=\"$U0\"\} 0$"
check "metrics: one restart" metrics2 "^gpuslice_mps_daemon_restarts_total\{UUID=\"$U0\"\} 1$"
xrun xafter "$TMP/auto.toml" -- sms
check "after the restart new slices go through MPS again" xafter "^init=0 sms=32 intercepted=0$"

# The percentage changed behind the supervisor's back (as root in a container could, through the
# control socket) is put back while a slice is registered.
"$GS" --root "$DRV" exec --config "$TMP/auto.toml" --device 0 --compute 30 -- env FAKEGPU_CONFIG="$FC" "$MPROBE" serve 3 \
        >"$TMP/fc.out" 2>&1 &
fc=$!
# The supervisor says "put back" only of a percentage it had already set for the slices registered:
# wait for the slice's registration (its file under the GPU's MPS directory), then for three of
# the supervisor's rounds (--interval 0.2), before changing it (a change made first is no change
# to it, set silently: CI saw that race under load)
registered() { compgen -G "$CLIENT/slices/*" >/dev/null || compgen -G "$MR/$U0/slices/*" >/dev/null; }
wait_for 5 registered || not_ok "the exec slice never registered with GPU 0's MPS directory"
# (no sign says when the supervisor's first round after the registration came: a change made
# before it is set back silently, as its own first setting, and CI's sanitizer build under load
# saw that race again after three rounds' wait; so the change is made a second time once the
# server is back at 30 %: that one comes after the supervisor set it, whatever the timing)
sleep 0.6
SRV=$(ui get_server_list | head -1)
back30() { wait_for 4 sh -c "[ \"\$(echo get_active_thread_percentage $SRV | CUDA_MPS_PIPE_DIRECTORY=$PIPE $DRV/usr/bin/nvidia-cuda-mps-control)\" = 30.0 ]"; }
ui set_active_thread_percentage "$SRV" 100 >/dev/null
back30 && ok "a server set to 100 % is put back to 30 % by the supervisor" || not_ok "percentage: $(ui get_active_thread_percentage "$SRV")"
if ! sup_says "put back"; then # (3 s: the line follows the setting)
        ui set_active_thread_percentage "$SRV" 100 >/dev/null
        back30 || not_ok "percentage, the second change: $(ui get_active_thread_percentage "$SRV")"
fi
sup_says "had another active thread percentage than gpuslice set \\(30 %\\): put back" && state_is resets=1 &&
        ok "... said so, and counted" || not_ok "reset log: $(tail -3 "$TMP/sup.log"; cat "$CLIENT/state")"
wait $fc
# sup_runs WHEN: the supervisor is still there; one that ended unasked fails the check with its exit
# status (a signal's number) and its log's last lines. (A control binary that exited before
# reading its command, the daemon killed, once ended it with SIGPIPE and no word in CI.)
sup_runs() {
        kill -0 "$sup" 2>/dev/null && return 0
        local st=0
        wait "$sup" || st=$?
        sup=""
        not_ok "the supervisor ended unasked $1: exit status $st$([ $st -gt 128 ] && echo " (signal $((st - 128)))"): $(tail -3 "$TMP/sup.log")"
        return 1
}
# A daemon that dies is started again, and the supervisor lives through its death (its queries
# meanwhile find no daemon: the control binary exits at once, before reading its command).
D3=$(daemon)
kill -9 "$D3"
wait_for 5 sh -c "p=\$(cat $PIPE/nvidia-cuda-mps-control.pid 2>/dev/null); [ -n \"\$p\" ] && [ \"\$p\" != $D3 ] && [ \"\$(cat /proc/\$p/comm 2>/dev/null)\" = nvidia-cuda-mps ]" &&
        ok "a killed daemon is started again by the supervisor" || not_ok "after kill -9: $(tail -3 "$TMP/sup.log")"
sup_runs "after the daemon's kill -9" && ok "... and the supervisor lives on"
if [ -n "$sup" ]; then
        kill -TERM "$sup"
        wait "$sup"
        sup=""
fi
grep -q "stopping (the MPS daemons keep running" "$TMP/sup.log" && alive "$(daemon)" &&
        ok "SIGTERM stops the supervisor, the daemon keeps running" || not_ok "after SIGTERM: $(tail -2 "$TMP/sup.log")"

finish
