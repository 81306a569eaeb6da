#!/usr/bin/env python3
"""`omniprof analyze` on real CUPTI data (tests/gpu/run.sh part "analyzewaits"): an_waits.cu
recorded with `omniprof run --runtime-trace --sync-trace`. Checks what analyze's stream
synchronize semantics and overlap rows rest on (docs/analyze.md):
  - each cudaStreamSynchronize call holds a SYNCHRONIZATION_STREAM record whose extdata stream
    names the stream row (by name "stream N" or handle) of the stream that ran spin_short;
  - the analysis: the critical path holds spin_short and not spin_long before the CPU spin
    (the stream synchronize waited for stream 2 only; spin_long ends during the CPU spin);
  - the overlap row of the GPU: copies >= 90 % beside kernels (the copy runs while spin_long
    runs), no communication kernels (null).
PASS/FAIL lines (tests/gpu/run.sh counts them); exit 77 with SKIP when the build lacks it.
usage: gpu_waits.py BUILD OUTDIR"""
import json
import os
import sqlite3
import subprocess
import sys

B, OUT = sys.argv[1], sys.argv[2]
OMNI = os.path.join(B, "bin", "omniprof")
PROG = os.path.join(B, "bin", "antest_waits")
FAILS = []


def check(ok, what):
    print(("PASS " if ok else "FAIL ") + "analyze.waits_" + what)
    if not ok:
        FAILS.append(what)


def main():
    if not os.path.exists(PROG) or not os.path.exists(OMNI):
        print("SKIP analyze.waits: %s or %s is not built" % (PROG, OMNI))
        sys.exit(77)
    os.makedirs(OUT, exist_ok=True)
    r = subprocess.run([OMNI, "run", "--runtime-trace", "--sync-trace", "-d", OUT, "-o", "waits",
                        "--", PROG, "200", "50", "200"], capture_output=True, text=True,
                       timeout=600)
    db = os.path.join(OUT, "waits_results.db")
    check(r.returncode == 0 and os.path.exists(db), "recorded (rc %d: %s)" %
          (r.returncode, r.stderr.strip()[-300:].replace("\n", " ")))
    if not os.path.exists(db):
        sys.exit(1)
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    tabs = [n for (n,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    sfx = [n for n in tabs if n.startswith("rocpd_string")][0][len("rocpd_string"):]

    def t(base):
        return '"%s%s"' % (base, sfx)
    q = ("SELECT R.start, R.\"end\", json_extract(E.extdata, '$.stream') FROM %s R JOIN %s E ON "
         "E.id = R.event_id JOIN %s S ON S.id = R.name_id WHERE S.string = "
         "'SYNCHRONIZATION_STREAM'" % (t("rocpd_region"), t("rocpd_event"), t("rocpd_string")))
    syncs = con.execute(q).fetchall()
    calls = con.execute("SELECT R.start, R.\"end\" FROM %s R JOIN %s S ON S.id = R.name_id WHERE "
                        "S.string LIKE 'cudaStreamSynchronize%%'" % (t("rocpd_region"),
                                                                     t("rocpd_string"))).fetchall()
    check(len(syncs) >= 3 and len(calls) >= 3, "three stream synchronize calls and their "
          "SYNCHRONIZATION_STREAM records (%d calls, %d records)" % (len(calls), len(syncs)))
    inside = sum(1 for (s0, s1, _) in syncs if any(c0 <= s0 and s1 <= c1 for c0, c1 in calls))
    check(inside == len(syncs) and syncs, "every record lies inside its call (%d of %d)" %
          (inside, len(syncs)))
    short_streams = set(x for (x,) in con.execute(
        "SELECT DISTINCT K.stream_id FROM %s K JOIN %s Y ON Y.id = K.kernel_id WHERE "
        "Y.display_name LIKE 'spin_short%%' OR Y.kernel_name LIKE '%%spin_short%%'" %
        (t("rocpd_kernel_dispatch"), t("rocpd_info_kernel_symbol"))))
    rows = {}
    for (sid, name, ext) in con.execute("SELECT id, name, extdata FROM %s" %
                                        t("rocpd_info_stream")):
        rows[sid] = (name, ext)
    named = set()
    for (_, _, h) in syncs:
        for sid, (name, ext) in rows.items():
            try:
                eh = json.loads(ext or "{}").get("handle")
            except ValueError:
                eh = None
            if name == "stream %s" % h or (eh is not None and str(eh) == str(h)):
                named.add(sid)
    check(named and named <= short_streams, "the records name the stream of spin_short (rows %s; "
          "spin_short on %s)" % (sorted(named), sorted(short_streams)))
    r = subprocess.run([OMNI, "analyze", "-i", db, "--format", "json"], capture_output=True,
                       text=True, timeout=600)
    check(r.returncode == 0, "analyze exits 0 (%s)" % r.stderr.strip()[-300:])
    if r.returncode != 0:
        sys.exit(1)
    res = json.loads(r.stdout)
    items = {(i["kind"], i["name"]): i["ns"] for i in res["critical_path"]["items"]}
    short = sum(v for (k, n), v in items.items() if k == "kernel" and "spin_short" in n)
    long_ = sum(v for (k, n), v in items.items() if k == "kernel" and "spin_long" in n)
    print("critical path: %s" % sorted(items.items(), key=lambda x: -x[1])[:8])
    check(short > 0.1 * res["run"]["wall_ns"] and long_ < 0.05 * res["run"]["wall_ns"],
          "the path holds spin_short (%.1f %%), not spin_long (%.1f %%): the stream synchronize "
          "waited for its stream" % (100.0 * short / res["run"]["wall_ns"],
                                    100.0 * long_ / res["run"]["wall_ns"]))
    gpus = res["breakdown"].get("gpus", [])
    print("overlap rows: %s" % gpus)
    ok = bool(gpus) and all(g["comm_overlap_pct"] is None for g in gpus) and \
        max((g["copy_overlap_pct"] or 0) for g in gpus) >= 90
    check(ok, "overlap: copies >= 90 %% beside kernels, no communication kernels (%s)" %
          [(g["copy_overlap_pct"], g["comm_overlap_pct"]) for g in gpus])
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
