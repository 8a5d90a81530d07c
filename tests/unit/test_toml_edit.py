#!/usr/bin/env python3
"""The engines' TOML editor (src/engine/toml_edit.c, through tests/unit/toml_probe.c) checked by an
independent parser, python3's tomllib.

    test_toml_edit.py TOML-PROBE CORPUS-DIR

For each document (the shapes engines ship and people write, the fuzzer's seed corpus, and
generated documents that mix [headers], dotted keys, inline tables, arrays of tables, comments,
multi-line strings and arrays whose lines look like headers) and each edit (a key of an existing
table, of a table inside an inline table, of a table made by dotted keys, of a new table):

  - where tomllib says the edit can be made, the editor makes it: its output is valid TOML (tomllib
    reads it) and reads as the input with exactly that key set in exactly that table, nothing else
    changed; setting it again changes nothing;
  - where it cannot be made (a part of the path is a value or an array of tables, the key is a
    table), the editor refuses, naming the line;
  - a document tomllib refuses for a table defined twice (by headers, by a header after dotted
    keys, by dotted keys into a header's table, into an inline table) the editor refuses too,
    naming the line.

Prints "ok - " / "not ok - " lines; exits 1 on any failure.
"""
import copy
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import tomllib

PROBE, CORPUS = sys.argv[1], sys.argv[2]
TMP = tempfile.mkdtemp(prefix="gs-toml.")
failures = 0
checks = 0


def ok(msg):
    global checks
    checks += 1
    print(f"ok - {msg}")


def not_ok(msg, detail=""):
    global checks, failures
    checks += 1
    failures += 1
    print(f"not ok - {msg}")
    for line in detail.splitlines()[:40]:
        print(f"    # {line}")


def probe(text, path, key, value):
    f = os.path.join(TMP, "in.toml")
    with open(f, "w", encoding="utf-8") as fh:
        fh.write(text)
    p = subprocess.run([PROBE, f, key, value, *path], capture_output=True)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace").strip()


def expect(tree, path, key, value):
    """The tree after the edit, or None where TOML cannot take it (a value or a list in the way);
    and whether a refusal is right too: the key holds a table (a [key] or dotted keys, which the
    editor leaves alone, or an inline table, a value it replaces) or a list of tables (an array of
    tables [[key]], left alone, or an array value [{...}], replaced); tomllib reads each pair
    alike."""
    t = copy.deepcopy(tree)
    cur = t
    for part in path:
        if part not in cur:
            cur[part] = {}
        cur = cur[part]
        if not isinstance(cur, dict):
            return None, True
    # a table: [key] or dotted keys (refused) or an inline table key = {...} (a value: replaced)
    either = isinstance(cur.get(key), dict)
    either |= isinstance(cur.get(key), list) and bool(cur[key]) and all(isinstance(e, dict) for e in cur[key])
    cur[key] = tomllib.loads("v = " + value)["v"]
    return t, either


def edit_case(name, text, path, key, value):
    """One edit of a document tomllib reads; returns the new text or None."""
    tree = tomllib.loads(text)
    want, may_refuse = expect(tree, path, key, value)
    where = f"{name}: [{'.'.join(path)}] {key} = {value}"
    rc, out, err = probe(text, path, key, value)
    if want is None or (may_refuse and rc == 1):
        if rc == 1 and re.search(r"\bline \d+:", err):
            ok(f"{where}: refused, naming the line ({err})")
        elif rc == 1:
            not_ok(f"{where}: refused without naming the line", err)
        else:
            not_ok(f"{where}: TOML cannot take this edit, yet the editor made it", out)
        return None
    if rc != 0:
        not_ok(f"{where}: refused ({err}), but the edit is possible", text)
        return None
    try:
        got = tomllib.loads(out)
    except tomllib.TOMLDecodeError as e:
        not_ok(f"{where}: the output is not valid TOML ({e})", out)
        return None
    if got != want:
        not_ok(f"{where}: the output does not read as the input with that one key set",
               f"--- input\n{text}\n--- output\n{out}\n--- wanted\n{json.dumps(want, default=str)}\n"
               f"--- got\n{json.dumps(got, default=str)}")
        return None
    rc2, out2, err2 = probe(out, path, key, value)
    if rc2 != 0 or out2 != out or err2 != "unchanged":
        not_ok(f"{where}: setting it again changes something ({err2})", out2)
        return None
    ok(where)
    return out


def refused_case(name, text, line):
    """A document that tomllib refuses for a table defined twice: refused, naming the line."""
    try:
        tomllib.loads(text)
        not_ok(f"{name}: tomllib reads it (the case is wrong)", text)
        return
    except tomllib.TOMLDecodeError:
        pass
    rc, out, err = probe(text, ["x"], "k", "1")
    if rc == 1 and f"line {line}:" in err:
        ok(f"{name}: refused, naming line {line} ({err})")
    else:
        not_ok(f"{name}: not refused naming line {line} (exit {rc}: {err})", out)


# ---- the shapes engines ship and people write ------------------------------------------------
CRI = ["plugins", "io.containerd.grpc.v1.cri", "containerd"]
NV = CRI + ["runtimes", "nvidia"]
SHAPES = {
    "empty": "",
    "no trailing newline": 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  snapshotter = "overlayfs"',
    "CRLF": 'version = 2\r\n[plugins."io.containerd.grpc.v1.cri".containerd]\r\n  snapshotter = "overlayfs"\r\n',
    "dotted at the top": 'version = 2\n'
                         'plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.runtime_type = "io.containerd.runc.v2"\n',
    "dotted in the parent": 'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n'
                            '  containerd.default_runtime_name = "runc"\n'
                            '  containerd.runtimes.nvidia.options.BinaryName = "/old"\n'
                            '[plugins."io.containerd.grpc.v1.cri".cni]\n  bin_dir = "/opt/cni/bin"\n',
    "dotted, blanks around the dots": 'plugins . "io.containerd.grpc.v1.cri" . containerd . snapshotter = "x"\n',
    "inline runtimes": 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n'
                       '  runtimes = { runc = { runtime_type = "io.containerd.runc.v2", options = { SystemdCgroup = true } } }\n',
    "inline empty": '[plugins."io.containerd.grpc.v1.cri".containerd]\nruntimes = {}\n',
    "inline nvidia": '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes]\n'
                     'nvidia = { runtime_type = "x", options = { BinaryName = "/old" } }\n',
    "multi-line lookalikes": 'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n'
                             "  a = '''\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\nx = 1\n'''\n"
                             '  b = [\n    ["plugins"],  # [plugins]\n    [\'io.containerd.grpc.v1.cri\'],\n  ]\n'
                             '  [plugins."io.containerd.grpc.v1.cri".containerd]\n'
                             '    c = """\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]\n'
                             'BinaryName = \\"/x\\" \\\n  """\n'
                             '    d = """quotes at the end"\"\"""\n',
    "super-table after its sub-table": '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
                                       'runtime_type = "x"\n[plugins."io.containerd.grpc.v1.cri"]\nsandbox_image = "p"\n',
    "array of tables": '[[plugins]]\nname = "a"\n[[plugins]]\nname = "b"\n[plugins.sub]\nx = 1\n',
    "values in the way": '[plugins."io.containerd.grpc.v1.cri"]\ncontainerd = "no"\n',
    "quoted and literal keys": "[plugins.'io.containerd.grpc.v1.cri'.\"containerd\"]\n'snapshotter' = \"x\"\n"
                               '"default_runtime_name" = "runc"\n',
    "dates and numbers": 'd = 1979-05-27 07:32:00Z\nn = +1_000\nf = -3.5e+2\ni = inf\nt = 07:32:00\n'
                         '[plugins."io.containerd.grpc.v1.cri".containerd]\nx = 0x1f\n',
    "comments everywhere": '# top\nversion = 2 # v\n\n# the CRI plugin\n[plugins."io.containerd.grpc.v1.cri".containerd] # c\n'
                           '  # a comment line\n  snapshotter = "overlayfs"   # trailing\n\n# next\n[x]\n',
    "crio": '[crio]\n[crio.runtime]\ndefault_runtime = "runc"\n[crio.runtime.runtimes.runc]\nruntime_path = ""\n',
    "crio dotted": '[crio.runtime]\nruntimes.runc.runtime_path = ""\n',
    "crio inline": '[crio.runtime]\nruntimes = { runc = { runtime_path = "" } }\n',
}
EDITS = [
    (NV, "runtime_type", '"io.containerd.runc.v2"'),
    (NV + ["options"], "BinaryName", '"/usr/bin/nvidia-container-runtime"'),
    (CRI, "default_runtime_name", '"nvidia"'),
    (CRI[:2], "enable_cdi", "true"),
    ([], "version", "2"),
    (["crio", "runtime", "runtimes", "nvidia"], "runtime_path", '"/usr/bin/nvidia-container-runtime"'),
    (["crio", "runtime"], "default_runtime", '"nvidia"'),
    (["plugins"], "x", "1"),
]
for name, text in SHAPES.items():
    tomllib.loads(text)  # the case itself must be TOML
    for path, key, value in EDITS:
        edit_case(name, text, path, key, value)
    # the whole sequence `runtime configure` makes, each on the last one's output
    cur = text
    for path, key, value in EDITS[:4]:
        nxt = edit_case(name + " (in sequence)", cur, path, key, value)
        if nxt is None:
            break
        cur = nxt

# ---- tables defined twice: refused, naming the line -------------------------------------------
refused_case("a header twice", "[a]\nx = 1\n[b]\n[a]\ny = 2\n", 4)
refused_case("a header after dotted keys", "a.b.x = 1\n[a.b]\ny = 2\n", 2)
refused_case("dotted keys into a header's table", "[a.b]\nx = 1\n[a]\nb.y = 2\n", 4)
refused_case("a header into an inline table", "a = { b = 1 }\n[a.c]\nx = 1\n", 2)
refused_case("a key twice", "[a]\nx = 1\nx = 2\n", 3)
refused_case("a multi-line string never closed", 'a = """\n[b]\n', 1)
refused_case("an inline table over two lines", "a = { b = 1,\n c = 2 }\n", 1)

# ---- the fuzzer's seed corpus (first byte: the fuzzer's selector; the rest the document) -------
for fn in sorted(os.listdir(CORPUS)):
    with open(os.path.join(CORPUS, fn), "rb") as fh:
        data = fh.read()
    for text in (data.decode("utf-8", "replace"), data[1:].decode("utf-8", "replace")):
        try:
            tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            continue
        for path, key, value in EDITS:
            edit_case(f"corpus {fn}", text, path, key, value)
        break

# ---- generated documents ----------------------------------------------------------------------
KEYS = ["a", "b", "runtimes", "nvidia", "options", "c.d", "x y", "plugins", "io.containerd.grpc.v1.cri", "k-1"]
STRINGS = ["plain", "[a.b]", "line one\n[runtimes.nvidia]\nx = 1\n", "[[a]]\n", "it's", 'say "hi"', "", "#not a comment"]
VALUES = ['"new"', "7", "true", '["p", "q"]', "'lit'", "{ z = 1 }", '"x\\ny"']


def bare(k):
    return re.fullmatch(r"[A-Za-z0-9_-]+", k) is not None


def key_text(parts):
    return ".".join(p if bare(p) else json.dumps(p) for p in parts)


def gen_scalar(rng):
    r = rng.random()
    if r < 0.55:
        return rng.choice(STRINGS)
    if r < 0.7:
        return rng.randint(-5, 500)
    if r < 0.8:
        return rng.random() < 0.5
    return [rng.choice(STRINGS) for _ in range(rng.randint(0, 3))]


def gen_table(rng, depth):
    t = {}
    for _ in range(rng.randint(0, 4)):
        k = rng.choice(KEYS)
        if k in t:
            continue
        r = rng.random()
        if depth < 4 and r < 0.4:
            t[k] = gen_table(rng, depth + 1)
        elif depth < 3 and r < 0.47:
            t[k] = [gen_table(rng, depth + 2) for _ in range(rng.randint(1, 2))]
        else:
            t[k] = gen_scalar(rng)
    return t


def str_text(s, rng, multi_ok):
    forms = ["basic"]
    if "'" not in s and "\n" not in s:
        forms.append("literal")
    if multi_ok and "'''" not in s and not s.endswith("'"):
        forms.append("mlliteral")
    if multi_ok:
        forms.append("mlbasic")
    f = rng.choice(forms)
    if f == "literal":
        return f"'{s}'"
    if f == "mlliteral":
        return "'''\n" + s + "'''"
    if f == "mlbasic":
        esc = s.replace("\\", "\\\\").replace('"', '\\"')
        return '"""\n' + esc + '"""'
    return json.dumps(s)


def value_text(v, rng):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return str_text(v, rng, True)
    if isinstance(v, dict):
        return inline_text(v, rng)
    if isinstance(v, list):
        items = [value_text(e, rng) for e in v]
        if rng.random() < 0.5:
            return "[" + ", ".join(items) + "]"
        body = "".join(f"\n  {i},{' # [x.y]' if rng.random() < 0.3 else ''}" for i in items)
        return "[" + body + "\n]"
    raise TypeError(v)


def inline_text(t, rng):
    items = [f"{key_text([k])} = {value_text(v, rng)}" for k, v in t.items()]
    return "{ " + ", ".join(items) + " }" if items else "{}"


def is_aot(v):
    return isinstance(v, list) and v and all(isinstance(e, dict) for e in v)


def dotted_lines(prefix, t, rng, out):
    for k, v in t.items():
        if isinstance(v, dict) and v and rng.random() < 0.6:
            dotted_lines(prefix + [k], v, rng, out)
        else:
            out.append(f"{key_text(prefix + [k])} = {value_text(v, rng)}")


def body(path, t, rng):
    """The lines of t's section and the tables left for headers after it."""
    lines, later = [], []
    for k, v in t.items():
        if isinstance(v, dict):
            style = rng.choice(["header", "header", "dotted", "inline"])
            if style == "inline":
                lines.append(f"{key_text([k])} = {inline_text(v, rng)}")
            elif style == "dotted" and v:
                dotted_lines([k], v, rng, lines)
            else:
                later.append(("table", path + [k], v))
        elif is_aot(v) and rng.random() < 0.7:
            later.append(("aot", path + [k], v))
        else:
            lines.append(f"{key_text([k])} = {value_text(v, rng)}")
    ind = rng.choice(["", "  ", "\t"])
    lines = [ind + ln + (" # [not.a.header]" if rng.random() < 0.2 and not ln.endswith('"""') and not ln.endswith("'''") else "")
             for ln in lines]
    if rng.random() < 0.3:
        lines.insert(rng.randint(0, len(lines)), "# [commented.header]")
    return lines, later


def emit(path, t, rng, out, aot=False):
    lines, later = body(path, t, rng)
    after = not aot and not lines and later and rng.random() < 0.5  # implicit: no header of its own
    if aot:
        out.append(f"[[{key_text(path)}]]")
        out.extend(lines)
    elif not after:
        out.append(f"[{key_text(path)}]")
        out.extend(lines)
    for kind, p, v in later:
        if kind == "table":
            emit(p, v, rng, out)
        else:
            for e in v:
                emit(p, e, rng, out, aot=True)
    if rng.random() < 0.3:
        out.append("")


def gen_doc(rng):
    tree = gen_table(rng, 0)
    out = []
    lines, later = body([], tree, rng)
    out.extend(lines)
    for kind, p, v in later:
        if kind == "table":
            emit(p, v, rng, out)
        else:
            for e in v:
                emit(p, e, rng, out, aot=True)
    return tree, "\n".join(out) + ("\n" if rng.random() < 0.8 else "")


def tables(t, path, out):
    out.append(path)
    for k, v in t.items():
        if isinstance(v, dict):
            tables(v, path + [k], out)
        elif is_aot(v):
            out.append(path + [k])


rng = random.Random(31)
generated = 0
for n in range(int(os.environ.get("GS_TOML_DOCS", "300"))):
    tree, text = gen_doc(rng)
    try:
        if tomllib.loads(text) != tree:
            not_ok(f"generated document {n}: the generator wrote something else than it meant", text)
            continue
    except tomllib.TOMLDecodeError as e:
        not_ok(f"generated document {n}: the generator wrote invalid TOML ({e})", text)
        continue
    generated += 1
    paths = []
    tables(tree, [], paths)
    for _ in range(4):
        path = list(rng.choice(paths))
        for _ in range(rng.choice([0, 0, 1, 2])):
            path.append(rng.choice(KEYS))
        edit_case(f"generated {n}", text, path, rng.choice(KEYS), rng.choice(VALUES))

print(f"# {checks - failures} ok, {failures} not ok ({generated} generated documents)")
sys.exit(1 if failures or checks == 0 else 0)
