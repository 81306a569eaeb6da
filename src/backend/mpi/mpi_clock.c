/* mpi_clock.c — each process's CLOCK_MONOTONIC against world rank 0's, measured over MPI at init
 * and at finalize (CLOCK_SYNC records; docs/multinode.md, "Clocks").
 *
 * Rank 0 exchanges OMNIPROF_MPI_CLOCK_ROUND_TRIPS ping-pongs with each other rank in turn (on a
 * private duplicate of MPI_COMM_WORLD, so no message of the program can match ours): it reads its
 * clock t0, sends, the peer reads its clock tp and answers with it, rank 0 reads t1. If the two
 * legs took equally long, the peer's clock read tp when rank 0's read (t0 + t1) / 2, so
 *     offset = tp - (t0 + t1) / 2      (peer minus reference)
 * with an error of at most (t1 - t0) / 2 whatever the legs' asymmetry. The exchange with the
 * shortest round trip is kept (the least queuing), and rank 0 tells the peer its estimate, the
 * round trip and the peer time tp it refers to; each process records its own. Two estimates, at
 * init and at finalize, give the drift; merge, convert and summary map the process's times onto
 * rank 0's clock (src/output/clocks.c). Rank 0 records offset 0, error 0.
 *
 * OMNIPROF_MPI_CLOCK_ROUND_TRIPS is the most exchanges per peer: rank 0 stops earlier once a round
 * trip took at most 10 µs (error <= 5 µs; at least 8 exchanges) or after 2 s with that peer (a
 * busy machine, where every round trip takes milliseconds: the best of those is kept, its error
 * recorded). Rank 0 ends each peer's exchanges with a stop ping (-1).
 * Cost: (size - 1) x at most round trips x one round trip, at init and at finalize, mostly on
 * rank 0 (16 round trips of 10 µs over 1,000 ranks: 0.16 s; on InfiniBand 8 of 3 µs). Off with
 * OMNIPROF_MPI_CLOCK_ROUND_TRIPS=0. */
#include <string.h>

#include "backend/mpi/mpi_internal.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/settings.h"
#include "omniprof/comm.h"
#include "sdk/backend.h"

typedef void *H;
typedef int (*isend_fn)(const void *, int, H, int, int, H, H *);
typedef int (*irecv_fn)(void *, int, H, int, int, H, H *);
typedef int (*test_fn)(H *, int *, void *);
typedef int (*idup_fn)(H, H *, H *);
typedef int (*comm_int_fn)(H, int *);
typedef int (*free_fn)(H *);

#define TAG 0x6f70 /* on our own communicator: any tag would do */
#define TIMEOUT_NS 10000000000ull
#define MIN_ROUNDS 8u                   /* round trips before a short one may end the exchange */
#define GOOD_RTT_NS 10000               /* a round trip this short bounds the error to 5 us */
#define PEER_BUDGET_NS 2000000000ull    /* at most 2 s of exchanges per peer */

static struct {
    isend_fn isend;
    irecv_fn irecv;
    test_fn test;
    idup_fn idup;
    comm_int_fn rank_of, size_of;
    free_fn comm_free;
} g_fn;
static H g_comm;       /* our duplicate of MPI_COMM_WORLD */
static bool g_comm_made, g_failed;

static void emit(int op, uint64_t local, int64_t offset, uint64_t rtt, int rank, uint32_t n)
{
    omniprof_clock_sync_record_t r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.kind = OMNIPROF_BUFFER_TRACING_CLOCK_SYNC;
    r.operation = op;
    r.local_timestamp = local;
    r.offset_ns = offset;
    r.error_ns = rtt / 2;
    r.round_trip_ns = rtt;
    r.rank = rank;
    r.reference_rank = 0;
    r.round_trips = n;
    op_sdk_emit(OMNIPROF_BUFFER_TRACING_CLOCK_SYNC, op, &r, NULL);
}

/* Polls `req` until it completes (true) or the deadline passes (false: the measurement is
 * abandoned; a rank that does not run under omniprof never answers, and waiting for it would
 * hang the program). */
static bool done_by(H *req, uint64_t deadline)
{
    int flag = 0;
    while (g_fn.test(req, &flag, (H)g_op_mpi_abi.status_ignore) == 0 && !flag)
        if (op_now_ns() > deadline) return false;
    return flag != 0;
}

static bool xfer(bool out, void *buf, int n, int peer, uint64_t deadline)
{
    H req = NULL, byte = (H)g_op_mpi_abi.byte;
    int rc = out ? g_fn.isend(buf, n, byte, peer, TAG, g_comm, &req) : g_fn.irecv(buf, n, byte, peer, TAG, g_comm, &req);
    return rc == 0 && done_by(&req, deadline);
}

static bool resolve(void)
{
    g_fn.isend = (isend_fn)op_mpi_pmpi("MPI_Isend");
    g_fn.irecv = (irecv_fn)op_mpi_pmpi("MPI_Irecv");
    g_fn.test = (test_fn)op_mpi_pmpi("MPI_Test");
    g_fn.idup = (idup_fn)op_mpi_pmpi("MPI_Comm_idup");
    g_fn.rank_of = (comm_int_fn)op_mpi_pmpi("MPI_Comm_rank");
    g_fn.size_of = (comm_int_fn)op_mpi_pmpi("MPI_Comm_size");
    g_fn.comm_free = (free_fn)op_mpi_pmpi("MPI_Comm_free");
    return g_fn.isend && g_fn.irecv && g_fn.test && g_fn.idup && g_fn.rank_of && g_fn.size_of;
}

/* Rank 0's side with one peer: exchanges until one round trip was short enough (GOOD_RTT_NS, after
 * MIN_ROUNDS), `rounds` were made or the peer's time budget is spent; then the stop ping (-1) and
 * the answer. The budget bounds what a busy machine costs (every round trip milliseconds) and
 * keeps the ranks that wait their turn within their deadline. */
static bool measure_peer(int peer, uint32_t rounds)
{
    int64_t best[4] = {0, INT64_MAX, 0, 0}; /* offset, round trip, peer time, round trips made */
    uint64_t start = op_now_ns();
    for (uint32_t k = 0; k < rounds; k++) {
        int64_t tp = 0, ping = (int64_t)k;
        uint64_t t0 = op_now_ns(), deadline = t0 + TIMEOUT_NS;
        if (!xfer(true, &ping, 8, peer, deadline) || !xfer(false, &tp, 8, peer, deadline)) return false;
        uint64_t t1 = op_now_ns();
        int64_t rtt = (int64_t)(t1 - t0);
        if (rtt < best[1]) {
            best[1] = rtt;
            best[0] = tp - (int64_t)(t0 + (t1 - t0) / 2);
            best[2] = tp;
        }
        best[3] = (int64_t)k + 1;
        if ((k + 1 >= MIN_ROUNDS && best[1] <= GOOD_RTT_NS) || t1 - start > PEER_BUDGET_NS) break;
    }
    int64_t stop = -1;
    return xfer(true, &stop, 8, peer, op_now_ns() + TIMEOUT_NS) && xfer(true, best, 32, peer, op_now_ns() + TIMEOUT_NS);
}

void op_mpi_clock_sync(int operation)
{
    if (!atomic_load(&g_op_mpi_clock_on) || g_failed || !op_mpi_abi_ready()) return;
    uint32_t rounds = (uint32_t)op_setting_uint(OP_SET_MPI_CLOCK_ROUND_TRIPS);
    if (rounds == 0) return;
    if (!g_comm_made) {
        H req = NULL;
        if (!resolve() || g_fn.idup((H)g_op_mpi_abi.comm_world, &g_comm, &req) != 0 ||
            !done_by(&req, op_now_ns() + TIMEOUT_NS)) {
            op_warn("mpi: cannot make a communicator for the clock measurement (does every rank run under omniprof "
                    "with --mpi-trace?); clocks are not aligned");
            g_failed = true;
            return;
        }
        g_comm_made = true;
    }
    int rank = -1, size = 0;
    g_fn.rank_of(g_comm, &rank);
    g_fn.size_of(g_comm, &size);
    bool ok = true;
    if (rank == 0) {
        for (int peer = 1; peer < size && ok; peer++) {
            ok = measure_peer(peer, rounds);
            if (!ok) op_warn("mpi: rank %d did not answer the clock measurement within %llu s; clocks are not aligned", peer,
                             TIMEOUT_NS / 1000000000ull);
        }
        if (ok) emit(operation, op_now_ns(), 0, 0, 0, rounds);
    } else if (rank > 0) {
        /* rank 0 may be busy with lower ranks first: the first ping may take (rank - 1) x their time */
        uint64_t deadline = op_now_ns() + TIMEOUT_NS * (1 + (uint64_t)rank / 64);
        for (uint32_t k = 0; k <= rounds && ok; k++) { /* pings until rank 0's stop (-1) */
            int64_t ping = 0;
            ok = xfer(false, &ping, 8, 0, deadline);
            if (ok && ping < 0) break;
            int64_t tp = (int64_t)op_now_ns();
            ok = ok && xfer(true, &tp, 8, 0, op_now_ns() + TIMEOUT_NS);
            deadline = op_now_ns() + TIMEOUT_NS;
        }
        int64_t best[4];
        ok = ok && xfer(false, best, 32, 0, op_now_ns() + TIMEOUT_NS);
        if (ok) emit(operation, (uint64_t)best[2], best[0], (uint64_t)best[1], rank, (uint32_t)best[3]);
        else op_warn("mpi: rank 0 did not complete the clock measurement within %llu s; clocks are not aligned",
                     TIMEOUT_NS / 1000000000ull);
    }
    g_failed = !ok;
    if (operation == OMNIPROF_CLOCK_SYNC_FINALIZE && g_fn.comm_free && ok) {
        g_fn.comm_free(&g_comm);
        g_comm_made = false;
    }
}
