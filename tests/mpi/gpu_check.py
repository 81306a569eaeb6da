#!/usr/bin/env python3
"""The 2-GPU workloads of tests/mpi/gpu_tests.sh and the checks of their databases (issue 17 items
2 and 3; docs/multinode.md).

  work-peer2        (PyTorch, 2 GPUs) fill 1 Mi floats on cuda:0 and on cuda:1, copy the first to
                    cuda:1 (4 MiB, device to device), add and sum there
  check-peer2 DIR   the database in DIR: two GPU agents, kernels on both, one 4 MiB copy whose
                    source is one GPU agent and destination the other
  check-pmc2 DIR    work-peer2 under --pmc gpu__time_duration.sum smsp__inst_executed.sum: counter
                    values for dispatches on both GPU agents, every value of a dispatch > 0, and
                    each GPU's fill kernel counted on its own agent
  work-nccl2        (under torchrun, 2 processes) NCCL all_reduce of 1 Mi floats, 5 times, on the
                    process's LOCAL_RANK device
  check-nccl2 DIR   rank0/rank1 databases in DIR: each holds exactly 5 ncclAllReduce calls of
                    4 MiB sent and received, communicator size 2 and the database's own rank, and
                    >= 5 NCCL AllReduce kernels attributed to NCCL calls (view nccl_kernels)

Exit 0 when every check holds, 1 otherwise (each check printed)."""
import glob
import os
import sqlite3
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from testlib import FAILS, check  # noqa: E402 (tests/testlib.py: the one assertion helper)

N = 1 << 20
BYTES = 4 * N


def work_peer2():
    import torch
    a = torch.empty(N, dtype=torch.float32, device="cuda:0").fill_(1.0)
    b = torch.empty(N, dtype=torch.float32, device="cuda:1").fill_(2.0)
    torch.cuda.synchronize(0)
    torch.cuda.synchronize(1)
    c = a.to("cuda:1")
    total = float((c + b).sum())
    torch.cuda.synchronize(1)
    print("peer2 sum", total)
    return 0 if total == 3.0 * N else 1


def work_nccl2():
    import torch
    import torch.distributed as dist
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl")
    x = torch.ones(N, dtype=torch.float32, device="cuda:%d" % local)
    for _ in range(5):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    ok = float(x[0]) == 2.0 ** 5
    print("nccl2 rank %d of %d: x[0] = %g" % (dist.get_rank(), dist.get_world_size(), float(x[0])))
    dist.destroy_process_group()
    return 0 if ok else 1


def one_db(d):
    dbs = glob.glob(os.path.join(d, "*.db"))
    check(len(dbs) == 1, "one database in %s (%s)" % (d, dbs))
    return dbs[0] if dbs else None


def open_gpus(d):
    """The one database in d: (connection, query function, GPU agent ids), or None."""
    db = one_db(d)
    if not db:
        return None
    con = sqlite3.connect(db)
    q = lambda s, *p: con.execute(s, p).fetchall()
    return con, q, [r[0] for r in q("SELECT id FROM rocpd_info_agent WHERE type = 'GPU' ORDER BY id")]


def check_peer2(d):
    opened = open_gpus(d)
    if not opened:
        return
    con, q, gpus = opened
    check(len(gpus) >= 2, "two GPU agents (%s)" % gpus)
    on = [r[0] for r in q("SELECT DISTINCT agent_id FROM rocpd_kernel_dispatch")]
    check(len(set(on) & set(gpus)) >= 2, "kernels ran on both GPUs (agents %s)" % on)
    copies = q("SELECT src_agent_id, dst_agent_id, size FROM rocpd_memory_copy WHERE size = ?", BYTES)
    peer = [c for c in copies if c[0] in gpus and c[1] in gpus and c[0] != c[1]]
    check(len(peer) == 1, "one 4 MiB copy from one GPU agent to the other (%s; all 4 MiB copies: %s)" % (peer, copies))
    con.close()


def check_pmc2(d):
    opened = open_gpus(d)
    if not opened:
        return
    con, q, gpus = opened
    rows = q("SELECT K.agent_id, P.name, P.counter_name, P.counter_value FROM pmc_events P "
             "JOIN rocpd_kernel_dispatch K ON K.dispatch_id = P.dispatch_id AND K.guid = P.guid")
    per = {}
    for agent, name, counter, value in rows:
        per.setdefault(agent, []).append((name, counter, value))
    check(len(set(per) & set(gpus)) >= 2, "counter values for dispatches on both GPU agents (%s)" %
          {a: len(v) for a, v in per.items()})
    # the GPUs the program used (cuda:0 and cuda:1): a machine with more GPUs has agents without kernels
    used = sorted(set(gpus) & {r[0] for r in q("SELECT DISTINCT agent_id FROM rocpd_kernel_dispatch")})
    check(len(used) >= 2, "kernels ran on two GPU agents (%s of %s)" % (used, gpus))
    for a in used:
        names = {n for n, c, v in per.get(a, [])}
        counters = {c for n, c, v in per.get(a, [])}
        check(counters >= {"gpu__time_duration.sum", "smsp__inst_executed.sum"},
              "agent %d: both counters (%s)" % (a, sorted(counters)))
        check(all(v > 0 for n, c, v in per.get(a, [])), "agent %d: every value > 0 (%s)" % (
            a, sorted({(n[:40], c, v) for n, c, v in per.get(a, []) if v <= 0})[:4]))
        check(any("fill" in (n or "").lower() for n in names), "agent %d: its fill kernel counted (%s)" % (
            a, sorted(n[:50] for n in names if n)[:4]))
    con.close()


def check_nccl2(d):
    for r in (0, 1):
        db = os.path.join(d, "rank%d_results.db" % r)
        check(os.path.exists(db), "rank %d's database (%s)" % (r, sorted(os.listdir(d)) if os.path.isdir(d) else d))
        if not os.path.exists(db):
            continue
        con = sqlite3.connect(db)
        q = lambda s, *p: con.execute(s, p).fetchall()
        calls = q("SELECT id, comm_rank, comm_size, bytes_sent, bytes_received, datatype FROM nccl_calls "
                  "WHERE name = 'ncclAllReduce' AND bytes_sent = ?", BYTES)
        check(len(calls) == 5, "rank %d: 5 ncclAllReduce calls of 4 MiB (%d; all NCCL calls: %s)" %
              (r, len(calls), q("SELECT name, count(*) FROM nccl_calls GROUP BY name")))
        check(all(c[1] == r and c[2] == 2 and c[4] == BYTES for c in calls),
              "rank %d: communicator rank %d of 2, 4 MiB received (%s)" % (r, r, calls[:2]))
        k = q("SELECT call, kernel FROM nccl_kernels WHERE kernel LIKE '%AllReduce%'")
        check(len(k) >= 5, "rank %d: >= 5 AllReduce kernels launched inside NCCL calls (%d: %s)" % (r, len(k), k[:2]))
        con.close()


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode == "work-peer2":
        return work_peer2()
    if mode == "work-nccl2":
        return work_nccl2()
    checks = {"check-peer2": check_peer2, "check-pmc2": check_pmc2, "check-nccl2": check_nccl2}
    if mode in checks and len(sys.argv) == 3:
        checks[mode](sys.argv[2])
        print("%d check(s) failed" % len(FAILS) if FAILS else "all checks hold")
        return 1 if FAILS else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
