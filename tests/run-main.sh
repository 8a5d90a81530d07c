#!/usr/bin/env bash
# `make run`: gpuslice info on this host's GPUs, or, where no NVIDIA driver is found, on the
# simulated GPU (tests/fakegpu), saying so.
set -euo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/.."
GS=$BUILD/gpuslice
if [ -e /proc/driver/nvidia/version ] || ldconfig -p 2>/dev/null | grep -q 'libnvidia-ml\.so\.1'; then
        echo "# NVIDIA driver found: gpuslice info on this host"
        exec "$GS" info
fi
conf=tests/fakegpu/configs/2gpu.conf
root=$(mktemp -d /tmp/gpuslice-fakeroot.XXXXXX)
trap 'rm -rf "$root"' EXIT
echo "# No NVIDIA driver on this machine: showing the SIMULATED GPU from $conf"
echo "# (fake driver root built in $root by tests/fakegpu/mkroot.sh)"
if [ "$(id -u)" = 0 ]; then
        tests/fakegpu/mkroot.sh --build "$BUILD" "$conf" "$root/driver" >/dev/null
        echo "# \$ gpuslice --root $root/driver info"
        "$GS" --root "$root/driver" info
else
        # Without root there is no chroot: load the fake NVML through the loader path instead.
        tests/fakegpu/mkroot.sh --build "$BUILD" --no-devices "$conf" "$root/driver" >/dev/null
        echo "# \$ FAKEGPU_CONFIG=... LD_LIBRARY_PATH=$root/driver/usr/lib/x86_64-linux-gnu gpuslice info"
        FAKEGPU_CONFIG="$root/driver/etc/fakegpu/gpus.conf" \
                LD_LIBRARY_PATH="$root/driver/usr/lib/x86_64-linux-gnu" "$GS" info
fi
