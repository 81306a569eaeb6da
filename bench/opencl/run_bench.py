#!/usr/bin/env python3
"""run_bench.py — host cost per clEnqueueNDRangeKernel, traced vs untraced (bench_enqueue.c).

usage: run_bench.py BUILD_DIR [CALLS [ROUNDS]]

Modes, interleaved in each round (the median of ROUNDS is reported):
  untraced      the program alone (the baseline)
  layer         libomniprof-backend-opencl.so in OPENCL_LAYERS, nothing traced (pass-through)
  api           omniprof run --opencl-trace
  kernel        omniprof run --kernel-trace (profiling turned on, one event + callback per call)
  api+kernel    omniprof run --opencl-trace --kernel-trace
The figure of a run is its fastest batch of 500 calls (bench_enqueue.c: the least disturbed by
other work). Prints `metric=opencl_enqueue_<mode> value=<ns> unit=ns` lines, then a table with
the ratio and the difference to the baseline measured in the same run.
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile


def main():
    build = sys.argv[1]
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    prog = os.path.join(build, "bin", "bench_opencl_enqueue")
    omniprof = os.path.join(build, "bin", "omniprof")
    layer = os.path.join(build, "lib", "libomniprof-backend-opencl.so")
    tmp = tempfile.mkdtemp(prefix="omniprof-bench-ocl-")
    env = dict(os.environ, OMNIPROF_LOG_LEVEL="error", POCL_CACHE_DIR=os.path.join(build, "pocl-cache"))
    run = [omniprof, "run", "-d", tmp, "-o", "b"]
    modes = [
        ("untraced", [prog], {}),
        ("layer", [prog], {"OPENCL_LAYERS": layer}),
        ("api", run + ["--opencl-trace", "--", prog], {}),
        ("kernel", run + ["--kernel-trace", "--", prog], {}),
        ("api+kernel", run + ["--opencl-trace", "--kernel-trace", "--", prog], {}),
    ]
    got = {m[0]: [] for m in modes}
    for _ in range(rounds):
        for name, argv, extra in modes:
            p = subprocess.run(argv + [str(calls)], env=dict(env, **extra), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
            if p.returncode == 77:
                print("SKIP: no OpenCL device")
                return 0
            m = re.search(r"best_batch_ns=([0-9.]+)", p.stdout)
            if p.returncode != 0 or not m:
                print("FAIL %s: exit %d: %s" % (name, p.returncode, p.stderr[-300:]))
                return 1
            got[name].append(float(m.group(1)))
    base = statistics.median(got["untraced"])
    for name, _, _ in modes:
        print("metric=opencl_enqueue_%s value=%.1f unit=ns" % (name.replace("+", "_"), statistics.median(got[name])))
    low = min(got["untraced"])
    print("\n| mode | ns per clEnqueueNDRangeKernel: median of %d runs (fastest run) | vs untraced | added |" % rounds)
    print("|:--|--:|--:|--:|")
    for name, _, _ in modes:
        v, m = statistics.median(got[name]), min(got[name])
        print("| %s | %.0f (%.0f) | %.2fx (%.2fx) | %+.0f ns (%+.0f ns) |" % (name, v, m, v / base, m / low, v - base, m - low))
    print("(%d calls per run; all runs: %s)" % (calls, {k: [round(x) for x in v] for k, v in got.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
