#!/usr/bin/env bash
# Issue 32 on the simulated GPU: the mechanisms behind equal slices' latency and work conservation.
# Each case shares one simulated GPU timeline between its processes (FAKEGPU_SHARED_TIMELINE), and
# the fake NVML's device utilization is that timeline's work over the last whole second
# (FAKEGPU_NVML_UTIL=timeline: NVML's longest sample period, the figure that lags most behind the
# work; share mode borrows the GPU's idle time by it). Fractions' lower bounds allow for the CPU
# stalls measured in the same run (tests/lib/probe.sh), as in test_turns.sh.
#   test_latency.sh [CASE...]   (default: every case; GS_LATENCY_CASES too)
# Cases, each a meson test of its own (vgpu_latency_CASE, tests/vgpu/meson.build), so that a
# mutation meant for one runs that one alone: conserve (1. work conservation), join (2. joiners),
# two (3. two equal latency slices), leave (4. slices that leave), equal8 (5. eight equal latency
# slices: the liar guard takes none for a liar), handback (6. a request waits for no turn nobody
# uses: a turn handed back when a request is done), ahead (7. light slices' own launch-ahead),
# lower (8. a high client beside lower classes), first (9. a new slice's first request), pause
# (10. a light slice back from a pause), charge (11. what a cut costs the cutter), guard (12. the
# starvation guard takes no light slice for a starved one), capchurn (13. capped batches that come
# and go keep their cap, and a light client beside them waits for one kernel). A case is a
# function case_NAME below: a new one is a function, a name in CASES and one in meson.build's list.
# In a sanitizer build (GS_SANITIZE, from meson.build) each case runs its distinct code paths and
# skips ("skip - ...: timing accuracy is checked in the normal build") the runs that repeat one:
# conserve the slice alone, join and two the cap mode (share mode runs the same turns); leave is
# skipped whole (the exit's hand-over runs at every process's exit in every case), and so are equal8
# (a judgement of turns' lengths against shares: the slower probes change what it judges) and
# capchurn (a judgement of fractions against a cap, for the same reason).
# A case that failed while the hypervisor took CPUs (steal over 0.002 of the machine's: no
# thread's CPU waits show it, and a thread stopped mid-request holds its turn through the pause)
# runs again, three runs at most, after a "retry - " line (tests/lib/probe.sh, probe_case_try);
# failed with steal in every run, its failed checks are "skip - ... (not judged: ...)" lines.
set -uo pipefail
SRC=${GS_SOURCE_DIR:?} BUILD=${GS_BUILD_DIR:?}
unset LD_LIBRARY_PATH LD_PRELOAD
LIB=$BUILD/libgpuslice-vgpu.so
PROBE=$BUILD/tests/vgpu/compute-probe
FAKE=$BUILD/tests/fakegpu
TMP=$(mktemp -d /tmp/gs-latency.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$TMP"' EXIT
export FAKEGPU_CONFIG=$SRC/tests/fakegpu/configs/1gpu.conf FAKEGPU_NVML_UTIL=timeline
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0
. "$SRC/tests/lib/check.sh"
. "$SRC/tests/lib/probe.sh"
field() { probe_field "$@"; }
# at_least LO VALUE
at_least() { awk -v v="$2" -v lo="$1" 'BEGIN { exit !(v != "" && v + 0 >= lo) }'; }
. "$SRC/tests/vgpu/sim_slices.sh" # fresh, sliced
SHARE30="GPUSLICE_COMPUTE_LIMIT=30 GPUSLICE_COMPUTE_MODE=share"
SHARE50="GPUSLICE_COMPUTE_LIMIT=50 GPUSLICE_COMPUTE_MODE=share"
CASES="conserve join two leave equal8 handback ahead lower first pause charge guard capchurn"

# conserved WHAT FILE: the share-30 slice of FILE got >= 0.95 of the GPU (less its CPU stalls)
conserved() {
        local f lo
        f=$(field fraction "$2") lo=$(probe_lo 0.95 "$2")
        at_least "$lo" "$f" && ok "work conservation: a share-30 slice $1 gets $f of the GPU (>= $lo)" ||
                { not_ok "work conservation: a share-30 slice $1 gets ${f:-nothing} of the GPU (want >= $lo)"; tail -n 3 "$2"; }
}
# 1. Work conservation: a share-30 slice of 1 ms kernels gets >= 0.95 of the GPU alone, beside an
# idle slice (a request of one 70 us kernel every 200 ms), and started right after a 30 + 70 pair
# ended (NVML still shows the pair's work for up to a second; their records stay). Before: it
# compared NVML's lagging figure with the slices' use over the last 100 ms only: one short step
# (the neighbours' work ending, a CPU stall) stopped its borrowing, and NVML then stayed above it
# for a second: 0.47-0.60 beside the idle slice, 0.75 after the pair. Now 0.96-0.975 here; the
# bound is 0.95 on this shared 2-core VM (the simulated GPU's fraction moves by about a hundredth
# with the load: 0.967 was seen beside a full test run), the issue's 0.97 is the GPU host's target.
case_conserve() {
        fresh
        if ! sanitized_skip "work conservation: a share-30 slice alone"; then
                sliced alone $SHARE30 "$PROBE" kernel 3 1000
                wait $!
                conserved alone "$TMP/alone"
        fi
        local pa pi
        sliced a $SHARE30 "$PROBE" kernel 2 1000
        pa=$!
        sliced b GPUSLICE_COMPUTE_LIMIT=70 GPUSLICE_COMPUTE_MODE=share "$PROBE" kernel 2 1000
        wait $pa $!
        sliced after $SHARE30 "$PROBE" kernel 3 1000
        wait $!
        conserved "right after a 30 + 70 pair ended" "$TMP/after"
        PROBE_PERIOD_US=200000 PROBE_REQ_KERNELS=1 sliced idle $SHARE30 "$PROBE" request 4 70
        pi=$!
        sleep 0.3
        sliced beside $SHARE30 "$PROBE" kernel 3 1000
        wait $! $pi
        conserved "beside an idle slice" "$TMP/beside"
}

# 2. Joiners: a latency client (every 20 ms a request of four 70 us kernels, 4 s) beside a batch
# that comes and goes: eight processes of 0.4 s each, one after another, each a new slice of 2 ms
# kernels (as jobs come and go). No request waits more than about one batch kernel (its longest,
# less the CPU stalls during it: <= 2 kernels + 6 ms, as test_turns.sh's p99), and none is
# dropped (served >= due - 2, less the share of the run the client was off its CPU). Before: a new slice's place in the turns was a quantum of credit
# below the least of the slices *wanting* the GPU, so below the client (which it cannot then cut)
# or, with the client between requests, at virtual time 0: its turns ran a quantum (40 ms) each.
joiners() { # MODE: the client and the batch slices both MODE at 50 %
        fresh
        sliced client GPUSLICE_COMPUTE_LIMIT=50 GPUSLICE_COMPUTE_MODE=$1 "$PROBE" request 4 70
        local c=$! i
        sleep 0.2
        for i in 1 2 3 4 5 6 7 8; do
                env LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$LIB" GPUSLICE_REGION="$TMP/region.$n.batch$i" \
                        GPUSLICE_COMPUTE_LIMIT=50 GPUSLICE_COMPUTE_MODE=$1 "$PROBE" kernel 0.4 2000 >"$TMP/batch$i" 2>&1
        done
        wait $c
        local mx p99 req due
        mx=$(field max_run_us "$TMP/client") p99=$(field p99_run_us "$TMP/client") req=$(field requests "$TMP/client")
        due=$(field due "$TMP/client")
        # (a request the client's CPU stalls pushed past its period is no drop: the share of the
        # run it was off its CPU, of the requests due, is allowed for, as a fraction's bound is)
        local off; off=$(probe_off "$TMP/client")
        if [ -n "$req" ] && awk -v m="$mx" -v r="$req" -v d="$due" -v o="$off" 'BEGIN { exit !(m <= 10000 && r >= d - 2 - d * o) }'; then
                ok "$1 50/50, a batch joining as 8 new slices: the client's longest request $mx us (<= 10000; p99 $p99), $req of $due served"
        else
                not_ok "$1 50/50, a batch joining as 8 new slices: the client's longest request ${mx:-none} us (want <= 10000; p99 ${p99:-none}), ${req:-none} of ${due:-none} served"
                tail -n 2 "$TMP/client"
        fi
}
case_join() {
        joiners share
        sanitized_skip "cap 50/50, a batch joining as 8 new slices" || joiners cap
}

# 3. Two equal latency-bound slices (inference services at 50 % each): a client of four 200 us
# kernels every 10 ms and one of eight 150 us kernels every 7 ms, 3 s, first without slicing, then
# share 50/50 and cap 50/50 on the same simulated GPU. A request must not wait for the other
# slice's turn to be handed back: each client's median stays within 1.2 x its median without
# slicing + 0.2 ms. Before: a quiet holder kept its turn until its ticker, napping 5 ms while
# quiet, looked again; the second client's median 1.5 x (2.73 against 1.82 ms), p99 4.6 x. (The
# p99 and the longest request are printed: issue 32's target of 1.1 x is the GPU host's.)
# In share mode the two are light (they pause after their waits and use far less than their
# shares) and launch side by side (arbiter.c, "Side by side"): each client's p95 stays within
# 1.05 x its p95 without slicing + 50 us. Taking turns (the mutation sidebysidetwo), the second
# client's p95 was 1.33-1.39 x its unsliced one (the other's turn held through its CPU gaps), and
# 1.14-1.15 x since a light slice may cut a batch's turn (twenty-third session: CI saw it pass the
# bound of 1.1 x + 0.1 ms once); side by side 0.99-1.05 x (1.00-1.01 in that session). Not p99:
# over the 430 requests of 3 s it is the fourth longest, which on this 2-core VM moved 1.0-1.3 x
# side by side and 1.15-1.6 x taking turns (six runs each, 2026-11-30): the check failed one run in
# five either way.
# (Cap mode takes turns: a cap is GPU time, and side by side a kernel's wait behind the other's
# is charged as its own.)
two_clients() { # MODE (none: no slicing): outputs $TMP/ca.MODE, $TMP/cb.MODE
        fresh
        local lim=""
        [ "$1" != none ] && lim="GPUSLICE_COMPUTE_LIMIT=50 GPUSLICE_COMPUTE_MODE=$1"
        PROBE_PERIOD_US=10000 PROBE_REQ_KERNELS=4 sliced ca.$1 $lim "$PROBE" request 3 200
        local a=$!
        PROBE_PERIOD_US=7000 PROBE_REQ_KERNELS=8 sliced cb.$1 $lim "$PROBE" request 3 150
        wait $a $!
}
case_two() {
        local m c p50 base p99 b99 p95 b95 mx
        for m in none share cap; do
                [ $m = cap ] && sanitized_skip "two latency slices, cap 50/50" && continue
                two_clients $m
                [ $m = none ] && continue
                for c in ca cb; do
                        p50=$(field p50_us "$TMP/$c.$m") base=$(field p50_us "$TMP/$c.none")
                        p99=$(field p99_run_us "$TMP/$c.$m") b99=$(field p99_run_us "$TMP/$c.none") mx=$(field max_run_us "$TMP/$c.$m")
                        if [ -n "$base" ] && awk -v p="$p50" -v b="$base" 'BEGIN { exit !(p != "" && p <= 1.2 * b + 200) }'; then
                                ok "two latency slices, $m 50/50, client $c: median $p50 us (no slicing $base; p99 $p99 against $b99, longest $mx)"
                        else
                                not_ok "two latency slices, $m 50/50, client $c: median ${p50:-none} us (want <= 1.2 x ${base:-none} + 200; p99 ${p99:-none} against ${b99:-none})"
                        fi
                        [ $m = share ] || continue
                        sanitized_skip "two light slices side by side, share 50/50, client $c: p95" && continue
                        p95=$(field p95_run_us "$TMP/$c.$m") b95=$(field p95_run_us "$TMP/$c.none")
                        if [ -n "$b95" ] && awk -v p="$p95" -v b="$b95" 'BEGIN { exit !(p != "" && p <= 1.05 * b + 50) }'; then
                                ok "two light slices side by side, share 50/50, client $c: p95 $p95 us (no slicing $b95; p99 $p99 against $b99)"
                        else
                                not_ok "two light slices side by side, share 50/50, client $c: p95 ${p95:-none} us (want <= 1.05 x ${b95:-none} + 50; p99 ${p99:-none} against ${b99:-none})"
                        fi
                done
        done
}

# 7. Light slices' own launch-ahead (queue_full in limiter.c): two light share-50 services (3 s,
# every 10 and 13 ms) whose requests are twenty kernels launched at once, nineteen of 10 us and a
# last one of 1 ms, waited for once at the end (as PyTorch's services do). The limiter's estimate
# of a slice's work left (its launches at the measured time per launch: here 60 us, for 10 us
# kernels) errs high, and among slices that share the GPU a launcher waited whenever more than
# 0.5 ms of it seemed left, though the GPU was idle. Among light slices alone that bound protects
# nobody (a light neighbour launches beside the turn): each client's median stays within 1.1 x its
# median without slicing + 0.1 ms. Before: 1.77 and 1.95 ms against 1.27 (two PyTorch services on
# the H200 waited 0.1-0.3 ms a request so, p50 and p99 alike: bench/RESULTS.md, 2026-11-29,
# thirteenth session).
ahead_clients() { # MODE: outputs $TMP/aa.MODE, $TMP/ab.MODE
        fresh
        local lim=""
        [ "$1" != none ] && lim="GPUSLICE_COMPUTE_LIMIT=50 GPUSLICE_COMPUTE_MODE=$1"
        PROBE_PERIOD_US=10000 PROBE_REQ_KERNELS=20 PROBE_REQ_WAIT=end PROBE_REQ_LAST_US=1000 \
                sliced aa.$1 $lim "$PROBE" request 3 10
        local a=$!
        PROBE_PERIOD_US=13000 PROBE_REQ_KERNELS=20 PROBE_REQ_WAIT=end PROBE_REQ_LAST_US=1000 \
                sliced ab.$1 $lim "$PROBE" request 3 10
        wait $a $!
}
case_ahead() {
        sanitized_skip "two light slices launching ahead, share 50/50" && return
        local c p50 base
        ahead_clients none
        ahead_clients share
        for c in aa ab; do
                p50=$(field p50_us "$TMP/$c.share") base=$(field p50_us "$TMP/$c.none")
                if [ -n "$base" ] && awk -v p="$p50" -v b="$base" 'BEGIN { exit !(p != "" && p <= 1.1 * b + 100) }'; then
                        ok "two light slices launching ahead, share 50/50, client $c: median $p50 us (no slicing $base)"
                else
                        not_ok "two light slices launching ahead, share 50/50, client $c: median ${p50:-none} us (want <= 1.1 x ${base:-none} + 100)"
                fi
        done
}

# 8. A high client beside lower classes: three low share-25 batches (steps of ten 1 ms kernels)
# and a high share-25 client (two 70 us kernels every 10 ms, each waited for), 4 s. The client's
# turn goes over a tick after its request (the ticker, in its long nap when the request cut a
# batch's turn, ticks again at the application's wait). Checks: the client's p99 (less its CPU
# waits) within 3 ms (alone 0.2 + a batch kernel it waits for + a tick), 98 % of its due
# requests served (a new slice's first request still waits up to ~20 ms here), each batch
# >= 0.27 of the GPU (its share and its part of what the client leaves). Before: the client held each turn up to 5 ms past its request (until its ticker's long
# nap ended), the batches got 0.236 each, short of their shares, went first as owed, and the
# client's p99 was 22-39 ms, 9 % of its requests dropped.
case_lower() {
        sanitized_skip "a high client beside three low batches" && return
        fresh
        local lim="GPUSLICE_COMPUTE_LIMIT=25 GPUSLICE_COMPUTE_MODE=share" b f lo
        for b in 1 2 3; do
                GPUSLICE_PRIORITY=low PROBE_BATCH=10 sliced lb$b $lim "$PROBE" batch 4 1000
        done
        PROBE_PERIOD_US=10000 PROBE_REQ_KERNELS=2 GPUSLICE_PRIORITY=high sliced lc $lim "$PROBE" request 4 70
        wait
        local p99 served due
        p99=$(field p99_run_us "$TMP/lc") served=$(field requests "$TMP/lc") due=$(field due "$TMP/lc")
        if [ -n "$p99" ] && [ "$p99" -le 3000 ] && [ -n "$served" ] && [ "$served" -ge $((due - due / 50)) ]; then
                ok "a high client beside three low batches: p99 $p99 us, $served of $due requests served"
        else
                not_ok "a high client beside three low batches: p99 ${p99:-none} us (want <= 3000), ${served:-none} of ${due:-?} requests served"
        fi
        for b in 1 2 3; do
                f=$(field fraction "$TMP/lb$b") lo=$(probe_lo 0.27 "$TMP/lb$b")
                at_least "$lo" "$f" && ok "... low batch $b beside it: $f of the GPU (>= $lo)" ||
                        not_ok "... low batch $b beside it: ${f:-nothing} of the GPU (want >= $lo)"
        done
}

# 11. What a cut costs the cutter: a high share-50 client (two 70 us kernels every 10 ms, each waited
# for) beside a low share-50 batch of 2 ms kernels, 2.5 s. Each request cuts the batch's turn and
# its first kernel waits for the batch kernel running (up to 2 ms). Measured from the launch, that
# wait was the client's GPU time too, while the same time was the batch's (its kernel running): on
# the H200 eight equal latency slices taking turns were charged a sixth more than their work (the
# wait for the GPU's switch to their context), above their shares, and waited for their budgets
# (bench/RESULTS.md, 2026-11-30). An event recorded as a turn is taken, before the first launch,
# marks when the GPU comes to the slice (limiter.c, mark_turn; the simulated GPU completes an event
# on an empty stream once the work submitted before it has run). The client's measured GPU time
# (its log at level 3, "busy N us") is within 0.9 x its kernels' time and 1.5 x + 5 ms: 36.1-39.2
# ms for 34.6-34.7 ms of kernels; charged from the first launch, 290-293 ms (mutation turnmark).
# Its clock reference, taken as it started beside the busy batch (limiter.c, calibrate()), had
# waited for the GPU: placed at the middle of that wait, it put the client's events up to a
# kernel early, and 20.6-20.7 ms were measured (mutation calend).
case_charge() {
        sanitized_skip "what a cut costs the cutter" && return
        fresh
        local lim="GPUSLICE_COMPUTE_LIMIT=50 GPUSLICE_COMPUTE_MODE=share" busy work
        GPUSLICE_PRIORITY=low sliced cbatch $lim "$PROBE" kernel 3 2000
        sleep 0.3
        PROBE_PERIOD_US=10000 PROBE_REQ_KERNELS=2 GPUSLICE_PRIORITY=high GPUSLICE_LOG_LEVEL=3 \
                sliced cclient $lim "$PROBE" request 2.5 70
        wait
        busy=$(sed -n 's/.*device 0: busy \([0-9]*\) us.*/\1/p' "$TMP/cclient" | tail -1)
        work=$(field work_us "$TMP/cclient")
        if [ -n "$busy" ] && [ -n "$work" ] && awk -v b="$busy" -v w="$work" 'BEGIN { exit !(b >= 0.9 * w && b <= 1.5 * w + 5000) }'; then
                ok "what a cut costs the cutter: a high client's measured GPU time $busy us for $work us of kernels"
        else
                not_ok "what a cut costs the cutter: a high client's measured GPU time ${busy:-none} us for ${work:-none} us of kernels (want 0.9 x .. 1.5 x + 5000)"
        fi
}

# 9. A new slice's first request: two share-50 clients started together (four 100 us kernels every
# 10 and 13 ms, each waited for), 2 s; each client's first request (its timeline's first line)
# within 3 ms. A slice's budget started empty and a gate closed on a spent budget waits for a
# whole burst while another slice shares the GPU (20 ms at 50 %), and until the process's first
# measurement it kept two launches out, counted until its ticker, napping 5 ms, saw them done.
# Before: 20-27 ms; then 0.9-2.3 ms (limiter.c: first_budget(), queue_full()). Since the
# simulated GPU's event on an empty stream waits for the other process's queued work, as a real
# GPU's does, the first launch's clock reference took five tries there, each behind the other
# client's request: up to 3.1 ms (one run of eight failed, with the library of d59bbb0 too); one
# try in the first launch (limiter.c, calibrate()): 0.9-2.2 ms in eight runs.
case_first() {
        sanitized_skip "a new slice's first request" && return
        fresh
        local lim="GPUSLICE_COMPUTE_LIMIT=50 GPUSLICE_COMPUTE_MODE=share" c first
        PROBE_TIMELINE=$TMP/fa.tl PROBE_PERIOD_US=10000 PROBE_REQ_KERNELS=4 sliced fa $lim "$PROBE" request 2 100
        PROBE_TIMELINE=$TMP/fb.tl PROBE_PERIOD_US=13000 PROBE_REQ_KERNELS=4 sliced fb $lim "$PROBE" request 2 100
        wait
        for c in fa fb; do
                first=$(awk '$1 == "q" && $2 == 0 { printf "%d", $5 / 1000; exit }' "$TMP/$c.tl" 2>/dev/null)
                if [ -n "$first" ] && [ "$first" -le 3000 ]; then
                        ok "a new slice's first request, beside another new one: $first us (client $c)"
                else
                        not_ok "a new slice's first request, beside another new one: ${first:-none} us (want <= 3000; client $c)"
                fi
        done
        # A slice without turns (its arbiter directory unusable: it says so and runs alone) takes
        # no turn, so nothing wakes its ticker, napping 5 ms before the process's first measurement:
        # its first request of eight kernels each waited for stalled at the fifth, its launches
        # counted outstanding until that nap ended (5.8 ms; with the waits seen, 1.4). Since the first
        # launch makes one clock try, that shows in 5 runs of 8 (mutation firstsync; once it showed
        # every time in the second client beside another new slice, 5.8-7.0 ms, but at b36632b CI
        # saw the mutation survive three runs of this case): five such slices, one after
        # another, the slowest first request judged.
        local i worst=0
        for i in 1 2 3 4 5; do
                fresh
                GPUSLICE_ARBITER_DIR=$TMP/none/arb PROBE_TIMELINE=$TMP/fn$i.tl PROBE_PERIOD_US=10000 PROBE_REQ_KERNELS=8 \
                        sliced fn$i $lim "$PROBE" request 0.5 100
                wait
                first=$(awk '$1 == "q" && $2 == 0 { printf "%d", $5 / 1000; exit }' "$TMP/fn$i.tl" 2>/dev/null)
                [ -n "$first" ] || { worst=; break; }
                [ "$first" -gt "$worst" ] && worst=$first
        done
        if [ -n "$worst" ] && [ "$worst" -le 3000 ]; then
                ok "a new slice's first request, without turns: $worst us (the slowest of five)"
        else
                not_ok "a new slice's first request, without turns: ${worst:-none} us (the slowest of five; want <= 3000)"
        fi
}

# 10. A light slice back from a pause: a request client (four 70 us kernels every 1.1 s: each
# request after a pause of over a second; five requests) beside a batch of 2 ms kernels (share 50
# each). Every request after the first waits for about the batch kernel running at most: their
# median <= 3 ms and the longest <= 4.5 ms (less the client's CPU stalls). Before, the client had
# lost its light mark in the pause (its last pause over a second old) and its request took the
# place of a slice joining, behind the batch's turn, until its ticker looked again: 2.9-6.5 ms
# here (medians 3.9-5.9), 42 ms on the H200, where the batch's turn ran out first (limiter.c
# light_now(), gs_limiter_gate(); arbiter.c note_want()). Now 1.2-3.0 ms (medians 1.3-2.5).
case_pause() {
        sanitized_skip "a light slice back from a pause" && return
        fresh
        local lim="GPUSLICE_COMPUTE_LIMIT=50 GPUSLICE_COMPUTE_MODE=share" r med max nreq
        sliced pbatch $lim "$PROBE" kernel 6 2000
        sleep 0.5
        PROBE_TIMELINE=$TMP/pc.tl PROBE_PERIOD_US=1100000 PROBE_REQ_KERNELS=4 sliced pc $lim "$PROBE" request 4.5 70
        wait
        r=$(awk '$1 == "q" && $2 > 0 { print int($5 / 1000) }' "$TMP/pc.tl" 2>/dev/null | sort -n |
                awk '{ v[NR] = $1 } END { if (NR >= 3) printf "%d %d %d", v[int((NR + 1) / 2)], v[NR], NR }')
        read -r med max nreq <<<"$r"
        if [ -n "$med" ] && [ "$med" -le 3000 ] && [ "$max" -le 4500 ]; then
                ok "a light slice back from a pause beside a batch: median $med us, longest $max us ($nreq requests after the first)"
        else
                not_ok "a light slice back from a pause beside a batch: median ${med:-none} us (want <= 3000), longest ${max:-none} us (want <= 4500)"
                cat "$TMP/pc.tl" 2>/dev/null | head -8
        fi
}

# 4. Slices that leave: a batch of 1 ms kernels (3 s, share 50) beside twelve short jobs, each a
# new slice of 2 ms kernels for 0.2 s (share 50), one after another, each ending right after its
# last kernel (as jobs and request clients do). Each job's process ends holding the turn its
# ticker renewed a moment before: kept, the lease ran on for up to two quanta (80 ms) after the
# exit, the GPU idle meanwhile for the batch, which wants the GPU all along and cannot cut a turn.
# Now the limiter's exit hands it over (gs_arb_leave). The GPU's use over the batch's run (the
# batch's work and the jobs', over its wall time) stays >= 0.9, less the batch's CPU stalls.
# Before: 0.71-0.76 (this VM, load 3-4); now 0.94-0.97. (Eight latency slices of one class, each
# ending its run: a request waited 60-140 ms for the turns of the slices that had ended.)
case_leave() {
        sanitized_skip "slices that leave hand their turn over" && return 0
        fresh
        sliced batch $SHARE50 "$PROBE" kernel 3 1000
        local b=$! i
        sleep 0.2
        for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
                env LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$LIB" GPUSLICE_REGION="$TMP/region.$n.job$i" \
                        $SHARE50 "$PROBE" kernel 0.2 2000 >"$TMP/job$i" 2>&1
        done
        wait $b
        local wb wall wj use lo
        wb=$(field work_us "$TMP/batch") wall=$(field wall_us "$TMP/batch")
        wj=$(for i in 1 2 3 4 5 6 7 8 9 10 11 12; do field work_us "$TMP/job$i"; done | awk '{ s += $1 } END { print s + 0 }')
        use=$(awk -v a="$wb" -v b="$wj" -v w="$wall" 'BEGIN { if (a != "" && w > 0) printf "%.3f", (a + b) / w }')
        lo=$(probe_lo 0.9 "$TMP/batch")
        if at_least "$lo" "$use"; then
                ok "slices that leave hand their turn over: the GPU's use $use beside twelve jobs that ended (>= $lo; the batch $(field fraction "$TMP/batch"))"
        else
                not_ok "slices that leave hand their turn over: the GPU's use ${use:-none} beside twelve jobs that ended (want >= $lo; the batch $(field fraction "$TMP/batch"))"
                tail -n 2 "$TMP/batch"
        fi
}

# 5. Eight equal latency slices (bench/latency.sh's equal8: four clients of four 70 us kernels every
# 10 ms and four of eight every 7 ms, share (then cap) 12 % each, 3 s, logging at level 2): no slice
# takes another for a liar (the arbiter's guard against hostile records, arbiter.c's judge_peers,
# logs "ignoring slice ...'s record" at level 2 and then launches beside it: the turns broken, the
# kernels of both slices queued together, both charged). Before: the heavy clients' requests,
# waiting for turns, made them "want" the GPU 600-950 ms of each second, and what they received was
# judged by their GPU time (65-70 ms: a request's turn is mostly its CPU gaps), so they were "short
# of their share" (100-110 ms) and each peer that held turns of 1-1.4 ms for 0.3-0.6 ms of work cost
# them more than its share by the margin: ignoring lines in two to four of the four heavy clients
# in every run, share and cap. Now what a slice received is also the time it held the GPU (200-260
# ms there): the guard judges turns, and a slice that had its share of turns is kept from the GPU by
# nobody's record. (Since a capped slice's budget pause stopped counting as demand, the GPU-time
# rule alone no longer misfires here either: its mutation, liarheld, is killed by unit_arbiter's
# test_turn_holder_not_short; this case stays as the behaviour's check, red on the code before both.)
eight_slices() { # MODE: eight share-12 (cap-12) latency slices at once, outputs $TMP/e8.MODE.1..8
        fresh
        local i pids=() per k
        for i in 1 2 3 4 5 6 7 8; do
                if [ $((i % 2)) = 1 ]; then per=10000 k=4; else per=7000 k=8; fi
                PROBE_PERIOD_US=$per PROBE_REQ_KERNELS=$k sliced "e8.$1.$i" GPUSLICE_COMPUTE_LIMIT=12 \
                        GPUSLICE_COMPUTE_MODE="$1" GPUSLICE_LOG_LEVEL=2 "$PROBE" request 3 70
                pids+=($!)
        done
        wait "${pids[@]}"
}
case_equal8() {
        local m i ran liars recs served
        for m in share cap; do
                sanitized_skip "eight equal latency slices, $m 12 %: none takes another for a liar" && continue
                eight_slices $m
                ran=0 liars=0 served=""
                for i in 1 2 3 4 5 6 7 8; do
                        [ -n "$(field requests "$TMP/e8.$m.$i")" ] && ran=$((ran + 1))
                        liars=$((liars + $(grep -c "ignoring slice" "$TMP/e8.$m.$i")))
                        served="$served $(field requests "$TMP/e8.$m.$i")/$(field due "$TMP/e8.$m.$i")"
                done
                # (the eight took part in the turns: each made its record in the GPU's arbiter directory)
                recs=$(find "$GPUSLICE_ARBITER_DIR" -mindepth 2 -maxdepth 2 -type f ! -name '.*' | wc -l)
                if [ "$ran" = 8 ] && [ "$recs" = 8 ] && [ "$liars" = 0 ]; then
                        ok "eight equal latency slices, $m 12 %: none takes another for a liar (8 records; served of due:$served)"
                else
                        not_ok "eight equal latency slices, $m 12 %: none takes another for a liar: $liars 'ignoring' lines, $ran of 8 clients ran, $recs records (served of due:$served)"
                        grep -h "ignoring slice" "$TMP"/e8.$m.* | head -n 3
                fi
        done
}

# 12. The starvation guard takes no light slice for a starved one. A normal client of one 70 us
# kernel every 10 ms beside a high client of eight every 3 ms (holding the GPU about a third of
# the time), cap 50 each, 4 s: the normal one waits for a turn at most of its requests, and no
# 100 ms passes without such a wait, so its stretch of waiting never ends; it wants 0.7 % of the
# GPU. Before: the guard (limiter.c, check_turn_wait) compared what it got in 2 s with an eighth
# of its share (13-14 ms against 125), took itself for starved and ignored the turns for 5 s,
# launching beside the high client's. Now a stretch in which it waited less than half the time is
# a fair wait too (mutation guardwait). That the guard still fires where a peer holds the GPU for
# good is vgpu_liar's check.
case_guard() {
        fresh
        PROBE_PERIOD_US=3000 PROBE_REQ_KERNELS=8 sliced gh GPUSLICE_COMPUTE_LIMIT=50 GPUSLICE_PRIORITY=high "$PROBE" request 4 70
        PROBE_PERIOD_US=10000 PROBE_REQ_KERNELS=1 sliced gn GPUSLICE_COMPUTE_LIMIT=50 "$PROBE" request 4 70
        wait
        local req due said
        req=$(field requests "$TMP/gn") due=$(field due "$TMP/gn")
        said=$(grep -m1 -o "waited.*ignoring the arbiter.*" "$TMP/gn" "$TMP/gh")
        if [ -n "$req" ] && [ -z "$said" ]; then
                ok "a light normal client beside a high one is no starved slice ($req of $due requests served)"
        else
                not_ok "a light normal client beside a high one is no starved slice: ${said:-no result} (${req:-none} of ${due:-none} served)"
                tail -n 2 "$TMP/gn"
        fi
}

# 6. A turn goes back when a request is done. Two new share-50 latency slices at once (A: four
# 150 us kernels every 8 ms, B: eight every 7 ms, each kernel waited for; 2 s, logging their turns
# at level 4). A holder gave its turn up once nothing of its own had happened for a tick (0.25 ms)
# at its ticker's next look: 330-540 us after the request's last wait returned (p10-p90), the
# other slice's request waiting meanwhile when it came. Now an application that pauses after its
# waits (a request client) is done once its wait returned and no launch came for twice its longest
# step inside a request and 50 us (the wait wakes the ticker): 90-160 us here. The ticker's nap
# until then ended its timer slack late (50 us by default); with a slack of 1 us (limiter.c,
# precise_naps), a median of 64-70 us where it was 114-117 (four runs each, 2026-11-30).
# Bound: the median <= 100 us, over the requests a hand-over followed within 5 ms
# (tests/vgpu/handback.py).
# The same with each kernel waited for by the context's synchronization as CUDA 13's runtime gets
# it (cuGetProcAddress_v2 at 13000 gives cuCtxSynchronize_v2: cudaDeviceSynchronize, PyTorch's
# torch.cuda.synchronize): the interposer wrapped only cuCtxSynchronize, so such waits went unseen
# and the turn went back at the ticker's quiet, as before (red before: 370-420 us).
# (Each new slice's first request here takes 20-30 ms: its budget starts empty and, beside another
# slice, opens on a whole burst. A first burst granted at the start fixed that on the simulated GPU,
# but on the H200 two capped slices started together then tripped the liar guard in one pair of
# six to eight (bench/RESULTS.md, 2026-11-29, eleventh session): not landed, not checked here.)
case_handback() {
        sanitized_skip "a turn goes back when the request is done" && return 0
        local w lv="$SHARE50 GPUSLICE_LOG_LEVEL=4" a c back how
        for w in stream ctx13; do
                fresh
                PROBE_REQ_WAIT=$w PROBE_PERIOD_US=8000 PROBE_REQ_KERNELS=4 PROBE_TIMELINE="$TMP/hb.a.q" sliced hb.a $lv "$PROBE" request 2 150
                a=$!
                PROBE_REQ_WAIT=$w PROBE_PERIOD_US=7000 PROBE_REQ_KERNELS=8 PROBE_TIMELINE="$TMP/hb.b.q" sliced hb.b $lv "$PROBE" request 2 150
                wait $a $!
                how=""
                [ $w = ctx13 ] && how=", waits by CUDA 13's cuCtxSynchronize"
                for c in a b; do
                        back=$(python3 "$SRC/tests/vgpu/handback.py" "$TMP/hb.$c.q" "$TMP/hb.$c")
                        if [ -n "$back" ] && awk -v m="${back%% *}" 'BEGIN { exit !(m <= 100) }'; then
                                ok "a turn goes back when the request is done$how: median $back (<= 100 us; client $c)"
                        else
                                not_ok "a turn goes back when the request is done$how: median ${back:-none} (want <= 100 us; client $c)"
                                grep -v turn "$TMP/hb.$c" | tail -n 2
                        fi
                done
        done
}

# 13. Capped batches that come and go keep their cap. Three cap-25 batch slices of 1 ms kernels in
# steps of ten, each a new slice (a new process, region and record) every 2.5 s for 5 s, their
# starts staggered, beside a cap-25 client of two 70 us kernels every 10 ms (bench/latency.sh's coop
# shape, plain kernels), logging at level 2.
# A launch that found another slice's turn with budget left but short of a whole burst (a new
# process's first quarter of one, or a step's partial refill) took the turn once it was free, and
# the ticker, taking a launcher that waits with less than a whole burst for one that wants nothing,
# handed it straight back: take, hand over, every 0.1 ms (4,900 turns in a 3 s process, against
# 240), until the burst was whole. The thrash counted as demand the others' turns kept waiting, the
# slices took each other for liars ("ignoring slice ...", arbiter.c's guard) and launched beside
# each other's turns, and kept less than their cap (0.220-0.226 of the H200 in coop cap; here the
# least of the three 0.212-0.223, an "ignoring slice" line in each of four runs). Now a launcher
# that waits for a turn with budget left is demand to its ticker (limiter.c, waiting_budget: only
# one that came with the budget spent waits for the whole burst): 0.249-0.251, no such line. Bound:
# each slice >= 0.93 x 0.25 of the GPU over its processes (less their CPU stalls; the issue's 0.95
# is the GPU host's target, bench/latency.sh), and no slice takes another for a liar.
# The client's requests meanwhile wait for about one batch kernel (p99 <= 2.4 ms, less its CPU
# stalls: the running kernel and the 0.5 ms queued behind it). A waking client's virtual time
# is raised to a quantum's credit behind the least of the slices that *want* the GPU, so a batch
# paused for its budget (often far behind the others: it joined later) was left below it, and
# the client could not cut that batch's turns until it had received the milliseconds between
# them: p99 2.7-4.0 ms, longest 4.2-9.5, in three runs. Now a light slice that wakes may cut a
# batch's turn wherever the cut would stand (arbiter.c, may_cut_as_peer): 1.69-1.70, longest
# 2.1-2.4.
case_capchurn() {
        sanitized_skip "capped batches that come and go keep their cap" && return 0
        fresh
        local s i pids=() f lo liars files
        PROBE_PERIOD_US=10000 PROBE_REQ_KERNELS=2 sliced ccc GPUSLICE_COMPUTE_LIMIT=25 GPUSLICE_LOG_LEVEL=2 "$PROBE" request 5.5 70
        pids+=($!)
        for s in 1 2 3; do
                (for i in 1 2; do
                        env LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$LIB" GPUSLICE_REGION="$TMP/region.$n.cc$s.$i" GPUSLICE_COMPUTE_LIMIT=25 \
                                GPUSLICE_LOG_LEVEL=2 PROBE_BATCH=10 "$PROBE" batch 2.5 1000 >"$TMP/cc$s.$i" 2>&1
                done) &
                pids+=($!)
                sleep 0.8
        done
        wait "${pids[@]}"
        liars=$(grep -h -m1 -o "ignoring slice.*" "$TMP"/cc[123].[12] "$TMP/ccc" | head -n 1)
        for s in 1 2 3; do
                files=("$TMP/cc$s".[12])
                f=$(cat "${files[@]}" | awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "work_us") w += kv[2]; if (kv[1] == "wall_us") t += kv[2] } }
                        END { if (t > 0) printf "%.3f", w / t }')
                lo=$(probe_lo 0.2325 "${files[@]}")
                if at_least "$lo" "$f" && [ -z "$liars" ]; then
                        ok "capped batches that come and go keep their cap: slice $s got $f of the GPU (>= $lo), no slice taken for a liar"
                else
                        not_ok "capped batches that come and go keep their cap: slice $s got ${f:-nothing} of the GPU (want >= $lo)${liars:+; $liars}"
                        grep -h -v "turn" "${files[@]}" | tail -n 2
                fi
        done
        local p99 mx
        p99=$(field p99_run_us "$TMP/ccc") mx=$(field max_run_us "$TMP/ccc")
        if [ -n "$p99" ] && [ "$p99" -le 2400 ]; then
                ok "a light capped client beside capped batches that come and go: p99 $p99 us (<= 2400: a batch kernel and what was queued behind it; longest $mx)"
        else
                not_ok "a light capped client beside capped batches that come and go: p99 ${p99:-none} us (want <= 2400; longest ${mx:-none})"
        fi
}

for c in ${*:-${GS_LATENCY_CASES:-$CASES}}; do
        if [[ " $CASES " == *" $c "* ]]; then probe_case_try "case $c" "case_$c"; else not_ok "no case '$c' ($CASES)"; fi
done

finish
