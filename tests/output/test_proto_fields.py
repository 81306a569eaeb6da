#!/usr/bin/env python3
"""output.proto_fields — the Perfetto field numbers that the build generates
(src/output/gen_proto_fields.py -> <build>/src/output/gen/output/pftrace_fields.h) are the
schema's, and no protobuf field number is written by hand in src/.

  1. protoc reads third_party/perfetto/perfetto_trace.proto into a FileDescriptorSet (its own
     parser, not ours); the set is decoded here (standard library only) into the names the
     header must define: PF_<Message>_<field> = number, PF_<Message>_<field>_ENC = encoding,
     PF_<Enum>_<VALUE> = value, nested names joined with '_'. The header must define exactly
     these, with these values: nothing missing, nothing extra, nothing different.
  2. every call of a protobuf field writer (pb_uint, pb_int, pb_fixed64, pb_double, pb_bytes,
     pb_str, pb_text, pb_begin) under src/ outside the writer itself (protobuf.c, internal.h)
     is one of pftrace.c's PF_* macros, which take the field by name from the header.

usage: test_proto_fields.py --proto FILE --header FILE --src DIR
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from testlib import FAILS, check  # noqa: E402 (tests/testlib.py: the one assertion helper)

# FieldDescriptorProto.Type -> PB_ENC_* name (descriptor.proto's numbering)
TYPE_ENC = {1: "I64", 2: "I32", 3: "VARINT", 4: "VARINT", 5: "VARINT", 6: "I64", 7: "I32",
            8: "VARINT", 9: "LEN", 10: "GROUP", 11: "MSG", 12: "LEN", 13: "VARINT", 14: "VARINT",
            15: "I32", 16: "I64", 17: "ZIGZAG", 18: "ZIGZAG"}
PACKABLE = {"VARINT", "ZIGZAG", "I64", "I32"}
LABEL_REPEATED = 3


def varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def fields(b):
    """(number, value) of each field of one message: ints for varints and fixed, bytes for LEN."""
    i, out = 0, []
    while i < len(b):
        key, i = varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 1:
            v, i = int.from_bytes(b[i:i + 8], "little"), i + 8
        elif wt == 5:
            v, i = int.from_bytes(b[i:i + 4], "little"), i + 4
        elif wt == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        else:
            raise ValueError("wire type %d in a descriptor" % wt)
        out.append((num, v))
    return out


def first(fs, num, default=None):
    for n, v in fs:
        if n == num:
            return v
    return default


def signed64(v):
    v &= 0xFFFFFFFFFFFFFFFF
    return v - (1 << 64) if v >= 1 << 63 else v


def expected_names(fds):
    want = {}
    syntax = {"proto3": False}  # of the file being read: proto3 packs repeated scalars by default

    def enum(prefix, e):
        ef = fields(e)
        name = prefix + first(ef, 1).decode()
        for n, v in ef:
            if n == 2:
                vf = fields(v)
                want["PF_%s_%s" % (name, first(vf, 1).decode())] = str(signed64(first(vf, 2, 0)))

    def message(prefix, m):
        mf = fields(m)
        name = prefix + first(mf, 1).decode()
        opts = first(mf, 7)
        if opts is not None and first(fields(opts), 7, 0):
            return  # a map's entry message: protoc makes it, the schema does not declare it
        for n, v in mf:
            if n == 2:
                ff = fields(v)
                fname = first(ff, 1).decode()
                enc = TYPE_ENC[first(ff, 5)]
                fopts = first(ff, 8)
                packed = first(fields(fopts), 2) if fopts is not None else None
                if packed is None:
                    packed = syntax["proto3"]
                if first(ff, 4) == LABEL_REPEATED and enc in PACKABLE and packed:
                    enc = "LEN"
                want["PF_%s_%s" % (name, fname)] = str(first(ff, 3))
                want["PF_%s_%s_ENC" % (name, fname)] = "PB_ENC_" + enc
            elif n == 3:
                message(name + "_", v)
            elif n == 4:
                enum(name + "_", v)

    for n, f in fields(fds):
        if n != 1:
            continue
        ff = fields(f)
        syntax["proto3"] = first(ff, 12, b"proto2") == b"proto3"
        for k, v in ff:
            if k == 4:
                message("", v)
            elif k == 5:
                enum("", v)
    return want


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--proto", required=True)
    ap.add_argument("--header", required=True)
    ap.add_argument("--src", required=True)
    a = ap.parse_args()

    # 1. the header against protoc's reading of the schema
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "schema.pb")
        p = subprocess.run(["protoc", "-I", os.path.dirname(os.path.abspath(a.proto)),
                            "--descriptor_set_out=" + out, os.path.basename(a.proto)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        check(p.returncode == 0, "protoc reads %s (%s)" % (a.proto, p.stderr.strip()[-300:]))
        if p.returncode != 0:
            return 1
        with open(out, "rb") as f:
            want = expected_names(f.read())
    with open(a.header, encoding="utf-8") as f:
        text = f.read()
    got = dict(re.findall(r"^\s+(PF_\w+) = ([-\w]+),$", text, re.M))
    check(len(want) > 1000, "protoc gives the schema's names (%d)" % len(want))
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    wrong = sorted(k for k in set(want) & set(got) if want[k] != got[k])
    check(not missing, "every field, encoding and enum value is in the header (missing: %s)"
          % ", ".join(missing[:10]))
    check(not extra, "the header defines nothing the schema lacks (extra: %s)"
          % ", ".join(extra[:10]))
    check(not wrong, "every value is the schema's (different: %s)"
          % ", ".join("%s = %s, schema %s" % (k, got[k], want[k]) for k in wrong[:10]))
    # the fields the Perfetto writer relies on, spelled out once here as a reading aid
    for name, value in (("PF_Trace_packet", "1"), ("PF_TracePacket_track_event", "11"),
                        ("PF_TrackEvent_flow_ids_ENC", "PB_ENC_I64"),
                        ("PF_TrackEvent_Type_TYPE_SLICE_BEGIN", "1")):
        check(got.get(name) == value, "%s = %s (got %s)" % (name, value, got.get(name)))

    # 2. no field number by hand: every field writer call goes through a PF_* macro
    writer = re.compile(r"\bpb_(uint|int|fixed64|double|bytes|str|text|begin)\s*\(")
    bare = []
    for root, _, files in os.walk(a.src):
        for fn in files:
            if not fn.endswith((".c", ".h")) or fn in ("protobuf.c", "internal.h"):
                continue
            path = os.path.join(root, fn)
            with open(path, encoding="utf-8", errors="replace") as f:
                for no, line in enumerate(f, 1):
                    if writer.search(line) and not line.startswith("#define PF_"):
                        bare.append("%s:%d" % (os.path.relpath(path, a.src), no))
    check(not bare, "protobuf fields are written only by name, through pftrace.c's PF_* macros "
          "(other calls: %s)" % ", ".join(bare[:10]))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
