#!/usr/bin/env python3
"""Tests of libomniprof-output, the omniprof convert/merge/summary/query commands and the Python
package (tests/output/CMakeLists.txt runs one case per CTest test: output.<case>).

usage: test_output.py CASE --omniprof BIN --gen GEN --lib LIB --proto PROTO --python PYDIR

Databases come from the synthetic generator (bench/output/gen_db.c, the real schema), whose last
output line gives the exact row counts; every assertion compares exact counts, names or values.
"""

import argparse
import csv
import glob
import io
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile

A = None  # parsed arguments


def run(argv, rc=0, cwd=None, env=None):
    p = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if rc is not None and p.returncode != rc:
        raise AssertionError("%s: exit %d (expected %d)\nstdout: %s\nstderr: %s" % (
            " ".join(map(str, argv)), p.returncode, rc, p.stdout[-2000:], p.stderr[-2000:]))
    return p


def gen(path, *args):
    out = run([A.gen, path] + [str(a) for a in args]).stdout.decode().strip().splitlines()[-1]
    return {k: int(v) for k, v in (kv.split("=") for kv in out.split())}


def op(*args, rc=0):
    return run([A.omniprof] + [str(a) for a in args], rc=rc)


def pyenv():
    env = dict(os.environ)
    env["PYTHONPATH"] = A.python
    env["OMNIPROF_OUTPUT_LIB"] = A.lib
    return env


def pym(*args, rc=0):
    return run([sys.executable, "-m", "omniprof"] + [str(a) for a in args], rc=rc, env=pyenv())


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def eq(a, b, what):
    if a != b:
        raise AssertionError("%s: %r != %r" % (what, a, b))


def sql1(db, q):
    con = sqlite3.connect(db)
    try:
        return con.execute(q).fetchone()[0]
    finally:
        con.close()


def table(db, base):
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT name FROM sqlite_schema WHERE type='table' AND name LIKE ? ESCAPE '\\'",
                           (base.replace("_", "\\_") + "\\_%",)).fetchone()[0]
    finally:
        con.close()


def decode(pftrace):
    with open(pftrace, "rb") as f:
        p = subprocess.run(["protoc", "--decode=perfetto.protos.Trace", "-I", os.path.dirname(A.proto),
                            os.path.basename(A.proto)], stdin=f, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    check(p.returncode == 0, "protoc could not decode %s: %s" % (pftrace, p.stderr[-1000:]))
    check(b"invalid UTF-8" not in p.stderr, "protoc: a string field holds invalid UTF-8: %s" % p.stderr[-300:])
    return p.stdout.decode("utf-8", "surrogateescape")


def pf_counts(text):
    return {
        "begin": text.count("type: TYPE_SLICE_BEGIN"),
        "end": text.count("type: TYPE_SLICE_END"),
        "instant": text.count("type: TYPE_INSTANT"),
        "counter": text.count("type: TYPE_COUNTER"),
        "flow": len(re.findall(r"^\s+flow_ids:", text, re.M)),
        "term": len(re.findall(r"^\s+terminating_flow_ids:", text, re.M)),
    }


def read_csv(path):
    with open(path, "rb") as f:
        data = f.read().decode("utf-8", "surrogateescape")
    return list(csv.reader(io.StringIO(data, newline="")))


# ---- cases -----------------------------------------------------------------------------------


def case_pftrace(tmp):
    """Every Perfetto trace decodes against Perfetto's schema; slices, instants, counters and
    flows match the database rows; descriptors name process and threads."""
    c = gen(os.path.join(tmp, "a.db"), "--events", 6000, "--threads", 3, "--streams", 2, "--pid", 777)
    op("convert", "-i", os.path.join(tmp, "a.db"), "-f", "pftrace", "-d", tmp, "-o", "t")
    text = decode(os.path.join(tmp, "t_results.pftrace"))
    n = pf_counts(text)
    eq(n["begin"], c["regions"] + c["kernels"] + c["copies"], "slice begins")
    eq(n["end"], n["begin"], "slice ends")
    eq(n["instant"], c["samples"], "instants")
    eq(n["counter"], c["allocs"] + c["pmc"] + c["metrics"], "counter values")
    # every kernel/copy ends the flow its API call starts (each has its own call here); calls that
    # launch nothing start none (tests/compat checks flows id by id at 1, 2 and 8 threads)
    eq(n["term"], c["kernels"] + c["copies"], "terminating flows")
    eq(n["flow"], n["term"], "flows from API calls")
    check("pid: 777" in text, "process descriptor with pid 777")
    for t in range(3):
        check('thread_name: "worker-%d"' % t in text, "thread descriptor worker-%d" % t)
    check('name: "GPU 1 Stream 1"' in text, "GPU stream track")
    check('name: "cudaLaunchKernel"' in text, "interned event name")
    check('name: "process.rss_bytes"' in text, "metric counter track")
    check("sequence_flags: 1" in text and "first_packet_on_sequence: true" in text, "sequence start")


def case_counts(tmp):
    """Event counts agree across the database, Perfetto, JSON and CSV."""
    db = os.path.join(tmp, "a.db")
    c = gen(db, "--events", 8000, "--weird")
    op("convert", "-i", db, "-f", "pftrace", "json", "csv", "-d", tmp, "-o", "x")
    n = pf_counts(decode(os.path.join(tmp, "x_results.pftrace")))
    with open(os.path.join(tmp, "x_results.json"), "rb") as f:
        j = json.loads(f.read().decode("utf-8"))
    ev = j["traceEvents"]
    X = [e for e in ev if e["ph"] == "X"]
    eq(len(X), n["begin"], "JSON complete events vs Perfetto slices")
    eq(len([e for e in X if e.get("cat") == "KERNEL_DISPATCH"]), c["kernels"], "JSON kernels")
    eq(len([e for e in X if e.get("cat") == "MEMORY_COPY"]), c["copies"], "JSON copies")
    eq(len([e for e in ev if e["ph"] == "i"]), c["samples"], "JSON instants")
    eq(len([e for e in ev if e["ph"] == "C"]), n["counter"], "JSON counters")
    eq(len([e for e in ev if e["ph"] == "s"]), n["flow"], "JSON flow starts")
    eq(len([e for e in ev if e["ph"] == "f"]), n["term"], "JSON flow ends")
    rows = lambda f: len(read_csv(os.path.join(tmp, "x_" + f))) - 1
    eq(rows("kernel_trace.csv"), c["kernels"], "CSV kernels")
    eq(rows("memory_copy_trace.csv"), c["copies"], "CSV copies")
    eq(rows("memory_allocation_trace.csv"), c["allocs"], "CSV allocations")
    eq(rows("counter_collection.csv"), c["pmc"], "CSV counters")
    eq(rows("metric_trace.csv"), c["metrics"], "CSV metrics")
    api = rows("cuda_runtime_api_trace.csv") + rows("cuda_driver_api_trace.csv")
    marks = c["samples"] - (rows("cpu_sample_trace.csv"))
    eq(api + rows("marker_api_trace.csv") - marks, c["regions"], "CSV regions")
    eq(sql1(db, 'SELECT count(*) FROM "%s"' % table(db, "rocpd_kernel_dispatch")), c["kernels"], "db kernels")
    # exact headers (rocprofv3 generateCSV.cpp)
    eq(",".join(read_csv(os.path.join(tmp, "x_cuda_runtime_api_trace.csv"))[0]),
       "Domain,Function,Process_Id,Thread_Id,Correlation_Id,Start_Timestamp,End_Timestamp", "api header")
    eq(",".join(read_csv(os.path.join(tmp, "x_kernel_trace.csv"))[0]),
       "Kind,Agent_Id,Queue_Id,Stream_Id,Thread_Id,Dispatch_Id,Kernel_Id,Kernel_Name,Correlation_Id,"
       "Start_Timestamp,End_Timestamp,LDS_Block_Size,Scratch_Size,VGPR_Count,Accum_VGPR_Count,SGPR_Count,"
       "Workgroup_Size_X,Workgroup_Size_Y,Workgroup_Size_Z,Grid_Size_X,Grid_Size_Y,Grid_Size_Z", "kernel header")
    eq(",".join(read_csv(os.path.join(tmp, "x_memory_copy_trace.csv"))[0]),
       "Kind,Direction,Stream_Id,Source_Agent_Id,Destination_Agent_Id,Correlation_Id,Start_Timestamp,End_Timestamp",
       "copy header")
    eq(",".join(read_csv(os.path.join(tmp, "x_memory_allocation_trace.csv"))[0]),
       "Kind,Operation,Agent_Id,Allocation_Size,Address,Correlation_Id,Start_Timestamp,End_Timestamp", "alloc header")


def case_names(tmp):
    """Names with quotes, a 10 KB template name and non-UTF-8 bytes survive every format."""
    db = os.path.join(tmp, "w.db")
    gen(db, "--events", 3000, "--weird")
    con = sqlite3.connect(db)
    con.text_factory = bytes
    ks = table(db, "rocpd_info_kernel_symbol")
    names = [r[0] for r in con.execute('SELECT kernel_name FROM "%s"' % ks)]
    con.close()
    big = [n for n in names if len(n) > 10000][0]
    bad = [n for n in names if b"\xff" in n][0]
    op("convert", "-i", db, "-f", "pftrace", "json", "csv", "--stats", "-d", tmp, "-o", "w")
    # CSV: exact bytes after unquoting
    rows = read_csv(os.path.join(tmp, "w_kernel_trace.csv"))
    got = {r[7].encode("utf-8", "surrogateescape") for r in rows[1:]}
    check(big in got, "10 KB kernel name intact in CSV")
    check(bad in got, "non-UTF-8 / quoted / comma / newline kernel name intact in CSV")
    stats = read_csv(os.path.join(tmp, "w_kernel_stats.csv"))
    eq(stats[0], ["Name", "Calls", "TotalDurationNs", "AverageNs", "Percentage", "MinNs", "MaxNs", "StdDev"], "stats header")
    check(bad in {r[0].encode("utf-8", "surrogateescape") for r in stats[1:]}, "name intact in stats CSV")
    # JSON: valid JSON; \uDCxx escapes give the bytes back (surrogateescape)
    with open(os.path.join(tmp, "w_results.json"), "rb") as f:
        j = json.loads(f.read().decode("utf-8"))
    jn = {e["name"].encode("utf-8", "surrogateescape") for e in j["traceEvents"] if e.get("cat") == "KERNEL_DISPATCH"}
    check(big in jn and bad in jn, "names intact in JSON")
    # Perfetto: decodes; valid UTF-8 kept, invalid bytes as \xNN
    text = decode(os.path.join(tmp, "w_results.pftrace"))
    check(big.decode().replace('"', '\\"') in text, "10 KB name intact in Perfetto")
    check('k_\\\\xFF\\\\xFE_bytes_\\"quoted\\",comma\\nnewline' in text, "escaped name in Perfetto")
    # summary (markdown) keeps the name too; a byte that is not UTF-8 shows as the text \xHH (a
    # terminal that is not UTF-8 would take such a byte as a control: output.terminal_names)
    out = op("summary", "-i", db, "--format", "md").stdout
    check(big in out and b'k_\\xff\\xfe_bytes_"quoted",comma newline' in out, "names in the summary")


def case_merge3(tmp):
    """merge of 3 databases keeps every row, every guid and pid; views span them."""
    dbs = []
    tot = {}
    for i in range(3):
        p = os.path.join(tmp, "p%d.db" % i)
        c = gen(p, "--events", 2000 + 500 * i, "--pid", 1000 + i, "--seed", i)
        dbs.append(p)
        for k, v in c.items():
            tot[k] = tot.get(k, 0) + v
    m = os.path.join(tmp, "m.db")
    op("merge", "-i", *dbs, "-o", m)
    con = sqlite3.connect(m)
    q = lambda s: con.execute(s).fetchone()[0]
    eq(q("SELECT count(*) FROM rocpd_region"), tot["regions"], "merged regions")
    eq(q("SELECT count(*) FROM rocpd_kernel_dispatch"), tot["kernels"], "merged kernels")
    eq(q("SELECT count(*) FROM rocpd_memory_copy"), tot["copies"], "merged copies")
    eq(q("SELECT count(*) FROM rocpd_sample"), tot["samples"], "merged samples")
    eq(q("SELECT count(*) FROM omniprof_metric"), tot["metrics"], "merged metrics")
    eq(q("SELECT count(*) FROM kernels"), tot["kernels"], "merged kernels view")
    eq(q("SELECT count(*) FROM regions"), tot["regions"], "merged regions view")
    eq(q("SELECT count(DISTINCT guid) FROM rocpd_region"), 3, "guids kept")
    eq(sorted(r[0] for r in con.execute("SELECT pid FROM rocpd_info_process")), [1000, 1001, 1002], "pids kept")
    # one table set: the file's own uuid (AMD's importer finds the tables by it) and each process's
    eq(q("SELECT count(*) FROM rocpd_metadata WHERE tag='uuid'"), 4, "one uuid per process and the file's")
    eq(q("SELECT count(*) FROM sqlite_master WHERE type='table' AND name LIKE 'rocpd_region%'"), 1, "one table set")
    mt = q("SELECT name FROM sqlite_master WHERE type='table' AND name LIKE 'omniprof\\_merged%' ESCAPE '\\'")
    eq(q('SELECT count(DISTINCT set_index) FROM "%s"' % mt), 3, "three processes recorded")
    eq(q("SELECT count(DISTINCT id) FROM rocpd_region"), tot["regions"], "region ids unique")
    con.close()
    # the merged db converts like the three inputs
    op("convert", "-i", m, "-f", "pftrace", "-d", tmp, "-o", "m")
    n = pf_counts(decode(os.path.join(tmp, "m_results.pftrace")))
    eq(n["begin"], tot["regions"] + tot["kernels"] + tot["copies"], "merged pftrace slices")
    # a tree merge (merge of a merge and an input) reads like the flat merge and like the inputs:
    # every process apart, with the ids it wrote (CSV ids, stream names), its own clock rows
    part, tree = os.path.join(tmp, "part.db"), os.path.join(tmp, "tree.db")
    op("merge", "-i", dbs[0], dbs[1], "-o", part)
    op("merge", "-i", part, dbs[2], "-o", tree)
    for name, db in (("inputs", None), ("flat", m), ("tree", tree)):
        op("convert", "-i", *(dbs if db is None else [db]), "-f", "csv", "json", "-d", os.path.join(tmp, "cv-" + name))
    for f in ("out_kernel_trace.csv", "out_memory_copy_trace.csv", "out_counter_collection.csv", "out_results.json"):
        texts = [open(os.path.join(tmp, "cv-" + n, f), "rb").read() for n in ("inputs", "flat", "tree")]
        check(texts[0] == texts[1] == texts[2], f"{f}: the flat and the tree merge convert like the inputs")
    summaries = [op("summary", "-i", *x).stdout for x in (dbs, [m], [tree])]
    check(summaries[0] == summaries[1] == summaries[2], "the flat and the tree merge summarize like the inputs")
    eq(sql1(m, "SELECT count(*) FROM rocpd_kernel_dispatch K JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id "
               "AND S.guid = K.guid"), tot["kernels"], "every dispatch finds its kernel symbol by (id, guid)")
    # refuses to overwrite
    p = op("merge", "-i", dbs[0], "-o", m, rc=2)
    check(b"refusing to overwrite" in p.stderr, "refuses an existing output")
    p = op("merge", "-i", dbs[0], dbs[1], "-o", dbs[1], rc=2)
    check(b"refusing to overwrite an input" in p.stderr, "refuses to overwrite an input")
    p = op("merge", "-i", dbs[0], dbs[0], "-o", os.path.join(tmp, "dup.db"), rc=2)
    check(b"given twice" in p.stderr, "refuses the same database twice")
    p = op("convert", "-i", dbs[0], dbs[0], "-f", "csv", "-d", os.path.join(tmp, "dupconv"), rc=2)
    check(b"given twice" in p.stderr, "convert refuses the same database twice")


def case_merge300(tmp):
    """merge of 300 databases (30x SQLite's attach limit) keeps every row; query and the Python
    package work over more than 9 inputs. Sanitizer builds merge 100 (10x the attach limit: the
    same staged paths), so that the test fits its time on a busy machine under ASan."""
    n = 100 if A.sanitized else 300
    dbs, regions, kernels = [], 0, 0
    for i in range(n):
        p = os.path.join(tmp, "r%03d.db" % i)
        c = gen(p, "--events", 40, "--threads", 1, "--streams", 1, "--pid", 20000 + i, "--seed", i)
        dbs.append(p)
        regions += c["regions"]
        kernels += c["kernels"]
    m = os.path.join(tmp, "m%d.db" % n)
    op("merge", "-i", *dbs, "-o", m)
    con = sqlite3.connect(m)
    eq(con.execute("SELECT count(*) FROM rocpd_region").fetchone()[0], regions, "regions of %d" % n)
    eq(con.execute("SELECT count(*) FROM rocpd_kernel_dispatch").fetchone()[0], kernels, "kernels of %d" % n)
    eq(con.execute("SELECT count(DISTINCT pid) FROM rocpd_info_process").fetchone()[0], n, "%d processes" % n)
    con.close()
    out = op("query", "-i", *dbs[:25], "-f", "csv", "--sql", "SELECT count(DISTINCT pid) FROM regions").stdout
    eq(out.decode().split(), ["count(DISTINCT", "pid)", "25"], "query over 25 inputs (staged)")
    if A.sanitized:
        return
    env = pyenv()
    code = ("import omniprof,sys; c=omniprof.connect(*sys.argv[1:]); "
            "print(c.execute('SELECT count(*), count(DISTINCT pid) FROM regions').fetchone()); c.close()")
    p = run([sys.executable, "-c", code] + dbs[:12], env=env)
    r12 = sum(sql1(d, 'SELECT count(*) FROM "%s"' % table(d, "rocpd_region")) for d in dbs[:12])
    eq(p.stdout.decode().strip(), "(%d, 12)" % r12, "Python connect over 12 inputs")


def case_window(tmp):
    """Time windows keep exactly the events inside (ns, %, markers, inclusive)."""
    db = os.path.join(tmp, "a.db")
    gen(db, "--events", 5000)
    R, K = table(db, "rocpd_region"), table(db, "rocpd_kernel_dispatch")
    lo = sql1(db, 'SELECT min(s) FROM (SELECT min(start) s FROM "%s" UNION ALL SELECT min(start) FROM "%s" '
                  'UNION ALL SELECT min(timestamp) FROM "%s")' % (R, K, table(db, "rocpd_sample")))
    hi = sql1(db, 'SELECT max(e) FROM (SELECT max("end") e FROM "%s" UNION ALL SELECT max("end") FROM "%s" '
                  'UNION ALL SELECT max(timestamp) FROM "%s")' % (R, K, table(db, "rocpd_sample")))
    t0, t1 = lo + (hi - lo) // 4, lo + (hi - lo) // 2

    def slices(args, name):
        op("convert", "-i", db, "-f", "pftrace", "csv", "-d", tmp, "-o", name, *args)
        k = len(read_csv(os.path.join(tmp, name + "_kernel_trace.csv"))) - 1
        return pf_counts(decode(os.path.join(tmp, name + "_results.pftrace")))["begin"], k

    inside = lambda t, a, b: sql1(db, 'SELECT count(*) FROM "%s" WHERE start >= %d AND "end" <= %d' % (t, a, b))
    either = lambda t, a, b: sql1(db, 'SELECT count(*) FROM "%s" WHERE (start BETWEEN %d AND %d) OR ("end" BETWEEN %d AND %d)'
                                  % (t, a, b, a, b))
    C = table(db, "rocpd_memory_copy")
    n, k = slices(["--start", t0, "--end", t1], "ns")
    eq(k, inside(K, t0, t1), "kernels inside [t0, t1]")
    eq(n, inside(R, t0, t1) + inside(K, t0, t1) + inside(C, t0, t1), "slices inside [t0, t1]")
    n, k = slices(["--start", t0, "--end", t1, "--inclusive"], "inc")
    eq(n, either(R, t0, t1) + either(K, t0, t1) + either(C, t0, t1), "slices with an endpoint inside")
    p0, p1 = lo + int((hi - lo) * 0.25), lo + int((hi - lo) * 0.5 + 0.5)
    n, k = slices(["--start", "25%", "--end", "50%"], "pct")
    eq(k, inside(K, p0, p1), "kernels inside 25%..50%")
    # marker window: the first "phase one" range
    S = table(db, "rocpd_string")
    ms, me = sql1(db, 'SELECT min(R.start) FROM "%s" R JOIN "%s" S ON S.id = R.name_id WHERE S.string = \'phase one\'' % (R, S)), None
    me = sql1(db, 'SELECT min(R."end") FROM "%s" R JOIN "%s" S ON S.id = R.name_id WHERE S.string = \'phase one\' AND R."end" >= %d'
              % (R, S, ms))
    n, k = slices(["--start-marker", "phase one", "--end-marker", "phase one"], "mk")
    eq(k, inside(K, ms, me), "kernels inside the marker range")
    check(k > 0, "the marker window holds kernels")
    p = op("convert", "-i", db, "-f", "csv", "-d", tmp, "--start-marker", "no such marker", rc=2)
    check(b"no region or mark" in p.stderr, "unknown marker is an error")
    p = op("convert", "-i", db, "-f", "csv", "-d", tmp, "--start", "abc", rc=2)
    check(b"expected nanoseconds" in p.stderr, "bad --start value")
    # not numbers, or beyond a 64-bit time: refused, never converted (fuzz.window found NaN reaching
    # a float-to-int conversion)
    for bad in ("nan", "inf", "-infinity", "1e300", "nan%"):
        p = op("summary", "-i", db, "--start", bad, rc=2)
        check(b"expected nanoseconds in" in p.stderr, "--start %s refused" % bad)
    # the window applies to summary too
    out = op("summary", "-i", db, "-f", "csv", "--start", t0, "--end", t1).stdout.decode()
    calls = sum(int(r[3]) for r in csv.reader(io.StringIO(out)) if len(r) > 3 and r[2] == "KERNEL_DISPATCH")
    eq(calls, inside(K, t0, t1), "summary kernel calls inside the window")


def case_python(tmp):
    """The Python API and `python3 -m omniprof` give the same results as the binary."""
    dbs = []
    for i in range(2):
        p = os.path.join(tmp, "p%d.db" % i)
        gen(p, "--events", 3000, "--pid", 50 + i, "--seed", i + 7, "--weird")
        dbs.append(p)
    q = "SELECT name, count(*) AS n, sum(duration) AS d FROM kernels GROUP BY name ORDER BY name"
    a = op("query", "-i", *dbs, "-f", "csv", "--sql", q).stdout
    b = pym("query", "-i", *dbs, "-f", "csv", "--sql", q).stdout
    eq(a, b, "query csv: binary vs python -m")
    a = op("summary", "-i", *dbs, "-f", "json", "-u", "usec", "-D").stdout
    b = pym("summary", "-i", *dbs, "-f", "json", "-u", "usec", "-D").stdout
    eq(a, b, "summary json: binary vs python -m")
    os.mkdir(os.path.join(tmp, "bin"))
    os.mkdir(os.path.join(tmp, "py"))
    op("convert", "-i", *dbs, "-f", "csv", "json", "pftrace", "-d", os.path.join(tmp, "bin"), "-o", "r")
    pym("convert", "-i", *dbs, "-f", "csv", "json", "pftrace", "-d", os.path.join(tmp, "py"), "-o", "r")
    fa = sorted(os.listdir(os.path.join(tmp, "bin")))
    eq(fa, sorted(os.listdir(os.path.join(tmp, "py"))), "convert: same files")
    for f in fa:
        with open(os.path.join(tmp, "bin", f), "rb") as x, open(os.path.join(tmp, "py", f), "rb") as y:
            eq(x.read() == y.read(), True, "convert: %s identical" % f)
    # the functions
    code = r"""
import omniprof, sys, csv, io, json
dbs = sys.argv[1:3]; tmp = sys.argv[3]
rows = omniprof.query(dbs, %r)
print(json.dumps([[r[0].encode('utf-8','surrogateescape').hex(), r[1], r[2]] for r in rows]))
s = omniprof.summary(dbs, units="usec", domain_summary=True)
print(json.dumps(s)[:0] + str(sum(len(t["rows"]) for t in s)))
omniprof.convert(dbs, ["csv"], output_dir=tmp + "/fn", output_name="r")
omniprof.merge(dbs, tmp + "/fn_merged.db")
try:
    omniprof.merge(dbs, tmp + "/fn_merged.db")
except omniprof.Error as e:
    print("merge-refused", e.status)
""" % q
    p = run([sys.executable, "-c", code] + dbs + [tmp], env=pyenv())
    lines = p.stdout.decode().splitlines()
    got = json.loads(lines[0])
    exp = [[r[0].encode("utf-8", "surrogateescape").hex(), int(r[1]), int(r[2])] for r in
           list(csv.reader(io.StringIO(a.decode("utf-8", "surrogateescape") and
                                       op("query", "-i", *dbs, "-f", "csv", "--sql", q).stdout.decode("utf-8", "surrogateescape"),
                                       newline="")))[1:]]
    eq(got, exp, "omniprof.query rows vs binary csv")
    nrows = sum(len(t["rows"]) for t in json.loads(op("summary", "-i", *dbs, "-f", "json", "-u", "usec", "-D").stdout))
    eq(int(lines[1]), nrows, "omniprof.summary tables vs binary")
    eq(lines[2], "merge-refused 2", "omniprof.merge refuses an existing output")
    for f in sorted(os.listdir(os.path.join(tmp, "fn"))):
        with open(os.path.join(tmp, "fn", f), "rb") as x, open(os.path.join(tmp, "bin", f), "rb") as y:
            eq(x.read() == y.read(), True, "omniprof.convert: %s same as binary" % f)
    p = pym("query", "-i", dbs[0], "--sql", "DROP TABLE x", rc=2)
    check(b"read-only" in p.stderr, "python -m refuses writes")
    p = pym("nosuch", rc=2)
    # the usage's commands come from the library's command table, as the binary's --help: each
    # line of one is a line of the other, and each command it names runs
    listed = re.findall(rb"^  (\w+) +(\S.*)$", pym("--help").stdout, re.M)
    binary = {(m[0], m[1]) for m in re.findall(rb"^  (\w+) +(\S.*)$", op("--help").stdout, re.M)}
    check(len(listed) >= 4 and all(c in binary for c in listed),
          "python -m omniprof --help lists the binary's commands and summaries: %s" % listed)
    for name, _ in listed:
        pym(name.decode(), "--help")
    names = [n.decode() for n, _ in listed]
    check(("expected %s or %s" % (", ".join(names[:-1]), names[-1])).encode() in p.stderr and
          b"unknown command 'nosuch'" in p.stderr, "python -m: unknown command names the valid ones")


def case_bad_inputs(tmp):
    """Each bad input gets its error, never a crash: missing file, not a database, truncated,
    corrupt, no rocpd tables, write SQL, bad options."""
    good = os.path.join(tmp, "good.db")
    gen(good, "--events", 20000)
    txt = os.path.join(tmp, "notes.txt")
    with open(txt, "w") as f:
        f.write("this is not a database\n" * 50)
    trunc = os.path.join(tmp, "trunc.db")
    with open(good, "rb") as f:
        data = f.read()
    with open(trunc, "wb") as f:
        f.write(data[: len(data) // 2])
    corrupt = os.path.join(tmp, "corrupt.db")
    page = int.from_bytes(data[16:18], "big")
    bad = bytearray(data)
    for off in range(page * 2, len(bad) - page, page):  # every page but the schema page: garbage
        bad[off:off + page] = bytes((i * 7 + 13) & 0xFF for i in range(page))
    with open(corrupt, "wb") as f:
        f.write(bad)
    empty = os.path.join(tmp, "plain.db")
    con = sqlite3.connect(empty)
    con.execute("CREATE TABLE t(x)")
    con.commit()
    con.close()
    cases = [
        (os.path.join(tmp, "missing.db"), b"cannot open"),
        (txt, b"not a SQLite database"),
        (trunc, b"truncated"),
        (corrupt, b"corrupt"),
        (empty, b"lacks the rocpd tables"),
    ]
    for path, msg in cases:
        for argv in (["convert", "-i", path, "-f", "pftrace", "json", "csv", "-d", os.path.join(tmp, "o")],
                     ["summary", "-i", path], ["query", "-i", path, "--sql", "SELECT count(*) FROM regions"],
                     ["merge", "-i", path, "-o", os.path.join(tmp, "never.db")]):
            p = op(*argv, rc=None)
            check(p.returncode == 2, "%s on %s: exit %d (want 2); stderr %s" % (argv[0], os.path.basename(path), p.returncode, p.stderr))
            check(msg in p.stderr and os.path.basename(path).encode() in p.stderr,
                  "%s on %s: message %r missing: %s" % (argv[0], os.path.basename(path), msg, p.stderr))
        check(not os.path.exists(os.path.join(tmp, "never.db")), "no merge output after a bad input")
    for q in ("DELETE FROM rocpd_region", "INSERT INTO rocpd_string VALUES (1,'a','b')", "DROP VIEW regions",
              "CREATE TABLE z(a)", "ATTACH '/tmp/x.db' AS x", "PRAGMA journal_mode=DELETE"):
        p = op("query", "-i", good, "--sql", q, rc=2)
        check(b"read-only" in p.stderr or b"refused" in p.stderr or b"not authorized" in p.stderr,
              "write SQL %r refused: %s" % (q, p.stderr))
    p = op("query", "-i", good, good, "--sql", "DELETE FROM rocpd_region", rc=2)
    p = op("query", "-i", good, "--sql", "SELEC nonsense", rc=2)
    check(b"bad SQL" in p.stderr, "bad SQL message")
    p = op("convert", "-i", good, "-f", "xml", rc=2)
    check(b"expected pftrace" in p.stderr, "bad format")
    p = op("convert", "-f", "csv", rc=2)
    check(b"no input" in p.stderr, "no input")
    p = op("summary", "-i", good, "-u", "hours", rc=2)
    check(b"expected sec" in p.stderr, "bad units")
    p = op("convert", "-i", good, "--bogus", rc=2)
    # python package errors
    if A.sanitized:
        return
    p = pym("summary", "-i", txt, rc=2)
    check(b"not a SQLite database" in p.stderr, "python -m reports a bad input")


def case_summary(tmp):
    """Summary and stats values equal SQL aggregates; formats and units."""
    db = os.path.join(tmp, "a.db")
    gen(db, "--events", 6000)
    op("convert", "-i", db, "-f", "csv", "--stats", "-d", tmp, "-o", "s")
    K, KS = table(db, "rocpd_kernel_dispatch"), table(db, "rocpd_info_kernel_symbol")
    con = sqlite3.connect(db)
    exp = {r[0]: r[1:] for r in con.execute(
        'SELECT S.display_name, count(*), sum(K."end"-K.start), min(K."end"-K.start), max(K."end"-K.start) '
        'FROM "%s" K JOIN "%s" S ON S.id = K.kernel_id GROUP BY 1' % (K, KS))}
    con.close()
    rows = read_csv(os.path.join(tmp, "s_kernel_stats.csv"))[1:]
    eq(len(rows), len(exp), "kernel names in kernel_stats.csv")
    tot = sum(v[1] for v in exp.values())
    for r in rows:
        e = exp[r[0]]
        eq((int(r[1]), int(r[2]), int(r[5]), int(r[6])), (e[0], e[1], e[2], e[3]), "stats of " + r[0])
        check(abs(float(r[4]) - 100.0 * e[1] / tot) < 1e-6, "percentage of " + r[0])
    eq([float(r[2]) for r in rows], sorted([float(r[2]) for r in rows], reverse=True), "sorted by total")
    check(os.path.exists(os.path.join(tmp, "s_domain_stats.csv")), "domain_stats.csv")
    md = op("summary", "-i", db, "-u", "usec", "-D").stdout.decode()
    check("| NAME | DOMAIN | CALLS | DURATION (usec) | AVERAGE (usec) | PERCENT (INC) | MIN (usec) | MAX (usec) | STDDEV (usec) |" in md,
          "summary header in usec")
    check("OMNIPROF KERNEL_DISPATCH SUMMARY" in md and "OMNIPROF DOMAIN SUMMARY" in md, "summary titles")
    j = json.loads(op("summary", "-i", db, "-f", "json", "-u", "msec").stdout)
    kd = [t for t in j if "KERNEL_DISPATCH" in t["summary"]][0]
    eq(sum(r["calls"] for r in kd["rows"]), sum(v[0] for v in exp.values()), "json kernel calls")
    check(abs(sum(r["duration"] for r in kd["rows"]) - tot / 1e6) < 1e-6, "json durations in msec")
    for f in ("console", "csv", "md", "json"):
        op("summary", "-i", db, "-f", f, "--summary-by-rank")
        op("query", "-i", db, "-f", f, "--sql", "SELECT * FROM top LIMIT 3")
    for cmd in ("convert", "merge", "summary", "query"):
        out = op(cmd, "--help").stdout
        check(b"usage: omniprof " + cmd.encode() in out, cmd + " --help")


def case_from_run(tmp):
    """Databases written by `omniprof run` (tool_victim with markers) convert, summarize and
    query; marker counts agree across formats."""
    if not A.victim or not os.path.exists(A.victim):
        print("SKIP: omniprof run / tool_victim not built")
        sys.exit(77)
    d = os.path.join(tmp, "run")
    p = run([A.omniprof, "run", "--marker-trace", "-d", d, "--", A.victim, "normal", "3"], rc=None)
    dbs = glob.glob(os.path.join(d, "**", "*.db"), recursive=True)
    if p.returncode != 0 or not dbs:
        print("SKIP: omniprof run did not produce a database (%d): %s" % (p.returncode, p.stderr[-300:]))
        sys.exit(77)
    db = dbs[0]
    regions = int(op("query", "-i", db, "-f", "csv", "--sql", "SELECT count(*) FROM rocpd_region").stdout.split()[-1])
    samples = int(op("query", "-i", db, "-f", "csv", "--sql", "SELECT count(*) FROM rocpd_sample").stdout.split()[-1])
    check(regions > 0 and samples > 0, "the run recorded marker ranges and marks")
    op("convert", "-i", db, "-f", "pftrace", "json", "csv", "-d", tmp, "-o", "r")
    n = pf_counts(decode(os.path.join(tmp, "r_results.pftrace")))
    eq(n["begin"], regions, "Perfetto slices vs regions")
    eq(n["instant"], samples, "Perfetto instants vs samples")
    with open(os.path.join(tmp, "r_results.json"), "rb") as f:
        j = json.loads(f.read())
    eq(len([e for e in j["traceEvents"] if e["ph"] == "X"]), regions, "JSON ranges")
    eq(len([e for e in j["traceEvents"] if e["ph"] == "i"]), samples, "JSON marks")
    eq(len(read_csv(os.path.join(tmp, "r_marker_api_trace.csv"))) - 1, regions + samples, "CSV marker rows")
    out = op("summary", "-i", db, "-f", "csv").stdout.decode()
    eq(sum(int(r[3]) for r in list(csv.reader(io.StringIO(out)))[1:]), regions, "summary calls")
    # reading a finished WAL-mode database leaves no -wal/-shm files beside it
    check(not os.path.exists(db + "-wal") and not os.path.exists(db + "-shm"), "no -wal/-shm litter")


SOURCE = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def schema_views():
    """Every view the schema defines (src/db/schema/*.sql), in file order: the list is read from
    the schema, never kept by hand. Each table of tables.sql has a plain-named view (the build
    generates them from that file, docs/database.md "One list of tables")."""
    names = []
    for f in sorted(glob.glob(os.path.join(SOURCE, "src", "db", "schema", "*.sql"))):
        with open(f, encoding="utf-8") as fh:
            text = fh.read()
        names += re.findall(r'CREATE\s+VIEW\s+IF\s+NOT\s+EXISTS\s+"([^"]+)"', text)
        names += re.findall(r'^CREATE\s+TABLE\s+IF\s+NOT\s+EXISTS\s+"([a-z_]+)\{\{uuid\}\}"', text, re.M)
    return names


def view_counts_cli(argv, inputs, views, env=None):
    """{view: row count or the error} of each view through a query command (argv: the omniprof
    binary or python3 -m omniprof), all views in one run; when that run fails, each view alone
    (so that every failing view is named, with its error)."""
    def batch(vs):
        sql = "; ".join("SELECT '%s' AS view, count(*) AS n FROM \"%s\"" % (v, v) for v in vs)
        return run(argv + ["query", "-i"] + inputs + ["-f", "csv", "--sql", sql], rc=None, env=env)
    p = batch(views)
    got = {}
    for row in csv.reader(io.StringIO(p.stdout.decode())):
        if row and row[0] in views:
            got[row[0]] = int(row[1])
    if p.returncode != 0 or len(got) != len(views):
        for v in views:
            if v not in got:
                q = batch([v])
                rows = [r for r in csv.reader(io.StringIO(q.stdout.decode())) if r and r[0] == v]
                got[v] = int(rows[0][1]) if q.returncode == 0 and rows else q.stderr.decode().strip()[-300:]
    return got


PY_VIEWS = r"""
import json, sys, omniprof
views, inputs = sys.argv[1].split(","), sys.argv[2:]
con = omniprof.connect(*inputs)
out = {}
for v in views:
    try:
        out[v] = sorted(repr(r) for r in con.execute('SELECT * FROM "%s"' % v).fetchall())
    except Exception as e:
        out[v] = "%s: %s" % (type(e).__name__, e)
print(json.dumps(out))
"""


def case_all_views(tmp):
    """Every view the schema defines — rocpd's plain-named views, its data, summary and marker
    views, omniprof's own — reads through every reader: SQLite on the file, `omniprof query` (C),
    `python3 -m omniprof query` and omniprof.connect() (the union's script in Python's sqlite3),
    over one database and over three, all made by real profiled runs. One input: each reader
    gives the file's own row count (connect(): the file's very rows). Three: each reader gives the
    row count of the same three merged into one file. A view missing from any reader, or failing
    there ("no such table: main.kernels": a view created outside the TEMP schema of the union),
    fails the case, named."""
    if not A.demo or not os.path.exists(A.demo):
        print("SKIP: omniprof-demo not built")
        sys.exit(77)
    views = schema_views()
    check(len(views) > 50 and len(set(views)) == len(views), "the schema's views: %s" % views)
    docs = ""
    for f in glob.glob(os.path.join(SOURCE, "docs", "*.md")):
        with open(f, encoding="utf-8") as fh:
            docs += fh.read()
    undocumented = [v for v in views if ("`%s`" % v) not in docs and ("`%s(" % v) not in docs]
    eq(undocumented, [], "views of the schema that docs/ does not name")
    dbs = []
    for i in range(3):
        d = os.path.join(tmp, "run%d" % i)
        run([A.omniprof, "run", "--marker-trace", "--sample", "--process-sampling", "0.05", "-d", d, "-o", "r", "--",
             A.demo])
        dbs.append(os.path.join(d, "r_results.db"))
    con = sqlite3.connect(dbs[0])
    in_file = {r[0] for r in con.execute("SELECT name FROM sqlite_schema WHERE type = 'view'")}
    con.close()
    eq(sorted(set(views) - in_file), [], "views of the schema missing from a database of a real run")
    merged = os.path.join(tmp, "m.db")
    op("merge", "-i", *dbs, "-o", merged)

    def direct(db):
        c = sqlite3.connect(db)
        c.text_factory = lambda b: b.decode("utf-8", "surrogateescape")
        try:
            return {v: sorted(repr(r) for r in c.execute('SELECT * FROM "%s"' % v).fetchall()) for v in views}
        finally:
            c.close()

    py = [sys.executable, "-m", "omniprof"]
    for inputs, truth_db, what in (([dbs[0]], dbs[0], "one input"), (dbs, merged, "three inputs")):
        truth = direct(truth_db)
        want = {v: len(rows) for v, rows in truth.items()}
        # the file's own metadata rows: a merged file adds its own uuid/guid rows to its inputs'
        if truth_db == merged:
            want["rocpd_metadata"] = sum(len(direct(d)["rocpd_metadata"]) for d in dbs)
        for v, n in (("processes", len(inputs)), ("markers", 1), ("regions", 1), ("samples", 1),
                     ("omniprof_cpu_samples", 1), ("omniprof_metrics", 1), ("omniprof_stack_frames", 1), ("top", 1),
                     ("marker_summary", 1), ("threads", len(inputs))):
            check(want[v] >= n, "%s: the runs recorded %s (%d rows)" % (what, v, want[v]))
        for argv, env, reader in (([A.omniprof], None, "omniprof query"),
                                  (py, pyenv(), "python3 -m omniprof query")):
            got = view_counts_cli(argv, inputs, views, env)
            bad = {v: (got.get(v), want[v]) for v in views if got.get(v) != want[v]}
            eq(bad, {}, "%s, %s: views whose row count (got, want) differs" % (what, reader))
        out = run([sys.executable, "-c", PY_VIEWS, ",".join(views)] + inputs, env=pyenv()).stdout.decode()
        got = json.loads(out.splitlines()[-1])
        bad = {v: got.get(v) if isinstance(got.get(v), str) else (len(got.get(v) or []), want[v])
               for v in views if not isinstance(got.get(v), list) or len(got[v]) != want[v]}
        eq(bad, {}, "%s, omniprof.connect(): views that fail or whose row count (got, want) differs" % what)
        if len(inputs) == 1:
            diff = [v for v in views if got[v] != truth[v]]
            eq(diff, [], "one input, omniprof.connect(): views whose rows differ from the file's")


# Names a program may give its markers that act on a terminal: set the window title (OSC ... BEL),
# clear the screen and home the cursor (CSI 2J, CSI H), the 8-bit CSI (U+009B), a backspace, a
# Markdown cell separator, a tab and a newline.
EVIL = ["title\x1b]0;pwned\x07clear\x1b[2J\x1b[Hend", "c1\u009b31mred", "bs\x08\x7fdel", "cell|pipe\tab\nline"]
EVIL_SHOWN = [r"title\x1b]0;pwned\x07clear\x1b[2J\x1b[Hend", r"c1\xc2\x9b31mred", r"bs\x08\x7fdel", "cell|pipe ab line"]


def raw_controls(b):
    """The control characters (other than newline) in bytes b: C0 bytes, DEL, UTF-8 C1 controls."""
    return [m.group(0) for m in re.finditer(rb"[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]", b)]


def case_terminal_names(tmp):
    """Names a profiled program gave its markers never reach the terminal as control characters:
    `omniprof summary` (console and md), `omniprof run --summary`, `omniprof query` (console and md)
    and `python3 -m omniprof query` show each control character as the text \\xHH (newline, CR,
    tab as a space; '|' escaped in Markdown), and JSON/CSV keep the exact name. The names come
    from a real run: a Python program that calls the user API through ctypes."""
    user = os.path.join(os.path.dirname(A.lib), "libomniprof-user.so")
    prog = ("import ctypes, sys\n"
            "u = ctypes.CDLL(sys.argv[1])\n"
            "for n in sys.argv[2:]:\n"
            "    u.omniprof_range_push(n.encode()); u.omniprof_range_pop(); u.omniprof_mark(n.encode())\n")
    d = os.path.join(tmp, "run")
    r = run([A.omniprof, "run", "--marker-trace", "-S", "--summary-output-file", "stdout", "-d", d, "-o", "t", "--",
             sys.executable, "-c", prog, user] + EVIL)
    db = os.path.join(d, "t_results.db")
    stored = sorted(x for (x,) in sqlite3.connect(db).execute("SELECT DISTINCT name FROM range_markers"))
    eq(stored, sorted(EVIL), "the database keeps the names as the program gave them")
    eq(raw_controls(r.stdout), [], "omniprof run --summary: control characters on the terminal")
    for shown in EVIL_SHOWN[:3]:
        check(shown.encode() in r.stdout, "run --summary shows %s: %s" % (shown, r.stdout[-1500:]))
    outputs = {
        "summary": op("summary", "-i", db).stdout,
        "summary md": op("summary", "-i", db, "-f", "md").stdout,
        "query": op("query", "-i", db, "--sql", "SELECT name, count(*) FROM markers GROUP BY name").stdout,
        "query md": op("query", "-i", db, "-f", "md", "--sql", "SELECT name FROM range_markers").stdout,
        "python -m omniprof query": pym("query", "-i", db, "--sql", "SELECT name FROM single_markers").stdout,
    }
    for what, out in outputs.items():
        eq(raw_controls(out), [], "%s: control characters on the terminal" % what)
        for shown in EVIL_SHOWN[:3]:
            check(shown.encode() in out, "%s shows %s: %s" % (what, shown, out[-1500:]))
    check(b"cell|pipe ab line" in outputs["query"] and b"cell\\|pipe ab line" in outputs["query md"],
          "tab and newline as spaces; '|' escaped in Markdown only")
    # machine formats keep the exact bytes
    j = json.loads(op("query", "-i", db, "-f", "json", "--sql", "SELECT DISTINCT name FROM range_markers").stdout)
    eq(sorted(x["name"] for x in j), sorted(EVIL), "query -f json keeps the names")
    rows = list(csv.reader(io.StringIO(op("summary", "-i", db, "-f", "csv").stdout.decode())))
    check(all(n in [row[1] for row in rows] for n in EVIL), "summary -f csv keeps the names: %s" % rows)


def case_foreign(tmp):
    """A database without omniprof's own tables and views (as rocprofv3 writes: rocpd tables
    only, uuid-suffixed) converts, summarizes and queries; merged with one of ours too."""
    db = os.path.join(tmp, "roc.db")
    c = gen(db, "--events", 3000, "--pid", 9)
    con = sqlite3.connect(db)
    for (name,) in con.execute("SELECT name FROM sqlite_schema WHERE type='view'").fetchall():
        con.execute('DROP VIEW "%s"' % name)
    for (name,) in con.execute("SELECT name FROM sqlite_schema WHERE type='table' AND name LIKE 'omniprof%'").fetchall():
        con.execute('DROP TABLE "%s"' % name)
    con.commit()
    con.close()
    op("convert", "-i", db, "-f", "pftrace", "csv", "-d", tmp, "-o", "f")
    n = pf_counts(decode(os.path.join(tmp, "f_results.pftrace")))
    eq(n["begin"], c["regions"] + c["kernels"] + c["copies"], "foreign db slices")
    eq(n["counter"], c["allocs"] + c["pmc"], "foreign db counters (no metrics table)")
    ours = os.path.join(tmp, "ours.db")
    c2 = gen(ours, "--events", 2000, "--pid", 10, "--seed", 3)
    out = op("query", "-i", db, ours, "-f", "csv", "--sql", "SELECT count(*) FROM kernels").stdout.split()
    eq(int(out[-1]), c["kernels"] + c2["kernels"], "query over a foreign and an omniprof db")
    m = os.path.join(tmp, "m.db")
    op("merge", "-i", db, ours, "-o", m)
    eq(sql1(m, "SELECT count(*) FROM rocpd_kernel_dispatch"), c["kernels"] + c2["kernels"], "merge foreign + ours")
    op("summary", "-i", db)


PY_TABLES = r"""
import json, sys
if sys.argv[1] == "hide":
    sys.modules["pandas"] = None  # as if pandas were not installed
import omniprof
db, views, tmp = sys.argv[2], sys.argv[3].split(","), sys.argv[4]
con = omniprof.connect(db)
k = con.kernels()
out = {"type": type(k).__module__.split(".")[0] + "." + type(k).__name__, "nk": len(k)}
out["views"] = con.views()
out["counts"] = {v: len(con.view(v)) for v in views}
out["lim"] = len(con.kernels(limit=5))
out["cols"] = list(k.columns) if hasattr(k, "columns") else sorted(k[0]) if k else []
out["where"] = len(con.view("kernels", where="duration > ?", params=(0,)))
out["sql"] = len(con.sql("SELECT name FROM kernels GROUP BY name"))
try:
    con.view("nosuch")
except omniprof.Error as e:
    out["err"] = str(e)
try:
    con.nosuch_view()
except AttributeError as e:
    out["attr"] = str(e)
h = con._repr_html_()
out["html"] = "<table>" in h and ">kernels<" in h
try:
    omniprof.convert([db + ".missing"], ["csv"], output_dir=tmp)
except omniprof.Error as e:
    out["conv_err"] = str(e)
r = omniprof.report([db], tmp + "/r_%s.html" % sys.argv[1])
out["report"] = [str(r), "<iframe" in r._repr_html_()]
print(json.dumps(out))
"""


def case_python_tables(tmp):
    """The package as users expect it (docs/python.md): every view of the schema is a table
    through connect(): con.view(name) and con.<view>() give the rows `omniprof query` counts, as
    pandas DataFrames when pandas is installed (checked with the interpreter that has it, when
    one has) and as lists of dicts otherwise (pandas hidden); a bad view or input raises Error
    naming the valid views / the input, and nothing is printed besides; the connection renders
    as HTML (Jupyter), omniprof.report writes the page."""
    db = os.path.join(tmp, "t.db")
    gen(db, "--events", 1500, "--pid", 77, "--seed", 5)
    views = schema_views()
    want = view_counts_cli([A.omniprof], [db], views)
    pythons = [("hide", sys.executable)]
    for py in (sys.executable, "/usr/bin/python3"):
        if os.path.exists(py) and run([py, "-c", "import pandas"], rc=None).returncode == 0:
            pythons.append(("pandas", py))
            break
    else:
        print("note: no interpreter here has pandas; the DataFrame path is not run")
    env = pyenv()
    env["PATH"] = os.path.dirname(os.path.abspath(A.omniprof)) + os.pathsep + env.get("PATH", "")
    for mode, py in pythons:
        p = run([py, "-c", PY_TABLES, mode, db, ",".join(views), tmp], env=env)
        got = json.loads(p.stdout.decode().splitlines()[-1])
        eq(got["type"], "pandas.DataFrame" if mode == "pandas" else "builtins.list", "%s: table type" % mode)
        eq(got["counts"], want, "%s: every view's rows vs omniprof query" % mode)
        eq(got["nk"], want["kernels"], "%s: con.kernels() rows" % mode)
        check(set(views) <= set(got["views"]), "%s: con.views() lists every schema view" % mode)
        eq(got["lim"], min(5, want["kernels"]), "%s: limit" % mode)
        check("name" in got["cols"] and "duration" in got["cols"], "%s: kernel columns %s" % (mode, got["cols"]))
        check(0 < got["where"] <= want["kernels"] and got["sql"] > 0, "%s: where / sql" % mode)
        check("nosuch" in got["err"] and "kernels" in got["err"], "%s: bad view names the views" % mode)
        check("nosuch_view" in got["attr"], "%s: unknown attribute" % mode)
        check(got["html"], "%s: _repr_html_ lists the views" % mode)
        check(".missing" in got.get("conv_err", ""), "%s: a missing input raises Error naming it" % mode)
        eq(p.stderr.decode().strip(), "", "%s: nothing printed besides the raised errors" % mode)
        check(os.path.getsize(got["report"][0]) > 1000 and got["report"][1], "%s: omniprof.report" % mode)


def case_pip_install(tmp):
    """`pip install ./python` works offline (pyproject.toml, the system's setuptools, no index):
    into a virtual environment that sees the system's packages; the installed package, run from
    another folder with omniprof on PATH (no OMNIPROF_OUTPUT_LIB), reads a database."""
    venv = os.path.join(tmp, "venv")
    # an interpreter with setuptools and wheel (Debian's python3-setuptools, python3-wheel)
    py = None
    for cand in ("/usr/bin/python3", sys.executable):
        if os.path.exists(cand) and run([cand, "-c", "import setuptools, wheel, pip, venv"], rc=None).returncode == 0:
            py = cand
            break
    if not py:
        print("SKIP: no python3 here has setuptools, wheel, pip and venv (Debian: python3-setuptools python3-wheel "
              "python3-pip python3-venv)")
        sys.exit(77)
    p = run([py, "-m", "venv", "--system-site-packages", venv], rc=None)
    if p.returncode != 0:
        print("SKIP: %s -m venv failed (%s)" % (py, p.stderr.decode().strip()[-200:]))
        sys.exit(77)
    vpy = os.path.join(venv, "bin", "python")
    src = os.path.join(tmp, "src")
    shutil.copytree(A.python, src, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    p = run([vpy, "-m", "pip", "install", "--no-build-isolation", "--no-index", "--no-deps", src], rc=None)
    check(p.returncode == 0, "pip install: %s" % (p.stdout + p.stderr).decode()[-1500:])
    db = os.path.join(tmp, "t.db")
    gen(db, "--events", 300, "--pid", 78, "--seed", 6)
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env.pop("OMNIPROF_OUTPUT_LIB", None)
    env["PATH"] = os.path.dirname(os.path.abspath(A.omniprof)) + os.pathsep + env.get("PATH", "")
    code = ("import omniprof, sys; print(omniprof.__file__); "
            "print(len(omniprof.connect(sys.argv[1]).view('kernels', limit=3)))")
    p = run([vpy, "-c", code, db], cwd=tmp, env=env)
    lines = p.stdout.decode().split()
    check(lines[0].startswith(venv), "imported from the venv: %s" % lines[0])
    eq(lines[1], "3", "the installed package reads a database")
    p = run([vpy, "-m", "pip", "show", "omniprof"], env=env)
    check(b"Version: " in p.stdout, "pip show omniprof")


# rocprofv3's CSV files for the domains omniprof traces, with their exact headers (facts of
# rocprofv3's lib/output/generateCSV.cpp and generateStats.cpp), and the file omniprof writes for
# each (None: no CUDA/CPU equivalent, not written). case_csv_headers checks the files convert and
# run write against it, and docs/output.md's table and header list against it.
_API = "Domain,Function,Process_Id,Thread_Id,Correlation_Id,Start_Timestamp,End_Timestamp"
_STATS = "Name,Calls,TotalDurationNs,AverageNs,Percentage,MinNs,MaxNs,StdDev"
_DISPATCH = "LDS_Block_Size,Scratch_Size,VGPR_Count,Accum_VGPR_Count,SGPR_Count"
ROCPROFV3_CSV = [
    ("kernel_trace.csv", "kernel_trace.csv",
     "Kind,Agent_Id,Queue_Id,Stream_Id,Thread_Id,Dispatch_Id,Kernel_Id,Kernel_Name,Correlation_Id,"
     "Start_Timestamp,End_Timestamp," + _DISPATCH + ",Workgroup_Size_X,Workgroup_Size_Y,"
     "Workgroup_Size_Z,Grid_Size_X,Grid_Size_Y,Grid_Size_Z"),
    ("hip_api_trace.csv", "cuda_runtime_api_trace.csv", _API),
    ("hsa_api_trace.csv", "cuda_driver_api_trace.csv", _API),
    ("marker_api_trace.csv", "marker_api_trace.csv", _API),
    ("rccl_api_trace.csv", "nccl_api_trace.csv", _API),
    ("memory_copy_trace.csv", "memory_copy_trace.csv",
     "Kind,Direction,Stream_Id,Source_Agent_Id,Destination_Agent_Id,Correlation_Id,Start_Timestamp,"
     "End_Timestamp"),
    ("memory_allocation_trace.csv", "memory_allocation_trace.csv",
     "Kind,Operation,Agent_Id,Allocation_Size,Address,Correlation_Id,Start_Timestamp,"
     "End_Timestamp"),
    ("scratch_memory_trace.csv", None,
     "Kind,Operation,Agent_Id,Queue_Id,Thread_Id,Alloc_Flags,Start_Timestamp,End_Timestamp,"
     "Allocation_Size"),
    ("counter_collection.csv", "counter_collection.csv",
     "Correlation_Id,Dispatch_Id,Agent_Id,Queue_Id,Process_Id,Thread_Id,Grid_Size,Kernel_Id,"
     "Kernel_Name,Workgroup_Size," + _DISPATCH + ",Counter_Name,Counter_Value,Start_Timestamp,"
     "End_Timestamp"),
    ("agent_info.csv", "agent_info.csv",
     "Node_Id,Logical_Node_Id,Agent_Type,Cpu_Cores_Count,Simd_Count,Cpu_Core_Id_Base,Simd_Id_Base,"
     "Max_Waves_Per_Simd,Lds_Size_In_Kb,Gds_Size_In_Kb,Num_Gws,Wave_Front_Size,Num_Xcc,Cu_Count,"
     "Array_Count,Num_Shader_Banks,Simd_Arrays_Per_Engine,Cu_Per_Simd_Array,Simd_Per_Cu,"
     "Max_Slots_Scratch_Cu,Gfx_Target_Version,Vendor_Id,Device_Id,Location_Id,Domain,"
     "Drm_Render_Minor,Num_Sdma_Engines,Num_Sdma_Xgmi_Engines,Num_Sdma_Queues_Per_Engine,"
     "Num_Cp_Queues,Max_Engine_Clk_Ccompute,Max_Engine_Clk_Fcompute,Sdma_Fw_Version,Fw_Version,"
     "Capability,Cu_Per_Engine,Max_Waves_Per_Cu,Family_Id,Workgroup_Max_Size,Grid_Max_Size,"
     "Local_Mem_Size,Hive_Id,Gpu_Id,Workgroup_Max_Dim_X,Workgroup_Max_Dim_Y,Workgroup_Max_Dim_Z,"
     "Grid_Max_Dim_X,Grid_Max_Dim_Y,Grid_Max_Dim_Z,Name,Vendor_Name,Product_Name,Model_Name"),
    ("kernel_stats.csv", "kernel_stats.csv", _STATS),
    ("hip_api_stats.csv", "cuda_runtime_api_stats.csv", _STATS),
    ("hsa_api_stats.csv", "cuda_driver_api_stats.csv", _STATS),
    ("marker_api_stats.csv", "marker_api_stats.csv", _STATS),
    ("memory_copy_stats.csv", "memory_copy_stats.csv", _STATS),
    ("memory_allocation_stats.csv", "memory_allocation_stats.csv", _STATS),
    ("domain_stats.csv", "domain_stats.csv", _STATS),
    ("pc_sampling_host_trap.csv", None,
     "Sample_Timestamp,Exec_Mask,Dispatch_Id,Instruction,Instruction_Comment,Correlation_Id"),
    ("pc_sampling_stochastic.csv", None,
     "Sample_Timestamp,Exec_Mask,Dispatch_Id,Instruction,Instruction_Comment,Correlation_Id,"
     "Wave_Issued_Instruction,Instruction_Type,Stall_Reason,Wave_Count"),
]
# files the synthetic database (omniprof-gen-db) has no rows for: checked when written
_GEN_LACKS = {"nccl_api_trace.csv"}


def _docs_output():
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "..", "docs", "output.md"), encoding="utf-8") as f:
        return f.read()


def case_csv_headers(tmp):
    """Every CSV file rocprofv3 writes for a domain omniprof traces exists (convert -f csv --stats
    of a database with every kind of row; run -f csv of the demo) with rocprofv3's exact header,
    quoted as rocprofv3 writes it; docs/output.md's mapping table and header list say the same."""
    db = os.path.join(tmp, "a.db")
    gen(db, "--events", 3000)
    op("convert", "-i", db, "-f", "csv", "--stats", "-d", tmp, "-o", "c")
    written = {}
    for rocprof, ours, header in ROCPROFV3_CSV:
        if ours is None:
            continue
        path = os.path.join(tmp, "c_" + ours)
        if ours in _GEN_LACKS and not os.path.exists(path):
            continue
        check(os.path.exists(path),
              "convert -f csv --stats writes %s (rocprofv3's %s)" % (ours, rocprof))
        with open(path, "rb") as f:
            first = f.readline().decode("utf-8").rstrip("\n")
        eq(first, ",".join('"%s"' % c for c in header.split(",")),
           "%s: rocprofv3's %s header" % (ours, rocprof))
        written[ours] = header
    # omniprof run -f csv writes through the same sink: the demo's files carry the same headers
    if A.demo and os.path.exists(A.demo):
        d = os.path.join(tmp, "run")
        op("run", "--marker-trace", "-f", "csv", "rocpd", "-d", d, "-o", "r", "--", A.demo)
        by_file = {ours: header for _, ours, header in ROCPROFV3_CSV if ours}
        files = [f[2:] for f in os.listdir(d) if f.startswith("r_") and f.endswith(".csv")]
        check("marker_api_trace.csv" in files,
              "run -f csv --marker-trace writes marker_api_trace.csv: %s" % files)
        for f in files:
            if f in by_file:
                eq(read_csv(os.path.join(d, "r_" + f))[0], by_file[f].split(","),
                   "run -f csv: %s header" % f)
    # docs/output.md: the table "rocprofv3 file | omniprof file | columns with no CUDA value"
    docs = _docs_output()
    rows = re.findall(r"^\| `([a-z_]+\.csv)` \| (`[a-z_]+\.csv`|not written) \| ([^|]*)\|$",
                      docs, re.M)
    got = {r: (o.strip("`") if o != "not written" else None) for r, o, _ in rows}
    eq(got, {r: o for r, o, _ in ROCPROFV3_CSV}, "docs/output.md's rocprofv3 -> omniprof CSV table")
    for r, _, empty in rows:
        header = dict((x, h) for x, _, h in ROCPROFV3_CSV)[r].split(",")
        for col in re.findall(r"`([A-Za-z_]+)`", empty):
            check(col in header,
                  "docs/output.md: %s's column %s (no CUDA value) is in its header" % (r, col))
    # ... and its header list ("* kernel_trace: `...`") names the same headers
    for name, header in re.findall(r"^\* ([a-z_]+): `([A-Za-z_,]+)`$", docs, re.M):
        eq(header, dict((x[:-4], h) for x, _, h in ROCPROFV3_CSV)[name],
           "docs/output.md: the %s header" % name)
    print("checked %d files, %d with rows here: %s" %
          (len(ROCPROFV3_CSV), len(written), sorted(written)))


CASES = {k[5:]: v for k, v in globals().items() if k.startswith("case_")}


def main():
    global A
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=sorted(CASES))
    ap.add_argument("--omniprof", required=True)
    ap.add_argument("--gen", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--proto", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--victim", default="")
    ap.add_argument("--demo", default="")
    ap.add_argument("--sanitized", action="store_true",
                    help="sanitizer build: the Python package cannot load an ASan library (no ASan runtime in python)")
    A = ap.parse_args()
    if not os.path.exists(A.proto):
        here = os.path.dirname(os.path.abspath(__file__))
        A.proto = os.path.join(here, "..", "..", "third_party", "perfetto", "perfetto_trace.proto")
    tmp = tempfile.mkdtemp(prefix="omniprof-test-output-")
    try:
        CASES[A.case](tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("ok: output.%s" % A.case)


if __name__ == "__main__":
    main()
