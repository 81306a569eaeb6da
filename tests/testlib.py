"""testlib.py — the one assertion helper of the Python test scripts under tests/.

A script puts tests/ on its path and imports what it uses:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from testlib import FAILS, check, done, skip

check() prints "ok: WHAT" or "FAIL: WHAT" and collects failures in FAILS, so one run reports
every failing check; require() raises instead (for checks later steps cannot go on without);
skip() ends the test as skipped (exit 77, which CTest's SKIP_RETURN_CODE reads) with its reason;
done() prints the count of failures and returns the exit status; scratch() gives the test a
temporary folder of its own that is removed when it ends."""
import atexit
import os
import shutil
import sys
import tempfile

FAILS = []


def check(cond, what):
    """Record one check: True when it held."""
    ok = bool(cond)
    print(("ok: " if ok else "FAIL: ") + what, flush=True)
    if not ok:
        FAILS.append(what)
    return ok


def require(cond, what):
    """A check the rest of the test depends on: raises AssertionError(WHAT) when it fails."""
    if not cond:
        raise AssertionError(what)


def skip(reason):
    """End the test as skipped, saying why."""
    print("SKIP: " + reason, flush=True)
    sys.exit(77)


def done():
    """The exit status: 0 when every check held, else 1 (the failures counted)."""
    if FAILS:
        print("%d check(s) failed" % len(FAILS), flush=True)
        return 1
    return 0


def scratch(prefix):
    """A folder under $TMPDIR (or /tmp) that every later tempfile.mkdtemp, mkstemp and
    TemporaryDirectory of this process creates its files in (tempfile.tempdir). It is removed when
    the process ends, on every path (pass, skip, exception), and kept only when a check failed:
    its path is printed then. Other users can enter it (tests run programs as another user)."""
    root = tempfile.mkdtemp(prefix=prefix)
    os.chmod(root, 0o755)
    tempfile.tempdir = root
    pid = os.getpid()

    def end():
        if os.getpid() != pid:  # a forked child ending
            return
        tempfile.tempdir = None
        if FAILS:
            print("temporary files kept: " + root, flush=True)
        else:
            shutil.rmtree(root, ignore_errors=True)
    atexit.register(end)
    return root
