/* reader_analyze.c — what `omniprof analyze` (src/analyze) needs of a set beyond the event rows:
 * the memory kinds of its copies (the writer keeps them in the copy row's own extdata,
 * ingest_gpu.c; the event row holds the correlation id), so that the graph can mark copies from
 * or to pageable host memory; the stream each stream synchronize waited for (the
 * SYNCHRONIZATION_STREAM record's extdata); the event waits (SYNCHRONIZATION_EVENT,
 * SYNCHRONIZATION_STREAM_WAIT_EVENT) and the recordings of CUDA events they waited for
 * (omniprof_cuda_event). */
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

static int one_row(sqlite3_stmt *st, void *p)
{
    (void)st;
    *(int *)p = 1;
    return 0;
}

int op_rd_has_mpi(op_src *src, op_src_set *set)
{
    if (!SRC_HAS(set, T_OP_COMM)) return 0;
    char sql[512], err[256];
    snprintf(sql, sizeof sql, "SELECT 1 FROM %s WHERE api = 'MPI' LIMIT 1", set->name[T_OP_COMM]);
    int found = 0;
    sqlite3_stmt *st = op_src_prepare(src, sql, err, sizeof err);
    if (!st) return 1; /* unknown: read the messages as before */
    if (op_src_each_row(src, st, one_row, &found, err, sizeof err) != OP_RD_OK) return 1;
    return found;
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

/* The stream row of a synchronization record's CUPTI stream id (E: its event row): by the
 * stream's handle (extdata) or its name. */
#define STREAM_OF_SYNC                                                                             \
    "(SELECT S.id FROM %s S WHERE S.name = 'stream ' || json_extract(E.extdata, '$.stream') OR "   \
    "(json_valid(S.extdata) AND json_extract(S.extdata, '$.handle') = "                            \
    "json_extract(E.extdata, '$.stream')) ORDER BY S.id LIMIT 1)"

typedef struct esync_arg {
    int (*cb)(const op_rd_event_sync *, void *);
    void *arg;
    const op_src_set *set;
    int64_t event_name;
} esync_arg;

static int esync_row(sqlite3_stmt *st, void *p)
{
    esync_arg *k = p;
    op_rd_event_sync s;
    s.thread_row = op_rd_own_id(k->set, T_THREAD, sqlite3_column_int64(st, 0));
    s.start = sqlite3_column_int64(st, 1);
    s.end = sqlite3_column_int64(st, 2);
    s.stream_row = sqlite3_column_type(st, 3) == SQLITE_NULL
                       ? 0
                       : op_rd_own_id(k->set, T_STREAM, sqlite3_column_int64(st, 3));
    s.cuda_event = sqlite3_column_int64(st, 4);
    s.sync_id = sqlite3_column_int64(st, 5);
    s.wait = sqlite3_column_int64(st, 6) == k->event_name ? 1 : 2;
    return k->cb(&s, k->arg);
}

int op_rd_event_syncs(op_src *src, op_src_set *set, int (*cb)(const op_rd_event_sync *, void *),
                      void *arg, char *err, size_t errlen)
{
    if (!SRC_HAS(set, T_REGION) || !SRC_HAS(set, T_EVENT) || !SRC_HAS(set, T_STRING) ||
        !SRC_HAS(set, T_STREAM))
        return OP_RD_OK;
    char sql[1536];
    int64_t ids[2] = {0, 0};
    static const char *const names[2] = {"SYNCHRONIZATION_EVENT",
                                         "SYNCHRONIZATION_STREAM_WAIT_EVENT"};
    for (int i = 0; i < 2; i++) { /* the names' string ids first: no records, no scan */
        snprintf(sql, sizeof sql, "SELECT id FROM %s WHERE string = '%s'", set->name[T_STRING],
                 names[i]);
        sqlite3_stmt *st = op_src_prepare(src, sql, err, errlen);
        if (!st) return OP_RD_EFAIL;
        if (sqlite3_step(st) == SQLITE_ROW) ids[i] = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    if (!ids[0] && !ids[1]) return OP_RD_OK;
    snprintf(sql, sizeof sql,
             "SELECT R.tid, R.start, R.\"end\", " STREAM_OF_SYNC ", "
             "COALESCE(json_extract(E.extdata, '$.event'), 0), "
             "COALESCE(json_extract(E.extdata, '$.sync_id'), 0), R.name_id "
             "FROM %s R JOIN %s E ON E.id = R.event_id "
             "WHERE R.name_id IN (%lld, %lld) AND json_valid(E.extdata)",
             set->name[T_STREAM], set->name[T_REGION], set->name[T_EVENT], (long long)ids[0],
             (long long)ids[1]);
    esync_arg k = {cb, arg, set, ids[0] ? ids[0] : -1};
    return op_src_each_row(src, op_src_prepare(src, sql, err, errlen), esync_row, &k, err, errlen);
}

typedef struct cev_arg {
    int (*cb)(int64_t, int64_t, int64_t, int64_t, void *);
    void *arg;
    const op_src_set *set;
} cev_arg;

static int cev_row(sqlite3_stmt *st, void *p)
{
    cev_arg *k = p;
    int64_t stream = sqlite3_column_type(st, 1) == SQLITE_NULL ? 0 : sqlite3_column_int64(st, 1);
    return k->cb(sqlite3_column_int64(st, 0), stream ? op_rd_own_id(k->set, T_STREAM, stream) : 0,
                 sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3), k->arg);
}

int op_rd_cuda_events(op_src *src, op_src_set *set,
                      int (*cb)(int64_t corr, int64_t stream_row, int64_t cuda_event,
                                int64_t sync_id, void *),
                      void *arg, char *err, size_t errlen)
{
    if (!SRC_HAS(set, T_OP_CUDA_EVENT) || !SRC_HAS(set, T_EVENT)) return OP_RD_OK;
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT E.stack_id, C.stream_id, C.cuda_event, C.sync_id FROM %s C JOIN %s E ON "
             "E.id = C.event_id",
             set->name[T_OP_CUDA_EVENT], set->name[T_EVENT]);
    cev_arg k = {cb, arg, set};
    return op_src_each_row(src, op_src_prepare(src, sql, err, errlen), cev_row, &k, err, errlen);
}
