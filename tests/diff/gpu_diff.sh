#!/bin/bash
# tests/diff/gpu_diff.sh BUILD OUTDIR — `omniprof diff` on a GPU (tests/gpu/run.sh part "diff").
# diff_kernels (tests/diff/diff_kernels.cu) runs twice as it is and once with kernel_b 20 %
# slower (its knob), under `omniprof run --kernel-trace --runtime-trace --marker-trace`:
#   diff.gpu_same     same program twice: no significant change, --fail-above 10 exits 0
#   diff.gpu_planted  kernel_b +20 %: the first significant item is kernel_b, slower by 15-25 %,
#                     kernel_a and kernel_c not significant, --fail-above 10 exits 3
# Prints PASS/FAIL/SKIP lines; exits 0 when nothing failed.
set -u
B=$1; O=$2
mkdir -p "$O"
P=$B/bin/omniprof-diff-kernels
if [ ! -x "$P" ]; then echo "FAIL diff.gpu: $P not built"; exit 1; fi
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP diff.gpu: no CUDA GPU (nvidia-smi -L failed)"; exit 0
fi
ITERS=300; CYCLES=2000000   # ~1 ms per kernel at 2 GHz
run() { # run NAME PCT
  "$B/bin/omniprof" run --kernel-trace --runtime-trace --marker-trace -d "$O" -o "$1" -- \
    "$P" $ITERS $CYCLES "$2" >"$O/$1.log" 2>&1
}
rm -f "$O"/base_results.db "$O"/same_results.db "$O"/slow_results.db
if ! { run base 100 && run same 100 && run slow 120; }; then
  echo "FAIL diff.gpu: a profiled run failed ($(tail -3 "$O"/*.log | tr '\n' ' '))"; exit 1
fi
fail=0
d() { "$B/bin/omniprof" diff "$O/base_results.db" "$@"; }
d "$O/same_results.db" --iteration step >"$O/same.txt" 2>&1
d "$O/same_results.db" --iteration step --json >"$O/same.json" 2>"$O/same.err"
d "$O/same_results.db" --fail-above 10 >/dev/null 2>&1; same_rc=$?
d "$O/slow_results.db" --iteration step >"$O/slow.txt" 2>&1
d "$O/slow_results.db" --iteration step --json >"$O/slow.json" 2>"$O/slow.err"
d "$O/slow_results.db" --fail-above 10 >/dev/null 2>"$O/slow-fail.err"; slow_rc=$?
head -12 "$O/slow.txt"
python3 - "$O" "$same_rc" "$slow_rc" <<'PY' || fail=1
import json, sys
o, same_rc, slow_rc = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
bad = 0
def verdict(name, ok, msg):
    global bad
    print(("PASS " if ok else "FAIL ") + name + ": " + msg)
    bad += not ok
same = json.load(open(o + "/same.json"))
sig = [(i["kind"], i["name"], round(i["change_pct"], 1)) for i in same["items"] if i["significant"]]
k = {i["name"]: i for i in same["items"] if i["kind"] == "kernel"}
verdict("diff.gpu_same",
        not sig and same_rc == 0 and all(n in k for n in ("kernel_a", "kernel_b", "kernel_c")),
        "same program twice: significant %s, --fail-above 10 status %d, kernels %s"
        % (sig, same_rc, sorted(k)))
slow = json.load(open(o + "/slow.json"))
sig = [i for i in slow["items"] if i["significant"]]
first = sig[0] if sig else {}
k = {i["name"]: i for i in slow["items"] if i["kind"] == "kernel"}
kb = k.get("kernel_b", {})
ka, kc = k.get("kernel_a", {}), k.get("kernel_c", {})
ok = (first.get("kind") == "kernel" and first.get("name") == "kernel_b"
      and 15 <= kb.get("change_pct", 0) <= 25
      and not ka.get("significant", True) and not kc.get("significant", True) and slow_rc == 3)
verdict("diff.gpu_planted", ok,
        "first significant %s %s %+.1f %% (planted +20 %%); kernel_a %+.1f %%, kernel_c %+.1f %%; "
        "--fail-above 10 status %d" % (first.get("kind"), first.get("name"),
                                       first.get("change_pct", 0), ka.get("change_pct", 0),
                                       kc.get("change_pct", 0), slow_rc))
sys.exit(1 if bad else 0)
PY
exit $fail
