#!/usr/bin/env bash
# The interposer against the simulated GPU (fake libcuda.so.1 + libnvidia-ml.so.1): quota on every
# allocation path, OOM at the limit, memory views, NULL arguments, untracked frees, several
# processes sharing one quota, kill -9 at random points, exports, config errors, gpuslice exec.
set -uo pipefail
SRC=${GS_SOURCE_DIR:?} BUILD=${GS_BUILD_DIR:?}
unset LD_LIBRARY_PATH LD_PRELOAD
LIB=$BUILD/libgpuslice-vgpu.so
PROBE=$BUILD/tests/vgpu/vgpu-probe
FAKE=$BUILD/tests/fakegpu
TMP=$(mktemp -d /tmp/gs-vgpu.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$TMP"' EXIT
export FAKEGPU_CONFIG=$SRC/tests/fakegpu/configs/1gpu.conf FAKEGPU_STATE=$TMP/fakegpu.state
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0
. "$SRC/tests/lib/check.sh" # ok, not_ok, skip, check, run_ok, started, finish
# sliced ENV... -- CMD: run CMD with the interposer and the fake driver
sliced() { env LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$LIB" "$@"; }
probe_ok() { # DESC ENV... -- probe args: every check inside must pass
        local desc=$1; shift
        if sliced "$@" >"$TMP/out" 2>&1; then ok "$desc"; else not_ok "$desc"; sed 's/^/    # /' "$TMP/out" | head -20; fi
        grep -E '^(ok|FAIL) ' "$TMP/out" | sed 's/^/    # /'
}

"$SRC/tests/vgpu/check_exports.sh" "$SRC" "$LIB" && ok "every hook exported" || not_ok "exports"

MIB=$((1024 * 1024))
# The simulated driver charges each CUDA context `context_memory` of the config (300 MiB unless it
# says otherwise: FG_DEFAULT_CONTEXT_MEMORY in tests/fakegpu/fakegpu_config.h), rounded up to its
# 2 MiB page, and reports it in the process's NVML usage; the interposer counts it against the
# quota before the first allocation (measured, or this host's last measurement then corrected).
CTX=$(awk '$1 == "context_memory" {print $2}' "$FAKEGPU_CONFIG"); CTX=${CTX%MiB}; CTX=${CTX:-300}
CTX=$(( (CTX + 1) / 2 * 2 ))
# OOM at the limit: 1 GiB quota, 64 MiB chunks. Granted: the most 64 MiB chunks that fit beside the
# context, exactly: 64 * floor((1024 - CTX) / 64) = 704 MiB for 300 MiB (one chunk more would be
# 1068 MiB with the context; one fewer leaves a chunk of the quota unused).
sliced GPUSLICE_MEMORY_LIMIT=1Gi GPUSLICE_REGION="$TMP/r1" "$PROBE" quota 64 >"$TMP/q" 2>&1
got=$(awk '/^allocated/ {print $2}' "$TMP/q")
want=$(( (1024 - CTX) / 64 * 64 ))
grep -q "^ok the allocation past the quota fails with CUDA_ERROR_OUT_OF_MEMORY" "$TMP/q" &&
        ok "past the quota: CUDA_ERROR_OUT_OF_MEMORY" || { not_ok "OOM code"; cat "$TMP/q"; }
[ "${got:-}" = "$want" ] &&
        ok "1 GiB quota: $got MiB granted in 64 MiB chunks, the rest is the context's $CTX MiB" ||
        not_ok "quota granted ${got:-?} MiB, want $want (1024 - a $CTX MiB context, in 64 MiB chunks)"
sliced CUDA_DEVICE_MEMORY_LIMIT=1g GPUSLICE_REGION="$TMP/r1b" "$PROBE" quota 64 >"$TMP/q2" 2>&1
[ "$(awk '/^allocated/ {print $2}' "$TMP/q2")" = "$got" ] && ok "HAMi's CUDA_DEVICE_MEMORY_LIMIT=1g is the same quota" ||
        not_ok "alias: $(head -1 "$TMP/q2")"

# The first process of a new slice starts from this host's last context measurement (no NVML call
# on its start-up path); the reconciler corrects it later.
sliced GPUSLICE_MEMORY_LIMIT=1Gi GPUSLICE_REGION="$TMP/r1c" GPUSLICE_LOG_LEVEL=3 "$PROBE" meminfo >"$TMP/est" 2>&1
grep -qE "context estimated at [1-9][0-9]* bytes from this host's last measurement" "$TMP/est" &&
        ! grep -q "driver counts" "$TMP/est" && grep -q "^ok total is\|total 1024 MiB" "$TMP/est" &&
        ok "a new slice's first process starts from the host's last context measurement (no NVML call)" ||
        { not_ok "context estimate"; cat "$TMP/est"; }
# At debug level the interposer reports its own start-up cost at exit (bench/vgpu.sh reads it).
grep -qE "start-up cost: [0-9]+ us in gpuslice \(constructor [0-9]+, .*cuGetProcAddress [0-9]+ in [0-9]+ calls.*first allocation [0-9]+\)" "$TMP/est" &&
        ok "GPUSLICE_LOG_LEVEL=3 reports the interposer's start-up cost by phase" || { not_ok "start-up cost report"; cat "$TMP/est"; }
# A compute-limited slice's descriptor table is grown in the constructor, while the process has one
# thread (src/vgpu/arbiter.h, gs_arb_reserve_fds): grown later, with threads, the kernel waits for
# an RCU grace period in whichever open crosses its size (5-31 ms on the H200 host: a request
# client's first launch, or its ticker's listing with the arbiter's view locked). Up to
# RLIMIT_NOFILE where that is lower. (FDSize: the table's size; a child of bash starts at 256.)
fd_table() { awk '/^FDSize/ {print $2}' "/proc/$1/status" 2>/dev/null; } # PID: its table's size
fdsize() { # LIMIT ENV...: the FDSize of `sleep` started with ENV under `ulimit -n LIMIT`
        local n=$1
        shift
        (ulimit -n "$n" && sliced "$@" sleep 3) &
        local p=$! s=
        for _ in $(seq 50); do
                s=$(pgrep -P $p -x sleep 2>/dev/null || true)
                [ -z "$s" ] && s=$p
                grep -q libgpuslice-vgpu "/proc/$s/maps" 2>/dev/null && [ "$(cut -d' ' -f3 "/proc/$s/stat" 2>/dev/null)" = S ] && break
                sleep 0.1
        done
        fd_table "$s"
        kill $p $s 2>/dev/null
        wait $p 2>/dev/null
}
f1=$(fdsize 4096 GPUSLICE_COMPUTE_LIMIT=50) f2=$(fdsize 512 GPUSLICE_COMPUTE_LIMIT=50) f0=$(fdsize 4096 GPUSLICE_MEMORY_LIMIT=1Gi)
[ "${f1:-0}" -ge 1024 ] && [ "${f2:-0}" -ge 512 ] && [ "${f2:-0}" -lt 1024 ] &&
        ok "a compute-limited slice's descriptor table is grown before it has threads: $f1 (RLIMIT_NOFILE 512: $f2; no compute limit: $f0)" ||
        not_ok "a compute-limited slice's descriptor table: ${f1:-?} (want >= 1024), ${f2:-?} under RLIMIT_NOFILE 512 (want 512-1023)"
# ... and again in a forked child, whose table the kernel sizes to the descriptors open at the fork.
sliced GPUSLICE_COMPUTE_LIMIT=50 python3 -c 'import os, time
pid = os.fork()
if pid == 0:
    time.sleep(3)
    os._exit(0)
print(pid, flush=True)
os.waitpid(pid, 0)' >"$TMP/forked" 2>&1 &
fkp=$! fc= c=
for _ in $(seq 50); do
        c=$(head -1 "$TMP/forked" 2>/dev/null)
        [ -n "$c" ] && [ -e "/proc/$c/status" ] && { sleep 0.2; fc=$(fd_table "$c"); break; }
        sleep 0.1
done
[ -n "$c" ] && kill "$c" 2>/dev/null
wait $fkp 2>/dev/null
[ "${fc:-0}" -ge 1024 ] && ok "... and in a forked child: $fc" ||
        { not_ok "a compute-limited slice's forked child's descriptor table: ${fc:-?} (want >= 1024)"; cat "$TMP/forked"; }

probe_ok "every allocation path is charged and released" GPUSLICE_MEMORY_LIMIT=2Gi GPUSLICE_REGION="$TMP/r2" "$PROBE" paths 64
probe_ok "memory views: total = quota, NULL-safe" GPUSLICE_MEMORY_LIMIT=3Gi EXPECT_TOTAL_MIB=3072 "$PROBE" meminfo
# The 32-bit cuMemGetInfo of the CUDA 2.x ABI (unsigned int sizes): the driver refuses it in a
# 64-bit process and the interposer passes that on (above, in meminfo); where a driver answers
# (the fake told to), a view above 4 GiB saturates at 4 GiB - 1 (never wraps to 2 GiB).
probe_ok "legacy 32-bit cuMemGetInfo at a 6 GiB quota, a driver that answers it: saturated at 4294967295" \
        GPUSLICE_MEMORY_LIMIT=6Gi EXPECT_TOTAL_MIB=6144 EXPECT_LEGACY_CLAMP=1 FAKEGPU_LEGACY_MEMINFO=1 "$PROBE" meminfo
probe_ok "cuGetProcAddress and dlsym return the wrapper of the requested ABI" GPUSLICE_MEMORY_LIMIT=1Gi "$PROBE" procaddr
probe_ok "a free of an untracked pointer goes to the driver untouched" GPUSLICE_MEMORY_LIMIT=1Gi "$PROBE" untracked

# Invalid sizes are an error, never a silent misparse (HAMi reads 1Gx as 1 GiB, 1Gi... as 1 byte).
sliced GPUSLICE_MEMORY_LIMIT=1.5x "$PROBE" meminfo >"$TMP/bad" 2>&1
grep -q "invalid GPUSLICE_MEMORY_LIMIT '1.5x'" "$TMP/bad" && grep -q "FAIL cuInit" "$TMP/bad" &&
        ok "an invalid size is reported and CUDA refuses to start" || { not_ok "invalid size"; cat "$TMP/bad"; }
sliced GPUSLICE_MEMORY_LIMIT=1.5x GPUSLICE_ON_CONFIG_ERROR=unlimited "$PROBE" meminfo >"$TMP/bad2" 2>&1 &&
        ok "... unless GPUSLICE_ON_CONFIG_ERROR=unlimited asks to run without limits" || not_ok "ignore errors"
sliced GPUSLICE_MEMORY_LIMIT=1536Mi EXPECT_TOTAL_MIB=1536 "$PROBE" meminfo >/dev/null 2>&1 && ok "1536Mi parses" || not_ok "1536Mi"
sliced GPUSLICE_MEMORY_LIMIT=1.5G EXPECT_TOTAL_MIB=1536 "$PROBE" meminfo >/dev/null 2>&1 && ok "1.5G = 1536 MiB" || not_ok "1.5G"

# Two processes share one quota: the first holds 600 MiB, the second gets the rest. Each also has
# a context, whose memory the driver reports (CTX, 300 MiB in 1gpu.conf): 2048 - 600 - 2*300 = 848.
sliced GPUSLICE_MEMORY_LIMIT=2Gi GPUSLICE_REGION="$TMP/r3" "$PROBE" hold 600 4 >"$TMP/h1" 2>&1 &
for _ in $(seq 50); do grep -q held "$TMP/h1" && break; sleep 0.1; done
sliced GPUSLICE_MEMORY_LIMIT=2Gi GPUSLICE_REGION="$TMP/r3" "$PROBE" hold 2048 0 >"$TMP/h2" 2>&1
a=$(awk '/^held/ {print $2}' "$TMP/h1") b=$(awk '/^held/ {print $2}' "$TMP/h2")
[ "${a:-0}" = 600 ] && [ "${b:-0}" -gt 0 ] && [ $((a + b + 2 * CTX)) -le 2048 ] && [ $((a + b + 2 * CTX)) -ge 2040 ] &&
        ok "two processes share one 2 GiB quota: $a + $b MiB + 2 contexts of $CTX MiB" || not_ok "sharing: ${a:-?} + ${b:-?} (+2x$CTX)"
wait

# A process starting in a full slice: its context would go past the quota, so it is refused
# (judged by the context size the first process measured).
sliced GPUSLICE_MEMORY_LIMIT=1Gi GPUSLICE_REGION="$TMP/r6" "$PROBE" hold 2048 3 >"$TMP/f1" 2>&1 &
for _ in $(seq 50); do grep -q held "$TMP/f1" && break; sleep 0.1; done
sliced GPUSLICE_MEMORY_LIMIT=1Gi GPUSLICE_REGION="$TMP/r6" "$PROBE" hold 10 0 >"$TMP/f2" 2>&1
grep -q "FAIL context" "$TMP/f2" && ok "a new context in a full slice is refused (CUDA_ERROR_OUT_OF_MEMORY)" ||
        { not_ok "context admission"; cat "$TMP/f2"; }
wait

# In a container's pid namespace the driver reports processes by their pid in the caller's
# namespace (seen on the GPU host: NVML inside `unshare -pf --mount-proc` gives the namespace pid;
# the fake does the same, as pid_vnr does); the reconciler must still find its own count. (With
# the host's /proc left in a new pid namespace, real CUDA refuses to start:
# cudaErrorOperatingSystem; containers always mount their own.)
unshare -pf --mount-proc env LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$LIB" GPUSLICE_MEMORY_LIMIT=1Gi \
        GPUSLICE_REGION="$TMP/rns" GPUSLICE_LOG_LEVEL=3 "$PROBE" hold 100 3 >"$TMP/ns" 2>&1
grep -qE "driver counts [1-9][0-9]* bytes for us" "$TMP/ns" &&
        ok "in a pid namespace the reconciler finds its own driver count" ||
        { not_ok "reconcile in a pid namespace"; cat "$TMP/ns"; }
# ... and the host sees the same process under its host pid.
unshare -pf --mount-proc env LD_LIBRARY_PATH="$FAKE" GPUSLICE_MEMORY_LIMIT=1Gi "$PROBE" hold 100 3 >"$TMP/ns2" 2>&1 &
for _ in $(seq 50); do grep -q held "$TMP/ns2" && break; sleep 0.1; done
hp=$(pgrep -x vgpu-probe)
env LD_LIBRARY_PATH="$FAKE" "$PROBE" procs >"$TMP/ns2.host" 2>&1
wait
grep -qE "^proc ${hp:-none} [1-9]" "$TMP/ns2.host" && ok "the host's NVML lists the namespaced process by its host pid ($hp)" ||
        { not_ok "host view of a namespaced process (pid ${hp:-?})"; cat "$TMP/ns2.host"; }

# kill -9 at random points: 6 churning processes, 40 kills; no deadlock; afterwards a new process
# gets the whole quota back (minus its own context), i.e. dead processes' usage was reaped.
R4=$TMP/r4
for i in $(seq 6); do sliced GPUSLICE_MEMORY_LIMIT=1Gi GPUSLICE_REGION="$R4" "$PROBE" churn 30 >/dev/null 2>&1 & done
start=$(date +%s)
for k in $(seq 40); do
        sleep 0.$((RANDOM % 3 + 1))
        victims=($(pgrep -f "vgpu-probe churn"))
        [ ${#victims[@]} -gt 0 ] && kill -9 "${victims[RANDOM % ${#victims[@]}]}" 2>/dev/null
        [ ${#victims[@]} -lt 6 ] && { sliced GPUSLICE_MEMORY_LIMIT=1Gi GPUSLICE_REGION="$R4" "$PROBE" churn 30 >/dev/null 2>&1 & }
done
pkill -9 -f "vgpu-probe churn"; wait 2>/dev/null
secs=$(( $(date +%s) - start ))
sliced GPUSLICE_MEMORY_LIMIT=1Gi GPUSLICE_REGION="$R4" timeout 20 "$PROBE" quota 16 >"$TMP/after" 2>&1
rc=$?
after=$(awk '/^allocated/ {print $2}' "$TMP/after")
sliced GPUSLICE_MEMORY_LIMIT=1Gi GPUSLICE_REGION="$TMP/r5" "$PROBE" quota 16 >"$TMP/fresh" 2>&1
fresh=$(awk '/^allocated/ {print $2}' "$TMP/fresh")
[ "$rc" != 124 ] && ok "no deadlock after 40 kill -9 ($secs s)" || not_ok "deadlock: the survivor timed out"
[ -n "$after" ] && [ "$after" = "$fresh" ] && [ "$after" -gt 0 ] && ok "usage returns to the survivors' true sum: $after MiB available again, as in a fresh region" ||
        { not_ok "after the kills: ${after:-?} MiB available, a fresh region gives ${fresh:-?} (the survivor: exit $rc)"; tail -n 5 "$TMP/after"; }

# Device visibility (two simulated GPUs): only the slice's device exists, for CUDA and for NVML.
G2=$SRC/tests/fakegpu/configs/2gpu.conf
U1=GPU-9e3a5b7c-1d2f-4a6b-8c0d-2e4f6a8b0c1d
sliced FAKEGPU_CONFIG="$G2" "$PROBE" devices >"$TMP/d0" 2>&1
sliced FAKEGPU_CONFIG="$G2" GPUSLICE_DEVICES=$U1 "$PROBE" devices >"$TMP/d1" 2>&1
grep -qx "count 2" "$TMP/d0" && grep -qx "count 1" "$TMP/d1" && grep -qix "device 0 $U1" "$TMP/d1" &&
        ok "GPUSLICE_DEVICES: CUDA sees only that GPU, as device 0" || { not_ok "CUDA visibility"; cat "$TMP/d0" "$TMP/d1"; }
sliced FAKEGPU_CONFIG="$G2" GPUSLICE_DEVICES=$U1 GPUSLICE_MEMORY_LIMIT=1Gi "$FAKE/nvidia-smi" -L >"$TMP/smiL" 2>&1
[ "$(grep -c '^GPU ' "$TMP/smiL")" = 1 ] && grep -qi "$U1" "$TMP/smiL" && ok "... and NVML (nvidia-smi -L) too" ||
        { not_ok "NVML visibility"; cat "$TMP/smiL"; }
sliced FAKEGPU_CONFIG="$G2" GPUSLICE_MEMORY_LIMIT=2Gi CUDA_DEVICE_MEMORY_LIMIT_1=1Gi "$FAKE/nvidia-smi" -q >"$TMP/smiq" 2>&1
[ "$(grep -A1 'FB Memory Usage' "$TMP/smiq" | grep -oE '[0-9]+ MiB' | tr '\n' ' ')" = "2048 MiB 1024 MiB " ] &&
        ok "nvidia-smi -q shows each device's quota (HAMi's CUDA_DEVICE_MEMORY_LIMIT_1 for device 1)" ||
        { not_ok "per-device quota in nvidia-smi"; grep -A1 'FB Memory Usage' "$TMP/smiq"; }

# A program that never calls cuDeviceGet and passes CUdevice 0 as a number (cuDeviceTotalMem,
# cuDevicePrimaryCtxRetain, cuCtxCreate) reaches the slice's first device, never another GPU: the
# driver itself is shown only the slice's GPUs (CUDA_VISIBLE_DEVICES, for cuInit only). The
# process's own CUDA_VISIBLE_DEVICES selects among the slice's devices as the driver reads it on a
# machine that has only them (indexes into the slice, UUIDs or unique prefixes, the list ending at
# the first entry that names none of them), and reads back as the process set it.
U0=GPU-2f8c1d4e-7a90-3b5c-e6d1-0a9b8c7d6e5f
lit() { # NAME ENV... [-- PROBE-ARG]: `vgpu-probe literal` in a slice of the two-GPU config
        local name=$1 arg=(); shift
        local envs=()
        while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
        [ "${1:-}" = -- ] && arg=("$2")
        sliced FAKEGPU_CONFIG="$G2" GPUSLICE_REGION="$TMP/rl-$name" "${envs[@]}" "$PROBE" literal "${arg[@]}" \
                >"$TMP/lit-$name" 2>&1
        echo "rc $?" >>"$TMP/lit-$name"
}
reached() { # NAME UUID MIB COUNT: every use of CUdevice 0 reached UUID, under a MIB quota
        local f=$TMP/lit-$1
        grep -qx "count $4" "$f" && grep -qix "uuid0 $2" "$f" && grep -qx "total0 $3" "$f" && grep -qix "primary0 $2" "$f" &&
                grep -qx "meminfo0 $3" "$f" && grep -qix "created0 $2" "$f" && grep -qx "get$4 101" "$f" && grep -qx "rc 0" "$f"
}
none_seen() { # NAME: cuInit answers CUDA_ERROR_NO_DEVICE with a line that says why; no crash
        local f=$TMP/lit-$1
        grep -qx "cuInit 100" "$f" && grep -qx "rc 3" "$f" && grep -q "selects none of the slice's devices" "$f"
}
show() { not_ok "$1"; sed 's/^/    # /' "$TMP/lit-$2"; }
lit plain GPUSLICE_DEVICES=$U1 GPUSLICE_MEMORY_LIMIT=1Gi
reached plain $U1 1024 1 && grep -qx "env unset" "$TMP/lit-plain" &&
        ok "a literal CUdevice 0 is the slice's GPU (its UUID, memory, contexts), the count 1" ||
        show "literal CUdevice 0 in a slice of GPU 1" plain
lit idx GPUSLICE_DEVICES=$U1 GPUSLICE_MEMORY_LIMIT=1Gi CUDA_VISIBLE_DEVICES=0
reached idx $U1 1024 1 && grep -qx "env 0" "$TMP/lit-idx" &&
        ok "CUDA_VISIBLE_DEVICES=0 is the slice's first GPU, and reads back as 0" || show "CUDA_VISIBLE_DEVICES=0" idx
lit prefix GPUSLICE_DEVICES=$U1 GPUSLICE_MEMORY_LIMIT=1Gi CUDA_VISIBLE_DEVICES=gpu-9E3A5B7C
reached prefix $U1 1024 1 && ok "a UUID prefix of the slice's GPU selects it" || show "UUID prefix" prefix
lit other GPUSLICE_DEVICES=$U1 CUDA_VISIBLE_DEVICES=$U0,$U1
none_seen other && grep -qx "env $U0,$U1" "$TMP/lit-other" &&
        ok "CUDA_VISIBLE_DEVICES naming a GPU outside the slice first: no device, a clear error" ||
        show "CUDA_VISIBLE_DEVICES=<other GPU>,<slice GPU>" other
lit past GPUSLICE_DEVICES=$U1 CUDA_VISIBLE_DEVICES=1
none_seen past && ok "CUDA_VISIBLE_DEVICES=1 in a one-GPU slice: no device" || show "index past the slice" past
lit empty GPUSLICE_DEVICES=$U1 CUDA_VISIBLE_DEVICES=
none_seen empty && grep -qx "env empty" "$TMP/lit-empty" && ok "CUDA_VISIBLE_DEVICES= (empty): no device" ||
        show "empty CUDA_VISIBLE_DEVICES" empty
lit late GPUSLICE_DEVICES=$U1 -- "$U0"
none_seen late && grep -qx "env $U0" "$TMP/lit-late" &&
        ok "... also when the program sets it itself before cuInit (os.environ in Python)" ||
        show "CUDA_VISIBLE_DEVICES set by the program" late
lit late2 GPUSLICE_DEVICES=$U1 GPUSLICE_MEMORY_LIMIT=1Gi CUDA_VISIBLE_DEVICES=$U0 -- -
reached late2 $U1 1024 1 && ok "... and when it unsets it: the slice's GPU" || show "CUDA_VISIBLE_DEVICES unset by the program" late2
# Two GPUs in the slice: the process's own order and subset; each device keeps its slice index for
# its quota (GPUSLICE_MEMORY_LIMIT_<i> counts in GPUSLICE_DEVICES order).
Q2=("GPUSLICE_DEVICES=$U0,$U1" GPUSLICE_MEMORY_LIMIT_0=2Gi GPUSLICE_MEMORY_LIMIT_1=1Gi)
lit both "${Q2[@]}"
reached both $U0 2048 2 && ok "a two-GPU slice: CUdevice 0 is its first GPU, the count 2" || show "two-GPU slice" both
lit swap "${Q2[@]}" CUDA_VISIBLE_DEVICES=1,0
reached swap $U1 1024 2 && ok "CUDA_VISIBLE_DEVICES=1,0 in it: CUdevice 0 is its second GPU, with that GPU's quota" ||
        show "CUDA_VISIBLE_DEVICES=1,0 in a two-GPU slice" swap
lit digits "${Q2[@]}" "CUDA_VISIBLE_DEVICES= 1 ,0x"
reached digits $U1 1024 2 && ok "an index is its leading digits, blanks around it ignored (as the driver reads it)" ||
        show "CUDA_VISIBLE_DEVICES=' 1 ,0x'" digits
lit ambiguous "${Q2[@]}" CUDA_VISIBLE_DEVICES=GPU-
none_seen ambiguous && ok "a UUID prefix of two of the slice's GPUs names none" || show "ambiguous prefix" ambiguous
lit sub "${Q2[@]}" CUDA_VISIBLE_DEVICES=$U1
reached sub $U1 1024 1 && ok "CUDA_VISIBLE_DEVICES=<its second GPU>: that GPU alone, with its quota" ||
        show "a subset of a two-GPU slice" sub
# The loader runs the constructors of a program's libraries before the preloaded interposer's: one
# that calls cuInit there reaches our cuInit before our constructor ran. It must neither crash nor
# show the driver more than the slice.
printf 'extern int cuInit(unsigned int);\n__attribute__((constructor)) static void early(void) { cuInit(0); }\n' \
        >"$TMP/early.c"
# (the C compiler comes with `make deps`: without one the environment is broken, a failure)
if cc -shared -fPIC -o "$TMP/libearly.so" "$TMP/early.c" 2>"$TMP/early.log"; then
        lit early LD_PRELOAD="$LIB:$TMP/libearly.so" GPUSLICE_DEVICES=$U1 GPUSLICE_MEMORY_LIMIT=1Gi
        reached early $U1 1024 1 && ok "cuInit from another library's constructor, before ours ran: the slice's GPU" ||
                show "cuInit before the interposer's constructor" early
else
        not_ok "cuInit from a library's constructor: cc cannot build the library ($(head -1 "$TMP/early.log"))"
fi
lit index GPUSLICE_DEVICES=1
grep -q "invalid GPUSLICE_DEVICES '1' (at most 16 GPU- or MIG- UUIDs" "$TMP/lit-index" && grep -qx "cuInit 1" "$TMP/lit-index" &&
        ok "GPUSLICE_DEVICES holds UUIDs: an index is an error, CUDA refuses to start" || show "GPUSLICE_DEVICES=1" index
# gpuslice exec --device 1 (exports GPUSLICE_DEVICES; needs root for the NVML helper's driver root:
# a failed fake root as root is a failure).
if [ "$(id -u)" != 0 ]; then
        skip "gpuslice exec --device: needs root (the NVML helper chroots into a fake driver root)"
elif ! "$SRC/tests/fakegpu/mkroot.sh" --build "$BUILD" "$G2" "$TMP/drv2" >"$TMP/mkroot2.log" 2>&1; then
        not_ok "gpuslice exec --device: mkroot.sh could not build the two-GPU driver root"
        sed 's/^/    # /' "$TMP/mkroot2.log" | tail -20
else
        "$BUILD/gpuslice" --root "$TMP/drv2" exec --device 1 --memory 1Gi -- \
                env LD_LIBRARY_PATH="$FAKE" FAKEGPU_CONFIG="$G2" "$PROBE" literal >"$TMP/lit-exec" 2>&1
        echo "rc $?" >>"$TMP/lit-exec"
        reached exec $U1 1024 1 && ok "gpuslice exec --device 1: a literal CUdevice 0 is GPU 1" || show "exec --device 1" exec
        CUDA_VISIBLE_DEVICES=$U0 "$BUILD/gpuslice" --root "$TMP/drv2" exec --device 1 --memory 1Gi -- \
                env LD_LIBRARY_PATH="$FAKE" FAKEGPU_CONFIG="$G2" "$PROBE" literal >"$TMP/lit-exec0" 2>&1
        echo "rc $?" >>"$TMP/lit-exec0"
        none_seen exec0 && ok "CUDA_VISIBLE_DEVICES=<GPU 0> gpuslice exec --device 1: no device" ||
                show "exec --device 1 under CUDA_VISIBLE_DEVICES=<GPU 0>" exec0
fi
printf 'GPUSLICE_MEMORY_LIMIT=768Mi\n' >"$TMP/slice.conf"
sliced GPUSLICE_SLICE_FILE="$TMP/slice.conf" EXPECT_TOTAL_MIB=768 "$PROBE" meminfo >/dev/null 2>&1 &&
        ok "the slice file sets the quota" || not_ok "slice file"
sliced GPUSLICE_SLICE_FILE="$TMP/slice.conf" GPUSLICE_MEMORY_LIMIT=512Mi EXPECT_TOTAL_MIB=512 "$PROBE" meminfo >/dev/null 2>&1 &&
        ok "... and the environment wins over it" || not_ok "env over slice file"

# gpuslice exec: the one-line way.
"$BUILD/gpuslice" exec --memory 1Gi -- env LD_LIBRARY_PATH="$FAKE" "$PROBE" meminfo >"$TMP/exec" 2>&1 &&
        grep -q "total .*1024 MiB\|free .* MiB, total 1024 MiB" "$TMP/exec" && ok "gpuslice exec --memory 1Gi" ||
        { not_ok "gpuslice exec"; cat "$TMP/exec"; }
"$BUILD/gpuslice" exec --memory 1Gi --memory-0 512Mi -- env LD_LIBRARY_PATH="$FAKE" EXPECT_TOTAL_MIB=512 "$PROBE" meminfo >"$TMP/exec2" 2>&1 &&
        ok "gpuslice exec --memory-0 overrides --memory" || { not_ok "exec --memory-0"; cat "$TMP/exec2"; }
"$BUILD/gpuslice" exec --memory 1Gx -- true >/dev/null 2>"$TMP/exec3"; rc=$?
[ "$rc" = 2 ] && grep -q "invalid --memory: 1Gx" "$TMP/exec3" && ok "gpuslice exec rejects a bad size" || not_ok "exec bad size"
"$BUILD/gpuslice" exec --memory 1Gi -- sh -c 'exit 7'; [ $? = 7 ] && ok "gpuslice exec returns the command's status" || not_ok "exec status"
# The region exec made: shown to exist while its command runs, gone after.
"$BUILD/gpuslice" exec --memory 1Gi -- env LD_LIBRARY_PATH="$FAKE" sh -c \
        '"$0" meminfo >/dev/null && test -f "$GPUSLICE_REGION" && echo "$GPUSLICE_REGION"' "$PROBE" >"$TMP/exec-region" 2>"$TMP/exec-region.err"
made=$(cat "$TMP/exec-region")
if [[ $made == /dev/shm/gpuslice-exec-* ]]; then
        ok "gpuslice exec makes its region ($made)"
        [ ! -e "$made" ] && ok "... and removes it when the command ends" || not_ok "exec left its region $made behind"
else
        not_ok "gpuslice exec made no region: $made $(head -3 "$TMP/exec-region.err")"
fi
finish
