#!/usr/bin/env bash
# `gpuslice metrics` against workloads on the simulated GPU: the real server on a free port,
# real slices (gpuslice exec: memory, compute 30 % on GPU 0, compute 60 % on GPU 1), a container
# slice directory with labels, scraped with curl; the exposition checked by promtool and its
# numbers against what the workloads did; per-GPU facts from the simulated NVML (root: a fake
# driver root); a corpus of damaged regions, each skipped with one log line while the server
# keeps answering; a slice whose container dies vanishes and its directory is removed; a hung
# NVML never holds a scrape; --listen errors; --once (NVML's answer in it, a hung one not waited
# for long).
set -uo pipefail
SRC=${GS_SOURCE_DIR:?} BUILD=${GS_BUILD_DIR:?}
unset LD_LIBRARY_PATH LD_PRELOAD FAKEGPU_CONFIG FAKEGPU_STATE
GS=$BUILD/gpuslice
FAKE=$BUILD/tests/fakegpu
MEMPROBE=$BUILD/tests/vgpu/vgpu-probe
CPROBE=$BUILD/tests/vgpu/compute-probe
TOOL=$BUILD/tests/region_tool
. "$SRC/tests/lib/check.sh" # ok, not_ok, skip, check, run_ok, started, finish
# curl and promtool (prometheus) come with `make test-deps`: one missing is a failure, not a skip
for t in curl promtool; do command -v $t >/dev/null || { not_ok "$t is not installed (make test-deps)"; finish; }; done
TMP=$(mktemp -d /tmp/gs-metrics.XXXXXX)
chmod 755 "$TMP" # the NVML helper runs as nobody
pids=()
cleanup() {
        local p
        for p in "${pids[@]+"${pids[@]}"}"; do kill "$p" 2>/dev/null; done
        wait 2>/dev/null
        rm -rf "$TMP"
}
trap cleanup EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0
# holds DESC EXPR: ok when the shell expression EXPR is true (check.sh's `check` runs a command)
holds() { if eval "$2"; then ok "$1"; else not_ok "$1"; fi; }

# The simulated GPUs: 2 x A100 (GPU 0: 35 % busy, 1.5 GiB held by processes outside any slice).
# As root, a fake driver root for the server's NVML helper (it chroots into it); the workloads
# read the same config.
CONF=$SRC/tests/fakegpu/configs/2gpu.conf
NVML=0
if [ "$(id -u)" = 0 ]; then
        if "$SRC/tests/fakegpu/mkroot.sh" --build "$BUILD" "$CONF" "$TMP/drv" >"$TMP/mkroot.log" 2>&1; then
                NVML=1 CONF=$TMP/drv/etc/fakegpu/gpus.conf
        else
                cat "$TMP/mkroot.log"; not_ok "mkroot"
        fi
fi
[ $NVML = 1 ] || skip "per-GPU (NVML) checks: they need root (the NVML helper chroots into a fake driver root)"
ROOTARG=(); [ $NVML = 1 ] && ROOTARG=(--root "$TMP/drv")
NVMLARG=(--no-nvml); [ $NVML = 1 ] && NVMLARG=(--nvml-interval 1)
GPU0=GPU-2f8c1d4e-7a90-3b5c-e6d1-0a9b8c7d6e5f GPU1=GPU-9e3a5b7c-1d2f-4a6b-8c0d-2e4f6a8b0c1d
# the workloads' own view (never the server's: its helper reads the root's config)
wl() { env FAKEGPU_CONFIG="$CONF" FAKEGPU_STATE="$TMP/fakegpu.state" GPUSLICE_ARBITER_DIR="$TMP/arbiter" "$@"; }
mkdir -p "$TMP/arbiter" "$TMP/slices" "$TMP/corpus"

# start_server NAME ARGS...: `gpuslice metrics` in the background; its port in PORT, stderr in $TMP/NAME.err
start_server() {
        local name=$1; shift
        "$GS" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" &
        pids+=($!)
        SERVER=$!
        for _ in $(seq 100); do
                PORT=$(sed -n 's/.*listening on .*:\([0-9][0-9]*\)$/\1/p' "$TMP/$name.err")
                [ -n "$PORT" ] && return 0
                kill -0 $SERVER 2>/dev/null || break
                sleep 0.05
        done
        cat "$TMP/$name.err"; return 1
}
# scrape NAME: GET /metrics into $TMP/NAME.prom, itself a check: curl exits 0 and the server
# answers 200 with a body (a dead or failing server is a failure, never an empty file that the
# checks of what is absent would pass on). Returns non-zero then: those checks sit behind it.
scrape() {
        local code rc
        date +%s.%N >"$TMP/$1.t"
        code=$(curl -s --max-time 5 -o "$TMP/$1.prom" -w '%{http_code}' "http://127.0.0.1:$PORT/metrics"); rc=$?
        if [ "$rc" = 0 ] && [ "$code" = 200 ] && [ -s "$TMP/$1.prom" ]; then ok "scrape $1: GET /metrics answers 200"; return 0; fi
        not_ok "scrape $1: curl exit $rc, HTTP ${code:-none}"; return 1
}
# val FILE METRIC [LABEL-TEXT...]: the value of the first sample of METRIC whose line has every LABEL-TEXT
val() {
        local f=$1 m=$2; shift 2
        awk -v m="$m{" -v want="$*" 'BEGIN { n = split(want, w, " ") }
                index($0, m) == 1 { for (i = 1; i <= n; i++) if (!index($0, w[i])) next; print $NF; exit }' "$f"
}
between() { awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v != "" && v >= lo && v <= hi) }'; }
promcheck() { # NAME DESC
        if promtool check metrics <"$TMP/$1.prom" >"$TMP/$1.promtool" 2>&1; then ok "$2: promtool check metrics passes"
        else not_ok "$2: promtool check metrics: $(head -5 "$TMP/$1.promtool")"; fi
}

# --- usage errors --------------------------------------------------------------------------
"$GS" metrics --listen 9394 >/dev/null 2>"$TMP/e1"; rc=$?
holds "--listen 9394 is a usage error (exit $rc) that shows the form" \
        '[ $rc = 2 ] && grep -q "invalid --listen .9394.: ADDR:PORT, e.g. :9394" "$TMP/e1"'
"$GS" metrics --listen '127.0.0.1:70000' >/dev/null 2>"$TMP/e2"; rc=$?
holds "--listen with port 70000 is refused" '[ $rc = 2 ] && grep -q "port must be a number 0..65535" "$TMP/e2"'
"$GS" metrics --region relative/path >/dev/null 2>"$TMP/e3"; rc=$?
holds "--region must be absolute" '[ $rc = 2 ] && grep -q "must be an absolute path" "$TMP/e3"'
"$GS" metrics --help | grep -q -- "--listen=ADDR:PORT" && ok "metrics --help" || not_ok "metrics --help"

# --- a container's slice directory (the hook's layout), its owner a live process -------------
sleep 600 &
OWNER=$!; pids+=($OWNER)
mkdir "$TMP/slices/ctr-a"
echo "$OWNER $(awk '{ sub(/.*\) /, ""); print $20 }' /proc/$OWNER/stat)" >"$TMP/slices/ctr-a/owner"
printf '{"namespace":"team-a","pod":"trainer-0","container":"main"}' >"$TMP/slices/ctr-a/labels"
"$TOOL" synth "$TMP/slices/ctr-a/usage" 1 2 77
# ... and one whose region is damaged (its owner: this script)
mkdir "$TMP/slices/ctr-bad"
echo "$$ $(awk '{ sub(/.*\) /, ""); print $20 }' /proc/$$/stat)" >"$TMP/slices/ctr-bad/owner"
"$TOOL" corrupt version "$TMP/slices/ctr-bad/usage"

# --- launch waits: a version 3 region (2 devices, priority normal: synth.h's counts) and a version 2
# one (an older interposer's: no counters), as extra regions
"$TOOL" synth "$TMP/exec-synth3" 2 1 4
"$TOOL" synth2 "$TMP/exec-synth2" 1 1 5

# --- the corpus, given as extra regions --------------------------------------------------------
CORPUS="truncated huge magic version layout hwm ndev0 ndev99 uuid share"
for k in $CORPUS; do "$TOOL" corrupt "$k" "$TMP/corpus/$k"; done
mkfifo "$TMP/corpus/fifo"
"$TOOL" synth "$TMP/target" 1 1 5
ln -s "$TMP/target" "$TMP/corpus/symlink"
mkdir "$TMP/corpus/directory"
: >"$TMP/corpus/zero-length"
REGS=(--region "$TMP/exec-*" --region "$TMP/corpus/*")

start_server srv "${ROOTARG[@]}" metrics --listen 127.0.0.1:0 --regions-dir "$TMP/slices" "${REGS[@]}" \
        "${NVMLARG[@]}" --node node-1 || { not_ok "the server starts"; finish; }
ok "the server listens on a free port ($PORT)"

# --- workloads ---------------------------------------------------------------------------------
wl "$GS" exec --memory 1Gi --region "$TMP/exec-mem" -- env LD_LIBRARY_PATH="$FAKE" "$MEMPROBE" hold 100 25 >"$TMP/w1.out" 2>&1 &
W1=$!; pids+=($W1)
wl "$GS" exec --compute 30 --memory 2Gi --region "$TMP/exec-c30" -- env LD_LIBRARY_PATH="$FAKE" "$CPROBE" kernel 9 500 >"$TMP/w2.out" 2>&1 &
W2=$!; pids+=($W2)
wl "$GS" exec --compute 60 --region "$TMP/exec-c60" -- env LD_LIBRARY_PATH="$FAKE" CUDA_VISIBLE_DEVICES=1 "$CPROBE" kernel 9 500 >"$TMP/w3.out" 2>&1 &
W3=$!; pids+=($W3)
for _ in $(seq 100); do grep -q "^held" "$TMP/w1.out" 2>/dev/null && break; sleep 0.1; done
grep -q "^held 100" "$TMP/w1.out" && ok "memory workload holds 100 MiB" || { not_ok "memory workload"; cat "$TMP/w1.out"; }
sleep 3 # the compute workloads run through more than one window
# (everything below reads these two scrapes: without them there is nothing to check)
scrape s1 || finish
# 200 more launches on the version 3 region's device 0, each waiting 3 ms, as the interposer counts them
"$TOOL" launch "$TMP/exec-synth3" 0 200 3000000 || not_ok "region_tool launch"
sleep 2.5
scrape s2 || finish
promcheck s1 "scrape with 3 workloads, a labelled container and the corpus"
promcheck s2 "the next scrape (launch-wait histograms grown)"

# memory slice: exactly what it allocated, its quota, the driver's overhead on top
M="container_id=\"$TMP/exec-mem\""
a=$(val "$TMP/s2.prom" gpuslice_slice_memory_allocated_bytes "$M" "UUID=\"$GPU0\"")
holds "memory slice: allocated = the workload's 100 MiB ($a)" '[ "$a" = 104857600 ]'
holds "memory slice: quota 1 GiB" '[ "$(val "$TMP/s2.prom" gpuslice_slice_memory_limit_bytes "$M" "UUID=\"$GPU0\"")" = 1073741824 ]'
u=$(val "$TMP/s2.prom" gpuslice_slice_memory_used_bytes "$M" "UUID=\"$GPU0\"")
o=$(val "$TMP/s2.prom" gpuslice_slice_memory_overhead_bytes "$M" "UUID=\"$GPU0\"")
holds "memory slice: used ($u) = allocated + the driver's overhead ($o), the context included" \
        '[ -n "$u" ] && [ "$u" = $((a + o)) ] && [ "$o" -gt 0 ]'
holds "memory slice: one process" '[ "$(val "$TMP/s2.prom" gpuslice_slice_processes "$M" "UUID=\"$GPU0\"")" = 1 ]'
holds "memory slice: HAMi's hami_vgpu_memory_used_bytes is the same number" \
        '[ "$(val "$TMP/s2.prom" hami_vgpu_memory_used_bytes "$M" "device_uuid=\"$GPU0\"")" = "$u" ]'
holds "memory slice: HAMi's limit and buffer" \
        '[ "$(val "$TMP/s2.prom" hami_vgpu_memory_limit_bytes "$M")" = 1073741824 ] && [ "$(val "$TMP/s2.prom" hami_vgpu_memory_buffer_bytes "$M")" = "$a" ]'
holds "memory slice: no compute figures (no compute limit: GPU time is not measured)" \
        '[ -z "$(val "$TMP/s2.prom" gpuslice_slice_compute_used_ratio "$M")" ]'

# compute slices: the limit, and the GPU time they used near their share
for c in "c30 0.3 $GPU0 0.20 0.40" "c60 0.6 $GPU1 0.45 0.75"; do
        read -r name want uuid lo hi <<<"$c"
        C="container_id=\"$TMP/exec-$name\""
        lim=$(val "$TMP/s2.prom" gpuslice_slice_compute_limit_ratio "$C" "UUID=\"$uuid\"")
        holds "compute slice $name: limit $lim (want $want) on $uuid" '[ "$lim" = "$want" ]'
        r=$(val "$TMP/s2.prom" gpuslice_slice_compute_used_ratio "$C")
        holds "compute slice $name: used $r of the GPU over the last window (want $lo..$hi)" 'between "$r" $lo $hi'
        b1=$(val "$TMP/s1.prom" gpuslice_slice_compute_busy_seconds_total "$C")
        b2=$(val "$TMP/s2.prom" gpuslice_slice_compute_busy_seconds_total "$C")
        rate=$(awk -v a="$b1" -v b="$b2" -v t1="$(cat "$TMP/s1.t")" -v t2="$(cat "$TMP/s2.t")" \
                'BEGIN { if (a != "" && b != "") printf "%.3f", (b - a) / (t2 - t1) }')
        holds "compute slice $name: its busy-seconds counter grows at $rate per second between two scrapes (want $lo..$hi)" \
                'between "$rate" $lo $hi'
        h=$(val "$TMP/s2.prom" hami_container_device_utilization_ratio "$C")
        same=$(awk -v h="$h" -v r="$r" 'BEGIN { d = h - r * 100; if (d < 0) d = -d; print (h != "" && d < 1e-6) ? "yes" : "no" }')
        holds "compute slice $name: HAMi's utilization is ours in percent ($h)" '[ "$same" = yes ]'
        lk=$(val "$TMP/s2.prom" gpuslice_slice_last_kernel_timestamp_seconds "$C")
        now=$(date +%s)
        holds "compute slice $name: a kernel launched within the last 5 s ($lk)" 'between "$lk" $((now - 5)) $((now + 1))'
done
holds "compute slice c30: its quota 2 GiB" '[ "$(val "$TMP/s2.prom" gpuslice_slice_memory_limit_bytes "container_id=\"$TMP/exec-c30\"")" = 2147483648 ]'

# launch waits, priority, mechanism (the synthetic regions)
W3="container_id=\"$TMP/exec-synth3\""
D0="UUID=\"GPU-5e5e5e5e-0000-4000-8000-000000040000\""
wb() { val "$TMP/$1.prom" gpuslice_slice_launch_wait_seconds_bucket "$W3" "$D0" "le=\"$2\""; }
holds "waits v3: the histogram's buckets are cumulative, le in seconds (994 <= 50 us, 999 <= 2.5 ms and <= 1 s, 1000 in all)" \
        '[ "$(wb s1 5e-05) $(wb s1 0.001) $(wb s1 0.0025) $(wb s1 1) $(wb s1 +Inf)" = "994 994 999 999 1000" ]'
holds "waits v3: _count 1000 launches, _sum 2.0103 s" \
        '[ "$(val "$TMP/s1.prom" gpuslice_slice_launch_wait_seconds_count "$W3" "$D0")" = 1000 ] && [ "$(val "$TMP/s1.prom" gpuslice_slice_launch_wait_seconds_sum "$W3" "$D0")" = 2.0103 ]'
holds "waits v3: 200 launches of 3 ms later, le=0.005 grew by 200, le=0.0025 did not; _count 1200, _sum 2.6103 s" \
        '[ "$(wb s2 0.0025) $(wb s2 0.005) $(wb s2 +Inf)" = "999 1199 1200" ] && [ "$(val "$TMP/s2.prom" gpuslice_slice_launch_wait_seconds_count "$W3" "$D0")" = 1200 ] && [ "$(val "$TMP/s2.prom" gpuslice_slice_launch_wait_seconds_sum "$W3" "$D0")" = 2.6103 ]'
holds "waits v3: one HELP and one TYPE histogram line for the family" \
        '[ "$(grep -c "^# TYPE gpuslice_slice_launch_wait_seconds histogram$" "$TMP/s2.prom")" = 1 ]'
holds "waits v3: the slice's priority on gpuslice_slice_info (normal)" \
        'grep -q "^gpuslice_slice_info{$W3,region=\"$TMP/exec-synth3\",compute_mode=\"cap\",priority=\"normal\"} 1$" "$TMP/s2.prom"'
holds "waits v3: the mechanism per device (time on 0, mps on 1)" \
        '[ -n "$(val "$TMP/s2.prom" gpuslice_slice_compute_mechanism "$W3" "$D0" "mechanism=\"time\"")" ] && [ -n "$(val "$TMP/s2.prom" gpuslice_slice_compute_mechanism "$W3" "vdevice=\"1\"" "mechanism=\"mps\"")" ]'
W2="container_id=\"$TMP/exec-synth2\""
holds "waits v2: an older interposer's region is shown (its memory) without a histogram, mechanism or priority" \
        '[ "$(val "$TMP/s2.prom" gpuslice_slice_memory_allocated_bytes "$W2")" = 1048576 ] && ! grep -q "^gpuslice_slice_launch_wait_seconds_[a-z]*{$W2" "$TMP/s2.prom" && ! grep -q "^gpuslice_slice_compute_mechanism{$W2" "$TMP/s2.prom" && grep -q "^gpuslice_slice_info{$W2,region=\"$TMP/exec-synth2\",compute_mode=\"cap\"} 1$" "$TMP/s2.prom"'

# the labelled container (the hook's directory layout)
holds "container slice: gpuslice_slice_info carries namespace, pod and container" \
        'grep -q "^gpuslice_slice_info{container_id=\"ctr-a\",namespace=\"team-a\",pod=\"trainer-0\",container=\"main\"," "$TMP/s2.prom"'
holds "container slice: HAMi's labels (namespace, pod, container, vdevice_index, device_uuid)" \
        'grep -q "^hami_vgpu_memory_used_bytes{namespace=\"team-a\",pod=\"trainer-0\",container=\"main\",vdevice_index=\"0\",device_uuid=\"GPU-5e5e5e5e-0000-4000-8000-000000770000\",container_id=\"ctr-a\"} 137363456$" "$TMP/s2.prom"'

# per GPU, from the simulated NVML (2gpu.conf: GPU 0 35 % busy, 420 MiB reserved + 1.5 GiB of processes)
if [ $NVML = 1 ]; then
        holds "GPU 0: memory used 1956 MiB (NVML)" '[ "$(val "$TMP/s2.prom" gpuslice_gpu_memory_used_bytes "gpu=\"0\"")" = 2051014656 ]'
        holds "GPU 0: memory total 40 GiB" '[ "$(val "$TMP/s2.prom" gpuslice_gpu_memory_total_bytes "gpu=\"0\"" "UUID=\"$GPU0\"")" = 42949672960 ]'
        holds "GPU 0: utilization 0.35; HAMi's 35" \
                '[ "$(val "$TMP/s2.prom" gpuslice_gpu_utilization_ratio "gpu=\"0\"")" = 0.35 ] && [ "$(val "$TMP/s2.prom" hami_host_gpu_utilization_ratio "node=\"node-1\"" "device_index=\"0\"")" = 35 ]'
        holds "slices on GPU 1 carry gpu=\"1\" (UUID resolved through NVML)" \
                '[ -n "$(val "$TMP/s2.prom" gpuslice_slice_compute_limit_ratio "container_id=\"$TMP/exec-c60\"" "gpu=\"1\"")" ]'
        holds "nvml up" 'grep -qx "gpuslice_nvml_up 1" "$TMP/s2.prom"'
fi

# the corpus: each skipped with one log line, counted, the server still answering
nbad=0
for k in $CORPUS fifo symlink directory; do
        n=$(grep -c "usage region $TMP/corpus/$k: .*(skipped)" "$TMP/srv.err")
        holds "corpus $k: skipped with one log line ($(grep "usage region $TMP/corpus/$k:" "$TMP/srv.err" | sed 's/.*: //' | head -1))" '[ "$n" = 1 ]'
        nbad=$((nbad + 1))
done
holds "corpus zero-length: skipped as not written yet, one log line" \
        '[ "$(grep -c "usage region $TMP/corpus/zero-length: empty: not initialized yet (skipped)" "$TMP/srv.err")" = 1 ]'
holds "a damaged region in a container's directory: skipped, logged once" \
        '[ "$(grep -c "usage region $TMP/slices/ctr-bad/usage: version 1" "$TMP/srv.err")" = 1 ]'
holds "gpuslice_regions_skipped counts them all ($((nbad + 1)))" 'grep -qx "gpuslice_regions_skipped $((nbad + 1))" "$TMP/s2.prom"'
holds "no corpus file shows up as a slice" '! grep -q "container_id=\"$TMP/corpus" "$TMP/s2.prom"'
curl -sf --max-time 5 "http://127.0.0.1:$PORT/healthz" | grep -qx ok && ok "/healthz answers ok" || not_ok "/healthz"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$PORT/metrics")
holds "POST /metrics is 405" '[ "$code" = 405 ]'
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/nothing")
holds "an unknown path is 404" '[ "$code" = 404 ]'
ct=$(curl -sI "http://127.0.0.1:$PORT/metrics" | tr -d '\r' | sed -n 's/^Content-Type: //p')
holds "Content-Type is the exposition format's ($ct)" '[ "$ct" = "text/plain; version=0.0.4; charset=utf-8" ]'

# --- the memory workload ends: its slots are freed; its file removed: it vanishes --------------
wait $W1
scrape s3 && holds "memory slice after its process exited: 0 bytes, 0 processes" \
        '[ "$(val "$TMP/s3.prom" gpuslice_slice_memory_used_bytes "container_id=\"$TMP/exec-mem\"")" = 0 ] && [ "$(val "$TMP/s3.prom" gpuslice_slice_processes "container_id=\"$TMP/exec-mem\"")" = 0 ]'
rm -f "$TMP/exec-mem"
scrape s4 && holds "its region removed: the slice is gone from the output" '! grep -q "container_id=\"$TMP/exec-mem\"" "$TMP/s4.prom"'

# --- the container dies: its slice vanishes at once, its directory is swept ---------------------
kill $OWNER; wait $OWNER 2>/dev/null
scrape s5 && holds "a dead container's slice vanishes from the next scrape" '! grep -q "container_id=\"ctr-a\"" "$TMP/s5.prom"'
for _ in $(seq 50); do [ -e "$TMP/slices/ctr-a" ] || break; sleep 0.1; done
holds "... and its slice directory is removed" '[ ! -e "$TMP/slices/ctr-a" ]'
holds "... which is logged" 'grep -q "slice ctr-a: its container is gone" "$TMP/srv.err" && grep -q "removed 1 slice directory" "$TMP/srv.err"'
promcheck s5 "after the changes"

# --- logging is per file and change, not per scrape ---------------------------------------------
for _ in 1 2 3; do scrape s6; done
holds "more scrapes later the corpus is still logged once per file" \
        '[ "$(grep -c "usage region $TMP/corpus/magic:" "$TMP/srv.err")" = 1 ]'
wait $W2 $W3
kill $SERVER; wait $SERVER; rc=$?
holds "SIGTERM stops the server cleanly (exit $rc)" '[ $rc = 0 ] && grep -q "stopping" "$TMP/srv.err"'

# --- the same port twice: a clear error -------------------------------------------------------------
start_server busy metrics --listen 127.0.0.1:0 --regions-dir "$TMP/slices" --no-nvml || not_ok "server 2"
"$GS" metrics --listen "127.0.0.1:$PORT" --regions-dir "$TMP/slices" --no-nvml >/dev/null 2>"$TMP/e4"; rc=$?
holds "a port in use: exit 1, 'cannot listen on 127.0.0.1:$PORT: Address already in use'" \
        '[ $rc = 1 ] && grep -q "metrics error: cannot listen on 127.0.0.1:$PORT: Address already in use" "$TMP/e4"'
kill $SERVER; wait $SERVER

# --- a hung NVML never holds a scrape -----------------------------------------------------------------
if [ $NVML = 1 ]; then
        { cat "$TMP/drv/etc/fakegpu/gpus.conf"; echo "fault init hang"; } >"$TMP/hang.conf"
        "$SRC/tests/fakegpu/mkroot.sh" --build "$BUILD" "$TMP/hang.conf" "$TMP/hang" >/dev/null 2>&1 || not_ok "mkroot hang"
        start_server hang --root "$TMP/hang" --nvml-timeout 1 metrics --listen 127.0.0.1:0 --regions-dir "$TMP/slices" \
                --nvml-interval 1 || not_ok "server with a hung NVML"
        # each scrape must be answered (curl exits 0, HTTP 200): a dead server answers fast too
        worst=0 answered=0
        for i in 1 2 3 4 5 6; do
                out=$(curl -s -o "$TMP/h.prom" -w '%{http_code} %{time_total}' --max-time 5 "http://127.0.0.1:$PORT/metrics")
                rc=$?
                read -r code t <<<"$out"
                [ $rc = 0 ] && [ "$code" = 200 ] && [ -s "$TMP/h.prom" ] && answered=$((answered + 1))
                worst=$(awk -v a="$worst" -v b="$t" 'BEGIN { print (b > a) ? b : a }')
                sleep 0.4
        done
        holds "hung NVML: every scrape answered ($answered of 6, HTTP 200), the slowest in ${worst}s, within NVML's 1 s deadline" \
                '[ $answered = 6 ] && between "$worst" 0 0.99'
        holds "hung NVML: gpuslice_nvml_up 0, no per-GPU sample" \
                'grep -qx "gpuslice_nvml_up 0" "$TMP/h.prom" && ! grep -q "^gpuslice_gpu_memory_used_bytes" "$TMP/h.prom"'
        holds "hung NVML: said once in the log" '[ "$(grep -c "NVML: nvml helper timed out" "$TMP/hang.err")" = 1 ]'
        kill $SERVER; wait $SERVER
        # --once waits for NVML's answer, but not for ever: a few seconds of asking again
        start=$(date +%s%N)
        "$GS" --root "$TMP/hang" --nvml-timeout 1 metrics --once --regions-dir "$TMP/slices" --nvml-interval 1 \
                >"$TMP/hang-once.prom" 2>"$TMP/hang-once.err"
        rc=$? ms=$(( ($(date +%s%N) - start) / 1000000 ))
        holds "hung NVML, --once: exit 0 in ${ms} ms (under 8 s), gpuslice_nvml_up 0" \
                '[ $rc = 0 ] && [ $ms -lt 8000 ] && grep -qx "gpuslice_nvml_up 0" "$TMP/hang-once.prom"'
fi

# --- --once ---------------------------------------------------------------------------------------------
wl "$GS" exec --compute 30 --region "$TMP/exec-once" -- env LD_LIBRARY_PATH="$FAKE" "$CPROBE" kernel 4 500 >/dev/null 2>&1 &
pids+=($!)
sleep 1
"$GS" "${ROOTARG[@]}" metrics --once --regions-dir "$TMP/slices" --region "$TMP/exec-once" "${NVMLARG[@]}" >"$TMP/once.prom" 2>"$TMP/once.err"
rc=$?
promcheck once "--once"
r=$(val "$TMP/once.prom" gpuslice_slice_compute_used_ratio "container_id=\"$TMP/exec-once\"")
holds "--once: exit 0, one window measured ($r, want 0.2..0.4)" '[ $rc = 0 ] && between "$r" 0.20 0.40'
[ $NVML = 1 ] && holds "--once: NVML's answer in the one scrape (gpuslice_nvml_up 1, per-GPU samples)" \
        'grep -qx "gpuslice_nvml_up 1" "$TMP/once.prom" && grep -q "^gpuslice_gpu_memory_used_bytes{.*} " "$TMP/once.prom"'
wait
finish
