/* rows.c — batched inserts for the database writer's busiest tables (ingest thread only).
 *
 * A record becomes two or three rows (an event and its region, dispatch or copy); SQLite spends
 * most of a one-row INSERT on the statement itself (opening the table's cursor, finding the
 * end of the b-tree, halting and resetting) rather than on the row. So the rows of the tables
 * every record writes are queued (op_db_row) and written OP_DB_ROWQ_MAX at a time by multi-row
 * INSERT statements: one sqlite3_step per up to OP_DB_ROWQ_MAX (128) rows. A queue is written when it is full,
 * and every queue is written before a transaction commits and before the spool batch whose
 * strings the queued rows point at is released (op_db_rows_flush_all).
 *
 * Ids. Rows that other rows reference (events, samples) get their id when they are queued:
 * SQLite gives a row of a rowid table the largest id plus one, this connection is the table's
 * only writer, and every insert into a queued table goes through its queue, so the ids are
 * known in advance; each write checks that SQLite gave the ids announced (a mismatch turns the
 * writer off rather than store wrong links).
 *
 * Texts. A cell's text is either a pointer that stays valid until the queue is written (a
 * string literal, a string of the spool record being ingested) or copied into the queue's
 * arena (text built in w->scratch or on the stack); text that is not valid UTF-8 is escaped
 * into the arena (common/text.h), as op_db_bind_text does for one-row statements. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/text.h"
#include "db/writer_internal.h"

/* Builds the n-row form of a one-row "INSERT ... VALUES (...)" statement: the tuple repeated. */
static char *multi_row_sql(const char *one, uint32_t n)
{
    const char *v = strstr(one, " VALUES (");
    if (!v) return NULL;
    const char *tuple = v + 8;
    size_t head = (size_t)(tuple - one), tl = strlen(tuple);
    char *sql = op_malloc(head + n * (tl + 1) + 1);
    if (!sql) return NULL;
    memcpy(sql, one, head);
    size_t at = head;
    for (uint32_t i = 0; i < n; i++) {
        if (i) sql[at++] = ',';
        memcpy(sql + at, tuple, tl);
        at += tl;
    }
    sql[at] = 0;
    return sql;
}

int op_db_rows_prepare(op_db_writer *w, int q, int st, const char *one_row_sql, int ids, char *err, size_t errlen)
{
    op_db_rowq *rq = &w->rowq[q];
    rq->st = st;
    rq->ids = ids;
    rq->ncols = 0;
    for (const char *p = strstr(one_row_sql, " VALUES ("); p && *p; p++) rq->ncols += *p == '?';
    rq->cells = op_calloc((size_t)OP_DB_ROWQ_MAX * rq->ncols, sizeof *rq->cells);
    if (!rq->cells) {
        op_db_seterr(err, errlen, "database '%s': out of memory", w->path);
        return ENOMEM;
    }
    for (int k = 0; k < OP_DB_ROWQ_SIZES; k++) {
        char *sql = multi_row_sql(one_row_sql, 1u << k);
        if (!sql) {
            op_db_seterr(err, errlen, "database '%s': out of memory", w->path);
            return ENOMEM;
        }
        int rc = sqlite3_prepare_v3(w->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &rq->multi[k], NULL);
        op_free(sql);
        if (rc != SQLITE_OK) {
            op_db_seterr(err, errlen, "database '%s': preparing a batched insert failed: %s (%s)", w->path,
                         sqlite3_errstr(rc), sqlite3_errmsg(w->db));
            return EIO;
        }
    }
    /* the tables are new, but read where their ids stand rather than assume it */
    const char *into = strstr(one_row_sql, "INTO ");
    const char *cols = into ? strchr(into, '(') : NULL;
    char sel[256];
    if (!into || !cols || snprintf(sel, sizeof sel, "SELECT coalesce(max(id), 0) FROM %.*s", (int)(cols - into - 6),
                                   into + 5) >= (int)sizeof sel) {
        op_db_seterr(err, errlen, "database '%s': statement %d has no table", w->path, st);
        return EIO;
    }
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(w->db, sel, -1, &s, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) rq->next_id = sqlite3_column_int64(s, 0) + 1, rc = SQLITE_OK;
    sqlite3_finalize(s);
    if (rc != SQLITE_OK) {
        op_db_seterr(err, errlen, "database '%s': reading the last row id failed: %s", w->path, sqlite3_errmsg(w->db));
        return EIO;
    }
    return 0;
}

void op_db_rows_free(op_db_writer *w)
{
    for (int q = 0; q < Q__COUNT; q++) {
        op_db_rowq *rq = &w->rowq[q];
        for (int k = 0; k < OP_DB_ROWQ_SIZES; k++) {
            sqlite3_finalize(rq->multi[k]);
            rq->multi[k] = NULL;
        }
        op_free(rq->cells);
        op_free(rq->arena);
        memset(rq, 0, sizeof *rq);
    }
}

void op_db_rows_discard(op_db_writer *w)
{
    for (int q = 0; q < Q__COUNT; q++) {
        w->rowq[q].next_id -= w->rowq[q].n; /* never written: their ids are free again */
        w->rowq[q].n = 0;
        w->rowq[q].arena_len = 0;
    }
}

static void bind_row(const op_db_rowq *rq, sqlite3_stmt *s, const op_db_cell *c, int first)
{
    for (uint32_t i = 0; i < rq->ncols; i++, c++) {
        int p = first + (int)i;
        switch (c->type) {
        case OP_DB_CELL_INT: sqlite3_bind_int64(s, p, c->i); break;
        case OP_DB_CELL_REAL: sqlite3_bind_double(s, p, c->d); break;
        case OP_DB_CELL_TEXT: sqlite3_bind_text(s, p, c->s, (int)c->n, SQLITE_STATIC); break;
        case OP_DB_CELL_ARENA: sqlite3_bind_text(s, p, rq->arena + c->i, (int)c->n, SQLITE_STATIC); break;
        default: sqlite3_bind_null(s, p); break;
        }
    }
}

int op_db_rows_flush(op_db_writer *w, int q)
{
    op_db_rowq *rq = &w->rowq[q];
    uint32_t done = 0, n = rq->n;
    int64_t first_id = rq->next_id - n;
    while (done < n && !op_db_failed(w)) {
        int k = OP_DB_ROWQ_SIZES - 1;
        while ((1u << k) > n - done) k--;
        uint32_t m = 1u << k;
        sqlite3_stmt *s = rq->multi[k];
        for (uint32_t r = 0; r < m; r++) bind_row(rq, s, rq->cells + (size_t)(done + r) * rq->ncols, (int)(r * rq->ncols) + 1);
        int rc = sqlite3_step(s);
        sqlite3_reset(s);
        if (rc != SQLITE_DONE) {
            op_db_writer_fail(w, "inserting rows", rc);
            return -EIO;
        }
        done += m;
        if (rq->ids && sqlite3_last_insert_rowid(w->db) != first_id + done - 1) {
            op_db_writer_fail(w, "inserting rows (row ids out of step)", SQLITE_INTERNAL);
            return -EIO;
        }
    }
    rq->n = 0;
    rq->arena_len = 0;
    return op_db_failed(w) ? -EIO : 0;
}

int op_db_rows_flush_all(op_db_writer *w)
{
    int rc = 0;
    for (int q = 0; q < Q__COUNT && rc == 0; q++)
        if (w->rowq[q].n) rc = op_db_rows_flush(w, q);
    return rc;
}

op_db_cell *op_db_row(op_db_writer *w, int q, int64_t *id)
{
    op_db_rowq *rq = &w->rowq[q];
    if (rq->n == OP_DB_ROWQ_MAX && op_db_rows_flush(w, q) != 0) return NULL;
    if (op_db_failed(w)) return NULL;
    op_db_cell *c = rq->cells + (size_t)rq->n * rq->ncols;
    rq->n++;
    w->txn_rows++;
    if (id) *id = rq->next_id;
    rq->next_id++;
    return c;
}

void op_db_set_text(op_db_writer *w, int q, op_db_cell *c, const char *s, int n, unsigned flags)
{
    if (!s) {
        c->type = OP_DB_CELL_NULL;
        return;
    }
    size_t len = n < 0 ? strlen(s) : (size_t)n;
    int clean = (flags & OP_DB_TEXT_CLEAN) || op_text_is_clean(s, len);
    if (clean && (flags & OP_DB_TEXT_STABLE)) {
        c->type = OP_DB_CELL_TEXT;
        c->s = s;
        c->n = (uint32_t)len;
        return;
    }
    op_db_rowq *rq = &w->rowq[q];
    size_t need = clean ? len : OP_TEXT_ESCAPED_MAX(len);
    if (rq->arena_len + need + 1 > rq->arena_cap) {
        size_t cap = rq->arena_cap ? rq->arena_cap : 4096;
        while (cap < rq->arena_len + need + 1) cap *= 2;
        char *a = op_realloc(rq->arena, cap);
        if (!a) { /* out of memory: the text is lost, never stored invalid */
            c->type = OP_DB_CELL_TEXT;
            c->s = "";
            c->n = 0;
            return;
        }
        rq->arena = a;
        rq->arena_cap = cap;
    }
    char *dst = rq->arena + rq->arena_len;
    size_t out = clean ? (memcpy(dst, s, len), len) : op_text_escape(dst, s, len);
    c->type = OP_DB_CELL_ARENA;
    c->i = (int64_t)rq->arena_len;
    c->n = (uint32_t)out;
    rq->arena_len += out;
}
