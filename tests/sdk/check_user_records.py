#!/usr/bin/env python3
"""check_user_records.py PROGRAM JSON_TOOL WORKDIR — integration test of the user API + SDK.

Runs tests/sdk/user_program with the reference json tool LD_PRELOADed and checks the records
it wrote: exact counts per (kind, operation), nesting (each thread range of level L>0 lies
inside a range of level L-1 on the same thread), ordering (start <= end; per-thread records
in time order), timestamps within the process lifetime (CLOCK_MONOTONIC, which is what
time.monotonic_ns() reads on Linux), correlation ids (unique, non-zero, every one retired
exactly once), the process range crossing threads, the truncated long message and that
nothing was recorded while paused. Exit 0 on success, 1 with a message on failure."""
import collections
import json
import os
import subprocess
import sys
import time

ITER = 50
MARKER_API, MARKER_RANGE_API, RETIREMENT = 3, 4, 10
OPS = dict(MARK=1, PUSH=2, POP=3, START=4, STOP=5, PAUSE=6, RESUME=7, NAME_THREAD=8, PROGRESS=9,
           PROGRESS_BEGIN=10, PROGRESS_END=11)
RANGE_OPS = dict(THREAD_RANGE=1, PROCESS_RANGE=2, MARK=3)
MSG_MAX = 4096


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def main():
    prog, tool, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    out = os.path.join(work, "records.jsonl")
    if os.path.exists(out):
        os.unlink(out)
    env = dict(os.environ, LD_PRELOAD=tool, OMNIPROF_JSON_TOOL_OUTPUT=out, OMNIPROF_LOG_LEVEL="error")
    # sanitizer builds: the preloaded tool comes before the ASan runtime the program links
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"
    t0 = time.monotonic_ns()
    p = subprocess.run([prog], env=env, capture_output=True, text=True, timeout=60)
    t1 = time.monotonic_ns()
    if p.returncode != 0:
        fail(f"program exit {p.returncode}: {p.stderr}")
    if p.stdout != "levels 0 1 1 0 empty-pop -1\ndone\n":
        fail(f"stdout changed: {p.stdout!r}")
    lines = [json.loads(l) for l in open(out)]
    summary = [l for l in lines if l["category"] == "summary"]
    if len(summary) != 1 or lines[-1]["category"] != "summary":
        fail("expected exactly one summary line, last")
    summary = summary[0]
    if summary["drop_count"] != 0:
        fail(f"drops: {summary['drop_count']}")
    all_buf = [l for l in lines if l["category"] == "buffer"]
    if summary["records"] != len(all_buf):
        fail(f"summary records {summary['records']} != lines {len(all_buf)}")
    # backends loaded because the tool subscribes to every kind (cpu: PROCESS_SAMPLE, THREAD)
    # add their own records; the exact checks below are about the SDK's core kinds
    buf = [l for l in all_buf if l["kind"] in (MARKER_API, MARKER_RANGE_API, RETIREMENT)]
    cbs = [l for l in lines if l["category"] == "callback" and l["kind"] == MARKER_API]

    # --- exact counts ------------------------------------------------------------------------
    want = {
        (MARKER_API, OPS["NAME_THREAD"]): 3,
        (MARKER_API, OPS["MARK"]): 4,  # begin, inside inner, end, long ("hidden" is paused)
        (MARKER_API, OPS["PUSH"]): 2 + 2 * 2 * ITER,
        (MARKER_API, OPS["POP"]): 2 + 2 * 2 * ITER,
        (MARKER_API, OPS["START"]): 1,
        (MARKER_API, OPS["STOP"]): 1,
        (MARKER_API, OPS["PAUSE"]): 1,
        (MARKER_API, OPS["RESUME"]): 1,
        (MARKER_API, OPS["PROGRESS"]): 3,
        (MARKER_API, OPS["PROGRESS_BEGIN"]): 1,
        (MARKER_API, OPS["PROGRESS_END"]): 1,
        (MARKER_RANGE_API, RANGE_OPS["MARK"]): 4,
        (MARKER_RANGE_API, RANGE_OPS["THREAD_RANGE"]): 2 + 2 * 2 * ITER,
        (MARKER_RANGE_API, RANGE_OPS["PROCESS_RANGE"]): 1,
    }
    n_api = sum(v for (k, _), v in want.items() if k == MARKER_API)
    want[(RETIREMENT, 0)] = n_api
    got = collections.Counter((r["kind"], r["operation"]) for r in buf)
    if dict(got) != want:
        fail(f"counts differ:\n got  {sorted(got.items())}\n want {sorted(want.items())}")
    if len(cbs) != 2 * n_api:
        fail(f"callback records {len(cbs)} != {2 * n_api}")

    # --- timestamps, ordering ------------------------------------------------------------------
    markers = [r for r in buf if r["kind"] in (MARKER_API, MARKER_RANGE_API)]
    for r in markers:
        if not (t0 <= r["start"] <= r["end"] <= t1):
            fail(f"timestamps outside [{t0},{t1}] or start > end: {r}")
        if any("hidden" == r["message"] for r in markers):
            fail("a record was produced while paused")
    per_thread = collections.defaultdict(list)
    for r in buf:
        if r["kind"] == MARKER_API:
            per_thread[r["thread_id"]].append(r["start"])
    if len(per_thread) != 3:
        fail(f"expected 3 threads, got {len(per_thread)}")
    for tid, ts in per_thread.items():
        if ts != sorted(ts):
            fail(f"records of thread {tid} out of time order")

    # --- nesting -------------------------------------------------------------------------------
    thread_ranges = [r for r in buf if r["kind"] == MARKER_RANGE_API and r["operation"] == RANGE_OPS["THREAD_RANGE"]]
    by_tid = collections.defaultdict(list)
    for r in thread_ranges:
        by_tid[r["thread_id"]].append(r)
        if r["thread_id"] != r["end_thread_id"] or r["range_id"] != 0:
            fail(f"thread range ids wrong: {r}")
    for tid, rs in by_tid.items():
        for r in rs:
            if r["nesting_level"] == 0:
                continue
            parents = [q for q in rs if q["nesting_level"] == r["nesting_level"] - 1
                       and q["start"] <= r["start"] and r["end"] <= q["end"]]
            if len(parents) != 1:
                fail(f"range {r['message']}@{r['start']} level {r['nesting_level']} has {len(parents)} enclosing ranges")
    levels = collections.Counter((r["message"], r["nesting_level"]) for r in thread_ranges)
    if levels != {("outer", 0): 1, ("inner", 1): 1, ("work", 0): 2 * ITER, ("step", 1): 2 * ITER}:
        fail(f"range messages/levels: {levels}")

    # --- process range across threads -----------------------------------------------------------
    pr = [r for r in buf if r["kind"] == MARKER_RANGE_API and r["operation"] == RANGE_OPS["PROCESS_RANGE"]][0]
    start = [r for r in buf if r["kind"] == MARKER_API and r["operation"] == OPS["START"]][0]
    main_tid = start["thread_id"]
    if pr["range_id"] == 0 or pr["range_id"] != start["range_id"] or pr["thread_id"] != main_tid \
            or pr["end_thread_id"] == main_tid or pr["message"] != "process-range":
        fail(f"process range wrong: {pr}")

    # --- messages --------------------------------------------------------------------------------
    longs = [r for r in markers if r["message_length"] > 100]
    if len(longs) != 2 or any(len(r["message"]) != MSG_MAX - 1 or not r["message"].endswith("...") for r in longs):
        fail("long message not truncated to OMNIPROF_MARKER_MESSAGE_MAX-1 bytes ending in '...'")
    names = sorted(r["message"] for r in buf if r["kind"] == MARKER_API and r["operation"] == OPS["NAME_THREAD"])
    if names != ["main", "worker-0", "worker-1"]:
        fail(f"thread names {names}")

    # --- correlation ids ---------------------------------------------------------------------------
    api_ids = [r["correlation_id"]["internal"] for r in buf if r["kind"] == MARKER_API]
    if 0 in api_ids or len(set(api_ids)) != len(api_ids):
        fail("MARKER_API correlation ids must be unique and non-zero")
    retired = [r["internal_correlation_id"] for r in buf if r["kind"] == RETIREMENT]
    if sorted(retired) != sorted(api_ids):
        fail("every correlation id must be retired exactly once")
    pos = {}
    for i, r in enumerate(buf):
        if r["kind"] in (MARKER_API, MARKER_RANGE_API):
            pos.setdefault(r["correlation_id"]["internal"], []).append(i)
        elif r["kind"] == RETIREMENT:
            if any(j > i for j in pos.get(r["internal_correlation_id"], [])) or \
                    r["internal_correlation_id"] not in pos:
                fail(f"retirement of {r['internal_correlation_id']} before its records")
    enters = collections.Counter(c["correlation_id"]["internal"] for c in cbs if c["phase"] == "enter")
    exits = collections.Counter(c["correlation_id"]["internal"] for c in cbs if c["phase"] == "exit")
    if enters != exits or set(enters) != set(api_ids):
        fail("callback enter/exit pairs do not match the MARKER_API calls")
    if any(c["user_data"] != c["correlation_id"]["internal"] for c in cbs):
        fail("user_data set at ENTER not seen at EXIT")
    print(f"OK: {len(buf)} core records (+{len(all_buf) - len(buf)} from backends), {len(cbs)} callbacks, 3 threads, {len(thread_ranges)} thread ranges")


if __name__ == "__main__":
    main()
