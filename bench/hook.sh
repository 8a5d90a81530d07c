#!/usr/bin/env bash
# OCI hook latency: what `gpuslice hook prestart` costs on top of the configure it runs.
#   bench/hook.sh BUILD [ROUNDS=20] [DRIVER_ROOT=/]
# Each round starts two fresh containers (unshare'd processes with their own rootfs copy,
# bench/lib.sh) and times, one right after the other (the order alternates every round):
#   hook       gpuslice --root DRV hook --config W/config.toml prestart <STATE
#              STATE is the OCI state runc hands a prestart hook (ociVersion, id, status, pid,
#              bundle); the bundle's config.json has root.path = the container's rootfs and
#              process.env NVIDIA_VISIBLE_DEVICES=0, NVIDIA_DRIVER_CAPABILITIES=compute,utility
#   configure  gpuslice --root DRV configure --pid P --compute --utility --device 0 ROOTFS
# Both do the same work (mounts, device cgroup, ldconfig). One warm-up round is not counted.
# Prints both medians, the median of the per-round differences hook - configure with a
# distribution-free 95% CI, and the ratio of the medians. Target: the hook adds <= 2 ms.
# Exits non-zero if any run failed. Without a GPU, pass a fake driver root as DRIVER_ROOT
# (tests/fakegpu/mkroot.sh --build BUILD tests/fakegpu/configs/2gpu.conf DIR).
set -uo pipefail
BUILD=${1:-build} N=${2:-20} DRV=${3:-/}
cd "$(dirname "$0")/.." || exit 1
case $BUILD in /*) GS=$BUILD/gpuslice ;; *) GS=$PWD/$BUILD/gpuslice ;; esac
[ -x "$GS" ] || { echo "bench/hook.sh: no $GS (build first)"; exit 1; }
. bench/lib.sh
mkdir -p "$W/regions"
# Host defaults of the hook: only the slice directory moves (into W); the rest as installed.
# The hook never uses its own $PATH for the driver's binaries: give it this shell's, as configure uses.
printf '[driver]\npath = "%s"\n[slice]\nregions-dir = "%s"\n' "$PATH" "$W/regions" >"$W/config.toml"
: >"$W/hook.us"; : >"$W/conf.us"; : >"$W/diff.us"; fails=0

bundle() { # I: bundle W/bI for container hI, and the state a runtime would send
        mkdir -p "$W/b$1"
        printf '{"ociVersion":"1.0.2","root":{"path":"%s","readonly":false},"process":{"cwd":"/","args":["/bin/sh"],%s}}\n' \
                "$W/rh$1" '"env":["PATH=/usr/sbin:/usr/bin:/sbin:/bin","NVIDIA_VISIBLE_DEVICES=0","NVIDIA_DRIVER_CAPABILITIES=compute,utility"]' \
                >"$W/b$1/config.json"
        printf '{"ociVersion":"1.0.2","id":"gs-bench-hook-%s-%s","status":"creating","pid":%s,"bundle":"%s"}\n' \
                "$$" "$1" "$(pid_of "h$1")" "$W/b$1" >"$W/state$1.json"
}
# t_hook I, t_conf I: the microseconds one run took (bash's clock: no fork around it), or FAIL
t_hook() {
        local a b
        a=${EPOCHREALTIME//[.,]/}
        if "$GS" --root "$DRV" hook --config "$W/config.toml" prestart <"$W/state$1.json" >/dev/null 2>>"$W/hook.err"; then
                b=${EPOCHREALTIME//[.,]/}; echo $((b - a))
        else echo FAIL; fi
}
t_conf() {
        local a b p
        p=$(pid_of "c$1")
        a=${EPOCHREALTIME//[.,]/}
        if "$GS" --root "$DRV" configure --pid "$p" --compute --utility --device 0 "$W/rc$1" >/dev/null 2>>"$W/conf.err"; then
                b=${EPOCHREALTIME//[.,]/}; echo $((b - a))
        else echo FAIL; fi
}
for i in $(seq 0 "$N"); do # round 0: warm-up
        { start "h$i" && start "c$i"; } || { echo "container of round $i did not start"; exit 1; }
        bundle "$i"
        if [ $((i % 2)) = 1 ]; then h=$(t_hook "$i"); c=$(t_conf "$i"); else c=$(t_conf "$i"); h=$(t_hook "$i"); fi
        kill "$(pid_of "h$i")" "$(pid_of "c$i")" 2>/dev/null; rm -f "$W/h$i.pid" "$W/c$i.pid"
        [ "$i" = 0 ] && continue
        if [ "$h" = FAIL ] || [ "$c" = FAIL ]; then fails=$((fails + 1)); continue; fi
        echo "$h" >>"$W/hook.us"; echo "$c" >>"$W/conf.us"; echo $((h - c)) >>"$W/diff.us"
done
echo "OCI hook vs configure (compute+utility, 1 GPU, ldconfig included), $N rounds of two fresh containers," \
        "order alternating, driver root $DRV:"
python3 - "$W/hook.us" "$W/conf.us" "$W/diff.us" <<'PY'
import math, sys
h, c, d = ([int(x) / 1000 for x in open(p).read().split()] for p in sys.argv[1:4])
def median(v):
    v = sorted(v); n = len(v)
    return float("nan") if n == 0 else v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
def ci(v):  # distribution-free 95% CI of the median (order statistics of the binomial)
    v = sorted(v); n = len(v)
    if n == 0:
        return float("nan"), float("nan")
    lo = max(0, int((n - 1.96 * math.sqrt(n)) / 2))
    return v[lo], v[n - 1 - lo]
mh, mc, md = median(h), median(c), median(d)
lo, hi = ci(d)
print("  gpuslice hook prestart (state on stdin, config.json): median %.2f ms, max %.2f ms" % (mh, max(h or [0])))
print("  gpuslice configure --pid P --compute --utility --device 0:  median %.2f ms, max %.2f ms" % (mc, max(c or [0])))
print("  paired difference hook - configure: median %+.2f ms [95%% CI %+.2f, %+.2f], n=%d" % (md, lo, hi, len(d)))
print("  ratio of the medians hook/configure: %.3f" % (mh / mc if mc else float("nan")))
print("  target: the hook adds <= 2 ms: %s" % ("met" if md <= 2 else "NOT met"))
PY
echo "  failures: $fails"
if [ "$fails" -gt 0 ]; then
        echo "  first errors:"; cat "$W/hook.err" "$W/conf.err" | head -5 | sed 's/^/    /'
fi
[ "$fails" -eq 0 ]
