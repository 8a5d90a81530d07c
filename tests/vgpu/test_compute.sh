#!/usr/bin/env bash
# The compute limiter against the simulated GPU (the fake libcuda.so.1 runs each kernel for the
# time its name says on a per-process timeline, so a fraction of GPU time is measurable): the cap
# on every launch path, long kernels, HAMi's names, a budget shared by processes, a process killed
# mid-window, share mode, no interception without a limit, no system call within budget, config
# errors, gpuslice exec --compute, and what the usage region records.
# In a sanitizer build (GS_SANITIZE, from meson.build) the interposer is still not instrumented
# (meson.build: it is preloaded into programs not built with ASan): what the sanitizers watch here
# is the simulated GPU and MPS daemon, the probe and gpuslice (exec). So that build runs every
# launch path, launch-bound kernels (the simulated push buffer full), the batch, MPS, NVML view,
# region and exec cases, one two-slice pair and one hostile peer, and skips ("skip - ...: timing
# accuracy is checked in the normal build") the cases that repeat those paths at another share,
# limit or kernel length: cap 10/50/80 %, 5 and 60 ms kernels, cap 80 % batches, HAMi's names,
# GPUSLICE_COMPUTE_LIMIT_0, --compute 100, the kill -9, share alone, the cap-mode pair and the
# renewing, wanting and cutting peers.
set -uo pipefail
SRC=${GS_SOURCE_DIR:?} BUILD=${GS_BUILD_DIR:?}
unset LD_LIBRARY_PATH LD_PRELOAD
LIB=$BUILD/libgpuslice-vgpu.so
PROBE=$BUILD/tests/vgpu/compute-probe
FAKE=$BUILD/tests/fakegpu
TMP=$(mktemp -d /tmp/gs-compute.XXXXXX)
# (the simulated MPS daemon, started below, is told to quit: it is not a job of ours)
trap 'kill $(jobs -p) 2>/dev/null; [ -S "$TMP/mps/control" ] && echo quit | CUDA_MPS_PIPE_DIRECTORY="$TMP/mps" \
        "$FAKE/nvidia-cuda-mps-control" >/dev/null 2>&1; rm -rf "$TMP"' EXIT
export FAKEGPU_CONFIG=$SRC/tests/fakegpu/configs/1gpu.conf FAKEGPU_STATE=$TMP/fakegpu.state
# Compute-limited processes of one GPU take turns through its arbiter file (default in /dev/shm);
# every simulated GPU has the same UUID, so a run of this test beside another (the ASan build's,
# a developer's) would take turns with it: each run gets its own.
export GPUSLICE_ARBITER_DIR=$TMP/arbiter
mkdir -p "$GPUSLICE_ARBITER_DIR"
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0
. "$SRC/tests/lib/check.sh" # ok, not_ok, skip, check, run_ok, started, finish
. "$SRC/tests/lib/probe.sh" # probe_field, probe_lo: lower bounds allow for the run's measured CPU stalls
sliced() { env LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$LIB" "$@"; }
field() { probe_field "$@"; }
# within FILE LO HI: the run's fraction of GPU time is in [LO x (1 - its off-CPU share), HI]
# (tests/lib/probe.sh: the share at most PROBE_OFF_MAX; LO itself when the run was too disturbed)
within() {
        awk -v f="$(field fraction "$1")" -v lo="$(probe_lo "$2" "$1" 2>/dev/null)" -v hi="$3" 'BEGIN { exit !(f != "" && f >= lo && f <= hi) }'
}
# judge DESC LO HI CMD...: CMD's probe report in $TMP/out, its fraction within LO..HI; a run too
# disturbed to judge is repeated (probe_case)
judge() {
        JUDGE_LO=$2 JUDGE_HI=$3 JUDGE_CMD=("${@:4}")
        probe_case "$1" judge_once "$TMP/out" || { sed 's/^/    # /' "$TMP/out" | tail -5; return 1; }
}
judge_once() {
        "${JUDGE_CMD[@]}" >"$TMP/out" 2>&1 || { PROBE_SAID="exit $?"; return 1; }
        PROBE_SAID="$(field fraction "$TMP/out") of the GPU's time (want >= $(probe_lo "$JUDGE_LO" "$TMP/out"), <= $JUDGE_HI)"
        within "$TMP/out" "$JUDGE_LO" "$JUDGE_HI"
}
# run DESC LO HI ENV... -- probe args
run() { judge "$1" "$2" "$3" sliced "${@:4}"; }
# timing_run DESC LO HI ENV... -- probe args: run, but in the normal build only (a case that
# repeats a code path at another share or limit; tests/lib/check.sh, sanitized_skip)
timing_run() { sanitized_skip "$1" || run "$@"; }

# No limit: the driver's own launch function, the whole GPU.
run "no compute limit: the whole GPU" 0.90 1.01 "$PROBE" procaddr 1 500
grep -q "intercepted=0" "$TMP/out" && ok "no compute limit: cuGetProcAddress hands out the driver's cuLaunchKernel" ||
        not_ok "unlimited launches are intercepted"
run "GPUSLICE_COMPUTE_MODE=off: not enforced" 0.90 1.01 GPUSLICE_COMPUTE_LIMIT=30 GPUSLICE_COMPUTE_MODE=off "$PROBE" procaddr 1 500
grep -q "intercepted=0" "$TMP/out" && ok "mode off: launches are not intercepted" || not_ok "mode off intercepts"
timing_run "--compute 100 is the whole GPU" 0.90 1.01 GPUSLICE_COMPUTE_LIMIT=100 "$PROBE" procaddr 1 500

# Cap: 30 % on every launch path (0.5 ms kernels, 1 s each: 0.296-0.324 seen on a loaded machine;
# the 1 s runs below, of 0.5 ms and 20 us kernels, within 0.005 of their share).
for mode in kernel ptsz ex coop excoop graph procaddr; do
        run "cap 30 %, $mode" 0.26 0.34 GPUSLICE_COMPUTE_LIMIT=30 "$PROBE" $mode 1 500
done
grep -q "intercepted=1" "$TMP/out" && ok "with a limit cuGetProcAddress hands out the wrapper" || not_ok "procaddr not intercepted"
for l in 10 50 80; do
        timing_run "cap $l %, 0.5 ms kernels" "$(awk -v l=$l 'BEGIN{print l/100-0.04}')" "$(awk -v l=$l 'BEGIN{print l/100+0.04}')" \
                GPUSLICE_COMPUTE_LIMIT=$l "$PROBE" kernel 1 500
done
timing_run "cap 30 %, 5 ms kernels" 0.25 0.35 GPUSLICE_COMPUTE_LIMIT=30 "$PROBE" kernel 3 5000
# 2.1 ms kernels in batches the application waits for (as bench/compute_shapes.cu): launches
# covered by no event while the application waits must still count, and a high share must keep
# the GPU fed.
run "cap 50 %, 2.1 ms kernels, application-synchronized batches" 0.46 0.54 GPUSLICE_COMPUTE_LIMIT=50 "$PROBE" batch 3 2100
timing_run "cap 80 %, 2.1 ms kernels, application-synchronized batches" 0.76 0.84 GPUSLICE_COMPUTE_LIMIT=80 "$PROBE" batch 3 2100
# A kernel longer than the budget's window (20 ms) cannot be cut: it is paid back after it ends.
timing_run "cap 30 %, 60 ms kernels (longer than the window)" 0.22 0.38 GPUSLICE_COMPUTE_LIMIT=30 "$PROBE" kernel 4 60000
run "cap 30 %, 20 us launch-bound kernels" 0.25 0.35 GPUSLICE_COMPUTE_LIMIT=30 "$PROBE" kernel 1 20
timing_run "HAMi's CUDA_DEVICE_SM_LIMIT=30 GPU_CORE_UTILIZATION_POLICY=force" 0.26 0.34 \
        CUDA_DEVICE_SM_LIMIT=30 GPU_CORE_UTILIZATION_POLICY=force "$PROBE" kernel 1 500
timing_run "GPUSLICE_COMPUTE_LIMIT_0 overrides the global share" 0.16 0.24 \
        GPUSLICE_COMPUTE_LIMIT=60 GPUSLICE_COMPUTE_LIMIT_0=20 "$PROBE" kernel 1 500

# Processes of one slice share its budget: two at once under 40 % get 40 % together. While they
# run, the region holds the slice's share and each process's busy time (the observer reads them).
R=$TMP/shared
env LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$LIB" GPUSLICE_COMPUTE_LIMIT=40 GPUSLICE_REGION="$R" "$PROBE" kernel 3 500 >"$TMP/a" 2>&1 &
PA=$! # the probe itself (env execs it): its slot's pid
env LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$LIB" GPUSLICE_COMPUTE_LIMIT=40 GPUSLICE_REGION="$R" "$PROBE" kernel 3 500 >"$TMP/b" 2>&1 &
PB=$!
# The live slots' busy time ("PID BUSY_NS" lines; 448-byte slots from 2048: pid at 0, busy_ns[0]
# at 288), half a second after both probes have measured some: a sixth or more into their runs
# (40 % of that half second, of 40 % over 3 s)
python3 - "$R" >"$TMP/busy.mid" <<'EOF'
import struct, sys, time
def slots():
    try:
        b = open(sys.argv[1], 'rb').read()
    except OSError:
        return {}
    n = min(struct.unpack_from('<I', b, 128)[0], 1024) if len(b) >= 464960 else 0
    s = {struct.unpack_from('<i', b, 2048 + 448 * i)[0]: struct.unpack_from('<Q', b, 2048 + 448 * i + 288)[0]
         for i in range(n)}
    s.pop(0, None)
    return s
end = time.monotonic() + 10
while time.monotonic() < end and sum(1 for v in slots().values() if v > 0) < 2:
    time.sleep(0.02)
time.sleep(0.5)
for pid, busy in slots().items():
    print(pid, busy)
EOF
wait $PA $PB
# (judged once: the region's checks below need this very run; a disturbed run is said, not retried)
sum=$(awk -v a="$(field fraction "$TMP/a")" -v b="$(field fraction "$TMP/b")" 'BEGIN { print a + b }')
lo=$(probe_lo 0.34 "$TMP/a" "$TMP/b")
why=$(probe_disturbed "$TMP/a" "$TMP/b") || why=
awk -v s="$sum" -v lo="$lo" 'BEGIN { exit !(s >= lo && s <= 0.46) }' &&
        ok "two processes of a 40 % slice: $sum of the GPU together (>= $lo)" ||
        { not_ok "shared budget: $sum (want $lo..0.46)${why:+ ($why)}"; cat "$TMP/a" "$TMP/b"; }
# Each process's busy time in the region then: cumulative, in-flight work counted only up to the
# moment, so never above the GPU time the process measured in all (work_us, + 5 ms of estimate);
# a tenth of it or more in sum (a unit slip, us for ns, or a busy time never written fails). After
# they exit, the share stays in the header and their slots are released.
what="each process's busy time while it ran ($(tr '\n' ' ' <"$TMP/busy.mid")ns) within its work_us"
what+=" ($(field work_us "$TMP/a"), $(field work_us "$TMP/b"))"
python3 - "$R" "$TMP/busy.mid" "$PA" "$(field work_us "$TMP/a")" "$PB" "$(field work_us "$TMP/b")" <<'EOF' &&
import struct, sys
region, mid = sys.argv[1], sys.argv[2]
work = {int(sys.argv[3]): float(sys.argv[4]) * 1000, int(sys.argv[5]): float(sys.argv[6]) * 1000}  # ns
seen = {int(p): int(v) for p, v in (line.split() for line in open(mid))}
assert set(seen) == set(work), ("live slots while running", seen, "want the probes'", work)
for pid, w in work.items():
    assert 0 < seen[pid] <= w + 5e6, ("busy_ns", pid, seen[pid], "work_ns", w)
assert sum(seen.values()) * 10 >= sum(work.values()), ("busy_ns", seen, "work_ns", work)
b = open(region, 'rb').read()
limit = struct.unpack_from('<I', b, 1856)[0]
mode = struct.unpack_from('<I', b, 168)[0]
assert limit == 4000 and mode == 0, ("compute_limit[0], compute_mode", limit, mode)
live = [struct.unpack_from('<i', b, 2048 + 448 * i)[0] for i in range(struct.unpack_from('<I', b, 128)[0])]
assert not set(live) & set(work), ("slots still held after exit", live)
EOF
        ok "the region: $what; the share (4000 bp) after" || not_ok "region compute fields: $what"

# A process killed mid-window leaves no stuck budget: the next one gets the share.
if ! sanitized_skip "after a kill -9 mid-window, the next process gets its 30 %"; then
env LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$LIB" GPUSLICE_COMPUTE_LIMIT=30 GPUSLICE_REGION="$TMP/killed" \
        "$PROBE" kernel 10 2000 >/dev/null 2>&1 &
pid=$! # the probe itself (env execs it), not a subshell
sleep 1.3
kill -9 $pid
wait $pid 2>/dev/null
run "after a kill -9 mid-window, the next process gets its 30 %" 0.25 0.35 \
        GPUSLICE_COMPUTE_LIMIT=30 GPUSLICE_REGION="$TMP/killed" "$PROBE" kernel 1 500
fi

# Share mode: alone on an idle GPU the slice borrows everything; beside a busy tenant (NVML says
# the GPU is 95 % busy) it keeps to its share.
timing_run "share 30 % alone on an idle GPU borrows the idle time" 0.85 1.01 \
        GPUSLICE_COMPUTE_LIMIT=30 GPUSLICE_COMPUTE_MODE=share "$PROBE" kernel 3 500
# (An arbiter directory of its own: the slice of the case before, which used the GPU until a
# moment ago, would be, by its record, what NVML's 95 % is: share mode counts a departed
# neighbour's last second as the slices' own use, issue 32.)
{ grep -v '^ *mig off' "$SRC/tests/fakegpu/configs/1gpu.conf"; echo "  mig off"; echo "  utilization gpu=95 memory=10"; } >"$TMP/busy.conf"
mkdir -p "$TMP/arbiter-busy"
run "share 30 % beside a busy tenant keeps to 30 %" 0.25 0.35 FAKEGPU_CONFIG="$TMP/busy.conf" \
        GPUSLICE_ARBITER_DIR="$TMP/arbiter-busy" GPUSLICE_COMPUTE_LIMIT=30 GPU_CORE_UTILIZATION_POLICY=default "$PROBE" kernel 2 500

# Two slices on one GPU take turns through the GPU's arbiter directory, in proportion to their shares
# (share mode: all of it between them; cap mode: each at most its share). 6 s each: the first
# second of a pair is a start-up transient (both set up, calibrate and find each other), and over
# 3 s it moved the 70 % slice of an ASan build below 0.58 in about 1 pair of 16 (this build and
# the one before it alike); over 6 s, 14 of 14 pairs gave 0.67-0.69 (sums 0.96-0.98).
# Each hand-over leaves the GPU idle for the wake-ups of two threads: on a loaded machine (CI runs
# two suites at once on two cores) that is a few points of the GPU in sum; the split between the
# slices (b/a = 70/30) does not depend on it, nor on CPU stalls (the lower bounds allow for those
# measured, up to a floor, and a run too disturbed to judge is repeated: tests/lib/probe.sh).
pair() {
        sliced GPUSLICE_COMPUTE_LIMIT=30 GPUSLICE_COMPUTE_MODE=$mode GPUSLICE_REGION="$TMP/s30-$mode" "$PROBE" kernel 6 500 >"$TMP/a" 2>&1 &
        sliced GPUSLICE_COMPUTE_LIMIT=70 GPUSLICE_COMPUTE_MODE=$mode GPUSLICE_REGION="$TMP/s70-$mode" "$PROBE" kernel 6 500 >"$TMP/b" 2>&1 &
        wait
        local a b alo blo
        a=$(field fraction "$TMP/a") b=$(field fraction "$TMP/b")
        alo=$(probe_lo 0.24 "$TMP/a" 2>/dev/null) blo=$(probe_lo 0.58 "$TMP/b" 2>/dev/null)
        PROBE_SAID="$a and $b (want $alo..0.35, $blo..0.75, b/a 1.9..2.9)"
        awk -v a="$a" -v b="$b" -v alo="$alo" -v blo="$blo" 'BEGIN { exit !(a >= alo && a <= 0.35 && b >= blo && b <= 0.75 &&
                                               a + b <= 1.02 && b / a >= 1.9 && b / a <= 2.9) }'
}
for mode in share cap; do
        [ $mode = cap ] && sanitized_skip "$mode mode, slices of 30 % and 70 % on one GPU" && continue
        probe_case "$mode mode, slices of 30 % and 70 % on one GPU" pair "$TMP/a" "$TMP/b" || cat "$TMP/a" "$TMP/b"
done
ARB=$GPUSLICE_ARBITER_DIR/gpuslice-gpu-GPU-6b1fe2a6-3b64-d9c1-4a3e-5f0b2c7d8e91
n=$(find "$ARB" -maxdepth 1 -type f -size 128c 2>/dev/null | wc -l)
[ "$(stat -c %a "$ARB" 2>/dev/null)" = 1777 ] && [ "$n" -ge 2 ] &&
        ok "the GPU's arbiter is \$GPUSLICE_ARBITER_DIR/gpuslice-gpu-<UUID>/ (sticky), a file per slice: $n" ||
        not_ok "arbiter directory: $(ls -la "$ARB" 2>&1)"
rm -f "$ARB"/*
# A slice whose interposer's ticker is kept off its CPU now and then, as on a loaded machine
# (FAKEGPU_QUERY_STALL: every 1000th event query, the ticker's, sleeps 60 ms; the application's
# thread launches on), beside another slice on one simulated GPU (its shared timeline): it still
# takes its turns. The launches made while the ticker was away filled the limiter's ring of
# events, so the event the launcher records as it begins to wait for a turn could not be made;
# the ticker then waited for that event, the slice was never idle, and a turn it was draining was
# never handed over: it neither launched nor let the other slice have the GPU (which took its
# record for a liar's and ran on), and after 2 s it ignored the arbiter ("waited 2000 ms for turns
# on the GPU and got 0 ms of it"): 0.07-0.08 of the GPU at a cap of 30 %, its neighbour 0.45, or
# no end at all (as integration_slice_pair once in CI under load: 0.0678 and 0.4544). Its cap is
# not judged here: a ticker away for 60 ms charges the launches meanwhile late (0.31-0.35).
# (Every 500th query stalls: at every 1000th, since the request hand-back landed, the old code
# starved in one run of three only; at 500, six of six here, but CI once met a run where it did
# not: this case can miss the old code now and then, and the mutation check has none for it.)
stalled() {
        local a b alo blo e=(FAKEGPU_SHARED_TIMELINE="$TMP/tl-stall" GPUSLICE_ARBITER_DIR="$TMP/arb-stall"
                GPUSLICE_COMPUTE_MODE=cap PROBE_BATCH=4 LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$LIB")
        rm -rf "$TMP/arb-stall" "$TMP/tl-stall" "$TMP"/st30 "$TMP"/st50
        mkdir -p "$TMP/arb-stall"
        timeout 30 env "${e[@]}" GPUSLICE_COMPUTE_LIMIT=30 GPUSLICE_REGION="$TMP/st30" FAKEGPU_QUERY_STALL=500:60 \
                "$PROBE" batch 4 450 >"$TMP/a" 2>&1 &
        timeout 30 env "${e[@]}" GPUSLICE_COMPUTE_LIMIT=50 GPUSLICE_REGION="$TMP/st50" "$PROBE" batch 4 450 >"$TMP/b" 2>&1 &
        wait
        a=$(field fraction "$TMP/a") b=$(field fraction "$TMP/b")
        alo=$(probe_lo 0.24 "$TMP/a" "$TMP/b" 2>/dev/null) blo=$(probe_lo 0.44 "$TMP/a" "$TMP/b" 2>/dev/null)
        PROBE_SAID="${a:-no report} and ${b:-no report} (want >= $alo, $blo..0.54)"
        grep -q "for turns on the GPU and got" "$TMP/a" && PROBE_SAID+="; the 30 % slice: $(grep -m1 -o "waited.*" "$TMP/a")"
        awk -v a="${a:-0}" -v b="${b:-0}" -v alo="$alo" -v blo="$blo" 'BEGIN { exit !(a >= alo && b >= blo && b <= 0.54) }' &&
                ! grep -q "for turns on the GPU and got" "$TMP/a"
}
sanitized_skip "cap mode, 30 % and 50 %: the 30 % slice's ticker kept off its CPU now and then, it still takes its turns" ||
        probe_case "cap mode, 30 % and 50 %: the 30 % slice's ticker kept off its CPU now and then, it still takes its turns" \
                stalled "$TMP/a" "$TMP/b" || sed 's/^/    # /' "$TMP/a" "$TMP/b" | grep -v ' turn ' | tail -12
# Every slice writes only its own file and reads the others' with pread: a hostile one can make
# the arbiter useless (then a slice waits at most a while now and then, and keeps most of its
# share), never crash a slice or stop it. Here a peer claims the GPU for an hour with the least
# virtual time (no lease: a lease runs two quanta), files are truncated under the reader, replaced
# by a FIFO, a directory, a symlink, garbage.
# hostile DIR STOP MODE: MODE "far" claims the GPU an hour ahead, "renew" renews a lease of two
# quanta every millisecond and never hands it over, "want" wants the GPU with the least virtual
# time every millisecond and never takes it, "cut" takes the GPU every millisecond by cutting
# everyone's turn (a new lease marked as a cut, the least virtual time, high priority).
hostile() {
        python3 - "$@" <<'EOF2'
import os, struct, sys, time
d, stop, mode = sys.argv[1], sys.argv[2], sys.argv[3]
def rec(now):  # v3 (128 bytes): magic, want_ns, vtime, since, until, weight, state, alive_ns, prio, flags, got_ns
    if mode == 'want':
        return struct.pack('<QQQQQIIQIIQ56x', 0x0300004252415347, now, 0, 0, 0, 10000, 0, now, 1, 0, 0)
    if mode == 'cut':
        return struct.pack('<QQQQQIIQIIQ56x', 0x0300004252415347, now, 0, now, now + 40 * 10**6, 10000, 1, now, 0, 1, 0)
    until = now + 3600 * 10**9 if mode == 'far' else now + 40 * 10**6
    return struct.pack('<QQQQQIIQIIQ56x', 0x0300004252415347, now, 0, 1, until, 10000, 1, now, 1, 0, 0)
if mode == 'far':
    os.mkfifo(os.path.join(d, 'fifo'))
    os.mkdir(os.path.join(d, 'dir'))
    os.symlink('/etc/passwd', os.path.join(d, 'link'))
    with open(os.path.join(d, 'garbage'), 'wb') as f:
        f.write(os.urandom(128))
# A real-time writer (where allowed: CI runs as root): on a loaded machine a normal one was
# descheduled for more than 2 ms up to 200 times in a 6 s run, each lapse of its demand a turn for
# the slice, and the peer then held it back too little for the bound to show it (0.26-0.27).
try:
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
except (OSError, AttributeError):
    pass
fd = os.open(os.path.join(d, 'hostile'), os.O_RDWR | os.O_CREAT, 0o644)
i = 0
while not os.path.exists(stop):
    now = time.monotonic_ns()
    os.pwrite(fd, rec(now), 0)
    if mode == 'far':
        with open(os.path.join(d, 'shrinking'), 'wb') as f:
            f.write(rec(now)[: i % 129])
    i += 1
    time.sleep(0.0003 if mode == 'far' else 0.001)
EOF2
}
# hostile_start MODE / hostile_stop: the hostile peer in the background, then its files gone
hostile_start() { hostile "$ARB" "$TMP/hostile.stop" "$1" & HOSTILE=$!; sleep 0.3; }
hostile_stop() { touch "$TMP/hostile.stop"; wait $HOSTILE; rm -rf "${ARB:?}"/* "$TMP/hostile.stop"; }
hostile_start far
run "a peer claiming the GPU for an hour, files truncated under the reader: the slice gets its share" 0.26 0.34 \
        GPUSLICE_COMPUTE_LIMIT=30 GPUSLICE_LOG_LEVEL=1 "$PROBE" kernel 3 500 &&
        { grep -q "ignoring the arbiter" "$TMP/out" && not_ok "a lease claimed an hour ahead made the slice wait" ||
                ok "... without waiting for it: a claim past two quanta is no lease"; }
hostile_stop
# The bound a hostile peer leaves the slice (issue 31): a reader charges each peer the time it
# kept the reader from the GPU (held it, or wanted it ahead of the reader) and ignores a peer that
# cost it more than the peer's share (at most what the reader's share leaves: 70 % here) by 20 ms
# over the last second while the reader was short of its own (src/vgpu/arbiter.c, judge_peers).
# So the slice keeps 0.9 of its share or more (less what CPU stalls of its run cost it) whatever
# the peer writes, and no longer needs the limiter's last resort (ignore the arbiter after 2 s
# below an eighth of the share: before, these runs gave 0.025-0.24; a peer that let the slice have
# a little more than an eighth never triggered it: tests/vgpu/test_liar.sh).
S=30 D=6
LO=$(awk -v s=$S 'BEGIN { printf "%.4f", s / 100 * 0.9 }')
# A peer that renews its lease and never hands it over; one that always wants the GPU first and
# never takes it; one that cuts every turn (a fresh lease marked as a cut every millisecond, the
# least virtual time, high priority).
declare -A hostile_what=([renew]="renewing its lease forever" [want]="wanting the GPU first forever, never taking it"
        [cut]="cutting every turn forever")
for mode in renew want cut; do
        sanitized_skip "a peer ${hostile_what[$mode]}: the slice keeps 0.9 of its share or more" && continue
        hostile_start $mode
        run "a peer ${hostile_what[$mode]}: the slice keeps 0.9 of its share or more" "$LO" 0.34 \
                GPUSLICE_COMPUTE_LIMIT=$S GPUSLICE_LOG_LEVEL=1 "$PROBE" kernel $D 500
        hostile_stop
done

# The utilization view: inside a compute-limited slice NVML's GPU utilization is the slice's busy
# time as a percentage of what its share allows (a slice using all of its 30 % shows 100; one busy
# ~24 % of the time under a 50 % cap shows ~48); without a limit the driver's answer stands.
sliced GPUSLICE_COMPUTE_LIMIT=30 GPUSLICE_REGION="$TMP/view" PROBE_NVML=1 "$PROBE" kernel 1.5 500 >"$TMP/out" 2>&1
u=$(field util "$TMP/out")
# (at least 80: on a loaded machine the slice falls short of its share in some 0.5 s windows)
[ "${u:-0}" -ge 80 ] && ok "utilization view, a slice using all of its 30 %: $u" || not_ok "view at cap 30: ${u:-none}"
# (the view is judged against the run's own busy fraction: a loaded machine slows the busy-wait)
sliced GPUSLICE_COMPUTE_LIMIT=50 PROBE_NVML=1 "$PROBE" quiet 1.5 500 >"$TMP/out" 2>&1
u=$(field util "$TMP/out") f=$(field fraction "$TMP/out")
awk -v u="${u:--1}" -v f="${f:-0}" 'BEGIN { w = 100 * f / 0.5; exit !(u >= 0 && u >= w - 12 && u <= w + 12 && u < 90) }' &&
        ok "utilization view, busy $f of the GPU under a 50 % cap: $u" || not_ok "view quiet: ${u:-none} (busy $f)"
sliced GPUSLICE_COMPUTE_LIMIT=30 GPUSLICE_REGION="$TMP/view2" "$PROBE" kernel 2 500 >/dev/null 2>&1 &
sleep 0.7
sliced GPUSLICE_COMPUTE_LIMIT=30 GPUSLICE_REGION="$TMP/view2" PROBE_NVML=1 "$PROBE" kernel 0 500 >"$TMP/out" 2>&1
wait
u=$(field util "$TMP/out")
[ "${u:-0}" -ge 85 ] && ok "utilization view in a process that launches nothing (as nvidia-smi): the slice's, $u" ||
        not_ok "view from a second process: ${u:-none}"
sliced PROBE_NVML=1 "$PROBE" kernel 0.5 500 >"$TMP/out" 2>&1
[ "$(field util "$TMP/out")" = 0 ] && ok "no compute limit: NVML's own utilization (the simulated GPU's 0)" ||
        not_ok "unlimited view: $(tail -1 "$TMP/out")"

# Cap mode through an MPS server (GPUSLICE_MPS_PIPE_DIRECTORY): the process connects with its
# share as the active thread percentage; the driver confines it to that share of the SMs (38 of
# 132 at 30 %) and launches are not intercepted. The simulated driver is an MPS client when the
# daemon listens on its control socket (the simulated daemon, tests/fakegpu). Without a daemon
# the slice stays on the time limiter.
mkdir -p "$TMP/mps" "$TMP/mps-log"
CUDA_MPS_PIPE_DIRECTORY="$TMP/mps" CUDA_MPS_LOG_DIRECTORY="$TMP/mps-log" "$FAKE/nvidia-cuda-mps-control" -d
# (-d returns before the daemon listens, as the real one may: wait for its pid file and socket, as
# test_mps.sh does; a probe that came first found no daemon and took the time limiter)
for _ in $(seq 50); do [ -e "$TMP/mps/nvidia-cuda-mps-control.pid" ] && [ -S "$TMP/mps/control" ] && break; sleep 0.1; done
run "cap 30 % through MPS: the partition's throughput" 0.27 0.30 GPUSLICE_COMPUTE_LIMIT=30 \
        GPUSLICE_MPS_PIPE_DIRECTORY="$TMP/mps" PROBE_BLOCKS=2112 "$PROBE" procaddr 1 500
grep -q "intercepted=0 sms=38" "$TMP/out" && ok "through MPS: 38 SMs seen, launches not intercepted" ||
        not_ok "MPS: $(tail -1 "$TMP/out")"
run "cap 30 % with MPS asked but no daemon: the time limiter" 0.26 0.34 GPUSLICE_COMPUTE_LIMIT=30 \
        GPUSLICE_MPS_PIPE_DIRECTORY="$TMP/no-mps" GPUSLICE_LOG_LEVEL=1 PROBE_BLOCKS=2112 "$PROBE" procaddr 1 500
grep -q "no control daemon at $TMP/no-mps; using the time limiter" "$TMP/out" && grep -q "intercepted=1 sms=132" "$TMP/out" &&
        ok "... said so, and launches are intercepted" || not_ok "MPS without a daemon: $(tail -2 "$TMP/out")"
run "share mode ignores MPS (share 30 % alone borrows)" 0.85 1.01 GPUSLICE_COMPUTE_LIMIT=30 GPUSLICE_COMPUTE_MODE=share \
        GPUSLICE_MPS_PIPE_DIRECTORY="$TMP/mps" PROBE_BLOCKS=2112 "$PROBE" procaddr 2 500
GPUSLICE_COMPUTE_LIMIT=30 GPUSLICE_COMPUTE_LIMIT_1=50 GPUSLICE_MPS_PIPE_DIRECTORY="$TMP/mps" GPUSLICE_LOG_LEVEL=1 \
        sliced "$PROBE" procaddr 0.2 500 >"$TMP/out" 2>&1
grep -q "different compute shares" "$TMP/out" && grep -q "intercepted=1" "$TMP/out" &&
        ok "devices with different shares: one MPS percentage cannot hold them, the time limiter does" ||
        not_ok "MPS with per-device shares: $(tail -2 "$TMP/out")"

# Within budget a launch makes no system call (the main thread between the markers: only the
# markers' own writes). A slice alone, in an arbiter directory of its own: the record of the probe
# that ended a moment before is a neighbour that is there for 50 ms (ticked that recently), and a
# turn goes back to a neighbour there whenever we are quiet, so the next launch reads the records
# to take it back (seen when the ticker, woken at the first launch's wait, judged that in time).
if command -v strace >/dev/null; then
        mkdir -p "$TMP/arbiter-alone"
        sliced GPUSLICE_ARBITER_DIR="$TMP/arbiter-alone" GPUSLICE_COMPUTE_LIMIT=50 strace -f -qq -o "$TMP/trace" "$PROBE" quiet 1 20 >"$TMP/q" 2>&1
        main=$(awk 'NR == 1 {print $1}' "$TMP/trace")
        calls=$(awk -v p="$main" '$1 == p' "$TMP/trace" | sed -n '/BEGIN-QUIET/,/END-QUIET/p' | grep -v -e '-QUIET' -e '^[0-9]* *<\.\.\. write resumed>' | wc -l)
        launches=$(field launches "$TMP/q")
        [ "$calls" = 0 ] && [ "${launches:-0}" -gt 100 ] &&
                ok "$launches launches within budget: no system call on the launching thread" ||
                { not_ok "system calls within budget: $calls"; awk -v p="$main" '$1 == p' "$TMP/trace" | sed -n '/BEGIN-QUIET/,/END-QUIET/p' | head; }
else
        not_ok "strace is not installed (make test-deps): the no-system-call check did not run"
fi

# Configuration errors are reported and CUDA refuses to start.
for bad in "GPUSLICE_COMPUTE_LIMIT=150" "CUDA_DEVICE_SM_LIMIT=abc" "GPUSLICE_COMPUTE_MODE=fast"; do
        sliced $bad "$PROBE" kernel 0.1 500 >"$TMP/bad" 2>&1
        grep -q "invalid ${bad%%=*} '${bad#*=}'" "$TMP/bad" && grep -q "cuInit(0) failed" "$TMP/bad" &&
                ok "$bad: reported, CUDA refuses to start" || { not_ok "$bad"; cat "$TMP/bad"; }
done

# gpuslice exec --compute
GS=$BUILD/gpuslice
judge "gpuslice exec --compute 30" 0.26 0.34 \
        env LD_LIBRARY_PATH="$FAKE" GPUSLICE_VGPU_LIB="$LIB" "$GS" exec --compute 30 -- "$PROBE" kernel 1 500
judge "gpuslice exec --compute 50 --compute-mode share (idle GPU)" 0.85 1.01 \
        env LD_LIBRARY_PATH="$FAKE" GPUSLICE_VGPU_LIB="$LIB" "$GS" exec --compute 50 --compute-mode share -- "$PROBE" kernel 2 500
env LD_LIBRARY_PATH="$FAKE" GPUSLICE_VGPU_LIB="$LIB" GPUSLICE_LOG_LEVEL=2 GPUSLICE_PRIORITY=high "$GS" exec --compute 30 \
        --priority LOW -- "$PROBE" kernel 0.3 500 >"$TMP/out" 2>&1 &&
        grep -q "compute limit on device 0: 30\.00 % (cap, priority low)" "$TMP/out" &&
        ok "gpuslice exec --compute 30 --priority LOW: the command runs at low (over its GPUSLICE_PRIORITY=high)" ||
        { not_ok "exec --priority"; cat "$TMP/out"; }
env LD_LIBRARY_PATH="$FAKE" GPUSLICE_VGPU_LIB="$LIB" PROBE_BLOCKS=2112 "$GS" exec --compute 50 --mps-pipe-dir "$TMP/mps" \
        -- "$PROBE" procaddr 1 500 >"$TMP/out" 2>&1 && within "$TMP/out" 0.48 0.51 && grep -q "intercepted=0 sms=66" "$TMP/out" &&
        ok "gpuslice exec --compute 50 --mps-pipe-dir: 66 SMs, $(field fraction "$TMP/out")" ||
        { not_ok "exec --mps-pipe-dir"; cat "$TMP/out"; }
# A daemon that quit leaves its socket behind: nobody listens, so the time limiter applies.
echo quit | CUDA_MPS_PIPE_DIRECTORY="$TMP/mps" "$FAKE/nvidia-cuda-mps-control" >/dev/null
for i in $(seq 50); do [ -e "$TMP/mps/nvidia-cuda-mps-control.pid" ] || break; sleep 0.1; done
sliced GPUSLICE_COMPUTE_LIMIT=30 GPUSLICE_MPS_PIPE_DIRECTORY="$TMP/mps" GPUSLICE_LOG_LEVEL=1 PROBE_BLOCKS=2112 \
        "$PROBE" procaddr 0.3 500 >"$TMP/out" 2>&1
[ -S "$TMP/mps/control" ] && grep -q "no control daemon at" "$TMP/out" && grep -q "intercepted=1 sms=132" "$TMP/out" &&
        ok "after the daemon quit (its socket left behind): the time limiter" || not_ok "stale MPS socket: $(tail -2 "$TMP/out")"
for args in "--compute 0" "--compute 101" "--compute-0 x" "--compute 30 --compute-mode fast" "--compute 30 --mps-pipe-dir rel" \
        "--compute 30 --priority urgent" "--compute 30 --priority 0"; do
        "$GS" exec $args -- true >"$TMP/e" 2>&1
        [ $? = 2 ] && grep -q "input error" "$TMP/e" && ok "exec $args: usage error" || { not_ok "exec $args"; cat "$TMP/e"; }
done

finish
