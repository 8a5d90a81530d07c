#!/usr/bin/env bash
# Real-GPU checks, the one entry point on the GPU host:  bash tests/gpu/run.sh [BUILD_DIR]
# (prepare what it carries first: tests/gpu/prepare.sh BUILD_DIR). GS_GPU_BENCH=0 skips the
# benchmarks (bench/run.sh, bench/configure.sh, bench/vgpu.sh, bench/hook.sh).
# GS_GPU_ONLY=LIST (comma-separated) runs only those parts (unset: every part): multigpu (issue 25:
# two GPUs, tests/gpu/multigpu_check.sh and a container of GPU 1 through the hook), list (issue 2:
# info, list, NVML probe), configure (issue 3), quota (issue 4: the interposer), hook (issue 8: the OCI hook and
# CDI under runc), compute (issue 9: the compute limiter, bench/compute_limit.sh; seconds per run
# in GS_COMPUTE_SECONDS, default 3), ctcompute (issue 9 in containers: two compute slices taking
# turns, one through MPS, under runc and the hook), metrics (issue 10: gpuslice metrics against two
# slices, tests/gpu/metrics_check.sh), latency (issues 20 and 32: bench/latency.sh, every shape
# or GS_LATENCY_SHAPES (comma-separated: req4,req20,graph,two,coop,equal2,equal8,equal8h,torch,torch2,steady),
# seconds per run in GS_LATENCY_SECONDS (default 5), runs GS_LATENCY_RUNS (1), configurations
# GS_LATENCY_CONFIGS (alone,none,share,cap,high; mps adds MPS), GS_LATENCY_TIMELINE=0 leaves out the
# kernel timelines and turn logs; ~8.5 min for every shape once), spatial (issue 32, item 6: the
# spatial-split experiment, bench/spatial/run.sh, ~1 min), mps (issue 20: tests/gpu/mps_slice_check.sh), k8s (issue 12: the device plugin's Allocate answer for a
# 4 GiB share, as a container), shim (issue 24: runc through the runtime shim, legacy and cdi modes,
# a 4 GiB slice; bench/runtime_shim.sh), resize (issue 25: a running PyTorch slice resized live,
# tests/gpu/resize_check.sh), dra (issue 23: gpuslice dra-plugin, a 4 Gi / 30 % claim prepared and
# run under runc, tests/gpu/dra_check.sh), liar (issue 31: an honest share-50 slice beside a
# neighbour lying in its arbiter record keeps 0.9 of its share, tests/gpu/liar_check.sh, ~40 s),
# bench (bench/run.sh); the benchmark of a part
# runs with it. A part asked for that cannot run (a carried binary, runc, the kubelet probe
# missing; multigpu named in GS_GPU_ONLY on a host of one GPU) is a FAIL that names what is
# missing; a part not asked for is a counted SKIP, and so is multigpu in a run of every part on a
# host of one GPU (what the host cannot have); a part that ran no check is a FAIL, and so is a run
# that ran none. The sub-scripts (tests/gpu/*_check.sh) count their own checks (tests/gpu/lib.sh):
# each of their PASS/FAIL/SKIP lines is counted here, and an exit status that disagrees with their
# count (a crash, an early exit, 0 after a FAIL) is one FAIL more.
# Without an NVIDIA GPU it exits 77, which meson (and `make test`) report as SKIPPED.
# Results and raw outputs go to $OUT (or a temp dir); the last line is
# "N passed, N failed, N skipped".
set -uo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/../.."
if [ ! -e /dev/nvidiactl ] || ! command -v nvidia-smi >/dev/null 2>&1; then
        echo "SKIP: no NVIDIA GPU here (no /dev/nvidiactl or nvidia-smi): real-GPU checks not run"
        exit 77
fi
OUTDIR=${OUT:-$(mktemp -d)}
mkdir -p "$OUTDIR"
GS=$BUILD/gpuslice
# The build comes from Debian 12; bring its runtime libraries where the host lacks them.
if [ -d "$BUILD/runtime-libs" ]; then
        for l in "$BUILD"/runtime-libs/*.so*; do
                ldconfig -p | grep -q "$(basename "$l")" || { export LD_LIBRARY_PATH="$PWD/$BUILD/runtime-libs:${LD_LIBRARY_PATH:-}"; break; }
        done
fi
. tests/gpu/lib.sh # check, skip, sub; the totals pass, fail, skipped
PARTS="list configure quota hook shim ctcompute k8s compute latency spatial mps metrics resize multigpu dra liar bench"
only() { [ -z "${GS_GPU_ONLY:-}" ] || [[ ",$GS_GPU_ONLY," == *",$1,"* ]]; }
# part NAME: whether part NAME was asked for (GS_GPU_ONLY names it, or is unset); one not asked
# for is a counted SKIP
part() { only "$1" && return 0; skip "part $1: not asked for (GS_GPU_ONLY=$GS_GPU_ONLY)"; return 1; }
# have PART FILE...: the files PART needs are there (executable; a .so or .sh present); if not,
# one FAIL naming the missing ones
have() {
        local p=$1 f absent=(); shift
        for f in "$@"; do
                case $f in *.so | *.sh) [ -e "$f" ] ;; *) [ -x "$f" ] ;; esac || absent+=("$f")
        done
        [ ${#absent[@]} -eq 0 ] && return 0
        check "$p: cannot run: missing ${absent[*]} (tests/gpu/prepare.sh BUILD carries them)" false; return 1
}
# part_done PART MARK: PART, begun when pass + fail was MARK, ran at least one check
part_done() { [ $((pass + fail)) -gt "$2" ] || check "$1: the part ran no check" false; }
GS_GPU_ONLY=${GS_GPU_ONLY:-}
for p in ${GS_GPU_ONLY//,/ }; do
        [[ " $PARTS " == *" $p "* ]] || check "GS_GPU_ONLY names a part: '$p' is not one of: $PARTS" false
done

echo "== host: $(uname -r), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
# multigpu needs two GPUs: on a host of one, named in GS_GPU_ONLY it is a part asked for that
# cannot run (a FAIL), in a run of every part a SKIP; either way neither of its halves runs
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
MULTIGPU=0
if only multigpu && [ "$NGPU" -ge 2 ]; then MULTIGPU=1
elif [ -n "$GS_GPU_ONLY" ] && only multigpu; then
        check "multigpu: cannot run: this host has $NGPU GPU(s), the part needs two (GS_GPU_ONLY=$GS_GPU_ONLY asks for it)" false
elif only multigpu; then skip "part multigpu: this host has $NGPU GPU(s), the part needs two"; fi

# --- issue 2: info agrees with nvidia-smi -q ------------------------------------------------
if part list; then
        "$GS" info --json >"$OUTDIR/info.json" 2>"$OUTDIR/info.err"; echo "info --json rc=$?"
        "$GS" info >"$OUTDIR/info.txt" 2>&1
        "$GS" info --csv >"$OUTDIR/info.csv" 2>&1
        nvidia-smi -q >"$OUTDIR/nvidia-smi-q.txt"
        cat "$OUTDIR/info.txt"
        info_matches_smi() {
                python3 - "$OUTDIR/info.json" "$OUTDIR/nvidia-smi-q.txt" <<'PY'
import json, re, sys
info = json.load(open(sys.argv[1]))
q = open(sys.argv[2]).read()
def top(key):
    m = re.search(r'^%s\s*:\s*(.+)$' % re.escape(key), q, re.M)
    return m.group(1).strip() if m else None
ok = True
def expect(what, got, want):
    global ok
    good = str(got).lower() == str(want).lower()
    print(("  ok   " if good else "  BAD  ") + "%s: gpuslice=%s nvidia-smi=%s" % (what, got, want))
    ok &= good
expect("driver version", info["driver"]["version"], top("Driver Version"))
expect("cuda version", info["driver"]["cuda_version"], top("CUDA Version"))
blocks = re.split(r'^GPU (?=[0-9A-Fa-f]{8}:)', q, flags=re.M)[1:]
expect("gpu count", len(info["gpus"]), len(blocks))
for g, b in zip(info["gpus"], blocks):
    uuid = re.search(r'^\s+GPU UUID\s*:\s*(\S+)', b, re.M).group(1)
    bus = re.search(r'^\s+Bus Id\s*:\s*(\S+)', b, re.M).group(1)
    fb = re.search(r'FB Memory Usage\s*\n\s+Total\s*:\s*(\d+) MiB', b).group(1)
    expect("gpu %d uuid" % g["index"], g["uuid"], uuid)
    expect("gpu %d bus id" % g["index"], g["bus_id"], bus)
    expect("gpu %d memory MiB" % g["index"], g["memory_total_bytes"] // (1 << 20), fb)
sys.exit(0 if ok else 1)
PY
        }
        check "info --json agrees with nvidia-smi -q" info_matches_smi

        # --- issue 2: list names only existing files and the essentials ------------------------------
        "$GS" list >"$OUTDIR/list.txt" 2>"$OUTDIR/list.err"; echo "list rc=$?"
        cat "$OUTDIR/list.txt" "$OUTDIR/list.err"
        list_files_exist() {
                local missing=0
                while IFS= read -r p; do [ -e "$p" ] || { echo "  missing: $p"; missing=1; }; done <"$OUTDIR/list.txt"
                [ -s "$OUTDIR/list.txt" ] && [ "$missing" -eq 0 ]
        }
        list_has() { grep -Eq "$1" "$OUTDIR/list.txt" || { echo "  not listed: $1"; return 1; }; }
        list_has_essentials() {
                local rc=0
                for re in '/libcuda\.so\.' '/libnvidia-ml\.so\.' '/libnvidia-ptxjitcompiler\.so\.' '/nvidia-smi$' \
                        '^/dev/nvidiactl$' '^/dev/nvidia0$' '^/dev/nvidia-uvm$' '^/dev/nvidia-uvm-tools$'; do
                        list_has "$re" || rc=1
                done
                return $rc
        }
        check "list names only files that exist" list_files_exist
        check "list includes libcuda, libnvidia-ml, ptxjitcompiler, nvidia-smi, /dev nodes" list_has_essentials
        "$GS" list --json >"$OUTDIR/list.json" 2>&1
        GPUSLICE_DETECT=nvml "$GS" list >"$OUTDIR/list.nvml.txt" 2>&1
        check "list from procfs equals list from NVML (GPUSLICE_DETECT=nvml)" diff -u "$OUTDIR/list.nvml.txt" "$OUTDIR/list.txt"
        check "list --device 0 --require cuda>=12.0 passes" "$GS" list --device 0 --require 'cuda>=12.0' -l
        req_fails() { ! "$GS" list --device 0 --require 'cuda>=99.0' -l >/dev/null 2>"$OUTDIR/req.err" && grep -q 'unsatisfied condition: cuda>=99.0' "$OUTDIR/req.err"; }
        check "list --require cuda>=99.0 fails with nvidia's message" req_fails

        # --- the simulated GPU must answer NVML edge cases as this driver does ---------------------------
        if have list "$BUILD/tests/fakegpu/nvml-probe"; then
                "$BUILD/tests/fakegpu/nvml-probe" >"$OUTDIR/nvml-probe.real.txt" 2>&1
                check "real NVML answers the edge-case probe as recorded (fake is diffed against it)" \
                        diff -u tests/gpu/nvml-probe.real.txt "$OUTDIR/nvml-probe.real.txt"
        fi
        # The CUDA driver's answers, recorded for the fake (tests/gpu/cuda-probe.real.txt is updated
        # from it by hand): among its measurements ('~' lines) the descriptors the driver opens.
        if [ -x "$BUILD/tests/fakegpu/cuda-probe" ]; then
                "$BUILD/tests/fakegpu/cuda-probe" >"$OUTDIR/cuda-probe.real.txt" 2>&1
        fi
        # Facts the fake driver root imitates (recorded for comparison).
        {
                echo "## /proc/devices (nvidia)"; grep -i nvidia /proc/devices
                echo "## capabilities"; find /proc/driver/nvidia/capabilities | head -40
                echo "## /proc/driver/nvidia"; ls -la /proc/driver/nvidia /proc/driver/nvidia/gpus/* 2>&1
                echo "## ldconfig -p (nvidia/cuda)"; ldconfig -p | grep -Ei 'nvidia|cuda' | head -60
                echo "## PATH=$PATH"; command -v nvidia-smi
                echo "## debug log of list"; "$GS" --debug "$OUTDIR/list.debug" list >/dev/null 2>&1; cat "$OUTDIR/list.debug"
        } >"$OUTDIR/facts.txt" 2>&1
fi

# --- issue 3: configure a real container, then CUDA and nvidia-smi inside it -----------------
CARRY=$BUILD/gpu-carry
want_configure=; part configure && want_configure=1
if [ -n "$want_configure" ] && have configure "$CARRY/cuda_smoke" "$CARRY/busybox"; then
        R=/tmp/gs-gpu-rootfs
        rm -rf "$R" "$R.pid"
        BUSYBOX=$CARRY/busybox tests/integration/mkrootfs.sh "$R"
        cp "$CARRY/cuda_smoke" "$R/cuda_smoke"
        ( exec unshare -m --propagation private -- sh -c "mount --bind $R $R && mount -t proc proc $R/proc && echo \$\$ > $R.pid && exec sleep 300" ) >/dev/null 2>&1 &
        for _ in $(seq 50); do [ -s "$R.pid" ] && break; sleep 0.1; done
        P=$(cat "$R.pid")
        check "configure --compute --utility --device 0 into a container" \
                "$GS" --debug "$OUTDIR/configure.debug" configure --pid "$P" --compute --utility --device 0 "$R"
        in_ct() { nsenter -t "$P" -m chroot "$R" "$@"; }
        in_ct /cuda_smoke >"$OUTDIR/cuda_smoke.txt" 2>&1; rc=$?; cat "$OUTDIR/cuda_smoke.txt"
        check "CUDA device query + saxpy kernel in the container" test "$rc" = 0
        in_ct /usr/bin/nvidia-smi -L >"$OUTDIR/smi_in_container.txt" 2>&1; rc=$?; cat "$OUTDIR/smi_in_container.txt"
        check "nvidia-smi -L in the container" test "$rc" = 0
        smi_matches() { grep -q "$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1)" "$OUTDIR/smi_in_container.txt"; }
        check "... shows the host GPU's UUID" smi_matches
        in_ct /bin/sh -c 'ls /proc/driver/nvidia/gpus; grep ModifyDeviceFiles /proc/driver/nvidia/params; ldconfig -p | grep -c nvidia' >"$OUTDIR/ct_state.txt" 2>&1
        nsenter -t "$P" -m cat /proc/self/mountinfo | grep "$R" >"$OUTDIR/ct_mounts.txt"
        kill "$P" 2>/dev/null
fi
# The container pieces on this kernel (pure cgroup v2, Ubuntu's ldconfig): a unit test whose
# cases all skipped exits 77, a FAIL here; its skipped cases ("skip - " lines) are counted.
for t in cgroup mount ldconfig; do
        [ -n "$want_configure" ] || break
        have configure "$BUILD/tests/unit/test_$t" || continue # (a build with -Dtests=true)
        GS_BUSYBOX=$(realpath -m "$CARRY/busybox") "$BUILD/tests/unit/test_$t" >"$OUTDIR/unit_$t.txt" 2>&1; rc=$?
        tail -3 "$OUTDIR/unit_$t.txt"
        while IFS= read -r line; do skip "unit test_$t: ${line#skip - }"; done < <(grep '^skip - ' "$OUTDIR/unit_$t.txt")
        check "unit tests of src/container/$t.c on this host" test "$rc" = 0
done
if [ -n "$want_configure" ] && [ "${GS_GPU_BENCH:-1}" != 1 ]; then
        skip "configure benchmark: GS_GPU_BENCH=$GS_GPU_BENCH"
elif [ -n "$want_configure" ] && have configure bench/configure.sh "$CARRY/busybox"; then
        BUSYBOX=$CARRY/busybox bench/configure.sh "$BUILD" 20 50 / | tee "$OUTDIR/bench_configure.txt"
        check "50 concurrent configures all succeed" test "${PIPESTATUS[0]}" = 0
fi

# --- the context allowance of the fill checks (quota, hook, k8s) -------------------------------
# A slice's quota covers the CUDA context too, so a program filling a Q MiB slice gets Q less its
# context. What it filled is held against this host's context, measured here without gpuslice
# (a native cuda_fill holding 1 MiB: NVML's count for it less that 1 MiB; 518 MiB on the H100 and
# H200, driver 580), not against NVML's count for the sliced process: "filled >= Q - (used -
# filled) - 1 %" reduces to "used >= Q - 1 %", where filled cancels out.
CTX_MIB=
context_mib() {
        [ -n "$CTX_MIB" ] && return 0
        local o=$OUTDIR/context.txt p used
        GS_FILL_CAP_MIB=1 "$CARRY/cuda_fill" 3 >"$o" 2>&1 &
        p=$!
        for _ in $(seq 100); do grep -q filled "$o" && break; sleep 0.1; done
        used=$(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits | awk -F', ' -v p="$p" '$1 == p {print $2}')
        wait "$p"
        cat "$o"
        if grep -q '^filled 1 MiB' "$o" && [ -n "$used" ] && [ "$used" -gt 1 ] && [ "$used" -lt 2048 ]; then CTX_MIB=$((used - 1)); fi
        check "a native CUDA context measured: NVML counts ${used:-?} MiB for a process holding 1 MiB (context ${CTX_MIB:-?} MiB)" \
                test -n "$CTX_MIB"
}
# fill_ok FILLED: what the program filled (MiB) >= Q - CTX_MIB - 1 % of Q (41 MiB of 4 GiB: another
# CUDA runtime's context, or one in a container, may differ a little from the native one). A
# missing "filled" line or a failed measurement fails.
fill_ok() { [ -n "$1" ] && [ -n "$CTX_MIB" ] && [ "$1" -ge $((Q - CTX_MIB - (Q + 99) / 100)) ]; }
# quota_held FILLED USED: fill_ok, and NVML's count USED for the process within the quota
quota_held() { [ -n "$2" ] && [ "$2" -le "$Q" ] && fill_ok "$1"; }

# --- issue 4: the memory quota on the real GPU ----------------------------------------------
if part quota && have quota "$CARRY/cuda_fill" "$BUILD/libgpuslice-vgpu.so"; then
        Q=4096
        context_mib
        "$GS" exec --memory 4Gi -- "$CARRY/cuda_fill" 4 >"$OUTDIR/fill.txt" 2>&1 &
        for _ in $(seq 100); do grep -q filled "$OUTDIR/fill.txt" && break; sleep 0.1; done
        fp=$(pgrep -x cuda_fill | head -1)
        nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits >"$OUTDIR/fill_nvml.txt"
        wait
        cat "$OUTDIR/fill.txt" "$OUTDIR/fill_nvml.txt"
        filled=$(awk '/^filled/ {print $2}' "$OUTDIR/fill.txt")
        used=$(awk -F', ' -v p="$fp" '$1 == p {print $2}' "$OUTDIR/fill_nvml.txt")
        echo "quota $Q MiB: filled $filled MiB, NVML counts $used MiB for the process (context $((used - filled)) MiB)"
        check "4 GiB quota: NVML's per-process count never passes the quota ($used <= $Q MiB)" test "${used:-99999}" -le $Q
        check "4 GiB quota: filled >= quota - context - 1% (${filled:-?} >= $Q - ${CTX_MIB:-?} - 41)" fill_ok "$filled"
        "$GS" exec --memory 4Gi -- python3 tests/gpu/torch_quota.py $((4 << 30)) >"$OUTDIR/torch_quota.txt" 2>&1; rc=$?
        cat "$OUTDIR/torch_quota.txt"
        check "PyTorch: mem_get_info shows the quota, past it OutOfMemoryError, within it works" test "$rc" = 0
        SR=/dev/shm/gs-gpu-share-$$
        GS_FILL_CAP_MIB=1536 "$GS" exec --memory 4Gi --region "$SR" -- "$CARRY/cuda_fill" 6 >"$OUTDIR/share1.txt" 2>&1 &
        for _ in $(seq 100); do grep -q filled "$OUTDIR/share1.txt" && break; sleep 0.1; done
        "$GS" exec --memory 4Gi --region "$SR" -- "$CARRY/cuda_fill" 2 >"$OUTDIR/share2.txt" 2>&1 &
        for _ in $(seq 100); do grep -q filled "$OUTDIR/share2.txt" && break; sleep 0.1; done
        nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits >"$OUTDIR/share_nvml.txt"
        wait; rm -f "$SR"
        cat "$OUTDIR/share1.txt" "$OUTDIR/share2.txt" "$OUTDIR/share_nvml.txt"
        both=$(awk -F', ' '{s += $2} END {print s + 0}' "$OUTDIR/share_nvml.txt")
        check "two processes share one 4 GiB quota: NVML counts $both MiB for both (<= $Q)" test "$both" -le $Q
        check "... and together they reach it (>= $((Q - 41)) MiB)" test "$both" -ge $((Q - 41))
        "$GS" exec --memory 4Gi --region "$SR.full" -- "$CARRY/cuda_fill" 6 >"$OUTDIR/full1.txt" 2>&1 &
        for _ in $(seq 100); do grep -q filled "$OUTDIR/full1.txt" && break; sleep 0.1; done
        "$GS" exec --memory 4Gi --region "$SR.full" -- "$CARRY/cuda_fill" 0 >"$OUTDIR/full2.txt" 2>&1
        nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits >"$OUTDIR/full_nvml.txt"
        wait; rm -f "$SR.full"
        cat "$OUTDIR/full2.txt" | tail -2
        full=$(awk -F', ' '{s += $2} END {print s + 0}' "$OUTDIR/full_nvml.txt")
        check "a process starting in a full slice gets no context beyond the quota (NVML: $full MiB)" test "$full" -gt 0 -a "$full" -le $Q
        check "... and the second one got memory too" test "$(awk '/^filled/ {print $2}' "$OUTDIR/share2.txt")" -gt 0
        smi_total=$("$GS" exec --memory 4Gi -- nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
        check "nvidia-smi in the slice shows the quota ($smi_total MiB)" test "$smi_total" = $Q
        "$GS" exec --memory 4Gi -- nvidia-smi >"$OUTDIR/smi_slice.txt" 2>&1
        grep -E "MiB" "$OUTDIR/smi_slice.txt" | head -3

        # Every CUDA runtime we can build (tests/gpu/prepare.sh): 11.8 and 12.4 from Debian, 13.0;
        # static and shared cudart, and the per-thread default stream (the _ptsz/_ptds entry points).
        have quota "$CARRY"/cudart_paths-* # (unmatched, the pattern itself: missing)
        for b in "$CARRY"/cudart_paths-*; do
                [ -x "$b" ] || continue
                v=${b##*/cudart_paths-}
                "$GS" exec --memory 4Gi -- "$b" $Q >"$OUTDIR/paths-$v.txt" 2>&1; rc=$?
                head -1 "$OUTDIR/paths-$v.txt"; grep FAIL "$OUTDIR/paths-$v.txt"
                check "CUDA runtime $v: quota views, kernel, 8 allocation paths charged and released, OOM past the quota" \
                        test "$rc" = 0
        done
        for b in "$CARRY"/cuda_fill-*; do
                [ -x "$b" ] || continue
                v=${b##*/cuda_fill-}
                "$GS" exec --memory 4Gi -- "$b" 3 >"$OUTDIR/fill-$v.txt" 2>&1 &
                for _ in $(seq 100); do grep -q filled "$OUTDIR/fill-$v.txt" && break; sleep 0.1; done
                fp=$(pgrep -f "^[^ ]*gpu-carry/cuda_fill-$v" | head -1)
                used=$(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits | awk -F', ' -v p="$fp" '$1 == p {print $2}')
                wait
                filled=$(awk '/^filled/ {print $2}' "$OUTDIR/fill-$v.txt")
                echo "runtime $v: filled $filled MiB, NVML counts ${used:-?} MiB"
                check "CUDA runtime $v: filled ${filled:-?} MiB of 4 GiB (>= $Q - ${CTX_MIB:-?} - 41), NVML counts ${used:-?} MiB (<= $Q)" \
                        quota_held "$filled" "$used"
        done

        # Other frameworks, where the host has them: CuPy and JAX see the quota and hit OOM past it.
        if python3 -c 'import cupy' 2>/dev/null; then
                "$GS" exec --memory 4Gi -- python3 - >"$OUTDIR/cupy.txt" 2>&1 <<'PY'
import cupy
f, t = cupy.cuda.runtime.memGetInfo()
assert t == 4 << 30, t
try:
    cupy.empty(5 << 30, dtype=cupy.uint8)
    raise SystemExit("5 GiB not refused")
except cupy.cuda.memory.OutOfMemoryError:
    pass
a = cupy.ones(1 << 28, dtype=cupy.uint8)
assert int(a.sum()) == 1 << 28
print("cupy", cupy.__version__, "runtime", cupy.cuda.runtime.runtimeGetVersion(), "total", t, "free", f)
PY
                rc=$?; tail -1 "$OUTDIR/cupy.txt"
                check "CuPy: memGetInfo shows the quota, 5 GiB raises OutOfMemoryError, 256 MiB works" test "$rc" = 0
        else
                skip "quota: CuPy: this host's python3 has no cupy"
        fi
        if python3 -c 'import jax' 2>/dev/null; then
                "$GS" exec --memory 4Gi -- python3 - >"$OUTDIR/jax.txt" 2>&1 <<'PY'
import jax, jax.numpy as jnp
lim = jax.devices()[0].memory_stats()["bytes_limit"]
assert 0 < lim <= 4 << 30, lim   # JAX preallocates a fraction of what cuMemGetInfo reports
x = jnp.ones((1024, 1024))
assert float(x.sum()) == 1024 * 1024
try:
    jnp.ones((2 << 30,), dtype=jnp.float32).block_until_ready()
    raise SystemExit("8 GiB not refused")
except Exception as e:
    if "RESOURCE_EXHAUSTED" not in str(e):
        raise
print("jax", jax.__version__, "bytes_limit", lim)
PY
                rc=$?; tail -1 "$OUTDIR/jax.txt"
                check "JAX: its allocator is sized from the quota, 8 GiB raises RESOURCE_EXHAUSTED" test "$rc" = 0
        else
                skip "quota: JAX: this host's python3 has no jax"
        fi

        # In a container's own pid namespace the driver reports container pids (measured here:
        # NVML inside gives the namespace pid), so the reconciler still finds its own count.
        unshare -pf --mount-proc env GPUSLICE_LOG_LEVEL=3 "$GS" exec --memory 4Gi -- "$CARRY/cuda_fill" 3 >"$OUTDIR/pidns.txt" 2>&1 &
        for _ in $(seq 100); do grep -q filled "$OUTDIR/pidns.txt" && break; sleep 0.1; done
        nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits >"$OUTDIR/pidns_nvml.txt"
        wait
        grep -E "driver counts|filled" "$OUTDIR/pidns.txt" | head -3
        ns_used=$(awk -F', ' '{s += $2} END {print s + 0}' "$OUTDIR/pidns_nvml.txt")
        check "in a pid namespace the reconciler finds the driver's count for its process" \
                grep -qE "driver counts [1-9][0-9]* bytes for us" "$OUTDIR/pidns.txt"
        check "... and the 4 GiB quota holds there (NVML: $ns_used MiB)" test "$ns_used" -le $Q -a "$ns_used" -gt 0
        if [ "${GS_GPU_BENCH:-1}" != 1 ]; then
                skip "quota benchmark (bench/vgpu.sh): GS_GPU_BENCH=$GS_GPU_BENCH"
        elif have quota "$CARRY/vgpu_bench"; then
                bench/vgpu.sh "$BUILD" 2>&1 | tee "$OUTDIR/bench_vgpu.txt"
        fi
fi

# --- issue 8: the OCI hook and CDI on the real GPU ------------------------------------------
# runc (Debian's, carried) runs three containers: (a) with `gpuslice-hook` (the lean hook) as prestart and
# poststop hooks in config.json and the NVIDIA/slice env contract in process.env, then the same
# without GPUSLICE_MEMORY_LIMIT (control); (b) with the edits of the CDI device
# nvidia.com/gpu=0-4g from `gpuslice cdi generate`, applied by tests/gpu/cdi_apply.py as a
# CDI-aware runtime would. Each runs /check.sh (KEY=VALUE lines, then cuda_fill, then DONE);
# outputs in $OUTDIR/hook-*.txt.
RUNC=${GS_RUNC:-$(readlink -f "$CARRY")/runc/runc}
want_ct=0 can_ct=1
for p in hook shim ctcompute k8s multigpu; do
        part "$p" || continue
        [ "$p" = multigpu ] && [ "$MULTIGPU" = 0 ] && continue
        want_ct=1
        have "$p" "$RUNC" "$CARRY/cuda_fill" "$CARRY/busybox" "$BUILD/libgpuslice-vgpu.so" "$BUILD/gpuslice-hook" || can_ct=0
done
if [ "$want_ct" = 1 ] && [ "$can_ct" = 1 ]; then
        HW=$(mktemp -d /tmp/gs-gpu-hook.XXXXXX)
        HSTATE=$HW/runc-state SLICES=/run/gpuslice/slices
        made_run=; [ -e /run/gpuslice ] || made_run=1   # the CDI slice hooks use the default regions-dir
        hook_ids=()
        hook_cleanup() {
                local id
                for id in "${hook_ids[@]}"; do
                        "$RUNC" --root "$HSTATE" delete -f "$id" >/dev/null 2>&1
                        rm -rf "${SLICES:?}/$id"
                done
                for id in /sys/fs/cgroup/gs-gpu-*-$$ /sys/fs/cgroup/*/gs-gpu-*-$$; do [ -d "$id" ] && rmdir "$id" 2>/dev/null; done
                rm -rf "$HW" "/tmp/gs-carried-runc-$(id -u)"
                [ -n "$made_run" ] && rmdir "$SLICES" /run/gpuslice 2>/dev/null
                return 0
        }
        trap hook_cleanup EXIT
        Q=4096
        GSA=$(readlink -f "$GS") VLIB=$(readlink -f "$BUILD/libgpuslice-vgpu.so") ODA=$(readlink -f "$OUTDIR")
        HOSTMEM=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
        "$RUNC" --version | head -1
        # Hooks run with the environment their definition gives (here: PATH only). Where this host
        # lacks a library gpuslice or gpuslice-hook links (BUILD/runtime-libs), they also need
        # LD_LIBRARY_PATH. The hooks are the lean gpuslice-hook, as the hook definitions gpuslice
        # writes name it (GSH).
        HOOK_ENV='"PATH=/usr/sbin:/usr/bin:/sbin:/bin"'
        GSH=$GSA-hook
        if ! env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "$GSA" --version >/dev/null 2>&1 ||
                ! env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "$GSH" --version >/dev/null 2>&1; then
                HOOK_LDLP="LD_LIBRARY_PATH=$(readlink -f "$BUILD/runtime-libs")"
                HOOK_ENV="$HOOK_ENV, \"$HOOK_LDLP\""
                echo "  (gpuslice needs $HOOK_LDLP on this host: the hooks get it too)"
        fi
        {
                echo '[driver]'
                # This host's driver binaries live in /usr/local/nvidia/bin (/usr/bin/nvidia-smi is
                # a wrapper script): the admin's search path, as configure gets it from $PATH.
                echo "path = \"$PATH\""
                [ -x /sbin/ldconfig.real ] && echo 'ldconfig = "@/sbin/ldconfig.real"'
                echo '[hook]'
                echo "log-file = \"$ODA/hook-debug.log\""
                echo '[slice]'
                echo "regions-dir = \"$HW/regions\""
                echo "library = \"$VLIB\""
        } >"$HW/config.toml"
        cp "$HW/config.toml" "$OUTDIR/hook-config.toml"
        BUSYBOX=$CARRY/busybox tests/integration/mkrootfs.sh "$HW/base" >/dev/null
        cp "$CARRY/cuda_fill" "$HW/base/cuda_fill"
        # In the container: SMI=nvidia-smi's path, HOLD=cuda_fill's hold (0: no cuda_fill);
        # /links.txt ("TARGET LINK" lines) lists symlinks that must exist.
        cat >"$HW/base/check.sh" <<'EOF'
smi=$1 hold=$2
echo "smi_total=$("$smi" --query-gpu=memory.total --format=csv,noheader,nounits 2>&1 | head -1)"
echo "smi_uuids=$("$smi" --query-gpu=uuid --format=csv,noheader 2>&1 | tr '\n' ' ')"
if [ -e /etc/ld.so.preload ]; then echo "preload=$(tr '\n' ' ' </etc/ld.so.preload)"; else echo "preload=(none)"; fi
if [ -e /etc/gpuslice/slice.conf ]; then echo "slice_conf=$(tr '\n' ' ' </etc/gpuslice/slice.conf)"; else echo "slice_conf=(none)"; fi
if [ -s /links.txt ]; then
        while read -r target link; do
                r=$(readlink "$link")
                if [ "$r" = "$target" ]; then echo "link_ok=$link"; else echo "link_bad=$link -> ${r:-(missing)}, want $target"; fi
        done </links.txt
fi
ldconfig -p >/tmp/ldp.txt 2>&1
echo "ldcache_libcuda=$(grep -c 'libcuda\.so\.1 ' /tmp/ldp.txt)"
grep -E 'libcuda\.so|libnvidia-ml\.so' /tmp/ldp.txt | head -4
if [ "$hold" != 0 ]; then /cuda_fill "$hold"; echo "fill_rc=$?"; fi
echo DONE
EOF
        # mkbundle NAME SMI HOLD JSON-ENV-ITEMS [HOOKS-JSON]: HW/NAME from `runc spec`, edited (its
        # cgroup /gs-gpu-NAME-PID, an absolute path as Docker's and containerd's)
        mkbundle() {
                local b=$HW/$1
                mkdir -p "$b" && cp -a "$HW/base" "$b/rootfs" && (cd "$b" && "$RUNC" spec) || return 1
                python3 - "$b/config.json" "$2" "$3" "[$4]" "${5:-}" "/gs-gpu-$1-$$" <<'PY'
import json, sys
p, smi, hold, env, hooks, cg = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), json.loads(sys.argv[5] or "{}"), sys.argv[6]
c = json.load(open(p))
c["root"] = {"path": "rootfs", "readonly": False}
c["linux"]["cgroupsPath"] = cg
c["process"]["terminal"] = False
c["process"]["args"] = ["/bin/sh", "/check.sh", smi, hold]
c["process"]["env"] = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"] + env
if hooks:
    c["hooks"] = hooks
json.dump(c, open(p, "w"), indent=2)
PY
        }
        # hook_ldlp CONFIG: on this host only (see HOOK_ENV above), our hooks in a CDI-edited
        # config.json also get HOOK_LDLP
        hook_ldlp() {
                [ -n "${HOOK_LDLP:-}" ] || return 0
                python3 - "$1" "$GSA" "$HOOK_LDLP" <<'PY'
import json, sys
p, gs, ldlp = sys.argv[1:4]
c = json.load(open(p))
for hs in c.get("hooks", {}).values():
    for h in hs:
        if h["path"] in (gs, gs + "-hook"):
            h.setdefault("env", []).append(ldlp)
json.dump(c, open(p, "w"), indent=2)
PY
        }
        kv() { awk -v k="$1" 'index($0, k "=") == 1 {print substr($0, length(k) + 2); exit}' "$2"; }
        # runct NAME ID SLICE-DIR: runc run HW/NAME as ID (60 s at most); while cuda_fill holds its
        # memory, NVML's per-process count from the host and whether SLICE-DIR exists
        runct() {
                local o=$OUTDIR/hook-$1.txt rp
                hook_ids+=("$2")
                timeout 60 env ${RUNNER_ENV:-} "${RUNNER:-$RUNC}" --root "$HSTATE" run --bundle "$HW/$1" "$2" </dev/null >"$o" 2>&1 &
                rp=$!
                for _ in $(seq 150); do grep -q '^filled\|^DONE' "$o" && break; kill -0 "$rp" 2>/dev/null || break; sleep 0.1; done
                local fp; fp=$(pgrep -x cuda_fill | head -1)
                nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits >"$OUTDIR/hook-$1-nvml.txt"
                echo "nvml_used=$(awk -F', ' -v p="$fp" '$1 == p {print $2}' "$OUTDIR/hook-$1-nvml.txt")" >"$HW/$1.host"
                if [ -d "$3" ]; then echo "slice_dir_during=yes" >>"$HW/$1.host"; else echo "slice_dir_during=no" >>"$HW/$1.host"; fi
                wait "$rp"; echo "runc_rc=$?" >>"$HW/$1.host"
                if [ -e "$3" ]; then echo "slice_dir_after=yes" >>"$HW/$1.host"; else echo "slice_dir_after=no" >>"$HW/$1.host"; fi
                cat "$o" "$HW/$1.host" | grep -v '^ldp:' | tail -15
        }
        # quota_checks NAME WHAT: the checks every sliced container must pass
        quota_checks() {
                local o=$OUTDIR/hook-$1.txt h=$HW/$1.host filled used
                context_mib
                check "$2: runc run ran the container to its end" test "$(kv runc_rc "$h")" = 0 -a -n "$(grep -x DONE "$o")"
                check "$2: nvidia-smi in the container shows the quota ($(kv smi_total "$o") MiB)" test "$(kv smi_total "$o")" = $Q
                check "$2: /etc/ld.so.preload holds the interposer" grep -q '^preload=.*/usr/lib/gpuslice/libgpuslice-vgpu.so' "$o"
                check "$2: cudaMemGetInfo in the container shows the quota" grep -q "^before: .*total $Q MiB" "$o"
                filled=$(awk '/^filled/ {print $2}' "$o"); used=$(kv nvml_used "$h")
                echo "  quota $Q MiB: filled ${filled:-?} MiB, NVML counts ${used:-?} MiB for the process"
                check "$2: past the quota cudaMalloc fails with out-of-memory" grep -q '^filled .*first refusal: cudaErrorMemoryAllocation' "$o"
                check "$2: NVML's per-process count stays within the quota (${used:-?} <= $Q MiB)" test "${used:-99999}" -le $Q
                check "$2: filled >= quota - context - 1% (${filled:-?} >= $Q - ${CTX_MIB:-?} - 41)" fill_ok "$filled"
                check "$2: the slice directory existed while the container ran" test "$(kv slice_dir_during "$h")" = yes
                check "$2: poststop removed the slice directory" test "$(kv slice_dir_after "$h")" = no
        }
        # dp_container TAG UUID WHAT: gpuslice device-plugin on this host's GPUs (config HW/TAG.toml,
        # sockets HW/TAG-dp) registered by kubelet-probe (the kubelet's side in C: this host's python
        # has no grpcio); its Allocate answer for one 4 GiB share of GPU UUID (OUTDIR/TAG-allocate.json;
        # its CDI device names, env and nvidia-smi path in HW/TAG-facts.txt) applied as a CDI runtime
        # would (the plugin's own spec, the answer's env) to a runc bundle HW/TAG: the quota checks.
        dp_container() {
                local tag=$1 uuid=$2 what=$3 dpp rc id=gs-gpu-$1-$$
                mkdir -p "$HW/$tag-dp"
                { cat "$HW/config.toml"; printf '[device-plugin]\nsocket-dir = "%s"\nresource = ""\n' "$HW/$tag-dp"
                  printf 'slices = ["4g=4Gi"]\ncdi-spec = "%s"\nhook-path = "%s"\nlabel-interval = 0\n' "$HW/$tag-cdi.json" "$GSH"
                } >"$HW/$tag.toml"
                "$GSA" device-plugin --config "$HW/$tag.toml" 2>"$OUTDIR/$tag-plugin.log" &
                dpp=$!
                "$KPROBE" "$HW/$tag-dp" gpuslice.io/4g "$uuid::0" 60 >"$OUTDIR/$tag-allocate.json" 2>"$OUTDIR/$tag-probe.err"
                rc=$?
                kill "$dpp"; wait "$dpp"
                cat "$OUTDIR/$tag-allocate.json" "$OUTDIR/$tag-probe.err"
                check "$what: registered; Allocate of a 4 GiB share answered" test "$rc" = 0
                python3 - "$OUTDIR/$tag-allocate.json" "$HW/$tag-cdi.json" >"$HW/$tag-facts.txt" <<'PY'
import json, sys
a, s = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
print("names=%s" % " ".join(a["cdi_devices"]))
print("env=%s" % ", ".join(json.dumps("%s=%s" % kv) for kv in sorted(a["envs"].items())))
smi = [m["containerPath"] for m in s.get("containerEdits", {}).get("mounts", []) if m["containerPath"].endswith("/nvidia-smi")]
print("smi=%s" % (smi[0] if smi else "/usr/bin/nvidia-smi"))
PY
                cat "$HW/$tag-facts.txt"
                # shellcheck disable=SC2046
                if [ -n "$(kv names "$HW/$tag-facts.txt")" ] &&
                        mkbundle "$tag" "$(kv smi "$HW/$tag-facts.txt")" 3 "$(kv env "$HW/$tag-facts.txt")" &&
                        python3 tests/gpu/cdi_apply.py "$HW/$tag/config.json" "$HW/$tag-cdi.json" -- $(kv names "$HW/$tag-facts.txt"); then
                        hook_ldlp "$HW/$tag/config.json"
                        cp "$HW/$tag/config.json" "$OUTDIR/$tag-config.json"
                        runct "$tag" "$id" "$SLICES/$id"
                fi
                quota_checks "$tag" "$what"
        }
        KPROBE=$BUILD/tests/kubelet-probe
        NV='"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_DRIVER_CAPABILITIES=compute,utility"'
        HOOKS="{\"prestart\": [{\"path\": \"$GSH\", \"args\": [\"gpuslice-hook\", \"--config\", \"$HW/config.toml\", \"prestart\"], \"env\": [$HOOK_ENV]}],
                \"poststop\": [{\"path\": \"$GSH\", \"args\": [\"gpuslice-hook\", \"--config\", \"$HW/config.toml\", \"poststop\"], \"env\": [$HOOK_ENV]}]}"

        if only hook; then
        mark=$((pass + fail))
        # (a) the OCI hook: a 4 GiB slice of GPU 0
        id=gs-gpu-hook-$$
        mkbundle hook /usr/bin/nvidia-smi 3 "$NV, \"GPUSLICE_MEMORY_LIMIT=4Gi\"" "$HOOKS" && runct hook "$id" "$HW/regions/$id"
        quota_checks hook "OCI hook"
        # the control: no GPUSLICE_MEMORY_LIMIT, so the whole GPU and no slice
        id=gs-gpu-hook-ctl-$$
        mkbundle ctl /usr/bin/nvidia-smi 0 "$NV" "$HOOKS" && runct ctl "$id" "$HW/regions/$id"
        o=$OUTDIR/hook-ctl.txt
        check "OCI hook, no slice: the container ran" test "$(kv runc_rc "$HW/ctl.host")" = 0 -a -n "$(grep -x DONE "$o")"
        check "OCI hook, no slice: nvidia-smi shows the whole GPU ($(kv smi_total "$o") = $HOSTMEM MiB)" test "$(kv smi_total "$o")" = "$HOSTMEM"
        check "OCI hook, no slice: no /etc/ld.so.preload, no slice file, no slice directory" test "$(kv preload "$o")" = "(none)" \
                -a "$(kv slice_conf "$o")" = "(none)" -a "$(kv slice_dir_during "$HW/ctl.host")" = no

        # (b) CDI: the spec, its device 0-4g applied to a plain bundle
        "$GSA" cdi generate --format json --slice 4g=4Gi >"$OUTDIR/cdi.json" 2>"$OUTDIR/cdi.err"; rc=$?
        cat "$OUTDIR/cdi.err"
        check "cdi generate --format json --slice 4g=4Gi" test "$rc" = 0
        python3 tests/gpu/cdi_apply.py --list "$OUTDIR/cdi.json" >"$OUTDIR/cdi-devices.txt" 2>&1; cat "$OUTDIR/cdi-devices.txt"
        check "the spec loads as a CDI runtime loads it and offers nvidia.com/gpu=0, =all, =0-4g" \
                test "$(grep -cxE 'nvidia.com/gpu=(0|all|0-4g)' "$OUTDIR/cdi-devices.txt")" = 3
        # What the container must then have: every create-symlinks link, nvidia-smi's path
        python3 - "$OUTDIR/cdi.json" "$HW/cdi-links.txt" >"$HW/cdi-facts.txt" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
edits = [s.get("containerEdits", {})] + [d["containerEdits"] for d in s["devices"] if d["name"] == "0-4g"]
hooks = [h for e in edits for h in e.get("hooks", [])]
bad = [h.get("args", [h["path"]])[:3] for h in hooks if not h.get("env")]
print("hooks_without_env=%d" % len(bad))
links = []
for h in hooks:
    a = h.get("args", [])
    if "create-symlinks" in a:
        links += [a[i + 1] for i, x in enumerate(a) if x == "--link" and i + 1 < len(a)]
with open(sys.argv[2], "w") as f:
    for l in links:
        t, _, n = l.partition("::")
        f.write("%s %s\n" % (t, n))
print("links=%d" % len(links))
smi = [m["containerPath"] for e in edits for m in e.get("mounts", []) if m["containerPath"].endswith("/nvidia-smi")]
print("smi=%s" % (smi[0] if smi else "/usr/bin/nvidia-smi"))
print("hook_names=%s" % ",".join(sorted(set(h["hookName"] for h in hooks))))
print("hook_paths=%s" % ",".join(sorted(set(h["path"] for h in hooks))))
PY
        cat "$HW/cdi-facts.txt"
        check "every hook in the spec has an explicit env" test "$(kv hooks_without_env "$HW/cdi-facts.txt")" = 0
        check "every hook in the spec runs the lean hook beside gpuslice ($(kv hook_paths "$HW/cdi-facts.txt"))" \
                test "$(kv hook_paths "$HW/cdi-facts.txt")" = "$GSH"
        # what the lean hook maps on this host: its libraries (DT_NEEDED, resolved here)
        ldd "$GSH" >"$OUTDIR/gpuslice-hook-ldd.txt" 2>&1; ldd "$GSA" >"$OUTDIR/gpuslice-ldd.txt" 2>&1
        check "gpuslice-hook loads only libc, json-c, libcap, libseccomp here ($(awk '{print $1}' "$OUTDIR/gpuslice-hook-ldd.txt" | tr '\n' ' '))" \
                test -z "$(awk '{print $1}' "$OUTDIR/gpuslice-hook-ldd.txt" | grep -vE '^(linux-vdso\.so\.1|/lib64/ld-linux-x86-64\.so\.2|libc\.so\.6|libjson-c\.so\.5|libcap\.so\.2|libseccomp\.so\.2)$')"
        id=gs-gpu-cdi-$$
        if mkbundle cdi "$(kv smi "$HW/cdi-facts.txt")" 3 "" && cp "$HW/cdi-links.txt" "$HW/cdi/rootfs/links.txt" &&
                python3 tests/gpu/cdi_apply.py "$HW/cdi/config.json" "$OUTDIR/cdi.json" -- nvidia.com/gpu=0-4g; then
                hook_ldlp "$HW/cdi/config.json"
                cp "$HW/cdi/config.json" "$OUTDIR/cdi-config.json"
                runct cdi "$id" "$SLICES/$id"
        fi
        quota_checks cdi "CDI nvidia.com/gpu=0-4g"
        o=$OUTDIR/hook-cdi.txt
        check "CDI: the createContainer hooks made every link ($(grep -c '^link_ok=' "$o") of $(kv links "$HW/cdi-facts.txt"))" \
                test "$(grep -c '^link_ok=' "$o")" = "$(kv links "$HW/cdi-facts.txt")" -a "$(grep -c '^link_bad=' "$o")" = 0 \
                -a "$(grep -c '^link_ok=.*/libcuda\.so$' "$o")" -ge 1
        check "CDI: the container's ld.so.cache lists libcuda.so.1 (update-ldcache ran)" test "$(kv ldcache_libcuda "$o")" -ge 1

        if [ "${GS_GPU_BENCH:-1}" != 1 ]; then
                skip "hook benchmark: GS_GPU_BENCH=$GS_GPU_BENCH"
        elif have hook bench/hook.sh "$GSH"; then
                BUSYBOX=$CARRY/busybox bash bench/hook.sh "$BUILD" 20 / | tee "$OUTDIR/bench_hook.txt"
                check "hook benchmark: every hook and configure run succeeded" test "${PIPESTATUS[0]}" = 0
        fi
        part_done hook "$mark"
        fi # only hook

        # (e) issue 24 (GS_GPU_ONLY=shim): runc through the runtime shim (nvidia-container-runtime),
        # a 4 GiB slice of GPU 0: in legacy mode (the shim adds the hook) from the env alone, and in
        # cdi mode from the CDI slice device nvidia.com/gpu=0-4g of a spec in a directory the shim
        # reads, its edits applied by the shim in-process. The quota checks of (a) and (b).
        if only shim && have shim "$BUILD/gpuslice-runtime"; then
        mark=$((pass + fail))
        mkdir -p "$HW/bin" "$HW/cdi-dir"
        ln -sf "$GSA-runtime" "$HW/bin/nvidia-container-runtime"
        # the hooks the shim adds and the spec's hooks run GSW: gpuslice-hook, with this host's
        # LD_LIBRARY_PATH where it needs one (see HOOK_ENV: a wrapper of that name, so the hooks
        # get the lean hook's arguments)
        GSW=$GSH
        if [ -n "${HOOK_LDLP:-}" ]; then
                mkdir -p "$HW/bin/ldlp"
                GSW=$HW/bin/ldlp/gpuslice-hook
                printf '#!/bin/sh\nexport %s\nexec "%s" "$@"\n' "$HOOK_LDLP" "$GSH" >"$GSW"; chmod +x "$GSW"
        fi
        shim_cfg() { # MODE: HW/shim-MODE.toml, the hook config plus [runtime]
                { cat "$HW/config.toml"; printf '[runtime]\nmode = "%s"\nruntimes = ["%s"]\ncdi-spec-dirs = ["%s"]\nhook-path = "%s"\n' \
                        "$1" "$(readlink -f "$RUNC")" "$HW/cdi-dir" "$GSW"; } >"$HW/shim-$1.toml"
        }
        shim_cfg legacy; shim_cfg cdi
        RUNNER=$HW/bin/nvidia-container-runtime
        id=gs-gpu-shimleg-$$
        if mkbundle shimleg /usr/bin/nvidia-smi 3 "$NV, \"GPUSLICE_MEMORY_LIMIT=4Gi\""; then
                RUNNER_ENV="GPUSLICE_CONFIG=$HW/shim-legacy.toml ${HOOK_LDLP:-}" runct shimleg "$id" "$HW/regions/$id"
                cp "$HW/shimleg/config.json" "$OUTDIR/shim-legacy-config.json"
        fi
        quota_checks shimleg "runtime shim, legacy mode"
        check "runtime shim, legacy: it added the prestart hook" \
                grep -q '"args":\["gpuslice-hook","--config","[^"]*shim-legacy.toml","prestart"\]' "$OUTDIR/shim-legacy-config.json"
        "$GSA" cdi generate --format json --slice 4g=4Gi --hook-path "$GSW" --output "$HW/cdi-dir/nvidia.json" 2>"$OUTDIR/shim-cdi.err"
        check "runtime shim, cdi: cdi generate --slice 4g=4Gi into the shim's spec directory" test -s "$HW/cdi-dir/nvidia.json"
        smi=$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); m=[x["containerPath"] for x in s.get("containerEdits",{}).get("mounts",[]) if x["containerPath"].endswith("/nvidia-smi")]; print(m[0] if m else "/usr/bin/nvidia-smi")' "$HW/cdi-dir/nvidia.json")
        id=gs-gpu-shimcdi-$$
        if mkbundle shimcdi "$smi" 3 '"NVIDIA_VISIBLE_DEVICES=nvidia.com/gpu=0-4g"'; then
                RUNNER_ENV="GPUSLICE_CONFIG=$HW/shim-cdi.toml ${HOOK_LDLP:-}" runct shimcdi "$id" "$SLICES/$id"
                cp "$HW/shimcdi/config.json" "$OUTDIR/shim-cdi-config.json"
        fi
        quota_checks shimcdi "runtime shim, cdi mode (nvidia.com/gpu=0-4g)"
        RUNNER= RUNNER_ENV=
        if [ "${GS_GPU_BENCH:-1}" != 1 ]; then
                skip "shim benchmark: GS_GPU_BENCH=$GS_GPU_BENCH"
        elif have shim bench/runtime_shim.sh; then
                HOOK_BIN=$GSW BUSYBOX=$CARRY/busybox RUNC=$(readlink -f "$RUNC") bash bench/runtime_shim.sh "$BUILD" 20 / | tee "$OUTDIR/bench_runtime_shim.txt"
                check "shim benchmark: every run succeeded" test "${PIPESTATUS[0]}" = 0
        fi
        part_done shim "$mark"
        fi # only shim
        # (f) issue 25 (GS_GPU_ONLY=multigpu), on a host of two GPUs or more: the hook with
        # NVIDIA_VISIBLE_DEVICES=1 and a 4 GiB slice, and the device plugin's 4 GiB share of GPU 1:
        # the quota checks, and only GPU 1 inside
        if [ "$MULTIGPU" = 1 ]; then
                mark=$((pass + fail))
                id=gs-gpu-mg-$$
                NV1='"NVIDIA_VISIBLE_DEVICES=1", "NVIDIA_DRIVER_CAPABILITIES=compute,utility"'
                mkbundle mg /usr/bin/nvidia-smi 3 "$NV1, \"GPUSLICE_MEMORY_LIMIT=4Gi\"" "$HOOKS" && runct mg "$id" "$HW/regions/$id"
                quota_checks mg "two GPUs, a container of GPU 1 (NVIDIA_VISIBLE_DEVICES=1) with a slice"
                u1=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | sed -n 2p)
                check "two GPUs: nvidia-smi in that container lists GPU 1 alone ($(kv smi_uuids "$OUTDIR/hook-mg.txt"))" \
                        test "$(kv smi_uuids "$OUTDIR/hook-mg.txt")" = "$u1 "
                # The device plugin on two GPUs: a 4 GiB share of GPU 1 allocated (kubelet-probe),
                # its answer names GPU 1's slice device, and the container it gives runs on GPU 1
                # alone with the quota.
                if have multigpu "$KPROBE"; then
                        dp_container k8s2 "$u1" "two GPUs, the device plugin's 4 GiB share of GPU 1"
                        check "two GPUs, device plugin: the answer names GPU 1's slice device k8s.gpuslice.io/gpu=1-4g" \
                                test "$(kv names "$HW/k8s2-facts.txt")" = "k8s.gpuslice.io/gpu=1-4g"
                        check "two GPUs, device plugin: nvidia-smi in its container lists GPU 1 alone ($(kv smi_uuids "$OUTDIR/hook-k8s2.txt"))" \
                                test "$(kv smi_uuids "$OUTDIR/hook-k8s2.txt")" = "$u1 "
                fi
                part_done multigpu "$mark"
        fi

        # (d) issue 12 (GS_GPU_ONLY=k8s): gpuslice device-plugin on this GPU: its Allocate answer
        # for one 4 GiB share as a container (dp_container): the quota checks of (a) and (b).
        if only k8s && have k8s "$KPROBE"; then
                dp_container k8s "$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1)" \
                        "Kubernetes: the Allocate answer of a 4 GiB share"
                check "device-plugin: the answer names the CDI slice device k8s.gpuslice.io/gpu=0-4g" \
                        test "$(kv names "$HW/k8s-facts.txt")" = "k8s.gpuslice.io/gpu=0-4g"
        fi

        # (c) issue 9 in containers (GS_GPU_ONLY=ctcompute): compute slices under the real hook.
        # Two containers at 30 % and 70 % (share mode) take turns through the arbiter directory the
        # hook mounts; then a 30 % cap-mode container runs through a real MPS daemon (gpuslice mps).
        if only ctcompute && have ctcompute "$CARRY/compute_shapes"; then
                cp "$CARRY/compute_shapes" "$HW/base/compute_shapes"
                printf '%s\n' 'echo "slice_conf=$(tr "\n" " " </etc/gpuslice/slice.conf 2>/dev/null)"' \
                        '/compute_shapes "$1" "$2"; echo "shape_rc=$?"' 'echo DONE' >"$HW/base/compute.sh"
                ctbundle() { # NAME SHAPE SECONDS ENV-ITEMS [CONFIG]: HW/NAME runs /compute.sh SHAPE SECONDS
                        local hooks=${HOOKS//$HW\/config.toml/${5:-$HW/config.toml}}
                        mkbundle "$1" none 0 "$4" "$hooks" && python3 - "$HW/$1/config.json" "$2" "$3" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["process"]["args"] = ["/bin/sh", "/compute.sh", sys.argv[2], sys.argv[3]]
json.dump(c, open(p, "w"), indent=2)
PY
                }
                rate_of() { sed -n 's/^shape=.* rate=\([0-9.]*\).*/\1/p' "$1" | tail -1; }
                native=$("$CARRY/compute_shapes" short 3 2>/dev/null | sed -n 's/.* rate=\([0-9.]*\).*/\1/p')
                for pct in 30 70; do ctbundle "ct$pct" short 3 "$NV, \"GPUSLICE_COMPUTE_LIMIT=$pct\", \"GPUSLICE_COMPUTE_MODE=share\""; done
                hook_ids+=("gs-gpu-ct30-$$" "gs-gpu-ct70-$$")
                timeout 60 "$RUNC" --root "$HSTATE" run --bundle "$HW/ct30" "gs-gpu-ct30-$$" </dev/null >"$OUTDIR/ct30.txt" 2>&1 &
                timeout 60 "$RUNC" --root "$HSTATE" run --bundle "$HW/ct70" "gs-gpu-ct70-$$" </dev/null >"$OUTDIR/ct70.txt" 2>&1 &
                wait
                native2=$("$CARRY/compute_shapes" short 3 2>/dev/null | sed -n 's/.* rate=\([0-9.]*\).*/\1/p')
                cat "$OUTDIR/ct30.txt" "$OUTDIR/ct70.txt"
                r30=$(rate_of "$OUTDIR/ct30.txt") r70=$(rate_of "$OUTDIR/ct70.txt")
                read -r p30 p70 < <(awk -v a="${r30:-0}" -v b="${r70:-0}" -v n1="${native:-0}" -v n2="${native2:-0}" \
                        'BEGIN { n = (n1 + n2) / 2; if (n <= 0) n = 1e99; printf "%.1f %.1f\n", 100 * a / n, 100 * b / n }')
                echo "containers, share 30 % and 70 % together: $p30 % and $p70 % of native (native $native / $native2)"
                check "containers: slice.conf names the arbiter (30 %)" grep -q "^slice_conf=.*GPUSLICE_ARBITER_NAME=gs-gpu-ct30-$$" "$OUTDIR/ct30.txt"
                # (share mode promises at least L: each gets its share within 3 points, and the GPU
                # is not oversold; a slice may also take what the other leaves idle, e.g. while the
                # other container starts, so the 70 % one has no ceiling of its own)
                check "containers: 30 % and 70 % share slices get 30 +- 3 and at least 67, at most 104 together ($p30 / $p70)" \
                        awk -v a="$p30" -v b="$p70" 'BEGIN { exit !(a >= 27 && a <= 33 && b >= 67 && a + b <= 104) }'
                # cap mode through the real MPS daemon, connected by the hook (slice.mps-root)
                MROOT=$HW/mps
                if "$GSA" mps start --device 0 --mps-root "$MROOT" >"$OUTDIR/ct-mps-start.txt" 2>&1; then
                        { cat "$HW/config.toml"; echo "mps-root = \"$MROOT\""; echo 'mps = "auto"'; } >"$HW/config-mps.toml"
                        ctbundle ctmps short 3 "$NV, \"GPUSLICE_COMPUTE_LIMIT=30\"" "$HW/config-mps.toml"
                        hook_ids+=("gs-gpu-ctmps-$$")
                        timeout 60 "$RUNC" --root "$HSTATE" run --bundle "$HW/ctmps" "gs-gpu-ctmps-$$" </dev/null >"$OUTDIR/ctmps.txt" 2>&1
                        cat "$OUTDIR/ctmps.txt"
                        check "containers: the hook connects a 30 % cap slice to the GPU's MPS daemon" \
                                grep -q "^slice_conf=.*GPUSLICE_MPS_PIPE_DIRECTORY=$MROOT/" "$OUTDIR/ctmps.txt"
                        check "containers: ... and the process runs on 38 of 132 SMs" grep -q "^shape=short .* sms=38" "$OUTDIR/ctmps.txt"
                        "$GSA" mps stop --mps-root "$MROOT" >>"$OUTDIR/ct-mps-start.txt" 2>&1
                else
                        cat "$OUTDIR/ct-mps-start.txt"; check "containers: gpuslice mps start" false
                fi
        fi
        # What the containers left, before hook_cleanup removes everything: runc deleted each on
        # its exit (no state under HSTATE), the poststop hook removed each slice directory (the
        # hook config's regions-dir, and the default one the CDI hooks use)
        left=()
        for id in "${hook_ids[@]}"; do
                for d in "$HSTATE/$id" "$HW/regions/$id" "$SLICES/$id"; do [ -e "$d" ] && left+=("$d"); done
        done
        check "issue 8 cleaned up: ${#hook_ids[@]} containers left no runc state, no slice directory (${left[*]:-none left})" \
                test "${#hook_ids[@]}" -gt 0 -a "${#left[@]}" = 0
        hook_cleanup
        trap - EXIT
fi

# --- issue 9: the compute limiter ----------------------------------------------------------
if part compute && have compute "$CARRY/compute_shapes" "$BUILD/libgpuslice-vgpu.so"; then
        bash bench/compute_limit.sh "$BUILD" "${GS_COMPUTE_SECONDS:-3}" | tee "$OUTDIR/compute_limit.txt"
        check "compute limiter: every run completed" test "${PIPESTATUS[0]}" = 0
        # (the first table is ours; HAMi-core's, when its library was carried, comes after it)
        worst=$(sed -n 's/^worst |achieved - L| = \([0-9.]*\).*/\1/p' "$OUTDIR/compute_limit.txt" | head -1)
        check "cap mode: every shape within 2 points of L (worst ${worst:-?})" \
                awk -v w="${worst:-99}" 'BEGIN { exit !(w <= 2) }'
fi

# --- issues 20 and 32: latency beside batch slices and beside each other (bench/latency.sh) ----
# (every shape by default, ~8 min at 5 s: GS_LATENCY_SHAPES splits them across calls)
if part latency && have latency "$CARRY/latency" "$BUILD/libgpuslice-vgpu.so"; then
        mark=$((pass + fail))
        # (with the batch shapes' kernel times and turns: where the client's requests waited)
        tl=
        if [ "${GS_LATENCY_TIMELINE:-1}" = 1 ]; then tl=$OUTDIR/latency-timeline; mkdir -p "$tl"; fi
        LAT_TIMELINE_DIR=$tl LAT_SLICE_ENV=${tl:+GPUSLICE_LOG_LEVEL=4} LAT_SHAPES=${GS_LATENCY_SHAPES:-} \
                LAT_RUNS=${GS_LATENCY_RUNS:-1} LAT_CONFIGS=${GS_LATENCY_CONFIGS:-} \
                bash bench/latency.sh "$BUILD" "${GS_LATENCY_SECONDS:-5}" | tee "$OUTDIR/latency.txt"
        rc=${PIPESTATUS[0]}
        [ -n "$tl" ] && gzip -q "$tl"/* 2>/dev/null
        check "latency: every run completed" test "$rc" = 0
        while read -r line; do
                name=${line#target }
                check "latency ${name% *}" test "${line##* }" = PASS
        done < <(grep '^target ' "$OUTDIR/latency.txt")
        while read -r line; do skip "latency: ${line#SKIP }"; done < <(grep '^SKIP ' "$OUTDIR/latency.txt")
        part_done latency "$mark"
fi

# --- issue 32, item 6: a spatial split, an experiment (bench/spatial/run.sh; its results are
# "result" lines for bench/RESULTS.md, not checks)
if part spatial && have spatial "$CARRY/latency" "$CARRY/spatial"; then
        bash bench/spatial/run.sh "$BUILD" "${GS_SPATIAL_SECONDS:-5}" | tee "$OUTDIR/spatial.txt"
        check "spatial: every run of the experiment completed" test "${PIPESTATUS[0]}" = 0
fi

# --- issue 20: MPS by the host setting, a raise attempt, a poisoned server (tests/gpu/mps_slice_check.sh)
if part mps; then
        if command -v nvidia-cuda-mps-control >/dev/null && [ -x "$GS" ]; then
                # slice.mps = auto, the raise refused, a poisoned server detected, fallen back from, restarted
                OUT=$OUTDIR sub mps tests/gpu/mps_slice_check.sh "$BUILD"
        else
                check "mps: nvidia-cuda-mps-control and $GS are there" false
        fi
fi

# --- issue 25: two GPUs (the container of GPU 1 runs with the other runc checks above) ----------
# (a slice of GPU 1 only, per-device quotas and compute, NCCL, top/metrics, CDI on two GPUs)
if [ "$MULTIGPU" = 1 ]; then
        OUT=$OUTDIR sub multigpu tests/gpu/multigpu_check.sh "$BUILD"
fi

# --- issue 31: a neighbour lying in its arbiter record (tests/gpu/liar_check.sh) ---------------
if part liar && have liar "$GS" "$CARRY/compute_shapes" "$BUILD/tests/vgpu/arb-liar"; then
        # an honest share-50 slice keeps >= 0.9 of its share beside a lying arbiter record, two liars
        sub liar tests/gpu/liar_check.sh "$BUILD" "$OUTDIR"
fi

# --- issue 10: gpuslice metrics against two slices --------------------------------------------
if part metrics && have metrics "$CARRY/compute_shapes" "$CARRY/cuda_fill"; then
        # memory matches nvidia-smi within 1 %, compute matches the measured share within 2 points
        sub metrics tests/gpu/metrics_check.sh "$BUILD" "$OUTDIR"
fi

# --- issue 25: live resize of a running PyTorch slice -----------------------------------------
if part resize && have resize "$GS" "$BUILD/libgpuslice-vgpu.so"; then
        # 4 GiB -> 8 GiB seen by torch.cuda.mem_get_info within 1 s; shrink below usage refuses new allocations
        sub resize tests/gpu/resize_check.sh "$BUILD" "$OUTDIR"
fi

# --- issue 23: gpuslice dra-plugin: a 4 Gi / 30 % claim prepared, its CDI spec run by runc -------
if part dra && have dra "$BUILD/tests/dra-probe" "$RUNC" "$CARRY/busybox" "$CARRY/cuda_fill" "$CARRY/compute_shapes" \
        "$BUILD/libgpuslice-vgpu.so"; then
        # the claim's container sees 4096 MiB, OOM at the quota, compute 30 +- 2 % of native
        GS_RUNC=$RUNC sub dra tests/gpu/dra_check.sh "$BUILD" "$OUTDIR"
fi

# --- speed (issue 2) -------------------------------------------------------------------------
if part bench; then
        if [ "${GS_GPU_BENCH:-1}" != 1 ]; then
                skip "part bench: GS_GPU_BENCH=$GS_GPU_BENCH"
        elif have bench "$BUILD/bench/timecmd"; then
                bench/run.sh "$BUILD" | tee "$OUTDIR/bench.txt"
                check "bench: bench/run.sh completed" test "${PIPESTATUS[0]}" = 0
        fi
fi

[ $((pass + fail)) -gt 0 ] || echo "no check ran: that is not a pass"
echo "$pass passed, $fail failed, $skipped skipped"
[ "$fail" -eq 0 ] && [ $((pass + fail)) -gt 0 ]
