#!/usr/bin/env python3
"""`omniprof analyze` at scale (issue 33's targets; docs/PERFORMANCE.md "analyze"):
  - a 10 M-event database (omniprof-gen-db: API calls launching kernels and copies on 4
    streams from 3 threads, ranges, samples): analyze CPU time, wall time and max RSS (target
    <= 60 s, <= 1 GB on a 2-core machine), and the time of one further what-if on the loaded
    graph (target <= 2 s);
  - a merged 1,000-rank database (1,000 generated processes, `omniprof merge`): the same.
Each figure is printed beside a floor measured in the same run on the same database, and the
ratio: for CPU, wall and RSS, SQLite reading the same rows (the regions, kernels and copies
joined with their events, the samples; Python's sqlite3 in a child process), which any analysis
of the file must do; for the what-if, one pass writing every event's time (`--timing`'s sweep).
The load average is printed before and after each measurement: on a shared machine the wall
time waits for a CPU, the CPU time is the comparable figure.
usage: bench_analyze.py BUILD [EVENTS [RANKS EVENTS_PER_RANK]]"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

B = sys.argv[1]
EVENTS = int(sys.argv[2]) if len(sys.argv) > 2 else 10000000
RANKS = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
PER_RANK = int(sys.argv[4]) if len(sys.argv) > 4 else 10000
OMNI = os.path.join(B, "bin", "omniprof")
GEN = os.path.join(B, "bin", "omniprof-gen-db")

# The floor: the rows `analyze` reads, read by SQLite alone (every table set of the file).
FLOOR = r"""
import sqlite3, sys
c = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
tabs = [r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
n = 0
for t in tabs:
    for kind, cols in (("rocpd_region_", "X.start + X.end + X.name_id + X.tid"),
                       ("rocpd_kernel_dispatch_", "X.start + X.end + X.kernel_id + X.stream_id"),
                       ("rocpd_memory_copy_", "X.start + X.end + X.name_id + X.stream_id")):
        if t.startswith(kind):
            ev = "rocpd_event_" + t[len(kind):]
            r = c.execute('SELECT count(*), total(%s + E.category_id + E.stack_id) FROM "%s" X '
                          'JOIN "%s" E ON E.id = X.event_id' % (cols, t, ev)).fetchone()
            n += r[0]
    if t.startswith("rocpd_sample_"):
        n += c.execute('SELECT count(*), total(timestamp + track_id) FROM "%s"' % t).fetchone()[0]
print(n)
"""


def rss_of(cmd):
    """Runs cmd in a child whose own max RSS and CPU time are read back (a Python wrapper per
    command)."""
    code = ("import "
            "resource,subprocess,sys,time;t=time.monotonic();"
            "r=subprocess.run(sys.argv[1:],capture_output=True,"
            "text=True);dt=time.monotonic()-t;sys.stderr.write(r.stderr);"
            "u=resource.getrusage(resource.RUSAGE_CHILDREN);"
            "print('%.3f %.3f %d %d' % (dt, u.ru_utime + u.ru_stime, u.ru_maxrss, r.returncode))")
    r = subprocess.run([sys.executable, "-c", code] + cmd, capture_output=True, text=True)
    dt, cpu, rss, rc = r.stdout.split()[-4:]
    if int(rc) != 0:
        print("bench_analyze: %s failed: %s" % (" ".join(cmd[:3]), r.stderr.strip()[-300:]))
        sys.exit(1)
    return float(dt), int(rss) / 1024.0, r.stderr, float(cpu)


def load():
    return "%.1f %.1f %.1f" % os.getloadavg()


def ratio(x, floor):
    return x / floor if floor > 0 else float("nan")


def measure(label, db):
    load0 = load()
    f_t, f_rss, _, f_cpu = rss_of([sys.executable, "-c", FLOOR, db])
    t, rss, err, cpu = rss_of([OMNI, "analyze", "-i", db, "--timing", "--what-if",
                               "kernel:gemm=0.5", "--format", "json",
                               "-o", os.path.join(os.path.dirname(db), "an-%s.json" % label)])
    load1 = load()
    m = re.search(r"load=([0-9.]+) s analyze=([0-9.]+) s whatif=([0-9.]+) s "
                  r"whatif_cpu=([0-9.]+) s sweep=([0-9.]+) s sweep_cpu=([0-9.]+) s "
                  r"nodes=(\d+) edges=(\d+)", err)
    if not m:
        print("bench_analyze: no timing line from omniprof analyze: %s" % err.strip()[-300:])
        sys.exit(1)
    ld, ana, wi, wi_cpu, sw, sw_cpu = (float(m.group(k)) for k in range(1, 7))
    nodes, edges = int(m.group(7)), int(m.group(8))
    print("load average before / after: %s / %s (2-core machine: above 2, the wall times wait "
          "for a CPU)" % (load0, load1))
    print("metric=analyze_%s_cpu_seconds value=%.2f unit=s floor_sqlite_read=%.2f ratio=%.2f "
          "(user + system)" % (label, cpu, f_cpu, ratio(cpu, f_cpu)))
    print("metric=analyze_%s_seconds value=%.2f unit=s floor_sqlite_read=%.2f ratio=%.2f "
          "(load %.2f, analysis %.2f; %d nodes, %d edges)" % (label, t, f_t, ratio(t, f_t), ld,
                                                              ana, nodes, edges))
    print("metric=analyze_%s_max_rss value=%.0f unit=MiB floor_sqlite_read=%.0f ratio=%.1f" %
          (label, rss, f_rss, ratio(rss, f_rss)))
    print("metric=analyze_%s_whatif_seconds value=%.3f unit=s cpu=%.3f floor_sweep=%.3f "
          "(cpu %.3f) ratio=%.1f" % (label, wi, wi_cpu, sw, sw_cpu, ratio(wi_cpu, sw_cpu)))
    ok = t <= 60 and cpu <= 60 and rss <= 1024 and wi <= 2
    print("%s analyze %s: wall %.1f s, CPU %.1f s (<= 60), %.0f MiB (<= 1024), what-if %.2f s "
          "(<= 2)" % ("MET" if ok else "MISSED", label, t, cpu, rss, wi))


def main():
    tmp = tempfile.mkdtemp(prefix="omniprof-bench-analyze-")
    try:
        db = os.path.join(tmp, "big.db")
        t0 = time.monotonic()
        subprocess.run([GEN, db, "--events", str(EVENTS)], check=True, capture_output=True)
        print("generated %d events in %.1f s" % (EVENTS, time.monotonic() - t0))
        measure("%dM_events" % (EVENTS // 1000000) if EVENTS >= 1000000 else "%d_events" % EVENTS,
                db)
        os.remove(db)
        dbs = []
        t0 = time.monotonic()
        for r in range(RANKS):
            p = os.path.join(tmp, "r%d.db" % r)
            subprocess.run([GEN, p, "--events", str(PER_RANK), "--pid", str(100000 + r), "--rank",
                            str(r),
                            "--seed", str(r), "--threads", "1", "--streams", "1"], check=True,
                           capture_output=True)
            dbs.append(p)
        merged = os.path.join(tmp, "merged.db")
        subprocess.run([OMNI, "merge", "-i"] + dbs + ["-o", merged], check=True,
                       capture_output=True)
        for p in dbs:
            os.remove(p)
        print("generated and merged %d ranks x %d events in %.1f s" % (RANKS, PER_RANK,
            time.monotonic() - t0))
        measure("%d_ranks" % RANKS, merged)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
