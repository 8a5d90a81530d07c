#!/usr/bin/env bash
# The simulated GPU's switch between processes (FAKEGPU_CTX_SWITCH_US, fake_cuda_time.c): two
# processes streaming 200 us kernels on one shared timeline for 1 s each, every kernel in its
# kernel log. With a switch of 300 us, a kernel that follows another process's on the timeline
# starts at least 300 us after it ends (a model: two processes queueing at the same instant may
# both see the older owner, so 95 % of such transitions, not all); without, about none does (the
# check can fail); a value that is no number is said and ignored.
set -uo pipefail
SRC=${GS_SOURCE_DIR:?} BUILD=${GS_BUILD_DIR:?}
unset LD_LIBRARY_PATH LD_PRELOAD
PROBE=$BUILD/tests/vgpu/compute-probe
TMP=$(mktemp -d /tmp/gs-ctxswitch.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$TMP"' EXIT
export FAKEGPU_CONFIG=$SRC/tests/fakegpu/configs/1gpu.conf
. "$SRC/tests/lib/check.sh"

# two SWITCH TAG: two processes at once on a fresh shared timeline; prints "N SWITCHED" (the
# transitions between the two processes' kernels, and how many of them left >= 300 us between)
two() {
        local i
        for i in 1 2; do
                env FAKEGPU_STATE="$TMP/$2.state" FAKEGPU_SHARED_TIMELINE="$TMP/$2.tl" FAKEGPU_CTX_SWITCH_US="$1" \
                        FAKEGPU_KERNEL_LOG="$TMP/$2.k$i" "$PROBE" kernel 1 200 >"$TMP/$2.out$i" 2>&1 &
        done
        wait
        python3 - "$TMP/$2.k1" "$TMP/$2.k2" <<'EOF2'
import sys
ks = []
for i, path in enumerate(sys.argv[1:]):
    for line in open(path):
        p = line.split()
        if len(p) == 3 and p[0] == "k":
            ks.append((int(p[1]), int(p[2]), i))
ks.sort()
cross = [b[0] - a[1] for a, b in zip(ks, ks[1:]) if a[2] != b[2]]
print(len(cross), sum(1 for g in cross if g >= 300000))
EOF2
}

read -r n s < <(two 300 on)
if [ -n "${n:-}" ] && [ "$n" -ge 100 ] && [ $((s * 100)) -ge $((n * 95)) ]; then
        ok "a switch of 300 us: $s of $n transitions between the processes' kernels left >= 300 us"
else
        not_ok "a switch of 300 us: ${s:-?} of ${n:-?} transitions between the processes' kernels left >= 300 us (want >= 95 % of >= 100)"
fi
read -r n s < <(two "" off)
if [ -n "${n:-}" ] && [ "$n" -ge 100 ] && [ $((s * 100)) -le $((n * 5)) ]; then
        ok "no switch (unset): $s of $n transitions left >= 300 us"
else
        not_ok "no switch (unset): ${s:-?} of ${n:-?} transitions left >= 300 us (want <= 5 % of >= 100)"
fi
FAKEGPU_STATE=$TMP/bad.state FAKEGPU_SHARED_TIMELINE=$TMP/bad.tl FAKEGPU_CTX_SWITCH_US=soon "$PROBE" kernel 0.1 200 >"$TMP/bad" 2>&1
if grep -q "FAKEGPU_CTX_SWITCH_US=soon: not a number of microseconds" "$TMP/bad" && grep -q "fraction=" "$TMP/bad"; then
        ok "FAKEGPU_CTX_SWITCH_US=soon: said, and the process runs without a switch"
else
        not_ok "FAKEGPU_CTX_SWITCH_US=soon: $(head -n 2 "$TMP/bad")"
fi
finish
