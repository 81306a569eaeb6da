#!/usr/bin/env python3
"""bench_python.py — what 1 kHz sampling with Python frames costs a Python program: wall time
of a fixed amount of Python work (a pure-Python loop, a generator and a second thread doing the
same) unprofiled, under `omniprof run --sample realtime --sampling-freq 1000` (Python frames
read, docs/cpu.md), and the same with OMNIPROF_SAMPLING_PYTHON=false (native frames only), in
interleaved rounds of the same run; medians. Prints `metric=<name> value=<n> unit=<u>` lines and
each profiled figure beside the unprofiled one of the same run (target: <= 3 % added).

  work_wall   the program's own clock around its work (start-up and the end of run excluded)
  work_cpu    the process's CPU time around its work (time.process_time(): every thread, the
              profiler's signal handlers and allocator threads included) — on a loaded machine
              the steadier figure: wall time varies with the other work by far more than 3 %,
              while the CPU the profiler adds is what it can add to the wall time at most
              (handler time is on the program's threads; allocator time too when no CPU is free)
  run_wall    the whole run, the profiler's start and its database at the end included
Overheads are the medians of the rounds' own ratios (each profiled run against the unprofiled
run of the same round), so a change of the machine's load between rounds cancels out.

usage: bench_python.py BUILD_DIR [ROUNDS]      (python: $BENCH_PYTHON, else python3)"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

PROG = r"""
import sys, threading, time
def loop(n):
    s = 0
    for i in range(n):
        s += i * i % 7
    return s
def gen(n):
    for i in range(n):
        yield i % 5
def work():
    for _ in range(100):
        loop(40000)
        sum(gen(40000))
t0, c0 = time.perf_counter(), time.process_time()
th = threading.Thread(target=work)
th.start()
work()
th.join()
print("work_wall_s=%.6f work_cpu_s=%.6f" % (time.perf_counter() - t0, time.process_time() - c0))
"""


def run(cmd, env):
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.monotonic() - t0
    got = dict(x.split("=", 1) for x in r.stdout.split() if x.startswith("work_"))
    if r.returncode != 0 or "work_cpu_s" not in got:
        raise SystemExit("bench run failed: %s\n%s" % (" ".join(cmd), r.stderr[-2000:]))
    return float(got["work_wall_s"]), float(got["work_cpu_s"]), wall


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    py = os.environ.get("BENCH_PYTHON") or shutil.which("python3")
    omniprof = os.path.join(build, "bin", "omniprof")
    tmp = tempfile.mkdtemp(prefix="omniprof-bench-python-")
    prog = os.path.join(tmp, "work.py")
    with open(prog, "w") as f:
        f.write(PROG)
    base = dict(os.environ, OMNIPROF_LOG_LEVEL="error")
    confs = {
        "unprofiled": ([py, prog], base),
        "python_frames": ([omniprof, "run", "--sample", "realtime", "--sampling-freq", "1000", "-d", tmp, "-o",
                           "b", "--", py, prog], base),
        "native_only": ([omniprof, "run", "--sample", "realtime", "--sampling-freq", "1000", "-d", tmp, "-o",
                         "b", "--", py, prog], dict(base, OMNIPROF_SAMPLING_PYTHON="false")),
    }
    res = {k: ([], [], []) for k in confs}
    try:
        for _ in range(rounds):
            for name, (cmd, env) in confs.items():
                for f in os.listdir(tmp):
                    if f.startswith("b_results"):
                        os.unlink(os.path.join(tmp, f))
                for i, x in enumerate(run(cmd, env)):
                    res[name][i].append(x)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    v = subprocess.run([py, "-V"], capture_output=True, text=True).stdout.strip()
    load = os.getloadavg()[0]
    print("python sampling at 1 kHz, %s, %d rounds, %d CPUs, load average %.1f (medians):" %
          (v, rounds, os.cpu_count(), load))
    base = res["unprofiled"]
    for name in confs:
        w, c, t = (statistics.median(x) for x in res[name])
        print("metric=python_%s_work_wall value=%.4f unit=s" % (name, w))
        print("metric=python_%s_work_cpu value=%.4f unit=s" % (name, c))
        print("metric=python_%s_run_wall value=%.4f unit=s" % (name, t))
        if name == "unprofiled":
            continue
        ratio = [statistics.median(a / b for a, b in zip(res[name][i], base[i])) for i in range(3)]
        print("  %-14s work wall %.3f s vs %.3f s unprofiled: %+.1f %%; work CPU %.3f s vs %.3f s: %+.1f %%; "
              "whole run %.3f s vs %.3f s: %+.1f %% (target: <= 3 %% added)" %
              (name, w, statistics.median(base[0]), 100 * (ratio[0] - 1), c, statistics.median(base[1]),
               100 * (ratio[1] - 1), t, statistics.median(base[2]), 100 * (ratio[2] - 1)))
        print("metric=python_%s_work_overhead value=%.2f unit=%%" % (name, 100 * (ratio[0] - 1)))
        print("metric=python_%s_cpu_overhead value=%.2f unit=%%" % (name, 100 * (ratio[1] - 1)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
