#!/usr/bin/env python3
"""bench_causal.py — wall time of a causal profiling run against Coz's, per experiment.

For each test program of tests/causal (fixed work: -N iterations), in interleaved rounds:
  bare      the program alone
  coz       `coz run --- PROG` (Debian coz-profiler; experiments of 0.5 s and more)
  omniprof  `omniprof causal -- PROG` (the defaults: experiments of 0.5 s and more, speedups
            drawn as Coz draws them)
and prints, per program, the wall time, the experiments, the wall time per experiment and the
ratio omniprof/coz of the latter (target: <= 1.5), and each profiler's wall time over the bare
run's. Lines `metric=<name> value=<n> unit=<u>` as the other benchmarks.

usage: bench_causal.py BUILD_DIR [rounds] [iterations scale]
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

PROGRAMS = {"join_workers": ("10", 600), "serial_phase": ("5", 1200)}  # ms of work, iterations


def timed(cmd, cwd):
    t0 = time.monotonic()
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=1800)
    return time.monotonic() - t0, r


def experiments(profile):
    if not os.path.exists(profile):
        return 0
    with open(profile) as f:
        return sum(1 for line in f if line.startswith("experiment\t"))


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    scale = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
    build = os.path.abspath(build)
    omniprof = os.path.join(build, "bin", "omniprof")
    if not shutil.which("coz"):
        print("bench_causal: coz is not installed (package coz-profiler); nothing to compare with")
        return 0
    with open("/proc/loadavg") as f:
        print("machine: %d cores, load %s" % (os.cpu_count(), f.read().split()[0]))
    status = 0
    for prog, (ms, iters) in PROGRAMS.items():
        binary = os.path.abspath(os.path.join(build, "bin", "causaltest_" + prog))
        argv = [binary, "-%d" % int(iters * scale), ms]
        res = {"bare": [], "coz": [], "omniprof": []}
        for rnd in range(rounds):
            wd = tempfile.mkdtemp(prefix="omniprof-bench-causal-")
            try:
                t, _ = timed(argv, wd)
                res["bare"].append((t, 0))
                t, r = timed(["coz", "run", "-o", os.path.join(wd, "coz.coz"), "---"] + argv, wd)
                res["coz"].append((t, experiments(os.path.join(wd, "coz.coz"))))
                t, r = timed([omniprof, "causal", "-q", "-o", os.path.join(wd, "op.coz"), "-d", wd, "--"] + argv, wd)
                if r.returncode != 0:
                    print("bench_causal: omniprof causal failed: " + r.stderr[-300:])
                    status = 1
                res["omniprof"].append((t, experiments(os.path.join(wd, "op.coz"))))
            finally:
                shutil.rmtree(wd, ignore_errors=True)
        bare = statistics.median(t for t, _ in res["bare"])
        per = {}
        for who in ("coz", "omniprof"):
            wall = statistics.median(t for t, _ in res[who])
            n = statistics.median(n for _, n in res[who])
            per[who] = wall / n if n else float("inf")
            print("%s %-8s wall %.2f s (bare %.2f s, x%.2f), %d experiments, %.3f s per experiment" %
                  (prog, who, wall, bare, wall / bare, n, per[who]))
            print("metric=causal_%s_%s_wall value=%.3f unit=s" % (prog, who, wall))
            print("metric=causal_%s_%s_per_experiment value=%.4f unit=s" % (prog, who, per[who]))
        ratio = per["omniprof"] / per["coz"] if per["coz"] else float("inf")
        print("metric=causal_%s_per_experiment_ratio value=%.3f unit=x (omniprof/coz; target <= 1.5: %s)" %
              (prog, ratio, "MET" if ratio <= 1.5 else "MISSED"))
    return status


if __name__ == "__main__":
    sys.exit(main())
