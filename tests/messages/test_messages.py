#!/usr/bin/env python3
"""What omniprof says after its work (issue 36 item 6), on real runs and real databases.

Cases (argv[1]):
  run_exec       `omniprof run --marker-trace -- diff_prog` (nothing to do after the run: the
                 launcher execs the program): stderr is one line, "omniprof: database: PATH
                 (SIZE)", PATH the database written, SIZE in B/KiB/MiB/GiB.
  run_post       `omniprof run --marker-trace -f csv --stats` (the launcher stays): it names the
                 database and every derived file (the CSV files, the stats), each existing, with
                 its size; `omniprof sample` (summary) names its database too.
  convert_total  `omniprof convert -f csv` of a 400,000-event database with stderr on a
                 terminal (a pty): the progress line shows done/total with a percentage, and the
                 total is the database's row count.
Exit 0 pass, 1 fail, 77 skip."""
import argparse
import os
import pty
import re
import select
import sqlite3
import subprocess
import sys
import tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from testlib import FAILS, check  # noqa: E402 (tests/testlib.py: the one assertion helper)

A = None
SIZE = r"\((\d+ B|\d[\d.]* (KiB|MiB|GiB))\)"


def run(*args, **kw):
    return subprocess.run(list(args), capture_output=True, text=True, timeout=240, **kw)


def case_run_exec(wd):
    r = run(A.omniprof, "run", "--marker-trace", "-d", wd, "-o", "x", "--", A.prog, "3", "1000", "100")
    check(r.returncode == 0, "run exits 0 (%s)" % r.stderr)
    db = os.path.join(wd, "x_results.db")
    lines = r.stderr.splitlines()
    check(len(lines) == 1 and re.fullmatch(r"omniprof: database: %s %s" % (re.escape(db), SIZE),
                                           lines[0] if lines else ""),
          "one line names the database and its size: %r" % r.stderr)
    check(os.path.exists(db), "the database is there")


def case_run_post(wd):
    r = run(A.omniprof, "run", "--marker-trace", "-f", "csv", "--stats", "-d", wd, "-o", "y", "--",
            A.prog, "3", "1000", "100")
    print(r.stderr)
    check(r.returncode == 0, "run exits 0")
    db = os.path.join(wd, "y_results.db")
    check(re.search(r"^omniprof run: database: %s %s$" % (re.escape(db), SIZE), r.stderr, re.M),
          "the launcher names the database and its size")
    derived = re.findall(r"^omniprof run:   derived: (\S+) %s$" % SIZE, r.stderr, re.M)
    names = sorted(os.path.basename(d[0]) for d in derived)
    on_disk = sorted(f for f in os.listdir(wd) if f.startswith("y_") and f != "y_results.db"
                     and os.path.isfile(os.path.join(wd, f)))
    check(names == on_disk and "y_marker_api_trace.csv" in names and
          any(n.endswith("_stats.csv") for n in names),
          "every derived file is named, and only those: %s (on disk %s)" % (names, on_disk))
    s = run(A.omniprof, "sample", "-d", wd, "-o", "z", "--", A.prog, "3", "1000", "100")
    check(s.returncode == 0 and re.search(r"omniprof run: database: %s %s" % (
        re.escape(os.path.join(wd, "z_results.db")), SIZE), s.stderr),
          "sample names its database: %r" % s.stderr[-300:])


def case_convert_total(wd):
    db = os.path.join(wd, "big.db")
    g = run(A.gen, db, "--events", "400000", "--threads", "2")
    check(g.returncode == 0, "generator: %s" % g.stderr)
    master, slave = pty.openpty()
    p = subprocess.Popen([A.omniprof, "convert", "-i", db, "-f", "csv", "-d", os.path.join(wd, "o")],
                         stdout=subprocess.DEVNULL, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    out = b""
    while True:
        try:
            ready, _, _ = select.select([master], [], [], 60)
            if not ready:
                break
            chunk = os.read(master, 65536)
        except OSError:  # the other side closed: the process ended
            break
        if not chunk:
            break
        out += chunk
    p.wait(timeout=240)
    os.close(master)
    text = out.decode(errors="replace")
    check(p.returncode == 0, "convert exits 0")
    shown = re.findall(r"(\d+)/(\d+)\S* \((\d+)%\)", re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text))
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    tables = [t for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type='table' AND ("
                                        "name LIKE 'rocpd_region%' OR name LIKE 'rocpd_kernel_dispatch%'"
                                        " OR name LIKE 'rocpd_memory_copy%')")]
    con.close()
    print("progress lines seen: %d, last %s" % (len(shown), shown[-1] if shown else None))
    check(shown, "the progress line shows done/total (pct): %r" % text[-300:])
    if shown:
        done, total, pct = (int(x) for x in shown[-1])
        check(total >= 400000 and 0 <= pct <= 100 and pct == int(100 * done / total) or
              abs(pct - 100 * done / total) <= 1,
              "the total counts the rows (%d) and the percentage is done/total (%d/%d = %d%%)"
              % (total, done, total, pct))
    check(tables, "the database has event tables")


def main():
    global A
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("--omniprof", required=True)
    ap.add_argument("--prog", required=True)
    ap.add_argument("--gen", required=True)
    A = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="omniprof-msg-") as wd:
        {"run_exec": case_run_exec, "run_post": case_run_post,
         "convert_total": case_convert_total}[A.case](wd)
    if FAILS:
        print("%d check(s) failed" % len(FAILS))
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
