#!/usr/bin/env bash
# Live resize of a container's slice: a container started by the real runc with our hook (a 1 GiB
# slice, the pod's names in its annotations) runs a resize-probe; inside, root (Docker's default
# capabilities) tries to write, replace and add to the read-only live directory, and runs the
# probe with a larger limit and its own live file in the environment; the host resizes the slice
# by its pod's name (`gpuslice slice set team-a/trainer-0`) and the running probe sees the new
# quota; a write of a huge limit into the region (the container's to write) changes nothing.
. "$(dirname "$0")/lib.sh"
. "$SRC/tests/integration/bundle.sh"

RPROBE=$BUILD/tests/integration/hook-resize-probe
need "$RUNC" jq
for f in "$GS" "$VGPU_LIB" "$RPROBE"; do [ -e "$f" ] || { not_ok "$f is not built"; finish; }; done

DRV=$(mkroot drv 1gpu.conf)
STATE=$TMP/runc-state
CG=gs-resize-$$
SLICES=$TMP/slices
CONF=$TMP/hook.toml
hook_config "$CONF" "$DRV" "$SLICES"
ids=()
cleanup() {
        local id d
        for id in "${ids[@]}"; do "$RUNC" --root "$STATE" delete -f "$id" >/dev/null 2>&1; done
        for d in /sys/fs/cgroup/*/"$CG"-*; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done
        rm -rf "$TMP"
}
trap cleanup EXIT
H_PRESTART='{path: $gs, args: ["gpuslice", "--root", $drv, "hook", "--config", $conf, "prestart"], env: $hookenv}'

# The container's script: the attempts on the live directory, then the probe (its commands through
# a FIFO), "READY", and then every 50 ms its view, until it shows 2048 MiB ("SEEN ..."); then a
# write into the region and an allocation past the host's quota.
script() {
        cat <<'EOF'
for p in /run/gpuslice/live /run/gpuslice/live/limits; do [ -e $p ] && echo "HAS $p"; done
if (echo GPUSLICE_MEMORY_LIMIT=64Gi >>/run/gpuslice/live/limits) 2>/dev/null; then echo "LIVE_WRITE written"; else echo "LIVE_WRITE refused"; fi
printf 'GPUSLICE_GENERATION=99\nGPUSLICE_MEMORY_LIMIT=64Gi\n' >/tmp/evil
if mv /tmp/evil /run/gpuslice/live/limits 2>/dev/null; then echo "LIVE_REPLACE replaced"; else echo "LIVE_REPLACE refused"; fi
if (echo x >/run/gpuslice/live/other) 2>/dev/null; then echo "LIVE_CREATE created"; else echo "LIVE_CREATE refused"; fi
if mount -o remount,bind,rw /run/gpuslice/live 2>/dev/null; then echo "LIVE_REMOUNT remounted"; else echo "LIVE_REMOUNT refused"; fi
printf 'GPUSLICE_GENERATION=99\nGPUSLICE_MEMORY_LIMIT=64Gi\n' >/tmp/evil
mkfifo /tmp/in
GPUSLICE_MEMORY_LIMIT=64Gi CUDA_DEVICE_MEMORY_LIMIT=64Gi GPUSLICE_LIVE_LIMITS=/tmp/evil \
        /usr/bin/resize-probe </tmp/in >/tmp/out 2>/tmp/err &
exec 3>/tmp/in
ask() { n=$(($(wc -l </tmp/out) + 1)); echo "$1" >&3; i=0
        while [ $(wc -l </tmp/out) -lt $n ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
        sed -n "${n}p" /tmp/out; }
i=0; while ! grep -q '^ready' /tmp/out && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
echo "START $(ask info)"
echo READY
i=0
while [ $i -lt 200 ]; do
        a=$(ask info)
        case "$a" in *cuda_total=2048*) echo "SEEN $a"; break ;; esac
        sleep 0.05; i=$((i + 1))
done
echo "POKE $(ask 'poke /run/gpuslice/usage 100000')"
echo "ALLOC $(ask 'alloc 3000')"
echo "SMALL $(ask 'alloc 1000')"
echo "AFTER $(ask info)"
ask quit >/dev/null
sed 's/^/ERR /' /tmp/err
echo DONE
EOF
}

make_bundle rz '.process.env += ["NVIDIA_VISIBLE_DEVICES=0", "GPUSLICE_MEMORY_LIMIT=1Gi"]
        | .process.args = ["/bin/sh", "/resize.sh"]
        | .annotations = {"io.kubernetes.pod.namespace": "team-a", "io.kubernetes.pod.name": "trainer-0",
                          "io.kubernetes.container.name": "main"}
        | .hooks = {prestart: ['"$H_PRESTART"']}'
R=$TMP/rz/rootfs
script >"$R/resize.sh"
cp "$RPROBE" "$R/usr/bin/resize-probe"
for a in mkfifo mv printf sed; do ln -sfn busybox "$R/bin/$a"; done
ID=gs-$$-rz
ids+=("$ID")
timeout 60 "$RUNC" --root "$STATE" run -d --bundle "$TMP/rz" "$ID" </dev/null >"$TMP/rz.out" 2>"$TMP/rz.err"; rc=$?
[ $rc = 0 ] && ok "runc run -d of a 1 GiB slice container" || { not_ok "runc run: exit $rc: $(tail -3 "$TMP/rz.err")"; finish; }
for _ in $(seq 200); do grep -q '^READY$' "$TMP/rz.out" && break; sleep 0.05; done
fact() { grep -qxF -- "$1" "$TMP/rz.out"; }
holds() { if eval "$2"; then ok "$1"; else not_ok "$1"; sed 's/^/    # /' "$TMP/rz.out" | head -40; fi; }
holds "the container started its probe (READY)" "fact READY" || finish
holds "the live directory and its file are in the container" "fact 'HAS /run/gpuslice/live' && fact 'HAS /run/gpuslice/live/limits'"
holds "root in the container cannot write the live file" "fact 'LIVE_WRITE refused'"
holds "... nor replace it (rename over it)" "fact 'LIVE_REPLACE refused'"
holds "... nor add a file beside it" "fact 'LIVE_CREATE refused'"
holds "... nor remount the directory read-write" "fact 'LIVE_REMOUNT refused'"
holds "a probe with 64Gi limits and its own live file in its environment sees the host's 1024 MiB" \
        "grep -q '^START info cuda_total=1024 ' '$TMP/rz.out'"

# --- the host resizes it, by the pod's name -----------------------------------------------------
"$GS" slice list --regions-dir "$SLICES" >"$TMP/list" 2>&1
holds "slice list shows the container with its pod and 1Gi" "grep -qE '^gs-$$-rz +team-a/trainer-0/main +1Gi ' '$TMP/list'"
t0=$(date +%s%N)
"$GS" slice set --regions-dir "$SLICES" team-a/trainer-0 --memory 2Gi >"$TMP/set" 2>&1; rc=$?
holds "slice set team-a/trainer-0 --memory 2Gi (exit $rc)" "[ $rc = 0 ] && grep -q '^slice $ID: memory 1Gi -> 2Gi (generation 2)' '$TMP/set'"
seen=
for _ in $(seq 200); do
        grep -q '^SEEN ' "$TMP/rz.out" && { seen=$(( ($(date +%s%N) - t0) / 1000000 )); break; }
        sleep 0.02
done
holds "the running probe in the container sees 2048 MiB after ${seen:-never} ms (at most 1000)" '[ -n "$seen" ] && [ "$seen" -le 1000 ]'
for _ in $(seq 200); do grep -q '^DONE$' "$TMP/rz.out" && break; sleep 0.05; done
holds "the probe writes 100000 MiB as its limit into the region" "fact 'POKE poke ok'"
# (refused as out of memory, CUDA_ERROR_OUT_OF_MEMORY = 2, by the quota: 1000 MiB in the same
# process fit beside its context, so it is not a process whose every allocation fails)
holds "... and 3000 MiB are still refused, out of memory (the host's quota is 2048)" "fact 'ALLOC alloc refused 2'"
holds "... while 1000 MiB in the same process are granted (the refusal is the quota's)" "fact 'SMALL alloc ok'"
holds "... and its view still shows 2048 MiB" "grep -q '^AFTER info cuda_total=2048 ' '$TMP/rz.out'"
holds "the change is recorded with the host's uid" "grep -q 'uid=$(id -u) pid=[0-9]* generation 1 -> 2: memory 1Gi -> 2Gi' '$SLICES/$ID/changes'"
finish
