#!/usr/bin/env python3
"""counters_check.py — checks of the counters GPU tests (tests/gpu/counters.sh), stdlib only.

  counters_check.py bytes CSV N            saxpy dispatches read 2*N*4 bytes (within 2%)
  counters_check.py derived CSV            DRAM_BYTES = read + write, DRAM_GBPS = bytes / ns
  counters_check.py multipass CSV PASSES   every dispatch took PASSES passes, values sane
  counters_check.py ncu CSV NCU_CSV M...   per-kernel values of metrics M agree with ncu (2%)
  counters_check.py db DIR NCU_CSV M...    same, from an `omniprof run --pmc` database
CSV rows (counters_tool.c): corr,dispatch,kernel,passes,start,end,counter,value.
Prints one line; exit 0 on success."""
import csv, glob, os, sqlite3, sys


def load(path):
    """{dispatch id: {"kernel":..., "passes":..., "start":..., "end":..., counter: value}} in launch order."""
    d = {}
    with open(path) as f:
        for line in f:
            # kernel names hold commas: split two fields off the front, five off the back
            head = line.rstrip("\n").split(",", 2)
            if len(head) != 3:
                continue
            tail = head[2].rsplit(",", 5)
            if len(tail) != 6:
                continue
            # one entry per dispatch id: the correlation id is 0 when no API tracing is on
            dispatch = int(head[1])
            e = d.setdefault(dispatch, {"kernel": tail[0], "passes": int(tail[1]), "start": int(tail[2]),
                                    "end": int(tail[3])})
            e[tail[4]] = float(tail[5])
    return [d[k] for k in sorted(d)]


def short(name):
    for k in ("saxpy", "fma_loop", "empty_kernel"):
        if k in name:
            return k
    return name


def close(a, b, tol=0.02):
    return abs(a - b) <= tol * max(abs(a), abs(b), 1e-30)


def load_ncu(path, metrics):
    """[{kernel, metric: value}] by ncu's ID (launch order)."""
    rows = {}
    with open(path) as f:
        lines = [l for l in f if l.startswith('"')]
    for r in csv.DictReader(lines):
        try:
            i = int(r["ID"])
        except (KeyError, ValueError):
            continue
        e = rows.setdefault(i, {"kernel": r.get("Kernel Name", "")})
        name = r.get("Metric Name")
        if name in metrics:
            v = r.get("Metric Value", "").replace(",", "")
            try:
                e[name] = float(v)
            except ValueError:
                pass
    return [rows[k] for k in sorted(rows)]


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def compare(ours, ncu, metrics):
    """Per kernel name and metric, the median over its launches must agree within 2%, or, for tiny
    values (an empty kernel: a few hundred bytes, ~2,700 cycles), within 0.5% of the metric's
    largest value over all kernels — the counting window's own fixed cost. The worst
    launch-by-launch difference is reported too."""
    n = min(len(ours), len(ncu))
    if n == 0:
        return False, "no kernels to compare (ours %d, ncu %d)" % (len(ours), len(ncu))
    if len(ours) != len(ncu):
        return False, "%d kernels counted, ncu profiled %d" % (len(ours), len(ncu))
    bad, worst, series = [], {}, {}
    for i in range(n):
        k = short(ours[i]["kernel"])
        if k != short(ncu[i]["kernel"]):
            bad.append("kernel %d: %s vs ncu %s" % (i, ours[i]["kernel"], ncu[i]["kernel"]))
            continue
        for m in metrics:
            a, b = ours[i].get(m), ncu[i].get(m)
            if a is None or b is None:
                bad.append("kernel %d %s: missing (ours %s, ncu %s)" % (i, m, a, b))
                continue
            series.setdefault((k, m), ([], []))
            series[(k, m)][0].append(a)
            series[(k, m)][1].append(b)
            worst[(k, m)] = max(worst.get((k, m), 0), abs(a - b) / max(abs(b), 1e-30))
    scale = {}
    for (k, m), (a, b) in series.items():
        scale[m] = max(scale.get(m, 0), max(b))
    res = []
    for (k, m), (a, b) in sorted(series.items()):
        ma, mb = median(a), median(b)
        rel = abs(ma - mb) / max(abs(mb), 1e-30)
        ok = rel <= 0.02 or abs(ma - mb) <= 0.005 * scale[m]
        res.append("%s/%s median %.6g vs ncu %.6g (%.2f%%, worst launch %.2f%%)" % (k, m, ma, mb, 100 * rel,
                                                                                 100 * worst[(k, m)]))
        if not ok:
            bad.append("%s/%s: median %.6g vs ncu %.6g" % (k, m, ma, mb))
    if bad:
        return False, "%d kernels, %d mismatches: %s | %s" % (n, len(bad), "; ".join(bad[:4]), "; ".join(res))
    return True, "%d kernels agree with ncu within 2%%: %s" % (n, "; ".join(res))


def main():
    mode = sys.argv[1]
    if mode == "bytes":
        rows, n = load(sys.argv[2]), int(sys.argv[3])
        sax = [r for r in rows if short(r["kernel"]) == "saxpy"]
        want = 2 * n * 4
        bad = [r["dram__bytes_read.sum"] for r in sax if not close(r.get("dram__bytes_read.sum", -1), want)]
        ok = sax and not bad
        vals = sorted(r.get("dram__bytes_read.sum", -1) for r in sax)
        print("%s: %d saxpy dispatches, dram__bytes_read.sum %s..%s, expected %d (2%%); %d dispatches in all%s" % (
            "OK" if ok else "BAD", len(sax), vals[0] if vals else "-", vals[-1] if vals else "-", want, len(rows),
            "" if not bad else "; off: %s" % bad[:3]))
        return 0 if ok else 1
    if mode == "derived":
        rows = load(sys.argv[2])
        bad = 0
        for r in rows:
            rd, wr, ns = r["dram__bytes_read.sum"], r["dram__bytes_write.sum"], r["gpu__time_duration.sum"]
            if not close(r["DRAM_BYTES"], rd + wr, 1e-9):
                bad += 1
            if ns > 0 and not close(r["DRAM_GBPS"], (rd + wr) / ns, 1e-9):
                bad += 1
            if r["end"] - r["start"] != int(ns):
                bad += 1
        print("%s: %d dispatches, DRAM_BYTES == read + write and DRAM_GBPS == bytes / gpu__time_duration.sum, "
              "header end - start == gpu__time_duration.sum; %d mismatches" % ("OK" if rows and not bad else "BAD",
                                                                             len(rows), bad))
        return 0 if rows and not bad else 1
    if mode == "multipass":
        rows, passes = load(sys.argv[2]), int(sys.argv[3])
        m = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
        bad = [r for r in rows if r["passes"] != passes or not (0 <= r.get(m, -1) <= 100.5)]
        fma = [r[m] for r in rows if short(r["kernel"]) == "fma_loop"]
        ok = rows and not bad and fma and max(fma) > 10
        print("%s: %d dispatches with %d passes each; %s of fma_loop %s; bad %d" % (
            "OK" if ok else "BAD", len(rows), passes, m, ["%.1f" % v for v in fma[:3]], len(bad)))
        return 0 if ok else 1
    if mode == "ncu":
        ours, metrics = load(sys.argv[2]), sys.argv[4:]
        ok, msg = compare(ours, load_ncu(sys.argv[3], metrics), metrics)
        print(("OK: " if ok else "BAD: ") + msg)
        return 0 if ok else 1
    if mode == "db":
        dbs = glob.glob(os.path.join(sys.argv[2], "**", "*.db"), recursive=True)
        if not dbs:
            print("BAD: no database under %s" % sys.argv[2])
            return 1
        metrics = sys.argv[4:]
        con = sqlite3.connect(dbs[0])
        try:
            q = con.execute("SELECT dispatch_id, name, counter_name, counter_value, id FROM pmc_events ORDER BY id").fetchall()
        except sqlite3.Error as e:
            print("BAD: %s: pmc_events: %s" % (dbs[0], e))
            return 1
        per = {}
        order = []
        for disp, name, cname, val, _ in q:
            if disp not in per:
                per[disp] = {"kernel": name or "?"}
                order.append(disp)
            per[disp][cname] = val
        ours = [per[d] for d in sorted(order)]
        ok, msg = compare(ours, load_ncu(sys.argv[3], metrics), metrics)
        print(("OK: " if ok else "BAD: ") + "%s: %d pmc_events rows; " % (os.path.basename(dbs[0]), len(q)) + msg)
        return 0 if ok else 1
    print("unknown mode", mode)
    return 2


if __name__ == "__main__":
    sys.exit(main())
