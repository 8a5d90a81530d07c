"""PyTorch on two GPUs for tests/gpu/multigpu_check.sh (run inside `gpuslice exec`).
  info                 one line per visible device: "dev I total=BYTES free=BYTES name=NAME",
                       then "count N"
  rate DEV SECONDS     matmuls per second on cuda:DEV: "rate DEV R"
  nccl MIB             two ranks (cuda:0, cuda:1), NCCL all_reduce of a MIB tensor of ones on each;
                       each rank prints "rank R sum=S total=BYTES used=BYTES" (its device's view
                       after the all-reduce; S must be 2.0), or "nccl none" without NCCL
"""
import os
import sys
import tempfile
import time

import torch


def info():
    n = torch.cuda.device_count()
    for i in range(n):
        free, total = torch.cuda.mem_get_info(i)
        print(f"dev {i} total={total} free={free} name={torch.cuda.get_device_name(i).replace(' ', '_')}")
    print(f"count {n}")


def rate(dev, seconds):
    d = torch.device(f"cuda:{dev}")
    a = torch.randn(4096, 4096, device=d)
    b = torch.randn(4096, 4096, device=d)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize(d)
    n, t0 = 0, time.time()
    while time.time() - t0 < seconds:
        for _ in range(10):
            a @ b
        torch.cuda.synchronize(d)
        n += 10
    print(f"rate {dev} {n / (time.time() - t0):.1f}")


def rank_main(rank, init, mib):
    import torch.distributed as dist
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=init, rank=rank, world_size=2)
    x = torch.ones(mib << 18, device=f"cuda:{rank}")  # MIB MiB of float32
    dist.all_reduce(x)
    torch.cuda.synchronize()
    free, total = torch.cuda.mem_get_info(rank)
    # one write of the whole line: the two ranks share the pipe, and print()'s text and newline
    # could interleave with the other rank's (seen on the GPU host: "used=...rank 0 sum=...")
    sys.stdout.flush()
    os.write(1, f"rank {rank} sum={x[0].item()} total={total} used={total - free}\n".encode())
    dist.barrier()
    dist.destroy_process_group()


def nccl(mib):
    if not torch.distributed.is_available() or not torch.distributed.is_nccl_available():
        print("nccl none")
        return
    fd, path = tempfile.mkstemp()
    os.close(fd)
    os.unlink(path)
    torch.multiprocessing.spawn(rank_main, args=(f"file://{path}", mib), nprocs=2)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "info":
        info()
    elif mode == "rate":
        rate(int(sys.argv[2]), float(sys.argv[3]))
    elif mode == "nccl":
        nccl(int(sys.argv[2]))
