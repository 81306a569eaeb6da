#!/bin/bash
# tests/causal/gpu_tests.sh — hook for tests/gpu/run.sh (part 4): causal profiling of a GPU
# program (gpu_causal.cu) under `omniprof causal -g`. Prints PASS/FAIL lines.
# Usage: gpu_tests.sh BUILD_DIR
set -u
B=${1:?build dir}
prog=$B/bin/causaltest_gpu_causal
[ -x "$prog" ] || { echo "FAIL causal.gpu: $prog is not built (nvcc)"; exit 1; }
wd=$(mktemp -d); trap 'rm -rf "$wd"' EXIT
cd "$wd" || exit 1
"$B/bin/omniprof" causal -g -s 0,0,50,100 --experiment-ms 200 -o profile.coz -d db -- "$prog" 8 4 >out.txt 2>err.txt
rc=$?
pass() { echo "PASS causal.gpu.$1: $2"; }
fail() { echo "FAIL causal.gpu.$1: $2"; }
if [ $rc = 0 ] && grep -q 'gpu_causal: done' out.txt; then pass run "exit 0, output unchanged"; else fail run "exit $rc: $(tail -3 err.txt | tr '\n' ' ')"; fi
n=$(grep -c '^experiment' profile.coz 2>/dev/null || echo 0)
steps=$(grep -c $'^throughput-point\tname=step\t' profile.coz 2>/dev/null || echo 0)
if [ "$n" -ge 10 ] && [ "$steps" -ge 10 ]; then pass nvtx "$n experiments measured by the NVTX range 'step' ($steps points)"
else fail nvtx "$n experiments, $steps with the NVTX point 'step'"; fi
db=$(find db -name '*_results.db' | head -1)
k=$(python3 -c "import sqlite3,sys; c=sqlite3.connect('file:'+sys.argv[1]+'?mode=ro',uri=True); print(c.execute('select count(*) from kernels').fetchone()[0])" "$db" 2>/dev/null || echo 0)
if [ "${k:-0}" -ge 10 ]; then pass kernels "$k kernel dispatches beside the experiments"; else fail kernels "$k kernel dispatches in $db"; fi
line=$(grep -n 'LINE_PREPARE' "$(dirname "$0")/gpu_causal.cu" 2>/dev/null | cut -d: -f1)
sel=$(grep -c "gpu_causal.cu:$line" profile.coz 2>/dev/null || echo 0)
if [ "$sel" -ge 3 ]; then pass selection "$sel experiments on the CPU line that prepares each step"; else fail selection "$sel experiments on gpu_causal.cu:$line"; fi
"$B/bin/omniprof" summary -i "$db" >summary.txt 2>&1
if grep -q 'OMNIPROF CAUSAL PROFILE' summary.txt; then pass summary "omniprof summary ranks the CPU lines"; else fail summary "$(tail -2 summary.txt | tr '\n' ' ')"; fi
