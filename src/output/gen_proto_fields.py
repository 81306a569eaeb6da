#!/usr/bin/env python3
"""gen_proto_fields.py — writes a C header of the field numbers, encodings and enum values of
every message of a .proto file (proto2 or proto3), so that a protobuf writer names each field
and never spells its number. CMake runs it at build time (src/output/CMakeLists.txt) over the
vendored Perfetto schema, third_party/perfetto/perfetto_trace.proto; the header goes into the
build tree and is never committed.

    gen_proto_fields.py --proto FILE --prefix PF_ --out HEADER

For message M (nested messages and enums joined with '_': TrackEvent.Type is TrackEvent_Type)
and its field F the header defines, in one enum per message:
    PREFIX M_F        the field number
    PREFIX M_F_ENC    its encoding, a PB_ENC_* name of the protobuf writer (output/internal.h:
                      VARINT, ZIGZAG for sint32/sint64, I64, I32, LEN for strings and bytes,
                      MSG for an embedded message)
and for enum E and its value V:  PREFIX E_V  the value.
A packed repeated scalar (proto2: [packed = true]; proto3: unless [packed = false]) is
PB_ENC_LEN; a map field is a repeated entry message, PB_ENC_MSG. Package names are dropped
(one package per schema).

The parser reads the subset of the protobuf language that schemas like Perfetto's use:
messages, enums, oneofs, map fields, options, reserved and extensions ranges. Anything else
(groups, services, extend blocks) is refused with the line it is on, so a schema update that
needs more fails the build instead of producing a wrong header. tests/output/test_proto_fields.py
checks the header against protoc's own reading of the same file.
"""
import argparse
import os
import re
import sys

SCALARS = {
    "int32": "VARINT", "int64": "VARINT", "uint32": "VARINT", "uint64": "VARINT", "bool": "VARINT",
    "sint32": "ZIGZAG", "sint64": "ZIGZAG",
    "fixed64": "I64", "sfixed64": "I64", "double": "I64",
    "fixed32": "I32", "sfixed32": "I32", "float": "I32",
    "string": "LEN", "bytes": "LEN",
}

TOKEN = re.compile(r'''
    (?P<space>\s+)
  | (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<number>-?(?:0[xX][0-9a-fA-F]+|[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?))
  | (?P<ident>\.?[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
  | (?P<punct>[{}\[\]()<>;=,])
''', re.S | re.X)


class ProtoError(Exception):
    pass


def tokenize(text, path):
    out, pos, line = [], 0, 1
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m:
            raise ProtoError("%s:%d: cannot read %r" % (path, line, text[pos:pos + 20]))
        kind = m.lastgroup
        if kind not in ("space", "comment"):
            out.append((kind, m.group(), line))
        line += m.group().count("\n")
        pos = m.end()
    return out


class Parser:
    def __init__(self, tokens, path):
        self.t, self.i, self.path = tokens, 0, path
        self.messages = {}  # full name -> [(field, number, type name, label, packed)]
        self.enums = {}     # full name -> [(value name, number)]
        self.order = []     # ("message" | "enum", full name) in file order
        self.proto3 = False
        self.package = ""

    def fail(self, what):
        line = self.t[self.i][2] if self.i < len(self.t) else self.t[-1][2]
        raise ProtoError("%s:%d: %s" % (self.path, line, what))

    def peek(self, k=0):
        return self.t[self.i + k][1] if self.i + k < len(self.t) else None

    def take(self, want=None):
        if self.i >= len(self.t):
            self.fail("unexpected end of file")
        tok = self.t[self.i][1]
        if want is not None and tok != want:
            self.fail("expected '%s', found '%s'" % (want, tok))
        self.i += 1
        return tok

    def skip_statement(self):
        """An option, reserved or extensions statement: up to its ';'."""
        depth = 0
        while True:
            tok = self.take()
            if tok in "[{(":
                depth += 1
            elif tok in "]})":
                depth -= 1
            elif tok == ";" and depth <= 0:
                return

    def field_options(self):
        """[name = value, ...] -> {name: value}"""
        opts = {}
        if self.peek() != "[":
            return opts
        self.take("[")
        while True:
            name = self.take()
            if name == "(":  # custom option: (name).sub
                name = self.take()
                self.take(")")
                while self.peek() and self.peek().startswith("."):
                    name += self.take()
            self.take("=")
            opts[name] = self.take()
            if self.take() == "]":
                return opts

    def file(self):
        while self.i < len(self.t):
            tok = self.peek()
            if tok == "syntax":
                self.take()
                self.take("=")
                self.proto3 = self.take().strip("'\"") == "proto3"
                self.take(";")
            elif tok == "package":
                self.take()
                self.package = self.take()
                self.take(";")
            elif tok in ("import", "option", "edition"):
                self.skip_statement()
            elif tok == "message":
                self.message("")
            elif tok == "enum":
                self.enum("")
            elif tok == ";":
                self.take()
            else:
                self.fail("'%s' is not supported by gen_proto_fields.py" % tok)

    def message(self, scope):
        self.take("message")
        name = scope + self.take()
        fields = self.messages.setdefault(name, [])
        self.order.append(("message", name))
        self.take("{")
        while self.peek() != "}":
            tok = self.peek()
            if tok == "message":
                self.message(name + ".")
            elif tok == "enum":
                self.enum(name + ".")
            elif tok in ("option", "reserved", "extensions"):
                self.skip_statement()
            elif tok == ";":
                self.take()
            elif tok == "oneof":
                self.take()
                self.take()
                self.take("{")
                while self.peek() != "}":
                    if self.peek() == "option":
                        self.skip_statement()
                    else:
                        fields.append(self.field(None))
                self.take("}")
            elif tok in ("extend", "group", "service"):
                self.fail("'%s' is not supported by gen_proto_fields.py" % tok)
            else:
                label = self.take() if tok in ("optional", "repeated", "required") else None
                fields.append(self.field(label))
        self.take("}")

    def field(self, label):
        typ = self.take()
        if typ == "map":
            self.take("<")
            self.take()
            self.take(",")
            self.take()
            self.take(">")
            typ, label = "map", "repeated"
        elif typ == "group" or self.peek(1) != "=":
            self.fail("cannot read a field at '%s'" % typ)
        fname = self.take()
        self.take("=")
        number = int(self.take(), 0)
        opts = self.field_options()
        self.take(";")
        packed = opts.get("packed", "false" if not self.proto3 else "true") == "true"
        return (fname, number, typ, label, packed)

    def enum(self, scope):
        self.take("enum")
        name = scope + self.take()
        values = self.enums.setdefault(name, [])
        self.order.append(("enum", name))
        self.take("{")
        while self.peek() != "}":
            tok = self.peek()
            if tok in ("option", "reserved"):
                self.skip_statement()
            elif tok == ";":
                self.take()
            else:
                vname = self.take()
                self.take("=")
                values.append((vname, int(self.take(), 0)))
                self.field_options()
                self.take(";")
        self.take("}")

    def resolve(self, scope, typ):
        """'message' or 'enum' for type name typ used inside message scope (protobuf's rule:
        the innermost enclosing scope that declares the first component wins)."""
        pkg = self.package.split(".") if self.package else []
        if typ.startswith("."):
            cands = [typ[1:]]
        else:
            parts = pkg + scope.split(".")
            cands = [".".join(parts[:k] + [typ]) for k in range(len(parts), -1, -1)]
        # names are kept without the package
        strip = len(self.package) + 1
        cands = [c[strip:] if pkg and c.startswith(self.package + ".") else c for c in cands]
        for c in cands:
            if c in self.messages:
                return "message"
            if c in self.enums:
                return "enum"
        raise ProtoError("%s: type '%s' used in %s is not declared" % (self.path, typ, scope))


def encoding(parser, scope, typ, label, packed):
    """The PB_ENC_* name of a field (a map field is a repeated entry message)."""
    if typ == "map":
        return "MSG"
    if typ in SCALARS:
        enc = SCALARS[typ]
    elif parser.resolve(scope, typ) == "enum":
        enc = "VARINT"
    else:
        return "MSG"
    if label == "repeated" and enc != "LEN" and packed:
        return "LEN"
    return enc


def header(parser, prefix, proto_name):
    guard = re.sub(r"[^A-Z0-9]", "_", ("OMNIPROF_" + prefix + "FIELDS_H").upper())
    out = ["/* GENERATED by src/output/gen_proto_fields.py from",
           " * %s; do not edit." % proto_name,
           " * %sM_F: field F of message M; %sM_F_ENC: its encoding, a PB_ENC_* value (the"
           % (prefix, prefix),
           " * protobuf writer's header defines them; include it first); %sE_V: value V of enum E."
           % prefix,
           " * Nested names are joined with '_'. */",
           "#ifndef " + guard, "#define " + guard, ""]
    seen = {}

    def define(cname, value, where):
        if cname in seen:
            raise ProtoError("%s: %s and %s both become %s"
                             % (proto_name, seen[cname], where, cname))
        seen[cname] = where
        return "    %s = %s," % (cname, value)

    for kind, name in parser.order:
        cbase = prefix + name.replace(".", "_")
        if kind == "message":
            fields = parser.messages[name]
            if not fields:
                continue
            out.append("enum { /* message %s */" % name)
            for fname, number, typ, label, packed in fields:
                enc = encoding(parser, name, typ, label, packed)
                out.append(define("%s_%s" % (cbase, fname), number, name + "." + fname))
                out.append(define("%s_%s_ENC" % (cbase, fname), "PB_ENC_" + enc,
                                  name + "." + fname))
        else:
            values = parser.enums[name]
            if not values:
                continue
            out.append("enum { /* enum %s */" % name)
            for vname, number in values:
                out.append(define("%s_%s" % (cbase, vname), number, name + "." + vname))
        out.append("};")
    out += ["", "#endif", ""]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--proto", required=True)
    ap.add_argument("--prefix", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--name", help="the schema's name in the header comment (default: the path)")
    a = ap.parse_args()
    try:
        with open(a.proto, encoding="utf-8") as f:
            text = f.read()
        p = Parser(tokenize(text, a.proto), a.proto)
        p.file()
        h = header(p, a.prefix, a.name or a.proto)
    except (OSError, ProtoError) as e:
        print("gen_proto_fields.py: %s" % e, file=sys.stderr)
        return 1
    tmp = a.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(h)
    os.replace(tmp, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
