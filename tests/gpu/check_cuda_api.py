#!/usr/bin/env python3
"""check_cuda_api.py TEST_CUDA_API CUDA_INCLUDE_DIR — every callback id of cupti_runtime_cbid.h,
cupti_driver_cbid.h and cupti_nvtx_cbid.h (read here, independently of the generator) has a row
in the generated table with its name and known arguments, except ids the toolkit itself does not
describe; for each of those the reason is checked against the headers: a Direct3D/WGL name for
"Windows only"; for "needs <header>", that header is absent; otherwise no `<id>_params` struct in
CUPTI's meta headers and no prototype of the function in the toolkit's headers. Prints the count
and the names of those ids by reason. No GPU needed."""
import collections
import glob
import os
import re
import subprocess
import sys
import tempfile


def main():
    exe, inc = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        dump = os.path.join(tmp, "rows.txt")
        r = subprocess.run([exe, "--dump", dump], capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stdout + r.stderr)
            print("FAIL: %s exited %d" % (exe, r.returncode))
            return 1
        rows = {}
        for line in open(dump):
            dom, cbid, name, known, why = line.rstrip("\n").split(" ", 4)
            rows[(dom, int(cbid))] = (name, known == "1", why)
    fails = []
    meta = "".join(open(f, encoding="latin-1").read() for f in glob.glob(os.path.join(inc, "generated_*_meta.h")))
    protos = "".join(open(f, encoding="latin-1").read() for f in glob.glob(os.path.join(inc, "*.h")) +
                     glob.glob(os.path.join(inc, "crt", "*.h")) + glob.glob(os.path.join(inc, "nvtx3", "*.h")))
    protos = re.sub(r"/\*.*?\*/", " ", protos, flags=re.S)
    unknown = collections.defaultdict(list)
    total = 0
    for dom, hdr, prefix in (("RUNTIME", "cupti_runtime_cbid.h", "CUPTI_RUNTIME_TRACE_CBID_"),
                             ("DRIVER", "cupti_driver_cbid.h", "CUPTI_DRIVER_TRACE_CBID_"),
                             ("NVTX", "cupti_nvtx_cbid.h", "CUPTI_CBID_NVTX_")):
        text = open(os.path.join(inc, hdr)).read()
        for m in re.finditer(r"\b%s(\w+)\s*=\s*(\d+)\s*," % prefix, text):
            ident, cbid = m.group(1), int(m.group(2))
            if ident in ("INVALID", "SIZE", "FORCE_INT"):
                continue
            total += 1
            name = re.sub(r"_v\d+$", "", ident)
            row = rows.get((dom, cbid))
            if not row:
                fails.append("%s %s (%d): no row" % (dom, ident, cbid))
                continue
            if row[0] != name:
                fails.append("%s %d: row name %s, header name %s" % (dom, cbid, row[0], name))
            if row[1]:
                continue
            base = re.sub(r"_pt(sz|ds)$", "", name)
            needs = re.search(r"needs (\S+), absent here", row[2])
            if needs:  # CUPTI's struct exists, but its header does not compile here
                if any(os.path.exists(os.path.join(d, needs.group(1))) for d in (inc, "/usr/include")):
                    fails.append("%s %s: the row says '%s', but it is there" % (dom, name, row[2]))
            elif row[2].startswith("Windows only"):
                if not re.search(r"D3D|WGL", name):
                    fails.append("%s %s: not a Direct3D/WGL call, but the row says '%s'" % (dom, name, row[2]))
            elif row[2].startswith("nvcc-internal") or row[2].startswith("needs EGL"):
                if not re.search(r"^__cuda|EGL|Egl|NVN|NNSetAllocator", name):
                    fails.append("%s %s: the row says '%s'" % (dom, name, row[2]))
            elif re.search(r"\b%s_params_st\b" % re.escape(ident), meta):
                fails.append("%s %s: CUPTI has a parameter struct, but the row says '%s'" % (dom, name, row[2]))
            elif re.search(r"\b(%s|%s)\s*\(\s*[\w\s\*,]*\)\s*;" % (re.escape(name), re.escape(base)), protos):
                fails.append("%s %s: the headers declare it, but the row says '%s'" % (dom, name, row[2]))
            unknown[row[2]].append(name)
    n_unknown = sum(len(v) for v in unknown.values())
    print("%d callback ids, %d with their arguments decoded, %d whose arguments the toolkit does not describe:"
          % (total, total - n_unknown, n_unknown))
    for why, names in sorted(unknown.items()):
        print("  %3d %s: %s" % (len(names), why, " ".join(names)))
    for f in fails[:20]:
        print("FAIL: " + f)
    if fails:
        print("FAIL: %d problems" % len(fails))
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
