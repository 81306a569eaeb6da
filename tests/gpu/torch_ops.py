#!/usr/bin/env python3
"""torch_ops.py BUILD_DIR WORK_DIR [ROUNDS] — `omniprof run --torch` against torch.profiler on a
small PyTorch training loop, on the GPU machine (tests/gpu/run.sh, part `pyframes`).

The loop (this file, --child): an MLP (4 x Linear 256 -> ReLU), AdamW(foreach=False), batch 64;
a warm-up (at least 10 steps and 1.5 s), then STEPS (TORCH_OPS_STEPS, 200) measured steps,
timed in 5 windows, inside an NVTX range "measured", each step ending in loss.item(). Three ways, ROUNDS (3; run.sh passes 5) times interleaved:
  plain     the loop alone
  omniprof  the same program under `omniprof run --torch` (no change to it)
  profiler  torch.profiler(activities=[CPU, CUDA], record_shapes=True) around the measured steps
Checks (PASS/FAIL lines):
  - operators: per step, each aten:: operator that torch.profiler shows is a region of the same
    name as often (within 2 %); every operator of the measured steps has its input shapes
    ("sizes = [[") recorded in the run (by default during the first 5 optimizer steps, the
    warm-up here), the regions carry sequence numbers ("seq = "), backward operators their
    forward's ("seq = " on *Backward0);
  - --torch's driver API records are launch calls only (OMNIPROF_CUDA_DRIVER_API_CALLS=launches),
    its runtime API records launch, copy and synchronize calls only (..._RUNTIME_API_CALLS);
  - kernels under operators: each kernel name's operator (the innermost operator region on the
    launching thread around its launching call, joined by correlation id) is the operator
    torch.profiler links it to (its "External id") for at least 95 % of the kernels.
Target (a MET/MISSED line, which run.sh reports as TARGET): omniprof's added time <= 0.5 x torch.profiler's (medians of the
rounds, each against the same round's plain run), printed with a bootstrap interval over the
rounds. Every child runs on the same 4 CPUs; each round starts at another mode. The rounds' loop
times go to WORK_DIR/rounds.json; `torch_ops.py --pool A/rounds.json B/rounds.json ...` prints
the verdict over the rounds of several runs."""
import gc
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict

WINDOWS = 5


def child(mode, steps, report, export):
    import torch
    dev = "cuda"
    torch.manual_seed(0)
    layers = []
    for _ in range(4):
        layers += [torch.nn.Linear(256, 256), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
    x = torch.randn(64, 256, device=dev)
    y = torch.randn(64, 256, device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    # warm-up: at least 10 steps and 1.5 s, so that the CPU's and the GPU's clocks have left
    # their idle state before the measured steps in every mode
    w0 = time.perf_counter()
    n = 0
    while n < 10 or time.perf_counter() - w0 < 1.5:
        step()
        n += 1
    torch.cuda.synchronize()
    prof = None
    if mode == "itt":
        # torch's ITT path (names only), no collector attached: what torch itself pays per operator
        # on that path, beside its NVTX path's (nvtx_notool*)
        try:
            prof = torch.autograd.profiler.emit_itt(enabled=True)
            prof.__enter__()
        except Exception as e:  # a torch built without ITT: reported, the loop runs plain
            print("itt unavailable: %s: %s" % (type(e).__name__, e), file=sys.stderr)
            prof = None
            mode = "plain"
    if mode == "profiler":
        acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        prof = torch.profiler.profile(activities=acts, record_shapes=True)
        prof.__enter__()
    torch.cuda.nvtx.range_push("measured")
    # the steps in WINDOWS equal windows, each timed: the child's figure is the median window
    # times WINDOWS, so that one window disturbed by something else on the host (another
    # process, a clock change) does not move the round
    windows = []
    gc.collect()
    gc.disable()  # as timeit does: no collection of the interpreter's lands in one mode's window
    t0 = time.perf_counter()
    for w in range(WINDOWS):
        a = time.perf_counter()
        for _ in range(steps * (w + 1) // WINDOWS - steps * w // WINDOWS):
            step()
        torch.cuda.synchronize()
        windows.append(time.perf_counter() - a)
    t1 = time.perf_counter()
    gc.enable()
    torch.cuda.nvtx.range_pop()
    out = {"seconds": statistics.median(windows) * WINDOWS, "total": t1 - t0, "windows": windows, "steps": steps}
    if mode == "itt":
        prof.__exit__(None, None, None)
        out["itt"] = torch.profiler.itt.is_available()
    elif prof is not None:
        prof.__exit__(None, None, None)
    if mode == "profiler" and export:  # the checks read the last round's trace only
        trace = report + ".trace.json"
        prof.export_chrome_trace(trace)
        out["trace"] = trace
    with open(report, "w") as f:
        json.dump(out, f)


def profiler_view(trace, steps):
    """(aten op counts per step, Counter of (kernel, op)) from torch.profiler's trace."""
    with open(trace) as f:
        ev = json.load(f)["traceEvents"]
    ops = [e for e in ev if e.get("cat") == "cpu_op"]
    by_ext = {}
    for e in ops:
        ext = (e.get("args") or {}).get("External id")
        if ext is not None:
            by_ext[ext] = e["name"]
    counts = Counter(e["name"] for e in ops if e["name"].startswith("aten::"))
    links = Counter()
    for e in ev:
        if e.get("cat") == "kernel":
            ext = (e.get("args") or {}).get("External id")
            links[(e["name"], by_ext.get(ext, "?"))] += 1
    return {k: v / steps for k, v in counts.items()}, links


def omniprof_view(db, steps):
    """The same from omniprof's database: operator regions (torch's NVTX ranges) inside the
    "measured" range, and each kernel's operator through its launching call."""
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    m = con.execute("SELECT start, end FROM regions WHERE name = 'measured'").fetchone()
    regs = con.execute("SELECT tid, start, end, name, category, stack_id FROM regions WHERE start >= ? AND end <= ?",
                       m).fetchall()
    opregs = [r for r in regs if ", seq = " in r[3] or r[3].startswith("aten::")]
    counts = Counter(r[3].split(",")[0] for r in opregs if r[3].startswith("aten::"))
    launch = {r[5]: (r[0], r[1]) for r in regs if r[4] and ("RUNTIME" in r[4] or "DRIVER" in r[4])}
    per_tid = defaultdict(list)
    for r in opregs:
        per_tid[r[0]].append(r)
    links = Counter()
    for name, sid in con.execute("SELECT name, stack_id FROM kernels WHERE start >= ? AND start <= ?",
                                 (m[0], m[1] + 10**9)):
        tid_t = launch.get(sid)
        op = "?"
        if tid_t:
            inner = [r for r in per_tid[tid_t[0]] if r[1] <= tid_t[1] <= r[2]]
            if inner:
                op = min(inner, key=lambda r: r[2] - r[1])[3].split(",")[0]
        links[(name, op)] += 1
    # shapes: by default recorded during the first 5 optimizer steps (the warm-up here), then
    # the same ranges without them: every operator of the measured steps must have its shapes
    # recorded somewhere in the run
    shaped = {r[0].split(",")[0] for r in con.execute(
        "SELECT name FROM regions WHERE name LIKE '%sizes = [[%'")}
    measured_ops = {r[3].split(",")[0] for r in opregs if r[3].startswith("aten::")}
    shapes = bool(measured_ops) and measured_ops <= shaped
    seq = any(", seq = " in r[3] for r in opregs)
    bwd_seq = any(r[3].split(",")[0].endswith("Backward0") and "seq = " in r[3] for r in opregs)
    con.close()
    return {k: v / steps for k, v in counts.items()}, links, shapes, seq, bwd_seq


def dominant(links):
    by_kernel = defaultdict(Counter)
    for (k, op), n in links.items():
        by_kernel[k][op] += n
    return {k: c.most_common(1)[0] for k, c in by_kernel.items()}, by_kernel


def verdict(ok, name, msg):
    print("%s %s: %s" % ("PASS" if ok else "FAIL", name, msg))


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--pool":
        return pool(sys.argv[2:])
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]), sys.argv[4], len(sys.argv) > 5)
        return 0
    build, work = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    steps = int(os.environ.get("TORCH_OPS_STEPS", "200"))
    os.makedirs(work, exist_ok=True)
    # every child runs on the same few CPUs (inherited through fork/exec): a process landing on
    # another core or NUMA node moved one round's loop by up to 30 %; four CPUs hold the loop's
    # thread, autograd's device thread and the tools' collector threads
    cpus = pin_cpus()
    omniprof = os.path.join(build, "bin", "omniprof")
    me = os.path.abspath(__file__)
    times = defaultdict(list)
    raw = defaultdict(list)
    db = prof_trace = None
    hook = os.path.join(build, "python", "omniprof", "torch_hook")
    # TORCH_OPS_BREAKDOWN=1: also the parts of --torch's cost, each alone (same rounds)
    extra = {
        # torch's own NVTX path, no tool attached: torch formats the strings (with shapes, without)
        "nvtx_notool": ([], {"PYTHONPATH": hook, "OMNIPROF_TORCH": "true", "OMNIPROF_TORCH_SHAPES": "true"}),
        "nvtx_notool_noshapes": ([], {"PYTHONPATH": hook, "OMNIPROF_TORCH": "true",
                                      "OMNIPROF_TORCH_SHAPES": "false"}),
        # --torch with shapes on every call, and with none
        "torch_allshapes": (["--torch"], {"OMNIPROF_TORCH_SHAPES": "true"}),
        "torch_noshapes": (["--torch"], {"OMNIPROF_TORCH_SHAPES": "false"}),
        # the GPU side of --torch alone: kernels and their launching calls, no operators
        "kernel_only": (["--kernel-trace"], {}),
        "kernel_api": (["--kernel-trace", "--cuda-runtime-trace", "--cuda-driver-trace"], {}),
        # --torch with the whole driver API traced (what --torch did before it traced the
        # driver's launch calls alone)
        "torch_full_driver": (["--torch", "--cuda-driver-trace"], {}),
        # torch's ITT path, no collector (the child enters emit_itt itself)
        "itt_notool": ([], {}),
        # --torch with the whole runtime API traced (what --torch did before it traced the
        # runtime's launch, copy and synchronize calls alone)
        "torch_full_runtime": (["--torch", "--cuda-runtime-trace"], {}),
        # --torch with CUPTI buffers 8x larger: no buffer completes inside a 200-step loop
        "torch_bigbuf": (["--torch"], {"OMNIPROF_CUDA_BUFFER_SIZE": "67108864"}),
    }
    # TORCH_OPS_BREAKDOWN: 1 = every mode above, or a space-separated list of them
    pick = os.environ.get("TORCH_OPS_BREAKDOWN", "")
    extra = {k: v for k, v in extra.items() if pick == "1" or k in pick.split()}
    modes = ("plain", "omniprof", "profiler") + tuple(extra)
    for i in range(rounds):
        # each round starts at another mode, so that no mode always follows the same one
        for mode in modes[i % len(modes):] + modes[:i % len(modes)]:
            rep = os.path.join(work, "%s_%d.json" % (mode, i))
            cmd = [sys.executable, me, "--child", {"profiler": "profiler", "itt_notool": "itt"}.get(mode, "plain"),
                   str(steps), rep] + (["export"] if i == rounds - 1 else [])
            env = dict(os.environ)
            if mode == "omniprof":
                cmd = [omniprof, "run", "--torch", "-d", work, "-o", "ops%d" % i, "--"] + cmd
            elif mode in extra:
                opts, add = extra[mode]
                env.update(add)
                if opts:
                    cmd = [omniprof, "run"] + opts + ["-d", work, "-o", "%s%d" % (mode, i), "--"] + cmd
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
            if r.returncode != 0:
                verdict(False, "torch.ops_run", "%s exit %d: %s" % (mode, r.returncode, r.stderr.strip()[-400:]))
                return 1
            with open(rep) as f:
                rj = json.load(f)
            times[mode].append(rj["seconds"])
            raw[mode].append(rj)
            if mode == "itt_notool" and i == 0:
                print("itt_notool: torch ITT path on: %s" % rj.get("itt", False))
            if mode == "omniprof":
                db = os.path.join(work, "ops%d_results.db" % i)
            if mode == "profiler" and "trace" in rj:
                prof_trace = rj["trace"]
    for m in sorted(extra):
        mdb = os.path.join(work, "%s%d_results.db" % (m, rounds - 1))
        if m.startswith("torch") and os.path.exists(mdb):
            _, ml, _, _, _ = omniprof_view(mdb, steps)
            under = sum(n for (k, op), n in ml.items() if op != "?")
            alone = Counter()
            for (k, op), n in ml.items():
                if op == "?":
                    alone[k[:50]] += n
            print("links %s: %d of %d kernels under an operator; without one: %s" %
                  (m, under, sum(ml.values()), alone.most_common(4)))
    for m in sorted(raw):
        print("rounds %s: whole loop %s s; median window x %d %s s; windows' spread (max/min) %s" % (
            m, " ".join("%.3f" % r["total"] for r in raw[m]), WINDOWS, " ".join("%.3f" % r["seconds"] for r in raw[m]),
            " ".join("%.2f" % (max(r["windows"]) / min(r["windows"])) for r in raw[m])))
    t = {m: statistics.median(v) for m, v in times.items()}
    print("loop seconds (median of %d): %s" % (rounds, ", ".join("%s %.3f" % kv for kv in sorted(t.items()))))
    padd = [a - b for a, b in zip(times["profiler"], times["plain"])]
    for m in sorted(extra) + ["omniprof", "profiler"]:
        add = [a - b for a, b in zip(times[m], times["plain"])]
        print("breakdown %s: added %.1f ms (median; rounds %s), %.2fx torch.profiler's (rounds %s)" %
              (m, statistics.median(add) * 1e3, " ".join("%.0f" % (a * 1e3) for a in add),
               statistics.median(add) / max(1e-9, statistics.median(padd)),
               " ".join("%.2f" % (a / p) if p > 0 else "-" for a, p in zip(add, padd))))
    pc, plinks = profiler_view(prof_trace, steps)
    oc, olinks, shapes, seq, bwd_seq = omniprof_view(db, steps)
    bad = [(k, pc[k], oc.get(k, 0)) for k in sorted(pc) if abs(oc.get(k, 0) - pc[k]) > 0.02 * pc[k]]
    verdict(not bad and len(pc) > 5, "torch.ops_counts",
            "%d aten operators per step as torch.profiler; differing: %s" % (len(pc), bad[:6]))
    verdict(shapes and seq and bwd_seq, "torch.ops_fields",
            "input shapes of every measured operator recorded %s, sequence numbers %s, backward "
            "sequence numbers %s" % (shapes, seq, bwd_seq))
    # --torch traces the driver's launch calls alone (OMNIPROF_CUDA_DRIVER_API_CALLS=launches) and
    # the runtime's launch, copy and synchronize calls (OMNIPROF_CUDA_RUNTIME_API_CALLS)
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    drv = Counter(r[0] for r in con.execute("SELECT name FROM regions WHERE category LIKE '%DRIVER%'"))
    rt = Counter(r[0] for r in con.execute("SELECT name FROM regions WHERE category LIKE '%RUNTIME%'"))
    con.close()
    other = {k: n for k, n in drv.items() if "Launch" not in k}
    verdict(bool(drv) and not other, "torch.driver_launches",
            "driver API regions: %s; other than launch calls: %s" % (drv.most_common(3), other))
    other = {k: n for k, n in rt.items() if not any(w in k for w in ("Launch", "Memcpy", "Memset", "Synchronize", "WaitEvent"))}
    verdict(rt.get("cudaLaunchKernel", 0) > 0 and rt.get("cudaStreamSynchronize", 0) > 0 and
            rt.get("cudaMemcpyAsync", 0) > 0 and not other, "torch.runtime_calls",
            "runtime API regions: %s; other than launch, copy and synchronize calls: %s" % (rt.most_common(4), other))
    pd, _ = dominant(plinks)
    od, oby = dominant(olinks)
    agree = total = 0
    wrong = []
    for k, (op, _) in pd.items():
        n = sum(oby.get(k, Counter()).values())
        same = oby.get(k, Counter()).get(op, 0)
        total += n
        agree += same
        if n and same < 0.95 * n:
            wrong.append((k[:40], op, oby[k].most_common(1)))
    verdict(total > 0 and agree >= 0.95 * total and not wrong, "torch.ops_kernels",
            "%d of %d kernels under torch.profiler's operator; differing kernel names: %s" % (agree, total, wrong[:4]))
    with open(os.path.join(work, "rounds.json"), "w") as f:
        json.dump({"steps": steps, "cpus": cpus, "times": times}, f)
    print_cost(times, steps, cpus)
    return 0


def print_cost(times, steps, cpus, label=""):
    """The MET/MISSED line of the cost target, over the rounds in `times`."""
    rounds = len(times["plain"])
    added_o, added_p, ratio = cost(times, range(rounds))
    lo, hi = bootstrap_ratio(times, rounds)
    print("%s torch.ops_cost: --torch added %.1f ms, torch.profiler(record_shapes) %.1f ms: ratio %.2f "
          "(target <= 0.5; %d rounds%s of %d steps on CPUs %s, plain loop %.3f s; 90 %% bootstrap interval "
          "over the rounds %.2f-%.2f; from each mode's median alone %.2f)" % (
              "MET" if ratio <= 0.5 else "MISSED", added_o * 1e3, added_p * 1e3, ratio, rounds, label, steps,
              ",".join(map(str, cpus)) or "all", statistics.median(times["plain"]), lo, hi,
              cost_unpaired(times, range(rounds))))


def pool(paths):
    """--pool WORK_DIR/rounds.json ...: the cost verdict over the rounds of several runs (same
    steps)."""
    times, steps, cpus = defaultdict(list), set(), set()
    for p in paths:
        with open(p) as f:
            r = json.load(f)
        steps.add(r["steps"])
        cpus.add(tuple(r["cpus"]))
        for m in ("plain", "omniprof", "profiler"):
            times[m] += r["times"][m]
    if len(steps) != 1:
        print("torch_ops.py --pool: the runs measured different numbers of steps (%s)" % sorted(steps))
        return 2
    print_cost(times, steps.pop(), list(cpus.pop()) if len(cpus) == 1 else [],
               " pooled from %d runs" % len(paths))
    return 0


def pin_cpus():
    """Pin this process (and so every child) to 4 CPUs of the first NUMA node, away from CPU 0;
    [] (no pinning) where fewer than 6 CPUs are available."""
    have = sorted(os.sched_getaffinity(0))
    node0 = have
    try:
        with open("/sys/devices/system/node/node0/cpulist") as f:
            listed = set()
            for part in f.read().strip().split(","):
                a, _, b = part.partition("-")
                listed.update(range(int(a), int(b or a) + 1))
        node0 = [c for c in have if c in listed] or have
    except (OSError, ValueError):
        pass
    if len(node0) < 6:
        return []
    cpus = node0[1:5]
    os.sched_setaffinity(0, cpus)
    return cpus


def cost(times, pick):
    """(--torch's added seconds, torch.profiler's, their ratio) over the rounds in `pick` (round
    numbers, repeats allowed): the medians of each round's difference to the same round's plain
    loop. The three children of a round run one after the other, so the pairing takes out the
    drift of the machine between rounds (one run's plain loop went from 0.60 s to 0.37 s)."""
    added_o = statistics.median(times["omniprof"][i] - times["plain"][i] for i in pick)
    added_p = statistics.median(times["profiler"][i] - times["plain"][i] for i in pick)
    return added_o, added_p, added_o / added_p if added_p > 0 else float("inf")


def cost_unpaired(times, pick):
    """The ratio from each mode's median loop time alone (the verdict's figure before pairing)."""
    med = {m: statistics.median(times[m][i] for i in pick) for m in ("plain", "omniprof", "profiler")}
    added_p = med["profiler"] - med["plain"]
    return (med["omniprof"] - med["plain"]) / added_p if added_p > 0 else float("inf")


def bootstrap_ratio(times, rounds, n=2000):
    """5th and 95th percentiles of the cost ratio (the verdict's, cost()) over rounds drawn with
    replacement: how far the verdict could move with other rounds."""
    import random
    rng = random.Random(1)
    rs = sorted(cost(times, [rng.randrange(rounds) for _ in range(rounds)])[2] for _ in range(n))
    return rs[int(0.05 * n)], rs[int(0.95 * n) - 1]


if __name__ == "__main__":
    sys.exit(main())
