#!/usr/bin/env bash
# gpuslice configure against a real container process (unshare), with the simulated driver:
# files, nodes, masking, read-only mounts, ldconfig, device cgroup (v1), requirements, rollback.
. "$(dirname "$0")/lib.sh"

DRV=$(mkroot drv 2gpu.conf)

# container NAME: a rootfs and a process in its own mount namespace (bind-mounted rootfs, /proc),
# placed in a fresh v1 devices cgroup that (like a runtime) denies everything but /dev/null.
CGV1=/sys/fs/cgroup/devices
container() {
        local name=$1 rootfs=$TMP/$1.rootfs
        "$SRC/tests/integration/mkrootfs.sh" "$rootfs" || { echo "mkrootfs failed" >&2; exit 1; }
        if [ -d "$CGV1" ]; then
                mkdir -p "$CGV1/gs-it-$name"
                echo a >"$CGV1/gs-it-$name/devices.deny"
                echo "c 1:3 rwm" >"$CGV1/gs-it-$name/devices.allow"
        fi
        ( [ -d "$CGV1" ] && echo $BASHPID >"$CGV1/gs-it-$name/cgroup.procs"
          exec unshare -m --propagation private -- sh -c "mount --bind '$rootfs' '$rootfs' && mount -t proc proc '$rootfs/proc' && echo \$\$ >'$TMP/$name.pid' && exec sleep 600" ) >/dev/null 2>&1 &
        for _ in $(seq 50); do [ -s "$TMP/$name.pid" ] && break; sleep 0.1; done
        echo "$rootfs"
}
cpid() { cat "$TMP/$1.pid" 2>/dev/null; }
inside() { local name=$1; shift; nsenter -t "$(cpid "$name")" -m chroot "$TMP/$name.rootfs" "$@"; }
# Checks of a path in the container say what they saw as a word, so that "absent" can never be
# read from a container that could not be entered: verdict NAME CMD... prints "yes" (CMD
# succeeded in the container), "no" (it ran and failed) or nothing (nsenter/chroot/sh failed).
verdict() { local name=$1; shift; inside "$name" sh -c '"$@" >/dev/null 2>&1 && echo yes || echo no' sh "$@" 2>/dev/null; }
in_yes() { # NAME DESC CMD...: CMD succeeds in the container
        local v; v=$(verdict "$1" "${@:3}")
        if [ "$v" = yes ]; then ok "$2"; else not_ok "$2: ${v:-could not enter the container $1}"; fi
}
in_no() { # NAME DESC CMD...: CMD ran in the container and failed (a negative check proved to have run)
        local v; v=$(verdict "$1" "${@:3}")
        case $v in no) ok "$2" ;; yes) not_ok "$2: '${*:3}' succeeded" ;; *) not_ok "$2: could not enter the container $1" ;; esac
}
mounts_of() { nsenter -t "$(cpid "$1")" -m cat /proc/self/mountinfo | awk '{print $5, $6}' | sort; }
files_of() { (cd "$TMP/$1.rootfs" && find . -xdev | sort); }
cleanup_containers() {
        for p in "$TMP"/*.pid; do [ -s "$p" ] && kill "$(cat "$p")" 2>/dev/null; done
        sleep 0.2
        for d in "$CGV1"/gs-it-*; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done
}
trap 'cleanup_containers; rm -rf "$TMP"' EXIT

R=$(container c1)
started "c1: the container process" "$(cpid c1)"
run cfg -- "$GS" --root "$DRV" configure --pid "$(cpid c1)" --compute --utility --device 0 "$R"
expect_rc cfg 0 "configure --compute --utility --device 0 into an unshare container"

in_yes c1 "libcuda is in the container's lib dir" test -f /usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04
in_yes c1 "libnvidia-ml is there" test -f /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.580.159.04
in_yes c1 "nvidia-smi is in /usr/bin" test -f /usr/bin/nvidia-smi
in_no c1 "video libraries are not mounted without --video" test -e /usr/lib/x86_64-linux-gnu/libnvidia-encode.so.580.159.04
in_yes c1 "/dev/nvidia0 is a char device" test -c /dev/nvidia0
in_yes c1 "/dev/nvidiactl" test -c /dev/nvidiactl
in_yes c1 "/dev/nvidia-uvm (compute)" test -c /dev/nvidia-uvm
in_no c1 "the unselected GPU (minor 2) is absent from /dev" test -e /dev/nvidia2
in_no c1 "no /dev/nvidia-modeset without --display" test -e /dev/nvidia-modeset
inside c1 ls /proc/driver/nvidia/gpus >"$TMP/gpus.out" 2>&1
if [ "$(cat "$TMP/gpus.out")" = "0000:3b:00.0" ]; then ok "/proc/driver/nvidia/gpus holds only the selected GPU"; else
        not_ok "/proc/driver/nvidia/gpus: $(tr '\n' ' ' <"$TMP/gpus.out")"; fi
in_yes c1 "params has ModifyDeviceFiles: 0" grep -q "ModifyDeviceFiles: 0" /proc/driver/nvidia/params
in_no c1 "libraries are read-only" sh -c 'echo x > /usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04'
mounts_of c1 >"$TMP/c1.mounts"
flags_ok() { # PATH-SUFFIX FLAGS...: the mount at PATH has every flag
        local line; line=$(nsenter -t "$(cpid c1)" -m awk -v p="$R$1" '$5 == p {print $6}' /proc/self/mountinfo | tail -1)
        shift; for f in "$@"; do case ",$line," in *,"$f",*) ;; *) return 1;; esac; done
}
flags_ok /usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04 ro nosuid nodev && ok "libraries: ro,nosuid,nodev" || not_ok "library mount flags"
flags_ok /usr/bin/nvidia-smi ro nosuid nodev && ok "binaries: ro,nosuid,nodev" || not_ok "binary mount flags"
flags_ok /dev/nvidia0 ro nosuid noexec && ok "device nodes: ro,nosuid,noexec" || not_ok "device mount flags"
inside c1 readlink /usr/lib/x86_64-linux-gnu/libcuda.so >"$TMP/link.out" 2>&1
[ "$(cat "$TMP/link.out")" = libcuda.so.1 ] && ok "libcuda.so -> libcuda.so.1" || not_ok "libcuda.so link: $(cat "$TMP/link.out")"
inside c1 ldconfig -p >"$TMP/ldp.out" 2>&1
grep -q "libcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1" "$TMP/ldp.out" &&
        ok "ldconfig -p in the container lists libcuda.so.1" || { not_ok "ldconfig -p lacks libcuda.so.1"; head -5 "$TMP/ldp.out"; }
cp "$DRV/etc/fakegpu/gpus.conf" "$R/tmp/gpus.conf"
inside c1 env FAKEGPU_CONFIG=/tmp/gpus.conf nvidia-smi -L >"$TMP/smi.out" 2>&1 &&
        grep -q "GPU 0: NVIDIA A100-SXM4-40GB" "$TMP/smi.out" && ok "nvidia-smi -L runs in the container" ||
        { not_ok "nvidia-smi -L in the container"; head -5 "$TMP/smi.out"; }
if [ -d "$CGV1" ]; then
        list=$(cat "$CGV1/gs-it-c1/devices.list")
        case "$list" in *"c 195:0 rw"*) ok "cgroup v1 allows /dev/nvidia0";; *) not_ok "cgroup lacks 195:0: $list";; esac
        # the negative check only on a list that was read and holds what configure added
        case "$list" in *"c 195:255 rw"*)
                ok "cgroup v1 allows /dev/nvidiactl"
                case "$list" in *"c 195:2 "*) not_ok "cgroup allows the unselected GPU";; *) ok "cgroup does not allow the unselected GPU";; esac ;;
        *) not_ok "cgroup lacks 195:255: $list";; esac
else
        skip "cgroup v1 device checks: no v1 devices hierarchy on this host"
fi

# Requirements fail before anything is touched.
R2=$(container c2)
started "c2: the container process" "$(cpid c2)"
mounts_of c2 >"$TMP/c2.before"; files_of c2 >"$TMP/c2.fbefore"
# the "nothing changed" comparisons below sit behind this: the snapshot holds the container's mounts
grep -q "^$R2 " "$TMP/c2.before" && grep -qx ./bin/busybox "$TMP/c2.fbefore" &&
        ok "c2: its mounts and files were read (rootfs bind mount, /bin/busybox)" || not_ok "c2: no snapshot of the container"
run req -- "$GS" --root "$DRV" configure --pid "$(cpid c2)" --compute --device 0 --require 'cuda>=99' "$R2"
expect_rc req 1 "an unsatisfied requirement"
expect_err req "gpuslice: requirement error: unsatisfied condition: cuda>=99" "... with nvidia's message"
mounts_of c2 >"$TMP/c2.after"; files_of c2 >"$TMP/c2.fafter"
cmp -s "$TMP/c2.before" "$TMP/c2.after" && cmp -s "$TMP/c2.fbefore" "$TMP/c2.fafter" &&
        ok "... and nothing was mounted or created" || not_ok "requirement failure touched the container"

# Rollback: fail at every step in turn; the container must be exactly as before each time.
n=0 rolled=0
while :; do
        n=$((n + 1))
        run "fail$n" -- env GPUSLICE_TEST_FAIL_AT=$n "$GS" --root "$DRV" configure --pid "$(cpid c2)" --compute --utility --device 0 "$R2"
        [ "$(rc_of "fail$n")" = 0 ] && break
        mounts_of c2 >"$TMP/c2.after"; files_of c2 >"$TMP/c2.fafter"
        if cmp -s "$TMP/c2.before" "$TMP/c2.after" && cmp -s "$TMP/c2.fbefore" "$TMP/c2.fafter"; then
                rolled=$((rolled + 1))
        else
                not_ok "failure injected at step $n left traces: $(diff "$TMP/c2.before" "$TMP/c2.after" | head -3 | tr '\n' ' ')"
                diff "$TMP/c2.fbefore" "$TMP/c2.fafter" | head -5
        fi
        [ $n -gt 200 ] && break
done
[ "$rolled" = $((n - 1)) ] && [ "$n" -gt 10 ] && ok "failure injected at each of $((n - 1)) steps: fully rolled back every time" ||
        not_ok "rollback: $rolled of $((n - 1)) clean"
expect_rc "fail$n" 0 "with no failure injected the same configure succeeds"
# A build without failure injection (-Dfailure_injection off, as every release build: build/
# gpuslice-noinject, its fail_inject.c compiled without it) ignores GPUSLICE_TEST_FAIL_AT=1, at
# which the test build's gpuslice failed above (fail1)
R2N=$(container c2n)
run noinj -- env GPUSLICE_TEST_FAIL_AT=1 "$BUILD/gpuslice-noinject" --root "$DRV" configure --pid "$(cpid c2n)" \
        --compute --utility --device 0 "$R2N"
if [ "$(rc_of fail1)" != 0 ] && [ "$(rc_of noinj)" = 0 ] && ! grep -q "injected failure" "$TMP/noinj.err" 2>/dev/null; then
        ok "a build without failure injection ignores GPUSLICE_TEST_FAIL_AT=1 (configure succeeds; the test build's failed)"
else not_ok "GPUSLICE_TEST_FAIL_AT=1: test build exit $(rc_of fail1), build without injection exit $(rc_of noinj): $(head -c 300 "$TMP/noinj.err" 2>&1)"; fi
if grep -qa GPUSLICE_TEST_FAIL_AT "$GS" && [ -s "$BUILD/gpuslice-noinject" ] && ! grep -qa GPUSLICE_TEST_FAIL_AT "$BUILD/gpuslice-noinject"; then
        ok "... and does not contain the name GPUSLICE_TEST_FAIL_AT (the test build's gpuslice does)"
else not_ok "the name GPUSLICE_TEST_FAIL_AT: in the test build $(grep -ca GPUSLICE_TEST_FAIL_AT "$GS") time(s), in the build without injection $(grep -ca GPUSLICE_TEST_FAIL_AT "$BUILD/gpuslice-noinject" 2>&1)"; fi

# CUDA forward compatibility: the image's newer libcuda in /usr/local/cuda/compat.
compat_container() { # NAME MAJOR: a container whose image ships compat libcuda.so.<MAJOR>.10.01
        local r; r=$(container "$1")
        mkdir -p "$r/usr/local/cuda/compat"
        cp "$DRV/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04" "$r/usr/local/cuda/compat/libcuda.so.$2.10.01"
        echo "$r"
}
# ldcache_has_driver NAME DESC: `ldconfig -p` ran in the container (into $TMP/NAME.ldp) and lists
# the driver's libcuda.so.1 from the lib dir: the positive check before "the compat dir is not in
# the cache" (an ldconfig that never ran, or an empty cache, lacks the compat dir too).
ldcache_has_driver() {
        inside "$1" ldconfig -p >"$TMP/$1.ldp" 2>&1
        if grep -q "libcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1" "$TMP/$1.ldp"; then ok "$2"; return 0; fi
        not_ok "$2: ldconfig -p: $(head -3 "$TMP/$1.ldp" | tr '\n' ' ')"; return 1
}
R3=$(compat_container c3 590)
started "c3: the container process" "$(cpid c3)"
run compat -- "$GS" --root "$DRV" configure --pid "$(cpid c3)" --compute --device 0 "$R3"
expect_rc compat 0 "configure with a newer compat libcuda in the image (default mode: ldconfig)"
inside c3 ldconfig -p >"$TMP/c3.ldp" 2>&1
first=$(grep -m1 "libcuda.so.1 " "$TMP/c3.ldp")
case "$first" in *"=> /usr/local/cuda/compat/libcuda.so.1") ok "ldconfig mode: the image's newer libcuda.so.1 comes first";;
        *) not_ok "ldconfig mode: first libcuda.so.1 is: $first";; esac
mounts_of c3 >"$TMP/c3.mounts"
if ! grep -q "^$R3/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04 " "$TMP/c3.mounts"; then
        not_ok "ldconfig mode: the container's mount table lacks the driver's libcuda: $(wc -l <"$TMP/c3.mounts") mounts read"
elif grep -q "cuda/compat" "$TMP/c3.mounts"; then not_ok "a compat library was mounted"
else ok "... the driver's libcuda is mounted, and no file of the container's compat dir"; fi
R4=$(compat_container c4 570)
started "c4: the container process" "$(cpid c4)"
run compat2 -- "$GS" --root "$DRV" configure --pid "$(cpid c4)" --compute --device 0 "$R4"
expect_rc compat2 0 "configure with an older compat libcuda in the image"
ldcache_has_driver c4 "older compat: the container's ld.so.cache has the driver's libcuda.so.1" &&
        { grep -q "/usr/local/cuda/compat" "$TMP/c4.ldp" && not_ok "an older compat libcuda was indexed" ||
                ok "ldconfig mode: an older compat libcuda (570 < 580) is ignored"; }
R5=$(compat_container c5 590)
started "c5: the container process" "$(cpid c5)"
run compat3 -- "$GS" --root "$DRV" configure --pid "$(cpid c5)" --compute --device 0 --cuda-compat-mode=disabled "$R5"
expect_rc compat3 0 "configure --cuda-compat-mode=disabled"
ldcache_has_driver c5 "disabled mode: the container's ld.so.cache has the driver's libcuda.so.1" &&
        { grep -q "/usr/local/cuda/compat" "$TMP/c5.ldp" && not_ok "disabled mode indexed the compat dir" ||
                ok "--cuda-compat-mode=disabled ignores the image's compat libraries"; }
R6=$(compat_container c6 590)
started "c6: the container process" "$(cpid c6)"
run compat4 -- "$GS" --root "$DRV" configure --pid "$(cpid c6)" --compute --device 0 --cuda-compat-mode=mount "$R6"
expect_rc compat4 0 "configure --cuda-compat-mode=mount"
inside c6 readlink /usr/lib/x86_64-linux-gnu/libcuda.so.590.10.01 >"$TMP/c6.link" 2>&1
[ "$(cat "$TMP/c6.link")" = /usr/local/cuda/compat/libcuda.so.590.10.01 ] &&
        ok "mount mode: the compat library is linked (not mounted) into the lib dir" || not_ok "mount mode link: $(cat "$TMP/c6.link")"
inside c6 readlink /usr/lib/x86_64-linux-gnu/libcuda.so.1 >"$TMP/c6.so1" 2>&1
[ "$(cat "$TMP/c6.so1")" = libcuda.so.590.10.01 ] && ok "mount mode: ldconfig points libcuda.so.1 at the newer library" ||
        not_ok "mount mode: libcuda.so.1 -> $(cat "$TMP/c6.so1")"
run compatbad -- "$GS" --root "$DRV" configure --cuda-compat-mode=sometimes "$R6"
expect_rc compatbad 2 "an unknown --cuda-compat-mode is a usage error"

# MIG: a MIG device brings its parent's node, its GI/CI access files and their caps nodes.
MIGDRV=$(mkroot migdrv 8gpu-mig.conf)
R7=$(container c7)
started "c7: the container process" "$(cpid c7)"
run mig -- "$GS" --root "$MIGDRV" configure --pid "$(cpid c7)" --compute --utility --device 2:1 "$R7"
expect_rc mig 0 "configure --device 2:1 (a MIG device)"
for f in /dev/nvidia2 /dev/nvidia-caps/nvidia-cap291 /dev/nvidia-caps/nvidia-cap293; do
        in_yes c7 "MIG: $f is a char device in the container" test -c "$f"
done
for f in /proc/driver/nvidia/capabilities/gpu2/mig/gi2/access /proc/driver/nvidia/capabilities/gpu2/mig/gi2/ci1/access; do
        in_yes c7 "MIG: $f is readable" grep -q DeviceFileMinor "$f"
done
in_no c7 "MIG: the other compute instance's node (cap292) is absent" test -e /dev/nvidia-caps/nvidia-cap292
in_no c7 "MIG: other GPUs' nodes are absent" test -e /dev/nvidia0
if [ -d "$CGV1" ]; then
        capmaj=$(printf '%d' "0x$(stat -c '%t' "$MIGDRV/dev/nvidia-caps/nvidia-cap291")")
        case "$(cat "$CGV1/gs-it-c7/devices.list")" in *"c $capmaj:291 rw"*)
                ok "MIG: the cgroup allows the GI caps node";; *) not_ok "MIG: caps node not allowed";; esac
else
        skip "MIG: cgroup v1 device check: no v1 devices hierarchy on this host"
fi
R8=$(container c8)
started "c8: the container process" "$(cpid c8)"
run migcfg -- "$GS" --root "$MIGDRV" configure --pid "$(cpid c8)" --utility --device all --mig-config all --mig-monitor all "$R8"
expect_rc migcfg 0 "configure --mig-config all --mig-monitor all"
in_yes c8 "mig-config: the capabilities tree is there" test -f /proc/driver/nvidia/capabilities/mig/config
in_yes c8 "mig-config: /dev/nvidia-caps is there" test -c /dev/nvidia-caps/nvidia-cap1
run migbad -- "$GS" --root "$MIGDRV" configure --pid "$(cpid c8)" --device 2:1 --mig-config all "$R8"
expect_err migbad "gpuslice: mig-config error: cannot enable mig-config with specific MIG devices selected" "mig-config with one MIG device is refused"

# IMEX channels: bound and allowed when the root has them, a clear error when not.
mkdir -p "$DRV/dev/nvidia-caps-imex-channels" && mknod -m 666 "$DRV/dev/nvidia-caps-imex-channels/channel3" c 242 3
R9=$(container c9)
started "c9: the container process" "$(cpid c9)"
run imex -- "$GS" --root "$DRV" configure --pid "$(cpid c9)" --utility --imex-channel 3 "$R9"
expect_rc imex 0 "configure --imex-channel 3"
in_yes c9 "IMEX channel 3 is in the container" test -c /dev/nvidia-caps-imex-channels/channel3
run imex2 -- "$GS" --root "$DRV" configure --pid "$(cpid c9)" --utility --imex-channel 4 "$R9"
expect_err imex2 "gpuslice: mount error: device $DRV/dev/nvidia-caps-imex-channels/channel4: No such file or directory" "a missing IMEX channel is a mount error"
run imex3 -- "$GS" --root "$DRV" configure --pid "$(cpid c9)" --utility --imex-channel 1048576 "$R9"
expect_err imex3 "invalid IMEX channel: 1048576" "an IMEX channel >= 2^20 is refused"

# A GPU slice: the host directory, the files mounted into the container, the image's own
# /etc/ld.so.preload kept, and rollback of all of it at every step.
SL=$TMP/slices
R10=$(container c10)
echo /usr/lib/x86_64-linux-gnu/libm.so.6 >"$R10/etc/ld.so.preload"
started "c10: the container process" "$(cpid c10)"
mounts_of c10 >"$TMP/c10.before"; files_of c10 >"$TMP/c10.fbefore"
grep -q "^$R10 " "$TMP/c10.before" && grep -qx ./etc/ld.so.preload "$TMP/c10.fbefore" &&
        ok "c10: its mounts and files were read (rootfs bind mount, the image's /etc/ld.so.preload)" || not_ok "c10: no snapshot of the container"
n=0 rolled=0
while :; do
        n=$((n + 1))
        run "slfail$n" -- env GPUSLICE_TEST_FAIL_AT=$n "$GS" --root "$DRV" configure --pid "$(cpid c10)" --compute \
                --utility --device 0 --memory 1Gi --memory-1 512Mi --compute-share 40 --compute-share-1 25 \
                --compute-mode share --priority HIGH --slice-id c10 --regions-dir "$SL" "$R10"
        [ "$(rc_of "slfail$n")" = 0 ] && break
        mounts_of c10 >"$TMP/c10.after"; files_of c10 >"$TMP/c10.fafter"
        if cmp -s "$TMP/c10.before" "$TMP/c10.after" && cmp -s "$TMP/c10.fbefore" "$TMP/c10.fafter" && [ ! -e "$SL/c10" ]; then
                rolled=$((rolled + 1))
        else
                not_ok "slice: failure injected at step $n left traces: $(diff "$TMP/c10.before" "$TMP/c10.after" | head -3 | tr '\n' ' ')$(ls "$SL/c10" 2>/dev/null | tr '\n' ' ')"
        fi
        [ $n -gt 200 ] && break
done
[ "$rolled" = $((n - 1)) ] && [ "$n" -gt 14 ] && ok "slice: failure injected at each of $((n - 1)) steps: container and slice directory rolled back" ||
        not_ok "slice rollback: $rolled of $((n - 1)) clean"
expect_rc "slfail$n" 0 "configure --memory 1Gi --memory-1 512Mi"
[ -f "$SL/c10/owner" ] && [ -f "$SL/c10/slice.conf" ] && [ -f "$SL/c10/usage" ] &&
        ok "the slice's host directory holds owner, slice.conf and usage" || not_ok "slice dir: $(ls "$SL/c10" 2>&1 | tr '\n' ' ')"
[ "$(cut -d' ' -f1 "$SL/c10/owner")" = "$(cpid c10)" ] && ok "owner names the container's process" || not_ok "owner: $(cat "$SL/c10/owner")"
inside c10 cat /etc/ld.so.preload >"$TMP/c10.preload" 2>&1
[ "$(cat "$TMP/c10.preload")" = "$(printf '/usr/lib/x86_64-linux-gnu/libm.so.6\n/usr/lib/gpuslice/libgpuslice-vgpu.so')" ] &&
        ok "/etc/ld.so.preload keeps the image's line and adds the interposer" || not_ok "ld.so.preload: $(tr '\n' '|' <"$TMP/c10.preload")"
grep -qx /usr/lib/x86_64-linux-gnu/libm.so.6 "$R10/etc/ld.so.preload" && [ "$(wc -l <"$R10/etc/ld.so.preload")" = 1 ] &&
        ok "the image's own file is untouched underneath" || not_ok "the image's ld.so.preload changed"
inside c10 cat /etc/gpuslice/slice.conf >"$TMP/c10.conf" 2>&1
grep -qx GPUSLICE_MEMORY_LIMIT=1Gi "$TMP/c10.conf" && grep -qx GPUSLICE_MEMORY_LIMIT_1=512Mi "$TMP/c10.conf" &&
        grep -qx GPUSLICE_SLICE_ENFORCED=1 "$TMP/c10.conf" && grep -qx GPUSLICE_REGION=/run/gpuslice/usage "$TMP/c10.conf" &&
        grep -q "^GPUSLICE_DEVICES=GPU-" "$TMP/c10.conf" && grep -qx GPUSLICE_COMPUTE_LIMIT=40 "$TMP/c10.conf" &&
        grep -qx GPUSLICE_COMPUTE_LIMIT_1=25 "$TMP/c10.conf" && grep -qx GPUSLICE_COMPUTE_MODE=share "$TMP/c10.conf" &&
        grep -qx GPUSLICE_PRIORITY=high "$TMP/c10.conf" &&
        ok "slice.conf: limits, compute shares, mode and priority (--priority HIGH: high), enforced, region, device UUID" ||
        not_ok "slice.conf: $(tr '\n' '|' <"$TMP/c10.conf")"
for f in /etc/gpuslice/slice.conf /etc/ld.so.preload /usr/lib/gpuslice/libgpuslice-vgpu.so; do
        in_yes c10 "$f is in the container" test -f "$f"
        in_no c10 "$f is read-only in the container" sh -c "echo x >>$f"
done
in_yes c10 "the usage region is writable in the container" sh -c 'echo x >/run/gpuslice/usage'
# The region's owner: the container process's owner (root here) by default; --container-user
# makes it the container's process user's and group's (0660), so that a non-root process in the
# container can open it (as the hook does from config.json's process.user).
[ "$(stat -c '%u:%g %a' "$SL/c10/usage")" = "0:0 660" ] && ok "without --container-user the usage region is the container root's (0:0 660)" ||
        not_ok "default region owner: $(stat -c '%u:%g %a' "$SL/c10/usage")"
R11=$(container c11)
started "c11: the container process" "$(cpid c11)"
run cuser -- "$GS" --root "$DRV" configure --pid "$(cpid c11)" --compute --device 0 --memory 1Gi \
        --container-user 1000:1001 --slice-id c11 --regions-dir "$SL" "$R11"
expect_rc cuser 0 "configure --memory 1Gi --container-user 1000:1001"
[ "$(stat -c '%u:%g %a' "$SL/c11/usage")" = "1000:1001 660" ] &&
        ok "--container-user 1000:1001: the usage region is 1000:1001, 0660" || not_ok "--container-user: region $(stat -c '%u:%g %a' "$SL/c11/usage" 2>&1)"
for v in abc 1000:x -1 ""; do
        run cuserbad -- "$GS" --root "$DRV" configure --pid "$(cpid c11)" --memory 1Gi --container-user "$v" "$R11"
        expect_rc cuserbad 2 "configure --container-user '$v': a usage error"
done
run slbad -- "$GS" --root "$DRV" configure --pid "$(cpid c10)" --memory 4GB "$R10"
expect_err slbad "invalid --memory: 4GB" "configure --memory 4GB is refused"
run slbadc -- "$GS" --root "$DRV" configure --pid "$(cpid c10)" --compute-share 120 "$R10"
expect_err slbadc "invalid --compute-share: 120 (a percentage, 1..100)" "configure --compute-share 120 is refused"
for p in urgent 0 ""; do
        run slbadp -- "$GS" --root "$DRV" configure --pid "$(cpid c10)" --compute-share 20 --priority "$p" "$R10"
        expect_rc slbadp 2 "configure --priority '$p': a usage error"
        expect_err slbadp "gpuslice: input error: invalid --priority: $p (high, normal or low)" "... naming the value"
done
run slbadid -- "$GS" --root "$DRV" configure --pid "$(cpid c10)" --memory 1Gi --slice-id ../x --regions-dir "$SL" "$R10"
expect_err slbadid "gpuslice: slice error: invalid container id for a slice: '../x'" "a slice id with a slash is refused"

# Bad input
run nopid -- "$GS" --root "$DRV" configure --pid 999999 --compute "$R2"
expect_err nopid "gpuslice: container error:" "a missing container process"
run badroot -- "$GS" --root "$DRV" configure --pid "$(cpid c2)" /
expect_err badroot "invalid rootfs directory" "rootfs / is refused"
run relroot -- "$GS" --root "$DRV" configure relative/dir
expect_err relroot "invalid rootfs directory" "a relative rootfs is refused"
run dev -- "$GS" --root "$DRV" configure --pid "$(cpid c2)" --device 9 "$R2"
expect_err dev "gpuslice: device error: 9: unknown device" "unknown device"
run cfghelp -- "$GS" configure --help
expect_rc cfghelp 0 "configure --help"
finish
