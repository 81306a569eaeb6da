"""torch_nvtx.py — a small PyTorch workload with torch.cuda.nvtx ranges for the GPU tests:
three ranges "omniprof_step0..2", each a matmul + relu on the GPU. The validator checks that
its kernels appear and that each range encloses at least one launch."""
import torch

x = torch.randn(512, 512, device="cuda")
torch.cuda.synchronize()
for i in range(3):
    torch.cuda.nvtx.range_push("omniprof_step%d" % i)
    y = torch.relu(x @ x)
    torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
print("EXPECT {}")
print("torch", torch.__version__, "sum", float(y.sum()))
