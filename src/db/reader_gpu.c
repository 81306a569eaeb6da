/* reader_gpu.c — aggregates of what was sampled or counted inside GPU kernels and memory
 * (reader.h, "GPU sampling aggregates"), one GROUP BY per (set, question), for the summary
 * (src/output/profile_gpu.c): PC samples per (kernel, stall reason) and per (kernel, source
 * line), SASS metrics per (kernel, source line), unified-memory events per operation, PM samples
 * per (device, metric). Tables in docs/database.md. */
#include <stdio.h>
#include <string.h>

#include "db/reader_internal.h"

static const char *col_text(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? (const char *)t : "";
}

/* The statement of `which` over `set` into sql; 1 when the set has no such table. */
static int gpu_sql(op_src_set *set, int which, const op_win *w, char *sql, size_t n)
{
    const char *S = set->name[T_STRING];
    char win[256];
#define NAME(col) "(SELECT string FROM %s RS WHERE RS.id = " col ")"
    switch (which) {
    case OP_RD_GPU_PC_STALLS: /* per (kernel, stall reason) */
    case OP_RD_GPU_PC_LINES: { /* per (kernel, source line) */
        if (!SRC_HAS(set, T_OP_PC_SAMPLE)) return 1;
        op_win_sql(w, "timestamp", "timestamp", win, sizeof win);
        int lines = which == OP_RD_GPU_PC_LINES;
        char what[600];
        snprintf(what, sizeof what, lines ? "'', " NAME("file_id") ", line" : NAME("stall_reason_id") ", '', 0", S);
        snprintf(sql, n,
                 "SELECT " NAME("kernel_name_id") ", %s, SUM(samples), 0, 0, 0 FROM %s WHERE %s %s GROUP BY kernel_name_id, %s",
                 S, what, set->name[T_OP_PC_SAMPLE], lines ? "line > 0" : "1", win,
                 lines ? "file_id, line" : "stall_reason_id");
        return 0;
    }
    case OP_RD_GPU_SASS_LINES:
        if (!SRC_HAS(set, T_OP_SASS_METRIC)) return 1;
        op_win_sql(w, "M.timestamp", "M.timestamp", win, sizeof win);
        snprintf(sql, n,
                 "SELECT " NAME("M.kernel_name_id") ", '', " NAME("M.file_id") ", M.line, "
                 "SUM(CASE WHEN MN.string = 'smsp__sass_inst_executed' THEN M.value ELSE 0 END), "
                 "SUM(CASE WHEN MN.string = 'smsp__sass_thread_inst_executed' THEN M.value ELSE 0 END), "
                 "COUNT(DISTINCT M.pc_offset), 0 "
                 "FROM %s M LEFT JOIN %s MN ON MN.id = M.metric_id WHERE 1 %s "
                 "GROUP BY M.kernel_name_id, M.file_id, M.line",
                 S, S, set->name[T_OP_SASS_METRIC], S, win);
        return 0;
    case OP_RD_GPU_UNIFIED_MEMORY:
        if (!SRC_HAS(set, T_OP_UNIFIED_MEMORY)) return 1;
        op_win_sql(w, "start", "\"end\"", win, sizeof win);
        snprintf(sql, n,
                 "SELECT operation, '', '', 0, COUNT(*), SUM(bytes), SUM(\"end\" - start), SUM(value) "
                 "FROM %s WHERE 1 %s GROUP BY operation",
                 set->name[T_OP_UNIFIED_MEMORY], win);
        return 0;
    case OP_RD_GPU_PM:
        if (!SRC_HAS(set, T_OP_METRIC) || !SRC_HAS(set, T_TRACK)) return 1;
        op_win_sql(w, "M.timestamp", "M.timestamp", win, sizeof win);
        snprintf(sql, n,
                 "SELECT json_extract(TR.extdata, '$.metric'), json_extract(TR.extdata, '$.units'), '', "
                 "json_extract(TR.extdata, '$.device_index'), COUNT(*), MIN(M.value), AVG(M.value), MAX(M.value) "
                 "FROM %s M JOIN %s TR ON TR.id = M.track_id "
                 "WHERE json_valid(TR.extdata) AND json_extract(TR.extdata, '$.source') = 'pm_sampling' %s "
                 "GROUP BY M.track_id",
                 set->name[T_OP_METRIC], set->name[T_TRACK], win);
        return 0;
    default:
        return 1;
    }
#undef NAME
}

int op_rd_gpu_rows(op_src *src, op_src_set *set, int which, const op_win *w,
                   int (*cb)(const op_rd_gpu_row *, void *), void *arg, char *err, size_t errlen)
{
    char sql[2048];
    op_win none = {0};
    if (gpu_sql(set, which, w ? w : &none, sql, sizeof sql)) return OP_RD_OK;
    sqlite3_stmt *st = op_src_prepare(src, sql, err, errlen);
    if (!st) return OP_RD_EINPUT;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        op_rd_gpu_row r;
        r.a = col_text(st, 0);
        r.b = col_text(st, 1);
        r.c = col_text(st, 2);
        r.line = sqlite3_column_int64(st, 3);
        for (int i = 0; i < 4; i++) r.v[i] = sqlite3_column_double(st, 4 + i);
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
