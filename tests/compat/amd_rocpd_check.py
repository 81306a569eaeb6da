#!/usr/bin/env python3
"""amd_rocpd_check.py — runs AMD's rocpd view SQL and AMD's rocpd Python package, unchanged, on
omniprof databases and compares AMD's views with omniprof's own, view by view.

AMD's files are never part of omniprof: point OMNIPROF_AMD_ROCPD (or --amd) at a folder that
holds AMD's SQL (data_views.sql, summary_views.sql, marker_views.sql, rocpd_views.sql, directly
or under sql/) and, optionally, AMD's Python package (rocpd/*.py of rocprofiler-sdk's
source/lib/python/rocpd). AMD's package needs its C++ module libpyrocpd; this script supplies a
stand-in written here (sqlite3 connections, the schema files read from the folder) so that the
pure-Python parts — importer, summary, time window, query's SQL — run as AMD wrote them.

usage: amd_rocpd_check.py [--amd DIR] [--union] [--quiet] DB [DB...]
  Each DB is checked alone (AMD's importer attaches it, as `rocpd summary -i DB` does); with
  --union the DBs are also checked together (AMD's importer over all of them against omniprof's
  merge of them, made with --omniprof BIN). Prints one line per view: AMD's row count, ours, and
  whether the rows are the same; exit 0 when every view matches, 1 otherwise, 77 when AMD's
  files are not there (the reason is printed).
"""
import argparse
import collections
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import types

SKIP = 77


def find_amd(path):
    """(sql_dir, package_dir or None) of AMD's files under path, or None."""
    if not path or not os.path.isdir(path):
        return None
    for sub in ("sql", "."):
        d = os.path.join(path, sub)
        if os.path.isfile(os.path.join(d, "data_views.sql")):
            pkg = os.path.join(path, "rocpd")
            return d, (pkg if os.path.isfile(os.path.join(pkg, "importer.py")) else None)
    return None


def view_names(sql_text):
    """Names of the views an AMD SQL file creates, in order."""
    text = re.sub(r"--[^\n]*", "", sql_text)
    return re.findall(r"CREATE\s+(?:TEMP(?:ORARY)?\s+)?VIEW\s+(?:IF\s+NOT\s+EXISTS\s+)?[`\"']?(\w+)", text, re.I)


# --------------------------------------------------------------------------------------------
# A stand-in for AMD's C++ module libpyrocpd: what importer.py, schema.py, summary.py,
# time_window.py and query.py use of it.

def make_libpyrocpd(sql_dir):
    m = types.ModuleType("rocpd.libpyrocpd")

    class _Enum:
        def __init__(self, **kw):
            self.__dict__.update(kw)

    m.sql_engine = _Enum(sqlite3="sqlite3")
    files = {"rocpd_tables": "rocpd_tables.sql", "rocpd_indexes": "rocpd_indexes.sql",
             "rocpd_views": "rocpd_views.sql", "data_views": "data_views.sql",
             "summary_views": "summary_views.sql", "marker_views": "marker_views.sql"}
    m.sql_schema = _Enum(**{k: k for k in files})
    m.sql_option = _Enum(none=0, sqlite3_pragma_foreign_keys=1)
    m.agent_indexing = _Enum(node=0, logical_node=1, logical_node_type=2)

    class schema_jinja_variables:
        def __init__(self):
            self.uuid = ""
            self.guid = ""

    m.schema_jinja_variables = schema_jinja_variables

    def load_schema(engine, kind, options, variables):
        path = os.path.join(sql_dir, files[kind])
        text = open(path).read() if os.path.isfile(path) else ""
        text = text.replace("{{uuid}}", str(variables.uuid)).replace("{{guid}}", str(variables.guid))
        if options == 1:
            text = "PRAGMA foreign_keys = ON;\n" + text
        return text

    m.load_schema = load_schema
    m.connect = lambda path, *a, **kw: sqlite3.connect(path, *a, **kw)
    m.format_path = lambda path, tag="": path

    class RocpdImportData:
        def __init__(self, *args):
            if len(args) == 1:
                self.connection = args[0].connection
                self.databases = args[0].databases
            else:
                self.connection, self.databases = args[0], list(args[1])

    m.RocpdImportData = RocpdImportData

    class output_config:
        def __init__(self, **kw):
            self.output_path, self.output_file = ".", "out"
            self.__dict__.update(kw)

        def update(self, **kw):
            self.__dict__.update(kw)
            return self

    m.output_config = output_config
    return m


def import_amd_package(sql_dir, pkg_dir):
    """AMD's rocpd package, imported from pkg_dir with the stand-in libpyrocpd."""
    import importlib.util
    for name in [n for n in sys.modules if n == "rocpd" or n.startswith("rocpd.")]:
        del sys.modules[name]
    sys.modules["rocpd.libpyrocpd"] = make_libpyrocpd(sql_dir)
    spec = importlib.util.spec_from_file_location("rocpd", os.path.join(pkg_dir, "__init__.py"),
                                                  submodule_search_locations=[pkg_dir])
    pkg = importlib.util.module_from_spec(spec)
    sys.modules["rocpd"] = pkg
    # __init__.py in AMD's source tree is a CMake template (@PROJECT_VERSION_MAJOR@, ...): the
    # build configures it; here every @VAR@ becomes 0, as a configured copy would hold numbers.
    src = re.sub(r"@[A-Za-z_]+@", "0", open(os.path.join(pkg_dir, "__init__.py")).read())
    exec(compile(src, os.path.join(pkg_dir, "__init__.py"), "exec"), pkg.__dict__)
    pkg.libpyrocpd = sys.modules["rocpd.libpyrocpd"]
    for sub in ("importer", "schema", "time_window", "query", "summary"):
        setattr(pkg, sub, importlib.import_module("rocpd." + sub))
    return pkg


# --------------------------------------------------------------------------------------------
# AMD's views over databases, the way AMD's importer builds them.

def amd_connection(sql_dir, pkg, dbs):
    """A connection where AMD's views (TEMP) are built over the union of dbs."""
    if pkg is not None:
        data = pkg.importer.RocpdImportData(list(dbs))  # AMD's own importer
        return data.connection, data
    con = sqlite3.connect(":memory:")
    tables = collections.OrderedDict()
    for i, db in enumerate(dbs):
        con.execute(f"ATTACH DATABASE '{db}' AS db{i}")
        uuids = [r[0] for r in con.execute(f"SELECT value FROM db{i}.rocpd_metadata WHERE tag='uuid'")]
        for (name,) in con.execute(f"SELECT name FROM db{i}.sqlite_master WHERE type='table' AND name LIKE 'rocpd_%'"):
            for u in uuids:
                if u in name:
                    sel = f"SELECT * FROM db{i}.{name.replace(u, '')}"
                    tables.setdefault(name.replace(u, ""), [])
                    if sel not in tables[name.replace(u, "")]:
                        tables[name.replace(u, "")].append(sel)
    for base, sels in tables.items():
        con.execute(f"CREATE TEMPORARY VIEW {base} AS {' UNION ALL '.join(sels)}")
    script = ""
    for f in ("rocpd_views.sql", "data_views.sql", "summary_views.sql", "marker_views.sql"):
        p = os.path.join(sql_dir, f)
        if os.path.isfile(p):
            script += open(p).read().replace("{{uuid}}", "").replace("{{guid}}", "") + "\n"
    con.executescript(script.replace("CREATE VIEW", "CREATE TEMPORARY VIEW"))
    return con, None


# Columns that say which row it is, where a view has them (compared as a multiset).
KEYS = ("guid", "id", "name", "category", "pid", "tid", "start", "end", "timestamp", "dispatch_id",
        "counter_name", "total_calls", "calls", "agent_id", "event_id", "type", "operation", "size")


def rows_of(con, schema, view, cols):
    q = "SELECT %s FROM %s\"%s\"" % (", ".join('"%s"' % c for c in cols), schema, view)
    return collections.Counter(tuple(r) for r in con.execute(q))


def columns(con, schema, view):
    cur = con.execute('SELECT * FROM %s"%s" LIMIT 0' % (schema, view))
    return [d[0] for d in cur.description]


# Row ids, which a merge renumbers (one table set for all processes: docs/database.md "Merged
# files"); the rows of a merge are compared on the other keys.
ROW_IDS = ("id", "event_id", "agent_id")


def compare(sql_dir, pkg, dbs, ours_db, quiet=False, merged=False):
    """Compares AMD's views over dbs with omniprof's views of ours_db (merged: a merge of them,
    compared without row ids). Returns the mismatches."""
    con, _ = amd_connection(sql_dir, pkg, dbs)
    con.execute("ATTACH DATABASE ? AS ours", (ours_db,))
    names = []
    for f in ("data_views.sql", "summary_views.sql", "marker_views.sql"):
        p = os.path.join(sql_dir, f)
        if os.path.isfile(p):
            names += view_names(open(p).read())
    ours_views = {r[0] for r in con.execute("SELECT name FROM ours.sqlite_master WHERE type='view'")}
    bad = []
    for v in names:
        try:
            amd_cols = columns(con, "temp.", v)
            n_amd = con.execute('SELECT COUNT(*) FROM temp."%s"' % v).fetchone()[0]
        except sqlite3.Error as e:
            bad.append(v)
            print(f"  {v:24s} AMD's view fails: {e}")
            continue
        if v not in ours_views:
            bad.append(v)
            print(f"  {v:24s} amd={n_amd:<8d} ours=(no such view)")
            continue
        our_cols = columns(con, "ours.", v)
        n_ours = con.execute('SELECT COUNT(*) FROM ours."%s"' % v).fetchone()[0]
        lower = {c.lower(): c for c in our_cols}
        keys = [c for c in amd_cols if c.lower() in KEYS and c.lower() in lower and not (merged and c.lower() in ROW_IDS)]
        same = n_amd == n_ours
        try:
            if same and keys:
                same = rows_of(con, "temp.", v, keys) == rows_of(con, "ours.", v, [lower[c.lower()] for c in keys])
            con.execute('SELECT * FROM temp."%s"' % v).fetchall()  # every text decodes, as AMD's clients need
        except sqlite3.OperationalError as e:
            same = False
            print(f"  {v:24s} text AMD's clients cannot read: {e}")
        missing = [c for c in amd_cols if c.lower() not in lower]
        if not same or missing:
            bad.append(v)
        if not quiet or not same or missing:
            print(f"  {v:24s} amd={n_amd:<8d} ours={n_ours:<8d} {'same rows' if same else 'ROWS DIFFER'}"
                  f"{' (compared on ' + ','.join(keys) + ')' if keys and not same else ''}"
                  f"{' missing columns: ' + ','.join(missing) if missing else ''}")
    con.close()
    return bad


def run_package(pkg, dbs):
    """AMD's pure-Python parts on dbs: importer, summary views, time window, query's SQL."""
    data = pkg.importer.RocpdImportData(list(dbs))
    out = {}
    pkg.summary.create_summary_views(data, by_rank=True)
    pkg.summary.create_summary_region_views(data, by_rank=True)
    # (create_domain_view is left out: it unions every *_summary view, and the marker_views.sql
    # of newer rocprofiler-sdk adds *_summary views of other shapes, which AMD's own union refuses)
    for v in pkg.summary.get_temp_view_names(data):
        if v.endswith("_summary") or v.endswith("_summary_by_rank"):
            out[v] = len(data.execute(f'SELECT * FROM "{v}"').fetchall())
    # time window: the middle half of the run, as `rocpd query --start 25% --end 75%` does
    before = data.execute("SELECT COUNT(*) FROM regions").fetchone()[0]
    try:
        pkg.time_window.apply_time_window(data, start="25%", end="75%", inclusive=True)
        out["regions (25%-75% window)"] = data.execute("SELECT COUNT(*) FROM regions").fetchone()[0]
    except TypeError:  # AMD's time window cannot print the bounds of a window that holds nothing
        out["regions (25%-75% window: empty, AMD's code stops)"] = 0
    out["regions (whole run)"] = before
    # every text column of every view reads as Python str (UnicodeDecodeError otherwise)
    for (v,) in data.execute("SELECT name FROM sqlite_temp_master WHERE type='view'").fetchall():
        data.execute(f'SELECT * FROM "{v}"').fetchall()
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--amd", default=os.environ.get("OMNIPROF_AMD_ROCPD", ""))
    ap.add_argument("--union", action="store_true", help="also check all DBs together against their merge")
    ap.add_argument("--omniprof", default="omniprof", help="omniprof binary (for --union's merge)")
    ap.add_argument("--quiet", action="store_true", help="print only views that differ")
    ap.add_argument("dbs", nargs="+")
    a = ap.parse_args(argv)
    found = find_amd(a.amd)
    if not found:
        print(f"SKIP: AMD's rocpd SQL not found (OMNIPROF_AMD_ROCPD='{a.amd}'): set it to a folder holding "
              "data_views.sql, summary_views.sql, marker_views.sql (and rocpd/*.py)")
        return SKIP
    sql_dir, pkg_dir = found
    pkg = import_amd_package(sql_dir, pkg_dir) if pkg_dir else None
    print(f"AMD's SQL: {sql_dir}; AMD's Python package: {pkg_dir or 'absent (SQL only)'}")
    failed = 0
    for db in a.dbs:
        print(f"{db}:")
        failed += len(compare(sql_dir, pkg, [db], db, a.quiet))
        if pkg:
            for k, n in run_package(pkg, [db]).items():
                print(f"  AMD package: {k:36s} {n} rows")
    if a.union and len(a.dbs) > 1:
        with tempfile.TemporaryDirectory() as d:
            merged = os.path.join(d, "merged.db")
            subprocess.run([a.omniprof, "merge", "-o", merged, "-i", *a.dbs], check=True, stdout=subprocess.DEVNULL)
            print(f"union of {len(a.dbs)} databases (AMD's importer) vs their merge:")
            failed += len(compare(sql_dir, pkg, a.dbs, merged, a.quiet, merged=True))
            # a merged database attached beside another database: AMD's importer over
            # merge(all but the last) + the last, against the merge of all
            part = os.path.join(d, "part.db")
            subprocess.run([a.omniprof, "merge", "-o", part, "-i", *a.dbs[:-1]], check=True, stdout=subprocess.DEVNULL)
            print(f"merge of the first {len(a.dbs) - 1} attached beside the last (AMD's importer) vs the merge of all:")
            failed += len(compare(sql_dir, pkg, [part, a.dbs[-1]], merged, a.quiet, merged=True))
            if pkg:
                for k, n in run_package(pkg, [part, a.dbs[-1]]).items():
                    print(f"  AMD package on merge + input: {k:24s} {n} rows")
    print("all views match" if not failed else f"{failed} view(s) differ")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
