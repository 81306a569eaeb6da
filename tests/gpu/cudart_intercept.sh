#!/bin/bash
# cudart_intercept.sh BUILD_DIR cpu|gpu — the CUDA runtime and NVTX intercept tables through a
# tool (cudart_intercept_tool.c) that wraps cudaMalloc, cudaMemcpy, cudaLaunchKernel,
# nvtxRangePushA and nvtxRangePop, counts them and calls the previous entries.
#   cpu: cudart_intercept_prog (C, shared CUDA runtime): runs without a GPU, every CUDA call
#        returns an error code; the program prints them.
#   gpu: omniprof-gpu-cudart-intercept (nvcc -cudart shared, real kernels); SKIP (77) without a
#        GPU.
# Each program runs once alone and once under the tool: its output and exit status must be the
# same, and the counts the program's own (2 3 4 5 5).
set -u
B=$(cd "$1" && pwd); MODE=$2
if [ -z "${OUT:-}" ]; then  # a folder of our own: removed at the end unless the test failed
  OUT=$(mktemp -d)
  trap 'rc=$?; if [ $rc = 1 ]; then echo "logs kept in $OUT"; else rm -rf "$OUT"; fi' EXIT
fi
mkdir -p "$OUT"
PRE=$B/lib/libomniprof-cudart-intercept.so
TOOL=$B/lib/libomniprof-cudart-intercept-tool.so
if [ "$MODE" = gpu ]; then
  if ! { [ -e /dev/nvidia0 ] || [ -e /dev/nvidiactl ]; }; then
    echo "SKIP: no CUDA GPU (no /dev/nvidia0 or /dev/nvidiactl)"; exit 77; fi
  PROG=$B/bin/omniprof-gpu-cudart-intercept
else
  PROG=$B/bin/cudart_intercept_prog
fi
for f in "$PRE" "$TOOL" "$PROG"; do [ -e "$f" ] || { echo "FAIL $MODE: $f not built"; exit 1; }; done
export LD_LIBRARY_PATH=$B/lib:$B/runtime-libs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
C=$OUT/rti-$MODE.counts
rm -f "$C"
timeout 120 "$PROG" >"$OUT/rti-$MODE.plain" 2>"$OUT/rti-$MODE.plain.err"; rc0=$?
timeout 120 env LD_PRELOAD="$PRE:$TOOL" OMNIPROF_RTI_OUTPUT="$C" "$PROG" >"$OUT/rti-$MODE.out" \
  2>"$OUT/rti-$MODE.err"; rc1=$?
want="tables=1,1 cudaMalloc=2 cudaMemcpy=3 cudaLaunchKernel=4 nvtxRangePushA=5 nvtxRangePop=5"
got=$(cat "$C" 2>/dev/null)
if [ $rc0 != $rc1 ]; then echo "FAIL $MODE: exit status $rc0 alone, $rc1 under the tool"; tail -3 "$OUT/rti-$MODE.err"; exit 1; fi
if ! cmp -s "$OUT/rti-$MODE.plain" "$OUT/rti-$MODE.out"; then
  echo "FAIL $MODE: output changed: '$(cat "$OUT/rti-$MODE.plain")' alone, '$(cat "$OUT/rti-$MODE.out")' under the tool"; exit 1; fi
if [ "$got" != "$want" ]; then
  echo "FAIL $MODE: counts '${got:-none}', expected '$want'"; tail -5 "$OUT/rti-$MODE.err"; exit 1; fi
# A process that inherits NVTX_INJECTION64_PATH naming the CUDA backend (omniprof's own NVTX
# injection) without the backend running gets NVTX's no-injection results (nvtx_inject.c (1)).
BK=$B/lib/libomniprof-backend-cuda.so
if [ "$MODE" = cpu ] && [ -e "$BK" ]; then
  timeout 120 env NVTX_INJECTION64_PATH="$BK" "$PROG" >"$OUT/rti-$MODE.inj" 2>"$OUT/rti-$MODE.inj.err"; rc2=$?
  if [ $rc0 != $rc2 ] || ! cmp -s "$OUT/rti-$MODE.plain" "$OUT/rti-$MODE.inj"; then
    echo "FAIL $MODE: with NVTX_INJECTION64_PATH=$BK and no backend: exit $rc2, '$(cat "$OUT/rti-$MODE.inj")'"
    exit 1
  fi
fi
echo "PASS $MODE: output unchanged ($(cat "$OUT/rti-$MODE.out")), exit status $rc1; $got"
