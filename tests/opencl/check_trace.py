#!/usr/bin/env python3
"""check_trace.py — checks what tests/opencl/ocl_test_tool.c wrote for one run of ocl_workload
against what the workload says it did (its report file).

usage: check_trace.py TRACE.jsonl REPORT.json [--callbacks] [--intercept N] [--kinds all|api|gpu]

Prints one line per check group and "OK ..." at the end; exits 1 on the first group that fails.
"""
import collections
import json
import sys

ENQUEUE_OF = {  # record kind -> API calls that make it
    "kernel": {"clEnqueueNDRangeKernel", "clEnqueueTask"},
    "copy": {"clEnqueueReadBuffer", "clEnqueueWriteBuffer", "clEnqueueCopyBuffer", "clEnqueueMapBuffer",
             "clEnqueueUnmapMemObject"},
    "set": {"clEnqueueFillBuffer"},
    "alloc": {"clCreateBuffer", "clReleaseMemObject"},
}
H2D, D2H, D2D = 2, 3, 4
ALLOCATE, FREE = 1, 2


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def main():
    args = sys.argv[1:]
    trace, report = args[0], args[1]
    callbacks = "--callbacks" in args
    intercept = int(args[args.index("--intercept") + 1]) if "--intercept" in args else None
    kinds = args[args.index("--kinds") + 1] if "--kinds" in args else "all"
    rep = json.loads(open(report).read())
    exp = rep["expect"]
    recs = [json.loads(l) for l in open(trace) if l.strip()]
    by = collections.defaultdict(list)
    for r in recs:
        by[r["k"]].append(r)
    summ = by["summary"][-1] if by["summary"] else fail("no summary line (tool finalize did not run)")
    if summ["drops"]:
        fail("%d records dropped" % summ["drops"])
    api = {r["corr"]: r for r in by["api"]}
    names = collections.Counter(r["name"] for r in by["api"])
    phases = rep["phases"]

    def phase_of(t):
        for i, (a, b) in enumerate(phases):
            if a <= t <= b:
                return i + 1
        return 0

    if kinds in ("all", "api"):
        n_kernels = exp["vadd"] + exp["scale"]
        want = {"clEnqueueNDRangeKernel": n_kernels, "clCreateBuffer": exp["alloc"], "clReleaseMemObject": exp["free"],
                "clEnqueueFillBuffer": exp["fill"], "clCreateKernel": 4, "clBuildProgram": 1}
        for n, c in want.items():
            if names[n] != c:
                fail("%d %s API records, expected %d (all: %s)" % (names[n], n, c, dict(names)))
        for r in by["api"]:
            if not (0 < r["s"] <= r["e"]):
                fail("API record with bad times: %s" % r)
            if r["name"] == "clEnqueueNDRangeKernel":
                a = r["args"]
                if a.get("kernel") not in ("vadd", "scale") or a.get("global_x") != 4096 or a.get("work_dim") != 1:
                    fail("clEnqueueNDRangeKernel arguments not decoded: %s" % a)
                if a["kernel"] == "vadd" and a.get("local_x") != 64:
                    fail("vadd local size not decoded: %s" % a)
            p = phase_of(r["s"])
            if p and r["ext"] != 1000 + p and r["name"].startswith("clEnqueue"):
                fail("API record in phase %d has external id %d: %s" % (p, r["ext"], r))
        if any(r["name"] == "clGetPlatformIDs" and r["ret"] != 0 for r in by["api"]):
            fail("clGetPlatformIDs recorded a failure")
        print("api: %d records, %d distinct functions, arguments and external ids right" % (len(by["api"]), len(names)))

    if kinds in ("all", "gpu"):
        kern = collections.Counter(r["name"] for r in by["kernel"])
        if kern["vadd"] != exp["vadd"] or kern["scale"] != exp["scale"] or len(by["kernel"]) != exp["vadd"] + exp["scale"]:
            fail("kernels %s, expected vadd %d scale %d" % (dict(kern), exp["vadd"], exp["scale"]))
        copies = collections.Counter(r["op"] for r in by["copy"])
        if copies[H2D] != exp["h2d"] or copies[D2H] != exp["d2h"] or copies[D2D] != exp["d2d"] or len(by["copy"]) != exp["h2d"] + exp["d2h"] + exp["d2d"]:
            fail("copies %s, expected H2D %d D2H %d D2D %d" % (dict(copies), exp["h2d"], exp["d2h"], exp["d2d"]))
        if len(by["set"]) != exp["fill"] or by["set"][0]["bytes"] != 4096 * 4:
            fail("fills %s, expected %d of %d bytes" % (by["set"], exp["fill"], 4096 * 4))
        allocs = collections.Counter(r["op"] for r in by["alloc"])
        if allocs[ALLOCATE] != exp["alloc"] or allocs[FREE] != exp["free"]:
            fail("allocations %s, expected %d allocate %d free" % (dict(allocs), exp["alloc"], exp["free"]))
        if any(r["bytes"] != 4096 * 4 for r in by["alloc"]):
            fail("allocation sizes: %s" % [r["bytes"] for r in by["alloc"]])
        for r in by["kernel"] + by["copy"] + by["set"]:
            if not r["s"] <= r["e"]:
                fail("device record ends before it starts: %s" % r)
            if (r.get("agent") or r.get("src_agent") or r.get("dst_agent") or 0) == 0:
                fail("device record without an agent: %s" % r)
        for r in by["kernel"]:
            want_block = [64, 1, 1] if r["name"] == "vadd" else [1, 1, 1]
            want_grid = [64, 1, 1] if r["name"] == "vadd" else [4096, 1, 1]
            if r["block"] != want_block or r["grid"] != want_grid:
                fail("kernel geometry %s x %s for %s" % (r["grid"], r["block"], r["name"]))
        print("activity: kernels %s, copies %s, 1 fill, allocations %s" % (dict(kern), dict(copies), dict(allocs)))

    if kinds == "all":
        # every device record resolves to its API call, on the launching thread; GPU times between
        # the enqueue and the completion the program saw
        for r in by["kernel"] + by["copy"] + by["set"] + by["alloc"]:
            a = api.get(r["corr"])
            if not a:
                fail("%s record's correlation id %d resolves to no API record" % (r["k"], r["corr"]))
            if a["name"] not in ENQUEUE_OF[r["k"]]:
                fail("%s record resolves to %s" % (r["k"], a["name"]))
            if a["tid"] != r["tid"]:
                fail("%s record on thread %d, its API call on %d" % (r["k"], r["tid"], a["tid"]))
            if r["ext"] != a["ext"]:
                fail("%s record external id %d, its API call's %d" % (r["k"], r["ext"], a["ext"]))
            if r["k"] == "alloc":
                continue
            p = phase_of(a["s"])
            if not p:
                fail("API call outside the phases: %s" % a)
            if r["s"] < a["s"]:
                fail("%s starts %d ns before its enqueue call (%s)" % (r["k"], a["s"] - r["s"], a["name"]))
            if r["e"] > phases[p - 1][1]:
                fail("%s ends %d ns after the program saw phase %d complete" % (r["k"], r["e"] - phases[p - 1][1], p))
            if r["ext"] != 1000 + p:
                fail("%s record of phase %d has external id %d" % (r["k"], p, r["ext"]))
        threads = {r["tid"] for r in by["kernel"] if phase_of(api[r["corr"]]["s"]) == 3}
        queues = {r["queue"] for r in by["kernel"] if phase_of(api[r["corr"]]["s"]) == 3}
        if len(threads) != 2 or len(queues) != 2:
            fail("phase 3 kernels on threads %s, queues %s (expected 2 each)" % (threads, queues))
        # the program's own profiling events (queue B): same durations as our records
        own = [e for e in rep["own_events"] if e["kind"] == "vadd"]
        ours = sorted((r for r in by["kernel"] if phase_of(api[r["corr"]]["s"]) == 2), key=lambda r: r["s"])
        ours = ours[:len(own)]  # then the vadd whose event the program released at once
        if len(ours) != len(own) or [o["end"] - o["start"] for o in own] != [r["e"] - r["s"] for r in ours]:
            fail("own events' durations %s, records' %s" % ([o["end"] - o["start"] for o in own],
                                                          [r["e"] - r["s"] for r in ours]))
        print("correlation: every device record resolves to its API call on its thread, within enqueue..completion; "
              "own events' durations equal the records'")

    if callbacks:
        cb = [r for r in by["cb"] if r["kind"] == "api"]
        enters = collections.Counter(r["corr"] for r in cb if r["phase"] == 1)
        exits = collections.Counter(r["corr"] for r in cb if r["phase"] == 2)
        if enters != exits or any(v != 1 for v in enters.values()):
            fail("API callbacks: ENTER and EXIT do not pair")
        if any(r["fn"] == "USER_DATA_MISMATCH" for r in cb):
            fail("user data changed between ENTER and EXIT")
        if kinds in ("all", "api") and set(enters) != set(api):
            fail("%d API calls had callbacks, %d buffer records" % (len(enters), len(api)))
        nd = [r for r in cb if r["phase"] == 1 and r["fn"] == "clEnqueueNDRangeKernel"]
        if len(nd) != exp["vadd"] + exp["scale"] or {r["sym"] for r in nd} != {"vadd", "scale"}:
            fail("clEnqueueNDRangeKernel ENTER callbacks %d, symbols %s" % (len(nd), {r["sym"] for r in nd}))
        disp = [r for r in by["cb"] if r["kind"] == "dispatch"]
        if len(disp) != exp["vadd"] + exp["scale"] or {r["corr"] for r in disp} != {r["corr"] for r in nd}:
            fail("%d KERNEL_DISPATCH enqueue callbacks" % len(disp))
        print("callbacks: %d API calls ENTER/EXIT paired, %d dispatch enqueue callbacks" % (len(enters), len(disp)))

    if intercept is not None:
        if summ["wrapped_ndrange"] != intercept:
            fail("the tool's clEnqueueNDRangeKernel wrapper ran %d times, expected %d" % (summ["wrapped_ndrange"], intercept))
        print("intercept: the tool's wrapper ran %d times and chained" % intercept)
    print("OK %d records" % summ["records"])


if __name__ == "__main__":
    main()
