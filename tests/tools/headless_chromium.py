"""headless_chromium.py — the one way the tests drive a real browser (Debian's `chromium`):
load a page from disk in headless Chromium, with a fresh empty profile and no network services,
and return its DOM after the scripts ran, plus the JavaScript errors Chromium logged.

Used by tests/causal (Coz's viewer) and tests/report (omniprof's report). Standard library only.

    from headless_chromium import find_chromium, load_page
    chromium = find_chromium()            # None when not installed: the caller skips
    page = load_page(chromium, "/abs/page.html", workdir)
    page.rc, page.dom, page.console_errors, page.stderr
"""
import os
import re
import shutil
import subprocess
import tempfile

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--mute-audio"]


def find_chromium():
    """The Chromium binary on PATH (chromium, chromium-browser), or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Page:
    def __init__(self, rc, dom, stderr, console_errors):
        self.rc, self.dom, self.stderr, self.console_errors = rc, dom, stderr, console_errors


# Chromium's log lines for page console output: "...:INFO:CONSOLE(12)] "message", source: url (12)"
# (or CONSOLE:12 in newer builds); uncaught exceptions are console errors "Uncaught ...".
_CONSOLE = re.compile(r':(INFO|WARNING|ERROR):CONSOLE[(:]\d*\)?\]\s*"(.*)", source: (.*)')


def load_page(chromium, path, workdir, extra=(), timeout=180, dump_dom=True, screenshot=None, size=None):
    """Loads file `path` (absolute) and returns a Page. `extra`: more flags (e.g. a virtual time
    budget, --allow-file-access-from-files). screenshot: a PNG path to write instead of the DOM;
    size: (width, height) of the window."""
    profile = tempfile.mkdtemp(prefix="chromium-profile-", dir=workdir)
    cmd = [chromium] + FLAGS + ["--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0"]
    if size:
        cmd.append("--window-size=%d,%d" % size)
    cmd += list(extra)
    if screenshot:
        cmd.append("--screenshot=" + screenshot)
    elif dump_dom:
        cmd.append("--dump-dom")
    cmd.append("file://" + os.path.abspath(path))
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, errors="replace")
    errors = []
    for line in r.stderr.splitlines():
        m = _CONSOLE.search(line)
        if m and (m.group(1) == "ERROR" or m.group(2).startswith("Uncaught")):
            errors.append("%s (%s)" % (m.group(2), m.group(3)))
    shutil.rmtree(profile, ignore_errors=True)
    return Page(r.returncode, r.stdout, r.stderr, errors)
