#!/usr/bin/env python3
"""`omniprof diff` on real runs of diff_prog (tests/diff/diff_prog.c) under `omniprof run`.

Cases (argv[1]):
  same        two runs of the same program (started together, so that both see the same load
              on a busy machine): no significant change; --fail-above 10 exits 0; the JSON
              document has the documented schema; neither input changes (bytes and mtime).
              Wall-time items are asserted only when both runs had >= 0.8 of a CPU (WALL_SHARE
              below says why); the CPU-sample items always (on a busy machine, those of under
              2 % of the samples excepted: SMALL_SHARE).
  same_drift  two runs of the same program whose instances drift together (diff_prog's
              DRIFT_SEED: a wait per range whose length changes every 10 iterations, as a
              machine's load does; seeds 1 and 10 give runs whose mean waits differ by 22 %):
              no item is significant. Instances of one run are not independent, so the noise
              must come from batches of neighbours, not from the instances as if independent
              (before the batch means, this case reported `solve`, `prepare` and `step`).
  planted     BASE with solve at 100 %, NEW with solve at 120 % (the program's knob), started
              together (again, up to 3 pairs, while the unchanged prepare_work's CPU time
              differs by more than 5 % between them: the CPUs ran at different speeds): the
              first significant item is the range `solve` or its function `solve_work`, both
              are significant and slower by 10-35 %, `prepare` and its function are not
              significant; --fail-above 10 exits 3 naming solve; --iteration step gives the
              iteration item.
  bad_inputs  a missing file, a file that is not a database, the same path twice (and through
              a symlink), one database only, a bad --alpha, -o onto an input: status 2 and a
              message that names the input or the valid values; inputs unchanged.
Exit 0 pass, 1 fail, 77 skip."""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from testlib import check, done  # noqa: E402 (tests/testlib.py: the one assertion helper)

A = None
ITERS, UNITS = "150", "1500000"


def start(wd, name, pct, units=UNITS, seed=None):
    argv = [A.omniprof, "run", "--marker-trace", "--sample", "cputime", "--sampling-freq", "2500",
            "-d", wd, "-o", name, "--", A.prog, ITERS, units, str(pct)]
    if seed is not None:
        argv.append(str(seed))
    out = open(os.path.join(wd, name + ".out"), "w+")
    err = open(os.path.join(wd, name + ".err"), "w+")
    # At 0.05 of a CPU (load 15-20 on the 2-core VM) the writer's close made no progress for the
    # default 10 s three times in 20 runs of case same: "closing ...: Connection timed out", the
    # call stacks' names were not stored, and solve_work was missing from the diff. What this
    # test checks is the diff, so the close gets all the time it needs.
    env = dict(os.environ, OMNIPROF_EXIT_FLUSH_TIMEOUT_MS="600000")
    p = subprocess.Popen(argv, stdout=out, stderr=err, text=True, env=env)
    p.files = (out, err)
    p.t0 = time.monotonic()
    return p, os.path.join(wd, name + "_results.db")


def wait_all(procs):
    """Waits for every process (whichever ends first); sets each one's returncode, output and
    CPU share: (user + system CPU time) / wall time, from wait4's resource usage."""
    left = {p.pid: p for p in procs}
    while left:
        pid, status, ru = os.wait4(-1, 0)
        p = left.pop(pid, None)
        if p is None:
            continue
        p.returncode = os.waitstatus_to_exitcode(status)
        wall = time.monotonic() - p.t0
        p.cpu_s = ru.ru_utime + ru.ru_stime
        p.cpu_share = p.cpu_s / wall if wall > 0 else 0
        for f in p.files:
            f.seek(0)
        p.out, p.err = p.files[0].read(), p.files[1].read()
        for f in p.files:
            f.close()


def profile_pair(wd, pct_base, pct_new, units=UNITS, seeds=(None, None)):
    """Runs BASE and NEW at the same time; returns their database paths and the smaller CPU
    share of the two runs."""
    pb, db_b = start(wd, "base", pct_base, units, seeds[0])
    pn, db_n = start(wd, "new", pct_new, units, seeds[1])
    wait_all([pb, pn])
    for p, db in ((pb, db_b), (pn, db_n)):
        check(p.returncode == 0, "omniprof run exits 0 (%s)" % p.err.strip()[-300:])
        check("diff_prog done" in p.out, "the program's output passes through")
        if not os.path.exists(db):
            check(False, "database %s written" % db)
            sys.exit(1)
    share = min(pb.cpu_share, pn.cpu_share)
    global CPU_RATIO
    CPU_RATIO = max(pb.cpu_s, pn.cpu_s) / max(1e-9, min(pb.cpu_s, pn.cpu_s))
    print("CPU share of the runs: base %.2f, new %.2f; CPU time base %.2f s, new %.2f s"
          % (pb.cpu_share, pn.cpu_share, pb.cpu_s, pn.cpu_s))
    return db_b, db_n, share


# Wall-time items (ranges, iterations) are asserted only when both runs had a CPU most of the
# time: on a machine busy with other work, each run's ranges stretch by its share of the CPU,
# which differs between two runs by more than the plant (measured: 5 % to 52 % for a 20 %
# plant at shares of 0.2). CPU-time samples do not depend on the share: always asserted.
WALL_SHARE = 0.8


def fingerprint(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest(), os.stat(path).st_mtime_ns


def diff(*args):
    r = subprocess.run([A.omniprof, "diff"] + list(args), capture_output=True, text=True,
                       timeout=240)
    return r


def items_of(r):
    doc = json.loads(r.stdout)
    return doc, {(i["kind"], i["name"]): i for i in doc["items"]}


# Two runs of the same work that took CPU times this far apart ran at different speeds (on a
# shared VM one virtual CPU can be 15-20 % slower than the other for a while: seen with both
# runs at a full CPU, 0.61 against 0.50 s of CPU for the same loop): their wall-time items then
# differ for real, and "no significant change" is not asserted for them (same-work cases only).
SPEED_RATIO = 1.08
# case planted runs its pair again (up to PAIR_TRIES in all) while the unchanged function's CPU
# time differs by more than PAIR_SPEED between the runs
PAIR_SPEED, PAIR_TRIES = 1.05, 3
# case same on a busy machine: functions of fewer samples than this share of all are not asserted
SMALL_SHARE = 0.02
CPU_RATIO = 1.0


def wall_note(share, same_work=False):
    ok = share >= WALL_SHARE
    if not ok:
        print("SKIP (part): wall-time items (ranges, iterations) not asserted: a run had %.2f of "
              "a CPU (< %.1f: the machine is busy); CPU-sample items are" % (share, WALL_SHARE))
    elif same_work and CPU_RATIO > SPEED_RATIO:
        ok = False
        print("SKIP (part): wall-time items (ranges, iterations) not asserted: the same work took "
              "%.2fx the CPU time in one run (> %.2f: the two CPUs ran at different speeds); "
              "CPU-sample items are" % (CPU_RATIO, SPEED_RATIO))
    return ok


def case_same(wd):
    b, n, share = profile_pair(wd, 100, 100)
    wall_ok = wall_note(share, same_work=True)
    before = [fingerprint(b), fingerprint(n)]
    r = diff(b, n, "--iteration", "step", "--fail-above", "10")
    print(r.stdout)
    j = diff(b, n, "--json", "--iteration", "step")
    doc, items = items_of(j)
    check(doc["schema"] == "omniprof.diff" and doc["version"] == 1,
          "JSON schema omniprof.diff version 1")
    sig = [(i["kind"], i["name"], round(i["change_pct"], 1)) for i in doc["items"]
           if i["significant"]]
    fsig = [x for x in sig if x[0] == "function"]
    if not wall_ok:
        # On a busy machine a function of a few samples can cost more CPU in one run for real:
        # seen beside two busy loops, __vdso_clock_gettime in 12 samples of one run and 34 of the
        # other (0.9 % of the time). The program's own work is asserted whatever the load.
        total = sum(i["base"]["count"] + i["new"]["count"] for i in doc["items"]
                    if i["kind"] == "function")
        small = {i["name"] for i in doc["items"] if i["kind"] == "function" and
                 i["base"]["count"] + i["new"]["count"] < SMALL_SHARE * total}
        if [x for x in fsig if x[1] in small]:
            print("SKIP (part): significant functions of under %.0f %% of the samples not asserted "
                  "on a busy machine: %s" % (100 * SMALL_SHARE, [x for x in fsig if x[1] in small]))
        fsig = [x for x in fsig if x[1] not in small]
    check(not fsig, "no CPU function is significant (%s)" % fsig)
    if wall_ok:
        check(not sig, "no item is significant (%s)" % sig)
        check("0 significant changes" in r.stdout, "the console says: 0 significant changes")
        check(r.returncode == 0,
              "diff of two runs of the same program exits 0 with --fail-above 10 (%d, %s)"
              % (r.returncode, r.stderr.strip()))
    for key in (("range", "prepare"), ("range", "solve"), ("iteration", "step")):
        it = items.get(key)
        check(it is not None and it["base"]["count"] == int(ITERS) and
              it["new"]["count"] == int(ITERS),
              "%s %s compared with %s instances on each side" % (key + (ITERS,)))
    fn = items.get(("function", "solve_work"))
    check(fn is not None and fn["base"]["count"] > 50 and fn["new"]["count"] > 50,
          "function solve_work compared from its samples (%s)" % (fn and fn["base"]["count"]))
    for it in doc["items"]:
        for k in ("kind", "name", "status", "significant", "base", "new", "delta_ns", "change_pct",
                  "noise_pct", "p_value", "test"):
            if k not in it:
                check(False, "item has %s" % k)
                return
    check(doc["iterations"] == {"base": int(ITERS), "new": int(ITERS)}, "iterations counted")
    check([fingerprint(b), fingerprint(n)] == before, "neither input changed (bytes, mtime)")


def case_same_drift(wd):
    b, n, _ = profile_pair(wd, 100, 100, units="100000", seeds=(1, 10))
    r = diff(b, n, "--iteration", "step", "--fail-above", "10")
    print(r.stdout)
    doc, items = items_of(diff(b, n, "--json", "--iteration", "step"))
    sig = [(i["kind"], i["name"], round(i["change_pct"], 1), round(i["noise_pct"], 1))
           for i in doc["items"] if i["significant"]]
    solve = items.get(("range", "solve"), {})
    # the premise: the runs' means differ by far more than instances taken as independent
    # would allow (the seeds' mean waits differ by 22 %)
    check(abs(solve.get("change_pct", 0)) >= 10,
          "the drift makes the runs' range means differ (solve %+.1f %%)"
          % solve.get("change_pct", 0))
    check(not sig, "no item is significant (%s)" % sig)
    check(r.returncode == 0 and "0 significant changes" in r.stdout,
          "--fail-above 10 exits 0 (%d, %s)" % (r.returncode, r.stderr.strip()))


def cpu_speed(items):
    """The unchanged prepare_work's CPU time (samples) in NEW over BASE: the two CPUs' relative
    speed; where they ran at different speeds every item differs for real beside the plant."""
    pw = items.get(("function", "prepare_work"), {})
    return (pw.get("new", {}).get("total_ns", 0) / pw["base"]["total_ns"]
            if pw.get("base", {}).get("total_ns") else 1.0)


def case_planted(wd):
    for attempt in range(1, PAIR_TRIES + 1):
        d = os.path.join(wd, "pair%d" % attempt)
        os.makedirs(d)
        b, n, share = profile_pair(d, 100, 120)
        speed = cpu_speed(items_of(diff(b, n, "--json"))[1])
        if 1 / PAIR_SPEED <= speed <= PAIR_SPEED or attempt == PAIR_TRIES:
            break
        # seen beside two busy loops: prepare_work 0.94x, solve_work +11.5 % +-10.6 % (the
        # plant's 20 % less the CPUs' 6 %), not significant
        print("retry %d: the unchanged prepare_work took %.2fx the CPU time in NEW (outside "
              "1/%.2f..%.2f: the two runs' CPUs ran at different speeds)"
              % (attempt, speed, PAIR_SPEED, PAIR_SPEED))
    wall_ok = wall_note(share)
    before = [fingerprint(b), fingerprint(n)]
    r = diff(b, n, "--iteration", "step")
    print(r.stdout)
    check(r.returncode == 0, "diff exits 0 without --fail-above")
    doc, items = items_of(diff(b, n, "--json", "--iteration", "step"))
    sig = [(i["kind"], i["name"]) for i in doc["items"] if i["significant"]]
    print("significant, in rank order:", sig)
    planted = (("range", "solve"), ("function", "solve_work"))
    if wall_ok and not 1 / SPEED_RATIO <= speed <= SPEED_RATIO:
        wall_ok = False
        print("SKIP (part): wall-time items (ranges, iterations) not asserted: the unchanged "
              "prepare_work took %.2fx the CPU time in NEW (outside 1/%.2f..%.2f: the two CPUs "
              "ran at different speeds); CPU-sample items are" % (speed, SPEED_RATIO, SPEED_RATIO))
    if wall_ok:
        check(sig and sig[0] in planted, "the planted slowdown (solve) is ranked first")
        rows = [l for l in r.stdout.splitlines() if l.startswith("* ")]
        check(rows and (rows[0].endswith(" solve") or rows[0].endswith(" solve_work")),
              "the console's first row is solve")
    else:
        fsig = [x for x in sig if x[0] == "function"]
        check(fsig and fsig[0] == ("function", "solve_work"),
              "the planted slowdown (solve_work) is the first significant function")
    it = items.get(("function", "solve_work"), {})
    check(it.get("significant") and it.get("status") == "slower" and
          10 <= it.get("change_pct", 0) <= 35,
          "function solve_work: significant, slower by %.1f %% (planted 20 %%)"
          % it.get("change_pct", 0))
    it = items.get(("function", "prepare_work"), {})
    check(it and not it["significant"], "function prepare_work (unchanged) is not significant "
          "(%.1f %%)" % it.get("change_pct", 0))
    if wall_ok:
        it = items.get(("range", "solve"), {})
        check(it.get("significant") and it.get("status") == "slower" and
              10 <= it.get("change_pct", 0) <= 35,
              "range solve: significant, slower by %.1f %% (planted 20 %%)"
              % it.get("change_pct", 0))
        it = items.get(("range", "prepare"), {})
        check(it and not it["significant"], "range prepare (unchanged) is not significant "
              "(%.1f %%)" % it.get("change_pct", 0))
    f = diff(b, n, "--fail-above", "10")
    check(f.returncode == 3 and ("solve" in f.stderr or not wall_ok),
          "--fail-above 10 exits 3 naming solve (%d, %s)" % (f.returncode, f.stderr.strip()))
    _, fj = items_of(diff(b, n, "--json"))
    worst = max([i["change_pct"] for i in fj.values() if i["status"] == "slower"] or [0])
    f = diff(b, n, "--fail-above", "%.0f" % (worst + 1))
    check(f.returncode == 0, "--fail-above above the largest regression (%.1f %%) exits 0 (%d)"
          % (worst, f.returncode))
    # Swapped: the same item is significantly faster.
    _, sw = items_of(diff(n, b, "--json"))
    check(sw.get(("function", "solve_work"), {}).get("status") == "faster",
          "swapped inputs: solve_work is faster")
    check([fingerprint(b), fingerprint(n)] == before, "neither input changed (bytes, mtime)")


def case_bad_inputs(wd):
    pb, db = start(wd, "one", 100)
    wait_all([pb])
    check(os.path.exists(db), "a database to compare")
    before = fingerprint(db)
    missing = os.path.join(wd, "nope.db")
    r = diff(db, missing)
    check(r.returncode == 2 and missing in r.stderr and "NEW" in r.stderr,
          "a missing NEW: status 2 naming it (%s)" % r.stderr.strip())
    text = os.path.join(wd, "notes.db")
    with open(text, "w") as f:
        f.write("not a database\n" * 100)
    r = diff(text, db)
    check(r.returncode == 2 and text in r.stderr, "not a database: status 2 naming it (%s)" %
          r.stderr.strip())
    r = diff(db, db)
    check(r.returncode == 2 and "same file" in r.stderr, "the same path twice: status 2 (%s)" %
          r.stderr.strip())
    link = os.path.join(wd, "link.db")
    os.symlink(db, link)
    r = diff(db, link)
    check(r.returncode == 2 and "same file" in r.stderr,
          "the same file through a symlink: status 2")
    r = diff(db)
    check(r.returncode == 2 and "exactly two" in r.stderr, "one database only: status 2 (%s)" %
          r.stderr.strip())
    other = os.path.join(wd, "copy.db")
    with open(db, "rb") as s, open(other, "wb") as d:
        d.write(s.read())
    r = diff(db, other, "--alpha", "2")
    check(r.returncode == 2 and "between 0 and 1" in r.stderr,
          "--alpha 2: status 2 with the valid range")
    r = diff(db, other, "-o", other)
    check(r.returncode == 2 and "input" in r.stderr, "-o onto an input: status 2")
    out = os.path.join(wd, "d.json")
    r = diff(db, other, "--json", "-o", out)
    check(r.returncode == 0 and json.load(open(out))["version"] == 1,
          "-o FILE writes the JSON document")
    r = diff(db, other, "--json", "-o", out)
    check(r.returncode == 2 and "exists" in r.stderr,
          "-o onto an existing file: status 2, file kept")
    r = diff("--iteration", "step", db, "--top", "5", other)
    check(r.returncode == 0 and "0 significant changes" in r.stdout,
          "options before, between and after the databases; a database and its copy: no change")
    check(fingerprint(db) == before, "the input did not change")


def main():
    global A
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("--omniprof", required=True)
    ap.add_argument("--prog", required=True)
    A = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="omniprof-diff-") as wd:
        {"same": case_same, "same_drift": case_same_drift, "planted": case_planted,
         "bad_inputs": case_bad_inputs}[A.case](wd)
    if done():
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
