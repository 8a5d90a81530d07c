#!/usr/bin/python3
"""A fake kubelet for the device plugin tests, driven one command at a time.

Run with Debian's /usr/bin/python3 (python3-grpcio, python3-grpc-tools). The gRPC stubs are
generated at start from the same .proto files the plugin is built from (src/kubelet/proto), services
included, into a temporary directory.

    fake_kubelet.py --proto-dir DIR --socket-dir DIR [--pod-resources SOCKET] CMD_FIFO REPLY_FIFO

Like the kubelet it serves Registration on <socket-dir>/kubelet.sock, dials each registered
plugin's endpoint in that directory, and calls the DevicePlugin service; it also serves the
pod-resources API (List). Each command is one line on CMD_FIFO; each answer one JSON line on
REPLY_FIFO ({"ok": true, ...} or {"ok": false, "error": ...}; an RPC error carries "code" and
"message").

    wait-registered TIMEOUT RES...    until each RES registered: the Register requests
    options RES [AUTHORITY]           GetDevicePluginOptions (on a channel with that :authority)
    watch RES                         open a ListAndWatch stream; its first device list
    devices RES                       the stream's latest device list (and how many it sent)
    wait-health RES ID HEALTH TIMEOUT until the latest list says ID is HEALTH
    prefer RES SIZE AVAIL MUST        GetPreferredAllocation (AVAIL: ids or "all"; MUST: ids or "-")
    allocate RES FILE ID,ID...        Allocate; the answer (JSON) written to FILE
    allocate-many RES ID,ID;ID        Allocate for two or more containers (';' between them)
    call RES METHOD HEX               a raw unary call (the request bytes in hex): its status
    restart                           what a kubelet restart does: stop serving, remove every socket
                                      in the directory, serve a new kubelet.sock
    pod-resources FILE                serve List from FILE (JSON: [{"name","namespace","containers":
                                      [{"name","devices":[{"resource_name","device_ids"}]}]}])
    quit
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent import futures

import grpc
from google.protobuf import json_format


def generate_stubs(proto_dir):
    out = tempfile.mkdtemp(prefix="gs-kubelet-stubs.")
    for proto in ("api.proto", "podresources.proto"):
        subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I" + proto_dir, "--python_out=" + out,
                        "--grpc_python_out=" + out, proto], check=True)
    sys.path.insert(0, out)
    import api_pb2, api_pb2_grpc, podresources_pb2, podresources_pb2_grpc  # noqa: E401
    return api_pb2, api_pb2_grpc, podresources_pb2, podresources_pb2_grpc


def to_dict(msg):
    # with default values: NUMA node 0, a false option, an empty env are there as such
    return json_format.MessageToDict(msg, preserving_proto_field_name=True, including_default_value_fields=True)


class Kubelet:
    def __init__(self, args, pb, pbg, pr, prg):
        self.args, self.pb, self.pbg, self.pr, self.prg = args, pb, pbg, pr, prg
        self.lock = threading.Condition()
        self.registrations = []     # RegisterRequest dicts, in order
        self.endpoints = {}         # resource -> endpoint file name (latest registration)
        self.watches = {}           # resource -> {"lists": [...], "error": None}
        self.channels = {}
        self.pods = []
        self.server = None
        self.podres_server = None
        self.start()
        if args.pod_resources:
            self.start_pod_resources()

    # -- Registration, as the kubelet serves it ------------------------------------------------
    def start(self):
        kubelet = self

        class Registration(self.pbg.RegistrationServicer):
            def Register(self, request, context):
                with kubelet.lock:
                    kubelet.registrations.append(to_dict(request))
                    if request.version != "v1beta1":
                        context.abort(grpc.StatusCode.INVALID_ARGUMENT, "unsupported version " + request.version)
                    kubelet.endpoints[request.resource_name] = request.endpoint
                    kubelet.lock.notify_all()
                return self_pb.Empty()

        self_pb = self.pb
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        self.pbg.add_RegistrationServicer_to_server(Registration(), self.server)
        path = os.path.join(self.args.socket_dir, "kubelet.sock")
        self.server.add_insecure_port("unix://" + path)
        self.server.start()

    def start_pod_resources(self):
        kubelet = self

        class Lister(self.prg.PodResourcesListerServicer):
            def List(self, request, context):
                resp = kubelet.pr.ListPodResourcesResponse()
                with kubelet.lock:
                    json_format.ParseDict({"pod_resources": kubelet.pods}, resp)
                return resp

        self.podres_server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        self.prg.add_PodResourcesListerServicer_to_server(Lister(), self.podres_server)
        self.podres_server.add_insecure_port("unix://" + self.args.pod_resources)
        self.podres_server.start()

    def stub(self, res):
        ep = self.endpoints.get(res)
        if ep is None:
            raise KeyError("%s never registered" % res)
        path = os.path.join(self.args.socket_dir, ep)
        key = (res, path)
        if key not in self.channels:
            self.channels[key] = grpc.insecure_channel("unix://" + path)
        return self.pbg.DevicePluginStub(self.channels[key])

    # -- commands ------------------------------------------------------------------------------
    def cmd_wait_registered(self, timeout, *res):
        end = time.time() + float(timeout)
        with self.lock:
            while not all(r in self.endpoints for r in res):
                left = end - time.time()
                if left <= 0:
                    return {"ok": False, "error": "not registered: %s" % [r for r in res if r not in self.endpoints],
                            "registrations": self.registrations}
                self.lock.wait(left)
            return {"ok": True, "registrations": self.registrations}

    def cmd_options(self, res, authority=None):
        stub = self.stub(res)
        if authority is not None:
            path = os.path.join(self.args.socket_dir, self.endpoints[res])
            ch = grpc.insecure_channel("unix://" + path, options=[("grpc.default_authority", authority)])
            self.channels[(res, path, authority)] = ch
            stub = self.pbg.DevicePluginStub(ch)
        try:
            return {"ok": True, "options": to_dict(stub.GetDevicePluginOptions(self.pb.Empty(), timeout=10))}
        except grpc.RpcError as e:
            return self.rpc_error(e)

    def cmd_watch(self, res):
        state = {"lists": [], "error": None}
        self.watches[res] = state
        stream = self.stub(res).ListAndWatch(self.pb.Empty())

        def pump():
            try:
                for resp in stream:
                    with self.lock:
                        state["lists"].append(to_dict(resp).get("devices", []))
                        self.lock.notify_all()
            except grpc.RpcError as e:
                with self.lock:
                    state["error"] = "%s: %s" % (e.code(), e.details())
                    self.lock.notify_all()

        threading.Thread(target=pump, daemon=True).start()
        end = time.time() + 10
        with self.lock:
            while not state["lists"] and state["error"] is None and time.time() < end:
                self.lock.wait(end - time.time())
            if not state["lists"]:
                return {"ok": False, "error": state["error"] or "no device list in 10 s"}
            return {"ok": True, "devices": state["lists"][0]}

    def cmd_devices(self, res):
        state = self.watches[res]
        with self.lock:
            return {"ok": True, "devices": state["lists"][-1] if state["lists"] else [],
                    "lists": len(state["lists"]), "error": state["error"]}

    def cmd_wait_health(self, res, dev_id, health, timeout):
        state = self.watches[res]
        end = time.time() + float(timeout)
        with self.lock:
            while True:
                latest = state["lists"][-1] if state["lists"] else []
                now = [d.get("health") for d in latest if d.get("ID") == dev_id]
                if now == [health]:
                    return {"ok": True, "devices": latest, "lists": len(state["lists"])}
                left = end - time.time()
                if left <= 0 or state["error"]:
                    return {"ok": False, "error": "%s is %s, not %s (stream: %s)" % (dev_id, now, health, state["error"]),
                            "devices": latest, "lists": len(state["lists"])}
                self.lock.wait(min(left, 0.5))

    def rpc_error(self, e):
        return {"ok": False, "code": e.code().name, "message": e.details()}

    def cmd_prefer(self, res, size, avail, must):
        state = self.watches.get(res)
        ids = [d["ID"] for d in state["lists"][-1]] if avail == "all" else avail.split(",")
        req = self.pb.PreferredAllocationRequest(container_requests=[self.pb.ContainerPreferredAllocationRequest(
            available_deviceIDs=ids, must_include_deviceIDs=[] if must == "-" else must.split(","),
            allocation_size=int(size))])
        try:
            resp = self.stub(res).GetPreferredAllocation(req, timeout=10)
        except grpc.RpcError as e:
            return self.rpc_error(e)
        return {"ok": True, "ids": list(resp.container_responses[0].deviceIDs)}

    def cmd_allocate(self, res, path, ids):
        req = self.pb.AllocateRequest(container_requests=[self.pb.ContainerAllocateRequest(devices_ids=ids.split(","))])
        try:
            resp = self.stub(res).Allocate(req, timeout=10)
        except grpc.RpcError as e:
            return self.rpc_error(e)
        answer = to_dict(resp.container_responses[0])
        with open(path, "w") as f:
            json.dump(answer, f, indent=1, sort_keys=True)
        return {"ok": True, "containers": len(resp.container_responses)}

    def cmd_allocate_many(self, res, groups):
        req = self.pb.AllocateRequest(container_requests=[
            self.pb.ContainerAllocateRequest(devices_ids=g.split(",")) for g in groups.split(";")])
        try:
            resp = self.stub(res).Allocate(req, timeout=10)
        except grpc.RpcError as e:
            return self.rpc_error(e)
        return {"ok": True, "answers": [to_dict(c) for c in resp.container_responses]}

    def cmd_call(self, res, method, hexbytes):
        self.stub(res)  # the endpoint must be known
        path = os.path.join(self.args.socket_dir, self.endpoints[res])
        ch = self.channels[(res, path)]
        call = ch.unary_unary("/v1beta1.DevicePlugin/" + method, request_serializer=None, response_deserializer=None)
        try:
            out = call(bytes.fromhex(hexbytes if hexbytes != "-" else ""), timeout=10)
        except grpc.RpcError as e:
            return self.rpc_error(e)
        return {"ok": True, "bytes": len(out)}

    def cmd_restart(self):
        """A kubelet restart: its gRPC server goes, every socket in its directory is removed
        (the kubelet does this when it starts), and a new kubelet.sock appears."""
        for ch in self.channels.values():
            ch.close()
        self.channels = {}
        self.server.stop(grace=None).wait()
        with self.lock:
            self.endpoints = {}
            self.registrations = []
        for name in os.listdir(self.args.socket_dir):
            p = os.path.join(self.args.socket_dir, name)
            if not os.path.isdir(p):
                os.unlink(p)
        time.sleep(0.2)
        self.start()
        return {"ok": True}

    def cmd_pod_resources(self, path):
        with open(path) as f:
            pods = json.load(f)
        with self.lock:
            self.pods = pods
        return {"ok": True, "pods": len(pods)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--proto-dir", required=True)
    ap.add_argument("--socket-dir", required=True)
    ap.add_argument("--pod-resources")
    ap.add_argument("cmd_fifo")
    ap.add_argument("reply_fifo")
    args = ap.parse_args()
    k = Kubelet(args, *generate_stubs(args.proto_dir))
    with open(args.cmd_fifo) as cmds, open(args.reply_fifo, "w") as replies:
        for line in cmds:
            words = line.split()
            if not words:
                continue
            if words[0] == "quit":
                replies.write('{"ok": true}\n')
                replies.flush()
                break
            fn = getattr(k, "cmd_" + words[0].replace("-", "_"), None)
            try:
                answer = fn(*words[1:]) if fn else {"ok": False, "error": "unknown command " + words[0]}
            except Exception as e:  # noqa: BLE001 - every failure is an answer
                answer = {"ok": False, "error": "%s: %s" % (type(e).__name__, e)}
            replies.write(json.dumps(answer) + "\n")
            replies.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
