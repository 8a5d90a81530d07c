#!/usr/bin/env bash
# Does an MPS client in a container (its own mount namespace, its own /dev/shm) reach a host MPS
# daemon started by `gpuslice mps` through the pipe directory alone, or does it also need the
# daemon's /dev/shm?  tests/gpu/mps_ns_check.sh [BUILD_DIR]   (GPU host, root; stops what it starts)
# A record of what each client does (its rc= lines); what the record needs is checked (the probe
# built, the daemon started both times): PASS/FAIL lines, then "N passed, N failed, N skipped"
# (tests/gpu/lib.sh); exit 1 on a FAIL.
set -u
BUILD=${1:-build}
cd "$(dirname "$0")/../.."
. tests/gpu/lib.sh
GS=$PWD/$BUILD/gpuslice R=$(mktemp -d /tmp/gs-mpsns.XXXXXX)
[ -d "$BUILD/runtime-libs" ] && export LD_LIBRARY_PATH=$PWD/$BUILD/runtime-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cleanup() { "$GS" mps stop --mps-root "$R/root" >/dev/null 2>&1; rm -rf "$R"; }
finish_trap cleanup
check "nvcc builds tests/gpu/sm_count.cu" nvcc -o "$R/sms" tests/gpu/sm_count.cu -lcuda || finish
client() { # DESC PREP: run the probe at 30 % in a new mount namespace after PREP
        echo "== $1"
        unshare -m --propagation private -- sh -c "$2; CUDA_MPS_PIPE_DIRECTORY=\$(ls -d $R/root/*/pipe) CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30 timeout 60 $R/sms; echo rc=\$?; ls -la /dev/shm | grep -v '^total' | head -5" 2>&1
}
echo "##### 1: the daemon in the host's namespace"
check "gpuslice mps start (the host's namespace)" "$GS" mps start --mps-root "$R/root" || finish
client "client: the host's /dev/shm" "true"
client "client: a private, empty /dev/shm (a container's)" "mount -t tmpfs -o mode=1777 shm /dev/shm"
"$GS" mps stop --mps-root "$R/root"; echo "stop rc=$?"
echo "##### 2: the daemon with a /dev/shm of its own ($R/shm)"
mkdir -p "$R/shm" && chmod 1777 "$R/shm"
unshare -m --propagation private -- sh -c "mount --bind $R/shm /dev/shm && $GS mps start --mps-root $R/root"; rc=$?; echo "start rc=$rc"
check "gpuslice mps start with a /dev/shm of its own (exit $rc)" test "$rc" = 0
client "client: the host's /dev/shm" "true"
client "client: the daemon's /dev/shm ($R/shm) bound in" "mount --bind $R/shm /dev/shm"
client "client: a private, empty /dev/shm" "mount -t tmpfs -o mode=1777 shm /dev/shm"
ls -la "$R/shm"
"$GS" mps stop --mps-root "$R/root"; echo "stop rc=$?"
tail -20 "$R"/root/*/log/server.log 2>/dev/null; tail -10 "$R"/root/*/log/control.log 2>/dev/null
finish
