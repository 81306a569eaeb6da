"""A PyTorch training loop with a planted host-side stall, for `omniprof analyze` on the GPU
machine (gpu_analyze.py): STEPS steps, each inside the NVTX range "step": "data_load" spins
LOAD_MS on the CPU (the planted problem: the GPU idles meanwhile), then forward, backward and an
optimizer step of an MLP, and loss.item() (a synchronize). usage: gpu_torch_loop.py STEPS LOAD_MS"""
import sys
import time

import torch

steps, load_ms = int(sys.argv[1]), float(sys.argv[2])
dev = torch.device("cuda")
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(2048, 4096), torch.nn.ReLU(), torch.nn.Linear(4096,
    4096),
                            torch.nn.ReLU(), torch.nn.Linear(4096, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(512, 2048, device=dev)
y = torch.randint(0, 10, (512,), device=dev)
for _ in range(3):  # warm-up (cuBLAS handles, allocator) outside the measured steps
    model(x).sum().backward()
torch.cuda.synchronize()
for i in range(steps):
    torch.cuda.nvtx.range_push("step")
    torch.cuda.nvtx.range_push("data_load")
    t0 = time.monotonic()
    while time.monotonic() - t0 < load_ms / 1000.0:
        pass
    torch.cuda.nvtx.range_pop()
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    loss.item()
    torch.cuda.nvtx.range_pop()
print("torch loop done")
