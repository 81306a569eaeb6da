#!/usr/bin/env python3
"""A PyTorch NCCL program for `omniprof analyze` across ranks (tests/analyze/gpu_nccl.py, part
"nccl" of tests/gpu/run.sh). Each step every rank multiplies matrices (WORK matmuls) and joins
an all_reduce; rank 1 is a planted straggler: EXTRA element-wise cos kernels more per step (the
knob: --extra 0 removes them). Each timed step (not the warm-up ones) is an NVTX range
`step` (torch.cuda.nvtx, recorded by omniprof): `omniprof analyze --iteration step` times them.
Started once per rank with MASTER_ADDR/MASTER_PORT, RANK, WORLD_SIZE and LOCAL_RANK in the
environment (as torch.distributed.run sets them).
usage: torch_nccl.py [--steps N] [--work N] [--extra N] [--size N]"""
import argparse
import os

import torch
import torch.distributed as dist


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--work", type=int, default=8)
    ap.add_argument("--extra", type=int, default=200)
    ap.add_argument("--size", type=int, default=4096)
    a = ap.parse_args()
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    dev = torch.device("cuda", local)
    x = torch.randn(a.size, a.size, device=dev)
    buf = torch.ones(1 << 22, device=dev)

    def step(extra, mark):
        if mark:
            torch.cuda.nvtx.range_push("step")
        y = x
        for _ in range(a.work):
            y = torch.matmul(x, x) * 1e-3
        if rank == 1:
            z = x
            for _ in range(extra):
                z = torch.cos(z)
        dist.all_reduce(buf)
        torch.cuda.synchronize()
        if mark:
            torch.cuda.nvtx.range_pop()
        return y

    for _ in range(3):  # warm-up: NCCL's communicator, cuBLAS handles
        step(a.extra, False)
    for _ in range(a.steps):
        step(a.extra, True)
    dist.barrier()
    dist.destroy_process_group()
    print("torch_nccl rank %d done" % rank)


if __name__ == "__main__":
    main()
