#!/usr/bin/env bash
# gpuslice device-plugin, the other ways to answer Allocate, and the topology:
#   A. allocate = "env" (runtimes without CDI), simulated 2-GPU machine: each answer (env +
#      device specs) turned into a runc container whose prestart hook is `gpuslice hook`, as a
#      runtime with the hook installed runs it: the GPU, and the slice's quota (4096 / 8192 MiB);
#   B. the 8-GPU machine with MIG on GPU 2 and a PCI/NUMA topology in a fake sysfs: MIG devices
#      offered and one run as a container, NUMA nodes on ListAndWatch, GetPreferredAllocation
#      choosing GPUs behind one switch, shares spilling to the nearest GPU;
#   A2. allocate = "volume-mounts" (a node whose hook refuses NVIDIA_VISIBLE_DEVICES from
#      unprivileged containers): the devices as /dev/null mounts, run as runc containers through
#      the hook with that node's config: exactly the answer's GPU, the slice;
#   C. allocate = "cdi-annotations" with replicas of nvidia.com/gpu (time-slicing with a quota):
#      the cdi.k8s.io annotation, and the names in the plugin's CDI spec.
. "$(dirname "$0")/../integration/lib.sh"
. "$SRC/tests/integration/bundle.sh"
. "$SRC/tests/k8s/lib.sh"

# runc and jq come with `make test-deps`: without them the environment is broken, not this machine
[ -x "$RUNC" ] || { not_ok "runc is not installed (make test-deps)"; finish; }
command -v jq >/dev/null || { not_ok "jq is not installed (make test-deps)"; finish; }
[ -x "$GS" ] || { not_ok "$GS is not built"; finish; }
if ! have_grpc; then
        not_ok "$PY cannot import grpc and grpc_tools (make test-deps: python3-grpcio python3-grpc-tools)"
        finish
fi

STATE=$TMP/runc-state
CG=gs-k8s-env-$$
ids=()
cleanup() {
        local id d
        stop_plugin
        stop_kubelet
        for id in "${ids[@]}"; do "$RUNC" --root "$STATE" delete -f "$id" >/dev/null 2>&1; done
        for d in /sys/fs/cgroup/*/"$CG"-*; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done
        rm -rf "$TMP"
}
trap cleanup EXIT
H_PRESTART='{path: $gs, args: ["gpuslice", "--root", $drv, "hook", "--config", $conf, "prestart"], env: $hookenv}'
H_POSTSTOP='{path: $gs, args: ["gpuslice", "hook", "--config", $conf, "poststop"], env: $hookenv}'

# answer_bundle NAME ANSWER.json [EXTRA_ENV...]: a runc bundle as a CRI runtime makes it from an
# Allocate answer (env; device specs -> linux.devices and device cgroup rules; mounts), with our
# hook (its config: $CONF).
answer_bundle() {
        local n=$1 ans=$2; shift 2
        local env devs mnts
        mnts=$(jq -c '[.mounts // [] | .[] | {destination: .container_path, source: .host_path, type: "bind",
                options: ["rbind", (if .read_only then "ro" else "rw" end)]}]' "$ans")
        env=$( (jq -r '.envs // {} | to_entries[] | "\(.key)=\(.value)"' "$ans"; [ $# -eq 0 ] || printf '%s\n' "$@") |
                jq -R . | jq -cs .)
        devs=$(jq -r '.devices // [] | .[] | "\(.container_path) \(.host_path) \(.permissions)"' "$ans" |
                while read -r cp hp perm; do
                        printf '{"path":"%s","type":"c","major":%d,"minor":%d,"fileMode":438,"uid":0,"gid":0,"access":"%s"}\n' \
                                "$cp" "0x$(stat -c %t "$hp")" "0x$(stat -c %T "$hp")" "$perm"
                done | jq -cs .)
        make_bundle "$n" '.process.env += $env
                | .mounts += $mnts
                | .linux.devices = ($devs | map(del(.access)))
                | .linux.resources.devices += ($devs | map({allow: true, type, major, minor, access}))
                | .hooks = {prestart: ['"$H_PRESTART"'], poststop: ['"$H_POSTSTOP"']}' \
                --argjson env "$env" --argjson devs "$devs" --argjson mnts "$mnts"
        run_bundle "$n"
}

# ---------------------------------------------------------------------------------------------
# A. env answers on the 2-GPU machine

DRV=$(mkroot drv 2gpu.conf)
CONF=$TMP/hook.toml
hook_config "$CONF" "$DRV" "$TMP/slices"
DP=$TMP/dp-a
mkdir -p "$DP"
plugin_config "$TMP/a.toml" "$DP" 'slices = ["gpu-4g-25=4Gi,25", "gpu-lat=2Gi,25,high"]' 'allocate = "env"' 'label-interval = 0'
start_kubelet "$DP"
start_plugin "$TMP/a.toml" "$TMP/plugin-a.log"
SHARES=gpuslice.io/gpu-4g-25
GPU0=$GPU0_UUID GPU1=$GPU1_UUID
kube wait-registered 30 nvidia.com/gpu "$SHARES" >/dev/null
kexpect "allocate = env: both resources registered" '.ok'
! grep -q "CDI spec" "$TMP/plugin-a.log" && ok "... and no CDI spec written" ||
        not_ok "env mode wrote a CDI spec: $(grep CDI "$TMP/plugin-a.log")"

kube allocate "$SHARES" "$TMP/e-share.json" "$GPU0::0" >/dev/null
jq -e --arg g "$GPU0" --arg drv "$DRV" '.envs.NVIDIA_VISIBLE_DEVICES == $g and .envs.GPUSLICE_MEMORY_LIMIT == "4Gi"
        and .envs.GPUSLICE_COMPUTE_LIMIT == "25" and (.cdi_devices // []) == []
        and ([.devices[] | .container_path] == ["/dev/nvidiactl","/dev/nvidia-uvm","/dev/nvidia-uvm-tools","/dev/nvidia0"])
        and ([.devices[] | .host_path == ($drv + .container_path) and .permissions == "rw"] | all)' "$TMP/e-share.json" >/dev/null &&
        ok "one share, env answer: NVIDIA_VISIBLE_DEVICES=GPU 0, GPUSLICE_MEMORY_LIMIT=4Gi, COMPUTE=25, device specs under the root" ||
        not_ok "env answer: $(jq -c . "$TMP/e-share.json")"
answer_bundle e-share "$TMP/e-share.json" EXPECT_TOTAL_MIB=4096
expect_done e-share "runc + hook from the env answer (one share)"
expect_gpu0 e-share "env, one share"
expect_slice e-share "env, one share (4Gi)" 4Gi 4096
expect_fact e-share "SLICE GPUSLICE_COMPUTE_LIMIT=25" "env, one share: the 25 % compute share in slice.conf"
jq -e '.envs.GPUSLICE_PRIORITY == null' "$TMP/e-share.json" >/dev/null &&
        ok "... a slice resource without a priority sets none" || not_ok "priority in a plain share's answer: $(jq -c .envs "$TMP/e-share.json")"
grep -q "^SLICE GPUSLICE_COMPUTE_LIMIT=25" "$TMP/e-share.out" && ! grep -q "^SLICE GPUSLICE_PRIORITY=" "$TMP/e-share.out" &&
        ok "... and its slice.conf has none" || not_ok "a share without a priority: slice.conf: $(grep '^SLICE' "$TMP/e-share.out" | tr '\n' ' ')"
# A slice resource with a priority (gpu-lat=2Gi,25,high): the answer carries GPUSLICE_PRIORITY, the
# hook writes it into the slice file.
kube allocate gpuslice.io/gpu-lat "$TMP/e-lat.json" "$GPU1::0" >/dev/null
jq -e --arg g "$GPU1" '.envs.NVIDIA_VISIBLE_DEVICES == $g and .envs.GPUSLICE_MEMORY_LIMIT == "2Gi"
        and .envs.GPUSLICE_COMPUTE_LIMIT == "25" and .envs.GPUSLICE_PRIORITY == "high"' "$TMP/e-lat.json" >/dev/null &&
        ok "a share of gpu-lat (2Gi, 25 %, high), env answer: GPUSLICE_PRIORITY=high beside the limits" ||
        not_ok "gpu-lat answer: $(jq -c . "$TMP/e-lat.json")"
kube allocate gpuslice.io/gpu-lat "$TMP/e-lat2.json" "$GPU0::0,$GPU1::1,$GPU1::2" >/dev/null
jq -e '.envs.GPUSLICE_PRIORITY == "high" and .envs.GPUSLICE_COMPUTE_LIMIT_0 == "25" and .envs.GPUSLICE_COMPUTE_LIMIT_1 == "50"' \
        "$TMP/e-lat2.json" >/dev/null && ok "... shares on two GPUs (per-device limits): one GPUSLICE_PRIORITY=high" ||
        not_ok "gpu-lat on two GPUs: $(jq -c .envs "$TMP/e-lat2.json")"
# An env answer is no allocator's word (the pod can set the same variables): the hook takes the
# tightest env value, and priority high only where the node allows it (slice.env-may-raise).
answer_bundle e-lat0 "$TMP/e-lat.json" EXPECT_TOTAL_MIB=2048
expect_done e-lat0 "runc + hook from the gpu-lat answer, the node's default config"
expect_no_fact e-lat0 "SLICE GPUSLICE_PRIORITY=high" "env, gpu-lat, env-may-raise unset: priority high is not taken from the env"
answer_bundle e-widen "$TMP/e-lat.json" EXPECT_TOTAL_MIB=2048 GPUSLICE_MEMORY_LIMIT_0=40Gi CUDA_DEVICE_MEMORY_LIMIT_0=40Gi
expect_done e-widen "runc + hook from the gpu-lat answer, the pod's env asking 40Gi for device 0"
expect_fact e-widen "PROBE_M ok total is the quota (2048 MiB)" "env, gpu-lat: a per-device 40Gi beside the answer's 2Gi does not widen it"
printf 'env-may-raise = true\n' >>"$CONF"
answer_bundle e-lat "$TMP/e-lat.json" EXPECT_TOTAL_MIB=2048
expect_done e-lat "runc + hook from the gpu-lat answer"
expect_fact e-lat "SLICE GPUSLICE_PRIORITY=high" "env, gpu-lat, slice.env-may-raise = true: slice.conf holds GPUSLICE_PRIORITY=high"
expect_fact e-lat "SLICE GPUSLICE_COMPUTE_LIMIT=25" "env, gpu-lat: ... and the 25 % compute share"

kube allocate "$SHARES" "$TMP/e-two.json" "$GPU0::1,$GPU0::2" >/dev/null
jq -e --arg g "$GPU0" '.envs.NVIDIA_VISIBLE_DEVICES == $g and .envs.GPUSLICE_MEMORY_LIMIT == "8Gi" and .envs.GPUSLICE_COMPUTE_LIMIT == "50"
        and ([.devices[].container_path] | index("/dev/nvidia0") != null)' "$TMP/e-two.json" >/dev/null &&
        ok "two shares of GPU 0: 8Gi, 50 %, /dev/nvidia0" || not_ok "two shares: $(jq -c . "$TMP/e-two.json")"
answer_bundle e-two "$TMP/e-two.json" EXPECT_TOTAL_MIB=8192
expect_done e-two "runc + hook from the env answer (two shares of GPU 0)"
expect_gpu0 e-two "env, two shares"
expect_slice e-two "env, two shares (8Gi)" 8Gi 8192
kube allocate "$SHARES" "$TMP/e-gpu1.json" "$GPU1::3" >/dev/null
answer_bundle e-gpu1 "$TMP/e-gpu1.json" EXPECT_TOTAL_MIB=4096
expect_done e-gpu1 "runc + hook from the env answer (one share of GPU 1)"
expect_fact e-gpu1 "HAS /dev/nvidia2" "env, a share of GPU 1: its node /dev/nvidia2"
expect_fact e-gpu1 "NO /dev/nvidia0" "env, a share of GPU 1: not GPU 0's"
expect_fact e-gpu1 "SLICE GPUSLICE_DEVICES=$GPU1" "env, a share of GPU 1: slice.conf names GPU 1"
expect_fact e-gpu1 "PROBE_M ok total is the quota (4096 MiB)" "env, a share of GPU 1: cuMemGetInfo total = 4096 MiB"
expect_fact e-gpu1 "PROBE_Q ok the allocation past the quota fails with CUDA_ERROR_OUT_OF_MEMORY (2)" \
        "env, a share of GPU 1: an allocation past 4 GiB fails"

kube allocate nvidia.com/gpu "$TMP/e-gpu.json" "$GPU0" >/dev/null
jq -e --arg g "$GPU0" '.envs.NVIDIA_VISIBLE_DEVICES == $g and .envs.GPUSLICE_MEMORY_LIMIT == null' "$TMP/e-gpu.json" >/dev/null &&
        ok "whole GPU 0, env answer: no slice variables" || not_ok "whole GPU: $(jq -c . "$TMP/e-gpu.json")"
answer_bundle e-gpu "$TMP/e-gpu.json"
expect_done e-gpu "runc + hook from the env answer (whole GPU 0)"
expect_gpu0 e-gpu "env, whole GPU"
expect_no_slice e-gpu "env, whole GPU"
stop_kubelet
stop_plugin
[ "$PLUGIN_RC" = 0 ] && ok "plugin A stopped cleanly" || not_ok "plugin A: exit $PLUGIN_RC: $(tail -3 "$TMP/plugin-a.log")"

# ---------------------------------------------------------------------------------------------
# A2. volume-mounts answers on the 2-GPU machine, the hook on a Kubernetes node's config

KCONF=$TMP/hook-k8s.toml
cp "$CONF" "$KCONF"
printf '\n[hook]\naccept-nvidia-visible-devices-envvar-when-unprivileged = false\naccept-nvidia-visible-devices-as-volume-mounts = true\n' >>"$KCONF"
DP=$TMP/dp-a2
mkdir -p "$DP"
plugin_config "$TMP/a2.toml" "$DP" 'slices = ["gpu-4g-25=4Gi,25"]' 'allocate = "volume-mounts"' 'label-interval = 0'
start_kubelet "$DP"
start_plugin "$TMP/a2.toml" "$TMP/plugin-a2.log"
kube wait-registered 30 nvidia.com/gpu "$SHARES" >/dev/null
kexpect "allocate = volume-mounts: both resources registered" '.ok'
! grep -q "CDI spec" "$TMP/plugin-a2.log" && ok "... and no CDI spec written" ||
        not_ok "volume-mounts mode wrote a CDI spec: $(grep CDI "$TMP/plugin-a2.log")"
kube allocate "$SHARES" "$TMP/v-share.json" "$GPU0::0" >/dev/null
jq -e --arg g "$GPU0" --arg drv "$DRV" '.envs.NVIDIA_VISIBLE_DEVICES == "/var/run/nvidia-container-devices"
        and .mounts == [{"container_path": ("/var/run/nvidia-container-devices/" + $g), "host_path": "/dev/null", "read_only": true},
                        {"container_path": "/var/run/nvidia-container-devices/slice/memory=4Gi", "host_path": "/dev/null", "read_only": true},
                        {"container_path": "/var/run/nvidia-container-devices/slice/compute-share=25", "host_path": "/dev/null", "read_only": true}]
        and .envs.GPUSLICE_MEMORY_LIMIT == null and .envs.GPUSLICE_COMPUTE_LIMIT == null and (.cdi_devices // []) == []
        and ([.devices[] | .container_path] == ["/dev/nvidiactl","/dev/nvidia-uvm","/dev/nvidia-uvm-tools","/dev/nvidia0"])' \
        "$TMP/v-share.json" >/dev/null &&
        ok "one share, volume-mounts answer: /dev/null onto /var/run/nvidia-container-devices/<GPU 0> and the slice as mounts (slice/memory=4Gi, slice/compute-share=25: the allocator's word), no limit env, device specs" ||
        not_ok "volume-mounts answer: $(jq -c . "$TMP/v-share.json")"
CONF=$KCONF answer_bundle v-share "$TMP/v-share.json" EXPECT_TOTAL_MIB=4096
expect_done v-share "runc + hook (k8s node) from the volume-mounts answer (one share)"
expect_gpu0 v-share "volume-mounts, one share"
expect_slice v-share "volume-mounts, one share (4Gi)" 4Gi 4096
# the pod's env (its image's too) asking for more through every name: the mounts hold
CONF=$KCONF answer_bundle v-wide "$TMP/v-share.json" EXPECT_TOTAL_MIB=4096 GPUSLICE_MEMORY_LIMIT=40Gi \
        GPUSLICE_MEMORY_LIMIT_0=40Gi CUDA_DEVICE_MEMORY_LIMIT=40Gi GPUSLICE_COMPUTE_LIMIT=100 GPUSLICE_COMPUTE_MODE=off \
        GPUSLICE_PRIORITY=high
expect_done v-wide "runc + hook (k8s node) from the volume-mounts answer, the pod's env asking 40Gi, 100 %, off, high"
expect_fact v-wide "PROBE_M ok total is the quota (4096 MiB)" "volume-mounts, hostile env: cuMemGetInfo total is still 4096 MiB"
expect_fact v-wide "SLICE GPUSLICE_COMPUTE_LIMIT=25" "volume-mounts, hostile env: slice.conf holds 25 %"
expect_no_fact v-wide "SLICE GPUSLICE_COMPUTE_MODE=off" "volume-mounts, hostile env: mode off is not taken"
expect_no_fact v-wide "SLICE GPUSLICE_PRIORITY=high" "volume-mounts, hostile env: priority high is not taken"
kube allocate nvidia.com/gpu "$TMP/v-gpu1.json" "$GPU1" >/dev/null
jq -e --arg g "$GPU1" '.mounts == [{"container_path": ("/var/run/nvidia-container-devices/" + $g), "host_path": "/dev/null", "read_only": true}]
        and .envs.GPUSLICE_MEMORY_LIMIT == null' "$TMP/v-gpu1.json" >/dev/null &&
        ok "whole GPU 1, volume-mounts answer: its mount, no slice" || not_ok "whole GPU 1: $(jq -c . "$TMP/v-gpu1.json")"
CONF=$KCONF answer_bundle v-gpu1 "$TMP/v-gpu1.json"
expect_done v-gpu1 "runc + hook (k8s node) from the volume-mounts answer (whole GPU 1)"
expect_fact v-gpu1 "HAS /dev/nvidia2" "volume-mounts, whole GPU 1: its node /dev/nvidia2"
expect_fact v-gpu1 "NO /dev/nvidia0" "volume-mounts, whole GPU 1: not GPU 0's"
expect_fact v-gpu1 "GPUS 0000:86:00.0 " "volume-mounts, whole GPU 1: /proc/driver/nvidia/gpus has GPU 1 only"
expect_no_slice v-gpu1 "volume-mounts, whole GPU 1"
# the env answer on the same node: its NVIDIA_VISIBLE_DEVICES is an unprivileged container's env,
# which this node refuses (the reason for volume-mounts)
CONF=$KCONF answer_bundle v-env "$TMP/e-gpu.json"
expect_done v-env "runc + hook (k8s node) from an env answer"
expect_fact v-env "NO /usr/bin/nvidia-smi" "an env answer on a node that refuses the env: no driver files"
expect_fact v-env "GPUS " "... and no GPU in /proc/driver/nvidia/gpus"
stop_kubelet
stop_plugin
[ "$PLUGIN_RC" = 0 ] && ok "plugin A2 stopped cleanly" || not_ok "plugin A2: exit $PLUGIN_RC: $(tail -3 "$TMP/plugin-a2.log")"

# ---------------------------------------------------------------------------------------------
# B. MIG and topology on the 8-GPU machine

DRV=$(mkroot drv8 8gpu-mig.conf)
hook_config "$CONF" "$DRV" "$TMP/slices"
SYS=$TMP/sys
# Two NUMA nodes, each with two PCIe switches holding two GPUs.
mkdir -p "$SYS/bus/pci/devices"
place() { # BDF NUMA PATH
        mkdir -p "$SYS/devices/$3/$1"
        echo "$2" >"$SYS/devices/$3/$1/numa_node"
        ln -s "../../../devices/$3/$1" "$SYS/bus/pci/devices/$1"
}
place 0000:07:00.0 0 pci0000:00/0000:00:01.0/0000:01:00.0
place 0000:0f:00.0 0 pci0000:00/0000:00:01.0/0000:01:00.0
place 0000:47:00.0 0 pci0000:00/0000:00:02.0/0000:02:00.0
place 0000:4e:00.0 0 pci0000:00/0000:00:02.0/0000:02:00.0
place 0000:87:00.0 1 pci0000:80/0000:80:01.0/0000:81:00.0
place 0000:90:00.0 1 pci0000:80/0000:80:01.0/0000:81:00.0
place 0000:b7:00.0 1 pci0000:80/0000:80:02.0/0000:82:00.0
place 0000:bd:00.0 1 pci0000:80/0000:80:02.0/0000:82:00.0
mapfile -t U < <("$GS" --root "$DRV" info --json | jq -r '.gpus[].uuid')
mapfile -t MIG < <("$GS" --root "$DRV" info --json | jq -r '.gpus[2].mig_devices[].uuid')
[ "${#U[@]}" = 8 ] && [ "${#MIG[@]}" = 3 ] || not_ok "info --json: ${#U[@]} GPUs, ${#MIG[@]} MIG devices"
DP=$TMP/dp-b
mkdir -p "$DP"
plugin_config "$TMP/b.toml" "$DP" 'slices = ["gpu-40g=40Gi"]' 'allocate = "env"' "sysfs = \"$SYS\"" 'label-interval = 0'
start_kubelet "$DP"
start_plugin "$TMP/b.toml" "$TMP/plugin-b.log"
kube wait-registered 30 nvidia.com/gpu gpuslice.io/gpu-40g >/dev/null
kexpect "8 GPUs with MIG: registered" '.ok'
kube watch nvidia.com/gpu >/dev/null
kexpect "nvidia.com/gpu: the 7 GPUs not in MIG mode and GPU 2's 3 MIG devices, in NVML order" \
        "[.devices[].ID] == [\"${U[0]}\",\"${U[1]}\",\"${MIG[0]}\",\"${MIG[1]}\",\"${MIG[2]}\",\"${U[3]}\",\"${U[4]}\",\"${U[5]}\",\"${U[6]}\",\"${U[7]}\"]"
kexpect "... each with its NUMA node from sysfs (GPUs 0-3: node 0, 4-7: node 1)" \
        '[.devices[].topology.nodes[0].ID | tonumber] == [0,0,0,0,0,0,1,1,1,1]'
kube watch gpuslice.io/gpu-40g >/dev/null
kexpect "gpuslice.io/gpu-40g: 2 shares of each 80 GiB GPU not in MIG mode (14)" '(.devices | length) == 14'

whole="${U[0]},${U[1]},${U[3]},${U[4]},${U[5]},${U[6]},${U[7]}"
kube prefer nvidia.com/gpu 2 "$whole" "${U[4]}" >/dev/null
kexpect "GetPreferredAllocation 2 GPUs with GPU 4: GPU 5, behind the same switch" \
        "(.ids | sort) == ([\"${U[4]}\",\"${U[5]}\"] | sort)"
kube prefer nvidia.com/gpu 2 "${U[0]},${U[4]},${U[6]},${U[5]}" - >/dev/null
kexpect "... 2 of GPUs 0, 4, 5, 6: GPUs 4 and 5 (one switch) over 4 and 6 (one NUMA node) and 0 (another)" \
        "(.ids | sort) == ([\"${U[4]}\",\"${U[5]}\"] | sort)"
kube prefer nvidia.com/gpu 4 "$whole" - >/dev/null
kexpect "... 4 GPUs: the four of NUMA node 1 (two full switches)" \
        "(.ids | sort) == ([\"${U[4]}\",\"${U[5]}\",\"${U[6]}\",\"${U[7]}\"] | sort)"
kube prefer gpuslice.io/gpu-40g 3 all - >/dev/null
kexpect "3 shares of 2-share GPUs: both of GPU 0, then one of GPU 1 (same switch)" \
        ".ids == [\"${U[0]}::0\",\"${U[0]}::1\",\"${U[1]}::0\"]"

kube allocate nvidia.com/gpu "$TMP/e-mig.json" "${MIG[1]}" >/dev/null
jq -e --arg m "${MIG[1]}" '.envs.NVIDIA_VISIBLE_DEVICES == $m and ([.devices[].container_path] | index("/dev/nvidia2") != null)' \
        "$TMP/e-mig.json" >/dev/null && ok "a MIG device, env answer: NVIDIA_VISIBLE_DEVICES=its MIG UUID, its GPU's node" ||
        not_ok "MIG answer: $(jq -c . "$TMP/e-mig.json")"
answer_bundle e-mig "$TMP/e-mig.json"
expect_done e-mig "runc + hook from the MIG device's answer"
expect_fact e-mig "HAS /dev/nvidia2" "MIG: the parent GPU's node"
expect_fact e-mig "NO /dev/nvidia0" "MIG: no other GPU"
expect_fact_re e-mig "^SMI .*MIG.*${MIG[1]}" "MIG: nvidia-smi -L in the container lists the MIG device"
stop_kubelet
stop_plugin
[ "$PLUGIN_RC" = 0 ] && ok "plugin B stopped cleanly" || not_ok "plugin B: exit $PLUGIN_RC"

# ---------------------------------------------------------------------------------------------
# C. cdi-annotations, replicas with a quota; and health without NVML events (the simulated NVML
#    refuses nvmlEventSetCreate, as a driver without event support would): a lost GPU is found
#    by asking every --health-period, an XID goes unseen.

DP=$TMP/dp-c
mkdir -p "$DP"
KIND=test-$$.gpuslice.io/gpu
plugin_config "$TMP/c.toml" "$DP" 'replicas = 2' 'replica-memory = "20Gi"' 'replica-compute = 50' 'replica-priority = "low"' \
        'allocate = "cdi-annotations"' "cdi-kind = \"$KIND\"" "cdi-spec = \"$TMP/cdi/spec.yaml\"" 'label-interval = 0'
mkdir -p "$TMP/cdi"
echo "fault nvmlEventSetCreate error not_supported" >>"$DRV/etc/fakegpu/gpus.conf"
start_kubelet "$DP"
start_plugin "$TMP/c.toml" "$TMP/plugin-c.log" --health-period 0.2
kube wait-registered 30 nvidia.com/gpu >/dev/null
kexpect "replicas = 2: nvidia.com/gpu registered" '.ok'
kube watch nvidia.com/gpu >/dev/null
kexpect "... 7 GPUs as 2 replicas each (<UUID>::0, ::1), and the 3 MIG devices once" \
        "(.devices | length) == 17 and .devices[0].ID == \"${U[0]}::0\" and .devices[1].ID == \"${U[0]}::1\"
         and ([.devices[].ID | select(startswith(\"MIG-\"))] | length) == 3"
kube allocate nvidia.com/gpu "$TMP/c-rep.json" "${U[3]}::1" >/dev/null
jq -e --arg k "$KIND" '(.cdi_devices // []) == [] and .annotations == {"cdi.k8s.io/gpuslice_nvidia.com_gpu": ($k + "=3-k8s-replica")}' \
        "$TMP/c-rep.json" >/dev/null && ok "a replica, cdi-annotations: cdi.k8s.io/gpuslice_nvidia.com_gpu = $KIND=3-k8s-replica" ||
        not_ok "replica answer: $(jq -c . "$TMP/c-rep.json")"
kube allocate nvidia.com/gpu "$TMP/c-mig.json" "${MIG[2]}" >/dev/null
jq -e --arg k "$KIND" '.annotations == {"cdi.k8s.io/gpuslice_nvidia.com_gpu": ($k + "=2:2")}' "$TMP/c-mig.json" >/dev/null &&
        ok "a MIG device, cdi-annotations: $KIND=2:2" || not_ok "MIG annotation: $(jq -c . "$TMP/c-mig.json")"
EV=$DRV/etc/fakegpu/events
n0=$(kube devices nvidia.com/gpu | jq .lists)
echo "xid ${U[6]} 79" >>"$EV"
echo "lost ${U[7]}" >>"$EV"
kube wait-health nvidia.com/gpu "${U[7]}::1" Unhealthy 20 >/dev/null
kexpect "no NVML events: GPU 7, lost, found by the periodic check; its replicas Unhealthy" \
        "[.devices[] | select(.health == \"Unhealthy\") | .ID] == [\"${U[7]}::0\", \"${U[7]}::1\"]"
[ "$(kq .lists)" = $((n0 + 1)) ] && ok "... in one new list; the XID on GPU 6 went unseen (no event set)" ||
        not_ok "... lists before $n0, after $(kq .lists)"
grep -q "no XID events on GPU 0,1,2,3,4,5,6,7" "$TMP/plugin-c.log" && ok "... and the plugin said the GPUs have no XID events" ||
        not_ok "plugin C log: $(grep health "$TMP/plugin-c.log")"
"$GS" cdi list --spec "$TMP/cdi/spec.yaml" >"$TMP/names" 2>&1
grep -qx "$KIND=3-k8s-replica" "$TMP/names" && grep -qx "$KIND=2:2" "$TMP/names" &&
        ok "the plugin's CDI spec offers both names" || not_ok "spec names: $(tr '\n' ' ' <"$TMP/names" | head -c 300)"
"$PY" -c 'import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
dev = [x for x in d["devices"] if x["name"] == "3-k8s-replica"][0]
env = dev["containerEdits"]["env"]
hooks = [h["args"] for h in dev["containerEdits"]["hooks"]]
sys.exit(0 if env == ["GPUSLICE_MEMORY_LIMIT=20Gi", "GPUSLICE_COMPUTE_LIMIT=50", "GPUSLICE_PRIORITY=low"]
         and ["gpuslice-hook", "--memory=20Gi", "--compute-share=50", "--priority=low", "createRuntime"] in hooks else 1)' \
        "$TMP/cdi/spec.yaml" && ok "... the replica's slice device: 20Gi, 50 %, priority low (replica-priority) as its createRuntime hook's options (gpuslice-hook)" ||
        not_ok "replica slice device in the spec"
stop_kubelet
stop_plugin
[ "$PLUGIN_RC" = 0 ] && ok "plugin C stopped cleanly" || not_ok "plugin C: exit $PLUGIN_RC"
rm -f "$EV" # the machine is whole again for what follows
sed -i '/^fault nvmlEventSetCreate/d' "$DRV/etc/fakegpu/gpus.conf"

# D. kubelet-probe, the C stand-in for the kubelet that tests/gpu/run.sh uses on the GPU host
#    (no grpcio there): it registers the plugin and allocates one share, through src/kubelet/h2c.c.
DP=$TMP/dp-d
mkdir -p "$DP"
plugin_config "$TMP/d.toml" "$DP" 'slices = ["4g=4Gi"]' "cdi-kind = \"$KIND\"" "cdi-spec = \"$TMP/cdi/d.json\"" \
        'label-interval = 0'
start_plugin "$TMP/d.toml" "$TMP/plugin-d.log"
run probe -- timeout 60 "$BUILD/tests/kubelet-probe" "$DP" gpuslice.io/4g "${U[0]}::1" 30
expect_rc probe 0 "kubelet-probe: Register, GetDevicePluginOptions, Allocate"
jq -e --arg k "$KIND" --arg id "${U[0]}::1" '.endpoint == "gpuslice-gpuslice.io_4g.sock" and .cdi_devices == [$k + "=0-4g"]
        and .envs == {"GPUSLICE_K8S_DEVICES_GPUSLICE_IO_4G": $id}' "$TMP/probe.out" >/dev/null &&
        ok "... prints the answer: $KIND=0-4g" || not_ok "kubelet-probe printed: $(cat "$TMP/probe.out")"
# A second probe replaces kubelet.sock: the plugin takes it for a kubelet restart and registers
# again with it. (The probe waits for the answers of both its calls before it closes the
# connection: gRPC does not order them, and one that stopped at Allocate's answer saw
# GetDevicePluginOptions end as "the connection closed" now and then.)
run probe2 -- timeout 60 "$BUILD/tests/kubelet-probe" "$DP" gpuslice.io/4g "GPU-nonexistent::0" 10
expect_rc probe2 1 "kubelet-probe: an unknown device ID fails"
expect_err probe2 "unknown device ID" "... with the plugin's message"
if grep -q "unknown device ID" "$TMP/probe2.err" && ! grep -q "GetDevicePluginOptions\|timed out" "$TMP/probe2.err"; then
        ok "... and only Allocate failed (GetDevicePluginOptions answered)"
else not_ok "... only Allocate should fail: $(head -3 "$TMP/probe2.err")"; fi
stop_plugin

# The DaemonSet manifest (deploy/k8s): its config parses as gpuslice reads it, and every host path
# that config names is a hostPath volume mounted at the same place.
if "$PY" - "$SRC/deploy/k8s/gpuslice-device-plugin.yaml" "$TMP/deploy.toml" >"$TMP/deploy.check" 2>&1 <<'EOF'
import sys, yaml
docs = list(yaml.safe_load_all(open(sys.argv[1])))
kinds = [d["kind"] for d in docs]
assert kinds == ["ConfigMap", "ServiceAccount", "DaemonSet"], kinds
cm = docs[0]["data"]["config.toml"]
open(sys.argv[2], "w").write(cm)
ds = docs[2]["spec"]["template"]["spec"]
assert ds["hostPID"] is True and ds["automountServiceAccountToken"] is False
c = ds["containers"][0]
vols = {v["name"]: v for v in ds["volumes"]}
mounts = {m["mountPath"]: vols[m["name"]] for m in c["volumeMounts"]}
for path in ["/var/lib/kubelet/device-plugins", "/var/run/cdi", "/run/gpuslice", "/host"]:
    v = mounts[path]
    want = "/" if path == "/host" else path
    assert v["hostPath"]["path"] == want, (path, v)
assert mounts["/etc/gpuslice"]["configMap"]["name"] == docs[0]["metadata"]["name"]
assert c["args"] == ["device-plugin", "--config", "/etc/gpuslice/config.toml"]
for line in ('root = "/host"', 'cdi-spec = "/var/run/cdi/', 'regions-dir = "/run/gpuslice/slices"', 'host-root = "/"'):
    assert line in cm, line
# issue 31: no pod-resources labeller (it took the container's env for its devices): nothing of it
assert "pod-resources" not in cm and "/var/lib/kubelet/pod-resources" not in mounts, (cm, list(mounts))
print("ok")
EOF
then ok "deploy/k8s: ConfigMap, ServiceAccount (no token), DaemonSet (hostPID); every path the config names is mounted"
else not_ok "deploy/k8s manifest: $(tail -3 "$TMP/deploy.check")"; fi
run deploycfg -- timeout 20 "$GS" device-plugin --config "$TMP/deploy.toml"
if [ "$(rc_of deploycfg)" = 1 ] && ! grep -q "config error" "$TMP/deploycfg.err" && grep -q "/host" "$TMP/deploycfg.err"; then
        ok "deploy/k8s: its config.toml parses (here the plugin stops at the missing /host root)"
else not_ok "deploy/k8s config: exit $(rc_of deploycfg): $(head -3 "$TMP/deploycfg.err")"; fi

# Configuration errors: named, the plugin does not start.
bad() { # DESC TEXT LINES...
        local d=$1 t=$2; shift 2
        plugin_config "$TMP/bad.toml" "${BAD_DP:-$DP}" "$@"
        run bad -- timeout 20 "$GS" device-plugin --config "$TMP/bad.toml"
        [ "$(rc_of bad)" = 1 ] && grep -qF -- "$t" "$TMP/bad.err" && ok "$d: exit 1, '$t'" ||
                not_ok "$d: exit $(rc_of bad): $(head -3 "$TMP/bad.err")"
}
bad "an invalid slice" "device-plugin.slices" 'slices = ["x=4Q"]'
bad "an invalid allocate mode" "device-plugin.allocate: 'volume' is not" 'allocate = "volume"'
bad "replica-memory without replicas" "need replicas > 1" 'replica-memory = "1Gi"'
bad "an invalid resource name" "device-plugin.resource" 'resource = "gpu"'
BAD_DP=/nonexistent/dir bad "a missing kubelet directory" "/nonexistent/dir is not there"
bad "an unknown key" "unknown key 'device-plugin.frobnicate'" 'frobnicate = 1'
finish
