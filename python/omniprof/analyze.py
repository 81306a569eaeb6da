"""omniprof.analyze — the critical path, what-if predictions and ranked findings of a recorded
run, from Python (docs/analyze.md). Runs `omniprof analyze --format json` (the analysis is the C
one, src/analyze) and returns its JSON as a dict (schema "omniprof-analyze", version 1):

    import omniprof
    res = omniprof.analyze(["rank0_results.db", "rank1_results.db"],
                           what_if=["kernel:gemm.*=0.5"], iteration="step")
    res["what_if"]["gain_pct"], res["findings"][0]["title"]
    omniprof.analyze.load("analysis.json")   # a saved `omniprof analyze --json -o FILE`

The binary is found through $OMNIPROF_BIN, then beside the library the package loads
(<lib>/../bin/omniprof), then on PATH. Inputs are never modified."""

import json
import os
import shutil
import subprocess

SCHEMA = "omniprof-analyze"
VERSION = 1


class AnalyzeError(Exception):
    """`omniprof analyze` failed; .status is its exit status (1 failure, 2 bad input)."""

    def __init__(self, message, status=1):
        super().__init__(message)
        self.status = status


def binary():
    """Path of the omniprof binary used (raises AnalyzeError when none is found)."""
    env = os.environ.get("OMNIPROF_BIN")
    if env:
        return env
    try:
        from . import library_path
        cand = os.path.join(os.path.dirname(library_path()), "..", "bin", "omniprof")
        if os.access(cand, os.X_OK):
            return os.path.normpath(cand)
    except Exception:  # noqa: BLE001  (no library found: try PATH)
        pass
    p = shutil.which("omniprof")
    if not p:
        raise AnalyzeError("the omniprof binary was not found (set OMNIPROF_BIN)", 1)
    return p


def _check(res):
    if not isinstance(res, dict) or res.get("schema") != SCHEMA:
        raise AnalyzeError("not an omniprof-analyze result", 2)
    if int(res.get("version", 0)) > VERSION:
        raise AnalyzeError("analyze schema version %s is newer than this package's %d" %
                           (res.get("version"), VERSION), 2)
    return res


def load(path):
    """Reads a saved analysis (`omniprof analyze --format json -o FILE`)."""
    with open(path) as f:
        return _check(json.load(f))


def analyze(dbs, what_if=(), iteration=None, window=None, timeout=None):
    """Analyzes databases (a path or a list): returns the JSON result as a dict. what_if: specs
    "TARGET:REGEX=FACTOR"; iteration: the range that delimits iterations; window: (start, end)
    in seconds from the run's start. Raises AnalyzeError with the command's message."""
    if isinstance(dbs, (str, os.PathLike)):
        dbs = [dbs]
    cmd = [binary(), "analyze", "-i"] + [os.fspath(d) for d in dbs] + ["--format", "json"]
    for w in ([what_if] if isinstance(what_if, str) else what_if):
        cmd += ["--what-if", w]
    if iteration:
        cmd += ["--iteration", iteration]
    if window:
        cmd += ["--window", "%s:%s" % (window[0], window[1])]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise AnalyzeError(r.stderr.strip() or "omniprof analyze failed", r.returncode)
    return _check(json.loads(r.stdout))


# omniprof.analyze is this function once the package imports it: it carries load() along
analyze.load = load
analyze.AnalyzeError = AnalyzeError
