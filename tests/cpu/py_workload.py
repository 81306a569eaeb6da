"""py_workload.py — a Python program with known shares between its functions, and its own
reference profile (cpu_check.py's `python_frames` mode).

Main thread, one round after another for SECONDS: loop_a (a pure-Python loop), gen_b (draws
from the generator produce, which spends its time in pyspin_work), ext_c (calls pyspin_work of
libcputest_pyspin.so through ctypes: a native leaf under a Python caller). A worker thread runs
worker_loop (a Python loop, then pyspin_work) the whole time. The C calls release the GIL, so
the oracle's looks are not held back for long (see oracle()). An oracle thread samples the
other threads' stacks with sys._current_frames() every millisecond and keeps, per thread, each
look (CLOCK_MONOTONIC ns, innermost Python function); it writes {"window": [start, end],
"looks": {native thread id: [[ns, function], ...]}, "timed": {function: s} (the program's own
clock), "phases": [[ns, ns, ns, ns], ...] (each round's loop_a, gen_b, ext_c, end), "cpu": {native thread id: CPU s}, "wall": s} as JSON. cpu_check.py compares the samples
with the looks over the same stretches of time (those where the oracle looked often enough).
It prints "py_workload start pid=PID" when it starts (cpu_check.py's attach waits for it).

usage: py_workload.py SECONDS LIBPYSPIN ORACLE_JSON"""
import ctypes
import json
import os
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


def worker_loop(cpu):
    s = 0
    while not stop.is_set():
        for i in range(3000):
            s += i % 3
        spin(2000000)      # most of its time in C, so that the GIL is mostly free for main
    cpu[threading.get_native_id()] = time.thread_time()
    return s


def oracle(targets, looks, window):
    # This thread needs the GIL to look: while another thread holds it (a pure-Python loop), a
    # look comes late, and first after a thread releases it; on a loaded machine this thread
    # may also wait for a CPU. Each look is kept with its time, and the checker uses only the
    # stretches between two looks close enough together to say what ran in between.
    names = {t.ident: t.native_id for t in targets}
    window.append(time.monotonic_ns())
    while not stop.is_set():
        frames = sys._current_frames()
        now = time.monotonic_ns()
        for ident, nid in names.items():
            f = frames.get(ident)
            if f is not None:
                looks.setdefault(nid, []).append([now, f.f_code.co_name])
        time.sleep(0.001)
    window.append(time.monotonic_ns())


def main():
    # the oracle waits for the GIL at most this long behind a pure-Python loop (default 5 ms)
    sys.setswitchinterval(0.00002)
    print("py_workload start pid=%d" % os.getpid(), flush=True)
    wall0 = time.monotonic()
    cpu = {}
    worker = threading.Thread(target=worker_loop, args=(cpu,), name="worker")
    worker.start()
    looks, window = {}, []
    orc = threading.Thread(target=oracle, args=([threading.main_thread(), worker], looks, window),
                           name="oracle")
    orc.start()
    end = time.monotonic() + SECONDS
    rounds = 0
    timed = {"loop_a": 0.0, "gen_b": 0.0, "ext_c": 0.0}  # the program's own clock, per function
    phases = []  # [start of loop_a, of gen_b, of ext_c, end] per round, CLOCK_MONOTONIC ns
    while time.monotonic() < end:
        t0 = time.monotonic_ns()
        loop_a(150000)     # pure Python, GIL held
        t1 = time.monotonic_ns()
        gen_b(100)         # the generator: 100 x 0.1 ms in C under produce
        t2 = time.monotonic_ns()
        ext_c(15000000)    # 15 ms of CPU in C, GIL released
        t3 = time.monotonic_ns()
        timed["loop_a"] += (t1 - t0) / 1e9
        timed["gen_b"] += (t2 - t1) / 1e9
        timed["ext_c"] += (t3 - t2) / 1e9
        phases.append([t0, t1, t2, t3])
        rounds += 1
    cpu[threading.get_native_id()] = time.thread_time()
    stop.set()
    worker.join()
    orc.join()
    with open(sys.argv[3], "w") as f:
        json.dump({"window": window, "looks": {str(k): v for k, v in looks.items()}, "timed": timed, "phases": phases,
                   "cpu": {str(k): v for k, v in cpu.items()}, "wall": time.monotonic() - wall0}, f)
    print("py_workload done rounds=%d" % rounds)


if __name__ == "__main__":
    main()
