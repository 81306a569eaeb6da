#!/usr/bin/env python3
"""gen_tables.py — reads src/db/schema/tables.sql, the one list of the database's tables, and
writes what the C code and the views need to know about them (run by the build, src/db/
CMakeLists.txt; the outputs go into the build tree and are never committed):

    tables_gen.h      the table rows as X-macros: OP_DB_TABLES(X) with X(ENUM, "base name"),
                      the counts, and the columns a merge must treat specially:
                      OP_DB_TIME_COLUMNS(X)     X(ENUM, "column")             (-- @time)
                      OP_DB_REF_COLUMNS(X)      X(ENUM, "column", REF_ENUM)   (-- @ref TABLE)
                      OP_DB_JSON_REF_COLUMNS(X) X(ENUM, "column", "key", REF_ENUM)
                                                                          (-- @json-ref KEY=TABLE)
                      OP_DB_INSERTS(X)          X(ST_NAME, "INSERT ...")  the writer's one-row
                                                insert of each table (below)
    rocpd_views.sql   the plain-named view of every table (CREATE VIEW "base" AS SELECT * FROM
                      "base{{uuid}}")

usage: gen_tables.py TABLES_SQL OUT_DIR

The annotations are written at the end of a column's line in tables.sql (its head comment says
how). The enum name of a table is mechanical: rocpd_info_X and rocpd_X give T_X, omniprof_X gives
T_OP_X (upper case). A column named start, end, timestamp, init or fini must be marked @time:
forgetting it would leave that column on its process's clock after a clock-aligned merge, so the
build stops with the table and column named instead.

The writer's insert of a table names its columns in tables.sql order, each as a parameter (?),
except: the INTEGER PRIMARY KEY id (the database numbers the rows; "-- @given" makes it a
parameter), generated columns (guid), columns marked "-- @unset" (left to their default), "nid"
(always 1: one node per database), "pid" (the process row's id, written $PID and expanded by the
writer) and columns marked "-- @const SQL" (that literal). A comment line right below the CREATE
TABLE line may hold table notes: "-- @on-conflict REPLACE|IGNORE" (INSERT OR ...). Its statement
is ST_<NAME> with NAME the table enum without T_ (ST_KERNEL_DISPATCH, ST_OP_CPU_SAMPLE), and the
parameter numbers are P_<NAME>_<COLUMN> (1-based, for sqlite3_bind_*; cells of a batched row are
one less).
"""
import os
import re
import sys

TIME_NAMES = {"start", "end", "timestamp", "init", "fini"}

TABLE_RE = re.compile(r'^CREATE TABLE IF NOT EXISTS "([a-z_]+)\{\{uuid\}\}" \($')
COLUMN_RE = re.compile(r'^\s+"([a-z_]+)"\s+[A-Z]+')
NOTE_RE = re.compile(r'--\s*(@\S+)(.*)$')


def fail(path, lineno, msg):
    sys.stderr.write("%s:%d: %s\n" % (path, lineno, msg))
    sys.exit(1)


def enum_name(base):
    if base.startswith("rocpd_info_"):
        return "T_" + base[len("rocpd_info_"):].upper()
    if base.startswith("rocpd_"):
        return "T_" + base[len("rocpd_"):].upper()
    if base.startswith("omniprof_"):
        return "T_OP_" + base[len("omniprof_"):].upper()
    return None


TABLE_NOTES = {}  # base -> [(note, args)]: notes on comment lines above the first column
COLUMN_DECL = {}  # (base, column) -> the column's declaration (its line without the comment)


def parse(path):
    """[(base, [(column, [(note, args)], lineno)])] in file order."""
    tables = []
    cur = None
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            m = TABLE_RE.match(line)
            if m:
                if cur is not None:
                    fail(path, lineno, "CREATE TABLE inside the table %s" % cur[0])
                cur = (m.group(1), [], lineno)
                tables.append(cur)
                continue
            if cur is None:
                continue  # comments between tables (the head documents the annotations)
            if line.startswith(");"):
                cur = None
                continue
            c = COLUMN_RE.match(line)
            note = NOTE_RE.search(line)
            if c:
                cur[1].append((c.group(1), [], lineno))
                COLUMN_DECL[(cur[0], c.group(1))] = line.split("--")[0]
            if note and not cur[1] and line.lstrip().startswith("--"):
                TABLE_NOTES.setdefault(cur[0], []).append((note.group(1), note.group(2).split()))
                continue
            if note:  # on the column's line, or on a comment line below it (a long note)
                if not cur[1] or (not c and not line.lstrip().startswith("--")):
                    fail(path, lineno, "an annotation on a line that declares no column")
                cur[1][-1][1].append((note.group(1), note.group(2).split()))
    if cur is not None:
        fail(path, cur[2], "the table %s is not closed by a line starting with ');'" % cur[0])
    return tables


def inserts(path, tables, enums):
    """The OP_DB_INSERTS X-macro and the P_<NAME>_<COLUMN> parameter numbers (module doc)."""
    rows, params = [], []
    for base, cols, lineno in tables:
        name = enums[base][2:]
        conflict = ""
        for note, args in TABLE_NOTES.get(base, []):
            if note == "@on-conflict" and len(args) == 1 and args[0] in ("REPLACE", "IGNORE"):
                conflict = " OR " + args[0]
            else:
                fail(path, lineno, "table %s: unknown table note '%s %s' (valid: '@on-conflict "
                     "REPLACE|IGNORE')" % (base, note, " ".join(args)))
        names, values = [], []
        for col, notes, _ in cols:
            kinds = dict((n, a) for n, a in notes)
            decl = COLUMN_DECL[(base, col)]
            if "@unset" in kinds or "GENERATED" in decl:
                continue
            if "PRIMARY KEY" in decl and "@given" not in kinds:
                continue
            quoted = "\\\"%s\\\"" % col
            names.append(quoted)
            if "@const" in kinds:
                values.append(" ".join(kinds["@const"]))
            elif col == "nid":
                values.append("1")
            elif col == "pid":
                values.append("$PID")
            else:
                values.append("?")
                params.append("#define P_%s_%s %d" % (name, col.upper(), values.count("?")))
        rows.append('    X(ST_%s, "INSERT%s INTO \\"%s%%s\\" (%s) VALUES (%s)") \\'
                    % (name, conflict, base, ", ".join(names), ",".join(values)))
    return (["/* The writer's one-row insert of each table (see gen_tables.py): X(ST_NAME, \"SQL\"),",
             " * \"%s\" is the table suffix, $PID the process row's id. */",
             "#define OP_DB_INSERTS(X) \\"] + rows +
            ["", "/* Parameter numbers of those inserts (1-based; a batched row's cell is one less). */"]
            + params)


def main():
    if len(sys.argv) != 3:
        sys.stderr.write("usage: gen_tables.py TABLES_SQL OUT_DIR\n")
        return 2
    path, out = sys.argv[1], sys.argv[2]
    tables = parse(path)
    if not tables:
        fail(path, 1, "no CREATE TABLE found")
    enums = {}
    for base, _, lineno in tables:
        e = enum_name(base)
        if not e:
            fail(path, lineno, "table %s: names start with rocpd_ or omniprof_" % base)
        if e in enums.values():
            fail(path, lineno, "table %s: its enum name %s is taken" % (base, e))
        enums[base] = e
    if len(tables) > 64:
        fail(path, 1, "%d tables: the reader keeps a 64-bit mask of them" % len(tables))

    times, refs, jrefs = [], [], []
    for base, cols, _ in tables:
        for col, notes, lineno in cols:
            kinds = [n for n, _ in notes]
            if col in TIME_NAMES and "@time" not in kinds:
                fail(path, lineno, "%s.%s: a column named %s must be marked '-- @time' (a time of the "
                     "row's process, which a clock-aligned merge moves)" % (base, col, col))
            for note, args in notes:
                if note == "@time" and not args:
                    times.append((enums[base], col))
                elif note == "@ref" and len(args) == 1 and args[0] in enums:
                    refs.append((enums[base], col, enums[args[0]]))
                elif note == "@json-ref" and args:
                    for a in args:
                        key, _, tbl = a.partition("=")
                        if not re.fullmatch(r"[a-z_]+", key) or tbl not in enums:
                            fail(path, lineno, "%s.%s: @json-ref takes KEY=TABLE words, TABLE one of "
                                 "this file's" % (base, col))
                        jrefs.append((enums[base], col, key, enums[tbl]))
                elif note in ("@unset", "@given") and not args:
                    pass
                elif note == "@const" and args:
                    pass
                else:
                    fail(path, lineno, "%s.%s: unknown annotation '%s %s' (valid: '@time', '@ref TABLE', "
                         "'@json-ref KEY=TABLE...', '@unset', '@given', '@const SQL')" % (base, col, note,
                                                                    " ".join(args)))

    src = os.path.relpath(path, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    head = "Generated by src/db/gen_tables.py from %s; do not edit." % src
    h = ["/* %s */" % head,
         "#ifndef OMNIPROF_DB_TABLES_GEN_H", "#define OMNIPROF_DB_TABLES_GEN_H", "",
         "/* Every table, in tables.sql order: X(ENUM, \"base name\"). */",
         "#define OP_DB_TABLES(X) \\"]
    h += ["    X(%s, \"%s\") \\" % (enums[b], b) for b, _, _ in tables]
    h += ["", "#define OP_DB_N_TABLES %d" % len(tables),
          "#define OP_DB_N_ROCPD_TABLES %d" % sum(b.startswith("rocpd_") for b, _, _ in tables),
          "#define OP_DB_N_OMNIPROF_TABLES %d" % sum(b.startswith("omniprof_") for b, _, _ in tables), "",
          "/* Times of the row's process (-- @time): X(ENUM, \"column\"). */",
          "#define OP_DB_TIME_COLUMNS(X) \\"]
    h += ["    X(%s, \"%s\") \\" % t for t in times]
    h += ["", "/* Row ids the schema declares no foreign key for (-- @ref): X(ENUM, \"column\", REF). */",
          "#define OP_DB_REF_COLUMNS(X) \\"]
    h += ["    X(%s, \"%s\", %s) \\" % r for r in refs]
    h += ["", "/* Row ids inside JSON text (-- @json-ref): X(ENUM, \"column\", \"key\", REF). */",
          "#define OP_DB_JSON_REF_COLUMNS(X) \\"]
    h += ["    X(%s, \"%s\", \"%s\", %s) \\" % j for j in jrefs]
    h += [""]
    h += inserts(path, tables, enums)
    h += ["", "#endif", ""]

    v = ["-- rocpd_views.sql — %s" % head,
         "-- The plain-named views over this database's uuid-suffixed tables ({{uuid}} as in",
         "-- tables.sql). Readers use only these names.", ""]
    v += ['CREATE VIEW IF NOT EXISTS "%s" AS SELECT * FROM "%s{{uuid}}";' % (b, b) for b, _, _ in tables]
    v.append("")

    os.makedirs(out, exist_ok=True)
    for name, lines in (("tables_gen.h", h), ("rocpd_views.sql", v)):
        text = "\n".join(lines)
        target = os.path.join(out, name)
        try:
            with open(target, encoding="utf-8") as f:
                if f.read() == text:
                    continue  # unchanged: keep the time stamp, nothing rebuilds
        except OSError:
            pass
        with open(target + ".tmp", "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(target + ".tmp", target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
