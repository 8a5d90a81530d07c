#!/usr/bin/env bash
# What the runtime shim (`gpuslice runtime` = nvidia-container-runtime) costs, run by runc:
#   bench/runtime_shim.sh BUILD [ROUNDS=20] [DRIVER_ROOT=/]
# Each round, one right after the other (the order alternates every round), wall time of
#   no GPU:  runc run B id          vs  nvidia-container-runtime run B id    (config.json untouched)
#   a GPU:   runc run H id, H's config.json holding the prestart hook (the hook path, as docker
#            --gpus writes it)     vs  nvidia-container-runtime run G id, G without it (the shim
#            adds it, legacy mode), both NVIDIA_VISIBLE_DEVICES=0
# for a container running /bin/true. Prints per pair the medians and the median of the paired
# differences (shim - baseline) with a distribution-free 95% CI. Targets: <= 2 ms (no GPU),
# <= 3 ms (a GPU). Needs root and runc. Without a GPU, pass a fake driver root
# (tests/fakegpu/mkroot.sh --build BUILD tests/fakegpu/configs/2gpu.conf DIR). BUSYBOX=path and
# RUNC=path as tests/gpu/run.sh passes them on the GPU host (python3 needed, not jq); HOOK_BIN=path
# the hook executable both hooks run (default BUILD/gpuslice-hook, the lean hook, as installed;
# one named otherwise is a gpuslice, run as `gpuslice hook`; the GPU host passes a wrapper named
# gpuslice-hook that sets the LD_LIBRARY_PATH a hook's minimal environment lacks there).
set -uo pipefail
BUILD=${1:-build} N=${2:-20} DRV=${3:-/}
cd "$(dirname "$0")/.." || exit 1
case $BUILD in /*) GS=$BUILD/gpuslice ;; *) GS=$PWD/$BUILD/gpuslice ;; esac
[ -x "$GS" ] || { echo "bench/runtime_shim.sh: no $GS (build first)"; exit 1; }
HOOK_BIN=${HOOK_BIN:-$GS-hook}
# the hook's first words, as the shim writes them for that path (src/runtime/hook_exe.c)
case ${HOOK_BIN##*/} in gpuslice-hook) HOOK_WORDS='"gpuslice-hook"' ;; *) HOOK_WORDS='"gpuslice", "hook"' ;; esac
RUNC=${RUNC:-$(command -v runc || echo /usr/sbin/runc)}
[ -x "$RUNC" ] || { echo "bench/runtime_shim.sh: no runc"; exit 1; }
W=$(mktemp -d /tmp/gs-bench-shim.XXXXXX)
chmod 755 "$W"
trap 'for id in $("$RUNC" --root "$W/state" list -q 2>/dev/null); do "$RUNC" --root "$W/state" delete -f "$id"; done; rm -rf "$W"' EXIT
tests/integration/mkrootfs.sh "$W/rootfs" >/dev/null || { echo "mkrootfs failed"; exit 1; }
mkdir -p "$W/bin" "$W/regions"
ln -s "$GS-runtime" "$W/bin/nvidia-container-runtime"
printf '[driver]\nroot = "%s"\npath = "%s"\n[slice]\nregions-dir = "%s"\n[runtime]\nmode = "legacy"\nruntimes = ["%s"]\nhook-path = "%s"\n' \
        "$DRV" "$PATH" "$W/regions" "$RUNC" "$HOOK_BIN" >"$W/config.toml"
spec() { # DIR ENV-JSON HOOKS-JSON
        mkdir -p "$1"
        (cd "$1" && "$RUNC" spec) || return 1
        python3 - "$1" "$W/rootfs" "$2" "$3" <<'PY'
import json, os, sys
d, rootfs, env, hooks = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
c = json.load(open(d + "/config.json"))
c["root"] = {"path": rootfs, "readonly": True}
c["process"]["terminal"] = False
c["process"]["args"] = ["/bin/true"]
c["process"]["env"] += env
c["hooks"] = hooks
c["linux"]["cgroupsPath"] = "/gs-bench-shim/" + os.path.basename(d)
json.dump(c, open(d + "/config.json", "w"))
PY
        cp "$1/config.json" "$1/config.orig"
}
GPU='["NVIDIA_VISIBLE_DEVICES=0","NVIDIA_DRIVER_CAPABILITIES=compute,utility"]'
HOOK="{\"prestart\": [{\"path\": \"$HOOK_BIN\", \"args\": [$HOOK_WORDS, \"--config\", \"$W/config.toml\", \"prestart\"], \"env\": [\"PATH=/usr/sbin:/usr/bin:/sbin:/bin\"]}]}"
spec "$W/plain" '[]' '{}'
spec "$W/hooked" "$GPU" "$HOOK"
spec "$W/gpu" "$GPU" '{}'
# t BUNDLE ID RUNTIME...: microseconds (bash's clock), or FAIL
t() {
        local b=$1 id=$2 a e; shift 2
        cp "$W/$b/config.orig" "$W/$b/config.json"
        a=${EPOCHREALTIME//[.,]/}
        if GPUSLICE_CONFIG=$W/config.toml "$@" --root "$W/state" run --bundle "$W/$b" "$id" </dev/null >/dev/null 2>>"$W/err"; then
                e=${EPOCHREALTIME//[.,]/}; echo $((e - a))
        else echo FAIL; fi
}
fails=0
for i in $(seq 0 "$N"); do # round 0: warm-up
        if [ $((i % 2)) = 1 ]; then
                r=$(t plain "r$i" "$RUNC"); s=$(t plain "s$i" "$W/bin/nvidia-container-runtime")
                h=$(t hooked "h$i" "$RUNC"); g=$(t gpu "g$i" "$W/bin/nvidia-container-runtime")
        else
                s=$(t plain "s$i" "$W/bin/nvidia-container-runtime"); r=$(t plain "r$i" "$RUNC")
                g=$(t gpu "g$i" "$W/bin/nvidia-container-runtime"); h=$(t hooked "h$i" "$RUNC")
        fi
        [ "$i" = 0 ] && continue
        for v in "$r" "$s" "$h" "$g"; do [ "$v" = FAIL ] && fails=$((fails + 1)); done
        [ "$r" != FAIL ] && [ "$s" != FAIL ] && echo "$r $s" >>"$W/nogpu"
        [ "$h" != FAIL ] && [ "$g" != FAIL ] && echo "$h $g" >>"$W/gpu.us"
done
report() { # FILE LABEL BASE SHIM
        python3 - "$@" <<'PY'
import math, sys
rows = [tuple(map(int, l.split())) for l in open(sys.argv[1])]
med = lambda v: sorted(v)[len(v) // 2] if len(v) % 2 else (sorted(v)[len(v) // 2 - 1] + sorted(v)[len(v) // 2]) / 2
d = sorted(s - b for b, s in rows)
n = len(d); lo = max(0, int((n - 1.96 * math.sqrt(n)) / 2))
print("%-7s %-32s median %7.2f ms   %-32s median %7.2f ms   paired diff %+6.2f ms (95%% CI %+.2f .. %+.2f), n=%d"
      % (sys.argv[2], sys.argv[3], med([b for b, _ in rows]) / 1e3, sys.argv[4], med([s for _, s in rows]) / 1e3,
         med(d) / 1e3, d[lo] / 1e3, d[n - 1 - lo] / 1e3, n))
PY
}
echo "== runtime shim vs runc ($(date -u +%F), $N paired rounds, driver root $DRV, $("$RUNC" --version | head -1))"
[ -s "$W/nogpu" ] && report "$W/nogpu" "no GPU" "runc run" "nvidia-container-runtime run"
[ -s "$W/gpu.us" ] && report "$W/gpu.us" "a GPU" "runc run + prestart hook" "shim run (adds the hook)"
if [ "$fails" -gt 0 ]; then echo "$fails runs failed:"; tail -5 "$W/err"; exit 1; fi
