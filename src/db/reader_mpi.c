/* reader_mpi.c — MPI messages as flows (OP_RD_FLOWS on regions, reader.h): the keys of the
 * point-to-point messages each MPI_API region sends or receives, so that a trace can join the
 * send call on the sender's track to the receive on the receiver's.
 *
 * A message is keyed by (sender, receiver, communicator, tag, k) — world ranks, the communicator
 * id every member records alike, and k: it is the k-th message the sender sent the receiver on
 * that communicator with that tag, which by MPI's non-overtaking rule is the k-th receive the
 * receiver completed for it — the rule of the view mpi_messages (omniprof_views.sql), computed
 * here from one process's rows alone: each side finds the key by itself, so the databases of the
 * ranks need not be read together (several rank databases or one merged file give the same keys).
 * The sending region is the send call's (MPI_Send, Isend, Sendrecv, ...); the receiving region is
 * the receive call's (MPI_Recv, Sendrecv) or, for a nonblocking receive, the wait or test that
 * completed it (the 'complete' row's event's parent).
 *
 * Per set and connection one TEMP table op_fm<suffix> (event id of the region -> "o|i sender
 * receiver comm tag k"), made once with an index on the event; regions read their keys with
 * group_concat over it (a Waitall completes several receives).
 *
 * op_rd_msg_pairs: the ends that wait for their other end, in a private temporary database
 * (table m: id -> the end, or 'done' once paired), for writers that write a pair or nothing. */
#include <stdlib.h>
#include <string.h>

#include "common/u64map.h"
#include "db/reader_internal.h"

int op_rd_mpi_flows_possible(const op_src_set *set) {
    return SRC_HAS(set, T_OP_COMM) && SRC_HAS(set, T_EVENT) && SRC_HAS(set, T_REGION);
}

int op_rd_mpi_flow_table(op_src *src, op_src_set *set, char *err, size_t errlen) {
    if (set->mpi_flows_built) return 0;
    const char *sx = set->suffix, *C = set->name[T_OP_COMM], *E = set->name[T_EVENT];
    op_buf b = {0};
    op_buf_printf(&b, "CREATE TEMP TABLE \"op_fm%s\" (event INTEGER, spec TEXT);", sx);
    op_buf_printf(&b,
                  "INSERT INTO \"op_fm%s\" SELECT event_id, 'o ' || rank || ' ' || dest || ' ' || comm || ' ' || "
                  "send_tag || ' ' || row_number() OVER (PARTITION BY rank, dest, comm, send_tag ORDER BY sequence) "
                  "FROM %s WHERE api = 'MPI' AND phase = 'call' AND class IN ('send', 'sendrecv') AND dest >= 0 "
                  "AND rank >= 0;",
                  sx, C);
    op_buf_printf(&b,
                  "INSERT INTO \"op_fm%s\" SELECT CASE WHEN R.phase = 'complete' THEN (SELECT W.event_id FROM %s W "
                  "JOIN %s WE ON WE.id = W.event_id WHERE WE.stack_id = RE.parent_stack_id AND W.pid = R.pid AND "
                  "W.phase = 'call' LIMIT 1) ELSE R.event_id END, 'i ' || R.source || ' ' || R.rank || ' ' || "
                  "R.comm || ' ' || R.recv_tag || ' ' || row_number() OVER (PARTITION BY R.rank, R.source, R.comm, "
                  "R.recv_tag ORDER BY R.sequence) FROM %s R LEFT JOIN %s RE ON RE.id = R.event_id "
                  "WHERE R.api = 'MPI' AND R.source >= 0 AND R.rank >= 0 AND ((R.phase = 'call' AND R.name IN "
                  "('MPI_Recv', 'MPI_Sendrecv', 'MPI_Sendrecv_replace')) OR R.phase = 'complete');",
                  sx, C, E, C, E);
    op_buf_printf(&b, "CREATE INDEX \"op_fm%s_event\" ON \"op_fm%s\" (event);", sx, sx);
    int rc = op_src_exec_temp(src, &b, "reading the MPI messages", err, errlen);
    if (!rc) set->mpi_flows_built = 1;
    return rc;
}

void op_rd_mpi_flow_column(op_buf *b, const op_src_set *set) {
    op_buf_printf(b, ", (SELECT group_concat(FM.spec, ';') FROM temp.\"op_fm%s\" FM WHERE FM.event = X.event_id) ",
                  set->suffix);
}

const unsigned char *op_rd_mpi_flow_next(const unsigned char *p, const unsigned char *end, int *out,
                                         uint64_t *id) {
    while (p && p < end) {
        int dir = *p;
        long long v[5];
        const unsigned char *q = p + 1;
        int ok = dir == 'o' || dir == 'i';
        for (int i = 0; ok && i < 5; i++) {
            char *e;
            while (q < end && *q == ' ') q++;
            v[i] = strtoll((const char *)q, &e, 10);
            ok = e != (const char *)q && (const unsigned char *)e <= end;
            q = (const unsigned char *)e;
        }
        while (q < end && *q != ';') q++;
        p = q < end ? q + 1 : end;
        if (!ok) continue;
        *out = dir == 'o';
        *id = op_hash64x3(op_hash64x3(op_hash64x3(0x4d5049ull, (uint64_t)v[0], (uint64_t)v[1]), (uint64_t)v[2],
                                      (uint64_t)v[3]),
                          (uint64_t)v[4], 17);
        return p;
    }
    return NULL;
}

struct op_rd_msg_pairs {
    sqlite3 *db;
    sqlite3_stmt *get, *put, *done;
};

void op_rd_msg_pairs_free(op_rd_msg_pairs *m) {
    if (!m) return;
    sqlite3_finalize(m->get);
    sqlite3_finalize(m->put);
    sqlite3_finalize(m->done);
    sqlite3_close(m->db);
    free(m);
}

op_rd_msg_pairs *op_rd_msg_pairs_new(char *err, size_t errlen) {
    op_rd_msg_pairs *m = calloc(1, sizeof *m);
    if (!m) {
        op_seterr(err, errlen, "out of memory");
        return NULL;
    }
    /* "": a private database in a temporary file that SQLite deletes on close */
    if (sqlite3_open_v2("", &m->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) ||
        sqlite3_exec(m->db,
                     "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-4096; "
                     "CREATE TABLE m (id INTEGER PRIMARY KEY, out INTEGER, pid INTEGER, tid INTEGER, ts INTEGER); "
                     "BEGIN;", /* one transaction, never committed: no write per end */
                     NULL, NULL, NULL) ||
        sqlite3_prepare_v2(m->db, "SELECT out, pid, tid, ts FROM m WHERE id = ?", -1, &m->get, NULL) ||
        sqlite3_prepare_v2(m->db, "INSERT INTO m VALUES (?, ?, ?, ?, ?)", -1, &m->put, NULL) ||
        sqlite3_prepare_v2(m->db, "UPDATE m SET out = 2 WHERE id = ?", -1, &m->done, NULL)) {
        op_seterr(err, errlen, "pairing the MPI messages: %s", m->db ? sqlite3_errmsg(m->db) : "out of memory");
        op_rd_msg_pairs_free(m);
        return NULL;
    }
    return m;
}

int op_rd_msg_pairs_add(op_rd_msg_pairs *m, uint64_t id, int out, const op_rd_msg_end *end, op_rd_msg_end *other,
                        char *err, size_t errlen) {
    int rc, found = 0, got_out = 0;
    sqlite3_bind_int64(m->get, 1, (sqlite3_int64)id);
    if ((rc = sqlite3_step(m->get)) == SQLITE_ROW) {
        found = 1;
        got_out = sqlite3_column_int(m->get, 0);
        other->pid = sqlite3_column_int64(m->get, 1);
        other->tid = sqlite3_column_int64(m->get, 2);
        other->ts = sqlite3_column_int64(m->get, 3);
    }
    sqlite3_reset(m->get);
    if (rc == SQLITE_ROW || rc == SQLITE_DONE) {
        if (found && got_out == !out) { /* the other end waits: the message is done */
            sqlite3_bind_int64(m->done, 1, (sqlite3_int64)id);
            rc = sqlite3_step(m->done);
            sqlite3_reset(m->done);
            if (rc == SQLITE_DONE) return 1;
        } else if (found) {
            return 0; /* done already, or this end twice */
        } else {
            sqlite3_int64 v[5] = {(sqlite3_int64)id, out != 0, end->pid, end->tid, end->ts};
            for (int i = 0; i < 5; i++) sqlite3_bind_int64(m->put, i + 1, v[i]);
            rc = sqlite3_step(m->put);
            sqlite3_reset(m->put);
            if (rc == SQLITE_DONE) return 0;
        }
    }
    op_seterr(err, errlen, "pairing the MPI messages: %s", sqlite3_errmsg(m->db));
    return -1;
}

/* ---- MPI calls for writers that encode communication (OTF2) ------------------------------- */

typedef struct mpi_ops_ctx {
    op_rd_cb cb;
} mpi_ops_ctx;

static int64_t col_or(sqlite3_stmt *st, int i, int64_t none)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? none : sqlite3_column_int64(st, i);
}

static int mpi_op_row(sqlite3_stmt *st, void *arg)
{
    mpi_ops_ctx *c = arg;
    op_mpi_op o;
    o.thread_row = op_rd_own_id(c->cb.set, T_THREAD, col_or(st, 0, 0));
    o.stack = col_or(st, 1, 0);
    o.parent = col_or(st, 2, 0);
    o.name = (const char *)sqlite3_column_text(st, 3);
    o.klass = (const char *)sqlite3_column_text(st, 4);
    const char *phase = (const char *)sqlite3_column_text(st, 5);
    o.complete = phase && !strcmp(phase, "complete");
    if (!o.name) o.name = "";
    if (!o.klass) o.klass = "";
    o.start = col_or(st, 6, 0);
    o.end = col_or(st, 7, 0);
    o.rank = col_or(st, 8, -1);
    o.comm = col_or(st, 9, -1);
    o.comm_rank = col_or(st, 10, -1);
    o.comm_size = col_or(st, 11, -1);
    o.dest = col_or(st, 12, -1);
    o.source = col_or(st, 13, -1);
    o.root = col_or(st, 14, -1);
    o.send_tag = col_or(st, 15, INT64_MIN);
    o.recv_tag = col_or(st, 16, INT64_MIN);
    o.bytes_sent = col_or(st, 17, 0);
    o.bytes_received = col_or(st, 18, 0);
    o.request = col_or(st, 19, 0);
    return ((int (*)(const op_mpi_op *, void *))c->cb.fn)(&o, c->cb.arg);
}

int op_rd_mpi_ops(op_src *src, op_src_set *set, int (*cb)(const op_mpi_op *, void *), void *arg,
                  char *err, size_t errlen)
{
    if (!SRC_HAS(set, T_OP_COMM)) return 0;
    op_buf b = {0};
    op_buf_printf(&b,
                  "SELECT C.tid, %s, C.name, C.class, C.phase, C.start, C.\"end\", C.rank, C.comm, "
                  "C.comm_rank, "
                  "C.comm_size, C.dest, C.source, C.root, C.send_tag, C.recv_tag, C.bytes_sent, "
                  "C.bytes_received, "
                  "C.request FROM %s C ",
                  SRC_HAS(set, T_EVENT) ? "E.stack_id, E.parent_stack_id" : "NULL, NULL",
                  set->name[T_OP_COMM]);
    if (SRC_HAS(set, T_EVENT))
        op_buf_printf(&b, "LEFT JOIN %s E ON E.id = C.event_id ", set->name[T_EVENT]);
    op_buf_puts(&b, "WHERE C.api = 'MPI' ORDER BY C.id");
    op_buf_putc(&b, 0);
    if (b.oom) {
        op_buf_free(&b);
        op_seterr(err, errlen, "out of memory");
        return OP_RD_EFAIL;
    }
    mpi_ops_ctx c = {OP_RD_CB(cb, arg)};
    c.cb.set = set;
    int rc = op_src_each_row(src, op_src_prepare(src, (const char *)b.p, err, errlen), mpi_op_row,
                             &c, err, errlen);
    op_buf_free(&b);
    return rc;
}
