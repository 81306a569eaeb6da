#!/bin/bash
# run_nvtx.sh BUILD_DIR WORK [ROUNDS] — what one NVTX range costs (bench_nvtx.c), in one run:
# untraced; the GPU test tool taking the marker records through omniprof's NVTX injection and
# dropping them (the SDK path alone); `omniprof run --marker-trace` (records written to the
# database); the same with one constant message; the same through CUPTI's NVTX callbacks
# (OMNIPROF_CUDA_NVTX_CUPTI=true); without prefaulted buffers. ROUNDS (3) interleaved.
B=$(cd "$1" && pwd)
W=$2
ROUNDS=${3:-3}
P=$B/bin/omniprof-bench-nvtx
N=${NVTX_BENCH_N:-200000}
mkdir -p "$W"
export LD_LIBRARY_PATH=$B/lib:$B/runtime-libs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for round in $(seq 1 "$ROUNDS"); do
  "$P" "$N" 160 untraced
  OMNIPROF_GPU_TEST_KINDS=marker-quiet LD_PRELOAD=$B/lib/libomniprof-gpu-test-tool.so \
    "$P" "$N" 160 sdk_only
  "$B/bin/omniprof" run --marker-trace -d "$W" -o "m$round" -- "$P" "$N" 160 omniprof_db \
    | grep nvtx_ns
  "$B/bin/omniprof" run --marker-trace -d "$W" -o "s$round" -- "$P" "$N" 160 omniprof_db_same same \
    | grep nvtx_ns
  OMNIPROF_CUDA_NVTX_CUPTI=true "$B/bin/omniprof" run --marker-trace -d "$W" -o "c$round" -- \
    "$P" "$N" 160 omniprof_db_cupti | grep nvtx_ns
  OMNIPROF_BUFFER_PREFAULT=false "$B/bin/omniprof" run --marker-trace -d "$W" -o "f$round" -- \
    "$P" "$N" 160 omniprof_db_nofault | grep nvtx_ns
done
# `--marker-trace` alone records a CUDA program's NVTX ranges (the CUDA backend is their source)
python3 - "$W/m1_results.db" "$N" <<'PY'
import sqlite3, sys
n = sqlite3.connect(sys.argv[1]).execute(
    "SELECT count(*) FROM regions WHERE category = 'MARKER_RANGE_API'").fetchone()[0]
want = int(sys.argv[2]) + 1000
print("%s nvtx.marker_only: --marker-trace alone recorded %d NVTX ranges of %d" %
      ("PASS" if n == want else "FAIL", n, want))
PY
