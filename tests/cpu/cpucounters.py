#!/usr/bin/env python3
"""cpucounters.py — hardware counters of CPU samples against the program's own counts and
`perf stat` (run by tests/gpu/run.sh, part `cpucounters`, on a machine with a PMU).

counters_work does a fixed amount of work and counts its own instructions and cycles around it
(perf_event_open on itself), printing the window (CLOCK_MONOTONIC) and the counts. Under
`omniprof run --sample` with OMNIPROF_SAMPLING_PERF_EVENTS=instructions,cycles every sample
holds the thread's cumulative counts; interpolated at the window's ends they must give the
program's own counts within 2 %. Where `perf` exists, `perf stat -e instructions` of the same
work (the bare program) must agree with the program's own count within 2 % as well, and so must the instructions `omniprof summary` counts
over all samples (the counters table, profile_cpu_counters.c); where it does not, that
comparison is skipped with the reason and the program's own count is the reference. The
database must name the counters (omniprof_cpu_sample_event) and the summary give main (the work
loop) >= 95 % of the instructions and its IPC within 5 % of the program's own.
Exit 0 pass, 1 fail, 77 skip (no PMU), printing PASS/FAIL/SKIP lines.

usage: cpucounters.py BINDIR WORKDIR
"""
import json
import os
import shutil
import sqlite3
import subprocess
import sys

TOL = 0.02
ROUNDS = "2000"  # millions of multiply-adds: ~6 G instructions, ~2 s


def parse(out):
    w = s = None
    for line in out.splitlines():
        p = line.split()
        if p and p[0] == "window":
            w = (int(p[1]), int(p[2]))
        elif p and p[0] == "self":
            s = (int(p[1]), int(p[2]))
    return w, s


def at(samples, t):
    """Cumulative counts at time t, interpolated between the samples around it."""
    for (ta, va), (tb, vb) in zip(samples, samples[1:]):
        if ta <= t <= tb:
            f = (t - ta) / (tb - ta) if tb > ta else 0.0
            return [a + f * (b - a) for a, b in zip(va, vb)]
    return None


def main():
    bindir, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    prog = os.path.join(bindir, "cputest_counters_work")
    bare = subprocess.run([prog, "10"], capture_output=True, text=True)
    if bare.returncode == 77 or bare.stdout.startswith("nopmu"):
        print("SKIP cpu.counters: no hardware counters here (%s)" % bare.stdout.strip())
        return 77
    fails = 0

    def verdict(ok, msg):
        nonlocal fails
        print(("PASS " if ok else "FAIL ") + msg)
        fails += 0 if ok else 1

    out_dir = os.path.join(work, "db")
    shutil.rmtree(out_dir, ignore_errors=True)
    env = dict(os.environ, OMNIPROF_SAMPLING_PERF_EVENTS="instructions,cycles")
    r = subprocess.run([os.path.join(bindir, "omniprof"), "run", "--sample", "-d", out_dir, "--", prog, ROUNDS],
                       capture_output=True, text=True, env=env, timeout=600)
    window, own = parse(r.stdout)
    verdict(r.returncode == 0 and window and own, "cpu.counters run: exit %d, window %s, own counts %s"
            % (r.returncode, window, own))
    dbs = [os.path.join(d, f) for d, _, fs in os.walk(out_dir) for f in fs if f.endswith("_results.db")]
    samples = []
    for db in dbs:
        con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
        rows = con.execute("SELECT timestamp, json(event_values) FROM omniprof_cpu_samples "
                           "WHERE tid = (SELECT MIN(tid) FROM omniprof_cpu_samples) ORDER BY timestamp").fetchall()
        con.close()
        samples += [(t, json.loads(v)) for t, v in rows if v and len(json.loads(v)) >= 2]
    if not (window and own and len(samples) > 10):
        verdict(False, "cpu.counters: samples with two counter values (%d)" % len(samples))
        return 1
    a, b = at(samples, window[0]), at(samples, window[1])
    if a is None or b is None:
        verdict(False, "cpu.counters: samples around the work window (%d samples)" % len(samples))
        return 1
    for i, name in enumerate(("instructions", "cycles")):
        got, ref = b[i] - a[i], own[i]
        dev = abs(got - ref) / ref if ref else 1.0
        verdict(dev <= TOL, "cpu.counters %s: omniprof's samples %.4g vs the program's own %.4g (%.2f %%, within %d %%)"
                % (name, got, ref, 100 * dev, 100 * TOL))
    # the database names the counters; summary's per-function counts and IPC (profile_cpu_counters.c)
    db = dbs[0] if dbs else None
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True) if db else None
    ev = con.execute("SELECT name, type, config FROM omniprof_cpu_sample_event ORDER BY event_index").fetchall() \
        if con else []
    if con:
        con.close()
    verdict(ev == [("instructions", 0, 1), ("cycles", 0, 0)], "cpu.counters names: omniprof_cpu_sample_event %s" % ev)
    sm = subprocess.run([os.path.join(bindir, "omniprof"), "summary", "-i", db or "", "-f", "json"],
                        capture_output=True, text=True, timeout=600)
    cc = None
    try:
        doc = json.loads(sm.stdout)
        cc = next((it["cpu_counters"] for it in (doc if isinstance(doc, list) else [doc])
                   if isinstance(it, dict) and "cpu_counters" in it), None)
    except ValueError:
        pass
    sum_instr = None
    if not cc:
        verdict(False, "cpu.counters summary: no cpu_counters in `omniprof summary -f json` (%s)"
                % sm.stderr.strip()[-300:])
    else:
        sum_instr = cc["events"][0]["total"]
        fn = {f["function"]: f for f in cc["functions"]}
        ipc = fn.get("main", {}).get("ratios", [None])
        ref = own[0] / own[1] if own and own[1] else 0
        ok = cc["ratios"][:1] == ["IPC"] and ipc and ipc[0] and ref and abs(ipc[0] - ref) / ref <= 0.05
        verdict(ok, "cpu.counters summary: main's IPC %s vs the program's own %.3f (within 5 %%)" % (ipc, ref))
        share = fn.get("main", {}).get("self", [0])[0] / sum_instr if sum_instr else 0
        verdict(share >= 0.95, "cpu.counters summary: main (the work loop) holds %.1f %% of the instructions" %
                (100 * share))
    if shutil.which("perf") is None:
        print("SKIP cpu.counters perf_stat: `perf` is not installed here; the program's own counts were the reference")
    else:
        p = subprocess.run(["perf", "stat", "-x", ",", "-e", "instructions", "--", prog, ROUNDS],
                           capture_output=True, text=True, timeout=600)
        _, bare_own = parse(p.stdout)
        count = None
        for line in p.stderr.splitlines():
            f = line.split(",")
            if len(f) > 2 and f[2].startswith("instructions") and f[0].strip().isdigit():
                count = int(f[0])
        if count is None or not bare_own:
            verdict(False, "cpu.counters perf_stat: no count from perf stat (%s)" % p.stderr.strip()[-300:])
        else:
            # perf stat counts the whole program (start-up too): a few million against ~6 G
            dev = abs(count - own[0]) / own[0]
            verdict(dev <= TOL, "cpu.counters perf_stat: perf stat %d instructions vs the same work under omniprof "
                    "%d (%.2f %%, within %d %%)" % (count, own[0], 100 * dev, 100 * TOL))
            if sum_instr:  # the whole program, as perf stat counts it: summary's total of the samples
                dev = abs(sum_instr - count) / count
                verdict(dev <= TOL, "cpu.counters summary_vs_perf_stat: omniprof summary's instructions %d vs perf "
                        "stat %d (%.2f %%, within %d %%)" % (sum_instr, count, 100 * dev, 100 * TOL))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
