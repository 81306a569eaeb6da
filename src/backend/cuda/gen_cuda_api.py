#!/usr/bin/env python3
"""gen_cuda_api.py — writes the CUDA backend's API rows from CUPTI's and NVTX's own headers.

Run by the build (src/backend/cuda/CMakeLists.txt), output into the build tree, never committed:
    gen_cuda_api.py CUDA_INCLUDE_DIR OUT_DIR CC

One row per callback id of cupti_runtime_cbid.h, cupti_driver_cbid.h and cupti_nvtx_cbid.h (the
single truth: an id CUPTI adds becomes a row at the next build). Each row says the call's name
(the id's name without CUPTI's "_v<digits>" suffix, as cuptiGetCallbackName gives it) and its
arguments:
  runtime, driver  the members of CUPTI's parameter struct `<id name>_params`
                   (generated_cuda_runtime_api_meta.h, generated_cuda_meta.h and their kin);
                   without one, the prototype in the API header (cuda_runtime_api.h,
                   crt/device_functions.h, cuda.h, cudaProfiler.h): `(void)` is a call without
                   arguments, other prototypes get a generated struct of the same layout;
  NVTX             the prototype of the `<name>_impl_fntype` typedef of NVTX's headers (CUPTI's
                   NVTX structs are incomplete: no struct for nvtxDomainResourceCreate, ...),
                   as a generated struct of the same layout as CUPTI's.
A row with neither is OP_CUDA_API_NONE, with the reason (Windows-only, removed from the API,
or needing headers this platform lacks).

Files written (only when their text changed, so that a rebuild compiles nothing new):
  cuda_api.def        the rows (X-macros, see its head)
  cuda_api_args.h     the generated argument structs
  include/omniprof/cuda_runtime_table.h   omniprof_cuda_runtime_table_t, the intercept table of
                                          every CUDA runtime function with a prototype
  include/omniprof/nvtx_table.h           omniprof_nvtx_table_t, every NVTX function
"""
import os
import re
import subprocess
import sys

LAUNCH_CONFIG_PARAM = "config"  # `const <struct> *config`: its fields are decoded too (launches)


def strip_comments(t):
    t = re.sub(r"/\*.*?\*/", " ", t, flags=re.S)
    return re.sub(r"//[^\n]*", " ", t)


def norm(s):
    return " ".join(s.replace("*", " * ").split()).replace(" *", "*").replace("* ", "*")


def read(inc, name):
    p = os.path.join(inc, name)
    return strip_comments(open(p, encoding="latin-1").read()) if os.path.exists(p) else ""


def cbids(text, prefix):
    out = []
    for m in re.finditer(r"\b%s(\w+)\s*=\s*(\d+)\s*," % prefix, text):
        if m.group(1) not in ("INVALID", "SIZE", "FORCE_INT"):
            out.append((m.group(1), int(m.group(2))))
    return out


def split_top(s, sep):
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
        if ch == sep and depth == 0:
            out.append(cur)
            cur = ""
            continue
        cur += ch
    out.append(cur)
    return out


def parse_decl(d):
    """'const char * name[4]' -> (type, name, is_array); function pointers -> (type, name, False)."""
    d = " ".join(d.split())
    m = re.search(r"\(\s*\*\s*(\w+)\s*\)", d)
    if m:
        return d.replace(m.group(0), "(*)"), m.group(1), False
    m = re.match(r"(.*?)\b(\w+)\s*((?:\[[^\]]*\]\s*)*)$", d)
    if not m or not m.group(1).strip():
        return None
    return m.group(1).strip(), m.group(2), bool(m.group(3))


def params_of(proto):
    ps = [p.strip() for p in split_top(proto, ",")]
    if ps == ["void"] or ps == [""]:
        return []
    out = []
    for p in ps:
        p = re.sub(r"__dv\([^)]*\)", "", p)
        p = re.sub(r"=.*$", "", p).strip()  # C++ default arguments (crt/device_functions.h)
        d = parse_decl(p)
        if not d:
            return None
        out.append((d[0], d[1]))
    return out


class Types:
    """typedefs and struct fields from the preprocessed headers, to classify a C type."""

    def __init__(self, pre):
        self.typedefs, self.fields = {}, {}
        pre = re.sub(r"__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)", " ", pre)
        for st in split_top(pre, ";"):
            st = " ".join(st.split())
            m = re.match(r"(?:typedef )?(struct|union) (\w+) ?(\{.*\})", st)
            if m and m.group(1) == "struct":
                self.fields.setdefault(m.group(2), self.parse_fields(m.group(3)[1:-1]))
            if not st.startswith("typedef "):
                continue
            body = st[8:]
            m = re.search(r"\(\s*\*\s*(\w+)\s*\)\s*\(", body)
            if m:
                self.typedefs[m.group(1)] = ("ptr",)
                continue
            m = re.match(r"(struct|union|enum) ?(\w*) ?(\{.*\})? ?(.*)$", body)
            if m:
                kind, tag, block, decls = m.groups()
                for dd in decls.split(","):
                    dd = dd.strip()
                    nm = re.search(r"(\w+)\s*(\[.*\])?$", dd)
                    if not nm:
                        continue
                    if "*" in dd or nm.group(2):
                        self.typedefs[nm.group(1)] = ("ptr",)
                    else:
                        self.typedefs[nm.group(1)] = (kind, tag or nm.group(1))
                        if block and kind == "struct":
                            self.fields.setdefault(nm.group(1), self.parse_fields(block[1:-1]))
                continue
            d = parse_decl(body)
            if d:
                self.typedefs[d[1]] = ("ptr",) if ("*" in d[0] or d[2]) else ("alias", d[0])

    @staticmethod
    def parse_fields(block):
        out = []
        for f in split_top(block, ";"):
            f = " ".join(f.split())
            if not f or "{" in f:
                continue
            parts = split_top(f, ",")
            first = parse_decl(parts[0])
            if not first:
                continue
            base = re.sub(r"\*", "", first[0]).strip()
            out.append(first)
            for p in parts[1:]:
                p = p.strip()
                nm = re.match(r"(\**)\s*(\w+)\s*(\[.*\])?$", p)
                if nm:
                    out.append((base + " " + nm.group(1), nm.group(2), bool(nm.group(3))))
        return out

    def classify(self, t, depth=0):
        """'P' pointer, 'S' string, 'U'/'I' integer, 'D' floating, ('R', tag) struct, None."""
        if "*" in t or "(" in t or "[" in t:
            return "S" if re.fullmatch(r"const char\s*\*", " ".join(t.split())) else "P"
        t = " ".join(re.sub(r"\b(const|volatile)\b", " ", t).split())
        if t.startswith("enum "):
            return "I"
        if t.startswith("struct "):
            return ("R", t.split()[1])
        if t.startswith("union "):
            return None
        if t in ("float", "double", "long double"):
            return "D"
        if "unsigned" in t or t in ("size_t", "_Bool", "uint8_t", "uint16_t", "uint32_t", "uint64_t", "uintptr_t"):
            return "U"
        if t in ("int", "long", "long long", "short", "char", "signed char", "int8_t", "int16_t", "int32_t",
                 "int64_t", "ssize_t", "long int", "long long int", "wchar_t"):
            return "I"
        td = self.typedefs.get(t)
        if not td or depth > 12:
            return None
        if td[0] == "ptr":
            return "P"
        if td[0] == "enum":
            return "I"
        if td[0] == "struct":
            return ("R", td[1] if td[1] in self.fields else t)
        if td[0] == "alias":
            return self.classify(td[1], depth + 1)
        return None


def decode_items(types, t, name, expr, disp, depth=0):
    """(kind, display name, C expression) of one parameter; structs by value give their fields."""
    c = types.classify(t)
    if c in ("P", "S", "U", "I", "D"):
        return [(c, disp, expr)]
    if isinstance(c, tuple) and depth < 2:
        out = []
        for ft, fn, arr in types.fields.get(c[1], []):
            if arr:
                continue
            sub = disp + fn.upper() if len(fn) == 1 else disp + "." + fn
            out += decode_items(types, ft, fn, expr + "." + fn, sub, depth + 1)
        return out
    return []


def decode_text(types, members):
    items = []
    for t, n in members:
        items += ["OP_CA(%s, \"%s\", a->%s)" % (k, d, e) for k, d, e in decode_items(types, t, n, n, n)]
        m = re.fullmatch(r"const\s+(\w+)\s*\*", " ".join(t.split()))
        if n == LAUNCH_CONFIG_PARAM and m and isinstance(types.classify(m.group(1)), tuple):
            tag = types.classify(m.group(1))[1]
            for ft, fn, arr in types.fields.get(tag, []):
                if arr:
                    continue
                for k, d, e in decode_items(types, ft, fn, fn, fn):
                    items.append("OP_CAG(a->%s, %s, \"%s\", a->%s->%s)" % (n, k, d, n, e))
    return " ".join(items)


def strip_version(name):
    m = re.match(r"(.*)_v\d+$", name)
    return m.group(1) if m else name


def meta_structs(texts):
    out = {}
    for t in texts:
        for m in re.finditer(r"typedef struct (\w+)_params_st\s*\{(.*?)\}\s*\w+\s*;", t, re.S):
            out[m.group(1)] = Types.parse_fields(m.group(2))
    return out


def prototypes(text, callconv):
    text = re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", " ", text, flags=re.M)  # preprocessor lines
    text = text.replace('extern "C"', "extern")
    out = {}
    for m in re.finditer(r"([\w\s\*]+?)\b%s\s+(\w+)\s*\(([^;{)]*(?:\([^)]*\)[^;{)]*)*)\)\s*;" % callconv, text):
        words = [w for w in m.group(1).replace("*", " * ").split()
                 if w not in ("extern", "__host__", "__device__", "__cudart_builtin__", "CUDART_DEVICE",
                              "static", "inline") and not w.startswith("__CUDA") and not w.startswith("__dv")]
        ret = norm(" ".join(words))
        ps = params_of(m.group(3))
        if ret and ps is not None:
            out.setdefault(m.group(2), (ret, ps))
    return out


def why_none(name):
    if re.search(r"D3D|WGL|cuGraphicsD3D", name):
        return "Windows only (Direct3D/WGL)"
    if name.startswith("cu64") or re.match(r"cu(da)?(Peer|MemPeer)(Register|Unregister|GetDevicePointer)", name):
        return "removed from the API"
    if name.startswith("__cuda"):
        return "nvcc-internal call (declared only for C++, in crt/host_runtime.h)"
    if re.search(r"EGL|Egl|NVN|NNSetAllocator", name):
        return "needs EGL/NVN headers (no CUPTI parameter struct)"
    return "removed or private: no CUPTI parameter struct, no prototype in this toolkit's headers"


def main():
    inc, out_dir, cc = sys.argv[1], sys.argv[2], sys.argv[3]
    # Meta headers beyond those cupti.h includes: used when they compile here (the VDPAU ones need
    # vdpau/vdpau.h; the removed-API one needs cudart_removed.h, which the toolkit does not ship).
    extra_ok, unusable = [], {}
    for f in ("generated_cudart_removed_meta.h", "generated_cuda_gl_interop_meta.h",
              "generated_cuda_vdpau_interop_meta.h", "generated_cudaGL_meta.h", "generated_cudaVDPAU_meta.h"):
        if not os.path.exists(os.path.join(inc, f)):
            continue
        r = subprocess.run([cc, "-fsyntax-only", "-x", "c", "-I", inc, "-"], capture_output=True, text=True,
                           input="#include <cupti.h>\n#include <%s>\n" % f)
        if r.returncode == 0:
            extra_ok.append(f)
            continue
        m = re.search(r"fatal error: ([\w/.]+)", r.stderr)
        for ident in meta_structs([read(inc, f)]):
            unusable[ident] = "CUPTI's parameter struct (%s) needs %s, absent here" % (f, m.group(1) if m else f)
    rt_structs = meta_structs([read(inc, f) for f in ["generated_cuda_runtime_api_meta.h"] + [
        f for f in extra_ok if "cudaGL" not in f and "cudaVDPAU" not in f]])
    drv_structs = meta_structs([read(inc, f) for f in ["generated_cuda_meta.h"] + [
        f for f in extra_ok if "cudaGL" in f or "cudaVDPAU" in f]])
    pre = subprocess.run([cc, "-E", "-P", "-x", "c", "-I", inc, "-"], capture_output=True, text=True, check=True,
                         input="#include <generated_cuda_runtime_api_meta.h>\n#include <generated_cuda_meta.h>\n"
                               "#include <generated_nvtx_meta.h>\n#include <cudaProfiler.h>\n" +
                               "".join("#include <%s>\n" % f for f in extra_ok if "removed" not in f)).stdout
    types = Types(pre)
    rt_protos = prototypes(read(inc, "cuda_runtime_api.h") + read(inc, "crt/device_functions.h") +
                           read(inc, "cuda_profiler_api.h"), r"CUDARTAPI(?:_CDECL)?")
    drv_protos = prototypes(read(inc, "cuda.h") + read(inc, "cudaProfiler.h") + read(inc, "cudaGL.h"), "CUDAAPI")
    nvtx_text = "".join(read(inc, "nvtx3/nvtxDetail/" + f) for f in (
        "nvtxTypes.h", "nvtxImplCuda_v3.h", "nvtxImplCudaRt_v3.h", "nvtxImplSync_v3.h"))
    nvtx_protos = {}
    for m in re.finditer(r"typedef\s+([\w\s\*]+?)\s*\(\s*NVTX_API\s*\*\s*(\w+)_impl_fntype\s*\)\s*\(([^;]*?)\)\s*;",
                         nvtx_text):
        nvtx_protos[m.group(2)] = (norm(m.group(1)), params_of(m.group(3)))
    nvtx_slots = {}
    for m in re.finditer(r"\bNVTX_CBID_(CORE2|CORE|CUDART|CUDA|OPENCL|SYNC)_(\w+)\s*=\s*(\d+)", nvtx_text):
        if m.group(2) not in ("INVALID", "SIZE", "FORCE_INT"):
            nvtx_slots["nvtx" + m.group(2)] = (m.group(1), int(m.group(3)))

    rows, arg_structs, rt_table, nvtx_table, none = [], [], [], [], []
    domains = (("RUNTIME", "cupti_runtime_cbid.h", "CUPTI_RUNTIME_TRACE_CBID_", rt_structs, rt_protos),
               ("DRIVER", "cupti_driver_cbid.h", "CUPTI_DRIVER_TRACE_CBID_", drv_structs, drv_protos),
               ("NVTX", "cupti_nvtx_cbid.h", "CUPTI_CBID_NVTX_", {}, nvtx_protos))
    for dom, hdr, prefix, structs, protos in domains:
        ids = cbids(read(inc, hdr), prefix)
        if not ids:
            sys.exit("gen_cuda_api.py: no callback ids in %s" % os.path.join(inc, hdr))
        for ident, cbid in ids:
            name = strip_version(ident)
            if dom != "NVTX" and ident in structs:
                members = [(t, n) for t, n, arr in structs[ident] if not arr]
                rows.append("OP_CUDA_API(%s, %d, %s, %s_params, %s)" % (dom, cbid, name, ident,
                                                                      decode_text(types, members)))
            else:
                base = re.sub(r"_pt(sz|ds)$", "", name)
                proto = protos.get(name) or protos.get(base)
                if re.search(r"D3D|WGL", name):  # declared under _WIN32 only
                    proto = None
                if proto is None or (ident in unusable and dom != "NVTX"):
                    why = unusable.get(ident) if dom != "NVTX" and ident in unusable else why_none(name)
                    rows.append("OP_CUDA_API_NONE(%s, %d, %s, \"%s\")" % (dom, cbid, name, why))
                    none.append((dom, name, why))
                    continue
                if not proto[1]:
                    rows.append("OP_CUDA_API_NOARGS(%s, %d, %s)" % (dom, cbid, name))
                else:
                    st = "op_cuda_args_%s_%d" % (dom.lower(), cbid)
                    arg_structs.append("typedef struct %s {\n%s} %s;" % (
                        st, "".join("    %s;\n" % (t.replace("(*)", "(*%s)" % n) if "(*)" in t else t + " " + n)
                                    for t, n in proto[1]), st))
                    rows.append("OP_CUDA_API(%s, %d, %s, %s, %s)" % (dom, cbid, name, st,
                                                                    decode_text(types, proto[1])))
            # the intercept tables: every runtime function with a prototype, every NVTX function
            if dom == "RUNTIME" and not name.startswith("__"):
                proto = rt_protos.get(name) or rt_protos.get(re.sub(r"_pt(sz|ds)$", "", name))
                if proto and name not in [r[0] for r in rt_table]:
                    rt_table.append((name, proto[0], proto[1]))
            if dom == "NVTX" and name in nvtx_protos and name in nvtx_slots:
                nvtx_table.append((name, nvtx_protos[name][0], nvtx_protos[name][1], nvtx_slots[name]))

    def decl(t, n):
        return t.replace("(*)", "(*%s)" % n) if "(*)" in t else "%s %s" % (t, n)

    def plist(ps):
        return ", ".join(decl(t, n) for t, n in ps) or "void"

    def retv(ret, nvtx):
        if ret == "void":
            return "(void)0"
        if ret.startswith("struct "):
            return "(%s){0}" % ret
        if ret == "cudaError_t":
            return "cudaErrorSymbolNotFound"
        if nvtx and ret == "int":
            return "NVTX_NO_PUSH_POP_TRACKING"
        return "(%s)0" % ret

    head = "/* %s — GENERATED by src/backend/cuda/gen_cuda_api.py from the CUDA toolkit's headers\n" \
           " * (%s); do not edit, do not commit. */\n"
    d = [head % ("cuda_api.def", inc),
         "/* OP_CUDA_API(DOMAIN, CBID, NAME, PARAMS_T, DECODE)  a call whose arguments CUPTI passes as\n"
         " *     PARAMS_T; DECODE is one OP_CA(KIND, \"name\", a->member) per decoded argument (KIND: U, I\n"
         " *     unsigned/signed integer, D floating, P pointer, S C string), OP_CAG(GUARD, ...) when it\n"
         " *     sits behind a pointer that may be NULL\n"
         " * OP_CUDA_API_NOARGS(DOMAIN, CBID, NAME)          a call without arguments\n"
         " * OP_CUDA_API_NONE(DOMAIN, CBID, NAME, WHY)       an id whose arguments are not known here\n"
         " * OP_CUDART_FN(NAME, RET, RETV, (PARAMS), (ARGS)) a CUDA runtime function of the runtime\n"
         " *     intercept table (RETV: the value, of type RET, a call returns when the runtime cannot\n"
         " *     be found)\n"
         " * OP_NVTX_FN(NAME, MODULE, SLOT, RET, RETV, (PARAMS), (ARGS)) an NVTX function: its slot in\n"
         " *     NVTX's injection table of MODULE (NVTX_CB_MODULE_<MODULE>) */\n"]
    for mac in ("OP_CUDA_API(D, C, N, P, X)", "OP_CUDA_API_NOARGS(D, C, N)", "OP_CUDA_API_NONE(D, C, N, W)",
                "OP_CUDART_FN(N, R, V, P, A)", "OP_NVTX_FN(N, M, S, R, V, P, A)"):
        nm = mac.split("(")[0]
        d.append("#ifndef %s\n#define %s\n#endif\n" % (nm, mac))
    d += [r + "\n" for r in rows]
    for name, ret, ps in rt_table:
        d.append("OP_CUDART_FN(%s, %s, %s, (%s), (%s))\n" % (name, ret, retv(ret, False), plist(ps),
                                                           ", ".join(n for _, n in ps)))
    for name, ret, ps, (mod, slot) in nvtx_table:
        d.append("OP_NVTX_FN(%s, %s, %d, %s, %s, (%s), (%s))\n" % (name, mod, slot, ret, retv(ret, True),
                                                                 plist(ps), ", ".join(n for _, n in ps)))
    for mac in ("OP_CUDA_API", "OP_CUDA_API_NOARGS", "OP_CUDA_API_NONE", "OP_CUDART_FN", "OP_NVTX_FN"):
        d.append("#undef %s\n" % mac)

    a = [head % ("cuda_api_args.h", inc),
         "/* Argument structs of the calls CUPTI's meta headers give no parameter struct for, in the\n"
         " * order of the call's prototype (the layout CUPTI's functionParams has). */\n",
         "#ifndef OP_CUDA_API_ARGS_H\n#define OP_CUDA_API_ARGS_H\n",
         "#include <cupti.h> /* the runtime and driver meta headers (they have no include guard) */\n",
         "#include <generated_nvtx_meta.h>\n#include <cudaProfiler.h>\n"] + [
             "#include <%s>\n" % f for f in extra_ok] + ["\n"]
    a += [s + "\n" for s in arg_structs]
    a.append("\n#endif\n")

    rth = [head % ("omniprof/cuda_runtime_table.h", inc),
           "/* The CUDA runtime intercept table (OMNIPROF_INTERCEPT_TABLE_CUDA_RUNTIME): one entry per\n"
           " * CUDA runtime function, in CUPTI's callback-id order (ids are only appended). tables[0] of the\n"
           " * delivery points at it (lib_version OMNIPROF_CUDA_RUNTIME_TABLE_VERSION). A tool replaces an\n"
           " * entry with its wrapper and calls the previous value from it; entries are never NULL.\n"
           " * Needs the CUDA toolkit's headers. docs/cuda.md says how the table reaches the program. */\n",
           "#ifndef OMNIPROF_CUDA_RUNTIME_TABLE_H\n#define OMNIPROF_CUDA_RUNTIME_TABLE_H\n\n",
           "#include <stdint.h>\n\n#include <cuda_runtime_api.h>\n\n",
           "#define OMNIPROF_CUDA_RUNTIME_TABLE_VERSION 1\n\n",
           "typedef struct omniprof_cuda_runtime_table_t {\n    uint64_t size; /* sizeof the table */\n"]
    rth += ["    %s (*%s)(%s);\n" % (ret, name, plist(ps)) for name, ret, ps in rt_table]
    rth.append("} omniprof_cuda_runtime_table_t;\n\n#endif\n")

    nvh = [head % ("omniprof/nvtx_table.h", inc),
           "/* The NVTX intercept table (OMNIPROF_INTERCEPT_TABLE_NVTX): one entry per NVTX function of\n"
           " * cupti_nvtx_cbid.h, in that order. tables[0] of the delivery points at it (lib_version\n"
           " * OMNIPROF_NVTX_TABLE_VERSION). A tool replaces an entry with its wrapper and calls the\n"
           " * previous value from it; entries are never NULL. Needs NVTX v3's headers (nvtx3/). */\n",
           "#ifndef OMNIPROF_NVTX_TABLE_H\n#define OMNIPROF_NVTX_TABLE_H\n\n#include <stdint.h>\n\n",
           "#include <nvtx3/nvToolsExt.h>\n#include <nvtx3/nvToolsExtCuda.h>\n",
           "#include <nvtx3/nvToolsExtCudaRt.h>\n#include <nvtx3/nvToolsExtSync.h>\n\n",
           "#define OMNIPROF_NVTX_TABLE_VERSION 1\n\n",
           "typedef struct omniprof_nvtx_table_t {\n    uint64_t size; /* sizeof the table */\n"]
    nvh += ["    %s (*%s)(%s);\n" % (ret, name, plist(ps)) for name, ret, ps, _ in nvtx_table]
    nvh.append("} omniprof_nvtx_table_t;\n\n#endif\n")

    for rel, text in (("cuda_api.def", d), ("cuda_api_args.h", a), ("include/omniprof/cuda_runtime_table.h", rth),
                      ("include/omniprof/nvtx_table.h", nvh)):
        path = os.path.join(out_dir, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        text = "".join(text)
        old = open(path).read() if os.path.exists(path) else None
        if old != text:
            with open(path, "w") as f:
                f.write(text)
    print("gen_cuda_api.py: %d rows (%d without known arguments), runtime table %d entries, NVTX table %d" % (
        len(rows), len(none), len(rt_table), len(nvtx_table)))


if __name__ == "__main__":
    main()
