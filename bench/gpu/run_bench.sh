#!/bin/bash
# run_bench.sh BUILD_DIR [ROUNDS] — the launch-overhead modes in one run on one card, ROUNDS (5)
# rounds interleaved (every mode once per round, in the same order). Bare CUPTI configurations
# (bench_launch.cu modes 1-7: which CUPTI setting costs what, alone) run beside omniprof's:
# kernel tracing (KERNEL_DISPATCH + MEMORY_COPY; activity mode, with and without driver-launch
# records) and runtime+driver API + kernel tracing (activity mode; callback mode with decoded
# arguments). The omniprof modes run the untraced binary under the GPU test tool (records
# delivered to a buffer callback and counted, not written). Prints metric= lines.
B=$(cd "$1" && pwd)
ROUNDS=${2:-5}
P=$B/bin/omniprof-bench-gpu-launch
TOOL=$B/lib/libomniprof-gpu-test-tool.so
export LD_LIBRARY_PATH=$B/lib:$B/runtime-libs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/card: /'
om() { # om LABEL KINDS [VAR=VALUE...]
  local label=$1 kinds=$2; shift 2
  timeout 120 env OMNIPROF_GPU_TEST_OUTPUT=/dev/null OMNIPROF_GPU_TEST_KINDS=$kinds LD_PRELOAD=$TOOL "$@" "$P" 0 "$label"
}
for round in $(seq 1 "$ROUNDS"); do
  echo "round=$round"
  timeout 120 "$P" 0 untraced
  timeout 120 "$P" 1 bare_kernel
  timeout 120 "$P" 5 bare_kernel_rtact
  timeout 120 "$P" 7 bare_kernel_launchact
  timeout 120 "$P" 3 bare_launchcb
  timeout 120 "$P" 4 bare_apicb
  timeout 120 "$P" 6 bare_api_act
  timeout 120 "$P" 2 bare_api_cb
  om omniprof_kernel kernel-quiet
  om omniprof_kernel_nodrv kernel-quiet OMNIPROF_CUDA_DRIVER_LAUNCHES=false
  om omniprof_api api-quiet
  om omniprof_api_args api-quiet OMNIPROF_CUDA_API_ARGS=true
done
