/* mpi_coll.c — the collectives the MPI backend interposes (blocking, and the common nonblocking
 * ones, whose requests end in a wait or test like any other).
 *
 * Bytes (docs/multinode.md, "Bytes"): what the calling process hands to the call and gets back
 * from it, in the call's own counts — not what crosses the network, which depends on the
 * library's algorithm:
 *   Barrier                  0 / 0
 *   Bcast                    root: count x size sent; others: count x size received
 *   Reduce                   count x size sent; root: count x size received too
 *   Allreduce, Scan, Exscan  count x size sent and received
 *   Gather(v)                sendcount x size sent; root: n x recvcount (sum of recvcounts) received
 *   Scatter(v)               root: n x sendcount (sum of sendcounts) sent; recvcount received
 *   Allgather(v)             sendcount sent; n x recvcount (sum of recvcounts) received
 *   Alltoall(v)              n x sendcount (sum) sent; n x recvcount (sum) received
 *   Reduce_scatter(_block)   the whole vector sent; this rank's block received
 * MPI_IN_PLACE sends count the receive buffer's share instead. `root` is a world rank. */
#include "backend/mpi/mpi_internal.h"
#include "omniprof/comm.h"

typedef void *H;

#define REAL(name, type)                          \
    static __typeof__(type) real_;                         \
    if (!real_) real_ = (type)op_mpi_pmpi(#name); \
    if (!real_) return 1

static bool in_place(const void *buf) { return (uintptr_t)buf == g_op_mpi_abi.in_place; }

static uint64_t bytes_of(H type, int64_t count)
{
    int size = 0;
    op_mpi_type(op_mpi_h(type), &size);
    return count > 0 && size > 0 ? (uint64_t)count * (uint64_t)size : 0;
}

static int64_t sum(const int *counts, int n)
{
    int64_t s = 0;
    for (int i = 0; counts && i < n; i++) s += counts[i] > 0 ? counts[i] : 0;
    return s;
}

static bool is_root(const op_mpi_call *c, int root) { return c->rec.comm_rank == root || root == g_op_mpi_abi.root; }

static void set_root(op_mpi_call *c, int root) { c->rec.root = op_mpi_world_rank(c->comm, root); }

static void set_op(op_mpi_call *c, H op) { c->rec.reduce_op = op_mpi_op_name(op_mpi_h(op)); }

#define TRACE_OR_FORWARD(E, COMM, ...)                                 \
    if (!op_mpi_tracing(OMNIPROF_MPI_##E)) return real_(__VA_ARGS__);  \
    op_mpi_call c;                                                     \
    op_mpi_begin(&c, OMNIPROF_MPI_##E, op_mpi_h(COMM))

#define CALL_AND_END(...)              \
    int rc = real_(__VA_ARGS__);       \
    op_mpi_end(&c, rc);                \
    return rc

typedef int (*barrier_fn)(H);
OMNIPROF_API int MPI_Barrier(H comm)
{
    REAL(MPI_Barrier, barrier_fn);
    bool hooked = op_mpi_waits_hooked();
    if (hooked) { /* the last to arrive wakes the others */
        op_mpi_wake();
        op_mpi_wait_begin();
    }
    int rc;
    if (!op_mpi_tracing(OMNIPROF_MPI_BARRIER)) {
        rc = real_(comm);
    } else {
        op_mpi_call c;
        op_mpi_begin(&c, OMNIPROF_MPI_BARRIER, op_mpi_h(comm));
        rc = real_(comm);
        op_mpi_end(&c, rc);
    }
    if (hooked) op_mpi_wait_end();
    return rc;
}

typedef int (*bcast_fn)(void *, int, H, int, H);
OMNIPROF_API int MPI_Bcast(void *buf, int count, H type, int root, H comm)
{
    REAL(MPI_Bcast, bcast_fn);
    TRACE_OR_FORWARD(BCAST, comm, buf, count, type, root, comm);
    set_root(&c, root);
    uint64_t b = op_mpi_set_type(&c, type, count);
    if (is_root(&c, root)) c.rec.bytes_sent = b;
    else c.rec.bytes_received = b;
    CALL_AND_END(buf, count, type, root, comm);
}

typedef int (*reduce_fn)(const void *, void *, int, H, H, int, H);
OMNIPROF_API int MPI_Reduce(const void *sbuf, void *rbuf, int count, H type, H op, int root, H comm)
{
    REAL(MPI_Reduce, reduce_fn);
    TRACE_OR_FORWARD(REDUCE, comm, sbuf, rbuf, count, type, op, root, comm);
    set_root(&c, root);
    set_op(&c, op);
    uint64_t b = op_mpi_set_type(&c, type, count);
    c.rec.bytes_sent = b;
    if (is_root(&c, root)) c.rec.bytes_received = b;
    CALL_AND_END(sbuf, rbuf, count, type, op, root, comm);
}

typedef int (*allreduce_fn)(const void *, void *, int, H, H, H);
#define ALLREDUCE_LIKE(NAME, E)                                                           \
    OMNIPROF_API int NAME(const void *sbuf, void *rbuf, int count, H type, H op, H comm) \
    {                                                                                     \
        REAL(NAME, allreduce_fn);                                                         \
        TRACE_OR_FORWARD(E, comm, sbuf, rbuf, count, type, op, comm);                     \
        set_op(&c, op);                                                                   \
        c.rec.bytes_sent = c.rec.bytes_received = op_mpi_set_type(&c, type, count);       \
        CALL_AND_END(sbuf, rbuf, count, type, op, comm);                                  \
    }
ALLREDUCE_LIKE(MPI_Allreduce, ALLREDUCE)
ALLREDUCE_LIKE(MPI_Scan, SCAN)
ALLREDUCE_LIKE(MPI_Exscan, EXSCAN)

typedef int (*gather_fn)(const void *, int, H, void *, int, H, int, H);
OMNIPROF_API int MPI_Gather(const void *sbuf, int scount, H stype, void *rbuf, int rcount, H rtype, int root, H comm)
{
    REAL(MPI_Gather, gather_fn);
    TRACE_OR_FORWARD(GATHER, comm, sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
    set_root(&c, root);
    bool place = in_place(sbuf);
    c.rec.bytes_sent = place ? 0 : op_mpi_set_type(&c, stype, scount);
    if (is_root(&c, root)) {
        c.rec.bytes_received = bytes_of(rtype, (int64_t)rcount * c.rec.comm_size);
        if (place) op_mpi_set_type(&c, rtype, rcount);
    }
    CALL_AND_END(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
}

typedef int (*gatherv_fn)(const void *, int, H, void *, const int *, const int *, H, int, H);
OMNIPROF_API int MPI_Gatherv(const void *sbuf, int scount, H stype, void *rbuf, const int *rcounts, const int *displs,
                             H rtype, int root, H comm)
{
    REAL(MPI_Gatherv, gatherv_fn);
    TRACE_OR_FORWARD(GATHERV, comm, sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm);
    set_root(&c, root);
    c.rec.bytes_sent = in_place(sbuf) ? 0 : op_mpi_set_type(&c, stype, scount);
    if (is_root(&c, root)) c.rec.bytes_received = bytes_of(rtype, sum(rcounts, c.rec.comm_size));
    CALL_AND_END(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm);
}

OMNIPROF_API int MPI_Scatter(const void *sbuf, int scount, H stype, void *rbuf, int rcount, H rtype, int root, H comm)
{
    REAL(MPI_Scatter, gather_fn);
    TRACE_OR_FORWARD(SCATTER, comm, sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
    set_root(&c, root);
    bool root_here = is_root(&c, root);
    if (root_here) c.rec.bytes_sent = bytes_of(stype, (int64_t)scount * c.rec.comm_size);
    c.rec.bytes_received = root_here && in_place(rbuf) ? 0 : op_mpi_set_type(&c, rtype, rcount);
    CALL_AND_END(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
}

typedef int (*scatterv_fn)(const void *, const int *, const int *, H, void *, int, H, int, H);
OMNIPROF_API int MPI_Scatterv(const void *sbuf, const int *scounts, const int *displs, H stype, void *rbuf, int rcount,
                              H rtype, int root, H comm)
{
    REAL(MPI_Scatterv, scatterv_fn);
    TRACE_OR_FORWARD(SCATTERV, comm, sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm);
    set_root(&c, root);
    bool root_here = is_root(&c, root);
    if (root_here) c.rec.bytes_sent = bytes_of(stype, sum(scounts, c.rec.comm_size));
    c.rec.bytes_received = root_here && in_place(rbuf) ? 0 : op_mpi_set_type(&c, rtype, rcount);
    CALL_AND_END(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm);
}

typedef int (*allgather_fn)(const void *, int, H, void *, int, H, H);
OMNIPROF_API int MPI_Allgather(const void *sbuf, int scount, H stype, void *rbuf, int rcount, H rtype, H comm)
{
    REAL(MPI_Allgather, allgather_fn);
    TRACE_OR_FORWARD(ALLGATHER, comm, sbuf, scount, stype, rbuf, rcount, rtype, comm);
    c.rec.bytes_sent = in_place(sbuf) ? bytes_of(rtype, rcount) : op_mpi_set_type(&c, stype, scount);
    if (in_place(sbuf)) op_mpi_set_type(&c, rtype, rcount);
    c.rec.bytes_received = bytes_of(rtype, (int64_t)rcount * c.rec.comm_size);
    CALL_AND_END(sbuf, scount, stype, rbuf, rcount, rtype, comm);
}

OMNIPROF_API int MPI_Alltoall(const void *sbuf, int scount, H stype, void *rbuf, int rcount, H rtype, H comm)
{
    REAL(MPI_Alltoall, allgather_fn);
    TRACE_OR_FORWARD(ALLTOALL, comm, sbuf, scount, stype, rbuf, rcount, rtype, comm);
    bool place = in_place(sbuf);
    op_mpi_set_type(&c, place ? rtype : stype, place ? rcount : scount);
    c.rec.bytes_sent = place ? bytes_of(rtype, (int64_t)rcount * c.rec.comm_size)
                             : bytes_of(stype, (int64_t)scount * c.rec.comm_size);
    c.rec.bytes_received = bytes_of(rtype, (int64_t)rcount * c.rec.comm_size);
    CALL_AND_END(sbuf, scount, stype, rbuf, rcount, rtype, comm);
}

typedef int (*allgatherv_fn)(const void *, int, H, void *, const int *, const int *, H, H);
OMNIPROF_API int MPI_Allgatherv(const void *sbuf, int scount, H stype, void *rbuf, const int *rcounts,
                                const int *displs, H rtype, H comm)
{
    REAL(MPI_Allgatherv, allgatherv_fn);
    TRACE_OR_FORWARD(ALLGATHERV, comm, sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm);
    bool place = in_place(sbuf);
    if (place) op_mpi_set_type(&c, rtype, c.rec.comm_rank >= 0 && rcounts ? rcounts[c.rec.comm_rank] : 0);
    c.rec.bytes_sent = place ? bytes_of(rtype, c.rec.count) : op_mpi_set_type(&c, stype, scount);
    c.rec.bytes_received = bytes_of(rtype, sum(rcounts, c.rec.comm_size));
    CALL_AND_END(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm);
}

typedef int (*alltoallv_fn)(const void *, const int *, const int *, H, void *, const int *, const int *, H, H);
OMNIPROF_API int MPI_Alltoallv(const void *sbuf, const int *scounts, const int *sdispls, H stype, void *rbuf,
                               const int *rcounts, const int *rdispls, H rtype, H comm)
{
    REAL(MPI_Alltoallv, alltoallv_fn);
    TRACE_OR_FORWARD(ALLTOALLV, comm, sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm);
    bool place = in_place(sbuf);
    int64_t rs = sum(rcounts, c.rec.comm_size);
    op_mpi_set_type(&c, place ? rtype : stype, place ? rs : sum(scounts, c.rec.comm_size));
    c.rec.bytes_sent = place ? bytes_of(rtype, rs) : bytes_of(stype, c.rec.count);
    c.rec.bytes_received = bytes_of(rtype, rs);
    CALL_AND_END(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm);
}

typedef int (*reduce_scatter_fn)(const void *, void *, const int *, H, H, H);
OMNIPROF_API int MPI_Reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, H type, H op, H comm)
{
    REAL(MPI_Reduce_scatter, reduce_scatter_fn);
    TRACE_OR_FORWARD(REDUCE_SCATTER, comm, sbuf, rbuf, rcounts, type, op, comm);
    set_op(&c, op);
    c.rec.bytes_sent = op_mpi_set_type(&c, type, sum(rcounts, c.rec.comm_size));
    if (c.rec.comm_rank >= 0 && rcounts) c.rec.bytes_received = bytes_of(type, rcounts[c.rec.comm_rank]);
    CALL_AND_END(sbuf, rbuf, rcounts, type, op, comm);
}

typedef int (*reduce_scatter_block_fn)(const void *, void *, int, H, H, H);
OMNIPROF_API int MPI_Reduce_scatter_block(const void *sbuf, void *rbuf, int rcount, H type, H op, H comm)
{
    REAL(MPI_Reduce_scatter_block, reduce_scatter_block_fn);
    TRACE_OR_FORWARD(REDUCE_SCATTER_BLOCK, comm, sbuf, rbuf, rcount, type, op, comm);
    set_op(&c, op);
    c.rec.bytes_received = op_mpi_set_type(&c, type, rcount);
    c.rec.bytes_sent = bytes_of(type, (int64_t)rcount * c.rec.comm_size);
    CALL_AND_END(sbuf, rbuf, rcount, type, op, comm);
}

/* ---- nonblocking collectives: their request ends in a wait or test ---------------------------- */

#define POST_AND_END(REQ, ...)                        \
    int rc = real_(__VA_ARGS__);                      \
    if (rc == 0) op_mpi_posted(&c, REQ, false, 0);    \
    op_mpi_end(&c, rc);                               \
    return rc

typedef int (*ibarrier_fn)(H, H *);
OMNIPROF_API int MPI_Ibarrier(H comm, H *req)
{
    REAL(MPI_Ibarrier, ibarrier_fn);
    TRACE_OR_FORWARD(IBARRIER, comm, comm, req);
    POST_AND_END(req, comm, req);
}

typedef int (*ibcast_fn)(void *, int, H, int, H, H *);
OMNIPROF_API int MPI_Ibcast(void *buf, int count, H type, int root, H comm, H *req)
{
    REAL(MPI_Ibcast, ibcast_fn);
    TRACE_OR_FORWARD(IBCAST, comm, buf, count, type, root, comm, req);
    set_root(&c, root);
    uint64_t b = op_mpi_set_type(&c, type, count);
    if (is_root(&c, root)) c.rec.bytes_sent = b;
    else c.rec.bytes_received = b;
    POST_AND_END(req, buf, count, type, root, comm, req);
}

typedef int (*ireduce_fn)(const void *, void *, int, H, H, int, H, H *);
OMNIPROF_API int MPI_Ireduce(const void *sbuf, void *rbuf, int count, H type, H op, int root, H comm, H *req)
{
    REAL(MPI_Ireduce, ireduce_fn);
    TRACE_OR_FORWARD(IREDUCE, comm, sbuf, rbuf, count, type, op, root, comm, req);
    set_root(&c, root);
    set_op(&c, op);
    uint64_t b = op_mpi_set_type(&c, type, count);
    c.rec.bytes_sent = b;
    if (is_root(&c, root)) c.rec.bytes_received = b;
    POST_AND_END(req, sbuf, rbuf, count, type, op, root, comm, req);
}

typedef int (*iallreduce_fn)(const void *, void *, int, H, H, H, H *);
OMNIPROF_API int MPI_Iallreduce(const void *sbuf, void *rbuf, int count, H type, H op, H comm, H *req)
{
    REAL(MPI_Iallreduce, iallreduce_fn);
    TRACE_OR_FORWARD(IALLREDUCE, comm, sbuf, rbuf, count, type, op, comm, req);
    set_op(&c, op);
    c.rec.bytes_sent = c.rec.bytes_received = op_mpi_set_type(&c, type, count);
    POST_AND_END(req, sbuf, rbuf, count, type, op, comm, req);
}

typedef int (*iallgather_fn)(const void *, int, H, void *, int, H, H, H *);
OMNIPROF_API int MPI_Iallgather(const void *sbuf, int scount, H stype, void *rbuf, int rcount, H rtype, H comm, H *req)
{
    REAL(MPI_Iallgather, iallgather_fn);
    TRACE_OR_FORWARD(IALLGATHER, comm, sbuf, scount, stype, rbuf, rcount, rtype, comm, req);
    c.rec.bytes_sent = in_place(sbuf) ? bytes_of(rtype, rcount) : op_mpi_set_type(&c, stype, scount);
    c.rec.bytes_received = bytes_of(rtype, (int64_t)rcount * c.rec.comm_size);
    POST_AND_END(req, sbuf, scount, stype, rbuf, rcount, rtype, comm, req);
}

OMNIPROF_API int MPI_Ialltoall(const void *sbuf, int scount, H stype, void *rbuf, int rcount, H rtype, H comm, H *req)
{
    REAL(MPI_Ialltoall, iallgather_fn);
    TRACE_OR_FORWARD(IALLTOALL, comm, sbuf, scount, stype, rbuf, rcount, rtype, comm, req);
    bool place = in_place(sbuf);
    op_mpi_set_type(&c, place ? rtype : stype, place ? rcount : scount);
    c.rec.bytes_sent = place ? bytes_of(rtype, (int64_t)rcount * c.rec.comm_size)
                             : bytes_of(stype, (int64_t)scount * c.rec.comm_size);
    c.rec.bytes_received = bytes_of(rtype, (int64_t)rcount * c.rec.comm_size);
    POST_AND_END(req, sbuf, scount, stype, rbuf, rcount, rtype, comm, req);
}
