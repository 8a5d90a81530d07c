#!/usr/bin/env bash
# `gpuslice runtime` (nvidia-container-runtime), the OCI runtime shim, in front of the real runc
# (and crun): each mode (legacy, cdi, jit-cdi, auto) on real containers that must see the GPU and
# the slice's quota; a container that asks for no GPU is untouched (config.json byte-identical);
# every other command passes through byte for byte (state, --version, features, a missing
# container's error and exit code); a failing low-level runtime's exit code and message come
# through; errors land in the runtime's --log as JSON; a hostile bundle (config.json a symlink,
# a planted temporary file) is refused or sidestepped, never followed.
. "$(dirname "$0")/lib.sh"
. "$SRC/tests/integration/bundle.sh"

need jq unshare sha256sum "$RUNC" crun
[ -x "$GS" ] || { not_ok "$GS is not built"; finish; }

DRV=$(mkroot drv 2gpu.conf)
STATE=$TMP/runc-state
CG=gs-it-shim-$$
SLICES=$TMP/slices
CONF=$TMP/hook.toml
hook_config "$CONF" "$DRV" "$SLICES"
mkdir -p "$TMP/bin" "$TMP/cdi-specs"
ln -s "$BUILD/gpuslice-runtime" "$TMP/bin/nvidia-container-runtime"
SHIM=$TMP/bin/nvidia-container-runtime
ids=()
cleanup() {
        local id d
        for id in "${ids[@]}"; do "$RUNC" --root "$STATE" delete -f "$id" >/dev/null 2>&1; done
        for d in /sys/fs/cgroup/*/"$CG"-* /sys/fs/cgroup/"$CG"-*; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done
        rm -rf "$TMP"
}
trap cleanup EXIT
env_json() { printf '%s\n' "$@" | jq -R . | jq -cs .; }

# shim_config FILE MODE [RUNTIMES-TOML-ARRAY]: the hook's config plus a [runtime] section
shim_config() {
        cp "$CONF" "$1"
        printf '\n[runtime]\nmode = "%s"\nruntimes = %s\ncdi-spec-dirs = ["%s"]\nenv-cdi-kinds = ["nvidia.com/gpu", "slices.example.com/gpu"]\n' \
                "$2" "${3:-[\"runc\"]}" "$TMP/cdi-specs" >>"$1"
}
# k8s_config FILE MODE: shim_config made a Kubernetes node's by `gpuslice runtime configure
# --kubernetes`: the env of unprivileged containers refused, volume mounts accepted
k8s_config() {
        shim_config "$1" "$2"
        "$GS" runtime configure --kubernetes --host-config "$1" >"$TMP/k8s-config.out" 2>&1 ||
                not_ok "runtime configure --kubernetes --host-config $1: $(cat "$TMP/k8s-config.out")"
}
for m in legacy cdi jit-cdi auto; do shim_config "$TMP/shim-$m.toml" "$m"; k8s_config "$TMP/shim-k8s-$m.toml" "$m"; done
# the CDI spec that mode cdi resolves names in, made by `cdi generate` from the same root
run cdigen -- "$GS" --root "$DRV" cdi generate --output "$TMP/cdi-specs/nvidia.yaml"
expect_rc cdigen 0 "cdi generate writes the spec mode cdi reads"

# shim_bundle NAME MODE: `nvidia-container-runtime --root STATE --log LOG --log-format json run
# --bundle B ID` (60 s at most) with GPUSLICE_CONFIG naming MODE's config
shim_bundle() {
        local id=gs-$$-$1
        ids+=("$id")
        run "$1" -- env GPUSLICE_CONFIG="$TMP/shim-$2.toml" timeout 60 "$SHIM" --root "$STATE" \
                --log "$TMP/$1.log" --log-format json run --bundle "$TMP/$1" "$id" </dev/null
}
# GPU 0 as a CDI spec gives it (no /proc/driver/nvidia/gpus filtering: nvidia-ctk's specs have none)
expect_gpu0_cdi() { # NAME DESC
        local n=$1 d=$2
        expect_fact "$n" "HAS /dev/nvidiactl" "$d: /dev/nvidiactl"
        expect_fact "$n" "HAS /dev/nvidia0" "$d: /dev/nvidia0"
        expect_fact "$n" "NO /dev/nvidia2" "$d: no /dev/nvidia2 (GPU 1 not selected)"
        expect_fact "$n" "HAS $LIBDIR/libcuda.so.$DRV_VERSION" "$d: libcuda"
        expect_fact "$n" "HAS /usr/bin/nvidia-smi" "$d: nvidia-smi"
        expect_fact "$n" "SMI GPU 0: NVIDIA A100-SXM4-40GB (UUID: $GPU0_UUID)" "$d: nvidia-smi -L shows GPU 0"
}
sum() { sha256sum <"$1" | cut -d' ' -f1; }
# our stage hooks in NAME's config.json, "stage:last-arg": `gpuslice-hook ... STAGE` (not its CDI
# commands) or `gpuslice hook ... STAGE`
hooks_of() { jq -c '[.hooks // {} | to_entries[] | .key as $k | .value[] | select(.args[1] == "hook" or
        (.args[0] == "gpuslice-hook" and (.args[1] | IN("create-symlinks", "update-ldcache") | not))) | "\($k):\(.args[-1])"]' "$TMP/$1/config.json"; }

# 1. No GPU asked: config.json byte-identical, nothing of the driver inside.
make_bundle plain
before=$(sum "$TMP/plain/config.json")
shim_bundle plain legacy
expect_done plain "no GPU asked, through the shim"
expect_nothing plain "no GPU asked"
[ "$(sum "$TMP/plain/config.json")" = "$before" ] && ok "no GPU asked: config.json is byte-identical" ||
        not_ok "no GPU asked: config.json changed"
left=$(ls -A "$TMP/plain" | grep -v -x -e config.json -e rootfs)
[ -z "$left" ] && ok "no GPU asked: nothing else in the bundle" || not_ok "the bundle holds: $left"

# 2. legacy: NVIDIA_VISIBLE_DEVICES=0 -> the prestart hook -> GPU 0
make_bundle leg '.process.env += ["NVIDIA_VISIBLE_DEVICES=0"]'
shim_bundle leg legacy
expect_done leg "legacy, NVIDIA_VISIBLE_DEVICES=0"
expect_gpu0 leg "legacy"
check "legacy: config.json has our prestart hook" [ "$(hooks_of leg)" = '["prestart:prestart"]' ]
# the hook it adds is the lean one installed beside the shim, with its own words and an explicit env
got=$(jq -c '.hooks.prestart[0] | [.path, .args, (.env | length)]' "$TMP/leg/config.json")
want=$(jq -nc --arg p "$BUILD/gpuslice-hook" --arg c "$TMP/shim-legacy.toml" '[$p, ["gpuslice-hook", "--config", $c, "prestart"], 1]')
[ "$got" = "$want" ] && ok "legacy: the prestart hook runs the gpuslice-hook beside the shim: gpuslice-hook --config F prestart" ||
        not_ok "legacy: the prestart hook added: $got, wanted $want"
left=$(ls -A "$TMP/leg" | grep -v -x -e config.json -e rootfs)
[ -z "$left" ] && ok "legacy: no temporary file left in the bundle" || not_ok "the bundle holds: $left"

# 3. legacy with a slice: the quota inside (the prestart hook's slice stage), poststop added
make_bundle legs '.process.env += $env' --argjson env "$(env_json NVIDIA_VISIBLE_DEVICES=0 GPUSLICE_MEMORY_LIMIT=1Gi EXPECT_TOTAL_MIB=1024)"
shim_bundle legs legacy
expect_done legs "legacy with a 1 GiB slice"
expect_slice legs "legacy slice" 1Gi 1024
check "legacy slice: prestart and poststop hooks" [ "$(hooks_of legs)" = '["prestart:prestart","poststop:poststop"]' ]

# 4. cdi: NVIDIA_VISIBLE_DEVICES=nvidia.com/gpu=0 resolved in the spec dir, edits applied in-process
make_bundle cdi '.process.env += ["NVIDIA_VISIBLE_DEVICES=nvidia.com/gpu=0"]'
shim_bundle cdi cdi
expect_done cdi "cdi, NVIDIA_VISIBLE_DEVICES=nvidia.com/gpu=0"
expect_gpu0_cdi cdi "cdi"
check "cdi: no legacy hook, NVIDIA_VISIBLE_DEVICES=void in the spec" \
        [ "$(jq -r '[.process.env[] | select(startswith("NVIDIA_VISIBLE_DEVICES="))] | join(",")' "$TMP/cdi/config.json")" = NVIDIA_VISIBLE_DEVICES=void ]
check "cdi: /dev/nvidia0 in linux.devices and allowed" \
        [ "$(jq '[.linux.devices[] | select(.path == "/dev/nvidia0")] | length' "$TMP/cdi/config.json")" = 1 ]

# 5. auto + the cdi.k8s.io annotation (a kubelet's CDI devices) and a slice in the env
make_bundle ann '.process.env += $env | .annotations["cdi.k8s.io/gpuslice"] = "nvidia.com/gpu=0"' \
        --argjson env "$(env_json GPUSLICE_MEMORY_LIMIT=1Gi EXPECT_TOTAL_MIB=1024)"
shim_bundle ann auto
expect_done ann "auto, a cdi.k8s.io/ annotation and GPUSLICE_MEMORY_LIMIT=1Gi"
expect_gpu0_cdi ann "auto (cdi)"
expect_slice ann "auto (cdi) slice" 1Gi 1024
check "auto (cdi): the slice hooks are createRuntime and poststop" [ "$(hooks_of ann)" = '["createRuntime:createRuntime","poststop:poststop"]' ]

# 5b. cdi: a CDI slice device (its spec brings the slice hooks; the shim adds none of its own).
#     The spec's hooks run a wrapper that hands `hook` this test's config.
printf '#!/bin/sh\nif [ "$1" = hook ]; then shift; exec "%s" hook --config "%s" "$@"; fi\nexec "%s" "$@"\n' "$GS" "$CONF" "$GS" >"$TMP/bin/gs-wrap"
chmod +x "$TMP/bin/gs-wrap"
run cdigen2 -- "$GS" --root "$DRV" cdi generate --slice 1g=1Gi --hook-path "$TMP/bin/gs-wrap" --output "$TMP/cdi-specs/slices.yaml"
sed -i 's|^kind: nvidia.com/gpu$|kind: slices.example.com/gpu|' "$TMP/cdi-specs/slices.yaml"
expect_rc cdigen2 0 "cdi generate --slice 1g=1Gi (kind slices.example.com/gpu)"
make_bundle cdis '.process.env += $env' --argjson env "$(env_json NVIDIA_VISIBLE_DEVICES=slices.example.com/gpu=0-1g EXPECT_TOTAL_MIB=1024)"
shim_bundle cdis cdi
expect_done cdis "cdi, the CDI slice device slices.example.com/gpu=0-1g"
expect_gpu0_cdi cdis "cdi slice device"
expect_slice cdis "cdi slice device" 1Gi 1024
check "cdi slice device: one createRuntime and one poststop slice hook (the spec's), none added" \
        [ "$(jq -c '[.hooks.createRuntime[], .hooks.poststop[] | .path]' "$TMP/cdis/config.json")" = "[\"$TMP/bin/gs-wrap\",\"$TMP/bin/gs-wrap\"]" ]

# 6. jit-cdi: a spec made now for NVIDIA_VISIBLE_DEVICES=0, with the slice
make_bundle jit '.process.env += $env' --argjson env "$(env_json NVIDIA_VISIBLE_DEVICES=0 GPUSLICE_MEMORY_LIMIT=1Gi EXPECT_TOTAL_MIB=1024)"
shim_bundle jit jit-cdi
expect_done jit "jit-cdi, NVIDIA_VISIBLE_DEVICES=0 and a 1 GiB slice"
expect_gpu0_cdi jit "jit-cdi"
expect_slice jit "jit-cdi slice" 1Gi 1024

# jit-cdi by UUID: the spec made now names GPUs by UUID
make_bundle jitu '.process.env += ["NVIDIA_VISIBLE_DEVICES='"$GPU0_UUID"'"]'
shim_bundle jitu jit-cdi
expect_done jitu "jit-cdi, NVIDIA_VISIBLE_DEVICES=<GPU 0's UUID>"
expect_gpu0_cdi jitu "jit-cdi by UUID"

# 7. the volume-mount strategy: /var/run/nvidia-container-devices/0 (legacy) and .../cdi/nvidia.com/gpu/0 (auto)
make_bundle vol '.process.env += ["NVIDIA_VISIBLE_DEVICES=/var/run/nvidia-container-devices"]
        | .mounts += [{destination: "/var/run/nvidia-container-devices/0", type: "bind", source: "/dev/null", options: ["rbind", "ro"]}]'
shim_bundle vol k8s-legacy
expect_done vol "legacy, a device named by a volume mount (volume mounts accepted)"
expect_gpu0 vol "legacy volume mount"
make_bundle volc '.mounts += [{destination: "/var/run/nvidia-container-devices/cdi/nvidia.com/gpu/0", type: "bind", source: "/dev/null", options: ["rbind", "ro"]}]'
shim_bundle volc k8s-auto
expect_done volc "auto, a CDI device named by a volume mount (volume mounts accepted)"
expect_gpu0_cdi volc "auto volume mount (cdi)"

# 8. an unresolvable CDI device: the create fails, the message in --log (JSON) and on stderr,
#    config.json untouched, no container
make_bundle bad '.process.env += ["NVIDIA_VISIBLE_DEVICES=nvidia.com/gpu=7"]'
before=$(sum "$TMP/bad/config.json")
shim_bundle bad cdi
expect_rc bad 1 "an unresolvable CDI device fails the create"
expect_err bad "unresolvable CDI devices nvidia.com/gpu=7" "... saying which device"
if jq -e 'select(.level == "error" and (.msg | contains("unresolvable CDI devices nvidia.com/gpu=7"))) | .time' "$TMP/bad.log" >/dev/null 2>&1
then ok "... and the runtime's --log has it as a JSON error line"; else not_ok "--log: $(cat "$TMP/bad.log" 2>&1)"; fi
[ "$(sum "$TMP/bad/config.json")" = "$before" ] && ok "... config.json untouched" || not_ok "config.json changed on failure"
run badstate -- "$RUNC" --root "$STATE" state "gs-$$-bad"
expect_rc badstate 1 "... and runc has no such container"

# 9. a hostile bundle: config.json a symlink (to a file outside) is refused, its target unchanged;
#    a planted file at the temporary name is left alone
make_bundle sym '.process.env += ["NVIDIA_VISIBLE_DEVICES=0"]'
mv "$TMP/sym/config.json" "$TMP/outside.json"; ln -s "$TMP/outside.json" "$TMP/sym/config.json"
before=$(sum "$TMP/outside.json")
shim_bundle sym legacy
expect_rc sym 1 "config.json a symlink: refused"
expect_err sym "config.json" "... naming config.json"
[ "$(sum "$TMP/outside.json")" = "$before" ] && ok "... the symlink's target is untouched" || not_ok "the target was written"
make_bundle plant '.process.env += ["NVIDIA_VISIBLE_DEVICES=0"]'
for i in 0 1 2; do ln -s "$TMP/planted-target" "$TMP/plant/.config.json.gpuslice-$i-$i"; done
echo planted >"$TMP/planted-target"
shim_bundle plant legacy
expect_done plant "planted symlinks beside config.json"
expect_gpu0 plant "planted symlinks"
check "... the planted target is untouched" [ "$(cat "$TMP/planted-target")" = planted ]

# 10. pass-through, byte for byte: state, --version, features, a missing container
id=gs-$$-plain2; ids+=("$id")
make_bundle plain2 '.process.args = ["/bin/sleep", "30"]'
run create -- env GPUSLICE_CONFIG="$TMP/shim-legacy.toml" "$SHIM" --root "$STATE" create --bundle "$TMP/plain2" "$id"
expect_rc create 0 "create (no GPU) through the shim"
for args in "state $id" "--version" "features" "state gs-$$-none" "nonsense-command"; do
        n=pt-${args%% *}; n=${n//-/_}
        run "$n.runc" -- "$RUNC" --root "$STATE" $args
        run "$n.shim" -- env GPUSLICE_CONFIG="$TMP/shim-legacy.toml" "$SHIM" --root "$STATE" $args
        # runc's own error lines carry a time stamp: compare without it
        for f in "$TMP/$n.runc.err" "$TMP/$n.shim.err"; do sed -i 's/time="[^"]*" //' "$f"; done
        if [ "$(rc_of "$n.runc")" = "$(rc_of "$n.shim")" ] && cmp -s "$TMP/$n.runc.out" "$TMP/$n.shim.out" &&
                cmp -s "$TMP/$n.runc.err" "$TMP/$n.shim.err"; then
                ok "'$args': the shim's output and exit code ($(rc_of "$n.shim")) are runc's"
        else not_ok "'$args': runc exit $(rc_of "$n.runc"), shim $(rc_of "$n.shim")"; diff "$TMP/$n.runc.out" "$TMP/$n.shim.out" | head -5; fi
done
"$RUNC" --root "$STATE" delete -f "$id" >/dev/null 2>&1

# 11. a failing low-level runtime: its exit code and message come through unchanged
printf '#!/bin/sh\necho "fake-runtime: $*" >&2\nexit 42\n' >"$TMP/bin/failing-rt"; chmod +x "$TMP/bin/failing-rt"
shim_config "$TMP/shim-fail.toml" legacy "[\"$TMP/bin/failing-rt\"]"
run fail -- env GPUSLICE_CONFIG="$TMP/shim-fail.toml" "$SHIM" --root "$STATE" kill some-id KILL
expect_rc fail 42 "a failing low-level runtime's exit code"
check "... and its message, its arguments untouched" [ "$(cat "$TMP/fail.err")" = "fake-runtime: --root $STATE kill some-id KILL" ]
# the shim never runs itself (nvidia-container-runtime on the list), nor a runtime missing
shim_config "$TMP/shim-self.toml" legacy '["nvidia-container-runtime", "no-such-runtime"]'
run self -- env PATH="$TMP/bin:$PATH" GPUSLICE_CONFIG="$TMP/shim-self.toml" "$SHIM" --version
expect_rc self 1 "only itself and a missing runtime on the list: an error, no loop"
expect_err self "no low-level runtime found" "... saying so"

# an invalid host config: a create fails, naming it; a delete still reaches runc (default list)
printf '[runtime]\nmode = "sometimes"\n' >"$TMP/shim-bad.toml"
make_bundle badcfg
run badcfg -- env GPUSLICE_CONFIG="$TMP/shim-bad.toml" "$SHIM" --root "$STATE" create --bundle "$TMP/badcfg" "gs-$$-badcfg"
expect_rc badcfg 1 "an invalid host config fails a create"
expect_err badcfg "'runtime.mode' must be legacy, cdi, jit-cdi or auto" "... naming the key"
run baddel.runc -- "$RUNC" --root "$STATE" delete "gs-$$-none"
run baddel -- env GPUSLICE_CONFIG="$TMP/shim-bad.toml" "$SHIM" --root "$STATE" delete "gs-$$-none"
check "... while a delete still reaches runc (its exit code $(rc_of baddel.runc))" [ "$(rc_of baddel)" = "$(rc_of baddel.runc)" ]
check "... and runc's own message comes through" grep -q "container does not exist" "$TMP/baddel.err"

# 13. Whole GPUs only as the host allows (NVIDIA's accept-nvidia-visible-devices-* rules). The
#     containers are unprivileged (Docker's capabilities: no CAP_SYS_ADMIN) unless said.
#     A device plugin's spec (kind k8s.gpuslice.io/gpu, with its "all") and another pod's DRA
#     claim spec (kind k8s.gpu.gpuslice.io/claim) lie in the spec directory beside nvidia.com/gpu.
sed 's|^kind: nvidia.com/gpu$|kind: k8s.gpuslice.io/gpu|' "$TMP/cdi-specs/nvidia.yaml" >"$TMP/cdi-specs/gpuslice-k8s.yaml"
sed 's|^kind: nvidia.com/gpu$|kind: k8s.gpu.gpuslice.io/claim|; s|^- name: "*0"*$|- name: 5f2c-gpu0|' \
        "$TMP/cdi-specs/nvidia.yaml" >"$TMP/cdi-specs/gpu.gpuslice.io-claim-5f2c.yaml"
grep -q '^kind: k8s.gpu.gpuslice.io/claim$' "$TMP/cdi-specs/gpu.gpuslice.io-claim-5f2c.yaml" &&
        grep -q '5f2c-gpu0' "$TMP/cdi-specs/gpu.gpuslice.io-claim-5f2c.yaml" && ok "a plugin's spec and a claim's spec made" ||
        not_ok "the claim spec: $(grep -n 'kind\|name' "$TMP/cdi-specs/gpu.gpuslice.io-claim-5f2c.yaml" | head -5)"
hooks_none() { check "$1: no hook added" [ "$(hooks_of "$1")" = '[]' ]; }
# a Kubernetes node, an image's NVIDIA_VISIBLE_DEVICES=all: no GPU, in each mode
for m in auto legacy cdi jit-cdi; do
        make_bundle "kall-$m" '.process.env += ["NVIDIA_VISIBLE_DEVICES=all"]'
        shim_bundle "kall-$m" "k8s-$m"
        expect_done "kall-$m" "k8s node, $m, unprivileged, image env NVIDIA_VISIBLE_DEVICES=all"
        expect_nothing "kall-$m" "k8s node, $m, env all refused"
        hooks_none "kall-$m"
done
# ... a CUDA image's implicit all (CUDA_VERSION, no NVIDIA_REQUIRE_CUDA, no NVIDIA_VISIBLE_DEVICES)
make_bundle kcuda '.process.env += ["CUDA_VERSION=12.4.1"]'
shim_bundle kcuda k8s-auto
expect_done kcuda "k8s node, auto, a legacy CUDA image (implicit all)"
expect_nothing kcuda "k8s node, a legacy CUDA image's implicit all refused"
hooks_none kcuda
# ... the fully qualified names of the plugin's all and of another claim's device
for d in k8s.gpuslice.io/gpu=all k8s.gpu.gpuslice.io/claim=5f2c-gpu0 nvidia.com/gpu=all; do
        n=kq-${d%%=*}; n=${n//[.\/]/-}
        make_bundle "$n" '.process.env += ["NVIDIA_VISIBLE_DEVICES='"$d"'"]'
        shim_bundle "$n" k8s-auto
        expect_done "$n" "k8s node, auto, image env NVIDIA_VISIBLE_DEVICES=$d"
        expect_nothing "$n" "k8s node, env $d refused"
done
# ... the same container privileged (CAP_SYS_ADMIN in its bounding set): every GPU, as NVIDIA gives
make_bundle kpriv '.process.env += ["NVIDIA_VISIBLE_DEVICES=all"] | .process.capabilities.bounding += ["CAP_SYS_ADMIN"]'
shim_bundle kpriv k8s-auto
expect_done kpriv "k8s node, auto, a privileged container with NVIDIA_VISIBLE_DEVICES=all"
expect_all_gpus kpriv "k8s node, privileged"
make_bundle kprivc '.process.env += ["CUDA_VERSION=12.4.1"] | .process.capabilities.bounding += ["CAP_SYS_ADMIN"]'
shim_bundle kprivc k8s-legacy
expect_done kprivc "k8s node, legacy, a privileged legacy CUDA image"
expect_all_gpus kprivc "k8s node, privileged legacy image (implicit all)"
# ... the kubelet's volume mounts give exactly their devices, whatever the image's env says
make_bundle kvol '.process.env += ["NVIDIA_VISIBLE_DEVICES=all"]
        | .mounts += [{destination: "/var/run/nvidia-container-devices/'"$GPU0_UUID"'", type: "bind", source: "/dev/null", options: ["rbind", "ro"]}]'
shim_bundle kvol k8s-auto
expect_done kvol "k8s node, auto, a volume mount of GPU 0's UUID and image env all"
expect_gpu0 kvol "k8s node, the volume mount's GPU 0 only"
make_bundle kvolj '.process.env += ["NVIDIA_VISIBLE_DEVICES=all"]
        | .mounts += [{destination: "/var/run/nvidia-container-devices/1", type: "bind", source: "/dev/null", options: ["rbind", "ro"]}]'
shim_bundle kvolj k8s-jit-cdi
expect_done kvolj "k8s node, jit-cdi, a volume mount of GPU 1 and image env all"
expect_fact kvolj "HAS /dev/nvidia2" "k8s node, jit-cdi volume mount: GPU 1"
expect_fact kvolj "NO /dev/nvidia0" "k8s node, jit-cdi volume mount: not GPU 0"
check "k8s node, jit-cdi: the device mount is consumed (no legacy hook could add it again)" \
        [ "$(jq '[.mounts[] | select(.destination | startswith("/var/run/nvidia-container-devices"))] | length' "$TMP/kvolj/config.json")" = 0 ]
# ... a device plugin's volume-mounts answer with a slice (slice/memory=1Gi: the allocator's word),
# the image's env asking for more: the slice's hook keeps the slice mounts and the quota holds
for m in k8s-jit-cdi k8s-legacy; do
        make_bundle "kvs-$m" '.process.env += $env
                | .mounts += [{destination: "/var/run/nvidia-container-devices/'"$GPU0_UUID"'", type: "bind", source: "/dev/null", options: ["rbind", "ro"]},
                              {destination: "/var/run/nvidia-container-devices/slice/memory=1Gi", type: "bind", source: "/dev/null", options: ["rbind", "ro"]}]' \
                --argjson env "$(env_json NVIDIA_VISIBLE_DEVICES=/var/run/nvidia-container-devices GPUSLICE_MEMORY_LIMIT=40Gi \
                        GPUSLICE_MEMORY_LIMIT_0=40Gi EXPECT_TOTAL_MIB=1024)"
        shim_bundle "kvs-$m" "$m"
        expect_done "kvs-$m" "k8s node, ${m#k8s-}, a volume mount of GPU 0 and slice/memory=1Gi, the image's env asking 40Gi"
        expect_fact "kvs-$m" "HAS /dev/nvidia0" "k8s node, ${m#k8s-}: the volume mount's GPU 0"
        expect_fact "kvs-$m" "NO /dev/nvidia2" "k8s node, ${m#k8s-}: not GPU 1"
        expect_fact "kvs-$m" "SLICE GPUSLICE_MEMORY_LIMIT=1Gi" "k8s node, ${m#k8s-}: the slice mount's 1Gi in slice.conf"
        expect_fact "kvs-$m" "PROBE_M ok total is the quota (1024 MiB)" "k8s node, ${m#k8s-}: cuMemGetInfo total = 1024 MiB"
done
make_bundle kvs-plain '.process.env += $env
        | .mounts += [{destination: "/var/run/nvidia-container-devices/'"$GPU0_UUID"'", type: "bind", source: "/dev/null", options: ["rbind", "ro"]},
                      {destination: "/var/run/nvidia-container-devices/slice/memory=1Gi", type: "bind", source: "/dev/null", options: ["rbind", "ro"]}]' \
        --argjson env "$(env_json NVIDIA_VISIBLE_DEVICES=/var/run/nvidia-container-devices EXPECT_TOTAL_MIB=1024)"
shim_bundle kvs-plain k8s-jit-cdi
expect_done kvs-plain "k8s node, jit-cdi, a volume mount of GPU 0 and slice/memory=1Gi, no slice in the env"
expect_fact kvs-plain "SLICE GPUSLICE_MEMORY_LIMIT=1Gi" "k8s node, jit-cdi: the slice mount alone makes the slice (the shim adds its hook)"
# ... a mount there whose source is not /dev/null (an image's VOLUME) names nothing
make_bundle kvolx '.mounts += [{destination: "/var/run/nvidia-container-devices/all", type: "tmpfs", source: "tmpfs", options: ["nosuid"]}]'
shim_bundle kvolx k8s-auto
expect_done kvolx "k8s node, a tmpfs (not /dev/null) at /var/run/nvidia-container-devices/all"
expect_nothing kvolx "k8s node, a mount not of /dev/null asks for nothing"
# a host that does not accept volume mounts (NVIDIA's default) ignores them
make_bundle dvol '.process.env += ["NVIDIA_VISIBLE_DEVICES=/var/run/nvidia-container-devices"]
        | .mounts += [{destination: "/var/run/nvidia-container-devices/0", type: "bind", source: "/dev/null", options: ["rbind", "ro"]}]'
shim_bundle dvol auto
expect_done dvol "default host, a volume mount of GPU 0 (mounts not accepted)"
expect_nothing dvol "default host: the volume mount is ignored"
# a host that accepts the env (NVIDIA's default) still never resolves a Kubernetes allocator's
# device from it: the create fails, naming the kind
for d in k8s.gpuslice.io/gpu=all k8s.gpu.gpuslice.io/claim=5f2c-gpu0; do
        n=dq-${d%%=*}; n=${n//[.\/]/-}
        make_bundle "$n" '.process.env += ["NVIDIA_VISIBLE_DEVICES='"$d"'"]'
        shim_bundle "$n" auto
        expect_rc "$n" 1 "default host, env NVIDIA_VISIBLE_DEVICES=$d: refused"
        expect_err "$n" "${d%%=*} is not a kind the env may name" "... naming the kind"
done
# the kubelet's devices (a cdi.k8s.io annotation) win over the image's env, which adds nothing
make_bundle dann '.process.env += ["NVIDIA_VISIBLE_DEVICES=all"] | .annotations["cdi.k8s.io/gpuslice"] = "nvidia.com/gpu=0"'
shim_bundle dann auto
expect_done dann "default host, a cdi.k8s.io annotation of GPU 0 and image env all"
expect_gpu0_cdi dann "default host, the annotation's GPU 0 only"
# the hook itself (as a runtime with the hook installed runs it) follows the same rules
H_PRE='{path: $gs, args: ["gpuslice", "hook", "--config", $conf, "prestart"], env: $hookenv}'
CONF=$TMP/shim-k8s-legacy.toml make_bundle hk '.process.env += ["NVIDIA_VISIBLE_DEVICES=all"] | .hooks = {prestart: ['"$H_PRE"']}'
run_bundle hk
expect_done hk "hook on a k8s node, unprivileged, NVIDIA_VISIBLE_DEVICES=all"
expect_nothing hk "hook on a k8s node: env all refused"
CONF=$TMP/shim-k8s-legacy.toml make_bundle hkv '.process.env += ["NVIDIA_VISIBLE_DEVICES=all"] | .hooks = {prestart: ['"$H_PRE"']}
        | .mounts += [{destination: "/var/run/nvidia-container-devices/0", type: "bind", source: "/dev/null", options: ["rbind", "ro"]}]'
run_bundle hkv
expect_done hkv "hook on a k8s node, a volume mount of GPU 0"
expect_gpu0 hkv "hook on a k8s node, the volume mount's GPU 0"

# 12. crun as the low-level runtime (in a mount namespace with the hybrid controllers on v1, as
#     test_crun.sh runs it), a GPU container in legacy mode
V1_CTRLS=
if [ "$(stat -f -c %T /sys/fs/cgroup)" != cgroup2fs ] && [ -r /sys/fs/cgroup/unified/cgroup.controllers ]; then
        V1_CTRLS=$(cat /sys/fs/cgroup/unified/cgroup.controllers)
fi
mkdir -p "$TMP/v1"
shim_config "$TMP/shim-crun.toml" legacy '["crun"]'
make_bundle crun '.process.env += ["NVIDIA_VISIBLE_DEVICES=0"]'
run crun -- env V1_CTRLS="$V1_CTRLS" GPUSLICE_CONFIG="$TMP/shim-crun.toml" timeout 60 unshare -m sh -c 'mount --make-rprivate / || exit 125
d=$0; for c in $V1_CTRLS; do mkdir -p "$d/$c" && mount -t cgroup -o "$c" cgroup "$d/$c" || exit 125; done
exec "$@"' "$TMP/v1" "$SHIM" --root "$TMP/crun-state" run --bundle "$TMP/crun" "gs-$$-crun"
expect_done crun "crun through the shim, legacy, NVIDIA_VISIBLE_DEVICES=0"
expect_gpu0 crun "crun"
# What starts in front of every container loads little: the shim's executable needs no TLS,
# HTTP/2, terminal or HTTP-client library; the hook it adds (legacy, case 2: the gpuslice-hook
# beside it) needs only libc, json-c, libcap and libseccomp (no libyaml either: the hook reads no
# CDI spec); and gpuslice itself no libcurl (the DRA plugin loads it when it runs). Each once
# cost milliseconds per container.
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' '; }
shim_libs=$(needed "$BUILD/gpuslice-runtime") gs_libs=$(needed "$BUILD/gpuslice")
[[ $shim_libs == *libc.so* ]] && ! [[ $shim_libs =~ gnutls|curl|nghttp2|ncurses|microhttpd|protobuf ]] &&
        ok "gpuslice-runtime links only what the shim needs: $shim_libs" || not_ok "gpuslice-runtime links: ${shim_libs:-nothing read}"
leg_hook=$(jq -r '.hooks.prestart[0].path' "$TMP/leg/config.json")
hook_libs=$(needed "$leg_hook" 2>/dev/null) extra=""
for l in $hook_libs; do
        case $l in libc.so.6 | libjson-c.so.5 | libcap.so.2 | libseccomp.so.2 | ld-linux-x86-64.so.2) ;;
        libasan.so.* | libubsan.so.*) sanitized || extra="$extra $l" ;; # a sanitizer build's runtimes
        *) extra="$extra $l" ;;
        esac
done
[ -n "$hook_libs" ] && [ -z "$extra" ] && ok "the hook the shim adds ($leg_hook) links only $hook_libs" ||
        not_ok "the hook the shim adds ($leg_hook) links${extra:- nothing read} besides libc, json-c, libcap, libseccomp"
[[ $gs_libs == *libc.so* ]] && ! [[ $gs_libs == *curl* ]] &&
        ok "gpuslice does not link libcurl" || not_ok "gpuslice links: ${gs_libs:-nothing read}"

finish
