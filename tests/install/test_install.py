#!/usr/bin/env python3
"""install.prefix, install.deb — omniprof installed like a real tool works from where it is
installed, and from wherever that tree is moved, without the build tree.

  prefix  `cmake --install BUILD --prefix T/prefix`
  deb     `cpack -G DEB` (the package of `make deb`) into T/pkg: its name, version and
          dependencies on the runtime Debian packages (dpkg-deb -I); then `dpkg-deb -x` into
          T/root and T/root/usr is the prefix

then, for the prefix:
  1. no installed ELF file has an RPATH/RUNPATH into the build or source tree or an absolute
     path to omniprof's files among its constant strings, and no installed text file (Python,
     CMake, pkg-config, man, completion) names either tree;
  2. from the prefix alone (empty environment of ours: no LD_LIBRARY_PATH, PYTHONPATH points at
     the installed package): `omniprof run` of the bundled example program
     (libexec/omniprof/omniprof-demo 3 20) writes a database whose ranges are the example's
     (3 "compute", 60 "iteration" ranges) and a Perfetto trace; `omniprof summary` lists the
     ranges; `omniprof report` writes an HTML page; `python3 -m omniprof summary` prints the
     binary's summary and the package loads libomniprof-output.so from the prefix;
  3. the man pages (every one renders with groff) and completion scripts the build made from the
     option tables are installed (share/man/man1, bash-completion, zsh site-functions);
  4. the prefix is moved to another directory and 2. runs again there;
  5. where unprivileged user and mount namespaces are allowed, 2. runs once more with the build
     and source trees hidden under empty tmpfs mounts (as if moved away); elsewhere this step
     says why it did not run (steps 1 and 4 still hold the tree to its relocatability).

usage: test_install.py prefix|deb --build DIR --source DIR --version X.Y.Z
"""
import argparse
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from testlib import FAILS, check  # noqa: E402 (tests/testlib.py: the one assertion helper)

A = None
THREADS, ITERATIONS = 3, 20


def run(argv, env=None, wrap=None, timeout=240):
    argv = (wrap or []) + [str(a) for a in argv]
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          errors="replace", env=env, timeout=timeout)


def clean_env(prefix):
    """The environment of a user of the installed tree: nothing of ours but PYTHONPATH."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OMNIPROF_", "LD_", "PYTHON")) and k not in ("CUDA_HOME",)}
    env["PYTHONPATH"] = os.path.join(prefix, "lib", "python3", "dist-packages")
    env["OMNIPROF_LOG_LEVEL"] = "warning"
    return env


def is_elf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def check_no_tree_paths(prefix):
    trees = [os.path.realpath(A.build), os.path.realpath(A.source)]
    bad_rpath, bad_text, bad_const, n_elf = [], [], [], 0
    for root, _, files in os.walk(prefix):
        for fn in files:
            path = os.path.join(root, fn)
            if os.path.islink(path):
                continue
            rel = os.path.relpath(path, prefix)
            if is_elf(path):
                n_elf += 1
                p = run(["readelf", "-d", path])
                for line in p.stdout.splitlines():
                    if "(RPATH)" in line or "(RUNPATH)" in line:
                        if any(t in line for t in trees):
                            bad_rpath.append("%s: %s" % (rel, line.split("[", 1)[-1].rstrip("]")))
                # constant strings: no absolute path to omniprof's own files or into the trees
                # (a relative suffix such as "/../share/omniprof" is how they are found)
                p = run(["readelf", "-p", ".rodata", path])
                for line in p.stdout.splitlines():
                    m = re.match(r"\s*\[\s*[0-9a-f]+\]\s+(.*)", line)
                    for tok in re.split(r"[\s:;,]+", m.group(1)) if m else []:
                        tok = tok.strip("()'\"")
                        ours = re.search(r"share/omniprof|libomniprof-", tok)
                        if any(t in tok for t in trees) or (
                                ours and tok.startswith("/") and not tok.startswith("/..")):
                            bad_const.append("%s: %s" % (rel, tok))
            else:
                with open(path, "rb") as f:
                    data = f.read()
                if any(t.encode() in data for t in trees):
                    bad_text.append(rel)
    check(n_elf >= 5, "the tree holds the binaries and libraries (%d ELF files)" % n_elf)
    check(not bad_rpath, "no RPATH or RUNPATH leads into the build or source tree (%s)"
          % "; ".join(bad_rpath[:5]))
    check(not bad_const, "no installed binary has an absolute path to omniprof's files compiled "
          "in (%s)" % "; ".join(bad_const[:5]))
    check(not bad_text, "no installed file names the build or source tree (%s)"
          % ", ".join(bad_text[:5]))


def check_share(prefix):
    """Man pages and completion scripts: the build makes them from the option tables (every
    command's page, bash's and zsh's scripts); each must be installed, and each page render."""
    for sub, want in (("man/man1", "omniprof.1"), ("bash-completion/completions", "omniprof"),
                      ("zsh/site-functions", "_omniprof")):
        src = os.path.join(A.build, "share", sub)
        made = sorted(os.listdir(src)) if os.path.isdir(src) else []
        check(want in made, "the build made share/%s/%s (%s)" % (sub, want, ", ".join(made) or "nothing"))
        missing = [f for f in made if not os.path.isfile(os.path.join(prefix, "share", sub, f))]
        check(made and not missing, "share/%s installed: %s (missing: %s)"
              % (sub, ", ".join(made), ", ".join(missing)))
    pages = os.path.join(prefix, "share", "man", "man1")
    check(os.path.isfile(os.path.join(pages, "omniprof-run.1")), "omniprof-run(1) installed")
    if shutil.which("groff"):
        for page in sorted(os.listdir(pages)) if os.path.isdir(pages) else []:
            r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", os.path.join(pages, page)], capture_output=True,
                               text=True)
            text = re.sub(".\x08", "", r.stdout)  # groff's overstrike (bold) for a terminal
            check(r.returncode == 0 and "NAME" in text and not r.stderr.strip(),
                  "installed %s renders with groff (%s)" % (page, r.stderr.strip()[:200]))
    else:
        print("note: groff is not installed: installed man pages not rendered")


def profile(prefix, out, label, wrap=None):
    """Step 2: the installed tree profiles its example and reads the database back."""
    env = clean_env(prefix)
    omniprof = os.path.join(prefix, "bin", "omniprof")
    demo = os.path.join(prefix, "libexec", "omniprof", "omniprof-demo")
    if not check(os.access(omniprof, os.X_OK) and os.access(demo, os.X_OK),
                 "%s: bin/omniprof and libexec/omniprof/omniprof-demo installed" % label):
        return
    os.makedirs(out, exist_ok=True)
    p = run([omniprof, "run", "--marker-trace", "-f", "rocpd", "pftrace", "-d", out, "-o", "demo",
             "--", demo, THREADS, ITERATIONS], env=env, wrap=wrap)
    db = os.path.join(out, "demo_results.db")
    if not check(p.returncode == 0 and os.path.isfile(db),
                 "%s: omniprof run of the example program writes %s (exit %d; %s)"
                 % (label, os.path.basename(db), p.returncode, p.stderr.strip()[-400:])):
        return
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    counts = dict(con.execute("SELECT name, count(*) FROM regions GROUP BY name").fetchall())
    con.close()
    check(counts.get("compute") == THREADS and counts.get("iteration") == THREADS * ITERATIONS,
          "%s: the database holds the example's ranges: %d compute, %d iteration (got %s)"
          % (label, THREADS, THREADS * ITERATIONS, counts))
    pf = os.path.join(out, "demo_results.pftrace")
    check(os.path.isfile(pf) and os.path.getsize(pf) > 1000,
          "%s: the run wrote the Perfetto trace" % label)

    s = run([omniprof, "summary", "-i", db], env=env, wrap=wrap)
    check(s.returncode == 0 and "iteration" in s.stdout and "compute" in s.stdout,
          "%s: omniprof summary lists the ranges (exit %d; %s)"
          % (label, s.returncode, s.stderr.strip()[-300:]))
    html = os.path.join(out, "report.html")
    r = run([omniprof, "report", "-i", db, "-o", html], env=env, wrap=wrap)
    page = open(html, encoding="utf-8", errors="replace").read() if os.path.isfile(html) else ""
    check(r.returncode == 0 and "<html" in page.lower() and "iteration" in page,
          "%s: omniprof report writes the HTML page (exit %d; %s)"
          % (label, r.returncode, r.stderr.strip()[-300:]))

    py = run([sys.executable, "-m", "omniprof", "summary", "-i", db], env=env, wrap=wrap)
    check(py.returncode == 0 and py.stdout == s.stdout,
          "%s: python3 -m omniprof summary prints the binary's summary (exit %d; %s)"
          % (label, py.returncode, py.stderr.strip()[-300:]))
    lib = run([sys.executable, "-c", "import omniprof; print(omniprof.library_path())"],
              env=env, wrap=wrap)
    where = (os.path.realpath(lib.stdout.strip()) if lib.returncode == 0
             else lib.stderr.strip()[-200:])
    check(where.startswith(os.path.realpath(prefix) + os.sep),
          "%s: the Python package loads libomniprof-output.so from the prefix (%s)"
          % (label, where))


def hidden_trees_wrap(tmp):
    """A command prefix that runs its command with the build and source trees hidden, or None
    (and why) where that cannot be done here."""
    trees = [os.path.realpath(A.build), os.path.realpath(A.source)]
    if any(os.path.realpath(tmp).startswith(t + os.sep) for t in trees):
        return None, "the temporary directory is inside the build or source tree"
    if not shutil.which("unshare"):
        return None, "no unshare(1)"
    wrap = ["unshare", "-rm", "sh", "-c",
            'mount -t tmpfs none "$0" && mount -t tmpfs none "$1" && shift && exec "$@"'] + trees
    p = run(["test", "!", "-e", os.path.join(trees[0], "CMakeCache.txt")], wrap=wrap)
    if p.returncode != 0:
        return None, ("unprivileged user and mount namespaces are not allowed here (%s)"
                      % p.stderr.strip()[-200:])
    return wrap, ""


def deb_prefix(tmp):
    """`make deb`'s package, checked, unpacked: returns the prefix (T/root/usr) or None."""
    pkg = os.path.join(tmp, "pkg")
    # CPack's first step under the Makefile generator is `make preinstall`, a `make all` at -j1:
    # 49 of its 83 s here, checking a tree that `make test` has just built. A generator without
    # a preinstall target (Ninja's; nothing is built with it) skips that step alone: the
    # install rules, the files and the control data are those of `make deb` (same listing,
    # sizes, modes and control fields, compared once on this VM).
    p = run(["cpack", "-G", "DEB", "--config", os.path.join(A.build, "CPackConfig.cmake"),
             "-D", "CPACK_CMAKE_GENERATOR=Ninja", "-B", pkg], timeout=600)
    debs = [os.path.join(pkg, f) for f in (os.listdir(pkg) if os.path.isdir(pkg) else [])
            if f.endswith(".deb")]
    if not check(p.returncode == 0 and len(debs) == 1,
                 "cpack -G DEB builds one package (exit %d; %s)"
                 % (p.returncode, (p.stderr or p.stdout).strip()[-600:])):
        return None
    deb = debs[0]
    info = run(["dpkg-deb", "-f", deb, "Package", "Version", "Depends", "Architecture"]).stdout
    fields = dict(line.split(": ", 1) for line in info.splitlines() if ": " in line)
    version = A.version
    check(fields.get("Package") == "omniprof" and fields.get("Version") == version,
          "the package is omniprof %s (%s)" % (version, fields))
    check(os.path.basename(deb) == "omniprof_%s_%s.deb" % (version, fields.get("Architecture")),
          "the file has Debian's name (%s)" % os.path.basename(deb))
    deps = [d.strip().split(" ")[0] for d in fields.get("Depends", "").split(",")]
    for want in ("libc6", "libsqlite3-0", "libunwind8", "libdw1", "libelf1"):
        check(want in deps, "the package depends on %s (Depends: %s)"
              % (want, fields.get("Depends")))
    root = os.path.join(tmp, "root")
    x = run(["dpkg-deb", "-x", deb, root])
    if not check(x.returncode == 0,
                 "dpkg-deb -x unpacks the package (%s)" % x.stderr.strip()[-300:]):
        return None
    return os.path.join(root, "usr")


def main():
    global A
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["prefix", "deb"])
    ap.add_argument("--build", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--version", required=True, help="the project's version (the package's)")
    A = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="omniprof-install-")
    try:
        if A.mode == "prefix":
            prefix = os.path.join(tmp, "prefix")
            p = run(["cmake", "--install", A.build, "--prefix", prefix])
            if not check(p.returncode == 0, "cmake --install %s --prefix %s (%s)"
                         % (A.build, prefix, p.stderr[-600:])):
                return 1
        else:
            prefix = deb_prefix(tmp)
            if not prefix:
                return 1
        check_no_tree_paths(prefix)
        check_share(prefix)
        profile(prefix, os.path.join(tmp, "out1"), "installed")
        moved = os.path.join(tmp, "elsewhere", "moved")
        os.makedirs(os.path.dirname(moved))
        shutil.move(prefix, moved)
        profile(moved, os.path.join(tmp, "out2"), "moved")
        wrap, why = hidden_trees_wrap(tmp)
        if wrap:
            profile(moved, os.path.join(tmp, "out3"), "build and source trees hidden", wrap=wrap)
        else:
            print("note: not run with the build and source trees hidden: %s" % why)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d failure(s)" % len(FAILS))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
