#!/usr/bin/env bash
# kill -9 storm into one slice on the simulated GPU (sourced by tests/vgpu/test_kills.sh with a few
# hundred kills, run by bench/kill_storm.sh with 10 000). Needs SRC, BUILD, TMP, check.sh's
# functions, and KILLS. WORKERS processes (default 6) share one slice (8 GiB: room for the six contexts and the churn, so that every start succeeds;
# compute 50 %, cap):
# half allocate and free at random (vgpu-probe churn), half launch kernels (compute-probe), each
# restarted as soon as it is killed; every 100th kill takes them all and removes the region, so
# that the next first process creates it again, and that one is killed after 0-20 ms (while it
# creates the region and its context). Another slice on the same GPU runs beside it throughout.
# Throughout and afterwards:
#   - no worker ends but by our kill -9 (its exit status is SIGKILL's, 137, every time: a crash or
#     an exit of its own fails, with its signal or status and its output), and the workers alive
#     at the end still make progress (their calls counted in PROBE_PROGRESS files: a hung or
#     deadlocked worker fails);
#   - no deadlock: every process started afterwards finishes, exit 0, within its timeout;
#   - no usage left behind, to the byte: a survivor gets exactly the quota a fresh region gives
#     (all of it in one allocation, one byte more refused), and sees the same free memory after;
#   - no turn held by a dead process beyond its lease: the dead slice's arbiter record claims at
#     most the lease (2 quanta, 80 ms) past its last process's death, and the other slice goes on
#     launching: its launch count advances after the storm at a tenth of the GPU or more (its cap
#     is 30 %; a peer alive but deadlocked fails), and it ends by our SIGTERM only;
#   - the reconciler never counts an allocation half-made as context (a bursty allocator's every
#     measurement is its context exactly).
LIB=$BUILD/libgpuslice-vgpu.so
PROBE=$BUILD/tests/vgpu/vgpu-probe
CPROBE=$BUILD/tests/vgpu/compute-probe
FAKE=$BUILD/tests/fakegpu
WORKERS=${WORKERS:-6}
export FAKEGPU_CONFIG=$SRC/tests/fakegpu/configs/1gpu.conf FAKEGPU_STATE=$TMP/fakegpu.state
export FAKEGPU_SHARED_TIMELINE=$TMP/timeline GPUSLICE_ARBITER_DIR=$TMP/arb
mkdir -p "$GPUSLICE_ARBITER_DIR"
R=$TMP/storm.region
# (a plain command, never a shell function, in the background: $! must be the process itself, or
# a kill -9 would take a subshell and orphan the program)
SLICE=(env LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$LIB" GPUSLICE_MEMORY_LIMIT=8Gi GPUSLICE_COMPUTE_LIMIT=50
        GPUSLICE_ARBITER_NAME=storm)
CTX=$(awk '$1 == "context_memory" {print $2}' "$FAKEGPU_CONFIG"); CTX=${CTX%MiB}; CTX=${CTX:-300}
CTX=$(( (CTX + 1) / 2 * 2 * 1024 * 1024 ))

# 0. The reconciler and a bursty allocator (allocations half-made at most moments).
"${SLICE[@]}" GPUSLICE_REGION="$TMP/cycle.region" GPUSLICE_LOG_LEVEL=3 timeout 30 "$PROBE" cycle 16 4 >"$TMP/cycle" 2>&1; rc=$?
mapfile -t extras < <(grep -oE '[0-9]+ extra' "$TMP/cycle" | cut -d' ' -f1)
wrong=$(printf '%s\n' "${extras[@]}" | grep -vcx "$CTX")
[ "$rc" = 0 ] && [ ${#extras[@]} -gt 0 ] && [ "$wrong" = 0 ] &&
        ok "an allocator in bursts: all ${#extras[@]} measurements of its context are the context ($CTX bytes)" ||
        not_ok "an allocator in bursts: exit $rc, measured context ${extras[*]:-none} (want exit 0 and $CTX each; $wrong off)"

# The quota a fresh region gives, to the byte.
"${SLICE[@]}" GPUSLICE_REGION="$TMP/fresh.region" timeout 20 "$PROBE" exact 0 >"$TMP/fresh" 2>&1
FREE=$(awk '/^exact/ {print $2}' "$TMP/fresh")
[ -n "$FREE" ] && [ "$FREE" -gt 0 ] || { not_ok "a fresh slice's free memory: $(head -3 "$TMP/fresh")"; return 0 2>/dev/null || exit 1; }

# Each worker's output goes to $TMP/w.I (its end shown when it ends other than by our kill) and
# its progress to $TMP/p.I (tests/vgpu/progress.h: "ops=N wall_us=..."; removed before it starts).
worker() { # I: start worker I in the background, its pid in W[I]
        rm -f "$TMP/p.$1"
        if [ $(( $1 % 2 )) = 0 ]; then
                "${SLICE[@]}" GPUSLICE_REGION="$R" PROBE_PROGRESS="$TMP/p.$1" "$PROBE" churn 3600 >"$TMP/w.$1" 2>&1 &
                KIND[$1]=churn
        else
                "${SLICE[@]}" GPUSLICE_REGION="$R" PROBE_PROGRESS="$TMP/p.$1" "$CPROBE" kernel 3600 200 >"$TMP/w.$1" 2>&1 &
                KIND[$1]=kernel
        fi
        W[$1]=$!
}
# kill_one I: kill -9 worker I and wait for it; an exit status other than SIGKILL's (137: it had
# ended by itself, a crash, or was ending) goes to $TMP/crashes with the end of its output
crashes=0 killed137=0
gone() { # I STATUS: worker I ended with STATUS, not by our kill
        crashes=$((crashes + 1))
        { echo "worker $1 (${KIND[$1]}, pid ${W[$1]}): exit status $2$([ "$2" -gt 128 ] && echo " (signal $(kill -l $(($2 - 128)) 2>/dev/null || echo $(($2 - 128))))")"
          tail -3 "$TMP/w.$1" | sed 's/^/    /'; } >>"$TMP/crashes"
}
kill_one() {
        local st
        kill -9 "${W[$1]}" 2>/dev/null && sent=$((sent + 1))
        wait "${W[$1]}" 2>/dev/null; st=$?
        if [ "$st" = 137 ]; then killed137=$((killed137 + 1)); else gone "$1" "$st"; fi
}
# ops FILE: the count in a progress file (empty if none yet)
ops() { sed -n 's/^ops=\([0-9]*\).*/\1/p' "$1" 2>/dev/null; }
# advances FILE SECONDS: within SECONDS, the count in FILE is there (the probe may have just
# started) and then grows; prints "FROM -> TO (first seen after S s)"
advances() {
        local f=$1 a="" b="" i t=""
        for i in $(seq $(( $2 * 10 ))); do
                b=$(ops "$f")
                if [ -z "$a" ]; then a=$b; [ -n "$a" ] && t=$i
                elif [ "$b" -gt "$a" ]; then echo "$a -> $b (first seen after $((t / 10)).$((t % 10)) s)"; return 0; fi
                sleep 0.1
        done
        echo "${a:-none} -> ${b:-none}"; return 1
}
# the other slice on the GPU, throughout
env LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$LIB" GPUSLICE_COMPUTE_LIMIT=30 GPUSLICE_ARBITER_NAME=peer \
        GPUSLICE_REGION="$TMP/peer.region" PROBE_PROGRESS="$TMP/p.peer" "$CPROBE" kernel 3600 200 >"$TMP/peer.out" 2>&1 &
PEER=$!
declare -a W KIND
for i in $(seq 0 $((WORKERS - 1))); do worker "$i"; done
sent=0 epochs=0 start=$(date +%s)
while [ "$sent" -lt "$KILLS" ]; do
        if [ $(( (sent + 1) % 100 )) = 0 ]; then
                # every worker at once, the region gone: the next first process creates it
                for i in "${!W[@]}"; do kill_one "$i"; done
                rm -f "$R"
                epochs=$((epochs + 1))
                worker 0
                sleep "0.0$((RANDOM % 21 / 10))$((RANDOM % 10))"
                kill_one 0
                for i in "${!W[@]}"; do worker "$i"; done
                continue
        fi
        sleep "0.0$((RANDOM % 3))$((RANDOM % 10))"
        i=$((RANDOM % WORKERS))
        kill_one "$i"
        worker "$i"
done
# The workers alive now each make progress (started within 20 s, then their calls counted: a
# compute worker started last has been seen to wait up to 6 s for its first launch here).
stuck=""
for i in "${!W[@]}"; do
        a=$(advances "$TMP/p.$i" 20) || stuck="$stuck worker $i (${KIND[$i]}, pid ${W[$i]}): ops $a;"
        echo "# worker $i (${KIND[$i]}): ops $a"
done
[ -z "$stuck" ] && ok "the $WORKERS workers alive after the storm all make progress (their calls counted as they go)" ||
        not_ok "workers that made no progress in 20 s after the storm (hung or deadlocked):$stuck"
# the end: every worker at once (the slice's last process dies now)
for i in "${!W[@]}"; do kill -9 "${W[$i]}" 2>/dev/null && sent=$((sent + 1)); done
died=$(python3 -c 'import time; print(time.monotonic_ns())')
for i in "${!W[@]}"; do
        wait "${W[$i]}" 2>/dev/null; st=$?
        if [ "$st" = 137 ]; then killed137=$((killed137 + 1)); else gone "$i" "$st"; fi
done
secs=$(( $(date +%s) - start ))
# (every kill delivered ended its worker, and nothing else ended one)
if [ "$sent" -ge "$KILLS" ] && [ "$crashes" = 0 ] && [ "$killed137" = "$sent" ]; then
        ok "$sent kill -9 into one slice in $secs s ($epochs times every process at once and the region recreated): each ended its worker (status 137), no worker ended otherwise"
else
        not_ok "the storm: $sent kills sent (want >= $KILLS), $killed137 workers ended by them, $crashes otherwise (a crash, an exit of its own):"
        head -40 "$TMP/crashes" 2>/dev/null | sed 's/^/    # /'
fi

# The dead slice's turn: its record claims at most the lease past its death.
python3 - "$GPUSLICE_ARBITER_DIR" "$died" "$TMP/peer.region" >"$TMP/arb.out" 2>&1 <<'PY'
import os, struct, sys, time
top, died = sys.argv[1], int(sys.argv[2])
lease = 2 * 40_000_000
worst = None
for d in os.listdir(top):
    for f in os.listdir(os.path.join(top, d)):
        b = open(os.path.join(top, d, f), 'rb').read()
        if len(b) < 64 or b[:5] != b'GSARB':
            continue
        until, state = struct.unpack_from('<Q', b, 32)[0], struct.unpack_from('<I', b, 44)[0]
        print(f, 'state', state, 'until-died-ms', (until - died) / 1e6)
        if f == 'storm' and state != 0:
            worst = max(worst or 0, until - died)
print('worst', -1 if worst is None else worst, 'lease', lease)
PY
worst=$(awk '/^worst/ {print $2}' "$TMP/arb.out")
grep -q "^storm state" "$TMP/arb.out" && [ -n "$worst" ] && [ "$worst" -le $((2 * 40000000)) ] &&
        ok "no dead slice's turn beyond the lease: its record ends $(( worst < 0 ? 0 : worst / 1000000 )) ms after its last process died (lease 80 ms)" ||
        { not_ok "a dead slice's turn past the lease"; sed 's/^/    # /' "$TMP/arb.out"; }
# The other slice goes on launching after the storm: over 2 s, at a tenth of the GPU or more (its
# cap is 30 %; a peer alive but deadlocked, or one starved by a dead turn, does not advance).
p0=$(cat "$TMP/p.peer" 2>/dev/null); sleep 2; p1=$(cat "$TMP/p.peer" 2>/dev/null)
prate=$(awk -v a="$p0" -v b="$p1" 'function f(s, k) { return match(s, k "=[0-9.]+") ? substr(s, RSTART + length(k) + 1, RLENGTH - length(k) - 1) : "" }
        BEGIN { n = f(b, "ops") - f(a, "ops"); t = f(b, "wall_us") - f(a, "wall_us"); if (f(a, "ops") == "" || t <= 0) print "none"; else printf "%.3f\n", n * 200 / t }')
[ "$prate" != none ] && awk -v r="$prate" 'BEGIN { exit !(r >= 0.10) }' &&
        ok "the other slice on the GPU goes on launching after the storm: $prate of the GPU over 2 s (>= 0.10, its cap 0.30)" ||
        not_ok "the other slice after the storm: $prate of the GPU over 2 s (want >= 0.10; progress '$p0' -> '$p1')"
kill "$PEER" 2>/dev/null; wait "$PEER" 2>/dev/null; st=$?
[ "$st" = 143 ] && ok "... and it ran until our SIGTERM (status 143)" ||
        { not_ok "the other slice ended with status $st before our SIGTERM (a crash, or an exit of its own)"; tail -3 "$TMP/peer.out" | sed 's/^/    # /'; }

# No deadlock, no usage left behind, the quota to the byte.
"${SLICE[@]}" GPUSLICE_REGION="$R" timeout 20 "$PROBE" exact "$FREE" >"$TMP/after" 2>&1; rc=$?
[ "$rc" = 0 ] && ok "no deadlock: a new process of the slice finishes, exit 0" ||
        not_ok "a new process of the slice: exit $rc ($([ "$rc" = 124 ] && echo "a deadlock: timed out after 20 s" || echo "want 0"))"
read -r _ f a b < <(grep '^exact' "$TMP/after")
[ "${a:-}" = 0 ] && [ "${b:-}" = 2 ] &&
        ok "the survivor's quota is exact to the byte: $FREE bytes in one allocation, one more refused" ||
        { not_ok "the survivor's quota: ${a:-?} for $FREE bytes, ${b:-?} for one more (want 0, 2)"; sed 's/^/    # /' "$TMP/after" | head -5; }
"${SLICE[@]}" GPUSLICE_REGION="$R" timeout 20 "$PROBE" exact 0 >"$TMP/after2" 2>&1; rc2=$?
read -r _ f2 _ < <(grep '^exact' "$TMP/after2")
[ "$rc2" = 0 ] && [ "${f2:-}" = "$FREE" ] && ok "no usage left behind: free memory is a fresh slice's, $FREE bytes" ||
        not_ok "usage left behind: exit $rc2, ${f2:-?} bytes free, a fresh slice has $FREE"
timeout 20 env LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$LIB" GPUSLICE_COMPUTE_LIMIT=30 GPUSLICE_REGION="$TMP/peer2.region" \
        "$CPROBE" kernel 1 200 >"$TMP/peer2" 2>&1; rc=$?
[ "$rc" = 0 ] && grep -qE 'launches=[1-9]' "$TMP/peer2" && ok "a slice on the GPU afterwards launches ($(grep -oE 'launches=[0-9]+' "$TMP/peer2"))" ||
        { not_ok "a slice on the GPU afterwards: exit $rc (want 0) and launches"; sed 's/^/    # /' "$TMP/peer2" | head -5; }
