/* ingest_comm.c — communication records → rows (docs/database.md, docs/multinode.md):
 *   MPI_API, NCCL_API  a call: rocpd_event (category = the kind) + rocpd_region named by the
 *                      function (through op_db_insert_region_or_sample, like every API call) +
 *                      one omniprof_comm row with what it moved; a request completion (phase
 *                      COMPLETE): rocpd_event + omniprof_comm row, no region (it is part of the
 *                      wait or test that completed it, its event's parent). MPI_Init and
 *                      MPI_Init_thread also set the process's rank and size in its extdata (the
 *                      launcher's variables may not have told them).
 *   CLOCK_SYNC         one omniprof_clock row.
 * Names and classes come from the operation lists of omniprof/comm.h, so the rows read the same
 * whatever tool wrote them. */
#include "db/writer_internal.h"
#include "omniprof/comm.h"

static const char *const k_class[OMNIPROF_COMM_CLASS_LAST] = {
    [OMNIPROF_COMM_CLASS_NONE] = "other",      [OMNIPROF_COMM_CLASS_SETUP] = "setup",
    [OMNIPROF_COMM_CLASS_SEND] = "send",       [OMNIPROF_COMM_CLASS_RECV] = "recv",
    [OMNIPROF_COMM_CLASS_SENDRECV] = "sendrecv", [OMNIPROF_COMM_CLASS_COLLECTIVE] = "collective",
    [OMNIPROF_COMM_CLASS_WAIT] = "wait",       [OMNIPROF_COMM_CLASS_RMA] = "rma",
    [OMNIPROF_COMM_CLASS_COMM] = "comm",       [OMNIPROF_COMM_CLASS_GROUP] = "group",
};

typedef struct op_row {
    const char *name;
    int cls;
} op_row;

static const op_row k_mpi[OMNIPROF_MPI_LAST] = {
#define ROW(E, NAME, CLASS) [OMNIPROF_MPI_##E] = {NAME, OMNIPROF_COMM_CLASS_##CLASS},
    OMNIPROF_MPI_OPERATIONS(ROW)
#undef ROW
};
static const op_row k_nccl[OMNIPROF_NCCL_LAST] = {
#define ROW(E, NAME, CLASS) [OMNIPROF_NCCL_##E] = {NAME, OMNIPROF_COMM_CLASS_##CLASS},
    OMNIPROF_NCCL_OPERATIONS(ROW)
#undef ROW
};

static const op_row *operation_row(uint32_t kind, int32_t op)
{
    if (kind == OMNIPROF_BUFFER_TRACING_MPI_API && op > 0 && op < OMNIPROF_MPI_LAST) return &k_mpi[op];
    if (kind == OMNIPROF_BUFFER_TRACING_NCCL_API && op > 0 && op < OMNIPROF_NCCL_LAST) return &k_nccl[op];
    return NULL;
}

static void bind_rank(sqlite3_stmt *s, int i, int32_t v)
{
    if (v == OMNIPROF_COMM_RANK_NONE) sqlite3_bind_null(s, i);
    else sqlite3_bind_int(s, i, v);
}

static void bind_tag(sqlite3_stmt *s, int i, int32_t v)
{
    if (v == OMNIPROF_COMM_TAG_NONE) sqlite3_bind_null(s, i);
    else sqlite3_bind_int(s, i, v);
}

static void bind_u64_or_null(sqlite3_stmt *s, int i, uint64_t v)
{
    if (v == 0) sqlite3_bind_null(s, i);
    else sqlite3_bind_int64(s, i, (int64_t)v);
}

int op_db_ingest_comm(op_db_writer *w, const omniprof_comm_record_t *r, uint64_t psize)
{
    (void)psize;
    const op_row *row = operation_row(r->kind, r->operation);
    char fallback[48];
    if (!row) snprintf(fallback, sizeof fallback, "%s_%d", r->kind == OMNIPROF_BUFFER_TRACING_NCCL_API ? "NCCL" : "MPI",
                       (int)r->operation);
    int64_t thread = op_db_thread_row(w, r->thread_id);
    if (thread < 0) return -1;
    int64_t ev = op_db_insert_event(w, r->kind, r->correlation_id.internal, r->correlation_id.ancestor,
                                    r->correlation_id.external.value, NULL, 0);
    if (ev < 0) return -1;
    bool complete = r->phase == OMNIPROF_COMM_PHASE_COMPLETE;
    if (!complete) {
        int64_t name = op_db_op_name_id(w, r->kind, r->operation);
        if (name < 0) return -1;
        if (op_db_insert_region_or_sample(w, r->kind, thread, r->start_timestamp, r->end_timestamp, name, ev) != 0)
            return -1;
    }
    const char *datatype = op_db_str(w, &r->datatype), *reduce_op = op_db_str(w, &r->reduce_op);
    sqlite3_stmt *s = w->st[ST_OP_COMM];
    int i = 1;
    sqlite3_bind_int64(s, i++, thread);
    sqlite3_bind_int64(s, i++, ev);
    sqlite3_bind_text(s, i++, r->kind == OMNIPROF_BUFFER_TRACING_NCCL_API ? "NCCL" : "MPI", -1, SQLITE_STATIC);
    sqlite3_bind_text(s, i++, row ? row->name : fallback, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, i++, k_class[row ? row->cls : 0], -1, SQLITE_STATIC);
    sqlite3_bind_text(s, i++, complete ? "complete" : "call", -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, i++, (int64_t)r->start_timestamp);
    sqlite3_bind_int64(s, i++, (int64_t)r->end_timestamp);
    bind_rank(s, i++, r->world_rank);
    bind_u64_or_null(s, i++, r->comm);
    bind_rank(s, i++, r->comm_rank);
    if (r->comm_size > 0) sqlite3_bind_int(s, i++, r->comm_size);
    else sqlite3_bind_null(s, i++);
    bind_rank(s, i++, r->dest);
    bind_rank(s, i++, r->source);
    bind_rank(s, i++, r->root);
    bind_tag(s, i++, r->send_tag);
    bind_tag(s, i++, r->recv_tag);
    sqlite3_bind_int64(s, i++, r->count);
    op_db_bind_text(s, i++, datatype, -1, SQLITE_STATIC);
    op_db_bind_text(s, i++, reduce_op, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, i++, (int64_t)r->bytes_sent);
    sqlite3_bind_int64(s, i++, (int64_t)r->bytes_received);
    bind_u64_or_null(s, i++, r->new_comm);
    bind_u64_or_null(s, i++, r->request);
    bind_u64_or_null(s, i++, r->sequence);
    bind_u64_or_null(s, i++, r->stream);
    if (r->device >= 0) sqlite3_bind_int(s, i++, r->device);
    else sqlite3_bind_null(s, i++);
    sqlite3_bind_int(s, i++, r->return_value);
    if (op_db_step(w, ST_OP_COMM, "inserting a communication call") != 0) return -1;
    if (r->kind == OMNIPROF_BUFFER_TRACING_MPI_API && !complete && r->world_rank >= 0 && r->comm_size > 0 &&
        (r->operation == OMNIPROF_MPI_INIT || r->operation == OMNIPROF_MPI_INIT_THREAD)) {
        s = w->st[ST_PROCESS_RANK];
        sqlite3_bind_int(s, 1, r->world_rank);
        sqlite3_bind_int(s, 2, r->comm_size);
        if (op_db_step(w, ST_PROCESS_RANK, "setting the process's rank") != 0) return -1;
    }
    return 0;
}

int op_db_ingest_clock_sync(op_db_writer *w, const omniprof_clock_sync_record_t *r, uint64_t psize)
{
    (void)psize;
    sqlite3_stmt *s = w->st[ST_OP_CLOCK];
    sqlite3_bind_text(s, 1, r->operation == OMNIPROF_CLOCK_SYNC_FINALIZE ? "finalize" : "init", -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 2, r->rank);
    sqlite3_bind_int(s, 3, r->reference_rank);
    sqlite3_bind_int64(s, 4, (int64_t)r->local_timestamp);
    sqlite3_bind_int64(s, 5, r->offset_ns);
    sqlite3_bind_int64(s, 6, (int64_t)r->error_ns);
    sqlite3_bind_int64(s, 7, (int64_t)r->round_trip_ns);
    sqlite3_bind_int(s, 8, (int)r->round_trips);
    return op_db_step(w, ST_OP_CLOCK, "inserting a clock estimate");
}
