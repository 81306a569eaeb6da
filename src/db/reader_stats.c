/* reader_stats.c — the aggregates behind the *_stats.csv files and the summary tables
 * (op_rd_stats, reader.h): for one set, SQLite groups each event table by (process, category,
 * name id) in one pass with constant memory — only the groups are kept — and the names are
 * looked up per group, not per row. Durations are end - start in ns; squares are summed as
 * doubles so nothing overflows. */
#include <stdlib.h>
#include <string.h>

#include "db/reader_internal.h"

/* The aggregate columns every query selects after (group, category, name). */
#define AGG "count(*) AS cnt, total(X.\"end\" - X.start) AS tot, min(X.\"end\" - X.start) AS mn, " \
            "max(X.\"end\" - X.start) AS mx, total((X.\"end\" - X.start) * 1.0 * (X.\"end\" - X.start)) AS sq"

/* Kernels and copies CUPTI gave no start (0; a few in a PyTorch warm-up) have no duration: one
 * row per group named UNTIMED_NAME counts them (no times), instead of durations from time 0.
 * Only without a window (they lie in none). */
#define UNTIMED_NAME "[no timestamps]"
static void untimed(op_buf *b, const char *g, const char *table, const char *win) {
    if (win[0]) return;
    op_buf_printf(b,
                  " UNION ALL SELECT %s, NULL, '" UNTIMED_NAME "', count(*), 0, 0, 0, 0 "
                  "FROM %s X WHERE X.start <= 0 GROUP BY 1",
                  g, table);
}

/* SQL of one table's aggregates: columns group, category text, name text, calls, total, min,
 * max, sum of squares. NULL when out of memory. */
static char *stats_sql(op_src_set *set, int t, const op_win *w, int by_process) {
    char win[256];
    op_win_sql(w, "X.start", "X.\"end\"", win, sizeof win);
    op_buf b = {0};
    const char *g = by_process ? "X.pid" : "0";
    const char *S = set->name[T_STRING];
    int has_ev = SRC_HAS(set, T_EVENT); /* (a merged file's ids are unique: no guid to compare) */
    switch (t) {
    case T_REGION:
        op_buf_printf(&b,
                      "SELECT g, (SELECT string FROM %s WHERE id = c), (SELECT string FROM %s WHERE id = n), cnt, tot, "
                      "mn, mx, sq FROM (SELECT %s AS g, %s AS c, X.name_id AS n, " AGG " FROM %s X %s%s%s WHERE 1 %s "
                      "GROUP BY 1, 2, 3)",
                      S, S, g, has_ev ? "E.category_id" : "NULL", set->name[T_REGION], has_ev ? "LEFT JOIN " : "",
                      has_ev ? set->name[T_EVENT] : "", !has_ev ? "" : set->merged ? " E ON E.id = X.event_id" : " E ON E.id = X.event_id AND E.guid = X.guid",
                      win);
        break;
    case T_KERNEL_DISPATCH:
        /* by kernel and region name: a renamed dispatch (--kernel-rename) counts under its region */
        if (SRC_HAS(set, T_KERNEL_SYMBOL))
            op_buf_printf(&b,
                          "SELECT g, NULL, COALESCE((SELECT string FROM %s WHERE id = rn), "
                          "(SELECT COALESCE(display_name, kernel_name) FROM %s WHERE id = n)), cnt, tot, mn, mx, sq ",
                          S, set->name[T_KERNEL_SYMBOL]);
        else
            op_buf_printf(&b, "SELECT g, NULL, COALESCE((SELECT string FROM %s WHERE id = rn), 'kernel ' || n), cnt, tot, "
                              "mn, mx, sq ", S);
        op_buf_printf(&b,
                      "FROM (SELECT %s AS g, X.kernel_id AS n, X.region_name_id AS rn, " AGG
                      " FROM %s X WHERE X.start > 0 %s GROUP BY 1, 2, 3)",
                      g, set->name[T_KERNEL_DISPATCH], win);
        untimed(&b, g, set->name[T_KERNEL_DISPATCH], win);
        break;
    case T_MEMORY_COPY:
        op_buf_printf(&b,
                      "SELECT g, NULL, (SELECT string FROM %s WHERE id = n), cnt, tot, mn, mx, sq "
                      "FROM (SELECT %s AS g, X.name_id AS n, " AGG
                      " FROM %s X WHERE X.start > 0 %s GROUP BY 1, 2)",
                      S, g, set->name[T_MEMORY_COPY], win);
        untimed(&b, g, set->name[T_MEMORY_COPY], win);
        break;
    default: /* T_MEMORY_ALLOCATE */
        op_buf_printf(&b,
                      "SELECT %s AS g, NULL, COALESCE(X.type, 'ALLOC'), count(*), total(X.\"end\" - X.start), "
                      "min(X.\"end\" - X.start), max(X.\"end\" - X.start), "
                      "total((X.\"end\" - X.start) * 1.0 * (X.\"end\" - X.start)) FROM %s X WHERE 1 %s GROUP BY 1, 3",
                      g, set->name[T_MEMORY_ALLOCATE], win);
        break;
    }
    return op_buf_take(&b);
}

int op_rd_stats(op_src *src, op_src_set *set, const op_win *w, int by_process,
                int (*cb)(const op_rd_stat_row *, void *), void *arg, char *err, size_t errlen) {
    static const int tables[] = {T_REGION, T_KERNEL_DISPATCH, T_MEMORY_COPY, T_MEMORY_ALLOCATE};
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
        int t = tables[i];
        if (!SRC_HAS(set, t)) continue;
        char *sql = stats_sql(set, t, w, by_process);
        if (!sql) {
            op_seterr(err, errlen, "out of memory");
            return OP_RD_EFAIL;
        }
        sqlite3_stmt *q = op_src_prepare(src, sql, err, errlen);
        free(sql);
        if (!q) return OP_RD_EINPUT;
        int rc, stop = 0;
        while (!stop && (rc = sqlite3_step(q)) == SQLITE_ROW) {
            op_rd_stat_row r = {
                .table = t,
                .group = op_rd_own_id(set, T_PROCESS, sqlite3_column_int64(q, 0)),
                .category = sqlite3_column_text(q, 1),
                .name = sqlite3_column_text(q, 2),
                .name_len = (size_t)sqlite3_column_bytes(q, 2),
                .calls = (uint64_t)sqlite3_column_int64(q, 3),
                .total = sqlite3_column_double(q, 4),
                .min = sqlite3_column_int64(q, 5),
                .max = sqlite3_column_int64(q, 6),
                .sumsq = sqlite3_column_double(q, 7),
            };
            stop = cb(&r, arg);
        }
        sqlite3_finalize(q);
        if (stop) return stop;
        if (rc != SQLITE_DONE) {
            op_src_failed(src, rc, err, errlen);
            return OP_RD_EINPUT;
        }
    }
    return 0;
}
