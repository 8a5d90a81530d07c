#!/usr/bin/env bash
# bench/metrics.sh [BUILD] [SLICES] [SECONDS]: the cost of `gpuslice metrics` with SLICES (100)
# containers' slices on the host. Needs no GPU: each slice is a directory as the hook makes it
# (owner = a live process, labels, a usage region of 2 devices and 4 live processes written by
# the region tool, tests/observe/synth.h), and NVML is left out (--no-nvml: its answer is cached
# by a background thread and costs a scrape nothing).
#   1. one scrape: 50 scrapes one after another (after 5 to warm up), each timed by curl
#      (time_total: connect, request, scan of every region, render, transfer; the body goes to
#      /dev/null, as a scraper keeps it in memory). Target: median <= 5 ms. Then 50 more, whose
#      bodies tell how long the server's scan of the regions took (gpuslice_collect_duration_seconds).
#   2. load: 10 clients, each scraping 5 times a second over a kept-alive connection (curl
#      --rate), for SECONDS (10): 50 scrapes/s. Target: every scrape answered 200, none failed.
#   3. if wrk is installed: how many scrapes/s 10 connections get at most (information only).
set -uo pipefail
BUILD=${1:-build} N=${2:-100} SECS=${3:-10}
cd "$(dirname "$0")/.."
GS=$BUILD/gpuslice TOOL=$BUILD/tests/region_tool
for f in "$GS" "$TOOL"; do [ -x "$f" ] || { echo "bench: build first (make build)"; exit 1; }; done
command -v curl >/dev/null || { echo "bench: curl is needed"; exit 1; }
W=$(mktemp -d /tmp/gs-bench-metrics.XXXXXX)
pids=()
trap 'for p in "${pids[@]+"${pids[@]}"}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$W"' EXIT

sleep 3600 &
owner=$!; pids+=($owner)
start=$(awk '{ sub(/.*\) /, ""); print $20 }' /proc/$owner/stat)
mkdir -p "$W/slices"
for i in $(seq 1 "$N"); do
        d=$W/slices/ctr-$(printf %04d "$i")
        mkdir "$d"
        echo "$owner $start" >"$d/owner"
        printf '{"namespace":"bench","pod":"pod-%d","container":"main"}' "$i" >"$d/labels"
        "$TOOL" synth "$d/usage" 2 4 "$i" || exit 1
done

"$GS" metrics --listen 127.0.0.1:0 --regions-dir "$W/slices" --no-nvml 2>"$W/server.err" &
pids+=($!)
for _ in $(seq 100); do
        port=$(sed -n 's/.*listening on .*:\([0-9][0-9]*\)$/\1/p' "$W/server.err"); [ -n "$port" ] && break; sleep 0.05
done
[ -n "${port:-}" ] || { cat "$W/server.err"; exit 1; }
url=http://127.0.0.1:$port/metrics
pct() { # P: the P-th percentile of the numbers on stdin (nearest rank), in ms with 3 decimals
        sort -g | awk -v p="$1" '{ a[NR] = $1 } END { r = int((p / 100) * NR + 0.999999); if (r < 1) r = 1; printf "%.3f", a[r] * 1000 }'
}
median() { pct 50; }

echo "== gpuslice metrics, $N slices (2 devices, 4 processes each), $(date -u +%F), $(nproc) CPUs, $(uname -r)"
curl -sf "$url" -o "$W/one.prom" || { echo "scrape failed"; cat "$W/server.err"; exit 1; }
echo "   one scrape: $(wc -c <"$W/one.prom") bytes, $(grep -vc '^#' "$W/one.prom") samples, $(grep -c '^gpuslice_slice_info' "$W/one.prom") slices"
for _ in 1 2 3 4 5; do curl -sf -o /dev/null "$url"; done
: >"$W/seq.t"; : >"$W/seq.scan"
for _ in $(seq 50); do curl -sf -o /dev/null -w '%{time_total}\n' "$url" >>"$W/seq.t"; done
for _ in $(seq 50); do
        curl -sf -o "$W/s.prom" "$url"
        sed -n 's/^gpuslice_collect_duration_seconds //p' "$W/s.prom" >>"$W/seq.scan"
done
m=$(median <"$W/seq.t")
echo "1. 50 scrapes in a row:  median $m ms (p90 $(pct 90 <"$W/seq.t"), max $(pct 100 <"$W/seq.t")) per scrape, as curl sees it;"
echo "                          the server's scan of $N regions: median $(median <"$W/seq.scan") ms (max $(pct 100 <"$W/seq.scan"))"
awk -v m="$m" 'BEGIN { exit !(m <= 5) }' && echo "   target <= 5 ms: met" || echo "   target <= 5 ms: NOT MET"

per=$((SECS * 5))
t0=$(date +%s.%N)
clients=()
for c in $(seq 10); do
        curl -s --rate 5/s -o /dev/null -w '%{http_code} %{time_total}\n' "$url?c=$c&n=[1-$per]" >"$W/client$c.out" 2>"$W/client$c.err" &
        clients+=($!)
done
wait "${clients[@]}"
t1=$(date +%s.%N)
cat "$W"/client*.out >"$W/load.out"
total=$(wc -l <"$W/load.out") good=$(grep -c '^200 ' "$W/load.out") bad=$((10 * per - good))
rate=$(awk -v n="$total" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", n / (b - a) }')
awk '{ print $2 }' "$W/load.out" >"$W/load.t"
echo "2. 10 clients x 5 scrapes/s for ${SECS} s: $good of $((10 * per)) answered 200, $bad failed; $rate scrapes/s;"
echo "   latency median $(median <"$W/load.t") ms, p99 $(pct 99 <"$W/load.t") ms, max $(pct 100 <"$W/load.t") ms"
[ "$bad" = 0 ] && echo "   target 50 scrapes/s, no error: met" || echo "   target 50 scrapes/s, no error: NOT MET"

if command -v wrk >/dev/null; then
        echo "3. wrk, 10 connections, 5 s, as fast as they go:"
        wrk -t 2 -c 10 -d 5s "$url" 2>&1 | grep -E 'Requests/sec|Latency|Non-2xx|Socket errors|requests in' | sed 's/^/   /'
fi
[ "$bad" = 0 ] && awk -v m="$m" 'BEGIN { exit !(m <= 5) }'
