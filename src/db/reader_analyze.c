/* reader_analyze.c — what `omniprof analyze` (src/analyze) needs of a set beyond the event rows:
 * the memory kinds of its copies (the writer keeps them in the copy row's own extdata,
 * ingest_gpu.c; the event row holds the correlation id), so that the graph can mark copies from
 * or to pageable host memory; and the stream each stream synchronize waited for (the
 * SYNCHRONIZATION_STREAM record's extdata). */
#include <stdio.h>
#include <string.h>

#include "db/reader_internal.h"

typedef struct kinds_arg {
    int (*cb)(int64_t corr, int pageable, int is_async, void *);
    void *arg;
} kinds_arg;

static int kinds_row(sqlite3_stmt *st, void *p)
{
    kinds_arg *k = p;
    return k->cb(sqlite3_column_int64(st, 0), sqlite3_column_int(st, 1), sqlite3_column_int(st, 2),
                 k->arg);
}

int op_rd_copy_memory_kinds(op_src *src, op_src_set *set,
                            int (*cb)(int64_t corr, int pageable, int is_async, void *), void *arg,
                            char *err, size_t errlen)
{
    if (!SRC_HAS(set, T_MEMORY_COPY) || !SRC_HAS(set, T_EVENT)) return OP_RD_OK;
    char sql[1024];
    snprintf(sql, sizeof sql,
             "SELECT E.stack_id, 1, COALESCE(json_extract(X.extdata, '$.is_async'), 0) FROM %s X "
             "JOIN %s E ON "
             "E.id = X.event_id WHERE X.extdata LIKE '%%PAGEABLE%%' AND json_valid(X.extdata)",
             set->name[T_MEMORY_COPY], set->name[T_EVENT]);
    kinds_arg k = {cb, arg};
    return op_src_each_row(src, op_src_prepare(src, sql, err, errlen), kinds_row, &k, err, errlen);
}

typedef struct sync_arg {
    int (*cb)(int64_t thread_row, int64_t start, int64_t end, int64_t stream_row, void *);
    void *arg;
    const op_src_set *set;
} sync_arg;

static int sync_row(sqlite3_stmt *st, void *p)
{
    sync_arg *k = p;
    int64_t stream = sqlite3_column_type(st, 3) == SQLITE_NULL ? 0 : sqlite3_column_int64(st, 3);
    return k->cb(op_rd_own_id(k->set, T_THREAD, sqlite3_column_int64(st, 0)),
                 sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2),
                 op_rd_own_id(k->set, T_STREAM, stream), k->arg);
}

int op_rd_stream_syncs(op_src *src, op_src_set *set,
                       int (*cb)(int64_t thread_row, int64_t start, int64_t end, int64_t stream_row,
                                 void *),
                       void *arg, char *err, size_t errlen)
{
    if (!SRC_HAS(set, T_REGION) || !SRC_HAS(set, T_EVENT) || !SRC_HAS(set, T_STRING) ||
        !SRC_HAS(set, T_STREAM))
        return OP_RD_OK;
    /* the name's string id first: a recording without synchronization records costs no scan */
    char sql[1536];
    snprintf(sql, sizeof sql, "SELECT id FROM %s WHERE string = 'SYNCHRONIZATION_STREAM'",
             set->name[T_STRING]);
    sqlite3_stmt *st = op_src_prepare(src, sql, err, errlen);
    if (!st) return OP_RD_EFAIL;
    int rc = sqlite3_step(st);
    int64_t name_id = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    if (!name_id) return OP_RD_OK;
    /* the stream row of the record's CUPTI stream id: by its handle (extdata) or its name */
    snprintf(sql, sizeof sql,
             "SELECT R.tid, R.start, R.\"end\", (SELECT S.id FROM %s S WHERE S.name = 'stream ' || "
             "json_extract(E.extdata, '$.stream') OR (json_valid(S.extdata) AND "
             "json_extract(S.extdata, '$.handle') = json_extract(E.extdata, '$.stream')) "
             "ORDER BY S.id LIMIT 1) FROM %s R JOIN %s E ON E.id = R.event_id "
             "WHERE R.name_id = %lld AND json_valid(E.extdata)",
             set->name[T_STREAM], set->name[T_REGION], set->name[T_EVENT], (long long)name_id);
    sync_arg k = {cb, arg, set};
    return op_src_each_row(src, op_src_prepare(src, sql, err, errlen), sync_row, &k, err, errlen);
}
