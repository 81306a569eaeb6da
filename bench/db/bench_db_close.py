#!/usr/bin/env python3
"""bench_db_close.py — where the end of a traced run goes, without a GPU (issue 12: "after the
program exits, the database is complete within 10 % of the program's run time").

The program (bench_db_close_prog) plays the PyTorch loop under `omniprof run --runtime-trace`:
RECORDS GPU-like records (runtime API calls and kernel dispatches) delivered in bursts every
500 ms, as the CUDA backend delivers CUPTI's buffers, for SECONDS. It prints the CLOCK_MONOTONIC
time at which it leaves main; the launcher returns once the program has exited, and the program
exits only after its database is whole, so

    close = launcher return - program's exit from main      (same clock)

Every round runs, interleaved:
  plain         the program alone (its own exit: the floor of `close`)
  <build>       the program under `omniprof run --runtime-trace` of each BUILD_DIR given
with OMNIPROF_LOG_LEVEL=info, whose close lines (src/tool/tool.c, src/db/writer.c) break the
close down: records not yet stored when the tool's close began and the time to store them, the
final checkpoint (its WAL size), the database's close as a whole.
Prints `metric=<name> value=<number> unit=<unit>` lines, medians with [min-max] over the rounds.

usage: bench_db_close.py BUILD_DIR [OLD_BUILD_DIR] [--seconds S] [--records N] [--rounds R]
(defaults 8 s, 200,000 records, 5 rounds; names: 'new' for the first build, 'old' for the second)
"""
import argparse
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

TRACE = {
    "backlog_records": (r"closing .*: buffers delivered [\d.]+ ms, (\d+) records not yet stored", "records"),
    "store_backlog_ms": (r"records not yet stored then, stored in ([\d.]+) ms", "ms"),
    "db_close_ms": (r"database closed in ([\d.]+) ms", "ms"),
    "checkpoint_ms": (r"final checkpoint of a -?\d+ KiB WAL: ([\d.]+) ms", "ms"),
    "checkpoint_wal_kib": (r"final checkpoint of a (-?\d+) KiB WAL", "KiB"),
}


def run_once(cmd, env, out_dir):
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    done = time.monotonic()
    m = re.search(r"start_mono=([\d.]+) exit_mono=([\d.]+)", r.stdout)
    if r.returncode != 0 or not m:
        raise SystemExit("bench_db_close: %s failed (%d): %s" % (cmd[0], r.returncode, r.stderr[-2000:]))
    exit_ = float(m.group(2))
    res = {"close_s": done - exit_, "run_s": exit_ - t0}
    for k, (rx, _) in TRACE.items():
        v = re.search(rx, r.stderr)
        if v:
            res[k] = float(v.group(1))
    return res


def med(v):
    return statistics.median(v), min(v), max(v)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("builds", nargs="+")
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--records", type=int, default=200000)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    names = ["new", "old"][:len(a.builds)] if len(a.builds) <= 2 else ["b%d" % i for i in range(len(a.builds))]
    prog = os.path.join(a.builds[0], "bin", "bench_db_close_prog")
    for b in a.builds:
        if not os.path.exists(os.path.join(b, "bin", "omniprof")):
            print("skipped: %s/bin/omniprof is not built" % b)
            return 0
    if not os.path.exists(prog):
        print("skipped: %s is not built" % prog)
        return 0
    work = tempfile.mkdtemp(prefix="omniprof-bench-dbclose-")
    args = [str(a.seconds), str(a.records)]
    res = {n: [] for n in ["plain"] + names}
    rows = {}
    for rnd in range(a.rounds):
        res["plain"].append(run_once([prog] + args, dict(os.environ), work))
        for n, b in zip(names, a.builds):
            d = os.path.join(work, "%s%d" % (n, rnd))
            env = dict(os.environ, OMNIPROF_LOG_LEVEL="info")
            cmd = [os.path.join(b, "bin", "omniprof"), "run", "--runtime-trace", "-d", d, "-o", "db", "--", prog] + args
            res[n].append(run_once(cmd, env, work))
            db = os.path.join(d, "db_results.db")
            con = sqlite3.connect(db)
            rows[n] = (con.execute("SELECT count(*) FROM rocpd_event").fetchone()[0], os.path.getsize(db))
            con.close()
            shutil.rmtree(d)
        print("round %d: " % (rnd + 1) + ", ".join("%s close %.3f s" % (n, res[n][-1]["close_s"]) for n in res),
              file=sys.stderr, flush=True)
    for n, rs in res.items():
        c = med([r["close_s"] for r in rs])
        p = med([100.0 * r["close_s"] / r["run_s"] for r in rs])
        print("metric=close_%s value=%.3f unit=s min=%.3f max=%.3f" % (n, c[0], c[1], c[2]))
        print("metric=close_%s_pct_of_run value=%.2f unit=%% min=%.2f max=%.2f" % (n, p[0], p[1], p[2]))
        for k, (_, unit) in TRACE.items():
            v = [r[k] for r in rs if k in r]
            if v:
                q = med(v)
                print("metric=close_%s_%s value=%.1f unit=%s min=%.1f max=%.1f" % (n, k, q[0], unit, q[1], q[2]))
        if n in rows:
            print("metric=close_%s_events value=%d unit=rows bytes=%d" % (n, rows[n][0], rows[n][1]))
    for n in names:
        extra = [r["close_s"] - p["close_s"] for r, p in zip(res[n], res["plain"])]
        q = med(extra)
        print("metric=close_%s_minus_plain value=%.3f unit=s min=%.3f max=%.3f (same round)" % (n, q[0], q[1], q[2]))
    if len(names) == 2:
        r = [o["close_s"] / max(nw["close_s"], 1e-6) for nw, o in zip(res["new"], res["old"])]
        q = med(r)
        print("metric=close_old_over_new value=%.2f unit=ratio min=%.2f max=%.2f (same round)" % q)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
