/* reader_internal.h — what the reader's files (reader*.c) share and nothing else sees: the
 * SQLite side of op_src (reader.c). */
#ifndef OMNIPROF_DB_READER_INTERNAL_H
#define OMNIPROF_DB_READER_INTERNAL_H

#include <sqlite3.h>

#include "db/reader.h"

/* The statements of a lookup (reader.h), each prepared on first use. */
struct op_rd_lookup {
    op_src *src;
    op_src_set *set;
    sqlite3_stmt *str, *ksym, *agent; /* reader.c */
    sqlite3_stmt *stk, *sym;          /* reader_stacks.c: node -> (parent, address); address -> frames */
};

/* Opens `path` read-only with the untrusted-input settings after the header checks of
 * reader.c (steps 1-4). OP_RD_OK or OP_RD_EINPUT / OP_RD_EFAIL, err naming the input. */
int op_src_open_db(const char *path, sqlite3 **out, char *err, size_t errlen);
/* sqlite3_prepare_v2 on the input with an error message naming it (NULL on failure). */
sqlite3_stmt *op_src_prepare(op_src *s, const char *sql, char *err, size_t errlen);
/* Message for an SQLite failure while reading: says "corrupt"/"truncated"/"not a database". */
void op_src_failed(op_src *s, int rc, char *err, size_t errlen);
/* Steps `st` (NULL: a failed prepare, err already filled) to the end, calling row(st, arg) for
 * each row until it returns non-zero; finalizes it. OP_RD_OK or OP_RD_EINPUT (a read failure,
 * err filled). */
int op_src_each_row(op_src *src, sqlite3_stmt *st, int (*row)(sqlite3_stmt *, void *), void *arg, char *err,
                    size_t errlen);
/* SQL predicate text ("" when inactive) over columns s and e, e.g. " AND (R.start>=...)".
 * Written into buf (>= 200 bytes). */
void op_win_sql(const op_win *w, const char *s, const char *e, char *buf, size_t n);
/* The SQL that creates (TEMP when temp) view `base` = UNION ALL of `tables` (each
 * "schema"."name" text), selecting `cols` (a column list, or "*"), dropping an older one first;
 * beyond 400 tables, chained part views (a compound SELECT has at most 500 terms). malloc'ed,
 * NULL when out of memory. reader_merge.c. */
char *op_union_view_sql(int temp, const char *base, char *const *tables, size_t n, const char *cols);
/* Replaces each table set of `s` that is a merged file's (merged == -1: it has an
 * omniprof_merged<suffix> table) by one set per process it holds (reader.h, op_src_set), in the
 * order they were merged. OP_RD_OK, or OP_RD_EINPUT / OP_RD_EFAIL with err. reader_merge.c. */
int op_src_expand_merged(op_src *s, char *err, size_t errlen);
/* A row id of table t read from the file -> the process's own (the ids the reader gives out),
 * and back (the ids it takes); 0 and negative values ("none") pass unchanged. reader.h. */
static inline int64_t op_rd_own_id(const op_src_set *set, int t, int64_t file_id)
{
    return set && file_id > 0 ? file_id - set->shift[t] : file_id;
}
static inline int64_t op_rd_file_id(const op_src_set *set, int t, int64_t own_id)
{
    return set && own_id > 0 ? own_id + set->shift[t] : own_id;
}
/* The untrusted-input settings on a connection (defensive, trusted_schema off). */
void op_db_harden(sqlite3 *db);

/* A caller's callback and its argument, handed to a row function through op_src_each_row: the
 * callback as a generic function pointer, which the row function casts back to its own type. */
typedef struct op_rd_cb {
    void (*fn)(void);
    void *arg;
    const op_src_set *set; /* for row functions that give out row ids (op_rd_own_id); may be NULL */
} op_rd_cb;
/* Runs the SQL script in b (taken and freed) that makes TEMP tables on the read-only connection
 * (query_only lifted only meanwhile): 0, or a negative status with err "<path>: <what>: why".
 * reader_events.c. */
int op_src_exec_temp(op_src *src, op_buf *b, const char *what, char *err, size_t errlen);
/* MPI messages as flows (reader_mpi.c): whether the set can have them, its TEMP table of message
 * keys per region event (made once per set and connection; negative status on failure), and the
 * column a region statement selects them with (after the kind-specific ones). */
int op_rd_mpi_flows_possible(const op_src_set *set);
int op_rd_mpi_flow_table(op_src *src, op_src_set *set, char *err, size_t errlen);
void op_rd_mpi_flow_column(op_buf *b, const op_src_set *set);

#define OP_RD_CB(cb, arg) ((op_rd_cb){(void (*)(void))(cb), (arg), NULL})

#endif /* OMNIPROF_DB_READER_INTERNAL_H */
