#!/usr/bin/env python3
"""summarize.py BENCH_LOG — the GPU launch benchmark table: median of the rounds per mode, added
cost over untraced, omniprof's added cost relative to bare CUPTI's in the matching mode, saxpy
added time. Prints markdown and a MET/MISSED line per target (benchmarks report targets;
they are not tests), FAIL only when numbers are missing."""
import collections
import re
import statistics
import sys

vals = collections.defaultdict(list)
for line in open(sys.argv[1]):
    m = re.match(r"metric=(\w+?)_(untraced|bare_kernel|bare_api|bare_launchcb|bare_apicb|omniprof_kernel|omniprof_api) value=([\d.]+)", line.strip())
    if m:
        vals[(m.group(1), m.group(2))].append(float(m.group(3)))
best = {k: statistics.median(v) for k, v in vals.items()}  # median of the rounds
modes = ["untraced", "bare_kernel", "bare_launchcb", "bare_apicb", "bare_api", "omniprof_kernel", "omniprof_api"]
print("| mode | enqueue µs/launch | added | launch→sync µs/kernel | saxpy 16M µs | added | saxpy 64M µs | added |")
print("|---|---|---|---|---|---|---|---|")
for m in modes:
    e = best.get(("launch_enqueue", m)); s = best.get(("launch_to_sync", m))
    x = best.get(("saxpy16M", m)); y = best.get(("saxpy64M", m))
    if None in (e, s, x, y):
        print("| %s | missing | | | | | | |" % m)
        continue
    e0 = best[("launch_enqueue", "untraced")]; x0 = best[("saxpy16M", "untraced")]; y0 = best[("saxpy64M", "untraced")]
    print("| %s | %.3f | %+.3f | %.3f | %.2f | %+.2f %% | %.2f | %+.2f %% |" % (
        m, e, e - e0, s, x, 100 * (x - x0) / x0, y, 100 * (y - y0) / y0))
ok = True
for om, bm in (("omniprof_kernel", "bare_kernel"), ("omniprof_api", "bare_api")):
    try:
        e0 = best[("launch_enqueue", "untraced")]
        ratio = (best[("launch_enqueue", om)] - e0) / max(1e-9, best[("launch_enqueue", bm)] - e0)
        x0 = best[("saxpy64M", "untraced")]
        sx = 100 * (best[("saxpy64M", om)] - x0) / x0
        b0 = 100 * (best[("saxpy64M", bm)] - x0) / x0
    except KeyError:
        print("FAIL %s: missing numbers" % om); ok = False; continue
    r1 = "MET" if ratio <= 1.1 else "MISSED"
    r2 = "MET" if sx <= 3.0 else "MISSED"
    print("%s bench.%s_launch_cost: %.2fx bare CUPTI's added cost (target <= 1.1x)" % (r1, om, ratio))
    print("%s bench.%s_saxpy64M: %+.2f %% added time (target <= 3 %%; bare CUPTI %s: %+.2f %%)" % (r2, om, sx, bm, b0))
