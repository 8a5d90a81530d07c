#!/usr/bin/env bash
# kill -9 storm into one slice on the simulated GPU (sourced by tests/vgpu/test_kills.sh with a few
# hundred kills, run by bench/kill_storm.sh with 10 000). Needs SRC, BUILD, TMP, check.sh's
# functions, and KILLS. WORKERS processes (default 6) share one slice (1 GiB, compute 50 %, cap):
# half allocate and free at random (vgpu-probe churn), half launch kernels (compute-probe), each
# restarted as soon as it is killed; every 100th kill takes them all and removes the region, so
# that the next first process creates it again, and that one is killed after 0-20 ms (while it
# creates the region and its context). Another slice on the same GPU runs beside it throughout.
# Afterwards:
#   - no deadlock: every process started afterwards finishes (bounded by timeout);
#   - no usage left behind, to the byte: a survivor gets exactly the quota a fresh region gives
#     (all of it in one allocation, one byte more refused), and sees the same free memory after;
#   - no turn held by a dead process beyond its lease: the dead slice's arbiter record claims at
#     most the lease (2 quanta, 80 ms) past its last process's death, and the other slice goes on
#     launching;
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
SLICE=(env LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$LIB" GPUSLICE_MEMORY_LIMIT=1Gi GPUSLICE_COMPUTE_LIMIT=50
        GPUSLICE_ARBITER_NAME=storm)
CTX=$(awk '$1 == "context_memory" {print $2}' "$FAKEGPU_CONFIG"); CTX=${CTX%MiB}; CTX=${CTX:-300}
CTX=$(( (CTX + 1) / 2 * 2 * 1024 * 1024 ))

# 0. The reconciler and a bursty allocator (allocations half-made at most moments).
"${SLICE[@]}" GPUSLICE_REGION="$TMP/cycle.region" GPUSLICE_LOG_LEVEL=3 timeout 30 "$PROBE" cycle 16 4 >"$TMP/cycle" 2>&1
mapfile -t extras < <(grep -oE '[0-9]+ extra' "$TMP/cycle" | cut -d' ' -f1)
wrong=$(printf '%s\n' "${extras[@]}" | grep -vcx "$CTX")
[ ${#extras[@]} -gt 0 ] && [ "$wrong" = 0 ] &&
        ok "an allocator in bursts: all ${#extras[@]} measurements of its context are the context ($CTX bytes)" ||
        not_ok "an allocator in bursts: measured context ${extras[*]:-none} (want $CTX each; $wrong off)"

# The quota a fresh region gives, to the byte.
"${SLICE[@]}" GPUSLICE_REGION="$TMP/fresh.region" timeout 20 "$PROBE" exact 0 >"$TMP/fresh" 2>&1
FREE=$(awk '/^exact/ {print $2}' "$TMP/fresh")
[ -n "$FREE" ] && [ "$FREE" -gt 0 ] || { not_ok "a fresh slice's free memory: $(head -3 "$TMP/fresh")"; return 0 2>/dev/null || exit 1; }

worker() { # I: start worker I in the background, its pid in W[I]
        if [ $(( $1 % 2 )) = 0 ]; then
                "${SLICE[@]}" GPUSLICE_REGION="$R" "$PROBE" churn 3600 >/dev/null 2>&1 &
        else
                "${SLICE[@]}" GPUSLICE_REGION="$R" "$CPROBE" kernel 3600 200 >/dev/null 2>&1 &
        fi
        W[$1]=$!
}
kill_one() { kill -9 "$1" 2>/dev/null && sent=$((sent + 1)); wait "$1" 2>/dev/null; }
# the other slice on the GPU, throughout
env LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$LIB" GPUSLICE_COMPUTE_LIMIT=30 GPUSLICE_ARBITER_NAME=peer \
        GPUSLICE_REGION="$TMP/peer.region" "$CPROBE" kernel 3600 200 >/dev/null 2>&1 &
PEER=$!
declare -a W
for i in $(seq 0 $((WORKERS - 1))); do worker "$i"; done
sent=0 epochs=0 start=$(date +%s)
while [ "$sent" -lt "$KILLS" ]; do
        if [ $(( (sent + 1) % 100 )) = 0 ]; then
                # every worker at once, the region gone: the next first process creates it
                for i in "${!W[@]}"; do kill_one "${W[$i]}"; done
                rm -f "$R"
                epochs=$((epochs + 1))
                worker 0
                sleep "0.0$((RANDOM % 21 / 10))$((RANDOM % 10))"
                kill_one "${W[0]}"
                for i in "${!W[@]}"; do worker "$i"; done
                continue
        fi
        sleep "0.0$((RANDOM % 3))$((RANDOM % 10))"
        i=$((RANDOM % WORKERS))
        kill_one "${W[$i]}"
        worker "$i"
done
# the end: every worker at once (the slice's last process dies now)
for i in "${!W[@]}"; do kill -9 "${W[$i]}" 2>/dev/null && sent=$((sent + 1)); done
died=$(python3 -c 'import time; print(time.monotonic_ns())')
for i in "${!W[@]}"; do wait "${W[$i]}" 2>/dev/null; done
secs=$(( $(date +%s) - start ))
ok "$sent kill -9 into one slice in $secs s ($epochs times every process at once and the region recreated)"

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
kill -0 "$PEER" 2>/dev/null && ok "the other slice on the GPU still runs" || not_ok "the other slice died"
kill "$PEER" 2>/dev/null; wait "$PEER" 2>/dev/null

# No deadlock, no usage left behind, the quota to the byte.
"${SLICE[@]}" GPUSLICE_REGION="$R" timeout 20 "$PROBE" exact "$FREE" >"$TMP/after" 2>&1; rc=$?
[ "$rc" != 124 ] && ok "no deadlock: a new process of the slice finishes (exit $rc)" || not_ok "deadlock: the survivor timed out"
read -r _ f a b < <(grep '^exact' "$TMP/after")
[ "${a:-}" = 0 ] && [ "${b:-}" = 2 ] &&
        ok "the survivor's quota is exact to the byte: $FREE bytes in one allocation, one more refused" ||
        { not_ok "the survivor's quota: ${a:-?} for $FREE bytes, ${b:-?} for one more (want 0, 2)"; sed 's/^/    # /' "$TMP/after" | head -5; }
"${SLICE[@]}" GPUSLICE_REGION="$R" timeout 20 "$PROBE" exact 0 >"$TMP/after2" 2>&1
read -r _ f2 _ < <(grep '^exact' "$TMP/after2")
[ "${f2:-}" = "$FREE" ] && ok "no usage left behind: free memory is a fresh slice's, $FREE bytes" ||
        not_ok "usage left behind: ${f2:-?} bytes free, a fresh slice has $FREE"
timeout 20 env LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$LIB" GPUSLICE_COMPUTE_LIMIT=30 GPUSLICE_REGION="$TMP/peer2.region" \
        "$CPROBE" kernel 1 200 >"$TMP/peer2" 2>&1
grep -qE 'launches=[1-9]' "$TMP/peer2" && ok "a slice on the GPU afterwards launches ($(grep -oE 'launches=[0-9]+' "$TMP/peer2"))" ||
        { not_ok "a slice on the GPU afterwards"; sed 's/^/    # /' "$TMP/peer2" | head -5; }
