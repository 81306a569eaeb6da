#!/bin/bash
# ctest_gpu.sh BUILD_DIR SCENARIO — one GPU test of the CUDA backend (CTest entry point; run.sh
# calls it too). Runs build/bin/omniprof-gpu-workloads SCENARIO under the GPU test tool and checks
# the trace with validate.py. Without a GPU: prints "SKIP: no CUDA GPU (...)" and exits 77.
# Scenario "nogpu" is the opposite: it runs only where there is NO GPU and checks that the
# backend turns itself off with one line while the program runs normally.
# Logs go to $OUT (or a temporary directory, removed at the end unless the test failed).
set -u
B=$(cd "$1" && pwd); S=$2
HERE=$(cd "$(dirname "$0")" && pwd)
if [ -z "${OUT:-}" ]; then
  OUT=$(mktemp -d)
  trap 'rc=$?; if [ $rc = 1 ]; then echo "logs kept in $OUT"; else rm -rf "$OUT"; fi' EXIT
fi
mkdir -p "$OUT"
TOOL=$B/lib/libomniprof-gpu-test-tool.so
have_gpu() { [ -e /dev/nvidia0 ] || [ -e /dev/nvidiactl ]; }

if [ "$S" = nogpu ]; then
  if have_gpu; then echo "SKIP: a GPU is present (this test checks the no-GPU path)"; exit 77; fi
  [ -f "$TOOL" ] || { echo "SKIP: test tool not built"; exit 77; }
  out=$(env LD_PRELOAD=$TOOL OMNIPROF_GPU_TEST_OUTPUT=$OUT/nogpu.jsonl sh -c 'echo hello; exit 3' 2>"$OUT/nogpu.err"); rc=$?
  n=$(grep -c "no NVIDIA GPU" "$OUT/nogpu.err")
  if [ "$out" = hello ] && [ $rc = 3 ] && [ "$n" = 1 ]; then echo "PASS nogpu: program ran (rc 3 kept), one line: $(grep 'no NVIDIA GPU' "$OUT/nogpu.err")"; exit 0; fi
  echo "FAIL nogpu: stdout='$out' rc=$rc lines-about-gpu=$n"; cat "$OUT/nogpu.err"; exit 1
fi

if ! have_gpu; then echo "SKIP: no CUDA GPU (no /dev/nvidia0 or /dev/nvidiactl)"; exit 77; fi
PROG=$B/bin/omniprof-gpu-workloads
[ -x "$PROG" ] || { echo "FAIL $S: $PROG not built (nvcc missing?)"; exit 1; }
export LD_LIBRARY_PATH=$B/lib:$B/runtime-libs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
T=$OUT/trace-$S.jsonl
rm -f "$T"
case $S in
  held)
    # CUPTI taken by another subscriber: one line from us, the program unaffected, no GPU records.
    # The holder's constructor subscribes at load; the SDK initializes only when main() calls
    # omniprof_initialize (OMNIPROF_INIT_AT_LOAD=false), as when a profiler was there first.
    timeout 120 env LD_PRELOAD=$TOOL OMNIPROF_INIT_AT_LOAD=false GPU_TEST_INIT_SDK=1 OMNIPROF_GPU_TEST_OUTPUT=$T \
      "$B/bin/omniprof-gpu-workloads-held" multistream \
      >"$OUT/held.out" 2>"$OUT/held.err"; rc=$?
    n=$(grep -c "CUPTI is already held" "$OUT/held.err"); named=$(grep -c "omniprof-test-holder" "$OUT/held.err")
    nk=$(grep -c '"k":"kernel"' "$T" 2>/dev/null); nk=${nk:-0}
    if [ $rc = 0 ] && grep -q '^EXPECT' "$OUT/held.out" && [ "$n" = 1 ] && [ "$named" -ge 1 ] && [ "$nk" = 0 ]; then
      echo "PASS held: program rc 0, one line naming the holder, 0 kernel records"; exit 0; fi
    echo "FAIL held: rc=$rc lines=$n named=$named kernels=$nk"; tail -5 "$OUT/held.err"; exit 1 ;;
  lazy) export CUDA_MODULE_LOADING=LAZY ;;
  exitthread)
    # exit() from a thread other than main while 20 kernels may still be in flight: all 70 arrive.
    timeout 120 env LD_PRELOAD=$TOOL OMNIPROF_GPU_TEST_OUTPUT=$T "$PROG" exitthread >"$OUT/$S.out" 2>"$OUT/$S.err"; rc=$?
    res=$(python3 "$HERE/validate.py" "$T" "$OUT/$S.out" 2>&1); vrc=$?
    if [ $rc = 0 ] && [ $vrc = 0 ]; then echo "PASS $S: exit status 0; $res"; exit 0; fi
    echo "FAIL $S: rc=$rc $res" | head -8; exit 1 ;;
  intercept)
    # The CUDA driver intercept table: the tool wraps the launch entries and counts the calls.
    timeout 120 env LD_PRELOAD=$B/lib/libomniprof-cuda-intercept.so:$TOOL OMNIPROF_GPU_TEST_INTERCEPT=1 \
      OMNIPROF_GPU_TEST_OUTPUT=$T "$PROG" multistream >"$OUT/intercept.out" 2>"$OUT/intercept.err"; rc=$?
    line=$(grep '"k":"intercept"' "$T" 2>/dev/null)
    res=$(python3 "$HERE/validate.py" "$T" "$OUT/intercept.out" 2>&1); vrc=$?
    if [ $rc = 0 ] && [ $vrc = 0 ] && echo "$line" | grep -q '"table":1,"launches":104}'; then
      echo "PASS intercept: 104/104 launches through the driver table; $res"; exit 0; fi
    echo "FAIL intercept: rc=$rc table/launches: ${line:-none}; validate: $res" | head -8; tail -3 "$OUT/intercept.err"; exit 1 ;;
esac
start=$(date +%s%N)
timeout 240 env LD_PRELOAD=$TOOL OMNIPROF_GPU_TEST_OUTPUT=$T "$PROG" "$S" >"$OUT/$S.out" 2>"$OUT/$S.err"; rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 )); secs="$((ms / 1000)).$(printf %03d $((ms % 1000)))"
if [ $rc != 0 ]; then echo "FAIL $S: program exit status $rc"; tail -5 "$OUT/$S.err"; exit 1; fi
res=$(python3 "$HERE/validate.py" "$T" "$OUT/$S.out" 2>&1); vrc=$?
echo "$res" > "$OUT/$S.validate"
if [ $vrc = 0 ]; then echo "PASS $S (${secs}s): $res"; exit 0; fi
echo "FAIL $S: $res" | head -20; exit 1
