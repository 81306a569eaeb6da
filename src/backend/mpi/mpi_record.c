/* mpi_record.c — one traced MPI call: the MPI_API record from begin to end, the completion
 * records of receive requests, and the causal profiler's wait hooks.
 *
 * A call is traced when MPI_API is configured and enabled for its operation, and this thread is
 * not already inside a traced call (an MPI library that calls MPI_* from inside its own
 * functions — ROMIO does — is not traced twice; the outer call covers it). The correlation id is
 * opened before the library's function runs and closed after its record is emitted, so that work
 * the call starts (a CUDA-aware copy) names it as its ancestor, as do the completions that a wait
 * or test reports. */
#include <string.h>
#include <unistd.h>

#include "backend/mpi/mpi_internal.h"
#include "common/clock.h"
#include "common/path_template.h"
#include "omniprof/comm.h"
#include "preload/preload.h"
#include "sdk/backend.h"

__thread int op_comm_depth; /* traced calls open on this thread */
#define t_depth op_comm_depth
static _Atomic uint64_t g_sequence;

uint64_t op_mpi_next_sequence(void) { return atomic_fetch_add_explicit(&g_sequence, 1, memory_order_relaxed) + 1; }

bool op_mpi_tracing(int32_t op)
{
    return atomic_load_explicit(&g_op_mpi_on, memory_order_relaxed) && t_depth == 0 &&
           op_sdk_buffer_enabled(OMNIPROF_BUFFER_TRACING_MPI_API, op) && op_mpi_abi_ready();
}

void op_comm_record_init(omniprof_comm_record_t *r, uint32_t kind, int32_t op)
{
    memset(r, 0, sizeof *r);
    r->size = sizeof *r;
    r->kind = kind;
    r->operation = op;
    r->thread_id = (omniprof_thread_id_t)gettid();
    r->world_rank = kind == OMNIPROF_BUFFER_TRACING_MPI_API ? op_mpi_world_rank_self() : (int32_t)op_path_mpi_rank();
    r->comm_rank = r->dest = r->source = r->root = OMNIPROF_COMM_RANK_NONE;
    r->send_tag = r->recv_tag = OMNIPROF_COMM_TAG_NONE;
    r->device = -1;
}

void op_mpi_begin(op_mpi_call *c, int32_t op, op_mpi_handle comm)
{
    t_depth++;
    c->traced = true;
    c->comm = comm;
    omniprof_comm_record_t *r = &c->rec;
    op_comm_record_init(r, OMNIPROF_BUFFER_TRACING_MPI_API, op);
    if (comm) {
        op_mpi_comm ci = op_mpi_comm_info(comm);
        r->comm = ci.id;
        r->comm_rank = ci.rank;
        r->comm_size = ci.size;
    }
    op_sdk_correlation_begin(&r->correlation_id);
    r->start_timestamp = op_now_ns();
}

void op_mpi_begin_win(op_mpi_call *c, int32_t op, op_mpi_handle win)
{
    op_mpi_begin(c, op, 0);
    op_mpi_comm ci;
    if (op_mpi_win_info(win, &ci)) {
        c->rec.comm = ci.id;
        c->rec.comm_rank = ci.rank;
        c->rec.comm_size = ci.size;
    }
}

void op_mpi_end(op_mpi_call *c, int rc)
{
    omniprof_comm_record_t *r = &c->rec;
    if (!r->end_timestamp) r->end_timestamp = op_now_ns();
    r->return_value = rc;
    op_sdk_emit(OMNIPROF_BUFFER_TRACING_MPI_API, r->operation, r, NULL);
    op_sdk_correlation_end(&r->correlation_id);
    t_depth--;
}

uint64_t op_mpi_set_type(op_mpi_call *c, const void *type, int64_t count)
{
    int size = 0;
    c->rec.datatype = op_mpi_type(op_mpi_h(type), &size);
    c->rec.count = count;
    return count > 0 && size > 0 ? (uint64_t)count * (uint64_t)size : 0;
}

void op_mpi_posted(op_mpi_call *c, const void *req, bool recv, int32_t tag)
{
    if (!req) return;
    op_mpi_request q;
    memset(&q, 0, sizeof q);
    q.sequence = c->rec.sequence;
    q.operation = c->rec.operation;
    q.recv = recv;
    q.comm = c->comm;
    q.comm_id = c->rec.comm;
    q.comm_rank = c->rec.comm_rank;
    q.comm_size = c->rec.comm_size;
    q.tag = tag;
    q.dest = c->rec.dest;
    q.datatype = c->rec.datatype;
    q.count = c->rec.count;
    c->rec.request = op_mpi_request_add(op_mpi_handle_at(req, 0), &q);
}

void op_mpi_completed(op_mpi_call *c, op_mpi_handle handle, const void *status)
{
    op_mpi_request q;
    if (!op_mpi_request_take(handle, &q)) return;
    omniprof_comm_record_t r;
    op_comm_record_init(&r, OMNIPROF_BUFFER_TRACING_MPI_API, q.operation);
    r.phase = OMNIPROF_COMM_PHASE_COMPLETE;
    r.start_timestamp = r.end_timestamp = c->rec.end_timestamp ? c->rec.end_timestamp : op_now_ns();
    r.comm = q.comm_id;
    r.comm_rank = q.comm_rank;
    r.comm_size = q.comm_size;
    r.request = q.id;
    r.sequence = q.sequence;
    r.datatype = q.datatype;
    r.count = q.count;
    if (!q.recv) { /* a send: where it went (its bytes are the posting call's); collectives: none */
        r.dest = q.dest;
        if (q.dest != OMNIPROF_COMM_RANK_NONE) r.send_tag = q.tag;
    } else {
        r.recv_tag = q.tag;
    }
    if (q.recv && status) {
        r.source = op_mpi_world_rank(q.comm, op_mpi_status_source(status));
        r.recv_tag = op_mpi_status_tag(status);
        r.bytes_received = op_mpi_status_bytes(status);
    }
    op_sdk_correlation_begin(&r.correlation_id); /* its ancestor: the wait or test, still open */
    op_sdk_emit(OMNIPROF_BUFFER_TRACING_MPI_API, r.operation, &r, NULL);
    op_sdk_correlation_end(&r.correlation_id);
}

/* ---- causal profiling ------------------------------------------------------------------------- */

bool op_mpi_waits_hooked(void) { return omniprof_preload_waits_hooked(); }
void op_mpi_wait_begin(void) { omniprof_preload_wait_begin(); }
void op_mpi_wait_end(void) { omniprof_preload_wait_end(1, -1); }
void op_mpi_wake(void) { omniprof_preload_wake(); }
