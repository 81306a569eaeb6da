#!/bin/bash
# tests/opencl/gpu_tests.sh BUILD_DIR — the OpenCL backend's tests on NVIDIA's OpenCL, for
# tests/gpu/run.sh (part 4; it reads the PASS/FAIL/SKIP lines). Runs the same scenarios as CI
# on PoCL (tests/opencl/run_test.sh), with the workload on the NVIDIA platform.
#
# The NVIDIA ICD: OCL_ICD_VENDORS when it is set (a directory of .icd files or one library),
# else /etc/OpenCL/vendors/nvidia.icd, else libnvidia-opencl.so.1 where the dynamic linker finds
# it (registered through a temporary OCL_ICD_VENDORS directory). Without it every test SKIPs with
# the reason. The ICD loader: the machine's libOpenCL.so.1, else the copy of ocl-icd the build
# carries (BUILD_DIR/lib/ocl-icd).
set -u
B=${1:-gpu-build}
B=$(cd "$B" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
SCEN="trace callbacks intercept sdk_loads program_view run"
skip_all() { for s in $SCEN; do echo "SKIP opencl.gpu.$s: $1"; done; exit 0; }

[ -x "$B/bin/omniprof-ocl-workload" ] && [ -f "$B/lib/libomniprof-backend-opencl.so" ] ||
  skip_all "the OpenCL backend or its workload is not built in $B (no OpenCL headers on the build machine)"

T=$(mktemp -d "${TMPDIR:-/tmp}/omniprof-ocl-gpu.XXXXXX")
trap 'rm -rf "$T"' EXIT
if [ -z "${OCL_ICD_VENDORS:-}" ]; then
  if [ -f /etc/OpenCL/vendors/nvidia.icd ]; then
    export OCL_ICD_VENDORS=/etc/OpenCL/vendors/nvidia.icd
  else
    lib=$(ldconfig -p 2>/dev/null | awk '/libnvidia-opencl\.so\.1/ {print $NF; exit}')
    [ -n "$lib" ] || skip_all "no NVIDIA OpenCL driver: OCL_ICD_VENDORS unset, no /etc/OpenCL/vendors/nvidia.icd, libnvidia-opencl.so.1 not found by ldconfig"
    mkdir -p "$T/vendors"; echo "$lib" > "$T/vendors/nvidia.icd"
    export OCL_ICD_VENDORS=$T/vendors
  fi
fi
# A loader with layer support (ocl-icd), ahead of the CUDA toolkit's libOpenCL.so.1 (no OPENCL_LAYERS
# support: the layer is never initialized), which /usr/local/cuda/lib64 on LD_LIBRARY_PATH would give.
icd=$(ldconfig -p 2>/dev/null | awk '/libOpenCL\.so\.1 / {print $NF}' | while read -r f; do
  dpkg -S "$(readlink -f "$f")" 2>/dev/null | grep -q '^ocl-icd' && { echo "$f"; break; }; done)
if [ -n "$icd" ]; then
  mkdir -p "$T/loader"; ln -s "$icd" "$T/loader/libOpenCL.so.1"
  export LD_LIBRARY_PATH=$T/loader:${LD_LIBRARY_PATH:-}; loader="ocl-icd's $icd (first on LD_LIBRARY_PATH)"
elif ldconfig -p 2>/dev/null | grep -q 'libOpenCL\.so\.1 '; then loader="the machine's libOpenCL.so.1"
elif [ -f "$B/lib/ocl-icd/libOpenCL.so.1" ]; then
  export LD_LIBRARY_PATH=$B/lib/ocl-icd:${LD_LIBRARY_PATH:-}; loader="ocl-icd carried in $B/lib/ocl-icd"
else skip_all "no OpenCL ICD loader (libOpenCL.so.1) on this machine and none carried in $B/lib/ocl-icd"; fi
echo "opencl: ICD vendors $OCL_ICD_VENDORS, loader: $loader"
# what a failure needs to be understood on a machine we reach rarely: the loader's file and package
ldconfig -p 2>/dev/null | grep -E 'libOpenCL|libnvidia-opencl' | sed 's/^/opencl: /'
for f in $(ldconfig -p 2>/dev/null | awk '/libOpenCL\.so\.1 / {print $NF}'); do
  echo "opencl: $f -> $(readlink -f "$f"); $(dpkg -S "$(readlink -f "$f")" 2>/dev/null | head -1)"
done
export OCL_WORKLOAD_PLATFORM=NVIDIA

for s in $SCEN; do
  if [ "$s" = run ]; then out=$(python3 "$HERE/test_run.py" "$B" 2>&1); rc=$?
  else out=$(bash "$HERE/run_test.sh" "$B" "$s" 2>&1); rc=$?; fi
  msg=$(echo "$out" | head -4 | tr '\n' ' ' | cut -c1-400)
  [ $rc = 0 ] || { echo "--- opencl.gpu.$s output:"; echo "$out" | sed 's/^/  /'; echo "---"; }
  if [ $rc != 0 ] && [ "$s" = trace ]; then # the loader's own account of the layer (ocl-icd, Khronos)
    echo "--- the workload with OPENCL_LAYERS and the loader's debug output:"
    OPENCL_LAYERS=$B/lib/libomniprof-backend-opencl.so OCL_ICD_DEBUG=15 OCL_ICD_ENABLE_TRACE=1 \
      timeout 60 "$B/bin/omniprof-ocl-workload" 2>&1 >/dev/null | head -40 | sed 's/^/  /'; echo "---"
  fi
  case $rc in
    0) echo "PASS opencl.gpu.$s: $msg" ;;
    77) echo "SKIP opencl.gpu.$s: $msg" ;;
    *) echo "FAIL opencl.gpu.$s: $msg" ;;
  esac
done
