#!/usr/bin/env python3
"""Tests that omniprof databases are rocpd databases AMD's tools read (issue 13): the invariants
AMD's views rely on, stated in our words, on databases written by the real writer
(tests/compat/compat_db.c), by the synthetic generator (bench/output/gen_db.c), by a real run
and by `omniprof merge`. tests/compat/CMakeLists.txt runs one case per CTest test (compat.<case>).

usage: test_compat.py CASE --omniprof BIN --compat-db GEN --gen GEN --demo PROG --python PYDIR --lib LIB

The case `amd_views` runs AMD's own view SQL and Python package (tests/compat/amd_rocpd_check.py)
when OMNIPROF_AMD_ROCPD names a folder with AMD's files, and skips (exit 77) with the reason
otherwise: AMD's files are never part of omniprof.
"""

import argparse
import collections
import csv
import io
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile

A = None
SKIP = 77


def run(argv, rc=0, env=None):
    p = subprocess.run([str(a) for a in argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    if rc is not None and p.returncode != rc:
        raise AssertionError("%s: exit %d (expected %d)\nstdout: %s\nstderr: %s" % (
            " ".join(map(str, argv)), p.returncode, rc, p.stdout[-3000:], p.stderr[-3000:]))
    return p


def eq(a, b, what):
    if a != b:
        raise AssertionError("%s: %r != %r" % (what, a, b))


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def q(db, sql, *params):
    con = sqlite3.connect(db)
    con.text_factory = bytes
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def q1(db, sql, *params):
    return q(db, sql, *params)[0][0]


def compat_db(d, name="w.db", *args):
    path = os.path.join(d, name)
    expect = json.loads(run([A.compat_db, path] + list(args)).stdout.decode().strip().splitlines()[-1])
    return path, expect


def gen_db(d, name="g.db", *args):
    path = os.path.join(d, name)
    run([A.gen, path, "--events", 3000] + list(args))
    return path


def run_db(d):
    """A database of a real run: the demo program under markers and sampling."""
    run([A.omniprof, "run", "--marker-trace", "--sample", "-d", d, "-o", "run", "--", A.demo])
    return os.path.join(d, "run_results.db")


# ------------------------------------------------------------------------------------------
# Invariants AMD's views rely on.

def gpu_invariants(db, what):
    """Every GPU row resolves to its process, thread, agents and (for stream work) queue."""
    # every dispatch has a queue of its own process and agent
    eq(q1(db, "SELECT COUNT(*) FROM rocpd_kernel_dispatch WHERE queue_id IS NULL"), 0, what + ": dispatches without queue")
    eq(q1(db, """SELECT COUNT(*) FROM rocpd_kernel_dispatch K JOIN rocpd_info_queue Q ON Q.id = K.queue_id AND Q.guid = K.guid
                 WHERE Q.pid = K.pid AND coalesce(json_extract(Q.extdata, '$.agent_id'), K.agent_id) = K.agent_id"""),
       q1(db, "SELECT COUNT(*) FROM rocpd_kernel_dispatch"), what + ": dispatches whose queue is of their process and agent")
    # one queue per (stream, agent): no two queues for the same pair, no queue shared by two pairs
    eq(q1(db, """SELECT COUNT(*) FROM (SELECT queue_id FROM (SELECT queue_id, stream_id, agent_id FROM rocpd_kernel_dispatch
                 UNION SELECT queue_id, stream_id, dst_agent_id FROM rocpd_memory_copy WHERE queue_id IS NOT NULL)
                 GROUP BY queue_id HAVING COUNT(DISTINCT coalesce(stream_id, -1)) > 1)"""), 0, what + ": a queue spans streams")
    # copies and memsets: both agents known, queue of the same process
    eq(q1(db, "SELECT COUNT(*) FROM rocpd_memory_copy WHERE src_agent_id IS NULL OR dst_agent_id IS NULL"), 0,
       what + ": copies without an agent")
    eq(q1(db, """SELECT COUNT(*) FROM rocpd_memory_copy M LEFT JOIN rocpd_info_queue Q ON Q.id = M.queue_id AND Q.guid = M.guid
                 WHERE M.stream_id IS NOT NULL AND (Q.id IS NULL OR Q.pid != M.pid)"""), 0, what + ": copies without their queue")
    # every GPU row has a thread row of its process
    for t in ("rocpd_kernel_dispatch", "rocpd_memory_copy", "rocpd_memory_allocate"):
        eq(q1(db, f"""SELECT COUNT(*) FROM {t} X LEFT JOIN rocpd_info_thread T ON T.id = X.tid AND T.guid = X.guid
                      WHERE T.id IS NULL OR T.pid != X.pid"""), 0, f"{what}: {t} rows without a thread of their process")
    # natural keys: the process row's id is the OS pid, a thread row's id its tid (or the
    # per-process row of unknown launching threads)
    eq(q1(db, "SELECT COUNT(*) FROM rocpd_info_process WHERE id != pid"), 0, what + ": process id != pid")
    eq(q1(db, "SELECT COUNT(*) FROM rocpd_info_thread WHERE id != tid AND NOT (tid = 0 AND id = (1 << 32) + pid)"), 0,
       what + ": thread id != tid")
    # every row's pid is its process row's id (a statement writing 1 there would break joins)
    con = sqlite3.connect(db)
    plain = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'view' AND "
                                       "(name LIKE 'rocpd\\_%' ESCAPE '\\' OR name LIKE 'omniprof\\_%' ESCAPE '\\')")]
    for v in plain:
        cols = [c[1] for c in con.execute(f'PRAGMA table_info("{v}")')]
        if "pid" in cols and "guid" in cols and v != "rocpd_info_process":
            n = con.execute(f'SELECT COUNT(*) FROM "{v}" X WHERE X.pid IS NOT NULL AND NOT EXISTS '
                            f'(SELECT 1 FROM rocpd_info_process P WHERE P.id = X.pid AND P.guid = X.guid)').fetchone()[0]
            eq(n, 0, f"{what}: {v} rows whose pid is no process row")
    con.close()
    # the views keep every row
    for view, table in (("kernels", "rocpd_kernel_dispatch"), ("memory_copies", "rocpd_memory_copy"),
                        ("memory_allocations", "rocpd_memory_allocate")):
        eq(q1(db, f"SELECT COUNT(*) FROM {view}"), q1(db, f"SELECT COUNT(*) FROM {table}"), f"{what}: {view} rows")


def case_queues():
    with tempfile.TemporaryDirectory() as d:
        w, e = compat_db(d)
        gpu_invariants(w, "writer")
        # 3 streams on GPU0 and one on GPU1 carry kernels; the counted dispatch has no stream
        eq(sorted(r[0] for r in q(w, "SELECT name FROM rocpd_info_queue")),
           [b"(unknown stream)", b"stream 40", b"stream 7", b"stream 8", b"stream 9"], "queue names")
        eq(q1(w, "SELECT COUNT(*) FROM kernels"), e["kernels"], "kernels")
        eq(q1(w, "SELECT COUNT(*) FROM kernels WHERE queue IS NOT NULL"), e["kernels"], "kernels with a queue")
        eq(q1(w, "SELECT COUNT(DISTINCT queue_id) FROM kernels WHERE agent_abs_index = 3"), 1, "GPU1's queues")
        gpu_invariants(gen_db(d), "gen_db")


def case_memsets():
    with tempfile.TemporaryDirectory() as d:
        w, e = compat_db(d)
        eq(q1(w, "SELECT COUNT(*) FROM memory_copies WHERE name = 'MEMORY_SET'"), e["memsets"], "memsets in memory_copies")
        eq(q1(w, "SELECT COUNT(*) FROM rocpd_memory_copy M JOIN rocpd_string S ON S.id = M.name_id WHERE S.string = "
                 "'MEMORY_SET' AND M.src_agent_id = M.dst_agent_id"), e["memsets"], "memsets with their device as source")
        eq(q1(w, "SELECT COUNT(*) FROM omniprof_memory_sets"), e["memsets"], "omniprof_memory_sets")
        eq(q1(w, "SELECT COUNT(*) FROM memory_copies WHERE name != 'MEMORY_SET'"), e["copies"], "copies")
        # the host side of a copy is the CPU agent
        eq(q1(w, "SELECT COUNT(*) FROM memory_copies WHERE name = 'MEMORY_COPY_HOST_TO_DEVICE' AND src_agent_type = 'CPU' "
                 "AND dst_agent_type = 'GPU'"),
           q1(w, "SELECT COUNT(*) FROM memory_copies WHERE name = 'MEMORY_COPY_HOST_TO_DEVICE'"), "H2D source is the CPU")
        check(q1(w, "SELECT COUNT(*) FROM memory_copies WHERE name = 'MEMORY_COPY_HOST_TO_DEVICE'") > 0, "H2D copies")
        g = gen_db(d)
        eq(q1(g, "SELECT COUNT(*) FROM memory_copies WHERE name = 'MEMORY_SET' AND src_agent_type = 'GPU'"),
           q1(g, "SELECT COUNT(*) FROM omniprof_memory_sets"), "gen_db memsets")


def case_threads():
    with tempfile.TemporaryDirectory() as d:
        w, e = compat_db(d, "w.db", "--pid", 31337)
        eq(q1(w, "SELECT id FROM rocpd_info_process"), 31337, "process id")
        eq(q(w, "SELECT id, tid, name FROM rocpd_info_thread WHERE tid = 0"),
           [((1 << 32) + 31337, 0, b"(unknown launching thread)")], "the thread row of unknown launching threads")
        eq(q1(w, "SELECT COUNT(*) FROM kernels WHERE tid = 0") + q1(w, "SELECT COUNT(*) FROM memory_copies WHERE tid = 0")
           + q1(w, "SELECT COUNT(*) FROM memory_allocations WHERE tid = 0"),
           e["no_thread"] + q1(w, "SELECT COUNT(*) FROM rocpd_memory_copy M JOIN rocpd_info_thread T ON T.id = M.tid "
                                  "WHERE T.tid = 0"), "rows of unknown launching threads")
        eq(q1(w, "SELECT COUNT(*) FROM threads"), 3, "threads: two real, one for unknown launchers")
        gpu_invariants(w, "writer")


def case_instants():
    with tempfile.TemporaryDirectory() as d:
        w, e = compat_db(d)
        eq(q1(w, "SELECT COUNT(*) FROM samples WHERE name = 'cudaGetLastError' AND category = 'CUDA_RUNTIME_API'"),
           e["api_instants"], "zero-length calls keep their function name")
        eq(q1(w, "SELECT COUNT(*) FROM samples WHERE category = 'CUDA_RUNTIME_API'"), e["api_instants"], "API instants")
        eq(q1(w, "SELECT COUNT(*) FROM single_markers WHERE name = 'checkpoint'"), e["marks"], "marks by their text")
        eq(q1(w, "SELECT COUNT(*) FROM samples WHERE category = 'CPU_SAMPLE' AND name = 'CPU_SAMPLE'"), e["cpu_samples"],
           "CPU samples")
        # a mark's track is the thread's marker track (one per thread, not one per text; all marks
        # of compat_db come from its first thread)
        eq(q1(w, "SELECT COUNT(DISTINCT T.id) FROM rocpd_sample S JOIN rocpd_track T ON T.id = S.track_id "
                 "JOIN rocpd_event E ON E.id = S.event_id JOIN rocpd_string C ON C.id = E.category_id "
                 "WHERE C.string = 'MARKER_API'"), 1, "marker tracks")


def case_views():
    with tempfile.TemporaryDirectory() as d:
        w, e = compat_db(d)
        con = sqlite3.connect(w)
        cols = lambda v: [c[0] for c in con.execute(f'SELECT * FROM "{v}" LIMIT 0').description]
        check("duration" in cols("scratch_memory"), "scratch_memory has duration")
        eq(cols("sample_regions")[8], "END", "sample_regions' end column is spelled END")
        eq(cols("regions_and_samples"), cols("regions"), "regions_and_samples has the columns of regions")
        con.close()
        eq(q1(w, "SELECT COUNT(*) FROM memory_allocations"), e["allocations"], "allocations")
        eq(q1(w, "SELECT COUNT(*) FROM range_markers"), e["ranges"], "range markers")
        eq(q1(w, "SELECT COUNT(*) FROM markers"), e["ranges"] + e["marks"], "markers")
        eq(sorted(r[0] for r in q(w, "SELECT name FROM single_marker_summary")), [b"checkpoint"], "single marker summary")
        eq(q1(w, "SELECT calls FROM marker_summary WHERE name = 'checkpoint'"), e["marks"], "marker summary calls")
        eq(q1(w, "SELECT SUM(calls) FROM range_marker_summary"), e["ranges"], "range marker summary calls")
        eq(q1(w, "SELECT COUNT(*) FROM regions"), e["regions"], "regions")


def case_text():
    """Every text of every view is valid UTF-8 (Python's sqlite3 decodes it) and gives its original
    bytes back through omniprof.unescape_text."""
    sys.path.insert(0, A.python)
    import omniprof
    with tempfile.TemporaryDirectory() as d:
        w, e = compat_db(d)
        con = sqlite3.connect(w)  # default text factory: raises on invalid UTF-8
        views = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'view'")]
        for v in views:
            con.execute(f'SELECT * FROM "{v}"').fetchall()
        names = {r[0] for r in con.execute("SELECT display_name FROM kernel_symbols")}
        check(r"fill\xFF\xFE(char*)" in names, "the invalid bytes of a kernel name are escaped: %r" % names)
        eq(omniprof.unescape_text(r"fill\xFF\xFE(char*)"), b"fill\xff\xfe(char*)", "unescape")
        eq({omniprof.unescape_text(r[0]) for r in con.execute("SELECT name FROM range_markers")},
           {b"phase one", b"phase \xe9t\xe9"}, "marker texts, from extdata and back to their bytes")
        eq({r[0] for r in con.execute("SELECT name FROM regions WHERE category = 'MARKER_RANGE_API'")},
           {r[0] for r in con.execute("SELECT name FROM range_markers")}, "a range's name is its message")
        eq(q1(w, "SELECT COUNT(*) FROM kernels WHERE name = ?", r"fill\xFF\xFE(char*)"),
           q1(w, "SELECT COUNT(*) FROM kernels WHERE kernel_id = 3"), "kernels by their escaped name")
        con.close()


def case_merge_attach():
    """A merged database attaches beside another: SQLite, omniprof merge/query, the Python package."""
    with tempfile.TemporaryDirectory() as d:
        a, ea = compat_db(d, "a.db", "--pid", 11000)
        b, eb = compat_db(d, "b.db", "--pid", 12000)
        c, ec = compat_db(d, "c.db", "--pid", 13000)
        ab = os.path.join(d, "ab.db")
        run([A.omniprof, "merge", "-o", ab, "-i", a, b])
        gpu_invariants(ab, "merged")
        con = sqlite3.connect(":memory:")
        con.execute("ATTACH ? AS m", (ab,))
        con.execute("ATTACH ? AS o", (c,))
        eq(con.execute("SELECT COUNT(*) FROM m.kernels").fetchone()[0], ea["kernels"] + eb["kernels"], "kernels of the merge")
        eq(con.execute("SELECT COUNT(*) FROM o.kernels").fetchone()[0], ec["kernels"], "kernels beside it")
        view_sql = con.execute("SELECT group_concat(sql, ' ') FROM m.sqlite_master WHERE type = 'view'").fetchone()[0]
        check("main." not in view_sql.lower(), "the merged file's views name no schema")
        con.close()
        abc = os.path.join(d, "abc.db")
        run([A.omniprof, "merge", "-o", abc, "-i", ab, c])  # a merged file as one of several inputs
        eq(q1(abc, "SELECT COUNT(*) FROM kernels"), ea["kernels"] + eb["kernels"] + ec["kernels"], "merge of a merge")
        eq(q1(abc, "SELECT COUNT(*) FROM processes"), 3, "processes of the merge of a merge")
        gpu_invariants(abc, "merge of a merge")
        out = run([A.omniprof, "query", "-i", ab, c, "-q", "SELECT COUNT(*) AS n FROM kernels", "-f", "csv"]).stdout.decode()
        check(str(ea["kernels"] + eb["kernels"] + ec["kernels"]) in out.split(), "query over a merge and a database: " + out)
        env = dict(os.environ, PYTHONPATH=A.python, OMNIPROF_OUTPUT_LIB=A.lib)
        py = ("import omniprof,sys; c = omniprof.connect(*sys.argv[1:]); "
              "print(c.execute('SELECT COUNT(*) FROM kernels').fetchone()[0])")
        out = run([sys.executable, "-c", py, ab, c], env=env).stdout.decode().split()
        eq(int(out[-1]), ea["kernels"] + eb["kernels"] + ec["kernels"], "Python connect() over a merge and a database")


AGENT_INFO_HEADER = (
    "Node_Id,Logical_Node_Id,Agent_Type,Cpu_Cores_Count,Simd_Count,Cpu_Core_Id_Base,Simd_Id_Base,Max_Waves_Per_Simd,"
    "Lds_Size_In_Kb,Gds_Size_In_Kb,Num_Gws,Wave_Front_Size,Num_Xcc,Cu_Count,Array_Count,Num_Shader_Banks,"
    "Simd_Arrays_Per_Engine,Cu_Per_Simd_Array,Simd_Per_Cu,Max_Slots_Scratch_Cu,Gfx_Target_Version,Vendor_Id,Device_Id,"
    "Location_Id,Domain,Drm_Render_Minor,Num_Sdma_Engines,Num_Sdma_Xgmi_Engines,Num_Sdma_Queues_Per_Engine,"
    "Num_Cp_Queues,Max_Engine_Clk_Ccompute,Max_Engine_Clk_Fcompute,Sdma_Fw_Version,Fw_Version,Capability,"
    "Cu_Per_Engine,Max_Waves_Per_Cu,Family_Id,Workgroup_Max_Size,Grid_Max_Size,Local_Mem_Size,Hive_Id,Gpu_Id,"
    "Workgroup_Max_Dim_X,Workgroup_Max_Dim_Y,Workgroup_Max_Dim_Z,Grid_Max_Dim_X,Grid_Max_Dim_Y,Grid_Max_Dim_Z,"
    "Name,Vendor_Name,Product_Name,Model_Name").split(",")

# The keys of an agent's extdata that AMD's agent loader reads, in its order: the fields of
# rocprofiler_agent_v0_t and gpu_index.
AGENT_KEYS = ("size id type cpu_cores_count simd_count mem_banks_count caches_count io_links_count cpu_core_id_base "
              "simd_id_base max_waves_per_simd lds_size_in_kb gds_size_in_kb num_gws wave_front_size num_xcc cu_count "
              "array_count num_shader_banks simd_arrays_per_engine cu_per_simd_array simd_per_cu max_slots_scratch_cu "
              "gfx_target_version vendor_id device_id location_id domain drm_render_minor num_sdma_engines "
              "num_sdma_xgmi_engines num_sdma_queues_per_engine num_cp_queues max_engine_clk_ccompute "
              "max_engine_clk_fcompute sdma_fw_version fw_version capability cu_per_engine max_waves_per_cu family_id "
              "workgroup_max_size grid_max_size local_mem_size hive_id gpu_id workgroup_max_dim grid_max_dim name "
              "vendor_name product_name model_name node_id logical_node_id logical_node_type_id mem_banks caches "
              "io_links gpu_index").split()


def case_csv():
    """CSV as rocprofv3 writes it: quoted headers, agent_info.csv's 53 columns with the CUDA values,
    real register counts in counter_collection.csv; the agent extdata has every key of AMD's loader."""
    with tempfile.TemporaryDirectory() as d:
        w, e = compat_db(d)
        g = gen_db(d)
        for db, name in ((w, "w"), (g, "g")):
            run([A.omniprof, "convert", "-i", db, "-f", "csv", "-d", d, "-o", name])
        files = [f for f in os.listdir(d) if f.endswith(".csv")]
        check(len(files) >= 12, "CSV files: %s" % files)
        for f in files:
            with open(os.path.join(d, f), "rb") as fh:
                head = fh.readline().decode().rstrip("\n")
            fields = head.split(",")
            check(all(x.startswith('"') and x.endswith('"') and len(x) > 2 for x in fields), f"{f}: header quoted: {head}")
        rows = lambda f: list(csv.reader(io.StringIO(open(os.path.join(d, f), encoding="utf-8").read(), newline="")))
        agents = rows("w_agent_info.csv")
        eq(agents[0], AGENT_INFO_HEADER, "agent_info header")
        eq({len(r) for r in agents}, {53}, "53 columns in every row")
        col = {name: i for i, name in enumerate(AGENT_INFO_HEADER)}
        cpu = [r for r in agents[1:] if r[col["Agent_Type"]] == "CPU"]
        gpus = [r for r in agents[1:] if r[col["Agent_Type"]] == "GPU"]
        eq((len(cpu), len(gpus)), (1, 2), "agents")
        eq(int(cpu[0][col["Cpu_Cores_Count"]]), 8, "Cpu_Cores_Count of the CPU agent")
        for r in gpus:
            eq(int(r[col["Simd_Count"]]), 132 * 4, "Simd_Count = SMs x SM sub-partitions")
            eq(int(r[col["Cu_Count"]]), 132, "Cu_Count = SMs")
            eq(int(r[col["Wave_Front_Size"]]), 32, "Wave_Front_Size = warp size")
            eq(int(r[col["Vendor_Id"]]), 0x10DE, "Vendor_Id")
            eq(int(r[col["Gfx_Target_Version"]]), 90000, "Gfx_Target_Version = compute capability 9.0")
            eq(int(r[col["Local_Mem_Size"]]), 80 << 30, "Local_Mem_Size = device memory")
            eq(int(r[col["Workgroup_Max_Size"]]), 1024, "Workgroup_Max_Size")
            eq(int(r[col["Lds_Size_In_Kb"]]), 48, "Lds_Size_In_Kb = shared memory per block")
            eq(r[col["Name"]], "NVIDIA H100 80GB HBM3", "Name")
        eq([int(r[col["Location_Id"]]) for r in gpus], [0x10 << 8, 0x11 << 8], "Location_Id from the PCI bus id")
        # register counts: the kernel symbol's, as in kernel_trace.csv
        for name, vgpr, sgpr in (("w", 32, 0), ("g", 32, 16)):
            pmc = rows(f"{name}_counter_collection.csv")
            c = {n: i for i, n in enumerate(pmc[0])}
            check(len(pmc) > 1, f"{name}: counter rows")
            eq({(r[c["VGPR_Count"]], r[c["Accum_VGPR_Count"]], r[c["SGPR_Count"]]) for r in pmc[1:]},
               {(str(vgpr), "0", str(sgpr))}, f"{name}: register counts in counter_collection.csv")
        # AMD's agent loader reads these keys in this order and stops at a missing one
        for (ext,) in q(w, "SELECT extdata FROM rocpd_info_agent"):
            keys = list(json.loads(ext).keys())
            eq(keys[:len(AGENT_KEYS)], AGENT_KEYS, "agent extdata keys")


def expected_flows(db):
    """API calls (non-marker regions) whose kernel or copy is in the database: one flow each."""
    return q1(db, """SELECT COUNT(*) FROM (SELECT DISTINCT E.guid, E.stack_id FROM rocpd_region R
                       JOIN rocpd_event E ON E.id = R.event_id AND E.guid = R.guid
                       JOIN rocpd_string C ON C.id = E.category_id AND C.guid = E.guid
                     WHERE E.stack_id > 0 AND C.string NOT LIKE '%MARKER%' AND C.string NOT LIKE '%NVTX%'
                       AND E.stack_id IN (SELECT E2.stack_id FROM rocpd_event E2 WHERE E2.guid = E.guid AND E2.id IN
                         (SELECT event_id FROM rocpd_kernel_dispatch WHERE guid = E.guid
                          UNION SELECT event_id FROM rocpd_memory_copy WHERE guid = E.guid)))""")


def case_perfetto():
    """Perfetto traces at 1, 2 and 8 conversion threads: every flow start has its end and the
    other way round, one descriptor per process and track, sequences well formed, one clock
    snapshot first (pftrace_check.py); the same content at every thread count (the same
    descriptors, events with their names and flow ids: only the cut into sequences differs); the
    same flows in the JSON trace; the trace decodes with protoc against Perfetto's schema."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import pftrace_check
    proto = os.path.join(A.source, "third_party", "perfetto", "perfetto_trace.proto")
    check(os.path.isfile(proto), "Perfetto's schema (third_party/perfetto/perfetto_trace.proto)")
    with tempfile.TemporaryDirectory() as d:
        w1 = compat_db(d, "w1.db", "--pid", 41000)[0]
        w2 = compat_db(d, "w2.db", "--pid", 42000)[0]
        g = gen_db(d, "g.db", "--pid", 43000, "--threads", 4, "--streams", 3)
        m = os.path.join(d, "m.db")
        run([A.omniprof, "merge", "-o", m, "-i", w2, g])
        inputs = [w1, m]
        flows = expected_flows(w1) + expected_flows(m)
        check(flows > 100, "enough flows to test: %d" % flows)
        content = {}
        for threads in (1, 2, 8):
            env = dict(os.environ, OMNIPROF_OUTPUT_THREADS=str(threads))
            run([A.omniprof, "convert", "-i"] + inputs + ["-f", "pftrace", "json", "-d", d, "-o", f"t{threads}"], env=env)
            trace = os.path.join(d, f"t{threads}_results.pftrace")
            got = pftrace_check.check(trace)
            content[threads] = got.pop("content")
            print(f"{threads} thread(s): {got}")
            eq(got["flows"], flows, f"{threads} threads: flows")
            eq(got["processes"], 3, f"{threads} threads: process descriptors")
            eq(got["sequences"], 3 * min(threads, 6), f"{threads} threads: sequences (one per process and part)")
            eq(got["clocks"], [1, 3, 6], f"{threads} threads: clocks of the snapshot (MONOTONIC, REALTIME, BOOTTIME)")
            p = subprocess.run(["protoc", "--proto_path=" + os.path.dirname(proto), "--decode=perfetto.protos.Trace",
                                proto], stdin=open(trace, "rb"), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            eq(p.returncode, 0, "protoc decodes the trace: " + p.stderr.decode()[-500:])
            check(b"clock_snapshot" in p.stdout and b"timestamp_clock_id: 3" in p.stdout, "snapshot and clock defaults")
            with open(os.path.join(d, f"t{threads}_results.json"), "rb") as f:
                ev = json.loads(f.read().decode("utf-8"))["traceEvents"]
            s_ids = [e["id"] for e in ev if e.get("ph") == "s"]
            f_ids = [e["id"] for e in ev if e.get("ph") == "f"]
            eq(sorted(s_ids), sorted(f_ids), "JSON flow starts and ends pair up")
            eq(len(set(s_ids)), flows, "JSON flows")
        one = content[1]
        check(len(one["events"]) > 1000 and len(one["descriptors"]) > 10, "a trace with content")
        for threads in (2, 8):
            other = content[threads]
            eq(other["flows"], one["flows"], f"flow ids at {threads} threads and at 1")
            eq(other["snapshot"], one["snapshot"], f"clock snapshot at {threads} threads and at 1")
            eq(sorted(other["descriptors"]), sorted(one["descriptors"]), f"track uuids at {threads} threads and at 1")
            diff = [u for u in one["descriptors"] if other["descriptors"][u] != one["descriptors"][u]]
            eq(diff, [], f"track descriptors that differ at {threads} threads from 1")
            eq(sum(other["events"].values()), sum(one["events"].values()), f"events at {threads} threads and at 1")
            eq(other["events"] == one["events"], True, f"every event (time, track, content, name) at {threads} threads as at 1")


def otf2_counts(anchor):
    """Event counts of an OTF2 archive as otf2-print reads them, and its location types."""
    p = run(["otf2-print", anchor])
    counts = collections.Counter(line.split()[0] for line in p.stdout.decode(errors="replace").splitlines()
                                 if line[:1].isupper() and line.split()[0] in ("ENTER", "LEAVE", "METRIC"))
    defs = run(["otf2-print", "-G", anchor]).stdout.decode(errors="replace")
    types = collections.Counter(l.split("Type: ")[1].split(",")[0] for l in defs.splitlines() if l.startswith("LOCATION "))
    return counts, types, defs


def db_counts(db):
    """(Enter/Leave pairs, metric values) the database's rows give in OTF2."""
    return (q1(db, "SELECT (SELECT COUNT(*) FROM rocpd_region) + (SELECT COUNT(*) FROM rocpd_kernel_dispatch) + "
                   "(SELECT COUNT(*) FROM rocpd_memory_copy)"),
            q1(db, "SELECT (SELECT COUNT(*) FROM rocpd_pmc_event) + (SELECT COUNT(*) FROM rocpd_memory_allocate) + "
                   "(SELECT COUNT(*) FROM omniprof_metric)"))


def case_otf2():
    """`convert -f otf2` and `run -f otf2`: otf2-print reads the archive, with the database's event
    counts; locations per thread, stream and agent; regions of APIs, kernels, copies, markers."""
    if not shutil.which("otf2-print"):
        print("SKIP: otf2-print not found (Debian: otf2-tools)")
        return SKIP
    with tempfile.TemporaryDirectory() as d:
        w1 = compat_db(d, "w1.db", "--pid", 51000)[0]
        w2 = compat_db(d, "w2.db", "--pid", 52000)[0]
        g = gen_db(d, "g.db", "--pid", 53000)
        for inputs, name in (([w1], "one"), ([w1, w2, g], "three")):
            p = run([A.omniprof, "convert", "-i"] + inputs + ["-f", "otf2", "-d", d, "-o", name])
            anchor = os.path.join(d, name + "_results.otf2")
            check(os.path.isfile(anchor) and os.path.isdir(os.path.join(d, name + "_results")), "the archive")
            counts, types, defs = otf2_counts(anchor)
            pairs = sum(db_counts(x)[0] for x in inputs)
            values = sum(db_counts(x)[1] for x in inputs)
            eq((counts["ENTER"], counts["LEAVE"], counts["METRIC"]), (pairs, pairs, values), f"{name}: OTF2 events")
            threads = sum(q1(x, "SELECT COUNT(DISTINCT tid) FROM rocpd_region") for x in inputs)
            eq(types["CPU_THREAD"], threads, f"{name}: a location per thread with regions")
            streams = sum(q1(x, "SELECT COUNT(*) FROM (SELECT DISTINCT COALESCE(queue_id, 0), COALESCE(stream_id, 0) FROM "
                                "rocpd_kernel_dispatch UNION SELECT DISTINCT COALESCE(queue_id, 0), COALESCE(stream_id, 0) "
                                "FROM rocpd_memory_copy)") for x in inputs)
            eq(types["ACCELERATOR_STREAM"], streams, f"{name}: a location per stream")
            check(types["METRIC"] >= len(inputs), f"{name}: metric locations per agent")
            eq(defs.count("LOCATION_GROUP "), len(inputs), f"{name}: a location group per process")
            for region in ("Role: FUNCTION, Paradigm: CUDA", "Role: DATA_TRANSFER, Paradigm: CUDA",
                           "Role: CODE, Paradigm: USER"):
                check(region in defs, f"{name}: regions with {region}")
        # the name is taken: -1
        run([A.omniprof, "convert", "-i", w1, "-f", "otf2", "-d", d, "-o", "one"])
        check(os.path.isfile(os.path.join(d, "one-1_results.otf2")), "an existing archive is never replaced")
        check(not [f for f in os.listdir(d) if ".tmp-" in f], "no temporary archive left")
        # omniprof run -f otf2
        run([A.omniprof, "run", "--marker-trace", "-f", "otf2", "rocpd", "-d", d, "-o", "r", "--", A.demo])
        anchor = os.path.join(d, "r_results.otf2")
        counts, types, _ = otf2_counts(anchor)
        pairs, values = db_counts(os.path.join(d, "r_results.db"))
        check(pairs > 0, "the run has regions")
        eq((counts["ENTER"], counts["LEAVE"], counts["METRIC"]), (pairs, pairs, values), "run -f otf2: events")


def case_clock_hosts():
    """merge moves a process's times by the two wall-clock offsets only when it ran on another
    host than the reference: machine id and host name both differ (a renamed container on the same
    kernel shares CLOCK_MONOTONIC), and never when both recorded the same clock domain (one kernel
    boot, one time namespace). The amd_views case relies on it: compat_db's node is named
    'compat-host' with this machine's id, beside a real run's."""
    with tempfile.TemporaryDirectory() as d:
        ref, _ = compat_db(d, "ref.db", "--pid", 21000)
        for tag, machine_id, host, moved in (("renamed", None, "renamed-host", False),
                                             ("other", "0123456789abcdef0123456789abcdef", "other-host", True)):
            b, _ = compat_db(d, tag + ".db", "--pid", 22000)
            con = sqlite3.connect(b)
            tables = dict(con.execute("SELECT substr(name, 1, instr(name || '_0', '_0') - 1), name FROM sqlite_master "
                                      "WHERE type = 'table' AND (name LIKE 'rocpd_info_node%' OR "
                                      "name LIKE 'rocpd_info_process%')").fetchall())
            node = [n for n in tables.values() if n.startswith("rocpd_info_node")][0]
            proc = [n for n in tables.values() if n.startswith("rocpd_info_process")][0]
            con.execute(f"UPDATE {node} SET hostname = ?, machine_id = COALESCE(?, machine_id)", (host, machine_id))
            # its CLOCK_REALTIME - CLOCK_MONOTONIC is 5 s less than the reference's: an event at its
            # monotonic time t happened at the reference's monotonic time t - 5 s
            con.execute(f"UPDATE {proc} SET extdata = json_set(extdata, '$.realtime_offset_ns', -5000000000)")
            if moved:  # a process of another host also recorded that host's clock domain (its boot id)
                con.execute(f"UPDATE {proc} SET extdata = json_set(extdata, '$.clock_domain', "
                            "'00000000-0000-0000-0000-000000000000/time:0:1')")
            con.commit()
            con.close()
            before = q1(b, "SELECT min(start) FROM regions")
            m = os.path.join(d, tag + "-merged.db")
            run([A.omniprof, "merge", "-i", ref, b, "-o", m])
            after = q1(m, "SELECT min(start) FROM regions WHERE pid = 22000")
            eq(after - before, -5000000000 if moved else 0,
               f"{tag}: the process's times moved by the wall-clock offsets ({host}, machine id "
               f"{'changed' if machine_id else 'the same'})")
            eq(q1(m, "SELECT min(start) FROM regions WHERE pid = 21000"), q1(ref, "SELECT min(start) FROM regions"),
               f"{tag}: the reference's times unchanged")


TIME_COLUMN_NAMES = ("start", "end", "timestamp", "init", "fini")


def case_clock_columns():
    """A clock-aligned merge moves every time column of every table: a process of another host
    (compat_db's database, its node renamed and given another machine id and clock domain, its
    wall clock 5 s behind the reference's) gets a distinct time in each column named start, end,
    timestamp, init or fini of each of its tables (found in the file itself: sqlite_master and
    PRAGMA table_xinfo, no list of tables here) — a new row where a table is empty, the first
    row where it has some — and after `omniprof merge` each of those values is 5 s earlier, none
    is left as it was. tables.sql marks those columns '-- @time' and the build refuses a column
    of such a name without the mark (src/db/gen_tables.py), so this also checks that the merge
    uses the generated list."""
    with tempfile.TemporaryDirectory() as d:
        ref, _ = compat_db(d, "ref.db", "--pid", 21000)
        b, _ = compat_db(d, "other.db", "--pid", 22000)
        con = sqlite3.connect(b)
        names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        node = [n for n in names if n.startswith("rocpd_info_node_")][0]
        proc = [n for n in names if n.startswith("rocpd_info_process_")][0]
        suffix = proc[len("rocpd_info_process"):]
        con.execute(f'UPDATE "{node}" SET hostname = ?, machine_id = ?', ("other-host", "0123456789abcdef" * 2))
        con.execute(f'UPDATE "{proc}" SET extdata = json_set(extdata, \'$.realtime_offset_ns\', -5000000000, '
                    "'$.clock_domain', '00000000-0000-0000-0000-000000000000/time:0:1')")
        nid, pid = con.execute(f'SELECT nid, id FROM "{proc}"').fetchone()
        marks = {}  # (base table, column) -> the time written there
        value = 4_000_000_000_000_000_000  # far from any real time of the reference
        for table in names:
            if not table.endswith(suffix):
                continue
            base = table[:-len(suffix)]
            cols = con.execute(f'PRAGMA table_xinfo("{table}")').fetchall()  # cid name type notnull dflt pk hidden
            times = [c[1] for c in cols if c[1] in TIME_COLUMN_NAMES]
            if not times:
                continue
            mine = {}
            for t in times:
                value += 1000
                mine[t] = value
                marks[(base, t)] = value
            first = con.execute(f'SELECT min(id) FROM "{table}"').fetchone()[0]
            if first is not None:
                con.execute(f'UPDATE "{table}" SET ' + ", ".join(f'"{t}" = ?' for t in mine) + " WHERE id = ?",
                            list(mine.values()) + [first])
                continue
            row = {}
            for _, name, ctype, notnull, dflt, pk, hidden in cols:
                if pk or hidden or name == "guid":
                    continue
                if name in mine:
                    row[name] = mine[name]
                elif name == "pid":
                    row[name] = pid
                elif name == "nid":
                    row[name] = nid
                elif notnull and dflt is None:
                    row[name] = "x" if "TEXT" in ctype.upper() else 0
            con.execute(f'INSERT INTO "{table}" (' + ", ".join(f'"{n}"' for n in row) + ") VALUES (" +
                        ", ".join("?" * len(row)) + ")", list(row.values()))
        con.commit()
        con.close()
        # the tables that must be among them: the ones a hand-kept list once left out
        for must in (("omniprof_unified_memory", "start"), ("omniprof_unified_memory", "end"),
                     ("omniprof_sass_metric", "timestamp"), ("rocpd_kernel_dispatch", "start"),
                     ("rocpd_info_process", "init")):
            check(must in marks, f"{must[0]}.{must[1]}: a time column of the database")
        m = os.path.join(d, "merged.db")
        run([A.omniprof, "merge", "-i", ref, b, "-o", m])
        left = []
        for (base, col), v in sorted(marks.items()):
            moved = q1(m, f'SELECT count(*) FROM "{base}" WHERE "{col}" = ?', v - 5000000000)
            kept = q1(m, f'SELECT count(*) FROM "{base}" WHERE "{col}" = ?', v)
            if moved != 1 or kept != 0:
                left.append(f"{base}.{col} (moved {moved}, unchanged {kept})")
        eq(left, [], f"time columns the merge did not move by the 5 s offset (of {len(marks)})")


def amd_column_table():
    """{view: (rocpd's columns in order, omniprof's columns after them)} from the table in
    docs/database.md ("Column order"): the specification this case checks."""
    path = os.path.join(A.source, "docs", "database.md")
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    start = lines.index("| view | rocpd's columns, in order | omniprof's after them |")
    views = {}
    for line in lines[start + 2:]:
        if not line.startswith("| `"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        name = cells[0].strip("`")
        views[name] = (re.findall(r"`([^`]+)`", cells[1]), re.findall(r"`([^`]+)`", cells[2]))
    return views


def case_amd_columns():
    """Every view rocpd also has keeps rocpd's columns in rocpd's order, omniprof's extra columns only
    after them (a reader that takes columns by position gets the same values as from AMD's views):
    the views in a database of the real writer, in a merged database, and the TEMP views of the
    union that `omniprof query` and the Python package build over several inputs."""
    amd = amd_column_table()
    eq(len(amd), 27, "rocpd's data, summary and marker views in docs/database.md")
    check(all(cols for cols, _ in amd.values()), "every view of the table lists its columns")

    def check_view(view, got, where):
        want, extra = amd[view]
        eq(got[:len(want)], want, f"{where}: {view}: rocpd's columns in rocpd's order first")
        eq(got[len(want):], extra, f"{where}: {view}: omniprof's columns after rocpd's")

    with tempfile.TemporaryDirectory() as d:
        a, _ = compat_db(d, "a.db", "--pid", 61000)
        b, _ = compat_db(d, "b.db", "--pid", 62000)
        m = os.path.join(d, "m.db")
        run([A.omniprof, "merge", "-o", m, "-i", a, b])
        for db, where in ((a, "writer"), (m, "merged")):
            con = sqlite3.connect(db)
            for view in amd:
                check_view(view, [c[0] for c in con.execute(f'SELECT * FROM "{view}" LIMIT 0').description], where)
            con.close()
        # the union of several inputs: omniprof query's CSV header, the Python package's cursor
        for view in amd:
            out = run([A.omniprof, "query", "-i", a, b, "-f", "csv", "--sql", f'SELECT * FROM "{view}" LIMIT 0']).stdout
            check_view(view, next(csv.reader(io.StringIO(out.decode()))), "omniprof query over two inputs")
        env = dict(os.environ, PYTHONPATH=A.python, OMNIPROF_OUTPUT_LIB=A.lib)
        py = ("import omniprof, json, sys; c = omniprof.connect(*sys.argv[2:]); "
              "print(json.dumps({v: [d[0] for d in c.execute('SELECT * FROM \"%s\" LIMIT 0' % v).description] "
              "for v in sys.argv[1].split(',')}))")
        got = json.loads(run([sys.executable, "-c", py, ",".join(amd), a, b], env=env).stdout.decode().splitlines()[-1])
        for view in amd:
            check_view(view, got[view], "Python connect() over two inputs")
        # a kernel read by position: AMD's index of each column gives the same value as by name
        con = sqlite3.connect(a)
        row = con.execute("SELECT * FROM kernels ORDER BY id LIMIT 1").fetchone()
        named = con.execute("SELECT id, name, pid, agent_abs_index, duration, corr_id FROM kernels ORDER BY id "
                            "LIMIT 1").fetchone()
        con.close()
        want = amd["kernels"][0]
        eq(tuple(row[want.index(c)] for c in ("id", "name", "pid", "agent_abs_index", "duration", "corr_id")), named,
           "kernels by rocpd's column positions")


def case_amd_views():
    amd = os.environ.get("OMNIPROF_AMD_ROCPD", "")
    check_script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "amd_rocpd_check.py")
    with tempfile.TemporaryDirectory() as d:
        # (gen_db --weird is left out: it stores raw non-UTF-8 bytes on purpose, as a database
        # of another writer may, to test omniprof's readers; omniprof's writer never does)
        # (pids far apart: a thread row's id is its tid, unique among a host's live threads, and
        # the fake processes' threads are pid, pid + 1, ...)
        dbs = [compat_db(d, "w1.db", "--pid", 21000)[0], compat_db(d, "w2.db", "--pid", 22000)[0],
               gen_db(d, "g.db", "--pid", 23000), run_db(d)]
        p = subprocess.run([sys.executable, check_script, "--amd", amd, "--union", "--omniprof", A.omniprof] + dbs,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        out = p.stdout.decode(errors="replace")
        print(out)
        if p.returncode == SKIP:
            return SKIP
        eq(p.returncode, 0, "AMD's views and package on omniprof databases")


def main():
    global A
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("--omniprof", required=True)
    ap.add_argument("--compat-db", dest="compat_db", required=True)
    ap.add_argument("--gen", required=True)
    ap.add_argument("--demo", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--source", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    A = ap.parse_args()
    rc = globals()["case_" + A.case]()
    if rc == SKIP and A.case == "amd_views":
        print("SKIP: AMD's rocpd files not found: set OMNIPROF_AMD_ROCPD to a folder with AMD's data_views.sql, "
              "summary_views.sql, marker_views.sql (and rocpd/*.py) to run this case")
    if rc == SKIP:
        return SKIP
    print("PASS", A.case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
