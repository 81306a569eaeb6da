"""py_codechurn.py — short-lived Python code under sampling (cpu_check.py's `python_freed` mode).

Round k compiles `def fn_k(spin): return spin(NS)` from source of its own (file "<churn_k>"),
runs fn_k (NS ns of CPU in pyspin_work of libcputest_pyspin.so, through ctypes) and drops it:
fn_k's code object is freed when run_one returns, and the next round's code object is usually
allocated at the same address. A sampler that names code objects after the program freed them
names fn_k's samples after a later round's function, or loses the frame. Then tail_spin runs
pyspin_work for TAIL_MS and the program ends: the samples of its last stretch are named after
the interpreter's finalization freed main's and <module>'s code objects.
Writes {"rounds": [[k, start ns, end ns], ...], "tail": [start ns, end ns]} (CLOCK_MONOTONIC).

usage: py_codechurn.py ROUNDS NS TAIL_MS LIBPYSPIN OUT_JSON"""
import ctypes
import json
import sys
import time

ROUNDS, NS, TAIL_MS = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
spin = ctypes.CDLL(sys.argv[4]).pyspin_work
spin.argtypes = [ctypes.c_uint64]
spin.restype = ctypes.c_uint64


def run_one(k):
    ns = {}
    exec(compile("def fn_%d(spin):\n    return spin(%d)\n" % (k, NS), "<churn_%d>" % k, "exec"), ns)
    t0 = time.monotonic_ns()
    ns["fn_%d" % k](spin)
    return [k, t0, time.monotonic_ns()]


def tail_spin():
    t0 = time.monotonic_ns()
    spin(int(TAIL_MS * 1e6))
    return [t0, time.monotonic_ns()]


def main():
    rounds = []
    for k in range(ROUNDS):  # a loop, not a comprehension: 3.11 runs those in a frame of their own
        rounds.append(run_one(k))
    tail = tail_spin()
    with open(sys.argv[5], "w") as f:
        json.dump({"rounds": rounds, "tail": tail}, f)
    print("py_codechurn done rounds=%d" % ROUNDS, flush=True)


main()
