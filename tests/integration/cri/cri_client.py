#!/usr/bin/python3
"""A kubelet's side of the CRI, as far as running one pod with one container goes: Version,
RunPodSandbox (host network, the given runtime handler), CreateContainer (the image, a command,
env), StartContainer, ContainerStatus until it exits, then RemoveContainer, StopPodSandbox and
RemovePodSandbox. Debian's python3-grpcio; stubs generated at start from tests/integration/cri/
api.proto (runtime.v1, the part used). Prints one JSON object: the ids, the runtime's version, the
container's exit code and reason, and its log file.

    cri_client.py --socket SOCK --proto-dir DIR --handler NAME --image REF --log-dir DIR
                  [--cgroup-parent P] [--env K=V]... -- CMD...
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import grpc


def stubs(proto_dir):
    out = tempfile.mkdtemp(prefix="gs-cri-stubs.")
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I" + proto_dir, "--python_out=" + out,
                    "--grpc_python_out=" + out, "api.proto"], check=True)
    sys.path.insert(0, out)
    import api_pb2
    import api_pb2_grpc
    return api_pb2, api_pb2_grpc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--socket", required=True)
    ap.add_argument("--proto-dir", required=True)
    ap.add_argument("--handler", default="")
    ap.add_argument("--image", required=True)
    ap.add_argument("--log-dir", required=True)
    ap.add_argument("--cgroup-parent", default="")
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("cmd", nargs="+")
    a = ap.parse_args()
    pb, rpc = stubs(a.proto_dir)
    ch = grpc.insecure_channel("unix://" + a.socket)
    rt = rpc.RuntimeServiceStub(ch)
    res = {}
    v = rt.Version(pb.VersionRequest(version="v1"), timeout=10)
    res["runtime"] = "%s %s (CRI %s)" % (v.runtime_name, v.runtime_version, v.runtime_api_version)
    uid = "gs-%d" % os.getpid()
    sandbox = pb.PodSandboxConfig(
        metadata=pb.PodSandboxMetadata(name="gpu-pod", uid=uid, namespace="default", attempt=0),
        log_directory=a.log_dir,  # no hostname: a host-network pod has the node's
        linux=pb.LinuxPodSandboxConfig(
            cgroup_parent=a.cgroup_parent,
            security_context=pb.LinuxSandboxSecurityContext(
                namespace_options=pb.NamespaceOption(network=pb.NODE, pid=pb.CONTAINER, ipc=pb.POD))))
    sid = rt.RunPodSandbox(pb.RunPodSandboxRequest(config=sandbox, runtime_handler=a.handler), timeout=60).pod_sandbox_id
    res["sandbox"] = sid
    cid = None
    try:
        envs = [pb.KeyValue(key=e.split("=", 1)[0], value=e.split("=", 1)[1]) for e in a.env]
        cfg = pb.ContainerConfig(metadata=pb.ContainerMetadata(name="gpu", attempt=0), image=pb.ImageSpec(image=a.image),
                                 command=a.cmd, envs=envs, log_path="gpu.log")
        try:
            cid = rt.CreateContainer(pb.CreateContainerRequest(pod_sandbox_id=sid, config=cfg, sandbox_config=sandbox),
                                     timeout=60).container_id
            res["container"] = cid
            rt.StartContainer(pb.StartContainerRequest(container_id=cid), timeout=60)
        except grpc.RpcError as e:
            res["error"] = "%s: %s" % (e.code().name, e.details())
            print(json.dumps(res))
            return 1
        deadline = time.time() + a.timeout
        while True:
            st = rt.ContainerStatus(pb.ContainerStatusRequest(container_id=cid), timeout=10).status
            if st.state == pb.CONTAINER_EXITED or time.time() > deadline:
                break
            time.sleep(0.1)
        res.update(state=pb.ContainerState.Name(st.state), exit_code=st.exit_code, reason=st.reason,
                   message=st.message, log=os.path.join(a.log_dir, "gpu.log"))
    finally:
        if cid:
            rt.RemoveContainer(pb.RemoveContainerRequest(container_id=cid), timeout=30)
        rt.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=sid), timeout=30)
        rt.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=sid), timeout=30)
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
