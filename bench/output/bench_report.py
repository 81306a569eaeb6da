#!/usr/bin/env python3
"""bench_report.py — `omniprof report` on large databases (docs/PERFORMANCE.md, "HTML report"):

  1. the 10 M-event database of bench_output.sh (8 threads, 8 streams): the report's time and
     peak RSS beside `omniprof summary` on the same database in the same run (the report does
     the summary's statistics and more), the page's size (target <= 20 MB);
  2. a 1 M-event database of 256 threads: the most lanes, the page's size;
  3. each page opened in headless Chromium: the time until the page has drawn everything
     (its self-check's load_ms: navigation start to the end of drawing; target <= 1 s), beside
     the page of a 2,000-event database in the same browser;
  4. a 2 M-event database (4 threads, 4 streams) whose every event is in the page (the event-level
     timeline, docs/report.md): the page's size (target <= 20 MB) and its first paint in headless
     Chromium (load_ms; target <= 2 s), beside the 2,000-event page's.

usage: bench_report.py BUILD_DIR [EVENTS]; databases are generated once into
$OMNIPROF_BENCH_DIR (default /tmp/omniprof-bench-output) and reused. Prints metric= lines."""
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "tools"))
from headless_chromium import find_chromium, load_page  # noqa: E402

build = sys.argv[1] if len(sys.argv) > 1 else "build"
events = int(sys.argv[2]) if len(sys.argv) > 2 else 10000000
d = os.environ.get("OMNIPROF_BENCH_DIR", "/tmp/omniprof-bench-output")
op = os.path.join(build, "bin", "omniprof")
gen = os.path.join(build, "bin", "omniprof-gen-db")
os.makedirs(d, exist_ok=True)
work = tempfile.mkdtemp(prefix="bench-report-", dir=d)


def metric(name, value, unit):
    print("metric=%s value=%s unit=%s" % (name, value, unit), flush=True)


def database(name, n, threads, streams):
    path = os.path.join(d, name)
    if not os.path.exists(path):
        print("generating %s (once) ..." % path, file=sys.stderr, flush=True)
        subprocess.run([gen, path + ".tmp", "--events", str(n), "--threads", str(threads), "--streams", str(streams)],
                       check=True, stdout=subprocess.DEVNULL)
        os.rename(path + ".tmp", path)
    return path


def timed(args):
    """(wall s, cpu s, peak RSS MiB) of one command."""
    t = os.path.join(work, "time.txt")
    subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M", "-o", t] + args, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    e, u, s, m = open(t).read().split()
    return float(e), float(u) + float(s), int(m) // 1024


def page_time(html):
    """The page's own load_ms and render_ms (median of 3 loads)."""
    chromium = find_chromium()
    if not chromium:
        return None
    runs = []
    for _ in range(3):
        p = load_page(chromium, html, work)
        m = re.findall(r'<pre id="omniprof-selfcheck">(.*?)</pre>', p.dom, re.S)
        if not m:
            return None
        sc = json.loads(m[-1].replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))
        if not sc.get("ok"):
            print("page self-check failed: %s" % sc, file=sys.stderr)
        runs.append((sc["load_ms"], sc["render_ms"]))
    runs.sort()
    return runs[1]


big = database("big%d.db" % events, events, 8, 8)
wide = database("wide%d.db" % (events // 10), events // 10, 256, 8)
small = database("small2000.db", 2000, 2, 2)
mid = database("events2000000.db", 2000000, 4, 4)

s_wall, s_cpu, s_rss = timed([op, "summary", "-i", big, "-o", os.path.join(work, "summary.txt")])
metric("summary_10M_seconds", s_wall, "s")
metric("summary_10M_cpu_seconds", round(s_cpu, 2), "s")
for name, db in (("10M", big), ("wide", wide), ("2M", mid), ("small", small)):
    html = os.path.join(work, name + ".html")
    wall, cpu, rss = timed([op, "report", "-i", db, "-o", html, "--no-progress"])
    metric("report_%s_seconds" % name, wall, "s")
    metric("report_%s_cpu_seconds" % name, round(cpu, 2), "s")
    metric("report_%s_peak_rss" % name, rss, "MiB")
    metric("report_%s_bytes" % name, os.path.getsize(html), "bytes")
    if name == "10M":
        metric("report_10M_cpu_vs_summary", round(cpu / s_cpu, 2) if s_cpu else 0, "x")
    if name == "2M":
        with open(html, encoding="utf-8") as f:
            m = re.search(r'"events":(\d+)\}', f.read())
        metric("report_2M_events_in_page", int(m.group(1)) if m else 0, "events")
        metric("report_2M_bytes_target", 20 * 1000 * 1000, "bytes")
    t = page_time(html)
    if t:
        metric("page_%s_load_ms" % name, t[0], "ms")
        metric("page_%s_render_ms" % name, t[1], "ms")
        if name == "2M":
            metric("page_2M_first_paint_target_ms", 2000, "ms")
for f in os.listdir(work):
    os.unlink(os.path.join(work, f))
os.rmdir(work)
