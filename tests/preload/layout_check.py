#!/usr/bin/env python3
"""layout_check.py — preload.layout: which of omniprof's libraries define the libc and pthread
functions a program binds, in each kind of run (the interposition layout of docs/architecture.md).

- Every run: libomniprof-preload.so owns the process calls (pthread_create, pthread_setname_np,
  fork, close, setitimer); the waits (read, write, poll, sleeps, locks, conditions, join,
  barriers, __libc_start_main) are libc's; no other omniprof library (tool, SDK, CPU backend)
  defines any of them.
- A run that traces lock calls (OMNIPROF_TRACE_THREAD_LOCKS, _JOIN): the lock calls are
  libomniprof-sync.so's, and they become FUNCTION_WRAPPER regions of the database.
- `omniprof causal`: every wait is libomniprof-sync.so's.
usage: layout_check.py OMNIPROF WHICH_LIB"""
import os
import sqlite3
import subprocess
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from testlib import FAILS, check, scratch  # noqa: E402 (tests/testlib.py: the one assertion helper)


PROCESS = ["pthread_create", "pthread_setname_np", "fork", "close", "setitimer"]
WAITS = ["write", "read", "poll", "nanosleep", "pthread_mutex_unlock", "pthread_cond_wait", "__libc_start_main"]
LOCKS = ["pthread_mutex_lock", "pthread_join", "pthread_barrier_wait"]


def bound(omniprof, prog, args, env_extra=None, wd=None):
    env = dict(os.environ, **(env_extra or {}))
    r = subprocess.run([omniprof] + args + ["--", prog], capture_output=True, text=True, env=env, timeout=300,
                       cwd=wd)
    where = dict(line.split(" ", 1) for line in r.stdout.splitlines() if " " in line)
    return r, where


def owners(where, names):
    return {n: where.get(n, "?") for n in names}


def main():
    omniprof, prog = sys.argv[1], sys.argv[2]
    wd = scratch("omniprof-layout-")  # removed at the end
    r, w = bound(omniprof, prog, ["run", "--sample", "cputime", "-d", wd, "-o", "plain"])
    check(r.returncode == 0, "plain run exits 0 (%s)" % r.stderr.strip()[-300:])
    print("plain run:", w)
    check(all(v == "libomniprof-preload.so" for v in owners(w, PROCESS).values()),
          "process calls are libomniprof-preload.so's: %s" % owners(w, PROCESS))
    libc = [n for n in WAITS + LOCKS if w.get(n, "").startswith("libc.so")]
    check(len(libc) == len(WAITS + LOCKS), "waits and locks are libc's in a plain run: %s" % owners(w, WAITS + LOCKS))
    others = {n: v for n, v in w.items() if v.startswith("libomniprof") and v != "libomniprof-preload.so"}
    check(not others, "no other omniprof library defines a libc or pthread function: %s" % others)

    r, w = bound(omniprof, prog, ["run", "--sample", "cputime", "-d", wd, "-o", "locks"],
                 {"OMNIPROF_TRACE_THREAD_LOCKS": "1", "OMNIPROF_TRACE_THREAD_JOIN": "true"})
    check(r.returncode == 0, "lock-tracing run exits 0")
    print("lock-tracing run:", w)
    check(all(v == "libomniprof-sync.so" for v in owners(w, LOCKS).values()),
          "lock calls are libomniprof-sync.so's when lock tracing is on: %s" % owners(w, LOCKS))
    db = os.path.join(wd, "locks_results.db")
    counts = {}
    if os.path.exists(db):
        con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
        counts = dict(con.execute("SELECT name, count(*) FROM regions GROUP BY name").fetchall())
        con.close()
    check(counts.get("pthread_mutex_lock", 0) >= 1 and counts.get("pthread_join", 0) == 1,
          "the traced lock calls are regions of the database (%s)" % counts)

    r, w = bound(omniprof, prog, ["causal", "-d", wd, "-o", os.path.join(wd, "profile.coz")], wd=wd)
    check(r.returncode == 0, "causal run exits 0 (%s)" % r.stderr.strip()[-300:])
    print("causal run:", w)
    check(all(v == "libomniprof-sync.so" for v in owners(w, WAITS + LOCKS).values()),
          "waits and locks are libomniprof-sync.so's under omniprof causal: %s" % owners(w, WAITS + LOCKS))
    if FAILS:
        print("%d check(s) failed" % len(FAILS))
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
