/* reader_analyze.c — what `omniprof analyze` (src/analyze) needs of a set beyond the event rows:
 * the memory kinds of its copies (the writer keeps them in the copy row's own extdata,
 * ingest_gpu.c; the event row holds the correlation id), so that the graph can mark copies from or to pageable host memory. */
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
