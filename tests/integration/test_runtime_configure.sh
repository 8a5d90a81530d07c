#!/usr/bin/env bash
# `gpuslice runtime configure` on sample configs of each engine, as they ship: docker's
# daemon.json (fresh, with unrelated settings, already configured), containerd's config.toml
# (`containerd config default` of Debian's 1.6, a version 3 config of containerd 2.x with its
# drop-in and imports, a commented hand-written file), CRI-O's drop-in (fresh, and the shipped
# crio.conf layout as a drop-in with other settings). Idempotence (a second run: byte-identical,
# "unchanged", no backup), --dry-run (nothing written), everything else kept, backups, errors.
# Issue 31: a 0600 config with registry credentials (backup and new file keep owner and mode),
# links planted at the backup's names, a symlinked config, the TOML shapes (dotted keys at the
# top and in a parent table, inline tables, multi-line strings and arrays that look like headers)
# checked by containerd's own reading (config dump) and by tomllib, table by table; refusals
# naming the line; containerd's check before a file is replaced (and without containerd);
# daemon.json's wrong-typed members; CRI-O's dotted and inline drop-ins.
. "$(dirname "$0")/lib.sh"
need jq containerd python3
[ -x "$GS" ] || { not_ok "$GS is not built"; finish; }
S=/usr/bin/nvidia-container-runtime
cfg() { "$GS" runtime configure "$@"; }
sum() { sha256sum <"$1" | cut -d' ' -f1; }
# kept OLD NEW DESC: every line of OLD is in NEW, in order (nothing removed or reordered)
kept() {
        if diff "$1" "$2" | grep -q '^<'; then not_ok "$3: lines removed or changed"; diff "$1" "$2" | sed 's/^/    # /' | head; else ok "$3"; fi
}
# again NAME ARGS...: a second run changes nothing: exit 0, every file "unchanged", no new backup
again() {
        local n=$1 f=$2; shift 2
        local before; before=$(sum "$f"); local nb; nb=$(ls "$f".*.bak 2>/dev/null | wc -l)
        run "$n" -- cfg "$@"
        expect_rc "$n" 0 "$n: a second run"
        expect_out_has "$n" "$f: unchanged" "$n: ... says unchanged"
        check "$n: ... the file is byte-identical" [ "$(sum "$f")" = "$before" ]
        check "$n: ... and no new backup" [ "$(ls "$f".*.bak 2>/dev/null | wc -l)" = "$nb" ]
}

# ---- docker ---------------------------------------------------------------------------------
D=$TMP/docker
mkdir -p "$D"
run d1 -- cfg --runtime docker --config "$D/daemon.json"
expect_rc d1 0 "docker, no daemon.json yet"
check "docker: runtimes.nvidia = {path: the shim, args: []}" [ "$(jq -c .runtimes.nvidia "$D/daemon.json")" = "{\"path\":\"$S\",\"args\":[]}" ]
check "docker: no default-runtime without --set-as-default" [ "$(jq -r '."default-runtime" // "none"' "$D/daemon.json")" = none ]
again d1b "$D/daemon.json" --runtime docker --config "$D/daemon.json"
cat >"$D/other.json" <<'J'
{
    "log-driver": "json-file",
    "log-opts": {"max-size": "10m"},
    "runtimes": {"crun": {"path": "/usr/bin/crun"}},
    "data-root": "/srv/docker"
}
J
cp "$D/other.json" "$D/other.orig.json"
run d2 -- cfg --runtime docker --config "$D/other.json" --set-as-default --cdi.enabled
expect_rc d2 0 "docker, daemon.json with other settings, --set-as-default --cdi.enabled"
check "docker: every other setting kept" [ "$(jq -c 'del(.runtimes.nvidia, ."default-runtime", .features)' "$D/other.json")" = "$(jq -c . "$D/other.orig.json")" ]
check "docker: default-runtime nvidia, features.cdi true" [ "$(jq -c '[."default-runtime", .features.cdi]' "$D/other.json")" = '["nvidia",true]' ]
check "docker: the original is backed up as it was" cmp -s "$D/other.orig.json" "$(ls "$D"/other.json.*.bak | head -1)"
expect_out_has d2 "set $D/other.json: default-runtime = \"nvidia\"" "docker: says what changed"
again d2b "$D/other.json" --runtime docker --config "$D/other.json" --set-as-default --cdi.enabled
echo '[1, 2]' >"$D/bad.json"
run d3 -- cfg --runtime docker --config "$D/bad.json"
expect_rc d3 1 "docker: a daemon.json that is not an object"
expect_err d3 "gpuslice: runtime error: $D/bad.json: not a JSON object" "... is refused, saying why"
check "... and left as it was" [ "$(cat "$D/bad.json")" = '[1, 2]' ]

# ---- containerd -----------------------------------------------------------------------------
C=$TMP/containerd
mkdir -p "$C"
containerd config default >"$C/config.toml"
cp "$C/config.toml" "$C/orig.toml"
run c0 -- cfg --runtime containerd --config "$C/config.toml" --dry-run
expect_rc c0 0 "containerd --dry-run"
check "--dry-run writes nothing" cmp -s "$C/config.toml" "$C/orig.toml"
check "--dry-run makes no backup" [ -z "$(ls "$C"/config.toml.*.bak 2>/dev/null)" ]
expect_out_has c0 "would set $C/config.toml: [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia.options] BinaryName = \"$S\"" "--dry-run says what it would set"
run c0j -- cfg --runtime containerd --config "$C/config.toml" --dry-run --json
check "--dry-run --json: the new content, changed, no backup" \
        [ "$(jq -c '[.dry_run, .files[0].changed, .files[0].backup, (.files[0].content | contains("runtimes.nvidia.options]"))]' "$TMP/c0j.out")" = '[true,true,null,true]' ]
run c1 -- cfg --runtime containerd --config "$C/config.toml" --set-as-default --cdi.enabled
expect_rc c1 0 "containerd, its default config (1.6), --set-as-default --cdi.enabled"
run c1d -- containerd --config "$C/config.toml" config dump
expect_rc c1d 0 "containerd parses the result"
check "... and serves default_runtime_name nvidia" grep -qE '^ *default_runtime_name = "nvidia"$' "$TMP/c1d.out"
check "... enable_cdi = true in the CRI plugin's table (containerd 1.7+ reads it; 1.6 ignores it)" \
        grep -qE '^ *enable_cdi = true$' "$C/config.toml"
check "... the old default_runtime_name line replaced in place (no second one)" [ "$(grep -c default_runtime_name "$C/config.toml")" = 1 ]
changed=$(diff "$C/orig.toml" "$C/config.toml" | grep -c '^<')
check "... of the original lines only default_runtime_name changed" [ "$changed" = 1 ]
again c1b "$C/config.toml" --runtime containerd --config "$C/config.toml" --set-as-default --cdi.enabled

# a hand-written version 2 file with comments and SystemdCgroup: comments kept, SystemdCgroup copied
cat >"$C/hand.toml" <<'T'
# my node's containerd
version = 2
root = "/srv/containerd"   # fast disk

[plugins]
  # the CRI plugin
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "registry.k8s.io/pause:3.9"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      SystemdCgroup = true
T
cp "$C/hand.toml" "$C/hand.orig.toml"
run c2 -- cfg --runtime containerd --config "$C/hand.toml"
expect_rc c2 0 "containerd, a commented hand-written file"
kept "$C/hand.orig.toml" "$C/hand.toml" "... every line and comment kept"
run c2d -- containerd --config "$C/hand.toml" config dump
expect_rc c2d 0 "... containerd parses it"
got=$(awk '/runtimes.nvidia.options\]/ { o = 1; next } o && /^ *\[/ { o = 0 } o && /SystemdCgroup/ { print $3 }' "$TMP/c2d.out")
check "... the runc handler's SystemdCgroup = true copied to nvidia's" [ "$got" = true ]
again c2b "$C/hand.toml" --runtime containerd --config "$C/hand.toml"

# version 3 (containerd 2.x): the handler in a drop-in, the config imports it
: >"$C/other.toml"
printf 'version = 3\nimports = ["%s"]\n\n[plugins."io.containerd.cri.v1.images"]\n  snapshotter = "overlayfs"\n' "$C/other.toml" >"$C/v3.toml"
run c3 -- cfg --runtime containerd --config "$C/v3.toml" --drop-in "$C/conf.d/99-gpuslice.toml"
expect_rc c3 0 "containerd, a version 3 config"
check "... imports keeps its entry and adds the drop-in" \
        [ "$(grep '^imports' "$C/v3.toml")" = "imports = [\"$C/other.toml\", \"$C/conf.d/99-gpuslice.toml\"]" ]
check "... the drop-in: version 3, plugin io.containerd.cri.v1.runtime, BinaryName the shim" \
        grep -qF "[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.nvidia.options]" "$C/conf.d/99-gpuslice.toml"
check "... its version line" grep -qx 'version = 3' "$C/conf.d/99-gpuslice.toml"
again c3b "$C/v3.toml" --runtime containerd --config "$C/v3.toml" --drop-in "$C/conf.d/99-gpuslice.toml"
printf 'version = 1\n' >"$C/v1.toml"
run c4 -- cfg --runtime containerd --config "$C/v1.toml"
expect_rc c4 1 "containerd: a version 1 config"
expect_err c4 "config version 1 (containerd 1.4 and older) is not supported" "... is refused, saying why"
printf 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n[plugins."io.containerd.grpc.v1.cri".containerd]\n' >"$C/dup.toml"
run c5 -- cfg --runtime containerd --config "$C/dup.toml" --set-as-default
expect_rc c5 1 "containerd: a table defined twice"
expect_err c5 "is defined twice" "... is refused"

# ---- CRI-O ----------------------------------------------------------------------------------
R=$TMP/crio
mkdir -p "$R/crio.conf.d"
run r1 -- cfg --runtime crio --config "$R/crio.conf.d/99-gpuslice.toml" --set-as-default
expect_rc r1 0 "crio, a new drop-in"
check "crio: [crio.runtime.runtimes.nvidia] runtime_path the shim" grep -qF "runtime_path = \"$S\"" "$R/crio.conf.d/99-gpuslice.toml"
check "crio: default_runtime" grep -qF 'default_runtime = "nvidia"' "$R/crio.conf.d/99-gpuslice.toml"
again r1b "$R/crio.conf.d/99-gpuslice.toml" --runtime crio --config "$R/crio.conf.d/99-gpuslice.toml" --set-as-default
# the layout CRI-O ships (crio.conf: [crio], [crio.runtime] with default_runtime and the runc handler)
cat >"$R/crio.conf" <<'T'
# The CRI-O configuration file specifies all of the available configuration
# options and command-line flags for the crio(8) OCI Kubernetes Container Runtime
[crio]

[crio.api]
listen = "/var/run/crio/crio.sock"

[crio.runtime]
# default_runtime is the _name_ of the OCI runtime to be used as the default.
default_runtime = "runc"
cgroup_manager = "systemd"

[crio.runtime.runtimes.runc]
runtime_path = ""
runtime_type = "oci"
runtime_root = "/run/runc"

[crio.image]
pause_image = "registry.k8s.io/pause:3.9"
T
cp "$R/crio.conf" "$R/crio.orig.conf"
run r2 -- cfg --runtime crio --config "$R/crio.conf" --set-as-default
expect_rc r2 0 "crio, its shipped crio.conf layout"
check "... default_runtime changed in place" [ "$(grep -c '^default_runtime' "$R/crio.conf")" = 1 ] 
check "... to nvidia" grep -qx 'default_runtime = "nvidia"' "$R/crio.conf"
check "... the runc handler and every other line kept" [ "$(diff "$R/crio.orig.conf" "$R/crio.conf" | grep -c '^<')" = 1 ]
again r2b "$R/crio.conf" --runtime crio --config "$R/crio.conf" --set-as-default

# ---- --kubernetes: gpuslice's own host config for a Kubernetes node ---------------------------
K=$TMP/k8s
mkdir -p "$K/etc"
KEYS='accept-nvidia-visible-devices-envvar-when-unprivileged = false
accept-nvidia-visible-devices-as-volume-mounts = true'
hook_keys() { sed -n '/^\[hook\]/,/^\[/p' "$1" | sed 's/^[[:space:]]*//; s/[[:space:]]*#.*//' | grep '^accept-' ; }
run k1 -- cfg --kubernetes --host-config "$K/etc/config.toml"
expect_rc k1 0 "--kubernetes, no host config yet"
check "... writes [hook] with the env of unprivileged containers refused, volume mounts accepted" [ "$(hook_keys "$K/etc/config.toml")" = "$KEYS" ]
expect_out_has k1 "set $K/etc/config.toml: [hook] accept-nvidia-visible-devices-envvar-when-unprivileged = false" "... and says so"
again k1b "$K/etc/config.toml" --kubernetes --host-config "$K/etc/config.toml"
# an existing config: comments and other keys kept, a true turned false in place, allocate env -> volume-mounts,
# its mode and owner kept (backup too), edited through a symlink
cat >"$K/real.toml" <<'T'
# the node's gpuslice config
[driver]
root = "/"

[hook]
accept-nvidia-visible-devices-envvar-when-unprivileged = true # NVIDIA's default
log-file = "/var/log/gpuslice-hook.log"

[device-plugin]
allocate = "env"
T
cp "$K/real.toml" "$K/real.orig.toml"
chmod 0640 "$K/real.toml"; chown 65534:65534 "$K/real.toml"
ln -s "$K/real.toml" "$K/etc/link.toml"
run k2 -- cfg --kubernetes --host-config "$K/etc/link.toml"
expect_rc k2 0 "--kubernetes on an existing config, through a symlink"
check "... the link is still a link to it" [ "$(readlink "$K/etc/link.toml")" = "$K/real.toml" ]
check "... the value changed in place (one line), the other one added" [ "$(hook_keys "$K/real.toml")" = "$KEYS" ]
check "... allocate = \"env\" (refused now) became volume-mounts" grep -qx 'allocate = "volume-mounts"' "$K/real.toml"
check "... mode 0640 and owner 65534:65534 kept" [ "$(stat -c '%a %u:%g' "$K/real.toml")" = "640 65534:65534" ]
bak=$(ls "$K"/real.toml.*.bak 2>/dev/null | head -1)
check "... a backup with the old text, mode and owner" [ -n "$bak" ] && cmp -s "$bak" "$K/real.orig.toml" && \
        [ "$(stat -c '%a %u:%g' "$bak")" = "640 65534:65534" ]
check "... the comment and log-file kept" grep -q '^log-file = "/var/log/gpuslice-hook.log"' "$K/real.toml"
# an invalid host config is refused, untouched
printf '[hook]\nno-such-key = 1\n' >"$K/bad.toml"; cp "$K/bad.toml" "$K/bad.orig.toml"
run k3 -- cfg --kubernetes --host-config "$K/bad.toml"
expect_rc k3 1 "--kubernetes on an invalid host config: refused"
expect_err k3 "unknown key 'hook.no-such-key'" "... naming the problem"
check "... the file untouched" cmp -s "$K/bad.toml" "$K/bad.orig.toml"
# with an engine: both, one report
cp "$K/real.orig.toml" "$K/both.toml"
run k4 -- cfg --runtime docker --config "$K/daemon.json" --kubernetes --host-config "$K/both.toml" --json
expect_rc k4 0 "--runtime docker and --kubernetes together"
check "... one JSON report with both files" [ "$(jq -r '[.files[].path] | join(" ")' "$TMP/k4.out")" = "$K/daemon.json $K/both.toml" ]
check "... docker registered, the host config set" [ "$(jq -r .runtimes.nvidia.path "$K/daemon.json")" = "$S" ] && \
        [ "$(hook_keys "$K/both.toml")" = "$KEYS" ]
run k5 -- cfg --kubernetes --host-config "$K/dry.toml" --dry-run
expect_rc k5 0 "--kubernetes --dry-run"
check "... writes nothing" [ ! -e "$K/dry.toml" ]
run k6 -- cfg --host-config "$K/x.toml" --runtime docker --config "$K/d2.json"
expect_rc k6 2 "--host-config without --kubernetes is a usage error"
# a link to no file: refused, the link kept (as for the engines' configs; it was once replaced by a file)
ln -s "$K/none.toml" "$K/dangling.toml"
run k7 -- cfg --kubernetes --host-config "$K/dangling.toml"
expect_rc k7 1 "--kubernetes through a link to no file: refused"
check "... the link kept" [ -L "$K/dangling.toml" ]
check "... no file made where it points" [ ! -e "$K/none.toml" ]
# a FIFO: refused at once, not waited on
mkfifo "$K/fifo.toml"
run k8 -- timeout 3 "$GS" runtime configure --kubernetes --host-config "$K/fifo.toml"
expect_rc k8 1 "--kubernetes on a FIFO: refused, not hung"
# ---- issue 31: owners and modes, links, config shapes, the engine's own check -----------------
# tget FILE KEY/KEY/...: the value at that key path as JSON, read by an independent parser
# (python3's tomllib): it fails on a file that is not valid TOML and on a missing key, so a check
# of a table is a check of the table, not of a line that looks right.
tget() {
        python3 - "$@" <<'P'
import json, sys, tomllib
with open(sys.argv[1], 'rb') as f:
    d = tomllib.load(f)
for k in sys.argv[2].split('/'):
    d = d[k]
print(json.dumps(d))
P
}
# same_but OLD NEW KEYPATH...: the two files read as the same tree once the key paths are taken out
# of both (and the tables left empty by that)
same_but() {
        python3 - "$@" <<'P'
import sys, tomllib
def load(f):
    with open(f, 'rb') as fh:
        return tomllib.load(fh)
def drop(d, path):
    ks = path.split('/')
    for k in ks[:-1]:
        if not isinstance(d, dict) or k not in d:
            return
        d = d[k]
    if isinstance(d, dict):
        d.pop(ks[-1], None)
def prune(d):
    if isinstance(d, dict):
        for k in list(d):
            prune(d[k])
            if d[k] == {}:
                del d[k]
a, b = load(sys.argv[1]), load(sys.argv[2])
for p in sys.argv[3:]:
    drop(a, p); drop(b, p)
prune(a); prune(b)
sys.exit(0 if a == b else 1)
P
}
# is FILE KEYPATH JSON: the value there is JSON
is() { [ "$(tget "$1" "$2" 2>/dev/null)" = "$3" ]; }
# dump NAME FILE: containerd's own reading of FILE (config dump) into $TMP/NAME.out
dump() { run "$1" -- containerd --config "$2" config dump; }
CRI=plugins/io.containerd.grpc.v1.cri/containerd
NV=$CRI/runtimes/nvidia

# a config with registry credentials, mode 0600, not root's: the backup and the new file keep both
X=$TMP/shapes
mkdir -p "$X"
cat >"$X/creds.toml" <<'T'
version = 2
[plugins."io.containerd.grpc.v1.cri".registry.configs."registry.example.com".auth]
  username = "robot"
  password = "s3cret"
T
chmod 0600 "$X/creds.toml"
chown 4242:4343 "$X/creds.toml"
run s1 -- cfg --runtime containerd --config "$X/creds.toml"
expect_rc s1 0 "a 0600 config with registry credentials, owned by 4242:4343"
bak=$(ls "$X"/creds.toml.*.bak 2>/dev/null | head -1)
check "... a backup was made" [ -n "$bak" ]
check "... the backup is 0600, not readable by others" [ "$(stat -c %a "$bak" 2>/dev/null)" = 600 ]
check "... the backup keeps the owner 4242:4343" [ "$(stat -c %u:%g "$bak" 2>/dev/null)" = 4242:4343 ]
check "... the edited file is 0600 and 4242:4343" [ "$(stat -c %a:%u:%g "$X/creds.toml")" = 600:4242:4343 ]
check "... the credentials kept" is "$X/creds.toml" 'plugins/io.containerd.grpc.v1.cri/registry/configs/registry.example.com/auth/password' '"s3cret"'
check "... no temporary file left beside it" [ -z "$(ls -A "$X" | grep -v -e '^creds.toml$' -e '^creds.toml\..*\.bak$')" ]

# a link planted where the backup will go (the next seconds' names) is not written through
printf 'version = 2\n' >"$X/planted.toml"
: >"$X/victim"
# (from one reading of the clock: a loop that read it anew each time skipped a second when one
# passed during it, and the backup then took that second's free name: seen in CI under load)
now=$(date -u +%s)
for n in $(seq 0 20); do ln -s "$X/victim" "$X/planted.toml.$(date -u -d "@$((now + n))" +%Y%m%dT%H%M%SZ).bak" 2>/dev/null; done
run s1b -- cfg --runtime containerd --config "$X/planted.toml"
expect_rc s1b 0 "links planted at the backup's names"
check "... the file they point to is untouched" [ ! -s "$X/victim" ]
check "... the backup went to a name of its own" [ -f "$(ls "$X"/planted.toml.*.1.bak 2>/dev/null | head -1)" ]

# a symlinked config: edited through the link, the link stays a link, its target is replaced
mkdir -p "$X/real" "$X/etc"
printf 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "runc"\n' >"$X/real/config.toml"
chmod 0640 "$X/real/config.toml"
ln -s ../real/config.toml "$X/etc/config.toml"
run s2 -- cfg --runtime containerd --config "$X/etc/config.toml" --set-as-default
expect_rc s2 0 "a symlinked config"
check "... the link is still a link" [ -L "$X/etc/config.toml" ]
check "... to the same place" [ "$(readlink "$X/etc/config.toml")" = ../real/config.toml ]
check "... its target was edited (default_runtime_name nvidia, BinaryName the shim)" \
        is "$X/real/config.toml" "$CRI/default_runtime_name" '"nvidia"'
check "... the target keeps its mode 0640" [ "$(stat -c %a "$X/real/config.toml")" = 640 ]
check "... the backup lies beside the target, 0640" [ "$(stat -c %a "$X"/real/config.toml.*.bak 2>/dev/null)" = 640 ]
again s2b "$X/etc/config.toml" --runtime containerd --config "$X/etc/config.toml" --set-as-default

# dotted keys: an nvidia runtime already there in dotted form at the top level
cat >"$X/dotted.toml" <<'T'
version = 2
plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.runtime_type = "io.containerd.runc.v2"
plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.runtime_type = "io.containerd.runc.v2"
plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options.SystemdCgroup = true
T
# shapes NAME FILE DESC [ARGS]: configure it, then containerd and tomllib must both read the
# result, with the handler (runtime_type, options.BinaryName, SystemdCgroup) in its table
shapes() {
        local n=$1 f=$2 d=$3; shift 3
        cp "$f" "$f.orig"
        run "$n" -- cfg --runtime containerd --config "$f" "$@"
        expect_rc "$n" 0 "$d"
        check "... valid TOML (tomllib reads it)" tget "$f" version
        dump "$n.dump" "$f"
        expect_rc "$n.dump" 0 "... containerd config dump accepts it"
        check "... containerd serves runtimes.nvidia.runtime_type io.containerd.runc.v2" \
                is "$TMP/$n.dump.out" "$NV/runtime_type" '"io.containerd.runc.v2"'
        check "... and runtimes.nvidia.options.BinaryName the shim" is "$TMP/$n.dump.out" "$NV/options/BinaryName" "\"$S\""
        check "... everything else as it was (tomllib: the trees equal without the keys set)" \
                same_but "$f.orig" "$f" version "$NV/runtime_type" "$NV/options/BinaryName" "$NV/options/SystemdCgroup" \
                "$CRI/default_runtime_name" plugins/io.containerd.grpc.v1.cri/enable_cdi
}
shapes s3 "$X/dotted.toml" "an nvidia runtime in dotted form at the top level" --set-as-default
check "... SystemdCgroup copied from the dotted runc handler" is "$TMP/s3.dump.out" "$NV/options/SystemdCgroup" true
check "... default_runtime_name nvidia" is "$TMP/s3.dump.out" "$CRI/default_runtime_name" '"nvidia"'
check "... no table header added for a table defined by dotted keys" [ "$(grep -c '^ *\[' "$X/dotted.toml")" = 0 ]
again s3b "$X/dotted.toml" --runtime containerd --config "$X/dotted.toml" --set-as-default

# dotted keys inside a parent table, default_runtime_name among them
cat >"$X/dotted2.toml" <<'T'
version = 2
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.9"
  containerd.default_runtime_name = "runc"
  containerd.runtimes.nvidia.runtime_type = "io.containerd.runc.v2"
  containerd.runtimes.nvidia.options.BinaryName = "/old/shim"

[plugins."io.containerd.grpc.v1.cri".cni]
  bin_dir = "/opt/cni/bin"
T
shapes s4 "$X/dotted2.toml" "dotted keys inside the CRI plugin's table" --set-as-default --cdi.enabled
check "... default_runtime_name changed in place (one definition)" [ "$(grep -c default_runtime_name "$X/dotted2.toml")" = 1 ]
check "... containerd serves default_runtime_name nvidia" is "$TMP/s4.dump.out" "$CRI/default_runtime_name" '"nvidia"'
check "... enable_cdi in the CRI plugin's table" is "$X/dotted2.toml" plugins/io.containerd.grpc.v1.cri/enable_cdi true
check "... the cni table untouched" is "$X/dotted2.toml" plugins/io.containerd.grpc.v1.cri/cni '{"bin_dir": "/opt/cni/bin"}'
again s4b "$X/dotted2.toml" --runtime containerd --config "$X/dotted2.toml" --set-as-default --cdi.enabled

# inline tables: runtimes = { ... } (containerd refuses a [..runtimes.nvidia] header after it)
cat >"$X/inline.toml" <<'T'
version = 2
[plugins."io.containerd.grpc.v1.cri".containerd]
  runtimes = { runc = { runtime_type = "io.containerd.runc.v2", options = { SystemdCgroup = true } } }
T
shapes s5 "$X/inline.toml" "the runtimes as an inline table"
check "... the runc handler kept" is "$TMP/s5.dump.out" "$CRI/runtimes/runc/options/SystemdCgroup" true
check "... SystemdCgroup copied from it" is "$TMP/s5.dump.out" "$NV/options/SystemdCgroup" true
again s5b "$X/inline.toml" --runtime containerd --config "$X/inline.toml"
cat >"$X/inline2.toml" <<'T'
version = 2
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes]
  nvidia = { runtime_type = "io.containerd.runc.v2", options = { BinaryName = "/old/shim" } }
T
shapes s6 "$X/inline2.toml" "an nvidia runtime as an inline table"
check "... BinaryName replaced inside it (one definition)" [ "$(grep -c BinaryName "$X/inline2.toml")" = 1 ]

# multi-line strings (basic and literal) and a multi-line array whose lines look like headers
cat >"$X/multi.toml" <<'T'
version = 2
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.9"
  x_note = '''
[plugins."io.containerd.grpc.v1.cri".containerd]
default_runtime_name = "runc"
'''
  x_list = [
    ["plugins"],
    ['io.containerd.grpc.v1.cri'],
  ]
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    x_doc = """
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
BinaryName = "/wrong"
"""
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
T
shapes s7 "$X/multi.toml" "multi-line strings and arrays with lines that look like headers" --set-as-default
check "... default_runtime_name nvidia" is "$TMP/s7.dump.out" "$CRI/default_runtime_name" '"nvidia"'
check "... the literal string unchanged" is "$X/multi.toml" plugins/io.containerd.grpc.v1.cri/x_note \
        '"[plugins.\"io.containerd.grpc.v1.cri\".containerd]\ndefault_runtime_name = \"runc\"\n"'
check "... the basic string unchanged" is "$X/multi.toml" "$CRI/x_doc" \
        '"[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia.options]\nBinaryName = \"/wrong\"\n"'
check "... the array unchanged" is "$X/multi.toml" plugins/io.containerd.grpc.v1.cri/x_list '[["plugins"], ["io.containerd.grpc.v1.cri"]]'
again s7b "$X/multi.toml" --runtime containerd --config "$X/multi.toml" --set-as-default

# what the editor cannot do is refused, naming the line; the file untouched, no backup
printf 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  runtimes = "none"\n' >"$X/value.toml"
cp "$X/value.toml" "$X/value.orig"
run s8 -- cfg --runtime containerd --config "$X/value.toml"
expect_rc s8 1 "a value where a table must go"
expect_err s8 "$X/value.toml: line 3:" "... is refused, naming the line"
check "... the file untouched" cmp -s "$X/value.toml" "$X/value.orig"
check "... no backup" [ -z "$(ls "$X"/value.toml.*.bak 2>/dev/null)" ]
printf 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  x = """\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n' >"$X/open.toml"
cp "$X/open.toml" "$X/open.orig"
run s9 -- cfg --runtime containerd --config "$X/open.toml"
expect_rc s9 1 "a multi-line string that is never closed"
expect_err s9 "$X/open.toml: line 3:" "... is refused, naming the line where it opens"
check "... the file untouched" cmp -s "$X/open.toml" "$X/open.orig"

# the engine's own check: a config containerd refuses is not replaced
printf 'version = 2\noom_score = "high"\n' >"$X/refused.toml"
cp "$X/refused.toml" "$X/refused.orig"
run s10 -- cfg --runtime containerd --config "$X/refused.toml"
expect_rc s10 1 "an edit that containerd refuses (config dump on the new file)"
expect_err s10 "containerd refuses" "... says that containerd refused it"
expect_err s10 "Can't convert" "... with containerd's own words"
check "... the original untouched" cmp -s "$X/refused.toml" "$X/refused.orig"
check "... no backup, no temporary file left" [ -z "$(ls -A "$X" | grep '^\.\?refused.toml.')" ]
# ... a drop-in is checked before the config that imports it, and put back when containerd
# refuses the config: a new one removed, an existing one as it was, no backup left
printf 'version = 2\noom_score = "high"\n' >"$X/refused2.toml"
cp "$X/refused2.toml" "$X/refused2.orig"
run s10b -- cfg --runtime containerd --config "$X/refused2.toml" --drop-in "$X/conf.d/new.toml"
expect_rc s10b 1 "a config containerd refuses, with a new drop-in"
check "... the config untouched" cmp -s "$X/refused2.toml" "$X/refused2.orig"
check "... the drop-in, checked and written first, removed again" [ ! -e "$X/conf.d/new.toml" ]
printf 'version = 2\n# mine\n' >"$X/conf.d/old.toml"
cp "$X/conf.d/old.toml" "$X/old.orig"
run s10c -- cfg --runtime containerd --config "$X/refused2.toml" --drop-in "$X/conf.d/old.toml"
expect_rc s10c 1 "a config containerd refuses, with a drop-in that was there"
check "... the drop-in as it was" cmp -s "$X/conf.d/old.toml" "$X/old.orig"
check "... and no backup of it left" [ -z "$(ls "$X"/conf.d/old.toml.*.bak 2>/dev/null)" ]
printf 'version = 2\noom_score = "high"\n' >"$X/conf.d/bad.toml"
printf 'version = 2\n' >"$X/refused3.toml"
cp "$X/refused3.toml" "$X/refused3.orig"
run s10d -- cfg --runtime containerd --config "$X/refused3.toml" --drop-in "$X/conf.d/bad.toml"
expect_rc s10d 1 "a drop-in containerd refuses"
expect_err s10d "$X/conf.d/bad.toml: containerd refuses" "... names the drop-in"
check "... the config that would import it untouched" cmp -s "$X/refused3.toml" "$X/refused3.orig"
mkdir -p "$X/nopath"
printf 'version = 2\n' >"$X/nocheck.toml"
run s11 -- env PATH="$X/nopath" "$GS" runtime configure --runtime containerd --config "$X/nocheck.toml"
expect_rc s11 0 "without containerd on PATH"
expect_out_has s11 "note: $X/nocheck.toml: not checked by containerd (containerd not found on PATH)" "... says the result was not checked"
check "... the file written" is "$X/nocheck.toml" "$NV/options/BinaryName" "\"$S\""

# daemon.json: wrong-typed values are refused with a clear error, never a crash
printf '{"default-runtime": null, "log-driver": "json-file"}\n' >"$D/null.json"
cp "$D/null.json" "$D/null.orig"
run d4 -- cfg --runtime docker --config "$D/null.json" --set-as-default
expect_rc d4 1 'docker: "default-runtime": null with --set-as-default'
expect_err d4 "$D/null.json: default-runtime is null, not a string" "... is refused, saying why"
check "... and left as it was" cmp -s "$D/null.json" "$D/null.orig"
run d4b -- cfg --runtime docker --config "$D/null.json"
expect_rc d4b 0 '... without --set-as-default (gpuslice does not write default-runtime) it is left as it is'
check "... and the null kept" [ "$(jq -c '."default-runtime"' "$D/null.json")" = null ]
printf '{"runtimes": [], "features": {"cdi": "yes"}}\n' >"$D/types.json"
cp "$D/types.json" "$D/types.orig"
run d5 -- cfg --runtime docker --config "$D/types.json"
expect_rc d5 1 'docker: "runtimes": [] (an array, not an object)'
expect_err d5 "$D/types.json: runtimes is an array, not an object" "... is refused, saying why"
check "... and left as it was" cmp -s "$D/types.json" "$D/types.orig"
printf '{"features": {"cdi": "yes"}}\n' >"$D/cdi.json"
run d6 -- cfg --runtime docker --config "$D/cdi.json" --cdi.enabled
expect_rc d6 1 'docker: "features": {"cdi": "yes"} with --cdi.enabled'
expect_err d6 "$D/cdi.json: features.cdi is a string, not a boolean" "... is refused, saying why"
printf '{"log-driver": "json-file"}\n' >"$D/mode.json"
chmod 0600 "$D/mode.json"; chown 4242:4343 "$D/mode.json"
run d7 -- cfg --runtime docker --config "$D/mode.json"
expect_rc d7 0 "docker: a 0600 daemon.json owned by 4242:4343"
check "... the backup and the new file keep 0600 and the owner" \
        [ "$(stat -c %a:%u:%g "$D/mode.json" "$D"/mode.json.*.bak | sort -u)" = 600:4242:4343 ]

# CRI-O's drop-in: dotted keys and an inline table; the keys land in crio.runtime's tables
cat >"$R/dotted.toml" <<'T'
[crio.runtime]
  runtimes.runc.runtime_path = ""
  runtimes.nvidia.runtime_path = "/old/shim"
T
run r3 -- cfg --runtime crio --config "$R/dotted.toml" --set-as-default
expect_rc r3 0 "crio: a drop-in with its handlers in dotted form"
check "... crio.runtime.default_runtime nvidia" is "$R/dotted.toml" crio/runtime/default_runtime '"nvidia"'
check "... crio.runtime.runtimes.nvidia: runtime_path the shim, runtime_type oci" \
        is "$R/dotted.toml" crio/runtime/runtimes/nvidia "{\"runtime_path\": \"$S\", \"runtime_type\": \"oci\"}"
check "... runtime_path replaced in place (one definition)" [ "$(grep -c 'nvidia.runtime_path' "$R/dotted.toml")" = 1 ]
printf '[crio.runtime]\nruntimes = { runc = { runtime_path = "" } }\n' >"$R/inline.toml"
run r4 -- cfg --runtime crio --config "$R/inline.toml"
expect_rc r4 0 "crio: a drop-in with its handlers as an inline table"
check "... crio.runtime.runtimes.nvidia in it, runc kept" \
        is "$R/inline.toml" crio/runtime/runtimes "{\"runc\": {\"runtime_path\": \"\"}, \"nvidia\": {\"runtime_path\": \"$S\", \"runtime_type\": \"oci\"}}"
check "... the crio drop-in shipped by the first run: keys in crio.runtime.runtimes.nvidia" \
        is "$R/crio.conf.d/99-gpuslice.toml" crio/runtime/runtimes/nvidia/runtime_type '"oci"'

# ---- usage --------------------------------------------------------------------------------
run u1 -- cfg --runtime podman
expect_rc u1 2 "an unknown --runtime is a usage error"
run u2 -- cfg
expect_rc u2 2 "no --runtime is a usage error"
run u3 -- cfg --runtime docker --config "$D/x.json" --path relative/shim
expect_rc u3 1 "a relative --path is refused"
finish
