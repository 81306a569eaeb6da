/* reader_causal.c — the rows of the causal-profiling tables (reader.h, "causal profiling";
 * tables in docs/database.md): experiments joined with the progress points measured during
 * each, in experiment order, for src/output/profile_causal.c. */
#include <string.h>

#include "db/reader_internal.h"

static const char *col_text(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? (const char *)t : "";
}

int op_rd_causal(op_src *src, op_src_set *set, int (*cb)(const op_rd_causal_row *, void *), void *arg, char *err,
                 size_t errlen)
{
    if (!SRC_HAS(set, T_OP_CAUSAL_EXPERIMENT)) return OP_RD_OK;
    char sql[1200];
    if (SRC_HAS(set, T_OP_CAUSAL_PROGRESS))
        snprintf(sql, sizeof sql,
                 "SELECT E.pid, E.experiment, E.mode, E.selected, E.speedup, E.start, E.\"end\", E.duration, E.delay, "
                 "E.selected_samples, P.name, P.type, P.delta, P.arrivals, P.departures, P.difference "
                 "FROM %s E LEFT JOIN %s P ON P.pid = E.pid AND P.experiment = E.experiment ORDER BY E.id, P.id",
                 set->name[T_OP_CAUSAL_EXPERIMENT], set->name[T_OP_CAUSAL_PROGRESS]);
    else
        snprintf(sql, sizeof sql,
                 "SELECT pid, experiment, mode, selected, speedup, start, \"end\", duration, delay, selected_samples, "
                 "NULL, NULL, 0, 0, 0, 0 FROM %s ORDER BY id",
                 set->name[T_OP_CAUSAL_EXPERIMENT]);
    sqlite3_stmt *st = op_src_prepare(src, sql, err, errlen);
    if (!st) return OP_RD_EINPUT;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        op_rd_causal_row r;
        r.process = op_rd_own_id(set, T_PROCESS, sqlite3_column_int64(st, 0));
        r.experiment = (uint64_t)sqlite3_column_int64(st, 1);
        r.mode = col_text(st, 2);
        r.selected = col_text(st, 3);
        r.speedup = sqlite3_column_double(st, 4);
        r.start = sqlite3_column_int64(st, 5);
        r.end = sqlite3_column_int64(st, 6);
        r.duration = sqlite3_column_int64(st, 7);
        r.delay = sqlite3_column_int64(st, 8);
        r.selected_samples = sqlite3_column_int64(st, 9);
        r.point = sqlite3_column_type(st, 10) == SQLITE_NULL ? NULL : col_text(st, 10);
        r.latency = strcmp(col_text(st, 11), "latency") == 0;
        r.delta = sqlite3_column_int64(st, 12);
        r.arrivals = sqlite3_column_int64(st, 13);
        r.departures = sqlite3_column_int64(st, 14);
        r.difference = sqlite3_column_int64(st, 15);
        int stop = cb(&r, arg);
        if (stop) {
            sqlite3_finalize(st);
            return stop < 0 ? OP_RD_EFAIL : OP_RD_OK;
        }
    }
    if (rc != SQLITE_DONE) op_src_failed(src, rc, err, errlen);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? OP_RD_OK : OP_RD_EINPUT;
}
