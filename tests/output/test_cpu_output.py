#!/usr/bin/env python3
"""test_cpu_output.py — CPU sampling data through the post-processing commands (CTest output.cpu_*).

Each case profiles a real CPU-bound program (tests/cpu/hotspot.c: every thread runs hot_a for 7
units then hot_b for 3, so 70% / 30% of the CPU time) under `omniprof sample` or `omniprof run
--sample cputime`, then checks what the commands make of the database:

  cpu_summary  `omniprof sample` ends with a flat profile (names, file:line, module) whose shares
               are 70/30 within +-5 points; `omniprof summary` text/json/md/csv and --cpu-profile.
  cpu_folded   `omniprof run -f folded` and `omniprof convert -f folded`: the same file, counts
               summing to the database's samples, outermost frame first, no omniprof frame between
               two of the program's (the thread-start trampoline); a time window.
  cpu_pftrace  the Perfetto trace decodes with protoc and holds one instant per sample, named by
               the leaf function, with the stack annotation, and one counter value per metric;
               the Chrome JSON trace holds the same instants.
  cpu_python   `python3 -m omniprof summary` / `convert -f folded` give the binary's bytes.

usage: test_cpu_output.py CASE --omniprof BIN --hotspot BIN --lib LIB --proto FILE --python DIR
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
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from testlib import FAILS, check  # noqa: E402 (tests/testlib.py: the one assertion helper)

A = None


def profile(wd, units, extra, cmd="run"):
    """Runs the hotspot program under omniprof; returns (database path, CompletedProcess)."""
    argv = [A.omniprof, cmd]
    if cmd == "run":
        argv += ["--sample", "cputime"]
    argv += ["--sampling-freq", "1000", "-d", wd, "-o", "hot"] + extra + ["--", A.hotspot, str(units)]
    env = dict(os.environ, OMNIPROF_TEST_THREADS="2")
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)
    check(r.returncode == 0, "%s exits 0 (%s)" % (" ".join(argv[:3]), r.stderr.strip()[-400:]))
    check("hotspot done threads=3" in r.stdout, "the program's output passes through")
    db = os.path.join(wd, "hot_results.db")
    if not os.path.exists(db):
        check(False, "database %s written" % db)
        sys.exit(1)
    return db, r


def db_samples(db, where=""):
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    n = con.execute("SELECT count(*) FROM omniprof_cpu_sample " + where).fetchone()[0]
    con.close()
    return n


def flat_rows(text):
    """function -> (self, self%, total, total%, location, module) from a text flat profile."""
    rows = {}
    inside = False
    for line in text.splitlines():
        if line.startswith("CPU flat profile:"):
            inside = True
            continue
        if inside and not line.strip():
            break
        m = re.match(r"\s*(\d+)\s+([\d.]+)%\s+(\d+)\s+([\d.]+)%\s+(\S+)\s+(\S+)\s+(\S+)\s*$", line)
        if inside and m and m.group(5) not in rows:
            rows[m.group(5)] = (int(m.group(1)), float(m.group(2)), int(m.group(3)), float(m.group(4)),
                                m.group(6), m.group(7))
    return rows


def hot_line(fn):
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "cpu", "hotspot.c")
    with open(src) as f:
        return [i for i, l in enumerate(f, 1) if "double %s(long units)" % fn in l][0]


def case_cpu_summary(wd):
    db, r = profile(wd, 1500, [], cmd="sample")
    n = db_samples(db)
    check(n >= 300, "enough samples for +-5 points (%d)" % n)
    # `omniprof sample` implies --summary: the summary (stderr by default) ends with the profile
    check("OMNIPROF CPU PROFILE" in r.stderr and "CPU flat profile: %d samples" % n in r.stderr,
          "omniprof sample prints the flat profile of all %d samples" % n)
    rows = flat_rows(r.stderr)
    for fn, share in (("hot_a", 70), ("hot_b", 30)):
        got = rows.get(fn, (0, 0.0, 0, 0.0, "", ""))
        check(abs(got[1] - share) <= 5, "sample: %s self %.1f%% within %d+-5" % (fn, got[1], share))
        check(got[4].endswith("hotspot.c:%d" % hot_line(fn)), "sample: %s at hotspot.c:%d (%s)" % (fn, hot_line(fn), got[4]))
        check(got[5] == "cputest_hotspot", "sample: %s module cputest_hotspot (%s)" % (fn, got[5]))
    # every sample but a few: a CPU-time timer that expired inside work() is delivered when the
    # thread next runs, which on a loaded machine can be after work() returned (its exit path)
    work_total = rows.get("work", (0, 0, 0, 0.0))[3]
    check(work_total >= 98.0, "sample: work holds every sample but late-delivered ones (total %.1f%%, >= 98%%)" % work_total)
    check("CPU call tree: %d samples" % n in r.stderr, "sample: call tree printed")

    # omniprof summary, console (stdout): the same profile as the run's
    s = subprocess.run([A.omniprof, "summary", "-i", db], capture_output=True, text=True)
    check(s.returncode == 0, "summary exits 0")
    check(flat_rows(s.stdout) == rows, "summary's flat profile equals the one `omniprof sample` printed")
    check("OMNIPROF FUNCTION_WRAPPER SUMMARY" in s.stdout, "summary keeps the per-domain tables")
    check(s.stdout.index("OMNIPROF CPU PROFILE") > s.stdout.index("OMNIPROF FUNCTION_WRAPPER SUMMARY"),
          "profile after the tables")
    self_sum = sum(v[0] for v in flat_rows(s.stdout).values())
    check(self_sum <= n and rows["hot_a"][0] + rows["hot_b"][0] >= 0.95 * n, "flat self samples account for the samples")

    # --cpu-profile choices
    f = subprocess.run([A.omniprof, "summary", "-i", db, "--cpu-profile", "flat"], capture_output=True, text=True)
    check("CPU flat profile" in f.stdout and "CPU call tree" not in f.stdout, "--cpu-profile flat: no tree")
    t = subprocess.run([A.omniprof, "summary", "-i", db, "--cpu-profile", "tree"], capture_output=True, text=True)
    check("CPU flat profile" not in t.stdout and "CPU call tree" in t.stdout, "--cpu-profile tree: no flat table")
    no = subprocess.run([A.omniprof, "summary", "-i", db, "--cpu-profile", "none"], capture_output=True, text=True)
    check("CPU" not in no.stdout and "FUNCTION_WRAPPER" in no.stdout, "--cpu-profile none: tables only")
    bad = subprocess.run([A.omniprof, "summary", "-i", db, "--cpu-profile", "pie"], capture_output=True, text=True)
    check(bad.returncode == 2 and "expected flat, tree, both or none" in bad.stderr, "--cpu-profile pie: exit 2")

    # JSON: one more list element, consistent with the database
    j = subprocess.run([A.omniprof, "summary", "-i", db, "--format", "json"], capture_output=True, text=True)
    doc = json.loads(j.stdout)
    prof = [e for e in doc if e.get("summary") == "OMNIPROF CPU PROFILE"]
    check(len(prof) == 1 and doc[-1] is prof[0], "json: the profile is the last list element")
    cp = prof[0]["cpu_profile"] if prof else {"total_samples": 0, "flat": [], "tree": {"total": 0}}
    check(cp["total_samples"] == n, "json: total_samples %d == database samples %d" % (cp["total_samples"], n))
    check(sum(e["self"] for e in cp["flat"]) == n, "json: self samples add up to the total")
    check(cp["tree"]["total"] == n, "json: tree root holds every sample")
    fl = {e["function"]: e for e in cp["flat"]}
    check(abs(fl["hot_a"]["self_pct"] - rows["hot_a"][1]) < 0.01, "json and text agree on hot_a")
    check(all("table" not in e or True for e in doc) and any("rows" in e for e in doc), "json: tables kept")
    # md: fenced text; csv: no profile
    md = subprocess.run([A.omniprof, "summary", "-i", db, "--format", "md"], capture_output=True, text=True)
    check("### OMNIPROF CPU PROFILE:" in md.stdout and md.stdout.rstrip().endswith("```"), "md: fenced profile")
    csv = subprocess.run([A.omniprof, "summary", "-i", db, "--format", "csv"], capture_output=True, text=True)
    check(csv.returncode == 0 and "CPU" not in csv.stdout, "csv: tables only")
    # by rank: one profile per process, titled like the tables
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    pid = con.execute("SELECT pid FROM rocpd_info_process LIMIT 1").fetchone()[0]
    con.close()
    br = subprocess.run([A.omniprof, "summary", "-i", db, "--summary-by-rank", "--format", "json"], capture_output=True,
                        text=True)
    bd = json.loads(br.stdout)
    check(bd[-1]["summary"] == "OMNIPROF CPU PROFILE — PROCESS %d" % pid and bd[-1]["cpu_profile"]["total_samples"] == n,
          "--summary-by-rank: the profile titled PROCESS %d (%s)" % (pid, bd[-1]["summary"]))
    # window: only the samples inside it
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    ts = [t for (t,) in con.execute("SELECT timestamp FROM omniprof_cpu_sample ORDER BY timestamp")]
    con.close()
    lo, hi = ts[len(ts) // 4], ts[3 * len(ts) // 4]
    inside = sum(1 for t in ts if lo <= t <= hi)
    w = subprocess.run([A.omniprof, "summary", "-i", db, "--format", "json", "--start", str(lo), "--end", str(hi)],
                       capture_output=True, text=True)
    wd_ = json.loads(w.stdout)
    check(wd_[-1].get("cpu_profile", {}).get("total_samples") == inside,
          "window: the profile counts the %d samples inside [start, end]" % inside)


def case_cpu_folded(wd):
    db, r = profile(wd, 400, ["-f", "folded"])
    n = db_samples(db)
    path = os.path.join(wd, "hot_folded.txt")
    check(os.path.exists(path), "omniprof run -f folded writes NAME_folded.txt")
    with open(path) as f:
        run_text = f.read()
    c = subprocess.run([A.omniprof, "convert", "-i", db, "-f", "folded", "-d", wd, "-o", "conv"],
                       capture_output=True, text=True)
    check(c.returncode == 0, "convert -f folded exits 0 (%s)" % c.stderr.strip())
    with open(os.path.join(wd, "conv_folded.txt")) as f:
        text = f.read()
    check(text == run_text, "convert -f folded gives the run's file")
    lines = [l for l in text.splitlines() if l]
    counts = [int(l.rsplit(" ", 1)[1]) for l in lines]
    check(sum(counts) == n, "folded counts sum to the database's samples (%d == %d)" % (sum(counts), n))
    paths = [l.rsplit(" ", 1)[0] for l in lines]
    check(len(set(paths)) == len(paths), "one line per distinct stack")
    check(paths == sorted(paths), "lines sorted by path")
    hot = [p for p, k in zip(paths, counts) if k * 20 >= n]
    check(hot and all(p.split(";")[-1] in ("hot_a", "hot_b") for p in hot), "the big stacks end in hot_a/hot_b")
    check(any(p.startswith("_start;") and p.endswith(";main;work;hot_a") for p in paths),
          "outermost first: _start;...;main;work;hot_a")
    check(all(re.match(r"^\S.* \d+$", l) for l in lines), "every line is `frames COUNT`")
    # omniprof's frames that only pass through are not in the program's stacks: a worker thread
    # reads start_thread;work, not start_thread;omniprof_thread_start;work (own_frames.c)
    check(not any("omniprof_thread_start" in p for p in paths), "no omniprof trampoline frame in the stacks")
    check(any(p.endswith("start_thread;work;hot_a") for p in paths),
          "a worker thread's stack: ...;start_thread;work;hot_a (%s)" % [p for p in paths if "start_thread" in p][:2])
    # window
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    ts = [t for (t,) in con.execute("SELECT timestamp FROM omniprof_cpu_sample ORDER BY timestamp")]
    con.close()
    lo, hi = ts[len(ts) // 3], ts[2 * len(ts) // 3]
    inside = sum(1 for t in ts if lo <= t <= hi)
    c = subprocess.run([A.omniprof, "convert", "-i", db, "-f", "folded", "-d", wd, "-o", "win", "--start", str(lo),
                        "--end", str(hi)], capture_output=True, text=True)
    with open(os.path.join(wd, "win_folded.txt")) as f:
        wsum = sum(int(l.rsplit(" ", 1)[1]) for l in f if l.strip())
    check(c.returncode == 0 and wsum == inside, "windowed folded counts %d == samples inside %d" % (wsum, inside))
    # bad input and format list
    bad = subprocess.run([A.omniprof, "convert", "-i", os.path.join(wd, "missing.db"), "-f", "folded", "-d", wd],
                         capture_output=True, text=True)
    check(bad.returncode == 2 and "missing.db" in bad.stderr, "missing input: exit 2 naming it")
    bad = subprocess.run([A.omniprof, "convert", "-i", db, "-f", "flame"], capture_output=True, text=True)
    check(bad.returncode == 2 and "folded" in bad.stderr, "unknown format: exit 2, folded listed")


def decode(pftrace):
    with open(pftrace, "rb") as f:
        p = subprocess.run(["protoc", "--decode=perfetto.protos.Trace", "-I", os.path.dirname(A.proto),
                            os.path.basename(A.proto)], stdin=f, capture_output=True)
    check(p.returncode == 0, "protoc decodes %s (%s)" % (os.path.basename(pftrace), p.stderr[-300:]))
    check(b"invalid UTF-8" not in p.stderr, "no invalid UTF-8 in string fields")
    return p.stdout.decode("utf-8", "replace")


def case_cpu_pftrace(wd):
    db, r = profile(wd, 400, ["-f", "pftrace", "--process-sampling", "0.05"])
    n = db_samples(db)
    text = decode(os.path.join(wd, "hot_results.pftrace"))
    packets = text.split("\npacket {")
    names = {}      # (seq, iid) -> event name
    stacks = {}     # (seq, iid) -> stack text
    da_stack = {}   # seq -> iid of the "stack" annotation name
    instants = []   # (seq, name_iid, stack_iid)
    counters = 0
    for pk in packets:
        m = re.search(r"trusted_packet_sequence_id: (\d+)", pk)
        seq = int(m.group(1)) if m else 0
        for iid, name in re.findall(r"event_names \{\s*iid: (\d+)\s*name: \"((?:[^\"\\]|\\.)*)\"", pk):
            names[(seq, int(iid))] = name
        for iid, s in re.findall(r"debug_annotation_string_values \{\s*iid: (\d+)\s*str: \"((?:[^\"\\]|\\.)*)\"", pk):
            stacks[(seq, int(iid))] = s.replace("\\n", "\n")
        for iid, name in re.findall(r"debug_annotation_names \{\s*iid: (\d+)\s*name: \"(\w+)\"", pk):
            if name == "stack":
                da_stack[seq] = int(iid)
        if "type: TYPE_INSTANT" in pk:
            ni = re.search(r"\n    name_iid: (\d+)", pk)
            sv = re.search(r"string_value_iid: (\d+)", pk)
            instants.append((seq, int(ni.group(1)) if ni else None, int(sv.group(1)) if sv else None))
        counters += len(re.findall(r"double_counter_value: ", pk))
    cpu = [i for i in instants if i[2] is not None]
    check(len(cpu) == n, "one stack-annotated instant per database sample (%d == %d)" % (len(cpu), n))
    leaf = {}
    ok_names = True
    for seq, ni, si in cpu:
        nm = names.get((seq, ni))
        st = stacks.get((seq, si))
        if nm is None or st is None or st.split("\n")[0] != nm:
            ok_names = False
        leaf[nm] = leaf.get(nm, 0) + 1
    check(ok_names, "every sample is named by its leaf function, the first line of its interned stack")
    check(set(da_stack) and all(s in da_stack for s, _, _ in cpu), "the `stack` annotation name is interned")
    share = 100.0 * leaf.get("hot_a", 0) / max(1, n)
    check(abs(share - 70) <= 10, "instants: hot_a %.1f%% of the samples" % share)
    # a hot_a sample's stack (the first one interned may be a sample in libc's stdio before work())
    anystack = next((s for s in stacks.values() if s.split("\n")[0] == "hot_a"), "")
    check("\nwork\n" in anystack, "stack text lists the callers innermost first (%r)" % anystack[:80])
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    nm = con.execute("SELECT count(*) FROM omniprof_metric").fetchone()[0]
    metric_names = [r[0] for r in con.execute("SELECT DISTINCT name FROM omniprof_metrics")]
    con.close()
    check(nm > 0 and counters == nm, "one counter value per process metric sample (%d == %d)" % (counters, nm))
    for mname in ("rss_bytes", "user_cpu_time_ns"):
        check(mname in metric_names and re.search(r"name: \"%s\"" % mname, text) is not None,
              "counter track %s in the trace" % mname)
    # Chrome JSON: the same samples, named by the leaf function, stack in args
    c = subprocess.run([A.omniprof, "convert", "-i", db, "-f", "json", "-d", wd, "-o", "js"], capture_output=True, text=True)
    with open(os.path.join(wd, "js_results.json"), "rb") as f:
        jd = json.loads(f.read().decode("utf-8", "surrogateescape"))
    js = [e for e in jd["traceEvents"] if e.get("ph") == "i" and "stack" in e.get("args", {})]
    check(c.returncode == 0 and len(js) == n, "json: one stack-annotated instant per sample (%d == %d)" % (len(js), n))
    check(all(e["args"]["stack"].split("\n")[0] == e["name"] for e in js), "json: named by the leaf function")
    jleaf = {}
    for e in js:
        jleaf[e["name"]] = jleaf.get(e["name"], 0) + 1
    check(jleaf == leaf, "json and Perfetto agree per leaf function (%s)" % jleaf)
    # also single-threaded conversion
    c = subprocess.run([A.omniprof, "convert", "-i", db, "-f", "pftrace", "-d", wd, "-o", "one"], capture_output=True,
                       text=True, env=dict(os.environ, OMNIPROF_OUTPUT_THREADS="1"))
    check(c.returncode == 0, "one-thread convert exits 0")
    t1 = decode(os.path.join(wd, "one_results.pftrace"))
    check(t1.count("string_value_iid:") == n, "one-thread trace: %d stack annotations" % n)


def case_cpu_python(wd):
    db, r = profile(wd, 300, [])
    env = dict(os.environ, PYTHONPATH=A.python, OMNIPROF_OUTPUT_LIB=A.lib)
    for args in (["summary", "-i", db], ["summary", "-i", db, "--format", "json"],
                 ["summary", "-i", db, "--format", "md", "--cpu-profile", "tree"]):
        b = subprocess.run([A.omniprof] + args, capture_output=True)
        p = subprocess.run([sys.executable, "-m", "omniprof"] + args, capture_output=True, env=env)
        check(b.returncode == p.returncode == 0 and b.stdout == p.stdout and b"CPU" in b.stdout,
              "python -m omniprof %s == binary" % " ".join(args[3:] or ["summary"]))
    b = subprocess.run([A.omniprof, "convert", "-i", db, "-f", "folded", "-d", wd, "-o", "bin"], capture_output=True)
    p = subprocess.run([sys.executable, "-m", "omniprof", "convert", "-i", db, "-f", "folded", "-d", wd, "-o", "py"],
                       capture_output=True, env=env)
    with open(os.path.join(wd, "bin_folded.txt"), "rb") as f1, open(os.path.join(wd, "py_folded.txt"), "rb") as f2:
        a, c = f1.read(), f2.read()
    check(b.returncode == p.returncode == 0 and a == c and a, "python convert -f folded == binary")
    code = ("import omniprof,sys; t=omniprof.summary([sys.argv[1]], cpu_profile='flat'); "
            "print(t[-1]['cpu_profile']['total_samples'], 'tree' in t[-1]['cpu_profile'])")
    p = subprocess.run([sys.executable, "-c", code, db], capture_output=True, text=True, env=env)
    check(p.stdout.split() == [str(db_samples(db)), "False"], "omniprof.summary(cpu_profile='flat') (%s)" % p.stdout.strip())


CASES = {"cpu_summary": case_cpu_summary, "cpu_folded": case_cpu_folded, "cpu_pftrace": case_cpu_pftrace,
         "cpu_python": case_cpu_python}


def main():
    global A
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=sorted(CASES))
    ap.add_argument("--omniprof", required=True)
    ap.add_argument("--hotspot", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--proto", required=True)
    ap.add_argument("--python", required=True)
    A = ap.parse_args()
    if not os.path.exists(A.proto):
        here = os.path.dirname(os.path.abspath(__file__))
        A.proto = os.path.join(here, "..", "..", "third_party", "perfetto", "perfetto_trace.proto")
    if not os.path.exists(A.hotspot):
        print("SKIP: %s is not built (tests/cpu, needs the CPU backend)" % A.hotspot)
        return 77
    probe = subprocess.run([A.omniprof, "run", "--help"], capture_output=True, text=True)
    if "--sample" not in probe.stdout + probe.stderr:
        print("SKIP: omniprof run --sample is not available")
        return 77
    tmp = tempfile.mkdtemp(prefix="omniprof-test-cpu-output-")
    try:
        CASES[A.case](tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if FAILS:
        print("%d check(s) failed" % len(FAILS))
        return 1
    print("ok: output.%s" % A.case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
