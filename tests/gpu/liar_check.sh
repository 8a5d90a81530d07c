#!/usr/bin/env bash
# Issue 31 on the GPU (GS_GPU_ONLY=liar, about 40 s): an honest share-50 slice (`gpuslice exec
# --compute 50 --compute-mode share`, compute_shapes short) beside a neighbour that lies in its
# arbiter record (build/tests/vgpu/arb-liar: class high, owed, virtual time 0, weight 100 %, a
# lease taken by a cut and renewed; its host record, as the hook writes it for a container: share
# 50, normal, share mode), in an arbiter directory of its own. The liar runs no GPU work: what the
# honest slice gets is the arbiter's doing. Two liars, 10 s each: one holding the GPU 90 ms of every
# 100 (on the code before issue 31 the simulated GPU gave the honest slice 0.09 of it), one always
# first in line and never taking it. The honest slice must keep >= 0.9 of its share: a rate of
# >= 0.45 of compute_shapes' native rate, measured first.
#   bash tests/gpu/liar_check.sh BUILD OUTDIR       (PASS/FAIL lines, then "N passed, N failed,
#                                                    N skipped" (tests/gpu/lib.sh); exit 0: both held)
set -uo pipefail
BUILD=${1:-build} OUTDIR=${2:-$(mktemp -d)}
. "$(dirname "$0")/lib.sh"
GS=$BUILD/gpuslice CARRY=$BUILD/gpu-carry LIAR=$BUILD/tests/vgpu/arb-liar
for f in "$GS" "$CARRY/compute_shapes" "$LIAR"; do [ -x "$f" ] || { check "liar: $f is there" false; finish; }; done
UUID=$(nvidia-smi --query-gpu=uuid --format=csv,noheader -i 0 | head -1)
rate() { sed -n 's/.* rate=\([0-9.]*\).*/\1/p' "$1" | tail -1; }
"$CARRY/compute_shapes" short 3 >"$OUTDIR/liar-native.txt" 2>&1
native=$(rate "$OUTDIR/liar-native.txt")
echo "native rate: ${native:-none}"
for c in "90 10" "0 1"; do
        set -- $c
        D=$(mktemp -d /tmp/gs-liar-gpu.XXXXXX)
        LIAR_HOST=5000,1,1 "$LIAR" "$D" "$UUID" liar 11 "$1" "$2" >"$OUTDIR/liar-$1-$2.liar.txt" 2>&1 &
        l=$!
        sleep 0.3
        GPUSLICE_ARBITER_DIR=$D GPUSLICE_LOG_LEVEL=1 "$GS" exec --compute 50 --compute-mode share -- \
                "$CARRY/compute_shapes" short 10 >"$OUTDIR/liar-$1-$2.txt" 2>&1
        wait $l
        r=$(rate "$OUTDIR/liar-$1-$2.txt")
        frac=$(awk -v r="${r:-0}" -v n="${native:-0}" 'BEGIN { if (n > 0) printf "%.3f", r / n; else print 0 }')
        check "liar holding $1 ms of every $(($1 + $2)) (0: first in line, never taking): the honest share-50 slice ran at $frac of native (want >= 0.45)" \
                awk -v f="$frac" 'BEGIN { exit !(f >= 0.45) }' || tail -3 "$OUTDIR/liar-$1-$2.txt"
        rm -rf "$D"
done
finish
