#!/usr/bin/env bash
# gpuslice device-plugin against a fake kubelet (fake_kubelet.py: Debian's python3-grpcio, stubs
# generated from the same api.proto), on the simulated 2-GPU machine, answering with CDI names:
#   1. Register (both resources), GetDevicePluginOptions, ListAndWatch (GPUs and 4 GiB / 25 %
#      shares), GetPreferredAllocation (shares packed on one GPU);
#   2. Allocate answers turned into real containers: podman (Debian's 4.3, runc) with the answer's
#      CDI names and env, from the plugin's own CDI spec: the GPU is there and the interposer's
#      quota is the share's (4096 MiB; two shares 8192 MiB), an allocation past it fails;
#   3. labels only from the host: a container whose env names another pod's devices is not labelled;
#   4. health from the simulated NVML's events: an application XID changes nothing, XID 79 and a
#      lost GPU make their devices Unhealthy on the ListAndWatch stream, Allocate refuses them;
#   5. a kubelet restart (its sockets removed, kubelet.sock new): the plugin serves and registers
#      again; malformed and oversized calls, garbage on the socket;
#   6. recovery (--health-recover 1): a lost GPU reset is Healthy again without a restart; SIGTERM.
. "$(dirname "$0")/../integration/lib.sh"
. "$SRC/tests/integration/bundle.sh"
. "$SRC/tests/k8s/lib.sh"

need jq
[ -x "$GS" ] || { echo "not ok - $GS is not built"; exit 1; }
if ! have_grpc; then
        not_ok "$PY cannot import grpc and grpc_tools (make test-deps: python3-grpcio python3-grpc-tools)"
        finish
fi

DRV=$(mkroot drv 2gpu.conf)
DP=$TMP/device-plugins
mkdir -p "$DP"
GPU0=$GPU0_UUID GPU1=$GPU1_UUID
VENDOR=test-$$.gpuslice.io
CDI_SPEC=/var/run/cdi/gpuslice-k8s-test-$$.json
CDI_DIR_MADE=
cleanup() {
        stop_plugin
        stop_kubelet
        if [ -d "$TMP/podman-root" ]; then
                pod rm -af -t 0 >/dev/null 2>&1
        fi
        rm -f "$CDI_SPEC"
        [ -n "$CDI_DIR_MADE" ] && rmdir "$CDI_DIR_MADE" 2>/dev/null
        awk -v t="$TMP/" 'index($5, t) == 1 { print $5 }' /proc/self/mountinfo | sort -r |
                while read -r m; do umount -l "$m"; done
        rm -rf "$TMP"
}
trap cleanup EXIT
[ -d /var/run/cdi ] || { mkdir -p /var/run/cdi && CDI_DIR_MADE=/var/run/cdi; }

CONF=$TMP/dp.toml
plugin_config "$CONF" "$DP" 'slices = ["gpu-4g-25=4Gi,25"]' "cdi-kind = \"$VENDOR/gpu\"" "cdi-spec = \"$CDI_SPEC\"" \
        'label-interval = 1' "pod-resources-socket = \"$TMP/pod-resources.sock\""
start_kubelet "$DP" "$TMP/pod-resources.sock"
start_plugin "$CONF" "$TMP/plugin.log"
SHARES=gpuslice.io/gpu-4g-25

# ---------------------------------------------------------------------------------------------
# 1. Registration and the DevicePlugin service

kube wait-registered 30 nvidia.com/gpu "$SHARES" >/dev/null
kexpect "the plugin registered nvidia.com/gpu and $SHARES with the kubelet" '.ok'
kexpect "Register: version v1beta1, GetPreferredAllocation available, endpoints named per resource" \
        '[.registrations[] | .version == "v1beta1" and .options.get_preferred_allocation_available == true
          and (.endpoint | test("^gpuslice-[a-z.]+_[a-z0-9.-]+\\.sock$"))] | (length == 2 and all)'
for e in $(kq '.registrations[].endpoint'); do
        [ -S "$DP/$e" ] && ok "endpoint $e is a socket in the kubelet's directory" || not_ok "no socket $DP/$e"
done
jq -e '[.devices[] | select(.name == "0-gpu-4g-25-x2") | .containerEdits.hooks[] | select(.hookName == "createRuntime")
        | .args] == [["gpuslice-hook", "--memory=8Gi", "--compute-share=50", "createRuntime"]]' "$CDI_SPEC" >/dev/null &&
        ok "... the slice device of two shares: 8Gi / 50 % as its hook's options (the allocator's word)" ||
        not_ok "... two shares' hook: $(jq -c '[.devices[] | select(.name == "0-gpu-4g-25-x2") | .containerEdits.hooks]' "$CDI_SPEC")"
[ -f "$CDI_SPEC" ] && "$GS" cdi list --spec "$CDI_SPEC" >"$TMP/cdinames" 2>&1 &&
        grep -qx "$VENDOR/gpu=0-gpu-4g-25" "$TMP/cdinames" && grep -qx "$VENDOR/gpu=1" "$TMP/cdinames" &&
        grep -qx "$VENDOR/gpu=1-gpu-4g-25-x4" "$TMP/cdinames" && ! grep -q "x5$" "$TMP/cdinames" &&
        ok "the plugin wrote its CDI spec: GPU devices and the share's slice devices, one per share count up to 4 (cdi list reads it)" ||
        not_ok "CDI spec $CDI_SPEC: $(head -5 "$TMP/cdinames" 2>&1 | tr '\n' ' ')"

kube options nvidia.com/gpu >/dev/null
kexpect "GetDevicePluginOptions: GetPreferredAllocation available, no PreStartContainer" \
        '.ok and .options.get_preferred_allocation_available == true and (.options.pre_start_required // false) == false'
kube options nvidia.com/gpu "$DP/gpuslice-nvidia.com_gpu.sock" >/dev/null
kexpect "... also for a client whose :authority is the socket's path (grpc-go without WithAuthority)" '.ok'

kube watch nvidia.com/gpu >/dev/null
kexpect "ListAndWatch nvidia.com/gpu: the two GPUs by UUID, healthy" \
        "[.devices[] | {ID, health}] == [{\"ID\":\"$GPU0\",\"health\":\"Healthy\"},{\"ID\":\"$GPU1\",\"health\":\"Healthy\"}]"
kube watch "$SHARES" >/dev/null
kexpect "ListAndWatch $SHARES: each 40 GiB GPU as 4 shares of 4 GiB and 25 % (<UUID>::<n>)" \
        "[.devices[].ID] == [\"$GPU0::0\",\"$GPU0::1\",\"$GPU0::2\",\"$GPU0::3\",\"$GPU1::0\",\"$GPU1::1\",\"$GPU1::2\",\"$GPU1::3\"]
         and ([.devices[].health] | unique) == [\"Healthy\"]"

kube prefer "$SHARES" 2 all - >/dev/null
kexpect "GetPreferredAllocation of 2 shares: both on one GPU" "[.ids[] | split(\"::\")[0]] | unique | length == 1"
kube prefer "$SHARES" 2 "$GPU0::0,$GPU1::1,$GPU1::2" "$GPU0::0" >/dev/null
kexpect "... with a must-include share on GPU 0 and GPU 1 fuller: the share first, then one beside it" \
        ".ok and .ids[0] == \"$GPU0::0\" and (.ids | length) == 2"
kube prefer "$SHARES" 3 "$GPU0::1,$GPU0::2,$GPU1::0,$GPU1::1,$GPU1::2" - >/dev/null
kexpect "... 3 shares where GPU 0 has 2 free and GPU 1 has 3: all on GPU 1 (fits, fewest GPUs)" \
        "[.ids[] | split(\"::\")[0]] | unique == [\"$GPU1\"]"
kube prefer "$SHARES" 6 all - >/dev/null
kexpect "... 6 shares: a full GPU and 2 of the other" \
        "[.ids[] | split(\"::\")[0]] | group_by(.) | map(length) | sort == [2,4]"
kube prefer nvidia.com/gpu 3 all - >/dev/null
kexpect "... more devices than available: an error" '.ok == false and .code == "INVALID_ARGUMENT"'

# ---------------------------------------------------------------------------------------------
# 2. Allocate answers as containers (podman with the CDI names)

kube allocate "$SHARES" "$TMP/a-share.json" "$GPU0::1" >/dev/null
kexpect "Allocate one share of GPU 0" '.ok'
A=$TMP/a-share.json
jq -e --arg k "$VENDOR/gpu" '.cdi_devices == [{"name": ($k + "=0-gpu-4g-25")}]' "$A" >/dev/null &&
        ok "... answered with the CDI slice device $VENDOR/gpu=0-gpu-4g-25" || not_ok "... cdi_devices: $(jq -c . "$A")"
jq -e --arg id "$GPU0::1" '.envs == {"GPUSLICE_K8S_DEVICES_GPUSLICE_IO_GPU_4G_25": $id}' "$A" >/dev/null &&
        ok "... and only the device IDs in the env (the slice's limits come with the CDI device)" || not_ok "... envs: $(jq -c .envs "$A")"
kube allocate "$SHARES" "$TMP/a-two.json" "$GPU0::2,$GPU0::3" >/dev/null
jq -e --arg k "$VENDOR/gpu" '.cdi_devices == [{"name": ($k + "=0-gpu-4g-25-x2")}]
        and ([.envs | keys[] | select(startswith("GPUSLICE_") and (startswith("GPUSLICE_K8S_") | not))] == [])' \
        "$TMP/a-two.json" >/dev/null &&
        ok "Allocate two shares of GPU 0: the slice device of two shares, no limit in the env (the container's to change)" ||
        not_ok "two shares: $(jq -c . "$TMP/a-two.json")"
kube allocate nvidia.com/gpu "$TMP/a-gpu1.json" "$GPU1" >/dev/null
jq -e --arg k "$VENDOR/gpu" '.cdi_devices == [{"name": ($k + "=1")}] and (.envs | keys) == ["GPUSLICE_K8S_DEVICES_NVIDIA_COM_GPU"]' \
        "$TMP/a-gpu1.json" >/dev/null && ok "Allocate GPU 1 (whole): $VENDOR/gpu=1, no slice" ||
        not_ok "whole GPU: $(jq -c . "$TMP/a-gpu1.json")"
kube allocate-many "$SHARES" "$GPU1::0;$GPU1::1,$GPU1::2,$GPU0::0" >/dev/null
kexpect "Allocate for two containers at once: two answers; 1 share of GPU 0 and 2 of GPU 1: one share's slice device on each (never more than a GPU was given), no limit env" \
        '.ok and (.answers | length) == 2 and .answers[0].envs.GPUSLICE_MEMORY_LIMIT_0 == null
         and .answers[1].envs.GPUSLICE_MEMORY_LIMIT_0 == null and .answers[1].envs.GPUSLICE_MEMORY_LIMIT_1 == null
         and ([.answers[1].cdi_devices[].name | sub(".*=";"")] == ["0-gpu-4g-25", "1-gpu-4g-25"])'
kube allocate "$SHARES" "$TMP/x.json" "$GPU0::0,$GPU0::0" >/dev/null
kexpect "Allocate with a device twice: INVALID_ARGUMENT" '.code == "INVALID_ARGUMENT"'
kube allocate "$SHARES" "$TMP/x.json" "GPU-nonexistent::0" >/dev/null
kexpect "Allocate of an unknown device: NOT_FOUND" '.code == "NOT_FOUND"'

PODMAN=$(command -v podman || true)
if [ -z "$PODMAN" ] || ! [ -x "$RUNC" ]; then
        not_ok "podman or runc is not installed (make test-deps): the Allocate answers were not run as containers"
else
        specs_unleaked "$CDI_SPEC"
        # as_container NAME ANSWER.json ARGS...: podman run with the answer's CDI devices and env
        as_container() {
                local n=$1 ans=$2 args=(); shift 2
                while IFS= read -r d; do args+=(--device "$d"); done < <(jq -r '.cdi_devices[]?.name' "$ans")
                while IFS= read -r e; do args+=(-e "$e"); done < <(jq -r '.envs // {} | to_entries[] | "\(.key)=\(.value)"' "$ans")
                run "$n" -- pod run --network=none --ulimit nofile=20000:20000 --ulimit nproc=4096:4096 \
                        "${args[@]}" "$@"
        }
        # a fresh rootfs for every container (check.sh writes into its own; a hook makes mount points)
        fresh() { rm -rf "$TMP/rootfs-$1"; make_rootfs "$TMP/rootfs-$1"; echo "$TMP/rootfs-$1"; }
        as_container c-share "$A" --rm -e EXPECT_TOTAL_MIB=4096 --rootfs "$(fresh share)" /bin/sh /check.sh
        expect_done c-share "podman, one share of GPU 0"
        expect_fact c-share "HAS /dev/nvidia0" "one share: GPU 0's node"
        expect_fact c-share "NO /dev/nvidia2" "one share: not GPU 1's"
        expect_slice c-share "one share (4Gi, 25 %)" 4Gi 4096
        expect_fact c-share "SLICE GPUSLICE_COMPUTE_LIMIT=25" "one share: slice.conf holds the 25 % compute share"
        as_container c-two "$TMP/a-two.json" --rm -e EXPECT_TOTAL_MIB=8192 --rootfs "$(fresh two)" /bin/sh /check.sh
        expect_done c-two "podman, two shares of GPU 0"
        expect_fact c-two "SLICE GPUSLICE_MEMORY_LIMIT=8Gi" "two shares: slice.conf holds 8Gi"
        expect_fact c-two "PROBE_M ok total is the quota (8192 MiB)" "two shares: cuMemGetInfo total = 8192 MiB"
        expect_fact c-two "PROBE_Q ok the allocation past the quota fails with CUDA_ERROR_OUT_OF_MEMORY (2)" \
                "two shares: an allocation past 8 GiB fails with CUDA_ERROR_OUT_OF_MEMORY"
        # the same answer, the pod's env (a hostile image's too) asking for more through every name
        as_container c-wide "$TMP/a-two.json" --rm -e EXPECT_TOTAL_MIB=8192 -e GPUSLICE_MEMORY_LIMIT_0=40Gi \
                -e CUDA_DEVICE_MEMORY_LIMIT=40Gi -e GPUSLICE_COMPUTE_LIMIT_0=100 -e GPUSLICE_COMPUTE_MODE=off \
                -e GPUSLICE_PRIORITY=high -e CUDA_TASK_PRIORITY=0 --rootfs "$(fresh wide)" /bin/sh /check.sh
        expect_done c-wide "podman, two shares of GPU 0, env asking 40Gi, 100 %, off, high"
        expect_fact c-wide "PROBE_M ok total is the quota (8192 MiB)" "hostile env: cuMemGetInfo total is still 8192 MiB"
        expect_fact c-wide "SLICE GPUSLICE_COMPUTE_LIMIT=50" "hostile env: slice.conf holds 50 %"
        expect_fact c-wide "SLICE GPUSLICE_COMPUTE_MODE=cap" "hostile env: mode off is not taken (cap)"
        expect_fact c-wide "SLICE GPUSLICE_PRIORITY=normal" "hostile env: priority high is not taken (normal)"
        if grep -q "^SLICE GPUSLICE_\(MEMORY\|COMPUTE\)_LIMIT_" "$TMP/c-wide.out"; then
                not_ok "hostile env: a per-device limit in slice.conf: $(grep '^SLICE' "$TMP/c-wide.out" | tr '\n' ' ')"
        else ok "hostile env: no per-device limit in slice.conf"; fi
        as_container c-gpu1 "$TMP/a-gpu1.json" --rm --rootfs "$(fresh gpu1)" /bin/sh /check.sh
        expect_done c-gpu1 "podman, the whole GPU 1"
        expect_fact c-gpu1 "HAS /dev/nvidia2" "whole GPU 1: its node /dev/nvidia2"
        expect_fact c-gpu1 "NO /dev/nvidia0" "whole GPU 1: not GPU 0's"
        expect_no_slice c-gpu1 "whole GPU 1"
        expect_fact c-gpu1 "PROBE_M ok cuDeviceTotalMem_v2 = total (40540 MiB)" "whole GPU 1: CUDA sees all of its memory (no quota)"

        # 3. labels only from the host (issue 31). The kubelet's pod-resources API names no container:
        # tying a slice to a pod through it takes the container's word for its device IDs
        # (GPUSLICE_K8S_DEVICES_<RES>, its env, which the pod spec sets too). A container without
        # CRI annotations whose env names another pod's device: no labels, although pod-resources
        # (served every second here) says whose that device is.
        key=$(jq -r '.envs | keys[] | select(startswith("GPUSLICE_K8S_DEVICES_"))' "$A")
        as_container c-live "$A" -d -e "$key=$GPU1::3" --rootfs "$(fresh live)" /bin/sleep 60
        cid=$(tr -d '\n' <"$TMP/c-live.out")
        printf '[{"name": "trainer-0", "namespace": "ml", "containers": [{"name": "main", "devices":
                [{"resource_name": "%s", "device_ids": ["%s"]}]}]},
                {"name": "other", "namespace": "ml", "containers": [{"name": "x", "devices":
                [{"resource_name": "%s", "device_ids": ["%s"]}]}]}]' "$SHARES" "$GPU0::1" "$SHARES" "$GPU1::3" >"$TMP/pods.json"
        kube pod-resources "$TMP/pods.json" >/dev/null
        L=/run/gpuslice/slices/$cid/labels
        sleep 4 # label-interval = 1: the labeller there was would have run three times
        if [ -n "$cid" ] && [ -d "/run/gpuslice/slices/$cid" ] && [ ! -e "$L" ]; then
                ok "a container whose env names another pod's device (ml/other): no labels from it"
        else
                not_ok "labels from the env: ${cid:-no container}: $(cat "$L" 2>&1)"; tail -5 "$TMP/plugin.log" | sed 's/^/    # /'
                [ -n "$cid" ] || sed 's/^/    # podman: /' "$TMP/c-live.err" | tail -10
        fi
        "$GS" slice show --json ml/other >"$TMP/show.out" 2>&1 && not_ok "slice show ml/other: $(head -c 200 "$TMP/show.out")" ||
                ok "... slice show ml/other finds no slice"
        pod rm -f -t 0 "$cid" >/dev/null 2>&1
fi

# ---------------------------------------------------------------------------------------------
# 4. Health from NVML events (the simulated NVML reads <root>/etc/fakegpu/events)

EV=$DRV/etc/fakegpu/events
n0=$(kube devices nvidia.com/gpu | jq .lists)
echo "xid $GPU1 13" >>"$EV" # an application's error: the GPU is fine
echo "xid $GPU1 79" >>"$EV" # fallen off the bus
kube wait-health nvidia.com/gpu "$GPU1" Unhealthy 20 >/dev/null
kexpect "XID 79 on GPU 1: ListAndWatch sends GPU 1 Unhealthy (GPU 0 stays Healthy)" \
        "[.devices[] | {ID, health}] == [{\"ID\":\"$GPU0\",\"health\":\"Healthy\"},{\"ID\":\"$GPU1\",\"health\":\"Unhealthy\"}]"
[ "$(kq .lists)" = $((n0 + 1)) ] && ok "... in exactly one new list: XID 13 (an application error) changed nothing" ||
        not_ok "... lists before $n0, after $(kq .lists)"
kube wait-health "$SHARES" "$GPU1::2" Unhealthy 20 >/dev/null
kexpect "... and GPU 1's shares are Unhealthy on the $SHARES stream, GPU 0's are not" \
        "[.devices[] | select(.health == \"Unhealthy\") | .ID | split(\"::\")[0]] | unique == [\"$GPU1\"]"
kube allocate nvidia.com/gpu "$TMP/x.json" "$GPU1" >/dev/null
kexpect "Allocate of the unhealthy GPU: refused (INVALID_ARGUMENT, says unhealthy)" \
        '.code == "INVALID_ARGUMENT" and (.message | contains("unhealthy"))'
echo "lost $GPU0" >>"$EV"
kube wait-health nvidia.com/gpu "$GPU0" Unhealthy 20 >/dev/null
kexpect "GPU 0 lost (NVML answers GPU_IS_LOST): ListAndWatch sends it Unhealthy" '.ok'
grep -q "XID 13 (an application error)" "$TMP/plugin.log" && grep -q "GPU 0 (.*) is lost" "$TMP/plugin.log" &&
        ok "the plugin logged the application XID and the lost GPU" || not_ok "plugin log: $(tail -5 "$TMP/plugin.log")"

# ---------------------------------------------------------------------------------------------
# 5. Kubelet restart, robustness, SIGTERM

kube restart >/dev/null
kube wait-registered 30 nvidia.com/gpu "$SHARES" >/dev/null
kexpect "after a kubelet restart (sockets removed, kubelet.sock new) the plugin registers both again" '.ok'
for e in $(kq '.registrations[].endpoint'); do
        [ -S "$DP/$e" ] && ok "... and serves $e again" || not_ok "... no socket $DP/$e"
done
kube watch nvidia.com/gpu >/dev/null
kexpect "... ListAndWatch on the new connection: health kept (both GPUs Unhealthy)" \
        '.ok and ([.devices[].health] | unique) == ["Unhealthy"]'
grep -q "the kubelet restarted" "$TMP/plugin.log" && ok "... the plugin logged the restart" || not_ok "no restart line in the log"

kube call nvidia.com/gpu Allocate 0a03ff >/dev/null
kexpect "a malformed Allocate request: INVALID_ARGUMENT" '.code == "INVALID_ARGUMENT"'
kube call nvidia.com/gpu NoSuchMethod - >/dev/null
kexpect "an unknown method: UNIMPLEMENTED" '.code == "UNIMPLEMENTED"'
kube call nvidia.com/gpu Allocate "$(head -c 5000000 /dev/zero | od -An -v -tx1 | tr -d ' \n')" >/dev/null
kexpect "a 5 MB request: RESOURCE_EXHAUSTED" '.code == "RESOURCE_EXHAUSTED"'
EP=$DP/$(ls "$DP" | grep 'nvidia\.com' | head -1)
"$PY" - "$EP" <<'EOF' >"$TMP/garbage.out" 2>&1
import os, socket, sys
for payload in (os.urandom(4096), b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x04\x08\x00\x00\x00\x00\x01" + os.urandom(64),
                b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0xff, 0xff, 0xff, 1, 4, 0, 0, 0, 1]) + b"x" * 100):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(sys.argv[1])
    s.sendall(payload)
    try:
        while s.recv(4096):
            pass
        print("closed")
    except socket.timeout:
        print("still open")
    s.close()
EOF
[ "$(sort -u "$TMP/garbage.out")" = closed ] && ok "garbage, a bad frame, an oversized frame on the socket: the plugin closes those connections" ||
        not_ok "garbage: $(tr '\n' ' ' <"$TMP/garbage.out")"
kube options nvidia.com/gpu >/dev/null
kexpect "... and keeps serving" '.ok'
kill -0 "$PLUGIN_PID" 2>/dev/null && ok "the plugin is still running" || not_ok "the plugin died: $(tail -5 "$TMP/plugin.log")"

# ---------------------------------------------------------------------------------------------
# 6. Recovery without a restart (--health-recover 1): GPU 0 reset and the plugin restarted (it does
# not start with a GPU lost); lost again: Unhealthy; reset (NVML answers for it again): Healthy
# again on the open stream, 1 s quiet later

stop_plugin
echo "reset $GPU0" >>"$EV"
start_plugin "$CONF" "$TMP/plugin2.log" --health-recover 1
up() { grep -q "registered nvidia.com/gpu with the kubelet" "$TMP/plugin2.log" && grep -q "health: watching NVML events" "$TMP/plugin2.log"; }
for _ in $(seq 300); do up && break; sleep 0.1; done
kube watch nvidia.com/gpu >/dev/null
kexpect "restarted with --health-recover 1 after the reset of GPU 0: a new ListAndWatch stream, both GPUs Healthy" \
        '.ok and ([.devices[].health] | unique) == ["Healthy"]'
echo "lost $GPU0" >>"$EV"
kube wait-health nvidia.com/gpu "$GPU0" Unhealthy 20 >/dev/null
kexpect "GPU 0 lost again: Unhealthy" '.ok'
echo "reset $GPU0" >>"$EV"
kube wait-health nvidia.com/gpu "$GPU0" Healthy 20 >/dev/null
kexpect "GPU 0 reset (NVML answers for it again): ListAndWatch sends it Healthy again, no restart" \
        "[.devices[] | {ID, health}] == [{\"ID\":\"$GPU0\",\"health\":\"Healthy\"},{\"ID\":\"$GPU1\",\"health\":\"Healthy\"}]"
grep -q "GPU 0 ($GPU0): quiet and answering for 1 s (unhealthy: lost): healthy again" "$TMP/plugin2.log" &&
        ok "... the plugin logged it" || not_ok "... the log: $(tail -3 "$TMP/plugin2.log")"

stop_kubelet
stop_plugin
[ "$PLUGIN_RC" = 0 ] && ok "SIGTERM: the plugin exits 0" || not_ok "SIGTERM: exit $PLUGIN_RC"
[ -z "$(ls "$DP" | grep gpuslice-)" ] && ok "... and removes its sockets" || not_ok "... left: $(ls "$DP")"
finish
