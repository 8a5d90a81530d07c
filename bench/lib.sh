# shellcheck shell=bash
# Helpers shared by the container benchmarks (bench/configure.sh, bench/hook.sh); sourced, from
# the source tree's root. Sourcing it makes W, a work directory under /tmp that is removed at
# exit together with every container process started here, and W/base, a minimal rootfs
# (tests/integration/mkrootfs.sh, with $BUSYBOX or /bin/busybox).
#   start NAME        a "container": W/rNAME (a copy of W/base) and an unshare'd process in its own
#                     mount namespace with that rootfs bind-mounted and /proc mounted in it, as a
#                     runtime leaves it before pivot_root; its pid in W/NAME.pid
#   pid_of NAME       that pid
#   ms A B            B - A for two `date +%s%N` readings, in microseconds (the name is historical)
#   median, max       of microsecond values on stdin, printed in milliseconds (2 decimals)
W=$(mktemp -d /tmp/gs-bench.XXXXXX)
bench_cleanup() {
        local p
        for p in "$W"/*.pid; do [ -s "$p" ] && kill "$(cat "$p")" 2>/dev/null; done
        sleep 0.2
        rm -rf "$W"
}
trap bench_cleanup EXIT
BUSYBOX=${BUSYBOX:-/bin/busybox} tests/integration/mkrootfs.sh "$W/base" || exit 1
start() { # I: rootfs copy + container process
        cp -a "$W/base" "$W/r$1"
        ( exec unshare -m --propagation private -- sh -c "mount --bind '$W/r$1' '$W/r$1' && mount -t proc proc '$W/r$1/proc' && echo \$\$ >'$W/$1.pid' && exec sleep 600" ) >/dev/null 2>&1 &
        for _ in $(seq 100); do [ -s "$W/$1.pid" ] && return 0; sleep 0.02; done
        return 1
}
pid_of() { cat "$W/$1.pid"; }
ms() { echo "$(( ($2 - $1) / 1000 ))"; } # ns -> us
median() { sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.2f", m/1000}'; }
max() { sort -n | tail -1 | awk '{printf "%.2f", $1/1000}'; }
