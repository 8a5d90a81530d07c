#!/usr/bin/env bash
# Missing or broken driver pieces, a hung or crashing NVML, bad input: clear errors, never a hang.
. "$(dirname "$0")/lib.sh"

fresh() { # NAME [FAULT LINE]: a 1-GPU root, optionally with a fault appended to its config
        local r; r=$(mkroot "$1" 1gpu.conf)
        [ -n "${2:-}" ] && echo "$2" >>"$r/etc/fakegpu/gpus.conf"
        echo "$r"
}

ROOT=$(fresh hang "fault init hang")
start=$(date +%s%N)
run hang -- timeout 30 "$GS" --root "$ROOT" --nvml-timeout 1 info
secs=$(( ($(date +%s%N) - start) / 1000000 ))
expect_rc hang 1 "a hung nvmlInit is killed"
expect_err hang "gpuslice: initialization error: nvml helper timed out after 1.0 s" "... with a clear message"
if [ "$secs" -lt 5000 ]; then ok "... within the deadline (${secs} ms)"; else not_ok "hung NVML took ${secs} ms"; fi
# The helper is killed at the deadline (what is left may be a zombie until init reaps it).
# Only helpers chrooted into this root count: other tests may run their own helpers meanwhile.
HANG_ROOT=$(readlink -f "$ROOT")
live_helpers() {
        local n=0 p
        for p in $(pgrep -x gpuslice-nvml); do
                [ "$(readlink "/proc/$p/root" 2>/dev/null)" = "$HANG_ROOT" ] || continue
                case "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" in Z|X|"") ;; *) n=$((n + 1)) ;; esac
        done
        echo $n
}
for _ in $(seq 20); do [ "$(live_helpers)" = 0 ] && break; sleep 0.1; done
if [ "$(live_helpers)" != 0 ]; then not_ok "the hung helper is left running"; else ok "no live helper left behind"; fi

ROOT=$TMP/hang
run hanglist -- timeout 30 "$GS" --root "$ROOT" --nvml-timeout 1 list
expect_rc hanglist 0 "list answers from /proc/driver/nvidia while NVML hangs"

ROOT=$(fresh crash "fault init crash")
run crash -- "$GS" --root "$ROOT" info
expect_rc crash 1 "a crashing NVML"
expect_err crash "gpuslice: initialization error: nvml helper died before answering: killed by signal 11" "... is reported with its signal"

ROOT=$(fresh notloaded "fault init error driver_not_loaded")
run nl -- "$GS" --root "$ROOT" info
expect_err nl "gpuslice: initialization error: nvml error: Driver Not Loaded" "nvmlInit failure: nvidia-container-cli's message"
run nl2 -- env GPUSLICE_DETECT=nvml "$GS" --root "$ROOT" list
expect_err nl2 "gpuslice: initialization error: nvml error: Driver Not Loaded" "... also for list when NVML is forced"
run nl3 -- "$GS" --root "$ROOT" list --require 'cuda>=12.0'
expect_err nl3 "gpuslice: initialization error: nvml error: Driver Not Loaded" "... and for list with requirements (they need NVML)"

ROOT=$(fresh lost "fault nvmlDeviceGetUUID error gpu_is_lost")
run lost -- "$GS" --root "$ROOT" info
expect_err lost "gpuslice: detection error: nvml error: nvmlDeviceGetUUID(GPU 0): GPU is lost" "a failing query names the call and the GPU"

ROOT=$(fresh slow "fault init delay 300")
run slow -- "$GS" --root "$ROOT" --nvml-timeout 5 info --json
expect_rc slow 0 "a slow but answering NVML within --nvml-timeout works"

ROOT=$(fresh nolib)
rm -f "$ROOT"/usr/lib/x86_64-linux-gnu/libnvidia-ml.so*
ldconfig -r "$ROOT" 2>/dev/null
run nolib -- "$GS" --root "$ROOT" info
expect_rc nolib 1 "no libnvidia-ml in the root"
expect_err nolib "gpuslice: initialization error: load library failed: " "... is an initialization error naming the load failure"

ROOT=$(fresh badconf)
echo "gpu 0" >"$ROOT/etc/fakegpu/gpus.conf"; echo "  bogus line" >>"$ROOT/etc/fakegpu/gpus.conf"
run badconf -- "$GS" --root "$ROOT" info
expect_rc badconf 1 "a broken simulated-GPU config fails like a driver that cannot initialise"

ROOT=$(fresh noctl)
rm -f "$ROOT/dev/nvidiactl"
run noctl -- "$GS" --root "$ROOT" list
expect_rc noctl 1 "list without /dev/nvidiactl"
expect_err noctl "gpuslice: detection error: /dev/nvidiactl not found under $ROOT" "... says the control node is missing"
run noctlinfo -- "$GS" --root "$ROOT" info
expect_rc noctlinfo 0 "info still works (it only asks NVML)"

ROOT=$(fresh badctl)
rm -f "$ROOT/dev/nvidiactl"; touch "$ROOT/dev/nvidiactl"
run badctl -- "$GS" --root "$ROOT" list
expect_err badctl "/dev/nvidiactl under $ROOT is not a character device" "a regular file posing as /dev/nvidiactl is refused"

ROOT=$(fresh nogpu)
rm -f "$ROOT/dev/nvidia0"
run nogpu -- "$GS" --root "$ROOT" list --device 0
expect_out_lacks nogpu /dev/nvidia0 "a missing GPU node is not listed"
expect_err nogpu "GPU 0: /dev/nvidia0 is missing under" "... and is warned about"

ROOT=$(fresh corrupt)
head -c 100 /dev/urandom >"$ROOT/etc/ld.so.cache"
run corrupt -- "$GS" --root "$ROOT" list -l
expect_rc corrupt 1 "a corrupt ld.so.cache"
expect_err corrupt "gpuslice: detection error: unsupported file format" "... is a detection error"
rm -f "$ROOT/etc/ld.so.cache"
run nocache -- "$GS" --root "$ROOT" list -l
expect_err nocache "gpuslice: detection error: cannot read the dynamic linker cache under $ROOT" "a missing ld.so.cache"

# A hostile driver root: links that point outside the root stay inside it.
ROOT=$(fresh hostile)
lib=$ROOT/usr/lib/x86_64-linux-gnu
rm -f "$lib/libnvidia-cfg.so.580.159.04"
ln -s /usr/lib/x86_64-linux-gnu/libc.so.6 "$lib/libnvidia-cfg.so.580.159.04"     # absolute: re-rooted
ln -sf ../../../../../../../../etc/passwd "$lib/libnvidia-nscq.so.580.159.04"   # .. chain: clamped
ln -sf libnvidia-nscq.so.580.159.04 "$lib/libnvidia-nscq.so.2"
ldconfig -r "$ROOT" 2>/dev/null
run hostile -- "$GS" --root "$ROOT" list -l
expect_rc hostile 0 "list in a root with escaping symlinks"
expect_out_lacks hostile libnvidia-cfg "an absolute link to a host library is not followed out of the root"
expect_out_lacks hostile passwd "a ../ chain does not climb out of the root"

# --load-kmods recreates missing nodes under the root from its procfs (modprobe may fail here:
# that is logged, not fatal).
ROOT=$(fresh kmods)
rm -f "$ROOT/dev/nvidiactl" "$ROOT/dev/nvidia0" "$ROOT/dev/nvidia-uvm" "$ROOT/dev/nvidia-uvm-tools"
run kmods -- "$GS" --root "$ROOT" --load-kmods list --device 0
expect_rc kmods 0 "--load-kmods: list works after the nodes were deleted"
uvm_major=$(awk '$2 == "nvidia-uvm" {print $1}' "$ROOT/proc/devices")
nodes_ok() { [ "$(stat -c '%F %t:%T' "$ROOT/dev/nvidiactl")" = "character special file c3:ff" ] &&
        [ "$(stat -c '%F %t:%T' "$ROOT/dev/nvidia0")" = "character special file c3:0" ] &&
        [ "$(stat -c '%t:%T' "$ROOT/dev/nvidia-uvm")" = "$(printf '%x:0' "$uvm_major")" ] &&
        [ "$(stat -c '%t:%T' "$ROOT/dev/nvidia-uvm-tools")" = "$(printf '%x:1' "$uvm_major")" ]; }
nodes_ok && ok "... and recreated nvidiactl 195:255, nvidia0 195:0, nvidia-uvm(-tools) with the root's major" ||
        not_ok "--load-kmods nodes: $(ls -l "$ROOT/dev" | tr '\n' ' ')"

# Bad input
ROOT=$(fresh input)
run dev -- "$GS" --root "$ROOT" list --device 7
expect_err dev "gpuslice: device error: 7: unknown device" "unknown device index"
run dev2 -- "$GS" --root "$ROOT" list --device foo,0
expect_err dev2 "gpuslice: device error: foo: unknown device" "unknown device token is named"
run amb -- "$GS" --root "$ROOT" list --device 0:1:0
expect_err amb "0:1:0: ambiguous device" "GPU:GI:CI without gi/ci is refused as ambiguous"
run noroot -- "$GS" --root /nonexistent-gpuslice info
expect_err noroot "gpuslice: initialization error: driver root /nonexistent-gpuslice: No such file or directory" "missing --root"
run relroot -- "$GS" --root relative info
expect_rc relroot 2 "a relative --root is a usage error"
run verb -- "$GS" frobnicate
expect_rc verb 2 "unknown command"
expect_err verb "unknown command 'frobnicate'" "... is named"
run opt -- "$GS" list --bogus
expect_rc opt 2 "unknown list option"
run noverb -- "$GS"
expect_rc noverb 2 "no command"
for v in info list; do
        run "help-$v" -- "$GS" "$v" --help
        expect_rc "help-$v" 0 "$v --help"
done
run ghelp -- "$GS" --help
expect_rc ghelp 0 "gpuslice --help"
run ver -- "$GS" --version
expect_rc ver 0 "gpuslice --version"
run user -- "$GS" --user=no-such-user-gs info
expect_err user "unknown user: no-such-user-gs" "unknown --user"

# --debug writes a glog-style log
run dbg -- "$GS" --root "$ROOT" --debug "$TMP/debug.log" list -l
if grep -Eq '^I[0-9]{4} [0-9:.]+ [0-9]+ [a-z_]+\.c:[0-9]+\] selecting /usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04' "$TMP/debug.log"; then
        ok "--debug logs library selection glog-style"; else not_ok "--debug log"; head "$TMP/debug.log"; fi
finish
