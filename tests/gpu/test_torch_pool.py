#!/usr/bin/env python3
"""test_torch_pool.py — torch_compare.py --pool reads the rounds of several runs as one set (CTest
gpu.torch_pool; no GPU): two runs' torch_compare.json written here with known loop times, the
per-round ratios pooled, the MET/MISSED verdicts and round counts checked; a bad file is named."""
import json
import os
import shutil
import subprocess
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from testlib import FAILS, check, scratch  # noqa: E402 (tests/testlib.py: the one assertion helper)

HERE = os.path.dirname(os.path.abspath(__file__))


def pool(*paths):
    """torch_compare.py --pool PATHS with the environment's mode choices cleared."""
    return subprocess.run([sys.executable, os.path.join(HERE, "torch_compare.py"), "--pool"] + list(paths),
                          capture_output=True, text=True,
                          env=dict(os.environ, TORCH_COMPARE_MODES="", TORCH_COMPARE_EXTRA="", TORCH_COMPARE_WINDOWS=""))


def finish(d):
    """Removes the work folder d; the exit status of the checks made."""
    shutil.rmtree(d, ignore_errors=True)
    if FAILS:
        print("%d check(s) failed" % len(FAILS))
        return 1
    return 0


def run_json(loops):
    """{mode: [loop s per round]} -> a torch_compare.json body (steps of 10 ms scaled to the loop)."""
    rounds = {}
    for m, xs in loops.items():
        rounds[m] = {str(i): {"loop_s": x, "step_ms_median": 10 * x, "step_ms": [10 * x] * 100,
                              "threads": {"python3:main": [0.7 * x, 1, 100, 9], "pt_autograd_0:1": [0.2, 0, 50, 3]},
                              "ipis": {"CAL": 300, "RES": 1}} for i, x in enumerate(xs, 1)}
    return {"rounds": rounds}


def main():
    d = scratch("tpool-")  # removed at the end, whatever the path
    # run A: runtime adds 0.2 where torch adds 0.4 (0.5x, twice); kernel adds 0.1 (0.25x)
    a = run_json({"plain": [1.0, 1.0], "om_runtime": [1.2, 1.2], "om_kernel": [1.1, 1.1], "torch_cuda": [1.4, 1.4]})
    # run B, another host: runtime 0.1 of 0.5 (0.2x); kernel 0.3 of 0.5 (0.6x)
    b = run_json({"plain": [2.0], "om_runtime": [2.1], "om_kernel": [2.3], "torch_cuda": [2.5]})
    pa, pb = os.path.join(d, "a.json"), os.path.join(d, "b.json")
    json.dump(a, open(pa, "w"))
    json.dump(b, open(pb, "w"))
    r = pool(pa, pb)
    print(r.stdout)
    check(r.returncode == 0, "--pool exits 0 (%d: %s)" % (r.returncode, r.stderr.strip()[-300:]))
    check("pooled: 2 runs, 3 rounds of plain" in r.stdout, "three rounds pooled from two runs")
    check("om_runtime       r2.1 loop 2.100; main 1.47/1/100 cpu9; pt_autograd_0=0.20; CAL 300 RES 1" in r.stdout,
          "the threads of each pooled round, named by run and round")
    # runtime per round: 0.5, 0.5, 0.2 -> median 0.5 [0.2-0.5]: met (<= 0.5)
    check("MET torch.om_runtime_vs_torch_cuda: omniprof adds 0.50x [0.20-0.50] what torch_cuda adds (3 rounds" in r.stdout,
          "the runtime ratio pools per round (0.50x [0.20-0.50], met)")
    # kernel per round: 0.25, 0.25, 0.6 -> median 0.25: met (<= 0.3)
    check("MET torch.om_kernel_vs_torch_cuda: omniprof adds 0.25x [0.25-0.60]" in r.stdout,
          "the kernel ratio pools per round (0.25x [0.25-0.60], met)")
    bad = os.path.join(d, "bad.json")
    open(bad, "w").write("not json")
    r = pool(pa, bad)
    check(r.returncode == 2 and bad in r.stdout and "torch_compare.json" in r.stdout,
          "a file that is not a torch_compare.json is named, exit 2 (%d: %s)" % (r.returncode, r.stdout.strip()))
    return finish(d)


if __name__ == "__main__":
    sys.exit(main())
