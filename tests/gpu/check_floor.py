#!/usr/bin/env python3
"""check_floor.py LIB — the bare-CUPTI floor of the PyTorch comparison (cupti_floor.c) leaves out
exactly the runtime API calls of omniprof's default OMNIPROF_CUDA_API_EXCLUDE (read here from
src/common/settings.def), so that `cupti_runtime` asks CUPTI for the records `--runtime-trace`
asks for. Runs without a GPU: CUPTI names its callback ids without a driver (CTest gpu.floor_exclude)."""
import ctypes
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEF = os.path.join(HERE, "..", "..", "src", "common", "settings.def")


def main():
    text = open(DEF).read()
    m = re.search(r'OP_SETTING\(CUDA_API_EXCLUDE,\s*STRING,\s*"([^"]*)"', text)
    if not m:
        print("FAIL: no CUDA_API_EXCLUDE row in settings.def")
        return 1
    want = {n for n in m.group(1).split(",") if n.startswith("cuda")}  # runtime calls (cu* are driver calls)
    lib = ctypes.CDLL(sys.argv[1])
    out = ctypes.create_string_buffer(4096)
    n = lib.omniprof_cupti_floor_excluded(None, 0, out, ctypes.c_size_t(len(out)))
    got_full = [x for x in out.value.decode().split(",") if x]
    got = {re.sub(r"_v\d+$", "", x) for x in got_full}
    print("settings.def runtime names: %s" % sorted(want))
    print("floor leaves out %d runtime callback ids: %s" % (n, got_full))
    ok = got == want and n == len(got_full)
    print(("PASS" if ok else "FAIL") + ": the floor's runtime exclusions equal OMNIPROF_CUDA_API_EXCLUDE's default"
          + ("" if ok else " (only in the setting: %s; only in the floor: %s)" % (sorted(want - got), sorted(got - want))))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
