#!/usr/bin/env python3
"""test_testlib.py — tests/testlib.py's scratch(): the temporary folder of a test script (and the
tempfile folders made inside it) is removed when the script ends by passing, skipping (exit 77)
or raising, and when a forked child exits first it is still there for the parent; it is kept,
its path printed, when a check failed. Each case is a real python3 process whose TMPDIR is a
folder of this test's own, removed at its end."""
import os
import subprocess
import sys
import tempfile

TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, TESTS)
from testlib import check, done  # noqa: E402 (tests/testlib.py: the one assertion helper)

CASE = r'''
import os, sys, tempfile
sys.path.insert(0, %r)
from testlib import check, scratch
root = scratch("omniprof-scratch-")
d = tempfile.mkdtemp(prefix="inner-")
with open(os.path.join(d, "f"), "w") as f:
    f.write("x")
print("root=%%s inner=%%s" %% (root, d), flush=True)
how = sys.argv[1]
if how == "fork":
    pid = os.fork()
    if pid == 0:
        sys.exit(0)
    os.waitpid(pid, 0)
    print("after the child: " + ("there" if os.path.isdir(root) else "gone"), flush=True)
elif how == "skip":
    sys.exit(77)
elif how == "raise":
    raise RuntimeError("raised on purpose")
elif how == "fail":
    check(False, "a check that fails on purpose")
''' % TESTS


def main():
    with tempfile.TemporaryDirectory(prefix="omniprof-testlib-") as base:
        env = dict(os.environ, TMPDIR=base)
        for how, rc_want in (("pass", 0), ("skip", 77), ("raise", 1), ("fork", 0), ("fail", 0)):
            r = subprocess.run([sys.executable, "-c", CASE, how], capture_output=True, text=True,
                               env=env, timeout=60)
            line = next((l for l in r.stdout.splitlines() if l.startswith("root=")), "")
            root, inner = (line[5:].split(" inner=") + [""])[:2] if line else ("", "")
            check(r.returncode == rc_want and os.path.dirname(root) == base and
                  os.path.dirname(inner) == root,
                  "%s: exit %d (want %d), the folder in TMPDIR, tempfile's folders inside it (%r)"
                  % (how, r.returncode, rc_want, line))
            left = sorted(os.listdir(base))
            if how == "fail":
                check(left == [os.path.basename(root)] and os.path.exists(os.path.join(inner, "f"))
                      and ("temporary files kept: " + root) in r.stdout,
                      "fail: the folder is kept and its path printed (%r, %r)" % (left, r.stdout))
                continue
            check(not left, "%s: nothing left in TMPDIR (%r)" % (how, left))
            if how == "fork":
                check("after the child: there" in r.stdout,
                      "fork: a child's exit leaves the parent's folder (%r)" % r.stdout)
    return done()


if __name__ == "__main__":
    sys.exit(main())
