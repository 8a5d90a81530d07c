#!/usr/bin/env bash
# Device hiding that holds, under a slice of GPU 1 of a two-GPU (simulated) host:
#  0. the entry points that take or return a device come from NVIDIA's own cuda.h and nvml.h (not
#     our table): each must be exported by the interposer or listed harmless here, with the reason;
#  1. each such entry point of our table (src/abi/cuda.h) is hooked, every ABI version cuGetProcAddress
#     hands out is our wrapper of that version, and each is called with made-up device numbers
#     (device_probe.c: a case for each, or this test fails), two ways the driver can be: initialised
#     through our cuInit (it shows only the slice's GPU) and past it (it shows both: the program's
#     0 must still be GPU 1, and the driver's numbers 1 and 0 refused). Accepted: the bare driver's
#     answer for GPU 1, and on success GPU 1 reached (the simulated driver says which, or the device
#     returned reads back as GPU 1); refused: CUDA_ERROR_INVALID_DEVICE and no GPU reached;
#  2. a pool's allocations count on the pool's GPU;
#  3. NVML: lookups by UUID, bus id and serial, topology lists, pairs, MIG handles.
set -uo pipefail
SRC=${GS_SOURCE_DIR:?} BUILD=${GS_BUILD_DIR:?}
unset LD_LIBRARY_PATH LD_PRELOAD CUDA_VISIBLE_DEVICES
LIB=$BUILD/libgpuslice-vgpu.so
PROBE=$BUILD/tests/vgpu/device-probe
FAKE=$BUILD/tests/fakegpu
TMP=$(mktemp -d /tmp/gs-devices.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
export FAKEGPU_CONFIG=$SRC/tests/fakegpu/configs/2gpu.conf FAKEGPU_STATE=$TMP/fakegpu.state
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0
. "$SRC/tests/lib/check.sh"
U0=GPU-2f8c1d4e-7a90-3b5c-e6d1-0a9b8c7d6e5f B0=0000:3b:00.0
U1=GPU-9e3a5b7c-1d2f-4a6b-8c0d-2e4f6a8b0c1d B1=0000:86:00.0
INVALID_DEVICE=101

# 0. NVIDIA's own headers (Debian's nvidia-cuda-dev and libnvidia-ml-dev of CUDA 12.4, and a
# toolkit installed here, CUDA 13.0 on the build machine): every entry point that takes or returns
# a device (tests/vgpu/device_entry_points.py) must be exported by the interposer (dlsym answers
# our wrapper then; cuGetProcAddress: below), or be listed here as harmless with the reason. Our
# own table cannot find a missing one; these headers can.
declare -A HARMLESS=(
        [cuMulticastCreate]="CUmulticastObjectProp holds a count of devices, not a device"
        [cuMulticastGetGranularity]="CUmulticastObjectProp holds a count of devices, not a device"
        [cuPointerSetAttribute]="the one attribute it sets is CU_POINTER_ATTRIBUTE_SYNC_MEMOPS"
        [cuGraphNodeSetParams]="a memory-allocation node's parameters cannot be changed (cuda.h); no other node names a device"
        [cuGraphExecNodeSetParams]="a memory-allocation node's parameters cannot be changed (cuda.h); no other node names a device"
)
# A call on one handle is not wrapped: a handle comes from the lookups, each hooked (a handle forged
# by pointer arithmetic is not caught there; in a container NVML has no other GPU's device node).
NVML_ONE="take one handle and name no other device"
if HDRS=$("$SRC/tests/vgpu/toolkit_headers.sh" 2>"$TMP/hdr.err") && [ -n "$HDRS" ]; then
        exported=$(nm -D --defined-only "$LIB" | awk '$2 ~ /^[TW]$/ {print $3}')
        for inc in $HDRS; do
                ver=$(sed -n 's/^#define CUDA_VERSION \([0-9]*\).*/\1/p' "$inc/cuda.h")
                if ! python3 "$SRC/tests/vgpu/device_entry_points.py" "$inc" >"$TMP/ep" 2>"$TMP/ep.err"; then
                        not_ok "CUDA $ver headers ($inc): $(tail -1 "$TMP/ep.err")"; continue; fi
                missing=() harmless=0 nvone=0 total=0
                while read -r lib name why; do
                        total=$((total + 1))
                        if grep -qx "$name" <<<"$exported"; then continue; fi
                        if [ "$lib" = cuda ] && [ -n "${HARMLESS[$name]:-}" ]; then harmless=$((harmless + 1)); continue; fi
                        if [ "$lib" = nvml ] && [ "$why" = one ]; then nvone=$((nvone + 1)); continue; fi
                        missing+=("$name($why)")
                done <"$TMP/ep"
                [ ${#missing[@]} = 0 ] &&
                        ok "CUDA $ver headers: all $total entry points that take or return a device are hooked ($harmless harmless by the list, $nvone NVML calls that $NVML_ONE)" ||
                        { not_ok "CUDA $ver headers: ${#missing[@]} of $total entry points that take or return a device are not hooked"
                          printf '    # %s\n' "${missing[@]}"; }
        done
        for n in "${!HARMLESS[@]}"; do echo "# harmless: $n: ${HARMLESS[$n]}"; done
else
        skip "NVIDIA's cuda.h and nvml.h could not be had, the header-derived list is not checked: $(tail -1 "$TMP/hdr.err")"
fi

# The entry points with a device among their parameters, from our ABI table: each must be hooked;
# those the simulated driver has are called below with made-up numbers.
abi_with_device() {
        sed -n '/^#define GS_CUDA_FUNCTIONS(X)/,/^$/p' "$SRC/src/abi/cuda.h" | tr -d '\\\n' |
                grep -oE 'X\([A-Za-z0-9_]+, *[A-Za-z_]+, *\([^)]*\)\)' |
                grep -E '\bCUdevice\b|CUmemAllocationProp|CUmemAccessDesc|CUmemPoolProps|CUmemLocation|CUpointer_attribute|CUmem_range_attribute|CUmemcpyAttributes|CUDA_MEMCPY3D_BATCH_OP|CUDA_MEM_ALLOC_NODE_PARAMS|CUgraphNodeParams' |
                sed -E 's/^X\(([A-Za-z0-9_]+),.*/\1/'
}
mapfile -t ABI < <(abi_with_device)
hooked=$(sed -n '/GS_VGPU_CUDA_HOOKS(X)/,/^$/p' "$SRC/src/vgpu/hooks.h" | grep -oE 'X\([A-Za-z0-9_]+\)' | sed 's/X(//;s/)//')
[ ${#ABI[@]} -ge 80 ] && ok "the ABI table lists ${#ABI[@]} entry points that take or return a device" ||
        not_ok "the ABI table gave only ${#ABI[@]} entry points with a device: ${ABI[*]}"
unhooked=()
for n in "${ABI[@]}"; do grep -qx "$n" <<<"$hooked" || unhooked+=("$n"); done
[ ${#unhooked[@]} = 0 ] && ok "every one of them is hooked" ||
        not_ok "entry points that take a device but are not hooked: ${unhooked[*]}"
fake_has=$(nm -D --defined-only "$FAKE/libcuda.so.1" | awk '{print $3}')
# These only return a device, of unified memory's placement or a graph's allocation node, which the
# simulated GPU does not keep (it answers CUDA_ERROR_NOT_SUPPORTED): there is nothing to call them on.
UNPROBED=" cuMemRangeGetAttribute cuMemRangeGetAttributes cuGraphMemAllocNodeGetParams "
NAMES=() absent=()
for n in "${ABI[@]}"; do
        grep -qx "$n" <<<"$fake_has" && [[ $UNPROBED != *" $n "* ]] && NAMES+=("$n") || absent+=("$n")
done
[ ${#NAMES[@]} -ge 80 ] && ok "${#NAMES[@]} of them are called on the simulated GPU (not: ${absent[*]:-none})" ||
        not_ok "only ${#NAMES[@]} of them are called on the simulated GPU (not: ${absent[*]})"

# Every ABI version of each of them that cuGetProcAddress hands out is our wrapper of exactly that
# version (the name the bare driver's answer has, in the interposer), at every CUDA version and with
# the per-thread stream flag: a program that asks the driver for its entry points meets the same hooks.
mapfile -t BASES < <(printf '%s\n' "${ABI[@]}" | sed -E 's/(_v[0-9]+)?(_ptsz)?$//' | sort -u)
env LD_LIBRARY_PATH="$FAKE" "$PROBE" proc "${BASES[@]}" >"$TMP/proc.bare" 2>&1
env LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$LIB" GPUSLICE_DEVICES=$U1 GPUSLICE_REGION="$TMP/r-proc" "$PROBE" proc "${BASES[@]}" >"$TMP/proc.ours" 2>&1
want=$(awk '$1 == "proc" {print $2, $3, $4, $5, "libgpuslice-vgpu.so"}' "$TMP/proc.bare")
got=$(awk '$1 == "proc"' "$TMP/proc.ours" | cut -d' ' -f2-)
nv=$(grep -c . <<<"$want")
missing=$(comm -23 <(sort <<<"$want") <(sort <<<"$got"))
[ "$nv" -ge 100 ] && [ -z "$missing" ] &&
        ok "cuGetProcAddress_v2: all $nv answers for the ${#BASES[@]} base names (each version, both stream flags) are our wrapper of that version" ||
        { not_ok "cuGetProcAddress_v2 answers that are not our wrapper of the same version ($nv answers):"; printf '    # %s\n' $missing | paste -d' ' - - - - - | head -20; }

# probe NAME ENV... -- ARGS: the probe in a slice of GPU 1 (PRELOAD= in ENV: without the interposer)
probe() {
        local name=$1; shift
        local envs=(LD_PRELOAD="$LIB")
        while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
        env LD_LIBRARY_PATH="$FAKE" GPUSLICE_DEVICES=$U1 GPUSLICE_MEMORY_LIMIT=1Gi \
                GPUSLICE_REGION="$TMP/r-$name" "${envs[@]}" "$PROBE" "$@" "${NAMES[@]}" >"$TMP/$name" 2>&1
        echo "exit $?" >>"$TMP/$name"
}
# ran NAME DESC: the probe started the driver, had a case for every entry point and exited 0
ran() {
        local f=$TMP/$1
        grep -q "^nocase " "$f" && { not_ok "$2: no case in device_probe.c for $(grep '^nocase' "$f" | cut -d' ' -f2 | tr '\n' ' ')"; return 1; }
        grep -qx "init 0" "$f" && grep -qx "exit 0" "$f" && return 0
        not_ok "$2: the probe did not run through"; sed 's/^/    # /' "$f" | tail -5; return 1
}
field() { grep -m1 "^$1 " "$2" | cut -d' ' -f"$3"; }
# The host is not a device: CU_DEVICE_CPU (-1) is a valid target of these.
HOST_OK=" cuMemAdvise cuMemPrefetchAsync cuMemPrefetchAsync_ptsz "
# refused NAME DESC ORDINAL: every entry point answered CUDA_ERROR_INVALID_DEVICE and reached no GPU
refused() {
        local f=$TMP/$1 bad=()
        ran "$1" "$2" || return
        for n in "${NAMES[@]}"; do
                local rc uuid; rc=$(field "$n" "$f" 3) uuid=$(field "$n" "$f" 4)
                if [ "$3" = -1 ] && [[ $HOST_OK == *" $n "* ]]; then
                        { [ "$rc" = 0 ] && [ -z "$uuid" ]; } || bad+=("$(grep -m1 "^$n " "$f") (the host: 0, no GPU)")
                        continue
                fi
                { [ "$rc" = $INVALID_DEVICE ] && [ "${uuid,,}" != "${U0,,}" ]; } || bad+=("$(grep -m1 "^$n " "$f")")
        done
        [ ${#bad[@]} = 0 ] && ok "$2: all ${#NAMES[@]} refused (CUDA_ERROR_INVALID_DEVICE), no GPU reached" ||
                { not_ok "$2: reached past the slice:"; printf '    # %s\n' "${bad[@]}"; }
}
# accepted NAME CONTROL DESC: every entry point answered as the bare driver does for GPU 1 (CONTROL:
# the same calls without the interposer), and a call that succeeded reached GPU 1 (or returned it)
accepted() {
        local f=$TMP/$1 c=$TMP/$2 bad=() okn=0
        ran "$1" "$3" || return
        ran "$2" "$3 (control without the interposer)" || return
        for n in "${NAMES[@]}"; do
                local rc crc uuid; rc=$(field "$n" "$f" 3) crc=$(field "$n" "$c" 3) uuid=$(field "$n" "$f" 4)
                if [ "$rc" != "$crc" ]; then bad+=("$(grep -m1 "^$n " "$f") (the driver alone: $crc)"); continue; fi
                [ "$rc" != 0 ] && continue
                okn=$((okn + 1))
                [ "${uuid,,}" = "${U1,,}" ] || bad+=("$(grep -m1 "^$n " "$f") (reached ${uuid:-no GPU}, not GPU 1)")
        done
        [ ${#bad[@]} = 0 ] && [ $okn -ge 40 ] &&
                ok "$3: all ${#NAMES[@]} answer as the driver does for GPU 1 ($okn succeeded, each on GPU 1)" ||
                { not_ok "$3: the slice's own GPU not answered as GPU 1 ($okn succeeded):"; printf '    # %s\n' "${bad[@]}"; }
}

# 1a. The driver initialised through our cuInit: it has GPU 1 only, as ordinal 0.
probe in0 -- 0 "$B1"
probe cin0 LD_PRELOAD= CUDA_VISIBLE_DEVICES=$U1 -- 0 "$B1"
accepted in0 cin0 "through cuInit, ordinal 0"
for o in 1 2 -1 99; do probe out$o -- $o "$B0"; refused out$o "through cuInit, made-up ordinal $o (bus id of GPU 0)" $o; done
# 1b. The driver initialised past the interposer: it shows both GPUs; the program's numbers are still
# the slice's (ordinal 0 is GPU 1, the driver's 1), translated both ways.
probe rin0 -- raw 0 "$B1"
probe crin1 LD_PRELOAD= GOOD=1 -- raw 1 "$B1"
accepted rin0 crin1 "past cuInit (the driver shows both), ordinal 0 = GPU 1"
grep -q "^cuDeviceGetUuid_v2 0 0 $U0" <(env LD_LIBRARY_PATH="$FAKE" "$PROBE" raw 0 "$B0" cuDeviceGetUuid_v2) &&
        ok "control: without the interposer that driver answers ordinal 0 as GPU 0" ||
        not_ok "control: the driver initialised past cuInit does not show GPU 0"
for o in 1 2 -1; do
        probe rout$o -- raw $o "$B0"; refused rout$o "past cuInit, ordinal $o (the driver's numbers of GPU 1 and GPU 0, GPU 0's bus id)" $o
done
# (A device the driver returns, cuDeviceGet's, cuCtxGetDevice's, a pointer's, a stream's, is read
# back through cuDeviceGetUuid_v2 as the program would: only the slice's number 0 names GPU 1.)

# 2. A pool's allocations count on the pool's GPU, not the current context's: 1280 MiB from GPU 1's
# pool (one made, then its default) with GPU 0 current, then 1280 MiB on GPU 0: both fit their 2 GiB,
# and GPU 1 shows the 1280 MiB (and its context) used. (Before: the second refused, GPU 1 1748 free.)
env LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$LIB" GPUSLICE_DEVICES=$U0,$U1 GPUSLICE_MEMORY_LIMIT=2Gi \
        GPUSLICE_REGION="$TMP/r-pool" "$PROBE" pool >"$TMP/pool" 2>&1
[ "$(awk '$1 == "pool" && $2 == 0 && $3 == 0 && $4 <= 768' "$TMP/pool" | wc -l)" = 2 ] &&
        ok "cuMemAllocFromPoolAsync counts on the pool's GPU (1280 MiB there, 1280 MiB on the current GPU, each within its 2 GiB)" ||
        { not_ok "pool allocations charged to the wrong GPU (pool RC, current-GPU RC, pool GPU's free MiB)"; sed 's/^/    # /' "$TMP/pool"; }

# 3. NVML: a GPU outside the slice is not found by UUID or bus id; the slice's is, with index 0.
cat >"$TMP/nv.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include "abi/nvml.h"
int main(int argc, char **argv)
{
        nvmlDevice_t h;
        unsigned idx = 99;
        nvmlInit_v2();
        for (int i = 1; i < argc; i++) {
                nvmlReturn_t u = nvmlDeviceGetHandleByUUID(argv[i], &h);
                nvmlReturn_t p = i + 1 < argc ? nvmlDeviceGetHandleByPciBusId_v2(argv[i + 1], &h) : 0;
                if (u == 0) nvmlDeviceGetIndex(h, &idx);
                printf("%s uuid=%d bus=%d index=%u\n", argv[i], u, p, u == 0 ? idx : 99);
                i++;
        }
        /* GPU 0's serial; the GPUs near GPU 1 and near CPU 0 (only the slice's in a slice) */
        unsigned n0 = 0, n1 = 0;
        nvmlReturn_t s = nvmlDeviceGetHandleBySerial("1320000000000", &h);
        if (nvmlDeviceGetHandleByUUID(argv[argc - 2], &h) == 0)
                nvmlDeviceGetTopologyNearestGpus(h, NVML_TOPOLOGY_SYSTEM, &n0, NULL);
        nvmlSystemGetTopologyGpuSet(0, &n1, NULL);
        printf("serial0=%d nearest=%u cpu0=%u\n", s, n0, n1);
        /* a pair with GPU 0's handle, made by pointer arithmetic from GPU 1's (the distance the
         * bare library shows, FORGE: bytes) as a program could guess it */
        const char *forge = getenv("FORGE");
        if (forge != NULL && nvmlDeviceGetHandleByUUID(argv[argc - 2], &h) == 0) {
                nvmlDevice_t other = (nvmlDevice_t)((char *)h - atol(forge));
                nvmlGpuTopologyLevel_t lvl;
                nvmlGpuP2PStatus_t p2p;
                int same;
                printf("pairs=%d,%d,%d own=%d\n", nvmlDeviceGetTopologyCommonAncestor(h, other, &lvl),
                       nvmlDeviceGetP2PStatus(other, h, NVML_P2P_CAPS_INDEX_READ, &p2p),
                       nvmlDeviceOnSameBoard(h, other, &same), nvmlDeviceOnSameBoard(h, h, &same));
        } else {
                nvmlDevice_t h0;
                if (nvmlDeviceGetHandleByIndex_v2(0, &h0) == 0 && nvmlDeviceGetHandleByIndex_v2(1, &h) == 0)
                        printf("forge=%ld\n", (long)((char *)h - (char *)h0));
        }
        return 0;
}
C
if cc -I"$SRC/src" -o "$TMP/nv" "$TMP/nv.c" -L"$FAKE" -l:libnvidia-ml.so.1 2>"$TMP/nv.log"; then
        env LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$LIB" GPUSLICE_DEVICES=$U1 "$TMP/nv" $U0 "00000000:3B:00.0" $U1 "00000000:86:00.0" >"$TMP/nvout" 2>&1
        env LD_LIBRARY_PATH="$FAKE" "$TMP/nv" $U0 "00000000:3B:00.0" >"$TMP/nvctl" 2>&1
        grep -qx "$U0 uuid=0 bus=0 index=0" "$TMP/nvctl" && grep -qx "$U0 uuid=6 bus=6 index=99" "$TMP/nvout" &&
                ok "NVML: GPU 0 by UUID and by bus id is NVML_ERROR_NOT_FOUND in the slice (found without it)" ||
                { not_ok "NVML lookups of a GPU outside the slice"; sed 's/^/    # /' "$TMP/nvout" "$TMP/nvctl"; }
        grep -qx "$U1 uuid=0 bus=0 index=0" "$TMP/nvout" && ok "NVML: the slice's GPU is found, as index 0" ||
                { not_ok "NVML lookups of the slice's GPU"; sed 's/^/    # /' "$TMP/nvout"; }
        env LD_LIBRARY_PATH="$FAKE" "$TMP/nv" $U1 "00000000:86:00.0" >"$TMP/nvctl1" 2>&1
        grep -qx "serial0=0 nearest=1 cpu0=2" "$TMP/nvctl1" && grep -qx "serial0=6 nearest=0 cpu0=1" "$TMP/nvout" &&
                ok "NVML: GPU 0 by serial is not found in the slice, the GPUs near GPU 1 and near CPU 0 are the slice's only (found, 1 and 2 without it)" ||
                { not_ok "NVML: serial and topology lists reach past the slice"; sed 's/^/    # /' "$TMP/nvout" "$TMP/nvctl1"; }
        forge=$(sed -n 's/^forge=//p' "$TMP/nvctl1")
        env LD_LIBRARY_PATH="$FAKE" FORGE="$forge" "$TMP/nv" $U1 "00000000:86:00.0" >"$TMP/nvpair0" 2>&1
        env LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$LIB" GPUSLICE_DEVICES=$U1 FORGE="$forge" "$TMP/nv" $U1 "00000000:86:00.0" >"$TMP/nvpair" 2>&1
        grep -qx "pairs=0,0,0 own=0" "$TMP/nvpair0" && grep -qx "pairs=2,2,2 own=0" "$TMP/nvpair" &&
                ok "NVML: a pair with GPU 0 (its handle forged from GPU 1's) is NVML_ERROR_INVALID_ARGUMENT in the slice (answered without it); GPU 1 with itself is" ||
                { not_ok "NVML: pairs with a GPU outside the slice"; sed 's/^/    # /' "$TMP/nvpair0" "$TMP/nvpair"; }
else
        not_ok "NVML lookups: cc cannot build the probe ($(head -1 "$TMP/nv.log"))"
fi

# 3b. MIG handles (the simulated 8-GPU host, GPU 2 with MIG on): a slice of one MIG device does not
# get its parent GPU from it; a slice of the whole GPU gets its MIG devices.
cat >"$TMP/mig.c" <<'C'
#include <stdio.h>
#include "abi/nvml.h"
int main(int argc, char **argv)
{
        nvmlDevice_t h, m, parent;
        nvmlInit_v2();
        if (argc < 2 || nvmlDeviceGetHandleByUUID(argv[1], &h) != NVML_SUCCESS)
                return 2;
        unsigned mig = 0;
        nvmlDeviceIsMigDeviceHandle(h, &mig);
        if (mig)
                printf("parent=%d\n", nvmlDeviceGetDeviceHandleFromMigDeviceHandle(h, &parent));
        else
                printf("mig0=%d\n", nvmlDeviceGetMigDeviceHandleByIndex(h, 0, &m));
        return 0;
}
C
MIGCONF=$SRC/tests/fakegpu/configs/8gpu-mig.conf M0=MIG-8c5f0e2a-6d1b-5a7e-9f3c-4b2d1e0a9c87 G2=GPU-2c3d4e5f-6071-8293-a4b5-c6d7e8f90a12
if cc -I"$SRC/src" -o "$TMP/mig" "$TMP/mig.c" -L"$FAKE" -l:libnvidia-ml.so.1 2>"$TMP/mig.log"; then
        m() { env FAKEGPU_CONFIG="$MIGCONF" LD_LIBRARY_PATH="$FAKE" "$@" 2>&1; }
        a=$(m "$TMP/mig" $M0) b=$(m LD_PRELOAD="$LIB" GPUSLICE_DEVICES=$M0 "$TMP/mig" $M0)
        c=$(m LD_PRELOAD="$LIB" GPUSLICE_DEVICES=$G2 "$TMP/mig" $G2)
        [ "$a" = parent=0 ] && [ "$b" = parent=6 ] && [ "$c" = mig0=0 ] &&
                ok "NVML: a MIG slice's parent GPU is NVML_ERROR_NOT_FOUND from its MIG handle (found without the slice); a GPU slice gets its MIG devices" ||
                not_ok "NVML MIG handles: bare '$a', MIG slice '$b', GPU slice '$c'"
else
        not_ok "NVML MIG handles: cc cannot build the probe ($(head -1 "$TMP/mig.log"))"
fi
finish
