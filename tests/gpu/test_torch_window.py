#!/usr/bin/env python3
"""test_torch_window.py — the within-process analysis of torch_compare.py (CTest gpu.torch_window; no
GPU, no torch): windowed reports as torch_train.py --windows writes them, with known step times, are
read by torch_compare.py --pool; checks each window's cost against the unprofiled phases around it,
each process's cost (the median of its windows), the per-round and medians' ratios, the
within-process TARGET lines, plain's cost, and that windowed and whole-process runs do not pool."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_compare  # noqa: E402  (standard library only)
from test_torch_pool import check, finish, scratch, pool  # noqa: E402

S = 4  # steps per phase


def windowed_report(speed, costs, drift=0.05):
    """A torch_train.py --windows report: off phase i at speed * 10 ms * (1 + drift * i) (the process drifts),
    window i at the median of the off phases around it times (1 + costs[i])."""
    off = [[round(speed * 10 * (1 + drift * i), 6)] * S for i in range(len(costs) + 1)]
    on = [[(off[i][0] + off[i + 1][0]) / 2 * (1 + c)] * S for i, c in enumerate(costs)]
    steps = [x for ph in off + on for x in ph]
    return {"mode": "x", "windows": len(costs), "window_steps": S, "window_warmup": 1, "steps": len(steps),
            "loop_s": sum(steps) / 1e3, "step_ms_median": sorted(steps)[len(steps) // 2], "off_ms": off, "on_ms": on,
            "window_cost": torch_compare.window_costs(off, on), "kernels_per_on_step": 540.0 if any(costs) else 0.0,
            "threads": {"python3:main": [0.5, 1, 100, 9]}, "ipis": {"CAL": 1, "RES": 1}}


def main():
    # one window's cost is against the off phases before AND after it: 10 and 12 ms around 13.2 ms -> +20 %
    c = torch_compare.window_costs([[10.0] * 3, [12.0] * 3], [[13.2] * 3])
    check(len(c) == 1 and abs(c[0] - 0.2) < 1e-9, "a window's cost is median(on)/median(off around it) - 1 (%s)" % c)
    check(torch_compare.process_cost({"off_ms": [[10.0]] * 4, "on_ms": [[11.0], [11.0], [30.0]]}) is not None and
          abs(torch_compare.process_cost({"off_ms": [[10.0]] * 4, "on_ms": [[11.0], [11.0], [30.0]]}) - 0.1) < 1e-9,
          "a process's cost is the median of its windows' (one slow window does not move it)")

    # three rounds; the processes of round 2 run in the hosts' slow state (1.42x every step), which must cancel.
    # Each process has one outlier window (+100 %: e.g. a first enable) that its median leaves out.
    per_round = {"plain": [0.0, 0.0, 0.0], "cupti_runtime": [0.20, 0.25, 0.20], "cupti_launch": [0.12, 0.10, 0.14],
                 "om_runtime": [0.16, 0.30, 0.24], "om_kernel": [0.10, 0.10, 0.12], "torch_cuda": [0.40, 0.50, 0.40]}
    speeds = [1.0, 1.42, 1.0]
    rounds = {m: {str(k + 1): windowed_report(speeds[k], [cs[k], cs[k] + (1.0 if m != "plain" else 0.0), cs[k]])
                  for k in range(3)} for m, cs in per_round.items()}
    # torch.profiler's processes run 20 % slower in their off phases too (a cost left behind outside its windows)
    for k in range(3):
        rounds["torch_cuda"][str(k + 1)] = windowed_report(speeds[k] * 1.2, [per_round["torch_cuda"][k]] * 3)
    # the CUPTI each process mapped (torch_train.py's cupti_libs): the floor shares PyTorch's, omniprof loads its own
    for k in range(3):
        rounds["cupti_runtime"][str(k + 1)]["cupti_libs"] = ["/py/nvidia/cu13/lib/libcupti.so.13"]
        rounds["om_runtime"][str(k + 1)]["cupti_libs"] = ["/usr/local/cuda/lib64/libcupti.so.2025.3.1"]
    d = scratch("twin-")  # removed at the end, whatever the path
    pw = os.path.join(d, "win.json")
    json.dump({"rounds": rounds, "windows": 3, "window_steps": S}, open(pw, "w"))
    r = pool(pw)
    out = r.stdout
    print(out)
    check(r.returncode == 0, "--pool of a windowed run exits 0 (%d: %s)" % (r.returncode, r.stderr.strip()[-300:]))
    check("pooled: 1 runs, 3 rounds of plain, within-process" in out, "the pooled run is read as within-process")
    # per mode: median over rounds of each process's cost, min-max, bootstrap interval, rounds, kernels per on step
    check("| torch_cuda | +40.0 % [+40.0-+50.0] | [+40.0-+50.0] % | 3 |" in out,
          "torch_cuda's within-process cost: +40 % [40-50], 90 % bootstrap [40-50], 3 rounds")
    check("| om_runtime | +24.0 % [+16.0-+30.0] | [+16.0-+30.0] % | 3 |" in out, "om_runtime's cost +24 % [16-30]")
    check("| 540.0 540.0 540.0 |" in out, "kernels per profiled step are shown per round")
    check("| 3 | 11.25 | 18.92 | +0.0 % [+0.0-+0.0] | 540.0" in out, "om_runtime's off phases against plain's, same round")
    check("| 3 | 13.50 | 18.90 | +20.0 % [+20.0-+20.0] | 540.0" in out,
          "torch_cuda's off phases read 20 % above plain's of the same round")
    check("plain (windows that profile nothing: the method's own noise, ~0 when it works): +0.00 % [+0.00-+0.00]" in out,
          "plain's cost printed as the method's noise")
    check("| om_runtime on |" in out and "| om_runtime off |" in out, "the step percentiles per phase")
    # per-round ratios of the same round's process costs: runtime 0.4, 0.6, 0.6 -> 0.60x [0.40-0.60], missed;
    # kernel 0.25, 0.2, 0.3 -> 0.25x [0.20-0.30], met; the floors against torch_cuda too
    check("MISSED torch.om_runtime_vs_torch_cuda_within_process: omniprof adds 0.60x [0.40-0.60] what torch_cuda adds, "
          "within-process (3 rounds; target <= 0.5x)" in out, "om_runtime/torch_cuda per round 0.60x [0.40-0.60]: MISSED")
    check("MET torch.om_kernel_vs_torch_cuda_within_process: omniprof adds 0.25x [0.20-0.30] what torch_cuda adds, "
          "within-process (3 rounds; target <= 0.3x)" in out, "om_kernel/torch_cuda per round 0.25x [0.20-0.30]: MET")
    check("ratio cupti_runtime/torch_cuda added time, within-process: 0.50x [0.50-0.50] (3 rounds)" in out,
          "cupti_runtime/torch_cuda 0.50x per round")
    check("ratio cupti_launch/torch_cuda added time, within-process: 0.30x [0.20-0.35] (3 rounds)" in out,
          "cupti_launch/torch_cuda 0.30x [0.20-0.35] per round")
    check("ratio om_runtime/cupti_runtime added time, within-process: 1.20x [0.80-1.20] (3 rounds)" in out,
          "om_runtime against its floor per round 0.8, 1.2, 1.2: 1.20x [0.80-1.20]")
    # the medians' ratio: 0.24 / 0.40 = 0.60x, 0.10 / 0.40 = 0.25x (the bootstrap interval beside it)
    check("  (the medians' ratio: 0.60x, 90 % bootstrap interval over rounds [" in out, "runtime medians' ratio 0.60x")
    check("  (the medians' ratio: 0.25x, 90 % bootstrap interval over rounds [" in out, "kernel medians' ratio 0.25x")
    check("libcupti mapped (the CUPTI each mode ran on): cupti_runtime /py/nvidia/cu13/lib/libcupti.so.13; "
          "om_runtime /usr/local/cuda/lib64/libcupti.so.2025.3.1" in out, "the libcupti each mode mapped is shown")
    check("25th-percentile" not in out, "no 25th-percentile reading (a whole-process reading) for windowed runs")

    # a windowed and a whole-process run are not one quantity: refused, both files named
    pw2 = os.path.join(d, "whole.json")
    json.dump({"rounds": {"plain": {"1": {"loop_s": 1.0, "step_ms_median": 10.0, "step_ms": [10.0]}},
                          "torch_cuda": {"1": {"loop_s": 1.4, "step_ms_median": 14.0, "step_ms": [14.0]}}}},
              open(pw2, "w"))
    r = pool(pw, pw2)
    check(r.returncode == 2 and pw in r.stdout and pw2 in r.stdout and "pool each kind alone" in r.stdout,
          "windowed and whole-process runs do not pool (exit 2, both named: %d %s)" % (r.returncode, r.stdout.strip()))

    # baseline "before": one window against the phase before it only. torch.profiler's process slows by 20 % after
    # its window (a cost left behind): 10 ms before, 14 ms in the window, 12 ms after -> +40 %, not 14/11 - 1
    c = torch_compare.window_costs([[10.0] * 3, [12.0] * 3], [[14.0] * 3], "before")
    check(len(c) == 1 and abs(c[0] - 0.4) < 1e-9, "baseline before: median(on)/median(off before it) - 1 (%s)" % c)
    before = {m: {"1": dict(windowed_report(1.0, [cs[0]], drift=0.0), window_baseline="before")}
              for m, cs in per_round.items()}
    before["torch_cuda"]["1"]["off_ms"][1] = [12.0] * S  # slower after its window: not in its baseline
    check(abs(torch_compare.process_cost(before["torch_cuda"]["1"]) - 0.40) < 1e-9,
          "a process's cost reads its report's window_baseline (torch_cuda +40 %% against the phase before: %s)" %
          torch_compare.process_cost(before["torch_cuda"]["1"]))
    pb = os.path.join(d, "before.json")
    json.dump({"rounds": before, "windows": 1, "window_steps": S, "window_baseline": "before"}, open(pb, "w"))
    r = pool(pb)
    check(r.returncode == 0 and "| torch_cuda | +40.0 % [+40.0-+40.0]" in r.stdout,
          "--pool of a before-baseline run reads torch_cuda +40 %% (%d: %s)" % (r.returncode, r.stdout[-400:]))
    r = pool(pw, pb)
    check(r.returncode == 2 and "pool each baseline alone" in r.stdout and pw in r.stdout and pb in r.stdout,
          "windows against other baselines do not pool (exit 2, both named: %d %s)" % (r.returncode, r.stdout.strip()))
    return finish(d)


if __name__ == "__main__":
    sys.exit(main())
