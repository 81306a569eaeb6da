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
  page DB... report of any databases, their data checked, and the page's self-check when
             Chromium is there; --gpu: kernels, GPU lanes, agents (tests/report/gpu_tests.sh)

Exit 0 pass, 1 fail, 77 skip (after 'SKIP: <reason>').
usage: report_check.py MODE --omniprof BIN --bindir DIR [--gen BIN] [--workdir DIR]
"""
import argparse
import json
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

FAILS = []
ARGS = None


def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg)
    if not cond:
        FAILS.append(msg)
    return cond


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
    return json.loads(m.group(1)) if m else {}


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
        check(root.find(ns + "script") is None, "no script in the SVG")
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
             "page": mode_page}
    try:
        rc = modes[ARGS.mode]()
    finally:
        if tmp and not ARGS.keep and not FAILS:
            shutil.rmtree(tmp, ignore_errors=True)
    if rc == 77:
        return 77
    if FAILS:
        print("%d check(s) failed (work directory %s)" % (len(FAILS), ARGS.workdir))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
