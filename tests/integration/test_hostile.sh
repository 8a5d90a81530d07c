#!/usr/bin/env bash
# Hostile images: crafted rootfs trees must never make configure write or mount outside the
# rootfs. Every case ends in success confined to the rootfs, or a clear error with full rollback;
# the host is checked after each case.
. "$(dirname "$0")/lib.sh"

DRV=$(mkroot drv 1gpu.conf)
CANARY=$(mktemp -d /tmp/gs-canary.XXXXXX)
chmod 755 "$CANARY"
trap 'for p in "$TMP"/*.pid; do [ -s "$p" ] && kill "$(cat "$p")" 2>/dev/null; done; rm -rf "$TMP" "$CANARY"' EXIT
host_mounts() { awk '{print $5}' /proc/self/mountinfo | sort; }
host_mounts >"$TMP/host.mounts"
passwd_sum=$(sha256sum /etc/passwd)

# start NAME: a container process for the rootfs prepared at $TMP/NAME.rootfs
start() {
        local name=$1 rootfs=$TMP/$1.rootfs
        ( exec unshare -m --propagation private -- sh -c "mount --bind '$rootfs' '$rootfs' && mount -t proc proc '$rootfs/proc' && echo \$\$ >'$TMP/$name.pid' && exec sleep 600" ) >/dev/null 2>&1 &
        for _ in $(seq 50); do [ -s "$TMP/$name.pid" ] && break; sleep 0.1; done
}
cpid() { cat "$TMP/$1.pid" 2>/dev/null; }
ns_mounts() { nsenter -t "$(cpid "$1")" -m awk '{print $5}' /proc/self/mountinfo | sort; }

host_untouched() { # DESC
        local bad=""
        [ -z "$(ls -A "$CANARY")" ] || bad="$bad canary-written($(ls -A "$CANARY" | tr '\n' ' '))"
        host_mounts | cmp -s - "$TMP/host.mounts" || bad="$bad host-mounts-changed"
        [ "$(sha256sum /etc/passwd)" = "$passwd_sum" ] || bad="$bad /etc/passwd-changed"
        if [ -z "$bad" ]; then ok "$1: host untouched"; else not_ok "$1:$bad"; fi
}
# No mount in the container's namespace may sit outside its rootfs (beyond what was there).
confined() { # NAME DESC
        local r=$TMP/$1.rootfs
        ns_mounts "$1" | grep -v "^$r" | sort >"$TMP/$1.outside"
        if diff -q "$TMP/$1.outside" "$TMP/$1.outside0" >/dev/null; then ok "$2: no mount outside the rootfs"; else
                not_ok "$2: mounts outside the rootfs: $(diff "$TMP/$1.outside0" "$TMP/$1.outside" | grep '^>' | head -3 | tr '\n' ' ')"; fi
}

# up NAME DESC: the positive guard every hostile case's negative checks sit behind: the container
# process started and its mount namespace can be read (it holds the rootfs bind mount). Without
# it, an empty pid would make configure fail, nsenter print nothing, and every "no mount outside
# the rootfs" / "rolled back" comparison hold between two empty lists.
up() {
        local r=$TMP/$1.rootfs
        started "$2: the container process started" "$(cpid "$1")" || return 1
        ns_mounts "$1" >"$TMP/$1.before"
        if ! grep -qx -- "$r" "$TMP/$1.before"; then
                not_ok "$2: the container's mount table lacks its rootfs bind mount ($(wc -l <"$TMP/$1.before") mounts read)"; return 1; fi
        grep -v "^$r" "$TMP/$1.before" | sort >"$TMP/$1.outside0"
}

# case NAME DESC SETUP-COMMANDS (run in the rootfs dir) : runs configure, checks host/confinement,
# and, if configure failed, that the container namespace is back to its mounts before.
case_() {
        local name=$1 desc=$2 setup=$3 r=$TMP/$1.rootfs
        "$SRC/tests/integration/mkrootfs.sh" "$r" || { echo "mkrootfs failed" >&2; exit 1; }
        (cd "$r" && eval "$setup")
        start "$name"
        up "$name" "$desc" || return 0
        run "$name" -- "$GS" --root "$DRV" configure --pid "$(cpid "$name")" --compute --utility --device 0 --no-cgroups "$r"
        host_untouched "$desc"
        confined "$name" "$desc"
        if [ "$(rc_of "$name")" != 0 ]; then
                if grep -q "^gpuslice: [a-z-]* error: " "$TMP/$name.err"; then ok "$desc: clear error ($(head -c 120 "$TMP/$name.err"))"; else
                        not_ok "$desc: unclear failure: $(head -c 200 "$TMP/$name.err")"; fi
                ns_mounts "$name" | cmp -s - "$TMP/$name.before" && ok "$desc: rolled back" || not_ok "$desc: not rolled back"
        else
                local n0 n1
                n0=$(grep -c "^$r/" "$TMP/$name.before") n1=$(ns_mounts "$name" | grep -c "^$r/")
                if [ "$n1" -gt "$n0" ]; then ok "$desc: configured ($((n1 - n0)) mounts inside the rootfs)"; else
                        not_ok "$desc: configure succeeded but mounted nothing in the rootfs ($n0 -> $n1)"; fi
        fi
        kill "$(cpid "$name")" 2>/dev/null
}

case_ libabs "lib dir is an absolute symlink to a host dir" \
        "rm -rf usr/lib/x86_64-linux-gnu && ln -s $CANARY usr/lib/x86_64-linux-gnu"
case_ librel "lib dir is a ../ chain to a host dir" \
        "rm -rf usr/lib/x86_64-linux-gnu && ln -s ../../../../../../../../../..$CANARY usr/lib/x86_64-linux-gnu"
case_ usrabs "/usr is an absolute symlink to a host dir" \
        "rm -rf usr && mkdir -p $TMP/usrabs.keep && ln -s $CANARY usr"
case_ binabs "/usr/bin is a symlink to the host's /usr/bin" \
        "rm -rf usr/bin && ln -s /usr/bin usr/bin"
case_ devabs "/dev is a symlink to a host dir" \
        "rmdir dev && ln -s $CANARY dev"
case_ fwabs "firmware parent is a symlink to a host dir" \
        "mkdir -p usr/lib && ln -s $CANARY usr/lib/firmware"
case_ nodelink "a device destination is a symlink to a host file" \
        "ln -s /etc/passwd dev/nvidia0"
case_ liblink "a library destination is a symlink to a host file" \
        "ln -s /etc/passwd usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04"
case_ libdir "a library destination is a directory" \
        "mkdir -p usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04"
case_ preexist "an image that ships its own nvidia-smi file" \
        "echo '#!/bin/sh' > usr/bin/nvidia-smi"
case_ loop "a symlink loop on the way" \
        "rm -rf usr/bin && ln -s ../usr/bin usr/bin"

# A symlink swapped back and forth during configure (TOCTOU): the lib dir flips between a real
# directory and a link to the host canary while configure runs, 20 times.
r=$TMP/swap.rootfs
"$SRC/tests/integration/mkrootfs.sh" "$r" || { echo "mkrootfs failed" >&2; exit 1; }
start swap
up swap "swapped symlink" || finish
( d=$r/usr/lib; while :; do
        mv -T "$d/x86_64-linux-gnu" "$d/real" 2>/dev/null; ln -sfn "$CANARY" "$d/x86_64-linux-gnu" 2>/dev/null
        rm -f "$d/x86_64-linux-gnu" 2>/dev/null; mv -T "$d/real" "$d/x86_64-linux-gnu" 2>/dev/null
done ) &
flipper=$!
okruns=0 errruns=0 unclear=
for i in $(seq 20); do
        if "$GS" --root "$DRV" configure --pid "$(cpid swap)" --compute --device 0 --no-cgroups --ldconfig=/bin/true "$r" >/dev/null 2>"$TMP/swap.err"; then
                okruns=$((okruns + 1))
                nsenter -t "$(cpid swap)" -m sh -c "grep ' $r' /proc/self/mountinfo | awk '{print \$5}' | sort -r | while read m; do umount -l \"\$m\" 2>/dev/null; done; mount --bind '$r' '$r' 2>/dev/null; mount -t proc proc '$r/proc'" >/dev/null 2>&1
        else
                errruns=$((errruns + 1))
                grep -q "^gpuslice: [a-z-]* error: " "$TMP/swap.err" || unclear="$unclear run $i: $(head -c 120 "$TMP/swap.err");"
        fi
done
kill $flipper 2>/dev/null; wait $flipper 2>/dev/null
# Every run met the container (refused with gpuslice's own error, or configured it): a run that
# never started (no such binary, a crash) would count as "refused" and prove nothing.
if [ -z "$unclear" ]; then ok "swapped symlink: each of the $errruns refusals is a clear gpuslice error"; else
        not_ok "swapped symlink: unclear failures:$unclear"; fi
started "swapped symlink: the container process is still there after the 20 runs" "$(cpid swap)"
host_untouched "swapped symlink, 20 runs ($okruns succeeded, $errruns refused)"
confined swap "swapped symlink"
finish
