/* bench_db_sql.h — what the database benchmarks share: the text of a multi-row INSERT. */
#ifndef OMNIPROF_BENCH_DB_SQL_H
#define OMNIPROF_BENCH_DB_SQL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* head (ending in "VALUES ") followed by n copies of tuple, comma-separated; malloc'd, NULL when
 * out of memory. */
static inline char *bench_rows_sql(const char *head, const char *tuple, int n)
{
    size_t cap = strlen(head) + (size_t)n * (strlen(tuple) + 1) + 1;
    char *sql = malloc(cap);
    if (!sql) return NULL;
    size_t at = (size_t)snprintf(sql, cap, "%s", head);
    for (int i = 0; i < n; i++) at += (size_t)snprintf(sql + at, cap - at, "%s%s", i ? "," : "", tuple);
    return sql;
}

#endif
