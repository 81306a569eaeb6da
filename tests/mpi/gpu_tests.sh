#!/bin/bash
# tests/mpi/gpu_tests.sh — the multi-GPU and NCCL checks of issue 17 (docs/multinode.md), run by
# tests/gpu/run.sh (part 4) on the GPU machine from the repo root. Usage: gpu_tests.sh BUILD_DIR.
# Prints PASS/FAIL/SKIP lines (run.sh gives the whole file 240 s: 110 + 110 + 115 s here at most; each takes seconds). Both need two GPUs and PyTorch; with fewer GPUs they SKIP with
# the reason. The workloads and the checks are tests/mpi/gpu_check.py's:
#  mpi.gpu.peer2   one process, two GPUs (--kernel-trace --memory-copy-trace): a fill kernel on
#                  each device and one 4 MiB copy from GPU 0 to GPU 1 (peer copy); the database has
#                  two GPU agents, kernels on both, and a 4 MiB copy whose source and destination
#                  agents are the two GPUs
#  mpi.gpu.pmc2    the same process under --pmc gpu__time_duration.sum smsp__inst_executed.sum:
#                  counters per device (each GPU's dispatches counted on its own agent, values > 0)
#  mpi.gpu.nccl2   torchrun, 2 processes x 1 GPU, NCCL all_reduce of 1 Mi floats 5 times
#                  (--nccl-trace): every rank's database has exactly 5 ncclAllReduce calls of
#                  4 MiB with communicator size 2 and its own rank, each with >= 1 kernel
#                  (view nccl_kernels)
set -u
B=$(cd "${1:-gpu-build}" && pwd)
OUT=${OUT:-/tmp/omniprof-mpi-gpu}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$B/lib:$B/runtime-libs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
HERE=$(cd "$(dirname "$0")" && pwd)
verdict() { # NAME RC MESSAGE
  if [ "$2" = 0 ]; then echo "PASS $1: $3"; elif [ "$2" = 77 ]; then echo "SKIP $1: $3"; else echo "FAIL $1: $3"; fi
}
skip_all() { verdict mpi.gpu.peer2 77 "$1"; verdict mpi.gpu.pmc2 77 "$1"; verdict mpi.gpu.nccl2 77 "$1"; exit 0; }
nvidia-smi -L >/dev/null 2>&1 || skip_all "no NVIDIA GPU"
n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
[ "$n" -ge 2 ] || skip_all "needs 2 GPUs, this machine has $n (run on nvidia-h100-x2)"
python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.device_count() >= 2 else 1)' 2>/dev/null ||
  skip_all "PyTorch does not see 2 CUDA devices"
[ -x "$B/bin/omniprof" ] || { verdict mpi.gpu_build 1 "$B/bin/omniprof missing"; exit 1; }

d=$OUT/peer2; rm -rf "$d"
timeout 110 "$B/bin/omniprof" run -d "$d" -o peer --kernel-trace --memory-copy-trace -- \
  python3 "$HERE/gpu_check.py" work-peer2 >"$OUT/peer2.out" 2>"$OUT/peer2.err"; rc=$?
if [ $rc = 0 ]; then msg=$(python3 "$HERE/gpu_check.py" check-peer2 "$d" 2>&1); rc=$?
else msg="omniprof run exit $rc: $(tail -3 "$OUT/peer2.err" | tr '\n' ' ')"; fi
verdict mpi.gpu.peer2 $rc "$(echo "$msg" | grep -E '^FAIL|check|exit' | head -4 | tr '\n' ' ')"

d=$OUT/pmc2; rm -rf "$d"
timeout 110 "$B/bin/omniprof" run -d "$d" -o pmc --kernel-trace --pmc gpu__time_duration.sum smsp__inst_executed.sum -- \
  python3 "$HERE/gpu_check.py" work-peer2 >"$OUT/pmc2.out" 2>"$OUT/pmc2.err"; rc=$?
if [ $rc = 0 ]; then msg=$(python3 "$HERE/gpu_check.py" check-pmc2 "$d" 2>&1); rc=$?
else msg="omniprof run exit $rc: $(tail -3 "$OUT/pmc2.err" | tr '\n' ' ')"; fi
verdict mpi.gpu.pmc2 $rc "$(echo "$msg" | grep -E '^FAIL|check|exit' | head -4 | tr '\n' ' ')"

d=$OUT/nccl2; rm -rf "$d"
timeout 115 python3 -m torch.distributed.run --standalone --nproc-per-node=2 --no-python \
  "$B/bin/omniprof" run --nccl-trace -d "$d" -o 'rank%rank%' -- python3 "$HERE/gpu_check.py" work-nccl2 \
  >"$OUT/nccl2.out" 2>"$OUT/nccl2.err"; rc=$?
if [ $rc = 0 ]; then msg=$(python3 "$HERE/gpu_check.py" check-nccl2 "$d" 2>&1); rc=$?
else msg="torchrun exit $rc: $(tail -3 "$OUT/nccl2.err" | tr '\n' ' ')"; fi
verdict mpi.gpu.nccl2 $rc "$(echo "$msg" | grep -E '^FAIL|check|exit' | head -4 | tr '\n' ' ')"
exit 0
