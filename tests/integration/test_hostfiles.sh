#!/usr/bin/env bash
# The host's files of a running container's slice (issue 31): nothing under the slices and arbiter
# directories is world-writable; the usage region and the arbiter record are the container's
# process user's and group's (0660), and that user (uid 1000 here, not root) uses them; another
# local user (nobody) can write neither; the slice's arbiter host record is root's and follows
# `slice set`; `slice set` takes a lock no other user can hold (the slice directory's flock, which
# any user could hold, no longer stops it) and, when another change holds it, gives up with a
# clear error instead of waiting forever.
. "$(dirname "$0")/lib.sh"
. "$SRC/tests/integration/bundle.sh"

RPROBE=$BUILD/tests/integration/hook-resize-probe
need "$RUNC" jq setpriv flock
for f in "$GS" "$VGPU_LIB" "$RPROBE"; do [ -e "$f" ] || { not_ok "$f is not built"; finish; }; done

DRV=$(mkroot drv 1gpu.conf)
STATE=$TMP/runc-state
CG=gs-hostfiles-$$
SLICES=$TMP/run/slices ARB=$TMP/run/arbiter
CONF=$TMP/hook.toml
hook_config "$CONF" "$DRV" "$SLICES"
UUID=GPU-6b1fe2a6-3b64-d9c1-4a3e-5f0b2c7d8e91
ids=() bg=()
cleanup() {
        local id d p
        for p in "${bg[@]}"; do kill $(ps -o pid= --ppid "$p") "$p" 2>/dev/null; done
        for id in "${ids[@]}"; do "$RUNC" --root "$STATE" delete -f "$id" >/dev/null 2>&1; done
        for d in /sys/fs/cgroup/*/"$CG"-*; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done
        rm -rf "$TMP"
}
trap cleanup EXIT
H_PRESTART='{path: $gs, args: ["gpuslice", "--root", $drv, "hook", "--config", $conf, "prestart"], env: $hookenv}'

make_bundle hf '.process.env += ["NVIDIA_VISIBLE_DEVICES=0", "GPUSLICE_MEMORY_LIMIT=1Gi", "GPUSLICE_COMPUTE_LIMIT=50",
                                 "GPUSLICE_COMPUTE_MODE=share"]
        | .process.user = {uid: 1000, gid: 1000}
        | .process.args = ["/bin/sh", "/hf.sh"]
        | .hooks = {prestart: ['"$H_PRESTART"']}'
R=$TMP/hf/rootfs
cat >"$R/hf.sh" <<'EOS'
printf 'alloc 100\ninfo\n' >/tmp/cmds
/usr/bin/resize-probe </tmp/cmds >/tmp/out 2>&1
sed 's/^/PROBE /' /tmp/out
echo "ID $(id -u):$(id -g)"
echo READY
sleep 60
EOS
cp "$RPROBE" "$R/usr/bin/resize-probe"
ID=gs-$$-hf
ids+=("$ID")
timeout 60 "$RUNC" --root "$STATE" run -d --bundle "$TMP/hf" "$ID" </dev/null >"$TMP/hf.out" 2>"$TMP/hf.err"; rc=$?
[ $rc = 0 ] && ok "runc run -d of a slice container whose process runs as 1000:1000" ||
        { not_ok "runc run: exit $rc: $(tail -3 "$TMP/hf.err")"; finish; }
for _ in $(seq 200); do grep -q '^READY$' "$TMP/hf.out" && break; sleep 0.05; done
holds() { if eval "$2"; then ok "$1"; else not_ok "$1"; sed 's/^/    # /' "$TMP/hf.out" | head -20; fi; }
holds "the container's user (1000:1000) allocated through its usage region" \
        "grep -q '^ID 1000:1000' '$TMP/hf.out' && grep -q '^PROBE alloc ok' '$TMP/hf.out'"

REGION=$SLICES/$ID/usage REC=$ARB/gpuslice-gpu-$UUID/$ID HOST=$ARB/gpuslice-gpu-$UUID/.host-$ID
ww=$(find "$TMP/run" -type f -perm -o+w 2>&1)
holds "nothing under the slices and arbiter directories is world-writable (find -perm -o+w: ${ww:-none})" '[ -z "$ww" ] && [ -s "$REGION" ]'
holds "the usage region and the arbiter record are the container user's and group's, 0660: $(stat -c '%u:%g %a' "$REGION" "$REC" 2>&1 | tr '\n' ' ')" \
        '[ "$(stat -c "%u:%g %a" "$REGION")" = "1000:1000 660" ] && [ "$(stat -c "%u:%g %a" "$REC")" = "1000:1000 660" ]'
holds "the container's user can write its arbiter record" "setpriv --reuid 1000 --regid 1000 --clear-groups sh -c ': >>\"$REC\"'"
for f in "$REGION" "$REC"; do
        if setpriv --reuid nobody --regid nogroup --clear-groups sh -c ": >>'$f'" 2>/dev/null; then
                not_ok "another local user (nobody) opened ${f#$TMP/} for writing"
        else
                ok "another local user (nobody) cannot write ${f#$TMP/}"
        fi
done
# the host record: root's, 0644; weight 5000 (basis points) at byte 8, class normal (1), share mode (1)
hostrec() { od -An -tu4 -j8 -N12 "$HOST" 2>/dev/null | tr -s ' ' | sed 's/^ //'; }
holds "the slice's arbiter host record is root's, 0644: share 50 %, normal, share mode ($(stat -c '%u %a' "$HOST" 2>&1); $(hostrec))" \
        '[ "$(stat -c "%u %a" "$HOST")" = "0 644" ] && [ "$(hostrec)" = "5000 1 1" ]'
holds "the container's user cannot write its host record" "! setpriv --reuid 1000 --regid 1000 --clear-groups sh -c ': >>\"$HOST\"' 2>/dev/null"

# slice set: another user holding the slice directory's flock does not stop it ...
setpriv --reuid nobody --regid nogroup --clear-groups flock "$SLICES/$ID" sleep 60 >/dev/null 2>&1 &
bg+=($!)
sleep 0.3
timeout 5 "$GS" slice set --regions-dir "$SLICES" "$ID" --compute 30 >"$TMP/set1" 2>&1; rc=$?
holds "slice set while another user holds the slice directory's flock: done (exit $rc, 124 = still waiting after 5 s)" '[ $rc = 0 ]'
holds "... and the host record follows it: $(hostrec)" '[ "$(hostrec)" = "3000 1 1" ]'
# ... and a change that holds the slice's own lock makes it give up, saying why
flock "$SLICES/$ID/.lock" sleep 60 >/dev/null 2>&1 &
bg+=($!)
sleep 0.3
t0=$(date +%s)
timeout 30 "$GS" slice set --regions-dir "$SLICES" "$ID" --compute 40 >"$TMP/set2" 2>&1; rc=$?
t=$(( $(date +%s) - t0 ))
holds "slice set while another change holds the lock: gives up after $t s (exit $rc): $(head -c 300 "$TMP/set2")" \
        '[ $rc != 0 ] && [ $rc != 124 ] && [ $t -le 10 ] && grep -q "being changed by another process" "$TMP/set2"'
finish
