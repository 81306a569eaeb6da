#!/usr/bin/env python3
"""test_run.py — `omniprof run --opencl-trace --kernel-trace ...` on tests/opencl's workload: the
OpenCL kernels show in the database views, `omniprof summary` and the Perfetto trace the way CUDA
kernels do (tests/gpu/check_omniprof_run.py checks the same for CUDA).

usage: test_run.py BUILD_DIR [PERFETTO_PROTO]
Exit 0 ok, 1 failure, 77 no OpenCL device.
"""
import glob
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from testlib import scratch  # noqa: E402 (tests/testlib.py)

KERNELS = {"vadd": 12, "scale": 14}


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(argv, **kw):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def main():
    build = os.path.abspath(sys.argv[1])
    here = os.path.dirname(os.path.abspath(__file__))
    proto = sys.argv[2] if len(sys.argv) > 2 else ""
    if not proto:
        p = os.path.join(here, "..", "..", "third_party", "perfetto", "perfetto_trace.proto")
        if os.path.exists(p):
            proto = p
    omniprof = os.path.join(build, "bin", "omniprof")
    prog = os.path.join(build, "bin", "omniprof-ocl-workload")
    env = dict(os.environ, POCL_CACHE_DIR=os.environ.get("POCL_CACHE_DIR", os.path.join(build, "pocl-cache", "run")))
    plain = run([prog], env=env)
    if plain.returncode == 77:
        print(plain.stdout.strip())
        return 77
    if plain.returncode != 0:
        fail("the workload fails untraced: %s" % plain.stderr[-300:])
    scratch("omniprof-ocl-")  # this mkdtemp and the later ones go there, removed at the end
    tmp = tempfile.mkdtemp(prefix="omniprof-ocl-run-")
    p = run([omniprof, "run", "-d", tmp, "-o", "w", "--opencl-trace", "--kernel-trace", "--memory-copy-trace",
             "--memory-set-trace", "--memory-allocation-trace", "--", prog], env=env)
    if p.returncode != 0:
        fail("omniprof run exit %d: %s" % (p.returncode, p.stderr[-500:]))
    if p.stdout != plain.stdout:
        fail("the program's output differs under omniprof run:\n%s\n---\n%s" % (plain.stdout, p.stdout))
    dbs = glob.glob(os.path.join(tmp, "*_results.db"))
    if len(dbs) != 1:
        fail("expected one database, found %s" % dbs)
    db = dbs[0]
    con = sqlite3.connect(db)

    # kernels view: names, counts, agent, geometry
    rows = con.execute("SELECT name, agent_type, grid_x, workgroup_x, stack_id, tid, start, end FROM kernels").fetchall()
    count = {}
    for name, agent_type, grid, wg, _, _, s, e in rows:
        count[name] = count.get(name, 0) + 1
        if agent_type != "GPU" or grid != 4096 or wg != (64 if name == "vadd" else 1) or not s <= e:
            fail("kernel row %s" % (rows[0],))
    if count != KERNELS:
        fail("kernels view %s, expected %s" % (count, KERNELS))
    api = {sid: (name, tid, s) for name, sid, tid, s in
           con.execute("SELECT name, stack_id, tid, start FROM regions WHERE category = 'OPENCL_API'")}
    for name, _, _, _, sid, tid, s, _ in rows:
        a = api.get(sid)
        if not a or a[0] != "clEnqueueNDRangeKernel" or a[1] != tid or a[2] > s:
            fail("kernel %s (correlation %s) does not resolve to its clEnqueueNDRangeKernel: %s" % (name, sid, a))
    n_copies = con.execute("SELECT count(*) FROM memory_copies").fetchone()[0]
    n_sets = con.execute("SELECT count(*) FROM omniprof_memory_sets").fetchone()[0]
    n_alloc = con.execute("SELECT count(*) FROM memory_allocations").fetchone()[0]
    if (n_copies, n_sets, n_alloc) != (8, 1, 8):
        fail("memory_copies %d (7 copies + 1 fill), memory sets %d, allocations %d; expected 8, 1, 8" % (n_copies, n_sets, n_alloc))
    top = dict(con.execute("SELECT name, total_calls FROM top_kernels"))
    if top != KERNELS:
        fail("top_kernels %s" % top)
    print("database: kernels %s resolve to their clEnqueueNDRangeKernel; %d API regions, %d copies+fill, %d allocations"
          % (count, len(api), n_copies, n_alloc))

    # omniprof summary
    s = run([omniprof, "summary", "-i", db], env=env)
    if s.returncode != 0:
        fail("omniprof summary exit %d: %s" % (s.returncode, s.stderr[-300:]))
    text = s.stdout + s.stderr
    for k, n in KERNELS.items():
        if not re.search(r"\|\s*%s\s*\|\s*KERNEL_DISPATCH\s*\|\s*%d\s*\|" % (k, n), text):
            fail("omniprof summary has no '%s | KERNEL_DISPATCH | %d' row:\n%s" % (k, n, text[:2000]))
    if not re.search(r"\|\s*clEnqueueNDRangeKernel\s*\|\s*OPENCL_API\s*\|\s*26\s*\|", text):
        fail("omniprof summary has no clEnqueueNDRangeKernel OPENCL_API row")
    print("summary: vadd 12, scale 14 under KERNEL_DISPATCH; clEnqueueNDRangeKernel 26 under OPENCL_API")

    # Perfetto
    c = run([omniprof, "convert", "-i", db, "-f", "pftrace", "-d", tmp, "-o", "t"], env=env)
    if c.returncode != 0:
        fail("omniprof convert exit %d: %s" % (c.returncode, c.stderr[-300:]))
    if not proto or not shutil.which("protoc"):
        print("perfetto: trace written (no %s here to decode it)" % ("protoc" if proto else "perfetto_trace.proto"))
        return 0
    with open(os.path.join(tmp, "t_results.pftrace"), "rb") as f:
        d = subprocess.run(["protoc", "--decode=perfetto.protos.Trace", "-I", os.path.dirname(proto),
                            os.path.basename(proto)], stdin=f, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if d.returncode != 0:
        fail("protoc cannot decode the trace: %s" % d.stderr[-300:])
    t = d.stdout.decode("utf-8", "replace")
    begins = t.count("type: TYPE_SLICE_BEGIN")
    flows_in = len(re.findall(r"^\s+terminating_flow_ids:", t, re.M))
    want_begins = len(api) + len(rows) + n_copies
    if begins != want_begins or flows_in != len(rows) + n_copies:
        fail("Perfetto: %d slices (expected %d), %d terminating flows (expected %d)" % (begins, want_begins, flows_in, len(rows) + n_copies))
    for k in KERNELS:
        if 'name: "%s"' % k not in t:
            fail("Perfetto: no event named %s" % k)
    if not re.search(r'name: "GPU \d+ Stream \d+"', t):
        fail("Perfetto: no GPU queue track")
    print("perfetto: %d slices, every kernel and copy ends a flow from its API call, GPU queue tracks" % begins)
    return kernel_trace_only(omniprof, prog, env, plain.stdout)


def kernel_trace_only(omniprof, prog, env, plain_out):
    """--kernel-trace alone (no --opencl-trace): the SDK loads the OpenCL backend for
    KERNEL_DISPATCH beside the CUDA one; the kernels have their device as agent."""
    tmp = tempfile.mkdtemp(prefix="omniprof-ocl-run-k-")
    p = run([omniprof, "run", "-d", tmp, "-o", "k", "--kernel-trace", "--", prog], env=env)
    if p.returncode != 0 or p.stdout != plain_out:
        fail("omniprof run --kernel-trace: exit %d, output %s" % (p.returncode, "same" if p.stdout == plain_out else "differs"))
    con = sqlite3.connect(os.path.join(tmp, "k_results.db"))
    rows = dict(con.execute("SELECT name, count(*) FROM kernels WHERE agent_type = 'GPU' GROUP BY name"))
    if rows != KERNELS or con.execute("SELECT count(*) FROM regions").fetchone()[0] != 0:
        fail("--kernel-trace alone: kernels with an agent %s, expected %s and no API regions" % (rows, KERNELS))
    print("--kernel-trace alone: %s, each on its device's agent" % rows)
    return loaded_without_calls(omniprof, env)


def loaded_without_calls(omniprof, env):
    """A program that loads libOpenCL and makes no call: the loader never initializes the layer,
    and the run says so in one line naming the loader's file (what a user of a loader without
    layer support, like the CUDA toolkit's libOpenCL.so.1, sees), the program unchanged."""
    tmp = tempfile.mkdtemp(prefix="omniprof-ocl-run-n-")
    code = "import ctypes; ctypes.CDLL('libOpenCL.so.1'); print('loaded')"
    p = run([omniprof, "run", "-d", tmp, "-o", "n", "--opencl-trace", "--", sys.executable, "-c", code], env=env)
    lines = [l for l in p.stderr.splitlines() if "never initialized omniprof's layer" in l]
    if p.returncode != 0 or p.stdout != "loaded\n" or len(lines) != 1 or "libOpenCL.so" not in lines[0]:
        fail("libOpenCL loaded without a call: exit %d, stdout %r, %d warning lines: %s"
             % (p.returncode, p.stdout, len(lines), p.stderr[-400:]))
    print("a loader that never initialized the layer is named in one line: " + lines[0][:120])
    return 0


if __name__ == "__main__":
    sys.exit(main())
