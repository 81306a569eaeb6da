#!/usr/bin/env python3
"""bench_sampling.py — overhead of omniprof's 1 kHz call-stack sampling on a CPU-bound program,
next to `perf record -F 1000` on the same program, in the same run (interleaved rounds,
medians). Prints `metric=<name> value=<number> unit=<unit>` lines.

Three measures per configuration (medians of interleaved rounds):
  work_cpu      the compute thread's CPU time during its compute phase (signal handlers run
                on it, so this is the sampling cost the program itself pays; robust to other
                load on the machine);
  process_cpu   CPU time of every process of the run (RUSAGE_CHILDREN: the program, its
                profiler threads, the database writer, and for perf the perf process);
  wall          the whole run, start-up and end-of-run work included.

usage: bench_sampling.py BUILD_DIR [rounds]    (environment BENCH_REPS, default 5)
"""
import os
import resource
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def run(cmd, env=None):
    """(compute-phase thread CPU s, whole-process CPU s incl. every profiler thread, wall s)"""
    t0 = time.monotonic()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.monotonic() - t0
    m = re.search(r"work_cpu_ns=(\d+)", r.stdout)
    if r.returncode != 0 or not m:
        raise SystemExit("bench run failed: %s\n%s" % (" ".join(cmd), r.stderr[-2000:]))
    proc_cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return int(m.group(1)) / 1e9, proc_cpu, wall


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    rounds = sys.argv[2] if len(sys.argv) > 2 else "400"
    reps = int(os.environ.get("BENCH_REPS", "5"))
    prog = os.path.join(build, "bin", "bench_cpu_spin")
    omniprof = os.path.join(build, "bin", "omniprof")
    tmp = tempfile.mkdtemp(prefix="omniprof-bench-cpu-")
    configs = {"baseline": lambda i: [prog, rounds]}
    if os.path.exists(omniprof):
        configs["omniprof_cputime_1khz"] = lambda i: [omniprof, "run", "--sample", "cputime", "--sampling-freq",
                                                      "1000", "-d", tmp, "-o", "ct%d" % i, "--", prog, rounds]
        configs["omniprof_realtime_1khz"] = lambda i: [omniprof, "run", "--sample", "realtime", "--sampling-freq",
                                                       "1000", "-d", tmp, "-o", "rt%d" % i, "--", prog, rounds]
    have_perf = shutil.which("perf") is not None
    if have_perf:
        probe = subprocess.run(["perf", "record", "-e", "cpu-clock", "-F", "1000", "-o",
                                os.path.join(tmp, "probe.data"), "true"], capture_output=True)
        have_perf = probe.returncode == 0
    if have_perf:
        configs["perf_record_1khz"] = lambda i: ["perf", "record", "-q", "-e", "cpu-clock", "-F", "1000", "-g", "-o",
                                                 os.path.join(tmp, "perf%d.data" % i), prog, rounds]
    work = {k: [] for k in configs}
    proc = {k: [] for k in configs}
    wall = {k: [] for k in configs}
    run([prog, "50"])  # warm caches
    for i in range(reps):
        for k, mk in configs.items():
            w, c, t = run(mk(i))
            work[k].append(w)
            proc[k].append(c)
            wall[k].append(t)
    base_w = statistics.median(work["baseline"])
    base_c = statistics.median(proc["baseline"])
    base_t = statistics.median(wall["baseline"])
    print("metric=cpu_bench_baseline_work_cpu value=%.4f unit=s" % base_w)
    print("metric=cpu_bench_baseline_process_cpu value=%.4f unit=s" % base_c)
    print("metric=cpu_bench_baseline_wall value=%.4f unit=s" % base_t)
    for k in configs:
        if k == "baseline":
            continue
        ow = 100.0 * (statistics.median(work[k]) / base_w - 1.0)
        oc = 100.0 * (statistics.median(proc[k]) / base_c - 1.0)
        ot = 100.0 * (statistics.median(wall[k]) / base_t - 1.0)
        print("metric=%s_overhead_work_cpu value=%.2f unit=%%" % (k, ow))
        print("metric=%s_overhead_process_cpu value=%.2f unit=%%" % (k, oc))
        print("metric=%s_overhead_wall value=%.2f unit=%%" % (k, ot))
    if "omniprof_realtime_1khz" in configs and have_perf:
        # perf's cost is mostly outside the program (the perf process, the kernel's sampling):
        # compare whole-process CPU (perf's own process included in RUSAGE_CHILDREN)
        ratio = statistics.median(proc["omniprof_realtime_1khz"]) / statistics.median(proc["perf_record_1khz"])
        print("metric=omniprof_realtime_vs_perf_process_cpu_ratio value=%.4f unit=ratio" % ratio)
    # samples actually taken (rate check)
    for f in sorted(os.listdir(tmp)):
        if f.startswith("rt0") and f.endswith(".db"):
            import sqlite3
            con = sqlite3.connect(os.path.join(tmp, f))
            n = con.execute("select count(*) from omniprof_cpu_sample").fetchone()[0]
            con.close()
            print("metric=omniprof_realtime_samples_per_s value=%.1f unit=Hz" % (n / statistics.median(wall["omniprof_realtime_1khz"])))
        if f.startswith("ct0") and f.endswith(".db"):
            import sqlite3
            con = sqlite3.connect(os.path.join(tmp, f))
            n = con.execute("select count(*) from omniprof_cpu_sample").fetchone()[0]
            con.close()
            print("metric=omniprof_cputime_samples_per_s value=%.1f unit=Hz" % (n / statistics.median(work["omniprof_cputime_1khz"])))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
