# Where the GPU time of bench/compute_torch.py's training step goes, as CUPTI sees it:
#   python3 bench/torch_kernels.py [STEPS=200]   (under a cap: with the interposer preloaded)
# Runs the same model and step as compute_torch.py (imported from it, with its warm-up), then
# STEPS steps under torch.profiler with CUDA activity, and prints one line:
#   torch_kernels steps=N kernels=K kernel_ms_per_step=X span_ms_per_step=Y idle_in_chunks_ms_per_step=Z
#     gemm_ms_per_step=G other_ms_per_step=O wall_ms_per_step=W
# kernel_ms: the sum of kernel durations; span: first kernel start to last kernel end of each
# chunk of 10 steps, summed; idle_in_chunks: span minus the union of kernel intervals. Comparing
# these natively and under a cap tells whether a capped step takes less GPU time (the kernels
# themselves run faster) or whether the limiter's measure of it differs.
import json
import os
import sys
import tempfile
import time

os.environ.setdefault("CS_WARMUP_TORCH", "1")
sys.argv = [sys.argv[0], "0"] + sys.argv[1:]
steps_wanted = int(sys.argv[2]) if len(sys.argv) > 2 else 200
import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compute_torch as ct  # noqa: E402  (runs its warm-up and a 0-second measurement)

with profile(activities=[ProfilerActivity.CUDA]) as prof:
    t0 = time.perf_counter()
    done = 0
    while done < steps_wanted:
        for _ in range(ct.CHUNK):
            ct.step()
        done += ct.CHUNK
        torch.cuda.synchronize()
    wall = time.perf_counter() - t0
trace = os.path.join(tempfile.mkdtemp(), "trace.json")
prof.export_chrome_trace(trace)
events = json.load(open(trace))
events = events["traceEvents"] if isinstance(events, dict) else events
kernels = sorted((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)), e.get("name", ""))
                 for e in events if e.get("cat") == "kernel")
if not kernels:
    print("torch_kernels: the profiler saw no kernels", file=sys.stderr)
    sys.exit(1)
total = sum(b - a for a, b, _ in kernels)
gemm = sum(b - a for a, b, n in kernels if "gemm" in n.lower() or "sm90" in n.lower() or "cutlass" in n.lower())
# Chunks: split where the GPU idles more than 1 ms (the synchronisation after each chunk, or
# a closed gate); span and in-chunk idle are summed over the pieces.
span = idle = 0.0
start, end = kernels[0][0], kernels[0][1]
for a, b, _ in kernels[1:]:
    if a > end + 1000.0:
        span += end - start
        start, end = a, b
        continue
    if a > end:
        idle += a - end
    end = max(end, b)
span += end - start
n = done
print(f"torch_kernels steps={n} kernels={len(kernels)} kernel_ms_per_step={total / n / 1000:.4f} "
      f"span_ms_per_step={span / n / 1000:.4f} idle_in_chunks_ms_per_step={idle / n / 1000:.4f} "
      f"gemm_ms_per_step={gemm / n / 1000:.4f} other_ms_per_step={(total - gemm) / n / 1000:.4f} "
      f"wall_ms_per_step={wall / n * 1000:.4f}", flush=True)
