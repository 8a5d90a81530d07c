#!/usr/bin/python3
"""A fake Kubernetes API server for the DRA plugin tests (Python stdlib + python3-jsonschema).

    fake_apiserver.py --cert PEM --key PEM --token TOKEN --state DIR --schema FILE --port-file FILE

HTTPS only (the test's self-signed certificate), every request must carry "Authorization: Bearer
TOKEN" (else 401). Enough of resource.k8s.io/v1:

    GET    /apis/resource.k8s.io/v1/namespaces/NS/resourceclaims/NAME   DIR/claims/NS/NAME.json, or 404
    PATCH  /apis/resource.k8s.io/v1/namespaces/NS/resourceclaims/NAME/status?fieldManager=M[&force=true]
           a server-side apply (application/apply-patch+yaml) of status.devices: each entry an
           AllocatedDeviceStatus of an allocated device (driver, pool, device, shareID as in
           status.allocation.devices.results), conditions checked as metav1.Condition (at most 8,
           unique types, status True/False/Unknown, reason's pattern, message, lastTransitionTime
           RFC 3339); entries merged by that key field by field, as server-side apply does (a
           manager's fields set, its fields it no longer applies removed, other managers' kept; the
           conditions a list map keyed by type within, each type its manager's); metadata.uid, when given, must be the claim's (409); written back to
           DIR/claims/NS/NAME.json. DIR/forbid-status exists -> 403.
    GET    /apis/resource.k8s.io/v1/resourceslices[/NAME]               the list, or one (404)
    POST   /apis/resource.k8s.io/v1/resourceslices                      create (409 if there)
    PUT    /apis/resource.k8s.io/v1/resourceslices/NAME                 update (409 on a stale resourceVersion)
    DELETE /apis/resource.k8s.io/v1/resourceslices/NAME
    GET    /api/v1/nodes/NAME                                           a Node, its uid uuid5(NAME) (DIR/no-nodes: 403)
    POST   /api/v1/namespaces/NS/events                                 an Event (its fields checked), a line in DIR/events.log

Feature gates (--feature-gates GATE=false,..., as kube-apiserver's; all on by default):
DRAConsumableCapacity off drops a written slice's allowMultipleAllocations and capacity
requestPolicy (unless the stored slice uses them), and a claim's consumedCapacity and shareID;
DRADeviceTaints off drops devices' taints; DRAAdminAccess off drops adminAccess from a claim's
requests and results. Dropped silently, as the API server's strategies do (not refused).
A slice written with ?dryRun=All is answered as it would be stored, and not stored.

Versions (--versions V,...; default v1,v1beta2, as Kubernetes 1.34-1.35): every path above is
also served under /apis/resource.k8s.io/v1beta2 when listed, and a version not listed is 404;
GET /apis/resource.k8s.io is the APIGroup discovery document (its versions, preferredVersion).
An object written must say the path's apiVersion (422). v1beta2 is v1beta2 as Kubernetes 1.33
serves it (--versions v1beta2: a 1.33 cluster): the same devices as v1, but no consumable capacity,
so a written slice's allowMultipleAllocations and requestPolicy and a status entry's shareID are
unknown fields, dropped with a warning as the API server does (fieldValidation=Warn, its default)
and each a line in DIR/unknown-fields.log; objects read through v1beta2 come without them (and
without a result's consumedCapacity and shareID).

What the plugin writes is checked against FILE ("none": not checked; a JSON schema of the v1 ResourceSlice, no field
outside it) and the API's own rules the schema cannot say (unique device names, at most 32
attributes + capacities per device); a refused write is 422 and a line in DIR/invalid.log.
Every slice stored is DIR/slices/NAME.json; every request a line "METHOD PATH STATUS" in
DIR/requests.log. Faults, read at every request: DIR/down exists -> 503; DIR/delay holds seconds
to wait before answering. Keep-alive (HTTP/1.1) with TCP_NODELAY, as a real API server: without
it, each answer's body waited on the client's delayed ACK of its headers (~40 ms a request).
"""
import argparse
import json
import os
import re
import ssl
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


GROUP = "/apis/resource.k8s.io"
PREFIX = GROUP + "/v1"  # paths are matched as v1 (handle_any takes the version off first)
VERSION_RE = re.compile(r"^" + GROUP + r"/([a-z0-9]+)(/.*)?$")
# v1beta2 as Kubernetes 1.33 has it: what it lacks of v1 (consumable capacity came with 1.34)
V1BETA2_SLICE_DEVICE_UNKNOWN = ("allowMultipleAllocations",)
V1BETA2_CAPACITY_UNKNOWN = ("requestPolicy",)
CLAIM_RE = re.compile(r"^" + PREFIX + r"/namespaces/([a-z0-9-]+)/resourceclaims/([a-z0-9.-]+)$")
CLAIM_STATUS_RE = re.compile(r"^" + PREFIX + r"/namespaces/([a-z0-9-]+)/resourceclaims/([a-z0-9.-]+)/status\?(.*)$")
REASON_RE = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
TIME_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")
DEVICE_STATUS_FIELDS = {"driver", "pool", "device", "shareID", "conditions", "data", "networkData"}
CONDITION_FIELDS = {"type", "status", "observedGeneration", "lastTransitionTime", "reason", "message"}


def device_key(d):
    return (d.get("driver"), d.get("pool"), d.get("device"), d.get("shareID") or "")


def check_device_status(claim, d):
    """An AllocatedDeviceStatus against resource.k8s.io/v1's rules; raises ValueError."""
    if not isinstance(d, dict) or set(d) - DEVICE_STATUS_FIELDS:
        raise ValueError("status.devices: unknown fields %s" % sorted(set(d) - DEVICE_STATUS_FIELDS))
    for k in ("driver", "pool", "device"):
        if not isinstance(d.get(k), str) or not d[k]:
            raise ValueError("status.devices: %s is required" % k)
    results = claim.get("status", {}).get("allocation", {}).get("devices", {}).get("results", [])
    if device_key(d) not in {device_key(r) for r in results}:
        raise ValueError("status.devices: %s/%s/%s is not an allocated device" % device_key(d)[:3])
    if "data" in d and (not isinstance(d["data"], dict) or len(json.dumps(d["data"])) > 10240):
        raise ValueError("status.devices: data must be an object of at most 10 KiB")
    conds = d.get("conditions", [])
    if not isinstance(conds, list) or len(conds) > 8:
        raise ValueError("status.devices: at most 8 conditions")
    types = set()
    for c in conds:
        if not isinstance(c, dict) or set(c) - CONDITION_FIELDS:
            raise ValueError("condition: unknown fields")
        for k in ("type", "status", "lastTransitionTime", "reason", "message"):
            if not isinstance(c.get(k), str):
                raise ValueError("condition: %s is required" % k)
        if c["type"] in types or not re.match(r"^([a-z0-9.-]+/)?[A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9])?$", c["type"]):
            raise ValueError("condition: type %r invalid or repeated" % c["type"])
        types.add(c["type"])
        if c["status"] not in ("True", "False", "Unknown"):
            raise ValueError("condition: status %r" % c["status"])
        if not REASON_RE.match(c["reason"]) or len(c["reason"]) > 1024:
            raise ValueError("condition: reason %r" % c["reason"])
        if len(c["message"]) > 32768:
            raise ValueError("condition: message longer than 32768")
        if not TIME_RE.match(c["lastTransitionTime"]):
            raise ValueError("condition: lastTransitionTime %r is not RFC 3339" % c["lastTransitionTime"])
NODE_RE = re.compile(r"^/api/v1/nodes/([a-z0-9.-]+)$")
EVENT_RE = re.compile(r"^/api/v1/namespaces/([a-z0-9-]+)/events$")
SLICE_RE = re.compile(r"^" + PREFIX + r"/resourceslices/([a-z0-9.-]+)$")


GATES = ("DRAConsumableCapacity", "DRAAdminAccess", "DRADeviceTaints")


def gates_of(spec):
    """{gate: enabled}: each of GATES on unless the spec says GATE=false (an unknown gate is an error)."""
    on = {g: True for g in GATES}
    for kv in filter(None, spec.split(",")):
        k, _, v = kv.partition("=")
        if k not in on or v not in ("true", "false"):
            raise SystemExit("--feature-gates: %r (known: %s)" % (kv, ", ".join(GATES)))
        on[k] = v == "true"
    return on


def drop_slice_fields(gates, new, old):
    """What kube-apiserver's ResourceSlice strategy does with a gate off (dropDisabledFields): the
    gated fields of a created or updated slice are dropped, silently, unless the stored slice
    already uses them (a field in use is kept)."""
    def uses(obj, test):
        return obj is not None and any(test(d) for d in obj.get("spec", {}).get("devices", []))
    consumable = lambda d: "allowMultipleAllocations" in d or any("requestPolicy" in c for c in d.get("capacity", {}).values())
    if not gates["DRAConsumableCapacity"] and not uses(old, consumable):
        for d in new.get("spec", {}).get("devices", []):
            d.pop("allowMultipleAllocations", None)
            for c in d.get("capacity", {}).values():
                c.pop("requestPolicy", None)
    if not gates["DRADeviceTaints"] and not uses(old, lambda d: "taints" in d):
        for d in new.get("spec", {}).get("devices", []):
            d.pop("taints", None)


def drop_claim_fields(gates, claim):
    """A claim as a server with the gates off holds it: no consumed capacity or share ids in its
    allocation or status (DRAConsumableCapacity), no admin access (DRAAdminAccess)."""
    results = claim.get("status", {}).get("allocation", {}).get("devices", {}).get("results", [])
    if not gates["DRAConsumableCapacity"]:
        for r in results:
            r.pop("consumedCapacity", None)
            r.pop("shareID", None)
        for d in claim.get("status", {}).get("devices", []):
            d.pop("shareID", None)
    if not gates["DRAAdminAccess"]:
        for r in results:
            r.pop("adminAccess", None)
        for q in claim.get("spec", {}).get("devices", {}).get("requests", []):
            q.get("exactly", {}).pop("adminAccess", None)
    return claim


def to_v1beta2_slice(obj, unknown):
    """A slice as v1beta2 (1.33) holds it: consumable capacity's fields gone; each one dropped is
    named in `unknown` (a list) when given."""
    obj["apiVersion"] = "resource.k8s.io/v1beta2"
    for d in obj.get("spec", {}).get("devices", []):
        for f in V1BETA2_SLICE_DEVICE_UNKNOWN:
            if d.pop(f, None) is not None and unknown is not None:
                unknown.append("spec.devices[%s].%s" % (d.get("name"), f))
        for k, c in d.get("capacity", {}).items():
            for f in V1BETA2_CAPACITY_UNKNOWN:
                if isinstance(c, dict) and c.pop(f, None) is not None and unknown is not None:
                    unknown.append("spec.devices[%s].capacity.%s.%s" % (d.get("name"), k, f))
    return obj


def to_v1beta2_claim(claim):
    """A claim read through v1beta2 (1.33): no consumed capacity, no share ids."""
    claim["apiVersion"] = "resource.k8s.io/v1beta2"
    for r in claim.get("status", {}).get("allocation", {}).get("devices", {}).get("results", []):
        r.pop("consumedCapacity", None)
        r.pop("shareID", None)
    for d in claim.get("status", {}).get("devices", []):
        d.pop("shareID", None)
    return claim


class State:
    def __init__(self, args):
        self.args = args
        self.gates = gates_of(args.feature_gates)
        self.versions = [v for v in args.versions.split(",") if v]
        if not self.versions or set(self.versions) - {"v1", "v1beta2"}:
            raise SystemExit("--versions: %r (known: v1, v1beta2)" % args.versions)
        self.lock = threading.Lock()
        self.slices = {}
        self.rv = 100
        self.schema = None
        self.owners = {}  # (ns, name, fieldManager) -> {status.devices key: the fields it applied}
        if args.schema != "none":  # the GPU host and the bench: no python3-jsonschema there
            import jsonschema
            self.jsonschema = jsonschema
            with open(args.schema) as f:
                self.schema = json.load(f)
        os.makedirs(os.path.join(args.state, "slices"), exist_ok=True)
        os.makedirs(os.path.join(args.state, "claims"), exist_ok=True)

    def log(self, name, line):
        with open(os.path.join(self.args.state, name), "a") as f:
            f.write(line + "\n")

    def validate(self, obj):
        if self.schema is not None:
            self.jsonschema.validate(obj, self.schema)
        names = [d["name"] for d in obj["spec"].get("devices", [])]
        if len(names) != len(set(names)):
            raise ValueError("device names are not unique")
        for d in obj["spec"].get("devices", []):
            if len(d.get("attributes", {})) + len(d.get("capacity", {})) > 32:
                raise ValueError("device %s: more than 32 attributes and capacities" % d["name"])
            if "requestPolicy" in json.dumps(d.get("capacity", {})) and not d.get("allowMultipleAllocations"):
                raise ValueError("device %s: a request policy without allowMultipleAllocations" % d["name"])

    def store(self, name, obj):
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        obj["metadata"].setdefault("uid", str(uuid.uuid4()))
        self.slices[name] = obj
        with open(os.path.join(self.args.state, "slices", name + ".json.tmp"), "w") as f:
            json.dump(obj, f)
        os.rename(os.path.join(self.args.state, "slices", name + ".json.tmp"),
                  os.path.join(self.args.state, "slices", name + ".json"))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, fmt, *a):
        pass

    def answer(self, status, obj):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        st.log("requests.log", "%s %s %d" % (self.command, self.asked, status))

    def status(self, code, reason, msg):
        self.answer(code, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason,
                           "message": msg, "code": code})

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(n)) if n else None

    def handle_any(self):
        self.asked, self.version = self.path, "v1"  # (one handler serves a keep-alive connection's requests)
        delay = os.path.join(st.args.state, "delay")
        if os.path.exists(delay):
            try:
                time.sleep(float(open(delay).read().strip() or 0))
            except ValueError:
                pass
        if self.headers.get("Authorization") != "Bearer " + st.args.token:
            try:
                self.body()
            except ValueError:
                pass
            return self.status(401, "Unauthorized", "no or wrong bearer token")
        if os.path.exists(os.path.join(st.args.state, "down")):
            return self.status(503, "ServiceUnavailable", "down (the test says so)")
        try:
            data = self.body() if self.command in ("POST", "PUT", "PATCH") else None
        except ValueError as e:
            return self.status(400, "BadRequest", "not JSON: %s" % e)
        if self.path.partition("?")[0] == GROUP and self.command == "GET":
            vs = [{"groupVersion": "resource.k8s.io/" + v, "version": v} for v in st.versions]
            return self.answer(200, {"kind": "APIGroup", "apiVersion": "v1", "name": "resource.k8s.io",
                                     "versions": vs, "preferredVersion": vs[0]})
        m = VERSION_RE.match(self.path)
        if m:
            if m.group(1) not in st.versions:
                return self.status(404, "NotFound", "the server could not find the requested resource")
            self.version, self.path = m.group(1), PREFIX + (m.group(2) or "")
            if self.version != "v1" and isinstance(data, dict):  # written as v1beta2: held as v1
                if data.get("apiVersion") != "resource.k8s.io/" + self.version:
                    st.log("invalid.log", "%s apiVersion %s at %s" % (self.command, data.get("apiVersion"), self.asked))
                    return self.status(422, "Invalid", "apiVersion %s is not the path's" % data.get("apiVersion"))
                unknown = []
                to_v1beta2_slice(data, unknown)
                for d in data.get("status", {}).get("devices", []) if isinstance(data.get("status"), dict) else []:
                    if isinstance(d, dict) and d.pop("shareID", None) is not None:
                        unknown.append("status.devices[%s].shareID" % d.get("device"))
                for u in unknown:
                    st.log("unknown-fields.log", "%s %s %s" % (self.command, self.asked, u))
                data["apiVersion"] = "resource.k8s.io/v1"
        m = NODE_RE.match(self.path)
        if m and self.command == "GET":  # any node name: a Node with a uid of its own (DIR/no-nodes: 403)
            if os.path.exists(os.path.join(st.args.state, "no-nodes")):
                return self.status(403, "Forbidden", "nodes: forbidden (the test says so)")
            return self.answer(200, {"kind": "Node", "apiVersion": "v1",
                                     "metadata": {"name": m.group(1), "uid": str(uuid.uuid5(uuid.NAMESPACE_DNS, m.group(1)))}})
        m = EVENT_RE.match(self.path)
        if m and self.command == "POST":
            return self.event(m.group(1), data)
        m = CLAIM_STATUS_RE.match(self.path)
        if m and self.command == "PATCH":
            with st.lock:
                return self.apply_status(m.group(1), m.group(2), m.group(3), data)
        m = CLAIM_RE.match(self.path)
        if m and self.command == "GET":
            p = os.path.join(st.args.state, "claims", m.group(1), m.group(2) + ".json")
            if not os.path.exists(p):
                return self.status(404, "NotFound", "resourceclaims %s not found" % m.group(2))
            with open(p) as f:
                return self.answer(200, self.as_version(drop_claim_fields(st.gates, json.load(f))))
        with st.lock:
            return self.slices(data)

    def as_version(self, obj):
        """An object (a claim, a slice, a list of slices) as the path's version has it."""
        if self.version == "v1beta2":
            obj = json.loads(json.dumps(obj))
            if obj.get("kind") == "ResourceClaim":
                return to_v1beta2_claim(obj)
            if obj.get("kind") == "ResourceSlice":
                return to_v1beta2_slice(obj, None)
            obj["apiVersion"] = "resource.k8s.io/v1beta2"
            obj["items"] = [to_v1beta2_slice(i, None) for i in obj.get("items", [])]
        return obj

    def event(self, ns, data):
        """A core/v1 Event: the fields an Event needs, a line of JSON in DIR/events.log."""
        try:
            meta, obj = data["metadata"], data["involvedObject"]
            if data.get("apiVersion") != "v1" or data.get("kind") != "Event" or not meta.get("name"):
                raise ValueError("apiVersion/kind/metadata.name")
            if meta.get("namespace", ns) != ns:
                raise ValueError("metadata.namespace is not the path's")
            if not obj.get("kind") or not obj.get("name") or data.get("type") not in ("Normal", "Warning"):
                raise ValueError("involvedObject kind/name, type Normal or Warning")
            if not REASON_RE.match(data.get("reason", "")) or not isinstance(data.get("message"), str):
                raise ValueError("reason, message")
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            st.log("invalid.log", "POST event %s" % e)
            return self.status(422, "Invalid", str(e))
        st.log("events.log", json.dumps(data, sort_keys=True))
        return self.answer(201, data)

    def apply_status(self, ns, name, query, data):
        q = dict(kv.partition("=")[::2] for kv in query.split("&"))
        if self.headers.get("Content-Type") != "application/apply-patch+yaml":
            return self.status(415, "UnsupportedMediaType", "not a server-side apply (application/apply-patch+yaml)")
        if not q.get("fieldManager"):
            return self.status(400, "BadRequest", "a server-side apply needs a fieldManager")
        if os.path.exists(os.path.join(st.args.state, "forbid-status")):
            return self.status(403, "Forbidden", "resourceclaims/status: forbidden (the test says so)")
        p = os.path.join(st.args.state, "claims", ns, name + ".json")
        if not os.path.exists(p):
            return self.status(404, "NotFound", "resourceclaims %s not found" % name)
        with open(p) as f:
            claim = drop_claim_fields(st.gates, json.load(f))
        try:
            if not isinstance(data, dict) or data.get("apiVersion") != "resource.k8s.io/v1" or data.get("kind") != "ResourceClaim":
                raise ValueError("apiVersion/kind")
            if set(data) - {"apiVersion", "kind", "metadata", "status"} or set(data.get("status", {})) - {"devices"}:
                raise ValueError("only status.devices may be applied here")
            meta = data.get("metadata", {})
            if meta.get("name") != name or meta.get("namespace", ns) != ns:
                raise ValueError("metadata.name/namespace do not match the path")
            devs = data["status"]["devices"]
            if isinstance(devs, list) and not st.gates["DRAConsumableCapacity"]:
                for d in devs:
                    if isinstance(d, dict):
                        d.pop("shareID", None)
            if not isinstance(devs, list) or len({device_key(d) for d in devs}) != len(devs):
                raise ValueError("status.devices: not a list of unique devices")
            for d in devs:
                check_device_status(claim, d)
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            st.log("invalid.log", "PATCH status %s" % e)
            return self.status(422, "Invalid", str(e))
        if "uid" in meta and meta["uid"] != claim["metadata"]["uid"]:
            return self.status(409, "Conflict", "the uid %s is not the claim's" % meta["uid"])
        # field by field, as a server-side apply merges a list map: the manager's fields of each
        # entry are set, its fields it no longer applies removed; other managers' fields stay; an
        # entry no manager holds a field of is gone
        # (conditions is itself a list map keyed by type: a manager owns the conditions it applies,
        # "conditions:TYPE", and the others' stay)
        keyf = ("driver", "pool", "device", "shareID")

        def owned(d):
            f = set(d) - set(keyf) - {"conditions"}
            return f | {"conditions:" + c["type"] for c in d.get("conditions", [])}
        now = {device_key(d): owned(d) for d in devs}
        prev = st.owners.get((ns, name, q["fieldManager"]), {})
        entries = {device_key(d): d for d in claim.setdefault("status", {}).get("devices", [])}
        for k, fields in prev.items():
            e = entries.get(k, {})
            for f in fields - now.get(k, set()):
                if f.startswith("conditions:"):
                    e["conditions"] = [c for c in e.get("conditions", []) if c["type"] != f[11:]]
                    if not e["conditions"]:
                        e.pop("conditions")
                else:
                    e.pop(f, None)
        for d in devs:
            e = entries.setdefault(device_key(d), {})
            for f, v in d.items():
                if f == "conditions":
                    mine = {c["type"] for c in v}
                    e["conditions"] = [c for c in e.get("conditions", []) if c["type"] not in mine] + v
                else:
                    e[f] = v
        st.owners[(ns, name, q["fieldManager"])] = now
        claim["status"]["devices"] = [e for e in entries.values() if set(e) - set(keyf)]
        st.rv += 1
        claim["metadata"]["resourceVersion"] = str(st.rv)
        with open(p + ".tmp", "w") as f:
            json.dump(claim, f)
        os.rename(p + ".tmp", p)
        return self.answer(200, self.as_version(claim))

    def slices(self, data):
        """ResourceSlices; ?dryRun=All on a write: the object as it would be stored (the gates'
        fields dropped), nothing stored (DIR/dry-runs.log counts them)."""
        path, _, query = self.path.partition("?")
        dry = "dryRun=All" in query.split("&")
        if dry:
            st.log("dry-runs.log", "%s %s" % (self.command, path))
        if path == PREFIX + "/resourceslices" and self.command == "GET":
            return self.answer(200, self.as_version({"kind": "ResourceSliceList", "apiVersion": "resource.k8s.io/v1",
                                                     "items": list(st.slices.values())}))
        if path == PREFIX + "/resourceslices" and self.command == "POST":
            try:
                drop_slice_fields(st.gates, data, None)
                st.validate(data)
            except Exception as e:  # noqa: BLE001 - jsonschema.ValidationError, a malformed object
                st.log("invalid.log", "POST %s" % str(e).splitlines()[0])
                return self.status(422, "Invalid", str(e).splitlines()[0])
            name = data["metadata"]["name"]
            if name in st.slices:
                return self.status(409, "AlreadyExists", "resourceslices %s already exists" % name)
            if "resourceVersion" in data["metadata"]:
                return self.status(422, "Invalid", "resourceVersion must not be set on create")
            if not dry:
                st.store(name, data)
            return self.answer(201, self.as_version(data))
        m = SLICE_RE.match(path)
        if not m:
            return self.status(404, "NotFound", "no such path")
        name = m.group(1)
        if self.command == "GET":
            if name not in st.slices:
                return self.status(404, "NotFound", "resourceslices %s not found" % name)
            return self.answer(200, self.as_version(st.slices[name]))
        if self.command == "DELETE":
            if st.slices.pop(name, None) is None:
                return self.status(404, "NotFound", "resourceslices %s not found" % name)
            os.unlink(os.path.join(st.args.state, "slices", name + ".json"))
            return self.answer(200, {"kind": "Status", "status": "Success"})
        if self.command == "PUT":
            try:
                drop_slice_fields(st.gates, data, st.slices.get(name))
                st.validate(data)
            except Exception as e:  # noqa: BLE001 - jsonschema.ValidationError, a malformed object
                st.log("invalid.log", "PUT %s" % str(e).splitlines()[0])
                return self.status(422, "Invalid", str(e).splitlines()[0])
            if name not in st.slices:
                return self.status(404, "NotFound", "resourceslices %s not found" % name)
            if data["metadata"].get("resourceVersion") != st.slices[name]["metadata"]["resourceVersion"]:
                return self.status(409, "Conflict", "the object has been modified")
            if data["metadata"]["name"] != name:
                return self.status(400, "BadRequest", "name does not match the path")
            data["metadata"]["uid"] = st.slices[name]["metadata"]["uid"]
            if not dry:
                st.store(name, data)
            return self.answer(200, self.as_version(data))
        return self.status(405, "MethodNotAllowed", self.command)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_any


def main():
    global st
    ap = argparse.ArgumentParser()
    for a in ("--cert", "--key", "--token", "--state", "--schema", "--port-file"):
        ap.add_argument(a, required=True)
    ap.add_argument("--versions", default="v1,v1beta2", help="resource.k8s.io versions served, the preferred first")
    ap.add_argument("--feature-gates", default="", help="GATE=false,... (as kube-apiserver's --feature-gates)")
    args = ap.parse_args()
    st = State(args)
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.cert, args.key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(args.port_file + ".tmp", args.port_file)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
