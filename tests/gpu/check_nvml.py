#!/usr/bin/env python3
"""check_nvml.py DIR SMI_CSV — the NVML device metrics of the process sampler (omniprof run
--process-sampling) against nvidia-smi readings taken in the same run (SMI_CSV from
`nvidia-smi --query-gpu=power.draw,temperature.gpu,utilization.gpu,memory.used,clocks.sm
--format=csv,noheader,nounits -lms 200`, while a GPU load ran).
Compared over the samples of the busy part (utilization >= 50 % in nvidia-smi's readings):
medians of power within 20 %, temperature within 5 C, utilization within 15 points, memory used
within 5 %, SM clock within 10 %; each metric needs at least 5 samples on both sides.
Prints "OK ..." or the failures; exit 1 on failure."""
import glob
import os
import sqlite3
import statistics
import sys

METRICS = [  # (omniprof suffix, nvidia-smi column, scale omniprof -> smi units, tolerance, relative?)
    ("power_w", 0, 1.0, 0.20, True),
    ("temperature_c", 1, 1.0, 5.0, False),
    ("utilization_pct", 2, 1.0, 15.0, False),
    ("memory_used_bytes", 3, 1.0 / (1 << 20), 0.05, True),
    ("sm_clock_mhz", 4, 1.0, 0.10, True),
]


def main():
    d, smi = sys.argv[1], sys.argv[2]
    dbs = glob.glob(os.path.join(d, "**", "*_results.db"), recursive=True)
    if not dbs:
        print("FAIL: no database under %s" % d)
        return 1
    rows = []
    for line in open(smi):
        try:
            rows.append([float(x) for x in line.strip().split(",")])
        except ValueError:
            continue
    busy = [r for r in rows if len(r) >= 5 and r[2] >= 50]
    con = sqlite3.connect(dbs[0])
    names = [n for (n,) in con.execute("SELECT DISTINCT name FROM omniprof_metrics WHERE name LIKE 'gpu%'")]
    errors, notes = [], []
    if len(busy) < 5:
        errors.append("nvidia-smi saw only %d busy readings" % len(busy))
    util_name = [n for n in names if n.endswith("utilization_pct")]
    busy_ts = []
    if util_name:
        ts = con.execute("SELECT timestamp, value FROM omniprof_metrics WHERE name = ? ORDER BY timestamp", util_name).fetchall()
        busy_ts = [t for t, v in ts if v >= 50]
    for suffix, col, scale, tol, rel in METRICS:
        name = [n for n in names if n.endswith(suffix)]
        if not name:
            errors.append("no %s metric in the database (names: %s)" % (suffix, names))
            continue
        vals = [v * scale for (t, v) in con.execute("SELECT timestamp, value FROM omniprof_metrics WHERE name = ?", name)
                if not busy_ts or busy_ts[0] <= t <= busy_ts[-1]]
        ref = [r[col] for r in busy]
        if len(vals) < 5 or len(ref) < 5:
            errors.append("%s: %d omniprof samples, %d nvidia-smi readings" % (suffix, len(vals), len(ref)))
            continue
        a, b = statistics.median(vals), statistics.median(ref)
        diff = abs(a - b) / max(abs(b), 1e-9) if rel else abs(a - b)
        ok = diff <= tol
        notes.append("%s %.1f vs nvidia-smi %.1f (%s)" % (suffix, a, b, ("%.1f %%" % (100 * diff)) if rel else ("%.1f" % diff)))
        if not ok:
            errors.append("%s median %.2f, nvidia-smi %.2f (tolerance %s)" % (suffix, a, b, tol))
    if errors:
        print("FAIL: " + "; ".join(errors) + " | " + "; ".join(notes))
        return 1
    print("OK %d busy nvidia-smi readings: %s" % (len(busy), "; ".join(notes)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
