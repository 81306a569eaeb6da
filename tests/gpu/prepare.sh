#!/bin/sh
# prepare.sh — build what tests/gpu/run.sh needs into gpu-build/ (run HERE, on the build machine;
# the GPU machine has no -dev headers). Then hand gpu-build/ to the GPU machine (the device
# tool's `carry`) and run `bash tests/gpu/run.sh` there from the repo root.
# The GPU machine lacks libunwind and libdw (the CPU backend's call stacks and symbols, loaded for
# --sample; libcapstone for the instrumentation ELF reader linked into omniprof; libotf2 for -f otf2): they are shipped in gpu-build/runtime-libs with libelf (libdw needs its own version),
# which tests/gpu/run.sh puts on LD_LIBRARY_PATH. run.sh prints what ldd still misses there.
set -eu
cd "$(dirname "$0")/../.."
cmake -S . -B gpu-build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build gpu-build -j "$(nproc)"
mkdir -p gpu-build/runtime-libs
for lib in gpu-build/lib/libomniprof-sdk.so gpu-build/lib/libomniprof-tool.so gpu-build/lib/libomniprof-backend-cuda.so \
           gpu-build/lib/libomniprof-backend-cpu.so gpu-build/lib/libomniprof-output.so gpu-build/bin/omniprof; do
  ldd "$lib" | awk '/=>/ {print $3}' | grep -E 'libunwind|libdw|libelf|libcapstone|libopen-trace-format|libotf2' | while read -r dep; do
    cp -L "$dep" gpu-build/runtime-libs/ 2>/dev/null || true
  done
done
du -sh gpu-build/bin gpu-build/lib gpu-build/runtime-libs
