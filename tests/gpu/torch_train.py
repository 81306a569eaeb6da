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
wall-clock time (epoch seconds) at which the program ended its work.

Within one process (--windows N --window-steps S; N = 0, the default, is the whole-process run
above): after the warm-up (and one untimed window, --window-warmup), N times S unprofiled steps
("off") then S steps inside a profiled window ("on"), and S unprofiled steps at the end. A
window opens and closes between steps (torch.cuda.synchronize() first, outside the timed steps),
by --window-api (auto: torch for the torch modes, else none):
  none           nothing (plain: the method's own noise, its cost must read ~0)
  torch          a torch.profiler.profile(activities of --mode) per window
  cuda_profiler  torch.cuda.profiler.start()/stop() = cudaProfilerStart/Stop (under
                 `omniprof run --selected-regions`)
  cupti_floor    omniprof_cupti_floor_window(1/0) of the injected bare-CUPTI library
                 (CUDA_INJECTION64_PATH=libomniprof-cupti-floor.so, OMNIPROF_CUPTI_FLOOR_WINDOWS=1)
The report gets "off_ms" (N+1 lists) and "on_ms" (N lists) of step times and "window_cost": per
window median(on)/median(the off phases before and after it) - 1 (torch_compare.window_costs); with
--window-baseline before, against the off phase before it only (one window, --window-warmup 0: steps
no profiler had touched, so a cost a tracer leaves behind after its window stays out of the baseline)."""
import argparse
import contextlib
import ctypes
import json
import os
import statistics
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from torch_compare import window_costs  # the analysis's own function (one definition of a window's cost)


def cupti_libs():
    """The libcupti files mapped in this process (read at the end of the work): which CUPTI each
    profiler ran on. A tool that loads CUPTI before PyTorch (omniprof's backend) and an injection
    loaded after it (the bare-CUPTI floor, which shares the one PyTorch loaded) may differ."""
    try:
        return sorted({ln.split(None, 5)[5].strip() for ln in open("/proc/self/maps") if "libcupti" in ln})
    except OSError:
        return []


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


def thread_delta(th0, th1):
    """threads() at the end minus threads() at the start (the last cpu as at the end)."""
    return {k: [round(v[0] - th0.get(k, [0, 0, 0])[0], 3), v[1] - th0.get(k, [0, 0, 0])[1],
                v[2] - th0.get(k, [0, 0, 0])[2], v[3]] for k, v in th1.items()}


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
    ap.add_argument("--windows", type=int, default=0, help="profiled windows within the process (0: whole-process run)")
    ap.add_argument("--window-steps", type=int, default=25)
    ap.add_argument("--window-warmup", type=int, default=1, help="untimed windows after the warm-up steps")
    ap.add_argument("--window-baseline", choices=("around", "before"), default="around",
                    help="a window's cost against the unprofiled phases around it, or the one before it only")
    ap.add_argument("--window-api", default="auto", choices=["auto", "none", "torch", "cuda_profiler", "cupti_floor"])
    a = ap.parse_args()
    if a.windows < 0 or a.window_steps < 1 or a.window_warmup < 0:
        ap.error("--windows >= 0, --window-steps >= 1 and --window-warmup >= 0 (got %d, %d, %d)" % (
            a.windows, a.window_steps, a.window_warmup))
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
    if a.windows:
        return windowed(a, step, acts)
    prof = torch.profiler.profile(activities=acts) if acts else contextlib.nullcontext()
    step_s = []
    with prof:
        torch.cuda.nvtx.range_push("train")
        th0, ip0 = threads(), ipis()
        m0, t0 = time.monotonic_ns(), time.perf_counter()
        for _ in range(a.steps):
            s0 = time.perf_counter()
            step()
            step_s.append(time.perf_counter() - s0)
        torch.cuda.synchronize()
        t1, m1 = time.perf_counter(), time.monotonic_ns()
        th1, ip1 = threads(), ipis()
        torch.cuda.nvtx.range_pop()
    rep = {"mode": a.mode, "steps": a.steps, "loop_s": t1 - t0, "step_ms_median": 1e3 * statistics.median(step_s),
           "step_ms": [round(1e3 * s, 4) for s in step_s], "torch": torch.__version__,
           "loop_mono_ns": [m0, m1],  # CLOCK_MONOTONIC, omniprof's clock: the loop's samples and records
           "threads": thread_delta(th0, th1),
           "ipis": {k: v - ip0.get(k, 0) for k, v in ip1.items()}}
    if acts:
        t2 = time.perf_counter()
        rep["kernels"] = trace_kernels(prof)
        rep["export_s"] = time.perf_counter() - t2
    rep["t_end"] = time.time()
    rep["cupti_libs"] = cupti_libs()
    with open(a.report, "w") as f:
        json.dump(rep, f)


def trace_kernels(prof):
    """The kernels of a finished torch.profiler run: name -> [duration ns]."""
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f).get("traceEvents", [])
    finally:
        os.unlink(path)
    kernels = {}
    for ev in events:
        if ev.get("cat") == "kernel":
            kernels.setdefault(ev["name"], []).append(float(ev["dur"]) * 1e3)  # ns
    return kernels


def window_api(a, acts):
    """(open, close) of a profiled window for --window-api; close returns the window's torch.profiler
    object (torch) or None."""
    api = a.window_api if a.window_api != "auto" else ("torch" if acts else "none")
    if api == "torch":
        if not acts:
            raise SystemExit("torch_train.py: --window-api torch needs --mode torch_cuda or torch_cpu_cuda")
        cur = []

        def t_open():
            cur.append(torch.profiler.profile(activities=acts))
            cur[-1].__enter__()

        def t_close():
            p = cur.pop()
            p.__exit__(None, None, None)  # processes the window's trace: outside the timed steps
            return p
        return api, t_open, t_close
    if api == "cuda_profiler":
        return api, torch.cuda.profiler.start, torch.cuda.profiler.stop
    if api == "cupti_floor":
        path = os.environ.get("CUDA_INJECTION64_PATH", "")
        try:  # the library CUDA loaded at its initialization (the warm-up), not a second copy
            if not path:
                raise OSError("CUDA_INJECTION64_PATH is not set")
            lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_NOW)
            fn = lib.omniprof_cupti_floor_window
        except (OSError, AttributeError) as e:
            raise SystemExit("torch_train.py: --window-api cupti_floor: CUDA_INJECTION64_PATH=%r is not a loaded "
                             "libomniprof-cupti-floor.so with omniprof_cupti_floor_window (%s)" % (path, e))
        fn.argtypes, fn.restype = [ctypes.c_int], ctypes.c_int

        def f_set(on):
            rc = fn(on)
            if rc != 0:
                raise SystemExit("torch_train.py: omniprof_cupti_floor_window(%d) returned %d (-1: the floor runs "
                                 "without OMNIPROF_CUPTI_FLOOR_WINDOWS=1; else a CUPTI error)" % (on, rc))
        if os.environ.get("TORCH_TRAIN_WINDOW_CUDA_PROFILER") == "1":  # cudaProfilerStart/Stop too, as omniprof's windows
            def p_open():
                f_set(1)
                torch.cuda.profiler.start()

            def p_close():
                torch.cuda.profiler.stop()
                f_set(0)
            return api, p_open, p_close
        return api, lambda: f_set(1), lambda: f_set(0)
    return "none", lambda: None, lambda: None


def windowed(a, step, acts):
    """--windows N: off and on phases of --window-steps steps alternating in this process."""
    api, w_open, w_close = window_api(a, acts)

    def window(phase):
        torch.cuda.synchronize()
        t = time.perf_counter()
        w_open()
        t_open = time.perf_counter() - t
        phase()
        torch.cuda.synchronize()
        t = time.perf_counter()
        p = w_close()
        return p, t_open, time.perf_counter() - t

    def timed():
        out = []
        for _ in range(a.window_steps):
            s0 = time.perf_counter()
            step()
            out.append(round(1e3 * (time.perf_counter() - s0), 4))
        return out

    for _ in range(a.window_warmup):  # untimed: what a tracer pays once (e.g. CUPTI's first enable) stays out
        window(lambda: [step() for _ in range(a.window_steps)])
    off_ms, on_ms, open_ms, close_ms, first = [], [], [], [], None
    torch.cuda.nvtx.range_push("train")
    th0, ip0 = threads(), ipis()
    t0 = time.perf_counter()
    for _ in range(a.windows):
        off_ms.append(timed())
        on = []
        p, t_open, t_close = window(lambda: on.extend(timed()))
        on_ms.append(on)
        open_ms.append(round(1e3 * t_open, 3))
        close_ms.append(round(1e3 * t_close, 3))
        if first is None:
            first = p
    off_ms.append(timed())
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    th1, ip1 = threads(), ipis()
    torch.cuda.nvtx.range_pop()
    every = [x for ph in off_ms + on_ms for x in ph]
    rep = {"mode": a.mode, "window_api": api, "windows": a.windows, "window_steps": a.window_steps,
           "window_warmup": a.window_warmup, "steps": len(every), "loop_s": t1 - t0,
           "step_ms_median": statistics.median(every), "off_ms": off_ms, "on_ms": on_ms,
           "window_cost": window_costs(off_ms, on_ms, a.window_baseline),
           "window_baseline": a.window_baseline, "open_ms": open_ms, "close_ms": close_ms,
           "torch": torch.__version__,
           "threads": thread_delta(th0, th1),
           "ipis": {k: v - ip0.get(k, 0) for k, v in ip1.items()}}
    if first is not None:  # the first window's kernels (after the timed phases: costs them nothing)
        rep["kernels"] = trace_kernels(first)
    rep["t_end"] = time.time()
    rep["cupti_libs"] = cupti_libs()
    with open(a.report, "w") as f:
        json.dump(rep, f)


if __name__ == "__main__":
    main()
