# PyTorch under a slice of QUOTA bytes: mem_get_info shows the quota, allocating past it raises
# PyTorch's usual OOM, allocating within it works. Exit 0 only if all three hold.
import sys

import torch

quota = int(sys.argv[1])
free, total = torch.cuda.mem_get_info()
print(f"torch.cuda.mem_get_info: free {free >> 20} MiB, total {total >> 20} MiB (quota {quota >> 20} MiB)")
ok = total == quota and 0 < free <= total
try:
    x = torch.empty(quota + (1 << 30), dtype=torch.uint8, device="cuda")
    print("allocation past the quota did NOT fail")
    ok = False
except torch.cuda.OutOfMemoryError as e:
    print("allocation past the quota: torch.cuda.OutOfMemoryError:", str(e).splitlines()[0][:100])
y = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
y.fill_(7)
torch.cuda.synchronize()
ok = ok and int(y[12345].item()) == 7
print("1 GiB inside the quota: allocated and written")
sys.exit(0 if ok else 1)
