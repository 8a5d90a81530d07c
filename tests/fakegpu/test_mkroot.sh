#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Self-test of tests/fakegpu/mkroot.sh, the nvidia-smi stand-in and the MPS control client.
# usage: test_mkroot.sh FAKEGPU_SOURCE_DIR BUILD_DIR
set -uo pipefail
src=${1:?source dir} build=${2:?build dir}
mkroot=$src/mkroot.sh
tmp=$(mktemp -d /tmp/fakegpu-mkroot.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
nok=0 nfail=0
ok() { nok=$((nok + 1)); }
not_ok() { nfail=$((nfail + 1)); echo "not ok - $*"; }
check() { local desc=$1; shift; if "$@"; then ok; else not_ok "$desc"; fi; }

if [ "$(id -u)" -eq 0 ]; then devopt=(); else devopt=(--fake-devices); fi
ver=580.159.04
lib=usr/lib/x86_64-linux-gnu

mk() { # mk NAME CONFIG [opts]
	local name=$1 conf=$2; shift 2
	"$mkroot" --build "$build" "${devopt[@]}" "$@" "$src/configs/$conf" "$tmp/$name" >"$tmp/$name.log" 2>&1
}

# ---- one GPU --------------------------------------------------------------------------------
if mk one 1gpu.conf; then ok; else not_ok "mkroot 1gpu.conf"; cat "$tmp/one.log"; fi
r=$tmp/one
check "fake NVML under its versioned name" test -f "$r/$lib/libnvidia-ml.so.$ver"
check "libnvidia-ml.so.1 link" test "$(readlink "$r/$lib/libnvidia-ml.so.1")" = "libnvidia-ml.so.$ver"
check "libcuda.so.1 link" test "$(readlink "$r/$lib/libcuda.so.1")" = "libcuda.so.$ver"
check "libGLX_nvidia.so.0 link" test "$(readlink "$r/$lib/libGLX_nvidia.so.0")" = "libGLX_nvidia.so.$ver"
check "libnvidia-tls has no .so.1" test ! -e "$r/$lib/libnvidia-tls.so.1"
check "libnvidia-tls versioned" test -f "$r/$lib/libnvidia-tls.so.$ver"
check "decoy libcuda" test -f "$r/usr/lib/nvidia-470/libcuda.so.470.82.01"
check "ld.so.cache" test -s "$r/etc/ld.so.cache"
check "nvidia-smi" test -x "$r/usr/bin/nvidia-smi"
for b in nvidia-debugdump nvidia-persistenced nvidia-cuda-mps-control nvidia-cuda-mps-server; do
	check "$b" test -x "$r/usr/bin/$b"
done
# The simulated MPS control (fake_mps_control.c; the integration test test_mps.sh runs its daemon):
# the server is the same binary, and the client without a daemon fails as the real one does.
check "mps server is the simulated control" cmp -s "$r/usr/bin/nvidia-cuda-mps-control" "$r/usr/bin/nvidia-cuda-mps-server"
env -i CUDA_MPS_PIPE_DIRECTORY="$tmp/no-mps" "$r/usr/bin/nvidia-cuda-mps-control" </dev/null >"$tmp/mps.out" 2>&1
check "mps client without a daemon exits 1" test $? = 1
check "... saying so" grep -qx "Cannot find MPS control daemon process" "$tmp/mps.out"
check "persistenced socket" test -S "$r/var/run/nvidia-persistenced/socket"
check "var/run is a symlink" test -L "$r/var/run"
check "mps dir" test -d "$r/tmp/nvidia-mps"
check "gsp firmware" test -f "$r/lib/firmware/nvidia/$ver/gsp_ga10x.bin"
check "gsp firmware tu10x" test -f "$r/lib/firmware/nvidia/$ver/gsp_tu10x.bin"
check "proc version" grep -q "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  $ver  Release Build" "$r/proc/driver/nvidia/version"
check "params ModifyDeviceFiles" grep -qx "ModifyDeviceFiles: 1" "$r/proc/driver/nvidia/params"
check "gpu information" grep -q "GPU UUID: 	 GPU-6b1fe2a6-3b64-d9c1-4a3e-5f0b2c7d8e91" "$r/proc/driver/nvidia/gpus/0000:00:06.0/information"
check "gpu information minor" grep -q "Device Minor: 	 0" "$r/proc/driver/nvidia/gpus/0000:00:06.0/information"
check "config copy" cmp -s "$src/configs/1gpu.conf" "$r/etc/fakegpu/gpus.conf"
if [ "$(id -u)" -eq 0 ]; then
	check "nvidiactl is 195:255" test "$(stat -c '%F %t:%T' "$r/dev/nvidiactl")" = "character special file c3:ff"
	check "nvidia0 is 195:0" test "$(stat -c '%t:%T' "$r/dev/nvidia0")" = "c3:0"
	check "nvidia-modeset is 195:254" test "$(stat -c '%t:%T' "$r/dev/nvidia-modeset")" = "c3:fe"
	check "nvidia-uvm is a char device" test -c "$r/dev/nvidia-uvm"
else
	check "nvidiactl placeholder" test -f "$r/dev/nvidiactl"
	check "nvidia0 placeholder" test -f "$r/dev/nvidia0"
fi

# The cache lists the decoy first and the real library second; both resolve in the root.
ldconfig=$(command -v ldconfig || echo /sbin/ldconfig)
"$ldconfig" -p -C "$r/etc/ld.so.cache" >"$tmp/cache.txt" 2>&1
check "cache has libnvidia-ml.so.1" grep -q "libnvidia-ml.so.1 (libc6,x86-64) => /$lib/libnvidia-ml.so.1" "$tmp/cache.txt"
first_cuda=$(grep -m1 'libcuda.so.1 ' "$tmp/cache.txt")
check "decoy libcuda is first in the cache" grep -q nvidia-470 <<<"$first_cuda"
check "cache has the real libcuda.so.1" grep -q "libcuda.so.1 (libc6,x86-64) => /$lib/libcuda.so.1" "$tmp/cache.txt"
check "cache has libnvidia-tls by full version" grep -q "libnvidia-tls.so.$ver (libc6,x86-64)" "$tmp/cache.txt"
if command -v readelf >/dev/null; then
	check "libcuda SONAME" grep -q 'Library soname: \[libcuda.so.1\]' <(readelf -d "$r/$lib/libcuda.so.$ver")
	check "tls ABI note" grep -q 'OS: Linux, ABI: 2.3.99' <(readelf -n "$r/$lib/libnvidia-tls.so.$ver")
	check "tls ABI note in PT_NOTE" grep -q 'NOTE' <(readelf -lW "$r/$lib/libnvidia-tls.so.$ver")
	if [ -e "$r/usr/lib/i386-linux-gnu/libcuda.so.$ver" ]; then
		check "32-bit libcuda is ELF32" grep -q 'ELF32' <(readelf -h "$r/usr/lib/i386-linux-gnu/libcuda.so.$ver")
		check "32-bit tls ABI note" grep -q 'ABI: 2.3.99' <(readelf -n "$r/usr/lib/i386-linux-gnu/libnvidia-tls.so.$ver")
	fi
fi

# nvidia-smi stand-in, run against the root's libraries and config.
smi() { LD_LIBRARY_PATH=$1/$lib FAKEGPU_CONFIG=$1/etc/fakegpu/gpus.conf "$1/usr/bin/nvidia-smi" "${@:2}"; }
check "nvidia-smi -L" test "$(smi "$r" -L)" = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-6b1fe2a6-3b64-d9c1-4a3e-5f0b2c7d8e91)"
smi "$r" -q >"$tmp/q.txt"
check "nvidia-smi -q driver" grep -qx "Driver Version                            : $ver" "$tmp/q.txt"
check "nvidia-smi -q cuda" grep -qx "CUDA Version                              : 13.0" "$tmp/q.txt"
check "nvidia-smi -q name" grep -qx "    Product Name                          : NVIDIA H100 80GB HBM3" "$tmp/q.txt"
check "nvidia-smi -q bus" grep -qx "        Bus Id                            : 00000000:00:06.0" "$tmp/q.txt"
check "nvidia-smi -q memory" grep -qx "        Total                             : 81559 MiB" "$tmp/q.txt"
LD_LIBRARY_PATH=$r/$lib FAKEGPU_CONFIG=/nonexistent "$r/usr/bin/nvidia-smi" -L >/dev/null 2>&1
check "nvidia-smi without a driver exits 9" test $? -eq 9

# As root: the fake NVML loads inside a chroot into the root, through the root's ld.so.cache.
if [ "$(id -u)" -eq 0 ]; then
	check "NVML in a chroot" test "$("$build/tests/fakegpu/fakegpu-tool" chroot-nvml "$r" 2>&1)" = \
		"0 GPU-6b1fe2a6-3b64-d9c1-4a3e-5f0b2c7d8e91 NVIDIA H100 80GB HBM3"
fi

# ---- DESTDIR safety -------------------------------------------------------------------------
mk one 1gpu.conf
check "non-empty DESTDIR refused" test $? -ne 0
mk one 2gpu.conf --force
check "--force rebuilds our own root" test $? -eq 0
check "--force replaced the config" cmp -s "$src/configs/2gpu.conf" "$r/etc/fakegpu/gpus.conf"
mkdir -p "$tmp/foreign" && echo keep >"$tmp/foreign/file"
mk foreign 1gpu.conf --force
check "--force refuses a foreign directory" test $? -ne 0
check "foreign directory untouched" test "$(cat "$tmp/foreign/file")" = keep
printf 'driver 1\n' >"$tmp/bad.conf"
"$mkroot" --build "$build" "${devopt[@]}" "$tmp/bad.conf" "$tmp/bad" >"$tmp/bad.log" 2>&1
check "invalid config refused" test $? -ne 0
check "invalid config: message" grep -q "missing 'cuda" "$tmp/bad.log"
check "invalid config: no DESTDIR" test ! -e "$tmp/bad"

# ---- two GPUs: minor != index ---------------------------------------------------------------
r=$tmp/one
check "2gpu: nvidia2 for index 1" test -e "$r/dev/nvidia2"
check "2gpu: information dir lower-case" test -f "$r/proc/driver/nvidia/gpus/0000:86:00.0/information"
check "2gpu: minor 2" grep -q "Device Minor: 	 2" "$r/proc/driver/nvidia/gpus/0000:86:00.0/information"

# ---- MIG ------------------------------------------------------------------------------------
if mk mig 8gpu-mig.conf; then ok; else not_ok "mkroot 8gpu-mig.conf"; cat "$tmp/mig.log"; fi
r=$tmp/mig
caps=$r/proc/driver/nvidia/capabilities
check "mig config cap" test "$(cat "$caps/mig/config")" = "$(printf 'DeviceFileMinor: 1\nDeviceFileMode: 256\nDeviceFileModify: 1')"
check "mig monitor cap" grep -qx "DeviceFileMinor: 2" "$caps/mig/monitor"
check "gi2 access" test "$(cat "$caps/gpu2/mig/gi2/access")" = "$(printf 'DeviceFileMinor: 291\nDeviceFileMode: 292\nDeviceFileModify: 1')"
check "gi2/ci1 access" grep -qx "DeviceFileMinor: 293" "$caps/gpu2/mig/gi2/ci1/access"
check "gi9/ci0 access" grep -qx "DeviceFileMinor: 355" "$caps/gpu2/mig/gi9/ci0/access"
check "MIG-capable GPU with MIG off: empty capabilities/gpu3/mig" test -d "$caps/gpu3/mig" -a -z "$(ls -A "$caps/gpu3/mig")"
check "mig-minors gi" grep -qx "gpu2/gi2/access 291" "$r/proc/driver/nvidia-caps/mig-minors"
check "mig-minors ci" grep -qx "gpu2/gi9/ci0/access 355" "$r/proc/driver/nvidia-caps/mig-minors"
check "mig-minors config" grep -qx "config 1" "$r/proc/driver/nvidia-caps/mig-minors"
check "nvidia-cap291 node" test -e "$r/dev/nvidia-caps/nvidia-cap291"
check "nvidia-cap1 node" test -e "$r/dev/nvidia-caps/nvidia-cap1"
check "8 GPU nodes" test "$(ls "$r/dev" | grep -c '^nvidia[0-9]')" -eq 8
smi "$r" -L >"$tmp/L.txt"
check "nvidia-smi -L MIG line" grep -qx "  MIG 2c.3g.40gb  Device  1: (UUID: MIG-3e9d7b1f-0c4a-5e2d-8b6f-1a9c7e5d3b20)" "$tmp/L.txt"
check "nvidia-smi -L lines" test "$(wc -l <"$tmp/L.txt")" -eq 11

# ---- no devices -----------------------------------------------------------------------------
"$mkroot" --build "$build" --no-devices "$src/configs/1gpu.conf" "$tmp/nodev" >"$tmp/nodev.log" 2>&1
check "--no-devices works" test $? -eq 0
check "--no-devices: no nodes" test ! -e "$tmp/nodev/dev/nvidiactl"

echo "# $nok ok, $nfail not ok"
[ "$nfail" -eq 0 ]
