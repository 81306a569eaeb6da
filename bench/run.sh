#!/bin/sh
# run.sh BUILD_DIR — every CPU-side benchmark, one after the other (`make bench`). Each prints
# `metric=<name> value=<n> unit=<u>` lines; docs/PERFORMANCE.md holds the numbers measured and
# the machine. GPU benchmarks run on the GPU machine from tests/gpu/run.sh. Set BENCH_QUICK=1
# for a short pass (smaller record counts). Takes about 5 minutes in full on a 2-core VM.
set -u
BUILD=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
quick=${BENCH_QUICK:-0}
status=0
section() { printf '\n== %s\n' "$1"; }
run() { "$@" || { echo "bench: '$*' failed ($?)" >&2; status=1; }; }

section "SDK buffers (bench/sdk)"
if [ "$quick" = 1 ]; then BENCH_SCALE=10 OMNIPROF_LOG_LEVEL=error run "$BUILD/bin/bench_sdk_buffer"
else OMNIPROF_LOG_LEVEL=error run "$BUILD/bin/bench_sdk_buffer"; fi

section "database ingest (bench/db)"
run "$BUILD/bin/bench_db_ingest"
if [ "$quick" = 1 ]; then BENCH_DB_GPU_RECORDS=300000 run "$BUILD/bin/bench_db_gpu"
else run "$BUILD/bin/bench_db_gpu"; fi

section "database whole after a traced program exits, GPU-like records without a GPU (bench/db/bench_db_close.py)"
if [ "$quick" = 1 ]; then run python3 "$here/db/bench_db_close.py" "$BUILD" --seconds 2 --records 50000 --rounds 2
else run python3 "$here/db/bench_db_close.py" "$BUILD" --rounds 3; fi

section "capture through omniprof run (bench/tool)"
if [ "$quick" = 1 ]; then n=2000000; m=10000000; else n=10000000; m=100000000; fi
run python3 "$here/tool/run_bench.py" "$BUILD/bin/omniprof" "$BUILD/bin/bench_tool_capture" 2 $n $m

section "post-processing (bench/output)"
if [ "$quick" = 1 ]; then run sh "$here/output/bench_output.sh" "$BUILD" 1000000
else run sh "$here/output/bench_output.sh" "$BUILD"; fi

section "HTML report (bench/output/bench_report.py)"
if [ "$quick" = 1 ]; then run python3 "$here/output/bench_report.py" "$BUILD" 1000000
else run python3 "$here/output/bench_report.py" "$BUILD"; fi

section "CPU sampling overhead (bench/cpu)"
run python3 "$here/cpu/bench_sampling.py" "$BUILD"

section "Python sampling overhead, Python frames at 1 kHz (bench/cpu/bench_python.py)"
if [ "$quick" = 1 ]; then run python3 "$here/cpu/bench_python.py" "$BUILD" 2
else run python3 "$here/cpu/bench_python.py" "$BUILD" 5; fi

section "database whole after a sampled program exits, symbol indexes vs libdw (bench/cpu/bench_close.py)"
if [ "$quick" = 1 ]; then run python3 "$here/cpu/bench_close.py" "$BUILD" 3 1
else run python3 "$here/cpu/bench_close.py" "$BUILD" 10 3; fi

section "causal profiling against Coz (bench/causal)"
if [ "$quick" = 1 ]; then run python3 "$here/causal/bench_causal.py" "$BUILD" 1 0.5
else run python3 "$here/causal/bench_causal.py" "$BUILD" 3; fi

section "function instrumentation (bench/instrument)"
run python3 "$here/instrument/bench_instrument.py" "$BUILD"

section "OpenCL enqueue cost, traced vs untraced (bench/opencl, PoCL)"
if [ -x "$BUILD/bin/bench_opencl_enqueue" ]; then
  if [ "$quick" = 1 ]; then run python3 "$here/opencl/run_bench.py" "$BUILD" 5000 3
  else run python3 "$here/opencl/run_bench.py" "$BUILD" 20000 5; fi
else echo "skipped: the OpenCL backend is not built"; fi

section "omniprof analyze: 10 M events, 1,000 merged ranks (bench/analyze)"
if [ "$quick" = 1 ]; then run python3 "$here/analyze/bench_analyze.py" "$BUILD" 1000000 100 10000
else run python3 "$here/analyze/bench_analyze.py" "$BUILD"; fi

exit $status
