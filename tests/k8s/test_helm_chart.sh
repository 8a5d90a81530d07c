#!/usr/bin/env bash
# deploy/helm/gpuslice (issue 33, item 6): the chart and the plain manifests of deploy/k8s are one
# source of truth. Rendered with its default values the chart gives the objects of
# deploy/k8s/dra/*.yaml (all but claims.yaml, the examples), and with devicePlugin.enabled=true
# those and deploy/k8s/gpuslice-device-plugin.yaml's, compared object by object (by kind,
# namespace and name, every field): a change to either side alone fails here.
#
# Rendered two ways: by tests/k8s/helm_render.py (the subset of Go templates and Helm's functions
# the chart uses; it refuses anything else, so it cannot render a construct it does not know as a
# guess) always, and by helm itself (`helm lint`, `helm template`) when helm is on PATH; without
# helm (Debian 12 has no package) those checks print "skip - ...: helm not installed". Without
# helm too: Chart.yaml's fields, values.yaml as YAML, every value a template reads in values.yaml,
# the values taking effect (namespace, image, the plugin's options, the switches), the rendered
# DaemonSets' options in the plugins' --help.
set -u
SRC=${GS_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${GS_BUILD_DIR:-$SRC/build}
. "$SRC/tests/lib/check.sh"
PY=/usr/bin/python3 # Debian's, with python3-yaml
need "$PY"
CHART=$SRC/deploy/helm/gpuslice
RENDER=("$PY" "$SRC/tests/k8s/helm_render.py" "$CHART")
CHECK=("$PY" "$SRC/tests/k8s/helm_check.py")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
DRA=()
for f in "$SRC"/deploy/k8s/dra/*.yaml; do [ "${f##*/}" = claims.yaml ] || DRA+=("$f"); done
DP=$SRC/deploy/k8s/gpuslice-device-plugin.yaml
VERSION=$(sed -n "s/^ *version *: *'\([^']*\)'.*/\1/p" "$SRC/meson.build" | head -1)

# ---- what needs no rendering ------------------------------------------------------------------
if "${CHECK[@]}" meta "$CHART" "$VERSION" >"$TMP/meta" 2>&1; then
        ok "Chart.yaml: apiVersion v2, name the chart's directory, SemVer version, appVersion the project's ($VERSION)"
else not_ok "Chart.yaml: $(tr '\n' ';' <"$TMP/meta")"; fi
if "$PY" -c 'import sys, yaml; v = yaml.safe_load(open(sys.argv[1])); assert isinstance(v, dict) and v, v' \
        "$CHART/values.yaml" 2>"$TMP/values.err"; then
        ok "values.yaml parses as YAML (a map)"
else not_ok "values.yaml: $(tail -1 "$TMP/values.err")"; fi
if "${CHECK[@]}" values "$CHART" >"$TMP/used" 2>&1; then
        ok "templates: every value read is in values.yaml ($(head -1 "$TMP/used"))"
else not_ok "templates read values that values.yaml lacks: $(tr '\n' ';' <"$TMP/used")"; fi
if "${CHECK[@]}" static "$CHART" >"$TMP/static" 2>&1; then
        ok "templates: their static YAML parts (actions taken out) parse, each document with apiVersion, kind, metadata ($(head -1 "$TMP/static"))"
else not_ok "templates' YAML: $(head -3 "$TMP/static" | tr '\n' ';')"; fi

# ---- rendered without helm: one source of truth -----------------------------------------------
# render NAME ARGS...: the chart rendered by helm_render.py into $TMP/NAME.yaml
render() { local n=$1; shift; "${RENDER[@]}" "$@" >"$TMP/$n.yaml" 2>"$TMP/$n.err"; }
# same DESC RENDERED PLAIN...: the rendered objects are the plain manifests' objects
same() {
        local desc=$1 r=$2; shift 2
        if "${CHECK[@]}" compare "$r" "$@" >"$TMP/cmp" 2>&1; then ok "$desc: $(tail -1 "$TMP/cmp")"
        else not_ok "$desc (one source of truth: change the plain manifest and deploy/helm/gpuslice alike): $(head -8 "$TMP/cmp" | tr '\n' ';')"; fi
}
if render default; then
        same "default values = deploy/k8s/dra/*.yaml but claims.yaml (helm_render.py)" "$TMP/default.yaml" "${DRA[@]}"
else not_ok "default values: helm_render.py: $(tail -2 "$TMP/default.err")"; fi
if render both --set devicePlugin.enabled=true; then
        same "devicePlugin.enabled=true = deploy/k8s/dra/ + gpuslice-device-plugin.yaml (helm_render.py)" \
                "$TMP/both.yaml" "${DRA[@]}" "$DP"
else not_ok "devicePlugin.enabled=true: helm_render.py: $(tail -2 "$TMP/both.err")"; fi
if render dp --set draPlugin.enabled=false,devicePlugin.enabled=true; then
        same "draPlugin.enabled=false, devicePlugin.enabled=true = gpuslice-device-plugin.yaml alone (helm_render.py)" \
                "$TMP/dp.yaml" "$DP"
else not_ok "the device plugin alone: helm_render.py: $(tail -2 "$TMP/dp.err")"; fi

# The comparison can fail: one value changed is found, at its field (not a comparison that
# passes whatever it is given).
if render drift --set draPlugin.cdiDir=/run/cdi && ! "${CHECK[@]}" compare "$TMP/drift.yaml" "${DRA[@]}" >"$TMP/drift" 2>&1 &&
   grep -q "volumes\[2\].hostPath.path: chart '/run/cdi', plain '/var/run/cdi'" "$TMP/drift"; then
        ok "a drift is found: draPlugin.cdiDir=/run/cdi reported at the DaemonSet's cdi volume, args and mount"
else not_ok "draPlugin.cdiDir=/run/cdi not reported as a difference: $(head -4 "$TMP/drift" | tr '\n' ';')"; fi

# The renderer refuses what it does not know (a function outside its subset), rather than guess.
mkdir -p "$TMP/bad/templates"
cp "$CHART/Chart.yaml" "$CHART/values.yaml" "$TMP/bad/"
printf 'kind: ConfigMap\ndata: {x: {{ .Values.namespace | b64enc }}}\n' >"$TMP/bad/templates/cm.yaml"
"$PY" "$SRC/tests/k8s/helm_render.py" "$TMP/bad" >"$TMP/bad.out" 2>&1; rc=$?
if [ "$rc" = 2 ] && grep -q "b64enc.*not in this renderer's subset" "$TMP/bad.out"; then
        ok "helm_render.py refuses a function outside its subset (b64enc: exit 2)"
else not_ok "helm_render.py on an unknown function: exit $rc: $(head -2 "$TMP/bad.out")"; fi

# values.schema.json: values.yaml meets it (the renders above), a typo or a value outside it does
# not (helm checks it too, at install, template and lint)
if "$PY" -c 'import json, sys, jsonschema; jsonschema.Draft7Validator.check_schema(json.load(open(sys.argv[1])))' \
        "$CHART/values.schema.json" 2>"$TMP/schema.err"; then
        ok "values.schema.json is a JSON Schema (draft 7)"
else not_ok "values.schema.json: $(tail -1 "$TMP/schema.err")"; fi
for bad in draPlugin.apiVersion=v1alpha9 draPlugin.statusPeriode=5 draPlugin.resyncPeriod=-1 image.pullPolicy=Sometimes; do
        if ! render schema --set "$bad" && grep -q "values don't meet the specifications of the schema" "$TMP/schema.err"; then
                ok "values.schema.json refuses --set $bad"
        else not_ok "--set $bad rendered: $(head -2 "$TMP/schema.err")"; fi
done

# ---- the values take effect -------------------------------------------------------------------
sets=namespace=gpu-system,image.repository=reg.example/gs,image.tag=0.2.0,image.pullPolicy=Always
sets=$sets,draPlugin.driverName=gpu.example.com,draPlugin.statusPeriod=0,draPlugin.resyncPeriod=5
sets=$sets,draPlugin.stalePeriod=60,draPlugin.healthPeriod=2,draPlugin.metricsListen=127.0.0.1:9500
sets=$sets,draPlugin.apiVersion=v1,admissionPolicy.enabled=true,presets.enabled=false
sets=$sets,devicePlugin.enabled=true
if render custom --set "$sets" --set 'draPlugin.nodeSelector.pool=gpu'; then
        if "$PY" - "$TMP/custom.yaml" >"$TMP/custom.out" 2>&1 <<'PYEOF'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
by = {(d["kind"], d["metadata"]["name"]): d for d in docs}
assert not [d for d in docs if d["kind"] == "ResourceClaimTemplate"], "presets.enabled=false rendered presets"
ns = {d["metadata"].get("namespace") for d in docs if d["kind"] in ("ConfigMap", "DaemonSet", "ServiceAccount")}
assert ns == {"gpu-system"}, ns
ds = by[("DaemonSet", "gpuslice-dra-plugin")]["spec"]["template"]["spec"]
c = ds["containers"][0]
assert c["image"] == "reg.example/gs:0.2.0" and c["imagePullPolicy"] == "Always", c
a = c["args"]
opt = {a[i]: a[i + 1] for i in range(1, len(a) - 1) if a[i].startswith("--")}
assert opt == {"--config": "/etc/gpuslice/config.toml", "--driver-name": "gpu.example.com",
               "--cdi-dir": "/var/run/cdi", "--metrics-listen": "127.0.0.1:9500", "--resync-period": "5",
               "--status-period": "0", "--stale-period": "60", "--health-period": "2", "--api-version": "v1"}, opt
assert c["ports"] == [{"name": "metrics", "containerPort": 9500}], c["ports"]
assert ds["nodeSelector"] == {"gpuslice.io/gpu": "true", "pool": "gpu"}, ds["nodeSelector"]
vap = by[("ValidatingAdmissionPolicy", "gpuslice-dra-plugin-own-node")]["spec"]
assert vap["matchConditions"][0]["expression"].strip() == \
    "request.userInfo.username == 'system:serviceaccount:gpu-system:gpuslice-dra-plugin'", vap["matchConditions"]
assert vap["validations"][2]["expression"] == "variables.slice.spec.driver == 'gpu.example.com'", vap["validations"]
crb = by[("ClusterRoleBinding", "gpuslice-dra-plugin")]
assert crb["subjects"][0]["namespace"] == "gpu-system", crb
role = by[("ClusterRole", "gpuslice-dra-plugin")]
assert [r for r in role["rules"] if r.get("resourceNames") == ["gpu.example.com"]], role
hi = by[("DeviceClass", "gpu-high.gpuslice.io")]["spec"]
assert "device.driver == 'gpu.example.com'" in hi["selectors"][0]["cel"]["expression"]
assert "device.attributes['gpu.example.com']" in hi["selectors"][0]["cel"]["expression"]
assert hi["config"][0]["opaque"]["driver"] == "gpu.example.com", hi
assert by[("DaemonSet", "gpuslice-device-plugin")]["spec"]["template"]["spec"]["containers"][0]["image"] == "reg.example/gs:0.2.0"
print("ok")
PYEOF
        then ok "values take effect: namespace (objects, the policy's service account, the binding), image, pullPolicy, the plugin's options (--status-period 0 kept: 0 is a value), metrics port, driver name (RBAC, policy, classes), nodeSelector merged, presets off"
        else not_ok "values: $(tail -3 "$TMP/custom.out" | tr '\n' ';')"; fi
else not_ok "values: helm_render.py: $(tail -2 "$TMP/custom.err")"; fi

# Every option the rendered DaemonSets give is one the plugins' --help lists.
GS=$BUILD/gpuslice
if [ -x "$GS" ]; then
        "$GS" dra-plugin --help >"$TMP/dra.help" 2>&1
        "$GS" device-plugin --help >"$TMP/dp.help" 2>&1
        if "$PY" - "$TMP/custom.yaml" "$TMP/dra.help" "$TMP/dp.help" >"$TMP/help.out" 2>&1 <<'PYEOF'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "DaemonSet"]
helps = {"dra-plugin": open(sys.argv[2]).read(), "device-plugin": open(sys.argv[3]).read()}
assert len(docs) == 2, len(docs)
n = 0
for d in docs:
    args = d["spec"]["template"]["spec"]["containers"][0]["args"]
    for a in args[1:]:
        if a.startswith("--"):
            n += 1
            assert a in helps[args[0]], "%s %s: not in its --help" % (args[0], a)
print("ok", n)
PYEOF
        then ok "the rendered DaemonSets' options ($(cut -d' ' -f2 "$TMP/help.out") of them, every option the values can set) are in the plugins' --help"
        else not_ok "options: $(tail -2 "$TMP/help.out" | tr '\n' ';')"; fi
else skip "the DaemonSets' options against --help: $GS not built"; fi

# v1beta2 (Kubernetes 1.33): the DeviceClasses at resource.k8s.io/v1beta2; presets refused, not
# rendered as claims that would get a whole GPU (v1beta2 has no consumable capacity).
if render beta --set draPlugin.apiVersion=v1beta2,presets.enabled=false &&
   [ "$(grep -c '^apiVersion: resource.k8s.io/v1beta2$' "$TMP/beta.yaml")" = 3 ] &&
   ! grep -q '^apiVersion: resource.k8s.io/v1$' "$TMP/beta.yaml"; then
        ok "draPlugin.apiVersion=v1beta2: the three DeviceClasses at resource.k8s.io/v1beta2"
else not_ok "draPlugin.apiVersion=v1beta2: $(tail -2 "$TMP/beta.err")"; fi
if ! render betapresets --set draPlugin.apiVersion=v1beta2 && grep -q "presets need resource.k8s.io/v1" "$TMP/betapresets.err"; then
        ok "draPlugin.apiVersion=v1beta2 with presets on: refused (fail: presets need resource.k8s.io/v1)"
else not_ok "v1beta2 with presets rendered: $(head -3 "$TMP/betapresets.yaml" "$TMP/betapresets.err")"; fi
if "${RENDER[@]}" -f <(printf 'presets:\n  namespaces: [team-a, team-b]\nadmissionPolicy:\n  enabled: false\n') >"$TMP/ns.yaml" 2>"$TMP/ns.err" &&
   [ "$("$PY" -c 'import sys, yaml; print(sorted((d["metadata"]["name"], d["metadata"]["namespace"]) for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "ResourceClaimTemplate"))' "$TMP/ns.yaml")" = \
     "[('gpu-half', 'team-a'), ('gpu-half', 'team-b'), ('gpu-quarter', 'team-a'), ('gpu-quarter', 'team-b')]" ] &&
   ! grep -q ValidatingAdmissionPolicy "$TMP/ns.yaml"; then
        ok "presets.namespaces [team-a, team-b]: each preset in each namespace; admissionPolicy.enabled=false: no policy"
else not_ok "presets.namespaces / admissionPolicy.enabled: $(tail -2 "$TMP/ns.err")"; fi

if "${RENDER[@]}" --namespace gpu-ops --set namespace= >"$TMP/relns.yaml" 2>"$TMP/relns.err" &&
   [ "$(grep -c '^  namespace: gpu-ops$' "$TMP/relns.yaml")" = 3 ] && ! grep -q 'namespace: kube-system' "$TMP/relns.yaml" &&
   grep -q "system:serviceaccount:gpu-ops:gpuslice-dra-plugin'" "$TMP/relns.yaml"; then
        ok "namespace empty: the release's (--namespace gpu-ops: the ConfigMap, ServiceAccount, DaemonSet, the binding's subject and the policy's service account)"
else not_ok "namespace empty: $(grep -n 'namespace' "$TMP/relns.yaml" | head -5 | tr '\n' ';') $(tail -1 "$TMP/relns.err")"; fi

# ---- helm itself ------------------------------------------------------------------------------
if command -v helm >/dev/null 2>&1; then
        if helm lint --strict "$CHART" >"$TMP/lint" 2>&1; then ok "helm lint --strict: $(grep -c . "$TMP/lint") lines, no error"
        else not_ok "helm lint: $(grep -E 'ERROR|WARNING' "$TMP/lint" | head -3 | tr '\n' ';')"; fi
        if helm template gpuslice "$CHART" >"$TMP/helm-default.yaml" 2>"$TMP/helm.err"; then
                same "helm template, default values = deploy/k8s/dra/*.yaml but claims.yaml" "$TMP/helm-default.yaml" "${DRA[@]}"
        else not_ok "helm template: $(tail -2 "$TMP/helm.err")"; fi
        if helm template gpuslice "$CHART" --set devicePlugin.enabled=true >"$TMP/helm-both.yaml" 2>"$TMP/helm.err"; then
                same "helm template, devicePlugin.enabled=true = deploy/k8s/dra/ + gpuslice-device-plugin.yaml" \
                        "$TMP/helm-both.yaml" "${DRA[@]}" "$DP"
        else not_ok "helm template --set devicePlugin.enabled=true: $(tail -2 "$TMP/helm.err")"; fi
        if helm template gpuslice "$CHART" --set "$sets" --set draPlugin.nodeSelector.pool=gpu >"$TMP/helm-custom.yaml" 2>"$TMP/helm.err"; then
                same "helm template and helm_render.py alike with every value changed" "$TMP/helm-custom.yaml" "$TMP/custom.yaml"
        else not_ok "helm template --set ...: $(tail -2 "$TMP/helm.err")"; fi
else
        skip "helm lint: helm not installed"
        skip "helm template (default values, the device plugin on, every value changed) against the plain manifests and helm_render.py: helm not installed"
fi
finish
