#!/usr/bin/python3
"""Wire compatibility of the project's kubelet API .proto files with the kubelet's own
(tests/k8s/kubelet_wire.txt, written down from upstream's api.proto files: its header says how).

    proto_compat.py SOURCE_DIR [WIRE_FILE]

For each API in the wire file: the project's .proto must have its services' methods (request,
response, streaming) and its messages with the same fields: name -> number, type, label (a field
renumbered, retyped, made repeated, missing or added is a failure); and every gRPC path string
("/PKG.SERVICE/...") in the files its `paths` lines name must use the kubelet's package (the path
is what the kubelet calls: a plugin that serves another one answers Unimplemented). Prints one
line per check (ok - / not ok - ), exits 1 on any failure or when nothing was checked.
"""
import glob
import os
import re
import sys


def parse_proto(text):
    """package, {(service, method): (req, resp, stream)}, {message: {field: (number, type, label)}}"""
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    m = re.search(r"\bpackage\s+([\w.]+)\s*;", text)
    package = m.group(1) if m else ""
    rpcs, messages = {}, {}
    for s in re.finditer(r"\bservice\s+(\w+)\s*\{((?:[^{}]|\{[^{}]*\})*)\}", text):
        for r in re.finditer(r"\brpc\s+(\w+)\s*\(\s*(stream\s+)?([\w.]+)\s*\)\s*returns\s*\(\s*(stream\s+)?([\w.]+)\s*\)",
                             s.group(2)):
            rpcs[(s.group(1), r.group(1))] = (r.group(3), r.group(5), bool(r.group(2) or r.group(4)))
    for mm in re.finditer(r"\bmessage\s+(\w+)\s*\{([^{}]*)\}", text):
        fields = {}
        for f in re.finditer(r"(repeated\s+|optional\s+)?(map\s*<\s*\w+\s*,\s*[\w.]+\s*>|[\w.]+)\s+(\w+)\s*=\s*(\d+)",
                             mm.group(2)):
            typ = re.sub(r"\s+", "", f.group(2))
            label = "repeated" if f.group(1) and f.group(1).strip() == "repeated" else "single"
            fields[f.group(3)] = (int(f.group(4)), typ, label)
        messages[mm.group(1)] = fields
    return package, rpcs, messages


def parse_wire(path):
    """[api dicts], [(prefixes, globs)]"""
    apis, byname, path_rules, pending = [], {}, [], []
    cur = msg = None
    for n, line in enumerate(open(path), 1):
        line = line.split("#", 1)[0].rstrip()
        if not line:
            continue
        w = line.split()
        if w[0] == "api":
            cur = {"name": w[1], "proto": w[2], "package": "", "rpcs": {}, "messages": {}, "source": ""}
            apis.append(cur)
            byname[w[1]] = cur
            msg = None
        elif w[0] == "source":
            cur["source"] = " ".join(w[1:])
        elif w[0] == "package":
            cur["package"] = w[1]
        elif w[0] == "same-as":
            cur["rpcs"], cur["messages"] = byname[w[1]]["rpcs"], byname[w[1]]["messages"]
        elif w[0] == "rpc":
            cur["rpcs"][(w[1], w[2])] = (w[3], w[4], len(w) > 5 and w[5] == "stream")
        elif w[0] == "message":
            msg = cur["messages"].setdefault(w[1], {})
        elif w[0] in ("single", "repeated"):
            msg[w[2]] = (int(w[3]), w[1], w[0])
        elif w[0] == "paths-of":
            pending += ["/%s.%s/" % (byname[a]["package"], w[1]) for a in w[2:]]
        elif w[0] == "paths":
            path_rules.append((pending, w[1:]))
            pending = []
        else:
            raise SystemExit("%s:%d: what is '%s'?" % (path, n, w[0]))
    return apis, path_rules


def main():
    src = sys.argv[1]
    wire = sys.argv[2] if len(sys.argv) > 2 else os.path.join(src, "tests/k8s/kubelet_wire.txt")
    apis, path_rules = parse_wire(wire)
    nok = nfail = 0

    def check(cond, desc, detail=""):
        nonlocal nok, nfail
        if cond:
            nok += 1
            print("ok - " + desc)
        else:
            nfail += 1
            print("not ok - " + desc + (": " + detail if detail else ""))

    for api in apis:
        _, rpcs, messages = parse_proto(open(os.path.join(src, api["proto"])).read())
        where = "%s (%s; upstream %s)" % (api["proto"], api["name"], api["source"].split()[1] if api["source"] else "?")
        for key, want in sorted(api["rpcs"].items()):
            got = rpcs.get(key)
            check(got == want, "%s: rpc %s.%s(%s) returns (%s%s)" % (where, key[0], key[1], want[0],
                  "stream " if want[2] else "", want[1]), "the project has %s" % (got,))
        for key in sorted(set(rpcs) - set(api["rpcs"])):
            check(False, "%s: rpc %s.%s is not the kubelet's" % (where, *key))
        for name, fields in sorted(api["messages"].items()):
            got = messages.get(name)
            if got is None:
                check(False, "%s: message %s" % (where, name), "missing")
                continue
            bad = []
            for f, want in sorted(fields.items()):
                if got.get(f) != want:
                    bad.append("%s: kubelet %s, project %s" % (f, want, got.get(f)))
            bad += ["%s: not in the kubelet's %s" % (f, name) for f in sorted(set(got) - set(fields))]
            nums = [v[0] for v in got.values()]
            bad += ["number %d used twice" % k for k in sorted(set(nums)) if nums.count(k) > 1]
            check(not bad, "%s: message %s, its %d fields' names, numbers, types and labels" % (where, name, len(fields)),
                  "; ".join(bad))

    for prefixes, globs in path_rules:
        files = sorted({f for g in globs for f in glob.glob(os.path.join(src, g))})
        svcs = sorted({p.rsplit(".", 1)[1].strip("/") for p in prefixes})
        pat = re.compile(r'["\'](/[\w.]+\.(%s)/)' % "|".join(map(re.escape, svcs)))
        seen, wrong = set(), []
        for f in files:
            for n, line in enumerate(open(f, errors="replace"), 1):
                for m in pat.finditer(line):
                    if m.group(1) in prefixes:
                        seen.add(m.group(1))
                    else:
                        wrong.append("%s:%d: %s" % (os.path.relpath(f, src), n, m.group(1)))
        check(not wrong, "the gRPC paths of %s in %s are the kubelet's (%s)" % ("/".join(svcs), " ".join(globs),
              " ".join(prefixes)), "; ".join(wrong[:8]) + (" ..." if len(wrong) > 8 else ""))
        check(seen == set(prefixes), "... and each of them is used there (%d files)" % len(files),
              "never: " + " ".join(sorted(set(prefixes) - seen)))

    print("# %d ok, %d not ok, 0 skipped" % (nok, nfail))
    if nok + nfail == 0:
        print("# no check ran: that is not a pass")
        return 1
    return 1 if nfail else 0


if __name__ == "__main__":
    sys.exit(main())
