#!/usr/bin/env bash
# `gpuslice runtime configure` on sample configs of each engine, as they ship: docker's
# daemon.json (fresh, with unrelated settings, already configured), containerd's config.toml
# (`containerd config default` of Debian's 1.6, a version 3 config of containerd 2.x with its
# drop-in and imports, a commented hand-written file), CRI-O's drop-in (fresh, and the shipped
# crio.conf layout as a drop-in with other settings). Idempotence (a second run: byte-identical,
# "unchanged", no backup), --dry-run (nothing written), everything else kept, backups, errors.
. "$(dirname "$0")/lib.sh"
need jq containerd
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
printf 'version = 3\nimports = ["/etc/containerd/other.toml"]\n\n[plugins."io.containerd.cri.v1.images"]\n  snapshotter = "overlayfs"\n' >"$C/v3.toml"
run c3 -- cfg --runtime containerd --config "$C/v3.toml" --drop-in "$C/conf.d/99-gpuslice.toml"
expect_rc c3 0 "containerd, a version 3 config"
check "... imports keeps its entry and adds the drop-in" \
        [ "$(grep '^imports' "$C/v3.toml")" = "imports = [\"/etc/containerd/other.toml\", \"$C/conf.d/99-gpuslice.toml\"]" ]
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

# ---- usage --------------------------------------------------------------------------------
run u1 -- cfg --runtime podman
expect_rc u1 2 "an unknown --runtime is a usage error"
run u2 -- cfg
expect_rc u2 2 "no --runtime is a usage error"
run u3 -- cfg --runtime docker --config "$D/x.json" --path relative/shim
expect_rc u3 1 "a relative --path is refused"
finish
