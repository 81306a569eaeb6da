#!/usr/bin/env python3
"""check_pcsampling.py DIR SOURCE.cu PROGRAM_STDOUT METHOD — checks the PC samples that
`omniprof run --kernel-trace --pc-sampling` wrote under DIR for tests/gpu/pcsampling.cu:
  - every kernel of the program has samples (pc_samples view), with stall reasons;
  - k_membound's top stall reason is a memory dependency (long scoreboard), k_fma's is not;
  - k_hotloop's most sampled source line is the line marked PCS-HOT-LINE in SOURCE.cu;
  - kernel-serialized samples name their dispatch: every sample's stack_id is a kernel's
    (METHOD kernel-serialized; continuous samples name their kernel only);
  - instruction text is present when nvdisasm was found (reported either way).
Prints "OK ..." or the failures; exit 1 on failure."""
import glob
import json
import os
import sqlite3
import sys


def base(name):
    return (name or "").split("(")[0].split("<")[0].strip()


def main():
    d, src, out = sys.argv[1], sys.argv[2], sys.argv[3]
    method = sys.argv[4] if len(sys.argv) > 4 else "kernel-serialized"
    dbs = glob.glob(os.path.join(d, "**", "*_results.db"), recursive=True)
    if len(dbs) != 1:
        print("FAIL: expected one database under %s, found %s" % (d, dbs))
        return 1
    # the loop's line: code before the marker comment (the header comment names the marker too)
    hot = [i + 1 for i, l in enumerate(open(src)) if "// PCS-HOT-LINE" in l and l.split("//")[0].strip()][0]
    exp = json.loads([l[7:] for l in open(out) if l.startswith("EXPECT ")][0])
    con = sqlite3.connect(dbs[0])
    errors, notes = [], []
    stalls = {}
    for kernel, reason, samples in con.execute("SELECT kernel, stall_reason, samples FROM pc_sampling_stalls"):
        stalls.setdefault(base(kernel), []).append((samples, reason))
    for k in exp["kernels"]:
        if not stalls.get(k):
            errors.append("no PC samples for %s" % k)
    top = {k: max(v)[1] for k, v in stalls.items()}
    total = {k: sum(s for s, _ in v) for k, v in stalls.items()}
    if "k_membound" in top and "long_scoreboard" not in top["k_membound"]:
        errors.append("k_membound's top stall is %s, not long_scoreboard" % top["k_membound"])
    if "k_fma" in top and "long_scoreboard" in top["k_fma"]:
        errors.append("k_fma's top stall is %s" % top["k_fma"])
    lines = con.execute("SELECT file, line, samples FROM pc_sampling_lines WHERE kernel LIKE 'k_hotloop%' "
                        "ORDER BY samples DESC LIMIT 1").fetchall()
    if not lines:
        errors.append("k_hotloop has no sampled source line (-lineinfo?)")
    elif lines[0][1] != hot or not lines[0][0].endswith("pcsampling.cu"):
        errors.append("k_hotloop's top line is %s:%s, expected pcsampling.cu:%d" % (lines[0][0], lines[0][1], hot))
    unmatched = con.execute("SELECT count(*) FROM omniprof_pc_sample WHERE stack_id NOT IN "
                            "(SELECT stack_id FROM kernels)").fetchone()[0]
    if unmatched and method == "kernel-serialized":
        errors.append("%d samples do not name a traced dispatch" % unmatched)
    with_text = con.execute("SELECT count(*), sum(instruction_id IS NOT NULL) FROM omniprof_pc_sample").fetchone()
    notes.append("SASS text on %s of %s rows" % (with_text[1], with_text[0]))
    ex = con.execute("SELECT instruction FROM pc_samples WHERE instruction IS NOT NULL AND kernel LIKE 'k_hotloop%' "
                     "ORDER BY samples DESC LIMIT 1").fetchone()
    if ex:
        notes.append("k_hotloop's hottest instruction: %s" % ex[0])
    summary = "; ".join("%s: %d samples, top %s" % (k, total[k], top[k].replace("smsp__pcsamp_warps_issue_stalled_", ""))
                        for k in sorted(top))
    if errors:
        print("FAIL: " + "; ".join(errors) + " | " + summary)
        return 1
    print("OK %s; hot line %d; %s" % (summary, hot, "; ".join(notes)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
