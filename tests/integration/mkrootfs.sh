#!/usr/bin/env bash
# [BUSYBOX=path] mkrootfs.sh DEST: a minimal container rootfs for the configure tests: busybox (static), the
# host's glibc pieces so dynamically linked programs (the fake nvidia-smi) run, a static ldconfig
# for `ldconfig -p`, Debian layout markers and an ld.so.conf that indexes the multiarch dirs.
set -euo pipefail
dest=$1
mkdir -p "$dest"/{bin,sbin,etc/ld.so.conf.d,proc,sys,dev,tmp,run,var,usr/bin,usr/lib/x86_64-linux-gnu,lib64}
ln -sfn usr/lib "$dest/lib"
cp "${BUSYBOX:-/bin/busybox}" "$dest/bin/busybox"
for a in sh ls cat stat grep head wc test echo mount readlink sleep id env true false tr cut; do
        ln -sfn busybox "$dest/bin/$a"
done
# ldconfig for `ldconfig -p` inside (Debian's is static-pie); Ubuntu's /sbin/ldconfig is a wrapper.
ldc=/sbin/ldconfig; [ -x /sbin/ldconfig.real ] && ldc=/sbin/ldconfig.real
cp "$ldc" "$dest/sbin/ldconfig"
# glibc for dynamically linked test programs (read the whole listing: an early exit of awk would
# SIGPIPE ldconfig and, under pipefail, abort this script half-way)
cache=$(ldconfig -p)
for l in libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1 libstdc++.so.6 libgcc_s.so.1; do
        src=$(awk -v n="$l" '$1 == n && /x86-64/ { print $NF; exit }' <<<"$cache")
        [ -n "$src" ] && cp -L "$src" "$dest/usr/lib/x86_64-linux-gnu/$l"
done
cp -L /lib64/ld-linux-x86-64.so.2 "$dest/lib64/ld-linux-x86-64.so.2"
echo 12.0 >"$dest/etc/debian_version"
echo 'include /etc/ld.so.conf.d/*.conf' >"$dest/etc/ld.so.conf"
printf '/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu\n' >"$dest/etc/ld.so.conf.d/x86_64-linux-gnu.conf"
chmod 1777 "$dest/tmp"
