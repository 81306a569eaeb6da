#!/usr/bin/env python3
"""`omniprof analyze` on CUDA events with real CUPTI data (tests/gpu/run.sh part
"analyzeevents"): an_events.cu recorded with `omniprof run --runtime-trace --sync-trace`.
  - the database holds the events' recordings (omniprof_cuda_event: two per iteration, each
    with its stream) and the waits' synchronization records name them (extdata sync_id);
  - the critical path runs through producer (stream A), which stream B waits for through an
    event, and not through busy_other (stream C): the event synchronize waited for stream B;
  - the what-if 'kernel:^producer\\(=0.5' predicts the gain measured by running the program with
    producer half as long (its knob), within 5 points of run time or 20 % of the gain (the
    median of GPU_ANALYZE_ROUNDS runs, default 3). Reading the event synchronize as device-wide,
    or the stream wait as no edge, predicts about a quarter of the gain or none.
PASS/FAIL lines (tests/gpu/run.sh counts them) and a predicted-vs-measured row; exit 77 with
SKIP when the build lacks the program.
usage: gpu_events.py BUILD OUTDIR"""
import os
import sqlite3
import subprocess
import sys

import gpu_common

B, OUT = sys.argv[1], sys.argv[2]
OMNI = os.path.join(B, "bin", "omniprof")
PROG = os.path.join(B, "bin", "antest_events")
ROUNDS = int(os.environ.get("GPU_ANALYZE_ROUNDS", "3"))
ITERS = 5
FAILS = []


def check(ok, what):
    print(("PASS " if ok else "FAIL ") + "analyze.events_" + what)
    if not ok:
        FAILS.append(what)


def record(name, prod_ms):
    r = subprocess.run([OMNI, "run", "--runtime-trace", "--sync-trace", "-d", OUT, "-o", name,
                        "--", PROG, str(prod_ms), "10", "45", "40", str(ITERS)],
                       capture_output=True, text=True, timeout=600)
    db = os.path.join(OUT, name + "_results.db")
    ok = r.returncode == 0 and "done" in r.stdout and os.path.exists(db)
    check(ok, "%s recorded (rc %d: %s)" % (name, r.returncode,
                                          r.stderr.strip()[-300:].replace("\n", " ")))
    return db if ok else None


def analyze(db, *extra):
    return gpu_common.analyze(OMNI, check, db, *extra)


median = gpu_common.median


def main():
    if not os.path.exists(PROG) or not os.path.exists(OMNI):
        print("SKIP analyze.events: %s or %s is not built" % (PROG, OMNI))
        sys.exit(77)
    os.makedirs(OUT, exist_ok=True)
    base_dbs = [record("events%d" % i, 40) for i in range(ROUNDS)]
    if not base_dbs[0]:
        sys.exit(1)
    con = sqlite3.connect("file:%s?mode=ro" % base_dbs[0], uri=True)
    tabs = [n for (n,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    sfx = [n for n in tabs if n.startswith("rocpd_string")][0][len("rocpd_string"):]

    def t(base):
        return '"%s%s"' % (base, sfx)
    recs = con.execute("SELECT stream_id, sync_id FROM %s" % t("omniprof_cuda_event")).fetchall()
    check(len(recs) >= 2 * ITERS and len(set(s for s, _ in recs)) >= 2,
          "event recordings: %d rows on %d streams (want >= %d on 2)"
          % (len(recs), len(set(s for s, _ in recs)), 2 * ITERS))
    q = ("SELECT S.string, json_extract(E.extdata, '$.sync_id') FROM %s R JOIN %s E ON "
         "E.id = R.event_id JOIN %s S ON S.id = R.name_id WHERE S.string IN "
         "('SYNCHRONIZATION_EVENT', 'SYNCHRONIZATION_STREAM_WAIT_EVENT')"
         % (t("rocpd_region"), t("rocpd_event"), t("rocpd_string")))
    waits = con.execute(q).fetchall()
    ids = set(i for _, i in recs)
    kinds = set(k for k, _ in waits)
    named = sum(1 for _, i in waits if i in ids)
    check(len(kinds) == 2 and named == len(waits) and len(waits) >= 2 * ITERS,
          "event synchronize and stream wait records (%s, %d) all name a recording (%d)"
          % (sorted(kinds), len(waits), named))
    base = median([analyze(d, "--what-if", "kernel:^producer\\(=0.5") for d in base_dbs if d])
    fast = median([analyze(d) for d in (record("events_fast%d" % i, 20)
                                         for i in range(ROUNDS)) if d])
    if not base or not fast:
        sys.exit(1)
    wall = base["run"]["wall_ns"]
    items = {(i["kind"], i["name"]): i["ns"] for i in base["critical_path"]["items"]}
    print("critical path: %s" % sorted(items.items(), key=lambda x: -x[1])[:8])
    prod = sum(v for (k, n), v in items.items() if k == "kernel" and "producer" in n)
    other = sum(v for (k, n), v in items.items() if k == "kernel" and "busy_other" in n)
    # producer runs ITERS x 40 ms, busy_other ITERS x 45 ms (their recorded totals, below)
    tot = dict(con.execute(
        "SELECT Y.display_name, total(K.\"end\" - K.start) FROM %s K JOIN %s Y ON "
        "Y.id = K.kernel_id WHERE K.\"end\" - K.start > 1000000 GROUP BY 1"
        % (t("rocpd_kernel_dispatch"), t("rocpd_info_kernel_symbol"))).fetchall())
    prod_tot = sum(v for n, v in tot.items() if "producer" in n)
    other_tot = sum(v for n, v in tot.items() if "busy_other" in n)
    check(prod_tot > 0 and prod > 0.8 * prod_tot and other < 0.05 * max(other_tot, 1),
          "the path holds producer (%.1f of %.1f ms) through the stream's wait for its event, "
          "not busy_other (%.1f of %.1f ms): the event synchronize waited for its event's stream"
          % (prod / 1e6, prod_tot / 1e6, other / 1e6, other_tot / 1e6))
    pred = base["what_if"]["gain_pct"]
    meas = 100.0 * (wall - fast["run"]["wall_ns"]) / wall
    tol = max(5.0, 0.2 * abs(meas))
    check(abs(pred - meas) <= tol, "what-if producer 2x faster: predicted gain %.1f %% vs "
          "measured %.1f %% (tolerance %.1f)" % (pred, meas, tol))
    print("\n| program | predicted gain | measured gain | tolerance |\n|---|---|---|---|")
    print("| an_events (producer 40 -> 20 ms) | %.1f %% | %.1f %% | %.1f |" % (pred, meas, tol))
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
