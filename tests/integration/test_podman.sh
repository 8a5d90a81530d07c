#!/usr/bin/env bash
# gpuslice under podman (Debian's 4.3, with runc) through its hooks.d: the shipped
# packaging/oci-gpuslice-hook.json (schema 1.0.0, as NVIDIA's oci-nvidia-hook.json: a prestart
# hook injected into every container, "when": always; the hook itself decides from the env),
# in a --hooks-dir of the test. It runs the lean hook, gpuslice-hook. A test copy points "path"
# at a link to the build's gpuslice-hook and gives the hook its configuration by argument
# (["gpuslice-hook", "--config", FILE, "prestart"]); one case runs the shipped arguments
# unchanged, with /etc/gpuslice bind-mounted in a private mount namespace.
#
# Podman here (ecosystem.md 1.6): --runtime runc (crun refuses hybrid cgroups), cgroupfs and
# file events (PID 1 is not systemd), explicit ulimits (podman asks for more than the hard limit).
# Everything podman keeps goes under $TMP (--root, --runroot, --tmpdir, --network-config-dir,
# --cgroup-parent); each podman runs in a private mount namespace with a tmpfs on /run, so what
# podman and runc write to /run by default (/run/runc, /run/containers/networks) vanishes with it.
. "$(dirname "$0")/lib.sh"
. "$SRC/tests/integration/bundle.sh"

need podman "$RUNC" jq unshare
PODMAN=$(command -v podman)
[ -x "$GS" ] || { echo "not ok - $GS is not built"; exit 1; }
SHIPPED=$SRC/packaging/oci-gpuslice-hook.json

DRV=$(mkroot drv 2gpu.conf)
CG=gs-it-podman-$$
P=$TMP/podman
mkdir -p "$P/hooks.d" "$P/hooks-shipped.d" "$TMP/bin" "$TMP/etc-gpuslice"
ln -s "$BUILD/gpuslice-hook" "$TMP/bin/gpuslice-hook"
CONF=$TMP/hook.toml
hook_config "$CONF" "$DRV" "$TMP/slices"
cp "$CONF" "$TMP/etc-gpuslice/config.toml"
made_etc=
ncases=0
cleanup() {
        local d
        if [ -d "$P/root" ]; then
                podman_cmd rm -af -t 0 >/dev/null 2>&1
                wait_podman_gone
        fi
        for d in /sys/fs/cgroup/*/"$CG"; do
                [ -d "$d" ] || continue
                find "$d" -mindepth 1 -depth -type d -exec rmdir {} \; 2>/dev/null
                rmdir "$d" 2>/dev/null
        done
        [ -n "$made_etc" ] && rmdir /etc/gpuslice 2>/dev/null
        [ -n "${etc_lock:-}" ] && exec {etc_lock}<&-
        rm -rf "$TMP"
}
trap cleanup EXIT

# The test copies of the shipped hook file.
jq -e '.version == "1.0.0" and .stages == ["prestart"] and .when.always == true
       and .hook.path == "/usr/bin/gpuslice-hook" and .hook.args == ["gpuslice-hook", "prestart"]
       and (.hook.env | length) > 0' "$SHIPPED" >/dev/null &&
        ok "packaging/oci-gpuslice-hook.json: schema 1.0.0, prestart, always, gpuslice-hook prestart (the lean hook), explicit env" ||
        not_ok "packaging/oci-gpuslice-hook.json: $(jq -c . "$SHIPPED" 2>&1)"
jq --arg path "$TMP/bin/gpuslice-hook" --arg conf "$CONF" \
        '.hook.path = $path | .hook.args = ["gpuslice-hook", "--config", $conf, "prestart"]' \
        "$SHIPPED" >"$P/hooks.d/oci-gpuslice-hook.json" || { echo "jq failed"; exit 1; }
jq --arg path "$TMP/bin/gpuslice-hook" '.hook.path = $path' \
        "$SHIPPED" >"$P/hooks-shipped.d/oci-gpuslice-hook.json" || { echo "jq failed"; exit 1; }

# podman_cmd [--hooks DIR] [--etc] ARGS...: podman with the test's storage, in a private mount
# namespace (tmpfs on /run; with --etc, $TMP/etc-gpuslice bind-mounted on /etc/gpuslice), 90 s
# at most.
podman_cmd() {
        local hooks=$P/hooks.d etc=
        while :; do
                case $1 in
                --hooks) hooks=$2; shift 2 ;;
                --etc) etc=$TMP/etc-gpuslice; shift ;;
                *) break ;;
                esac
        done
        timeout 90 unshare -m --propagation private sh -c '
                mount -t tmpfs -o mode=755 gs-it-podman-run /run || exit 125
                if [ -n "$1" ]; then mount --bind "$1" /etc/gpuslice || exit 125; fi
                shift; exec "$@"' sh "$etc" \
                "$PODMAN" --root "$P/root" --runroot "$P/runroot" --tmpdir "$P/tmp" --network-config-dir "$P/net" \
                --storage-driver vfs --cgroup-manager=cgroupfs --events-backend=file --runtime "${PODMAN_RUNTIME:-$RUNC}" \
                --hooks-dir "$hooks" "$@"
}
# conmon and podman's cleanup process may outlive `podman run` a little: wait for them (they
# are ours: their command lines name our private directories).
wait_podman_gone() {
        local _
        for _ in $(seq 100); do pgrep -f -- "$P/" >/dev/null || return 0; sleep 0.1; done
        echo "# processes still using $P: $(pgrep -af -- "$P/" | head -3)"
}

# podman_case NAME [--hooks DIR] [--etc] [podman run options...]: a fresh rootfs, then
# `podman run --rm ... --rootfs ROOTFS /bin/sh /check.sh`; results in $TMP/NAME.{out,err,rc}.
podman_case() {
        local name=$1 pre=()
        shift
        while :; do
                case ${1:-} in
                --hooks) pre+=("$1" "$2"); shift 2 ;;
                --etc) pre+=("$1"); shift ;;
                *) break ;;
                esac
        done
        rm -rf "$TMP/$name"; mkdir -p "$TMP/$name"
        make_rootfs "$TMP/$name/rootfs"
        ncases=$((ncases + 1))
        run "$name" -- podman_cmd "${pre[@]}" run --rm --name "gs-$$-$name" --network=none --no-hosts \
                --ulimit nofile=20000:20000 --ulimit nproc=4096:4096 --cgroup-parent="/$CG" \
                "$@" --rootfs "$TMP/$name/rootfs" /bin/sh /check.sh </dev/null
        wait_podman_gone
}
# 1. -e NVIDIA_VISIBLE_DEVICES=0
podman_case dev0 -e NVIDIA_VISIBLE_DEVICES=0
expect_done dev0 "podman run -e NVIDIA_VISIBLE_DEVICES=0"
expect_gpu0 dev0 "podman, NVIDIA_VISIBLE_DEVICES=0"
expect_fact dev0 "HAS /dev/nvidia-uvm" "podman, NVIDIA_VISIBLE_DEVICES=0: /dev/nvidia-uvm"
expect_no_slice dev0 "podman, NVIDIA_VISIBLE_DEVICES=0"

# 2. no NVIDIA variable: the hook runs (always) and mounts nothing
podman_case plain
expect_done plain "podman run without NVIDIA_* (the hook is injected anyway)"
expect_nothing plain "podman, no NVIDIA_VISIBLE_DEVICES"
expect_no_slice plain "podman, no slice asked"

# 3. -e GPUSLICE_MEMORY_LIMIT=1Gi alone: the slice only (preload line, slice file), no driver;
#    then with a GPU as well: the quota as a CUDA program sees it.
podman_case slice -e GPUSLICE_MEMORY_LIMIT=1Gi
expect_done slice "podman run -e GPUSLICE_MEMORY_LIMIT=1Gi"
expect_fact slice "PRELOAD /usr/lib/gpuslice/libgpuslice-vgpu.so" "podman slice: /etc/ld.so.preload names the interposer"
expect_fact slice "HAS /usr/lib/gpuslice/libgpuslice-vgpu.so" "podman slice: the interposer is mounted"
expect_fact slice "SLICE GPUSLICE_MEMORY_LIMIT=1Gi" "podman slice: slice.conf holds the limit"
expect_fact_re slice "^SLICE_WRITE .*Read-only file system" "podman slice: slice.conf is read-only for root in the container"
expect_nothing slice "podman slice without a GPU"
slicedirs=$(ls -A "$TMP/slices" 2>/dev/null)
[ "$(echo "$slicedirs" | grep -c .)" = 1 ] && [ -f "$TMP/slices/$slicedirs/slice.conf" ] &&
        ok "podman slice: its directory outlives the container (the shipped hook has no poststop stage)" ||
        not_ok "podman slice: slice directories after the run: '$slicedirs'"

podman_case slicegpu -e NVIDIA_VISIBLE_DEVICES=0 -e GPUSLICE_MEMORY_LIMIT=1Gi -e EXPECT_TOTAL_MIB=1024
expect_done slicegpu "podman run -e NVIDIA_VISIBLE_DEVICES=0 -e GPUSLICE_MEMORY_LIMIT=1Gi"
expect_gpu0 slicegpu "podman GPU + slice"
expect_slice slicegpu "podman GPU + slice" 1Gi 1024
[ -n "$slicedirs" ] && [ ! -e "$TMP/slices/$slicedirs" ] && ok "podman: the next hook run swept the dead container's slice directory" ||
        not_ok "podman: $TMP/slices/$slicedirs is still there"

# 4. The shipped hook file with its own arguments (gpuslice-hook prestart, which reads
#    /etc/gpuslice/config.toml): only "path" differs.
# (the lock on /etc: see test_docker.sh)
exec {etc_lock}</etc
flock -w 150 "$etc_lock" || { echo "not ok - could not lock /etc for /etc/gpuslice"; exit 1; }
[ -e /etc/gpuslice ] || { mkdir /etc/gpuslice && made_etc=1; }
podman_case shipped --hooks "$P/hooks-shipped.d" --etc -e NVIDIA_VISIBLE_DEVICES=all
expect_done shipped "the shipped hook arguments (gpuslice-hook prestart), NVIDIA_VISIBLE_DEVICES=all"
expect_all_gpus shipped "shipped hook arguments, NVIDIA_VISIBLE_DEVICES=all"
if [ -n "$made_etc" ]; then
        [ -z "$(ls -A /etc/gpuslice)" ] && ok "the real /etc/gpuslice (made for the test) stayed empty" || not_ok "the real /etc/gpuslice changed"
        rmdir /etc/gpuslice && made_etc=
fi
exec {etc_lock}<&- && etc_lock=

# 5. An unsatisfied requirement fails `podman run` with gpuslice's message; nothing is left.
podman_case req -e NVIDIA_VISIBLE_DEVICES=0 -e 'NVIDIA_REQUIRE_CUDA=cuda>=99'
[ "$(rc_of req)" != 0 ] && ok "podman run fails on cuda>=99 (exit $(rc_of req))" || not_ok "podman run succeeded with cuda>=99"
cat "$TMP/req.out" >>"$TMP/req.err"
expect_err req "unsatisfied condition: cuda>=99" "podman's error carries gpuslice's message"
grep -q "^DONE\|^HAS " "$TMP/req.err" && not_ok "the container's process ran" || ok "the container's process never ran"

# 6. podman --runtime with the runtime shim (nvidia-container-runtime, legacy mode, runc below it)
#    and no hooks.d file: the shim adds the hook; GPU 0 and a 1 GiB slice inside.
mkdir -p "$P/no-hooks.d"
{ cat "$CONF"; printf '[runtime]\nmode = "legacy"\nruntimes = ["%s"]\n' "$RUNC"; } >"$TMP/shim.toml"
printf '#!/bin/bash\nGPUSLICE_CONFIG=%s exec -a nvidia-container-runtime "%s" "$@"\n' "$TMP/shim.toml" "$BUILD/gpuslice-runtime" >"$TMP/bin/shim"
chmod +x "$TMP/bin/shim"
PODMAN_RUNTIME=$TMP/bin/shim podman_case shim --hooks "$P/no-hooks.d" -e NVIDIA_VISIBLE_DEVICES=0 -e GPUSLICE_MEMORY_LIMIT=1Gi \
        -e EXPECT_TOTAL_MIB=1024
expect_done shim "podman --runtime nvidia-container-runtime (the shim), NVIDIA_VISIBLE_DEVICES=0, a 1 GiB slice, no hooks.d"
expect_gpu0 shim "podman through the shim"
expect_slice shim "podman through the shim" 1Gi 1024
PODMAN_RUNTIME=$TMP/bin/shim podman_case shimplain --hooks "$P/no-hooks.d"
expect_done shimplain "podman --runtime the shim, no GPU asked"
expect_nothing shimplain "podman through the shim, no GPU asked"

# Nothing left behind: no container, no cgroup (but the parent, removed by the trap).
run ps -- podman_cmd ps -aq
[ "$(rc_of ps)" = 0 ] && [ ! -s "$TMP/ps.out" ] && ok "podman ps -a is empty after $ncases runs" ||
        not_ok "podman ps -a: $(cat "$TMP/ps.out" "$TMP/ps.err" | tr '\n' ' ')"
left=$(find /sys/fs/cgroup/*/"$CG" -mindepth 1 -type d -name 'libpod-*' 2>/dev/null)
[ -z "$left" ] && ok "no container cgroup is left" || not_ok "container cgroups left: $left"
finish
