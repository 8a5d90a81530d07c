#!/usr/bin/env bash
# What `docker run --gpus ...` does, reproduced exactly with runc (no Docker engine runs here),
# with gpuslice installed as nvidia-container-runtime-hook (a link to the lean hook, gpuslice-hook,
# as make install and the package make it).
#
# moby daemon/nvidia_linux.go (setNvidiaGPUs), for a device request that the "nvidia" driver
# matched (registered when exec.LookPath("nvidia-container-runtime-hook") succeeds):
#   - appends to process.env NVIDIA_VISIBLE_DEVICES = the device ids joined with ","
#     (--gpus device=1), or "0,1,..,n-1" for a count (--gpus 2), "all" for -1 (--gpus all),
#     "void" for 0 (--gpus 0);
#   - appends NVIDIA_DRIVER_CAPABILITIES = the NVIDIA capabilities among the matched capability
#     set, only when there are some (--gpus all,capabilities=utility -> "utility"; the docker CLI
#     (opts/gpus.go) adds "gpu" to that set and uses {"gpu"} when none is given);
#   - appends a *prestart* hook {path: exec.LookPath(hook), args: [hook, "prestart"],
#     env: os.Environ()} (the daemon's own environment).
# The hook then reads its host configuration from /etc/gpuslice/config.toml only. Each case runs
# in a private mount namespace where a test directory is bind-mounted on /etc/gpuslice, so the
# real /etc is never changed (the directory is created first if missing, and removed again).
. "$(dirname "$0")/lib.sh"
. "$SRC/tests/integration/bundle.sh"

# runc, jq and util-linux come with `make test-deps`: without them the test fails (not a skip).
[ -x "$RUNC" ] || { not_ok "runc is not installed (make test-deps)"; finish; }
command -v jq >/dev/null || { not_ok "jq is not installed (make test-deps)"; finish; }
command -v unshare >/dev/null || { not_ok "unshare (util-linux) is not installed (make test-deps)"; finish; }
[ -x "$GS" ] || { not_ok "$GS is not built"; finish; }

DRV=$(mkroot drv 2gpu.conf)
STATE=$TMP/runc-state
CG=gs-it-docker-$$
ETC=$TMP/etc-gpuslice
mkdir -p "$ETC"
# the test config for the hook, bind-mounted on /etc/gpuslice
hook_config "$ETC/config.toml" "$DRV" "$TMP/slices" "$TMP/hook.log"
# Tests that need /etc/gpuslice as a mount point (this one, test_podman.sh) take a lock on /etc
# (flock on the directory: no lock file is left) while they create, use and remove it.
exec {etc_lock}</etc
flock -w 150 "$etc_lock" || { not_ok "could not lock /etc for /etc/gpuslice"; finish; }
etc_before=$(ls -la /etc/gpuslice 2>&1; cat /etc/gpuslice/config.toml 2>&1)
made_etc=
if [ ! -e /etc/gpuslice ]; then mkdir /etc/gpuslice && made_etc=1; fi
ids=()
cleanup() {
        local id d
        for id in "${ids[@]}"; do "$RUNC" --root "$STATE" delete -f "$id" >/dev/null 2>&1; done
        for d in /sys/fs/cgroup/*/"$CG"-*; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done
        [ -n "$made_etc" ] && rmdir /etc/gpuslice 2>/dev/null
        exec {etc_lock}<&-
        rm -rf "$TMP"
}
trap cleanup EXIT

# The daemon found the hook on its PATH: a directory holding the nvidia-container-runtime-hook
# symlink to gpuslice-hook, first on PATH. LookPath returns the path as found (not resolved).
mkdir -p "$TMP/bin"
ln -s "$BUILD/gpuslice-hook" "$TMP/bin/nvidia-container-runtime-hook"
export PATH=$TMP/bin:$PATH
HOOK_PATH=$(command -v nvidia-container-runtime-hook)
[ "$HOOK_PATH" = "$TMP/bin/nvidia-container-runtime-hook" ] && ok "LookPath finds nvidia-container-runtime-hook: $HOOK_PATH" ||
        not_ok "nvidia-container-runtime-hook on PATH is '$HOOK_PATH'"
DAEMON_ENV=$(env | jq -R . | jq -cs .)

# docker_case NAME --gpus-VALUE [VAR=VALUE...]: the config.json dockerd would write for
# `docker run [-e VAR=VALUE...] --gpus VALUE` (what the daemon adds, as in setNvidiaGPUs, comes
# after the container's own env), run by runc in the private mount namespace.
docker_case() {
        local name=$1 gpus=$2 vis caps= ids_csv= count= f
        shift 2
        local user_env; user_env=$(if [ $# -gt 0 ]; then env_json "$@"; else echo '[]'; fi)
        local -a fields
        IFS=, read -r -a fields <<<"$gpus"
        for f in "${fields[@]}"; do
                case $f in
                all) count=-1 ;;
                device=*) ids_csv=${f#device=} ;;
                capabilities=*) caps=${f#capabilities=} ;;
                count=*) count=${f#count=}; [ "$count" = all ] && count=-1 ;;
                *=*) echo "docker_case: unsupported field $f" >&2; exit 1 ;;
                *) count=$f ;;
                esac
        done
        # device=0,1 inside the CSV field: the docker CLI reads the value with a CSV reader, so
        # "device=0,1" must be quoted there; here device lists use ':' for ','.
        ids_csv=${ids_csv//:/,}
        if [ -n "${ids_csv:-}" ]; then vis=$ids_csv
        elif [ "${count:-1}" -lt 0 ]; then vis=all
        elif [ "${count:-1}" -eq 0 ]; then vis=void
        else vis=$(seq -s, 0 $((${count:-1} - 1))); fi
        # NVIDIA capabilities among the request's set (the CLI appends "gpu", which is not one)
        local nvcaps= c
        for c in ${caps//,/ }; do
                case $c in compute|compat32|graphics|utility|video|display) nvcaps=${nvcaps:+$nvcaps,}$c ;; esac
        done
        local add; add=$(if [ -n "$nvcaps" ]; then env_json "NVIDIA_VISIBLE_DEVICES=$vis" "NVIDIA_DRIVER_CAPABILITIES=$nvcaps"
                         else env_json "NVIDIA_VISIBLE_DEVICES=$vis"; fi)
        make_bundle "$name" '.process.env += ["HOSTNAME=" + $id] + $user + $add
                | .hostname = $id
                | .hooks.prestart = (.hooks.prestart // []) + [{path: $hook, args: ["nvidia-container-runtime-hook", "prestart"], env: $denv}]' \
                --arg hook "$HOOK_PATH" --argjson add "$add" --argjson denv "$DAEMON_ENV" --arg id "gs-$$-$name" \
                --argjson user "$user_env"
        echo "# --gpus '$gpus' -> $(jq -c '[.process.env[] | select(startswith("NVIDIA_"))]' "$TMP/$name/config.json")"
        local id=gs-$$-$name
        ids+=("$id")
        run "$name" -- timeout 60 unshare -m --propagation private sh -c \
                'mount --bind "$1" /etc/gpuslice && exec "$2" --root "$3" run --bundle "$4" "$5"' \
                sh "$ETC" "$RUNC" "$STATE" "$TMP/$name" "$id" </dev/null
}
env_json() { printf '%s\n' "$@" | jq -R . | jq -cs .; }
# hook_read NAME WANT DESC: how gpuslice read the container's request, from the line the hook logs
# for it (hook.c): "container <id>: gpu=yes|no devices=<list> caps=0x<GS_CAP_*> requirements=<n>
# slice=yes|no" (caps: utility 0x1, compute 0x2; the default is both, 0x3), or "container <id>
# asks for no GPU and no slice: nothing to do". This is gpuslice's output, not the config.json the
# test wrote.
hook_read() {
        local line; line=$(grep -F "] container gs-$$-$1" "$TMP/hook.log" 2>/dev/null | tail -1)
        line=${line#*] container gs-$$-"$1"}; line=${line#: }; line=${line# }
        if [ "$line" = "$2" ]; then ok "$3: the hook read '$2'"; else not_ok "$3: the hook read '${line:-nothing}', wanted '$2'"; fi
}

# --gpus all: every GPU, default capabilities (utility, compute)
docker_case all all
expect_done all "--gpus all"
expect_all_gpus all "--gpus all"
expect_fact all "HAS $LIBDIR/libcuda.so.$DRV_VERSION" "--gpus all: libcuda (compute)"
expect_fact all "HAS /usr/bin/nvidia-smi" "--gpus all: nvidia-smi (utility)"
expect_no_slice all "--gpus all"
hook_read all "gpu=yes devices=all caps=0x3 requirements=0 slice=no" "--gpus all: every GPU, the default capabilities (utility, compute)"

# --gpus 1: a count -> NVIDIA_VISIBLE_DEVICES=0
docker_case one 1
expect_done one "--gpus 1"
expect_gpu0 one "--gpus 1"
hook_read one "gpu=yes devices=0 caps=0x3 requirements=0 slice=no" "--gpus 1: GPU 0"

# the drop-in name linked to the whole gpuslice (as installed before gpuslice-hook) still works
ln -sf "$GS" "$TMP/bin/nvidia-container-runtime-hook"
docker_case oldlink 1
expect_done oldlink "--gpus 1, nvidia-container-runtime-hook -> gpuslice"
expect_gpu0 oldlink "--gpus 1, the old link"
ln -sf "$BUILD/gpuslice-hook" "$TMP/bin/nvidia-container-runtime-hook"

# --gpus 2: 0,1
docker_case two 2
expect_done two "--gpus 2"
expect_all_gpus two "--gpus 2 (NVIDIA_VISIBLE_DEVICES=0,1)"
hook_read two "gpu=yes devices=0,1 caps=0x3 requirements=0 slice=no" "--gpus 2: GPUs 0 and 1"

# --gpus device=1: GPU index 1, whose device minor is 2
docker_case dev1 device=1
expect_done dev1 "--gpus device=1"
expect_fact dev1 "HAS /dev/nvidiactl" "--gpus device=1: /dev/nvidiactl"
expect_fact dev1 "HAS /dev/nvidia2" "--gpus device=1: /dev/nvidia2 (GPU 1 has minor 2)"
expect_fact dev1 "NO /dev/nvidia0" "--gpus device=1: no /dev/nvidia0"
expect_fact dev1 "GPUS 0000:86:00.0 " "--gpus device=1: /proc/driver/nvidia/gpus has GPU 1 only"
expect_fact dev1 "SMI GPU 1: NVIDIA A100-SXM4-40GB (UUID: $GPU1_UUID)" "--gpus device=1: nvidia-smi -L runs"
hook_read dev1 "gpu=yes devices=1 caps=0x3 requirements=0 slice=no" "--gpus device=1: GPU 1"

# --gpus all,capabilities=utility: NVIDIA_DRIVER_CAPABILITIES=utility -> no libcuda
docker_case util all,capabilities=utility
expect_done util "--gpus all,capabilities=utility"
expect_all_gpus util "--gpus all,capabilities=utility"
expect_fact util "HAS $LIBDIR/libnvidia-ml.so.$DRV_VERSION" "capabilities=utility: libnvidia-ml"
expect_fact util "HAS /usr/bin/nvidia-smi" "capabilities=utility: nvidia-smi"
expect_fact util "NO $LIBDIR/libcuda.so.$DRV_VERSION" "capabilities=utility: no libcuda"
expect_fact util "NO /dev/nvidia-uvm" "capabilities=utility: no /dev/nvidia-uvm"
hook_read util "gpu=yes devices=all caps=0x1 requirements=0 slice=no" "--gpus all,capabilities=utility: the utility capability alone"

# -e GPUSLICE_MEMORY_LIMIT=1Gi --gpus 1: a slice. dockerd adds no poststop hook, so the slice
# directory outlives the container until the next hook run sweeps it.
docker_case slice 1 GPUSLICE_MEMORY_LIMIT=1Gi EXPECT_TOTAL_MIB=1024
expect_done slice "-e GPUSLICE_MEMORY_LIMIT=1Gi --gpus 1"
expect_gpu0 slice "--gpus 1 with a slice"
expect_slice slice "-e GPUSLICE_MEMORY_LIMIT=1Gi" 1Gi 1024
hook_read slice "gpu=yes devices=0 caps=0x3 requirements=0 slice=yes" "-e GPUSLICE_MEMORY_LIMIT=1Gi --gpus 1: GPU 0 and a slice"
left_dir=
[ -f "$TMP/slices/gs-$$-slice/owner" ] && left_dir=1 && ok "slice: its directory outlives the container (no poststop hook from dockerd)" ||
        not_ok "slice: no slice directory after the run: $(ls -A "$TMP/slices" 2>&1)"

# --gpus 0: NVIDIA_VISIBLE_DEVICES=void, the hook still runs and mounts nothing
docker_case zero 0
expect_done zero "--gpus 0"
expect_nothing zero "--gpus 0 (void)"
hook_read zero "asks for no GPU and no slice: nothing to do" "--gpus 0: NVIDIA_VISIBLE_DEVICES=void, no GPU"
if [ -n "$left_dir" ]; then # (swept: only said of a directory shown to be there)
        [ -e "$TMP/slices/gs-$$-slice" ] && not_ok "the next hook run did not sweep the dead container's slice directory" ||
                ok "the next hook run swept the dead container's slice directory"
fi
[ -s "$TMP/hook.log" ] && ok "the hook read /etc/gpuslice/config.toml (its log-file was written)" ||
        not_ok "the hook wrote no log: did it read /etc/gpuslice/config.toml?"

# The hook read the driver root from /etc/gpuslice/config.toml inside the namespace only.
etc_after=$(ls -la /etc/gpuslice 2>&1; cat /etc/gpuslice/config.toml 2>&1)
if [ -n "$made_etc" ]; then
        [ -z "$(ls -A /etc/gpuslice)" ] && ok "the real /etc/gpuslice (made for the test) stayed empty" ||
                not_ok "the real /etc/gpuslice got: $(ls -A /etc/gpuslice)"
else
        [ "$etc_before" = "$etc_after" ] && ok "the real /etc/gpuslice is unchanged" || not_ok "the real /etc/gpuslice changed"
fi
left=$("$RUNC" --root "$STATE" list -q 2>&1)
[ -z "$left" ] && ok "no container is left (runc list is empty)" || not_ok "runc list shows: $left"
left=$(ls -d /sys/fs/cgroup/*/"$CG"-* 2>/dev/null)
[ -z "$left" ] && ok "no cgroup is left" || not_ok "cgroups left: $left"
finish
