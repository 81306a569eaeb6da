#!/usr/bin/env python3
"""Trust tests of the post-processing commands (issue 11): nothing the user had is overwritten or
destroyed, inputs are checked one way by every command, interrupted commands leave no file, and
the Python package gives the same refusals. Real SQLite files, real omniprof/python processes,
real signals. tests/output/CMakeLists.txt runs one case per CTest test: output.trust_<case>.

usage: test_trust.py CASE --omniprof BIN --gen GEN --lib LIB --python PYDIR [--victim PROG]
"""

import argparse
import glob
import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

A = None


def run(argv, rc=0, env=None, cwd=None):
    p = subprocess.run([str(a) for a in argv], env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if rc is not None and p.returncode != rc:
        raise AssertionError("%s: exit %d (expected %d)\nstdout: %s\nstderr: %s" % (
            " ".join(map(str, argv)), p.returncode, rc, p.stdout[-2000:], p.stderr[-2000:]))
    return p


def op(*args, rc=0, env=None):
    return run([A.omniprof] + list(args), rc=rc, env=env)


def pyenv():
    env = dict(os.environ)
    env["PYTHONPATH"] = A.python
    env["OMNIPROF_OUTPUT_LIB"] = A.lib
    return env


def pym(*args, rc=0):
    return run([sys.executable, "-m", "omniprof"] + list(args), rc=rc, env=pyenv())


def py(code, *args, rc=0):
    return run([sys.executable, "-c", code] + list(args), rc=rc, env=pyenv())


def gen(path, *args):
    out = run([A.gen, path] + list(args)).stdout.decode().strip().splitlines()[-1]
    return {k: int(v) for k, v in (kv.split("=") for kv in out.split())}


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def kernels(db):
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    try:
        return con.execute("SELECT count(*) FROM rocpd_kernel_dispatch").fetchone()[0]
    finally:
        con.close()


def csv_count(p):
    return int(p.stdout.split()[-1])


# ---- output = input ---------------------------------------------------------------------------

def refused_onto_input(argv_of, db, what, runner=op):
    """argv_of(target) -> argv; each spelling of the input as the output is refused, naming both,
    and the input stays byte for byte what it was."""
    before, n = digest(db), kernels(db)
    d = os.path.dirname(db)
    hard = os.path.join(d, "hard.db")
    soft = os.path.join(d, "soft.db")
    os.link(db, hard)
    os.symlink(db, soft)
    rel = os.path.relpath(db)
    for target in (db, rel, hard, soft):
        p = runner(*argv_of(target), rc=2)
        check(target.encode() in p.stderr and b"input" in p.stderr,
              "%s -o %s: refusal names it as the input: %s" % (what, target, p.stderr))
        check(digest(db) == before and os.path.getsize(db) > 0, "%s -o %s: the input is intact" % (what, target))
        check(kernels(db) == n, "%s: the input still reads as before" % what)
    os.unlink(hard)
    os.unlink(soft)


def case_summary_onto_input(tmp):
    """`omniprof summary -i X -o X` refuses (it truncated X to 0 bytes)."""
    db = os.path.join(tmp, "p.db")
    gen(db, "--events", 3000)
    refused_onto_input(lambda t: ["summary", "-i", db, "-o", t], db, "summary")
    refused_onto_input(lambda t: ["summary", "-i", db, "-f", "json", "--output=" + t], db, "summary json")


def case_query_onto_input(tmp):
    """`omniprof query -i X -o X` refuses (it truncated X to 0 bytes)."""
    db = os.path.join(tmp, "p.db")
    gen(db, "--events", 3000)
    refused_onto_input(lambda t: ["query", "-i", db, "--sql", "SELECT 1", "-o", t], db, "query")


def case_python_onto_input(tmp):
    """`python3 -m omniprof summary -i p.db -o p.db` refuses, and so do the Python functions,
    raising omniprof.Error naming the input."""
    db = os.path.join(tmp, "p.db")
    gen(db, "--events", 3000)
    refused_onto_input(lambda t: ["summary", "-i", db, "-o", t], db, "python -m omniprof summary", runner=pym)
    refused_onto_input(lambda t: ["query", "-i", db, "--sql", "SELECT 1", "-o", t], db, "python -m omniprof query",
                       runner=pym)
    before = digest(db)
    os.symlink(db, os.path.join(tmp, "x_results.json"))
    code = ("import omniprof, sys\n"
            "try:\n"
            "    omniprof.convert([sys.argv[1]], ['json'], output_dir=sys.argv[2], output_name='x')\n"
            "except omniprof.Error as e:\n"
            "    print('ERROR', e.status, e)\n")
    out = py(code, db, tmp).stdout.decode()
    check(out.startswith("ERROR 2") and db in out and "x_results.json" in out,
          "omniprof.convert onto an input raises Error naming both: %r" % out)
    check(digest(db) == before, "the input is intact after the Python refusal")


def case_convert_onto_input(tmp):
    """A conversion whose derived file name is an input is refused, naming both."""
    db = os.path.join(tmp, "n_results.json")  # a database that happens to have the derived name
    gen(db, "--events", 2000)
    before = digest(db)
    p = op("convert", "-i", db, "-f", "json", "csv", "-d", tmp, "-o", "n", rc=2)
    check(db.encode() in p.stderr and b"input" in p.stderr, "refusal names the input: %s" % p.stderr)
    check(digest(db) == before, "the input is intact")
    check(not glob.glob(os.path.join(tmp, "n-*")) and not glob.glob(os.path.join(tmp, ".n*tmp*")),
          "nothing else written: %s" % os.listdir(tmp))


# ---- existing files ---------------------------------------------------------------------------

def case_existing_outputs(tmp):
    """An existing derived file is kept; the new one takes the -N suffix (as databases do)."""
    db = os.path.join(tmp, "in.db")
    gen(db, "--events", 3000)
    d = os.path.join(tmp, "out")
    op("convert", "-i", db, "-f", "pftrace", "json", "csv", "folded", "--stats", "-d", d, "-o", "r")
    first = {f: digest(os.path.join(d, f)) for f in os.listdir(d)}
    check("r_results.pftrace" in first and "r_results.json" in first and "r_kernel_trace.csv" in first
          and "r_kernel_stats.csv" in first and "r_folded.txt" in first, "first conversion: %s" % sorted(first))
    p = op("convert", "-i", db, "-f", "pftrace", "json", "csv", "folded", "--stats", "-d", d, "-o", "r")
    now = {f: digest(os.path.join(d, f)) for f in os.listdir(d)}
    for f, h in first.items():
        check(now.get(f) == h, "%s kept byte for byte" % f)
        g = f.replace("r_", "r-1_", 1)
        check(now.get(g) == h, "the second conversion wrote %s, equal to the first's %s" % (g, f))
    check(b"r_results.json exists; writing" in p.stderr, "one line says where the output went: %s" % p.stderr)
    check(not [f for f in now if ".tmp" in f or ".part" in f], "no temporary file left: %s" % sorted(now))
    # summary and query -o an existing (non-input) file
    for cmd in (["summary", "-i", db], ["query", "-i", db, "--sql", "SELECT count(*) FROM kernels"]):
        target = os.path.join(tmp, "report.txt")
        with open(target, "w") as f:
            f.write("keep me\n")
        op(*(cmd + ["-o", target]))
        with open(target) as f:
            check(f.read() == "keep me\n", "%s kept the existing %s" % (cmd[0], target))
        alt = os.path.join(tmp, "report-1.txt")
        check(os.path.getsize(alt) > 0, "%s wrote report-1.txt" % cmd[0])
        os.unlink(alt)
    # a device is written in place
    op("summary", "-i", db, "-o", "/dev/null")
    check(os.path.exists("/dev/null") and not os.path.exists("/dev/null-1"), "/dev/null written in place")


def case_launcher_outputs(tmp):
    """The launcher's post-run outputs (.json, _stats.csv, ...) never replace an existing file."""
    if not A.victim or not os.path.exists(A.victim):
        print("SKIP: omniprof run / tool_victim not built")
        sys.exit(77)
    d = os.path.join(tmp, "run")
    os.makedirs(d)
    mine = {}
    for f in ("n_results.json", "n_marker_api_stats.csv", "n_domain_stats.csv"):
        with open(os.path.join(d, f), "w") as fh:
            fh.write("the user's own %s\n" % f)
        mine[f] = digest(os.path.join(d, f))
    p = run([A.omniprof, "run", "--marker-trace", "--stats", "-f", "rocpd", "json", "-d", d, "-o", "n", "--",
             A.victim, "normal", "3"], rc=None)
    if not os.path.exists(os.path.join(d, "n_results.db")):
        print("SKIP: omniprof run did not produce a database (%d): %s" % (p.returncode, p.stderr[-300:]))
        sys.exit(77)
    check(p.returncode == 0, "run exits 0: %s" % p.stderr[-500:])
    for f, h in mine.items():
        check(digest(os.path.join(d, f)) == h, "the user's %s is intact" % f)
    with open(os.path.join(d, "n-1_results.json"), "rb") as fh:
        check(json.loads(fh.read())["traceEvents"], "the run's JSON went to n-1_results.json")
    check(os.path.getsize(os.path.join(d, "n-1_domain_stats.csv")) > 0, "the run's stats went to n-1_*")


# ---- one input check ----------------------------------------------------------------------------

def case_duplicate_inputs(tmp):
    """One database given twice is refused by every command (summary counted it twice)."""
    a = os.path.join(tmp, "a.db")
    gen(a, "--events", 2000)
    copy = os.path.join(tmp, "copy.db")
    shutil.copy(a, copy)
    for pair in ((a, a), (a, copy)):
        for argv in (["summary", "-i", *pair], ["convert", "-i", *pair, "-f", "csv", "-d", tmp, "-o", "c"],
                     ["query", "-i", *pair, "--sql", "SELECT 1"], ["merge", "-i", *pair, "-o", os.path.join(tmp, "m.db")]):
            p = op(*argv, rc=2)
            check(os.path.basename(pair[1]).encode() in p.stderr and (b"twice" in p.stderr or b"also in" in p.stderr),
                  "%s %s: refused naming the input: %s" % (argv[0], pair, p.stderr))
    check(not os.path.exists(os.path.join(tmp, "m.db")) and not glob.glob(os.path.join(tmp, "c_*")), "nothing written")
    p = pym("summary", "-i", a, a, rc=2)
    check(b"twice" in p.stderr, "python -m omniprof summary refuses too")


def case_empty_inputs(tmp):
    """An input without rocpd tables (0 bytes, or tables but not ours: a process killed before
    its schema) is skipped with one warning naming it; --strict refuses it."""
    good = os.path.join(tmp, "good.db")
    c = gen(good, "--events", 2000)
    zero = os.path.join(tmp, "zero.db")
    open(zero, "wb").close()
    bare = os.path.join(tmp, "bare.db")
    con = sqlite3.connect(bare)
    con.execute("CREATE TABLE t(x)")
    con.commit()
    con.close()
    ins = [zero, good, bare]
    cmds = {
        "query": ["query", "-i", *ins, "-f", "csv", "--sql", "SELECT count(*) FROM kernels"],
        "summary": ["summary", "-i", *ins, "-f", "csv"],
        "convert": ["convert", "-i", *ins, "-f", "csv", "-d", tmp, "-o", "c"],
        "merge": ["merge", "-i", *ins, "-o", os.path.join(tmp, "m.db")],
    }
    for name, argv in cmds.items():
        p = op(*argv)
        for skipped in (zero, bare):
            check(p.stderr.count(skipped.encode()) == 1 and b"skipped" in p.stderr,
                  "%s: one warning naming %s: %s" % (name, skipped, p.stderr))
        check(good.encode() not in p.stderr, "%s: no word about the good input" % name)
        if name == "query":
            check(csv_count(p) == c["kernels"], "query counts the good input's kernels")
        s = op(*(argv[:1] + ["--strict"] + argv[1:]), rc=2)
        check(zero.encode() in s.stderr and b"--strict" in s.stderr, "%s --strict refuses: %s" % (name, s.stderr))
    check(kernels(os.path.join(tmp, "m.db")) == c["kernels"], "merge kept the good input's rows")
    code = ("import omniprof, sys\n"
            "try:\n"
            "    omniprof.summary(sys.argv[1:], strict=True)\n"
            "except omniprof.Error as e:\n"
            "    print('ERROR', e.status, e)\n"
            "print(len(omniprof.query(sys.argv[1:], 'SELECT * FROM kernels')))\n")
    out = py(code, *ins).stdout.decode().splitlines()
    check(out[0].startswith("ERROR 2") and zero in out[0], "Python strict summary raises Error naming it: %s" % out)
    check(int(out[1]) == c["kernels"], "Python query skips the empty inputs: %s" % out)


# ---- interrupted commands leave nothing --------------------------------------------------------

def wait_for(pattern, proc, timeout=120):
    """Polls for a file matching `pattern` while proc runs; returns it (None if proc ended)."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        hits = glob.glob(pattern)
        if hits:
            return hits[0]
        if proc.poll() is not None:
            return None
        time.sleep(0.005)
    raise AssertionError("no file %s appeared in %d s" % (pattern, timeout))


def interrupt(argv, pattern, sig, env=None):
    """Runs argv, sends sig once a file matching pattern exists, returns the exit status."""
    proc = subprocess.Popen([str(a) for a in argv], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seen = wait_for(pattern, proc)
    check(seen is not None, "%s: the temporary file appeared before the end" % argv[1])
    proc.send_signal(sig)
    err = proc.communicate(timeout=120)[1]
    return proc.returncode, err


def case_query_interrupted(tmp):
    """A query over more than 9 inputs merges them into a temporary database in $TMPDIR;
    SIGINT or SIGTERM during the query leaves no file there."""
    dbs = []
    for i in range(12):
        dbs.append(os.path.join(tmp, "r%02d.db" % i))
        gen(dbs[-1], "--events", 300, "--pid", 1000 + i, "--seed", i)
    slow = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000000000) "
            "SELECT count(*) FROM c")
    for sig in (signal.SIGINT, signal.SIGTERM):
        td = os.path.join(tmp, "tmpdir-%d" % sig)
        os.makedirs(td)
        env = dict(os.environ, TMPDIR=td)
        rc, err = interrupt([A.omniprof, "query", "-i", *dbs, "--sql", slow], os.path.join(td, "omniprof-query-*"),
                            sig, env)
        check(rc == -sig, "query died of signal %d (status %d): %s" % (sig, rc, err[-300:]))
        check(os.listdir(td) == [], "nothing left in $TMPDIR after signal %d: %s" % (sig, os.listdir(td)))


def cpu_seconds(pid):
    """CPU time (user + system) process pid has used, from /proc/PID/stat."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def case_python_query_interrupted(tmp):
    """Ctrl-C (SIGINT) stops a long query of the Python package: `python3 -m omniprof query` (the C
    query through ctypes), omniprof.query() and a connect() connection's execute() each end with
    KeyboardInterrupt (status -SIGINT / 130) within 30 s of the signal, where the query alone would
    run for minutes. The signal is sent once the process has spent 1 s of CPU time, i.e. while
    SQLite computes the query (opening the input takes milliseconds)."""
    db = os.path.join(tmp, "q.db")
    gen(db, "--events", 300, "--pid", 4242)
    slow = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 4000000000) "
            "SELECT count(*) FROM c")
    variants = (
        ("python3 -m omniprof query", [sys.executable, "-m", "omniprof", "query", "-i", db, "--sql", slow]),
        ("omniprof.query()", [sys.executable, "-c", "import omniprof, sys; omniprof.query([sys.argv[1]], sys.argv[2])",
                              db, slow]),
        ("connect().execute()", [sys.executable, "-c", "import omniprof, sys; "
                                 "omniprof.connect(sys.argv[1]).execute(sys.argv[2]).fetchall()", db, slow]),
    )
    for what, argv in variants:
        proc = subprocess.Popen(argv, env=pyenv(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            t0 = time.time()
            while proc.poll() is None and cpu_seconds(proc.pid) < 1.0:
                check(time.time() - t0 < 300, "%s: 1 s of CPU time within 300 s" % what)
                time.sleep(0.01)
            check(proc.poll() is None, "%s: still querying after 1 s of CPU time (status %s: %s)" % (
                what, proc.returncode, proc.stderr.read()[-500:] if proc.returncode is not None else ""))
            proc.send_signal(signal.SIGINT)
            t1 = time.time()
            try:
                out, err = proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                raise AssertionError("%s: still running 30 s after SIGINT (the query ignored it)" % what)
            print("%s: ended %.2f s after SIGINT, status %d" % (what, time.time() - t1, proc.returncode))
            check(proc.returncode in (-signal.SIGINT, 130), "%s: status %d after SIGINT (KeyboardInterrupt: -2 or 130): "
                  "%s" % (what, proc.returncode, err[-500:]))
            check(b"KeyboardInterrupt" in err, "%s: KeyboardInterrupt: %s" % (what, err[-500:]))
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def case_convert_interrupted(tmp):
    """SIGINT during a conversion or a merge leaves neither the output nor its temporary file."""
    db = os.path.join(tmp, "big.db")
    # 400,000 events: the JSON conversion takes ~2 s and the merge ~1.5 s here, far longer than
    # the 5 ms between two looks for the temporary file (1.5 M took 12 s to generate)
    gen(db, "--events", 400000, "--threads", 4, "--streams", 4)
    d = os.path.join(tmp, "out")
    os.makedirs(d)
    rc, err = interrupt([A.omniprof, "convert", "-i", db, "-f", "json", "-d", d, "-o", "b"],
                        os.path.join(d, ".b_results.json.tmp-*"), signal.SIGINT)
    check(rc == -signal.SIGINT, "convert died of SIGINT (status %d): %s" % (rc, err[-300:]))
    check(os.listdir(d) == [], "no output and no temporary file: %s" % os.listdir(d))
    rc, err = interrupt([A.omniprof, "merge", "-i", db, "-o", os.path.join(d, "m.db")], os.path.join(d, "m.db.tmp-*"),
                        signal.SIGTERM)
    check(rc == -signal.SIGTERM, "merge died of SIGTERM (status %d): %s" % (rc, err[-300:]))
    check(os.listdir(d) == [], "no merged database and no temporary file: %s" % os.listdir(d))


def case_launcher_interrupted(tmp):
    """SIGINT to the launcher while it converts after the run: the launcher stops, the output it
    was writing and its temporary file are gone, the database is kept whole."""
    if not A.victim or not os.path.exists(A.victim):
        print("SKIP: omniprof run / tool_victim not built")
        sys.exit(77)
    d = os.path.join(tmp, "run")
    os.makedirs(d)
    rc, err = interrupt([A.omniprof, "run", "--marker-trace", "-f", "rocpd", "json", "-d", d, "-o", "n", "--",
                         A.victim, "normal", 300000], os.path.join(d, ".n_results.json.tmp-*"), signal.SIGINT)
    check(rc == -signal.SIGINT, "the launcher died of SIGINT (status %d): %s" % (rc, err[-300:]))
    left = sorted(f for f in os.listdir(d) if not f.startswith("n_results.db"))
    check(left == [], "no JSON output and no temporary file left: %s" % left)
    check(os.path.getsize(os.path.join(d, "n_results.db")) > 0, "the database is kept")
    con = sqlite3.connect("file:%s?mode=ro" % os.path.join(d, "n_results.db"), uri=True)
    try:
        check(con.execute("PRAGMA integrity_check").fetchone()[0] == "ok", "the database is whole")
    finally:
        con.close()


# ---- the Python package ---------------------------------------------------------------------------

def case_python_refusals(tmp):
    """The Python package raises omniprof.Error naming the input, opens inputs read-only without
    leaving -wal/-shm files, and refuses writes."""
    a = os.path.join(tmp, "a.db")
    c = gen(a, "--events", 2000)
    con = sqlite3.connect(a)  # a finished database in WAL mode, as omniprof run leaves it
    check(con.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal", "WAL mode")
    con.close()
    check(not os.path.exists(a + "-wal"), "no -wal before")
    odd = os.path.join(tmp, "it's a \"db\" %.db")
    shutil.copy(a, odd)
    os.unlink(a)
    b = os.path.join(tmp, "b.db")
    c2 = gen(b, "--events", 1500, "--pid", 77, "--seed", 5)
    txt = os.path.join(tmp, "notes.txt")
    with open(txt, "w") as f:
        f.write("not a database\n")
    code = r"""
import omniprof, sys, sqlite3
odd, b, txt = sys.argv[1:4]
con = omniprof.connect(odd, b)
print("kernels", con.execute("SELECT count(*) FROM kernels").fetchone()[0])
for sql in ("DELETE FROM rocpd_region", "ATTACH 'x.db' AS x", "PRAGMA journal_mode=DELETE"):
    try:
        con.execute(sql)
        print("WROTE", sql)
    except sqlite3.DatabaseError:
        pass
con.close()
for args in ([odd, odd], [txt], [odd, txt]):
    try:
        omniprof.connect(*args)
        print("OPENED", args)
    except omniprof.Error as e:
        print("ERROR", e.status, e)
for fn in (lambda: omniprof.query([txt], "SELECT 1"), lambda: omniprof.summary([txt]),
           lambda: omniprof.merge([odd, txt], odd + ".m"), lambda: omniprof.query([odd], "DELETE FROM rocpd_region")):
    try:
        fn()
        print("NO ERROR")
    except omniprof.Error as e:
        print("ERROR", e.status, e)
"""
    out = py(code, odd, b, txt).stdout.decode().splitlines()
    check(out[0] == "kernels %d" % (c["kernels"] + c2["kernels"]), "union over an odd path: %s" % out[0])
    check(not [l for l in out if l.startswith(("WROTE", "OPENED", "NO ERROR"))], "every refusal raised: %s" % out)
    errs = [l for l in out if l.startswith("ERROR")]
    check(len(errs) == 7, "7 errors: %s" % errs)
    check(odd in errs[0] and "twice" in errs[0], "the same input twice, named: %s" % errs[0])
    for e in errs[1:6]:
        check(txt in e and "not a SQLite database" in e and e.startswith("ERROR 2"), "names the bad input: %s" % e)
    check("read-only" in errs[6] or "refused" in errs[6], "write SQL refused: %s" % errs[6])
    check(not os.path.exists(odd + "-wal") and not os.path.exists(odd + "-shm"), "no -wal/-shm beside the input")
    check(not os.path.exists(odd + ".m"), "no merge output")


CASES = {k[5:]: v for k, v in globals().items() if k.startswith("case_")}


def main():
    global A
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=sorted(CASES))
    ap.add_argument("--omniprof", required=True)
    ap.add_argument("--gen", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--victim", default="")
    A = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="omniprof-test-trust-")
    cwd = os.getcwd()
    try:
        os.chdir(tmp)
        CASES[A.case](tmp)
    finally:
        os.chdir(cwd)
        shutil.rmtree(tmp, ignore_errors=True)
    print("ok: output.trust_%s" % A.case)


if __name__ == "__main__":
    main()
