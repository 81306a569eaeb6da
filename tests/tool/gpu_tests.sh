#!/bin/bash
# tests/tool/gpu_tests.sh — the launcher's GPU checks, run by tests/gpu/run.sh (part 4) on the
# GPU machine from the repo root. Usage: gpu_tests.sh BUILD_DIR. Prints PASS/FAIL/SKIP lines.
#  tool.filter_include   --kernel-include-regex 'saxpy|fma': saxpy and fma_loop counted REPS times each,
#                        empty_kernel never; every dispatch still traced
#  tool.filter_exclude   --kernel-exclude-regex fma: saxpy and empty_kernel counted, fma_loop never
#  tool.filter_range     --kernel-iteration-range '[2, [4-5]]': launches 2, 4 and 5 of each kernel
#  tool.filter_all       include 'saxpy' + exclude 'never' + range '1,3': saxpy launches 1 and 3 only
#  tool.kernel_rename    --kernel-rename on the NVTX scenario of omniprof-gpu-workloads: the six k_empty
#                        launched inside nvtxRangePush("inner") are named "inner", the one inside the
#                        process range (start/end, not push/pop) keeps its name
set -u
B=$(cd "${1:-gpu-build}" && pwd)
OUT=${OUT:-/tmp/omniprof-tool-gpu}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$B/lib:$B/runtime-libs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
APP=$B/bin/omniprof-counters-app
REPS=5
verdict() { # NAME RC MESSAGE
  if [ "$2" = 0 ]; then echo "PASS $1: $3"; elif [ "$2" = 77 ]; then echo "SKIP $1: $3"; else echo "FAIL $1: $3"; fi
}
if ! nvidia-smi -L >/dev/null 2>&1; then verdict tool.gpu 77 "no NVIDIA GPU"; exit 0; fi
if [ ! -x "$APP" ] || [ ! -x "$B/bin/omniprof" ]; then verdict tool.gpu_build 1 "$APP or omniprof missing"; exit 1; fi
check() { # NAME WANT FILTER-OPTIONS...
  local name=$1 want=$2; shift 2
  local d=$OUT/$name; rm -rf "$d"
  timeout 300 "$B/bin/omniprof" run -d "$d" -o f --kernel-trace --pmc gpu__time_duration.sum "$@" -- "$APP" 65536 $REPS 0 \
    >"$OUT/$name.out" 2>"$OUT/$name.err"; local rc=$?
  local msg
  if [ $rc = 0 ]; then msg=$(python3 tests/tool/gpu_filters.py "$d" $REPS "$want" 2>&1); rc=$?
  else msg="omniprof run exit $rc: $(tail -3 "$OUT/$name.err" | tr '\n' ' ')"; fi
  verdict "$name" $rc "$(echo "$msg" | tail -4 | tr '\n' ' ')"
}
check tool.filter_include saxpy:5,fma_loop:5,empty_kernel:0 --kernel-include-regex 'saxpy|fma'
check tool.filter_exclude saxpy:5,fma_loop:0,empty_kernel:5 --kernel-exclude-regex fma
check tool.filter_range saxpy:3,fma_loop:3,empty_kernel:3 --kernel-iteration-range '[2, [4-5]]'
check tool.filter_all saxpy:2,fma_loop:0,empty_kernel:0 --kernel-include-regex saxpy --kernel-exclude-regex never \
  --kernel-iteration-range 1,3

d=$OUT/rename; rm -rf "$d"
timeout 120 "$B/bin/omniprof" run -d "$d" -o r --kernel-trace --kernel-rename -- "$B/bin/omniprof-gpu-workloads" nvtx \
  >"$OUT/rename.out" 2>"$OUT/rename.err"; rc=$?
if [ $rc = 0 ]; then
  msg=$(python3 - "$d/r_results.db" <<'PY'
import sqlite3, sys
con = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
rows = sorted(con.execute("SELECT region, count(*) FROM kernels GROUP BY region").fetchall())
names = [r[0] for r in rows]
ok = ("inner", 6) in rows and len(rows) == 2 and any(n.startswith("k_empty") and c == 1 for n, c in rows)
ok = ok and all(n.startswith("k_empty") for (n,) in con.execute("SELECT DISTINCT name FROM kernels"))
print(("OK: " if ok else "BAD: ") + "regions %r" % rows)
sys.exit(0 if ok else 1)
PY
); rc=$?
else msg="omniprof run exit $rc: $(tail -3 "$OUT/rename.err" | tr '\n' ' ')"; fi
verdict tool.kernel_rename $rc "$msg"
exit 0
