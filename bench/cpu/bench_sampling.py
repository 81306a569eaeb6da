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

Deep stacks (bench_deep_stacks: 2,000 functions calling each other 40 deep, thousands of
return addresses; fixed work): the unsampled program, then 1 kHz real-time sampling with the
stack unwound in the signal handler (OMNIPROF_SAMPLING_UNWIND=handler) and by the allocator
thread from a copy of the stack (deferred, the default), interleaved in the same rounds; with
each, the signal handler's time per sample and the allocator's unwinding time per sample (from
the backend's info lines).

usage: bench_sampling.py BUILD_DIR [rounds [deep_batches]]    (environment BENCH_REPS, default 5)
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


HANDLER_RE = re.compile(r"cpu: \d+ samples; the signal handler took ([\d.]+) us each \((?:unwinding or stack copy|unwinding) ([\d.]+) us\)")
DEFERRED_RE = re.compile(r"deferred unwinding: (\d+) stack copies unwound by the allocator threads, ([\d.]+) us of CPU each, (\d+) stopped")
INFO = {}  # configuration -> list of (handler us, unwind-or-copy us, allocator us or None, truncated)


def run(cmd, env=None, key=None):
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
    h = HANDLER_RE.search(r.stderr)
    if key and h:
        d = DEFERRED_RE.search(r.stderr)
        INFO.setdefault(key, []).append((float(h.group(1)), float(h.group(2)), float(d.group(2)) if d else None,
                                         int(d.group(3)) if d else 0))
    return int(m.group(1)) / 1e9, proc_cpu, wall


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    rounds = sys.argv[2] if len(sys.argv) > 2 else "400"
    deep_batches = sys.argv[3] if len(sys.argv) > 3 else "2500"
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
    deep = os.path.join(build, "bin", "bench_deep_stacks")
    envs = {}
    if os.path.exists(deep):
        configs["deep_baseline"] = lambda i: [deep, "0", deep_batches]
        if os.path.exists(omniprof):
            for mode in ("handler", "deferred"):
                k = "deep_realtime_1khz_" + mode
                configs[k] = (lambda m: lambda i: [omniprof, "run", "--sample", "realtime", "--sampling-freq", "1000",
                                                   "-d", tmp, "-o", "deep%s%d" % (m, i), "--", deep, "0", deep_batches])(mode)
                envs[k] = dict(os.environ, OMNIPROF_SAMPLING_UNWIND=mode, OMNIPROF_LOG_LEVEL="info")
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
            w, c, t = run(mk(i), envs.get(k), k)
            work[k].append(w)
            proc[k].append(c)
            wall[k].append(t)
    base_w = statistics.median(work["baseline"])
    base_c = statistics.median(proc["baseline"])
    base_t = statistics.median(wall["baseline"])
    print("metric=cpu_bench_baseline_work_cpu value=%.4f unit=s" % base_w)
    print("metric=cpu_bench_baseline_process_cpu value=%.4f unit=s" % base_c)
    print("metric=cpu_bench_baseline_wall value=%.4f unit=s" % base_t)
    if "deep_baseline" in configs:
        print("metric=cpu_bench_deep_baseline_work_cpu value=%.4f unit=s" % statistics.median(work["deep_baseline"]))
    for k in configs:
        if k in ("baseline", "deep_baseline"):
            continue
        b = "deep_baseline" if k.startswith("deep_") else "baseline"
        ow = 100.0 * (statistics.median(work[k]) / statistics.median(work[b]) - 1.0)
        oc = 100.0 * (statistics.median(proc[k]) / statistics.median(proc[b]) - 1.0)
        ot = 100.0 * (statistics.median(wall[k]) / statistics.median(wall[b]) - 1.0)
        print("metric=%s_overhead_work_cpu value=%.2f unit=%%" % (k, ow))
        print("metric=%s_overhead_process_cpu value=%.2f unit=%%" % (k, oc))
        print("metric=%s_overhead_wall value=%.2f unit=%%" % (k, ot))
    for k, rows in INFO.items():
        print("metric=%s_handler_per_sample value=%.2f unit=us" % (k, statistics.median(r[0] for r in rows)))
        print("metric=%s_handler_unwind_or_copy_per_sample value=%.2f unit=us" % (k, statistics.median(r[1] for r in rows)))
        if all(r[2] is not None for r in rows):
            print("metric=%s_allocator_unwind_per_sample value=%.2f unit=us" % (k, statistics.median(r[2] for r in rows)))
            print("metric=%s_copies_cut_at_stack_bytes value=%d unit=samples" % (k, max(r[3] for r in rows)))
    if "deep_realtime_1khz_handler" in work and "deep_realtime_1khz_deferred" in work:
        bw = statistics.median(work["deep_baseline"])
        oh = statistics.median(work["deep_realtime_1khz_handler"]) - bw
        od = statistics.median(work["deep_realtime_1khz_deferred"]) - bw
        if oh > 0:
            print("metric=deep_deferred_vs_handler_added_work_cpu_ratio value=%.3f unit=ratio" % (od / oh))
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
