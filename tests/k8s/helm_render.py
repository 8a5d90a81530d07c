#!/usr/bin/env python3
"""Render deploy/helm/gpuslice without helm: the subset of Go's text/template and Helm's functions
that the chart uses, and nothing more (Debian 12 has no helm package).

    helm_render.py CHART [--namespace NS] [-f VALUES.yaml]... [--set PATH=VALUE]...

prints the rendered documents (as `helm template` does, without its "# Source" comments). Any
construct or function it does not know is an error (exit 2), never a guess: a chart that grows
past this subset fails its test until this renderer learns the construct (or helm is installed:
tests/k8s/test_helm_chart.sh then renders with helm too). What it implements, as Go and Sprig
define them: actions with {{- and -}} trimming, comments, pipelines, parenthesised commands,
variables ($ and $x := ...), if/else, with/else, range (over lists and maps, with $v or $i, $v),
define/include, and the functions and, or, not, eq, ne, default, quote, indent, nindent, toYaml,
kindIs, list, splitList, last, fail. Truth is Go's: false, 0, nil and empty strings, lists and
maps are false. The merged values are checked against values.schema.json (draft 7) as helm does.
"""
import json
import os
import re
import sys

import yaml


class TemplateError(Exception):
    pass


# ---- lexing: text and actions, with Go's trim markers -------------------------------------------

ACTION = re.compile(r"\{\{(-\s)?(.*?)(\s-)?\}\}", re.S)


def lex(src, name):
    """[(kind, value)]: ("text", s) and ("action", s), trims applied."""
    out, pos = [], 0
    for m in ACTION.finditer(src):
        text = src[pos:m.start()]
        if m.group(1):
            text = text.rstrip(" \t\r\n")
        out.append(("text", text))
        body = m.group(2).strip()
        if not (body.startswith("/*") and body.endswith("*/")):
            out.append(("action", body))
        pos = m.end()
        if m.group(3):
            while pos < len(src) and src[pos] in " \t\r\n":
                pos += 1
    out.append(("text", src[pos:]))
    if "{{" in "".join(v for k, v in out if k == "text"):
        raise TemplateError("%s: an unclosed or malformed action" % name)
    return out


# ---- parsing: a tree of nodes ---------------------------------------------------------------------

TOKEN = re.compile(r'\s*(?:("(?:[^"\\]|\\.)*")|(`[^`]*`)|(:=|=|\||\(|\)|,)|'
                   r'(\$[A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*)|(\.(?:[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*)?)|'
                   r'(-?[0-9]+(?:\.[0-9]+)?)|([A-Za-z_][A-Za-z0-9_]*))')


def tokens(s):
    out, pos = [], 0
    s = s.rstrip()
    while pos < len(s):
        m = TOKEN.match(s, pos)
        if not m or m.end() == pos:
            raise TemplateError("cannot read %r at %r" % (s, s[pos:]))
        pos = m.end()
        kinds = ("str", "raw", "punct", "var", "field", "num", "ident")
        for k, v in zip(kinds, m.groups()):
            if v is not None:
                out.append((k, v))
                break
    return out


def parse_pipeline(toks):
    """A pipeline: optional declarations ($a := / $a, $b :=), then commands joined by '|'."""
    decl = []
    if toks and toks[0][0] == "var":
        i = 0
        names = [toks[0][1]]
        if len(toks) > 3 and toks[1] == ("punct", ",") and toks[2][0] == "var":
            names.append(toks[2][1])
            i = 2
        if len(toks) > i + 1 and toks[i + 1] in (("punct", ":="), ("punct", "=")):
            decl = names
            toks = toks[i + 2:]
    cmds, cur, depth, group = [], [], 0, []
    for t in toks:
        if depth:
            if t == ("punct", "("):
                depth += 1
            elif t == ("punct", ")"):
                depth -= 1
                if depth == 0:
                    cur.append(("paren", parse_pipeline(group)))
                    group = []
                    continue
            group.append(t)
        elif t == ("punct", "("):
            depth = 1
        elif t == ("punct", "|"):
            cmds.append(cur)
            cur = []
        elif t[0] == "punct":
            raise TemplateError("unexpected %r" % t[1])
        else:
            cur.append(t)
    if depth:
        raise TemplateError("unbalanced parentheses")
    cmds.append(cur)
    if any(not c for c in cmds):
        raise TemplateError("an empty command in a pipeline")
    return {"decl": decl, "cmds": cmds}


def parse(items, name):
    """The node list of a template; defines go to a dict of their own."""
    defines = {}

    def block(i, enders):
        nodes = []
        while i < len(items):
            kind, val = items[i]
            if kind == "text":
                if val:
                    nodes.append(("text", val))
                i += 1
                continue
            word = val.split(None, 1)[0] if val else ""
            rest = val[len(word):].strip()
            if word in enders:
                return nodes, i, word, rest
            if word in ("if", "with", "range"):
                body, i, end, _ = block(i + 1, ("else", "end"))
                other = []
                if end == "else":
                    other, i, end, _ = block(i + 1, ("end",))
                nodes.append((word, parse_pipeline(tokens(rest)), body, other))
                i += 1
            elif word == "define":
                dname = json.loads(rest)
                body, i, _, _ = block(i + 1, ("end",))
                defines[dname] = body
                i += 1
            elif word in ("else", "end"):
                raise TemplateError("%s: an unexpected {{ %s }}" % (name, word))
            elif word in ("block", "template", "break", "continue", "tpl"):
                raise TemplateError("%s: {{ %s }} is not in this renderer's subset" % (name, word))
            else:
                nodes.append(("action", parse_pipeline(tokens(val))))
                i += 1
        if enders:
            raise TemplateError("%s: missing {{ end }}" % name)
        return nodes, i, None, None

    nodes, _, _, _ = block(0, ())
    return nodes, defines


# ---- evaluation -----------------------------------------------------------------------------------

def truth(v):
    return not (v is None or v is False or v == 0 and not isinstance(v, bool) or v in ("", [], {}))


def gostr(v):
    """How Go's fmt prints a value: what quote and interpolation show."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, (dict, list)):
        raise TemplateError("a map or list printed as text: %r" % (v,))
    return str(v)


def kind_of(v):
    if v is None:
        return "invalid"
    for t, k in ((bool, "bool"), (int, "int"), (float, "float64"), (str, "string"), (list, "slice"),
                 (dict, "map")):
        if isinstance(v, t):
            return k
    return "unknown"


def indent(n, s):
    pad = " " * int(n)
    return pad + gostr(s).replace("\n", "\n" + pad)


def fail(msg):
    raise TemplateError("fail: " + gostr(msg))


def to_yaml(v):
    if v is None:
        return "null"
    return yaml.safe_dump(v, default_flow_style=False, sort_keys=True).rstrip("\n")


FUNCS = {
    "not": lambda v: not truth(v),
    "and": lambda *a: next((x for x in a if not truth(x)), a[-1]),
    "or": lambda *a: next((x for x in a if truth(x)), a[-1]),
    "eq": lambda a, *b: any(a == x for x in b),
    "ne": lambda a, b: a != b,
    "default": lambda d, v=None: v if truth(v) else d,
    "quote": lambda *a: " ".join(json.dumps(gostr(x), ensure_ascii=False) for x in a if x is not None),
    "indent": indent,
    "nindent": lambda n, s: "\n" + indent(n, s),
    "toYaml": to_yaml,
    "kindIs": lambda k, v: kind_of(v) == k,
    "list": lambda *a: list(a),
    "splitList": lambda sep, s: gostr(s).split(sep),
    "last": lambda l: l[-1] if l else None,
    "fail": fail,
}


class Renderer:
    def __init__(self, defines, root):
        self.defines, self.root = defines, root

    def field(self, obj, path, what):
        for p in path:
            if isinstance(obj, dict):
                obj = obj.get(p)
            elif obj is None:
                raise TemplateError("nil pointer evaluating %s" % what)
            else:
                raise TemplateError("can't evaluate field %s in %s" % (p, what))
        return obj

    def operand(self, t, dot, scope):
        kind, v = t
        if kind == "str":
            return json.loads(v)
        if kind == "raw":
            return v[1:-1]
        if kind == "num":
            return float(v) if "." in v else int(v)
        if kind == "field":
            return dot if v == "." else self.field(dot, v[1:].split("."), v)
        if kind == "var":
            name, *path = v.split(".")
            for s in reversed(scope):
                if name in s:
                    return self.field(s[name], path, v)
            raise TemplateError("undefined variable %s" % name)
        if kind == "paren":
            return self.pipeline(v, dot, scope)
        if kind == "ident":
            if v in ("true", "false"):
                return v == "true"
            if v == "nil":
                return None
            return self.call(v, [], dot)
        raise TemplateError("cannot evaluate %r" % (v,))

    def call(self, fn, args, dot):
        if fn == "include":
            if len(args) != 2 or args[0] not in self.defines:
                raise TemplateError("include of an unknown template %r" % (args[:1],))
            return self.nodes(self.defines[args[0]], args[1], [{"$": args[1]}])
        if fn not in FUNCS:
            raise TemplateError("function %r is not in this renderer's subset" % fn)
        try:
            return FUNCS[fn](*args)
        except TypeError as e:
            raise TemplateError("%s: %s" % (fn, e))

    def pipeline(self, p, dot, scope):
        val, first = None, True
        for cmd in p["cmds"]:
            head = cmd[0]
            if head[0] == "ident" and head[1] not in ("true", "false", "nil"):
                args = [self.operand(t, dot, scope) for t in cmd[1:]]
                if not first:
                    args.append(val)
                val = self.call(head[1], args, dot)
            else:
                if len(cmd) != 1 or not first:
                    raise TemplateError("a value where a function was expected: %r" % (cmd,))
                val = self.operand(head, dot, scope)
            first = False
        return val

    def nodes(self, nodes, dot, scope):
        out = []
        for n in nodes:
            if n[0] == "text":
                out.append(n[1])
            elif n[0] == "action":
                p = n[1]
                val = self.pipeline(p, dot, scope)
                if p["decl"]:
                    scope[-1][p["decl"][0]] = val
                else:
                    out.append(gostr(val) if not isinstance(val, str) else val)
            else:
                out.append(self.control(n, dot, scope))
        return "".join(out)

    def control(self, n, dot, scope):
        word, p, body, other = n
        val = self.pipeline({"decl": [], "cmds": p["cmds"]}, dot, scope)
        if word == "if":
            return self.nodes(body if truth(val) else other, dot, scope + [{}])
        if word == "with":
            if truth(val):
                s = {p["decl"][0]: val} if p["decl"] else {}
                return self.nodes(body, val, scope + [s])
            return self.nodes(other, dot, scope + [{}])
        # range
        if not truth(val):
            return self.nodes(other, dot, scope + [{}])
        if isinstance(val, dict):
            pairs = sorted(val.items())
        elif isinstance(val, list):
            pairs = list(enumerate(val))
        else:
            raise TemplateError("range over %s" % kind_of(val))
        out = []
        for k, v in pairs:
            s = {}
            if len(p["decl"]) == 1:
                s[p["decl"][0]] = v
            elif len(p["decl"]) == 2:
                s[p["decl"][0]], s[p["decl"][1]] = k, v
            out.append(self.nodes(body, v, scope + [s]))
        return "".join(out)


# ---- values, as helm merges them ------------------------------------------------------------------

def merge(base, over):
    for k, v in over.items():
        if v is None:
            base.pop(k, None)
        elif isinstance(v, dict) and isinstance(base.get(k), dict):
            merge(base[k], v)
        else:
            base[k] = v
    return base


def set_value(values, assignment):
    """--set a.b=c, typed as helm's strvals types a value: true/false, null, integers; else text."""
    path, _, raw = assignment.partition("=")
    if raw in ("true", "false"):
        v = raw == "true"
    elif raw == "null":
        v = None
    elif re.fullmatch(r"-?[0-9]+", raw) and (raw == "0" or not raw.lstrip("-").startswith("0")):
        v = int(raw)
    else:
        v = raw
    keys = path.split(".")
    over = cur = {}
    for k in keys[:-1]:
        cur = cur.setdefault(k, {})
    cur[keys[-1]] = v
    merge(values, over)


def render(chart, namespace="default", files=(), sets=()):
    """The chart's rendered documents' text, each template's output in chart order."""
    meta = yaml.safe_load(open(os.path.join(chart, "Chart.yaml")))
    values = yaml.safe_load(open(os.path.join(chart, "values.yaml"))) or {}
    for f in files:
        merge(values, yaml.safe_load(open(f)) or {})
    for s in sets:
        set_value(values, s)
    schema = os.path.join(chart, "values.schema.json")
    if os.path.exists(schema):  # as helm: the merged values against the chart's schema
        import jsonschema
        errors = sorted(jsonschema.Draft7Validator(json.load(open(schema))).iter_errors(values), key=str)
        if errors:
            raise TemplateError("values don't meet the specifications of the schema: " + "; ".join(
                "%s: %s" % (".".join(map(str, e.absolute_path)) or "(root)", e.message) for e in errors))
    root = {"Values": values, "Release": {"Namespace": namespace, "Name": "gpuslice", "Service": "Helm"},
            "Chart": {"Name": meta["name"], "Version": meta["version"], "AppVersion": meta.get("appVersion")}}
    tdir = os.path.join(chart, "templates")
    parsed, defines = {}, {}
    for f in sorted(os.listdir(tdir)):
        if not (f.endswith(".yaml") or f.endswith(".tpl")):
            continue
        try:
            nodes, d = parse(lex(open(os.path.join(tdir, f)).read(), f), f)
        except TemplateError as e:
            raise TemplateError("%s: %s" % (f, e))
        defines.update(d)
        parsed[f] = nodes
    r = Renderer(defines, root)
    out = []
    for f, nodes in parsed.items():
        if f.startswith("_"):
            continue
        try:
            out.append("---\n# Source: gpuslice/templates/%s\n%s\n" % (f, r.nodes(nodes, root, [{"$": root}])))
        except TemplateError as e:
            raise TemplateError("%s: %s" % (f, e))
    return "".join(out)


def main(argv):
    chart, ns, files, sets = None, "default", [], []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--namespace", "-n", "-f", "--values", "--set") and i + 1 < len(argv):
            if a in ("--namespace", "-n"):
                ns = argv[i + 1]
            elif a in ("-f", "--values"):
                files.append(argv[i + 1])
            else:
                sets.extend(argv[i + 1].split(","))
            i += 2
        elif chart is None and not a.startswith("-"):
            chart = argv[i]
            i += 1
        else:
            print("usage: helm_render.py CHART [--namespace NS] [-f VALUES]... [--set A=B]...", file=sys.stderr)
            return 2
    if chart is None:
        print("usage: helm_render.py CHART [--namespace NS] [-f VALUES]... [--set A=B]...", file=sys.stderr)
        return 2
    try:
        sys.stdout.write(render(chart, ns, files, sets))
    except (TemplateError, OSError, ValueError, yaml.YAMLError) as e:
        print("helm_render.py: %s" % e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
