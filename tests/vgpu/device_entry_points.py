#!/usr/bin/env python3
"""The entry points of NVIDIA's own cuda.h and nvml.h that take or return a device.

    device_entry_points.py INCLUDE_DIR

prints one line per entry point, `cuda NAME WHY` or `nvml NAME KIND`, with NAME the exported symbol
(the header's own macros applied: the C preprocessor runs it in each of its modes, so every
versioned and per-thread name is there: cuMemAdvise_v2, cuMemPrefetchAsync_ptsz, ...).

cuda WHY: the parameter that names a device: a CUdevice (by value or written), or a struct known to
carry a device ordinal in a field (CUmemLocation.id and the structs that hold one; a pointer or
range attribute query that can answer a device ordinal).
nvml KIND: returns (writes an nvmlDevice_t: a lookup), pair (takes two handles), one (takes one
handle by value, nothing else that names a device).
"""
import re
import subprocess
import sys

CUDA_STRUCTS = [
    "CUmemLocation", "CUmemAccessDesc", "CUmemAllocationProp", "CUmemPoolProps",
    "CUDA_MEM_ALLOC_NODE_PARAMS", "CUgraphNodeParams", "CUmemcpyAttributes", "CUDA_MEMCPY3D_BATCH_OP",
    "CUpointer_attribute", "CUmem_range_attribute", "CUmulticastObjectProp",
]


def preprocess(header, inc, defines):
    cmd = ["cc", "-E", "-P", "-I", inc] + ["-D" + d for d in defines] + [header]
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def declarations(text, ret):
    for m in re.finditer(r"\b" + ret + r"\s+(\w+)\s*\(([^;{]*?)\)\s*;", text):
        yield m.group(1), " ".join(m.group(2).split())


def params(plist):
    return [p.strip() for p in plist.split(",")]


def main():
    inc = sys.argv[1]
    cuda = {}
    for mode in ([], ["CUDA_API_PER_THREAD_DEFAULT_STREAM"], ["__CUDA_API_VERSION_INTERNAL"]):
        for name, plist in declarations(preprocess(inc + "/cuda.h", inc, mode), "CUresult"):
            cuda.setdefault(name, plist)
    nvml = {}
    for mode in ([], ["NVML_NO_UNVERSIONED_FUNC_DEFS"]):
        for name, plist in declarations(preprocess(inc + "/nvml.h", inc, mode), "nvmlReturn_t"):
            nvml.setdefault(name, plist)
    if len(cuda) < 300 or len(nvml) < 200:
        sys.exit("too few declarations parsed (cuda.h %d, nvml.h %d): the parser no longer reads these headers"
                 % (len(cuda), len(nvml)))
    for name in sorted(cuda):
        why = None
        for p in params(cuda[name]):
            if re.search(r"\bCUdevice(_v1)?\b", p):
                why = "CUdevice"
                break
            for s in CUDA_STRUCTS:
                if re.search(r"\b" + s + r"(_v\d+)?\b", p):
                    why = s
        if why:
            print("cuda", name, why)
    for name in sorted(nvml):
        ps = params(nvml[name])
        writes = [p for p in ps if re.search(r"\bnvmlDevice_t\s*\*", p)]
        takes = [p for p in ps if re.search(r"\bnvmlDevice_t\s+\w+$", p)]
        if writes:
            print("nvml", name, "returns")
        elif len(takes) >= 2:
            print("nvml", name, "pair")
        elif takes:
            print("nvml", name, "one")


if __name__ == "__main__":
    main()
