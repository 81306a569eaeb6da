#!/usr/bin/env python3
"""thread_dump.py PID — what each thread of a stuck process waits in, without a debugger (the GPU
machine has none): per thread its name, state, system call, the mapping its first argument points
into (a futex's owner library) and a rough stack: the words of its stack, from the stack pointer in
/proc/PID/task/TID/syscall, that point into executable mappings (library+offset; addr2line turns
them into lines). Used by tests/instrument/gpu_tests.sh when a program outlives the attach."""
import os, sys
pid = sys.argv[1]
maps = []
for l in open("/proc/%s/maps" % pid):
    p = l.split(); lo, hi = (int(x, 16) for x in p[0].split("-"))
    maps.append((lo, hi, p[1], int(p[2], 16), (p[5] if len(p) > 5 else "[anon]").split("/")[-1]))
def where(a):
    for lo, hi, perm, off, name in maps:
        if lo <= a < hi: return "%s+0x%x" % (name, a - lo + off), perm
    return "?", ""
mem = open("/proc/%s/mem" % pid, "rb")
for tid in sorted(os.listdir("/proc/%s/task" % pid), key=int):
    t = "/proc/%s/task/%s" % (pid, tid)
    comm = open(t + "/comm").read().strip(); st = open(t + "/stat").read().rsplit(")", 1)[1].split()[0]
    sc = open(t + "/syscall").read().split()
    line = "  %s[%s] %s sc=%s" % (comm, tid, st, sc[0])
    if len(sc) > 3:
        line += " arg1=%s" % where(int(sc[1], 16))[0]
        sp = int(sc[-2], 16)
        try:
            top = next((hi for lo, hi, *_ in maps if lo <= sp < hi), sp + 4096)
            mem.seek(sp); data = mem.read(min(32768, top - sp))
        except OSError:
            data = b""
        frames = []
        for i in range(0, len(data) - 7, 8):
            w = int.from_bytes(data[i:i + 8], "little")
            n, perm = where(w)
            if "x" in perm and (not frames or frames[-1] != n):
                frames.append(n)
            if len(frames) >= 14: break
        line += "\n      " + " < ".join(frames)
    print(line)
