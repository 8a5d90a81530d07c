#!/usr/bin/env bash
# Prepare what tests/gpu/run.sh carries to the GPU host (which has no package registry):
#   tests/gpu/prepare.sh [BUILD_DIR]
# - BUILD/runtime-libs: the Debian shared libraries our binaries need and Ubuntu may lack;
# - BUILD/gpu-carry: a static busybox, Debian's runc (gpu-carry/runc/: runc.gz, the shared
#   libraries it needs, and a `runc` wrapper that unpacks it once into /tmp and runs it with
#   those libraries; ~3.5 MB), a certificate for the DRA check's API server (gpu-carry/dra),
#   and the CUDA test programs built by three toolkits:
#   CUDA 13.0 (/usr/local/cuda), and CUDA 11.8 and 12.4 from Debian's non-free archive
#   (bookworm, trixie). Those two are downloaded as .deb files into a private cache
#   ($GS_CUDA_CACHE, default /var/cache/gpuslice-cuda) with a private apt state, and unpacked
#   there: nothing is installed, the system's apt sources are not touched, and no libcuda.so.1
#   lands on this machine. Each runtime is linked statically and shared (its libcudart.so
#   goes along, found through RPATH $ORIGIN/cudart-VER). GS_PREPARE_OLD_CUDA=0 leaves 11.8 and
#   12.4 out (no download; run.sh then checks CUDA 13.0 only).
# - GS_PREPARE_HAMI=/path/to/libvgpu.so: HAMi-core's library (built outside this tree, never
#   committed) copied to BUILD/gpu-carry/hami/libvgpu.so for bench/compute_limit.sh's hami part.
set -euo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/../.."
CARRY=$BUILD/gpu-carry
rm -rf "$BUILD/runtime-libs"
mkdir -p "$BUILD/runtime-libs" "$CARRY"
for l in /usr/lib/x86_64-linux-gnu/libjson-c.so.5 /lib/x86_64-linux-gnu/libcap.so.2 /usr/lib/x86_64-linux-gnu/libcmocka.so.0; do
        cp -L "$l" "$BUILD/runtime-libs/"
done
# ... and whatever else gpuslice and gpuslice-hook (the hooks run it) link (libseccomp, libyaml for
# CDI specs) that is not glibc, and
# libcurl with what it links (the DRA plugin loads it: part dra).
curl=$(ldconfig -p | awk '$1 == "libcurl.so.4" && /x86-64/ {print $NF; exit}')
for l in $(ldd "$BUILD/gpuslice" "$BUILD/gpuslice-hook" ${curl:+"$curl"} | awk '$3 ~ /^\// {print $3}') $curl; do
        case ${l##*/} in libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|ld-linux*) ;; *) cp -L "$l" "$BUILD/runtime-libs/" ;; esac
done
[ -x /bin/busybox ] || apt-get install -y -q busybox-static >/dev/null
cp /bin/busybox "$CARRY/"
if [ -n "${GS_PREPARE_HAMI:-}" ]; then
        mkdir -p "$CARRY/hami"
        cp -L "$GS_PREPARE_HAMI" "$CARRY/hami/libvgpu.so"
fi

# runc for the OCI hook and CDI checks (the GPU host has no container runtime). Carried
# compressed; the wrapper unpacks it into /tmp once and gives only runc its libraries
# (libseccomp), so nothing else on the host sees them.
[ -x /usr/sbin/runc ] || apt-get install -y -q runc >/dev/null
mkdir -p "$CARRY/runc"
gzip -9 -n -c /usr/sbin/runc >"$CARRY/runc/runc.gz"
for l in $(ldd /usr/sbin/runc | awk '$3 ~ /^\// {print $3}'); do
        case ${l##*/} in libc.so.*|ld-linux*) ;; *) cp -L "$l" "$CARRY/runc/" ;; esac
done
cat >"$CARRY/runc/runc" <<'EOF'
#!/bin/sh
# Debian 12's runc, carried by tests/gpu/prepare.sh: unpacked once into /tmp, run with the
# libraries carried next to it.
d=$(cd "$(dirname "$0")" && pwd)
bin=/tmp/gs-carried-runc-$(id -u)/runc
if [ ! -x "$bin" ] || [ "$d/runc.gz" -nt "$bin" ]; then
        mkdir -p "${bin%/*}" && gzip -dc "$d/runc.gz" >"$bin.$$" && chmod 755 "$bin.$$" && mv -f "$bin.$$" "$bin" || exit 1
fi
LD_LIBRARY_PATH=$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec "$bin" "$@"
EOF
chmod 755 "$CARRY/runc/runc"

# The DRA check's fake API server certificate (tests/gpu/dra_check.sh; the GPU host may lack openssl)
mkdir -p "$CARRY/dra"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 -subj /CN=localhost \
        -addext "subjectAltName=IP:127.0.0.1" -keyout "$CARRY/dra/key.pem" -out "$CARRY/dra/cert.pem" 2>/dev/null

NVCC13=${NVCC:-/usr/local/cuda/bin/nvcc}
ARCH=-arch=sm_90
"$NVCC13" -O2 $ARCH -o "$CARRY/cuda_smoke" tests/gpu/cuda_smoke.cu
"$NVCC13" -O2 $ARCH -o "$CARRY/cuda_fill" tests/gpu/cuda_fill.cu
"$NVCC13" -O2 $ARCH -o "$CARRY/vgpu_bench" bench/vgpu_bench.cu
"$NVCC13" -O2 $ARCH -o "$CARRY/cuda_startup" bench/cuda_startup.cu
"$NVCC13" -O2 $ARCH -o "$CARRY/compute_shapes" bench/compute_shapes.cu
"$NVCC13" -O2 $ARCH -o "$CARRY/latency" bench/latency.cu
"$NVCC13" -O2 $ARCH -o "$CARRY/green_probe" bench/green_probe.cu -L"${NVCC13%/bin/nvcc}/lib64/stubs" -lcuda
"$NVCC13" -O2 $ARCH -o "$CARRY/green_fence_probe" bench/green_fence_probe.cu -L"${NVCC13%/bin/nvcc}/lib64/stubs" -lcuda
"$NVCC13" -O2 $ARCH -o "$CARRY/spatial" bench/spatial/spatial.cu -L"${NVCC13%/bin/nvcc}/lib64/stubs" -lcuda
"$NVCC13" -O2 $ARCH -o "$CARRY/cudart_paths-13.0-static" tests/gpu/cudart_paths.cu
"$NVCC13" -O2 $ARCH --default-stream per-thread -o "$CARRY/cudart_paths-13.0-ptds" tests/gpu/cudart_paths.cu

# --- CUDA 11.8 and 12.4 from Debian non-free, unpacked into a private cache ------------------
CACHE=${GS_CUDA_CACHE:-/var/cache/gpuslice-cuda}
A=$CACHE/apt
mkdir -p "$A/lists/partial" "$A/archives/partial" "$A/cache"
K=/usr/share/keyrings/debian-archive-keyring.gpg
cat >"$A/sources.list" <<EOF
deb [signed-by=$K] http://deb.debian.org/debian bookworm non-free
deb [signed-by=$K] http://deb.debian.org/debian trixie non-free
EOF
APT=(-o Dir::Etc::sourcelist="$A/sources.list" -o Dir::Etc::sourceparts=/nonexistent -o Dir::State::Lists="$A/lists"
        -o Dir::Cache="$A/cache" -o Dir::State::status=/var/lib/dpkg/status -o APT::Sandbox::User=root)
declare -A VER=([11.8]="11.8.89~11.8.0-5~deb12u1" [12.4]="12.4.127~12.4.1-2")
declare -A TKVER=([11.8]="11.8.89~11.8.0-5~deb12u1" [12.4]="12.4.131~12.4.1-2")
declare -A RTPKG=([11.8]=libcudart11.0 [12.4]=libcudart12)
need_update=1
OLD_CUDA="11.8 12.4"
[ "${GS_PREPARE_OLD_CUDA:-1}" = 1 ] || OLD_CUDA=
# Their cooperative_groups.h needs libcu++ (<cuda/std/...>), which Debian packages apart, in main
# (bookworm's 1.8.1, the one CUDA 11.8 came with; it serves 12.4's headers too).
LIBCXX=$CACHE/libcu++
if [ -n "$OLD_CUDA" ] && [ ! -e "$LIBCXX/usr/include/cuda/std/type_traits" ]; then
        echo "prepare: downloading libcu++ 1.8.1 (Debian main)"
        mkdir -p "$LIBCXX/deb"
        (cd "$LIBCXX/deb" && apt-get download -q "libcu++-dev=1.8.1-2" >/dev/null 2>&1)
        dpkg-deb -x "$LIBCXX"/deb/*.deb "$LIBCXX"
        rm -rf "$LIBCXX/deb"
fi
for v in $OLD_CUDA; do
        X=$CACHE/cuda-$v
        if [ ! -x "$X/usr/lib/nvidia-cuda-toolkit/bin/nvcc" ]; then
                if [ $need_update = 1 ]; then
                        echo "prepare: fetching Debian's non-free package lists (private state in $A)"
                        apt-get "${APT[@]}" update -q >/dev/null
                        need_update=0
                fi
                D=$CACHE/debs-$v
                mkdir -p "$D" "$X"
                echo "prepare: downloading CUDA $v (nvidia-cuda-toolkit, nvidia-cuda-dev, ${RTPKG[$v]}; ~1 GB)"
                (cd "$D" && apt-get "${APT[@]}" download -q "nvidia-cuda-toolkit=${TKVER[$v]}" \
                        "nvidia-cuda-dev=${VER[$v]}" "${RTPKG[$v]}=${VER[$v]}" >/dev/null)
                for deb in "$D"/*.deb; do dpkg-deb -x "$deb" "$X"; done
                rm -rf "$D"
                # Debian's nvcc reads /etc/nvcc.profile: give it one that points into the cache.
                T=$X/usr
                rm -f "$T/lib/nvidia-cuda-toolkit/bin/nvcc.profile"
                cat >"$T/lib/nvidia-cuda-toolkit/bin/nvcc.profile" <<EOF
NVVMIR_LIBRARY_DIR = $T/lib/nvidia-cuda-toolkit/libdevice
PATH += $T/lib/nvidia-cuda-toolkit/bin:$T/bin:
INCLUDES += "-I$T/include" \$(_SPACE_)
LIBRARIES =+ \$(_SPACE_) -L$T/lib/x86_64-linux-gnu
EOF
        fi
        T=$X/usr
        # Debian pairs these toolkits with gcc 11/12; this machine's gcc 12 works for host code.
        nvcc() { PATH=$T/bin:$PATH "$T/lib/nvidia-cuda-toolkit/bin/nvcc" -ccbin /usr/bin/g++ -allow-unsupported-compiler -O2 $ARCH \
                -I"$LIBCXX/usr/include" "$@"; }
        mkdir -p "$CARRY/cudart-$v"
        cp -L "$T/lib/x86_64-linux-gnu/libcudart.so.${RTPKG[$v]#libcudart}" "$CARRY/cudart-$v/"
        SHARED=(-cudart shared -Xlinker -rpath -Xlinker "\$ORIGIN/cudart-$v")
        nvcc -o "$CARRY/cudart_paths-$v-static" tests/gpu/cudart_paths.cu
        nvcc --default-stream per-thread -o "$CARRY/cudart_paths-$v-ptds" tests/gpu/cudart_paths.cu
        nvcc "${SHARED[@]}" -o "$CARRY/cudart_paths-$v-shared" tests/gpu/cudart_paths.cu
        nvcc -o "$CARRY/cuda_fill-$v-static" tests/gpu/cuda_fill.cu
        nvcc "${SHARED[@]}" -o "$CARRY/cuda_fill-$v-shared" tests/gpu/cuda_fill.cu
        # The compute limiter under this runtime (bench/compute_limit.sh, CS_RUNTIMES): its
        # launches, graphs and cooperative launches, static and shared, and the per-thread stream.
        nvcc -o "$CARRY/compute_shapes-$v-static" bench/compute_shapes.cu
        nvcc --default-stream per-thread -o "$CARRY/compute_shapes-$v-ptds" bench/compute_shapes.cu
        nvcc "${SHARED[@]}" -o "$CARRY/compute_shapes-$v-shared" bench/compute_shapes.cu
done
du -sh "$CARRY"; du -sh "$CARRY/runc"; du -sh "$BUILD/runtime-libs"
