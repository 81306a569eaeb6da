#!/usr/bin/env python3
"""check_omniprof_run.py DIR PROGRAM_STDOUT|--pytorch — checks the rocpd database that
`omniprof run --runtime-trace --stats --summary` wrote under DIR for a GPU test program:
  - the `kernels` view holds exactly the expected rows (per kernel name) and `memory_copies`
    exactly the expected copies;
  - every kernel and copy correlation id resolves to a region (API call) on the same thread;
  - every kernel row names a GPU agent (agent rows appear once the program initialized CUDA);
  - the summary's kernel totals (`top_kernels`) equal the sum over the `kernels` rows;
  - a *_stats.csv file was written (--stats).
Prints failures and "OK ..." ; exit 1 on failure."""
import glob
import json
import os
import sqlite3
import sys


def base(name):
    return (name or "").split("(")[0].split("<")[0].strip()


def main():
    d, out = sys.argv[1], sys.argv[2]
    dbs = glob.glob(os.path.join(d, "**", "*_results.db"), recursive=True)
    if len(dbs) != 1:
        print("FAIL: expected one *_results.db under %s, found %s" % (d, dbs))
        return 1
    exp = None
    if out != "--pytorch":
        for line in open(out):
            if line.startswith("EXPECT "):
                exp = json.loads(line[7:])
    con = sqlite3.connect(dbs[0])
    errors = []
    # The writer stores the internal correlation id of a record (the launching call's id for GPU
    # activity) in rocpd_event.stack_id, as rocprofv3 does, and the external id in
    # correlation_id; "resolves" therefore means: same stack_id as an API region, same thread.
    kernels = con.execute("SELECT name, stack_id, tid, start, end FROM kernels").fetchall()
    copies = con.execute("SELECT name, stack_id, tid, start, end FROM memory_copies").fetchall()
    regions = {}
    for corr, tid in con.execute("SELECT stack_id, tid FROM regions"):
        regions.setdefault(corr, set()).add(tid)
    names = {}
    for n, corr, tid, s, e in kernels:
        names[base(n)] = names.get(base(n), 0) + 1
    if exp is not None:
        want = {k: v["count"] for k, v in exp.get("kernels", {}).items()}
        if names != want:
            errors.append("kernels view: %s, expected %s" % (names, want))
        nc = sum(v[0] for v in exp.get("copies", {}).values())
        if len(copies) != nc:
            errors.append("memory_copies view: %d rows, expected %d" % (len(copies), nc))
    elif not kernels:
        errors.append("no kernels in the database")
    bad = 0
    zero = sum(1 for rows in (kernels, copies) for r in rows if not r[1])
    if zero:
        errors.append("%d kernel/copy rows have no correlation id (stack_id 0 or NULL)" % zero)
    if len(set(r[1] for r in kernels)) != len(kernels) and exp is not None and not exp.get("graph"):
        errors.append("kernels share correlation ids: %d distinct for %d rows" % (len(set(r[1] for r in kernels)), len(kernels)))
    for what, rows in (("kernel", kernels), ("copy", copies)):
        for n, corr, tid, s, e in rows:
            if not corr:
                continue
            if corr not in regions or tid not in regions[corr]:
                bad += 1
                if bad <= 5:
                    errors.append("%s %s: correlation id %s does not resolve to a region on thread %s" % (what, n, corr, tid))
            if not (s < e):
                errors.append("%s %s: start %s !< end %s" % (what, n, s, e))
    # every kernel and copy names its GPU: the agent row is written before the first record of
    # that GPU (the tool's agents appear only once the program initialized CUDA, docs/cuda.md)
    gpus = con.execute("SELECT count(*) FROM rocpd_info_agent WHERE type = 'GPU'").fetchone()[0]
    noagent = con.execute("SELECT count(*) FROM kernels WHERE agent_type IS NOT 'GPU'").fetchone()[0]
    if not gpus or noagent:
        errors.append("%d GPU agent rows; %d of %d kernel rows without a GPU agent" % (gpus, noagent, len(kernels)))
    total_rows = sum(e - s for _, _, _, s, e in kernels) / 1000.0
    tk = con.execute("SELECT COALESCE(SUM(total_duration), 0), COALESCE(SUM(total_calls), 0) FROM top_kernels").fetchone()
    if abs(tk[0] - total_rows) > 1e-6 * max(1.0, total_rows) + 1e-3 or tk[1] != len(kernels):
        errors.append("top_kernels totals %.3f us / %d calls != sum of kernels rows %.3f us / %d" % (tk[0], tk[1], total_rows, len(kernels)))
    stats = glob.glob(os.path.join(d, "**", "*_stats.csv"), recursive=True)
    if not stats:
        errors.append("no *_stats.csv written (--stats)")
    for e in errors[:20]:
        print("FAIL: " + e)
    summary = "kernels=%d copies=%d regions=%d db=%s" % (len(kernels), len(copies), len(regions), os.path.basename(dbs[0]))
    if errors:
        print("FAILED " + summary)
        return 1
    print("OK " + summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
