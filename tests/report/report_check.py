#!/usr/bin/env python3
"""report_check.py — the tests of `omniprof report` and `omniprof convert -f svg` (CTest names
report.*). Every mode makes real databases (real programs under the real launcher, or the
synthetic generator through the real schema), writes the report, and loads it in headless
Chromium (tests/tools/headless_chromium.py): the test fails on any JavaScript error and reads
the page's own self-check (what it drew) from the DOM, then compares what the page holds with
the databases.

  cpu        a multi-threaded program with sampling, markers and wrappers: regions, timeline,
             flame graph, flat profile; `convert -f svg` gives a flame graph SVG that parses
  gpu_synth  the synthetic generator's kernels, copies, API calls, counters and metrics, and its
             --weird names (quotes, '<', newlines, bytes that are not UTF-8), plus MPI calls: the
             tables equal `omniprof summary`'s, an MPI section, GPU lanes, counters, no error
  merged     two runs merged into one database: processes, per-rank imbalance
  causal     an `omniprof causal` run: the causal plots (skips without the causal test programs)
  inputs     bad inputs, the output rules, --help
  terminal   progress lines of report, convert, merge and summary on a pseudo-terminal, colours
             there and not with NO_COLOR, --no-progress
  demo       scripts/demo.sh (`make demo` after its build) into a temporary directory: exit 0,
             the summary and every output path printed, the files there, the report draws
  timeline   the event-level timeline driven in Chromium: zoom to one kernel, pick it, its flow,
             select a range (statistics = the events there), fold a process, extra tracks
  svg        `convert -f svg` driven in Chromium: click to zoom, Search, Reset Zoom
  gputimeline DB  the timeline of a real CUDA run (tests/gpu/run.sh part reporttl)
  page DB... report of any databases, their data checked, and the page's self-check when
             Chromium is there; --gpu: kernels, GPU lanes, agents (tests/report/gpu_tests.sh)

Exit 0 pass, 1 fail, 77 skip (after 'SKIP: <reason>').
usage: report_check.py MODE --omniprof BIN --bindir DIR [--gen BIN] [--workdir DIR]
"""
import argparse
import json
import math
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
from headless_chromium import find_chromium, load_page  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from testlib import FAILS, check  # noqa: E402 (tests/testlib.py: the one assertion helper)

SKIPPED = []  # pages drive() could not load (no Chromium): the mode ends in a skip
ARGS = None


def omniprof(*args, env=None, **kw):
    e = dict(os.environ)
    e.pop("NO_COLOR", None)
    if env:
        e.update(env)
    return subprocess.run([ARGS.omniprof] + [str(a) for a in args], capture_output=True, text=True, env=e,
                          timeout=600, **kw)


def page_data(html_path):
    """The JSON the report embeds (what the page draws from)."""
    with open(html_path, encoding="utf-8") as f:
        html = f.read()
    m = re.search(r'<script id="omniprof-data" type="application/json">(.*?)</script>', html, re.S)
    check(m is not None, "the page embeds its data")
    d = json.loads(m.group(1)) if m else {}
    # the timeline's event columns: elements of their own after the script (docs/report.md)
    ev = dict(re.findall(r'<script type="application/octet-stream" id="(omniprof-ev-\d+)">([^<]*)</script>', html))
    for lane in (d.get("timeline") or {}).get("lanes", []):
        if lane.get("ev"):
            check(lane["ev"] in ev, "the events of lane '%s' are in element %s" % (lane["label"], lane["ev"]))
            lane["ev_text"] = ev.get(lane["ev"], "")
    return d


def report(dbs, out, *extra):
    r = omniprof("report", "-i", *dbs, "-o", out, *extra)
    check(r.returncode == 0, "omniprof report exit %d %s" % (r.returncode, r.stderr.strip()[-300:]))
    check(os.path.isfile(out), "the report is written (%s)" % out)
    return r


def browse(html, expect_sections):
    """Loads the page in Chromium; returns its self-check (a dict) after the common checks."""
    chromium = find_chromium()
    if not chromium:
        print("SKIP: chromium is not installed (Debian package chromium)")
        sys.exit(77)
    page = load_page(chromium, html, ARGS.workdir)
    check(page.rc == 0, "Chromium loaded the page (rc %d %s)" % (page.rc, page.stderr.strip()[-200:]))
    check(not page.console_errors, "no JavaScript error in Chromium's log: %s" % page.console_errors[:3])
    m = re.findall(r'<pre id="omniprof-selfcheck">(.*?)</pre>', page.dom, re.S)
    check(bool(m), "the page wrote its self-check into the DOM")
    sc = json.loads(m[-1].replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")) if m else {}
    print("self-check:", json.dumps(sc))
    check(sc.get("ok") is True, "the self-check is ok")
    check(not sc.get("errors"), "no error caught by the page: %s" % sc.get("errors"))
    check('data-selfcheck="ok"' in page.dom, "body[data-selfcheck] is ok")
    for s in expect_sections:
        check(s in sc.get("sections", []), "section '%s' is drawn" % s)
    check(sc.get("charts", 0) >= 1 and sc.get("charts") == sc.get("painted"),
          "every chart painted pixels (%s of %s)" % (sc.get("painted"), sc.get("charts")))
    return sc


def page_text(name):
    """A name as the page shows it: the bytes (JSON's \\udcXX are bytes that are not UTF-8)
    decoded as UTF-8, each invalid byte as the text \\xNN."""
    raw = name.encode("utf-8", "surrogateescape")
    return raw.decode("utf-8", "backslashreplace")


def db_rows(db, sql):
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def run_demo(d, name, threads, iters, extra=(), env=None):
    demo = os.path.join(ARGS.bindir, "omniprof-demo")
    if not os.path.exists(demo):
        print("SKIP: omniprof-demo is not built")
        sys.exit(77)
    r = omniprof("run", *extra, "-d", d, "-o", name, "--", demo, threads, iters, env=env)
    check(r.returncode == 0, "demo run exit %d %s" % (r.returncode, r.stderr.strip()[-300:]))
    return os.path.join(d, name + "_results.db")


# ---- modes ----------------------------------------------------------------------------------

def mode_cpu():
    wd = ARGS.workdir
    env = {"OMNIPROF_TRACE_THREAD_BARRIERS": "true", "OMNIPROF_TRACE_THREAD_JOIN": "true"}
    db = run_demo(wd, "cpu", 3, 40, ["--sample", "realtime", "--sampling-freq", "500", "--marker-trace"], env)
    html = os.path.join(wd, "cpu.html")
    report([db], html)
    d = page_data(html)
    tables = {t["domain"]: t for t in d.get("tables", [])}
    check("MARKER_API" in tables, "a MARKER_API table (%s)" % list(tables))
    rows = {r[0]: r for r in tables.get("MARKER_API", {}).get("rows", [])}
    check(rows.get("iteration", [0, 0])[1] == 120, "120 'iteration' ranges (3 threads x 40): %s" % rows.get("iteration"))
    check(rows.get("compute", [0, 0])[1] == 3, "3 'compute' ranges")
    wrapped = {r[0] for r in tables.get("FUNCTION_WRAPPER", {}).get("rows", [])}
    check({"pthread_barrier_wait", "pthread_join"} <= wrapped, "wrapped calls in the tables: %s" % sorted(wrapped))
    ov = d.get("overview", {})
    check(len(ov.get("processes", [])) == 1 and "omniprof-demo" in ov["processes"][0]["command"],
          "one process, its command recorded")
    check(ov.get("threads", 0) >= 4, "threads counted (%s)" % ov.get("threads"))
    check(any(c["name"] == "tool_records" for c in ov.get("cost", [])), "the profiler's own cost is reported")
    n_samples = db_rows(db, "SELECT count(*) FROM omniprof_cpu_sample")[0][0]
    fl = d.get("flame") or {}
    check(fl.get("total") == n_samples and n_samples > 0, "the flame graph counts every CPU sample (%s of %d)" %
          (fl.get("total"), n_samples))
    names = set(fl.get("names", []))
    check(any(n.startswith("worker") for n in names) and any(n.startswith("integrate") for n in names),
          "the flame graph has the program's functions")
    kinds = {ln["kind"] for ln in d.get("timeline", {}).get("lanes", [])}
    check({"MARKER_RANGE_API", "CPU samples", "FUNCTION_WRAPPER"} <= kinds, "timeline lanes: %s" % sorted(kinds))
    sc = browse(html, ["overview", "regions", "api", "timeline", "cpu", "perfetto"])
    check(sc.get("flame_nodes", 0) >= 5, "flame graph frames drawn (%s)" % sc.get("flame_nodes"))
    check(sc.get("timeline_lanes", 0) >= 4, "timeline lanes drawn (%s)" % sc.get("timeline_lanes"))
    # the flame graph per thread: a frame per process then per thread, each thread's samples
    S = d.get("flame_split") or {"nodes": [], "names": []}
    nodes = S["nodes"]
    depth, per_thread = {0: 0}, {}
    for i in range(1, len(nodes) // 4):
        depth[i] = depth[nodes[4 * i + 1]] + 1
        if depth[i] == 2:
            m = re.match(r"tid (\d+)", S["names"][nodes[4 * i]])
            per_thread[int(m.group(1)) if m else -1] = nodes[4 * i + 3]
    want = dict(db_rows(db, "SELECT T.tid, count(*) FROM omniprof_cpu_sample C JOIN rocpd_info_thread T "
                            "ON T.id = C.tid GROUP BY T.tid"))
    check(per_thread == want and len(want) >= 3, "a flame graph per thread, each with its samples: %s, %s" %
          (per_thread, want))
    check(sc.get("flame_views", 0) == len(want) + 1, "one view per process and per thread (%s)" % sc.get("flame_views"))
    tid = max(want, key=want.get)
    res = drive(html, """
document.addEventListener("DOMContentLoaded", function () {
  var out = {};
  try {
    var sel = document.getElementById("flame-view"), i;
    for (i = 0; i < sel.options.length; i++) if (sel.options[i].text.indexOf("tid %d") >= 0) sel.selectedIndex = i;
    out.option = sel.options[sel.selectedIndex].text;
    sel.dispatchEvent(new Event("change"));
    out.state = FLAME.state();
  } catch (e) { out.error = String(e.stack || e); }
  var pre = document.createElement("pre"); pre.id = "fl-test"; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});""" % tid, "fl-test", "</body>")
    if res:
        check(res.get("state", {}).get("total") == want[tid] and "tid %d" % tid in res.get("option", ""),
              "choosing thread %d draws its %d samples: %s" % (tid, want[tid], res))
    # convert -f svg: a standalone flame graph
    r = omniprof("convert", "-i", db, "-f", "svg", "-d", wd, "-o", "cpu")
    svg = os.path.join(wd, "cpu_flamegraph.svg")
    check(r.returncode == 0 and os.path.isfile(svg), "convert -f svg writes cpu_flamegraph.svg (%s)" % r.stderr.strip())
    if os.path.isfile(svg):
        root = ET.parse(svg).getroot()
        ns = "{http://www.w3.org/2000/svg}"
        titles = [t.text for t in root.iter(ns + "title")]
        check(root.tag == ns + "svg" and len(titles) >= 5, "the SVG parses as XML with %d frames" % len(titles))
        check(any(t.startswith("integrate") for t in titles), "its frames name the program's functions")
        top = [t for t in titles if t.startswith("all ")]
        check(top and ("(%d samples" % n_samples) in top[0], "its root holds every sample: %s" % top[:1])
        check(len(root.findall(ns + "script")) == 1, "one script in the SVG (its interaction)")
    return 0


def add_mpi_calls(db, n):
    """Adds n MPI_Allreduce calls (category MPI_API) to the generator's database the way the
    writer stores an API call (rocpd_string, rocpd_event, rocpd_region), until the MPI module
    writes its own: the report's MPI section appears when such rows exist."""
    con = sqlite3.connect(db)
    region = con.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rocpd\\_region\\_%' "
                         "ESCAPE '\\' ORDER BY name LIMIT 1").fetchone()[0]
    suffix = region[len("rocpd_region"):]
    S, E, R = ("rocpd_string" + suffix, "rocpd_event" + suffix, "rocpd_region" + suffix)
    nid, pid, tid, t = con.execute('SELECT nid, pid, tid, "end" FROM "%s" ORDER BY id LIMIT 1' % R).fetchone()
    ids = []
    for text in ("MPI_API", "MPI_Allreduce"):
        con.execute('INSERT OR IGNORE INTO "%s" (string) VALUES (?)' % S, (text,))  # guid: generated
        ids.append(con.execute('SELECT id FROM "%s" WHERE string = ?' % S, (text,)).fetchone()[0])
    for i in range(n):
        cur = con.execute('INSERT INTO "%s" (category_id) VALUES (?)' % E, (ids[0],))
        con.execute('INSERT INTO "%s" (nid, pid, tid, start, "end", name_id, event_id) VALUES (?,?,?,?,?,?,?)' % R,
                    (nid, pid, tid, t + 1000 * i, t + 1000 * i + 500, ids[1], cur.lastrowid))
    con.commit()
    con.close()


def mode_gpu_synth():
    wd = ARGS.workdir
    db = os.path.join(wd, "synth.db")
    subprocess.run([ARGS.gen, db, "--events", "60000", "--threads", "3", "--streams", "3", "--weird"], check=True,
                   capture_output=True)
    add_mpi_calls(db, 25)
    html = os.path.join(wd, "synth.html")
    report([db], html)
    d = page_data(html)
    s = omniprof("summary", "-i", db, "-f", "json")
    summary = {t["summary"]: t for t in json.loads(s.stdout)}
    for t in d.get("tables", []):
        ref = summary.get("OMNIPROF %s SUMMARY" % t["domain"])
        check(ref is not None, "domain %s is in the summary too" % t["domain"])
        if not ref:
            continue
        want = {page_text(r["name"]): (r["calls"], round(r["duration"])) for r in ref["rows"]}
        got = {r[0]: (r[1], round(r[2])) for r in t["rows"]}
        check(got == want, "table %s equals the summary's (%d names)" % (t["domain"], len(want)))
    k = d.get("tables", [])
    check(any(t["domain"] == "KERNEL_DISPATCH" for t in k), "a kernel table")
    names = [r[0] for t in k for r in t["rows"]]
    check(any("<" in n for n in names), "a name with '<' survives into the page")
    check(any("\\x" in n for n in names), "a name with bytes that are not UTF-8 shows them as \\xNN")
    counters = {c["name"]: c for c in d.get("counters", [])}
    n_pmc = db_rows(db, "SELECT count(*) FROM rocpd_pmc_event")[0][0]
    check(sum(c["count"] for c in counters.values() if c["kind"] == "pmc") == n_pmc, "every counter value is counted")
    check(any(c["kind"] == "metric" for c in counters.values()), "metrics are listed")
    kinds = {ln["kind"] for ln in d.get("timeline", {}).get("lanes", [])}
    check({"GPU kernels", "GPU memory copies", "CUDA_RUNTIME_API"} <= kinds, "timeline lanes: %s" % sorted(kinds))
    counts = d.get("overview", {}).get("counts", {})
    check(counts and all(re.fullmatch(r"[a-z_]+", n) for n in counts), "every event count is named: %s" % sorted(counts))
    check(counts.get("kernels") == db_rows(db, "SELECT count(*) FROM kernels")[0][0], "the kernel count (%s)" %
          counts.get("kernels"))
    mpi = [t for t in k if t["domain"] == "MPI_API"]
    check(bool(mpi) and mpi[0]["calls"] == 25, "MPI calls have their table (%s)" % [t["calls"] for t in mpi])
    sc = browse(html, ["overview", "kernels", "api", "regions", "mpi", "memory", "timeline", "counters"])
    check(sc.get("tables", 0) >= 8, "tables drawn (%s)" % sc.get("tables"))
    return 0


def mode_merged():
    wd = ARGS.workdir
    a = run_demo(wd, "a", 2, 20, ["--marker-trace"])
    b = run_demo(wd, "b", 4, 20, ["--marker-trace"])
    merged = os.path.join(wd, "merged.db")
    r = omniprof("merge", "-i", a, b, "-o", merged)
    check(r.returncode == 0, "merge exit %d %s" % (r.returncode, r.stderr.strip()))
    html = os.path.join(wd, "merged.html")
    report([merged], html)
    d = page_data(html)
    check(len(d["overview"]["processes"]) == 2, "two processes in the overview")
    ranks = d.get("ranks") or {}
    check(len(ranks.get("labels", [])) == 2, "imbalance over two processes: %s" % ranks.get("labels"))
    it = [t for t in ranks.get("top", []) if t["name"] == "compute"]
    check(bool(it) and all(v > 0 for v in it[0]["per_rank"]), "'compute' is timed in each process")
    rows = {r[0]: r for t in d["tables"] if t["domain"] == "MARKER_API" for r in t["rows"]}
    check(rows.get("iteration", [0, 0])[1] == 120, "the tables sum both processes (120 iterations)")
    sc = browse(html, ["overview", "regions", "timeline", "ranks"])
    check(sc.get("rank_bars") == 2, "one bar per process (%s)" % sc.get("rank_bars"))
    return 0


def mode_causal():
    prog = os.path.join(ARGS.bindir, "causaltest_join_workers")
    if not os.path.exists(prog):
        print("SKIP: the causal test programs are not built (they need coz.h: package coz-profiler)")
        return 77
    wd = ARGS.workdir
    r = omniprof("causal", "-s", "0,50,100", "--experiment-ms", "60", "-q", "-o", os.path.join(wd, "profile.coz"),
                 "-d", wd, "--", prog, "3", "1")
    check(r.returncode == 0, "omniprof causal exit %d %s" % (r.returncode, r.stderr.strip()[-300:]))
    dbs = sorted(os.path.join(top, f) for top, _, files in os.walk(wd) for f in files if f.endswith("_results.db"))
    check(bool(dbs), "the causal run wrote a database")
    n_exp = sum(db_rows(x, "SELECT count(*) FROM omniprof_causal_experiment")[0][0] for x in dbs)
    html = os.path.join(wd, "causal.html")
    report(dbs, html)
    d = page_data(html)
    c = d.get("causal") or {}
    check(c.get("experiments") == n_exp and n_exp > 0, "the page counts every experiment (%s of %d)" %
          (c.get("experiments"), n_exp))
    check(len(c.get("lines", [])) >= 1, "ranked lines: %d" % len(c.get("lines", [])))
    sc = browse(html, ["overview", "causal"])
    pts = sum(len(x["points"]) for x in c.get("lines", [])[:12])
    check(sc.get("causal_points") == pts and pts > 0, "every measured point is plotted (%s of %d)" %
          (sc.get("causal_points"), pts))
    return 0


def mode_inputs():
    wd = ARGS.workdir
    db = os.path.join(wd, "in.db")
    subprocess.run([ARGS.gen, db, "--events", "2000", "--threads", "1", "--streams", "1"], check=True,
                   capture_output=True)
    bad = os.path.join(wd, "not-a-db.db")
    with open(bad, "w") as f:
        f.write("hello, not SQLite\n" * 100)
    r = omniprof("report", "-i", bad, "-o", os.path.join(wd, "x.html"))
    check(r.returncode == 2 and bad in r.stderr, "a file that is not a database: exit 2 naming it (%r)" % r.stderr)
    check(not os.path.exists(os.path.join(wd, "x.html")), "nothing written for a bad input")
    r = omniprof("report", "-i", db, "-o", db)
    check(r.returncode == 2 and "input" in r.stderr, "the output may not be an input: %r" % r.stderr.strip())
    r = omniprof("report", "-i", db, db, "-o", os.path.join(wd, "twice.html"))
    check(r.returncode == 2, "the same database twice is refused (%r)" % r.stderr.strip())
    out = os.path.join(wd, "r.html")
    with open(out, "w") as f:
        f.write("mine")
    r = omniprof("report", "-i", db, "-o", out)
    check(r.returncode == 0 and open(out).read() == "mine", "an existing file is kept")
    check(os.path.isfile(os.path.join(wd, "r-1.html")) and "r-1.html" in r.stdout,
          "the report goes to r-1.html and says so (%r)" % r.stdout.strip())
    check("\033[" not in r.stdout + r.stderr, "no colour escapes when the output is not a terminal")
    empty = os.path.join(wd, "empty.db")
    open(empty, "w").close()
    r = omniprof("report", "-i", empty, db, "-o", os.path.join(wd, "e.html"))
    check(r.returncode == 0, "an empty database beside a good one is skipped (%r)" % r.stderr.strip())
    r = omniprof("report", "--strict", "-i", empty, db, "-o", os.path.join(wd, "s.html"))
    check(r.returncode == 2 and "--strict" in r.stderr, "--strict refuses it (%r)" % r.stderr.strip())
    r = omniprof("report", "-i", db, "--bogus")
    check(r.returncode == 2 and "--bogus" in r.stderr, "an unknown option: exit 2 naming it")
    r = omniprof("report")
    check(r.returncode == 2 and "-i" in r.stderr, "no input: exit 2")
    r = omniprof("report", "--help")
    for opt in ("-i, --input", "-o, --output", "--title", "--no-progress", "--strict", "exit status"):
        check(opt in r.stdout, "--help documents %s" % opt)
    r = omniprof("report", "-i", db, "-o", os.path.join(wd, "t.html"), "--title", "A </title><b>title")
    html = open(os.path.join(wd, "t.html"), encoding="utf-8").read()
    check("<title>A &lt;/title>&lt;b>title</title>" in html, "the title is escaped")
    return 0


def on_terminal(args, env):
    """Runs omniprof with stderr on a pseudo-terminal (stdout a pipe); returns (rc, stdout, stderr)."""
    import pty
    master, slave = pty.openpty()
    e = dict(os.environ)
    e.pop("NO_COLOR", None)
    e["TERM"] = "xterm"
    e.update(env)
    p = subprocess.Popen([ARGS.omniprof] + args, stdout=subprocess.PIPE, stderr=slave, env=e)
    os.close(slave)
    err = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        err += chunk
    out = p.stdout.read()
    p.wait()
    os.close(master)
    return p.returncode, out.decode(errors="replace"), err.decode(errors="replace")


def mode_terminal():
    """Progress on a terminal for report, convert, merge and summary; colours unless NO_COLOR."""
    wd = ARGS.workdir
    dbs = []
    for k in range(2):
        db = os.path.join(wd, "t%d.db" % k)
        subprocess.run([ARGS.gen, db, "--events", "30000", "--threads", "2", "--streams", "2", "--pid", str(4000 + k),
                        "--seed", str(k)], check=True, capture_output=True)
        dbs.append(db)
    cyan, green = "\033[36m", "\033[32m"
    cmds = {"report": ["report", "-i"] + dbs + ["-o", os.path.join(wd, "t.html")],
            "convert": ["convert", "-i"] + dbs + ["-f", "json", "-d", wd, "-o", "t"],
            "merge": ["merge", "-i"] + dbs + ["-o", os.path.join(wd, "t-merged.db")],
            "summary": ["summary", "-i"] + dbs + ["-o", os.path.join(wd, "t-summary.txt")]}
    for name, args in cmds.items():
        rc, out, err = on_terminal(args, {})
        check(rc == 0, "%s on a terminal: exit %d" % (name, rc))
        check("\romniprof: " in err or "\r\033[Komniprof: " in err, "%s shows a progress line: %r" % (name, err[-200:]))
        check(cyan in err, "%s colours it on a terminal" % name)
        if name != "summary":  # summary erases its line before the tables
            check("done" in err and "in " in err, "%s closes with 'done in N s'" % name)
        if name == "report":
            check("input 1/2" in err and "input 2/2" in err and "timeline" in err, "report names its steps and inputs")
            check(green not in out, "the result line has no colour when stdout is not a terminal")
    rc, out, err = on_terminal(["report", "-i"] + dbs + ["-o", os.path.join(wd, "nc.html")], {"NO_COLOR": "1"})
    check(rc == 0 and "omniprof: " in err and "\033[3" not in err and "\033[1m" not in err,
          "NO_COLOR: the progress line has no colour: %r" % err[-120:])
    rc, out, err = on_terminal(["report", "-i"] + dbs + ["-o", os.path.join(wd, "np.html"), "--no-progress"], {})
    check(rc == 0 and "omniprof: " not in err, "--no-progress: no progress line (%r)" % err[-120:])
    rc, out, err = on_terminal(["report", "-i", os.path.join(wd, "missing.db"), "-o", os.path.join(wd, "m.html")], {})
    check(rc == 2 and "\033[31m" in err, "an error message is red on a terminal (%r)" % err[-160:])
    return 0


def mode_demo():
    """scripts/demo.sh, the last step of `make demo`, on this build: what a newcomer sees."""
    wd = ARGS.workdir
    build = os.path.dirname(os.path.abspath(ARGS.bindir))
    if not os.path.exists(os.path.join(ARGS.bindir, "omniprof-demo")):
        print("SKIP: omniprof-demo is not built")
        return 77
    out = os.path.join(wd, "demo")
    env = dict(os.environ, OMNIPROF_DEMO_DIR=out, NO_COLOR="1")
    r = subprocess.run(["sh", os.path.join(HERE, "..", "..", "scripts", "demo.sh"), build], capture_output=True,
                       text=True, env=env, timeout=600)
    check(r.returncode == 0, "demo.sh exit %d %s" % (r.returncode, r.stderr.strip()[-300:]))
    files = {"database": "demo_results.db", "Perfetto": "demo_results.pftrace", "report": "demo_report.html",
             "flame graph": "demo_flamegraph.svg"}
    for label, name in files.items():
        path = os.path.join(out, name)
        check(os.path.isfile(path) and os.path.getsize(path) > 0, "the demo wrote its %s (%s)" % (label, name))
        check(re.search(r"^  %s +%s$" % (re.escape(label), re.escape(path)), r.stdout, re.M) is not None,
              "the demo prints the %s's path" % label)
    check(re.search(r"^compute +\| 4 +\|", r.stdout, re.M) is not None, "the summary shows the 4 'compute' ranges")
    check(re.search(r"^iteration +\| 800 +\|", r.stdout, re.M) is not None, "and the 800 'iteration' ranges")
    check("\033[" not in r.stdout, "no colour codes with NO_COLOR")
    html = os.path.join(out, "demo_report.html")
    if os.path.isfile(html):
        d = page_data(html)
        kinds = {ln["kind"] for ln in d.get("timeline", {}).get("lanes", [])}
        check({"MARKER_RANGE_API", "FUNCTION_WRAPPER"} <= kinds, "the report's timeline: %s" % sorted(kinds))
        browse(html, ["overview", "regions", "api", "timeline", "perfetto"])
    return 0


def mode_page():
    """Any databases (tests/report/gpu_tests.sh: a GPU run's). --gpu: the GPU parts must be
    there. Without Chromium (the GPU machine has none) the browser part says SKIP and the data
    checks still decide."""
    dbs = ARGS.dbs
    html = os.path.join(ARGS.workdir, "page.html")
    report(dbs, html)
    d = page_data(html)
    expect = ["overview", "timeline"]
    if ARGS.gpu:
        tables = {t["domain"]: t for t in d.get("tables", [])}
        k = tables.get("KERNEL_DISPATCH", {})
        n_k = sum(db_rows(x, "SELECT count(*) FROM kernels")[0][0] for x in dbs)
        check(k.get("calls") == n_k and n_k > 0, "the kernel table counts every dispatch (%s of %d)" % (k.get("calls"), n_k))
        check(any(a["type"] == "GPU" for a in d["overview"].get("agents", [])), "a GPU agent in the overview")
        kinds = {ln["kind"] for ln in d.get("timeline", {}).get("lanes", [])}
        check("GPU kernels" in kinds, "GPU kernel lanes in the timeline: %s" % sorted(kinds))
        check(any(t.startswith("CUDA_RUNTIME") for t in tables), "a CUDA runtime API table: %s" % sorted(tables))
        expect += ["kernels", "api"]
    if find_chromium():
        browse(html, expect)
    else:
        print("SKIP: chromium is not installed: the page's own check was not run (the data checks were)")
    print("report: %s (%d bytes)" % (html, os.path.getsize(html)))
    return 0


# ---- driving a page in Chromium -------------------------------------------------------------

def drive(path, script, out_id, before, wrap=None):
    """Copies the page at `path` with `script` inserted before the text `before`, loads the copy
    in headless Chromium and returns the JSON the script wrote into element #out_id (None when
    it wrote nothing). The script dispatches real DOM events and reads the page's state."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    k = text.rfind(before)
    check(k >= 0, "the page ends with %s" % before)
    code = wrap(script) if wrap else "<script>\n" + script + "\n</script>\n"
    copy = path + ".driven" + os.path.splitext(path)[1]
    with open(copy, "w", encoding="utf-8") as f:
        f.write(text[:k] + code + text[k:])
    chromium = find_chromium()
    if not chromium:
        print("SKIP: chromium is not installed (Debian package chromium): the page was not driven")
        SKIPPED.append(path)
        return None
    page = load_page(chromium, copy, ARGS.workdir)
    check(page.rc == 0, "Chromium loaded %s (rc %d)" % (os.path.basename(copy), page.rc))
    check(not page.console_errors, "no JavaScript error in Chromium's log: %s" % page.console_errors[:3])
    m = re.search(r'<[a-z]+ id="%s"[^>]*>(.*?)</[a-z]+>' % out_id, page.dom, re.S)
    if not check(m is not None, "the driving script wrote its result"):
        print(page.dom[-2000:])
        return None
    raw = m.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return json.loads(raw)


def decode_lane(lane):
    """The events of a lane of the page's timeline, decoded as the page does (docs/report.md)."""
    import base64
    u = base64.b64decode(lane["ev_text"])
    p, n, cols = 0, lane["n"], {}
    for c in lane["cols"]:
        vals = []
        acc = 0
        for _ in range(n):
            v, shift = 0, 0
            while True:
                b = u[p]
                p += 1
                v |= (b & 127) << shift
                shift += 7
                if not b & 128:
                    break
            if c == "c":
                v = (v >> 1) ^ -(v & 1)
            if c in "sc":
                acc += v
                v = acc
            vals.append(v)
        cols[c] = vals
    check(p == len(u), "lane '%s': the columns fill its bytes exactly (%d of %d)" % (lane["label"], p, len(u)))
    return cols


TIMELINE_DRIVER = r"""
document.addEventListener("DOMContentLoaded", function () {
  var out = {};
  try {
    var TL = window.OP_TIMELINE, cv = TL.canvas, st = TL.state;
    var R = function () { return cv.getBoundingClientRect(); };
    function mouse(type, x, y, shift) {
      cv.dispatchEvent(new MouseEvent(type, { clientX: x, clientY: y, shiftKey: !!shift, bubbles: true }));
    }
    function wheel(x, y, dy) {
      cv.dispatchEvent(new WheelEvent("wheel", { clientX: x, clientY: y, deltaY: dy, bubbles: true,
                                                 cancelable: true }));
    }
    function rowOf(s, lane) { return s.layout.filter(function (r) { return r.lane === lane; })[0]; }
    var s0 = st();
    out.initial = { lod: s0.lod, events_drawn: s0.events_drawn, v0: s0.v0, v1: s0.v1, span: s0.span,
                    labels: s0.labels, groups: s0.groups, lanes_drawn: s0.lanes_drawn };
    var plotW = s0.width - TL.label - 8;
    /* zoom with the wheel onto one kernel, the cursor kept on it */
    var K = s0.labels.map(function (l) { return l[2]; }).indexOf("GPU kernels");
    var E = TL.events(K), k = Math.floor(E.n / 2), a = E.start[k], d = E.dur[k], steps = 0;
    while (steps < 400) {
      var s = st();
      if (s.v1 - s.v0 <= 8 * d) break;
      var x = R().left + TL.label + (a + d / 2 - s.v0) / (s.v1 - s.v0) * plotW;
      wheel(x, R().top + rowOf(s, K).y + 5, -100);
      steps++;
    }
    var s1 = st(), row = rowOf(s1, K);
    out.zoom = { steps: steps, v0: s1.v0, v1: s1.v1, lod: s1.lod, events_drawn: s1.events_drawn,
                 kernel_lane: K, k: k, start: a, dur: d };
    /* click the kernel: its details and its flow from the launch */
    var cx = R().left + TL.label + (a + d / 2 - s1.v0) / (s1.v1 - s1.v0) * plotW;
    var cy = R().top + row.y + 2 + Math.min(5, E.depth ? E.depth[k] : 0) * 14 + 7;
    mouse("mousedown", cx, cy); mouse("mouseup", cx, cy);
    var s2 = st();
    out.pick = { picked: s2.picked, details: s2.details, flows_drawn: s2.flows_drawn };
    /* back to the whole run, then shift+drag over 30-60 % of it across every lane */
    cv.dispatchEvent(new MouseEvent("dblclick", { bubbles: true }));
    var s3 = st(), lanes = s3.layout.filter(function (r) { return r.lane != null; });
    var x0 = R().left + TL.label + 0.3 * plotW, x1 = R().left + TL.label + 0.6 * plotW;
    var y0 = R().top + lanes[0].y + 3, y1 = R().top + lanes[lanes.length - 1].y + 3;
    mouse("mousedown", x0, y0, true); mouse("mousemove", (x0 + x1) / 2, (y0 + y1) / 2, true);
    mouse("mousemove", x1, y1, true); mouse("mouseup", x1, y1, true);
    var s4 = st();
    out.selection = s4.selection;
    out.selection_tables = document.querySelectorAll("#timeline table.data").length;
    /* fold the first process */
    var head = s4.layout.filter(function (r) { return r.g === 0; })[0];
    mouse("mousedown", R().left + 20, R().top + head.y + 5); mouse("mouseup", R().left + 20, R().top + head.y + 5);
    var s5 = st();
    out.fold = { collapsed: s5.collapsed, lanes_drawn: s5.lanes_drawn };
    var sc = document.getElementById("omniprof-selfcheck");
    out.selfcheck = sc ? JSON.parse(sc.textContent) : null;
  } catch (e) { out.error = String(e.stack || e); }
  var pre = document.createElement("pre");
  pre.id = "tl-test"; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
"""

TRACKS_DRIVER = r"""
document.addEventListener("DOMContentLoaded", function () {
  var out = {};
  try {
    var TL = window.OP_TIMELINE, s = TL.state(), n = s.labels.length;
    out.groups = s.groups; out.labels = s.labels;
    var seg = TL.events(n - 1);
    TL.zoomTo(seg.start[0] - 100, seg.start[0] + seg.dur[0] + 100);
    var z = TL.state();
    out.lod = z.lod[n - 1]; out.events_drawn = z.events_drawn;
  } catch (e) { out.error = String(e.stack || e); }
  var pre = document.createElement("pre");
  pre.id = "tl-test"; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
"""


def drive_timeline(html, d, db):
    """Drives the timeline of page html (data d, of database db) in Chromium: see mode_timeline."""
    T = d.get("timeline") or {}
    lanes, names, t0 = T.get("lanes", []), T.get("names", []), T.get("t0", 0)
    res = drive(html, TIMELINE_DRIVER, "tl-test", "</body>")
    if not res:
        return None
    check("error" not in res, "the driving script ran: %s" % res.get("error"))
    ini, z, pk, sel = res.get("initial", {}), res.get("zoom", {}), res.get("pick", {}), res.get("selection") or {}
    # the database's lanes come from their bins (nothing decoded); extra tracks the page's data
    # adds (analyze's critical path: a few thousand plain segments, no columns) draw as events
    extra = (d.get("tracks") or []) + ([1] if d.get("critical_path") else [])
    data_lod = {k: v for k, v in ini.get("lod", {}).items() if int(k) < len(lanes)}
    check((ini.get("events_drawn") == 0 or extra) and set(data_lod.values()) <= {"bins"},
          "the first paint draws the bins, no event decoded: %s" % ini.get("lod"))
    K = z.get("kernel_lane")
    check(z.get("v1", 0) - z.get("v0", 0) <= 8 * z.get("dur", 0) and z.get("steps", 0) > 10,
          "the wheel zooms to one kernel (%s ns shown, the kernel %s ns, %s steps)" %
          (z.get("v1", 0) - z.get("v0", 0), z.get("dur"), z.get("steps")))
    check(z.get("lod", {}).get(str(K)) == "events" and 0 < z.get("events_drawn", 0) < 200,
          "zoomed in, the kernel lane draws single events (%s, %s drawn)" % (z.get("lod", {}).get(str(K)),
                                                                              z.get("events_drawn")))
    kname = lanes[K]
    kc = decode_lane(kname)
    name = names[kc["n"][z["k"]]] if K is not None else None
    check(pk.get("picked") == [K, z.get("k")], "a click picks the kernel: %s" % pk.get("picked"))
    check(name and name in pk.get("details", ""), "its details name it: %s" % pk.get("details", "")[:200])
    check("flow from" in pk.get("details", "") and pk.get("flows_drawn", 0) >= 1,
          "its flow from the launching API call is drawn (%s)" % pk.get("flows_drawn"))
    # the selection's statistics against the decoded events (and the kernels against the rows)
    a, b, sl = sel.get("t0", 0), sel.get("t1", 0), sel.get("lanes", [])
    n_extra = sum(len(t.get("lanes", [])) for t in d.get("tracks") or []) + (1 if d.get("critical_path") else 0)
    check(len(sl) == len(lanes) + n_extra and b > a, "shift+drag selects %d of %d lanes (%d of them extra "
          "tracks), %s ns" % (len(sl), len(lanes) + n_extra, n_extra, b - a))
    want_n, want_k = 0, 0
    cp = d.get("critical_path") or {}
    for i in sl:
        if i >= len(lanes):  # the critical-path track: its segments, from the timeline's t0
            segs = [(g[0] + cp.get("t0", t0) - t0, g[1] - g[0]) for g in cp.get("segments", [])]
            want_n += sum(1 for s, dd in segs if s < b and (s + dd >= a if dd else s >= a))
            continue
        c = decode_lane(lanes[i])
        dur = c.get("d", [0] * lanes[i]["n"])
        for s, dd in zip(c["s"], dur):
            if s < b and (s + dd >= a if dd else s >= a):
                want_n += 1
                want_k += lanes[i]["kind"] == "GPU kernels"
    st = sel.get("stats", {})
    check(st.get("events") == want_n, "the selection counts its events: %s, expected %d" % (st.get("events"), want_n))
    rows_k = db_rows(db, "SELECT count(*) FROM rocpd_kernel_dispatch WHERE start < %d AND \"end\" >= %d"
                     % (t0 + math.ceil(b), t0 + math.ceil(a)))[0][0]
    got_k = sum(r["count"] for r in st.get("by_name", []) if r["kind"] == "GPU kernels")
    check(got_k == want_k == rows_k, "kernels in the selection: page %d, decoded %d, database %d" % (got_k, want_k, rows_k))
    check(res.get("selection_tables", 0) >= 2, "the selection's tables are drawn")
    f = res.get("fold", {})
    check(f.get("collapsed", [False])[0] is True and f.get("lanes_drawn", 99) < len(lanes),
          "a click on the process folds it (%s lanes drawn)" % f.get("lanes_drawn"))
    sc = res.get("selfcheck") or {}
    check(sc.get("ok") is True and not sc.get("errors"), "the page's self-check is ok: %s" % sc.get("errors"))
    return res


def mode_timeline():
    """The event-level timeline: every event of the generator's database is in the page (decoded
    as the page decodes it and compared with the rows), the first paint draws bins only, the
    wheel zooms to one kernel, a click picks it (details, its flow from the launch), shift+drag
    selects a range whose statistics equal the events there, a click folds a process, lane
    labels are distinct, and extra tracks (`tracks`, `critical_path`) are drawn generically."""
    wd = ARGS.workdir
    db = os.path.join(wd, "tl.db")
    r = subprocess.run([ARGS.gen, db, "--events", "30000", "--threads", "2", "--streams", "2"], capture_output=True,
                       text=True)
    check(r.returncode == 0, "generator exit %d %s" % (r.returncode, r.stderr.strip()))
    html = os.path.join(wd, "tl.html")
    report([db], html)
    d = page_data(html)
    T = d.get("timeline") or {}
    lanes = T.get("lanes", [])
    n_rows = sum(db_rows(db, "SELECT count(*) FROM %s" % t)[0][0]
                 for t in ("rocpd_region", "rocpd_kernel_dispatch", "rocpd_memory_copy", "omniprof_cpu_sample"))
    check(T.get("events") == n_rows and sum(l.get("n", 0) for l in lanes) == n_rows,
          "every event is in the page: %s in lanes, %s rows" % (sum(l.get("n", 0) for l in lanes), n_rows))
    labels = [(l["p"], l["label"]) for l in lanes]
    check(len(set(labels)) == len(labels), "lane labels are distinct: %s" % sorted(labels))
    # the bytes column of the copies' and memsets' tables: each name's bytes are its rows' sizes
    got = {(t["domain"], r[0]): r[6] for t in d.get("tables", []) if t["domain"] in ("MEMORY_COPY", "MEMORY_SET")
           for r in t["rows"] if len(r) > 6}
    want = {("MEMORY_SET" if n == "MEMORY_SET" else "MEMORY_COPY", n): b for n, b in
            db_rows(db, "SELECT S.string, total(C.size) FROM rocpd_memory_copy C JOIN rocpd_string S "
                        "ON S.id = C.name_id GROUP BY S.string")}
    check(got == want and want, "the copy and memset tables carry each name's bytes: %s, %s" % (got, want))
    # the kernels of each stream, decoded, equal the rows
    t0 = T.get("t0", 0)
    names = T.get("names", [])
    got = []
    for l in lanes:
        if l["kind"] == "GPU kernels":
            c = decode_lane(l)
            got += [(t0 + s, t0 + s + dd, names[nm], cr) for s, dd, nm, cr in zip(c["s"], c["d"], c["n"], c["c"])]
    want = db_rows(db, "SELECT K.start, K.\"end\", S.kernel_name, E.stack_id FROM rocpd_kernel_dispatch K "
                       "JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id JOIN rocpd_event E ON E.id = K.event_id")
    check(sorted(got) == sorted(want), "the page's kernels equal the database's (%d, %d)" % (len(got), len(want)))
    if drive_timeline(html, d, db) is None:
        return 0
    # extra tracks: what another pass adds to the data is drawn without a change to the page
    with open(html, encoding="utf-8") as fh:
        text = fh.read()
    d["tracks"] = [{"title": "extra track", "lanes": [{"label": "lane A", "segments": [
        [T["t0"] + 1000, 5000, "seg-a"], {"start": T["t0"] + 9000, "end": T["t0"] + 12000, "name": "seg-b"}]}]}]
    d["critical_path"] = [{"start": T["t0"] + 2000, "dur": 3000, "name": "on the path"}]
    for lane in T["lanes"]:
        lane.pop("ev_text", None)
    blob = json.dumps(d).replace("<", "\\u003c")
    text = re.sub(r'(<script id="omniprof-data" type="application/json">).*?(</script>)',
                  lambda m: m.group(1) + blob + m.group(2), text, count=1, flags=re.S)
    html2 = os.path.join(wd, "tracks.html")
    with open(html2, "w", encoding="utf-8") as fh:
        fh.write(text)
    res = drive(html2, TRACKS_DRIVER, "tl-test", "</body>")
    if res:
        titles = [g.get("title") for g in res.get("groups", [])]
        check("extra track" in titles and "critical path" in titles, "the extra tracks are drawn: %s" % titles)
        check(res.get("labels", [])[-2][1] == "lane A", "their lanes are labelled")
        check(res.get("lod") == "events" and res.get("events_drawn", 0) >= 1,
              "zoomed onto a segment, it is drawn (%s, %s)" % (res.get("lod"), res.get("events_drawn")))
    return 0


def mode_gputimeline():
    """The event-level timeline of a real CUDA run (tests/gpu/run.sh part reporttl): every
    kernel, copy and API call is in the page, each kernel's and copy's correlation id names an
    API call of its process (the launch -> kernel flow), copy lanes carry the bytes of the rows,
    then the timeline driven in Chromium as in mode timeline."""
    db = ARGS.dbs[0]
    html = os.path.join(ARGS.workdir, "gputl.html")
    report([db], html)
    d = page_data(html)
    T = d.get("timeline") or {}
    lanes = T.get("lanes", [])
    n_rows = sum(db_rows(db, "SELECT count(*) FROM %s" % t)[0][0]
                 for t in ("rocpd_region", "rocpd_kernel_dispatch", "rocpd_memory_copy", "omniprof_cpu_sample"))
    check(T.get("events") == n_rows, "every event is in the page (%s of %d)" % (T.get("events"), n_rows))
    api, gpu, copy_bytes = {}, [], 0
    for l in lanes:
        c = decode_lane(l)
        if l["kind"].startswith("GPU"):
            gpu += [(l["p"], x) for x in c.get("c", [])]
            if l["kind"] == "GPU memory copies":
                copy_bytes += sum(c.get("b", []))
        else:
            for x in c.get("c", []):
                if x:
                    api.setdefault(l["p"], set()).add(x)
    k = db_rows(db, "SELECT count(*) FROM rocpd_kernel_dispatch")[0][0]
    check(k > 0 and len(gpu) >= k, "the kernels are in GPU lanes (%d, %d rows)" % (len(gpu), k))
    lost = [x for x in gpu if x[1] not in api.get(x[0], ())]
    check(not lost, "every kernel and copy has its launching API call in the page (%d without: %s)" %
          (len(lost), lost[:5]))
    want = db_rows(db, "SELECT total(size) FROM rocpd_memory_copy")[0][0]
    check(copy_bytes == want, "copy lanes carry the bytes of the rows (%d, %d)" % (copy_bytes, want))
    drive_timeline(html, d, db)
    return 0


SVG_DRIVER = r"""
(function () {
  var out = {};
  try {
    var F = window.flame, s0 = F.state(), gs = document.querySelectorAll("g.f");
    out.initial = s0;
    /* click the widest frame above the root that has callees */
    var pick = null, best = -1;
    for (var i = 0; i < gs.length; i++) {
      var w = +gs[i].getAttribute("data-w"), dd = +gs[i].getAttribute("data-d");
      if (dd === 2 && w > best && w < 1100) { best = w; pick = gs[i]; }
    }
    out.clicked = pick.getElementsByTagName("title")[0].textContent;
    pick.querySelector("rect").dispatchEvent(new MouseEvent("click", { bubbles: true }));
    out.zoomed = F.state();
    out.zoomed_width = +pick.querySelector("rect").getAttribute("width");
    /* Search through its button (the prompt answered), then Reset Zoom through its button */
    window.prompt = function () { return "^integrate"; };
    document.getElementById("search").dispatchEvent(new MouseEvent("click", { bubbles: true }));
    out.searched = F.state();
    var mag = 0;
    for (var j = 0; j < gs.length; j++) if (gs[j].querySelector("rect").getAttribute("fill") === "rgb(230,0,230)") mag++;
    out.highlighted = mag;
    document.getElementById("reset").dispatchEvent(new MouseEvent("click", { bubbles: true }));
    out.reset = F.state();
    out.reset_width = +pick.querySelector("rect").getAttribute("width");
  } catch (e) { out.error = String(e.stack || e); }
  var t = document.createElementNS("http://www.w3.org/2000/svg", "text");
  t.setAttribute("id", "svg-test"); t.textContent = JSON.stringify(out);
  document.documentElement.appendChild(t);
})();
"""


def mode_svg():
    """`convert -f svg` in Chromium: one self-contained file (no external reference) whose
    script zooms into a clicked frame, highlights a search through its Search button (the
    matched share equals the samples of the matching frames) and resets through Reset Zoom."""
    wd = ARGS.workdir
    db = run_demo(wd, "svg", 2, 30, ["--sample", "realtime", "--sampling-freq", "500"])
    r = omniprof("convert", "-i", db, "-f", "svg", "-d", wd, "-o", "svg")
    svg = os.path.join(wd, "svg_flamegraph.svg")
    check(r.returncode == 0 and os.path.isfile(svg), "convert -f svg (%s)" % r.stderr.strip()[-200:])
    text = open(svg, encoding="utf-8").read()
    root = ET.fromstring(text)
    ns = "{http://www.w3.org/2000/svg}"
    check(len(root.findall(ns + "script")) == 1 and not re.search(r'(href|src)="(?!#)', text),
          "one inline script, nothing loaded from elsewhere")
    titles = [t.text for t in root.iter(ns + "title")]
    total = int(re.search(r"\((\d+) samples", [t for t in titles if t.startswith("all ")][0]).group(1))
    # the share of samples under frames named integrate*, outermost only, from the titles' counts
    frames = [(float(g.get("data-x")), float(g.get("data-w")), int(g.get("data-d")), g.find(ns + "title").text)
              for g in root.iter(ns + "g") if g.get("class") == "f"]
    res = drive(svg, SVG_DRIVER, "svg-test", "</svg>",
                wrap=lambda s: "<script type=\"text/ecmascript\"><![CDATA[\n" + s + "\n]]></script>\n")
    if not res:
        return 0
    check("error" not in res, "the driving script ran: %s" % res.get("error"))
    ini, z, s, rs = res.get("initial", {}), res.get("zoomed", {}), res.get("searched", {}), res.get("reset", {})
    check(ini.get("frames") == len(frames) and ini.get("shown") == len(frames) and ini.get("zoomed") is None,
          "all %d frames shown at first (%s)" % (len(frames), ini))
    clicked = res.get("clicked", "")
    check(z.get("zoomed") and clicked.startswith(z["zoomed"]), "a click zooms into '%s' (%s)" % (clicked, z.get("zoomed")))
    check(z.get("shown", 0) < len(frames) and abs(res.get("zoomed_width", 0) - 1179.5) < 1,
          "zoomed: %s of %d frames shown, the frame spans the width (%s px)" %
          (z.get("shown"), len(frames), res.get("zoomed_width")))
    m = re.match(r"Matched: ([0-9.]+)%", s.get("matched", ""))
    spans = sorted((x, x + w) for x, w, _, t in frames if re.match(r"integrate", t))
    cov, end = 0.0, -1.0
    for lo, hi in spans:
        if lo >= end:
            cov, end = cov + hi - lo, hi
        elif hi > end:
            cov, end = cov + hi - end, hi
    want = 100 * cov / 1180
    check(m is not None and abs(float(m.group(1)) - want) < 0.2 and s.get("query") == "^integrate",
          "Search highlights '^integrate': %s (expected %.1f %% of %d samples)" % (s.get("matched"), want, total))
    check(res.get("highlighted", 0) == len(spans), "the matching frames are highlighted (%s of %d)" %
          (res.get("highlighted"), len(spans)))
    check(rs.get("zoomed") is None and rs.get("shown") == len(frames) and
          abs(res.get("reset_width", 0) - [w for x, w, dd, t in frames if t == clicked][0] + 0.5) < 0.2,
          "Reset Zoom shows every frame at its first width again (%s)" % rs)
    return 0


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("mode")
    ap.add_argument("dbs", nargs="*")
    ap.add_argument("--omniprof", required=True)
    ap.add_argument("--bindir", default="")
    ap.add_argument("--gen", default="")
    ap.add_argument("--workdir")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--gpu", action="store_true", help="page: the databases come from a GPU run")
    ARGS = ap.parse_args()
    tmp = None
    if not ARGS.workdir:
        tmp = ARGS.workdir = tempfile.mkdtemp(prefix="omniprof-report-")
    modes = {"cpu": mode_cpu, "gpu_synth": mode_gpu_synth, "merged": mode_merged, "causal": mode_causal,
             "inputs": mode_inputs, "terminal": mode_terminal, "demo": mode_demo,
             "page": mode_page, "timeline": mode_timeline, "svg": mode_svg,
             "gputimeline": mode_gputimeline}
    try:
        rc = modes[ARGS.mode]()
    finally:
        if tmp and not ARGS.keep and not FAILS:
            shutil.rmtree(tmp, ignore_errors=True)
    if rc == 77 or (SKIPPED and not FAILS):
        return 77
    if FAILS:
        print("%d check(s) failed (work directory %s)" % (len(FAILS), ARGS.workdir))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
