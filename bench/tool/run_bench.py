#!/usr/bin/env python3
"""run_bench.py — end-to-end capture benchmark of `omniprof run --marker-trace`.

Runs bench_capture (THREADS threads making marks as fast as they can) untraced and traced,
and prints `metric=<name> value=<number> unit=<unit>` lines:
  capture_records_per_s     records handed to the tool per second (aggregate, traced run)
  untraced_records_per_s    the same program without the profiler (no-op user API)
  producer_waits            LOSSLESS back-pressure events (buffer stats, from the database)
  run_seconds               traced run, launch to exit (includes the database finishing)
  peak_rss_traced_mb / peak_rss_untraced_mb / tool_rss_above_buffers_mb
  db_rows                   marks stored (must equal the records)
  nodb_*                    the same with OMNIPROF_BENCHMARK_DISCARD=1: the tool receives every
                            record and writes none (SDK + tool capture path alone)
usage: run_bench.py OMNIPROF BENCH_CAPTURE [THREADS] [RECORDS] [NODB_RECORDS]"""
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time


def status_kb(pid, keys):
    out = {}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in keys:
                    out[k] = int(v.split()[0])
    except OSError:
        pass
    return out


def run(cmd):
    """Run cmd (exec mode keeps the pid), sampling its RSS every 20 ms: returns the result,
    the wall time, and the peaks of VmRSS and RssAnon in MB."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = {"VmRSS": 0, "RssAnon": 0}
    while p.poll() is None:
        st = status_kb(p.pid, ("VmRSS", "RssAnon"))
        for k in peak:
            peak[k] = max(peak[k], st.get(k, 0))
        time.sleep(0.02)
    out, err = p.communicate()
    dt = time.monotonic() - t0
    r = subprocess.CompletedProcess(cmd, p.returncode, out, err)
    metrics = {}
    for line in r.stdout.splitlines():
        if line.startswith("metric="):
            parts = dict(p.split("=", 1) for p in line.split())
            metrics[parts["metric"]] = float(parts["value"])
    return r, dt, (peak["VmRSS"] / 1024.0, peak["RssAnon"] / 1024.0), metrics


def main():
    omniprof, bench = sys.argv[1], sys.argv[2]
    threads = sys.argv[3] if len(sys.argv) > 3 else "2"
    records = sys.argv[4] if len(sys.argv) > 4 else "10000000"
    discard_records = sys.argv[5] if len(sys.argv) > 5 else records
    d = tempfile.mkdtemp(prefix="omniprof-bench-tool-")
    try:
        r0, _, rss0, m0 = run([bench, threads, records])
        r1, dt, rss1, m1 = run([omniprof, "run", "--marker-trace", "-d", d, "-o", "bench", "--", bench, threads, records])
        if r1.returncode != 0:
            print(r1.stderr, file=sys.stderr)
            return 1
        db = os.path.join(d, "bench_results.db")
        con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
        rows = con.execute("SELECT count(*) FROM rocpd_sample").fetchone()[0]
        cost = dict(con.execute("SELECT name, value FROM omniprof_run_cost").fetchall())
        waits = cost.get("buffer_marker_producer_waits", -1)
        bufsize = int(os.environ.get("OMNIPROF_BUFFER_SIZE", "4194304"))
        print("metric=untraced_records_per_s value=%.0f unit=records/s" % m0.get("capture_records_per_s", 0))
        print("metric=capture_records_per_s value=%.0f unit=records/s" % m1.get("capture_records_per_s", 0))
        print("metric=capture_ns_per_record_per_thread value=%.1f unit=ns" %
              m1.get("capture_ns_per_record_per_thread", 0))
        print("metric=producer_waits value=%d unit=count" % waits)
        print("metric=tool_callback_s value=%.3f unit=s" % (cost.get("tool_callback_ns", 0) / 1e9))
        print("metric=tool_deliveries value=%d unit=count" % cost.get("tool_deliveries", 0))
        print("metric=run_seconds value=%.2f unit=s" % dt)
        print("metric=db_rows value=%d unit=rows" % rows)
        print("metric=records value=%d unit=records" % int(m1.get("capture_records", 0)))
        print("metric=peak_rss_untraced_mb value=%.1f unit=MB" % rss0[0])
        print("metric=peak_rss_traced_mb value=%.1f unit=MB" % rss1[0])
        print("metric=peak_rss_anon_untraced_mb value=%.1f unit=MB" % rss0[1])
        print("metric=peak_rss_anon_traced_mb value=%.1f unit=MB" % rss1[1])
        # The buffers: 2 sub-buffers of BUFFER_SIZE (the SDK double-buffers). File-backed
        # resident pages (VmRSS - RssAnon) are the database writer's mapped spool backlog.
        buffers = 2 * bufsize / 1048576.0
        print("metric=buffers_mb value=%.1f unit=MB" % buffers)
        print("metric=tool_anon_rss_above_buffers_mb value=%.1f unit=MB" % (rss1[1] - rss0[1] - buffers))
        print("metric=tool_rss_above_buffers_mb value=%.1f unit=MB" % (rss1[0] - rss0[0] - buffers))
        print("metric=db_mb value=%.1f unit=MB" % (os.path.getsize(db) / 1048576.0))
        # The same capture with the tool discarding what it receives (OMNIPROF_BENCHMARK_DISCARD):
        # the SDK + tool path alone, without the database.
        os.environ["OMNIPROF_BENCHMARK_DISCARD"] = "1"
        r2, dt2, rss2, m2 = run([omniprof, "run", "--marker-trace", "-d", d, "-o", "discard", "--", bench, threads,
                                 discard_records])
        del os.environ["OMNIPROF_BENCHMARK_DISCARD"]
        if r2.returncode == 0:
            con = sqlite3.connect("file:%s?mode=ro" % os.path.join(d, "discard_results.db"), uri=True)
            cost = dict(con.execute("SELECT name, value FROM omniprof_run_cost").fetchall())
            print("metric=nodb_records value=%d unit=records" % int(m2.get("capture_records", 0)))
            print("metric=nodb_capture_records_per_s value=%.0f unit=records/s" % m2.get("capture_records_per_s", 0))
            print("metric=nodb_producer_waits value=%d unit=count" % cost.get("buffer_marker_producer_waits", -1))
            print("metric=nodb_tool_records value=%d unit=records" % cost.get("tool_records", 0))
            print("metric=nodb_run_seconds value=%.2f unit=s" % dt2)
            print("metric=nodb_peak_rss_mb value=%.1f unit=MB" % rss2[0])
            print("metric=nodb_tool_rss_above_buffers_mb value=%.1f unit=MB" % (rss2[0] - rss0[0] - buffers))
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
