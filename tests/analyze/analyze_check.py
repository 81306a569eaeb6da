#!/usr/bin/env python3
"""`omniprof analyze` (docs/analyze.md) on real programs and synthetic databases.

Modes (CTest analyze.<mode>):
  synthetic  databases written row by row (sqlite3 over omniprof-gen-db's schema) whose graph
             and critical path are known exactly: a kernel on the path behind a synchronize, a
             kernel hidden behind CPU work, a straggler rank in a collective across two
             databases; exact path shares and exact what-if predictions
  cli        bad what-if specs and inputs give a clear error naming them (exit 2); an existing
             -o file is never replaced; the input database is not modified; omniprof.analyze()
             from Python
  pipeline   an_pipeline (two threads, ranges, barrier hand-over), consumer twice the producer:
             what-if 'range:^consume$=0.5' predicted against the run with the consumer halved
  forkjoin   an_forkjoin, one worker 3x the others: what-if 'range:^work_big$=0.5' against the
             run with that worker halved; the imbalance is the top finding
  clean      the balanced pipeline and fork-join: no finding with 5 % or more predicted gain
  overlap    two ranks' synthetic databases: communication (nccl* kernels) beside computation
             and copies beside kernels per GPU and rank, exact ns and percentages, in the JSON,
             the console and the report's findings
  waits      a stream synchronize with its synchronization record waits for its stream only;
             event and device synchronizes (and one without a record) for every stream: exact
             paths and what-if predictions where the two semantics differ
  nccl       two ranks merged: the k-th NCCL kernel of one name on each rank is one collective
             (the ranks leave together): exact predictions across ranks; two ranks shaped like
             the H200's PyTorch recording (kernels queued 2 us apart, NCCL's NVTX ranges, a
             straggler, init and teardown calls): the path, the what-if, per step and whole run,
             against the balanced variant; the balanced one gives no finding
  mpi        an_mpi under mpirun -np 4 (rank 2 a straggler), merged: 'range:^extra$=0.5'
             against the run with rank 2's extra work halved; the straggler is the top finding

Accuracy (the issue's target): predicted gain within 5 points of the run time, or 20 % of the
gain, whichever is larger, of the gain measured on the faster program. Gains are measured on
the iterations (median iteration time, predicted and measured), which leaves out start-up
(MPI_Init) whose length varies between runs and one iteration stretched by a load spike.
A stage sleeps to a deadline on the monotonic clock (an_work.h), so it lasts what its knob
says however loaded the machine is, give or take
the wake-up latency of a loaded machine (milliseconds: the stages last 40 ms and more).
Skips (exit 77) with the reason when a program, mpirun or omniprof-gen-db is missing."""
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
from testlib import FAILS, check, scratch  # noqa: E402 (tests/testlib.py: the one assertion helper)


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


def omniprof(a, *args, ok=True, env=None):
    r = subprocess.run([a.omniprof] + list(args), capture_output=True, text=True, timeout=400,
                       env=env)
    if ok and r.returncode != 0:
        check(False, "omniprof %s exits 0 (%d: %s)" % (" ".join(args[:3]), r.returncode,
                                                       r.stderr.strip()[-600:]))
        sys.exit(1)
    return r


def analyze(a, inputs, *extra):
    r = omniprof(a, "analyze", "-i", *inputs, "--format", "json", *extra)
    return json.loads(r.stdout)


# ---- synthetic databases ------------------------------------------------------------------

class SynthDB:
    """A database with omniprof's schema (omniprof-gen-db --events 0) and rows added here."""

    def __init__(self, a, path, pid, rank=-1, threads=1, streams=1):
        gen = os.path.join(a.bindir, "omniprof-gen-db")
        if not os.path.exists(gen):
            skip("omniprof-gen-db is not built")
        cmd = [gen, path, "--events", "0", "--threads", str(threads), "--streams", str(streams),
               "--pid", str(pid)]
        if rank >= 0:
            cmd += ["--rank", str(rank)]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        check(r.returncode == 0, "gen-db %s (%s)" % (path, r.stderr.strip()))
        self.con = sqlite3.connect(path)
        self.pid = pid
        names = [n for (n,) in self.con.execute("SELECT name FROM sqlite_master WHERE "
                                                "type='table'")]
        self.sfx = [n for n in names if n.startswith("rocpd_string_")][0][len("rocpd_string"):]
        self.next = {}

    def t(self, base):
        return '"%s%s"' % (base, self.sfx)

    def nid(self, table):
        if table not in self.next:
            self.next[table] = (self.con.execute("SELECT COALESCE(max(id), 0) FROM %s" %
                                                 self.t(table)).fetchone()[0]) + 1
        v = self.next[table]
        self.next[table] += 1
        return v

    def string(self, s):
        row = self.con.execute("SELECT id FROM %s WHERE string = ?" % self.t("rocpd_string"),
                               (s,)).fetchone()
        if row:
            return row[0]
        i = self.nid("rocpd_string")
        self.con.execute("INSERT INTO %s (id, string) VALUES (?, ?)" % self.t("rocpd_string"), (i,
            s))
        return i

    def event(self, category, corr=0, extdata="{}"):
        i = self.nid("rocpd_event")
        self.con.execute("INSERT INTO %s (id, category_id, stack_id, correlation_id, extdata) "
                         "VALUES (?, ?, ?, 0, ?)"
                         % self.t("rocpd_event"), (i, self.string(category), corr, extdata))
        return i

    def region(self, thread, start, end, name, category="CUDA_RUNTIME_API", corr=0,
               extdata="{}"):
        ev = self.event(category, corr, extdata)
        self.con.execute('INSERT INTO %s (id, nid, pid, tid, start, "end", name_id, event_id) '
                         'VALUES (?, 1, ?, ?, ?, ?, ?, ?)'
                         % self.t("rocpd_region"),
                         (self.nid("rocpd_region"), self.pid, self.pid + thread, start, end,
                          self.string(name), ev))

    def kernel(self, stream, start, end, kernel_id, corr):
        ev = self.event("KERNEL_DISPATCH", corr)
        i = self.nid("rocpd_kernel_dispatch")
        self.con.execute(
            'INSERT INTO %s (id, nid, pid, tid, agent_id, kernel_id, dispatch_id, queue_id, '
            'stream_id, start, "end", private_segment_size, group_segment_size, workgroup_size_x, '
            "workgroup_size_y, workgroup_size_z, grid_size_x, grid_size_y, grid_size_z, event_id) "
            "VALUES (?, 1, ?, ?, 2, ?, ?, ?, ?, ?, ?, 0, 0, 1, 1, 1, "
            "1, 1, 1, ?)" % self.t("rocpd_kernel_dispatch"),
            (i, self.pid, self.pid, kernel_id, i, stream, stream, start, end, ev))

    def kernel_symbol(self, name):
        """A kernel symbol named `name` (gen-db's are gemm, reduce_sum, ...): its id."""
        i = self.nid("rocpd_info_kernel_symbol")
        self.con.execute(
            "INSERT INTO %s (id, nid, pid, kernel_name, display_name, group_segment_size, "
            "private_segment_size, sgpr_count, arch_vgpr_count, accum_vgpr_count) "
            "VALUES (?, 1, ?, ?, ?, 0, 0, 0, 0, 0)" % self.t("rocpd_info_kernel_symbol"),
            (i, self.pid, name, name))
        return i

    def copy(self, stream, start, end, corr, name="MEMORY_COPY_HOST_TO_DEVICE", src_kind=None,
             size=4096):
        """A copy; src_kind (PAGEABLE, PINNED) goes into the row's extdata as the writer puts it."""
        ev = self.event("MEMORY_COPY", corr)
        ext = ('{"src_memory_kind":"%s","dst_memory_kind":"DEVICE","is_async":1,"device_id":0}'
               % src_kind) if src_kind else "{}"
        self.con.execute(
            'INSERT INTO %s (id, nid, pid, tid, start, "end", name_id, dst_agent_id, '
            "src_agent_id, size, queue_id, stream_id, event_id, extdata) "
            "VALUES (?, 1, ?, ?, ?, ?, ?, 2, 1, ?, ?, ?, ?, ?)" % self.t("rocpd_memory_copy"),
            (self.nid("rocpd_memory_copy"), self.pid, self.pid, start, end, self.string(name),
             size, stream, stream, ev, ext))

    def cuda_event(self, stream, corr, cuda_event, sync_id):
        """A recording of CUDA event `cuda_event` on `stream` by the call with id `corr`."""
        ev = self.event("CUDA_EVENT", corr)
        self.con.execute(
            "INSERT INTO %s (id, nid, pid, tid, stream_id, event_id, cuda_event, sync_id) "
            "VALUES (?, 1, ?, ?, ?, ?, ?, ?)" % self.t("omniprof_cuda_event"),
            (self.nid("omniprof_cuda_event"), self.pid, self.pid, stream, ev, cuda_event,
             sync_id))

    def close(self):
        self.con.commit()
        self.con.close()


def items(res):
    return {(i["kind"], i["name"]): i["ns"] for i in res["critical_path"]["items"]}


def mode_synthetic(a):
    tmp = tempfile.mkdtemp(prefix="omniprof-analyze-syn-")
    # A: launch [0,10] -> gemm [15,100] on stream 1; CPU [10,20]; cudaDeviceSynchronize [20,105]
    pa = os.path.join(tmp, "a.db")
    d = SynthDB(a, pa, 5000)
    T0 = 10 ** 9
    d.region(0, T0 + 0, T0 + 10, "cudaLaunchKernel", corr=1)
    d.kernel(1, T0 + 15, T0 + 100, 2, corr=1)
    d.region(0, T0 + 20, T0 + 105, "cudaDeviceSynchronize", corr=2)
    d.close()
    r = analyze(a, [pa])
    check(r["schema"] == "omniprof-analyze" and r["version"] == 1, "the JSON names its schema "
          "and version")
    check(r["run"]["wall_ns"] == 105, "A: wall time 105 ns (%s)" % r["run"]["wall_ns"])
    it = items(r)
    check(it.get(("kernel", "gemm_kernel<float, 128>")) == 85, "A: the kernel holds 85 ns of the "
          "path (%s)" % it)
    check(it.get(("latency", "[launch latency]")) == 15, "A: the launch (latency to the kernel's "
          "start) 15 ns")
    check(it.get(("gpu_wait", "cudaDeviceSynchronize")) == 5, "A: the synchronize's own 5 ns "
          "after the kernel")
    check(sum(it.values()) == 105, "A: the path covers the run (%d)" % sum(it.values()))
    r = analyze(a, [pa], "--what-if", "kernel:gemm=0.5")
    check(r["what_if"]["predicted_wall_ns"] == 62,
          "A: kernel 2x faster: the synchronize ends at 15 + 42 + 5 = 62 ns (%s)" %
          r["what_if"]["predicted_wall_ns"])
    r = analyze(a, [pa], "--what-if", "api:Synchronize=1", "--what-if", "kernel:nomatch=0")
    check(r["what_if"]["predicted_wall_ns"] == 105, "A: a what-if that changes nothing predicts "
          "the recording")

    # B: the kernel [15,50] hides behind CPU work up to 100, then a synchronize [100,101]
    pb = os.path.join(tmp, "b.db")
    d = SynthDB(a, pb, 5001)
    d.region(0, T0 + 0, T0 + 10, "cudaLaunchKernel", corr=1)
    d.kernel(1, T0 + 15, T0 + 50, 3, corr=1)
    d.region(0, T0 + 100, T0 + 101, "cudaDeviceSynchronize", corr=2)
    d.close()
    r = analyze(a, [pb], "--what-if", "kernel:reduce_sum=0.1")
    check(r["what_if"]["gain_ns"] == 0, "B: a hidden kernel 10x faster gains nothing (%s)" %
          r["what_if"])
    it = items(r)
    check(("kernel", "reduce_sum") not in it and it.get(("cpu", "[cpu]")) == 90,
          "B: the hidden kernel is not on the path; the CPU work is (%s)" % it)

    # C: two ranks; rank 1 computes 300 ns, rank 0 100 ns, then an MPI_Allreduce (ends at 310)
    dbs = []
    for rank, comp in ((0, 100), (1, 300)):
        p = os.path.join(tmp, "c%d.db" % rank)
        d = SynthDB(a, p, 6000 + rank, rank=rank)
        d.region(0, T0, T0 + comp, "compute", category="MARKER_RANGE_API")
        d.region(0, T0 + comp, T0 + 310, "MPI_Allreduce", category="MPI_API")
        d.close()
        dbs.append(p)
    r = analyze(a, dbs, "--what-if", "rank:^1$=0.5")
    check(r["what_if"]["predicted_wall_ns"] == 160,
          "C: the straggler 2x faster: both ranks leave at 150 + 10 = 160 ns (%s)" %
          r["what_if"]["predicted_wall_ns"])
    it = items(r)
    check(it.get(("cpu", "compute")) == 300 and it.get(("mpi_wait", "MPI_Allreduce")) == 10,
          "C: the path is rank 1's compute then the collective's own 10 ns (%s)" % it)
    f = r["findings"]
    check(f and f[0]["rule"] == "rank_straggler" and "rank 1" in f[0]["title"],
          "C: the top finding is rank 1, the straggler (%s)" % [x["title"] for x in f])
    r = analyze(a, dbs, "--what-if", "range:compute=0.5")
    check(r["what_if"]["predicted_wall_ns"] == 160, "C: every rank's compute halved: 160 ns too")
    # D: times beyond 32 bits (a node keeps a wait's intrinsic time in 32 bits, larger ones in
    # a side table; the launch table keeps a call's length in 31): a 3 s launch call, its kernel
    # [5 ns, 1 s], then a synchronize [3 s, 8 s] whose own time after the kernel is 5 s
    pd = os.path.join(tmp, "d.db")
    d = SynthDB(a, pd, 5002)
    S = 10 ** 9
    d.region(0, T0, T0 + 3 * S, "cudaLaunchKernel", corr=1)
    d.kernel(1, T0 + 5, T0 + S, 2, corr=1)
    d.region(0, T0 + 3 * S, T0 + 8 * S, "cudaDeviceSynchronize", corr=2)
    d.close()
    r = analyze(a, [pd], "--what-if", "api:Synchronize=0.5")
    check(r["run"]["wall_ns"] == 8 * S, "D: wall time 8 s (%s)" % r["run"]["wall_ns"])
    it = items(r)
    check(it.get(("gpu_wait", "cudaDeviceSynchronize")) == 5 * S and
          it.get(("launch", "cudaLaunchKernel")) == 3 * S,
          "D: the path is the 3 s call and the synchronize's own 5 s (%s)" % it)
    check(r["what_if"]["predicted_wall_ns"] == 5 * S + S // 2,
          "D: the synchronize's own time halved: 3 + 2.5 s (%s)" %
          r["what_if"]["predicted_wall_ns"])
    r = analyze(a, [pd], "--what-if", "kernel:gemm=0.5")
    check(r["what_if"]["gain_ns"] == 0, "D: the kernel, off the path, gains nothing (%s)" %
          r["what_if"])
    mode_synthetic_gpu(a, tmp, T0)
    shutil.rmtree(tmp, ignore_errors=True)


def rules(res):
    return {f["rule"]: f["gain_pct"] for f in res["findings"] + res["not_worth_fixing"]}


def mode_synthetic_gpu(a, tmp, T0):
    """The GPU rules and the graph's GPU corner cases on synthetic databases."""
    # D: an async copy from pageable memory blocks its call (0-100 us); the same copy from
    # pinned memory gives no finding (the copy row's extdata carries the memory kinds)
    for kind in ("PAGEABLE", "PINNED"):
        p = os.path.join(tmp, "d-%s.db" % kind)
        d = SynthDB(a, p, 7000)
        us = 1000
        d.region(0, T0, T0 + 100 * us, "cudaMemcpyAsync", corr=1)
        d.copy(1, T0 + 5 * us, T0 + 95 * us, corr=1, src_kind=kind)
        d.region(0, T0 + 100 * us, T0 + 105 * us, "cudaLaunchKernel", corr=2)
        d.kernel(1, T0 + 110 * us, T0 + 150 * us, 2, corr=2)
        d.region(0, T0 + 105 * us, T0 + 151 * us, "cudaDeviceSynchronize", corr=3)
        d.close()
        g = rules(analyze(a, [p]))
        if kind == "PAGEABLE":
            check(g.get("pageable_copy", 0) >= 5.0, "D: a pageable copy is a finding (%s)" % g)
        else:
            check("pageable_copy" not in g, "D: a pinned copy is none (%s)" % g)
    # E: N x (launch 5 us; synchronize until the 50 us kernel ends; 40 us CPU): with the
    # synchronize calls gone the CPU (45 us) runs ahead and the GPU (50 us) sets the pace
    for n in (12, 3):
        p = os.path.join(tmp, "e%d.db" % n)
        d = SynthDB(a, p, 7100)
        us, t = 1000, T0
        for i in range(n):
            d.region(0, t, t + 5 * us, "cudaLaunchKernel", corr=2 * i + 1)
            d.kernel(1, t + 10 * us, t + 60 * us, 2, corr=2 * i + 1)
            d.region(0, t + 5 * us, t + 62 * us, "cudaDeviceSynchronize", corr=2 * i + 2)
            t += 102 * us
        d.close()
        r = analyze(a, [p])
        g = rules(r)
        if n == 12:
            check(40.0 <= g.get("sync_in_loop", 0) <= 60.0 and
                  r["findings"][0]["rule"] == "sync_in_loop",
                  "E: 12 synchronize calls in a loop: the top finding, about half the run "
                  "(%s)" % g)
        else:
            check("sync_in_loop" not in g, "E: 3 synchronize calls are no loop (%s)" % g)
    # F: the main thread's data_load (1 ms, twice) feeds a worker thread (PyTorch's autograd
    # thread) that launches after a gap with no call in it: woken by the main thread
    p = os.path.join(tmp, "f.db")
    d = SynthDB(a, p, 7200, threads=2)
    us = 1000
    d.region(0, T0, T0 + 1000 * us, "data_load", category="MARKER_RANGE_API")
    d.region(0, T0 + 1300 * us, T0 + 2300 * us, "data_load", category="MARKER_RANGE_API")
    d.region(0, T0 + 2600 * us, T0 + 3000 * us, "cudaDeviceSynchronize", corr=9)
    d.region(1, T0 + 1100 * us, T0 + 1110 * us, "cudaLaunchKernel", corr=1)
    d.kernel(1, T0 + 1120 * us, T0 + 1200 * us, 2, corr=1)
    d.region(1, T0 + 2400 * us, T0 + 2410 * us, "cudaLaunchKernel", corr=2)
    d.kernel(1, T0 + 2420 * us, T0 + 2990 * us, 2, corr=2)
    d.close()
    r = analyze(a, [p], "--what-if", "range:^data_load$=0.5")
    check(r["what_if"]["predicted_wall_ns"] == 2000 * us,
          "F: data_load 2x faster brings the woken worker's launch forward: 2000 us "
          "(%s)" % r["what_if"]["predicted_wall_ns"])
    # G: a kernel CUPTI gave no timestamps (start 0) is left out, and counted
    p = os.path.join(tmp, "g.db")
    d = SynthDB(a, p, 7300)
    d.region(0, T0 + 0, T0 + 10, "cudaLaunchKernel", corr=1)
    d.kernel(1, T0 + 15, T0 + 100, 2, corr=1)
    d.kernel(1, 0, 0, 2, corr=5)
    d.region(0, T0 + 20, T0 + 105, "cudaDeviceSynchronize", corr=2)
    d.close()
    r = analyze(a, [p])
    check(r["run"]["wall_ns"] == 105 and r["run"]["gpu_ops_untimed"] == 1,
          "G: an untimed kernel does not stretch the run: 105 ns, 1 left out (%s)" % r["run"])
def mode_overlap(a):
    """Overlap percentages per GPU and rank (breakdown.gpus), on two ranks' databases whose
    unions and intersections are known exactly."""
    tmp = tempfile.mkdtemp(prefix="omniprof-analyze-ov-")
    T0 = 10 ** 9
    dbs = []
    # rank 0, device 2, three streams: gemm [0,100] on stream 1; an NCCL all-reduce [60,160] on
    # stream 2 (40 of its 100 ns beside gemm); copies [50,110] on stream 3 (beside gemm, then
    # the NCCL kernel: all 60 ns) and [170,230] (alone): copies 120 ns, 60 beside kernels
    p = os.path.join(tmp, "r0.db")
    d = SynthDB(a, p, 7000, rank=0, streams=3)
    nccl = d.kernel_symbol("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgs)")
    d.region(0, T0, T0 + 5, "cudaLaunchKernel", corr=1)
    d.region(0, T0 + 5, T0 + 10, "cudaLaunchKernel", corr=2)
    d.region(0, T0 + 10, T0 + 15, "cudaMemcpyAsync", corr=3)
    d.region(0, T0 + 15, T0 + 20, "cudaMemcpyAsync", corr=4)
    d.kernel(1, T0 + 0, T0 + 100, 2, corr=1)
    d.kernel(2, T0 + 60, T0 + 160, nccl, corr=2)
    d.copy(3, T0 + 50, T0 + 110, corr=3)
    d.copy(3, T0 + 170, T0 + 230, corr=4)
    d.region(0, T0 + 20, T0 + 240, "cudaDeviceSynchronize", corr=5)
    d.close()
    dbs.append(p)
    # rank 1: the NCCL kernel [20,40] inside gemm [0,100] on another stream: 100 %; no copies
    p = os.path.join(tmp, "r1.db")
    d = SynthDB(a, p, 7001, rank=1, streams=2)
    nccl = d.kernel_symbol("ncclKernel_AllGather_RING_LL_Sum_int8_t")
    d.region(0, T0, T0 + 5, "cudaLaunchKernel", corr=1)
    d.region(0, T0 + 5, T0 + 10, "cudaLaunchKernel", corr=2)
    d.kernel(1, T0 + 0, T0 + 100, 3, corr=1)
    d.kernel(2, T0 + 20, T0 + 40, nccl, corr=2)
    d.region(0, T0 + 10, T0 + 110, "cudaDeviceSynchronize", corr=3)
    d.close()
    dbs.append(p)
    r = analyze(a, dbs)
    check(r["version"] == 1 and r.get("minor", 0) >= 1, "the JSON's minor version is 1 or more "
          "(%s.%s)" % (r["version"], r.get("minor")))
    g = {x["rank"]: x for x in r["breakdown"].get("gpus", [])}
    check(sorted(g) == [0, 1], "one overlap row per GPU and rank (%s)" % sorted(g))
    if sorted(g) == [0, 1]:
        x = g[0]
        want = {"compute_ns": 100, "communication_ns": 100, "comm_overlap_ns": 40,
                "comm_overlap_pct": 40.0, "copy_ns": 120, "copy_overlap_ns": 60,
                "copy_overlap_pct": 50.0, "busy_ns": 220, "streams": 3}
        got = {k: x.get(k) for k in want}
        check(got == want, "rank 0: communication 40 %% beside computation, copies 50 %% beside "
              "kernels (%s)" % got)
        x = g[1]
        want = {"compute_ns": 100, "communication_ns": 20, "comm_overlap_ns": 20,
                "comm_overlap_pct": 100.0, "copy_ns": 0, "copy_overlap_pct": None}
        got = {k: x.get(k) for k in want}
        check(got == want, "rank 1: communication 100 %% beside computation, no copies (%s)" % got)
    r = omniprof(a, "analyze", "-i", *dbs)
    check("40.0 % beside computation" in r.stdout and "50.0 % beside kernels" in r.stdout and
          "100.0 % beside computation" in r.stdout, "the console shows the overlap per GPU (%s)"
          % [ln for ln in r.stdout.splitlines() if "beside" in ln])
    # the report's findings section carries the same rows
    out = os.path.join(tmp, "report.html")
    r = omniprof(a, "report", "-i", *dbs, "-o", out)
    html = open(out).read() if os.path.exists(out) else ""
    check('"gpu_overlap":[' in html and '"comm_overlap_pct":40' in html,
          "the report's findings carry the overlap rows")
    shutil.rmtree(tmp, ignore_errors=True)


def mode_waits(a):
    """Which GPU work a host wait waited for: a stream synchronize whose synchronization record
    names its stream waits for that stream only; an event synchronize (its event's stream is not
    recorded) and a device synchronize for every stream. Two streams where the two semantics
    give different critical paths and what-if predictions (exact)."""
    tmp = tempfile.mkdtemp(prefix="omniprof-analyze-waits-")
    T0, U = 10 ** 9, 1000

    def build(name, call, record):
        # gemm [10,100] us on stream 1, reduce_sum [12,95] us on stream 2, then the wait
        # [10,101] us; its synchronization record (if any) inside it, naming stream 2
        p = os.path.join(tmp, name)
        d = SynthDB(a, p, 8000, streams=2)
        d.region(0, T0, T0 + 5 * U, "cudaLaunchKernel", corr=1)
        d.region(0, T0 + 5 * U, T0 + 10 * U, "cudaLaunchKernel", corr=2)
        d.kernel(1, T0 + 10 * U, T0 + 100 * U, 2, corr=1)
        d.kernel(2, T0 + 12 * U, T0 + 95 * U, 3, corr=2)
        d.region(0, T0 + 10 * U, T0 + 101 * U, call, corr=3)
        if record:
            d.region(0, T0 + 11 * U, T0 + 100 * U + 500, record, category="SYNCHRONIZATION",
                     corr=3, extdata='{"stream":2,"event":7,"device_id":0,"context_id":1}')
        d.close()
        return p

    stream_path = {("launch", "cudaLaunchKernel"): 5 * U, ("latency", "[launch latency]"): 7 * U,
                   ("kernel", "reduce_sum"): 83 * U,
                   ("gpu_wait", "cudaStreamSynchronize"): 6 * U}
    p = build("stream.db", "cudaStreamSynchronize", "SYNCHRONIZATION_STREAM")
    r = analyze(a, [p], "--what-if", "kernel:gemm=0.5")
    it = items(r)
    check(it == stream_path, "stream synchronize of stream 2: the path is the launch, stream 2's "
          "kernel and the wait's own 6 us, not stream 1's gemm (%s)" % it)
    check(r["what_if"]["predicted_wall_ns"] == 101 * U, "stream synchronize of stream 2: gemm "
          "(stream 1) 2x faster gains nothing (%s)" % r["what_if"]["predicted_wall_ns"])
    r = analyze(a, [p], "--what-if", "kernel:reduce_sum=0.5")
    check(r["what_if"]["predicted_wall_ns"] == 100 * U, "stream synchronize: reduce_sum 2x "
          "faster: the wait ends 6 us after it, the run with gemm at 100 us (%s)" %
          r["what_if"]["predicted_wall_ns"])
    device_path = {("latency", "[launch latency]"): 10 * U,
                   ("kernel", "gemm_kernel<float, 128>"): 90 * U}
    for name, call, record in (("event.db", "cudaEventSynchronize", "SYNCHRONIZATION_EVENT"),
                               ("device.db", "cudaDeviceSynchronize", "SYNCHRONIZATION_DEVICE"),
                               ("norecord.db", "cudaStreamSynchronize", None)):
        p = build(name, call, record)
        r = analyze(a, [p], "--what-if", "kernel:gemm=0.5")
        it = items(r)
        want = dict(device_path)
        want[("gpu_wait", call)] = 1 * U
        check(it == want, "%s (%s): device-wide, the path runs through stream 1's gemm (%s)"
              % (call, record or "no synchronization record", it))
        check(r["what_if"]["predicted_wall_ns"] == 96 * U, "%s: gemm 2x faster: the wait ends "
              "1 us after reduce_sum (95 us) (%s)" % (call, r["what_if"]["predicted_wall_ns"]))
    shutil.rmtree(tmp, ignore_errors=True)


def mode_events(a):
    """CUDA events (omniprof_cuda_event rows: on which stream, after which call, an event was
    recorded). An event synchronize waits for the work its event's stream had before the event,
    not for the device; a stream's wait for an event (cudaStreamWaitEvent) makes the waiting
    stream's next operation wait for the event's work. Exact paths and predictions, where the
    device-wide reading (and no edge for the stream wait) gives others."""
    tmp = tempfile.mkdtemp(prefix="omniprof-analyze-events-")
    T0, U = 10 ** 9, 1000
    ext = '{"stream":%d,"event":7,"device_id":0,"context_id":1%s}'

    def sync_db(name, rec_stream, sync_id):
        # gemm [10,100] us on stream 1, reduce_sum [12,95] us on stream 2; the event recorded
        # on rec_stream after both launches; cudaEventSynchronize [10,101] us with its record
        p = os.path.join(tmp, name)
        d = SynthDB(a, p, 8100, streams=2)
        d.region(0, T0, T0 + 5 * U, "cudaLaunchKernel", corr=1)
        d.region(0, T0 + 5 * U, T0 + 9 * U, "cudaLaunchKernel", corr=2)
        d.kernel(1, T0 + 10 * U, T0 + 100 * U, 2, corr=1)
        d.kernel(2, T0 + 12 * U, T0 + 95 * U, 3, corr=2)
        d.region(0, T0 + 9 * U, T0 + 10 * U, "cudaEventRecord", corr=3)
        d.cuda_event(rec_stream, 3, 7, 70)
        d.region(0, T0 + 10 * U, T0 + 101 * U, "cudaEventSynchronize", corr=4)
        d.region(0, T0 + 11 * U, T0 + 100 * U + 500, "SYNCHRONIZATION_EVENT",
                 category="SYNCHRONIZATION", corr=4,
                 extdata=ext % (0, ',"sync_id":%d' % sync_id if sync_id else ""))
        d.close()
        return p

    for name, sync_id in (("event2.db", 70), ("event2-nosyncid.db", 0)):
        p = sync_db(name, 2, sync_id)
        r = analyze(a, [p], "--what-if", "kernel:gemm=0.5")
        it = items(r)
        want = {("launch", "cudaLaunchKernel"): 5 * U, ("latency", "[launch latency]"): 7 * U,
                ("kernel", "reduce_sum"): 83 * U, ("gpu_wait", "cudaEventSynchronize"): 6 * U}
        check(it == want, "%s: an event recorded on stream 2: its synchronize waits for stream "
              "2's reduce_sum, not stream 1's gemm (%s)" % (name, it))
        check(r["what_if"]["predicted_wall_ns"] == 101 * U, "%s: gemm (stream 1) 2x faster "
              "gains nothing (%s)" % (name, r["what_if"]["predicted_wall_ns"]))
        r = analyze(a, [p], "--what-if", "kernel:reduce_sum=0.5")
        check(r["what_if"]["predicted_wall_ns"] == 100 * U, "%s: reduce_sum 2x faster: the "
              "wait ends 6 us after it, the run with gemm at 100 us (%s)"
              % (name, r["what_if"]["predicted_wall_ns"]))
    p = sync_db("event1.db", 1, 70)
    r = analyze(a, [p], "--what-if", "kernel:reduce_sum=0.5")
    it = items(r)
    want = {("latency", "[launch latency]"): 10 * U, ("kernel", "gemm_kernel<float, 128>"): 90 * U,
            ("gpu_wait", "cudaEventSynchronize"): 1 * U}
    check(it == want, "an event recorded on stream 1: the path runs through gemm (%s)" % it)
    check(r["what_if"]["predicted_wall_ns"] == 101 * U, "event on stream 1: reduce_sum 2x "
          "faster gains nothing (%s)" % r["what_if"]["predicted_wall_ns"])

    # stream 2 waits for an event recorded on stream 1 after gemm [10,100]; reduce_sum, launched
    # at 7 us, starts when gemm ends (100 us) and runs 20 us; a device synchronize to the end
    def streamwait_db(name, pid, gap):
        """gap: ns between gemm's end and reduce_sum's start (the GPU's cross-stream delay)"""
        p = os.path.join(tmp, name)
        d = SynthDB(a, p, pid, streams=2)
        d.region(0, T0, T0 + 5 * U, "cudaLaunchKernel", corr=1)
        d.kernel(1, T0 + 10 * U, T0 + 100 * U, 2, corr=1)
        d.region(0, T0 + 5 * U, T0 + 6 * U, "cudaEventRecord", corr=2)
        d.cuda_event(1, 2, 7, 70)
        d.region(0, T0 + 6 * U, T0 + 7 * U, "cudaStreamWaitEvent", corr=3)
        d.region(0, T0 + 6 * U, T0 + 7 * U, "SYNCHRONIZATION_STREAM_WAIT_EVENT",
                 category="SYNCHRONIZATION", corr=3, extdata=ext % (2, ',"sync_id":70'))
        d.region(0, T0 + 7 * U, T0 + 12 * U, "cudaLaunchKernel", corr=4)
        d.kernel(2, T0 + 100 * U + gap, T0 + 120 * U + gap, 3, corr=4)
        d.region(0, T0 + 12 * U, T0 + 121 * U + (U if gap else 0), "cudaDeviceSynchronize",
                 corr=5)
        d.close()
        return p

    p = streamwait_db("streamwait.db", 8200, 0)
    r = analyze(a, [p], "--what-if", "kernel:gemm=0.5")
    it = items(r)
    want = {("latency", "[launch latency]"): 10 * U, ("kernel", "gemm_kernel<float, 128>"): 90 * U,
            ("kernel", "reduce_sum"): 20 * U, ("gpu_wait", "cudaDeviceSynchronize"): 1 * U}
    check(it == want, "stream wait: reduce_sum (stream 2) waits for gemm (stream 1) through the "
          "event, not for its launch 93 us before (%s)" % it)
    check(r["run"]["wall_ns"] == 121 * U, "stream wait: wall 121 us (%s)" % r["run"]["wall_ns"])
    check(r["what_if"]["predicted_wall_ns"] == 76 * U, "stream wait: gemm 2x faster: gemm ends "
          "at 55 us, reduce_sum runs 55-75 us, the synchronize ends at 76 us (%s)"
          % r["what_if"]["predicted_wall_ns"])

    # the same with reduce_sum starting 1,024 ns after gemm's end, as recorded on the H200 (a
    # dependency across streams takes the GPU about a microsecond): still the event, not the
    # launch (before AN_EVENT_SLACK_NS the launch's 93 us kept it, and the what-if gained 0)
    p = streamwait_db("streamwait_gap.db", 8300, 1024)
    r = analyze(a, [p], "--what-if", "kernel:gemm=0.5")
    pred = r["what_if"]["predicted_wall_ns"]
    check(75 * U <= pred <= 78 * U, "stream wait 1 us after the event's work: gemm 2x faster "
          "ends the run near 76 us (%s)" % pred)
    shutil.rmtree(tmp, ignore_errors=True)


def mode_untimed(a):
    """GPU operations CUPTI gave no start (0) in the timelines: `omniprof convert -f json` leaves
    them out (not drawn at time 0, which would stretch the timeline back to the epoch) and says
    how many on stderr; the timed kernel stays."""
    tmp = tempfile.mkdtemp(prefix="omniprof-untimed-")
    T0 = 10 ** 9
    p = os.path.join(tmp, "u.db")
    d = SynthDB(a, p, 7400)
    d.region(0, T0 + 0, T0 + 10, "cudaLaunchKernel", corr=1)
    d.kernel(1, T0 + 15, T0 + 100, 2, corr=1)
    d.kernel(1, 0, 0, 2, corr=5)
    d.region(0, T0 + 20, T0 + 105, "cudaDeviceSynchronize", corr=2)
    d.close()
    r = omniprof(a, "convert", "-i", p, "-f", "json", "-d", tmp, "-o", "u")
    out = [os.path.join(tmp, f) for f in os.listdir(tmp) if f.endswith(".json")][0]
    check("1 GPU operation(s) without timestamps" in r.stderr, "convert says it left 1 untimed "
          "GPU operation out (%s)" % r.stderr.strip()[-200:])
    with open(out) as f:
        doc = json.load(f)
    evs = doc["traceEvents"] if isinstance(doc, dict) else doc
    kern = [e for e in evs if e.get("ph") == "X" and "gemm" in str(e.get("name", ""))]
    check(len(kern) == 1 and float(kern[0]["ts"]) > 0, "one kernel slice, the timed one (%s)"
          % [(e.get("name"), e.get("ts")) for e in kern])
    # summary: the timed kernel's statistics alone, the untimed one counted on a row of its own
    r = omniprof(a, "summary", "-i", p)
    rows = [ln for ln in r.stdout.splitlines() if "| KERNEL_DISPATCH |" in ln]
    cells = {ln.split("|")[1].strip(): [c.strip() for c in ln.split("|")[3:6]] for ln in rows}
    check(cells.get("gemm_kernel<float, 128>", [""])[0] == "1" and
          cells.get("gemm_kernel<float, 128>", ["", "", ""])[2] == "85" and
          cells.get("[no timestamps]", [""])[0] == "1",
          "summary: gemm 1 call of 85 ns, 1 kernel on the row [no timestamps] (%s)" % cells)
    # report: the run spans the timed work (105 ns from 1 s), not from time 0
    page = os.path.join(tmp, "u.html")
    omniprof(a, "report", "-i", p, "-o", page, "--no-progress")
    with open(page) as f:
        html = f.read()
    m = re.search(r'"duration_ns":\s*(\d+)', html)
    check(m and int(m.group(1)) == 105, "report: duration 105 ns (%s)" % (m and m.group(1)))
    shutil.rmtree(tmp, ignore_errors=True)


def mode_nccl(a):
    """NCCL collectives across ranks: the k-th ncclDevKernel_/ncclKernel_ kernel of one name on
    each rank are one collective, all ranks leave together. Two ranks merged: rank 1 computes
    (gemm) before its all-reduce; rank 0's all-reduce kernel waits on the GPU for it. A faster
    gemm shortens rank 0's collective too (exact)."""
    tmp = tempfile.mkdtemp(prefix="omniprof-analyze-nccl-")
    T0, U = 10 ** 9, 1000
    name = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgs)"
    dbs = []
    p = os.path.join(tmp, "r0.db")
    d = SynthDB(a, p, 9000, rank=0)
    k = d.kernel_symbol(name)
    d.region(0, T0, T0 + 5 * U, "cudaLaunchKernel", corr=1)
    d.kernel(1, T0 + 10 * U, T0 + 90 * U, k, corr=1)
    d.region(0, T0 + 5 * U, T0 + 91 * U, "cudaDeviceSynchronize", corr=2)
    d.close()
    dbs.append(p)
    p = os.path.join(tmp, "r1.db")
    d = SynthDB(a, p, 9001, rank=1)
    k = d.kernel_symbol(name)
    d.region(0, T0, T0 + 5 * U, "cudaLaunchKernel", corr=1)
    d.region(0, T0 + 5 * U, T0 + 10 * U, "cudaLaunchKernel", corr=2)
    d.kernel(1, T0 + 10 * U, T0 + 80 * U, 2, corr=1)
    d.kernel(1, T0 + 80 * U, T0 + 90 * U, k, corr=2)
    d.region(0, T0 + 10 * U, T0 + 91 * U, "cudaDeviceSynchronize", corr=3)
    d.close()
    dbs.append(p)
    merged = os.path.join(tmp, "merged.db")
    omniprof(a, "merge", "-i", *dbs, "-o", merged)
    r = analyze(a, [merged])
    check(r["run"]["wall_ns"] == 91 * U, "merged: wall 91 us (%s)" % r["run"]["wall_ns"])
    it = items(r)
    check(it.get(("kernel", "gemm_kernel<float, 128>")) == 70 * U, "the path runs through rank "
          "1's gemm, which every rank's all-reduce waits for (%s)" % it)
    r = analyze(a, [merged], "--what-if", "kernel:gemm=0.5")
    check(r["what_if"]["predicted_wall_ns"] == 56 * U, "gemm 2x faster: rank 1's all-reduce "
          "starts at 45 us, both ranks leave it at 55 us and their synchronizes end at 56 us "
          "(%s)" % r["what_if"]["predicted_wall_ns"])
    r = analyze(a, [merged], "--what-if", "kernel:^nccl=0.5")
    check(r["what_if"]["predicted_wall_ns"] == 86 * U, "the all-reduce's own 10 us halved: "
          "86 us (%s)" % r["what_if"]["predicted_wall_ns"])
    # a straggler rank in NCCL collectives: two all-reduces on each rank, rank 1's gemm between
    # them 60 us, rank 0's 20 us; rank 0's second all-reduce waits for rank 1 on the GPU
    dbs = []
    for rank, gemm_us in ((0, 20), (1, 60)):
        p = os.path.join(tmp, "s%d.db" % rank)
        d = SynthDB(a, p, 9100 + rank, rank=rank)
        k = d.kernel_symbol(name)
        d.region(0, T0, T0 + 5 * U, "cudaLaunchKernel", corr=1)
        d.region(0, T0 + 5 * U, T0 + 8 * U, "cudaLaunchKernel", corr=2)
        d.region(0, T0 + 8 * U, T0 + 10 * U, "cudaLaunchKernel", corr=3)
        d.kernel(1, T0 + 10 * U, T0 + 20 * U, k, corr=1)
        d.kernel(1, T0 + 20 * U, T0 + (20 + gemm_us) * U, 2, corr=2)
        d.kernel(1, T0 + (20 + gemm_us) * U, T0 + 90 * U, k, corr=3)
        d.region(0, T0 + 10 * U, T0 + 91 * U, "cudaDeviceSynchronize", corr=4)
        d.close()
        dbs.append(p)
    merged = os.path.join(tmp, "straggler.db")
    omniprof(a, "merge", "-i", *dbs, "-o", merged)
    r = analyze(a, [merged])
    f = [x for x in r["findings"] if x["rule"] == "rank_straggler"]
    check(len(f) == 1 and r["findings"][0]["rule"] == "rank_straggler" and "rank 1" in f[0]["title"]
          and "GPU" in f[0]["evidence"], "NCCL straggler: rank 1 (its GPU work) is the top finding "
          "(%s)" % [(x["rule"], x["title"], x["evidence"]) for x in r["findings"]])
    check(f and f[0]["gain_ns"] == 40 * U, "NCCL straggler: rank 1's gemm brought to 20 us: both "
          "ranks' second all-reduce starts at 40 us, ends at 50, the run at 51 us: 40 us gained "
          "(%s)" % (f and f[0]["gain_ns"]))
    dbs = []
    for rank in (0, 1):  # balanced: no straggler
        p = os.path.join(tmp, "b%d.db" % rank)
        d = SynthDB(a, p, 9200 + rank, rank=rank)
        k = d.kernel_symbol(name)
        d.region(0, T0, T0 + 5 * U, "cudaLaunchKernel", corr=1)
        d.region(0, T0 + 5 * U, T0 + 8 * U, "cudaLaunchKernel", corr=2)
        d.region(0, T0 + 8 * U, T0 + 10 * U, "cudaLaunchKernel", corr=3)
        d.kernel(1, T0 + 10 * U, T0 + 20 * U, k, corr=1)
        d.kernel(1, T0 + 20 * U, T0 + 60 * U, 2, corr=2)
        d.kernel(1, T0 + 60 * U, T0 + 70 * U, k, corr=3)
        d.region(0, T0 + 10 * U, T0 + 71 * U, "cudaDeviceSynchronize", corr=4)
        d.close()
        dbs.append(p)
    merged = os.path.join(tmp, "balanced.db")
    omniprof(a, "merge", "-i", *dbs, "-o", merged)
    r = analyze(a, [merged])
    check(not [x for x in r["findings"] if x["rule"] == "rank_straggler"], "balanced NCCL ranks: "
          "no straggler (%s)" % [(x["rule"], x["title"]) for x in r["findings"]])
    nccl_torch_shaped(a, tmp)
    shutil.rmtree(tmp, ignore_errors=True)


def torch_rank_db(a, path, pid, rank, cos_us, period_us, own_stream, steps=3, untimed=-1):
    """One rank of a PyTorch NCCL loop as the H200 recorded it (tests/analyze/torch_nccl.py):
    cudaFuncGetAttributes 100 us (lazy module loading) first; then per step the host launches
    gemm, on the straggler a cos kernel, and the all-reduce's kernel inside the NVTX range
    ncclAllReduce (on the compute stream, as PyTorch 2.11 runs a blocking collective; with
    own_stream on NCCL's stream 2, which waits through cudaEventRecord/cudaStreamWaitEvent),
    and waits in cudaDeviceSynchronize; each step an NVTX range `step`; ncclCommDestroy 50 us
    last. The host runs ahead: the kernels queue on the stream, each starting 2 us after the
    one before ended (the H200's 1.0-2.7 us), long after its launch. Every rank's all-reduce
    kernel ends 10 us after the last one started; the synchronizes 1 us after. untimed: the
    step whose all-reduce kernel CUPTI gave no times (start and end 0)."""
    T0, U = 10 ** 9, 1000
    d = SynthDB(a, path, pid, rank=rank, streams=2 if own_stream else 1)
    nccl = d.kernel_symbol("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgs)")
    cos = d.kernel_symbol("cos_kernel")
    d.region(0, T0, T0 + 100 * U, "cudaFuncGetAttributes")
    corr = 1
    ext = '{"stream":2,"event":7,"device_id":0,"context_id":1,"sync_id":%d}'
    for s in range(steps):
        h = T0 + 100 * U + s * period_us * U
        d.region(0, h, h + period_us * U, "step", category="MARKER_RANGE_API")
        d.region(0, h, h + 2 * U, "cudaLaunchKernel", corr=corr)
        d.kernel(1, h + 5 * U, h + 55 * U, 2, corr=corr)
        corr, gpu = corr + 1, h + 55 * U
        if cos_us:
            d.region(0, h + 2 * U, h + 3 * U, "cudaLaunchKernel", corr=corr)
            d.kernel(1, gpu + 2 * U, gpu + (2 + cos_us) * U, cos, corr=corr)
            corr, gpu = corr + 1, gpu + (2 + cos_us) * U
        if own_stream:
            d.region(0, h + 3 * U, h + 4 * U, "cudaEventRecord", corr=corr)
            d.cuda_event(1, corr, 7, 100 + s)
            d.region(0, h + 4 * U, h + 5 * U, "cudaStreamWaitEvent", corr=corr + 1)
            d.region(0, h + 4 * U, h + 5 * U, "SYNCHRONIZATION_STREAM_WAIT_EVENT",
                     category="SYNCHRONIZATION", corr=corr + 1, extdata=ext % (100 + s))
            corr += 2
        d.region(0, h + 5 * U, h + 8 * U, "ncclAllReduce", category="MARKER_RANGE_API")
        d.region(0, h + 6 * U, h + 7 * U, "cudaLaunchKernelExC", corr=corr)
        t0, t1 = (gpu + 2 * U, h + (period_us - 1) * U) if s != untimed else (0, 0)
        d.kernel(2 if own_stream else 1, t0, t1, nccl, corr=corr)
        d.region(0, h + 8 * U, h + period_us * U, "cudaDeviceSynchronize", corr=corr + 1)
        corr += 2
    end = T0 + 100 * U + steps * period_us * U
    d.region(0, end, end + 50 * U, "ncclCommDestroy", category="MARKER_RANGE_API")
    d.close()


def nccl_torch_shaped(a, tmp):
    """Two ranks shaped like the H200's torch_nccl.py recording (torch_rank_db): rank 1's cos
    kernel (30 us a step) makes rank 0's all-reduce wait. The kernels queued 2 us apart on a
    busy stream must be taken as waiting for their stream, not for their launch (before,
    only 1 us was: each kernel's launch edge held its recorded start, the path ran host ->
    '[launch latency]' -> the step's last kernel, and removing the cos kernels gained 0)."""
    U = 1000
    for own in (0, 1):
        tag = "own" if own else "same"
        dbs = {}
        for variant, cos_us, period in (("base", 30, 100), ("fast", 0, 68)):
            paths = []
            for rank in (0, 1):
                p = os.path.join(tmp, "t%s_%s%d.db" % (tag, variant, rank))
                torch_rank_db(a, p, 9300 + 10 * own + rank + (5 if cos_us else 0), rank,
                              cos_us if rank == 1 else 0, period, own)
                paths.append(p)
            dbs[variant] = os.path.join(tmp, "t%s_%s.db" % (tag, variant))
            omniprof(a, "merge", "-i", *paths, "-o", dbs[variant])
        what = "torch-shaped NCCL (%s stream)" % ("its own" if own else "the compute")
        r = analyze(a, [dbs["base"]], "--what-if", "kernel:cos_kernel=0", "--iteration", "step")
        check(r["run"]["wall_ns"] == 450 * U, "%s: wall 450 us (%s)" % (what, r["run"]["wall_ns"]))
        it = items(r)
        check(it.get(("kernel", "cos_kernel")) == 90 * U and
              it.get(("kernel", "gemm_kernel<float, 128>")) == 150 * U,
              "%s: the path runs through rank 1's gemm and cos kernels (3 x 50 and 3 x 30 us), "
              "not the launches' latency (%s)" % (what, it))
        check(r["what_if"]["predicted_wall_ns"] == 360 * U, "%s: cos removed: each step 70 us "
              "(its zero-length kernel keeps its 2 us queueing), 100 + 3 x 70 + 50 = 360 us (%s)"
              % (what, r["what_if"]["predicted_wall_ns"]))
        iters = r["iterations"]["items"]
        check(len(iters) == 3 and all(i["wall_ns"] == 100 * U and i["predicted_ns"] == 70 * U
                                      for i in iters),
              "%s: per step 100 us recorded, 70 us predicted (%s)" % (what, iters))
        fast = analyze(a, [dbs["fast"]], "--iteration", "step")
        check(fast["run"]["wall_ns"] == 354 * U and
              abs(r["what_if"]["predicted_wall_ns"] - fast["run"]["wall_ns"]) <= 3 * 2 * U,
              "%s: the run without cos takes 354 us: the prediction within the removed "
              "kernels' 2 us gaps (%s)" % (what, fast["run"]["wall_ns"]))
        r = analyze(a, [dbs["base"]], "--what-if", "kernel:gemm=0.5")
        check(r["what_if"]["predicted_wall_ns"] == 375 * U, "%s: gemm 2x faster: each step "
              "25 us shorter on both ranks: 375 us (%s)"
              % (what, r["what_if"]["predicted_wall_ns"]))
        top = [(x["rule"], x["title"]) for x in r["findings"][:3]]
        strag = [x for x in r["findings"][:3] if x["rule"] == "rank_straggler"]
        check(bool(strag) and "rank 1 " in strag[0]["title"] and "GPU" in strag[0]["evidence"] and
              abs(strag[0]["gain_ns"] - 60 * U) <= 10,
              "%s: rank 1 is a top-3 straggler finding (its GPU work), its gemm and cos between "
              "its first and last all-reduce brought to rank 0's: 2 steps x 30 us (%s; %s)"
              % (what, top, strag and strag[0]["gain_ns"]))
        check(not fast["findings"], "%s, balanced (no cos): no finding of 5 %% or more (%s)"
              % (what, [(x["rule"], x["title"], x["gain_pct"]) for x in fast["findings"]]))
    # rank 0's step-1 all-reduce kernel without times (CUPTI gave none: the H200's recordings
    # have whole steps so): it still counts, so step 2 meets step 2 (counting only the timed
    # ones paired rank 0's step 2 with rank 1's step 1, whose recorded end came 58 us before
    # rank 0's kernel started: the recording itself was no longer reproduced)
    paths = []
    for rank in (0, 1):
        p = os.path.join(tmp, "tuntimed%d.db" % rank)
        torch_rank_db(a, p, 9340 + rank, rank, 30 if rank == 1 else 0, 100, 0,
                      untimed=1 if rank == 0 else -1)
        paths.append(p)
    merged = os.path.join(tmp, "tuntimed.db")
    omniprof(a, "merge", "-i", *paths, "-o", merged)
    r = analyze(a, [merged], "--what-if", "kernel:cos_kernel=0", "--iteration", "step")
    check(r["run"]["wall_ns"] == 450 * U and r["run"]["gpu_ops_untimed"] == 1,
          "untimed NCCL kernel: the recording reproduced, wall 450 us, 1 untimed (%s, %s)"
          % (r["run"]["wall_ns"], r["run"]["gpu_ops_untimed"]))
    got = [i["predicted_ns"] for i in r["iterations"]["items"]]
    check(got == [70 * U, 100 * U, 68 * U] and r["what_if"]["predicted_wall_ns"] == 388 * U,
          "untimed NCCL kernel: cos removed, rank 0's step 0 takes 70 us (its all-reduce met "
          "rank 1's), step 1, with no recorded all-reduce, its recorded 100, step 2 its own 68 "
          "(rank 1, ahead since its step 1 took 70, arrives first): 388 us (%s, %s)"
          % (got, r["what_if"]["predicted_wall_ns"]))


def mode_cli(a):
    tmp = tempfile.mkdtemp(prefix="omniprof-analyze-cli-")
    p = os.path.join(tmp, "a.db")
    d = SynthDB(a, p, 5000)
    d.region(0, 10 ** 9, 10 ** 9 + 100, "cudaMalloc")
    d.close()
    before = open(p, "rb").read()
    for spec, want in (("kernal:x=1", "unknown target 'kernal'"), ("kernel:x",
        "TARGET:REGEX=FACTOR"),
                       ("kernel:x=-1", "not a number >= 0"), ("kernel:(=0.5", "bad regular "
                           "expression")):
        r = omniprof(a, "analyze", "-i", p, "--what-if", spec, ok=False)
        check(r.returncode == 2 and want in r.stderr and spec in r.stderr,
              "--what-if '%s': exit 2 naming it (%d: %s)" % (spec, r.returncode, r.stderr.strip()))
    r = omniprof(a, "analyze", "-i", os.path.join(tmp, "missing.db"), ok=False)
    check(r.returncode == 2 and "missing.db" in r.stderr, "a missing input: exit 2 naming it "
          "(%s)" % r.stderr.strip())
    r = omniprof(a, "analyze", "-i", p, "--window", "3:1", ok=False)
    check(r.returncode == 2 and "START:END" in r.stderr, "a bad window: exit 2 (%s)" %
          r.stderr.strip())
    out = os.path.join(tmp, "out.json")
    open(out, "w").write("keep")
    r = omniprof(a, "analyze", "-i", p, "-o", out, ok=False)
    check(r.returncode == 2 and open(out).read() == "keep", "an existing -o file is not replaced")
    r = omniprof(a, "analyze", "-i", p)
    check(r.returncode == 0 and "What to fix" in r.stdout.split("\n")[2], "the console's first "
          "lines say what to fix")
    check(open(p, "rb").read() == before, "the input database is unchanged")
    r = omniprof(a, "analyze", "--help")
    check("--what-if" in r.stdout and "--iteration" in r.stdout, "--help lists the options")
    # Python: omniprof.analyze() gives the command's JSON as a dict, errors as AnalyzeError
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")
    code = ("import omniprof, sys\n"
            "r = omniprof.analyze(sys.argv[1], what_if=['api:cudaMalloc=0.5'])\n"
            "print(r['schema'], r['run']['wall_ns'], r['what_if']['predicted_wall_ns'])\n"
            "try:\n    omniprof.analyze(sys.argv[1] + '.missing')\n"
            "except omniprof.AnalyzeError as e:\n    print('error', e.status)\n")
    env = dict(os.environ, PYTHONPATH=src, OMNIPROF_BIN=a.omniprof)
    r = subprocess.run([sys.executable, "-c", code, p], capture_output=True, text=True,
                       timeout=120, env=env)
    check(r.stdout.split() == ["omniprof-analyze", "100", "50", "error", "2"],
          "omniprof.analyze() from Python: the result and the error status (%s %s)" %
          (r.stdout.strip(), r.stderr.strip()[-300:]))
    shutil.rmtree(tmp, ignore_errors=True)


# ---- real programs --------------------------------------------------------------------------

ENV = dict(os.environ, OMNIPROF_TRACE_THREAD_JOIN="true", OMNIPROF_TRACE_THREAD_BARRIERS="true")
ENV.pop("LD_PRELOAD", None)


def record(a, tmp, name, prog, args):
    path = os.path.join(a.bindir, prog)
    if not os.path.exists(path):
        skip("%s is not built" % prog)
    d = os.path.join(tmp, name)
    r = subprocess.run([a.omniprof, "run", "--marker-trace", "--sample", "cputime", "-d", d, "-o",
                        name, "--", path] +
                       [str(x) for x in args], capture_output=True, text=True, timeout=400, env=ENV)
    check(r.returncode == 0 and "done" in r.stdout, "%s %s runs under omniprof (%d %s)" %
          (prog, args, r.returncode, r.stderr.strip()[-300:]))
    return os.path.join(d, name + "_results.db")


def span(res, predicted=False):
    its = res["iterations"]["items"]
    if not its:
        return res["run"]["wall_ns"]
    if predicted:
        # the predicted iterations keep their order: first predicted start to last predicted end
        return None
    return its[-1]["start_ns"] + its[-1]["wall_ns"] - its[0]["start_ns"]


def compare(label, base, pred, fast, base_span, pred_span, fast_span):
    """Predicted vs measured gain, in % of the recorded run (iterations' span)."""
    pg = 100.0 * (base_span - pred_span) / base_span
    mg = 100.0 * (base_span - fast_span) / base_span
    tol = max(5.0, 0.2 * abs(mg))
    print("%s: predicted gain %.1f %%, measured %.1f %% (tolerance %.1f points); whole run: "
          "predicted %.1f %%, "
          "measured %.1f %%" % (label, pg, mg, tol, 100.0 * (base - pred) / base,
                                100.0 * (base - fast) / base))
    check(abs(pg - mg) <= tol, "%s: the prediction is within %.1f points of the real gain (%.1f "
          "vs %.1f)" %
          (label, tol, pg, mg))
    return pg, mg


def iter_sum(res, key):
    """The iterations' median time x their count: a load spike on this shared machine that
    stretches one iteration of one run (a late wake-up) does not decide the comparison."""
    v = sorted(i[key] for i in res["iterations"]["items"])
    return v[len(v) // 2] * len(v) if v else 0


def whatif_case(a, label, prog, base_args, fast_args, spec, iteration, top_rule):
    tmp = tempfile.mkdtemp(prefix="omniprof-analyze-")
    base = record(a, tmp, "base", prog, base_args)
    fast = record(a, tmp, "fast", prog, fast_args)
    rb = analyze(a, [base], "--what-if", spec, "--iteration", iteration)
    rf = analyze(a, [fast], "--iteration", iteration)
    check(len(rb["iterations"]["items"]) == base_args[0], "%s: %d iterations found (%d)" %
          (label, base_args[0], len(rb["iterations"]["items"])))
    compare(label, rb["run"]["wall_ns"], rb["what_if"]["predicted_wall_ns"], rf["run"]["wall_ns"],
            iter_sum(rb, "wall_ns"), iter_sum(rb, "predicted_ns"), iter_sum(rf, "wall_ns"))
    rules = [f["rule"] for f in rb["findings"][:3]]
    check(top_rule in rules, "%s: '%s' is a top-3 finding (%s)" % (label, top_rule, rules))
    shutil.rmtree(tmp, ignore_errors=True)


def mode_pipeline(a):
    # on paper: a step is max(40, 80) = 80 ms; with 'consume' halved max(40, 40) = 40 ms: 50 %
    whatif_case(a, "pipeline", "antest_pipeline", [10, 40, 80], [10, 40, 40],
                "range:^consume$=0.5", "step",
                "thread_imbalance")


def mode_forkjoin(a):
    # on paper: a round is max(60, 180) = 180 ms; with 'work_big' halved 90 ms: 50 %
    whatif_case(a, "forkjoin", "antest_forkjoin", [6, 60, 180], [6, 60, 90],
                "range:^work_big$=0.5", "round",
                "thread_imbalance")


def mode_clean(a):
    tmp = tempfile.mkdtemp(prefix="omniprof-analyze-clean-")
    for prog, args in (("antest_forkjoin", [6, 80, 80]), ("antest_pipeline", [10, 60, 60])):
        db = record(a, tmp, prog, prog, args)
        r = analyze(a, [db])
        big = [(f["rule"], round(f["gain_pct"], 1)) for f in r["findings"] if f["gain_pct"] >= 5.0]
        check(not big, "%s (balanced): no finding with 5 %% or more predicted gain (%s)" % (prog,
            big))
    shutil.rmtree(tmp, ignore_errors=True)


def mpirun_env():
    env = dict(ENV)
    env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    env["OMPI_MCA_btl"] = "self,vader,tcp"
    env["OMPI_MCA_mpi_yield_when_idle"] = "1"  # 4 ranks on 2 cores: waiting ranks give the CPU up
    return env


def mode_mpi(a):
    prog = os.path.join(a.bindir, "antest_mpi")
    if not shutil.which("mpirun"):
        skip("mpirun (Open MPI) is not installed")
    if not os.path.exists(prog):
        skip("antest_mpi was not built (no mpicc at build time)")
    tmp = tempfile.mkdtemp(prefix="omniprof-analyze-mpi-")
    merged = {}
    for name, args in (("base", [12, 40, 80]), ("fast", [12, 40, 40])):
        d = os.path.join(tmp, name)
        cmd = [shutil.which("mpirun"), "--oversubscribe", "--allow-run-as-root", "-np", "4",
               a.omniprof, "run",
               "--mpi-trace", "--marker-trace", "-d", d, "-o", "rank%rank%", "--", prog] + \
            [str(x) for x in args]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=400, env=mpirun_env())
        check(r.returncode == 0 and r.stdout.count("rank ") == 4, "mpirun -np 4 %s %s (%d %s)" %
              (os.path.basename(prog), args, r.returncode, r.stderr.strip()[-400:]))
        dbs = [os.path.join(d, "rank%d_results.db" % k) for k in range(4)]
        check(all(os.path.exists(x) for x in dbs), "one database per rank (%s)" % os.listdir(d))
        merged[name] = os.path.join(tmp, name + "-merged.db")
        omniprof(a, "merge", "-i", *dbs, "-o", merged[name])
        if name == "base":
            per_rank = analyze(a, dbs, "--what-if", "range:^extra$=0.5")
    rb = analyze(a, [merged["base"]], "--what-if", "range:^extra$=0.5", "--iteration", "step")
    rf = analyze(a, [merged["fast"]], "--iteration", "step")
    check(rb["run"]["processes"] == 4, "the merged file holds 4 processes (%s)" %
          rb["run"]["processes"])
    check(abs(per_rank["what_if"]["predicted_wall_ns"] - rb["what_if"]["predicted_wall_ns"]) <=
          0.01 * rb["run"]["wall_ns"], "the rank databases and their merge predict the same run")
    check(len(rb["iterations"]["items"]) == 12, "12 iterations ('step' on the first rank's thread)")
    # on paper: an iteration is 40 + 80 ms (every rank waits for rank 2), with 'extra' halved 80 ms
    # (the work sleeps on the monotonic clock, so load does not stretch it). What load adds is
    # the MPI ranks' wake-ups: 4 ranks on 2 cores. Where the two runs' iterations exceed their
    # paper lengths by amounts that differ by more than the tolerance, the machine's load changed
    # between the runs and their difference is not the knob's: the gain is not judged then, with
    # the reason (seen beside a whole test suite and two busy loops: 34 % predicted, 25 % measured)
    over_b = iter_sum(rb, "wall_ns") / 12 / 1e6 - 120
    over_f = iter_sum(rf, "wall_ns") / 12 / 1e6 - 80
    if abs(over_b - over_f) > 0.05 * 120:
        print("SKIP-ITEM mpi: the prediction is not judged: the iterations ran %.1f ms over paper in "
              "the recorded run and %.1f ms in the faster one (load changed between the runs)"
              % (over_b, over_f))
    else:
        compare("mpi", rb["run"]["wall_ns"], rb["what_if"]["predicted_wall_ns"],
                rf["run"]["wall_ns"], iter_sum(rb, "wall_ns"), iter_sum(rb, "predicted_ns"),
                iter_sum(rf, "wall_ns"))
    f = rb["findings"]
    check(f and f[0]["rule"] == "rank_straggler" and "rank 2" in f[0]["title"],
          "mpi: the top finding is rank 2, the straggler (%s)" % [(x["rule"],
              x["title"]) for x in f[:3]])
    shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode")
    ap.add_argument("--omniprof", required=True)
    ap.add_argument("--bindir", required=True)
    a = ap.parse_args()
    scratch("omniprof-analyze-")  # the modes' mkdtemp folders go there, removed at exit
    {"synthetic": mode_synthetic, "cli": mode_cli, "pipeline": mode_pipeline,
     "forkjoin": mode_forkjoin,
     "clean": mode_clean, "mpi": mode_mpi, "overlap": mode_overlap,
     "waits": mode_waits, "nccl": mode_nccl, "events": mode_events,
     "untimed": mode_untimed}[a.mode](a)
    if FAILS:
        print("%d check(s) failed" % len(FAILS))
        sys.exit(1)


if __name__ == "__main__":
    main()
