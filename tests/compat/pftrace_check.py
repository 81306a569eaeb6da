#!/usr/bin/env python3
"""pftrace_check.py — reads a Perfetto trace (protobuf wire format, the fields of
perfetto.protos.Trace that omniprof writes) and checks what Perfetto's trace processor relies on:
flows (every flow_ids value ends in a terminating_flow_ids value and the other way round, each
once), track descriptors (one per uuid, one per process, every used or parent uuid described),
sequences (incremental state cleared before any packet that needs it; every interned name
defined on its sequence before use) and the clock snapshot.
check() also returns the trace's content independent of how it was cut into sequences
("content": every descriptor and every event with its name resolved, the flow ids), which the
same database converted at any number of threads must give unchanged.

usage: pftrace_check.py TRACE   (prints a summary; exit 1 with the failures)
As a module: summary = check(path) raises AssertionError naming the first failure.
"""
import collections
import sys


def varint(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        if c < 0x80:
            return v, i
        s += 7


def fields(b):
    """(field number, wire type, value) of a message: int for varint/fixed, bytes for length."""
    i, n = 0, len(b)
    while i < n:
        key, i = varint(b, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 1:
            v, i = int.from_bytes(b[i:i + 8], "little"), i + 8
        elif wt == 5:
            v, i = int.from_bytes(b[i:i + 4], "little"), i + 4
        elif wt == 2:
            ln, i = varint(b, i)
            v, i = b[i:i + ln], i + ln
        else:
            raise AssertionError("unexpected wire type %d" % wt)
        yield f, wt, v


def first(msg, f, default=None):
    for g, _, v in fields(msg):
        if g == f:
            return v
    return default


def all_of(msg, f):
    return [v for g, _, v in fields(msg) if g == f]


def check(path):
    data = open(path, "rb").read()
    packets = [v for f, _, v in fields(data) if f == 1]
    cleared = set()               # sequences whose incremental state was cleared
    interned = collections.defaultdict(set)  # seq -> event name iids
    desc = {}                     # uuid -> ("process"|"thread"|"track", parent, pid)
    process_uuids = collections.Counter()
    thread_tids = collections.Counter()   # (pid, tid) -> thread descriptors
    names = collections.defaultdict(dict)  # seq -> iid -> name
    descriptors = {}              # uuid -> the TrackDescriptor's bytes
    events = collections.Counter()  # (timestamp, TrackEvent bytes, name) -> count
    starts, ends = collections.Counter(), collections.Counter()
    start_at, end_at = {}, {}
    used_tracks = set()
    snapshots = []
    slices = collections.Counter()
    seqs = set()
    for p in packets:
        seq = first(p, 10, 0)
        seqs.add(seq)
        flags = first(p, 13, 0)
        if flags & 1:
            cleared.add(seq)
        if flags & 2 and seq not in cleared:
            raise AssertionError("sequence %d: a packet needs incremental state before it was cleared" % seq)
        idata = first(p, 12)
        if idata is not None:
            for en in all_of(idata, 2):
                iid, name = first(en, 1), first(en, 2)
                if names[seq].get(iid, name) != name:
                    raise AssertionError("sequence %d: event name iid %d interned as two names" % (seq, iid))
                interned[seq].add(iid)
                names[seq][iid] = name
        cs = first(p, 6)
        if cs is not None:
            snapshots.append({first(c, 1): first(c, 2) for c in all_of(cs, 1)})
        td = first(p, 60)
        if td is not None:
            uuid = first(td, 1)
            if uuid in desc:
                raise AssertionError("track %d described twice" % uuid)
            proc, thr = first(td, 3), first(td, 4)
            kind = "process" if proc is not None else "thread" if thr is not None else "track"
            pid = first(proc, 1) if proc is not None else first(thr, 1) if thr is not None else None
            desc[uuid] = (kind, first(td, 5), pid)
            descriptors[uuid] = td
            if kind == "process":
                process_uuids[pid] += 1
            elif kind == "thread":
                thread_tids[(pid, first(thr, 2))] += 1
        te = first(p, 11)
        if te is not None:
            t = first(te, 9)
            track = first(te, 11)
            used_tracks.add(track)
            iid = first(te, 10)
            if iid is not None and iid not in interned[seq]:
                raise AssertionError("sequence %d: event name iid %d used before it was interned" % (seq, iid))
            if t == 1:
                slices[track] += 1
            events[(first(p, 8), te, names[seq].get(iid))] += 1
            for fid in all_of(te, 47):
                starts[fid] += 1
                start_at[fid] = (first(p, 8), track)
            for fid in all_of(te, 48):
                ends[fid] += 1
                end_at[fid] = (first(p, 8), track)
    # flows
    no_end = [f for f in starts if f not in ends]
    no_start = [f for f in ends if f not in starts]
    if no_end or no_start:
        raise AssertionError("%d flow starts without an end, %d flow ends without a start (of %d / %d)" %
                             (len(no_end), len(no_start), len(starts), len(ends)))
    twice = [f for f, n in list(starts.items()) + list(ends.items()) if n > 1]
    if twice:
        raise AssertionError("%d flow ids start or end more than once" % len(twice))
    for fid, (ts, track) in start_at.items():
        if desc.get(track, ("?",))[0] != "thread":
            raise AssertionError("flow %d starts on a track that is not a thread's" % fid)
        if desc.get(end_at[fid][1], ("?",))[0] != "track":
            raise AssertionError("flow %d ends on a track that is not a GPU stream's" % fid)
        if ts > end_at[fid][0]:
            raise AssertionError("flow %d ends before it starts" % fid)
    # descriptors
    for uuid in used_tracks:
        if uuid not in desc:
            raise AssertionError("events on track %d, which has no descriptor" % uuid)
    for uuid, (_, parent, _) in desc.items():
        if parent is not None and parent not in desc:
            raise AssertionError("track %d's parent %d has no descriptor" % (uuid, parent))
    dup = [pid for pid, n in process_uuids.items() if n > 1]
    if dup:
        raise AssertionError("processes with more than one descriptor: %s" % dup)
    dup = [pt for pt, n in thread_tids.items() if n > 1]
    if dup:
        raise AssertionError("threads (pid, tid) with more than one descriptor: %s" % dup)
    # clock snapshot
    if len(snapshots) != 1:
        raise AssertionError("%d clock snapshots (want 1)" % len(snapshots))
    if 3 not in snapshots[0]:
        raise AssertionError("the clock snapshot lacks MONOTONIC, the clock of the events: %s" % snapshots[0])
    if first(packets[0], 6) is None:
        raise AssertionError("the clock snapshot is not the trace's first packet")
    return {"packets": len(packets), "sequences": len(seqs), "flows": len(starts), "processes": len(process_uuids),
            "threads": sum(1 for d in desc.values() if d[0] == "thread"),
            "tracks": sum(1 for d in desc.values() if d[0] == "track"), "slices": sum(slices.values()),
            "clocks": sorted(snapshots[0]),
            "content": {"descriptors": descriptors, "events": events, "flows": sorted(starts),
                        "snapshot": snapshots[0]}}


if __name__ == "__main__":
    try:
        got = check(sys.argv[1])
        got.pop("content")
        print(got)
    except AssertionError as e:
        print("FAIL:", e)
        sys.exit(1)
