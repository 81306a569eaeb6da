#!/usr/bin/env python3
"""test_torch_parallel.py — torch_compare.py's concurrent rounds (TORCH_COMPARE_PARALLEL; CTest
gpu.torch_parallel; no GPU, no torch). Real processes: torch_compare.py runs a stand-in training program
(TORCH_COMPARE_TRAIN) that writes torch_train.py's report, with an nvidia-smi on PATH that lists four GPUs.
Checks that the modes of a round run at once (each run waits until every run of its round has started:
run one after another, they would time out), that each run gets its slot's GPU and CPUs, that the slots
rotate so each mode visits each GPU once, that the per-GPU CPUs are disjoint and local to their GPU
(pick_slots), that too few slots or GPUs are refused with a clear line, and that the kernel comparison
pairs runs on the same GPU (same_gpu_pair)."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import torch_compare  # noqa: E402  (standard library only)
from test_torch_pool import check, finish, scratch  # noqa: E402

FAKE_TRAIN = r'''
import json, os, sys, time
a = sys.argv
rep, mode = a[a.index("--report") + 1], a[a.index("--mode") + 1]
work = os.path.dirname(rep)
rnd = rep.rsplit("-", 1)[1].split(".")[0]
open(os.path.join(work, "started-%s-%s" % (rnd, os.getpid())), "w").close()
want, t0, together = int(os.environ["FAKE_RUNS_PER_ROUND"]), time.time(), False
while time.time() - t0 < 20:  # every run of this round started: they run at once
    if sum(1 for f in os.listdir(work) if f.startswith("started-%s-" % rnd)) >= want:
        together = True
        break
    time.sleep(0.01)
gpu = os.environ.get("CUDA_VISIBLE_DEVICES")
r = {"mode": mode, "steps": 4, "loop_s": 1.0, "step_ms_median": 10.0, "step_ms": [10.0] * 4,
     "together": together, "gpu": gpu, "order": os.environ.get("CUDA_DEVICE_ORDER"),
     "cpus": sorted(os.sched_getaffinity(0)), "t_end": time.time()}
if mode.startswith("torch"):
    r["kernels"] = {"k": [1000.0 * (1 + 0.02 * int(gpu))] * 4}
json.dump(r, open(rep, "w"))
'''

SMI = '''#!/bin/sh
echo "0, 00000000:1B:00.0"; echo "1, 00000000:43:00.0"; echo "2, 00000000:52:00.0"; echo "3, 00000000:61:00.0"
'''


def main():
    d = scratch("tpar-")  # removed at the end, whatever the path
    train, smi = os.path.join(d, "train.py"), os.path.join(d, "bin", "nvidia-smi")
    os.makedirs(os.path.dirname(smi))
    open(train, "w").write(FAKE_TRAIN)
    open(smi, "w").write(SMI)
    os.chmod(smi, 0o755)
    env = dict(os.environ, PATH=os.path.dirname(smi) + ":" + os.environ["PATH"], TORCH_COMPARE_TRAIN=train,
               TORCH_COMPARE_PARALLEL="3", TORCH_COMPARE_MODES="torch_cuda torch_cpu_cuda", FAKE_RUNS_PER_ROUND="3")
    work = os.path.join(d, "work")
    p = subprocess.run([sys.executable, os.path.join(HERE, "torch_compare.py"), os.path.join(d, "nobuild"), work, "3"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, timeout=300)
    print(p.stdout[-1500:], p.stderr[-500:])
    check(p.returncode == 0, "torch_compare.py with TORCH_COMPARE_PARALLEL=3 exits 0 (%d)" % p.returncode)
    check("concurrent rounds: slots (GPU, CPUs) 0:" in p.stdout and "mode i runs in slot (i + round) % 3" in p.stdout,
          "the slots are printed")
    res = json.load(open(os.path.join(work, "torch_compare.json")))["rounds"]
    runs = [(m, k, r) for m, rs in res.items() for k, r in rs.items()]
    check(len(runs) == 9 and all("error" not in r for _, _, r in runs), "3 modes x 3 rounds ran (%d)" % len(runs))
    check(all(r.get("together") for _, _, r in runs), "every run's round had all its runs started at once")
    check(all(r["gpu"] == r["slot"][0] and r["order"] == "PCI_BUS_ID" for _, _, r in runs),
          "each run sees its slot's GPU, in PCI order (nvidia-smi's numbering)")
    check(all(r["cpus"] == [int(c) for c in r["slot"][1].split(",")] for _, _, r in runs),
          "each run is pinned to its slot's CPUs")
    for m, rs in res.items():
        gpus = sorted(r["gpu"] for r in rs.values())
        check(gpus == ["0", "1", "2"], "%s visits each GPU once over 3 rounds (%s)" % (m, gpus))
    for k in ("1", "2", "3"):
        gpus = sorted(res[m][k]["gpu"] for m in res)
        check(gpus == ["0", "1", "2"], "round %s puts its 3 modes on 3 GPUs (%s)" % (k, gpus))

    # the kernel comparison pairs runs on one GPU: in concurrent rounds, another round's run
    ka, kb = torch_compare.same_gpu_pair(res, "torch_cpu_cuda", "torch_cuda")
    check(res["torch_cpu_cuda"][ka]["gpu"] == res["torch_cuda"][kb]["gpu"] and ka != kb,
          "same_gpu_pair: torch_cpu_cuda round %s and torch_cuda round %s share a GPU" % (ka, kb))
    check(torch_compare.same_gpu_pair({"a": {1: {}, 2: {}}, "b": {2: {}}}, "a", "b") == (2, 2),
          "one run after another (no slots): the same round")
    check(torch_compare.same_gpu_pair({"a": {1: {"slot": ["0", "2"]}}, "b": {1: {"slot": ["1", "9"]}}}, "a", "b") is None,
          "no pair when the modes never shared a GPU")

    # CPUs: 8 per GPU, local to it, none shared, 0-1 left to the system; fewer CPUs than slots share them
    local = {"a": list(range(0, 32)), "b": list(range(0, 32)), "c": list(range(32, 64)), "d": list(range(32, 64))}
    sl = torch_compare.pick_slots([("0", "a"), ("1", "b"), ("2", "c"), ("3", "d")], list(range(64)), local.get)
    check(sl == [("0", "2,3,4,5,6,7,8,9"), ("1", "10,11,12,13,14,15,16,17"), ("2", "32,33,34,35,36,37,38,39"),
                 ("3", "40,41,42,43,44,45,46,47")], "pick_slots: 8 local CPUs per GPU, disjoint (%s)" % sl)
    sl = torch_compare.pick_slots([("0", "a"), ("1", "b")], [0, 1], lambda bus: None)
    check(sl == [("0", "0,1"), ("1", "0,1")], "pick_slots on a 2-CPU machine: the slots share its CPUs (%s)" % sl)
    check(torch_compare.cpulist("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11], "cpulist reads sysfs lists")

    # refusals: more modes than slots; more slots than GPUs
    for par, want in (("1", "TORCH_COMPARE_PARALLEL=1 slots for 3 modes"), ("5", "wants 5 GPUs, nvidia-smi lists 4")):
        p = subprocess.run([sys.executable, os.path.join(HERE, "torch_compare.py"), "x", os.path.join(d, "w" + par), "1"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=dict(env, TORCH_COMPARE_PARALLEL=par), timeout=120)
        check(p.returncode != 0 and want in p.stderr, "PARALLEL=%s refused: %s" % (par, p.stderr.strip()[-200:]))
    return finish(d)


if __name__ == "__main__":
    sys.exit(main())
