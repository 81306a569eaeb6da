#!/usr/bin/env python3
"""test_run.py — integration tests of `omniprof run` (src/cli/cmd_run.c) and the tool
(src/tool/): each test drives the real build/bin/omniprof on the victim program
(tests/tool/victim.c) or the demo, and checks the databases with sqlite3.

usage: test_run.py --omniprof BIN --victim BIN [--demo BIN] TEST
Each TEST is one CTest test, tool.<TEST>. Exit 0 = pass, 77 = skipped (printed reason)."""
import argparse
import json
import os
import shutil
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from testlib import FAILS, check, scratch  # noqa: E402 (tests/testlib.py: the one assertion helper)

ARGS = None


def run(cmd, timeout=60, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)


def omniprof(*args, **kw):
    return run([ARGS.omniprof, *args], **kw)


def dbs_in(d):
    out = []
    for root, _dirs, files in os.walk(d):
        out += [os.path.join(root, f) for f in files if f.endswith("_results.db")]
    return sorted(out)


def connect(path):
    return sqlite3.connect("file:%s?mode=ro" % path, uri=True, timeout=10)


VIEWS = ["regions", "samples", "kernels", "memory_copies", "memory_allocations", "processes", "threads",
         "top_kernels", "top", "busy", "region_args", "regions_and_samples", "pmc_events", "pmc_info",
         "counters_collection", "code_objects", "kernel_symbols", "events_args", "stream_args",
         "sample_regions", "scratch_memory"]


def check_db(path, marks=None, ranges=None, names=None):
    """Integrity, schema_version 3, every view answers; exact mark/range counts."""
    con = connect(path)
    ok = con.execute("PRAGMA integrity_check").fetchone()[0]
    check(ok == "ok", "%s: integrity_check %s" % (path, ok))
    ver = con.execute("SELECT value FROM rocpd_metadata WHERE tag='schema_version'").fetchone()
    check(ver is not None and str(ver[0]) == "3", "%s: schema_version %r" % (path, ver))
    views = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='view'")]
    for v in VIEWS:
        if v in views:
            try:
                con.execute('SELECT * FROM "%s" LIMIT 1' % v).fetchall()
            except sqlite3.Error as e:
                check(False, "%s: view %s: %s" % (path, v, e))
        else:
            check(False, "%s: view %s missing" % (path, v))
    for v in views:  # every view answers, including ones not listed above
        try:
            con.execute('SELECT * FROM "%s" LIMIT 1' % v).fetchall()
        except sqlite3.Error as e:
            check(False, "%s: view %s: %s" % (path, v, e))
    got = counts(con)
    if marks is not None:
        for name, n in marks.items():
            check(got["marks"].get(name, 0) == n, "%s: %d marks %r, want %d" % (path, got["marks"].get(name, 0), name, n))
    if ranges is not None:
        for name, n in ranges.items():
            check(got["ranges"].get(name, 0) == n,
                  "%s: %d ranges %r, want %d" % (path, got["ranges"].get(name, 0), name, n))
    con.close()
    return got


def counts(con):
    ranges = dict(con.execute("SELECT name, count(*) FROM regions GROUP BY name").fetchall())
    marks = {}
    for (ext,) in con.execute("SELECT e.extdata FROM rocpd_sample s JOIN rocpd_event e ON e.id = s.event_id"):
        try:
            msg = json.loads(ext).get("message", "")
        except (TypeError, ValueError):
            msg = ""
        marks[msg] = marks.get(msg, 0) + 1
    pid = con.execute("SELECT pid FROM rocpd_info_process").fetchall()
    return {"ranges": ranges, "marks": marks, "pids": [p[0] for p in pid]}


TMPDIRS = []


def tmpdir():
    d = tempfile.mkdtemp(prefix="omniprof-tool-test-")
    TMPDIRS.append(d)
    return d


def traced(d, *vargs, extra=(), **kw):
    return omniprof("run", "--marker-trace", "-d", d, *extra, "--", ARGS.victim, *vargs, **kw)


# ------------------------------------------------------------------------------------------------
# Launcher-only tests


def t_help():
    r = omniprof("--help")
    check(r.returncode == 0 and "run" in r.stdout, "omniprof --help")
    r = omniprof("run", "--help")
    check(r.returncode == 0, "run --help exit %d" % r.returncode)
    for opt in ["--kernel-trace", "--memory-copy-trace", "--memory-allocation-trace", "--marker-trace",
                "--cuda-runtime-trace", "--cuda-driver-trace", "--runtime-trace", "--sys-trace", "--output-directory",
                "--output-file", "--output-format", "--stats", "--summary", "--summary-output-file", "--summary-units",
                "--kernel-include-regex", "--kernel-exclude-regex", "--collection-period", "--collection-period-unit",
                "--flush-interval", "--mangled-kernels", "--truncate-kernels", "--preload", "--log-level",
                "--disable-signal-handlers", "--echo", "--input", "--pmc", "--sample", "--sampling-freq",
                "--process-sampling", "--kernel-iteration-range", "--extra-metrics", "--pc-sampling",
                "--pc-sampling-interval", "--pc-sampling-method", "--lite"]:
        check(opt in r.stdout, "run --help lists %s" % opt)
    r = omniprof("--version")
    check(r.returncode == 0 and r.stdout.startswith("omniprof "), "--version: %r" % r.stdout)
    r = omniprof("frobnicate")
    check(r.returncode == 2 and "unknown command" in r.stderr, "unknown command")


# ------------------------------------------------------------------------------------------------
# Issue 32 item 4: one option table per command drives the parser, --help, the man pages and
# the completion scripts; the options are enumerated from the tables (--list-options), never
# from a list kept here.


def cli_options():
    r = omniprof("--list-options")
    check(r.returncode == 0, "--list-options: %d %r" % (r.returncode, r.stderr))
    rows = json.loads(r.stdout)
    by_cmd = {}
    for row in rows:
        by_cmd.setdefault(row["command"], []).append(row)
    return by_cmd


def cli_commands(by_cmd):
    return sorted(c for c in by_cmd if c)


def edit_distance(a, b):
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            cur = row[j]
            row[j] = min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
            prev = cur
    return row[-1]


def option_in_text(opt, text):
    """--long as a whole word of text (not the prefix of a longer option)."""
    i = text.find(opt)
    while i >= 0:
        end = i + len(opt)
        if end == len(text) or not (text[end].isalnum() or text[end] in "-_"):
            return True
        i = text.find(opt, end)
    return False


def t_cli_help():
    by_cmd = cli_options()
    cmds = cli_commands(by_cmd)
    for want in ("run", "sample", "avail", "report", "causal"):
        check(want in cmds, "--list-options lists command %s (%s)" % (want, cmds))
    top = omniprof("--help")
    check(top.returncode == 0, "omniprof --help: %d" % top.returncode)
    texts = {"": top.stdout}
    for cmd in cmds:
        h = omniprof(cmd, "--help")
        check(h.returncode == 0 and h.stdout.startswith("usage: omniprof %s" % cmd),
              "%s --help: %d %r" % (cmd, h.returncode, h.stdout[:80]))
        texts[cmd] = h.stdout
        # `omniprof help CMD` is `omniprof CMD --help`, byte for byte
        g = omniprof("help", cmd)
        check(g.returncode == 0 and g.stdout == h.stdout, "help %s equals %s --help" % (cmd, cmd))
        check(option_in_text(cmd, top.stdout), "omniprof --help lists command %s" % cmd)
    for cmd, text in texts.items():
        for row in by_cmd.get(cmd, []):
            check(option_in_text(row["long"], text),
                  "%s --help lists %s" % (cmd or "omniprof", row["long"]))
            if row["short"]:
                check((row["short"] + ", " + row["long"]) in text,
                      "%s --help gives %s with %s" % (cmd or "omniprof", row["long"], row["short"]))
        for n, line in enumerate(text.splitlines(), 1):
            check(len(line) <= 100, "%s --help line %d has %d columns: %r" %
                  (cmd or "omniprof", n, len(line), line))
    # -v / --version, at the top and in a command
    for args in (["-v"], ["--version"], ["run", "-v"], ["run", "--version"], ["version"]):
        r = omniprof(*args)
        check(r.returncode == 0 and r.stdout.startswith("omniprof ") and
              len(r.stdout.splitlines()) == 1,
              "%s: %d %r" % (" ".join(args), r.returncode, r.stdout))
    # help of an unknown command, and no command at all
    r = omniprof("help", "rnu")
    check(r.returncode == 2 and "unknown command 'rnu' (did you mean run?)" in r.stderr,
          "help rnu: %r" % r.stderr)
    r = omniprof()
    check(r.returncode == 2 and r.stderr.startswith("usage: omniprof"),
          "no command: %d %r" % (r.returncode, r.stderr))


def t_cli_suggest():
    """"did you mean" for commands, options of every command and values; errors name the option
    and the valid values."""
    by_cmd = cli_options()
    r = omniprof("sumary")
    check(r.returncode == 2 and "unknown command 'sumary' (did you mean summary?)" in r.stderr,
          "sumary: %r" % r.stderr)
    for cmd in cli_commands(by_cmd):
        longs = [row["long"] for row in by_cmd[cmd]]
        for opt in longs:
            if len(opt) < 8:
                continue
            typo = opt[:5] + opt[6:]  # one letter dropped
            # the suggestion is the option, or another one as close to the typo
            best = min(edit_distance(typo, o) for o in longs)
            r = omniprof(cmd, typo)
            check(r.returncode == 2, "%s %s: exit %d, want 2" % (cmd, typo, r.returncode))
            got = None
            if "did you mean " in r.stderr:
                got = r.stderr.split("did you mean ", 1)[1].split("?", 1)[0]
            check(got is not None and "unknown option '%s'" % typo in r.stderr and got in longs and
                  edit_distance(typo, got) == best, "%s %s: %r" % (cmd, typo, r.stderr))
            check(r.stderr.count("\n") == 1, "%s %s: one line: %r" % (cmd, typo, r.stderr))
            check(r.stderr.startswith("omniprof %s: " % cmd),
                  "%s %s: the message names the command: %r" % (cmd, typo, r.stderr))
            break  # one option per command is enough to show the parser is the shared one
    # a value of an enumerated option: the valid values and the closest one
    for args, msg in [(["summary", "-i", "x.db", "--format", "csvv"],
                       "--format 'csvv' is not valid; expected console, csv, json or md "
                       "(did you mean csv?)"),
                      (["avail", "--format", "jsn"],
                       "--format 'jsn' is not valid; expected text or json"),
                      (["run", "--sample", "--kernel-trace=maybe"],
                       "--kernel-trace='maybe' is not valid; expected true or false"),
                      (["convert", "-i", "x.db", "-A", "relativ"], "(did you mean relative?)"),
                      (["instrument", "--method", "uprob", "--", "/bin/true"],
                       "expected auto, uprobe, audit or compiler (did you mean uprobe?)"),
                      (["run", "--output-directory"],
                       "option '--output-directory' needs a value: DIR"),
                      (["report", "-i"], "option '-i' needs at least one value: DB..."),
                      (["avail", "--counters", "stray"], "unexpected argument 'stray'")]:
        r = omniprof(*args)
        check(r.returncode == 2 and msg in r.stderr,
              "%s: %d %r" % (" ".join(args), r.returncode, r.stderr))


def config_value(text, name):
    for line in text.splitlines():
        parts = line.lstrip("# ").split(" = ", 1)
        if parts[0] == name and len(parts) == 2:
            return parts[1].split()[0]
    return None


def t_cli_bool():
    """rocprofv3's --opt BOOL: true/false/1/0/yes/no/on/off (any case), --opt=BOOL, bare --opt."""
    cases = [([], "true")]
    words = [("true", "true"), ("1", "true"), ("yes", "true"), ("on", "true"), ("TRUE", "true"),
             ("false", "false"), ("0", "false"), ("no", "false"), ("off", "false"),
             ("Off", "false")]
    for word, value in words:
        cases += [([word], value), (["=" + word], value)]
    for extra, want in cases:
        if extra and extra[0].startswith("="):
            args = ["--kernel-trace" + extra[0]]
        else:
            args = ["--kernel-trace"] + extra
        r = omniprof("run", *args, "--output-config")
        got = config_value(r.stdout, "OMNIPROF_KERNEL_TRACE")
        check(r.returncode == 0 and got == want, "run %s: KERNEL_TRACE=%r, want %r (%r)" %
              (" ".join(args), got, want, r.stderr))
    # a bare boolean before the program: the program is not taken as its value
    r = omniprof("run", "--kernel-trace", "--echo", "--output-config", "--", "/bin/true")
    check(r.returncode == 0 and config_value(r.stdout, "OMNIPROF_KERNEL_TRACE") == "true",
          "bare --kernel-trace")
    # the same parser in another command: summary's --inclusive, attach's --attach-children
    d = tmpdir()
    r = omniprof("summary", "-i", os.path.join(d, "none.db"), "--inclusive", "maybe")
    check(r.returncode == 2 and "unexpected argument 'maybe'" in r.stderr,
          "summary --inclusive maybe: %r" % r.stderr)
    r = omniprof("summary", "-i", os.path.join(d, "none.db"), "--inclusive=perhaps")
    check(r.returncode == 2 and
          "--inclusive='perhaps' is not valid; expected true or false" in r.stderr,
          "summary --inclusive=perhaps: %r" % r.stderr)


def man_dir():
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(ARGS.omniprof))), "share")


def t_cli_man():
    """omniprof(1) and omniprof-CMD(1), generated by the build from the tables: every option of
    the command in its page, the roff sections there, groff renders them without a warning."""
    by_cmd = cli_options()
    share = man_dir()
    groff = shutil.which("groff")
    for cmd in [""] + cli_commands(by_cmd):
        page = "omniprof%s%s.1" % ("-" if cmd else "", cmd)
        path = os.path.join(share, "man", "man1", page)
        check(os.path.exists(path), "the build wrote %s" % path)
        if not os.path.exists(path):
            continue
        text = open(path).read()
        r = omniprof("--print-man", cmd or "omniprof")
        check(r.returncode == 0 and r.stdout == text,
              "%s is what --print-man prints (rebuilt)" % page)
        for sect in (".TH OMNIPROF", ".SH NAME\n", ".SH SYNOPSIS\n", ".SH OPTIONS\n",
                     ".SH SEE ALSO\n"):
            check(sect in text, "%s has %r" % (page, sect.strip()))
        for row in by_cmd.get(cmd, []):
            check(option_in_text(row["long"].replace("-", "\\-"), text),
                  "%s documents %s" % (page, row["long"]))
        if groff:
            g = run([groff, "-man", "-Tascii", "-P-bou", "-ww", "-rLL=100n", path])
            check(g.returncode == 0 and not g.stderr.strip(),
                  "groff renders %s without warnings: %r" %
                  (page, g.stderr[:300]))
            plain = g.stdout
            for word in ("NAME", "SYNOPSIS", "OPTIONS"):
                check(word in plain, "%s renders its %s section" % (page, word))
            for row in by_cmd.get(cmd, []):
                check(row["long"] in plain,
                      "%s renders %s" % (page, row["long"]))
    if not groff:
        print("SKIP-CHECK: groff not installed; roff structure checked, rendering not")


def bash_complete(script, words, cword):
    """COMPREPLY of _omniprof for COMP_WORDS=words, COMP_CWORD=cword, in a bash without the
    bash-completion package (the script needs none of its helpers)."""
    prog = ('source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=%d; _omniprof; '
            'printf "%%s\\n" "${COMPREPLY[@]}"' % cword)
    r = run(["bash", "--norc", "--noprofile", "-c", prog, "bash", script] + words)
    check(r.returncode == 0, "bash completion of %r: %d %r" % (words, r.returncode, r.stderr))
    return [w for w in r.stdout.splitlines() if w]


def t_cli_doc_table():
    """docs/run.md's table of option groups names every option of `omniprof run` and no option
    that no command has (it is written by hand for its explanations, so this keeps it from
    drifting from the option table)."""
    by_cmd = cli_options()
    doc = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "run.md")
    text = open(doc, encoding="utf-8").read()
    start = text.find("| Group | Options |")
    check(start >= 0, "docs/run.md has its '| Group | Options |' table")
    table = text[start:text.find("\n\n", start)]
    named = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", table))
    every = set(row["long"] for rows in by_cmd.values() for row in rows)
    for opt in sorted(set(row["long"] for row in by_cmd["run"]) - {"--help"}):
        check(opt in named, "docs/run.md's option table names run's %s" % opt)
    for opt in sorted(named - every):
        check(False, "docs/run.md's option table names %s, which no command has" % opt)


def t_cli_completion():
    """bash completes every option of every command, the commands, and enumerated values; the
    zsh script lists every option."""
    by_cmd = cli_options()
    share = man_dir()
    bash = os.path.join(share, "bash-completion", "completions", "omniprof")
    zsh = os.path.join(share, "zsh", "site-functions", "_omniprof")
    check(os.path.exists(bash) and os.path.exists(zsh), "the build wrote %s and %s" % (bash, zsh))
    if not os.path.exists(bash):
        return
    check(open(bash).read() == omniprof("--print-completion", "bash").stdout,
          "bash script is current")
    cmds = cli_commands(by_cmd)
    got = bash_complete(bash, ["omniprof", ""], 1)
    for cmd in cmds + ["help"]:
        check(cmd in got, "bash completes command %s (%s)" % (cmd, got))
    check(bash_complete(bash, ["omniprof", "ru"], 1) == ["run"], "omniprof ru<TAB> → run")
    check(bash_complete(bash, ["omniprof", "help", "inst"], 2) == ["instrument"],
          "help inst<TAB> → instrument")
    for cmd in cmds:
        got = set(bash_complete(bash, ["omniprof", cmd, "-"], 2))
        for row in by_cmd[cmd]:
            check(row["long"] in got, "bash completes %s %s" % (cmd, row["long"]))
            if row["short"]:
                check(row["short"] in got, "bash completes %s %s" % (cmd, row["short"]))
        for row in by_cmd[cmd]:  # enumerated values after the option
            if row["kind"] == "enum":
                want = sorted(row["values"].split("|"))
                got_v = sorted(bash_complete(bash, ["omniprof", cmd, row["long"], ""], 3))
                check(got_v == want, "bash completes the values of %s %s: %s" %
                      (cmd, row["long"], got_v))
    check(bash_complete(bash, ["omniprof", "run", "--kernel-tr"], 2) == ["--kernel-trace"],
          "--kernel-tr<TAB>")
    d = tmpdir()
    os.mkdir(os.path.join(d, "outdir"))
    open(os.path.join(d, "afile"), "w").close()
    check(bash_complete(bash, ["omniprof", "run", "-d", d + "/"], 3) == [d + "/outdir"],
          "-d DIR completes directories only")
    ztext = open(zsh).read()
    check(ztext.startswith("#compdef omniprof") and
          ztext == omniprof("--print-completion", "zsh").stdout,
          "zsh script: #compdef, current")
    for cmd in cmds:
        sect = ztext.split("\n  %s)\n" % cmd, 1)
        check(len(sect) == 2, "zsh script has a case for %s" % cmd)
        if len(sect) == 2:
            body = sect[1].split("\n    ;;\n", 1)[0]
            for row in by_cmd[cmd]:
                check("'%s" % row["long"] in body or "'*%s" % row["long"] in body,
                      "zsh completes %s %s" %
                      (cmd, row["long"]))
    if not shutil.which("zsh"):
        print("SKIP-CHECK: zsh not installed (make deps installs it): zsh completion not run")
        return
    r = run(["zsh", "-n", zsh])
    check(r.returncode == 0, "zsh -n %s: %r" % (zsh, r.stderr))
    # the real completion system, in an interactive zsh on a pseudo-terminal
    zdir = os.path.dirname(zsh)
    cases = [("omniprof ru", "omniprof run "), ("omniprof help inst", "omniprof help instrument "),
             ("omniprof run --kernel-tr", "omniprof run --kernel-trace")]
    for cmd in cmds:  # an enumerated value of each command that has one, by a unique prefix
        for row in by_cmd[cmd]:
            if row["kind"] != "enum" or not row["long"].startswith("--"):
                continue
            values = row["values"].split("|")
            v = next((v for v in values if len(v) > 3 and
                      sum(w.startswith(v[:3]) for w in values) == 1), None)
            if v:
                cases.append(("omniprof %s %s %s" % (cmd, row["long"], v[:3]),
                              "omniprof %s %s %s" % (cmd, row["long"], v)))
                break
    got = zsh_complete(zdir, [line for line, _ in cases])
    check(len(got) == len(cases), "zsh answered each of the %d lines (%d)" % (len(cases), len(got)))
    for (line, want), shown in zip(cases, got):
        check(want in shown,
              "zsh completes %r to %r (the line reads %r)" % (line, want, shown[-120:]))


# One interactive zsh for every line (compinit once: it took most of the ~5 s a zsh per line
# cost here): LINE<TAB>, what the terminal shows, then ^U empties the line and the driver waits
# for the shell to read again before the next line.
ZSH_DRIVER = r"""
zmodload zsh/zpty
zpty z "env -i HOME=$1 TERM=dumb PATH=$3:/usr/bin:/bin zsh -f -i"
zpty -w z "fpath=($2 \$fpath); autoload -U compinit; compinit -u -D; PS1='PROMPT> '"
zpty -w z "print -r RE''ADY0"
zpty -r z out '*READY0*'
integer i=0
for line in "${@[4,-1]}"; do
  (( i++ ))
  zpty -w -n z "$line"$'\t'
  acc=""
  integer quiet=0
  while (( quiet < 20 )); do  # until 2 s pass with nothing new after the completion
    if zpty -r -t z out; then acc+=$out; quiet=0; else sleep 0.1; (( quiet++ )); fi
    [[ $acc == *PROMPT\>*$line?* ]] && (( quiet > 3 )) && break
  done
  print -r -- "$acc"
  print -r -- "@@END-OF-LINE@@"
  zpty -w -n z $'\x15'
  zpty -w z "print -r RE''ADY$i."
  zpty -r z out "*READY$i.*"
done
zpty -d z
"""


def zsh_complete(fpath_dir, lines):
    """What an interactive zsh shows after each LINE<TAB> with the completion in fpath_dir (one
    shell for all the lines)."""
    d = tmpdir()
    drv = os.path.join(d, "drive.zsh")
    with open(drv, "w") as f:
        f.write(ZSH_DRIVER)
    bindir = os.path.dirname(os.path.abspath(ARGS.omniprof))
    r = run(["zsh", "-f", drv, d, fpath_dir, bindir] + lines, timeout=60 + 10 * len(lines))
    return r.stdout.replace("\r", "").split("@@END-OF-LINE@@\n")[:-1]


def t_errors():
    d = tmpdir()
    marker = os.path.join(d, "ran")
    prog = ["--", "/bin/sh", "-c", "touch %s" % marker]
    afile = os.path.join(d, "afile")  # a file where -o puts a directory (issue 31)
    with open(afile, "w") as f:
        f.write("the user's file\n")
    cases = [] if os.environ.get("OPTEST_SANITIZED") else [
        # offline pass planning of --pmc (CUPTI host API: not loadable under sanitizers)
        (["--pmc", "dram__bytes_red.sum"], "closest: dram__bytes_read.sum"),
    ]
    cases += [
        (["--bogus-option"], "unknown option '--bogus-option'"),
        (["--marker-trace"], "no program to run"),
        (["--marker-trace", "--stats=maybe"], "--stats='maybe' is not valid"),
        (["--marker-trace", "-u", "years"], "sec|msec|usec|nsec"),
        (["--marker-trace", "--log-level", "loud"], "fatal|error|warning|info|trace"),
        (["--marker-trace", "-f", "xml"], "rocpd|pftrace|json|csv"),
        (["--marker-trace", "--kernel-include-regex", "("], "not a usable POSIX extended regular expression"),
        (["--marker-trace", "--kernel-exclude-regex", "a{1"], "not a usable POSIX extended regular expression"),
        (["--marker-trace", "-P", "1:x:0"], "DELAY:DURATION:REPEAT"),
        (["--marker-trace", "-P", "1:0:0"], "DURATION must be greater than 0"),
        (["--marker-trace", "-P", "1:1:1", "--collection-period-unit", "fortnight"], "hour, min, sec"),
        (["--marker-trace", "--flush-interval", "-5"], "non-negative integer"),
        (["--marker-trace", "--sampling-freq", "0"], "--sampling-freq: OMNIPROF_SAMPLING_FREQ='0' is not valid"),
        (["--marker-trace", "-o", "%nosuchkey%"], "unknown placeholder '%nosuchkey%'"),
        (["--marker-trace", "-d", "%bogus%/x"], "unknown placeholder '%bogus%'"),
        (["--marker-trace", "-d", "/etc/passwd/sub"], "is not a directory"),
        (["--marker-trace", "-d", "/proc/omniprof-nonexistent"], "cannot create directory"),
        (["--marker-trace", "-o", "dir/"], "must name a file"),
        # issue 31: -o DIR/NAME whose DIR is a file (below -d, or absolute): checked before the
        # run (the program ran and no database was written, exit 0)
        (["--marker-trace", "-o", "afile/name"], "'%s' is not a directory (it is a file)" % afile),
        (["--marker-trace", "-o", afile + "/%pid%/name"], "'%s' is not a directory" % afile),
        # issue 31: %arg<N>% past the command line (became "_results.db") or with a sign (stayed
        # literal): errors naming the placeholder and the valid range (/bin/sh -c CMD: 0 to 2)
        (["--marker-trace", "-o", "%arg99%"], "'%arg99%' is past the program's command line: %arg<N>% takes N "
                                              "from 0 (the program) to 2"),
        (["--marker-trace", "-o", "x-%arg-1%"], "'%arg-1%' is not a valid placeholder: %arg<N>% takes N from 0"),
        (["--marker-trace", "-d", d + "/%arg3%"], "'%arg3%' is past the program's command line"),
        (["--marker-trace", "--preload", "/nonexistent/libx.so"], "no such file"),
        (["--marker-trace", "-i", "/nonexistent.json"], "cannot open"),
        (["--stats"], "need something to collect"),
        ([], "nothing to collect"),
        (["-M=perhaps", "--marker-trace"], "is not valid"),
        (["--pmc", "x", "--kernel-iteration-range", "abc"], "--kernel-iteration-range 'abc' is not valid"),
        (["--pmc", "x", "--extra-metrics", "/nonexistent.xml"], "no such file"),
        (["--marker-trace", "--output-directory"], "needs a value"),
    ]
    for args, msg in cases:
        a = args if args == ["--marker-trace"] else args + prog
        r = omniprof("run", "-d", d, *a) if "-d" not in args else omniprof("run", *a)
        check(r.returncode == 2, "%s: exit %d, want 2 (stderr %r)" % (args, r.returncode, r.stderr))
        check(msg in r.stderr, "%s: message %r not in %r" % (args, msg, r.stderr))
        check(r.stderr.count("\n") <= 2, "%s: one clear message, got %r" % (args, r.stderr))
        check(not os.path.exists(marker), "%s: the program ran" % args)
    r = omniprof("run", "--marker-trace", "-d", d, "--", "/nonexistent/program")
    check(r.returncode == 2 and "cannot run" in r.stderr, "missing program: %d %r" % (r.returncode, r.stderr))
    r = omniprof("run", "--marker-trace", "-d", d, "--", "no-such-program-in-path-xyz")
    check(r.returncode == 2 and "not found in PATH" in r.stderr, "program not in PATH: %r" % r.stderr)
    # unwritable directory (root ignores permissions: use a read-only file system)
    ro = "/proc/self"
    r = omniprof("run", "--marker-trace", "-d", ro, *prog)
    check(r.returncode == 2 and "cannot create files" in r.stderr, "unwritable dir: %d %r" % (r.returncode, r.stderr))
    if os.geteuid() != 0:
        locked = os.path.join(d, "locked")
        os.mkdir(locked, 0o555)
        r = omniprof("run", "--marker-trace", "-d", locked, *prog)
        check(r.returncode == 2, "0555 dir: %d" % r.returncode)
    # issue 31: the same output check for `omniprof sample` (and instrument, attach: their tests)
    r = omniprof("sample", "-d", d, "-o", "afile/name", *prog)
    check(r.returncode == 2 and "'%s' is not a directory" % afile in r.stderr, "sample -o afile/name: %d %r" %
          (r.returncode, r.stderr))
    with open(afile) as f:
        check(f.read() == "the user's file\n", "the file under -o is untouched")
    # issue 31: -i with many jobs: refused at once (the old code took 5-9 s for 50,000 and 423 s
    # for 200,000 in JSON on the busy 2-core VM: the job list was grown by walking it to its end,
    # the --pmc groups by copying them, for every job; now 0.4-0.6 s), in JSON and as `pmc:` lines
    for name, text in (("many.json", json.dumps({"jobs": [{"pmc": ["SQ_WAVES"]} for _ in range(200000)]})),
                       ("many.txt", "pmc: SQ_WAVES\n" * 200000)):
        many = os.path.join(d, name)
        with open(many, "w") as f:
            f.write(text)
        t0 = time.monotonic()
        r = omniprof("run", "-d", d, "-i", many, *prog, timeout=300)
        took = time.monotonic() - t0
        check(r.returncode == 2 and "-i %s: line 1: 200000 jobs; at most 64" % many in r.stderr,
              "%s, 200,000 jobs: %d %r" % (name, r.returncode, r.stderr))
        check(took < 10, "%s: 200,000 jobs refused in %.1f s (limit 10 s)" % (name, took))
    check(not os.path.exists(marker), "the program ran")
    check(dbs_in(d) == [], "no database written on errors")
    # OMNIPROF_CUDA_DRIVER_API_CALLS (docs/cuda.md): a name the driver API does not have is said
    # once, naming it and the valid spelling; the listed real names and 'launches' are not; the
    # program runs (the CUDA backend, built here without a GPU, checks the names at start)
    cuda_lib = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(ARGS.omniprof))), "lib",
                            "libomniprof-backend-cuda.so")
    if os.path.exists(cuda_lib) and not os.environ.get("OPTEST_SANITIZED"):
        env = dict(os.environ, OMNIPROF_CUDA_DRIVER_API_CALLS="Launches, cuBogus,cuMemcpyHtoD")
        r = omniprof("run", "--kernel-trace", "-d", d, "-o", "drvcalls", "--", "/bin/touch", marker,
                     env=env)  # one process (sh -c would say it in sh and in touch)
        bad = [ln for ln in r.stderr.splitlines() if "is not a CUDA driver API call" in ln]
        check(r.returncode == 0 and os.path.exists(marker), "driver calls: the program ran (%d %r)" %
              (r.returncode, r.stderr))
        check(len(bad) == 1 and "'cuBogus'" in bad[0] and "cuLaunchKernel" in bad[0],
              "driver calls: one line names cuBogus and a valid spelling: %r" % bad)
        # the runtime's list the same way, groups 'copies' and 'syncs' included
        env = dict(os.environ, OMNIPROF_CUDA_RUNTIME_API_CALLS="launches,Copies, syncs,cudaBogus,cudaMemcpyAsync")
        r = omniprof("run", "--kernel-trace", "-d", d, "-o", "rtcalls", "--", "/bin/touch", marker, env=env)
        bad = [ln for ln in r.stderr.splitlines() if "is not a CUDA" in ln]
        check(r.returncode == 0, "runtime calls: the program ran (%d %r)" % (r.returncode, r.stderr))
        check(len(bad) == 1 and "OMNIPROF_CUDA_RUNTIME_API_CALLS: 'cudaBogus' is not a CUDA runtime API call" in bad[0]
              and "cudaLaunchKernel" in bad[0], "runtime calls: one line names cudaBogus and a valid spelling: %r" % bad)


def t_echo():
    d = tmpdir()
    r = omniprof("run", "--marker-trace", "--echo", "-d", d, "-o", "x%pid%", "--flush-interval=250",
                 "-M", "--", ARGS.victim, "normal", "1")
    check(r.returncode == 0, "echo run exit %d %r" % (r.returncode, r.stderr))
    env = {}
    for line in r.stderr.splitlines():
        if line.startswith("export "):
            k, _, v = line[7:].partition("=")
            env[k] = v
    check(env.get("OMNIPROF_MARKER_TRACE") == "true", "echo MARKER_TRACE: %r" % env)
    check(env.get("OMNIPROF_OUTPUT_PATH") == d, "echo OUTPUT_PATH %r" % env.get("OMNIPROF_OUTPUT_PATH"))
    check(env.get("OMNIPROF_OUTPUT_FILE") == "x%pid%", "echo OUTPUT_FILE")
    check(env.get("OMNIPROF_FLUSH_INTERVAL") == "250", "echo FLUSH_INTERVAL")
    check(env.get("OMNIPROF_DEMANGLE_KERNELS") == "false", "echo -M → DEMANGLE_KERNELS=false")
    lp = env.get("LD_PRELOAD", "")
    check("libomniprof-tool.so" in lp and "libomniprof-sdk.so" in lp, "echo LD_PRELOAD %r" % lp)
    check(any(l.startswith("exec ") and ARGS.victim in l for l in r.stderr.splitlines()), "echo prints the command")
    check("normal done" in r.stdout, "program output unchanged")
    # --torch (docs/python.md): kernels, markers, the runtime's launch/copy/sync calls and the
    # driver's launch calls, not the whole runtime API; the hook first on PYTHONPATH; a list of
    # the user's own stays
    for own, want in ((None, "launches,copies,syncs"), ("cudaLaunchKernel", "cudaLaunchKernel")):
        e = dict(os.environ)
        e.pop("OMNIPROF_CUDA_RUNTIME_API_CALLS", None)
        if own:
            e["OMNIPROF_CUDA_RUNTIME_API_CALLS"] = own
        r = omniprof("run", "--torch", "--echo", "-d", d, "--", ARGS.victim, "normal", "1", env=e)
        ex = dict(l[7:].split("=", 1) for l in r.stderr.splitlines() if l.startswith("export ") and "=" in l)
        check(r.returncode == 0 and ex.get("OMNIPROF_TORCH") == "true" and ex.get("OMNIPROF_KERNEL_TRACE") == "true"
              and ex.get("OMNIPROF_MARKER_TRACE") == "true" and ex.get("OMNIPROF_CUDA_DRIVER_API_CALLS") == "launches"
              and "OMNIPROF_CUDA_RUNTIME_API_TRACE" not in ex
              and (own or ex.get("OMNIPROF_CUDA_RUNTIME_API_CALLS") == want)
              and ex.get("PYTHONPATH", "").split(":")[0].endswith("torch_hook"),
              "--torch's settings (own runtime list %r): %r" % (own, ex))
    # --preload goes first
    r = omniprof("run", "--marker-trace", "--echo", "-d", d, "--preload", "libm.so.6", "--", ARGS.victim, "normal", "1")
    lp = [l for l in r.stderr.splitlines() if l.startswith("export LD_PRELOAD=")]
    check(lp and lp[0].split("=", 1)[1].split(":")[0] == "libm.so.6", "--preload first in LD_PRELOAD: %r" % lp)
    # --runtime-trace / --sys-trace expand
    r = omniprof("run", "--sys-trace", "--echo", "-d", d, "--", "/bin/true")
    for k in ["KERNEL_TRACE", "MEMORY_COPY_TRACE", "MEMORY_SET_TRACE", "MEMORY_ALLOCATION_TRACE", "MARKER_TRACE",
              "CUDA_RUNTIME_API_TRACE", "CUDA_DRIVER_API_TRACE", "SYNC_TRACE"]:
        check("export OMNIPROF_%s=true" % k in r.stderr, "--sys-trace sets %s" % k)
    r = omniprof("run", "--marker-trace", "--echo", "-d", d, "-P", "1:2:3", "0.5:0.25:0", "--collection-period-unit",
                 "msec", "--", "/bin/true")
    check("export OMNIPROF_COLLECTION_PERIOD=1000000:2000000:3;500000:250000:0" in r.stderr,
          "collection period in ns: %r" % r.stderr)


def t_input_json():
    d = tmpdir()
    cfg = os.path.join(d, "opts.json")
    with open(cfg, "w") as f:
        json.dump({"jobs": [{"marker_trace": True, "output_directory": d, "output_file": "fromjson",
                             "flush-interval": 100, "preload": ["libm.so.6"]}]}, f)
    r = omniprof("run", "-i", cfg, "--echo", "--", ARGS.victim, "normal", "3")
    check(r.returncode == 0, "-i run: %d %r" % (r.returncode, r.stderr))
    check("export OMNIPROF_FLUSH_INTERVAL=100" in r.stderr, "-i flush interval")
    dbs = dbs_in(d)
    check(dbs == [os.path.join(d, "fromjson_results.db")], "-i output name: %r" % dbs)
    if dbs:
        check_db(dbs[0], marks={"m": 3}, ranges={"r": 3})
    # the same value on both sides is fine; a different one is an error naming both
    r = omniprof("run", "-i", cfg, "--marker-trace", "-o", "fromjson", "--echo", "--", "/bin/true")
    check(r.returncode == 0, "-i + same CLI value: %d %r" % (r.returncode, r.stderr))
    r = omniprof("run", "-i", cfg, "-o", "other", "--", "/bin/true")
    check(r.returncode == 2 and "--output-file is 'other' on the command line but 'fromjson'" in r.stderr,
          "-i conflict: %r" % r.stderr)
    bad = os.path.join(d, "bad.json")
    with open(bad, "w") as f:
        f.write('{"marker_trace": true, "no_such_option": 1}')
    r = omniprof("run", "-i", bad, "--", "/bin/true")
    check(r.returncode == 2 and "unknown option \"no_such_option\"" in r.stderr, "-i unknown key: %r" % r.stderr)
    with open(bad, "w") as f:
        f.write('{"marker_trace": tru')
    r = omniprof("run", "-i", bad, "--", "/bin/true")
    check(r.returncode == 2 and "bad.json" in r.stderr, "-i bad JSON: %r" % r.stderr)


def t_avail_settings():
    r = omniprof("avail", "--settings")
    check(r.returncode == 0, "avail --settings exit")
    for name in ["OMNIPROF_MARKER_TRACE", "OMNIPROF_OUTPUT_PATH", "OMNIPROF_OUTPUT_FILE", "OMNIPROF_FLUSH_INTERVAL",
                 "OMNIPROF_SIGNAL_HANDLERS", "OMNIPROF_SAMPLE", "OMNIPROF_LOG_LEVEL", "OMNIPROF_RUN_MANIFEST"]:
        check(name in r.stdout, "avail lists %s" % name)
    r = omniprof("avail", "--settings", "--format", "json")
    check(r.returncode == 0, "avail json exit")
    rows = json.loads(r.stdout)
    byname = {x["variable"]: x for x in rows}
    s = byname.get("OMNIPROF_OUTPUT_FILE", {})
    check(s.get("type") == "STRING" and s.get("default") == "%hostname%/%pid%" and s.get("description"),
          "json row for OUTPUT_FILE: %r" % s)
    check(byname.get("OMNIPROF_SUMMARY_UNITS", {}).get("choices") == "sec|msec|usec|nsec", "json choices")
    check(len(rows) == len(set(byname)), "no duplicate settings")
    # the kinds a setting turns on come from kinds.def's rows (a multi-kind flag expands there)
    check(byname["OMNIPROF_KERNEL_TRACE"].get("kinds") == ["KERNEL_DISPATCH", "CODE_OBJECT", "KERNEL_SYMBOL"],
          "json kinds of KERNEL_TRACE: %r" % byname["OMNIPROF_KERNEL_TRACE"].get("kinds"))
    check(byname["OMNIPROF_SAMPLE"].get("kinds") == ["CPU_SAMPLE", "FUNCTION_WRAPPER", "THREAD", "REGION_PROFILE",
                                                    "CPU_SAMPLE_EVENT"],
          "json kinds of SAMPLE: %r" % byname["OMNIPROF_SAMPLE"].get("kinds"))
    check(byname["OMNIPROF_PMC"].get("kinds") == ["DISPATCH_HEADER", "VALUE"], "json kinds of PMC")
    check(byname["OMNIPROF_OUTPUT_PATH"].get("kinds") == [], "json kinds of OUTPUT_PATH")
    line = [x for x in omniprof("avail", "--settings").stdout.splitlines() if x.startswith("MPI_TRACE ")]
    check(len(line) == 1 and line[0].endswith("(kinds: MPI_API CLOCK_SYNC)"), "text kinds of MPI_TRACE: %r" % line)
    r = omniprof("avail", "--format", "yaml")
    check(r.returncode == 2 and "text or json" in r.stderr, "avail bad format")
    r = omniprof("avail", "--bogus")
    check(r.returncode == 2, "avail bad option")


# ------------------------------------------------------------------------------------------------
# Tool tests


def t_basic():
    d = tmpdir()
    r = traced(d, "normal", "25")
    check(r.returncode == 0, "exit %d %r" % (r.returncode, r.stderr))
    check(r.stdout == "normal done\n", "program output unchanged: %r" % r.stdout)
    dbs = dbs_in(d)
    # issue 36 item 6: one line says where the database went, with its size in sensible units
    want = ["omniprof: database: %s (" % p for p in dbs]
    lines = r.stderr.splitlines()
    check(len(lines) == 1 and len(want) == 1 and lines[0].startswith(want[0]) and
          re.search(r"\((\d+ B|[\d.]+ (KiB|MiB|GiB))\)$", lines[0]),
          "one message from omniprof, where the database went: %r" % r.stderr)
    host = os.uname().nodename
    check(len(dbs) == 1, "one database: %r" % dbs)
    if not dbs:
        return
    # the default name is %hostname%/%pid%; exec keeps the pid, so it is the launcher's child pid
    check(os.path.dirname(dbs[0]) == os.path.join(d, host), "database under DIR/<hostname>/: %s" % dbs[0])
    got = check_db(dbs[0], marks={"m": 25}, ranges={"r": 25})
    base = os.path.basename(dbs[0])
    check(base == "%d_results.db" % got["pids"][0] if got["pids"] else False, "named <pid>_results.db: %s" % base)
    con = connect(dbs[0])
    n = con.execute("SELECT count(*) FROM regions").fetchone()[0]
    check(n == 25, "exactly 25 regions, got %d" % n)
    n = con.execute("SELECT count(*) FROM rocpd_sample").fetchone()[0]
    check(n == 25, "exactly 25 samples (marks), got %d" % n)
    bad = con.execute("SELECT count(*) FROM regions WHERE end < start").fetchone()[0]
    check(bad == 0, "regions have start <= end")
    cost = dict(con.execute("SELECT name, value FROM omniprof_run_cost").fetchall()) if \
        con.execute("SELECT count(*) FROM sqlite_master WHERE name='omniprof_run_cost'").fetchone()[0] else {}
    check("tool_records" in cost and cost["tool_records"] == 50, "run cost tool_records: %r" % cost.get("tool_records"))
    check(not os.path.exists(dbs[0] + "-wal") or os.path.getsize(dbs[0] + "-wal") == 0, "WAL checkpointed at exit")


def t_placeholders():
    d = tmpdir()
    env = dict(os.environ, OP_TOOL_TEST_DIR="envdir", OMPI_COMM_WORLD_RANK="3", OMPI_COMM_WORLD_SIZE="4")
    r = omniprof("run", "--marker-trace", "-d", d + "/%env{OP_TOOL_TEST_DIR}%/r%rank%of%size%/%pid%", "-o",
                 "%tag%-%pid%", "--", ARGS.victim, "normal", "2", env=env)
    check(r.returncode == 0, "exit %d %r" % (r.returncode, r.stderr))
    dbs = dbs_in(d)
    check(len(dbs) == 1, "one db: %r" % dbs)
    if dbs:
        pid = counts(connect(dbs[0]))["pids"][0]
        want = os.path.join(d, "envdir", "r3of4", str(pid), "tool_victim-%d_results.db" % pid)
        check(dbs[0] == want, "placeholders expanded in the traced process: %s, want %s" % (dbs[0], want))
        check_db(dbs[0], marks={"m": 2}, ranges={"r": 2})
    # the launcher created only the process-independent part of -d
    check(sorted(os.listdir(os.path.join(d, "envdir", "r3of4"))) == [str(pid)] if dbs else False,
          "no directory named after the launcher's pid")


def t_kernel_names():
    # Kernel records from a stand-in backend (no GPU needed): demangled by default, mangled
    # with -M, truncated with -T; each dispatch stored once.
    want = {(): "void square<float>(float*, int)", ("-M",): "_Z6squareIfEvPT_i", ("-T",): "square",
            ("-M", "-T"): "_Z6squareIfEvPT_i"}
    for opts, name in want.items():
        d = tmpdir()
        r = omniprof("run", "--kernel-trace", *opts, "-d", d, "-o", "k", "--", ARGS.fake_kernels, "3")
        check(r.returncode == 0, "%s: exit %d %r" % (opts, r.returncode, r.stderr))
        if "emitted 0" in r.stdout:
            print("SKIP: KERNEL_DISPATCH cannot be configured in this build")
            sys.exit(77)
        check("emitted 3" in r.stdout, "%s: %r" % (opts, r.stdout))
        con = connect(os.path.join(d, "k_results.db"))
        rows = con.execute("SELECT name, count(*) FROM kernels GROUP BY name").fetchall()
        check(rows == [(name, 3)], "%s: kernels %r, want [(%r, 3)]" % (opts, rows, name))


def t_threads():
    d = tmpdir()
    r = traced(d, "threads", "5000")
    check(r.returncode == 0, "exit %d" % r.returncode)
    dbs = dbs_in(d)
    check(len(dbs) == 1, "one db")
    if dbs:
        check_db(dbs[0], marks={"t": 20000})
        con = connect(dbs[0])
        per = sorted(n for (n,) in con.execute(
            "SELECT count(*) FROM rocpd_sample s JOIN rocpd_track t ON t.id = s.track_id GROUP BY t.tid"))
        check(per == [5000] * 4, "5000 marks on each of 4 threads: %r" % per)


def t_demo():
    if not ARGS.demo or not os.path.exists(ARGS.demo):
        print("SKIP: demo not built")
        sys.exit(77)
    d = tmpdir()
    r = omniprof("run", "--marker-trace", "-d", d, "-o", "demo", "--", ARGS.demo, "3", "7")
    check(r.returncode == 0, "demo exit %d %r" % (r.returncode, r.stderr))
    check(r.stdout.startswith("demo: 3 threads x 7 iterations"), "demo output %r" % r.stdout)
    dbs = dbs_in(d)
    check(dbs == [os.path.join(d, "demo_results.db")], "demo db %r" % dbs)
    if dbs:
        check_db(dbs[0], ranges={"iteration": 21, "compute": 3, "main": 1, "setup": 1},
                 marks={"done": 3, "finished": 1})


def t_exit_status():
    d = tmpdir()
    r = traced(d, "exit7", "4")
    check(r.returncode == 7, "exit 7 passes through: %d" % r.returncode)
    dbs = dbs_in(d)
    check(len(dbs) == 1, "one db")
    if dbs:
        check_db(dbs[0], marks={"m": 4})


def t_abort():
    d = tmpdir()
    r = traced(d, "abort", "12")
    check(r.returncode == -signal.SIGABRT, "abort: status %d, want -6" % r.returncode)
    dbs = dbs_in(d)
    check(len(dbs) == 1, "one db %r" % dbs)
    if dbs:
        check_db(dbs[0], marks={"m": 12})


def t_segv():
    for mode in ["segv", "segv_fault"]:
        d = tmpdir()
        r = traced(d, mode, "9")
        check(r.returncode == -signal.SIGSEGV, "%s: status %d, want -11" % (mode, r.returncode))
        dbs = dbs_in(d)
        check(len(dbs) == 1, "%s: one db %r" % (mode, dbs))
        if dbs:
            check_db(dbs[0], marks={"m": 9})


def wait_line(p, want, timeout=20):
    end = time.time() + timeout
    while time.time() < end:
        line = p.stdout.readline()
        if not line:
            return False
        if line.strip() == want:
            return True
    return False


def t_sigterm():
    d = tmpdir()
    p = subprocess.Popen([ARGS.omniprof, "run", "--marker-trace", "-d", d, "--", ARGS.victim, "wait_term", "15"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(wait_line(p, "ready"), "victim ready")
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=30)
    check(p.returncode == -signal.SIGTERM, "SIGTERM: status %d, want -15" % p.returncode)
    dbs = dbs_in(d)
    check(len(dbs) == 1, "one db %r" % dbs)
    if dbs:
        check_db(dbs[0], marks={"m": 15})
    # fork mode (post-run work requested): the launcher forwards SIGTERM and returns 128+15
    d = tmpdir()
    p = subprocess.Popen([ARGS.omniprof, "run", "--marker-trace", "--summary", "--summary-output-file", "stdout", "-d",
                          d, "--", ARGS.victim, "wait_term", "5"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    check(wait_line(p, "ready"), "victim ready (fork mode)")
    time.sleep(0.2)
    p.send_signal(signal.SIGTERM)
    p.communicate(timeout=60)
    check(p.returncode == 128 + signal.SIGTERM, "fork mode SIGTERM: status %d, want 143" % p.returncode)
    dbs = dbs_in(d)
    check(len(dbs) == 1, "one db (fork mode) %r" % dbs)
    if dbs:
        check_db(dbs[0], marks={"m": 5})


def t_handler():
    d = tmpdir()
    p = subprocess.Popen([ARGS.omniprof, "run", "--marker-trace", "-d", d, "--", ARGS.victim, "handler", "6"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(wait_line(p, "ready"), "victim ready")
    p.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    check(p.returncode == 0, "handled signals: exit %d %r" % (p.returncode, err))
    check(out == "handled 15\nhandled 2\nexiting\n", "the program's handlers ran, output unchanged: %r" % out)
    dbs = dbs_in(d)
    check(len(dbs) == 1, "one db")
    if dbs:
        check_db(dbs[0], marks={"m": 12})
    # with --disable-signal-handlers the program's handlers run the same
    d = tmpdir()
    p = subprocess.Popen([ARGS.omniprof, "run", "--marker-trace", "--disable-signal-handlers", "-d", d, "--",
                          ARGS.victim, "handler", "6"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(wait_line(p, "ready"), "victim ready (disabled)")
    p.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=30)
    check(p.returncode == 0 and out == "handled 15\nhandled 2\nexiting\n", "disabled handlers: %r" % out)


AFFINITIES = """
import os
for t in sorted(os.listdir('/proc/self/task')):
    comm = open('/proc/self/task/%s/comm' % t).read().strip()
    cpus = [l.split()[1] for l in open('/proc/self/task/%s/status' % t) if l.startswith('Cpus_allowed_list')]
    print('THREAD', comm, cpus[0] if cpus else '?')
"""


def t_worker_cpus():
    """OMNIPROF_WORKER_CPUS: omniprof's own threads (the database writer, the tool's flush and
    signal threads, all made before the program's main) run on the CPUs named and the program's
    keep theirs, also when the program was started pinned elsewhere (as under taskset); a bad list
    stops the launcher with a message naming the setting; a list of no CPU of the machine is said
    once and ignored."""
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        print("SKIP: one CPU only: nothing to keep omniprof's threads away from")
        sys.exit(77)
    first, last = str(allowed[0]), str(allowed[-1])

    def threads(pin=None, cpus=None):
        env = dict(os.environ)
        if cpus is not None:
            env["OMNIPROF_WORKER_CPUS"] = cpus
        d = tmpdir()
        r = omniprof("run", "--marker-trace", "-d", d, "--", sys.executable, "-c", AFFINITIES, env=env,
                     preexec_fn=(lambda: os.sched_setaffinity(0, {pin})) if pin is not None else None)
        check(r.returncode == 0, "exit %d: %s" % (r.returncode, r.stderr[-300:]))
        check(len(dbs_in(d)) == 1, "database written")
        rows = [ln.split()[1:] for ln in r.stdout.splitlines() if ln.startswith("THREAD")]
        ours = {c: cpus for c, cpus in rows if c.startswith("omniprof")}
        check({"omniprof-db", "omniprof-flush"} <= set(ours), "omniprof's threads listed: %r" % rows)
        return ours, [cpus for c, cpus in rows if not c.startswith("omniprof")]

    full = subprocess.run([sys.executable, "-c", AFFINITIES], stdout=subprocess.PIPE, text=True).stdout
    want_main = [ln.split()[2] for ln in full.splitlines() if ln.startswith("THREAD")][0]
    ours, prog = threads(cpus=last)
    check(all(c == last for c in ours.values()), "omniprof's threads on CPU %s: %r" % (last, ours))
    check(prog and all(c == want_main for c in prog), "the program's threads keep %s: %r" % (want_main, prog))
    # the program pinned to one CPU (taskset), omniprof's threads on another
    ours, prog = threads(pin=allowed[0], cpus=last)
    check(all(c == last for c in ours.values()), "pinned program: omniprof's threads on CPU %s: %r" % (last, ours))
    check(prog and all(c == first for c in prog), "pinned program: its threads stay on CPU %s: %r" % (first, prog))
    # unset: omniprof's threads run where the program's may
    ours, prog = threads(pin=allowed[0])
    check(all(c == first for c in ours.values()), "unset: omniprof's threads where the program's: %r" % ours)
    r = omniprof("run", "--marker-trace", "-d", tmpdir(), "--", "true", env=dict(os.environ, OMNIPROF_WORKER_CPUS="abc"))
    check(r.returncode != 0 and "OMNIPROF_WORKER_CPUS='abc' is not valid" in r.stderr,
          "a bad list is refused, naming the setting: %d %r" % (r.returncode, r.stderr[-300:]))
    r = omniprof("run", "--marker-trace", "-d", tmpdir(), "--", "true",
                 env=dict(os.environ, OMNIPROF_WORKER_CPUS=str(os.cpu_count() + 1000)))
    check(r.returncode == 0 and r.stderr.count("names no CPU of this machine") == 1,
          "a list of no CPU of the machine is said once and ignored: %d %r" % (r.returncode, r.stderr[-300:]))


def t_python_sigint():
    # CPython installs its SIGINT handler without SA_RESTART and relies on EINTR to raise
    # KeyboardInterrupt in a blocking read: under the tool it must behave the same.
    def attempt(prefix):
        p = subprocess.Popen(prefix + [sys.executable, "-c",
                                       "import sys; print('ready', flush=True); sys.stdin.read()"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ok = wait_line(p, "ready")
        time.sleep(0.3)
        p.send_signal(signal.SIGINT)
        try:
            _, err = p.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            return ok, None, ""
        return ok, p.returncode, err
    ok0, rc0, err0 = attempt([])
    d = tmpdir()
    ok1, rc1, err1 = attempt([ARGS.omniprof, "run", "--marker-trace", "-d", d, "--"])
    check(ok0 and ok1, "python started")
    check(rc1 is not None, "^C interrupts a blocking read under the tool (no hang)")
    check(rc1 == rc0, "same status as without the tool: %r vs %r" % (rc1, rc0))
    check("KeyboardInterrupt" in err1, "KeyboardInterrupt raised: %r" % err1[-200:])
    check(len(dbs_in(d)) == 1, "database written")


def t_sigkill():
    # After SIGKILL the database opens cleanly and misses at most about one flush interval
    # (the tool's 100 ms here plus the writer's commit interval, OMNIPROF_DB_FLUSH_INTERVAL_MS).
    d = tmpdir()
    env = dict(os.environ, OMNIPROF_DB_FLUSH_INTERVAL_MS="200")
    p = subprocess.Popen([ARGS.omniprof, "run", "--marker-trace", "--flush-interval", "100", "-d", d, "-o", "killed",
                          "--", ARGS.victim, "slow_print", "1000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env)
    made = 0
    while made < 150:
        line = p.stdout.readline()
        if not line:
            break
        made = int(line)
    p.kill()
    p.wait(timeout=30)
    check(p.returncode == -signal.SIGKILL, "killed: %d" % p.returncode)
    path = os.path.join(d, "killed_results.db")
    con = sqlite3.connect(path, timeout=10)  # read-write: recovers the WAL like any later reader
    check(con.execute("PRAGMA integrity_check").fetchone()[0] == "ok", "integrity after SIGKILL")
    n = con.execute("SELECT count(*) FROM rocpd_sample").fetchone()[0]
    con.close()
    # marks come every ~10 ms: 300 ms of lag is ~30 marks; allow 60 for a loaded machine
    check(made - 60 <= n <= made + 10, "after SIGKILL at %d marks the database holds %d" % (made, n))


def t_degraded():
    # The tool cannot open its database: one clear line, and the program runs unchanged.
    lib = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(ARGS.omniprof))), "lib")
    env = dict(os.environ, LD_PRELOAD=os.path.join(lib, "libomniprof-tool.so"), OMNIPROF_MARKER_TRACE="true",
               OMNIPROF_OUTPUT_PATH="/proc/self/no-such-dir")
    r = run([ARGS.victim, "exit7", "3"], env=env)
    check(r.returncode == 7, "exit status unchanged: %d" % r.returncode)
    lines = [l for l in r.stderr.splitlines() if l]
    # the tool's line, then at most the SDK's note that the tool was deactivated
    check(1 <= len(lines) <= 2 and lines[0].startswith("omniprof: ") and "no-such-dir" in lines[0],
          "one clear line: %r" % r.stderr)
    check(r.stdout == "", "output unchanged")
    # a bad setting in the environment: reported, default used, program unchanged
    env = dict(os.environ, LD_PRELOAD=os.path.join(lib, "libomniprof-tool.so"), OMNIPROF_MARKER_TRACE="true",
               OMNIPROF_FLUSH_INTERVAL="soon", OMNIPROF_OUTPUT_PATH=tmpdir())
    r = run([ARGS.victim, "normal", "2"], env=env)
    check(r.returncode == 0 and r.stdout == "normal done\n", "bad setting: program unchanged")
    check("OMNIPROF_FLUSH_INTERVAL='soon' is not valid" in r.stderr, "bad setting reported: %r" % r.stderr)


def t_exit_thread():
    d = tmpdir()
    r = traced(d, "exit_thread", "8")
    check(r.returncode == 3, "exit(3) from a thread: %d" % r.returncode)
    dbs = dbs_in(d)
    check(len(dbs) == 1, "one db")
    if dbs:
        check_db(dbs[0], marks={"m": 8})


def t_fork():
    d = tmpdir()
    r = traced(d, "fork", "7")
    check(r.returncode == 0, "fork exit %d %r" % (r.returncode, r.stderr))
    dbs = dbs_in(d)
    check(len(dbs) == 2, "two databases (parent, child): %r" % dbs)
    parent = [x for x in dbs if counts(connect(x))["marks"].get("parent")]
    child = [x for x in dbs if counts(connect(x))["marks"].get("child")]
    check(len(parent) == 1 and len(child) == 1 and parent != child, "one parent db and one child db")
    if len(parent) == 1 and len(child) == 1:
        check_db(parent[0], marks={"parent": 14, "child": 0})
        check_db(child[0], marks={"child": 7})
        pp = counts(connect(parent[0]))["pids"]
        cp = counts(connect(child[0]))["pids"]
        check(pp != cp, "different pids %r %r" % (pp, cp))


def t_forkexec():
    forkexec("forkexec")
    forkexec("vforkexec")


def forkexec(mode):
    d = tmpdir()
    r = traced(d, mode, "5")
    check(r.returncode == 0, "forkexec exit %d %r" % (r.returncode, r.stderr))
    check("normal done" in r.stdout, "exec'ed program ran")
    dbs = dbs_in(d)
    check(len(dbs) == 2, "two databases (parent, exec'ed child): %r" % dbs)
    ex = [x for x in dbs if counts(connect(x))["marks"].get("m")]
    check(len(ex) == 1, "the exec'ed program wrote its own database")
    if ex:
        check_db(ex[0], marks={"m": 5, "parent": 0}, ranges={"r": 5})
    par = [x for x in dbs if counts(connect(x))["marks"].get("parent")]
    if par:
        check_db(par[0], marks={"parent": 10})


def t_reader():
    """A reader sees the database grow while the program runs: the program makes 100 marks and
    waits (it prints "step K" and reads a line); the test waits for the event — the 100 marks in
    the database, committed by the periodic flush — then lets it go on (no timing assumption)."""
    d = tmpdir()
    p = subprocess.Popen([ARGS.omniprof, "run", "--marker-trace", "--flush-interval", "100", "-d", d, "-o", "reader",
                          "--", ARGS.victim, "steps", "100"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    path = os.path.join(d, "reader_results.db")
    seen = []
    for step in (1, 2):
        line = p.stdout.readline()
        check(line.strip() == "step %d" % step, "the program reached step %d (%r)" % (step, line))
        n, end = -1, time.time() + 120
        while n < 100 * step and time.time() < end:
            if os.path.exists(path):
                try:
                    con = sqlite3.connect("file:%s?mode=ro" % path, uri=True, timeout=5)
                    n = con.execute("SELECT count(*) FROM rocpd_sample").fetchone()[0]
                    con.close()
                    seen.append(n)
                except sqlite3.Error as e:
                    check(False, "reader query during the run: %s" % e)
                    break
            time.sleep(0.05)
        check(n == 100 * step, "while the program waits at step %d, a reader sees its %d marks (%d)" %
              (step, 100 * step, n))
        p.stdin.write("go\n")
        p.stdin.flush()
    p.stdin.close()
    p.wait(timeout=120)
    check(p.returncode == 0, "steps exit %d" % p.returncode)
    check(seen == sorted(seen), "counts never go back: %r" % seen)
    check_db(path, marks={"m": 300})


def t_twenty():
    d = tmpdir()
    procs = [subprocess.Popen([ARGS.omniprof, "run", "--marker-trace", "-d", d, "--", ARGS.victim, "normal", "20"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(20)]
    for p in procs:
        p.wait(timeout=120)
        check(p.returncode == 0, "process exit %d" % p.returncode)
    dbs = dbs_in(d)
    check(len(dbs) == 20 and len(set(dbs)) == 20, "twenty databases: %d" % len(dbs))
    pids = set()
    for x in dbs:
        got = check_db(x, marks={"m": 20}, ranges={"r": 20})
        pids.update(got["pids"])
    check(len(pids) == 20, "twenty pids")
    # a fixed name: suffixes, never overwritten
    d = tmpdir()
    procs = [subprocess.Popen([ARGS.omniprof, "run", "--marker-trace", "-d", d, "-o", "same", "--", ARGS.victim,
                               "normal", "5"], stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(20)]
    for p in procs:
        p.wait(timeout=120)
    dbs = dbs_in(d)
    check(len(dbs) == 20, "twenty databases with -o same: %r" % [os.path.basename(x) for x in dbs])
    check(os.path.join(d, "same_results.db") in dbs and os.path.join(d, "same-19_results.db") in dbs,
          "suffixes -1..-19")
    for x in dbs:
        check_db(x, marks={"m": 5})


def t_postrun():
    d = tmpdir()
    r = omniprof("run", "--marker-trace", "--stats", "--summary", "--summary-output-file", "stdout", "-d", d, "-o",
                 "pr", "--", ARGS.victim, "normal", "6")
    if "not built" in r.stderr:
        print("SKIP: libomniprof-output is not built")
        sys.exit(77)
    check(r.returncode == 0, "post-run exit %d %r" % (r.returncode, r.stderr))
    check("normal done" in r.stdout, "program output")
    check(os.path.exists(os.path.join(d, "pr_results.db")), "database")
    stats = [f for f in os.listdir(d) if f.endswith("_stats.csv")]
    check(len(stats) > 0, "stats files: %r" % os.listdir(d))
    r = omniprof("run", "--marker-trace", "-f", "rocpd", "csv", "-d", d, "-o", "csv", "--", ARGS.victim, "exit7", "2")
    check(r.returncode == 7, "post-run keeps the exit status: %d" % r.returncode)


def t_collection_period():
    # 100 marks, one every 10 ms (about 1 s); collect only from 0.3 s to 0.6 s after start.
    d = tmpdir()
    r = omniprof("run", "--marker-trace", "-P", "300:300:1", "--collection-period-unit", "msec", "-d", d, "-o", "cp",
                 "--", ARGS.victim, "slow", "100")
    check(r.returncode == 0, "exit %d %r" % (r.returncode, r.stderr))
    path = os.path.join(d, "cp_results.db")
    con = connect(path)
    n = con.execute("SELECT count(*) FROM rocpd_sample").fetchone()[0]
    check(10 <= n <= 45, "marks inside a 0.3 s window of a ~1 s run: %d" % n)
    first, last = con.execute("SELECT min(timestamp), max(timestamp) FROM rocpd_sample").fetchone()
    if n:
        check(last - first <= 330e6, "collected marks span at most the window: %.0f ms" % ((last - first) / 1e6))


def t_multipass():
    d = tmpdir()
    a, b, c = "dram__bytes_read.sum", "sm__cycles_elapsed.max", "gpu__time_duration.sum"
    r = omniprof("run", "--marker-trace", "--pmc", a, b, "--pmc", c, "-d", d, "--", ARGS.victim, "normal", "2")
    check(r.returncode == 0, "exit %d %r" % (r.returncode, r.stderr))
    check("pass 1 of 2: --pmc %s %s" % (a, b) in r.stderr and "pass 2 of 2: --pmc %s" % c in r.stderr,
          "passes announced: %r" % r.stderr)
    # Offline pass planning runs before the program, once per group, on stderr.
    check("group 1 of 2" in r.stderr and "need 1 pass" in r.stderr, "pass counts printed: %r" % r.stderr)
    check(r.stdout.count("normal done") == 2, "the program ran once per group: %r" % r.stdout)
    check(len(dbs_in(d)) == 2, "one database per pass: %r" % dbs_in(d))
    r = omniprof("run", "--marker-trace", "--pmc", a, "--pmc", b, "-d", d, "--", ARGS.victim, "exit7", "1")
    check(r.returncode == 7, "multi-pass keeps the exit status: %d" % r.returncode)


def t_sample():
    d = tmpdir()
    r = omniprof("sample", "--echo", "-d", d, "--", ARGS.victim, "normal", "2")
    if "CPU backend, which is not built" in r.stderr:
        check(r.returncode == 2 and "normal done" not in r.stdout, "sample without the CPU backend: clear error")
        print("SKIP: the CPU backend is not built")
        sys.exit(77)
    check(r.returncode == 0, "sample exit %d %r" % (r.returncode, r.stderr))
    check("export OMNIPROF_SAMPLE=cputime" in r.stderr, "sample sets OMNIPROF_SAMPLE=cputime")
    check("libomniprof-backend-cpu.so" in r.stderr, "sample preloads the CPU backend")
    r = omniprof("run", "--sample", "realtime", "--sampling-freq", "500", "--process-sampling", "0.05", "--echo",
                 "-d", d, "--", "/bin/true")
    check(r.returncode == 0, "run --sample realtime: %d %r" % (r.returncode, r.stderr))
    for want in ["OMNIPROF_SAMPLE=realtime", "OMNIPROF_SAMPLING_FREQ=500", "OMNIPROF_PROCESS_SAMPLING=true",
                 "OMNIPROF_PROCESS_SAMPLING_INTERVAL=0.05"]:
        check("export " + want in r.stderr, "sets " + want)


def t_bad_numbers():
    # Issue 11, "bad numbers accepted or misread": each is refused before the program starts,
    # with one message naming the option or setting, the value and the valid range.
    d = tmpdir()
    marker = os.path.join(d, "ran")
    prog = ["--", "/bin/sh", "-c", "touch %s" % marker]
    cases = [
        (["--marker-trace", "--sampling-freq", "nan"], {}, ["OMNIPROF_SAMPLING_FREQ='nan'", "(0,100000]", "NaN"]),
        (["--marker-trace", "--sampling-freq=inf"], {}, ["OMNIPROF_SAMPLING_FREQ='inf'", "NaN and infinity"]),
        (["--marker-trace", "-P", "nan:1:0"], {}, ["--collection-period 'nan:1:0'", "NaN"]),
        (["--marker-trace", "-P", "1:inf:0"], {}, ["--collection-period '1:inf:0'", "NaN"]),
        (["--marker-trace", "-P", "1e10:1:0", "--collection-period-unit", "hour"], {},
         ["--collection-period '1e10:1:0'", "[0,8760]", "hour"]),
        (["--marker-trace", "-P", "-1:2:3"], {}, ["--collection-period '-1:2:3'", "[0,31536000]"]),
        (["--marker-trace", "-P", "1:2:1.5"], {}, ["--collection-period '1:2:1.5'", "integer REPEAT"]),
        (["--marker-trace", "--process-sampling", "nan"], {}, ["OMNIPROF_PROCESS_SAMPLING_INTERVAL='nan'",
                                                              "[0.001,86400]"]),
        (["--marker-trace", "--process-sampling", "0"], {}, ["OMNIPROF_PROCESS_SAMPLING_INTERVAL='0'", "[0.001,86400]"]),
        (["--marker-trace", "--process-sampling=-1"], {}, ["OMNIPROF_PROCESS_SAMPLING_INTERVAL='-1'"]),
        (["--marker-trace", "--flush-interval", "99999999999999999999"], {}, ["OMNIPROF_FLUSH_INTERVAL", "too large"]),
        (["--marker-trace", "--flush-interval", "010"], {}, None),  # decimal ten, accepted
        (["--marker-trace"], {"OMNIPROF_SAMPLING_DELAY": "1e300"}, ["OMNIPROF_SAMPLING_DELAY='1e300'", "[0,31536000]",
                                                                   "in the environment"]),
        (["--marker-trace"], {"OMNIPROF_SAMPLING_DELAY": "inf"}, ["OMNIPROF_SAMPLING_DELAY='inf'", "NaN and infinity"]),
        (["--marker-trace"], {"OMNIPROF_SAMPLING_TIDS": "5-1"}, ["OMNIPROF_SAMPLING_TIDS='5-1'", "reversed range"]),
        (["--marker-trace"], {"OMNIPROF_PROCESS_SAMPLING_INTERVAL": "0"}, ["OMNIPROF_PROCESS_SAMPLING_INTERVAL='0'"]),
        (["--marker-trace"], {"OMNIPROF_PROCESS_SAMPLING_INTERVAL": "-1"}, ["OMNIPROF_PROCESS_SAMPLING_INTERVAL='-1'"]),
        (["--marker-trace"], {"OMNIPROF_DB_FLUSH_INTERVAL_MS": "0"}, ["OMNIPROF_DB_FLUSH_INTERVAL_MS='0'", "[1,60000]"]),
        (["--marker-trace"], {"OMNIPROF_DB_FLUSH_INTERVAL_MS": "600000"}, ["[1,60000]"]),
        (["--marker-trace"], {"OMNIPROF_DB_SPOOL_CHUNK_KB": "1"}, ["OMNIPROF_DB_SPOOL_CHUNK_KB='1'", "[64,65536]"]),
        (["--marker-trace"], {"OMNIPROF_DB_SPOOL_CHUNK_KB": "1000000"}, ["[64,65536]"]),
        # a bad inherited value that an option replaces does not matter
        (["--marker-trace", "--flush-interval", "5"], {"OMNIPROF_FLUSH_INTERVAL": "soon"}, None),
    ]
    for args, env, want in cases:
        if os.path.exists(marker):
            os.unlink(marker)
        r = omniprof("run", "-d", d, *args, *prog, env=dict(os.environ, **env))
        what = "%s %s" % (args, env)
        if want is None:
            check(r.returncode == 0 and os.path.exists(marker), "%s: accepted and run: %d %r" % (what, r.returncode,
                                                                                              r.stderr))
            continue
        check(r.returncode == 2, "%s: exit %d, want 2 (stderr %r)" % (what, r.returncode, r.stderr))
        for w in want:
            check(w in r.stderr, "%s: %r not in %r" % (what, w, r.stderr))
        check(r.stderr.count("\n") == 1, "%s: one message, got %r" % (what, r.stderr))
        check(not os.path.exists(marker), "%s: the program ran" % what)
    # an hour of delay is kept in ns, not wrapped to 0
    r = omniprof("run", "--marker-trace", "--echo", "-P", "1:0.5:2", "--collection-period-unit", "hour", "-d", d, "--",
                 "/bin/true")
    check("export OMNIPROF_COLLECTION_PERIOD=3600000000000:1800000000000:2" in r.stderr, "-P in hours: %r" % r.stderr)
    # A regex whose repetitions expand to ten million elements: refused at once, in bounded memory.
    if os.path.exists(marker):
        os.unlink(marker)
    t0 = time.time()
    r = omniprof("run", "--marker-trace", "--kernel-include-regex", "a{1000}{1000}{10}", "-d", d, *prog)
    took = time.time() - t0
    check(r.returncode == 2 and "too large once its repetitions are expanded" in r.stderr, "regex bomb: %d %r" % (
        r.returncode, r.stderr))
    check(took < 5, "regex bomb refused quickly (%.1f s; it took 10 s and 2 GB before)" % took)
    check(not os.path.exists(marker), "regex bomb: the program ran")
    # Repetitions of repetitions (fuzz_settings found it: over 100 s inside glibc's regcomp at a
    # size estimate of 8,192): refused at once, naming the nesting; a usual pattern still runs.
    t0 = time.time()
    r = omniprof("run", "--marker-trace", "--kernel-include-regex", "k??+++++++++++", "-d", d, *prog)
    took = time.time() - t0
    check(r.returncode == 2 and "repeats a repetition 13 deep" in r.stderr, "nested repetitions: %d %r" % (
        r.returncode, r.stderr))
    check(took < 5, "nested repetitions refused quickly (%.1f s)" % took)
    check(not os.path.exists(marker), "nested repetitions: the program ran")
    r = omniprof("run", "--marker-trace", "--kernel-include-regex", "(gemm|conv)+_.*?[0-9]*", "-d", d, *prog)
    check(r.returncode == 0, "a usual pattern with '.*?' runs: %d %r" % (r.returncode, r.stderr[-300:]))


def t_env_warnings():
    # An unknown OMNIPROF_* name: a warning with the closest setting, the run goes on. A bad
    # value seen by the tool directly (no launcher): reported once per process (the SDK, the
    # tool and the CPU backend each read the settings), the default used, the program unchanged.
    d = tmpdir()
    env = dict(os.environ, OMNIPROF_FLUSH_INTERVL="100")
    r = omniprof("run", "--marker-trace", "-d", d, "--", ARGS.victim, "normal", "2", env=env)
    check(r.returncode == 0 and r.stdout == "normal done\n", "unknown name: the run goes on (%d)" % r.returncode)
    check("OMNIPROF_FLUSH_INTERVL is not an omniprof setting (did you mean OMNIPROF_FLUSH_INTERVAL?)" in r.stderr,
          "unknown name warned with the closest: %r" % r.stderr)
    lines = [l for l in r.stderr.splitlines() if "OMNIPROF_FLUSH_INTERVL" in l]
    # issue 31: once, by the launcher, before the run (the program's process said it again)
    check(len(lines) == 1 and lines[0].startswith("omniprof run: warning:"), "once, by the launcher: %r" % lines)
    # also when the program starts processes of its own (each loads the tool)
    r = omniprof("run", "--marker-trace", "-d", d, "--", "/bin/sh", "-c", "%s normal 1; %s normal 1" %
                 (ARGS.victim, ARGS.victim), env=env)
    lines = [l for l in r.stderr.splitlines() if "OMNIPROF_FLUSH_INTERVL" in l]
    check(r.returncode == 0 and len(lines) == 1, "once for a program of three processes: %r" % lines)
    lib = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(ARGS.omniprof))), "lib")
    preload = [os.path.join(lib, "libomniprof-tool.so"), os.path.join(lib, "libomniprof-sdk.so")]
    cpu = os.path.join(lib, "libomniprof-backend-cpu.so")
    if os.path.exists(cpu):
        preload.append(cpu)
    env = dict(os.environ, LD_PRELOAD=":".join(preload), OMNIPROF_MARKER_TRACE="true", OMNIPROF_OUTPUT_PATH=d,
               OMNIPROF_OUTPUT_FILE="direct", OMNIPROF_FLUSH_INTERVAL="soon", OMNIPROF_SAMPLING_TIDS="5-1",
               OMNIPROF_SAMPLING_DELAY="inf", OMNIPROF_TRACE_DURATON="1")
    r = run([ARGS.victim, "normal", "3"], env=env)
    check(r.returncode == 0 and r.stdout == "normal done\n", "program unchanged: %d %r" % (r.returncode, r.stdout))
    for what in ["OMNIPROF_FLUSH_INTERVAL='soon'", "OMNIPROF_SAMPLING_TIDS='5-1'", "OMNIPROF_SAMPLING_DELAY='inf'",
                 "OMNIPROF_TRACE_DURATON is not an omniprof setting (did you mean OMNIPROF_TRACE_DURATION?)"]:
        n = sum(1 for l in r.stderr.splitlines() if what in l)
        check(n == 1, "%s reported once per process, got %d: %r" % (what, n, r.stderr))
    check("using the default '1000'" in r.stderr, "the default named: %r" % r.stderr)
    check_db(os.path.join(d, "direct_results.db"), marks={"m": 3})


def t_option_settings():
    # Every option that feeds a setting reaches it under the setting's own name (the option
    # table names settings by id: a missing setting does not compile).
    d = tmpdir()
    xml = os.path.join(d, "m.xml")
    with open(xml, "w") as f:
        f.write("<omniprof-metrics/>")
    r = omniprof("run", "--echo", "-d", d, "-o", "n", "--kernel-trace", "--memory-copy-trace", "--memory-set-trace",
                 "--memory-allocation-trace", "--marker-trace", "--cuda-runtime-trace", "--cuda-driver-trace",
                 "--sync-trace", "--extra-metrics", xml, "--kernel-iteration-range", "[1, [3-5]]",
                 "--sample", "realtime", "--sampling-freq", "250", "--process-sampling", "0.5", "-f", "rocpd",
                 "--stats=false", "--summary=false", "--summary-output-file", "stdout", "-u", "msec",
                 "--kernel-include-regex", "sax.*", "--kernel-exclude-regex", "^x", "-P", "1:2:3",
                 "--collection-period-unit", "msec", "--flush-interval", "250", "-M", "-T", "--log-level", "error",
                 "--disable-signal-handlers", "--", "/bin/true")
    check(r.returncode == 0, "echo run: %d %r" % (r.returncode, r.stderr))
    env = dict(l[7:].split("=", 1) for l in r.stderr.splitlines() if l.startswith("export "))
    want = {"KERNEL_TRACE": "true", "MEMORY_COPY_TRACE": "true", "MEMORY_SET_TRACE": "true",
            "MEMORY_ALLOCATION_TRACE": "true", "MARKER_TRACE": "true", "CUDA_RUNTIME_API_TRACE": "true",
            "CUDA_DRIVER_API_TRACE": "true", "SYNC_TRACE": "true", "EXTRA_METRICS": xml,
            "KERNEL_ITERATION_RANGE": "[1, [3-5]]", "SAMPLE": "realtime", "SAMPLING_FREQ": "250",
            "PROCESS_SAMPLING": "true", "PROCESS_SAMPLING_INTERVAL": "0.5", "OUTPUT_FORMAT": "rocpd",
            "OUTPUT_FILE": "n", "OUTPUT_PATH": d, "STATS": "false", "SUMMARY": "false", "SUMMARY_OUTPUT_FILE": "stdout",
            "SUMMARY_UNITS": "msec", "KERNEL_INCLUDE_REGEX": "sax.*", "KERNEL_EXCLUDE_REGEX": "^x",
            "COLLECTION_PERIOD": "1000000:2000000:3", "FLUSH_INTERVAL": "250", "DEMANGLE_KERNELS": "false",
            "TRUNCATE_KERNELS": "true", "LOG_LEVEL": "error", "SIGNAL_HANDLERS": "false"}
    for k, v in want.items():
        check(env.get("OMNIPROF_" + k) == v, "OMNIPROF_%s=%r, want %r" % (k, env.get("OMNIPROF_" + k), v))
    names = set(json.loads(omniprof("avail", "--settings", "--format", "json").stdout) and
                [x["variable"] for x in json.loads(omniprof("avail", "--settings", "--format", "json").stdout)])
    for k in env:
        if k.startswith("OMNIPROF_"):
            check(k in names, "the launcher sets only registered settings: %s" % k)
    # a misspelt option gets the closest one
    r = omniprof("run", "--kernel-tarce", "--", "/bin/true")
    check(r.returncode == 2 and "did you mean --kernel-trace?" in r.stderr, "closest option: %r" % r.stderr)


def t_avail_cpu():
    # The CPU lists come from the CPU backend's catalog calls (the CLI has no backend header).
    r = omniprof("avail", "--cpu-events", "--components", "--format", "json")
    if r.returncode == 1 and "CPU backend is not available" in r.stderr:
        print("SKIP: the CPU backend is not built")
        sys.exit(77)
    check(r.returncode == 0, "avail --cpu-events: %d %r" % (r.returncode, r.stderr))
    doc = json.loads(r.stdout)
    ev = {e["name"]: e for e in doc["cpu_events"]}
    check(ev.get("task-clock", {}).get("available") is True, "task-clock available: %r" % ev.get("task-clock"))
    check("cycles" in ev and ev["cycles"]["type"] == "hardware", "cycles listed as hardware")
    check(ev["cycles"]["available"] or ev["cycles"].get("reason"), "a reason when unavailable: %r" % ev["cycles"])
    check([c["name"] for c in doc["components"]][:2] == ["wall_clock", "thread_cpu_clock"], "components listed")
    r = omniprof("avail", "--cpu-events")
    check(r.returncode == 0 and "task-clock" in r.stdout and "AVAIL" in r.stdout, "text listing")


def t_launcher_signals():
    # Post-run mode: SIGINT, SIGTERM and SIGHUP sent to the launcher reach the program, whose
    # status becomes the launcher's (128+N); killing the launcher takes the program with it.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        d = tmpdir()
        p = subprocess.Popen([ARGS.omniprof, "run", "--marker-trace", "--summary", "--summary-output-file", "stdout",
                              "-d", d, "--", ARGS.victim, "wait_pid", "4"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        line = p.stdout.readline()
        check(line.startswith("pid "), "victim started: %r" % line)
        p.send_signal(sig)
        try:
            p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
        check(p.returncode == 128 + sig, "%s forwarded: launcher status %d, want %d" % (sig.name, p.returncode,
                                                                                     128 + sig))
        dbs = dbs_in(d)
        check(len(dbs) == 1, "%s: the database %r" % (sig.name, dbs))
        if dbs and sig != signal.SIGHUP:  # SIGHUP's flush in the program is issue 11 item 4 (tool side)
            check_db(dbs[0], marks={"m": 4})
    d, tmp = tmpdir(), tmpdir()
    env = dict(os.environ, TMPDIR=tmp)
    p = subprocess.Popen([ARGS.omniprof, "run", "--marker-trace", "--stats", "-d", d, "--", ARGS.victim, "wait_pid",
                          "3"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    line = p.stdout.readline()
    check(line.startswith("pid "), "victim started: %r" % line)
    child = int(line.split()[1]) if line.startswith("pid ") else None
    p.kill()
    p.wait(timeout=30)
    left = os.listdir(tmp)
    check(len(left) == 1 and left[0].startswith("omniprof-run-") and "-%d-" % p.pid in left[0],
          "a SIGKILLed launcher leaves its manifest in $TMPDIR, named with its pid: %s" % left)
    gone = False
    end = time.time() + 30
    while child and time.time() < end and not gone:
        try:
            with open("/proc/%d/stat" % child) as f:
                gone = f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
        except OSError:
            gone = True
        time.sleep(0.05)
    check(gone, "the program (pid %s) does not outlive a killed launcher" % child)
    dbs = dbs_in(d)
    check(len(dbs) == 1, "killed launcher: the program's database %r" % dbs)
    if dbs:
        check_db(dbs[0], marks={"m": 3})  # the program got SIGTERM and flushed
    # the next omniprof command removes the leftovers of this user's dead omniprof processes in
    # $TMPDIR (its pid namespace's), files and flat folders, and nothing else
    ns = os.stat("/proc/self/ns/pid").st_ino
    gone_pid = subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True).stdout.strip()
    dead_dir = os.path.join(tmp, "omniprof-attach-%d-%s-Ab12Cd" % (ns, gone_pid))
    os.mkdir(dead_dir)
    for f in ("config", "log"):
        open(os.path.join(dead_dir, f), "w").close()
    kept = ["omniprof-run-%d-%d-Ab12Cd" % (ns, os.getpid()),       # its process lives
            "omniprof-run-%d-%s-Ab12Cd" % (ns + 1, gone_pid),      # another pid namespace
            "omniprof-run-%d-%s-Ab12Cde" % (ns, gone_pid),         # not a name omniprof makes
            "omniprof-run-%s-Ab12Cd" % gone_pid]                   # the old names: no namespace
    for k in kept:
        open(os.path.join(tmp, k), "w").close()
    r = subprocess.run([ARGS.omniprof, "run", "--marker-trace", "--stats", "-d", tmpdir(), "--", ARGS.victim,
                        "normal", "1"], capture_output=True, text=True, env=env, timeout=120)
    check(r.returncode == 0, "the next run: exit %d %s" % (r.returncode, r.stderr[-300:]))
    left = sorted(os.listdir(tmp))
    check(left == sorted(kept), "after the next run $TMPDIR holds only the live or foreign entries: %s" % left)


def t_input_formats():
    # -i takes rocprofv3's JSON, YAML and text files; several jobs differing only in pmc run
    # once per job; errors name the file, line and column.
    d = tmpdir()
    y = os.path.join(d, "opts.yaml")
    with open(y, "w") as f:
        f.write("jobs:\n  - marker_trace: true\n    output_file: fromyaml\n    flush_interval: 150\n"
                "    preload: [libm.so.6]\n    summary_units: msec\n")
    r = omniprof("run", "-i", y, "--echo", "-d", d, "--", ARGS.victim, "normal", "2")
    if "YAML input is not built" in r.stderr or "cannot be loaded" in r.stderr:
        print("SKIP: no libyaml here: %s" % r.stderr.strip())
        sys.exit(77)
    check(r.returncode == 0, "-i yaml: %d %r" % (r.returncode, r.stderr))
    for want in ["OMNIPROF_FLUSH_INTERVAL=150", "OMNIPROF_SUMMARY_UNITS=msec", "LD_PRELOAD=libm.so.6:"]:
        check("export " + want in r.stderr, "yaml sets %s: %r" % (want, r.stderr))
    check(dbs_in(d) == [os.path.join(d, "fromyaml_results.db")], "yaml output name: %r" % dbs_in(d))
    # top-level keys (no jobs), a null leaves an option unset
    with open(y, "w") as f:
        f.write("marker-trace: yes\nflush_interval: ~\nkernel_include_regex: 'sax.*'\n")
    r = omniprof("run", "-i", y, "--echo", "-d", d, "--", "/bin/true")
    check(r.returncode == 0 and "export OMNIPROF_KERNEL_INCLUDE_REGEX=sax.*" in r.stderr and
          "OMNIPROF_FLUSH_INTERVAL" not in r.stderr, "yaml top level: %r" % r.stderr)
    with open(y, "w") as f:
        f.write("jobs:\n  - marker_trace: true\n    flush_interval: [1, [2]]\n")
    r = omniprof("run", "-i", y, "--", "/bin/true")
    check(r.returncode == 2 and "opts.yaml" in r.stderr and "nested" in r.stderr, "yaml nested list: %r" % r.stderr)
    with open(y, "w") as f:
        f.write("jobs:\n  - marker_trace: true\n   bad: [\n")
    r = omniprof("run", "-i", y, "--", "/bin/true")
    check(r.returncode == 2 and "opts.yaml: line " in r.stderr, "bad yaml names line: %r" % r.stderr)
    # an alias repeated (a "billion laughs" document) stays bounded
    with open(y, "w") as f:
        f.write("a: &a [x, x, x, x, x, x, x, x, x, x]\n")
        for k in "bcdefghij":
            f.write("%s: &%s [*%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s]\n" % ((k, k) + (chr(ord(k) - 1),) * 10))
    t0 = time.time()
    r = omniprof("run", "-i", y, "--", "/bin/true")
    check(r.returncode == 2 and "too many or too deeply nested" in r.stderr and time.time() - t0 < 10,
          "alias bomb refused: %r" % r.stderr)
    # text: one pass per pmc line
    t = os.path.join(d, "input.txt")
    with open(t, "w") as f:
        f.write("# passes\npmc: dram__bytes_read.sum, sm__cycles_elapsed.max\n\npmc: gpu__time_duration.sum\n")
    r = omniprof("run", "-i", t, "--marker-trace", "-d", d, "--", ARGS.victim, "normal", "1")
    check(r.returncode == 0, "-i text: %d %r" % (r.returncode, r.stderr))
    check("pass 1 of 2: --pmc dram__bytes_read.sum sm__cycles_elapsed.max" in r.stderr and
          "pass 2 of 2: --pmc gpu__time_duration.sum" in r.stderr, "text pmc lines are passes: %r" % r.stderr)
    check(r.stdout.count("normal done") == 2, "the program ran once per line")
    # JSON jobs differing only in pmc = --pmc passes; differing in anything else = passes of
    # their own (issue 36 item 5; was an error)
    j = os.path.join(d, "jobs.json")
    with open(j, "w") as f:
        json.dump({"jobs": [{"marker_trace": True, "pmc": ["gpu__time_duration.sum"]},
                            {"marker_trace": True, "pmc": "dram__bytes_read.sum"}]}, f)
    r = omniprof("run", "-i", j, "-d", d, "--", ARGS.victim, "normal", "1")
    check(r.returncode == 0 and "pass 2 of 2: --pmc dram__bytes_read.sum" in r.stderr, "json jobs: %r" % r.stderr)
    with open(j, "w") as f:
        json.dump({"jobs": [{"marker_trace": True, "pmc": "gpu__time_duration.sum"},
                            {"marker_trace": False, "kernel_trace": True}]}, f)
    r = omniprof("run", "-i", j, "-d", d, "--", ARGS.victim, "normal", "1")
    check(r.returncode == 0 and 'job 1 of 2 (the jobs differ in "marker_trace"' in r.stderr and
          "job 2 of 2" in r.stderr and r.stdout.count("normal done") == 2,
          "jobs differing: one pass each: %r" % r.stderr)


def t_config_files():
    # environment < system file < user file < -c files < command line; --output-config prints
    # the resolved settings as a configuration file that -c reads back.
    d = tmpdir()
    sysf, userf, cf = (os.path.join(d, n) for n in ("system.cfg", "user.cfg", "c.cfg"))
    with open(sysf, "w") as f:
        f.write("# system\nOMNIPROF_FLUSH_INTERVAL = 111\nOMNIPROF_BUFFER_SIZE = 65536\nmarker-trace = true\n"
                "OMNIPROF_SAMPLING_TIDS = 0\n")
    with open(userf, "w") as f:
        f.write("OMNIPROF_FLUSH_INTERVAL = 222\nsummary_units = usec\nOMNIPROF_DB_FLUSH_INTERVAL_MS = 300\n")
    with open(cf, "w") as f:
        f.write('flush_interval = 333   # the -c file wins over the user file\nOMNIPROF_LOG_LEVEL = "error"\n'
                "OMNIPROF_COLLECTION_PERIOD = 5000000:6000000:1\n")
    env = dict(os.environ, OMNIPROF_SYSTEM_CONFIG_FILE=sysf, OMNIPROF_CONFIG_FILE=userf,
               OMNIPROF_BUFFER_SIZE="8192", OMNIPROF_DB_FLUSH_INTERVAL_MS="900", OMNIPROF_SAMPLING_MAX_DEPTH="64")
    r = omniprof("run", "-c", cf, "--echo", "-u", "sec", "-d", d, "--", "/bin/true", env=env)
    check(r.returncode == 0, "config run: %d %r" % (r.returncode, r.stderr))
    got = dict(l[7:].split("=", 1) for l in r.stderr.splitlines() if l.startswith("export "))
    want = {"OMNIPROF_FLUSH_INTERVAL": "333", "OMNIPROF_BUFFER_SIZE": "65536", "OMNIPROF_MARKER_TRACE": "true",
            "OMNIPROF_SUMMARY_UNITS": "sec", "OMNIPROF_DB_FLUSH_INTERVAL_MS": "300", "OMNIPROF_LOG_LEVEL": "error",
            "OMNIPROF_COLLECTION_PERIOD": "5000000:6000000:1", "OMNIPROF_SAMPLING_TIDS": "0"}
    for k, v in want.items():
        check(got.get(k) == v, "%s=%r, want %r (layers)" % (k, got.get(k), v))
    check("OMNIPROF_SAMPLING_MAX_DEPTH" not in got, "a setting no layer sets stays the environment's")
    # --output-config: the resolved values and where each came from; no program needed, none run
    r = omniprof("run", "-c", cf, "--output-config", "-u", "sec", env=env)
    check(r.returncode == 0, "--output-config: %d %r" % (r.returncode, r.stderr))
    lines = {l.split("=")[0].strip(): l for l in r.stdout.splitlines() if not l.startswith("#") and "=" in l}
    check(lines.get("OMNIPROF_FLUSH_INTERVAL", "").split("#")[1].strip() == cf, "flush interval from -c: %r" %
          lines.get("OMNIPROF_FLUSH_INTERVAL"))
    check(lines.get("OMNIPROF_SUMMARY_UNITS", "").endswith("# command line"), "units from the command line")
    check(lines.get("OMNIPROF_BUFFER_SIZE", "").split("#")[1].strip() == sysf, "buffer size from the system file")
    check(lines.get("OMNIPROF_SAMPLING_MAX_DEPTH", "").endswith("# environment"), "max depth from the environment")
    check("# OMNIPROF_FINALIZE_TIMEOUT_MS = 5000" in r.stdout, "defaults commented out")
    out = os.path.join(d, "resolved.cfg")
    with open(out, "w") as f:
        f.write(r.stdout)
    env2 = dict(os.environ, OMNIPROF_SYSTEM_CONFIG_FILE="none", OMNIPROF_CONFIG_FILE="none",
                OMNIPROF_SAMPLING_MAX_DEPTH="64")
    r2 = omniprof("run", "-c", out, "--output-config", env=env2)
    strip = lambda text: sorted(l.split("#")[0].strip() for l in text.splitlines() if l and not l.startswith("#"))
    check(r2.returncode == 0 and strip(r2.stdout) == strip(r.stdout), "--output-config reads back the same: %r" %
          set(strip(r.stdout)).symmetric_difference(strip(r2.stdout)))
    # errors name the file and line
    for text, msg in [("kernel_trce = 1\n", "unknown key \"kernel_trce\" (did you mean kernel-trace?)"),
                      ("flush-interval = -3\n", "OMNIPROF_FLUSH_INTERVAL='-3' is not valid"),
                      ("OMNIPROF_SAMPLING_TIDS = 5-1\n", "reversed range"),
                      ("just words\n", "expected KEY = value"),
                      ('a = "open\n', "must end with its quote")]:
        with open(cf, "w") as f:
            f.write("# first\n" + text)
        r = omniprof("run", "-c", cf, "--marker-trace", "--", "/bin/true", env=env)
        check(r.returncode == 2 and (cf + ":2: ") in r.stderr and msg in r.stderr, "%r: %r" % (text, r.stderr))
    r = omniprof("run", "-c", os.path.join(d, "missing.cfg"), "--marker-trace", "--", "/bin/true", env=env)
    check(r.returncode == 2 and "missing.cfg: cannot open" in r.stderr, "missing -c file: %r" % r.stderr)
    # the default user file is ~/.omniprof.cfg
    home = tmpdir()
    with open(os.path.join(home, ".omniprof.cfg"), "w") as f:
        f.write("OMNIPROF_FLUSH_INTERVAL = 444\n")
    env3 = dict(os.environ, HOME=home, OMNIPROF_SYSTEM_CONFIG_FILE="none")
    env3.pop("OMNIPROF_CONFIG_FILE", None)
    r = omniprof("run", "--marker-trace", "--echo", "-d", d, "--", "/bin/true", env=env3)
    check("export OMNIPROF_FLUSH_INTERVAL=444" in r.stderr, "~/.omniprof.cfg read: %r" % r.stderr)
    # an unreadable ~/.omniprof.cfg (EACCES) is as no file, with one warning (root reads any file:
    # then the launcher runs as 'nobody' through setpriv)
    os.chmod(os.path.join(home, ".omniprof.cfg"), 0)
    # a fresh output directory: d/<host>, made by root's runs above, would not take nobody's
    # database (the launcher now says so before the run: issue 31)
    dn = tmpdir()
    for p in (home, dn):
        os.chmod(p, 0o777)
    drop = []
    if os.geteuid() == 0:
        drop = [shutil.which("setpriv") or "", "--reuid=65534", "--regid=65534", "--clear-groups"]
    if drop and not drop[0]:
        print("SKIP-CHECK: unreadable ~/.omniprof.cfg not checked: running as root without setpriv")
    else:
        r = run(drop + [ARGS.omniprof, "run", "--marker-trace", "--echo", "-d", dn, "--", "/bin/true"], env=env3)
        warn = [l for l in r.stderr.splitlines() if ".omniprof.cfg" in l]
        check(r.returncode == 0 and "export OMNIPROF_FLUSH_INTERVAL=444" not in r.stderr and len(warn) == 1 and
              "cannot read it" in warn[0] and "ignored" in warn[0], "unreadable ~/.omniprof.cfg: one warning, run goes "
              "on: %d %r" % (r.returncode, r.stderr))
    r = omniprof("run", "-v")
    check(r.returncode == 0 and r.stdout.startswith("omniprof "), "run -v: %r" % r.stdout)
    r = omniprof("run", "--version")
    check(r.returncode == 0 and r.stdout.startswith("omniprof "), "run --version")


def t_extra_metrics():
    # issue 13: --extra-metrics is honoured by the check before the run, and an unknown counter
    # stops the run before it starts (it used to print "unknown counter" and run anyway).
    if os.environ.get("OPTEST_SANITIZED"):
        print("SKIP: the offline --pmc check is skipped under sanitizers (CUPTI host API)")
        sys.exit(77)
    d = tmpdir()
    xml = os.path.join(d, "extra.xml")
    with open(xml, "w") as f:
        f.write('<omniprof-metrics><global><metric name="MY_RATIO" expr="dram__bytes_read.sum / '
                'dram__bytes_write.sum" descr="read/write"/></global></omniprof-metrics>')
    marker = os.path.join(d, "ran")
    prog = ["--", "/bin/sh", "-c", "touch %s" % marker]
    r = omniprof("run", "--pmc", "MY_RATIO", "-d", d, *prog)
    if "no hardware-counter backend" in r.stderr or "cannot load" in r.stderr:
        print("SKIP: no counters module in this build")
        sys.exit(77)
    check(r.returncode == 2 and "unknown counter or metric 'MY_RATIO'" in r.stderr, "not defined: %r" % r.stderr)
    check(not os.path.exists(marker), "the program did not run")
    r = omniprof("run", "--pmc", "MY_RATIO", "--extra-metrics", xml, "-d", d, *prog)
    check(r.returncode == 0 and "need 1 pass" in r.stderr and os.path.exists(marker),
          "defined by --extra-metrics: planned and run: %d %r" % (r.returncode, r.stderr))
    os.unlink(marker)
    r = omniprof("run", "--pmc", "MY_RATIO", "NOT_A_COUNTER", "--extra-metrics", xml, "-d", d, *prog)
    check(r.returncode == 2 and "unknown counter or metric 'NOT_A_COUNTER'" in r.stderr and
          "MY_RATIO" not in r.stderr.split("NOT_A_COUNTER")[0], "one unknown counter stops it: %r" % r.stderr)
    check(not os.path.exists(marker), "the program did not run")
    with open(xml, "w") as f:
        f.write('<omniprof-metrics><global><metric name="BROKEN" expr="1 * * 2"/></global></omniprof-metrics>')
    r = omniprof("run", "--pmc", "BROKEN", "--extra-metrics", xml, "-d", d, *prog)
    check(r.returncode == 2 and "--extra-metrics %s" % xml in r.stderr and "bad expression" in r.stderr,
          "a metrics file that does not load stops the run: %r" % r.stderr)
    check(not os.path.exists(marker), "the program did not run")


def t_derived_outputs():
    # issue 11: no output replaces an existing file. A fixed -o run after run gets NAME-1 with
    # its own derived files; a derived file left from a run whose database is gone, and an
    # existing --summary-output-file, are kept: the new output takes the next free -N name.
    d = tmpdir()
    for _ in range(2):
        r = omniprof("run", "--marker-trace", "-d", d, "-o", "p", "-f", "pftrace", "--", ARGS.victim, "normal", "2")
        if "not built" in r.stderr:
            print("SKIP: libomniprof-output is not built")
            sys.exit(77)
        check(r.returncode == 0, "run: %d %r" % (r.returncode, r.stderr))
    names = sorted(os.listdir(d))
    check("p_results.pftrace" in names and "p-1_results.pftrace" in names, "each database its own trace: %r" % names)
    stale = os.path.join(d, "p_results.pftrace")
    with open(stale, "rb") as f:
        before = f.read()
    for x in os.listdir(d):
        if x.endswith(".db") or x.startswith("p-1"):
            os.unlink(os.path.join(d, x))
    r = omniprof("run", "--marker-trace", "-d", d, "-o", "p", "-f", "pftrace", "--", ARGS.victim, "normal", "3")
    check(r.returncode == 0 and stale + " exists" in r.stderr, "stale trace kept, said: %r" % r.stderr)
    with open(stale, "rb") as f:
        check(f.read() == before, "the existing trace is unchanged")
    check(os.path.exists(os.path.join(d, "p-1_results.pftrace")), "the new trace under the next name: %r" %
          sorted(os.listdir(d)))
    summary = os.path.join(d, "summary.txt")
    with open(summary, "w") as f:
        f.write("mine\n")
    r = omniprof("run", "--marker-trace", "--summary", "--summary-output-file", summary, "-d", d, "-o", "s", "--",
                 ARGS.victim, "normal", "2")
    check(r.returncode == 0 and open(summary).read() == "mine\n", "existing summary file kept: %r" % r.stderr)
    check("MARKER_API" in open(os.path.join(d, "summary-1.txt")).read(), "the summary in summary-1.txt")


def t_selected_regions():
    # --selected-regions starts paused: only what happens between omniprof_resume() and
    # omniprof_pause() is recorded.
    d = tmpdir()
    r = omniprof("run", "--marker-trace", "--selected-regions", "-d", d, "-o", "sel", "--", ARGS.victim, "selected", "4")
    check(r.returncode == 0 and r.stdout == "selected done\n", "run: %d %r %r" % (r.returncode, r.stdout, r.stderr))
    check_db(os.path.join(d, "sel_results.db"), marks={"before": 0, "inside": 4, "after": 0}, ranges={"r": 4})
    r = omniprof("run", "--marker-trace", "-d", d, "-o", "all", "--", ARGS.victim, "selected", "4")
    check(r.returncode == 0, "run without: %d" % r.returncode)
    check_db(os.path.join(d, "all_results.db"), marks={"before": 4, "inside": 4, "after": 0}, ranges={"r": 4})


def t_kernel_rename():
    # --kernel-rename: a dispatch is shown by the range open around its launch (the kernel
    # symbol keeps the kernel's name); --summary-groups and -D shape the summary after the run.
    d = tmpdir()
    r = omniprof("run", "--kernel-trace", "--kernel-rename", "-d", d, "-o", "k", "--", ARGS.fake_kernels, "5", "ranged")
    if "emitted 0" in r.stdout:
        print("SKIP: KERNEL_DISPATCH cannot be configured in this build")
        sys.exit(77)
    check(r.returncode == 0 and "emitted 5" in r.stdout, "run: %d %r" % (r.returncode, r.stdout))
    con = connect(os.path.join(d, "k_results.db"))
    rows = sorted(con.execute("SELECT region, name, count(*) FROM kernels GROUP BY 1, 2").fetchall())
    kn = "void square<float>(float*, int)"
    check(rows == [("step0", kn, 2), ("step1", kn, 2), (kn, kn, 1)], "renamed dispatches: %r" % rows)
    r = omniprof("run", "--kernel-trace", "-d", d, "-o", "plain", "--", ARGS.fake_kernels, "5", "ranged")
    rows = connect(os.path.join(d, "plain_results.db")).execute("SELECT region, count(*) FROM kernels GROUP BY 1").fetchall()
    check(rows == [(kn, 5)], "without --kernel-rename the kernel's name: %r" % rows)
    r = omniprof("summary", "-i", os.path.join(d, "k_results.db"))
    if r.returncode == 0:
        check("| step0 | KERNEL_DISPATCH | 2 |" in r.stdout, "the summary shows the ranges: %r" % r.stdout[:400])
    # summary groups after the run: one table per regex over the matching domains
    r = omniprof("run", "--kernel-trace", "--marker-trace", "--kernel-rename", "--summary-groups", "KERNEL.*|MARKER.*",
                 "MARKER.*", "--summary-output-file", "stdout", "-d", d, "-o", "g", "--", ARGS.fake_kernels, "5",
                 "ranged")
    if "not built" in r.stderr:
        return
    check(r.returncode == 0, "summary groups run: %d %r" % (r.returncode, r.stderr))
    out = r.stdout
    both = out.split("OMNIPROF SUMMARY GROUP KERNEL.*|MARKER.*")[-1].split("OMNIPROF SUMMARY GROUP MARKER.*")[0]
    check("| KERNEL_DISPATCH |" in both and "| MARKER_API |" in both, "group of both domains: %r" % both)
    marker_only = out.split("OMNIPROF SUMMARY GROUP MARKER.*")[-1]
    check("| MARKER_API |" in marker_only and "KERNEL_DISPATCH" not in marker_only, "group of markers only")
    check("OMNIPROF DOMAIN SUMMARY" in out, "the domain table")
    r = omniprof("run", "--kernel-trace", "-D", "--summary-output-file", "stdout", "-d", d, "-o", "dd", "--",
                 ARGS.fake_kernels, "2")
    check(r.returncode == 0 and "OMNIPROF KERNEL_DISPATCH SUMMARY" in r.stdout, "-D asks for the summary: %r" % r.stdout)
    r = omniprof("run", "--kernel-trace", "--summary-groups", "(", "--", ARGS.fake_kernels, "2")
    check(r.returncode == 2 and "--summary-groups '('" in r.stderr, "bad group regex refused: %r" % r.stderr)


def t_minimum_output_data():
    # A process that recorded less than --minimum-output-data KB keeps no database; post-run
    # work skips it.
    d = tmpdir()
    r = omniprof("run", "--marker-trace", "--minimum-output-data", "8", "-d", d, "-o", "small", "--", ARGS.victim,
                 "normal", "2")
    check(r.returncode == 0 and r.stdout == "normal done\n", "small run: %d" % r.returncode)
    r = omniprof("run", "--marker-trace", "--minimum-output-data", "8", "-d", d, "-o", "big", "--", ARGS.victim,
                 "normal", "200")
    check(r.returncode == 0, "big run: %d" % r.returncode)
    check(dbs_in(d) == [os.path.join(d, "big_results.db")], "only the big database kept: %r" % dbs_in(d))
    check_db(os.path.join(d, "big_results.db"), marks={"m": 200})
    r = omniprof("run", "--marker-trace", "--stats", "--minimum-output-data", "1000", "-d", d, "-o", "s", "--",
                 ARGS.victim, "exit7", "2")
    check(r.returncode == 7 and "below --minimum-output-data" in r.stderr, "post-run: %d %r" % (r.returncode, r.stderr))
    r = omniprof("run", "--marker-trace", "--minimum-output-data", "-1", "--", "/bin/true")
    check(r.returncode == 2 and "OMNIPROF_MINIMUM_OUTPUT_DATA" in r.stderr, "bad value: %r" % r.stderr)


def t_agent_index():
    # -A numbers agents as rocprofv3 does: relative (logical index), absolute (node id),
    # type-relative (index among agents of the same type); on run and convert.
    gen = os.path.join(os.path.dirname(os.path.realpath(ARGS.omniprof)), "omniprof-gen-db")
    if not os.path.exists(gen):
        print("SKIP: omniprof-gen-db not built")
        sys.exit(77)
    d = tmpdir()
    db = os.path.join(d, "a.db")
    run([gen, db, "--events", "200"])
    want = {"relative": "Agent 1", "absolute": "Agent 1", "type-relative": "Agent 0"}
    for mode, agent in want.items():
        r = omniprof("convert", "-i", db, "-f", "csv", "-A", mode, "-d", d, "-o", mode)
        if "not built" in r.stderr:
            print("SKIP: libomniprof-output is not built")
            sys.exit(77)
        check(r.returncode == 0, "convert -A %s: %r" % (mode, r.stderr))
        with open(os.path.join(d, mode + "_kernel_trace.csv")) as f:
            agents = {line.split(",")[1] for line in f.readlines()[1:]}
        check(agents == {'"%s"' % agent}, "-A %s: %r" % (mode, agents))
    r = omniprof("convert", "-i", db, "-f", "csv", "-A", "sideways", "-d", d)
    check(r.returncode == 2 and "absolute, relative or type-relative" in r.stderr, "bad -A: %r" % r.stderr)
    r = omniprof("run", "--marker-trace", "-A", "sideways", "--", "/bin/true")
    check(r.returncode == 2 and "absolute|relative|type-relative" in r.stderr, "run -A checked: %r" % r.stderr)
    r = omniprof("run", "--marker-trace", "-A", "absolute", "--echo", "-d", d, "--", "/bin/true")
    check("export OMNIPROF_AGENT_INDEX=absolute" in r.stderr, "run -A: %r" % r.stderr)


def t_gpu_options():
    """--pc-sampling* and --lite become their settings; a bad method stops the launch."""
    d = tmpdir()
    r = omniprof("run", "--pc-sampling-interval", "4096", "--pc-sampling-method", "continuous", "--lite", "--echo",
                 "-d", d, "--", "/bin/true")
    env = dict(l[7:].partition("=")[::2] for l in r.stderr.splitlines() if l.startswith("export "))
    check(r.returncode == 0, "gpu options run: %d %r" % (r.returncode, r.stderr[-300:]))
    for k, v in (("OMNIPROF_PC_SAMPLING", "true"), ("OMNIPROF_PC_SAMPLING_INTERVAL", "4096"),
                 ("OMNIPROF_PC_SAMPLING_METHOD", "continuous"), ("OMNIPROF_KERNEL_TRACE", "true"),
                 ("OMNIPROF_MARKER_TRACE", "true"), ("OMNIPROF_CUDA_KERNEL_CORRELATION", "false")):
        check(env.get(k) == v, "%s=%r, expected %s" % (k, env.get(k), v))
    r = omniprof("run", "--pc-sampling", "--echo", "-d", d, "--", "/bin/true")
    check(r.returncode == 0 and "export OMNIPROF_PC_SAMPLING=true" in r.stderr, "--pc-sampling alone collects")
    r = omniprof("run", "--pc-sampling-method", "sideways", "--", "/bin/true")
    check(r.returncode == 2 and "kernel-serialized|continuous" in r.stderr, "bad method: %r" % r.stderr)


TESTS = {k[2:]: v for k, v in globals().items() if k.startswith("t_")}


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--omniprof", required=True)
    ap.add_argument("--victim")
    ap.add_argument("--demo")
    ap.add_argument("--fake-kernels")
    ap.add_argument("test", choices=sorted(TESTS))
    ARGS = ap.parse_args()
    os.environ.pop("LD_PRELOAD", None)
    for k in list(os.environ):
        if k.startswith("OMNIPROF_"):
            del os.environ[k]
    # no configuration file of the machine or the user changes what a test sees
    os.environ["OMNIPROF_SYSTEM_CONFIG_FILE"] = "none"
    os.environ["OMNIPROF_CONFIG_FILE"] = "none"
    scratch("omniprof-tool-test-")  # tmpdir()'s folders go there: removed at exit on every path
    TESTS[ARGS.test]()
    if FAILS:
        print("%d check(s) failed (outputs kept in %s)" % (len(FAILS), " ".join(TMPDIRS)))
        return 1
    for d in TMPDIRS:
        shutil.rmtree(d, ignore_errors=True)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
