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

connect() and query() build their union of databases with the SQL that the C library writes
(op_output_union_sql: the same union `omniprof query` runs on), so the two agree and the
inputs are checked the same way.

Ctrl-C (SIGINT) stops a statement in progress: query(), a connection's execute() and
`python3 -m omniprof query` end with KeyboardInterrupt as soon as SQLite checks (every few
thousand of its instructions); rows fetched later from a cursor stop with
sqlite3.OperationalError("interrupted").

The library is found through $OMNIPROF_OUTPUT_LIB, then beside the installed package
(<prefix>/lib), then in the source tree's build*/lib folders, then the system's library path.
"""

import ctypes
import ctypes.util
import glob
import json
import os
import signal
import sqlite3
import tempfile
import threading

__all__ = ["connect", "convert", "merge", "summary", "query", "cli", "Error", "library_path", "unescape_text",
           "report"]
__version__ = "0.1.0"


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
    # installed: <prefix>/lib/python3/dist-packages/omniprof, the library in <prefix>/<libdir>
    lib = os.path.join(here, "..", "..", "..")
    candidates = [os.path.join(lib, "libomniprof-output.so"),                # <prefix>/lib
                  os.path.join(lib, "..", "lib64", "libomniprof-output.so")]  # <prefix>/lib64
    candidates += sorted(glob.glob(os.path.join(lib, "*-linux-gnu*", "libomniprof-output.so")))
    # the build tree: <build>/python/omniprof, the library in <build>/lib
    candidates.append(os.path.join(here, "..", "..", "lib", "libomniprof-output.so"))
    src = os.path.dirname(os.path.dirname(here))  # source tree: <src>/python/omniprof
    # newest build first; sanitizer builds (build-asan, build-tsan) cannot be loaded by python
    builds = sorted((p for p in glob.glob(os.path.join(src, "build*", "lib", "libomniprof-output.so"))
                     if "san" not in os.path.basename(os.path.dirname(os.path.dirname(p)))),
                    key=lambda p: os.path.getmtime(p), reverse=True)
    for c in candidates + builds:
        if os.path.exists(c):
            return os.path.abspath(c)
    import shutil  # a pip-installed package: the library of the omniprof on PATH (<prefix>/lib)
    exe = shutil.which("omniprof")
    if exe:
        c = os.path.join(os.path.dirname(os.path.realpath(exe)), "..", "lib", "libomniprof-output.so")
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
        lib.op_output_cli_err.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p), ctypes.c_char_p,
                                          ctypes.c_size_t]
        lib.op_output_cli_err.restype = ctypes.c_int
        lib.op_output_views_sql.argtypes = []
        lib.op_output_views_sql.restype = ctypes.c_char_p
        lib.op_output_union_sql.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t,
                                            ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_int),
                                            ctypes.c_char_p, ctypes.c_size_t]
        lib.op_output_union_sql.restype = ctypes.c_void_p
        lib.op_output_free.argtypes = [ctypes.c_void_p]
        lib.op_output_free.restype = None
        _lib = lib
    return _lib


def _arg(a):
    return a if isinstance(a, bytes) else os.fsencode(str(a))


def _cli(argv):
    """(exit status, first error message) of `omniprof <argv[0]> argv[1:]` run in the C library."""
    lib = _load()
    import sys
    sys.stdout.flush()
    sys.stderr.flush()
    args = [_arg(a) for a in argv]
    arr = (ctypes.c_char_p * (len(args) + 1))(*args, None)
    msg = ctypes.create_string_buffer(2048)
    status = lib.op_output_cli_err(len(args), arr, msg, len(msg))
    return status, _text(msg.value)


def cli(argv):
    """Runs `omniprof <argv[0]> argv[1:]` (convert, merge, summary, query) in the C library and
    returns its exit status. Output goes to this process's stdout/stderr file descriptors, the
    message of a failure too (as the binary prints it)."""
    import sys
    status, msg = _cli(argv)
    if msg:
        cmd = argv[0] if status != 2 or msg.find("unknown command") < 0 else ""
        sys.stderr.write("omniprof%s%s: %s\n" % (" " if cmd else "", cmd, msg))
        sys.stderr.flush()
    return status


def _run(argv):
    """Runs a command; raises Error with its message (which names the input) when it fails,
    and prints nothing of it; a message of a command that succeeded (a warning) is printed."""
    status, msg = _cli(argv)
    if status:
        raise Error("omniprof %s: %s" % (argv[0], msg or "failed (exit status %d)" % status), status)
    if msg:
        import sys
        sys.stderr.write("omniprof %s: %s\n" % (argv[0], msg))


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


def _inputs(inputs):
    if isinstance(inputs, (str, bytes, os.PathLike)):
        return [inputs]
    return list(inputs)


def convert(inputs, formats=("pftrace",), output_dir=".", output_name="out", stats=False, strict=False, **window):
    """Converts databases to pftrace / json / csv / folded files in output_dir (names
    <output_name>_results.pftrace, <output_name>_kernel_trace.csv, <output_name>_folded.txt, ...). Window keywords:
    start, end (ns, or "25%"), start_marker, end_marker, inclusive. An existing output file is kept
    (the new one gets the -N suffix: out-1_results.json); an input without rocpd tables is skipped
    with a warning unless strict. Raises Error naming the input on failure."""
    if isinstance(formats, str):
        formats = [formats]
    argv = ["convert", "-i"] + _inputs(inputs) + ["-f"] + list(formats)
    argv += ["-d", output_dir, "-o", output_name, "--no-progress"] + _window_args(**window)
    if stats:
        argv.append("--stats")
    if strict:
        argv.append("--strict")
    _run(argv)


def merge(inputs, output, strict=False):
    """Merges databases into one new file `output` (refuses to overwrite any file). Raises Error."""
    _run(["merge", "-i"] + _inputs(inputs) + ["-o", output] + (["--strict"] if strict else []))


def summary(inputs, units="nsec", by_rank=False, domain_summary=False, cpu_profile=None, strict=False, **window):
    """Returns the summary tables as a list of {"summary": title, "units": ..., "rows": [...]},
    each row {"name", "domain", "calls", "duration", "average", "percent", "min", "max",
    "stddev"} — what `omniprof summary --format json` prints. When the inputs hold CPU samples
    the list ends with {"summary": "OMNIPROF CPU PROFILE", "cpu_profile": {"total_samples",
    "flat": [...], "tree": {...}}}; cpu_profile = "flat", "tree", "both" or "none" chooses."""
    with tempfile.TemporaryDirectory(prefix="omniprof-summary-") as tmp:
        path = os.path.join(tmp, "summary.json")
        argv = ["summary", "-i"] + _inputs(inputs) + ["--format", "json", "-u", units, "-o", path]
        if by_rank:
            argv.append("--summary-by-rank")
        if domain_summary:
            argv.append("--domain-summary")
        if cpu_profile is not None:
            argv += ["--cpu-profile", cpu_profile]
        if strict:
            argv.append("--strict")
        _run(argv + _window_args(**window))
        with open(path, "rb") as f:
            return json.loads(f.read().decode("utf-8", "surrogateescape"))


_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE", "DROP", "ALTER", "ATTACH", "DETACH", "VACUUM",
           "REINDEX", "UPSERT", "PRAGMA")


def _progress_tick():
    # Called by SQLite every _PROGRESS_STEPS of its instructions. Python runs a signal's handler
    # only between bytecodes, so while sqlite3 steps a long statement none would run before it
    # ends: this call gives the handler its moment (see _interruptible).
    return 0


_PROGRESS_STEPS = 10000


def _interruptible(con, fn):
    """fn()'s result, where a SIGINT during it interrupts the connection's statement and then
    acts as it would have (the previous handler runs: KeyboardInterrupt by default). Without
    this, the default handler raises inside the progress callback, where sqlite3 swallows the
    exception and only the statement's "interrupted" error is left."""
    if threading.current_thread() is not threading.main_thread():
        return fn()
    old = signal.getsignal(signal.SIGINT)
    if not callable(old):  # SIG_IGN, SIG_DFL, or a handler not set from Python
        return fn()
    got = []

    def on_sigint(signum, frame):
        got.append((signum, frame))
        con.interrupt()

    signal.signal(signal.SIGINT, on_sigint)
    result = stopped = None
    try:
        result = fn()
    except sqlite3.OperationalError as e:
        if not got:
            raise
        stopped = e
    finally:
        signal.signal(signal.SIGINT, old)
    if got:
        old(*got[0])  # KeyboardInterrupt under the default handler
    if stopped is not None:  # a handler that returned: the statement still did not finish
        raise stopped
    return result


def query(inputs, sql, params=()):
    """Runs one read-only SQL statement over the union of the inputs; returns a list of tuples.
    A statement that would write is refused (Error, as `omniprof query` refuses it). Ctrl-C stops
    it (KeyboardInterrupt)."""
    con = connect(*_inputs(inputs))
    try:
        return _interruptible(con, lambda: sqlite3.Connection.execute(con, sql, params).fetchall())
    except sqlite3.DatabaseError as e:
        m = str(e)
        words = sql.lstrip(" \t\r\n(").split(None, 1)
        if "not authorized" in m or "readonly" in m or "read-only" in m or (words and words[0].upper() in _WRITES):
            raise Error("query refused: queries are read-only (%s)" % m, 2)
        raise Error("query failed: %s" % m, 2)
    finally:
        con.close()


class _Connection(sqlite3.Connection):
    """A connection that removes its temporary merged database when closed, and whose execute()
    Ctrl-C stops (KeyboardInterrupt). Every view is also a method returning a table (a pandas
    DataFrame when pandas is installed, a list of dicts otherwise; omniprof/views.py):
    con.kernels(), con.regions(where="...", limit=10), con.view(name), con.sql(text), and
    con.views() lists them; Jupyter shows the connection as HTML (_repr_html_)."""

    _omniprof_tmp = None
    _omniprof_inputs = ()

    def views(self):
        """The names of the views of this connection."""
        from . import views
        return views.view_names(self)

    def view(self, name, where=None, params=(), order_by=None, limit=None):
        """The rows of view `name` (optional SQL where / order_by, limit). Raises Error naming
        the valid views when there is no such view."""
        from . import views
        return views.select(self, name, where, params, order_by, limit, error=Error)

    def sql(self, text, params=()):
        """The rows of a read-only SQL statement, as a table."""
        from . import views
        try:
            return views.table(self.execute(text, params))
        except sqlite3.DatabaseError as e:
            raise Error("query failed: %s" % e, 2) from None

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        if name in self.views():
            return lambda **kw: self.view(name, **kw)
        raise AttributeError("%r: not an attribute nor a view of this connection (views: %s)"
                             % (name, ", ".join(self.views())))

    def _repr_html_(self):
        from . import views
        return views.html_of(self, self._omniprof_inputs)

    def execute(self, *args, **kwargs):
        return _interruptible(self, lambda: super(_Connection, self).execute(*args, **kwargs))

    def _omniprof_cleanup(self):
        tmp, self._omniprof_tmp = self._omniprof_tmp, None
        if tmp:
            try:
                os.unlink(tmp)
            except OSError:
                pass

    def close(self):
        try:
            super().close()
        finally:
            self._omniprof_cleanup()

    def __del__(self):
        self._omniprof_cleanup()


def _text(b):
    return b.decode("utf-8", "surrogateescape")


def unescape_text(text):
    """The original bytes of a text column omniprof's writer stored (docs/database.md: bytes that
    are not valid UTF-8 are stored as \\xHH, a run of backslashes before an escape or before
    literal "xHH" doubled). Text without escapes gives its UTF-8 bytes."""
    data, out, i, n = text.encode("utf-8"), bytearray(), 0, 0
    n = len(data)
    hexd = b"0123456789abcdefABCDEF"
    while i < n:
        if data[i] != 0x5C:
            out.append(data[i])
            i += 1
            continue
        j = i
        while j < n and data[j] == 0x5C:
            j += 1
        run = j - i
        if j + 3 <= n and data[j] == 0x78 and data[j + 1] in hexd and data[j + 2] in hexd:
            out += b"\\" * (run // 2)
            if run % 2:
                out.append(int(data[j + 1:j + 3], 16))
                j += 3
        else:
            out += b"\\" * run
        i = j
    return bytes(out)


def _union_sql(paths):
    """The SQL that builds the union of `paths` (op_output_union_sql) and the temporary merged
    database it made (bytes path, or None). Raises Error naming the input on bad inputs."""
    lib = _load()
    args = [_arg(p) for p in paths]
    arr = (ctypes.c_char_p * len(args))(*args)
    tmp = ctypes.c_void_p()
    status = ctypes.c_int(0)
    err = ctypes.create_string_buffer(2048)
    p = lib.op_output_union_sql(arr, len(args), ctypes.byref(tmp), ctypes.byref(status), err, len(err))
    if not p:
        raise Error(_text(err.value) or "connect failed", status.value or 2)
    try:
        sql = ctypes.string_at(p).decode("utf-8", "surrogateescape")
    finally:
        lib.op_output_free(p)
    tmp_path = None
    if tmp.value:
        tmp_path = ctypes.string_at(tmp.value)
        lib.op_output_free(tmp.value)
    return sql, tmp_path


def _deny_changes(action, arg1, arg2, db, trigger):
    # as the C query's authorizer: no ATTACH/DETACH, no PRAGMA that sets a value
    if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_PRAGMA and arg2 is not None:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def connect(*dbs):
    """Returns a sqlite3 connection over the union of the given rocpd databases: the plain
    views (rocpd_region, rocpd_string, ...) and the data views (regions, kernels, samples,
    memory_copies, top, busy, omniprof_metrics, ...) span every input. Inputs are opened
    read-only and leave no file beside them; the connection is read-only. Beyond 9 inputs they
    are first merged (in C, bounded memory) into a temporary database, removed when the
    connection is closed. Raises Error naming the input when one is not a rocpd database or
    holds a process that another input holds too."""
    paths = [os.fspath(d) for d in dbs]
    if len(paths) == 1 and isinstance(paths[0], (list, tuple)):
        paths = [os.fspath(d) for d in paths[0]]
    if not paths:
        raise Error("connect: no database given", 2)
    sql, tmp = _union_sql(paths)
    con = sqlite3.connect(":memory:", uri=True, factory=_Connection)
    con._omniprof_tmp = tmp
    con._omniprof_inputs = tuple(paths)
    try:
        # names are bytes (non-UTF-8 survives): decode with surrogateescape, so that
        # s.encode("utf-8", "surrogateescape") gives the stored bytes back
        con.text_factory = _text
        con.execute("PRAGMA trusted_schema=OFF")
        con.executescript(sql)
        con.execute("PRAGMA query_only=1")
        con.set_authorizer(_deny_changes)
        con.set_progress_handler(_progress_tick, _PROGRESS_STEPS)
    except sqlite3.DatabaseError as e:
        con.close()
        raise Error("connect: %s" % e, 2)
    return con


class Report(str):
    """The path of an HTML report (a str); Jupyter shows the page itself (_repr_html_)."""

    def _repr_html_(self):
        import html
        with open(self, encoding="utf-8", errors="replace") as f:
            page = f.read()
        return '<iframe srcdoc="%s" style="width:100%%;height:700px;border:0"></iframe>' % html.escape(page)


def _omniprof_binary():
    """The omniprof binary beside the library this package uses (<prefix>/bin), or on PATH."""
    import shutil
    try:
        lib = os.path.realpath(library_path())
        cand = os.path.join(os.path.dirname(lib), "..", "bin", "omniprof")
        if os.access(cand, os.X_OK):
            return os.path.abspath(cand)
    except Error:
        pass
    found = shutil.which("omniprof")
    if found:
        return found
    raise Error("the omniprof binary was not found beside %s nor on PATH" % "libomniprof-output.so", 1)


def report(inputs, output, title=None, extra_args=()):
    """Writes the self-contained HTML report of the databases `inputs` to `output` (what
    `omniprof report -i INPUTS -o OUTPUT` writes; an existing file is never replaced) and returns
    its path as a Report (shown as the page in Jupyter). Raises Error with omniprof's message."""
    import subprocess
    argv = [_omniprof_binary(), "report", "-i"] + [os.fspath(p) for p in _inputs(inputs)]
    argv += ["-o", os.fspath(output)] + (["--title", title] if title else []) + list(extra_args)
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode:
        msg = r.stderr.decode("utf-8", "replace").strip().splitlines()
        raise Error("omniprof report: %s" % (msg[-1] if msg else "exit status %d" % r.returncode), r.returncode)
    return Report(os.fspath(output))


from .analyze import analyze, AnalyzeError  # noqa: E402  (omniprof analyze, docs/analyze.md)
