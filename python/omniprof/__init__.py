"""omniprof — post-processing of omniprof (and rocprofv3) rocpd databases from Python.

Standard library only. Conversions, merges and summaries run in C, in libomniprof-output.so
(loaded with ctypes), so they stream with bounded memory and give exactly what the `omniprof`
binary gives; `connect` and `query` use the sqlite3 module.

    import omniprof
    con = omniprof.connect("a_results.db", "b_results.db")      # views span every input
    con.execute("SELECT name, total_duration FROM top LIMIT 5").fetchall()
    omniprof.convert(["a_results.db"], ["pftrace", "csv"], output_dir="out")
    omniprof.merge(["a.db", "b.db"], "merged.db")
    rows = omniprof.summary(["a.db"], units="usec")               # list of tables (dicts)
    omniprof.query(["a.db", "b.db"], "SELECT count(*) FROM kernels")  # list of tuples

The library is found through $OMNIPROF_OUTPUT_LIB, then beside the installed package
(<prefix>/lib), then in the source tree's build*/lib folders, then the system's library path.
"""

import ctypes
import ctypes.util
import glob
import json
import os
import sqlite3
import tempfile
import urllib.parse

__all__ = ["connect", "convert", "merge", "summary", "query", "cli", "Error", "library_path"]
__version__ = "0.1.0"

MAX_ATTACHED = 9  # SQLite's default limit is 10 attached databases; one stays free


class Error(Exception):
    """A failed omniprof operation; .status is the exit status (1 failure, 2 bad input)."""

    def __init__(self, message, status=1):
        super().__init__(message)
        self.status = status


_lib = None


def library_path():
    """Path of libomniprof-output.so that this package uses (raises Error when none is found)."""
    env = os.environ.get("OMNIPROF_OUTPUT_LIB")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [
        os.path.join(here, "..", "..", "libomniprof-output.so"),          # <prefix>/lib/python3/site-packages
        os.path.join(here, "..", "..", "..", "libomniprof-output.so"),    # <prefix>/lib/python3.X/site-packages
        os.path.join(here, "..", "..", "lib", "libomniprof-output.so"),   # build tree: <build>/python/omniprof
    ]
    src = os.path.dirname(os.path.dirname(here))  # source tree: <src>/python/omniprof
    # newest build first; sanitizer builds (build-asan, build-tsan) cannot be loaded by python
    builds = sorted((p for p in glob.glob(os.path.join(src, "build*", "lib", "libomniprof-output.so"))
                     if "san" not in os.path.basename(os.path.dirname(os.path.dirname(p)))),
                    key=lambda p: os.path.getmtime(p), reverse=True)
    for c in candidates + builds:
        if os.path.exists(c):
            return os.path.abspath(c)
    found = ctypes.util.find_library("omniprof-output")
    if found:
        return found
    raise Error("libomniprof-output.so not found: build omniprof (make) or set OMNIPROF_OUTPUT_LIB", 1)


def _load():
    global _lib
    if _lib is None:
        lib = ctypes.CDLL(library_path())
        lib.op_output_cli.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        lib.op_output_cli.restype = ctypes.c_int
        lib.op_output_views_sql.argtypes = []
        lib.op_output_views_sql.restype = ctypes.c_char_p
        _lib = lib
    return _lib


def _arg(a):
    return a if isinstance(a, bytes) else os.fsencode(str(a))


def cli(argv):
    """Runs `omniprof <argv[0]> argv[1:]` (convert, merge, summary, query) in the C library and
    returns its exit status. Output goes to this process's stdout/stderr file descriptors."""
    lib = _load()
    import sys
    sys.stdout.flush()
    sys.stderr.flush()
    args = [_arg(a) for a in argv]
    arr = (ctypes.c_char_p * (len(args) + 1))(*args, None)
    return lib.op_output_cli(len(args), arr)


def _window_args(start=None, end=None, start_marker=None, end_marker=None, inclusive=False):
    out = []
    if start is not None:
        out += ["--start", str(start)]
    if end is not None:
        out += ["--end", str(end)]
    if start_marker is not None:
        out += ["--start-marker", start_marker]
    if end_marker is not None:
        out += ["--end-marker", end_marker]
    if inclusive:
        out += ["--inclusive", "true"]
    return out


def _check(status, what):
    if status:
        raise Error("omniprof %s failed (exit status %d; the reason is on stderr)" % (what, status), status)


def _inputs(inputs):
    if isinstance(inputs, (str, bytes, os.PathLike)):
        return [inputs]
    return list(inputs)


def convert(inputs, formats=("pftrace",), output_dir=".", output_name="out", stats=False, **window):
    """Converts databases to pftrace / json / csv / folded files in output_dir (names
    <output_name>_results.pftrace, <output_name>_kernel_trace.csv, <output_name>_folded.txt, ...). Window keywords:
    start, end (ns, or "25%"), start_marker, end_marker, inclusive. Raises Error on failure."""
    if isinstance(formats, str):
        formats = [formats]
    argv = ["convert", "-i"] + _inputs(inputs) + ["-f"] + list(formats)
    argv += ["-d", output_dir, "-o", output_name, "--no-progress"] + _window_args(**window)
    if stats:
        argv.append("--stats")
    _check(cli(argv), "convert")


def merge(inputs, output):
    """Merges databases into one new file `output` (refuses to overwrite). Raises Error."""
    _check(cli(["merge", "-i"] + _inputs(inputs) + ["-o", output]), "merge")


def summary(inputs, units="nsec", by_rank=False, domain_summary=False, cpu_profile=None, **window):
    """Returns the summary tables as a list of {"summary": title, "units": ..., "rows": [...]},
    each row {"name", "domain", "calls", "duration", "average", "percent", "min", "max",
    "stddev"} — what `omniprof summary --format json` prints. When the inputs hold CPU samples
    the list ends with {"summary": "OMNIPROF CPU PROFILE", "cpu_profile": {"total_samples",
    "flat": [...], "tree": {...}}}; cpu_profile = "flat", "tree", "both" or "none" chooses."""
    fd, path = tempfile.mkstemp(suffix=".json", prefix="omniprof-summary-")
    os.close(fd)
    try:
        argv = ["summary", "-i"] + _inputs(inputs) + ["--format", "json", "-u", units, "-o", path]
        if by_rank:
            argv.append("--summary-by-rank")
        if domain_summary:
            argv.append("--domain-summary")
        if cpu_profile is not None:
            argv += ["--cpu-profile", cpu_profile]
        _check(cli(argv + _window_args(**window)), "summary")
        with open(path, "rb") as f:
            return json.loads(f.read().decode("utf-8", "surrogateescape"))
    finally:
        os.unlink(path)


def query(inputs, sql, params=()):
    """Runs one read-only SQL statement over the union of the inputs; returns a list of tuples."""
    con = connect(*_inputs(inputs))
    try:
        return con.execute(sql, params).fetchall()
    except sqlite3.DatabaseError as e:
        raise Error("query failed: %s" % e, 2)
    finally:
        con.close()


class _Connection(sqlite3.Connection):
    """A connection that removes its temporary merged database when closed."""

    _omniprof_tmp = None

    def close(self):
        try:
            super().close()
        finally:
            if self._omniprof_tmp:
                self._omniprof_tmp.cleanup()
                self._omniprof_tmp = None

    def __del__(self):
        if self._omniprof_tmp:
            self._omniprof_tmp.cleanup()


def _uri(path):
    return "file:%s?mode=ro" % urllib.parse.quote(os.path.abspath(path))


def _sets(con, schema):
    """Table suffixes of the rocpd table sets in attached `schema`."""
    rows = con.execute(
        "SELECT substr(name, 15) FROM %s.sqlite_schema WHERE type='table' AND name LIKE "
        "'rocpd\\_metadata%%' ESCAPE '\\'" % schema).fetchall()
    return [r[0] for r in rows if all(c.isalnum() or c == "_" for c in r[0])]


def _check_input(path):
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError as e:
        raise Error("%s: cannot open: %s" % (path, e.strerror), 2)
    if head != b"SQLite format 3\x00":
        raise Error("%s: not a SQLite database" % path, 2)


def _text(b):
    return b.decode("utf-8", "surrogateescape")


def _harden(con):
    # names are bytes (non-UTF-8 survives): decode with surrogateescape, so that
    # s.encode("utf-8", "surrogateescape") gives the stored bytes back
    con.text_factory = _text
    try:
        con.execute("PRAGMA trusted_schema=OFF")
    except sqlite3.DatabaseError:
        pass


def connect(*dbs):
    """Returns a sqlite3 connection over the union of the given rocpd databases: the plain
    views (rocpd_region, rocpd_string, ...) and the data views (regions, kernels, samples,
    memory_copies, top, busy, omniprof_metrics, ...) span every input. Inputs are opened
    read-only. Beyond 9 inputs they are first merged (in C, bounded memory) into a temporary
    database, removed when the connection is closed."""
    paths = [os.fspath(d) for d in dbs]
    if len(paths) == 1 and isinstance(paths[0], (list, tuple)):
        paths = list(paths[0])
    if not paths:
        raise Error("connect: no database given", 2)
    for p in paths:
        _check_input(p)
    if len(paths) > MAX_ATTACHED:
        tmp = tempfile.TemporaryDirectory(prefix="omniprof-")
        merged = os.path.join(tmp.name, "merged.db")
        try:
            merge(paths, merged)
        except Error:
            tmp.cleanup()
            raise
        con = sqlite3.connect(_uri(merged), uri=True, factory=_Connection)
        con._omniprof_tmp = tmp
        _harden(con)
        return con
    if len(paths) == 1:
        con = sqlite3.connect(_uri(paths[0]), uri=True, factory=_Connection)
        _harden(con)
        try:
            if not _sets(con, "main"):
                raise Error("%s: lacks the rocpd tables" % paths[0], 2)
        except sqlite3.DatabaseError as e:
            con.close()
            raise Error("%s: %s" % (paths[0], e), 2)
        return con
    con = sqlite3.connect(":memory:", factory=_Connection)
    _harden(con)
    tables = {}
    for i, p in enumerate(paths):
        try:
            con.execute("ATTACH DATABASE ? AS db%d" % i, (_uri(p),))
            sets = _sets(con, "db%d" % i)
        except sqlite3.DatabaseError as e:
            con.close()
            raise Error("%s: %s" % (p, e), 2)
        if not sets:
            con.close()
            raise Error("%s: lacks the rocpd tables" % p, 2)
        names = [r[0] for r in con.execute("SELECT name FROM db%d.sqlite_schema WHERE type='table'" % i)]
        for suffix in sets:
            for name in names:
                if name.endswith(suffix) and suffix and (name.startswith("rocpd_") or name.startswith("omniprof_")):
                    base = name[: -len(suffix)]
                    tables.setdefault(base, []).append(("db%d" % i, name))
    for base, lst in tables.items():
        cols = None
        for schema, name in lst:
            c = [r[1] for r in con.execute("PRAGMA %s.table_info(\"%s\")" % (schema, name))]
            cols = c if cols is None else [x for x in cols if x in c]
        collist = ", ".join('"%s"' % c for c in cols if '"' not in c)
        parts = ['SELECT %s FROM %s."%s"' % (collist, s, n) for s, n in lst]
        # at most 500 terms per compound SELECT: chain part views
        if len(parts) > 400:
            chunks = [parts[i:i + 400] for i in range(0, len(parts), 400)]
            for k, ch in enumerate(chunks):
                con.execute('CREATE TEMP VIEW "%s__part%d" AS %s' % (base, k, " UNION ALL ".join(ch)))
            parts = ['SELECT * FROM "%s__part%d"' % (base, k) for k in range(len(chunks))]
        con.execute('CREATE TEMP VIEW "%s" AS %s' % (base, " UNION ALL ".join(parts)))
    views = _load().op_output_views_sql().decode()
    for stmt in _split_sql(views):
        s = stmt.replace("CREATE VIEW IF NOT EXISTS", "CREATE TEMP VIEW IF NOT EXISTS", 1)
        try:
            con.execute(s)
        except sqlite3.DatabaseError:
            pass  # a view these inputs cannot support (e.g. foreign schema): left out, as in C
    con.execute("PRAGMA query_only=1")
    return con


def _split_sql(text):
    """Splits SQL text into complete statements (sqlite3.complete_statement)."""
    out, cur = [], ""
    for line in text.splitlines(keepends=True):
        cur += line
        if sqlite3.complete_statement(cur):
            if cur.strip():
                out.append(cur.strip())
            cur = ""
    if cur.strip():
        out.append(cur.strip())
    return out
