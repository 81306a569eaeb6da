#!/usr/bin/env python3
"""bench_instrument.py — what function instrumentation costs, by method (docs/PERFORMANCE.md).

  per_call_ns.<method>      extra thread CPU time per instrumented call (entry + return), from
                            `bench_calls leaf N` with -i '^leaf$' (forced: never throttled) next
                            to the same program uninstrumented, in the same run
  mix_slowdown.<method>     the call-heavy program (`bench_calls mix N`) under the defaults
                            (no -i: size limit and throttle on), as a ratio to uninstrumented;
                            the target is <= 1.05
Each figure is the median of interleaved rounds (BENCH_REPS, default 3); BENCH_METHODS=a,b
picks methods. Prints
`metric=<name> value=<n> unit=<u>` lines; exit 0.

usage: bench_instrument.py BUILD_DIR
"""
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile


def cpu_ns(cmd, env=None):
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600).stdout
    m = re.search(r"cpu_ns=(\d+)", out)
    if not m:
        raise RuntimeError("no cpu_ns in the output of %s: %r" % (" ".join(cmd), out))
    return int(m.group(1))


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    b = os.path.join(build, "bin")
    omni = os.path.join(b, "omniprof")
    reps = int(os.environ.get("BENCH_REPS", "3"))
    tmp = tempfile.mkdtemp(prefix="bench-ins-")
    methods = []
    if os.geteuid() == 0 and os.path.exists("/sys/bus/event_source/devices/uprobe/type"):
        methods.append(("uprobe", "bench_calls", 20000, 2000000))
    methods.append(("audit", "bench_calls_lib", 400000, 4000000))
    if os.path.exists(os.path.join(b, "bench_calls_cyg")):
        methods.append(("compiler", "bench_calls_cyg", 2000000, 4000000))
    only = os.environ.get("BENCH_METHODS")
    if only:
        methods = [m for m in methods if m[0] in only.split(",")]
    print("machine: %s, %d CPUs" % (os.uname().release, os.cpu_count()))
    for method, prog, n_leaf, n_mix in methods:
        p = os.path.join(b, prog)
        base_leaf, ins_leaf, base_mix, ins_mix = [], [], [], []
        for _ in range(reps):
            base_leaf.append(cpu_ns([p, "leaf", str(n_leaf)]))
            ins_leaf.append(cpu_ns([omni, "instrument", "--method", method, "-i", "^leaf$", "-d", tmp, "--", p, "leaf",
                                    str(n_leaf)]))
            base_mix.append(cpu_ns([p, "mix", str(n_mix)]))
            ins_mix.append(cpu_ns([omni, "instrument", "--method", method, "-d", tmp, "--", p, "mix", str(n_mix)]))
        per_call = (statistics.median(ins_leaf) - statistics.median(base_leaf)) / n_leaf
        ratio = statistics.median(ins_mix) / statistics.median(base_mix)
        print("metric=per_call_ns.%s value=%.0f unit=ns" % (method, per_call))
        print("metric=mix_slowdown.%s value=%.3f unit=ratio (target <= 1.05: %s)" %
              (method, ratio, "MET" if ratio <= 1.05 else "MISSED"))
        sys.stdout.flush()
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
