# Shared by the DRA plugin tests (sourced after tests/integration/lib.sh and tests/k8s/lib.sh): the
# fake API server (fake_apiserver.py: HTTPS with a certificate made here, a token), a kubeconfig
# for it, the fake kubelet's side (fake_dra_kubelet.py, one command per run) and the plugin.
APISERVER_PID= DRA_PID= DRA_ALL=()
TOKEN=token-$$-$RANDOM

# start_apiserver STATE_DIR [ARGS...]: certificate, server (ARGS: its options, e.g. --feature-gates),
# kubeconfig ($TMP/kubeconfig); $API_PORT
start_apiserver() {
        local st=$1; shift
        mkdir -p "$st/claims"
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=localhost \
                -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" -keyout "$TMP/api-key.pem" -out "$TMP/api-cert.pem" \
                2>"$TMP/openssl.err" || { not_ok "openssl cannot make the test's certificate: $(cat "$TMP/openssl.err")"; finish; }
        rm -f "$TMP/api.port"
        "$PY" "$SRC/tests/k8s/fake_apiserver.py" --cert "$TMP/api-cert.pem" --key "$TMP/api-key.pem" --token "$TOKEN" \
                --state "$st" --schema "$SRC/tests/k8s/resourceslice.schema.json" --port-file "$TMP/api.port" "$@" \
                >>"$TMP/apiserver.err" 2>&1 &
        APISERVER_PID=$!
        for _ in $(seq 100); do [ -s "$TMP/api.port" ] && break; sleep 0.1; done
        API_PORT=$(cat "$TMP/api.port" 2>/dev/null)
        [ -n "$API_PORT" ] || { not_ok "the fake API server did not start: $(tail -5 "$TMP/apiserver.err")"; finish; }
        cat >"$TMP/kubeconfig" <<KC
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

# api METHOD PATH [JSON]: a request to the fake API server as a cluster's other users make it (the
# kubelet deleting a node's slices, a controller); the status code on stdout, the body in $TMP/api.out
api() {
        curl -sS -o "$TMP/api.out" -w '%{http_code}' --cacert "$TMP/api-cert.pem" -H "Authorization: Bearer $TOKEN" \
                -H 'Content-Type: application/json' -X "$1" ${3:+--data "$3"} "https://127.0.0.1:$API_PORT$2"
}

stop_apiserver() {
        [ -n "$APISERVER_PID" ] || return 0
        kill "$APISERVER_PID" 2>/dev/null
        wait "$APISERVER_PID" 2>/dev/null
        APISERVER_PID=
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
        for _ in $(seq 100); do kill -0 "$DRA_PID" 2>/dev/null || break; sleep 0.1; done
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

# wait_for SECONDS CMD...: until CMD succeeds
wait_for() {
        local t=$1; shift
        for _ in $(seq $((t * 10))); do "$@" && return 0; sleep 0.1; done
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
