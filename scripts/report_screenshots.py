#!/usr/bin/env python3
"""report_screenshots.py — the screenshots of the HTML report in docs/ (standard library only).

Writes a report of DB, loads it in headless Chromium (tests/tools/headless_chromium.py) once to
read where each section is (the page's self-check has their positions), takes one tall
screenshot, and crops it into one PNG per requested span of sections.

usage: report_screenshots.py OMNIPROF DB OUT_DIR NAME=FIRST[:LAST] ...
  e.g. report_screenshots.py build/bin/omniprof demo_results.db docs report-overview=overview:timeline report-cpu=cpu
"""
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "tools"))
from headless_chromium import find_chromium, load_page  # noqa: E402

WIDTH = 1400


def read_png(path):
    """(width, height, bytes per pixel, rows of raw pixel bytes) of an 8-bit RGB/RGBA PNG."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype in (2, 6) and interlace == 0, "8-bit RGB(A), not interlaced"
            bpp = 4 if ctype == 6 else 3
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):  # undo the row filter (PNG spec 9.2)
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def write_png(path, w, bpp, rows):
    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    raw = b"".join(b"\x00" + r for r in rows)
    ihdr = struct.pack(">IIBBBBB", w, len(rows), 8, 6 if bpp == 4 else 2, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def main():
    omniprof, db, out = sys.argv[1:4]
    spans = [a.split("=", 1) for a in sys.argv[4:]]
    chromium = find_chromium()
    if not chromium:
        sys.exit("report_screenshots: chromium is not installed")
    work = tempfile.mkdtemp(prefix="report-shots-")
    html = os.path.join(work, "report.html")
    subprocess.run([omniprof, "report", "-i", db, "-o", html, "--no-progress"], check=True, stdout=subprocess.DEVNULL)
    page = load_page(chromium, html, work, size=(WIDTH, 1000))
    sc = json.loads(re.findall(r'<pre id="omniprof-selfcheck">(.*?)</pre>', page.dom, re.S)[-1].replace("&quot;", '"'))
    layout = sc["layout"]
    height = max(top + h for top, h in layout.values()) + 40
    shot = os.path.join(work, "page.png")
    load_page(chromium, html, work, screenshot=shot, size=(WIDTH, height), extra=["--hide-scrollbars"])
    w, h, bpp, rows = read_png(shot)
    for name, span in spans:
        first, _, last = span.partition(":")
        top = layout[first][0] - 10 if first != "overview" else 0
        bottom = layout[last or first][0] + layout[last or first][1] + 10
        write_png(os.path.join(out, name + ".png"), w, bpp, rows[max(0, top):min(h, bottom)])
        print("%s/%s.png: %s (%d x %d)" % (out, name, span, w, min(h, bottom) - max(0, top)))


if __name__ == "__main__":
    main()
