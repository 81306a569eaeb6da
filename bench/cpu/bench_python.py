#!/usr/bin/env python3
"""bench_python.py — what 1 kHz sampling with Python frames costs a Python program: wall time
of a fixed amount of Python work (a pure-Python loop, a generator and a second thread doing the
same) unprofiled, under `omniprof run --sample realtime --sampling-freq 1000` (Python frames
read, docs/cpu.md), and the same with OMNIPROF_SAMPLING_PYTHON=false (native frames only), in
interleaved rounds of the same run; medians. Prints `metric=<name> value=<n> unit=<u>` lines and
each profiled figure beside the unprofiled one of the same run (target: <= 3 % added).

  work_wall   the program's own clock around its work (start-up and the end of run excluded)
  run_wall    the whole run, the profiler's start and its database at the end included

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
t0 = time.perf_counter()
th = threading.Thread(target=work)
th.start()
work()
th.join()
print("work_wall_s=%.6f" % (time.perf_counter() - t0))
"""


def run(cmd, env):
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.monotonic() - t0
    line = [x for x in r.stdout.split() if x.startswith("work_wall_s=")]
    if r.returncode != 0 or not line:
        raise SystemExit("bench run failed: %s\n%s" % (" ".join(cmd), r.stderr[-2000:]))
    return float(line[0].split("=")[1]), wall


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
    res = {k: ([], []) for k in confs}
    try:
        for _ in range(rounds):
            for name, (cmd, env) in confs.items():
                for f in os.listdir(tmp):
                    if f.startswith("b_results"):
                        os.unlink(os.path.join(tmp, f))
                w, t = run(cmd, env)
                res[name][0].append(w)
                res[name][1].append(t)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    v = subprocess.run([py, "-V"], capture_output=True, text=True).stdout.strip()
    print("python sampling at 1 kHz, %s, %d rounds (medians):" % (v, rounds))
    base_w, base_t = statistics.median(res["unprofiled"][0]), statistics.median(res["unprofiled"][1])
    for name in confs:
        w, t = statistics.median(res[name][0]), statistics.median(res[name][1])
        print("metric=python_%s_work_wall value=%.4f unit=s" % (name, w))
        print("metric=python_%s_run_wall value=%.4f unit=s" % (name, t))
        if name != "unprofiled":
            print("  %-14s work %.3f s vs %.3f s unprofiled: %+.1f %%; whole run %.3f s vs %.3f s: %+.1f %%" %
                  (name, w, base_w, 100 * (w / base_w - 1), t, base_t, 100 * (t / base_t - 1)))
            print("metric=python_%s_work_overhead value=%.2f unit=%%" % (name, 100 * (w / base_w - 1)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
