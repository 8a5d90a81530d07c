#!/usr/bin/env bash
# gpuslice dra-plugin: an admin-access claim (resource.k8s.io v1 adminAccess: true, the DRAAdminAccess
# gate; issue 33, item 5), against the fake API server and the kubelet's side (dra_lib.sh), on the
# simulated 2-GPU machine: prepared beside slice claims of the same GPU, its CDI device is the GPU's
# nodes and the slices' regions directory mounted read-only (docs/kubernetes.md says why); it is
# prepared on a GPU its slices fill, and holds nothing (a slice prepared after it still fits); an
# API server whose DRAAdminAccess gate is off drops the field, and the claim is an ordinary
# whole-GPU claim (refused on a full GPU, whole and without the view on a free one). The admin
# claim's spec is run by podman with runc: gpuslice top --once --json inside shows another claim's
# slice, and root there cannot write the view.
#
# The mutation check (tests/mutation/run.sh) runs this test up to the check meant for each of its
# mutations (draadminbooks, draadminro, draadminheld): those checks come first, in that order.
. "$(dirname "$0")/dra_lib.sh" # with tests/integration/lib.sh, bundle.sh (the simulated GPUs' uuids), tests/k8s/lib.sh

CDI_DIR=$TMP/cdi # no container runs here: the specs stay in the test's directory
OWNER_PID=
dra_cleanup_more() {
        [ -n "$OWNER_PID" ] && kill "$OWNER_PID" 2>/dev/null
        [ -d "$TMP/podman-root" ] && timeout 60 podman --root "$TMP/podman-root" --runroot "$TMP/podman-run" rm -af -t 0 >/dev/null 2>&1
        rm -f "/var/run/cdi/$DRIVER-claim-"*.json
}
dra_setup
REGIONS=$TMP/regions
mkdir -p "$REGIONS"
printf '[driver]\nroot = "%s"\n\n[slice]\nregions-dir = "%s"\n' "$DRV" "$REGIONS" >"$TMP/dra.toml"
GATED=$TMP/api-gated
dra_side_apiserver gated --feature-gates DRAAdminAccess=false
start_apiserver "$API_STATE" "$TMP/kubeconfig"
common=(-c "$TMP/dra.toml" --driver-name "$DRIVER" --node "$NODE" --resync-period 1)
start_dra_side gated "$TMP/dra-g.log" "${common[@]}"
PID_G=$DRA_PID SOCK_G=$TMP/plugins-gated/dra.sock
start_dra "$TMP/dra.log" "${common[@]}" --kubeconfig "$TMP/kubeconfig" --cdi-dir "$CDI_DIR" --plugin-dir "$PLUG" \
        --registry-dir "$REG"
SOCK=$PLUG/dra.sock
wait_for 20 test -S "$SOCK" && wait_for 20 test -S "$SOCK_G" ||
        { not_ok "the plugins do not serve: $(tail -3 "$TMP/dra.log") $(tail -3 "$TMP/dra-g.log")"; finish; }

# slice NAME UID DEVICE MEMORY COMPUTE [STATE]: an allocated slice claim in namespace ml
slice() {
        API_STATE=${6:-$API_STATE} claim_json ml "$1" "$2" "$DRIVER" "$(res "$3" "" "{\"memory\": \"$4\", \"compute\": \"$5\"}")"
}
# admin NAME UID DEVICE [STATE]: an allocated admin-access claim (as the API server stores one: the
# request's and the result's adminAccess)
admin() {
        API_STATE=${4:-$API_STATE} claim_json ml "$1" "$2" "$DRIVER" \
                "[{\"request\": \"gpu\", \"driver\": \"$DRIVER\", \"pool\": \"$NODE\", \"device\": \"$3\", \"adminAccess\": true}]"
        local f=${4:-$API_STATE}/claims/ml/$1.json
        jq '.spec.devices.requests[0].exactly.adminAccess = true' "$f" >"$f.new" && mv "$f.new" "$f"
}
# spec_dev UID DEVICE: the claim's CDI device (its spec in $CDI_DIR) on stdout
spec_dev() { jq -c --arg n "$1-$2" '.devices[] | select(.name == $n)' "$CDI_DIR/$DRIVER-claim-$1.json" 2>/dev/null; }

UA=a0000000-0000-4000-8000-000000000001 UB=a0000000-0000-4000-8000-000000000002
UC=a0000000-0000-4000-8000-000000000003 UM=a0000000-0000-4000-8000-00000000000a

# ---------------------------------------------------------------------------------------------
# The admin claim beside two slices that fill gpu-0's compute: prepared; its view read-only

slice slice-a "$UA" gpu-0 8Gi 50
slice slice-b "$UB" gpu-0 8Gi 50
dra prepare "$SOCK" v1 "ml/slice-a/$UA" "ml/slice-b/$UB"
kexpect "two slices of gpu-0 (8 Gi / 50 % each) fill its compute" \
        ".ok and (.claims[\"$UA\"].devices | length) == 1 and (.claims[\"$UB\"].devices | length) == 1"
admin monitor "$UM" gpu-0
dra prepare "$SOCK" v1 "ml/monitor/$UM"
kexpect "an admin-access claim of the full gpu-0: prepared (it consumes nothing, as the scheduler books it)" \
        ".ok and .claims[\"$UM\"].devices == [{\"request_names\": [\"gpu\"], \"pool_name\": \"$NODE\", \"device_name\": \"gpu-0\",
          \"cdi_device_ids\": [\"$KIND=$UM-gpu-0\"]}]"
dev=$(spec_dev "$UM" gpu-0)
view=$(echo "$dev" | jq -c --arg r "$REGIONS" '[.containerEdits.mounts[]? | select(.hostPath == $r)]')
# mutation draadminro: the view mounted writable
if [ "$(echo "$view" | jq 'length == 1 and .[0].containerPath == "/run/gpuslice/slices" and
        (.[0].options | index("ro") != null and index("rw") == null and index("bind") != null)')" = true ]; then
        ok "its CDI device mounts the slices' regions directory read-only at /run/gpuslice/slices ($(echo "$view" | jq -c '.[0].options'))"
else not_ok "its CDI device mounts the slices' regions directory read-only: not so: $view ($(head -c 600 "$CDI_DIR/$DRIVER-claim-$UM.json" 2>&1))"; fi
# mutation draadminbooks: an admin claim counted on the books; a third slice after the second
# leaves: fits only if the admin claim holds nothing
dra unprepare "$SOCK" v1 "ml/slice-b/$UB"
slice slice-c "$UC" gpu-0 8Gi 50
dra prepare "$SOCK" v1 "ml/slice-c/$UC"
kexpect "a slice of gpu-0 after the admin claim: fits (the admin claim holds nothing of the GPU)" \
        ".ok and (.claims[\"$UC\"].devices | length) == 1 and (.claims[\"$UC\"].error // \"\") == \"\""

if [ "$(echo "$dev" | jq '[.containerEdits.deviceNodes[]?.path] | index("/dev/nvidia0") != null')" = true ] &&
   [ "$(echo "$dev" | jq '[.. | strings | select(test("--memory=|--compute-share=|GPUSLICE_"))] | length == 0')" = true ]; then
        ok "its CDI device: gpu-0's device node, no slice (no hook limits, no GPUSLICE_ env)"
else not_ok "its CDI device: $(echo "$dev" | head -c 800)"; fi
if jq -e --arg u "$UM" '.claims[$u].devices == [.claims[$u].devices[0]] and .claims[$u].devices[0].admin == true and
        (.claims[$u].devices[0] | has("memory") or has("compute") | not)' "$PLUG/checkpoint.json" >/dev/null; then
        ok "its checkpoint entry says admin, no memory or compute (no share: no usage data, off the books)"
else not_ok "its checkpoint entry: $(jq -c ".claims[\"$UM\"]" "$PLUG/checkpoint.json" 2>&1)"; fi
if [ -z "$(ready monitor)" ]; then ok "its status left alone (prepared, no error to report)"
else not_ok "its status: $(ready monitor)"; fi

# the checkpoint rebuilt from the specs (a torn one): the admin entry still holds nothing
stop_dra
echo '{"claims": {' >"$PLUG/checkpoint.json"
rm -f "$SOCK"
start_dra "$TMP/dra-2.log" "${common[@]}" --kubeconfig "$TMP/kubeconfig" --cdi-dir "$CDI_DIR" --plugin-dir "$PLUG" \
        --registry-dir "$REG"
wait_for 20 test -S "$SOCK" || not_ok "the plugin started again does not serve: $(tail -3 "$TMP/dra-2.log")"
UD=a0000000-0000-4000-8000-000000000004
slice slice-d "$UD" gpu-0 8Gi 50
dra unprepare "$SOCK" v1 "ml/slice-c/$UC"
dra prepare "$SOCK" v1 "ml/slice-d/$UD"
if [ "$(kq ".ok and (.claims[\"$UD\"].devices | length) == 1")" = true ] && [ -e "$PLUG/checkpoint.json.bad" ] &&
   jq -e --arg u "$UM" '.claims[$u].devices[0].admin == true' "$PLUG/checkpoint.json" >/dev/null; then
        ok "a torn checkpoint rebuilt from the specs: the admin entry (its view's mount) still holds nothing"
else not_ok "a torn checkpoint rebuilt: $(head -c 300 "$TMP/k.json") $(jq -c ".claims[\"$UM\"]" "$PLUG/checkpoint.json" 2>&1)"; fi

claim_json ml bad-admin a0000000-0000-4000-8000-00000000000b "$DRIVER" \
        "[{\"request\": \"gpu\", \"driver\": \"$DRIVER\", \"pool\": \"$NODE\", \"device\": \"gpu-1\", \"adminAccess\": \"yes\"}]"
bad bad-admin a0000000-0000-4000-8000-00000000000b "adminAccess is not a boolean" "adminAccess \"yes\"" InvalidClaim

# ---------------------------------------------------------------------------------------------
# The admin claim's spec run as a container (podman with runc, as test_dra_plugin.sh runs claims):
# gpuslice top inside shows the slice of another claim; the view cannot be written

# slice-a's container's slice directory, as its hook leaves it (owner, labels) and its region
sleep 600 &
OWNER_PID=$!
mkdir -p "$REGIONS/c-a"
echo "$OWNER_PID $(awk '{print $22}' "/proc/$OWNER_PID/stat")" >"$REGIONS/c-a/owner"
printf '{"namespace": "ml", "pod": "trainer-a", "claim": "slice-a"}\n' >"$REGIONS/c-a/labels"
"$BUILD/tests/region_tool" share "$REGIONS/c-a/usage" "$GPU0" 8589934592 1073741824 0 0 0 0 || not_ok "region_tool share"
PODMAN=$(command -v podman || true)
if [ -z "$PODMAN" ] || ! [ -x "$RUNC" ]; then
        not_ok "podman or runc is not installed (make test-deps): the admin claim's spec was not run as a container"
else
        # podman reads /var/run/cdi only: the spec copied there (removed at exit)
        mkdir -p /var/run/cdi
        PUB=/var/run/cdi/$DRIVER-claim-$UM.json
        cp "$CDI_DIR/$DRIVER-claim-$UM.json" "$PUB"
        specs_unleaked "$PUB"
        R=$TMP/rootfs-admin
        make_rootfs "$R"
        cp "$GS" "$R/usr/bin/gpuslice"
        for l in $(ldd "$GS" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u); do
                [ -e "$R$LIBDIR/${l##*/}" ] || cp -L "$l" "$R$LIBDIR/${l##*/}"
        done
        cat >"$R/admin.sh" <<'SH'
grep ' /run/gpuslice/slices ' /proc/mounts | sed 's/^/MOUNT /'
if echo x >/run/gpuslice/slices/c-a/labels 2>/dev/null || mkdir /run/gpuslice/slices/mine 2>/dev/null; then echo WRITABLE; else echo READONLY; fi
/usr/bin/gpuslice top --once --json >/top.json 2>/top.err; echo "TOPRC $?"
sed 's/^/TOP /' /top.json; sed 's/^/TOPERR /' /top.err
SH
        pod run --rm --network=none \
                --ulimit nofile=20000:20000 --ulimit nproc=4096:4096 --device "$KIND=$UM-gpu-0" --rootfs "$R" /bin/sh /admin.sh >"$TMP/c-admin.out" 2>"$TMP/c-admin.err"
        sed -n 's/^TOP //p' "$TMP/c-admin.out" >"$TMP/c-admin.json"
        if grep -q '^TOPRC 0$' "$TMP/c-admin.out" &&
           jq -e '[.slices[] | select(tostring | contains("slice-a"))] | length == 1' "$TMP/c-admin.json" >/dev/null 2>&1; then
                ok "in a container of the admin claim's spec (podman, runc): gpuslice top --once --json shows slice-a's slice"
        else not_ok "gpuslice top in the admin container: $(grep -v '^TOP ' "$TMP/c-admin.out" | head -c 400) $(head -c 400 "$TMP/c-admin.json") $(tail -3 "$TMP/c-admin.err")"; fi
        if grep -q '^READONLY$' "$TMP/c-admin.out" && grep -Eq '^MOUNT .* (ro|ro,.*) ' "$TMP/c-admin.out" &&
           [ "$(cat "$REGIONS/c-a/labels")" = '{"namespace": "ml", "pod": "trainer-a", "claim": "slice-a"}' ]; then
                ok "... the view is mounted ro there: root in the container cannot write a region or make a directory"
        else not_ok "... the view in the container: $(grep -E '^(MOUNT|READONLY|WRITABLE)' "$TMP/c-admin.out")"; fi
fi

# ---------------------------------------------------------------------------------------------
# DRAAdminAccess off: the API server drops adminAccess; the claim is an ordinary whole-GPU one

slice slice-g "$UA" gpu-0 8Gi 100 "$GATED"
admin monitor "$UM" gpu-0 "$GATED"
admin monitor-1 "$UB" gpu-1 "$GATED"
dra prepare "$SOCK_G" v1 "ml/slice-g/$UA" "ml/monitor/$UM" "ml/monitor-1/$UB"
kexpect "DRAAdminAccess off: the field dropped, the 'admin' claim of a full gpu-0 is a whole GPU: refused, over-committed" \
        ".ok and (.claims[\"$UA\"].devices | length) == 1 and (.claims[\"$UM\"].devices // []) == [] and
         (.claims[\"$UM\"].error | contains(\"gpu-0 would be over-committed\"))"
g1=$(jq -c --arg n "$UB-gpu-1" '.devices[] | select(.name == $n)' "$TMP/cdi-gated/$DRIVER-claim-$UB.json" 2>/dev/null)
if [ "$(kq "(.claims[\"$UB\"].devices | length) == 1")" = true ] && [ -n "$g1" ] &&
   [ "$(echo "$g1" | jq --arg r "$REGIONS" '[.. | strings | select(. == $r)] | length == 0')" = true ]; then
        ok "DRAAdminAccess off: on a free gpu-1, a whole GPU without the regions view"
else not_ok "DRAAdminAccess off: on a free gpu-1: $(head -c 300 "$TMP/k.json") $g1"; fi

finish
