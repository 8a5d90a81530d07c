# Shared by the DRA plugin tests (tests/k8s/test_dra_*.sh: each sources this file alone, which
# sources tests/integration/lib.sh, tests/integration/bundle.sh and tests/k8s/lib.sh first): the
# set-up they all make (dra_setup: the tools, the simulated 2-GPU machine, the driver's names and
# directories, the cleanup at exit), the fake API server (fake_apiserver.py: HTTPS with a
# certificate made here, a token), a kubeconfig for it, a second server and plugin beside the
# test's own (dra_side_apiserver, start_dra_side), the fake kubelet's side (fake_dra_kubelet.py,
# one command per run), the plugin, the health stream, and the claims and the checks of them.
. "$(dirname "${BASH_SOURCE[0]}")/../integration/lib.sh"
. "$SRC/tests/integration/bundle.sh" # the simulated GPUs' uuids
. "$SRC/tests/k8s/lib.sh"

APISERVER_PIDS=() DRA_PID= DRA_ALL=() WATCH=()
TOKEN=token-$$-$RANDOM

# dra_setup: the tools (a missing one ends the test); the simulated 2-GPU machine (or $DRA_CONF's; $DRV, $GPU0,
# $GPU1); $DRIVER, $KIND, $NODE, $API_STATE, $CDI_DIR (default /var/run/cdi: where podman looks),
# $REG, $PLUG; the cleanup at exit (which calls the test's dra_cleanup_more first, where it has
# one); $TMP/dra.toml; the fake kubelet's stubs (made while the machine is built)
dra_setup() {
        need jq openssl
        [ -x "$GS" ] || { echo "not ok - $GS is not built"; exit 1; }
        if ! [ -x "$PY" ] || ! "$PY" -c 'import grpc, grpc_tools.protoc, jsonschema' 2>/dev/null; then
                not_ok "$PY cannot import grpc, grpc_tools and jsonschema (make test-deps: python3-grpcio python3-grpc-tools python3-jsonschema)"
                finish
        fi
        "$PY" "$SRC/tests/k8s/fake_dra_kubelet.py" --proto-dir "$SRC/src/kubelet/proto" --stubs "$TMP/dra-stubs" stubs \
                >/dev/null 2>>"$TMP/dra-kubelet.err" &
        local stubs=$!
        DRV=$(mkroot drv "${DRA_CONF:-2gpu.conf}")
        GPU0=$GPU0_UUID GPU1=$GPU1_UUID
        DRIVER=t$$.gpuslice.io
        KIND=k8s.$DRIVER/claim
        NODE=node-a
        API_STATE=$TMP/api
        CDI_DIR=${CDI_DIR:-/var/run/cdi}
        REG=$TMP/plugins_registry PLUG=$TMP/plugins/$DRIVER
        CDI_DIR_MADE=
        mkdir -p "$REG" "$TMP/plugins"
        trap dra_cleanup EXIT
        [ -d "$CDI_DIR" ] || { mkdir -p "$CDI_DIR" && CDI_DIR_MADE=$CDI_DIR; }
        printf '[driver]\nroot = "%s"\n' "$DRV" >"$TMP/dra.toml"
        wait "$stubs" || { not_ok "the fake kubelet cannot make its stubs: $(tail -3 "$TMP/dra-kubelet.err")"; finish; }
}

dra_cleanup() {
        local w
        for w in "${WATCH[@]}"; do kill "$w" 2>/dev/null; done
        stop_all_dra
        stop_apiserver
        if declare -F dra_cleanup_more >/dev/null; then dra_cleanup_more; fi
        rm -f "$CDI_DIR/$DRIVER"-claim-*.json "$CDI_DIR/m$DRIVER"-claim-*.json
        [ -n "$CDI_DIR_MADE" ] && rmdir "$CDI_DIR_MADE" 2>/dev/null
        awk -v t="$TMP/" 'index($5, t) == 1 { print $5 }' /proc/self/mountinfo | sort -r |
                while read -r m; do umount -l "$m"; done
        rm -rf "$TMP"
}

# start_apiserver STATE_DIR KUBECONFIG [ARGS...]: the certificate (made at the first call), a
# server (ARGS: its options, e.g. --feature-gates), KUBECONFIG for it; $API_PORT: its port
start_apiserver() {
        local st=$1 kc=$2; shift 2
        mkdir -p "$st/claims"
        [ -s "$TMP/api-cert.pem" ] ||
                openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=localhost \
                        -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" -keyout "$TMP/api-key.pem" -out "$TMP/api-cert.pem" \
                        2>"$TMP/openssl.err" || { not_ok "openssl cannot make the test's certificate: $(cat "$TMP/openssl.err")"; finish; }
        rm -f "$st.port"
        "$PY" "$SRC/tests/k8s/fake_apiserver.py" --cert "$TMP/api-cert.pem" --key "$TMP/api-key.pem" --token "$TOKEN" \
                --state "$st" --schema "$SRC/tests/k8s/resourceslice.schema.json" --port-file "$st.port" "$@" \
                >>"$TMP/apiserver.err" 2>&1 &
        APISERVER_PIDS+=("$!")
        for _ in $(seq 200); do [ -s "$st.port" ] && break; sleep 0.05; done
        API_PORT=$(cat "$st.port" 2>/dev/null)
        [ -n "$API_PORT" ] || { not_ok "the fake API server did not start: $(tail -5 "$TMP/apiserver.err")"; finish; }
        cat >"$kc" <<KC
apiVersion: v1
kind: Config
current-context: test
clusters:
- name: fake
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority: api-cert.pem
contexts:
- name: test
  context: {cluster: fake, user: plugin}
users:
- name: plugin
  user: {token: $TOKEN}
KC
}

# dra_side_apiserver NAME [ARGS...]: a second fake API server beside the test's own (ARGS: its
# options, e.g. --feature-gates), its state in $TMP/api-NAME, its kubeconfig $TMP/kubeconfig-NAME,
# for a plugin of its own (start_dra_side NAME). Start it before the test's own: start_apiserver
# leaves $API_PORT (api's) to the last one.
dra_side_apiserver() {
        local n=$1; shift
        start_apiserver "$TMP/api-$n" "$TMP/kubeconfig-$n" "$@"
        mkdir -p "$TMP/registry-$n"
}

# start_dra_side NAME LOG ARGS...: a plugin for that server (start_dra), with directories of its
# own ($TMP/cdi-NAME, plugins-NAME, registry-NAME); its pid in $DRA_PID
start_dra_side() {
        local n=$1 log=$2; shift 2
        start_dra "$log" "$@" --kubeconfig "$TMP/kubeconfig-$n" --cdi-dir "$TMP/cdi-$n" --plugin-dir "$TMP/plugins-$n" \
                --registry-dir "$TMP/registry-$n"
}

# api METHOD PATH [JSON]: a request to the fake API server as a cluster's other users make it (the
# kubelet deleting a node's slices, a controller); the status code on stdout, the body in $TMP/api.out
api() {
        curl -sS -o "$TMP/api.out" -w '%{http_code}' --cacert "$TMP/api-cert.pem" -H "Authorization: Bearer $TOKEN" \
                -H 'Content-Type: application/json' -X "$1" ${3:+--data "$3"} "https://127.0.0.1:$API_PORT$2"
}

# stop_apiserver: every server started here
stop_apiserver() {
        local p
        for p in "${APISERVER_PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
        APISERVER_PIDS=()
}

# dra CMD ARGS...: the fake kubelet's command; its JSON line in $TMP/k.json (kq/kexpect read it)
dra() {
        "$PY" "$SRC/tests/k8s/fake_dra_kubelet.py" --proto-dir "$SRC/src/kubelet/proto" --stubs "$TMP/dra-stubs" "$@" \
                >"$TMP/k.json" 2>>"$TMP/dra-kubelet.err" ||
                echo '{"ok": false, "error": "the fake kubelet failed"}' >"$TMP/k.json"
}

# start_dra LOG ARGS...: gpuslice dra-plugin in the background (its output in LOG: a plugin left
# holding the test's stdout would keep meson waiting for the test's end)
start_dra() {
        local log=$1; shift
        "$GS" dra-plugin "$@" >"$log" 2>&1 &
        DRA_PID=$!
        DRA_ALL+=("$DRA_PID")
}

# stop_dra: SIGTERM, wait (10 s at most); its exit status in $DRA_RC
stop_dra() {
        DRA_RC=
        [ -n "$DRA_PID" ] || return 0
        kill -TERM "$DRA_PID" 2>/dev/null
        for _ in $(seq 200); do kill -0 "$DRA_PID" 2>/dev/null || break; sleep 0.05; done
        kill -KILL "$DRA_PID" 2>/dev/null
        wait "$DRA_PID"
        DRA_RC=$?
        DRA_PID=
}

# stop_all_dra: stop_dra, and kill every other plugin started here that still runs (a test that
# ended between starting a second instance and stopping it: the EXIT trap)
stop_all_dra() {
        local p
        stop_dra
        for p in "${DRA_ALL[@]}"; do kill -KILL "$p" 2>/dev/null; done
        DRA_ALL=()
}

# wait_for SECONDS CMD...: until CMD succeeds (tried every 50 ms)
wait_for() {
        local t=$1; shift
        for _ in $(seq $((t * 20))); do "$@" && return 0; sleep 0.05; done
        return 1
}

# claim_json NS NAME UID DRIVER RESULTS-JSON [CONFIG-JSON]: an allocated ResourceClaim as the API
# server returns it, into the fake API server's state
claim_json() {
        local ns=$1 name=$2 uid=$3 drv=$4 results=$5 config=${6:-[]}
        mkdir -p "$API_STATE/claims/$ns"
        jq -n --arg ns "$ns" --arg name "$name" --arg uid "$uid" --argjson r "$results" --argjson c "$config" '{
                apiVersion: "resource.k8s.io/v1", kind: "ResourceClaim",
                metadata: {name: $name, namespace: $ns, uid: $uid, resourceVersion: "7"},
                spec: {devices: {requests: [{name: "gpu", exactly: {deviceClassName: "gpu.gpuslice.io"}}]}},
                status: {allocation: {devices: {results: $r, config: $c}}}}' >"$API_STATE/claims/$ns/$name.json"
}

# res DEVICE [POOL [CONSUMED-CAPACITY-JSON]]: an allocation's results, one device of $DRIVER
res() { echo "[{\"request\": \"gpu\", \"driver\": \"$DRIVER\", \"pool\": \"${2:-$NODE}\", \"device\": \"$1\"${3:+, \"consumedCapacity\": $3}}]"; }
# gets NS NAME: the API server's GETs of a claim so far
gets() { grep -c "^GET /apis/resource.k8s.io/v1/namespaces/$1/resourceclaims/$2 " "$API_STATE/requests.log"; }
speccount() { find "$CDI_DIR" -maxdepth 1 -name "$DRIVER-claim-*.json" | wc -l; }
# ready NAME: our entries of the stored claim's status.devices, "DEVICE READY REASON MESSAGE" a line
ready() {
        jq -r --arg d "$DRIVER" '.status.devices // [] | .[] | select(.driver == $d) | .device + " " +
                ((.conditions // [])[] | select(.type == "Ready") | .status + " " + .reason + " " + .message)' \
                "$API_STATE/claims/ml/$1.json" 2>/dev/null
}
# no_checkpoint_entry UID: the plugin's checkpoint is there, a JSON object with a "claims" object,
# and has no entry for UID (a checkpoint missing, empty or damaged is not "no entry")
no_checkpoint_entry() {
        jq -e --arg u "$1" '(.claims | type) == "object" and (.claims | has($u) | not)' "$PLUG/checkpoint.json" >/dev/null 2>&1
}
# bad NAME UID WANT-TEXT DESC [REASON]: the claim ml/NAME prepared through $SOCK is refused with an
# error holding WANT-TEXT, no spec, no checkpoint entry; with REASON the claim's status must say
# Ready False, REASON, the error (without, the status is left alone)
bad() {
        local before; before=$(speccount)
        dra prepare "$SOCK" v1 "ml/$1/$2"
        if [ "$(kq ".ok and (.claims[\"$2\"].devices // []) == [] and (.claims[\"$2\"].error | contains(\"$3\"))")" = true ] &&
           [ "$(speccount)" = "$before" ] && no_checkpoint_entry "$2"; then
                ok "$4: refused ($(kq ".claims[\"$2\"].error" | head -c 150)); no spec, no checkpoint entry"
        else not_ok "$4: $(head -c 400 "$TMP/k.json") (specs $before -> $(speccount))"; return; fi
        [ -e "$API_STATE/claims/ml/$1.json" ] || return 0
        local st; st=$(ready "$1")
        if [ -n "${5:-}" ]; then
                if [ "$(echo "$st" | wc -l)" = 1 ] && [[ "$st" == *" False $5 "*"$3"* ]]; then
                        ok "... the claim's status: its device not Ready, $5, the same error"
                else not_ok "... the claim's status: '$st' ($(jq -c .status.devices "$API_STATE/claims/ml/$1.json"))"; fi
        elif [ -z "$st" ]; then ok "... the claim's status left alone (not a claim of ours to speak for)"
        else not_ok "... the claim's status was written: $st"; fi
}

# watch OUT: the fake kubelet's NodeWatchResources stream on $SOCK into OUT (one JSON line a
# message), in the background for 60 s (killed at exit)
watch() {
        "$PY" "$SRC/tests/k8s/fake_dra_kubelet.py" --proto-dir "$SRC/src/kubelet/proto" --stubs "$TMP/dra-stubs" \
                watch-health "$SOCK" 60 >"$1" 2>>"$TMP/dra-kubelet.err" &
        WATCH+=($!)
}
# health OUT N: the devices' health in the Nth message as "name=HEALTH@pool ...", sorted
health() { sed -n "${2}p" "$1" | jq -r '[.devices[] | "\(.device.device_name)=\(.health)@\(.device.pool_name)"] | sort | join(" ")' 2>/dev/null; }
# lines OUT N: OUT holds N messages at least
lines() { [ "$(grep -c '"devices"' "$1" 2>/dev/null)" -ge "$2" ]; }

# Slice directories as a container's hook writes them (tests/k8s/test_dra_usage.sh, _appxid, _mig):
# dra_slice_owner starts a live process to own them (OWNER_PID; the test's cleanup kills it);
# dra_slice_dir ID CLAIM makes $REGIONS/ID with that owner and the labels a claim's CDI spec gives
# the hook (namespace ml, pod trainer-0, the claim CLAIM).
dra_slice_owner() { sleep 600 & OWNER_PID=$!; }
dra_slice_dir() {
        mkdir -p "$REGIONS/$1"
        echo "$OWNER_PID $(awk '{print $22}' "/proc/$OWNER_PID/stat")" >"$REGIONS/$1/owner"
        printf '{"namespace": "ml", "pod": "trainer-0", "claim": "%s"}\n' "$2" >"$REGIONS/$1/labels"
}
# driver_ready CLAIM SHAREID: the driver's own Ready condition on CLAIM's gpu-0 share entry (namespace
# ml), as a prepare writes it, applied under the driver's field manager; the HTTP status in $code,
# the answer in $TMP/api.out
driver_ready() {
        local doc='{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "'"$1"'", "namespace": "ml"},
       "status": {"devices": [{"driver": "'"$DRIVER"'", "pool": "'"$NODE"'", "device": "gpu-0",
        "shareID": "'"$2"'", "conditions": [{"type": "Ready", "status": "True",
        "reason": "Prepared", "message": "prepared", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}]}}'
        code=$(curl -sS -o "$TMP/api.out" -w '%{http_code}' --cacert "$TMP/api-cert.pem" -H "Authorization: Bearer $TOKEN" \
                -H 'Content-Type: application/apply-patch+yaml' -X PATCH --data "$doc" \
                "https://127.0.0.1:$API_PORT/apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/$1/status?fieldManager=$DRIVER&force=true")
}
