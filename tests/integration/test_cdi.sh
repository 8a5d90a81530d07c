#!/usr/bin/env bash
# gpuslice cdi generate | list and cdi-hook, against fake driver roots:
#   1. specs (JSON and YAML, every name strategy, slices) valid against the CDI project's own JSON
#      schema (Debian's golang-github-container-orchestrated-devices-container-device-interface-dev;
#      read from there, never copied), their content, YAML == JSON as PyYAML reads it, `cdi list`;
#   2. error cases and --help;
#   3. cdi-hook create-symlinks / update-ldcache against hostile rootfs trees;
#   4. podman (Debian's 4.3, runc) end to end with --device <kind>=0 from a generated spec.
# jq, podman and runc come with `make test-deps`: without them the test fails (not a skip).
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3 # Debian's, with python3-jsonschema and python3-yaml (not a pyenv python3)
SCHEMA_DIR=/usr/share/gocode/src/github.com/container-orchestrated-devices/container-device-interface/schema
CDI_SPEC=
CDI_DIR_MADE=
CANARY=$(mktemp -d /tmp/gs-cdi-canary.XXXXXX)
chmod 755 "$CANARY"
cleanup() {
        [ -n "$CDI_SPEC" ] && rm -f "$CDI_SPEC"
        [ -n "$CDI_DIR_MADE" ] && rmdir "$CDI_DIR_MADE" 2>/dev/null
        # podman's overlay driver leaves its home bind-mounted on itself: unmount what is below $TMP
        awk -v t="$TMP/" 'index($5, t) == 1 { print $5 }' /proc/self/mountinfo | sort -r |
                while read -r m; do umount -l "$m"; done
        rm -rf "$TMP" "$CANARY"
}
trap cleanup EXIT
command -v jq >/dev/null || { not_ok "jq is not installed (make test-deps)"; finish; }
# the hooks run the lean hook beside gpuslice (gpuslice-hook STAGE, gpuslice-hook create-symlinks ...)
HOOK_PATH=$(readlink -f "$BUILD/gpuslice-hook")

# check.py FILE KIND HOOK_PATH EXPECTED-NAMES...: schema + content; one "FAIL: ..." line per problem.
cat >"$TMP/check.py" <<'EOF'
import json, os, sys
import jsonschema, yaml
path, kind, hook_path, names = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
d = os.environ["SCHEMA_DIR"]
with open(os.path.join(d, "schema.json")) as f:
    schema = json.load(f)
with open(path) as f:
    doc = json.load(f) if path.endswith(".json") else yaml.safe_load(f)
problems = []
try:
    resolver = jsonschema.RefResolver(base_uri="file://" + d + "/", referrer=schema)
    jsonschema.validate(doc, schema, resolver=resolver)
except jsonschema.ValidationError as e:
    problems.append("schema: %s at %s" % (e.message, list(e.absolute_path)))
if doc.get("cdiVersion") != "0.5.0":
    problems.append("cdiVersion %r, wanted 0.5.0" % doc.get("cdiVersion"))
if doc.get("kind") != kind:
    problems.append("kind %r, wanted %r" % (doc.get("kind"), kind))
got = [dev.get("name") for dev in doc.get("devices", [])]
if got != names:
    problems.append("device names %s, wanted %s" % (got, names))
edits = [doc.get("containerEdits", {})] + [dev.get("containerEdits", {}) for dev in doc.get("devices", [])]
for e in edits:
    for n in e.get("deviceNodes", []):
        if not os.path.exists(n.get("hostPath", "")):
            problems.append("device node hostPath missing: %s" % n.get("hostPath"))
    for m in e.get("mounts", []):
        if not os.path.exists(m["hostPath"]):
            problems.append("mount hostPath missing: %s" % m["hostPath"])
    for h in e.get("hooks", []):
        if not h.get("env"):
            problems.append("hook without env (the runtime would pass the image's): %s" % h.get("args"))
        if h.get("path") != hook_path or h.get("args", [""])[0] != os.path.basename(hook_path):
            problems.append("hook path/args: %s %s" % (h.get("path"), h.get("args")))
for p in problems:
    print("FAIL: " + p)
sys.exit(1 if problems else 0)
EOF
export SCHEMA_DIR
have_validator=yes
if ! [ -x "$PY" ] || ! "$PY" -c 'import jsonschema, yaml' 2>/dev/null || ! [ -f "$SCHEMA_DIR/schema.json" ]; then
        have_validator=no
        not_ok "the CDI schema validator is missing (make test-deps: python3-jsonschema python3-yaml" \
               "golang-github-container-orchestrated-devices-container-device-interface-dev)"
fi

# check_spec NAME FILE KIND NAMES...: the checker on FILE
check_spec() {
        local name=$1 file=$2 kind=$3; shift 3
        [ "$have_validator" = yes ] || return 0
        if "$PY" "$TMP/check.py" "$file" "$kind" "$HOOK_PATH" "$@" >"$TMP/$name.check" 2>&1; then
                ok "$name: valid against the CDI schema; cdiVersion 0.5.0, names, hostPaths exist, hooks have an env"
        else
                not_ok "$name: spec check"; sed 's/^/    # /' "$TMP/$name.check" | head -20
        fi
}
# same_doc NAME YAML JSON: PyYAML reads the YAML as the same document as the JSON
same_doc() {
        [ "$have_validator" = yes ] || return 0
        if "$PY" -c 'import json, sys, yaml
a = yaml.safe_load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
sys.exit(0 if a == b else 1)' "$2" "$3"; then ok "$1: PyYAML reads the YAML spec as the JSON spec"; else
                not_ok "$1: the YAML and JSON specs differ as PyYAML reads them"; fi
}
# expect_list NAME WANT-NAMES...: stdout is the qualified names, one per line
expect_names() {
        local name=$1; shift
        printf '%s\n' "$@" >"$TMP/$name.wantnames"
        if diff -u "$TMP/$name.wantnames" "$TMP/$name.out" >"$TMP/$name.diff"; then ok "$name: cdi list names $*"; else
                not_ok "$name: cdi list"; sed 's/^/    # /' "$TMP/$name.diff" | head -20; fi
}
qualify() { local k=$1; shift; for n in "$@"; do echo "$k=$n"; done; }

# ---------------------------------------------------------------------------------------------
# 1. Specs

R1=$(mkroot r1 1gpu.conf)
R2=$(mkroot r2 2gpu.conf)
R8=$(mkroot r8 8gpu-mig.conf)
# every GPU, a GPU in MIG mode too, then its MIG devices (as nvidia-ctk lists them)
uuids() { "$GS" --root "$1" info --json | jq -r '.gpus[] | .uuid, if .mig_enabled then .mig_devices[].uuid else empty end'; }

declare -A NAMES
NAMES[r1.index]="0 all"
NAMES[r1.type-index]="gpu0 all"
NAMES[r1.uuid]="$(uuids "$R1" | tr '\n' ' ')all"
NAMES[r2.index]="0 1 all"
NAMES[r2.type-index]="gpu0 gpu1 all"
NAMES[r2.uuid]="GPU-2f8c1d4e-7a90-3b5c-e6d1-0a9b8c7d6e5f GPU-9e3a5b7c-1d2f-4a6b-8c0d-2e4f6a8b0c1d all"
NAMES[r8.index]="0 1 2 2:0 2:1 2:2 3 4 5 6 7 all"
NAMES[r8.type-index]="gpu0 gpu1 gpu2 mig2:0 mig2:1 mig2:2 gpu3 gpu4 gpu5 gpu6 gpu7 all"
NAMES[r8.uuid]="$(uuids "$R8" | tr '\n' ' ')all"
[ "$(echo "${NAMES[r8.uuid]}" | wc -w)" = 12 ] || not_ok "r8: info --json gave $(echo "${NAMES[r8.uuid]}" | wc -w) uuids"

for r in r1 r2 r8; do
        ROOT=$TMP/$r
        for s in index uuid type-index; do
                n=$r.$s
                # shellcheck disable=SC2086
                set -- ${NAMES[$n]}
                run "$n.json" -- "$GS" --root "$ROOT" cdi generate --format json --device-name-strategy "$s"
                expect_rc "$n.json" 0 "$n: cdi generate --format json"
                mv "$TMP/$n.json.out" "$TMP/$n.spec.json"
                run "$n.yaml" -- "$GS" --root "$ROOT" cdi generate --format yaml --device-name-strategy "$s"
                expect_rc "$n.yaml" 0 "$n: cdi generate --format yaml"
                mv "$TMP/$n.yaml.out" "$TMP/$n.spec.yaml"
                check_spec "$n.json" "$TMP/$n.spec.json" nvidia.com/gpu "$@"
                check_spec "$n.yaml" "$TMP/$n.spec.yaml" nvidia.com/gpu "$@"
                same_doc "$n" "$TMP/$n.spec.yaml" "$TMP/$n.spec.json"
                run "$n.listj" -- "$GS" cdi list --spec "$TMP/$n.spec.json"
                expect_names "$n.listj" $(qualify nvidia.com/gpu "$@")
                run "$n.listy" -- "$GS" cdi list "$TMP/$n.spec.yaml"
                expect_names "$n.listy" $(qualify nvidia.com/gpu "$@")
                run "$n.listg" -- "$GS" --root "$ROOT" cdi list --device-name-strategy "$s"
                expect_names "$n.listg" $(qualify nvidia.com/gpu "$@")
        done
done
run listjson -- "$GS" cdi list --json "$TMP/r2.index.spec.yaml"
[ "$(jq -c . "$TMP/listjson.out")" = '["nvidia.com/gpu=0","nvidia.com/gpu=1","nvidia.com/gpu=all"]' ] &&
        ok "cdi list --json prints a JSON array" || not_ok "cdi list --json: $(cat "$TMP/listjson.out")"

# Content of the 2-GPU spec (JSON, through jq).
S=$TMP/r2.index.spec.json
jqt() { # DESC FILTER: the filter must yield true
        if [ "$(jq -r "$2" "$S" 2>&1)" = true ]; then ok "$1"; else not_ok "$1: $(jq -c "$2" "$S" 2>&1 | head -c 300)"; fi
}
jqt "device 0 is /dev/nvidia0 with hostPath under the root" \
        '.devices[0].containerEdits.deviceNodes == [{"path":"/dev/nvidia0","hostPath":"'"$R2"'/dev/nvidia0"}]'
jqt "device 1 is /dev/nvidia2 (GPU 1 has minor 2)" '.devices[1].containerEdits.deviceNodes | map(.path) == ["/dev/nvidia2"]'
jqt "device all has both GPU nodes" '.devices[2].containerEdits.deviceNodes | map(.path) == ["/dev/nvidia0","/dev/nvidia2"]'
jqt "spec-wide env NVIDIA_VISIBLE_DEVICES=void" '.containerEdits.env == ["NVIDIA_VISIBLE_DEVICES=void"]'
jqt "spec-wide control nodes" \
        '.containerEdits.deviceNodes | map(.path) == ["/dev/nvidiactl","/dev/nvidia-uvm","/dev/nvidia-uvm-tools","/dev/nvidia-modeset"]'
jqt "libcuda mounted read-only at its host path" \
        '[.containerEdits.mounts[] | select(.containerPath == "/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04")] ==
         [{"hostPath":"'"$R2"'/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04","containerPath":"/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04","options":["ro","nosuid","nodev","bind"]}]'
jqt "nvidia-smi and the firmware are mounted read-only" \
        '[.containerEdits.mounts[] | select(.containerPath == "/usr/bin/nvidia-smi" or (.containerPath | startswith("/lib/firmware/nvidia/"))) | .options == ["ro","nosuid","nodev","bind"]] | (length == 3 and all)'
jqt "the persistenced socket and MPS dir are mounted nosuid,nodev,noexec" \
        '[.containerEdits.mounts[] | select(.containerPath == "/run/nvidia-persistenced/socket" or .containerPath == "/tmp/nvidia-mps") | .options == ["nosuid","nodev","noexec","bind"]] | (length == 2 and all)'
jqt "no 32-bit library" '[.containerEdits.mounts[] | select(.containerPath | contains("i386"))] == []'
# The libraries the spec must mount, from the files mkroot.sh made (not from `gpuslice list`, which
# shares the code under test): every driver library is installed as lib<NAME>.so.<driver version>,
# a regular file in the 64-bit lib dir; its SONAME and .so links are symlinks, the decoys of the
# older driver carry another version, the 32-bit ones live in i386-linux-gnu, and VDPAU sits in a
# directory of its own outside the ld.so.cache (mkroot.sh's comments). With every capability in
# the spec, exactly these are mounted under /usr/lib, each from its own path under the root.
(cd "$R2" && find usr/lib/x86_64-linux-gnu -maxdepth 1 -type f -name 'lib*.so.580.159.04' | sed 's|^|/|' | sort) >"$TMP/r2.libs.want"
jq -r '.containerEdits.mounts[] | select(.containerPath | startswith("/usr/lib/"))
        | if .hostPath == ($root + .containerPath) then .containerPath else "hostPath \(.hostPath) for \(.containerPath)" end' \
        --arg root "$R2" "$TMP/r2.index.spec.json" | sort >"$TMP/r2.libs.got"
if [ "$(wc -l <"$TMP/r2.libs.want")" -ge 20 ] && diff -u "$TMP/r2.libs.want" "$TMP/r2.libs.got" >"$TMP/r2.libs.diff"; then
        ok "the spec mounts every driver library mkroot installed ($(wc -l <"$TMP/r2.libs.want")), from the root, and nothing else under /usr/lib"
else not_ok "the spec's library mounts against the root's files"; sed 's/^/    # /' "$TMP/r2.libs.diff" | head -20; fi
jqt "createContainer hooks: gpuslice-hook create-symlinks (libcuda.so -> libcuda.so.1), then update-ldcache" \
        '[.containerEdits.hooks[] | {hookName, args: .args[0:2], env}] == [
            {"hookName":"createContainer","args":["gpuslice-hook","create-symlinks"],"env":["PATH=/usr/sbin:/usr/bin:/sbin:/bin"]},
            {"hookName":"createContainer","args":["gpuslice-hook","update-ldcache"],"env":["PATH=/usr/sbin:/usr/bin:/sbin:/bin"]}]
         and (.containerEdits.hooks[0].args | index("libcuda.so.1::/usr/lib/x86_64-linux-gnu/libcuda.so") != null)
         and .containerEdits.hooks[1].args[2:] == ["--folder","/usr/lib/x86_64-linux-gnu"]'
S=$TMP/r8.index.spec.json
jqt "MIG device 2:1: the parent node and the caps nodes of GI 2 and CI 1" \
        '.devices[4].name == "2:1" and (.devices[4].containerEdits.deviceNodes | map(.path)) ==
         ["/dev/nvidia2","/dev/nvidia-caps/nvidia-cap291","/dev/nvidia-caps/nvidia-cap293"]'
jqt "the GPU in MIG mode has its whole-GPU device too (nvidia-ctk's =2 beside =2:0), its node only" \
        '[.devices[] | select(.name == "2") | .containerEdits.deviceNodes | map(.path)] == [["/dev/nvidia2"]]'
jqt "all: 8 GPU nodes and 5 caps nodes" '(.devices[-1].containerEdits.deviceNodes | length) == 13'

# Slices.
run slices -- "$GS" --root "$R2" cdi generate --json --slice 4g=4Gi,50 --slice half=20Gi --slice lat=2Gi,25,High
expect_rc slices 0 "cdi generate --slice 4g=4Gi,50 --slice half=20Gi --slice lat=2Gi,25,High"
mv "$TMP/slices.out" "$TMP/slices.json"
check_spec slices "$TMP/slices.json" nvidia.com/gpu 0 1 all 0-4g 1-4g all-4g 0-half 1-half all-half 0-lat 1-lat all-lat
S=$TMP/slices.json
jqt "slice 0-4g: GPU 0's node and the limits" \
        '(.devices[] | select(.name == "0-4g") | .containerEdits | .env == ["GPUSLICE_MEMORY_LIMIT=4Gi","GPUSLICE_COMPUTE_LIMIT=50"]
          and (.deviceNodes | map(.path)) == ["/dev/nvidia0"])'
jqt "slice 1-half: memory only" '(.devices[] | select(.name == "1-half") | .containerEdits.env) == ["GPUSLICE_MEMORY_LIMIT=20Gi"]'
jqt "slice *-lat: the limits and the priority (NAME=MEM,COMPUTE,PRIORITY, in lower case)" \
        '[.devices[] | select(.name | endswith("-lat")) | .containerEdits.env] | length == 3 and all(. ==
         ["GPUSLICE_MEMORY_LIMIT=2Gi","GPUSLICE_COMPUTE_LIMIT=25","GPUSLICE_PRIORITY=high"])'
jqt "only the slices given a priority carry one" '[.devices[].containerEdits.env[]? | select(startswith("GPUSLICE_PRIORITY"))] | length == 3'
jqt "slice all-4g: both GPUs" '(.devices[] | select(.name == "all-4g") | .containerEdits.deviceNodes | map(.path)) == ["/dev/nvidia0","/dev/nvidia2"]'
jqt "slice hooks: createRuntime (the limits as its options: the allocator's word) and poststop run gpuslice-hook with an explicit env" \
        '[.devices[] | select(.name == "0-4g") | .containerEdits.hooks[] | {hookName, args, env}] == [
            {"hookName":"createRuntime","args":["gpuslice-hook","--memory=4Gi","--compute-share=50","createRuntime"],"env":["PATH=/usr/sbin:/usr/bin:/sbin:/bin"]},
            {"hookName":"poststop","args":["gpuslice-hook","poststop"],"env":["PATH=/usr/sbin:/usr/bin:/sbin:/bin"]}]'
jqt "slice hooks: memory only, and a priority" \
        '([.devices[] | select(.name == "1-half") | .containerEdits.hooks[0].args] == [["gpuslice-hook","--memory=20Gi","createRuntime"]])
         and ([.devices[] | select(.name == "all-lat") | .containerEdits.hooks[0].args]
              == [["gpuslice-hook","--memory=2Gi","--compute-share=25","--priority=high","createRuntime"]])'
run slicelist -- "$GS" --root "$R2" cdi list --slice 4g=4Gi --device-name-strategy type-index
expect_names slicelist $(qualify nvidia.com/gpu gpu0 gpu1 all gpu0-4g gpu1-4g all-4g)

# --output, the format from the extension, --hook-path, --vendor/--class; YAML that needs quoting.
mkdir -p "$TMP/out"
echo old >"$TMP/out/gpu.json"
run outjson -- "$GS" --root "$R2" cdi generate --output "$TMP/out/gpu.json" --vendor example.com --class vgpu
expect_rc outjson 0 "cdi generate --output FILE.json"
expect_err outjson "wrote 3 devices" "... says what it wrote on stderr"
expect_empty_out outjson "... and prints nothing on stdout"
jq -e '.kind == "example.com/vgpu"' "$TMP/out/gpu.json" >/dev/null && ok "... JSON (from .json), kind example.com/vgpu" ||
        not_ok "--output .json: not the JSON spec"
[ "$(stat -c %a "$TMP/out/gpu.json")" = 644 ] && ok "... mode 0644" || not_ok "mode $(stat -c %a "$TMP/out/gpu.json")"
[ "$(ls -A "$TMP/out")" = gpu.json ] && ok "... replaced atomically (no temporary file left)" || not_ok "left: $(ls -A "$TMP/out")"
run outyaml -- "$GS" --root "$R2" cdi generate -o "$TMP/out/gpu.yaml"
expect_rc outyaml 0 "cdi generate -o FILE.yaml"
# the file exists and is the default spec (index names) as YAML: not JSON (which YAML would read too)
if ! [ -s "$TMP/out/gpu.yaml" ]; then not_ok "--output FILE.yaml: no file written ($(ls -A "$TMP/out" | tr '\n' ' '))"
elif head -c1 "$TMP/out/gpu.yaml" | grep -q '{'; then not_ok "--output .yaml wrote JSON"
else ok "--output FILE.yaml writes a file, not in JSON"
        same_doc "--output FILE.yaml" "$TMP/out/gpu.yaml" "$TMP/r2.index.spec.json"; fi
run outfmt -- "$GS" --root "$R2" cdi generate -o "$TMP/out/spec" --format json
expect_rc outfmt 0 "cdi generate -o FILE --format json"
jq -e .kind "$TMP/out/spec" >/dev/null && ok "--format json wins over the extension" || not_ok "--format json with -o spec"
WEIRD='/opt/a: b #c/"q"/yes/- x/'"$(printf 'caf\xc3\xa9')"'/0'
run weird -- "$GS" --root "$R1" cdi generate --hook-path "$WEIRD"
expect_rc weird 0 "cdi generate --hook-path (YAML)"
mv "$TMP/weird.out" "$TMP/weird.yaml"
run weirdj -- "$GS" --root "$R1" cdi generate --hook-path "$WEIRD" --json
expect_rc weirdj 0 "cdi generate --hook-path --json"
mv "$TMP/weirdj.out" "$TMP/weird.json"
same_doc "a hook path that YAML must quote" "$TMP/weird.yaml" "$TMP/weird.json"
jq -e --arg p "$WEIRD" '[.containerEdits.hooks[].path] | all(. == $p)' "$TMP/weird.json" >/dev/null &&
        ok "--hook-path sets every hook's path" || not_ok "--hook-path"
# --hook-path naming a gpuslice (an older node's, or a wrapper): its verbs, as specs were written
# before the lean hook (they keep working: `gpuslice hook`, `gpuslice cdi-hook` stay)
run oldhook -- "$GS" --root "$R2" cdi generate --json --slice 4g=4Gi --hook-path /usr/bin/gpuslice
jq -e '[.containerEdits.hooks[] | .args[0:3]] == [["gpuslice","cdi-hook","create-symlinks"],["gpuslice","cdi-hook","update-ldcache"]]
        and [.devices[] | select(.name == "0-4g") | .containerEdits.hooks[] | .path, .args] ==
            ["/usr/bin/gpuslice", ["gpuslice","hook","--memory=4Gi","createRuntime"], "/usr/bin/gpuslice", ["gpuslice","hook","poststop"]]' \
        "$TMP/oldhook.out" >/dev/null && ok "--hook-path /usr/bin/gpuslice: gpuslice cdi-hook ... and gpuslice hook STAGE" ||
        not_ok "--hook-path /usr/bin/gpuslice: $(jq -c '[.containerEdits.hooks[].args[0:3]]' "$TMP/oldhook.out" 2>&1)"
run leanhook -- "$GS" --root "$R2" cdi generate --json --slice 4g=4Gi --hook-path /opt/gs/bin/gpuslice-hook
jq -e '[.containerEdits.hooks[], (.devices[] | select(.name == "0-4g") | .containerEdits.hooks[]) | [.path, .args[0:2]]] ==
        [["/opt/gs/bin/gpuslice-hook", ["gpuslice-hook","create-symlinks"]], ["/opt/gs/bin/gpuslice-hook", ["gpuslice-hook","update-ldcache"]],
         ["/opt/gs/bin/gpuslice-hook", ["gpuslice-hook","--memory=4Gi"]], ["/opt/gs/bin/gpuslice-hook", ["gpuslice-hook","poststop"]]]
        and [.devices[] | select(.name == "0-4g") | .containerEdits.hooks[0].args[-1]] == ["createRuntime"]' \
        "$TMP/leanhook.out" >/dev/null && ok "--hook-path .../gpuslice-hook: gpuslice-hook create-symlinks ... and gpuslice-hook STAGE" ||
        not_ok "--hook-path .../gpuslice-hook: $(jq -c '[.containerEdits.hooks[].args[0:2]]' "$TMP/leanhook.out" 2>&1)"
run dotclass -- "$GS" --root "$R1" cdi generate --json --class g.pu
expect_err dotclass "needs cdiVersion 0.6.0" "a '.' in the class: cdiVersion 0.6.0, with a warning for podman 4"
jq -e '.cdiVersion == "0.6.0"' "$TMP/dotclass.out" >/dev/null && ok "... and the spec says 0.6.0" || not_ok "dotted class version"

# ---------------------------------------------------------------------------------------------
# 2. Errors and --help

bad() { # NAME WANT-TEXT DESC ARGS...: exit 1 with "gpuslice: cdi error: ...WANT-TEXT..."
        local name=$1 want=$2 desc=$3; shift 3
        run "$name" -- "$@"
        expect_rc "$name" 1 "$desc"
        expect_err "$name" "gpuslice: cdi error: " "... as a cdi error"
        expect_err "$name" "$want" "... saying '$want'"
}
bad s1 "invalid --slice '4Gi': expected NAME=MEM[,COMPUTE[,PRIORITY]]" "--slice without NAME=" "$GS" --root "$R1" cdi generate --slice 4Gi
bad s2 "the memory size must be more than 0" "--slice a=0" "$GS" --root "$R1" cdi generate --slice a=0
bad s3 "invalid memory size '4GB'" "--slice a=4GB" "$GS" --root "$R1" cdi generate --slice a=4GB
bad s4 "invalid compute share '101'" "--slice a=4Gi,101" "$GS" --root "$R1" cdi generate --slice a=4Gi,101
bad s5 "invalid character ' '" "--slice 'a b=1G'" "$GS" --root "$R1" cdi generate --slice 'a b=1G'
bad s6 "slice 'a' is given twice" "the same slice twice" "$GS" --root "$R1" cdi generate --slice a=1G --slice a=2G
bad s7 "invalid compute share" "cdi list --slice a=1G,x" "$GS" --root "$R1" cdi list --slice a=1G,x
bad s8 "invalid priority 'urgent' (high, normal or low)" "--slice a=4Gi,50,urgent" "$GS" --root "$R1" cdi generate --slice a=4Gi,50,urgent
bad s9 "invalid compute share ''" "--slice a=4Gi,,high (a priority needs a compute share)" "$GS" --root "$R1" cdi generate --slice a=4Gi,,high
bad v1 "invalid vendor '1nvidia.com': must start with a letter" "--vendor 1nvidia.com" "$GS" --root "$R1" cdi generate --vendor 1nvidia.com
bad v2 "invalid vendor 'nvidia..com'" "--vendor nvidia..com" "$GS" --root "$R1" cdi generate --vendor nvidia..com
bad c1 "invalid class 'g/pu'" "--class g/pu" "$GS" --root "$R1" cdi generate --class g/pu
bad c2 "invalid class 'gpu-': must end with a letter or digit" "--class gpu-" "$GS" --root "$R1" cdi generate --class gpu-
bad st "invalid device name strategy 'name'" "--device-name-strategy name" "$GS" --root "$R1" cdi generate --device-name-strategy name
bad fm "invalid --format 'xml'" "--format xml" "$GS" --root "$R1" cdi generate --format xml
bad o1 "cannot write $TMP/nonexistent/x.yaml" "--output in a missing directory" "$GS" --root "$R1" cdi generate -o "$TMP/nonexistent/x.yaml"
bad o2 "it is a directory" "--output naming a directory" "$GS" --root "$R1" cdi generate -o "$TMP/out"
if mkdir -p "$TMP/ro" && mount -t tmpfs -o ro,size=1m tmpfs "$TMP/ro"; then
        bad o3 "Read-only file system" "--output on a read-only file system" "$GS" --root "$R1" cdi generate -o "$TMP/ro/x.json"
        umount "$TMP/ro"
else not_ok "could not mount a read-only tmpfs for the --output test (as root)"; fi
bad l1 "cannot open $TMP/missing.yaml: No such file or directory" "cdi list --spec MISSING" "$GS" cdi list --spec "$TMP/missing.yaml"
printf 'devices: [\n' >"$TMP/garbage.yaml"
bad l2 "invalid YAML" "cdi list on broken YAML" "$GS" cdi list --spec "$TMP/garbage.yaml"
printf '{"cdiVersion": "0.5.0", "kind":' >"$TMP/garbage.json"
bad l3 "invalid JSON" "cdi list on broken JSON" "$GS" cdi list --spec "$TMP/garbage.json"
: >"$TMP/empty.yaml"
bad l4 "empty spec" "cdi list on an empty file" "$GS" cdi list --spec "$TMP/empty.yaml"
printf 'cdiVersion: 0.5.0\ndevices:\n- name: x\n' >"$TMP/nokind.yaml"
bad l5 "no kind" "cdi list on a spec without kind" "$GS" cdi list --spec "$TMP/nokind.yaml"
printf 'cdiVersion: 0.5.0\nkind: a.com/gpu\ndevices: []\n' >"$TMP/nodev.yaml"
bad l6 "the spec has no devices" "cdi list on a spec without devices" "$GS" cdi list --spec "$TMP/nodev.yaml"
head -c 4096 /dev/urandom >"$TMP/random.bin"
run l7 -- "$GS" cdi list --spec "$TMP/random.bin"
expect_rc l7 1 "cdi list on random bytes"
bad l8 "not a regular file" "cdi list on a directory" "$GS" cdi list --spec "$TMP"
run u1 -- "$GS" cdi list --spec "$TMP/r1.index.spec.json" --vendor x.com
expect_rc u1 2 "cdi list --spec with --vendor is a usage error"
run u2 -- "$GS" cdi frobnicate
expect_rc u2 2 "an unknown cdi command"
run u3 -- "$GS" cdi generate --bogus
expect_rc u3 2 "an unknown cdi generate option"
run u4 -- "$GS" cdi-hook frobnicate
expect_rc u4 2 "an unknown cdi-hook command"
for h in "cdi --help" "cdi generate --help" "cdi list --help" "cdi-hook --help" "cdi-hook create-symlinks --help"; do
        n=help-${h// /-}
        # shellcheck disable=SC2086
        run "$n" -- "$GS" $h
        expect_rc "$n" 0 "$h"
        grep -q "^Usage: gpuslice.*cdi" "$TMP/$n.out" && ok "$h prints the usage" || not_ok "$h: $(head -2 "$TMP/$n.out")"
done
run nostate -- "$GS" cdi-hook create-symlinks --link a::/b </dev/null
expect_rc nostate 1 "cdi-hook without an OCI state on stdin"
expect_err nostate "invalid OCI state" "... says so"
run badlink -- "$GS" cdi-hook create-symlinks --link a:/b </dev/null
expect_rc badlink 1 "cdi-hook create-symlinks --link without '::'"
expect_err badlink "expected TARGET::LINK" "... says so"
run relfolder -- "$GS" cdi-hook update-ldcache --folder lib </dev/null
expect_err relfolder "must be an absolute path" "cdi-hook update-ldcache --folder with a relative path"
# the lean hook executable the specs name takes the same commands: gpuslice-hook COMMAND
LH=$BUILD/gpuslice-hook
run lnostate -- "$LH" create-symlinks --link a::/b </dev/null
expect_rc lnostate 1 "gpuslice-hook create-symlinks without an OCI state on stdin"
expect_err lnostate "invalid OCI state" "... says so"
run lhelp -- "$LH" update-ldcache --help
expect_rc lhelp 0 "gpuslice-hook update-ldcache --help"
grep -q "^       gpuslice-hook COMMAND" "$TMP/lhelp.out" && ok "... prints cdi-hook's usage" || not_ok "... $(head -2 "$TMP/lhelp.out")"
run lbad -- "$LH" frobnicate </dev/null
expect_rc lbad 2 "gpuslice-hook frobnicate (neither a stage nor a CDI hook command)"

# ---------------------------------------------------------------------------------------------
# 3. The CDI hooks against hostile rootfs trees (the process is already where a createContainer
#    hook runs: the host's / is visible; everything must stay inside the rootfs), as the specs run
#    them: gpuslice-hook create-symlinks | update-ldcache (the same code as gpuslice cdi-hook)

# hook_bundle NAME: $TMP/NAME with config.json (root.path rootfs) and an empty rootfs
hook_bundle() {
        mkdir -p "$TMP/$1/rootfs"
        echo '{"ociVersion":"1.0.2","root":{"path":"rootfs"},"process":{"env":["LD_PRELOAD=/nonexistent.so"]}}' >"$TMP/$1/config.json"
}
state() { echo '{"ociVersion":"1.0.2","id":"gs-cdi-'"$1"'","status":"creating","pid":1,"bundle":"'"$TMP/$1"'"}'; }
host_sum() { ls -A / "$CANARY" | sha256sum; }
before=$(host_sum)

hook_bundle h1
H=$TMP/h1/rootfs
mkdir -p "$H/usr/lib" "$H/usr/x" "$H/opt"
ln -s / "$H/usr/lib/x86_64-linux-gnu"          # parent is a link to /
ln -s ../../../../../.. "$H/usr/up"             # a ../ chain
ln -s "$CANARY" "$H/usr/canary"                 # an absolute host path
ln -s "$CANARY/victim" "$H/usr/x/libcuda.so"    # the link itself exists, pointing out
run h1 -- env -i "$LH" create-symlinks \
        --link libcuda.so.1::/usr/lib/x86_64-linux-gnu/libcuda.so \
        --link t::/usr/up/gs-cdi-evil \
        --link t::/usr/canary/gs-cdi-evil \
        --link t::/usr/x/libcuda.so \
        --link libcuda.so.1::/opt/new/dir/libcuda.so < <(state h1)
expect_rc h1 0 "create-symlinks in a hostile rootfs"
[ "$(host_sum)" = "$before" ] && [ ! -e /libcuda.so ] && [ ! -L /libcuda.so ] && [ ! -L /gs-cdi-evil ] &&
        ok "... nothing was created outside the rootfs (/ and the canary untouched)" ||
        not_ok "... something appeared outside: $(ls -la /libcuda.so /gs-cdi-evil "$CANARY" 2>&1 | tr '\n' ' ')"
[ "$(readlink "$H/libcuda.so")" = libcuda.so.1 ] && ok "... a parent linking to / resolved to the rootfs itself" ||
        not_ok "... $H/libcuda.so: $(ls -la "$H" | tr '\n' ' ')"
[ "$(readlink "$H/gs-cdi-evil")" = t ] && ok "... a ../ chain stopped at the rootfs" || not_ok "... ../ chain: $(ls -A "$H")"
[ "$(readlink "$H$CANARY/gs-cdi-evil")" = t ] && ok "... an absolute link to a host directory resolved inside the rootfs" ||
        not_ok "... absolute link: $(find "$H" -name gs-cdi-evil)"
[ "$(readlink "$H/usr/x/libcuda.so")" = "$CANARY/victim" ] && [ ! -e "$CANARY/victim" ] &&
        ok "... an existing entry at the link is left alone (not followed)" || not_ok "... existing link changed"
[ "$(readlink "$H/opt/new/dir/libcuda.so")" = libcuda.so.1 ] && ok "... missing parents are created inside the rootfs" ||
        not_ok "... missing parents"

hook_bundle h2
H=$TMP/h2/rootfs
"$SRC/tests/integration/mkrootfs.sh" "$H" || { echo "mkrootfs failed" >&2; exit 1; }
cp "$R2/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04" "$H/usr/lib/x86_64-linux-gnu/"
mkdir -p "$H/opt/nv" && cp "$R2/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.580.159.04" "$H/opt/nv/"
run h2 -- env -i "$LH" update-ldcache --folder /opt/nv --folder /usr/lib/x86_64-linux-gnu --folder /missing < <(state h2)
expect_rc h2 0 "update-ldcache on a rootfs (a missing --folder is skipped)"
chroot "$H" /sbin/ldconfig -p >"$TMP/h2.ldp" 2>&1
grep -q "libnvidia-ml.so.1 (libc6,x86-64) => /opt/nv/libnvidia-ml.so.1" "$TMP/h2.ldp" &&
        grep -q "libcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1" "$TMP/h2.ldp" &&
        ok "... the rootfs's ld.so.cache lists libcuda.so.1 and the --folder's libnvidia-ml.so.1" ||
        not_ok "... ldconfig -p: $(head -5 "$TMP/h2.ldp" | tr '\n' ' ')"
hook_bundle h3
H=$TMP/h3/rootfs
"$SRC/tests/integration/mkrootfs.sh" "$H" || { echo "mkrootfs failed" >&2; exit 1; }
rm -rf "$H/etc" && ln -s "$CANARY" "$H/etc"
run h3 -- env -i "$LH" update-ldcache --folder /usr/lib/x86_64-linux-gnu < <(state h3)
# the hook ran to its end: done (exit 0), or refused with its own error (the sandboxed ldconfig
# cannot write through a link that leads out of the rootfs); only then does "nothing" mean much
if [ "$(rc_of h3)" = 0 ] || { [ "$(rc_of h3)" = 1 ] && grep -q "^gpuslice: cdi-hook error: update-ldcache" "$TMP/h3.err"; }; then
        ok "update-ldcache with /etc linking to a host directory ran (exit $(rc_of h3): $(head -c 100 "$TMP/h3.err"))"
        [ -z "$(ls -A "$CANARY")" ] && ok "... and wrote nothing there" || not_ok "update-ldcache wrote to the host: $(ls -A "$CANARY")"
else not_ok "update-ldcache with /etc linking out: exit $(rc_of h3): $(head -c 200 "$TMP/h3.err")"; fi
[ "$(host_sum)" = "$before" ] && ok "the host's / and the canary are unchanged after the hooks" || not_ok "the host changed"

# ---------------------------------------------------------------------------------------------
# 4. podman end to end

PODMAN=$(command -v podman || true)
RUNC=$(command -v runc || echo /usr/sbin/runc)
if [ -z "$PODMAN" ] || ! [ -x "$RUNC" ]; then
        not_ok "podman or runc is not installed (make test-deps): the podman end-to-end part cannot run"
        finish
fi
VENDOR=test-$$.gpuslice.io
# podman 4.3 reads /etc/cdi and /var/run/cdi only: a spec with a kind of its own, removed on exit.
[ -d /var/run/cdi ] || { mkdir -p /var/run/cdi && CDI_DIR_MADE=/var/run/cdi; }
CDI_SPEC=/var/run/cdi/gpuslice-test-$$.json
# In a sanitizer build, LeakSanitizer in a createContainer hook (the container's pid namespace with
# the host's /proc) cannot list its own threads and fails the hook: turn the leak check off there.
asan_hooks() {
        sanitized || return 0
        jq '(.. | objects | select(has("hookName")) | .env) |= (. + ["ASAN_OPTIONS=detect_leaks=0"])' "$CDI_SPEC" >"$CDI_SPEC.tmp" &&
                mv "$CDI_SPEC.tmp" "$CDI_SPEC"
}
run pgen -- "$GS" --root "$R2" cdi generate --vendor "$VENDOR" -o "$CDI_SPEC"
expect_rc pgen 0 "cdi generate -o $CDI_SPEC"
asan_hooks
P=$TMP/prootfs
"$SRC/tests/integration/mkrootfs.sh" "$P" || { echo "mkrootfs failed" >&2; exit 1; }
ln -sfn busybox "$P/bin/awk"
cp "$R2/etc/fakegpu/gpus.conf" "$P/etc/fakegpu.conf"
cat >"$P/check.sh" <<'EOF'
L=/usr/lib/x86_64-linux-gnu
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $(echo "$2" | tr '\n' ' ')"; }
check() { n=$1; shift; if "$@" >/tmp/check.out 2>&1; then pass "$n"; else fail "$n" "$(head -3 /tmp/check.out)"; fi; }
check nvidia0 test -c /dev/nvidia0
check nvidiactl test -c /dev/nvidiactl
check nvidia-uvm test -c /dev/nvidia-uvm
if test -e /dev/nvidia1 || test -e /dev/nvidia2; then fail no-other-gpu "$(ls /dev/nvidia*)"; else pass no-other-gpu; fi
check libcuda test -f $L/libcuda.so.580.159.04
check libnvml test -f $L/libnvidia-ml.so.580.159.04
for f in libcuda.so.580.159.04 libnvidia-ml.so.580.159.04; do
        o=$(awk -v p=$L/$f '$5 == p { print $6 }' /proc/self/mountinfo | tail -1)
        case ",$o," in *,ro,*) pass "ro-$f" ;; *) fail "ro-$f" "mount options '$o'" ;; esac
done
if (echo x >$L/libcuda.so.580.159.04) 2>/tmp/ro.err; then fail lib-write "a library is writable"
else pass lib-write; fi
[ "$(readlink $L/libcuda.so)" = libcuda.so.1 ] && pass libcuda-link || fail libcuda-link "$(ls -l $L/libcuda.so 2>&1)"
ldconfig -p >/tmp/ldp.out 2>&1
grep -q "libcuda.so.1 (libc6,x86-64) => $L/libcuda.so.1" /tmp/ldp.out && pass ldcache || fail ldcache "$(head -3 /tmp/ldp.out)"
env FAKEGPU_CONFIG=/etc/fakegpu.conf nvidia-smi -L >/tmp/smi.out 2>&1
grep -q "^GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-2f8c1d4e-7a90-3b5c-e6d1-0a9b8c7d6e5f)" /tmp/smi.out &&
        pass smi-L || fail smi-L "$(head -3 /tmp/smi.out)"
[ "$NVIDIA_VISIBLE_DEVICES" = void ] && pass env-void || fail env-void "NVIDIA_VISIBLE_DEVICES=$NVIDIA_VISIBLE_DEVICES"
echo DONE
EOF
# podman's own state in $TMP (--root/--runroot/--tmpdir); runc (crun fails on hybrid cgroups here);
# cgroupfs and file events (no systemd); the hard limits of this machine (no CAP_SYS_RESOURCE).
run podman -- timeout 180 "$PODMAN" --root "$TMP/podman-root" --runroot "$TMP/podman-run" --tmpdir "$TMP/podman-tmp" \
        --cgroup-manager=cgroupfs --events-backend=file --runtime "$RUNC" \
        run --rm --network=none --ulimit nofile=20000:20000 --ulimit nproc=4096:4096 \
        --device "$VENDOR/gpu=0" --rootfs "$P" /bin/sh /check.sh
expect_rc podman 0 "podman run --device $VENDOR/gpu=0 from the generated spec"
for c in nvidia0 nvidiactl nvidia-uvm no-other-gpu libcuda libnvml ro-libcuda.so.580.159.04 ro-libnvidia-ml.so.580.159.04 \
        lib-write libcuda-link ldcache smi-L env-void; do
        line=$(grep -E "^(PASS|FAIL) $c(:|$)" "$TMP/podman.out" | head -1)
        case $line in
        "PASS $c") ok "in the podman container: $c" ;;
        "FAIL $c"*) not_ok "in the podman container: ${line#FAIL }" ;;
        *) not_ok "in the podman container: $c: no result" ;;
        esac
done
grep -qx DONE "$TMP/podman.out" && ok "the check script ran to its end" ||
        { not_ok "the check script did not finish"; sed 's/^/    # /' "$TMP/podman.out" "$TMP/podman.err" | tail -20; }
# A slice device: its createRuntime hook (`gpuslice hook createRuntime`) reads the limit the CDI
# env edit put into config.json and brings the interposer; poststop removes the host state. The
# container waits while /hold exists, so that the host can see the slice's directory meanwhile
# (then "poststop removed it" means something).
run pgen2 -- "$GS" --root "$R2" cdi generate --vendor "$VENDOR" --slice 4g=4Gi --slice lat=2Gi,25,high -o "$CDI_SPEC"
expect_rc pgen2 0 "cdi generate --slice 4g=4Gi --slice lat=2Gi,25,high -o $CDI_SPEC"
asan_hooks
cat >"$P/slice.sh" <<'EOF'
echo "limit=$GPUSLICE_MEMORY_LIMIT"
echo "preload=$(cat /etc/ld.so.preload 2>&1 | tr '\n' ' ')"
echo "slicefile=$(grep '^GPUSLICE_MEMORY_LIMIT=' /etc/gpuslice/slice.conf 2>&1)"
echo "priority=$(grep '^GPUSLICE_PRIORITY=' /etc/gpuslice/slice.conf 2>&1)"
test -c /dev/nvidia0 && echo node=yes
i=0; while [ -e /hold ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
EOF
: >"$P/hold"
run pslice -- timeout 180 "$PODMAN" --root "$TMP/podman-root" --runroot "$TMP/podman-run" --tmpdir "$TMP/podman-tmp" \
        --cgroup-manager=cgroupfs --events-backend=file --runtime "$RUNC" \
        run --rm --network=none --ulimit nofile=20000:20000 --ulimit nproc=4096:4096 --cidfile "$TMP/pslice.cid" \
        --device "$VENDOR/gpu=0-4g" -e CUDA_TASK_PRIORITY=2 --rootfs "$P" /bin/sh /slice.sh &
podman_pid=$! sdir=
for _ in $(seq 600); do
        cid=$(cat "$TMP/pslice.cid" 2>/dev/null)
        [ -n "$cid" ] && [ -f "/run/gpuslice/slices/$cid/owner" ] && { sdir=/run/gpuslice/slices/$cid; break; }
        kill -0 "$podman_pid" 2>/dev/null || break
        sleep 0.1
done
if [ -n "$sdir" ] && grep -qx GPUSLICE_MEMORY_LIMIT=4Gi "$sdir/slice.conf"; then
        ok "... while the container runs, its slice directory $sdir holds owner and slice.conf (4Gi)"
else not_ok "... no slice directory on the host while the container ran (cid '${cid:-}'): $(ls -A /run/gpuslice/slices 2>&1 | tr '\n' ' ')"; fi
rm -f "$P/hold"
wait "$podman_pid"
expect_rc pslice 0 "podman run --device $VENDOR/gpu=0-4g (a slice device)"
grep -qx "priority=GPUSLICE_PRIORITY=low" "$TMP/pslice.out" &&
        ok "... a slice device without a priority: the container's own CUDA_TASK_PRIORITY=2 is the slice's (low)" ||
        not_ok "... container env priority: $(tr '\n' ' ' <"$TMP/pslice.out")"
grep -qx "limit=4Gi" "$TMP/pslice.out" && grep -qx "node=yes" "$TMP/pslice.out" &&
        ok "... the container has GPU 0 and GPUSLICE_MEMORY_LIMIT=4Gi" || not_ok "... env/node: $(tr '\n' ' ' <"$TMP/pslice.out")"
grep -q "^preload=.*libgpuslice-vgpu.so" "$TMP/pslice.out" && grep -qx "slicefile=GPUSLICE_MEMORY_LIMIT=4Gi" "$TMP/pslice.out" &&
        ok "... the createRuntime hook put the interposer and the slice file in" ||
        not_ok "... slicing layer: $(tr '\n' ' ' <"$TMP/pslice.out")"
if [ -n "$sdir" ]; then
        [ ! -e "$sdir" ] && ok "... and poststop removed the slice's host directory" || not_ok "... host state left: $sdir"
fi
# A slice device with a priority: its hook's options are the ceiling; the container may lower it
# (its own CUDA_TASK_PRIORITY=2), never raise it (test_allocator.sh tries every name).
run pprio -- timeout 180 "$PODMAN" --root "$TMP/podman-root" --runroot "$TMP/podman-run" --tmpdir "$TMP/podman-tmp" \
        --cgroup-manager=cgroupfs --events-backend=file --runtime "$RUNC" \
        run --rm --network=none --ulimit nofile=20000:20000 --ulimit nproc=4096:4096 \
        --device "$VENDOR/gpu=0-lat" -e GPUSLICE_PRIORITY=low -e CUDA_TASK_PRIORITY=2 --rootfs "$P" /bin/sh /slice.sh
expect_rc pprio 0 "podman run --device $VENDOR/gpu=0-lat (lat=2Gi,25,high) -e GPUSLICE_PRIORITY=low"
grep -qx "priority=GPUSLICE_PRIORITY=low" "$TMP/pprio.out" && grep -qx "slicefile=GPUSLICE_MEMORY_LIMIT=2Gi" "$TMP/pprio.out" &&
        ok "... the container lowered the slice device's priority (high) to its own (low)" ||
        not_ok "... slice device priority: $(tr '\n' ' ' <"$TMP/pprio.out")"
run pprio2 -- timeout 180 "$PODMAN" --root "$TMP/podman-root" --runroot "$TMP/podman-run" --tmpdir "$TMP/podman-tmp" \
        --cgroup-manager=cgroupfs --events-backend=file --runtime "$RUNC" \
        run --rm --network=none --ulimit nofile=20000:20000 --ulimit nproc=4096:4096 \
        --device "$VENDOR/gpu=0-4g" -e GPUSLICE_PRIORITY=high -e CUDA_TASK_PRIORITY=0 --rootfs "$P" /bin/sh /slice.sh
expect_rc pprio2 0 "podman run --device $VENDOR/gpu=0-4g (no priority) -e GPUSLICE_PRIORITY=high -e CUDA_TASK_PRIORITY=0"
grep -qx "priority=GPUSLICE_PRIORITY=normal" "$TMP/pprio2.out" &&
        ok "... a slice device without a priority is normal: the container cannot raise it" ||
        not_ok "... slice device priority: $(tr '\n' ' ' <"$TMP/pprio2.out")"
run podman-bad -- timeout 120 "$PODMAN" --root "$TMP/podman-root" --runroot "$TMP/podman-run" --tmpdir "$TMP/podman-tmp" \
        --cgroup-manager=cgroupfs --events-backend=file --runtime "$RUNC" \
        run --rm --network=none --ulimit nofile=20000:20000 --ulimit nproc=4096:4096 \
        --device "$VENDOR/gpu=7" --rootfs "$P" /bin/true
[ "$(rc_of podman-bad)" != 0 ] && ok "podman refuses a device the spec does not offer ($VENDOR/gpu=7)" ||
        not_ok "podman accepted $VENDOR/gpu=7"
expect_err podman-bad "unresolvable CDI devices $VENDOR/gpu=7" "... because the spec lacks it (not for another reason)"
finish
