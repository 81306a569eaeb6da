#!/bin/bash
# tests/report/gpu_tests.sh — hook for tests/gpu/run.sh (part 4): `omniprof report` on the
# database of a real CUDA run (the multistream scenario of tests/gpu/cuda_workloads.cu under
# `omniprof run --runtime-trace --sample`), checked by report_check.py's page mode: the kernel
# table counts every dispatch, GPU agents and kernel lanes are there, and, where Chromium is
# installed, the page draws without a JavaScript error. Also `convert -f svg` of the same run.
# Prints PASS/FAIL lines. Usage: gpu_tests.sh BUILD_DIR
set -u
B=${1:?build dir}
here=$(cd "$(dirname "$0")" && pwd)
prog=$B/bin/omniprof-gpu-workloads
[ -x "$prog" ] || { echo "FAIL report.gpu: $prog is not built (nvcc)"; exit 1; }
wd=$(mktemp -d); trap 'rm -rf "$wd"' EXIT
"$B/bin/omniprof" run --runtime-trace --sample -d "$wd" -o gpu -- "$prog" multistream >"$wd/run.out" 2>"$wd/run.err"
rc=$?
db=$wd/gpu_results.db
if [ $rc = 0 ] && [ -f "$db" ]; then echo "PASS report.gpu.run: omniprof run wrote $db"
else echo "FAIL report.gpu.run: exit $rc: $(tail -3 "$wd/run.err" | tr '\n' ' ')"; exit 1; fi
python3 "$here/report_check.py" page "$db" --gpu --omniprof "$B/bin/omniprof" --workdir "$wd" >"$wd/check.log" 2>&1
rc=$?
cat "$wd/check.log"
fails=$(grep -c '^FAIL' "$wd/check.log")
oks=$(grep -c '^ok' "$wd/check.log")
size=$(grep -o 'page.html ([0-9]* bytes)' "$wd/check.log" | grep -o '[0-9]*')
if [ $rc = 0 ] && [ "$fails" = 0 ]; then
  echo "PASS report.gpu.page: $oks checks ($(grep -q '^SKIP' "$wd/check.log" && echo 'data only, no Chromium here' || echo 'data and the page in Chromium')), ${size:-?} bytes"
else
  echo "FAIL report.gpu.page: exit $rc, $(grep '^FAIL' "$wd/check.log" | head -3 | tr '\n' ' ')"
fi
"$B/bin/omniprof" convert -i "$db" -f svg -d "$wd" -o gpu >/dev/null 2>"$wd/svg.err"
if python3 -c "import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); sys.exit(0 if r.tag.endswith('svg') else 1)" "$wd/gpu_flamegraph.svg" 2>/dev/null
then echo "PASS report.gpu.svg: convert -f svg wrote a flame graph that parses"
else echo "FAIL report.gpu.svg: $(tail -2 "$wd/svg.err" | tr '\n' ' ')"; fi
