# A launch-bound PyTorch training loop: 24 Linear(256,256)+ReLU layers, batch 64, SGD.
# Prints steps_per_s: the median of 3 windows of 200 steps, after 50 warm-up steps.
import time

import torch

torch.manual_seed(0)
layers = []
for _ in range(24):
    layers += [torch.nn.Linear(256, 256), torch.nn.ReLU()]
model = torch.nn.Sequential(*layers).cuda()
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(64, 256, device="cuda")
y = torch.randn(64, 256, device="cuda")


def step():
    opt.zero_grad(set_to_none=True)
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()


for _ in range(50):
    step()
torch.cuda.synchronize()
n, rates = 200, []
for _ in range(3):
    t = time.perf_counter()
    for _ in range(n):
        step()
    torch.cuda.synchronize()
    rates.append(n / (time.perf_counter() - t))
print(f"steps_per_s {sorted(rates)[1]:.1f}")
