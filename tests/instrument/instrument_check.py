#!/usr/bin/env python3
"""instrument_check.py — drives the tests of `omniprof instrument` (CTest names instrument.*).

Each mode runs a real program under the real launcher and asserts on its output, its exit
status and the database it wrote (sqlite3 from the standard library). Exit 0 pass, 1 fail,
77 skip (after printing 'SKIP: <reason>').

  uprobe, audit, compiler   fib(20) instrumented by that method: exactly 21,891 FUNCTION_CALL
                            regions named fib, the program's output and status unchanged,
                            exclusive times that add up to the outermost call's inclusive time
  list                      --list: reasons (too small, too short, inlined, excluded module, regexes,
                            not reachable through the PLT), nothing run
  not_permitted             as an unprivileged user: auto falls back to LD_AUDIT and says why;
                            --method uprobe says uprobes are not permitted and the program
                            still runs unchanged
  bad_input                 bad regex, method, throttle, program: exit 2 with a message naming it;
                            issue 31: a negative throttle, --list of a non-ELF file, a method that
                            cannot see the selected functions (audit on the program's own, compiler
                            without the hooks: exit 2; some unseen: a warning), -o under a file
  attach_threads            attach to a running 4-thread program for 2 s: samples from every
                            thread, the program ends with its own output and status
  attach_sleeper            a program whose threads sleep 50 ms between ~1 us bursts (never
                            outside nanosleep long enough to be caught elsewhere): the attach
                            succeeds (a sleep is made again after the injected call), process
                            samples arrive, no sleep ends early with EINTR, the program ends
                            with its own output and status
  attach_again              attach, detach, attach again: two databases, the program unharmed
  attach_children           --attach-children (default): one database per process of the tree
  attach_refused            ptrace not permitted (another user; a non-dumpable process): exit 1,
                            a message saying why, the program unharmed
  attach_killed             omniprof attach killed with SIGKILL while attached: the program
                            runs on (never stopped) and its database is closed whole
  audit_cost                (issue 35 item 5) --method audit under 10 us of CPU per recorded call
                            (fib(24) against fib(20) in a library: every call through the PLT)
  audit_own                 (issue 35 item 5) --method audit: the profiler's own calls are not
                            audited — in the running program, after its database writer wrote
                            fib(20)'s calls, the GOT slots through which omniprof's libraries
                            and libsqlite3 call (sqlite3_step, memcpy, ...) hold the functions'
                            addresses; before, glibc kept them on its profiling trampoline
                            (the slot still at the PLT stub); the traced fib stays audited;
                            the program, linked -z now, has getchar bound in its RELRO GOT
  audit_tls                 (issue 35 item 5) --method audit on a non-PIE program that takes
                            malloc's address (as Debian's python3): the loader's own malloc (a
                            dlopened library's TLS) goes through the auditor; it ran until the
                            stack overflowed (SIGSEGV), now the program runs unchanged and
                            fib(15)'s 1,973 calls are recorded
  throttle_cost             (issue 35 item 4) uprobes on a small -O2 program (hot_calls.c) whose
                            tiny function is called 8 million times: throttled after 100 calls, it
                            then costs the process about what excluding it costs (CPU time of
                            the run, within 50 % + 1 s; before, every call kept trapping: ~1 us of
                            kernel time each, ~10 s more), the output unchanged
  libc_alias                (issue 35 item 6) -m libc -i '^printf$' instruments printf, an alias
                            of _IO_printf, and records its 3 calls under the name asked for
  attach_other_user         (issue 35 item 8) root attaching to another user's process: an output
                            directory that user cannot write is named with what to do; a
                            missing CAP_SYS_PTRACE is named as such
  attach_fork               (issue 35 item 7) a child forked while attached, with and without
                            --attach-children: after the detach no profiler thread, descriptor
                            or POSIX timer is left in the parent or the child (the child is no
                            longer sampled), nothing of the profiler was written into the
                            program's stderr; with --attach-children the child has a database
  attach_run_options        run's options through attach: --process-sampling (not among the
                            options attach parsed itself before) reaches the process (process
                            metrics in its database, about one per interval: its timed waits
                            wait in the attached process) and -f pftrace converts after the attach;
                            --preload, --echo, --mpi-trace refused by name with the reason; a
                            bad value gets run's message; the program unharmed

usage: instrument_check.py MODE --bindir DIR
"""
import argparse
import glob
import os
import pwd
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from testlib import FAILS, check, scratch  # noqa: E402 (tests/testlib.py: the one assertion helper)

FIB20_CALLS = 21891


def skip(reason):
    print("SKIP: " + reason)
    sys.exit(77)


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=240, **kw)
    return p.returncode, p.stdout, p.stderr


def databases(d):
    return sorted(glob.glob(os.path.join(d, "**", "*_results.db"), recursive=True))


def fib_calls(db):
    con = sqlite3.connect(db)
    rows = con.execute(
        "SELECT R.start, R.\"end\", json_extract(E.extdata, '$.exclusive_ns'), json_extract(E.extdata, '$.depth'), "
        "json_extract(E.extdata, '$.unfinished') FROM regions R JOIN rocpd_event E ON E.id = R.event_id "
        "AND E.guid = R.guid WHERE R.category = 'FUNCTION_CALL' AND R.name = 'fib'").fetchall()
    con.close()
    return rows


def reference(prog):
    return run([prog, "20"])


def check_fib_run(bindir, prog, method_args, expect_method=None, user=None, workdir=None):
    ref_rc, ref_out, _ = reference(prog)
    out_dir = tempfile.mkdtemp(prefix="ins-", dir=workdir)
    os.chmod(out_dir, 0o777)
    cmd = [os.path.join(bindir, "omniprof"), "instrument"] + method_args + ["-i", "^fib$", "-d", out_dir, "--", prog, "20"]
    if user:
        cmd = as_user(user) + cmd
    rc, out, err = run(cmd)
    print(err.strip())
    check(rc == ref_rc == 3, "exit status kept (%d, uninstrumented %d)" % (rc, ref_rc))
    check(out == ref_out, "program output unchanged")
    if expect_method:
        check(("method " + expect_method) in err, "the launcher says which method and why (%s)" % expect_method)
    dbs = databases(out_dir)
    check(len(dbs) == 1, "one database (%d)" % len(dbs))
    if dbs:
        rows = fib_calls(dbs[0])
        check(len(rows) == FIB20_CALLS, "fib(20) recorded %d calls (expected %d)" % (len(rows), FIB20_CALLS))
        if rows:
            incl = [e - s for s, e, _, _, _ in rows]
            excl = [x for _, _, x, _, _ in rows]
            check(all(x is not None and 0 <= x <= i for x, i in zip(excl, incl)), "0 <= exclusive <= inclusive for every call")
            check(sum(excl) == max(incl), "exclusive times add up to the outermost call (%d vs %d ns)" % (sum(excl), max(incl)))
            check(max(d for _, _, _, d, _ in rows) == 19 and min(d for _, _, _, d, _ in rows) == 0, "depths 0..19")
            check(not any(u for _, _, _, _, u in rows), "no call left unfinished")
    shutil.rmtree(out_dir, ignore_errors=True)
    return err


def as_user(user):
    """Run as `user`, with a HOME of its own (omniprof run reads ~/.omniprof.cfg)."""
    pw = pwd.getpwnam(user)
    home = tempfile.mkdtemp(prefix="home-")
    os.chmod(home, 0o777)
    return ["env", "HOME=" + home, "setpriv", "--reuid=%d" % pw.pw_uid, "--regid=%d" % pw.pw_gid, "--clear-groups"]


def uprobes_permitted():
    return os.geteuid() == 0 and os.path.exists("/sys/bus/event_source/devices/uprobe/type")


def mode_uprobe(a):
    if not uprobes_permitted():
        skip("uprobes need root (CAP_PERFMON) and the kernel's uprobe PMU")
    check_fib_run(a.bindir, os.path.join(a.bindir, "instest_fib"), ["--method", "uprobe"])
    # auto picks uprobes for a plain program when permitted
    check_fib_run(a.bindir, os.path.join(a.bindir, "instest_fib"), [], expect_method="uprobe")


def mode_audit(a):
    check_fib_run(a.bindir, os.path.join(a.bindir, "instest_fib_lib"), ["--method", "audit"])


def mode_compiler(a):
    # auto: the program calls the -finstrument-functions hooks
    check_fib_run(a.bindir, os.path.join(a.bindir, "instest_fib_cyg"), [], expect_method="compiler")


def listing(a, prog, *args):
    rc, out, err = run([os.path.join(a.bindir, "omniprof"), "instrument", "--list"] + list(args) + ["--", prog])
    check(rc == 0, "--list exit 0 (%d: %s)" % (rc, err.strip()))
    rows = {}
    for line in out.splitlines():
        if line.startswith("#"):
            continue
        parts = line.split(None, 2)
        if len(parts) >= 2:
            rows.setdefault(parts[1], []).append(line)
    return out, rows


def mode_list(a):
    fib = os.path.join(a.bindir, "instest_fib")
    out, rows = listing(a, fib)
    check("fib" in rows and "too small" in rows["fib"][0], "fib is too small by default")
    check("twice" in rows and "inlined" in rows["twice"][0], "twice() is listed as inlined")
    check("scramble" in rows and "straight-line" in rows["scramble"][0] and "too short" in rows["scramble"][0],
          "scramble (no loop, no call, > 64 instructions) is too short by default")
    check("main" in rows and "straight-line" not in rows["main"][0], "main (it calls) is not straight-line")
    check("_start" in rows and "unsafe" in rows["_start"][0], "_start is unsafe")
    check(any("libc.so" in l and "shared library" in l for l in out.splitlines()), "libc is an excluded module")
    check("(every function)" in out, "excluded modules listed with their reason")
    out, rows = listing(a, fib, "-i", "^fib$")
    check("fib" in rows and rows["fib"][0].startswith("instrumented"), "-i forces fib despite its size")
    check("main" in rows and "not matched by the include regex" in rows["main"][0], "main: not matched by -i")
    out, rows = listing(a, fib, "-i", "fib", "-e", "^fib$")
    check("fib" in rows and "excluded by regex" in rows["fib"][0], "-e wins over -i")
    out, rows = listing(a, fib, "--min-instructions", "0")
    check("fib" in rows and rows["fib"][0].startswith("instrumented"), "--min-instructions 0 takes fib")
    check("scramble" in rows and rows["scramble"][0].startswith("instrumented"), "--min-instructions 0 takes scramble")
    out, rows = listing(a, fib, "-i", "^scramble$")
    check("scramble" in rows and rows["scramble"][0].startswith("instrumented"), "-i takes a straight-line function")
    check("# " in out and "instrumented," in out, "totals line")
    lib = os.path.join(a.bindir, "instest_fib_lib")
    out, rows = listing(a, lib, "--method", "audit", "--min-instructions", "0")
    check("fib" in rows and rows["fib"][0].startswith("instrumented"), "audit: fib (imported by main) instrumented")
    check("fib_rec" in rows and rows["fib_rec"][0].startswith("instrumented"), "audit: fib_rec (imported within the library)")
    check("main" in rows and "PLT" in rows["main"][0], "audit: main is not reachable through a PLT")
    check(any("printf" in k and "PLT" not in rows[k][0] for k in rows) or "printf" in out, "audit: libc functions listed")


def mode_not_permitted(a):
    if os.geteuid() != 0:
        skip("needs root to run a command as another user")
    user = "nobody"
    try:
        pwd.getpwnam(user)
    except KeyError:
        skip("no user 'nobody'")
    if shutil.which("setpriv") is None:
        skip("setpriv not installed")
    # the build tree must be reachable by that user
    rc, _, _ = run(as_user(user) + [os.path.join(a.bindir, "instest_fib"), "1"])
    if rc != 3:
        skip("the build tree is not readable by user nobody")
    work = tempfile.mkdtemp(prefix="ins-np-")
    os.chmod(work, 0o777)
    err = check_fib_run(a.bindir, os.path.join(a.bindir, "instest_fib_lib"), [], expect_method="audit", user=user,
                        workdir=work)
    check("refuses uprobes" in err, "auto says why uprobes were not used")
    # --method uprobe without permission: one clear line, the program unharmed
    ref_rc, ref_out, _ = reference(os.path.join(a.bindir, "instest_fib"))
    out_dir = tempfile.mkdtemp(prefix="ins-", dir=work)
    os.chmod(out_dir, 0o777)
    rc, out, err = run(as_user(user) + [os.path.join(a.bindir, "omniprof"), "instrument", "--method", "uprobe", "-i", "^fib$",
                        "-d", out_dir, "--", os.path.join(a.bindir, "instest_fib"), "20"])
    print(err.strip())
    check(rc == ref_rc and out == ref_out, "--method uprobe not permitted: program output and status unchanged")
    check("uprobes not permitted" in err, "--method uprobe not permitted: says so")
    shutil.rmtree(work, ignore_errors=True)


def mode_libc_alias(a):
    """(issue 35 item 6) -i matches any name of a function: printf is an alias of _IO_printf in
    glibc (the same address); -m libc -i '^printf$' must instrument it and record its calls
    under the name asked for."""
    fib = os.path.join(a.bindir, "instest_fib")
    out, rows = listing(a, fib, "-m", "libc", "-i", "^printf$")
    check("printf" in rows and rows["printf"][0].startswith("instrumented"),
          "-m libc -i '^printf$': printf is instrumented (%s)" % (rows.get("printf"),))
    out, rows = listing(a, fib, "-m", "libc", "-i", "^_IO_printf$")
    check(any(rows[k][0].startswith("instrumented") for k in rows if "printf" in k),
          "-i '^_IO_printf$' (the other name) still instruments it")
    if not uprobes_permitted():
        skip("the recorded calls need uprobes (root and /sys/bus/event_source/devices/uprobe)")
    out_dir = tempfile.mkdtemp(prefix="ins-alias-")
    ref_rc, ref_out, _ = reference(fib)
    rc, out, err = run([os.path.join(a.bindir, "omniprof"), "instrument", "--method", "uprobe", "-m", "libc", "-i",
                        "^printf$", "-d", out_dir, "--", fib, "20"])
    print(err.strip()[-600:])
    check(rc == ref_rc and out == ref_out, "the program runs unchanged (%d)" % rc)
    dbs = databases(out_dir)
    n = 0
    for db in dbs:
        con = sqlite3.connect(db)
        n += con.execute("SELECT COUNT(*) FROM regions WHERE category = 'FUNCTION_CALL' AND name = 'printf'").fetchone()[0]
        con.close()
    check(n == 3, "the 3 calls of printf are recorded under its name (%d)" % n)
    shutil.rmtree(out_dir, ignore_errors=True)


def child_cpu(cmd):
    """Run cmd; its CPU seconds (user + system of it and its children) and its result."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    rc, out, err = run(cmd)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), rc, out, err


def mode_audit_cost(a):
    """(issue 35 item 5) --method audit's cost per recorded call, in CPU time (what a busy
    machine changes least): fib(N) in a library, every call through the PLT; the marginal cost
    between fib(20) (21,891 calls) and fib(24) (150,049), so that start-up and the database's
    creation cancel out. The profiler's own calls (its database writer in libsqlite3) are not
    audited: before, they went through glibc's profiling trampoline too (~20 us per recorded
    call on the 2-core VM)."""
    prog = os.path.join(a.bindir, "instest_fib_lib")
    cost = {}
    for n, calls in ((20, 21891), (24, 150049)):
        _, _, ref_out, _ = child_cpu([prog, str(n)])
        out_dir = tempfile.mkdtemp(prefix="ins-cost-")
        cpu, rc, out, err = child_cpu([os.path.join(a.bindir, "omniprof"), "instrument", "--method", "audit", "-i",
                                       "^fib$", "-d", out_dir, "--", prog, str(n)])
        print(err.strip()[-600:])
        check(rc == 3 and out == ref_out, "fib(%d): the program runs unchanged (%d)" % (n, rc))
        recorded = 0
        for db in databases(out_dir):
            con = sqlite3.connect(db)
            recorded += con.execute("SELECT COUNT(*) FROM regions WHERE category = 'FUNCTION_CALL' AND "
                                    "name = 'fib'").fetchone()[0]
            con.close()
        check(recorded == calls, "fib(%d): every call recorded (%d of %d)" % (n, recorded, calls))
        cost[n] = cpu
        shutil.rmtree(out_dir, ignore_errors=True)
    per_call_us = (cost[24] - cost[20]) / (150049 - 21891) * 1e6
    print("audit: %.2f us of CPU per recorded call (fib(24) %.2f s, fib(20) %.2f s of CPU)" %
          (per_call_us, cost[24], cost[20]))
    check(per_call_us < 10.0, "--method audit costs under 10 us of CPU per recorded call (%.2f us)" % per_call_us)

def elf_plt_slots(path):
    """{symbol: (GOT slot's address relative to the load base, its value in the file)} of an
    ELF shared object's JUMP_SLOT relocations (x86-64 and aarch64), read with struct."""
    import struct
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        return {}
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = secs[shstrndx]

    def sec_name(sec):
        at = names[4] + sec[0]
        return data[at:data.index(b"\0", at)].decode()

    jump_slot = {62: 7, 183: 1026}.get(struct.unpack_from("<H", data, 0x12)[0])
    slots = {}
    for sec in secs:
        if sec[1] != 4 or sec_name(sec) != ".rela.plt":
            continue
        symtab = secs[sec[6]]
        strtab = secs[symtab[6]]
        for k in range(sec[5] // 24):
            r_offset, r_info, _ = struct.unpack_from("<QQq", data, sec[4] + 24 * k)
            if r_info & 0xffffffff != jump_slot:
                continue
            st_name, = struct.unpack_from("<I", data, symtab[4] + 24 * (r_info >> 32))
            at = strtab[4] + st_name
            name = data[at:data.index(b"\0", at)].decode()
            home = [x for x in secs if x[3] <= r_offset < x[3] + x[5] and x[1] == 1]  # PROGBITS
            if home:
                value, = struct.unpack_from("<Q", data, home[0][4] + r_offset - home[0][3])
                slots[name] = (r_offset, value)
    return slots


def unbound_slots(pid, object_filter):
    """{object base name: ({symbol bound}, {symbol still at its PLT stub})} for the objects
    mapped in process pid whose path passes object_filter: a lazily bound slot that the loader
    (or omniprof) has not written still holds the load base plus the file's value."""
    bases = {}
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 6 and parts[2] == "00000000" and object_filter(parts[5]):
                bases.setdefault(parts[5], int(parts[0].split("-")[0], 16))
    result = {}
    with open("/proc/%d/mem" % pid, "rb") as mem:
        for path, base in bases.items():
            bound, unbound = set(), set()
            for name, (offset, value) in elf_plt_slots(path).items():
                mem.seek(base + offset)
                now = int.from_bytes(mem.read(8), "little")
                (unbound if now == base + value else bound).add(name)
            result[os.path.basename(path)] = (bound, unbound)
    return result


def mode_audit_own(a):
    """(issue 35 item 5) The profiler's own calls are not audited: with an auditor that has
    la_pltenter, glibc sends every lazily bound PLT call through its profiling trampoline and
    never writes the GOT slot, also in objects linked with -z now (it ignores BIND_NOW while
    profiling): omniprof's libraries and libsqlite3 (the database writer's, ~20 % of the
    writer's CPU) must have their slots bound. Read in the running program (audit_wait.c) once
    all of fib(20)'s calls are in its database."""
    prog = os.path.join(a.bindir, "instest_audit_wait")
    out_dir = tempfile.mkdtemp(prefix="ins-own-")
    cmd = [os.path.join(a.bindir, "omniprof"), "instrument", "--method", "audit", "-i", "^fib$",
           "-d", out_dir, "--", prog, "20"]
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        line = p.stdout.readline()
        check(line == "fib(20) = 6765\n", "the program's output (%r)" % line)
        # the writer has written the calls: every one of them is in the database
        deadline, recorded, dbs = time.monotonic() + 120, 0, []
        while time.monotonic() < deadline and recorded < FIB20_CALLS:
            dbs = databases(out_dir)
            recorded = 0
            for db in dbs:
                try:
                    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
                    recorded = con.execute("SELECT COUNT(*) FROM regions WHERE category = "
                                           "'FUNCTION_CALL' AND name = 'fib'").fetchone()[0]
                    con.close()
                except sqlite3.Error:
                    recorded = 0
            if recorded < FIB20_CALLS:
                time.sleep(0.05)
        check(recorded == FIB20_CALLS,
              "the writer wrote fib(20)'s calls while the program runs (%d)" % recorded)
        pid = int(os.path.basename(dbs[0]).split("_")[0]) if dbs else 0
        # omniprof's objects in the program's namespace (the audit library has its own)
        own = unbound_slots(pid, lambda path: (os.path.basename(path).startswith(("libomniprof",
                                                                                 "libsqlite3"))
                                               and "libomniprof-audit" not in path))
        prog_slots = unbound_slots(pid, lambda path: "instest_fiblib" in os.path.basename(path))
        main_slots = unbound_slots(pid, lambda path: os.path.basename(path) == "instest_audit_wait")
    finally:
        p.stdin.close()  # the program ends
        err = p.stderr.read()
        p.wait(timeout=120)
    print(err.strip()[-600:])
    check(p.returncode == 0, "the program ends with its own status (%d)" % p.returncode)
    for name, (bound, unbound) in sorted(own.items()):
        print("%s: %d PLT slots bound, %d at the stub" % (name, len(bound), len(unbound)))
    # the traced calls stay audited (the check sees an audited slot as one), the others of the
    # program's objects are bound directly
    fiblib = list(prog_slots.values())
    check(fiblib and "fib" in fiblib[0][1],
          "the traced library's slot of fib stays on the auditor's path")
    check(fiblib and "fib_rec" in fiblib[0][0],
          "its slot of fib_rec (not instrumented) is bound directly")
    # the program is linked -z now (Ubuntu's default): glibc binds it lazily all the same while
    # it profiles, and its GOT is read-only (RELRO); getchar (getc), first called while collecting,
    # is bound directly there, fib stays audited
    main = list(main_slots.values())
    check(main and "fib" in main[0][1], "the program's slot of fib stays on the auditor's path (%s)"
          % (sorted(main[0][1]) if main else "not mapped"))
    check(main and "getc" in main[0][0],
          "the program's slot of getc (getchar; -z now, RELRO) is bound directly")
    sqlite = [v for k, v in own.items() if k.startswith("libsqlite3")]
    check(sqlite, "libsqlite3 is mapped (%s)" % sorted(own))
    # what the writer calls for every row: sqlite3_step from omniprof's library, memcpy in sqlite
    step = [k for k, (bound, unbound) in own.items() if "sqlite3_step" in bound | unbound]
    check(step and all("sqlite3_step" in own[k][0] for k in step),
          "omniprof's sqlite3_step slot is bound directly (%s)" % step)
    for name in ("memcpy", "memset", "malloc"):
        check(sqlite and name in sqlite[0][0] | sqlite[0][1] and name in sqlite[0][0],
              "libsqlite3's %s slot is bound directly (not on the loader's trampoline)" % name)
    shutil.rmtree(out_dir, ignore_errors=True)


def mode_audit_tls(a):
    """(issue 35 item 5) The bridge's thread-local state is static TLS: in a dlopened library
    dynamic TLS is allocated at a thread's first access with malloc, which in a non-PIE
    program that takes malloc's address goes through that program's PLT entry, so through
    the auditor, which touched the TLS again: a recursion until the stack overflowed."""
    prog = os.path.join(a.bindir, "instest_nopie_malloc")
    ref_rc, ref_out, _ = run([prog, "15"])
    out_dir = tempfile.mkdtemp(prefix="ins-tls-")
    rc, out, err = run([os.path.join(a.bindir, "omniprof"), "instrument", "--method", "audit", "-i",
                        "^fib$", "-d", out_dir, "--", prog, "15"])
    print(err.strip()[-600:])
    check(rc == ref_rc == 3 and out == ref_out == "fib(15) = 610\n",
          "the program runs unchanged (%d, %r)" % (rc, out))
    recorded = 0
    for db in databases(out_dir):
        con = sqlite3.connect(db)
        recorded += con.execute("SELECT COUNT(*) FROM regions WHERE category = 'FUNCTION_CALL' "
                                "AND name = 'fib'").fetchone()[0]
        con.close()
    check(recorded == 1973, "fib(15)'s 1,973 calls recorded (%d)" % recorded)
    shutil.rmtree(out_dir, ignore_errors=True)
    # Debian's python3 (non-PIE, takes malloc's address) under --method audit: unchanged, and
    # nothing of the profiler on its stderr (the vDSO, linux-vdso.so.1, has no file to read: it
    # was reported as "cannot open" there)
    py = "/usr/bin/python3"
    if os.path.exists(py):
        code = "import time; print(time.time() > 0)"
        out_dir = tempfile.mkdtemp(prefix="ins-tls-py-")
        rc, out, err = run([os.path.join(a.bindir, "omniprof"), "instrument", "--method", "audit",
                            "-d", out_dir, "--", py, "-c", code])
        ours = [l for l in err.splitlines() if l.startswith("omniprof: instrument")]
        check(rc == 0 and out == "True\n" and not ours,
              "python3 under --method audit runs unchanged, no profiler line on its stderr "
              "(%d, %r, %s)" % (rc, out, ours[:2]))
        shutil.rmtree(out_dir, ignore_errors=True)


def mode_throttle_cost(a):
    """(issue 35 item 4) A throttled function stops costing: the run with hot_step throttled
    (--min-instructions 0 probes it; the automatic throttle takes it after 100 calls) against
    the run with it excluded (-e), in CPU time of the launcher and the program (what a busy
    machine changes least; wall time would measure the machine's load). Before the fix the
    throttled function's breakpoint stayed: every later call trapped into the kernel."""
    if not uprobes_permitted():
        skip("uprobes need root (CAP_PERFMON) and the kernel's uprobe PMU")
    prog, millions = os.path.join(a.bindir, "instest_hot_calls"), "8"
    ref_rc, ref_out, _ = run([prog, millions])
    omni = [os.path.join(a.bindir, "omniprof"), "instrument", "--method", "uprobe",
            "--min-instructions", "0"]
    env = dict(os.environ, OMNIPROF_LOG_LEVEL="info")
    cpu = {}
    for name, extra in (("excluded", ["-e", "^hot_step$"]), ("throttled", [])):
        out_dir = tempfile.mkdtemp(prefix="ins-throttle-")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        p = subprocess.run(omni + extra + ["-d", out_dir, "--", prog, millions],
                           capture_output=True, text=True, timeout=600, env=env)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu[name] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        check(p.returncode == ref_rc == 0 and p.stdout == ref_out,
              "%s: the program runs unchanged (%d, %r)" % (name, p.returncode, p.stdout))
        if name == "throttled":
            check("hot_step throttled after 100 calls" in p.stderr,
                  "hot_step is throttled (%s)" % p.stderr.strip()[-400:])
        else:
            check("hot_step" not in p.stderr, "hot_step is not probed when excluded")
        shutil.rmtree(out_dir, ignore_errors=True)
    extra_us = (cpu["throttled"] - cpu["excluded"]) / 8e6 * 1e6
    print("throttled %.2f s of CPU, excluded %.2f s: %.3f us more per call of hot_step" %
          (cpu["throttled"], cpu["excluded"], extra_us))
    check(cpu["throttled"] <= 1.5 * cpu["excluded"] + 1.0,
          "a throttled function costs about what excluding it costs (%.2f s vs %.2f s of CPU)" %
          (cpu["throttled"], cpu["excluded"]))


def mode_bad_input(a):
    omni = os.path.join(a.bindir, "omniprof")
    fib = os.path.join(a.bindir, "instest_fib")
    cases = [
        (["-i", "fib("], "include (-i) regex"),
        (["-e", "[x"], "exclude (-e) regex"),
        (["--method", "dyninst"], "--method 'dyninst'"),
        (["--throttle", "often"], "--throttle 'often'"),
        (["--min-instructions", "-3"], "--min-instructions '-3'"),
    ]
    for args, needle in cases:
        rc, out, err = run([omni, "instrument"] + args + ["--", fib, "5"])
        check(rc == 2 and needle in err, "%s -> exit 2 naming it (%d: %s)" % (" ".join(args), rc, err.strip()))
        check("fib(" not in out, "%s -> the program was not run" % " ".join(args))
    rc, _, err = run([omni, "instrument", "--", "/no/such/program"])
    check(rc == 2 and "/no/such/program" in err, "missing program -> exit 2 naming it")
    rc, _, err = run([omni, "instrument", "-i", "fib"])
    check(rc == 2 and "no program" in err, "no program -> exit 2")
    issue31_inputs(a)


def issue31_inputs(a):
    """Issue 31: what cannot work is said before the program runs (exit 2, the program not run)."""
    omni = os.path.join(a.bindir, "omniprof")
    fib = os.path.join(a.bindir, "instest_fib")
    work = tempfile.mkdtemp(prefix="ins-31-")
    marker = os.path.join(work, "ran")
    script = os.path.join(work, "script.sh")
    with open(script, "w") as f:
        f.write("#!/bin/sh\ntouch %s\n" % marker)
    os.chmod(script, 0o755)
    # a negative throttle was accepted (it wrapped to a huge count)
    rc, out, err = run([omni, "instrument", "--throttle", "-1:5", "--", fib, "5"])
    check(rc == 2 and "--throttle '-1:5'" in err and "non-negative" in err and "CALLS:NS" in err,
          "--throttle -1:5 -> exit 2 naming the valid form (%d: %s)" % (rc, err.strip()))
    check("fib(" not in out, "--throttle -1:5 -> the program was not run")
    rc, out, err = run([omni, "instrument", "--throttle", "5:-1", "--", fib, "5"])
    check(rc == 2 and "--throttle '5:-1'" in err, "--throttle 5:-1 -> exit 2 (%d)" % rc)
    # --list of a file that is not ELF exited 0 with an empty list
    rc, out, err = run([omni, "instrument", "--list", "--", script])
    check(rc == 2 and "'%s' is not an ELF file" % script in err, "--list on a script -> exit 2 naming it (%d: %s)" %
          (rc, err.strip()))
    # the audit method cannot see a function of the program itself: it recorded nothing, silently
    rc, out, err = run([omni, "instrument", "--method", "audit", "-i", "^fib$", "-d", work, "--", fib, "20"])
    check(rc == 2 and "--method audit cannot record anything in %s" % fib in err and "fib" in err and
          "--method uprobe" in err and "--method compiler" in err,
          "--method audit on the program's own fib -> exit 2 naming the method, the function and what works (%d: %s)" %
          (rc, err.strip()))
    check("fib(" not in out and databases(work) == [], "--method audit, nothing visible -> the program was not run")
    # functions named by -i that audit cannot see, beside ones it can: a warning naming them
    lib = os.path.join(a.bindir, "instest_fib_lib")
    ref_rc, ref_out, _ = reference(lib)
    rc, out, err = run([omni, "instrument", "--method", "audit", "-i", "^(fib|scramble)$", "-d", work, "--", lib, "20"])
    check(rc == ref_rc and out == ref_out, "--method audit, some visible -> the program runs unchanged (%d)" % rc)
    check("warning: --method audit cannot see scramble" in err and "--method uprobe" in err,
          "--method audit names the function it cannot see (%s)" % err.strip())
    # the compiler method on a program without the hooks recorded nothing, silently
    rc, out, err = run([omni, "instrument", "--method", "compiler", "-d", work, "--", fib, "20"])
    check(rc == 2 and "--method compiler cannot record anything in %s" % fib in err and
          "-finstrument-functions" in err and "-lomniprof-user" in err,
          "--method compiler without the hooks -> exit 2 naming the binary and the build (%d: %s)" % (rc, err.strip()))
    check("fib(" not in out, "--method compiler without the hooks -> the program was not run")
    # -o DIR/NAME whose DIR is a file: the shared output check of run
    afile = os.path.join(work, "afile")
    with open(afile, "w") as f:
        f.write("kept\n")
    rc, out, err = run([omni, "instrument", "-i", "^fib$", "-d", work, "-o", "afile/name", "--", fib, "5"])
    check(rc == 2 and "'%s' is not a directory" % afile in err, "instrument -o afile/name -> exit 2 (%d: %s)" %
          (rc, err.strip()))
    check("fib(" not in out and open(afile).read() == "kept\n", "instrument -o afile/name -> nothing run or changed")
    check(not os.path.exists(marker), "the script was never run")
    shutil.rmtree(work, ignore_errors=True)


# ---------------------------------------------------------------------------------------
# omniprof attach

# An upper bound only (end_target stops the program once a test is done with it): 30 s, so that
# a slow attach on a loaded machine does not outlive the program (seen with 10 s beside other
# tests: 'process ended while attached')
TARGET_SECONDS = 30


def start_target(a, secs, threads, kids=0, extra=None, user=None):
    cmd = [os.path.join(a.bindir, "instest_attach_target"), str(secs), str(threads), str(kids)] + ([extra] if extra else [])
    if user:
        cmd = as_user(user) + cmd
    # its own process group: end_target() reaches its threads and children at once
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    first = p.stdout.readline()
    pid = int(first.split()[1])
    return p, pid, first


def end_target(p):
    """The checks that needed the program running are done: it stops spinning now (SIGUSR2 to
    its process group, attach_target.c), so that its SECONDS is only an upper bound, not a wait;
    it still ends as it would have, with its own output and status."""
    try:
        os.killpg(p.pid, signal.SIGUSR2)
    except ProcessLookupError:
        pass
    return p.communicate(timeout=240)


def finish_target(p, first, threads, kids):
    out, err = end_target(p)
    out = first + out
    check(p.returncode == 7, "the program ends with its own status (%d)" % p.returncode)
    check("done %d threads %d children 0 bad" % (threads, kids) in out, "the program's output is complete (%r)" % out.strip())
    return out


def attach(a, pid, args, out_dir, user=None):
    cmd = [os.path.join(a.bindir, "omniprof"), "attach", "-p", str(pid), "-d", out_dir] + args
    if user:
        cmd = as_user(user) + cmd
    rc, out, err = run(cmd)
    print(err.strip())
    return rc, out, err


def sample_tids(db):
    con = sqlite3.connect(db)
    rows = dict(con.execute("SELECT tid, COUNT(*) FROM samples GROUP BY tid").fetchall())
    con.close()
    return rows


def tids_of(pid, want):
    """The program's threads, once all `want` of them exist (it creates them after printing)."""
    deadline = time.time() + 10
    while True:
        tids = sorted(int(t) for t in os.listdir("/proc/%d/task" % pid))
        if len(tids) >= want or time.time() > deadline:
            return tids
        time.sleep(0.02)


def mode_attach_threads(a):
    out_dir = tempfile.mkdtemp(prefix="att-")
    p, pid, first = start_target(a, TARGET_SECONDS, 4)
    tids = tids_of(pid, 4)
    rc, out, err = attach(a, pid, ["--duration", "2", "--sample"], out_dir)
    check(rc == 0, "attach exits 0 (%d)" % rc)
    dbs = databases(out_dir)
    check(len(dbs) == 1 and dbs[0] in out, "one database, named on stdout (%s)" % dbs)
    finish_target(p, first, 4, 0)
    if dbs:
        per = sample_tids(dbs[0])
        check(len(tids) == 4, "the program has 4 threads (%s)" % tids)
        check(all(per.get(t, 0) > 0 for t in tids), "samples from every thread: %s (threads %s)" % (per, tids))
        con = sqlite3.connect(dbs[0])
        span = con.execute("SELECT (MAX(timestamp) - MIN(timestamp)) / 1e9 FROM samples").fetchone()[0]
        con.close()
        check(span is not None and span < 6, "samples only while attached (%.2f s for a 2 s attach)" % (span or -1))
    shutil.rmtree(out_dir, ignore_errors=True)


def mode_attach_sleeper(a):
    out_dir = tempfile.mkdtemp(prefix="att-")
    p, pid, first = start_target(a, TARGET_SECONDS, 2, extra="sleeper")
    tids_of(pid, 2)
    rc, out, err = attach(a, pid, ["--duration", "1", "--process-sampling", "0.05"], out_dir)
    check(rc == 0, "attach to a sleeping program exits 0 (%d: %s)" % (rc, err.strip()[-300:]))
    dbs = databases(out_dir)
    check(len(dbs) == 1 and dbs[0] in out, "one database, named on stdout (%s)" % dbs)
    out = finish_target(p, first, 2, 0)
    check("eintr 0" in out, "no sleep of the program ended early with EINTR (%s)" % [l for l in out.splitlines() if "eintr" in l])
    if dbs:
        con = sqlite3.connect(dbs[0])
        n = con.execute("SELECT COUNT(*) FROM omniprof_metrics WHERE name = 'rss_bytes'").fetchone()[0]
        con.close()
        check(n >= 5, "process samples from inside the attached process (%d rss_bytes rows)" % n)
    shutil.rmtree(out_dir, ignore_errors=True)


def mode_attach_again(a):
    out_dir = tempfile.mkdtemp(prefix="att-")
    p, pid, first = start_target(a, TARGET_SECONDS + 4, 3)
    for i in range(2):
        rc, out, err = attach(a, pid, ["--duration", "1", "--sample"], out_dir)
        check(rc == 0, "attach %d exits 0 (%d)" % (i + 1, rc))
    dbs = databases(out_dir)
    check(len(dbs) == 2, "two databases (%s)" % dbs)
    finish_target(p, first, 3, 0)
    for db in dbs:
        per = sample_tids(db)
        check(len(per) == 3, "%s: samples from the 3 threads (%s)" % (os.path.basename(db), per))
    shutil.rmtree(out_dir, ignore_errors=True)


def mode_attach_children(a):
    out_dir = tempfile.mkdtemp(prefix="att-")
    p, pid, first = start_target(a, TARGET_SECONDS + 6, 2, kids=2)
    rc, out, err = attach(a, pid, ["--duration", "2", "--sample"], out_dir)
    check(rc == 0, "attach exits 0 (%d)" % rc)
    dbs = databases(out_dir)
    check(len(dbs) == 3, "one database per process: parent and 2 children (%s)" % dbs)
    finish_target(p, first, 2, 2)
    for db in dbs:
        check(len(sample_tids(db)) >= 1, "%s has samples" % os.path.basename(db))
    shutil.rmtree(out_dir, ignore_errors=True)


def mode_attach_refused(a):
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        skip("needs root and setpriv to run the target or omniprof as another user")
    user = "nobody"
    try:
        pwd.getpwnam(user)
    except KeyError:
        skip("no user 'nobody'")
    work = tempfile.mkdtemp(prefix="att-np-")
    os.chmod(work, 0o777)
    # (a) another user's process
    p, pid, first = start_target(a, 4, 2)
    rc, out, err = attach(a, pid, ["--duration", "1", "--sample"], work, user=user)
    check(rc == 1, "another user's process: exit 1 (%d)" % rc)
    check("not permitted" in err and "another user" in err, "another user's process: says why")
    check(not databases(work), "no database")
    finish_target(p, first, 2, 0)
    # (b) a process of the same user that is not dumpable (PR_SET_DUMPABLE 0)
    p, pid, first = start_target(a, 4, 2, extra="undumpable", user=user)
    rc, out, err = attach(a, pid, ["--duration", "1", "--sample"], work, user=user)
    check(rc == 1, "non-dumpable process: exit 1 (%d)" % rc)
    check("not permitted" in err and "dumpable" in err, "non-dumpable process: says why")
    finish_target(p, first, 2, 0)
    shutil.rmtree(work, ignore_errors=True)


def mode_attach_other_user(a):
    """(issue 35 item 8) root attaching to another user's process: the database is written by
    the process, as its user. An output directory that user cannot write is named before
    attaching, with what to do (exit 1, nothing attached); one it can write works. Without
    CAP_SYS_PTRACE, the message names the capability, not a file."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        skip("needs root and setpriv to run the target as another user")
    try:
        pw = pwd.getpwnam("nobody")
    except KeyError:
        skip("no user 'nobody'")
    closed = tempfile.mkdtemp(prefix="att-root-")  # 0700, root's
    p, pid, first = start_target(a, 6, 2, user="nobody")
    rc, out, err = attach(a, pid, ["--duration", "1", "--sample"], closed)
    check(rc == 1, "root, output directory the process's user cannot write: exit 1 (%d)" % rc)
    check("uid %d" % pw.pw_uid in err and "cannot create its database in %s" % closed in err and
          "install -d -o" in err, "the message names the cause and what to do (%r)" % err.strip())
    check("not collecting" not in err, "not the tool's generic failure")
    check(not databases(closed), "nothing written")
    shared = tempfile.mkdtemp(prefix="att-root-ok-")
    os.chmod(shared, 0o777)
    rc, out, err = attach(a, pid, ["--duration", "1", "--sample"], shared)
    check(rc == 0, "root, output directory the process's user can write: exit 0 (%d)" % rc)
    check(len(databases(shared)) == 1, "its database written (%s)" % databases(shared))
    # without CAP_SYS_PTRACE (a container's root)
    drop = ["setpriv", "--inh-caps=-sys_ptrace", "--bounding-set=-sys_ptrace"]
    rc, out, err = run(drop + [os.path.join(a.bindir, "omniprof"), "attach", "-p", str(pid), "-d", shared,
                               "--duration", "1", "--sample"])
    print(err.strip())
    check(rc == 1 and "CAP_SYS_PTRACE" in err and "not permitted" in err,
          "without CAP_SYS_PTRACE: exit 1 naming the capability (%d: %r)" % (rc, err.strip()))
    check("cannot open" not in err and "cannot read" not in err, "not reported as a file error")
    finish_target(p, first, 2, 0)
    shutil.rmtree(closed, ignore_errors=True)
    shutil.rmtree(shared, ignore_errors=True)


def mode_attach_killed(a):
    out_dir = tempfile.mkdtemp(prefix="att-")
    p, pid, first = start_target(a, TARGET_SECONDS, 3)
    cmd = [os.path.join(a.bindir, "omniprof"), "attach", "-p", str(pid), "-d", out_dir, "--sample"]
    tmp = os.path.join(out_dir, "tmp")
    os.mkdir(tmp)
    env = dict(os.environ, TMPDIR=tmp)
    att = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    line = att.stderr.readline()
    check("collecting in process %d" % pid in line, "attached (%s)" % line.strip())
    time.sleep(0.5)
    att.kill()
    att.wait()
    left = os.listdir(tmp)
    check(len(left) == 1 and left[0].startswith("omniprof-attach-") and "-%d-" % att.pid in left[0],
          "the killed attach leaves its folder in $TMPDIR, named with its pid (%s)" % left)
    time.sleep(0.5)
    with open("/proc/%d/stat" % pid) as f:
        state = f.read().rsplit(")", 1)[1].split()[0]
    check(state not in ("T", "t"), "the program is not left stopped (state %s)" % state)
    finish_target(p, first, 3, 0)
    dbs = databases(out_dir)
    check(len(dbs) == 1, "its database exists (%s)" % dbs)
    if dbs:
        check(len(sample_tids(dbs[0])) == 3, "and is whole: samples of the 3 threads")
    # the next omniprof command that makes a private file removes the dead command's folder
    rc, out, err = run([os.path.join(a.bindir, "omniprof"), "run", "--marker-trace", "--stats", "-d",
                        os.path.join(out_dir, "next"), "--", "true"], env=env)
    check(rc == 0 and len(os.listdir(tmp)) == 0,
          "the next omniprof run removed it (exit %d; left %s)" % (rc, os.listdir(tmp)))
    shutil.rmtree(out_dir, ignore_errors=True)


def profiler_leftovers(pid):
    """What of the profiler a process holds: its threads (named omniprof*), descriptors above
    the program's 0-2 (the target opens none of its own) and POSIX timers."""
    threads, fds, timers = [], [], []
    try:
        for t in os.listdir("/proc/%d/task" % pid):
            try:
                with open("/proc/%d/task/%s/comm" % (pid, t)) as f:
                    name = f.read().strip()
            except OSError:
                continue
            if name.startswith("omniprof"):
                threads.append(name)
        for fd in os.listdir("/proc/%d/fd" % pid):
            if int(fd) > 2:
                try:
                    fds.append("%s -> %s" % (fd, os.readlink("/proc/%d/fd/%s" % (pid, fd))))
                except OSError:
                    pass
        if os.path.exists("/proc/%d/timers" % pid):
            with open("/proc/%d/timers" % pid) as f:
                timers = [l.strip() for l in f if l.startswith("ID:")]
    except FileNotFoundError:
        return None
    return threads, fds, timers


def settled_leftovers(pid, seconds=5, settled=lambda left: not any(left)):
    """profiler_leftovers once they are gone (`settled`), or as they are after `seconds`
    (threads end on their own once asked: wait on that event, bounded)."""
    deadline = time.time() + seconds
    while True:
        left = profiler_leftovers(pid)
        if left is None or settled(left) or time.time() > deadline:
            return left
        time.sleep(0.05)


def mode_attach_fork(a):
    for flag in ([], ["--no-attach-children"]):
        what = " ".join(flag) or "--attach-children"
        out_dir = tempfile.mkdtemp(prefix="att-fork-")
        # 40 s: the attach, its 3 s and the detach end long before, on a loaded machine too (with
        # 20 s the program and its child could end before the checks below saw them)
        p, pid, first = start_target(a, 40, 2, extra="forker")
        cmd = [os.path.join(a.bindir, "omniprof"), "attach", "-p", str(pid), "-d", out_dir, "--sample",
               "--duration", "3"] + flag
        att = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = att.stderr.readline()
        check("collecting in process %d" % pid in line, "%s: attached (%s)" % (what, line.strip()))
        os.kill(pid, signal.SIGUSR1)  # the program forks now, while attached
        cline = p.stdout.readline()
        first += cline
        child = int(cline.split()[1]) if cline.startswith("child ") else -1
        check(child > 0, "%s: the program forked a child while attached (%r)" % (what, cline))
        aout, aerr = att.communicate(timeout=120)
        print(aerr.strip())
        check(att.returncode == 0, "%s: attach exits 0 (%d)" % (what, att.returncode))
        for name, q in (("the program", pid), ("its child", child)):
            # the profiler's threads and timers end on their own once told to: wait for that
            # event, up to 30 s (a loaded machine may not run them for seconds); it returns as
            # soon as they are gone (libunwind's pipes, which stay, are not waited for)
            left = settled_leftovers(q, seconds=30,
                                     settled=lambda left: not left[0] and not left[2])
            if left is None:
                check(False, "%s: %s still runs after the detach" % (what, name))
                continue
            threads, fds, timers = left
            check(not threads, "%s: no profiler thread left in %s after the detach (%s)" % (what, name, threads))
            # libunwind (two copies: libunwind.so.8 and libunwind-x86_64.so.8) opens a pipe of its
            # own once per process to validate memory while unwinding, and keeps it: it belongs
            # to the library, which stays mapped (docs/instrument.md, "Attach"); the target has
            # no pipe of its own
            pipes = [f for f in fds if "-> pipe:" in f]
            check(not [f for f in fds if f not in pipes] and len(pipes) <= 4,
                  "%s: no profiler descriptor left open in %s but libunwind's pipes (%s)" % (what, name, fds))
            check(not timers, "%s: no timer of the profiler left in %s (%s)" % (what, name, timers))
        if flag == []:
            check("process %d:" % child in aout, "%s: the child's database is named (%r)" % (what, aout.strip()))
        else:
            check("process %d:" % child not in aout, "%s: no database for the child (%r)" % (what, aout.strip()))
        out, err = end_target(p)
        out = first + out
        check(p.returncode == 7, "%s: the program ends with its own status (%d)" % (what, p.returncode))
        check("done 2 threads 1 children 0 bad" in out, "%s: the program's output is complete (%r)" % (what, out))
        check("omniprof" not in err, "%s: nothing of the profiler in the program's stderr (%r)" % (what, err[-400:]))
        shutil.rmtree(out_dir, ignore_errors=True)


def mode_attach_run_options(a):
    out_dir = tempfile.mkdtemp(prefix="att-")
    p, pid, first = start_target(a, TARGET_SECONDS, 2)
    for opt in (["--preload", "/lib/x86_64-linux-gnu/libm.so.6"], ["--echo"], ["--mpi-trace"]):
        rc, out, err = attach(a, pid, ["--duration", "1", "--sample"] + opt, out_dir)
        check(rc == 2, "%s: exit 2 (%d)" % (opt[0], rc))
        check("omniprof attach: %s cannot be used with attach: " % opt[0] in err and "starts" in err,
              "%s refused by name, with the reason (%s)" % (opt[0], err.strip()))
    rc, out, err = attach(a, pid, ["--duration", "1", "--process-sampling", "0"], out_dir)
    check(rc == 2 and err.startswith("omniprof attach: --process-sampling: ")
          and "OMNIPROF_PROCESS_SAMPLING_INTERVAL='0'" in err and "[0.001,86400]" in err,
          "a bad value: run's check and message (%s)" % err.strip())
    # issue 31: --duration inf collected about 1 s (infinity wrapped in the end time): refused,
    # with what to do instead; -o DIR/NAME whose DIR is a file: run's output check, before attaching
    for dur in ("inf", "-1", "nan", "1e9"):
        rc, out, err = attach(a, pid, ["--duration", dur, "--sample"], out_dir)
        check(rc == 2 and ("--duration '%s' is not valid" % dur) in err and "(0,31536000]" in err and
              "leave --duration out" in err, "--duration %s: exit 2 naming the valid range (%s)" % (dur, err.strip()))
    afile = os.path.join(out_dir, "afile")
    with open(afile, "w") as f:
        f.write("kept\n")
    rc, out, err = attach(a, pid, ["--duration", "1", "--sample", "-o", "afile/name"], out_dir)
    check(rc == 2 and "'%s' is not a directory" % afile in err, "-o afile/name: exit 2 naming it (%s)" % err.strip())
    check(open(afile).read() == "kept\n", "-o afile/name: the file is untouched")
    check(not databases(out_dir), "nothing attached by the refused command lines")
    rc, out, err = attach(a, pid, ["--duration", "2", "--process-sampling", "0.05", "-f", "rocpd", "pftrace"], out_dir)
    check(rc == 0, "attach with --process-sampling -f rocpd pftrace exits 0 (%d)" % rc)
    dbs = databases(out_dir)
    check(len(dbs) == 1 and dbs[0] in out, "one database, named on stdout (%s)" % dbs)
    finish_target(p, first, 2, 0)
    if dbs:
        con = sqlite3.connect(dbs[0])
        names = {r[0] for r in con.execute("SELECT DISTINCT name FROM omniprof_metrics")}
        # The sampler waits its interval (0.05 s over the 2 s attached: ~41 samples). A timed
        # wait that returns at once (the tool's pthread_cond_timedwait bound to glibc's
        # GLIBC_2.2.5 compat condvar in an attached process) gave ~2,000.
        n = con.execute("SELECT COUNT(*) FROM omniprof_metrics WHERE name = 'rss_bytes'").fetchone()[0]
        con.close()
        for m in ("rss_bytes", "user_cpu_time_ns", "page_faults"):
            check(m in names, "process metric %s recorded: --process-sampling reached the process" % m)
        check(10 <= n <= 200, "--process-sampling 0.05 for 2 s: 10..200 rss_bytes samples (%d): "
              "the sampler waits its interval" % n)
        pf = dbs[0][: -len("_results.db")] + "_results.pftrace"
        check(os.path.exists(pf) and os.path.getsize(pf) > 0, "-f pftrace converted after the attach (%s)" % pf)
    shutil.rmtree(out_dir, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode")
    ap.add_argument("--bindir", required=True)
    a = ap.parse_args()
    fn = globals().get("mode_" + a.mode)
    if not fn:
        print("unknown mode " + a.mode)
        return 2
    scratch("omniprof-instrument-")  # every mkdtemp below goes there, removed at the end
    fn(a)
    if FAILS:
        print("%d check(s) failed" % len(FAILS))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
