#!/usr/bin/env bash
# Live resize of a running slice (`gpuslice slice set`) on the simulated GPU: a `gpuslice exec
# --regions-dir` slice whose resize-probe keeps running while the host grows and shrinks its
# quota: the views (cuMemGetInfo, NVML) and the allocations follow at once after `set` returns,
# and an idle process of the slice applies it by itself within a second; a shrink below usage
# frees nothing, refuses new allocations until usage is under the quota, and says so (log line,
# `slice show`, the over-quota metric); what a process of the slice can write (its usage region:
# limits, generation) never raises its quota; the live file is replaced whole (read while 200
# changes are written); each change is recorded with uid and pid; list/show/set --json, errors;
# metrics and top show the new limits. (The container's side, the read-only live directory and
# the environment: tests/integration/test_resize_hook.sh.)
set -uo pipefail
SRC=${GS_SOURCE_DIR:?} BUILD=${GS_BUILD_DIR:?}
unset LD_LIBRARY_PATH LD_PRELOAD
GS=$BUILD/gpuslice
LIB=$BUILD/libgpuslice-vgpu.so
PROBE=$BUILD/tests/vgpu/resize-probe
CPROBE=$BUILD/tests/vgpu/compute-probe
FAKE=$BUILD/tests/fakegpu
TMP=$(mktemp -d /tmp/gs-resize.XXXXXX)
pids=()
cleanup() {
        exec 4>&- 5>&- 2>/dev/null
        local p
        for p in "${pids[@]+"${pids[@]}"}"; do kill "$p" 2>/dev/null; done
        wait 2>/dev/null
        rm -rf "$TMP"
}
trap cleanup EXIT
export FAKEGPU_CONFIG=$SRC/tests/fakegpu/configs/1gpu.conf FAKEGPU_STATE=$TMP/fakegpu.state
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0
. "$SRC/tests/lib/check.sh" # ok, not_ok, skip, check, run_ok, started, finish
. "$SRC/tests/lib/probe.sh" # probe_field, probe_lo: lower bounds allow for the run's measured CPU stalls
holds() { if eval "$2"; then ok "$1"; else not_ok "$1"; fi; }
SL=$TMP/slices
mkdir "$SL"
slice() { "$GS" slice "$1" --regions-dir "$SL" "${@:2}"; }
# into FILE CMD...: CMD's stdout into FILE (run_ok's own line stays on the test's output)
into() { local f=$1; shift; "$@" >"$f"; }

# --- a running exec slice: the probe reads commands from a FIFO, answers one line each --------
mkfifo "$TMP/in" "$TMP/in2"
exec 4<>"$TMP/in" 5<>"$TMP/in2"
env LD_LIBRARY_PATH="$FAKE" GPUSLICE_VGPU_LIB="$LIB" GPUSLICE_LOG_LEVEL=2 \
        "$GS" exec --regions-dir "$SL" --memory 1Gi -- "$PROBE" <&4 >"$TMP/out" 2>"$TMP/err" &
EXEC=$!; pids+=($EXEC)
# ask CMD: send CMD, wait (5 s at most) for its answer line (the next line of the output), print it
ask() {
        local i n
        n=$(( $(wc -l <"$TMP/out") + 1 ))
        echo "$1" >&4
        for i in $(seq 100); do
                [ "$(wc -l <"$TMP/out")" -ge "$n" ] && break
                sleep 0.05
        done
        sed -n "${n}p" "$TMP/out"
}
field() { sed -n "s/.* $1=\([0-9]*\).*/\1/p" <<<"$2"; }
for _ in $(seq 100); do grep -q '^ready$' "$TMP/out" && break; sleep 0.05; done
started "gpuslice exec --regions-dir runs the probe" "$EXEC" || finish
ID=exec-$EXEC
holds "exec made its slice directory $ID (owner, live/limits, usage)" \
        '[ -f "$SL/$ID/owner" ] && [ -f "$SL/$ID/live/limits" ] && [ -f "$SL/$ID/usage" ]'

# --- list / show ------------------------------------------------------------------------------
run_ok "slice list" into "$TMP/list" slice list &&
        holds "list: the exec slice with its 1Gi quota, generation 1" "grep -qE '^$ID +- +1Gi +unlimited +cap +normal +1\$' '$TMP/list'"
run_ok "slice list --json" into "$TMP/list.json" slice list --json &&
        holds "list --json: id, memory 1Gi, generation 1" \
        "[ \"\$(jq -r '.slices[0] | \"\\(.id) \\(.limits.memory) \\(.limits.generation)\"' '$TMP/list.json')\" = '$ID 1Gi 1' ]"
a=$(ask info)
holds "before: cuMemGetInfo and NVML show the 1024 MiB quota ($a)" \
        '[ "$(field cuda_total "$a")" = 1024 ] && [ "$(field nvml_total "$a")" = 1024 ]'

# --- grow: views and allocations follow at once -------------------------------------------------
run_ok "slice set --memory 2Gi" into "$TMP/set1" slice set "$ID" --memory 2Gi &&
        holds "set prints the change: memory 1Gi -> 2Gi (generation 2)" "grep -qx 'slice $ID: memory 1Gi -> 2Gi (generation 2)' '$TMP/set1'"
a=$(ask info)
holds "grown: cuMemGetInfo and NVML show 2048 MiB right after set returns ($a)" \
        '[ "$(field cuda_total "$a")" = 2048 ] && [ "$(field nvml_total "$a")" = 2048 ]'

# --- an idle process of the slice applies a change by itself (its watcher), within a second -----
env LD_LIBRARY_PATH="$FAKE" GPUSLICE_LOG_LEVEL=2 LD_PRELOAD="$LIB" GPUSLICE_REGION="$SL/$ID/usage" \
        GPUSLICE_LIVE_LIMITS="$SL/$ID/live/limits" GPUSLICE_MEMORY_LIMIT=1Gi "$PROBE" <&5 >"$TMP/idle.out" 2>"$TMP/idle.err" &
IDLE=$!; pids+=($IDLE)
echo info >&5
for _ in $(seq 100); do grep -q '^info' "$TMP/idle.out" && break; sleep 0.05; done
holds "a second process of the slice starts with the current quota, 2048 MiB (the live file wins over its 1Gi variable)" \
        "grep -q 'cuda_total=2048 ' '$TMP/idle.out'"
holds "grown: 1200 MiB (more than the old quota) are granted beside the two contexts" '[ "$(ask "alloc 1200")" = "alloc ok" ]'
slice set "$ID" --memory 3Gi >/dev/null
t0=$(date +%s%N)
seen=
while [ $(( ($(date +%s%N) - t0) / 1000000 )) -lt 3000 ]; do
        grep -q "live limits generation 3 applied" "$TMP/idle.err" && { seen=$(( ($(date +%s%N) - t0) / 1000000 )); break; }
        sleep 0.02
done
holds "an idle process (no call into CUDA) applied generation 3 by itself after ${seen:-never} ms (at most 1000)" \
        '[ -n "$seen" ] && [ "$seen" -le 1000 ]'

# --- shrink below usage: nothing freed, new allocations refused, the slice says so --------------
run_ok "slice set --memory 512Mi (below the ~1800 MiB in use)" into /dev/null slice set "$ID" --memory 512Mi
a=$(ask info)
holds "shrunk: the views show the 512 MiB quota, none free ($a)" '[ "$(field cuda_total "$a")" = 512 ] && [ "$(field cuda_free "$a")" = 0 ]'
# (CUDA_ERROR_OUT_OF_MEMORY, 2: what an application sees when a quota refuses; the same process is
# granted an allocation again once usage is under the quota, below)
holds "shrunk below usage: a new allocation is refused, out of memory" '[ "$(ask "alloc 16")" = "alloc refused 2" ]'
# (from 3072 MiB, or 2048 when its watcher had not looked yet since the 3Gi change)
holds "... and the process says so: quota -> 512 MiB, below what is in use, nothing freed" \
        "grep -qE 'device 0: memory quota (3072|2048) MiB -> 512 MiB, below the [0-9]+ MiB in use: nothing is freed; new allocations fail until usage is under the quota' '$TMP/err'"
holds "nothing was freed or killed: the probe still runs and holds its memory" 'kill -0 $EXEC && [ -d /proc/$EXEC ]'
run_ok "slice show" into "$TMP/show" slice show "$ID" &&
        holds "show: OVER QUOTA on device 0" "grep -q 'of 512.0 MiB  OVER QUOTA' '$TMP/show'"
run_ok "slice show --json" into "$TMP/show.json" slice show --json "$ID" &&
        holds "show --json: over_quota true, memory_limit 512 MiB" \
        "[ \"\$(jq -r '.devices[0] | \"\\(.over_quota) \\(.memory_limit)\"' '$TMP/show.json')\" = 'true 536870912' ]"
run_ok "metrics --once" into "$TMP/m1.prom" "$GS" metrics --once --no-nvml --regions-dir "$SL" &&
        holds "metrics: gpuslice_slice_memory_limit_bytes is the new 512 MiB, gpuslice_slice_memory_over_quota 1" \
        "grep -q '^gpuslice_slice_memory_limit_bytes{container_id=\"$ID\".* 536870912\$' '$TMP/m1.prom' &&
         grep -q '^gpuslice_slice_memory_over_quota{container_id=\"$ID\".* 1\$' '$TMP/m1.prom'"
run_ok "top --json" into "$TMP/top.json" "$GS" top --json --no-nvml --regions-dir "$SL" --interval 0.2 &&
        holds "top --json: memory_limit 512 MiB" \
        "jq -e '[.. | objects | select(.memory_limit? == 536870912)] | length > 0' '$TMP/top.json' >/dev/null"

# --- what a process of the slice can write never raises its quota --------------------------------
holds "a process writes 100000 MiB as the limit into its usage region and bumps its generation" \
        '[ "$(ask "poke $SL/$ID/usage 100000")" = "poke ok" ]'
holds "... its allocations still stop at the host's 512 MiB quota (out of memory)" '[ "$(ask "alloc 16")" = "alloc refused 2" ]'
a=$(ask info)
holds "... and its views still show 512 MiB ($a)" '[ "$(field cuda_total "$a")" = 512 ]'
echo quit >&5; wait $IDLE # (its context counts until it exits)
holds "usage back under the quota: free, then an allocation is granted again" \
        '[[ "$(ask free)" == "free "* ]] && [ "$(ask "alloc 16")" = "alloc ok" ]'
run_ok "metrics --once after the free" into "$TMP/m2.prom" "$GS" metrics --once --no-nvml --regions-dir "$SL" &&
        holds "metrics: gpuslice_slice_memory_over_quota 0 again" \
        "grep -q '^gpuslice_slice_memory_over_quota{container_id=\"$ID\".* 0\$' '$TMP/m2.prom'"

# --- who changed what -----------------------------------------------------------------------------
holds "every change is recorded in the slice's changes with uid, pid, old -> new (3 lines)" \
        "[ \$(grep -cE '^[0-9T:Z-]+ uid=$(id -u) pid=[0-9]+ generation [0-9]+ -> [0-9]+: memory ' '$SL/$ID/changes') = 3 ] &&
         grep -q 'generation 3 -> 4: memory 3Gi -> 512Mi' '$SL/$ID/changes'"
slice set --json "$ID" --priority low >"$TMP/set.json"
holds "set --json: before/after and the change" \
        "[ \"\$(jq -r '\"\\(.before.priority) \\(.after.priority) \\(.after.generation)\"' '$TMP/set.json')\" = 'normal low 5' ]"

# --- atomic: the live file is replaced whole; a reader never sees half of one ----------------------
# (200 changes while a reader reads the file as fast as it can: each read has the generation line,
# exactly one memory line and the final newline; and the processes never ignore a file as broken)
( for i in $(seq 100); do slice set "$ID" --memory 1Gi >/dev/null; slice set "$ID" --memory 768Mi >/dev/null; done ) &
W=$!
reads=0 torn=0
while kill -0 $W 2>/dev/null; do
        c=$(cat "$SL/$ID/live/limits" 2>/dev/null; echo x)
        reads=$((reads + 1))
        if ! grep -q '^GPUSLICE_GENERATION=[0-9]' <<<"$c" || [ "$(grep -c '^GPUSLICE_MEMORY_LIMIT=' <<<"$c")" != 1 ] ||
           [ "${c: -2}" != $'\nx' ]; then torn=$((torn + 1)); fi
done
wait $W
holds "200 changes: $reads reads while they were written, none of them partial ($torn)" '[ $reads -gt 20 ] && [ $torn = 0 ]'
holds "... and no process ever ignored the live file as broken" "! grep -q 'live limits ignored' '$TMP/err' '$TMP/idle.err'"
holds "... generation 205 at the end" "grep -qx GPUSLICE_GENERATION=205 '$SL/$ID/live/limits'"

# --- errors ---------------------------------------------------------------------------------------
slice set "$ID" --compute 50 >/dev/null 2>"$TMP/e1"; rc=$?
holds "a compute limit for a slice that started without one is refused, saying why (exit $rc)" \
        "[ $rc = 1 ] && grep -q 'started without a compute limit: its processes.* kernel launches are not interposed' '$TMP/e1'"
slice set "$ID" --memory 4GB >/dev/null 2>"$TMP/e2"; rc=$?
holds "an invalid size is refused (exit $rc), nothing written" \
        "[ $rc = 1 ] && grep -q \"invalid memory '4GB'\" '$TMP/e2' && grep -qx GPUSLICE_GENERATION=205 '$SL/$ID/live/limits'"
slice set "$ID" >/dev/null 2>"$TMP/e3"; rc=$?
holds "set without a change is a usage error (exit $rc)" "[ $rc = 2 ] && grep -q 'nothing to change' '$TMP/e3'"
slice show nosuch >/dev/null 2>"$TMP/e4"; rc=$?
holds "an unknown slice is an error (exit $rc)" "[ $rc = 1 ] && grep -q \"no live slice 'nosuch'\" '$TMP/e4'"
slice show "${ID:0:6}" >"$TMP/prefix" 2>&1
holds "a unique start of the id names the slice" "grep -q '^slice: *$ID' '$TMP/prefix'"
slice show "$SL/$ID" >"$TMP/bydir" 2>&1
holds "the slice directory names the slice" "grep -q '^slice: *$ID' '$TMP/bydir'"
slice show /tmp >/dev/null 2>"$TMP/e5"; rc=$?
holds "a directory outside the regions directory is refused (exit $rc)" "[ $rc = 1 ] && grep -q 'is not a slice directory' '$TMP/e5'"
"$GS" slice --help | grep -q "set      change a slice" && "$GS" slice set --help | grep -q -- "--memory=SIZE" &&
        ok "slice --help, slice set --help" || not_ok "slice help"

# --- compute: a change reaches the limiter at its next window (and the GPU's arbiter) -------------
# (and the GPU time the slice gets: its fraction over 1.5 s before and 2 s after the change, from
# the probe's progress file, tests/vgpu/progress.h: launches of 500 us kernels, wall and off-CPU
# time; the lower bounds allow for the interval's CPU stalls as vgpu_compute's do: the application
# thread's wait less its other threads' CPU time, tests/lib/probe.sh)
# interval A B: the progress lines A and B as one probe report of the time between them
interval() {
        awk -v a="$1" -v b="$2" -v ncpu="$(nproc)" '
                function f(s, k) { return match(s, k "=[-0-9.]+") ? substr(s, RSTART + length(k) + 1, RLENGTH - length(k) - 1) + 0 : -1 }
                BEGIN { t = f(b, "wall_us") - f(a, "wall_us"); if (f(a, "ops") < 0 || f(b, "ops") < 0 || t <= 0) exit 1
                        w = f(a, "cpu_wait_us") < 0 ? -1 : (f(b, "cpu_wait_us") - f(a, "cpu_wait_us") - (f(b, "others_us") - f(a, "others_us"))) / t
                        if (w < 0 && f(a, "cpu_wait_us") >= 0) w = 0
                        st = f(a, "steal_us") < 0 ? -1 : (f(b, "steal_us") - f(a, "steal_us")) / (t * ncpu)
                        printf "cpu_wait=%.4f steal=%.4f launches=%d wall_us=%.0f fraction=%.4f\n", w, st, f(b, "ops") - f(a, "ops"), t, (f(b, "ops") - f(a, "ops")) * 500 / t }'
}
# span SECONDS FILE: the probe's report of the next SECONDS into FILE
span() { local a; a=$(cat "$TMP/c.prog"); sleep "$1"; interval "$a" "$(cat "$TMP/c.prog")" >"$2"; }
# share FILE LO HI: the interval's fraction is in [LO x (1 - its off-CPU share), HI]
share() { awk -v f="$(probe_field fraction "$1")" -v lo="$(probe_lo "$2" "$1" 2>/dev/null)" -v hi="$3" 'BEGIN { exit !(f != "" && f >= lo && f <= hi) }'; }
mkdir "$TMP/arbiter"
env LD_LIBRARY_PATH="$FAKE" GPUSLICE_VGPU_LIB="$LIB" GPUSLICE_ARBITER_DIR="$TMP/arbiter" GPUSLICE_LOG_LEVEL=2 \
        PROBE_PROGRESS="$TMP/c.prog" "$GS" exec --regions-dir "$SL" --compute 30 -- "$CPROBE" kernel 12 500 >"$TMP/c.out" 2>"$TMP/c.err" &
C=$!; pids+=($C)
# climit: the compute limit of slice exec-$C as top reads it from the region (what the processes obey)
climit() { "$GS" top --json --no-nvml --regions-dir "$SL" --interval 0.1 2>/dev/null |
        jq -r --arg id "exec-$C" '.slices[] | select(.id == $id) | .devices[0].compute_limit'; }
for _ in $(seq 60); do [ "$(climit)" = 0.3 ] && break; sleep 0.1; done
holds "a compute slice runs, its processes at 30 %" '[ "$(climit)" = 0.3 ]'
sleep 0.5 # (its first window behind it)
# spanned SECONDS FILE LO HI: the interval's report, its fraction within LO..HI (probe_case's FN:
# an interval too disturbed to judge is measured again)
spanned() {
        span "$1" "$2"
        PROBE_SAID="$(probe_field fraction "$2") over $1 s (>= $(probe_lo "$3" "$2"), <= $4)"
        share "$2" "$3" "$4"
}
before() { spanned 1.5 "$TMP/c.before" 0.26 0.34; }
probe_case "... and it gets 30 % of the GPU" before "$TMP/c.before"
slice set "exec-$C" --compute 60 --priority high >/dev/null
t0=$(date +%s%N) seen=
while [ $(( ($(date +%s%N) - t0) / 1000000 )) -lt 3000 ]; do
        [ "$(climit)" = 0.6 ] && { seen=$(( ($(date +%s%N) - t0) / 1000000 )); break; }
done
holds "set --compute 60: the limiter applied 60 % after ${seen:-never} ms (at most 1000, top's own 0.1 s included)" \
        '[ -n "$seen" ] && [ "$seen" -le 1000 ]'
holds "... and said so: compute limit 30.00 % -> 60.00 %" "grep -q 'device 0: compute limit 30.00 % -> 60.00 %' '$TMP/c.err'"
sleep 0.3 # (the window in which it came behind it)
after() { spanned 2 "$TMP/c.after" 0.54 0.66; }
probe_case "... and the slice gets 60 % of the GPU after the change" after "$TMP/c.after"
a=$(probe_field fraction "$TMP/c.after") b=$(probe_field fraction "$TMP/c.before")
# (a ratio no CPU stall of the machine moves much: both intervals lose about the same share)
holds "... twice what it had before: $a / $b (>= 1.6)" "awk -v a='$a' -v b='$b' 'BEGIN { exit !(a != \"\" && b > 0 && a / b >= 1.6) }'"
rec=$(ls "$TMP"/arbiter/gpuslice-gpu-*/x-* 2>/dev/null | head -1)
holds "... and its record in the GPU's arbiter: weight 6000, priority high (0)" \
        '[ -n "$rec" ] && [ "$(od -An -t u4 -j 40 -N 4 "$rec" | tr -d " ")" = 6000 ] && [ "$(od -An -t u4 -j 56 -N 4 "$rec" | tr -d " ")" = 0 ]'
kill $C 2>/dev/null; wait $C 2>/dev/null

# --- the end: the directory goes with the exec ------------------------------------------------------
echo quit >&4
wait $EXEC; rc=$?
holds "the probe exits 0 when told (exit $rc) and exec removes its slice directory" "[ $rc = 0 ] && [ ! -e '$SL/$ID' ]"
finish
