#!/usr/bin/env python3
"""validate.py — checks a GPU test trace (JSON lines from gpu_test_tool.so) against the
"EXPECT {...}" line the CUDA test program printed.

Checks (what upstream's validators check, plus exact counts):
  - no duplicate internal correlation ids among API records; API start <= end;
  - every kernel / copy / memset / allocation correlation id resolves to an API record on the
    launching thread, and that call's ENTER timestamp is before the GPU start;
  - GPU start < end for kernels, copies and memsets;
  - kernels: exact count per name, exact grid/block shapes (multiset);
  - copies per direction: exact count and total bytes; memsets; allocations;
  - NVTX: thread/process ranges and marks by message; ranges enclose the launches made in them;
  - external correlation ids pushed around launches reach the kernel records;
  - graph launches: kernels carry graph ids and resolve to cudaGraphLaunch calls;
  - no records dropped.
Usage: validate.py TRACE.jsonl PROGRAM_STDOUT [--pytorch]
Prints one line per failed check and "OK <summary>" when all pass; exit 1 on failure."""
import collections
import json
import sys


def load(path):
    recs = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                recs.append(json.loads(line))
            except ValueError as e:
                print("bad JSON at %s:%d: %s" % (path, n, e))
                sys.exit(1)
    return recs


def expect_of(path):
    with open(path) as f:
        for line in f:
            if line.startswith("EXPECT "):
                return json.loads(line[7:])
    print("no EXPECT line in %s" % path)
    sys.exit(1)


def base(name):
    return (name or "").split("(")[0].split("<")[0].strip()


def main():
    trace, out = sys.argv[1], sys.argv[2]
    pytorch = "--pytorch" in sys.argv
    recs = load(trace)
    exp = {} if pytorch else expect_of(out)
    errors = []
    by = collections.defaultdict(list)
    for r in recs:
        by[r["k"]].append(r)
    apis = by["api"]
    api_by_corr = {}
    for a in apis:
        if a["corr"] in api_by_corr:
            errors.append("duplicate API correlation id %d (%s and %s)" % (a["corr"], a["name"], api_by_corr[a["corr"]]["name"]))
        api_by_corr[a["corr"]] = a
        if a["s"] > a["e"]:
            errors.append("API %s corr %d: start > end" % (a["name"], a["corr"]))
    if not apis:
        errors.append("no API records at all")

    def resolve(kind, r, what):
        a = api_by_corr.get(r["corr"])
        if a is None:
            errors.append("%s %s: correlation id %d resolves to no API record" % (kind, what, r["corr"]))
            return None
        if a["tid"] != r["tid"]:
            errors.append("%s %s: launching thread %d != API thread %d" % (kind, what, r["tid"], a["tid"]))
        if "s" in r and not a["s"] < r["s"]:
            errors.append("%s %s: API ENTER %d not before GPU start %d" % (kind, what, a["s"], r["s"]))
        return a

    def timed(kind, r, what):
        if not r["s"] < r["e"]:
            errors.append("%s %s: start %d !< end %d" % (kind, what, r["s"], r["e"]))

    # kernels
    kernels = by["kernel"]
    dids = collections.Counter(k["did"] for k in kernels)
    dup = [d for d, c in dids.items() if c > 1]
    if dup:
        errors.append("%d duplicate dispatch ids" % len(dup))
    names = collections.Counter()
    shapes = collections.defaultdict(collections.Counter)
    bad_res = 0
    for k in kernels:
        nm = base(k["dname"])
        names[nm] += 1
        shapes[nm][(tuple(k["grid"]), tuple(k["block"]))] += 1
        n_err = len(errors)
        resolve("kernel", k, nm)
        timed("kernel", k, nm)
        if len(errors) > n_err:
            bad_res += 1
            if bad_res > 5:
                errors = errors[:n_err]
    if bad_res > 5:
        errors.append("... %d kernels failed resolution/timing checks in total" % bad_res)
    if not pytorch:
        ek = exp.get("kernels", {})
        for nm, e in ek.items():
            if names.get(nm, 0) != e["count"]:
                errors.append("kernel %s: %d records, expected %d" % (nm, names.get(nm, 0), e["count"]))
            want = collections.Counter({(tuple(g), tuple(b)): c for g, b, c in e.get("shapes", [])})
            if e.get("shapes") and shapes[nm] != want:
                errors.append("kernel %s: shapes %s, expected %s" % (nm, dict(shapes[nm]), dict(want)))
        extra = set(names) - set(ek)
        if extra:
            errors.append("unexpected kernels: %s" % sorted(extra))
        if exp.get("streams_min"):
            ns = len(set(k["stream"] for k in kernels))
            if ns < exp["streams_min"]:
                errors.append("kernels on %d streams, expected >= %d" % (ns, exp["streams_min"]))
        if exp.get("launch_threads"):
            nt = len(set(k["tid"] for k in kernels))
            if nt != exp["launch_threads"]:
                errors.append("kernels launched from %d threads, expected %d" % (nt, exp["launch_threads"]))
        if exp.get("graph"):
            for k in kernels:
                a = api_by_corr.get(k["corr"])
                if not k["graph"]:
                    errors.append("graph kernel %s without graph id" % k["dname"])
                    break
                if a and "GraphLaunch" not in a["name"]:
                    errors.append("graph kernel resolves to %s, not a graph launch" % a["name"])
                    break
            gl = [a for a in apis if a["dom"] == "rt" and a["name"].startswith("cudaGraphLaunch")]
            if len(gl) != exp["graph_launch_api"]:
                errors.append("%d cudaGraphLaunch records, expected %d" % (len(gl), exp["graph_launch_api"]))
        if exp.get("launch_api"):
            for k in kernels:
                a = api_by_corr.get(k["corr"])
                if a and a["name"] != exp["launch_api"]:
                    errors.append("kernel resolves to %s, expected %s" % (a["name"], exp["launch_api"]))
                    break
        if exp.get("external"):
            got = sorted(k["ext"] for k in kernels)
            if got != exp["external"]:
                errors.append("external ids on kernels %s, expected %s" % (got, exp["external"]))
        if exp.get("symbols"):
            syms = set(base(s["dname"]) for s in by["sym"])
            missing = [s for s in exp["symbols"] if s not in syms]
            if missing:
                errors.append("kernel symbols missing: %s (have %d symbol records)" % (missing, len(by["sym"])))
            if not by["code"]:
                errors.append("no code object records")

    # copies
    copies = by["copy"]
    cnt = collections.Counter()
    byt = collections.Counter()
    kinds = collections.Counter()
    mk = {0: "UNKNOWN", 1: "PAGEABLE", 2: "PINNED", 3: "DEVICE", 4: "ARRAY", 5: "MANAGED"}
    for c in copies:
        op = c["op"].replace("MEMORY_COPY_", "")
        cnt[op] += 1
        byt[op] += c["bytes"]
        kinds["%s->%s" % (mk.get(c["src"], "?"), mk.get(c["dst"], "?"))] += 1
        resolve("copy", c, op)
        timed("copy", c, op)
    if "copies" in exp:
        for op, (n, b) in exp["copies"].items():
            if cnt[op] != n or byt[op] != b:
                errors.append("copies %s: %d records / %d bytes, expected %d / %d" % (op, cnt[op], byt[op], n, b))
        extra = set(cnt) - set(exp["copies"])
        if extra:
            errors.append("unexpected copy directions %s" % sorted(extra))
        for kk, n in exp.get("copy_kinds", {}).items():
            if kinds[kk] != n:
                errors.append("copies %s: %d, expected %d (all: %s)" % (kk, kinds[kk], n, dict(kinds)))
    elif not pytorch and copies:
        errors.append("unexpected copies: %s" % dict(cnt))

    # memsets
    for m in by["memset"]:
        resolve("memset", m, "memset")
        timed("memset", m, "memset")
    if "memsets" in exp:
        n, b = exp["memsets"]
        got = (len(by["memset"]), sum(m["bytes"] for m in by["memset"]))
        if got != (n, b):
            errors.append("memsets: %d records / %d bytes, expected %d / %d" % (got[0], got[1], n, b))

    # allocations
    if "allocs" in exp:
        ac = collections.Counter()
        ab = collections.Counter()
        for a in by["alloc"]:
            op = a["op"].replace("MEMORY_ALLOCATION_", "")
            ac[op] += 1
            ab[op] += a["bytes"]
            resolve("alloc", a, op)
        for op, (n, b) in exp["allocs"].items():
            if ac[op] != n or (op == "ALLOCATE" and ab[op] != b):
                errors.append("allocations %s: %d / %d bytes, expected %d / %d" % (op, ac[op], ab[op], n, b))

    # NVTX
    ranges = [r for r in by["range"] if r["src"] == 1]
    if "ranges" in exp or pytorch:
        tr = collections.Counter(r["msg"] for r in ranges if r["op"] == 1)
        pr = collections.Counter(r["msg"] for r in ranges if r["op"] == 2)
        mk_ = collections.Counter(r["msg"] for r in ranges if r["op"] == 3)
        for m, n in exp.get("ranges", {}).items():
            if tr[m] != n:
                errors.append("NVTX thread range %r: %d, expected %d" % (m, tr[m], n))
        for m, n in exp.get("process_ranges", {}).items():
            if pr[m] != n:
                errors.append("NVTX process range %r: %d, expected %d" % (m, pr[m], n))
        for m, n in exp.get("marks", {}).items():
            if mk_[m] != n:
                errors.append("NVTX mark %r: %d, expected %d" % (m, mk_[m], n))
        launches = [api_by_corr[k["corr"]] for k in kernels if k["corr"] in api_by_corr]
        enclosed = collections.Counter()
        for r in ranges:
            if r["op"] not in (1, 2):
                continue
            for a in launches:
                if a["tid"] == r["tid"] and r["s"] <= a["s"] and a["e"] <= r["e"]:
                    enclosed[r["msg"]] += 1
        for m, n in exp.get("enclosed", {}).items():
            if enclosed[m] != n:
                errors.append("NVTX range %r encloses %d launches, expected %d" % (m, enclosed[m], n))
        if pytorch:
            if not ranges:
                errors.append("PyTorch: no NVTX ranges captured")
            if not kernels:
                errors.append("PyTorch: no kernels captured")
            inside = [r for r in ranges if r["msg"].startswith("omniprof_step")]
            if len(inside) != 3:
                errors.append("PyTorch: %d 'omniprof_step' ranges, expected 3" % len(inside))
            for r in inside:
                n = sum(1 for a in launches if a["tid"] == r["tid"] and r["s"] <= a["s"] and a["e"] <= r["e"])
                if n == 0:
                    errors.append("PyTorch: range %s encloses no kernel launch" % r["msg"])
            enclosed = collections.Counter()

    drops = sum(s.get("drops", 0) for s in by["stats"])
    if drops:
        errors.append("%d records dropped" % drops)

    for e in errors[:40]:
        print("FAIL: " + e)
    summary = "kernels=%d copies=%d memsets=%d allocs=%d api=%d ranges=%d markers=%d syms=%d code=%d retire=%d" % (
        len(kernels), len(copies), len(by["memset"]), len(by["alloc"]), len(apis), len(ranges), len(by["marker"]),
        len(by["sym"]), len(by["code"]), len(by["retire"]))
    if errors:
        print("FAILED (%d problems) %s" % (len(errors), summary))
        return 1
    print("OK " + summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
