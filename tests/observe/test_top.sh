#!/usr/bin/env bash
# `gpuslice top` against workloads on the simulated GPU: three `gpuslice exec` slices (a memory
# quota; compute 30 % on GPU 0; compute 60 % on GPU 1) and two containers started by the real
# runc with our hook (one with its pod's names), NVML through a fake driver root.
#   --once and --once --json: the numbers are what the workloads allocated and their limits;
#   --pids: the workloads' real host pids (the containers' from runc, not their pid 1);
#   --once with NVML failing: printed after a few seconds of asking again, nvml_error says why; a
#   failed first attempt is asked again at once and its answer printed;
#   live, in tmux at 80x24: every slice shown within 80 columns, the order changes on m/c/n and the
#   sorted column is marked, a resize is followed, q quits (the process is gone, the terminal as it
#   was), and so do SIGTERM and Ctrl-C.
. "$(dirname "$0")/../integration/lib.sh"
. "$SRC/tests/integration/bundle.sh"

# runc, jq, tmux and pgrep come with `make test-deps`: one missing is a broken environment (a failure)
[ -x "$RUNC" ] || { not_ok "runc is not installed (make test-deps)"; finish; }
for t in jq tmux pgrep; do command -v $t >/dev/null || { not_ok "$t is not installed (make test-deps)"; finish; }; done
FAKE=$BUILD/tests/fakegpu
MEMPROBE=$BUILD/tests/vgpu/vgpu-probe
CPROBE=$BUILD/tests/vgpu/compute-probe
for f in "$GS" "$VGPU_LIB" "$PROBE" "$MEMPROBE" "$CPROBE"; do [ -e "$f" ] || { not_ok "$f is not built"; finish; }; done

DRV=$(mkroot drv 2gpu.conf)
STATE=$TMP/runc-state
CG=gs-obs-top-$$
SLICES=$TMP/slices
CONF=$TMP/hook.toml
hook_config "$CONF" "$DRV" "$SLICES"
TMUX_SOCK=gs-top-$$
# the processes under pid $1 (all generations)
descendants() { local c; for c in $(pgrep -P "$1"); do echo "$c"; descendants "$c"; done; }
ids=() pids=()
cleanup() {
        local id p d
        tmux -L "$TMUX_SOCK" kill-server 2>/dev/null
        # each workload: the background shell, its `gpuslice exec` and the probe under it
        for p in "${pids[@]+"${pids[@]}"}"; do kill $(descendants "$p") "$p" 2>/dev/null; done
        wait 2>/dev/null
        for id in "${ids[@]+"${ids[@]}"}"; do "$RUNC" --root "$STATE" delete -f "$id" >/dev/null 2>&1; done
        for d in /sys/fs/cgroup/*/"$CG"-*; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done
        rm -rf "$TMP"
}
trap cleanup EXIT
# the ASan build: the interposer is preloaded into programs after the sanitizer runtime
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0
# holds DESC EXPR: ok when the shell expression EXPR is true (check.sh's `check` runs a command)
holds() { if eval "$2"; then ok "$1"; else not_ok "$1"; fi; }
between() { awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v != "" && v >= lo && v <= hi) }'; }
MiB=1048576 GiB=1073741824

# --- usage errors ----------------------------------------------------------------------------------
run e1 -- "$GS" top --regions-dir "$SLICES" --no-nvml
expect_rc e1 2 "live mode with stdout not a terminal is refused"
expect_err e1 "the live view needs a terminal (stdout is not one): use --once, or --once --json, for scripts" \
        "... with a clear error"
run e2 -- "$GS" top --once --interval 0
expect_rc e2 2 "--interval 0 is a usage error"
run e3 -- "$GS" top --once --sort cpu
expect_err e3 "invalid --sort: cpu (memory, compute or name)" "--sort cpu is a usage error naming the keys"
run e4 -- "$GS" top --once --region relative/path
expect_err e4 "--region must be an absolute path" "--region must be absolute (as for metrics)"
run e5 -- "$GS" top --help
holds "top --help names the keys and --once/--json/--pids" \
        'grep -q "Keys: m, c, n sort by memory, compute, name" "$TMP/e5.out" && grep -q -- "--json" "$TMP/e5.out" && grep -q -- "--pids" "$TMP/e5.out"'

# --- the workloads ------------------------------------------------------------------------------------
wl() { env FAKEGPU_CONFIG="$DRV/etc/fakegpu/gpus.conf" FAKEGPU_STATE="$TMP/fakegpu.state" GPUSLICE_ARBITER_DIR="$TMP/arbiter" "$@"; }
mkdir -p "$TMP/arbiter"
wl "$GS" exec --memory 1Gi --region "$TMP/exec-mem" -- env LD_LIBRARY_PATH="$FAKE" "$MEMPROBE" hold 100 120 >"$TMP/w-mem.out" 2>&1 &
E_MEM=$!; pids+=($!)
wl "$GS" exec --compute 30 --memory 2Gi --region "$TMP/exec-c30" -- env LD_LIBRARY_PATH="$FAKE" "$CPROBE" kernel 120 500 >"$TMP/w-c30.out" 2>&1 &
E_C30=$!; pids+=($!)
wl "$GS" exec --compute 60 --region "$TMP/exec-c60" -- env LD_LIBRARY_PATH="$FAKE" CUDA_VISIBLE_DEVICES=1 "$CPROBE" kernel 120 500 >"$TMP/w-c60.out" 2>&1 &
E_C60=$!; pids+=($!)

H_PRESTART='{path: $gs, args: ["gpuslice", "--root", $drv, "hook", "--config", $conf, "prestart"], env: $hookenv}'
# start NAME GPU LIMIT MIB ANNOTATIONS-JSON: a detached container with a slice whose process holds MIB
start() {
        local name=$1 id=gs-$$-$1
        make_bundle "$name" '.process.env += ["NVIDIA_VISIBLE_DEVICES='"$2"'", "GPUSLICE_MEMORY_LIMIT='"$3"'"]
                | .process.args = ["/usr/bin/vgpu-probe", "hold", "'"$4"'", "120"]
                | .annotations = $ann | .hooks = {prestart: ['"$H_PRESTART"']}' --argjson ann "$5"
        ids+=("$id")
        run "$name" -- timeout 60 "$RUNC" --root "$STATE" run -d --bundle "$TMP/$name" "$id" </dev/null
        expect_rc "$name" 0 "runc run -d of a slice container ($name: GPU $2, $3, holding $4 MiB)"
}
start crio 0 1Gi 64 '{"io.kubernetes.pod.namespace": "team-a", "io.kubernetes.pod.name": "trainer-0",
        "io.kubernetes.container.name": "main"}'
start plain 1 3Gi 200 '{}'

# the workloads' host pids: the probes under each `gpuslice exec` (its child), the containers' init
probe_under() { # ROOT-PID PROGRAM
        local p
        for _ in $(seq 100); do
                for p in $(descendants "$1"); do [ "$(readlink "/proc/$p/exe")" = "$2" ] && { echo "$p"; return; }; done
                sleep 0.05
        done
}
P_MEM=$(probe_under $E_MEM "$MEMPROBE") P_C30=$(probe_under $E_C30 "$CPROBE") P_C60=$(probe_under $E_C60 "$CPROBE")
P_CRIO=$("$RUNC" --root "$STATE" state "gs-$$-crio" | jq -r .pid)
P_PLAIN=$("$RUNC" --root "$STATE" state "gs-$$-plain" | jq -r .pid)
for _ in $(seq 100); do grep -q "^held" "$TMP/w-mem.out" 2>/dev/null && break; sleep 0.1; done
holds "the exec memory workload holds its 100 MiB" 'grep -q "^held 100" "$TMP/w-mem.out"'

TOP=("$GS" --root "$DRV" top --regions-dir "$SLICES" --region "$TMP/exec-*")
# wait until all five slices show what they hold
for _ in $(seq 100); do
        "${TOP[@]}" --once --json --interval 0.2 >"$TMP/wait.json" 2>/dev/null
        n=$(jq '[.slices[].devices[] | select(.memory_allocated == 64*1048576 or .memory_allocated == 100*1048576 or .memory_allocated == 200*1048576)] | length' "$TMP/wait.json" 2>/dev/null)
        [ "$n" = 3 ] && [ "$(jq '.slices | length' "$TMP/wait.json")" = 5 ] && break
        sleep 0.2
done
holds "five slices, the three holders' memory in place" '[ "$n" = 3 ]'

# --- --once --json: the numbers -------------------------------------------------------------------
run json -- "${TOP[@]}" --once --json --pids
expect_rc json 0 "top --once --json --pids"
J=$TMP/json.out
holds "--json: a valid document with 5 slices" 'jq -e ".slices | length == 5" "$J" >/dev/null'
# dev SLICE-ID-SUFFIX DEVICE-INDEX FILTER: jq on that device of the slice whose id ends so
dev() { jq -r --arg s "$1" --argjson d "$2" ".slices[] | select(.id | endswith(\$s)) | .devices[] | select(.index == \$d) | $3" "$J"; }
sl() { jq -r --arg s "$1" ".slices[] | select(.id | endswith(\$s)) | $2" "$J"; }
holds "exec memory slice: allocated 100 MiB exactly, quota 1 GiB, GPU 0" \
        '[ "$(dev /exec-mem 0 .memory_allocated)" = $((100 * MiB)) ] && [ "$(dev /exec-mem 0 .memory_limit)" = $GiB ] && [ "$(dev /exec-mem 0 .gpu)" = 0 ]'
holds "exec memory slice: used = allocated + overhead, one process, no compute figures" \
        '[ "$(dev /exec-mem 0 ".memory_used == .memory_allocated + .memory_overhead and .processes == 1 and .compute_used == null and .compute_limit == null")" = true ]'
c30=$(dev /exec-c30 0 .compute_used) c60=$(dev /exec-c60 0 .compute_used)
holds "exec compute slice c30: limit 0.3, used $c30 (0.2..0.4), quota 2 GiB, GPU 0" \
        '[ "$(dev /exec-c30 0 .compute_limit)" = 0.3 ] && between "$c30" 0.2 0.4 && [ "$(dev /exec-c30 0 .memory_limit)" = $((2 * GiB)) ] && [ "$(dev /exec-c30 0 .gpu)" = 0 ]'
holds "exec compute slice c60: limit 0.6, used $c60 (0.45..0.75), no quota (null), on GPU 1" \
        '[ "$(dev /exec-c60 0 .compute_limit)" = 0.6 ] && between "$c60" 0.45 0.75 && [ "$(dev /exec-c60 0 .memory_limit)" = null ] && [ "$(dev /exec-c60 0 .gpu)" = 1 ] && [ "$(dev /exec-c60 0 .uuid)" = "$GPU1_UUID" ]'
holds "container crio: a container slice with its pod's names, 64 MiB allocated of 1 GiB on GPU 0" \
        '[ "$(sl -crio "[.kind, .namespace, .pod, .container, .name] | join(\",\")")" = "container,team-a,trainer-0,main,team-a/trainer-0/main" ] && [ "$(dev -crio 0 .memory_allocated)" = $((64 * MiB)) ] && [ "$(dev -crio 0 .memory_limit)" = $GiB ] && [ "$(dev -crio 0 .gpu)" = 0 ]'
holds "container plain: 200 MiB allocated of 3 GiB on GPU 1, no labels (null)" \
        '[ "$(dev -plain 0 .memory_allocated)" = $((200 * MiB)) ] && [ "$(dev -plain 0 .memory_limit)" = $((3 * GiB)) ] && [ "$(dev -plain 0 .gpu)" = 1 ] && [ "$(sl -plain .pod)" = null ]'
holds "the containers' owners are their init processes" \
        '[ "$(sl -crio .owner_pid)" = "$P_CRIO" ] && [ "$(sl -plain .owner_pid)" = "$P_PLAIN" ]'
holds "per GPU: NVML's two A100s (nvml_up)" \
        '[ "$(jq -r "[.nvml_up, (.gpus | length), .gpus[0].model, .gpus[0].memory_total] | join(\",\")" "$J")" = "true,2,NVIDIA A100-SXM4-40GB,42949672960" ]'

# --- --pids: the real host pids ----------------------------------------------------------------------
for c in "/exec-mem $P_MEM" "/exec-c30 $P_C30" "/exec-c60 $P_C60" "-crio $P_CRIO" "-plain $P_PLAIN"; do
        read -r s want <<<"$c"
        got=$(sl "$s" '.host_pids | map(tostring) | join(",")')
        holds "--pids: slice *$s: host pids [$got] = the workload's [$want]" '[ -n "$want" ] && [ "$got" = "$want" ]'
done
holds "--pids: the containers' own pids are 1 (their namespace), the host's differ" \
        '[ "$(sl -crio .pids[0])" = 1 ] && [ "$(sl -plain .pids[0])" = 1 ] && [ "$P_CRIO" != 1 ]'

# --- --once, the table ------------------------------------------------------------------------------------
run text -- "${TOP[@]}" --once --pids
expect_rc text 0 "top --once --pids (stdout not a terminal: full width)"
T=$TMP/text.out
holds "--once: the title counts 5 slices, sorted by memory" 'head -1 "$T" | grep -q "5 slices  sort: memory"'
holds "--once: a line per GPU from NVML" 'grep -q "^GPU 0  NVIDIA A100-SXM4-40GB  memory .* / 40G  util 35%" "$T" && grep -q "^GPU 1 " "$T"'
holds "--once: the header marks the sorted column" 'grep -q "^CONTAINER .* MEMORY\* .* COMPUTE PRIO  WAIT PROCS PIDS$" "$T"'
row() { grep -E "$1" "$T" | head -1; }
# check_row DESC ROW-REGEX LINE-REGEX: the first row matching ROW-REGEX matches LINE-REGEX
check_row() {
        if row "$2" | grep -Eq -- "$3"; then ok "$1"; else not_ok "$1: row '$(row "$2")'"; fi
}
check_row "--once: exec-mem on GPU 0, quota 1.0G with its bar, no compute, its pid" \
        "/exec-mem +0 " " / 1.0G +\[#* +[0-9]+%\] +- / - +[a-z-]+ +- +1 $P_MEM\$"
check_row "--once: exec-c60 on GPU 1, no quota, 60 % limit" "/exec-c60 +1 " " / - +\[no quota +\] +[0-9]+% / 60% +[a-z-]+ +[^ ]+ +1 $P_C60\$"
check_row "--once: the labelled container by its names, 1.0G quota, GPU 0" "^team-a/trainer-0/main +0 " " / 1.0G .* 1 $P_CRIO\$"
check_row "--once: the other container by its id, 3.0G quota, GPU 1" "^gs-$$-plain +1 " " / 3.0G .* 1 $P_PLAIN\$"
holds "--once: the largest user first (the 200 MiB container)" '[ "$(sed -n "6p" "$T" | cut -d" " -f1)" = "gs-$$-plain" ]'

# --- priority and launch waits: a version 3 region (synth.h: priority normal, device 1 through MPS)
# and a version 2 one (no counters), with launches counted during top's interval --------------------------
TOOL=$BUILD/tests/region_tool
mkdir -p "$TMP/none"
"$TOOL" synth "$TMP/synth-v3" 2 1 4 && "$TOOL" synth2 "$TMP/synth-v2" 1 1 5 || not_ok "region_tool synth"
WTOP=("$GS" top --regions-dir "$TMP/none" --region "$TMP/synth-*" --no-nvml --interval 3)
"${WTOP[@]}" --once --json >"$TMP/w.json" 2>"$TMP/w.err" &
WT=$!
sleep 1 # within top's interval: 196 launches that did not wait and 4 of 3 ms on device 0
"$TOOL" launch "$TMP/synth-v3" 0 196 0 && "$TOOL" launch "$TMP/synth-v3" 0 4 3000000 || not_ok "region_tool launch"
wait $WT; wrc=$?
holds "top --once --json on a version 3 and a version 2 region: exit 0 ($(head -c 200 "$TMP/w.err"))" '[ $wrc = 0 ]'
wj() { jq -r --arg s "$1" ".slices[] | select(.id | endswith(\$s)) | $2" "$TMP/w.json"; }
holds "v3: priority normal; mechanism time on device 0, mps on device 1" \
        '[ "$(wj /synth-v3 "[.priority, .devices[0].compute_mechanism, .devices[1].compute_mechanism] | join(\",\")")" = "normal,time,mps" ]'
holds "v3: launches since the region was made: 1000 + 200 on device 0, wait_seconds 2.0103 + 0.012" \
        '[ "$(wj /synth-v3 ".devices[0].launch_wait | .launches == 1200 and .wait_seconds > 2.02229 and .wait_seconds < 2.02231")" = true ]'
holds "v3: the interval's window: 200 launches, 4 waited, mean 60 us, p99 at most 5 ms (the bucket of 3 ms)" \
        '[ "$(wj /synth-v3 ".devices[0].launch_wait.window | .launches == 200 and .waited == 4 and .mean_seconds > 0.0000599 and .mean_seconds < 0.0000601 and .p99_seconds == 0.005 and .p99_over == false")" = true ]'
holds "v3: device 1 had no launch in the window: mean and p99 null" \
        '[ "$(wj /synth-v3 ".devices[1].launch_wait.window | [.launches, .mean_seconds, .p99_seconds] | map(tostring) | join(\",\")")" = "0,null,null" ]'
holds "v2: shown with its memory, priority, mechanism and launch waits null" \
        '[ "$(wj /synth-v2 "[.devices[0].memory_allocated, .priority, .devices[0].compute_mechanism, .devices[0].launch_wait] | map(tostring) | join(\",\")")" = "1048576,null,null,null" ]'
# no launch during this one's interval: device 0's window is idle
run wtext -- "${WTOP[@]}" --once --sort name
check_wrow() { if grep -E "$2" "$TMP/wtext.out" | head -1 | grep -Eq -- "$3"; then ok "$1"; else not_ok "$1: $(grep -E "$2" "$TMP/wtext.out" | head -1)"; fi; }
check_wrow "--once: the version 3 slice's rows show PRIO norm and WAIT idle (no launch in the interval)" \
        "synth-v3 +\? " " / 25% +norm +idle +1\$"
check_wrow "--once: the version 2 slice's row shows - for both" "synth-v2 +\? " " / 25% +- +- +1\$"

# --- --once and an NVML that fails -------------------------------------------------------------------------
# one that never answers: --once still prints, after its few seconds of asking again, and says why
FAILROOT=$(mkroot nvmlfail 2gpu.conf)
echo "fault init error driver_not_loaded" >>"$FAILROOT/etc/fakegpu/gpus.conf"
start=$(date +%s%N)
run nf -- "$GS" --root "$FAILROOT" top --regions-dir "$SLICES" --once --json --interval 0.2
secs=$(( ($(date +%s%N) - start) / 1000000 ))
expect_rc nf 0 "top --once --json with NVML failing"
holds "--once, NVML failing: nvml_up false, nvml_error says why, no GPUs" \
        '[ "$(jq -r "[.nvml_up, .nvml_error, (.gpus | length)] | join(\",\")" "$TMP/nf.out")" = "false,nvml error: Driver Not Loaded,0" ]'
holds "--once, NVML failing: done in ${secs} ms (asked again for 3 s, not longer)" '[ "$secs" -ge 3000 ] && [ "$secs" -lt 8000 ]'
holds "--once, NVML failing: said once on stderr" '[ "$(grep -c "NVML: nvml error: Driver Not Loaded" "$TMP/nf.err")" = 1 ]'
# one whose first attempt fails: --once asks again (not an --nvml-interval later) and prints its answer
"$GS" --root "$FAILROOT" top --regions-dir "$SLICES" --once --json --interval 2 --nvml-interval 60 \
        >"$TMP/nf2.out" 2>"$TMP/nf2.err" &
NF2=$!
for _ in $(seq 200); do grep -q "NVML: nvml error" "$TMP/nf2.err" && break; sleep 0.05; done
sed -i '/^fault /d' "$FAILROOT/etc/fakegpu/gpus.conf"
wait $NF2; nf2rc=$?
holds "--once, NVML's first attempt failed: exit 0, the next one's answer printed (nvml_up, 2 GPUs)" \
        '[ $nf2rc = 0 ] && [ "$(jq -r "[.nvml_up, .nvml_error, (.gpus | length)] | join(\",\")" "$TMP/nf2.out")" = "true,,2" ]'
holds "--once, NVML's first attempt failed: its failure and its answer on stderr" \
        'grep -q "NVML: nvml error: Driver Not Loaded" "$TMP/nf2.err" && grep -q "NVML answers again (2 GPUs)" "$TMP/nf2.err"'

# --- live, in tmux at 80x24 ------------------------------------------------------------------------------
# pane.sh PIDFILE CMD...: record the command's pid, run it, then say how it ended and whether the
# terminal's settings are what they were before
cat >"$TMP/pane.sh" <<'EOF'
#!/bin/bash
pidfile=$1; shift
s1=$(stty -g)
sh -c 'echo $$ >"$0"; exec "$@"' "$pidfile" "$@"
rc=$?
if [ "$(stty -g)" = "$s1" ]; then t=restored; else t=changed; fi
echo "EXITED rc=$rc tty=$t"
exec sleep 300
EOF
chmod +x "$TMP/pane.sh"
tm() { tmux -L "$TMUX_SOCK" -f /dev/null "$@"; }
# live NAME: top in a new detached 80x24 session NAME
live() {
        tm new-session -d -x 80 -y 24 -s "$1" "$(printf '%q ' "$TMP/pane.sh" "$TMP/$1.pid" "${TOP[@]}")"
        for _ in $(seq 100); do [ -s "$TMP/$1.pid" ] && break; sleep 0.05; done
}
cap() { tm capture-pane -p -t "$1" >"$TMP/$1.$2.pane"; }
# wait_pane NAME TAG EXTENDED-REGEX: capture until the pane shows it (10 s)
wait_pane() {
        for _ in $(seq 100); do cap "$1" "$2"; grep -Eq "$3" "$TMP/$1.$2.pane" && return 0; sleep 0.1; done
        sed 's/^/    # /' "$TMP/$1.$2.pane"; return 1
}
# tags NAME TAG: the slices of the pane's rows, in order (c30 c60 mem crio plain; narrow, the pod's
# name is shortened in its middle: team-../main)
tags() {
        awk '/^CONTAINER/ { on = 1; next } on && NF > 5 && !/q quit/ { print }' "$TMP/$1.$2.pane" | sed -E \
                -e 's#^[^ ]*exec-(c30|c60|mem) .*#\1#' -e 's#^team-[^ ]*main .*#crio#' -e 's#^gs-[^ ]*plain .*#plain#' |
                tr '\n' ' ' | sed 's/ $//'
}
widest() { awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$TMP/$1.$2.pane"; }

live s1
# (the checks that a process is gone below stand only behind these: an empty or stale pid passes them)
TOP_PID=$(cat "$TMP/s1.pid" 2>/dev/null)
started "live: top runs in tmux" "$TOP_PID"; top_up=$?
# every slice with a measured compute ratio (after one refresh)
wait_pane s1 m '[0-9]+% / 60%' && ok "live: top draws in tmux (80x24)" || not_ok "live: nothing drawn"
sed 's/^/    # /' "$TMP/s1.m.pane"
holds "live: the title says sort: memory, the header marks MEMORY*" \
        'head -1 "$TMP/s1.m.pane" | grep -q "sort: memory" && grep -q "^CONTAINER .* MEMORY\* " "$TMP/s1.m.pane"'
# NVML answers from its own helper process, asynchronously (a slow one never holds the view up):
# under a sanitizer on a loaded machine its first answer can come after the first slices.
wait_pane s1 nvml '^GPU 1  NVIDIA A100-SXM4-40GB' && ok "live: GPU lines from NVML" || not_ok "live: no GPU lines from NVML"
order=$(tags s1 m)
holds "live: all 7 rows (5 slices; two exec slices see both GPUs), largest memory first: $order" \
        '[ "$(echo $order | wc -w)" = 7 ] && [ "${order%% *}" = plain ] && [ "$(echo $order | cut -d" " -f2-3)" = "mem crio" ]'
holds "live: every line within 80 columns ($(widest s1 m))" '[ "$(widest s1 m)" -le 80 ]'
holds "live: the bottom line shows the keys" 'tail -1 "$TMP/s1.m.pane" | grep -q "m memory  c compute  n name  q quit"'

tm send-keys -t s1 n
wait_pane s1 n 'sort: name' && ok "live: n sorts by name (the title says so)" || not_ok "live: n did not sort by name"
order=$(tags s1 n)
holds "live: by name the rows are '$order'" '[ "$order" = "c30 c30 c60 mem mem plain crio" ] && grep -q "^CONTAINER\* " "$TMP/s1.n.pane"'
tm send-keys -t s1 c
wait_pane s1 c 'sort: compute' && ok "live: c sorts by compute" || not_ok "live: c did not sort by compute"
order=$(tags s1 c)
holds "live: by compute the 60 % slice, then the 30 % one, come first: '$order'" \
        '[ "$(echo $order | cut -d" " -f1-2)" = "c60 c30" ] && grep -q " COMPUTE\* PRIO  WAIT PROCS" "$TMP/s1.c.pane"'
tm send-keys -t s1 m
wait_pane s1 m2 'sort: memory' && ok "live: m sorts by memory again" || not_ok "live: m"
holds "live: the same order as before" '[ "$(tags s1 m2)" = "$(tags s1 m)" ]'

# a narrower terminal: followed (SIGWINCH), the lines still fit. tmux cuts the old lines at once
# (and drops the top ones): wait for top's own redraw, whole: its title on the first line again,
# and its keys, drawn last, on the last one.
tm resize-window -t s1 -x 60 -y 20
for _ in $(seq 50); do
        cap s1 r
        [ "$(widest s1 r)" -le 60 ] && head -1 "$TMP/s1.r.pane" | grep -q "^gpuslice top" &&
                tail -1 "$TMP/s1.r.pane" | grep -q "q quit" && grep -q "^CONTAINER" "$TMP/s1.r.pane" && break
        sleep 0.1
done
holds "live: resized to 60 columns, every line within 60 ($(widest s1 r)), the rows still there" \
        '[ "$(widest s1 r)" -le 60 ] && [ "$(tags s1 r | wc -w)" = 7 ]'
holds "live: at 60 columns the exec slices' paths are shortened from the left" \
        'grep -Eq "^\.\.[^ ]*/exec-c60 +1 " "$TMP/s1.r.pane"'

sed 's/^/    # /' "$TMP/s1.r.pane"
tm send-keys -t s1 q
wait_pane s1 q 'EXITED' && ok "live: q quits" || not_ok "live: q did not quit"
holds "live: exit 0, the terminal's settings restored" 'grep -q "EXITED rc=0 tty=restored" "$TMP/s1.q.pane"'
[ $top_up = 0 ] && holds "live: the process is gone" '! kill -0 "$TOP_PID" 2>/dev/null'

# SIGTERM and Ctrl-C (SIGINT from the terminal) end it as cleanly
live s2
S2_PID=$(cat "$TMP/s2.pid" 2>/dev/null)
started "live 2: top runs in tmux" "$S2_PID"; s2_up=$?
wait_pane s2 a 'sort: memory' || not_ok "live 2: nothing drawn"
[ $s2_up = 0 ] && kill -TERM "$S2_PID"
wait_pane s2 b 'EXITED' && grep -q "EXITED rc=0 tty=restored" "$TMP/s2.b.pane" && ok "live: SIGTERM: exit 0, the terminal restored" ||
        not_ok "live: SIGTERM"
live s3
S3_PID=$(cat "$TMP/s3.pid" 2>/dev/null)
started "live 3: top runs in tmux" "$S3_PID"; s3_up=$?
wait_pane s3 a 'sort: memory' || not_ok "live 3: nothing drawn"
tm send-keys -t s3 C-c
wait_pane s3 b 'EXITED' && grep -q "EXITED rc=0 tty=restored" "$TMP/s3.b.pane" && ok "live: Ctrl-C: exit 0, the terminal restored" ||
        not_ok "live: Ctrl-C"
[ $s2_up = 0 ] && [ $s3_up = 0 ] &&
        holds "live: both processes gone" '! kill -0 "$S2_PID" 2>/dev/null && ! kill -0 "$S3_PID" 2>/dev/null'
finish
