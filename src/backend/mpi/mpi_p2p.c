/* mpi_p2p.c — the point-to-point calls, waits and tests the MPI backend interposes.
 *
 * Every wrapper calls the library's function (op_mpi_pmpi: PMPI_<name>, else the next
 * MPI_<name>) with the caller's arguments and returns its result; handles are passed through as
 * they came. What a record holds (include/omniprof/comm.h):
 *   sends      dest (world rank), send_tag, count and datatype, bytes_sent = count x size;
 *              `sequence` orders the process's point-to-point calls (message matching)
 *   receives   blocking: source and recv_tag as the status tells (the actual sender, also for
 *              MPI_ANY_SOURCE/MPI_ANY_TAG), bytes_received from the status; nonblocking: the
 *              posted source and tag, and when a wait or test completes the request, a
 *              COMPLETE record with the actual source, tag and bytes
 *   waits, tests  the requests' completions (receives only), as above
 * A status the caller ignored (MPI_STATUS(ES)_IGNORE) is replaced by ours when the call is
 * traced: the library fills it, we read it, the caller never sees it. The calls that may block
 * (Recv, Probe, Sendrecv, Wait*, and the collectives' Barrier in mpi_coll.c) also bracket the
 * library call with the preload library's wait hooks, for the causal profiler. */
#include <stdlib.h>
#include <string.h>

#include "backend/mpi/mpi_internal.h"
#include "common/clock.h"
#include "omniprof/comm.h"

typedef void *H; /* an MPI handle (pointer or int) as it arrives */

#define REAL(name, type)                                   \
    static __typeof__(type) real_;                                  \
    if (!real_) real_ = (type)op_mpi_pmpi(#name);          \
    if (!real_) return 1 /* MPI_ERR_OTHER-ish: no MPI library in the process */

/* Run `call` into rc, inside the causal profiler's wait hooks when they are on. */
#define BLOCKING(rc, call)                    \
    do {                                      \
        bool hooked_ = op_mpi_waits_hooked(); \
        if (hooked_) op_mpi_wait_begin();     \
        rc = call;                            \
        if (hooked_) op_mpi_wait_end();       \
    } while (0)

typedef int (*send_fn)(const void *, int, H, int, int, H);
typedef int (*isend_fn)(const void *, int, H, int, int, H, H *);
typedef int (*recv_fn)(void *, int, H, int, int, H, void *);
typedef int (*irecv_fn)(void *, int, H, int, int, H, H *);

static void send_fields(op_mpi_call *c, H type, int count, int dest, int tag)
{
    c->rec.dest = op_mpi_world_rank(c->comm, dest);
    c->rec.send_tag = tag;
    c->rec.bytes_sent = op_mpi_set_type(c, type, count);
    c->rec.sequence = op_mpi_next_sequence();
}

static void recv_status(op_mpi_call *c, const void *status)
{
    c->rec.source = op_mpi_world_rank(c->comm, op_mpi_status_source(status));
    c->rec.recv_tag = op_mpi_status_tag(status);
    c->rec.bytes_received = op_mpi_status_bytes(status);
}

/* The start of a traced MPI_Sendrecv(_replace): the send's fields and the receive's source and tag. */
static void sendrecv_begin(op_mpi_call *c, int op, H comm, H stype, int scount, int dest, int stag, int source, int rtag)
{
    op_mpi_begin(c, op, op_mpi_h(comm));
    send_fields(c, stype, scount, dest, stag);
    c->rec.source = op_mpi_world_rank(c->comm, source);
    c->rec.recv_tag = rtag;
}

#define SEND(NAME, E)                                                                  \
    OMNIPROF_API int NAME(const void *buf, int count, H type, int dest, int tag, H comm) \
    {                                                                                  \
        REAL(NAME, send_fn);                                                           \
        if (!op_mpi_tracing(OMNIPROF_MPI_##E)) return real_(buf, count, type, dest, tag, comm); \
        op_mpi_call c;                                                                 \
        op_mpi_begin(&c, OMNIPROF_MPI_##E, op_mpi_h(comm));                            \
        send_fields(&c, type, count, dest, tag);                                       \
        int rc = real_(buf, count, type, dest, tag, comm);                             \
        op_mpi_end(&c, rc);                                                            \
        return rc;                                                                     \
    }
SEND(MPI_Send, SEND)
SEND(MPI_Ssend, SSEND)
SEND(MPI_Bsend, BSEND)
SEND(MPI_Rsend, RSEND)

#define ISEND(NAME, E)                                                                          \
    OMNIPROF_API int NAME(const void *buf, int count, H type, int dest, int tag, H comm, H *req) \
    {                                                                                           \
        REAL(NAME, isend_fn);                                                                   \
        if (!op_mpi_tracing(OMNIPROF_MPI_##E)) return real_(buf, count, type, dest, tag, comm, req); \
        op_mpi_call c;                                                                          \
        op_mpi_begin(&c, OMNIPROF_MPI_##E, op_mpi_h(comm));                                     \
        send_fields(&c, type, count, dest, tag);                                                \
        int rc = real_(buf, count, type, dest, tag, comm, req);                                 \
        if (rc == 0) op_mpi_posted(&c, req, false, tag);                                        \
        op_mpi_end(&c, rc);                                                                     \
        return rc;                                                                              \
    }
ISEND(MPI_Isend, ISEND)
ISEND(MPI_Issend, ISSEND)
ISEND(MPI_Ibsend, IBSEND)
ISEND(MPI_Irsend, IRSEND)

OMNIPROF_API int MPI_Recv(void *buf, int count, H type, int source, int tag, H comm, void *status)
{
    REAL(MPI_Recv, recv_fn);
    int rc;
    if (!op_mpi_tracing(OMNIPROF_MPI_RECV)) {
        BLOCKING(rc, real_(buf, count, type, source, tag, comm, status));
        return rc;
    }
    op_mpi_call c;
    op_mpi_begin(&c, OMNIPROF_MPI_RECV, op_mpi_h(comm));
    op_mpi_set_type(&c, type, count);
    c.rec.source = op_mpi_world_rank(c.comm, source);
    c.rec.recv_tag = tag;
    c.rec.sequence = op_mpi_next_sequence();
    _Alignas(16) char mine[OP_MPI_STATUS_BYTES];
    void *st = op_mpi_status_ignored(status) ? mine : status;
    BLOCKING(rc, real_(buf, count, type, source, tag, comm, st));
    if (rc == 0) recv_status(&c, st);
    op_mpi_end(&c, rc);
    return rc;
}

OMNIPROF_API int MPI_Irecv(void *buf, int count, H type, int source, int tag, H comm, H *req)
{
    REAL(MPI_Irecv, irecv_fn);
    if (!op_mpi_tracing(OMNIPROF_MPI_IRECV)) return real_(buf, count, type, source, tag, comm, req);
    op_mpi_call c;
    op_mpi_begin(&c, OMNIPROF_MPI_IRECV, op_mpi_h(comm));
    op_mpi_set_type(&c, type, count);
    c.rec.source = op_mpi_world_rank(c.comm, source);
    c.rec.recv_tag = tag;
    c.rec.sequence = op_mpi_next_sequence();
    int rc = real_(buf, count, type, source, tag, comm, req);
    if (rc == 0) op_mpi_posted(&c, req, true, tag);
    op_mpi_end(&c, rc);
    return rc;
}

typedef int (*sendrecv_fn)(const void *, int, H, int, int, void *, int, H, int, int, H, void *);
OMNIPROF_API int MPI_Sendrecv(const void *sbuf, int scount, H stype, int dest, int stag, void *rbuf, int rcount,
                              H rtype, int source, int rtag, H comm, void *status)
{
    REAL(MPI_Sendrecv, sendrecv_fn);
    int rc;
    if (!op_mpi_tracing(OMNIPROF_MPI_SENDRECV)) {
        BLOCKING(rc, real_(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm, status));
        return rc;
    }
    op_mpi_call c;
    sendrecv_begin(&c, OMNIPROF_MPI_SENDRECV, comm, stype, scount, dest, stag, source, rtag);
    _Alignas(16) char mine[OP_MPI_STATUS_BYTES];
    void *st = op_mpi_status_ignored(status) ? mine : status;
    BLOCKING(rc, real_(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm, st));
    if (rc == 0) recv_status(&c, st);
    op_mpi_end(&c, rc);
    return rc;
}

typedef int (*sendrecv_replace_fn)(void *, int, H, int, int, int, int, H, void *);
OMNIPROF_API int MPI_Sendrecv_replace(void *buf, int count, H type, int dest, int stag, int source, int rtag, H comm,
                                      void *status)
{
    REAL(MPI_Sendrecv_replace, sendrecv_replace_fn);
    int rc;
    if (!op_mpi_tracing(OMNIPROF_MPI_SENDRECV_REPLACE)) {
        BLOCKING(rc, real_(buf, count, type, dest, stag, source, rtag, comm, status));
        return rc;
    }
    op_mpi_call c;
    sendrecv_begin(&c, OMNIPROF_MPI_SENDRECV_REPLACE, comm, type, count, dest, stag, source, rtag);
    _Alignas(16) char mine[OP_MPI_STATUS_BYTES];
    void *st = op_mpi_status_ignored(status) ? mine : status;
    BLOCKING(rc, real_(buf, count, type, dest, stag, source, rtag, comm, st));
    if (rc == 0) recv_status(&c, st);
    op_mpi_end(&c, rc);
    return rc;
}

typedef int (*probe_fn)(int, int, H, void *);
OMNIPROF_API int MPI_Probe(int source, int tag, H comm, void *status)
{
    REAL(MPI_Probe, probe_fn);
    int rc;
    if (!op_mpi_tracing(OMNIPROF_MPI_PROBE)) {
        BLOCKING(rc, real_(source, tag, comm, status));
        return rc;
    }
    op_mpi_call c;
    op_mpi_begin(&c, OMNIPROF_MPI_PROBE, op_mpi_h(comm));
    c.rec.source = op_mpi_world_rank(c.comm, source);
    c.rec.recv_tag = tag;
    _Alignas(16) char mine[OP_MPI_STATUS_BYTES];
    void *st = op_mpi_status_ignored(status) ? mine : status;
    BLOCKING(rc, real_(source, tag, comm, st));
    if (rc == 0) { /* what is waiting; nothing is received */
        c.rec.source = op_mpi_world_rank(c.comm, op_mpi_status_source(st));
        c.rec.recv_tag = op_mpi_status_tag(st);
    }
    op_mpi_end(&c, rc);
    return rc;
}

typedef int (*iprobe_fn)(int, int, H, int *, void *);
OMNIPROF_API int MPI_Iprobe(int source, int tag, H comm, int *flag, void *status)
{
    REAL(MPI_Iprobe, iprobe_fn);
    if (!op_mpi_tracing(OMNIPROF_MPI_IPROBE)) return real_(source, tag, comm, flag, status);
    op_mpi_call c;
    op_mpi_begin(&c, OMNIPROF_MPI_IPROBE, op_mpi_h(comm));
    c.rec.source = op_mpi_world_rank(c.comm, source);
    c.rec.recv_tag = tag;
    int rc = real_(source, tag, comm, flag, status);
    op_mpi_end(&c, rc);
    return rc;
}

/* ---- waits and tests -------------------------------------------------------------------------- */

/* The handles of n requests before the call (the library sets completed ones to
 * MPI_REQUEST_NULL), and statuses the caller may have ignored. */
typedef struct req_set {
    op_mpi_handle small[32], *handles;
    char small_st[8 * OP_MPI_STATUS_BYTES], *statuses;
    size_t stride;
    bool own_statuses;
} req_set;

static void req_set_open(req_set *s, int n, const H *reqs, void **statuses)
{
    size_t k = n > 0 ? (size_t)n : 0;
    s->handles = k <= 32 ? s->small : malloc(k * sizeof *s->handles);
    for (size_t i = 0; s->handles && i < k; i++) s->handles[i] = op_mpi_handle_at(reqs, i);
    s->stride = g_op_mpi_abi.status_size;
    s->own_statuses = op_mpi_status_ignored(*statuses);
    if (s->own_statuses) {
        s->statuses = k <= 8 ? s->small_st : malloc(k * OP_MPI_STATUS_BYTES);
        if (s->statuses) *statuses = s->statuses;
        else s->own_statuses = false; /* no memory: the completions go unreported */
    } else {
        s->statuses = *statuses;
    }
}

static void req_set_done(req_set *s, op_mpi_call *c, size_t i)
{
    if (s->handles) op_mpi_completed(c, s->handles[i], s->statuses ? s->statuses + i * s->stride : NULL);
}

static void req_set_close(req_set *s)
{
    if (s->handles != s->small) free(s->handles);
    if (s->own_statuses && s->statuses != s->small_st) free(s->statuses);
}

typedef int (*wait_fn)(H *, void *);
OMNIPROF_API int MPI_Wait(H *req, void *status)
{
    REAL(MPI_Wait, wait_fn);
    int rc;
    if (!op_mpi_tracing(OMNIPROF_MPI_WAIT)) {
        BLOCKING(rc, real_(req, status));
        return rc;
    }
    op_mpi_call c;
    op_mpi_begin(&c, OMNIPROF_MPI_WAIT, 0);
    op_mpi_handle h = req ? op_mpi_handle_at(req, 0) : 0;
    _Alignas(16) char mine[OP_MPI_STATUS_BYTES];
    void *st = op_mpi_status_ignored(status) ? mine : status;
    BLOCKING(rc, real_(req, st));
    c.rec.end_timestamp = op_now_ns();
    if (rc == 0) op_mpi_completed(&c, h, st);
    op_mpi_end(&c, rc);
    return rc;
}

typedef int (*test_fn)(H *, int *, void *);
OMNIPROF_API int MPI_Test(H *req, int *flag, void *status)
{
    REAL(MPI_Test, test_fn);
    if (!op_mpi_tracing(OMNIPROF_MPI_TEST)) return real_(req, flag, status);
    op_mpi_call c;
    op_mpi_begin(&c, OMNIPROF_MPI_TEST, 0);
    op_mpi_handle h = req ? op_mpi_handle_at(req, 0) : 0;
    _Alignas(16) char mine[OP_MPI_STATUS_BYTES];
    void *st = op_mpi_status_ignored(status) ? mine : status;
    int rc = real_(req, flag, st);
    c.rec.end_timestamp = op_now_ns();
    if (rc == 0 && flag && *flag) op_mpi_completed(&c, h, st);
    op_mpi_end(&c, rc);
    return rc;
}

typedef int (*waitall_fn)(int, H *, void *);
static int all(int32_t op, waitall_fn real, int n, H *reqs, void *statuses, bool blocking)
{
    op_mpi_call c;
    op_mpi_begin(&c, op, 0);
    req_set s;
    req_set_open(&s, n, reqs, &statuses);
    int rc;
    if (blocking) BLOCKING(rc, real(n, reqs, statuses));
    else rc = real(n, reqs, statuses);
    c.rec.end_timestamp = op_now_ns();
    for (int i = 0; rc == 0 && i < n; i++) req_set_done(&s, &c, (size_t)i);
    req_set_close(&s);
    op_mpi_end(&c, rc);
    return rc;
}

OMNIPROF_API int MPI_Waitall(int n, H *reqs, void *statuses)
{
    REAL(MPI_Waitall, waitall_fn);
    int rc;
    if (!op_mpi_tracing(OMNIPROF_MPI_WAITALL)) {
        BLOCKING(rc, real_(n, reqs, statuses));
        return rc;
    }
    return all(OMNIPROF_MPI_WAITALL, real_, n, reqs, statuses, true);
}

typedef int (*testall_fn)(int, H *, int *, void *);
OMNIPROF_API int MPI_Testall(int n, H *reqs, int *flag, void *statuses)
{
    REAL(MPI_Testall, testall_fn);
    if (!op_mpi_tracing(OMNIPROF_MPI_TESTALL)) return real_(n, reqs, flag, statuses);
    op_mpi_call c;
    op_mpi_begin(&c, OMNIPROF_MPI_TESTALL, 0);
    req_set s;
    req_set_open(&s, n, reqs, &statuses);
    int rc = real_(n, reqs, flag, statuses);
    c.rec.end_timestamp = op_now_ns();
    for (int i = 0; rc == 0 && flag && *flag && i < n; i++) req_set_done(&s, &c, (size_t)i);
    req_set_close(&s);
    op_mpi_end(&c, rc);
    return rc;
}

typedef int (*waitany_fn)(int, H *, int *, void *);
OMNIPROF_API int MPI_Waitany(int n, H *reqs, int *index, void *status)
{
    REAL(MPI_Waitany, waitany_fn);
    int rc;
    if (!op_mpi_tracing(OMNIPROF_MPI_WAITANY)) {
        BLOCKING(rc, real_(n, reqs, index, status));
        return rc;
    }
    op_mpi_call c;
    op_mpi_begin(&c, OMNIPROF_MPI_WAITANY, 0);
    req_set s;
    req_set_open(&s, n, reqs, &status);
    BLOCKING(rc, real_(n, reqs, index, status));
    c.rec.end_timestamp = op_now_ns();
    if (rc == 0 && index && *index >= 0 && *index < n && *index != g_op_mpi_abi.undefined && s.handles)
        op_mpi_completed(&c, s.handles[*index], s.statuses);
    req_set_close(&s);
    op_mpi_end(&c, rc);
    return rc;
}

typedef int (*testany_fn)(int, H *, int *, int *, void *);
OMNIPROF_API int MPI_Testany(int n, H *reqs, int *index, int *flag, void *status)
{
    REAL(MPI_Testany, testany_fn);
    if (!op_mpi_tracing(OMNIPROF_MPI_TESTANY)) return real_(n, reqs, index, flag, status);
    op_mpi_call c;
    op_mpi_begin(&c, OMNIPROF_MPI_TESTANY, 0);
    req_set s;
    req_set_open(&s, n, reqs, &status);
    int rc = real_(n, reqs, index, flag, status);
    c.rec.end_timestamp = op_now_ns();
    if (rc == 0 && flag && *flag && index && *index >= 0 && *index < n && s.handles)
        op_mpi_completed(&c, s.handles[*index], s.statuses);
    req_set_close(&s);
    op_mpi_end(&c, rc);
    return rc;
}

typedef int (*some_fn)(int, H *, int *, int *, void *);
static int some(int32_t op, some_fn real, int n, H *reqs, int *outcount, int *indices, void *statuses, bool blocking)
{
    op_mpi_call c;
    op_mpi_begin(&c, op, 0);
    req_set s;
    req_set_open(&s, n, reqs, &statuses);
    int rc;
    if (blocking) BLOCKING(rc, real(n, reqs, outcount, indices, statuses));
    else rc = real(n, reqs, outcount, indices, statuses);
    c.rec.end_timestamp = op_now_ns();
    for (int k = 0; rc == 0 && outcount && *outcount != g_op_mpi_abi.undefined && k < *outcount; k++)
        if (indices[k] >= 0 && indices[k] < n && s.handles)
            op_mpi_completed(&c, s.handles[indices[k]], s.statuses ? s.statuses + (size_t)k * s.stride : NULL);
    req_set_close(&s);
    op_mpi_end(&c, rc);
    return rc;
}

OMNIPROF_API int MPI_Waitsome(int n, H *reqs, int *outcount, int *indices, void *statuses)
{
    REAL(MPI_Waitsome, some_fn);
    int rc;
    if (!op_mpi_tracing(OMNIPROF_MPI_WAITSOME)) {
        BLOCKING(rc, real_(n, reqs, outcount, indices, statuses));
        return rc;
    }
    return some(OMNIPROF_MPI_WAITSOME, real_, n, reqs, outcount, indices, statuses, true);
}

OMNIPROF_API int MPI_Testsome(int n, H *reqs, int *outcount, int *indices, void *statuses)
{
    REAL(MPI_Testsome, some_fn);
    if (!op_mpi_tracing(OMNIPROF_MPI_TESTSOME)) return real_(n, reqs, outcount, indices, statuses);
    return some(OMNIPROF_MPI_TESTSOME, real_, n, reqs, outcount, indices, statuses, false);
}
