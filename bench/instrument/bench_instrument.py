#!/usr/bin/env python3
"""bench_instrument.py — what function instrumentation costs, by method (docs/PERFORMANCE.md).

For each method (uprobe, audit, compiler) and each program, the program runs alone and under
`omniprof instrument`, one after the other, BENCH_REPS times (default 5; the order of the two
alternates between rounds so that a change of load hits both alike). A program prints the
thread CPU time of its work (CLOCK_THREAD_CPUTIME_ID: the kernel's uprobe handling counts, other
load on the machine does not); the process's CPU time (all its threads: the profiler's reader
and writer too) comes from wait4. Figures are the median of the rounds' ratios, with the lowest
and highest:

  per_call_ns.<m>     extra thread CPU time per instrumented call (entry + return): `bench_calls
                      leaf N` with -i '^leaf$' (named, so never throttled) against the same run
                      alone
  per_call_process_ns.<m>  the same calls' extra CPU of the whole process (the profiler's reader
                      and database writer included), marginal between N and 2N calls, each
                      against its unprofiled run
  mix.<m>             `bench_calls mix N` under the defaults (no -i): hostile — per iteration a
                      2-instruction helper and a 150-instruction function (~30 ns), every 4096th
                      a long loop
  interp.<m>          `bench_interp N` under the defaults: a small interpreter (lexer, recursive-
                      descent parser, tree-walking evaluator, qsort with a comparison callback),
                      the representative call-heavy program
  hooks_only.interp   compiler method: the -finstrument-functions build without a profiler
                      against the plain build (what the compiled-in hooks cost by themselves)
The target of the defaults is a ratio <= 1.05. BENCH_METHODS=a,b picks methods, BENCH_REPS the
rounds, BENCH_TIMEOUT the seconds one run may take (default 120: a run past it is reported as
such). Prints `metric=<name> value=<n> unit=<u> ...` lines and the load average; exit 0.

usage: bench_instrument.py BUILD_DIR
"""
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


class Timeout(Exception):
    pass


class NotRun(Exception):
    """The profiled run printed no figure (omniprof refused the options: its first line)."""


def run(cmd, timeout):
    """(thread CPU ns of the work, process CPU ns) of one run."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err)
        deadline = time.monotonic() + timeout
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                p.kill()
                os.wait4(p.pid, 0)
                raise Timeout(" ".join(cmd))
            time.sleep(0.01)
        out.seek(0)
        text = out.read().decode(errors="replace")
        err.seek(0)
        why = (err.read().decode(errors="replace").strip().splitlines() or [""])[0]
    m = re.search(r"cpu_ns=(\d+)", text)
    if not m and why.startswith("omniprof"):
        raise NotRun(why[:160])
    if not m:
        raise RuntimeError("no cpu_ns in the output of %s: %r" % (" ".join(cmd), text))
    return int(m.group(1)), int((ru.ru_utime + ru.ru_stime) * 1e9)


def paired(base_cmd, ins_cmd, reps, timeout):
    """Per round (base thread ns, instrumented thread ns, base process ns, instrumented process ns)."""
    rounds = []
    for r in range(reps):
        if r % 2 == 0:
            b = run(base_cmd, timeout)
            i = run(ins_cmd, timeout)
        else:
            i = run(ins_cmd, timeout)
            b = run(base_cmd, timeout)
        rounds.append((b[0], i[0], b[1], i[1]))
    return rounds


def ratio_line(name, rounds, target=None):
    th = [i / b for b, i, _, _ in rounds]
    pr = [pi / pb for _, _, pb, pi in rounds]
    med = statistics.median(th)
    verdict = ""
    if target:
        verdict = " target<=%.2f:%s" % (target, "MET" if med <= target else "MISSED")
    print("metric=%s value=%.3f unit=ratio min=%.3f max=%.3f process_cpu_ratio=%.3f base_ms=%.1f%s" %
          (name, med, min(th), max(th), statistics.median(pr), statistics.median(b for b, _, _, _ in rounds) / 1e6,
           verdict))
    sys.stdout.flush()


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    b = os.path.join(build, "bin")
    omni = os.path.join(b, "omniprof")
    reps = int(os.environ.get("BENCH_REPS", "5"))
    timeout = float(os.environ.get("BENCH_TIMEOUT", "120"))
    tmp = tempfile.mkdtemp(prefix="bench-ins-")
    # method, calls program, interpreter program, leaf calls, mix iterations, interpreter rounds
    methods = []
    if os.geteuid() == 0 and os.path.exists("/sys/bus/event_source/devices/uprobe/type"):
        methods.append(("uprobe", "bench_calls", "bench_interp", 20000, 4000000, 5000))
    methods.append(("audit", "bench_calls_lib", "bench_interp_lib", 400000, 4000000, 5000))
    if os.path.exists(os.path.join(b, "bench_calls_cyg")):
        methods.append(("compiler", "bench_calls_cyg", "bench_interp_cyg", 2000000, 4000000, 5000))
    only = os.environ.get("BENCH_METHODS")
    if only:
        methods = [m for m in methods if m[0] in only.split(",")]
    print("machine: %s, %d CPUs; load average %.1f %.1f %.1f; %d rounds" %
          ((os.uname().release, os.cpu_count()) + os.getloadavg() + (reps,)))
    for method, calls, interp, n_leaf, n_mix, n_interp in methods:
        pc, pi = os.path.join(b, calls), os.path.join(b, interp)
        ins = [omni, "instrument", "--method", method, "-d", tmp]
        if method == "audit":  # the functions are in the programs' libraries: select those
            ins += ["-m", "libbench_(calls|interp)_funcs"]
        ins += ["--"]
        try:
            leaf = paired([pc, "leaf", str(n_leaf)], [omni, "instrument", "--method", method, "-i", "^leaf$", "-d",
                                                      tmp, "--", pc, "leaf", str(n_leaf)], reps, timeout)
            per_call = statistics.median((i - bb) / n_leaf for bb, i, _, _ in leaf)
            print("metric=per_call_ns.%s value=%.0f unit=ns" % (method, per_call))
            # the whole process's extra CPU per call (the profiler's reader and writer threads
            # too: issue 35 item 5), marginal between N and 2N calls so that start-up and the
            # database's creation cancel out; the unprofiled runs of each size are the baseline
            n2 = str(2 * n_leaf)
            ins2 = [omni, "instrument", "--method", method, "-i", "^leaf$", "-d", tmp, "--", pc,
                    "leaf", n2]
            leaf2 = paired([pc, "leaf", n2], ins2, reps, timeout)
            extra = [(i2 - b2) - (i1 - b1) for (_, _, b1, i1), (_, _, b2, i2) in zip(leaf, leaf2)]
            print("metric=per_call_process_ns.%s value=%.0f unit=ns min=%.0f max=%.0f "
                  "base_process_ms=%.1f" %
                  (method, statistics.median(extra) / n_leaf, min(extra) / n_leaf,
                   max(extra) / n_leaf, statistics.median(b2 for _, _, b2, _ in leaf2) / 1e6))
        except Timeout as e:
            print("metric=per_call_ns.%s value=nan unit=ns timeout=%s" % (method, e))
        for name, prog, args in (("mix", pc, ["mix", str(n_mix)]), ("interp", pi, [str(n_interp)])):
            try:
                ratio_line("%s.%s" % (name, method), paired([prog] + args, ins + [prog] + args, reps, timeout), 1.05)
            except Timeout as e:
                print("metric=%s.%s value=nan unit=ratio timeout_s=%.0f (%s)" % (name, method, timeout, e))
            except NotRun as e:
                print("metric=%s.%s value=nan unit=ratio not_run=%r" % (name, method, str(e)))
        if method == "compiler":
            ratio_line("hooks_only.interp", paired([os.path.join(b, "bench_interp"), str(n_interp)],
                                                   [pi, str(n_interp)], reps, timeout))
        sys.stdout.flush()
    print("load average at the end: %.1f %.1f %.1f" % os.getloadavg())
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
