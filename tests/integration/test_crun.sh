#!/usr/bin/env bash
# `gpuslice hook` and the generated CDI createContainer hooks as crun (Debian's 1.8) runs them.
# crun sends other states than runc (ecosystem.md 1.1): prestart and createRuntime say "created"
# and carry an extra "root" key, createContainer and startContainer carry pid 0 (startContainer
# bundle "/"), poststop pid 0; and a hook without "env" gets crun's own environ. Every hook here
# has an explicit "env" (PATH only), as we ship them. The container's view is checked from
# inside with bundle.sh's /check.sh, as test_hook.sh does for runc.
#
# crun 1.8 refuses hybrid cgroups while a controller sits on cgroup2 (here hugetlb). Each crun
# call therefore runs in its own private mount namespace where those controllers are mounted
# as v1 hierarchies (ecosystem.md 1.4): nothing is mounted on the host, and the kernel gives the
# controllers back to cgroup2 when the namespace (the last mount) goes away. If crun still
# refuses to run a plain container, the test is skipped visibly (exit 77).
. "$(dirname "$0")/lib.sh"
. "$SRC/tests/integration/bundle.sh"

need crun jq unshare
CRUN=$(command -v crun)
# make_bundle takes its config.json template from "$RUNC spec": crun's own will do.
[ -x "$RUNC" ] || RUNC=$CRUN
for f in "$GS" "$VGPU_LIB" "$PROBE"; do
        [ -e "$f" ] || { echo "not ok - $f is not built"; exit 1; }
done

DRV=$(mkroot drv 2gpu.conf)
STATE=$TMP/crun-state
CG=gs-it-crun-$$
SLICES=$TMP/slices
CONF=$TMP/hook.toml
hook_config "$CONF" "$DRV" "$SLICES"

# Hybrid cgroups: the controllers that crun 1.8 would find on cgroup2 and refuse.
V1_CTRLS=
if [ "$(stat -f -c %T /sys/fs/cgroup)" != cgroup2fs ] && [ -r /sys/fs/cgroup/unified/cgroup.controllers ]; then
        V1_CTRLS=$(cat /sys/fs/cgroup/unified/cgroup.controllers) # (not test -s: a pseudo-file has size 0)
fi
mkdir -p "$TMP/v1"
# crun_ns ARGS...: crun --root $STATE ARGS in a private mount namespace with $V1_CTRLS on v1
# ($CRUN_LIMIT: under timeout(1)).
NS_SH='mount --make-rprivate / || exit 125
d=$0
for c in $V1_CTRLS; do mkdir -p "$d/$c" && mount -t cgroup -o "$c" cgroup "$d/$c" || exit 125; done
exec "$@"'
crun_ns() {
        ${CRUN_LIMIT:+timeout "$CRUN_LIMIT"} env V1_CTRLS="$V1_CTRLS" \
                unshare -m sh -c "$NS_SH" "$TMP/v1" "$CRUN" --root "$STATE" "$@"
}
ids=()
cleanup() {
        local id d
        for id in "${ids[@]}"; do crun_ns delete -f "$id" >/dev/null 2>&1; done
        for d in /sys/fs/cgroup/*/"$CG"-* /sys/fs/cgroup/unified/"$CG"-*; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done
        rm -rf "$TMP"
}
trap cleanup EXIT

# crun_bundle NAME: crun run it (60 s at most); results in $TMP/NAME.{out,err,rc}
crun_bundle() {
        local id=gs-$$-$1
        ids+=("$id")
        CRUN_LIMIT=60 run "$1" -- crun_ns run --bundle "$TMP/$1" "$id" </dev/null
}

# A plain container first (no hooks): if crun cannot run one here, say why and skip.
make_bundle probe '.process.args = ["/bin/sh", "-c", "echo crun-ok"] | del(.hooks)'
crun_bundle probe
if [ "$(rc_of probe)" != 0 ] || ! grep -qx crun-ok "$TMP/probe.out"; then
        echo "SKIP: crun $("$CRUN" --version | head -1 | awk '{print $3}') cannot run a plain container here" \
                "(controllers moved to v1: '${V1_CTRLS:-none}'): exit $(rc_of probe): $(tr '\n' ' ' <"$TMP/probe.err" | head -c 300)"
        exit 77
fi
ok "crun $("$CRUN" --version | head -1 | awk '{print $3}') runs a plain container (controllers moved to v1 in its mount namespace: ${V1_CTRLS:-none})"

env_json() { printf '%s\n' "$@" | jq -R . | jq -cs .; }
# jq filters for make_bundle: our hooks, as we ship them (explicit env).
H_PRESTART='{path: $gs, args: ["gpuslice", "--root", $drv, "hook", "--config", $conf, "prestart"], env: $hookenv}'
H_CREATERT='{path: $gs, args: ["gpuslice", "--root", $drv, "hook", "--config", $conf, "createRuntime"], env: $hookenv}'
H_POSTSTOP='{path: $gs, args: ["gpuslice", "hook", "--config", $conf, "poststop"], env: $hookenv}'
# an observer run after ours: what the regions directory holds while the container is created
H_OBSERVE='{path: "/bin/sh", args: ["sh", "-c", "ls -A \"$0\" >\"$1/slices.during\"; cat \"$0\"/*/owner >>\"$1/slices.during\"", ($tmp + "/slices"), $bundle], env: $hookenv}'
# A state recorder for any stage: the state crun sent, the hook's cwd and environment size, in
# the bundle (or, where the bundle is out of sight, after pivot_root, in the container's /).
DUMP='IFS= read -r s; d=$0; [ -d "$d" ] && [ ! -e /check.sh ] || d=/
printf "%s\n" "$s" >"$d/state.$1.json"; pwd >"$d/cwd.$1"'
h_dump() { echo '{path: "/bin/sh", args: ["sh", "-c", $dump, $bundle, "'"$1"'"], env: $hookenv}'; }
state_of() { # NAME STAGE: the state a recorder saw
        cat "$TMP/$1/state.$2.json" 2>/dev/null || cat "$TMP/$1/rootfs/state.$2.json" 2>/dev/null
}
show_states() { # NAME STAGE...: what crun sent, as comments
        local s; for s in "${@:2}"; do echo "# crun $s state: $(state_of "$1" "$s" | tr -d '\n'), cwd $(cat "$TMP/$1/cwd.$s" "$TMP/$1/rootfs/cwd.$s" 2>/dev/null)"; done
}
jq_state() { # NAME STAGE FILTER DESC: the filter on the recorded state yields true
        local s; s=$(state_of "$1" "$2")
        if [ -n "$s" ] && [ "$(jq -r "$3" <<<"$s" 2>&1)" = true ]; then ok "$4"; else not_ok "$4: state '$s'"; fi
}

no_container_left() { # NAME DESC
        local left d; left=$(crun_ns list -q 2>&1)
        if [ -z "$left" ]; then ok "$2: crun list is empty"; else not_ok "$2: crun list shows: $left"; fi
        for d in /sys/fs/cgroup/*/"$CG-$1" /sys/fs/cgroup/unified/"$CG-$1"; do
                [ -d "$d" ] && { not_ok "$2: the cgroup $d is left"; return; }
        done
        ok "$2: its cgroups are gone"
}
no_slice_dirs() { # DESC
        local left; left=$(ls -A "$SLICES" 2>/dev/null)
        if [ -z "$left" ]; then ok "$1: no slice directory in the regions dir"; else not_ok "$1: slice directories left: $left"; fi
}

# 1. NVIDIA_VISIBLE_DEVICES=0 through a prestart hook (crun: status "created", extra "root" key).
make_bundle dev0 '.process.env += ["NVIDIA_VISIBLE_DEVICES=0"]
        | .hooks = {prestart: ['"$H_PRESTART"', '"$(h_dump prestart)"'], poststop: ['"$H_POSTSTOP"']}' --arg dump "$DUMP"
crun_bundle dev0
show_states dev0 prestart
expect_done dev0 "prestart, NVIDIA_VISIBLE_DEVICES=0"
expect_gpu0 dev0 "prestart"
expect_fact dev0 "HAS /dev/nvidia-uvm" "prestart: /dev/nvidia-uvm (compute)"
expect_no_slice dev0 "prestart (no slice asked)"
jq_state dev0 prestart '.pid > 0 and .bundle == "'"$TMP/dev0"'"' "prestart: crun sent the host pid and the bundle"
no_container_left dev0 "prestart"

# 2. the same through createRuntime
make_bundle crt '.process.env += ["NVIDIA_VISIBLE_DEVICES=0"]
        | .hooks = {createRuntime: ['"$H_CREATERT"', '"$(h_dump createRuntime)"'], poststop: ['"$H_POSTSTOP"']}' --arg dump "$DUMP"
crun_bundle crt
show_states crt createRuntime
expect_done crt "createRuntime, NVIDIA_VISIBLE_DEVICES=0"
expect_gpu0 crt "createRuntime"
expect_no_slice crt "createRuntime (no slice asked)"
no_container_left crt "createRuntime"

# 3. A slice (GPUSLICE_MEMORY_LIMIT=1Gi): the preload line, the read-only slice file, the quota
#    seen through /etc/ld.so.preload alone; its directory exists while the container is created
#    and the poststop hook (crun: pid 0) removes it. A recorder in every stage shows what crun sent.
make_bundle slice '.process.env += $env
        | .hooks = {prestart: ['"$H_PRESTART"', '"$H_OBSERVE"', '"$(h_dump prestart)"'],
                createRuntime: ['"$(h_dump createRuntime)"'], createContainer: ['"$(h_dump createContainer)"'],
                startContainer: ['"$(h_dump startContainer)"'], poststart: ['"$(h_dump poststart)"'],
                poststop: ['"$H_POSTSTOP"', '"$(h_dump poststop)"']}' \
        --argjson env "$(env_json NVIDIA_VISIBLE_DEVICES=0 GPUSLICE_MEMORY_LIMIT=1Gi EXPECT_TOTAL_MIB=1024)" --arg dump "$DUMP"
crun_bundle slice
show_states slice prestart createRuntime createContainer startContainer poststart poststop
expect_done slice "slice GPUSLICE_MEMORY_LIMIT=1Gi"
expect_gpu0 slice "slice"
expect_slice slice "GPUSLICE_MEMORY_LIMIT=1Gi" 1Gi 1024
expect_fact slice "SLICE GPUSLICE_DEVICES=$GPU0_UUID" "slice: slice.conf names the visible GPU"
expect_fact slice "HAS /run/gpuslice/usage" "slice: the usage region is mounted"
if grep -qx "gs-$$-slice" "$TMP/slice/slices.during" 2>/dev/null; then
        ok "slice: its directory $SLICES/gs-$$-slice existed while the container was created"
else not_ok "slice: no slice directory during creation: $(tr '\n' ' ' <"$TMP/slice/slices.during" 2>&1)"; fi
jq_state slice prestart '.status == "created" and .pid > 0 and has("root")' \
        "slice: crun's prestart state (status created, host pid, extra root key) was taken"
jq_state slice poststop '.status == "stopped" and (.pid // 0) == 0 and .id == "gs-'$$'-slice"' \
        "slice: crun's poststop state has no usable pid (pid $(state_of slice poststop | jq -r '.pid // "none"' 2>/dev/null))"
[ -e "$SLICES/gs-$$-slice" ] && not_ok "slice: the poststop hook (pid 0 in the state) left $SLICES/gs-$$-slice" ||
        ok "slice: the poststop hook (pid 0 in the state) removed its directory"
no_container_left slice "slice"

# 4. An unsatisfied requirement (with a slice asked too) fails `crun run`; the process never
#    runs, the rootfs is unchanged, no container, cgroup or slice directory is left. crun 1.8
#    drops a hook's stdout and stderr (its own error names only the hook and its exit code)
#    unless the run.oci.hooks.stderr annotation names a file: gpuslice's message must be there.
make_bundle req '.process.env += $env | .hooks = {prestart: ['"$H_PRESTART"'], poststop: ['"$H_POSTSTOP"']}
        | .annotations["run.oci.hooks.stderr"] = ($bundle + "/hooks.err")' \
        --argjson env "$(env_json NVIDIA_VISIBLE_DEVICES=0 'NVIDIA_REQUIRE_CUDA=cuda>=99' GPUSLICE_MEMORY_LIMIT=1Gi)"
files_of "$TMP/req/rootfs" >"$TMP/req.fbefore"
crun_bundle req
if [ "$(rc_of req)" != 0 ]; then ok "cuda>=99: crun run fails (exit $(rc_of req))"; else not_ok "cuda>=99: crun run succeeded"; fi
cat "$TMP/req.out" >>"$TMP/req.err"
expect_err req "error executing hook \`$GS\` (exit code: 1)" "cuda>=99: crun's error names gpuslice's hook"
cp "$TMP/req/hooks.err" "$TMP/reqhook.err" 2>/dev/null || : >"$TMP/reqhook.err"
expect_err reqhook "unsatisfied condition: cuda>=99" "cuda>=99: gpuslice's message is in the hooks' stderr (run.oci.hooks.stderr)"
if grep -q "^DONE\|^HAS \|^NO " "$TMP/req.err"; then not_ok "cuda>=99: the container's process ran"; else ok "cuda>=99: the container's process never ran"; fi
no_container_left req "after the requirement error"
files_of "$TMP/req/rootfs" >"$TMP/req.fafter"
if diff "$TMP/req.fbefore" "$TMP/req.fafter" >"$TMP/req.fdiff"; then ok "cuda>=99: the rootfs is unchanged"; else
        not_ok "cuda>=99: the rootfs changed: $(head -5 "$TMP/req.fdiff" | tr '\n' ' ')"; fi
no_slice_dirs "cuda>=99"

# 5. CDI under crun: the spec's mounts and device nodes (spec-wide and device "0") applied to
#    config.json as a CDI runtime would, and its createContainer hooks exactly as
#    `gpuslice cdi generate` writes them (cdi-hook create-symlinks, update-ldcache) in
#    hooks.createContainer; no gpuslice hook otherwise. crun sends them pid 0. The image has no
#    ld cache entry for the driver: `ldconfig -p` lists libcuda.so.1 only if update-ldcache ran.
if ! "$GS" --root "$DRV" cdi generate --format json >"$TMP/cdi.json" 2>"$TMP/cdi.err"; then
        not_ok "cdi generate --format json: $(head -1 "$TMP/cdi.err")"
else
        CDI_CC=$(jq -c '[.containerEdits.hooks[]?, (.devices[] | select(.name == "0") | .containerEdits.hooks[]?)]
                | map(select(.hookName == "createContainer") | del(.hookName))' "$TMP/cdi.json")
        if [ "$(jq -r 'map(if .args[1] == "cdi-hook" then .args[2] else .args[1] end) | join(",")' <<<"$CDI_CC")" = \
                "create-symlinks,update-ldcache" ] &&
                jq -e 'all(.env | length > 0)' <<<"$CDI_CC" >/dev/null; then
                ok "cdi generate: createContainer hooks create-symlinks and update-ldcache, each with an explicit env"
        else not_ok "cdi generate: unexpected createContainer hooks: $CDI_CC"; fi
        # In a sanitizer build, LeakSanitizer in a createContainer hook (in the container's pid
        # namespace, the host's /proc still mounted) may fail the hook at exit (see test_hook.sh).
        if sanitized; then
                CDI_CC=$(jq -c 'map(.env += ["ASAN_OPTIONS=detect_leaks=0"])' <<<"$CDI_CC")
        fi
        CDI_MOUNTS=$(jq -c '[.containerEdits.mounts[]?, (.devices[] | select(.name == "0") | .containerEdits.mounts[]?)]
                | map({destination: .containerPath, source: .hostPath, type: "bind", options: .options})' "$TMP/cdi.json")
        CDI_DEVS='[]'
        for p in $(jq -r '.containerEdits.deviceNodes[]?, (.devices[] | select(.name == "0") | .containerEdits.deviceNodes[]?)
                        | "\(.path)=\(.hostPath // .path)"' "$TMP/cdi.json"); do
                read -r maj min < <(stat -L -c '%t %T' "${p#*=}")
                CDI_DEVS=$(jq -c --arg p "${p%%=*}" --argjson maj $((16#$maj)) --argjson min $((16#$min)) \
                        '. + [{path: $p, type: "c", major: $maj, minor: $min, fileMode: 438, uid: 0, gid: 0}]' <<<"$CDI_DEVS")
        done
        CDI_ENV=$(jq -c '[.containerEdits.env[]?, (.devices[] | select(.name == "0") | .containerEdits.env[]?)]' "$TMP/cdi.json")
        make_bundle cdi '.process.env += $cdienv
                | .mounts += $mounts
                | .linux.devices = ((.linux.devices // []) + $devs)
                | .linux.resources.devices = ((.linux.resources.devices // []) + ($devs | map({allow: true, type: "c", major, minor, access: "rwm"})))
                | .process.args = ["/bin/sh", "-c", "sh /check.sh; ldconfig -p | sed \"s/^/LDC /\"; for l in libcuda.so libcuda.so.1; do echo \"LINK $l $(readlink /usr/lib/x86_64-linux-gnu/$l)\"; done"]
                | .hooks = {createContainer: ($cdi + ['"$(h_dump createContainer)"'])}' \
                --argjson cdi "$CDI_CC" --argjson mounts "$CDI_MOUNTS" --argjson devs "$CDI_DEVS" \
                --argjson cdienv "$CDI_ENV" --arg dump "$DUMP"
        echo "# CDI edits applied: $(jq length <<<"$CDI_MOUNTS") mounts, devices $(jq -r 'map(.path) | join(" ")' <<<"$CDI_DEVS")"
        crun_bundle cdi
        show_states cdi createContainer
        expect_done cdi "CDI device 0 with the generated createContainer hooks"
        jq_state cdi createContainer '.pid == 0 and .bundle == "'"$TMP/cdi"'"' \
                "CDI: the createContainer hooks got crun's state with pid 0 (and the real bundle)"
        expect_fact_re cdi "^LDC[[:space:]]+libcuda\.so\.1 .*=> /usr/lib/x86_64-linux-gnu/libcuda\.so\.1$" \
                "CDI: ldconfig -p in the container lists libcuda.so.1 (update-ldcache ran)"
        expect_fact cdi "LINK libcuda.so.1 libcuda.so.$DRV_VERSION" "CDI: libcuda.so.1 -> libcuda.so.$DRV_VERSION (update-ldcache)"
        expect_fact cdi "LINK libcuda.so libcuda.so.1" "CDI: libcuda.so -> libcuda.so.1 (cdi-hook create-symlinks)"
        expect_fact cdi "HAS /dev/nvidia0" "CDI: /dev/nvidia0"
        expect_fact cdi "NO /dev/nvidia2" "CDI: no /dev/nvidia2"
        expect_fact cdi "HAS $LIBDIR/libcuda.so.$DRV_VERSION" "CDI: libcuda mounted"
        expect_fact cdi "SMI GPU 0: NVIDIA A100-SXM4-40GB (UUID: $GPU0_UUID)" "CDI: nvidia-smi -L shows GPU 0"
        no_container_left cdi "CDI"
fi

no_slice_dirs "at the end"
finish
