#!/usr/bin/env python3
"""Checks of deploy/helm/gpuslice that need no helm (tests/k8s/test_helm_chart.sh).

    helm_check.py compare RENDERED PLAIN.yaml...   the rendered chart's objects are the plain
                                                   manifests' objects, one by one (by kind,
                                                   namespace and name), and no more
    helm_check.py meta CHART VERSION               Chart.yaml's fields; appVersion is VERSION
    helm_check.py values CHART                     every value a template reads is in values.yaml
    helm_check.py static CHART                     each template's YAML, its actions taken out
                                                   (a line that is only an action dropped, one
                                                   inside a line a placeholder), parses

Each prints what it found wrong and exits 1, or prints "ok" and exits 0.
"""
import os
import re
import sys

import yaml


def objects(paths):
    out = {}
    for p in paths:
        with open(p) as f:
            for d in yaml.safe_load_all(f):
                if not d:
                    continue
                md = d.get("metadata", {})
                key = (d.get("kind"), md.get("namespace", ""), md.get("name"))
                if key in out:
                    raise SystemExit("%s: %s twice" % (p, key))
                out[key] = d
    return out


def diff(a, b, path=""):
    """The paths where a and b differ (a: rendered, b: plain)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            if k not in a:
                out.append("%s.%s: missing from the chart (plain: %r)" % (path, k, b[k]))
            elif k not in b:
                out.append("%s.%s: only in the chart (%r)" % (path, k, a[k]))
            else:
                out += diff(a[k], b[k], "%s.%s" % (path, k))
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [x for i, (p, q) in enumerate(zip(a, b)) for x in diff(p, q, "%s[%d]" % (path, i))]
    return [] if a == b and type(a) is type(b) else ["%s: chart %r, plain %r" % (path, a, b)]


def compare(rendered, plain):
    r, p = objects([rendered]), objects(plain)
    bad = []
    for k in sorted(set(r) | set(p), key=str):
        if k not in r:
            bad.append("%s/%s/%s: in the plain manifests, not rendered by the chart" % k)
        elif k not in p:
            bad.append("%s/%s/%s: rendered by the chart, not in the plain manifests" % k)
        else:
            bad += ["%s/%s: %s" % (k[0], k[2], d) for d in diff(r[k], p[k])]
    if bad:
        print("\n".join(bad))
        return 1
    print("ok: %d objects alike (%s)" % (len(r), ", ".join(sorted({k[0] for k in r}))))
    return 0


def meta(chart, version):
    m = yaml.safe_load(open(os.path.join(chart, "Chart.yaml")))
    bad = []
    if m.get("apiVersion") != "v2":
        bad.append("apiVersion %r, not v2" % m.get("apiVersion"))
    if m.get("name") != os.path.basename(os.path.normpath(chart)):
        bad.append("name %r is not the chart's directory" % m.get("name"))
    if not re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?", str(m.get("version", ""))):
        bad.append("version %r is not SemVer 2" % m.get("version"))
    if not isinstance(m.get("appVersion"), str) or m["appVersion"] != version:
        bad.append("appVersion %r is not the project's version %r" % (m.get("appVersion"), version))
    if m.get("type", "application") != "application":
        bad.append("type %r" % m.get("type"))
    if not m.get("description"):
        bad.append("no description")
    if "kubeVersion" in m and not re.fullmatch(r"[<>=!~^ 0-9a-z.,|-]+", m["kubeVersion"]):
        bad.append("kubeVersion %r is not a version constraint" % m["kubeVersion"])
    if bad:
        print("\n".join(bad))
        return 1
    print("ok")
    return 0


VALUES = re.compile(r"(\$[A-Za-z0-9_]*)?\.Values((?:\.[A-Za-z0-9_]+)*)")
ASSIGN = re.compile(r"(\$[A-Za-z0-9_]+)\s*:=\s*\$?\.Values((?:\.[A-Za-z0-9_]+)*)")
RANGE = re.compile(r"range\s+(\$[A-Za-z0-9_]+)\s*:=\s*\$?\.Values((?:\.[A-Za-z0-9_]+)*)")
ALIAS = re.compile(r"(\$[A-Za-z0-9_]+)((?:\.[A-Za-z0-9_]+)+)")


def lookup(values, path):
    cur = values
    for k in path:
        if not isinstance(cur, dict) or k not in cur:
            return False, None
        cur = cur[k]
    return True, cur


def values_used(chart):
    """Every .Values.a.b (also through $x := .Values.a, and $t of range $t := .Values.list: in
    every item of the list) names a key of values.yaml."""
    values = yaml.safe_load(open(os.path.join(chart, "values.yaml"))) or {}
    tdir = os.path.join(chart, "templates")
    bad, n = [], 0
    for f in sorted(os.listdir(tdir)):
        src = open(os.path.join(tdir, f)).read()
        maps, lists = {}, {}
        for m in RANGE.finditer(src):
            lists[m.group(1)] = m.group(2).split(".")[1:]
        for m in ASSIGN.finditer(src):
            if m.group(1) not in lists:
                maps[m.group(1)] = m.group(2).split(".")[1:]
        for m in VALUES.finditer(src):
            if m.group(1) and m.group(1) != "$":
                continue
            n += 1
            path = m.group(2).split(".")[1:]
            if not lookup(values, path)[0]:
                bad.append("%s: .Values.%s is not in values.yaml" % (f, ".".join(path)))
        for m in ALIAS.finditer(src):
            var, path = m.group(1), m.group(2).split(".")[1:]
            if path and path[0] == "Values":
                continue
            if var in maps:
                n += 1
                if not lookup(values, maps[var] + path)[0]:
                    bad.append("%s: %s.%s (.Values.%s) is not in values.yaml" %
                               (f, var, ".".join(path), ".".join(maps[var] + path)))
            elif var in lists:
                found, items = lookup(values, lists[var])
                if not found or not isinstance(items, list) or not items:
                    bad.append("%s: %s ranges over .Values.%s, no list in values.yaml" % (f, var, ".".join(lists[var])))
                    continue
                n += 1
                for i, item in enumerate(items):
                    if not lookup(item, path)[0]:
                        bad.append("%s: %s.%s is not in item %d of .Values.%s" % (f, var, ".".join(path), i, ".".join(lists[var])))
    if n == 0:
        bad.append("no .Values read by any template: the scan found nothing")
    if bad:
        print("\n".join(bad))
        return 1
    print("ok: %d reads of values, each in values.yaml" % n)
    return 0


ACTION = re.compile(r"\{\{-?\s.*?\s-?\}\}|\{\{[^{}]*\}\}", re.S)


def static(chart):
    """The templates' YAML without helm: a line that is only actions goes (control, comments,
    toYaml/indent of values, which render lines of their own), an action inside a line becomes a
    placeholder; what is left must parse, document by document."""
    tdir = os.path.join(chart, "templates")
    bad, n = [], 0
    for f in sorted(os.listdir(tdir)):
        if not f.endswith(".yaml"):
            continue
        lines = []
        for line in open(os.path.join(tdir, f)).read().split("\n"):
            rest = ACTION.sub("", line)
            if rest.strip() == "" and "{{" in line:
                continue
            if "{{" in rest or "}}" in rest:
                bad.append("%s: an action split across lines or unclosed: %r" % (f, line))
            lines.append(ACTION.sub("X", line))
        try:
            docs = [d for d in yaml.safe_load_all("\n".join(lines)) if d is not None]
        except yaml.YAMLError as e:
            bad.append("%s: %s" % (f, str(e).replace("\n", " ")))
            continue
        for d in docs:
            n += 1
            if not isinstance(d, dict) or not {"apiVersion", "kind", "metadata"} <= set(d):
                bad.append("%s: a document without apiVersion, kind and metadata: %r" % (f, d))
    if n == 0:
        bad.append("no template documents found")
    if bad:
        print("\n".join(bad))
        return 1
    print("ok: %d documents" % n)
    return 0


def main(argv):
    if len(argv) == 2 and argv[0] == "static":
        return static(argv[1])
    if len(argv) >= 3 and argv[0] == "compare":
        try:
            return compare(argv[1], argv[2:])
        except yaml.YAMLError as e:
            print("not YAML: %s" % str(e).replace("\n", " "))
            return 1
    if len(argv) == 3 and argv[0] == "meta":
        return meta(argv[1], argv[2])
    if len(argv) == 2 and argv[0] == "values":
        return values_used(argv[1])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
