#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# mkroot.sh: build a fake NVIDIA driver root from a fakegpu config (see README.md).
#
# usage: mkroot.sh [--force] [--no-devices | --fake-devices] [--no-32bit] [--build DIR] CONFIG DESTDIR
#
#   CONFIG          a fakegpu config (tests/fakegpu/configs/*.conf); copied to DESTDIR/etc/fakegpu/gpus.conf
#   DESTDIR         must be missing or empty (or a root made by this script, with --force)
#   --force         empty and rebuild DESTDIR if it is a root made by mkroot.sh
#   --no-devices    do not create device nodes (mknod needs root; use this as non-root)
#   --fake-devices  create empty regular files in place of the device nodes (works as non-root)
#   --no-32bit      skip the 32-bit libraries (skipped anyway when `cc -m32` cannot link)
#   --build DIR     meson build directory holding tests/fakegpu/* (default: $GS_BUILD_DIR, else ./build)
#
# Needs: bash, coreutils, awk, ldconfig; root for the device nodes (default). Built artifacts
# come from the meson build (fake libnvidia-ml.so.1, stubs, nvidia-smi stand-in, fakegpu-tool).
set -euo pipefail

prog=${0##*/}
here=$(cd "$(dirname "$0")" && pwd)
die() { echo "$prog: $*" >&2; exit 1; }
note() { echo "$prog: $*" >&2; }

force=0 devices=mknod want32=1 build=${GS_BUILD_DIR:-./build}
while [ $# -gt 0 ]; do
	case $1 in
	--force) force=1 ;;
	--no-devices) devices=none ;;
	--fake-devices) devices=files ;;
	--no-32bit) want32=0 ;;
	--build) [ $# -ge 2 ] || die "--build needs a directory"; build=$2; shift ;;
	--build=*) build=${1#--build=} ;;
	-h|--help) sed -n '4,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	--) shift; break ;;
	-*) die "unknown option $1 (see --help)" ;;
	*) break ;;
	esac
	shift
done
[ $# -eq 2 ] || die "usage: $prog [--force] [--no-devices|--fake-devices] [--no-32bit] [--build DIR] CONFIG DESTDIR"
config=$1 dest=$2

fg=$build/tests/fakegpu
for f in libnvidia-ml.so.1 libfakegpu-stub.so libfakegpu-tls.so nvidia-smi fakegpu-stub-bin fakegpu-tool \
	nvidia-cuda-mps-control; do
	[ -e "$fg/$f" ] || die "$fg/$f not found: build first (ninja -C $build), or pass --build DIR"
done
tool=$fg/fakegpu-tool
[ -r "$config" ] || die "$config: cannot read"
if [ "$devices" = mknod ] && [ "$(id -u)" -ne 0 ]; then
	die "creating device nodes needs root; run as root, or pass --no-devices or --fake-devices"
fi
ldconfig=$(command -v ldconfig || true)
[ -n "$ldconfig" ] || for c in /sbin/ldconfig /usr/sbin/ldconfig; do [ -x "$c" ] && ldconfig=$c && break; done
[ -n "$ldconfig" ] || die "ldconfig not found"

# Validate the config with the fake NVML's own parser before touching DESTDIR.
dump=$("$tool" dump "$config") || die "$config: invalid config"

# DESTDIR: missing or empty; with --force, a previous root of ours is emptied.
marker=.fakegpu-root
if [ -e "$dest" ] && [ -n "$(ls -A "$dest" 2>/dev/null)" ]; then
	[ "$force" = 1 ] || die "$dest is not empty (pass --force to rebuild a root made by $prog)"
	[ -e "$dest/$marker" ] || die "$dest is not empty and was not made by $prog; refusing to touch it"
	rm -rf --one-file-system "${dest:?}"/* "${dest:?}"/.[!.]* 2>/dev/null || true
	[ -z "$(ls -A "$dest")" ] || die "$dest: could not empty it"
fi
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
[ "$dest" != / ] || die "refusing to use / as DESTDIR"
echo "fake NVIDIA driver root made by tests/fakegpu/mkroot.sh from $config" >"$dest/$marker"

# ---- config ---------------------------------------------------------------------------------
ver=$(awk '$1 == "driver" { print $2 }' <<<"$dump")
cuda=$(awk '$1 == "cuda" { print $2 }' <<<"$dump")
# gpu <index> <minor> <bus id> <uuid> <name...> / mig <gpu index> <gpu minor> <gi> <ci> <uuid>
mapfile -t gpu_lines < <(awk '$1 == "gpu"' <<<"$dump")
mapfile -t mig_lines < <(awk '$1 == "mig"' <<<"$dump")
mapfile -t migcap_lines < <(awk '$1 == "migcap"' <<<"$dump")

# ---- libraries ------------------------------------------------------------------------------
lib64=$dest/usr/lib/x86_64-linux-gnu
lib32=$dest/usr/lib/i386-linux-gnu
decoy=$dest/usr/lib/nvidia-470      # an older driver's leftovers: listed first in ld.so.conf
decoy_ver=470.82.01
mkdir -p "$lib64" "$decoy" "$dest/etc"

# NAME:SOVERSION, as the real driver installs them: lib<NAME>.so.<ver> with SONAME
# lib<NAME>.so.<SOVERSION> and a symlink of that name; V = the full driver version (no link).
libs64=(
	cuda:1 cudadebugger:1 nvidia-ptxjitcompiler:1 nvidia-nvvm:4 nvidia-opencl:1 nvidia-gpucomp:V
	nvidia-allocator:1 nvidia-pkcs11-openssl3:V nvidia-cfg:1 nvidia-encode:1 nvcuvid:1
	nvidia-opticalflow:1 nvidia-eglcore:V nvidia-glcore:V nvidia-tls:V nvidia-glsi:V nvidia-fbc:1
	nvidia-rtcore:V nvoptix:1 nvidia-glvkspirv:V GLX_nvidia:0 EGL_nvidia:0 GLESv2_nvidia:2
	GLESv1_CM_nvidia:1 nvidia-ngx:1
)
libs32=(
	cuda:1 nvidia-ml:1 nvidia-ptxjitcompiler:1 nvidia-nvvm:4 nvidia-opencl:1 nvidia-gpucomp:V
	nvidia-allocator:1 nvidia-encode:1 nvcuvid:1 nvidia-opticalflow:1 nvidia-eglcore:V
	nvidia-glcore:V nvidia-tls:V nvidia-glsi:V nvidia-fbc:1 nvidia-glvkspirv:V GLX_nvidia:0
	EGL_nvidia:0 GLESv2_nvidia:2 GLESv1_CM_nvidia:1
)

# install_lib DIR NAME SOVERSION SRC VERSION: copy SRC as lib<NAME>.so.<VERSION>, set its SONAME
# (unless SRC already carries the right one), and link lib<NAME>.so.<SOVERSION> to it.
install_lib() {
	local dir=$1 name=$2 sover=$3 src=$4 v=$5 file soname
	file=lib$name.so.$v
	if [ "$sover" = V ]; then soname=$file; else soname=lib$name.so.$sover; fi
	install -m 0755 "$src" "$dir/$file"
	"$tool" set-soname "$dir/$file" "$soname"
	[ "$soname" = "$file" ] || ln -sfn "$file" "$dir/$soname"
}

# The fake NVML under its real file name (its SONAME is already libnvidia-ml.so.1).
install -m 0755 "$fg/libnvidia-ml.so.1" "$lib64/libnvidia-ml.so.$ver"
ln -sfn "libnvidia-ml.so.$ver" "$lib64/libnvidia-ml.so.1"
for entry in "${libs64[@]}"; do
	name=${entry%%:*} sover=${entry##*:} src=$fg/libfakegpu-stub.so
	[ "$name" = nvidia-tls ] && src=$fg/libfakegpu-tls.so
	# A fake libcuda, once there is one in the build, replaces the stub.
	if [ "$name" = cuda ] && [ -e "$fg/libcuda.so.1" ]; then src=$fg/libcuda.so.1; fi
	install_lib "$lib64" "$name" "$sover" "$src" "$ver"
done
# Development links the driver installer also makes.
ln -sfn libcuda.so.1 "$lib64/libcuda.so"
ln -sfn libnvidia-ml.so.1 "$lib64/libnvidia-ml.so"
# VDPAU driver: in its own directory, not in the ld.so.cache (as on real systems).
mkdir -p "$lib64/vdpau"
install_lib "$lib64/vdpau" vdpau_nvidia 1 "$fg/libfakegpu-stub.so" "$ver"

# Decoys that must be filtered out by version: same SONAMEs, older version, earlier in the cache.
install_lib "$decoy" cuda 1 "$fg/libfakegpu-stub.so" "$decoy_ver"
install_lib "$decoy" nvidia-opencl 1 "$fg/libfakegpu-stub.so" "$decoy_ver"
# ... and one with this driver's soname but another version, beside the real one.
install -m 0755 "$fg/libfakegpu-stub.so" "$lib64/libnvidia-cfg.so.$decoy_ver"
"$tool" set-soname "$lib64/libnvidia-cfg.so.$decoy_ver" libnvidia-cfg.so.1

# 32-bit stand-ins, if this machine's compiler can produce i386 objects. They are linked with
# -nostdlib (no 32-bit libgcc needed); with a 32-bit libc.so.6 at hand they also get
# DT_NEEDED libc.so.6, so ldconfig files them as "libc6" like the real ones (else "ELF").
have32=0
if [ "$want32" = 1 ]; then
	cc=${CC:-cc}
	placeholder=libfakegpu-soname-placeholder-$(printf 'x%.0s' $(seq 64)).so
	libc32=()
	for c in /usr/lib32/libc.so.6 /usr/lib/i386-linux-gnu/libc.so.6 /lib/i386-linux-gnu/libc.so.6; do
		[ -e "$c" ] && libc32=(-Wl,--no-as-needed "$c") && break
	done
	tmp32=$(mktemp -d)
	if "$cc" -m32 -nostdlib -shared -fPIC -fvisibility=hidden -Wl,-soname,"$placeholder" \
		-o "$tmp32/stub.so" "$here/stub_lib.c" "${libc32[@]}" 2>/dev/null &&
		"$cc" -m32 -nostdlib -shared -fPIC -fvisibility=hidden -Wl,-soname,"$placeholder" \
			-o "$tmp32/tls.so" "$here/stub_tls.c" "${libc32[@]}" 2>/dev/null; then
		have32=1
		mkdir -p "$lib32"
		for entry in "${libs32[@]}"; do
			name=${entry%%:*} sover=${entry##*:} src=$tmp32/stub.so
			[ "$name" = nvidia-tls ] && src=$tmp32/tls.so
			install_lib "$lib32" "$name" "$sover" "$src" "$ver"
		done
	else
		note "skipping 32-bit libraries: '$cc -m32' cannot build an i386 shared object here"
	fi
	rm -rf "$tmp32"
fi

# ld.so.conf and a real ld.so.cache, made by ldconfig inside DESTDIR.
{
	echo /usr/lib/nvidia-470
	echo /usr/lib/x86_64-linux-gnu
	[ "$have32" = 1 ] && echo /usr/lib/i386-linux-gnu
} >"$dest/etc/ld.so.conf"
"$ldconfig" -r "$dest" 2>"$dest/.ldconfig.log" || { cat "$dest/.ldconfig.log" >&2; die "ldconfig -r $dest failed"; }
rm -f "$dest/.ldconfig.log"
[ -s "$dest/etc/ld.so.cache" ] || die "ldconfig made no $dest/etc/ld.so.cache"

# ---- binaries -------------------------------------------------------------------------------
mkdir -p "$dest/usr/bin"
install -m 0755 "$fg/nvidia-smi" "$dest/usr/bin/nvidia-smi"
for b in nvidia-debugdump nvidia-persistenced; do
	install -m 0755 "$fg/fakegpu-stub-bin" "$dest/usr/bin/$b"
done
# The simulated MPS control daemon; the same binary is the MPS server under that name.
for b in nvidia-cuda-mps-control nvidia-cuda-mps-server; do
	install -m 0755 "$fg/nvidia-cuda-mps-control" "$dest/usr/bin/$b"
done

# ---- firmware -------------------------------------------------------------------------------
fw=$dest/lib/firmware/nvidia/$ver
mkdir -p "$fw"
for f in gsp_ga10x.bin gsp_tu10x.bin; do
	printf 'fakegpu GSP firmware stand-in %s %s\n' "$f" "$ver" >"$fw/$f"
done

# ---- IPC ------------------------------------------------------------------------------------
# /var/run is a relative symlink to /run, as on current distributions.
mkdir -p "$dest/run/nvidia-persistenced" "$dest/var" "$dest/tmp/nvidia-mps"
ln -sfn ../run "$dest/var/run"
"$tool" mksock "$dest/run/nvidia-persistenced/socket"
chmod 1777 "$dest/tmp"

# ---- /proc/driver/nvidia --------------------------------------------------------------------
proc=$dest/proc/driver/nvidia
mkdir -p "$proc/gpus" "$dest/proc/driver/nvidia-caps"
cat >"$proc/version" <<EOF
NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  $ver  Release Build  (dvs-builder@U16-I3-B03-4-3)  Thu Jul 17 20:40:32 UTC 2025
GCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04) 
EOF
cat >"$proc/params" <<'EOF'
ResmanDebugLevel: 4294967295
RmLogonRC: 1
ModifyDeviceFiles: 1
DeviceFileUID: 0
DeviceFileGID: 0
DeviceFileMode: 438
InitializeSystemMemoryAllocations: 1
UsePageAttributeTable: 4294967295
EnableMSI: 1
EnablePCIeGen3: 0
MemoryPoolSize: 0
KMallocHeapMaxSize: 0
VMallocHeapMaxSize: 0
IgnoreMMIOCheck: 0
EnableStreamMemOPs: 0
EnableUserNUMAManagement: 1
NvLinkDisable: 0
RmProfilingAdminOnly: 1
PreserveVideoMemoryAllocations: 0
EnableS0ixPowerManagement: 0
S0ixPowerManagementVideoMemoryThreshold: 256
DynamicPowerManagement: 3
DynamicPowerManagementVideoMemoryThreshold: 200
RegisterPCIDriver: 1
EnablePCIERelaxedOrderingMode: 0
EnableResizableBar: 0
EnableGpuFirmware: 18
EnableGpuFirmwareLogs: 2
RmNvlinkBandwidthLinkCount: 0
EnableDbgBreakpoint: 0
OpenRmEnableUnsupportedGpus: 1
DmaRemapPeerMmio: 1
ImexChannelCount: 2048
CreateImexChannel0: 0
GrdmaPciTopoCheckOverride: 0
RegistryDwords: ""
RegistryDwordsPerDevice: ""
RmMsg: ""
GpuBlacklist: ""
TemporaryFilePath: ""
ExcludedGpus: ""
EOF
printf 'Binary: ""\n' >"$proc/registry"
for line in "${gpu_lines[@]}"; do
	read -r _ idx minor busid uuid name <<<"$line"
	mkdir -p "$proc/gpus/$busid"
	printf 'Model: \t\t %s\nIRQ:   \t\t %u\nGPU UUID: \t %s\nVideo BIOS: \t %s\nBus Type: \t PCIe\nDMA Size: \t 52 bits\nDMA Mask: \t 0xfffffffffffff\nBus Location: \t %s\nDevice Minor: \t %u\nGPU Firmware: \t %s\nGPU Excluded:\t No\n' \
		"$name" $((idx + 100)) "$uuid" 92.00.99.00.01 "$busid" "$minor" "$ver" >"$proc/gpus/$busid/information"
	printf 'Runtime D3 status:          Not supported\nVideo Memory:               Active\n\nGPU Hardware Support:\n Video Memory Self Refresh: Not Supported\n Video Memory Off:          Not Supported\n' \
		>"$proc/gpus/$busid/power"
done

# MIG capabilities. Minor numbers as the driver assigns them: config 1, monitor 2, then per
# GPU minor g (0..31), GPU instance i (0..14): gi access 3 + 135g + 9i, ci c access that + 1 + c.
mig_minor_gi() { echo $((3 + 135 * $1 + 9 * $2)); }
mig_minor_ci() { echo $((3 + 135 * $1 + 9 * $2 + 1 + $3)); }
awk 'BEGIN {
	print "config 1"; print "monitor 2";
	for (g = 0; g < 32; g++) for (i = 0; i < 15; i++) {
		m = 3 + 135 * g + 9 * i
		printf "gpu%d/gi%d/access %d\n", g, i, m
		for (c = 0; c < 8; c++) printf "gpu%d/gi%d/ci%d/access %d\n", g, i, c, m + 1 + c
	}
}' >"$dest/proc/driver/nvidia-caps/mig-minors"
caps=$proc/capabilities
mkdir -p "$caps/mig"
cap_file() { printf 'DeviceFileMinor: %u\nDeviceFileMode: %u\nDeviceFileModify: 1\n' "$2" "$3" >"$1"; }
cap_file "$caps/mig/config" 1 256
cap_file "$caps/mig/monitor" 2 256
cap_minors=("1:256" "2:256")
# Every MIG-capable GPU has a capabilities/gpu<minor>/mig directory, MIG on or off.
for line in "${migcap_lines[@]}"; do
	read -r _ idx minor <<<"$line"
	mkdir -p "$caps/gpu$minor/mig"
done
for line in "${mig_lines[@]}"; do
	read -r _ idx minor gi ci uuid <<<"$line"
	d=$caps/gpu$minor/mig/gi$gi
	mkdir -p "$d/ci$ci"
	m=$(mig_minor_gi "$minor" "$gi")
	cap_file "$d/access" "$m" 292
	cap_minors+=("$m:292")
	m=$(mig_minor_ci "$minor" "$gi" "$ci")
	cap_file "$d/ci$ci/access" "$m" 292
	cap_minors+=("$m:292")
done

# ---- /dev -----------------------------------------------------------------------------------
proc_major() { awk -v n="$1" '$2 == n { print $1; exit }' /proc/devices 2>/dev/null; }
uvm_major=$(proc_major nvidia-uvm); uvm_major=${uvm_major:-510}
caps_major=$(proc_major nvidia-caps); caps_major=${caps_major:-511}
mkdir -p "$dest/dev/nvidia-caps"
# The root's /proc/devices: the driver's character majors (nvidia-caps there means the MIG
# capabilities are /dev nodes, as on R450+ drivers).
printf 'Character devices:\n  1 mem\n  5 /dev/tty\n195 nvidia\n195 nvidiactl\n%3d nvidia-uvm\n%3d nvidia-caps\n\nBlock devices:\n  7 loop\n' \
	"$uvm_major" "$caps_major" >"$dest/proc/devices"
# node PATH MAJOR MINOR MODE
node() {
	case $devices in
	mknod) rm -f "$dest/dev/$1"; mknod -m "$4" "$dest/dev/$1" c "$2" "$3" ;;
	files) : >"$dest/dev/$1"; chmod "$4" "$dest/dev/$1" ;;
	none) ;;
	esac
}
node nvidiactl 195 255 0666
node nvidia-modeset 195 254 0666
node nvidia-uvm "$uvm_major" 0 0666
node nvidia-uvm-tools "$uvm_major" 1 0666
for line in "${gpu_lines[@]}"; do
	read -r _ idx minor _ <<<"$line"
	node "nvidia$minor" 195 "$minor" 0666
done
for cm in $(printf '%s\n' "${cap_minors[@]}" | sort -u -t: -k1,1n); do
	m=${cm%%:*} mode=${cm##*:}
	node "nvidia-caps/nvidia-cap$m" "$caps_major" "$m" "$(printf '%o' "$mode")"
done

# ---- config ---------------------------------------------------------------------------------
mkdir -p "$dest/etc/fakegpu"
install -m 0644 "$config" "$dest/etc/fakegpu/gpus.conf"

note "made $dest: driver $ver, CUDA $cuda, ${#gpu_lines[@]} GPU(s), ${#mig_lines[@]} MIG device(s)," \
	"devices: $devices, 32-bit: $([ "$have32" = 1 ] && echo yes || echo no)"
