# Shared by the device plugin tests (sourced after tests/integration/lib.sh): the fake kubelet
# (fake_kubelet.py, driven through two FIFOs) and the plugin under test, each started in the
# background and stopped by their own pid.
PY=/usr/bin/python3 # Debian's, with python3-grpcio and python3-grpc-tools (not a pyenv python3)
KUBELET_PID= PLUGIN_PID=

have_grpc() {
        [ -x "$PY" ] && "$PY" -c 'import grpc, grpc_tools.protoc' 2>/dev/null
}

# start_kubelet DIR [POD_RESOURCES_SOCKET]: the fake kubelet serving DIR/kubelet.sock
start_kubelet() {
        local dir=$1 podres=${2:-}
        rm -f "$TMP/kubelet.cmd" "$TMP/kubelet.reply"
        mkfifo "$TMP/kubelet.cmd" "$TMP/kubelet.reply"
        "$PY" "$SRC/tests/k8s/fake_kubelet.py" --proto-dir "$SRC/src/kubelet/proto" --socket-dir "$dir" \
                ${podres:+--pod-resources "$podres"} "$TMP/kubelet.cmd" "$TMP/kubelet.reply" 2>>"$TMP/kubelet.err" &
        KUBELET_PID=$!
        # read-write opens: neither blocks (nor hangs the test if the kubelet dies early)
        exec {KCMD}<>"$TMP/kubelet.cmd" {KREPLY}<>"$TMP/kubelet.reply"
}

# kube CMD...: one command to the fake kubelet; its JSON answer in $TMP/k.json (and on stdout)
kube() {
        local line
        echo "$*" >&"$KCMD"
        if ! IFS= read -r -t 90 line <&"$KREPLY"; then
                line='{"ok": false, "error": "the fake kubelet did not answer"}'
        fi
        printf '%s\n' "$line" >"$TMP/k.json"
        printf '%s\n' "$line"
}
# kq JQ-FILTER: the filter on the last answer
kq() { jq -r "$1" "$TMP/k.json"; }
# kexpect DESC JQ-FILTER: the last answer satisfies the filter
kexpect() {
        if [ "$(jq -r "$2" "$TMP/k.json" 2>&1)" = true ]; then ok "$1"; else
                not_ok "$1: $(head -c 600 "$TMP/k.json")"; fi
}

stop_kubelet() {
        [ -n "$KUBELET_PID" ] || return 0
        echo quit >&"$KCMD" 2>/dev/null
        exec {KCMD}>&- {KREPLY}<&-
        for _ in $(seq 50); do kill -0 "$KUBELET_PID" 2>/dev/null || break; sleep 0.1; done
        kill "$KUBELET_PID" 2>/dev/null
        wait "$KUBELET_PID" 2>/dev/null
        KUBELET_PID=
}

# start_plugin CONFIG LOG [options...]: gpuslice device-plugin in the background
start_plugin() {
        local conf=$1 log=$2; shift 2
        "$GS" device-plugin --config "$conf" "$@" 2>"$log" &
        PLUGIN_PID=$!
}

# stop_plugin: SIGTERM, wait (10 s at most); its exit status in $PLUGIN_RC
stop_plugin() {
        PLUGIN_RC=
        [ -n "$PLUGIN_PID" ] || return 0
        kill -TERM "$PLUGIN_PID" 2>/dev/null
        for _ in $(seq 100); do kill -0 "$PLUGIN_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$PLUGIN_PID" 2>/dev/null
        wait "$PLUGIN_PID"
        PLUGIN_RC=$?
        PLUGIN_PID=
}

# plugin_config FILE SOCKET_DIR [KEY = VALUE lines for [device-plugin]...]
plugin_config() {
        local f=$1 dir=$2; shift 2
        {
                printf '[driver]\nroot = "%s"\n\n[device-plugin]\nsocket-dir = "%s"\n' "$DRV" "$dir"
                printf '%s\n' "$@"
        } >"$f"
}

# pod ARGS...: podman with runc ($PODMAN, $RUNC), its state under $TMP, bounded to 3 minutes
pod() {
        timeout 180 "$PODMAN" --root "$TMP/podman-root" --runroot "$TMP/podman-run" --tmpdir "$TMP/podman-tmp" \
                --cgroup-manager=cgroupfs --events-backend=file --runtime "$RUNC" "$@"
}
# specs_unleaked SPEC...: in a sanitizer build, these CDI specs' hooks run with LeakSanitizer off
# (in a hook in the container's pid namespace it cannot list its threads and fails the hook, as
# test_cdi.sh says); a normal build's specs stay as the plugin wrote them
specs_unleaked() {
        sanitized || return 0
        local f
        for f in "$@"; do
                jq '(.. | objects | select(has("hookName")) | .env) |= (. + ["ASAN_OPTIONS=detect_leaks=0"])' "$f" \
                        >"$f.tmp" && mv "$f.tmp" "$f"
        done
}
