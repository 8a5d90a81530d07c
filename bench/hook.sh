#!/usr/bin/env bash
# OCI hook latency: what the hook costs on top of the configure it runs, for the lean hook the
# hook definitions name (gpuslice-hook) and for the whole gpuslice (`gpuslice hook`), in one run.
#   bench/hook.sh BUILD [ROUNDS=20] [DRIVER_ROOT=/]
# Each round starts three fresh containers (unshare'd processes with their own rootfs copy,
# bench/lib.sh) and times, one right after the other (the order rotates through all six every
# six rounds):
#   lean       gpuslice-hook --config W/config.toml prestart <STATE
#   old        gpuslice hook --config W/config.toml prestart <STATE
#              STATE is the OCI state runc hands a prestart hook (ociVersion, id, status, pid,
#              bundle); the bundle's config.json has root.path = the container's rootfs and
#              process.env NVIDIA_VISIBLE_DEVICES=0, NVIDIA_DRIVER_CAPABILITIES=compute,utility;
#              the config names the driver root (the lean hook takes no global options)
#   configure  gpuslice --root DRV configure --pid P --compute --utility --device 0 ROOTFS
# All three do the same work (mounts, device cgroup, ldconfig). One warm-up round is not counted.
# Prints the medians, the median of the per-round differences (each hook - configure, lean - old)
# with a distribution-free 95% CI, and the ratios of the medians (lean/old, each hook/configure).
# Then the start-up alone: `gpuslice-hook --help` against `gpuslice hook --help` (10 x ROUNDS
# pairs). Target: the hook adds <= 2 ms. Exits non-zero if any run failed. Without a GPU, pass a fake
# driver root as DRIVER_ROOT (tests/fakegpu/mkroot.sh --build BUILD tests/fakegpu/configs/2gpu.conf DIR).
set -uo pipefail
BUILD=${1:-build} N=${2:-20} DRV=${3:-/}
cd "$(dirname "$0")/.." || exit 1
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
GS=$BUILD/gpuslice LEAN=$BUILD/gpuslice-hook
for f in "$GS" "$LEAN"; do [ -x "$f" ] || { echo "bench/hook.sh: no $f (build first)"; exit 1; }; done
. bench/lib.sh
mkdir -p "$W/regions"
# Host defaults of the hooks: the driver root, and the slice directory moved into W; the rest as
# installed. The hook never uses its own $PATH for the driver's binaries: give it this shell's,
# as configure uses.
printf '[driver]\nroot = "%s"\npath = "%s"\n[slice]\nregions-dir = "%s"\n' "$DRV" "$PATH" "$W/regions" >"$W/config.toml"
for k in lean old conf; do : >"$W/$k.us"; : >"$W/$k.err"; done
: >"$W/dlean.us"; : >"$W/dold.us"; : >"$W/dlo.us"; fails=0

bundle() { # NAME: bundle W/bNAME for container NAME, and the state a runtime would send
        mkdir -p "$W/b$1"
        printf '{"ociVersion":"1.0.2","root":{"path":"%s","readonly":false},"process":{"cwd":"/","args":["/bin/sh"],%s}}\n' \
                "$W/r$1" '"env":["PATH=/usr/sbin:/usr/bin:/sbin:/bin","NVIDIA_VISIBLE_DEVICES=0","NVIDIA_DRIVER_CAPABILITIES=compute,utility"]' \
                >"$W/b$1/config.json"
        printf '{"ociVersion":"1.0.2","id":"gs-bench-hook-%s-%s","status":"creating","pid":%s,"bundle":"%s"}\n' \
                "$$" "$1" "$(pid_of "$1")" "$W/b$1" >"$W/state$1.json"
}
# t KIND I: the microseconds one run of KIND (lean, old, conf) took in round I's container (bash's
# clock: no fork around it), or FAIL
t() {
        local a b c=$1$2 rc
        a=${EPOCHREALTIME//[.,]/}
        case $1 in
        lean) "$LEAN" --config "$W/config.toml" prestart <"$W/state$c.json" >/dev/null 2>>"$W/lean.err" ;;
        old) "$GS" hook --config "$W/config.toml" prestart <"$W/state$c.json" >/dev/null 2>>"$W/old.err" ;;
        conf) "$GS" --root "$DRV" configure --pid "$(pid_of "$c")" --compute --utility --device 0 "$W/r$c" >/dev/null 2>>"$W/conf.err" ;;
        esac
        rc=$?
        b=${EPOCHREALTIME//[.,]/}
        if [ "$rc" = 0 ]; then echo $((b - a)); else echo FAIL; fi
}
orders=("lean old conf" "old conf lean" "conf lean old" "lean conf old" "old lean conf" "conf old lean")
for i in $(seq 0 "$N"); do # round 0: warm-up
        declare -A us=()
        for k in lean old conf; do
                start "$k$i" || { echo "container $k$i did not start"; exit 1; }
                bundle "$k$i"
        done
        for k in ${orders[$((i % 6))]}; do us[$k]=$(t "$k" "$i"); done
        for k in lean old conf; do kill "$(pid_of "$k$i")" 2>/dev/null; rm -f "$W/$k$i.pid"; done
        [ "$i" = 0 ] && continue
        if [ "${us[lean]}" = FAIL ] || [ "${us[old]}" = FAIL ] || [ "${us[conf]}" = FAIL ]; then fails=$((fails + 1)); continue; fi
        for k in lean old conf; do echo "${us[$k]}" >>"$W/$k.us"; done
        echo $((us[lean] - us[conf])) >>"$W/dlean.us"; echo $((us[old] - us[conf])) >>"$W/dold.us"
        echo $((us[lean] - us[old])) >>"$W/dlo.us"
done
# The start-up alone (exec, the dynamic loader, the libraries' constructors): `--help` of each
# hook, the same text from the same code, 10 x ROUNDS pairs, order alternating.
: >"$W/slean.us"; : >"$W/sold.us"; : >"$W/dstart.us"
for i in $(seq 1 $((10 * N))); do
        for k in $( ((i % 2)) && echo "lean old" || echo "old lean"); do
                a=${EPOCHREALTIME//[.,]/}
                if [ "$k" = lean ]; then "$LEAN" --help >/dev/null; else "$GS" hook --help >/dev/null; fi
                b=${EPOCHREALTIME//[.,]/}
                printf -v "s_$k" '%s' $((b - a))
        done
        echo "$s_lean" >>"$W/slean.us"; echo "$s_old" >>"$W/sold.us"; echo $((s_lean - s_old)) >>"$W/dstart.us"
done
echo "OCI hook vs configure (compute+utility, 1 GPU, ldconfig included), $N rounds of three fresh containers," \
        "order rotating, driver root $DRV:"
python3 - "$W" <<'PY'
import math, sys
w = sys.argv[1]
v = {k: [int(x) / 1000 for x in open("%s/%s.us" % (w, k)).read().split()]
     for k in ("lean", "old", "conf", "dlean", "dold", "dlo", "slean", "sold", "dstart")}
def median(x):
    x = sorted(x); n = len(x)
    return float("nan") if n == 0 else x[n // 2] if n % 2 else (x[n // 2 - 1] + x[n // 2]) / 2
def ci(x):  # distribution-free 95% CI of the median (order statistics of the binomial)
    x = sorted(x); n = len(x)
    if n == 0:
        return float("nan"), float("nan")
    lo = max(0, int((n - 1.96 * math.sqrt(n)) / 2))
    return x[lo], x[n - 1 - lo]
m = {k: median(x) for k, x in v.items()}
ratio = lambda a, b: a / b if b else float("nan")
print("  gpuslice-hook prestart (the lean hook):                     median %.2f ms, max %.2f ms" % (m["lean"], max(v["lean"] or [0])))
print("  gpuslice hook prestart (the whole gpuslice):                median %.2f ms, max %.2f ms" % (m["old"], max(v["old"] or [0])))
print("  gpuslice configure --pid P --compute --utility --device 0:  median %.2f ms, max %.2f ms" % (m["conf"], max(v["conf"] or [0])))
for k, what in (("dlean", "gpuslice-hook - configure"), ("dold", "gpuslice hook - configure"), ("dlo", "gpuslice-hook - gpuslice hook")):
    lo, hi = ci(v[k])
    print("  paired difference %-30s median %+.2f ms [95%% CI %+.2f, %+.2f], n=%d" % (what + ":", m[k], lo, hi, len(v[k])))
print("  ratio of the medians gpuslice-hook/gpuslice hook: %.3f" % ratio(m["lean"], m["old"]))
print("  ratio of the medians hook/configure: gpuslice-hook %.3f, gpuslice hook %.3f" % (ratio(m["lean"], m["conf"]), ratio(m["old"], m["conf"])))
print("  target: the hook adds <= 2 ms: gpuslice-hook %s, gpuslice hook %s" %
      ("met" if m["dlean"] <= 2 else "NOT met", "met" if m["dold"] <= 2 else "NOT met"))
lo, hi = ci(v["dstart"])
print("start-up alone (--help, %d pairs, order alternating): gpuslice-hook median %.2f ms, gpuslice hook %.2f ms;"
      " paired difference %+.2f ms [95%% CI %+.2f, %+.2f]; ratio of the medians %.3f"
      % (len(v["dstart"]), m["slean"], m["sold"], m["dstart"], lo, hi, ratio(m["slean"], m["sold"])))
PY
echo "  failures: $fails"
if [ "$fails" -gt 0 ]; then
        echo "  first errors:"; cat "$W/lean.err" "$W/old.err" "$W/conf.err" | head -5 | sed 's/^/    /'
fi
[ "$fails" -eq 0 ]
