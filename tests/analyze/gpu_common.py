"""gpu_common.py — what the GPU parts gpu_events.py and gpu_nccl.py share: `omniprof analyze`
as JSON with a checked exit status, and the median run of a variant's recordings."""
import json
import os
import subprocess


def analyze(omni, check, db, *extra):
    """`omniprof analyze -i DB --format json EXTRA...`: its JSON, or None (checked: exit 0)."""
    r = subprocess.run([omni, "analyze", "-i", db, "--format", "json"] + list(extra),
                       capture_output=True, text=True, timeout=600)
    check(r.returncode == 0, "analyze %s exits 0 (%s)" % (os.path.basename(db),
                                                         r.stderr.strip()[-300:]))
    return json.loads(r.stdout) if r.returncode == 0 else None


def median(runs):
    """The analysis of the median run by wall time (None entries left out), or None."""
    runs = [r for r in runs if r]
    runs.sort(key=lambda r: r["run"]["wall_ns"])
    return runs[len(runs) // 2] if runs else None
