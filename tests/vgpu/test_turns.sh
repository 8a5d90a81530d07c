#!/usr/bin/env bash
# Turns that a waking slice can cut short, bounded launch-ahead, priorities, many slices and a
# dead holder, against the simulated GPU. The processes of each case share one simulated GPU
# timeline (FAKEGPU_SHARED_TIMELINE: a kernel starts after all the work queued before it, the
# longest wait a real GPU could impose), so a request waits for whatever its neighbour queued.
# The latency client is compute_probe's `request` mode (every 20 ms four 70 us kernels, each
# waited for); the batch neighbour launches kernels of K us back to back.
# In a sanitizer build (GS_SANITIZE, from meson.build; the interposer itself is never instrumented,
# the simulated GPU, the probe and gpuslice top are) each distinct path runs once: share 50/50 with
# 2 ms kernels, cap 50/50 with 5 ms (and the launch-ahead), the normal and the high client beside a
# batch (and top), share 30 high beside share 30 low, the dead holder; skipped ("skip - ...: timing
# accuracy is checked in the normal build"): share 50/50 with 5 ms kernels, cap 50/50 with 2 ms, the
# high client beside 5 ms kernels, cap 60 high/low, share 30/30 normal and the eight slices.
# A case judged on a tail (a p99, the longest request) that fails in a run the hypervisor took CPUs
# in (steal, which no thread's CPU waits show) is run again, three runs at most, each repeat after
# a "retry - " line (tests/lib/probe.sh, probe_tail_try); never a pass on a run that failed, and a
# check that failed with steal in every run is a "skip - ... (not judged: ...)" line.
set -uo pipefail
SRC=${GS_SOURCE_DIR:?} BUILD=${GS_BUILD_DIR:?}
unset LD_LIBRARY_PATH LD_PRELOAD
LIB=$BUILD/libgpuslice-vgpu.so
PROBE=$BUILD/tests/vgpu/compute-probe
FAKE=$BUILD/tests/fakegpu
TMP=$(mktemp -d /tmp/gs-turns.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$TMP"' EXIT
export FAKEGPU_CONFIG=$SRC/tests/fakegpu/configs/1gpu.conf
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0
. "$SRC/tests/lib/check.sh"
. "$SRC/tests/lib/probe.sh" # probe_field, probe_off, probe_lo: lower bounds allow for measured CPU stalls
field() { probe_field "$@"; }
# within LO HI VALUE: LO <= VALUE <= HI (VALUE must be there)
within() { awk -v v="$3" -v lo="$1" -v hi="$2" 'BEGIN { exit !(v != "" && v + 0 >= lo && v + 0 <= hi) }'; }
. "$SRC/tests/vgpu/sim_slices.sh" # fresh, sliced
# pair BATCH_ENV CLIENT_ENV BATCH_US: the latency client (4 s) and, 0.3 s later, a batch slice (4 s
# of BATCH_US kernels); outputs in $TMP/batch and $TMP/client. (The client comes first: a batch
# slice alone on a GPU queues up to 4 ms or 4 kernels ahead, and a client that joins then waits
# for that once; beside another slice it queues about one kernel.)
# (The simulated GPU logs each side's kernels, the client its requests: tcount below.)
pair() {
        fresh
        rm -f "$TMP"/client.k "$TMP"/client.q "$TMP"/batch.k
        sliced client FAKEGPU_KERNEL_LOG="$TMP/client.k" PROBE_TIMELINE="$TMP/client.q" $2 "$PROBE" request 4 70
        local c=$!
        sleep 0.3
        sliced batch FAKEGPU_KERNEL_LOG="$TMP/batch.k" $1 "$PROBE" kernel 4 "$3"
        wait $c $!
}
ran() { [ -n "$(field requests "$TMP/client")" ] && [ -n "$(field fraction "$TMP/batch")" ]; }
# tcount: the last pair's requests as the GPU ran them (tests/vgpu/timeline_count.py): requests=
# slipped= (requests a batch kernel ran inside of, between two of their kernels) slip_kernels= (such
# batch kernels) late= (requests whose first kernel a batch kernel launched after they came ran
# ahead of) late_over1= (requests more than one batch kernel started ahead of after they came) max_us=
tcount() {
        cat "$TMP/client.k" "$TMP/client.q" >"$TMP/client.tl" 2>/dev/null
        python3 "$SRC/tests/vgpu/timeline_count.py" "$TMP/client.tl" "$TMP/batch.k" 2>&1
}
# few N COUNT: COUNT is at most N % of the requests counted (and there are some)
few() { awk -v p="$1" -v c="$2" -v r="$(field requests <(echo "$3"))" 'BEGIN { exit !(r > 0 && c != "" && c <= r * p / 100) }'; }

# bench/latency_timeline.py, which tells on the real GPU where a client's requests waited, on a
# made-up pair of timelines (µs): request 0 comes at 1000 while a batch kernel runs until 2000,
# its first kernel starts 139 later, and a batch kernel runs between its first and second
# (a slip); request 1 comes at 10490 and a batch kernel starts 20 µs after it (a late start).
python3 - "$TMP/tl-client" "$TMP/tl-batch" <<'EOF2'
import sys
us = 1000
with open(sys.argv[2], "w") as b:
    for s, e in [(0, 2000), (2348, 4348), (8500, 10500), (10510, 12510)]:
        b.write(f"k {s * us} {e * us}\n")
    b.write("sms ff\n")
with open(sys.argv[1], "w") as c:
    r0 = [(2139, 2209), (4487, 4557), (4600, 4670), (4700, 4770)]
    r1 = [(12649, 12719), (12760, 12830), (12870, 12940), (12980, 13050)]
    c.write(f"r 0 {(4770 - 1000) * us}\nr 4 {(13050 - 10490) * us}\n")
    for s, e in r0 + r1:
        c.write(f"k {s * us} {e * us}\n")
    c.write("sms f0\n")
EOF2
tl=$(python3 "$SRC/bench/latency_timeline.py" "$TMP/tl-client" "$TMP/tl-batch" 3.0 2>&1)
if [[ $tl == *"sms: client 4 batch 8 both 4"* && $tl == *"all: requests=2 "* && $tl == *" running=2 late=1 late_kernels=1 slipped=1 slip_kernels=1 switch_p50_us=139.0"* &&
        $tl == *"over 3.000 ms: requests=1 "* ]]; then
        ok "bench/latency_timeline.py finds the slip, the late start and the 139 us switch in a made-up timeline"
else
        not_ok "bench/latency_timeline.py on a made-up timeline: $tl"
fi

# The client waits for about one neighbour kernel, not for the neighbour's turn (a quantum of
# 40 ms; the turn before cuts: ~21 ms with 2 ms kernels); the batch keeps its share (share mode: it
# borrows what the client leaves). The latencies judged are the client's less the time it waited
# for a CPU during each request (p99_run_us, max_run_us; the raw p99 is printed beside it).
# What a request of the client (under its share: it wakes and cuts the batch's turn) must wait at
# most with the landed turns, batch kernels of K us:
#  - the batch kernel running when it comes (K), and the one queued behind it: beside another slice
#    the batch launches its next kernel only when at most 0.5 ms of its work is left
#    (GS_LIMITER_AHEAD_NS), so the two together are at most K + 0.5 ms;
#  - then the hand-over (its launcher takes the GPU on a read of the records, the batch's launcher
#    sees the cut at its next look, every 0.1 ms) and its own four 70 us kernels, ~0.5 ms;
#  - rarely one more batch kernel: a slip (its thread kept off its CPU for more than a tick
#    between two of its kernels hands its turn over: 0-7 of ~200 requests seen on this loaded VM,
#    never two in one request) or a kernel the batch launched as the turn was cut (never seen).
# So its p99 (the 2nd worst of ~200, which a slip may be) is at most two batch kernels and 1.5 ms
# (the 1 ms above and 0.5 ms; measured in 11 runs of each case at load 2-8: 2 ms kernels 3.0-4.6
# ms, 5 ms 5.9-8.9 ms), and its longest request at most three and 4 ms: the 1 ms above and 3 ms
# of a loaded machine that taking the client's own CPU waits off does not cover (the batch's
# launcher's, the simulated GPU's threads': 8.0 ms seen with 2 ms kernels in a run without a
# slip; 3.9-8.0 ms with 2 ms kernels, 6.7-13.3 ms with 5 ms, in 17 runs; the breakages below
# 10.6 ms and more with 2 ms kernels, 23 ms and more with 5 ms). Request by request (tests/vgpu/timeline_count.py, as for the
# high client below): batch kernels run inside its requests (slip_kernels) at most 8 % of them
# (0-7 of ~200 seen at load 2-8, 10 once at load 4), and requests that more than one
# batch kernel started ahead of after they came (late_over1: the launch-ahead's one queued kernel
# may start after a request came, a second never) at most 1 % (none seen in 44 runs; the late
# starts of that one queued kernel are counted and printed: 15-23 % of the requests with 2 ms
# kernels, 3-10 % with 5 ms). Seen red (the interposer broken on purpose, each case run):
#  - the launch-ahead bound beside another slice removed (mutation aheadshared; one run of each
#    case; and the mutation check's run): 57-148 requests behind two or more late kernels (the
#    check that catches it every time), the longest 10.6-64 ms, 9-47 slipped kernels (none with
#    5 ms kernels in share mode), p99 10.6-25.6 ms (the median check below passed: 627 us);
#  - the waking cut removed (the client waits for the batch's turns): the longest 25-300 ms.
# Not separated: a turn handed over as soon as the client's work is done, not a tick later (the
# quiet tick removed): 10-22 slipped kernels in share mode, 2-13 in cap mode, where the landed code
# gives 0-10 on this loaded VM (a share-mode bound of 3.5 % caught it and failed unbroken runs at
# load 4). timeline_count.py prints slipped_running= (slips in requests whose thread waited for a
# CPU less than a tick): share mode 0 seen unbroken at load 2-3 against 8-14 broken, cap mode 1-4
# against 5-10; not checked, as it was not measured under load.
# Bounded launch-ahead (the cap 50/50 pair of 5 ms kernels): the client's median wait is about a
# kernel (before: everything the batch queued, up to 4 ms of it or 4 kernels and more).
# fifty (probe_tail_try's FN, for $mode and $k): the pair, its values and bounds, each check's
# verdict (rq_ok, p99_ok: set when it passes); 0 when both pass (a failed run with the
# hypervisor's steal in it is repeated)
fifty() {
        pair "GPUSLICE_COMPUTE_LIMIT=50 GPUSLICE_COMPUTE_MODE=$mode" "GPUSLICE_COMPUTE_LIMIT=50 GPUSLICE_COMPUTE_MODE=$mode" $k
        p99=$(field p99_run_us "$TMP/client") raw=$(field p99_us "$TMP/client") frac=$(field fraction "$TMP/batch")
        mx=$(field max_run_us "$TMP/client") tl=$(tcount)
        bound=$((2 * k + 1500)) mxb=$((3 * k + 4000))
        # (in the sanitizer build, whose simulated GPU and probe run slower, the longest
        # request is held under half a quantum only, as the high client's below: it never
        # waited for the batch's turn; 11.6 ms seen there with 2 ms kernels)
        sanitized && [ $mxb -lt 20000 ] && mxb=20000
        lo=$(probe_lo 0.45 "$TMP/batch") hi=1.0
        [ $mode = cap ] && hi=0.55
        sk=$(field slip_kernels <(echo "$tl")) l1=$(field late_over1 <(echo "$tl"))
        rq_ok= p99_ok=
        ran && few 8 "$sk" "$tl" && few 1 "$l1" "$tl" && within 0 $mxb "$mx" && rq_ok=1
        ran && within 0 $bound "$p99" && within $lo $hi "$frac" && p99_ok=1
        [ -n "$rq_ok" ] && [ -n "$p99_ok" ]
}
for mode in share cap; do
        for k in 2000 5000; do
                { [ $mode:$k = share:5000 ] || [ $mode:$k = cap:2000 ]; } && sanitized_skip "$mode 50/50, ${k} us batch kernels" && continue
                probe_tail_try "$mode 50/50, ${k} us batch kernels" fifty "$TMP/client" "$TMP/batch"
                if [ -n "$rq_ok" ]; then
                        ok "$mode 50/50, ${k} us batch kernels, request by request: $sk batch kernels inside requests, $l1 requests behind more than one late kernel, the longest $mx us (<= $mxb): $tl"
                else
                        tail_not_ok "$mode 50/50, ${k} us batch kernels, request by request: ${sk:-?} batch kernels inside requests (want <= 8 %), ${l1:-?} requests behind more than one late kernel (want <= 1 %), the longest ${mx:-none} us (want <= $mxb): $tl"
                fi
                if [ -n "$p99_ok" ]; then
                        ok "$mode 50/50, ${k} us batch kernels: the client's p99 ${p99} us (<= $bound; raw $raw), the batch $frac of the GPU (>= $lo)"
                else
                        tail_not_ok "$mode 50/50, ${k} us kernels: p99 ${p99:-none} us (raw ${raw:-none}; want <= $bound), batch ${frac:-none} (want $lo..$hi)"
                        tail -n 3 "$TMP/client" "$TMP/batch"
                fi
                [ $mode:$k = cap:5000 ] || continue
                p50=$(field p50_us "$TMP/client")
                ran && within 0 6500 "$p50" && ok "bounded launch-ahead: with 5 ms batch kernels the client's median request takes $p50 us (<= 6500)" ||
                        not_ok "launch-ahead: median ${p50:-none} us with 5 ms kernels (want <= 6500)"
        done
done

# Priorities: a client that wants the GPU all the time (a request of four 70 us kernels every 2
# ms), of share 10, beside the same batch (share 30, normal, 2 ms kernels), once a low slice and
# once a high one: only the client's class differs. As a low slice it never cuts the normal
# batch's turns and waits for them: p99 9.8-10.4 ms, 676-679 requests served in 4 s. As a high
# slice it never waits for a lower slice's turn, only for the kernel running (the batch's next
# launched one at a time on a fresh look beside it): p99 2.5-2.6 ms, so at most one batch kernel,
# its own 0.3 ms, the hand-over and
# 2.5 ms of a loaded machine (5 ms, where 6 ms was ~2.5 times the GPU host's), and under half the
# low one's. (Until the seventeenth session the first client was a normal slice, over its share
# only through the batch kernel each request waited for, charged to it as its GPU time: p99
# 7.7-9.6 ms against the high one's 2.0-2.5 in 8 runs each. Since a turn's GPU time starts when
# the GPU comes to its context (limiter.c, mark_turn), that wait is not its own: a normal client
# under its share cuts the batch's turns as a high one does, and the two were alike, 2.7 and 2.5
# ms. With requests of eight kernels, over its share by its own work, the high client waited for
# its own budget now and then: its longest request 12-36 ms.) The batch's guarantee (a
# share-mode slice owed its share goes first, whatever the classes: its own rule) stays below what
# it gets in the gaps (0.35), so that the case tests the classes, not that rule. (Beside a share 70
# batch the batch was owed whenever the hand-overs of a client taking the GPU 500 times a second
# idled the GPU, as on a loaded two-core machine: 0.45-0.57 of the GPU, and the high client held
# back up to 0.5 s, traced on the simulated GPU. Until issue 34 the normal client ran beside a
# share 70 normal batch and the high one beside a share 30 low batch: not the same neighbour.)
# Classes ignored (mutation prioclass), the high client is the low one: red.
# (The high pair run again where it failed with the hypervisor's steal in it: probe_tail_try.)
export PROBE_PERIOD_US=2000
pair "GPUSLICE_COMPUTE_LIMIT=30 GPUSLICE_COMPUTE_MODE=share" "GPUSLICE_COMPUTE_LIMIT=10 GPUSLICE_COMPUTE_MODE=share GPUSLICE_PRIORITY=low" 2000
low=$(field p99_run_us "$TMP/client") ltl=$(tcount)
lmax=1
sanitized && lmax=2
prio_high() {
        pair "GPUSLICE_COMPUTE_LIMIT=30 GPUSLICE_COMPUTE_MODE=share" \
                "GPUSLICE_COMPUTE_LIMIT=10 GPUSLICE_COMPUTE_MODE=share GPUSLICE_PRIORITY=high" 2000
        high=$(field p99_run_us "$TMP/client") hraw=$(field p99_us "$TMP/client") bfrac=$(field fraction "$TMP/batch")
        hmax=$(field max_run_us "$TMP/client") htl=$(tcount)
        s1=$(field slipped <(echo "$htl")) l1=$(field late <(echo "$htl"))
        p99_ok= rq_ok=
        ran && within 0 5000 "$high" && awk -v h="$high" -v l="$low" 'BEGIN { exit !(l > 2 * h) }' && p99_ok=1
        ran && few 2 "$s1" "$htl" && few $lmax "$l1" "$htl" && within 0 20000 "$hmax" && rq_ok=1
        [ -n "$p99_ok" ] && [ -n "$rq_ok" ]
}
probe_tail_try "a high client beside a normal batch" prio_high "$TMP/client" "$TMP/batch"
# (the batch's floor is its guarantee: 30 % of the 4 s it wanted the GPU, less the owed rule's
# 20 ms of slack per 1 s window; CPU stalls measured in its run allowed for as everywhere)
blo=$(probe_lo 0.28 "$TMP/batch")
unset PROBE_PERIOD_US
# What the observer sees of that pair (the interposer's counts in the regions): each slice's
# priority, its launches, and how long they waited for the GPU (the normal batch far longer).
"$BUILD/gpuslice" top --json --no-nvml --interval 0.1 --region "$TMP/region.$n.client" --region "$TMP/region.$n.batch" \
        >"$TMP/top.json" 2>"$TMP/top.err"
python3 - "$TMP/top.json" "$TMP/region.$n.client" 2>"$TMP/top.err" <<'EOF2' && ok "top: the client high, the batch normal, launches counted, the batch waited longer" ||
import json, sys
d = {s["region"]: s for s in json.load(open(sys.argv[1]))["slices"]}
c, b = d[sys.argv[2]], [s for r, s in d.items() if r != sys.argv[2]][0]
cw, bw = c["devices"][0]["launch_wait"], b["devices"][0]["launch_wait"]
assert c["priority"] == "high" and b["priority"] == "normal", (c["priority"], b["priority"])
assert cw["launches"] >= 500 and bw["launches"] >= 100, (cw, bw)
assert bw["wait_seconds"] > 2 * cw["wait_seconds"], (cw, bw)
EOF2
        { not_ok "top's view of the priority pair"; cat "$TMP/top.err"; }
if [ -n "$p99_ok" ]; then
        ok "a high client beside a normal batch: p99 $high us (raw $hraw; the low one beside the same batch: $low us: $ltl)"
else
        tail_not_ok "priority: high p99 ${high:-none} us (raw ${hraw:-none}; want <= 5000 and under half of the low one's ${low:-none} beside the same batch: $ltl)"
fi
# ... and not at p99 only (issue 34): every request as the GPU ran it. A batch kernel between two of
# a request's kernels (a slip: the high client's turn handed over or cut in the middle of it) or
# ahead of its first one though launched after it came (a late start: launched on a view from
# before the client took the GPU) is rare: late starts at most 1 % of the ~1900 requests (1-2
# seen beside this batch, 0-6 beside a low one; 8-9 since a turn taken begins with a marker event,
# recorded between the take and the first launch: limiter.c, mark_turn; 2 % in a sanitizer build,
# whose slower record leaves the batch more time to launch on its old view: 23 of 1823 seen in
# CI), slips at most 2 % (1-9 seen: the client's thread
# kept off its CPU for more than a tick between two of its kernels hands its turn over, on this
# loaded VM), and the longest request stays under half a quantum (20 ms: it never waited for a
# neighbour's turn; its CPU waits taken off, as the p99's; 9-12 ms seen at share 10, once 17 ms at
# load 3; 6-7 ms at share 30 beside a low batch, 12 ms in the sanitizer build beside another test).
if [ -n "$rq_ok" ]; then
        ok "a high client beside a normal batch, request by request: $s1 slipped, $l1 started late, the longest $hmax us (<= 20000): $htl"
else
        tail_not_ok "a high client beside a normal batch, request by request: ${s1:-?} slipped (want <= 2 %), ${l1:-?} started late (want <= $lmax %), the longest ${hmax:-none} us (want <= 20000): $htl"
fi
# ... and the batch keeps its guarantee beside the high client: on this simulated GPU, beside a
# client that takes the GPU every 2 ms, it gets 0.35-0.37 (a quiet machine): each hand-over back
# to it waits for the client to be quiet for a tick (0.25 ms) and the client's next request
# often comes first; the real GPU's table (bench/RESULTS.md) has the batch's throughput beside a
# high client at a request every 20 ms
within "$blo" 1.0 "$bfrac" && ok "... the batch keeps its 30 % and takes gaps: $bfrac of the GPU (>= $blo)" || not_ok "the batch beside the high client: ${bfrac:-none} (want >= $blo)"

# A high client keeps its turn through its request: its first kernel waited up to a 5 ms batch
# kernel, and its next comes 0.1 ms after (the host's work between the kernels of a request).
# It waits for that one batch kernel, never for a second between its own kernels (the turn is
# handed over only once it was quiet for a tick, 0.25 ms: last launch *and* last completion).
# (Its share is 60 %: a request is charged the batch kernel it waited behind, up to 5.5 ms of
# GPU time per 20 ms, and at 30 % its budget would hold it back now and then.)
# (A failed run with the hypervisor's steal in it is repeated: probe_tail_try.)
high5() {
        pair "GPUSLICE_COMPUTE_LIMIT=30 GPUSLICE_COMPUTE_MODE=share GPUSLICE_PRIORITY=low" \
                "GPUSLICE_COMPUTE_LIMIT=60 GPUSLICE_COMPUTE_MODE=share GPUSLICE_PRIORITY=high PROBE_REQ_GAP_US=100" 5000
        p99=$(field p99_run_us "$TMP/client") raw=$(field p99_us "$TMP/client") mx=$(field max_run_us "$TMP/client") tl=$(tcount)
        s2=$(field slipped <(echo "$tl")) l2=$(field late <(echo "$tl"))
        p99_ok= rq_ok=
        ran && within 0 7500 "$p99" && p99_ok=1
        ran && few 5 "$s2" "$tl" && few 2.5 "$l2" "$tl" && within 0 16000 "$mx" && rq_ok=1
        [ -n "$p99_ok" ] && [ -n "$rq_ok" ]
}
if ! sanitized_skip "a high client beside 5 ms batch kernels (one kernel waited for, request by request)"; then
        probe_tail_try "a high client beside 5 ms batch kernels" high5 "$TMP/client" "$TMP/batch"
        if [ -n "$p99_ok" ]; then
                ok "a high client's request waits for one 5 ms batch kernel, not two: p99 $p99 us (<= 7500; raw $raw)"
        else
                tail_not_ok "high client, 5 ms batch kernels, 0.1 ms host gaps: p99 ${p99:-none} us (raw ${raw:-none}; want <= 7500)"
                tail -n 3 "$TMP/client" "$TMP/batch"
        fi
        # Request by request (~200): a slip or a late start is a whole 5 ms kernel. Late starts at most
        # 2.5 % of the requests (0-2 seen; with the batch's kernels not one at a time beside the high
        # client, 11-17), slips at most 5 % (0-6 seen: the client's thread kept off its CPU for more than a
        # tick between two kernels, as above), and the longest within two batch kernels and 6 ms (7-11 ms
        # seen).
        if [ -n "$rq_ok" ]; then
                ok "a high client beside 5 ms batch kernels, request by request: $s2 slipped, $l2 started late, the longest $mx us (<= 16000): $tl"
        else
                tail_not_ok "a high client beside 5 ms batch kernels, request by request: ${s2:-?} slipped (want <= 5 %), ${l2:-?} started late (want <= 2.5 %), the longest ${mx:-none} us (want <= 16000): $tl"
        fi
fi

# Classes without a guarantee (cap): a high slice gets its whole cap beside a low one that wants
# everything; two normal slices split the GPU. (Each cap 60 %: the low one gets the rest.)
two() { # ENV_A ENV_B: two batch slices of 2 ms kernels, 3 s together; fractions in $TMP/a, $TMP/b
        fresh
        sliced a $1 "$PROBE" kernel 3 2000
        local pa=$!
        sliced b $2 "$PROBE" kernel 3 2000
        wait $pa $!
}
# (classes ignored, the two split what they get: 0.30-0.45 each on this simulated GPU, 0.5 each at
# most; so the high one at least 0.52, the low one at most 0.42, and the high one 1.4 times the low)
if ! sanitized_skip "cap 60 high beside cap 60 low"; then
        two "GPUSLICE_COMPUTE_LIMIT=60 GPUSLICE_PRIORITY=high" "GPUSLICE_COMPUTE_LIMIT=60 GPUSLICE_PRIORITY=low"
        a=$(field fraction "$TMP/a") b=$(field fraction "$TMP/b") alo=$(probe_lo 0.52 "$TMP/a") blo=$(probe_lo 0.30 "$TMP/b")
        within "$alo" 0.62 "$a" && within "$blo" 0.42 "$b" && awk -v a="$a" -v b="$b" 'BEGIN { exit !(a >= 1.4 * b) }' &&
                ok "cap 60 high beside cap 60 low: $a and $b" ||
                not_ok "cap 60 high beside cap 60 low: ${a:-none} ${b:-none} (want $alo..0.62 and $blo..0.42, the high 1.4 times the low or more)"
fi
# A share-mode slice keeps its guarantee over a window, whatever the classes: share 30 low beside
# share 30 high gets its 30 % (the high one all the rest); between two normal ones, half each.
two "GPUSLICE_COMPUTE_LIMIT=30 GPUSLICE_COMPUTE_MODE=share GPUSLICE_PRIORITY=high" \
        "GPUSLICE_COMPUTE_LIMIT=30 GPUSLICE_COMPUTE_MODE=share GPUSLICE_PRIORITY=low"
a=$(field fraction "$TMP/a") b=$(field fraction "$TMP/b") alo=$(probe_lo 0.55 "$TMP/a") blo=$(probe_lo 0.24 "$TMP/b")
within "$alo" 0.75 "$a" && within "$blo" 0.40 "$b" && ok "share 30 high beside share 30 low: $a and $b (the low one's 30 % guaranteed)" ||
        not_ok "share 30 high/low: ${a:-none} ${b:-none} (want $alo..0.75 and $blo..0.40)"
if ! sanitized_skip "share 30 beside share 30, both normal"; then
        two "GPUSLICE_COMPUTE_LIMIT=30 GPUSLICE_COMPUTE_MODE=share" "GPUSLICE_COMPUTE_LIMIT=30 GPUSLICE_COMPUTE_MODE=share"
        a=$(field fraction "$TMP/a") b=$(field fraction "$TMP/b") lo=$(probe_lo 0.38 "$TMP/a" "$TMP/b")
        within "$lo" 0.55 "$a" && within "$lo" 0.55 "$b" && ok "share 30 beside share 30, both normal: $a and $b" ||
                not_ok "share 30/30 normal: ${a:-none} ${b:-none} (want $lo..0.55 each)"
fi

# Eight slices of 12.5 % (share mode, 1 ms kernels) keep their shares. (Started one after another,
# each reads the others' files as they appear: a reader once took a file made a moment ago, before
# its slice's first tick, for one gone a minute and removed it; that slice's turns then went
# unseen and its kernels queued behind the others', charged to it: 0.064 in one CI run. The unit
# test test_arbiter.c holds that case exactly.)
if ! sanitized_skip "eight slices of 12 % each, share mode"; then
        fresh
        pids=()
        for i in 1 2 3 4 5 6 7 8; do
                sliced s$i GPUSLICE_COMPUTE_LIMIT=12 GPUSLICE_COMPUTE_MODE=share "$PROBE" kernel 4 1000
                pids+=($!)
        done
        wait "${pids[@]}"
        fr=$(for i in 1 2 3 4 5 6 7 8; do field fraction "$TMP/s$i"; done | tr '\n' ' ')
        eachlo=$(probe_lo 0.08 "$TMP"/s[1-8]) sumlo=$(probe_lo 0.85 "$TMP"/s[1-8])
        if awk -v f="$fr" -v lo="$eachlo" -v slo="$sumlo" 'BEGIN { n = split(f, a, " "); s = 0
                for (i = 1; i <= n; i++) { if (a[i] < lo || a[i] > 0.17) exit 1; s += a[i] }
                exit !(n == 8 && s >= slo && s <= 1.01) }'; then
                ok "eight slices of 12 % each, share mode: $fr (each >= $eachlo, together >= $sumlo)"
        else
                not_ok "eight slices: $fr (want $eachlo..0.17 each, $sumlo..1.01 together)"
        fi
fi

# A turn holder killed with kill -9 (its lease renewed a moment ago) stalls the others for at most
# its lease (two quanta: 80 ms), never for the 2 s after which a slice ignores the arbiter. The
# client here wants the GPU all the time and is at its share, so it cannot cut the holder's turn:
# it waits for the lease to lapse.
fresh
export PROBE_PERIOD_US=1000
sliced holder GPUSLICE_COMPUTE_LIMIT=50 GPUSLICE_COMPUTE_MODE=share GPUSLICE_ARBITER_NAME=holder "$PROBE" kernel 10 5000
hp=$!
sleep 0.5
sliced client GPUSLICE_COMPUTE_LIMIT=50 GPUSLICE_COMPUTE_MODE=share GPUSLICE_LOG_LEVEL=1 "$PROBE" request 3 70
cp=$!
sleep 1
# kill it while it holds the GPU (state 1 in its record: byte 44)
held=0
for i in $(seq 400); do
        python3 -c 'import struct,sys; b=open(sys.argv[1],"rb").read(); sys.exit(struct.unpack_from("<I",b,44)[0] != 1)' \
                "$GPUSLICE_ARBITER_DIR"/gpuslice-gpu-*/holder 2>/dev/null && { held=1; break; }
        sleep 0.005
done
kill -9 $hp
wait $cp
unset PROBE_PERIOD_US
mx=$(field max_us "$TMP/client")
if [ $held = 1 ] && [ -n "$(field requests "$TMP/client")" ] && within 0 150000 "$mx" && ! grep -q "ignoring the arbiter" "$TMP/client"; then
        ok "a holder killed with kill -9: the others waited at most $mx us (lease 80 ms)"
else
        not_ok "kill -9 holder (killed while holding: $held): the client's longest request ${mx:-none} us (want <= 150000, no escape)"
        tail -n 3 "$TMP/client"
fi

finish
