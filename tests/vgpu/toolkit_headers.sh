#!/usr/bin/env bash
# The CUDA toolkit's own cuda.h and nvml.h, from Debian's non-free archive, for tests that check
# the interposer against NVIDIA's headers rather than against our own table (test_devices.sh).
#
#   tests/vgpu/toolkit_headers.sh        prints the directories that hold both headers, one a line
#
# Debian's nvidia-cuda-dev (cuda.h; ~0.9 GB, ~5 s from deb.debian.org, only cuda.h is unpacked and
# the .deb removed) and libnvidia-ml-dev (nvml.h; 90 kB) of CUDA 12.4 (trixie non-free) are
# downloaded once into a private cache (GS_CUDA_CACHE, default /var/cache/gpuslice-cuda, as
# tests/gpu/prepare.sh) with a private apt state: the system's apt sources are not touched. A
# toolkit installed here (CUDA_HOME or /usr/local/cuda, with an nvml.h or beside the Debian one)
# is printed too. Exits 1 with the reason on stderr when no header could be had: the caller must
# say so (skip with the reason), never pass.
set -uo pipefail
CACHE=${GS_CUDA_CACHE:-/var/cache/gpuslice-cuda}
VER="12.4.127~12.4.1-2"
D=$CACHE/headers-12.4
mkdir -p "$CACHE" || { echo "cannot make the cache $CACHE" >&2; exit 1; }
# one download at a time (the build and the ASan build may run this test together)
exec 9>"$CACHE/.headers.lock"
flock -w 600 9 || { echo "another download into $CACHE did not finish in 10 min" >&2; exit 1; }
if [ ! -s "$D/usr/include/cuda.h" ] || [ ! -s "$D/usr/include/nvml.h" ]; then
        A=$CACHE/apt-headers
        K=/usr/share/keyrings/debian-archive-keyring.gpg
        [ -r "$K" ] || { echo "no $K (the debian-archive-keyring package)" >&2; exit 1; }
        command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null ||
                { echo "no apt-get/dpkg-deb on this machine" >&2; exit 1; }
        mkdir -p "$A/lists/partial" "$A/cache/archives/partial" "$D" || exit 1
        echo "deb [signed-by=$K] http://deb.debian.org/debian trixie non-free" >"$A/sources.list"
        APT=(-o Dir::Etc::sourcelist="$A/sources.list" -o Dir::Etc::sourceparts=/nonexistent
                -o Dir::State::Lists="$A/lists" -o Dir::Cache="$A/cache" -o Dir::State::status=/var/lib/dpkg/status
                -o APT::Sandbox::User=root -o Acquire::Retries=2)
        T=$(mktemp -d "$CACHE/dl.XXXXXX") || exit 1
        trap 'rm -rf "$T"' EXIT
        if ! apt-get "${APT[@]}" update -q >"$T/log" 2>&1; then
                echo "apt-get update of Debian's non-free lists failed: $(tail -1 "$T/log")" >&2; exit 1
        fi
        if ! (cd "$T" && apt-get "${APT[@]}" download -q "nvidia-cuda-dev=$VER" "libnvidia-ml-dev=$VER") >>"$T/log" 2>&1; then
                echo "downloading nvidia-cuda-dev/libnvidia-ml-dev $VER failed: $(tail -1 "$T/log")" >&2; exit 1
        fi
        # cuda.h lies near the start of the package's data: tar stops at its first occurrence
        dpkg-deb --fsys-tarfile "$T"/nvidia-cuda-dev_*.deb 2>/dev/null | tar -x -C "$T" --occurrence=1 ./usr/include/cuda.h 2>/dev/null
        dpkg-deb -x "$T"/libnvidia-ml-dev_*.deb "$T/ml"
        mkdir -p "$D/usr/include"
        cp "$T/usr/include/cuda.h" "$T/ml/usr/include/nvml.h" "$D/usr/include/" 2>/dev/null ||
                { echo "the packages held no usr/include/cuda.h or nvml.h" >&2; exit 1; }
fi
echo "$D/usr/include"
L=${CUDA_HOME:-/usr/local/cuda}/include
if [ -s "$L/cuda.h" ] && [ "$(realpath "$L")" != "$(realpath "$D/usr/include")" ]; then
        # an installed toolkit (CUDA 13 here) without its nvml.h: pair its cuda.h with Debian's nvml.h
        if [ -s "$L/nvml.h" ]; then echo "$L"; else
                mkdir -p "$CACHE/local-toolkit" && ln -sf "$L/cuda.h" "$CACHE/local-toolkit/cuda.h" &&
                        ln -sf "$D/usr/include/nvml.h" "$CACHE/local-toolkit/nvml.h" && echo "$CACHE/local-toolkit"; fi
fi
