#!/bin/bash
# run_bench.sh BUILD_DIR — the five launch-overhead modes in one run on one card, three rounds
# interleaved: untraced; bare CUPTI kernel+memcpy activity; bare CUPTI activity + runtime/driver
# API activity + callbacks (and two diagnostic variants: callbacks on launches only, callbacks
# without API activity); omniprof kernel tracing; omniprof runtime+driver+kernel tracing (the omniprof modes
# run the untraced binary under the GPU test tool, records delivered to a buffer callback and
# counted, not written). Prints metric= lines and a summary table (µs per launch).
B=$(cd "$1" && pwd)
P=$B/bin/omniprof-bench-gpu-launch
TOOL=$B/lib/libomniprof-gpu-test-tool.so
export LD_LIBRARY_PATH=$B/lib:$B/runtime-libs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/card: /'
for round in 1 2 3; do
  timeout 120 "$P" 0 untraced
  timeout 120 "$P" 1 bare_kernel
  timeout 120 "$P" 2 bare_api
  timeout 120 "$P" 3 bare_launchcb
  timeout 120 "$P" 4 bare_apicb
  timeout 120 env OMNIPROF_GPU_TEST_OUTPUT=/dev/null OMNIPROF_GPU_TEST_KINDS=kernel-quiet LD_PRELOAD=$TOOL "$P" 0 omniprof_kernel
  timeout 120 env OMNIPROF_GPU_TEST_OUTPUT=/dev/null OMNIPROF_GPU_TEST_KINDS=api-quiet LD_PRELOAD=$TOOL "$P" 0 omniprof_api
done
