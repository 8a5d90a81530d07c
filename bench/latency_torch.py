#!/usr/bin/env python3
"""PyTorch cells of bench/latency.sh (issue 32, item 4), one role per process:

  latency_torch.py serve SECONDS PERIOD_MS   an inference service: a 6-layer MLP (hidden
        LAT_TORCH_HIDDEN, default 4096, fp16, weights made here from a fixed seed) served at batch 1,
        one request every PERIOD_MS, each waited for (torch.cuda.synchronize); prints
        due=D requests=N p50_ms= p99_ms= max_ms= (from the request's start to its output on the GPU
        being done; a late request delays the next, so N < D is a request dropped; one due within
        SECONDS may begin up to LAT_GRACE_MS, default 250, after them) and
        p99_due_ms= max_due_ms= (from each due time, over every due request: bench/latency.cu)
  latency_torch.py train SECONDS             a training loop: a bf16 8192 x 8192 linear layer on a
        LAT_TORCH_BATCH (default 4096) x 8192 input, forward, backward, SGD, loss.item() each step (a
        pause for the host, as real loops have); prints steps=N rate=STEPS/s secs=S kernel_ms=K (K:
        one forward matmul alone, the longest kernel a request can meet)

Both warm up first (50 requests, 20 steps). With LAT_SYNC=DIR and LAT_SYNC_N=K, each process then
writes DIR/ready.<pid> and waits (at most LAT_SYNC_TIMEOUT s, default 180) until K processes are
ready, so that all measure together; a serve process then measures SECONDS, and a train process
measures until DIR/stop exists (at most SECONDS). Without LAT_SYNC both measure SECONDS at once.
Exits 1 (with the reason on stderr) on a CUDA error, a wrong result or a sync timeout; 77 when
PyTorch cannot be imported.
"""
import math
import os
import sys
import time


def fail(msg):
    print(f"latency_torch: {msg}", file=sys.stderr)
    sys.exit(1)


def sync(start_name):
    d = os.environ.get("LAT_SYNC")
    if not d:
        return None
    n = int(os.environ.get("LAT_SYNC_N", "1"))
    timeout = float(os.environ.get("LAT_SYNC_TIMEOUT", "180"))
    with open(os.path.join(d, f"ready.{os.getpid()}"), "w") as f:
        f.write(start_name + "\n")
    t = time.monotonic()
    while sum(1 for e in os.listdir(d) if e.startswith("ready.")) < n:
        if time.monotonic() - t > timeout:
            fail(f"sync: fewer than {n} processes ready in {d} after {timeout:.0f} s")
        time.sleep(0.005)
    return d


def pct(xs, q):
    xs = sorted(xs)
    return xs[int((len(xs) - 1) * q)]


def serve(torch, seconds, period_ms):
    hidden = int(os.environ.get("LAT_TORCH_HIDDEN", "4096"))
    g = torch.Generator(device="cuda").manual_seed(1)
    layers = []
    for i in range(6):
        lin = torch.nn.Linear(hidden, hidden, device="cuda", dtype=torch.float16)
        with torch.no_grad():
            lin.weight.copy_(torch.randn(hidden, hidden, device="cuda", generator=g) / hidden**0.5)
            lin.bias.zero_()
        layers += [lin, torch.nn.ReLU()] if i < 5 else [lin]
    model = torch.nn.Sequential(*layers).eval()
    x = torch.randn(1, hidden, device="cuda", generator=g).half()
    with torch.inference_mode():
        ref = model(x).float().cpu()
        if not torch.isfinite(ref).all():
            fail("serve: the model's output is not finite")
        for _ in range(50):
            model(x)
        torch.cuda.synchronize()
        sync("serve")
        period = period_ms / 1e3
        due = math.ceil(seconds / period - 1e-9)
        lat, lat_due = [], []
        t0 = time.perf_counter()
        n = 0
        grace = float(os.environ.get("LAT_GRACE_MS", "250")) / 1e3
        while n < due and time.perf_counter() - t0 < seconds + grace:
            at = t0 + n * period
            d = at - time.perf_counter()
            if d > 0:
                time.sleep(d)
            r0 = time.perf_counter()
            y = model(x)
            torch.cuda.synchronize()
            lat.append((time.perf_counter() - r0) * 1e3)
            lat_due.append((time.perf_counter() - at) * 1e3)
            n += 1
        end = time.perf_counter()  # (a request never begun waited from its due time to the end)
        lat_due += [max(0.0, end - t0 - k * period) * 1e3 for k in range(n, due)]
        if not torch.allclose(y.float().cpu(), ref, rtol=1e-2, atol=1e-2):
            fail("serve: the last answer differs from the first")
    print(f"due={due} requests={len(lat)} p50_ms={pct(lat, .5):.3f} p99_ms={pct(lat, .99):.3f} "
          f"max_ms={max(lat):.3f} p99_due_ms={pct(lat_due, .99):.3f} max_due_ms={max(lat_due):.3f}", flush=True)


def train(torch, seconds):
    batch = int(os.environ.get("LAT_TORCH_BATCH", "4096"))
    torch.manual_seed(0)
    lin = torch.nn.Linear(8192, 8192, bias=False).cuda().to(torch.bfloat16)
    opt = torch.optim.SGD(lin.parameters(), lr=1e-6)
    x = torch.randn(batch, 8192, device="cuda", dtype=torch.bfloat16)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = lin(x).float().square().mean()
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(20):
        loss = step()
        if loss != loss or loss in (float("inf"), float("-inf")):
            fail(f"train: the loss is {loss}")
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.no_grad():
        a.record()
        for _ in range(10):
            lin(x)
        b.record()
    torch.cuda.synchronize()
    kernel_ms = a.elapsed_time(b) / 10
    d = sync("train")
    stop = os.path.join(d, "stop") if d else None
    t0 = time.perf_counter()
    n = 0
    while True:
        step()
        n += 1
        t = time.perf_counter() - t0
        if t >= seconds or (stop and n % 4 == 0 and os.path.exists(stop)):
            break
    print(f"steps={n} rate={n / t:.2f} secs={t:.3f} kernel_ms={kernel_ms:.3f}", flush=True)


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("serve", "train") or (sys.argv[1] == "serve" and len(sys.argv) != 4):
        print("usage: latency_torch.py serve SECONDS PERIOD_MS | train SECONDS", file=sys.stderr)
        return 2
    t = time.perf_counter()
    try:
        import torch
    except ImportError as e:
        print(f"latency_torch: no PyTorch here: {e}", file=sys.stderr)
        return 77
    if not torch.cuda.is_available():
        fail("torch sees no CUDA device")
    print(f"# import_s={time.perf_counter() - t:.1f}", file=sys.stderr, flush=True)
    if sys.argv[1] == "serve":
        serve(torch, float(sys.argv[2]), float(sys.argv[3]))
    else:
        train(torch, float(sys.argv[2]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
