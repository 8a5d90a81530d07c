#!/usr/bin/python3
"""The kubelet's side of a DRA plugin, one command per run, for the DRA plugin tests (Debian's
python3-grpcio; stubs generated from src/kubelet/proto/{dra,pluginregistration}.proto into --stubs,
once). Each run prints one JSON line: {"ok": true, ...} or {"ok": false, "code", "message"}.

    register REG_SOCKET [ACCEPT]       what the plugin watcher does: GetInfo, then
                                       NotifyRegistrationStatus (registered unless ACCEPT is "no")
    prepare SOCKET VERSION NS/NAME/UID...    NodePrepareResources on the kubelet's path of VERSION
                                             (/k8s.io.kubelet.pkg.apis.dra.VERSION.DRAPlugin/)
    unprepare SOCKET VERSION NS/NAME/UID...  NodeUnprepareResources
    raw SOCKET PATH HEX                a unary call of these bytes: its status
    time-prepare SOCKET N NS/NAME/UID  N times prepare + unprepare: the prepare times (ms)
    watch-health SOCKET [SECONDS]      the kubelet's NodeWatchResources stream (ResourceHealthStatus,
                                       v1alpha1): one JSON line per message as it arrives
                                       {"ok": true, "devices": [...]}, until the stream ends or SECONDS
    stubs                              the stubs made (a test makes them while it sets up)
"""
import argparse
import json
import os
import subprocess
import sys
import time

import grpc

# The kubelet's gRPC path of the DRA service of a version (its api.proto's package is
# k8s.io.kubelet.pkg.apis.dra.VERSION: tests/k8s/kubelet_wire.txt)
DRA = "/k8s.io.kubelet.pkg.apis.dra.%s.DRAPlugin/"
from google.protobuf import json_format


def stubs(proto_dir, out):
    if not os.path.exists(os.path.join(out, "dra_pb2.py")):
        os.makedirs(out, exist_ok=True)
        for proto in ("dra.proto", "pluginregistration.proto"):
            subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I" + proto_dir, "--python_out=" + out, proto],
                           check=True)
    sys.path.insert(0, out)
    import dra_pb2, pluginregistration_pb2  # noqa: E401
    return dra_pb2, pluginregistration_pb2


def health_stubs(proto_dir, out):
    if not os.path.exists(os.path.join(out, "dra_health_pb2.py")):
        subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I" + proto_dir, "--python_out=" + out,
                        "dra_health.proto"], check=True)
    import dra_health_pb2
    return dra_health_pb2


# The kubelet's gRPC path of the DRA health service (its api.proto's package is v1alpha1)
HEALTH = "/v1alpha1.DRAResourceHealth/NodeWatchResources"


def call(sock, path, req, resp_cls, timeout=30):
    ch = grpc.insecure_channel("unix://" + sock)
    try:
        fn = ch.unary_unary(path, request_serializer=lambda m: m.SerializeToString(),
                            response_deserializer=resp_cls.FromString)
        return fn(req, timeout=timeout)
    finally:
        ch.close()


def d(msg):
    return json_format.MessageToDict(msg, preserving_proto_field_name=True)


def claims(pb, refs):
    out = []
    for r in refs:
        ns, name, uid = r.split("/")
        out.append(pb.Claim(namespace=ns, name=name, uid=uid))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--proto-dir", required=True)
    ap.add_argument("--stubs", required=True)
    ap.add_argument("cmd")
    ap.add_argument("args", nargs="*")
    a = ap.parse_args()
    dra, reg = stubs(a.proto_dir, a.stubs)
    try:
        if a.cmd == "stubs":
            res = {"ok": True}
        elif a.cmd == "register":
            info = call(a.args[0], "/pluginregistration.Registration/GetInfo", reg.InfoRequest(), reg.PluginInfo)
            accept = len(a.args) < 2 or a.args[1] != "no"
            call(a.args[0], "/pluginregistration.Registration/NotifyRegistrationStatus",
                 reg.RegistrationStatus(plugin_registered=accept, error="" if accept else "refused by the test"),
                 reg.RegistrationStatusResponse)
            res = {"ok": True, "info": d(info)}
        elif a.cmd in ("prepare", "unprepare"):
            sock, ver = a.args[0], a.args[1]
            if a.cmd == "prepare":
                r = call(sock, DRA % ver + "NodePrepareResources",
                         dra.NodePrepareResourcesRequest(claims=claims(dra, a.args[2:])), dra.NodePrepareResourcesResponse)
            else:
                r = call(sock, DRA % ver + "NodeUnprepareResources",
                         dra.NodeUnprepareResourcesRequest(claims=claims(dra, a.args[2:])),
                         dra.NodeUnprepareResourcesResponse)
            res = {"ok": True, "claims": d(r).get("claims", {})}
        elif a.cmd == "raw":
            ch = grpc.insecure_channel("unix://" + a.args[0])
            fn = ch.unary_unary(a.args[1], request_serializer=lambda b: b, response_deserializer=lambda b: b)
            fn(bytes.fromhex(a.args[2]), timeout=10)
            res = {"ok": True}
        elif a.cmd == "time-prepare":
            sock, n, ref = a.args[0], int(a.args[1]), a.args[2]
            ch = grpc.insecure_channel("unix://" + sock)
            prep = ch.unary_unary(DRA % "v1" + "NodePrepareResources", request_serializer=lambda m: m.SerializeToString(),
                                  response_deserializer=dra.NodePrepareResourcesResponse.FromString)
            unprep = ch.unary_unary(DRA % "v1" + "NodeUnprepareResources",
                                    request_serializer=lambda m: m.SerializeToString(),
                                    response_deserializer=dra.NodeUnprepareResourcesResponse.FromString)
            times = []
            for _ in range(n):
                t = time.monotonic()
                r = prep(dra.NodePrepareResourcesRequest(claims=claims(dra, [ref])), timeout=30)
                times.append((time.monotonic() - t) * 1000)
                for v in r.claims.values():
                    if v.error:
                        raise RuntimeError(v.error)
                unprep(dra.NodeUnprepareResourcesRequest(claims=claims(dra, [ref])), timeout=30)
            res = {"ok": True, "ms": times}
        elif a.cmd == "watch-health":
            hp = health_stubs(a.proto_dir, a.stubs)
            ch = grpc.insecure_channel("unix://" + a.args[0])
            fn = ch.unary_stream(HEALTH, request_serializer=lambda m: m.SerializeToString(),
                                 response_deserializer=hp.NodeWatchResourcesResponse.FromString)
            secs = float(a.args[1]) if len(a.args) > 1 else 30
            try:
                for r in fn(hp.NodeWatchResourcesRequest(), timeout=secs):
                    print(json.dumps({"ok": True, "devices": d(r).get("devices", [])}), flush=True)
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.DEADLINE_EXCEEDED:
                    raise
            res = {"ok": True, "end": True}
        else:
            res = {"ok": False, "error": "unknown command " + a.cmd}
    except grpc.RpcError as e:
        res = {"ok": False, "code": e.code().name, "message": e.details()}
    except Exception as e:  # noqa: BLE001 - reported to the test as such
        res = {"ok": False, "error": "%s: %s" % (type(e).__name__, e)}
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
