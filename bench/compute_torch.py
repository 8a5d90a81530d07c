# A matmul-bound PyTorch training loop for the compute-share measurements:
#   python3 bench/compute_torch.py [SECONDS=3]
# 4 Linear(4096, 4096) layers (ReLU between), bf16 weights and activations, batch 4096, MSE
# loss, SGD: ~1.6 TFLOP per step (~3 ms on an H100), every step the same work. After 10 steps
# and a further CS_WARMUP seconds (default 1) of warm-up, steps run for SECONDS in chunks of 10
# (a synchronisation after each chunk) and the line
#   shape=torch work=STEPS seconds=WALL rate=STEPS/S
# is printed. Exits 1 if the loss is not finite at the end.
import os
import sys
import time

import torch

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
warmup = float(os.environ.get("CS_WARMUP_TORCH", os.environ.get("CS_WARMUP", "1")))
WIDTH, BATCH, LAYERS, CHUNK = 4096, 4096, 4, 10

torch.manual_seed(0)
layers = []
for i in range(LAYERS):
    layers.append(torch.nn.Linear(WIDTH, WIDTH))
    if i < LAYERS - 1:
        layers.append(torch.nn.ReLU())
model = torch.nn.Sequential(*layers).to(device="cuda", dtype=torch.bfloat16)
opt = torch.optim.SGD(model.parameters(), lr=1e-4)
x = torch.randn(BATCH, WIDTH, device="cuda", dtype=torch.bfloat16)
y = torch.randn(BATCH, WIDTH, device="cuda", dtype=torch.bfloat16)


def step():
    opt.zero_grad(set_to_none=True)
    loss = ((model(x).float() - y.float()) ** 2).mean()
    loss.backward()
    opt.step()
    return loss


def run(limit):
    """Run chunks of steps until `limit` seconds have passed; return (steps, wall, last loss)."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    steps = 0
    while True:
        for _ in range(CHUNK):
            loss = step()
        steps += CHUNK
        torch.cuda.synchronize()
        wall = time.perf_counter() - t0
        if wall >= limit:
            return steps, wall, loss


for _ in range(10):
    step()
if warmup > 0:
    run(warmup)
steps, wall, loss = run(seconds)
if not torch.isfinite(loss).item():
    print(f"compute_torch: loss is {loss.item()} after {steps} steps", file=sys.stderr)
    sys.exit(1)
print(f"shape=torch work={steps} seconds={wall:.3f} rate={steps / wall:.2f}", flush=True)
