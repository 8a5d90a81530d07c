#!/usr/bin/env python3
"""Apply CDI devices to an OCI config.json, as a CDI-aware runtime would (the GPU test host has
none: no podman, containerd or CRI-O). Python 3 standard library only; JSON specs only.

    cdi_apply.py [-o OUT] CONFIG SPEC [SPEC...] -- DEVICE [DEVICE...]
    cdi_apply.py --list SPEC [SPEC...]

CONFIG is rewritten in place (or written to OUT). DEVICE is a fully qualified name,
vendor/class=name (nvidia.com/gpu=0-4g). A summary of what was injected goes to stderr.

The semantics are those of tags.cncf.io/container-device-interface (pkg/cdi), the library podman,
containerd and CRI-O use:
- loading (spec.go, version.go): unknown fields are an error (strict decoding); cdiVersion must be
  a released version and at least the minimum the spec's contents need; kind, vendor, class and
  device names follow pkg/parser; every device has non-empty containerEdits; names are unique;
- injection (cache.go InjectDevices): for the requested devices in order, a spec's spec-wide
  containerEdits are appended once (when its first device is met), then each device's own edits;
- Apply (container-edits.go, with the runtime-tools generator underneath):
  env             AddMultipleProcessEnv: an entry whose key already exists replaces it in place,
                  otherwise it is appended;
  deviceNodes     hostPath defaults to path; type/major/minor come from lstat(hostPath) when the
                  type is unset or the major is 0 (not for "p"); uid/gid default to the process
                  user's when those are non-zero; the device replaces one with the same path in
                  linux.devices; for "b"/"c" an allow rule (type, major, minor, permissions: ""
                  -> "rwm", "none" -> no access) is appended to linux.resources.devices;
  mounts          a mount with the same destination is removed, the new one (source = hostPath,
                  destination = containerPath, type, options) appended; then all mounts are
                  stable-sorted by the number of "/" in the cleaned destination;
  hooks           appended to hooks.<hookName> (path, args, env, timeout);
  intelRdt, additionalGIDs, netDevices as the library does.
"""
import json
import os
import re
import stat
import sys

RELEASED = ["0.1.0", "0.2.0", "0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "0.8.0", "1.0.0", "1.1.0"]
HOOK_NAMES = ["prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop"]
FIELDS = {
    "spec": {"cdiVersion", "kind", "annotations", "devices", "containerEdits"},
    "device": {"name", "annotations", "containerEdits"},
    "edits": {"env", "deviceNodes", "hooks", "mounts", "intelRdt", "additionalGIDs", "netDevices"},
    "deviceNode": {"path", "hostPath", "type", "major", "minor", "fileMode", "permissions", "uid", "gid"},
    "mount": {"hostPath", "containerPath", "options", "type"},
    "hook": {"hookName", "path", "args", "env", "timeout"},
    "intelRdt": {"closID", "l3CacheSchema", "memBwSchema", "schemata", "enableMonitoring"},
    "netDevice": {"hostInterfaceName", "name"},
}


class CDIError(Exception):
    pass


def vkey(v):
    return tuple(int(x) for x in v.split("."))


def strict(obj, kind, where):
    if not isinstance(obj, dict):
        raise CDIError("%s: expected an object" % where)
    unknown = sorted(set(obj) - FIELDS[kind])
    if unknown:
        raise CDIError("%s: unknown field %r" % (where, unknown[0]))


def check_type(v, t, where):
    if type(v) is bool or not isinstance(v, t):
        raise CDIError("%s: wrong type (%s)" % (where, type(v).__name__))


# pkg/parser
def valid_vendor(s):
    return bool(re.fullmatch(r"[A-Za-z]([A-Za-z0-9_.-]*[A-Za-z0-9])?", s))


def valid_class(s):
    return bool(re.fullmatch(r"[A-Za-z]([A-Za-z0-9_.-]*[A-Za-z0-9])?", s)) and len(s) <= 63


def valid_device_name(s):
    return bool(re.fullmatch(r"[A-Za-z0-9]([A-Za-z0-9_.:-]*[A-Za-z0-9])?", s))


def check_edits(e, where, device):
    strict(e, "edits", where)
    for k in ("env", "deviceNodes", "hooks", "mounts", "additionalGIDs"):
        if k in e and not isinstance(e[k], list):
            raise CDIError("%s.%s: expected a list" % (where, k))
    for i, v in enumerate(e.get("env", [])):
        if not isinstance(v, str) or v.find("=") <= 0:
            raise CDIError("%s.env[%d]: invalid environment variable %r" % (where, i, v))
    for i, d in enumerate(e.get("deviceNodes", [])):
        w = "%s.deviceNodes[%d]" % (where, i)
        strict(d, "deviceNode", w)
        if not d.get("path"):
            raise CDIError("%s: invalid (empty) device path" % w)
        if d.get("type", "") not in ("", "b", "c", "u", "p"):
            raise CDIError("%s: invalid type %r" % (w, d["type"]))
        for k in ("major", "minor"):
            if k in d:
                check_type(d[k], int, "%s.%s" % (w, k))
                if d[k] < 0:
                    raise CDIError("%s: invalid (negative) device number" % w)
        p = d.get("permissions", "")
        if p not in ("", "none") and p.strip("rwm") != "":
            raise CDIError("%s: invalid permissions %r" % (w, p))
    for i, h in enumerate(e.get("hooks", [])):
        w = "%s.hooks[%d]" % (where, i)
        strict(h, "hook", w)
        if h.get("hookName") not in HOOK_NAMES:
            raise CDIError("%s: invalid hook name %r" % (w, h.get("hookName")))
        if not h.get("path"):
            raise CDIError("%s: invalid hook %r with empty path" % (w, h["hookName"]))
        for j, v in enumerate(h.get("env", [])):
            if not isinstance(v, str) or v.find("=") <= 0:
                raise CDIError("%s.env[%d]: invalid environment variable %r" % (w, j, v))
        for j, v in enumerate(h.get("args", [])):
            check_type(v, str, "%s.args[%d]" % (w, j))
        if "timeout" in h:
            check_type(h["timeout"], int, "%s.timeout" % w)
    for i, m in enumerate(e.get("mounts", [])):
        w = "%s.mounts[%d]" % (where, i)
        strict(m, "mount", w)
        if not m.get("hostPath"):
            raise CDIError("%s: invalid mount, empty host path" % w)
        if not m.get("containerPath"):
            raise CDIError("%s: invalid mount, empty container path" % w)
    if e.get("intelRdt") is not None:
        strict(e["intelRdt"], "intelRdt", where + ".intelRdt")
    for i, n in enumerate(e.get("netDevices", [])):
        strict(n, "netDevice", "%s.netDevices[%d]" % (where, i))
        if not n.get("hostInterfaceName") or not n.get("name"):
            raise CDIError("%s.netDevices[%d]: empty hostInterfaceName or name" % (where, i))
    if device and not any(e.get(k) for k in FIELDS["edits"]):
        raise CDIError("%s: invalid device, empty device edits" % where)


def min_version(spec):
    """The lowest cdiVersion whose schema covers what the spec uses (version.go)."""
    need = "0.3.0"
    all_edits = [spec.get("containerEdits") or {}] + [d.get("containerEdits") or {} for d in spec["devices"]]

    def bump(v):
        nonlocal need
        if vkey(v) > vkey(need):
            need = v
    if any(m.get("type") for e in all_edits for m in e.get("mounts", [])):
        bump("0.4.0")
    if any(d["name"] and not d["name"][0].isalpha() for d in spec["devices"]) or \
            any(n.get("hostPath") for e in all_edits for n in e.get("deviceNodes", [])):
        bump("0.5.0")
    if spec.get("annotations") or any(d.get("annotations") for d in spec["devices"]) or \
            "." in spec["kind"].partition("/")[2]:
        bump("0.6.0")
    if any(e.get("intelRdt") is not None or e.get("additionalGIDs") for e in all_edits):
        bump("0.7.0")
    if any(e.get("netDevices") for e in all_edits) or \
            any(k in (e.get("intelRdt") or {}) for e in all_edits for k in ("schemata", "enableMonitoring")):
        bump("1.1.0")
    return need


def load_spec(path):
    with open(path) as f:
        text = f.read()
    if not text.lstrip().startswith("{"):
        raise CDIError("%s: only JSON specs are read here (generate with --format json)" % path)
    try:
        spec = json.loads(text)
    except ValueError as e:
        raise CDIError("%s: %s" % (path, e))
    strict(spec, "spec", path)
    v = spec.get("cdiVersion")
    if v not in RELEASED:
        raise CDIError("%s: invalid version %r" % (path, v))
    kind = spec.get("kind", "")
    vendor, _, cls = kind.partition("/")
    if not valid_vendor(vendor) or not valid_class(cls):
        raise CDIError("%s: invalid kind %r" % (path, kind))
    devs = spec.get("devices")
    if not isinstance(devs, list) or not devs:
        raise CDIError("%s: invalid spec, no devices" % path)
    if "containerEdits" in spec:
        check_edits(spec["containerEdits"], path + ": containerEdits", False)
    seen = set()
    for i, d in enumerate(devs):
        w = "%s: devices[%d]" % (path, i)
        strict(d, "device", w)
        name = d.get("name", "")
        if not isinstance(name, str) or not valid_device_name(name):
            raise CDIError("%s: invalid device name %r" % (w, name))
        if name in seen:
            raise CDIError("%s: invalid spec, multiple device %r" % (path, name))
        seen.add(name)
        check_edits(d.get("containerEdits", {}), "%s (%s).containerEdits" % (w, name), True)
    need = min_version(spec)
    if vkey(need) > vkey(v):
        raise CDIError("%s: the spec needs cdiVersion %s (it says %s)" % (path, need, v))
    return spec


def inject(config, specs, devices):
    """cache.go InjectDevices + ContainerEdits.Apply."""
    index = {}
    for s in specs:
        for d in s["devices"]:
            index["%s=%s" % (s["kind"], d["name"])] = (s, d)
    edits = {k: [] for k in ("env", "deviceNodes", "hooks", "mounts", "additionalGIDs", "netDevices")}
    rdt = None
    used = []
    unresolved = [q for q in devices if q not in index]
    if unresolved:
        raise CDIError("unresolvable CDI devices %s" % ", ".join(unresolved))

    def append(e):
        nonlocal rdt
        for k in edits:
            edits[k].extend(e.get(k) or [])
        if e.get("intelRdt") is not None:
            rdt = e["intelRdt"]
    for q in devices:
        s, d = index[q]
        if not any(s is u for u in used):
            used.append(s)
            append(s.get("containerEdits") or {})
        append(d["containerEdits"])

    proc = config.setdefault("process", {})
    user = proc.get("user", {})
    # env: runtime-tools addEnv over a key -> index cache built from the existing env
    env = proc.setdefault("env", [])
    pos = {}
    for i, v in enumerate(env):
        pos[v.split("=", 1)[0]] = i
    for v in edits["env"]:
        k = v.split("=", 1)[0]
        if k in pos:
            env[pos[k]] = v
        else:
            env.append(v)
            pos[k] = len(env) - 1
    linux = config.setdefault("linux", {})
    for dn in edits["deviceNodes"]:
        dn = dict(dn)
        dn.setdefault("hostPath", dn["path"])
        typ, major = dn.get("type", ""), dn.get("major", 0)
        if not (typ != "" and (major != 0 or typ == "p")):
            try:
                st = os.lstat(dn["hostPath"])
            except OSError as e:
                raise CDIError("failed to stat CDI host device %r: %s" % (dn["hostPath"], e.strerror))
            if stat.S_ISBLK(st.st_mode):
                htype = "b"
            elif stat.S_ISCHR(st.st_mode):
                htype = "c"
            elif stat.S_ISFIFO(st.st_mode):
                htype = "p"
            else:
                raise CDIError("failed to stat CDI host device %r: not a device node" % dn["hostPath"])
            if typ == "":
                typ = htype
            elif typ != htype:
                raise CDIError("CDI device (%r, %r), host type mismatch (%s, %s)" % (dn["path"], dn["hostPath"], typ, htype))
            if major == 0 and typ != "p":
                dn["major"], dn["minor"] = os.major(st.st_rdev), os.minor(st.st_rdev)
            dn["type"] = typ
        dev = {"path": dn["path"], "type": dn["type"], "major": dn.get("major", 0), "minor": dn.get("minor", 0)}
        for k in ("fileMode", "uid", "gid"):
            if dn.get(k) is not None:
                dev[k] = dn[k]
        if "uid" not in dev and user.get("uid", 0) > 0:
            dev["uid"] = user["uid"]
        if "gid" not in dev and user.get("gid", 0) > 0:
            dev["gid"] = user["gid"]
        devs = linux.setdefault("devices", [])
        for i, o in enumerate(devs):          # RemoveDevice: the first with this path
            if o.get("path") == dev["path"]:
                del devs[i]
                break
        devs.append(dev)                      # AddDevice
        if dev["type"] in ("b", "c"):
            access = dn.get("permissions", "")
            access = "rwm" if access == "" else "" if access == "none" else access
            rule = {"allow": True, "type": dev["type"], "major": dev["major"], "minor": dev["minor"]}
            if access:
                rule["access"] = access
            linux.setdefault("resources", {}).setdefault("devices", []).append(rule)
    for nd in edits["netDevices"]:
        linux.setdefault("netDevices", {})[nd["hostInterfaceName"]] = {"name": nd["name"]}
    if edits["mounts"]:
        if any(ns.get("type") == "user" for ns in linux.get("namespaces", [])):
            raise CDIError("a user namespace: id-mapped CDI mounts are not implemented here")
        mounts = config.setdefault("mounts", [])
        for m in edits["mounts"]:
            for i, o in enumerate(mounts):    # RemoveMount: the first with this destination
                if o.get("destination") == m["containerPath"]:
                    del mounts[i]
                    break
            om = {"destination": m["containerPath"], "source": m["hostPath"]}
            if m.get("type"):
                om["type"] = m["type"]
            if m.get("options"):
                om["options"] = list(m["options"])
            mounts.append(om)
        mounts.sort(key=lambda o: os.path.normpath(o["destination"]).count("/"))  # stable
    for h in edits["hooks"]:
        oh = {"path": h["path"]}
        for k in ("args", "env"):
            if h.get(k):
                oh[k] = list(h[k])
        if h.get("timeout") is not None:
            oh["timeout"] = h["timeout"]
        config.setdefault("hooks", {}).setdefault(h["hookName"], []).append(oh)
    if rdt is not None:
        linux["intelRdt"] = {k: v for k, v in {
            "closID": rdt.get("closID"), "l3CacheSchema": rdt.get("l3CacheSchema"),
            "memBwSchema": rdt.get("memBwSchema"), "schemata": rdt.get("schemata"),
            "enableMonitoring": rdt.get("enableMonitoring")}.items() if v}
    for g in edits["additionalGIDs"]:
        if g == 0:
            continue
        gids = user.setdefault("additionalGids", [])
        if g not in gids:
            gids.append(g)
        proc["user"] = user
    return {k: len(v) for k, v in edits.items() if v}


def main(argv):
    out = None
    if argv[:1] == ["--list"]:
        for p in argv[1:]:
            s = load_spec(p)
            for d in s["devices"]:
                print("%s=%s" % (s["kind"], d["name"]))
        return 0
    if argv[:1] == ["-o"]:
        out, argv = argv[1], argv[2:]
    if "--" not in argv or argv.index("--") < 2 or argv.index("--") == len(argv) - 1:
        sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
        return 2
    sep = argv.index("--")
    config_path, spec_paths, devices = argv[0], argv[1:sep], argv[sep + 1:]
    specs = [load_spec(p) for p in spec_paths]
    with open(config_path) as f:
        config = json.load(f)
    counts = inject(config, specs, devices)
    out = out or config_path
    tmp = out + ".cdi-tmp"
    with open(tmp, "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    os.replace(tmp, out)
    sys.stderr.write("cdi_apply: %s -> %s: %s\n" % (", ".join(devices), out,
                     ", ".join("%d %s" % (n, k) for k, n in sorted(counts.items())) or "nothing"))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except CDIError as e:
        sys.stderr.write("cdi_apply: error: %s\n" % e)
        sys.exit(1)
