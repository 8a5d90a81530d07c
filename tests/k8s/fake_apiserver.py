#!/usr/bin/python3
"""A fake Kubernetes API server for the DRA plugin tests (Python stdlib + python3-jsonschema).

    fake_apiserver.py --cert PEM --key PEM --token TOKEN --state DIR --schema FILE --port-file FILE

HTTPS only (the test's self-signed certificate), every request must carry "Authorization: Bearer
TOKEN" (else 401). Enough of resource.k8s.io/v1:

    GET    /apis/resource.k8s.io/v1/namespaces/NS/resourceclaims/NAME   DIR/claims/NS/NAME.json, or 404
    GET    /apis/resource.k8s.io/v1/resourceslices[/NAME]               the list, or one (404)
    POST   /apis/resource.k8s.io/v1/resourceslices                      create (409 if there)
    PUT    /apis/resource.k8s.io/v1/resourceslices/NAME                 update (409 on a stale resourceVersion)
    DELETE /apis/resource.k8s.io/v1/resourceslices/NAME

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


PREFIX = "/apis/resource.k8s.io/v1"
CLAIM_RE = re.compile(r"^" + PREFIX + r"/namespaces/([a-z0-9-]+)/resourceclaims/([a-z0-9.-]+)$")
SLICE_RE = re.compile(r"^" + PREFIX + r"/resourceslices/([a-z0-9.-]+)$")


class State:
    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.slices = {}
        self.rv = 100
        self.schema = None
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
        st.log("requests.log", "%s %s %d" % (self.command, self.path, status))

    def status(self, code, reason, msg):
        self.answer(code, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason,
                           "message": msg, "code": code})

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(n)) if n else None

    def handle_any(self):
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
            data = self.body() if self.command in ("POST", "PUT") else None
        except ValueError as e:
            return self.status(400, "BadRequest", "not JSON: %s" % e)
        m = CLAIM_RE.match(self.path)
        if m and self.command == "GET":
            p = os.path.join(st.args.state, "claims", m.group(1), m.group(2) + ".json")
            if not os.path.exists(p):
                return self.status(404, "NotFound", "resourceclaims %s not found" % m.group(2))
            with open(p) as f:
                return self.answer(200, json.load(f))
        with st.lock:
            return self.slices(data)

    def slices(self, data):
        if self.path == PREFIX + "/resourceslices" and self.command == "GET":
            return self.answer(200, {"kind": "ResourceSliceList", "apiVersion": "resource.k8s.io/v1",
                                     "items": list(st.slices.values())})
        if self.path == PREFIX + "/resourceslices" and self.command == "POST":
            try:
                st.validate(data)
            except Exception as e:  # noqa: BLE001 - jsonschema.ValidationError, a malformed object
                st.log("invalid.log", "POST %s" % str(e).splitlines()[0])
                return self.status(422, "Invalid", str(e).splitlines()[0])
            name = data["metadata"]["name"]
            if name in st.slices:
                return self.status(409, "AlreadyExists", "resourceslices %s already exists" % name)
            if "resourceVersion" in data["metadata"]:
                return self.status(422, "Invalid", "resourceVersion must not be set on create")
            st.store(name, data)
            return self.answer(201, data)
        m = SLICE_RE.match(self.path)
        if not m:
            return self.status(404, "NotFound", "no such path")
        name = m.group(1)
        if self.command == "GET":
            if name not in st.slices:
                return self.status(404, "NotFound", "resourceslices %s not found" % name)
            return self.answer(200, st.slices[name])
        if self.command == "DELETE":
            if st.slices.pop(name, None) is None:
                return self.status(404, "NotFound", "resourceslices %s not found" % name)
            os.unlink(os.path.join(st.args.state, "slices", name + ".json"))
            return self.answer(200, {"kind": "Status", "status": "Success"})
        if self.command == "PUT":
            try:
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
            st.store(name, data)
            return self.answer(200, data)
        return self.status(405, "MethodNotAllowed", self.command)

    do_GET = do_POST = do_PUT = do_DELETE = handle_any


def main():
    global st
    ap = argparse.ArgumentParser()
    for a in ("--cert", "--key", "--token", "--state", "--schema", "--port-file"):
        ap.add_argument(a, required=True)
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
