"""py_workload.py — a Python program with known shares between its functions, and its own
reference profile (cpu_check.py's `python_frames` mode).

Main thread, one round after another for SECONDS: loop_a (a pure-Python loop), gen_b (draws
from the generator produce, which spends its time in pyspin_work), ext_c (calls pyspin_work of
libcputest_pyspin.so through ctypes: a native leaf under a Python caller). A worker thread runs
worker_loop (a Python loop, then pyspin_work) the whole time. The C calls release the GIL, so
the oracle's looks are not held back for long (see oracle()). An oracle thread samples the other threads' stacks
with sys._current_frames() every millisecond and adds up, per thread, the time each Python
function was the innermost one; it writes {"window": [start, end] (CLOCK_MONOTONIC ns),
"threads": {native thread id: {function: ms}}} as JSON.

usage: py_workload.py SECONDS LIBPYSPIN ORACLE_JSON"""
import ctypes
import json
import sys
import threading
import time

SECONDS = float(sys.argv[1])
spin = ctypes.CDLL(sys.argv[2]).pyspin_work
spin.argtypes = [ctypes.c_uint64]
spin.restype = ctypes.c_uint64
stop = threading.Event()


def loop_a(n):
    s = 0
    for i in range(n):
        s += i * i % 7
    return s


def produce(n):
    for i in range(n):
        spin(100000)       # 0.1 ms in C, GIL released
        yield i * i % 11


def gen_b(n):
    s = 0
    for v in produce(n):
        s += v
    return s


def ext_c(ns):
    return spin(ns)


def worker_loop():
    s = 0
    while not stop.is_set():
        for i in range(3000):
            s += i % 3
        spin(2000000)      # most of its time in C, so that the GIL is mostly free for main
    return s


def oracle(targets, counts, window):
    # This thread needs the GIL to look: while another thread holds it (a pure-Python loop), a
    # look comes late, and first after a thread releases it. So each look counts for the time
    # since the previous one (in ms), not 1, shared half and half between what the previous
    # look and this one saw (a change of function lies anywhere between the two).
    names = {t.ident: t.native_id for t in targets}
    window.append(time.monotonic_ns())
    last, seen = window[0], {}
    while not stop.is_set():
        frames = sys._current_frames()
        now = time.monotonic_ns()
        half, last = (now - last) / 2e6, now
        for ident, nid in names.items():
            f = frames.get(ident)
            if f is not None:
                c = counts.setdefault(nid, {})
                name = f.f_code.co_name
                prev = seen.get(nid, name)
                c[prev] = c.get(prev, 0) + half
                c[name] = c.get(name, 0) + half
                seen[nid] = name
        time.sleep(0.001)
    window.append(time.monotonic_ns())


def main():
    # the oracle waits for the GIL at most this long behind a pure-Python loop (default 5 ms)
    sys.setswitchinterval(0.00002)
    worker = threading.Thread(target=worker_loop, name="worker")
    worker.start()
    counts, window = {}, []
    orc = threading.Thread(target=oracle, args=([threading.main_thread(), worker], counts, window), name="oracle")
    orc.start()
    end = time.monotonic() + SECONDS
    rounds = 0
    timed = {"loop_a": 0.0, "gen_b": 0.0, "ext_c": 0.0}  # the program's own clock, per function
    while time.monotonic() < end:
        t0 = time.perf_counter()
        loop_a(150000)     # pure Python, GIL held
        t1 = time.perf_counter()
        gen_b(100)         # the generator: 100 x 0.1 ms in C under produce
        t2 = time.perf_counter()
        ext_c(15000000)    # 15 ms of CPU in C, GIL released
        t3 = time.perf_counter()
        timed["loop_a"] += t1 - t0
        timed["gen_b"] += t2 - t1
        timed["ext_c"] += t3 - t2
        rounds += 1
    stop.set()
    worker.join()
    orc.join()
    with open(sys.argv[3], "w") as f:
        json.dump({"window": window, "threads": {str(k): v for k, v in counts.items()}, "timed": timed}, f)
    print("py_workload done rounds=%d" % rounds)


if __name__ == "__main__":
    main()
