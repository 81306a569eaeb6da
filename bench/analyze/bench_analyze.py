#!/usr/bin/env python3
"""`omniprof analyze` at scale (issue 33's targets; docs/PERFORMANCE.md "analyze"):
  - a 10 M-event database (omniprof-gen-db: API calls launching kernels and copies on 4
    streams from 3 threads, ranges, samples): analyze time and max RSS (target <= 60 s,
    <= 1 GB on a 2-core machine), and the time of one further what-if on the loaded graph
    (target <= 2 s);
  - a merged 1,000-rank database (1,000 generated processes, `omniprof merge`): the same.
Each figure is printed beside a baseline measured in the same run on the same database:
`omniprof summary` (one streaming pass over the same rows).
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


def rss_of(cmd):
    """Runs cmd in a child whose own max RSS is read back (a Python wrapper per command)."""
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


def measure(label, db):
    base_t, base_rss, _, base_cpu = rss_of([OMNI, "summary", "-i", db])
    t, rss, err, cpu = rss_of([OMNI, "analyze", "-i", db, "--timing", "--what-if",
                               "kernel:gemm=0.5", "--format", "json",
                          "-o", os.path.join(os.path.dirname(db), "an-%s.json" % label)])
    m = re.search(r"load=([0-9.]+) s analyze=([0-9.]+) s whatif=([0-9.]+) s nodes=(\d+) "
                  "edges=(\d+)", err)
    load, ana, wi, nodes, edges = (float(m.group(1)), float(m.group(2)), float(m.group(3)),
                                   int(m.group(4)),
                                   int(m.group(5))) if m else (0, 0, 0, 0, 0)
    print("metric=analyze_%s_seconds value=%.2f unit=s baseline_summary=%.2f (load %.2f, "
          "analysis %.2f; %d nodes, "
          "%d edges)" % (label, t, base_t, load, ana, nodes, edges))
    print("metric=analyze_%s_cpu_seconds value=%.2f unit=s baseline_summary=%.2f (user + system: "
          "the wall time "
          "above includes waiting for a CPU on a loaded machine)" % (label, cpu, base_cpu))
    print("metric=analyze_%s_max_rss value=%.0f unit=MiB baseline_summary=%.0f" % (label, rss,
        base_rss))
    print("metric=analyze_%s_whatif_seconds value=%.3f unit=s" % (label, wi))
    ok = t <= 60 and rss <= 1024 and wi <= 2
    print("%s analyze %s: %.1f s (<= 60; CPU %.1f s), %.0f MiB (<= 1024), what-if %.2f s (<= 2)" %
          ("MET" if ok else "MISSED", label, t, cpu, rss, wi))


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
