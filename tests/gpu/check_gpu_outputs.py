#!/usr/bin/env python3
"""check_gpu_outputs.py --gen TEST_PC_SAMPLING --omniprof OMNIPROF --proto PERFETTO_PROTO — the
outputs of the GPU samplers without a GPU (CI): test_pc_sampling --keep writes a database with
known PC_SAMPLE, PM_SAMPLE, SASS_METRIC and UNIFIED_MEMORY records through the real writer; this
script checks what `omniprof summary` (console and json), `omniprof convert -f csv` and
`omniprof convert -f pftrace` (decoded by protoc against Perfetto's schema) make of them:
  - summary: top stall reasons per kernel with their shares, the hottest source lines, the SASS
    lines (instructions, warp and thread executions), unified memory per operation, PM metrics;
  - CSV: P_pc_sampling.csv, P_unified_memory_trace.csv and the PM rows of P_metric_trace.csv;
  - Perfetto: one counter track per (GPU, stall reason) whose values are the samples of each
    read (back to 0 when a reason is absent), PM counter tracks, unified-memory slices and
    instants with bytes, address and cause.
Exit 0 with "OK ...", else 1 with every failure."""
import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ERR = []


def check(cond, what):
    if not cond:
        ERR.append(what)
    return cond


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    if p.returncode != 0:
        raise SystemExit("FAIL: %s exited %d: %s" % (" ".join(cmd), p.returncode, p.stderr.decode()[-800:]))
    return p.stdout.decode()


def packets(text):
    """(timestamp, track_uuid, type, value, name, uuid, annotations) per packet of protoc's text."""
    out = []
    for block in text.split("\npacket {")[1:]:
        def one(pat, conv=str):
            m = re.search(pat, block)
            return conv(m.group(1)) if m else None
        out.append({
            "ts": one(r"\n  timestamp: (\d+)", int),
            "track": one(r"track_uuid: (\d+)", int),
            "type": one(r"type: (TYPE_\w+)"),
            "value": one(r"double_counter_value: ([-\d.e+]+)", float),
            "name": one(r'\n    name: "([^"]*)"'),
            "uuid": one(r"\n    uuid: (\d+)", int),
            "ints": [int(x) for x in re.findall(r"int_value: (-?\d+)", block)],
            "strings": re.findall(r'string_value: "([^"]*)"', block),
        })
    return out


def check_summary(omniprof, db):
    text = run([omniprof, "summary", "-i", db])
    for want in ["OMNIPROF PC SAMPLING: TOP STALL REASONS",
                 "| kmem | 100 | stall_long_scoreboard 80.0 %; stall_wait 20.0 % |",
                 "| kfma | 10 | stall_wait 90.0 %; selected 10.0 % |",
                 "OMNIPROF PC SAMPLING: HOTTEST SOURCE LINES",
                 "| /src/k.cu:10 | kmem | 60 | 60.00 |", "| /src/k.cu:11 | kmem | 40 | 40.00 |",
                 "OMNIPROF SASS METRICS: SOURCE LINES",
                 "| /src/loop.cu:21 | loop(float*, int) | 2 | 2000 | 64000 | 32.00 |",
                 "OMNIPROF UNIFIED MEMORY", "| MIGRATE_HOST_TO_DEVICE | 2 | 2162688 | 2500 |",
                 "| MIGRATE_DEVICE_TO_HOST | 1 | 65536 | 600 |", "| GPU_PAGE_FAULT | 1 | 0 | 90 |",
                 "OMNIPROF PM SAMPLING", "| 0 | sm__cycles_active.avg | cycles | 3 | 10 | 20 | 30 |"]:
        check(want in text, "summary lacks %r" % want)
    check(text.index("/src/k.cu:10") < text.index("/src/k.cu:11"), "summary: hottest line not first")
    js = json.loads(run([omniprof, "summary", "-i", db, "-f", "json"]))
    g = [e for e in js if e.get("summary") == "OMNIPROF GPU SAMPLING"]
    if check(len(g) == 1, "json summary: no OMNIPROF GPU SAMPLING element"):
        g = g[0]
        check(g["pc_stalls"][0]["kernel"] == "kmem" and g["pc_stalls"][0]["samples"] == 100, "json pc_stalls[0]")
        check([r["reason"] for r in g["pc_stalls"][0]["reasons"]] == ["stall_long_scoreboard", "stall_wait"],
              "json reasons of kmem: %s" % g["pc_stalls"][0]["reasons"])
        check(g["pc_lines"][0]["line"] == 10 and g["pc_lines"][0]["percent"] == 60, "json pc_lines[0]")
        check(g["sass_lines"][0]["inst_executed"] == 2000 and g["sass_lines"][0]["thread_inst_executed"] == 64000,
              "json sass_lines[0]")
        um = {r["operation"]: r for r in g["unified_memory"]}
        check(um.get("MIGRATE_HOST_TO_DEVICE", {}).get("bytes") == 2162688, "json unified_memory H2D bytes")
        pm = {r["metric"]: r for r in g["pm_sampling"]}
        check(pm.get("dram__bytes_read.sum", {}).get("max") == 5e8, "json pm_sampling dram max")


def check_csv(out):
    rows = list(csv.reader(open(os.path.join(out, "t_pc_sampling.csv"))))
    check(rows[0][:3] == ["Agent_Id", "Timestamp", "Method"] and len(rows) == 6, "pc_sampling.csv: %d rows" % len(rows))
    top = [r for r in rows[1:] if r[8] == "0x10"]
    check(len(top) == 1 and top[0][6] == "kmem" and top[0][10] == "/src/k.cu" and top[0][11] == "10" and
          top[0][12] == "stall_long_scoreboard" and top[0][13] == "60" and top[0][9] == "FFMA R1, R2, R3, R4",
          "pc_sampling.csv row of PC 0x10: %s" % top)
    check(all(r[0] == "Agent 1" for r in rows[1:]), "pc_sampling.csv agents: %s" % [r[0] for r in rows[1:]])
    um = list(csv.reader(open(os.path.join(out, "t_unified_memory_trace.csv"))))
    check(len(um) == 6, "unified_memory_trace.csv: %d rows" % len(um))
    h2d = [r for r in um[1:] if r[1] == "MIGRATE_HOST_TO_DEVICE"]
    check(sum(int(r[5]) for r in h2d) == 2162688 and all(r[2] == "Agent 0" and r[3] == "Agent 1" for r in h2d),
          "unified_memory_trace.csv host-to-device rows: %s" % h2d)
    met = [r for r in csv.reader(open(os.path.join(out, "t_metric_trace.csv"))) if r[0] == "gpu0.dram__bytes_read.sum"]
    check([(r[2], float(r[3])) for r in met] == [("100000", 1e3), ("200000", 5e8), ("300000", 2e3)],
          "metric_trace.csv PM rows: %s" % met)


def check_pftrace(out, proto):
    with open(os.path.join(out, "t_results.pftrace"), "rb") as f:
        p = subprocess.run(["protoc", "--decode=perfetto.protos.Trace", "-I", os.path.dirname(proto),
                            os.path.basename(proto)], stdin=f, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if not check(p.returncode == 0, "protoc could not decode the trace: %s" % p.stderr[-500:]):
        return
    pk = packets(p.stdout.decode())
    tracks = {x["uuid"]: x["name"] for x in pk if x["uuid"] is not None and x["name"]}
    def series(name):
        ids = [u for u, n in tracks.items() if n == name]
        return sorted((x["ts"], x["value"]) for x in pk if x["type"] == "TYPE_COUNTER" and x["track"] in ids)
    check(series("GPU 1 PC samples: stall_long_scoreboard") == [(5000, 80.0), (6000, 0.0)],
          "PC track stall_long_scoreboard: %s" % series("GPU 1 PC samples: stall_long_scoreboard"))
    check(series("GPU 1 PC samples: stall_wait") == [(5000, 20.0), (6000, 9.0)],
          "PC track stall_wait: %s" % series("GPU 1 PC samples: stall_wait"))
    check(series("GPU 1 PC samples: selected") == [(6000, 1.0)], "PC track selected: %s" % series("GPU 1 PC samples: selected"))
    check(series("gpu0.dram__bytes_read.sum") == [(100000, 1e3), (200000, 5e8), (300000, 2e3)],
          "PM track: %s" % series("gpu0.dram__bytes_read.sum"))
    um_ids = [u for u, n in tracks.items() if n == "GPU 1 Unified memory"]
    um = [x for x in pk if x["track"] in um_ids and x["type"] in ("TYPE_SLICE_BEGIN", "TYPE_INSTANT")]
    names = sorted(x["name"] for x in um)
    check(names == sorted(["MIGRATE_HOST_TO_DEVICE"] * 2 + ["MIGRATE_DEVICE_TO_HOST", "GPU_PAGE_FAULT", "CPU_PAGE_FAULT"]),
          "unified memory events on their track: %s" % names)
    big = [x for x in um if 2097152 in x["ints"]]
    check(len(big) == 1 and big[0]["strings"] == ["PREFETCH"] and big[0]["ts"] == 2000, "2 MiB migration slice: %s" % big)
    check(sum(1 for x in um if x["type"] == "TYPE_INSTANT") == 1, "one instant (the CPU fault)")
    ends = [x for x in pk if x["track"] in um_ids and x["type"] == "TYPE_SLICE_END"]
    check(len(ends) == 4, "unified memory slice ends: %d" % len(ends))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gen", required=True)
    ap.add_argument("--omniprof", required=True)
    ap.add_argument("--proto", required=True)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="omniprof-gpuout-")
    try:
        db = os.path.join(tmp, "g_results.db")
        run([a.gen, "--keep", db])
        check_summary(a.omniprof, db)
        run([a.omniprof, "convert", "-i", db, "-f", "csv", "pftrace", "-d", tmp, "-o", "t"])
        check_csv(tmp)
        if shutil.which("protoc"):
            check_pftrace(tmp, a.proto)
        else:
            print("note: protoc not found, Perfetto trace not decoded")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if ERR:
        print("FAIL: " + "; ".join(ERR))
        return 1
    print("OK summary, CSV and Perfetto outputs of PC samples, PM samples, SASS metrics and unified memory")
    return 0


if __name__ == "__main__":
    sys.exit(main())
