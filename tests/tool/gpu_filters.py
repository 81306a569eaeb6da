#!/usr/bin/env python3
"""gpu_filters.py — checks one database of `omniprof run --kernel-trace --pmc ...` over
counters_app (tests/gpu/counters_app.cu: saxpy, fma_loop, empty_kernel, each launched REPS times
in that order): every dispatch is traced, and exactly the dispatches the kernel filters choose
carry counter values. usage: gpu_filters.py DIR REPS WANT   WANT = saxpy:N,fma_loop:N,empty_kernel:N
Prints OK/BAD lines; exit 0 when all hold."""
import glob
import os
import sqlite3
import sys


def main():
    d, reps, want = sys.argv[1], int(sys.argv[2]), dict(
        (k, int(v)) for k, v in (x.split(":") for x in sys.argv[3].split(",")))
    dbs = sorted(glob.glob(os.path.join(d, "**", "*_results.db"), recursive=True))
    if len(dbs) != 1:
        print("BAD: %d databases in %s" % (len(dbs), d))
        return 1
    con = sqlite3.connect("file:%s?mode=ro" % dbs[0], uri=True)
    ok = True
    traced = {}
    for name, n in con.execute("SELECT name, count(*) FROM kernels GROUP BY name"):
        traced[name.split("(")[0].split()[-1]] = n
    for k in want:
        if traced.get(k) != reps:
            print("BAD: %s traced %s times, want %d (tracing keeps every kernel)" % (k, traced.get(k), reps))
            ok = False
    counted = {}
    for name, n in con.execute("SELECT name, count(DISTINCT dispatch_id) FROM pmc_events GROUP BY name"):
        key = name.split("(")[0].split()[-1]
        counted[key] = counted.get(key, 0) + n
    for k, n in want.items():
        if counted.get(k, 0) != n:
            print("BAD: %s counted %d times, want %d" % (k, counted.get(k, 0), n))
            ok = False
    print(("OK: " if ok else "BAD: ") + "traced %r, counted %r" % (traced, counted))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
