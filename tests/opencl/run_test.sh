#!/bin/bash
# run_test.sh BUILD_DIR SCENARIO — one OpenCL backend test on the machine's OpenCL (PoCL in CI):
# runs tests/opencl's workload under the test tool and checks the trace (check_trace.py).
#   trace      layer through OPENCL_LAYERS, every kind in buffer mode
#   callbacks  the same with OPENCL_API and KERNEL_DISPATCH callbacks
#   intercept  the tool wraps clEnqueueNDRangeKernel through the intercept table, tracing on
#   intercept_only  the intercept table alone (no tracing kind): the wrapper still chains
#   sdk_loads  no OPENCL_LAYERS: the SDK loads the backend, which puts itself into OPENCL_LAYERS
#   program_view  the program's stdout and exit status are the same traced and untraced
#   linked     the tool linked into the program (no LD_PRELOAD: runs in sanitizer builds too)
# Exit 77 (skip) when there is no OpenCL device.
set -u
B=$1; S=$2
HERE=$(cd "$(dirname "$0")" && pwd)
W=$B/bin/omniprof-ocl-workload
LAYER=$B/lib/libomniprof-backend-opencl.so
TOOL=$B/lib/libomniprof-ocl-test-tool.so
T=$(mktemp -d "${TMPDIR:-/tmp}/omniprof-ocl-$S.XXXXXX")
trap 'rm -rf "$T"' EXIT
# PoCL's kernel cache: one per scenario, so that tests running at once never build into one cache
export POCL_CACHE_DIR=${POCL_CACHE_DIR:-$B/pocl-cache/$S}

# untraced first: skips without a device, and gives the reference output
"$W" > "$T/plain.out" 2> "$T/plain.err"; rc=$?
if [ $rc = 77 ]; then cat "$T/plain.out"; exit 77; fi
[ $rc = 0 ] || { echo "FAIL: the workload fails untraced (exit $rc): $(tail -3 "$T/plain.err")"; exit 1; }

run() { # run ENV... : the workload under the tool
  env OCL_TEST_OUTPUT="$T/trace.jsonl" OCL_WORKLOAD_REPORT="$T/report.json" LD_PRELOAD="$TOOL" "$@" "$W" \
    > "$T/traced.out" 2> "$T/traced.err"
}
check() {
  python3 "$HERE/check_trace.py" "$T/trace.jsonl" "$T/report.json" "$@" || { echo "--- stderr:"; tail -20 "$T/traced.err"; exit 1; }
}
same_output() {
  cmp -s "$T/plain.out" "$T/traced.out" || { echo "FAIL: stdout differs traced vs untraced:"; diff "$T/plain.out" "$T/traced.out"; exit 1; }
}

case $S in
  trace) run OPENCL_LAYERS="$LAYER" || { echo "FAIL: traced run exit $?"; tail -5 "$T/traced.err"; exit 1; }
         check; same_output ;;
  callbacks) run OPENCL_LAYERS="$LAYER" OCL_TEST_CALLBACKS=1 || { echo "FAIL: exit $?"; tail -5 "$T/traced.err"; exit 1; }
         check --callbacks; same_output ;;
  intercept) run OPENCL_LAYERS="$LAYER" OCL_TEST_INTERCEPT=1 || { echo "FAIL: exit $?"; tail -5 "$T/traced.err"; exit 1; }
         check --intercept 26; same_output ;;
  intercept_only) run OCL_TEST_INTERCEPT=1 OCL_TEST_KINDS=none || { echo "FAIL: exit $?"; tail -5 "$T/traced.err"; exit 1; }
         check --intercept 26 --kinds none; same_output ;;
  sdk_loads) run || { echo "FAIL: exit $?"; tail -5 "$T/traced.err"; exit 1; }
         check; same_output ;;
  program_view) run OPENCL_LAYERS="$LAYER" OCL_TEST_KINDS=gpu || { echo "FAIL: exit $?"; tail -5 "$T/traced.err"; exit 1; }
         same_output; echo "OK: stdout identical traced and untraced:"; cat "$T/plain.out" ;;
  linked) env OCL_TEST_OUTPUT="$T/trace.jsonl" OCL_WORKLOAD_REPORT="$T/report.json" OPENCL_LAYERS="$LAYER" \
           "$B/bin/omniprof-ocl-workload-linked" > "$T/traced.out" 2> "$T/traced.err" ||
           { echo "FAIL: exit $?"; tail -5 "$T/traced.err"; exit 1; }
         check; same_output ;;
  *) echo "unknown scenario $S"; exit 2 ;;
esac
