#!/usr/bin/env python3
"""torch_train.py — a launch-bound PyTorch training loop for the GPU overhead comparison
(tests/gpu/torch_compare.py runs it under each profiler, from tests/gpu/run.sh).

A small MLP (LAYERS blocks of Linear → LayerNorm → GELU, width 256, batch 64) trained with AdamW
(foreach=False, so each parameter gets its own kernels): more than 500 kernel launches per step,
each step inside an NVTX range "step", the measured steps inside one NVTX range "train", a
loss.item() (device synchronization) at the end of every step.

  --mode plain            no profiler in the script (omniprof runs, or nothing)
  --mode torch_cuda       torch.profiler(activities=[CUDA]) around the measured steps
  --mode torch_cpu_cuda   torch.profiler(activities=[CPU, CUDA]) around the measured steps
Warm-up steps run before the profiler starts. Writes a JSON report (--report): loop seconds, step
count, kernels seen by torch.profiler per name with their durations (torch modes), and the
wall-clock time (epoch seconds) at which the program ended its work."""
import argparse
import contextlib
import json
import os
import statistics
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def threads():
    """Every thread of this process: name -> [cpu s, involuntary switches, voluntary, last cpu]
    (read outside the timed loop: where the profilers' own threads take the CPU from the loop)."""
    out, tick = {}, os.sysconf("SC_CLK_TCK")
    for tid in os.listdir("/proc/self/task"):
        try:
            st = open("/proc/self/task/%s/stat" % tid).read()
            status = open("/proc/self/task/%s/status" % tid).read()
        except OSError:
            continue
        f = st[st.rindex(")") + 2:].split()
        sw = {k: int(v) for k, v in (l.split(":") for l in status.splitlines() if "ctxt_switches" in l)}
        name = "%s:%s" % (st[st.index("(") + 1:st.rindex(")")], "main" if int(tid) == os.getpid() else tid)
        out[name] = [(int(f[11]) + int(f[12])) / tick, sw.get("nonvoluntary_ctxt_switches", 0),
                     sw.get("voluntary_ctxt_switches", 0), int(f[36])]
    return out


def ipis():
    """Function-call and rescheduling interrupts of the whole machine (IPIs, e.g. membarrier's)."""
    n = {}
    try:
        for line in open("/proc/interrupts"):
            parts = line.split()
            if parts and parts[0] in ("CAL:", "RES:"):
                n[parts[0][:3]] = sum(int(x) for x in parts[1:] if x.isdigit())
    except OSError:
        pass
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", default="plain", choices=["plain", "torch_cuda", "torch_cpu_cuda"])
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--report", required=True)
    a = ap.parse_args()
    torch.manual_seed(0)
    dev = "cuda"
    width = 256
    blocks = []
    for _ in range(a.layers):
        blocks += [nn.Linear(width, width), nn.LayerNorm(width), nn.GELU()]
    model = nn.Sequential(*blocks, nn.Linear(width, 10)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
    x = torch.randn(64, width, device=dev)
    y = torch.randint(0, 10, (64,), device=dev)

    def step():
        with torch.cuda.nvtx.range("step"):
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss.item()

    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
    acts = {"torch_cuda": [torch.profiler.ProfilerActivity.CUDA],
            "torch_cpu_cuda": [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]}.get(a.mode)
    prof = torch.profiler.profile(activities=acts) if acts else contextlib.nullcontext()
    step_s = []
    with prof:
        torch.cuda.nvtx.range_push("train")
        th0, ip0 = threads(), ipis()
        t0 = time.perf_counter()
        for _ in range(a.steps):
            s0 = time.perf_counter()
            step()
            step_s.append(time.perf_counter() - s0)
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        th1, ip1 = threads(), ipis()
        torch.cuda.nvtx.range_pop()
    rep = {"mode": a.mode, "steps": a.steps, "loop_s": t1 - t0, "step_ms_median": 1e3 * statistics.median(step_s),
           "step_ms": [round(1e3 * s, 4) for s in step_s], "torch": torch.__version__,
           "threads": {k: [round(v[0] - th0.get(k, [0, 0, 0])[0], 3), v[1] - th0.get(k, [0, 0, 0])[1],
                           v[2] - th0.get(k, [0, 0, 0])[2], v[3]] for k, v in th1.items()},
           "ipis": {k: v - ip0.get(k, 0) for k, v in ip1.items()}}
    if acts:
        t2 = time.perf_counter()
        fd, path = tempfile.mkstemp(suffix=".json")
        os.close(fd)
        prof.export_chrome_trace(path)
        kernels = {}
        for ev in json.load(open(path)).get("traceEvents", []):
            if ev.get("cat") == "kernel":
                kernels.setdefault(ev["name"], []).append(float(ev["dur"]) * 1e3)  # ns
        os.unlink(path)
        rep["kernels"] = kernels
        rep["export_s"] = time.perf_counter() - t2
    rep["t_end"] = time.time()
    with open(a.report, "w") as f:
        json.dump(rep, f)


if __name__ == "__main__":
    main()
