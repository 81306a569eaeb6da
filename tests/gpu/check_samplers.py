#!/usr/bin/env python3
"""check_samplers.py MODE DIR SOURCE.cu PROGRAM_STDOUT — checks what `omniprof run` wrote under DIR
for one mode of tests/gpu/samplers.cu (issue 16):
  pm       (--kernel-trace --pm-sampling dram__bytes_read.sum sm__cycles_active.avg ...) PM samples
           exist at the configured interval; dram__bytes_read.sum per sample is >= 10x higher
           during the memory-bound kernels (k_stream) than during the compute-bound ones (k_fma),
           and the bytes read during k_stream are the arithmetic (60 x 512 MiB) within 25%
  sass     (--sass-metrics k_count) the loop body's SASS instructions on k_count's loop line executed
           exactly warps x trips x launches times (warp level) and 32x that (thread level); only
           k_count is reported
  rows     (DIR MS -) the records of a cost run and their rate over MS milliseconds
  um       (--unified-memory-trace) host->device migrations move exactly the managed buffer's
           bytes; GPU page faults were seen; device->host migrations happened after
Prints "OK ..." or "FAIL ..." lines; exit 1 on failure."""
import glob
import json
import os
import sqlite3
import sys


def open_db(d):
    dbs = glob.glob(os.path.join(d, "**", "*_results.db"), recursive=True)
    if len(dbs) != 1:
        raise SystemExit("FAIL: expected one database under %s, found %s" % (d, dbs))
    return sqlite3.connect(dbs[0])


def base(name):
    return (name or "").split("(")[0].split("<")[0].strip()


def check_pm(con, exp, errors, notes):
    rows = con.execute("SELECT metric, start, \"end\", value FROM pm_samples ORDER BY start").fetchall()
    if not rows:
        errors.append("no PM samples (pm_samples is empty)")
        return
    dram = [(s, e, v) for m, s, e, v in rows if m == "dram__bytes_read.sum"]
    metrics = sorted({m for m, _, _, _ in rows})
    widths = sorted(e - s for s, e, _ in dram)
    notes.append("%d PM rows, metrics %s, median window %.1f us" % (len(rows), ",".join(metrics),
                                                                   widths[len(widths) // 2] / 1e3 if widths else 0))
    kern = {}
    for name, s, e in con.execute("SELECT name, start, \"end\" FROM kernels"):
        kern.setdefault(base(name), []).append((s, e))
    for k, n in ((exp["memory"], exp["stream_launches"]), (exp["compute"], exp["fma_launches"])):
        if len(kern.get(k, [])) != n:
            errors.append("%s: %d dispatches traced, expected %d" % (k, len(kern.get(k, [])), n))
    if errors:
        return

    def inside(spans):  # samples whose window lies inside the phase [first start, last end]
        lo, hi = min(s for s, _ in spans), max(e for _, e in spans)
        return [v for s, e, v in dram if s >= lo and e <= hi]

    mem, comp = inside(kern[exp["memory"]]), inside(kern[exp["compute"]])
    if len(mem) < 5 or len(comp) < 5:
        errors.append("too few PM samples inside the phases: %d memory-bound, %d compute-bound" % (len(mem), len(comp)))
        return
    m_avg, c_avg = sum(mem) / len(mem), sum(comp) / len(comp)
    notes.append("dram__bytes_read.sum per sample: %.3g during %s (%d samples), %.3g during %s (%d samples)" % (
        m_avg, exp["memory"], len(mem), c_avg, exp["compute"], len(comp)))
    if m_avg < 10 * max(c_avg, 1.0):
        errors.append("the memory-bound phase does not stand out: %.3g vs %.3g bytes per sample" % (m_avg, c_avg))
    want = exp["stream_launches"] * 512.0 * 2**20
    got = sum(mem)
    notes.append("bytes read during the memory-bound phase: %.4g, arithmetic %.4g (%.2fx)" % (got, want, got / want))
    if not 0.75 <= got / want <= 1.25:
        errors.append("bytes read during %s: %.4g, expected %.4g +-25%%" % (exp["memory"], got, want))


def check_sass(con, exp, src, errors, notes):
    line = [i + 1 for i, l in enumerate(open(src)) if "// SAMPLERS-LOOP-LINE" in l and l.split("//")[0].strip()][0]
    rows = con.execute("SELECT kernel, file, line, instruction, inst_executed, thread_inst_executed "
                       "FROM sass_instructions").fetchall()
    mine = [r for r in rows if base(r[0]) == exp["kernel"]]
    notes.append("%d SASS instruction rows, %d of %s" % (len(rows), len(mine), exp["kernel"]))
    if not mine:
        errors.append("no SASS metrics of %s" % exp["kernel"])
        return
    others = {base(r[0]) for r in rows} - {exp["kernel"]}
    if others:
        errors.append("the kernel filter let other kernels through: %s" % sorted(others))
    loop = [r for r in mine if r[2] == line and (r[1] or "").endswith("samplers.cu")]
    if not loop:
        lines = sorted({(r[1], r[2]) for r in mine})
        errors.append("no instruction of %s maps to samplers.cu:%d (lines seen: %s)" % (exp["kernel"], line, lines[:8]))
        return
    # the loop body runs `trips` times per warp; its exit test may run once more (trips + 1)
    per = exp["per_instruction"]
    exact = [r for r in loop if r[4] == per]
    top = max(loop, key=lambda r: r[4])
    notes.append("loop line %d: %d instructions, %d executed exactly warps x trips x launches = %d times (busiest: "
                 "%r %d warp / %d thread executions)" % (line, len(loop), len(exact), per, top[3], top[4], top[5]))
    if not exact:
        errors.append("no instruction of the loop line executed %d times (warps x trips x launches); counts seen: %s" % (
            per, sorted({r[4] for r in loop})))
    elif any(r[5] != 32 * per for r in exact):
        errors.append("thread_inst_executed of the loop body is %s, expected 32 x %d" % (
            sorted({r[5] for r in exact}), per))
    if top[4] > per + exp["warps"] * exp["launches"]:
        errors.append("an instruction of the loop line executed %d times, more than trips + 1 per warp" % top[4])
    # kernel records beside SASS metrics (run with --kernel-trace or --runtime-trace): every launch, timed
    ks = [(s, e) for n, s, e in con.execute("SELECT name, start, \"end\" FROM kernels") if base(n) == exp["kernel"]]
    notes.append("%d %s kernel records" % (len(ks), exp["kernel"]))
    if ks and (len(ks) != exp["launches"] or any(e <= s for s, e in ks)):
        errors.append("%d %s kernel records (%d with end <= start), expected %d launches" % (
            len(ks), exp["kernel"], sum(e <= s for s, e in ks), exp["launches"]))
    ffma = [r for r in loop if (r[3] or "").startswith("FFMA")]
    if ffma and ffma[0][4] != per:
        errors.append("the loop's FFMA executed %d times, expected %d" % (ffma[0][4], per))


def check_um(con, exp, errors, notes):
    ops = dict(con.execute("SELECT operation, count(*) FROM memory_unified GROUP BY operation").fetchall())
    notes.append("unified-memory events: %s" % json.dumps(ops, sort_keys=True))
    htod = con.execute("SELECT COALESCE(sum(bytes), 0), count(*), min(start) FROM memory_migrations "
                       "WHERE operation = 'MIGRATE_HOST_TO_DEVICE'").fetchone()
    dtoh = con.execute("SELECT COALESCE(sum(bytes), 0), count(*), max(\"end\") FROM memory_migrations "
                       "WHERE operation = 'MIGRATE_DEVICE_TO_HOST'").fetchone()
    faults = con.execute("SELECT count(*) FROM memory_page_faults WHERE operation = 'GPU_PAGE_FAULT'").fetchone()[0]
    notes.append("host->device %d bytes in %d migrations (buffer %d bytes), device->host %d bytes in %d, "
                 "%d GPU page faults" % (htod[0], htod[1], exp["bytes"], dtoh[0], dtoh[1], faults))
    if htod[0] != exp["bytes"]:
        errors.append("host->device migrations moved %d bytes, the buffer has %d" % (htod[0], exp["bytes"]))
    if faults == 0:
        errors.append("no GPU page fault recorded")
    if dtoh[1] == 0:
        errors.append("no device->host migration after the CPU read the buffer back")
    elif htod[2] is not None and dtoh[2] is not None and dtoh[2] < htod[2]:
        errors.append("device->host migrations end before the first host->device one")
    bad = con.execute("SELECT count(*) FROM memory_migrations WHERE bytes <= 0 OR address = 0").fetchone()[0]
    if bad:
        errors.append("%d migrations without bytes or address" % bad)


def rows(d, ms):
    """The records a cost run wrote and their rate over the run's wall time (ms)."""
    con = open_db(d)
    n = {}
    for key, sql in (("kernels", "SELECT count(*) FROM rocpd_kernel_dispatch"),
                     ("pc_rows", "SELECT count(*) FROM omniprof_pc_sample"),
                     ("pc_samples", "SELECT COALESCE(sum(samples), 0) FROM omniprof_pc_sample"),
                     ("pm_rows", "SELECT count(*) FROM pm_samples")):
        try:
            n[key] = con.execute(sql).fetchone()[0]
        except sqlite3.Error:
            n[key] = 0
    sec = max(float(ms), 1.0) / 1e3
    print("records: " + " ".join("%s=%d (%.0f/s)" % (k, v, v / sec) for k, v in n.items()))
    return 0


def main():
    mode, d, src, out = sys.argv[1:5]
    if mode == "rows":
        return rows(d, src)
    con = open_db(d)
    exp = json.loads([l[7:] for l in open(out) if l.startswith("EXPECT ")][0])
    errors, notes = [], []
    if mode == "pm":
        check_pm(con, exp, errors, notes)
    elif mode == "sass":
        check_sass(con, exp, src, errors, notes)
    elif mode == "um":
        check_um(con, exp, errors, notes)
    else:
        raise SystemExit("FAIL: unknown mode %s" % mode)
    for e in errors:
        print("FAIL " + e)
    print(("FAIL " if errors else "OK ") + "; ".join(notes))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
